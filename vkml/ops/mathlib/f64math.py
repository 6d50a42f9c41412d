"""float64 exp, log and their kin: exp, exp2, expm1, log, log2, log10, log1p, the hyperbolic
functions and their inverses, tanh, sigmoid, softplus, silu and pow, each within 1 ulp of float64.

The same plan as the float32 routines (``explog``), one width up, with double-double (``f64dd``)
where float32 used double-float. exp family: x = k*ln2 + r with ln2 cut into three pieces
(Cody-Waite; k*piece exact for |k| < 2^11), exp(r) = 1 + r + r^2/2 + r^3*P(r) with 1 + r and r^2/2
kept exact, so exp(r) comes as a dd good to about 2^-60 relative; then 2^k in two exact steps so a
subnormal result is rounded once more at most. log family: x = 2^e * m with m in
[sqrt(1/2), sqrt(2)), log(m) = 2*atanh(s) with s = (m-1)/(m+1) a dd, 2s + 2s^3/3 in dd and the
rest by a polynomial in s^2, e*ln2 added exactly. The polynomials are Taylor series (coefficients
1/n! and 2/(2n+1), correctly rounded Python floats), taken far enough that truncation stays
below 2^-64 on the reduced ranges. Only add/sub/mul, compares, select and integer operations are
used (divisions go through ``recip``'s Newton steps), so the CPU interpreter and Vulkan give the
same bits.

Every function here takes and returns float64 IR values; ``mathlib``'s public names dispatch
to them for float64 operands.
"""

from __future__ import annotations

import math

from ...ir.builder import eq, isnan, select
from ...ir.core import Value
from .f64 import ABS_MASK, DEFAULT_NAN_BITS, FRACTION_MASK, INF_BITS, SIGN_BIT, _quiet, unpack
from .f64 import sqrt as sqrt_f64
from .f64dd import (
    ROUNDER,
    ROUNDER_BITS,
    div_dd,
    f64,
    fast_two_sum,
    from_bits,
    horner,
    i64,
    mul_dd,
    mul_dd_const,
    pow2,
    recip,
    round_to_int,
    scale,
    sqrt_dd,
    to_bits,
    two_prod,
    two_sum,
)

LOG2E = float.fromhex("0x1.71547652b82fep+0")
LOG2E_LO = float.fromhex("0x1.777d0ffda0d24p-56")
LOG10E = float.fromhex("0x1.bcb7b1526e50ep-2")
LOG10E_LO = float.fromhex("0x1.95355baaafad3p-57")
LN2 = float.fromhex("0x1.62e42fefa39efp-1")
LN2_LO = float.fromhex("0x1.abc9e3b39803fp-56")
# ln2 = LN2_A + LN2_B + LN2_C; A and B have 42 significant bits, so k*A and k*B are exact for |k| < 2^11.
LN2_A = float.fromhex("0x1.62e42fefa38p-1")
LN2_B = float.fromhex("0x1.ef35793c76p-45")
LN2_C = float.fromhex("0x1.cc01f97b57a08p-87")
LN2_A_LO = float.fromhex("0x1.ef35793c76730p-45")  # ln2 - LN2_A
TWO_THIRDS, TWO_THIRDS_LO = float.fromhex("0x1.5555555555555p-1"), float.fromhex("0x1.5555555555555p-55")
SQRT2 = float.fromhex("0x1.6a09e667f3bcdp+0")

# (exp(r) - 1 - r - r^2/2) / r^3 = sum r^n / (n+3)!: truncation below 2^-66 for |r| <= 0.36.
EXP_P = [1.0 / math.factorial(n + 3) for n in range(13)]
# (2*atanh(s) - 2s - 2s^3/3) / s^5 = sum 2 z^n / (2n+5), z = s^2 <= 0.0295: truncation below 2^-64.
LOG_R = [2.0 / (2 * n + 5) for n in range(12)]


def _nan() -> Value:
    return from_bits(i64(DEFAULT_NAN_BITS))


def _inf() -> Value:
    return from_bits(i64(INF_BITS))


def _abs(x: Value) -> Value:
    return from_bits(to_bits(x) & ABS_MASK)


def _with_sign_of(v: Value, x: Value) -> Value:
    """|v| with the sign bit of x."""
    return from_bits((to_bits(v) & ABS_MASK) | (to_bits(x) & SIGN_BIT))


def _clamp(x: Value, lo: float, hi: float) -> Value:
    """x clamped to [lo, hi]; NaN becomes hi (callers restore NaN afterwards)."""
    x = select(x < hi, x, f64(hi))
    return select(x > lo, x, f64(lo))


def _int_to_f64(k: Value) -> Value:
    """An int64 |k| < 2^51 as float64, exactly, by the rounder (no conversion instruction)."""
    return from_bits(k + ROUNDER_BITS) - ROUNDER


# ---------------------------------------------------------------- exp family


def reduce_exp(x: Value) -> tuple[Value, Value, Value]:
    """x = k*ln2 + r for |x| <= 1100: int64 k and r = (r_hi, r_lo), |r| <= 0.36, a dd good to 2^-100."""
    k, k_int = round_to_int(x * LOG2E)
    t = x - k * LN2_A  # exact: k*LN2_A has 53 bits, and x, k*LN2_A lie on a common 2^-54-scaled grid
    r_hi, r_lo = two_sum(t, -(k * LN2_B))  # k*LN2_B exact
    r_hi, r_lo = fast_two_sum(r_hi, r_lo - k * LN2_C)
    return k_int, r_hi, r_lo


def exp_parts(r_hi: Value, r_lo: Value) -> tuple[Value, Value]:
    """exp(r_hi + r_lo) for |r| <= 0.36 as a normalised dd, relative error about 2^-60."""
    s, s_err = fast_two_sum(f64(1.0), r_hi)
    q_hi, q_lo = two_prod(r_hi, r_hi * 0.5)  # r^2/2 exactly
    cube = r_hi * r_hi * r_hi
    h = r_lo + (r_hi * r_lo + cube * horner(r_hi, EXP_P))
    a_hi, a_lo = two_sum(s, q_hi)
    return fast_two_sum(a_hi, a_lo + (s_err + (q_lo + h)))


def exp_reduced(x: Value) -> tuple[Value, Value, Value]:
    """exp(x) = 2^k * (hi + lo) for x in [-1100, 1100]: (k as int64, hi, lo), hi + lo in [0.7, 1.42]."""
    k, r_hi, r_lo = reduce_exp(x)
    hi, lo = exp_parts(r_hi, r_lo)
    return k, hi, lo


def exp(x: Value) -> Value:
    """e^x for float64.

    Precision: ≤ 1 ulp of the correctly rounded result over the whole float64 range, subnormal
    results included (exp(r) is a double-double good to 2^-60, rounded once; a subnormal result
    is rounded a second time by the scaling).
    Special values: exp(-inf) = 0, exp(+inf) = +inf, overflow to +inf above 709.782712893384,
    0 below -745.1332191019412; a NaN comes back quieted.
    """
    k, hi, lo = exp_reduced(_clamp(x, -746.0, 710.0))
    return select(isnan(x), _quiet(x), scale(hi + lo, k))


def exp2(x: Value) -> Value:
    """2^x for float64.

    Precision: ≤ 1 ulp of the correctly rounded result, subnormal results included; exact for
    integer x in [-1074, 1023].
    Special values: exp2(-inf) = 0, exp2(+inf) = +inf, overflow to +inf from 1024, 0 below -1075;
    a NaN comes back quieted.
    """
    c = _clamp(x, -1080.0, 1030.0)
    k, k_int = round_to_int(c)
    r_hi, r_lo = two_prod(c - k, f64(LN2))  # c - k is exact
    r_hi, r_lo = fast_two_sum(r_hi, r_lo + (c - k) * LN2_LO)
    hi, lo = exp_parts(r_hi, r_lo)
    return select(isnan(x), _quiet(x), scale(hi + lo, k_int))


def expm1_dd(x: Value) -> tuple[Value, Value]:
    """e^x - 1 as a normalised dd for x in [-40, 40], relative error about 2^-60."""
    k, hi, lo = exp_reduced(x)
    p = pow2(k)
    a, b = two_sum(hi * p, f64(-1.0))  # hi * 2^k is exact
    return fast_two_sum(a, b + lo * p)


def expm1(x: Value) -> Value:
    """e^x - 1 for float64, accurate near 0.

    Precision: ≤ 1 ulp of the correctly rounded result over the whole float64 range.
    Special values: expm1(±0) = ±0, expm1(-inf) = -1, expm1(+inf) = +inf, overflow to +inf
    above 709.782712893384; a NaN comes back quieted.
    """
    c = _clamp(x, -40.0, 710.0)  # e^-40 < 2^-57: below -40 the result is -1
    k, hi, lo = exp_reduced(c)
    m_hi, m_lo = expm1_dd(_clamp(c, -40.0, 40.0))
    out = select(c > 40.0, scale(hi + lo, k), m_hi + m_lo)  # above 40, -1 is far below half an ulp
    out = select(eq(x, 0.0), x, out)
    return select(isnan(x), _quiet(x), out)


# ---------------------------------------------------------------- log family


def log_parts(v: Value) -> tuple[Value, Value, Value]:
    """log(v) = e*ln2 + (hi + lo) for a positive finite v (subnormal too): (e as float64, hi, lo).

    hi + lo = log(m) for v = 2^e * m, m in [sqrt(1/2), sqrt(2)), to about 2^-64 relative.
    """
    m_bits, e = unpack(to_bits(v) & ABS_MASK)
    m = from_bits((m_bits & FRACTION_MASK) | 0x3FF0000000000000)  # in [1, 2)
    big = m > SQRT2
    m = select(big, m * 0.5, m)
    e = e + select(big, i64(1), i64(0))
    f = m - 1.0  # exact (Sterbenz)
    d_hi, d_lo = fast_two_sum(f64(2.0), f)
    s_hi, s_lo = div_dd(f, f64(0.0), d_hi, d_lo)  # s = f / (2 + f), |s| <= 0.1716
    z_hi, z_lo = two_prod(s_hi, s_hi)
    z_lo = z_lo + 2.0 * s_hi * s_lo
    c_hi, c_lo = mul_dd(z_hi, z_lo, s_hi, s_lo)  # s^3
    w_hi, w_lo = mul_dd_const(c_hi, c_lo, TWO_THIRDS, TWO_THIRDS_LO)
    tail = z_hi * c_hi * horner(z_hi, LOG_R)
    hi, lo = fast_two_sum(2.0 * s_hi, w_hi)
    return _int_to_f64(e), hi, lo + (2.0 * s_lo + (w_lo + tail))


def log_dd(v: Value) -> tuple[Value, Value]:
    """log(v) as a normalised dd for a positive finite v, relative error about 2^-64."""
    e, hi, lo = log_parts(v)
    s_hi, s_lo = two_sum(e * LN2_A, hi)  # e*LN2_A is exact
    return fast_two_sum(s_hi, s_lo + (lo + e * LN2_A_LO))


def _log_specials(x: Value, out: Value) -> Value:
    """log-style special values: NaN quieted, x < 0 NaN, +inf -> +inf, ±0 -> -inf."""
    out = select(eq(to_bits(x), INF_BITS), x, out)
    out = select(eq(x, 0.0), -_inf(), out)
    out = select(x < 0.0, _nan(), out)
    return select(isnan(x), _quiet(x), out)


def _positive_finite(x: Value) -> Value:
    """x where it is positive and finite, else 1 (a harmless operand; the caller selects the result)."""
    return select((x > 0.0) & (x < float("inf")), x, f64(1.0))


def log(x: Value) -> Value:
    """Natural logarithm for float64.

    Precision: ≤ 1 ulp of the correctly rounded result, subnormal inputs included (a double-double
    good to 2^-64, rounded once).
    Special values: log(±0) = -inf, log(+inf) = +inf, log(x < 0) = NaN (also -inf); a NaN comes
    back quieted.
    """
    hi, lo = log_dd(_positive_finite(x))
    return _log_specials(x, hi + lo)


def log2(x: Value) -> Value:
    """Base-2 logarithm for float64.

    Precision: ≤ 1 ulp of the correctly rounded result; exact for powers of two.
    Special values: log2(±0) = -inf, log2(+inf) = +inf, log2(x < 0) = NaN; a NaN comes back quieted.
    """
    e, hi, lo = log_parts(_positive_finite(x))
    m_hi, m_lo = mul_dd_const(hi, lo, LOG2E, LOG2E_LO)
    s_hi, s_lo = two_sum(e, m_hi)  # e is an integer: log2 of a power of two stays exact
    return _log_specials(x, s_hi + (s_lo + m_lo))


def log10(x: Value) -> Value:
    """Base-10 logarithm for float64.

    Precision: ≤ 1 ulp of the correctly rounded result (exact powers of ten give exact integers).
    Special values: log10(±0) = -inf, log10(+inf) = +inf, log10(x < 0) = NaN; a NaN comes back quieted.
    """
    hi, lo = log_dd(_positive_finite(x))
    m_hi, m_lo = mul_dd_const(hi, lo, LOG10E, LOG10E_LO)
    return _log_specials(x, m_hi + m_lo)


def log1p_dd(a_hi: Value, a_lo: Value) -> tuple[Value, Value]:
    """log(1 + a) for a dd a > -1 (finite, 1 + a >= 2^-60), as a normalised dd."""
    u_hi, u_lo = two_sum(f64(1.0), a_hi)
    u_lo = u_lo + a_lo
    e, hi, lo = log_parts(u_hi)
    # log(u_hi + u_lo) = log(u_hi) + u_lo/u_hi (u_lo/u_hi < 2^-52, its square is negligible)
    correction = u_lo * recip(select(u_hi < 2.0**900, u_hi, f64(2.0**900)))
    s_hi, s_lo = two_sum(e * LN2_A, hi)
    return fast_two_sum(s_hi, s_lo + (lo + (correction + e * LN2_A_LO)))


def log1p(x: Value) -> Value:
    """log(1 + x) for float64, accurate near 0.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: log1p(±0) = ±0, log1p(-1) = -inf, log1p(x < -1) = NaN, log1p(+inf) = +inf;
    a NaN comes back quieted.
    """
    safe = select((x > -1.0) & (x < float("inf")), x, f64(0.0))
    hi, lo = log1p_dd(safe, f64(0.0))
    out = select(eq(to_bits(x), INF_BITS), x, hi + lo)
    out = select(eq(x, -1.0), -_inf(), out)
    out = select(x < -1.0, _nan(), out)
    out = select(eq(x, 0.0), x, out)
    return select(isnan(x), _quiet(x), out)


# ---------------------------------------------------------------- hyperbolic functions

_TINY = 2.0**-27  # below this, x - x^3/3 and x + x^3/6 round to x: tanh, sinh, asinh, atanh, ... = x


def tanh(x: Value) -> Value:
    """Hyperbolic tangent for float64: -t / (2 + t) with t = expm1(-2|x|) in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: tanh(±inf) = ±1, tanh(±0) = ±0, |x| >= 19.1 gives ±1; a NaN comes back quieted.
    """
    a = _abs(x)
    t_hi, t_lo = expm1_dd(-2.0 * select(a < 20.0, a, f64(20.0)))
    d_hi, d_lo = two_sum(f64(2.0), t_hi)
    q_hi, _ = div_dd(-t_hi, -t_lo, d_hi, d_lo + t_lo)
    out = select(a < _TINY, x, _with_sign_of(q_hi, x))
    return select(isnan(x), _quiet(x), out)


def _exp_neg_abs(x: Value) -> tuple[Value, Value, Value, Value, Value]:
    """For a = min(|x|, 760): (k, hi, lo) with e^-a = 2^k (hi + lo), and e^-a as a dd (e_hi, e_lo)
    where a <= 40 (for larger a the dd is a harmless stand-in of about 2^-58)."""
    a = _abs(x)
    k, hi, lo = exp_reduced(-select(a < 760.0, a, f64(760.0)))  # x e^x is 0 below -760
    p = pow2(select(k > -58, k, i64(-58)))
    return k, hi, lo, hi * p, lo * p


def sigmoid(x: Value) -> Value:
    """1 / (1 + e^-x) for float64, in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: sigmoid(-inf) = 0, sigmoid(+inf) = 1; a NaN comes back quieted.
    """
    k, hi, lo, e_hi, e_lo = _exp_neg_abs(x)
    d_hi, d_lo = two_sum(f64(1.0), e_hi)
    positive = x >= 0.0
    n_hi = select(positive, f64(1.0), e_hi)
    n_lo = select(positive, f64(0.0), e_lo)
    q_hi, _ = div_dd(n_hi, n_lo, d_hi, d_lo + e_lo)
    # below -40, sigmoid(x) = e^x (1 - e^x + ...) is e^x to 2^-57: exp's rounding, subnormals included
    out = select(x < -40.0, scale(hi + lo, k), q_hi)
    return select(isnan(x), _quiet(x), out)


def silu(x: Value) -> Value:
    """x * sigmoid(x) for float64, in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: silu(-inf) = NaN (-inf / inf, as PyTorch), silu(+inf) = +inf, silu(±0) = ±0, 0 below
    -760 (as -0.0); a NaN comes back quieted.
    """
    k, hi, lo, e_hi, e_lo = _exp_neg_abs(x)
    d_hi, d_lo = two_sum(f64(1.0), e_hi)
    positive = x >= 0.0
    n_hi = select(positive, f64(1.0), e_hi)
    n_lo = select(positive, f64(0.0), e_lo)
    q_hi, q_lo = div_dd(n_hi, n_lo, d_hi, d_lo + e_lo)
    xs = select(_abs(x) < 2.0**900, x, f64(1.0))  # keep two_prod's split finite
    p_hi, p_lo = two_prod(xs, q_hi)
    near = p_hi + (p_lo + xs * q_lo)
    t_hi, t_lo = two_prod(xs, hi)
    tail = scale(t_hi + (t_lo + xs * lo), k)  # x e^x for x < -40 (x*hi is in [2^-20, 2^11])
    out = select(x < -40.0, tail, near)
    out = select(x < -760.0, -f64(0.0), out)  # x e^x underflows from -752 on
    out = select(_abs(x) < 2.0**900, out, select(x > 0.0, x, -f64(0.0)))
    out = select(eq(x, 0.0), x, out)
    out = select(eq(x, float("-inf")), _nan(), out)  # -inf / (1 + inf), as PyTorch
    return select(isnan(x), _quiet(x), out)


def softplus(x: Value, beta: float = 1.0, threshold: float = 20.0) -> Value:
    """PyTorch's softplus for float64: x where x*beta > threshold, else log(1 + exp(x*beta)) / beta.

    Evaluated as max(z, 0) + log1p(exp(-|z|)) in double-double with z = x*beta rounded (as
    PyTorch rounds it), then one division by beta when beta != 1.
    Precision: ≤ 1 ulp of the correctly rounded result for beta = 1; one more rounding (the
    division) for other beta.
    Special values: softplus(-inf) = 0, softplus(+inf) = +inf; a NaN comes back quieted.
    """
    z = x if beta == 1.0 else x * float(beta)
    k, hi, lo, e_hi, e_lo = _exp_neg_abs(z)
    l_hi, l_lo = log1p_dd(e_hi, e_lo)
    positive = z > 0.0
    s_hi, s_lo = two_sum(select(positive, z, f64(0.0)), l_hi)
    out = select(z < -40.0, scale(hi + lo, k), s_hi + (s_lo + l_lo))
    out = select(eq(to_bits(z), INF_BITS), z, out)
    if beta != 1.0:
        out = out / float(beta)
    out = select(z > float(threshold), x, out)
    return select(isnan(x), _quiet(x), out)


def _half_exp(a: Value) -> Value:
    """e^a / 2 for a in [20, 711] (overflow to +inf past 710.4758600739439), rounded once."""
    k, hi, lo = exp_reduced(a)
    return scale(hi + lo, k - 1)


def sinh(x: Value) -> Value:
    """Hyperbolic sine for float64: (t + t/(1+t))/2 with t = expm1(|x|) in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: sinh(±inf) = ±inf, overflow to ±inf beyond ±710.4758600739439, sinh(±0) = ±0;
    a NaN comes back quieted.
    """
    a = _clamp(_abs(x), 0.0, 711.0)
    t_hi, t_lo = expm1_dd(select(a < 22.0, a, f64(22.0)))
    d_hi, d_lo = two_sum(f64(1.0), t_hi)
    q_hi, q_lo = div_dd(t_hi, t_lo, d_hi, d_lo + t_lo)
    s_hi, s_lo = two_sum(t_hi, q_hi)
    near = (s_hi + (s_lo + (t_lo + q_lo))) * 0.5
    out = select(a > 22.0, _half_exp(select(a > 22.0, a, f64(22.0))), near)  # e^-22 < 2^-63 of e^22
    out = select(a < _TINY, _abs(x), out)
    return select(isnan(x), _quiet(x), _with_sign_of(out, x))


def cosh(x: Value) -> Value:
    """Hyperbolic cosine for float64: 1 + t^2/(2(1+t)) with t = expm1(|x|) in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: cosh(±inf) = +inf, overflow to +inf beyond ±710.4758600739439, cosh(±0) = 1;
    a NaN comes back quieted.
    """
    a = _clamp(_abs(x), 0.0, 711.0)
    t_hi, t_lo = expm1_dd(select(a < 22.0, a, f64(22.0)))
    w_hi, w_lo = mul_dd(t_hi, t_lo, t_hi, t_lo)
    d_hi, d_lo = two_sum(f64(1.0), t_hi)
    q_hi, q_lo = div_dd(w_hi, w_lo, d_hi * 2.0, (d_lo + t_lo) * 2.0)
    s_hi, s_lo = two_sum(f64(1.0), q_hi)
    near = s_hi + (s_lo + q_lo)
    out = select(a > 22.0, _half_exp(select(a > 22.0, a, f64(22.0))), near)
    return select(isnan(x), _quiet(x), out)


def _plus_ln2(g_hi: Value, g_lo: Value) -> Value:
    """(g_hi + g_lo) + ln2, rounded once: log(2a) for a dd log(a)."""
    s_hi, s_lo = two_sum(g_hi, f64(LN2))
    return s_hi + (s_lo + (g_lo + LN2_LO))


def asinh(x: Value) -> Value:
    """Inverse hyperbolic sine for float64: log1p(a + a^2/(1 + sqrt(1 + a^2))) in double-double,
    log(a) + ln2 beyond 2^28.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: asinh(±inf) = ±inf, asinh(±0) = ±0; a NaN comes back quieted.
    """
    a = _abs(x)
    big = a > 2.0**28
    m = select(big, f64(1.0), a)
    sq_hi, sq_lo = two_prod(m, m)
    w_hi, w_lo = two_sum(f64(1.0), sq_hi)
    w_lo = w_lo + sq_lo
    r_hi, r_lo = sqrt_dd(w_hi, w_lo, sqrt_f64(w_hi))
    d_hi, d_lo = two_sum(f64(1.0), r_hi)
    q_hi, q_lo = div_dd(sq_hi, sq_lo, d_hi, d_lo + r_lo)
    n_hi, n_lo = two_sum(m, q_hi)
    l_hi, l_lo = log1p_dd(n_hi, n_lo + q_lo)
    g_hi, g_lo = log_dd(_positive_finite(select(big, a, f64(1.0))))
    far = _plus_ln2(g_hi, g_lo)
    out = select(big, far, l_hi + l_lo)
    out = select(a < _TINY, a, out)
    out = select(eq(to_bits(a), INF_BITS), a, out)
    return select(isnan(x), _quiet(x), _with_sign_of(out, x))


def acosh(x: Value) -> Value:
    """Inverse hyperbolic cosine for float64: log1p(t + sqrt(t^2 + 2t)) with t = x - 1 in
    double-double, log(x) + ln2 beyond 2^28.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: acosh(x < 1) = NaN, acosh(1) = 0, acosh(+inf) = +inf; a NaN comes back quieted.
    """
    big = x > 2.0**28
    m = select((x >= 1.0) & ~big, x, f64(2.0))
    t_hi, t_lo = two_sum(m, f64(-1.0))
    u_hi, u_lo = two_sum(t_hi, f64(2.0))
    w_hi, w_lo = mul_dd(t_hi, t_lo, u_hi, u_lo + t_lo)  # t (t + 2)
    w_ok = w_hi > 0.0
    w_safe = select(w_ok, w_hi, f64(1.0))
    r_hi, r_lo = sqrt_dd(w_safe, select(w_ok, w_lo, f64(0.0)), sqrt_f64(w_safe))
    r_hi = select(w_ok, r_hi, f64(0.0))
    r_lo = select(w_ok, r_lo, f64(0.0))
    n_hi, n_lo = two_sum(t_hi, r_hi)
    l_hi, l_lo = log1p_dd(n_hi, n_lo + (t_lo + r_lo))
    g_hi, g_lo = log_dd(_positive_finite(select(big, x, f64(1.0))))
    out = select(big, _plus_ln2(g_hi, g_lo), l_hi + l_lo)
    out = select(eq(x, 1.0), f64(0.0), out)
    out = select(eq(to_bits(x), INF_BITS), x, out)
    out = select(x < 1.0, _nan(), out)
    return select(isnan(x), _quiet(x), out)


def atanh(x: Value) -> Value:
    """Inverse hyperbolic tangent for float64: log1p(2a/(1-a))/2 in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: atanh(±1) = ±inf, atanh(x) for |x| > 1 is NaN, atanh(±0) = ±0; a NaN comes
    back quieted.
    """
    a = _abs(x)
    m = select(a < 1.0, a, f64(0.5))
    d_hi, d_lo = two_sum(f64(1.0), -m)
    q_hi, q_lo = div_dd(m * 2.0, f64(0.0), d_hi, d_lo)
    l_hi, l_lo = log1p_dd(q_hi, q_lo)
    out = (l_hi + l_lo) * 0.5
    out = select(a < _TINY, a, out)
    out = select(eq(a, 1.0), _inf(), out)
    out = select(a > 1.0, _nan(), out)
    return select(isnan(x), _quiet(x), _with_sign_of(out, x))


# ---------------------------------------------------------------- pow

_Y_LIMIT = 2.0**64  # beyond this, y*log|x| saturates for every x != 1 anyway
_T_LIMIT = 1100.0  # |y*log|x|| beyond this is certain overflow or underflow


def _is_integer(a: Value) -> Value:
    """Whether a float64 0 <= a < 2^52 is an integer (false for NaN): adding 2^52 rounds it to one."""
    return eq((a + 2.0**52) - 2.0**52, a)


def pow(x: Value, y: Value) -> Value:  # noqa: A001 - PyTorch's name
    """x raised to the power y, float64: e^(y * log|x|) with log|x| and the product in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result for finite, nonzero results; exact where
    the result is a float64 (integer powers of small integers, ...).
    Special values: as C99 Annex F and PyTorch (the float32 ``pow``'s table): pow(x, ±0) = 1 even
    for NaN x; pow(1, y) = 1 even for NaN y; pow(-1, ±inf) = 1; pow(x < 0 finite, non-integer y)
    = NaN; an odd integer y keeps the sign of x; pow(±0, y < 0) = +inf unless y is an odd
    integer; pow(±inf, y < 0) = 0; otherwise a NaN operand gives NaN (the first one, quieted).
    """
    y = y if isinstance(y, Value) else f64(float(y))
    ax, ay = _abs(x), _abs(y)
    y_int = _is_integer(ay) | (ay >= 2.0**52)  # true for ±inf, false for NaN
    odd = y_int & (ay < 2.0**53) & ~_is_integer(select(ay < 2.0**53, ay, f64(0.0)) * 0.5)

    y_c = select(ay < _Y_LIMIT, y, select(y < 0.0, f64(-_Y_LIMIT), f64(_Y_LIMIT)))
    l_hi, l_lo = log_dd(_positive_finite(ax))
    p_hi, p_lo = two_prod(y_c, l_hi)
    t_hi, t_lo = fast_two_sum(p_hi, p_lo + y_c * l_lo)
    in_range = (t_hi < _T_LIMIT) & (t_hi > -_T_LIMIT)
    t_lo = select(in_range, t_lo, f64(0.0))
    t_hi = select(in_range, t_hi, select(t_hi > 0.0, f64(_T_LIMIT), f64(-_T_LIMIT)))
    k, r_hi, r_lo = reduce_exp(t_hi)
    r_hi, r_lo = fast_two_sum(r_hi, r_lo + t_lo)
    e_hi, e_lo = exp_parts(r_hi, r_lo)
    mag = scale(e_hi + e_lo, k)

    inf, zero = _inf(), f64(0.0)
    y_neg = y < 0.0
    mag = select(eq(ax, 0.0), select(y_neg, inf, zero), mag)
    mag = select(eq(to_bits(ax), INF_BITS), select(y_neg, zero, inf), mag)
    to_inf = eq(ax < 1.0, y_neg)  # |x| < 1 with y = -inf, or |x| > 1 with y = +inf
    mag = select(eq(to_bits(ay), INF_BITS), select(eq(ax, 1.0), f64(1.0), select(to_inf, inf, zero)), mag)
    sign = select(odd, to_bits(x) & SIGN_BIT, i64(0))
    out = from_bits(to_bits(mag) | sign)

    negative_base = (x < 0.0) & (x > float("-inf"))
    out = select(negative_base & ~y_int, _nan(), out)
    out = select(isnan(y), _quiet(y), out)
    out = select(isnan(x), _quiet(x), out)
    return select(eq(x, 1.0) | eq(y, 0.0), f64(1.0), out)


def mish(x: Value) -> Value:
    """x * tanh(softplus(x)) for float64, as x * n / (n + 2) with n = e^x (e^x + 2) in double-double.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: mish(-inf) = NaN (-inf * 0, as PyTorch), mish(+inf) = +inf, mish(±0) = ±0,
    -0.0 below -760; a NaN comes back quieted.
    """
    c = _clamp(x, -760.0, 40.0)
    k, hi, lo = exp_reduced(c)
    p = pow2(select(k > -58, k, i64(-58)))
    e_hi, e_lo = hi * p, lo * p  # e^x as a dd for x in [-40, 40]
    t_hi, t_lo = two_sum(e_hi, f64(2.0))
    n_hi, n_lo = mul_dd(e_hi, e_lo, t_hi, t_lo + e_lo)
    d_hi, d_lo = two_sum(n_hi, f64(2.0))
    q_hi, q_lo = div_dd(n_hi, n_lo, d_hi, d_lo + n_lo)
    p_hi, p_lo = two_prod(c, q_hi)
    near = p_hi + (p_lo + c * q_lo)
    # below -40, tanh(softplus(x)) = e^x (1 - e^x/2 + ...) is e^x to 2^-58: x e^x, scaled once
    t_hi, t_lo = two_prod(c, hi)
    tail = scale(t_hi + (t_lo + c * lo), k)
    out = select(x < -40.0, tail, near)
    out = select(x < -760.0, -f64(0.0), select(x > 40.0, x, out))  # above 40, 1 - 2e^-80 rounds to 1
    out = select(eq(x, 0.0), x, out)
    out = select(eq(x, float("-inf")), _nan(), out)
    return select(isnan(x), _quiet(x), out)
