"""Mutation with PyTorch's semantics over immutable lazy nodes (functionalization).

A ``Tensor`` is a handle. A tensor made by an op owns its storage: its value is ``_node`` and
``_vcount`` counts the writes to it (PyTorch's version counter). A view (``reshape``,
``permute``, ``expand``, basic indexing, ``detach``, ``.data``) shares the storage of the
tensor it was taken from: it keeps that tensor as ``_base`` and the view steps from it as
``_chain``, and its ``_node`` is valid for the base version ``_seen``.

A write (``add_``, ``x[i] = v``, ``copy_``, ``+=``, ...) never changes a node. It builds the
storage owner's new value — for a write through a view, the old value with the view's region
replaced: an elementwise select of the placed values (pads and reshapes of the written value,
all index arithmetic) over the old value, which fuses with its neighbours —, rebinds the
owner's ``_node`` and bumps its ``_vcount``. A view whose ``_seen`` is older rebuilds its node
by replaying its chain on the new value (``refresh``, called by ``Tensor.node``). An op
recorded before the write holds the old node, so it sees the old value whatever the order of
realization.

Autograd follows PyTorch: the new value is built with recording on, so the owner's ``_ctx``
becomes the write's (``where`` over the old value: PyTorch's CopySlices), and a view rebuilt
from an owner that requires grad records its view ops again. Gradient rules read saved
values through ``SavedTensor`` (vkml/tensor.py), which raises PyTorch's error when the
storage was written after the value was saved. ``docs/mutation.md`` has the whole contract.
"""

from __future__ import annotations

import math
import warnings
import weakref

import numpy as np

from .. import tensor as _tensor
from ..errors import DTypeError, ShapeError
from ..graph import build as lazy
from ..graph import node as lazy_node
from ..graph.view import ViewStack, contiguous_strides
from ..ir import types as T
from ..ops.cast import host_round
from . import autograd
from . import operators as F
from .caller import user_stacklevel

# PyTorch's names of dtypes, as its messages about in-place results print them.
_TORCH_NAMES = {
    "float32": "Float",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float64": "Double",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "uint16": "UInt16",
    "bool": "Bool",
}

_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single memory "
    "location. Please clone() the tensor before performing the operation."
)
INPUT_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
    "location. Please clone() the tensor before performing the operation."
)
# In-place ops whose operands may not share any element with the tensor written, the same view included
# (PyTorch's index ops: ind.index_add_(0, ind, src)); the others may read the very elements they write
NO_OPERAND_OVERLAP = frozenset(
    "index_add_ index_copy_ index_fill_ put_ masked_scatter_ masked_fill_ scatter_ scatter_add_ index_put_".split()
)


def refuse_operand_overlap(t, operands, same_ok: bool) -> None:
    """PyTorch's error where an operand of a write into ``t`` shares storage elements with it: any shared
    element, or with ``same_ok`` only those of an operand that is not ``t``'s very view (an elementwise op
    may read the element it writes)."""
    owner = None
    for o in operands:
        if not isinstance(o, _tensor.Tensor) or (same_ok and o is t):
            continue
        if owner is None:
            owner = t._base if t._base is not None else t
        if (o._base if o._base is not None else o) is not owner or not o.numel() or not t.numel():
            continue
        mine, theirs = _windows.storage_positions(t), _windows.storage_positions(o)
        if same_ok and mine.shape == theirs.shape and np.array_equal(mine, theirs):
            continue
        if o is t or np.intersect1d(mine, theirs).size:
            raise RuntimeError(INPUT_OVERLAP)


# ---------------------------------------------------------------------- views


def link_view(out, input, step: tuple, then: tuple | None = None):
    """Make ``out`` (a new tensor that views ``input`` by ``step``, and by ``then`` after it where given)
    share ``input``'s storage; returns ``out``.

    ``step`` is one of ("reshape", shape), ("permute", order), ("expand", shape, old shape),
    ("slice", starts, stops, steps): enough to replay the view and to place values back.
    """
    if out is input:
        return out
    steps = (step,) if then is None else (step, then)
    base = input._base
    if base is None:
        out._base, out._chain = input, steps
        out._gradview, out._dataview = True, False
    else:
        out._base, out._chain = base, input._chain + steps
        out._gradview, out._dataview = input._gradview, input._dataview
        root = getattr(input, "_droot", None) if not input._gradview else None
        if root is not None:
            out._droot = weakref.ref(input) if root is True else root
    out._seen = out._base._vcount
    return out


def detached_root(view):
    """The detached tensor (``detach()``, ``.data``, ``Variable(t)``) ``view`` is or was taken from, or None
    (it is gone, or ``view`` is no such view). ``_droot``: True on the detached tensor itself, a weak
    reference to it on the views taken from it (a strong one would keep it, and a self-reference would
    leave its storage to the cycle collector)."""
    root = getattr(view, "_droot", None)
    if root is None or root is True:
        return view if root else None
    return root()


def viewable(t, shape: tuple[int, ...]) -> bool:
    """Whether ``t`` reshaped to ``shape`` is a view of its storage in PyTorch (strides allow it), not a copy."""
    _windows.rehome(t)
    base = t._base
    if base is None:
        return True
    key = (base.node.shape, t._chain, tuple(shape))
    try:
        return _VIEWABLE[key]
    except KeyError:
        pass
    except TypeError:  # a step holding something unhashable: decided anew each time
        key = None
    stack = ViewStack.contiguous(base.shape)
    for step in t._chain:
        stack = edit_stack(stack, step)
    found = len(stack.views) == 1 and stack.top.reshape(tuple(shape)) is not None
    if key is not None:
        if len(_VIEWABLE) >= _VIEWABLE_KEPT:  # a loop whose views change every step
            _VIEWABLE.clear()
        _VIEWABLE[key] = found
    return found


# ``viewable``'s answers by (owner's shape, view chain, new shape): it depends on nothing else, and a
# loop reshapes the same views of the same shapes at every step (attention's heads merged back).
_VIEWABLE: dict = {}
_VIEWABLE_KEPT = 4096


def link_reshape(out, input, shape: tuple[int, ...]):
    """``out = input.reshape(shape)``: a view of ``input``'s storage where PyTorch's would be, else a copy of its own."""
    return link_view(out, input, ("reshape", shape)) if viewable(input, shape) else out


def apply_step(t, step: tuple):
    """The view ``step`` of tensor ``t``, through the public (recorded, linking) functions."""
    kind = step[0]
    if kind == "reshape":
        return F.reshape(t, *step[1])
    if kind == "permute":
        return F.permute(t, *step[1])
    if kind == "expand":
        return F.expand(t, *step[1])
    if kind == "dtype":  # Tensor.view(dtype) of one element size
        return t.view(step[1])
    if kind == "window":
        return _windows.window(t, *step[1:])
    if kind == "strided":  # always a chain's first step: t is the owner
        return _windows.as_strided(t, step[1], step[2], step[3])
    return F._slice(t, step[1], step[2], step[3])


def edit_stack(stack: ViewStack, step: tuple) -> ViewStack:
    """``stack`` with view ``step`` applied (a tensor's ``_chain`` replayed on its owner's row-major stack)."""
    kind = step[0]
    if kind == "reshape":
        return stack.reshape(step[1])
    if kind == "permute":
        return stack.permute(step[1])
    if kind == "expand":
        extra = len(step[1]) - len(stack.shape)
        if extra:  # expand adds leading dims: the view's rank grows first (View.expand keeps its rank)
            stack = stack.reshape((1,) * extra + tuple(stack.shape))
        return stack.expand(step[1])
    if kind == "dtype":  # the same elements, read as another dtype of their size
        return stack
    if kind == "window":
        for d, k, s, dl in zip(*step[1:]):
            stack = stack.window(d, k, s, dl)
        return stack
    if kind == "strided":
        return stack.strided(step[1], step[2], step[3])
    return stack.slice(step[1], step[2], step[3])


def custom_function_view(out, input, output: tuple[int, str]) -> None:
    """Make ``out`` (a custom Function's new handle on ``input``, returned as is) PyTorch's view of
    ``input``'s storage outside autograd: writing through it is refused (``check_writable``), and so is
    reading it for autograd after its storage was written (``refresh``). ``output``: (its position,
    the Function's name), for PyTorch's words."""
    base = input._base
    out._base, out._chain = (input, ()) if base is None else (base, input._chain)
    out._seen = out._base._vcount
    out._gradview, out._dataview = False, False
    out._custom_view = output


def _custom_view_rebased(output: tuple[int, str]) -> RuntimeError:
    return RuntimeError(
        f"Output {output[0]} of {output[1]} is a view and its base or another view of its base has been modified "
        "inplace. This view was created inside a custom Function (or because an input was returned as-is) and the "
        "autograd logic to handle view+inplace would override the custom backward associated with the custom "
        "Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the "
        "output of the custom Function."
    )


def refresh(t):
    """``t``'s node after a write to its storage: its view chain replayed on the owner's new value."""
    custom_view = getattr(t, "_custom_view", None)
    if custom_view is not None and t._requires_grad and autograd.is_grad_enabled():
        raise _custom_view_rebased(custom_view)
    _windows.rehome(t)  # its base may have handed its storage on (an in-place view method)
    base = t._base
    record = t._gradview and base._requires_grad
    with autograd.set_grad_enabled(record):
        v = base
        for step in t._chain:
            v = apply_step(v, step)
    node = v.node
    t._node, t._seen = node, base._vcount
    if record:
        t._ctx, t._requires_grad = v._ctx, v._requires_grad
    return node


def current(t) -> None:
    """Bring view ``t``'s node and autograd history up to date with its base (no-op when they are)."""
    if t._seen != t._base._vcount:
        refresh(t)


def detached_view(t, data: bool = False):
    """``t.detach()`` and (``data``) ``t.data``: the same storage, outside autograd.

    A write through a ``.data`` view is not counted in the storage's autograd version (PyTorch
    gives ``.data`` a version counter of its own); one through ``detach()`` is.
    """
    out = _tensor.Tensor(t.node)
    base = t._base
    out._base, out._chain = (t, ()) if base is None else (base, t._chain)
    out._seen = out._base._vcount
    out._gradview, out._dataview = False, data
    out._droot = True
    return out


def share_storage(p, t, t_keeps_storage: bool = False) -> None:
    """Make the new leaf handle ``p`` share ``t``'s storage outside autograd: ``nn.Parameter(t)``.

    A write through either is seen by the other, as in PyTorch, and they count one version. The
    storage goes to ``p`` (what an optimizer writes stays an owner, the cheap case) and ``t`` becomes
    a view of it, unless ``t`` is a view (``p`` views its owner too) or ``t_keeps_storage`` (``t``
    is a model's parameter itself: ``p`` views it).
    """
    if t._base is None and not t_keeps_storage:
        _windows.hand_storage(t, p)
        return
    node = t.node
    owner, chain = (t, ()) if t._base is None else (t._base, t._chain)
    p._node = node
    p._base, p._chain, p._seen = owner, chain, owner._vcount
    p._gradview, p._dataview = False, False


def leave_storage(t, node) -> None:
    """Owner ``t`` takes a new storage holding ``node``; its views keep the old one (vkml/frontend/windows.py)."""
    _windows.leave_storage(t, node)


def handed_on(owner, chain: tuple):
    """The owner of former owner ``owner``'s storage now, and ``chain`` relative to it (vkml/frontend/windows.py)."""
    return _windows.handed_on(owner, chain)


def current_value(owner, chain: tuple):
    """The node of the view ``chain`` of ``owner``'s current value (a saved tensor read after a ``.data`` write)."""
    with autograd.no_grad():
        v = _tensor.Tensor(owner.node)
        for step in chain:
            v = apply_step(v, step)
    return v.node


def contiguous(t):
    """``t`` if its elements lie in row-major order in its storage (PyTorch: no copy), else a clone."""
    _windows.rehome(t)
    base = t._base
    if base is None:
        return t
    stack = ViewStack.contiguous(base.shape)
    for step in t._chain:
        stack = edit_stack(stack, step)
    top = stack.top
    if len(stack.views) == 1 and top.mask is None and top.strides == contiguous_strides(top.shape):
        return t
    return F.clone(t)


def set_data(t, value) -> None:
    """``t.data = value``: ``t`` shares ``value``'s storage from now on (no version bump), as PyTorch.

    The shape may change; a tensor that requires grad keeps a float dtype. A leaf becomes a view
    of ``value``'s storage outside autograd (writes through either reach the other; ``t`` keeps
    its own autograd identity). A tensor computed by a recorded op takes a copy of ``value``'s
    current value instead (a view could not carry its history), as does ``t.data = t[...]``.
    """
    if not isinstance(value, _tensor.Tensor):
        raise TypeError(f"data: expected a vkml.Tensor, got {type(value).__name__}")
    if t._requires_grad and not value.dtype.is_float:
        raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
    node = value.node
    owner, chain = (value, ()) if value._base is None else (value._base, value._chain)
    if t._ctx is not None or owner is t:
        t._base = None
        t._node = node
        return
    t._node = node
    t._base, t._chain, t._seen = owner, chain, owner._vcount
    t._gradview, t._dataview = False, False


def assign_node(t, node) -> None:
    """``t.node = node`` (optimizers, ``load_state_dict``): a write of the whole tensor, outside autograd."""
    if t._base is None:
        t._node = node
        t._vcount += 1
        return
    if node.shape != t.shape or node.dtype is not t.dtype:
        raise ShapeError(f"cannot assign a {node.dtype.name} value of shape {node.shape} to a view of shape {t.shape}")
    with autograd.no_grad():
        write(t, _tensor.Tensor(node))


# ---------------------------------------------------------------------- writing


def check_writable(t) -> None:
    """PyTorch's refusals of an in-place op on ``t``, raised before anything changes."""
    autograd.check_inference_write(t)
    _windows.rehome(t)
    base = t._base
    if autograd.is_grad_enabled():
        custom_view = getattr(t, "_custom_view", None)
        if custom_view is not None and t._requires_grad:
            raise RuntimeError(
                f"Output {custom_view[0]} of {custom_view[1]} is a view and is being modified inplace. This view was "
                "created inside a custom Function (or because an input was returned as-is) and the autograd logic to "
                "handle view+inplace would override the custom backward associated with the custom Function, leading "
                "to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the "
                "custom Function."
            )
        if base is None:
            if t._requires_grad and t._ctx is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        elif t._gradview and base._requires_grad and base._ctx is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        elif t._requires_grad and t._ctx is None:  # a leaf whose storage was replaced by ``.data = ...``
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        elif _views_a_grad_leaf(t):  # detach() views too: a Parameter over a view, detach().requires_grad_()
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        elif base is not None and not t._gradview and t._ctx is not None and detached_root(t) is None:
            # a computed tensor whose storage nn.Parameter(t) took: its write could not be recorded
            raise NotImplementedError(
                "an in-place operation with autograd on a computed tensor that an nn.Parameter was made from is "
                "not supported: write under no_grad(), or make the Parameter from a clone()"
            )
    if base is not None and base._base is not None:
        raise RuntimeError(
            "this view was taken before its base's storage was replaced by `.data = ...`; writing through it is "
            "not supported: take the view again"
        )
    if base is not None:
        # an expanded view refuses a write only where the written view itself repeats an element: a
        # select of one element of it writes that element, as in PyTorch (t.expand(5, 5)[2, 2] = 0)
        grown = any(_broadcasts(step) for step in t._chain)
        if (grown or any(step[0] in ("window", "strided") for step in t._chain)) and _overlaps(base, t._chain):
            raise RuntimeError(_OVERLAP)


def _broadcasts(step: tuple) -> bool:
    """Whether a view step repeats elements (an expand that grows)."""
    return step[0] == "expand" and math.prod(step[1]) > math.prod(step[2])


def _views_a_grad_leaf(t) -> bool:
    """Whether view ``t`` was taken (through recorded view ops) from a leaf that requires grad which is
    itself a view of a storage owner that does not (``arange(6).reshape(2, 3).requires_grad_()``): the
    owner test of ``check_writable`` cannot see that leaf. Walks back at most one context per view step."""
    ctx = t._ctx
    for _ in t._chain:
        if ctx is None or ctx.parents is None or len(ctx.parents) != 1 or ctx.parents[0] is None:
            return False
        parent, ctx = ctx.parents[0], ctx.parent_ctxs[0]
        if ctx is None:
            return parent._requires_grad
    return False


def _overlaps(base, chain: tuple) -> bool:
    """Whether two elements of the view ``chain`` of ``base`` are one storage element (windows that
    overlap, an as_strided view with such strides). PyTorch writes through those element by element
    in memory order (its result depends on that order); vkml refuses, with its overlap error."""
    stack = ViewStack.contiguous(base.shape)
    for step in chain:
        stack = edit_stack(stack, step)
    top = stack.top
    if len(stack.views) > 1:
        return True
    reach = 0  # sufficient test: with dims sorted by stride, each stride passes the reach of the smaller ones
    for stride, size in sorted((abs(st), n) for st, n in zip(top.strides, top.shape) if n > 1):
        if stride <= reach or stride == 0:
            return True
        reach += stride * (size - 1)
    return False


def _alias(t):
    """A new handle on ``t``'s current value and autograd history, with a version counter of its own.

    In-place ops compute from it: the op's saved operand then belongs to a storage no one
    writes, and gradients reach ``t``'s history through the context it carries (autograd
    follows contexts, not handles).
    """
    node = t.node  # first: a view rebuilds its context with its node
    a = _tensor.Tensor(node)
    a._ctx, a._requires_grad = t._ctx, t._requires_grad
    hooks = getattr(t, "_grad_hooks", None)
    if hooks:
        # hooks registered before the write fire with the old value's gradient, as PyTorch's do: the
        # alias carries that value's context into the graph (each hook fires for its own context alone)
        a._grad_hooks = hooks
    return a


def can_cast(src: T.DType, dst: T.DType) -> bool:
    """PyTorch's ``can_cast``: an in-place result may not go down from float to int, or to bool."""

    def kind(d):
        # bool < integers < floats < complex: a cast may go up this order, never down
        return 3 if d.is_complex else 2 if d.is_float else (0 if d is T.bool_ else 1)

    return kind(src) <= kind(dst)


def torch_name(dtype: T.DType) -> str:
    return _TORCH_NAMES.get(dtype.name, dtype.name)


def inplace(t, op: str, fn, *args):
    """``t.op(*args)``: ``fn(t, *args)`` computed, checked against ``t``'s shape and dtype, written; returns ``t``."""
    check_writable(t)
    refuse_operand_overlap(t, args, same_ok=op not in NO_OPERAND_OVERLAP)
    # x.add_(1j) of a real tensor (a fill's value is converted instead: masked_fill_, setitem, ...)
    if not t.dtype.is_complex and "fill" not in op and op != "__setitem__" and any(type(a) is complex for a in args):
        result = {"float64": "ComplexDouble", "float16": "ComplexHalf"}.get(t.dtype.name, "ComplexFloat")
        raise RuntimeError(f"result type {result} can't be cast to the desired output type {torch_name(t.dtype)}")
    old = _alias(t)
    new = fn(old, *args)
    if new.shape != t.shape:
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape {list(new.shape)}")
    if not can_cast(new.dtype, t.dtype):
        raise RuntimeError(
            f"result type {torch_name(new.dtype)} can't be cast to the desired output type {torch_name(t.dtype)}"
        )
    new = F.cast(new, t.dtype)
    if new._ctx is None and autograd.is_grad_enabled():
        # a comparison written into a float tensor (x.eq_(y)): PyTorch's backward gives every operand that
        # requires grad a zero gradient, x's history and other included; a select that never takes it links it so
        for a in (old, *args):
            if isinstance(a, _tensor.Tensor) and a.requires_grad and a.dtype.is_float:
                never = F._wrap(lazy.const_node(False, T.bool_, t.shape, t.device))
                new = F.where(never, F.cast(a, t.dtype), new)
    _commit(t, old, new)
    return t


def zero_gradient_link(out, *ignored):
    """``out``, its values unchanged, linked to each tensor of ``ignored`` that requires grad with a zero
    gradient: PyTorch's gradient for an input an op reads none of (an empty selection's values, the
    input of ``torch.fill``) is a tensor of zeros, not None."""
    if not autograd.is_grad_enabled() or not out.dtype.is_float:
        return out
    for a in ignored:
        if isinstance(a, _tensor.Tensor) and a.requires_grad and a.dtype.is_float:
            never = F._wrap(lazy.const_node(False, T.bool_, out.shape, out.device))
            part = a if a.shape == out.shape else F.sum(a)  # the sum: any shape reaches out's
            out = F.where(never, F.cast(part, out.dtype), out)
    return out


def _commit(t, old, new, replaces: bool = False) -> None:
    """Write ``new`` (``t``'s shape and dtype) into ``t``; ``old`` is ``_alias(t)``; ``replaces``: ``new``
    never depends on ``old`` (copy_), whether or not it has a history of its own."""
    if t._base is None and (replaces or new._ctx is None) and old._ctx is not None and autograd.is_grad_enabled():
        # A value that does not depend on t (fill_, copy_) replaces a non-leaf: PyTorch's gradient
        # to t's history is zero (a tensor, not None), not the gradient t had before.
        keep = F._wrap(lazy.const_node(False, T.bool_, t.shape, t.device))
        new = F.where(keep, old, new)
    write(t, new)


def write(t, value) -> None:
    """Make ``value`` (``t``'s shape and dtype, on its device) ``t``'s value; a view writes its base."""
    base = t._base
    if base is None:
        _set_owner(t, value)
        return
    # A write through detach() or .data is invisible to autograd, as in PyTorch: the base keeps
    # its history (a parameter stays a leaf).
    with autograd.set_grad_enabled(autograd.is_grad_enabled() and t._gradview):
        if any(step[0] in ("window", "strided") or _broadcasts(step) for step in t._chain):
            # Windows, as_strided views and views of a broadcast: the positions of the storage they
            # show (none twice, check_writable) written from the flat value, whatever the steps between.
            old = _alias(base)
            positions = _windows.storage_positions(t)
            flat = _indexing.write_positions(F.reshape(old, old.numel()), F.reshape(value, value.numel()), positions)
            new = F.reshape(flat, *base.shape)
            _set_owner(base, new if t._gradview else _tensor.Tensor(new.node), not t._gradview)
            if t._dataview:
                base._vhidden += 1
            return
        below = [_alias(base)]
        for step in t._chain[:-1]:
            below.append(apply_step(below[-1], step))
        v, whole = value, True
        for step, under in zip(reversed(t._chain), reversed(below)):
            whole = whole and (step[0] in ("reshape", "expand", "permute", "dtype") or v.shape == under.shape)
            v = _unapply(step, under, v)
        if t._gradview and whole and below[0]._ctx is not None and autograd.is_grad_enabled():
            # the view covers all of the base (x[:] = 2.0, a 0-dim x[()] = 2.0, x[:] = y): as _commit, the
            # base's history gets a zero gradient, not the one it had (nor None where the value has one)
            keep = F._wrap(lazy.const_node(False, T.bool_, base.shape, base.device))
            v = F.where(keep, below[0], v)
        if t._gradview and v._ctx is not None and autograd.is_grad_enabled():
            _show_copy_slices(v, below[0], t, value)
    _set_owner(base, v if t._gradview else _tensor.Tensor(v.node), not t._gradview)
    if t._dataview:
        base._vhidden += 1
    if not t._gradview and value._ctx is not None and autograd.is_grad_enabled():
        _root_takes_history(t, value)


def _show_copy_slices(v, old_base, view, value) -> None:
    """Show ``v``, the base's new value after a write through ``view``, as PyTorch's ``CopySlices`` node: an
    edge to the base's previous node, then the in-place op's edges other than to the view (``y[1:].mul_(w)``:
    ``w``'s), or the written value's own (``y[1:] = src``), or none (``y[0] = 3``)."""
    made = value._ctx
    if made is None:
        rest = ((None, 0),)
    elif made.parent_ctxs and made.parent_ctxs[0] is view._ctx and made.parents and made.parents[0] is not None:
        rest = tuple(made.next_functions[1:]) or ((None, 0),)  # the op computed from the view's old value
    else:
        rest = (autograd.edge(value),)
    autograd.show(v, "torch::autograd::CopySlices", (autograd.edge(old_base), *rest))


def _root_takes_history(t, value) -> None:
    """A value with a history written through detached view ``t`` (``buf = Variable(torch.zeros(n, h))`` then
    ``buf[i] = rnn_output``, the 2017 seq2seq tutorial): as in PyTorch, the detached tensor ``t`` is or views
    now requires grad and its gradient reaches the value, while the storage's owner stays outside autograd;
    both still share the storage."""
    root = detached_root(t)
    if root is None:
        return
    extra = t._chain[len(root._chain) :]
    v = value
    if extra:
        below = [_alias(root)]  # the values just written, with the history of root's earlier such writes
        for step in extra[:-1]:
            below.append(apply_step(below[-1], step))
        for step, under in zip(reversed(extra), reversed(below), strict=True):
            v = _unapply(step, under, v)
    root._ctx, root._requires_grad = v._ctx, True  # its node follows the storage (refresh keeps the history)


def _set_owner(owner, new, quiet: bool = False) -> None:
    """``owner`` (a storage's owner) takes ``new``'s node, and its history where grad mode records one;
    ``quiet``: a write outside autograd (``.data``, ``detach()``), which keeps a state node too (``note_write``)."""
    lazy_node.note_write(owner._node, new.node, quiet or not autograd.is_grad_enabled())
    owner._node = new.node
    # Under no_grad a write keeps the owner's standing in autograd whatever the value's history (``p[:] -=
    # lr * v`` of a from-scratch optimizer: the value is ``p[:]`` re-read with history, the parameter stays a leaf)
    if new._ctx is not None and autograd.is_grad_enabled():
        if owner._ctx is not None and getattr(owner, "_retained_ctx", None) is owner._ctx:
            owner._retained_ctx = new._ctx  # retain_grad() follows the tensor through in-place ops, as PyTorch's
        owner._ctx, owner._requires_grad = new._ctx, True
    owner._vcount += 1


def _unapply(step: tuple, under, v):
    """``under`` (a tensor) with the region that view ``step`` of it shows replaced by ``v``."""
    kind = step[0]
    if kind == "reshape" or kind == "expand":  # expand: one that broadcasts is written by positions (write)
        return F.reshape(v, *under.shape)
    if kind == "permute":
        order = step[1]
        return F.permute(v, *(order.index(d) for d in range(len(order))))
    if kind == "dtype":
        return v.view(under.dtype)
    if v.shape == under.shape:  # a slice of every element
        return v
    if v.numel() == 0:
        return under
    _, starts, _, steps = step
    placed = _place(v, starts, steps, under.shape)
    inside = _place(F._wrap(lazy.const_node(True, T.bool_, v.shape, v.device)), starts, steps, under.shape)
    return F.where(inside, placed, under)


def _pads_for(ndim: int, dim: int, before: int, after: int) -> list[int]:
    pads = [0] * (2 * ndim)
    back = ndim - 1 - dim
    pads[2 * back], pads[2 * back + 1] = before, after
    return pads


def _place(g, starts, steps, shape):
    """``g`` at positions start, start + step, ... of each dim of ``shape``, zero (False) elsewhere: all views."""
    for d, (start, step) in enumerate(zip(starts, steps)):
        kept = g.shape[d]
        if step > 1 and kept > 1:  # step - 1 zeros after each element, the trailing ones dropped
            g = F.constant_pad_nd(F.unsqueeze(g, d + 1), _pads_for(g.ndim + 1, d + 1, 0, step - 1))
            g = F.reshape(g, *g.shape[:d], kept * step, *g.shape[d + 2 :])
            g = F.constant_pad_nd(g, _pads_for(g.ndim, d, 0, 1 - step))
        span = g.shape[d]
        if start or shape[d] - start - span:
            g = F.constant_pad_nd(g, _pads_for(g.ndim, d, start, shape[d] - start - span))
    return g


def _fit_value(value, shape: tuple[int, ...], op: str):
    """A tensor ``value`` broadcast to ``shape`` (leading size-1 dims beyond it dropped, as PyTorch)."""
    if value.shape == shape:
        return value
    extra = value.ndim - len(shape)
    if extra > 0:
        if any(s != 1 for s in value.shape[:extra]):
            raise _fit_error(op, tuple(value.shape), shape)
        value = F.reshape(value, *value.shape[extra:])
    lead = len(shape) - value.ndim
    if lead < 0 or any(v not in (1, s) for v, s in zip(value.shape, shape[lead:])):
        raise _fit_error(op, tuple(value.shape), shape)
    return F.expand(value, *shape)


def _fit_error(op: str, value_shape: tuple[int, ...], shape: tuple[int, ...]) -> ShapeError:
    words = f"a value of shape {value_shape} cannot be written to a region of shape {shape}"
    if op == "copy_":  # PyTorch's words first: the shapes' broadcast fails, or it is not the destination's
        try:
            broadcast = lazy.broadcast_shapes(op, shape, value_shape)
            words = f"output with shape {list(shape)} doesn't match the broadcast shape {list(broadcast)} ({words})"
        except ShapeError as error:
            words = f"{str(error).removeprefix(repr(op) + ': ')}; {words}"
    return ShapeError(f"'{op}': {words}")


def copy_(t, src):
    """``t.copy_(src)``: ``src`` broadcast to ``t``'s shape, converted to its dtype (any conversion) and device."""
    if not isinstance(src, _tensor.Tensor):
        raise TypeError(f"copy_(): argument 'src' must be a vkml.Tensor, not {type(src).__name__}")
    check_writable(t)
    refuse_operand_overlap(t, (src,), same_ok=True)
    old = _alias(t)
    value = src if src.device is t.device else F.to_device(src, t.device)
    value = _fit_value(F.cast(value, t.dtype), t.shape, "copy_")
    if value._ctx is None and value._requires_grad and autograd.is_grad_enabled():
        value = F.clone(value)  # a leaf src: the write's history must lead to it
    _commit(t, old, value, replaces=True)
    return t


def expanded_base(t):
    """The tensor ``t`` expands (``base.expand(...)``, one step that repeats elements), else None."""
    chain = t._chain if t._base is not None else ()
    if len(chain) == 1 and _broadcasts(chain[0]) and t._base._base is None:
        return t._base
    return None


_EXPANDED_FILL = (
    "Use of {op} on expanded tensors is deprecated. Please clone() the tensor before performing this operation. "
    "This also applies to advanced indexing e.g. tensor[mask] = scalar"
)


def masked_fill_expanded(t, base, op: str, mask, value):
    """``op`` (``masked_fill_``, ``index_fill_``) of expanded ``t`` with the positions ``mask`` names, as PyTorch
    does it (with its deprecation warning): each element of ``base`` is written where any of its positions in
    ``t`` is; returns ``t``."""
    warnings.warn(_EXPANDED_FILL.format(op=op), UserWarning, stacklevel=user_stacklevel())
    mask = F.expand(mask, *t.shape) if tuple(mask.shape) != tuple(t.shape) else mask
    lead = t.ndim - base.ndim
    grown = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(base.shape) if s == 1 and t.shape[lead + d] != 1)
    hit = F.reshape(F.cast(F.sum(F.cast(mask, T.int32), grown), T.bool_), *base.shape) if grown else mask
    base.masked_fill_(hit, value)
    return t


def fill_(t, value):
    """``t.fill_(value)``: a Python number (converted as PyTorch: 1.5 fills an int tensor with 1) or a 0-dim tensor."""
    base = expanded_base(t)
    if base is not None:  # every element of the base is shown: PyTorch fills it (no warning for fill_, zero_)
        fill_(base, value)
        return t
    if isinstance(value, _tensor.Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
            )
        return copy_(t, value)
    value = lazy.fill_value("fill_", value, t.dtype)  # before the type check: a complex value is its RuntimeError
    if type(value) not in lazy.SCALAR_TYPES:
        F._node(value)  # raises the error naming an unsupported value
    if t.dtype.is_float and type(value) is not complex:
        # a constant holds its dtype's value (as full's): a consumer computing in float32 must not see 2049
        # where a float16 tensor holds 2048
        value = host_round(float(value), t.dtype)
    check_writable(t)
    old = _alias(t)
    _commit(t, old, F._wrap(lazy.const_node(F._node(value), t.dtype, t.shape, t.device)))
    return t


def fill_with(t, op: str, make, floats_only: bool = True):
    """Write ``make()`` (built without recording, converted to ``t``'s dtype) into ``t``; returns ``t``.

    For the random fills: their values depend on no tensor, so autograd sees a constant.
    """
    if floats_only and not t.dtype.is_float:
        raise DTypeError(f"'{op}' fills floating point tensors only, this one is {t.dtype.name}")
    check_writable(t)
    old = _alias(t)
    with autograd.no_grad():
        new = F.cast(make(), t.dtype)
    _commit(t, old, new)
    return t


def uniform_(t, a: float, b: float, generator):
    """Uniform values in [a, b): PyTorch's CPU draw for ``t``'s dtype (vkml/frontend/mt19937.py)."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    dtype = t.dtype if t.dtype.is_float else None  # fill_with refuses the others
    return fill_with(
        t, "uniform_", lambda: _random.uniform_values("uniform_", t.shape, a, b, dtype, t.device, generator), True
    )


def normal_(t, mean: float, std: float, generator):
    """Normal values with ``mean`` and ``std``: PyTorch's CPU draw for ``t``'s size (vkml/frontend/mt19937.py)."""
    dtype = t.dtype if t.dtype.is_float else None  # fill_with refuses the others
    return fill_with(
        t, "normal_", lambda: _random.normal_values("normal_", t.shape, mean, std, dtype, t.device, generator), True
    )


def detach_(t):
    if t._base is not None and t._gradview:
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    t._ctx, t._requires_grad = None, False
    return t


def _is_region_of(value, view) -> bool:
    """Whether ``value`` is a view of the very elements ``view`` shows, through the same autograd standing:
    writing it into ``view`` changes nothing (a view reads its storage as it is now, ``refresh``)."""
    base = view._base
    return (
        base is not None
        and value._base is base
        and value._chain == view._chain
        and (value._gradview, value._dataview) == (view._gradview, view._dataview)
        and value.dtype is view.dtype
        and getattr(value, "_custom_view", None) is None
    )


def _count_self_copy(view) -> None:
    """A copy of a region onto itself: nothing changes but the storage's version, which PyTorch's copy_ bumps."""
    check_writable(view)
    base = view._base
    base._vcount += 1
    if view._dataview:
        base._vhidden += 1


def setitem(t, index, value) -> None:
    """``t[index] = value``: a write through the view ``t[index]``, or an advanced index's write (vkml/frontend/indexing.py).

    A bool mask of ``t``'s shape with a number or a one-element value is ``masked_fill_``,
    which needs no read-back of the mask.
    """
    if t.dtype.is_float and type(value) in (int, float) and -(1 << 63) <= value < 1 << 64:
        # PyTorch writes a number into a float tensor rounded, unchecked (fill_ checks: 1e10 into float16 is inf here)
        value = host_round(float(value), t.dtype)
    if isinstance(index, _tensor.Tensor) and index.dtype is T.bool_ and index.shape == t.shape:
        if not isinstance(value, _tensor.Tensor):
            inplace(t, "__setitem__", F.masked_fill, index, value)
            return
        if value.numel() == 1:
            inplace(t, "__setitem__", F.masked_fill, index, F.reshape(value, *()))
            return
    index = _indexing.scalar_tensors_as_ints(_indexing.sequence_as_tuple(index))
    if _indexing.is_advanced(index):
        _indexing.setitem(t, index, value)
        return
    view = F.getitem(t, index)
    if isinstance(value, _tensor.Tensor):
        if _is_region_of(value, view) and not (autograd.is_grad_enabled() and t.requires_grad):
            # t[i] += v: Python stores the view just written in place back into it, a copy onto itself
            _count_self_copy(view)
            return
        if value.ndim == 0:  # PyTorch fills with a 0-d value, read first: it may alias the view (t[1] = t[1][0])
            value = F.clone(value)
        copy_(view, value)
    else:
        fill_(view, value)


# Last: loaded once this module's names exist (docs/architecture.md, "Imports and the load order").
from . import indexing as _indexing  # noqa: E402
from . import random as _random  # noqa: E402
from . import windows as _windows  # noqa: E402
