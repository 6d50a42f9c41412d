"""``vkml.autograd.forward_ad``: torch.autograd.forward_ad's dual tensors — ``dual_level``,
``make_dual``, ``unpack_dual`` (an ``UnpackedDualTensor`` of primal and tangent), ``enter_dual_level``
and ``exit_dual_level``.

vkml has no forward-mode engine: a dual tensor is an alias of its primal that the reverse-mode graph
records, and ``unpack_dual(y)`` computes y's tangent J·t by the double backward trick (the gradient,
with respect to a dummy cotangent u, of Σ tᵢ·(Jᵢᵀ·u) over the level's duals), as ``vkml.func.jvp``
does. The values are the forward-mode ones and the tangent is itself differentiable, as PyTorch's.
What differs, and is stated on docs/autograd.md:

- the graph must be recorded: ``make_dual`` under ``no_grad`` or ``inference_mode`` raises
  NotImplementedError, and results computed under them carry no tangent;
- a dual made from a tensor that does not require grad requires grad (it is the graph's leaf);
- a custom ``autograd.Function`` with a ``backward`` contributes its tangent through it (its ``jvp`` is
  not called); one with a ``jvp`` and no ``backward`` gets its ``jvp`` called, as PyTorch's, and its
  outputs carry no reverse-mode history.

>>> import vkml
>>> import vkml.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(vkml.tensor([0.0, 1.0]), vkml.tensor([1.0, 1.0]))
...     fwAD.unpack_dual(x * x).tangent.tolist()
[0.0, 2.0]
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from . import autograd_api
from .autograd import is_grad_enabled, is_inference_mode_enabled, no_grad
from .autograd_api import _tensor_class
from .autograd_api import grad as _grad
from .creation import zeros_like

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal and its tangent (None when it has none)."""

    primal: Any
    tangent: Any


class _Level:
    def __init__(self, index: int):
        self.index = index
        self.duals: list = []  # (dual, primal, tangent), in creation order
        self.ids: dict = {}  # id(dual) -> position in duals


_levels: list[_Level] = []


def enter_dual_level() -> int:
    """Open the (single) forward-AD level and return its index, 0, as PyTorch's."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append(_Level(0))
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: its duals lose their tangents."""
    if not _levels or (level is not None and level != _levels[-1].index):
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
        )
    _levels.pop()


class dual_level(contextlib.ContextDecorator):  # noqa: N801 - torch.autograd.forward_ad's name
    """``with dual_level():`` opens a forward-AD level for the block; the value is the level's index."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _level(level: int | None, op: str) -> _Level | None:
    if not _levels:
        return None
    if level is not None and level != _levels[-1].index:
        raise RuntimeError(f"{op}: level {level} does not exist: the current level is {_levels[-1].index}")
    return _levels[-1]


def make_dual(tensor, tangent, *, level: int | None = None):
    """A tensor whose value is ``tensor``'s and whose tangent, at this level, is ``tangent``. Gradients
    flow through it to ``tensor`` as through a view."""
    current = _level(level, "make_dual")
    if current is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
        )
    tensor_class = _tensor_class()
    if not isinstance(tensor, tensor_class) or not isinstance(tangent, tensor_class):
        raise TypeError("make_dual(): expected tensor and tangent to be Tensors")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}."
        )
    if tensor.device != tangent.device:
        raise RuntimeError(
            f"make_dual(): expected tangent on the primal's device {tensor.device}, got {tangent.device}"
        )
    if not is_grad_enabled() or is_inference_mode_enabled():
        raise NotImplementedError(
            "make_dual: vkml computes forward-mode tangents by two reverse passes over the recorded graph, "
            "so dual tensors need grad mode (not under no_grad or inference_mode)"
        )
    dual = tensor.view_as(tensor) if tensor.requires_grad else tensor.detach().requires_grad_(True)
    current.ids[id(dual)] = len(current.duals)
    current.duals.append((dual, tensor, tangent))
    return dual


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent) of ``tensor`` at this level; the tangent is None for a tensor that depends on
    no dual of the level, and always outside a level."""
    current = _level(level, "unpack_dual")
    if current is None:
        return UnpackedDualTensor(tensor, None)
    position = current.ids.get(id(tensor))
    if position is not None and current.duals[position][0] is tensor:
        dual, primal, tangent = current.duals[position]
        return UnpackedDualTensor(dual if primal.requires_grad else primal, tangent)
    if not isinstance(tensor, _tensor_class()) or not tensor.requires_grad or not current.duals:
        return UnpackedDualTensor(tensor, None)
    # with no primal that requires grad, the graph exists only for the tangents: neither the primal nor
    # the tangent PyTorch gives back requires grad then
    tracked = any(primal.requires_grad for _, primal, _ in current.duals)
    primal, tangent = _tangent(tensor, current)
    if not tracked:
        primal, tangent = primal.detach(), (None if tangent is None else tangent.detach())
    return UnpackedDualTensor(primal, tangent)


def _tangent(tensor, current: _Level):
    duals = [d for d, _, _ in current.duals]
    dummy = zeros_like(tensor).requires_grad_(True)
    firsts = _grad([tensor], duals, [dummy], retain_graph=True, create_graph=True, allow_unused=True)
    pairs = [(g, t) for g, (_, _, t) in zip(firsts, current.duals) if g is not None and g.requires_grad]
    if not pairs:
        return tensor, (zeros_like(tensor) if any(g is not None for g in firsts) else None)
    (product,) = _grad(
        [g for g, _ in pairs], [dummy], [t.to(g.dtype) for g, t in pairs], create_graph=True, allow_unused=True
    )
    return tensor, (zeros_like(tensor) if product is None else product)


def _function_jvp(cls, ctx, args, outs):
    """A Function with ``jvp`` and no ``backward`` at a live level: ``jvp(ctx, *input tangents)`` (zeros for
    tensors without one, None for non-tensors, as PyTorch passes them), its outputs made duals."""
    current = _level(None, "jvp")
    if current is None or not current.duals:
        return None
    tensor_class = _tensor_class()
    tangents = [unpack_dual(a).tangent if isinstance(a, tensor_class) else None for a in args]
    if all(t is None for t in tangents):
        return None
    tangents = [zeros_like(a) if isinstance(a, tensor_class) and t is None else t for a, t in zip(args, tangents)]
    with no_grad():
        out_tangents = cls.jvp(ctx, *tangents)
    if not isinstance(out_tangents, tuple):
        out_tangents = (out_tangents,)
    if len(out_tangents) != len(outs):
        raise RuntimeError(
            f"{cls.__name__}.jvp: expected {len(outs)} tangents (one per output of forward), got {len(out_tangents)}"
        )
    return [
        o if t is None or not isinstance(o, tensor_class) else make_dual(o.detach(), t)
        for o, t in zip(outs, out_tangents)
    ]


autograd_api.function_jvp = _function_jvp
