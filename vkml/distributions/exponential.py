"""``Exponential(rate)``, as ``torch.distributions.Exponential``."""

from __future__ import annotations

from numbers import Number

import vkml as _vk

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution with rate ``rate`` (mean 1 / rate).

    >>> from vkml.distributions import Exponential
    >>> Exponential(2.0).mean.item()
    0.5
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    # the exponential family's parameters (ExponentialFamily: its entropy, the Bregman KL)
    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -_vk.log(-x)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return _vk.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = _vk.Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Exponential, _instance)
        batch_shape = _size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Exponential, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        # PyTorch's draw: exponential_ of a new tensor (the same values after the same manual_seed)
        return _vk.empty(tuple(shape), dtype=self.rate.dtype, device=self.rate.device).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - _vk.exp(-self.rate * value)

    def icdf(self, value):
        return -_vk.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - _vk.log(self.rate)
