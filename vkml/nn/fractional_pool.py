"""Fractional max pooling (``F.fractional_max_pool2d``/``3d``, ``nn.FractionalMaxPool2d``/``3d``), as
PyTorch computes it.

Each (sample, channel) plane draws one uniform ``u`` per spatial dim (``_random_samples``, shape
(N, C, 2) or (N, C, 3); PyTorch's order: width then height for 2-D, time, height, width for 3-D). The
windows of a dim start at ``int((i + u) * alpha) - int(u * alpha)``, ``alpha = (input - kernel) /
(output - 1)``, the last at ``input - kernel``: PyTorch's ``generate_intervals``, computed here on
the host in the input's float type (float16 arithmetic for float16; bfloat16 in float32) so the
windows are PyTorch's for the same samples. The window maximum and its index (``h * W + w`` in the
plane) follow PyTorch's scan: the first maximum, or the last NaN. The values are gathered from the
input on its device, so the gradient reaches the chosen elements through ``gather``.

vkml's uniforms are its own generator's, so without ``_random_samples`` the windows (not the rule)
differ from PyTorch's; reading the samples back to place the windows waits for the device.
"""

from __future__ import annotations

import math

import numpy as np

from ..frontend import autograd, creation, mutation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..ir import types as T
from .module import Module


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _intervals(samples: np.ndarray, in_size: int, out_size: int, kernel: int, dtype) -> np.ndarray:
    """The window starts of one dim for every plane's sample (PyTorch's generate_intervals)."""
    u = samples.astype(dtype)
    starts = np.zeros(samples.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = dtype(in_size - kernel) / dtype(out_size - 1)
        i = np.arange(out_size, dtype=dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            starts = ((i + u[..., None]) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)[..., None]
    if out_size > 0:
        starts[..., -1] = in_size - kernel
    return starts


def _fractional_max_pool(op: str, input, kernel_size, output_size, output_ratio, return_indices, samples, n: int):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    if not input.dtype.is_float:
        raise RuntimeError(f"\"{op}\" not implemented for '{mutation.torch_name(input.dtype)}'")
    kernel_op = op.removesuffix("_with_indices")
    count = "Ints" if n == 2 else "three Ints"
    for name, value in (("kernel_size", kernel_size), ("output_size", output_size)):
        if isinstance(value, (tuple, list)) and len(value) != n:
            raise RuntimeError(f"{kernel_op}: {name} must either be a single Int or tuple of {count}")
    nonbatch = list(input.shape[1:] if input.ndim == n + 2 else input.shape)
    if not all(nonbatch):
        empty = list(input.shape).index(0, input.ndim - len(nonbatch))
        raise RuntimeError(
            f"{kernel_op}{'_out' if n == 3 else ''}(): Expected input to have non-zero size for non-batch "
            f"dimensions, but got{list(input.shape)} with dimension {empty} being empty."
        )
    spatial = tuple(input.shape[-n:])
    kernel = _tuple(kernel_size, n)
    if output_size is None:
        if len(output_ratio) > n:  # PyTorch's len(): a bare float is its TypeError
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = _tuple(output_ratio, n)
        output_size = tuple(int(s * r) for s, r in zip(spatial, ratio))
    out = _tuple(output_size, n)
    names = ("height", "width") if n == 2 else ("time", "height", "width")
    for name, o, k, s in zip(names, out, kernel, spatial):
        if o + k - 1 > s:
            raise RuntimeError(
                f"{kernel_op}{'_out' if n == 3 else ''}(): pool {name} {k} too large relative to input {name} {s}"
            )
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    batch, channels = x.shape[0], x.shape[1]
    if samples is None:
        samples = vkrandom.rand(batch, channels, n, dtype=input.dtype, device=input.device)
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to be 3D tensor, got: {samples.ndim}D")
    if samples.shape[2] != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got {samples.shape[2]}.")
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] < channels:
        raise RuntimeError(f"Expect _random_samples of at least ({batch}, {channels}, {n}); got {list(samples.shape)}")
    host_dtype = np.float16 if input.dtype is T.float16 else np.float64 if input.dtype is T.float64 else np.float32
    u = samples.detach().numpy()[:batch, :channels].astype(host_dtype)
    order = (1, 0) if n == 2 else (0, 1, 2)  # which sample each spatial dim takes (PyTorch's)
    starts = [_intervals(u[..., order[d]], spatial[d], out[d], kernel[d], host_dtype) for d in range(n)]
    # each output position's window, as flat positions in the plane, in PyTorch's scan order
    flat = np.zeros((batch, channels, *out, *kernel), dtype=np.int64)
    place = 1
    for d in reversed(range(n)):
        s = starts[d].reshape((batch, channels) + tuple(out[d] if e == d else 1 for e in range(n)) + (1,) * n)
        k = np.arange(kernel[d]).reshape((1, 1) + (1,) * n + tuple(kernel[d] if e == d else 1 for e in range(n)))
        flat = flat + (s + k) * place
        place *= spatial[d]
    taps = int(np.prod(kernel))
    plane_size = math.prod(spatial)  # explicit: a reshape's -1 is ambiguous for an empty batch
    positions = creation.tensor(flat.reshape(batch, channels, math.prod(out) * taps), device=input.device)
    plane = x.reshape(batch, channels, plane_size)
    values = plane.gather(2, positions).reshape(batch, channels, *out, taps)
    with autograd.no_grad():
        first = values.argmax(-1)  # the first maximum, or the first NaN
        is_nan = values.isnan()
        last_nan = (taps - 1) - is_nan.flip(-1).int().argmax(-1)
        chosen = functions.where(is_nan.any(-1), last_nan, first)
    result = values.gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
    indices = positions.reshape(batch, channels, *out, taps).gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
    if not batched:
        result, indices = result.squeeze(0), indices.squeeze(0)
    return (result, indices) if return_indices else result


def fractional_max_pool2d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False, _random_samples=None
):
    """2-D fractional max pooling of (N, C, H, W) or (C, H, W) ``input``, as PyTorch's.

    The windows are PyTorch's for given ``_random_samples`` (the module docstring); ``return_indices``
    also returns the int64 position ``h * W + w`` of each maximum in its plane.
    """
    return _fractional_max_pool(
        "fractional_max_pool2d", input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2
    )


def fractional_max_pool3d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False, _random_samples=None
):
    """3-D fractional max pooling of (N, C, T, H, W) or (C, T, H, W) ``input``, as PyTorch's.

    As ``fractional_max_pool2d``; the indices are ``t * H * W + h * W + w``.
    """
    return _fractional_max_pool(
        "fractional_max_pool3d", input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3
    )


def fractional_max_pool2d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None
):
    """``fractional_max_pool2d`` returning (values, indices) whatever ``return_indices`` says (PyTorch's)."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None
):
    """``fractional_max_pool3d`` returning (values, indices) whatever ``return_indices`` says (PyTorch's)."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


class _FractionalMaxPoolNd(Module):
    _n = 2
    _fn = None

    def __init__(
        self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False, _random_samples=None
    ):
        super().__init__()
        n = self._n
        name = type(self).__name__
        self.kernel_size = _tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self)._fn(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling (``F.fractional_max_pool2d``; vkml/nn/fractional_pool.py)."""

    _n = 2
    _fn = staticmethod(fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling (``F.fractional_max_pool3d``; vkml/nn/fractional_pool.py)."""

    _n = 3
    _fn = staticmethod(fractional_max_pool3d)


FUNCTIONS = (
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
)
MODULES = ["FractionalMaxPool2d", "FractionalMaxPool3d"]
