"""sin, cos, tan, sinpi, atan, atan2, asin, acos: double-float evaluation rounded once.

Range reduction for sin/cos/tan is Payne-Hanek over the whole float32 range, in 32-bit
integers: |x| = M * 2^(e-150) with a 24-bit M, and x * 2/pi mod 4 is M times a 96-bit window of
the bits of 2/pi that starts where the product's bits stop being multiples of 4. The window is
cut out of eight words of 2/pi with shifts, the product M * window is formed in 16-bit limbs
(12-bit halves of M, so every partial product fits 28 bits), and its top two bits are the
quadrant, the other 94 the fraction, which becomes a double-float r in [-pi/4, pi/4] (its
truncation error is below 2^-70 absolute; the closest a float32 comes to a multiple of pi/2 is
about 2^-29 away, so r keeps at least 40 correct bits). Below pi/4 the argument is used as it is.

sin and cos of r are polynomials: sin r = r - r^3/6 + r^5 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2),
with r^3/6 and r^2/2 formed as double-floats; atan t = t + t^3 A(t^2) on |t| <= tan(pi/8) after t -> (t-1)/(t+1).
Coefficients: near-minimax fits (Lawson's iteration), rounded to float32 one at a time.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.builder import bitcast, const, eq, floor, isnan, round_even, select
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
    int_to_float,
    pow2,
    quiet,
    to_bits,
    u32,
)
from .dd import div_dd, fast_two_sum, horner, mul_dd, mul_dd_const, recip, two_prod, two_sum
from .exact import div, sqrt


def _hex(*values: str) -> list[float]:
    return [float.fromhex(v) for v in values]


# 2/pi in words: word j holds the bits of weight 2^-(32j-31) .. 2^-32j (word 0 is the zero bits
# before the binary point, so that a window may start up to 31 bits early).
TWO_OVER_PI = (
    0x00000000,
    0xA2F9836E,
    0x4E441529,
    0xFC2757D1,
    0xF534DDC0,
    0xDB629599,
    0x3C439041,
    0xFE5163AB,
)
PIO2 = _hex("0x1.921fb6p+0", "-0x1.777a5cp-25")
PI = _hex("0x1.921fb6p+1", "-0x1.777a5cp-24")
# k*pi/4 for k = 0..4 as float32 pairs
QUARTERS = (
    (0.0, 0.0),
    tuple(_hex("0x1.921fb6p-1", "-0x1.777a5cp-26")),
    tuple(PIO2),
    tuple(_hex("0x1.2d97c8p+1", "-0x1.99bc5cp-28")),
    tuple(PI),
)
PIO4 = float.fromhex("0x1.921fb6p-1")  # pi/4 rounded up: below it the argument needs no reduction
TAN_PI_8 = float.fromhex("0x1.a8279ap-2")
# sin r = r - r^3/6 + r^5 S(r^2): -1/6 as a float32 pair, S on z = r^2 in [0, (pi/4)^2] (2^-31.7 relative)
SIN_SIXTH = _hex("-0x1.555556p-3", "0x1.555556p-28")
SIN_S = _hex("0x1.11110ep-7", "-0x1.a01328p-13", "0x1.6d8286p-19")
# (cos r - 1 + r^2/2) / r^4 in z = r^2 on [0, (pi/4)^2] (relative error 2^-24)
COS_C = _hex("0x1.555554p-5", "-0x1.6c1244p-10", "0x1.9b8f60p-16")
# (atan t - t) / t^3 in z = t^2 on [0, tan(pi/8)^2] (relative error 2^-25)
ATAN_A = _hex("-0x1.555556p-2", "0x1.999afcp-3", "-0x1.24cd82p-3", "0x1.cdd314p-4", "-0x1.9777a8p-4", "0x1.4a7190p-4")
TINY = 2.0**-12  # below this, sin, tan, atan, asin round to x (x^3/3 < 2^-25 x)


def _word(j: Value, t: int) -> Value:
    """TWO_OVER_PI[j + t] for a uint32 j in [0, 4]: a chain of selects (no arrays in the IR)."""
    out = u32(TWO_OVER_PI[4 + t])
    for i in range(3, -1, -1):
        out = select(eq(j, u32(i)), u32(TWO_OVER_PI[i + t]), out)
    return out


def _funnel(a: Value, b: Value, sh: Value) -> Value:
    """The 32 bits of (a:b) starting sh bits into a, for sh in [0, 31] (b's part is 0 when sh is 0)."""
    low = select(eq(sh, u32(0)), u32(0), b >> ((u32(32) - sh) & 31))
    return (a << sh) | low


def payne_hanek(a: Value) -> tuple[Value, Value, Value]:
    """|x| = a (finite, >= pi/4) as q*pi/2 + r: returns the uint32 quadrant q mod 4 and r as a double-float.

    |r| <= pi/4; r is within 2^-40 relative of the exact remainder (see the module's note).
    """
    bits = to_bits(a)
    field = (bits >> 23) & 0xFF
    field = select(field < 126, u32(126), select(field > 254, u32(254), field))  # NaN/inf lanes: any window
    offset = field - 120  # the window's first bit, as an index into the word stream: s + 31, s = e - 151
    j, sh = offset >> 5, offset & 31
    w = [_word(j, t) for t in range(4)]
    hi, mid, lo = _funnel(w[0], w[1], sh), _funnel(w[1], w[2], sh), _funnel(w[2], w[3], sh)
    limbs = [lo & 0xFFFF, lo >> 16, mid & 0xFFFF, mid >> 16, hi & 0xFFFF, hi >> 16]
    m = (bits & 0x007FFFFF) | 0x00800000
    m0, m1 = m & 0xFFF, m >> 12
    # P = m * window mod 2^96 in 16-bit limbs; m1's products weigh 2^12 more than m0's.
    product, carry, prev = [], u32(0), u32(0)
    for limb in limbs:
        a_k, b_k = m0 * limb, m1 * limb
        total = a_k + ((b_k & 0xF) << 12) + (prev >> 4) + carry
        product.append(total & 0xFFFF)
        carry, prev = total >> 16, b_k
    # x * 2/pi = P / 2^94 (mod 4): bits 94-95 are the quadrant, bit 93 says the fraction is >= 1/2.
    top = product[5]
    quadrant = top >> 14
    up = eq((top >> 13) & 1, u32(1))
    frac = product[:5] + [top & 0x3FFF]
    # Rounded to the nearest quadrant: the fraction f - 1 is negative, its magnitude 2^94 - F.
    neg, carry = [], u32(1)
    for k, limb in enumerate(frac):
        total = (limb ^ (0x3FFF if k == 5 else 0xFFFF)) + carry
        neg.append(total & 0xFFFF)
        carry = total >> 16
    quadrant = (quadrant + select(up, u32(1), u32(0))) & 3
    f_hi, f_lo = f32(0.0), f32(0.0)
    for k in range(5, -1, -1):
        limb = select(up, neg[k], frac[k])
        v = int_to_float(bitcast(limb, I32)) * (2.0 ** (16 * k - 94))
        f_hi, e = two_sum(f_hi, v)
        f_lo = f_lo + e
    f_hi, f_lo = fast_two_sum(f_hi, f_lo)
    sign = select(up, f32(-1.0), f32(1.0))
    r_hi, r_lo = mul_dd_const(f_hi * sign, f_lo * sign, PIO2[0], PIO2[1])
    r_hi, r_lo = fast_two_sum(r_hi, r_lo)
    return quadrant, r_hi, r_lo


def reduce_half_pi(x: Value) -> tuple[Value, Value, Value, Value]:
    """|x| = q*pi/2 + r: (uint32 q mod 4, r_hi, r_lo, a = |x|); r = |x| itself below pi/4."""
    a = from_bits(to_bits(x) & ABS_MASK)
    q, r_hi, r_lo = payne_hanek(a)
    small = a <= PIO4
    return select(small, u32(0), q), select(small, a, r_hi), select(small, f32(0.0), r_lo), a


def sin_cos_dd(r_hi: Value, r_lo: Value) -> tuple[Value, Value, Value, Value]:
    """sin r and cos r as double-floats (s_hi, s_lo, c_hi, c_lo) for |r| <= pi/4 (about 2^-30 relative).

    sin's -r^3/6 is a double-float product (rounded, it alone would cost tan up to 1.03 ulp).
    """
    w_hi, w_lo = two_prod(r_hi, r_hi)
    w_lo = w_lo + 2.0 * r_hi * r_lo  # r^2
    z = w_hi
    c_hi, c_lo = mul_dd(w_hi, w_lo, r_hi, r_lo)  # r^3
    t_hi, t_lo = mul_dd_const(c_hi, c_lo, SIN_SIXTH[0], SIN_SIXTH[1])
    s_hi, s_lo = two_sum(r_hi, t_hi)
    s_hi, s_lo = fast_two_sum(s_hi, s_lo + (r_lo + t_lo + c_hi * z * horner(z, SIN_S)))
    h_hi, h_lo = w_hi * 0.5, w_lo * 0.5
    c_hi, c_lo = fast_two_sum(f32(1.0), -h_hi)
    c_hi, c_lo = fast_two_sum(c_hi, c_lo + (z * z * horner(z, COS_C) - h_lo))
    return s_hi, s_lo, c_hi, c_lo


def _negate_if(cond: Value, v: Value) -> Value:
    return from_bits(to_bits(v) ^ select(cond, u32(SIGN_BIT), u32(0)))


def _nan_for_nonfinite(x: Value, out: Value) -> Value:
    out = select(eq(to_bits(x) & ABS_MASK, u32(INF_BITS)), f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


def _negative(x: Value) -> Value:
    return eq(to_bits(x) >> 31, u32(1))


@float32_only
def sin(x: Value) -> Value:
    """Sine, with Payne-Hanek range reduction over the whole float32 range.

    Precision: ≤ 1 ulp of the correctly rounded result for every finite input, huge arguments
    (sin(1e30)) included; subnormal inputs give themselves.
    Special values: sin(±0) = ±0, sin(±inf) = NaN; a NaN comes back quieted.

    Example: ``y = sin(x)``.
    """
    q, r_hi, r_lo, _ = reduce_half_pi(x)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(r_hi, r_lo)
    odd = eq(q & 1, u32(1))
    out = select(odd, c_hi + c_lo, s_hi + s_lo)
    out = _negate_if(eq(q & 2, u32(2)) ^ _negative(x), out)
    return _nan_for_nonfinite(x, out)


@float32_only
def cos(x: Value) -> Value:
    """Cosine, with Payne-Hanek range reduction over the whole float32 range.

    Precision: ≤ 1 ulp of the correctly rounded result for every finite input, huge arguments
    included.
    Special values: cos(±0) = 1, cos(±inf) = NaN; a NaN comes back quieted.

    Example: ``y = cos(x)``.
    """
    q, r_hi, r_lo, _ = reduce_half_pi(x)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(r_hi, r_lo)
    odd = eq(q & 1, u32(1))
    out = select(odd, s_hi + s_lo, c_hi + c_lo)
    out = _negate_if(eq((q + 1) & 2, u32(2)), out)
    return _nan_for_nonfinite(x, out)


@float32_only
def tan(x: Value) -> Value:
    """Tangent: sin r / cos r (or -cos r / sin r in odd quadrants) as a double-float quotient.

    Precision: ≤ 1 ulp of the correctly rounded result for every finite input, huge arguments
    included (measured worst case 1 ulp).
    Special values: tan(±0) = ±0, tan(±inf) = NaN; a NaN comes back quieted. No float32 is
    close enough to a pole for tan to overflow.

    Example: ``y = tan(x)``.
    """
    q, r_hi, r_lo, a = reduce_half_pi(x)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(r_hi, r_lo)
    odd = eq(q & 1, u32(1))
    # q even: s / c; q odd: -c / s. The divisor is made positive (div_dd needs it), its sign moved.
    n_hi, n_lo = select(odd, c_hi, s_hi), select(odd, c_lo, s_lo)
    d_hi, d_lo = select(odd, s_hi, c_hi), select(odd, s_lo, c_lo)
    d_neg = d_hi < 0.0
    d_hi, d_lo = select(d_neg, -d_hi, d_hi), select(d_neg, -d_lo, d_lo)
    d_hi = select(eq(d_hi, 0.0), f32(1.0), d_hi)  # only where r = 0, that is x = 0 (q even)
    t_hi, t_lo = div_dd(n_hi, n_lo, d_hi, d_lo)
    out = _negate_if(odd ^ d_neg, t_hi + t_lo)
    out = _negate_if(_negative(x), out)
    out = select(a < TINY, x, out)
    return _nan_for_nonfinite(x, out)


def sinpi_dd(a: Value) -> tuple[Value, Value, Value]:
    """sin(pi*a) for a finite a >= 0 as a double-float and whether it is zero exactly (a an integer).

    a = n + r with n = round(a), |r| <= 1/2 exact; sin(pi a) = (-1)^n sin(pi r), and for |r| > 1/4,
    sin(pi r) = ±cos(pi (1/2 - |r|)).
    """
    big = a >= 2.0**23  # every such float is an integer
    a_s = select(big, f32(0.0), a)
    n = round_even(a_s)
    r = a_s - n  # exact
    half = n * 0.5
    odd = ~eq(half, floor(half))
    ra = from_bits(to_bits(r) & ABS_MASK)
    far = ra > 0.25
    v = select(far, 0.5 - ra, ra)  # exact (Sterbenz)
    p_hi, p_lo = mul_dd_const(v, f32(0.0), PI[0], PI[1])
    p_hi, p_lo = fast_two_sum(p_hi, p_lo)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(p_hi, p_lo)
    o_hi, o_lo = select(far, c_hi, s_hi), select(far, c_lo, s_lo)
    flip = odd ^ (r < 0.0)
    o_hi, o_lo = select(flip, -o_hi, o_hi), select(flip, -o_lo, o_lo)
    return o_hi, o_lo, big | eq(r, 0.0)


def cospi_dd(a: Value) -> tuple[Value, Value]:
    """cos(pi*a) as a double-float for a finite a >= 0 below 2^23: a = n + r exactly,
    cos(pi a) = (-1)^n cos(pi r), and for |r| > 1/4, cos(pi r) = sin(pi (1/2 - |r|))."""
    n = round_even(a)
    r = from_bits(to_bits(a - n) & ABS_MASK)  # exact
    half = n * 0.5
    odd = ~eq(half, floor(half))
    far = r > 0.25
    v = select(far, 0.5 - r, r)  # exact (Sterbenz)
    p_hi, p_lo = mul_dd_const(v, f32(0.0), PI[0], PI[1])
    p_hi, p_lo = fast_two_sum(p_hi, p_lo)
    s_hi, s_lo, c_hi, c_lo = sin_cos_dd(p_hi, p_lo)
    o_hi, o_lo = select(far, s_hi, c_hi), select(far, s_lo, c_lo)
    return select(odd, -o_hi, o_hi), select(odd, -o_lo, o_lo)


@float32_only
def sinc(x: Value) -> Value:
    """The normalised sinc: sin(pi x) / (pi x), 1 at 0.

    sin(pi x) is evaluated on x reduced exactly mod 2, so integers give exactly 0.
    Precision: ≤ 1 ulp of the correctly rounded result for every input, relative accuracy included
    near its zeros (the nonzero integers).
    Special values: sinc(±0) = 1, sinc(n) = 0 for nonzero integers n, sinc(±inf) = NaN; a NaN comes
    back quieted.
    Divergence from PyTorch: PyTorch rounds pi*x first, so sinc of a nonzero integer is about
    ±2.8e-8/n there (sinc(1) = -2.78e-8), and large arguments lose every digit; vkml gives 0.

    Example: ``y = sinc(x)``.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    s_hi, s_lo, zero = sinpi_dd(a)
    a_d = select(a < 2.0**23, a, f32(1.0))  # the quotient is only used below 2^23
    d_hi, d_lo = mul_dd_const(a_d, f32(0.0), PI[0], PI[1])
    d_hi, d_lo = fast_two_sum(d_hi, d_lo)
    q_hi, q_lo = div_dd(s_hi, s_lo, d_hi, d_lo)
    out = select(zero, f32(0.0), q_hi + q_lo)
    out = select(a < 2.0**-14, f32(1.0), out)  # 1 - (pi x)^2/6 rounds to 1
    return _nan_for_nonfinite(x, out)


# ---------------------------------------------------------------- inverse functions


def _quarter(m: Value) -> tuple[Value, Value]:
    """m*pi/4 as a float32 pair, for a float32 m in {0, 1, 2, 3, 4}."""
    hi, lo = f32(QUARTERS[4][0]), f32(QUARTERS[4][1])
    for k in range(3, -1, -1):
        hi = select(eq(m, float(k)), f32(QUARTERS[k][0]), hi)
        lo = select(eq(m, float(k)), f32(QUARTERS[k][1]), lo)
    return hi, lo


def atan_compose(t_hi: Value, t_lo: Value, swap: Value, left: Value) -> Value:
    """The angle of the point (den, num) for t = num/den in [0, 1] (a double-float), rounded once.

    Without flags that is atan(t); ``swap``: the point is (num, den), angle pi/2 - atan(t);
    ``left``: its x is negative, angle pi minus that. t > tan(pi/8) is reduced by
    atan(t) = pi/4 + atan((t - 1)/(t + 1)), so the angle is m*pi/4 ± (u + u^3 A(u^2)), |u| <= tan(pi/8).
    """
    big = t_hi > TAN_PI_8
    n_hi, n_lo = two_sum(t_hi, f32(-1.0))
    d_hi, d_lo = two_sum(t_hi, f32(1.0))
    q_hi, q_lo = div_dd(n_hi, n_lo + t_lo, d_hi, d_lo + t_lo)
    u_hi, u_lo = select(big, q_hi, t_hi), select(big, q_lo, t_lo)
    z = u_hi * u_hi
    tail = u_lo + u_hi * z * horner(z, ATAN_A)
    m = select(big, f32(1.0), f32(0.0))
    m = select(swap, 2.0 - m, m)
    minus = swap
    m = select(left, 4.0 - m, m)
    minus = minus ^ left
    k_hi, k_lo = _quarter(m)
    v_hi = select(minus, -u_hi, u_hi)
    v_lo = select(minus, -tail, tail)
    h, l = two_sum(k_hi, v_hi)
    return h + (l + (k_lo + v_lo))


def _false() -> Value:
    return const(False, T.bool_)


def _with_sign_bit(v: Value, negative: Value) -> Value:
    return from_bits((to_bits(v) & ABS_MASK) | select(negative, u32(SIGN_BIT), u32(0)))


@float32_only
def atan2(y: Value, x: Value) -> Value:
    """The angle of the point (x, y) in (-pi, pi], C99's atan2.

    Precision: ≤ 1 ulp of the correctly rounded result for every input (the ratio is a
    double-float quotient; a ratio below 2^-100 is divided correctly rounded).
    Special values: atan2(±0, +0) = ±0, atan2(±0, -0) = ±pi, atan2(±0, x < 0) = ±pi,
    atan2(y > 0, ±0) = pi/2, atan2(±inf, +inf) = ±pi/4, atan2(±inf, -inf) = ±3pi/4,
    atan2(±inf, finite) = ±pi/2, atan2(finite, +inf) = ±0, atan2(finite, -inf) = ±pi; NaN in
    either gives NaN.

    Example: ``angle = atan2(y, x)``.
    """
    a, b = from_bits(to_bits(x) & ABS_MASK), from_bits(to_bits(y) & ABS_MASK)
    inf_a, inf_b = eq(a, float("inf")), eq(b, float("inf"))
    a2 = select(inf_a, f32(1.0), select(inf_b, f32(0.0), a))
    b2 = select(inf_b, f32(1.0), select(inf_a, f32(0.0), b))
    swap = b2 > a2
    num, den = select(swap, a2, b2), select(swap, b2, a2)
    # scale so that den is in [1, 2): exact wherever the ratio is at least 2^-100
    down, up = den > 2.0**64, den < 2.0**-64
    num = select(down, num * 2.0**-64, select(up, num * 2.0**64, num))
    den = select(down, den * 2.0**-64, select(up, den * 2.0**64, den))
    k = bitcast((to_bits(den) >> 23) & 0xFF, I32) - 127
    factor = pow2(-k)
    num_s, den_s = num * factor, den * factor
    safe_den = select(eq(den_s, 0.0), f32(1.0), den_s)
    t_hi, t_lo = div_dd(num_s, f32(0.0), safe_den, f32(0.0))
    num0, den0 = select(swap, a2, b2), select(swap, b2, a2)
    t_cr = div(num0, select(eq(den0, 0.0), f32(1.0), den0))
    tiny = t_cr < 2.0**-100
    t_hi, t_lo = select(tiny, t_cr, t_hi), select(tiny, f32(0.0), t_lo)
    out = atan_compose(t_hi, t_lo, swap, _negative(x))
    out = _with_sign_bit(out, _negative(y))
    return select(isnan(x) | isnan(y), select(isnan(y), quiet(y), quiet(x)), out)


@float32_only
def atan(x: Value) -> Value:
    """Arctangent, in (-pi/2, pi/2).

    Precision: ≤ 1 ulp of the correctly rounded result for every input.
    Special values: atan(±0) = ±0, atan(±inf) = ±pi/2 (rounded to float32); a NaN comes back quieted.

    Example: ``y = atan(x)``.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    swap = a > 1.0
    a_c = select(a < 2.0**60, a, f32(2.0**60))  # 1/a below 2^-60 does not move pi/2's rounding
    t_hi, t_lo = div_dd(f32(1.0), f32(0.0), select(swap, a_c, f32(1.0)), f32(0.0))
    t_hi, t_lo = select(swap, t_hi, a), select(swap, t_lo, f32(0.0))
    out = atan_compose(t_hi, t_lo, swap, _false())
    out = _with_sign_bit(out, _negative(x))
    out = select(a < TINY, x, out)
    return select(isnan(x), quiet(x), out)


def sqrt_dd(w_hi: Value, w_lo: Value) -> tuple[Value, Value]:
    """sqrt(w_hi + w_lo) as a double-float for a nonnegative normal (or zero) double-float w."""
    r = sqrt(w_hi)
    r2, r2e = two_prod(r, r)
    residual = ((w_hi - r2) - r2e) + w_lo
    safe = select(eq(r, 0.0), f32(1.0), r)
    return fast_two_sum(r, residual * 0.5 * recip(safe))


def one_minus_square(a: Value) -> tuple[Value, Value]:
    """1 - a^2 as a double-float for |a| <= 1 (exact but for the last addition of the tails)."""
    p, e = two_prod(a, a)
    s, err = two_sum(f32(1.0), -p)
    return fast_two_sum(s, err - e)


@float32_only
def asin(x: Value) -> Value:
    """Arcsine, in [-pi/2, pi/2]: atan2(x, sqrt(1 - x^2)) with 1 - x^2 and its root as double-floats.

    Precision: ≤ 1 ulp of the correctly rounded result for every input.
    Special values: asin(±0) = ±0, asin(±1) = ±pi/2, |x| > 1 gives NaN; a NaN comes back quieted.

    Example: ``y = asin(x)``.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    ac = select(a > 1.0, f32(1.0), a)
    w_hi, w_lo = one_minus_square(ac)
    w_hi = select(w_hi < 0.0, f32(0.0), w_hi)
    c_hi, c_lo = sqrt_dd(w_hi, w_lo)
    out = _inverse_angle(ac, c_hi, c_lo, swap_when_num_is_x=True, left=_false())
    out = _with_sign_bit(out, _negative(x))
    out = select(a < TINY, x, out)
    out = select(a > 1.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


def _inverse_angle(a: Value, c_hi: Value, c_lo: Value, swap_when_num_is_x: bool, left: Value) -> Value:
    """atan2 of (c, a) (asin: y = a, x = c) or of (a, c) (acos) for a in [0, 1], c = sqrt(1 - a^2)."""
    if swap_when_num_is_x:  # asin: the point (c, a)
        swap = a > c_hi
        num_hi, num_lo = select(swap, c_hi, a), select(swap, c_lo, f32(0.0))
        den_hi, den_lo = select(swap, a, c_hi), select(swap, f32(0.0), c_lo)
    else:  # acos: the point (a, c)
        swap = c_hi > a
        num_hi, num_lo = select(swap, a, c_hi), select(swap, f32(0.0), c_lo)
        den_hi, den_lo = select(swap, c_hi, a), select(swap, c_lo, f32(0.0))
    den_hi = select(eq(den_hi, 0.0), f32(1.0), den_hi)
    t_hi, t_lo = div_dd(num_hi, num_lo, den_hi, den_lo)
    return atan_compose(t_hi, t_lo, swap, left)


@float32_only
def acos(x: Value) -> Value:
    """Arccosine, in [0, pi]: atan2(sqrt(1 - x^2), x) with double-float intermediates.

    Precision: ≤ 1 ulp of the correctly rounded result for every input.
    Special values: acos(1) = 0, acos(-1) = pi, acos(±0) = pi/2, |x| > 1 gives NaN; a NaN comes
    back quieted.

    Example: ``y = acos(x)``.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    ac = select(a > 1.0, f32(1.0), a)
    w_hi, w_lo = one_minus_square(ac)
    w_hi = select(w_hi < 0.0, f32(0.0), w_hi)
    c_hi, c_lo = sqrt_dd(w_hi, w_lo)
    out = _inverse_angle(ac, c_hi, c_lo, swap_when_num_is_x=False, left=x < 0.0)
    out = select(a > 1.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)
