"""``Poisson(rate)``, as ``torch.distributions.Poisson``.

Sampling is ``vkml.poisson`` (vkml/frontend/poisson.py): PyTorch's CPU sampler on the host, so after
the same ``manual_seed`` the samples are PyTorch's.
"""

from __future__ import annotations

from numbers import Number

import vkml as _vk

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all

__all__ = ["Poisson"]


def _poisson_sample(rate):
    """Poisson(rate) counts of rate's shape and dtype (no gradient): ``vkml.poisson``'s, PyTorch's draws."""
    with _vk.no_grad():
        return _vk.poisson(rate.detach())


class Poisson(ExponentialFamily):
    """The Poisson distribution: counts with mean ``rate``.

    >>> import vkml
    >>> from vkml.distributions import Poisson
    >>> round(Poisson(vkml.tensor(2.0)).log_prob(vkml.tensor(3.0)).item(), 4)
    -1.7123
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    # the exponential family's parameters (ExponentialFamily: its entropy, the Bregman KL)
    @property
    def _natural_params(self):
        return (_vk.log(self.rate),)

    def _log_normalizer(self, x):
        return _vk.exp(x)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = _vk.Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = _size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Poisson, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _poisson_sample(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
