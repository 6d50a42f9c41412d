"""The in-place view ops: ``Tensor.unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``, ``swapdims_``,
``swapaxes_``.

PyTorch changes only the tensor's shape and strides: the storage and its values stay, so no
version is bumped, and autograd records the view op (``UnsqueezeBackward1``) as the tensor's new
history. Here the tensor's handle takes the node of the view (vkml/frontend/mutation.py):

- a view (``x[0].unsqueeze_(0)``) extends its view chain, so it still reads and writes its base's
  storage;
- a tensor that owns its storage takes the view's value as its own. **Diverges** where a view of it
  was taken before: PyTorch's view keeps its own shape over the shared storage; vkml's such view
  is replayed from the new shape at the next write, so take views after ``unsqueeze_``
  (docs/mutation.md).
"""

from __future__ import annotations

from . import autograd, mutation
from .exports import Export


def _view_inplace(t, view):
    """Make ``t`` the view ``view(t)`` of its own storage; returns ``t``."""
    if autograd.is_grad_enabled():
        base = t._base
        if base is None and t._requires_grad and t._ctx is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if base is not None and t._gradview and base._requires_grad and base._ctx is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if t._base is None:
        new = view(mutation._alias(t))  # the alias carries t's history: the view records its op over it
        t._node = new.node
        if new._ctx is not None:
            t._ctx, t._requires_grad = new._ctx, True
        return t
    new = view(t)  # linked to t's base with t's chain and this step (mutation.link_view)
    if new._base is not t._base:
        raise AssertionError("an in-place view op made a copy, not a view")
    t._node, t._chain, t._seen = new.node, new._chain, new._seen
    if new._ctx is not None:
        t._ctx, t._requires_grad = new._ctx, True
    return t


def unsqueeze_(self, dim: int):
    """In-place ``unsqueeze``: this tensor takes a new dim of size 1 at ``dim``; returns it."""
    return _view_inplace(self, lambda x: x.unsqueeze(dim))


def squeeze_(self, dim=None):
    """In-place ``squeeze``: this tensor drops its size-1 dims (``dim``: those named); returns it."""
    return _view_inplace(self, lambda x: x.squeeze() if dim is None else x.squeeze(dim))


def t_(self):
    """In-place ``t``: this tensor (at most 2-D) transposed; returns it."""
    return _view_inplace(self, lambda x: x.t())


def transpose_(self, dim0: int, dim1: int):
    """In-place ``transpose``: this tensor with dims ``dim0`` and ``dim1`` swapped; returns it."""
    return _view_inplace(self, lambda x: x.transpose(dim0, dim1))


def swapdims_(self, dim0: int, dim1: int):
    """In-place ``swapdims`` (``transpose_``); returns this tensor."""
    return transpose_(self, dim0, dim1)


def swapaxes_(self, axis0: int, axis1: int):
    """In-place ``swapaxes`` (``transpose_``); returns this tensor."""
    return transpose_(self, axis0, axis1)


EXPORTS = [
    Export(name, function=False, method=fn)
    for name, fn in (
        ("unsqueeze_", unsqueeze_),
        ("squeeze_", squeeze_),
        ("t_", t_),
        ("transpose_", transpose_),
        ("swapdims_", swapdims_),
        ("swapaxes_", swapaxes_),
    )
]
