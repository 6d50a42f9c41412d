"""Making tensors: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, and the ``*_like`` forms."""

from __future__ import annotations

import math

import numpy as np

from . import lazy
from .devices import device as get_device
from .dtypes import scalar_dtype
from .errors import DTypeError, OutOfMemoryError
from .ir import types as T

_NUMPY_TO_VKML = {
    "float64": T.float32,
    "float32": T.float32,
    "float16": T.float16,
    "int64": T.int64,
    "int32": T.int32,
    "int16": T.int32,
    "int8": T.int32,
    "uint8": T.int32,
    "uint16": T.int32,
    "bool": T.bool_,
}


def _device(device):
    return get_device(device if device is not None else "cpu")


def check_fits(op: str, shape: tuple, dtype: T.DType, device) -> None:
    """Raise OutOfMemoryError at ``op`` if a ``shape`` tensor of ``dtype`` can never be held by ``device``.

    A creation op checks this eagerly, as PyTorch's allocation fails at the op, although
    vkml only allocates when a kernel needs the values (a reduction of ``ones`` needs none).

    >>> check_fits("ones", (70000, 70000), vkml.int64, cpu)  # doctest: +SKIP
    OutOfMemoryError: ones(): a (70000, 70000) int64 tensor needs 39200000000 bytes, more than cpu can ...
    """
    nbytes = math.prod(shape) * dtype.nbytes
    most = device.largest_allocation_nbytes
    if nbytes > most:
        raise OutOfMemoryError(
            f"{op}(): a {tuple(shape)} {dtype.name} tensor needs {nbytes} bytes, more than {device.name} can "
            f"allocate at once ({most} bytes)"
        )


def _dtype(dtype) -> T.DType | None:
    if dtype is None or isinstance(dtype, T.DType):
        return dtype
    if isinstance(dtype, str):
        return T.by_name(dtype)
    raise DTypeError(f"expected a vkml dtype, got {dtype!r}")


def tensor(data, dtype=None, device=None, requires_grad: bool = False):
    """A tensor holding a copy of ``data`` (nested lists, numbers, numpy arrays).

    Default dtypes follow PyTorch: Python floats give float32, ints int64, bools bool;
    numpy float64 becomes float32 (vkml has no float64).

    >>> tensor([[1, 2], [3, 4]]).dtype
    vkml.int64
    """
    from .functions import _from_numpy
    from .tensor import Tensor

    if isinstance(data, Tensor):
        data = data.numpy()
    dtype = _dtype(dtype)
    try:
        array = np.asarray(data)
    except ValueError:  # numpy >= 1.24 refuses ragged nesting instead of making an object array
        array = np.empty(0, object)
    if array.dtype == object:
        raise DTypeError(f"tensor(): cannot make a tensor from {type(data).__name__} with mixed or ragged content")
    if dtype is None:
        if array.dtype.kind == "f" and not isinstance(data, np.ndarray):
            dtype = T.float32
        elif array.dtype.name not in _NUMPY_TO_VKML:
            raise DTypeError(f"tensor(): numpy dtype {array.dtype.name} has no vkml dtype")
        else:
            dtype = _NUMPY_TO_VKML[array.dtype.name]
    if dtype is T.uint32:
        raise DTypeError("tensor(): uint32 is an IR type, not a tensor dtype")
    dev = _device(device)
    check_fits("tensor", array.shape, dtype, dev)
    try:
        with np.errstate(all="ignore"):
            converted = array.astype(dtype.np, copy=False)
    except MemoryError:
        raise OutOfMemoryError(
            f"tensor(): converting {array.size} elements to {dtype.name} ran out of memory"
        ) from None
    out = _from_numpy(converted, dev)
    if requires_grad:
        out.requires_grad = True
    return out


def _size_args(size) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if any(not isinstance(s, (int, np.integer)) or s < 0 for s in size):
        raise ValueError(f"sizes must be non-negative integers, got {size}")
    return tuple(int(s) for s in size)


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False):
    """A tensor of ``size`` filled with ``fill_value`` (no memory is written until it is used)."""
    return _filled("full", size, fill_value, dtype, device, requires_grad)


def _filled(op: str, size, fill_value, dtype, device, requires_grad: bool):
    from .functions import _wrap

    shape = _size_args((size,) if isinstance(size, int) else tuple(size))
    dtype = _dtype(dtype) or scalar_dtype(fill_value)
    value = fill_value
    if dtype is T.float16:
        value = float(np.float16(fill_value))
    elif dtype is T.float32:
        value = float(np.float32(fill_value))
    dev = _device(device)
    check_fits(op, shape, dtype, dev)
    out = _wrap(lazy.const_node(value, dtype, shape, dev))
    if requires_grad:
        out.requires_grad = True
    return out


def zeros(*size, dtype=None, device=None, requires_grad: bool = False):
    """A tensor of zeros (float32 unless ``dtype`` says otherwise)."""
    return _filled("zeros", _size_args(size), 0, _dtype(dtype) or T.float32, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False):
    """A tensor of ones (float32 unless ``dtype`` says otherwise)."""
    return _filled("ones", _size_args(size), 1, _dtype(dtype) or T.float32, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad: bool = False):
    """``full`` with ``input``'s shape, and its dtype and device unless given.

    >>> full_like(zeros(2, dtype=int64), 7).tolist()  # doctest: +SKIP
    [7, 7]
    """
    return _filled_like("full_like", input, fill_value, dtype, device, requires_grad)


def _filled_like(op: str, input, fill_value, dtype, device, requires_grad: bool):
    dtype = _dtype(dtype) or input.dtype
    return _filled(op, input.shape, fill_value, dtype, device or input.device, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad: bool = False):
    """Zeros with ``input``'s shape, dtype and device (unless given). Example: ``vkml.zeros_like(x)``."""
    return _filled_like("zeros_like", input, 0, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad: bool = False):
    """Ones with ``input``'s shape, dtype and device (unless given). Example: ``vkml.ones_like(x)``."""
    return _filled_like("ones_like", input, 1, dtype, device, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None):
    """Values from ``start`` to ``end`` (exclusive) by ``step``, computed as PyTorch does (in float64).

    >>> arange(3).tolist()
    [0, 1, 2]
    """
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange(): upper bound and lower bound inconsistent with step sign ({start}, {end}, {step})")
    n = max(0, math.ceil((end - start) / step))
    is_int = all(isinstance(v, int) for v in (start, end, step))
    dtype = _dtype(dtype) or (T.int64 if is_int else T.float32)
    check_fits("arange", (n,), dtype, _device(device))
    values = (
        start + np.arange(n, dtype=np.float64) * step if not is_int else start + np.arange(n, dtype=np.int64) * step
    )
    return tensor(values.astype(dtype.np), dtype=dtype, device=device)
