"""The fast core of correctly rounded float32 division: float arithmetic instead of integer divides.

GPUs have no integer divider (an integer ``/`` is dozens of instructions), so ``div`` computes
quotients whose result is a normal float32 here, with float adds and multiplies only (no fused
multiply-add, no float64), and leaves zeros, infinities, NaNs, subnormal operands and results near
the ends of the exponent range to the integer path, in a branch that is rarely taken.

The method, for significands x, y in [1, 2): a reciprocal r of y (linear seed, two Newton steps,
relative error below 2^-16), q0 = x*r, one correction q1 = q0 + (x - q0*y)*r with the residual
from Dekker's exact product, which makes q1 faithful (one of the two floats around x/y), then the
exact residual x - q1*y against half the gap to the neighbour picks the correctly rounded one.
"""

from __future__ import annotations

import numpy as np

from ...ir.builder import bitcast, select
from ...ir.core import Value
from .bits import I32, SIGN_BIT, f32, from_bits, to_bits

FRACTION_MASK = 0x007FFFFF
ONE_BITS = 0x3F800000  # 1.0: a fraction under this exponent field is a significand in [1, 2)
# Veltkamp's constant 2^12 + 1 splits a 24-bit float32 into two halves of at most 12 bits.
SPLITTER = 4097.0
# The minimax line for 1/y on [1, 2] (relative error 1/17), rounded to float32.
SEED_OFFSET = float(np.float32(24 / 17))
SEED_SLOPE = float(np.float32(8 / 17))


def exponent_field(bits: Value) -> Value:
    """The biased exponent field (0..255) of float32 bits, as int32."""
    return bitcast((bits >> 23) & 0xFF, I32)


def quotient_is_normal(a: Value, b: Value) -> Value:
    """True where a and b are finite normal floats and a/b is certainly a normal float32.

    With significands x, y in [1, 2), x/y is in (1/2, 2) and rounds into [1/2, 2), so the
    quotient is 2^(ea - eb) times that: normal when the field difference is in [-125, 127].

    Example: ``fast = quotient_is_normal(x, y)`` (a bool value, per lane).
    """
    field_a, field_b = exponent_field(to_bits(a)), exponent_field(to_bits(b))
    normal_a = (field_a >= 1) & (field_a <= 254)
    normal_b = (field_b >= 1) & (field_b <= 254)
    scale = field_a - field_b
    return normal_a & normal_b & (scale >= -125) & (scale <= 127)


def _split(v: Value) -> tuple[Value, Value]:
    """Veltkamp: v = hi + lo exactly, each with at most 12 significant bits (so products are exact)."""
    c = v * SPLITTER
    hi = c - (c - v)
    return hi, v - hi


def _residual(x: Value, q: Value, y: Value, y_hi: Value, y_lo: Value) -> Value:
    """x - q*y (y = y_hi + y_lo, its split), exact when it is representable and q*y is within 2x of x.

    q*y = p + err exactly (Dekker's product: every partial product of 12-bit halves is exact);
    x - p is exact by Sterbenz's lemma, so the one rounding is the last subtraction.
    """
    p = q * y
    q_hi, q_lo = _split(q)
    err = (((q_hi * y_hi - p) + q_hi * y_lo) + q_lo * y_hi) + q_lo * y_lo
    return (x - p) - err


def significand_quotient(x: Value, y: Value) -> Value:
    """x / y correctly rounded to float32, for x, y in [1, 2) (so the quotient is in (1/2, 2)).

    Example: ``q = significand_quotient(f32(1.5), f32(1.25))`` gives 1.2.
    """
    r = SEED_OFFSET - SEED_SLOPE * y
    for _ in range(2):  # each Newton step squares the relative error: 1/17 -> 2^-8.2 -> 2^-16.4
        r = r + r * (1.0 - y * r)
    y_hi, y_lo = _split(y)
    q0 = x * r  # within about 2^8 units in the last place
    # The correction's relative error is about 2^-16, so q1 is within 0.5 + 2^-8 units: faithful.
    q1 = q0 + _residual(x, q0, y, y_hi, y_lo) * r
    # For a faithful q1, x - q1*y is a multiple of 2^-23 * ulp(q1) below 2 * ulp(q1) in magnitude,
    # so it has at most 24 significant bits and is computed exactly.
    rem = _residual(x, q1, y, y_hi, y_lo)
    bits = to_bits(q1)
    up, down = from_bits(bits + 1), from_bits(bits - 1)
    # x/y is above the midpoint q1 + gap/2 iff rem > y * gap/2 (exact: y times a power of two).
    # No tie is possible: a 25-bit midpoint times a 24-bit y cannot be a 24-bit x.
    go_up = rem > y * ((up - q1) * 0.5)
    go_down = rem < f32(0.0) - y * ((q1 - down) * 0.5)
    return select(go_up, up, select(go_down, down, q1))


def normal_quotient(a: Value, b: Value) -> Value:
    """a / b correctly rounded, where ``quotient_is_normal(a, b)`` holds (other lanes: garbage).

    Example: ``q = normal_quotient(x, y)``.
    """
    ua, ub = to_bits(a), to_bits(b)
    x = from_bits((ua & FRACTION_MASK) | ONE_BITS)
    y = from_bits((ub & FRACTION_MASK) | ONE_BITS)
    q = to_bits(significand_quotient(x, y))
    # q is positive normal in [1/2, 2); adding the exponent difference to its field is exact here.
    scale = bitcast(exponent_field(ua) - exponent_field(ub), q.dtype)
    sign = (ua ^ ub) & SIGN_BIT
    return from_bits((q + (scale << 23)) | sign)
