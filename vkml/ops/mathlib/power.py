"""pow(x, y) = e^(y * log|x|) with the C99 (and PyTorch) special cases.

log|x| = e*ln2 + log(m) comes as a double-float (log(m) to about 2^-32 relative, e*ln2 by the
Cody-Waite pair) and the product v = y*log|x| is formed exactly (two_prod), so v is accurate to
about 2^-25 absolute even where |v| is near 100; e^v takes v's double-float through exp's own
Cody-Waite reduction, so the one rounding is the final product's. (Natural logarithms on both
sides: log2 and exp2 would each convert by a double-float product with log2(e) or ln2.)
"""

from __future__ import annotations

from ...ir.builder import eq, if_else, isnan, select
from ...ir.core import Value
from .bits import (
    ABS_MASK,
    DEFAULT_NAN_BITS,
    INF_BITS,
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
from .dd import mul_dd_f, two_sum
from .explog import LN2_HI, LN2_HI_LO, LOG2E, _split_scale, exp_parts_wide, log_parts

_Y_LIMIT = 2.0**64  # beyond this, y*log2|x| saturates for every x != 1 anyway


def is_integer(a: Value) -> Value:
    """Whether a float32 0 <= a < 2^23 is an integer (false for NaN): ``eq(a, trunc(a))`` there."""
    return eq((a + 2.0**23) - 2.0**23, a)


# |y*log|x|| beyond this (2^199.8) is certain overflow or underflow; it keeps e^v's k within 200
_V_LIMIT = 138.5


@float32_only
def pow(x: Value, y: Value) -> Value:  # noqa: A001 - PyTorch's name
    """x raised to the power y (float32 base and exponent).

    Precision: ≤ 1 ulp of the correctly rounded result for finite, nonzero results (measured
    on 2^19 random pairs spanning the whole exponent range, and on integer exponents).
    Special values: as C99 Annex F and PyTorch: pow(x, ±0) = 1 even for NaN x; pow(1, y) = 1
    even for NaN y; pow(-1, ±inf) = 1; pow(x < 0 finite, non-integer y) = NaN; an odd
    integer y keeps the sign of x (pow(-2, 3) = -8, pow(-0, -1) = -inf, pow(-inf, 3) = -inf);
    pow(±0, y < 0) = +inf unless y is an odd integer; pow(|x| < 1, -inf) = +inf,
    pow(|x| > 1, -inf) = 0, pow(|x| < 1, +inf) = 0, pow(|x| > 1, +inf) = +inf;
    pow(±inf, y < 0) = 0 (-0 for -inf and odd y); otherwise a NaN operand gives NaN (the
    first NaN operand, quieted).

    Example: ``z = pow(x, y)``.
    """
    y = y if isinstance(y, Value) else f32(float(y))
    # Finite normal x of either sign and |y| < 2^64 (the common case) without the special values'
    # selects and y's clamp, in the same arithmetic; zeros, subnormals, infinities and NaNs of either
    # operand, and |y| >= 2^64 (0x5F800000 the bits of _Y_LIMIT), in a branch that is rarely taken.
    ux, uy = to_bits(x) & ABS_MASK, to_bits(y) & ABS_MASK
    common = (ux - 0x00800000 < 0x7F000000) & (uy < 0x5F800000)  # unsigned: ux below 2^-126 wraps around
    (out,) = if_else(common, lambda: _pow_common(x, y), lambda: _pow_any(x, y))
    return out


def _y_parity(ay: Value) -> tuple[Value, Value]:
    """(y is an integer, y is an odd integer) for ay = |y|, by float adds (rounding and converting
    cost 8 adds each on Hopper): every float32 from 2^23 up is an integer, and below it
    ay + 2^23 rounds to an integer exactly. The first is true for ±inf, both false for NaN."""
    y_int = is_integer(ay) | (ay >= 2.0**23)
    small_int = y_int & (ay < 2.0**24)  # every float32 of magnitude >= 2^24 is an even integer
    return y_int, small_int & ~is_integer(ay * 0.5)  # ay < 2^24: ay/2 is exact and below 2^23


def _magnitude(ax: Value, y: Value, ay: Value, normal: bool) -> Value:
    """|x|^y rounded once, for finite nonzero |x| and finite y (``normal``: |x| a normal float
    and |y| < 2^64)."""
    y_clamped = y if normal else select(ay < _Y_LIMIT, y, select(y < 0.0, f32(-_Y_LIMIT), f32(_Y_LIMIT)))
    e, hi, lo = log_parts(ax, quick=True, normal=normal)
    l_hi, l_err = two_sum(e * LN2_HI, hi)  # e*LN2_HI is exact: |e| <= 149 and LN2_HI has 15 bits
    v_hi, v_lo = mul_dd_f(l_hi, l_err + (lo + e * LN2_HI_LO), y_clamped)
    in_range = (v_hi < _V_LIMIT) & (v_hi > -_V_LIMIT)
    v_lo = select(in_range, v_lo, f32(0.0))
    v_hi = select(in_range, v_hi, select(v_hi > 0.0, f32(_V_LIMIT), f32(-_V_LIMIT)))
    return _exp_rounded(v_hi, v_lo)


def _exp_rounded(v_hi: Value, v_lo: Value) -> Value:
    """e^(v_hi + v_lo) rounded once, subnormal and overflowing results included, for |v_hi| <= 138.5
    and |v_lo| <= 2^-17: 2^k * e^r as ``exp_fast`` does it, v's low part in r's (accurate to
    2^-26.5 before the rounding), 2^k in two exact steps, k in [-200, 0] or [0, 200]."""
    offset, second = _split_scale(v_hi < 0.0, 76, -74)
    k, first = round_and_pow2(v_hi * LOG2E, offset)
    s, tail = exp_parts_wide(v_hi - k * LN2_HI, v_lo - k * LN2_HI_LO)  # v_hi - k*LN2_HI is exact (Sterbenz)
    return (s + tail) * first * second


def _pow_common(x: Value, y: Value) -> Value:
    """pow for a finite normal x and |y| < 2^64: ``pow``'s bits there (x = 1 and y = ±0 give 1
    through log2(1) = 0 and 0 * log2|x| = 0, exactly)."""
    ax = from_bits(to_bits(x) & ABS_MASK)
    ay = from_bits(to_bits(y) & ABS_MASK)
    y_int, odd = _y_parity(ay)
    mag = _magnitude(ax, y, ay, normal=True)
    out = from_bits(to_bits(mag) | select(odd, to_bits(x) & SIGN_BIT, u32(0)))
    return select((x < 0.0) & ~y_int, f32_bits(DEFAULT_NAN_BITS), out)


def _pow_any(x: Value, y: Value) -> Value:
    """pow for every x and y (``pow``'s contract)."""
    ax = from_bits(to_bits(x) & ABS_MASK)
    ay = from_bits(to_bits(y) & ABS_MASK)
    y_int, odd = _y_parity(ay)
    mag = _magnitude(ax, y, ay, normal=False)

    inf, zero = f32_bits(INF_BITS), f32(0.0)
    y_neg = y < 0.0
    mag = select(eq(ax, 0.0), select(y_neg, inf, zero), mag)
    mag = select(eq(to_bits(ax), INF_BITS), select(y_neg, zero, inf), mag)
    to_inf = eq(ax < 1.0, y_neg)  # |x| < 1 with y = -inf, or |x| > 1 with y = +inf
    mag = select(eq(to_bits(ay), INF_BITS), select(eq(ax, 1.0), f32(1.0), select(to_inf, inf, zero)), mag)
    sign = select(odd, to_bits(x) & SIGN_BIT, u32(0))
    out = from_bits(to_bits(mag) | sign)

    negative_base = (x < 0.0) & (x > float("-inf"))
    out = select(negative_base & ~y_int, f32_bits(DEFAULT_NAN_BITS), out)
    out = select(isnan(y), quiet(y), out)
    out = select(isnan(x), quiet(x), out)
    return select(eq(x, 1.0) | eq(y, 0.0), f32(1.0), out)
