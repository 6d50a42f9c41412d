"""The columns mode of reductions: over an axis that is not the innermost, with the contract's tree.

``grad.sum(0)`` of an ``(n, m)`` matrix reduces a column of stride ``m`` per output. The rows
mode (kernels_reduce.py) gives each output a workgroup whose lanes walk that strided column,
so no two lanes of a load touch neighbouring addresses. Here the invocations of a workgroup
form a grid of ``Wx`` neighbouring outputs by ``Wy`` aligned blocks of ``R`` consecutive
reduced indices:

- invocation ``(x, y)`` (local id ``y·Wx + x``, so neighbouring invocations take neighbouring
  outputs and a load is coalesced along the kept axis) reduces block ``y`` of output ``x``:
  ``R / U`` chunks of ``U`` consecutive indices, each chunk a register tree (U loads in
  flight), the chunk results combined by a binary counter held in registers — a stack of
  complete subtrees, merged as the count's low bits carry, folded right at the end (the
  rows mode does the same with shared memory across its chunks);
- the block results go through shared memory, and invocation ``(x, 0)`` pairs them level by
  level in block order, then computes the fused consumers and stores.

Every block and chunk is aligned and a power of two long, so each is a subtree of the
contract's tree (DESIGN.md §4) and the result has its bits for any ``Wx``, ``Wy``, ``R``
and ``U``: the CPU interpreter and every GPU agree whatever their tunings. Sizes come from
the device's ``Tuning``: ``Wx = columns_outputs``, ``Wy = reduce_lanes / Wx`` (fewer when
the reduction is short), ``U = columns_per_chunk``.

    >>> columns_layout(4096, 4096, kernels_tuning.GPU_TUNING)
    ColumnsLayout(outputs=16, blocks=16, rows_per_block=256, per_chunk=16)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .graph import Node
from .ir import builder as B
from .ir import types as T
from .kernels import GroupTemplate, Index, Lowering, _u32, fold_grid, kernel_name, linear_workgroup, pow2ceil, unravel
from .kernels_reduce import Layout, _pack, _Reduction, _register_tree, _select, _unpack
from .kernels_tuning import Tuning, tuning_for

COLUMNS_MIN_INNER = 8  # kept innermost extent below this: a load would touch too few neighbours (rows instead)
COLUMNS_MAX_BLOCKS = 32  # at most this many blocks per output: invocation (x, 0) combines them serially


@dataclass(frozen=True)
class ColumnsLayout:
    """``outputs`` × ``blocks`` invocations per workgroup; blocks of ``rows_per_block``, chunks of ``per_chunk``."""

    outputs: int
    blocks: int
    rows_per_block: int
    per_chunk: int

    @property
    def lanes(self) -> int:
        return self.outputs * self.blocks

    def blocks_present(self, n: int) -> int:
        return -(-n // self.rows_per_block)


def columns_layout(n: int, outer: int, tuning: Tuning) -> ColumnsLayout:
    """The layout for ``outer`` outputs, each reducing ``n`` elements."""
    per_chunk = min(tuning.columns_per_chunk, pow2ceil(n))
    outputs = min(tuning.columns_outputs, pow2ceil(outer), tuning.reduce_lanes)
    most = min(COLUMNS_MAX_BLOCKS, max(1, tuning.reduce_lanes // outputs))
    rows = max(per_chunk, pow2ceil(-(-n // most)))
    blocks = pow2ceil(-(-n // rows))  # no block entirely past the end
    return ColumnsLayout(outputs, blocks, rows, per_chunk)


def columns_fit(red: Node, tuning: Tuning | None = None) -> bool:
    """Whether a lone reduction ``red`` runs faster in the columns mode than in the rows mode.

    It does when the innermost axis is kept (and at least ``COLUMNS_MIN_INNER`` long) and no
    view on the way to the loads makes the innermost axis strided (a transposed source is
    read best by the rows mode). The choice never changes bits, only speed.

    >>> columns_fit(lazy.reduce("sum", x.node, 0, False))    # x: a contiguous (4096, 4096) tensor  # doctest: +SKIP
    True
    """
    src = red.srcs[0]
    axes = set(red.arg[1])
    ndim = len(src.shape)
    if not axes or ndim - 1 in axes:
        return False
    inner = math.prod(src.shape[max(axes) + 1 :])
    return inner >= COLUMNS_MIN_INNER and _innermost_unit_stride(src)


def _innermost_unit_stride(src: Node) -> bool:
    """No single-level view of ``src``'s shape between the reduction and its loads strides the last axis."""
    stack, seen = [src], set()
    while stack:
        node = stack.pop()
        if id(node) in seen or node.realized:
            continue
        seen.add(id(node))
        if node.op == "view":
            views = node.arg.views
            if len(views) == 1 and node.shape == src.shape and abs(views[0].strides[-1]) not in (0, 1):
                return False
            stack.extend(node.srcs)
        elif node.op in ("elementwise", "cast"):
            stack.extend(node.srcs)
    return True


class _Rows:
    """Reduced indices ``(k, present)`` of one chunk, in the shape ``_Reduction.lane_values`` reads."""

    def __init__(self, first, count: int, n: int, static_full: bool):
        self.slots = []
        for j in range(count):
            k = first + _u32(j) if j else first
            self.slots.append((k, True if static_full else k < _u32(n)))
        self.indices: dict = {}


def _zero(dtype: T.DType):
    return B.const(False if dtype is T.bool_ else (0.0 if dtype.is_float else 0), dtype)


def lower_columns(root: Node, red: Node, leaves, baked=frozenset(), tuning: Tuning | None = None) -> GroupTemplate:
    """One dispatch: each workgroup reduces ``Wx`` neighbouring outputs, ``Wy`` aligned blocks each."""
    tuning = tuning or tuning_for(root.device)
    n = math.prod(red.srcs[0].shape[a] for a in red.arg[1])
    outer = red.numel
    lay = columns_layout(n, outer, tuning)
    nb, per, rows = lay.blocks_present(n), lay.per_chunk, lay.rows_per_block
    chunks = rows // per
    depth = chunks.bit_length()  # stack slots: subtrees of 1, 2, 4, ... chunks
    static_full = n % rows == 0 and nb == lay.blocks
    workgroups = -(-outer // lay.outputs)
    grid = fold_grid(workgroups)
    L = Lowering(kernel_name(root, "C"), (lay.lanes, 1, 1), leaves, baked)
    r = _Reduction(L, red, "", Layout(per, 1), 0, tuning)
    assert r.width == 1  # the innermost axis is kept: no vectors along the reduced one
    tree = [L.kb.shared(f"blocks_{i}", t, lay.lanes) for i, t in enumerate(r.acc_types)] if nb > 1 else []
    out_ref = L.bind_buffer(root.dtype, "write", "out", ("out", root))
    width_shift = lay.outputs.bit_length() - 1
    with L.kb:
        lid = B.local_id(0)
        x = lid & _u32(lay.outputs - 1) if lay.outputs > 1 else _u32(0)
        y = lid >> _u32(width_shift) if width_shift else lid
        if workgroups == 1:
            o = x
        else:
            wg = linear_workgroup(grid)
            o = wg * _u32(lay.outputs) + x if lay.outputs > 1 else wg
        inside = True if workgroups * lay.outputs == outer else o < _u32(outer)
        o_safe = o if inside is True else B.select(inside, o, _u32(0))  # loads stay in bounds; barriers stay uniform
        L.shared(("row", id(o_safe), red.shape), lambda: unravel(o_safe, red.shape))  # hoisted out of the loop
        start = y * _u32(rows) if lay.blocks > 1 else _u32(0)

        def chunk_tree(c):
            first = start + c * _u32(per) if c is not None else start
            entries = r.lane_values(o_safe, _Rows(first, per, n, static_full))
            return _register_tree(entries, r.combine)[0], (True if static_full else first < _u32(n))

        if chunks == 1:
            value, _ = chunk_tree(None)
        else:
            value = _counted(r, chunks, depth, chunk_tree, _present_chunks(start, n, per, chunks, static_full))
        if nb > 1:
            for ref, v in zip(tree, _pack(value)):
                ref[lid] = v
            B.barrier()
        with B.if_(B.eq(y, _u32(0)) if inside is True else B.eq(y, _u32(0)) & inside):
            if nb > 1:
                entries = [(_unpack(tuple(ref[x + _u32(g * lay.outputs)] for ref in tree)), True) for g in range(nb)]
                value = _register_tree(entries, r.combine)[0]
            L.fused[id(red)] = r.result(value)
            L.store(out_ref, root.dtype, o, L.value(root, Index(root.shape, lin=o)))
    return GroupTemplate([L.template(grid)])


def _present_chunks(start, n: int, per: int, chunks: int, static_full: bool):
    """How many chunks of this block hold elements (a Python int when every block is full)."""
    if static_full:
        return chunks
    left = B.select(start < _u32(n), _u32(n) - start, _u32(0))
    return B.select(left < _u32(chunks * per), (left + _u32(per - 1)) / _u32(per), _u32(chunks))


def _counted(r: _Reduction, chunks: int, depth: int, chunk_tree, present_chunks):
    """The block's tree from ``chunks`` chunk trees: a binary counter of subtrees in loop-carried registers.

    After chunk ``t`` (counted from 1), slot ``L`` holds the subtree of 2^L chunks exactly when
    bit ``L`` of ``t`` is set; a new chunk absorbs the slots of ``t``'s trailing one bits (the
    older, lower-indexed subtrees on the left) and lands in the slot of ``t + 1``'s lowest bit.
    Absent chunks (past the end) land nowhere.
    """
    width = len(r.acc_types)
    inits = tuple(_zero(t) for _ in range(depth) for t in r.acc_types)

    def body(c, *flat):
        slots = [_unpack(flat[i * width : (i + 1) * width]) for i in range(depth)]
        p, present = chunk_tree(c)
        t = c + _u32(1)
        out = []
        for level, s in enumerate(slots):
            low = t & _u32((2 << level) - 1)
            if level < depth - 1:  # the top slot only ever receives
                p = _select(B.eq(low, _u32(0)), r.combine(s, p), p)
            place = B.eq(low, _u32(1 << level))
            place = place if present is True else place & present
            out.append(_select(place, p, s))
        return tuple(v for s in out for v in _pack(s))

    flat = B.loop(_u32(0), _u32(chunks), _u32(1), inits, body)
    slots = [_unpack(tuple(flat[i * width : (i + 1) * width])) for i in range(depth)]
    if isinstance(present_chunks, int):  # every chunk present: one complete subtree, in the top slot
        assert present_chunks == 1 << (depth - 1)
        return slots[-1]
    result, have = slots[0], B.ne(present_chunks & _u32(1), _u32(0))
    for level in range(1, depth):  # fold right: the higher slots hold the lower-indexed elements
        occupied = B.ne(present_chunks & _u32(1 << level), _u32(0))
        merged = _select(have, r.combine(slots[level], result), slots[level])
        result = _select(occupied, merged, result)
        have = have | occupied
    return result
