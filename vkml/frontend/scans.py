"""Scans with PyTorch's names: cumsum, cumprod, cummax, cummin, logcumsumexp over one dim.

The order is fixed by the length n of the scanned dim alone (DESIGN.md section 4): the
Hillis-Steele scan. With y0 = x and ⊕ the op's combine (left operand: the lower indices),

    y(k+1)[i] = y(k)[i - 2^k] ⊕ y(k)[i]   for i >= 2^k,   y(k+1)[i] = y(k)[i]   for i < 2^k,

for k = 0, 1, ..., ceil(log2 n) - 1; the result is the last y. Each step is one elementwise
combine of the tensor with a shifted slice of itself (views and ``cat``, no loop over the row):
every element of a step is computed in parallel, and the same bits come out on every device
and for every layout. The identity never enters a combine (a cumsum of -0.0 stays -0.0).
Autograd differentiates each scan through the slices, ``cat`` and combines it is built of.
"""

from __future__ import annotations

from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as G
from ..ops.cast import work_dtype
from . import autograd, return_types
from . import operators as F
from .creation import arange
from .exports import Export
from .statistics import dim_or_axis

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("cummax", method=True),
    Export("cummin", method=True),
    Export("cumprod", method=True, inplace=True),
    Export("cumsum", method=True, inplace=True),
    Export("logcumsumexp", method=True),
)


def _narrow(x, dim: int, start: int, length: int):
    return x[(slice(None),) * dim + (slice(start, start + length),)]


def hillis_steele(parts: tuple, dim: int, combine) -> tuple:
    """The scan of the tensors ``parts`` (one value per element, e.g. (values, indices)) along ``dim``.

    ``combine(left, right)`` takes and returns tuples like ``parts``; ``left`` holds the lower indices.
    """
    n = parts[0].shape[dim]
    step = 1
    while step < n:
        lo = tuple(_narrow(p, dim, 0, n - step) for p in parts)
        hi = tuple(_narrow(p, dim, step, n - step) for p in parts)
        both = combine(lo, hi)
        parts = tuple(F.cat([_narrow(p, dim, 0, step), c], dim) for p, c in zip(parts, both))
        step *= 2
    return parts


def _scan_dim(op: str, input, dim, axis) -> tuple:
    node = F._tensor_node(op, input)
    dim = dim_or_axis(op, dim, axis)
    if dim is None:
        raise TypeError(f"'{op}': missing the required argument 'dim'")
    return node, lazy.normalize_dim(op, dim, len(node.shape))


def _accumulating(op: str, input, dim, dtype, axis, combine):
    node, d = _scan_dim(op, input, dim, axis)
    F._refuse_int_dtype_under_grad(input, dtype)
    x = F.cast(input, dtype) if dtype is not None else input
    out_dtype = x.dtype
    if dtype is None and not out_dtype.is_float:
        out_dtype = T.int64  # PyTorch: integer and bool scans give int64 (unless dtype= says otherwise)
    work = T.float32 if out_dtype in (T.float16, T.bfloat16) else out_dtype  # adds in float32, rounds once
    narrow_product = op == "cumprod" and work is not out_dtype and node.shape
    source = x
    if narrow_product:  # one op for autograd: PyTorch's gradient formula in the narrow dtype (below)
        x = x.detach()
    x = F.cast(x, work)
    if not node.shape:
        return F.cast(x, out_dtype)
    (out,) = hillis_steele((x,), d, lambda lo, hi: (combine(lo[0], hi[0]),))
    out = F.cast(out, out_dtype)
    if narrow_product:
        out = autograd.record("narrow_cumprod", (source,), out, {"dim": d})
    return out


def _reversed_cumsum(w, dim: int):
    return F.flip(cumsum(F.flip(w, (dim,)), dim), (dim,))


def _grad_narrow_cumprod(c):
    """PyTorch's cumprod_backward of a float16/bfloat16 cumprod, each op in that dtype (rounded as PyTorch's
    CPU ops round): without a zero, reversed_cumsum(output·g) / input; with zeros, the part before each
    slice's first zero that way, the first zero's own from the products after it, and 0 after it."""
    (x,) = c.inputs
    dim, g, y = c.attrs["dim"], c.g, c.output
    if x.numel() <= 1 or x.shape[dim] == 1:
        return (g,)
    w = y * g
    is_zero = x == 0
    if not bool(is_zero.any()):
        return (F.div(_reversed_cumsum(w, dim), x),)
    zeros_so_far = cumsum(is_zero, dim)
    before = zeros_so_far == 0
    grad = F.where(before, F.div(_reversed_cumsum(F.masked_fill(w, ~before, 0.0), dim), x), 0.0)
    upto_second = zeros_so_far == 1
    first_zero_index = F.max(upto_second.to(T.int32), dim, keepdim=True)[1]
    positions = F.reshape(arange(x.shape[dim], device=x.device), *[-1 if i == dim else 1 for i in range(x.ndim)])
    first_zero = (positions == first_zero_index) & upto_second
    between = upto_second & ~first_zero
    after_products = cumprod(F.masked_fill(x, ~between, 1.0), dim) * F.masked_fill(g, ~upto_second, 0.0)
    previous = c.F.gather(y, dim, F.clamp(first_zero_index - 1, min=0).to(T.int64))
    previous = F.masked_fill(previous, first_zero_index == 0, 1.0)
    at_first_zero = F.sum(after_products, dim, keepdim=True) * previous
    return (F.where(first_zero, at_first_zero, grad),)


G.RULES["narrow_cumprod"] = _grad_narrow_cumprod


@autograd.shown_as("CumsumBackward0", autograd.input_edge)
def cumsum(input, dim=None, *, dtype=None, axis=None):
    """Running sums along ``dim`` in the Hillis-Steele order (module docstring); int32 and bool give int64.

    ``dtype`` converts the input first, as PyTorch. float16 adds in float32 and rounds each
    result once. Example: ``vkml.cumsum(vkml.tensor([1, 2, 3]), 0)`` is [1, 3, 6].
    """
    return _accumulating("cumsum", input, dim, dtype, axis, F.add)


@autograd.shown_as("CumprodBackward0", autograd.input_edge)
def cumprod(input, dim=None, *, dtype=None, axis=None):
    """Running products along ``dim`` in the Hillis-Steele order (module docstring); int32 and bool give int64.

    ``dtype`` converts the input first, as PyTorch. float16 multiplies in float32 and rounds
    each result once.
    """
    return _accumulating("cumprod", input, dim, dtype, axis, F.mul)


def _running_extreme(op: str, input, dim, axis, later_wins):
    node, d = _scan_dim(op, input, dim, axis)
    if node.dtype is T.bool_:  # compared as 0 and 1, given back as bool
        values, indices = _running_extreme(op, F.cast(input, T.int32), d, None, later_wins)
        return F.cast(values, T.bool_), indices
    if not node.shape:
        return input, F._wrap(lazy.const_node(0, T.int64, (), node.device))
    n = node.shape[d]
    shape = [1] * len(node.shape)
    shape[d] = n
    index = F.expand(F.reshape(arange(n, dtype=T.int64, device=node.device), *shape), *node.shape)
    is_float = node.dtype.is_float

    def combine(lo, hi):
        (va, ia), (vb, ib) = lo, hi
        take = later_wins(vb, va)
        if is_float:
            # PyTorch: a NaN wins and stays; the last NaN's index is the result's
            take = F.logical_or(F.ne(vb, vb), F.logical_and(F.eq(va, va), take))
        return F.where(take, vb, va), F.where(take, ib, ia)

    values, indices = hillis_steele((input, index), d, combine)
    return values, indices


@autograd.shown_as("CummaxBackward0", autograd.input_edge)
def cummax(input, dim=None, *, axis=None):
    """(values, indices) of the running maximum along ``dim``, as ``vkml.return_types.cummax``.

    As PyTorch: of equal values the later index wins; a NaN wins and stays, with the index of
    the last NaN so far. The values' gradient goes to the element the index names.
    """
    values, indices = _running_extreme("cummax", input, dim, axis, F.ge)
    return return_types.cummax(values, indices)


@autograd.shown_as("CumminBackward0", autograd.input_edge)
def cummin(input, dim=None, *, axis=None):
    """(values, indices) of the running minimum along ``dim``, as ``vkml.return_types.cummin``.

    As PyTorch: of equal values the later index wins; a NaN wins and stays, with the index of
    the last NaN so far.
    """
    values, indices = _running_extreme("cummin", input, dim, axis, F.le)
    return return_types.cummin(values, indices)


def _log_add_exp(a, b):
    # m + log(exp(a - m) + exp(b - m)), m = max(a, b) made 0 where it is ±inf: two -inf give
    # log(0) = -inf, a +inf gives +inf, a NaN stays NaN, and no inf - inf makes a NaN gradient.
    m = F.maximum(a, b)
    m = F.where(F.eq(F.abs(m), float("inf")), 0.0, m)
    return F.log(F.exp(a - m) + F.exp(b - m)) + m


@autograd.shown_as("LogcumsumexpBackward0", autograd.input_edge)
def logcumsumexp(input, dim=None, *, axis=None):
    """log(cumsum(exp(x))) along ``dim``, each step a shifted log-add-exp (Hillis-Steele order).

    Float dtypes only (PyTorch's NotImplementedError otherwise); float16 computes in float32
    and rounds once. log(exp(a - m) + exp(b - m)) + m with m = max(a, b): within a few ulp of
    PyTorch's log1p form for results away from 0, within 2^-23 absolutely near 0.
    """
    node, d = _scan_dim("logcumsumexp", input, dim, axis)
    if not node.dtype.is_float:
        raise NotImplementedError(f"'logcumsumexp': not implemented for dtype {node.dtype.name}")
    x = F.cast(input, work_dtype(node.dtype))
    if not node.shape:
        return input
    (out,) = hillis_steele((x,), d, lambda lo, hi: (_log_add_exp(lo[0], hi[0]),))
    return F.cast(out, node.dtype)
