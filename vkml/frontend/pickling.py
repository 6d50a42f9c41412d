"""Tensors under ``pickle`` and ``copy.deepcopy``: by value, with dtype, device and ``requires_grad``.

A tensor pickles as its storage's values (its owner's, the tensor that views nothing) and its view
of them: sizes, strides and storage offset as PyTorch reports them. What shares a storage after
unpickling follows PyTorch's three cases:

- ``copy.deepcopy`` of an object holding several views of one storage gives views of one copied
  storage (the deepcopy memo keys the storage), so a write through one copy reaches the others;
- ``vkml.save`` of a whole object (a module, an optimizer) pickles each storage once, as
  ``torch.save`` does: ``vkml.load`` gives views of one storage again;
- plain ``pickle.dumps`` pickles a storage with every tensor that views it, so after
  ``pickle.loads`` each tensor has a storage of its own (PyTorch's plain pickling does the same).

A tensor unpickles as a leaf (a tensor computed by an op pickles its values, ``requires_grad``
kept), without ``.grad`` (PyTorch's pickling drops it; ``deepcopy`` keeps it).

>>> import pickle, vkml
>>> w = vkml.ones(2, requires_grad=True)
>>> pickle.loads(pickle.dumps(w))
tensor([1., 1.], requires_grad=True)
"""

from __future__ import annotations

import codecs
import collections
import copy
import sys
import threading

import numpy as np

from .. import tensor as _tensor
from ..ir import types as T
from ..runtime.base import Device
from . import autograd, windows
from .creation import tensor as _make_tensor
from .devices import device as get_device
from .exports import Export
from .operators import meta_tensor

# While ``vkml.save`` pickles a whole object: id(owner) -> its _Storage, so that each storage is
# pickled once (pickle's memo then shares it); None in plain pickling, where each tensor takes its own.
_state = threading.local()
# While ``vkml.load`` unpickles: makes a storage's tensor from (values, dtype, saved location), as
# ``map_location`` says; None: on the saved device.
_placing = threading.local()


def is_parameter(t) -> bool:
    """``isinstance(t, nn.Parameter)`` without loading vkml.nn (``import vkml`` does not): before it loads,
    no Parameter exists."""
    module = sys.modules.get("vkml.nn.module")
    return module is not None and isinstance(t, module.Parameter)


def parameter_class() -> type:
    """``vkml.nn.Parameter``, loading vkml.nn if this is its first use (a checkpoint's Parameter)."""
    from ..nn.module import Parameter  # lazy: off import vkml's path

    return Parameter


def _row_major(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def storage_owner(t):
    """The tensor whose storage ``t`` views (``t`` itself when it views nothing)."""
    windows.rehome(t)
    return t if t._base is None else t._base


def _view_of(t):
    """(owner, sizes, strides, offset) of ``t`` in its owner's row-major storage, or None where the
    view cannot be replayed by ``as_strided`` (a channels-last owner, a ``view(dtype)``): then ``t``
    is stored as a tensor of its own."""
    windows.rehome(t)
    owner = t if t._base is None else t._base
    if getattr(owner, "_format", None) is not None:
        return None
    if t._base is not None and any(step[0] == "dtype" for step in t._chain):
        return None
    return owner, tuple(t.shape), tuple(t.stride()), t.storage_offset()


# ---------------------------------------------------------------------- pickle


class _Storage:
    """A storage's values as pickled: one object per owner within one ``vkml.save``."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def __reduce__(self):
        owner = self.owner.detach()
        if owner.device.kind == "meta":  # no values: a storage of the shape and dtype alone, as PyTorch's
            return (_rebuild_meta_storage, (tuple(owner.shape), owner.dtype.name))
        # numpy has no bfloat16: its values go as float32 (exact) and load narrowed back (exact again)
        array = np.ascontiguousarray((owner.float() if owner.dtype is T.bfloat16 else owner).numpy())
        return (
            _rebuild_storage,
            (array.tobytes(), array.dtype.str, array.shape, owner.dtype.name, owner.device.name),
        )


class _Loaded:
    """An unpickled storage: its tensor, and whether a pickled tensor has taken it as itself."""

    __slots__ = ("tensor", "taken")

    def __init__(self, tensor):
        self.tensor, self.taken = tensor, False


def _rebuild_storage(data: bytes, np_dtype: str, shape, dtype_name: str, location: str) -> _Loaded:
    array = np.frombuffer(data, dtype=np.dtype(np_dtype)).reshape(shape)
    dtype = T.by_name(dtype_name)
    place = getattr(_placing, "place", None)
    if place is not None:
        return _Loaded(place(array, dtype_name, location))
    return _Loaded(_make_tensor(array.copy(), dtype=dtype, device=get_device(location)))


def _rebuild_meta_storage(shape, dtype_name: str) -> _Loaded:
    return _Loaded(meta_tensor(tuple(shape), T.by_name(dtype_name)))


def _rebuild_tensor(storage: _Loaded | _Storage, offset: int, size, stride, requires_grad: bool, parameter: bool):
    size, stride = tuple(size), tuple(stride)
    if isinstance(storage, _Storage):
        # copy.copy rebuilds from the reduction without pickling: a shallow copy shares the storage, as PyTorch's
        owner = storage.owner
        whole, storage = False, _Loaded(owner)
    else:
        owner = storage.tensor
        whole = offset == 0 and size == tuple(owner.shape) and stride == _row_major(size)
    if whole and not storage.taken:  # the tensor that owned the storage is its owner again
        storage.taken = True
        out = owner
    else:
        with autograd.no_grad():
            out = windows.as_strided(owner, size, stride, offset)
    if parameter:
        parameter_type = parameter_class()
        if out is owner:
            # the same object, so the views taken of it stay its views (Parameter adds no slots to Tensor's
            # layout, so every Python version allows the class change)
            out.__class__ = parameter_type
            out.requires_grad = requires_grad
            return out
        return parameter_type(out, requires_grad=requires_grad)
    if requires_grad:
        out.requires_grad = True
    return out


def _reduce_ex(self, protocol):
    """Pickles by value: the storage's values once per ``vkml.save``, once per tensor in plain pickling."""
    found = _view_of(self)
    if found is None:
        owner, size, stride, offset = self.detach().contiguous(), tuple(self.shape), _row_major(self.shape), 0
    else:
        owner, size, stride, offset = found
    shared = getattr(_state, "storages", None)
    if shared is None:
        storage = _Storage(owner)
    else:
        storage = shared.get(id(owner))
        if storage is None:
            storage = shared[id(owner)] = _Storage(owner)  # kept alive by the dict, so its id stays unique
    rebuilt = (storage, offset, size, stride, self.requires_grad, is_parameter(self))
    # A tensor's own attributes travel with it, as PyTorch's (Parameter's too): pickle sets them back.
    return (_rebuild_tensor, rebuilt, dict(self.__dict__)) if self.__dict__ else (_rebuild_tensor, rebuilt)


class sharing_storages:
    """While active (``vkml.save`` of a whole object), tensors pickled on this thread that view one
    storage pickle that storage once."""

    def __enter__(self):
        self.previous = getattr(_state, "storages", None)
        _state.storages = {}
        return self

    def __exit__(self, *exc) -> bool:
        _state.storages = self.previous
        return False


class placing:
    """While active (``vkml.load``), unpickled storages are made by ``place(array, dtype_name, location)``."""

    def __init__(self, place) -> None:
        self.place = place

    def __enter__(self):
        self.previous = getattr(_placing, "place", None)
        _placing.place = self.place
        return self

    def __exit__(self, *exc) -> bool:
        _placing.place = self.previous
        return False


# Where vkml installs the autocast wrappers of its public functions (vkml/frontend/amp.py): a wrapper
# keeps the name and module of the function it wraps, where pickle would find the function, not it.
_PUBLIC_MODULES = ("vkml.nn.functional", "vkml")


def _public(module: str, name: str):
    """The public function ``module.name`` (an autocast wrapper, pickled by where it is installed)."""
    return getattr(sys.modules[module], name)


def reduce_public_function(obj):
    """How ``vkml.save`` pickles a public function that pickle cannot find by its own name (``F.relu`` held
    as ``TransformerEncoderLayer.activation``), or NotImplemented: pickle's own way."""
    if not getattr(obj, "__wrapped_by_autocast__", False):
        return NotImplemented
    name = obj.__name__
    for module in _PUBLIC_MODULES:
        if getattr(sys.modules.get(module), name, None) is obj:
            return (_public, (module, name))
    return NotImplemented


def _reduce_device(self):
    """A device pickles by name, as ``torch.device``: unpickling opens that device (``vkml.device``)."""
    return (get_device, (self.name,))


Device.__reduce__ = _reduce_device  # the runtime layer cannot name the face's vkml.device


# Globals a pickle of tensors, dtypes and containers names: what ``vkml.load(weights_only=True)`` allows.
SAFE_GLOBALS = {
    (__name__, "_rebuild_storage"): _rebuild_storage,
    (__name__, "_rebuild_tensor"): _rebuild_tensor,
    ("vkml.ir.types", "by_name"): T.by_name,
    ("vkml.frontend.devices", "device"): get_device,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("_codecs", "encode"): codecs.encode,  # bytes at pickle protocol 2
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "bytearray"): bytearray,  # PyTorch's weights-only load takes byte arrays too
}


# ---------------------------------------------------------------------- deepcopy


def _deepcopy(self, memo: dict):
    """``copy.deepcopy``: a leaf with its own storage (nodes are immutable, so sharing the current
    node copies the values), its ``requires_grad``, a deep copy of its ``grad``, and its class
    (a ``Parameter`` stays one). Tensors viewing one storage become views of one copied storage, as
    in PyTorch. As in PyTorch, a tensor computed by a recorded op cannot be copied.

    >>> import copy, vkml
    >>> a = vkml.zeros(4)
    >>> b, head = copy.deepcopy([a, a[:2]])
    >>> _ = b.fill_(1)
    >>> a.tolist(), head.tolist()
    ([0.0, 0.0, 0.0, 0.0], [1.0, 1.0])
    """
    if self._ctx is not None:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
            "the moment.  If you were attempting to deepcopy a module, this may be because of a "
            "vkml.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
        )
    found = memo.get(id(self))
    if found is not None:
        return found
    Tensor = _tensor.Tensor
    view = _view_of(self)
    owner = self if view is None else view[0]
    key = ("vkml storage", id(owner))  # never an int: the memo's own keys are ids
    copied = memo.get(key)
    if owner is self:
        if copied is None:
            out = type(self).__new__(type(self))
            Tensor.__init__(out, self.node, requires_grad=self._requires_grad)
            memo[key] = out
            copy._keep_alive(self, memo)  # the storage's id stays unique while the memo lives
        else:  # a view of this tensor was copied first: this tensor is the storage it copied
            out = copied
            out.requires_grad = self._requires_grad
    else:
        if copied is None:  # of the owner's class (a Parameter's views are copied before it, at times)
            copied = memo[key] = type(owner).__new__(type(owner))
            Tensor.__init__(copied, owner.node)
            copy._keep_alive(owner, memo)
        with autograd.no_grad():
            out = windows.as_strided(copied, *view[1:])
        if self._requires_grad:
            out.requires_grad = True
    memo[id(self)] = out
    if self.__dict__ and not is_parameter(self):  # a plain tensor's attributes, as PyTorch copies them
        out.__dict__.update(copy.deepcopy(self.__dict__, memo))
    if self.grad is not None:
        out.grad = copy.deepcopy(self.grad, memo)
    return out


EXPORTS = (
    Export("__reduce_ex__", function=False, method=_reduce_ex),
    Export("__deepcopy__", function=False, method=_deepcopy),
)
