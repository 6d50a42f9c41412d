"""``vkml.finfo`` and ``vkml.iinfo``: the numeric limits of a dtype, as ``torch.finfo``/``torch.iinfo``.

The attributes, their Python types (``dtype`` is the dtype's name, a str, as PyTorch's), the
repr and the TypeErrors are PyTorch's.
"""

from __future__ import annotations

import math
import sys

from ..ir import types as T
from .defaults import get_default_dtype

# (mantissa bits without the hidden one, largest exponent, smallest normal exponent) of each float dtype
_FLOATS = {
    "float16": (10, 15, -14),
    "bfloat16": (7, 127, -126),
    "float32": (23, 127, -126),
    "float64": (52, 1023, -1022),
}


# PyTorch's dtypes that vkml has as dtype objects but no tensors of (uint32 is also the kernel IR's type).
NO_TENSORS = (T.uint32, T.uint64)


# The names of frames that wrap a public op (autocast's, out='s, a registered op's public function): the op
# a complex tensor reaches is named from the frames under them.
_WRAPPER_NAMES = frozenset(
    {"wrapper", "wrapped", "method", "inner", "dunder", "call", "<lambda>", "decorated", "autocast_op", "dispatched"}
    | {"fn", "function"}
)


def called_op(depth: int = 2) -> str:
    """The public vkml function the user called: the outermost vkml frame under user code (a frame of a
    function made for an op by name gives the name it holds)."""
    frame = sys._getframe(depth)
    name = None
    while frame is not None and frame.f_globals.get("__name__", "").startswith("vkml"):
        if frame.f_code.co_name not in _WRAPPER_NAMES:
            name = frame.f_code.co_name
        else:
            held = next((frame.f_locals[k] for k in ("name", "_name", "op") if k in frame.f_locals), None)
            held = getattr(held, "name", held)
            if isinstance(held, str):
                name = held
        frame = frame.f_back
    return (name or "op").strip("_")


def complex_not_implemented(op: str, dtype) -> RuntimeError:
    """PyTorch's error for an op without a complex form (docs/complex.md lists the ops that have one)."""
    if op in _OWN_WORDS:
        return _OWN_WORDS[op][0](_OWN_WORDS[op][1])
    # PyTorch's dispatch macro raises NotImplementedError (a RuntimeError) for a dtype without a kernel
    return NotImplementedError(f"\"{op}\" not implemented for '{_COMPLEX_NAMES[dtype.name]}'")


# ops whose complex refusal PyTorch words in its own way: (class, message)
_OWN_WORDS = {
    "nansum": (RuntimeError, "nansum on CPU does not support complex inputs"),
    "sign": (
        NotImplementedError,
        "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
    ),
}


_COMPLEX_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def refuse_no_tensor_dtype(op: str, dtype) -> None:
    """NotImplementedError at ``op`` for a dtype vkml has no tensors of (uint32, uint64); PyTorch's RuntimeError
    for a complex dtype reaching an op that makes real tensors (the complex ones are vkml/frontend/complex.py's)."""
    if dtype is T.complex64 or dtype is T.complex128:
        raise complex_not_implemented(op or called_op(), dtype)
    if dtype is T.uint32 or dtype is T.uint64:
        raise NotImplementedError(
            f"{f'{op!r}: ' if op else ''}vkml has no {dtype.name} tensors (PyTorch's have few kernels too); use int64, or uint16 "
            "for 16-bit data (docs/dtypes.md)"
        )


def _check(fn: str, dtype) -> None:
    if not isinstance(dtype, T.DType):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be vkml.dtype, not {type(dtype).__name__}")


def _g(value) -> str:
    return f"{float(value):g}"


class finfo:  # noqa: N801 - PyTorch's name
    """The limits of a float dtype (default: the default dtype), as ``torch.finfo``.

    >>> import vkml
    >>> vkml.finfo(vkml.float16).max, vkml.finfo(vkml.bfloat16).eps
    (65504.0, 0.0078125)
    """

    __hash__ = None  # PyTorch's finfo compares equal by value and is not hashable

    def __init__(self, type=None):  # noqa: A002 - PyTorch's argument name
        dtype = get_default_dtype() if type is None else type
        _check("finfo", dtype)
        if not dtype.is_float:
            raise TypeError("vkml.finfo() requires a floating point input type. Use vkml.iinfo to handle 'vkml.finfo'")
        mantissa, emax, emin = _FLOATS[dtype.name]
        self.bits = dtype.bits
        self.eps = 2.0**-mantissa
        self.max = (2.0 - 2.0**-mantissa) * 2.0**emax
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0**emin
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype = dtype.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, eps={_g(self.eps)}, "
            f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """The limits of an integer dtype, as ``torch.iinfo``.

    >>> import vkml
    >>> vkml.iinfo(vkml.uint8).max, vkml.iinfo(vkml.int16).min
    (255, -32768)
    """

    __hash__ = None

    def __init__(self, type):  # noqa: A002 - PyTorch's argument name
        _check("iinfo", type)
        if type is T.bool_:
            raise TypeError("vkml.bool is not supported by vkml.iinfo")
        if not type.is_int:
            raise TypeError("vkml.iinfo() requires an integer input type. Use vkml.finfo to handle 'vkml.iinfo'")
        self.bits = type.bits
        self.min = -(2 ** (type.bits - 1)) if type.is_signed else 0
        self.max = 2 ** (type.bits - 1) - 1 if type.is_signed else 2**type.bits - 1
        self.dtype = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"


# ---------------------------------------------------------------- dtype names in PyTorch's messages

# PyTorch's ScalarType name and C++ type name of each dtype, as its error messages print them.
_SCALAR_TYPE = {
    "float32": ("Float", "float"),
    "float64": ("Double", "double"),
    "float16": ("Half", "c10::Half"),
    "bfloat16": ("BFloat16", "c10::BFloat16"),
    "int64": ("Long", "long int"),
    "int32": ("Int", "int"),
    "int16": ("Short", "short int"),
    "int8": ("Char", "signed char"),
    "uint8": ("Byte", "unsigned char"),
    "uint16": ("UInt16", "unsigned short"),
    "bool": ("Bool", "bool"),
}


def scalar_type_name(dtype: T.DType) -> str:
    """PyTorch's ScalarType name (``Float``, ``Long``, ...) of ``dtype``."""
    return _SCALAR_TYPE.get(dtype.name, (dtype.name,))[0]


def cpp_type_name(dtype: T.DType) -> str:
    """PyTorch's C++ type name (``float``, ``long int``, ``unsigned char``, ...) of ``dtype``, as some of its
    errors print it."""
    return _SCALAR_TYPE.get(dtype.name, (dtype.name, dtype.name))[1]


def check_matmul_dtypes(op: str, a: T.DType, b: T.DType, a_ndim: int, b_ndim: int) -> None:
    """PyTorch's RuntimeError for a matrix product of two dtypes (it never promotes them), worded as
    the kernel PyTorch's ``matmul`` reaches for those ranks words it (dot, addmv, mm or bmm) after
    the public op's name; nothing if one dtype."""
    if a is b:
        return
    name = scalar_type_name
    if a_ndim == 1 and b_ndim == 1:
        raise RuntimeError(f"{op}: dot : expected both vectors to have same dtype, but found {name(a)} and {name(b)}")
    if b_ndim == 1:  # a matrix (or a folded batch of them) times a vector
        raise RuntimeError(
            f"{op}: addmv input tensors must have the same dtype, but got {name(b)}, {name(a)}, and {name(b)}"
        )
    if b_ndim == 2:  # a vector or a (folded) matrix times a matrix
        cpp = {d: _SCALAR_TYPE.get(d.name, ("", d.name))[1] for d in (a, b)}
        raise RuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got: {cpp[a]} != {cpp[b]}")
    if a is T.bool_:  # PyTorch's bmm looks for a bool kernel first
        raise RuntimeError(f"{op}: \"bmm\" not implemented for 'Bool'")
    raise RuntimeError(f"{op}: expected scalar type {name(a)} but found {name(b)}")


def can_cast(from_: T.DType, to: T.DType) -> bool:
    """Whether PyTorch's casting rules let an op write a ``from_`` result into a ``to`` tensor
    (``torch.can_cast``): never from complex to a real dtype, from a float to an integer or bool, nor from an
    integer to bool.

    >>> import vkml
    >>> vkml.can_cast(vkml.float64, vkml.float16), vkml.can_cast(vkml.float32, vkml.int64)
    (True, False)
    """
    for name, value in (("from_", from_), ("to", to)):
        if not isinstance(value, T.DType):
            raise TypeError(f"can_cast(): argument '{name}' must be vkml.dtype, not {type(value).__name__}")

    def kind(d: T.DType) -> int:
        # bool < integers < floats < complex: a cast may go up this order, never down
        return 3 if d.is_complex else 2 if d.is_float else (0 if d is T.bool_ else 1)

    return kind(from_) <= kind(to)
