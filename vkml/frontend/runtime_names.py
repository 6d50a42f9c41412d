"""PyTorch's process-wide switches, storage queries and small constructors that training scripts call
(``torch.GradScaler``, ``torch.set_anomaly_enabled``, ``torch.empty_strided``, ``torch.frombuffer``,
``Tensor.data_ptr``, ``Tensor.untyped_storage``, ``Tensor.apply_``, ...), answered for vkml.

vkml has no raw memory a program could address: a tensor's values live in lazy nodes and device
buffers. ``data_ptr()`` is therefore a stable integer that identifies a storage and an element of it
(equal for views that start at the same element, ``storage_offset() * element_size()`` bytes past
their owner's), never an address to hand to C; ``untyped_storage()`` answers ``nbytes()``,
``size()`` and ``data_ptr()`` for the storage the tensor views.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
import weakref

import numpy as np

from .. import tensor as _tensor
from ..ir import types as T
from . import autograd, cpu, creation, cuda, mt19937, windows
from . import operators as F
from . import random as _random
from .devices import device as get_device
from .dtype_info import refuse_no_tensor_dtype
from .exports import Export
from .grad_scaler import GradScaler

# ---------------------------------------------------------------------- process-wide switches


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for the process (``torch.set_anomaly_enabled``; see
    ``vkml.autograd.set_detect_anomaly``)."""
    autograd.set_detect_anomaly(enabled, check_nan)


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (``torch.is_anomaly_enabled``)."""
    return autograd.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN (``torch.is_anomaly_check_nan_enabled``)."""
    return autograd.is_anomaly_check_nan_enabled()


_warn_always = False


def set_warn_always(b: bool) -> None:
    """PyTorch's switch that makes its warn-once warnings warn every time (``torch.set_warn_always``).

    vkml's warnings go through Python's ``warnings`` module, whose filters decide how often each is
    shown; those PyTorch gives once a process (conv's ``padding='same'`` zero-padded copy) warn every
    time while it is on, and the value is kept for ``is_warn_always_enabled``, as PyTorch keeps it."""
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled() -> bool:
    """The value ``set_warn_always`` recorded (False at start, as PyTorch's)."""
    return _warn_always


_interop_threads: int | None = None


def set_num_interop_threads(num: int) -> None:
    """Record the number of threads for inter-op parallelism (``torch.set_num_interop_threads``).

    vkml runs one op graph at a time and has no inter-op pool; the value is kept for
    ``get_num_interop_threads`` and changes no result (nor does it in PyTorch)."""
    if isinstance(num, bool) or not isinstance(num, int) or num <= 0:
        raise RuntimeError(f"Expected positive number of threads, got {num!r}")
    global _interop_threads
    _interop_threads = num


def get_num_interop_threads() -> int:
    """The value ``set_num_interop_threads`` recorded, else the number of CPUs this process may use."""
    if _interop_threads is not None:
        return _interop_threads
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def set_flush_denormal(mode: bool) -> bool:
    """PyTorch's switch that flushes denormal floats to zero on the CPU; returns whether it took effect.

    vkml's kernels keep denormals on every backend (the CPU interpreter is numpy's IEEE arithmetic, and
    a Vulkan kernel's denormal mode is the driver's), so there is no mode to set: the answer is False,
    PyTorch's answer on a CPU without the feature, and values are unchanged."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' must be bool, not {type(mode).__name__}")
    return False


def get_device_module(device=None):
    """The module of a device type's functions (``torch.get_device_module``): ``vkml.cuda`` for
    ``"cuda"`` and ``"vulkan"``, ``vkml.cpu`` for ``"cpu"``; with no argument the accelerator's when
    there is one, else ``vkml.cpu``."""

    if device is None:
        return cuda if cuda.is_available() else cpu
    kind = device if isinstance(device, str) else getattr(device, "type", None)
    if not isinstance(kind, str):
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    kind = kind.split(":")[0]
    if kind in ("cuda", "vulkan"):
        return cuda
    if kind == "cpu":
        return cpu
    get_device(device)  # PyTorch's error for a name that is no device
    raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.")


# ---------------------------------------------------------------------- storages


# A fake address per storage owner, made when first asked for and kept while the owner lives: far apart,
# so that no two storages' byte ranges meet.
_next_address = itertools.count(1)
_SPACING = 1 << 40


def _owner(t):
    windows.rehome(t)
    return t if t._base is None else t._base


def _storage_address(owner) -> int:
    # Tensor's __eq__ is elementwise, so a WeakKeyDictionary keyed by the tensor could not look it up: the
    # key is its id, dropped by a finalizer when the owner dies (an id is reused only after that).
    key = id(owner)
    found = _addresses_by_id.get(key)
    if found is None:
        found = next(_next_address) * _SPACING
        _addresses_by_id[key] = found
        weakref.finalize(owner, _addresses_by_id.pop, key, None)
    return found


_addresses_by_id: dict[int, int] = {}


def data_ptr(self) -> int:
    """A stable integer naming this tensor's first element in its storage (``Tensor.data_ptr``): views
    share their owner's, offset by ``storage_offset() * element_size()`` bytes; 0 for a tensor of no
    elements, as PyTorch's. Not an address (vkml/frontend/runtime_names.py).

    >>> import vkml
    >>> x = vkml.zeros(3)
    >>> x[1:].data_ptr() - x.data_ptr(), x[:2].data_ptr() == x.data_ptr()
    (4, True)
    """
    if self.numel() == 0:
        return 0
    owner = _owner(self)
    return _storage_address(owner) + self.storage_offset() * self.element_size()


class UntypedStorage:
    """The storage a tensor views, as ``Tensor.untyped_storage()``'s: its size in bytes and its
    ``data_ptr`` (the integer ``Tensor.data_ptr`` counts from). vkml's values are not reachable as
    bytes through it."""

    __slots__ = ("_owner",)

    def __init__(self, owner):
        self._owner = owner

    def nbytes(self) -> int:
        return self._owner.numel() * self._owner.element_size()

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def data_ptr(self) -> int:
        return _storage_address(self._owner) if self.nbytes() else 0

    def element_size(self) -> int:
        return 1

    @property
    def device(self):
        return self._owner.device

    def __eq__(self, other) -> bool:
        return isinstance(other, UntypedStorage) and other._owner is self._owner

    def __hash__(self) -> int:
        return id(self._owner)

    def __repr__(self) -> str:
        return f"vkml.UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


def untyped_storage(self) -> UntypedStorage:
    """The storage this tensor views (``Tensor.untyped_storage``): ``nbytes()``, ``size()``, ``data_ptr()``.

    >>> import vkml
    >>> x = vkml.zeros(2, 3)
    >>> x[1].untyped_storage().nbytes(), x.t().untyped_storage() == x.untyped_storage()
    (24, True)
    """
    return UntypedStorage(_owner(self))


_TYPED_STORAGE_WARNING = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage "
    "class. This should only matter to you if you are using storages directly.  To access UntypedStorage "
    "directly, use tensor.untyped_storage() instead of tensor.storage()"
)


class TypedStorage:
    """The storage a tensor views, typed by its dtype, as PyTorch's deprecated ``Tensor.storage()`` gives it:
    ``size()`` and ``len`` in elements, ``dtype``, ``device``, ``data_ptr()``, ``nbytes()``, indexing,
    ``tolist()`` and PyTorch's printed text (one element a line, then a summary line). Its values are read
    from the storage's owner when asked (a copy: vkml's storages are not host memory)."""

    __slots__ = ("_owner",)

    def __init__(self, owner):
        self._owner = owner

    @property
    def dtype(self):
        return self._owner.dtype

    @property
    def device(self):
        return self._owner.device

    def size(self) -> int:
        return self._owner.numel()

    def __len__(self) -> int:
        return self._owner.numel()

    def element_size(self) -> int:
        return self._owner.element_size()

    def nbytes(self) -> int:
        return self.size() * self.element_size()

    def data_ptr(self) -> int:
        return _storage_address(self._owner) if self.nbytes() else 0

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._owner)

    def tolist(self) -> list:
        return self._owner.detach().reshape(-1).tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, index):
        values = self.tolist()
        return values[index]

    def __eq__(self, other) -> bool:
        return isinstance(other, TypedStorage) and other._owner is self._owner

    def __hash__(self) -> int:
        return id(self._owner)

    def __str__(self) -> str:
        summary = f"[vkml.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size {len(self)}]"
        return " " + "\n ".join(str(value) for value in self.tolist()) + "\n" + summary

    __repr__ = __str__


def storage(self) -> TypedStorage:
    """The storage this tensor views, typed (``Tensor.storage``, deprecated in PyTorch, with its warning):
    the owner's elements in order, whatever view of them ``self`` is.

    >>> import vkml, warnings
    >>> a = vkml.arange(6)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     a.view(2, 3).t().storage().tolist(), len(a[1:].storage())
    ([0, 1, 2, 3, 4, 5], 6)
    """
    warnings.warn(_TYPED_STORAGE_WARNING, UserWarning, stacklevel=2)
    return TypedStorage(_owner(self))


def is_set_to(self, tensor) -> bool:
    """Whether both tensors view the same storage at the same offset with the same sizes and strides
    (``Tensor.is_set_to``)."""

    if not isinstance(tensor, _tensor.Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    return (
        _owner(self) is _owner(tensor)
        and tuple(self.shape) == tuple(tensor.shape)
        and self.stride() == tensor.stride()
        and self.storage_offset() == tensor.storage_offset()
    )


# ---------------------------------------------------------------------- constructors


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor of ``size`` with the given ``stride`` (``torch.empty_strided``): a strided view of a new
    storage just large enough; its values are unspecified (zeros in vkml)."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: size has {len(size)} dims, stride has {len(stride)}"
        )
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    numel = 0 if 0 in size else 1 + sum((n - 1) * st for n, st in zip(size, stride))
    storage = creation.zeros(numel, dtype=dtype, device=device)
    out = (
        storage if numel == math.prod(size) and _row_major(size, stride) else windows.as_strided(storage, size, stride)
    )
    if tuple(out.shape) != size:
        out = out.reshape(size)
    return out.requires_grad_() if requires_grad else out


def _row_major(size, stride) -> bool:
    step = 1
    for n, st in zip(reversed(size), reversed(stride)):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def new_empty_strided(
    self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    """``empty_strided`` with this tensor's dtype and device unless given (``Tensor.new_empty_strided``)."""
    return empty_strided(
        size, stride, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad
    )


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False):
    """A 1-D tensor of the ``dtype`` values in a Python buffer's bytes from ``offset`` on (``count`` of
    them, -1: all), as ``torch.frombuffer``. PyTorch's shares the buffer's memory; vkml's copies it (a
    device buffer cannot alias host memory), so a later write to either is not seen by the other."""

    if not isinstance(dtype, T.DType):
        raise TypeError(f"frombuffer(): argument 'dtype' must be vkml.dtype, not {type(dtype).__name__}")
    refuse_no_tensor_dtype("frombuffer", dtype)
    try:
        raw = memoryview(buffer).cast("B")
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    size = 2 if dtype is T.bfloat16 else np.dtype(_numpy_name(dtype)).itemsize
    if len(raw) == 0 or count == 0:
        raise ValueError(f"both buffer length ({len(raw)}) and count ({count}) must not be 0")
    if offset < 0 or offset > len(raw) - (1 if count != 0 else 0):
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({len(raw)} bytes) minus 1"
        )
    available = (len(raw) - offset) // size
    if count == -1:
        if (len(raw) - offset) % size:
            raise ValueError(
                f"buffer length ({len(raw) - offset} bytes) after offset ({offset} bytes) must be a multiple of "
                f"element size ({size})"
            )
        count = available
    elif count <= 0 or count > available:
        raise ValueError(
            f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must not be greater than actual buffer length ({len(raw)} bytes)"
        )
    data = bytes(raw[offset : offset + count * size])
    if dtype is T.bfloat16:
        out = creation.tensor(np.frombuffer(data, dtype=np.int16).copy()).view(T.bfloat16)
        out = F.clone(out)
    else:
        out = creation.tensor(np.frombuffer(data, dtype=_numpy_name(dtype)).copy(), dtype=dtype)
    return out.requires_grad_() if requires_grad else out


def _numpy_name(dtype: T.DType) -> str:
    return "bool" if dtype is T.bool_ else dtype.name


# ---------------------------------------------------------------------- host round trips


def apply_(self, callable):
    """Replace every element ``x`` by ``callable(x)`` (a Python function of a number), in place, as
    ``Tensor.apply_``. PyTorch allows it on CPU tensors alone; vkml reads the values back to the host,
    calls the function on each and writes the results, on any device."""

    _refuse_requires_grad("apply_", self)
    values = self.detach().tolist()
    out = _map_nested(values, lambda v: _number_result(callable(v), self.dtype))
    with autograd.no_grad():
        self.copy_(_tensor.Tensor(creation.tensor(out, dtype=self.dtype, device=self.device).node))
    return self


def map_(self, tensor, callable):
    """Replace every element ``x`` by ``callable(x, y)``, ``y`` the element of ``tensor`` (broadcast to this
    tensor's shape) at the same place, in place, as ``Tensor.map_`` (a host round trip, as ``apply_``)."""

    if not isinstance(tensor, _tensor.Tensor):
        raise TypeError(f"map_(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    _refuse_requires_grad("map_", self)
    tensor = tensor.detach().expand(*self.shape)  # PyTorch's words where it does not broadcast
    mine = np.asarray(self.detach().tolist(), dtype=object).reshape(tuple(self.shape))
    theirs = np.asarray(tensor.tolist(), dtype=object).reshape(tuple(self.shape))
    flat = [callable(a, b) for a, b in zip(mine.reshape(-1).tolist(), theirs.reshape(-1).tolist())]
    out = creation.tensor(flat, dtype=self.dtype, device=self.device).reshape(tuple(self.shape))
    with autograd.no_grad():
        self.copy_(out)
    return self


def _refuse_requires_grad(op: str, t) -> None:
    # PyTorch's error: the host function's results could not be differentiated
    if t.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")


def _number_result(value, dtype):
    """``value`` (what apply_'s function returned) if a number, else PyTorch's TypeError."""
    if isinstance(value, (bool, int, float, np.number)):
        return value
    if dtype.is_float:
        raise TypeError(f"must be real number, not {type(value).__name__}")
    raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")


def _map_nested(values, fn):
    if isinstance(values, list):
        return [_map_nested(v, fn) for v in values]
    return fn(values)


# ---------------------------------------------------------------------- small functions


def detach_(input):
    """``input.detach_()``: ``input`` made a leaf that requires no grad, in place (``torch.detach_``)."""
    return input.detach_()


def resize_as_(input, the_template, memory_format=None):
    """``input.resize_as_(the_template)`` (``torch.resize_as_``)."""
    return input.resize_as_(the_template, memory_format=memory_format)


def binomial(count, prob, generator=None):
    """Samples of Binomial(``count``, ``prob``), elementwise (``torch.binomial``): float tensors of one
    shape in, the same dtype out. The sampler is PyTorch's CPU one (BTRS rejection where count * p
    is 10 or more, inversion below), run on the host element by element over vkml's generator, which
    is PyTorch's: after the same seed the samples are PyTorch's (vkml/frontend/mt19937.py)."""

    for name, value in (("count", count), ("prob", prob)):
        if not isinstance(value, _tensor.Tensor):
            raise TypeError(f"binomial(): argument '{name}' must be Tensor, not {type(value).__name__}")
    if not count.dtype.is_float:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {_torch_type(count.dtype)}")
    if not prob.dtype.is_float:
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: {_torch_type(prob.dtype)}")
    if tuple(count.shape) != tuple(prob.shape):
        raise RuntimeError(
            f"binomial: count and prob must have the same shape, got {list(count.shape)} and {list(prob.shape)}"
        )
    wide = count.dtype is T.float64 and prob.dtype is T.float64
    work = np.float64 if wide else np.float32  # PyTorch's scalar_t; float16 and bfloat16 as float32
    counts = np.asarray(count.detach()._host_values(), work)
    probs = np.asarray(prob.detach()._host_values(), work)
    return _random.host_draw(
        "binomial", tuple(count.shape), count.dtype, count.device, generator, mt19937.binomial, counts, probs
    )


def _torch_type(dtype: T.DType) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(
        dtype.name, dtype.name
    )


default_generator = _random.default_generator


# ---------------------------------------------------------------------- streams and events


def _accelerator(device):

    if device is None:
        return get_device("cuda" if cuda.is_available() else "cpu")
    return get_device(device)


class Event(cuda.Event):
    """``torch.Event``: ``torch.cuda.Event`` (vkml/frontend/cuda.py) on a device of any kind: ``record``
    waits for that device, so a recorded event is complete and ``elapsed_time`` is the host's clock between
    two records, in milliseconds, the work between them included."""

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        super().__init__(enable_timing, blocking, interprocess)
        self.device = _accelerator(device)


class Stream(cuda.Stream):
    """``torch.Stream``: ``torch.cuda.Stream`` on a device of any kind (one in-order queue of work per device)."""

    def __init__(self, device=None, *, priority: int = 0, **kwargs):
        self.device = _accelerator(device)
        self.priority = priority

    def _new_event(self) -> Event:
        return Event(self.device)


EXPORTS = (
    Export("GradScaler", value=GradScaler),
    Export("set_anomaly_enabled"),
    Export("is_anomaly_enabled"),
    Export("is_anomaly_check_nan_enabled"),
    Export("set_warn_always"),
    Export("is_warn_always_enabled"),
    Export("set_num_interop_threads"),
    Export("get_num_interop_threads"),
    Export("set_flush_denormal"),
    Export("get_device_module"),
    Export("default_generator", value=default_generator),
    Export("data_ptr", function=False, method=data_ptr),
    Export("untyped_storage", function=False, method=untyped_storage),
    Export("storage", function=False, method=storage),
    Export("is_set_to", function=False, method=is_set_to),
    Export("new_empty_strided", function=False, method=new_empty_strided),
    Export("apply_", function=False, method=apply_),
    Export("map_", function=False, method=map_),
    Export("empty_strided"),
    Export("frombuffer"),
    Export("detach_"),
    Export("resize_as_"),
    Export("binomial"),
    Export("UntypedStorage", value=UntypedStorage),
    Export("TypedStorage", value=TypedStorage),
    Export("Stream", value=Stream),
    Export("Event", value=Event),
)
