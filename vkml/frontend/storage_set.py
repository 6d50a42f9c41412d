"""``Tensor.set_``: a tensor re-pointed at another storage, in all of PyTorch's forms.

``t.set_(source)`` makes ``t`` view ``source``'s storage with ``source``'s sizes, strides and
offset; ``t.set_(source, storage_offset, size, stride)`` (``source`` a tensor or a storage from
``untyped_storage()`` / ``storage()``) views it as ``as_strided`` would; ``t.set_()`` gives ``t`` a
new empty storage. Afterwards ``t`` is a view of that storage in vkml's sense
(vkml/frontend/mutation.py): a write through ``t`` or through any other tensor on the storage is
seen by all of them. Views taken from ``t`` before keep ``t``'s old storage, as in PyTorch: when
``t`` owned its storage it hands it to a hidden owner first (``windows._owner_of``), which those
views follow.

Divergences (docs/mutation.md): ``t`` leaves autograd (PyTorch gives it a grad_fn that raises at
backward); ``t._version`` counts its new storage's writes (PyTorch keeps ``t``'s own counter); a
view that would reach past the storage raises NotImplementedError (PyTorch grows the storage);
a storage of another dtype raises NotImplementedError (PyTorch reinterprets its bytes).
"""

from __future__ import annotations

from .. import tensor as _tensor
from ..graph import build as lazy
from . import autograd, windows
from .exports import Export
from .runtime_names import TypedStorage, UntypedStorage

_TORCH_TYPE_NAMES = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "bool": "bool",
}

_SIGNATURES = (
    " * ()\n"
    " * (torch.Storage source)\n"
    " * (torch.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n"
    " * (Tensor source)\n"
    " * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n"
)


def _bad_arguments(args: tuple) -> TypeError:
    names = ", ".join("Tensor" if isinstance(a, _tensor.Tensor) else type(a).__name__ for a in args)
    return TypeError(
        f"set_() received an invalid combination of arguments - got ({names}), but expected one of:\n{_SIGNATURES}"
    )


def _torch_type(dtype) -> str:
    return _TORCH_TYPE_NAMES.get(dtype.name, dtype.name)


def _repoint(t, owner, step: tuple | None, source=None) -> None:
    """Make ``t`` the view ``step`` of ``owner``'s storage (``step`` None: ``source``'s own view of it)."""
    if t._base is None:
        windows._owner_of(t)  # t's old storage goes to a hidden owner, which the views taken from t follow
        if owner is t:  # t.set_(t) or a view of t: its storage is the hidden owner's now
            owner = t._base
    if step is None:
        windows.rehome(source)
        chain = source._chain if source._base is not None else ()
        node = source.node
    else:
        chain = (step,)
        with autograd.no_grad():
            node = lazy.view_node(owner.node, lambda st: st.strided(step[1], step[2], step[3]))
    t._node = node
    t._base, t._chain, t._seen = owner, chain, owner._vcount
    t._gradview, t._dataview = False, False
    t._ctx = None
    for attr in ("_droot", "_format"):  # a detached tensor's mark and a channels-last layout are the old view's
        if hasattr(t, attr):
            delattr(t, attr)


def set_(self, source=None, storage_offset=None, size=None, stride=None):
    """Make this tensor view ``source``'s storage (``Tensor.set_``, PyTorch's four forms); returns it.

    - ``t.set_()``: ``t`` becomes an empty tensor of shape (0,) on a new storage;
    - ``t.set_(tensor)``: ``t`` takes ``tensor``'s storage, sizes, strides and storage offset;
    - ``t.set_(storage)``: ``t`` is all of ``storage`` (``x.untyped_storage()`` or ``x.storage()``), 1-D;
    - ``t.set_(source, storage_offset, size, stride=None)``: that strided view of ``source``'s storage
      (``stride`` row-major by default), as ``as_strided``.

    Writes through ``t`` and through every other tensor on the storage are seen by all of them;
    views taken from ``t`` before keep its old storage. The dtypes must agree (PyTorch's error).

    >>> import vkml
    >>> a, t = vkml.arange(6.0), vkml.zeros(2)
    >>> _ = t.set_(a, 1, (2, 2), (2, 1))
    >>> t[0, 0] = 10.0
    >>> a.tolist(), t.tolist()
    ([0.0, 10.0, 2.0, 3.0, 4.0, 5.0], [[10.0, 2.0], [3.0, 4.0]])
    """
    args = tuple(a for a in (source, storage_offset, size, stride) if a is not None)
    if autograd.is_grad_enabled():  # under no_grad a leaf that requires grad may be re-pointed (it stays a leaf)
        windows._check_inplace_view(self, "set_")
    if source is None:
        if args:
            raise _bad_arguments(args)
        with autograd.no_grad():
            empty = _tensor.Tensor(lazy.const_node(0, self.dtype, (0,), self.device))
        _repoint(self, empty, None, empty)
        return self
    is_storage = isinstance(source, (UntypedStorage, TypedStorage))
    if not is_storage and not isinstance(source, _tensor.Tensor):
        raise _bad_arguments(args)
    if storage_offset is not None and size is None:
        raise _bad_arguments(args)
    owner = source._owner if is_storage else windows._owner_of(source) if source._base is not None else source
    if owner.dtype is not self.dtype:
        if is_storage and isinstance(source, UntypedStorage):
            raise NotImplementedError(
                f"'set_': a storage of {owner.dtype.name} elements read as {self.dtype.name} is not supported"
            )
        raise RuntimeError(
            f"Could not set tensor of type {_torch_type(owner.dtype)} to a tensor of type {_torch_type(self.dtype)}"
        )
    if owner.device != self.device:
        raise RuntimeError(
            f'Attempted to set the storage of a tensor on device "{self.device}" to a storage on different '
            f'device "{owner.device}".  This is no longer allowed; the devices must match.'
        )
    if not is_storage and size is None:
        _repoint(self, owner, None, source)
        return self
    if size is None:  # the whole storage, 1-D
        size, storage_offset = (owner.numel(),), 0
    size = windows._sizes("set_", "size", size)
    stride = windows._torch_contiguous(size) if stride is None else windows._sizes("set_", "stride", stride)
    offset = int(storage_offset)
    if any(st < 0 for st in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    view_of = _tensor.Tensor(owner.node)  # the storage seen through a tensor, for as_strided's checks
    view_of._base, view_of._chain, view_of._seen = owner, (), owner._vcount
    try:
        windows._strided_args("set_", view_of, size, stride, offset)
    except RuntimeError as e:
        if "out of bounds" not in str(e):
            raise
        raise NotImplementedError(f"'set_': growing the storage is not supported ({e})") from None
    _repoint(self, owner, ("strided", size, stride, offset))
    return self


EXPORTS = (Export("set_", function=False, method=set_),)
