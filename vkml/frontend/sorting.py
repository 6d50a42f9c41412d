"""Sorting with PyTorch's names: sort, argsort, msort, topk (searching is in searching.py).

Every op here runs as device kernels (written in the DSL, vkml/dsl/kernel.py); nothing is read
back to the host.

**The sort** is a bitonic sorting network over each row, padded to P = 2^ceil(log2 n) slots.
Each element carries its original position, and the network compares (key, position) pairs,
so no two elements compare equal: the result is the unique *stable* order whatever the
network's shape. That is why ``stable=`` changes nothing: vkml's sort is always stable, and the
indices of ties are the ascending original positions, deterministic on every device. The order
is PyTorch's: NaN sorts as the largest value (last ascending, first descending), NaNs among
themselves by position, and -0.0 equals +0.0 (their order is their positions). Padding slots
(positions >= n) sort after everything and are cut off.

The network has log2(P) (log2(P) + 1) / 2 compare-exchange steps. The steps whose partners lie
in one block of 512 slots run in shared memory, all of a stage's in one dispatch (all stages of
rows up to 512 slots in one); each longer step is one dispatch in which every slot reads itself
and its partner ``i ^ j`` and keeps the one its place in the network asks for (out of place: no
two invocations write one slot). A realize holds every intermediate buffer, so past
``PENDING_SORT_BYTES`` of them a long sort runs the stages so far first. The sorted values are then
gathered from the input by the sorted positions, so their bits are the input's (float16 keys
compare as float32, which is exact), and their gradient is the gradient scattered back through
the permutation, as PyTorch's.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dsl
from ..dsl.kernel import MAX_WORKGROUPS, kernel
from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as G
from . import autograd, return_types
from . import operators as F
from .autograd import differentiable
from .exports import Export
from .realize import realize

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("sort", method=True),
    Export("argsort", method=True),
    Export("msort", method=True),
    Export("topk", method=True),
)

_LOCAL = 64  # invocations per workgroup of the kernels below
# The bytes of intermediate (keys, positions) buffers a sort leaves pending before it runs the stages
# so far: past it, a long sort runs in parts rather than holding every step's buffers at once.
PENDING_SORT_BYTES = 1 << 30
_MAX_SLOTS = 2**31 - 1  # positions are int32 and flat indices uint32


def grid_for(n: int) -> tuple[int, int, int]:
    """Workgroups for one invocation per element of ``n``: along x, spilling into y past the per-dim limit."""
    groups = max(1, -(-n // _LOCAL))
    return (min(groups, MAX_WORKGROUPS), -(-groups // MAX_WORKGROUPS), 1)


def invocation():
    return dsl.global_id(0) + dsl.global_id(1) * (MAX_WORKGROUPS * _LOCAL)


def _padded(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def key_dtype(dtype: T.DType) -> T.DType:
    """The dtype a sort compares in: float16 and bfloat16 widen to float32, small integers to int32 (exact)."""
    if dtype.is_float:
        return T.float32 if dtype.bits < 32 else dtype
    if dtype.bits < 32:
        return T.int32
    return dtype


# ---------------------------------------------------------------------- the kernels


def _slots(keys):
    rows, n = keys.shape
    return (rows, _padded(n))


@kernel(
    outputs=lambda keys: [(_slots(keys), keys.dtype), (_slots(keys), T.int32)],
    grid=lambda keys: grid_for(math.prod(_slots(keys))),
    name="sort_start",
)
def _start_kernel(keys, out_keys, out_pos):
    """Row r's slots: its keys and their positions, then padding (positions n .. P-1)."""
    e = invocation()
    n, p = keys.shape[1], out_keys.shape[1]
    with dsl.if_(e < out_keys.numel):
        r, i = e >> (p.bit_length() - 1), e & (p - 1)
        (v,) = dsl.if_else(i < n, lambda: keys[r * n + i], lambda: dsl.const(0, keys.dtype))
        out_keys[e] = v
        out_pos[e] = dsl.bitcast(i, T.int32)


def _before(a, ia, b, ib, n, descending: bool, is_float: bool):
    """(a, ia) sorts before (b, ib): PyTorch's order (NaN largest), ties by position, padding last."""
    if is_float:
        nan_a, nan_b = dsl.isnan(a), dsl.isnan(b)
        if descending:
            less = (a > b) | (nan_a & ~nan_b)
        else:
            less = (a < b) | (~nan_a & nan_b)
        same = dsl.eq(a, b) | (nan_a & nan_b)
    else:
        less = (a > b) if descending else (a < b)
        same = dsl.eq(a, b)
    first = less | (same & (ia < ib))
    # a padding slot (position >= n) goes after every element: by position, n and above are last
    return dsl.where((ia >= n) | (ib >= n), ia < ib, first)


def _make_step(descending: bool):
    @kernel(
        outputs=lambda keys, pos, n, j, k: [(keys.shape, keys.dtype), (pos.shape, T.int32)],
        grid=lambda keys, pos, n, j, k: grid_for(keys.numel),
        name="sort_step_descending" if descending else "sort_step",
    )
    def step(keys, pos, n, j, k, out_keys, out_pos):
        """One compare-exchange step of the bitonic network: block size k, partner distance j."""
        e = invocation()
        p = keys.shape[1]
        with dsl.if_(e < keys.numel):
            i = e & (p - 1)
            partner = e ^ dsl.bitcast(j, T.uint32)
            a, ia = keys[e], pos[e]
            b, ib = keys[partner], pos[partner]
            first = _before(a, ia, b, ib, n, descending, keys.dtype.is_float)
            lower = dsl.eq(i & dsl.bitcast(j, T.uint32), 0)
            ascending_block = dsl.eq(i & dsl.bitcast(k, T.uint32), 0)
            # the lower slot of an ascending pair keeps the first, of a descending pair the second
            keep_a = dsl.eq(dsl.eq(lower, ascending_block), first)
            out_keys[e] = dsl.where(keep_a, a, b)
            out_pos[e] = dsl.where(keep_a, ia, ib)

    return step


_STEPS = {False: _make_step(False), True: _make_step(True)}


_BLOCK = 512  # slots one workgroup sorts in shared memory, two per invocation


def _block_grid(keys, pos, n, k=None):
    groups = -(-keys.numel // _BLOCK)
    return (min(groups, MAX_WORKGROUPS), -(-groups // MAX_WORKGROUPS), 1)


def _make_block(descending: bool, merge: bool):
    """A kernel running, in shared memory, the steps with partner distance j < _BLOCK: every stage up to
    min(P, _BLOCK) (the full sort of short rows), or (``merge``) the last steps of stage ``k``."""

    def body(keys, pos, n, k, out_keys, out_pos):
        p, total = keys.shape[1], keys.numel
        groups = -(-total // _BLOCK)
        group = dsl.workgroup_id(0) + dsl.workgroup_id(1) * MAX_WORKGROUPS
        # a spill workgroup past the last block redoes it: it reads the inputs and writes the same values
        base = dsl.where(group < groups, group, groups - 1) * _BLOCK
        t = dsl.local_id(0)
        shared_keys, shared_pos = dsl.shared(_BLOCK, keys.dtype), dsl.shared(_BLOCK, T.int32)
        halves = (t, t + _BLOCK // 2)
        for u in halves:
            with dsl.if_(base + u < total):  # rows are whole: a block's slots past the end hold no row
                shared_keys[u] = keys[base + u]
                shared_pos[u] = pos[base + u]
        dsl.barrier()
        if merge:
            stages = [(dsl.bitcast(k, T.uint32), _BLOCK >> s) for s in range(1, _BLOCK.bit_length())]
        else:
            sizes = [2**e for e in range(1, min(p, _BLOCK).bit_length())]
            stages = [(size, size >> s) for size in sizes for s in range(1, size.bit_length())]
        for size, j in stages:
            shift = j.bit_length() - 1
            lo = ((t >> shift) << (shift + 1)) | (t & (j - 1))
            hi = lo + j
            with dsl.if_(base + hi < total):  # a pair lies in one row: both slots exist or neither
                a, ia = shared_keys[lo], shared_pos[lo]
                b, ib = shared_keys[hi], shared_pos[hi]
                first = _before(a, ia, b, ib, n, descending, keys.dtype.is_float)
                ascending = dsl.eq(((base + lo) & (p - 1)) & size, 0)
                low_gets_a = dsl.eq(first, ascending)  # a descending block puts the second first
                shared_keys[lo] = dsl.where(low_gets_a, a, b)
                shared_pos[lo] = dsl.where(low_gets_a, ia, ib)
                shared_keys[hi] = dsl.where(low_gets_a, b, a)
                shared_pos[hi] = dsl.where(low_gets_a, ib, ia)
            dsl.barrier()
        for u in halves:
            with dsl.if_(base + u < total):
                out_keys[base + u] = shared_keys[u]
                out_pos[base + u] = shared_pos[u]

    name = "sort_" + ("merge" if merge else "block") + ("_descending" if descending else "")
    local = (_BLOCK // 2, 1, 1)
    if merge:

        @kernel(
            outputs=lambda keys, pos, n, k: [(keys.shape, keys.dtype), (pos.shape, T.int32)],
            grid=_block_grid,
            local_size=local,
            name=name,
        )
        def block_merge(keys, pos, n, k, out_keys, out_pos):
            body(keys, pos, n, k, out_keys, out_pos)

        return block_merge

    @kernel(
        outputs=lambda keys, pos, n: [(keys.shape, keys.dtype), (pos.shape, T.int32)],
        grid=_block_grid,
        local_size=local,
        name=name,
    )
    def block_sort(keys, pos, n, out_keys, out_pos):
        body(keys, pos, n, None, out_keys, out_pos)

    return block_sort


_BLOCK_SORTS = {d: _make_block(d, False) for d in (False, True)}
_BLOCK_MERGES = {d: _make_block(d, True) for d in (False, True)}


@kernel(
    outputs=lambda x, pos: (pos.shape, x.dtype),
    grid=lambda x, pos: grid_for(pos.numel),
    name="sort_take",
)
def _take_kernel(x, pos, out):
    """out[r, i] = x[r, pos[r, i]]: the rows of ``x`` (R, n) in the order ``pos`` (R, k) names."""
    e = invocation()
    n, k = x.shape[1], pos.shape[1]
    with dsl.if_(e < out.numel):
        r = e / k
        out[e] = x[r * n + dsl.bitcast(pos[e], T.uint32)]


@kernel(outputs=lambda pos: (pos.shape, T.int32), grid=lambda pos: grid_for(pos.numel), name="sort_invert")
def _invert_kernel(pos, out):
    """The inverse permutation of each row: out[r, pos[r, i]] = i (every slot written once)."""
    e = invocation()
    n = pos.shape[1]
    with dsl.if_(e < pos.numel):
        r = e / n
        i = e - r * n
        out[r * n + dsl.bitcast(pos[e], T.uint32)] = dsl.bitcast(i, T.int32)


@kernel(outputs=lambda g, rank: (rank.shape, g.dtype), grid=lambda g, rank: grid_for(rank.numel), name="sort_untake")
def _untake_kernel(g, rank, out):
    """out[r, j] = g[r, rank[r, j]] where rank < k (g is (R, k)), else 0: the gradient of a take."""
    e = invocation()
    n, k = rank.shape[1], g.shape[1]
    with dsl.if_(e < out.numel):
        r = e / n
        t = rank[e]
        (v,) = dsl.if_else(t < k, lambda: g[r * k + dsl.bitcast(t, T.uint32)], lambda: dsl.const(0, g.dtype))
        out[e] = v


def sorted_positions(rows, descending: bool = False):
    """The stable sorting permutation (int32, shape (R, n)) of each row of the 2-D tensor ``rows``."""
    count, n = rows.shape
    keys = rows.detach()
    if key_dtype(keys.dtype) is not keys.dtype:
        keys = F.cast(keys, key_dtype(keys.dtype))
    keys, pos = _start_kernel(keys)
    p = keys.shape[1]
    if p == 1:
        return pos
    # the steps whose partners lie in one block of _BLOCK slots run in shared memory, many per dispatch
    keys, pos = _BLOCK_SORTS[descending](keys, pos, n)
    step, merge = _STEPS[descending], _BLOCK_MERGES[descending]
    per_dispatch = keys.numel() * (keys.dtype.nbytes + 4)
    pending = 0
    k = 2 * _BLOCK
    while k <= p:
        j = k // 2
        while j >= _BLOCK:
            keys, pos = step(keys, pos, n, j, k)
            j //= 2
        keys, pos = merge(keys, pos, n, k)
        pending += per_dispatch * (k.bit_length() - _BLOCK.bit_length() + 1)
        if pending > PENDING_SORT_BYTES:
            # a realize holds every intermediate buffer until it ends, and each dispatch writes a new
            # (keys, positions) pair: running the stages so far bounds the memory a long sort holds
            realize(keys, pos)
            pending = 0
        k *= 2
    return pos[:, :n] if p != n else pos


def stable_ranks(rows, descending: bool = False):
    """Each element's place in the stable sort of its row (int32, shape (R, n)): the inverse permutation."""
    return _invert_kernel(sorted_positions(rows, descending))


@differentiable("sort_take", inputs=("rows",))
def take_sorted(rows, pos, k: int):
    """Row r's elements of ``rows`` (R, n) at the first ``k`` positions of the permutation ``pos`` (R, n)."""
    return _take_kernel(rows, pos[:, :k] if k != pos.shape[1] else pos)


def _take_sorted_grad(c: G.GradContext):
    return (untake_sorted(c.g, c.attrs["pos"]),)


@differentiable("sort_untake", inputs=("g",))
def untake_sorted(g, pos):
    """``take_sorted``'s gradient, itself recorded (a second derivative reaches ``g``): where an
    element's rank is below k, its gradient is g at that rank (g is (R, k)), else 0."""
    return _untake_kernel(g, _invert_kernel(pos))


def _untake_sorted_grad(c: G.GradContext):
    return (take_sorted(c.g, c.attrs["pos"], c.inputs[0].shape[1]),)


G.RULES["sort_take"] = _take_sorted_grad
G.RULES["sort_untake"] = _untake_sorted_grad


# ---------------------------------------------------------------------- sort, argsort, msort, topk


def _as_rows(input, d: int):
    """``input`` with dim ``d`` moved last and the others flattened: (rows, n), and how to undo it."""
    perm = [k for k in range(input.ndim) if k != d] + [d]
    moved = F.permute(input, *perm) if d != input.ndim - 1 else input
    shape = moved.shape

    def back(t):  # t: (rows, m) -> the input's layout with m along dim d
        t = F.reshape(t, *shape[:-1], t.shape[-1])
        if d == input.ndim - 1:
            return t
        inverse = [0] * len(perm)
        for k, p in enumerate(perm):
            inverse[p] = k
        return F.permute(t, *inverse)

    return F.reshape(moved, -1, shape[-1]), back


def _check_sortable(op: str, input):
    node = F._tensor_node(op, input)
    if node.numel > _MAX_SLOTS // 2:
        raise RuntimeError(f"'{op}': {node.numel} elements are more than vkml's sort handles (2^30)")
    return node


def _shown(values, input, node_name: str):
    """``values`` (recorded as vkml's gather by the sorted positions) shown as PyTorch's one node."""
    if values._ctx is not None:
        autograd.show(values, node_name, (autograd.edge(input),))
    return values


def _sort(op: str, input, dim: int, descending: bool, k: int | None = None):
    """(values, indices int64) of ``input`` sorted along ``dim``; the first ``k`` of each row if given."""
    node = _check_sortable(op, input)
    if not isinstance(descending, (bool, np.bool_)):
        raise TypeError(f"'{op}': argument 'descending' must be a bool, got {descending!r}")
    d = lazy.normalize_dim(op, dim, len(node.shape))
    if not node.shape:  # a 0-d tensor is its own sort
        return F.clone(input), F._wrap(lazy.const_node(0, T.int64, (), node.device))
    n = node.shape[d]
    k = n if k is None else k
    if node.numel == 0 or k == 0:
        shape = tuple(k if i == d else s for i, s in enumerate(node.shape))
        values = F._wrap(lazy.const_node(0, node.dtype, shape, node.device))
        return values, F._wrap(lazy.const_node(0, T.int64, shape, node.device))
    rows, back = _as_rows(input, d)
    pos = sorted_positions(rows, bool(descending))
    values = take_sorted(rows, pos, k)
    first = pos[:, :k] if k != n else pos
    return back(values), back(F.cast(first, T.int64))


def _check_stable(op: str, stable):
    if stable is not None and not isinstance(stable, (bool, np.bool_)):
        raise TypeError(f"'{op}': argument 'stable' must be a bool or None, got {stable!r}")


def sort(input, dim=-1, descending=False, *, stable=False, axis=None):
    """(values, indices) of ``input`` sorted along ``dim``, as ``vkml.return_types.sort``.

    Always stable (module docstring): ties keep their original order, so ``stable=`` changes
    nothing. NaN sorts as the largest value. The values' gradient flows back through the
    permutation. Example: ``vkml.sort(vkml.tensor([3.0, 1.0, 2.0])).indices`` is [1, 2, 0].
    """
    _check_stable("sort", stable)
    values, indices = _sort("sort", input, F._dim_or_axis("sort", dim, axis, -1), descending)
    return return_types.sort(_shown(values, input, "SortBackward0"), indices)


def argsort(input, dim=-1, descending=False, *, stable=False, axis=None):
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``); always stable."""
    _check_stable("argsort", stable)
    return _sort("argsort", input, F._dim_or_axis("argsort", dim, axis, -1), descending)[1]


def msort(input):
    """``input`` sorted along dim 0 (the values of ``sort(input, 0)``)."""
    return _shown(_sort("msort", input, 0, False)[0], input, "SortBackward0")


def topk(input, k, dim=-1, largest=True, sorted=True, *, axis=None):  # noqa: A002 - PyTorch's argument name
    """(values, indices) of the ``k`` largest (or smallest) elements along ``dim``, as ``return_types.topk``.

    ``largest=False`` takes the smallest.
    The first ``k`` of the stable sort: ordered (``sorted=False`` gives the same order), ties by
    position, NaN counts as the largest. The values' gradient goes to the elements chosen.
    """
    dim = F._dim_or_axis("topk", dim, axis, -1)
    node = F._tensor_node("topk", input)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"'topk': argument 'k' must be an int, got {k!r}")
    if node.dtype is T.bool_:
        raise RuntimeError("'topk': does not support bool dtypes (as PyTorch)")
    d = lazy.normalize_dim("topk", dim, len(node.shape))
    n = node.shape[d] if node.shape else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"'topk': selected index k out of range (k={k}, dimension {d} of size {n})")
    if not isinstance(largest, (bool, np.bool_)) or not isinstance(sorted, (bool, np.bool_)):
        raise TypeError(f"'topk': arguments 'largest' and 'sorted' must be bools, got {largest!r}, {sorted!r}")
    values, indices = _sort("topk", input, d, bool(largest), int(k))
    return return_types.topk(_shown(values, input, "TopkBackward0"), indices)
