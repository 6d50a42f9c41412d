"""Lowering: turn one fused group of graph nodes into IR kernels and dispatches.

Two templates:
- elementwise: one invocation per output element; it computes the root's expression at its
  index, loading realized leaves through their views (index arithmetic, no copies).
- reduce: the contract's pairwise tree over the reduced length. Each workgroup reduces one
  aligned block of ``B = W·E`` elements (E per lane in registers, then W lanes in shared
  memory, level by level); aligned blocks are subtrees of the tree, so further passes over
  the block partials complete the very same tree. Elementwise producers are computed inside
  the first pass's loads; elementwise consumers of the reduced shape run after the last pass.
"""

from __future__ import annotations

import math

from .graph import Node
from .ir import builder as B
from .ir import types as T
from .ir.core import Value
from .ops import mathlib as M
from .ops.cast import cast_value, compute_dtype, round_to_f16
from .ops.reduce import reduce_dtypes
from .ops.registry import REGISTRY
from .runtime.base import Buffer, Dispatch

ELEMENTWISE_LOCAL_SIZE = 64
MAX_GRID_X = 65535
MAX_REDUCE_LANES = 64
MAX_REDUCE_PER_LANE = 4
_U32 = 1 << 32


def _u32(v: int) -> Value:
    return B.const(v % _U32, T.uint32)


def fold_grid(workgroups: int) -> tuple[int, int, int]:
    """Spread a 1-D count of workgroups over x and y (x is limited to 65535 on many devices)."""
    x = max(1, min(workgroups, MAX_GRID_X))
    return (x, max(1, -(-workgroups // x)), 1)


def _pow2ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def param_dtype(dtype: T.DType) -> T.DType:
    """Parameters travel as push constants: float16 as float32, bool as uint32."""
    return {T.float16: T.float32, T.bool_: T.uint32}.get(dtype, dtype)


def storage_dtype(dtype: T.DType) -> T.DType:
    return dtype


class Index:
    """A position in a node's shape: a linear index and/or a multi-index, and where it is valid."""

    def __init__(self, shape, lin: Value | None = None, multi: tuple | None = None, valid: Value | None = None):
        self.shape, self._lin, self._multi, self.valid = tuple(shape), lin, multi, valid

    @property
    def lin(self) -> Value:
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
        if self._multi is None:
            self._multi = unravel(self._lin, self.shape)
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


def _and(a: Value | None, b: Value | None) -> Value | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _view_index(stack, idx: Index) -> tuple[Value, Value | None]:
    """Linear index into the source's logical shape, and validity, for position ``idx`` of a view."""
    multi, valid = idx.multi, idx.valid
    lin = None
    for k in reversed(range(len(stack.views))):
        view = stack.views[k]
        if view.mask:
            for i, (lo, hi), s in zip(multi, view.mask, view.shape):
                if lo > 0:
                    valid = _and(valid, i >= _u32(lo))
                if hi < s:
                    valid = _and(valid, i < _u32(hi))
        lin = _u32(view.offset) if view.offset else None
        for i, st in zip(multi, view.strides):
            if st:
                term = i if st == 1 else i * _u32(st)
                lin = term if lin is None else lin + term
        if lin is None:
            lin = _u32(0)
        if k:
            multi = unravel(lin, stack.views[k - 1].shape)
    return lin, valid


class Lowering:
    """Builds one kernel: binds leaves as read buffers and constants as parameters."""

    def __init__(self, name: str, local_size, materialized: dict[int, Buffer]):
        self.kb = B.KernelBuilder(name, local_size)
        self.materialized = materialized
        self.bindings: dict[str, Buffer] = {}
        self.param_values: dict[str, object] = {}
        self._leaves: dict[int, B.BufferRef] = {}
        self._params: dict[int, Value] = {}
        self._memo: dict[tuple[int, Index], Value] = {}  # holds the Index: ids of dead ones get reused
        self.fused: dict[int, Value] = {}  # a fused reduce node -> its result in this kernel

    def bind_buffer(self, buffer: Buffer, access: str, prefix: str) -> B.BufferRef:
        name = f"{prefix}{len(self.bindings)}"
        self.bindings[name] = buffer
        return self.kb.buffer(name, storage_dtype(buffer.dtype), access)

    def _leaf(self, node: Node) -> B.BufferRef:
        ref = self._leaves.get(id(node))
        if ref is None:
            buf = node.buffer if node.realized else self.materialized[id(node)]
            ref = self._leaves[id(node)] = self.bind_buffer(buf, "read", "in")
        return ref

    def _param(self, node: Node) -> Value:
        v = self._params.get(id(node))
        if v is None:
            name = f"s{len(self._params)}"
            pt = param_dtype(node.dtype)
            self.param_values[name] = int(node.arg) if node.dtype is T.bool_ else node.arg
            v = self.kb.param(name, pt)
            if node.dtype is T.bool_:
                v = B.ne(v, _u32(0))
            self._params[id(node)] = v
        return v

    def load(self, ref: B.BufferRef, dtype: T.DType, index: Value) -> Value:
        v = ref[index]
        return B.convert(v, T.float32) if dtype is T.float16 else v

    def store(self, ref: B.BufferRef, dtype: T.DType, index: Value, value: Value) -> None:
        ref[index] = M.f32_to_f16(value) if dtype is T.float16 else value

    def value(self, node: Node, idx: Index) -> Value:
        """The compute-representation value of ``node`` at ``idx`` (memoised per index)."""
        key = (id(node), idx)
        if key not in self._memo:
            self._memo[key] = self._compute(node, idx)
        return self._memo[key]

    def _compute(self, node: Node, idx: Index) -> Value:
        if id(node) in self.fused:
            return self.fused[id(node)]
        if node.realized or id(node) in self.materialized:
            lin = idx.lin if idx.valid is None else B.select(idx.valid, idx.lin, _u32(0))
            return self.load(self._leaf(node), node.dtype, lin)
        op = node.op
        if op == "const":
            return self._param(node)
        if op == "view":
            src = node.srcs[0]
            lin, valid = _view_index(node.arg, idx)
            inner = self.value(src, Index(src.shape, lin=lin, valid=valid))
            if valid is not None and valid is not idx.valid:
                zero = B.const(0.0 if inner.dtype.is_float else (False if inner.dtype is T.bool_ else 0), inner.dtype)
                inner = B.select(valid, inner, zero)
            return inner
        if op == "cast":
            src = node.srcs[0]
            return cast_value(self.value(src, idx), src.dtype, node.dtype)
        if op == "elementwise":
            name, cdtype = node.arg
            args = [cast_value(self.value(s, idx), s.dtype, cdtype) for s in node.srcs]
            if name == "where":
                args[0] = cast_value(self.value(node.srcs[0], idx), node.srcs[0].dtype, T.bool_)
            out = REGISTRY[name].body(*args)
            if node.dtype is T.float16 and cdtype is T.float16:
                out = round_to_f16(out)
            return out
        if op == "cat":
            return self._cat(node, idx)
        raise AssertionError(f"cannot inline {node!r}")

    def _cat(self, node: Node, idx: Index) -> Value:
        dim, multi, result, start = node.arg, idx.multi, None, 0
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


def _kernel_name(root: Node, prefix: str) -> str:
    names, stack, seen = [], [root], set()
    while stack and len(names) < 4:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op in ("elementwise", "reduce"):
            names.append(n.arg[0])
        elif n.op == "cast":
            names.append("to_" + n.dtype.short)
        stack.extend(n.srcs)
    shape = "x".join(str(s) for s in root.shape) or "scalar"
    return "_".join([prefix, *names, shape])


def lower_elementwise(root: Node, out: Buffer, materialized: dict[int, Buffer]) -> list[Dispatch]:
    n = root.numel
    L = Lowering(_kernel_name(root, "E"), (ELEMENTWISE_LOCAL_SIZE, 1, 1), materialized)
    workgroups = -(-n // ELEMENTWISE_LOCAL_SIZE)
    grid = fold_grid(workgroups)
    out_ref = L.bind_buffer(out, "write", "out")
    with L.kb:
        wg = B.workgroup_id(1) * _u32(grid[0]) + B.workgroup_id(0) if grid[1] > 1 else B.workgroup_id(0)
        gid = wg * _u32(ELEMENTWISE_LOCAL_SIZE) + B.local_id(0)
        with B.if_(gid < _u32(n)):
            v = L.value(root, Index(root.shape, lin=gid))
            L.store(out_ref, root.dtype, gid, v)
    return [Dispatch(L.kb.finish(), grid, L.bindings, L.param_values)]


def _tree(pairs, combine):
    """Pairwise tree over (value, present) pairs in registers; presence is a prefix."""
    while len(pairs) > 1:
        nxt = []
        for j in range(0, len(pairs), 2):
            (a, pa), (b, pb) = pairs[j], pairs[j + 1]
            c = combine(a, b)
            nxt.append((_select_tuple(pb, c, a), pa))
        pairs = nxt
    return pairs[0][0]


def _select_tuple(cond, a, b):
    if isinstance(a, tuple):
        return tuple(B.select(cond, x, y) for x, y in zip(a, b))
    return B.select(cond, a, b)


def reduce_layout(n: int) -> tuple[int, int, int]:
    """(elements per lane, lanes per workgroup, blocks) for a reduced length ``n``; all powers of two but blocks."""
    per_lane = min(MAX_REDUCE_PER_LANE, _pow2ceil(n))
    lanes = min(MAX_REDUCE_LANES, _pow2ceil(-(-n // per_lane)))
    return per_lane, lanes, -(-n // (lanes * per_lane))


def _reduce_pass(L: Lowering, outer: int, n: int, load, combine, acc_types, finish) -> tuple[int, int, int]:
    """Emit one pass: workgroup (o, blk) reduces elements [blk·B, blk·B+B) of row o; returns the grid.

    ``load(o, k, valid)`` gives the element(s) at row o, position k; ``finish(o, blk, value)``
    stores the block's result (called in lane 0 only).
    """
    per_lane, lanes, nblocks = reduce_layout(n)
    block = lanes * per_lane
    total = outer * nblocks
    grid = fold_grid(total)
    L.kb.local_size = (lanes, 1, 1)
    shared = [L.kb.shared(f"tree{i}", t, lanes) for i, t in enumerate(acc_types)]
    with L.kb:
        wg = B.workgroup_id(1) * _u32(grid[0]) + B.workgroup_id(0) if grid[1] > 1 else B.workgroup_id(0)
        with B.if_(wg < _u32(total)):  # uniform per workgroup, so the barriers below are legal
            o, blk = (wg / _u32(nblocks), wg % _u32(nblocks)) if nblocks > 1 else (wg, _u32(0))
            lid = B.local_id(0)
            base = blk * _u32(block) + lid * _u32(per_lane)
            pairs = []
            for e in range(per_lane):
                k = base + _u32(e) if e else base
                present = k < _u32(n)
                pairs.append((load(o, B.select(present, k, _u32(0)), present), present))
            lane_value = _tree(pairs, combine)
            if lanes > 1:
                vals = lane_value if isinstance(lane_value, tuple) else (lane_value,)
                for ref, v in zip(shared, vals):
                    ref[lid] = v
                B.barrier()
                remaining = _u32(n) - blk * _u32(block)  # elements of this block (≥ 1)
                m = B.select(remaining < _u32(block), (remaining + _u32(per_lane - 1)) / _u32(per_lane), _u32(lanes))
                half = lanes
                while half > 1:
                    half //= 2
                    j = B.select(lid < _u32(half), lid, _u32(0))
                    left = tuple(ref[j * 2] for ref in shared)
                    right = tuple(ref[j * 2 + 1] for ref in shared)
                    if len(shared) == 1:
                        left, right = left[0], right[0]
                    merged = _select_tuple(j * 2 + 1 < m, combine(left, right), left)
                    merged = merged if isinstance(merged, tuple) else (merged,)
                    B.barrier()
                    with B.if_(lid < _u32(half)):
                        for ref, v in zip(shared, merged):
                            ref[lid] = v
                    B.barrier()
                    m = (m + 1) >> 1
                lane_value = tuple(ref[_u32(0)] for ref in shared)
                if len(shared) == 1:
                    lane_value = lane_value[0]
            with B.if_(B.eq(lid, _u32(0))):
                finish(o, blk, lane_value)
    return grid, nblocks


def lower_reduce(root: Node, red: Node, out: Buffer, materialized: dict[int, Buffer], device) -> tuple[list, list]:
    """Dispatches computing ``root`` whose expression contains the reduce node ``red``.

    Returns (dispatches, temporary buffers that must live until the dispatches ran).
    """
    name, axes = red.arg
    src = red.srcs[0]
    acc, _ = reduce_dtypes(name, src.dtype)
    is_arg = name in ("argmax", "argmin")
    combine = REGISTRY[name].combine
    acc_types = (acc, T.int64) if is_arg else (acc,)
    outer = red.numel
    kept = [d for d in range(len(src.shape)) if d not in axes]
    red_sizes = [src.shape[a] for a in axes]
    n = math.prod(red_sizes)
    dispatches, temps = [], []

    def first_load(L):
        def load(o, k, valid):
            o_multi = unravel(o, red.shape)
            k_multi = unravel(k, red_sizes)
            multi = [None] * len(src.shape)
            for d in kept:
                multi[d] = o_multi[d]
            for a, kv in zip(axes, k_multi):
                multi[a] = kv
            v = L.value(src, Index(src.shape, multi=tuple(multi), valid=valid))
            v = cast_value(v, src.dtype, acc)
            return (v, B.convert(k, T.int64)) if is_arg else v

        return load

    def partial_load(L, refs, width):
        def load(o, k, valid):
            at = o * _u32(width) + k
            vals = tuple(L.load(r, t, at) for r, t in zip(refs, acc_types))
            return vals if is_arg else vals[0]

        return load

    width, pass_no, prev_refs = n, 0, None
    while True:
        L = Lowering(_kernel_name(root, f"R{pass_no}"), (1, 1, 1), materialized)
        if prev_refs is None:
            load = first_load(L)
        else:
            refs = [L.bind_buffer(b, "read", "part") for b in prev_refs]
            load = partial_load(L, refs, width)
        nblocks = reduce_layout(width)[2]
        if nblocks == 1:
            out_ref = L.bind_buffer(out, "write", "out")

            def finish(o, blk, value, L=L, out_ref=out_ref):
                result = value[1] if is_arg else value
                if not is_arg and acc is T.float32 and red.dtype is T.float16:
                    result = round_to_f16(result)
                L.fused[id(red)] = result
                v = L.value(root, Index(root.shape, lin=o))
                L.store(out_ref, root.dtype, o, v)
        else:
            parts = [device.allocate(t, outer * nblocks) for t in acc_types]
            temps.extend(parts)
            part_refs = [L.bind_buffer(b, "write", "part") for b in parts]

            def finish(o, blk, value, L=L, part_refs=part_refs, nblocks=nblocks):
                vals = value if is_arg else (value,)
                at = o * _u32(nblocks) + blk
                for r, t, v in zip(part_refs, acc_types, vals):
                    L.store(r, t, at, v)

        grid, got = _reduce_pass(L, outer, width, load, combine, acc_types, finish)
        assert got == nblocks
        dispatches.append(Dispatch(L.kb.finish(), grid, L.bindings, L.param_values))
        if nblocks == 1:
            return dispatches, temps
        prev_refs, width, pass_no = parts, nblocks, pass_no + 1


assert compute_dtype  # re-exported for the scheduler
