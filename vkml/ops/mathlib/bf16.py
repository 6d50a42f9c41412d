"""float32 <-> bfloat16, with integer instructions only.

A bfloat16 is the top half of a float32, so widening is a shift and narrowing rounds the low
16 bits away to nearest, ties to even (PyTorch's ``round_to_nearest_even``): equal to
``torch.Tensor.bfloat16()`` on every non-NaN float32; a NaN stays a NaN (quieted).
Buffers hold bfloat16 as int16 bits (no 16-bit float type is involved).
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.builder import convert, isnan, select
from ...ir.core import Value
from .bits import float32_only, from_bits, to_bits


def _rounded_bits(x: Value) -> Value:
    """The bfloat16 nearest ``x``, as a uint32 holding its 16 bits in the low half."""
    u = to_bits(x)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # no overflow: the largest sum is below 2^32
    return select(isnan(x), (u >> 16) | 0x40, rounded)


@float32_only
def round_bf16(x: Value) -> Value:
    """``x`` rounded to the nearest bfloat16 (ties to even), kept as float32.

    Precision: exact (correctly rounded); overflow gives ±inf.
    Special values: ±inf stay, NaN stays NaN (quieted), -0.0 stays -0.0.

    Example: ``y = round_bf16(a + b)``.
    """
    return from_bits(_rounded_bits(x) << 16)


@float32_only
def f32_to_bf16(x: Value) -> Value:
    """``x`` rounded to bfloat16, as the int16 element a bfloat16 buffer holds.

    Example: ``out[i] = f32_to_bf16(v)``.
    """
    return convert(_rounded_bits(x), T.int16)


def bf16_to_f32(h: Value) -> Value:
    """The float32 value (exact) of bfloat16 bits ``h`` (an int16 loaded from a bfloat16 buffer).

    Example: ``v = bf16_to_f32(x[i])``.
    """
    return from_bits(convert(h, T.uint32) << 16)
