"""``StudentT(df, loc=0.0, scale=1.0)``, as ``torch.distributions.StudentT``."""

from __future__ import annotations

import math

import vkml as _vk

from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .utils import _size, _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``.

    ``rsample`` draws a Chi2(df): it raises NotImplementedError when ``df`` requires a gradient
    (docs/distributions.md).

    >>> import vkml
    >>> from vkml.distributions import StudentT
    >>> round(StudentT(3.0).log_prob(vkml.tensor(0.0)).item(), 4)
    -1.0009
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return _vk.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        safe = _vk.where(self.df > 2, self.df, 3.0)  # keeps the unused branch finite for the gradient
        finite = self.scale.pow(2) * safe / (safe - 2)
        return _vk.where(self.df > 2, finite, _vk.where(self.df > 1, math.inf, math.nan))

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = _size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * _vk.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + _vk.lgamma(0.5 * self.df)
            - _vk.lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * _vk.log1p(y**2.0 / self.df) - Z

    def entropy(self):
        lbeta = _vk.lgamma(0.5 * self.df) + math.lgamma(0.5) - _vk.lgamma(0.5 * (self.df + 1))
        return (
            self.scale.log()
            + 0.5 * (self.df + 1) * (_vk.digamma(0.5 * (self.df + 1)) - _vk.digamma(0.5 * self.df))
            + 0.5 * self.df.log()
            + lbeta
        )
