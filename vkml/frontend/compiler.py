"""``torch.compiler``: the decorators and queries programs put around ``torch.compile``, with PyTorch's names.

vkml compiles nothing ahead of a call (every graph is lazy and fused at realize), so ``disable`` returns
its function, ``allow_in_graph``, ``assume_constant_result`` and ``substitute_in_graph`` likewise, the
``is_*`` queries are False, ``reset`` and ``cudagraph_mark_step_begin`` have nothing to clear or mark,
and ``compile`` is ``vkml.compile`` (vkml/frontend/compat.py).

>>> import vkml
>>> @vkml.compiler.disable
... def step(x):
...     return x + 1
>>> step(vkml.ones(2)).tolist(), vkml.compiler.is_compiling()
([2.0, 2.0], False)
"""

from __future__ import annotations

from .compat import compile  # noqa: A004, F401  (torch.compiler.compile)

__all__ = [
    "allow_in_graph",
    "assume_constant_result",
    "compile",
    "cudagraph_mark_step_begin",
    "disable",
    "get_default_backend",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "list_backends",
    "reset",
    "set_stance",
    "substitute_in_graph",
]


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """``@torch.compiler.disable`` (with or without arguments): the function, unchanged."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through: bool = False, skip_signature_check: bool = False):
    """A decorator for a Python stand-in of ``original_fn`` under compile: outside it, the stand-in itself."""
    return lambda fn: fn


def is_compiling() -> bool:
    """False: vkml never traces a program (models branch on it to skip work under torch.compile)."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False


def reset() -> None:
    """Nothing to clear: vkml keeps no compiled frames (its kernel caches stay, they are keyed by the graph)."""


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: vkml has no CUDA graphs (``vkml.jit`` is its capture and replay, docs/jit.md)."""


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    return ["inductor"]


def get_default_backend() -> str:
    return "inductor"


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend=None):
    """Accepted (compile's stance); vkml runs every call the same way."""
    if stance not in ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile"):
        raise RuntimeError(f"invalid torch.compiler.set_stance stance {stance!r}")
