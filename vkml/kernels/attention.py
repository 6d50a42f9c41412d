"""The fused attention kernel: softmax(q @ kᵀ · scale + mask) @ v without writing the scores.

One workgroup owns ``ROWS`` query rows of one batch entry (all batch dims flattened, heads
included) and walks the keys in blocks of ``LANES``, in ascending order: the flash-attention
scheme. Per block it stages the key block (rows padded by one word, so the lanes of a row read
distinct banks) and the value block in shared memory; lane ``c`` of row ``r`` computes the
score of key ``c`` (Σ_e q[r, e] · k[c, e] in ascending e from -0.0, each product and sum
rounded, then one rounding by ``scale``), masks it, and the row's lanes combine their scores:

    m' = max(m, max_c s_c)      p_c = exp(s_c - m')      α = exp(m - m')
    l' = l · α + Σ_c p_c        acc_j' = acc_j · α + Σ_c p_c · v[c, j]  (c ascending)

Lane ``c`` keeps the accumulators of output columns c, c + LANES, ...; at the end
out = acc / l (a row with no unmasked key, l = 0, gives zeros, as PyTorch's math path) and the
row's log-sum-exp m + log(l) (-inf for such a row) is stored for the backward pass.

The row combines (max, sum) follow one fixed tree over the ``LANES`` lanes — neighbours pair
level by level — whatever does them: ``shuffle_xor`` for the levels inside a subgroup, shared
memory for the rest. So the order of every operation is fixed by the shapes alone, and every
device (the CPU interpreter included) gives the same bits. The order differs from the
composite's (softmax, then a matmul), so the bits differ from it: docs/ops/scaled_dot_product_attention.md
gives the bound.

Batch dims are index arithmetic: each operand is read at its own (contiguous) shape through
per-dim strides, 0 where it broadcasts; with ``enable_gqa`` a key/value head serves
``groups`` query heads (its batch index is divided by ``groups``). A mask is read the same way,
its query and key dims through their own strides (0 where it broadcasts).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import config as vkml_config
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Kernel, Value
from ..ir.verify import verify_kernel
from ..ops import mathlib as M
from ..ops.cast import load_value, narrow, store_value
from ..ops.random import random_value
from .index import _u32
from .lowering import fold_grid, linear_workgroup
from .matmul.tiled import _maybe_if

ROWS = 8  # query rows per workgroup
LANES = 16  # lanes per row = keys per block
THREADS = ROWS * LANES
NEG_INF = float("-inf")


@dataclass(frozen=True)
class Operand:
    """How one input is read: per batch dim its element stride (0: broadcast) and the divisor of
    the batch index (``enable_gqa``'s groups on the heads dim, else 1)."""

    strides: tuple[int, ...]
    divisors: tuple[int, ...]


@dataclass(frozen=True)
class AttentionShape:
    """Everything the forward kernel's code depends on (its cache key).

    ``batch``: the broadcast batch dims; ``query_len`` L, ``key_len`` S, ``head_dim`` E (query
    and key), ``value_dim`` Ev; ``mask``: "none", "bool" or "float" (a float mask of
    ``mask_dtype``, narrowed to ``dtype`` first where that is narrower, as the composite does);
    ``mask_strides``: the mask's strides over (batch..., L, S); ``subgroup``: shuffle levels;
    ``dropout``: the kernels take ``DROPOUT_PARAMS`` and drop weights as ``Dropout.apply`` says.
    """

    dtype: T.DType
    batch: tuple[int, ...]
    query_len: int
    key_len: int
    head_dim: int
    value_dim: int
    query: Operand
    key: Operand
    value: Operand
    causal: bool = False
    mask: str = "none"
    mask_dtype: T.DType | None = None
    mask_strides: tuple[int, ...] = ()
    subgroup: int = 1
    dropout: bool = False
    tiled: bool = False

    @property
    def batch_count(self) -> int:
        return math.prod(self.batch)

    @property
    def row_blocks(self) -> int:
        return -(-self.query_len // ROWS)

    @property
    def grid(self) -> tuple[int, int, int]:
        """The forward's grid (the backward kernels': attention_backward.grid_of)."""
        rows = BLOCK_ROWS if self.tiled else ROWS
        return fold_grid(self.batch_count * -(-self.query_len // rows))

    @property
    def shared_bytes(self) -> int:
        """Shared memory of the forward kernel of this shape."""
        if self.tiled:
            return tiled_shared_bytes(self.head_dim, self.value_dim)
        return untiled_shared_bytes(self.head_dim, self.value_dim)


def shared_bytes(head_dim: int, value_dim: int) -> int:
    """Shared memory the forward kernel takes for these head sizes (a device must have as much): the tiled
    kernel's where it applies."""
    if tiled_applies(head_dim, value_dim):
        return tiled_shared_bytes(head_dim, value_dim)
    return untiled_shared_bytes(head_dim, value_dim)


def untiled_shared_bytes(head_dim: int, value_dim: int) -> int:
    """Shared memory of the one-score-a-lane forward kernel (``forward_kernel`` without ``tiled``)."""
    return 4 * (ROWS * head_dim + LANES * (head_dim + 1) + LANES * value_dim + 3 * THREADS)


DROPOUT_PARAMS = ("key0", "key1", "offset", "dropout_p", "keep_scale")


class Dropout:
    """The dropout of a kernel's weights: element (b, i, j) of the (..., L, S) weights is kept where the
    uniform random value of linear index (b·L + i)·S + j under the generator's key is at least
    ``dropout_p`` (``vkml.frontend.random.keep_mask``'s rule, so the composite drops the same ones),
    and then multiplied by ``keep_scale`` = 1 / (1 - p) rounded to float32."""

    def __init__(self, kb: B.KernelBuilder, shape: AttentionShape):
        self.shape = shape
        self.key0, self.key1, self.offset = (kb.param(n, T.uint32) for n in DROPOUT_PARAMS[:3])
        self.p, self.scale = (kb.param(n, T.float32) for n in DROPOUT_PARAMS[3:])

    def keep(self, batch: Value, row: Value, col: Value) -> Value:
        index = (batch * _u32(self.shape.query_len) + row) * _u32(self.shape.key_len) + col
        return random_value("uniform", index, self.key0, self.key1, self.offset) >= self.p

    def apply(self, keep: Value, weight: Value) -> Value:
        return B.select(keep, weight * self.scale, _f32(0.0))


def _f32(v: float) -> Value:
    return B.const(v, T.float32)


def _max(a: Value, b: Value) -> Value:
    """max(a, b) that propagates a NaN (of either side)."""
    m = B.select(b > a, b, a)
    return B.select(B.isnan(b), b, m)


def _add(a: Value, b: Value) -> Value:
    return a + b


def _row_combine(value: Value, combine, lane: Value, base: Value, tree, subgroup: int) -> Value:
    """``combine`` over the ``LANES`` lanes of a row (``lane`` = this lane, ``base`` = the row's first
    slot of ``tree``), neighbours paired level by level; every lane of the row gets the result.

    Levels inside a subgroup use ``shuffle_xor``; the rest read the subgroup results from shared
    memory (a barrier follows the writes; the caller's next barrier separates the reads from the
    next writes). The lower lane's value is always the left operand, so both give the same bits.
    """
    bit = 1
    while bit < min(subgroup, LANES):
        partner = B.shuffle_xor(value, bit)
        is_left = B.eq(lane & _u32(bit), _u32(0))
        value = B.select(is_left, combine(value, partner), combine(partner, value))
        bit *= 2
    if bit >= LANES:
        return value
    tree[base + lane] = value
    B.barrier()
    parts = [tree[base + _u32(g * bit)] for g in range(LANES // bit)]
    while len(parts) > 1:
        parts = [combine(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
    return parts[0]


def _batch_offsets(batch_index: Value, shape: AttentionShape, operands: list[Operand]) -> list[Value]:
    """Each operand's element offset of batch entry ``batch_index`` (row-major over ``shape.batch``)."""
    offsets: list[Value] = [_u32(0) for _ in operands]
    rest = batch_index
    for d in reversed(range(len(shape.batch))):
        size = shape.batch[d]
        if size == 1:
            continue
        index = rest % _u32(size) if d > 0 else rest
        rest = rest / _u32(size)
        for i, op in enumerate(operands):
            if op.strides[d] == 0:
                continue
            scaled = index / _u32(op.divisors[d]) if op.divisors[d] > 1 else index
            offsets[i] = offsets[i] + scaled * _u32(op.strides[d])
    return offsets


QUERY_REGISTERS = 128  # values of an invocation's own rows kept in registers (own_rows)
UNROLLED_STAGING = 32  # elements an invocation stages at most as written-out loads (more: a loop)


def key_blocks_end(shape: AttentionShape, row0: Value, rows: int, keys: int) -> Value:
    """How many ``keys``-key blocks a workgroup of ``rows`` query rows from ``row0`` walks: every block of
    the S keys, or under causal masking only those up to its last row (later blocks hold no unmasked key)."""
    end = _u32(-(-shape.key_len // keys))
    if shape.causal:
        needed = (row0 + _u32(rows - 1)) / _u32(keys) + _u32(1)
        end = B.select(needed < end, needed, end)
    return end


def fetch(src, dtype: T.DType, src_base: Value, first: Value, limit: int, width: int, rows: int) -> list[Value]:
    """This invocation's elements of ``stage``'s block, in float32 (0 for rows at or past ``limit``), loaded all
    before any is stored: the invocation then waits for memory once per block, and ``put`` may follow a whole
    block later (the forward's prefetch)."""
    tid, count = B.convert(B.local_id(0), T.uint32), rows * width
    values = []
    for n in range(-(-count // THREADS)):
        t = tid + _u32(n * THREADS)
        i = t / _u32(width)
        at = first + i
        inside = at < _u32(limit)
        if (n + 1) * THREADS > count:
            inside = inside & (t < _u32(count))
        where = src_base + B.select(inside, at * _u32(width) + (t - i * _u32(width)), _u32(0))
        values.append(B.select(inside, load_value(src[where], dtype), _f32(0.0)))
    return values


def put(tile, values: list[Value], width: int, pitch: int, rows: int) -> None:
    """tile[i * pitch + j] = the ``fetch``ed values of this invocation."""
    tid, count = B.convert(B.local_id(0), T.uint32), rows * width
    for n, value in enumerate(values):
        t = tid + _u32(n * THREADS)
        i = t / _u32(width)
        at = i * _u32(pitch) + (t - i * _u32(width))
        with _maybe_if(t < _u32(count) if (n + 1) * THREADS > count else None):  # the last round may run past
            tile[at] = value


def stage(tile, src, dtype: T.DType, src_base: Value, first: Value, limit: int, width: int, pitch: int, rows: int):
    """tile[i * pitch + j] = src[src_base + (first + i) * width + j] in float32 for i < rows, j < width;
    0 for rows at or past ``limit`` (the workgroup's invocations take the elements in turn)."""
    if -(-rows * width // THREADS) <= UNROLLED_STAGING:
        put(tile, fetch(src, dtype, src_base, first, limit, width, rows), width, pitch, rows)
        return
    with B.range_(B.convert(B.local_id(0), T.uint32), _u32(rows * width), _u32(THREADS)) as t:
        i = t / _u32(width)
        j = t - i * _u32(width)
        at = first + i
        inside = at < _u32(limit)
        loaded = load_value(src[src_base + B.select(inside, at, _u32(0)) * _u32(width) + j], dtype)
        tile[i * _u32(pitch) + j] = B.select(inside, loaded, _f32(0.0))


@dataclass(frozen=True, eq=False)
class KeyValueBlocks:
    """How a forward kernel moves each block of ``keys`` keys and values into its shared tiles: fetched a
    block ahead into registers, while the block before computes (``prefetch``: where an invocation's
    share is small), or staged by each block itself."""

    k: object
    v: object
    dtype: T.DType
    k_base: Value
    v_base: Value
    shape: AttentionShape
    keys: int
    prefetch: bool

    def ahead(self, key0: Value, later: int = 0) -> list[Value]:
        """The keys then values of the block at ``key0 + later``, in registers (none, and no instruction,
        without ``prefetch``)."""
        if not self.prefetch:
            return []
        if later:
            key0 = key0 + _u32(later)
        s, e, ev, keys = self.shape.key_len, self.shape.head_dim, self.shape.value_dim, self.keys
        return fetch(self.k, self.dtype, self.k_base, key0, s, e, keys) + fetch(
            self.v, self.dtype, self.v_base, key0, s, ev, keys
        )

    def place(self, k_tile, v_tile, fetched, key0: Value) -> None:
        """Block ``key0`` into the tiles (keys padded by one word a row): from ``fetched``, or read now."""
        s, e, ev, keys = self.shape.key_len, self.shape.head_dim, self.shape.value_dim, self.keys
        if self.prefetch:
            k_count = -(-keys * e // THREADS)
            put(k_tile, list(fetched[:k_count]), e, e + 1, keys)
            put(v_tile, list(fetched[k_count:]), ev, ev, keys)
        else:
            stage(k_tile, self.k, self.dtype, self.k_base, key0, s, e, e + 1, keys)
            stage(v_tile, self.v, self.dtype, self.v_base, key0, s, ev, ev, keys)


def own_rows(r: Value, *tiles) -> tuple:
    """Each ``(tile, width)``'s row ``r`` as a list of values (registers) where the widths together are at
    most ``QUERY_REGISTERS``, after a barrier that completes the tiles' staging; else the tiles themselves."""
    if sum(width for _, width in tiles) > QUERY_REGISTERS:
        return tuple(tile for tile, _ in tiles)
    B.barrier()
    return tuple([tile[r * _u32(width) + _u32(i)] for i in range(width)] for tile, width in tiles)


def row_dot(length: int, a, a_at, b, b_at) -> Value:
    """Σ_i a[a_at + i] · b[b_at + i] in ascending i from -0.0 (shared tiles; ``a`` may be a list of
    ``length`` values, the invocation's own row held in registers: the same sum, one load a step)."""
    if isinstance(a, list):
        total = _f32(-0.0)
        for i, a_i in enumerate(a):
            total = total + a_i * b[b_at + _u32(i)]
        return total
    (total,) = B.loop(0, length, 1, (_f32(-0.0),), lambda i, acc: acc + a[a_at + i] * b[b_at + i])
    return total


def masked_score(shape: AttentionShape, dot: Value, scale: Value, row: Value, col: Value, mask, mask_base) -> Value:
    """The score of query ``row`` and key ``col`` from their dot product: times ``scale``, plus a float
    mask; -inf where the key is masked (bool mask, causal, ``col`` past S) or ``row`` is past L."""
    L, S = shape.query_len, shape.key_len
    s = dot * scale
    valid = (col < _u32(S)) & (row < _u32(L))
    if shape.causal:
        valid = valid & (col <= row)
    if mask is not None:
        ms = shape.mask_strides
        at = mask_base + B.select(valid, row, _u32(0)) * _u32(ms[-2]) + B.select(valid, col, _u32(0)) * _u32(ms[-1])
        if shape.mask == "bool":
            valid = valid & mask[at]
        else:
            bias = load_value(mask[at], shape.mask_dtype)
            if shape.dtype.nbytes < shape.mask_dtype.nbytes:
                bias = narrow(bias, shape.dtype)
            s = s + bias
    return B.select(valid, s, _f32(NEG_INF))


def forward_kernel(shape: AttentionShape) -> Kernel:
    """The fused forward kernel for ``shape``: buffers q, k, v (, mask), out, lse; parameter ``scale``."""
    if shape.tiled:
        return tiled_forward_kernel(shape)
    dt = shape.dtype
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    kb = B.KernelBuilder(f"attention_{'x'.join(map(str, shape.batch)) or 'scalar'}_{L}x{S}x{E}x{Ev}", (THREADS, 1, 1))
    q = kb.buffer("q", T.storage(dt))
    k = kb.buffer("k", T.storage(dt))
    v = kb.buffer("v", T.storage(dt))
    mask = kb.buffer("mask", T.storage(shape.mask_dtype)) if shape.mask != "none" else None
    out = kb.buffer("out", T.storage(dt), "write")
    lse = kb.buffer("lse", T.float32, "write")
    scale = kb.param("scale", T.float32)
    dropout = Dropout(kb, shape) if shape.dropout else None
    q_tile = kb.shared("q_tile", T.float32, ROWS * E)
    k_tile = kb.shared("k_tile", T.float32, LANES * (E + 1))
    v_tile = kb.shared("v_tile", T.float32, LANES * Ev)
    p_tile = kb.shared("p_tile", T.float32, THREADS)
    max_tree = kb.shared("max_tree", T.float32, THREADS)
    sum_tree = kb.shared("sum_tree", T.float32, THREADS)
    accumulators = -(-Ev // LANES)
    with kb:
        lid = B.convert(B.local_id(0), T.uint32)
        r, c = lid >> _u32(LANES.bit_length() - 1), lid & _u32(LANES - 1)
        base = r * _u32(LANES)
        w = linear_workgroup(shape.grid)
        with B.if_(w < _u32(shape.batch_count * shape.row_blocks)):
            b = w / _u32(shape.row_blocks)
            row0 = (w - b * _u32(shape.row_blocks)) * _u32(ROWS)
            row = row0 + r
            operands = [shape.query, shape.key, shape.value]
            if mask is not None:
                operands.append(Operand(shape.mask_strides[:-2], (1,) * len(shape.batch)))
            offsets = _batch_offsets(b, shape, operands)
            q_base, k_base, v_base = offsets[:3]

            stage(q_tile, q, dt, q_base, row0, L, E, E, ROWS)
            # The invocation's query row lives in registers where it is short: each step of its dot
            # products then reads one key element from shared memory, not two elements.
            (q_row,) = own_rows(r, (q_tile, E))
            end = key_blocks_end(shape, row0, ROWS, LANES)

            prefetch = -(-LANES * max(E, Ev) // THREADS) <= UNROLLED_STAGING
            blocks = KeyValueBlocks(k, v, dt, k_base, v_base, shape, LANES, prefetch)

            def block(kb_i, m, l, *carried):
                acc, fetched = carried[:accumulators], carried[accumulators:]
                key0 = kb_i * _u32(LANES)
                B.barrier()  # the previous block's tiles (and the query tile's stores) are done with
                blocks.place(k_tile, v_tile, fetched, key0)
                B.barrier()
                following = blocks.ahead(key0, LANES)
                score = row_dot(E, q_row, r * _u32(E), k_tile, c * _u32(E + 1))
                s = masked_score(shape, score, scale, row, key0 + c, mask, offsets[3] if mask is not None else None)
                m_new = _max(m, _row_combine(s, _max, c, base, max_tree, shape.subgroup))
                dead = B.eq(m_new, _f32(NEG_INF))  # no unmasked key so far: keep zeros
                p = B.select(dead, _f32(0.0), M.exp(s - m_new))
                alpha = B.select(dead, _f32(1.0), M.exp(m - m_new))
                # The sum l takes every weight; the output only the kept ones (dropout after softmax).
                p_tile[lid] = dropout.apply(dropout.keep(b, row, key0 + c), p) if dropout else p
                l_new = l * alpha + _row_combine(p, _add, c, base, sum_tree, shape.subgroup)
                B.barrier()
                cols = [
                    B.select(c + _u32(a * LANES) < _u32(Ev), c + _u32(a * LANES), _u32(0)) for a in range(accumulators)
                ]

                def step(cc, *sums):
                    weight = p_tile[base + cc]
                    return tuple(total + weight * v_tile[cc * _u32(Ev) + j] for total, j in zip(sums, cols))

                sums = B.loop(0, LANES, 1, tuple(_f32(-0.0) for _ in range(accumulators)), step)
                return (m_new, l_new, *(a * alpha + s_ for a, s_ in zip(acc, sums)), *following)

            inits = (_f32(NEG_INF), _f32(0.0), *(_f32(0.0) for _ in range(accumulators)))
            inits += tuple(blocks.ahead(_u32(0)))
            m, l, *acc = B.loop(_u32(0), end, _u32(1), inits, block)[: 2 + accumulators]
            with B.if_(row < _u32(L)):
                empty = B.eq(l, _f32(0.0))
                out_row = (b * _u32(L) + row) * _u32(Ev)
                for a, total in enumerate(acc):
                    j = c + _u32(a * LANES)
                    value = B.select(empty, _f32(0.0), total / l)
                    with B.if_(j < _u32(Ev)):
                        out[out_row + j] = store_value(narrow(value, dt), dt)
                with B.if_(B.eq(c, _u32(0))):
                    lse[b * _u32(L) + row] = B.select(empty, _f32(NEG_INF), m + M.log(l))
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel


@functools.lru_cache(maxsize=64)
def cached_forward_kernel(shape: AttentionShape) -> Kernel:
    """``forward_kernel(shape)``, built once per shape (bounded: shapes that change every step)."""
    return forward_kernel(shape)


# The register-tiled forward (``AttentionShape.tiled``). The workgroup keeps the ``THREADS`` = GROUPS x LANES
# layout of the kernel above, but an invocation owns a TILE_ROWS x TILE_KEYS tile of scores: group g holds query
# rows g·TILE_ROWS + i of the workgroup's BLOCK_ROWS, lane c keys c + LANES·t of each BLOCK_KEYS block. Each step
# of the score loop then loads TILE_ROWS + TILE_KEYS values for TILE_ROWS·TILE_KEYS products (the kernel above:
# one load a product), each step of the weights-times-values loop TILE_ROWS weights and Ev / LANES values for
# TILE_ROWS·Ev / LANES products, and a block of BLOCK_KEYS keys takes three barriers (four where the row max
# needs shared memory) instead of five per LANES keys.
TILE_ROWS = 4  # query rows per invocation
TILE_KEYS = 2  # keys per invocation and block
GROUPS = THREADS // LANES  # row groups per workgroup
BLOCK_ROWS = GROUPS * TILE_ROWS  # query rows per workgroup
BLOCK_KEYS = LANES * TILE_KEYS  # keys per block
# The tiled kernel is taken where its tiles fit in this much shared memory, a bound of the shape alone (so
# every device runs the same kernel and gives the same bits); larger heads keep the kernel above.
TILED_SHARED_LIMIT = 32768


def tiled_shared_bytes(head_dim: int, value_dim: int) -> int:
    """Shared memory of the tiled forward: query rows, key and value blocks, the weights, one tree per tile row."""
    e, ev = head_dim, value_dim
    return 4 * (BLOCK_ROWS * e + BLOCK_KEYS * (e + 1) + BLOCK_KEYS * ev + BLOCK_ROWS * BLOCK_KEYS + TILE_ROWS * THREADS)


def tiled_applies(head_dim: int, value_dim: int) -> bool:
    """Whether the forward of these head sizes takes the tiled kernel (``VKML_ATTENTION_TILED``, on by default)."""
    return vkml_config.attention_tiled() and tiled_shared_bytes(head_dim, value_dim) <= TILED_SHARED_LIMIT


def _rows_combine(values: list[Value], combine, lane: Value, base: Value, tree, subgroup: int) -> list[Value]:
    """``_row_combine`` of several values at once (value i through ``tree``'s i-th ``THREADS`` slots): the same
    tree over the ``LANES`` lanes for each, one barrier for all."""
    bit = 1
    while bit < min(subgroup, LANES):
        is_left = B.eq(lane & _u32(bit), _u32(0))
        combined = []
        for value in values:
            partner = B.shuffle_xor(value, bit)
            combined.append(B.select(is_left, combine(value, partner), combine(partner, value)))
        values = combined
        bit *= 2
    if bit >= LANES:
        return values
    for i, value in enumerate(values):
        tree[_u32(i * THREADS) + base + lane] = value
    B.barrier()
    results = []
    for i in range(len(values)):
        parts = [tree[_u32(i * THREADS + g * bit) + base] for g in range(LANES // bit)]
        while len(parts) > 1:
            parts = [combine(parts[j], parts[j + 1]) for j in range(0, len(parts), 2)]
        results.append(parts[0])
    return results


def tiled_forward_kernel(shape: AttentionShape) -> Kernel:
    """The register-tiled forward of ``shape``: the buffers and parameters of ``forward_kernel``, its results
    in the order the op's page states for this kernel (scores as there; a block's row max over an invocation's
    keys in ascending t, then the lanes' tree; each lane's share of the row sum rescaled and summed on its own,
    the lanes' tree once at the end; the weights-times-values sums over BLOCK_KEYS keys a block)."""
    dt = shape.dtype
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    name = f"attention_tiled_{'x'.join(map(str, shape.batch)) or 'scalar'}_{L}x{S}x{E}x{Ev}"
    kb = B.KernelBuilder(name, (THREADS, 1, 1))
    q = kb.buffer("q", T.storage(dt))
    k = kb.buffer("k", T.storage(dt))
    v = kb.buffer("v", T.storage(dt))
    mask = kb.buffer("mask", T.storage(shape.mask_dtype)) if shape.mask != "none" else None
    out = kb.buffer("out", T.storage(dt), "write")
    lse = kb.buffer("lse", T.float32, "write")
    scale = kb.param("scale", T.float32)
    dropout = Dropout(kb, shape) if shape.dropout else None
    q_tile = kb.shared("q_tile", T.float32, BLOCK_ROWS * E)
    k_tile = kb.shared("k_tile", T.float32, BLOCK_KEYS * (E + 1))  # padded: a group's lanes read distinct banks
    v_tile = kb.shared("v_tile", T.float32, BLOCK_KEYS * Ev)
    p_tile = kb.shared("p_tile", T.float32, BLOCK_ROWS * BLOCK_KEYS)
    tree = kb.shared("tree", T.float32, TILE_ROWS * THREADS)
    columns = -(-Ev // LANES)
    row_blocks = -(-L // BLOCK_ROWS)
    with kb:
        lid = B.convert(B.local_id(0), T.uint32)
        g, c = lid >> _u32(LANES.bit_length() - 1), lid & _u32(LANES - 1)
        base = g * _u32(LANES)
        w = linear_workgroup(shape.grid)
        with B.if_(w < _u32(shape.batch_count * row_blocks)):
            b = w / _u32(row_blocks)
            row0 = (w - b * _u32(row_blocks)) * _u32(BLOCK_ROWS)
            local_rows = [g * _u32(TILE_ROWS) + _u32(i) for i in range(TILE_ROWS)]
            rows = [row0 + r for r in local_rows]
            q_at = [r * _u32(E) for r in local_rows]
            p_at = [r * _u32(BLOCK_KEYS) for r in local_rows]
            local_keys = [c + _u32(t * LANES) for t in range(TILE_KEYS)]
            k_at = [kk * _u32(E + 1) for kk in local_keys]
            cols = [B.select(c + _u32(a * LANES) < _u32(Ev), c + _u32(a * LANES), _u32(0)) for a in range(columns)]
            operands = [shape.query, shape.key, shape.value]
            if mask is not None:
                operands.append(Operand(shape.mask_strides[:-2], (1,) * len(shape.batch)))
            offsets = _batch_offsets(b, shape, operands)
            q_base, k_base, v_base = offsets[:3]
            mask_base = offsets[3] if mask is not None else None

            stage(q_tile, q, dt, q_base, row0, L, E, E, BLOCK_ROWS)
            end = key_blocks_end(shape, row0, BLOCK_ROWS, BLOCK_KEYS)
            prefetch = -(-BLOCK_KEYS * E // THREADS) + -(-BLOCK_KEYS * Ev // THREADS) <= UNROLLED_STAGING
            blocks = KeyValueBlocks(k, v, dt, k_base, v_base, shape, BLOCK_KEYS, prefetch)

            def score_step(e, *sums):
                qs = [q_tile[at + e] for at in q_at]
                ks = [k_tile[at + e] for at in k_at]
                return tuple(
                    sums[i * TILE_KEYS + t] + qs[i] * ks[t] for i in range(TILE_ROWS) for t in range(TILE_KEYS)
                )

            def value_step(kk, *sums):
                weights = [p_tile[at + kk] for at in p_at]
                values = [v_tile[kk * _u32(Ev) + j] for j in cols]
                return tuple(
                    sums[i * columns + a] + weights[i] * values[a] for i in range(TILE_ROWS) for a in range(columns)
                )

            def block(kb_i, *carried):
                m, l = carried[:TILE_ROWS], carried[TILE_ROWS : 2 * TILE_ROWS]
                acc = carried[2 * TILE_ROWS : 2 * TILE_ROWS + TILE_ROWS * columns]
                fetched = carried[2 * TILE_ROWS + TILE_ROWS * columns :]
                key0 = kb_i * _u32(BLOCK_KEYS)
                B.barrier()  # the previous block's tiles (and the query tile's stores) are done with
                blocks.place(k_tile, v_tile, fetched, key0)
                B.barrier()
                following = blocks.ahead(key0, BLOCK_KEYS)
                dots = B.loop(0, E, 1, tuple(_f32(-0.0) for _ in range(TILE_ROWS * TILE_KEYS)), score_step)
                scores = [
                    [
                        masked_score(
                            shape, dots[i * TILE_KEYS + t], scale, rows[i], key0 + local_keys[t], mask, mask_base
                        )
                        for t in range(TILE_KEYS)
                    ]
                    for i in range(TILE_ROWS)
                ]
                own_max = []
                for row_scores in scores:
                    top = row_scores[0]
                    for s in row_scores[1:]:
                        top = _max(top, s)
                    own_max.append(top)
                block_max = _rows_combine(own_max, _max, c, base, tree, shape.subgroup)
                new_m, new_l, alphas = [], [], []
                for i in range(TILE_ROWS):
                    m_new = _max(m[i], block_max[i])
                    dead = B.eq(m_new, _f32(NEG_INF))  # no unmasked key so far: keep zeros
                    alpha = B.select(dead, _f32(1.0), M.exp(m[i] - m_new))
                    total = None
                    for t in range(TILE_KEYS):
                        p = B.select(dead, _f32(0.0), M.exp(scores[i][t] - m_new))
                        total = p if total is None else total + p
                        # The sum l takes every weight; the output only the kept ones (dropout after softmax).
                        if dropout:
                            p = dropout.apply(dropout.keep(b, rows[i], key0 + local_keys[t]), p)
                        p_tile[p_at[i] + local_keys[t]] = p
                    new_m.append(m_new)
                    new_l.append(l[i] * alpha + total)
                    alphas.append(alpha)
                B.barrier()
                sums = B.loop(0, BLOCK_KEYS, 1, tuple(_f32(-0.0) for _ in range(TILE_ROWS * columns)), value_step)
                new_acc = [acc[n] * alphas[n // columns] + sums[n] for n in range(TILE_ROWS * columns)]
                return (*new_m, *new_l, *new_acc, *following)

            inits = (*(_f32(NEG_INF) for _ in range(TILE_ROWS)), *(_f32(0.0) for _ in range(TILE_ROWS)))
            inits += tuple(_f32(0.0) for _ in range(TILE_ROWS * columns))
            inits += tuple(blocks.ahead(_u32(0)))
            results = B.loop(_u32(0), end, _u32(1), inits, block)
            m, l = results[:TILE_ROWS], results[TILE_ROWS : 2 * TILE_ROWS]
            acc = results[2 * TILE_ROWS : 2 * TILE_ROWS + TILE_ROWS * columns]
            if shape.subgroup < LANES:
                B.barrier()  # the last block's reads of the tree are done
            l = _rows_combine(list(l), _add, c, base, tree, shape.subgroup)
            for i in range(TILE_ROWS):
                with B.if_(rows[i] < _u32(L)):
                    empty = B.eq(l[i], _f32(0.0))
                    out_row = (b * _u32(L) + rows[i]) * _u32(Ev)
                    for a in range(columns):
                        j = c + _u32(a * LANES)
                        value = B.select(empty, _f32(0.0), acc[i * columns + a] / l[i])
                        with B.if_(j < _u32(Ev)):
                            out[out_row + j] = store_value(narrow(value, dt), dt)
                    with B.if_(B.eq(c, _u32(0))):
                        lse[b * _u32(L) + rows[i]] = B.select(empty, _f32(NEG_INF), m[i] + M.log(l[i]))
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel
