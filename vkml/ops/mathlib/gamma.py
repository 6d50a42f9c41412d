"""lgamma, digamma and trigamma, double-float evaluation rounded once.

x >= 8: Stirling's series (y - 1/2) log y - y + log(2 pi)/2 + 1/(12y) - 1/(360y^3) + ... with the
leading terms as double-floats. 0 < x < 8: lgamma(x) = lgamma(x + 8) - log(x (x+1) ... (x+7)), the
product and the shifted argument as double-floats; near the zeros at 1 and 2 (|x - 1|, |x - 2| below
1/32) the difference would cancel, so there the Taylor series of lgamma(1 + t) and lgamma(2 + t) is
used (t exact). x < 0: the reflection lgamma(x) = log(pi) - log|sin(pi x)| - log|x| - lgamma(|x|),
sin(pi x) from the exact reduction of sinc; near lgamma's negative zeros it cancels.

digamma: the same recurrence (psi(x) = psi(x + 8) - sum 1/(x + k)) and the asymptotic series, a
Taylor series around the positive root 1.4616..., and for x < 0 the reflection
psi(x) = psi(-x) - 1/x + pi cot(-pi x).
"""

from __future__ import annotations

from ...ir.builder import eq, floor, isnan, select
from ...ir.core import Value
from .bits import ABS_MASK, DEFAULT_NAN_BITS, f32, f32_bits, float32_only, from_bits, quiet, to_bits
from .dd import div_dd, fast_two_sum, horner, mul_dd, mul_dd_const, recip, two_prod, two_sum
from .exact import div
from .explog import LN2_HI, LN2_HI_LO, log_parts
from .trig import PI, cospi_dd, sinpi_dd


def _hex(*values: str) -> list[float]:
    return [float.fromhex(v) for v in values]


EULER = _hex("0x1.2788d0p-1", "-0x1.c824f4p-28")
ONE_MINUS_EULER = _hex("0x1.b0ee60p-2", "0x1.c824f4p-28")
HALF_LOG_2PI = _hex("0x1.d67f1cp-1", "0x1.0c97d6p-26")
LOG_PI = _hex("0x1.250d04p+0", "0x1.1cf438p-25")
# lgamma(1 + t) = -gamma t + sum_k (-1)^k zeta(k)/k t^k; lgamma(2 + t) = (1 - gamma) t + sum_k (-1)^k (zeta(k)-1)/k t^k
NEAR_ONE = _hex("0x1.a51a66p-1", "-0x1.9a4d56p-2", "0x1.151322p-2", "-0x1.a8b9c2p-3", "0x1.5b40ccp-3", "-0x1.2703a2p-3")
NEAR_TWO = _hex(
    "0x1.4a34ccp-2", "-0x1.13e002p-4", "0x1.51322ap-6", "-0x1.e404fcp-8", "0x1.7add6ep-9", "-0x1.38ac5cp-10"
)
# 1/(12y) - 1/(360y^3) + 1/(1260y^5) - 1/(1680y^7) = 1/(12y) + (1/y^3) * STIRLING(1/y^2)
TWELFTH = _hex("0x1.555556p-4", "-0x1.555556p-29")
STIRLING = _hex("-0x1.6c16c2p-9", "0x1.a01a02p-11", "-0x1.381382p-11")
WINDOW = 1.0 / 32
TINY = 2.0**-30


def _log_dd(hi: Value, lo: Value) -> tuple[Value, Value]:
    """log(hi + lo) as a double-float for a positive normal double-float below 2^100."""
    e, l_hi, l_lo = log_parts(hi)
    s_hi, s_lo = two_sum(e * LN2_HI, l_hi)
    return fast_two_sum(s_hi, s_lo + (l_lo + e * LN2_HI_LO + lo * recip(hi)))


def _stirling(y_hi: Value, y_lo: Value) -> tuple[Value, Value]:
    """lgamma(y) for a double-float y in [8, 2^100]."""
    l_hi, l_lo = _log_dd(y_hi, y_lo)
    a_hi, a_lo = two_sum(y_hi, f32(-0.5))
    m_hi, m_lo = mul_dd(a_hi, a_lo + y_lo, l_hi, l_lo)
    s_hi, s_lo = two_sum(m_hi, -y_hi)
    s_lo = s_lo + (m_lo - y_lo)
    h, l = two_sum(s_hi, f32(HALF_LOG_2PI[0]))
    i_hi, i_lo = div_dd(f32(1.0), f32(0.0), y_hi, y_lo)
    t_hi, t_lo = mul_dd_const(i_hi, i_lo, TWELFTH[0], TWELFTH[1])  # 1/(12y), up to 2^-7: a double-float
    z = i_hi * i_hi
    series = t_lo + i_hi * z * horner(z, STIRLING)
    h2, l2 = two_sum(h, t_hi)
    return fast_two_sum(h2, l2 + (l + s_lo + HALF_LOG_2PI[1] + series))


def _positive(a: Value) -> tuple[Value, Value]:
    """lgamma(a) as a double-float for a finite a > 0 (a below 2^-30: -log(a); above 2^100: a (log a - 1),
    scaled, rounded)."""
    # 0 < a < 8: lgamma(a + 8) - log(a (a+1) ... (a+7))
    small = a < 8.0
    x = select(small, a, f32(1.0))
    p_hi, p_lo = x, f32(0.0)
    for k in range(1, 8):
        t_hi, t_lo = two_sum(x, f32(float(k)))
        p_hi, p_lo = mul_dd(p_hi, p_lo, t_hi, t_lo)
        p_hi, p_lo = fast_two_sum(p_hi, p_lo)
    # One Stirling series serves both ranges (a + 8 below 8, a itself up to 2^100) and one log both the
    # product and the tiny case below: each element takes one path, and every path is a large body of
    # instructions the interpreter and the driver compile (the selects keep each element's bits).
    y_hi, y_lo = two_sum(x, f32(8.0))
    big = select(a > 2.0**100, f32(2.0**100), a)
    g_hi, g_lo = _stirling(select(small, y_hi, big), select(small, y_lo, f32(0.0)))
    tiny = a < TINY
    q_hi, q_lo = _log_dd(select(tiny, a * 2.0**64, p_hi), select(tiny, f32(0.0), p_lo))
    sh_hi, sh_lo = two_sum(g_hi, -q_hi)
    sh_lo = sh_lo + (g_lo - q_lo)
    # 8 <= a <= 2^100: Stirling directly
    s_hi, s_lo = g_hi, g_lo
    # a > 2^100: a (log a - 1) with a scaled by 2^-64 so the double-float product cannot overflow
    huge = select(a > 2.0**100, a, f32(2.0**100))
    e, l_hi, l_lo = log_parts(huge)
    v_hi, v_lo = two_sum(e * LN2_HI, l_hi)
    v_lo = v_lo + (l_lo + e * LN2_HI_LO)
    w_hi, w_lo = two_sum(v_hi, f32(-1.0))
    c_hi, c_lo = two_prod(huge * 2.0**-64, w_hi)
    far = (c_hi + (c_lo + huge * 2.0**-64 * (w_lo + v_lo))) * 2.0**64
    # near 1 and 2: t * (c1 + t * P(t)), t exact (Sterbenz), c1 as a float32 pair
    t1 = a - 1.0
    t2 = a - 2.0
    near_two = t2 > -0.5
    t = select(near_two, t2, t1)
    c_hi = select(near_two, f32(ONE_MINUS_EULER[0]), f32(-EULER[0]))
    c_lo = select(near_two, f32(ONE_MINUS_EULER[1]), f32(-EULER[1]))
    poly = [select(near_two, f32(p), f32(q)) for p, q in zip(NEAR_TWO, NEAR_ONE)]
    acc = poly[-1]
    for c in reversed(poly[:-1]):
        acc = acc * t + c
    p1, p1e = two_prod(t, c_hi)
    at_zero = ((t1 < WINDOW) & (t1 > -WINDOW)) | ((t2 < WINDOW) & (t2 > -WINDOW))
    hi = select(small, sh_hi, select(a > 2.0**100, far, s_hi))
    lo = select(small, sh_lo, select(a > 2.0**100, f32(0.0), s_lo))
    hi, lo = select(at_zero, p1, hi), select(at_zero, p1e + t * (c_lo + t * acc), lo)
    # a < 2^-30: -log(a) (the next term, -gamma a, is below 2^-35 of it); this also keeps the reflection
    # for tiny negative x away from products below 2^-115, where the double-float routines overflow
    n_hi, n_lo = two_sum(-q_hi, f32(64.0 * LN2_HI))  # q: the log of a 2^64 there
    n_lo = n_lo + (64.0 * LN2_HI_LO - q_lo)
    return select(tiny, n_hi, hi), select(tiny, n_lo, lo)


@float32_only
def lgamma(x: Value) -> Value:
    """log |Gamma(x)|.

    Precision: for x > 0, ≤ 1 ulp of the correctly rounded result (relative accuracy included near
    the zeros at 1 and 2); for x < 0, within 2^-33 absolute of the true value plus 1 ulp (the
    reflection formula cancels near lgamma's negative zeros, -2.457..., -2.747..., -3.143..., where
    the relative error grows).
    Special values: lgamma(1) = lgamma(2) = 0, lgamma(±0) = +inf, lgamma(n) = +inf for negative
    integers n, lgamma(±inf) = +inf, overflow to +inf above 4.0850e36; a NaN comes back quieted.

    Example: ``y = lgamma(x)``.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    finite = a < float("inf")
    a_c = select(finite & (a > 0.0), a, f32(1.0))
    pos_hi, pos_lo = _positive(a_c)
    # x < 0: log(pi) - log|sin(pi x)| - log|x| - lgamma(|x|)
    s_hi, s_lo, zero = sinpi_dd(select(a < 2.0**23, a_c, f32(0.5)))
    neg_s = s_hi < 0.0
    s_hi, s_lo = select(neg_s, -s_hi, s_hi), select(neg_s, -s_lo, s_lo)
    s_hi = select(eq(s_hi, 0.0), f32(1.0), s_hi)
    m_hi, m_lo = mul_dd(s_hi, s_lo, a_c, f32(0.0))  # |x sin(pi x)|
    m_hi, m_lo = fast_two_sum(m_hi, m_lo)
    q_hi, q_lo = _log_dd(m_hi, m_lo)
    r_hi, r_lo = two_sum(f32(LOG_PI[0]), -q_hi)
    h, l = two_sum(r_hi, -pos_hi)
    negative = h + (l + (r_lo + LOG_PI[1] - q_lo - pos_lo))
    integer = eq(floor(a_c), a_c)
    negative = select(integer | zero | (a >= 2.0**23), f32(float("inf")), negative)
    negative = select(a < TINY, pos_hi + pos_lo, negative)  # lgamma(x) = -log|x| there too
    out = select(x < 0.0, negative, pos_hi + pos_lo)
    out = select(eq(a, 0.0) | ~finite, f32(float("inf")), out)
    return select(isnan(x), quiet(x), out)


# digamma's positive root and its Taylor series there: psi(X0 + t) = c1 t + c2 t^2 + ...
DIGAMMA_ROOT = _hex("0x1.762d86p+0", "0x1.ab5f20p-27")
DIGAMMA_C1 = _hex("0x1.ef72bcp-1", "0x1.1dc716p-26")
DIGAMMA_NEAR_ROOT = _hex(
    "-0x1.c563b6p-2", "0x1.08b42ap-2", "-0x1.4fc132p-3", "0x1.b9a5b6p-4", "-0x1.27babap-4", "0x1.8fce02p-5"
)
# psi(y) = log y - 1/(2y) - (1/y^2) * DIGAMMA_SERIES(1/y^2) for y >= 8
DIGAMMA_SERIES = _hex("0x1.555556p-4", "-0x1.111112p-7", "0x1.041042p-8", "-0x1.111112p-8")
ROOT_WINDOW = 1.0 / 64


def _digamma_series(y_hi: Value, y_lo: Value) -> tuple[Value, Value]:
    """psi(y) as a double-float for a double-float y in [8, 2^100]."""
    l_hi, l_lo = _log_dd(y_hi, y_lo)
    i_hi, i_lo = div_dd(f32(1.0), f32(0.0), y_hi, y_lo)
    z = i_hi * i_hi
    h, l = two_sum(l_hi, i_hi * -0.5)
    return fast_two_sum(h, l + (l_lo - i_lo * 0.5 - z * horner(z, DIGAMMA_SERIES)))


def _digamma_positive(a: Value) -> tuple[Value, Value]:
    """psi(a) as a double-float for 2^-30 <= a (finite): the recurrence below 8, the series above."""
    small = a < 8.0
    x = select(small, a, f32(1.0))
    s_hi, s_lo = f32(0.0), f32(0.0)
    for k in range(8):
        t_hi, t_lo = two_sum(x, f32(float(k)))
        q_hi, q_lo = div_dd(f32(1.0), f32(0.0), t_hi, t_lo)
        s_hi, e = two_sum(s_hi, q_hi)
        s_lo = s_lo + (e + q_lo)
    # one series for both ranges (a + 8 below 8, a itself up to 2^100), as in lgamma's _positive
    y_hi, y_lo = two_sum(x, f32(8.0))
    big = select(a > 2.0**100, f32(2.0**100), a)
    g_hi, g_lo = _digamma_series(select(small, y_hi, big), select(small, y_lo, f32(0.0)))
    sh_hi, sh_lo = two_sum(g_hi, -s_hi)
    sh_lo = sh_lo + (g_lo - s_lo)
    d_hi, d_lo = g_hi, g_lo
    hi, lo = select(small, sh_hi, d_hi), select(small, sh_lo, d_lo)
    # above 2^100, psi(a) = log(a) to far below an ulp
    e, l_hi, l_lo = log_parts(select(a > 2.0**100, a, f32(2.0)))
    huge_hi, huge_lo = two_sum(e * LN2_HI, l_hi)
    huge_lo = huge_lo + (l_lo + e * LN2_HI_LO)
    hi, lo = select(a > 2.0**100, huge_hi, hi), select(a > 2.0**100, huge_lo, lo)
    # near the root: c1 t + t^2 P(t), t = a - X0 as a double-float (a - X0_hi is exact)
    t_hi = a - DIGAMMA_ROOT[0]
    t_lo = f32(-DIGAMMA_ROOT[1])
    p1, p1e = two_prod(t_hi, DIGAMMA_C1[0])
    rest = p1e + (t_lo * DIGAMMA_C1[0] + t_hi * DIGAMMA_C1[1]) + t_hi * t_hi * horner(t_hi, DIGAMMA_NEAR_ROOT)
    root = (t_hi < ROOT_WINDOW) & (t_hi > -ROOT_WINDOW)
    return select(root, p1, hi), select(root, rest, lo)


@float32_only
def digamma(x: Value) -> Value:
    """The digamma function psi(x) = d/dx log Gamma(x).

    Precision: for x > 0, ≤ 1 ulp of the correctly rounded result (relative accuracy included near
    the root at 1.4616); for x < 0, within 1 ulp plus 2^-27 absolute (the reflection formula cancels
    near psi's negative roots).
    Special values: digamma(+0) = -inf, digamma(-0) = +inf, digamma(n) = NaN for negative integers n
    (as PyTorch), digamma(+inf) = +inf, digamma(-inf) = NaN; a NaN comes back quieted.

    Example: ``y = digamma(x)``.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    finite = a < float("inf")
    a_c = select(finite & (a >= TINY), a, f32(1.0))
    p_hi, p_lo = _digamma_positive(a_c)
    # x < 0, a = -x: psi(x) = psi(a) + 1/a + pi cot(pi a)
    a_r = select(a_c < 2.0**23, a_c, f32(0.5))
    s_hi, s_lo, s_zero = sinpi_dd(a_r)
    c_hi, c_lo = cospi_dd(a_r)
    s_neg = s_hi < 0.0
    s_hi, s_lo = select(s_neg, -s_hi, s_hi), select(s_neg, -s_lo, s_lo)
    s_hi = select(eq(s_hi, 0.0), f32(1.0), s_hi)
    q_hi, q_lo = div_dd(c_hi, c_lo, s_hi, s_lo)
    q_hi, q_lo = select(s_neg, -q_hi, q_hi), select(s_neg, -q_lo, q_lo)
    k_hi, k_lo = mul_dd(q_hi, q_lo, f32(PI[0]), f32(PI[1]))
    r_hi, r_lo = div_dd(f32(1.0), f32(0.0), a_c, f32(0.0))
    h, l = two_sum(p_hi, r_hi)
    h2, l2 = two_sum(h, k_hi)
    negative = h2 + (l2 + (l + p_lo + r_lo + k_lo))
    negative = select(s_zero | eq(floor(a_c), a_c) | (a >= 2.0**23), f32_bits(DEFAULT_NAN_BITS), negative)
    out = select(x < 0.0, negative, p_hi + p_lo)
    out = select(a < TINY, div(f32(-1.0), x), out)  # -1/x - gamma rounds to -1/x; ±0 give ∓inf
    out = select(eq(x, float("inf")), x, select(eq(x, float("-inf")), f32_bits(DEFAULT_NAN_BITS), out))
    return select(isnan(x), quiet(x), out)


# psi_1(y) = 1/y + 1/(2y^2) + (1/y^3) * TRIGAMMA_SERIES(1/y^2) for y >= 8
TRIGAMMA_SERIES = _hex("0x1.555556p-3", "-0x1.111112p-5", "0x1.861862p-6", "-0x1.111112p-5")


def _trigamma_positive(a: Value) -> tuple[Value, Value]:
    """psi_1(a) as a double-float for 2^-30 <= a (finite): psi_1(a) = psi_1(a + 8) + sum 1/(a + k)^2."""
    small = a < 8.0
    x = select(small, a, f32(1.0))
    s_hi, s_lo = f32(0.0), f32(0.0)
    for k in range(8):
        t_hi, t_lo = two_sum(x, f32(float(k)))
        q_hi, q_lo = div_dd(f32(1.0), f32(0.0), t_hi, t_lo)
        p_hi, p_lo = mul_dd(q_hi, q_lo, q_hi, q_lo)
        s_hi, e = two_sum(s_hi, p_hi)
        s_lo = s_lo + (e + p_lo)
    y_hi, y_lo = two_sum(x, f32(8.0))
    y_hi = select(small, y_hi, select(a > 2.0**100, f32(2.0**100), a))
    y_lo = select(small, y_lo, f32(0.0))
    i_hi, i_lo = div_dd(f32(1.0), f32(0.0), y_hi, y_lo)
    z = i_hi * i_hi
    h, l = two_sum(i_hi, z * 0.5)
    g_lo = l + (i_lo + i_hi * i_lo + i_hi * z * horner(z, TRIGAMMA_SERIES))
    r_hi, r_lo = two_sum(h, select(small, s_hi, f32(0.0)))
    return r_hi, r_lo + (g_lo + select(small, s_lo, f32(0.0)))


@float32_only
def trigamma(x: Value) -> Value:
    """The trigamma function psi_1(x) = d^2/dx^2 log Gamma(x) (PyTorch's polygamma(1, x)).

    Precision: ≤ 1 ulp of the correctly rounded result for every input but the poles (x < 0 goes
    through the reflection psi_1(x) = pi^2 / sin^2(pi x) - psi_1(-x) + 1/x^2, whose terms do not
    cancel: the result is at least 5 pi^2 / 6).
    Special values: trigamma(±0) = +inf, trigamma(+inf) = 0, trigamma(-inf) = NaN, +inf at the
    negative integers (the poles); a NaN comes back quieted.
    Divergence from PyTorch: at the negative integers PyTorch returns large finite values
    (polygamma(1, -1) = 1.29e15); vkml returns +inf.

    Example: ``y = trigamma(x)``.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    finite = a < float("inf")
    a_c = select(finite & (a >= TINY), a, f32(1.0))
    p_hi, p_lo = _trigamma_positive(select(a_c > 2.0**100, f32(1.0), a_c))
    # x < 0, a = -x: pi^2 / sin^2(pi a) - psi_1(a) + 1/a^2
    a_r = select(a_c < 2.0**23, a_c, f32(0.5))
    s_hi, s_lo, s_zero = sinpi_dd(a_r)
    s_neg = s_hi < 0.0
    s_hi, s_lo = select(s_neg, -s_hi, s_hi), select(s_neg, -s_lo, s_lo)
    s_hi = select(eq(s_hi, 0.0), f32(1.0), s_hi)
    d_hi, d_lo = div_dd(f32(PI[0]), f32(PI[1]), s_hi, s_lo)  # pi / |sin(pi a)|
    c_hi, c_lo = mul_dd(d_hi, d_lo, d_hi, d_lo)
    r_hi, r_lo = div_dd(f32(1.0), f32(0.0), a_c, f32(0.0))
    q_hi, q_lo = mul_dd(r_hi, r_lo, r_hi, r_lo)
    h, l = two_sum(c_hi, -p_hi)
    h2, l2 = two_sum(h, q_hi)
    negative = h2 + (l2 + (l + c_lo - p_lo + q_lo))
    negative = select(s_zero | eq(floor(a_c), a_c) | (a >= 2.0**23), f32(float("inf")), negative)
    positive = select(a > 2.0**100, div(f32(1.0), a_c), p_hi + p_lo)  # 1/a + 1/(2a^2) rounds to 1/a
    out = select(x < 0.0, negative, positive)
    # |x| < 2^-30: 1/x^2 (+ pi^2/6, below half an ulp), as 2^128 / (x 2^64)^2 in double-float, rounded once
    xs = select(a < TINY, a, f32(TINY)) * 2.0**64
    xs = select(xs < 1.0, f32(1.0), xs)  # below 2^-64 the result overflows anyway
    w_hi, w_lo = two_prod(xs, xs)
    v_hi, v_lo = div_dd(f32(1.0), f32(0.0), w_hi, w_lo)
    inverse_square = (v_hi + v_lo) * 2.0**64 * 2.0**64
    out = select(a < 2.0**-64, f32(float("inf")), select(a < TINY, inverse_square, out))
    out = select(eq(x, float("inf")), f32(0.0), select(eq(x, float("-inf")), f32_bits(DEFAULT_NAN_BITS), out))
    return select(isnan(x), quiet(x), out)
