"""``torch.nn.utils.weight_norm`` and ``spectral_norm`` (the hook-based forms), with their ``remove_*``.

Each replaces a module's parameter by others and recomputes the weight before every forward
(a forward pre-hook), under the same parameter and buffer names as PyTorch, so state dicts
load both ways:

- ``weight_norm``: ``weight = g * v / ||v||`` with the norm over every dim but ``dim``;
  parameters ``<name>_g`` and ``<name>_v``.
- ``spectral_norm``: ``weight = weight_orig / sigma``, sigma the largest singular value of the
  weight (as a matrix of ``dim`` by the rest) estimated by power iteration: in training mode
  each forward runs ``n_power_iterations`` steps and updates the buffers ``<name>_u`` and
  ``<name>_v`` in place; in eval mode it uses them as they are. The first ``u`` is drawn from
  vkml's generator (PyTorch's generator differs: load a state dict for PyTorch's exact values).
  Its state dict records ``{"<name>.version": 1}`` under ``_metadata[prefix]["spectral_norm"]``, and a
  state dict of the older format (no such entry, the weight saved and ``<name>_v`` not) loads as in
  PyTorch: ``v`` is solved from ``weight_orig``, ``u`` and the saved weight.

>>> import vkml
>>> import warnings; warnings.simplefilter("ignore", FutureWarning)
>>> lin = vkml.nn.utils.weight_norm(vkml.nn.Linear(3, 2))
>>> sorted(name for name, _ in lin.named_parameters())
['bias', 'weight_g', 'weight_v']
"""

from __future__ import annotations

import warnings

from ...frontend import operators as F
from ...frontend import shape
from ...frontend.autograd import no_grad
from ...frontend.dense_linalg import pinverse
from ...frontend.random import randn
from ..module import Parameter, is_lazy


def norm_except_dim(v, pow: float = 2, dim: int = 0):  # noqa: A002  (PyTorch's name)
    """``torch.norm_except_dim``: the ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims;
    ``dim=-1`` (what ``weight_norm``'s ``dim=None`` becomes) is the whole tensor's, a 0-d result.

    >>> import vkml
    >>> norm_except_dim(vkml.tensor([[3.0, 0.0], [0.0, 4.0]]), 2, 0).tolist()
    [[3.0], [4.0]]
    """
    if dim == -1:
        return F.sqrt(F.sum(v * v)) if pow == 2 else v.norm(pow)
    dim = dim % v.ndim if v.ndim else 0
    others = tuple(d for d in range(v.ndim) if d != dim)
    if not others:
        return F.abs(v)
    return F.sqrt(F.sum(v * v, others, True)) if pow == 2 else v.norm(pow, others, True)


class WeightNorm:
    """The pre-hook ``weight_norm`` installs (PyTorch's class name), holding ``name`` and ``dim``."""

    def __init__(self, name: str, dim: int | None):
        self.name, self.dim = name, -1 if dim is None else dim  # -1: the whole tensor's norm, as PyTorch's

    def compute_weight(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module, name: str, dim: int | None):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        weight = getattr(module, name, None)
        if is_lazy(weight):
            raise ValueError(
                "The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to run the dummy "
                "forward before applying weight normalization"
            )
        if not isinstance(weight, Parameter):
            raise ValueError(f"weight_norm: module has no parameter {name!r}")
        fn = WeightNorm(name, dim)
        del module._parameters[name]
        with no_grad():
            module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach().clone()))
            module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
        object.__setattr__(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module).detach().clone()
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.__dict__.pop(self.name, None)
        module.register_parameter(self.name, Parameter(weight))

    def __call__(self, module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but ``dim``; ``None``:
    the whole tensor); returns the module. PyTorch deprecates this form for
    ``parametrizations.weight_norm`` and warns (FutureWarning); so does vkml."""
    warnings.warn(
        "`torch.nn.utils.weight_norm` is deprecated in favor of `torch.nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    WeightNorm.apply(module, name, dim)
    return module


def _remove(module, kind: type, name: str, what: str):
    """Take out ``module``'s pre-hook of class ``kind`` for parameter ``name``, restoring the parameter."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")


def remove_weight_norm(module, name: str = "weight"):
    """Undo ``weight_norm``: ``module.<name>`` is a plain parameter again, holding the current weight."""
    return _remove(module, WeightNorm, name, "weight_norm")


def _normalize(x, eps: float):
    return x / F.clamp(F.sqrt(F.sum(x * x)), min=eps)


class SpectralNorm:
    """The pre-hook ``spectral_norm`` installs (PyTorch's class name)."""

    # the state dict format's version, recorded in its metadata: 1 has ``<name>_v`` and no plain weight
    _version: int = 1

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float):
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            order = [self.dim, *(d for d in range(weight.ndim) if d != self.dim)]
            weight = weight.permute(*order)
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(shape.mv(F.transpose(matrix, 0, 1), u), self.eps))
                    u.copy_(_normalize(shape.mv(matrix, v), self.eps))
                # clones: the buffers change in place next step, and backward reads these values
                u, v = F.clone(u), F.clone(v)
        sigma = F.sum(u * shape.mv(matrix, v))
        return weight / sigma

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        weight = getattr(module, name, None)
        if is_lazy(weight):
            raise ValueError(
                "The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure to run the dummy "
                "forward before applying spectral normalization"
            )
        if not isinstance(weight, Parameter):
            raise ValueError(f"spectral_norm: module has no parameter {name!r}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        with no_grad():
            matrix = fn.reshape_weight_to_matrix(weight)
            h, w = matrix.shape
            u = _normalize(randn(h, dtype=weight.dtype, device=weight.device), eps)
            v = _normalize(randn(w, dtype=weight.dtype, device=weight.device), eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        object.__setattr__(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        # objects of module-level classes, not bound methods or closures: the module stays picklable
        module.register_state_dict_post_hook(SpectralNormStateDictHook(fn))
        module.register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn

    def upgrade_state_dict(self, state_dict, prefix: str, local_metadata: dict) -> None:
        """A state dict saved before version 1 holds the normalized weight and no ``<name>_v``: solve ``v``
        so that ``u^T W v`` gives back that weight's sigma (PyTorch's load pre-hook)."""
        version = local_metadata.get("spectral_norm", {}).get(self.name + ".version", None)
        if version is not None and version >= 1:
            return
        key = prefix + self.name
        if version is None and key not in state_dict and all(key + s in state_dict for s in ("_orig", "_u", "_v")):
            return  # a state dict made by hand in the current format, without the metadata
        if not all(k in state_dict for k in (key, key + "_orig", key + "_u")):
            return  # load_state_dict reports what is missing
        with no_grad():
            weight_orig = state_dict[key + "_orig"]
            weight = state_dict.pop(key)
            sigma = F.mean(weight_orig / weight)
            matrix = self.reshape_weight_to_matrix(weight_orig)
            u = state_dict[key + "_u"]
            gram_inverse = pinverse(F.matmul(F.transpose(matrix, 0, 1), matrix))
            v = F.matmul(F.matmul(gram_inverse, F.transpose(matrix, 0, 1)), u.unsqueeze(1)).squeeze(1)
            state_dict[key + "_v"] = v * (sigma / F.sum(u * shape.mv(matrix, v)))

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False).detach().clone()
        for table, kind in (
            (module._state_dict_hooks, SpectralNormStateDictHook),
            (module._load_state_dict_pre_hooks, SpectralNormLoadStateDictPreHook),
        ):
            for key, hook in list(table.items()):
                if isinstance(hook, kind) and hook.fn.name == self.name:
                    del table[key]
        del module._parameters[self.name + "_orig"]
        del module._buffers[self.name + "_u"]
        del module._buffers[self.name + "_v"]
        module.__dict__.pop(self.name, None)
        module.register_parameter(self.name, Parameter(weight))

    def __call__(self, module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


class SpectralNormStateDictHook:
    """state_dict hook: the format's version under ``local_metadata["spectral_norm"]``, as PyTorch's."""

    def __init__(self, fn: SpectralNorm):
        self.fn = fn

    def __call__(self, module, state_dict, prefix: str, local_metadata: dict) -> None:
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


class SpectralNormLoadStateDictPreHook:
    """load_state_dict pre-hook: converts a state dict of the format before version 1."""

    def __init__(self, fn: SpectralNorm):
        self.fn = fn

    def __call__(self, module, state_dict, prefix: str, local_metadata: dict, *unused) -> None:
        self.fn.upgrade_state_dict(state_dict, prefix, local_metadata)


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm before each forward; returns the module.

    ``dim`` defaults to 0, or 1 for the transposed convolutions, as PyTorch's.
    """
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo ``spectral_norm``: ``module.<name>`` is a plain parameter again, holding the normalized weight."""
    return _remove(module, SpectralNorm, name, "spectral_norm")
