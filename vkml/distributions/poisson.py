"""``Poisson(rate)``, as ``torch.distributions.Poisson``.

Sampling (exact, in float64): rates below 12 count products of uniforms above exp(-rate)
(Knuth), a few factors per round; larger rates use rejection from a Cauchy envelope with the
Poisson probabilities computed through ``lgamma``, several proposals per element a round. A round
reads back whether every element is done.
"""

from __future__ import annotations

import math
from numbers import Number

import vkml as _vk

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all

__all__ = ["Poisson"]

_SMALL = 12.0  # below: Knuth's products; at or above: the Cauchy-envelope rejection
_STEPS = 8  # uniform factors per round of the small-rate method
_PROPOSALS = 4  # proposals per element and round of the rejection method


def _poisson_sample(rate):
    """Poisson(rate) counts of rate's shape and dtype (no gradient)."""
    with _vk.no_grad():
        shape, dtype, device = tuple(rate.shape), rate.dtype, rate.device
        lam = rate.detach().to(_vk.float64)
        small = lam < _SMALL
        # small rates: count the factors before the running product falls to exp(-rate) or below
        limit = _vk.exp(-_vk.where(small, lam, 0.0))  # 1 for the large ones: they count nothing here
        product = _vk.ones(shape, dtype=_vk.float64, device=device)
        count = _vk.zeros(shape, dtype=_vk.float64, device=device)
        while True:
            for _ in range(_STEPS):
                product = product * _vk.rand(shape, dtype=_vk.float64, device=device)
                count = count + (product > limit).to(_vk.float64)
            if not bool((product > limit).any().item()):
                break
        # large rates: y Cauchy, k = floor(sqrt(2 rate) y + rate), accepted with probability t <= 1
        big = _vk.where(small, _SMALL, lam)
        sq, log_rate = (2.0 * big).sqrt(), big.log()
        g = big * log_rate - _vk.lgamma(big + 1.0)
        result = _vk.zeros(shape, dtype=_vk.float64, device=device)
        done = small
        while not bool(done.all().item()):
            proposals = (_PROPOSALS, *shape)
            y = _vk.tan(math.pi * _vk.rand(proposals, dtype=_vk.float64, device=device))
            k = (sq * y + big).floor()
            valid = k >= 0
            k_safe = _vk.where(valid, k, 0.0)
            t = 0.9 * (1.0 + y * y) * _vk.exp(k_safe * log_rate - _vk.lgamma(k_safe + 1.0) - g)
            accept = valid & (_vk.rand(proposals, dtype=_vk.float64, device=device) <= t)
            first = accept.to(_vk.int32).argmax(0, keepdim=True)
            chosen = k_safe.gather(0, first).squeeze(0)
            result = _vk.where(done, result, chosen)
            done = done | accept.any(0)
        return _vk.where(small, count, result).to(dtype)


class Poisson(ExponentialFamily):
    """The Poisson distribution: counts with mean ``rate``.

    >>> import vkml
    >>> from vkml.distributions import Poisson
    >>> round(Poisson(vkml.tensor(2.0)).log_prob(vkml.tensor(3.0)).item(), 4)
    -1.7123
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

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
