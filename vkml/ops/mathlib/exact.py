"""Correctly rounded division and square root, and the small exact helpers ops share.

Each function returns the bits numpy float32 computes on x86, built from exact IR primitives:
division outside the normal range works on integer significands, so the one rounding happens in
``round_pack``; division of normal quotients is float arithmetic (division.py); sqrt estimates
in float arithmetic and rounds by the sign of an exact integer residual.
"""

from __future__ import annotations

from ...ir.builder import bitcast, eq, if_else, isnan, ne, select
from ...ir.core import Value
from .bits import (
    ABS_MASK,
    DEFAULT_NAN_BITS,
    I32,
    INF_BITS,
    SIGN_BIT,
    f32,
    f32_bits,
    float32_only,
    from_bits,
    ifelse_i32,
    quiet,
    round_pack,
    to_bits,
    u32,
    unpack,
)
from .division import divisor, normal_quotient, quotient_is_normal


def _as_f32(x) -> Value:
    return x if isinstance(x, Value) else f32(float(x))


@float32_only
def div(a: Value, b: Value) -> Value:
    """a / b, correctly rounded (ties to even): the bits numpy float32 ``a / b`` gives on x86.

    Precision: exact (correctly rounded), including subnormal inputs and results.
    Special values: x/±0 = ±inf, 0/0 and inf/inf = NaN (0xFFC00000), x/±inf = ±0, the sign of
    a zero or infinite result is the xor of the operands' signs; a NaN operand comes back
    quieted (the first NaN operand wins), as on x86.

    Example: ``q = div(x, y)`` (also what ``x / y`` on float IR values builds).
    """
    b = _as_f32(b)
    d = divisor(b)  # computed once per divisor value (a row's sum divides the whole row)
    # Float arithmetic where the quotient is normal (GPUs have no integer divider); the integer
    # path, in a branch that is rarely taken, for specials, subnormals and the exponent extremes.
    (out,) = if_else(quotient_is_normal(a, d), lambda: normal_quotient(a, d), lambda: _div_by_integers(a, b))
    return out


def _div_by_integers(a: Value, b: Value) -> Value:
    """a / b for all inputs by integer long division of the significands (div's contract)."""
    ua, ub = to_bits(a), to_bits(b)
    sign = (ua ^ ub) & SIGN_BIT
    mag_a, mag_b = ua & ABS_MASK, ub & ABS_MASK
    ma, ea = unpack(mag_a)
    mb, eb = unpack(mag_b)
    # Align so that mb <= ma < 2*mb: the quotient's leading bit is then 1 at bit 24.
    small = ma < mb
    ma = select(small, ma << 1, ma)
    e = ea - eb - ifelse_i32(small, 1, 0)
    rem = ma - mb
    q = u32(1)
    for _ in range(3):  # long division, 8 bits a step: rem < mb < 2^24, so rem << 8 fits in 32 bits
        rem = rem << 8
        digit = rem / mb
        rem = rem - digit * mb
        q = (q << 8) | digit
    out = round_pack(sign, q, 24, e, ne(rem, 0))

    a_zero, b_zero = eq(mag_a, 0), eq(mag_b, 0)
    a_inf, b_inf = eq(mag_a, INF_BITS), eq(mag_b, INF_BITS)
    out = select(a_zero | b_inf, from_bits(sign), out)
    out = select(a_inf | b_zero, from_bits(sign | INF_BITS), out)
    out = select((a_zero & b_zero) | (a_inf & b_inf), f32_bits(DEFAULT_NAN_BITS), out)
    out = select(isnan(b), quiet(b), out)
    return select(isnan(a), quiet(a), out)


@float32_only
def sqrt(x: Value) -> Value:
    """Square root, correctly rounded: the bits of ``np.sqrt`` on float32 (x86).

    Precision: exact (correctly rounded).
    Special values: sqrt(+0) = +0, sqrt(-0) = -0, sqrt(+inf) = +inf, x < 0 (and -inf) gives
    NaN 0xFFC00000 (numpy's bits; PyTorch gives 0x7FC00000, also a NaN), a NaN comes back quieted.

    Example: ``r = sqrt(x)``.
    """
    u = to_bits(x)
    # Positive normal x (the common case) in float and integer arithmetic alone; zeros, subnormals,
    # negatives, infinities and NaNs in a branch that is rarely taken.
    normal = u - 0x00800000 < 0x7F000000  # unsigned: below 0x00800000 wraps around
    (out,) = if_else(normal, lambda: _sqrt_normal(u), lambda: _sqrt_any(x))
    return out


def _sqrt_normal(u: Value) -> Value:
    """The correctly rounded square root of the positive normal float32 with bits ``u``."""
    # u = m * 2^(2h) with m in [1, 4): the field of m is 127 or 128 by the parity of u's, and
    # h = floor((field - 127) / 2) = ((field + 1) >> 1) - 64, added to the root's field at the end.
    m = from_bits(((u & 0x00FFFFFF) ^ 0x00800000) + 0x3F800000)
    field_add = (u + 0x00800000) >> 24 << 23  # less 64 << 23, folded into the step below
    s = _sqrt_estimate(m)
    # Round exactly: with m = M * 2^-23 and s = S * 2^-23 (integers), r = M*2^23 - S^2 is below
    # 2^27 in magnitude, so uint32 arithmetic modulo 2^32 gives it. sqrt(m) lies above the
    # midpoint s + ulp/2 iff 4*M*2^23 > (2S + 1)^2, i.e. r > S; below s - ulp/2 iff r <= -S
    # (never a tie: a midpoint has 25 bits, its square is no float32).
    # Modulo 2^32, M*2^23 is m's bits shifted left by 23 + (m's field - 127): M's leading bit
    # lands at 2^46 or 2^47 and drops out, as do the exponent field's bits. s is in [1, 2]
    # (within an ulp of sqrt(m) in [1, 2)), and s = 2 gives S = 2^24, its value: S is s's bits
    # less those of 2^-23 * 2^23 = 1.0 with its implicit bit.
    mb, sb = to_bits(m), to_bits(s)
    r = bitcast((mb << ((mb >> 23) - 104)) - (sb - 0x3F000000) * (sb - 0x3F000000), I32)
    big_s = bitcast(sb - 0x3F000000, I32)
    # The step and -64 << 23 (h's offset) in one constant, modulo 2^32.
    step = select(r > big_s, u32(0xE0000001), select(r <= -big_s, u32(0xDFFFFFFF), u32(0xE0000000)))
    return from_bits(sb + step + field_add)


def _sqrt_estimate(m: Value) -> Value:
    """sqrt(m) to within an ulp, for m in [1, 4): two Newton steps on 1/sqrt from the bit seed
    (2^-17.7), then one on sqrt whose residual's rounding moves it by under half an ulp."""
    y = from_bits(0x5F3759DF - (to_bits(m) >> 1))
    half_m = m * 0.5
    for _ in range(2):
        y = y * (1.5 - half_m * y * y)
    s0 = m * y
    s = s0 + (m - s0 * s0) * (y * 0.5)
    return select(s > 1.0, s, f32(1.0))  # sqrt(m) >= 1: the rounding below reads s's bits as [1, 2]


def _sqrt_any(x: Value) -> Value:
    """sqrt for every input (``sqrt``'s contract): subnormals scaled, specials picked."""
    u = to_bits(x)
    # A subnormal x is f * 2^-149 = 2f * 2^-150 with f its fraction: 2f as a float32 (exact, no
    # conversion: 2^23 + f less 2^23, doubled), its square root's exponent then 75 lower.
    subnormal = u < 0x00800000  # +0 too; negative x are overridden below
    v = select(subnormal, to_bits((from_bits(u | 0x4B000000) - 8388608.0) * 2.0), u)
    out = _sqrt_normal(v)
    out = select(subnormal, from_bits(to_bits(out) - (75 << 23)), out)
    out = select(eq(u & ABS_MASK, 0) | eq(u, INF_BITS), x, out)
    out = select(x < 0.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


@float32_only
def rsqrt(x: Value) -> Value:
    """1 / sqrt(x) with both steps correctly rounded: bit-equal to torch.rsqrt on float32 CPU.

    Precision: < 1.5 ulp (two correct roundings; measured up to 1.47 ulp against the float64 1/sqrt(x));
    bit-equal to PyTorch, which computes the same.
    Special values: rsqrt(±0) = ±inf, rsqrt(+inf) = +0, x < 0 gives NaN, NaN gives NaN.

    Example: ``r = rsqrt(x)``.
    """
    return div(f32(1.0), sqrt(x))


@float32_only
def abs(x: Value) -> Value:  # noqa: A001 - PyTorch's name
    """|x| by clearing the sign bit.

    Precision: exact. Special values: abs(-0) = +0, abs(±inf) = +inf, a NaN keeps its payload
    and loses its sign.

    Example: ``a = abs(x)``.
    """
    return from_bits(to_bits(x) & ABS_MASK)


@float32_only
def maximum(a: Value, b: Value) -> Value:
    """Elementwise maximum with PyTorch's NaN rule.

    Precision: exact.
    Special values: a NaN on either side gives NaN (``a`` if it is NaN, else ``b``).
    Divergence from PyTorch: maximum(+0, -0) = maximum(-0, +0) = +0 (IEEE 754-2019); in
    PyTorch the sign of a zero result depends on argument order and on the vector path.

    Example: ``m = maximum(x, y)``.
    """
    b = _as_f32(b)
    # Equal operands: only ±0 can differ in bits, and AND of their bits prefers +0.
    both = from_bits(to_bits(a) & to_bits(b))
    out = select(a > b, a, select(a < b, b, both))
    out = select(isnan(b), b, out)
    return select(isnan(a), a, out)


@float32_only
def minimum(a: Value, b: Value) -> Value:
    """Elementwise minimum with PyTorch's NaN rule.

    Precision: exact.
    Special values: a NaN on either side gives NaN (``a`` if it is NaN, else ``b``).
    Divergence from PyTorch: minimum(+0, -0) = minimum(-0, +0) = -0 (IEEE 754-2019); in
    PyTorch the sign of a zero result depends on argument order and on the vector path.

    Example: ``m = minimum(x, y)``.
    """
    b = _as_f32(b)
    either = from_bits(to_bits(a) | to_bits(b))  # equal operands: OR of the bits prefers -0
    out = select(a < b, a, select(a > b, b, either))
    out = select(isnan(b), b, out)
    return select(isnan(a), a, out)


@float32_only
def clamp(x: Value, lo=None, hi=None) -> Value:
    """Clamp x to [lo, hi] (either bound may be None) with PyTorch's semantics.

    Precision: exact.
    Special values: a NaN x gives NaN; a NaN bound makes every result NaN; lo > hi gives hi
    everywhere; a bound replaces x only when x is strictly outside, so
    clamp(-0.0, lo=0.0) = -0.0.

    Example: ``y = clamp(x, -1.0, 1.0)``.
    """
    out = x
    if lo is not None:
        lo = _as_f32(lo)
        out = select(out < lo, lo, out)
    if hi is not None:
        hi = _as_f32(hi)
        out = select(out > hi, hi, out)
    for bound in (hi, lo):
        if bound is not None:
            out = select(isnan(bound), bound, out)
    return select(isnan(x), x, out)


@float32_only
def clamp_min(x: Value, lo) -> Value:
    """clamp(x, lo=lo): PyTorch's clamp_min. Precision: exact; special values as in ``clamp``.

    Example: ``y = clamp_min(x, 0.0)``.
    """
    return clamp(x, lo, None)


@float32_only
def clamp_max(x: Value, hi) -> Value:
    """clamp(x, hi=hi): PyTorch's clamp_max. Precision: exact; special values as in ``clamp``.

    Example: ``y = clamp_max(x, 6.0)``.
    """
    return clamp(x, None, hi)


@float32_only
def relu(x: Value) -> Value:
    """max(x, 0) as PyTorch computes it on CPU.

    Precision: exact. Special values: relu(NaN) = NaN, relu(-0.0) = -0.0, relu(-inf) = 0.

    Example: ``y = relu(x)``.
    """
    return select(x < 0.0, f32(0.0), x)


@float32_only
def sign(x: Value) -> Value:
    """-1, 0 or 1 by the sign of x.

    Precision: exact. Special values: sign(±0) = +0, sign(±inf) = ±1.
    Divergence from PyTorch: sign(NaN) = NaN (the NaN itself); PyTorch returns 0.0
    (pytorch#41245), numpy returns NaN. vkml lets a NaN propagate, as everywhere else.

    Example: ``s = sign(x)``.
    """
    # On the bits: lavapipe's LLVM folds the float-select form `x > 0 ? 1 : x < 0 ? -1 : 0` into one
    # that returns -0.0 for -0.0, despite SignedZeroInfNanPreserve (found by the Vulkan parity test).
    bits = to_bits(x)
    magnitude = bits & ABS_MASK
    one_with_sign = (bits & SIGN_BIT) | 0x3F800000  # ±1.0
    out = from_bits(select(eq(magnitude, u32(0)), u32(0), one_with_sign))
    return select(isnan(x), x, out)


__all__ = ["div", "sqrt", "rsqrt", "abs", "maximum", "minimum", "clamp", "clamp_min", "clamp_max", "relu", "sign"]
