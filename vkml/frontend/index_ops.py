"""Scatter with reductions, the ``index_*`` ops, ``masked_select``/``masked_scatter``, ``take``/``put``.

Every op here is PyTorch's (names, arguments, results, gradients, errors) on top of the host
map of vkml/frontend/indexing.py: the index is read back and checked when the op is called
(out-of-range indices raise at once, naming the op and the index), and the host computes the
flat position in the target that each source element names.

**Determinism.** Where several elements name one position, they combine in *index order*: the
order of the source elements in row-major order of the index (for ``index_*``: of the source),
after the old value (``((x + s0) + s1) + ...``, ``max(max(x, s0), s1)``). One kernel walks, per
target position, the sorted list of the elements that name it, so every device and every run
gives the same bits. PyTorch leaves the order unspecified (its CPU loops happen to go in index
order; CUDA uses atomics). Plain writes (``index_copy``, ``scatter``, ``put_``) keep the last
element that names a position, as PyTorch's CPU does.

float16: ``scatter_reduce``, ``scatter_add`` and ``scatter(reduce=)`` accumulate a
position in float32 and round once (PyTorch's CPU: 2048 + 1 + 1 = 2050 in float16); ``index_add``,
``index_reduce`` and ``put_(accumulate=True)`` round after each step (2048), as PyTorch's CPU.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import tensor as _tensor
from ..errors import DeviceError
from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as G
from . import autograd, mutation
from . import indexing as _ix
from . import operators as F
from .autograd import differentiable
from .exports import Export

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("scatter_reduce", method=True),
    Export("index_add", method=True),
    Export("index_copy", method=True),
    Export("index_fill", method=True),
    Export("index_reduce", method=True),
    Export("masked_select", method=True),
    Export("masked_scatter", method=True),
    Export("take", method=True),
    Export("put", method=True),
    Export("argwhere", method=True),
    Export("index_put", method=True),  # Tensor.index_put too: PyTorch's IndexPutBackward0 node
    Export("scatter_reduce_", function=False, method=True),
    Export("index_add_", function=False, method=True),
    Export("index_copy_", function=False, method=True),
    Export("index_fill_", function=False, method=True),
    Export("index_reduce_", function=False, method=True),
    Export("masked_scatter_", function=False, method=True),
    Export("put_", function=False, method=True),
)
_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_SCATTER_REDUCE_ALIASES = {"max": "amax", "min": "amin"}  # PyTorch's scatter_reduce takes these too
_INDEX_REDUCES = ("prod", "mean", "amax", "amin")
_WARNED_BETA: list[bool] = []  # whether index_reduce has given its beta warning


# ---------------------------------------------------------------------- host helpers


def _const(array: np.ndarray, device):
    return F._from_numpy(np.array(array, order="C"), device)  # (ascontiguousarray makes 0-d 1-d)


def _touched(flat: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(math.prod(shape), dtype=np.bool_)
    mask[flat.reshape(-1)] = True
    return mask.reshape(shape)


def _counts(flat: np.ndarray, shape: tuple[int, ...], include_self: bool) -> np.ndarray:
    """PyTorch's divisor of ``mean``: the contributions per position (the old value counts once), at least 1."""
    n = np.bincount(flat.reshape(-1), minlength=math.prod(shape)) + int(include_self)
    return np.maximum(n, 1).reshape(shape)


def _identity(mode: str, dtype: T.DType):
    """What a position starts from when its old value is not included (PyTorch's CPU)."""
    if dtype is T.bool_:  # a Python bool keeps the start bool; a sum or amax is "any", a prod or amin "all"
        return mode in ("prod", "amin")
    if mode in ("sum", "mean"):
        return 0
    if mode == "prod":
        return 1
    if dtype.is_float:
        return -math.inf if mode == "amax" else math.inf
    info = np.iinfo(dtype.np)
    return int(info.min if mode == "amax" else info.max)


def _gather(t, flat: np.ndarray):
    """``t``'s elements at the flat positions ``flat``, shaped like ``flat`` (differentiable)."""
    return _ix.take_positions(F.reshape(t, -1), flat)


def _combine(base, values, flat: np.ndarray, mode: str, include_self: bool, wide: bool):
    """``base`` with ``values[i]`` combined into flat position ``flat[i]`` by ``mode``, in index order (no autograd)."""
    dev = base.device
    start = base
    if not include_self:
        start = F.where(_const(_touched(flat, base.shape), dev), _identity(mode, base.dtype), base)
    readers = _ix._Readers(flat, base.numel())
    out = _ix.combine_kernel("sum" if mode == "mean" else mode, wide)(
        F.reshape(start, -1),
        F.reshape(values, -1),
        _ix._index_tensor(readers.order, dev),
        _ix._index_tensor(readers.offsets, dev),
    )
    out = F.reshape(out, *base.shape)
    if mode == "mean":
        counts = _const(_counts(flat, base.shape, include_self).astype(base.dtype.np), dev)
        out = F.div(out, counts) if base.dtype.is_float else F.div(out, counts, rounding_mode="floor")
    return out


@differentiable("index_reduce", inputs=("base", "values"))
def reduce_positions(base, values, flat: np.ndarray, mode: str, include_self: bool, wide: bool):
    """``_combine`` as one op for autograd, with PyTorch's gradients of ``scatter_reduce``."""
    return _combine(base, values, flat, mode, include_self, wide)


def _reduce_grad(c: G.GradContext):
    """PyTorch's scatter_reduce backward, written over flat positions (``gather`` = ``index`` read)."""
    base, values = c.inputs
    flat, mode, include_self, wide = (c.attrs[k] for k in ("flat", "mode", "include_self", "wide"))
    g, result, dev = c.g, c.output, c.g.device
    if mode == "sum":
        g_base, g_values = g, _gather(g, flat)
    elif mode == "mean":
        n = _const(_counts(flat, base.shape, include_self).astype(g.dtype.np), dev)
        g_base, g_values = F.div(g, n), F.div(_gather(g, flat), _gather(n, flat))
    elif mode in ("amax", "amin"):  # ties share the gradient evenly
        value = _gather(result, flat)
        base_is = F.eq(base, result)
        values_is = F.eq(values, value)
        n = _ix.scatter_add_positions(F.cast(base_is, g.dtype), flat, F.cast(values_is, g.dtype))
        share = F.div(g, n)
        g_base = F.mul(base_is, share)
        g_values = F.mul(values_is, _gather(share, flat))
    else:  # prod: the product of the others, exact where one factor is zero
        masked_base = F.where(F.eq(base, 0), 1, base)
        g_base = F.div(F.mul(g, _combine(masked_base, values, flat, mode, include_self, wide)), masked_base)
        zero = F.eq(values, 0)
        zeros_at = _gather(_ix.scatter_add_positions(c.F.zeros_like(base), flat, F.cast(zero, base.dtype)), flat)
        single = F.logical_and(zero, F.eq(zeros_at, 1))
        others = _combine(base, F.where(single, 1, values), flat, mode, include_self, wide)
        g_values = F.where(
            single,
            _gather(F.mul(g, others), flat),
            F.div(_gather(F.mul(g, result), flat), F.where(zero, 1, values)),
        )
    if not include_self:
        g_base = F.where(_const(_touched(flat, base.shape), dev), 0, g_base)
    return (g_base if c.needs[0] else None), (g_values if c.needs[1] else None)


G.RULES["index_reduce"] = _reduce_grad


@differentiable("scatter_legacy_reduce", inputs=("base", "values"))
def _legacy_reduce(base, values, flat: np.ndarray, mode: str):
    return _combine(base, values, flat, mode, True, True)


def _legacy_reduce_grad(c: G.GradContext):
    raise RuntimeError("derivative for aten::scatter with reduce is not implemented; use scatter_reduce")


G.RULES["scatter_legacy_reduce"] = _legacy_reduce_grad


# ---------------------------------------------------------------------- checks


def _torch(dtype: T.DType) -> str:
    return mutation.torch_name(dtype)


def _same_dtype(op: str, target, source, what: str = "source") -> None:
    if not isinstance(source, _tensor.Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be a vkml.Tensor, not {type(source).__name__}")
    if source.dtype is not target.dtype:
        raise RuntimeError(
            f"{op}(): self ({_torch(target.dtype)}) and {what} ({_torch(source.dtype)}) must have the same scalar type"
        )
    if source.device is not target.device:
        raise DeviceError(f"'{op}' operands are on different devices: {target.device.name} and {source.device.name}")


def _check_reduce(op: str, reduce, allowed: tuple[str, ...]) -> None:
    if reduce not in allowed:
        names = ", ".join(allowed[:-1]) + " or " + allowed[-1]
        raise RuntimeError(f"{op}(): reduce argument must be either {names}, got {reduce}")


def _check_bool_arg(op: str, name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{op}(): argument '{name}' must be bool, not {type(value).__name__}")


# ---------------------------------------------------------------------- scatter_reduce


def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True):
    """``input`` with ``src[i][j]`` combined into ``input[index[i][j]][j]`` (dim 0) by ``reduce``, as torch.scatter_reduce.

    ``reduce`` is 'sum', 'prod', 'mean', 'amax' or 'amin'; with ``include_self=False`` the old
    value of a position that some index names is left out. Repeated positions combine in index
    order (module docstring): the same bits on every device.

    >>> x = vkml.tensor([1.0, 2.0, 3.0])
    >>> x.scatter_reduce(0, vkml.tensor([0, 0, 2]), vkml.tensor([5.0, 7.0, 1.0]), "amax").tolist()
    [7.0, 2.0, 3.0]
    """
    reduce = _SCATTER_REDUCE_ALIASES.get(reduce, reduce)
    _check_reduce("scatter_reduce", reduce, _SCATTER_REDUCES)
    _check_bool_arg("scatter_reduce", "include_self", include_self)
    if isinstance(src, _tensor.Tensor) and src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _same_dtype("scatter_reduce", input, src, "src")
    if reduce == "mean" and input.dtype is T.bool_:
        raise NotImplementedError("scatter_reduce(): reduce='mean' is not implemented for bool tensors, as in PyTorch")
    d, flat = _ix._dim_plan("scatter_reduce", input, dim, index)
    if flat.size == 0:
        return F.clone(input)
    return reduce_positions(input, _ix._leading(src, flat.shape, input.shape, d), flat, reduce, include_self, True)


def scatter_reduce_(input, dim: int, index, src, reduce: str, *, include_self: bool = True):
    """In-place ``scatter_reduce``; returns ``input``."""
    return mutation.inplace(
        input, "scatter_reduce_", lambda t: scatter_reduce(t, dim, index, src, reduce, include_self=include_self)
    )


def scatter_with_reduce(target, flat: np.ndarray, src, reduce: str):
    """``scatter_(..., reduce='add' | 'multiply')``'s new value (PyTorch has no gradient for it)."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("scatter(): reduce argument must be either add or multiply.")
    if flat.size == 0:
        return target
    values = src if src.shape == flat.shape else F.expand(src, *flat.shape)
    return _legacy_reduce(target, values, flat, "sum" if reduce == "add" else "prod")


# ---------------------------------------------------------------------- index_add, index_copy, index_reduce


def _index_dim_plan(op: str, input, dim: int, index, source, negative: bool, error=RuntimeError) -> np.ndarray:
    """The flat position in ``input`` of each element of ``source`` (its shape): ``index`` names the slot along ``dim``."""
    if not isinstance(index, _tensor.Tensor):
        raise TypeError(f"{op}(): argument 'index' must be a vkml.Tensor, not {type(index).__name__}")
    if index.dtype not in (T.int64, T.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: {_torch(index.dtype)}")
    if index.ndim > 1:
        raise IndexError(
            f"{op}(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
            f"{_torch(index.dtype)} and size: {list(index.shape)}"
        )
    d = lazy.normalize_dim(op, dim, max(input.ndim, 1))
    in_shape, src_shape = input.shape or (1,), source.shape or (1,)
    if len(in_shape) != len(src_shape) or any(a != b for k, (a, b) in enumerate(zip(in_shape, src_shape)) if k != d):
        raise RuntimeError(
            f"{op}(): source tensor shape must match self tensor shape, excluding the specified dimension. "
            f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}"
        )
    idx = index.numpy().reshape(-1).astype(np.int64)
    if src_shape[d] != idx.size:
        raise RuntimeError(
            f"{op}(): Number of indices ({idx.size}) should be equal to source.size(dim): ({src_shape[d]}), for dim: {d}"
        )
    size = in_shape[d]
    bad = ((idx < -size) if negative else (idx < 0)) | (idx >= size)
    if bad.any():
        raise error(f"{op}(): index {int(idx[bad][0])} is out of bounds for dimension {d} with size {size}")
    idx = np.where(idx < 0, idx + size, idx)
    strides = np.array([math.prod(in_shape[k + 1 :]) for k in range(len(in_shape))], dtype=np.int64)
    grids = np.indices(src_shape, dtype=np.int64)
    grids[d] = idx[grids[d]]
    return np.tensordot(strides, grids, axes=1).astype(np.int64).reshape(source.shape)


@autograd.shown_as(
    "IndexAddBackward0", lambda input, dim, index, source, **k: (autograd.edge(input), autograd.edge(source))
)
def index_add(input, dim: int, index, source, *, alpha=1):
    """``input`` with ``alpha * source`` added to the slices ``index`` names along ``dim``, as torch.index_add.

    Repeated indices add in index order after the old value (float16: rounded after each add, as
    PyTorch's CPU). ``alpha * source`` is rounded before the add; PyTorch's CPU may fuse the two.

    >>> vkml.zeros(3).index_add(0, vkml.tensor([0, 2, 0]), vkml.tensor([1.0, 2.0, 3.0])).tolist()
    [4.0, 0.0, 2.0]
    """
    _same_dtype("index_add_", input, source)
    flat = _index_dim_plan("index_add_", input, dim, index, source, negative=False)
    if alpha != 1:
        # a bool tensor keeps bool: alpha=False adds nothing
        scale = alpha if input.dtype.is_float else bool(alpha) if input.dtype is T.bool_ else int(alpha)
        source = F.mul(source, scale)
    if flat.size == 0:
        return F.clone(input)
    return reduce_positions(input, source, flat, "sum", True, False)


def index_add_(input, dim: int, index, source, *, alpha=1):
    """In-place ``index_add``; returns ``input``."""
    mutation.refuse_operand_overlap(input, (index, source), same_ok=False)
    return mutation.inplace(input, "index_add_", lambda t: index_add(t, dim, index, source, alpha=alpha))


@autograd.shown_as("IndexCopyBackward0", lambda input, dim, index, source: _edges_of(input, source))
def index_copy(input, dim: int, index, source):
    """``input`` with the slices ``index`` names along ``dim`` replaced by ``source``'s, as torch.index_copy.

    A repeated index keeps the last slice that names it (PyTorch leaves it unspecified; its CPU
    keeps the last). The gradient reaches every slice of ``source``, the overwritten ones too, as
    PyTorch's.

    >>> vkml.zeros(3).index_copy(0, vkml.tensor([2, 0]), vkml.tensor([5.0, 6.0])).tolist()
    [6.0, 0.0, 5.0]
    """
    _index_copy_checks(input, dim, index, source)
    flat = _index_dim_plan("index_copy_", input, dim, index, source, negative=False, error=IndexError)
    return _ix.write_positions(input, source, flat)


def _index_copy_checks(input, dim: int, index, source) -> None:
    """PyTorch's checks of index_copy, in its order and words (they differ from index_add's)."""
    if isinstance(index, _tensor.Tensor) and index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    if isinstance(index, _tensor.Tensor) and index.dtype is not T.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {_torch(index.dtype)}")
    if isinstance(source, _tensor.Tensor) and source.dtype is not input.dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{_torch(input.dtype)} and (source) {_torch(source.dtype)}"
        )
    _same_dtype("index_copy_", input, source)
    d = lazy.normalize_dim("index_copy_", dim, max(input.ndim, 1))
    count = source.shape[d] if source.ndim else 1
    if isinstance(index, _tensor.Tensor) and index.numel() != count:
        raise IndexError(
            f"index_copy_(): Number of indices ({index.numel()}) should be equal to source.size(dim) ({count})"
        )
    self_slice = [s for k, s in enumerate(input.shape) if k != d]
    source_slice = [s for k, s in enumerate(source.shape) if k != d]
    if self_slice != source_slice:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: "
            f"{' '.join(map(str, self_slice))} at dimension {d} and source slice shape: "
            f"{' '.join(map(str, source_slice))} at dimension 0."
        )


def index_copy_(input, dim: int, index, source):
    """In-place ``index_copy``; returns ``input``."""
    mutation.refuse_operand_overlap(input, (index, source), same_ok=False)
    return mutation.inplace(input, "index_copy_", lambda t: index_copy(t, dim, index, source))


def index_reduce(input, dim: int, index, source, reduce: str, *, include_self: bool = True):
    """``input`` with ``source``'s slices combined into the slices ``index`` names, as torch.index_reduce.

    ``reduce`` is 'prod', 'mean', 'amax' or 'amin'; repeated indices combine in index order
    (float16 rounds after each step, as PyTorch's CPU).
    """
    if not _WARNED_BETA:
        _WARNED_BETA.append(True)  # PyTorch warns once per process
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=3)
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    _check_bool_arg("index_reduce", "include_self", include_self)
    _same_dtype("index_reduce_", input, source)
    if input.dtype is T.bool_:
        raise NotImplementedError("index_reduce(): not implemented for bool tensors, as in PyTorch")
    flat = _index_dim_plan("index_reduce_", input, dim, index, source, negative=False, error=IndexError)
    if flat.size == 0:
        return F.clone(input)
    return reduce_positions(input, source, flat, reduce, include_self, False)


def index_reduce_(input, dim: int, index, source, reduce: str, *, include_self: bool = True):
    """In-place ``index_reduce``; returns ``input``."""
    return mutation.inplace(
        input, "index_reduce_", lambda t: index_reduce(t, dim, index, source, reduce, include_self=include_self)
    )


def _edges_of(*tensors) -> tuple:
    return tuple(autograd.edge(t) for t in tensors)


def _index_fill_node(input, dim, index, value) -> str:
    return "IndexFillBackward1" if isinstance(value, _tensor.Tensor) else "IndexFillBackward0"


@autograd.shown_as(
    _index_fill_node,
    lambda input, dim, index, value: _edges_of(input, value) if isinstance(value, _tensor.Tensor) else _edges_of(input),
)
def index_fill(input, dim: int, index, value):
    """``input`` with ``value`` in the slices ``index`` names along ``dim``, as torch.index_fill.

    ``value`` is a number or a 0-dim tensor; negative indices count from the end. Lazy once the
    index is read back (a select with a mask along ``dim``).
    """
    if isinstance(value, _tensor.Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s)."
        )
    if not isinstance(index, _tensor.Tensor) or index.dtype is not T.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if type(value) is complex and not input.dtype.is_complex:
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not supported")
    if index.ndim > 1:
        raise RuntimeError(f"index_fill_(): Index has to be a vector/scalar (got {index.ndim} dims)")
    d = lazy.normalize_dim("index_fill_", dim, max(input.ndim, 1))
    size = input.shape[d] if input.ndim else 1
    idx = index.numpy().reshape(-1)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise IndexError(f"index_fill_(): index {int(idx[bad][0])} is out of bounds for dimension {d} with size {size}")
    along = np.zeros(size, dtype=np.bool_)
    along[idx] = True
    mask = along.reshape([size if k == d else 1 for k in range(input.ndim)])
    return F.masked_fill(input, _const(mask, input.device), value)


def index_fill_(input, dim: int, index, value):
    """In-place ``index_fill``; returns ``input``."""
    base = mutation.expanded_base(input)
    if base is not None:  # the positions index names, as a mask of the expanded shape
        nowhere = F._wrap(lazy.const_node(False, T.bool_, tuple(input.shape), input.device))
        chosen = index_fill(nowhere, dim, index, True)
        return mutation.masked_fill_expanded(input, base, "index_fill_", chosen, value)
    mutation.refuse_operand_overlap(input, (index, value), same_ok=False)
    return mutation.inplace(input, "index_fill_", lambda t: index_fill(t, dim, index, value))


# ---------------------------------------------------------------------- masks


def _mask_array(op: str, mask, message: str) -> np.ndarray:
    if not isinstance(mask, _tensor.Tensor):
        raise TypeError(f"{op}(): argument 'mask' must be a vkml.Tensor, not {type(mask).__name__}")
    if mask.dtype is not T.bool_:
        raise RuntimeError(message.format(dtype=_torch(mask.dtype)))
    return mask.numpy()


@autograd.shown_as("MaskedSelectBackward0", autograd.input_edge)
def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` holds (both broadcast), as a 1-D tensor, as torch.masked_select.

    The mask is read back (the result's length depends on it); the gradient goes back to the selected elements.

    >>> vkml.masked_select(vkml.tensor([1, 2, 3]), vkml.tensor([True, False, True])).tolist()
    [1, 3]
    """
    m = _mask_array("masked_select", mask, "masked_select: expected BoolTensor for mask")
    shape = lazy.broadcast_shapes("masked_select", tuple(m.shape), input.shape)  # PyTorch's order in its words
    x = input if input.shape == shape else F.expand(input, *shape)
    flat = np.flatnonzero(np.broadcast_to(m, shape))
    return _ix.take_positions(x, flat)


@autograd.shown_as("MaskedScatterBackward0", lambda input, mask, source: _edges_of(input, source))
def masked_scatter(input, mask, source):
    """``input`` with the elements where ``mask`` holds replaced by ``source``'s first ones, as torch.masked_scatter.

    In row-major order; ``mask`` and ``input`` broadcast together. The mask is read back.
    """
    if isinstance(mask, _tensor.Tensor) and mask.dtype is T.uint8:
        warnings.warn(
            "masked_scatter_ received a mask with dtype vkml.uint8, this behavior is now deprecated,"
            "please use a mask with dtype vkml.bool instead.",
            UserWarning,
            stacklevel=3,
        )
    m = _mask_array(
        "masked_scatter", mask, "masked_scatter_ only supports boolean masks, but got mask with dtype {dtype}"
    )
    if not isinstance(source, _tensor.Tensor):
        raise TypeError(f"masked_scatter(): argument 'source' must be a vkml.Tensor, not {type(source).__name__}")
    if source.dtype is not input.dtype:
        raise RuntimeError(  # PyTorch's words, their missing space included ("but gotFloat")
            f"masked_scatter: expected self and source to have same dtypes but got{_torch(input.dtype)} and "
            f"{_torch(source.dtype)}"
        )
    _same_dtype("masked_scatter", input, source)
    shape = lazy.broadcast_shapes("masked_scatter", input.shape, tuple(m.shape))
    x = input if input.shape == shape else F.clone(F.expand(input, *shape))
    flat = np.flatnonzero(np.broadcast_to(m, shape))
    if flat.size > source.numel():
        raise RuntimeError("masked_scatter: Number of elements of source < number of ones in mask")
    values = F.reshape(source, -1)
    if flat.size < values.shape[0]:
        values = values[: flat.size]
    return _ix.write_positions(x, values, flat)


def masked_scatter_(input, mask, source):
    """In-place ``masked_scatter`` (``mask`` broadcasts to ``input``'s shape); returns ``input``."""
    mutation.refuse_operand_overlap(input, (mask, source), same_ok=False)
    return mutation.inplace(input, "masked_scatter_", lambda t: masked_scatter(t, mask, source))


# ---------------------------------------------------------------------- take, put


def _flat_index(op: str, input, index) -> np.ndarray:
    """``index``'s values as flat positions in ``input`` (negative ones from the end), checked."""
    if not isinstance(index, _tensor.Tensor):
        raise TypeError(f"{op}(): argument 'index' must be a vkml.Tensor, not {type(index).__name__}")
    if index.dtype is not T.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_torch(index.dtype)}")
    idx = index.numpy().astype(np.int64)
    numel = input.numel()
    bad = (idx < -numel) | (idx >= numel)
    if bad.any():
        raise IndexError(
            f"{op}(): out of range: tried to access index {int(idx[bad][0])} on a tensor of {numel} elements."
        )
    return np.where(idx < 0, idx + numel, idx)


@autograd.shown_as("TakeBackward0", autograd.input_edge)
def take(input, index):
    """The elements of ``input`` (read as 1-D) at ``index``, shaped like ``index``, as torch.take.

    >>> vkml.take(vkml.tensor([[1, 2], [3, 4]]), vkml.tensor([0, -1])).tolist()
    [1, 4]
    """
    return _ix.take_positions(input, _flat_index("take", input, index))


@autograd.shown_as("PutBackward0", lambda input, index, source, *a, **k: _edges_of(input, source))
def put(input, index, source, accumulate: bool = False):
    """``input`` (read as 1-D) with ``source``'s elements written at ``index``, as torch.put.

    Repeated indices: the last wins, or with ``accumulate`` every element adds in index order
    (float16: rounded after each add, as PyTorch's CPU).
    """
    if isinstance(index, _tensor.Tensor) and index.dtype is not T.int64:
        _flat_index("put_", input, index)  # raises PyTorch's first error: the index's dtype
    if isinstance(source, _tensor.Tensor) and source.dtype is not input.dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{_torch(input.dtype)} and source.dtype = {_torch(source.dtype)}"
        )
    flat = _flat_index("put_", input, index)
    _same_dtype("put_", input, source)
    if source.numel() != flat.size:
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {flat.size}"
        )
    values = F.reshape(source, *flat.shape)
    if flat.size == 0:
        return mutation.zero_gradient_link(F.clone(input), source)
    if accumulate:
        return reduce_positions(input, values, flat, "sum", True, False)
    return _ix.write_positions(input, values, flat)


def put_(input, index, source, accumulate: bool = False):
    """In-place ``put``; returns ``input``."""
    mutation.refuse_operand_overlap(input, (index, source), same_ok=False)
    return mutation.inplace(input, "put_", lambda t: put(t, index, source, accumulate))


def argwhere(input):
    """The indices of the nonzero elements, one row each (``nonzero(input)``), as torch.argwhere."""
    return _ix.nonzero(input)


@autograd.shown_as("IndexPutBackward0", lambda input, indices, values, *a, **k: _edges_of(input, values))
def index_put(input, indices, values, accumulate: bool = False):
    """``input`` with ``values`` written (added, with ``accumulate``) at ``indices``, as torch.index_put."""
    return _ix.index_put_(F.clone(input), indices, values, accumulate)
