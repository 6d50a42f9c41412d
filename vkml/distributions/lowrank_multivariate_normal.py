"""``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``.

As ``torch.distributions.LowRankMultivariateNormal``: the normal distribution of vectors whose
covariance is ``cov_factor @ cov_factor.mT + diag(cov_diag)``, with ``cov_factor`` of rank m. Its
densities go through the m x m capacitance matrix ``I + W^T D^-1 W`` (Woodbury's identity and the
matrix determinant lemma), so an n-dimensional event costs an m x m Cholesky factor, not n x n.
"""

from __future__ import annotations

import math

import vkml as _vk

from ..frontend import dense_linalg as _linalg
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _size, _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _plus_identity(K):
    """K + I for a batch of square matrices."""
    return K + _vk.eye(K.shape[-1], dtype=K.dtype, device=K.device)


def _capacitance_tril(W, D):
    """The lower Cholesky factor of I + W^T D^-1 W (m x m)."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return _linalg.cholesky(_plus_identity(_vk.matmul(Wt_Dinv, W)))


def _log_det(W, D, capacitance_tril):
    """log det(W W^T + D), by the matrix determinant lemma."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x, by Woodbury's identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The normal distribution of vectors with covariance ``cov_factor @ cov_factor.mT + diag(cov_diag)``.

    >>> import vkml
    >>> from vkml.distributions import LowRankMultivariateNormal
    >>> d = LowRankMultivariateNormal(vkml.zeros(2), vkml.tensor([[1.0], [0.0]]), vkml.ones(2))
    >>> d.covariance_matrix.tolist(), round(d.log_prob(vkml.zeros(2)).item(), 4)
    ([[2.0, 0.0], [0.0, 1.0]], -2.1845)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {_vk.Size(event_shape)}")
        loc_, cov_factor, cov_diag_ = _vk.broadcast_tensors(loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self.cov_factor = cov_factor
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, _vk.Size(event_shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = _size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        super(LowRankMultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        shape = tuple(self._batch_shape) + tuple(self._event_shape)
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(shape)

    @lazy_property
    def scale_tril(self):
        # sqrt(D) chol(I + D^-1/2 W W^T D^-1/2): the factor of W W^T + D without forming it first
        D_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / D_sqrt
        K = _plus_identity(_vk.matmul(Dinvsqrt_W, Dinvsqrt_W.mT))
        shape = tuple(self._batch_shape) + tuple(self._event_shape) * 2
        return (D_sqrt * _linalg.cholesky(K)).expand(shape)

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        shape = tuple(self._batch_shape) + tuple(self._event_shape) * 2
        return (_vk.matmul(W, W.mT) + _vk.diag_embed(self._unbroadcasted_cov_diag)).expand(shape)

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W (I + W^T D^-1 W)^-1 W^T D^-1
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        A = _linalg.solve_triangular(self._capacitance_tril, W.mT / D.unsqueeze(-2), upper=False)
        shape = tuple(self._batch_shape) + tuple(self._event_shape) * 2
        return (_vk.diag_embed(D.reciprocal()) - _vk.matmul(A.mT, A)).expand(shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        W = self._unbroadcasted_cov_factor
        eps_W = _standard_normal(tuple(shape[:-1]) + tuple(W.shape[-1:]), dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(W, eps_W) + self._unbroadcasted_cov_diag.sqrt() * eps_D

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        M = _mahalanobis(W, D, value - self.loc, self._capacitance_tril)
        log_det = _log_det(W, D, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M + log_det)

    def entropy(self):
        log_det = _log_det(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return H
        return H.expand(tuple(self._batch_shape))
