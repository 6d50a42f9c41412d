"""Order statistics with PyTorch's names: kthvalue, median, nanmedian, mode, quantile, nanquantile.

These select by rank, exact and parallel. Along the selected dim of length n, element i's
stable rank is the number of elements that sort before it:

    rank[i] = #{j : x[j] < x[i]} + #{j < i : x[j] == x[i]},

with NaN sorting after every number and NaNs equal among themselves (PyTorch's sort order),
so the ranks are a permutation of 0 .. n-1: the inverse of vkml's stable sort's permutation
(vkml/frontend/sorting.py), which computes them in O(n log^2 n) device work a row. The k-th
smallest is the element whose rank is k - 1, taken as a tree sum of a one-hot selection (every
other slot adds -0.0, so the value's bits come through unchanged, NaN and -0.0 included), and
its gradient goes to that element, as PyTorch's. ``mode`` counts each value's run in the
sorted row with two binary searches.
"""

from __future__ import annotations

import math

import numpy as np

from ..graph import build as lazy
from ..ir import types as T
from . import autograd, searching, sorting
from . import operators as F
from .creation import arange, full_like
from .exports import Export
from .return_types import kthvalue as kthvalue_t
from .return_types import median as median_t
from .return_types import mode as mode_t
from .return_types import nanmedian as nanmedian_t

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("kthvalue", method=True),
    Export("median", method=True),
    Export("mode", method=True),
    Export("nanmedian", method=True),
    Export("nanquantile", method=True),
    Export("quantile", method=True),
)


def _isnan(x):
    return F.ne(x, x) if x.dtype.is_float else full_like(x, False, dtype=T.bool_)


def _last(input, d: int):
    """``input`` with dim ``d`` moved last (a view)."""
    if d == input.ndim - 1:
        return input
    return F.permute(input, *[k for k in range(input.ndim) if k != d], d)  # the other dims keep their order


def _ranks(x):
    """The stable rank of every element along the last dim (int64), in PyTorch's sort order."""
    n = x.shape[-1]
    rows = F.reshape(x, -1, n)
    if rows.shape[0] == 0:
        return F.cast(x, T.int64)  # no rows: an empty tensor of the right shape
    return F.reshape(F.cast(sorting.stable_ranks(rows), T.int64), *x.shape)


def _pick(x, ranks, k):
    """(values, indices) of the elements whose rank is ``k`` (an int or an int64 tensor of the reduced shape)."""
    n = x.shape[-1]
    hit = F.eq(ranks, F.unsqueeze(k, -1) if not isinstance(k, int) else k)
    zero = -0.0 if x.dtype.is_float else 0
    values = F.sum(F.where(hit, x, zero), -1)  # one-hot: the other slots add -0.0 (or 0)
    if values.dtype is not x.dtype:
        values = F.cast(values, x.dtype)
    pos = arange(n, dtype=T.int64, device=x.device)
    indices = F.sum(F.where(hit, pos, 0), -1)
    return values, indices


def _equal_counts(x):
    """How often each element's value occurs along the last dim (int64); NaNs count as one value.

    The row sorted once, then each element's run found by two binary searches (NaN sorts last).
    """
    n = x.shape[-1]
    rows = F.reshape(x.detach(), -1, n)
    if rows.shape[0] == 0:
        return F.cast(x, T.int64)  # no rows: an empty tensor of the right shape
    if rows.dtype is T.float16:
        rows = F.cast(rows, T.float32)  # exact; the searches compare in float32
    ordered = sorting.take_sorted(rows, sorting.sorted_positions(rows), n)
    counts = searching.search_rows(ordered, rows, True, nan_last=True) - searching.search_rows(
        ordered, rows, False, nan_last=True
    )
    if rows.dtype.is_float:  # a NaN's run: every NaN of the row
        nan = _isnan(rows)
        counts = F.where(nan, F.sum(nan, -1, keepdim=True), counts)
    return F.reshape(counts, *x.shape)


def _finish(values, indices, d: int, keepdim: bool, kind):
    if keepdim:
        values, indices = F.unsqueeze(values, d), F.unsqueeze(indices, d)
    return kind(values, indices)


def _prepare(op: str, input, dim):
    node = F._tensor_node(op, input)
    if node.dtype is T.bool_ and op != "mode":
        raise NotImplementedError(f"'{op}': not implemented for dtype bool")
    d = lazy.normalize_dim(op, dim, len(node.shape))
    x = input if node.shape else F.reshape(input, 1)
    n = x.shape[d] if x.ndim else 1
    if n == 0:
        raise IndexError(f"'{op}': Expected reduction dim {d} to have non-zero size (shape {tuple(node.shape)})")
    return x, d, n


@autograd.shown_as("KthvalueBackward0", autograd.input_edge)
def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the ``k``-th smallest element along ``dim`` (k from 1), as PyTorch's.

    Exact, by stable rank (module docstring). NaN sorts last. Of equal values the index is
    the one whose stable rank is k - 1 (PyTorch's quickselect names any of them).
    """
    x, d, n = _prepare("kthvalue", input, dim)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"'kthvalue': argument 'k' must be an int, got {k!r}")
    if not 1 <= k <= n:
        raise RuntimeError(f"'kthvalue': selected number k out of range for dimension {d} (k={k}, size {n})")
    xl = _last(x, d)
    values, indices = _pick(xl, _ranks(xl), int(k) - 1)
    if not input.ndim:
        return kthvalue_t(F.reshape(values, *()), F.reshape(indices, *()))
    return _finish(values, indices, d, keepdim, kthvalue_t)


def _median(op: str, input, dim, keepdim: bool, skip_nan: bool, kind):
    if dim is None:
        node = F._tensor_node(op, input)
        flat = F.reshape(input, -1)
        if node.numel == 0:  # PyTorch: NaN (float) for the median of no elements
            if not node.dtype.is_float:
                raise RuntimeError(f"'{op}': the median of an empty {node.dtype.name} tensor is undefined")
            return F.sum(flat) * float("nan")
        value = _median(op, flat, 0, False, skip_nan, kind).values
        # PyTorch's median()/nanmedian() of all share the gradient evenly among the elements equal to
        # the result (the NaNs when it is NaN), as max() of all: its rule
        return F.autograd.record("extreme_of_all", (input,), value.detach(), {})
    x, d, n = _prepare(op, input, dim)
    xl = _last(x, d)
    nan = _isnan(xl)
    count = F.sum(F.logical_not(nan), -1)  # the elements that are numbers
    if skip_nan:
        # the lower median of the numbers; all NaN gives rank 0, the first NaN
        k = _int_half(F.maximum(count - 1, 0))
    else:
        # any NaN: the first NaN (its rank is the count of numbers); else the lower median
        k = F.where(F.lt(count, n), count, (n - 1) // 2)
    values, indices = _pick(xl, _ranks(xl), k)
    if not input.ndim:
        return kind(F.reshape(values, *()), F.reshape(indices, *()))
    return _finish(values, indices, d, keepdim, kind)


def _int_half(c):
    # floor(c / 2) for c >= 0 < 2^24: exact through float32 (c / 2 is exact, then truncated)
    return F.cast(F.cast(c, T.float32) * 0.5, T.int64)


def _median_node(op: str):
    """``MedianBackward0`` of all elements, ``MedianBackward1`` along a dim (PyTorch's two overloads)."""
    title = op.title()
    return lambda input, dim=None, *a, axis=None, **k: f"{title}Backward{int(dim is not None or axis is not None)}"


@autograd.shown_as(_median_node("median"), autograd.input_edge)
def median(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The lower median (the ((n - 1) // 2)-th smallest), as PyTorch: of all elements when ``dim`` is None,
    else (values, indices) along ``dim``.

    A NaN in the row makes the result NaN (index: the first NaN). Exact, by stable rank.
    """
    keepdim = F._keepdim_or_keepdims("median", keepdim, keepdims)
    return _median("median", input, F._dim_or_axis("median", dim, axis), keepdim, False, median_t)


@autograd.shown_as(_median_node("nanmedian"), autograd.input_edge)
def nanmedian(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``median`` of the elements that are not NaN; all-NaN gives NaN (index: the first NaN)."""
    keepdim = F._keepdim_or_keepdims("nanmedian", keepdim, keepdims)
    return _median("nanmedian", input, F._dim_or_axis("nanmedian", dim, axis), keepdim, True, nanmedian_t)


@autograd.shown_as("ModeBackward0", autograd.input_edge)
def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along ``dim`` (of several, the smallest) and its
    last position, as PyTorch's. Exact: counts of equal elements from the row's stable sort.

    NaNs count as one value that sorts last. (PyTorch's result with NaN depends on how its
    unstable sort happens to place them: NaN for [nan, nan, 1], but 1 for [nan, 1, 1, nan, nan].)
    """
    x, d, n = _prepare("mode", input, dim)
    if x.dtype is T.bool_:  # counted as 0 and 1, given back as bool
        values, indices = mode(F.cast(input, T.int32), dim, keepdim)
        return mode_t(F.cast(values, T.bool_), indices)
    xl = _last(x, d)
    counts = _equal_counts(xl)  # how often each element's value occurs in its row
    top = F.eq(counts, F.amax(counts, -1, keepdim=True))
    wide = T.float32 if xl.dtype in (T.float16, T.bfloat16) else xl.dtype
    big = math.inf if wide.is_float else np.iinfo(wide.np).max
    nan = _isnan(xl)
    numbers = F.logical_and(top, F.logical_not(nan))  # NaN sorts last: the smallest is a number if one is on top
    smallest = F.amin(F.where(numbers, F.cast(xl, wide), big), -1, keepdim=True)
    match = F.where(F.gt(F.sum(numbers, -1, keepdim=True), 0), F.eq(F.cast(xl, wide), smallest), nan)
    chosen = F.logical_and(top, match)
    pos = arange(n, dtype=T.int64, device=xl.device)
    indices = F.amax(F.where(chosen, pos, -1), -1)
    # the chosen element's own value, through a one-hot sum (its gradient goes to that element)
    hit = F.eq(pos, F.unsqueeze(indices, -1))
    values = F.sum(F.where(hit, xl, -0.0 if xl.dtype.is_float else 0), -1)
    values = F.cast(values, xl.dtype)
    if not input.ndim:
        return mode_t(F.reshape(values, *()), F.reshape(indices, *()))
    return _finish(values, indices, d, keepdim, mode_t)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op: str, input, q, dim, keepdim: bool, interpolation: str, skip_nan: bool):
    node = F._tensor_node(op, input)
    if node.dtype not in (T.float32, T.float64):  # PyTorch refuses float16 too
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")  # PyTorch's words
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got {interpolation}"
        )
    if isinstance(q, F._tensor.Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not node.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qs, q_dim = [float(v) for v in q.numpy().reshape(-1)], q.ndim == 1
        if not all(0.0 <= v <= 1.0 for v in qs):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    elif isinstance(q, (int, float)) and not isinstance(q, bool):
        qs, q_dim = [float(q)], False
    else:
        raise TypeError(f"'{op}': q must be a float or a tensor, got {q!r}")
    for v in qs:
        if not 0.0 <= v <= 1.0:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {v:g}")
    if dim is None:
        x, d = F.reshape(input, -1), 0
    else:
        x, d = input, lazy.normalize_dim(op, dim, len(node.shape))
        if not node.shape:
            x = F.reshape(input, 1)
    n = x.shape[d]
    if n == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    ft = node.dtype  # positions and weights in the input's float type, as PyTorch
    np_ft = np.float64 if ft is T.float64 else np.float32
    xl = _last(x, d)
    ranks = _ranks(xl)
    nan = _isnan(xl)
    count = F.sum(F.logical_not(nan), -1)
    has_nan = F.lt(count, n)
    # PyTorch's positions: q * (count - 1) in the input's float type, then truncated / rounded
    last = F.cast(F.maximum(count - 1, 0), ft) if skip_nan else float(n - 1)
    outs = []
    q_grad = isinstance(q, F._tensor.Tensor) and q.requires_grad
    for k, v in enumerate(qs):
        pos = F.mul(last, float(np_ft(v))) if skip_nan else full_like(count, float(np_ft(v) * np_ft(n - 1)), dtype=ft)
        below = F.cast(pos, T.int64)  # pos >= 0: truncation is floor
        weight = pos - F.cast(below, ft)
        above = below + F.cast(F.gt(weight, 0.0), T.int64)
        if interpolation == "lower":
            above = below
        elif interpolation == "higher":
            below = above
        elif interpolation == "nearest":  # round half to even, as torch.round
            odd = F.eq(below - _int_half(below) * 2, 1)
            up = F.logical_or(F.gt(weight, 0.5), F.logical_and(F.eq(weight, 0.5), odd))
            below = above = below + F.cast(up, T.int64)
        if not skip_nan:  # a NaN in the row: pick the first NaN (rank ``count``), the result is NaN
            below, above = F.where(has_nan, count, below), F.where(has_nan, count, above)
        lo, _ = _pick(xl, ranks, below)
        hi, _ = _pick(xl, ranks, above)
        if interpolation in ("linear", "midpoint"):
            w = weight if interpolation == "linear" else full_like(weight, 0.5)
            # torch.lerp's two forms, chosen by the weight
            out = F.where(F.lt(w, 0.5), lo + w * (hi - lo), hi - (hi - lo) * (1.0 - w))
        else:
            out = lo
        if q_grad and interpolation == "linear":
            out = _quantile_q_path(out, q, k, lo, hi, last)
        if keepdim and node.shape:
            out = F.unsqueeze(out, d) if dim is not None else F.reshape(out, *([1] * len(node.shape)))
        elif keepdim:  # a 0-d input keeps its 0 dims
            out = F.reshape(out, ())
        outs.append(F.cast(out, node.dtype))
    if not q_dim:
        return outs[0]
    return F.cat([F.unsqueeze(o, 0) for o in outs], 0)


def _quantile_q_path(out, q, k: int, lo, hi, last):
    """``out`` ('linear') with PyTorch's gradient path to the k-th ``q``: d out / d q = (hi - lo) · (n - 1)
    (the lerp's weight is q · (n - 1) less its floor; the other interpolations pick, and give q none).
    The values stay ``out``'s bits: the path adds q - q (+0) where ``out`` is not a zero."""
    qk = F.reshape(q, -1)[k]
    slope = F.mul(F.sub(hi, lo), last)
    slope = F.where(F.isfinite(slope), slope, 0.0)
    path = F.mul(F.sub(qk, qk.detach()), slope)
    return F.where(F.eq(out, 0), out, F.add(out, path))


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles along ``dim`` (every element when None), as PyTorch's ``torch.quantile``.

    Positions q * (n - 1) in float32, the two neighbours found exactly by stable rank, and
    torch.lerp's formula between them, each product and sum rounded (PyTorch's vectorised lerp
    fuses the multiply-add, so a result may differ from its by 1 ulp). A NaN in the row gives
    NaN. A 1-D ``q`` puts its dim first. float32 and float64 (positions in the input's type), as PyTorch.
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` of the elements that are not NaN (positions q * (count - 1)); all-NaN gives NaN."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)
