"""pow(x, y) = 2^(y * log2|x|) with the C99 (and PyTorch) special cases.

log2|x| comes as a double-float (relative error about 2^-40) and the product y*log2|x| is
formed exactly (two_prod), so the exponent t reaching exp2 is accurate to about 2^-35
absolute even where |t| is near 150; the one rounding is exp2's.
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
    to_bits,
    u32,
)
from .dd import mul_dd_f
from .explog import exp2_rounded, log2_parts

_Y_LIMIT = 2.0**64  # beyond this, y*log2|x| saturates for every x != 1 anyway


def is_integer(a: Value) -> Value:
    """Whether a float32 0 <= a < 2^23 is an integer (false for NaN): ``eq(a, trunc(a))`` there."""
    return eq((a + 2.0**23) - 2.0**23, a)


_T_LIMIT = 200.0  # |y*log2|x|| beyond this is certain overflow or underflow


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
    l_hi, l_lo = log2_parts(ax, normal=normal)
    t_hi, t_lo = mul_dd_f(l_hi, l_lo, y_clamped)
    in_range = (t_hi < _T_LIMIT) & (t_hi > -_T_LIMIT)
    t_lo = select(in_range, t_lo, f32(0.0))
    t_hi = select(in_range, t_hi, select(t_hi > 0.0, f32(_T_LIMIT), f32(-_T_LIMIT)))
    return exp2_rounded(t_hi, t_lo, 76, -74)  # k in [-200, 0] or [0, 200]


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
