"""Activation functions: sigmoid, tanh, softplus, erf, gelu (erf form), gelu_tanh.

Each is evaluated as a double-float up to one final rounding, so the error stays well inside
the 2-ulp contract (measured worst case 1 ulp); sigmoid and tanh divide with ``_quotient``,
whose exact products come from 12-bit halves (an integer mask) rather than Dekker's splits. Where a result can be tiny the work is done on
an unscaled mantissa and scaled by 2^k at the end (``_scaled``), so subnormal results are
rounded once; "ulp" below is the float32 ulp of the correctly rounded result, and for
subnormal results (|f| < 2^-126) the bound is absolute: 1 ulp = 2^-149.

The tails use exact identities rather than cancelling subtractions:
sigmoid(x) = e^x / (1 + e^x) for x < 0; tanh(x) = (1 - e^-2x) / (1 + e^-2x) with 1 - e^-2x
exact near 0;
gelu(x) = x + gelu(-x) and gelu_tanh(x) = x + gelu_tanh(-x) for x > 0; and for x <= 0,
gelu(x) = -q * exp(-x^2/2) * K(q) with q = |x|/(2+|x|), x^2 formed exactly, K smooth (one
polynomial in q for the whole range, no small-|x| branch).
"""

from __future__ import annotations

import numpy as np

from ...ir.builder import eq, isnan, select
from ...ir.core import Value
from .bits import (
    ABS_MASK,
    DEFAULT_NAN_BITS,
    INF_BITS,
    ROUNDER,
    SIGN_BIT,
    f32,
    f32_bits,
    float32_only,
    from_bits,
    quiet,
    round_and_pow2,
    to_bits,
    u32,
)
from .dd import (
    div_dd,
    fast_two_sum,
    halve,
    horner,
    mul_dd,
    mul_dd_const,
    mul_dd_f,
    normalise_divisor,
    quotient_rough,
    quotient_short,
    two_prod,
    two_square,
    two_sum,
)
from .exact import div
from .explog import EXP_Q, LN2_HI, LN2_HI_LO, LOG2E, exp_parts_wide, log1p_dd


def _hex(*values: str) -> list[float]:
    return [float.fromhex(v) for v in values]


# Polynomials: constant term as a float32 pair, then the other coefficients (see explog's note).
# erf(z) / z in z^2 on |z| <= 0.75 (relative error 2^-33).
ERF_SMALL = (
    _hex("0x1.20dd76p+0", "-0x1.f7e982p-25"),
    _hex("-0x1.812746p-2", "0x1.ce2ed8p-4", "-0x1.b82204p-6", "0x1.559ab8p-8", "-0x1.b26bf8p-11", "0x1.7b09a0p-14"),
)
# erfc(z) * exp(z^2) in u = 2/(2+z) - ERFC_CENTER on 0.75 <= z <= 4 (relative error 2^-29).
ERFC_CENTER = float.fromhex("0x1.0f83e0p-1")
ERFC_SCALED = (
    _hex("0x1.20f6aap-2", "0x1.a23f48p-27"),
    _hex(
        "0x1.d453c8p-1",
        "0x1.063b00p+0",
        "0x1.462324p-1",
        "0x1.9cadf8p-6",
        "-0x1.d9beecp-3",
        "-0x1.cd8b7ep-6",
        "0x1.f10532p-4",
        "0x1.270c66p-11",
    ),
)
# K(a) = (2 + a) * Phi(-a) * exp(a^2/2), Phi the standard normal CDF, as a polynomial in q = a/(2+a)
# on 0 <= a <= 15 (fitted to 15.1; relative error 2^-29.3 with the coefficients as rounded here): one
# formula for the whole range, so gelu(-a) = -q * exp(-a^2/2) * K(a) needs no small-|x| branch. K(0) =
# 1 exactly; c1 is a pair whose leading part has 12 bits (its products with q's 12-bit halves are
# exact); K lies in [0.46, 1] and the terms past the linear one stay below 0.07 K, but their
# float32 Horner sum cancels near q = 0.88 and costs up to 2^-25 of K there (the product before the
# final rounding stays within 2^-24.3: 1 ulp measured against the 2-ulp bound).
GELU_K = (
    _hex("-0x1.31p-1", "-0x1.1572e6p-14"),
    _hex(
        "-0x1.884044p-3",
        "0x1.5b5662p-4",
        "0x1.bb7660p-4",
        "0x1.e522c6p-6",
        "0x1.21c9aep-5",
        "-0x1.c34a50p-4",
        "0x1.aed5a2p-5",
        "0x1.cb288cp-5",
        "-0x1.ba63e6p-3",
        "0x1.af6b7ap-3",
        "-0x1.09eb06p-4",
    ),
)
# gelu_tanh(x) = x * sigmoid(v), v = x * (A + B*x^2) = 2*sqrt(2/pi)*(x + 0.044715*x^3); pairs.
GELU_TANH_A = _hex("0x1.988454p+0", "-0x1.857936p-25")
GELU_TANH_B = _hex("0x1.2444f2p-4", "0x1.49b16ap-29")

SMALL = 0.75  # split point of the erf polynomials


def _tail_poly(a: Value, center: float, table) -> tuple[Value, Value]:
    """P(2/(2+a) - center) as a double-float, for a >= 0.75 (the erf and gelu tails).

    The variable and the first two terms are carried as double-floats: with a rounded
    variable, or a rounded c0 + c1*u, the sum would lose up to an ulp to cancellation. The
    variable's own error, 2^-33 relative (``quotient_short``), moves the sum by about 2^-32.
    """
    d_hi, d_lo, inverse = normalise_divisor(*two_sum(a, f32(2.0)))  # 2 + a = (d_hi + d_lo) / inverse
    t_hi, t_lo = fast_two_sum(*quotient_short(inverse * 2.0, f32(0.0), d_hi, d_lo))  # to 2^-33
    u_hi, u_lo = fast_two_sum(t_hi - center, t_lo)  # t_hi - center is exact (Sterbenz) or tiny-error
    (c0_hi, c0_lo), rest = table
    p_hi, p_lo = two_prod(rest[0], u_hi)
    higher = u_hi * u_hi * horner(u_hi, rest[1:])
    # |c1 u| below |c0| where the result is used (GELU_TAIL: 0.08 and 0.36; ERFC_SCALED on
    # [0.75, 4]: 0.18 and 0.28; ERFC_FAR on [3, 10.125]: 0.064 and 0.11), so the sum's error is
    # exact without two_sum's reversed check (other lanes' sums are discarded).
    hi, lo = fast_two_sum(f32(c0_hi), p_hi)
    return hi, lo + (p_lo + rest[0] * u_lo + c0_lo + higher)


def _with_sign_of(magnitude: Value, x: Value) -> Value:
    return from_bits(to_bits(magnitude) | (to_bits(x) & SIGN_BIT))


def _abs(x: Value) -> Value:
    return from_bits(to_bits(x) & ABS_MASK)


def _clamp(x: Value, lo: float, hi: float) -> Value:
    """x limited to [lo, hi]; NaN becomes hi (callers restore NaN at the end)."""
    x = select(x < hi, x, f32(hi))
    return select(x > lo, x, f32(lo))


# _exp_dd's 2^k comes as 2^(k + EXP_DD_BIAS) from the rounding add (``round_and_pow2``), for k in
# [-163, 0]; ``_scaled`` multiplies by 2^-EXP_DD_BIAS after it.
EXP_DD_BIAS = 96


def _exp_dd(v_hi: Value, v_lo: Value) -> tuple[Value, Value, Value]:
    """e^v = (hi + lo) * 2^k for -112.5 <= v <= 0, hi + lo in [0.7, 1.42]; returns (hi, lo, pk)
    with pk = 2^(k + EXP_DD_BIAS), for ``_scaled``."""
    k, pk = round_and_pow2(v_hi * LOG2E, f32(ROUNDER + EXP_DD_BIAS))
    s, tail = exp_parts_wide(v_hi - k * LN2_HI, v_lo - k * LN2_HI_LO)  # v_hi - k*LN2_HI is exact
    hi, lo = fast_two_sum(s, tail)
    return hi, lo, pk


def _scaled(x: Value, pk: Value) -> Value:
    """x * 2^k rounded once, for pk = 2^(k + EXP_DD_BIAS) from ``_exp_dd`` and 2^-59 <= |x| <= 4:
    x * pk is exact (k + EXP_DD_BIAS >= -67), so a subnormal result is rounded by the second
    product alone (the bits of ``scale``, two multiplies where it takes eight instructions)."""
    return x * pk * 2.0**-EXP_DD_BIAS


def _logistic_fraction(n_hi: Value, n_lo: Value, e_hi: Value, e_lo: Value, pk: Value) -> tuple[Value, Value]:
    """n / (1 + e * 2^k) as an unnormalised double-float (``quotient_rough``: 2^-29 relative, no
    scaling of the divisor), for e * 2^k <= 1.5 (gelu_tanh's denominator; pk = 2^(k + EXP_DD_BIAS)
    from ``_exp_dd``)."""
    d_hi, d_lo = two_sum(f32(1.0), _scaled(e_hi, pk))
    return quotient_rough(n_hi, n_lo, d_hi, d_lo + _scaled(e_lo, pk))


def _mul_halves(a_hi: Value, a_lo: Value, b_hi: Value, b_lo: Value) -> tuple[Value, Value]:
    """(a_hi + a_lo) * (b_hi + b_lo) as an unnormalised pair (p, e), |e| < 2^-10 |p|, to about
    2^-34 relative: p, the product of the 12-bit halves' leading parts, is exact, and the other
    partial products are exact too, only their small sum is rounded. Six instructions fewer
    than ``mul_dd`` (Dekker's product)."""
    ah, al = halve(a_hi)
    bh, bl = halve(b_hi)
    return ah * bh, (ah * bl + al * bh) + (al * bl + (a_hi * b_lo + a_lo * b_hi))


def _quotient(n_hi: Value, n_lo: Value, d_hi: Value, d_lo: Value) -> Value:
    """(n_hi + n_lo) / (d_hi + d_lo) rounded once, for d_hi in [1, 2], |d_lo| <= 2^-22 and
    |n_lo| <= 2^-20 |n_hi|: the pair of ``quotient_short`` summed (error below 0.52 ulp)."""
    p, c = quotient_short(n_hi, n_lo, d_hi, d_lo)
    return p + c


@float32_only
def sigmoid(x: Value) -> Value:
    """The logistic function 1 / (1 + exp(-x)).

    Precision: ≤ 2 ulp of the correctly rounded result for every input (measured worst case
    1 ulp, on every float32 with ``-m exhaustive``); computed as 1/(1+e^-x) for x >= 0 and
    e^x/(1+e^x) for x < 0, so the left tail keeps its relative accuracy; where the result is
    subnormal (x below about -87.3) the ulp is the absolute 2^-149.
    Special values: sigmoid(-inf) = 0, sigmoid(+inf) = 1, never NaN for finite input;
    a NaN comes back quieted.
    Divergence from PyTorch: for -103.9 < x < -88.7 the result is the (subnormal) correctly
    rounded value; PyTorch returns 0 there, once exp(-x) overflows.

    Example: ``y = sigmoid(x)``.
    """
    p, c, negative, first = _logistic(x)
    q = p + c
    out = select(negative, q * first * 2.0**-40, q)
    return select(isnan(x), quiet(x), out)


def _logistic(x: Value) -> tuple[Value, Value, Value, Value]:
    """sigmoid(x) = (p + c) * (2^(k + 40) * 2^-40 where ``negative``, else 1): returns (p, c,
    negative, 2^(k + 40)), p + c as ``quotient_short`` gives it (2^-33 relative)."""
    v = -_abs(x)
    v = select(v > -110.0, v, f32(-110.0))  # NaN too; e^-110 is far below the subnormal range
    # e^v = (e_hi + e_lo) * 2^k, k in [-159, 0]: 2^(k + 40) from the rounding add, then 2^-40.
    k, first = round_and_pow2(v * LOG2E, f32(ROUNDER + 40))
    e_hi, e_lo = fast_two_sum(*exp_parts_wide(v - k * LN2_HI, k * -LN2_HI_LO))  # in [0.7, 1.42]
    p = first * 2.0**-40  # 2^k: subnormal or zero where e^v cannot move 1 + e^v's rounding
    d_hi, d_lo = fast_two_sum(f32(1.0), e_hi * p)
    negative = x < 0.0
    q, c = quotient_short(select(negative, e_hi, f32(1.0)), select(negative, e_lo, f32(0.0)), d_hi, d_lo + e_lo * p)
    return q, c, negative, first


@float32_only
def silu(x: Value) -> Value:
    """SiLU (swish), x * sigmoid(x) = x / (1 + exp(-x)).

    Precision: ≤ 2 ulp of the correctly rounded result for every input (measured worst case
    1 ulp on every 61st float32, both signs): x times sigmoid's unrounded quotient, two
    roundings; where the result is subnormal (x below about -87.3) the ulp is the
    absolute 2^-149; below -110 it is -0.
    Special values: silu(-inf) = NaN (-inf / inf, as PyTorch), silu(+inf) = +inf, x > 20
    gives x; a NaN comes back quieted.

    Example: ``y = silu(x)``.
    """
    p, c, negative, first = _logistic(x)
    t = x * p + x * c
    out = select(negative, t * first * 2.0**-40, t)
    out = select(x > 20.0, x, out)  # e^-x < 2^-28: x itself, +inf and the largest floats too
    out = select(x < -110.0, f32(-0.0), out)  # |x| e^x < 2^-151
    out = select(eq(x, float("-inf")), f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


@float32_only
def mish(x: Value) -> Value:
    """Mish, x * tanh(softplus(x)), from one exp of -|x|.

    With t = sigmoid(-|x|) (sigmoid's quotient, <= 1/2): e^(-2 softplus(x)) = sigmoid(-x)^2, so
    tanh(softplus(x)) = (1 - u^2) / (1 + u^2) with u = sigmoid(-x), which is 1 - t for x <= 0 and
    t for x > 0. For x <= 0 the numerator is t * (2 - t), kept relative to the small t (and its
    2^k apart, so a subnormal result is rounded once at the end); the denominators lie in [1, 2].
    Precision: ≤ 2 ulp of the correctly rounded result (measured worst case 1 ulp on every
    61st float32, both signs): x times an unrounded quotient of double-floats, two roundings;
    where the result is subnormal (x below about -87) the ulp is the absolute 2^-149; below
    -110 it is -0.
    Special values: mish(-inf) = NaN (-inf * 0, as PyTorch), mish(+inf) = +inf, x > 20 gives
    x; a NaN comes back quieted.

    Example: ``y = mish(x)``.
    """
    p, c, _, first = _logistic(-_abs(x))  # sigmoid(-|x|) = (p + c) * 2^k
    scale_k = first * 2.0**-40
    t_hi, t_lo = p * scale_k, c * scale_k  # t (exact unless subnormal, where it no longer matters)
    negative = x < 0.0
    # The numerator as a product of double-floats: x <= 0: 2^-k t * (2 - t); x > 0: (1 - t)(1 + t).
    # Then the denominator is 2 less the (scaled) numerator in both cases.
    m_hi, m_lo = fast_two_sum(f32(1.0), -t_hi)
    a_hi, a_lo = fast_two_sum(select(negative, p, m_hi), select(negative, c, m_lo - t_lo))
    b_hi, b_lo = fast_two_sum(select(negative, f32(2.0), f32(1.0)), select(negative, -t_hi, t_hi))
    b_lo = b_lo + select(negative, -t_lo, t_lo)
    n_hi, n_lo = fast_two_sum(*mul_dd(a_hi, a_lo, b_hi, b_lo))
    s = select(negative, scale_k, f32(1.0))
    d_hi, d_lo = fast_two_sum(f32(2.0), -(n_hi * s))
    q, r = quotient_short(n_hi, n_lo, d_hi, d_lo - n_lo * s)
    out = x * q + x * r
    out = select(negative, out * first * 2.0**-40, out)
    out = select(x > 20.0, x, out)  # 1 - tanh(softplus(x)) < 2^-56: x itself, +inf too
    out = select(x < -110.0, f32(-0.0), out)  # |x| e^x < 2^-151
    out = select(eq(x, float("-inf")), f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)


@float32_only
def tanh(x: Value) -> Value:
    """Hyperbolic tangent, as (1 - e^-2|x|) / (1 + e^-2|x|) with the sign of x.

    Precision: ≤ 2 ulp of the correctly rounded result for every input, relative accuracy
    included near the zero at 0 and for subnormal x (measured worst case 1 ulp, on every
    float32 with ``-m exhaustive``).
    Special values: tanh(±0) = ±0, tanh(±inf) = ±1, |x| > 9.011 gives ±1; a NaN comes back
    quieted.

    Example: ``y = tanh(x)``.
    """
    a = _abs(x)
    v = select(a < 9.5, a, f32(9.5)) * -2.0  # NaN too; tanh rounds to 1 from 9.011 on
    # e^v = (e_hi + e_lo) * 2^k, k in [-28, 0]. 1 - e^v keeps its relative accuracy near v = 0:
    # there k = 0, r = v exactly, and e^v's error is that of its r^2 term alone.
    k, p = round_and_pow2(v * LOG2E, f32(ROUNDER))
    # Q to 2^-33 (EXP_Q): where k = 0, 1 - e^v = -(r + r^2 Q) is the numerator, and 5 terms' 2^-28.2
    # of e^v would be a quarter ulp of it.
    e_hi, e_lo = fast_two_sum(*exp_parts_wide(v - k * LN2_HI, k * -LN2_HI_LO, EXP_Q))  # v - k*LN2_HI exact
    e_hi, e_lo = e_hi * p, e_lo * p  # exact: p = 2^k and e_hi >= 2^-29
    n_hi, n_lo = fast_two_sum(f32(1.0), -e_hi)
    n_hi, n_lo = fast_two_sum(n_hi, n_lo - e_lo)  # 1 - e^v, normalised
    d_hi, d_lo = fast_two_sum(f32(2.0), -n_hi)  # 1 + e^v = 2 - (1 - e^v), in [1, 2]
    out = _quotient(n_hi, n_lo, d_hi, d_lo - n_lo)
    # Below 2^-12, tanh(x) = x(1 - x^2/3 ...) is nearer x than half an ulp: x itself, subnormal x too.
    out = select(a < 2.0**-12, a, out)
    return select(isnan(x), quiet(x), _with_sign_of(out, x))


@float32_only
def softplus(x: Value, beta: float = 1.0, threshold: float = 20.0) -> Value:
    """PyTorch's softplus: x where x*beta > threshold, else log(1 + exp(x*beta)) / beta.

    Evaluated as (max(z, 0) + log1p(exp(-|z|))) / beta with z = x*beta kept exact (a
    double-float), all in double-float up to one final rounding; the threshold test uses
    x*beta rounded to float32, as PyTorch does. ``beta`` and ``threshold`` are Python numbers
    (rounded to float32, as PyTorch does).
    Precision: ≤ 2 ulp of the exact value of the formula (measured worst case 1 ulp; with
    |beta| outside [2^-64, 2^64] the division by beta adds one rounding).
    Special values: softplus(-inf) = 0, softplus(+inf) = +inf, never NaN for finite input;
    a NaN comes back quieted.
    Divergence from PyTorch: with beta != 1 PyTorch rounds x*beta before exp, which costs up
    to ~|x*beta| * 2^-24 relative (tens of ulp in the left tail); vkml does not round it.

    Example: ``y = softplus(x)`` or ``softplus(x, beta=2.0, threshold=10.0)``.
    """
    beta32 = float(np.float32(beta))
    if beta32 == 1.0:
        z_hi, z_lo = x, f32(0.0)
    else:
        z_hi, z_lo = two_prod(x, beta32)
        z_lo = select(_abs(z_hi) < 2.0**100, z_lo, f32(0.0))  # NaN-free where z is huge or inf
    positive = z_hi > 0.0
    v_hi = _clamp(select(positive, -z_hi, z_hi), -110.0, 0.0)  # -|z|; e^-110 underflows anyway
    v_lo = select(v_hi > -110.0, select(positive, -z_lo, z_lo), f32(0.0))
    e_hi, e_lo, pk = _exp_dd(v_hi, v_lo)
    l_hi, l_lo = log1p_dd(_scaled(e_hi, pk), _scaled(e_lo, pk))
    s_hi, s_lo = two_sum(select(positive, z_hi, f32(0.0)), l_hi)
    s_lo = s_lo + (l_lo + select(positive, z_lo, f32(0.0)))
    if beta32 == 1.0:
        out = s_hi + s_lo
    elif 2.0**-64 <= abs(beta32) <= 2.0**64:
        q, c = div_dd(s_hi, s_lo, f32(abs(beta32)), f32(0.0))
        out = q + c if beta32 > 0 else -(q + c)
    else:
        out = div(s_hi + s_lo, f32(beta32))
    out = select(z_hi > float(np.float32(threshold)), x, out)
    return select(isnan(x), quiet(x), out)


@float32_only
def erf(x: Value) -> Value:
    """The error function.

    Precision: ≤ 2 ulp of the correctly rounded result for every input (measured worst case
    1 ulp), relative accuracy included near the zero at 0; where the result is subnormal
    (|x| below about 1.04e-38) the ulp is the absolute 2^-149.
    Special values: erf(±0) = ±0, erf(±inf) = ±1, |x| >= 3.92 gives ±1; a NaN comes back
    quieted.

    Example: ``y = erf(x)``.
    """
    # |x| <= 0.75: x * P(x^2), the leading product exact. Tiny x is scaled up first so that
    # the product stays exact and a subnormal result is rounded once, by the final multiply.
    tiny = _abs(x) < 2.0**-60
    xs = select(tiny, x * 2.0**64, x)
    z2 = x * x
    p_hi, p_lo = two_prod(xs, ERF_SMALL[0][0])
    small = p_hi + (p_lo + xs * (ERF_SMALL[0][1] + z2 * horner(z2, ERF_SMALL[1])))
    small = select(tiny, small * 2.0**-64, small)
    # |x| > 0.75: 1 - erfc(|x|), erfc(z) = exp(-z^2) * U(2/(2+z)).
    z = _clamp(_abs(x), SMALL, 4.0)
    u_hi, u_lo = _tail_poly(z, ERFC_CENTER, ERFC_SCALED)
    q_hi, q_lo = two_prod(z, z)
    e_hi, e_lo, pk = _exp_dd(-q_hi, -q_lo)
    c_hi, c_lo = _mul_halves(e_hi, e_lo, u_hi, u_lo)
    h, l = fast_two_sum(f32(1.0), -_scaled(c_hi, pk))
    large = _with_sign_of(h + (l - _scaled(c_lo, pk)), x)
    out = select(_abs(x) <= SMALL, small, large)
    out = select(eq(x, 0.0), x, out)
    return select(isnan(x), quiet(x), out)


@float32_only
def gelu(x: Value) -> Value:
    """GELU, exact erf form: x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))).

    Precision: ≤ 2 ulp of the correctly rounded result for every input (measured worst case
    1 ulp, on every float32 of ±[0.125, 16) and every 61st float32), relative accuracy included
    near the zero at 0 and in the left tail, where PyTorch's 1 + erf(...) cancels; where the
    result is subnormal (x below about -13.2, or |x| below about 2.4e-38) the ulp is the absolute
    2^-149; below about -14.4 it is -0.
    Special values: gelu(±0) = ±0, gelu(+inf) = +inf; a NaN comes back quieted.
    Divergence from PyTorch: gelu(-inf) = -0.0 (the limit) and gelu(+inf) = +inf always;
    PyTorch gives NaN for -inf, and for +inf NaN or inf depending on the tensor length.
    gelu(x) = x up to the float32 maximum; PyTorch overflows to +inf for x > 2^127.

    Example: ``y = gelu(x)``.
    """
    # g = gelu(-a) = -a * Phi(-a) = -q * exp(-a^2/2) * K(a) with q = a/(2+a), for a = |x| <= 15
    # (gelu(-15) is far below the subnormal range); gelu(x) = g for x < 0, x + g for x > 0.
    a = select(_abs(x) < 15.0, _abs(x), f32(15.0))  # NaN too (restored at the end)
    # q normalised: K's higher terms take q_hi alone, and ``_mul_halves`` drops the product of the
    # low parts.
    q_hi, q_lo = fast_two_sum(*quotient_rough(a, None, *two_sum(a, f32(2.0))))  # q to 2^-29
    k_hi, k_lo = _minus_gelu_k(q_hi, q_lo)
    s_hi, s_lo = two_square(a)
    e_hi, e_lo, pk = _exp_dd(s_hi * -0.5, s_lo * -0.5)
    m_hi, m_lo = _mul_halves(e_hi, e_lo, k_hi, k_lo)
    g_hi, g_lo = _mul_halves(q_hi, q_lo, m_hi, m_lo)
    # g_hi + g_lo <= 0 (the product of q >= 0 and -exp(-a^2/2) K < 0), -0 where it underflows, so
    # the sign is right without a fix; zero x takes the branch below.
    out = _finish_gelu(x, g_hi, g_lo, pk, fix_sign=False)
    # |x| < 2^-60: x/2 correctly rounded (see ``_half_of_tiny``); the quotient's halves are not
    # exact for subnormal a.
    return select(_abs(x) < 2.0**-60, _half_of_tiny(x), out)


def _minus_gelu_k(q_hi: Value, q_lo: Value) -> tuple[Value, Value]:
    """-K(q) (GELU_K's polynomial, negated in its constants so that gelu(-a) comes out negative as
    ``_finish_gelu`` takes it) as an unnormalised pair, 1 + c1*q exact: c1's leading part times
    q_hi's 12-bit halves, and |c1 q| <= 0.53, so 1 + c1*q loses nothing to a fast_two_sum."""
    (c1_hi, c1_lo), rest = GELU_K
    qh, ql = halve(q_hi)
    hi, lo = fast_two_sum(f32(-1.0), qh * -c1_hi)
    higher = q_hi * q_hi * horner(q_hi, [-c for c in rest])
    return hi, lo + ((ql * -c1_hi + (q_lo * -c1_hi + q_hi * -c1_lo)) + higher)


def _half_of_tiny(x: Value) -> Value:
    """x/2 rounded correctly for |x| < 2^-60, where gelu(x) and gelu_tanh(x) are x * (1/2 + c*x + ...)
    with c > 0: the rest is far below half an ulp and positive, so a halfway x/2 (a subnormal) rounds
    up; integer operations on x's bits."""
    b = to_bits(x) & ABS_MASK
    halved = select(b < 0x01000000, (b + select(x > 0.0, u32(1), u32(0))) >> 1, b - 0x00800000)
    return _with_sign_of(from_bits(halved), x)


def _finish_gelu(x: Value, g_hi: Value, g_lo: Value, pk: Value, fix_sign: bool = True) -> Value:
    """Pick g * 2^k for x < 0, x + g * 2^k for x > 0 (pk as ``_scaled`` takes it); ``fix_sign``
    gives the result x's sign bit, zeros included (not needed where g_hi + g_lo <= 0 always and
    zero x is handled by the caller)."""
    negative = _scaled(g_hi + g_lo, pk)
    h, l = fast_two_sum(x, _scaled(g_hi, pk))  # |g| <= x/2 for x > 0 (x = inf is picked below)
    positive = h + (l + _scaled(g_lo, pk))
    out = select(x < 0.0, negative, select(eq(to_bits(x), INF_BITS), x, positive))  # inf + g would be NaN
    if fix_sign:
        out = _with_sign_of(_abs(out), x)  # x * Phi(x) has the sign of x, zeros included
    return select(isnan(x), quiet(x), out)


@float32_only
def gelu_tanh(x: Value) -> Value:
    """GELU, tanh approximation (PyTorch approximate='tanh'):
    0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), evaluated as x * sigmoid(v) with
    v = 2*sqrt(2/pi)*(x + 0.044715*x^3) formed as a double-float.

    Precision: ≤ 2 ulp of the correctly rounded value of PyTorch's formula for every input
    (measured worst case 1 ulp), relative accuracy included near the zero at 0 and in the
    left tail, where 1 + tanh(...) cancels; where the result is subnormal (x below about
    -10.0, or |x| below about 2.4e-38) the ulp is the absolute 2^-149; below about -10.6 it
    is -0.
    Special values: gelu_tanh(±0) = ±0, gelu_tanh(+inf) = +inf; a NaN comes back quieted.
    Divergence from PyTorch: gelu_tanh(-inf) = -0.0 (the limit); PyTorch gives NaN.

    Example: ``y = gelu_tanh(x)``.
    """
    w = _clamp(-_abs(x), -11.0, 0.0)  # g = gelu_tanh(w) <= 0; beyond -11 it underflows to -0
    q_hi, q_lo = two_prod(w, w)
    b_hi, b_lo = mul_dd_const(q_hi, q_lo, *GELU_TANH_B)
    c_hi, c_lo = two_sum(f32(GELU_TANH_A[0]), b_hi)
    v_hi, v_lo = mul_dd_f(c_hi, c_lo + (b_lo + GELU_TANH_A[1]), w)
    v_lo = select(v_hi > -110.0, v_lo, f32(0.0))
    v_hi = select(v_hi > -110.0, v_hi, f32(-110.0))
    e_hi, e_lo, pk = _exp_dd(v_hi, v_lo)
    n_hi, n_lo = mul_dd_f(e_hi, e_lo, w)
    q, c = _logistic_fraction(n_hi, n_lo, e_hi, e_lo, pk)
    out = _finish_gelu(x, q, c, pk)
    # |x| < 2^-60: x * (1/2 + 0.4x + ...) is x/2 rounded up (the rest is far below half an ulp and
    # positive, x^2 * 0.4), which only a subnormal x/2 can need: halve x's bits with integer ops,
    # where the quotient's 12-bit halves would not be exact.
    return select(_abs(x) < 2.0**-60, _half_of_tiny(x), out)
