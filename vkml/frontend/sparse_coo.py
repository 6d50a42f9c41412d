"""Sparse COO tensors: ``vkml.sparse_coo_tensor``, ``Tensor.to_sparse``, ``vkml.sparse`` (``mm``, ``addmm``,
``sum``, ``softmax``, ``log_softmax``), ``vkml.spmm``, the layouts ``vkml.strided`` and ``vkml.sparse_coo``.

A ``SparseTensor`` is a ``Tensor`` subclass (``isinstance(s, vkml.Tensor)`` holds, as for PyTorch's
sparse tensors) that holds two dense vkml tensors: ``indices`` (int64, ``(sparse_dim, nnz)``) and
``values`` (``(nnz, *dense_shape)``), plus its size. It has no node of its own: every dense op that
reaches for one raises NotImplementedError naming the op (PyTorch's "Could not run ... with
arguments from the 'SparseCPU' backend"), so nothing silently densifies.

Every computation is a composite of dense vkml ops on ``values`` (so it runs on the values' device,
Vulkan included, and autograd reaches ``values`` through it). The product ``S @ D`` gathers the rows
``D[col]``, scales them by ``values`` and adds them into the result's rows with ``index_add``, whose
repeated indices add in index order: each output row sums its entries in ascending entry order (the
order of ``S._indices()``; for a coalesced tensor, ascending column), starting from zero. The same bits
on every device. Index work (coalescing, checks, summed dims) runs on the host: indices are small
integers, read once per tensor.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from ..ir import types as T
from ..ops.promotion import promote_types
from ..tensor import Tensor
from . import operators as F
from . import shape as S
from .creation import tensor as _make_tensor
from .creation import zeros
from .dense_linalg import _torch_name
from .exports import Export
from .index_ops import index_add, index_copy
from .indexing import index_select
from .interop import parse_to
from .size import as_size


class layout:  # noqa: N801  (torch.layout's name)
    """A tensor layout, as ``torch.layout``: ``vkml.strided`` (dense) or ``vkml.sparse_coo``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"vkml.{self.name}"

    def __reduce__(self):
        return (_layout_by_name, (self.name,))


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _layout_by_name(name: str) -> layout:
    return {"strided": strided, "sparse_coo": sparse_coo}[name]


def _dense_layout(self) -> layout:
    return strided


def _unsupported_name() -> str:
    """The public op a user called, read from the stack: the outermost vkml frame with a public name."""
    frame, names = sys._getframe(2), []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("vkml."):
            names.append((frame.f_code.co_name, frame.f_locals.get("name")))
        elif names:
            break
        frame = frame.f_back
    for name, local in reversed(names):
        if name in ("fn", "function") and isinstance(local, str):  # _unary/_binary/_reduction, out_arg: the op's name
            return local
        skipped = ("fn", "function", "method", "wrapper", "autocast_op", "inner", "<lambda>")
        if not name.startswith("_") and name not in skipped:
            return name
    return "this operation"


def _no_node(self):
    raise NotImplementedError(
        f"Could not run '{_unsupported_name()}' with a sparse COO tensor: vkml implements it for dense (strided) "
        "tensors only (docs/sparse.md lists the sparse ops; .to_dense() gives the dense tensor)"
    )


class SparseTensor(Tensor):
    """A sparse COO tensor: ``indices`` (int64, ``(sparse_dim, nnz)``) and ``values`` (``(nnz, *dense_shape)``).

    >>> s = vkml.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3))
    >>> s.to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
    """

    # _sp_own: the values are this tensor's own leaf (made with requires_grad=True), so the tensor is a
    # leaf whose .grad is sparse; values given by the user that require grad make a non-leaf, as PyTorch's.
    # _sp_index: the int64 index tensors the composites use (rows, columns, linear positions), made once
    # per tensor from the host indices: a training loop's spmm uploads them once, not every step.
    __slots__ = ("_sp_indices", "_sp_values", "_sp_size", "_sp_coalesced", "_sp_host", "_sp_own", "_sp_index")

    # No node: a dense op on a sparse tensor raises (PyTorch's NotImplementedError) instead of densifying.
    node = property(_no_node)
    _node = property(_no_node)

    def __init__(self, indices: Tensor, values: Tensor, size: tuple[int, ...], coalesced: bool, host=None):
        self._base = None
        self._ctx = None
        self._requires_grad = False
        self._vcount = self._vhidden = 0
        self._sp_indices, self._sp_values, self._sp_size = indices, values, tuple(int(s) for s in size)
        self._sp_coalesced = bool(coalesced)
        self._sp_host = host  # the indices as a numpy array, once read
        self._sp_own = False
        self._sp_index = {}

    # ---------------------------------------------------------------- facts
    @property
    def shape(self):
        return as_size(self._sp_size)

    def size(self, dim: int | None = None):
        if dim is None:
            return as_size(self._sp_size)
        return self._sp_size[_dim("size", dim, len(self._sp_size))]

    @property
    def dtype(self):
        return self._sp_values.dtype

    @property
    def device(self):
        return self._sp_values.device

    def numel(self) -> int:
        return math.prod(self._sp_size)

    @property
    def layout(self) -> layout:
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    def is_contiguous(self, memory_format=None) -> bool:
        return False

    def sparse_dim(self) -> int:
        return self._sp_indices.shape[0]

    def dense_dim(self) -> int:
        return len(self._sp_size) - self.sparse_dim()

    def _nnz(self) -> int:
        return self._sp_indices.shape[1]

    def is_coalesced(self) -> bool:
        return self._sp_coalesced

    def _indices(self) -> Tensor:
        return self._sp_indices

    def _values(self) -> Tensor:
        return self._sp_values

    def indices(self) -> Tensor:
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_indices

    def values(self) -> Tensor:
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_values

    def _index(self, what: str) -> Tensor:
        """The device index tensor ``what`` ("rows", "cols" of a 2-D tensor; "linear": row-major positions)."""
        if what not in self._sp_index:
            host, sd = self._host(), self.sparse_dim()
            array = {
                "rows": lambda: host[0],
                "cols": lambda: host[1],
                "linear": lambda: _linear(host, self._sp_size[:sd]),
            }
            self._sp_index[what] = _index_tensor(array[what](), self.device)
        return self._sp_index[what]

    def _host(self) -> np.ndarray:
        if self._sp_host is None:
            self._sp_host = np.asarray(self._sp_indices.numpy(), dtype=np.int64).reshape(self._sp_indices.shape)
        return self._sp_host

    # ---------------------------------------------------------------- autograd
    @property
    def requires_grad(self) -> bool:
        return self._sp_values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and not self.dtype.is_float:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        if not self.is_leaf:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if not self._sp_own:  # never flip the flag of the user's values tensor
            self._sp_values, self._sp_own = self._sp_values.detach(), True
        self._sp_values.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        if self._sp_own or not self._sp_values.requires_grad:
            return None
        return self._sp_values.grad_fn or _FROM_VALUES

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        """A leaf's gradient: sparse, on the coalesced pattern of its entries (PyTorch's ``torch.sparse.mm``)."""
        g = self._sp_values.grad if self._sp_own else None
        if g is None:
            return None
        keys, first, _ = _unique_columns(self._host())
        return _coo(
            _index_tensor(keys, g.device), index_select(g, 0, _index_tensor(first, g.device)), self._sp_size, True
        )

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            raise NotImplementedError("vkml: setting .grad of a sparse tensor to a tensor (only None clears it)")
        self._sp_values.grad = None

    def detach(self) -> SparseTensor:
        return _coo(self._sp_indices, self._sp_values.detach(), self._sp_size, self._sp_coalesced, self._sp_host)

    def clone(self, *, memory_format=None) -> SparseTensor:
        return _coo(
            F.clone(self._sp_indices), F.clone(self._sp_values), self._sp_size, self._sp_coalesced, self._sp_host
        )

    def zero_(self) -> SparseTensor:
        """No entries left (PyTorch's sparse ``zero_``: nnz becomes 0, the size stays), in place: what
        ``optimizer.zero_grad(set_to_none=False)`` does to a sparse gradient."""
        sd, values = self.sparse_dim(), self._sp_values
        host = np.zeros((sd, 0), np.int64)
        self._sp_indices = _index_tensor(host, values.device)
        self._sp_values = zeros((0, *values.shape[1:]), dtype=values.dtype, device=values.device)
        self._sp_host, self._sp_coalesced, self._sp_index = host, True, {}
        return self

    # ---------------------------------------------------------------- conversions
    def coalesce(self) -> SparseTensor:
        """Indices sorted (row-major) and unique, duplicate values summed in entry order; ``self`` if coalesced."""
        if self._sp_coalesced:
            return self
        keys, _, inverse = _unique_columns(self._host())
        return _coo(
            _index_tensor(keys, self.device), _segment_sum(self._sp_values, inverse, keys.shape[1]), self._sp_size, True
        )

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense tensor: duplicate entries add in entry order, onto zeros."""
        dense = _to_dense(self)
        return dense if dtype is None else F.cast(dense, dtype)

    def to_sparse(self, *args, **kwargs) -> SparseTensor:
        if args or kwargs:
            raise NotImplementedError("to_sparse: vkml takes no arguments for a tensor that is already sparse")
        return self

    def to_sparse_coo(self) -> SparseTensor:
        return self

    def to(self, *args, **kwargs) -> SparseTensor:
        device, dtype, copy = parse_to(args, kwargs)
        values, indices = self._sp_values, self._sp_indices
        if device is not None:
            values, indices = F.to_device(values, device), F.to_device(indices, device)
        if dtype is not None:
            values = F.cast(values, dtype)
        if values is self._sp_values and not copy:
            return self
        return _coo(indices, values, self._sp_size, self._sp_coalesced, self._sp_host)

    def type(self, dtype=None, non_blocking: bool = False):
        if dtype is None:
            raise NotImplementedError("Tensor.type() of a sparse tensor: vkml has no sparse tensor type names")
        return self.to(dtype)

    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("tolist() of a sparse tensor: use Tensor.to_dense() first (PyTorch has no storage for it)")

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def __repr__(self) -> str:
        pad = " " * len("tensor(indices=")
        ind = repr(self._sp_indices).replace("\n", "\n" + pad)
        val = repr(self._sp_values).replace("\n", "\n" + " " * len("       values="))
        extra = ""
        if self._sp_values.grad_fn is not None:
            extra = f", grad_fn={self._sp_values.grad_fn!r}"
        elif self.requires_grad:
            extra = ", requires_grad=True"
        return (
            f"tensor(indices={ind},\n       values={val},\n       size={self._sp_size}, nnz={self._nnz()}, "
            f"layout={sparse_coo!r}{extra})"
        )

    def __reduce_ex__(self, protocol):
        raise NotImplementedError("vkml: saving or pickling a sparse tensor (save its indices and values)")

    def __deepcopy__(self, memo):
        return self.clone()

    def __copy__(self):
        return _coo(self._sp_indices, self._sp_values, self._sp_size, self._sp_coalesced, self._sp_host)

    # ---------------------------------------------------------------- shape
    def t(self) -> SparseTensor:
        if self.sparse_dim() != 2 or len(self._sp_size) > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {self.sparse_dim()} sparse "
                f"and {self.dense_dim()} dense dimensions"
            )
        return self.transpose(0, 1)

    @property
    def T(self) -> SparseTensor:  # noqa: N802  (PyTorch's name)
        if len(self._sp_size) != 2:
            raise NotImplementedError("Tensor.T of a sparse tensor that is not 2-D: vkml has no sparse permute")
        return self.transpose(0, 1)

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        n, sd = len(self._sp_size), self.sparse_dim()
        d0, d1 = _dim("transpose", dim0, n), _dim("transpose", dim1, n)
        if d0 == d1:
            return self
        if d0 >= sd or d1 >= sd:
            raise NotImplementedError(
                "transpose of a sparse tensor's dense dimensions: vkml swaps sparse dimensions only"
            )
        order = list(range(sd))
        order[d0], order[d1] = order[d1], order[d0]
        size = list(self._sp_size)
        size[d0], size[d1] = size[d1], size[d0]
        host = None if self._sp_host is None else self._sp_host[order]
        indices = index_select(self._sp_indices, 0, _index_tensor(np.array(order), self.device))
        return _coo(indices, self._sp_values, tuple(size), self._nnz() < 2, host)

    def reshape(self, *shape):
        raise RuntimeError("reshape is not implemented for sparse tensors")

    # ---------------------------------------------------------------- arithmetic
    def mul(self, other) -> SparseTensor:
        """sparse * scalar, sparse * dense (broadcast to this shape): each entry times the value at its position."""
        if isinstance(other, Tensor) and other.is_sparse:
            raise NotImplementedError("mul of two sparse tensors: vkml multiplies a sparse tensor by a dense one only")
        if isinstance(other, Tensor) and other.shape != ():
            _same_device(self, other)
            sd = self.sparse_dim()
            whole = F.reshape(other.expand(*self._sp_size), (-1, *self._sp_size[sd:]))
            other = index_select(whole, 0, self._index("linear")) if self._nnz() else whole[:0]
            if len(self._sp_values.shape) < len(other.shape):
                other = F.reshape(other, self._sp_values.shape)
        return _coo(self._sp_indices, F.mul(self._sp_values, other), self._sp_size, self._sp_coalesced, self._sp_host)

    __mul__ = mul

    def __rmul__(self, other) -> SparseTensor:
        return self.mul(other)

    def div(self, other, *, rounding_mode=None) -> SparseTensor:
        if isinstance(other, Tensor) and (other.is_sparse or other.shape != ()):
            raise NotImplementedError("div of a sparse tensor by a tensor: vkml divides sparse tensors by scalars only")
        values = F.div(self._sp_values, other, rounding_mode=rounding_mode)
        return _coo(self._sp_indices, values, self._sp_size, self._sp_coalesced, self._sp_host)

    __truediv__ = div

    def __rtruediv__(self, other):
        return _no_node(self)

    def neg(self) -> SparseTensor:
        return _coo(self._sp_indices, F.neg(self._sp_values), self._sp_size, self._sp_coalesced, self._sp_host)

    __neg__ = neg

    def add(self, other, *, alpha=1):
        """sparse + sparse: a sparse tensor holding both entry lists (uncoalesced, as PyTorch's)."""
        if not (isinstance(other, Tensor) and other.is_sparse):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        return _sparse_add(self, other, alpha)

    __add__ = add

    def sub(self, other, *, alpha=1):
        if not (isinstance(other, Tensor) and other.is_sparse):
            raise RuntimeError("sub(sparse, dense) is not supported. Use sub(dense, sparse) instead.")
        return _sparse_add(self, other, -alpha)

    __sub__ = sub

    def __radd__(self, other):
        """dense + sparse: a dense tensor (PyTorch's ``add(dense, sparse)``)."""
        if isinstance(other, Tensor):
            return _add_dense(other, self, 1)
        return _no_node(self)

    def __rsub__(self, other):
        if isinstance(other, Tensor):
            return _add_dense(other, self, -1)
        return _no_node(self)

    # ---------------------------------------------------------------- products and sums
    def mm(self, mat2):
        return _mm("mm", self, mat2)

    def matmul(self, other):
        return _matmul("matmul", self, other)

    def mv(self, vec):
        return _mv(self, vec)

    __matmul__ = matmul

    def __rmatmul__(self, other):
        return _matmul("matmul", other, self)

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        if keepdim:
            raise NotImplementedError("sum of a sparse tensor with keepdim=True: vkml sums sparse tensors without it")
        return sparse_sum(self, dim, dtype=dtype)

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        return _no_node(self)

    def float(self) -> SparseTensor:
        return self.to(T.float32)

    def double(self) -> SparseTensor:
        return self.to(T.float64)

    def half(self) -> SparseTensor:
        return self.to(T.float16)

    def bfloat16(self) -> SparseTensor:
        return self.to(T.bfloat16)

    def long(self) -> SparseTensor:
        return self.to(T.int64)

    def int(self) -> SparseTensor:
        return self.to(T.int32)

    def bool(self) -> SparseTensor:
        return self.to(T.bool_)

    # The sparse form of a dense op that met a sparse operand (shape's mm, addmm; operators' matmul).
    _sparse_dispatch = staticmethod(lambda op, *args, **kwargs: dispatch(op, *args, **kwargs))


class _SparseFromValues:
    """The ``grad_fn`` of a sparse tensor built from values that require grad (a leaf's: the gradient
    reaches the values through the ops that read them)."""

    def name(self) -> str:
        return "SparseCooTensorWithDimsAndTensorsBackward0"

    def __repr__(self) -> str:
        return f"<{self.name()}>"


_FROM_VALUES = _SparseFromValues()


def _dim(op: str, dim, ndim: int) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})"
        )
    return int(dim) % max(ndim, 1)


def _coo(indices, values, size, coalesced, host=None) -> SparseTensor:
    return SparseTensor(indices, values, size, coalesced, host)


def _index_tensor(array: np.ndarray, device) -> Tensor:
    return F.to_device(_make_tensor(np.ascontiguousarray(array, dtype=np.int64)), device)


def _unique_columns(host: np.ndarray):
    """The unique index columns, sorted row-major; each one's first entry; each entry's unique column."""
    if host.shape[1] == 0:
        return host, np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys, first, inverse = np.unique(host, axis=1, return_index=True, return_inverse=True)
    return keys, first, inverse.reshape(-1)


def _segment_sum(values: Tensor, inverse: np.ndarray, count: int) -> Tensor:
    """``out[inverse[k]] += values[k]`` in ascending k, onto zeros (index_add's order)."""
    out = zeros((count, *values.shape[1:]), dtype=values.dtype, device=values.device)
    if inverse.size == 0:
        return out
    return index_add(out, 0, _index_tensor(inverse, values.device), values)


def _linear(host: np.ndarray, dims) -> np.ndarray:
    """The row-major position of each entry over the sparse dims ``dims`` (sizes)."""
    return np.ravel_multi_index(tuple(host), tuple(dims)) if host.shape[0] else np.zeros(host.shape[1], np.int64)


def _to_dense(s: SparseTensor) -> Tensor:
    sd, values = s.sparse_dim(), s._sp_values
    sparse_size, dense_size = s._sp_size[:sd], s._sp_size[sd:]
    flat = zeros((math.prod(sparse_size), *dense_size), dtype=values.dtype, device=values.device)
    if s._nnz():
        flat = index_add(flat, 0, s._index("linear"), values)
    return F.reshape(flat, s._sp_size)


def _add_dense(dense: Tensor, s: SparseTensor, alpha) -> Tensor:
    """``dense + alpha * s`` (``Tensor.add``, ``add_``, ``+``, ``-`` of a dense and a sparse tensor): each
    entry's ``alpha * value`` added into its place in entry order, starting from ``dense`` (PyTorch's CPU
    loop; duplicates add one by one, not summed first)."""
    if tuple(dense.shape) != s._sp_size:
        raise RuntimeError(
            f"add: expected 'self' and 'other' to have same size, but self has size {list(dense.shape)} while other "
            f"has size {list(s._sp_size)} (FYI: dense-sparse addition does not currently support broadcasting)"
        )
    _same_device(dense, s)
    values = s._sp_values if alpha == 1 else F.mul(s._sp_values, alpha)
    dtype = promote_types(dense.dtype, values.dtype)
    sd = s.sparse_dim()
    flat = F.reshape(F.cast(dense, dtype), (math.prod(s._sp_size[:sd]), *s._sp_size[sd:]))
    if s._nnz():
        flat = index_add(flat, 0, s._index("linear"), F.cast(values, dtype))
    return F.reshape(flat, s._sp_size)


def _sparse_add(a: SparseTensor, b: SparseTensor, alpha) -> SparseTensor:
    if a._sp_size != b._sp_size:
        raise RuntimeError(
            f"add: expected sizes of 'self' and 'other' to match, but {list(a._sp_size)} != {list(b._sp_size)}"
        )
    if a.sparse_dim() != b.sparse_dim():
        raise NotImplementedError("add of sparse tensors with different sparse_dim: vkml adds equal layouts only")
    _same_device(a, b)
    bv = b._sp_values if alpha == 1 else F.mul(b._sp_values, alpha)
    dtype = promote_types(a.dtype, bv.dtype)
    ha, hb = a._host(), b._host()
    take_a, take_b = _merge(ha, hb)
    host = np.where(
        take_a >= 0, ha[:, np.maximum(take_a, 0)] if ha.size else 0, hb[:, np.maximum(take_b, 0)] if hb.size else 0
    )
    host = host.reshape(ha.shape[0], len(take_a)).astype(np.int64)
    device = a.device
    # Each output entry is a's value, b's, or a + b where both name it (PyTorch's CPU merge): selected
    # from the values padded with one zero row, so no output adds a zero it does not have.
    parts = []
    for values, take in ((a._sp_values, take_a), (bv, take_b)):
        padded = F.cat([F.cast(values, dtype), zeros((1, *values.shape[1:]), dtype=dtype, device=device)], 0)
        parts.append(index_select(padded, 0, _index_tensor(np.where(take >= 0, take, values.shape[0]), device)))
    shape = (len(take_a),) + (1,) * (len(a._sp_size) - ha.shape[0])
    both = _make_tensor(((take_a >= 0) & (take_b >= 0)).reshape(shape)).to(device)
    only_a = _make_tensor(((take_a >= 0) & (take_b < 0)).reshape(shape)).to(device)
    values = F.where(both, F.add(parts[0], parts[1]), F.where(only_a, parts[0], parts[1]))
    coalesced = a._sp_coalesced and b._sp_coalesced
    return _coo(_index_tensor(host, device), values, a._sp_size, coalesced or len(take_a) < 2, host)


def _merge(ha: np.ndarray, hb: np.ndarray):
    """PyTorch's CPU sparse add: one pass over both entry lists as if each were sorted; an entry of
    ``a`` equal to ``b``'s current one joins it, else the smaller comes first. For each output entry,
    the a and b entries it takes (-1: none)."""
    na, nb = ha.shape[1], hb.shape[1]
    ka, kb = [tuple(c) for c in ha.T.tolist()], [tuple(c) for c in hb.T.tolist()]
    take_a, take_b = [], []
    i = j = 0
    while i < na or j < nb:
        if j >= nb or (i < na and ka[i] < kb[j]):
            take_a.append(i), take_b.append(-1)
            i += 1
        elif i >= na or kb[j] < ka[i]:
            take_a.append(-1), take_b.append(j)
            j += 1
        else:
            take_a.append(i), take_b.append(j)
            i, j = i + 1, j + 1
    return np.array(take_a, dtype=np.int64), np.array(take_b, dtype=np.int64)


def _same_device(a: Tensor, b: Tensor) -> None:
    if a.device != b.device:  # PyTorch's RuntimeError: tensors never move on their own
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, {a.device} and {b.device}!"
        )


def _check_mm(op: str, s: SparseTensor, d: Tensor) -> None:
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise NotImplementedError(f"{op}: vkml multiplies 2-D sparse tensors with 0 dense dimensions only")
    if len(d.shape) != 2:
        raise RuntimeError(f"{op}: mat2 must be a matrix, got {len(d.shape)}-D tensor")
    if d.shape[0] != s._sp_size[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._sp_size[1]}, got {d.shape[0]}")
    if d.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {_torch_type(s.dtype)} but found {_torch_type(d.dtype)}")


_torch_type = _torch_name  # PyTorch's scalar type names (Float, Long, ...)


def _spmm(op: str, s: SparseTensor, d: Tensor, sparse_grad: bool) -> Tensor:
    """``s @ d`` for a 2-D sparse ``s`` and a dense matrix ``d``: gather, scale, index_add (entry order)."""
    _check_mm(op, s, d)
    if not sparse_grad and s.requires_grad and s.is_leaf:
        raise NotImplementedError(
            f"{op}: the gradient of a sparse leaf tensor through {op} is dense in PyTorch; vkml gives a sparse "
            "leaf's gradient through torch.sparse.mm only (or build the tensor from values that require grad)"
        )
    _same_device(s, d)
    out = zeros((s._sp_size[0], d.shape[1]), dtype=s.dtype, device=s.device)
    if s._nnz() == 0:
        return out
    rows, cols = s._index("rows"), s._index("cols")
    terms = F.mul(F.unsqueeze(s._sp_values, 1), index_select(d, 0, cols))
    return index_add(out, 0, rows, terms)


def _sparse_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """``a @ b`` of two 2-D sparse tensors: a coalesced sparse result, as PyTorch's.

    Every pair of entries a[i, k], b[k, j] gives one product (gathered values, multiplied on the device);
    the products of one (i, j) add in pair order onto zeros: a's entries in entry order, then b's entries
    of row k in entry order (for coalesced operands: ascending k)."""
    for t in (a, b):
        if t.sparse_dim() != 2 or t.dense_dim() != 0:
            raise NotImplementedError("mm: vkml multiplies 2-D sparse tensors with 0 dense dimensions only")
    (n, k), (k2, m) = a._sp_size, b._sp_size
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"mat1 dtype {_torch_type(a.dtype)} does not match mat2 dtype {_torch_type(b.dtype)}")
    _same_device(a, b)
    ha, hb = a._host(), b._host()
    order = np.argsort(hb[0], kind="stable")  # b's entries by row, entry order within a row
    starts = np.searchsorted(hb[0][order], np.arange(k + 1))
    counts = (starts[1:] - starts[:-1])[ha[1]]  # for each entry of a: the entries of b in its column's row
    pair_a = np.repeat(np.arange(ha.shape[1]), counts)
    offsets = np.arange(len(pair_a)) - np.repeat(np.cumsum(counts) - counts, counts)
    pair_b = order[starts[ha[1]][pair_a] + offsets] if len(pair_a) else np.zeros(0, np.int64)
    keys, _, inverse = _unique_columns(np.stack([ha[0][pair_a], hb[1][pair_b]]).reshape(2, -1))
    device = a.device
    products = F.mul(
        index_select(a._sp_values, 0, _index_tensor(pair_a, device)),
        index_select(b._sp_values, 0, _index_tensor(pair_b, device)),
    )
    return _coo(_index_tensor(keys, device), _segment_sum(products, inverse, keys.shape[1]), (n, m), True, keys)


def _mm(op: str, a, b, sparse_grad: bool = False) -> Tensor:
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        return _sparse_sparse(a, b)
    if isinstance(a, SparseTensor):
        return _spmm(op, a, b, sparse_grad)
    if not isinstance(a, Tensor) or len(a.shape) != 2:
        raise RuntimeError(f"{op}: self must be a matrix")
    # dense @ sparse = (sparse^T @ dense^T)^T: each output element sums in ascending entry order of b^T
    return S.t(_spmm(op, b.t(), S.t(a), sparse_grad))


def _matmul(op: str, a, b) -> Tensor:
    if isinstance(a, SparseTensor) and isinstance(b, Tensor) and not b.is_sparse and len(b.shape) == 1:
        return F.squeeze(_mm(op, a, F.unsqueeze(b, 1)), 1)
    return _mm(op, a, b)


def _mv(matrix, vec) -> Tensor:
    """``torch.mv`` with a sparse COO matrix and a dense vector: a dense vector, as PyTorch's."""
    if not isinstance(matrix, SparseTensor) or getattr(vec, "is_sparse", False):
        raise NotImplementedError(
            "Could not run 'mv' with a sparse vector: vkml takes a sparse matrix and a dense vector"
        )
    if len(matrix.shape) != 2 or len(vec.shape) != 1:
        raise RuntimeError(
            f"mv: two tensor dim should be 2 and 1, but got SparseTensor Dim: {len(matrix.shape)}Tensor Dim: {len(vec.shape)}"
        )
    if matrix.shape[1] != vec.shape[0]:
        raise RuntimeError("mv: expected self.size(-1) == vec.size(-1)")
    return _matmul("mv", matrix, vec)


def dispatch(op: str, *args, **kwargs):
    """The sparse form of a dense op that met a sparse operand (vkml/frontend/shape.py's ``mm``, ``addmm``,
    operators' ``matmul``); an op with no sparse form raises NotImplementedError naming it."""
    if op in ("mm", "spmm"):
        return _mm(op, *args)
    if op == "matmul":
        return _matmul(op, *args)
    if op == "mv":
        return _mv(*args)
    if op == "addmm":
        return addmm(*args, **kwargs)
    if op == "sum":
        return args[0].sum(*args[1:], **kwargs)
    if op == "add":
        return _add_dense(*args, **kwargs)
    raise NotImplementedError(f"Could not run '{op}' with a sparse COO tensor (docs/sparse.md)")


# -------------------------------------------------------------------- public functions


def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    check_invariants=None,
    is_coalesced=None,
) -> SparseTensor:
    """A sparse COO tensor from ``indices`` (``(sparse_dim, nnz)`` integers) and ``values`` (``(nnz, *dense)``).

    ``size`` defaults to the smallest that holds the indices. vkml checks the indices against
    ``size`` always (PyTorch only with ``check_invariants=True``; out-of-range indices are undefined
    behaviour there).

    >>> vkml.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3)).to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 5.0]]
    """
    host = np.asarray(indices.numpy() if isinstance(indices, Tensor) else indices)
    if host.dtype.kind not in "iuf" and host.size:
        raise TypeError(f"sparse_coo_tensor(): indices must be integers, got {host.dtype}")
    host = host.astype(np.int64)
    if host.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(host.shape)}")
    if not isinstance(values, Tensor):
        values = _make_tensor(values, dtype=dtype)
    if dtype is not None:
        values = F.cast(values, dtype)
    if device is not None:
        values = F.to_device(values, device)
    if requires_grad:
        values = values.detach()
    sd, nnz = host.shape
    if values.ndim < 1 or values.shape[0] != nnz:
        got = values.shape[0] if values.ndim else 1
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from values: {got}"
        )
    dense_shape = tuple(values.shape[1:])
    if size is None:
        size = tuple(int(m) + 1 for m in host.max(axis=1)) if nnz else (0,) * sd
        size = size + dense_shape
    else:
        size = tuple(as_size(size))
        if len(size) != sd + len(dense_shape):
            raise RuntimeError(
                f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, sparse_dim = {sd}, "
                f"dense_dim = {len(dense_shape)}"
            )
        if size[sd:] != dense_shape:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got {[nnz, *dense_shape]}")
    if nnz:
        low, high = host.min(axis=1), host.max(axis=1)
        for d in range(sd):
            if low[d] < 0:
                raise RuntimeError(f"found negative index {low[d]} for dim {d}")
            if high[d] >= size[d]:
                raise RuntimeError(
                    f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index {high[d]}"
                )
    out = _coo(_index_tensor(host, values.device), values, size, nnz < 2 or bool(is_coalesced), host)
    if requires_grad:
        out.requires_grad = True
    return out


def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
    """A dense tensor as a coalesced sparse COO tensor of its nonzeros (``sparse_dim`` leading dims sparse)."""
    sparse_dim = args[0] if args else None
    if len(args) > 1:
        raise TypeError(f"to_sparse() takes at most 1 positional argument ({len(args)} given)")
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError(f"to_sparse: vkml has the COO layout only (got layout={layout!r})")
    n = self.ndim
    if dense_dim is not None:
        sparse_dim = n - dense_dim
    sd = n if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= n or (sd == 0 and n):
        raise RuntimeError(f"sparse_dim must be in [1, {n}] for a {n}-D tensor, got {sd}")
    array = np.asarray(self.detach().numpy() if self.dtype is not T.bfloat16 else F.cast(self, T.float32).numpy())
    mask = array.reshape(array.shape[:sd] + (-1,)) != 0 if sd < n else array != 0
    if sd < n:
        mask = mask.any(axis=-1)
    host = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sd, -1)
    if sd == 0:
        values = F.unsqueeze(self, 0)
    else:
        lin = _index_tensor(_linear(host, self.shape[:sd]), self.device)
        values = index_select(F.reshape(self, (-1, *self.shape[sd:])), 0, lin)
    return _coo(_index_tensor(host, self.device), values, tuple(self.shape), True, host)


def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    """A dense tensor's ``to_dense``: the tensor itself (cast when ``dtype`` is given), as PyTorch."""
    return self if dtype is None else F.cast(self, dtype)


def sparse_sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: all dims give a dense 0-d tensor; some dims, a sparse tensor over the rest."""
    if not isinstance(input, SparseTensor):
        return F.sum(input) if dim is None else F.sum(input, dim)
    values = input._sp_values if dtype is None else F.cast(input._sp_values, dtype)
    n, sd = len(input._sp_size), input.sparse_dim()
    if dim is None:
        return F.sum(values)
    dims = sorted({_dim("sum", d, n) for d in ((dim,) if isinstance(dim, int) else dim)})
    sparse_sum_dims = [d for d in dims if d < sd]
    dense_sum_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_sum_dims:
        values = F.sum(values, dense_sum_dims)
    keep = [d for d in range(sd) if d not in sparse_sum_dims]
    size = tuple(s for d, s in enumerate(input._sp_size) if d not in dims)
    if not keep:
        return F.sum(values, 0)
    keys, _, inverse = _unique_columns(input._host()[keep])
    return _coo(_index_tensor(keys, values.device), _segment_sum(values, inverse, keys.shape[1]), size, True)


def sparse_mm(mat1, mat2, reduce=None) -> Tensor:
    """``torch.sparse.mm``: sparse @ dense, dense @ sparse (dense results) or sparse @ sparse (a coalesced
    sparse result); a sparse leaf's gradient is sparse, on its pattern."""
    if reduce not in (None, "sum"):
        raise NotImplementedError(f"torch.sparse.mm: vkml has reduce='sum' only, got {reduce!r}")
    return _mm("mm", mat1, mat2, sparse_grad=True)


def spmm(input, mat2) -> Tensor:
    """``torch.spmm``: ``torch.mm`` for a sparse ``input`` and a dense ``mat2``."""
    if not isinstance(input, SparseTensor):
        return S.mm(input, mat2)
    return _mm("mm", input, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` (dense ``input`` and ``mat2``)."""
    if isinstance(input, SparseTensor):
        raise NotImplementedError("addmm with a sparse input: vkml takes a dense input with a sparse mat1")
    prod = _mm("addmm", mat1, mat2)
    if input.dtype is not prod.dtype:
        raise RuntimeError(f"expected scalar type {_torch_type(prod.dtype)} but found {_torch_type(input.dtype)}")
    return S._scaled_sum("addmm", input, prod, beta, alpha)


def _sparse_softmax(name: str, fn, input, dim: int, dtype=None) -> SparseTensor:
    if not isinstance(input, SparseTensor):
        raise NotImplementedError(f"torch.sparse.{name}: vkml takes a sparse COO input")
    if input.dense_dim():
        raise NotImplementedError(f"torch.sparse.{name}: vkml takes sparse tensors with 0 dense dimensions")
    s = input.coalesce()
    d = _dim(name, dim, len(s._sp_size))
    host = s._host()
    values = s._sp_values if dtype is None else F.cast(s._sp_values, dtype)
    if s._nnz() == 0:
        return _coo(s._sp_indices, values, s._sp_size, True, host)
    # The entries of one slice along ``dim`` form one group; a missing entry is -inf (it takes no share).
    others = np.delete(host, d, axis=0)
    _, _, group = _unique_columns(others) if others.shape[0] else (None, None, np.zeros(host.shape[1], np.int64))
    count = int(group.max()) + 1
    dense = F.add(zeros((count, s._sp_size[d]), dtype=values.dtype, device=values.device), float("-inf"))
    dense = _put(dense, group, host[d], values)
    out = fn(dense, 1)
    picked = F.reshape(out, (-1,))[_index_tensor(group * s._sp_size[d] + host[d], values.device)]
    return _coo(s._sp_indices, picked, s._sp_size, True, host)


def _put(dense: Tensor, rows: np.ndarray, cols: np.ndarray, values: Tensor) -> Tensor:
    flat = F.reshape(dense, (-1,))
    pos = _index_tensor(rows * dense.shape[1] + cols, values.device)
    return F.reshape(index_copy(flat, 0, pos, values), dense.shape)


def sparse_softmax(input, dim: int, dtype=None) -> SparseTensor:
    """``torch.sparse.softmax``: softmax over the specified entries of each slice (unspecified ones excluded)."""
    return _sparse_softmax("softmax", F.softmax, input, dim, dtype)


def sparse_log_softmax(input, dim: int, dtype=None) -> SparseTensor:
    """``torch.sparse.log_softmax``: log_softmax over the specified entries of each slice."""
    return _sparse_softmax("log_softmax", F.log_softmax, input, dim, dtype)


def _legacy_constructor(name: str, dtype):
    """``torch.sparse.<name>``: PyTorch's deprecated constructors (pygcn's ``torch.sparse.FloatTensor(i, v, shape)``).

    As PyTorch's: ``(indices, values[, size])`` keeps the values' dtype (the type's name does not cast) and
    takes int64 indices only; ``(*sizes)`` makes an empty sparse tensor of the type's dtype. Each warns."""

    def constructor(*args, device=None):
        if args and isinstance(args[0], Tensor):
            if len(args) not in (2, 3) or not isinstance(args[1], Tensor):
                raise TypeError(f"torch.sparse.{name}(): expected (indices, values) or (indices, values, size)")
            indices, values = args[0], args[1]
            if indices.dtype is not T.int64:  # PyTorch's two texts, by form
                if len(args) == 2:
                    raise RuntimeError(f"expected scalar type Long but found {_torch_type(indices.dtype)}")
                raise RuntimeError("indices must be an int64 tensor")
            form = "indices, values, shape" if len(args) == 3 else "indices, values"
            warnings.warn(
                f"torch.sparse.SparseTensor({form}, *, device=) is deprecated.  Please use "
                f"torch.sparse_coo_tensor({form}, dtype=, device=).",
                UserWarning,
                stacklevel=2,
            )
            return sparse_coo_tensor(indices, values, args[2] if len(args) == 3 else None, device=device)
        size = tuple(as_size(args[0] if len(args) == 1 and not isinstance(args[0], (int, np.integer)) else args))
        warnings.warn(
            "torch.sparse.SparseTensor(shape, *, device=) is deprecated.  Please use "
            "torch.sparse_coo_tensor(shape, dtype=, device=).",
            UserWarning,
            stacklevel=2,
        )
        size = size or (0,)
        empty = zeros((len(size), 0), dtype=T.int64)
        return sparse_coo_tensor(empty, zeros(0, dtype=dtype), size, device=device)

    constructor.__name__ = constructor.__qualname__ = name
    return constructor


LEGACY_CONSTRUCTORS = {
    name: _legacy_constructor(name, dtype)
    for name, dtype in (
        ("FloatTensor", T.float32),
        ("DoubleTensor", T.float64),
        ("HalfTensor", T.float16),
        ("BFloat16Tensor", T.bfloat16),
        ("LongTensor", T.int64),
        ("IntTensor", T.int32),
        ("ShortTensor", T.int16),
        ("CharTensor", T.int8),
        ("ByteTensor", T.uint8),
    )
}


# A dense tensor's sparse-only methods raise PyTorch's errors (its sparse_dim() is 0, dense_dim() its ndim).
def _expects_sparse(name: str, what: str = "sparse coordinate tensor"):
    def method(self):
        raise RuntimeError(f"{name} expected {what} layout but got Strided")

    method.__name__ = name
    method.__doc__ = f"A sparse tensor's ``{name}()``; a dense tensor raises PyTorch's RuntimeError."
    return method


def _dense_no_sparse_parts(name: str):
    def method(self):
        raise NotImplementedError(f"Could not run '{name}' with a dense (strided) tensor: it is a sparse tensor's")

    method.__name__ = name
    return method


def _dense_sparse_dim(self) -> int:
    return 0


def _dense_dense_dim(self) -> int:
    return self.ndim


EXPORTS = (
    Export("sparse_coo_tensor"),
    Export("spmm"),
    Export("strided", value=strided),
    Export("sparse_coo", value=sparse_coo),
    Export("layout", method=property(_dense_layout), value=layout),
    Export("to_sparse", function=False, method=to_sparse),
    Export("to_dense", function=False, method=to_dense),
    Export("to_sparse_coo", function=False, method=to_sparse),
    Export("coalesce", function=False, method=_expects_sparse("coalesce")),
    Export("is_coalesced", function=False, method=_expects_sparse("is_coalesced")),
    Export("indices", function=False, method=_expects_sparse("indices")),
    Export("values", function=False, method=_expects_sparse("values", "sparse tensor")),
    Export("_indices", function=False, method=_dense_no_sparse_parts("_indices")),
    Export("_values", function=False, method=_dense_no_sparse_parts("_values")),
    Export("_nnz", function=False, method=_dense_no_sparse_parts("_nnz")),
    Export("sparse_dim", function=False, method=_dense_sparse_dim),
    Export("dense_dim", function=False, method=_dense_dense_dim),
)
