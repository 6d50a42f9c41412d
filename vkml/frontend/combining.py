"""Differences and products of arrays with PyTorch's names: diff, cross, linalg.cross, kron, block_diag, cdist.

Each is a composition of slices, broadcasting, elementwise ops, ``cat``/``pad`` and reductions,
so it runs on the device, fuses, and is differentiable through the ops it is built of.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import DTypeError, DTypeNotImplementedError
from ..graph import build as lazy
from ..ir import types as T
from ..ops.promotion import result_type
from . import operators as F
from .creation import zeros
from .exports import Export

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("diff", method=True),
    Export("cross", method=True),
    Export("kron", method=True),
    Export("block_diag"),
    Export("cdist"),
)


def _along(x, dim: int, start: int, stop: int):
    return x[(slice(None),) * dim + (slice(start, stop),)]


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim``, as torch.diff.

    ``out[i] = x[i + 1] - x[i]``, repeated ``n`` times, after ``prepend`` and ``append`` are
    joined on. bool inputs give ``x[i + 1] != x[i]``.
    Example: ``vkml.diff(vkml.tensor([1, 4, 9]))`` is [3, 5].
    """
    op = "diff"
    node = F._tensor_node(op, input)
    if not node.shape:
        raise RuntimeError(f"'{op}': diff expects input to be at least one-dimensional")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"'{op}': argument 'n' must be an int, got {n!r}")
    if n < 0:
        raise RuntimeError(f"'{op}': order must be non-negative but got {n}")
    d = lazy.normalize_dim(op, dim, len(node.shape))
    parts = [input]
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        extra_node = F._tensor_node(op, extra)
        if len(extra_node.shape) != len(node.shape):
            raise RuntimeError(
                f"'{op}': diff expects prepend or append to be the same dimension as input, got {name} "
                f"with {len(extra_node.shape)} dims for an input with {len(node.shape)}"
            )
        for k in range(len(node.shape)):
            if k != d and extra_node.shape[k] != node.shape[k]:
                raise RuntimeError(
                    f"'{op}': diff expects the shape of tensor to prepend or append to match that of input except "
                    f"along the differencing dimension; input.size({k}) = {node.shape[k]}, but got "
                    f"tensor.size({k}) = {extra_node.shape[k]}"
                )
        parts.insert(0 if name == "prepend" else len(parts), extra)
    if n == 0:  # PyTorch returns a copy of input, prepend and append ignored
        return input.clone()
    if len(parts) > 1:
        dtype = result_type([p.dtype for p in parts], [], [])
        x = F.cat([F.cast(p, dtype) for p in parts], d)
    else:
        x = input
    for _ in range(int(n)):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = _along(x, d, 1, length), _along(x, d, 0, length - 1)
        x = F.ne(hi, lo) if x.dtype is T.bool_ else F.sub(hi, lo)
    return x


def _cross(op: str, input, other, dim):
    a, b = F._tensor_node(op, input), F._tensor_node(op, other)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"'{op}': expected both inputs to have the same dtype, got {a.dtype.name} and {b.dtype.name}"
        )
    if a.dtype is T.bool_:  # PyTorch's class and words (vkml's products would subtract bools)
        raise DTypeNotImplementedError(f"\"{op}\" not implemented for 'Bool'")
    if len(a.shape) != len(b.shape):  # PyTorch broadcasts sizes, not numbers of dims
        raise RuntimeError(
            f"'{op}': inputs must have the same number of dimensions, got {len(a.shape)} and {len(b.shape)}"
        )
    shape = lazy.broadcast_shapes(op, tuple(a.shape), tuple(b.shape))
    if dim is None:  # PyTorch's deprecated default: the first dim of size 3
        found = [k for k, s in enumerate(shape) if s == 3]
        if not found:
            raise RuntimeError(f"'{op}': no dimension of size 3 in input (shape {tuple(shape)})")
        warnings.warn(
            "Using vkml.cross without specifying the dim arg is deprecated (as in PyTorch); pass dim or use "
            "vkml.linalg.cross.",
            UserWarning,
            stacklevel=3,
        )
        d = found[0]
    else:
        d = lazy.normalize_dim(op, dim, len(shape))
        if not shape or shape[d] != 3:
            got = (a.shape[d] if a.shape else 1, b.shape[d] if b.shape else 1)
            raise RuntimeError(f"'{op}': inputs dimension {dim} must have length 3. Got {got[0]} and {got[1]}")
    x, y = F.expand(input, *shape), F.expand(other, *shape)
    x0, x1, x2 = (_along(x, d, k, k + 1) for k in range(3))
    y0, y1, y2 = (_along(y, d, k, k + 1) for k in range(3))
    return F.cat([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], d)


def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim``, broadcasting, as torch.cross.

    ``dim=None`` takes the first dim of size 3 and warns, as PyTorch does (it is deprecated
    there); ``vkml.linalg.cross`` defaults to the last dim. Each component is
    ``a[i] * b[j] - a[j] * b[i]``, both products rounded (PyTorch's CPU build may fuse one
    product into the subtraction: results can differ from it by an ulp).
    """
    return _cross("cross", input, other, dim)


def linalg_cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (default the last), broadcasting, as torch.linalg.cross."""
    return _cross("linalg.cross", input, other, dim)


def kron(input, other):
    """The Kronecker product of two tensors, as torch.kron.

    The shape is the dimwise product (the shorter shape padded with leading 1s) and
    ``out[i * b + k] = input[i] * other[k]`` in every dim.
    """
    a, b = F._tensor_node("kron", input), F._tensor_node("kron", other)
    nd = max(len(a.shape), len(b.shape))
    sa = (1,) * (nd - len(a.shape)) + tuple(a.shape)
    sb = (1,) * (nd - len(b.shape)) + tuple(b.shape)
    x = F.reshape(input, *[v for s in sa for v in (s, 1)])
    y = F.reshape(other, *[v for s in sb for v in (1, s)])
    return F.reshape(F.mul(x, y), *[p * q for p, q in zip(sa, sb)])


def block_diag(*tensors):
    """The block-diagonal matrix of the given tensors, as torch.block_diag.

    0-d tensors are 1x1 blocks, 1-d tensors one row, 2-d as they are; zeros elsewhere; the
    blocks' promoted dtype.
    """
    op = "block_diag"
    blocks = []
    for k, t in enumerate(tensors):
        node = F._tensor_node(op, t)
        if len(node.shape) > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has {len(node.shape)} "
                "dimensions"
            )
        blocks.append(F.reshape(t, *((1, 1) if not node.shape else (1, -1) if len(node.shape) == 1 else node.shape)))
    if not blocks:
        return zeros(1, 0)
    lazy.check_devices(op, [b.node for b in blocks])
    dtype = result_type([b.dtype for b in blocks], [], [])
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        b = F.cast(b, dtype)
        right = width - left - b.shape[1]
        rows.append(F.constant_pad_nd(b, (left, right), 0) if left or right else b)
        left += b.shape[1]
    return F.cat(rows, 0)


_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of ``x1`` and each row of ``x2``, as torch.cdist.

    ``x1`` (..., P, M) and ``x2`` (..., R, M) give (..., P, R); batch dims broadcast.
    Computed directly, ||x1[i] - x2[j]||_p over the M differences with the tree order of the
    reductions (p = 2: sqrt of the sum of squares; 1: sum of |d|; inf: max |d|; 0: the count of
    nonzero d; else pow(sum(|d|^p), 1/p)), whatever ``compute_mode`` says (PyTorch's matmul form
    is faster but less exact). At a zero distance the gradient is 0, as PyTorch's.
    """
    op = "cdist"
    a, b = F._tensor_node(op, x1), F._tensor_node(op, x2)
    for name, node in (("X1", a), ("X2", b)):
        if len(node.shape) < 2:
            raise RuntimeError(f"'{op}': cdist only supports at least 2D tensors, {name} got: {len(node.shape)}D")
        if not node.dtype.is_float:
            raise RuntimeError(
                f"'{op}': cdist only supports floating-point dtypes, {name} got: {F._mutation.torch_name(node.dtype)}"
            )
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"'{op}': X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}"
        )
    if a.dtype is not b.dtype:
        raise DTypeError(
            f"'{op}': expected scalar type {F._mutation.torch_name(a.dtype)} but found "
            f"{F._mutation.torch_name(b.dtype)} (X1 and X2 must have the same dtype)"
        )
    if isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise TypeError(f"'{op}': argument 'p' must be a number, got {p!r}")
    p = float(p)
    if not p >= 0:
        raise RuntimeError(f"'{op}': cdist only supports non-negative p values, got {p}")
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"'{op}': {compute_mode} is not a valid value for compute_mode")
    lazy.check_devices(op, [a, b])
    batch = lazy.broadcast_shapes(op, tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    rows1, rows2, m = a.shape[-2], b.shape[-2], a.shape[-1]
    if m == 0 or rows1 == 0 or rows2 == 0:
        return F._wrap(lazy.const_node(0, a.dtype, (*batch, rows1, rows2), a.device))
    u = F.expand(F.unsqueeze(x1, -2), *batch, rows1, rows2, m)
    v = F.expand(F.unsqueeze(x2, -3), *batch, rows1, rows2, m)
    d = F.abs(u - v)
    if p == 0:
        count = F.cast(F.sum(F.ne(d, 0), -1), a.dtype)
        if not (x1.requires_grad or x2.requires_grad):
            return count
        # PyTorch's result requires grad, with a zero gradient: a branch where never takes
        return F.where(F.ge(count, 0), count, F.sum(d, -1))
    if p == 1:
        return F.sum(d, -1)
    if p == math.inf:
        return F.amax(d, -1)
    if p == 2:
        s = F.sum(d * d, -1)
        zero = F.eq(s, 0)
        # sqrt'(0) is inf: the gradient goes through a 1 where the distance is 0, and is 0 there
        return F.where(zero, 0.0, F.sqrt(F.where(zero, 1.0, s)))
    s = F.sum(F.pow(d, p), -1)
    zero = F.eq(s, 0)
    return F.where(zero, 0.0, F.pow(F.where(zero, 1.0, s), 1.0 / p))
