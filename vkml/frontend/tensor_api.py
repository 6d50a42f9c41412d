"""Tensor attributes and small methods that PyTorch programs call, with PyTorch's names and rules.

Sizes in bytes (``element_size``, ``nbytes``), the ``new_*`` constructors, strides as
PyTorch reports them, ``clamp_min``/``clamp_max``, ``select``, ``addcmul``/``addcdiv``, the
in-place comparisons and unary ops (``x.lt_(y)``, ``x.relu_()``), the random fills
(``bernoulli_``, ``exponential_``, ``random_``, ``geometric_``, ``log_normal_``, ``cauchy_``) and
``unfold``. Each is a composite of the ops in ``operators.py``.

>>> import vkml
>>> x = vkml.zeros(2, 3)
>>> x.new_ones(4).tolist(), x.element_size(), x.stride()
([1.0, 1.0, 1.0, 1.0], 4, (3, 1))
"""

from __future__ import annotations

import math
import warnings
import weakref

import numpy as np

from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as _grads
from . import autograd, mt19937, mutation, windows
from . import construction as C
from . import memory_format as _memory_format
from . import operators as F
from . import random as R
from . import shape as S
from .caller import user_stacklevel
from .creation import _dtype, full, tensor, warn_copy_construct
from .exports import Export

# Bytes of one element as PyTorch counts them (bool is one byte there, whatever a device stores).
_ITEMSIZE = {"bool": 1}


def _itemsize(dtype: T.DType) -> int:
    return _ITEMSIZE.get(dtype.name, dtype.nbytes)


# ---------------------------------------------------------------------- sizes


def ndimension(self) -> int:
    """The number of dims (``Tensor.dim()``'s older name)."""
    return len(self.shape)


def nelement(self) -> int:
    """The number of elements (``Tensor.numel()``'s older name)."""
    return self.numel()


def element_size(self) -> int:
    """Bytes of one element (bool: 1, as PyTorch).

    >>> import vkml
    >>> vkml.zeros(2, dtype=vkml.float16).element_size()
    2
    """
    return _itemsize(self.dtype)


def _nbytes_property(self) -> int:
    return self.numel() * _itemsize(self.dtype)


# ---------------------------------------------------------------------- types

_TYPE_NAMES = {
    "FloatTensor": T.float32,
    "HalfTensor": T.float16,
    "LongTensor": T.int64,
    "IntTensor": T.int32,
    "BoolTensor": T.bool_,
}
for _name in ("DoubleTensor", "BFloat16Tensor", "ShortTensor", "CharTensor", "ByteTensor"):
    _dtype_name = {
        "DoubleTensor": "float64",
        "BFloat16Tensor": "bfloat16",
        "ShortTensor": "int16",
        "CharTensor": "int8",
        "ByteTensor": "uint8",
    }[_name]
    if hasattr(T, _dtype_name):  # the dtypes this build of vkml has
        _TYPE_NAMES[_name] = getattr(T, _dtype_name)


def type(self, dtype=None, non_blocking: bool = False, **kwargs):  # noqa: A001  (PyTorch's method name)
    """With no argument, the tensor's type name (``'vkml.FloatTensor'``, ``'vkml.cuda.FloatTensor'`` on a
    Vulkan device); with a dtype, the tensor cast to it; with a type name (``'torch.FloatTensor'``,
    ``'torch.cuda.LongTensor'``) or a legacy type (``vkml.cuda.FloatTensor``), cast and, as PyTorch, on the
    device kind the type names: a ``cuda`` type moves a CPU tensor to ``"cuda"`` (the best Vulkan
    device), any other type moves a device tensor to the CPU.

    >>> import vkml
    >>> vkml.ones(2).type(), vkml.ones(2).type("torch.LongTensor").dtype
    ('vkml.FloatTensor', vkml.int64)
    """
    on_device = self.device.kind != "cpu"
    if dtype is None:
        return f"vkml.{'cuda.' if on_device else ''}{mutation.torch_name(self.dtype)}Tensor"
    wants_device = None  # a plain dtype names no device
    if getattr(dtype, "is_legacy_tensor_type", False):  # vkml.FloatTensor and its kind (frontend/legacy_names.py)
        dtype, wants_device = dtype.dtype, dtype.is_cuda
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        if name not in _TYPE_NAMES:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype, wants_device = _TYPE_NAMES[name], ".cuda." in dtype
    target = _dtype(dtype)
    out = self if target is self.dtype else F.cast(self, target)
    if wants_device is None or wants_device == on_device:
        return out
    return out.to("cuda" if wants_device else "cpu")


def type_as(self, other):
    """This tensor cast to ``other``'s dtype and moved to ``other``'s device (itself when both agree).

    PyTorch's is ``self.type(other.type())``, and a type name carries the device kind
    (``'torch.cuda.BoolTensor'``): code that builds a mask on the host and meets a device tensor with
    ``mask.type_as(x)`` relies on the move.
    """
    node = F._tensor_node("type_as", other)
    out = self if node.dtype is self.dtype else F.cast(self, node.dtype)
    return out if out.device == other.device else out.to(other.device)


# ---------------------------------------------------------------------- new_* constructors


def _size_keyword(kwargs: dict) -> tuple:
    """PyTorch's ``new_zeros(size=(2, 3))``: the sizes given by keyword, as the positional form."""
    return (kwargs.pop("size"),) if "size" in kwargs else ()


def _size(op: str, size) -> tuple[int, ...]:
    if not size:  # PyTorch's: no default size (new_zeros(()) is the 0-d tensor)
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in size):
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found {size!r}")
    return tuple(int(s) for s in size)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device unless given."""
    return full(
        _size("new_full", (size,)),
        fill_value,
        dtype=_dtype(dtype) or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """Zeros of ``size`` with this tensor's dtype and device unless given.

    >>> import vkml
    >>> vkml.ones(2, dtype=vkml.int64).new_zeros(3).tolist()
    [0, 0, 0]
    """
    return new_full(
        self,
        _size("new_zeros", size or _size_keyword(kwargs)),
        0,
        dtype=dtype,
        device=device,
        requires_grad=requires_grad,
    )


def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """Ones of ``size`` with this tensor's dtype and device unless given."""
    return new_full(
        self,
        _size("new_ones", size or _size_keyword(kwargs)),
        1,
        dtype=dtype,
        device=device,
        requires_grad=requires_grad,
    )


def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """A tensor of ``size`` with this tensor's dtype and device; vkml's ``empty`` is zeros (documented there)."""
    return C.empty(
        _size(
            "new_empty", size or _size_keyword(kwargs)
        ),  # one tuple: () is the 0-d tensor (empty() alone is a TypeError)
        dtype=_dtype(dtype) or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """``vkml.tensor(data)`` with this tensor's dtype and device unless given (a copy of tensor data)."""
    if isinstance(data, F._tensor.Tensor):
        warn_copy_construct("tensor.new_tensor")
        data = data.detach().numpy()
    return tensor(data, dtype=_dtype(dtype) or self.dtype, device=device or self.device, requires_grad=requires_grad)


# ---------------------------------------------------------------------- strides


def _torch_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides as PyTorch computes them (a size-1 dim keeps the stride of the dims after it)."""
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def _compute_stride(old_shape, old_strides, new_shape):
    """The strides of a view of (old_shape, old_strides) as ``new_shape``, by PyTorch's rule for
    ``view``/``reshape`` (None when no view exists: then vkml's reshape copied, as PyTorch's)."""
    if not old_shape:
        return (1,) * len(new_shape)
    if math.prod(old_shape) == 0:
        return _torch_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in reversed(range(len(old_shape))):
        tensor_numel *= old_shape[tensor_d]
        # A chunk ends where the dims before it are not laid out right after it.
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1 and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None


def _owner_strides(t) -> tuple[int, ...]:
    """The strides of a tensor that owns its storage: row-major, or its channels-last format's."""
    fmt = getattr(t, "_format", None)
    return _torch_strides(t.shape) if fmt is None else _memory_format.strides_in(tuple(t.shape), fmt)


def _torch_layout(self) -> tuple[tuple[int, ...], int]:
    """(strides, storage offset) as PyTorch reports them: the view steps from the owner replayed
    with PyTorch's stride rules (vkml's own views keep what its kernels need, not these)."""
    windows.rehome(self)
    base = self._base
    if base is None:
        return _owner_strides(self), 0
    key = (base.node.shape, getattr(base, "_format", None), self._chain)
    try:
        return _LAYOUTS[key]
    except KeyError:
        pass
    except TypeError:  # a step holding something unhashable: replayed each time
        return _replayed_layout(base, self._chain)
    if len(_LAYOUTS) >= _LAYOUTS_KEPT:  # a loop whose views change every step
        _LAYOUTS.clear()
    found = _LAYOUTS[key] = _replayed_layout(base, self._chain)
    return found


# ``_torch_layout`` of a view by (owner's shape, owner's memory format, view chain): it depends on nothing
# else, and a training step asks it of the same views at every step (backward's gradient layouts).
_LAYOUTS: dict = {}
_LAYOUTS_KEPT = 4096


def _replayed_layout(base, chain: tuple) -> tuple[tuple[int, ...], int]:
    """(strides, storage offset) of the view ``chain`` of owner ``base``, by PyTorch's stride rules."""
    shape, strides, offset = tuple(base.shape), _owner_strides(base), 0
    for step in chain:
        kind = step[0]
        if kind == "slice":
            starts, stops, steps = step[1], step[2], step[3]
            offset += sum(start * st for start, st in zip(starts, strides))
            shape = tuple(len(range(a, b, c)) for a, b, c in zip(starts, stops, steps))
            strides = tuple(st * c for st, c in zip(strides, steps))
        elif kind == "permute":
            shape = tuple(shape[d] for d in step[1])
            strides = tuple(strides[d] for d in step[1])
        elif kind == "expand":
            new_shape = tuple(step[1])
            lead = len(new_shape) - len(shape)
            kept = tuple(0 if old == 1 and new != 1 else st for old, new, st in zip(shape, new_shape[lead:], strides))
            # PyTorch's inferExpandGeometry: a new leading dim of size 1 gets the stride a contiguous
            # dim would (the next dim's size times its stride), one that repeats gets 0
            # (all 0 where a 0-dim tensor is expanded)
            added = []
            inner_size, inner_stride = (new_shape[lead], kept[0]) if kept else (1, 0)
            for size in reversed(new_shape[:lead]):
                added.append(inner_size * inner_stride if size == 1 else 0)
                inner_size, inner_stride = size, added[-1]
            strides = tuple(reversed(added)) + kept
            shape = new_shape
        elif kind == "dtype":  # view(dtype) of one element size: strides and offset unchanged
            continue
        elif kind == "window":  # each dim's windows: count at step·stride, elements at dilation·stride
            for d, k, st, dl in zip(*step[1:]):
                n = (shape[d] - dl * (k - 1) - 1) // st + 1
                shape = shape[:d] + (n,) + shape[d + 1 :] + (k,)
                strides = strides[:d] + (strides[d] * st,) + strides[d + 1 :] + (strides[d] * dl,)
        elif kind == "strided":  # as_strided: its own strides and offset in the storage
            shape, strides, offset = tuple(step[1]), tuple(step[2]), step[3]
        else:  # reshape: a view only where the strides allow one (mutation.viewable)
            new_shape = tuple(step[1])
            found = _compute_stride(shape, strides, new_shape)
            strides = found if found is not None else _torch_strides(new_shape)
            shape = new_shape
    return strides, offset


def stride(self, dim=None):
    """Elements between neighbours along each dim, as PyTorch reports them for this tensor's storage.

    A view (a transpose, a slice, an expand: stride 0) has the strides of the tensor it views;
    any other tensor is row-major.

    >>> import vkml
    >>> vkml.zeros(2, 3).t().stride(), vkml.zeros(3, 1).expand(3, 4).stride(1)
    ((1, 3), 0)
    """
    strides = _torch_layout(self)[0]
    if dim is None:
        return strides
    if not self.shape:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return strides[lazy.normalize_dim("stride", dim, len(self.shape))]


def storage_offset(self) -> int:
    """Elements between the start of the storage and this tensor's first element (0 unless a view).

    >>> import vkml
    >>> vkml.zeros(4, 5)[1:, 2:].storage_offset()
    7
    """
    return _torch_layout(self)[1]


def is_contiguous(self, memory_format=None) -> bool:
    """Whether the elements sit in row-major order in the storage (size-1 dims ignored, as PyTorch).

    >>> import vkml
    >>> x = vkml.zeros(2, 3)
    >>> x.is_contiguous(), x.t().is_contiguous(), x[1:].is_contiguous()
    (True, False, True)
    """
    _memory_format.check("is_contiguous", memory_format)
    fmt = memory_format if memory_format is not None and memory_format.rank is not None else None
    if fmt is not None and fmt.rank != self.ndim:
        return False
    if fmt is None and (self.numel() == 0 or (self._base is None and getattr(self, "_format", None) is None)):
        return True  # PyTorch's empty tensor is contiguous; in a channels-last format its strides decide
    strides = _torch_layout(self)[0]
    expected = _memory_format.strides_in(tuple(self.shape), fmt) if fmt is not None else _torch_strides(self.shape)
    return all(size <= 1 or st == want for st, want, size in zip(strides, expected, self.shape))


def dim_order(self, *, ambiguity_check=False) -> tuple[int, ...]:
    """The dims from the outermost in memory to the innermost (by stride), as ``Tensor.dim_order``.

    PyTorch's order: row-major gives 0, 1, ...; channels-last 0, 2, ..., 1; otherwise the dims sorted by
    stride (a 0 stride leaves the order alone; equal strides put the larger size outside).

    >>> import vkml
    >>> vkml.zeros(2, 3, 4).permute(2, 0, 1).dim_order()
    (1, 2, 0)
    """
    if not isinstance(ambiguity_check, bool) and not isinstance(ambiguity_check, (list, tuple)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    ndim = self.ndim
    if ndim <= 1:
        return tuple(range(ndim))
    contiguous = is_contiguous(self)
    channels_last = ndim in (4, 5) and is_contiguous(
        self, _memory_format.channels_last if ndim == 4 else _memory_format.channels_last_3d
    )
    if contiguous and not channels_last:
        return tuple(range(ndim))
    if channels_last and not contiguous:
        return (0, *range(2, ndim), 1)
    strides, shape = stride(self), self.shape

    def outer_first(a: int, b: int) -> int:  # 1: dim a belongs inside dim b
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] != strides[b]:
            return -1 if strides[a] < strides[b] else 1
        return 1 if shape[a] > shape[b] else 0

    # PyTorch's insertion sort from the innermost dim, so that ties keep its order
    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            comparison = outer_first(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return tuple(reversed(perm))


def H(self):  # noqa: N802  (PyTorch's property name)
    """The conjugate transpose of a matrix: its transpose, for real tensors."""
    if not self.shape:  # PyTorch: the identity, deprecated
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", stacklevel=2)
        return F.permute(self)
    if len(self.shape) != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {len(self.shape)}-D tensor.")
    return F.transpose(self, 0, 1)


def mH(self):  # noqa: N802
    """The conjugate transpose of the last two dims: ``mT``, for real tensors."""
    if not self.shape:  # PyTorch: the identity, deprecated
        warnings.warn("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().", stacklevel=2)
        return F.permute(self)
    if len(self.shape) < 2:
        raise RuntimeError(
            f"tensor.mH is only supported on matrices or batches of matrices. Got {len(self.shape)}-D tensor."
        )
    return F.transpose(self, -2, -1)


# ---------------------------------------------------------------------- small composites


def clamp_min(input, min):
    """``clamp(input, min=min)``.

    >>> import vkml
    >>> vkml.clamp_min(vkml.tensor([-1.0, 2.0]), 0.0).tolist()
    [0.0, 2.0]
    """
    return _shown_bound(F.clamp(input, min=min), input, min, "ClampMinBackward")


def clamp_max(input, max):
    """``clamp(input, max=max)``."""
    return _shown_bound(F.clamp(input, max=max), input, max, "ClampMaxBackward")


def _shown_bound(out, input, bound, node_name: str):
    """``out`` shown as PyTorch's clamp_min/clamp_max node: the Scalar overload (0, one edge) or the Tensor one (1)."""
    if out._ctx is not None:
        if hasattr(bound, "_ctx"):
            autograd.show(out, node_name + "1", (autograd.edge(input), autograd.edge(bound)))
        else:
            autograd.show(out, node_name + "0", (autograd.edge(input),))
    return out


def select(input, dim: int, index: int):
    """The slice at ``index`` of ``dim``, that dim removed (a view, as ``input[..., index, ...]``).

    >>> import vkml
    >>> vkml.select(vkml.arange(6).reshape(2, 3), 1, -1).tolist()
    [2, 5]
    """
    node = F._tensor_node("select", input)
    if not node.shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = lazy.normalize_dim("select", dim, len(node.shape))
    if isinstance(index, F._tensor.Tensor):
        index = index.item()
    size = node.shape[d]
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"select(): argument 'index' must be int, not {index.__class__.__name__}")
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(node.shape)} at dimension {d}")
    return input[(slice(None),) * d + (int(index),)]


def _legacy_value(op: str, tensor1, tensor2, rest: tuple):
    """PyTorch's deprecated overload ``op(input, value, tensor1, tensor2)`` (``exp_avg_sq.mul_(beta2).addcmul_(1 -
    beta2, grad, grad)`` in pre-1.5 optimizers): (value, tensor1, tensor2), with PyTorch's warning."""
    if len(rest) != 1 or isinstance(tensor1, F._tensor.Tensor) or not isinstance(rest[0], F._tensor.Tensor):
        raise TypeError(f"{op}() takes 3 positional arguments (input, tensor1, tensor2) but {3 + len(rest)} were given")
    warnings.warn(
        f"This overload of {op} is deprecated:\n\t{op}(Tensor input, Number value, Tensor tensor1, Tensor tensor2)\n"
        f"Consider using one of the following signatures instead:\n\t{op}(Tensor input, Tensor tensor1, Tensor "
        "tensor2, *, Number value = 1)",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return tensor1, tensor2, rest[0]


def _number_value(op: str, value):
    """``value`` as PyTorch's argument parser takes a Number: a 0-d tensor that needs no gradient binds
    as its Python value; one that does is refused (a Scalar argument has no gradient)."""
    if isinstance(value, F._tensor.Tensor):
        if value.requires_grad or value.ndim:
            raise TypeError(f"{op}(): argument 'value' must be Number, not Tensor")
        return value.item()
    return value


def addcmul(input, tensor1, tensor2, *rest, value=1):
    """``input + value * tensor1 * tensor2``, as ``input + (value * t1) * t2``.

    Divergence from PyTorch: its kernels fuse the last product into the sum (one rounding,
    an FMA on CPU and CUDA); vkml rounds the product first, as no exact fused multiply-add
    exists on every Vulkan device. The result may differ from PyTorch's by half an ulp of
    the product ``value * t1 * t2``. A float16 or bfloat16 result is computed in float32 and
    rounded once, as PyTorch's kernel does.

    >>> import vkml
    >>> vkml.addcmul(vkml.ones(2), vkml.tensor([1.0, 2.0]), vkml.tensor([3.0, 4.0]), value=0.5).tolist()
    [2.5, 5.0]
    """
    if rest:
        value, tensor1, tensor2 = _legacy_value("addcmul", tensor1, tensor2, rest)
    value = _number_value("addcmul", value)
    operands = (input, tensor1, tensor2)
    if isinstance(value, float) and math.isfinite(value) and not any(_float_operand(t) for t in operands):
        value = int(value)  # PyTorch converts value to an integer result's dtype: 0.5 truncates to 0
    out = F.add(input, F.mul(F.mul(value, tensor1), tensor2))
    if out.dtype in F.HALF_PRECISION:  # PyTorch's kernel computes in float32 and rounds once (operators.py)
        if all(isinstance(t, F._tensor.Tensor) and t.dtype is out.dtype for t in operands):
            # PyTorch's backward is grad * (t2 * value) and grad * (t1 * value) in the dtype, each op rounding
            wide, wide1, wide2 = F.half_in_float32(*(t.detach() for t in operands))
            result = F.cast(F.add(wide, F.mul(F.mul(value, wide1), wide2)), out.dtype)
            return autograd.record("half_addcmul", operands, result, {"value": value})
        wide, wide1, wide2 = F.half_in_float32(input, tensor1, tensor2)
        out = F.cast(F.add(wide, F.mul(F.mul(value, wide1), wide2)), out.dtype)
    return _shown_pointwise(out, "AddcmulBackward0", operands)


def _shown_pointwise(out, node_name: str, operands: tuple):
    """``out``, built of several recorded ops, shown as PyTorch's one node with an edge per tensor operand."""
    if out._ctx is not None:
        autograd.show(out, node_name, tuple(autograd.edge(t) for t in operands))
    return out


def _grad_half_addcmul(c):
    _, t1, t2 = c.inputs
    value = c.attrs["value"]
    return c.g, (c.g * (t2 * value) if c.needs[1] else None), (c.g * (t1 * value) if c.needs[2] else None)


_grads.RULES["half_addcmul"] = _grad_half_addcmul


def _float_operand(t) -> bool:
    return not isinstance(t, F._tensor.Tensor) or t.dtype.is_float or t.dtype.is_complex


def addcdiv(input, tensor1, tensor2, *rest, value=1):
    """``input + value * tensor1 / tensor2``, evaluated as PyTorch's kernels do: ``(value * t1) / t2``
    (for a float16 or bfloat16 result in float32, rounded once).

    Integer ``tensor1`` and ``tensor2`` raise, as in PyTorch (true division of integers is not
    supported there).
    """
    if rest:
        value, tensor1, tensor2 = _legacy_value("addcdiv", tensor1, tensor2, rest)
    value = _number_value("addcdiv", value)
    nodes = [F._tensor_node("addcdiv", t) for t in (tensor1, tensor2)]
    if all(not n.dtype.is_float for n in nodes):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
            "latter implementation: (input + value * tensor1 / tensor2), for all dtypes."
        )
    out = F.add(input, F.div(F.mul(value, tensor1), tensor2))
    if out.dtype in F.HALF_PRECISION:  # PyTorch's kernel computes in float32 and rounds once (operators.py)
        wide, wide1, wide2 = F.half_in_float32(input, tensor1, tensor2)
        out = F.cast(F.add(wide, F.div(F.mul(value, wide1), wide2)), out.dtype)
    return _shown_pointwise(out, "AddcdivBackward0", (input, tensor1, tensor2))


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (PyTorch's reversed subtraction).

    With ``alpha`` other than 1, PyTorch fuses the product into the difference (as its ``add``
    and ``sub`` with ``alpha`` do); vkml rounds it first: within half an ulp of ``alpha * input``.
    """
    F.require_tensor("rsub", "input", 1, input)  # PyTorch's rsub(1.0, x) is a TypeError
    return F.sub(other, input if alpha == 1 else F.mul(input, alpha))


def positive(input):
    """``input`` itself (``+x``); bool tensors raise, as in PyTorch."""
    node = F._tensor_node("positive", input)
    if node.dtype is T.bool_:  # PyTorch's RuntimeError
        raise RuntimeError(
            "The `+` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` "
            "or `logical_not()` operator instead."
        )
    return input


def broadcast_to(input, size):
    """``input.expand(size)`` (``-1`` keeps a dim)."""
    return F.expand(input, *(size if isinstance(size, (tuple, list)) else (size,)))


def _broadcast_to_method(self, *sizes, size=None):
    """``Tensor.broadcast_to``: the sizes as one sequence, as several ints, or as ``size=`` (PyTorch takes each)."""
    return broadcast_to(self, sizes[0] if len(sizes) == 1 else sizes if size is None else size)


def sum_to_size(self, *size):
    """The sum of this tensor over the dims it was broadcast along from ``size`` (a gradient's reduction).

    >>> import vkml
    >>> vkml.ones(2, 3).sum_to_size(1, 3).tolist()
    [[2.0, 2.0, 2.0]]
    """
    size = _size("sum_to_size", size)
    shape = tuple(self.shape)
    if len(size) > len(shape) or any(s not in (1, have) for s, have in zip(size, shape[len(shape) - len(size) :])):
        raise RuntimeError(
            f"size {{{', '.join(map(str, size))}}} is not expandable to size {{{', '.join(map(str, shape))}}}."
        )
    lead = len(shape) - len(size)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    out = F.sum(self, dims, keepdim=True) if dims else self
    return F.reshape(out, *size)


def unfold(self, dimension: int, size: int, step: int):
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim: a view
    of this tensor's storage, as PyTorch's (vkml/frontend/windows.py).

    >>> import vkml
    >>> vkml.arange(5).unfold(0, 2, 2).tolist()
    [[0, 1], [2, 3]]
    """
    return windows.unfold(self, dimension, size, step)


# ---------------------------------------------------------------------- random fills


def bernoulli_(self, p=0.5, *, generator=None):
    """1 with probability ``p`` (a number or a tensor), else 0, in this tensor's dtype: PyTorch's draws
    (``vkml.bernoulli``)."""
    if isinstance(p, F._tensor.Tensor):
        make = lambda: F.lt(C.bernoulli_uniforms("bernoulli_", self.shape, p.dtype, self.device, generator), p)  # noqa: E731
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        make = lambda: R.host_draw(  # noqa: E731
            "bernoulli_", self.shape, T.bool_, self.device, generator, mt19937.bernoulli_scalar, float(p)
        )
    return mutation.fill_with(self, "bernoulli_", make, False)


def _host_fill(self, op: str, fn, *args, generator=None):
    """``self`` filled in place with ``fn``'s PyTorch values (float64, converted to its dtype)."""
    return mutation.fill_with(
        self, op, lambda: R.host_draw(op, self.shape, self.dtype, self.device, generator, fn, *args), True
    )


def exponential_(self, lambd: float = 1.0, *, generator=None):
    """Exponential values with rate ``lambd``: PyTorch's ``-1/lambd · log1p(-u)`` for a double uniform ``u``."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _host_fill(self, "exponential_", mt19937.exponential, float(lambd), generator=generator)


def geometric_(self, p: float, *, generator=None):
    """Geometric values (trials until the first success) with success probability ``p``: PyTorch's
    ``ceil(log(u) / log1p(-p))`` for a double uniform ``u``."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return mutation.fill_with(
        self,
        "geometric_",
        lambda: R.host_draw("geometric_", self.shape, self.dtype, self.device, generator, mt19937.geometric, float(p)),
        False,
    )


def _delitem(self, index):
    """``del t[i]``: PyTorch's TypeError (a tensor's size is fixed)."""
    raise TypeError("Tensor does not support deleting items")


def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None):
    """Cauchy values: PyTorch's ``median + sigma·tan(π·(u - 0.5))`` for a double uniform ``u``."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _host_fill(self, "cauchy_", mt19937.cauchy, float(median), float(sigma), generator=generator)


def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None):
    """``exp`` of normal values with ``mean`` and ``std``: PyTorch's scalar Box–Muller path for every element."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _host_fill(self, "log_normal_", mt19937.log_normal, float(mean), float(std), generator=generator)


def _span_limit(dtype: T.DType) -> int:
    """One past the largest value ``random_()`` draws for ``dtype`` without bounds (PyTorch's rule)."""
    if dtype.is_float:
        return (1 << {"float16": 11, "bfloat16": 8, "float64": 53}.get(dtype.name, 24)) + 1
    if dtype is T.bool_:
        return 2
    return int(np.iinfo(dtype.np).max) + 1


_NO_BOUND = object()

# PyTorch names the C type in its bounds errors
_C_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int"}


def random_(self, from_=_NO_BOUND, to=None, *, generator=None, **kwargs):
    """Uniform integers in ``[from, to - 1]``; ``random_(to)`` starts at 0; with no bound, from 0 to
    the dtype's largest integer (floats: its largest exact one, 2^24 for float32).

    Also spelt ``random_(from=..., to=...)`` as in PyTorch; bounds outside an integer dtype's range
    are PyTorch's errors.
    """
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"random_() got unexpected keyword arguments {sorted(kwargs)}")
    if to is None and from_ is not _NO_BOUND:  # random_(to)
        from_, to = 0, from_
    from_ = 0 if from_ is _NO_BOUND else from_
    high = _span_limit(self.dtype) if to is None else int(to)
    low = int(from_)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    name = _C_TYPE_NAMES.get(self.dtype.name)
    if name is not None and to is not None:
        lo, hi = (
            (0, 1) if self.dtype is T.bool_ else (int(np.iinfo(self.dtype.np).min), int(np.iinfo(self.dtype.np).max))
        )
        if not lo <= low <= hi:
            raise RuntimeError(f"from is out of bounds for {name}")
        if not lo <= high - 1 <= hi:
            raise RuntimeError(f"to - 1 is out of bounds for {name}")

    def make():  # PyTorch's draw: ``word % span + low``, its word width by the dtype (``randint``)
        return C.random_ints("random_", tuple(self.shape), low, high, T.int64, self.device, generator, self.dtype)

    return mutation.fill_with(self, "random_", make, False)


# ---------------------------------------------------------------------- torch.Size, numel, iteration


def numel(input) -> int:
    """The number of elements of ``input``.

    >>> import vkml
    >>> vkml.numel(vkml.zeros(2, 3))
    6
    """
    return F._tensor_node("numel", input).numel


def _iter(self):
    """The tensor's slices along dim 0 (PyTorch: ``iter(self.unbind(0))``); a 0-dim tensor raises."""
    if not self.shape:
        raise TypeError("iteration over a 0-d tensor")
    return iter(S.unbind(self, 0))


# ---------------------------------------------------------------------- the public names


def _share_memory_(self):
    """The tensor itself: a vkml tensor's memory is never copied between processes (DataLoader
    workers send batches back as arrays). Its storage then reports ``is_shared()``, as PyTorch's."""
    windows.rehome(self)
    owner = self if self._base is None else self._base
    if id(owner) not in _SHARED:
        _SHARED.add(id(owner))
        weakref.finalize(owner, _SHARED.discard, id(owner))
    return self


# The ids of the storage owners share_memory_() was called on (a Tensor's == is elementwise, so no WeakSet
# of tensors: each id leaves when its owner dies, before the id can be reused).
_SHARED: set[int] = set()


def _is_shared(self) -> bool:
    """Whether ``share_memory_()`` was called on this tensor's storage; always True on a Vulkan device, as
    PyTorch's answer for a CUDA tensor (``Tensor.is_shared``)."""
    if self.device.type != "cpu":
        return True
    windows.rehome(self)
    return id(self if self._base is None else self._base) in _SHARED


def _is_complex(self) -> bool:
    return self.dtype.is_complex  # a complex tensor is a ComplexTensor (vkml/frontend/complex.py)


def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex (complex64 or complex128), as ``torch.is_complex``."""
    if not isinstance(getattr(input, "dtype", None), T.DType):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.dtype.is_complex


def _is_sparse(self) -> bool:
    return False


# The public names (vkml/frontend/public.py binds them): functions, methods, properties, in-place forms.
EXPORTS = (
    Export("clamp_min", method=True, inplace=True),
    Export("clamp_max", method=True, inplace=True),
    Export("select", method=True),
    Export("addcmul", method=True, inplace=True),
    Export("addcdiv", method=True, inplace=True),
    Export("rsub", method=True),
    Export("positive", method=True),
    Export("broadcast_to", method=_broadcast_to_method),
    Export("numel"),  # Tensor.numel() is tensor.py's
    *(
        Export(name, function=False, method=True)
        for name in (
            "ndimension",
            "nelement",
            "element_size",
            "type",
            "type_as",
            "new_full",
            "new_zeros",
            "new_ones",
            "new_empty",
            "new_tensor",
            "stride",
            "storage_offset",
            "is_contiguous",
            "dim_order",
            "sum_to_size",
            "unfold",
            "bernoulli_",
            "exponential_",
            "geometric_",
            "log_normal_",
            "random_",
            "cauchy_",
        )
    ),
    Export("__iter__", function=False, method=_iter),
    Export("itemsize", function=False, method=property(element_size)),
    Export("nbytes", function=False, method=property(_nbytes_property)),
    Export("H", function=False, method=property(H)),
    Export("mH", function=False, method=property(mH)),
    Export("is_complex", method=_is_complex),
    Export("is_sparse", function=False, method=property(_is_sparse)),
    Export("share_memory_", function=False, method=_share_memory_),
    Export("is_shared", function=False, method=_is_shared),
    Export("__delitem__", function=False, method=_delitem),
)
