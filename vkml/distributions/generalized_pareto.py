"""``GeneralizedPareto(loc, scale, concentration)``, as ``torch.distributions.GeneralizedPareto``."""

from __future__ import annotations

import math
from numbers import Number, Real

import vkml as _vk

from . import constraints
from .distribution import Distribution
from .utils import _size, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution: Exponential at ``concentration`` 0, Pareto above, bounded below.

    ``rsample`` is the inverse CDF of uniforms, so it is reparameterised.

    >>> from vkml.distributions import GeneralizedPareto
    >>> GeneralizedPareto(0.0, 2.0, 0.5).mean.item()
    4.0
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, Number) for v in (loc, scale, concentration)):
            batch_shape = _vk.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = _size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _vk.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _safe_concentration(self):
        """(concentration == 0 as PyTorch's isclose decides it, the concentration with those set to 1)."""
        eq_zero = _vk.isclose(self.concentration, _vk.zeros_like(self.concentration))
        return eq_zero, _vk.where(eq_zero, _vk.ones_like(self.concentration), self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + _vk.ones_like(z)
        where_nonzero = _vk.where(y == 0, y, y * _vk.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - _vk.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -_vk.log1p(safe_conc * z) / safe_conc
        return _vk.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return _vk.log1p(-_vk.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return _vk.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = _vk.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * _vk.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return _vk.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = _vk.where(valid, self.concentration, 0.5)
        return _vk.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = _vk.where(valid, self.concentration, 0.25)
        result = self.scale**2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return _vk.where(valid, result, math.nan)

    def entropy(self):
        return _vk.broadcast_to(_vk.log(self.scale) + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = _vk.where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
