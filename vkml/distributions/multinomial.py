"""``Multinomial(total_count=1, probs=None, logits=None)``, as ``torch.distributions.Multinomial``."""

from __future__ import annotations

import math

import vkml as _vk
from vkml.nn import functional as _F

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import _size, broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts per category of ``total_count`` draws from ``Categorical(probs or logits)``.

    >>> import vkml
    >>> from vkml.distributions import Multinomial
    >>> Multinomial(4, probs=vkml.tensor([0.25, 0.75])).mean.tolist()
    [1.0, 3.0]
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count: int = 1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = _size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        sample_shape = _size(sample_shape)
        samples = self._categorical.sample(_size((self.total_count,) + tuple(sample_shape)))
        counts = _F.one_hot(samples, self._categorical._num_events).sum(0)  # the draws, counted per category
        return counts.to(self.probs.dtype)

    def entropy(self):
        n = _vk.tensor(float(self.total_count), dtype=self.probs.dtype, device=self.probs.device)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - _vk.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = _vk.exp(self._binomial.log_prob(support))
        weights = _vk.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = _vk.lgamma(value.sum(-1) + 1)
        log_factorial_xs = _vk.lgamma(value + 1).sum(-1)
        logits = _vk.where((value == 0) & (logits == -math.inf), 0.0, logits)  # 0 draws of an impossible category
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
