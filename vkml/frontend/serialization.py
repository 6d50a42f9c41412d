"""``vkml.save`` and ``vkml.load``: checkpoints in the safetensors format; whole objects pickled.

A checkpoint is one safetensors file: the tensors, each under the dotted path that reaches it
(``"fc.weight"``, ``"state.0.exp_avg"``), so other safetensors readers see meaningful names;
and, in the header's ``__metadata__`` under the key ``"vkml"``, a JSON record of the saved
object's structure (dicts, lists, tuples, ints, floats, strings, booleans, None) with each
tensor's vkml dtype, device and flags. Loading never runs code from the file: the record is
data, the tensors are raw bytes. ``load`` also reads safetensors files written by other
libraries (a flat dict of tensors) and PyTorch ``.pt``/``.pth`` checkpoints: ``torch.save``'s zip
format without torch (vkml/frontend/torch_checkpoint.py, weights only: tensors, numbers, strings and
containers), the legacy format and ``weights_only=False`` through ``torch.load`` when torch is
installed. See docs/saving.md.

>>> import io, vkml
>>> buffer = io.BytesIO()
>>> vkml.save({"w": vkml.ones(2), "step": 3}, buffer)
>>> _ = buffer.seek(0)
>>> loaded = vkml.load(buffer)
>>> loaded["w"].tolist(), loaded["step"]
([1.0, 1.0], 3)
"""

from __future__ import annotations

import _compat_pickle
import importlib.util
import io
import json
import os
import pickle
import struct
from collections import Counter, OrderedDict
from typing import IO, Any

import numpy as np

from ..errors import DeviceError
from ..ir import types as T
from ..tensor import Tensor
from . import autograd, pickling, torch_checkpoint, windows
from . import complex as _complex
from . import safe_globals as _safe_globals
from .creation import tensor
from .devices import device as get_device

__all__ = ["save", "load"]

# torch.serialization's names for the allowlist of weights-only loads (vkml/frontend/safe_globals.py)
add_safe_globals, get_safe_globals = _safe_globals.add_safe_globals, _safe_globals.get_safe_globals
clear_safe_globals, safe_globals = _safe_globals.clear_safe_globals, _safe_globals.safe_globals
DEFAULT_PROTOCOL = 2  # torch.serialization's: the pickle protocol torch.save writes

FORMAT_VERSION = 1
_METADATA_KEY = "vkml"
_TORCH_MAGICS = (b"PK\x03\x04", b"\x80")  # zip archive (torch >= 1.6), or a legacy pickle stream

# Numpy dtypes that have no vkml dtype of the same name, and what they load as (as vkml.tensor does).
_NARROWED: dict[str, str] = {}


# ---------------------------------------------------------------------- save

# The mapping types a checkpoint keeps (Counter: MultiStepLR's milestones in its state_dict).
_DICT_KINDS = {dict: "dict", OrderedDict: "ordered_dict", Counter: "counter"}
_DICT_TYPES = {kind: cls for cls, kind in _DICT_KINDS.items()}


class _Encoder:
    """Walks the object to save: a JSON-able record of its structure, and the tensors by name."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.names: dict[int, str] = {}  # id(tensor) -> name: a tensor saved twice is stored once
        self.keep: list = []  # the saved objects stay alive, so their ids stay unique during the walk
        self.bfloat16: set[str] = set()  # stored as their int16 bits; the header then says BF16
        self.owners: dict[int, int] = {}  # id(storage owner) -> id(the tensor saved that views it)

    def encode(self, obj, path: str):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            obj = obj.item()  # a numpy scalar is stored as the Python number it holds
        if obj is None or isinstance(obj, (bool, int)):
            return obj
        if isinstance(obj, float):
            return {"float": repr(obj)}  # repr round-trips every float, nan and inf included
        if isinstance(obj, Tensor):
            if hasattr(obj, "materialize"):  # a lazy module's placeholder has no values: pickled, as torch.save does
                raise _NotData(f"save: {path or 'the tensor'} is an uninitialized parameter or buffer")
            return self._tensor(obj, path)
        if isinstance(obj, np.ndarray):
            return {"ndarray": self._store(obj, np.ascontiguousarray(obj), path)}
        if isinstance(obj, T.DType):
            return {"dtype": obj.name}
        if hasattr(obj, "allocate") and hasattr(obj, "name"):  # a vkml device
            return {"device": obj.name}
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return {"tuple": [self.encode(v, f"{path}.{i}") for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return {"list": [self.encode(v, f"{path}.{i}") for i, v in enumerate(obj)]}
        if type(obj) in _DICT_KINDS:
            items = [[self.encode(k, path), self.encode(v, _join(path, k))] for k, v in obj.items()]
            record = {_DICT_KINDS[type(obj)]: items}
            if "_metadata" in getattr(obj, "__dict__", {}):  # a state dict's module versions, as torch.save keeps
                record["metadata"] = self.encode(obj._metadata, _join(path, "_metadata"))
            return record
        raise _NotData(f"save: cannot store {type(obj).__name__} at {path or 'the top level'} as data")

    def _tensor(self, t: Tensor, path: str) -> dict:
        if t.is_sparse:  # PyTorch saves sparse COO tensors; vkml's format has no record for them yet
            raise NotImplementedError(
                f"save: {path or 'the tensor'} is a sparse COO tensor, which vkml does not save (save its "
                "_indices() and _values(), or .to_dense())"
            )
        if t.__dict__:  # attributes of the program's own (t.label = ...): pickled with it, as torch.save keeps them
            raise _NotData(f"save: {path or 'the tensor'} carries Python attributes")
        viewer = self.owners.setdefault(id(pickling.storage_owner(t)), id(t))
        if viewer != id(t):  # two tensors of one storage: pickled, so that they load sharing it (as torch.load)
            raise _NotData(f"save: {path} views the storage of another tensor saved")
        record = {"dtype": t.dtype.name, "device": t.device.name}
        if t.requires_grad:
            record["requires_grad"] = True
        if pickling.is_parameter(t):
            record["parameter"] = True
        if t.dtype is T.bfloat16:  # safetensors' BF16: the bits, written as int16 and relabelled (_relabel_bfloat16)
            name = self._store(t, t.detach()._stored(), path)
            self.bfloat16.add(name)
            return {"tensor": name, **record}
        try:
            storable = t.dtype.np.name == t.dtype.name  # safetensors' numpy API stores numpy's dtypes
        except (KeyError, TypeError):
            storable = False
        if not storable:
            raise TypeError(f"save: {path or 'the tensor'} has dtype {t.dtype.name}, which safetensors cannot store")
        return {"tensor": self._store(t, t.detach().numpy(), path), **record}

    def _store(self, obj, array: np.ndarray, path: str) -> str:
        if id(obj) in self.names:
            return self.names[id(obj)]
        name, n = path or "tensor", 1
        while name in self.arrays:
            name, n = f"{path or 'tensor'}#{n}", n + 1
        self.arrays[name] = array
        self.names[id(obj)] = name
        self.keep.append(obj)
        return name


class _NotData(TypeError):
    """The object holds something other than tensors, numbers, strings and containers: it is pickled."""


# A whole object pickled (a module, an optimizer): these bytes, then the pickle stream.
_PICKLE_MAGIC = b"VKMLPICKLE1\n"


def _save_pickled(obj, pickle_module, pickle_protocol: int) -> bytes:
    """``obj`` pickled as torch.save pickles a whole object: each tensor storage once (vkml/frontend/pickling.py)."""
    out = io.BytesIO()
    out.write(_PICKLE_MAGIC)
    base = (pickle_module or pickle).Pickler
    # vkml's public functions by where they are installed (pickling.reduce_public_function)
    pickler = type("Pickler", (base,), {"reducer_override": lambda self, obj: pickling.reduce_public_function(obj)})(
        out, protocol=pickle_protocol
    )
    with pickling.sharing_storages():
        pickler.dump(obj)
    return out.getvalue()


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


def save(
    obj: Any,
    f: str | os.PathLike | IO[bytes],
    pickle_module: Any = None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Write ``obj`` (tensors, state dicts, optimizer state, nested containers) to ``f`` as safetensors,
    or any other object (a whole module, an optimizer) pickled, as ``torch.save`` does.

    ``f``: a path (str or os.PathLike) or a binary file object. Tensors are realized and their
    values stored with their dtype and device. Tensors, numbers, strings and containers of them are
    stored as safetensors and nothing is pickled, so ``load`` of an untrusted file cannot run code.
    Any other object is pickled with ``pickle_module`` (default ``pickle``) at ``pickle_protocol``,
    each tensor storage once (vkml/frontend/pickling.py): ``load`` reads it back only with
    ``weights_only=False``.

    >>> import io, vkml
    >>> vkml.save(vkml.nn.Linear(2, 1).state_dict(), io.BytesIO())
    """
    import safetensors.numpy  # lazy: off import vkml's path

    if not isinstance(pickle_protocol, int):
        raise TypeError(f"'{type(pickle_protocol).__name__}' object cannot be interpreted as an integer")
    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
        if not callable(f.write):
            raise TypeError(f"Buffer of {str(type(f)).strip('<>')} has no callable attribute 'write'")
    if pickle_module is not None and not callable(getattr(pickle_module, "Pickler", None)):
        raise AttributeError(f"save(): pickle_module {pickle_module!r} has no attribute 'Pickler'")
    encoder = _Encoder()
    try:
        structure = encoder.encode(obj, "")
    except _NotData:  # a module, an optimizer, an object of the program: pickled whole, as torch.save does
        structure = None
    if structure is None and obj is not None:
        data = _save_pickled(obj, pickle_module, pickle_protocol)
    else:
        metadata = {_METADATA_KEY: json.dumps({"version": FORMAT_VERSION, "object": structure}, separators=(",", ":"))}
        data = safetensors.numpy.save(encoder.arrays, metadata=metadata)
        if encoder.bfloat16:
            data = _relabel_bfloat16(data, encoder.bfloat16)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(data)
    else:
        f.write(data)


def _relabel_bfloat16(data: bytes, names: set[str]) -> bytes:
    """The safetensors file ``data`` with the int16 entries ``names`` declared BF16 (the same bytes)."""
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    for name in names:
        header[name]["dtype"] = "BF16"
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data[8 + size :]


# ---------------------------------------------------------------------- load


def _read_bytes(f) -> bytes:
    """The checkpoint at ``f``: a whole file, or from a file object the one record at its position.

    As ``torch.load``, a file object must be seekable, and a load leaves it just past what it read, so
    several checkpoints (and pickles) written one after another in one file load one after another."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return stream.read()
    if not hasattr(f, "read"):
        raise TypeError(f"load: expected a path or a binary file object, got {type(f).__name__}")
    for method in ("seek", "tell"):
        if not hasattr(f, method):
            raise AttributeError(
                f"'{type(f).__name__}' object has no attribute '{method}'. You can only vkml.load from a file that "
                "is seekable. Please pre-load the data into a buffer like io.BytesIO and try to load from it instead."
            )
    head = f.read(len(_PICKLE_MAGIC))
    if head == _PICKLE_MAGIC:
        return head  # the pickle that follows is read from the file itself, up to its end
    if len(head) < 9 or head[8:9] != b"{":
        return head + f.read()
    (size,) = struct.unpack("<Q", head[:8])
    header_bytes = head + f.read(8 + size - len(head))
    try:
        header = json.loads(header_bytes[8:])
        body = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    except (UnicodeDecodeError, ValueError, TypeError, KeyError, IndexError):
        return header_bytes + f.read()
    return header_bytes + f.read(body)


def _safetensors_metadata(data: bytes) -> dict | None:
    """The header's ``__metadata__`` (None when the bytes are not a safetensors file)."""
    if len(data) < 8:
        return None
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8 or data[8:9] != b"{":
        return None
    try:
        header = json.loads(data[8 : 8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return header.get("__metadata__") or {} if isinstance(header, dict) else None


class _Placer:
    """Where each loaded tensor goes: ``map_location`` applied to its saved location, as ``torch.load`` does."""

    def __init__(self, map_location) -> None:
        self.map_location = map_location

    def tensor(self, array: np.ndarray, dtype_name: str | None, location: str, requires_grad=False, parameter=False):
        dtype = _vkml_dtype(dtype_name or array.dtype.name)
        target, ml = location, self.map_location
        if callable(ml) and not isinstance(ml, (str, dict)) and not hasattr(ml, "allocate"):
            moved = ml(tensor(array, dtype=dtype), location)
            out = moved if moved is not None else self._make(array, dtype, location)
        else:
            if isinstance(ml, dict):
                target = ml.get(location, location)
            elif ml is not None:
                target = ml
            out = self._make(array, dtype, target)
        if parameter:
            return pickling.parameter_class()(out, requires_grad=requires_grad)
        return out.requires_grad_() if requires_grad else out

    @staticmethod
    def _make(array: np.ndarray, dtype: T.DType, location) -> Tensor:
        try:
            dev = get_device(location)
        except DeviceError as e:
            raise DeviceError(
                f"load: a tensor was saved on {location}, which this machine cannot open ({e}); "
                "pass map_location='cpu' (or another device) to vkml.load"
            ) from None
        if dtype.is_complex:  # a handle on a real pair (docs/complex.md)
            return _complex.from_numpy_complex(array, dev, dtype=dtype)
        return tensor(array, dtype=dtype, device=dev)


def _vkml_dtype(name: str) -> T.DType:
    """The vkml dtype a stored dtype loads as: the same name if vkml has it, else the nearest wider one."""
    try:
        dtype = T.by_name(name)
    except TypeError:
        if name not in _NARROWED:
            raise TypeError(f"load: a tensor has dtype {name}, which vkml has no dtype for") from None
        return T.by_name(_NARROWED[name])
    return T.int64 if dtype is T.uint32 else dtype  # uint32 is an IR type, not a tensor dtype


def _decode(node, arrays: dict, placer: _Placer, loaded: dict):
    if node is None or isinstance(node, (bool, int, str)):
        return node
    if isinstance(node, list):
        raise ValueError("load: the vkml record is damaged (a bare list)")
    kind = next(iter(node))
    if kind == "float":
        return float(node["float"])
    if kind == "tensor":
        name = node["tensor"]
        if name not in loaded:  # a tensor saved twice loads as one object, as torch.load keeps sharing
            loaded[name] = placer.tensor(
                arrays[name], node["dtype"], node["device"], node.get("requires_grad", False), node.get("parameter")
            )
        return loaded[name]
    if kind == "ndarray":
        return arrays[node["ndarray"]]
    if kind == "dtype":
        return T.by_name(node["dtype"])
    if kind == "device":
        return get_device(node["device"])
    if kind in ("list", "tuple"):
        items = [_decode(v, arrays, placer, loaded) for v in node[kind]]
        return items if kind == "list" else tuple(items)
    if kind in _DICT_TYPES:
        items = [(_key(_decode(k, arrays, placer, loaded)), _decode(v, arrays, placer, loaded)) for k, v in node[kind]]
        out = _DICT_TYPES[kind](dict(items))  # Counter(pairs) would count the pairs
        if "metadata" in node:
            out._metadata = _decode(node["metadata"], arrays, placer, loaded)
        return out
    raise ValueError(f"load: the vkml record has an unknown entry {kind!r} (written by a newer vkml?)")


def _key(key):
    return tuple(key) if isinstance(key, list) else key


def _bfloat16_arrays(data: bytes) -> dict[str, np.ndarray]:
    """A safetensors file's tensors where some are bfloat16 (numpy has none): those widened to float32, exactly
    (``_BFloat16Array``, so that a file from another library loads them as bfloat16)."""
    import safetensors.numpy  # lazy: off import vkml's path

    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    start = 8 + size
    bf16 = {k: v for k, v in header.items() if k != "__metadata__" and v["dtype"] == "BF16"}
    rest = {k: v for k, v in header.items() if k != "__metadata__" and k not in bf16}
    arrays = {}
    for name, info in bf16.items():
        begin, end = info["data_offsets"]
        bits = np.frombuffer(data, dtype="<u2", count=(end - begin) // 2, offset=start + begin)
        # bfloat16 is the top half of a float32: shifting its bits up is an exact conversion.
        widened = (bits.astype(np.uint32) << 16).view(np.float32).reshape(info["shape"])
        arrays[name] = widened.view(_BFloat16Array)
    if rest:  # the others through safetensors, from a copy of the file without the bfloat16 entries
        others = {}
        for name, info in rest.items():
            begin, end = info["data_offsets"]
            others[name] = (info, data[start + begin : start + end])
        arrays.update(safetensors.numpy.load(_repack(others)))
    return arrays


class _BFloat16Array(np.ndarray):
    """float32 values read from a BF16 entry: a foreign file's bfloat16 tensor loads as bfloat16."""


def _repack(entries: dict[str, tuple[dict, bytes]]) -> bytes:
    header, chunks, offset = {}, [], 0
    for name, (info, raw) in entries.items():
        header[name] = {"dtype": info["dtype"], "shape": info["shape"], "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def _load_safetensors(data: bytes, metadata: dict, placer: _Placer):
    import safetensors.numpy  # lazy: off import vkml's path

    try:
        arrays = safetensors.numpy.load(data)
    except KeyError as e:  # safetensors' numpy API names the dtype it lacks
        if e.args != ("BF16",):
            raise
        arrays = _bfloat16_arrays(data)
    record = metadata.get(_METADATA_KEY)
    if record is None:  # written by another library: a flat dict of tensors, on the CPU unless mapped
        return {
            name: placer.tensor(array, "bfloat16" if isinstance(array, _BFloat16Array) else None, "cpu")
            for name, array in arrays.items()
        }
    try:
        record = json.loads(record)
        version = record.get("version", 0)
    except (json.JSONDecodeError, RecursionError, AttributeError) as e:
        raise ValueError(f"load: the vkml record in the file is damaged ({type(e).__name__})") from None
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"load: the file has vkml format version {version!r}; this vkml reads {FORMAT_VERSION}")
    try:
        return _decode(record["object"], arrays, placer, {})
    except (KeyError, TypeError, StopIteration, AttributeError, RecursionError) as e:
        # A record that does not describe the file's tensors is refused as data, never half-used.
        raise ValueError(f"load: the vkml record in the file is damaged ({type(e).__name__}: {e})") from None


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def _from_torch(obj, placer: _Placer, converted: dict):
    """Torch tensors become vkml tensors (Parameters stay Parameters); containers are rebuilt around them."""
    import torch  # lazy: optional dependency

    if isinstance(obj, torch.Tensor):
        if id(obj) not in converted:
            t = obj.detach().cpu()
            name = str(t.dtype).removeprefix("torch.")
            if t.dtype == torch.bfloat16:
                t = t.float()  # numpy has no bfloat16
                name = "bfloat16"
            if t.dtype == torch.complex32:
                raise TypeError(f"load: a tensor has dtype {name}, which vkml has no dtype for")
            parameter = isinstance(obj, torch.nn.Parameter)
            converted[id(obj)] = placer.tensor(t.numpy(), name, "cpu", obj.requires_grad, parameter)
        return converted[id(obj)]
    if isinstance(obj, dict):
        return type(obj)((k, _from_torch(v, placer, converted)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_from_torch(v, placer, converted) for v in obj)
    return obj


def _host_tensors(obj, found: list) -> list:
    """Every ``HostTensor`` in ``obj``'s containers."""
    if isinstance(obj, torch_checkpoint.HostTensor):
        found.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _host_tensors(v, found)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _host_tensors(v, found)
    return found


def _shared_storages(obj) -> dict:
    """id(storage) -> None for each storage that several plain (no grad, not Parameter) tensors of ``obj`` view:
    they load as views of one tensor of the storage's values, as ``torch.load`` shares the storage."""
    counts: Counter = Counter()
    for t in {id(t): t for t in _host_tensors(obj, [])}.values():
        if t.view is not None and not t.requires_grad and not t.parameter:
            counts[id(t.view[0])] += 1
    return {key: None for key, n in counts.items() if n > 1}


def _from_host(obj, placer: _Placer, converted: dict, shared: dict | None = None):
    """``torch_checkpoint.read``'s tensors become vkml tensors, its dtypes vkml dtypes; containers are rebuilt."""
    if shared is None:
        shared = _shared_storages(obj)
    if isinstance(obj, torch_checkpoint.HostTensor):
        if id(obj) not in converted:
            view = obj.view
            if view is not None and id(view[0]) in shared:
                storage, offset, size, stride = view
                if shared[id(storage)] is None:
                    values = storage.values
                    if storage.dtype == "bfloat16":
                        values = (values.astype(np.uint32) << 16).view(np.float32)
                    shared[id(storage)] = placer.tensor(values.copy(), storage.dtype, "cpu")
                with autograd.no_grad():
                    converted[id(obj)] = windows.as_strided(shared[id(storage)], size, stride, offset)
            else:
                converted[id(obj)] = placer.tensor(obj.array, obj.dtype, "cpu", obj.requires_grad, obj.parameter)
        return converted[id(obj)]
    if isinstance(obj, torch_checkpoint._DType):
        return _vkml_dtype(str(obj))
    if isinstance(obj, torch_checkpoint._Device):  # torch.device: vkml's device of that name where it exists
        try:
            return get_device(str(obj))
        except DeviceError:
            return str(obj)
    if isinstance(obj, dict):
        rebuilt = type(obj)((k, _from_host(v, placer, converted, shared)) for k, v in obj.items())
        if hasattr(obj, "__dict__"):  # a state dict's _metadata
            rebuilt.__dict__.update(obj.__dict__)
        return rebuilt
    if isinstance(obj, (list, tuple, set, frozenset)):
        return type(obj)(_from_host(v, placer, converted, shared) for v in obj)
    return obj


# PyTorch's _blocklisted_modules: a weights-only load never takes a global from these
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")


class _NotACheckpoint(pickle.UnpicklingError, ValueError):
    """Bytes that are no checkpoint: PyTorch's class (its unpickler's ``invalid load key``); a ValueError too."""


class _WeightsUnpickler(pickle.Unpickler):
    """Unpickles only tensors, dtypes and containers (``weights_only=True``); any other global raises
    PyTorch's error class, naming the global."""

    def find_class(self, module: str, name: str):
        # Python 2 names, as protocol 2 writes them (__builtin__.set): their Python 3 ones, as pickle's own find_class
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if module in _BLOCKED_MODULES:  # never allowed, as in PyTorch, even by add_safe_globals
            raise pickle.UnpicklingError(
                f"Weights only load failed. Trying to load unsupported GLOBAL {module}.{name} whose module {module} "
                "is blocked."
            )
        found = pickling.SAFE_GLOBALS.get((module, name))
        if found is None:
            found = _safe_globals.lookup(module, name)  # allowed by add_safe_globals
        if found is None:
            full = name if module == "builtins" else f"{module}.{name}"  # PyTorch names builtins bare
            raise pickle.UnpicklingError(
                "Weights only load failed. This file was written by vkml.save of an object that is not only "
                "tensors, numbers, strings and containers, and loading it runs code that the file names. "
                "Re-running vkml.load with weights_only=False will likely succeed, but do it only if you trust "
                "the source of the file.\n"
                f"WeightsUnpickler error: Unsupported global: GLOBAL {full} was not an allowed global by default. "
                f"Please use `vkml.serialization.add_safe_globals([{full}])` or the "
                f"`vkml.serialization.safe_globals([{full}])` context manager to allowlist this global if you trust "
                "this class/function. (Or save the state_dict() instead to load it with weights_only=True.)"
            )
        return found


def _load_pickled(stream, placer: _Placer, weights_only: bool, pickle_module=None, pickle_load_args=None):
    """A whole object ``vkml.save`` pickled, read from ``stream`` up to the pickle's end: with ``weights_only``
    only tensors and containers, as ``torch.load``; otherwise with ``pickle_module``'s Unpickler."""

    def place(array, dtype_name, location):
        return placer.tensor(array.copy(), dtype_name, location)

    with pickling.placing(place):
        if weights_only:
            return _WeightsUnpickler(stream).load()
        return (pickle_module or pickle).Unpickler(stream, **(pickle_load_args or {})).load()


def load(
    f: str | os.PathLike | IO[bytes],
    map_location=None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Read what ``vkml.save`` wrote, a safetensors file from any library, or a PyTorch checkpoint.

    ``map_location``: where tensors go. None puts each where it was saved (PyTorch
    checkpoints and foreign safetensors files: the CPU); a device or a string such as
    ``"cpu"`` or ``"vulkan:0"`` puts all there; a dict maps saved locations to new ones
    (``{"vulkan:1": "vulkan:0"}``); a callable ``fn(tensor, location)`` gets each tensor
    (on the CPU) with its saved location and returns the tensor to use, or None for the
    default. ``weights_only`` matters for pickled files: True (the default, as PyTorch's) reads
    tensors, numbers, strings and containers and refuses any other pickled global with PyTorch's
    ``pickle.UnpicklingError``; False unpickles a whole object ``vkml.save`` pickled (a module, an
    optimizer) and hands a PyTorch checkpoint to ``torch.load`` (needs torch). False runs the file's
    code: only for files you trust. vkml's safetensors format never unpickles anything, so ``pickle_module``
    (and ``pickle_load_args`` such as ``encoding``) only serve a pickled whole object. ``mmap=True``
    (lit-gpt loads checkpoints so) is accepted for a file path, as PyTorch's; the file is read into
    memory all the same.

    >>> import io, vkml
    >>> buffer = io.BytesIO(); vkml.save([vkml.tensor([1, 2])], buffer); _ = buffer.seek(0)
    >>> vkml.load(buffer, map_location="cpu")[0].dtype
    vkml.int64
    """
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if weights_only is None:  # PyTorch's default: weights only, unless a pickle_module is given
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    data = _read_bytes(f)
    placer = _Placer(map_location)
    if data.startswith(_PICKLE_MAGIC):
        stream = io.BytesIO(data[len(_PICKLE_MAGIC) :]) if len(data) > len(_PICKLE_MAGIC) else f
        return _load_pickled(stream, placer, weights_only, pickle_module, pickle_load_args)
    metadata = _safetensors_metadata(data)
    if metadata is not None:
        return _load_safetensors(data, metadata, placer)
    if torch_checkpoint.is_torch_zip(data) and (weights_only or not _torch_installed()):
        # torch.save's zip format, read without torch, weights only (vkml/frontend/torch_checkpoint.py)
        return _from_host(torch_checkpoint.read(data), placer, {})
    if data.startswith(_TORCH_MAGICS):
        try:
            import torch  # lazy: optional dependency
        except ImportError:
            raise RuntimeError(
                "load: this is a PyTorch checkpoint in the legacy format (torch.save before 1.6, or "
                "_use_new_zipfile_serialization=False); reading it needs torch installed"
            ) from None
        obj = torch.load(io.BytesIO(data), map_location="cpu", weights_only=weights_only)
        return _from_torch(obj, placer, {})
    if not data:
        raise EOFError("Ran out of input")
    raise _NotACheckpoint(
        f"invalid load key, {chr(data[0])!r}. (load: not a vkml checkpoint, a safetensors file or a PyTorch checkpoint)"
    )
