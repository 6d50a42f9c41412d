"""float64: correctly rounded division and square root, and the exact select-based helpers.

float64 add, sub, mul and compares are IR primitives (exact under RoundingModeRTE). Division
and square root are built here on int64 significands, the way ``exact`` builds them for float32
on uint32: long division and a bit-by-bit square root give the exact quotient or root with a
sticky bit, and ``round_pack`` rounds once. The results are the bits numpy float64 gives on x86.
No other float64 function exists: the ops that would need one (exp, log, tanh, ...) refuse
float64 with NotImplementedError (vkml/graph/build.py) rather than compute in float32.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.builder import bitcast, const, convert, eq, isnan, loop, ne, select
from ...ir.core import Value

F64, I64 = T.float64, T.int64
SIGN_BIT = -(1 << 63)  # as int64
ABS_MASK = (1 << 63) - 1
INF_BITS = 0x7FF0000000000000
FRACTION_MASK = (1 << 52) - 1
DEFAULT_NAN_BITS = -(1 << 63) | 0x7FF8000000000000  # x86's "real indefinite" NaN, 0xFFF8...
QUIET_BIT = 1 << 51


def _i64(v: int) -> Value:
    return const(v, I64)


def _f64(v: float) -> Value:
    return const(v, F64)


def to_bits(x: Value) -> Value:
    return bitcast(x, I64)


def from_bits(u: Value) -> Value:
    return bitcast(u, F64)


def _as_f64(x) -> Value:
    return x if isinstance(x, Value) else _f64(float(x))


def _quiet(x: Value) -> Value:
    return from_bits(to_bits(x) | QUIET_BIT)


def unpack(magnitude: Value) -> tuple[Value, Value]:
    """A nonzero finite |x| (int64 bits, sign clear) as (m, e): m in [2^52, 2^53), |x| = m * 2^(e - 52).

    Subnormals are normalised with shifts; the leading bit's position comes from the exponent field
    of the exact float64 2^52 + fraction - 2^52. Zero gives m = 2^52 (a harmless divisor)."""
    field = magnitude >> 52
    fraction = magnitude & FRACTION_MASK
    subnormal = eq(field, 0) & ne(fraction, 0)
    top = (to_bits(from_bits(fraction | 0x4330000000000001) - 4503599627370496.0) >> 52) - 1023
    shift = 52 - top
    m = select(subnormal, fraction << shift, fraction | (1 << 52))
    e = select(subnormal, -1022 - shift, field - 1023)
    return m, e


def round_pack(sign: Value, q: Value, top: int, e: Value, sticky: Value) -> Value:
    """sign * q * 2^(e - top) rounded to float64, ties to even; q's leading one is at bit ``top``
    (53..56), ``sticky`` says whether nonzero bits below q were dropped. Subnormals, overflow to inf."""
    biased = e + 1023
    under = select(biased < 1, 1 - biased, _i64(0))
    under = select(under > 54, _i64(54), under)
    shift = under + (top - 52)
    kept = q >> shift
    dropped = q & ((_i64(1) << shift) - 1)
    half = _i64(1) << (shift - 1)
    odd = eq(kept & 1, 1)
    round_up = (dropped > half) | (eq(dropped, half) & (sticky | odd))
    kept = kept + select(round_up, _i64(1), _i64(0))
    field = select(biased < 1, _i64(0), select(biased > 2046, _i64(2046), biased - 1))
    out = (field << 52) + kept
    out = select(out >= INF_BITS, _i64(INF_BITS), out)
    return from_bits(out | sign)


def div(a: Value, b: Value) -> Value:
    """a / b for float64, correctly rounded (ties to even): numpy's float64 ``a / b`` on x86.

    Precision: exact (correctly rounded), subnormal inputs and results included.
    Special values: as float32 ``div``: x/±0 = ±inf, 0/0 and inf/inf = NaN, x/±inf = ±0, a NaN
    operand comes back quieted (the first one wins).

    Example: ``q = div(x, y)`` on float64 values.
    """
    b = _as_f64(b)
    ua, ub = to_bits(a), to_bits(b)
    sign = (ua ^ ub) & SIGN_BIT
    mag_a, mag_b = ua & ABS_MASK, ub & ABS_MASK
    ma, ea = unpack(mag_a)
    mb, eb = unpack(mag_b)
    small = ma < mb  # align so that mb <= ma < 2 mb: the quotient's leading one is then at bit 56
    ma = select(small, ma << 1, ma)
    e = ea - eb - select(small, _i64(1), _i64(0))
    rem, q = ma - mb, _i64(1)
    for _ in range(7):  # 8 bits a step: rem < mb < 2^53, so rem << 8 fits in 63 bits
        rem = rem << 8
        digit = rem / mb
        rem = rem - digit * mb
        q = (q << 8) | digit
    out = round_pack(sign, q, 56, e, ne(rem, 0))
    a_zero, b_zero = eq(mag_a, 0), eq(mag_b, 0)
    a_inf, b_inf = eq(mag_a, INF_BITS), eq(mag_b, INF_BITS)
    out = select(a_zero | b_inf, from_bits(sign), out)
    out = select(a_inf | b_zero, from_bits(sign | INF_BITS), out)
    out = select((a_zero & b_zero) | (a_inf & b_inf), from_bits(_i64(DEFAULT_NAN_BITS)), out)
    out = select(isnan(b), _quiet(b), out)
    return select(isnan(a), _quiet(a), out)


def sqrt(x: Value) -> Value:
    """Square root of a float64, correctly rounded: numpy's ``np.sqrt`` on float64 (x86).

    Precision: exact (correctly rounded).
    Special values: sqrt(±0) = ±0, sqrt(+inf) = +inf, x < 0 gives NaN, a NaN comes back quieted.

    Example: ``r = sqrt(x)`` on float64 values.
    """
    u = to_bits(x)
    mag = u & ABS_MASK
    m, e = unpack(mag)
    odd = eq(e & 1, 1)
    m = select(odd, m << 1, m)  # e even, m in [2^52, 2^54)
    e = select(odd, e - 1, e)

    # The root of N = m * 2^54 (108 bits, in [2^106, 2^108)) two bits at a time: 54 steps give its
    # 54-bit integer root (leading one at bit 53) and whether a remainder is left.
    def step(_, rest, rem, root):
        rem = (rem << 2) | ((rest >> 52) & 3)
        rest = (rest << 2) & ((1 << 54) - 1)
        trial = (root << 2) | 1
        fits = rem >= trial
        return rest, select(fits, rem - trial, rem), (root << 1) | select(fits, _i64(1), _i64(0))

    _, rem, root = loop(0, 54, 1, (m, _i64(0), _i64(0)), step)
    out = round_pack(_i64(0), root, 53, e >> 1, ne(rem, 0))
    out = select(eq(mag, 0) | eq(u, INF_BITS), x, out)
    out = select(x < 0.0, from_bits(_i64(DEFAULT_NAN_BITS)), out)
    return select(isnan(x), _quiet(x), out)


def abs(x: Value) -> Value:  # noqa: A001 - PyTorch's name
    """|x|: the sign bit cleared (exact; a NaN keeps its payload)."""
    return from_bits(to_bits(x) & ABS_MASK)


def maximum(a: Value, b: Value) -> Value:
    """float64 maximum with float32 ``maximum``'s rules (NaN wins, max(+0, -0) = +0)."""
    b = _as_f64(b)
    both = from_bits(to_bits(a) & to_bits(b))
    out = select(a > b, a, select(a < b, b, both))
    out = select(isnan(b), b, out)
    return select(isnan(a), a, out)


def minimum(a: Value, b: Value) -> Value:
    """float64 minimum with float32 ``minimum``'s rules (NaN wins, min(+0, -0) = -0)."""
    b = _as_f64(b)
    either = from_bits(to_bits(a) | to_bits(b))
    out = select(a < b, a, select(a > b, b, either))
    out = select(isnan(b), b, out)
    return select(isnan(a), a, out)


def clamp(x: Value, lo=None, hi=None) -> Value:
    """float64 clamp with float32 ``clamp``'s rules."""
    out = x
    if lo is not None:
        lo = _as_f64(lo)
        out = select(out < lo, lo, out)
    if hi is not None:
        hi = _as_f64(hi)
        out = select(out > hi, hi, out)
    for bound in (hi, lo):
        if bound is not None:
            out = select(isnan(bound), bound, out)
    return select(isnan(x), x, out)


def relu(x: Value) -> Value:
    """float64 relu: relu(NaN) = NaN, relu(-0.0) = -0.0."""
    return select(x < 0.0, _f64(0.0), x)


def sign(x: Value) -> Value:
    """float64 sign: ±1 or +0; NaN stays NaN (float32 ``sign``'s rules)."""
    bits = to_bits(x)
    one_with_sign = (bits & SIGN_BIT) | 0x3FF0000000000000
    out = from_bits(select(eq(bits & ABS_MASK, 0), _i64(0), one_with_sign))
    return select(isnan(x), x, out)


def int_to_f64(v: Value) -> Value:
    """An integer IR value as float64 (exact for int32, rounded to nearest even for int64)."""
    return convert(v, F64)
