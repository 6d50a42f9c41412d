"""Power-average pooling and max unpooling with ``torch.nn.functional``'s names and arguments:
``lp_pool1d/2d/3d`` and ``max_unpool1d/2d/3d``. Re-exported by ``vkml.nn.functional``.

``lp_pool`` is PyTorch's own composite (``avg_pool`` of ``x ** p``, times the window size, to the
power 1/p); ``max_unpool`` writes each input element at its index of the output plane, the last
writer winning, as PyTorch's CPU kernel, and its gradient gathers the output's gradient at every
index, an overwritten one too, as PyTorch's.

>>> import vkml
>>> import vkml.nn.functional as F
>>> out, idx = F.max_pool2d(vkml.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
>>> F.max_unpool2d(out, idx, 2).shape
(1, 1, 4, 4)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..frontend import creation, indexing, mutation
from ..frontend import operators as functions
from ..ir import types as T
from . import functional_layers as FL
from . import functional_spatial as FS

# ---------------------------------------------------------------------- power-average pooling


def _expand(value, n: int) -> tuple:
    """PyTorch's ``_single``/``_pair``/``_triple``: a sequence as it is, anything else repeated ``n`` times."""
    return tuple(value) if isinstance(value, Iterable) else (value,) * n


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode: bool, window: int, avg_pool, max_pool):
    if isinstance(norm_type, (int, float)):
        # p = ±inf: the limit of the formula (max, or min, of |x|), as PyTorch since 2.12; the
        # formula itself would raise every element to inf and then to the power 0
        if norm_type == math.inf:
            return max_pool(functions.abs(input), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -math.inf:
            return functions.neg(max_pool(functions.neg(functions.abs(input)), kernel_size, stride, 0, 1, ceil_mode))
    out = avg_pool(functions.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    # sign(out) · relu(|out|) is out, but relu's gradient is 0 at 0: a window whose powers sum to 0
    # gets gradient 0 rather than the inf · 0 of pow's root, as PyTorch's
    return functions.pow((functions.sign(out) * functions.relu(functions.abs(out))) * window, 1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size: int, stride=None, ceil_mode: bool = False):
    """(sum over each window of x ** p) ** (1/p), over the last dim of ``input`` (N, C, L) or (C, L).

    PyTorch's composite: ``avg_pool1d(x ** norm_type)`` times the window size, then the root; no
    padding. Negative elements with a fractional ``norm_type`` give NaN, as PyTorch's (it takes no
    absolute value). ``norm_type`` ±inf is the max (min) of ``|x|`` over each window.

    >>> lp_pool1d(vkml.tensor([[3.0, 4.0]]), 2, 2).tolist()  # doctest: +SKIP
    [[5.0]]
    """
    if not isinstance(kernel_size, (int, np.integer)) or isinstance(kernel_size, bool):
        # PyTorch multiplies by kernel_size itself: only an int works
        raise TypeError(f"'lp_pool1d': kernel_size must be an int, got {kernel_size!r}")
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, int(kernel_size), FL.avg_pool1d, FL.max_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """``lp_pool1d`` over the last two dims of ``input`` (N, C, H, W) or (C, H, W).

    >>> lp_pool2d(vkml.ones(1, 2, 2), 1, 2).tolist()  # doctest: +SKIP
    [[[4.0]]]
    """
    kw, kh = _expand(kernel_size, 2)
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, kw * kh, FL.avg_pool2d, FL.max_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """``lp_pool1d`` over the last three dims of ``input`` (N, C, D, H, W) or (C, D, H, W).

    >>> lp_pool3d(vkml.ones(1, 2, 2, 2), 1, 2).tolist()  # doctest: +SKIP
    [[[[8.0]]]]
    """
    kd, kw, kh = _expand(kernel_size, 3)
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, kd * kw * kh, FS.avg_pool3d, FS.max_pool3d)


# ---------------------------------------------------------------------- max unpooling


def _unpool_output_size(input, kernel, stride, padding, output_size) -> list[int]:
    """PyTorch's ``_unpool_output_size``: the default size, or ``output_size`` checked against it."""
    n = len(kernel)
    default = [(input.shape[d - n] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        size = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(
                f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length of "
                f"'{len(output_size)}'"
            )
        for d in range(n):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
        size = output_size
    for d in range(n):
        if size[d] < 0:
            raise ValueError(
                f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                f"output_size[{d}]={size[d]}"
            )
    return [int(s) for s in size]


def _unpool(input, indices, size: list[int], n: int, stride=None):
    """PyTorch's ``max_unpool2d`` (n 2) or ``max_unpool3d`` (n 3) kernel, its checks in its order.

    The indices are read back to the host: they choose where each element goes, and an index
    outside the plane is PyTorch's RuntimeError at the call.
    """
    name = f"max_unpooling{n}d"
    if indices.dtype is not T.int64:
        got = "" if n == 3 else f" but got: {mutation.torch_name(indices.dtype)}"
        raise RuntimeError(f"elements in indices should be type int64{got}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"Input to {name} should be a {n + 1}d or {n + 2}d Tensor, but got a tensor with {input.ndim} dimensions."
        )
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) but got "
            f"indices tensor with shape: {list(indices.shape)}"
        )
    for d in range(1, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(
                f"{name}_forward_out_cpu(): Expected input to have non-zero size for non-batch dimensions, but got "
                f"{list(input.shape)} with dimension {d} being empty."
            )
    if stride is not None and any(s <= 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    if not input.dtype.is_float:
        raise NotImplementedError(f"\"max_unpool{n}d\" not implemented for '{mutation.torch_name(input.dtype)}'")
    lead = tuple(input.shape[:-n])
    out_shape = lead + tuple(size)
    plane = math.prod(size)
    planes = math.prod(lead)
    out = creation.zeros(*out_shape, dtype=input.dtype, device=input.device)
    if plane == 0 or input.numel() == 0:  # PyTorch's kernel reads no index then
        # lazy: zeros reached from the input, so that its gradient (zeros) flows back
        return out + functions.sum(functions.mul(input, 0))
    index = indices.numpy().reshape(planes, -1)
    bad = (index < 0) | (index >= plane)
    if bad.any():  # PyTorch's kernel goes on writing and names the last bad index it met
        raise RuntimeError(
            f"Found an invalid max index: {int(index[bad][-1])} (output volumes are of size {'x'.join(map(str, size))})"
        )
    flat = (index + np.arange(planes, dtype=np.int64)[:, None] * plane).reshape(-1)
    values = functions.reshape(input, -1)
    written = indexing.write_positions(functions.reshape(out, -1), values, flat)
    return functions.reshape(written, *out_shape)


def _unpool_args(op: str, kernel_size, stride, padding, n: int):
    kernel = FL._tuple(op, "kernel_size", kernel_size, n)
    stride = kernel if stride is None else FL._tuple(op, "stride", stride, n)
    return kernel, stride, FL._tuple(op, "padding", padding, n)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d``: each element of ``input`` written at its index into zeros.

    ``input`` (N, C, L) or (C, L); ``output_size`` picks among the lengths that pool to L.

    As PyTorch's, the work is ``max_unpool2d`` over a trailing dim of 1 (its errors name that).

    >>> max_unpool1d(vkml.tensor([[3.0]]), vkml.tensor([[1]]), 2).tolist()  # doctest: +SKIP
    [[0.0, 3.0]]
    """
    kernel, stride, padding = _unpool_args("max_unpool1d", kernel_size, stride, padding, 1)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    out = _unpool(functions.unsqueeze(input, -1), functions.unsqueeze(indices, -1), size + [1], 2)
    return functions.squeeze(out, -1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool2d``: each element of ``input`` written at its index into zeros.

    ``input`` (N, C, H, W) or (C, H, W); each index points into the flattened H·W output plane
    (``max_pool2d``'s ``return_indices``). Repeated indices: the last element in row-major order wins, as PyTorch's
    CPU kernel; the gradient of every element is the output's gradient at its index.

    >>> max_unpool2d(vkml.ones(1, 1, 1), vkml.tensor([[[3]]]), 2).tolist()  # doctest: +SKIP
    [[[0.0, 0.0], [0.0, 1.0]]]
    """
    kernel, stride, padding = _unpool_args("max_unpool2d", kernel_size, stride, padding, 2)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    return _unpool(input, indices, size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """``max_unpool2d`` over the last three dims of ``input`` (N, C, D, H, W) or (C, D, H, W).

    >>> max_unpool3d(vkml.ones(1, 1, 1, 1), vkml.tensor([[[[7]]]]), 2).shape  # doctest: +SKIP
    (1, 2, 2, 2)
    """
    kernel, stride, padding = _unpool_args("max_unpool3d", kernel_size, stride, padding, 3)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    return _unpool(input, indices, size, 3, stride)


FUNCTIONS = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]
