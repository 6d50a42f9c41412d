"""erfc and erfinv, double-float evaluation rounded once.

erfc: 1 - erf(x) for |x| <= 0.75 (erf's polynomial kept as a double-float, so the difference is
rounded once); beyond, erfc(z) = exp(-z^2) * U(2/(2+z)) with exp(-z^2) from the exactly formed
z^2, U one of two fits (erf's on [0.75, 3] and one on [3, 10.125], where erfc underflows), and the
scaling by 2^k done in exact steps so subnormal results are rounded once; erfc(-z) = 2 - erfc(z).

erfinv: x * P(x^2) for |x| <= 0.75; beyond, a polynomial in t = sqrt(-log(1 - |x|)) (1 - |x| is
exact there, the logarithm and the root are double-floats) on two pieces of t in [1.17, 4.1],
which covers every float32 below 1. Coefficients: near-minimax fits (Lawson's iteration), the
constant term a float32 pair, the others rounded to float32 one at a time.
"""

from __future__ import annotations

from ...ir.builder import eq, isnan, select
from ...ir.core import Value
from .bits import DEFAULT_NAN_BITS, f32, f32_bits, float32_only, quiet
from .dd import fast_two_sum, horner, mul_dd, mul_dd_f, two_prod, two_sum
from .explog import LN2_HI, LN2_HI_LO, log_parts
from .special import ERF_SMALL, ERFC_CENTER, ERFC_SCALED, _abs, _clamp, _exp_dd, _scaled, _tail_poly, _with_sign_of
from .trig import sqrt_dd


def _hex(*values: str) -> list[float]:
    return [float.fromhex(v) for v in values]


# erfc(z) * exp(z^2) in u = 2/(2+z) - ERFC_FAR_CENTER on 3 <= z <= 10.125 (fitted on [2.9, 10.15]; 2^-30.8)
ERFC_FAR_CENTER = float.fromhex("0x1.25426ap-2")
ERFC_FAR = (
    _hex("0x1.c6e2bap-4", "-0x1.cebebep-30"),
    _hex(
        "0x1.0c024ep-1",
        "0x1.31bc2ap-1",
        "0x1.fd4696p-2",
        "0x1.cdfd40p-3",
        "-0x1.03852ep-4",
        "-0x1.3cbccap-3",
        "-0x1.815158p-6",
    ),
)
# erfinv(x) / x in x^2 on |x| <= 0.75 (relative error 2^-27)
ERFINV_CENTRAL = (
    _hex("0x1.c5bf88p-1", "0x1.d5742ap-26"),
    _hex(
        "0x1.db2afcp-3",
        "0x1.05043cp-3",
        "0x1.6be7e8p-4",
        "0x1.496586p-5",
        "0x1.9f7888p-3",
        "-0x1.02c1d4p-1",
        "0x1.37772ep+0",
        "-0x1.61d1e2p+0",
        "0x1.9150f6p-1",
    ),
)
# erfinv(1 - exp(-t^2)) in u = t - center, on t in [1.17, 2.4] (2^-30.8) and [2.4, 4.1] (2^-32.2)
ERFINV_NEAR_CENTER = float.fromhex("0x1.c8f5c2p+0")
ERFINV_NEAR = (
    _hex("0x1.71521ep+0", "-0x1.4328e0p-31"),
    _hex(
        "0x1.0c45a6p+0",
        "0x1.dbe166p-8",
        "-0x1.af9274p-7",
        "0x1.2f1116p-7",
        "-0x1.4d9390p-8",
        "0x1.3d08a2p-9",
        "-0x1.097f9cp-10",
        "0x1.7aa0a6p-12",
        "-0x1.575ed6p-14",
    ),
)
ERFINV_FAR_CENTER = float.fromhex("0x1.ap+1")
ERFINV_FAR = (
    _hex("0x1.7cc842p+1", "-0x1.9d4494p-25"),
    _hex(
        "0x1.0a0012p+0",
        "-0x1.5a2fb4p-8",
        "0x1.551a9ap-12",
        "0x1.66f43ep-13",
        "-0x1.ccf090p-14",
        "0x1.73c32cp-15",
        "-0x1.e911d0p-17",
        "0x1.8e5ab8p-18",
        "-0x1.42d2b8p-19",
    ),
)
SMALL = 0.75


def _pick(cond: Value, a: list[float], b: list[float]) -> list[Value]:
    return [select(cond, f32(p), f32(q)) for p, q in zip(a, b)]


@float32_only
def erfc(x: Value) -> Value:
    """The complementary error function 1 - erf(x), accurate in the right tail.

    Precision: ≤ 1 ulp of the correctly rounded result for every input (measured worst case
    0.85 ulp); where the result is subnormal (x above about 9.1) the ulp is the absolute 2^-149.
    Special values: erfc(±0) = 1, erfc(-inf) = 2, erfc(+inf) = 0, x above 10.06 gives 0; a NaN
    comes back quieted.

    Example: ``y = erfc(x)``.
    """
    # |x| <= 0.75: erf(x) = x * (c0 + z R(z)), z = x^2, as a double-float (R's leading term too: with
    # R rounded, 1 - erf would be 1.4 ulp off near 0.75), then 1 - erf rounded once.
    (c0_hi, c0_lo), rest = ERF_SMALL
    z_hi, z_lo = two_prod(x, x)
    r_hi, r_lo = two_sum(f32(rest[0]), z_hi * horner(z_hi, rest[1:]))
    t_hi, t_lo = mul_dd(z_hi, z_lo, r_hi, r_lo)
    s_hi, s_lo = two_sum(f32(c0_hi), t_hi)
    e_hi, e_lo = mul_dd_f(s_hi, s_lo + (c0_lo + t_lo), x)
    h, l = two_sum(f32(1.0), -e_hi)
    small = h + (l - e_lo)
    z = _clamp(_abs(x), SMALL, 10.125)
    near = z <= 3.0
    n_hi, n_lo = _tail_poly(z, ERFC_CENTER, ERFC_SCALED)
    f_hi, f_lo = _tail_poly(z, ERFC_FAR_CENTER, ERFC_FAR)
    u_hi, u_lo = select(near, n_hi, f_hi), select(near, n_lo, f_lo)
    q_hi, q_lo = two_prod(z, z)
    e_hi, e_lo, pk = _exp_dd(-q_hi, -q_lo)
    c_hi, c_lo = mul_dd(e_hi, e_lo, u_hi, u_lo)
    c_hi, c_lo = fast_two_sum(c_hi, c_lo)
    right = _scaled(c_hi + c_lo, pk)
    s_hi, s_lo = _scaled(c_hi, pk), _scaled(c_lo, pk)
    h, l = fast_two_sum(f32(2.0), -s_hi)
    left = h + (l - s_lo)
    out = select(_abs(x) <= SMALL, small, select(x < 0.0, left, right))
    return select(isnan(x), quiet(x), out)


@float32_only
def erfinv(x: Value) -> Value:
    """The inverse error function, for |x| <= 1.

    Precision: ≤ 1 ulp of the correctly rounded result for every input in (-1, 1) (measured
    worst case 0.77 ulp), relative accuracy included near 0 and for subnormal inputs.
    Special values: erfinv(±0) = ±0, erfinv(±1) = ±inf, |x| > 1 gives NaN; a NaN comes back quieted.

    Example: ``y = erfinv(x)``.
    """
    a = _abs(x)
    # |x| <= 0.75: x * (c0 + w R(w)), w = x^2, as a double-float; tiny x is scaled up so the product
    # stays exact.
    (c0_hi, c0_lo), rest = ERFINV_CENTRAL
    tiny = a < 2.0**-60
    xs = select(tiny, a * 2.0**64, a)
    w_hi, w_lo = two_prod(a, a)
    r_hi, r_lo = two_sum(f32(rest[0]), w_hi * horner(w_hi, rest[1:]))
    t_hi, t_lo = mul_dd(w_hi, w_lo, r_hi, r_lo)
    s_hi, s_lo = two_sum(f32(c0_hi), t_hi)
    p_hi, p_lo = mul_dd_f(s_hi, s_lo + (c0_lo + t_lo), xs)
    central = p_hi + p_lo
    central = select(tiny, central * 2.0**-64, central)
    # |x| > 0.75: t = sqrt(-log(1 - |x|)), 1 - |x| exact (Sterbenz).
    d = select((a > SMALL) & (a < 1.0), 1.0 - a, f32(0.25))
    e, hi, lo = log_parts(d)
    s_hi, s_lo = two_sum(e * LN2_HI, hi)
    l_hi, l_lo = fast_two_sum(s_hi, s_lo + (lo + e * LN2_HI_LO))
    t_hi, t_lo = sqrt_dd(-l_hi, -l_lo)
    near = t_hi < 2.3984375
    center = select(near, f32(ERFINV_NEAR_CENTER), f32(ERFINV_FAR_CENTER))
    c0 = _pick(near, ERFINV_NEAR[0], ERFINV_FAR[0])
    coeffs = _pick(near, ERFINV_NEAR[1], ERFINV_FAR[1])
    u_hi, u_lo = t_hi - center, t_lo  # exact (Sterbenz)
    acc = coeffs[-1]
    for c in reversed(coeffs[1:-1]):
        acc = acc * u_hi + c
    q_hi, q_lo = two_prod(coeffs[0], u_hi)
    g_hi, g_lo = two_sum(c0[0], q_hi)
    far = g_hi + (g_lo + (q_lo + coeffs[0] * u_lo + c0[1] + u_hi * u_hi * acc))
    out = select(a <= SMALL, central, far)
    out = select(eq(a, 1.0), f32(float("inf")), out)
    out = _with_sign_of(out, x)
    out = select(a > 1.0, f32_bits(DEFAULT_NAN_BITS), out)
    return select(isnan(x), quiet(x), out)
