"""``Laplace(loc, scale)``, as ``torch.distributions.Laplace``."""

from __future__ import annotations

import vkml as _vk

from . import constraints
from .distribution import Distribution
from .utils import expand_loc_scale, set_loc_scale

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace distribution with location ``loc`` and scale ``scale``.

    >>> from vkml.distributions import Laplace
    >>> Laplace(0.0, 2.0).variance.item()
    8.0
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2**0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(set_loc_scale(self, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_loc_scale(self, Laplace, batch_shape, _instance)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _vk.finfo(self.loc.dtype).eps
        # u in (eps - 1, 1): 1 - |u| > 0, so the logarithm is finite
        u = _vk.empty(tuple(shape), dtype=self.loc.dtype, device=self.loc.device).uniform_(eps - 1, 1)  # PyTorch's draw
        return self.loc - self.scale * u.sign() * _vk.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -_vk.log(2 * self.scale) - _vk.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * _vk.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * (term).sign() * _vk.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + _vk.log(2 * self.scale)
