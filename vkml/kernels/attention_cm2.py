"""The float16 flash-attention forward on VK_NV_cooperative_matrix2's workgroup-scope matrices.

Chosen (``applies``) ahead of the subgroup-scope kernel (vkml/kernels/attention_coopmat.py) for float16
q, k, v with head dims of 64 or 128, no mask but the causal one and no dropout (broadcast batch dims and
GQA as the scalar kernel takes them: each operand is read as one 2-D tensor of rows, a batch entry's
rows starting where its offset says), on a device whose features report workgroup-scope
matrices of the needed flexible sizes with tensor addressing, row reductions, conversions and
per-element functions (``DeviceFeatures.cooperative_matrix_workgroup_ops``). Everything else keeps the
kernels it had. ``VKML_ATTENTION_CM2=0`` turns it off (``VKML_ATTENTION_COOPMAT=0`` both).

It is extra/proto_flash_cm2.py's "64x64 t128 m16" written in vkml's IR (that module's docstring is the
design note; docs/benchmarks.md has its figures) with 128-key blocks (``Config``): one workgroup of 128
invocations per 64 query rows of one batch entry, every matrix of workgroup scope (the driver stages them
through shared memory).

1. Q: one 64×E float16 A matrix, tensor-loaded once from the (batch·L)×E tensor.
2. Per key block of 128 (ascending): Kᵀ tensor-loaded through a transposing view (no copy); S = Q Kᵀ
   (float32 accumulator from -0.0); scaled by ``scale`` (``cm_scale``), or, on the blocks the causal
   diagonal crosses and the one holding key S (ragged S), by a per-element function that also gives
   -inf to keys after the query and keys from S on. Blocks wholly after the diagonal are never visited.
3. The scores are in log2 units (``scale``·log2(e)), and the row's running maximum m is an integer: m' =
   max(m, ⌊rowmax S⌋) (``cm_reduce_rows`` into 64×16: m, l and α live in 16 columns). P = c·2^(S - m') (m'
   widened to the block's columns by a max reduction of equal values) by ``weight_exp2``, a cubic on a reduced
   argument, in a per-element function, c = WEIGHT_SCALE (about 18) a factor of every weight that cancels in
   O / l; α = 2^(m - m') is a power of two, made exactly from its exponent bits (``scale_exp2``);
   l' = l·α + rowsum(P) (float32 weights); O' = P V + O·α with P rounded to float16 (``cm_convert``) and α
   widened to Ev columns. The weights are at most 2c(1 + 2^-13.6) and the row's largest at least
   c(1 - 2^-13.6) > 1; the rescalings by α are exact (docs/ops/scaled_dot_product_attention.md has the error
   analysis).
4. out = O·(1 / l) (``row_sum_reciprocal`` on the row state, then one product per element), narrowed to
   float16 on the store, which drops rows past L (a clipping view); lse = m·ln(2) + log(l) - log(c) (``row_log``)
   stored from column 0 into the (batch·L)×1 tensor.

Workgroup order: without causal masking the query blocks of one batch entry are neighbours (they share
its keys in L2); causal, the query blocks go in descending order across all batch entries (the longest
rows start first). Ragged L or S: loads clamp (rows past the tensor read 0), the key block holding S masks
the keys from S on, stores drop the query rows past L.

``Config(keys=64, weights="natural", unroll=True)`` is the session-16 kernel (step 3 in natural units with the running
maximum itself and attention_coopmat.py's ``weight_exp`` for P and α, out = O / l by the exact division, the
loops without loop control), kept for measuring one against the other.

Precision: within the subgroup-scope kernel's bound (attention_coopmat.bound, docs/ops/
scaled_dot_product_attention.md): the weights that multiply V are float16, the scores and P V are summed
in the device's order. The row sums are float32 reductions in the device's order (the CPU interpreter's:
the contract's tree), so a device's bits are not the interpreter's, but every run on one device gives
the same bits (fixed blocks, fixed order of the blocks).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import config as vkml_config
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Kernel, Value
from ..ir.verify import verify_kernel
from ..ops import mathlib as M
from ..ops.mathlib.bits import from_bits, int_to_float, to_bits, u32
from ..ops.mathlib.explog import LN2, LOG2E
from .attention import NEG_INF, AttentionShape, Operand, _batch_offsets, _f32, _max
from .attention_coopmat import weight_exp
from .index import _u32
from .lowering import fold_grid, linear_workgroup
from .matmul.tiled import _maybe_if

HEAD_DIMS = (64, 128)
STATE = 16  # columns of the row state m, l, α (the prototype's "m16": α's exp on 16 columns, not 64)


@dataclass(frozen=True)
class Config:
    """The workgroup's block: ``rows`` query rows by ``keys`` keys per step (128: up to 8% faster than 64 with
    the exp2 weights, whose row state is cheap; docs/benchmarks.md, session 17), ``threads`` invocations;
    ``weights``: "exp2" (log2 units, an integer running maximum, ``weight_exp2``) or "natural" (the
    session-16 form, ``weight_exp``); ``unroll``: False (the default) asks the driver to keep the key-block
    loops rolled (DontUnroll), True leaves them to it, which unrolled the constant trip counts and ran 1.6-2x
    slower (docs/benchmarks.md, session 17)."""

    rows: int = 64
    keys: int = 128
    threads: int = 128
    weights: str = "exp2"
    unroll: bool = False


DEFAULT = Config()


# ((f + A)·f + B)·f + C = WEIGHT_SCALE·2^f·(1 + e) for f in [-1/2, 1/2]: a relative minimax cubic made monic
# (one multiply fewer), its coefficients rounded to float32; evaluated in float32 (Horner, no fused
# multiply-add) |e| < 2^-13.6 on every float32 f (tests/test_attention_cm2.py; the op page says why that is
# enough). WEIGHT_SCALE (about 18, the midpoint of the cubic's ratio to 2^f) is a factor of every weight,
# so it cancels in O / l; the log-sum-exp takes out its logarithm.
WEIGHT_CUBIC = tuple(float.fromhex(h) for h in ("0x1.196ec6p+2", "0x1.9218c8p+3", "0x1.21fbaap+4"))
WEIGHT_SCALE = 18.125245261222425
LOG_WEIGHT_SCALE = float.fromhex("0x1.72daeap+1")  # log(WEIGHT_SCALE) rounded to float32
# For |x| < 2^22, x + EXPONENT_ROUNDER (float32's spacing is 1 there) is 1.5·2^23 + 127 + k, k = x rounded to
# an integer: its low 9 bits are 127 + k, so shifted left by 23 they are 2^k's bits for k in [-126, 128] and
# +0.0 for k = -127. Two float operations and one shift where pow2 of an int32 takes a conversion and two more.
EXPONENT_ROUNDER = float.fromhex("0x1.8p23") + 127
MINUS_127_BITS = 0xC2FE0000  # -127.0: a negative float's bits grow with its magnitude, up to -inf's 0xFF800000
INF_BITS = 0xFF800000


def weight_exp2(x: Value) -> Value:
    """WEIGHT_SCALE·2^x for a weight's argument x < 128 (the kernel's are below 1): relative error below 2^-13.6
    for x > -126.5 (all normal results); +0.0 for x <= -126.5 and -inf; NaN for NaN (of either sign).

    k = x rounded to an integer and f = x - k in [-1/2, 1/2] (both exact), 2^x = 2^k·2^f with 2^f the monic
    cubic ``WEIGHT_CUBIC`` (times WEIGHT_SCALE) and 2^k made from the bits of the sum that rounds x
    (``EXPONENT_ROUNDER``; k = -127 makes +0.0). No float comparison (a device that may flush subnormals
    compares floats through their bits, ~20 instructions): -inf <= x < -127 is one unsigned range of x's bits,
    which leaves NaNs out. Float32 adds, multiplies and bit operations with no subnormal result, so a device
    and the CPU interpreter agree on its bits (a subnormal x gives the cubic's constant either way). NaN: f is
    NaN, and so is its product with 2^k whatever the shift made of NaN's bits.
    """
    far = (to_bits(x) - u32(MINUS_127_BITS + 1)) < u32(INF_BITS - MINUS_127_BITS)
    t = x + _f32(EXPONENT_ROUNDER)
    f = x - (t - _f32(EXPONENT_ROUNDER))
    a, b, c = WEIGHT_CUBIC
    p = ((f + _f32(a)) * f + _f32(b)) * f + _f32(c)
    return B.select(far, _f32(0.0), p * from_bits(to_bits(t) << 23))


def scale_exp2(d: Value) -> Value:
    """2^d for an integer d <= 0 (or -inf), exactly: the power of two for d >= -126, +0.0 below. Any value for NaN.

    The rescaling α = 2^(m - m') of two integer running maxima: ``weight_exp2``'s exponent step alone.
    """
    far = to_bits(d) > u32(MINUS_127_BITS)  # d < -127, -inf (and NaNs with the sign bit)
    return B.select(far, _f32(0.0), from_bits(to_bits(d + _f32(EXPONENT_ROUNDER)) << 23))


def running_max(old: Value, block_max: Value) -> Value:
    """max(old, ⌊block_max⌋) for an integer (or ±inf) ``old``: the row's integer running maximum.

    The larger is chosen by the sign bit of their difference (an integer compare: see ``weight_exp2``), which
    is exact for integers and ±inf. NaN: either side (the row is NaN through its weights: ``weight_exp2``).
    """
    top = B.floor(block_max)
    rise = top - old
    return B.select(B.bitcast(rise, T.int32) < B.const(0, T.int32), old, top)


# These bits less a float's bits negate its exponent and mirror its significand: a first guess of its reciprocal
# within 2^-3. Newton's steps r·(2 - l·r) then square the relative error: 2^-6, 2^-12, then float32's roundings.
RECIPROCAL_GUESS_BITS = 0x7EF311C3


def row_sum_reciprocal(l: Value) -> Value:
    """1 / l within 2^-22 (relative) for a normal l whose reciprocal is normal (the kernel's row sums: about
    ``WEIGHT_SCALE`` or more); NaN for NaN and for 0. Three Newton steps from a guess made of l's bits: 10
    instructions where the contract's exact division takes ~200, and out = O·(1 / l) one product per element."""
    r = from_bits(u32(RECIPROCAL_GUESS_BITS) - to_bits(l))
    for _ in range(3):
        r = r * (_f32(2.0) - l * r)
    return r


# log(1 + u) = u + u²·q(u) for u in [√½ - 1, √2 - 1]: q of degree 4 fitted for the absolute error, the
# coefficients rounded to float32; evaluated in float32 within 2^-18.9 (k·ln(2) adds its roundings).
LOG1P_Q = tuple(
    float.fromhex(h) for h in ("-0x1.ffdf4p-2", "0x1.549b48p-2", "-0x1.04b2cep-2", "0x1.c40246p-3", "-0x1.20e668p-3")
)
SQRT_HALF_BITS = 0x3F3504F3  # √½ rounded to float32: the significands are split there


def row_log(l: Value) -> Value:
    """log(l) within 2^-18 + 2^-23·log(l) (absolute) for a normal l >= 1 (the kernel's row sums); NaN for NaN.

    l = 2^k·s with s in [√½, √2) from l's bits (the exponent field less √½'s, shifted), log(l) = k·ln(2) +
    log(1 + u), u = s - 1, by ``LOG1P_Q``: about 20 instructions where the contract's 1-ulp log takes ~50 (88
    on a device that compares floats on the bits). The log-sum-exp it makes is what the backward kernels
    recompute the weights from; its error moves them all by one factor, below 1 + 2^-17 for the kernel's l.
    """
    offset = to_bits(l) - u32(SQRT_HALF_BITS)
    k = int_to_float(B.bitcast(offset, T.int32) >> B.const(23, T.int32))
    s = from_bits((offset & u32(0x007FFFFF)) + u32(SQRT_HALF_BITS))
    u = (s - _f32(1.0)) + (l - l)  # l - l: NaN for NaN (the significand bits make a number of any l)
    q = _f32(LOG1P_Q[-1])
    for c in reversed(LOG1P_Q[:-1]):
        q = q * u + _f32(c)
    return k * _f32(LN2) + ((q * u) * u + u)


def supports(shape: AttentionShape) -> bool:
    """Whether the kernel computes ``shape``'s forward (device features aside): float16, head dims of 64 or
    128, no mask but the causal one, no dropout. Broadcast batch dims and GQA are the scalar kernel's (each
    operand's rows of a batch entry start where ``_batch_offsets`` says).

    >>> from vkml.kernels.attention import Operand
    >>> supports(AttentionShape(T.float16, (2,), 100, 100, 64, 64, *(Operand((6400,), (1,)),) * 3))
    True
    """
    if shape.dtype is not T.float16 or shape.mask != "none" or shape.dropout:
        return False
    if shape.head_dim not in HEAD_DIMS or shape.value_dim not in HEAD_DIMS:
        return False
    widths = (shape.head_dim, shape.head_dim, shape.value_dim)
    lengths = (shape.query_len, shape.key_len, shape.key_len)
    operands = (shape.query, shape.key, shape.value)
    largest = max(_stored_rows(o, shape, n, w) * w for o, n, w in zip(operands, lengths, widths))
    return largest < 2**31 and shape.batch_count * shape.query_len * shape.value_dim < 2**31


def _stored_rows(operand: Operand, shape: AttentionShape, rows: int, width: int) -> int:
    """The rows of an operand read as one (rows, width) tensor: its last batch entry's first row plus ``rows``
    (each batch stride is a whole number of rows: the operands are contiguous blocks of ``rows`` × ``width``)."""
    last = sum(
        (-(-size // divisor) - 1) * stride
        for size, stride, divisor in zip(shape.batch, operand.strides, operand.divisors)
        if stride
    )
    return last // width + rows


def applies(features, shape: AttentionShape, config: Config = DEFAULT) -> bool:
    """Whether the forward of ``shape`` runs on this kernel on a device with ``features``.

    >>> from vkml.codegen.features import DeviceFeatures
    >>> from vkml.kernels.attention import Operand
    >>> s = AttentionShape(T.float16, (2,), 64, 64, 64, 64, *(Operand((64 * 64,), (1,)),) * 3)
    >>> applies(DeviceFeatures.h200_like(), s), applies(DeviceFeatures.lavapipe_like(), s), applies(None, s)
    (True, False, False)
    """
    if features is None or not supports(shape) or not vkml_config.attention_cm2():
        return False
    e, ev, threads = shape.head_dim, shape.value_dim, config.threads
    return (
        features.cooperative_matrix_workgroup
        and features.cooperative_matrix_workgroup_ops
        and features.has_flexible_shape(config.rows, config.keys, e, threads)  # S = Q Kᵀ
        and features.has_flexible_shape(config.rows, ev, config.keys, threads)  # P V
        and features.has_flexible_shape(config.rows, STATE, config.keys, threads)  # the row state
        and features.vulkan_memory_model
        and features.float16
        and features.storage_buffer_16bit
        and features.rte_float16  # P and out narrow to float16 to nearest even in hardware
        and tuple(features.spirv_version) >= (1, 6)
        and threads <= features.max_workgroup_invocations
    )


def grid(shape: AttentionShape, config: Config = DEFAULT) -> tuple[int, int, int]:
    return fold_grid(shape.batch_count * -(-shape.query_len // config.rows))


def _block_of(w: Value, shape: AttentionShape, config: Config) -> tuple[Value, Value]:
    """Workgroup ``w``'s (batch entry, query block): see the module docstring for the order."""
    sequences, query_blocks = shape.batch_count, -(-shape.query_len // config.rows)
    if shape.causal:
        return w % _u32(sequences), _u32(query_blocks - 1) - w / _u32(sequences)
    return w / _u32(query_blocks), w % _u32(query_blocks)


def forward_kernel(shape: AttentionShape, config: Config = DEFAULT, subgroup_size: int = 32) -> Kernel:
    """The forward kernel for ``shape``: buffers q, k, v, out (float16), lse (float32), parameter ``scale``,
    on a grid of ``grid(shape, config)``."""
    if not supports(shape):
        raise ValueError(f"the cooperative_matrix2 attention kernel does not take {shape}")
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    rows, keys = config.rows, config.keys
    batch = shape.batch_count
    # Each operand read as one 2-D tensor of its rows (a batch entry's block: L or S rows); out is (batch·L)×Ev.
    query_rows, out_rows = _stored_rows(shape.query, shape, L, E), batch * L
    key_rows, value_rows = _stored_rows(shape.key, shape, S, E), _stored_rows(shape.value, shape, S, Ev)
    ragged = L % rows != 0 or S % keys != 0
    edge = "clamp" if ragged else "inside"
    total = batch * -(-L // rows)
    workgroups = grid(shape, config)

    def matrix(elem: T.DType, r: int, c: int, use: str) -> T.MatrixType:
        return T.matrix_type(elem, r, c, use, "workgroup")

    scores_t, state_t = matrix(T.float32, rows, keys, "acc"), matrix(T.float32, rows, STATE, "acc")
    out_t = matrix(T.float32, rows, Ev, "acc")
    name = f"attention_cm2_{'x'.join(map(str, shape.batch)) or 'scalar'}_{L}x{S}x{E}x{Ev}"
    kb = B.KernelBuilder(name, (config.threads, 1, 1), subgroup_size)
    q, k, v = (kb.buffer(n, T.float16) for n in "qkv")
    out = kb.buffer("out", T.float16, "write")
    lse = kb.buffer("lse", T.float32, "write")
    scale = kb.param("scale", T.float32)
    natural = config.weights == "natural"
    with kb:
        # The scores in the units of the weights' exponential: log2, or natural for the session-16 form.
        score_scale = scale if natural else scale * _f32(LOG2E)
        w = linear_workgroup(workgroups)
        with _maybe_if(w < _u32(total) if workgroups[0] * workgroups[1] > total else None):  # uniform per workgroup
            entry, query_block = _block_of(w, shape, config)
            q0 = query_block * _u32(rows)  # the block's first query within its batch entry
            q_at, k_at, v_at = _batch_offsets(entry, shape, [shape.query, shape.key, shape.value])  # elements
            row0 = entry * _u32(L) + q0  # of out and lse
            key_row0, value_row0 = k_at / _u32(E), v_at / _u32(Ev)
            query_t = matrix(T.float16, rows, E, "a")
            query = q.load_matrix((q_at / _u32(E) + q0, _u32(0)), query_t, (query_rows, E), edge)

            def masked(r: Value, c: Value, s: Value, scale_: Value, first_query: Value, first_key: Value) -> Value:
                """The score scaled, -inf for a key after the query (causal) or from S on."""
                key = first_key + c
                hidden = key >= _u32(S) if S % keys else None
                if shape.causal:
                    after = key > first_query + r
                    hidden = after if hidden is None else after | hidden
                return B.select(hidden, _f32(NEG_INF), s * scale_)

            def block(j: Value, o: Value, m: Value, l: Value, mask: bool) -> tuple[Value, Value, Value]:
                k0 = j * _u32(keys)
                kt_t = matrix(T.float16, E, keys, "b")
                kt = k.load_matrix((key_row0 + k0, _u32(0)), kt_t, (key_rows, E), edge, transposed=True)
                s = B.matrix_mul_add(query, kt, B.matrix_fill(B.const_bits(0x80000000, T.float32), scores_t))
                s = B.matrix_map(masked, s, score_scale, q0, k0) if mask else B.matrix_scale(s, score_scale)
                block_max = B.matrix_reduce_rows(s, "max", STATE)
                if natural:
                    m_new = B.matrix_map(lambda r, c, a, b: _max(a, b), block_max, m)
                    m_wide = B.matrix_reduce_rows(m_new, "max", keys)  # every column the row's m'
                    # A NaN score makes the row maximum NaN (``_max`` and the max reduction carry it), so every
                    # later P, α and l of the row is 0 and the final O / l is 0 / 0: NaN, as PyTorch. The exp need
                    # not carry NaN itself (keep_nan=False: five operations fewer per weight, the same bits else).
                    p = B.matrix_map(lambda r, c, x, top: weight_exp(x - top, keep_nan=False), s, m_wide)
                    alpha = B.matrix_map(lambda r, c, old, new: weight_exp(old - new, keep_nan=False), m, m_new)
                else:
                    m_new = B.matrix_map(lambda r, c, old, top: running_max(old, top), m, block_max)
                    m_wide = B.matrix_reduce_rows(m_new, "max", keys)
                    # A NaN score makes its weight NaN (whatever m' is), and so l and O and the row's output.
                    p = B.matrix_map(lambda r, c, x, top: weight_exp2(x - top), s, m_wide)
                    alpha = B.matrix_map(lambda r, c, old, new: scale_exp2(old - new), m, m_new)
                row_sum = B.matrix_reduce_rows(p, "add", STATE)
                l_new = B.matrix_map(lambda r, c, l_, a, t: l_ * a + t, l, alpha, row_sum)
                value_t = matrix(T.float16, keys, Ev, "b")
                value = v.load_matrix((value_row0 + k0, _u32(0)), value_t, (value_rows, Ev), edge)
                kept = B.matrix_mul(o, B.matrix_reduce_rows(alpha, "max", Ev))
                o_new = B.matrix_mul_add(B.matrix_convert(p, matrix(T.float16, rows, keys, "a")), value, kept)
                return o_new, m_new, l_new

            if shape.causal:  # blocks wholly at or before the diagonal, then those it crosses; none after it
                whole = B.select(
                    (q0 + _u32(1)) / _u32(keys) < _u32(S // keys), (q0 + _u32(1)) / _u32(keys), _u32(S // keys)
                )
                needed = (q0 + _u32(rows + keys - 1)) / _u32(keys)
                end = B.select(needed < _u32(-(-S // keys)), needed, _u32(-(-S // keys)))
            else:
                whole, end = _u32(S // keys), _u32(-(-S // keys))
            carried = (
                B.matrix_fill(0.0, out_t),
                B.matrix_fill(_f32(NEG_INF), state_t),
                B.matrix_fill(0.0, state_t),
            )
            unroll = config.unroll
            carried = B.loop(_u32(0), whole, _u32(1), carried, lambda j, *c: block(j, *c, mask=False), unroll)
            if shape.causal or S % keys:
                carried = B.loop(whole, end, _u32(1), carried, lambda j, *c: block(j, *c, mask=True), unroll)
            o, m, l = carried
            if natural:
                result = B.matrix_map(lambda r, c, o_, l_: o_ / l_, o, B.matrix_reduce_rows(l, "max", Ev))
            else:
                # O times 1 / l, the reciprocal on the row state's 64×16: within the bound (the op page's analysis).
                inverse = B.matrix_map(lambda r, c, l_: row_sum_reciprocal(l_), l)
                result = B.matrix_mul(o, B.matrix_reduce_rows(inverse, "max", Ev))
            rest = _u32(L) - q0
            kept_rows = B.select(rest < _u32(rows), rest, _u32(rows)) if L % rows else None
            out.store_matrix((row0, _u32(0)), result, (out_rows, Ev), edge, rows_kept=kept_rows)
            if natural:
                log_sum_exp = B.matrix_map(lambda r, c, m_, l_: m_ + M.log(l_), m, l)
            else:  # m in log2 units, l in units of WEIGHT_SCALE
                log_sum_exp = B.matrix_map(
                    lambda r, c, m_, l_: m_ * _f32(LN2) + (row_log(l_) - _f32(LOG_WEIGHT_SCALE)), m, l
                )
            lse.store_matrix((row0, _u32(0)), log_sum_exp, (out_rows, 1), "clamp", rows_kept=kept_rows)
    kernel = kb.finish()
    verify_kernel(kernel)
    return kernel


@functools.lru_cache(maxsize=64)
def cached_forward_kernel(shape: AttentionShape, config: Config = DEFAULT, subgroup_size: int = 32) -> Kernel:
    """``forward_kernel(shape, config, subgroup_size)``, built once per shape (bounded)."""
    return forward_kernel(shape, config, subgroup_size)


def flops(shape: AttentionShape) -> int:
    """The forward's multiply-adds times two: 2·L·S·(E + Ev) per batch entry, halved under causal masking."""
    full = 2 * shape.batch_count * shape.query_len * shape.key_len * (shape.head_dim + shape.value_dim)
    return full // 2 if shape.causal else full


__all__ = ["Config", "DEFAULT", "HEAD_DIMS", "applies", "cached_forward_kernel", "flops", "forward_kernel", "grid"]
