"""Read PyTorch's checkpoints (``torch.save``'s zip format, PyTorch 1.6 and later) without torch installed.

A PyTorch checkpoint is a zip archive: ``<name>/data.pkl`` pickles the saved object, each tensor as a
call of ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`` whose
storage is a persistent id ``("storage", torch.FloatStorage, key, location, numel)`` naming the raw
bytes in ``<name>/data/<key>``. ``read`` unpickles it with an allowlist, as ``torch.load(weights_only=True)``
does: containers (dict, list, tuple, OrderedDict, set), numbers, strings, tensors, parameters, dtypes,
devices and sizes; any other global (a class of the program, a function) raises ``pickle.UnpicklingError``
and runs nothing. Tensors come back as host arrays with their dtype name, for ``load`` to place.

>>> import io, zipfile
>>> is_torch_zip(io.BytesIO(b"not a zip").getvalue())
False
"""

from __future__ import annotations

import collections
import io
import pickle

import numpy as np

from . import safe_globals

__all__ = ["HostTensor", "is_torch_zip", "read"]

# torch.<Name>Storage -> (vkml dtype name, numpy dtype of the stored bytes)
_STORAGES = {
    "DoubleStorage": ("float64", "<f8"),
    "FloatStorage": ("float32", "<f4"),
    "HalfStorage": ("float16", "<f2"),
    "BFloat16Storage": ("bfloat16", "<u2"),
    "LongStorage": ("int64", "<i8"),
    "IntStorage": ("int32", "<i4"),
    "ShortStorage": ("int16", "<i2"),
    "CharStorage": ("int8", "i1"),
    "ByteStorage": ("uint8", "u1"),
    "BoolStorage": ("bool", "?"),
    "UInt16Storage": ("uint16", "<u2"),
    "ComplexFloatStorage": ("complex64", "<c8"),
    "ComplexDoubleStorage": ("complex128", "<c16"),
}
# torch.<dtype> globals: a pickled dtype is named by its canonical name, the one its storage's row above gives
_DTYPES = frozenset(dtype for dtype, _ in _STORAGES.values())


class HostTensor:
    """A tensor read from the file: its values on the host, vkml dtype name, and PyTorch's flags; ``view`` is
    (storage, offset, size, stride), so that tensors of one storage can load as views of one tensor again."""

    __slots__ = ("array", "dtype", "requires_grad", "parameter", "view")

    def __init__(self, array: np.ndarray, dtype: str, requires_grad: bool = False, parameter: bool = False, view=None):
        self.array, self.dtype, self.requires_grad, self.parameter = array, dtype, requires_grad, parameter
        self.view = view


class _Storage:
    __slots__ = ("dtype", "values")

    def __init__(self, dtype: str, values: np.ndarray):
        self.dtype, self.values = dtype, values


class _StorageType:
    def __init__(self, name: str):
        self.name = name


class _DType(str):
    """A ``torch.<dtype>`` global: loads as its vkml dtype name (``load`` turns it into the dtype)."""


class _Device(str):
    pass


def _rebuild_tensor(storage: _Storage, offset: int, size, stride, requires_grad=False, hooks=None, *metadata):
    values = storage.values
    count = int(np.prod(size)) if len(size) else 1
    if count == 0:
        array = np.zeros(tuple(size), dtype=values.dtype)
    else:
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        if offset < 0 or last >= values.size or any(st < 0 for st in stride):
            raise pickle.UnpicklingError(f"a tensor of size {tuple(size)} reaches past its storage of {values.size}")
        itemsize = values.itemsize
        array = np.lib.stride_tricks.as_strided(
            values[offset:], shape=tuple(size), strides=tuple(st * itemsize for st in stride), writeable=False
        ).copy()
    if storage.dtype == "bfloat16":  # the bits widen exactly to float32 (numpy has no bfloat16)
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return HostTensor(array, storage.dtype, bool(requires_grad), view=(storage, offset, tuple(size), tuple(stride)))


def _rebuild_parameter(data: HostTensor, requires_grad=True, hooks=None, *state):
    return HostTensor(data.array, data.dtype, bool(requires_grad), parameter=True)


def _size(dims=()):
    return tuple(dims)


def _ordered_dict(items=()):
    return collections.OrderedDict(items)


_GLOBALS = {
    ("collections", "OrderedDict"): _ordered_dict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch", "Size"): _size,
    ("torch", "device"): _Device,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("builtins", "slice"): slice,
    ("builtins", "bytearray"): bytearray,
    ("_codecs", "encode"): lambda text, encoding="latin-1": text.encode(encoding),  # pickled bytes (protocol 2)
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, archive: zipfile.ZipFile, prefix: str, byteorder: str):  # noqa: F821
        super().__init__(file)
        self.archive, self.prefix, self.byteorder = archive, prefix, byteorder
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str):
        if module == "__builtin__":  # protocol 2 (torch.save's) names builtins by their Python 2 module
            module = "builtins"
        if (module, name) in _GLOBALS:
            return _GLOBALS[(module, name)]
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and name in _DTYPES:
            return _DType(name)
        allowed = safe_globals.lookup(module, name)  # allowed by add_safe_globals
        if allowed is not None:
            return allowed
        raise pickle.UnpicklingError(
            f"load: the checkpoint names {module}.{name}, which a weights-only load does not run (a PyTorch "
            "checkpoint of tensors, numbers, strings and containers loads without torch; for others install torch "
            "and pass weights_only=False if you trust the file)"
        )

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"load: unknown persistent id {pid!r} in the checkpoint")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _StorageType):
            raise pickle.UnpicklingError(f"load: a storage of unknown type {kind!r} in the checkpoint")
        if key not in self.storages:
            dtype, stored = _STORAGES[kind.name]
            raw = self.archive.read(f"{self.prefix}/data/{key}")
            numpy_dtype = np.dtype(stored)
            if self.byteorder == "big" and numpy_dtype.itemsize > 1:
                numpy_dtype = numpy_dtype.newbyteorder(">")
            if len(raw) < numel * numpy_dtype.itemsize:
                raise pickle.UnpicklingError(f"load: storage {key} holds {len(raw)} bytes, fewer than {numel} elements")
            values = np.frombuffer(raw, dtype=numpy_dtype, count=numel).astype(numpy_dtype.newbyteorder("="))
            self.storages[key] = _Storage(dtype, values)
        return self.storages[key]


def is_torch_zip(data: bytes) -> bool:
    """Whether ``data`` is a zip archive holding a ``data.pkl`` (``torch.save``'s format)."""
    if not data.startswith(b"PK\x03\x04"):
        return False
    import zipfile  # lazy: off import vkml's path (zipfile, with shutil, bz2 and lzma, serves checkpoints alone)

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return any(name.endswith("/data.pkl") or name == "data.pkl" for name in archive.namelist())
    except zipfile.BadZipFile:
        return False


def read(data: bytes):
    """The object a ``torch.save`` zip archive holds, tensors as ``HostTensor`` (see the module)."""
    import zipfile  # lazy: off import vkml's path (see is_torch_zip)

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            raise pickle.UnpicklingError(f"load: a PyTorch archive has one data.pkl, this one has {len(pickles)}")
        prefix = pickles[0].rpartition("/")[0]
        byteorder_name = f"{prefix}/byteorder" if prefix else "byteorder"
        byteorder = archive.read(byteorder_name).decode().strip() if byteorder_name in names else "little"
        unpickler = _Unpickler(io.BytesIO(archive.read(pickles[0])), archive, prefix, byteorder)
        return unpickler.load()
