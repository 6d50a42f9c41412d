"""Reduction templates: the contract's pairwise tree, on any device, for any layout.

The tree is fixed by the reduced length: neighbours pair level by level in logical order, an
odd tail is carried, the identity never enters. Every aligned block of 2^k elements is a
subtree, which gives exact ways to split the work:

- a **chunk** of ``B = W·E`` elements is reduced by ``W`` lanes: each lane reduces ``E``
  consecutive elements in registers (read as vectors where the layout allows), then the
  lanes' results pair up level by level — the first levels by ``shuffle_xor`` inside a
  subgroup (lanes 2j and 2j+1 are partners at the first level, and the lower lane's value
  always goes on the left), the rest through shared memory.
- **rows**: one workgroup per output row. It walks the row chunk by chunk and combines the
  chunk results with a binary counter (a stack of complete subtrees in shared memory) folded
  right at the end — the same tree as pairing the chunk results level by level. Several
  reductions over the same rows run one after the other in one kernel, and a later one may
  use an earlier one's result (softmax's max, layer norm's mean); when the whole row fits in
  one chunk they share its loads, so the row is read from memory once, and the kernel writes
  the row back in contiguous vectors (``_store_row``).
- **blocks**: for a few long rows: every workgroup reduces one aligned chunk, and a further
  pass (one dispatch) reduces the chunk results, walking them in chunks; more passes only
  when those are too many for one workgroup. "A few" is up to ``Tuning.reduce_split_rows``
  rows when each is at least ``SPLIT_MIN_CHUNKS`` chunks long (``choose_mode``): batch norm's
  per-channel sums of an (N, C, H, W) batch over (0, 2, 3), C rows of N·H·W whose reduced
  indices are not one contiguous run, load through the same index arithmetic as the rows mode.

Sizes come from the device's ``Tuning`` (vkml/kernels/tuning.py); none of them changes bits.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

from ..graph.node import Node, Op
from ..ir import builder as B
from ..ir import types as T
from ..ops.cast import cast_value, narrow
from ..ops.reduce import reduce_dtypes
from .lowering import (
    BufferKind,
    BufferRole,
    GroupMode,
    GroupTemplate,
    Index,
    Lowering,
    _grouped,
    _strides,
    _u32,
    fold_grid,
    is_row_broadcast,
    kernel_name,
    linear_workgroup,
    local_index,
    pow2ceil,
    unravel,
)
from .tuning import Tuning, tuning_for

ROWS_MODE_MIN_ROWS = 32  # fewer rows than this, and more than one chunk each: the blocks mode
# Fewer rows than Tuning.reduce_split_rows, and at least this many chunks each: the blocks mode too.
# Shorter rows gain little from more workgroups next to the cost of a second dispatch.
SPLIT_MIN_CHUNKS = 4
FINAL_PASS_MAX_CHUNKS = 64  # a blocks-mode pass over at most this many chunks per row is the last
# At most this many subgroup results: every lane reads and combines them itself, instead of
# halving them in shared memory (two barriers a level). A one-instruction combine (sum, prod)
# would afford 16 on 512-lane rows; a NaN-propagating max of ~10 instructions would not, so
# the bound suits both (bench/tune_kernels.py; figures in docs/benchmarks.md).
SERIAL_SHARED_MAX = 8
SERIAL_SHARED_MAX_CHEAP = 16  # for an OpDef.cheap_combine


@dataclass(frozen=True)
class Layout:
    """``lanes`` invocations, ``per_lane`` consecutive elements each: chunks of ``block``."""

    per_lane: int
    lanes: int

    @property
    def block(self) -> int:
        return self.per_lane * self.lanes


def reduce_layout(n: int, tuning: Tuning, whole_row: bool = False) -> Layout:
    """The chunk layout for a reduced length ``n``; ``whole_row``: grow ``per_lane`` so one chunk holds ``n``.

    >>> reduce_layout(1000, kernels_tuning.CPU_TUNING)
    Layout(per_lane=16, lanes=64)
    """
    per_lane = min(tuning.reduce_per_lane, pow2ceil(n))
    most = (tuning.row_lanes or tuning.reduce_lanes) if whole_row else tuning.reduce_lanes
    lanes = min(most, pow2ceil(-(-n // per_lane)))
    if whole_row:
        while per_lane * lanes < n and per_lane < tuning.reduce_row_per_lane:
            per_lane *= 2
    return Layout(per_lane, lanes)


def _pack(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _unpack(values: tuple):
    return values if len(values) > 1 else values[0]


def _select(cond, a, b):
    """``a`` where ``cond``; ``cond`` may be the Python ``True`` of a statically present operand."""
    if cond is True:
        return a
    return _unpack(tuple(B.select(cond, x, y) for x, y in zip(_pack(a), _pack(b))))


def _read(refs, index):
    return _unpack(tuple(ref[index] for ref in refs))


def _as_value(x):
    return _u32(x) if isinstance(x, int) else x


def _register_tree(entries: list, combine):
    """Pair ``(value, present)`` entries level by level; presence is a prefix of the entries."""
    while len(entries) > 1:
        merged = []
        for (a, pa), (b, pb) in zip(entries[0::2], entries[1::2]):
            both = combine(a, b)
            merged.append((both if pb is True or pb is pa else _select(pb, both, a), pa))
        if len(entries) % 2:
            merged.append(entries[-1])
        entries = merged
    return entries[0]


class _Lane:
    """The consecutive elements one lane covers in the chunk starting at ``chunk · block``.

    ``slots`` are ``(position, present)``: element indices, or with ``width`` > 1 indices of
    aligned groups of ``width`` elements. ``present`` is True when the layout guarantees it.
    Reductions that share a ``_Lane`` share its index objects, and so their loads.
    """

    def __init__(self, chunk, layout: Layout, n: int, width: int):
        self.layout, self.n, self.width = layout, n, width
        count = layout.per_lane // width
        start = chunk * _u32(layout.block // width) if chunk is not None else None
        first = local_index() * _u32(count) if layout.lanes > 1 else None
        first = start if first is None else (first if start is None else start + first)
        static_full = n % layout.block == 0 or (chunk is None and n >= layout.block)
        self.first = first  # slot j is first + j (None: j)
        self.slots = []
        for j in range(count):
            at = first if j == 0 else (first + _u32(j) if first is not None else _u32(j))
            at = at if at is not None else _u32(0)
            self.slots.append((at, True if static_full else at < _u32(n // width)))
        self.indices: dict = {}

    def lanes_present(self, chunk) -> int | object:
        """How many lanes hold at least one element of this chunk (a Value, or a Python int)."""
        per, lanes, block = self.layout.per_lane, self.layout.lanes, self.layout.block
        if self.n % block == 0:
            return lanes
        if chunk is None:
            return min(lanes, -(-self.n // per))
        left = _u32(self.n) - chunk * _u32(block)
        return B.select(left < _u32(block), (left + _u32(per - 1)) / _u32(per), _u32(lanes))


class _Reduction:
    """What one reduce node needs: its combine, accumulator types, sizes, and how to load a lane's elements."""

    def __init__(
        self, L: Lowering, red: Node, tag: str, layout: Layout, depth: int, tuning: Tuning, spread: bool = False
    ):
        self.red, self.L = red, L
        opdef, self.axes = red.arg
        self.src = red.srcs[0]
        self.acc, _ = reduce_dtypes(opdef.name, self.src.dtype)
        self.is_arg = opdef.arg
        self.combine = opdef.combine
        self.serial_max = SERIAL_SHARED_MAX_CHEAP if opdef.cheap_combine else SERIAL_SHARED_MAX
        self.acc_types = (self.acc, T.int64) if self.is_arg else (self.acc,)
        key = opdef.int_key
        self.key = key if key is not None and self.acc is T.float32 and not self.is_arg else None
        if self.key is not None:  # the tree pairs integer keys (ops/reduce.py IntKey)
            self.acc_types = (self.key.dtype,)
        self.red_sizes = [self.src.shape[a] for a in self.axes]
        self.n = math.prod(self.red_sizes)
        self.layout = layout
        wide = any(t in (T.float16, T.float64, T.int64) for t in self.acc_types)
        self.subgroup = min(tuning.subgroup, layout.lanes) if tuning.wide_shuffles or not wide else 1
        groups = layout.lanes // self.subgroup
        self.tree = (
            [L.kb.shared(f"tree{tag}_{i}", t, groups) for i, t in enumerate(self.acc_types)] if groups > 1 else []
        )
        self.stack = [L.kb.shared(f"stack{tag}_{i}", t, depth) for i, t in enumerate(self.acc_types)] if depth else []
        ndim = len(self.src.shape)
        self.trailing = tuple(self.axes) == tuple(range(ndim - len(self.axes), ndim))
        w = tuning.vector
        # Vectors where a lane's aligned groups of w reduced indices are w neighbours in the source: the
        # innermost axis reduced, its length a multiple of w (batch norm's (N, H, W) of an NCHW batch too;
        # ``spread``: also where the kept axes sit between reduced ones, for the blocks mode)
        vectors = self.trailing and self.n % w == 0 or spread and ndim - 1 in self.axes and self.red_sizes[-1] % w == 0
        self.width = w if w > 1 and vectors and layout.per_lane % w == 0 else 1

    def index(self, o, lane: _Lane, j: int, c: int) -> Index:
        """The position of element ``c`` of slot ``j`` of ``lane`` in row ``o`` (one object per position)."""
        key = (id(o), j, c)
        if key not in lane.indices:
            at, present = lane.slots[j]
            lane.indices[key] = self._index(o, at, c, None if present is True else present, lane, j)
        return lane.indices[key]

    def lane_values(self, o, lane: _Lane) -> list:
        """``(value, present)`` for each element of ``lane``, in order, for output row ``o``."""
        out = []
        for j, (at, present) in enumerate(lane.slots):
            for c in range(self.width):
                v = self.L.value(self.src, self.index(o, lane, j, c))
                v = cast_value(v, self.src.dtype, self.acc)
                if self.key is not None:
                    v = self.key.lift(v)
                if self.is_arg:
                    k = at * _u32(self.width) + _u32(c) if self.width > 1 else at
                    v = (v, B.convert(k, T.int64))
                out.append((v, present))
        return out

    def _index(self, o, at, c: int, valid, lane: _Lane, j: int) -> Index:
        kept = [d for d in range(len(self.src.shape)) if d not in self.axes]
        o_multi = self.L.shared(("row", id(o), self.red.shape), lambda: unravel(o, self.red.shape))
        if self.width > 1 and not self.trailing:  # kept axes among the reduced: the source's own strides

            def spread_group():
                sizes = self.red_sizes[:-1] + [self.red_sizes[-1] // self.width]
                multi = [None] * len(self.src.shape)
                for d in kept:
                    multi[d] = o_multi[d]
                for a, kv in zip(self.axes, unravel(at, sizes)):
                    multi[a] = kv
                q = None
                for digit, stride in zip(multi, _strides(_grouped(self.src.shape, self.width))):
                    if stride:
                        term = digit * _u32(stride) if stride > 1 else digit
                        q = term if q is None else q + term
                return q if q is not None else _u32(0), tuple(multi)

            q, in_groups = self.L.shared(("spread group", id(o), id(at), self.n, self.width), spread_group)
            return Index(
                self.src.shape, valid=valid, group=(q, c, self.width), group_multi=in_groups, row=(o, self.red)
            )
        if self.width > 1:  # the reduced dims are the last ones: row o starts at o * n

            def lane_start():  # where the lane's run starts in the whole tensor, once per row
                row_start = o * _u32(self.n // self.width)
                return row_start if lane.first is None else row_start + lane.first

            def group():  # one index value per vector: codegen loads a vector once per index
                sizes = self.red_sizes[:-1] + [self.red_sizes[-1] // self.width]
                start = self.L.shared(("lane start", id(o), id(lane.first), self.n, self.width), lane_start)
                q = start + _u32(j) if j else start
                return q, o_multi[: len(kept)] + unravel(at, sizes)

            q, in_groups = self.L.shared(("group", id(o), id(at), self.n, self.width), group)
            return Index(
                self.src.shape, valid=valid, group=(q, c, self.width), group_multi=in_groups, row=(o, self.red)
            )
        k = at if valid is None else B.select(valid, at, _u32(0))
        k_multi = unravel(k, self.red_sizes)
        multi = [None] * len(self.src.shape)
        for d in kept:
            multi[d] = o_multi[d]
        for a, kv in zip(self.axes, k_multi):
            multi[a] = kv
        return Index(self.src.shape, multi=tuple(multi), valid=valid, row=(o, self.red))

    def result(self, value):
        """The reduce node's value (compute representation) from the tree's accumulator(s)."""
        if self.is_arg:
            return value[1]
        if self.key is not None:
            value = self.key.lower(value)
        if self.acc is not self.red.dtype:  # float16/bfloat16 round once, after the whole tree
            return narrow(value, self.red.dtype)
        return value


def _chunk_tree(entries: list, present_lanes, r: _Reduction) -> object:
    """The subtree of one chunk from each lane's ``(value, present)`` entries; every lane gets it."""
    layout, subgroup, combine, tree = r.layout, r.subgroup, r.combine, r.tree
    value, _ = _register_tree(entries, combine)
    lanes = layout.lanes
    if lanes == 1:
        return value
    lid = local_index()
    m = present_lanes
    bit = 1
    while bit < subgroup:  # lanes l and l ^ bit are the two halves of one node of this level
        partner = _unpack(tuple(B.shuffle_xor(v, bit) for v in _pack(value)))
        is_left = B.eq(lid & _u32(bit), _u32(0))
        left, right = _select(is_left, value, partner), _select(is_left, partner, value)
        present = True  # the right half: present when its first lane is
        if not (isinstance(m, int) and m == lanes):
            present = (lid | _u32(bit)) & _u32(~(bit - 1) & 0xFFFFFFFF) < _as_value(m)
        value = _select(present, combine(left, right), left)
        bit *= 2
    if subgroup >= lanes:
        return value
    groups = lanes // subgroup
    shift = subgroup.bit_length() - 1
    if shift:  # one lane per subgroup (they all hold its result) writes it
        with B.if_(B.eq(lid & _u32(subgroup - 1), _u32(0))):
            for ref, v in zip(tree, _pack(value)):
                ref[lid >> _u32(shift)] = v
    else:
        for ref, v in zip(tree, _pack(value)):
            ref[lid] = v
    B.barrier()
    # subgroup results present: ceil(m / subgroup)
    if isinstance(m, int):
        m = -(-m // subgroup)
    else:
        m = (m + _u32(subgroup - 1)) >> _u32(shift) if shift else m
    while groups > r.serial_max:  # halve in shared memory: lane j pairs 2j and 2j+1
        groups //= 2
        j = B.select(lid < _u32(groups), lid, _u32(0))
        left, right = _read(tree, j * _u32(2)), _read(tree, j * _u32(2) + _u32(1))
        present = True if isinstance(m, int) and m == 2 * groups else j * _u32(2) + _u32(1) < _as_value(m)
        merged = _select(present, combine(left, right), left)
        B.barrier()
        with B.if_(lid < _u32(groups)):
            for ref, v in zip(tree, _pack(merged)):
                ref[lid] = v
        B.barrier()
        m = -(-m // 2) if isinstance(m, int) else (m + _u32(1)) >> _u32(1)
    full = isinstance(m, int) and m == groups
    last = [(_read(tree, _u32(g)), True if full or g == 0 else _u32(g) < _as_value(m)) for g in range(groups)]
    return _register_tree(last, combine)[0]


def _range_tree(r: _Reduction, load_lane, nchunks: int, base=None, lane=None):
    """The tree over chunk ``base`` (None: 0), or over chunks 0 … ``nchunks`` - 1 of the row.

    ``load_lane(lane)`` gives a lane's entries. One chunk is a plain chunk tree (``lane`` may
    be shared between reductions); more are combined by a binary counter in shared memory,
    then folded right.
    """
    layout = r.layout
    if nchunks == 1:
        lane = lane or _Lane(base, layout, r.n, r.width)
        return _chunk_tree(load_lane(lane), lane.lanes_present(base), r)
    depth = nchunks.bit_length()
    lid = local_index()

    def chunk(c, d):
        lane = _Lane(c, layout, r.n, r.width)
        p = _chunk_tree(load_lane(lane), lane.lanes_present(c), r)
        t = c + 1
        for _ in range(depth):  # merge while the count of chunks seen ends in a 0 bit
            even = B.eq(t & 1, _u32(0))
            left = _read(r.stack, B.select(even, d - 1, _u32(0)))
            p = _select(even, r.combine(left, p), p)
            d = B.select(even, d - 1, d)
            t = B.select(even, t >> 1, t)
        B.barrier()  # every lane has read the stack and the chunk's shared tree
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


def row_in_one_chunk(red: Node, tuning: Tuning) -> bool:
    """Whether a rows kernel holds a whole row of ``red`` in its lanes' registers (one chunk)."""
    n = math.prod(red.srcs[0].shape[a] for a in red.arg.axes)
    return n <= reduce_layout(n, tuning, whole_row=True).block


def lower_rows(
    root: Node,
    chain: list[Node],
    stored: list[Node],
    leaves,
    baked=frozenset(),
    tuning: Tuning | None = None,
    whole_rows: bool = False,
) -> GroupTemplate:
    """One workgroup per row computes every reduction of ``chain`` in order, then ``root``.

    ``stored`` are chain members written to their own output buffers (used outside the kernel).
    ``whole_rows``: ``root`` has the shape of the rows (softmax's quotient, layer norm's output)
    and reads the chain's results broadcast over them; the row must fit one chunk. Each lane
    then computes ``root`` at its own elements from the values it loaded for the reductions (x
    is read once, and what the reductions computed from it, exp(x - max), is reused).
    """
    tuning = tuning or tuning_for(root.device)
    last = chain[-1]
    n = math.prod(last.srcs[0].shape[a] for a in last.arg.axes)
    layout = reduce_layout(n, tuning, whole_row=True)
    nchunks = -(-n // layout.block)
    if whole_rows and (nchunks > 1 or root.shape != last.srcs[0].shape):
        raise AssertionError("whole_rows needs a row in one chunk and a root of the rows' shape")
    outer = last.numel
    grid = fold_grid(outer)
    L = Lowering(kernel_name(root, "R"), (layout.lanes, 1, 1), leaves, baked)
    depth = nchunks.bit_length() if nchunks > 1 else 0
    reductions = [_Reduction(L, red, str(i), layout, depth, tuning) for i, red in enumerate(chain)]
    out_ref = L.bind_buffer(root.dtype, "write", "out", BufferRole(BufferKind.OUT, root))
    stored_refs = [(red, L.bind_buffer(red.dtype, "write", "out", BufferRole(BufferKind.OUT, red))) for red in stored]
    with L.kb:
        o = linear_workgroup(grid)
        with B.if_(o < _u32(outer)):  # uniform per workgroup, so the barriers inside are legal
            lanes: dict[int, _Lane] = {}  # one chunk per row: reductions with one lane layout share loads
            for r in reductions:
                shared = None
                if nchunks == 1:
                    if r.width not in lanes:
                        lanes[r.width] = _Lane(None, layout, n, r.width)
                    shared = lanes[r.width]

                def load_lane(lane, r=r):
                    return r.lane_values(o, lane)

                L.fused[id(r.red)] = r.result(_range_tree(r, load_lane, nchunks, lane=shared))
            if whole_rows:
                computed = frozenset(id(r.src) for r in reductions)
                _store_row(L, root, out_ref, reductions[-1], o, lanes[reductions[-1].width], tuning, computed)
            with B.if_(B.eq(local_index(), _u32(0))):
                for red, ref in stored_refs:
                    L.store(ref, red.dtype, o, L.fused[id(red)])
                if not whole_rows:
                    L.store(out_ref, root.dtype, o, L.value(root, Index(root.shape, lin=o)))
    return GroupTemplate([L.template(grid)])


def _store_row(
    L: Lowering, root: Node, out_ref, r: _Reduction, o, lane: _Lane, tuning: Tuning, computed: frozenset
) -> None:
    """``root`` over row ``o``, stored (as vectors where ``r`` loaded vectors), one of three ways.

    A lane's own run of elements would make each vector store of a subgroup write 16 bytes of
    every 64, so where every lane holds a full run of vectors the stores are contiguous instead:
    ``root`` is computed again at contiguous positions where its per-element work is cheap
    (layer norm: ``_store_row_reloaded``), else staged in shared memory where it fits and is
    cheap past the values the reductions ``computed`` (softmax's exp(x - max), the sum's source:
    ``_store_row_staged``). Otherwise each lane stores its own elements,
    computed in the block where the reductions loaded the row, so every load and subexpression
    the reductions computed is reused; only the stores sit under ``present``.
    """
    full = r.width == 4 and all(present is True for _, present in lane.slots)
    if full and _cheap_per_element(L, root, r.red):
        _store_row_reloaded(L, root, out_ref, r, o)
        return
    results = []
    for j, (_, present) in enumerate(lane.slots):
        positions = [r.index(o, lane, j, c) for c in range(r.width)]
        results.append((positions, present, [L.value(root, p) for p in positions]))
    if full and _cheap_per_element(L, root, r.red, computed) and _stages_row(r, results, tuning):
        _store_row_staged(L, root, out_ref, r, o, [v for _, _, values in results for v in values])
        return
    for positions, present, values in results:
        with B.if_(present) if present is not True else contextlib.nullcontext():
            if r.width > 1:
                L.store_vector(out_ref, root.dtype, positions[0].group[0], values)
            else:
                L.store(out_ref, root.dtype, positions[0].lin, values[0])


def lower_blocks(root: Node, red: Node, leaves, baked=frozenset(), tuning: Tuning | None = None) -> GroupTemplate:
    """Passes over aligned ranges of chunks: each pass's results are the next pass's elements.

    A pass gives each workgroup one chunk, except the last, whose single workgroup per row
    walks all remaining chunks (at most ``FINAL_PASS_MAX_CHUNKS``).
    """
    tuning = tuning or tuning_for(root.device)
    group = GroupTemplate([])
    width, pass_no, parts = math.prod(red.srcs[0].shape[a] for a in red.arg.axes), 0, None
    outer = red.numel
    while True:
        layout = reduce_layout(width, tuning)
        nchunks = -(-width // layout.block)
        final = nchunks <= FINAL_PASS_MAX_CHUNKS and pass_no > 0 or nchunks == 1
        per_group = nchunks if final else 1
        nblocks = -(-nchunks // per_group)
        L = Lowering(kernel_name(root, f"R{pass_no}_"), (layout.lanes, 1, 1), leaves, baked)
        depth = per_group.bit_length() if per_group > 1 else 0
        r = _Reduction(L, red, "", layout, depth, tuning, spread=True)
        if parts is not None:  # later passes read the previous pass's partial results
            r.n, r.width = width, 1
            refs = [
                L.bind_buffer(t, "read", "part", BufferRole(BufferKind.TEMP, j)) for t, j in zip(r.acc_types, parts)
            ]
        if nblocks == 1:
            out = L.bind_buffer(root.dtype, "write", "out", BufferRole(BufferKind.OUT, root))
        else:
            first = len(group.temps)
            group.temps += [(t, outer * nblocks) for t in r.acc_types]
            parts_out = list(range(first, len(group.temps)))
            outs = [
                L.bind_buffer(t, "write", "part", BufferRole(BufferKind.TEMP, j))
                for t, j in zip(r.acc_types, parts_out)
            ]
        grid = fold_grid(outer * nblocks)
        with L.kb:
            wg = linear_workgroup(grid)
            with B.if_(wg < _u32(outer * nblocks)):
                if nblocks == 1:
                    o, blk = wg, None
                else:  # workgroup wg reduces block blk of row o
                    o, blk = (wg / _u32(nblocks), wg % _u32(nblocks)) if outer > 1 else (_u32(0), wg)

                def load_lane(lane, o=o, r=r, L=L, refs=refs if parts is not None else None, width=width):
                    if refs is None:
                        return r.lane_values(o, lane)
                    out = []
                    for at, present in lane.slots:
                        k = at if present is True else B.select(present, at, _u32(0))
                        values = tuple(L.load(ref, t, o * _u32(width) + k) for ref, t in zip(refs, r.acc_types))
                        out.append((_unpack(values), present))
                    return out

                value = _range_tree(r, load_lane, per_group, base=blk if per_group == 1 else None)
                with B.if_(B.eq(local_index(), _u32(0))):
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
        width, pass_no, parts = nblocks, pass_no + 1, parts_out


def choose_mode(red: Node, chain_length: int, tuning: Tuning | None = None) -> GroupMode:
    """``ROWS`` unless a single reduction has few long rows (then ``BLOCKS`` spreads them over the device).

    Few: under ``ROWS_MODE_MIN_ROWS``, or under ``tuning.reduce_split_rows`` with rows of at least
    ``SPLIT_MIN_CHUNKS`` chunks (``x.sum((0, 2, 3))`` of an (N, C, H, W) batch: C outputs of N·H·W
    each). Both modes give the same bits.

    >>> choose_mode(lazy.reduce("sum", x.node, (0, 2, 3), False), 1)  # x: (64, 64, 56, 56)  # doctest: +SKIP
    <GroupMode.BLOCKS: 'blocks'>
    """
    tuning = tuning or tuning_for(red.device)
    if chain_length > 1:
        return GroupMode.ROWS
    n = math.prod(red.srcs[0].shape[a] for a in red.arg.axes)
    if n > reduce_layout(n, tuning).block and red.numel < ROWS_MODE_MIN_ROWS or splits_rows(red, tuning):
        return GroupMode.BLOCKS
    return GroupMode.ROWS


def splits_rows(red: Node, tuning: Tuning | None = None) -> bool:
    """Whether ``red`` has at least ``ROWS_MODE_MIN_ROWS`` but fewer than ``tuning.reduce_split_rows`` rows,
    each at least ``SPLIT_MIN_CHUNKS`` chunks long: the blocks mode then fills the device, where one
    workgroup a row would not (the scheduler then starts no chain of reductions at ``red``)."""
    tuning = tuning or tuning_for(red.device)
    if not ROWS_MODE_MIN_ROWS <= red.numel < tuning.reduce_split_rows:
        return False
    n = math.prod(red.srcs[0].shape[a] for a in red.arg.axes)
    return -(-n // reduce_layout(n, tuning).block) >= SPLIT_MIN_CHUNKS


def _stages_row(r: _Reduction, results, tuning: Tuning) -> bool:
    """Whether ``_store_row_staged`` can store this row of full lanes: float32 values, room in shared memory."""
    return (
        r.n <= tuning.staged_row_max
        and r.layout.per_lane <= 32  # p // 32 is then the same for a lane's whole run
        and all(v.dtype is T.float32 for _, _, values in results for v in values)
    )


def _store_row_staged(L: Lowering, root: Node, out_ref, r: _Reduction, o, values: list) -> None:
    """Store a row whose lanes hold runs of consecutive elements as coalesced vectors, through shared memory.

    A lane's run of ``per_lane`` elements makes each vector store of a subgroup write 16 bytes
    of every 64 (for 16 a lane); staged in shared memory, store ``j`` of lane ``i`` writes vector
    ``j * lanes + i`` instead: one contiguous run a subgroup. Element ``p`` of the row sits at
    ``p + p // 32`` so that neither the lanes' writes nor their reads share a bank.
    """
    per, n = r.layout.per_lane, r.n
    staged = L.kb.shared("row_out", T.float32, n + n // 32)
    lid = local_index()
    first = lid * _u32(per)
    write_base = first + (first >> _u32(5))  # per_lane <= 32 divides 32: p // 32 is the run's
    for q, v in enumerate(values):
        staged[write_base + _u32(q)] = v
    B.barrier()
    for vector, q in _contiguous_vectors(r, o, lid):
        p0 = vector * _u32(4)
        read_base = p0 + (p0 >> _u32(5))
        L.store_vector(out_ref, root.dtype, q, [staged[read_base + _u32(c)] for c in range(4)])


def _contiguous_vectors(r: _Reduction, o, lid):
    """``(vector in the row, vector in the output)`` for each vector lane ``lid`` stores of row ``o``: lane
    ``i``'s ``j``-th is the row's ``j * lanes + i``, so each store of a subgroup is one contiguous run."""
    row_vectors = o * _u32(r.n // 4)
    for j in range(r.layout.per_lane // 4):
        at = lid + _u32(j * r.layout.lanes) if j else lid
        yield at, row_vectors + at


def _cheap_per_element(L: Lowering, root: Node, red: Node, computed: frozenset = frozenset()) -> bool:
    """Whether ``root``'s work at each element of a row, past what is uniform over the row and the
    nodes in ``computed`` (ids), is a few ops cheap enough to compute twice (``OpDef.recompute``: a row
    written by ``_store_row_reloaded``) and casts on loads (layer norm's
    (x - mean) * rstd * w + b; softmax's e * (1 / sum(e)) past e; not exp(x - max))."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen or node.realized or id(node) in L.leaves or node.op == Op.CONST or id(node) in computed:
            continue
        seen.add(id(node))
        if node.op == Op.VIEW and is_row_broadcast(node, red):
            continue  # the row's mean or rstd: computed once
        if node.op not in (Op.ELEMENTWISE, Op.VIEW, Op.CAST) or (
            node.op == Op.ELEMENTWISE and not node.arg.op.recompute
        ):
            return False
        stack.extend(node.srcs)
    return True


def _store_row_reloaded(L: Lowering, root: Node, out_ref, r: _Reduction, o) -> None:
    """Compute ``root`` again at coalesced positions, its inputs loaded again (from cache), and store it.

    Vector ``j`` of lane ``i`` is the row's vector ``j * lanes + i``, so each store and load of a
    subgroup is one contiguous run, where the lanes' own runs of ``per_lane`` elements would
    make each subgroup store write 16 bytes of every 64. The row-uniform values (mean, rstd)
    come from the reductions; only ``root``'s cheap per-element part is computed twice (layer
    norm's timing before and after: docs/benchmarks.md, seventh run).
    """
    lid = local_index()
    kept = len(r.src.shape) - len(r.axes)
    o_multi = L.shared(("row", id(o), r.red.shape), lambda: unravel(o, r.red.shape))
    sizes = r.red_sizes[:-1] + [r.red_sizes[-1] // 4]
    for at, q in _contiguous_vectors(r, o, lid):
        multi = tuple(o_multi[:kept]) + tuple(unravel(at, sizes))
        at_row = [Index(root.shape, group=(q, c, 4), group_multi=multi, row=(o, r.red)) for c in range(4)]
        L.store_vector(out_ref, root.dtype, q, [L.value(root, index) for index in at_row])
