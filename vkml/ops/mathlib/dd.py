"""Double-float ("dd") arithmetic on float32 pairs, for the steps where one rounding is too many.

A dd value is an unevaluated sum ``hi + lo`` of two float32 values. Without a fused
multiply-add, exact products come from Dekker's splitting: ``split`` cuts a float32 into two
12-bit halves whose pairwise products are exact, so ``two_prod`` returns a*b exactly as a
pair (barring overflow, or underflow below 2^-100, which callers keep away from). ``two_sum``
returns a+b exactly (Knuth). All of these rely on every float operation being rounded once,
to nearest even, with no contraction into FMA: the IR's primitives promise exactly that.
"""

from __future__ import annotations

import numpy as np

from ...ir.core import Value
from .bits import f32, from_bits, pow2, to_bits, u32


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


def split(a: Value | float) -> tuple[Value, Value]:
    """a = hi + lo exactly with at most 12 significant bits each, so the products of parts are exact.

    A value is cut by ``halve`` (one integer and, one subtraction; Veltkamp's a * (2^12 + 1)
    takes four float operations and overflows above 2^115). A float32-exact Python float is
    split here by Veltkamp, in numpy float32 (the same roundings as the IR's), so a constant
    costs no instructions. Either way two_prod's p + err is a*b exactly: its bits do not
    depend on the split.
    """
    if isinstance(a, float):
        v = np.float32(a)
        c = v * np.float32(4097.0)
        hi = c - (c - v)
        return f32(float(hi)), f32(float(v - hi))
    return halve(a)


def two_prod(a: Value | float, b: Value | float) -> tuple[Value, Value]:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker). One operand may be a
    float32-exact Python float (a constant: its split is made once, by ``split``)."""
    p = b * a if isinstance(a, float) else a * b
    a_hi, a_lo = split(a)
    b_hi, b_lo = split(b)
    err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return p, err


def two_square(a: Value) -> tuple[Value, Value]:
    """``two_prod(a, a)`` in three instructions fewer: one split, the cross products as one doubled
    product. The same bits where both are exact (no underflow): each step of Dekker's sum is exact,
    so the error term is a*a - p in either order.

    Example: ``q_hi, q_lo = two_square(x)``.
    """
    p = a * a
    hi, lo = halve(a)
    return p, ((hi * hi - p) + (hi + hi) * lo) + lo * lo


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
    p, e = two_prod(a_hi, c_hi)
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


HALF_MASK = 0xFFFFF000  # keeps a float32's sign, exponent and leading 12 significand bits
# 1/d on [1, 2]: a - b*d within 5.9% (relative); one Newton step takes it within 0.35%.
RECIP_SEED = (float.fromhex("0x1.69696ap+0"), float.fromhex("0x1.e1e1e2p-2"))


def halve(v: Value) -> tuple[Value, Value]:
    """v = hi + lo with hi the leading 12 significand bits (one integer and): the product of two
    such halves has at most 24 bits, so it is exact. Cheaper than Veltkamp's ``split`` (4 float ops)."""
    hi = from_bits(to_bits(v) & HALF_MASK)
    return hi, v - hi


def quotient_parts(
    n_hi: Value, n_lo: Value, d_hi: Value, d_lo: Value, seed: tuple[float, float] = RECIP_SEED, terms: int = 3
) -> tuple[Value, Value]:
    """(n_hi + n_lo) / (d_hi + d_lo) as an unnormalised pair (p, c), |c| < 2^-7 |p|, accurate to
    about 2^-33 relative; for d_hi in the range ``seed`` is fitted to ([1, 2] by default),
    |d_lo| <= 2^-22 d_hi and |n_lo| <= 2^-20 |n_hi|.

    y, the leading 12 bits of an approximate 1/d_hi (a linear seed and one Newton step), is exact
    in every product with a 12-bit half, so the residual rho = 1 - d*y (|rho| < 2^-7.6) is formed
    to 2^-32 without Dekker's products; 1/d = y * (1 + rho + ... + rho^terms), to 2^-30 with the
    default three terms. p is the exact product of n_hi's leading half with y; c holds the rest.
    Example: ``p, c = quotient_parts(n, f32(0.0), d_hi, d_lo)``; ``p + c`` is n/d rounded once.
    """
    a, b = seed
    y = a - b * d_hi
    y, _ = halve(y * (2.0 - d_hi * y))
    dh, dl = halve(d_hi)
    rho = ((1.0 - dh * y) - dl * y) - d_lo * y  # the first two products and the subtraction are exact
    c = rho
    for _ in range(terms - 1):
        c = rho * (1.0 + c)
    nh, nl = halve(n_hi)
    p = nh * y
    return p, nl * y + (n_hi * y * c + n_lo * y)


# 1/d on [1, 2]: c0 + d*(c1 + d*c2), the minimax quadratic of 1 - d*p(d) (a scaled Chebyshev T3:
# 70/33, -16/11, 32/99), within 1/99 relative; two Newton steps take it to the float32 rounding.
RECIP_SEED_QUADRATIC = (float.fromhex("0x1.0f83e0p+1"), float.fromhex("-0x1.745d18p+0"), float.fromhex("0x1.4afd6ap-2"))


def quotient_short(
    n_hi: Value, n_lo: Value, d_hi: Value, d_lo: Value, seed: tuple[float, ...] = RECIP_SEED_QUADRATIC
) -> tuple[Value, Value]:
    """(n_hi + n_lo) / (d_hi + d_lo) as an unnormalised pair (q, c), |c| < 2^-10 |q|, accurate to
    about 2^-33 relative as ``quotient_parts``, five instructions fewer; for d_hi in the range
    ``seed`` is fitted to ([1, 2] by default), |d_lo| <= 2^-22 d_hi and |n_lo| <= 2^-20 |n_hi|.

    y is 1/d_hi to 2^-22.6 (``seed``, a polynomial in d_hi, ascending coefficients, within 2^-6
    relative; then two Newton steps); q = n_hi * y cut to its leading 12 bits, so q*dh and q*dl
    (d_hi's 12-bit halves) are exact and the residual n - q*d, below 2^-10.9 |n|, is formed to
    2^-34 of n; c = residual * y adds y's 2^-22.6 of it.
    Example: ``q, c = quotient_short(n, f32(0.0), d_hi, d_lo)``; ``q + c`` is n/d rounded once.
    """
    y = horner(d_hi, seed)
    for _ in range(2):
        y = y * (2.0 - d_hi * y)
    q = from_bits(to_bits(n_hi * y) & HALF_MASK)
    dh, dl = halve(d_hi)
    residual = (n_hi - q * dh) - q * dl  # the products and the first subtraction are exact
    residual = residual - q * d_lo if n_lo is None else residual + (n_lo - q * d_lo)
    return q, residual * y


# 1/d for any positive normal d within 2^-4.3 (relative) from its bits: RECIP_MAGIC - bits(d).
RECIP_MAGIC = 0x7EF311C0


def quotient_rough(n_hi: Value, n_lo: Value | None, d_hi: Value, d_lo: Value) -> tuple[Value, Value]:
    """(n_hi + n_lo) / (d_hi + d_lo) as an unnormalised pair (q, c), |c| < 2^-10 |q|, to about
    2^-29 relative, for any positive normal d_hi (no scaling to [1, 2]), |d_lo| <= 2^-22 d_hi and
    |n_lo| <= 2^-20 |n_hi|: ``quotient_short``'s residual step with y = 1/d_hi from d_hi's bits
    (RECIP_MAGIC, 2^-4.3) and two Newton steps (2^-17.2). q, n*y cut to 12 bits, is within 2^-12
    of n/d, so the correction c = (n - q*d) * y misses by 2^-12 of y's error. ``n_lo`` None: n is
    n_hi alone (one instruction fewer than a zero).
    Example: ``q, c = quotient_rough(a, None, *two_sum(a, f32(2.0)))`` (a/(2 + a)).
    """
    y = from_bits(u32(RECIP_MAGIC) - to_bits(d_hi))
    for _ in range(2):
        y = y * (2.0 - d_hi * y)
    q = from_bits(to_bits(n_hi * y) & HALF_MASK)
    dh, dl = halve(d_hi)
    residual = (n_hi - q * dh) - q * dl  # the products and the first subtraction are exact
    residual = residual - q * d_lo if n_lo is None else residual + (n_lo - q * d_lo)
    return q, residual * y


def normalise_divisor(d_hi: Value, d_lo: Value) -> tuple[Value, Value, Value]:
    """(d_hi * 2^-j, d_lo * 2^-j, 2^-j) with d_hi * 2^-j in [1, 2), for a positive normal d_hi
    below 2^126 and |d_lo| not subnormal after scaling (integer operations on d_hi's fields)."""
    u = to_bits(d_hi)
    inverse = from_bits(0x7F000000 - (u & 0x7F800000))  # 2^-j, j the exponent of d_hi
    return from_bits((u & 0x007FFFFF) | 0x3F800000), d_lo * inverse, inverse
