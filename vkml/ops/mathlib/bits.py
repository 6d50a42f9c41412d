"""Bit-level helpers shared by the math library: float32 fields, constants, rounding to f32.

Everything here is built from exact IR primitives (bitcast, integer ops, compares, select).
"""

from __future__ import annotations

import functools

from ...errors import DTypeError
from ...ir import types as T
from ...ir.builder import bitcast, const, convert, eq, ne, select
from ...ir.core import Value

F32, U32, I32 = T.float32, T.uint32, T.int32

SIGN_BIT = 0x80000000
ABS_MASK = 0x7FFFFFFF
INF_BITS = 0x7F800000
QUIET_BIT = 0x00400000
# x86's "real indefinite" NaN: what numpy float32 gives for 0/0, inf/inf and sqrt(-1).
DEFAULT_NAN_BITS = 0xFFC00000
# 1.5 * 2^23: v + ROUNDER lies in [2^23, 2^24) for |v| < 2^22, where float32 spacing is 1.
ROUNDER = float.fromhex("0x1.8p23")
ROUNDER_BITS = 0x4B400000


def float32_only(fn):
    """Decorator for the public float32 functions: a clear error for other operand types."""

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        for a in args:
            if isinstance(a, Value) and a.dtype is not F32:
                raise DTypeError(
                    f"mathlib.{fn.__name__}: operands must be float32 IR values, got {a.dtype.name} "
                    "(compute float16 in float32 and narrow with f32_to_f16)"
                )
        return fn(*args, **kwargs)

    return checked


def f32(value: float) -> Value:
    """A float32 constant; ``value`` must be exactly representable (coefficients are written as hex floats)."""
    return const(value, F32)


def u32(value: int) -> Value:
    return const(value, U32)


def i32(value: int) -> Value:
    return const(value, I32)


def to_bits(x: Value) -> Value:
    """The uint32 bit pattern of a float32 value."""
    return bitcast(x, U32)


def from_bits(u: Value) -> Value:
    """The float32 value whose bit pattern is the uint32 ``u``."""
    return bitcast(u, F32)


def f32_bits(bits: int) -> Value:
    """A float32 constant given by its bit pattern (NaN payloads, exact edge values)."""
    return from_bits(u32(bits))


def quiet(x: Value) -> Value:
    """``x`` with the quiet bit set: how x86 (and numpy) passes a NaN operand through arithmetic."""
    return from_bits(to_bits(x) | QUIET_BIT)


def pow2(k: Value) -> Value:
    """2**k as float32 for an int32 ``k`` in [-126, 127] (built from its exponent field)."""
    return from_bits(bitcast((k + 127) << 23, U32))


def round_to_int(v: Value) -> tuple[Value, Value]:
    """round_even(v) as float32 and as int32, for |v| < 2^22, with no conversion instruction.

    Hopper rounds and converts floats at 1/8 of its float32 add rate, so this adds ROUNDER: the
    sum, rounded to nearest even, is ROUNDER + round_even(v) (ROUNDER is even, so ties go the
    same way), subtracting it back is exact, and the sum's bits are ROUNDER_BITS + round_even(v).
    One difference: a zero result is +0 where round_even gives -0 (v in [-0.5, -0]); callers
    multiply it and add it to nonzero values or to v itself, where the sign of a zero is lost.
    The add must not be fused with the product that makes ``v``: the IR's float operations are
    emitted NoContraction, each rounded on its own.

    Example: ``k, k_int = round_to_int(x * LOG2E)``.
    """
    t = v + ROUNDER
    return t - ROUNDER, bitcast(t, I32) - ROUNDER_BITS


def round_and_pow2(v: Value, offset: Value) -> tuple[Value, Value]:
    """round_even(v) = k as float32, and 2^(k + d) from the same add, for ``offset`` = ROUNDER + d.

    ``d`` is an even integer (so ties still go as round_even's), |v| + |d| < 2^21, and k + d must
    lie in [-126, 127]. t = v + offset is offset + k, whose bit pattern is 0x4B000000 + 2^22 + d + k:
    shifted left by 23 (mod 2^32) only (k + d) << 23 is left, the exponent field of 2^(k + d) less
    the bias. Two integer operations where pow2 of an int32 takes a conversion and two more.

    Example: ``k, p = round_and_pow2(x * LOG2E, f32(ROUNDER + 26))`` (p is 2^(k + 26)).
    """
    t = v + offset
    return t - offset, from_bits((to_bits(t) << 23) + 0x3F800000)


def int_to_float(k: Value) -> Value:
    """An int32 ``k`` with |k| < 2^22 as float32 (exact), with no conversion instruction (see round_to_int).

    Example: ``e_float = int_to_float(e)``.
    """
    return from_bits(bitcast(k + ROUNDER_BITS, U32)) - ROUNDER


def ifelse_u32(cond: Value, a: int, b: int) -> Value:
    return select(cond, u32(a), u32(b))


def ifelse_i32(cond: Value, a: int, b: int) -> Value:
    return select(cond, i32(a), i32(b))


def unpack(magnitude: Value) -> tuple[Value, Value]:
    """Split a nonzero finite |x| (uint32 bits, sign cleared) into a significand and an exponent.

    Returns ``(m, e)``: uint32 ``m`` in [2^23, 2^24) and int32 ``e`` with |x| = m * 2^(e - 23).
    Subnormals are normalised with integer shifts (the shift comes from the exponent of the
    fraction's exact int->float conversion), so a driver that flushes float subnormals cannot
    touch them. Zero yields m = 2^23 (a harmless nonzero divisor), to be overridden by the caller.
    """
    field = magnitude >> 23
    fraction = magnitude & 0x007FFFFF
    subnormal = eq(field, 0) & ne(fraction, 0)
    # floor(log2(fraction)) for 0 < fraction < 2^23 from the exponent of float(fraction), made
    # exactly as 2^23 + fraction less 2^23 (no int->float conversion instruction, all normal
    # floats); `| 1` keeps zero away from an invalid shift.
    top = (to_bits(from_bits(fraction | 0x4B000001) - 8388608.0) >> 23) - 127
    shift = 23 - top
    m = select(subnormal, fraction << shift, fraction | 0x00800000)
    e = select(subnormal, -126 - convert(shift, I32), convert(field, I32) - 127)
    return m, e


def round_pack(sign: Value, q: Value, top: int, e: Value, sticky: Value) -> Value:
    """Round sign * q * 2^(e - top) to float32, ties to even (the one rounding of div and sqrt).

    ``q`` is a uint32 with its leading one at bit ``top`` (24..26); ``sticky`` says whether
    nonzero bits below q were dropped. Handles subnormal results and overflow to infinity.
    """
    biased = e + 127
    # Subnormal results lose `under` more bits; past top + 2 bits everything rounds to zero.
    under = select(biased < 1, 1 - biased, i32(0))
    under = select(under > 25, i32(25), under)
    shift = convert(under, U32) + (top - 23)
    kept = q >> shift
    dropped = q & ((u32(1) << shift) - 1)
    half = u32(1) << (shift - 1)
    odd = eq(kept & 1, 1)
    round_up = (dropped > half) | (eq(dropped, half) & (sticky | odd))
    kept = kept + ifelse_u32(round_up, 1, 0)
    # The significand's leading one adds 1 to the field, and a rounding carry adds another.
    field = select(biased < 1, i32(0), select(biased > 254, i32(254), biased - 1))
    out = (bitcast(field, U32) << 23) + kept
    out = select(out >= INF_BITS, u32(INF_BITS), out)
    return from_bits(out | sign)
