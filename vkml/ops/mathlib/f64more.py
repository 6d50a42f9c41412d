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
from .f64trig import sin, tan


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
