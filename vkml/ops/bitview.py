"""Bit reinterpretation between dtypes of one element size (``Tensor.view(dtype)``).

Kernels carry float16/bfloat16 elements as float32 and uint8/int8/int16 ones as int32
(vkml/ops/cast.py), so a reinterpretation goes through the element's stored bits: the source's
compute value becomes its ``bits``-wide pattern (held in a signed integer of that width, or in
int32 for 8 and 16 bits), and that pattern becomes the target's compute value. Every step is
integer instructions or an IR bitcast, so the CPU interpreter and every Vulkan device give the
same bits (NaN payloads aside: a float16 NaN passes through float32, which may quiet it).
"""

from __future__ import annotations

from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Value
from . import mathlib as M
from .cast import wrap_int

# The signed integer dtype of each element size: what a pattern of that many bytes is read as.
INT_OF_SIZE = {1: T.int8, 2: T.int16, 4: T.int32, 8: T.int64}


def _bits(x: Value, src: T.DType) -> Value:
    """The stored bits of compute value ``x`` of a ``src`` element: int32 for 1 and 2 bytes (any
    extension: only the low bits are read), else the signed integer of ``src``'s width."""
    if src is T.bool_:
        return B.select(x, B.const(1, T.int32), B.const(0, T.int32))
    if src is T.float16:
        return B.bitcast(B.f16_to_bits(M.f32_to_f16(x)), T.int32)
    if src is T.bfloat16:
        return B.convert(M.f32_to_bf16(x), T.int32)
    if src is T.float32:
        return B.bitcast(x, T.int32)
    if src is T.float64:
        return B.bitcast(x, T.int64)
    return x  # an integer: int32 (8 and 16 bits, in range), int32 or int64


def _from_bits(bits: Value, dst: T.DType) -> Value:
    """The compute value of a ``dst`` element whose stored bits are ``bits`` (as ``_bits`` gives them)."""
    if dst is T.bool_:
        return B.ne(bits & 0xFF, B.const(0, T.int32))
    if dst is T.float16:
        return B.convert(B.f16_from_bits(B.bitcast(bits, T.uint32)), T.float32)
    if dst is T.bfloat16:
        return M.bf16_to_f32(B.convert(bits, T.int16))
    if dst is T.float32:
        return B.bitcast(bits, T.float32)
    if dst is T.float64:
        return B.bitcast(bits, T.float64)
    if dst.nbytes < 4:
        return wrap_int(bits, dst)
    return bits


def reinterpret_value(x: Value, src: T.DType, dst: T.DType) -> Value:
    """``x`` (carrying a ``src`` element) read as a ``dst`` element of the same size, bit for bit."""
    assert src.nbytes == dst.nbytes, (src, dst)
    if src is dst:
        return x
    return _from_bits(_bits(x, src), dst)


def reinterpret_stored(h: Value, src: T.DType, dst: T.DType) -> Value:
    """A float16 or bfloat16 element ``h`` as stored (an f16; bfloat16's bits in an int32), not its
    float32 compute value, read as ``dst`` of the same size: its bits, with no float32 round trip
    (which costs a software rounding and may quiet a NaN)."""
    bits = B.bitcast(B.f16_to_bits(h), T.int32) if src is T.float16 else h
    return _from_bits(bits, dst)
