"""float64 routines of the remaining elementwise ops: fmod (exact), copysign, hypot and logit.

Built like f64.py (int64 significands, select-based) and f64math.py (double-double on f64dd);
vkml/ops/float64.py states each op's float64 bound and tests/test_mathlib_f64.py measures it.
"""

from __future__ import annotations

from ...ir.builder import const, eq, isnan, loop, select, trunc
from ...ir.core import Value
from . import f64dd as dd
from .f64 import ABS_MASK, DEFAULT_NAN_BITS, I64, INF_BITS, SIGN_BIT, _quiet, from_bits, sqrt, to_bits, unpack
from .f64erf import erf, erfc
from .f64math import _int_to_f64, exp, log, log1p_dd, log_dd
from .f64trig import sin, sinpi_dd, tan


def nan_of(x: Value, y: Value) -> Value:
    """The NaN of an operation on x and y: the first NaN operand quieted, else the default NaN."""
    return select(isnan(x), _quiet(x), select(isnan(y), _quiet(y), from_bits(const(DEFAULT_NAN_BITS, I64))))


def copysign(a: Value, b: Value) -> Value:
    """|a| with the sign bit of b (exact, bit operations only)."""
    return from_bits((to_bits(a) & ABS_MASK) | (to_bits(b) & SIGN_BIT))


_STEP = 10  # bits a long-division step: r < my < 2^53, so r << 10 fits in int64


def fmod(x: Value, y: Value) -> Value:
    """x - trunc(x/y)·y exactly (C's fmod, numpy.fmod): long division of the significands.

    |x| = mx·2^(ex-52) and |y| = my·2^(ey-52) with mx, my in [2^52, 2^53) (``unpack``); the
    remainder of mx·2^(ex-ey) by my is found ten bits a step, and r·2^(ey-52) is exact because the
    true remainder is a multiple of the smaller ulp of x and y below |y|. The sign is x's.
    Special values: fmod(x, ±0), fmod(±inf, y) and NaN give NaN; |x| < |y| (also y = ±inf) gives x.
    """
    xb, yb = to_bits(x), to_bits(y)
    ax, ay = xb & ABS_MASK, yb & ABS_MASK
    mx, ex = unpack(ax)
    my, ey = unpack(ay)
    r0 = select(mx < my, mx, mx - my)

    def step(_, left, r):
        s = select(left < 0, const(0, I64), select(left > _STEP, const(_STEP, I64), left))
        v = r << s
        return left - _STEP, v - (v / my) * my

    # ex - ey <= 1023 + 1074 = 2097 bits to bring down, ten a step
    _, r = loop(0, 210, 1, (ex - ey, r0), step)
    # r < 2^53 to float64 exactly in two halves; then r·2^(ey-52), ey - 52 >= -1126, in two exact steps
    value = _int_to_f64(r >> 26) * 67108864.0 + _int_to_f64(r & ((1 << 26) - 1))
    k = ey - 52
    low = k < -1000
    mag = value * dd.pow2(select(low, k + 200, k)) * select(low, dd.f64(2.0**-200), dd.f64(1.0))
    out = from_bits(to_bits(mag) | (xb & SIGN_BIT))
    out = select(ax < ay, x, out)
    invalid = isnan(x) | isnan(y) | (ax >= INF_BITS) | eq(ay, 0)
    return select(invalid, nan_of(x, y), out)


def hypot(x: Value, y: Value) -> Value:
    """sqrt(x² + y²) for float64 without overflow or underflow (the float64 twin of ``hypot_f32``).

    Both are scaled by 2^-k (k from the larger one's exponent, so the larger lies in [1, 2), or
    below 1 for a subnormal), the sum of squares is formed as a double-double (Dekker products,
    exact sums), its square root is corrected by one Newton step with an exact residual and
    scaled back by 2^k.
    Precision: ≤ 1 ulp of the correctly rounded result (a subnormal result is rounded twice).
    Special values: hypot(±inf, y) = inf even for a NaN y (C99); otherwise NaN gives NaN.
    """
    a, b = from_bits(to_bits(x) & ABS_MASK), from_bits(to_bits(y) & ABS_MASK)
    big = select(a < b, b, a)
    small = select(a < b, a, b)
    k = (to_bits(big) >> 52) - 1023
    k = select(k < -1022, const(-1022, I64), select(k > 1022, const(1022, I64), k))
    down = dd.pow2(-k)
    bs, ss = big * down, small * down
    p1, e1 = dd.two_prod(bs, bs)
    p2, e2 = dd.two_prod(ss, ss)
    s_hi, s_lo = dd.two_sum(p1, p2)
    h, low = dd.fast_two_sum(s_hi, s_lo + (e1 + e2))
    safe_h = select(h > 0.0, h, dd.f64(1.0))
    root = sqrt(safe_h)
    r2, r2e = dd.two_prod(root, root)
    residual = ((safe_h - r2) - r2e) + low
    out = dd.scale(root + residual * (0.5 * dd.recip(root)), k)
    inf = from_bits(const(INF_BITS, I64))
    out = select(eq(big, 0.0), dd.f64(0.0), out)
    out = select(isnan(x) | isnan(y), nan_of(x, y), out)
    return select(eq(a, inf) | eq(b, inf), inf, out)


def logit(x: Value) -> Value:
    """log(x / (1 - x)) for float64, without cancellation: log(x) - log1p(-x) below 1/4, and
    log1p((2x - 1) / (1 - x)) from 1/4 on (2x - 1 is exact there, 1 - x is an exact pair), each
    as a double-double, rounded once.

    Precision: ≤ 1 ulp of the correctly rounded result for every input in [0, 1], near the zero
    at 1/2 too (PyTorch rounds x / (1 - x) first: up to hundreds of ulp off there).
    Special values: logit(0) = -inf, logit(1) = +inf, x < 0 or x > 1 gives NaN; a NaN comes back
    quieted.
    """
    inside = (x > 0.0) & (x < 1.0)
    p = select(inside, x, dd.f64(0.5))
    l_hi, l_lo = log_dd(p)
    m_hi, m_lo = log1p_dd(-p, dd.f64(0.0))
    low_hi, low_lo = dd.add_dd(l_hi, l_lo, -m_hi, -m_lo)
    d_hi, d_lo = dd.two_sum(dd.f64(1.0), -p)
    q_hi, q_lo = dd.div_dd(p * 2.0 - 1.0, dd.f64(0.0), d_hi, d_lo)
    up_hi, up_lo = log1p_dd(q_hi, q_lo)
    out = select(p < 0.25, low_hi + low_lo, up_hi + up_lo)
    inf = from_bits(const(INF_BITS, I64))
    out = select(eq(x, 0.0), -inf, select(eq(x, 1.0), inf, out))
    out = select((x < 0.0) | (x > 1.0), from_bits(const(DEFAULT_NAN_BITS, I64)), out)
    return select(isnan(x), _quiet(x), out)


# PyTorch's starting approximation of erfinv (its calc_erfinv, from MATLAB's erfinv 2.0)
_ERFINV_A = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
_ERFINV_B = (1.0, -2.118377725, 1.442710462, -0.329097515, 0.012229801)
_ERFINV_C = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
_ERFINV_D = (1.0, 3.5438892, 1.6370678)
_TWO_OVER_SQRT_PI = 1.1283791670955126


def erfinv(y: Value) -> Value:
    """The inverse error function for float64: PyTorch's rational start, then Newton steps whose
    residual erf(x) - |y| is formed without cancellation: as (1 - |y|) - erfc(x) above 1/2 (1 - |y|
    is exact there, erfc ≤ 1 ulp), which keeps the tail accurate up to |y| = 1 - 2^-53.

    Precision: ≤ 2 ulp of the correctly rounded result (measured against mpmath; tests/test_mathlib_f64.py).
    Special values: erfinv(±1) = ±inf, |y| > 1 gives NaN, erfinv(±0) = ±0; a NaN comes back quieted.
    """
    a = from_bits(to_bits(y) & ABS_MASK)
    inside = a < 1.0
    a = select(inside, a, dd.f64(0.5))
    z = a * a
    central = a * dd.horner(z, _ERFINV_A) / dd.horner(z, _ERFINV_B)
    w = sqrt(-log((1.0 - a) * 0.5))
    x = select(a <= 0.7, central, dd.horner(w, _ERFINV_C) / dd.horner(w, _ERFINV_D))
    for _ in range(3):  # the start is good to about 1e-7: two steps reach float64, a third settles it
        residual = select(a <= 0.5, erf(x) - a, (1.0 - a) - erfc(x))
        x = x - residual / (exp(-(x * x)) * _TWO_OVER_SQRT_PI)
    out = select(eq(a, 0.0), a, x)
    out = from_bits(to_bits(out) | (to_bits(y) & SIGN_BIT))
    b = from_bits(to_bits(y) & ABS_MASK)
    out = select(eq(b, 1.0), from_bits(const(INF_BITS, I64) | (to_bits(y) & SIGN_BIT)), out)
    out = select(b > 1.0, from_bits(const(DEFAULT_NAN_BITS, I64)), out)
    return select(isnan(y), _quiet(y), out)


# ---------------------------------------------------------------- digamma and trigamma, PyTorch's formulas

_PSI_10 = 2.25175258906672110764  # digamma(10)
_DIGAMMA_A = (
    8.33333333333333333333e-2,
    -2.10927960927960927961e-2,
    7.57575757575757575758e-3,
    -4.16666666666666666667e-3,
    3.96825396825396825397e-3,
    -8.33333333333333333333e-3,
    8.33333333333333333333e-2,
)
_PI = 3.141592653589793


def _digamma_positive(x: Value) -> Value:
    """PyTorch's calc_digamma for x > 0: 1/x terms until x >= 10, then the asymptotic series."""
    result = dd.f64(0.0)
    for _ in range(10):  # x < 10 takes at most ten steps (x > 0)
        small = x < 10.0
        result = select(small, result - 1.0 / x, result)
        x = select(small, x + 1.0, x)
    z = 1.0 / (x * x)
    poly = dd.f64(_DIGAMMA_A[0])
    for c in _DIGAMMA_A[1:]:  # cephes' polevl
        poly = poly * z + c
    y = select(x < 1.0e17, z * poly, dd.f64(0.0))
    out = ((result + log(x)) - 0.5 / x) - y
    return select(eq(x, 10.0), result + _PSI_10, out)


def digamma(x: Value) -> Value:
    """The digamma function for float64 by PyTorch's formula (its calc_digamma), each step correctly
    rounded, log and tan within 1 ulp: reflection below 0, recurrence up to 10, asymptotic series.

    Special values: digamma(±0) = ∓inf, NaN at the negative integers and -inf, digamma(inf) = inf;
    a NaN comes back quieted.
    """
    negative = x < 0.0
    r = x - trunc(x)  # modf's fraction, exact
    positive = _digamma_positive(select(negative, 1.0 - x, select(x > 0.0, x, dd.f64(1.0))))
    out = select(negative, positive - _PI / tan(r * _PI), positive)
    inf = from_bits(const(INF_BITS, I64))
    out = select(eq(x, 0.0), from_bits(const(INF_BITS, I64) | ((to_bits(x) & SIGN_BIT) ^ SIGN_BIT)), out)
    out = select(negative & eq(x, trunc(x)), from_bits(const(DEFAULT_NAN_BITS, I64)), out)
    out = select(eq(x, inf), inf, out)
    return select(isnan(x), _quiet(x), out)


def trigamma(x: Value) -> Value:
    """polygamma(1, x) for float64 by PyTorch's formula (its calc_trigamma), each step correctly
    rounded, sin within 1 ulp: reflection below 1/2, six 1/x² terms, then the asymptotic series.

    Special values: as PyTorch's formula: trigamma(±0) = inf, trigamma(inf) = 0, large finite values
    at the negative integers (sin(pi·n) is not 0 in float64), NaN for -inf; a NaN comes back quieted.
    """
    reflect = x < 0.5
    s = sin(x * _PI)
    head = select(reflect, -((_PI * _PI) / (s * s)), dd.f64(0.0))
    y = select(reflect, 1.0 - x, x)
    result = head
    for _ in range(6):
        result = result + 1.0 / (y * y)
        y = y + 1.0
    ixx = 1.0 / (y * y)
    result = result + (1.0 + 1.0 / (2.0 * y) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / y
    return select(reflect, -result, result)


# ---------------------------------------------------------------- lgamma

# Taylor coefficients k >= 2 of lgamma(1 + t) = -γt + Σ (-1)^k ζ(k)/k t^k and of
# lgamma(2 + t) = (1 - γ)t + Σ (-1)^k (ζ(k) - 1)/k t^k (mpmath at 200 bits, rounded to float64)
_LGAMMA_NEAR_1 = tuple(
    float.fromhex(v)
    for v in (
        "0x1.a51a6625307d3p-1",
        "-0x1.9a4d55beab2d7p-2",
        "0x1.151322ac7d848p-2",
        "-0x1.a8b9c17aa6149p-3",
        "0x1.5b40cb100c306p-3",
        "-0x1.2703a1dcea3aep-3",
        "0x1.010b36af86397p-3",
        "-0x1.c806706d57db4p-4",
        "0x1.9a01e385d5f8fp-4",
        "-0x1.748c33114c6d6p-4",
        "0x1.556ad63243bc4p-4",
        "-0x1.3b1d971fc5985p-4",
        "0x1.2496df8320c5fp-4",
        "-0x1.11133476e7fe0p-4",
        "0x1.00010064cdeb2p-4",
        "-0x1.e1e2d311e8abdp-5",
        "0x1.c71ce3a20b419p-5",
        "-0x1.af28a1b5688a0p-5",
        "0x1.9999b3352d5bap-5",
        "-0x1.86186db77bfbfp-5",
        "0x1.745d1d1778df9p-5",
        "-0x1.642c88591b66dp-5",
        "0x1.555556aaafdcdp-5",
        "-0x1.47ae151eb9fb7p-5",
        "0x1.3b13b189d925ep-5",
        "-0x1.2f684c00002bcp-5",
        "0x1.24924936db7bcp-5",
        "-0x1.1a7b961a7b9aap-5",
        "0x1.111111155556dp-5",
        "-0x1.08421086318cep-5",
        "0x1.0000000100002p-5",
        "-0x1.f07c1f08ba2eap-6",
        "0x1.e1e1e1e25a5a6p-6",
        "-0x1.d41d41d457c58p-6",
        "0x1.c71c71c738e39p-6",
        "-0x1.bacf914c29837p-6",
        "0x1.af286bca21af3p-6",
        "-0x1.a41a41a41d89ep-6",
        "0x1.999999999b333p-6",
        "-0x1.8f9c18f9c2577p-6",
    )
)
_LGAMMA_NEAR_2 = tuple(
    float.fromhex(v)
    for v in (
        "0x1.4a34cc4a60fa6p-2",
        "-0x1.13e001a557607p-4",
        "0x1.51322ac7d8483p-6",
        "-0x1.e404fc218f5f2p-8",
        "0x1.7add6eadb6c30p-9",
        "-0x1.38ac5c2bf8e08p-10",
        "0x1.0b36af86396e9p-11",
        "-0x1.d3fd4c76d2fc8p-13",
        "0x1.a127b0f17d65ap-14",
        "-0x1.78de5bd7c81efp-15",
        "0x1.580dcee66eb02p-16",
        "-0x1.3cbc963ce2243p-17",
        "0x1.2597a39f34aacp-18",
        "-0x1.11b2eb7679541p-19",
        "0x1.0064cdeb22f0fp-20",
        "-0x1.e2600d93cfd2fp-22",
        "0x1.c76bbb3f07a4dp-23",
        "-0x1.af5a6cbbf8a97p-24",
        "0x1.99b93c2070b0fp-25",
        "-0x1.862c734df3eacp-26",
        "0x1.7469daccfadcdp-27",
        "-0x1.6434a8447aeadp-28",
        "0x1.555a877ffd2c3p-29",
        "-0x1.47b1679258d0ep-30",
        "0x1.3b15d2b2fc10cp-31",
        "-0x1.2f69a9fabe3e0p-32",
        "0x1.24932a337434cp-33",
        "-0x1.1a7c26ec2523cp-34",
        "0x1.11116e693ed98p-35",
        "-0x1.08424cbc543d8p-36",
    )
)
_EULER = (0.5772156649015329, -4.942915152430645e-18)
_ONE_MINUS_EULER = (0.42278433509846713, 4.942915152430645e-18)
_HALF_LOG_2PI = (0.9189385332046728, -3.8782941580672414e-17)
_LOG_PI = (1.1447298858494002, 1.0265951162707826e-17)
# B_2k / (2k (2k - 1)): Stirling's series in 1/y, enough from y = 16 on (the next term is below 2^-70)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
_SHIFT = 16


def _log_of_dd(hi: Value, lo: Value) -> tuple[Value, Value]:
    """log(hi + lo) for a positive normal dd (|lo| <= ulp(hi)/2, so the first-order term suffices)."""
    l_hi, l_lo = log_dd(hi)
    return dd.fast_two_sum(l_hi, l_lo + lo * dd.recip(hi))


def _lgamma_positive(x: Value) -> tuple[Value, Value]:
    """lgamma(x) for 2^-60 <= x <= 2^900 as a dd: x shifted to y = x + n >= 16 (y and the product
    x (x + 1) ... (x + n - 1) as dds), Stirling's series at y, minus the log of the product."""
    n = select(x < float(_SHIFT), trunc(float(_SHIFT) - x) + 1.0, dd.f64(0.0))
    p_hi, p_lo = dd.f64(1.0), dd.f64(0.0)
    for k in range(_SHIFT + 1):
        t_hi, t_lo = dd.two_sum(x, dd.f64(float(k)))
        m_hi, m_lo = dd.mul_dd(p_hi, p_lo, t_hi, t_lo)
        use = dd.f64(float(k)) < n
        p_hi, p_lo = select(use, m_hi, p_hi), select(use, m_lo, p_lo)
    y_hi, y_lo = dd.two_sum(x, n)
    l_hi, l_lo = _log_of_dd(y_hi, y_lo)
    h_hi, h_lo = dd.two_sum(y_hi, dd.f64(-0.5))
    s_hi, s_lo = dd.mul_dd(h_hi, h_lo + y_lo, l_hi, l_lo)  # (y - 1/2) log y
    s_hi, s_lo = dd.add_dd(s_hi, s_lo, -y_hi, -y_lo)
    s_hi, s_lo = dd.add_dd(s_hi, s_lo, dd.f64(_HALF_LOG_2PI[0]), dd.f64(_HALF_LOG_2PI[1]))
    r = 1.0 / y_hi
    series = r * dd.horner(r * r, _STIRLING)
    s_hi, s_lo = dd.add_dd(s_hi, s_lo, series, dd.f64(0.0))
    q_hi, q_lo = _log_of_dd(p_hi, p_lo)
    return dd.add_dd(s_hi, s_lo, -q_hi, -q_lo)


def _lgamma_taylor(t: Value, first: tuple[float, float], coeffs) -> Value:
    """t (first + t (c2 + t (c3 + ...))) with the leading coefficient as a dd, rounded once."""
    q = t * dd.horner(t, coeffs)
    s_hi, s_lo = dd.two_sum(dd.f64(first[0]), q)
    m_hi, m_lo = dd.mul_dd(s_hi, s_lo + first[1], t, dd.f64(0.0))
    return m_hi + m_lo


def lgamma(x: Value) -> Value:
    """log |Gamma(x)| for float64.

    x > 0: Taylor series about 1 and 2 within 1/4 of them (the zeros), else Stirling's series after
    shifting x to 16 or more, in double-double; x < 0: the reflection log(pi) - log|x sin(pi x)| -
    lgamma(-x), sin(pi x) with x reduced exactly; |x| < 2^-60: -log|x|.
    Precision: see vkml/ops/float64.py (measured against mpmath by tests/test_mathlib_f64.py).
    Special values: lgamma(±0) = inf, inf at the negative integers, lgamma(±inf) = inf; a NaN comes
    back quieted.
    """
    a = from_bits(to_bits(x) & ABS_MASK)
    inf = from_bits(const(INF_BITS, I64))
    mid = (a >= 2.0**-60) & (a <= 2.0**900)
    s = select(mid, a, dd.f64(1.0))
    g_hi, g_lo = _lgamma_positive(s)
    positive = g_hi + g_lo
    positive = select(_near(s, 1.0), _lgamma_taylor(s - 1.0, (-_EULER[0], -_EULER[1]), _LGAMMA_NEAR_1), positive)
    positive = select(_near(s, 2.0), _lgamma_taylor(s - 2.0, _ONE_MINUS_EULER, _LGAMMA_NEAR_2), positive)
    huge = a * (log(select(a > 2.0**900, a, dd.f64(2.0))) - 1.0)  # the rest is below its rounding
    # x < 0: log(pi) - log|x sin(pi x)| - lgamma(-x)
    sp_hi, sp_lo, zero = sinpi_dd(select(mid, a, dd.f64(0.5)))
    sign = select(sp_hi < 0.0, dd.f64(-1.0), dd.f64(1.0))
    w_hi, w_lo = dd.mul_dd(sp_hi * sign, sp_lo * sign, s, dd.f64(0.0))
    w_hi = select(zero, dd.f64(1.0), w_hi)
    lw_hi, lw_lo = _log_of_dd(w_hi, w_lo)
    r_hi, r_lo = dd.add_dd(dd.f64(_LOG_PI[0]), dd.f64(_LOG_PI[1]), -lw_hi, -lw_lo)
    pos_taylor = select(_near(s, 1.0) | _near(s, 2.0), positive, g_hi)
    pos_lo = select(_near(s, 1.0) | _near(s, 2.0), dd.f64(0.0), g_lo)
    r_hi, r_lo = dd.add_dd(r_hi, r_lo, -pos_taylor, -pos_lo)
    negative = r_hi + r_lo
    out = select(x < 0.0, negative, positive)
    out = select(a > 2.0**900, select(x < 0.0, inf, huge), out)
    out = select(a < 2.0**-60, -log(select(a > 0.0, a, dd.f64(1.0))), out)
    out = select(eq(a, 0.0) | eq(a, inf) | ((x < 0.0) & eq(x, trunc(x))), inf, out)
    return select(isnan(x), _quiet(x), out)


def _near(s: Value, c: float) -> Value:
    return (s > c - 0.25) & (s < c + 0.25)
