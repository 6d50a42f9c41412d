"""Convolution, pooling and normalisation layers as composites of vkml's views, ``cat`` and ``matmul``.

Re-exported by ``vkml.nn.functional`` with ``torch.nn.functional``'s names and defaults. Nothing
here has a kernel of its own: the windows of a convolution or a pooling are one window view
of the padded input (``Tensor.unfold`` over every spatial dim: index arithmetic, no copies;
"im2col"); a convolution is then one batched ``matmul`` per group, a pooling one reduction.
Gradients come from the ops used, so both are differentiable in input and weight; a one-group
convolution is one op with its own rule (``_conv_grad``: at stride 1 its input gradient is a
convolution too).

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.conv2d(vkml.ones(1, 1, 3, 3), vkml.ones(1, 1, 2, 2)).tolist()  # doctest: +SKIP
[[[[4.0, 4.0], [4.0, 4.0]]]]
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .. import config as vkml_config
from ..frontend import autograd, creation, indexing, mutation, runtime_names
from ..frontend import memory_format as _memory_format
from ..frontend import operators as functions
from ..frontend import shape as shape_ops
from ..frontend import windows as _window_ops
from ..frontend.autograd import differentiable
from ..frontend.caller import user_stacklevel
from ..graph import build as lazy
from ..graph.node import Node, Op
from ..ir import types as T
from ..kernels.matmul import coopmat2 as _coopmat2
from ..ops import grads as G
from . import half_conv as _half_conv

_PAD_MODES = ("zeros", "reflect", "replicate", "circular")
_warned_same_padding_copy = False


def _tuple(op: str, name: str, value, n: int) -> tuple[int, ...]:
    """An int or a sequence of ``n`` ints, as PyTorch's ``_pair``/``_single``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    values = tuple(value)
    if len(values) == 1:
        values = values * n
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        raise TypeError(f"'{op}': {name} must be an int or a tuple of {n} ints, got {value!r}")
    if len(values) != n:  # PyTorch's RuntimeError (its argument parser takes any int list)
        raise RuntimeError(f"'{op}': {name} must be a single int or a tuple of {n} ints, got {value!r}")
    return tuple(int(v) for v in values)


def _window_views(x, kernel, stride, dilation, out_size) -> list:
    """The ``prod(kernel)`` strided views of ``x`` (..., *spatial) that make up its pooling windows.

    View (i, j) — i over the first spatial dim, j over the second, i-major — is
    ``x[..., i·d0 :: s0][:o0], x[..., j·d1 :: s1][:o1]``: element (a, b) of view (i, j) is tap
    (i, j) of output position (a, b). Each is a view (no copy), so an elementwise fold over them
    is one kernel.
    """
    lead = x.ndim - len(kernel)
    return [
        functions._slice(x, *box)
        for box in _window_slices(tuple(x.shape), lead, *map(tuple, (kernel, stride, dilation, out_size)))
    ]


@functools.lru_cache(maxsize=256)
def _window_slices(shape: tuple, lead: int, kernel: tuple, stride: tuple, dilation: tuple, out_size: tuple) -> tuple:
    """The (starts, stops, steps) of each of ``_window_views``' slices, in its order."""
    boxes = []
    for offsets in np.ndindex(*kernel):
        starts = [0] * lead + [o * d for o, d in zip(offsets, dilation)]
        stops = list(shape[:lead]) + [
            o * d + (n - 1) * s + 1 for o, d, n, s in zip(offsets, dilation, out_size, stride)
        ]
        steps = [1] * lead + list(stride)
        boxes.append((tuple(starts), tuple(stops), tuple(steps)))
    return tuple(boxes)


def _windows(x, kernel, stride, dilation, out_size, dim: int):
    """The ``prod(kernel)`` windows of ``x`` (..., *spatial) along a new dim ``dim`` (``_window_views``,
    stacked): the spatial dims replaced by ``out_size`` and a dim of size ``prod(kernel)`` inserted at
    ``dim``. As a last dim, one window view (vkml/frontend/windows.py), else a ``cat``. Gradients add
    back into the positions each window read: a window view's taps in descending order (PyTorch's
    pooling backward adds the windows in row-major order), a cat's ascending.
    """
    if dim == x.ndim and tuple(stride) == tuple(kernel) and all(d == 1 for d in dilation) and math.prod(kernel) > 1:
        return _tiled_windows(x, kernel, out_size)
    if dim == x.ndim:  # one window view (the taps row-major in its last dims), not a cat of shifted slices
        n = len(kernel)
        dims = tuple(range(x.ndim - n, x.ndim))
        cols = _window_ops.window(x, dims, tuple(kernel), tuple(stride), tuple(dilation), descending=True)
        return functions.reshape(cols, *cols.shape[: x.ndim], math.prod(kernel))
    parts = [functions.unsqueeze(view, dim) for view in _window_views(x, kernel, stride, dilation, out_size)]
    return parts[0] if len(parts) == 1 else functions.cat(parts, dim)


def _columns(x, kernel, stride, dilation):
    """im2col of ``x`` (N, C, *spatial): (N, C, *kernel, *out), element (n, c, *tap, *o) being
    ``x[n, c, *(o·stride + tap·dilation)]``. One window view (vkml/frontend/windows.py): no copy
    and one graph node, where a ``cat`` of ``prod(kernel)`` shifted slices took ~3 ops a tap. Its
    gradient adds the taps back in ascending order, as the slices' did: the same bits."""
    n = len(kernel)
    cols = _window_ops.window(x, tuple(range(2, 2 + n)), tuple(kernel), tuple(stride), tuple(dilation))
    return functions.permute(cols, 0, 1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n))


def _tiled_windows(x, kernel, out_size):
    """``_windows`` where the windows tile the input (stride = kernel, no dilation): a crop, a reshape
    and a permute, not ``prod(kernel)`` views joined by ``cat`` (which grows with the kernel: a
    global pool is one window of every element). Element (..., a, b, i·kw + j) is x[..., a·kh + i,
    b·kw + j] as in ``_windows``, so a reduction over the last dim sees the same values in the same
    order."""
    n = len(kernel)
    lead = x.ndim - n
    stops = tuple(x.shape[:lead]) + tuple(o * k for o, k in zip(out_size, kernel))
    if stops != tuple(x.shape):
        x = functions._slice(x, (0,) * x.ndim, stops, (1,) * x.ndim)
    split = list(x.shape[:lead]) + [v for o, k in zip(out_size, kernel) for v in (o, k)]
    order = list(range(lead)) + [lead + 2 * i for i in range(n)] + [lead + 2 * i + 1 for i in range(n)]
    tiles = functions.permute(functions.reshape(x, *split), *order)
    return functions.reshape(tiles, *x.shape[:lead], *out_size, math.prod(kernel))


def _fresh(result, input):
    """``result``, or its clone where it shares ``input``'s storage (a view, or ``input`` itself).

    PyTorch's layers return new tensors even where the arithmetic is a reshape (a kernel of 1, one
    group, an unchanged size); a view here would let an in-place op on the result change the input.
    """
    owner = input._base if input._base is not None else input
    if result is input or result is owner or result._base is owner:
        return result.clone()
    return result


def _pad_mode(op: str, x, pads, mode: str):
    """``x`` padded on its last ``len(pads)`` dims by (before, after) amounts ``pads``, in ``mode``
    ('zeros', or F.pad's 'reflect', 'replicate', 'circular', as PyTorch's conv pads first)."""
    if all(p == (0, 0) for p in pads):
        return x
    flat = [a for pair in reversed(pads) for a in pair]
    if mode == "zeros":
        return functions.constant_pad_nd(x, flat, 0.0)
    return shape_ops.pad_nd(x, flat, mode)


# ---------------------------------------------------------------------- convolution


def _conv_operands(op, input, weight, bias, n: int) -> None:
    """The checks every convolution, plain or transposed, makes of its tensors (types, dims, dtypes)."""
    if not isinstance(input, functions._tensor.Tensor) or not isinstance(weight, functions._tensor.Tensor):
        raise TypeError(f"'{op}': input and weight must be vkml.Tensors")
    if weight.ndim != n + 2:
        raise RuntimeError(f"'{op}': Expected {n + 2}-dimensional weight, got weight of shape {tuple(weight.shape)}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"'{op}': Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {op}, "
            f"but got input of size: {list(input.shape)}"
        )
    if input.dtype is not weight.dtype:
        raise RuntimeError(
            f"'{op}': expected scalar type {mutation.torch_name(input.dtype)} but found "
            f"{mutation.torch_name(weight.dtype)} (input and weight dtypes must be the same)"
        )
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(
            f"'{op}': Input type ({input.dtype.name}) and bias type ({bias.dtype.name}) should be the same"
        )


@differentiable("conv_product", inputs=("x", "weight"))
def _conv_product(x, weight, kernel, stride, dilation, out_size, pads, wide=False):
    """One group's convolution as one 2-D product: (O, C·taps) @ (C·taps, N·L), L = prod(out_size), of
    x (N, C, *spatial) zero-padded by ``pads`` ((before, after) a spatial dim; negative amounts crop).

    The im2col matrix is the windows of x viewed channels first, (C, *kernel, N, *out) (one window
    view), computed into a buffer of its own so that a matrix template loads it as stored: its rows
    (c, tap) are channel-major, tap-minor, weight.reshape(O, C·taps)'s column order, so each output
    adds its products in ascending (c, tap), the order of the page, and its kernel reads x and writes
    the matrix along the last spatial dim. One long product (64 × 576 @ 576 × 200704 for 64 channels
    at batch 64) keeps a GPU busy where the per-sample products (64 × 576 @ 576 × 3136, 64 of them)
    did not. The result (O, N, *out) is returned as the view (N, O, *out). Its gradients are
    ``_conv_implicit``'s (``_conv_grad``): the same bits in both forms. ``wide``: as ``_conv_implicit``'s.
    """
    x = _pad_mode("conv", x, pads, "zeros")
    batch, out_channels = x.shape[0], weight.shape[0]
    cols = _columns_matrix(x, tuple(kernel), tuple(stride), tuple(dilation))
    out = functions.matmul(*_widened(wide, functions.reshape(weight, out_channels, -1), cols))  # (O, N·L)
    return functions.transpose(functions.reshape(out, out_channels, batch, *out_size), 0, 1)


@differentiable("conv_columns", inputs=("x",))
def _columns_matrix(x, kernel, stride, dilation):
    """``_conv_product``'s im2col matrix (C·taps, N·L) of ``x`` (N, C, *spatial), computed, not a view:
    one load of x per element here, where a product reading the windows would gather them once per tile
    of outputs. Its rows are (c, *tap), its columns (n, *out). A float16 or bfloat16 x is copied as its
    16-bit patterns (an int16 ``x·1``: the same bits, the pad's +0.0 included), not through float32 and a
    software rounding back; any other x as ``x·1.0`` (x for every value, signed zeros and NaN included).
    The gradient (``_columns_matrix_grad``) folds the windows back, taps in ascending order."""
    # Built on nodes: the views and the copy of the public ops (permute, window, mul, reshape), node
    # for node the graph those build, without a handle, a storage link and a grad check per step
    # (nothing here is recorded: autograd sees this function as one op, and its temporaries are
    # never written to).
    n = len(kernel)
    node = x.node
    first = lazy.view_node(node, lambda st: st.permute((1, 0, *range(2, n + 2))))  # (C, N, *spatial)
    dims = tuple(range(2, 2 + n))

    def windows(stack):
        for d, k, s, dl in zip(dims, kernel, stride, dilation):
            stack = stack.window(d, k, s, dl)
        return stack

    cols = lazy.view_node(first, windows)
    order = (0, *range(2 + n, 2 + 2 * n), 1, *range(2, 2 + n))
    cols = lazy.view_node(cols, lambda st: st.permute(order))  # (C, *kernel, N, *out)
    if node.dtype in (T.float16, T.bfloat16):
        cols = lazy.bitcast_node(lazy.elementwise("mul", [lazy.bitcast_node(cols, T.int16), 1]), node.dtype)
    else:
        cols = lazy.elementwise("mul", [cols, 1.0])
    rows = node.shape[1] * math.prod(kernel)
    if not rows:  # reshape's error for a -1 beside a 0
        return functions.reshape(functions._wrap(cols), rows, -1)
    return functions._wrap(lazy.reshape_node(cols, (rows, math.prod(cols.shape) // rows)))


def _columns_matrix_grad(c):
    """The gradient of ``_columns_matrix``'s x: the columns' gradient folded back over the window view
    (``fold_windows``, taps in ascending order), as the permutes, the window view and ``x·1``'s gradients
    composed gave it (``g·1`` is ``g``): the same bits."""
    (x,) = c.inputs
    return (_fold_columns(c.F, c.g, x, c.attrs["kernel"], c.attrs["stride"], c.attrs["dilation"]),)


def _fold_columns(F, columns, x, kernel, stride, dilation):
    """The gradient of x (N, C, *spatial) from its im2col matrix's gradient ``columns`` (C·taps, N·L)."""
    n = len(kernel)
    first_shape = (x.shape[1], x.shape[0], *x.shape[2:])
    out = tuple((s - d * (k - 1) - 1) // st + 1 for s, k, st, d in zip(x.shape[2:], kernel, stride, dilation))
    g = functions.reshape(columns, first_shape[0], *kernel, x.shape[0], *out)  # (C, *kernel, N, *out)
    g = functions.permute(g, 0, 1 + n, *range(2 + n, 2 + 2 * n), *range(1, 1 + n))  # (C, N, *out, *kernel)
    first = functions.permute(x, 1, 0, *range(2, n + 2))
    g = G.fold_windows(F, g, first, tuple(range(2, 2 + n)), kernel, stride, dilation)
    return functions.permute(g, 1, 0, *range(2, n + 2))


G.RULES["conv_columns"] = _columns_matrix_grad


# The implicit GEMM multiplies each sample apart (writing NCHW as it stores) where its output positions
# fill the product's column tiles (up to 128 wide) to within 1/16; else, as for late ResNet stages (7², 14²,
# 28² positions), the batch's columns make one long product and a layout kernel (a small one there) writes NCHW.
PER_SAMPLE_TILE = 128


def _per_sample(length: int) -> bool:
    """Whether ``length`` output positions a sample waste at most 1/16 of the column tiles covering them.

    >>> [_per_sample(n) for n in (3136, 1024, 784, 196, 49)]
    [True, True, False, False, False]
    """
    covered = -(-length // PER_SAMPLE_TILE) * PER_SAMPLE_TILE
    return covered * 16 <= length * 17


def _implicit_form(x, weight) -> bool:
    """Whether a one-group convolution takes the implicit-GEMM product (else the im2col form).

    Both sum the same products in the same order. Where the device multiplies float16 operands on
    workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2), the columns' plain product
    takes that template, and the gathered operand of the implicit form cannot (it takes the
    subgroup-scope one): there the im2col form measured faster (docs/benchmarks.md, session 12), so
    it stays. ``VKML_CONV_IMPLICIT=0`` turns the implicit form off everywhere.
    """
    if not vkml_config.conv_implicit():
        return False
    return not _coopmat2.applies(getattr(x.device, "features", None), x.dtype, weight.dtype)


@differentiable("conv_implicit", inputs=("x", "weight"))
def _conv_implicit(x, weight, kernel, stride, dilation, out_size, pads, wide=False):
    """One group's convolution as an implicit GEMM, (N, O, *out), of x (N, C, *spatial) zero-padded by ``pads``
    ((before, after) a spatial dim; negative amounts crop): the product's B operand is the windows of the padded
    x, a view, so the matmul templates gather each element of a B tile from x by index arithmetic as they stage
    it (k = (c, *tap) -> x[n, c, *(o·stride + tap·dilation)], the padding's +0.0 from the view's mask), and no
    im2col matrix is written.

    Where ``_per_sample(L)``: (O, C·taps) @ (C·taps, L) for each sample, B viewed as (N, C·taps, L); the
    result is the product's own (N, O, L) buffer, NCHW with no layout kernel, and a bias added to it is
    computed at the product's store. Else one product (O, C·taps) @ (C·taps, N·L) as ``_conv_product``'s,
    B viewed as its columns, returned as the view (N, O, *out) of its result (the caller's bias or clone
    is the layout kernel).

    B's rows are (c, *tap), channel-major, tap-minor, weight.reshape(O, C·taps)'s column order, so each
    output adds its products in ascending (c, tap) from -0.0: ``_conv_product``'s sums, the same bits. The
    gradients (``_conv_grad``) are the same in both forms: the same bits.

    ``wide`` (bfloat16 operands): the product's float32 sums, not rounded (half products are exact
    in float32, so they are the half product's sums), for a bias to be added before the one rounding; the
    gradients are the half convolution's all the same (the output's gradient holds half values).
    """
    # Built on nodes, as _columns_matrix: the pad, the windows, the permutes and the reshapes compose into
    # one view of x, the view the public ops would end with, without a handle, a storage link and a
    # grad check each (nothing here is recorded, and no temporary is written to); matmul is the public op.
    batch, channels, out_channels, n = x.shape[0], x.shape[1], weight.shape[0], len(kernel)
    length = math.prod(out_size)
    rows = channels * math.prod(kernel)
    base, stack = lazy.view_base(x.node)
    stack = _padded_windows(stack, pads, kernel, stride, dilation)  # (N, C, *out, *kernel)
    w = functions._wrap(lazy.reshape_node(weight.node, (out_channels, rows)))
    if _per_sample(length):
        stack = stack.permute((0, 1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n)))  # (N, C, *kernel, *out)
        cols = lazy.view_of(base, stack.reshape((batch, rows, length)))
        out = functions.matmul(*_widened(wide, w, functions._wrap(cols)))  # (N, O, L)
        return functions._wrap(lazy.reshape_node(out.node, (batch, out_channels, *out_size)))
    stack = stack.permute((1, *range(2 + n, 2 + 2 * n), 0, *range(2, 2 + n)))  # (C, *kernel, N, *out)
    cols = lazy.view_of(base, stack.reshape((rows, batch * length)))
    out = functions.matmul(*_widened(wide, w, functions._wrap(cols))).node  # (O, N·L)
    out = lazy.reshape_node(out, (out_channels, batch, *out_size))
    return functions._wrap(lazy.view_node(out, lambda st: st.permute((1, 0, *range(2, 2 + n)))))


def _widened(wide: bool, *operands):
    """The operands, cast to float32 if ``wide`` (the casts stay inside the product's loads)."""
    return tuple(functions.cast(t, T.float32) for t in operands) if wide else operands


def _padded_windows(stack, pads, kernel, stride, dilation):
    """``stack`` (a view of (N, C, *spatial)) zero-padded by ``pads`` (negative amounts crop), as
    ``constant_pad_nd`` views it, then its windows, as ``_columns``' window view: (N, C, *out, *kernel)."""
    shape, n = stack.shape, len(kernel)
    starts = (0, 0, *(max(-a, 0) for a, _ in pads))
    stops = (*shape[:2], *(size + min(b, 0) for size, (_, b) in zip(shape[2:], pads)))
    if any(starts) or stops != tuple(shape):
        stack = stack.slice(starts, stops, (1,) * len(shape))
    grow = ((0, 0), (0, 0), *((max(a, 0), max(b, 0)) for a, b in pads))
    if any(p != (0, 0) for p in grow):
        stack = stack.pad(grow)
    for d, k, st, dl in zip(range(2, 2 + n), kernel, stride, dilation):
        stack = stack.window(d, k, st, dl)
    return stack


def _one_group_conv(x, weight, kernel, stride, dilation, out_size, pads, wide=False):
    """A one-group convolution of x zero-padded by ``pads``, (N, O, *out), in the form ``_implicit_form``
    picks (both sum the same products in the same order, and share their gradients); ``wide``: float32
    sums of half operands (``_conv_implicit``)."""
    form = _conv_implicit if _implicit_form(x, weight) else _conv_product
    return form(x, weight, kernel, stride, dilation, out_size, pads, wide=wide)


def _input_grad_by_conv(g, weight, kernel, dilation, pads, size):
    """The gradient of a stride-1 convolution's input (N, C, *size) from its output's gradient g (N, O, *out):
    itself a convolution, of g zero-padded by dilation·(k - 1) less the forward's padding on each side with the
    weight flipped in its spatial dims and its channels swapped (C, O, *kernel). One product, as the forward's,
    where the columns' gradient W^T @ g folded back took a product and a spread and an add a tap. Each element
    adds its O·taps products in ascending (output channel, flipped tap) order from -0.0: output channel by
    output channel, the taps in descending row-major order of the forward's kernel."""
    n = len(kernel)
    flipped = functions.transpose(functions.flip(weight, tuple(range(2, 2 + n))), 0, 1)  # (C, O, *kernel)
    full = tuple((d * (k - 1) - a, d * (k - 1) - b) for d, k, (a, b) in zip(dilation, kernel, pads))
    return _one_group_conv(g, flipped, tuple(kernel), (1,) * n, tuple(dilation), tuple(size), full)


def _conv_grad(c):
    """The gradients of a one-group convolution (``_conv_implicit`` and ``_conv_product`` alike). The weight's
    is (O, N·L) @ (N·L, C·taps) against the im2col matrix of the padded x, written out for it. The input's is,
    at stride 1, the convolution ``_input_grad_by_conv``; at a larger stride the columns' gradient
    W^T @ g (C·taps, N·L) folded back over the windows (``_fold_columns``, taps in ascending order), then
    cropped to the unpadded x."""
    x, weight = c.inputs
    kernel, stride, dilation, pads = (c.attrs[k] for k in ("kernel", "stride", "dilation", "pads"))
    out_channels = weight.shape[0]
    out_g = c.g if not c.attrs.get("wide") else functions.cast(c.g, x.dtype)  # exact: it holds half values
    g = functions.transpose(out_g, 0, 1)  # (O, N, *out)
    g = functions.reshape(g, out_channels, math.prod(g.shape[1:]))  # (O, N·L)
    gx = gw = None
    # float16/bfloat16 of a small convolution: PyTorch's CPU rounding (vkml/nn/half_conv.py)
    as_cpu = _half_conv.rounds_as_cpu(x.dtype, math.prod(g.shape) * math.prod(weight.shape[1:]))
    if c.needs[1]:
        cols = _columns_matrix(_pad_mode("conv", x, pads, "zeros"), kernel, stride, dilation)
        if as_cpu:  # accumulated sample by sample in the dtype
            gw = _half_weight_grad(out_g, cols, weight)
        else:
            gw = functions.reshape(functions.matmul(g, functions.transpose(cols, -1, -2)), *weight.shape)
    if c.needs[0] and all(s == 1 for s in stride) and not as_cpu:
        gx = _input_grad_by_conv(out_g, weight, kernel, dilation, pads, x.shape[2:])
    elif c.needs[0]:
        w = functions.reshape(weight, out_channels, math.prod(weight.shape[1:]))
        padded = _pad_mode("conv", x, pads, "zeros")
        gx = _fold_columns(c.F, functions.matmul(functions.transpose(w, -1, -2), g), padded, kernel, stride, dilation)
        gx = _pad_mode("conv", gx, tuple((-a, -b) for a, b in pads), "zeros")  # the padding's gradient: a crop
    return gx, gw


def _half_weight_grad(out_g, cols, weight):
    """A half one-group convolution's weight gradient from g (N, O, *out) and the columns (C·taps, N·L):
    each sample's float32 product (O, C·taps), added up as ``half_conv.accumulate_samples`` adds."""
    batch, out_channels = out_g.shape[:2]
    g = functions.reshape(out_g, batch, out_channels, -1)  # (N, O, L)
    rows = functions.permute(functions.reshape(cols, cols.shape[0], batch, -1), 1, 2, 0)  # (N, L, C·taps)
    per_sample = functions.matmul(*functions.half_in_float32(g, rows))  # (N, O, C·taps) float32
    return functions.reshape(_half_conv.accumulate_samples(per_sample, weight.dtype), *weight.shape)


G.RULES["conv_implicit"] = _conv_grad
G.RULES["conv_product"] = _conv_grad


@autograd.shown_as(  # conv1d, conv2d, the Conv layers: one node in PyTorch, with an edge per operand
    "ConvolutionBackward0",
    lambda op, input, weight, bias, *a, **k: (autograd.edge(input), autograd.edge(weight), autograd.edge(bias)),
)
def _conv(op, input, weight, bias, stride, padding, dilation, groups, n: int, padding_mode="zeros"):
    _conv_operands(op, input, weight, bias, n)
    unbatched = input.ndim == n + 1
    if unbatched:
        input = functions.unsqueeze(input, 0)
    stride = _tuple(op, "stride", stride, n)
    dilation = _tuple(op, "dilation", dilation, n)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"'{op}': non-positive stride is not supported, got {stride}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"'{op}': dilation should be greater than zero, got {dilation}")
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError(f"'{op}': non-positive groups is not supported, got {groups}")
    out_channels, per_group = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    channels = input.shape[1]
    if out_channels < groups:  # PyTorch's check before divisibility (no output channel at all included)
        raise RuntimeError(
            f"'{op}': Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead"
        )
    if out_channels % groups:
        raise RuntimeError(
            f"'{op}': Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead"
        )
    if per_group * groups != channels:
        raise RuntimeError(
            f"'{op}': Given groups={groups}, weight of size {list(weight.shape)}, expected input{list(input.shape)} "
            f"to have {per_group * groups} channels, but got {channels} channels instead"
        )
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(
            f"'{op}': Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional "
            f"with {out_channels} elements, but got bias of size {list(bias.shape)} instead"
        )
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * n
        elif padding == "same":
            if any(s != 1 for s in stride):  # PyTorch's functional form raises RuntimeError (the module ValueError)
                raise RuntimeError(f"'{op}': padding='same' is not supported for strided convolutions")
            # PyTorch's split: the odd element of the total goes after
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(dilation, kernel)]
            global _warned_same_padding_copy
            # (PyTorch's modules pad for a padding_mode other than zeros themselves, then convolve unpadded)
            asymmetric = any(a != b for a, b in pads) and padding_mode == "zeros"
            if asymmetric and (not _warned_same_padding_copy or runtime_names._warn_always):
                _warned_same_padding_copy = True  # PyTorch's TORCH_WARN_ONCE: the first call of the process
                warnings.warn(
                    "Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy "
                    "of the input be created",
                    UserWarning,
                    stacklevel=user_stacklevel(),
                )
        else:
            raise RuntimeError(f"'{op}': Invalid padding string: {padding!r}")
    else:
        pads = [(p, p) for p in _tuple(op, "padding", padding, n)]
        if any(p < 0 for p, _ in pads):
            raise RuntimeError(f"'{op}': negative padding is not supported, got {padding}")
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"'{op}': padding_mode must be one of {_PAD_MODES}, got {padding_mode!r}")
    spatial = tuple(input.shape[2:])
    padded_size = tuple(s + a + b for s, (a, b) in zip(spatial, pads))
    effective = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    if any(p < e for p, e in zip(padded_size, effective)):
        raise RuntimeError(
            f"'{op}': Calculated padded input size per channel: ({' x '.join(map(str, padded_size))}). "
            f"Kernel size: ({' x '.join(map(str, effective))}). Kernel size can't be greater than actual input size"
        )
    out_size = tuple((p - e) // s + 1 for p, e, s in zip(padded_size, effective, stride))
    if channels == 0:
        return _no_input_channels(input, weight, bias, out_size, unbatched)
    # PyTorch's CPU convolutions of bfloat16 operands add the bias to the product's float32 sums and round
    # once (the bias cast to float32 is exact, and so is the output's gradient cast back)
    multiply_adds = input.shape[0] * out_channels * math.prod(out_size) * per_group * math.prod(kernel)
    wide = _adds_bias_before_rounding(input, weight, bias, groups, multiply_adds)
    if groups == 1:  # zero padding inside the op, so that its gradient rule knows it
        inner = tuple(pads) if padding_mode == "zeros" else ((0, 0),) * n
        x = input if padding_mode == "zeros" else _pad_mode(op, input, pads, padding_mode)
        out = _one_group_conv(x, weight, kernel, stride, dilation, out_size, inner, wide)  # (N, O, *out)
        if bias is not None and _half_conv.bias_per_sample(input, dilation):
            out = _half_conv.add_bias(out, bias, wide)
        elif wide:
            out = functions.cast(
                out + functions.reshape(functions.cast(bias, T.float32), out_channels, *([1] * n)), input.dtype
            )
        elif bias is not None:
            out = out + functions.reshape(bias, out_channels, *([1] * n))
        elif not out.is_contiguous():  # the long product's view: PyTorch's layout, (N, O, *out) row-major
            out = functions.clone(out)
        return functions.squeeze(out, 0) if unbatched else _memory_format.keep(out, input, weight)
    x = _pad_mode(op, input, pads, padding_mode)
    batch = input.shape[0]
    taps = math.prod(kernel)
    # cols: (N, C, taps, *out) -> (N, groups, C/groups · taps, L); row (c, tap) of a group is its
    # channel-major, tap-minor place, which is exactly weight.reshape(O, C/groups · taps)'s column order.
    cols = _columns(x, kernel, stride, dilation)
    length = math.prod(out_size)
    cols = functions.reshape(cols, batch, groups, per_group * taps, length)
    w = functions.reshape(weight, groups, out_channels // groups, per_group * taps)
    # (N, groups, O/groups, L): each output adds its products in ascending (c, tap); the casts of ``wide`` sit
    # after the windows, so the columns' gradient is rounded to half before it is folded back, as PyTorch's
    if _half_conv.rounds_as_cpu(input.dtype, math.prod(cols.shape) * out_channels // groups):
        out = _half_conv.grouped_product(w, cols, wide)  # the weight's gradient accumulated sample by sample
    else:
        out = functions.matmul(*_widened(wide, w, cols))
    out = functions.reshape(out, batch, out_channels, *out_size)
    if bias is not None and _half_conv.bias_per_sample(input, dilation):
        out = _half_conv.add_bias(out, bias, wide)
    elif wide:
        out = functions.cast(
            out + functions.reshape(functions.cast(bias, T.float32), out_channels, *([1] * n)), input.dtype
        )
    elif bias is not None:
        out = out + functions.reshape(bias, out_channels, *([1] * n))
    # channels last in (input, else weight), channels last out: PyTorch's
    return functions.squeeze(out, 0) if unbatched else _memory_format.keep(out, input, weight)


def _no_input_channels(input, weight, bias, out_size, unbatched: bool):
    """PyTorch's convolution of an input without channels: an empty (N, 0, *out) result, whatever the weight's
    out channels, so that every gradient (input, weight, bias) is zeros."""
    operands = [input, weight] + ([bias] if bias is not None else [])
    # lazy: a zero reached from every operand, for its gradient's edges
    zero = sum(functions.sum(functions.mul(o, 0)) for o in operands)
    out = functions.expand(functions.reshape(zero, *([1] * (2 + len(out_size)))), input.shape[0], 0, *out_size)
    return functions.squeeze(out, 0) if unbatched else out


def _adds_bias_before_rounding(input, weight, bias, groups: int = 1, multiply_adds: int = 0) -> bool:
    """Whether a convolution's operands are all bfloat16 tensors, or float16 ones in several groups or of a
    small convolution (``half_conv.rounds_as_cpu``), a bias among them: PyTorch's CPU convolution then adds
    the bias to the float32 sums and rounds once. Its large one-group float16 one does too, but there the
    product of float16 operands takes the workgroup-scope matrix template where the device has one, which
    narrows its sums (the widened product cannot), so it keeps the product rounded, then the bias added
    (docs/ops/conv2d.md)."""
    Tensor = functions._tensor.Tensor
    if not all(isinstance(t, Tensor) for t in (input, weight, bias)):
        return False
    dtype = input.dtype
    small = _half_conv.rounds_as_cpu(dtype, multiply_adds)
    if dtype is not T.bfloat16 and not (dtype is T.float16 and (groups > 1 or small)):
        return False
    return weight.dtype is dtype and bias.dtype is dtype


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """2-D convolution (cross-correlation) of ``input`` (N, C, H, W) or (C, H, W) with ``weight`` (O, C/groups, kh, kw).

    Computed as an implicit GEMM: one window view of the zero-padded input gives the columns
    (``Tensor.unfold``'s view over both spatial dims), which one batched matmul reads as its second
    operand by index arithmetic, never written out: one product a sample writing (N, O, H_out, W_out)
    with the bias added at its store, or, where a sample's few output positions would leave its tiles
    part empty, one long product and a layout kernel (``VKML_CONV_IMPLICIT=0``: with one group a kernel
    writes the columns as a matrix, a 16-bit float input's as its bit patterns, for the long product). Each
    output element is the matmul's sum of its C/groups·kh·kw products in ascending (channel,
    kernel row, kernel column) order, starting from -0.0, then the bias added once. The order is
    fixed, so CPU and Vulkan give the same bits (docs/ops/conv2d.md); PyTorch's order differs,
    so results agree with PyTorch's to the matmul bound, not bit for bit.

    ``padding`` is an int, a pair, ``'valid'`` or ``'same'`` (stride 1 only, as PyTorch).

    >>> conv2d(vkml.ones(1, 1, 3, 3), vkml.ones(1, 1, 2, 2)).shape  # doctest: +SKIP
    (1, 1, 2, 2)
    """
    return _conv("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-D convolution of ``input`` (N, C, L) or (C, L) with ``weight`` (O, C/groups, k); see ``conv2d``.

    >>> conv1d(vkml.ones(1, 1, 4), vkml.ones(1, 1, 2)).tolist()  # doctest: +SKIP
    [[[2.0, 2.0, 2.0]]]
    """
    return _conv("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


# ---------------------------------------------------------------------- pooling


def _pool_geometry(op, input, kernel_size, stride, padding, dilation, ceil_mode, n: int):
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"'{op}': Expected {n + 1}D or {n + 2}D input, but got input of size: {list(input.shape)}")
    if not op.startswith("adaptive"):  # the adaptive averages that run as avg_pool allow empty channels
        _pool_nonempty(op, input, n)
    kernel = _tuple(op, "kernel_size", kernel_size, n)
    stride = (
        kernel
        if stride is None or (not isinstance(stride, int) and len(tuple(stride)) == 0)
        else (_tuple(op, "stride", stride, n))
    )
    padding = _tuple(op, "padding", padding, n)
    dilation = _tuple(op, "dilation", dilation, n)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"'{op}': kernel_size must be greater than zero, but got {kernel}")
    if any(s <= 0 for s in stride):
        if op == "max_pool1d":
            raise RuntimeError(f"'{op}': max_pool1d() stride must be greater than zero, but got {stride[0]}")
        if any(s == 0 for s in stride):  # PyTorch's words for the other pools' zero stride
            raise RuntimeError(f"'{op}': stride should not be zero")
        raise RuntimeError(f"'{op}': stride must be greater than zero, but got {stride}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"'{op}': dilation must be greater than zero, but got {dilation}")
    spatial = tuple(input.shape[-n:])
    if op == "avg_pool3d" and any(size < k for size, k in zip(spatial, kernel)):  # its check before the padding's
        (t, h, w), (kt, kh, kw) = spatial, kernel
        raise RuntimeError(
            f"'{op}': input image (T: {t} H: {h} W: {w}) smaller than kernel size (kT: {kt} kH: {kh} kW: {kw})"
        )
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"'{op}': pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    out = []
    for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= size + p:  # the last window must start inside the input or left pad
            o -= 1
        out.append(o)
    if any(o < 1 for o in out):  # PyTorch's words: channels x sizes, in and out (1-d pools run as 2-d there)
        channels = ((input.shape[-n - 1],) if input.ndim > n else ()) + ((1,) if n == 1 else ())
        given, calculated = ("x".join(map(str, channels + sizes)) for sizes in (spatial, tuple(out)))
        raise RuntimeError(
            f"'{op}': Given input size: ({given}). Calculated output size: ({calculated}). Output size is too small"
        )
    return kernel, stride, padding, dilation, tuple(out)


def _pool_nonempty(op, input, n: int) -> None:
    """PyTorch's pools refuse an input empty in a dim other than the batch (each in its own words)."""
    batched = input.ndim == n + 2
    nonbatch = list(input.shape[1:] if batched else input.shape)
    if all(nonbatch):
        return
    if n == 3:  # 3-d pools name the first empty dim among the non-batch ones
        where = "max_pool3d_with_indices_out_cpu_template" if op == "max_pool3d" else op
        raise RuntimeError(
            f"'{op}': {where}(): Expected input's non-batch dimensions to have positive length, but input has a "
            f"shape of {list(input.shape)} and non-batch dimension {nonbatch.index(0)} has length zero!"
        )
    if op == "max_pool1d":
        raise RuntimeError(
            f"'{op}': max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{list(input.shape)}"
        )
    shape = list(input.shape)
    if n == 1:  # avg_pool1d runs as a 2-d pool: a height of 1 in the shape it prints
        shape.insert(len(shape) - 1, 1)
    raise RuntimeError(
        f"'{op}': Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{shape}"
    )


def _pool_input(x, padding, dilation, kernel, stride, out_size, value):
    """``x`` padded by ``padding`` before and enough after for the last window (ceil_mode), with ``value``."""
    flat = _pool_pads(x, padding, dilation, kernel, stride, out_size)
    if all(a == 0 for a in flat):
        return x
    return functions.constant_pad_nd(x, flat, value)


def _max_pool(op, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, n: int):
    kernel, stride, padding, dilation, out_size = _pool_geometry(
        op, input, kernel_size, stride, padding, dilation, ceil_mode, n
    )
    fill = -math.inf if input.dtype.is_float else int(np.iinfo(np.dtype(input.dtype.name)).min)
    if not return_indices:
        pad = _pool_pads(input, padding, dilation, kernel, stride, out_size)
        if any(pad) and not (input.requires_grad and autograd.is_grad_enabled()):
            # Nothing to record: the taps alone, without the padded tensor autograd's rule would read
            out = _padded_window_max(input, pad, fill, kernel, stride, dilation, out_size)
            if out is not None:
                return functions._wrap(out)
        x = _pool_input(input, padding, dilation, kernel, stride, out_size, fill)
        return _fresh(_max_pool_values(x, kernel, stride, dilation, out_size, (input, pad, fill)), input)
    x = _pool_input(input, padding, dilation, kernel, stride, out_size, fill)
    windows = _windows(x, kernel, stride, dilation, out_size, input.ndim)  # (..., *out, taps)
    hit = _selected(windows)
    # -0.0 is the sum's identity: the picked value comes back with every bit, -0.0 included.
    out = _pick(windows, hit) if input.dtype.is_float else functions.amax(windows, -1)
    spatial = tuple(input.shape[-n:])
    flat_index = creation.arange(math.prod(spatial), device=input.device).reshape(*spatial)
    index_windows = _windows(
        _pool_input(flat_index, padding, dilation, kernel, stride, out_size, -1), kernel, stride, dilation, out_size, n
    )
    indices = functions.where(hit, index_windows, 0).sum(-1)
    return _saving_indices(out, indices), indices


@differentiable("pool_indices_saved", inputs=("input", "indices"))
def _saving_indices(input, indices):
    """``input``'s value; for autograd, an op that saves the max pool's ``indices`` as PyTorch's node
    does, so that writing them in place before backward raises PyTorch's version error."""
    return functions._wrap(input.node)


def _saving_indices_grad(c: G.GradContext):
    _ = c.inputs[1].node  # reading the saved indices checks their version (vkml/tensor.py, SavedTensor)
    return (c.g, None)


G.RULES["pool_indices_saved"] = _saving_indices_grad


@differentiable("max_pool_windows", inputs=("x",))
def _max_pool_values(x, kernel, stride, dilation, out_size, padded_from=None):
    """The window maxima of padded ``x``: one elementwise kernel, the taps folded in order, each a
    strided view of ``x`` (stacking them and reducing the short last dim wrote every window, then
    ran a row per output). Its gradient (``_max_pool_grad``) is not the fold's chain of selects,
    two kernels a tap.

    ``padded_from``: (input, pad, fill), where ``x`` is ``constant_pad_nd(input, pad, fill)``: each tap
    is then that pad's ``where`` taken over the tap's slices of input and of the pad's mask, views of
    one level each, so a kernel reaches a tap's element by sums (the slices of ``x`` itself are views
    of the ``where``'s index space, whose every tap divides its index back into the padded shape's
    digits: the kernel's time went with its taps, not its bytes; ``bench/layer_wall.py --pool-taps``)."""
    # On nodes: ``_window_views``' slices and the fold's ops build these nodes, one by one, without a
    # handle, a storage link and a grad check per tap (autograd sees this function as one op).
    if padded_from is not None:
        out = _padded_window_max(*padded_from, kernel, stride, dilation, out_size)
        if out is not None:
            return functions._wrap(out)
    node = x.node
    base, stack = lazy.view_base(node)
    boxes = _window_slices(node.shape, len(node.shape) - len(kernel), *map(tuple, (kernel, stride, dilation, out_size)))
    key = (stack, boxes)
    stacks = _TAP_STACKS.get(key)
    if stacks is None:
        if len(_TAP_STACKS) >= 256:
            _TAP_STACKS.clear()
        stacks = _TAP_STACKS[key] = [stack.slice(*box) for box in boxes]
    out = None
    for tap_stack in stacks:
        tap = lazy.view_of(base, tap_stack)
        out = tap if out is None else lazy.elementwise("max_pool_step", [out, tap])
    return functions._wrap(out)


# (ViewStack of the padded input, the taps' slices) -> each tap's ViewStack (immutable: shared). A
# network pools few shapes; the slices of a masked (padded) view are most of a pooling's build.
_TAP_STACKS: dict[tuple, list] = {}


def _pool_pads(x, padding, dilation, kernel, stride, out_size) -> tuple:
    """``_pool_input``'s ``constant_pad_nd`` amounts (last dim first, as its ``pad``)."""
    n = len(kernel)
    pads = []
    for size, p, d, k, s, o in zip(x.shape[-n:], padding, dilation, kernel, stride, out_size):
        pads.append((p, (o - 1) * s + d * (k - 1) + 1 - size - p))
    return tuple(a for pair in reversed(pads) for a in pair)


def _padded_window_max(input, pad, fill, kernel, stride, dilation, out_size):
    """The node of the window maxima of ``constant_pad_nd(input, pad, fill)`` with each tap its pad's
    ``where(mask, input, fill)`` over the tap's slices (``_max_pool_values``); None where the pad only
    crops or leaves nothing of input (then the slices of the padded tensor are views of input already)."""
    node = input.node
    base, stack = lazy.view_base(node)
    key = (stack, node.shape, pad, tuple(kernel), tuple(stride), tuple(dilation), tuple(out_size))
    stacks = _PADDED_TAP_STACKS.get(key, _UNPLANNED)
    if stacks is _UNPLANNED:
        stacks = _padded_tap_stacks(stack, node.shape, pad, kernel, stride, dilation, out_size)
        if len(_PADDED_TAP_STACKS) >= 256:
            _PADDED_TAP_STACKS.clear()
        _PADDED_TAP_STACKS[key] = stacks
    if stacks is None:
        return None
    device, dtype = node.device, node.dtype
    inside = lazy.const_node(True, T.bool_, (), device)  # the pad's mask: constant_pad_nd's, one scalar
    shape = stacks[0][0].shape
    first = second = None
    for tap_stack, mask_stack in stacks:
        # View nodes of the buffer itself: every tap reads the one binding (view_of would cut each an alias).
        tap = Node(Op.VIEW, (base,), tap_stack, shape, dtype, device)
        mask = Node(Op.VIEW, (inside,), mask_stack, shape, T.bool_, device)
        if first is None:  # the first tap's where and step decide the kinds; the others' nodes repeat them
            first = out = lazy.elementwise("where", [mask, tap, fill])  # a constant shared by every tap
            continue
        tap = Node(Op.ELEMENTWISE, (mask, tap, first.srcs[2]), first.arg, shape, first.dtype, device)
        if second is None:
            second = out = lazy.elementwise("max_pool_step", [out, tap])
            continue
        out = Node(Op.ELEMENTWISE, (out, tap), second.arg, shape, second.dtype, device)
    return out


def _padded_tap_stacks(stack, shape, pad, kernel, stride, dilation, out_size) -> list | None:
    """(input's tap stack, the mask's tap stack) of each tap of ``_padded_window_max``, or None (its None)."""
    starts, stops, grow = functions._pad_plan(shape, pad)  # constant_pad_nd's crop and growth
    if grow is None:
        return None
    if starts is not None:
        stack = stack.slice(starts, stops, (1,) * len(shape))
    if 0 in stack.shape:
        return None
    _, inside = lazy.view_base(lazy.const_node(True, T.bool_, stack.shape, None))  # the mask's broadcast
    padded, inside = stack.pad(grow), inside.pad(grow)
    boxes = _window_slices(padded.shape, len(shape) - len(kernel), *map(tuple, (kernel, stride, dilation, out_size)))
    return [(padded.slice(*box), inside.slice(*box)) for box in boxes]


# (input's stack and shape, the pad, the window) -> _padded_tap_stacks' (immutable: shared), or None.
_PADDED_TAP_STACKS: dict[tuple, list | None] = {}
_UNPLANNED = object()


def _max_pool_grad(c):
    """The gradient to the element each window picks (``_selected``: PyTorch's first maximum or last
    NaN), folded back over the window view: an argmax, a NaN test and one elementwise kernel. The
    taps are added in descending order, in the input's dtype: PyTorch's CPU kernel adds each window's
    gradient into its element in the windows' row-major order, so the last tap of a window comes first
    (the same bits where windows overlap, float32 and float16)."""
    (x,) = c.inputs
    kernel, stride, dilation = c.attrs["kernel"], c.attrs["stride"], c.attrs["dilation"]
    n = len(kernel)
    dims = tuple(range(x.ndim - n, x.ndim))
    windows = _window_ops.window(x, dims, tuple(kernel), tuple(stride), tuple(dilation))
    flat = functions.reshape(windows, *windows.shape[: x.ndim], math.prod(kernel))
    g = functions.where(_selected(flat), functions.unsqueeze(c.g, -1), 0.0)
    g = functions.reshape(g, *windows.shape)
    return (G.fold_windows(c.F, g, x, dims, kernel, stride, dilation, descending=True),)


G.RULES["max_pool_windows"] = _max_pool_grad


@differentiable("window_pick", inputs=("windows",))
def _pick(windows, hit):
    """The element of each window (last dim) that ``hit`` marks (one per window): a sum in which the
    others are -0.0, the sum's identity, so the picked value keeps every bit. One op for autograd,
    whose gradient reads ``windows`` only through ``hit``: PyTorch's max pooling backward takes the
    input with a zero derivative, and so does this one's (``G.MASK_OPERANDS``)."""
    return functions.where(hit, windows, -0.0).sum(-1)


def _pick_grad(c):
    return (functions.where(c.attrs["hit"], functions.unsqueeze(c.g, -1), 0.0),)


G.RULES["window_pick"] = _pick_grad
G.MASK_OPERANDS["window_pick"] = (0,)


def _selected(windows):
    """True at the one element of each window (last dim) that max pooling picks, PyTorch's rule: the
    first maximum, or the last NaN where there is one (its kernels replace the running maximum on
    ``val > max || isnan(val)``). The gradient goes to that element alone, not split among ties as
    ``amax``'s."""
    taps = creation.arange(windows.shape[-1], device=windows.device)
    first = functions.argmax(windows, -1, keepdim=True)
    if windows.dtype.is_float:
        last_nan = functions.where(windows != windows, taps, -1).amax(-1, keepdim=True)
        first = functions.where(last_nan >= 0, last_nan, first)
    return first == taps


@autograd.shown_as("MaxPool2DWithIndicesBackward0", lambda input, *a, **k: (autograd.edge(input),))
def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices: bool = False
):
    """The maximum of each (dilated) window of ``input`` (N, C, H, W) or (C, H, W); ``stride`` defaults to the kernel.

    Padding counts as -inf. The gradient goes to the first maximum of each window (row-major),
    or its last NaN, as PyTorch's. ``return_indices=True`` also returns int64 indices of those
    elements into each flattened H·W plane. Exact: values are selected, never rounded.

    >>> max_pool2d(vkml.arange(16.0).reshape(1, 4, 4), 2).tolist()  # doctest: +SKIP
    [[[5.0, 7.0], [13.0, 15.0]]]
    """
    out = _max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)
    return _memory_format.keep(out, input)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices: bool = False
):
    """``max_pool2d`` over the last dim of ``input`` (N, C, L) or (C, L).

    >>> max_pool1d(vkml.tensor([[1.0, 3.0, 2.0, 0.0]]), 2).tolist()  # doctest: +SKIP
    [[3.0, 2.0]]
    """
    return _max_pool("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


# Windows of more elements than this that do not tile the input are summed one dim at a time: one
# kernel joining prod(kernel) strided views grows past what compiles quickly (an 8x8x8 window: 512).
_SEPARABLE_SUM = 64


def _window_sums(x, kernel, stride, dilation, out_size):
    """The sum of each window of ``x`` (..., *spatial): the tree sum of its elements (row-major), or,
    for a large window that does not tile the input, the tree sums along the last dim, then along
    each earlier dim in turn (a sum of sums: the same values, added in another order)."""
    n = len(kernel)
    tiles = tuple(stride) == tuple(kernel) and all(d == 1 for d in dilation)
    if math.prod(kernel) <= _SEPARABLE_SUM or tiles:
        return _windows(x, kernel, stride, dilation, out_size, x.ndim).sum(-1)
    for d in reversed(range(n)):  # a window of one element in every dim but d
        only = [(kernel[i], stride[i], dilation[i]) if i == d else (1, 1, 1) for i in range(n)]
        sizes = tuple(out_size[i] if i == d else x.shape[x.ndim - n + i] for i in range(n))
        k, s, dd = zip(*only)
        x = _windows(x, k, s, dd, sizes, x.ndim).sum(-1)
    return x


def _avg_pool(op, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, n: int):
    kernel, stride, padding, dilation, out_size = _pool_geometry(
        op, input, kernel_size, stride, padding, 1, ceil_mode, n
    )
    # PyTorch's CPU kernels take int64 (the sum divided in int64, truncated); other integer dtypes raise
    integer = input.dtype is T.int64
    if not input.dtype.is_float and not integer:
        raise NotImplementedError(f"\"{op}\" not implemented for '{mutation.torch_name(input.dtype)}'")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"'{op}': divisor must be not zero")
    # float16 and bfloat16 sum in float32 and round once, after the division
    wide = input.float() if input.dtype in (T.float16, T.bfloat16) else input
    x = _pool_input(wide, padding, dilation, kernel, stride, out_size, 0.0)
    sums = _window_sums(x, kernel, stride, dilation, out_size)
    if integer and divisor_override is not None:
        return functions.div(sums, int(divisor_override), rounding_mode="trunc")
    if divisor_override is not None:
        out = sums / float(divisor_override)
        return out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out
    # PyTorch's divisor: the window clipped to the padded input (count_include_pad) or to the input
    counts = np.ones((), dtype=np.float64)
    for size, k, s, p, o in zip(input.shape[-n:], kernel, stride, padding, out_size):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        counts = np.multiply.outer(counts, end - start)
    if integer:
        return functions.div(sums, creation.tensor(counts.astype(np.int64), device=input.device), rounding_mode="trunc")
    divisor = creation.tensor(counts.astype(np.float32), device=input.device)
    return (sums / divisor).to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else sums / divisor


@autograd.shown_as("AvgPool2DBackward0", autograd.input_edge)
def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override=None,
):
    """The mean of each window of ``input`` (N, C, H, W) or (C, H, W); ``stride`` defaults to the kernel.

    Each window's sum (a tree sum of its kh·kw elements; over 64 elements, where stride ≠ kernel,
    the tree sums of each dim in turn) is divided once by PyTorch's divisor:
    ``divisor_override``, else the window's size clipped to the padded input
    (``count_include_pad=True``) or to the input itself. An int64 input is averaged in int64, the
    quotient truncated, as PyTorch's CPU kernel; other integer dtypes raise NotImplementedError.

    >>> avg_pool2d(vkml.ones(1, 2, 2), 2).tolist()  # doctest: +SKIP
    [[[1.0]]]
    """
    out = _avg_pool(
        "avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2
    )
    return _memory_format.keep(out, input)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
    """``avg_pool2d`` over the last dim of ``input`` (N, C, L) or (C, L).

    >>> avg_pool1d(vkml.tensor([[1.0, 3.0]]), 2).tolist()  # doctest: +SKIP
    [[2.0]]
    """
    return _avg_pool("avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def _adaptive_bounds(size: int, out: int):
    starts = [(i * size) // out for i in range(out)]
    ends = [-(-((i + 1) * size) // out) for i in range(out)]
    return starts, ends


def _output_size(op, input, output_size, n: int = 2):
    """The adaptive pools' output sizes: an int, or ``n`` ints where None keeps the input's size (PyTorch's)."""
    if n > 1 and isinstance(output_size, (tuple, list)) and input.ndim <= len(output_size):
        # PyTorch's 2-d and 3-d pools fill a None from the input's sizes before the kernel checks the
        # rank: a sequence output_size with too few input dims is that step's ValueError
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"'{op}': Expected {n + 1}D or {n + 2}D tensor, but got input of size: {list(input.shape)}")
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != n:
            raise RuntimeError(
                f"'{op}': argument 'output_size' should contain {n} ints (got {len(output_size)}): {output_size!r}"
            )
        sizes = tuple(input.shape[-n + k] if s is None else int(s) for k, s in enumerate(output_size))
    else:
        sizes = _tuple(op, "output_size", output_size, n)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"'{op}': elements of output_size must be greater than or equal to 0, got {sizes}")
    if math.prod(input.shape[:-n]) * math.prod(sizes) >= 2**63:  # PyTorch's int64 element count overflows
        if "max" in op:  # its 1-d max pool is a 2-d one: a height of 1 in the sizes it prints
            printed = [*input.shape[:-n], *([1] if n == 1 else []), *sizes]
            raise RuntimeError(f"'{op}': Storage size calculation overflowed with sizes={printed}")
        raise RuntimeError(f"'{op}': numel: integer multiplication overflow")
    if not input.dtype.is_float:  # PyTorch's adaptive kernels are for floating point only (1-d ones run as 2-d)
        kernel_name = op.replace("1d", "2d") + ("_cpu" if op.endswith("3d") else "")
        dtype_name = mutation.torch_name(input.dtype)
        raise NotImplementedError(f"'{op}': \"{kernel_name}\" not implemented for '{dtype_name}'")
    # PyTorch checks every dim after the first, batched or not; its 1-d and 2-d averages allow no channels
    if ("max" in op or n == 3) and not all(input.shape[1:]):
        empty = list(input.shape).index(0, 1)
        raise RuntimeError(
            f"'{op}': {op}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
            f"{list(input.shape)} with dimension {empty} being empty"
        )
    if any(s == 0 for s in input.shape[-n:]):
        raise RuntimeError(
            f"'{op}': Expected input to have non-zero size for non-batch dimensions, but input has sizes "
            f"{list(input.shape)}"
        )
    return sizes


def _adaptive_avg(op, input, output_size, n: int):
    """The mean over PyTorch's adaptive windows: output i along a dim of size s covers floor(i·s/o) to
    ceil((i+1)·s/o).

    Output size 1 everywhere is the mean over the spatial dims (global pooling); windows that tile
    the input evenly are ``avg_pool``. Uneven windows are sums by 0/1 matrices, one matmul per
    spatial dim, first to last (exact products), divided once by each window's size.
    """
    out = _output_size(op, input, output_size, n)
    spatial = tuple(input.shape[-n:])
    if any(o == 0 for o in out):  # empty: PyTorch allows it, not its gradient
        return _empty_adaptive(op, input, out, n)
    if n == 3 and input.dtype in functions.HALF_PRECISION:
        positions = _adaptive_window_positions(spatial, out)
        if positions.shape[-1] <= _HALF_WINDOW_TAPS:
            value = _half_adaptive_avg3d(input.detach(), spatial, out, positions)
            return autograd.record("half_adaptive_avg3d", (input,), value, {"positions": positions})
    return _adaptive_avg_wide(op, input, spatial, out, n)


def _empty_adaptive(op, input, out, n: int):
    """An adaptive pool's empty result (an output size 0), whose gradient raises PyTorch's error."""
    empty = functions.clone(input[(...,) + tuple(slice(0, o) for o in out)])
    return autograd.record("adaptive_pool_empty", (input,), empty, {"op": op, "n": n})


def _grad_adaptive_pool_empty(c):
    """PyTorch's adaptive pools' backward refuses an empty gradient; its 1-d pools run as 2-d ones (a height
    of 1 in the sizes it prints)."""
    op, n = c.attrs["op"], c.attrs["n"]
    sizes = list(c.g.shape)
    if n == 1:
        sizes.insert(len(sizes) - 1, 1)
        op = op.replace("1d", "2d")
    empty = next(d for d in range(1, len(sizes)) if sizes[d] == 0)
    raise RuntimeError(
        f"{op}_backward(): Expected grad_output to have non-zero size for non-batch dimensions, but grad_output "
        f"has sizes {sizes} with dimension {empty} being empty"
    )


G.RULES["adaptive_pool_empty"] = _grad_adaptive_pool_empty


# PyTorch's 3-d adaptive average of float16/bfloat16 adds in the input's dtype, one element after another
# (its 1-d and 2-d kernels add in float32); up to this many elements a window, vkml does the same
_HALF_WINDOW_TAPS = 64


def _adaptive_window_positions(spatial, out) -> np.ndarray:
    """(*out, taps): the flat spatial positions of each adaptive window's elements in row-major order,
    every window padded to the largest with -1 (which reads 0)."""
    n = len(spatial)
    positions, valid = np.zeros((1,) * (2 * n), np.int64), np.ones((1,) * (2 * n), bool)
    for k, (size, o) in enumerate(zip(spatial, out)):
        starts, ends = (np.array(b) for b in _adaptive_bounds(size, o))
        longest = int((ends - starts).max())
        taps = starts[:, None] + np.arange(longest)[None, :]
        shape = [1] * (2 * n)
        shape[k], shape[n + k] = o, longest
        positions = positions + taps.reshape(shape) * math.prod(spatial[k + 1 :])
        valid = valid & (taps < ends[:, None]).reshape(shape)
    return np.where(valid, positions, -1).reshape(*out, -1)


def _half_adaptive_avg3d(input, spatial, out, positions):
    """PyTorch's cpu_adaptive_avg_pool3d for float16/bfloat16: each window summed in the dtype in
    row-major order, then divided by its depth, height and width one after another, each rounding."""
    lead = tuple(input.shape[:-3])
    flat = np.arange(math.prod(lead), dtype=np.int64).reshape(*lead, 1, 1, 1, 1) * math.prod(spatial)
    windows = indexing.take_positions(input, np.where(positions >= 0, flat + positions, -1))
    total = windows[..., 0]
    for t in range(1, positions.shape[-1]):
        total = total + windows[..., t]
    return _divide_by_window_sizes(total, spatial, out)


def _divide_by_window_sizes(total, spatial, out):
    for k, (size, o) in enumerate(zip(spatial, out)):
        starts, ends = _adaptive_bounds(size, o)
        shape = [1, 1, 1]
        shape[k] = o
        counts = np.subtract(ends, starts).reshape(shape).astype(np.float32)
        total = total / creation.tensor(counts, dtype=total.dtype, device=total.device)
    return total


def _grad_half_adaptive_avg3d(c):
    """PyTorch's cpu_adaptive_avg_pool3d_backward for float16/bfloat16: each output's gradient divided by
    its window's depth, height and width, then added in the dtype to every input it covers, output after
    output in row-major order."""
    (x,) = c.inputs
    spatial, out, positions = tuple(x.shape[-3:]), tuple(c.g.shape[-3:]), c.attrs["positions"]
    deltas = _divide_by_window_sizes(c.g, spatial, out)
    covering = [[] for _ in range(math.prod(spatial))]  # per input position, the outputs over it, in order
    for cell, taps in enumerate(positions.reshape(-1, positions.shape[-1])):
        for p in taps[taps >= 0]:
            covering[p].append(cell)
    depth = max(len(cells) for cells in covering)
    cells = np.full((math.prod(spatial), depth), -1, np.int64)
    for p, over in enumerate(covering):
        cells[p, : len(over)] = over
    lead = tuple(x.shape[:-3])
    flat = np.arange(math.prod(lead), dtype=np.int64).reshape(*lead, 1, 1) * math.prod(out)
    picked = indexing.take_positions(deltas, np.where(cells >= 0, flat + cells, -1))
    total = picked[..., 0]
    for t in range(1, depth):
        total = total + picked[..., t]
    return (functions.reshape(total, *lead, *spatial),)


G.RULES["half_adaptive_avg3d"] = _grad_half_adaptive_avg3d


def with_float_gradient(input, value, wide):
    """``value`` (computed from ``input.detach()``) differentiated as ``wide(input)`` is: PyTorch's
    float16/bfloat16 kernels whose forward rounds where their backward kernel does not."""
    return autograd.record("float_gradient", (input,), value, {"wide": wide})


def _grad_float_gradient(c):
    x = c.inputs[0].detach().requires_grad_()
    with c.F.enable_grad():
        y = c.attrs["wide"](x)
    return c.F.autograd.grad(y, x, c.g)


G.RULES["float_gradient"] = _grad_float_gradient


def _adaptive_avg_wide(op, input, spatial, out, n: int):
    if all(o == 1 for o in out):
        return input.mean(tuple(range(-n, 0)), keepdim=True)
    if all(s % o == 0 for s, o in zip(spatial, out)):
        kernel = tuple(s // o for s, o in zip(spatial, out))
        return _avg_pool(op, input, kernel, None, 0, False, True, None, n)
    dev = input.device
    narrow = input.dtype in (T.float16, T.bfloat16)  # summed in float32, rounded once at the end
    x = input.float() if narrow else input
    lead = tuple(x.shape[:-n])
    # the 0/1 matrices and window sizes in the input's dtype (float64 stays float64: they are exact)
    kind = np.float64 if x.dtype is T.float64 else np.float32
    counts = np.ones((), kind)
    for k, (size, o) in enumerate(zip(spatial, out)):
        starts, ends = _adaptive_bounds(size, o)
        sums = np.zeros((o, size), kind)
        for i in range(o):
            sums[i, starts[i] : ends[i]] = 1
        counts = np.multiply.outer(counts, np.subtract(ends, starts).astype(kind))
        if k == n - 1:  # the last dim: a right product
            x = functions.matmul(x, creation.tensor(sums.T.copy(), device=dev))
            continue
        before, after = tuple(x.shape[len(lead) : len(lead) + k]), tuple(x.shape[len(lead) + k + 1 :])
        x = functions.reshape(x, *lead, *before, size, math.prod(after))
        x = functions.matmul(creation.tensor(sums, device=dev), x)
        x = functions.reshape(x, *lead, *before, o, *after)
    result = x / creation.tensor(counts, device=dev)
    return result.to(input.dtype) if narrow else result


def _adaptive_max(op, input, output_size, return_indices: bool, n: int):
    """The maximum over ``_adaptive_avg``'s windows; gradient to each window's first maximum.

    All windows are read by one gather into (..., *output_size, taps): along each dim, tap j of
    output i reads element max(start_i, end_i - K + j), K the longest window, so a shorter window
    repeats its first element in front — which changes neither its first maximum nor its last
    NaN, the element PyTorch selects. Exact: values are selected, never rounded.
    """
    out = _output_size(op, input, output_size, n)
    spatial = tuple(input.shape[-n:])
    lead = tuple(input.shape[:-n])
    if any(o == 0 for o in out):  # empty: PyTorch allows it, not its gradient
        empty = _empty_adaptive(op, input, out, n)
        return (empty, functions.cast(empty.detach(), T.int64)) if return_indices else empty
    if all(size % o == 0 for size, o in zip(spatial, out)):  # even windows: max pooling's strided views
        kernel = tuple(size // o for size, o in zip(spatial, out))
        return _max_pool(op, input, kernel, kernel, 0, 1, False, return_indices, n)
    # positions[*cell, *tap]: the flat spatial position tap reads for output cell
    positions = np.zeros((1,) * (2 * n), np.int64)
    for k, (size, o) in enumerate(zip(spatial, out)):
        starts, ends = (np.array(b) for b in _adaptive_bounds(size, o))
        longest = int((ends - starts).max())
        taps = np.maximum(starts[:, None], ends[:, None] - longest + np.arange(longest)[None, :])
        shape = [1] * (2 * n)
        shape[k], shape[n + k] = o, longest
        positions = positions + taps.reshape(shape) * math.prod(spatial[k + 1 :])
    positions = positions.reshape(*out, -1)
    flat = np.arange(math.prod(lead), dtype=np.int64).reshape(*lead, *([1] * (n + 1))) * math.prod(spatial)
    windows = indexing.take_positions(input, flat + positions)
    hit = _selected(windows)
    result = _pick(windows, hit) if input.dtype.is_float else functions.where(hit, windows, -0.0).sum(-1)
    if not return_indices:
        return result
    where = creation.tensor(positions, device=input.device)
    indices = functions.where(hit, where, 0).sum(-1)
    return _saving_indices(result, indices), indices


def adaptive_avg_pool2d(input, output_size):
    """The mean over PyTorch's adaptive windows: output row i covers input rows floor(i·H/oh) to ceil((i+1)·H/oh).

    Windows that tile the input evenly are ``avg_pool2d``; output size 1 is the mean over H and W
    (global pooling). Uneven windows are a sum by 0/1 matrices on both sides (two matmuls, exact
    products) divided once by each window's size.

    >>> adaptive_avg_pool2d(vkml.ones(1, 4, 4), 1).tolist()  # doctest: +SKIP
    [[[1.0]]]
    """
    return _memory_format.keep(_adaptive_avg("adaptive_avg_pool2d", input, output_size, 2), input)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    """The maximum over ``adaptive_avg_pool2d``'s windows; gradient to each window's first maximum.

    Each output is its own window view reduced (oh·ow views): meant for the small output sizes of
    classifier heads.

    >>> adaptive_max_pool2d(vkml.arange(4.0).reshape(1, 2, 2), 1).tolist()  # doctest: +SKIP
    [[[3.0]]]
    """
    return _memory_format.keep(_adaptive_max("adaptive_max_pool2d", input, output_size, return_indices, 2), input)


# ---------------------------------------------------------------------- unfold and fold


def _blocks(op, spatial, kernel_size, dilation, padding, stride):
    kernel = _tuple(op, "kernel_size", kernel_size, 2)
    dilation, padding, stride = (
        _tuple(op, n, v, 2) for n, v in (("dilation", dilation), ("padding", padding), ("stride", stride))
    )
    if any(v <= 0 for v in kernel + dilation + stride) or any(p < 0 for p in padding):
        raise RuntimeError(
            f"'{op}': kernel_size, dilation and stride must be greater than zero and padding non-negative, got "
            f"kernel_size={kernel}, dilation={dilation}, padding={padding}, stride={stride}"
        )
    out = tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1 for s, p, d, k, st in zip(spatial, padding, dilation, kernel, stride)
    )
    if any(o < 1 for o in out) and op == "fold":  # PyTorch's col2im words it otherwise than im2col
        raise RuntimeError(
            f"'fold': Given output_size={tuple(spatial)}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, stride={stride}, calculated shape of the array of sliding blocks as {out}, which is "
            "too small (non-positive)"
        )
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"'{op}': Given input with spatial size {tuple(spatial)}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, calculated shape of the array of sliding blocks as {out}, but its components must "
            "be at least one."
        )
    return kernel, dilation, padding, stride, out


@autograd.shown_as("Im2ColBackward0", autograd.input_edge)
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of ``input`` (N, C, H, W) or (C, H, W) as columns: (N, C·kh·kw, L), PyTorch's order
    (channel-major, then kernel row and column); L counts the blocks row-major. Exact: values are copied.

    >>> unfold(vkml.ones(1, 2, 3, 3), 2).shape  # doctest: +SKIP
    (1, 8, 4)
    """
    if input.ndim not in (3, 4) or 0 in input.shape[input.ndim - 3 :]:  # only a batch may be empty
        raise RuntimeError(
            "'unfold': Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(input.shape)}"
        )
    unbatched = input.ndim == 3
    x = functions.unsqueeze(input, 0) if unbatched else input
    kernel, dilation, padding, stride, out = _blocks("unfold", x.shape[2:], kernel_size, dilation, padding, stride)
    x = _pad_mode("unfold", x, [(p, p) for p in padding], "zeros")
    cols = _columns(x, kernel, stride, dilation)
    cols = functions.reshape(cols, x.shape[0], x.shape[1] * math.prod(kernel), math.prod(out))
    return _fresh(functions.squeeze(cols, 0) if unbatched else cols, input)


def _spread(x, dim: int, offset: int, step: int, size: int):
    """``x``'s elements along ``dim`` placed at offset, offset + step, ... of a dim of length ``size``, zeros between."""
    count = x.shape[dim]
    if step > 1:  # interleave step - 1 zeros after each element: pad a new inner dim, then merge it
        x = functions.unsqueeze(x, dim + 1)
        pads = [0, 0] * (x.ndim - dim - 2) + [0, step - 1]
        x = functions.constant_pad_nd(x, pads)
        shape = list(x.shape)
        x = functions.reshape(x, *shape[:dim], count * step, *shape[dim + 2 :])
    pads = [0, 0] * (x.ndim - dim - 1) + [offset, size - offset - x.shape[dim]]
    return functions.constant_pad_nd(x, pads)  # a negative amount after crops the trailing zeros


@autograd.shown_as("Col2ImBackward0", autograd.input_edge)
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The inverse arrangement of ``unfold``: columns (N, C·kh·kw, L) or (C·kh·kw, L) summed back into
    (N, C, H, W); overlapping blocks add, in kernel order (row-major over the kh·kw positions).

    >>> fold(vkml.ones(1, 4, 4), (3, 3), 2).tolist()[0][0][1]  # doctest: +SKIP
    [2.0, 4.0, 2.0]
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"'fold': Expected 2D or 3D (batch mode) tensor, but got input of size {list(input.shape)}")
    unbatched = input.ndim == 2
    x = functions.unsqueeze(input, 0) if unbatched else input
    size = _tuple("fold", "output_size", output_size, 2)
    kernel, dilation, padding, stride, out = _blocks("fold", size, kernel_size, dilation, padding, stride)
    taps = math.prod(kernel)
    if x.shape[1] % taps:
        raise RuntimeError(
            "'fold': Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={x.shape[1]} and kernel_size={kernel}."
        )
    if x.shape[2] != math.prod(out):
        raise RuntimeError(
            f"'fold': Given output_size={size}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
            f"stride={stride}, expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {out[0]} * {out[1]} = {math.prod(out)}, but got input.size(2)={x.shape[2]}."
        )
    batch, channels = x.shape[0], x.shape[1] // taps
    total = _fold_blocks(functions.reshape(x, batch, channels, taps, *out), size, kernel, dilation, padding, stride)
    return _fresh(functions.squeeze(total, 0) if unbatched else total, input)


def _fold_blocks(cols, size, kernel, dilation, padding, stride):
    """Blocks ``cols`` (N, C, taps, *blocks) summed into (N, C, *size): tap ``t`` (row-major over ``kernel``)
    of block ``b`` lands at ``b·stride + offset(t)·dilation - padding`` in every spatial dim.

    ``fold`` and the transposed convolutions share it. The taps are added in ascending order, each a
    zero-interleaved, shifted copy of its blocks (``_spread``, views and pads), so each output is the sum
    of the blocks that cover it in tap order; the padded border is cropped at the end.
    """
    padded = tuple(s + 2 * p for s, p in zip(size, padding))
    total = None
    for tap, offsets in enumerate(np.ndindex(*kernel)):
        block = cols[:, :, tap]
        for k, o in enumerate(offsets):
            block = _spread(block, 2 + k, o * dilation[k], stride[k], padded[k])
        total = block if total is None else total + block
    crop = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, size))
    return total[crop]
