"""``ReshapeTransform``, ``PositiveDefiniteTransform`` and ``CumulativeDistributionTransform``, as in
``torch.distributions.transforms`` (which re-exports them: vkml/distributions/transforms.py)."""

from __future__ import annotations

import math

import vkml as _vk

from . import constraints
from .transforms import LowerCholeskyTransform, Transform

__all__ = ["CumulativeDistributionTransform", "PositiveDefiniteTransform", "ReshapeTransform"]


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims of a tensor to ``out_shape`` (unit Jacobian).

    >>> import vkml
    >>> from vkml.distributions.transforms import ReshapeTransform
    >>> tuple(ReshapeTransform((4,), (2, 2))(vkml.zeros(3, 4)).shape)
    (3, 2, 2)
    """

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = _vk.Size(in_shape)
        self.out_shape = _vk.Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        if len(shape) < len(self.in_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.in_shape)
        if tuple(shape[cut:]) != tuple(self.in_shape):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {self.in_shape}")
        return tuple(shape[:cut]) + tuple(self.out_shape)

    def inverse_shape(self, shape):
        if len(shape) < len(self.out_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.out_shape)
        if tuple(shape[cut:]) != tuple(self.out_shape):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {self.out_shape}")
        return tuple(shape[:cut]) + tuple(self.in_shape)


class PositiveDefiniteTransform(Transform):
    """Unconstrained matrices to positive definite ones: ``L L^T`` of ``LowerCholeskyTransform``'s ``L``."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = Transform.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(_vk.linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: values to the unit interval (a copula's marginals), inverse ``icdf``."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
