"""3-D convolution and pooling, transposed convolutions, adaptive pools of 1 and 3 dims, resampling
(``interpolate``), pixel and channel shuffles, with ``torch.nn.functional``'s names and defaults.

Each reuses the N-dimensional machinery of vkml/nn/functional_layers.py: windows as strided views
(im2col), ``matmul``, the adaptive pools' bodies and the block folding of ``fold``. Nothing here
has a kernel of its own; gradients come from the ops used.

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.conv_transpose2d(vkml.ones(1, 1, 2, 2), vkml.ones(1, 1, 2, 2), stride=2).shape  # doctest: +SKIP
(1, 1, 4, 4)
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from ..frontend import autograd, creation, indexing, realize
from ..frontend import operators as functions
from ..ir import types as T
from ..ops import cast
from . import functional_layers as FL
from . import half_conv as _half_conv

# ---------------------------------------------------------------------- convolution


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """3-D convolution of ``input`` (N, C, D, H, W) or (C, D, H, W) with ``weight`` (O, C/groups, kd, kh, kw).

    ``conv2d``'s im2col and one batched matmul over kd·kh·kw windows: each output adds its
    C/groups·kd·kh·kw products in ascending (channel, kernel depth, row, column) order from -0.0,
    then the bias once. ``padding`` is an int, a triple, ``'valid'`` or ``'same'``.

    >>> conv3d(vkml.ones(1, 1, 3, 3, 3), vkml.ones(1, 1, 2, 2, 2)).shape  # doctest: +SKIP
    (1, 1, 2, 2, 2)
    """
    return FL._conv("conv3d", input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(op, input, weight, bias, stride, padding, output_padding, groups, dilation, n: int):
    FL._conv_operands(op, input, weight, bias, n)
    stride, padding, output_padding, dilation = (
        FL._tuple(op, name, value, n)
        for name, value in (
            ("stride", stride),
            ("padding", padding),
            ("output_padding", output_padding),
            ("dilation", dilation),
        )
    )
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"'{op}': non-positive stride is not supported, got {stride}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"'{op}': dilation should be greater than zero, got {dilation}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"'{op}': negative padding is not supported, got {padding}")
    if any(p < 0 for p in output_padding):
        raise RuntimeError(f"'{op}': negative output_padding is not supported, got {output_padding}")
    if any(p >= s and p >= d for p, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"'{op}': output padding must be smaller than either stride or dilation, but got "
            f"output_padding={output_padding}, stride={stride}, dilation={dilation}"
        )
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError(f"'{op}': non-positive groups is not supported, got {groups}")
    in_channels, out_per_group = weight.shape[0], weight.shape[1]
    out_channels = out_per_group * groups
    kernel = tuple(weight.shape[2:])
    if in_channels % groups:
        raise RuntimeError(
            f"'{op}': Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead"
        )
    channels = input.shape[-n - 1]
    if channels != in_channels:
        batched = list(input.shape) if input.ndim == n + 2 else [1, *input.shape]
        raise RuntimeError(
            f"'{op}': Given transposed=1, weight of size {list(weight.shape)}, expected input{batched} "
            f"to have {in_channels} channels, but got {channels} channels instead"
        )
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(
            f"'{op}': Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
            f"1-dimensional with {out_channels} elements, but got bias of size {list(bias.shape)} instead"
        )
    spatial = tuple(input.shape[-n:])
    out_size = tuple(
        (i - 1) * s - 2 * p + d * (k - 1) + o + 1
        for i, s, p, d, k, o in zip(spatial, stride, padding, dilation, kernel, output_padding)
    )
    if any(o < 1 for o in out_size) or any(i < 1 for i in spatial):
        raise RuntimeError(
            f"'{op}': Given input size per channel: ({' x '.join(map(str, spatial))}). Calculated output size "
            f"per channel: ({' x '.join(map(str, out_size))}). Output size is too small"
        )
    unbatched = input.ndim == n + 1
    x = functions.unsqueeze(input, 0) if unbatched else input
    batch, taps = x.shape[0], math.prod(kernel)
    # The gradient of conv's im2col: each input element times its weight row gives the blocks
    # (N, groups, O/groups·taps, L), each a sum over C/groups in ascending channel order from -0.0;
    # the blocks are then folded into the output, taps added in row-major kernel order.
    w = functions.reshape(weight, groups, in_channels // groups, out_per_group * taps)
    rows = functions.reshape(x, batch, groups, in_channels // groups, math.prod(spatial))
    # a small float16/bfloat16 one: the weight's gradient accumulated sample by sample, as PyTorch's CPU
    if _half_conv.rounds_as_cpu(x.dtype, math.prod(rows.shape) * out_per_group * taps):
        cols = _half_conv.grouped_product(functions.transpose(w, 1, 2), rows, False)
    else:
        cols = functions.matmul(functions.transpose(w, 1, 2), rows)
    cols = functions.reshape(cols, batch, out_channels, taps, *spatial)
    out = FL._fold_blocks(cols, out_size, kernel, dilation, padding, stride)
    if bias is not None:
        out = out + functions.reshape(bias, out_channels, *([1] * n))
    # channels last in (input, else weight), channels last out: PyTorch's
    return functions.squeeze(out, 0) if unbatched else FL._memory_format.keep(out, input, weight)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """``conv_transpose2d`` over (N, C, L) or (C, L) with ``weight`` (C, O/groups, k).

    >>> conv_transpose1d(vkml.ones(1, 1, 3), vkml.ones(1, 1, 2)).tolist()  # doctest: +SKIP
    [[[1.0, 2.0, 2.0, 1.0]]]
    """
    return _conv_transpose(
        "conv_transpose1d", input, weight, bias, stride, padding, output_padding, groups, dilation, 1
    )


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """Transposed 2-D convolution of ``input`` (N, C, H, W) or (C, H, W) with ``weight`` (C, O/groups, kh, kw).

    The gradient of ``conv2d`` with respect to its input. Output size per dim:
    (in - 1)·stride - 2·padding + dilation·(k - 1) + output_padding + 1. Each input element times
    its weight rows is one batched ``matmul`` (a sum over C/groups in ascending channel order from
    -0.0); the resulting blocks are folded into the output as ``fold`` does (taps added in
    row-major kernel order), then the bias added once. Argument order as PyTorch's: ``groups``
    before ``dilation``.

    >>> conv_transpose2d(vkml.ones(1, 1, 2, 2), vkml.ones(1, 1, 2, 2), stride=2).shape  # doctest: +SKIP
    (1, 1, 4, 4)
    """
    return _conv_transpose(
        "conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups, dilation, 2
    )


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """``conv_transpose2d`` over (N, C, D, H, W) or (C, D, H, W) with ``weight`` (C, O/groups, kd, kh, kw).

    >>> conv_transpose3d(vkml.ones(1, 1, 1, 1, 1), vkml.ones(1, 1, 2, 2, 2)).shape  # doctest: +SKIP
    (1, 1, 2, 2, 2)
    """
    return _conv_transpose(
        "conv_transpose3d", input, weight, bias, stride, padding, output_padding, groups, dilation, 3
    )


# ---------------------------------------------------------------------- pooling


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices: bool = False
):
    """``max_pool2d`` over the last three dims of ``input`` (N, C, D, H, W) or (C, D, H, W); indices
    index each flattened D·H·W volume.

    >>> max_pool3d(vkml.arange(8.0).reshape(1, 2, 2, 2), 2).tolist()  # doctest: +SKIP
    [[[[7.0]]]]
    """
    return FL._max_pool("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override=None,
):
    """``avg_pool2d`` over the last three dims of ``input`` (N, C, D, H, W) or (C, D, H, W).

    >>> avg_pool3d(vkml.ones(1, 2, 2, 2), 2).tolist()  # doctest: +SKIP
    [[[[1.0]]]]
    """
    return FL._avg_pool(
        "avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3
    )


def adaptive_avg_pool1d(input, output_size):
    """``adaptive_avg_pool2d`` over the last dim of ``input`` (N, C, L) or (C, L).

    >>> adaptive_avg_pool1d(vkml.tensor([[1.0, 2.0, 3.0]]), 2).tolist()  # doctest: +SKIP
    [[1.5, 2.5]]
    """
    return FL._adaptive_avg("adaptive_avg_pool1d", input, output_size, 1)


def adaptive_avg_pool3d(input, output_size):
    """``adaptive_avg_pool2d`` over the last three dims of ``input`` (N, C, D, H, W) or (C, D, H, W).

    >>> adaptive_avg_pool3d(vkml.ones(1, 2, 3, 4), 1).tolist()  # doctest: +SKIP
    [[[[1.0]]]]
    """
    return FL._adaptive_avg("adaptive_avg_pool3d", input, output_size, 3)


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):
    """``adaptive_max_pool2d`` over the last dim of ``input`` (N, C, L) or (C, L).

    >>> adaptive_max_pool1d(vkml.tensor([[1.0, 3.0, 2.0]]), 1).tolist()  # doctest: +SKIP
    [[3.0]]
    """
    return FL._adaptive_max("adaptive_max_pool1d", input, output_size, return_indices, 1)


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):
    """``adaptive_max_pool2d`` over the last three dims; indices index each flattened D·H·W volume.

    >>> adaptive_max_pool3d(vkml.arange(8.0).reshape(1, 2, 2, 2), 1).tolist()  # doctest: +SKIP
    [[[[7.0]]]]
    """
    return FL._adaptive_max("adaptive_max_pool3d", input, output_size, return_indices, 3)


# ---------------------------------------------------------------------- resampling

_F32 = np.float32
_DIM_NAMES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _gather(x, picks: dict[int, np.ndarray]):
    """``x`` with dim ``d`` indexed by the host array ``picks[d]`` for each given ``d``: one gather,
    whose gradient adds back into the positions read (in index order: the same bits on every device)."""
    shape = tuple(x.shape)
    flat = np.zeros((1,) * len(shape), np.int64)
    for d, size in enumerate(shape):
        index = picks.get(d, np.arange(size)).astype(np.int64)
        flat = flat + (index * math.prod(shape[d + 1 :])).reshape([-1 if k == d else 1 for k in range(len(shape))])
    return indexing.take_positions(x, flat)


def _gather_repeats(x, picks: dict[int, np.ndarray]):
    """``_gather``, with the dims whose indices repeat each element r times in order (an integer upsampling
    factor, or a copy) done as views: a broadcast and a reshape, no index to upload."""
    for d in sorted(picks):
        index, size = picks[d], x.shape[d]
        r = len(index) // size
        if len(index) % size or not np.array_equal(index, np.arange(len(index)) // r):
            continue
        del picks[d]
        if r > 1:
            shape = list(x.shape)
            wide = functions.expand(functions.unsqueeze(x, d + 1), *shape[: d + 1], r, *shape[d + 1 :])
            x = functions.reshape(wide, *shape[:d], size * r, *shape[d + 1 :])
    return _gather(x, picks) if picks else x


def _scale_value(scale, in_size: int, out_size: int):
    """PyTorch's ``compute_scales_value<float>``: 1/scale_factor when one was given, else in/out, in float32."""
    if scale is not None and scale > 0:
        return _F32(1.0 / scale)
    return _F32(in_size) / _F32(out_size)


def _area_scale(in_size: int, out_size: int, align_corners: bool, scale):
    """PyTorch's ``area_pixel_compute_scale<float>``."""
    if align_corners:
        return _F32(in_size - 1) / _F32(out_size - 1) if out_size > 1 else _F32(0)
    return _scale_value(scale, in_size, out_size)


def _fma32(a, b, c):
    """a·b + c rounded once to float32 (a fused multiply-add), on the host.

    The float64 product of two float32 is exact; the float64 sum is exact up to its TwoSum error
    ``e``, which only matters where the sum lies exactly halfway between two float32 (there ``e``
    says which side the exact value is on)."""
    a, b, c = (np.asarray(v, _F32) for v in (a, b, c))
    p = a.astype(np.float64) * b.astype(np.float64)
    s = p + c.astype(np.float64)
    v = s - p
    e = (p - (s - v)) + (c.astype(np.float64) - v)
    r = s.astype(_F32)
    r64 = r.astype(np.float64)
    other = np.nextafter(r, np.where(r64 < s, _F32(np.inf), _F32(-np.inf)))
    tie = (r64 != s) & (np.abs(r64 - s) == np.abs(other.astype(np.float64) - s))
    wrong = tie & (e != 0) & ((e > 0) != (r64 > s))
    return np.where(wrong, other, r).astype(_F32)


def _source_index(scale, out_size: int, align_corners: bool, cubic: bool):
    """PyTorch's ``area_pixel_compute_source_index<float>`` for every output index, in float32.

    PyTorch's CPU build contracts ``scale·(i + 0.5) - 0.5`` into one fused multiply-add: so does this."""
    dst = np.arange(out_size).astype(_F32)
    if align_corners:
        return scale * dst
    src = _fma32(scale, dst + _F32(0.5), _F32(-0.5))
    return src if cubic else np.where(src < 0, _F32(0), src)


def _floor_index(real, in_size: int):
    """``guard_index_and_lambda``: the index min(floor(real), in - 1) and its fraction clamped to [0, 1]."""
    index = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    return index, np.minimum(np.maximum(real - index.astype(_F32), _F32(0)), _F32(1))


def _nearest_taps(in_size: int, out_size: int, scale, exact: bool, dims: int):
    """Source indices of PyTorch's CPU nearest kernels: floor(i·scale) ('nearest', OpenCV's rule) or
    floor(max((i + 0.5)·scale - 0.5, 0) + 0.5) ('nearest-exact', Pillow's), both in float32, capped at in - 1.

    PyTorch's 2-D 'nearest' kernel (``nearest_idx``), unlike its 1-D and 3-D ones, copies where the
    output size equals the input's and takes i // 2 where it is twice it, whatever ``scale_factor``
    said (a factor of 1.1 on 5 elements gives 5 and copies them in 2-D, repeats one in 1-D)."""
    if not exact and dims == 2 and out_size in (in_size, 2 * in_size):
        return np.arange(out_size) // (out_size // in_size)
    s = _scale_value(scale, in_size, out_size)
    if exact:
        real = _source_index(s, out_size, False, False)
        index = np.floor((real.astype(np.float64) + 0.5).astype(_F32))  # a double sum rounded to float, then floorf
    else:
        index = np.floor(_source_index(s, out_size, True, False))
    return np.minimum(index.astype(np.int64), in_size - 1)


def _linear_taps(in_size: int, out_size: int, align_corners: bool, scale):
    """(index, weight) pairs of PyTorch's ``compute_source_index_and_lambda``; equal sizes copy (weights 1, 0)."""
    if in_size == out_size:
        index = np.arange(out_size)
        return [(index, np.ones(out_size, _F32)), (index, np.zeros(out_size, _F32))]
    real = _source_index(_area_scale(in_size, out_size, align_corners, scale), out_size, align_corners, False)
    index, frac = _floor_index(real, in_size)
    return [(index, _F32(1) - frac), (index + (index < in_size - 1), frac)]


def _cubic_taps(in_size: int, out_size: int, align_corners: bool, scale):
    """(index, weight) for the 4 taps of PyTorch's bicubic kernel: Keys' convolution with A = -0.75,
    coefficients in float32 as ``get_cubic_upsample_coefficients``, indices clamped to the input."""
    real = _source_index(_area_scale(in_size, out_size, align_corners, scale), out_size, align_corners, True)
    index, t = _floor_index(real, in_size)
    a = _F32(-0.75)

    def near(x):  # |x| <= 1
        return ((a + _F32(2)) * x - (a + _F32(3))) * x * x + _F32(1)

    def far(x):  # 1 < |x| < 2
        return ((a * x - _F32(5) * a) * x + _F32(8) * a) * x - _F32(4) * a

    rest = _F32(1) - t
    weights = [far(t + _F32(1)), near(t), near(rest), far(rest + _F32(1))]
    return [(np.clip(index - 1 + j, 0, in_size - 1), w.astype(_F32)) for j, w in enumerate(weights)]


def _sinc32(x):
    """sin(πx)/(πx) of a float32 ``x`` as Pillow's resampling filter takes it: πx rounded to float32,
    the quotient in double, rounded once."""
    if x == 0:
        return _F32(1)
    angle = _F32(float(x) * math.pi)
    return _F32(math.sin(float(angle)) / float(angle))


# each antialiased mode's filter half-width at scale 1 (Pillow's supports)
_AA_SUPPORT = {"bilinear": 1, "bicubic": 2, "lanczos": 3}


def _antialias_taps(in_size: int, out_size: int, align_corners: bool, scale, mode: str):
    """(index, weight) taps of PyTorch's antialiased kernel (``_compute_index_ranges_weights`` with
    ``antialias``): per output, the source range [xmin, xmin + xsize) under a triangle (bilinear),
    Keys' A = -0.5 (bicubic) or a 3-lobed Lanczos (lanczos: sinc(x)·sinc(x/3) for |x| < 3) filter
    stretched by the scale when downsampling, normalised by its float32 sum. Rows narrower than the
    widest are padded with weight-0 taps on xmin: the same sums for finite inputs. Float32 steps as
    PyTorch's CPU code (``center`` float, the double terms rounded where it stores); a weight may
    still differ from PyTorch's in its last bit."""
    f = _F32
    cubic = mode == "bicubic"
    s = _area_scale(in_size, out_size, align_corners, scale)
    half = f(_AA_SUPPORT[mode])
    support = half * s if s >= f(1) else half
    invscale = f(1.0 / float(s)) if s >= f(1) else f(1)
    width = int(math.ceil(float(support))) * 2 + 1
    index = np.zeros((width, out_size), np.int64)
    weight = np.zeros((width, out_size), f)
    a = f(-0.5)
    for i in range(out_size):
        center = f(float(s) * (i + 0.5))
        xmin = max(int(float(center - support) + 0.5), 0)
        xsize = min(int(float(center + support) + 0.5), in_size) - xmin
        ws = []
        for j in range(xsize):
            x = abs(f((float(f(j + xmin) - center) + 0.5) * float(invscale)))
            if cubic:  # Keys' polynomials, contracted into fused multiply-adds as PyTorch's build
                if x < f(1):
                    ws.append(_fma32(_fma32(a + f(2), x, -(a + f(3))) * x, x, f(1)))
                elif x < f(2):
                    ws.append(_fma32(_fma32(_fma32(a, x, f(-5) * a), x, f(8) * a), x, f(-4) * a))
                else:
                    ws.append(f(0))
            elif mode == "lanczos":
                ws.append(f(_sinc32(x) * _sinc32(f(x / f(3)))) if x < f(3) else f(0))
            else:
                ws.append(f(1) - x if x < f(1) else f(0))
        total = f(0)
        for w in ws:
            total = f(total + w)
        index[:, i] = xmin
        for j, w in enumerate(ws):
            index[j, i] = xmin + j
            weight[j, i] = f(w / total) if total != 0 else w
    return [(index[j], weight[j]) for j in range(width)]


def _narrowed_taps(taps, dtype, *args):
    """``taps(*args)`` with each weight rounded to ``dtype`` (float16 or bfloat16), as PyTorch's
    ``compute_indices_weights`` stores them; a linear pair's first weight is ``1 - second`` rounded
    again, from the rounded second (c10::Half arithmetic)."""

    def narrow(v):
        return v.astype(np.float16) if dtype is T.float16 else cast.bf16_bits_to_float(cast.float_to_bf16_bits(v))

    pairs = taps(*args)
    if taps is _linear_taps:
        (i0, _), (i1, w1) = pairs
        w1 = narrow(w1).astype(_F32)
        return [(i0, narrow(_F32(1) - w1).astype(_F32)), (i1, w1)]
    return [(index, narrow(weight).astype(_F32)) for index, weight in pairs]


def _resample(x, dim: int, taps):
    """Σ_j x[.., taps[j].index, ..] · taps[j].weight along ``dim``, added left to right (PyTorch's order)."""
    shape = [1] * x.ndim
    shape[dim] = -1
    total = None
    for index, weight in taps:
        term = _gather(x, {dim: index}) * creation.tensor(weight.reshape(shape), device=x.device)
        total = term if total is None else total + term
    return total


def _int16_linear_taps(in_size: int, out_size: int, align_corners: bool, scale):
    """PyTorch's uint8 bilinear weights (``compute_index_ranges_int16_weights``, no antialias): per output,
    two source indices and a triangle filter's weights, normalised in float64, then fixed point with the
    most fractional bits (``precision``) that keep the largest weight below 2^15.

    Returns (indices (out, 2), int32 weights (out, 2), precision). A missing second tap has weight 0.
    """
    if align_corners:
        scale_ = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        scale_ = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
    delta = 0.5 if align_corners else 0.0  # PyTorch's align_corners_delta for uint8 without antialias
    index = np.zeros((out_size, 2), np.int64)
    weight = np.zeros((out_size, 2), np.float64)
    for i in range(out_size):
        center = scale_ * (i + 0.5 - delta)
        lo = max(int(center - 1.0 + 0.5 + delta), 0)  # support 1: C's truncation toward zero, as PyTorch
        n = min(max(min(int(center + 1.0 + 0.5 + delta), in_size) - lo, 0), 2)
        w = [max(0.0, 1.0 - abs(j + lo - center + 0.5 - delta)) for j in range(n)]
        total = sum(w)
        for j in range(n):
            index[i, j], weight[i, j] = lo + j, (w[j] / total if total != 0.0 else w[j])
        index[i, n:] = min(lo, in_size - 1)
    largest = weight.max(initial=0.0)
    precision = 0
    while precision < 22 and int(0.5 + largest * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = weight * (1 << precision)
    fixed = np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int32)
    return index, fixed, precision


def _uint8_bilinear(input, spatial, out, align_corners: bool, scales):
    """``interpolate(mode='bilinear')`` of uint8 as PyTorch's CPU kernel: separable, the last dim first, each
    pass an int32 fixed-point sum of two taps, rounded half up by the shift and saturated to uint8 before the
    next pass (a dim of unchanged size is skipped). Exact integer arithmetic: the same bits everywhere."""
    x = input
    for k in reversed(range(len(spatial))):
        if spatial[k] == out[k]:
            continue
        index, fixed, precision = _int16_linear_taps(spatial[k], out[k], align_corners, scales[k])
        shape = [1] * x.ndim
        shape[2 + k] = -1
        wide = x.to(T.int32)
        acc = creation.tensor(np.int32(1 << (precision - 1)) if precision else np.int32(0), device=x.device)
        for j in range(2):
            w = creation.tensor(fixed[:, j].reshape(shape), device=x.device)
            acc = acc + _gather(wide, {2 + k: index[:, j]}) * w
        x = functions.clamp(acc >> precision, 0, 255).to(T.uint8)
    return x


def _upsample_node_name(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
) -> str:
    """PyTorch's node of ``interpolate``: ``UpsampleBilinear2DBackward0``, ``_UpsampleBicubic2DAaBackward0``, ..."""
    kind = "".join(part.title() for part in mode.split("-"))  # nearest-exact -> NearestExact
    if kind == "Area":  # adaptive average pooling
        return f"AdaptiveAvgPool{input.ndim - 2}DBackward0"
    if antialias:
        return f"_Upsample{kind}{input.ndim - 2}DAaBackward0"
    return f"Upsample{kind}{input.ndim - 2}DBackward0"


@autograd.shown_as(_upsample_node_name, autograd.input_edge)
def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias: bool = False,
):
    """Resample ``input`` (N, C, *spatial) with 1 to 3 spatial dims to ``size`` or by ``scale_factor``.

    Modes 'nearest' and 'nearest-exact' (3-5-D) copy one source element (exact); 'linear' (3-D),
    'bilinear' and 'bicubic' (4-D), 'trilinear' (5-D) weigh 2 or 4 neighbours per dim; 'area' is
    ``adaptive_avg_pool``. Source indices and weights are computed on the host in float32 with
    PyTorch's CPU formulas (scale = 1/scale_factor when a factor is given and
    ``recompute_scale_factor`` is not True, else in/out; ``align_corners`` maps corner to corner),
    and the weighted sum is separable: the last dim first, each dim's terms added left to right,
    which is the nesting of PyTorch's kernel. float16 and bfloat16 compute in float32 and round once.
    ``antialias=True`` ('bilinear', 'bicubic', 'lanczos', float 4-D) weighs every source element under
    the filter widened by the downscale, as PyTorch's CPU kernel (weights on the host to within a
    rounding of PyTorch's, the same order of sums; a non-finite element next to a row's range still
    meets a 0 weight); 'lanczos' (3 lobes) needs ``antialias=True``, as in PyTorch; uint8
    antialiasing raises NotImplementedError.

    >>> interpolate(vkml.ones(1, 1, 2), scale_factor=2).shape  # doctest: +SKIP
    (1, 1, 4)
    """
    if not isinstance(input, functions._tensor.Tensor):
        raise TypeError(f"'interpolate': input must be a vkml.Tensor, got {type(input).__name__}")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "'interpolate': align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("'interpolate': only one of size or scale_factor should be defined")
    if size is not None:
        scales = [None] * max(dim, 0)
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "'interpolate': Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {spatial} and output size of {size}. Please provide input tensor "
                    "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                )
            if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in size):
                raise TypeError(
                    "'interpolate': expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(s) for s in size]}"
                )
            out = [int(s) for s in size]
        else:
            out = [int(size)] * max(dim, 0)
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "'interpolate': Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please "
                    "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scales = [float(f) for f in scale_factor]
        else:
            scales = [float(scale_factor)] * max(dim, 0)
        out = [int(s * f) for s, f in zip(spatial, scales)]  # PyTorch truncates the double product
    else:
        raise ValueError("'interpolate': either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("'interpolate': recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = [None] * len(scales)  # the kernels recompute in/out from the integer sizes
    if antialias:
        if not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
            raise ValueError(
                "'interpolate': Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
                "requires a 4-D tensor as input"
            )
        if not input.dtype.is_float:
            raise NotImplementedError(f"'interpolate': antialias=True is not supported by vkml for {input.dtype.name}")
    needed = _MODE_DIMS.get(mode)
    misfit = needed is None and mode not in ("nearest", "nearest-exact", "area", "lanczos")
    if input.ndim not in (3, 4, 5) or misfit or (mode in ("bicubic", "lanczos") and dim != 2):  # PyTorch's catch-all
        raise NotImplementedError(
            f"'interpolate': Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the "
            f"modes: {_MODES} (got {mode})"
        )
    if mode == "lanczos" and not antialias:
        raise ValueError("'interpolate': Lanczos mode requires antialias=True")
    if mode == "lanczos" and align_corners:
        raise ValueError("'interpolate': Lanczos mode does not support align_corners=True")
    if needed is not None and needed != dim:
        raise NotImplementedError(f"'interpolate': Got {input.ndim}D input, but {mode} mode needs {needed + 2}D input")
    if mode == "area":
        return FL._adaptive_avg(f"adaptive_avg_pool{dim}d", input, tuple(out), dim)
    if any(o <= 0 for o in out) or any(s <= 0 for s in spatial):
        names = _DIM_NAMES[dim]
        given = ", ".join(f"{n}: {s}" for n, s in zip(names, spatial))
        asked = ", ".join(f"{n}: {o}" for n, o in zip(names, out))
        raise RuntimeError(
            f"'interpolate': Input and output sizes should be greater than 0, but got input ({given}) output ({asked})"
        )
    if input.dtype is T.uint8 and mode == "bilinear":
        return FL._fresh(_uint8_bilinear(input, spatial, out, align_corners, scales), input)
    if not input.dtype.is_float and (input.dtype is not T.uint8 or mode not in ("nearest", "nearest-exact")):
        # PyTorch's kernels take floats and uint8 (nearest, bilinear); an int or bool input is its NotImplementedError
        raise NotImplementedError(f"'interpolate': mode {mode!r} is not implemented for {input.dtype.name}")
    if mode in ("nearest", "nearest-exact"):
        exact = mode == "nearest-exact"
        picks = {2 + k: _nearest_taps(s, o, f, exact, dim) for k, (s, o, f) in enumerate(zip(spatial, out, scales))}
        out = FL._fresh(_gather_repeats(input, picks), input)
        # an integer factor gathers by an expand: a view with zero strides, where PyTorch's result is contiguous
        # (in the input's channels-last format, if it has one)
        return FL._memory_format.keep(out.clone() if out._base is not None else out, input)
    taps = _cubic_taps if mode == "bicubic" else _linear_taps
    if antialias:
        taps = functools.partial(_antialias_taps, mode=mode)
    # half types are weighed in float32 and rounded once at the end, as PyTorch's kernels (whose opmath is
    # float32); a bfloat16 operand would otherwise promote with the float32 weights and stay float32
    narrow = input.dtype in (T.float16, T.bfloat16)

    def weigh(x, taps):
        x = x.float() if narrow else x
        for k in reversed(range(dim)):  # the last dim innermost, as PyTorch's nested sum
            x = _resample(x, 2 + k, taps(spatial[k], out[k], align_corners, scales[k]))
        return x.to(input.dtype) if narrow else x

    if narrow and not antialias and mode != "bilinear":
        # PyTorch's Nd kernel stores the weights in the input's dtype; its backward kernel weighs in float32
        value = weigh(input.detach(), functools.partial(_narrowed_taps, taps, input.dtype))
        return FL.with_float_gradient(input, value, lambda x: weigh(x, taps))
    return weigh(input, taps)


def _deprecated(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
    """``interpolate`` under PyTorch's deprecated name (with its deprecation warning).

    >>> upsample(vkml.ones(1, 1, 2), scale_factor=2).shape  # doctest: +SKIP
    (1, 1, 4)
    """
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """``interpolate(..., mode='nearest')`` under PyTorch's deprecated name (with its warning).

    >>> upsample_nearest(vkml.ones(1, 1, 2), scale_factor=2).shape  # doctest: +SKIP
    (1, 1, 4)
    """
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``interpolate(..., mode='bilinear', align_corners=True)`` under PyTorch's deprecated name.

    >>> upsample_bilinear(vkml.ones(1, 1, 2, 2), scale_factor=2).shape  # doctest: +SKIP
    (1, 1, 4, 4)
    """
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------------- shuffles


def _int_factor(op: str, name: str, value) -> int:
    """PyTorch's int argument: an integer or a one-element integer tensor; a float or a bool is its TypeError
    (a float factor would otherwise reach a reshape with fractional sizes)."""
    if isinstance(value, functions._tensor.Tensor) and value.numel() == 1 and not value.dtype.is_float:
        return int(value.item())
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{op}(): argument '{name}' (position 2) must be int, not {type(value).__name__}")
    return int(value)


@autograd.shown_as("PixelShuffleBackward0", autograd.input_edge)
def pixel_shuffle(input, upscale_factor: int):
    """(*, C·r², H, W) to (*, C, H·r, W·r): channel c·r² + i·r + j goes to row offset i, column offset j.

    A reshape, a permute and a reshape (values copied, exact).

    >>> pixel_shuffle(vkml.ones(1, 4, 2, 2), 2).shape  # doctest: +SKIP
    (1, 1, 4, 4)
    """
    r = _int_factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(
            f"'pixel_shuffle': pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"'pixel_shuffle': pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "'pixel_shuffle': pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    m = len(lead)
    x = functions.reshape(input, *lead, c // (r * r), r, r, h, w)
    x = functions.permute(x, (*range(m), m, m + 3, m + 1, m + 4, m + 2))
    return FL._fresh(functions.reshape(x, *lead, c // (r * r), h * r, w * r), input)


@autograd.shown_as("PixelUnshuffleBackward0", autograd.input_edge)
def pixel_unshuffle(input, downscale_factor: int):
    """The inverse of ``pixel_shuffle``: (*, C, H·r, W·r) to (*, C·r², H, W).

    >>> pixel_unshuffle(vkml.ones(1, 1, 4, 4), 2).shape  # doctest: +SKIP
    (1, 4, 2, 2)
    """
    r = _int_factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(
            f"'pixel_unshuffle': pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"'pixel_unshuffle': pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    for name, size, at in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"'pixel_unshuffle': pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({at})={size} is not divisible by {r}"
            )
    m = len(lead)
    x = functions.reshape(input, *lead, c, h // r, r, w // r, r)
    x = functions.permute(x, (*range(m), m, m + 2, m + 4, m + 1, m + 3))
    return FL._fresh(functions.reshape(x, *lead, c * r * r, h // r, w // r), input)


def channel_shuffle(input, groups: int):
    """(N, C, *) with channel g·(C/groups) + k moved to k·groups + g (ShuffleNet's shuffle); exact.

    >>> channel_shuffle(vkml.arange(4.0).reshape(1, 4, 1), 2).reshape(-1).tolist()  # doctest: +SKIP
    [0.0, 2.0, 1.0, 3.0]
    """
    if input.ndim <= 2:
        raise RuntimeError(
            f"'channel_shuffle': channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{list(input.shape)}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"'channel_shuffle': Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(
            f"'channel_shuffle': Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    x = functions.reshape(input, n, groups, c // groups, *rest)
    return FL._fresh(functions.reshape(functions.transpose(x, 1, 2), n, c, *rest), input)


# ---------------------------------------------------------------------- sampling grids


def _grid_align(op: str, align_corners):
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
            "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
            "details.",
            stacklevel=3,
        )
        return False
    return bool(align_corners)


def _linspace_from_neg_one(steps: int, align_corners: bool) -> np.ndarray:
    """PyTorch's ``linspace_from_neg_one`` in float32: linspace(-1, 1) from both ends, scaled by (n-1)/n
    unless ``align_corners``; one step is [0]."""
    if steps <= 1:
        return np.zeros(1, _F32)
    step = _F32(2) / _F32(steps - 1)
    i = np.arange(steps)
    values = np.where(
        i < steps // 2, _F32(-1) + step * i.astype(_F32), _F32(1) - step * (steps - 1 - i).astype(_F32)
    ).astype(_F32)
    if not align_corners:
        values = (values * _F32(steps - 1)).astype(_F32) / _F32(steps)
    return values.astype(_F32)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps ``theta`` (N, 2, 3) or (N, 3, 4).

    Each output point is theta times (x, y[, z], 1), where x, y, z run over [-1, 1] as PyTorch's
    ``linspace_from_neg_one`` (pixel centres unless ``align_corners``): a host-made base grid and one
    batched ``matmul``, differentiable in ``theta``. ``align_corners=None`` warns and means False.

    >>> affine_grid(vkml.tensor([[[1.0, 0, 0], [0, 1, 0]]]), (1, 1, 2, 2), align_corners=False).shape  # doctest: +SKIP
    (1, 2, 2, 2)
    """
    align_corners = _grid_align("affine_grid", align_corners)
    if not isinstance(theta, functions._tensor.Tensor):
        raise TypeError(f"'affine_grid': theta must be a vkml.Tensor, got {type(theta).__name__}")
    if not theta.dtype.is_float:
        raise ValueError(f"'affine_grid': Expected theta to have floating point type, but got {theta.dtype}")
    given, size = size, [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(
            "'affine_grid': affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {given}."
        )
    n = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (n, n + 1):
        raise ValueError(
            f"'affine_grid': Expected a batch of {n}D affine matrices of shape Nx{n}x{n + 1} for size {given}. "
            f"Got {theta.shape}."
        )
    if theta.shape[0] != size[0]:
        # PyTorch's batched matmul of the base grid by theta raises this
        raise RuntimeError(
            f"'affine_grid': Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, {n + 1}] "
            f"but got: [{theta.shape[0]}, {n + 1}]. (theta holds {theta.shape[0]} matrices, size asks for {size[0]})"
        )
    if align_corners and min(size[2:]) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
            "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"'affine_grid': Expected non-zero, positive output size. Got {size}")
    spatial = size[2:]
    base = np.ones((*spatial, n + 1), _F32)
    for k in range(n):  # coordinate k runs along spatial dim n-1-k: x along the last
        axis = n - 1 - k
        shape = [1] * n
        shape[axis] = spatial[axis]
        base[..., k] = _linspace_from_neg_one(spatial[axis], align_corners).reshape(shape)
    points = creation.tensor(base.reshape(1, -1, n + 1), device=theta.device, dtype=theta.dtype)
    grid = functions.matmul(points, functions.transpose(theta, 1, 2))  # (N, prod(spatial), n)
    return functions.reshape(grid, size[0], *spatial, n)


def _unnormalize(coord, size: int, align_corners: bool):
    """PyTorch's ``grid_sampler_unnormalize``: [-1, 1] to [0, size - 1] (corners) or [-0.5, size - 0.5]."""
    if align_corners:
        return ((coord + 1.0) / 2.0) * float(size - 1)
    return ((coord + 1.0) * float(size) - 1.0) / 2.0


def _reflect(coord, twice_low: int, twice_high: int):
    """PyTorch's ``reflect_coordinates`` (tensors or numpy arrays alike)."""
    if twice_low == twice_high:
        return coord * 0.0
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    folded = abs(coord - low)
    extra = folded % span  # non-negative: fmod and the remainder agree
    flips = (folded / span) // 1.0
    even = (flips % 2.0) == 0.0
    if isinstance(coord, np.ndarray):
        return np.where(even, extra + _F32(low), _F32(span) - extra + _F32(low)).astype(_F32)
    return functions.where(even, extra + low, (span - extra) + low)


def _pad_coordinates(coord, size: int, padding_mode: str, align_corners: bool):
    """PyTorch's ``compute_coordinates``: border clips into [0, size - 1], reflection reflects, then clips."""
    if padding_mode == "zeros":
        return coord
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
    # PyTorch clips with max(coord, 0) taking 0 for NaN (CPU and CUDA alike): a NaN or infinite grid point
    # reads the first element under 'border' and 'reflection' (reflecting an infinity makes a NaN)
    if isinstance(coord, np.ndarray):
        return np.minimum(np.fmax(coord, _F32(0)), _F32(size - 1)).astype(_F32)
    # PyTorch's clip_coordinates_set_grad: no gradient at the bounds themselves, nor beyond them
    inside = (coord > 0.0) & (coord < float(size - 1))
    clipped = functions.where(coord != coord, 0.0, functions.clamp(coord, 0.0, float(size - 1)))
    return functions.where(inside, coord, clipped.detach())


def _corner_positions(indices, spatial, batch_shape):
    """Flat positions into (N, C, *spatial) of integer coordinates ``indices`` (one array (N, *out) per
    spatial dim; -1 where any is outside), shaped (N, C, *out)."""
    n = len(spatial)
    inside = np.ones(indices[0].shape, bool)
    flat = np.zeros(indices[0].shape, np.int64)
    for k, index in enumerate(indices):
        inside &= (index >= 0) & (index < spatial[k])
        flat = flat + np.where(inside, index, 0) * math.prod(spatial[k + 1 :])
    batch, channels = batch_shape
    plane = math.prod(spatial)
    base = (np.arange(batch)[:, None] * channels + np.arange(channels)[None, :]) * plane
    flat = base.reshape(batch, channels, *([1] * n)) + flat[:, None]
    return np.where(inside[:, None], flat, -1)


def _host_coordinates(coords) -> list[np.ndarray]:
    """The coordinates read back (one submission): their integer parts decide which elements are read."""
    # numpy has no bfloat16: its coordinates come back widened (exactly) to float32
    coords = [functions.cast(c, T.float32) if c.dtype is T.bfloat16 else c for c in coords]
    realize.realize(*coords)
    values = [c.numpy().astype(_F32) for c in coords]
    # NaN and ±inf read nothing (their weights give NaN), and never reach an integer cast
    return [np.where(np.isfinite(v), v, _F32(-2)) for v in values]


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners=None):
    """``input`` (N, C, H, W) or (N, C, D, H, W) sampled at ``grid`` (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3).

    Grid coordinates are in [-1, 1], x (the width) first; they are unnormalised and padded
    ('zeros', 'border', 'reflection') with PyTorch's formulas, then read back to the host (one
    submission) to decide which elements each output reads: one gather per corner (bilinear:
    2^dims corners, weights the products of 1 - t and t per dim; nearest: round half to even;
    bicubic, 2-D only: 4x4 taps with Keys' A = -0.75, each tap padded as PyTorch's
    ``get_value_bounded``). Differentiable in ``input`` (the gathers' scatter-add) and in ``grid``
    (through the weights); nearest gives ``grid`` a zero gradient, as PyTorch. ``align_corners=None`` warns and
    means False.

    >>> grid_sample(vkml.ones(1, 1, 2, 2), vkml.zeros(1, 1, 1, 2), align_corners=False).tolist()  # doctest: +SKIP
    [[[[1.0]]]]
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"'grid_sample': nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
            f"but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "'grid_sample': nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    align_corners = _grid_align("grid_sample", align_corners)
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, functions._tensor.Tensor):
            raise TypeError(f"'grid_sample': {name} must be a vkml.Tensor, got {type(t).__name__}")
    # PyTorch's checks in its order: batch size, the grid's last dim, empty spatial dims, bicubic on 5-D, the
    # ranks, then the dtypes
    if input.ndim < 1 or grid.ndim < 1 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            "'grid_sample': grid_sampler(): expected grid and input to have same batch size, but got input with "
            f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    n = input.ndim - 2
    if grid.shape[-1] != n:
        raise RuntimeError(
            f"'grid_sample': grid_sampler(): expected grid to have size {n} in last dimension, but got grid with "
            f"sizes {list(grid.shape)}"
        )
    for dim in range(2, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(
                f"'grid_sample': grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                f"sizes {list(input.shape)} with dimension {dim} being empty"
            )
    if mode == "bicubic" and input.ndim == 5:
        raise RuntimeError("'grid_sample': grid_sampler(): bicubic interpolation only supports 4D input")
    if input.ndim != 4 and not (input.ndim == 5 and grid.ndim == 5) or grid.ndim != input.ndim:
        rank = 4 if input.ndim == 4 else 5
        raise RuntimeError(
            f"'grid_sample': grid_sampler(): expected {rank}D input and grid with same number of dimensions, but "
            f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if mode == "bicubic" and n != 2:
        raise RuntimeError("'grid_sample': grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype is not grid.dtype or not input.dtype.is_float:
        raise RuntimeError(
            f"'grid_sample': grid_sampler(): expected input and grid to have the same floating point dtype, but "
            f"input has {input.dtype.name} and grid has {grid.dtype.name}"
        )
    spatial = tuple(input.shape[2:])
    batch_shape = tuple(input.shape[:2])
    # coords[k]: the coordinate along spatial dim k, (N, *out); the grid lists x (the last dim) first
    coords = [_unnormalize(grid[..., n - 1 - k], spatial[k], align_corners) for k in range(n)]
    if mode == "bicubic":
        return _grid_bicubic(input, coords, spatial, padding_mode, align_corners)
    coords = [_pad_coordinates(c, s, padding_mode, align_corners) for c, s in zip(coords, spatial)]
    host = _host_coordinates(coords)
    if mode == "nearest":
        picks = [np.round(h).astype(np.int64) for h in host]  # nearbyint: half to even
        out = indexing.take_positions(input, _corner_positions(picks, spatial, batch_shape))
        if grid.requires_grad:
            # PyTorch's nearest mode gives grid a zero gradient, not None: a select that never takes grid
            never = creation.zeros(out.shape, dtype=T.bool_, device=input.device)
            out = functions.where(never, functions.unsqueeze(grid[..., 0], 1), out)
        return out
    lows = [np.floor(h) for h in host]
    fracs = [c - creation.tensor(low, device=input.device, dtype=c.dtype) for c, low in zip(coords, lows)]
    total = None
    for corner in np.ndindex(*(2,) * n):
        indices = [low.astype(np.int64) + bit for low, bit in zip(lows, corner)]
        values = indexing.take_positions(input, _corner_positions(indices, spatial, batch_shape))
        weight = None
        for frac, bit in zip(fracs, corner):
            w = frac if bit else 1.0 - frac
            weight = w if weight is None else weight * w
        term = values * functions.unsqueeze(weight, 1)
        total = term if total is None else total + term
    return total


def _cubic_weights(t):
    """Keys' cubic convolution weights (A = -0.75) of the 4 taps around fraction ``t``, as tensors."""
    a = -0.75

    def near(x):
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0

    def far(x):
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a

    rest = 1.0 - t
    return [far(t + 1.0), near(t), near(rest), far(rest + 1.0)]


def _grid_bicubic(input, coords, spatial, padding_mode: str, align_corners: bool):
    host = _host_coordinates(coords)
    lows = [np.floor(h) for h in host]
    weights = [
        _cubic_weights(c - creation.tensor(low, device=input.device, dtype=c.dtype)) for c, low in zip(coords, lows)
    ]
    batch_shape = tuple(input.shape[:2])
    rows = []
    for i in range(4):  # PyTorch: each row along x first, then the rows along y
        row = None
        for j in range(4):
            taps = [
                _pad_coordinates((low + _F32(offset - 1)).astype(_F32), size, padding_mode, align_corners)
                for low, offset, size in zip(lows, (i, j), spatial)
            ]
            indices = [np.trunc(t).astype(np.int64) for t in taps]  # PyTorch casts the padded coordinate
            values = indexing.take_positions(input, _corner_positions(indices, spatial, batch_shape))
            term = values * functions.unsqueeze(weights[1][j], 1)
            row = term if row is None else row + term
        rows.append(row * functions.unsqueeze(weights[0][i], 1))
    total = rows[0]
    for row in rows[1:]:
        total = total + row
    return total
