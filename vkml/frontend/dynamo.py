"""``torch._dynamo`` and ``torch._inductor.config``: the names training programs touch around ``torch.compile``.

Programs set ``torch._dynamo.config.suppress_errors = True`` before compiling, call
``torch._dynamo.reset()`` between models, mark functions with ``torch._dynamo.disable`` and tune
``torch._inductor.config.coordinate_descent_tuning``. vkml compiles nothing ahead of a call (every
graph is lazy and fused at realize), so the settings are kept and read back but change nothing; a
name PyTorch's config does not have raises PyTorch's AttributeError, so a misspelt setting is caught
as it is under PyTorch (docs/jit.md).

>>> import vkml
>>> vkml._dynamo.config.suppress_errors = True
>>> vkml._dynamo.reset(); vkml._dynamo.config.suppress_errors
True
>>> vkml._dynamo.config.suppress_errors = False
"""

from __future__ import annotations

import contextlib
import types

from .compiler import allow_in_graph, assume_constant_result, is_compiling
from .compiler import disable as _disable
from .compiler import reset as _reset

__all__ = [
    "OptimizedModule",  # noqa: F822  (module __getattr__ below: it loads vkml.nn)
    "allow_in_graph",
    "assume_constant_result",
    "config",
    "disable",
    "graph_break",
    "is_compiling",
    "mark_dynamic",
    "mark_static",
    "maybe_mark_dynamic",
    "reset",
]


class _Config(types.ModuleType):
    """A PyTorch config module: known names only (PyTorch 2.13's defaults), settable, ``patch``-able."""

    def __init__(self, name: str, defaults: dict):
        super().__init__(name)
        object.__setattr__(self, "_defaults", dict(defaults))
        for key, value in defaults.items():
            if isinstance(value, dict):  # a nested config (``torch._inductor.config.triton``)
                value = _Config(f"{name}.{key}", value)
            object.__setattr__(self, key, value)

    def __getattr__(self, key: str):
        raise AttributeError(f"{self.__name__}.{key} does not exist")

    def __setattr__(self, key: str, value) -> None:
        if key not in self._defaults:
            raise AttributeError(f"{self.__name__}.{key} does not exist")
        object.__setattr__(self, key, value)

    def patch(self, arg1: str | dict | None = None, arg2=None, **kwargs):
        """Set names for the duration of a ``with`` block or a decorated call, as PyTorch's ``config.patch``."""
        changes = dict(kwargs)
        if isinstance(arg1, str):
            changes[arg1] = arg2
        elif isinstance(arg1, dict):
            changes.update(arg1)
        return _Patch(self, changes)


class _Patch(contextlib.ContextDecorator):
    def __init__(self, config: _Config, changes: dict):
        self.config, self.changes = config, changes
        for key in changes:  # an unknown name fails at patch(), as PyTorch's
            if key not in config._defaults:
                raise AttributeError(f"{config.__name__}.{key} does not exist")

    def __enter__(self) -> None:
        self.saved = {key: getattr(self.config, key) for key in self.changes}
        for key, value in self.changes.items():
            setattr(self.config, key, value)

    def __exit__(self, *exc) -> bool:
        for key, value in self.saved.items():
            setattr(self.config, key, value)
        return False


config = _Config(
    "torch._dynamo.config",
    {
        "suppress_errors": False,
        "verbose": False,
        "cache_size_limit": 8,
        "recompile_limit": 8,
        "accumulated_cache_size_limit": 256,
        "accumulated_recompile_limit": 256,
        "optimize_ddp": True,
        "automatic_dynamic_shapes": True,
        "assume_static_by_default": True,
        "capture_scalar_outputs": False,
        "capture_dynamic_output_shape_ops": False,
        "force_parameter_static_shapes": True,
        "inline_inbuilt_nn_modules": True,
        "error_on_recompile": False,
        "dynamic_shapes": True,
        "specialize_int": False,
    },
)

inductor_config = _Config(
    "torch._inductor.config",
    {
        "coordinate_descent_tuning": False,
        "coordinate_descent_check_all_directions": False,
        "fx_graph_cache": True,
        "fx_graph_remote_cache": None,
        "freezing": False,
        "epilogue_fusion": True,
        "max_autotune": False,
        "aggressive_fusion": False,
        "force_fuse_int_mm_with_mul": False,
        "use_mixed_mm": True,
        "triton": {"unique_kernel_names": True, "cudagraphs": False},
    },
)

inductor_package = types.ModuleType("torch._inductor")  # ``import torch._inductor.config`` finds it
inductor_package.config = inductor_config


def __getattr__(name: str):
    """``OptimizedModule`` (vkml/nn/compiled.py) loads with its first use: ``import vkml`` does not load vkml.nn."""
    if name == "OptimizedModule":
        from ..nn.compiled import OptimizedModule  # lazy: off import vkml's path

        return OptimizedModule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "OptimizedModule"})


def reset() -> None:
    """Nothing to clear: vkml keeps no compiled frames (``torch._dynamo.reset``)."""
    _reset()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None, wrapping: bool = True):
    """``@torch._dynamo.disable`` (with or without arguments): the function, unchanged."""
    return _disable(fn, recursive, reason=reason)


def graph_break() -> None:
    """Nothing to break: vkml traces no graph."""


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None) -> None:  # noqa: A002
    """Accepted: vkml's plans are keyed by shape, so every size is dynamic already."""


def maybe_mark_dynamic(t, index) -> None:
    """Accepted, as ``mark_dynamic``."""


def mark_static(t, index=None) -> None:
    """Accepted: nothing to specialize."""
