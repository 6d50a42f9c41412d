"""Making tensors: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, and the ``*_like`` forms."""

from __future__ import annotations

import itertools
import math
import operator
import warnings

import numpy as np

from .. import tensor as _tensor
from ..errors import DTypeError, OutOfMemoryError, ShapeError
from ..graph import build as lazy
from ..ir import types as T
from ..ops.cast import float_to_bf16_bits, host_round
from ..ops.promotion import default_float, promote_types, scalar_dtype
from . import memory_format as _memory_format
from . import operators as _operators
from .caller import called_by_user, user_stacklevel
from .devices import device as get_device
from .devices import get_default_device
from .dtype_info import refuse_no_tensor_dtype
from .dtypes import check_device_dtype, python_type_dtype
from .exports import Export
from .size import Size

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("tensor"),
    Export("zeros"),
    Export("ones"),
    Export("full"),
    Export("arange"),
    Export("full_like"),
    Export("zeros_like"),
    Export("ones_like"),
)

_NUMPY_TO_VKML = {
    "float64": T.float64,
    "float32": T.float32,
    "float16": T.float16,
    "int64": T.int64,
    "int32": T.int32,
    "int16": T.int16,
    "int8": T.int8,
    "uint8": T.uint8,
    "uint16": T.uint16,
    "bool": T.bool_,
}


def _device(device):
    return get_default_device() if device is None else get_device(device)


# PyTorch's factories (zeros, tensor, arange ... with requires_grad=True) word it so; the attribute
# setter and requires_grad_() have their own words (vkml/tensor.py)
FACTORY_GRAD_MESSAGE = "Only Tensors of floating point and complex dtype can require gradients"


class StorageSizeOverflow(OutOfMemoryError, RuntimeError):
    """A size whose bytes do not fit in int64: PyTorch's RuntimeError, and past any device's memory."""


def check_fits(op: str, shape: tuple, dtype: T.DType, device) -> None:
    """Raise OutOfMemoryError at ``op`` if a ``shape`` tensor of ``dtype`` can never be held by ``device``.

    A creation op checks this eagerly, as PyTorch's allocation fails at the op, although
    vkml only allocates when a kernel needs the values (a reduction of ``ones`` needs none).

    >>> check_fits("ones", (70000, 70000), vkml.int64, cpu)  # doctest: +SKIP
    OutOfMemoryError: ones(): a (70000, 70000) int64 tensor needs 39200000000 bytes, more than cpu can ...
    """
    nbytes = math.prod(shape) * dtype.nbytes
    if nbytes >= 1 << 63:  # PyTorch's check before any allocation
        raise StorageSizeOverflow(
            f"{op}(): a {tuple(shape)} {dtype.name} tensor needs {nbytes} bytes: Storage size calculation "
            f"overflowed with sizes={list(shape)}"
        )
    most = device.largest_allocation_nbytes
    if nbytes > most:
        raise OutOfMemoryError(
            f"{op}(): a {tuple(shape)} {dtype.name} tensor needs {nbytes} bytes, more than {device.name} can "
            f"allocate at once ({most} bytes)"
        )


def _dtype(dtype) -> T.DType | None:
    dtype = python_type_dtype(dtype)
    if isinstance(dtype, T.DType):
        refuse_no_tensor_dtype("", dtype)
        return dtype
    if dtype is None:
        return dtype
    if isinstance(dtype, str):
        dtype = T.by_name(dtype)
        refuse_no_tensor_dtype("", dtype)
        return dtype
    raise DTypeError(f"expected a vkml dtype, got {dtype!r}")


def warn_copy_construct(op: str) -> None:
    """PyTorch's UserWarning for ``torch.tensor(t)`` / ``t.new_tensor(t)`` of a tensor ``t``, when the user's
    code calls ``op`` itself (vkml's own copies through it stay quiet)."""
    if called_by_user(2):  # ``op``'s caller: the user's code, or vkml's own
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
            f"sourceTensor.detach().clone().requires_grad_(True), rather than {op}(sourceTensor).",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def tensor(data, dtype=None, device=None, requires_grad: bool = False):
    """A tensor holding a copy of ``data`` (nested lists, numbers, numpy arrays).

    Default dtypes follow PyTorch: Python floats give float32, ints int64, bools bool; a numpy
    array or scalar keeps its dtype (float64 stays float64, uint8 uint8, uint16 uint16). In a
    sequence each element's own dtype counts and they promote as ``promote_types``
    (``[np.float64(0.5), 1.0]`` is float64, ``[t_float64, 1.0]`` too).

    >>> tensor([[1, 2], [3, 4]]).dtype
    vkml.int64
    """
    dtype = _dtype(dtype)
    if isinstance(data, _tensor.Tensor):
        warn_copy_construct("torch.tensor")
        dtype = dtype or data.dtype
        data = data._host_values()
    try:
        array = np.asarray(data)
    except ValueError:  # numpy >= 1.24 refuses ragged nesting instead of making an object array
        array = np.empty(0, object)
    except TypeError:  # a sequence whose items cannot be read: PyTorch's ValueError
        if not hasattr(data, "__len__"):
            raise
        raise ValueError(f"could not determine the shape of object type '{type(data).__name__}'") from None
    python_data = not isinstance(data, (np.ndarray, np.generic))
    if python_data and dtype is None and array.ndim and array.dtype.kind in "fiub":
        # numpy's dtype for a sequence is not PyTorch's: [np.float64(x)] or [t64, 1.0] is float64,
        # [np.float16(x)] float16 (numpy gives floats of Python floats, float64, too)
        dtype = _sequence_dtype(data, _tensor.Tensor)
    if python_data and (array.dtype == object or array.dtype.name == "uint64"):
        array = _wide_python_ints(array, dtype, data)
    elif python_data and array.dtype.kind == "f" and (dtype is None or dtype in (T.int32, T.int64)):
        # numpy makes floats of Python ints past int64 mixed with others: find them (only past 2**63)
        if (np.abs(array) >= 2.0**63).any():
            _refuse_wide_ints(data, dtype is not None)
    if array.dtype == object and 0 in _first_sizes(data):
        # PyTorch reads the shape down the first elements and, with no element to store, checks no
        # other sequence: tensor([[], [[]]]) is a (2, 0) float tensor
        array = np.zeros(_first_sizes(data))
    if array.dtype == object:
        if not python_data:
            refuse_numpy_dtype(array)
        _raise_ragged(data)
        raise DTypeError(f"tensor(): cannot make a tensor from {type(data).__name__} with mixed or ragged content")
    if dtype is None:
        if array.dtype.kind == "f" and python_data:
            dtype = default_float()
        elif array.dtype.name in ("uint32", "uint64"):
            refuse_no_tensor_dtype("tensor", T.uint32 if array.dtype.name == "uint32" else T.uint64)
        elif array.dtype.name not in _NUMPY_TO_VKML:
            raise DTypeError(f"tensor(): numpy dtype {array.dtype.name} has no vkml dtype")
        else:
            dtype = _NUMPY_TO_VKML[array.dtype.name]
    if dtype is T.uint32:
        raise DTypeError("tensor(): uint32 is an IR type, not a tensor dtype")
    dev = _device(device)
    check_fits("tensor", array.shape, dtype, dev)
    if python_data and not dtype.is_float and dtype is not T.bool_ and array.size:
        _check_python_values_fit(array, dtype)
    try:
        with np.errstate(all="ignore"):
            if dtype is T.bfloat16:  # its bits, rounded from float32 as PyTorch does
                converted = float_to_bf16_bits(array.astype(np.float32))
            else:
                converted = array.astype(dtype.np, copy=False)
    except MemoryError:
        raise OutOfMemoryError(
            f"tensor(): converting {array.size} elements to {dtype.name} ran out of memory"
        ) from None
    out = _operators._from_numpy(converted, dev, dtype)
    if requires_grad:
        out._set_requires_grad(True, FACTORY_GRAD_MESSAGE)
    return out


def _sequence_dtype(data, tensor_type) -> T.DType | None:
    """PyTorch's dtype for ``tensor(data)`` of nested sequences: every element's own dtype (a Python
    float the default float, an int int64, a bool bool; a numpy scalar or array, or a tensor, its
    dtype), promoted pairwise with ``promote_types``. None where an element is none of these
    (``tensor()`` then reports it)."""
    python = {float: default_float(), int: T.int64, bool: T.bool_}
    found: set[T.DType] = set()
    level = [data]
    while level:  # one nesting level at a time; the types of a level are read in one pass at C speed
        items = level[0] if len(level) == 1 else list(itertools.chain.from_iterable(level))
        kinds = set(map(type, items))
        found.update(python[kind] for kind in kinds & python.keys())
        if kinds - python.keys() - {list, tuple}:
            for item in items:
                if type(item) in python or type(item) in (list, tuple):
                    continue
                if isinstance(item, tensor_type):
                    found.add(item.dtype)
                elif isinstance(item, (np.generic, np.ndarray)) and item.dtype.name in _NUMPY_TO_VKML:
                    found.add(_NUMPY_TO_VKML[item.dtype.name])
                else:
                    return None
        nested = kinds & {list, tuple}
        level = [item for item in items if type(item) in nested] if nested else []
    if not found:
        return None
    dtypes = iter(sorted(found, key=lambda d: d.name))
    result = next(dtypes)
    for other in dtypes:
        result = promote_types(result, other)
    return result


def _first_sizes(data) -> list[int]:
    """The lengths of ``data`` and of its first elements, down to the first non-sequence or empty one."""
    sizes, first = [], data
    while isinstance(first, (list, tuple)):
        sizes.append(len(first))
        if not first:
            break
        first = first[0]
    return sizes


def _refuse_self_reference(seq, ancestors: tuple) -> None:
    """PyTorch's TypeError for a list that contains itself (z = [0]; z.append(z))."""
    if not isinstance(seq, (list, tuple)):
        return
    if any(seq is a for a in ancestors):
        raise TypeError("self-referential lists are incompatible")
    for item in seq:
        _refuse_self_reference(item, (*ancestors, seq))


def _raise_ragged(data) -> None:
    """PyTorch's ValueError for nested sequences of unequal lengths: the sizes are read down the first
    elements, then every sequence at dim ``d`` must have ``sizes[d]`` elements. Returns where the
    nesting is even (the content is mixed instead: the caller's TypeError)."""
    _refuse_self_reference(data, ())
    sizes = _first_sizes(data)

    def walk(seq, d: int) -> None:
        if d >= len(sizes) or not isinstance(seq, (list, tuple)):
            return
        if len(seq) != sizes[d]:
            raise ValueError(f"tensor(): expected sequence of length {sizes[d]} at dim {d} (got {len(seq)})")
        for item in seq:
            walk(item, d + 1)

    walk(data, 0)


def refuse_numpy_dtype(ndarray) -> None:
    """PyTorch's TypeError for an array of a dtype no tensor has: an object array, such as a pandas frame's
    ``.values`` when float and bool (``get_dummies``) columns mix, is the common one."""
    if ndarray.dtype.name not in _NUMPY_TO_VKML:
        supported = ", ".join(_NUMPY_TO_VKML)
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{ndarray.dtype.type.__name__}. "
            f"The only supported types are: {supported}."
        )


def _wide_python_ints(array: np.ndarray, dtype, data) -> np.ndarray:
    """Python ints that int64 cannot hold (numpy made uint64 or object arrays of them): floats for a
    float dtype, as PyTorch; otherwise PyTorch's ValueError. Other object arrays pass through."""
    if array.dtype == object:
        flat = array.reshape(-1)
        if not flat.size or not all(type(v) in (int, float, bool) for v in flat):
            return array  # mixed or ragged: tensor()'s own error
    if dtype is not None and dtype.is_float:
        return array.astype(np.float64)
    if dtype is T.bool_:
        return np.array([v != 0 for v in array.reshape(-1)], bool).reshape(array.shape)
    big = next((int(v) for v in array.reshape(-1) if not -(1 << 63) <= int(v) < 1 << 63), None)
    if big is None:  # an object array nested in the list (a pandas row's .values): tensor()'s TypeError
        return array
    raise ValueError(f"tensor(): Overflow when unpacking long long: {big} does not fit int64")


def _refuse_wide_ints(data, integer_dtype: bool) -> None:
    """PyTorch's ValueError for a Python int past int64 in nested lists meant for an integer tensor:
    one given as ``dtype``, or inferred (no Python float among the values)."""
    stack, wide = [data], None
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif type(item) is float and not integer_dtype:
            return  # a float tensor, as PyTorch infers: the int becomes a float
        elif type(item) is int and not -(1 << 63) <= item < 1 << 63:
            wide = item
    if wide is not None:
        raise ValueError(f"tensor(): Overflow when unpacking long long: {wide} does not fit int64")


def _check_python_values_fit(array: np.ndarray, dtype) -> None:
    """PyTorch's check of Python numbers given for an integer dtype (numpy arrays wrap instead, as in
    PyTorch): ``tensor([2**40], dtype=int32)`` is a RuntimeError, not 0."""
    info = np.iinfo(dtype.np)
    values = array.reshape(-1)
    if array.dtype.kind == "f":
        # A float past the largest value is refused even when it truncates into range (127.5 for int8).
        top = float(info.max) if dtype.bits < 32 else float(info.max) + 1
        bad = ~np.isfinite(values) | (values < info.min) | (values >= top if dtype.bits >= 32 else values > top)
    elif dtype in (T.uint8, T.uint16):  # PyTorch lets negative ints down to -255 wrap into uint8 (-1 is 255)
        top = int(info.max)
        bad = (values < -top) | (values > top)
    else:
        bad = (values < info.min) | (values > info.max)
    if bad.any():
        value = values[np.argmax(bad)].item()
        raise RuntimeError(f"tensor(): value {value!r} cannot be converted to type {dtype.name} without overflow")


def size_keyword(op: str, size: tuple, kwargs: dict) -> tuple:
    """The positional sizes, or PyTorch's keyword form ``zeros(size=(2, 3))`` found in ``kwargs``.

    Any other keyword is Python's TypeError for an unknown argument, as a plain signature gives, and
    no size at all is PyTorch's TypeError.
    """
    if "size" in kwargs:
        if size:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        size = (kwargs.pop("size"),)
    if kwargs:
        raise TypeError(f"{op}() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if not size:  # PyTorch has no default size: zeros() is a TypeError, zeros(()) the 0-d tensor
        if op in ("rand", "randn"):
            raise TypeError(
                f"{op}() received an invalid combination of arguments - got (), but expected (tuple of ints size)"
            )
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    return size


def _size_index(s, size: tuple) -> int:
    """One size that is not an int: a one-element integer tensor or a 0-d integer numpy array counts, as in
    PyTorch's argument parser (``ones((tensor(3), tensor(4)))``); anything else is its TypeError."""
    if not isinstance(s, (bool, np.bool_, float)) and hasattr(type(s), "__index__"):
        try:
            return operator.index(s)
        except TypeError:
            pass
    raise TypeError(f"sizes must be a tuple of ints, got {size}")  # PyTorch's type


def _size_args(size) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if any(not isinstance(s, (int, np.integer)) or isinstance(s, (bool, np.bool_)) for s in size):
        size = tuple(_size_index(s, size) for s in size)
    if any(s < 0 for s in size):
        raise ShapeError(f"Trying to create tensor with negative dimension: sizes must be non-negative, got {size}")
    return tuple(int(s) for s in size)


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False):
    """A tensor of ``size`` filled with ``fill_value`` (no memory is written until it is used)."""
    return _filled("full", size, fill_value, dtype, device, requires_grad)


def _filled(op: str, size, fill_value, dtype, device, requires_grad: bool):
    shape = _size_args((size,) if isinstance(size, (int, np.integer)) else tuple(size))
    value = fill_value.item() if isinstance(fill_value, np.generic) else fill_value
    dtype = _dtype(dtype) or scalar_dtype(value)
    # PyTorch's checks: an int past 64 bits is an OverflowError, a value beyond the dtype a RuntimeError
    lazy.check_scalar_fits(op, value, dtype)
    if dtype.is_float:
        value = host_round(value, dtype)
    dev = _device(device)
    check_device_dtype(op, dtype, dev)
    check_fits(op, shape, dtype, dev)
    out = _operators._wrap(lazy.const_node(value, dtype, shape, dev))
    if requires_grad:
        out._set_requires_grad(True, FACTORY_GRAD_MESSAGE)
    return out


def zeros(*size, dtype=None, device=None, requires_grad: bool = False, **size_kw):
    """A tensor of zeros (float32 unless ``dtype`` says otherwise); ``size=`` may name the sizes."""
    size = size_keyword("zeros", size, size_kw)
    return _filled("zeros", _size_args(size), 0, _dtype(dtype) or default_float(), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False, **size_kw):
    """A tensor of ones (float32 unless ``dtype`` says otherwise); ``size=`` may name the sizes."""
    size = size_keyword("ones", size, size_kw)
    return _filled("ones", _size_args(size), 1, _dtype(dtype) or default_float(), device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad: bool = False, *, memory_format=None):
    """``full`` with ``input``'s shape, and its dtype and device unless given.

    >>> full_like(zeros(2, dtype=int64), 7).tolist()  # doctest: +SKIP
    [7, 7]
    """
    return _full_like("full_like", input, fill_value, dtype, device, requires_grad, memory_format)


def _full_like(op: str, input, fill_value, dtype, device, requires_grad: bool, memory_format=None):
    if not isinstance(input, _tensor.Tensor):
        raise TypeError(f"'{op}': argument 'input' must be a vkml.Tensor, not {type(input).__name__}")
    dtype = _dtype(dtype) or input.dtype
    out = _filled(op, input.shape, fill_value, dtype, device or input.device, requires_grad)
    return _memory_format.like(op, out, input, memory_format)


def zeros_like(input, dtype=None, device=None, requires_grad: bool = False, *, memory_format=None):
    """Zeros with ``input``'s shape, dtype and device (unless given). Example: ``vkml.zeros_like(x)``."""
    return _full_like("zeros_like", input, 0, dtype, device, requires_grad, memory_format)


def ones_like(input, dtype=None, device=None, requires_grad: bool = False, *, memory_format=None):
    """Ones with ``input``'s shape, dtype and device (unless given). Example: ``vkml.ones_like(x)``."""
    return _full_like("ones_like", input, 1, dtype, device, requires_grad, memory_format)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``, computed as PyTorch does (in float64).
    ``requires_grad`` makes the result a leaf that requires grad (a float dtype only, as PyTorch).

    >>> arange(3).tolist()
    [0, 1, 2]
    """
    if end is None:
        start, end = 0, start
    # a numpy scalar or a 0-dim tensor is its number (the result's dtype follows the numbers, as PyTorch's)
    start, end, step = (v.item() if isinstance(v, (np.generic, _tensor.Tensor)) else v for v in (start, end, step))
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise RuntimeError(f"arange(): unsupported range: {start} -> {end} (step {step})")
    dtype = _dtype(dtype)
    if dtype is T.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    given_step = step != 0
    if dtype is not None and not dtype.is_float:
        start, end, step = int(start), int(end), int(step)  # PyTorch truncates each to an integer first
    if step == 0:
        # PyTorch's types: RuntimeError for a zero step, ValueError for one an integer dtype truncated to 0
        raise (ValueError if given_step else RuntimeError)("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"arange(): upper bound and lower bound inconsistent with step sign ({start}, {end}, {step})"
        )
    n = max(0, math.ceil((end - start) / step))
    if n >= 1 << 63:
        raise RuntimeError("invalid size, possible overflow?")
    is_int = all(isinstance(v, int) for v in (start, end, step))
    dtype = dtype or (T.int64 if is_int else default_float())
    check_fits("arange", (n,), dtype, _device(device))
    values = (
        start + np.arange(n, dtype=np.float64) * step if not is_int else start + np.arange(n, dtype=np.int64) * step
    )
    return tensor(values.astype(dtype.value_np), dtype=dtype, device=device, requires_grad=requires_grad)


def legacy_new(name: str, dtype, device, args):
    """PyTorch's legacy constructor (``vkml.Tensor(2, 3)``, ``vkml.FloatTensor(...)``, ``x.new(...)``): sizes
    (ints or a Size) give a new tensor (zeros here; PyTorch's are uninitialized), other data is copied, no
    argument gives an empty tensor, a tensor of the dtype is itself."""
    if len(args) == 1 and isinstance(args[0], _tensor.Tensor):
        if args[0].dtype is not dtype:
            raise TypeError(f"expected {dtype.name} (got {args[0].dtype.name})")
        return args[0]
    if len(args) == 1 and not isinstance(args[0], int) and not isinstance(args[0], Size):
        return tensor(args[0], dtype=dtype, device=device)
    sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(f"{name}(): expected sizes as ints or data as a sequence, got {args!r}")
    if not sizes:
        return tensor([], dtype=dtype, device=device)
    return zeros(sizes, dtype=dtype, device=device)
