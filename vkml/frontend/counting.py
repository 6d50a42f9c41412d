"""Counting with PyTorch's names: unique, unique_consecutive, bincount, histc.

``unique``, ``unique_consecutive`` and ``bincount`` have results whose size depends on the
values, so, like PyTorch, they read the input back (one synchronisation) and work out the
groups on the host; the results are exact, so every device gives the same bits. bincount's
``weights`` are then added on the device in index order (PyTorch's CPU order). ``histc``'s
result size is known: it bins on the device, sorts the bin numbers and counts each bin by
binary search (vkml/frontend/sorting.py); only a ``min == max`` range reads the data's
extremes back, as PyTorch does.
"""

from __future__ import annotations

import numpy as np

from ..graph import build as lazy
from ..ir import types as T
from . import operators as F
from . import searching, sorting
from .creation import arange
from .exports import Export
from .indexing import scatter_add_positions

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("unique", method=True),
    Export("unique_consecutive", method=True),
    Export("bincount", method=True),
    Export("histc", method=True),
)


def _moved(array: np.ndarray, dim: int | None) -> np.ndarray:
    """The slices to compare as rows of a 2-D array: every element (dim None) or the slices along ``dim``."""
    if dim is None:
        return array.reshape(-1, 1)
    moved = np.moveaxis(array, dim, 0)
    return moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))


def _row_differs(rows: np.ndarray) -> np.ndarray:
    """Whether each row differs from the one before (the first: True); NaN equals nothing, as in PyTorch."""
    if rows.shape[0] == 0:
        return np.zeros(0, bool)
    differs = np.ones(rows.shape[0], bool)
    differs[1:] = ~np.all(rows[1:] == rows[:-1], axis=1) if rows.shape[1] else False
    return differs


def _groups(op: str, input, dim, sort: bool):
    """(values, inverse, counts) as numpy arrays: the groups of equal consecutive slices (after a stable sort)."""
    node = F._tensor_node(op, input)
    if dim is not None:
        dim = lazy.normalize_dim(op, dim, len(node.shape))
        if any(s == 0 for k, s in enumerate(node.shape) if k != dim):
            raise RuntimeError(
                f"'{op}': There are 0 sized dimensions, and they aren't selected, so unique cannot be applied "
                f"(shape {tuple(node.shape)}, dim {dim})"
            )
    array = input.numpy()
    if dim is None:
        array = array.reshape(-1)
        d = 0
    else:
        d = dim if array.ndim else 0
        array = array.reshape(1) if not array.ndim else array
    rows = _moved(array, d)
    if array.dtype == np.bool_:
        rows = rows.astype(np.int8)
    order = np.arange(rows.shape[0])
    if sort and rows.shape[0] > 1:
        # stable, lexicographic over the slice's elements (the first element most significant); NaN last
        order = np.lexsort(rows.T[::-1]) if rows.shape[1] else order
    starts = _row_differs(rows[order])
    group = np.cumsum(starts) - 1
    inverse = np.empty(rows.shape[0], np.int64)
    inverse[order] = group
    first = order[starts]  # of equal slices the first in sorted order stands for them (PyTorch: -0.0 vs 0.0)
    values = np.take(array, first, axis=d)
    bounds = np.flatnonzero(np.append(starts, True))
    counts = np.diff(bounds).astype(np.int64)
    if dim is None:
        inverse = inverse.reshape(node.shape)
    return values, inverse, counts


def _results(values, inverse, counts, device, return_inverse: bool, return_counts: bool):
    out = F._from_numpy(np.array(values, order="C"), device)  # (ascontiguousarray makes 0-d arrays 1-d)
    if not return_inverse and not return_counts:
        return out
    extra = []
    if return_inverse:
        extra.append(F._from_numpy(np.array(inverse, order="C"), device))
    if return_counts:
        extra.append(F._from_numpy(counts, device))
    return (out, *extra)


def _check_flags(op: str, **flags):
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"'{op}': argument '{name}' must be a bool, got {value!r}")


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002 - PyTorch's name
    """The distinct elements (or slices along ``dim``) of ``input`` in ascending order, as torch.unique.

    ``dim=None`` flattens; with ``return_inverse`` / ``return_counts`` the result is a tuple.
    Reads the input back (the result's size depends on it, as in PyTorch). NaNs are all distinct
    and sort last; -0.0 equals 0.0 (the first in order stands for both). ``sorted=False`` gives the
    sorted result too (PyTorch's CPU does as well). Not differentiable.
    Example: ``vkml.unique(vkml.tensor([2, 1, 2]))`` is [1, 2].
    """
    _check_flags("unique", sorted=sorted, return_inverse=return_inverse, return_counts=return_counts)
    values, inverse, counts = _groups("unique", input, dim, True)
    return _results(values, inverse, counts, input.device, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive elements (or slices) kept once, as torch.unique_consecutive.

    With ``return_inverse`` / ``return_counts`` the result is a tuple.
    Reads the input back, as PyTorch. NaN equals nothing, so each NaN is its own run.
    """
    _check_flags("unique_consecutive", return_inverse=return_inverse, return_counts=return_counts)
    values, inverse, counts = _groups("unique_consecutive", input, dim, False)
    return _results(values, inverse, counts, input.device, return_inverse, return_counts)


_INTEGERS = (T.int32, T.int64, T.int16, T.int8, T.uint8)


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in the 1-D ``input``, or its ``weights``' sums, as torch.bincount.

    ``input`` holds non-negative integers; counts are int64; the length is
    max(max(input) + 1, minlength).
    Reads ``input`` back (the length depends on it, as in PyTorch). float32 weights give float32
    sums, any other weights (converted exactly) float64 sums, as PyTorch; added on the device in
    index order.
    """
    op = "bincount"
    node = F._tensor_node(op, input)
    if node.dtype not in _INTEGERS:
        raise NotImplementedError(f"'{op}': not implemented for dtype {node.dtype.name}")
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)):
        raise TypeError(f"'{op}': argument 'minlength' must be an int, got {minlength!r}")
    if minlength < 0:
        raise RuntimeError(f"'{op}': minlength should be >= 0, got {minlength}")
    values = input.numpy().astype(np.int64) if len(node.shape) == 1 else None
    if values is None or (values.size and values.min() < 0):
        raise RuntimeError(f"'{op}': only supports 1-d non-negative integral inputs (got shape {tuple(node.shape)})")
    length = max(int(values.max()) + 1 if values.size else 0, int(minlength))
    if weights is None:
        return F._from_numpy(np.bincount(values, minlength=length).astype(np.int64), input.device)
    wnode = F._tensor_node(op, weights)
    lazy.check_devices(op, [node, wnode])
    if len(wnode.shape) != 1 or wnode.shape[0] != values.size:
        raise RuntimeError(
            f"'{op}': weights should be 1-d and have the same length as input, got {tuple(wnode.shape)} "
            f"for input {tuple(node.shape)}"
        )
    dtype = T.float32 if wnode.dtype is T.float32 else T.float64  # PyTorch's rule
    base = F._wrap(lazy.const_node(0, dtype, (length,), input.device))
    return scatter_add_positions(base, values, F.cast(weights.detach(), dtype))


def _histc_range(op: str, input, lo: float, hi: float) -> tuple[float, float]:
    if lo > hi:
        raise RuntimeError(f"'{op}': max must be larger than min, got min={lo} and max={hi}")
    if lo == hi and input.numel():
        # two scalars read back, as PyTorch's aminmax; NaN anywhere gives NaN: not finite, below
        lo, hi = F.amin(input.detach()).item(), F.amax(input.detach()).item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"'{op}': range of [{lo}, {hi}] is not finite")
    return lo, hi


def histc(input, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's argument names
    """A histogram of ``input`` with ``bins`` equal bins over [min, max], as torch.histc.

    Counts in ``input``'s float dtype. ``min == max`` (the default) takes the data's minimum and
    maximum.
    Bin of x: trunc((x - min) * bins / (max - min)) computed in ``input``'s dtype, each
    operation rounded (PyTorch's formula), x == max in the last bin; elements outside [min, max]
    and NaN are not counted. Exact counts (sorted bin numbers, counted by binary search).

    Divergence: where the formula overflows (min == max == the largest float, so the range is
    widened by 1 without effect) an element inside [min, max] goes to the bin nearest its NaN or
    infinite position, clamped; PyTorch's bin there is an undefined float-to-int conversion's
    (its own test checks only that every element is counted, as vkml does).
    """
    op = "histc"
    node = F._tensor_node(op, input)
    if not node.dtype.is_float:
        raise NotImplementedError(f"'{op}': not implemented for dtype {node.dtype.name}")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
        raise TypeError(f"'{op}': argument 'bins' must be an int, got {bins!r}")
    if bins <= 0:
        raise RuntimeError(f"'{op}': bins must be > 0, but got {bins}")
    lo, hi = _histc_range(op, input, float(min), float(max))
    dtype = node.dtype
    if node.numel == 0:
        return F._wrap(lazy.const_node(0, dtype, (int(bins),), node.device))
    # PyTorch's outer edges are linspace(min, max, bins + 1)'s ends: min and max in the input's
    # dtype; their difference too is rounded to that dtype
    left, right = dtype.np.type(lo), dtype.np.type(hi)
    width = float(right - left)
    x = F.reshape(input.detach(), -1)
    pos = F.cast(((x - float(left)) * float(bins)) / width, T.int64)  # each operation rounded to the dtype
    left, right = float(left), float(right)
    pos = F.where(F.eq(pos, int(bins)), int(bins) - 1, pos)
    # a range at the float's edge (min == max == the largest float) overflows the formula: an element
    # inside [min, max] is still counted, in the nearest bin (PyTorch counts it too)
    pos = F.clamp(pos, 0, int(bins) - 1)
    inside = F.logical_and(F.ge(x, left), F.le(x, right))  # False for NaN
    pos = F.where(inside, pos, int(bins))  # a bin past the last one collects what is not counted
    ordered = sorting.take_sorted(F.reshape(pos, 1, -1), sorting.sorted_positions(F.reshape(pos, 1, -1)), x.numel())
    probes = F.reshape(arange(int(bins) + 1, dtype=T.int64, device=node.device), 1, -1)
    starts = F.reshape(searching.search_rows(ordered, probes, False), -1)
    counts = starts[1:] - starts[:-1]
    return F.cast(counts, dtype)
