"""Reduction templates: the contract's pairwise tree, on any device, for any layout.

The tree is fixed by the reduced length: neighbours pair level by level in logical order, an
odd tail is carried, the identity never enters. Every aligned block of 2^k elements is a
subtree, which gives two exact ways to split the work:

- **rows**: one workgroup per output row. It walks the row in aligned chunks of
  ``B = W·E`` elements (E per lane in registers, then W lanes in shared memory), and
  combines the chunk results with a binary counter (a stack of complete subtrees in shared
  memory) folded right at the end — the same tree as pairing the chunk results level by
  level. Several reductions over the same rows run one after the other in one kernel, and
  a later one may use an earlier one's result (softmax's max, layer norm's mean).
- **blocks**: for a few long rows: every workgroup reduces one aligned block, and further
  passes (one dispatch each) reduce the block results.
"""

from __future__ import annotations

import math

from .graph import Node
from .ir import builder as B
from .ir import types as T
from .kernels import GroupTemplate, Index, Lowering, _u32, fold_grid, kernel_name, linear_workgroup, pow2ceil, unravel
from .ops.cast import cast_value, round_to_f16
from .ops.reduce import reduce_dtypes
from .ops.registry import REGISTRY

MAX_LANES = 64
PER_LANE = 4
ROWS_MODE_MIN_ROWS = 32  # fewer rows than this, and more than one chunk each: the blocks mode


def reduce_layout(n: int) -> tuple[int, int, int]:
    """(elements per lane E, lanes W, chunk B = W·E) for a reduced length ``n``; all powers of two."""
    per_lane = min(PER_LANE, pow2ceil(n))
    lanes = min(MAX_LANES, pow2ceil(-(-n // per_lane)))
    return per_lane, lanes, per_lane * lanes


class _Reduction:
    """What one reduce node needs: its combine, accumulator types, sizes, and how to load row o, position k."""

    def __init__(self, L: Lowering, red: Node, tag: str, lanes: int, depth: int):
        self.red, self.L = red, L
        self.name, self.axes = red.arg
        self.src = red.srcs[0]
        self.acc, _ = reduce_dtypes(self.name, self.src.dtype)
        self.is_arg = self.name in ("argmax", "argmin")
        self.combine = REGISTRY[self.name].combine
        self.acc_types = (self.acc, T.int64) if self.is_arg else (self.acc,)
        self.red_sizes = [self.src.shape[a] for a in self.axes]
        self.n = math.prod(self.red_sizes)
        self.tree = [L.kb.shared(f"tree{tag}_{i}", t, lanes) for i, t in enumerate(self.acc_types)] if lanes > 1 else []
        self.stack = [L.kb.shared(f"stack{tag}_{i}", t, depth) for i, t in enumerate(self.acc_types)] if depth else []

    def load(self, o, k, valid):
        kept = [d for d in range(len(self.src.shape)) if d not in self.axes]
        o_multi, k_multi = unravel(o, self.red.shape), unravel(k, self.red_sizes)
        multi = [None] * len(self.src.shape)
        for d in kept:
            multi[d] = o_multi[d]
        for a, kv in zip(self.axes, k_multi):
            multi[a] = kv
        v = self.L.value(self.src, Index(self.src.shape, multi=tuple(multi), valid=valid))
        v = cast_value(v, self.src.dtype, self.acc)
        return (v, B.convert(k, T.int64)) if self.is_arg else v

    def result(self, value):
        """The reduce node's value (compute representation) from the tree's accumulator(s)."""
        if self.is_arg:
            return value[1]
        if self.acc is T.float32 and self.red.dtype is T.float16:
            return round_to_f16(value)
        return value


def _pack(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _unpack(values: tuple):
    return values if len(values) > 1 else values[0]


def _select(cond, a, b):
    return _unpack(tuple(B.select(cond, x, y) for x, y in zip(_pack(a), _pack(b))))


def _read(refs, index):
    return _unpack(tuple(ref[index] for ref in refs))


def _block_tree(lanes: int, per_lane: int, start, n: int, load, combine, tree) -> object:
    """The subtree of the aligned block starting at ``start`` (a Value); every lane gets it."""
    lid = B.local_id(0)
    lane_start = start + lid * _u32(per_lane) if lanes > 1 else start
    pairs = []
    for e in range(per_lane):
        k = lane_start + _u32(e) if e else lane_start
        present = k < _u32(n)
        pairs.append((load(B.select(present, k, _u32(0)), present), present))
    while len(pairs) > 1:  # pairs in registers; presence is a prefix
        pairs = [(_select(pb, combine(a, b), a), pa) for (a, pa), (b, pb) in zip(pairs[0::2], pairs[1::2])]
    value = pairs[0][0]
    if lanes == 1:
        return value
    for ref, v in zip(tree, _pack(value)):
        ref[lid] = v
    B.barrier()
    count = _u32(n) - start  # elements left from this block on (≥ 1)
    block = lanes * per_lane
    m = B.select(count < _u32(block), (count + _u32(per_lane - 1)) / _u32(per_lane), _u32(lanes))
    half = lanes
    while half > 1:
        half //= 2
        j = B.select(lid < _u32(half), lid, _u32(0))
        left, right = _read(tree, j * 2), _read(tree, j * 2 + 1)
        merged = _select(j * 2 + 1 < m, combine(left, right), left)
        B.barrier()
        with B.if_(lid < _u32(half)):
            for ref, v in zip(tree, _pack(merged)):
                ref[lid] = v
        B.barrier()
        m = (m + 1) >> 1
    return _read(tree, _u32(0))


def _row_tree(r: _Reduction, o, lanes: int, per_lane: int, nchunks: int):
    """The whole row's tree: chunk subtrees combined by a binary counter, then folded right."""

    def load(k, valid):
        return r.load(o, k, valid)

    block = lanes * per_lane
    if nchunks == 1:
        return _block_tree(lanes, per_lane, _u32(0), r.n, load, r.combine, r.tree)
    depth = nchunks.bit_length()
    lid = B.local_id(0)

    def chunk(c, d):
        p = _block_tree(lanes, per_lane, c * _u32(block), r.n, load, r.combine, r.tree)
        t = c + 1
        for _ in range(depth):  # merge while the count of chunks seen ends in a 0 bit
            even = B.eq(t & 1, _u32(0))
            left = _read(r.stack, B.select(even, d - 1, _u32(0)))
            p = _select(even, r.combine(left, p), p)
            d = B.select(even, d - 1, d)
            t = B.select(even, t >> 1, t)
        B.barrier()
        with B.if_(B.eq(lid, _u32(0))):
            for ref, v in zip(r.stack, _pack(p)):
                ref[d] = v
        B.barrier()
        return d + 1

    (d,) = B.loop(_u32(0), _u32(nchunks), _u32(1), (_u32(0),), chunk)
    result = _read(r.stack, d - 1)
    for i in range(depth - 1):  # fold the stack right: lower blocks on the left
        valid = _u32(i + 2) <= d
        left = _read(r.stack, B.select(valid, d - _u32(i + 2), _u32(0)))
        result = _select(valid, r.combine(left, result), result)
    return result


def lower_rows(root: Node, chain: list[Node], stored: list[Node], leaves, baked=frozenset()) -> GroupTemplate:
    """One workgroup per row computes every reduction of ``chain`` in order, then ``root``.

    ``stored`` are chain members written to their own output buffers (used outside the kernel).
    """
    last = chain[-1]
    n = math.prod(last.srcs[0].shape[a] for a in last.arg[1])
    per_lane, lanes, block = reduce_layout(n)
    nchunks = -(-n // block)
    outer = last.numel
    grid = fold_grid(outer)
    L = Lowering(kernel_name(root, "R"), (lanes, 1, 1), leaves, baked)
    depth = nchunks.bit_length() if nchunks > 1 else 0
    reductions = [_Reduction(L, red, str(i), lanes, depth) for i, red in enumerate(chain)]
    out_ref = L.bind_buffer(root.dtype, "write", "out", ("out", root))
    stored_refs = [(red, L.bind_buffer(red.dtype, "write", "out", ("out", red))) for red in stored]
    with L.kb:
        o = linear_workgroup(grid)
        with B.if_(o < _u32(outer)):  # uniform per workgroup, so the barriers inside are legal
            for r in reductions:
                L.fused[id(r.red)] = r.result(_row_tree(r, o, lanes, per_lane, nchunks))
            with B.if_(B.eq(B.local_id(0), _u32(0))):
                for red, ref in stored_refs:
                    L.store(ref, red.dtype, o, L.fused[id(red)])
                L.store(out_ref, root.dtype, o, L.value(root, Index(root.shape, lin=o)))
    return GroupTemplate([L.template(grid)])


def lower_blocks(root: Node, red: Node, leaves, baked=frozenset()) -> GroupTemplate:
    """Passes over aligned blocks: each pass's block results are the next pass's elements."""
    group = GroupTemplate([])
    width, pass_no, parts = math.prod(red.srcs[0].shape[a] for a in red.arg[1]), 0, None
    outer = red.numel
    while True:
        per_lane, lanes, block = reduce_layout(width)
        nblocks = -(-width // block)
        L = Lowering(kernel_name(root, f"R{pass_no}_"), (lanes, 1, 1), leaves, baked)
        r = _Reduction(L, red, "", lanes, 0)
        if parts is None:
            load_row = r.load
        else:
            refs = [L.bind_buffer(t, "read", "part", ("temp", j)) for t, j in zip(r.acc_types, parts)]

            def load_row(o, k, valid, refs=refs, width=width, r=r, L=L):
                at = o * _u32(width) + k
                return _unpack(tuple(L.load(ref, t, at) for ref, t in zip(refs, r.acc_types)))

        if nblocks == 1:
            out = L.bind_buffer(root.dtype, "write", "out", ("out", root))
        else:
            first = len(group.temps)
            group.temps += [(t, outer * nblocks) for t in r.acc_types]
            parts = list(range(first, len(group.temps)))
            outs = [L.bind_buffer(t, "write", "part", ("temp", j)) for t, j in zip(r.acc_types, parts)]
        grid = fold_grid(outer * nblocks)
        with L.kb:
            wg = linear_workgroup(grid)
            with B.if_(wg < _u32(outer * nblocks)):
                o, blk = (wg / _u32(nblocks), wg % _u32(nblocks)) if nblocks > 1 else (wg, _u32(0))

                def load(k, valid, o=o, load_row=load_row):
                    return load_row(o, k, valid)

                value = _block_tree(lanes, per_lane, blk * _u32(block), width, load, r.combine, r.tree)
                with B.if_(B.eq(B.local_id(0), _u32(0))):
                    if nblocks == 1:
                        L.fused[id(red)] = r.result(value)
                        L.store(out, root.dtype, o, L.value(root, Index(root.shape, lin=o)))
                    else:
                        at = o * _u32(nblocks) + blk
                        for ref, t, v in zip(outs, r.acc_types, _pack(value)):
                            L.store(ref, t, at, v)
        group.kernels.append(L.template(grid))
        if nblocks == 1:
            return group
        width, pass_no = nblocks, pass_no + 1


def choose_mode(red: Node, chain_length: int) -> str:
    """``rows`` unless a single reduction has few long rows (then ``blocks`` spreads them over the device)."""
    n = math.prod(red.srcs[0].shape[a] for a in red.arg[1])
    if chain_length > 1 or n <= reduce_layout(n)[2] or red.numel >= ROWS_MODE_MIN_ROWS:
        return "rows"
    return "blocks"
