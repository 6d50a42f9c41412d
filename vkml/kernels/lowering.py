"""Lowering: turn one fused group of graph nodes into IR kernel templates.

A template is a kernel plus the *roles* of its bindings (which leaf, output or temporary
each buffer is; which constant each parameter is), so the scheduler can cache it by the
group's structure and bind new buffers and values on every realize without rebuilding IR.

The elementwise template (here) computes the root's expression at each output position,
loading realized leaves through their views (index arithmetic, no copies). With a vector
tuning (``kernels_tuning``) an invocation handles an aligned group of ``VECTOR_WIDTH``
consecutive positions: the output is written as one vector, and every leaf whose view maps
the group to an aligned group of its own is read as one vector (``vload``); a leaf the
group reaches through a broadcast of the innermost dim is read once; any other view falls
back to one scalar load per position. Reductions are in ``kernels_reduce.py``.

A view's offset and mask bounds are kernel parameters (``Lowering.view_values``), not IR
constants: the structure key holds only what the code depends on (``ViewStack.structure``), so
one kernel serves a slice, a pad or a write region at every position. Where aligned groups could
pass a view if its values were multiples of the width, the kernel tests them at run time (a
uniform branch, ``group_plan``): vector loads where they are, one load per position elsewhere.
A view whose values the scheduler bakes (past ``VIEW_PARAM_BUDGET_NBYTES``) keeps them as
constants, and its values in the key.
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass, field
from typing import NamedTuple

from ..graph.node import Node, Op
from ..graph.view import View, ViewStack
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Kernel, Value
from ..ir.instructions import VECTOR_WIDTH
from ..ops import mathlib as M
from ..ops.bitview import reinterpret_stored, reinterpret_value
from ..ops.cast import cast_value, compute_dtype, load_value, narrow, storage_dtype, store_value
from ..ops.random import random_value
from .index import _u32, index_dtype, local_index
from .tuning import Tuning, tuning_for

MAX_GRID_X = 65535


def fold_grid(workgroups: int) -> tuple[int, int, int]:
    """Spread a 1-D count of workgroups over x and y (x is limited to 65535 on many devices).

    The rows are as even as can be, so few workgroups of the last row find nothing to do.

    >>> fold_grid(262144)   # 5 rows of 52429, not 5 of 65535
    (52429, 5, 1)
    """
    rows = max(1, -(-workgroups // MAX_GRID_X))
    return (max(1, -(-workgroups // rows)), rows, 1)


def pow2ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


PARAM_BUDGET_NBYTES = 64  # scalars beyond this become IR constants (push constants can be 128 bytes in all)
# View offsets and mask bounds past this (4 bytes each, 8 in a kernel with int64 indices) become IR
# constants: with the scalars' 64 bytes, a kernel's parameters stay within the 128 bytes every device has.
VIEW_PARAM_BUDGET_NBYTES = 48


def param_dtype(dtype: T.DType) -> T.DType:
    """Parameters travel as push constants in the compute dtype (float16 and bfloat16 as float32,
    uint8/int8/int16 as int32), bool as uint32."""
    return T.uint32 if dtype is T.bool_ else compute_dtype(dtype)


class GroupMode(enum.Enum):
    """How a group without a matmul is lowered (a matmul group's mode is its template's frozen dataclass,
    vkml/kernels/matmul/). Keys the template and plan caches as it is.

    - ``ELEMENTWISE``: no reduction (``lower_elementwise``);
    - ``ROWS``: a row of each reduction per workgroup, a chain of them sharing the kernel (reduce_rows);
    - ``BLOCKS``: few long rows split over aligned blocks, one dispatch a pass (reduce_rows);
    - ``WHOLE_ROWS``: an elementwise root over rows that fit one chunk, with the reductions it reads (reduce_rows);
    - ``COLUMNS``: a lone reduction that keeps the innermost axis (reduce_columns).
    """

    ELEMENTWISE = "elementwise"
    ROWS = "rows"
    BLOCKS = "blocks"
    WHOLE_ROWS = "whole_rows"
    COLUMNS = "columns"


class BufferKind(enum.Enum):
    """What a kernel's buffer binds: a node it loads, a node it writes, or a temporary of its group."""

    LEAF = "leaf"
    OUT = "out"
    TEMP = "temp"


class BufferRole(NamedTuple):
    """A kernel buffer's role: its ``kind`` and ``what`` it binds (the node; a temporary's index). Once the
    template is indexed (``scheduler._indexed``), a node is its position among the group's leaves or outputs."""

    kind: BufferKind
    what: object


class ViewRole(NamedTuple):
    """A kernel parameter holding a value of ``view`` (the node; once indexed, its position among the group's
    views): its offset (``field`` -1) or a mask bound at ``level``, as ``plan_cache.ViewParam`` computes it."""

    view: object
    level: int
    field: int
    divisor: int
    bits: int


@dataclass
class KernelTemplate:
    """A kernel and the roles of its buffers and parameters (see ``Lowering``): a parameter's role is the
    constant node it holds (once indexed, the constant's position) or a ``ViewRole``."""

    kernel: Kernel
    grid: tuple[int, int, int]
    buffers: dict[str, BufferRole]
    params: dict[str, object]


@dataclass
class GroupTemplate:
    """The kernels of one fused group, in order, and the temporaries they share."""

    kernels: list[KernelTemplate]
    temps: list[tuple[T.DType, int]] = field(default_factory=list)


class Index:
    """A position in a node's shape: a linear index and/or a multi-index, and where it is valid.

    ``group = (q, k, width)`` says the position is ``q * width + k``: element ``k`` of aligned
    group ``q`` (a vector), with ``valid`` the same for the whole group; ``group_multi`` may
    give q's multi-index in the shape counted in groups along the innermost dim.
    ``row = (o, red)`` says the position lies in row ``o`` of reduction ``red``'s source (a
    rows kernel's positions): a row broadcast of ``red``'s shape read there is its value at ``o``.
    Only elementwise ops pass an Index on, so a view that moves positions drops the tag.
    ``lane = (base, c, width)`` says the innermost digit of ``multi`` is ``base + c``, ``base`` a multiple
    of ``width`` and 0 <= c < width (element c of a matmul's staging unit): a view that merges that dim
    from dims whose innermost size is a multiple of ``width`` unravels ``base`` alone, so the unit's
    elements share every digit but the innermost (``_view_index``).
    """

    def __init__(
        self,
        shape,
        lin: Value | None = None,
        multi: tuple | None = None,
        valid: Value | None = None,
        group: tuple | None = None,
        group_multi: tuple | None = None,
        row: tuple | None = None,
        lane: tuple | None = None,
    ):
        self.shape, self._lin, self._multi, self.valid = tuple(shape), lin, multi, valid
        self.group, self.group_multi, self.row, self.lane = group, group_multi, row, lane

    @property
    def key(self) -> tuple:
        """Equal for two indices of one shape that denote the same position by the same values."""
        valid = id(self.valid) if self.valid is not None else None
        if self.group is not None:
            q, k, width = self.group
            return ("group", id(q), k, width, valid)
        if self._lin is not None:
            return ("lin", id(self._lin), valid)
        return ("index", id(self))

    @property
    def group_key(self) -> tuple:
        """``key`` without the position in the group: equal for every element of one group."""
        q, _, width = self.group
        return ("group", id(q), width, id(self.valid) if self.valid is not None else None)

    @property
    def lin(self) -> Value:
        if self._lin is None and self.group is not None:
            q, k, width = self.group
            self._lin = q * _u32(width) + _u32(k) if k else q * _u32(width)
        if self._lin is None:
            acc = None
            for i, st in zip(self._multi, _strides(self.shape)):
                if st:
                    term = i if st == 1 else i * _u32(st)
                    acc = term if acc is None else acc + term
            self._lin = acc if acc is not None else _u32(0)
        return self._lin

    @property
    def multi(self) -> tuple:
        if self._multi is None and self.group is not None and self.shape and self.shape[-1] % self.group[2] == 0:
            # the group's multi-index in groups, then its innermost digit times the width plus k:
            # the divisions are the group's, shared by its positions, not each position's own
            q, k, width = self.group
            outer = self.group_multi or unravel(q, _grouped(self.shape, width))
            last = outer[-1] * _u32(width) if self.shape[-1] != width else _u32(0)
            self._multi = (*outer[:-1], last + _u32(k) if k else last)
        if self._multi is None:
            self._multi = unravel(self.lin, self.shape)
        return self._multi


def _strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc if s != 1 else 0)
        acc *= s
    return tuple(reversed(out))


def unravel(lin: Value, shape) -> tuple:
    """Multi-index of linear index ``lin`` in ``shape`` (row-major); size-1 dims give constant 0."""
    out, rest, dims_left = [], lin, [d for d, s in enumerate(shape) if s != 1]
    for d in reversed(range(len(shape))):
        s = shape[d]
        if s == 1:
            out.append(None)
            continue
        dims_left.pop()
        if not dims_left:
            out.append(rest)
            continue
        out.append(rest % _u32(s))
        rest = rest / _u32(s)
    zero = None
    result = []
    for v in reversed(out):
        if v is None:
            zero = _u32(0) if zero is None else zero
            v = zero
        result.append(v)
    return tuple(result)


def is_row_broadcast(view: Node, red: Node) -> bool:
    """Whether ``view`` spreads a tensor of ``red``'s kept shape back over ``red``'s rows."""
    src = view.srcs[0]
    if src.shape != red.shape or view.shape != red.srcs[0].shape:
        return False
    return view.arg == ViewStack.contiguous(red.shape).expand(view.shape)


def _and(a: Value | None, b: Value | None) -> Value | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _view_valid(view: View, multi: tuple, valid: Value | None, values=None) -> Value | None:
    """``valid`` and ``view.mask`` at ``multi`` (``_view_level``'s validity alone)."""
    if view.mask:
        for d, (i, (lo, hi), s) in enumerate(zip(multi, view.mask, view.shape)):
            if lo > 0 or hi < s:
                start = values(2 * d) if values else _u32(lo)
                length = _u32(max(0, hi - lo))
                if index_dtype() is T.uint32:
                    # one unsigned compare: i - start wraps past the length where i < start, and
                    # start + length <= s < 2^32, so it is below the length exactly where both bounds hold
                    valid = _and(valid, (i - start) < length)
                else:
                    valid = _and(valid, i >= start)
                    valid = _and(valid, i < start + length)
    return valid


def _digits(view: View, multi: tuple, shape: tuple, offset: int | None) -> tuple | None:
    """The multi-index in ``shape`` (row-major) of ``view``'s linear index at ``multi`` computed
    without a division, or None where that needs one (``offset``: the view's offset, None where it
    is a kernel parameter).

    Each stride of the view that is a multiple ``a·c`` of the row-major stride ``c`` of one dim of
    ``shape`` moves that dim's digit by ``a`` a step. Where every digit stays in ``[0, size)`` over
    the view's whole box (its mask ignored: a masked position's index is never loaded), the digits
    are the mixed-radix form of the linear index, which is unique: exactly what ``unravel`` of
    the linear index gives, with no division or remainder. So a window over a padded tensor (im2col:
    digit ``i·step + k·dilation``) reaches the level below as sums.

    >>> _digits(View((5,), (1,)), (None,), (2, 3), 0) is None  # a run of 5 over rows of 3: it divides
    True
    """
    if offset is None or offset < 0 or 0 in shape or 0 in view.shape:
        return None
    row = _strides(shape)
    rest, first = offset, []
    for size in reversed(shape):
        first.append(rest % size)
        rest //= size
    if rest:
        return None
    first.reverse()
    low, high, terms = list(first), list(first), [[] for _ in shape]
    for i, size, stride in zip(multi, view.shape, view.strides):
        if not stride or size == 1:
            continue
        dims = [d for d, c in enumerate(row) if c and stride % c == 0 and c <= abs(stride)]
        if not dims:
            return None
        d = dims[0]  # the largest such stride: row-major strides fall along the dims
        a = stride // row[d]
        low[d] += min(0, a * (size - 1))
        high[d] += max(0, a * (size - 1))
        terms[d].append((i, a))
    if any(lo < 0 or hi >= size for lo, hi, size in zip(low, high, shape)):
        return None
    out = []
    for start, parts in zip(first, terms):
        # positive steps first, then the negative ones subtracted: no partial sum leaves [0, size)
        # below the digit's own value, so uint32 indices never wrap
        acc = _u32(start) if start or not parts else None
        for i, a in sorted(parts, key=lambda t: t[1] < 0):
            term = i if abs(a) == 1 else i * _u32(abs(a))
            if a > 0:
                acc = term if acc is None else acc + term
            else:
                acc = acc - term
        out.append(acc)
    return tuple(out)


def _view_level(view: View, multi: tuple, valid: Value | None, values=None) -> tuple[Value, Value | None]:
    """Linear index below ``view`` of its position ``multi``, and validity (``view.mask``).

    ``values(field)``, where given, is the offset (field -1; None where it is no parameter,
    ``View.shifts``) or mask bound (2 * dim, + 1 for the upper; only lower bounds are asked for) as
    a kernel value; else they are constants. Which of them appear depends only on
    ``View.structure``: an offset that is no parameter and zero emits nothing, nor does a dim the
    mask does not cut; a dim it cuts tests ``lo <= i < lo + (hi - lo)`` with ``lo`` a value and the
    length a constant (a bound at 0 or at the size holds everywhere), so that a region at the first
    or the last row has the code of any other row, and takes one parameter.
    """
    valid = _view_valid(view, multi, valid, values)
    if values:
        lin = values(-1)
    else:
        lin = _u32(view.offset) if view.offset else None
    for i, st in zip(multi, view.strides):
        if st:
            term = i if st == 1 else i * _u32(st)
            lin = term if lin is None else lin + term
    return (lin if lin is not None else _u32(0)), valid


def _view_index(stack, idx: Index, values=None) -> tuple[Value, Value | None]:
    """Linear index into the source's logical shape, and validity, for position ``idx`` of a view.

    ``values(level, scale, width)``: the level's offset and bounds as kernel values (``Lowering.view_values``).
    """
    multi, valid = idx.multi, idx.valid
    lin = None
    for k in reversed(range(len(stack.views))):
        view, at = stack.views[k], values and values(k, 1, 1)
        digits = _digits(view, multi, stack.views[k - 1].shape, _constant_offset(view, at)) if k else None
        if digits is not None:  # the level below's multi-index as sums: no division
            valid, multi = _view_valid(view, multi, valid, at), digits
            continue
        groups = _merged_groups(view, stack.views[k - 1].shape, at) if k and multi is not None else None
        if groups is not None:  # a reshape that merges dims: each digit unravelled over its own dims
            digits = [unravel(i, group) for i, group in zip(multi, groups)]
            lane = idx.lane if k == len(stack.views) - 1 else None
            if lane is not None and groups[-1] and groups[-1][-1] % lane[2] == 0:
                # base's innermost digit is a multiple of the width, so adding c < width carries nowhere
                base, c, _ = lane
                first = unravel(base, groups[-1])
                digits[-1] = (*first[:-1], first[-1] + _u32(c) if c else first[-1])
            multi = tuple(v for group_digits in digits for v in group_digits)
            continue
        lin, valid = _view_level(view, multi, valid, at)
        if k:
            multi = unravel(lin, stack.views[k - 1].shape)
    return lin, valid


def _merged_groups(view: View, below: tuple, values) -> tuple | None:
    """The runs of ``below``'s dims that each of ``view``'s dims merges, where ``view`` is a plain
    reshape of ``below`` that only merges neighbouring dims (contiguous, offset 0 in the code, no mask);
    else None.

    Its linear index then unravels in ``below`` to the concatenation of each digit unravelled over its
    run (the digit is inside its dim, and its run's row-major form is the digit's mixed-radix form), so
    a matmul operand (N, C·kh·kw, L) over a window view divides k over (C, kh, kw) and l over the output's
    dims, and l's divisions do not depend on k: staging computes them once, before its loop over k.

    >>> _merged_groups(View.contiguous((2, 6, 4)), (2, 3, 2, 4), None)
    ((2,), (3, 2), (4,))
    >>> _merged_groups(View.contiguous((4, 3)), (3, 4), None) is None  # a split across dims
    True
    """
    if not view.is_contiguous or (values is not None and values(-1) is not None):
        return None
    groups, d = [], 0
    for size in view.shape:
        run, product = [], 1
        while d < len(below) and (product < size or (below[d] == 1 and size == 1 and not run)):
            run.append(below[d])
            product *= below[d]
            d += 1
        if product != size:
            return None
        groups.append(tuple(run))
    if any(s != 1 for s in below[d:]):
        return None
    if d < len(below) and groups:  # trailing dims of 1 below: digits 0
        groups[-1] += below[d:]
    return tuple(groups) if d == len(below) or groups else None


def _constant_offset(view: View, values) -> int | None:
    """``view``'s offset where the kernel's code holds it (0 where it is no parameter), None where it is one."""
    if values is None:
        return view.offset
    return None if values(-1) is not None else 0


def _grouped(shape: tuple, width: int) -> tuple:
    return tuple(shape[:-1]) + (shape[-1] // width,)


def _in_groups(view: View, width: int, inner_stride: int) -> View:
    """``view`` over groups of ``width`` along its innermost dim (whose stride becomes ``inner_stride``).

    Offsets and outer strides shrink by ``width`` when the groups map to groups below
    (``inner_stride`` 1), and stay when the whole group maps to one position (0). The innermost
    mask keeps its length in groups (structure: its lower bound may be a parameter whose value
    this view's happens not to be aligned, ``group_plan``).
    """
    scale = width if inner_stride else 1
    strides = tuple(st // scale for st in view.strides[:-1]) + (inner_stride,)
    mask = None
    if view.mask:
        lo, hi = view.mask[-1]
        mask = tuple(view.mask[:-1]) + ((lo // width, lo // width + max(0, hi - lo) // width),)
    return View(_grouped(view.shape, width), strides, view.offset // scale, mask)


def group_modes(stack: ViewStack, width: int) -> tuple[str, ...] | None:
    """How aligned groups of ``width`` positions of the view pass each level, top first.

    ``"vector"``: the group maps to an aligned group below (innermost stride 1, offset and
    outer strides multiples of ``width``); ``"uniform"`` (last): the whole group maps to one
    position (innermost stride 0); None: neither at some level, so positions go one by one.
    Masks must not cut a group (innermost bounds multiples of ``width``).

    >>> group_modes(ViewStack.contiguous((1, 8)).expand((4, 8)), 4)   # a row broadcast over rows
    ('vector',)
    >>> group_modes(ViewStack.contiguous((4, 1)).expand((4, 8)), 4)   # one value per row
    ('uniform',)
    >>> group_modes(ViewStack.contiguous((8, 4)).permute((1, 0)), 4) is None   # a transpose
    True
    """
    return group_plan(stack, width)[0]


def group_plan(stack: ViewStack, width: int, source: int | None = None) -> tuple[tuple[str, ...] | None, list]:
    """``group_modes`` for a view whose values are kernel parameters (``source``: the viewed node's
    numel; None: the values are constants, their alignment is known).

    Returns the modes where the parameters are multiples of ``width``, and the parameters that
    must be: ``(level, field)`` of each offset that shifts (``View.shifts``) on a level passed in
    vector groups and each cut innermost mask's lower bound on a level passed (the mask's length
    must be a multiple of the width by structure). The kernel tests those at run time
    (``Lowering._checked_group``), so its code depends on the structure alone: one kernel for
    the aligned offsets and all others.

    >>> group_plan(ViewStack.contiguous((64,)).slice((3,), (35,), (1,)), 4, 64)
    (('vector',), [(0, -1)])
    """
    modes: list[str] = []
    checks: list[tuple[int, int]] = []
    for level in reversed(range(len(stack.views))):
        view = stack.views[level]
        if not view.shape or view.shape[-1] % width:
            return None, []
        if view.mask:
            lo, hi = view.mask[-1]
            if max(0, hi - lo) % width:
                return None, []
            if source is None and lo % width:
                return None, []
            if source is not None and (lo > 0 or hi < view.shape[-1]):
                checks.append((level, 2 * (len(view.shape) - 1)))
        inner = view.strides[-1]
        if inner == 0:
            return (*modes, "uniform"), checks
        outer = [st for st, size in zip(view.strides[:-1], view.shape[:-1]) if size != 1]
        if inner != 1 or any(st % width for st in outer):
            return None, []
        if source is None:
            if view.offset % width:
                return None, []
        elif view.shifts(stack.below(level, source)):
            checks.append((level, -1))
        modes.append("vector")
    return tuple(modes), checks


def _exact_quotient(value: Value, divisor: int, signed: bool) -> Value:
    """``value / divisor`` for a multiple of ``divisor`` (a power of two) in the index type; ``signed``:
    ``value`` may be negative (an offset, held modulo 2^32 by a uint32), so the quotient is too."""
    shift = divisor.bit_length() - 1
    quotient = value >> _u32(shift)  # arithmetic for int64 indices, logical for uint32
    if signed and value.dtype is T.uint32:
        sign = _u32(1 << (31 - shift))  # the quotient's sign bit: extend it
        quotient = (quotient ^ sign) - sign
    return quotient


def _group_view_index(stack: ViewStack, modes, q: Value, valid: Value | None, width: int, multi=None, values=None):
    """Follow group ``q`` (multi-index ``multi`` in groups, if known) down ``stack`` (``modes`` from ``group_modes``).

    Returns ``("vector", group below, valid)`` or ``("uniform", linear index below, valid)``.
    ``values`` as for ``_view_index``.
    """
    levels = list(reversed(range(len(stack.views))))
    multi = multi or unravel(q, _grouped(stack.views[-1].shape, width))
    for level, mode in zip(levels, modes):
        scale = width if mode == "vector" else 1  # what _in_groups divides the offset by
        view = _in_groups(stack.views[level], width, 1 if mode == "vector" else 0)
        at = values and values(level, scale, width)
        if level and mode == "vector":
            below = _grouped(stack.views[level - 1].shape, width)
            digits = _digits(view, multi, below, _constant_offset(view, at))
            if digits is not None:  # the groups below as sums of these: no division
                valid, multi = _view_valid(view, multi, valid, at), digits
                continue
        lin, valid = _view_level(view, multi, valid, at)
        if mode == "uniform":
            if level:  # the rest of the way is a plain view of one position
                lower = ViewStack(stack.views[:level])
                lin, valid = _view_index(lower, Index(lower.shape, lin=lin, valid=valid), values)
            return "uniform", lin, valid
        if level:
            multi = unravel(lin, _grouped(stack.views[level - 1].shape, width))
    return "vector", lin, valid


class Lowering:
    """Builds one kernel: binds leaves as read buffers and constants as parameters, recording roles."""

    def __init__(self, name: str, local_size, leaves, baked=frozenset()):
        self.kb = B.KernelBuilder(name, local_size)
        self.leaves = leaves  # ids of nodes computed by earlier kernels of this realize: loaded, not inlined
        self.baked = baked  # ids of constants emitted as IR constants instead of parameters
        self.roles: dict[str, BufferRole] = {}  # binding name -> its role
        self.param_roles: dict[str, object] = {}  # parameter name -> const node | ViewRole (see view_values)
        self._leaf_refs: dict[int, B.BufferRef] = {}
        self._params: dict[int, Value] = {}
        self._view_params: dict[tuple, Value] = {}
        # node and position -> (value, the block it was defined in, what keeps the key's ids alive)
        self._memo: dict[tuple, tuple] = {}
        self.fused: dict[int, Value] = {}  # a fused reduce node -> its result in this kernel
        self._per_group: dict[tuple, object] = {}  # what all positions of a group share, by value ids

    def bind_buffer(self, dtype: T.DType, access: str, prefix: str, role: BufferRole) -> B.BufferRef:
        name = f"{prefix}{len(self.roles)}"
        self.roles[name] = role
        return self.kb.buffer(name, storage_dtype(dtype), access)  # bfloat16 is held as int16 bits

    def leaf(self, node: Node) -> B.BufferRef:
        """The read buffer bound for ``node`` (realized, or computed by an earlier kernel), bound once."""
        return self._leaf(node)

    def _leaf(self, node: Node) -> B.BufferRef:
        ref = self._leaf_refs.get(id(node))
        if ref is None:
            ref = self._leaf_refs[id(node)] = self.bind_buffer(
                node.dtype, "read", "in", BufferRole(BufferKind.LEAF, node)
            )
        return ref

    def _param(self, node: Node) -> Value:
        if id(node) in self.baked:  # past the parameter budget: the value is part of the kernel
            dtype = param_dtype(node.dtype) if node.dtype is not T.bool_ else T.bool_
            value = node.arg.value
            value = dtype.np.type(value) if dtype.is_float else value  # rounded as a parameter would be
            return B.const(value, dtype)
        v = self._params.get(id(node))
        if v is None:
            name = f"s{len(self._params)}"
            self.param_roles[name] = node
            v = self._params[id(node)] = self.kb.param(name, param_dtype(node.dtype))
        # A bool travels as 0/1; compare where it is used (a value made here must dominate every use).
        return B.ne(v, B.const(0, T.uint32)) if node.dtype is T.bool_ else v

    def view_values(self, node: Node):
        """``values(level, scale, width)`` for ``_view_index``: view ``node``'s offsets and mask bounds as
        parameters; None where the scheduler baked them (its ``baked`` set holds the node: constants then).

        One parameter per value, each as it is (in the index type, whose wrapping keeps negative
        offsets right), whatever its residue: one kernel for every position. A level in aligned
        groups (``_in_groups`` divides its offset by ``scale`` and its innermost bounds by
        ``width``) reads those divided, exactly: it runs only where they are multiples of the width
        (``group_plan`` names them, ``_checked_group`` tests them). An offset that does not shift
        (``View.shifts``) is no parameter: ``value(-1)`` is None.
        """
        if id(node) in self.baked:
            return None
        stack = node.arg
        source = node.srcs[0].numel

        def at_level(level: int, scale: int, width: int):
            view = stack.views[level]
            last = 2 * (len(view.shape) - 1)
            shifts = view.shifts(stack.below(level, source))

            def value(field: int) -> Value | None:
                if field == -1 and not shifts:
                    return None
                param = self._view_param(node, level, field)
                divided = scale if field == -1 else (width if field >= last else 1)
                if divided == 1:
                    return param
                return _exact_quotient(param, divided, signed=field == -1)

            return value

        return at_level

    def _view_param(self, node: Node, level: int, field: int) -> Value:
        key = (id(node), level, field)
        v = self._view_params.get(key)
        if v is None:
            dtype = index_dtype()
            name = f"v{len(self._view_params)}"
            bits = 32 if dtype is T.uint32 else 0  # uint32 parameters hold the value modulo 2^32
            self.param_roles[name] = ViewRole(node, level, field, 1, bits)  # each value whole: divisor 1
            v = self._view_params[key] = self.kb.param(name, dtype)
        return v

    def template(self, grid) -> KernelTemplate:
        return KernelTemplate(self.kb.finish(), tuple(grid), dict(self.roles), dict(self.param_roles))

    def load(self, ref: B.BufferRef, dtype: T.DType, index: Value) -> Value:
        return load_value(ref[index], dtype)

    def store(self, ref: B.BufferRef, dtype: T.DType, index: Value, value: Value) -> None:
        ref[index] = store_value(value, dtype)

    def load_component(self, ref: B.BufferRef, dtype: T.DType, q: Value, k: int) -> Value:
        """Element ``k`` of aligned vector ``q`` (codegen loads the vector once for all its elements)."""
        return load_value(ref.vload(q, k), dtype)

    def store_vector(self, ref: B.BufferRef, dtype: T.DType, q: Value, values: list[Value]) -> None:
        ref.store4(q, [store_value(v, dtype) for v in values])

    def shared(self, key: tuple, make):
        """``make()`` once per ``key`` (ids of the values it depends on) where that result is in scope."""
        found = self._per_group.get(key)
        if found is None or not B.is_open(found[1]):
            found = self._per_group[key] = (make(), B.current_block())
        return found[0]

    def value(self, node: Node, idx: Index) -> Value:
        """The compute-representation value of ``node`` at ``idx``.

        Memoised per node and position (``Index.key``) while the block that computed it is
        still open, so a value is reused only where its definition dominates.
        """
        key = (id(node), idx.key)
        found = self._memo.get(key)
        if found is None or not B.is_open(found[1]):
            block = B.current_block()
            found = self._memo[key] = (self._compute(node, idx), block, idx)
        return found[0]

    def _compute(self, node: Node, idx: Index) -> Value:
        if id(node) in self.fused:
            return self.fused[id(node)]
        if node.realized or id(node) in self.leaves:
            if idx.group is not None:
                q, k, _ = idx.group
                if idx.valid is not None:
                    q = self.shared(("masked", idx.group_key), lambda: B.select(idx.valid, q, _u32(0)))
                return self.load_component(self._leaf(node), node.dtype, q, k)
            lin = idx.lin if idx.valid is None else B.select(idx.valid, idx.lin, _u32(0))
            return self.load(self._leaf(node), node.dtype, lin)
        op = node.op
        if op == Op.CONST:
            return self._param(node)
        if op == Op.VIEW and idx.row is not None and is_row_broadcast(node, idx.row[1]):
            src = node.srcs[0]  # one value per row: computed once per row, not once per position
            return self.value(src, Index(src.shape, lin=idx.row[0]))
        if op == Op.VIEW and idx.group is not None:
            modes, checks = self.group_plan(node, idx.group[2])
            if checks:
                return self._checked_group(node, idx, modes, checks)
            if modes is not None:
                return self._grouped_view(node, idx, modes)
        if op == Op.VIEW:
            return self._scalar_view(node, idx)
        if op == Op.CAST:
            src = node.srcs[0]
            if node.arg.bits:  # Tensor.view(dtype): the same bits read as another dtype of one size
                if node.dtype is not src.dtype and self.stored_copy(src):  # the bits as loaded
                    return reinterpret_stored(self.value_stored(src, idx), src.dtype, node.dtype)
                return reinterpret_value(self.value(src, idx), src.dtype, node.dtype)
            return cast_value(self.value(src, idx), src.dtype, node.dtype)
        if op == Op.ELEMENTWISE:
            opdef, cdtype = node.arg
            args = [cast_value(self.value(s, idx), s.dtype, cdtype) for s in node.srcs]
            if opdef.condition:  # a bool condition, not converted to the compute dtype
                args[0] = cast_value(self.value(node.srcs[0], idx), node.srcs[0].dtype, T.bool_)
            out = opdef.body(*args)
            if node.dtype is cdtype:  # a float16/bfloat16 result rounds, a uint8/int8/int16 one wraps, per op
                out = narrow(out, cdtype)
            return out
        if op == Op.CAT:
            return self._cat(node, idx)
        if op == Op.RANDOM:  # sources: key and call-offset constants (int32 bits), so they travel as parameters
            words = [B.bitcast(self.value(s, idx), T.uint32) for s in node.srcs]
            # The stream is counted by the element's index modulo 2^32 (threefry's counter word).
            return random_value(node.arg.distribution, B.convert(idx.lin, T.uint32), *words)
        raise AssertionError(f"cannot inline {node!r}")

    def value_f16(self, node: Node, idx: Index) -> Value:
        """``node`` (float16, or float32 holding float16 values: ``widened_from``) at ``idx`` as an f16 value:
        loaded as stored through leaves, views and widening casts, narrowed in software (exactly: the value
        is a float16) from anything else.
        """
        leaf = node.realized or id(node) in self.leaves
        if node.dtype is T.float16 and leaf:
            lin = idx.lin if idx.valid is None else B.select(idx.valid, idx.lin, _u32(0))
            return self._leaf(node)[lin]
        if node.op == Op.VIEW and not leaf and (node.dtype is T.float16 or widened_from(node) is T.float16):
            src = node.srcs[0]
            lin, valid = _view_index(node.arg, idx, self.view_values(node))
            return self._masked(self.value_f16(src, Index(src.shape, lin=lin, valid=valid)), valid, idx.valid)
        if _widening(node) is T.float16 and not leaf:  # the float16 source's value, not narrowed back from float32
            return self.value_f16(node.srcs[0], idx)
        if node.dtype is T.float16 and node.op == Op.CAST and node.arg.bits:  # 16 bits read as a float16
            return B.f16_from_bits(B.bitcast(self.value(node.srcs[0], idx), T.uint32))
        return M.f32_to_f16(self.value(node, idx))

    def f16_groups(self, node: Node) -> bool:
        """Whether aligned groups of VECTOR_WIDTH along ``node``'s innermost dim are aligned groups of a
        float16 buffer (through views that keep them so whatever their values, and casts widening it to
        float32): then ``f16_group_values`` loads each as one vector."""
        while not (node.realized or id(node) in self.leaves):
            if node.op == Op.VIEW and (node.dtype is T.float16 or widened_from(node) is T.float16):
                modes, checks = self.group_plan(node, VECTOR_WIDTH)
                if modes is None or "uniform" in modes or checks:
                    return False
            elif _widening(node) is not T.float16:
                break
            node = node.srcs[0]
        return node.dtype is T.float16 and (node.realized or id(node) in self.leaves)

    def f16_group_values(self, node: Node, q: Value, multi: tuple | None = None) -> list[Value]:
        """The float16 values of aligned group ``q`` (multi-index ``multi`` in groups) of ``node`` as stored,
        one vector load (``node`` as ``f16_groups`` accepts)."""
        if node.realized or id(node) in self.leaves:
            ref = self._leaf(node)
            return [ref.vload(q, c) for c in range(VECTOR_WIDTH)]
        if node.op == Op.CAST:  # a widening to float32: the same positions of its float16 source
            return self.f16_group_values(node.srcs[0], q, multi)
        modes, _ = self.group_plan(node, VECTOR_WIDTH)
        _, below, valid = _group_view_index(node.arg, modes, q, None, VECTOR_WIDTH, multi, self.view_values(node))
        if valid is not None:
            below = B.select(valid, below, _u32(0))
        return [self._masked(v, valid, None) for v in self.f16_group_values(node.srcs[0], below)]

    def stored_copy(self, node: Node) -> bool:
        """Whether ``node`` is a float16 (bfloat16) buffer or views of one: its values are the buffer's
        elements (or the pad's +0.0), which a kernel may store as loaded (``value_stored``), with no
        rounding from float32."""
        dtype = node.dtype
        if dtype is not T.float16 and dtype is not T.bfloat16:
            return False
        while node.dtype is dtype and node.op == Op.VIEW and not (node.realized or id(node) in self.leaves):
            node = node.srcs[0]
        return node.dtype is dtype and (node.realized or id(node) in self.leaves)

    def value_stored(self, node: Node, idx: Index) -> Value:
        """``node`` (float16 or bfloat16) at ``idx`` as its stored bits: ``value_f16`` (an f16), and for
        bfloat16 its int16 pattern sign-extended to int32 (the IR has no int16 constants for the pad),
        by the same walk: loaded as stored through leaves and views, a bit view of 16-bit integers as
        their bits, rounded in software from anything else."""
        if node.dtype is T.float16:
            return self.value_f16(node, idx)
        if node.realized or id(node) in self.leaves:
            lin = idx.lin if idx.valid is None else B.select(idx.valid, idx.lin, _u32(0))
            return B.convert(self._leaf(node)[lin], T.int32)
        if node.op == Op.VIEW:
            src = node.srcs[0]
            lin, valid = _view_index(node.arg, idx, self.view_values(node))
            return self._masked(self.value_stored(src, Index(src.shape, lin=lin, valid=valid)), valid, idx.valid)
        if node.op == Op.CAST and node.arg.bits:  # 16 bits read as a bfloat16 (int32, as int16 computes)
            return self.value(node.srcs[0], idx)
        return B.convert(store_value(self.value(node, idx), node.dtype), T.int32)

    def group_plan(self, node: Node, width: int) -> tuple[tuple[str, ...] | None, list]:
        """``group_plan`` of view ``node``: its values are constants where the scheduler baked them."""
        return group_plan(node.arg, width, None if id(node) in self.baked else node.srcs[0].numel)

    def _scalar_view(self, node: Node, idx: Index) -> Value:
        """The view's value at position ``idx``, followed down one position at a time."""
        src = node.srcs[0]
        lin, valid = _view_index(node.arg, idx, self.view_values(node))
        inner = self.value(src, Index(src.shape, lin=lin, valid=valid))
        return self._masked(inner, valid, idx.valid)

    def _checked_group(self, node: Node, idx: Index, modes, checks) -> Value:
        """The view's value at a grouped position where aligned groups pass only if the parameters
        ``checks`` names are multiples of the width: a uniform branch on them (the same for every
        invocation) between the grouped path and one position at a time, made once per group."""
        q, k, width = idx.group

        def branches() -> tuple[Value, ...]:
            aligned = None
            for level, which in checks:
                param = self._view_param(node, level, which)
                aligned = _and(aligned, B.eq(param & _u32(width - 1), _u32(0)))

            def grouped() -> list[Value]:
                at = [
                    Index(idx.shape, valid=idx.valid, group=(q, c, width), group_multi=idx.group_multi)
                    for c in range(width)
                ]
                return [self._grouped_view(node, i, modes) for i in at]

            def scalar() -> list[Value]:
                lin = q * _u32(width)
                return [
                    self._scalar_view(node, Index(idx.shape, lin=lin + _u32(c) if c else lin, valid=idx.valid))
                    for c in range(width)
                ]

            return B.if_else(aligned, grouped, scalar)

        return self.shared(("checked", id(node), idx.group_key), branches)[k]

    def _grouped_view(self, node: Node, idx: Index, modes) -> Value:
        """The view's value at a grouped position: the group goes down the views as a group."""
        src = node.srcs[0]
        q, k, width = idx.group

        def follow():
            return _group_view_index(node.arg, modes, q, idx.valid, width, idx.group_multi, self.view_values(node))

        mode, below, valid = self.shared(("view", id(node), idx.group_key), follow)
        if mode == "vector":
            inner = self.value(src, Index(src.shape, valid=valid, group=(below, k, width)))
            return self._masked(inner, valid, idx.valid)

        def whole_group():  # every position of the group reads the same element
            inner = self.value(src, Index(src.shape, lin=below, valid=valid))
            return self._masked(inner, valid, idx.valid)

        return self.shared(("uniform", id(node), idx.group_key), whole_group)

    @staticmethod
    def _masked(inner: Value, valid: Value | None, outer_valid: Value | None) -> Value:
        """``inner`` where the view's mask holds, else the pad value 0 (as the scalar path does)."""
        if valid is None or valid is outer_valid:
            return inner
        zero = B.const(0.0 if inner.dtype.is_float else (False if inner.dtype is T.bool_ else 0), inner.dtype)
        return B.select(valid, inner, zero)

    def _cat(self, node: Node, idx: Index) -> Value:
        dim, multi, result, start = node.arg.dim, idx.multi, None, 0
        for src in node.srcs:
            size = src.shape[dim]
            if size == 0:
                continue
            i = multi[dim]
            inside = (i >= _u32(start)) & (i < _u32(start + size))
            local = B.select(inside, i - _u32(start), _u32(0))
            sub = Index(src.shape, multi=multi[:dim] + (local,) + multi[dim + 1 :], valid=_and(idx.valid, inside))
            v = self.value(src, sub)
            result = v if result is None else B.select(inside, v, result)
            start += size
        return result


def _widening(node: Node) -> T.DType | None:
    """The source's dtype where ``node`` is a value cast of a float16 or bfloat16 node to float32 (exact), else None."""
    if node.op != Op.CAST or node.arg.bits or node.dtype is not T.float32:
        return None
    dtype = node.srcs[0].dtype
    return dtype if dtype in (T.float16, T.bfloat16) else None


def widened_from(node: Node) -> T.DType | None:
    """float16 or bfloat16 where float32 ``node`` is such a node's values widened exactly (a value cast, under
    views) and computed where it is read (neither is a buffer), else None. A matmul of two such operands
    multiplies half values, exactly in float32 as the half templates do: kernels/matmul gives it theirs.

    >>> half = vkml.ones(2, 3, dtype=vkml.float16)
    >>> widened_from(half.float().T.node), widened_from(half.node), widened_from(half.float().exp().node)
    (vkml.float16, None, None)
    """
    while node.op == Op.VIEW and not node.realized:
        node = node.srcs[0]
    return None if node.realized else _widening(node)


def kernel_name(root: Node, prefix: str) -> str:
    names, stack, seen = [], [root], set()
    while stack and len(names) < 4:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op == Op.ELEMENTWISE or n.op == Op.REDUCE:
            names.append(n.arg.op.name)
        elif n.op == Op.CAST:
            names.append("to_" + n.dtype.short)
        stack.extend(n.srcs)
    shape = "x".join(str(s) for s in root.shape) or "scalar"
    return "_".join([prefix, *names, shape])


def elementwise_width(shape: tuple, tuning: Tuning) -> int:
    """Positions per invocation group: the tuning's vector width where aligned groups fit the shape."""
    width = tuning.vector
    if width > 1 and shape and shape[-1] % width == 0:
        return width
    return 1


def lower_elementwise(root: Node, leaves, baked=frozenset(), tuning: Tuning | None = None) -> GroupTemplate:
    """Each invocation computes ``root`` at ``tuning.vectors_per_invocation`` groups of positions.

    Group j of workgroup w, local invocation l, is ``(w * per + j) * local_size + l``, so each
    round of loads of a workgroup is contiguous; a group is ``width`` consecutive positions.
    ``tuning`` defaults to the root's device's (``kernels_tuning.tuning_for``).
    """
    tuning = tuning or tuning_for(root.device)
    width = elementwise_width(root.shape, tuning)
    groups = root.numel // width
    local, per = tuning.local_size, tuning.vectors_per_invocation
    per = min(per, pow2ceil(-(-groups // local)))  # no rounds that every invocation skips
    span = local * per  # groups per workgroup
    L = Lowering(kernel_name(root, "E"), (local, 1, 1), leaves, baked)
    workgroups = -(-groups // span)
    grid = fold_grid(workgroups)
    out_ref = L.bind_buffer(root.dtype, "write", "out", BufferRole(BufferKind.OUT, root))

    # A float16 view of a float16 buffer (a permute or a pad made contiguous) is copied as float16:
    # no conversion to float32 and rounding back (the software rounding of store_value), and the bits as
    # stored, a signaling NaN's included, as PyTorch's copy keeps them.
    # So is a bit view as float16 (Tensor.view(float16)) of 16-bit integers: their bits, stored.
    half = root.dtype is T.float16 or root.dtype is T.bfloat16
    views = L.stored_copy(root)
    copy = views or (half and root.op == Op.CAST and root.arg.bits)
    vectors = views and root.dtype is T.float16 and width == VECTOR_WIDTH and L.f16_groups(root)

    def compute(q: Value, group_multi=None) -> list[Value]:
        if vectors:
            return L.f16_group_values(root, q, group_multi)
        if width == 1:
            return [(L.value_stored if copy else L.value)(root, Index(root.shape, lin=q))]
        at = [Index(root.shape, group=(q, k, width), group_multi=group_multi) for k in range(width)]
        return [(L.value_stored if copy else L.value)(root, i) for i in at]

    def store(q: Value, values: list[Value]) -> None:
        if copy:  # float16 values (bfloat16 bits) as stored
            if root.dtype is T.bfloat16:
                values = [B.convert(v, T.int16) for v in values]
            if width == 1:
                out_ref[q] = values[0]
            else:
                out_ref.store4(q, values)
        elif width == 1:
            L.store(out_ref, root.dtype, q, values[0])
        else:
            L.store_vector(out_ref, root.dtype, q, values)

    def one_group(q: Value) -> None:
        store(q, compute(q))

    with L.kb:
        w = linear_workgroup(grid)
        lid = local_index()
        if per > 1 and groups % span == 0:
            # Every group of a workgroup exists: its groups go unrolled into one block, where they
            # share what depends only on the row when a row holds whole workgroups.
            # Stores go last: the loads of later groups need not wait for them (the buffers might alias).
            with B.if_(w < _u32(workgroups)) if grid[0] * grid[1] != workgroups else contextlib.nullcontext():
                per_row = root.shape[-1] // width // span if width > 1 and len(root.shape) > 1 else 0
                rows = root.shape[-1] // width % span == 0 and per_row
                outer = unravel(w / _u32(per_row), root.shape[:-1]) if rows else None
                column = (w % _u32(per_row)) * _u32(span) + lid if rows else None
                first = w * _u32(span) + lid
                results = []
                for j in range(per):
                    q = first + _u32(j * local) if j else first
                    row_multi = outer + ((column + _u32(j * local) if j else column),) if rows else None
                    results.append((q, compute(q, row_multi)))
                for q, values in results:
                    store(q, values)
        elif per == 1:
            q = w * _u32(span) + lid
            with B.if_(q < _u32(groups)):
                one_group(q)
        else:
            with B.range_(_u32(0), _u32(per)) as j:
                q = w * _u32(span) + j * _u32(local) + lid
                with B.if_(q < _u32(groups)):
                    one_group(q)
    return GroupTemplate([L.template(grid)])


def linear_workgroup(grid) -> Value:
    """The workgroup's index in a grid folded by ``fold_grid``, in the index type."""
    x = B.convert(B.workgroup_id(0), index_dtype())
    if grid[1] > 1:
        return B.convert(B.workgroup_id(1), index_dtype()) * _u32(grid[0]) + x
    return x
