"""``ContinuousBernoulli(probs=None, logits=None)``, as ``torch.distributions.ContinuousBernoulli``.

Near ``probs`` = 1/2 the closed forms divide by ~0: inside ``lims`` PyTorch's Taylor expansions
stand in for them, here as there.
"""

from __future__ import annotations

import math
from numbers import Number

import vkml as _vk
from vkml.nn import functional as _F

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019), by ``probs`` or ``logits``.

    >>> from vkml.distributions import ContinuousBernoulli
    >>> round(ContinuousBernoulli(0.5).mean.item(), 4)
    0.5
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            # checked here: the clamped probs below would always pass
            if validate_args is not None and not self.arg_constraints["probs"].check(self.probs).all():
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = _vk.Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = _size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return _vk.le(self.probs, self._lims[0]) | _vk.gt(self.probs, self._lims[1])

    def _cut_probs(self):
        return _vk.where(self._outside_unstable_region(), self.probs, self._lims[0] * _vk.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log normalising constant as a function of ``probs``."""
        cut_probs = self._cut_probs()
        below_half = _vk.where(_vk.le(cut_probs, 0.5), cut_probs, _vk.zeros_like(cut_probs))
        above_half = _vk.where(_vk.ge(cut_probs, 0.5), cut_probs, _vk.ones_like(cut_probs))
        log_norm = _vk.log(_vk.abs(_vk.log1p(-cut_probs) - _vk.log(cut_probs))) - _vk.where(
            _vk.le(cut_probs, 0.5), _vk.log1p(-2.0 * below_half), _vk.log(2.0 * above_half - 1.0)
        )
        x = _vk.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _vk.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (_vk.log1p(-cut_probs) - _vk.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * _vk.pow(x, 2)) * x
        return _vk.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return _vk.sqrt(self.variance)

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = cut_probs * (cut_probs - 1.0) / _vk.pow(1.0 - 2.0 * cut_probs, 2) + 1.0 / _vk.pow(
            _vk.log1p(-cut_probs) - _vk.log(cut_probs), 2
        )
        x = _vk.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _vk.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        with _vk.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _vk.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (_vk.pow(cut_probs, value) * _vk.pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0) / (
            2.0 * cut_probs - 1.0
        )
        unbounded = _vk.where(self._outside_unstable_region(), cdfs, value)
        return _vk.where(
            _vk.le(value, 0.0),
            _vk.zeros_like(value),
            _vk.where(_vk.ge(value, 1.0), _vk.ones_like(value), unbounded),
        )

    def icdf(self, value):
        cut_probs = self._cut_probs()
        inverse = (_vk.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - _vk.log1p(-cut_probs)) / (
            _vk.log(cut_probs) - _vk.log1p(-cut_probs)
        )
        return _vk.where(self._outside_unstable_region(), inverse, value)

    def entropy(self):
        log_probs0 = _vk.log1p(-self.probs)
        log_probs1 = _vk.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalising constant as a function of the natural parameter."""
        outside = _vk.le(x, self._lims[0] - 0.5) | _vk.gt(x, self._lims[1] - 0.5)
        cut = _vk.where(outside, x, (self._lims[0] - 0.5) * _vk.ones_like(x))
        log_norm = _vk.log(_vk.abs(_vk.expm1(cut))) - _vk.log(_vk.abs(cut))
        taylor = 0.5 * x + _vk.pow(x, 2) / 24.0 - _vk.pow(x, 4) / 2880.0
        return _vk.where(outside, log_norm, taylor)
