"""Complex tensors: ``complex64`` (``cfloat``) and ``complex128`` (``cdouble``), as PyTorch has them.

A complex tensor is a ``ComplexTensor`` handle on a real tensor, its *pair*: the float32 (float64)
tensor of its shape plus a trailing dim of 2, (real, imaginary), the layout of PyTorch's
``view_as_real``. Every complex op is a composite of real ops on the pair (docs/complex.md), so
CPU and Vulkan compute the same bits, the ops fuse as any other, autograd runs on the pair, and
the gradient of a real loss is PyTorch's (``dL/dre + i dL/dim``, its conjugate Wirtinger
convention). ``view_as_real``, ``view_as_complex``, ``.real`` and ``.imag`` are views of the pair's
storage: a write through one is seen by the others.

An op that does not know complex tensors reaches for the handle's node and raises PyTorch's
RuntimeError (``"sin" not implemented for 'ComplexFloat'``); none reads the pair as real values.

>>> import vkml
>>> z = vkml.complex(vkml.tensor([1.0, 0.0]), vkml.tensor([0.0, 2.0]))
>>> (z * 1j).tolist()
[1j, (-2+0j)]
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..ir import types as T
from ..ops.promotion import default_float
from ..tensor import Tensor
from . import autograd, creation, printing, transcendental
from . import operators as F
from . import random as R
from . import shape as S
from .dtype_info import called_op, complex_not_implemented
from .dtypes import python_type_dtype
from .exports import Export
from .size import Size
from .torch_names import broadcast_tensors

_TORCH_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_COMPLEX_OF = {T.float32: T.complex64, T.float64: T.complex128}
_REAL_OF = {T.complex64: T.float32, T.complex128: T.float64}
_COMPLEX_SCALARS = (complex, np.complexfloating)


def _op_name() -> str:
    return called_op(3)


def not_implemented(op: str, dtype: T.DType) -> RuntimeError:
    return complex_not_implemented(op, dtype)


def _complex_dtype(real: T.DType, op: str) -> T.DType:
    if real in (T.float16, T.bfloat16):
        raise RuntimeError(f"{op}: vkml has no complex32 (ComplexHalf); use float32 or float64 parts (docs/complex.md)")
    try:
        return _COMPLEX_OF[real]
    except KeyError:
        raise RuntimeError(f"{op}: expected float32 or float64 parts for a complex tensor, got {real.name}") from None


def default_complex() -> T.DType:
    """PyTorch's default complex dtype: complex128 when the default float is float64, else complex64."""
    return T.complex128 if default_float() is T.float64 else T.complex64


class ComplexTensor(Tensor):
    """A complex tensor: a handle on its pair (a real tensor with a trailing dim of 2)."""

    __slots__ = ("_pair",)

    def __init__(self, pair: Tensor):
        self._pair = pair
        self._node = None
        self._base = None
        self._ctx = None
        self._grad = None
        self._requires_grad = False
        self._vcount = 0
        self._vhidden = 0

    @staticmethod
    def _from_pair(pair: Tensor) -> ComplexTensor:
        """The complex tensor of ``pair`` (for face code that cannot import this module)."""
        return ComplexTensor(pair)

    # ------------------------------------------------------------ what reaches for the node
    @property
    def node(self):
        raise not_implemented(_op_name(), self.dtype)

    @node.setter
    def node(self, value) -> None:
        raise not_implemented(_op_name(), self.dtype)

    # ------------------------------------------------------------ facts
    @property
    def shape(self):
        return Size(tuple(self._pair.shape)[:-1])

    def size(self, dim=None):
        shape = _size(self)
        return shape if dim is None else shape[_dim(self, dim)]

    @property
    def dtype(self) -> T.DType:
        return _COMPLEX_OF[self._pair.dtype]

    @property
    def device(self):
        return self._pair.device

    @property
    def ndim(self) -> int:
        return self._pair.ndim - 1

    def dim(self) -> int:
        return self._pair.ndim - 1

    def numel(self) -> int:
        return self._pair.numel() // 2

    nelement = numel

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._pair.shape[0]

    def is_complex(self) -> bool:
        return True

    def is_floating_point(self) -> bool:
        return False

    def element_size(self) -> int:
        return self.dtype.nbytes

    def stride(self, dim=None):
        strides = tuple(s // 2 for s in self._pair.stride()[:-1])
        return strides if dim is None else strides[_dim(self, dim)]

    def storage_offset(self) -> int:
        return self._pair.storage_offset() // 2

    def is_contiguous(self, memory_format=None) -> bool:
        return self._pair.is_contiguous()

    @property
    def is_cuda(self) -> bool:
        return self._pair.is_cuda

    # ------------------------------------------------------------ autograd: the pair's
    @property
    def requires_grad(self) -> bool:
        return self._pair.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._pair.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> ComplexTensor:
        self._pair.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        g = self._pair.grad
        return None if g is None else ComplexTensor(g)

    @grad.setter
    def grad(self, value) -> None:
        self._pair.grad = None if value is None else _pair_of(value, "grad")

    @property
    def is_leaf(self) -> bool:
        return self._pair.is_leaf

    @property
    def grad_fn(self):
        return self._pair.grad_fn

    @property
    def _version(self) -> int:
        return self._pair._version

    def retain_grad(self) -> None:
        self._pair.retain_grad()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for real scalar outputs")
        self._pair.backward(_pair_of(gradient, "backward"), retain_graph, create_graph, inputs)

    def detach(self) -> ComplexTensor:
        return ComplexTensor(self._pair.detach())

    def detach_(self) -> ComplexTensor:
        self._pair.detach_()
        return self

    @property
    def data(self) -> ComplexTensor:
        return ComplexTensor(self._pair.data)

    @data.setter
    def data(self, value) -> None:
        self._pair.data = _pair_of(value, "data")

    # ------------------------------------------------------------ values out
    def realize(self) -> ComplexTensor:
        self._pair.realize()
        return self

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        pair = np.ascontiguousarray(self._pair.detach().numpy())
        return pair.view(self.dtype.np).reshape(pair.shape[:-1])

    def tolist(self):
        return self.detach().numpy().tolist()

    def item(self) -> complex:
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return complex(self.detach().numpy().reshape(-1)[0])

    def __complex__(self) -> complex:
        return self.item()

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        raise TypeError("can't convert complex to float")

    def __int__(self) -> int:
        raise TypeError("can't convert complex to int")

    def __repr__(self) -> str:
        return _repr(self)

    def __str__(self) -> str:
        return self.__repr__()

    def __format__(self, format_spec: str) -> str:
        if self.ndim == 0 and format_spec:
            return format(self.item(), format_spec)
        return repr(self)

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    def __deepcopy__(self, memo: dict) -> ComplexTensor:
        found = memo.get(id(self))
        if found is None:
            found = memo[id(self)] = ComplexTensor.__new__(type(self))
            ComplexTensor.__init__(found, self._pair.__deepcopy__(memo))
        return found

    def __reduce_ex__(self, protocol):
        return (_from_pair_values, (self.detach().numpy(), str(self.device), self.requires_grad))

    # ------------------------------------------------------------ moving and casting
    def to(self, *args, **kwargs):
        dtype = kwargs.pop("dtype", None)
        rest = []
        for a in args:
            if isinstance(a, T.DType):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, kwargs["device"] = a.dtype, a.device
            else:
                rest.append(a)
        pair = self._pair.to(*rest, **kwargs) if rest or kwargs else self._pair
        out = ComplexTensor(pair) if pair is not self._pair else self
        return out if dtype is None else out._cast(dtype, "to")

    def _cast(self, dtype: T.DType, op: str):
        if dtype is self.dtype:
            return self
        if dtype.is_complex:
            return ComplexTensor(self._pair.to(_REAL_OF[dtype]))
        warnings.warn(
            "Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3
        )  # PyTorch's warning: the cast itself is PyTorch's (the real part)
        return self.real.to(dtype)

    def type(self, dtype=None, non_blocking: bool = False):
        if dtype is None:
            return f"vkml.{_TORCH_NAMES[self.dtype.name]}Tensor"
        return self._cast(creation._dtype(dtype) if not isinstance(dtype, T.DType) else dtype, "type")

    def type_as(self, other):
        return self._cast(other.dtype, "type_as")

    def float(self, memory_format=None):
        return self._cast(T.float32, "float")

    def double(self, memory_format=None):
        return self._cast(T.float64, "double")

    def half(self, memory_format=None):
        return self._cast(T.float16, "half")

    def cfloat(self):
        return self._cast(T.complex64, "cfloat")

    def cdouble(self):
        return self._cast(T.complex128, "cdouble")

    def cpu(self, memory_format=None) -> ComplexTensor:
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> ComplexTensor:
        return ComplexTensor(self._pair.cuda(device))

    def clone(self, *, memory_format=None) -> ComplexTensor:
        return ComplexTensor(self._pair.clone())

    def contiguous(self, memory_format=None) -> ComplexTensor:
        pair = self._pair.contiguous()
        return self if pair is self._pair else ComplexTensor(pair)

    def copy_(self, src, non_blocking: bool = False) -> ComplexTensor:
        self._pair.copy_(_pair_of(src.expand(*self.shape) if isinstance(src, Tensor) else src, "copy_", self))
        return self

    def zero_(self) -> ComplexTensor:
        self._pair.zero_()
        return self

    def fill_(self, value) -> ComplexTensor:
        value = complex(value)
        self._pair[..., 0] = value.real
        self._pair[..., 1] = value.imag
        return self

    # ------------------------------------------------------------ views (the pair's, its last dim kept)
    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, ComplexTensor) for i in index):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return ComplexTensor(self._pair[index + (slice(None),)])

    def __setitem__(self, index, value) -> None:
        index = index if isinstance(index, tuple) else (index,)
        self._pair[index + (slice(None),)] = _pair_of(value, "__setitem__", self)

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], T.DType):
            if shape[0] is self.dtype:
                return self
            if shape[0] is _REAL_OF[self.dtype] and self.ndim:  # the parts side by side: the last dim doubled
                return self._pair.view(*self.shape[:-1], 2 * self.shape[-1])
            raise RuntimeError(f"view(dtype): vkml does not reinterpret {self.dtype.name} as {shape[0].name}")
        shape = _shape_args(shape)
        return ComplexTensor(self._pair.view(*_infer(self, shape), 2))

    def reshape(self, *shape):
        return ComplexTensor(self._pair.reshape(*_infer(self, _shape_args(shape)), 2))

    def view_as(self, other):
        return self.view(*other.shape)

    def reshape_as(self, other):
        return self.reshape(*other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        if self.ndim == 0:
            return self.reshape(1)
        start, end = _dim(self, start_dim), _dim(self, end_dim)
        return ComplexTensor(self._pair.flatten(start, end))

    def unflatten(self, dim, sizes):
        return ComplexTensor(self._pair.unflatten(_dim(self, dim), sizes))

    def unsqueeze(self, dim: int):
        return ComplexTensor(self._pair.unsqueeze(_dim(self, dim, extra=1)))

    def squeeze(self, dim=None):
        if dim is None:
            dims = [i for i, n in enumerate(self.shape) if n == 1]
            return ComplexTensor(self._pair.squeeze(dims)) if dims else self
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        return ComplexTensor(self._pair.squeeze(tuple(_dim(self, d) for d in dims)))

    def permute(self, *dims):
        dims = _shape_args(dims)
        return ComplexTensor(self._pair.permute(*(_dim(self, d) for d in dims), self.ndim))

    def transpose(self, dim0: int, dim1: int):
        return ComplexTensor(self._pair.transpose(_dim(self, dim0), _dim(self, dim1)))

    swapaxes = swapdims = transpose

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self if self.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self):
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def mH(self):
        return self.transpose(-2, -1).conj()

    @property
    def H(self):
        return self.t().conj()

    def adjoint(self):
        return self.mH

    def movedim(self, source, destination):
        src = [_dim(self, d) for d in (source if isinstance(source, (tuple, list)) else (source,))]
        dst = [_dim(self, d) for d in (destination if isinstance(destination, (tuple, list)) else (destination,))]
        return ComplexTensor(S.movedim(self._pair, src, dst))

    moveaxis = movedim

    def expand(self, *sizes):
        sizes = _shape_args(sizes)
        return ComplexTensor(self._pair.expand(*sizes, 2))

    def expand_as(self, other):
        return self.expand(*other.shape)

    def repeat(self, *sizes):
        return ComplexTensor(self._pair.repeat(*_shape_args(sizes), 1))

    def roll(self, shifts, dims=None):
        if dims is None:
            return self.flatten().roll(shifts, 0).view(*self.shape)
        dims = tuple(_dim(self, d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
        return ComplexTensor(S.roll(self._pair, shifts, dims))

    def flip(self, dims):
        dims = tuple(_dim(self, d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
        return ComplexTensor(self._pair.flip(dims))

    def chunk(self, chunks: int, dim: int = 0):
        return tuple(ComplexTensor(p) for p in self._pair.chunk(chunks, _dim(self, dim)))

    def split(self, split_size, dim: int = 0):
        return tuple(ComplexTensor(p) for p in self._pair.split(split_size, _dim(self, dim)))

    def unbind(self, dim: int = 0):
        return tuple(ComplexTensor(p) for p in self._pair.unbind(_dim(self, dim)))

    # ------------------------------------------------------------ parts
    @property
    def real(self) -> Tensor:
        return self._pair[..., 0]

    @real.setter
    def real(self, value) -> None:
        self._pair[..., 0] = value

    @property
    def imag(self) -> Tensor:
        return self._pair[..., 1]

    @imag.setter
    def imag(self, value) -> None:
        self._pair[..., 1] = value

    def is_conj(self) -> bool:
        return False

    def resolve_conj(self) -> ComplexTensor:
        return self

    def is_neg(self) -> bool:
        return False

    def resolve_neg(self) -> ComplexTensor:
        return self

    # ------------------------------------------------------------ arithmetic
    def __add__(self, o):
        return add(self, o)

    def __radd__(self, o):
        return add(o, self)

    def __sub__(self, o):
        return sub(self, o)

    def __rsub__(self, o):
        return sub(o, self)

    def __mul__(self, o):
        return mul(self, o)

    def __rmul__(self, o):
        return mul(o, self)

    def __truediv__(self, o):
        return div(self, o)

    def __rtruediv__(self, o):
        return div(o, self)

    def __pow__(self, o):
        return c_pow(self, o)

    def __rpow__(self, o):
        return c_pow(o, self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(o, self)

    def __neg__(self):
        return ComplexTensor(F.neg(self._pair))

    def __pos__(self):
        return self

    def __abs__(self):
        return c_abs(self)

    def __eq__(self, o):
        return eq(self, o)

    def __ne__(self, o):
        return F.logical_not(eq(self, o))

    __hash__ = object.__hash__

    def __iadd__(self, o):
        return _inplace(self, add(self, o))

    def __isub__(self, o):
        return _inplace(self, sub(self, o))

    def __imul__(self, o):
        return _inplace(self, mul(self, o))

    def __itruediv__(self, o):
        return _inplace(self, div(self, o))

    def add(self, other, *, alpha=1):
        return add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        return sub(self, other, alpha=alpha)

    def mul(self, other):
        return mul(self, other)

    def div(self, other):
        return div(self, other)

    multiply, subtract, divide, true_divide = mul, sub, div, div

    def add_(self, other, *, alpha=1):
        return _inplace(self, add(self, other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return _inplace(self, sub(self, other, alpha=alpha))

    def mul_(self, other):
        return _inplace(self, mul(self, other))

    def div_(self, other):
        return _inplace(self, div(self, other))

    def neg(self):
        return -self

    def conj_physical_(self):
        return conj_physical_(self)

    def cumsum(self, dim, *, dtype=None):
        out = ComplexTensor(self._pair.cumsum(_dim(self, dim)))
        return out if dtype is None else out._cast(dtype, "cumsum")

    def dot(self, other):
        return dot(self, other)

    def vdot(self, other):
        return vdot(self, other)

    def outer(self, vec2):
        return outer(self, vec2)

    ger = outer

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        return _new(c_zeros, self, size, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        return _new(ones, self, size, dtype, device, requires_grad)

    new_empty = new_zeros

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, **kwargs):
        dtype = dtype or self.dtype
        if not dtype.is_complex:
            return creation.full(size, fill_value, dtype=dtype, device=device or self.device)
        return full(size, fill_value, dtype=dtype, device=device or self.device, requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return from_numpy_complex(np.asarray(data), device or self.device, requires_grad, dtype or self.dtype)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return allclose(self, other, rtol, atol, equal_nan)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        return norm(self, p, dim, keepdim, dtype)

    negative = neg


def _inplace(z: ComplexTensor, value) -> ComplexTensor:
    if value.dtype is not z.dtype:
        raise RuntimeError(
            f"result type {_TORCH_NAMES.get(value.dtype.name)} can't be cast to the desired output type "
            f"{_TORCH_NAMES[z.dtype.name]}"
        )
    z._pair.copy_(_pair_of(value.expand(*z.shape), "copy_", z))
    return z


def _from_pair_values(values: np.ndarray, device: str, requires_grad: bool) -> ComplexTensor:
    return from_numpy_complex(values, device=device, requires_grad=requires_grad)


def _size(z: ComplexTensor):
    return Size(tuple(z._pair.shape)[:-1])


def _dim(z: ComplexTensor, dim: int, extra: int = 0) -> int:
    n = z.ndim + extra
    if not -max(n, 1) <= dim < max(n, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], but got {dim})"
        )
    return dim % n if n else 0


def _shape_args(shape) -> tuple:
    if len(shape) == 1 and hasattr(shape[0], "__iter__"):  # view((2, 3)), view(torch.Size([...]))
        return tuple(shape[0])
    return tuple(shape)


def _infer(z: ComplexTensor, shape: tuple) -> tuple:
    """``shape`` with its -1 resolved against ``z``'s logical size (the pair's trailing 2 is not in it)."""
    shape = tuple(int(s) for s in shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or z.numel() % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {z.numel()}")
        shape = tuple(z.numel() // known if s == -1 else s for s in shape)
    if math.prod(shape) != z.numel():
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {z.numel()}")
    return shape


# ---------------------------------------------------------------- operands as (real, imaginary) parts


def is_complex_value(x) -> bool:
    return isinstance(x, ComplexTensor) or isinstance(x, _COMPLEX_SCALARS)


def _parts(x, real: T.DType):
    """``x`` as (re, im) of the real dtype ``real``: tensors cast, Python numbers kept; im None when real."""
    if isinstance(x, ComplexTensor):
        pair = x._pair if x._pair.dtype is real else x._pair.to(real)
        return pair[..., 0], pair[..., 1]
    if isinstance(x, Tensor):
        return (x if x.dtype is real else x.to(real)), None
    if isinstance(x, _COMPLEX_SCALARS):
        return float(x.real), float(x.imag)
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, (bool, int, float)):
        return x, None
    raise TypeError(f"expected a vkml.Tensor or a Python number, got {type(x).__name__}")


def result_real(op: str, a, b) -> T.DType:
    """The real dtype of the parts of ``op(a, b)`` where one of them is complex, by PyTorch's promotion."""

    def rank(x):  # 2: a tensor with dims, 1: a 0-dim tensor, 0: a Python number
        return (2 if x.ndim else 1) if isinstance(x, Tensor) else 0

    def real_of(x):
        if isinstance(x, ComplexTensor):
            return _REAL_OF[x.dtype]
        return x.dtype

    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    complexes = [x for x in tensors if isinstance(x, ComplexTensor)]
    if not complexes:  # a real tensor and a complex number: the tensor's float dtype or the default's
        t = tensors[0]
        if t.dtype is T.bfloat16:  # PyTorch has no complex bfloat16: its promotion gives complex64
            return T.float32
        if t.dtype.is_float:
            return _REAL_OF[_complex_dtype(t.dtype, op)]
        return _REAL_OF[default_complex()]
    if len(tensors) == 1:
        return real_of(complexes[0])
    top = max(rank(x) for x in tensors)
    lead = [x for x in tensors if rank(x) == top]
    if any(isinstance(x, ComplexTensor) for x in lead):
        dtypes = [real_of(x) for x in lead if isinstance(x, ComplexTensor) or x.dtype.is_float]
    else:  # the complex operand is a 0-dim tensor below a real one with dims: its category wins
        dtypes = [real_of(x) for x in lead if x.dtype.is_float] or [real_of(complexes[0])]
        dtypes.append(real_of(complexes[0]) if not any(x.dtype.is_float for x in lead) else dtypes[0])
    out = dtypes[0]
    for d in dtypes[1:]:
        out = T.float64 if T.float64 in (out, d) else out
    if out is T.float16 and not any(isinstance(x, ComplexTensor) for x in lead):
        _complex_dtype(out, op)  # a float16 tensor with dims leads a 0-dim complex one: PyTorch's complex32
    return T.float64 if out is T.float64 else T.float32


def _join(re, im, like=None) -> ComplexTensor:
    """The complex tensor of parts ``re`` and ``im`` (tensors or numbers), broadcast together."""
    if not isinstance(re, Tensor) or not isinstance(im, Tensor):
        ref = re if isinstance(re, Tensor) else im
        if not isinstance(ref, Tensor):
            ref = like
        if not isinstance(re, Tensor):
            re = creation.full_like(ref, re)
        if not isinstance(im, Tensor):
            im = creation.full_like(ref, im)
    if tuple(re.shape) != tuple(im.shape):
        re, im = broadcast_tensors(re, im)
    return ComplexTensor(S.stack([re, im], -1))


def _pair_of(value, op: str, like: ComplexTensor | None = None) -> Tensor:
    """The pair of ``value`` (complex tensor, real tensor or number) in ``like``'s real dtype."""
    real = _REAL_OF[like.dtype] if like is not None else None
    if isinstance(value, ComplexTensor):
        return value._pair if real is None or value._pair.dtype is real else value._pair.to(real)
    if isinstance(value, Tensor):
        value = value if real is None else value.to(real)
        return S.stack([value, creation.zeros_like(value)], -1)
    if isinstance(value, (bool, int, float, complex, np.generic)):
        value = complex(value)
        return creation.tensor([value.real, value.imag], dtype=real or default_float(), device=like.device)
    raise TypeError(f"{op}: expected a tensor or a number, got {type(value).__name__}")


# ---------------------------------------------------------------- arithmetic


def add(input, other, *, alpha=1):
    """``input + alpha * other`` where either is complex (a tensor or a Python complex)."""
    if alpha != 1:
        other = mul(other, alpha) if is_complex_value(other) or is_complex_value(alpha) else F.mul(other, alpha)
    real = result_real("add", input, other)
    (ar, ai), (br, bi) = _parts(input, real), _parts(other, real)
    re = F.add(ar, br) if isinstance(ar, Tensor) or isinstance(br, Tensor) else ar + br
    im = ai if bi is None else bi if ai is None else F.add(ai, bi) if _any_tensor(ai, bi) else ai + bi
    return _join(re, im, _first_tensor(input, other))


def sub(input, other, *, alpha=1):
    """``input - alpha * other`` where either is complex."""
    if any(isinstance(x, Tensor) and x.dtype is T.bool_ for x in (input, other)):
        raise RuntimeError(
            "'sub': Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    if isinstance(other, Tensor) and not isinstance(other, ComplexTensor):
        other = F.cast(other, result_real("sub", input, other))  # negated in the result's dtype: 1j - uint8 1 is -1+1j
    return add(input, neg(other) if isinstance(other, ComplexTensor) else -other, alpha=alpha)


def neg(input):
    return -input


def mul(input, other):
    """The complex product: ``(a + bi)(c + di) = (ac - bd) + (ad + bc)i``."""
    real = result_real("mul", input, other)
    (ar, ai), (br, bi) = _parts(input, real), _parts(other, real)
    like = _first_tensor(input, other)
    if ai is None:
        return _join(F.mul(br, ar), F.mul(bi, ar), like)
    if bi is None:
        return _join(F.mul(ar, br), F.mul(ai, br), like)
    return _join(F.sub(F.mul(ar, br), F.mul(ai, bi)), F.add(F.mul(ar, bi), F.mul(ai, br)), like)


def div(input, other, *, rounding_mode=None):
    """The complex quotient; a complex divisor is scaled by its larger part first (no overflow of
    ``c*c + d*d`` for large parts)."""
    if rounding_mode is not None:
        raise RuntimeError("div: rounding_mode is not supported for complex inputs (PyTorch's div_trunc/floor)")
    real = result_real("div", input, other)
    (ar, ai), (br, bi) = _parts(input, real), _parts(other, real)
    like = _first_tensor(input, other)
    if bi is None:
        return _join(F.div(ar, br), F.div(ai if ai is not None else 0.0 * br, br) if ai is not None else 0.0, like)
    if not isinstance(br, Tensor):  # a Python complex divisor: its reciprocal's parts, then a product
        q = 1.0 / complex(br, bi)
        return mul(input if isinstance(input, Tensor) else _join(ar, ai, like), complex(q))
    scale = F.maximum(F.abs(br), F.abs(bi))
    c, d = F.div(br, scale), F.div(bi, scale)
    den = F.mul(F.add(F.mul(c, c), F.mul(d, d)), scale)
    if ai is None:
        return _join(F.div(F.mul(ar, c), den), F.div(F.neg(F.mul(ar, d)), den), like)
    re = F.div(F.add(F.mul(ar, c), F.mul(ai, d)), den)
    im = F.div(F.sub(F.mul(ai, c), F.mul(ar, d)), den)
    return _join(re, im, like)


def reciprocal(input):
    return div(1.0, input)


def c_pow(input, exponent):
    """``input ** exponent``: small integer powers as products, others as ``exp(exponent * log(input))``."""
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool) and float(exponent).is_integer():
        k = int(exponent)
        if k == 0:
            return ones_like_complex(input)
        if 0 < k <= 4:
            out = input
            for _ in range(k - 1):
                out = mul(out, input)
            return out
        if k == -1:
            return reciprocal(input)
    if not isinstance(input, ComplexTensor):  # a real base (a tensor or a number) with a complex exponent
        real = result_real("pow", input, exponent)
        re, _ = _parts(input, real)
        like = exponent._pair if isinstance(exponent, ComplexTensor) else exponent
        if not isinstance(re, Tensor):
            re = creation.tensor(float(re), dtype=real, device=like.device)
        input = _join(re, creation.zeros_like(re))
    return c_exp(mul(c_log(input), exponent))


def ones_like_complex(z: ComplexTensor) -> ComplexTensor:
    pair = creation.zeros_like(z._pair)
    return ComplexTensor(pair + creation.tensor([1.0, 0.0], dtype=pair.dtype, device=pair.device))


def _any_tensor(*xs) -> bool:
    return any(isinstance(x, Tensor) for x in xs)


def _first_tensor(*xs):
    for x in xs:
        if isinstance(x, Tensor):
            return x._pair[..., 0] if isinstance(x, ComplexTensor) else x
    return None


def eq(input, other):
    real = result_real("eq", input, other)
    (ar, ai), (br, bi) = _parts(input, real), _parts(other, real)
    ai = 0.0 if ai is None else ai
    bi = 0.0 if bi is None else bi
    real_equal = F.eq(ar, br) if isinstance(ar, Tensor) else F.eq(br, ar)
    if not _any_tensor(ai, bi):  # a real tensor and a complex number: the number's imaginary part decides
        return real_equal if ai == bi else F.logical_and(real_equal, False)
    return F.logical_and(real_equal, F.eq(ai, bi) if isinstance(ai, Tensor) else F.eq(bi, ai))


# ---------------------------------------------------------------- functions of one complex tensor


def _xy(z: ComplexTensor):
    return z._pair[..., 0], z._pair[..., 1]


def _safe(z: ComplexTensor):
    """``(zero, x, y)``: where ``z`` is 0, and its parts with 1 there, so that a function whose derivative
    is singular at 0 is evaluated away from it and its gradient there is PyTorch's 0."""
    x, y = _xy(z)
    zero = F.logical_and(F.eq(x, 0.0), F.eq(y, 0.0))
    return zero, F.where(zero, 1.0, x), F.where(zero, 0.0, y)


def c_abs(input):
    """``|z|``, PyTorch's ``hypot(re, im)``; its gradient is ``grad * sgn(z)`` (0 at 0)."""
    if not isinstance(input, ComplexTensor):
        return F.abs(input)
    zero, x, y = _safe(input)
    return F.where(zero, 0.0, F.hypot(x, y))


def angle(input):
    """The argument of ``z``, ``atan2(im, re)`` (0 at 0, with gradient 0 there as PyTorch's)."""
    if not isinstance(input, ComplexTensor):
        return _real_angle(input)
    x, y = _xy(input)
    zero, sx, sy = _safe(input)
    # at 0 the value is atan2's (0 or pi by the zeros' signs), taken off the graph: PyTorch's gradient there is 0
    return F.where(zero, transcendental.atan2(y.detach(), x.detach()), transcendental.atan2(sy, sx))


def _real_angle(x):
    # PyTorch's kernel: NaN stays NaN, pi below 0, else +0 (+inf and -0.0 included); its gradient is 0
    # everywhere, NaN too: the value is taken off the graph and joined back by a select that never takes x
    x_float = x if x.dtype.is_float else x.to(default_float())
    plain = x_float.detach()
    value = F.where(F.isnan(plain), plain, F.where(F.lt(plain, 0), math.pi, creation.zeros_like(plain)))
    return F.where(creation.zeros_like(plain, dtype=T.bool_), x_float, value)


def sgn(input):
    """``z / |z|`` (0 at 0); ``sign`` of a real tensor."""
    if not isinstance(input, ComplexTensor):
        return F.sign(input)
    zero, x, y = _safe(input)
    r = F.hypot(x, y)
    return _join(F.where(zero, 0.0, F.div(x, r)), F.where(zero, 0.0, F.div(y, r)))


def conj(input):
    """The complex conjugate (materialised: vkml has no lazy conjugate bit, so ``is_conj()`` is False)."""
    if not isinstance(input, ComplexTensor):
        return input
    x, y = _xy(input)
    return _join(x, F.neg(y))


def conj_physical(input):
    return conj(input)


def resolve_conj(input):
    return input


def is_conj(input) -> bool:
    return False


def c_exp(input):
    """``e^x (cos y + i sin y)``."""
    x, y = _xy(input)
    r = F.exp(x)
    return _join(F.mul(r, F.cos(y)), F.mul(r, F.sin(y)))


def c_log(input):
    """``log|z| + i angle(z)``."""
    x, y = _xy(input)
    return _join(F.log(F.hypot(x, y)), transcendental.atan2(y, x))


def c_sqrt(input):
    """The principal square root: ``sqrt((|z| + x) / 2) + i copysign(sqrt((|z| - x) / 2), y)``."""
    x, y = _xy(input)
    r = F.hypot(x, y)
    re = F.sqrt(F.mul(F.add(r, x), 0.5))
    im = F.sqrt(F.mul(F.sub(r, x), 0.5))
    return _join(re, F.copysign(im, y))


def c_sin(input):
    """``sin x cosh y + i cos x sinh y``."""
    x, y = _xy(input)
    return _join(F.mul(F.sin(x), F.cosh(y)), F.mul(F.cos(x), F.sinh(y)))


def c_cos(input):
    """``cos x cosh y - i sin x sinh y``."""
    x, y = _xy(input)
    return _join(F.mul(F.cos(x), F.cosh(y)), F.neg(F.mul(F.sin(x), F.sinh(y))))


def c_sinh(input):
    """``sinh x cos y + i cosh x sin y``."""
    x, y = _xy(input)
    return _join(F.mul(F.sinh(x), F.cos(y)), F.mul(F.cosh(x), F.sin(y)))


def c_cosh(input):
    """``cosh x cos y + i sinh x sin y``."""
    x, y = _xy(input)
    return _join(F.mul(F.cosh(x), F.cos(y)), F.mul(F.sinh(x), F.sin(y)))


def c_tanh(input):
    """``(tanh x + i tan y (1 - tanh^2 x)) / (1 + tanh^2 x tan^2 y)`` (Kahan's form: no overflow for large x)."""
    x, y = _xy(input)
    t, u = F.tanh(x), F.tan(y)
    den = F.add(F.mul(F.mul(t, t), F.mul(u, u)), 1.0)
    return _join(F.div(F.mul(t, F.add(F.mul(u, u), 1.0)), den), F.div(F.mul(u, F.sub(1.0, F.mul(t, t))), den))


def rsqrt(input):
    return reciprocal(c_sqrt(input))


def log2(input):
    return mul(c_log(input), 1.0 / math.log(2.0))


def log10(input):
    return mul(c_log(input), 1.0 / math.log(10.0))


def square(input):
    return mul(input, input)


def _logical_dims(z: ComplexTensor, dim) -> tuple:
    if dim is None:
        return tuple(range(z.ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(_dim(z, d) for d in dims)


def c_sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    pair_sum = F.sum(input._pair, _logical_dims(input, dim), keepdim=keepdim)
    if dim is None:  # PyTorch's node for a sum of all (the pair's own sum names its dims: SumBackward1)
        autograd.show(pair_sum, "SumBackward0", (autograd.edge(input._pair),))
    out = ComplexTensor(pair_sum)
    return out if dtype is None else out._cast(dtype, "sum")


def c_mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    out = ComplexTensor(F.mean(input._pair, _logical_dims(input, dim), keepdim=keepdim))
    return out if dtype is None else out._cast(dtype, "mean")


# ---------------------------------------------------------------- products


def _split(x, real: T.DType):
    """(re, im or None) tensors of an operand of a product."""
    re, im = _parts(x, real)
    return re, im


_CXX = {"complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _bilinear(op, a, b, name: str):
    """``op(a, b)`` for a product linear in each operand, from the real products of the parts; PyTorch's
    matrix products take operands of one dtype only."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"{name}(): expected Tensor operands, got {type(a).__name__} and {type(b).__name__}")
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_CXX.get(a.dtype.name, a.dtype.name)} != "
            f"{_CXX.get(b.dtype.name, b.dtype.name)}"
        )
    real = result_real(name, a, b)
    (ar, ai), (br, bi) = _split(a, real), _split(b, real)
    if ai is None:
        return _join(op(ar, br), op(ar, bi))
    if bi is None:
        return _join(op(ar, br), op(ai, br))
    return _join(F.sub(op(ar, br), op(ai, bi)), F.add(op(ar, bi), op(ai, br)))


def matmul(input, other):
    """The complex matrix product, from four real ones (``(A + Bi)(C + Di)``)."""
    return _bilinear(F.matmul, input, other, "matmul")


def mm(input, mat2):
    return _bilinear(F.matmul, input, mat2, "mm")


def bmm(input, mat2):
    return _bilinear(F.matmul, input, mat2, "bmm")


def einsum(equation, *operands):
    """``einsum`` with complex operands: the sum over each choice of real or imaginary part of every
    complex operand (``i^k`` sorted into the real and imaginary results)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not any(isinstance(o, ComplexTensor) for o in operands):
        return S.einsum(equation, *operands)
    first = next(o for o in operands if isinstance(o, ComplexTensor))
    for o in operands:
        if o.dtype is not first.dtype:
            raise RuntimeError(
                f"expected scalar type {_TORCH_NAMES[first.dtype.name]} but found {_TORCH_NAMES.get(o.dtype.name) or _torch_real(o.dtype)}"
            )
    real = _REAL_OF[first.dtype]
    parts = [_parts(o, real) for o in operands]
    re = im = None
    choices = [(0,) if p[1] is None else (0, 1) for p in parts]
    for pick in _product(choices):
        k = sum(pick)
        term = S.einsum(equation, *(p[c] for p, c in zip(parts, pick)))
        sign = -1 if (k // 2) % 2 else 1
        if k % 2 == 0:
            re = term if re is None else (F.add(re, term) if sign > 0 else F.sub(re, term))
            if re is term and sign < 0:
                re = F.neg(term)
        else:
            im = term if im is None else (F.add(im, term) if sign > 0 else F.sub(im, term))
            if im is term and sign < 0:
                im = F.neg(term)
    if im is None:
        im = F.mul(re, 0.0)
    return _join(re, im)


def _product(choices):
    out = [()]
    for c in choices:
        out = [p + (x,) for p in out for x in c]
    return out


# ---------------------------------------------------------------- making complex tensors


def make_complex(real, imag):
    """The complex tensor ``real + i imag`` (both float32 or both float64, as PyTorch's)."""
    for name, value in (("real", real), ("imag", imag)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"complex(): argument '{name}' (position {1 + (name == 'imag')}) must be Tensor, not {type(value).__name__}"
            )
    if real.dtype is not imag.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {_torch_real(real.dtype)} but got scalar type {_torch_real(imag.dtype)} for second argument"
        )
    if real.dtype not in (T.float32, T.float64, T.float16):
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got {_torch_real(real.dtype)} and {_torch_real(imag.dtype)}"
        )
    _complex_dtype(real.dtype, "complex")
    return _join(real, imag)


def _torch_real(dtype: T.DType) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int"}.get(
        dtype.name, dtype.name
    )


def polar(abs, angle):
    """``abs * (cos(angle) + i sin(angle))``."""
    for name, value in (("abs", abs), ("angle", angle)):
        if not isinstance(value, Tensor):
            raise TypeError(f"polar(): argument '{name}' must be Tensor, not {type(value).__name__}")
    if abs.dtype is not angle.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {_torch_real(abs.dtype)} but got scalar type {_torch_real(angle.dtype)} for second argument"
        )
    if abs.dtype not in (T.float32, T.float64):
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got {_torch_real(abs.dtype)} and {_torch_real(angle.dtype)}"
        )
    return _join(F.mul(abs, F.cos(angle)), F.mul(abs, F.sin(angle)))


def view_as_real(input):
    """The real view of a complex tensor: its shape plus a trailing 2, sharing its storage."""
    if not isinstance(input, ComplexTensor):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return input._pair.view(*input._pair.shape)


def view_as_complex(input):
    """The complex view of a float tensor whose last dim is 2 (of stride 1), sharing its storage."""
    if isinstance(input, ComplexTensor) or not isinstance(input, Tensor):
        raise RuntimeError(
            f"view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: {_TORCH_NAMES.get(input.dtype.name, '') if isinstance(input, Tensor) else type(input).__name__}"
        )
    if input.dtype not in (T.float32, T.float64, T.float16):
        raise RuntimeError(
            f"view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {_torch_real(input.dtype)}"
        )
    _complex_dtype(input.dtype, "view_as_complex")
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return ComplexTensor(input.view(*input.shape))


def real(input):
    if isinstance(input, ComplexTensor):
        return input.real
    return input


def imag(input):
    if isinstance(input, ComplexTensor):
        return input.imag
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def is_complex(input) -> bool:
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return isinstance(input, ComplexTensor)


def from_numpy_complex(array, device=None, requires_grad: bool = False, dtype=None) -> ComplexTensor:
    """A complex tensor of a numpy complex array (or of anything ``np.asarray`` makes complex)."""
    array = np.asarray(array)
    dtype = dtype or (T.complex128 if array.dtype == np.complex128 else T.complex64)
    shape = array.shape  # (ascontiguousarray makes a 0-d array 1-d)
    array = np.ascontiguousarray(array.astype(dtype.np))
    pair = array.view(_REAL_OF[dtype].np).reshape(*shape, 2)
    out = ComplexTensor(creation.tensor(pair.copy(), dtype=_REAL_OF[dtype], device=device))
    if requires_grad:
        out.requires_grad_()
    return out


def _full(size, value: complex, dtype: T.DType, device, requires_grad: bool) -> ComplexTensor:
    real = _REAL_OF[dtype]
    value = np.array([value.real, value.imag], dtype=real.np)
    pair = creation.tensor(value, dtype=real, device=device).expand(*size, 2).contiguous()
    out = ComplexTensor(pair.detach())
    if requires_grad:
        out.requires_grad_()
    return out


def _size_args(size) -> tuple:
    if len(size) == 1 and hasattr(size[0], "__iter__"):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def c_zeros(*size, dtype, device=None, requires_grad=False, **kwargs):
    return ComplexTensor(
        creation.zeros(*_size_args(size), 2, dtype=_REAL_OF[dtype], device=device, requires_grad=requires_grad)
    )


def ones(*size, dtype, device=None, requires_grad=False, **kwargs):
    return _full(_size_args(size), 1.0 + 0j, dtype, device, requires_grad)


def full(size, fill_value, *, dtype, device=None, requires_grad=False, **kwargs):
    return _full(_size_args((size,)), complex(fill_value), dtype, device, requires_grad)


def randn(*size, dtype, generator=None, device=None, requires_grad=False, **kwargs):
    """Real and imaginary parts each normal with variance 1/2 (PyTorch's: ``|z|^2`` has mean 1)."""
    pair = R.randn(*_size_args(size), 2, dtype=_REAL_OF[dtype], device=device, generator=generator)
    out = ComplexTensor(F.mul(pair, math.sqrt(0.5)).detach())
    if requires_grad:
        out.requires_grad_()
    return out


def rand(*size, dtype, generator=None, device=None, requires_grad=False, **kwargs):
    """Real and imaginary parts each uniform in [0, 1), as PyTorch's."""
    pair = R.rand(*_size_args(size), 2, dtype=_REAL_OF[dtype], device=device, generator=generator)
    out = ComplexTensor(pair.detach())
    if requires_grad:
        out.requires_grad_()
    return out


# ---------------------------------------------------------------- printing


class _ComplexFormatter:
    """PyTorch's complex element text: the real parts and the imaginary parts each formatted as a float
    tensor's (vkml/frontend/printing.py), joined as ``re+imj``."""

    def __init__(self, values: np.ndarray):
        self.real = printing._Formatter(values.real.reshape(-1), True)
        self.imag = printing._Formatter(values.imag.reshape(-1), True)
        self.max_width = self.real.max_width + self.imag.max_width + 2

    def format(self, value) -> str:
        value = np.complex128(value)
        imag = (self.imag.format(float(value.imag)) + "j").lstrip()
        real = self.real.format(float(value.real))
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _repr(z: ComplexTensor) -> str:
    values = z.detach().numpy()
    opts = printing.PRINT_OPTS
    if values.size == 0:
        body = "[]"
    else:
        summarize = values.size > opts.threshold
        fmt = _ComplexFormatter(printing._summarized(values) if summarize else values)
        body = printing._nested(values, len("tensor("), summarize, fmt)
    extra = []
    if values.size == 0 and z.shape != (0,):
        extra.append(f"size={tuple(z.shape)}")
    if z.device.name != "cpu":
        extra.append(f"device='{z.device.name}'")
    if z.dtype is not default_complex():
        extra.append(f"dtype={z.dtype!r}")
    ctx = z.grad_fn
    if ctx is not None:
        extra.append(f"grad_fn=<{printing.grad_fn_name(ctx)}>")
    elif z.requires_grad:
        extra.append("requires_grad=True")
    return printing._add_suffixes("tensor(" + body, extra, len("tensor("))


def cat(tensors, dim: int = 0, *, axis=None):
    """``cat`` where a tensor is complex: the pairs joined (real tensors made complex first)."""
    dim = axis if axis is not None else dim
    tensors = list(tensors)
    real = T.float64 if any(t.dtype in (T.float64, T.complex128) for t in tensors) else T.float32
    pairs = [_pair_of(t, "cat", _like(real)) for t in tensors]
    return ComplexTensor(F.cat(pairs, _dim(ComplexTensor(pairs[0]), dim)))


def stack(tensors, dim: int = 0):
    tensors = list(tensors)
    real = T.float64 if any(t.dtype in (T.float64, T.complex128) for t in tensors) else T.float32
    pairs = [_pair_of(t, "stack", _like(real)) for t in tensors]
    return ComplexTensor(S.stack(pairs, _dim(ComplexTensor(pairs[0]), dim, extra=1)))


class _like:
    """What ``_pair_of`` reads of a complex tensor: its dtype (and device, for a number)."""

    def __init__(self, real: T.DType, device=None):
        self.dtype, self.device = _COMPLEX_OF[real], device


# vkml.<name> where an operand is complex: the function here (``complex_first``: the first operand or the
# second is a complex tensor or number).
_BINARY = {
    "add": add,
    "sub": sub,
    "subtract": sub,
    "mul": mul,
    "multiply": mul,
    "div": div,
    "divide": div,
    "true_divide": div,
    "pow": c_pow,
    "matmul": matmul,
    "mm": mm,
    "bmm": bmm,
    "eq": eq,
}
_UNARY = {
    "abs": c_abs,
    "absolute": c_abs,
    "sgn": sgn,
    "exp": c_exp,
    "log": c_log,
    "sqrt": c_sqrt,
    "reciprocal": reciprocal,
    "square": square,
    "sin": c_sin,
    "cos": c_cos,
    "sinh": c_sinh,
    "cosh": c_cosh,
    "tanh": c_tanh,
    "rsqrt": rsqrt,
    "log2": log2,
    "log10": log10,
    "sum": c_sum,
    "mean": c_mean,
    "neg": neg,
    "negative": neg,
}
# ComplexTensor's methods that are the functions above (Tensor's would reach for the node): the
# unary table's but negation (Tensor's operator takes it), and these.
_METHODS_ONLY = {"angle": angle, "conj": conj, "conj_physical": conj_physical}
for _name, _fn in {
    **{name: fn for name, fn in _UNARY.items() if name not in ("neg", "negative")},
    **_METHODS_ONLY,
    **{name: _BINARY[name] for name in ("matmul", "mm", "bmm", "pow", "eq")},
}.items():
    setattr(ComplexTensor, _name, _fn)
del _name, _fn

# vkml.<name>(z, ...) that is ``z.<name>(...)``
_AS_METHOD = (
    "reshape",
    "flatten",
    "unflatten",
    "unsqueeze",
    "squeeze",
    "permute",
    "transpose",
    "swapaxes",
    "swapdims",
    "movedim",
    "moveaxis",
    "t",
    "roll",
    "flip",
    "chunk",
    "split",
    "unbind",
    "clone",
    "detach",
    "numel",
    "adjoint",
    "cumsum",
)


def _mark(wrapper, orig) -> None:
    """``wrapper`` stands for ``orig`` (its name and doc; ``inspect.unwrap`` finds ``orig``)."""
    wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = orig.__name__, orig.__doc__, orig
    wrapper.__wrapped_by_complex__ = True


def _dispatch_first(orig, impl):
    def dispatched(*args, **kwargs):
        if args and isinstance(args[0], ComplexTensor):
            return impl(*args, **kwargs)
        return orig(*args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _dispatch_binary(orig, impl):
    def dispatched(*args, **kwargs):
        if len(args) >= 2 and (is_complex_value(args[0]) or is_complex_value(args[1])):
            return impl(*args, **kwargs)
        return orig(*args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _dispatch_where(orig, impl):
    def dispatched(condition, *args, **kwargs):
        if len(args) == 2 and (is_complex_value(args[0]) or is_complex_value(args[1])):
            return impl(condition, *args)
        return orig(condition, *args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _dispatch_list(orig, impl):
    def dispatched(tensors, *args, **kwargs):
        if any(isinstance(t, ComplexTensor) for t in tensors):
            return impl(tensors, *args, **kwargs)
        return orig(tensors, *args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _dispatch_einsum(orig):
    def dispatched(equation, *operands):
        flat = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands
        if any(isinstance(o, ComplexTensor) for o in flat):
            return einsum(equation, *flat)
        return orig(equation, *operands)

    _mark(dispatched, orig)
    return dispatched


def _dtype_kwarg(kwargs: dict):
    """``kwargs["dtype"]`` with a Python number type read as PyTorch reads it (``complex`` is complex128),
    written back so that the function called next sees the dtype."""
    if kwargs.get("dtype") is not None:
        kwargs["dtype"] = python_type_dtype(kwargs["dtype"])
    return kwargs.get("dtype")


def _dispatch_dtype(orig, impl):
    """A creation function whose ``dtype=`` may be complex."""

    def dispatched(*args, **kwargs):
        dtype = _dtype_kwarg(kwargs)
        if dtype is not None and getattr(dtype, "kind", None) == "complex":
            return impl(*args, **kwargs)
        return orig(*args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _dispatch_full(orig):
    """``full``: a complex ``dtype=`` or a complex fill value (the default complex dtype) makes a complex tensor."""

    def dispatched(size, fill_value, *args, **kwargs):
        dtype = _dtype_kwarg(kwargs)
        if getattr(dtype, "kind", None) == "complex" or (dtype is None and isinstance(fill_value, _COMPLEX_SCALARS)):
            kwargs["dtype"] = dtype or default_complex()
            return full(size, fill_value, *args, **kwargs)
        return orig(size, fill_value, *args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _like_impl(make):
    def impl(input, *, dtype=None, device=None, requires_grad=False, **kwargs):
        dtype = dtype or input.dtype
        return make(*input.shape, dtype=dtype, device=device or input.device, requires_grad=requires_grad)

    return impl


def _like_dispatch(orig, make):
    impl = _like_impl(make)

    def dispatched(input, *args, **kwargs):
        dtype = _dtype_kwarg(kwargs)
        if isinstance(input, ComplexTensor) and dtype is None or getattr(dtype, "kind", None) == "complex":
            return impl(input, *args, **kwargs)
        return orig(input, *args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _tensor_data(orig):
    """``vkml.tensor`` / ``as_tensor``: complex Python or numpy data makes a complex tensor."""

    def dispatched(data, *args, **kwargs):
        dtype = _dtype_kwarg(kwargs)
        if isinstance(data, ComplexTensor):
            out = data.detach().clone() if orig.__name__ == "tensor" else data
            return out._cast(dtype, "tensor") if dtype is not None else out
        if getattr(dtype, "kind", None) == "complex" or _complex_data(data):
            if dtype is not None and dtype.kind != "complex":
                raise TypeError(f"tensor(): can't convert complex data to {dtype.name}")
            out = from_numpy_complex(
                np.asarray(data),
                device=kwargs.get("device"),
                requires_grad=kwargs.get("requires_grad", False),
                dtype=dtype if dtype is not None else (None if isinstance(data, np.ndarray) else default_complex()),
            )
            return out
        return orig(data, *args, **kwargs)

    _mark(dispatched, orig)
    return dispatched


def _complex_data(data) -> bool:
    if isinstance(data, _COMPLEX_SCALARS):
        return True
    if isinstance(data, np.ndarray):
        return data.dtype.kind == "c"
    if isinstance(data, (list, tuple)) and data:
        try:
            return np.asarray(data).dtype.kind == "c"
        except (ValueError, TypeError):
            return False
    return False


def _from_numpy_dispatch(orig):
    def dispatched(ndarray):
        if isinstance(ndarray, np.ndarray) and ndarray.dtype.kind == "c":
            return from_numpy_complex(ndarray)  # a copy: vkml tensors never share host memory (docs/interop)
        return orig(ndarray)

    _mark(dispatched, orig)
    return dispatched


# The op functions ``Tensor.__add__``, ``__sub__`` and ``__mul__`` end in for a Tensor or a Python int or float
# operand: ``F.add``/``F.sub`` with alpha 1 and a dense operand are their plain op, ``F.mul`` is it.
_DIRECT_DUNDERS = {"__add__": F._plain_add, "__sub__": F._plain_sub, "__mul__": F.mul}


def _scalar_dunder(orig, impl, direct=None):
    """``Tensor.__mul__`` and its kin: a complex Python number on the other side makes the result complex.
    ``direct``: the op's function that ``orig`` ends in for a plain Tensor or a Python int or float on the
    other side (``t + u``, ``x * 2.0``: every model's arithmetic), called at once, without ``orig``'s frames
    (its operand checks, the public function's alpha and sparse checks, which pass such an operand as it is)."""

    if direct is not None:

        def dunder(self, o):
            if o.__class__ is Tensor or o.__class__ is float or o.__class__ is int:
                return direct(self, o)
            if isinstance(o, _COMPLEX_SCALARS):
                return impl(self, o)
            return orig(self, o)

    else:

        def dunder(self, o):
            if isinstance(o, _COMPLEX_SCALARS):
                return impl(self, o)
            return orig(self, o)

    dunder.__name__, dunder.__doc__ = orig.__name__, orig.__doc__
    return dunder


def _to_dispatch(orig):
    """``Tensor.to``/``type``: a complex dtype makes a complex tensor of the real values."""

    def to(self, *args, **kwargs):
        dtype = _dtype_kwarg(kwargs)
        if dtype is None:
            for a in args:
                if isinstance(python_type_dtype(a), T.DType):
                    dtype = python_type_dtype(a)
        if dtype is not None and getattr(dtype, "kind", None) == "complex":
            rest = tuple(a for a in args if not isinstance(python_type_dtype(a), T.DType))
            kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
            moved = orig(self, *rest, **kwargs) if rest or kwargs else self
            real = moved.to(_REAL_OF[dtype])
            return _join(real, creation.zeros_like(real))
        return orig(self, *args, **kwargs)

    to.__name__, to.__doc__ = orig.__name__, orig.__doc__
    return to


def _type_dispatch(orig):
    """``Tensor.type(cfloat)``: as ``to``."""

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        if getattr(dtype, "kind", None) == "complex":
            return self.to(dtype)
        return orig(self, dtype, non_blocking, **kwargs)

    type.__name__, type.__doc__ = orig.__name__, orig.__doc__
    return type


def _type_as_dispatch(orig):
    def type_as(self, other):
        if isinstance(other, ComplexTensor):
            return self.to(other.dtype)
        return orig(self, other)

    type_as.__name__, type_as.__doc__ = orig.__name__, orig.__doc__
    return type_as


def _where_method(orig):
    def where_method(self, condition, y):
        if is_complex_value(self) or is_complex_value(y):
            return where(condition, self, y)
        return orig(self, condition, y)

    where_method.__name__, where_method.__doc__ = orig.__name__, orig.__doc__
    return where_method


def install(namespace: dict, tensor_class) -> None:
    """Route vkml's public functions to the complex forms where an operand (or ``dtype=``) is complex.

    Called by vkml/__init__.py after the public ops are bound and before autocast wraps them."""
    made: dict = {}  # one wrapper per function, so that aliases stay one object (vkml.abs is vkml.absolute)

    def wrap(name, how, impl):
        orig = namespace[name]
        if id(orig) not in made:
            made[id(orig)] = how(orig, impl)
        namespace[name] = made[id(orig)]

    for name, impl in _BINARY.items():
        wrap(name, _dispatch_binary, impl)
    for name, impl in _UNARY.items():
        wrap(name, _dispatch_first, impl)
    namespace["promote_types"] = _promote_dispatch(namespace["promote_types"])
    namespace["result_type"] = _result_type_dispatch(namespace["result_type"])
    wrap("dot", _dispatch_binary, dot)
    wrap("vdot", _dispatch_binary, vdot)
    wrap("outer", _dispatch_binary, outer)
    wrap("ger", _dispatch_binary, outer)
    wrap("where", _dispatch_where, where)
    wrap("isclose", _dispatch_binary, isclose)
    wrap("allclose", _dispatch_binary, allclose)
    wrap("norm", _dispatch_first, norm)
    for name in _AS_METHOD:
        if name in namespace:
            wrap(name, _dispatch_first, _method_caller(name))
    for name in ("cat", "concat", "concatenate"):
        wrap(name, _dispatch_list, cat)
    wrap("stack", _dispatch_list, stack)
    namespace["einsum"] = _dispatch_einsum(namespace["einsum"])
    namespace["angle"] = angle
    for name, make in (("zeros", c_zeros), ("ones", ones), ("randn", randn), ("rand", rand), ("empty", c_zeros)):
        namespace[name] = _dispatch_dtype(namespace[name], make)
    namespace["full"] = _dispatch_full(namespace["full"])
    for name, make in (
        ("zeros_like", c_zeros),
        ("ones_like", ones),
        ("randn_like", randn),
        ("rand_like", rand),
        ("empty_like", c_zeros),
    ):
        namespace[name] = _like_dispatch(namespace[name], make)
    for name in ("tensor", "as_tensor"):
        namespace[name] = _tensor_data(namespace[name])
    namespace["from_numpy"] = _from_numpy_dispatch(namespace["from_numpy"])
    for name, impl in (
        ("__add__", add),
        ("__radd__", lambda t, o: add(o, t)),
        ("__sub__", sub),
        ("__rsub__", lambda t, o: sub(o, t)),
        ("__mul__", mul),
        ("__rmul__", lambda t, o: mul(o, t)),
        ("__truediv__", div),
        ("__rtruediv__", lambda t, o: div(o, t)),
        ("__pow__", c_pow),
        ("__rpow__", lambda t, o: c_pow(o, t)),
        ("__eq__", eq),
        ("__ne__", lambda t, o: F.logical_not(eq(t, o))),
    ):
        setattr(tensor_class, name, _scalar_dunder(getattr(tensor_class, name), impl, _DIRECT_DUNDERS.get(name)))
    tensor_class.to = _to_dispatch(tensor_class.to)
    tensor_class.type = _type_dispatch(tensor_class.type)
    tensor_class.type_as = _type_as_dispatch(tensor_class.type_as)
    tensor_class.where = _where_method(tensor_class.where)
    tensor_class.cfloat = _real_to_complex(T.complex64)
    tensor_class.cdouble = _real_to_complex(T.complex128)
    tensor_class.real = property(_real_part, _set_real_part)
    tensor_class.imag = property(_imag_part)


def _real_to_complex(dtype: T.DType):
    def method(self, memory_format=None):
        return self.to(dtype)

    method.__name__ = "cfloat" if dtype is T.complex64 else "cdouble"
    method.__doc__ = f"``self.to({dtype!r})``: the values as the real parts of a complex tensor."
    return method


def view_as_real_copy(input):
    """``view_as_real(input)`` as a new tensor (PyTorch's ``_copy`` form of the view)."""
    return view_as_real(input).clone()


def view_as_complex_copy(input):
    """``view_as_complex(input)`` as a new tensor."""
    return view_as_complex(input).clone()


def conj_physical_(input):
    """The conjugate written into ``input`` (a real tensor is unchanged)."""
    if isinstance(input, ComplexTensor):
        input._pair[..., 1] = F.neg(input._pair[..., 1])
    return input


def _new(make, z: ComplexTensor, size, dtype, device, requires_grad):
    dtype = dtype or z.dtype
    device = device or z.device
    if not dtype.is_complex:
        real_make = creation.zeros if make is c_zeros else creation.ones
        return real_make(*_size_args(size), dtype=dtype, device=device, requires_grad=requires_grad)
    return make(*_size_args(size), dtype=dtype, device=device, requires_grad=requires_grad)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """PyTorch's ``|input - other| <= atol + rtol * |other|`` with complex magnitudes (equal values always close)."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.name} did not match {other.dtype.name}")
    close = F.le(c_abs(sub(input, other)), F.add(F.mul(c_abs(other), rtol), atol))
    close = F.logical_or(close, eq(input, other))
    if equal_nan:
        x, y = _xy(input)
        u, v = _xy(other)
        nan_a = F.logical_or(F.isnan(x), F.isnan(y))
        nan_b = F.logical_or(F.isnan(u), F.isnan(v))
        close = F.logical_or(close, F.logical_and(nan_a, nan_b))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The 2-norm (``"fro"``, 2, None) of a complex tensor, that of its pair over ``dim`` and the pair dim; 1:
    the sum of magnitudes; inf: their max. The result is real."""
    if dtype is not None:
        raise NotImplementedError("norm: dtype= is not supported for complex inputs by vkml")
    dims = _logical_dims(input, dim)
    if p in ("fro", 2, 2.0, None):
        sq = F.mul(input._pair, input._pair)
        out = F.sqrt(F.sum(F.sum(sq, -1), dims, keepdim=keepdim))
        return out
    mag = c_abs(input)
    if p in (1, 1.0):
        return F.sum(mag, dims, keepdim=keepdim)
    if p == math.inf:
        return F.amax(mag, dims, keepdim=keepdim)
    raise NotImplementedError(f"norm: p={p!r} is not supported for complex inputs by vkml (2, 'fro', 1, inf are)")


def where(condition, input, other):
    """``where`` with a complex operand: the pairs chosen by ``condition`` (broadcast over the pair dim)."""
    real = result_real("where", input, other) if isinstance(input, Tensor) or isinstance(other, Tensor) else None
    real = real or _REAL_OF[default_complex()]
    device = next(x.device for x in (input, other, condition) if isinstance(x, Tensor))
    a, b = (_pair_of(v, "where", _like(real, device)) for v in (input, other))
    return ComplexTensor(F.where(condition.unsqueeze(-1), a, b))


def _one_dim_pair(op: str, a, b):
    for v in (a, b):
        if not isinstance(v, Tensor) or v.ndim != 1:
            raise RuntimeError(f"1D tensors expected, but got {v.ndim if isinstance(v, Tensor) else 0}D and 1D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{op} : expected both vectors to have same dtype, but found {_TORCH_NAMES.get(a.dtype.name, a.dtype.name)} "
            f"and {_TORCH_NAMES.get(b.dtype.name, b.dtype.name)}"
        )


def dot(input, other):
    """The sum of the products (no conjugation, PyTorch's ``dot``)."""
    _one_dim_pair("dot", input, other)
    return c_sum(mul(input, other))


def vdot(input, other):
    """The sum of the products with ``input`` conjugated."""
    _one_dim_pair("vdot", input, other)
    return c_sum(mul(conj(input), other))


def outer(input, vec2):
    return mul(input.unsqueeze(1), vec2.unsqueeze(0))


def _promote_dispatch(orig):
    """``promote_types`` where a dtype is complex: the complex dtype of the promoted real parts (an integer or
    bool dtype takes the complex one's)."""

    def promote_types(type1, type2):
        if getattr(type1, "kind", None) != "complex" and getattr(type2, "kind", None) != "complex":
            return orig(type1, type2)
        # the real parts promoted as real dtypes: float32 or float64, or PyTorch's error for uint16/32/64
        real = orig(_REAL_OF.get(type1, type1), _REAL_OF.get(type2, type2))
        return _COMPLEX_OF[T.float64 if real is T.float64 else T.float32]

    _mark(promote_types, orig)
    return promote_types


def _result_type_dispatch(orig):
    def result_type(tensor1, tensor2):
        if is_complex_value(tensor1) or is_complex_value(tensor2):
            return _COMPLEX_OF[result_real("result_type", tensor1, tensor2)]
        return orig(tensor1, tensor2)

    _mark(result_type, orig)
    return result_type


def _method_caller(name: str):
    def call(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    return call


def _real_part(self):
    return self  # a real tensor is its own real part (PyTorch's)


def _set_real_part(self, value) -> None:
    self.copy_(value)


def _imag_part(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


EXPORTS = (
    Export("complex", value=make_complex),
    Export("polar"),
    Export("view_as_real"),
    Export("view_as_complex"),
    Export("real"),
    Export("imag"),
    Export("conj", method=resolve_conj),
    Export("conj_physical", method=resolve_conj),
    Export("conj_physical_", method=conj_physical_),
    Export("view_as_real_copy"),
    Export("view_as_complex_copy"),
    Export("resolve_conj", method=resolve_conj),
    Export("resolve_neg", method=resolve_conj),
    Export("is_conj", method=is_conj),
    Export("is_neg", method=is_conj),
    Export("angle", value=angle, method=angle),
)
