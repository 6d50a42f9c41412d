"""``Tensor``: a lazy handle on a graph node, with PyTorch's names.

>>> import vkml
>>> x = vkml.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> y = (x * 2 + 1).sum(dim=1)     # records nodes; nothing runs yet
>>> y.tolist()                      # realizes: one submission
[7.0, 15.0]
"""

from __future__ import annotations

import numpy as np

from . import functions as F
from . import lazy, schedule
from .errors import ShapeError
from .graph import Node
from .ir import types as T


class Tensor:
    """A lazy n-dimensional array on one device. Ops record nodes; ``realize()`` runs them."""

    __slots__ = ("node", "__weakref__")
    __hash__ = object.__hash__

    def __init__(self, node: Node):
        self.node = node

    # ------------------------------------------------------------------ facts
    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[lazy.normalize_dim("size", dim, self.ndim)]

    @property
    def dtype(self) -> T.DType:
        return self.node.dtype

    @property
    def device(self):
        return self.node.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self.node.numel

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # ------------------------------------------------------------------ results
    def realize(self) -> Tensor:
        """Run the work this tensor depends on (one submission per device) and return it."""
        schedule.realize(self.node)
        return self

    def numpy(self) -> np.ndarray:
        """The values as a new numpy array (realizes first)."""
        self.realize()
        node = self.node
        return node.device.download(node.buffer).reshape(node.shape)

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item(): only a tensor with one element can be converted, this one has {self.numel()}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __repr__(self) -> str:
        state = "" if self.node.realized else ", lazy"
        if self.node.realized and self.numel() <= 64:
            body = np.array2string(self.numpy(), separator=", ")
            return f"tensor({body}, dtype={self.dtype.name}, device={self.device.name!r})"
        return f"<Tensor shape={self.shape} dtype={self.dtype.name} device={self.device.name}{state}>"

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    # ------------------------------------------------------------------ conversions
    def to(self, target, dtype: T.DType | None = None) -> Tensor:
        """``to(dtype)`` casts (PyTorch's rules: float→int truncates); ``to(device)`` copies over explicitly."""
        if isinstance(target, T.DType):
            return F.cast(self, target)
        out = F.to_device(self, target)
        return F.cast(out, dtype) if dtype is not None else out

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def float(self) -> Tensor:
        return F.cast(self, T.float32)

    def half(self) -> Tensor:
        return F.cast(self, T.float16)

    def int(self) -> Tensor:
        return F.cast(self, T.int32)

    def long(self) -> Tensor:
        return F.cast(self, T.int64)

    def bool(self) -> Tensor:
        return F.cast(self, T.bool_)

    def contiguous(self) -> Tensor:
        return self

    # ------------------------------------------------------------------ operators
    def __add__(self, o):
        return F.add(self, o)

    def __radd__(self, o):
        return F.add(o, self)

    def __sub__(self, o):
        return F.sub(self, o)

    def __rsub__(self, o):
        return F.sub(o, self)

    def __mul__(self, o):
        return F.mul(self, o)

    def __rmul__(self, o):
        return F.mul(o, self)

    def __truediv__(self, o):
        return F.div(self, o)

    def __rtruediv__(self, o):
        return F.div(o, self)

    def __pow__(self, o):
        return F.pow(self, o)

    def __rpow__(self, o):
        return F.pow(o, self)

    def __matmul__(self, o):
        return F.matmul(self, o)

    def __rmatmul__(self, o):
        return F.matmul(o, self)

    def __neg__(self):
        return F.neg(self)

    def __abs__(self):
        return F.abs(self)

    def __invert__(self):
        return F.logical_not(self)

    def __and__(self, o):
        return F.logical_and(self, o)

    def __or__(self, o):
        return F.logical_or(self, o)

    def __eq__(self, o):  # noqa: D105 - elementwise, as in PyTorch
        return F.eq(self, o)

    def __ne__(self, o):
        return F.ne(self, o)

    def __lt__(self, o):
        return F.lt(self, o)

    def __le__(self, o):
        return F.le(self, o)

    def __gt__(self, o):
        return F.gt(self, o)

    def __ge__(self, o):
        return F.ge(self, o)

    def __getitem__(self, index):
        return F.getitem(self, index)

    # ------------------------------------------------------------------ movement
    def reshape(self, *shape):
        return F.reshape(self, *shape)

    view = reshape

    def permute(self, *dims):
        return F.permute(self, *dims)

    def transpose(self, dim0: int, dim1: int):
        return F.transpose(self, dim0, dim1)

    @property
    def T(self):
        return F.permute(self, *reversed(range(self.ndim)))

    def expand(self, *sizes):
        return F.expand(self, *sizes)

    def squeeze(self, dim=None):
        return F.squeeze(self, dim)

    def unsqueeze(self, dim: int):
        return F.unsqueeze(self, dim)

    def flip(self, dims):
        return F.flip(self, dims)

    def flatten(self):
        return F.reshape(self, -1)


def _install_methods() -> None:
    """Give Tensor a method for every function of ``functions`` whose first argument is a tensor."""
    for name in F.TENSOR_METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, getattr(F, name))


_install_methods()
assert ShapeError  # re-exported for users of vkml.tensor
