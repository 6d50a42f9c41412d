"""Searching with PyTorch's names: searchsorted, bucketize, isin.

Each runs as device kernels (written in the DSL, vkml/dsl/kernel.py); nothing is read back to the
host except ``searchsorted``'s ``sorter``, whose range PyTorch checks too.

**Binary search** is PyTorch's own loop, one invocation per value: ``lower_bound`` moves right
while ``!(seq[mid] >= v)``, ``upper_bound`` while ``!(seq[mid] > v)``, so even an unsorted or
NaN-holding sequence gives PyTorch's answer. ``isin`` sorts the test elements (sorting.py) and
searches each element twice.
"""

from __future__ import annotations

import numpy as np

from .. import dsl
from ..dsl.kernel import kernel
from ..graph import build as lazy
from ..ir import types as T
from ..ops.promotion import result_type
from . import operators as F
from .exports import Export
from .sorting import grid_for, invocation, key_dtype, sorted_positions, take_sorted

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("searchsorted"),
    Export("bucketize"),
    Export("isin"),
)


def _make_search(right: bool, with_sorter: bool, nan_last: bool):
    def outputs(seq, values, *rest):
        return (values.shape, T.int64)

    def body(seq, values, sorter, out):
        e = invocation()
        n, m = seq.shape[1], values.shape[1]
        with dsl.if_(e < out.numel):
            r = e / m
            v = values[e]
            base = r * n

            def trip(t, start, end):
                go = start < end
                mid = start + ((end - start) >> 1)
                at = base + dsl.where(go, mid, 0)  # a finished search (mid may be n) reads slot 0, unused
                if sorter is not None:
                    at = base + dsl.bitcast(dsl.convert(sorter[at], T.int32), T.uint32)
                mid_val = seq[at]
                # PyTorch's loops: lower_bound moves right while !(mid >= v), upper_bound while !(mid > v)
                above = (mid_val > v) if right else (mid_val >= v)
                if nan_last and seq.dtype.is_float:  # isin's sorted tests: NaN after every value
                    above = above | dsl.isnan(mid_val)
                moves = ~above
                start2 = dsl.where(go & moves, mid + 1, start)
                end2 = dsl.where(go & ~moves, mid, end)
                return start2, end2

            trips = n.bit_length() + 1  # a binary search over n slots ends within floor(log2 n) + 1 trips
            start, _ = dsl.loop(0, trips, 1, (dsl.const(0, T.uint32), dsl.const(n, T.uint32)), trip)
            out[e] = dsl.convert(dsl.bitcast(start, T.int32), T.int64)

    name = "searchsorted_" + ("right" if right else "left") + ("_nan_last" if nan_last else "")
    if with_sorter:

        @kernel(outputs=outputs, grid=lambda seq, values, sorter: grid_for(values.numel), name=name + "_sorter")
        def search_sorter(seq, values, sorter, out):
            body(seq, values, sorter, out)

        return search_sorter

    @kernel(outputs=outputs, grid=lambda seq, values: grid_for(values.numel), name=name)
    def search(seq, values, out):
        body(seq, values, None, out)

    return search


_SEARCHES = {
    (right, s, nan_last): _make_search(right, s, nan_last)
    for right in (False, True)
    for s in (False, True)
    for nan_last in (False, True)
}


def search_rows(seq2d, values2d, right: bool, sorter2d=None, nan_last: bool = False):
    """``nan_last``: NaN in the sequence counts as greater than every value (as the sort puts it).

    int64 (R, m): PyTorch's binary search of each row of ``values2d`` in the same row of ``seq2d``."""
    if seq2d.shape[1] == 0:
        return F._wrap(lazy.const_node(0, T.int64, values2d.shape, values2d.device))
    if values2d.numel() == 0:
        return F._wrap(lazy.const_node(0, T.int64, values2d.shape, values2d.device))
    if sorter2d is None:
        return _SEARCHES[right, False, nan_last](seq2d, values2d)
    return _SEARCHES[right, True, nan_last](seq2d, values2d, sorter2d)


def _search_dtype(op: str, a, b) -> T.DType:
    dims = [t.dtype for t in (a, b) if isinstance(t, F._tensor.Tensor)]
    scalars = [t for t in (a, b) if not isinstance(t, F._tensor.Tensor)]
    dtype = result_type(dims, [], scalars)
    if dtype is T.bool_:
        raise NotImplementedError(f"'{op}': not implemented for dtype bool")
    return key_dtype(dtype)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where ``input``'s values would go into ``sorted_sequence`` (its last dim) to keep it sorted.

    As torch.searchsorted: int64 positions (``out_int32=True``: int32).
    ``right=True`` or ``side='right'`` gives the last such position; ``sorter`` holds the indices
    that sort an unsorted sequence. A 1-D sequence serves every value; an N-D one pairs its rows
    with ``input``'s (same leading dims). Example: ``vkml.searchsorted(vkml.tensor([1, 3, 5]),
    vkml.tensor([3, 4]))`` is [1, 2].
    """
    op = "searchsorted"
    seq_node = F._tensor_node(op, sorted_sequence)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"'{op}': side can only be 'left' or 'right' but got {side!r}")
        if right and side == "left":
            raise RuntimeError(
                f"'{op}': side and right can't be set to opposites, got side of left while right was True"
            )
        right = side == "right"
    scalar = not isinstance(input, F._tensor.Tensor)
    if scalar and (isinstance(input, bool) or not isinstance(input, (int, float, np.number))):
        raise TypeError(f"'{op}': argument 'input' must be a Tensor or a number, got {type(input).__name__}")
    if not seq_node.shape:
        raise RuntimeError(f"'{op}': boundaries tensor should have positive dimension, but got 0 dimension")
    device = seq_node.device
    dtype = _search_dtype(op, sorted_sequence, input)
    values = input if not scalar else F._wrap(lazy.const_node(input, dtype, (), device))
    if not scalar:
        lazy.check_devices(op, [seq_node, values.node])
    if len(seq_node.shape) > 1:
        if values.ndim == 0:
            raise RuntimeError(
                f"'{op}': input value can be a scalar only when boundaries tensor dimension is 1, but we got "
                f"boundaries tensor dim({len(seq_node.shape)})"
            )
        if values.ndim != len(seq_node.shape) or values.shape[:-1] != seq_node.shape[:-1]:
            raise RuntimeError(
                f"'{op}': boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
                f"tensor and input value tensor must match, but we got boundaries tensor {list(seq_node.shape)} "
                f"and input value tensor {list(values.shape)}"
            )
    n = seq_node.shape[-1]
    if n == 0 or values.numel() == 0:  # nothing to search, or nothing to search for: all 0
        out = F._wrap(lazy.const_node(0, T.int64, values.shape, device))
        return F.cast(out, T.int32) if out_int32 else out
    seq2d = F.reshape(F.cast(sorted_sequence.detach(), dtype), -1, n)
    vals = F.cast(values.detach(), dtype)
    vals2d = F.reshape(vals, 1, -1) if len(seq_node.shape) == 1 else F.reshape(vals, -1, vals.shape[-1])
    sorter2d = None
    if sorter is not None:
        lazy.check_devices(op, [seq_node, F._tensor_node(op, sorter)])
        sorter2d = _checked_sorter(op, sorter, seq_node.shape, n)
    out = F.reshape(search_rows(seq2d, vals2d, bool(right), sorter2d), *values.shape)
    return F.cast(out, T.int32) if out_int32 else out


def _checked_sorter(op: str, sorter, shape, n: int):
    node = F._tensor_node(op, sorter)
    if node.dtype is not T.int64:
        raise RuntimeError(f"'{op}': sorter must be a tensor of long dtype, got {node.dtype.name}")
    if tuple(node.shape) != tuple(shape):
        raise RuntimeError(
            f"'{op}': boundary and sorter must have the same size, but got boundary tensor {list(shape)} "
            f"and got sorter tensor {list(node.shape)}"
        )
    values = sorter.numpy()  # PyTorch checks the range too
    if values.size and (values.min() < 0 or values.max() >= n):
        raise RuntimeError(f"'{op}': sorter index out of range")
    return F.reshape(sorter.detach(), -1, n)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each of ``input``'s values between the 1-D ``boundaries``, as torch.bucketize.

    That is ``searchsorted(boundaries, input, right=right)``.
    """
    node = F._tensor_node("bucketize", boundaries)
    if len(node.shape) != 1:
        raise RuntimeError(f"'bucketize': boundaries tensor must be 1 dimension, but got dim({len(node.shape)})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements`` (bool, ``elements``' shape), as torch.isin.

    One is a tensor; the other may be a Python number. Exact: ``test_elements`` is sorted and
    each element binary-searched (equal means ``==``: -0.0 is in [0.0], NaN is in nothing).
    ``invert=True`` negates; ``assume_unique`` only promises something, as in PyTorch.
    """
    op = "isin"
    if not isinstance(elements, F._tensor.Tensor) and not isinstance(test_elements, F._tensor.Tensor):
        raise TypeError(f"'{op}': expects a tensor for elements or test_elements, got two numbers")
    device = (elements if isinstance(elements, F._tensor.Tensor) else test_elements).device
    if _any_bool(elements, test_elements):
        raise RuntimeError(f"'{op}': unsupported input type bool (as PyTorch's isin)")
    dtype = _search_dtype(op, elements, test_elements)
    if isinstance(elements, F._tensor.Tensor) and isinstance(test_elements, F._tensor.Tensor):
        lazy.check_devices(op, [elements.node, test_elements.node])

    def as_tensor(x):
        if isinstance(x, F._tensor.Tensor):
            return F.cast(x.detach(), dtype)
        return F._wrap(lazy.const_node(x, dtype, (), device))

    values, tests = as_tensor(elements), as_tensor(test_elements)
    flat = F.reshape(tests, 1, -1)
    shape = values.shape
    if flat.shape[1] == 0 or values.numel() == 0:
        found = F._wrap(lazy.const_node(False, T.bool_, shape, device))
    else:
        sorted_tests = take_sorted(flat, sorted_positions(flat), flat.shape[1])
        probe = F.reshape(values, 1, -1)
        found = F.gt(
            search_rows(sorted_tests, probe, True, nan_last=True),
            search_rows(sorted_tests, probe, False, nan_last=True),
        )
        found = F.reshape(found, *shape)
    return F.logical_not(found) if invert else found


def _any_bool(a, b) -> bool:
    def is_bool(x):
        return x.dtype is T.bool_ if isinstance(x, F._tensor.Tensor) else isinstance(x, bool)

    return is_bool(a) or is_bool(b)
