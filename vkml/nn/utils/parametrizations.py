"""``torch.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations
(vkml/nn/utils/parametrize.py), PyTorch's current forms of the older hook-based functions.

- ``weight_norm(module, name="weight", dim=0)``: ``weight = g * v / ||v||``, the norm over every dim
  but ``dim`` (``dim=None``: over the whole tensor); ``parametrizations.weight.original0`` is ``g``,
  ``original1`` is ``v``. A state dict of the hook-based form (``weight_g``, ``weight_v``) loads too.
- ``spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None)``:
  ``weight = original / sigma``, sigma the largest singular value of the weight as a matrix of
  ``dim`` (1 for transposed convolutions, else 0) by the rest, estimated by power iteration on the
  buffers ``_u`` and ``_v``: 15 steps when registered, then ``n_power_iterations`` at each access in
  training mode, none in eval mode. The first ``u`` and ``v`` are drawn from vkml's generator
  (PyTorch's differs: load a state dict for PyTorch's exact values).

- ``orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True)``: the weight
  (or each matrix of a batch) kept orthogonal, as ``matrix_exp`` (the default for square matrices),
  ``cayley`` or ``householder`` (the default otherwise) of its lower triangle, PyTorch's construction;
  with the trivialization the starting weight is kept as the ``base`` buffer, made orthogonal by QR. A
  tall weight's base takes extra random columns from vkml's generator (PyTorch's differs).

>>> import vkml
>>> layer = weight_norm(vkml.nn.Linear(3, 2))
>>> sorted(name for name, _ in layer.named_parameters())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""

from __future__ import annotations

import enum

from ...frontend import construction, dense_linalg, linalg_ops, pointwise
from ...frontend import operators as F
from ...frontend.autograd import no_grad
from ...frontend.dtype_info import finfo
from ...frontend.random import randn
from ...frontend.size import as_size
from ...tensor import Tensor
from ..functional_norm import normalize
from ..module import Module
from ..spatial import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from . import parametrize
from .weight_norms import norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (PyTorch's ``parametrizations.weight_norm``).

    >>> import vkml
    >>> layer = weight_norm(vkml.nn.Linear(4, 3))
    >>> tuple(layer.parametrizations.weight.original0.shape), tuple(layer.parametrizations.weight.original1.shape)
    ((3, 1), (3, 4))
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_hook_based_form(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, errors):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(load_hook_based_form)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            device = weight.device
            u = randn(h, dtype=weight.dtype, device=device)
            v = randn(w, dtype=weight.dtype, device=device)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # In place, as PyTorch's ``out=``: the buffers keep their identity (a state dict taken earlier sees it).
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(weight_mat.T.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Divide ``module.<name>`` by its largest singular value, estimated by power iteration (PyTorch's
    ``parametrizations.spectral_norm``).

    >>> import vkml
    >>> layer = spectral_norm(vkml.nn.Linear(4, 3))
    >>> sorted(name for name, _ in layer.named_buffers())
    ['parametrizations.weight.0._u', 'parametrizations.weight.0._v']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


def _diagonal_signs(x: Tensor) -> Tensor:
    return x.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a``'s QR with R's diagonal made positive: the orthogonal matrix nearest in that sense."""
    x, tau = dense_linalg.geqrf(a)
    return linalg_ops.householder_product(x, tau) * _diagonal_signs(x)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = construction.eye(k, dtype=q.dtype, device=q.device)
    return bool(pointwise.allclose(q.mH @ q, eye, atol=10.0 * n * finfo(q.dtype).eps))


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:  # a tall matrix: completed to square by zero columns
                zeros = x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)
                x = F.cat([x, zeros], dim=-1)
            a = x - x.mH  # skew-symmetric
            if self.orthogonal_map is _OrthMaps.matrix_exp:
                q = linalg_ops.matrix_exp(a)
            else:
                eye = construction.eye(n, dtype=x.dtype, device=x.device)
                q = dense_linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = linalg_ops.householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if getattr(self, "base", None) is not None:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        if tuple(q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {as_size(self.shape)}. Got a tensor of shape {q.shape}."
            )
        with no_grad():
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transposed = n < k
            if transposed:
                q, n, k = q.mT, k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley parametrizations when "
                        "use_trivialization=False."
                    )
                a, tau = dense_linalg.geqrf(q)
                # the diagonal holds the signs householder_product's result is multiplied by (-1 where tau is 0)
                diagonal = a.diagonal(dim1=-2, dim2=-1)
                signs = F.where(tau == 0.0, -diagonal.sgn(), diagonal.sgn())
                eye = construction.eye(n, k, dtype=a.dtype, device=a.device)  # n >= k here
                a = a * (1.0 - eye) + eye * signs.unsqueeze(-2)
                return a.mT if transposed else a
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:  # a tall matrix: completed by random columns, then made orthogonal
                extra = randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
                q = _make_orthogonal(F.cat([q, extra], dim=-1))
            self.base = q
            # -I: its lower triangle minus its transpose is 0, whose exponential (or Cayley map, or product of
            # reflections with these signs) is I, so the parametrized weight starts as the base.
            rows, columns = q_init.shape[-2], q_init.shape[-1]
            return -construction.eye(rows, columns, dtype=q_init.dtype, device=q_init.device).expand(q_init.shape)


def orthogonal(
    module: Module, name: str = "weight", orthogonal_map: str | None = None, *, use_trivialization: bool = True
) -> Module:
    """Keep ``module.<name>`` orthogonal (PyTorch's ``parametrizations.orthogonal``; the module's docstring says how).

    >>> import vkml
    >>> layer = orthogonal(vkml.nn.Linear(3, 3))
    >>> bool(vkml.allclose(layer.weight @ layer.weight.T, vkml.eye(3), atol=1e-5))
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    chosen = getattr(_OrthMaps, orthogonal_map, None) if isinstance(orthogonal_map, str) else None
    if chosen is None:
        raise ValueError(
            f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}'
        )
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, chosen, use_trivialization=use_trivialization), unsafe=True
    )
    return module
