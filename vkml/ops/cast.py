"""Conversions between dtypes, in the compute representation kernels use.

In a kernel a float16 or bfloat16 tensor element is carried as a float32 value that is exactly
representable in its dtype; it becomes 16 bits only when stored. So a cast to float16 or
bfloat16 is a rounding (software narrowing, never OpFConvert), and the widening is free.
Likewise a uint8, int8, int16 or uint16 element is carried as an int32 value inside the dtype's
range: an op's result is wrapped back into that range (two's complement, as PyTorch's
uint8/int8/int16 arithmetic wraps), and it becomes 8 or 16 bits only when stored.
float64 is carried as itself.
"""

from __future__ import annotations

import numpy as np

from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Value
from . import mathlib as M

NARROW_FLOATS = (T.float16, T.bfloat16)  # carried as float32
NARROW_INTS = (T.uint8, T.int8, T.int16, T.uint16)  # carried as int32


def compute_dtype(dtype: T.DType) -> T.DType:
    """The IR type that carries values of ``dtype`` inside a kernel."""
    if dtype in NARROW_FLOATS:
        return T.float32
    if dtype in NARROW_INTS:
        return T.int32
    return dtype


storage_dtype = T.storage


def round_to_f16(x: Value) -> Value:
    """Round a float32 value to the nearest float16 (RNE), kept as float32."""
    return B.convert(M.f32_to_f16(x), T.float32)


def round_to_bf16(x: Value) -> Value:
    """Round a float32 value to the nearest bfloat16 (RNE), kept as float32."""
    return M.round_bf16(x)


def wrap_int(x: Value, dtype: T.DType) -> Value:
    """An int32 value wrapped into ``dtype``'s range (uint8, int8, int16), kept as int32: its low
    ``dtype.bits`` bits, read unsigned or two's complement."""
    mask = (1 << dtype.bits) - 1
    if dtype.is_signed:
        half = 1 << (dtype.bits - 1)
        return ((x + half) & mask) - half
    return x & mask


def narrow(x: Value, dtype: T.DType) -> Value:
    """``x`` (of ``compute_dtype(dtype)``) rounded or wrapped to a value ``dtype`` holds."""
    if dtype is T.float16:
        return round_to_f16(x)
    if dtype is T.bfloat16:
        return round_to_bf16(x)
    if dtype in NARROW_INTS:
        return wrap_int(x, dtype)
    return x


def load_value(v: Value, dtype: T.DType) -> Value:
    """A value loaded from a ``dtype`` buffer (``storage_dtype``) in its compute representation."""
    if dtype is T.float16:
        return B.convert(v, T.float32)
    if dtype is T.bfloat16:
        return M.bf16_to_f32(v)
    if dtype in NARROW_INTS:
        return B.convert(v, T.int32)  # zero- or sign-extends
    return v


def store_value(v: Value, dtype: T.DType) -> Value:
    """A compute-representation value (already narrowed) as the ``storage_dtype`` element to store."""
    if dtype is T.float16:
        return M.f32_to_f16(v)
    if dtype is T.bfloat16:
        return M.f32_to_bf16(v)
    if dtype in NARROW_INTS:
        return B.convert(v, dtype)  # truncates: the value is already in range
    return v


def _float_to_int(x: Value, dst: T.DType) -> Value:
    # Truncate toward zero; NaN, ±inf and out-of-range values give INT_MIN (what PyTorch gives on x86-64).
    limit = float(2 ** (dst.bits - 1))
    ok = (x >= -limit) & (x < limit)
    safe = B.select(ok, x, 0.0)
    return B.select(ok, B.convert(safe, dst), B.const(-(2 ** (dst.bits - 1)), dst))


def _float_to_narrow_int(x: Value, src: T.DType, dst: T.DType) -> Value:
    # PyTorch (x86-64) converts float64 -> uint8 through int64 and every other float -> uint8/int8/int16
    # through int32, then keeps the low bits: NaN and out-of-range values give INT_MIN's low bits, 0.
    if src is T.float64 and dst is T.uint8:
        wide = B.convert(_float_to_int(x, T.int64), T.int32)
    else:
        wide = _float_to_int(x, T.int32)
    return wrap_int(wide, dst)


def cast_value(x: Value, src: T.DType, dst: T.DType) -> Value:
    """Convert ``x`` (carrying a ``src`` element) to carry a ``dst`` element, as PyTorch's ``.to``."""
    if src is dst:
        return x
    if dst is T.bool_:
        return B.ne(x, B.const(0.0 if x.dtype.is_float else 0, x.dtype))
    c = compute_dtype(dst)
    if src is T.bool_:
        return B.select(x, B.const(1.0 if c.is_float else 1, c), B.const(0.0 if c.is_float else 0, c))
    if dst.is_float:
        if not x.dtype.is_float:
            f = B.convert(x, c)  # int -> float rounds to nearest even (RTE)
        elif x.dtype is c:
            f = x
        else:
            f = _f64_to_f32(x) if c is T.float32 else B.convert(x, c)  # f32 -> f64 is exact (codegen sees to it)
        return narrow(f, dst)
    if x.dtype.is_float:  # float -> int
        if dst in NARROW_INTS:
            return _float_to_narrow_int(x, src, dst)
        return _float_to_int(x, dst)
    return narrow(B.convert(x, c) if x.dtype is not c else x, dst)  # int -> int: sign-extend or wrap


def _f64_to_f32(x: Value) -> Value:
    # float64 -> float32 is OpFConvert, which rounds to nearest even under RoundingModeRTE 32 (every
    # float64 kernel declares it); a float16/bfloat16 target then rounds that float32 once more, as
    # PyTorch's CPU does (double -> float -> half).
    return B.convert(x, T.float32)


def host_round(value: float, dtype: T.DType) -> float:
    """A Python float rounded (to nearest even) to a float ``dtype``, as a Python float: what a
    constant of that dtype holds. bfloat16 rounds from float32, as PyTorch's CPU does."""
    with np.errstate(over="ignore"):
        if dtype is T.float16:
            return float(np.float16(value))
        if dtype is T.float32:
            return float(np.float32(value))
        if dtype is T.bfloat16:
            return float(bf16_bits_to_float(float_to_bf16_bits(np.float32(value))))
    return float(value)


def float_to_bf16_bits(values) -> np.ndarray:
    """The bfloat16 bits (as int16) nearest to float32 ``values`` (float64 goes through float32 first,
    as PyTorch): round to nearest even, NaN stays NaN (quieted), overflow gives ±inf."""
    with np.errstate(over="ignore"):
        f = np.asarray(values, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = np.where(np.isnan(f), (u >> 16) | 0x40, rounded).astype(np.uint16)
    return out.view(np.int16)


def bf16_bits_to_float(bits) -> np.ndarray:
    """The float32 values (exact) of bfloat16 bits (int16)."""
    a = np.asarray(bits).astype(np.int16).view(np.uint16).astype(np.uint32) << 16
    return a.view(np.float32)


def work_dtype(dtype: T.DType) -> T.DType:
    """The dtype a float composite (mean, var, softmax, norms, ...) computes in for a ``dtype`` input:
    float64 for float64 (never narrowed to float32), float32 for every other dtype."""
    return T.float64 if dtype is T.float64 else T.float32
