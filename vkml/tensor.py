"""``Tensor``: a lazy handle on a graph node, with PyTorch's names.

>>> import vkml
>>> x = vkml.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> y = (x * 2 + 1).sum(dim=1)     # records nodes; nothing runs yet
>>> y.tolist()                      # realizes: one submission
[7.0, 15.0]
"""

from __future__ import annotations

import numpy as np

from . import checks, lazy, schedule
from . import functions as F
from .errors import DTypeError, ShapeError
from .graph import Node
from .ir import types as T


class Tensor:
    """A lazy n-dimensional array on one device. Ops record nodes; ``realize()`` runs them."""

    __slots__ = ("node", "grad", "_requires_grad", "_ctx", "__weakref__")
    __hash__ = object.__hash__

    def __init__(self, node: Node, requires_grad: bool = False):
        self.node = node
        self.grad: Tensor | None = None  # set by backward() on leaves that require grad
        self._ctx = None  # the autograd Context of the op that made this tensor (None: a leaf)
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

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

    # ------------------------------------------------------------------ autograd (vkml/autograd.py)
    @property
    def requires_grad(self) -> bool:
        """Whether backward() computes a gradient for this tensor (only floating point tensors can)."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and not self.dtype.is_float:
            raise DTypeError(
                f"requires_grad: only floating point tensors can require gradients, this one is {self.dtype.name}"
            )
        if not value and self._ctx is not None:
            raise RuntimeError("requires_grad: a tensor computed from others keeps it; use detach() instead")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return the tensor. Example: ``w = vkml.zeros(3).requires_grad_()``."""
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True unless the tensor was computed by a recorded op (one whose operand required grad)."""
        return self._ctx is None

    @property
    def grad_fn(self):
        """The autograd context of the op that made this tensor, or None for a leaf."""
        return self._ctx

    def backward(self, gradient=None, retain_graph: bool = False) -> None:
        """Add the gradient of this tensor to ``.grad`` of the leaves it depends on.

        Records the gradient graph only: the gradients run when read or at the optimizer's
        ``step()`` (see vkml/autograd.py for the rule). ``gradient`` is needed unless the
        tensor has one element.

        >>> x = vkml.tensor([3.0], requires_grad=True)
        >>> (x * x).sum().backward(); x.grad.tolist()
        [6.0]
        """
        from . import autograd

        autograd.backward(self, gradient, retain_graph)

    def detach(self) -> Tensor:
        """The same values (the same node, no copy), cut off from autograd."""
        return Tensor(self.node)

    # ------------------------------------------------------------------ results
    def realize(self) -> Tensor:
        """Run the work this tensor depends on (one submission per device) and return it."""
        schedule.realize(self.node)
        return self

    def numpy(self) -> np.ndarray:
        """The values as a new numpy array (realizes first)."""
        self.realize()
        node = self.node
        checks.verify_read(node)  # raises the error of an op whose values were refused (vkml/checks.py)
        return node.device.download(node.buffer).reshape(node.shape)

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item(): only a tensor with one element can be converted, this one has {self.numel()}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self._requires_grad else ""
        if self.node.realized and self.numel() <= 64:
            body = np.array2string(self.numpy(), separator=", ")
            return f"tensor({body}, dtype={self.dtype.name}, device={self.device.name!r}{grad})"
        state = "" if self.node.realized else ", lazy"
        return f"<Tensor shape={self.shape} dtype={self.dtype.name} device={self.device.name}{state}{grad}>"

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
