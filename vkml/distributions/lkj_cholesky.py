"""``LKJCholesky(dim, concentration)``, as ``torch.distributions.LKJCholesky``: Cholesky factors of
LKJ-distributed correlation matrices, sampled by the onion method (Lewandowski, Kurowicka and Joe, 2009)."""

from __future__ import annotations

import math

import vkml as _vk

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _size, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Lower Cholesky factors L of correlation matrices L L^T with density proportional to det(L L^T)^(eta - 1).

    >>> from vkml.distributions import LKJCholesky
    >>> tuple(LKJCholesky(3, 0.5).sample().shape)
    (3, 3)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = _vk.Size((dim, dim))
        # the marginals of the onion method's Beta draws
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = _vk.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = _vk.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = _size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with _vk.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = _vk.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere[..., 0, :].fill_(0.0)  # the first row's 0/0
            w = _vk.sqrt(y) * u_hypersphere
            eps = _vk.finfo(w.dtype).tiny
            diag_elems = _vk.clamp(1 - _vk.sum(w**2, dim=-1), min=eps).sqrt()
            return w + _vk.diag_embed(diag_elems)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = _vk.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = _vk.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = _vk.lgamma(alpha) * dm1
        numerator = _vk.mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term
