"""Tensors in and out of numpy, DLPack and PyTorch: ``from_numpy``, ``as_tensor``, ``from_dlpack``,
``Tensor.__array__`` and ``Tensor.__dlpack__``, with PyTorch's names (docs/interop.md).

One divergence, stated: a vkml tensor never shares memory with a numpy array or a DLPack
producer. PyTorch's ``from_numpy`` returns a tensor viewing the array, so writes to either show in
the other; vkml's tensors live in device buffers that the lazy graph treats as its own (a buffer
may be reused once no node needs it), so ``from_numpy`` copies the array when it is called, and a
later write to the array does not reach the tensor. Exports copy too: ``np.asarray(t)`` and
``np.from_dlpack(t)`` are new arrays.

    >>> import numpy as np, vkml
    >>> a = np.arange(3, dtype=np.float32)
    >>> t = vkml.from_numpy(a)
    >>> a[0] = 7.0                  # PyTorch's tensor would see this; vkml's copy does not
    >>> t.tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

import enum

import numpy as np

from .. import tensor as _tensor
from ..errors import DTypeError
from ..ir import types as T
from . import creation
from .devices import device as get_device
from .dtypes import python_type_dtype


class DLDeviceType(enum.IntEnum):
    """DLPack's device types that vkml names (dlpack.h's ``DLDeviceType``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLVulkan = 7


# numpy dtypes a vkml tensor can be made from, and what each becomes (as ``vkml.tensor`` converts;
# docs/dtypes.md).
_FROM_NUMPY = creation._NUMPY_TO_VKML


def from_numpy(ndarray):
    """A tensor with a copy of ``ndarray``'s values (PyTorch's would share its memory: see the module text).

    Each numpy dtype becomes its vkml dtype, as in ``vkml.tensor``.

    >>> from_numpy(np.array([1, 2])).dtype
    vkml.int64
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    creation.refuse_numpy_dtype(ndarray)
    return creation.tensor(ndarray, device="cpu")  # numpy's memory is the host's, whatever the default device


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor: a tensor of the asked dtype and device is returned itself, another tensor is
    converted with ``to`` (keeping autograd), anything else is copied as ``vkml.tensor`` copies it.

    Divergence: PyTorch's ``as_tensor`` of a numpy array shares its memory (a write through either
    shows in the other); vkml's copies it at the call (docs/interop.md), so the tensor keeps the
    values the array had then.

    >>> x = vkml.ones(2)
    >>> as_tensor(x) is x
    True
    """
    if isinstance(data, _tensor.Tensor):
        out = data
        if device is not None and get_device(device) is not out.device:
            out = out.to(device)
        if dtype is not None and creation._dtype(dtype) is not out.dtype:
            out = out.to(creation._dtype(dtype))
        return out
    if isinstance(data, np.ndarray) and dtype is None:
        out = from_numpy(data)
        return out if device is None else out.to(device)
    return creation.tensor(data, dtype=dtype, device=device)


# ---------------------------------------------------------------------- DLPack


def dlpack_device(tensor) -> tuple[DLDeviceType, int]:
    """``Tensor.__dlpack_device__``: (kDLCPU, 0) on every device — where the exported data lives.

    ``__dlpack__`` hands out a host copy whatever the tensor's device (no DLPack consumer can read
    Vulkan memory), so ``torch.from_dlpack(t)``, ``torch.as_tensor(t)`` and ``np.from_dlpack(t)``
    take a Vulkan tensor in one call, as they take a CUDA one (theirs onto the CPU: ``.to("cuda")``
    after, if wanted).
    """
    return DLDeviceType.kDLCPU, 0


def dlpack(tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: a DLPack capsule of a new host copy of the values, on every device.

    vkml cannot hand out its own memory, so ``copy=False`` raises BufferError, and a consumer that
    asks for another device than the CPU is refused.
    """
    op = "__dlpack__"
    if copy is False:
        raise BufferError(f"{op}: vkml tensors are exported as a copy (copy=False cannot be honoured)")
    if dl_device is not None and int(dl_device[0]) != DLDeviceType.kDLCPU:
        raise BufferError(f"{op}: vkml exports to the CPU only, not to DLPack device {tuple(dl_device)}")
    if tensor.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    array = np.array(tensor.numpy(), order="C")  # a 0-d tensor stays 0-d (ascontiguousarray makes it 1-d)
    if max_version is None:
        return array.__dlpack__()
    try:
        return array.__dlpack__(max_version=max_version)
    except TypeError:  # a numpy before 2.1 exports the unversioned capsule only, which the protocol allows
        return array.__dlpack__()


class _Capsule:
    """A bare DLPack capsule (the protocol's legacy form) seen as a producer of host memory."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self):
        return DLDeviceType.kDLCPU, 0


def from_dlpack(ext_tensor):
    """A vkml CPU tensor with a copy of a DLPack producer's values (a numpy array, a PyTorch CPU tensor,
    any object with ``__dlpack__``, or a legacy capsule). PyTorch's would share the memory.

    >>> from_dlpack(np.arange(3)).tolist()
    [0, 1, 2]
    """
    if isinstance(ext_tensor, _tensor.Tensor):
        return ext_tensor.detach()
    producer = ext_tensor
    if type(ext_tensor).__name__ == "PyCapsule":
        producer = _Capsule(ext_tensor)
    elif not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(
            f"from_dlpack(): expected an object with __dlpack__ or a DLPack capsule, got {type(ext_tensor).__name__}"
        )
    else:
        kind, _ = ext_tensor.__dlpack_device__()
        if int(kind) != DLDeviceType.kDLCPU:
            raise BufferError(
                f"from_dlpack(): vkml imports host memory only, and this producer is on DLPack device type {int(kind)}; "
                f"move it to the CPU first"
            )
    try:
        array = np.from_dlpack(producer)
    except (TypeError, BufferError, RuntimeError) as exc:
        raise type(exc)(f"from_dlpack(): {exc}") from None
    if array.dtype.name not in _FROM_NUMPY:
        raise DTypeError(f"from_dlpack(): a DLPack tensor of {array.dtype.name} has no vkml dtype")
    return from_numpy(np.array(array))


# ---------------------------------------------------------------------- Tensor.to and Python numbers


def parse_to(args: tuple, kwargs: dict) -> tuple:
    """(device, dtype, copy) from ``Tensor.to``'s arguments in any of PyTorch's three forms."""
    kwargs = dict(kwargs)
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)  # every copy is ordered with the work around it: nothing to wait for
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    rest = list(args)
    if rest and isinstance(rest[0], _tensor.Tensor):
        other = rest.pop(0)
        device, dtype = other.device, other.dtype
    elif rest and _is_dtype(rest[0]):
        dtype = creation._dtype(rest.pop(0))
    elif rest and rest[0] is not None and not isinstance(rest[0], bool):
        device = rest.pop(0)
        if rest and _is_dtype(rest[0]):
            dtype = creation._dtype(rest.pop(0))
    for name, value in zip(("non_blocking", "copy"), rest):
        if not isinstance(value, bool):
            raise TypeError(f"to() received an invalid combination of arguments: {name}={value!r} is not a bool")
        if name == "copy":
            copy = value
    if len(rest) > 2:
        raise TypeError(f"to() received an invalid combination of arguments: {args!r}")
    if dtype is not None:
        dtype = creation._dtype(dtype)
    return device, dtype, copy


def _is_dtype(value) -> bool:
    return isinstance(python_type_dtype(value), T.DType)


# ---------------------------------------------------------------------- Python numbers from tensors


def to_array(tensor, dtype=None, copy=None) -> np.ndarray:
    """``Tensor.__array__``: ``np.asarray(t)`` and ``np.asarray(t, dtype)`` (always a new array)."""
    if copy is False:
        raise ValueError(
            "Unable to avoid copy while creating an array as requested (vkml tensors live in device buffers)."
        )
    array = tensor.numpy()
    return array if dtype is None else array.astype(dtype, copy=False)


def to_index(tensor) -> int:
    """``Tensor.__index__``: a one-element integer (or bool) tensor as a Python int."""
    if tensor.numel() != 1 or tensor.dtype.is_float:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(tensor.item())


def to_bool(tensor) -> bool:
    """``Tensor.__bool__``: PyTorch's errors for tensors of no or several elements."""
    n = tensor.numel()
    if n != 1:
        what = "no values" if n == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
    return bool(tensor.item())


def to_scalar(tensor, kind):
    """``Tensor.__float__`` / ``__int__``: one element's value as ``kind``."""
    if tensor.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return kind(tensor.item())
