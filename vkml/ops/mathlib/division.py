"""The fast core of correctly rounded float32 division: float arithmetic instead of integer divides.

GPUs have no integer divider (an integer ``/`` is dozens of instructions), so ``div`` computes
quotients whose result is a normal float32 here, with float adds and multiplies only (no fused
multiply-add, no float64), and leaves zeros, infinities, NaNs, subnormal operands and results near
the ends of the exponent range to the integer path, in a branch that is rarely taken.

The method, for significands x, y in [1, 2): a reciprocal r of y (linear seed, two Newton steps,
relative error below 2^-16), q0 = x*r cut to 12 bits, one correction q1 = q0 + (x - q0*y)*r with
the residual from exact products of halves, which makes q1 faithful (one of the two floats around
x/y), then the exact residual x - q1*y (Dekker's product) against half the gap to the neighbour
picks the correctly rounded one.

Everything that depends on the divisor alone (its significand, the reciprocal, its halves) is a
``Divisor``, built once per divisor value: dividing a row by its sum (softmax) or a vector of
positions by one broadcast value computes it once, not per quotient. The bits are the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.builder import bitcast, current_block, is_open, select
from ...ir.core import Value
from .bits import I32, SIGN_BIT, U32, from_bits, to_bits

FRACTION_MASK = 0x007FFFFF
ONE_BITS = 0x3F800000  # 1.0: a fraction under this exponent field is a significand in [1, 2)
# Keeps a float32's sign, exponent and leading 12 significand bits: the rest is exact in 12 bits.
HALF_MASK = 0xFFFFF000
# The minimax line for 1/y on [1, 2] (relative error 1/17), rounded to float32.
SEED_OFFSET = float(np.float32(24 / 17))
SEED_SLOPE = float(np.float32(8 / 17))


def exponent_field(bits: Value) -> Value:
    """The biased exponent field (0..255) of float32 bits, as int32."""
    return bitcast((bits >> 23) & 0xFF, I32)


@dataclass(frozen=True)
class Divisor:
    """What division needs of its divisor b alone: a row's sum divides every element of the row,
    so ``divisor`` builds this once per divisor value and each quotient reuses it."""

    bits: Value  # b's bits
    field: Value  # b's exponent field
    normal: Value  # b is a finite normal float
    y: Value  # b's significand, in [1, 2)
    r: Value  # 1/y to about 2^-16 (linear seed, two Newton steps)
    y_hi: Value  # y's 12-bit halves (``_split``)
    y_lo: Value


_DIVISORS: dict[int, tuple] = {}  # id(b) -> (b, Divisor, the block it was built in)
_DIVISORS_MAX = 256


def divisor(b: Value) -> Divisor:
    """The divisor-only part of ``b`` (one per value, where the block that built it is still open).

    Example: ``d = divisor(row_sum)``, then ``normal_quotient(x, d)`` for each x of the row.
    """
    found = _DIVISORS.get(id(b))
    if found is not None and found[0] is b and is_open(found[2]):
        return found[1]
    if len(_DIVISORS) >= _DIVISORS_MAX:  # forget divisors of closed blocks (finished kernels among them)
        for key in [k for k, (_, _, block) in _DIVISORS.items() if not is_open(block)]:
            del _DIVISORS[key]
    bits = to_bits(b)
    field = exponent_field(bits)
    y = from_bits((bits & FRACTION_MASK) | ONE_BITS)
    r = SEED_OFFSET - SEED_SLOPE * y
    for _ in range(2):  # each Newton step squares the relative error: 1/17 -> 2^-8.2 -> 2^-16.4
        r = r + r * (1.0 - y * r)
    y_hi, y_lo = _split(y)
    d = Divisor(bits, field, _normal_field(field), y, r, y_hi, y_lo)
    _DIVISORS[id(b)] = (b, d, current_block())
    return d


def quotient_is_normal(a: Value, b: Value | Divisor) -> Value:
    """True where a and b are finite normal floats and a/b is certainly a normal float32.

    With significands x, y in [1, 2), x/y is in (1/2, 2) and rounds into [1/2, 2), so the
    quotient is 2^(ea - eb) times that: normal when the field difference is in [-125, 127].

    Example: ``fast = quotient_is_normal(x, y)`` (a bool value, per lane).
    """
    d = b if isinstance(b, Divisor) else divisor(b)
    field_a = exponent_field(to_bits(a))
    scale = field_a - d.field
    return _normal_field(field_a) & d.normal & (bitcast(scale + 125, U32) < 253)  # scale in [-125, 127]


def _normal_field(field: Value) -> Value:
    """Whether an exponent field (int32, 0..255) is a finite normal float's, 1..254: one unsigned
    comparison, the field 0 wrapping around to 2^32 - 1."""
    return bitcast(field - 1, U32) < 254


def _split(v: Value) -> tuple[Value, Value]:
    """v = hi + lo exactly, each with at most 12 significant bits (so products are exact): hi is
    v's sign, exponent and leading 12 significand bits (one integer and), lo = v - hi is exact.
    Two instructions where Veltkamp's split (v * (2^12 + 1), ...) takes four."""
    hi = from_bits(to_bits(v) & HALF_MASK)
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


def significand_quotient(x: Value, y: Value | Divisor) -> Value:
    """x / y correctly rounded to float32, for x, y in [1, 2) (so the quotient is in (1/2, 2)).

    ``y`` may be given as the ``Divisor`` of any b with that significand.
    Example: ``q = significand_quotient(f32(1.5), f32(1.25))`` gives 1.2.
    """
    d = y if isinstance(y, Divisor) else divisor(y)
    y, r = d.y, d.r
    # q0: x*r cut to its leading 12 bits, within 2^-10.9 of x/y. Then q0*y_hi and q0*y_lo are
    # exact, x - q0*y_hi is exact (Sterbenz), and only the last subtraction rounds: the residual
    # x - q0*y (below 2^-9.9) comes within 2^-24 of itself, in four instructions where Dekker's
    # product took eleven.
    q0, _ = _split(x * r)
    residual = (x - q0 * d.y_hi) - q0 * d.y_lo
    # The correction's error: 2^-16.4 (r) of the residual and the residual's own rounding, under
    # 2^-26 together, so q1 is within 0.5 + 2^-2 units in the last place: faithful.
    q1 = q0 + residual * r
    # For a faithful q1, x - q1*y is a multiple of 2^-23 * ulp(q1) below 2 * ulp(q1) in magnitude,
    # so it has at most 24 significant bits and is computed exactly.
    rem = _residual(x, q1, y, d.y_hi, d.y_lo)
    bits = to_bits(q1)
    up, down = from_bits(bits + 1), from_bits(bits - 1)
    # x/y is above the midpoint q1 + gap/2 iff rem > y * gap/2 (exact: y times a power of two).
    # No tie is possible: a 25-bit midpoint times a 24-bit y cannot be a 24-bit x.
    go_up = rem > y * ((up - q1) * 0.5)
    go_down = rem < y * ((down - q1) * 0.5)  # exact: a power of two times y, negated
    return select(go_up, up, select(go_down, down, q1))


def normal_quotient(a: Value, b: Value | Divisor) -> Value:
    """a / b correctly rounded, where ``quotient_is_normal(a, b)`` holds (other lanes: garbage).

    Example: ``q = normal_quotient(x, y)``.
    """
    d = b if isinstance(b, Divisor) else divisor(b)
    ua = to_bits(a)
    x = from_bits((ua & FRACTION_MASK) | ONE_BITS)
    q = to_bits(significand_quotient(x, d))
    # q is positive normal in [1/2, 2); adding the exponent difference to its field is exact here.
    scale = bitcast(exponent_field(ua) - d.field, q.dtype)
    sign = (ua ^ d.bits) & SIGN_BIT
    return from_bits((q + (scale << 23)) | sign)
