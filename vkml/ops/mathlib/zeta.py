"""The Hurwitz zeta function and polygamma(n, x) for n >= 2, double-float evaluation rounded once.

zeta(s, q) = sum_{k >= 0} (q + k)^-s. For q > 0 the terms below y = TERMS are summed directly and the
rest by the Euler-Maclaurin formula at y = q + N >= max(TERMS, s) (Cephes' method, which PyTorch uses):
y^(1-s)/(s-1) + y^-s (1/2 + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) y^(1-2j)). Every term is formed as
e^(l - E ln2) from its logarithm l = log(c) - s log(q + k) (c = n! for polygamma) as a double-float,
E one exponent shared by the sum (the largest term's), so no term overflows or underflows before the
sum is scaled by 2^E and rounded once. For q < 0 (s an integer) with f = q - floor(q) in (0, 1):
zeta(s, q) = zeta(s, f) + (-1)^s (zeta(s, 1 - f) - zeta(s, 1 - q)), the sum over all integers folded
back onto positive arguments (no loop of |q| steps, as Cephes' direct sum takes). The direct terms and
the three evaluations are IR loops, so the kernel holds one copy of each (lavapipe compiles it in
seconds, the CPU interpreter runs it in a fraction of one).
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np

from ...ir.builder import ceil, eq, floor, isnan, loop, select
from ...ir.core import Value
from .bits import DEFAULT_NAN_BITS, f32, f32_bits, float32_only, i32, pow2, quiet, round_to_int
from .dd import div_dd, fast_two_sum, horner, mul_dd, mul_dd_f, recip, scale, two_sum
from .explog import LN2_HI, LN2_HI_LO, LOG2E, log_parts, reduce_exp

TERMS = 16  # direct terms below y = max(TERMS, s): the Euler-Maclaurin tail then converges to 2^-32
MAX_TERMS = 256  # ... up to s = MAX_TERMS; above it the tail converges more slowly
BERNOULLI_TERMS = 12
DD_BRACKET = 2  # Euler-Maclaurin terms summed in double-float; the smaller rest in float32
DD = tuple[Value, Value]


def _bernoulli(count: int) -> list[Fraction]:
    """B_0 ... B_count, exact, by the recurrence sum_{k <= m} C(m+1, k) B_k = 0."""
    b = [Fraction(1)]
    for m in range(1, count + 1):
        acc, c = Fraction(0), 1
        for k in range(m):
            acc += c * b[k]
            c = c * (m + 1 - k) // (k + 1)
        b.append(-acc / (m + 1))
    return b


def _pair(value: Fraction) -> tuple[float, float]:
    """A rational as a float32 pair hi + lo (hi the nearest float32, lo the nearest to the rest)."""
    hi = float(np.float32(float(value)))
    return hi, float(np.float32(float(value - Fraction(hi))))


_B = _bernoulli(2 * BERNOULLI_TERMS)
_FACTORIAL = [1]
for _i in range(1, 2 * BERNOULLI_TERMS + 1):
    _FACTORIAL.append(_FACTORIAL[-1] * _i)
# B_2j / (2j)! as float32 pairs, j = 1 .. BERNOULLI_TERMS
EULER_MACLAURIN = [_pair(_B[2 * j] / _FACTORIAL[2 * j]) for j in range(1, BERNOULLI_TERMS + 1)]
# exp(r) = sum r^k / k!: 1/k! for k = 2 .. 5 as float32 pairs (double-float Horner steps), k = 6 .. 13
# as float32 (their terms are below 2^-19 for |r| <= 0.36, so float32 rounding costs 2^-43 at most)
EXP_DD = [_pair(Fraction(1, _FACTORIAL[k])) for k in range(2, 6)]
EXP_TAIL = [float(np.float32(1.0 / _FACTORIAL[k])) for k in range(6, 14)]


_PI_40 = decimal.Decimal("3.141592653589793238462643383279502884197")


def log_factorial(n: int) -> tuple[float, float]:
    """log(n!) as a float32 pair hi + lo (to about 2^-48 relative): exact n! for n <= 300, else Stirling's
    series n log n - n + log(2 pi n)/2 + 1/(12n) - 1/(360n^3) + 1/(1260n^5), 40 digits either way."""
    ctx = decimal.Context(prec=40)
    if n <= 300:
        value = ctx.ln(decimal.Decimal(math.factorial(n)))
    else:
        d = decimal.Decimal(n)
        value = ctx.subtract(ctx.multiply(d, ctx.ln(d)), d)
        value = ctx.add(value, ctx.divide(ctx.ln(ctx.multiply(2 * _PI_40, d)), 2))
        for k, c in ((1, 12), (3, -360), (5, 1260)):
            value = ctx.add(value, ctx.divide(1, c * d**k))
    hi = float(np.float32(float(value)))
    return hi, float(np.float32(float(value - decimal.Decimal(hi))))


def _add(a: DD, b: DD) -> DD:
    h, e = two_sum(a[0], b[0])
    return fast_two_sum(h, e + (a[1] + b[1]))


def _mul(a: DD, b: DD) -> DD:
    return fast_two_sum(*mul_dd(a[0], a[1], b[0], b[1]))


def _log_dd(y: DD) -> DD:
    """log(y) for a positive finite double-float (a subnormal hi included), to about 2^-40 relative."""
    hi, lo = y
    e, l_hi, l_lo = log_parts(hi)
    normal = (hi > 2.0**-100) & (hi < 2.0**100)
    ratio = lo * recip(select(normal, hi, f32(1.0)))  # lo is 0 outside that range (see the callers)
    s_hi, s_lo = two_sum(e * LN2_HI, l_hi)
    return fast_two_sum(s_hi, s_lo + (l_lo + e * LN2_HI_LO + select(normal, ratio, f32(0.0))))


def _exp_small(r: DD) -> DD:
    """exp(r) for a double-float |r| <= 0.36 to about 2^-44 relative: its Taylor series, the terms from
    r^6 on in float32, the rest in double-float Horner steps (exp_parts is 2^-27, too coarse for sums that
    cancel)."""
    p = (horner(r[0], EXP_TAIL), f32(0.0))  # sum_{k >= 6} r^(k-6) / k!
    for c_hi, c_lo in reversed(EXP_DD):
        p = _add(_mul(p, r), (f32(c_hi), f32(c_lo)))
    p = _add(_mul(p, r), (f32(1.0), f32(0.0)))  # 1 + r/2! + ... : times r, plus 1 twice more
    return _add(_mul(p, r), (f32(1.0), f32(0.0)))


def _exp_rel(l: DD, e_f: Value) -> DD:
    """e^(l - E ln2) as a double-float, E = e_f a float32 integer in [-200, 200]. A term more than e^20
    above the reference only occurs where the reference was clamped (the result overflows), one below
    e^-80 is far below the sum's rounding: both are clamped there."""
    t, t_err = two_sum(l[0], e_f * -LN2_HI)  # E LN2_HI is exact (15 bits times |E| < 2^9)
    v_hi, v_lo = fast_two_sum(t, t_err + (l[1] - e_f * LN2_HI_LO))
    out = (v_hi < -80.0) | (v_hi > 20.0)
    v_hi = select(v_hi < -80.0, f32(-80.0), select(v_hi > 20.0, f32(20.0), v_hi))
    v_lo = select(out, f32(0.0), v_lo)
    k, r_hi, r_lo = reduce_exp(v_hi, v_lo)
    e_hi, e_lo = _exp_small((r_hi, r_lo))
    p = pow2(k)
    return e_hi * p, e_lo * p


def _term_log(s: Value, y: DD, logc: DD) -> DD:
    """log(c y^-s) = log(c) - s log(y)."""
    lg = _log_dd(y)
    return _add(logc, fast_two_sum(*mul_dd_f(lg[0], lg[1], -s)))


def _positive(s: Value, q: DD, logc: DD) -> tuple[Value, Value, Value]:
    """c zeta(s, q) = (hi + lo) 2^E for 1 < s < inf and a positive finite double-float q: (hi, lo, E int32)."""
    # the direct terms: y = q + n >= m (to rounding), m = s clamped to [TERMS, MAX_TERMS], so that the
    # Euler-Maclaurin terms fall by ((s + 2j) / (2 pi y))^2 < 1/6 a step
    m, m_int = round_to_int(select(s < TERMS, f32(TERMS), select(s > MAX_TERMS, f32(MAX_TERMS), ceil(s))))
    n = select(q[0] < m, ceil(m - q[0]), f32(0.0))
    y_hi, y_err = two_sum(q[0], n)
    y = fast_two_sum(y_hi, y_err + q[1])
    lg = _log_dd(y)
    l_b = _add(logc, fast_two_sum(*mul_dd_f(lg[0], lg[1], -s)))  # log(c y^-s)
    l_a = _add(_add(logc, _mul(lg, two_sum(f32(1.0), -s))), _neg(_log_dd(two_sum(s, f32(-1.0)))))
    # the Euler-Maclaurin bracket 1/2 + sum_j B_2j/(2j)! u_j, u_j = s(s+1)...(s+2j-2) y^(1-2j)
    huge = y[0] > 2.0**100  # there the corrections are below 2^-96 of 1/2 (and div_dd needs y < 2^100)
    r = fast_two_sum(*div_dd(f32(1.0), f32(0.0), select(huge, f32(2.0**100), y[0]), select(huge, f32(0.0), y[1])))
    r2 = _mul(r, r)
    # (the terms from j = 3 on are below 2^-10 of the bracket for y >= max(16, s): float32 suffices there)
    s_b = select(s > 4.0 * MAX_TERMS, f32(4.0 * MAX_TERMS), s)  # beyond the bound: kept finite only
    u = _mul((s_b, f32(0.0)), r)
    bracket = (f32(0.5), f32(0.0))
    for j in range(1, DD_BRACKET + 1):
        bracket = _add(bracket, _mul(u, (f32(EULER_MACLAURIN[j - 1][0]), f32(EULER_MACLAURIN[j - 1][1]))))
        u = _mul(_mul(u, two_sum(s_b, f32(2.0 * j - 1.0))), _mul(two_sum(s_b, f32(2.0 * j)), r2))
    u_f, small = u[0], []
    for j in range(DD_BRACKET + 1, BERNOULLI_TERMS + 1):
        small.append(u_f * EULER_MACLAURIN[j - 1][0])
        u_f = u_f * ((s_b + (2.0 * j - 1.0)) * (s_b + 2.0 * j)) * r2[0]
    rest = f32(0.0)
    for t in reversed(small):  # smallest first
        rest = rest + t
    bracket = _add(bracket, (rest, f32(0.0)))
    # the shared exponent: the largest term's, the first direct one's when there is one
    l_0 = _term_log(s, (select(q[0] > 0.0, q[0], f32(1.0)), q[1]), logc)
    ref = select(l_a[0] > l_b[0], l_a[0], l_b[0])
    ref = select((n > 0.0) & (l_0[0] > ref), l_0[0], ref)
    ref = select(ref > 138.0, f32(138.0), select(ref < -138.0, f32(-138.0), ref))  # 2^+-200: inf or 0 anyway
    e_f, e_int = round_to_int(ref * LOG2E)
    total = _add(_exp_rel(l_a, e_f), _mul(_exp_rel(l_b, e_f), bracket))

    def direct(_, k, acc_hi, acc_lo):  # the loop runs m times; k counts as a float
        t_hi, t_err = two_sum(q[0], k)
        t = _exp_rel(_term_log(s, fast_two_sum(t_hi, t_err + q[1]), logc), e_f)
        use = k < n
        acc = _add((acc_hi, acc_lo), (select(use, t[0], f32(0.0)), select(use, t[1], f32(0.0))))
        return k + 1.0, acc[0], acc[1]

    _, d_hi, d_lo = loop(i32(0), m_int, i32(1), (f32(0.0), f32(0.0), f32(0.0)), direct)
    total = _add((d_hi, d_lo), total)  # the direct terms are the larger ones: add them first
    return total[0], total[1], e_int


def _neg(a: DD) -> DD:
    return -a[0], -a[1]


def hurwitz(s: Value, q: Value, logc: DD | None = None) -> Value:
    """c zeta(s, q) rounded once (c = e^logc, logc a double-float) for float32 s > 1 and q; q a
    non-positive integer gives +inf (a pole), q < 0 needs an integer s (callers check). See ``zeta``."""
    logc = (f32(0.0), f32(0.0)) if logc is None else logc
    pos = (q > 0.0) & (q < float("inf"))
    f = two_sum(q, -floor(q))  # exact, in (0, 1) for a non-integer q < 0
    neg = (q < 0.0) & (f[0] > 0.0)
    # s above 2^100 gives the same result as 2^100 (q^-s is inf, 1 or 0) and keeps Dekker's products finite
    s_ok = select((s > 1.0) & (s < float("inf")), select(s > 2.0**100, f32(2.0**100), s), f32(2.0))
    half = s_ok * 0.5
    sign = select(eq(floor(half), half), f32(1.0), f32(-1.0))  # (-1)^s for an integer s
    # the three arguments (q > 0: q, then two evaluations weighted 0) and their weights
    f_hi, f_lo = select(neg, f[0], f32(0.5)), select(neg, f[1], f32(0.0))
    args = (
        (select(pos, q, f_hi), select(pos, f32(0.0), f_lo)),
        _add(two_sum(f32(1.0), -f_hi), (-f_lo, f32(0.0))),
        two_sum(f32(1.0), -select(neg, q, f32(-0.5))),
    )
    weights = (f32(1.0), select(neg, sign, f32(0.0)), select(neg, -sign, f32(0.0)))

    def evaluation(j, acc_hi, acc_lo, acc_e):
        first, second = eq(j, 0), eq(j, 1)
        a_hi = select(first, args[0][0], select(second, args[1][0], args[2][0]))
        a_lo = select(first, args[0][1], select(second, args[1][1], args[2][1]))
        w = select(first, weights[0], select(second, weights[1], weights[2]))
        h, l, e = _positive(s_ok, (a_hi, a_lo), logc)
        e_new = select(eq(w, 0.0) | (e < acc_e), acc_e, e)

        def rescaled(x_hi, x_lo, x_e):
            d = x_e - e_new  # <= 0 but for an evaluation weighted 0, dropped below
            p = pow2(select(d < -120, i32(-120), select(d > 0, i32(0), d)))
            return x_hi * p, x_lo * p

        t = rescaled(h, l, e)
        skip = eq(w, 0.0)  # its value may be inf or NaN: never multiply it by 0
        t = (select(skip, f32(0.0), t[0] * w), select(skip, f32(0.0), t[1] * w))
        total = _add(rescaled(acc_hi, acc_lo, acc_e), t)
        return total[0], total[1], e_new

    acc_hi, acc_lo, acc_e = loop(0, 3, 1, (f32(0.0), f32(0.0), i32(-300)), evaluation)
    out = scale(acc_hi + acc_lo, select(acc_e < -200, i32(-200), acc_e))
    return select(pos | neg, out, f32(float("inf")))


@float32_only
def zeta(s: Value, q: Value) -> Value:
    """The Hurwitz zeta function zeta(s, q) = sum_{k >= 0} (q + k)^-s (PyTorch's special.zeta(x, q)).

    Precision: for q > 0 and 1 < s <= 256, ≤ 1 ulp of the correctly rounded result (measured worst case
    0.51 ulp, 0.74 for subnormal results; the terms are double-floats accurate to about 2^-37); for q < 0
    (s an integer) the folding may cancel where the result is near zero: ≤ 1 ulp plus 2^-36 times the
    largest term |q - round(q)|^-s (measured within 0.5 ulp). Above s = 256 the Euler-Maclaurin tail
    converges more slowly and the error grows.
    Special values (Cephes', as PyTorch): s = 1 gives inf, s < 1 NaN, q a non-positive integer inf,
    q < 0 with a non-integer s NaN, q = ±inf or s = +inf NaN; a NaN comes back quieted.

    Example: ``y = zeta(s, q)``.
    """
    out = hurwitz(s, q)
    nan = f32_bits(DEFAULT_NAN_BITS)
    out = select((q < 0.0) & ~eq(floor(q), q) & ~eq(floor(s), s), nan, out)
    out = select(eq(s, 1.0), f32(float("inf")), select(s < 1.0, nan, out))
    out = select(eq(q, float("inf")) | eq(q, float("-inf")) | eq(s, float("inf")), nan, out)
    return select(isnan(s), quiet(s), select(isnan(q), quiet(q), out))


@float32_only
def polygamma(x: Value, s: Value, logc_hi: Value, logc_lo: Value) -> Value:
    """polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 2, given s = n + 1 and log(n!) = logc_hi + logc_lo.

    Precision: for x > 0 and n <= 255, ≤ 1 ulp of the correctly rounded result (measured worst case
    0.51 ulp); for x < 0, ≤ 1 ulp plus 2^-36 times the largest term n!/|x - round(x)|^(n+1) (the folding
    of ``zeta`` may cancel near the zeros of the even orders; measured within 0.5 ulp).
    Special values (as PyTorch): ±0 and the negative integers (the poles) give (-1)^(n+1) inf, +inf
    gives NaN, -inf gives (-1)^(n+1) inf; a NaN comes back quieted.

    Example: ``y = polygamma(x, f32(3.0), f32(0.6931472), f32(-1.9046e-09))`` (n = 2).
    """
    half = s * 0.5
    sign = select(eq(floor(half), half), f32(1.0), f32(-1.0))  # (-1)^(n+1)
    out = hurwitz(s, x, (logc_hi, logc_lo)) * sign
    out = select(eq(x, float("inf")), f32_bits(DEFAULT_NAN_BITS), out)
    out = select(eq(x, float("-inf")), sign * float("inf"), out)
    return select(isnan(x), quiet(x), out)
