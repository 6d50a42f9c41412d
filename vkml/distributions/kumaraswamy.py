"""``Kumaraswamy(concentration1, concentration0)``, as ``torch.distributions.Kumaraswamy``: a transformed Uniform."""

from __future__ import annotations

import math

import vkml as _vk

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]

_EULER = 0.57721566490153286060


def _moments(a, b, n):
    """The n-th moment b B(1 + n / a, b), through lgamma (PyTorch's formula)."""
    arg1 = 1 + n / a
    log_value = _vk.lgamma(arg1) + _vk.lgamma(b) - _vk.lgamma(arg1 + b)
    return b * _vk.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on [0, 1]: ``(1 - (1 - U)^(1/b))^(1/a)`` for U uniform.

    >>> from vkml.distributions import Kumaraswamy
    >>> round(Kumaraswamy(1.0, 1.0).mean.item(), 4)
    0.5
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(
            _vk.full_like(self.concentration0, 0), _vk.full_like(self.concentration0, 1), validate_args=validate_args
        )
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # in log space, for stability (PyTorch's)
        log_mode = (
            self.concentration0.reciprocal() * (-self.concentration0).log1p()
            - (-self.concentration0 * self.concentration1).log1p()
        )
        undefined = (self.concentration0 < 1) | (self.concentration1 < 1)
        return _vk.where(undefined, math.nan, log_mode).exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - _vk.pow(self.mean, 2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = _vk.digamma(self.concentration0 + 1) + _EULER
        return t0 + t1 * h0 - _vk.log(self.concentration1) - _vk.log(self.concentration0)
