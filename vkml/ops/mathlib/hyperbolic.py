"""sinh, cosh, asinh, acosh, atanh, log10, logit: double-float evaluation rounded once.

sinh from E = expm1(|x|) as (E + E/(E + 1)) / 2 and cosh from e^|x| as (e + 1/e) / 2, both as
double-floats (no cancellation); beyond 20 the e^-|x| part is below 2^-57 of the result and
e^|x| / 2 is scaled by 2^(k-1) in exact steps, so the overflow threshold is the true one. The
inverse functions go through log1p of an exactly formed double-float argument:
asinh a = log1p(a + a^2 / (1 + sqrt(1 + a^2))), acosh x = log1p((x - 1) + sqrt(x^2 - 1)),
atanh a = log1p(2a / (1 - a)) / 2; above 2^12, asinh and acosh are log(2a).
"""

from __future__ import annotations

from ...ir.builder import eq, isnan, select
from ...ir.core import Value
from .bits import ABS_MASK, DEFAULT_NAN_BITS, INF_BITS, SIGN_BIT, f32, f32_bits, float32_only, from_bits, quiet, to_bits
from .dd import div_dd, fast_two_sum, mul_dd_const, scale, two_prod, two_sum
from .explog import LN2_HI, LN2_HI_LO, exp_parts, log1p_dd, log_parts, minus_one, reduce_exp
from .trig import sqrt_dd

LOG10E = (float.fromhex("0x1.bcb7b2p-2"), float.fromhex("-0x1.5b235ep-27"))
TINY = 2.0**-12  # below this sinh, asinh and atanh round to x
BIG = 2.0**12  # above this asinh and acosh are log(2a) to far below half an ulp


def _abs(x: Value) -> Value:
    return from_bits(to_bits(x) & ABS_MASK)


def _with_sign_of(v: Value, x: Value) -> Value:
    return from_bits((to_bits(v) & ABS_MASK) | (to_bits(x) & SIGN_BIT))


def _half_exp_large(a: Value) -> Value:
    """e^a / 2 for a in [20, 95], rounded once (overflowing to +inf from 89.415987)."""
    k, r_hi, r_lo = reduce_exp(a, f32(0.0))
    s, tail = exp_parts(r_hi, r_lo)
    return scale(s + tail, k - 1)


@float32_only
def sinh(x: Value) -> Value:
    """Hyperbolic sine.

    Precision: ≤ 1 ulp of the correctly rounded result for every input (measured worst case
    below 1 ulp), relative accuracy included near 0.
    Special values: sinh(±0) = ±0, sinh(±inf) = ±inf, overflow to ±inf above 89.415987; a NaN
    comes back quieted.

    Example: ``y = sinh(x)``.
    """
    a = _abs(x)
    a_c = select(a < 20.0, a, f32(20.0))
    k, r_hi, r_lo = reduce_exp(a_c, f32(0.0))
    s, tail = exp_parts(r_hi, r_lo)
    e_hi, e_lo = minus_one(s, tail, k)  # expm1(a)
    d_hi, d_lo = two_sum(e_hi, f32(1.0))
    q_hi, q_lo = div_dd(e_hi, e_lo, d_hi, d_lo + e_lo)
    h, l = two_sum(e_hi, q_hi)
    small = (h + (l + (e_lo + q_lo))) * 0.5
    large = _half_exp_large(select(a < 95.0, select(a > 20.0, a, f32(20.0)), f32(95.0)))
    out = select(a < 20.0, small, large)
    out = select(a < TINY, a, out)
    out = _with_sign_of(out, x)
    return select(isnan(x), quiet(x), out)


@float32_only
def cosh(x: Value) -> Value:
    """Hyperbolic cosine.

    Precision: ≤ 1 ulp of the correctly rounded result for every input (measured worst case
    below 1 ulp).
    Special values: cosh(±0) = 1, cosh(±inf) = +inf, overflow to +inf above 89.415987; a NaN
    comes back quieted.

    Example: ``y = cosh(x)``.
    """
    a = _abs(x)
    a_c = select(a < 20.0, a, f32(20.0))
    k, r_hi, r_lo = reduce_exp(a_c, f32(0.0))
    s, tail = exp_parts(r_hi, r_lo)
    s_hi, s_lo = fast_two_sum(s, tail)
    e_hi, e_lo = scale(s_hi, k), scale(s_lo, k)  # e^a for a < 20: exact scaling by 2^k, k <= 29
    i_hi, i_lo = div_dd(f32(1.0), f32(0.0), e_hi, e_lo)
    h, l = two_sum(e_hi, i_hi)
    small = (h + (l + (e_lo + i_lo))) * 0.5
    large = _half_exp_large(select(a < 95.0, select(a > 20.0, a, f32(20.0)), f32(95.0)))
    out = select(a < 20.0, small, large)
    return select(isnan(x), quiet(x), out)


def _log_dd(v: Value) -> tuple[Value, Value]:
    """log(v) as a double-float for a positive finite v (about 2^-40 relative)."""
    e, hi, lo = log_parts(v)
    s_hi, s_lo = two_sum(e * LN2_HI, hi)  # e*LN2_HI is exact
    return fast_two_sum(s_hi, s_lo + (lo + e * LN2_HI_LO))


def _log_twice(a: Value) -> Value:
    """log(2a) for a >= 2^12 (finite), rounded once."""
    e, hi, lo = log_parts(a)
    e = e + 1.0
    s_hi, s_lo = two_sum(e * LN2_HI, hi)
    return s_hi + (s_lo + (lo + e * LN2_HI_LO))


@float32_only
def asinh(x: Value) -> Value:
    """Inverse hyperbolic sine.

    Precision: ≤ 1 ulp of the correctly rounded result for every input.
    Special values: asinh(±0) = ±0, asinh(±inf) = ±inf; a NaN comes back quieted.

    Example: ``y = asinh(x)``.
    """
    a = _abs(x)
    a_c = select(a < BIG, a, f32(1.0))
    p, pe = two_prod(a_c, a_c)
    w_hi, w_lo = two_sum(p, f32(1.0))
    r_hi, r_lo = sqrt_dd(w_hi, w_lo + pe)
    d_hi, d_lo = two_sum(r_hi, f32(1.0))
    f_hi, f_lo = div_dd(p, pe, d_hi, d_lo + r_lo)
    g_hi, g_lo = two_sum(a_c, f_hi)
    l_hi, l_lo = log1p_dd(g_hi, g_lo + f_lo)
    out = select(a < BIG, l_hi + l_lo, _log_twice(select(a < BIG, f32(BIG), a)))
    out = select(eq(to_bits(a), INF_BITS), a, out)
    out = select(a < TINY, a, out)
    out = _with_sign_of(out, x)
    return select(isnan(x), quiet(x), out)


@float32_only
def acosh(x: Value) -> Value:
    """Inverse hyperbolic cosine, for x >= 1.

    Precision: ≤ 1 ulp of the correctly rounded result for every input.
    Special values: acosh(1) = 0, acosh(+inf) = +inf, x < 1 (-inf included) gives NaN; a NaN comes
    back quieted.

    Example: ``y = acosh(x)``.
    """
    inside = (x >= 1.0) & (x < BIG)
    x_c = select(inside, x, f32(1.0))
    t_hi, t_lo = two_sum(x_c, f32(-1.0))
    p, pe = two_prod(x_c, x_c)
    w_hi, w_lo = two_sum(p, f32(-1.0))
    w_hi, w_lo = fast_two_sum(w_hi, w_lo + pe)
    r_hi, r_lo = sqrt_dd(select(w_hi > 0.0, w_hi, f32(0.0)), select(w_hi > 0.0, w_lo, f32(0.0)))
    g_hi, g_lo = two_sum(t_hi, r_hi)
    l_hi, l_lo = log1p_dd(g_hi, g_lo + (t_lo + r_lo))
    out = select(inside, l_hi + l_lo, _log_twice(select(x >= BIG, x, f32(BIG))))
    out = select(eq(to_bits(x), INF_BITS), x, out)
    out = select(x < 1.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


@float32_only
def atanh(x: Value) -> Value:
    """Inverse hyperbolic tangent, for |x| <= 1.

    Precision: ≤ 1 ulp of the correctly rounded result for every input.
    Special values: atanh(±0) = ±0, atanh(±1) = ±inf, |x| > 1 gives NaN; a NaN comes back quieted.

    Example: ``y = atanh(x)``.
    """
    a = _abs(x)
    a_c = select(a < 1.0, a, f32(0.5))
    d_hi, d_lo = two_sum(f32(1.0), -a_c)
    q_hi, q_lo = div_dd(a_c * 2.0, f32(0.0), d_hi, d_lo)
    l_hi, l_lo = log1p_dd(q_hi, q_lo)
    out = (l_hi + l_lo) * 0.5
    out = select(eq(a, 1.0), f32(float("inf")), out)
    out = select(a < TINY, a, out)
    out = _with_sign_of(out, x)
    out = select(a > 1.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


@float32_only
def log10(x: Value) -> Value:
    """Base-10 logarithm: log(x) as a double-float times log10(e) as a float32 pair, rounded once.

    Precision: ≤ 1 ulp of the correctly rounded result; exact powers of ten up to 10^10 give
    their exponent exactly.
    Special values: log10(±0) = -inf, log10(+inf) = +inf, log10(x < 0) = NaN; a NaN comes back quieted.

    Example: ``y = log10(x)``.
    """
    l_hi, l_lo = _log_dd(x)
    m_hi, m_lo = mul_dd_const(l_hi, l_lo, LOG10E[0], LOG10E[1])
    out = m_hi + m_lo
    out = select(eq(to_bits(x), INF_BITS), x, out)
    out = select(eq(x, 0.0), f32(float("-inf")), out)
    out = select(x < 0.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


@float32_only
def logit(x: Value) -> Value:
    """log(x / (1 - x)), evaluated without cancellation: log(x) - log1p(-x) below 1/4, and
    log1p((2x - 1) / (1 - x)) from 1/4 on (2x - 1 is exact there), each as double-floats.

    Precision: ≤ 1 ulp of the correctly rounded result for every input in [0, 1], relative
    accuracy included near the zero at 1/2.
    Special values: logit(0) = -inf, logit(1) = +inf, x < 0 or x > 1 gives NaN; a NaN comes back
    quieted.
    Divergence from PyTorch: PyTorch rounds x / (1 - x) before the logarithm, which costs up to
    an ulp of the quotient (hundreds of ulp of the result near 1/2).

    Example: ``y = logit(x)``.
    """
    inside = (x > 0.0) & (x < 1.0)
    p = select(inside, x, f32(0.5))
    # x < 1/4: log(x) - log1p(-x)
    a_hi, a_lo = _log_dd(p)
    b_hi, b_lo = log1p_dd(-p, f32(0.0))
    h, l = two_sum(a_hi, -b_hi)
    low = h + (l + (a_lo - b_lo))
    # x >= 1/4: log1p((2x - 1) / (1 - x))
    d_hi, d_lo = two_sum(f32(1.0), -p)
    q_hi, q_lo = div_dd(p * 2.0 - 1.0, f32(0.0), d_hi, d_lo)
    c_hi, c_lo = log1p_dd(q_hi, q_lo)
    out = select(p < 0.25, low, c_hi + c_lo)
    out = select(eq(x, 0.0), f32(float("-inf")), select(eq(x, 1.0), f32(float("inf")), out))
    out = select((x < 0.0) | (x > 1.0), f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)
