"""``default_collate`` and ``default_convert``: PyTorch's rules for turning samples into batches.

A batch of numbers, numpy arrays or tensors becomes one tensor with a new first dimension;
dicts, lists, tuples and namedtuples are collated field by field; strings and bytes stay
lists. Python floats give float64, numpy values keep their dtype, as PyTorch's. Another library's
tensors (PyTorch's, from a torchvision dataset a program kept) are collated as the arrays they hold.

In a worker process the same rules build ``HostBatch`` leaves (a numpy array and the vkml
dtype it will have) instead of tensors: workers never touch a device, and the main process
turns the leaves into tensors (``to_tensors``).

>>> batch = default_collate([{"x": 1.5, "y": [1, 2]}, {"x": 2.5, "y": [3, 4]}])
>>> batch["x"].tolist(), [t.tolist() for t in batch["y"]]
([1.5, 2.5], [[1, 3], [2, 4]])
"""

from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ...frontend import complex as _complex
from ...frontend.creation import tensor
from ...frontend.operators import cat
from ...ir import types as T
from ...tensor import Tensor

_NP_STR_OBJ = re.compile(r"[SaUO]")
_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_WIDENED: dict[str, str] = {}  # numpy dtypes vkml has no tensor dtype for, and what they become


class HostBatch:
    """A collated leaf made in a worker: host values and the vkml dtype the main process gives them."""

    __slots__ = ("array", "dtype", "device")

    def __init__(self, array: np.ndarray, dtype: str, device: str = "cpu") -> None:
        self.array, self.dtype, self.device = array, dtype, device

    def __reduce__(self):
        return (HostBatch, (self.array, self.dtype, self.device))


def _dtype_name(array: np.ndarray) -> str:
    name = array.dtype.name
    name = _WIDENED.get(name, name)
    try:
        T.by_name(name)
    except TypeError:
        raise TypeError(f"default_collate: numpy dtype {array.dtype.name} has no vkml dtype") from None
    return name


class _Leaves:
    """How collation makes its tensors: in the main process, vkml tensors on the CPU."""

    in_worker = False

    def array(self, array: np.ndarray, dtype: str | None = None, device: str = "cpu"):
        dtype = dtype or _dtype_name(array)
        if array.dtype.kind == "c":  # a complex tensor is a handle on its real pair (docs/complex.md)
            return _complex.from_numpy_complex(array, device=device, dtype=T.by_name(dtype))
        return tensor(array, dtype=dtype, device=device)

    def stack(self, batch: list[Tensor]):
        _check_equal_shapes(batch)
        if any(t.is_complex() for t in batch):
            return _complex.cat([t.unsqueeze(0) for t in batch])
        return cat([t.unsqueeze(0) for t in batch])


class _WorkerLeaves(_Leaves):
    """In a worker: ``HostBatch`` leaves; CPU tensors are read on the host, device tensors refused."""

    in_worker = True

    def array(self, array: np.ndarray, dtype: str | None = None, device: str = "cpu"):
        return HostBatch(np.ascontiguousarray(array), dtype or _dtype_name(array), device)

    def stack(self, batch: list[Tensor]):
        _check_equal_shapes(batch)
        arrays = [host_array(t) for t in batch]
        return HostBatch(np.stack(arrays), batch[0].dtype.name)


def host_array(t: Tensor) -> np.ndarray:
    """A CPU tensor's values, read in a worker process; a tensor on a Vulkan device is refused."""
    if t.device.name != "cpu":
        raise RuntimeError(
            f"DataLoader worker: a sample holds a tensor on {t.device.name}. Worker processes never use "
            "Vulkan devices (a forked child must not touch the parent's device); keep the dataset on the CPU "
            "(numpy arrays or cpu tensors) and move each batch with .to(device) in the training loop, "
            "or use num_workers=0"
        )
    return t.numpy()


def _check_equal_shapes(batch: list[Tensor]) -> None:
    first = batch[0].shape
    for i, t in enumerate(batch):
        if t.shape != first:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 and {list(t.shape)} at entry {i}"
            )


def _foreign_tensor(value) -> bool:
    """Another library's tensor: PyTorch's, as torchvision's ``transforms.ToTensor()`` makes them in a dataset a
    program kept when it swapped ``import torch`` for vkml. It exports its values by DLPack."""
    return not isinstance(value, (Tensor, np.ndarray)) and hasattr(value, "__dlpack__") and hasattr(value, "shape")


def _host_array(value) -> np.ndarray:
    """A foreign tensor's values as a numpy array (a view where the library allows; its dtype kept)."""
    if hasattr(value, "detach"):  # PyTorch refuses to export a tensor that requires grad
        value = value.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    try:
        return np.from_dlpack(value)
    except (TypeError, BufferError, RuntimeError) as error:
        raise TypeError(
            f"default_collate: cannot read a {type(value).__name__} of dtype {value.dtype}: {error}"
        ) from None


def _collate(batch, leaves: _Leaves):
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return leaves.stack(list(batch))
    if _foreign_tensor(elem):  # collated as the numpy arrays they hold
        return _collate([_host_array(e) for e in batch], leaves)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_ERROR.format(elem.dtype))
            shapes = {a.shape for a in batch}
            if len(shapes) > 1:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got shapes {sorted(shapes)}")
            return leaves.array(np.stack(batch))
        if elem.shape == ():  # numpy scalars
            return leaves.array(np.array(batch))
    if isinstance(elem, float):
        return leaves.array(np.array(batch, dtype=np.float64), "float64")
    if isinstance(elem, int):
        array = np.array(batch)
        return leaves.array(array, "bool" if array.dtype == np.bool_ else "int64")
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: _collate([d[key] for d in batch], leaves) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(collated)
            return clone
        try:
            return elem_type(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(_collate(samples, leaves) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [_collate(samples, leaves) for samples in transposed]
        try:
            return elem_type([_collate(samples, leaves) for samples in transposed])
        except TypeError:
            return [_collate(samples, leaves) for samples in transposed]
    raise TypeError(_ERROR.format(elem_type))


def default_collate(batch):
    """Collate a list of samples into a batch (PyTorch's rules: Python floats become float64).

    >>> default_collate([(1, "a"), (2, "b")])[0].tolist()
    [1, 2]
    """
    return _collate(batch, _ACTIVE[0])


def default_convert(data):
    """For ``batch_size=None``: numpy arrays and numpy scalars become tensors, containers are walked, rest kept."""
    leaves = _ACTIVE[0]
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if _foreign_tensor(data):
        return default_convert(_host_array(data))
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ == "ndarray" and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return leaves.array(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(converted)
            return clone
        try:
            return elem_type(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


# The leaf maker in use: the main process's, replaced by the worker's in a worker process.
_MAIN = _Leaves()
_ACTIVE: list[_Leaves] = [_MAIN]


def enter_worker() -> None:
    _ACTIVE[0] = _WorkerLeaves()


def to_host(obj):
    """A worker's batch made safe to send: tensors (CPU only) become ``HostBatch`` leaves; containers walked."""
    if isinstance(obj, Tensor):
        return HostBatch(host_array(obj), obj.dtype.name)
    if isinstance(obj, (HostBatch, str, bytes)) or obj is None:
        return obj
    if isinstance(obj, dict):
        clone = copy.copy(obj)
        clone.update({k: to_host(v) for k, v in obj.items()})
        return clone
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_host(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_host(v) for v in obj)
    return obj


def to_tensors(obj):
    """In the main process: every ``HostBatch`` leaf becomes a CPU tensor; containers walked."""
    if isinstance(obj, HostBatch):
        return _MAIN.array(obj.array, obj.dtype, obj.device)
    if isinstance(obj, dict):
        clone = copy.copy(obj)
        clone.update({k: to_tensors(v) for k, v in obj.items()})
        return clone
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_tensors(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_tensors(v) for v in obj)
    return obj
