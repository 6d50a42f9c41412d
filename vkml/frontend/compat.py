"""The switches PyTorch programs set around their model: ``vkml.backends``, matmul precision,
deterministic algorithms and ``vkml.compile``, with PyTorch's names and what each means on vkml.

    >>> import vkml
    >>> vkml.backends.cudnn.benchmark = True      # accepted; vkml has no cuDNN to tune
    >>> vkml.set_float32_matmul_precision("high")
    >>> vkml.get_float32_matmul_precision()
    'high'
"""

from __future__ import annotations

import functools
import sys
import types
import warnings

from . import sdpa_backends

_PRECISIONS = ("highest", "high", "medium")
_state = {"precision": "highest", "deterministic": False, "warn_only": False}


class _Settings(types.SimpleNamespace):
    """A namespace of settings: reading an unknown one raises AttributeError, as in PyTorch."""


class _MatmulSettings:
    """``vkml.backends.cuda.matmul``: ``allow_tf32`` mirrors the float32 matmul precision, as in PyTorch."""

    @property
    def allow_tf32(self) -> bool:
        return _state["precision"] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        set_float32_matmul_precision("high" if value else "highest")

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


def _mps_unavailable() -> bool:
    return False


# vkml.backends: cudnn's switches are accepted and kept (vkml has no cuDNN: its kernels are its own,
# chosen without benchmarking and always deterministic); mps is never available (Apple's Metal is
# reached through Vulkan only by MoltenVK, which appears as a Vulkan device).
backends = types.ModuleType("vkml.backends", "PyTorch's torch.backends switches, accepted by vkml (docs/devices.md).")
backends.cudnn = _Settings(
    enabled=True,
    benchmark=False,
    deterministic=False,
    allow_tf32=True,
    is_available=_mps_unavailable,
    version=lambda: None,
)
backends.cuda = _Settings(
    matmul=_MatmulSettings(),
    # which scaled_dot_product_attention implementations may run (vkml/frontend/sdpa_backends.py)
    **{name: getattr(sdpa_backends, name) for name in sdpa_backends.__all__ if name[0].islower()},
)
backends.mps = _Settings(is_available=_mps_unavailable, is_built=_mps_unavailable)


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision PyTorch programs set: ``"highest"``, ``"high"`` or ``"medium"``.

    On vkml every value computes float32 products with float32 multiplies and float32
    accumulation: "high" and "medium" permit TF32 or bfloat16 passes in PyTorch, and vkml takes
    none, so results keep matmul's stated bound (docs/ops/matmul.md) under each. The value is
    kept for ``get_float32_matmul_precision``. An unknown value warns and changes nothing, as in PyTorch.
    """
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "set_float32_matmul_precision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    _state["precision"] = precision


def get_float32_matmul_precision() -> str:
    """The value last given to ``set_float32_matmul_precision`` (``"highest"`` at start)."""
    return _state["precision"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted for PyTorch programs: every vkml op is deterministic already (the same inputs give the
    same bits on every run, DESIGN §4), so no op raises or warns under ``mode=True``."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(
            f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not {type(warn_only).__name__}"
        )
    _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """The ``mode`` last given to ``use_deterministic_algorithms`` (vkml is deterministic either way)."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["deterministic"] and _state["warn_only"]


def compile(
    model=None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend="inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
    name: str | None = None,
    recompile_limit: int | None = None,
    isolate_recompiles: bool = False,
    shapes_spec=None,
):
    """``torch.compile``: a module comes back wrapped as PyTorch's ``OptimizedModule``, a function as a
    function that calls it (its ``__wrapped__``); ``disable=True`` returns ``model`` itself.

    The wrapper is PyTorch's shape, not a compiler: ``_orig_mod`` is the module, calls and attributes
    go to it, and ``state_dict`` keys start with ``_orig_mod.`` (vkml/nn/compiled.py). vkml needs no
    compile step to fuse: every program is lazy already, and each realize fuses its graph into kernels
    and reuses the plan of an earlier graph of the same structure (vkml/schedule/plan_cache.py).
    Capturing a whole step once and replaying it comes with ``vkml.jit``. Called without a model it
    returns a decorator, as ``torch.compile`` does.

    >>> step = compile(lambda x: x * 2, mode="max-autotune")
    >>> step(3)
    6
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if model is None:
        return functools.partial(
            compile,
            fullgraph=fullgraph,
            dynamic=dynamic,
            backend=backend,
            mode=mode,
            options=options,
            disable=disable,
            name=name,
            recompile_limit=recompile_limit,
            isolate_recompiles=isolate_recompiles,
            shapes_spec=shapes_spec,
        )
    if not callable(model):
        raise RuntimeError(f"compile(): model must be a callable, got {type(model).__name__}")
    if disable:
        return model
    nn = sys.modules.get("vkml.nn.module")  # loaded already when model is a module (vkml.nn loads lazily)
    if nn is not None and isinstance(model, nn.Module):
        from ..nn.compiled import OptimizedModule  # lazy: off import vkml's path

        return OptimizedModule(model)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return model(*args, **kwargs)

    return compiled
