"""The fused attention forward on cooperative matrices: float16 q, k, v on a device with VK_KHR_cooperative_matrix.

Chosen (``applies``) for float16 inputs on a device that lists the 16×16×16 float16 × float16 →
float32 subgroup shape, has 32-wide subgroups with shuffles, the Vulkan memory model and room for a
``Config``'s shared memory; everywhere else (float32 and bfloat16 inputs, lavapipe, the CPU) the
scalar kernel of vkml/kernels/attention.py runs. ``VKML_ATTENTION_COOPMAT=0`` turns it off.
Masks, causal masking, dropout, GQA and broadcast batch dims are taken as the scalar kernel
takes them (the same ``AttentionShape``, the same score masking and dropout rule).

A workgroup owns ``rows`` query rows (16 per subgroup of 32 invocations) of one batch entry and
walks the keys in blocks of ``keys``, in ascending order (flash attention). Head dims are padded
to multiples of 16 with zeros. Per workgroup it stages its query rows once (float16, as stored)
and each subgroup keeps its 16 × E block as A matrices; per key block:

1. stage the key and value blocks in shared memory (float16 as stored; rows past S are zeros);
2. each subgroup computes its 16 × ``keys`` block of scores S = Q Kᵀ on matrices (float32
   accumulators from -0.0, E ascending in blocks of 16) into shared memory (float32);
3. two invocations per row take the row's scores (invocation h the columns c ≡ h mod 2,
   ascending): scale and mask them as the scalar kernel (``masked_score``), combine the row max
   (``shuffle_xor``, the even invocation's value on the left), p = exp(s - m'), α = exp(m - m')
   (``weight_exp``: arguments are never positive, and the bound leaves room for a shorter routine);
   the row sum l' = l·α + Σ p takes the float32 weights; the weights that multiply V are rounded
   to float16 (dropped ones to 0), as flash attention does, and written to shared memory;
4. each subgroup computes its 16 × Ev block of P V on matrices (from -0.0, keys ascending in
   blocks of 16) into shared memory, and each invocation adds its columns (c ≡ h mod 2) to its
   float32 accumulators: acc' = acc·α + (P V) (times dropout's 1 / (1 - p): after the product, so
   that a kept weight cannot pass float16's range).

At the end out = acc / l (zeros where l = 0: a row with no unmasked key) and the row's
log-sum-exp m + log(l) is stored for the backward kernels, which are the scalar ones.

Precision (docs/ops/scaled_dot_product_attention.md): the weights that multiply V are float16
(relative error 2⁻¹¹ each), so the result is within ``bound`` of the exact attention, not the
scalar kernel's bits. The CPU interpreter adds exact products in ascending order in
``cm_mul_add``; a device sums the products of a 16-block in its own order, the same bits on every
run (fixed tiles, fixed order of the blocks and of the row combines).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import config as vkml_config
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Kernel, Value
from ..ir.instructions import VECTOR_WIDTH as VECTOR
from ..ir.verify import verify_kernel
from ..ops import mathlib as M
from ..ops.cast import narrow, store_value
from ..ops.mathlib.bits import pow2, quiet, round_to_int
from ..ops.mathlib.explog import LOG2E
from .attention import (
    NEG_INF,
    AttentionShape,
    Dropout,
    Operand,
    _batch_offsets,
    _f32,
    _max,
    key_blocks_end,
    masked_score,
)
from .index import _u32
from .lowering import fold_grid, linear_workgroup
from .matmul.tiled import _maybe_if

MATRIX = 16
SUBGROUP = 32  # invocations per subgroup: two per row of a subgroup's 16 rows
PER_ROW = SUBGROUP // MATRIX
A_MATRIX = T.matrix_type(T.float16, MATRIX, MATRIX, "a")
B_MATRIX = T.matrix_type(T.float16, MATRIX, MATRIX, "b")
ACC_MATRIX = T.matrix_type(T.float32, MATRIX, MATRIX, "acc")
HALF_PAD = 8  # halves added to each float16 shared row (matrix loads of consecutive rows hit distinct banks)
WORD_PAD = 4  # words added to each float32 shared row


def _padded(n: int) -> int:
    return -(-n // MATRIX) * MATRIX


@dataclass(frozen=True)
class Config:
    """The workgroup's block: ``rows`` query rows (a multiple of 16: one subgroup per 16) by ``keys`` keys
    per step (a multiple of 16)."""

    rows: int = 64
    keys: int = 64

    @property
    def subgroups(self) -> int:
        return self.rows // MATRIX

    @property
    def threads(self) -> int:
        return self.subgroups * SUBGROUP

    def pitches(self, head_dim: int, value_dim: int) -> tuple[int, int, int, int]:
        """Shared row pitches: queries and weights (halves), keys (halves), values (halves), scores and P V (words)."""
        e, ev = _padded(head_dim), _padded(value_dim)
        return max(e, self.keys) + HALF_PAD, e + HALF_PAD, ev + HALF_PAD, max(self.keys, ev) + WORD_PAD

    def shared_bytes(self, head_dim: int, value_dim: int) -> int:
        qp, kp, vp, sp = self.pitches(head_dim, value_dim)
        return 2 * (self.rows * qp + self.keys * (kp + vp)) + 4 * self.rows * sp


# Tried in turn: the first that fits the device's shared memory is taken.
CONFIGS = (Config(64, 64), Config(64, 32), Config(32, 32), Config(16, 32), Config(16, 16))
# Up to this many keys, 32-key blocks go first: measured faster there and slower on long causal rows
# (docs/benchmarks.md, session 13, "Key block size of the float16 kernel").
SHORT_KEYS = 2048


def config_for(shape: AttentionShape, shared_limit: int, invocations: int = 1024) -> Config | None:
    """The first of ``CONFIGS`` whose shared memory and invocations the device has (None: none fits),
    with ``Config(64, 32)`` ahead of ``Config(64, 64)`` for at most ``SHORT_KEYS`` keys.

    >>> s = AttentionShape(T.float16, (2,), 64, 1024, 64, 64, *(Operand((64 * 64,), (1,)),) * 3)
    >>> config_for(s, 49152), config_for(AttentionShape(**{**vars(s), "key_len": 4096}), 49152)
    (Config(rows=64, keys=32), Config(rows=64, keys=64))
    """
    order = CONFIGS
    if shape.key_len <= SHORT_KEYS:
        order = (CONFIGS[1], CONFIGS[0], *CONFIGS[2:])
    for config in order:
        if config.shared_bytes(shape.head_dim, shape.value_dim) <= shared_limit and config.threads <= invocations:
            return config
    return None


def config_of(features, shape: AttentionShape) -> Config | None:
    """``config_for`` with the limits of a device with ``features`` (None: the CPU interpreter, 48 KiB of shared memory)."""
    if features is None:
        return config_for(shape, 49152)
    return config_for(shape, features.max_compute_shared_memory_size, features.max_workgroup_invocations)


def applies(features, shape: AttentionShape) -> bool:
    """Whether the forward of ``shape`` runs on cooperative matrices on a device with ``features``.

    >>> from vkml.codegen.features import DeviceFeatures
    >>> s = AttentionShape(T.float16, (2,), 64, 64, 64, 64, *(Operand((64 * 64,), (1,)),) * 3)
    >>> applies(DeviceFeatures.h200_like(), s), applies(DeviceFeatures.lavapipe_like(), s), applies(None, s)
    (True, False, False)
    """
    if features is None or shape.dtype is not T.float16 or not vkml_config.attention_coopmat():
        return False
    return (
        features.has_matrix_shape(MATRIX, MATRIX, MATRIX)
        and features.subgroup_size == SUBGROUP
        and features.subgroup_shuffle  # a row's two invocations combine by shuffle_xor
        and features.vulkan_memory_model
        and features.float16
        and features.storage_buffer_16bit
        and tuple(features.spirv_version) >= (1, 6)
        and config_of(features, shape) is not None
    )


def grid(shape: AttentionShape, config: Config) -> tuple[int, int, int]:
    return fold_grid(shape.batch_count * -(-shape.query_len // config.rows))


# 2^f for f in [-1/2, 1/2], relative error below 2^-22 evaluated in float32 (a least-squares fit on
# Chebyshev nodes, coefficients rounded to float32; Horner, no fused multiply-add).
_EXP2_HALF = (
    1.0000001192092896,
    0.6931469440460205,
    0.24022121727466583,
    0.05550742521882057,
    0.009675459936261177,
    0.0013266970636323094,
)


def weight_exp(x: Value, keep_nan: bool = True) -> Value:
    """e^x for the weights' arguments x <= 0 (a score, or the last row maximum, minus the new one).

    Relative error below 2^-22 + |x|·2^-23 (the polynomial's, then t = x·log2(e)'s: the rounded constant
    and product; at most 2^-16 where the result is normal): far inside the page's 2^-10 per weight, of which the weights' rounding
    to float16 (2^-11) takes half, in about a third of the contract's 1-ulp exp's instructions. e^x below 2^-126 (and -inf) gives
    +0.0: within ``bound``'s absolute 2^-25 per weight. NaN gives NaN, quieted (as the contract's exp). Every value is made by float32
    adds, multiplies and bit operations, so every device and the CPU interpreter agree on its bits.
    ``keep_nan=False`` gives +0.0 for NaN (five operations fewer, the same bits elsewhere): for a kernel whose
    row maximum and final division carry a NaN to the row's output on their own (vkml/kernels/attention_cm2.py).
    """
    t = x * _f32(LOG2E)
    inside = t > _f32(-126.0)  # false for -inf and NaN
    # Outside (t <= -126, -inf, NaN) the steps below compute garbage that the last select drops: no clamp of t.
    k, k_int = round_to_int(t)
    f = t - k  # exact: the nearest integer of a float32 below 2^22 in magnitude
    p = _f32(_EXP2_HALF[-1])
    for c in reversed(_EXP2_HALF[:-1]):
        p = p * f + _f32(c)
    finite = B.select(inside, p * pow2(k_int), _f32(0.0))
    return B.select(B.isnan(x), quiet(x), finite) if keep_nan else finite


@dataclass(frozen=True)
class _Staging:
    """How a block of ``rows`` rows of ``width`` float16 elements moves from a buffer to a shared tile.

    Every invocation moves ``per_thread`` units (groups of 4 halves with ``vector``, else single
    halves), unit ``t = tid + i·threads`` for i below ``per_thread``: ``fetch`` issues all of its
    loads before ``put`` stores any, so an invocation waits for memory once per block, not once
    per unit, and a fetch may run a whole block ahead of its put (the key/value prefetch).
    """

    rows: int
    width: int
    pitch: int
    threads: int
    vector: bool

    @property
    def step(self) -> int:
        return VECTOR if self.vector else 1

    @property
    def units(self) -> int:
        return _padded(self.width) // self.step

    @property
    def per_thread(self) -> int:
        return -(-(self.rows * self.units) // self.threads)

    def _unit(self, tid: Value, i: int) -> tuple[Value, Value, Value]:
        """(unit index, its tile row, its first column)."""
        t = tid + _u32(i * self.threads)
        row = t / _u32(self.units)
        column = (t - row * _u32(self.units)) * _u32(self.step) if self.step > 1 else t - row * _u32(self.units)
        return t, row, column

    def fetch(self, src, tid: Value, base: Value, first: Value, limit: int) -> list[Value]:
        """The values of ``src[base + (first + row) * width + column]`` for this invocation's units, as
        ``put`` takes them: +0.0 for rows at or past ``limit``, for the padding columns and for units
        past the block (when ``rows · units`` is not a multiple of ``threads``)."""
        zero = B.const_bits(0, T.float16)
        values: list[Value] = []
        for i in range(self.per_thread):
            t, row, column = self._unit(tid, i)
            at = first + row
            inside = (at < _u32(limit)) & (t < _u32(self.rows * self.units))
            if _padded(self.width) != self.width:  # a group is wholly inside or past ``width``: both are multiples of 4
                inside = inside & (column < _u32(self.width))
            where = base + B.select(inside, at * _u32(self.width) + column, _u32(0))
            loaded = src.load4(where / _u32(VECTOR)) if self.vector else (src[where],)
            values.extend(B.select(inside, x, zero) for x in loaded)
        return values

    def put(self, tile, tid: Value, values: list[Value]) -> None:
        """tile[row * pitch + column] = the fetched values of this invocation's units."""
        for i in range(self.per_thread):
            t, row, column = self._unit(tid, i)
            chunk = values[i * self.step : (i + 1) * self.step]
            at = row * _u32(self.pitch) + column
            past_block = (i + 1) * self.threads > self.rows * self.units  # the last round may run past it
            with _maybe_if(t < _u32(self.rows * self.units) if past_block else None):
                if self.vector:
                    tile.store4(at / _u32(VECTOR), chunk)
                else:
                    tile[at] = chunk[0]


def _vector(operand: Operand, width: int) -> bool:
    """Whether an operand's rows of ``width`` start on whole groups of 4 (``_Staging``'s vector moves)."""
    return width % VECTOR == 0 and all(s % VECTOR == 0 for s in operand.strides)


def _pair(value: Value, combine, half: Value) -> Value:
    """``combine`` of the two invocations of a row, the even one's value on the left (both get the result)."""
    partner = B.shuffle_xor(value, 1)
    return B.select(B.eq(half, _u32(0)), combine(value, partner), combine(partner, value))


def forward_kernel(shape: AttentionShape, config: Config) -> Kernel:
    """The forward kernel for ``shape`` (float16): buffers q, k, v (, mask), out, lse; parameter ``scale``
    (and the dropout parameters), as the scalar kernel's, on a grid of ``grid(shape, config)``."""
    if shape.dtype is not T.float16:
        raise ValueError(f"the cooperative-matrix attention kernel takes float16, not {shape.dtype.name}")
    dt = shape.dtype
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    E16, Ev16 = _padded(E), _padded(Ev)
    rows, keys, threads = config.rows, config.keys, config.threads
    qp, kp, vp, sp = config.pitches(E, Ev)
    row_blocks = -(-L // rows)
    total = shape.batch_count * row_blocks
    name = f"attention_cm_{'x'.join(map(str, shape.batch)) or 'scalar'}_{L}x{S}x{E}x{Ev}"
    kb = B.KernelBuilder(name, (threads, 1, 1), SUBGROUP)
    q = kb.buffer("q", T.storage(dt))
    k = kb.buffer("k", T.storage(dt))
    v = kb.buffer("v", T.storage(dt))
    mask = kb.buffer("mask", T.storage(shape.mask_dtype)) if shape.mask != "none" else None
    out = kb.buffer("out", T.storage(dt), "write")
    lse = kb.buffer("lse", T.float32, "write")
    scale = kb.param("scale", T.float32)
    dropout = Dropout(kb, shape) if shape.dropout else None
    qp_tile = kb.shared("qp_tile", T.float16, rows * qp)  # the query rows, then each block's weights
    k_tile = kb.shared("k_tile", T.float16, keys * kp)
    v_tile = kb.shared("v_tile", T.float16, keys * vp)
    so_tile = kb.shared("so_tile", T.float32, rows * sp)  # each block's scores, then its P V
    columns = Ev16 // PER_ROW  # accumulators per invocation
    with kb:
        tid = B.convert(B.local_id(0), T.uint32)
        sg = B.subgroup_id()
        lane = tid & _u32(SUBGROUP - 1)
        half = lane & _u32(PER_ROW - 1)
        r_local = sg * _u32(MATRIX) + lane / _u32(PER_ROW)
        w = linear_workgroup(grid(shape, config))
        with B.if_(w < _u32(total)):  # uniform per workgroup
            b = w / _u32(row_blocks)
            row0 = (w - b * _u32(row_blocks)) * _u32(rows)
            row = row0 + r_local
            operands = [shape.query, shape.key, shape.value]
            if mask is not None:
                operands.append(Operand(shape.mask_strides[:-2], (1,) * len(shape.batch)))
            offsets = _batch_offsets(b, shape, operands)
            q_base, k_base, v_base = offsets[:3]
            mask_base = offsets[3] if mask is not None else None

            q_staging = _Staging(rows, E, qp, threads, _vector(shape.query, E))
            k_staging = _Staging(keys, E, kp, threads, _vector(shape.key, E))
            v_staging = _Staging(keys, Ev, vp, threads, _vector(shape.value, Ev))
            q_staging.put(qp_tile, tid, q_staging.fetch(q, tid, q_base, row0, L))
            B.barrier()
            q_first = sg * _u32(MATRIX * qp)
            q_m = [qp_tile.load_matrix(q_first + _u32(MATRIX * t), A_MATRIX, qp, "row") for t in range(E16 // MATRIX)]
            s_first = sg * _u32(MATRIX * sp)
            s_row = r_local * _u32(sp)
            p_row = r_local * _u32(qp)
            end = key_blocks_end(shape, row0, rows, keys)

            k_count = k_staging.per_thread * k_staging.step

            def fetch_block(key0):
                """Block ``key0``'s keys and values, in registers (rows past S: zeros; reading a block past
                the last one, as the last iteration's prefetch does, is harmless)."""
                return k_staging.fetch(k, tid, k_base, key0, S) + v_staging.fetch(v, tid, v_base, key0, S)

            def block(kb_i, m, l, *carried):
                acc, fetched = carried[:columns], carried[columns:]
                key0 = kb_i * _u32(keys)
                B.barrier()  # the previous block's tiles (and the query matrices' loads) are done with
                k_staging.put(k_tile, tid, list(fetched[:k_count]))
                v_staging.put(v_tile, tid, list(fetched[k_count:]))
                B.barrier()
                # The next block's loads are issued now and wait in registers while this block computes.
                following = fetch_block(key0 + _u32(keys))
                zero = B.matrix_fill(B.const_bits(0x80000000, T.float32), ACC_MATRIX)
                for j in range(keys // MATRIX):  # S = Q Kᵀ: Kᵀ is the key tile read column-major
                    scores = zero
                    for t, q_t in enumerate(q_m):
                        k_t = k_tile.load_matrix(_u32(MATRIX * j * kp + MATRIX * t), B_MATRIX, kp, "col")
                        scores = B.matrix_mul_add(q_t, k_t, scores)
                    so_tile.store_matrix(s_first + _u32(MATRIX * j), scores, sp, "row")
                # A subgroup's rows of the score and weight tiles are its own: it alone writes and reads
                # them within a block, so it waits for itself only (the block's first barrier keeps the
                # next block's writes behind every read of this one).
                B.subgroup_barrier()

                # The row's columns are written out (not a loop): their loads, exps and stores are independent,
                # and the max and the sum still take them in ascending order. The scores go back to shared
                # memory rather than wait in registers, which the key/value prefetch needs.
                top, columns_of_row = _f32(NEG_INF), [_u32(i * PER_ROW) + half for i in range(keys // PER_ROW)]
                for col in columns_of_row:
                    s = masked_score(shape, so_tile[s_row + col], scale, row, key0 + col, mask, mask_base)
                    so_tile[s_row + col] = s  # read back by this same invocation below
                    top = _max(top, s)
                m_new = _max(m, _pair(top, _max, half))
                dead = B.eq(m_new, _f32(NEG_INF))  # no unmasked key so far: keep zeros
                alpha = B.select(dead, _f32(1.0), weight_exp(m - m_new))

                part = _f32(-0.0)
                for col in columns_of_row:
                    p = B.select(dead, _f32(0.0), weight_exp(so_tile[s_row + col] - m_new))
                    # The sum l takes every weight; the product with V only the kept ones (dropout after softmax),
                    # scaled by 1 / (1 - p) only after it: scaled first, a weight could pass float16's range.
                    kept = B.select(dropout.keep(b, row, key0 + col), p, _f32(0.0)) if dropout else p
                    qp_tile[p_row + col] = M.f32_to_f16_in_range(kept)  # a weight: about 1 at most, or NaN
                    part = part + p
                l_new = l * alpha + _pair(part, lambda x, y: x + y, half)
                B.subgroup_barrier()
                p_m = [
                    qp_tile.load_matrix(q_first + _u32(MATRIX * t), A_MATRIX, qp, "row") for t in range(keys // MATRIX)
                ]
                for j in range(Ev16 // MATRIX):  # P V
                    product = zero
                    for t, p_t in enumerate(p_m):
                        v_t = v_tile.load_matrix(_u32(MATRIX * t * vp + MATRIX * j), B_MATRIX, vp, "row")
                        product = B.matrix_mul_add(p_t, v_t, product)
                    so_tile.store_matrix(s_first + _u32(MATRIX * j), product, sp, "row")
                B.subgroup_barrier()
                parts = [so_tile[s_row + _u32(PER_ROW * i) + half] for i in range(columns)]
                if dropout:
                    parts = [part * dropout.scale for part in parts]
                new = [a * alpha + part for a, part in zip(acc, parts)]
                return (m_new, l_new, *new, *following)

            inits = (_f32(NEG_INF), _f32(0.0), *(_f32(0.0) for _ in range(columns)), *fetch_block(_u32(0)))
            # Kept rolled: a driver that unrolls the constant trip count of an unmasked row (every key
            # block) spills the carried accumulators and prefetch (docs/benchmarks.md, session 14).
            m, l, *acc = B.loop(_u32(0), end, _u32(1), inits, block, unroll=False)[: 2 + columns]
            empty = B.eq(l, _f32(0.0))
            # The accumulators go through this invocation's own slots of the score tile, so that one loop
            # (not one division and narrowing per accumulator) stores the results.
            for i, total_ in enumerate(acc):
                so_tile[s_row + _u32(PER_ROW * i) + half] = total_
            with B.if_(row < _u32(L)):
                out_row = (b * _u32(L) + row) * _u32(Ev)
                with B.range_(half, _u32(Ev), _u32(PER_ROW)) as j:
                    value = B.select(empty, _f32(0.0), so_tile[s_row + j] / l)
                    out[out_row + j] = store_value(narrow(value, dt), dt)
                with B.if_(B.eq(half, _u32(0))):
                    lse[b * _u32(L) + row] = B.select(empty, _f32(NEG_INF), m + M.log(l))
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel


@functools.lru_cache(maxsize=64)
def cached_forward_kernel(shape: AttentionShape, config: Config) -> Kernel:
    """``forward_kernel(shape, config)``, built once per shape (bounded: shapes that change every step)."""
    return forward_kernel(shape, config)


U16 = 2.0**-11  # float16's unit roundoff
U32 = 2.0**-24


def bound(head_dim: int) -> tuple[float, float, float]:
    """The page's bound: (c_w, c_s, c_v) such that
    |out - exact| <= (c_w + c_s·|scale|·maxⱼ Σₑ|q_e k_je|)·Σⱼ w_j|v_j| + c_v·Σⱼ|v_j| plus half a float16 ulp of
    the output, w the exact weights, j over the unmasked keys (docs/ops/scaled_dot_product_attention.md).

    c_w = 2⁻¹⁰: the float16 weights (2⁻¹¹ relative) and the float32 rescalings, exp and division, with room;
    c_s = 4γ_(E+16): a score's error on a device (2γ_(E+16)·Σ|q k|, matmul's device bound) moves each
    weight relative to the others by at most twice that;
    c_v = 2⁻²⁵: a weight below float16's normal range (2⁻¹⁴; weights are at most 1 before the final
    division by the row sum, which is at least 1) is rounded by up to 2⁻²⁵ absolute, not relative.

    >>> bound(64)[0] == 2.0**-10, bound(64)[2] == 2.0**-25
    (True, True)
    """
    n = _padded(head_dim) + MATRIX
    gamma = n * U32 / (1 - n * U32)
    return 2 * U16, 4 * gamma, 2.0**-25


__all__ = [
    "Config",
    "CONFIGS",
    "SHORT_KEYS",
    "applies",
    "bound",
    "cached_forward_kernel",
    "config_for",
    "config_of",
    "forward_kernel",
    "grid",
]
