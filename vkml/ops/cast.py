"""Conversions between dtypes, in the compute representation kernels use.

In a kernel a float16 tensor element is carried as a float32 value that is exactly
representable in float16; it becomes float16 bits only when stored. So a cast to float16 is a
rounding (software narrowing, never OpFConvert), and float16 -> float32 is free.
"""

from __future__ import annotations

from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Value
from . import mathlib as M


def compute_dtype(dtype: T.DType) -> T.DType:
    """The IR type that carries values of ``dtype`` inside a kernel."""
    return T.float32 if dtype is T.float16 else dtype


def round_to_f16(x: Value) -> Value:
    """Round a float32 value to the nearest float16 (RNE), kept as float32."""
    return B.convert(M.f32_to_f16(x), T.float32)


def _float_to_int(x: Value, dst: T.DType) -> Value:
    # Truncate toward zero; NaN, ±inf and out-of-range values give INT_MIN (what PyTorch gives on x86-64).
    limit = float(2 ** (dst.bits - 1))
    ok = (x >= -limit) & (x < limit)
    safe = B.select(ok, x, 0.0)
    return B.select(ok, B.convert(safe, dst), B.const(-(2 ** (dst.bits - 1)), dst))


def cast_value(x: Value, src: T.DType, dst: T.DType) -> Value:
    """Convert ``x`` (carrying a ``src`` element) to carry a ``dst`` element, as PyTorch's ``.to``."""
    if src is dst:
        return x
    if dst is T.bool_:
        return B.ne(x, B.const(0.0 if x.dtype.is_float else 0, x.dtype))
    if src is T.bool_:
        c = compute_dtype(dst)
        return B.select(x, B.const(1.0 if c.is_float else 1, c), B.const(0.0 if c.is_float else 0, c))
    if dst.is_float:
        f = x if x.dtype.is_float else B.convert(x, T.float32)
        return round_to_f16(f) if dst is T.float16 else f
    if x.dtype.is_float:  # float -> int
        return _float_to_int(x, dst)
    return B.convert(x, dst)  # int -> int: sign-extend or wrap
