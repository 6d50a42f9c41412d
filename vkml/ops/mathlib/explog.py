"""exp, exp2, expm1, log, log2, log1p: within 1 ulp of the float64 result, whole float32 range.

exp family: Cody-Waite reduction x = k*ln2 + r (|r| <= ln2/2, r kept as a double-float),
exp(r) = 1 + r + r^2*Q(r) with 1 + r split exactly, then a two-step scaling by 2^k so that a
subnormal result is rounded once. log family: x = 2^e * m with m in [sqrt(1/2), sqrt(2)),
log(m) = 2*atanh(s) with s = (m-1)/(m+1), then e*ln2 added in two parts. log itself is float32
throughout (its error terms are small multiples of the result, see ``log``); ``log_parts``, for
log2, log1p and pow, carries s and the leading series terms as double-floats. The internal
double-float results (``exp_parts``, ``log_parts``) feed pow and the activations.

Polynomial coefficients are near-minimax fits (Lawson's iteration on Chebyshev points) rounded
to float32 one at a time, each later coefficient refitted to absorb the earlier roundings.
"""

from __future__ import annotations

from ...ir.builder import eq, if_else, isnan, select
from ...ir.core import Value
from .bits import (
    ABS_MASK,
    DEFAULT_NAN_BITS,
    INF_BITS,
    ROUNDER,
    ROUNDER_BITS,
    f32,
    f32_bits,
    float32_only,
    from_bits,
    i32,
    ifelse_i32,
    int_to_float,
    pow2,
    quiet,
    round_and_pow2,
    round_to_int,
    to_bits,
    u32,
    unpack,
)
from .dd import div_dd, fast_two_sum, horner, mul_dd, mul_dd_const, quotient_short, recip, scale, two_square, two_sum

LOG2E = float.fromhex("0x1.715476p+0")
LOG2E_LO = float.fromhex("0x1.4ae0cp-26")
LN2 = float.fromhex("0x1.62e43p-1")
LN2_LO = float.fromhex("-0x1.05c61p-29")
# Cody-Waite split of ln2: LN2_HI has 15 significant bits, so k*LN2_HI is exact for |k| < 2^9.
LN2_HI = float.fromhex("0x1.62e4p-1")
LN2_HI_LO = float.fromhex("0x1.7f7d1cp-20")
TWO_THIRDS, TWO_THIRDS_LO = float.fromhex("0x1.555556p-1"), float.fromhex("-0x1.555556p-26")
SQRT2_F32 = float.fromhex("0x1.6a09e6p+0")  # just below sqrt(2): the split point of log's m

# (exp(r) - 1 - r) / r^2 on |r| <= 0.36; relative error 2^-27.6.
EXP_Q = [
    float.fromhex(h)
    for h in ("0x1p-1", "0x1.555556p-3", "0x1.5554fep-5", "0x1.111062p-7", "0x1.6d397ap-10", "0x1.a1746cp-13")
]
# exp's core (``exp_fast``): the Cody-Waite pair r_hi = x - k*LN2_HI (exact) and r_lo = -k*LN2_HI_LO
# as they come, e^r = 1 + r_hi + r_lo + r^2 * Q(r) with 1 + r_hi split exactly and Q taken at
# r = fl(r_hi + r_lo) (``exp_parts_wide``). Q is fitted on |r| <= 0.3484 to 2^-28.2 of e^r, five
# terms: before the one rounding of s + tail the error is about 2^-26.5 of the result, so it is
# correctly rounded but for 0.2% of inputs and never off by more than one float.
EXP_FAST_Q = [
    float.fromhex(h) for h in ("0x1.fffffcp-2", "0x1.55549p-3", "0x1.5558bcp-5", "0x1.123b5ep-7", "0x1.6a445ap-10")
]
# (2*atanh(s) - 2s - 2s^3/3) / s^5 as a polynomial in z = s^2 on [0, 0.0295]; relative error 2^-26.
LOG_R = [float.fromhex(h) for h in ("0x1.99999ap-2", "0x1.249192p-2", "0x1.c76af6p-3", "0x1.78fa9cp-3")]


# ---------------------------------------------------------------- exp family


def reduce_exp(x_hi: Value, x_lo: Value) -> tuple[Value, Value, Value]:
    """x = k*ln2 + r for |x_hi| <= 160: returns int32 k and r as a double-float (r_hi, r_lo)."""
    k, k_int = round_to_int(x_hi * LOG2E)
    r_hi, r_lo = _exp_remainder(x_hi, x_lo, k)
    return k_int, r_hi, r_lo


def _exp_remainder(x_hi: Value, x_lo: Value, k: Value) -> tuple[Value, Value]:
    """r = x - k*ln2 as a double-float (Cody-Waite), for the float32 integer k nearest x/ln2."""
    t = x_hi - k * LN2_HI  # exact: Sterbenz, and k*LN2_HI is exact
    return two_sum(t, x_lo - k * LN2_HI_LO)


def exp2_rounded(t_hi: Value, t_lo: Value, d_below: int, d_above: int) -> Value:
    """2^(t_hi + t_lo) rounded once, subnormal and overflowing results included, for a double-float t.

    t = k + r/ln2 with k = round_even(t_hi), 2^r from ``exp_parts``, then 2^k in two exact steps
    (``_split_scale``): k + d_below must stay in [-124, 126] for t_hi < 0, k + d_above for t_hi >= 0.
    Example: ``exp2_rounded(t_hi, t_lo, 76, -74)`` for |t_hi| <= 200 (pow).
    """
    offset, second = _split_scale(t_hi < 0.0, d_below, d_above)
    k, first = round_and_pow2(t_hi, offset)
    d_hi, d_lo = two_sum(t_hi - k, t_lo)  # t_hi - k is exact
    r_hi, r_lo = mul_dd_const(d_hi, d_lo, LN2, LN2_LO)
    s, tail = exp_parts(r_hi, r_lo, EXP_FAST_Q)
    return (s + tail) * first * second


def _split_scale(negative: Value, d_below: int, d_above: int) -> tuple[Value, Value]:
    """For 2^k in two exact steps without integer k: ``round_and_pow2``'s offset (d by the sign of
    the argument) and the second factor 2^-d. v * 2^(k + d) is exact for v in [0.7, 1.42] as long
    as k + d stays in [-124, 126], so the one rounding, of a subnormal or overflowing result too,
    is the second product's: the bits of ``scale(v, k)``."""
    offset = select(negative, f32(ROUNDER + d_below), f32(ROUNDER + d_above))
    return offset, select(negative, f32(2.0**-d_below), f32(2.0**-d_above))


def exp_parts(r_hi: Value, r_lo: Value, q=EXP_Q) -> tuple[Value, Value]:
    """exp(r_hi + r_lo) for |r| <= 0.36 as (s, tail): s = fl(1 + r_hi) and a small tail.

    s + tail is accurate to about 2^-27 relative; its sum rounds to within 0.6 ulp.
    ``q``: EXP_FAST_Q (one term fewer) where 2^-27 of the result is error enough.
    """
    s, s_err = fast_two_sum(f32(1.0), r_hi)
    quad = r_hi * (r_lo + r_hi * horner(r_hi, q))  # r_hi*r_lo + r_hi^2 * Q(r_hi)
    return s, s_err + (r_lo + quad)


def exp_parts_wide(r_hi: Value, r_lo: Value, q=EXP_FAST_Q) -> tuple[Value, Value]:
    """``exp_parts`` for the pair of a Cody-Waite reduction as it comes, not normalised: r_hi =
    x - k*LN2_HI exact, |r_lo| <= 2^-11 (k*LN2_HI_LO and a double-float argument's low part).

    e^r = 1 + r_hi + r_lo + r^2 * Q(r) with Q taken at r = fl(r_hi + r_lo): that rounding moves
    r^2 * Q by under 0.36 * 2^-26, and 1 + r_hi is split exactly, so s + tail is accurate to
    about 2^-26.5 relative, for one add in place of normalising the pair (a two_sum).
    ``q``: EXP_Q where e^r - 1 must keep its relative accuracy near r = 0 (tanh's 1 - e^-2|x|).
    """
    r = r_hi + r_lo
    s, s_err = fast_two_sum(f32(1.0), r_hi)
    return s, s_err + (r_lo + r * r * horner(r, q))


def exp_fast(x: Value, d_below: int, d_above: int) -> Value:
    """e^x for x in [-104, 89], ``exp``'s core: 2^k in two exact steps as in ``exp2_rounded``
    (k + d_below in [-124, 126] for x < 0, k + d_above for x >= 0)."""
    offset, second = _split_scale(x < 0.0, d_below, d_above)
    k, first = round_and_pow2(x * LOG2E, offset)
    s, tail = exp_parts_wide(x - k * LN2_HI, k * -LN2_HI_LO)  # x - k*LN2_HI is exact (Sterbenz)
    return (s + tail) * first * second


@float32_only
def exp(x: Value) -> Value:
    """e^x.

    Precision: ≤ 1 ulp of the correctly rounded result over the whole float32 range,
    subnormal results included (checked on every float32 with ``-m exhaustive``; measured
    worst case 1 ulp).
    Special values: exp(-inf) = 0, exp(+inf) = +inf, overflow to +inf above 88.7228394,
    exp(x) = 0 below -103.97; exp(0) = 1 exactly; a NaN comes back quieted.

    Example: ``y = exp(x)``.
    """
    clamped = select(x < 89.0, x, f32(89.0))  # NaN becomes 89 here, and is restored below
    clamped = select(clamped > -104.0, clamped, f32(-104.0))
    # k in [-150, 0] below 0 and [0, 128] above: 2^(k + 26), then 2^-26; 2^(k - 2), then 4.
    return select(isnan(x), quiet(x), exp_fast(clamped, 26, -2))


@float32_only
def exp2(x: Value) -> Value:
    """2^x.

    Precision: ≤ 1 ulp of the correctly rounded result, subnormal results included; exact for
    integer x in [-149, 127].
    Special values: exp2(-inf) = 0, exp2(+inf) = +inf, overflow to +inf at x >= 128,
    0 below -150; a NaN comes back quieted.

    Example: ``y = exp2(x)``.
    """
    clamped = select(x < 130.0, x, f32(130.0))
    clamped = select(clamped > -152.0, clamped, f32(-152.0))
    return select(isnan(x), quiet(x), exp2_rounded(clamped, f32(0.0), 28, -4))  # k in [-152, 0] or [0, 130]


@float32_only
def expm1(x: Value) -> Value:
    """e^x - 1, accurate near 0.

    Precision: ≤ 1 ulp of the correctly rounded result over the whole float32 range.
    Special values: expm1(±0) = ±0, expm1(-inf) = -1, expm1(+inf) = +inf, overflow to +inf
    above 88.7228394; a NaN comes back quieted.

    Example: ``y = expm1(x)``.
    """
    clamped = select(x < 89.0, x, f32(89.0))
    clamped = select(clamped > -18.0, clamped, f32(-18.0))  # e^-18 < 2^-25: the result is -1
    k_float, k = round_to_int(clamped * LOG2E)
    # EXP_Q: near 0 (k = 0) the result is r + r^2 Q itself, whose relative accuracy Q carries.
    s, tail = exp_parts_wide(clamped - k_float * LN2_HI, k_float * -LN2_HI_LO, EXP_Q)  # the first exact
    hi, lo = minus_one(s, tail, select(k < 64, k, i32(64)))
    out = select(x > 40.0, scale(s + tail, k), hi + lo)  # above 40, -1 is far below half an ulp
    out = select(eq(x, 0.0), x, out)
    return select(isnan(x), quiet(x), out)


def minus_one(s: Value, tail: Value, k: Value) -> tuple[Value, Value]:
    """2^k * (s + tail) - 1 as a double-float, for int32 k in [-126, 127]."""
    p = pow2(k)
    hi, lo = two_sum(s * p, f32(-1.0))  # 2^k * s is exact
    return fast_two_sum(hi, lo + tail * p)


# ---------------------------------------------------------------- log family


def log_parts(v: Value, quick: bool = False, normal: bool = False) -> tuple[Value, Value, Value]:
    """log(v) = e*ln2 + (hi + lo) for a positive finite v: returns (e as float32, hi, lo).

    hi + lo = log(m) for v = 2^e * m, m in [sqrt(1/2), sqrt(2)), to about 2^-40 relative;
    ``quick``: to about 2^-32, s = f/(2 + f) by ``quotient_short`` (exact products of 12-bit
    halves) in place of ``div_dd``'s Dekker products, 22 instructions fewer: for log2, log1p
    and pow, whose results it moves by under 2^-7 ulp (pow's exponent y*log2|x| by 2^-25 at
    |y*log2|x|| = 150). Subnormal v is normalised with integer operations (``unpack``);
    ``normal``: v is known to be a positive normal float, which skips that (the same bits).
    """
    bits = to_bits(v)
    if normal:
        m = from_bits((bits & 0x007FFFFF) | 0x3F800000)  # in [1, 2)
    else:
        m_bits, e = unpack(bits & ABS_MASK)
        m = from_bits((m_bits & 0x007FFFFF) | 0x3F800000)  # in [1, 2)
    big = m > SQRT2_F32
    m = select(big, m * 0.5, m)
    if normal:
        # e as float32 straight from the exponent field (``int_to_float``'s add, with the bias and
        # big's 1 in its constant): the field plus ROUNDER_BITS - 127 is the bits of ROUNDER + e.
        e_float = from_bits((bits >> 23) + select(big, u32(ROUNDER_BITS - 126), u32(ROUNDER_BITS - 127))) - ROUNDER
    else:
        e_float = int_to_float(e + ifelse_i32(big, 1, 0))
    f = m - 1.0  # exact (Sterbenz)
    # s = f / (2 + f) as a double-float; log(m) = 2s + 2s^3/3 + s^5 * R(s^2), |s| <= 0.1716.
    d_hi, d_lo = fast_two_sum(f32(2.0), f)
    if quick:
        s_hi, s_lo = fast_two_sum(*quotient_short(f, f32(0.0), d_hi, d_lo, (LOG_RECIP_A, -LOG_RECIP_B)))
    else:
        s_hi, s_lo = div_dd(f, f32(0.0), d_hi, d_lo)
    z_hi, z_lo = two_square(s_hi)  # the same bits as two_prod: s is 0 or above 2^-25
    z_lo = z_lo + 2.0 * s_hi * s_lo
    c_hi, c_lo = mul_dd(z_hi, z_lo, s_hi, s_lo)  # s^3
    w_hi, w_lo = mul_dd_const(c_hi, c_lo, TWO_THIRDS, TWO_THIRDS_LO)
    tail = z_hi * c_hi * horner(z_hi, LOG_R)
    hi, lo = fast_two_sum(2.0 * s_hi, w_hi)
    return e_float, hi, lo + (2.0 * s_lo + w_lo + tail)


def _log_specials(x: Value, out: Value, zero_result: Value) -> Value:
    """log-style special values: NaN quieted, x < 0 NaN, +inf -> +inf, ±0 -> zero_result."""
    out = select(eq(to_bits(x), INF_BITS), x, out)
    out = select(eq(x, 0.0), zero_result, out)
    out = select(x < 0.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


# log's own core, in float32 alone (``log_parts`` keeps the double-float one for log2, log1p and
# pow): log(1 + f) = f - h + s*(h + R(s^2)) with h = f^2/2 and s = f/(2 + f). With 2s = f - s*f
# this is 2*atanh(s), and only s*(h + R), below 0.045 of the result, carries the error of s (an
# approximate reciprocal) and of R(z) = (2*atanh(s) - 2s)/s, fitted on z in [0, 0.02944] to a
# relative 2^-21.7: together they add under 0.06 ulp.
LOG_FAST_R = [float.fromhex(h) for h in ("0x1.55555cp-1", "0x1.997ab0p-2", "0x1.2f2854p-2")]
# 1/d on [1.707, 2.415] (d = 2 + f): a - b*d within 1.5% (relative), then two Newton steps.
LOG_RECIP_A, LOG_RECIP_B = float.fromhex("0x1.f859fcp-1"), float.fromhex("0x1.e98138p-3")
# sqrt(1/2) rounded down to float32: m = x / 2^e lies in [SQRT_HALF_BITS, 2 * SQRT_HALF_BITS).
SQRT_HALF_BITS = 0x3F3504F3


@float32_only
def log(x: Value) -> Value:
    """Natural logarithm.

    Precision: ≤ 1 ulp of the correctly rounded result, subnormal inputs included (checked on
    every positive float32 with ``-m exhaustive``; measured worst case 1 ulp).
    Special values: log(±0) = -inf, log(+inf) = +inf, log(x < 0) = NaN (also -inf);
    a NaN comes back quieted.

    Example: ``y = log(x)``.
    """
    u = to_bits(x)
    # A subnormal x is its fraction times 2^-149: the fraction as a float32 (exact, with no
    # conversion: 2^23 + fraction less 2^23) and 149 more in the exponent. Integer work only
    # on the subnormal's bits, so a driver that flushes float subnormals cannot touch them.
    subnormal = u < 0x00800000
    u = select(subnormal, to_bits(from_bits(u | 0x4B000000) - 8388608.0), u)
    # x = 2^e * m with m in [sqrt(1/2), sqrt(2)): shift the bits so that m's split point is a
    # binade boundary, take the exponent field, and put m's fraction back under that point.
    shifted = u + (0x3F800000 - SQRT_HALF_BITS)
    m = from_bits((shifted & 0x007FFFFF) + SQRT_HALF_BITS)
    # e as float32 with no conversion (``int_to_float``), the bias and the subnormal's 149 folded in.
    bias = select(subnormal, u32(ROUNDER_BITS - 127 - 149), u32(ROUNDER_BITS - 127))
    e = from_bits((shifted >> 23) + bias) - ROUNDER
    f = m - 1.0  # exact (Sterbenz)
    d = f + 2.0
    y = LOG_RECIP_A - LOG_RECIP_B * d
    for _ in range(2):
        y = y * (2.0 - d * y)
    s = f * y
    z = s * s
    r = z * horner(z, LOG_FAST_R)
    h = f * f * 0.5
    out = e * LN2_HI - ((h - (s * (h + r) + e * LN2_HI_LO)) - f)  # e*LN2_HI is exact
    return _log_specials(x, out, f32(float("-inf")))


@float32_only
def log2(x: Value) -> Value:
    """Base-2 logarithm.

    Precision: ≤ 1 ulp of the correctly rounded result; exact for powers of two.
    Special values: log2(±0) = -inf, log2(+inf) = +inf, log2(x < 0) = NaN; a NaN comes back
    quieted.

    Example: ``y = log2(x)``.
    """
    # Positive normal x (the common case) skips the subnormal normalisation and the special values'
    # selects, in the same arithmetic; the rest on a branch that is rarely taken.
    normal = to_bits(x) - 0x00800000 < 0x7F000000  # unsigned: below 0x00800000 wraps around
    (out,) = if_else(normal, lambda: _log2_sum(x, normal=True), lambda: _log2_any(x))
    return out


def _log2_sum(x: Value, normal: bool) -> Value:
    hi, lo = log2_parts(x, normal=normal)
    return hi + lo


def _log2_any(x: Value) -> Value:
    return _log_specials(x, _log2_sum(x, normal=False), f32(float("-inf")))


def log2_parts(x: Value, normal: bool = False) -> tuple[Value, Value]:
    """log2(x) as a double-float (about 2^-32 relative: ``log_parts``'s quick form) for a positive finite x
    (``normal``: x known to be a positive normal float; see ``log_parts``)."""
    e, hi, lo = log_parts(x, quick=True, normal=normal)
    m_hi, m_lo = mul_dd_const(hi, lo, LOG2E, LOG2E_LO)
    s_hi, s_lo = two_sum(e, m_hi)  # e is an integer: log2 of a power of two stays exact
    return s_hi, s_lo + m_lo


@float32_only
def log1p(x: Value) -> Value:
    """log(1 + x), accurate near 0.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: log1p(±0) = ±0, log1p(-1) = -inf, log1p(x < -1) = NaN (also -inf),
    log1p(+inf) = +inf; a NaN comes back quieted.

    Example: ``y = log1p(x)``.
    """
    hi, lo = log1p_dd(x, f32(0.0), quick=True)
    out = select(eq(to_bits(x), INF_BITS), x, hi + lo)
    out = select(eq(x, -1.0), f32(float("-inf")), out)
    out = select(x < -1.0, f32_bits(DEFAULT_NAN_BITS), out)
    out = select(eq(x, 0.0), x, out)
    return select(isnan(x), quiet(x), out)


def log1p_dd(a_hi: Value, a_lo: Value, quick: bool = False) -> tuple[Value, Value]:
    """log(1 + a) for a double-float a > -1 (finite), as a double-float (``quick``: see ``log_parts``)."""
    u_hi, u_lo = two_sum(f32(1.0), a_hi)
    u_lo = u_lo + a_lo
    e, hi, lo = log_parts(u_hi, quick)
    # log(u_hi + u_lo) = log(u_hi) + u_lo/u_hi (u_lo/u_hi < 2^-23, its square is negligible)
    correction = u_lo * recip(select(u_hi < 2.0**100, u_hi, f32(2.0**100)))
    s_hi, s_lo = two_sum(e * LN2_HI, hi)
    return fast_two_sum(s_hi, s_lo + (lo + correction + e * LN2_HI_LO))
