"""Double-float ("dd") arithmetic on float32 pairs, for the steps where one rounding is too many.

A dd value is an unevaluated sum ``hi + lo`` of two float32 values. Without a fused
multiply-add, exact products come from Dekker's splitting: ``split`` cuts a float32 into two
12-bit halves whose pairwise products are exact, so ``two_prod`` returns a*b exactly as a
pair (barring overflow, or underflow below 2^-100, which callers keep away from). ``two_sum``
returns a+b exactly (Knuth). All of these rely on every float operation being rounded once,
to nearest even, with no contraction into FMA: the IR's primitives promise exactly that.
"""

from __future__ import annotations

from ...ir.core import Value
from .bits import f32, from_bits, pow2, to_bits


def two_sum(a: Value, b: Value) -> tuple[Value, Value]:
    """(s, e) with s = fl(a + b) and s + e = a + b exactly, whatever the magnitudes."""
    s = a + b
    b_virtual = s - a
    a_virtual = s - b_virtual
    return s, (a - a_virtual) + (b - b_virtual)


def fast_two_sum(a: Value, b: Value) -> tuple[Value, Value]:
    """(s, e) with s + e = a + b exactly; requires |a| >= |b| (or a == 0)."""
    s = a + b
    return s, b - (s - a)


def split(a: Value) -> tuple[Value, Value]:
    """Veltkamp's split: a = hi + lo with 12 significant bits each (|a| < 2^115)."""
    c = a * 4097.0  # 2^12 + 1
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: Value, b: Value) -> tuple[Value, Value]:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker)."""
    p = a * b
    a_hi, a_lo = split(a)
    b_hi, b_lo = split(b)
    err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return p, err


def mul_dd_f(a_hi: Value, a_lo: Value, b: Value) -> tuple[Value, Value]:
    """(a_hi + a_lo) * b as an unnormalised dd (relative error about 2^-44)."""
    p, e = two_prod(a_hi, b)
    return p, e + a_lo * b


def mul_dd(a_hi: Value, a_lo: Value, b_hi: Value, b_lo: Value) -> tuple[Value, Value]:
    """(a_hi + a_lo) * (b_hi + b_lo) as an unnormalised dd (relative error about 2^-44)."""
    p, e = two_prod(a_hi, b_hi)
    return p, e + (a_hi * b_lo + a_lo * b_hi)


def mul_dd_const(a_hi: Value, a_lo: Value, c_hi: float, c_lo: float) -> tuple[Value, Value]:
    """(a_hi + a_lo) * (c_hi + c_lo) for a constant given as a float32 pair."""
    p, e = two_prod(a_hi, f32(c_hi))
    return p, e + (a_hi * c_lo + a_lo * c_hi)


def horner(x: Value, coeffs) -> Value:
    """c0 + x*(c1 + x*(c2 + ...)) in float32; coefficients are float32-exact Python floats."""
    acc = f32(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = acc * x + c
    return acc


def recip(d: Value) -> Value:
    """1/d within about 0.5 ulp, for a positive normal d below 2^100 (not correctly rounded).

    A bit-pattern seed (error < 12%), two Newton steps, then one step whose residual
    1 - d*y is computed exactly.
    """
    y = from_bits(0x7EF311C3 - to_bits(d))
    for _ in range(2):
        y = y * (2.0 - d * y)
    p, e = two_prod(d, y)
    residual = (1.0 - p) - e
    return y + y * residual


def div_dd(n_hi: Value, n_lo: Value, d_hi: Value, d_lo: Value) -> tuple[Value, Value]:
    """(n_hi + n_lo) / (d_hi + d_lo) as a dd (q, c) with q + c accurate to about 2^-44 relative.

    Needs d_hi positive normal below 2^100 and n_hi/d_hi not far from the normal range.
    """
    r = recip(d_hi)
    q = n_hi * r
    p, e = two_prod(q, d_hi)
    residual = (((n_hi - p) - e) + n_lo) - q * d_lo
    return q, residual * r


def scale(x: Value, k: Value) -> Value:
    """x * 2^k for an int32 k in [-200, 200] and |x| in [2^-30, 4]: the first multiplication
    is exact, so a subnormal or overflowing result is rounded only once."""
    k1 = k >> 1
    return x * pow2(k1) * pow2(k - k1)
