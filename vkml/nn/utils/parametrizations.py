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

``orthogonal`` is not provided yet (AttributeError, not a silent stand-in).

>>> import vkml
>>> layer = weight_norm(vkml.nn.Linear(3, 2))
>>> sorted(name for name, _ in layer.named_parameters())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""

from __future__ import annotations

from ...frontend.autograd import no_grad
from ...frontend.random import randn
from ...tensor import Tensor
from ..functional_norm import normalize
from ..module import Module
from ..spatial import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from . import parametrize

__all__ = ["spectral_norm", "weight_norm"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002  (PyTorch's name)
    """``torch.norm_except_dim``: the ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims
    (``dim=-1``: over the whole tensor, a 0-d result).

    >>> import vkml
    >>> norm_except_dim(vkml.tensor([[3.0, 0.0], [0.0, 4.0]]), 2, 0).tolist()
    [[3.0], [4.0]]
    """
    if dim == -1:
        return v.norm(pow)
    dim = dim % v.ndim if v.ndim else 0
    others = tuple(d for d in range(v.ndim) if d != dim)
    return v.norm(pow, others, True) if others else v.abs()


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
