"""Advanced indexing: integer tensors, lists and bool masks as indices, read and written.

``x[index]`` with only ints, slices, None and ``...`` is a view (functions.getitem). An index
with a tensor, a list, a numpy array or a Python bool in it is advanced, as in PyTorch: the
result is a copy whose shape follows PyTorch's (= numpy's) rules — several advanced indices
broadcast together; their dims go where the first of them stands if they are adjacent, first
otherwise; a bool mask stands for its ``nonzero()``.

Like PyTorch on the CPU, the index values are checked when the op is called: an index tensor
is realized and read back (a bool mask must be: the result's shape depends on it). The host
then knows, for each result element, the flat position it reads (``plan``), and the device
runs one gather kernel over that map. Its gradient adds the result's gradient back into
the positions read, in index order (a repeated index sums its contributions left to right:
the same bits on every device), with one kernel that walks, per position, the sorted list of
result elements that read it.

Writes (``x[index] = v``, ``index_put_``) use the same map inverted: the last result element
that names a position wins (PyTorch leaves repeated indices unspecified; its CPU also keeps
the last), and ``accumulate=True`` adds every contribution in index order after the old value.
"""

from __future__ import annotations

import functools
import math
import re
import warnings

import numpy as np

from .. import dsl
from .. import tensor as _tensor
from ..dsl.kernel import MAX_WORKGROUPS, kernel
from ..errors import DTypeError, ShapeError
from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as G
from . import autograd
from . import operators as F
from .autograd import differentiable
from .exports import Export

# The public names of this module's ops (vkml/frontend/public.py binds them; Tensor's methods of these
# names are tensor.py's).
EXPORTS = (
    Export("gather"),
    Export("index_select"),
    Export("nonzero"),
    Export("scatter"),
    Export("scatter_add"),
    Export("take_along_dim"),
)

_LOCAL = 64  # invocations per workgroup of the kernels below
_INT32_MAX = 2**31 - 1
_UNROLL_BITS = 4
_UNROLL = 1 << _UNROLL_BITS  # elements the accumulation adds per loop trip


def _grid(n: int) -> tuple[int, int, int]:
    """Workgroups for one invocation per element of ``n``: along x, spilling into y past the per-dim limit."""
    groups = max(1, -(-n // _LOCAL))
    return (min(groups, MAX_WORKGROUPS), -(-groups // MAX_WORKGROUPS), 1)


def _invocation():
    return dsl.global_id(0) + dsl.global_id(1) * (MAX_WORKGROUPS * _LOCAL)


@kernel(outputs=lambda src, idx: (idx.shape, src.dtype), grid=lambda src, idx: _grid(idx.numel), name="index_gather")
def _gather_kernel(src, idx, out):
    """out[i] = src[idx[i]], or 0 where idx[i] < 0 (a position no index names)."""
    i = _invocation()
    with dsl.if_(i < out.numel):
        k = idx[i]
        (value,) = dsl.if_else(k >= 0, lambda: src[k], lambda: dsl.const(0, src.dtype))
        out[i] = value


@functools.cache
def combine_kernel(mode: str, wide: bool):
    """The kernel out[j] = base[j] ⊕ g[order[lo]] ⊕ g[order[lo + 1]] ⊕ ... for ⊕ = ``mode``, in that order.

    ``wide``: float16 combines in float32 and rounds once; otherwise it rounds after each step
    (float32 arithmetic then one rounding equals the float16 operation: 24 >= 2·11 + 2 bits).
    """

    @kernel(
        outputs=lambda base, g, order, offsets: (base.shape, base.dtype),
        grid=lambda base, g, order, offsets: _grid(offsets.numel - 1),
        name=f"index_{mode}_{'wide' if wide else 'stepwise'}",
    )
    def combine(base, g, order, offsets, out):
        j = _invocation()
        with dsl.if_(j < out.numel):
            lo, hi = offsets[j], offsets[j + 1]
            short = base.dtype is T.float16  # carried as float32, narrowed in software
            acc_t = T.float32 if short else base.dtype

            def step(a, v):
                if base.dtype is T.bool_:  # PyTorch's bool arithmetic: a sum or max is "any", a product or min "all"
                    return (a | v) if mode in ("sum", "amax") else (a & v)
                if mode == "sum":
                    r = a + v
                elif mode == "prod":
                    r = a * v
                else:  # PyTorch's CPU rule: a NaN wins; of equal values the one already there stays
                    better = (a < v) if mode == "amax" else (v < a)
                    if base.dtype.is_float:
                        better = better | dsl.isnan(v)
                    return dsl.where(better, v, a)
                if short and not wide:
                    r = dsl.convert(dsl.f32_to_f16(r), acc_t)
                return r

            # _UNROLL elements a trip: lavapipe (gallivm) ends a shader's loops after 65535 trips in
            # all, so one position takes at most 65535 * _UNROLL contributions there (other drivers:
            # no limit). Each element is combined only where it exists: the order stays the index order.
            def trip(t, a):
                for u in range(_UNROLL):
                    k = lo + t * _UNROLL + u
                    inside = k < hi
                    (v,) = dsl.if_else(inside, lambda k=k: dsl.convert(g[order[k]], acc_t), lambda: dsl.const(0, acc_t))
                    a = dsl.where(inside, step(a, v), a)
                return a

            trips = (hi - lo + (_UNROLL - 1)) >> _UNROLL_BITS
            (acc,) = dsl.loop(0, trips, 1, (dsl.convert(base[j], acc_t),), trip)
            out[j] = dsl.f32_to_f16(acc) if short else acc

    return combine


# ---------------------------------------------------------------------- the host's map


def sequence_as_tuple(index):
    """PyTorch's (NumPy's old) rule: a list index shorter than 32 that holds a tensor, a sequence, a
    slice, ``None`` or ``...`` is read as a tuple of indices (x[[[0], [1]]] is x[[0], [1]]), with
    PyTorch's deprecation warning; any other index is returned as it is."""
    if not isinstance(index, list) or len(index) >= 32:
        return index
    if any(
        i is None or i is Ellipsis or isinstance(i, (_tensor.Tensor, list, tuple, range, slice, np.ndarray))
        for i in index
    ):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] instead of x[seq]",
            UserWarning,
            stacklevel=3,
        )
        return tuple(index)
    return index


def scalar_tensors_as_ints(index):
    """``index`` with each 0-dim integer tensor (not uint8, a mask) read as a Python int: PyTorch selects
    with it as with an int, so the result is a view (x[torch.tensor(1)] shares x's storage)."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(_is_scalar_int(i) for i in items):
        return index
    items = tuple(int(i.item()) if _is_scalar_int(i) else i for i in items)
    return items if isinstance(index, tuple) else items[0]


def _is_scalar_int(item) -> bool:
    return (
        isinstance(item, _tensor.Tensor)
        and item.ndim == 0
        and item.dtype.is_int
        and item.dtype not in (T.uint8, T.bool_)
        and not item.dtype.is_complex
    )


def is_advanced(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    # a tuple inside the index tuple is a sequence of indices, as a list (x[(1, 0), :] == x[[1, 0], :])
    return any(isinstance(i, (_tensor.Tensor, list, tuple, range, np.ndarray, bool)) for i in items)


def _as_array(op: str, item):
    """An index item as numpy sees it: tensors and lists become int64 or bool arrays."""
    if isinstance(item, _tensor.Tensor):
        if item.dtype not in (T.int64, T.int32, T.uint8, T.bool_):  # PyTorch's list: int8, int16 and floats fail
            raise IndexError(
                f"'{op}': tensors used as indices must be long, int, byte or bool tensors, got {item.dtype.name}"
            )
        array = item.numpy()
        if item.dtype is T.uint8:  # PyTorch reads a byte tensor as a mask, with a deprecation warning
            warnings.warn(
                "indexing with dtype vkml.uint8 is now deprecated, please use a dtype vkml.bool instead.", stacklevel=3
            )
            array = array.astype(np.bool_)
        if array.ndim == 0 and array.dtype == np.bool_:
            return bool(array)  # a 0-dim mask is a Python bool (a new dim of 1 or 0), as in PyTorch
        return array if array.dtype == np.bool_ else array.astype(np.int64)
    if isinstance(item, (list, tuple, range, np.ndarray)):  # a range is a sequence of ints, as in PyTorch
        array = np.asarray(item)
        if array.dtype == np.bool_:
            return array
        if array.size == 0:
            return array.astype(np.int64)
        if isinstance(item, (list, tuple)) and np.issubdtype(array.dtype, np.floating):
            # PyTorch makes a Python sequence of floats an int64 index, truncating toward zero
            # (a float *tensor* stays an IndexError, above)
            return np.trunc(array).astype(np.int64)
        if not np.issubdtype(array.dtype, np.integer):
            raise IndexError(f"'{op}': indices must be integers or bools, got {item!r}")
        return array.astype(np.int64)
    if isinstance(item, slice) and item.step is not None and item.step <= 0:
        raise ValueError("step must be greater than zero")
    if item is None or item is Ellipsis or isinstance(item, (slice, bool, int, np.integer)):
        return item
    raise unsupported_index(op, item)


def unsupported_index(op: str, item) -> Exception:
    """PyTorch's error for an index of no supported kind: IndexError, but TypeError for a string (which
    PyTorch tries to read as a sequence of values)."""
    if isinstance(item, str):
        return TypeError(f"'{op}': unsupported index {item!r} (ints, slices, None, ..., tensors, lists and bools are)")
    return IndexError(
        f"'{op}': only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are valid indices "
        f"(got {type(item).__name__})"
    )


def plan(op: str, shape: tuple[int, ...], index) -> np.ndarray:
    """The flat position in a tensor of ``shape`` that each element of ``x[index]`` reads (its shape is the result's)."""
    items = tuple(_as_array(op, i) for i in (index if isinstance(index, tuple) else (index,)))
    numel = math.prod(shape)
    if numel > _INT32_MAX:
        raise ShapeError(f"'{op}': advanced indexing supports tensors of up to 2^31 - 1 elements, got shape {shape}")
    _check_masks(op, shape, items)
    positions = np.arange(numel, dtype=np.int32).reshape(shape)
    # Two steps, because numpy counts an int beside an array as one more advanced index, which
    # moves the result's dims (x[None, t, ..., 2]), where PyTorch selects with it first: ints,
    # None and Python bools first (basic indexing), then the arrays and slices.
    first, second = [], []
    for item in items:
        if isinstance(item, np.ndarray):
            first.extend([slice(None)] * (item.ndim if item.dtype == np.bool_ else 1))
            second.append(item)
        elif isinstance(item, bool):
            # PyTorch: a new dim of 1 and an index tensor [0] (True) or [] (False) into it, which
            # broadcasts with the other tensor indices (x[mask, True] has the shape of x[mask])
            first.append(None)
            second.append(np.zeros(1 if item else 0, dtype=np.int64))
        elif isinstance(item, (int, np.integer)):
            first.append(item)
        else:  # None, a slice (applied once, here) or ...
            first.append(item)
            second.append(item if item is Ellipsis else slice(None))
    try:
        return np.asarray(positions[tuple(first)][tuple(second)])
    except IndexError as e:  # numpy's bounds, broadcast and mask checks, in PyTorch's words
        raise IndexError(_torch_index_message(op, str(e))) from None


def _torch_index_message(op: str, message: str) -> str:
    mismatch = re.match(r"shape mismatch: indexing arrays could not be broadcast together with shapes (.*)", message)
    if mismatch:
        shapes = ", ".join(
            "[" + s.strip("(),").replace(",", ", ").replace("  ", " ") + "]" for s in mismatch[1].split()
        )
        return f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
    if message.endswith("with size 0"):
        return "index is out of bounds for dimension with size 0"
    return f"'{op}': " + message.replace("axis", "dimension")


def _check_masks(op: str, shape: tuple[int, ...], items: tuple) -> None:
    """PyTorch's IndexError for a bool mask whose shape differs from the dims it covers."""
    consumed = [
        0
        if item is None or item is Ellipsis or isinstance(item, bool)
        else (item.ndim if isinstance(item, np.ndarray) and item.dtype == np.bool_ else 1)
        for item in items
    ]
    d = 0
    for item, used in zip(items, consumed):
        if item is Ellipsis:
            d += len(shape) - sum(consumed)  # the dims no other item covers
            continue
        if isinstance(item, np.ndarray) and item.dtype == np.bool_:
            for k, size in enumerate(item.shape):
                if d + k >= len(shape) or shape[d + k] != size:
                    raise IndexError(
                        f"'{op}': The shape of the mask {list(item.shape)} at index {k} does not match "
                        f"the shape of the indexed tensor {list(shape)} at index {d + k}"
                    )
        d += used


def _index_tensor(array: np.ndarray, device):
    return F._from_numpy(np.ascontiguousarray(array, dtype=np.int32).reshape(-1), device)


class _Readers:
    """Per position of the source: the result elements that read it, in index order (for the gradient)."""

    def __init__(self, flat: np.ndarray, numel: int):
        flat = flat.reshape(-1)
        order = np.argsort(flat, kind="stable")
        self.order = order.astype(np.int32)
        self.offsets = np.searchsorted(flat[order], np.arange(numel + 1), side="left").astype(np.int32)


def _gather(input, flat: np.ndarray):
    src = F.reshape(input, -1) if input.ndim != 1 else input
    if flat.size == 0:
        return F._wrap(lazy.const_node(0, input.dtype, flat.shape, input.device))
    return F.reshape(_gather_kernel(src, _index_tensor(flat, input.device)), *flat.shape)


@differentiable("index", inputs=("input",))
def take_positions(input, flat: np.ndarray):
    """The elements of ``input`` at flat positions ``flat`` (host integers; -1 reads 0), shaped like ``flat``."""
    return _gather(input, flat)


def _take_positions_grad(c: G.GradContext):
    (x,) = c.inputs
    # a recorded op (index_accumulate), so that a second derivative reaches c.g (create_graph)
    return (_accumulate(c.F.zeros_like(x), c.attrs["flat"], c.g, True),)


G.RULES["index"] = _take_positions_grad


def scatter_add_positions(base, flat: np.ndarray, values, wide: bool = True):
    """``base`` with ``values[i]`` added at flat position ``flat[i]`` (skipped where -1), in index order
    (float16: in float32, rounded once; with ``wide=False`` rounded after each add)."""
    if flat.size == 0:
        return base
    readers = _Readers(flat, base.numel())
    dev = base.device
    out = combine_kernel("sum", wide)(
        F.reshape(base, -1),
        F.reshape(values, -1),
        _index_tensor(readers.order, dev),
        _index_tensor(readers.offsets, dev),
    )
    return F.reshape(out, *base.shape)


def getitem(input, index):
    """``input[index]`` with an advanced index: a copy (see the module doc)."""
    flat = plan("__getitem__", input.shape, index)
    return take_positions(input, flat)


def _last_writer(flat: np.ndarray, numel: int) -> np.ndarray:
    """Per position: the last element of ``flat`` that names it, or -1."""
    writer = np.full(numel, -1, dtype=np.int64)
    writer[flat.reshape(-1)] = np.arange(flat.size)  # numpy assigns repeated indices in order: the last stays
    return writer


def index_put(target, flat: np.ndarray, values, accumulate: bool, wide: bool = True):
    """The new value of ``target`` (a tensor) with ``values`` (broadcast to ``flat``'s shape) written at ``flat``;
    ``accumulate`` adds (float16: ``wide`` rounds each position once, else after each add)."""
    given = values
    values = _fit(F.cast(values, target.dtype), flat.shape)
    if flat.size == 0:
        return mutation.zero_gradient_link(target, given)
    if accumulate:
        return _accumulate(target, flat, values, wide)
    return write_positions(target, values, flat)


@differentiable("index_write", inputs=("target", "values"))
def write_positions(target, values, flat: np.ndarray):
    """``target`` with ``values[i]`` (``flat``'s shape) written at flat position ``flat[i]``; the last one wins."""
    if flat.size == 0:
        return F.clone(target)
    writer = _last_writer(flat, target.numel())
    placed = F.reshape(take_positions(F.reshape(values, -1), writer), *target.shape)
    written = F._from_numpy((writer >= 0).reshape(target.shape), target.device)
    return F.where(written, placed, target)


def _write_grad(c: G.GradContext):
    """PyTorch's: zero where written for the target; every value, an overwritten one too, gets the gradient there."""
    flat = c.attrs["flat"]
    g_target = g_values = None
    if c.needs[0]:
        written = F._from_numpy((_last_writer(flat, c.g.numel()) >= 0).reshape(c.g.shape), c.g.device)
        g_target = F.where(written, 0, c.g)
    if c.needs[1]:
        g_values = take_positions(F.reshape(c.g, -1), flat)
    return g_target, g_values


G.RULES["index_write"] = _write_grad


@differentiable("index_accumulate", inputs=("target", "values"))
def _accumulate(target, flat: np.ndarray, values, wide: bool):
    return scatter_add_positions(target, flat, values, wide)


def _accumulate_grad(c: G.GradContext):
    flat = c.attrs["flat"]
    g_values = take_positions(c.g.reshape(-1), flat.reshape(-1)).reshape(*flat.shape) if c.needs[1] else None
    return (c.g if c.needs[0] else None), g_values


G.RULES["index_accumulate"] = _accumulate_grad


def setitem(target, index, value) -> None:
    """``target[index] = value`` with an advanced index."""
    _refuse_byte_mask_fill("__setitem__", index, value)
    flat = plan("__setitem__", target.shape, index)
    if isinstance(value, _tensor.Tensor) and value.dtype is not target.dtype and not _is_mask_fill(index, value):
        _fit(value, flat.shape)  # PyTorch checks the shapes first
        raise _dtype_mismatch(target, value)
    if not isinstance(value, _tensor.Tensor):
        value = lazy.fill_value("__setitem__", value, target.dtype)
        value = F._wrap(lazy.const_node(F._node(value), target.dtype, (), target.device))
    mutation.inplace(target, "__setitem__", lambda t: index_put(t, flat, value, False))


def _fit(values, shape: tuple[int, ...]):
    """``values`` broadcast to an index's result ``shape``, or PyTorch's error."""
    try:
        return mutation._fit_value(values, tuple(shape), "index_put_")
    except ShapeError:
        raise ShapeError(
            f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to indexing result "
            f"of shape {list(shape)}"
        ) from None


def _is_mask_fill(index, value) -> bool:
    """PyTorch's index_put_ hands a one-element value and a single bool mask to ``masked_fill_``, which
    converts the value's dtype; every other write of a tensor needs the target's dtype."""
    items = index if isinstance(index, tuple) else (index,)
    indices = [i for i in items if isinstance(i, (_tensor.Tensor, list, np.ndarray))]
    if value.numel() != 1 or len(indices) != 1:
        return False
    mask = indices[0]
    if isinstance(mask, _tensor.Tensor):
        return mask.dtype is T.bool_
    return np.asarray(mask).dtype == np.bool_


def _dtype_mismatch(target, values) -> RuntimeError:
    return RuntimeError(
        "Index put requires the source and destination dtypes match, got "
        f"{mutation.torch_name(target.dtype)} for the destination and {mutation.torch_name(values.dtype)} for the source."
    )


def _refuse_byte_mask_fill(op: str, index, value) -> None:
    """PyTorch writes a single value (a scalar or 0-d tensor) through a mask with ``masked_fill_``,
    which takes bool masks alone: a uint8 index then fails, while a value of several elements
    goes through ``index_put_``, which reads the uint8 tensor as a (deprecated) mask."""
    if isinstance(value, _tensor.Tensor) and value.ndim:
        return
    items = index if isinstance(index, tuple) else (index,)
    # a 0-dim byte index with a number is a new dim of 1 or 0 (PyTorch writes it through index_put_)
    scalar_mask = not isinstance(value, _tensor.Tensor)
    if any(isinstance(i, _tensor.Tensor) and i.dtype is T.uint8 and (i.ndim or not scalar_mask) for i in items):
        raise RuntimeError(
            f"'{op}': masked_fill_ only supports boolean masks, but got mask with dtype unsigned char (uint8)"
        )


def index_put_(target, indices, values, accumulate: bool = False):
    """``target[indices] = values`` (``+=`` with ``accumulate``, repeated indices summed in index order); returns ``target``."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): indices must be a tuple of tensors, got {type(indices).__name__}")
    mutation.refuse_operand_overlap(target, (values, *indices), same_ok=False)
    _refuse_byte_mask_fill("index_put_", tuple(indices), values)
    if isinstance(values, _tensor.Tensor) and values.dtype is not target.dtype:
        raise _dtype_mismatch(target, values)
    if not indices:  # PyTorch fails too, with an internal message
        raise RuntimeError("index_put_(): at least one index must be provided")
    flat = plan("index_put_", target.shape, tuple(indices))
    # float16 with accumulate rounds after each add, as PyTorch's CPU index_put_ (2048 + 1 + 1 = 2048)
    return mutation.inplace(target, "index_put_", lambda t: index_put(t, flat, values, accumulate, wide=False))


# ---------------------------------------------------------------------- dim-wise ops


def _dim_plan(op: str, input, dim: int, index, negative: bool = False) -> tuple[int, np.ndarray]:
    """(dim, positions) for gather and scatter: the flat position in ``input`` that ``index`` names along ``dim``."""
    torch_op = "gather" if op.startswith("gather") else "scatter"  # the op PyTorch's words name
    if not isinstance(index, _tensor.Tensor):
        raise TypeError(f"'{op}': index must be an int64 tensor, got {type(index).__name__}")
    # PyTorch's RuntimeError (DTypeError is one, and a TypeError); an empty index of any dtype passes, as there
    if index.numel() and index.dtype not in (T.int64, T.int32):
        raise DTypeError(f"{torch_op}(): Expected dtype int32/int64 for index (got {index.dtype.name})")
    if index.numel() == 0:  # PyTorch checks nothing more of an empty index: it names no position
        return lazy.normalize_dim(op, dim, input.ndim), np.zeros(index.shape, np.int64)
    # a 0-dim tensor counts as one of shape (1,), as in PyTorch
    in_shape, ix_shape = input.shape or (1,), index.shape or (1,)
    if len(ix_shape) != len(in_shape):
        raise RuntimeError(
            f"'{op}': Index tensor must have the same number of dimensions as "
            f"{'input' if torch_op == 'gather' else 'self'} tensor (index: {index.ndim} dims, input: {input.ndim})"
        )
    d = lazy.normalize_dim(op, dim, input.ndim)
    for k in range(len(ix_shape)):
        if k != d and ix_shape[k] > in_shape[k]:
            words = f"expected index {list(index.shape)} to be no larger than self {list(input.shape)} apart from dimension {d}"
            if torch_op == "gather":
                raise RuntimeError(f"'{op}': Size does not match at dimension {k} {words}")
            raise RuntimeError(f"'{op}': E{words[1:]}")
    idx = index.numpy().astype(np.int64).reshape(ix_shape)
    size = in_shape[d]
    bad = ((idx < -size) if negative else (idx < 0)) | (idx >= size)
    if bad.any():
        raise RuntimeError(f"'{op}': index {int(idx[bad][0])} is out of bounds for dimension {d} with size {size}")
    idx = np.where(idx < 0, idx + size, idx)
    strides = np.array([math.prod(in_shape[k + 1 :]) for k in range(len(in_shape))], dtype=np.int64)
    grids = np.indices(idx.shape, dtype=np.int64)
    grids[d] = idx
    return d, np.tensordot(strides, grids, axes=1).astype(np.int64).reshape(index.shape)


def gather(input, dim: int, index, *, sparse_grad: bool = False):
    """``out[i][j][k] = input[index[i][j][k]][j][k]`` (dim 0), as torch.gather; differentiable in ``input``.

    ``sparse_grad`` is accepted for PyTorch's signature; the gradient is dense either way.
    """
    if isinstance(index, _tensor.Tensor) and index.numel() == 0:  # PyTorch checks nothing of an empty index
        return take_positions(input, np.zeros(tuple(index.shape), dtype=np.int64))
    _, flat = _dim_plan("gather", input, dim, index)
    return autograd.show(take_positions(input, flat), "GatherBackward0", (autograd.edge(input),))


def take_along_dim(input, indices, dim: int | None = None):
    """``gather`` with ``indices`` broadcast against ``input`` outside ``dim``, as torch.take_along_dim.

    Negative indices count from the end; with ``dim=None``, of both flattened.
    """
    if dim is None:
        return take_along_dim(F.reshape(input, -1), F.reshape(indices, -1), 0)
    if input.ndim == 0:
        raise IndexError(f"'take_along_dim': Dimension specified as {dim} but tensor has no dimensions")
    if indices.ndim != input.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{input.ndim} dimensions for input, and {indices.ndim} dimensions for indices"
        )
    if indices.dtype is not T.int64:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be Long but got {mutation.torch_name(indices.dtype)}"
        )
    d = lazy.normalize_dim("take_along_dim", dim, input.ndim)
    outside = lazy.broadcast_shapes(
        "take_along_dim",
        tuple(1 if k == d else s for k, s in enumerate(input.shape)),
        tuple(1 if k == d else s for k, s in enumerate(indices.shape)),
    )
    in_shape = tuple(input.shape[d] if k == d else s for k, s in enumerate(outside))
    ix_shape = tuple(indices.shape[d] if k == d else s for k, s in enumerate(outside))
    src = F.expand(input, *in_shape) if in_shape != input.shape else input
    idx = F.expand(indices, *ix_shape) if ix_shape != indices.shape else indices
    _, flat = _dim_plan("take_along_dim", src, d, idx, negative=True)
    out = take_positions(src, flat)
    if out._ctx is not None:  # PyTorch's: input.expand(...).gather(dim, indices), an expand even of the same shape
        expanded = autograd.edge(input)
        expanded = expanded if expanded[0] is None else (autograd.GraphNode("ExpandBackward0", (expanded,)), 0)
        autograd.show(out, "GatherBackward0", (expanded,))
    return out


def index_select(input, dim: int, index):
    """The slices of ``input`` along ``dim`` at the positions of the 1-D ``index``, as torch.index_select."""
    if not isinstance(index, _tensor.Tensor):
        raise TypeError(f"index_select(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype not in (T.int64, T.int32):
        raise RuntimeError(f"index_select(): Expected dtype int32 or int64 for index, got {index.dtype.name}")
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got {index.ndim} dims")
    d = lazy.normalize_dim("index_select", dim, input.ndim)
    values = index.numpy().reshape(-1).astype(np.int64)
    if input.ndim == 0:  # PyTorch: a scalar takes one index, 0, and stays a scalar
        if values.size != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {values.size} value(s)")
        if values[0] != 0:
            raise IndexError(f"'index_select': index {int(values[0])} is out of range for a 0-dim tensor")
        return take_positions(input, np.zeros((), np.int64))
    size = input.shape[d]
    bad = (values < 0) | (values >= size)
    if bad.any():
        raise RuntimeError(
            f"'index_select': index {int(values[bad][0])} is out of bounds for dimension {d} with size {size}"
        )
    out = take_positions(input, plan("index_select", input.shape, (slice(None),) * d + (values,)))
    return autograd.show(out, "IndexSelectBackward0", (autograd.edge(input),))  # PyTorch's node


def scatter_(target, dim: int, index, src=None, value=None, reduce=None):
    """``target[index[i][j]][j] = src[i][j]`` (dim 0), as Tensor.scatter_ (repeated positions: the last wins).

    ``reduce='add'`` or ``'multiply'`` combines instead, in index order (float16 in float32, rounded
    once, as PyTorch's CPU); PyTorch has no gradient for it, nor has vkml.
    """
    mutation.refuse_operand_overlap(target, (index, src), same_ok=False)
    if reduce is not None and isinstance(src, _tensor.Tensor) and not _WARNED["scatter reduce"]:
        _WARNED["scatter reduce"] = True  # PyTorch warns once per process, before it checks the argument
        warnings.warn(
            "The reduce argument of vkml.scatter with Tensor src is deprecated and will be removed in a future "
            "PyTorch release. Use vkml.scatter_reduce instead for more reduction options.",
            UserWarning,
            stacklevel=3,
        )
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("scatter(): reduce argument must be either add or multiply.")
    d, flat = _dim_plan("scatter_", target, dim, index)
    if flat.size == 0:
        if isinstance(src, _tensor.Tensor):
            _same_dtype("scatter", target, src)
        return target
    if src is None or not isinstance(src, _tensor.Tensor):
        value = lazy.fill_value("scatter_", value if src is None else src, target.dtype)
        src = F._wrap(lazy.const_node(F._node(value), target.dtype, (), target.device))
    else:
        _same_dtype("scatter", target, src)
        src = _leading(src, flat.shape, target.shape, d)
    if reduce is not None:
        return mutation.inplace(target, "scatter_", lambda t: _index_ops.scatter_with_reduce(t, flat, src, reduce))
    return mutation.inplace(target, "scatter_", lambda t: index_put(t, flat, src, False))


_WARNED = {"scatter reduce": False}


def _same_dtype(op: str, target, src) -> None:
    if src.dtype is not target.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")


def scatter_add_(target, dim: int, index, src):
    """``target[index[i][j]][j] += src[i][j]`` (dim 0), as Tensor.scatter_add_: repeated positions add in index order."""
    mutation.refuse_operand_overlap(target, (index, src), same_ok=False)
    _same_dtype("scatter", target, src)  # PyTorch's words for scatter_add too
    d, flat = _dim_plan("scatter_add_", target, dim, index)
    if flat.size == 0:
        return target
    values = _leading(src, flat.shape, target.shape, d)
    return mutation.inplace(target, "scatter_add_", lambda t: index_put(t, flat, values, True))


def _leading(src, shape: tuple[int, ...], target_shape: tuple[int, ...] = (), dim: int = 0):
    """The part of ``src`` that an index of ``shape`` pairs with (scatter reads src[:i, :j, ...])."""
    if src.shape == tuple(shape):
        return src
    if src.ndim != len(shape) or any(a < b for a, b in zip(src.shape, shape)):
        raise RuntimeError(
            f"'scatter': Expected index {list(shape)} to be no larger than self {list(target_shape)} apart from "
            f"dimension {dim} and to be no larger size than src {list(src.shape)}"
        )
    return src[tuple(slice(0, s) for s in shape)]


def _scatter_edges(input, dim, index, src=None, value=None, *, reduce=None) -> tuple | None:
    """PyTorch's ``scatter`` node's edges: to ``input`` and a tensor ``src`` (``ScatterBackward0``), to
    ``input`` alone for a number (``ScatterBackward1``); a ``reduce=`` keeps vkml's nodes (None)."""
    if reduce is not None:
        return None
    tensor_src = isinstance(src, F._tensor.Tensor)
    return (autograd.edge(input), autograd.edge(src)) if tensor_src else (autograd.edge(input),)


@autograd.shown_as(
    lambda input, dim, index, src=None, value=None, **k: (
        "ScatterBackward0" if isinstance(src, F._tensor.Tensor) else "ScatterBackward1"
    ),
    _scatter_edges,
)
def scatter(input, dim: int, index, src=None, value=None, *, reduce=None):
    """``input`` with ``src`` (a tensor or a number) written at ``index`` along ``dim``, as torch.scatter."""
    return scatter_(F.clone(input), dim, index, src, value, reduce)


@autograd.shown_as("ScatterAddBackward0", lambda input, dim, index, src: (autograd.edge(input), autograd.edge(src)))
def scatter_add(input, dim: int, index, src):
    """Out-of-place ``scatter_add_``, as torch.scatter_add: repeated positions add in index order after the old value."""
    return scatter_add_(F.clone(input), dim, index, src)


def nonzero(input, *, as_tuple: bool = False):
    """The indices of the nonzero elements, one row each (int64), as torch.nonzero.

    With ``as_tuple``, one tensor per dim. The input is read back (the result's shape depends on it).
    """
    values = input.numpy()
    if as_tuple:
        if values.ndim == 0:  # PyTorch reads a 0-dim tensor as 1-D here
            values = values.reshape(1)
        return tuple(F._from_numpy(a.astype(np.int64), input.device) for a in np.nonzero(values))
    return F._from_numpy(np.argwhere(values).astype(np.int64), input.device)


# Last: loaded once this module's names exist (docs/architecture.md, "Imports and the load order").
from . import index_ops as _index_ops  # noqa: E402
from . import mutation  # noqa: E402
