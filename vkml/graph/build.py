"""Building graph nodes for ops, with every check done eagerly at the op.

The public functions (``vkml.add``, ``Tensor.sum``, ...) live in ``vkml/frontend/`` and call
these builders; this module knows broadcasting, promotion, devices and the registry.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
from dataclasses import replace

import numpy as np

from .. import config
from ..errors import DeviceError, DTypeError, DTypeNotImplementedError, ShapeError
from ..ir import types as T
from ..ops.cast import host_round
from ..ops.promotion import default_float, result_type, scalar_dtype, scalar_type_name
from ..ops.reduce import reduce_dtypes
from ..ops.registry import REGISTRY
from .node import BITS_CAST, VALUE_CAST, Const, Elementwise, Node, Op, Reduce, Stepping
from .view import View, ViewStack

# The node kinds, as globals: every op a user writes builds two or three nodes here, and reading a
# class attribute (Op.VIEW) costs about 30 ns more than a global.
_BUFFER, _CAST, _CONST, _ELEMENTWISE, _REDUCE, _VIEW = Op.BUFFER, Op.CAST, Op.CONST, Op.ELEMENTWISE, Op.REDUCE, Op.VIEW

_eager_override: bool | None = None  # set_eager's choice; None: VKML_EAGER's, read at import
_eager_from_env = config.eager()  # every op asks: reading the environment costs about 1 µs


def is_eager() -> bool:
    return _eager_from_env if _eager_override is None else _eager_override


def check_devices(op: str, nodes: list[Node]):
    devices = []
    for n in nodes:
        if n.device not in devices:
            devices.append(n.device)
    if len(devices) > 1:
        raise DeviceError(f"'{op}' operands are on different devices: {devices[0].name} and {devices[1].name}")
    return devices[0] if devices else None


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    if shapes and all(s == shapes[0] for s in shapes):
        return tuple(shapes[0])  # the common case of an op over same-shape tensors: nothing to check
    try:
        found = _broadcast_shape(shapes)  # shapes that broadcast: their result, once per combination
    except TypeError:  # a shape given as a list
        found = None
    if found is not None:
        return found
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        sizes = {s[len(s) - ndim + d] for s in shapes if len(s) - ndim + d >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            shown = " and ".join(str(tuple(s)) for s in shapes)
            raise ShapeError(f"'{op}': {_mismatch_words(shapes)} (shapes {shown} cannot be broadcast)")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _mismatch_words(shapes) -> str:
    """PyTorch's words for the first pair that does not broadcast, folding the shapes left to right as its
    TensorIterator does: tensor a is the broadcast so far, b the next operand, the dimension the result's."""
    so_far: tuple[int, ...] = ()
    for shape in shapes:
        ndim = max(len(so_far), len(shape))
        a = (1,) * (ndim - len(so_far)) + tuple(so_far)
        b = (1,) * (ndim - len(shape)) + tuple(shape)
        for i in reversed(range(ndim)):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                return f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at non-singleton dimension {i}"
        so_far = tuple(x if x != 1 else y for x, y in zip(a, b))
    return "shapes cannot be broadcast"


@functools.lru_cache(maxsize=1024)
def _broadcast_shape(shapes: tuple) -> tuple[int, ...] | None:
    """The broadcast of ``shapes``, or None where they do not broadcast (``broadcast_shapes`` raises)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        sizes = {s[len(s) - ndim + d] for s in shapes if len(s) - ndim + d >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def view_node(node: Node, edit) -> Node:
    """A view node over ``node``'s storage, with ``edit`` applied to its ViewStack."""
    base, stack = view_base(node)
    return view_of(base, edit(stack))


def view_base(node: Node) -> tuple[Node, ViewStack]:
    """The node whose storage ``node`` views, and the ViewStack that views it (``view_node``'s start)."""
    srcs, arg = node.srcs, node.arg  # before op: another thread may be realizing node (Node.become_buffer)
    if node.op == _VIEW:
        return srcs[0], arg
    return node, ViewStack.contiguous(node.shape)


def view_of(base: Node, stack: ViewStack) -> Node:
    """The node of ``stack`` over ``base`` (from ``view_base``): ``base`` itself where the stack is
    its row-major whole, a window of a realized buffer where it is one, else a view node."""
    if stack.is_contiguous and stack.shape == base.shape:
        return base
    if base.op == _BUFFER:  # read after srcs and arg: base.buffer is set before op turns "buffer"
        window = _window_of_buffer(base, stack)
        if window is not None:
            return window
    return Node(_VIEW, (base,), stack, stack.shape, base.dtype, base.device)


def reshape_node(node: Node, shape: tuple[int, ...]) -> Node:
    """``view_node(node, lambda st: st.reshape(shape))`` for a checked ``shape`` of ``node``'s numel.

    A node that is no view (a buffer, an op's result) gets the row-major stack of ``shape`` from
    ``_reshape_stack``'s cache: a row-major view of a whole buffer is never a window of it
    (``_window_of_buffer`` gives None where the alias would span the buffer), so the result is
    ``view_node``'s, without its edits and its extent walk. A layer's reshapes of its operands
    and of their statistics are mostly of this kind.
    """
    if node.op == _VIEW:
        return view_node(node, lambda st: st.reshape(shape))
    if shape == node.shape:
        return node
    stack = _reshape_stack(node.shape, shape)
    return Node(_VIEW, (node,), stack, shape, node.dtype, node.device)


def permute_node(node: Node, order: tuple[int, ...]) -> Node:
    """``view_node(node, lambda st: st.permute(order))`` for a checked ``order`` of ``node``'s dims.

    A node that is no view (a weight's buffer, an op's result: what ``linear`` and the matmul
    gradients transpose) gets the permuted row-major stack of its shape from ``_permute_stack``'s cache.
    """
    if node.op == _VIEW:
        return view_node(node, lambda st: st.permute(order))
    return view_of(node, _permute_stack(node.shape, order))


def _window_of_buffer(base: Node, stack: ViewStack) -> Node | None:
    """The view over a realized buffer, rebased on an alias of the part of the buffer it reads.

    An alias keeps a window's kernels independent of the buffer it is cut from (its size, its
    int64 reach): it begins at a multiple of the device's binding alignment ``a``, just below the
    window's first element, and its length depends only on the span the window reads and the
    buffer's length modulo ``a``. So its kernels see one leaf size and an offset in the alias —
    a kernel parameter, zero included (``View.shifts``: the alias is longer than the window) —
    and a window of one shape has one structure at every offset; where the offset is a multiple
    of the vector width the kernel still loads vectors (a run-time branch, lowering.py
    ``group_plan``). Realized buffers never change (writes make new nodes, docs/mutation.md), so
    an alias of one stays valid as long as it lives, and it keeps its parent alive.
    """
    bottom = stack.views[0]
    device = base.device
    key = (bottom, base.shape, base.dtype, device)
    window = _WINDOWS.get(key, _UNDECIDED)
    if window is _UNDECIDED:
        window = _window_range(bottom, math.prod(base.shape), device.alias_alignment(base.dtype))
        if window is not None:  # the bottom view rebased on the alias is kept with its range
            window = (*window, replace(bottom, offset=bottom.offset - window[0]))
        if len(_WINDOWS) >= _WINDOWS_KEPT:  # a loop whose views change every step
            _WINDOWS.clear()
        _WINDOWS[key] = window
    if window is None:
        return None  # a window most of the buffer: the view of the buffer
    start, span, rebased_bottom = window
    buffer = device.alias(base.buffer, start, span)
    if buffer is None:
        return None
    rebased = ViewStack((rebased_bottom, *stack.views[1:]) if len(stack.views) > 1 else (rebased_bottom,))
    window = Node(_BUFFER, (), None, (span,), base.dtype, device)
    window.buffer = buffer
    return Node(_VIEW, (window,), rebased, rebased.shape, base.dtype, device)


# ``_window_range`` by (bottom view, buffer shape, dtype, device), with the bottom view rebased on that
# range: a loop views the same buffers the same way at every step (a weight's transpose, a batch's
# slice), and the range depends on nothing else.
_WINDOWS: dict = {}
_WINDOWS_KEPT = 4096
_UNDECIDED = object()


def _window_range(bottom: View, numel: int, align: int) -> tuple[int, int] | None:
    """(start, length) of the alias of a buffer of ``numel`` elements that ``_window_of_buffer`` cuts
    for view ``bottom``, or None where the view reads nothing or most of the buffer."""
    extent = bottom.extent()
    if extent is None:
        return None
    lo, hi = extent
    ext = hi + 1 - lo
    # As long as the span rounded up plus the alignment, and congruent to the buffer's length: the
    # highest aligned start at or below lo whose alias fits the buffer covers [lo, hi], also
    # where the alias has to end at the buffer's end.
    span = -(-ext // align) * align + align + numel % align
    start = (min(lo, numel - span) // align) * align
    if start < 0 or start + span <= hi or span >= numel:
        return None
    return start, span


def realize_as_alias(node: Node) -> bool:
    """Make view ``node`` the alias of its realized source's memory that it is, if it is one: one
    contiguous view at a start aligned to the binding alignment (``x[i:i + n]`` at such an ``i``, a
    block of whole rows). Then realizing it copies nothing, as PyTorch's slices share storage;
    ``_window_of_buffer`` keeps it a view until then, so that its kernels serve every offset.
    """
    srcs, stack = node.srcs, node.arg  # before op, as view_node reads them
    if node.op != _VIEW or srcs[0].op != _BUFFER or len(stack.views) != 1:
        return False
    base, view = srcs[0], stack.views[0]
    if view.mask is not None or View.contiguous(view.shape).strides != view.strides or node.numel == 0:
        return False
    if view.offset % node.device.alias_alignment(node.dtype):
        return False
    buffer = node.device.alias(base.buffer, view.offset, node.numel)
    if buffer is None:
        return False
    node.become_buffer(buffer)
    return True


@functools.lru_cache(maxsize=256)
def _broadcast_stack(from_shape: tuple[int, ...], to_shape: tuple[int, ...]) -> ViewStack:
    """The views that broadcast a contiguous ``from_shape`` to ``to_shape`` (ViewStacks are immutable).

    Every op with a Python scalar broadcasts a 0-dim constant this way: building the stack once
    per pair of shapes keeps that off the per-op cost.
    """
    stack = ViewStack.contiguous(from_shape)
    lead = len(to_shape) - len(from_shape)
    if lead:
        stack = stack.reshape((1,) * lead + from_shape)
    return stack.expand(to_shape)


def expand_to(node: Node, shape: tuple[int, ...]) -> Node:
    if node.shape == shape:
        return node
    if node.op != _VIEW:  # the same stack view_node would build below, from a cache
        stack = _broadcast_stack(node.shape, tuple(shape))
        return Node(_VIEW, (node,), stack, stack.shape, node.dtype, node.device)
    lead = len(shape) - len(node.shape)
    if lead:
        node = view_node(node, lambda st: st.reshape((1,) * lead + node.shape))
    return view_node(node, lambda st: st.expand(shape))


def const_node(value, dtype: T.DType, shape: tuple[int, ...], device, op: str = "") -> Node:
    # Every scalar operand of every op passes here: _scalar_value's usual case inline, the Const made by
    # tuple.__new__ (NamedTuple's own __new__ is a Python function)
    if dtype is T.float32 and type(value) is float and -_F32_OVERFLOW < value < _F32_OVERFLOW:
        arg = _new_tuple(Const, (value,))
    else:
        arg = _new_tuple(Const, (_scalar_value(value, dtype, op),))
    scalar = Node(_CONST, (), arg, (), dtype, device)
    if not shape:
        return scalar
    shape = tuple(shape)
    stack = _broadcast_stack((), shape)  # what expand_to builds for a 0-dim node, without its checks
    return Node(_VIEW, (scalar,), stack, shape, dtype, device)


_new_tuple = tuple.__new__


def stepping_const_node(value, dtype: T.DType, device) -> Node:
    """A 0-dim constant node as ``const_node``'s, whose value changes on every step of a program (a random
    key's words, an optimizer's step scalars): its ``arg`` is a ``Stepping``, which eager replays read from
    a ring buffer at once (vkml/schedule/eager_scalars.py). The same graph structure, kernel and bits."""
    return Node(_CONST, (), _new_tuple(Stepping, (_scalar_value(value, dtype, ""),)), (), dtype, device)


# Floats at or beyond this magnitude round to ±inf in float32 (2^128 - 2^103: half an ulp past the
# largest float, a tie that rounds to the even neighbour, inf); below it they round to a finite float.
_F32_OVERFLOW = 2.0**128 - 2.0**103
_INT_OPERAND_RANGE = (-(1 << 63), 1 << 64)  # the Python ints PyTorch takes as operands (int64 or uint64)


# The largest finite value of each float dtype (float32's is the default).
_F32_MAX = 3.4028234663852886e38
_FLOAT_LIMITS = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float64": sys.float_info.max}


def check_scalar_fits(op: str, value, dtype: T.DType, strict_unsigned: bool = False) -> None:
    """PyTorch's check of a Python scalar that an op converts to its dtype exactly (clamp's bounds,
    where's values, pow's exponent, full's and fill_'s value): a finite value beyond the dtype's
    range, or a non-finite one for an integer dtype, is its RuntimeError; an int past 64 bits its
    OverflowError. As c10's ``overflows``, a negative int down to -max fits an unsigned dtype (it
    wraps: ``uint8`` takes -1 as 255) unless ``strict_unsigned`` (randint's bounds).
    """
    if dtype is T.float32 and type(value) is float and -_F32_MAX <= value <= _F32_MAX:
        return  # the usual case (a gradient rule's 0.0, a clamp bound): a finite float32 value
    if dtype is T.bool_:
        return
    if type(value) is complex and not dtype.is_complex:
        if value.imag:  # c10 checks the imaginary part first
            raise RuntimeError(f"'{op}': value {value!r} cannot be converted to type {dtype.name} without overflow")
        value = value.real
    if isinstance(value, (bool, np.bool_, complex)) or dtype is T.bool_ or dtype.is_complex:
        return
    if type(value) is int:
        _scalar_value_checked(value, T.int64, op)  # raises for an int PyTorch cannot take at all
    if dtype.is_float:
        limit = _FLOAT_LIMITS.get(dtype.name, _F32_MAX)
        fits = not math.isfinite(value) or -limit <= value <= limit
    elif not dtype.is_signed:
        high = (1 << dtype.bits) - 1
        low = -high if type(value) is int and not strict_unsigned else 0
        fits = (type(value) is int or math.isfinite(value)) and low <= value <= high
    else:
        low, high = -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
        fits = (type(value) is int or math.isfinite(value)) and low <= value <= high
    if not fits:
        raise RuntimeError(f"'{op}': value {value!r} cannot be converted to type {dtype.name} without overflow")


def fill_value(op: str, value, dtype: T.DType):
    """A Python number an op writes into a ``dtype`` tensor (fill_, masked_fill, setitem, scatter's
    value), checked as PyTorch checks it (``check_scalar_fits``); a complex number fills a bool
    tensor with its truth."""
    check_scalar_fits(op, value, dtype)
    return bool(value) if type(value) is complex and dtype is T.bool_ else value


def _scalar_value(value, dtype: T.DType, op: str = ""):
    if dtype is T.float32:  # the usual cases first: a float or an int that float32 holds as a finite value
        kind = type(value)
        if kind is float and -_F32_OVERFLOW < value < _F32_OVERFLOW:
            return value
        if kind is int and -(1 << 63) <= value < 1 << 64:
            return float(value)
    elif dtype is T.int64 and type(value) is int and -(1 << 63) <= value < 1 << 63:
        return value  # an index's or a label's bound: int64 holds it as it is
    return _scalar_value_checked(value, dtype, op)


def _scalar_value_checked(value, dtype: T.DType, op: str):
    """A Python scalar as a constant of ``dtype``, following PyTorch.

    A float that overflows float32 is ±inf (parameters travel as float32, also for float16 ops);
    an int outside [-2^63, 2^64) is PyTorch's OverflowError; other ints wrap into an integer
    dtype (PyTorch: ``int32_tensor + 2**32`` adds 0).
    """
    if type(value) is int:
        low, end = _INT_OPERAND_RANGE
        if not low <= value < end:
            where = f"'{op}': " if op else ""
            raise OverflowError(f"{where}int {value} too big to convert (PyTorch takes ints in [-2**63, 2**64))")
    if dtype is T.bool_:
        return bool(value)
    if dtype.is_float:
        v = float(value)
        if dtype is T.float64 or -_F32_OVERFLOW < v < _F32_OVERFLOW or v != v:
            return v
        return math.copysign(math.inf, v)
    v = int(value)
    bits = dtype.bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) and dtype.is_signed else v


def cast_node(node: Node, dtype: T.DType) -> Node:
    if node.dtype is dtype:
        return node
    arg = node.arg  # before op: another thread may be realizing node (Node.become_buffer)
    if node.op == _CONST and _folds(arg.value, dtype):
        value = arg.value
        if dtype.is_float and type(value) is float:  # the value the source dtype holds, then the target's
            value = host_round(host_round(value, node.dtype) if node.dtype.is_float else value, dtype)
        elif dtype.is_float:
            value = host_round(float(value), dtype) if dtype in (T.float16, T.bfloat16) else value
        return Node(_CONST, (), Const(_scalar_value(value, dtype)), node.shape, dtype, node.device)
    return Node(_CAST, (node,), VALUE_CAST, node.shape, dtype, node.device)


def bitcast_node(node: Node, dtype: T.DType) -> Node:
    """``node``'s bits read as ``dtype`` of the same element size (``Tensor.view(dtype)``): a cast
    node whose ``arg`` is ``BITS_CAST``, so it fuses wherever a conversion does."""
    if node.dtype is dtype:
        return node
    if node.dtype.nbytes != dtype.nbytes:
        raise ValueError(f"bitcast_node: {node.dtype.name} and {dtype.name} differ in size")
    return Node(_CAST, (node,), BITS_CAST, node.shape, dtype, node.device)


def _folds(value, dtype: T.DType) -> bool:
    """Whether converting constant ``value`` to ``dtype`` on the host gives the cast op's value:
    not for a float outside an integer dtype's range (inf, NaN, 1e30), which the op defines."""
    if dtype.is_float or dtype is T.bool_ or type(value) is not float:
        return True
    return -(2.0 ** (dtype.bits - 1)) <= value < 2.0 ** (dtype.bits - 1)


def elementwise(name: str, operands: list, device=None) -> Node:
    """The node of registered elementwise op ``name`` over tensors (Nodes) and Python scalars.

    This runs for every op a user writes, so the common case (operands of one shape on one
    device) is checked in one pass; anything else takes the general checks, which raise.
    """
    if len(operands) == 2:
        node = binary_fast(name, operands[0], operands[1])
        if node is not None:
            return node
    elif len(operands) == 3 and type(operands[0]) is Node:
        node = condition_fast(name, operands)
        if node is not None:
            return node
    dev = shape = None
    same = True
    kinds = []
    for o in operands:
        if type(o) is Node:
            if dev is None:
                dev, shape = o.device, o.shape
            elif o.device is not dev or o.shape != shape:
                same = False
            kinds.append((o.dtype, o.shape != ()))
        elif type(o) in SCALAR_TYPES:
            kinds.append(type(o))
        else:
            kinds.append(_promotion_kind(o))  # raises the error naming an unsupported value
    if not same:
        nodes = [o for o in operands if type(o) is Node]
        dev = check_devices(name, nodes)
        shape = broadcast_shapes(name, *(n.shape for n in nodes))
    if dev is None:
        dev = device
    opdef = REGISTRY[name]
    condition = opdef.condition  # operand 0 is a bool condition, outside promotion (where)
    if condition:
        if type(operands[0]) is Node and operands[0].dtype is not T.bool_:
            raise DTypeError(f"'{name}': condition must be a bool tensor, got {operands[0].dtype.name}")
        compute, out_dtype = _elementwise_dtypes(name, tuple(kinds[1:]))
    else:
        compute, out_dtype = _elementwise_dtypes(name, tuple(kinds))
    if len(operands) == 2 and not same and not condition and type(operands[0]) is type(operands[1]) is Node:
        _broadcast_kinds[(name, *kinds[0], *kinds[1])] = (Elementwise(opdef, compute), out_dtype)
    elif len(operands) == 1 and type(operands[0]) is Node:
        _unary_kinds[(name, *kinds[0])] = (Elementwise(opdef, compute), out_dtype)
    if condition and same and len(operands) == 3 and type(operands[0]) is Node:
        _condition_kinds[(name, kinds[0][0], kinds[0][1], kinds[1], kinds[2])] = (
            Elementwise(opdef, compute),
            out_dtype,
        )
    if len(operands) == 2 and same and not condition:
        x, y = operands
        first = type(x) is Node
        tensor, other = (x, y) if first else (y, x)
        if type(tensor) is Node and (type(other) is Node or type(other) in SCALAR_TYPES):
            kind = other.dtype if type(other) is Node else type(other)
            _binary_kinds[(name, tensor.dtype, tensor.shape != (), kind, first)] = (
                Elementwise(opdef, compute),
                out_dtype,
            )
    srcs = []
    for i, o in enumerate(operands):
        if type(o) is Node:
            srcs.append(o if o.shape == shape else expand_to(o, shape))
        elif condition and i == 0:
            srcs.append(const_node(o, T.bool_, shape, dev, name))
        else:
            srcs.append(const_node(_scalar_operand(o, compute, name, i), compute, shape, dev, name))
    return Node(_ELEMENTWISE, tuple(srcs), Elementwise(opdef, compute), shape, out_dtype, dev)


# PyTorch's CPU converts a Python scalar operand of these float16 or bfloat16 ops, at these operand
# positions, to that dtype (through float32) before the op: 1e10 + h is inf, 7e4 // h NaN (inf // h).
# Its other kernels read the scalar in float32 (a product's, a divisor, an activation's parameter),
# as vkml's float32 parameters do; ``s / h`` is ``h.reciprocal() * s`` there (vkml/tensor.py).
_REDUCED_FLOATS = frozenset((T.float16, T.bfloat16))
_BOTH = (0, 1)
_ROUNDED_SCALAR = {
    **dict.fromkeys(("add", "sub", "remainder", "fmod", "pow", "eq", "ne", "lt", "le", "gt", "ge"), _BOTH),
    **dict.fromkeys(("div", "div_trunc", "floor_divide"), (0,)),
}


def _scalar_operand(value, compute: T.DType, name: str, index: int):
    """Python scalar ``value``, operand ``index`` of op ``name``, as PyTorch's CPU takes it (see above)."""
    if compute not in _REDUCED_FLOATS or type(value) is bool or index not in _ROUNDED_SCALAR.get(name, ()):
        return value
    if type(value) is int and not _INT_OPERAND_RANGE[0] <= value < _INT_OPERAND_RANGE[1]:
        return value  # const_node raises PyTorch's OverflowError
    with np.errstate(over="ignore"):
        f32 = np.float32(value)
    return host_round(float(f32), compute)


SCALAR_TYPES = frozenset((bool, int, float))  # the Python numbers an op takes as a scalar operand
# (name, dtype of the tensor, whether it has dims, dtype or Python type of the other operand, which is first)
# -> (Elementwise arg, result dtype): what ``elementwise`` decided for a binary op of those kinds.
_binary_kinds: dict[tuple, tuple] = {}
# (name, dtype and whether it has dims of each operand) -> the same, for two tensors of different
# shapes on one device (a broadcast: a layer's per-channel statistics and parameters), and of one tensor.
_broadcast_kinds: dict[tuple, tuple] = {}
_unary_kinds: dict[tuple, tuple] = {}
# (name, the condition's dtype, whether it has dims, the kind of each value operand, as ``elementwise``
# lists them) -> the same, for ``where`` of a condition tensor and values of its shape on its device.
_condition_kinds: dict[tuple, tuple] = {}


def forget_promotion_decisions() -> None:
    """Drop the cached promotion decisions: they depend on the default float, which just changed."""
    _binary_kinds.clear()
    _broadcast_kinds.clear()
    _unary_kinds.clear()
    _condition_kinds.clear()
    _elementwise_dtypes.cache_clear()


def binary_fast(name: str, x, y) -> Node | None:
    """``elementwise`` of two same-shape tensors on one device, or of a tensor and a Python scalar,
    whose kinds were met before (None: anything else, for the general path, which checks).

    The decision of those kinds is the general path's, remembered by value: the same (arg,
    result dtype) objects every time, without its lists and loops (about 1 µs an op).
    """
    if type(x) is Node:
        tensor, other, first = x, y, True
    elif type(y) is Node:
        tensor, other, first = y, x, False
    else:
        return None
    shape, dev = tensor.shape, tensor.device
    if type(other) is Node:
        if other.device is not dev:
            return None
        if other.shape != shape:
            return _broadcast_fast(name, x, y)
        kind = other.dtype
    elif type(other) in SCALAR_TYPES:
        kind = type(other)
    else:
        return None
    decided = _binary_kinds.get((name, tensor.dtype, shape != (), kind, first))
    if decided is None:
        return None
    arg, out_dtype = decided
    if kind.__class__ is type:  # a Python scalar: a broadcast constant of the compute dtype
        other = const_node(_scalar_operand(other, arg.compute, name, 1 if first else 0), arg.compute, shape, dev, name)
    return Node(_ELEMENTWISE, (tensor, other) if first else (other, tensor), arg, shape, out_dtype, dev)


def _broadcast_fast(name: str, x: Node, y: Node) -> Node | None:
    """``elementwise`` of two tensors of different shapes on one device, whose kinds were met
    before and whose shapes broadcast (None: anything else, for the general path, which raises):
    the general path's nodes, each operand expanded by ``expand_to``."""
    decided = _broadcast_kinds.get((name, x.dtype, x.shape != (), y.dtype, y.shape != ()))
    if decided is None:
        return None
    try:
        shape = _broadcast_shape((x.shape, y.shape))
    except TypeError:  # a shape given as a list
        return None
    if shape is None:
        return None
    arg, out_dtype = decided
    srcs = (x if x.shape == shape else expand_to(x, shape), y if y.shape == shape else expand_to(y, shape))
    return Node(_ELEMENTWISE, srcs, arg, shape, out_dtype, x.device)


def condition_fast(name: str, operands: list) -> Node | None:
    """``elementwise`` of a condition tensor and two values (tensors of its shape on its device, or
    Python scalars) whose kinds were met before (None: anything else, for the general path): its nodes."""
    condition, x, y = operands
    shape, dev = condition.shape, condition.device
    has_dims = shape != ()
    if type(x) is Node:
        if x.shape != shape or x.device is not dev:
            return None
        x_kind = (x.dtype, has_dims)
    else:
        x_kind = type(x)
    if type(y) is Node:
        if y.shape != shape or y.device is not dev:
            return None
        y_kind = (y.dtype, has_dims)
    else:
        y_kind = type(y)
    decided = _condition_kinds.get((name, condition.dtype, has_dims, x_kind, y_kind))  # no other type is a key
    if decided is None:
        return None
    arg, out_dtype = decided
    if type(x) is not Node:
        x = const_node(_scalar_operand(x, arg.compute, name, 1), arg.compute, shape, dev, name)
    if type(y) is not Node:
        y = const_node(_scalar_operand(y, arg.compute, name, 2), arg.compute, shape, dev, name)
    return Node(_ELEMENTWISE, (condition, x, y), arg, shape, out_dtype, dev)


def unary_fast(name: str, x: Node) -> Node | None:
    """``elementwise`` of one tensor whose kind was met before (None: for the general path)."""
    decided = _unary_kinds.get((name, x.dtype, x.shape != ()))
    if decided is None:
        return None
    arg, out_dtype = decided
    return Node(_ELEMENTWISE, (x,), arg, x.shape, out_dtype, x.device)


def _promotion_kind(operand) -> tuple | type:
    """What type promotion sees of an operand: (dtype, has dims) of a tensor, the type of a scalar."""
    if isinstance(operand, Node):
        return (operand.dtype, bool(operand.shape))
    if type(operand) not in (bool, int, float):
        scalar_dtype(operand)  # raises the error naming the unsupported value
    return type(operand)


# PyTorch's own words (and a RuntimeError, not its NotImplementedError) where it refuses a bool operand
# other than with "... not implemented for 'Bool'"
_BOOL_REFUSALS = {
    "neg": "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a tensor, "
    "use the `~` or `logical_not()` operator instead.",
    "relu": "Boolean inputs not supported for relu",
}


@functools.lru_cache(maxsize=1024)
def _elementwise_dtypes(name: str, kinds: tuple) -> tuple[T.DType, T.DType]:
    """(compute dtype, result dtype) of op ``name``; ``kinds`` has one entry per value operand.

    An entry is (dtype, has dims) for a tensor, or the Python type of a scalar: promotion
    depends on nothing else, so the decision is cached instead of redone on every op.
    """
    op = REGISTRY[name]
    if name == "sub" and all(isinstance(k, tuple) and k[0] is T.bool_ for k in kinds):
        raise RuntimeError(
            "'sub': Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if name == "sub" and any(k is bool or (isinstance(k, tuple) and k[0] is T.bool_) for k in kinds):
        raise RuntimeError(  # PyTorch's error, also where the other operand would promote the bool
            "'sub': Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    dims = [k[0] for k in kinds if isinstance(k, tuple) and k[1]]
    zero = [k[0] for k in kinds if isinstance(k, tuple) and not k[1]]
    scalars = [k(0) for k in kinds if not isinstance(k, tuple)]  # a stand-in value of the scalar's type
    compute = result_type(dims, zero, scalars)
    if compute is T.bool_ and name in ("lt", "le", "gt", "ge"):  # PyTorch orders bools False < True
        compute = T.int32  # as 0 and 1, in a type every device computes
    if op.result == "float" and not compute.is_float:
        compute = default_float()
    if compute not in op.dtypes:
        _refuse_float64(name, compute)
        shown = ", ".join(sorted({k[0].name if isinstance(k, tuple) else k.__name__ for k in kinds}))
        allowed = ", ".join(t.name for t in op.dtypes)
        if compute is T.bool_ and name in _BOOL_REFUSALS:  # PyTorch's RuntimeError
            raise DTypeError(_BOOL_REFUSALS[name])
        if compute is T.bool_:  # PyTorch's class: its op has no bool kernel
            raise DTypeNotImplementedError(
                f"\"{name}\" not implemented for 'Bool' ('{name}' does not support dtype bool; supported: {allowed})"
            )
        # PyTorch's class where its op has no kernel for the dtype ("... not implemented for 'Long'":
        # hypot, logaddexp of ints); a NotImplementedError is also the RuntimeError other refusals raise
        raise DTypeNotImplementedError(
            f"'{name}' does not support dtype {compute.name} (operands: {shown}; supported: {allowed}): "
            f"\"{name}\" not implemented for '{scalar_type_name(compute)}'"
        )
    return compute, T.bool_ if op.result == "bool" else compute


def _refuse_float64(op: str, dtype: T.DType) -> None:
    """float64 where an op has no exact float64 form: NotImplementedError, never float32 in disguise."""
    if dtype is T.float64:
        raise NotImplementedError(
            f"'{op}' is not implemented for float64 in vkml: it has no float64 routine within a stated error "
            "bound, and computing it in float32 would silently lose precision (docs/dtypes.md lists the float64 "
            "ops); convert with .float() to compute it in float32"
        )


def dim_index(op: str, dim, what: str = "dim") -> int:
    """``dim`` as a Python int: ints and numpy integers pass, anything else is PyTorch's TypeError."""
    if type(dim) is int:
        return dim
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, (bool, np.bool_)):
        return int(dim)
    if hasattr(type(dim), "__index__") and not isinstance(dim, (bool, np.bool_)):
        try:  # an integer tensor of one element, as PyTorch's argument parser takes it (cumsum(x, tensor(0)))
            return operator.index(dim)
        except TypeError:
            pass
    raise TypeError(f"'{op}': argument '{what}' must be an int or a tuple of ints, got {dim!r} ({type(dim).__name__})")


def normalize_dim(op: str, dim, ndim: int) -> int:
    """``dim`` in [0, ndim): negative dims count from the end; a 0-d tensor takes 0 and -1 (PyTorch)."""
    if type(dim) is int and -ndim <= dim < ndim:  # the usual dim: a Python int in range (so ndim > 0)
        return dim % ndim
    d = dim_index(op, dim)
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"'{op}': Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def reduce_dims(op: str, dim, ndim: int) -> tuple[int, ...] | None:
    """A reduction's ``dim`` argument checked as PyTorch does: None (every dim) or sorted distinct dims.

    An int, a numpy integer or a tuple/list of them; an empty tuple means every dim (PyTorch's
    rule for ``sum(x, ())``). A dim named twice is PyTorch's RuntimeError.
    """
    if dim is None:
        return None
    if not isinstance(dim, (tuple, list)):
        return (normalize_dim(op, dim, ndim),)
    if not dim:
        return None
    axes: list[int] = []
    for d in dim:
        a = normalize_dim(op, d, ndim)
        if a in axes:
            raise RuntimeError(f"'{op}': dim {a} appears multiple times in the list of dims {tuple(dim)}")
        axes.append(a)
    return tuple(sorted(axes))


# Reductions PyTorch takes on bool tensors, which vkml computes on their values 0 and 1 as int32.
_BOOL_VIA_UINT8 = frozenset(("amax", "amin", "argmax", "argmin"))


def reduce(name: str, node: Node, dim, keepdim: bool, op: str | None = None) -> Node:
    """Reduction ``name`` over ``dim`` (None: all dims), keeping or dropping the reduced dims.

    ``op`` is the public function the user called (``max`` for ``amax``), for error messages.
    """
    op = op or name
    if node.dtype is T.bool_ and name in _BOOL_VIA_UINT8:
        if op in ("argmax", "argmin"):
            raise RuntimeError(f"{op}(): does not support bool input")  # PyTorch's; max(dim) takes bool
        # bool orders as 0 < 1 (int32: a type every device computes, unlike uint8)
        out = reduce(name, cast_node(node, T.int32), dim, keepdim, op)
        return cast_node(out, T.bool_) if out.dtype is T.int32 else out
    opdef = REGISTRY[name]
    if node.dtype not in opdef.dtypes:
        _refuse_float64(op, node.dtype)
        allowed = ", ".join(t.name for t in opdef.dtypes)
        raise DTypeError(f"'{op}' does not support dtype {node.dtype.name} (supported: {allowed})")
    dims = reduce_dims(op, dim, len(node.shape))
    axes, kept_shape, out_shape, n = _reduce_shapes(node.shape, dims, bool(keepdim))
    _, out_dtype = reduce_dtypes(name, node.dtype)
    if n and axes and out_shape != kept_shape:  # the usual case: a reduction, its reduced dims dropped
        result = Node(_REDUCE, (node,), Reduce(opdef, axes), kept_shape, out_dtype, node.device)
        stack = _reshape_stack(kept_shape, out_shape)  # what view_node makes of a new node, from a cache
        return Node(_VIEW, (result,), stack, out_shape, out_dtype, node.device)
    if n == 0:
        if opdef.identity is None:
            _raise_empty_reduction(op, opdef.arg, node.shape, dims)
        result = const_node(opdef.identity, out_dtype, kept_shape, node.device)
    elif not axes:  # a 0-d tensor: every reduction of one element is that element, or index 0
        if opdef.result == "int64":
            result = const_node(0, T.int64, kept_shape, node.device)
        else:
            result = cast_node(node, out_dtype)
    else:
        result = Node(_REDUCE, (node,), Reduce(opdef, axes), kept_shape, out_dtype, node.device)
    if out_shape != result.shape:
        result = view_node(result, lambda st: st.reshape(out_shape))
    return result


@functools.lru_cache(maxsize=1024)
def _reduce_shapes(shape: tuple[int, ...], dims: tuple[int, ...] | None, keepdim: bool) -> tuple:
    """(axes reduced, shape with them kept as 1, result shape, elements per result) of a reduction
    of ``shape`` over checked ``dims`` (None: every dim): a function of its arguments, cached."""
    ndim = len(shape)
    axes = tuple(range(ndim)) if dims is None or ndim == 0 else dims
    kept_shape = tuple(1 if d in axes else s for d, s in enumerate(shape))
    out_shape = kept_shape if keepdim else tuple(s for d, s in enumerate(shape) if d not in axes)
    return axes, kept_shape, out_shape, math.prod(shape[a] for a in axes)


@functools.lru_cache(maxsize=1024)
def _reshape_stack(from_shape: tuple[int, ...], to_shape: tuple[int, ...]) -> ViewStack:
    """``view_node``'s stack reshaping a contiguous ``from_shape`` to ``to_shape`` (immutable, shared)."""
    return ViewStack.contiguous(from_shape).reshape(to_shape)


@functools.lru_cache(maxsize=1024)
def _permute_stack(from_shape: tuple[int, ...], order: tuple[int, ...]) -> ViewStack:
    """``view_node``'s stack permuting a contiguous ``from_shape`` by ``order`` (immutable, shared)."""
    return ViewStack.contiguous(from_shape).permute(order)


def _raise_empty_reduction(op: str, arg: bool, shape: tuple[int, ...], dims) -> None:
    """PyTorch's errors for a reduction without identity (max, argmax, ...) over no elements."""
    if dims is None:
        # PyTorch: RuntimeError for amax/amin/max/min, IndexError for argmax/argmin (``arg``)
        error = IndexError if arg else RuntimeError
        raise error(
            f"'{op}': Expected reduction dim to be specified for input.numel() == 0 (shape {shape}). "
            "Specify the reduction dim with the 'dim' argument."
        )
    empty = next(d for d in dims if shape[d] == 0)
    raise IndexError(f"'{op}': Expected reduction dim {empty} to have non-zero size (shape {shape}).")
