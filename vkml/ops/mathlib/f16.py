"""float32 <-> float16 conversion. Narrowing is software (integer instructions only).

Vulkan does not promise how OpFConvert to f16 rounds, so vkml narrows with the 32-bit integer
routine of shared/reference/semantics.md §2; it equals numpy's ``astype(float16)`` on every
non-NaN input and torch's ``.half()`` on every input.
"""

from __future__ import annotations

from ...errors import DTypeError
from ...ir import types as T
from ...ir.builder import convert, eq, f16_from_bits, select
from ...ir.core import Value
from .bits import float32_only, to_bits, u32


@float32_only
def f32_to_f16(x: Value) -> Value:
    """Round a float32 to float16, ties to even, with integer instructions only.

    Precision: exact (correctly rounded); |x| >= 65520 gives ±inf, results below 2^-14 are
    f16 subnormals, |x| <= 2^-25 gives ±0.
    Special values: ±inf -> ±inf; a NaN stays NaN with its sign, the quiet bit set and the
    top 9 payload bits kept (torch's ``.half()``; numpy does not force the quiet bit).
    Divergence from PyTorch: none.

    Example: ``h = f32_to_f16(x)``.
    """
    u = to_bits(x)
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    nan = sign | 0x7E00 | ((a >> 13) & 0x3FF)
    # Normal half: rebias the exponent, then round to nearest even on the 13 dropped bits;
    # a carry out of the mantissa bumps the exponent, which is exactly right.
    rebiased = a - 0x38000000
    normal = sign | ((rebiased + 0x0FFF + ((rebiased >> 13) & 1)) >> 13)
    # Subnormal half: 2^-25 < |x| < 2^-14. Shift the significand right by 14..24 bits.
    exponent = (a >> 23) & 0xFF  # 102..112 on this path; clamped so other lanes shift legally
    exponent = select(exponent < 102, u32(102), select(exponent > 112, u32(112), exponent))
    significand = (a & 0x007FFFFF) | 0x00800000
    shift = 126 - exponent
    q = significand >> shift
    r = significand & ((u32(1) << shift) - 1)
    h = u32(1) << (shift - 1)
    round_up = (r > h) | (eq(r, h) & eq(q & 1, 1))
    subnormal = sign | (q + select(round_up, u32(1), u32(0)))

    out = select(a <= 0x33000000, sign, subnormal)
    out = select(a >= 0x38800000, normal, out)
    out = select(a >= 0x477FF000, sign | 0x7C00, out)
    out = select(a > 0x7F800000, nan, out)
    return f16_from_bits(out)


@float32_only
def f32_to_f16_in_range(x: Value) -> Value:
    """``f32_to_f16`` for float16's finite range, |x| < 65520 (and NaN), in about half its instructions.

    Precision: exact, the same bits as ``f32_to_f16`` on every finite float32 below 65520 in
    magnitude and on every NaN (tests/test_mathlib.py compares them); ±inf and larger magnitudes,
    which ``f32_to_f16`` takes to ±inf, are outside its domain (attention's weights, at most
    about 1, are its use). Below 2^-14 the float16 result is subnormal, m·2^-24 with m the nearest
    integer (ties to even) of |x|·2^24; that product is exact (a power of two) and below 2^10, so
    adding and taking away 1.5·2^23 rounds it in float32, as every Vulkan device's correctly
    rounded add does. A device that flushes float32 subnormals sees |x|·2^24 = 0 where
    |x| < 2^-126, whose float16 is ±0 anyway.
    Special values: NaN as ``f32_to_f16``; ±0 -> ±0.

    Example: ``h = f32_to_f16_in_range(weight)``.
    """
    u = to_bits(x)
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    nan = sign | 0x7E00 | ((a >> 13) & 0x3FF)
    rebiased = a - 0x38000000
    normal = sign | ((rebiased + 0x0FFF + ((rebiased >> 13) & 1)) >> 13)
    magic = 12582912.0  # 1.5·2^23: float32's spacing there is 1
    scaled = select(eq(sign, u32(0)), x, -x) * 16777216.0
    subnormal = sign | convert((scaled + magic) - magic, T.uint32)
    out = select(a >= 0x38800000, normal, subnormal)
    out = select(a > 0x7F800000, nan, out)
    return f16_from_bits(out)


def f16_to_f32(h: Value) -> Value:
    """Widen a float16 to float32 (every f16 is exactly a float32).

    Precision: exact. Special values: ±inf, ±0 and subnormals map exactly; a NaN keeps its
    sign and payload (the payload moves to the top of the f32 fraction).

    Example: ``x = f16_to_f32(h)``.
    """
    if h.dtype is not T.float16:
        raise DTypeError(f"mathlib.f16_to_f32: operand must be a float16 IR value, got {h.dtype.name}")
    return convert(h, T.float32)
