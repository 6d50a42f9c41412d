"""``Cauchy(loc, scale)``, as ``torch.distributions.Cauchy``."""

from __future__ import annotations

import math

import vkml as _vk

from . import constraints
from .distribution import Distribution
from .utils import expand_loc_scale, set_loc_scale

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution: median ``loc``, half width at half maximum ``scale``.

    >>> from vkml.distributions import Cauchy
    >>> round(Cauchy(0.0, 1.0).entropy().item(), 4)
    2.531
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(set_loc_scale(self, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_loc_scale(self, Cauchy, batch_shape, _instance)

    @property
    def mean(self):
        return _vk.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return _vk.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        # PyTorch's draw: cauchy_ of a new tensor (the same values after the same manual_seed)
        eps = _vk.empty(tuple(shape), dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _vk.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return _vk.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
