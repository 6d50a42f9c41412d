"""float64 sin, cos, tan, atan, atan2, asin, acos: double-double evaluation rounded once.

The plan of the float32 ``trig`` one width up. sin/cos/tan reduce |x| = q*pi/2 + r by Payne-Hanek
over the whole float64 range in integer arithmetic: |x| = M * 2^(e-52) with a 53-bit M, and
x * 2/pi mod 4 is M times a 192-bit window of the bits of 2/pi that starts where the product's
bits stop being multiples of 4 (``TWO_OVER_PI``, 37 words, covers exponents up to 1023). The
product is formed in 16-bit limbs in int64 (every column sum stays below 2^36); its top two bits
are the quadrant, the next 190 the fraction, which becomes a dd r in [-pi/4, pi/4] (truncation
below 2^-135 absolute; the closest a float64 comes to a multiple of pi/2 is about 2^-61 relative,
6e-17 absolute, so r keeps more than 70 correct bits). Below pi/4 the argument is r itself.
sin r = r - r^3/6 + r^5 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2) with the first two terms in dd and
S, C Taylor series truncated below 2^-68.

atan, atan2, asin and acos all evaluate atan(n/d) for n, d >= 0 (``atan_ratio``): the ratio's
nearest of the 17 angles j*pi/32 is found by comparisons, t = (n - c d)/(d + c n) with c =
tan(j*pi/32) (exact double-double products and sums), and atan(n/d) = atan(c) + atan(t) with
|t| <= tan(pi/64), atan(t) = t + t^3 A(t^2) (Taylor, truncated below 2^-64), atan(c) a dd
constant. asin and acos take n, d from sqrt((1-a)(1+a)) in dd.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ...ir.builder import eq, floor, isnan, round_even, select
from ...ir.core import Value
from .f64 import ABS_MASK, DEFAULT_NAN_BITS, INF_BITS, SIGN_BIT, _quiet, unpack
from .f64 import sqrt as sqrt_f64
from .f64dd import (
    ROUNDER,
    ROUNDER_BITS,
    add_dd,
    div_dd,
    f64,
    fast_two_sum,
    from_bits,
    horner,
    i64,
    mul_dd,
    mul_dd_const,
    scale,
    sqrt_dd,
    to_bits,
    two_prod,
    two_sum,
)


def _hex(*values: str) -> list[float]:
    return [float.fromhex(v) for v in values]


def _dd_const(q: Fraction) -> tuple[float, float]:
    hi = float(q)
    return hi, float(q - Fraction(hi))


# The first 37*32 bits of 2/pi after the binary point, most significant word first.
TWO_OVER_PI = (
    0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599, 0x3C439041, 0xFE5163AB, 0xDEBBC561,
    0xB7246E3A, 0x424DD2E0, 0x06492EEA, 0x09D1921C, 0xFE1DEB1C, 0xB129A73E, 0xE88235F5, 0x2EBB4484,
    0xE99C7026, 0xB45F7E41, 0x3991D639, 0x835339F4, 0x9C845F8B, 0xBDF9283B, 0x1FF897FF, 0xDE05980F,
    0xEF2F118B, 0x5A0A6D1F, 0x6D367ECF, 0x27CB09B7, 0x4F463F66, 0x9E5FEA2D, 0x7527BAC7, 0xEBE5F17B,
    0x3D0739F7, 0x8A5292EA, 0x6BFB5FB1, 0x1F8D5D08, 0x56033046,
)  # fmt: skip
# The word stream: two zero words first, for the bits of weight 2^63 .. 2^0 a window may start in.
_STREAM = (0, 0) + TWO_OVER_PI
PIO2 = _hex("0x1.921fb54442d18p+0", "0x1.1a62633145c07p-54")
PI = _hex("0x1.921fb54442d18p+1", "0x1.1a62633145c07p-53")
PIO4 = float.fromhex("0x1.921fb54442d18p-1")  # just below pi/4: up to it, r = |x|
SIXTH = _dd_const(Fraction(1, 6))
# sin r: r^5 * S(z), S = sum (-1)^n z^(n-2) / (2n+1)! for n >= 2; cos r: r^4 * C(z), C = sum (-1)^n z^(n-2) / (2n)!
SIN_S = [(-1) ** n / math.factorial(2 * n + 1) for n in range(2, 11)]
COS_C = [(-1) ** n / math.factorial(2 * n) for n in range(2, 12)]
# (atan t - t) / t^3 = sum (-1)^n z^(n-1) / (2n+1), n >= 1, for |t| <= tan(pi/64)
ATAN_A = [(-1) ** n / (2 * n + 1) for n in range(1, 10)]
# j = 0..15: (c = tan(j pi/32) rounded, atan(c) as a dd, tan((j + 1/2) pi/32): the next threshold)
ATAN_TABLE = [
    tuple(_hex(*row))
    for row in (
        ("0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x1.927278a3b1162p-5"),
        ("0x1.936bb8c5b2da2p-4", "0x1.921fb54442d18p-4", "-0x1.a6a92370f06b7p-60", "0x1.2fcac73a60640p-3"),
        ("0x1.975f5e0553158p-3", "0x1.921fb54442d18p-3", "0x1.f93470dfef04ap-58", "0x1.007fa758626aep-2"),
        ("0x1.36a08355c63dcp-2", "0x1.2d97c7f3321d2p-2", "0x1.ab73d134ce998p-56", "0x1.6e649f7d78649p-2"),
        ("0x1.a827999fcef32p-2", "0x1.921fb54442d18p-2", "0x1.c398861b78b55p-59", "0x1.e450e0d273e7ap-2"),
        ("0x1.11ab7190834ecp-1", "0x1.f6a7a2955385fp-2", "0x1.502d27c7987c2p-58", "0x1.32e1889047ffdp-1"),
        ("0x1.561b82ab7f990p-1", "0x1.2d97c7f3321d2p-1", "-0x1.8f57cafebcf16p-58", "0x1.7bb99ed2990cfp-1"),
        ("0x1.a43002ae42850p-1", "0x1.5fdbbe9bba775p-1", "0x1.756cab91ebae2p-55", "0x1.d00cbc7384d2ep-1"),
        ("0x1.0000000000000p+0", "0x1.921fb54442d18p-1", "0x1.1a62633145c07p-55", "0x1.1a73d55278c4bp+0"),
        ("0x1.37efd8d87607ep+0", "0x1.c463abeccb2bbp-1", "0x1.8c8af69547e5ep-55", "0x1.592d11142fa55p+0"),
        ("0x1.7f218e25a7461p+0", "0x1.f6a7a2955385ep-1", "0x1.34dfa5661a3cbp-56", "0x1.ab1c35d8a74eap+0"),
        ("0x1.def13b73c1406p+0", "0x1.1475cc9eedf01p+0", "-0x1.5c0c8981e68dfp-54", "0x1.0ea21d716fbf7p+1"),
        ("0x1.3504f333f9de6p+1", "0x1.2d97c7f3321d2p+0", "0x1.fc774dbe287a0p-56", "0x1.65bc6cc825147p+1"),
        ("0x1.a5f59e90600ddp+1", "0x1.46b9c347764a4p+0", "-0x1.eb08d130d92fep-55", "0x1.ff01305ecd8dcp+1"),
        ("0x1.41bfee2424771p+2", "0x1.5fdbbe9bba775p+0", "0x1.e3cdb040ef2b3p-55", "0x1.af73f4ca3310fp+2"),
        ("0x1.44e6c595afdccp+3", "0x1.78fdb9effea47p+0", "-0x1.0f05e34745b3ep-54", "0x1.45affed201b55p+4"),
    )
]
TINY = 2.0**-27  # below this sin, tan, atan, asin round to x (x^3/3 < 2^-54 x)


def _nan() -> Value:
    return from_bits(i64(DEFAULT_NAN_BITS))


def _abs(x: Value) -> Value:
    return from_bits(to_bits(x) & ABS_MASK)


def _negative(x: Value) -> Value:
    """The sign bit of x (true for -0.0)."""
    return to_bits(x) < 0


def _negate_if(cond: Value, v: Value) -> Value:
    return from_bits(to_bits(v) ^ select(cond, i64(SIGN_BIT), i64(0)))


def _int_to_f64(k: Value) -> Value:
    return from_bits(k + ROUNDER_BITS) - ROUNDER


# ---------------------------------------------------------------- Payne-Hanek


def _word(j: Value, t: int) -> Value:
    """_STREAM[j + t] for an int64 j in [0, 32]: a chain of selects (no arrays in the IR)."""
    out = i64(_STREAM[32 + t])
    for i in range(31, -1, -1):
        out = select(eq(j, i64(i)), i64(_STREAM[i + t]), out)
    return out


def payne_hanek(a: Value) -> tuple[Value, Value, Value]:
    """|x| = a (finite, >= pi/4) as q*pi/2 + r: the int64 quadrant q mod 4 and r as a dd, |r| <= pi/4."""
    bits = to_bits(a)
    field = (bits >> 52) & 0x7FF
    field = select(field < 1022, i64(1022), select(field > 2046, i64(2046), field))  # NaN/inf lanes: any window
    m = (bits & ((1 << 52) - 1)) | (1 << 52)
    start = field - 1023 + 10  # the window's first bit in the stream: bit i of 2/pi is at i + 63, i0 = e - 53
    j, sh = start >> 5, start & 31
    words = [_word(j, t) for t in range(7)]
    window = [((words[t] << sh) | (words[t + 1] >> (32 - sh))) & 0xFFFFFFFF for t in range(6)]
    w = []  # 16-bit limbs, least significant first
    for t in range(5, -1, -1):
        w += [window[t] & 0xFFFF, window[t] >> 16]
    mm = [(m >> (16 * i)) & 0xFFFF for i in range(4)]
    # P = M * window mod 2^192 in 16-bit limbs; x * 2/pi = P / 2^190 (mod 4)
    limbs, carry = [], i64(0)
    for n in range(12):
        col = carry
        for i in range(4):
            if 0 <= n - i < 12:
                col = col + mm[i] * w[n - i]
        limbs.append(col & 0xFFFF)
        carry = col >> 16
    top = limbs[11]
    quadrant = top >> 14
    up = eq((top >> 13) & 1, i64(1))  # the fraction is >= 1/2: round to the next quadrant
    frac = limbs[:11] + [top & 0x3FFF]
    neg, carry = [], i64(1)
    for k, limb in enumerate(frac):  # 2^190 - F, limb by limb
        total = (limb ^ (0x3FFF if k == 11 else 0xFFFF)) + carry
        neg.append(total & 0xFFFF)
        carry = total >> 16
    quadrant = (quadrant + select(up, i64(1), i64(0))) & 3
    f_hi, f_lo = f64(0.0), f64(0.0)
    for k in range(11, -1, -1):
        v = _int_to_f64(select(up, neg[k], frac[k])) * (2.0 ** (16 * k - 190))
        f_hi, e = two_sum(f_hi, v)
        f_lo = f_lo + e
    f_hi, f_lo = fast_two_sum(f_hi, f_lo)
    f_hi, f_lo = select(up, -f_hi, f_hi), select(up, -f_lo, f_lo)
    r_hi, r_lo = mul_dd_const(f_hi, f_lo, PIO2[0], PIO2[1])
    return quadrant, r_hi, r_lo


def reduce_half_pi(x: Value) -> tuple[Value, Value, Value, Value]:
    """|x| = q*pi/2 + r: (int64 q mod 4, r_hi, r_lo, a = |x|); r = |x| itself up to pi/4."""
    a = _abs(x)
    q, r_hi, r_lo = payne_hanek(a)
    small = a <= PIO4
    return select(small, i64(0), q), select(small, a, r_hi), select(small, f64(0.0), r_lo), a


def sin_cos_dd(r_hi: Value, r_lo: Value) -> tuple[Value, Value, Value, Value]:
    """sin r and cos r as dds (s_hi, s_lo, c_hi, c_lo) for |r| <= pi/4 (about 2^-62 relative)."""
    w_hi, w_lo = two_prod(r_hi, r_hi)
    w_lo = w_lo + 2.0 * r_hi * r_lo  # r^2
    z = w_hi
    c_hi, c_lo = mul_dd(w_hi, w_lo, r_hi, r_lo)  # r^3
    t_hi, t_lo = mul_dd_const(c_hi, c_lo, -SIXTH[0], -SIXTH[1])
    s_hi, s_lo = two_sum(r_hi, t_hi)
    s_hi, s_lo = fast_two_sum(s_hi, s_lo + (r_lo + (t_lo + c_hi * z * horner(z, SIN_S))))
    h_hi, h_lo = w_hi * 0.5, w_lo * 0.5
    k_hi, k_lo = fast_two_sum(f64(1.0), -h_hi)
    k_hi, k_lo = fast_two_sum(k_hi, k_lo + (z * z * horner(z, COS_C) - h_lo))
    return s_hi, s_lo, k_hi, k_lo


def _nan_for_nonfinite(x: Value, out: Value) -> Value:
    out = select(eq(to_bits(x) & ABS_MASK, i64(INF_BITS)), _nan(), out)
    return select(isnan(x), _quiet(x), out)


def sin(x: Value) -> Value:
    """Sine for float64, with Payne-Hanek range reduction over the whole float64 range.

    Precision: ≤ 1 ulp of the correctly rounded result for every finite input, huge arguments
    (sin(1e300)) included.
    Special values: sin(±0) = ±0, sin(±inf) = NaN; a NaN comes back quieted.
    """
    q, r_hi, r_lo, a = reduce_half_pi(x)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(r_hi, r_lo)
    out = select(eq(q & 1, 1), c_hi + c_lo, s_hi + s_lo)
    out = _negate_if(eq(q & 2, 2) ^ _negative(x), out)
    out = select(a < TINY, x, out)
    return _nan_for_nonfinite(x, out)


def cos(x: Value) -> Value:
    """Cosine for float64, with Payne-Hanek range reduction over the whole float64 range.

    Precision: ≤ 1 ulp of the correctly rounded result for every finite input.
    Special values: cos(±0) = 1, cos(±inf) = NaN; a NaN comes back quieted.
    """
    q, r_hi, r_lo, _ = reduce_half_pi(x)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(r_hi, r_lo)
    out = select(eq(q & 1, 1), s_hi + s_lo, c_hi + c_lo)
    out = _negate_if(eq((q + 1) & 2, 2), out)
    return _nan_for_nonfinite(x, out)


def tan(x: Value) -> Value:
    """Tangent for float64: sin r / cos r (or -cos r / sin r in odd quadrants) as a dd quotient.

    Precision: ≤ 1 ulp of the correctly rounded result for every finite input.
    Special values: tan(±0) = ±0, tan(±inf) = NaN; a NaN comes back quieted.
    """
    q, r_hi, r_lo, a = reduce_half_pi(x)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(r_hi, r_lo)
    odd = eq(q & 1, 1)
    n_hi, n_lo = select(odd, c_hi, s_hi), select(odd, c_lo, s_lo)
    d_hi, d_lo = select(odd, s_hi, c_hi), select(odd, s_lo, c_lo)
    d_neg = d_hi < 0.0
    d_hi, d_lo = select(d_neg, -d_hi, d_hi), select(d_neg, -d_lo, d_lo)
    d_hi = select(d_hi > 2.0**-900, d_hi, f64(1.0))  # only where r is tiny: then a < TINY decides
    t_hi, t_lo = div_dd(n_hi, n_lo, d_hi, d_lo)
    out = _negate_if(odd ^ d_neg ^ _negative(x), t_hi + t_lo)
    out = select(a < TINY, x, out)
    return _nan_for_nonfinite(x, out)


# ---------------------------------------------------------------- inverse functions


def atan_ratio(n_hi: Value, n_lo: Value, d_hi: Value, d_lo: Value) -> tuple[Value, Value]:
    """atan(n/d) in [0, pi/2] as a dd, for dds n, d >= 0 with max(n, d) in [2^-100, 2^100]
    (the divisor d + c n, or n, stays normal and every product finite)."""
    c = f64(ATAN_TABLE[0][0])
    a_hi, a_lo = f64(ATAN_TABLE[0][1]), f64(ATAN_TABLE[0][2])
    for j in range(1, 16):
        above = n_hi > d_hi * ATAN_TABLE[j - 1][3]
        c = select(above, f64(ATAN_TABLE[j][0]), c)
        a_hi = select(above, f64(ATAN_TABLE[j][1]), a_hi)
        a_lo = select(above, f64(ATAN_TABLE[j][2]), a_lo)
    j_inf = n_hi > d_hi * ATAN_TABLE[15][3]
    a_hi = select(j_inf, f64(PIO2[0]), a_hi)
    a_lo = select(j_inf, f64(PIO2[1]), a_lo)
    # t = (n - c d) / (d + c n); for j = 16 (c = inf) t = -d / n
    p_hi, p_lo = two_prod(c, d_hi)
    u_hi, u_lo = two_sum(n_hi, -p_hi)
    u_lo = u_lo + ((n_lo - p_lo) - c * d_lo)
    g_hi, g_lo = two_prod(c, n_hi)
    v_hi, v_lo = two_sum(d_hi, g_hi)
    v_lo = v_lo + (g_lo + (d_lo + c * n_lo))
    u_hi, u_lo = select(j_inf, -d_hi, u_hi), select(j_inf, -d_lo, u_lo)
    v_hi, v_lo = select(j_inf, n_hi, v_hi), select(j_inf, n_lo, v_lo)
    t_hi, t_lo = div_dd(u_hi, u_lo, v_hi, v_lo)
    z = t_hi * t_hi
    at_hi, at_lo = fast_two_sum(t_hi, t_lo + t_hi * z * horner(z, ATAN_A))
    return add_dd(a_hi, a_lo, at_hi, at_lo)


def atan(x: Value) -> Value:
    """Arctangent for float64, in [-pi/2, pi/2].

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: atan(±inf) = ±pi/2 (rounded), atan(±0) = ±0; a NaN comes back quieted.
    """
    a = _abs(x)
    n = select(a < 2.0**100, a, f64(2.0**100))  # beyond 2^100, pi/2 - 1/a rounds to pi/2 (NaN: any)
    t_hi, t_lo = atan_ratio(n, f64(0.0), f64(1.0), f64(0.0))
    out = select(a < TINY, a, t_hi + t_lo)
    return select(isnan(x), _quiet(x), _negate_if(_negative(x), out))


def atan2(y: Value, x: Value) -> Value:
    """The angle of the point (x, y) in (-pi, pi] for float64.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: C99's rules, as PyTorch: atan2(±0, +0) = ±0, atan2(±0, -0) = ±pi,
    atan2(±inf, ±inf) = ±pi/4 or ±3pi/4, atan2(±inf, finite) = ±pi/2, atan2(finite, -inf) = ±pi;
    NaN in either operand gives NaN.
    """
    ay, ax = _abs(y), _abs(x)
    big = select(ay > ax, ay, ax)
    # both scaled by one power of two so that the larger is in [1, 2): subnormal operands first by 2^600
    up = big < 2.0**-900
    ay_s, ax_s = select(up, ay * 2.0**600, ay), select(up, ax * 2.0**600, ax)
    big = select(up, big * 2.0**600, big)
    _, e = unpack(to_bits(select(big < float("inf"), big, f64(1.0))))
    n, d = scale(ay_s, -e), scale(ax_s, -e)  # 2^-e in two steps: 2^-1023 alone is subnormal
    tiny_n = n < 2.0**-60  # atan(n/d) = n/d: one correctly rounded division (subnormal results too)
    tiny_d = d < 2.0**-60  # the angle is pi/2 - d/n, pi/2 to within 2^-61
    n_safe = select(tiny_n | tiny_d, f64(1.0), n)
    d_safe = select(tiny_n | tiny_d, f64(1.0), d)
    t_hi, t_lo = atan_ratio(n_safe, f64(0.0), d_safe, f64(0.0))
    t_hi = select(tiny_d, f64(PIO2[0]), t_hi)
    t_lo = select(tiny_d, f64(PIO2[1]) - d, t_lo)
    # left half-plane (x < 0 or x = -0): pi - angle
    left = _negative(x)
    l_hi, l_lo = two_sum(f64(PI[0]), -t_hi)
    l_lo = l_lo + (PI[1] - t_lo)
    small = ay / select(eq(ax, 0.0), f64(1.0), ax)
    out = select(left, l_hi + l_lo, t_hi + t_lo)
    out = select(tiny_n & ~left, small, out)
    out = select(tiny_n & left, f64(PI[0]), out)  # pi - (below 2^-60) rounds to pi
    # zeros and infinities
    y_zero, x_zero = eq(ay, 0.0), eq(ax, 0.0)
    y_inf, x_inf = eq(to_bits(ay), INF_BITS), eq(to_bits(ax), INF_BITS)
    out = select(y_zero, select(left, f64(PI[0]), f64(0.0)), out)
    out = select(x_zero & ~y_zero, f64(PIO2[0]), out)
    out = select(x_inf & ~y_inf, select(left, f64(PI[0]), f64(0.0)), out)
    out = select(y_inf & ~x_inf, f64(PIO2[0]), out)
    quarter = float.fromhex("0x1.921fb54442d18p-1")
    three_quarters = float.fromhex("0x1.2d97c7f3321d2p+1")
    out = select(y_inf & x_inf, select(left, f64(three_quarters), f64(quarter)), out)
    out = _negate_if(_negative(y), out)
    out = select(isnan(x), _quiet(x), out)
    return select(isnan(y), _quiet(y), out)


def one_minus_square(a: Value) -> tuple[Value, Value]:
    """sqrt(1 - a^2) as a dd for a in [0, 1), from (1 - a)(1 + a) (1 - a exact)."""
    m_hi, m_lo = two_sum(f64(1.0), -a)
    p_hi, p_lo = two_sum(f64(1.0), a)
    w_hi, w_lo = mul_dd(m_hi, m_lo, p_hi, p_lo)
    return sqrt_dd(w_hi, w_lo, sqrt_f64(w_hi))


def asin(x: Value) -> Value:
    """Arcsine for float64, in [-pi/2, pi/2]: atan(a / sqrt(1 - a^2)) in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: asin(x) for |x| > 1 is NaN, asin(±0) = ±0, asin(±1) = ±pi/2; a NaN comes back quieted.
    """
    a = _abs(x)
    m = select(a < 1.0, a, f64(0.5))
    r_hi, r_lo = one_minus_square(m)
    t_hi, t_lo = atan_ratio(m, f64(0.0), r_hi, r_lo)
    out = select(a < TINY, a, t_hi + t_lo)
    out = select(eq(a, 1.0), f64(PIO2[0]), out)
    out = select(a > 1.0, _nan(), _negate_if(_negative(x), out))
    return select(isnan(x), _quiet(x), out)


def acos(x: Value) -> Value:
    """Arccosine for float64, in [0, pi]: atan(sqrt(1 - a^2) / a), from pi for x < 0, in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: acos(x) for |x| > 1 is NaN, acos(1) = 0, acos(-1) = pi (rounded); a NaN comes back quieted.
    """
    a = _abs(x)
    m = select(a < 1.0, a, f64(0.5))
    r_hi, r_lo = one_minus_square(m)
    t_hi, t_lo = atan_ratio(r_hi, r_lo, m, f64(0.0))
    l_hi, l_lo = two_sum(f64(PI[0]), -t_hi)
    left = x < 0.0
    out = select(left, l_hi + (l_lo + (PI[1] - t_lo)), t_hi + t_lo)
    out = select(eq(a, 1.0), select(left, f64(PI[0]), f64(0.0)), out)
    out = select(a > 1.0, _nan(), out)
    return select(isnan(x), _quiet(x), out)


# ---------------------------------------------------------------- sinc


def sinpi_dd(a: Value) -> tuple[Value, Value, Value]:
    """sin(pi*a) for a finite a >= 0 as a dd, and whether it is exactly zero (a an integer).

    a = n + r with n = round(a), |r| <= 1/2 exact; sin(pi a) = (-1)^n sin(pi r), and for |r| > 1/4,
    sin(pi r) = ±cos(pi (1/2 - |r|)).
    """
    big = a >= 2.0**52  # every such float64 is an integer
    a_s = select(big, f64(0.0), a)
    n = round_even(a_s)
    r = a_s - n  # exact
    half = n * 0.5
    odd = ~eq(half, floor(half))
    ra = _abs(r)
    far = ra > 0.25
    v = select(far, 0.5 - ra, ra)  # exact (Sterbenz)
    p_hi, p_lo = mul_dd_const(v, f64(0.0), PI[0], PI[1])
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(p_hi, p_lo)
    o_hi, o_lo = select(far, c_hi, s_hi), select(far, c_lo, s_lo)
    flip = odd ^ (r < 0.0)
    o_hi, o_lo = select(flip, -o_hi, o_hi), select(flip, -o_lo, o_lo)
    return o_hi, o_lo, big | eq(r, 0.0)


def sinc(x: Value) -> Value:
    """The normalised sinc sin(pi x) / (pi x) for float64, 1 at 0, with x reduced exactly mod 2.

    Precision: ≤ 1 ulp of the correctly rounded result for every input, near its zeros too.
    Special values: sinc(±0) = 1, sinc(n) = 0 for nonzero integers n, sinc(±inf) = NaN; a NaN
    comes back quieted.
    """
    a = _abs(x)
    s_hi, s_lo, zero = sinpi_dd(select(a < float("inf"), a, f64(0.0)))
    a_d = select((a < 2.0**52) & (a >= 2.0**-28), a, f64(1.0))  # the quotient is used only there
    d_hi, d_lo = mul_dd_const(a_d, f64(0.0), PI[0], PI[1])
    q_hi, q_lo = div_dd(s_hi, s_lo, d_hi, d_lo)
    out = select(zero, f64(0.0), q_hi + q_lo)
    out = select(a < 2.0**-28, f64(1.0), out)  # 1 - (pi x)^2/6 rounds to 1
    return _nan_for_nonfinite(x, out)
