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
  level in block order, then computes the fused consumers and stores;
- when that would leave each invocation a long walk over few outputs, the reduced axis is also
  split into aligned spans, one workgroup each, whose results — laid out (span, output), so
  again a reduction over a non-innermost axis — a further pass reduces in the same way.

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
from dataclasses import dataclass, replace

from ..graph.node import Node, Op
from ..ir import builder as B
from ..ir import types as T
from .lowering import (
    BufferKind,
    BufferRole,
    GroupTemplate,
    Index,
    Lowering,
    _u32,
    fold_grid,
    kernel_name,
    linear_workgroup,
    local_index,
    pow2ceil,
    unravel,
)
from .reduce_rows import Layout, _pack, _Reduction, _register_tree, _select, _unpack
from .tuning import Tuning, tuning_for

COLUMNS_MIN_INNER = 8  # kept innermost extent below this: a load would touch too few neighbours (rows instead)
COLUMNS_MAX_BLOCKS = 32  # at most this many blocks per output: invocation (x, 0) combines them serially
COLUMNS_SPLIT_ROWS = 1024  # longer blocks: split the reduced axis over workgroups (few outputs, long columns)
SPLIT_BLOCK_ROWS = 256  # the block of an invocation when the axis is split


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
    axes = set(red.arg.axes)
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
        if node.op == Op.VIEW:
            views = node.arg.views
            if len(views) == 1 and node.shape == src.shape and abs(views[0].strides[-1]) not in (0, 1):
                return False
            stack.extend(node.srcs)
        elif node.op in (Op.ELEMENTWISE, Op.CAST):
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
    """Each workgroup reduces ``Wx`` neighbouring outputs, ``Wy`` aligned blocks each: one dispatch.

    When a block would be longer than ``COLUMNS_SPLIT_ROWS`` (few outputs, long columns), the
    reduced axis is also split over workgroups into aligned spans of ``Wy`` blocks of
    ``SPLIT_BLOCK_ROWS``; their results, one row of partials per span, are reduced the same way
    by a further pass (one more dispatch; more only for extremely long columns).
    """
    tuning = tuning or tuning_for(root.device)
    outer = red.numel
    width, parts, pass_no = math.prod(red.srcs[0].shape[a] for a in red.arg.axes), None, 0
    group = GroupTemplate([])
    while True:
        lay = columns_layout(width, outer, tuning)
        splits = 1
        if lay.rows_per_block > COLUMNS_SPLIT_ROWS:
            lay = replace(lay, rows_per_block=max(SPLIT_BLOCK_ROWS, lay.per_chunk))
            splits = -(-width // (lay.blocks * lay.rows_per_block))
        name = kernel_name(root, f"C{pass_no}" if splits > 1 or pass_no else "C")
        L = Lowering(name, (lay.lanes, 1, 1), leaves, baked)
        r = _Reduction(L, red, "", Layout(lay.per_chunk, 1), 0, tuning)
        parts_out = None
        if splits > 1:
            parts_out = list(range(len(group.temps), len(group.temps) + len(r.acc_types)))
            group.temps += [(t, outer * splits) for t in r.acc_types]
        group.kernels.append(_columns_pass(L, r, root, lay, width, splits, parts, parts_out))
        if splits == 1:
            return group
        width, parts, pass_no = splits, parts_out, pass_no + 1


def _columns_pass(L: Lowering, r: _Reduction, root: Node, lay: ColumnsLayout, n: int, splits: int, parts, parts_out):
    """One kernel over ``n`` reduced elements per output, in ``splits`` spans (``parts``: read partials, not the source)."""
    red, outer = r.red, r.red.numel
    per, rows = lay.per_chunk, lay.rows_per_block
    span = lay.blocks * rows  # the rows of one workgroup
    chunks = rows // per
    depth = chunks.bit_length()  # stack slots: subtrees of 1, 2, 4, ... chunks
    nb = min(lay.blocks, lay.blocks_present(n))  # blocks of the fullest span
    static_full = n % rows == 0 and (n % span == 0 if splits > 1 else nb == lay.blocks)
    workgroups = -(-outer // lay.outputs)
    grid = fold_grid(workgroups * splits)
    assert r.width == 1  # the innermost axis is kept: no vectors along the reduced one
    tree = [L.kb.shared(f"blocks_{i}", t, lay.lanes) for i, t in enumerate(r.acc_types)] if nb > 1 else []
    refs = (
        [L.bind_buffer(t, "read", "part", BufferRole(BufferKind.TEMP, j)) for t, j in zip(r.acc_types, parts)]
        if parts
        else None
    )
    if parts_out:
        outs = [
            L.bind_buffer(t, "write", "part", BufferRole(BufferKind.TEMP, j)) for t, j in zip(r.acc_types, parts_out)
        ]
    else:
        out_ref = L.bind_buffer(root.dtype, "write", "out", BufferRole(BufferKind.OUT, root))
    width_shift = lay.outputs.bit_length() - 1
    with L.kb:
        lid = local_index()
        x = lid & _u32(lay.outputs - 1) if lay.outputs > 1 else _u32(0)
        y = lid >> _u32(width_shift) if width_shift else lid
        wg = linear_workgroup(grid) if workgroups * splits > 1 else None
        if splits == 1:  # workgroup wg takes outputs group g, and span s of the reduced axis
            g, s = wg, None
        else:
            g, s = (wg % _u32(workgroups), wg / _u32(workgroups)) if workgroups > 1 else (None, wg)
        if g is None:
            o = x
        else:
            o = g * _u32(lay.outputs) + x if lay.outputs > 1 else g
        inside = True if workgroups * lay.outputs == outer else o < _u32(outer)
        o_safe = o if inside is True else B.select(inside, o, _u32(0))  # loads stay in bounds; barriers stay uniform
        if refs is None:
            L.shared(("row", id(o_safe), red.shape), lambda: unravel(o_safe, red.shape))  # hoisted out of the loop
        base = s * _u32(span) if splits > 1 else None
        start = y * _u32(rows) if lay.blocks > 1 else None
        start = start if base is None else (base if start is None else base + start)
        start = _u32(0) if start is None else start

        def entries(first):
            rows_ = _Rows(first, per, n, static_full)
            if refs is None:
                return r.lane_values(o_safe, rows_)
            out = []
            for k, present in rows_.slots:  # partials are laid out (span, output): loads along outputs
                at = (k if present is True else B.select(present, k, _u32(0))) * _u32(outer) + o_safe
                out.append((_unpack(tuple(L.load(ref, t, at) for ref, t in zip(refs, r.acc_types))), present))
            return out

        def chunk_tree(c):
            first = start + c * _u32(per) if c is not None else start
            return _register_tree(entries(first), r.combine)[0], (True if static_full else first < _u32(n))

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
                present = _blocks_present(base, n, rows, nb, static_full or splits == 1)
                entries_ = []
                for b in range(nb):
                    v = _unpack(tuple(ref[x + _u32(b * lay.outputs)] for ref in tree))
                    entries_.append((v, True if b == 0 or isinstance(present, int) else _u32(b) < present))
                value = _register_tree(entries_, r.combine)[0]
            if parts_out:
                for ref, t, v in zip(outs, r.acc_types, _pack(value)):
                    L.store(ref, t, s * _u32(outer) + o if splits > 1 else o, v)
            else:
                L.fused[id(red)] = r.result(value)
                L.store(out_ref, root.dtype, o, L.value(root, Index(root.shape, lin=o)))
    return L.template(grid)


def _blocks_present(base, n: int, rows: int, nb: int, static: bool):
    """How many blocks of this workgroup's span hold elements (a Python int when it is the same for all)."""
    if static:
        return nb
    left = _u32(n) - base  # every span starts before n
    return B.select(left < _u32(nb * rows), (left + _u32(rows - 1)) / _u32(rows), _u32(nb))


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
