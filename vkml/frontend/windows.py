"""Strided window views: ``Tensor.unfold``, ``as_strided`` and the in-place view methods.

``window`` is one view node for any number of overlapping window dims (``ViewStack.window``:
element (..., i, ..., k) reads position ``i·step + k·dilation``), so im2col is a view, not a
``cat`` of shifted slices (vkml/nn/functional_layers.py). ``as_strided`` is a view of the
storage's row-major elements (``ViewStack.strided``). Both are true views: they share the
storage (vkml/frontend/mutation.py), and a write through one is refused where two of its
elements are one storage element (PyTorch runs such a write element by element in memory
order; its result depends on that order).

The in-place view methods (``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``, ``swapdims_``,
``swapaxes_``, ``as_strided_``, ``resize_``) change the tensor's own view of its storage and
bump the storage's version, as PyTorch's do. A tensor that owned its storage hands it to a
hidden owner first and becomes a view of it; views taken from it before are moved onto that
owner when they are next read (``rehome``).

>>> import vkml
>>> vkml.arange(5).unfold(0, 2, 1).tolist()
[[0, 1], [1, 2], [2, 3], [3, 4]]
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from .. import tensor as _tensor
from ..graph import build as lazy
from ..ops import grads as G
from . import autograd, indexing, mutation
from . import memory_format as _memory_format
from . import operators as F
from .autograd import differentiable
from .exports import Export

# ---------------------------------------------------------------------- window views


@differentiable("window")
def window(input, dims: tuple, sizes: tuple, steps: tuple, dilations: tuple, descending: bool = False):
    """Windows along ``dims`` (one view node): each ``dims[j]`` becomes its window count
    ``(length - dilations[j]·(sizes[j] - 1) - 1) // steps[j] + 1`` and a dim of ``sizes[j]`` is
    appended, in order; element (..., i_j, ..., k_1, ..., k_m) reads position ``i_j·steps[j] +
    k_j·dilations[j]`` of each ``dims[j]``. The caller checks the arguments. The gradient adds the
    taps back in ascending order (im2col's), or descending (``descending``: pooling's backward, which
    adds the windows into each element in their row-major order)."""

    def edit(stack):
        for d, k, s, dl in zip(dims, sizes, steps, dilations):
            stack = stack.window(d, k, s, dl)
        return stack

    out = F._view(input, edit)
    return mutation.link_view(out, input, ("window", tuple(dims), tuple(sizes), tuple(steps), tuple(dilations)))


def unfold(self, dimension: int, size: int, step: int):
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim: a view.

    As PyTorch's, the result shares the tensor's storage: writes to the tensor show through
    it, and a write through it reaches the tensor where its windows do not overlap (``step >=
    size``); PyTorch runs a write through overlapping windows element by element in memory
    order, vkml raises PyTorch's overlap RuntimeError instead.

    >>> import vkml
    >>> vkml.arange(5).unfold(0, 2, 2).tolist()
    [[0, 1], [2, 3]]
    """
    node = F._tensor_node("unfold", self)
    ndim = len(node.shape)
    d = lazy.normalize_dim("unfold", dimension, max(ndim, 1))
    length = node.shape[d] if ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if not ndim:  # PyTorch: a 0-dim tensor unfolds to a window of ``size`` (0 or 1) elements
        one = F.reshape(self, 1)
        return one if size else F._slice(one, (0,), (0,), (1,))
    return window(self, (d,), (size,), (step,), (1,))


# ---------------------------------------------------------------------- as_strided


def strided_positions(shape, strides, offset: int) -> np.ndarray:
    """Storage position of each element of an as_strided view (sizes ``shape``), row-major (int64)."""
    pos = np.full(tuple(shape), offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(shape, strides)):
        axis = [1] * len(shape)
        axis[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * st).reshape(axis)
    return pos.reshape(-1)


def _sizes(op: str, name: str, value) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    values = tuple(value)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, got {value!r}")
    return tuple(int(v) for v in values)


def _strided_args(op: str, input, size, stride, storage_offset):
    """The checked (size, stride, offset) of ``input.as_strided(...)``, PyTorch's errors for bad ones."""
    F._tensor_node(op, input)
    size, stride = _sizes(op, "size", size), _sizes(op, "stride", stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    offset = input.storage_offset() if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    owner = input._base if input._base is not None else input
    if owner is not input and any(step[0] == "dtype" for step in input._chain):
        raise NotImplementedError(f"'{op}': a view taken with Tensor.view(dtype) has no storage of its dtype here")
    need = 0 if 0 in size else offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
    storage = owner.numel()
    if need > storage:
        itemsize = input.element_size()
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {need * itemsize} are out of bounds for storage of size "
            f"{storage * itemsize}"
        )
    return owner, size, stride, offset


@differentiable("as_strided")
def _as_strided(input, owner, size: tuple, stride: tuple, offset: int, numel: int, inside):
    """``input.as_strided``: a view of ``owner``'s storage (``input``'s; autograd's operand is ``input``).

    ``inside``: the storage position of each element of ``input`` (row-major), for the gradient."""
    out = F._wrap(lazy.view_node(owner.node, lambda st: st.strided(size, stride, offset)))
    out._base, out._chain = owner, (("strided", size, stride, offset),)
    out._gradview = input._gradview if input._base is not None else True
    out._dataview = input._dataview if input._base is not None else False
    out._seen = owner._vcount
    return out


def _as_strided_grad(c: G.GradContext):
    """Every element's gradient added into its storage position (in row-major order), then read at
    the input's positions."""
    (x,) = c.inputs
    a = c.attrs
    zeros = F._wrap(lazy.const_node(0, c.g.dtype, (a["numel"],), c.g.device))
    positions = strided_positions(a["size"], a["stride"], a["offset"])
    # recorded (index_accumulate), so that a second derivative reaches c.g (create_graph)
    storage = indexing._accumulate(zeros, positions, F.reshape(c.g, -1), True)
    return (F.reshape(indexing.take_positions(storage, a["inside"]), *x.shape),)


G.RULES["as_strided"] = _as_strided_grad


def storage_positions(t) -> np.ndarray:
    """Storage position of each element of ``t`` (row-major), from its view chain."""
    base = t._base
    if base is None:
        return np.arange(t.numel(), dtype=np.int64)
    pos = np.arange(base.numel(), dtype=np.int64).reshape(tuple(base.shape))
    for step in t._chain:
        kind = step[0]
        if kind == "reshape":
            pos = pos.reshape(step[1])
        elif kind == "permute":
            pos = pos.transpose(step[1])
        elif kind == "expand":
            pos = np.broadcast_to(pos.reshape((1,) * (len(step[1]) - pos.ndim) + pos.shape), step[1])
        elif kind == "slice":
            pos = pos[tuple(slice(a, b, c) for a, b, c in zip(step[1], step[2], step[3]))]
        elif kind == "window":
            for d, k, s, dl in zip(*step[1:]):
                n = (pos.shape[d] - dl * (k - 1) - 1) // s + 1
                idx = (np.arange(n) * s)[:, None] + np.arange(k) * dl  # (n, k) positions along d
                pos = np.moveaxis(np.take(pos, idx, axis=d), d + 1, -1)
        elif kind == "strided":
            pos = strided_positions(step[1], step[2], step[3]).reshape(step[1])
    return np.ascontiguousarray(pos).reshape(-1)


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given sizes, strides (in elements) and storage offset.

    As PyTorch's: the positions are counted in the storage ``input`` views (its owner's elements in
    row-major order), ``storage_offset`` defaults to ``input``'s own, and the view must stay inside
    the storage; negative strides raise. Any pattern of non-negative strides is one view node
    (windows may overlap). A write through a view whose elements overlap raises PyTorch's overlap
    error. The gradient adds each element's gradient into its storage position in row-major
    order (``index_add``), then reads ``input``'s positions.

    Divergence: vkml keeps every tensor an op makes row-major, where PyTorch may keep an input's
    layout (``x.t().clone()``, elementwise results of permuted inputs): ``as_strided`` of such a tensor
    reads its row-major order here. NotImplementedError for a view taken with ``view(dtype)``.

    >>> import vkml
    >>> vkml.arange(6.0).as_strided((3, 2), (2, 1)).tolist()
    [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    """
    owner, size, stride, offset = _strided_args("as_strided", input, size, stride, storage_offset)
    inside = storage_positions(input) if autograd.is_grad_enabled() and input.requires_grad else None
    return _as_strided(input, owner, size, stride, offset, owner.numel(), inside)


# ---------------------------------------------------------------------- in-place view methods

# A tensor that owned its storage and became a view of a hidden owner (``_owner_of``) -> (that
# owner, the steps from it to the tensor's old shape): views taken from the tensor before keep it as
# ``_base`` and steps relative to its old shape; ``rehome`` moves them onto the owner.
# Keyed by id (a Tensor's == is elementwise, so no weak dictionary): an entry leaves with its tensor.
_HANDED_ON: dict[int, tuple] = {}


def _forget(key: int):
    return lambda _ref: _HANDED_ON.pop(key, None)


def rehome(t) -> None:
    """Point view ``t`` at the hidden owner its base handed its storage to (no-op otherwise)."""
    base = t._base
    while base is not None:
        found = _HANDED_ON.get(id(base))
        if found is None or found[0]() is not base:
            return
        _, owner, prefix = found
        if prefix and not (t._chain and t._chain[0][0] == "strided"):  # as_strided steps count in the storage
            t._chain = prefix + t._chain
        t._base = base = owner


def _check_inplace_view(t, op: str) -> None:
    if not autograd.is_grad_enabled():
        if t._base is None and t._requires_grad and t._ctx is None:
            raise NotImplementedError(
                f"'{op}': changing the view of a leaf tensor that requires grad (under no_grad) is not supported; "
                "assign a new tensor instead"
            )
        return
    base = t._base
    if base is None:
        if t._requires_grad and t._ctx is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    elif t._gradview and base._requires_grad and base._ctx is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def _owner_of(t, prefix: tuple = ()):
    """``t``'s storage owner, after handing ``t``'s own storage to a hidden owner if it had one
    (``prefix``: the view steps from that storage to ``t``'s shape before, where they are not none)."""
    if t._base is not None:
        rehome(t)
        return t._base
    owner = _tensor.Tensor(t._node)
    owner._vcount, owner._vhidden = t._vcount, t._vhidden
    owner._ctx, owner._requires_grad = t._ctx, t._requires_grad
    _HANDED_ON[id(t)] = (weakref.ref(t, _forget(id(t))), owner, prefix)
    t._vcount += 1  # views of t see a new version: they rebuild, and rehome on the way
    t._base, t._chain, t._seen = owner, (), owner._vcount
    t._gradview, t._dataview = True, False
    return owner


def hand_storage(t, owner) -> None:
    """Make ``owner`` (a new leaf handle) own the storage ``t`` owns, and ``t`` a view of it outside
    autograd: ``nn.Parameter(t)``, one storage and two tensors, as PyTorch's. No version changes
    (``t._version`` reads ``owner``'s counter from now on); views taken from ``t`` before move onto
    ``owner`` when next read, and values autograd saved from ``t`` follow it (``handed_on``)."""
    owner._node, owner._vcount, owner._vhidden = t._node, t._vcount, t._vhidden
    _HANDED_ON[id(t)] = (weakref.ref(t, _forget(id(t))), owner, ())
    _SHARED_FROM[id(owner)] = (weakref.ref(owner, _forget_sharer(id(owner))), weakref.ref(t))
    t._vcount += 1  # views of t see a new version: they rebuild, and rehome on the way
    t._base, t._chain, t._seen = owner, (), owner._vcount
    t._gradview, t._dataview = False, False


def handed_on(owner, chain: tuple):
    """The storage owner that former owner ``owner`` handed its storage to, with ``chain`` (view steps
    from ``owner``) made relative to it; ``(owner, chain)`` when it handed nothing on."""
    found = _HANDED_ON.get(id(owner))
    while found is not None and found[0]() is owner:
        _, owner, prefix = found
        chain = prefix + chain
        found = _HANDED_ON.get(id(owner))
    return owner, chain


def leave_storage(t, node) -> None:
    """Give storage owner ``t`` a new storage holding ``node`` (PyTorch's ``t.data = value`` of another
    dtype, device or shape: ``module.half()``). The tensor ``t`` was made from by ``hand_storage``
    keeps the old storage, as in PyTorch (views of ``t`` follow it: a difference, docs/mutation.md)."""
    found = _SHARED_FROM.pop(id(t), None)
    source = found[1]() if found is not None and found[0]() is t else None
    if source is not None and source._base is t:
        source._node = source.node
        source._vcount, source._vhidden = t._vcount, t._vhidden
        source._base = None
        _HANDED_ON.pop(id(source), None)
    t._node = node
    t._vcount += 1


# A storage owner ``hand_storage`` made -> the tensor it was made from (a view of it since).
_SHARED_FROM: dict[int, tuple] = {}


def _forget_sharer(key: int):
    return lambda _ref: _SHARED_FROM.pop(key, None)


def _adopt(t, op: str, make, checked: bool = False):
    """Make ``t`` the view ``make(t)`` (a linked view of ``t``) in place, bumping its storage's version.
    ``checked``: the caller has checked the arguments against ``t``'s storage (as_strided_, resize_)."""
    _check_inplace_view(t, op)
    if not checked:
        with autograd.no_grad():
            make(_tensor.Tensor(t.node))  # the op's own errors (a dim out of range), before anything changes
    owner = _owner_of(t)
    mutation.current(t)
    # The op's operand is a handle of its own on t's current view: autograd keeps operands, and t's
    # shape is about to change.
    a = _tensor.Tensor(t._node)
    a._base, a._chain, a._seen = owner, t._chain, t._seen
    a._gradview, a._dataview = t._gradview, t._dataview
    a._ctx, a._requires_grad = t._ctx, t._requires_grad
    v = make(a)
    if v is not a:
        if v._base is not owner:  # a reshape PyTorch would copy cannot be a view of t's storage
            raise RuntimeError(f"'{op}': the result is not a view of the tensor's storage")
        t._node, t._chain = v._node, v._chain
        t._ctx, t._requires_grad = v._ctx, v._requires_grad
    owner._vcount += 1
    t._seen = owner._vcount
    return t


def unsqueeze_(self, dim: int):
    """In-place ``unsqueeze``: this tensor gains a size-1 dim at ``dim`` (same storage, version bumped)."""
    return _adopt(self, "unsqueeze_", lambda t: F.unsqueeze(t, dim))


def squeeze_(self, dim=None):
    """In-place ``squeeze``: this tensor loses its size-1 dims (all, or ``dim``'s)."""
    return _adopt(self, "squeeze_", lambda t: F.squeeze(t, dim))


def transpose_(self, dim0: int, dim1: int):
    """In-place ``transpose``: this tensor's dims ``dim0`` and ``dim1`` swap (a view of the same storage)."""
    return _adopt(self, "transpose_", lambda t: F.transpose(t, dim0, dim1))


def swapdims_(self, dim0: int, dim1: int):
    """In-place ``swapdims`` (``transpose_``)."""
    return _adopt(self, "swapdims_", lambda t: F.transpose(t, dim0, dim1))


def swapaxes_(self, axis0: int, axis1: int):
    """In-place ``swapaxes`` (``transpose_``)."""
    return _adopt(self, "swapaxes_", lambda t: F.transpose(t, axis0, axis1))


def t_(self):
    """In-place ``t``: a tensor of at most 2 dims transposed."""
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _adopt(self, "t_", lambda t: F.transpose(t, 0, 1) if t.ndim == 2 else t)


def as_strided_(self, size, stride, storage_offset=None):
    """In-place ``as_strided``: this tensor becomes that view of its storage."""
    _strided_args("as_strided_", self, size, stride, storage_offset)
    return _adopt(self, "as_strided_", lambda t: as_strided(t, size, stride, storage_offset), checked=True)


def resize_(self, *sizes, memory_format=None):
    """This tensor with shape ``sizes``: its storage's first elements (from its storage offset) in row-major order.

    As PyTorch's: the same shape keeps the tensor as it is; any other becomes the row-major view
    of that many elements of the storage from the tensor's offset. A tensor that requires grad
    raises PyTorch's error. Divergence: growing past the storage raises NotImplementedError where
    the tensor is a view; a tensor owning its storage grows it, the new elements zero (PyTorch's
    are uninitialised).
    """
    shape = _sizes("resize_", "size", sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    strides = _torch_contiguous(shape)
    if memory_format is not None:
        _memory_format.check("resize_", memory_format, len(shape))
        if memory_format is _memory_format.preserve_format:
            raise RuntimeError("Unsupported memory formatPreserve")
        if memory_format.rank is not None:  # channels last: PyTorch restrides even at the same shape
            strides = _memory_format.strides_in(shape, memory_format)
    if shape == tuple(self.shape) and strides == _torch_contiguous(shape):
        return self
    offset = self.storage_offset()
    owner = self._base if self._base is not None else self
    need = offset + math.prod(shape)
    if need > owner.numel():
        if self._base is not None:
            raise NotImplementedError(
                f"'resize_': growing a view past its storage ({owner.numel()} elements, {need} needed) is not supported"
            )
        old = tuple(self.shape)
        with autograd.no_grad():
            flat = F.reshape(self, self.numel())
            grown = F.cat([flat, F._wrap(lazy.const_node(0, self.dtype, (need - self.numel(),), self.device))], 0)
        self._node = grown.node  # the storage grows: views taken before read its first elements
        _owner_of(self, (("strided", old, _torch_contiguous(old), 0),))
    return _adopt(self, "resize_", lambda t: as_strided(t, shape, strides, offset), checked=True)


def resize_as_(self, the_template, memory_format=None):
    """``resize_`` to ``the_template``'s shape; ``preserve_format`` takes the template's layout (channels
    last where its strides are, as PyTorch's ``suggest_memory_format``)."""
    if memory_format is _memory_format.preserve_format:
        memory_format = None
        for fmt in (_memory_format.channels_last, _memory_format.channels_last_3d):
            if the_template.ndim == fmt.rank and not the_template.is_contiguous():
                if the_template.is_contiguous(memory_format=fmt):
                    memory_format = fmt
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


def as_strided_copy(input, size, stride, storage_offset=None):
    """``torch.as_strided_copy``: ``as_strided`` as a new tensor."""
    return F.clone(as_strided(input, size, stride, storage_offset))


def _torch_contiguous(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


EXPORTS = (
    Export("as_strided", method=True),
    Export("as_strided_copy"),
    *(
        Export(name, function=False, method=True)
        for name in (
            "unsqueeze_",
            "squeeze_",
            "transpose_",
            "swapdims_",
            "swapaxes_",
            "t_",
            "as_strided_",
            "resize_",
            "resize_as_",
        )
    ),
)
