"""``torch.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations
(vkml/nn/utils/parametrize.py), PyTorch's current forms of the hook-based ``nn.utils.weight_norm``.

- ``weight_norm(module, name, dim)``: ``weight = g * v / ||v||`` (norm over every dim but ``dim``;
  ``dim=None`` or -1: over the whole tensor, as PyTorch's ``norm_except_dim``), with
  ``parametrizations.<name>.original0`` (g) and ``original1`` (v) in the state dict.
- ``spectral_norm(module, name, n_power_iterations, eps, dim)``: ``weight / sigma``, sigma estimated
  by power iteration on the buffers ``parametrizations.<name>.0._u`` and ``_v``, updated in place by
  each access in training mode. The first ``u`` and ``v`` come from vkml's generator (PyTorch's
  differs: load a state dict for PyTorch's exact values).

>>> import vkml
>>> layer = weight_norm(vkml.nn.Linear(3, 2))
>>> sorted(layer.state_dict())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""

from __future__ import annotations

from ...frontend import operators as F
from ...frontend import shape
from ...frontend.autograd import no_grad
from ...frontend.legacy_names import vdot
from ...frontend.random import randn
from ..functional_norm import normalize
from ..module import Module
from ..spatial import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from . import parametrize


def _norm_except_dim(v, dim: int):
    """PyTorch's ``torch.norm_except_dim(v, 2, dim)``: -1 is the whole tensor's norm."""
    if dim == -1:
        return F.sqrt(F.sum(v * v))
    others = tuple(d for d in range(v.ndim) if d != dim)
    return F.sqrt(F.sum(v * v, others, True)) if others else F.abs(v)


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (PyTorch's parametrizations.weight_norm)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(
        module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # a checkpoint of the hook-based weight_norm: <name>_g and <name>_v become original0 and original1
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
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
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = randn(h, dtype=weight.dtype, device=weight.device)
            v = randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(shape.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(shape.mv(weight_mat.T, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = vdot(u, shape.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Reparametrize ``module.<name>`` as the weight divided by its largest singular value (PyTorch's
    parametrizations.spectral_norm; ``dim`` defaults to 1 for the ConvTranspose layers, else 0)."""
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def orthogonal(module: Module, name: str = "weight", orthogonal_map=None, *, use_trivialization: bool = True):
    """PyTorch's parametrizations.orthogonal: not implemented in vkml."""
    raise NotImplementedError("vkml.nn.utils.parametrizations.orthogonal is not implemented")


__all__ = ["orthogonal", "spectral_norm", "weight_norm"]
