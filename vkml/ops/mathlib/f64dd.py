"""Double-double arithmetic on float64 pairs: the float64 twin of ``dd`` (float32 pairs).

A dd value is an unevaluated sum ``hi + lo`` of two float64 values. With no exact fused
multiply-add in the IR, exact products come from Dekker's splitting (2^27 + 1 cuts a float64
into two 26-bit halves whose pairwise products are exact), so ``two_prod`` returns a*b exactly
as a pair barring overflow, or underflow below about 2^-969, which callers keep away from.
Every float64 operation is rounded once, to nearest even, and never contracted into an FMA
(the IR's primitives promise exactly that, on the CPU interpreter and on Vulkan alike).
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.builder import bitcast, const
from ...ir.core import Value

F64, I64 = T.float64, T.int64
# 1.5 * 2^52: v + ROUNDER lies in [2^52, 2^53) for |v| < 2^51, where float64 spacing is 1.
ROUNDER = float.fromhex("0x1.8p52")
ROUNDER_BITS = 0x4338000000000000


def f64(value: float) -> Value:
    """A float64 constant (coefficients are written as hex floats or exact Python floats)."""
    return const(float(value), F64)


def i64(value: int) -> Value:
    return const(value, I64)


def to_bits(x: Value) -> Value:
    return bitcast(x, I64)


def from_bits(u: Value) -> Value:
    return bitcast(u, F64)


def pow2(k: Value) -> Value:
    """2**k as float64 for an int64 ``k`` in [-1022, 1023] (built from its exponent field)."""
    return from_bits((k + 1023) << 52)


def round_to_int(v: Value) -> tuple[Value, Value]:
    """round_even(v) as float64 and as int64 for |v| < 2^51, by one add (see bits.round_to_int).

    A zero result is +0 (never -0): callers only multiply it or add it to nonzero values.
    """
    t = v + ROUNDER
    return t - ROUNDER, to_bits(t) - ROUNDER_BITS


def scale(x: Value, k: Value) -> Value:
    """x * 2^k for int64 k in [-2000, 2000] and |x| in [2^-20, 4]: the first product is exact,
    so a subnormal or overflowing result is rounded once."""
    k1 = k >> 1
    return x * pow2(k1) * pow2(k - k1)


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
    """Veltkamp's split: a = hi + lo with 26 significant bits each (|a| < 2^995)."""
    c = a * 134217729.0  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: Value, b: Value) -> tuple[Value, Value]:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker)."""
    p = a * b
    a_hi, a_lo = split(a)
    b_hi, b_lo = split(b)
    err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return p, err


def add_dd(a_hi: Value, a_lo: Value, b_hi: Value, b_lo: Value) -> tuple[Value, Value]:
    """(a_hi + a_lo) + (b_hi + b_lo), normalised (relative error about 2^-104 without cancellation)."""
    s, e = two_sum(a_hi, b_hi)
    return fast_two_sum(s, e + (a_lo + b_lo))


def mul_dd(a_hi: Value, a_lo: Value, b_hi: Value, b_lo: Value) -> tuple[Value, Value]:
    """(a_hi + a_lo) * (b_hi + b_lo), normalised (relative error about 2^-104)."""
    p, e = two_prod(a_hi, b_hi)
    return fast_two_sum(p, e + (a_hi * b_lo + a_lo * b_hi))


def mul_dd_const(a_hi: Value, a_lo: Value, c_hi: float, c_lo: float) -> tuple[Value, Value]:
    """(a_hi + a_lo) * (c_hi + c_lo) for a constant given as a float64 pair."""
    p, e = two_prod(a_hi, f64(c_hi))
    return fast_two_sum(p, e + (a_hi * c_lo + a_lo * c_hi))


def horner(x: Value, coeffs) -> Value:
    """c0 + x*(c1 + x*(c2 + ...)) in float64."""
    acc = f64(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = acc * x + c
    return acc


def recip(d: Value) -> Value:
    """1/d within about 0.5 ulp for a positive normal d in [2^-900, 2^900] (not correctly rounded).

    A bit-pattern seed (relative error below 1/8), four Newton steps (2^-48), then one step whose
    residual 1 - d*y is computed exactly.
    """
    y = from_bits(0x7FDE623822FC16E6 - to_bits(d))
    for _ in range(4):
        y = y * (2.0 - d * y)
    p, e = two_prod(d, y)
    return y + y * ((1.0 - p) - e)


def div_dd(n_hi: Value, n_lo: Value, d_hi: Value, d_lo: Value) -> tuple[Value, Value]:
    """(n_hi + n_lo) / (d_hi + d_lo) as a normalised dd, relative error about 2^-100.

    Needs d_hi positive normal in [2^-1000, 2^1000] and a quotient well inside the normal range.
    """
    r = recip(d_hi)
    q = n_hi * r
    p, e = two_prod(q, d_hi)
    residual = (((n_hi - p) - e) + n_lo) - q * d_lo
    return fast_two_sum(q, residual * r)


def sqrt_dd(w_hi: Value, w_lo: Value, root: Value) -> tuple[Value, Value]:
    """sqrt(w_hi + w_lo) as a dd, given ``root`` = sqrt(w_hi) (any float64 square root within 1 ulp),
    for a positive normal w_hi in [2^-900, 2^900]: one Newton correction with an exact residual."""
    p, e = two_prod(root, root)
    residual = ((w_hi - p) - e) + w_lo
    return fast_two_sum(root, residual * (0.5 * recip(root)))
