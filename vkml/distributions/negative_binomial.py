"""``NegativeBinomial(total_count, probs=None, logits=None)``, as ``torch.distributions.NegativeBinomial``.

Sampled as PyTorch does: Poisson(rate) with rate ~ Gamma(total_count, exp(-logits)).
"""

from __future__ import annotations

import vkml as _vk
from vkml.nn import functional as _F

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .poisson import _poisson_sample
from .utils import _size, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """Successes before ``total_count`` failures, each trial a success with probability ``probs``.

    >>> import vkml
    >>> from vkml.distributions import NegativeBinomial
    >>> NegativeBinomial(4.0, probs=vkml.tensor(0.5)).mean.item()
    4.0
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = _size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * _vk.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / _vk.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=_vk.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()):
        with _vk.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return _poisson_sample(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * _F.logsigmoid(-self.logits) + value * _F.logsigmoid(self.logits)
        log_normalization = (
            -_vk.lgamma(self.total_count + value) + _vk.lgamma(1.0 + value) + _vk.lgamma(self.total_count)
        )
        # total_count == 0 and value == 0 has probability 1, where lgamma(0) is infinite
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
