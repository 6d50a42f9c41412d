"""Strided window views (issue 18/20): ``Tensor.unfold`` and ``as_strided`` as true views, im2col as one
view node, and the in-place view methods (``unsqueeze_``, ``t_``, ``resize_``, ...) — against PyTorch.

The view system's ``View.window`` maps element (..., i, ..., k) to position ``i·step + k·dilation``
(strides only; windows may overlap), and ``ViewStack.window`` puts the windows on a level of their
own where a mask (padding) cuts the dim. Writes through a view whose elements overlap raise
PyTorch's overlap error (PyTorch runs them element by element in memory order).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import vkml
import vkml.nn.functional as F
from vkml.graph.node import Op
from vkml.graph.view import View, ViewStack
from vkml.runtime.counters import counters

RNG = np.random.default_rng(1820)


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def _read(stack: ViewStack, data: np.ndarray) -> np.ndarray:
    """The elements ``stack`` shows of the row-major ``data``, by its index arithmetic (masked: NaN)."""
    out = np.empty(stack.shape)
    for index in np.ndindex(*stack.shape):
        lin, valid = None, True
        multi = index
        for k in reversed(range(len(stack.views))):
            view = stack.views[k]
            if view.mask:
                valid &= all(lo <= i < hi for i, (lo, hi) in zip(multi, view.mask))
            lin = view.offset + sum(i * st for i, st in zip(multi, view.strides))
            if k:
                multi = (
                    np.unravel_index(lin, stack.views[k - 1].shape) if valid else (0,) * len(stack.views[k - 1].shape)
                )
        out[index] = data.reshape(-1)[lin] if valid else np.nan
    return out


def test_window_view_index_arithmetic():
    data = np.arange(4 * 7, dtype=np.float64).reshape(4, 7)
    stack = ViewStack.contiguous((4, 7)).window(1, 3, 2, 2)  # one level: strides only
    assert len(stack.views) == 1 and stack.shape == (4, 2, 3)
    want = np.stack([data[:, i * 2 + np.arange(3) * 2] for i in range(2)], 1)
    np.testing.assert_array_equal(_read(stack, data), want)
    # a padded dim: validity along it is no box in (i, k), so the windows take a level of their own
    padded = ViewStack.contiguous((4, 7)).pad(((0, 0), (1, 1)))
    stack = padded.window(1, 3, 1)
    assert len(stack.views) == 2 and stack.shape == (4, 7, 3)
    ref = np.pad(data, ((0, 0), (1, 1)), constant_values=np.nan)
    want = np.stack([ref[:, i : i + 3] for i in range(7)], 1)
    np.testing.assert_array_equal(_read(stack, data), want)
    # a mask on another dim stays one level
    assert len(ViewStack.contiguous((4, 7)).pad(((1, 0), (0, 0))).window(1, 2, 3).views) == 1
    assert View.contiguous((5,)).window(0, 1, 1).strides == (1, 0)  # size-1 dims keep stride 0


@pytest.mark.parametrize("args", [(0, 1, 1), (1, 2, 1), (2, 2, 3), (-1, 4, 1), (2, 0, 1), (1, 3, 2)])
def test_unfold_is_torchs_view(args):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x, t = vkml.tensor(data), torch.tensor(data)
    got, want = x.unfold(*args), t.unfold(*args)
    assert got.tolist() == want.tolist()
    assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
    assert got._base is x and got.is_contiguous() == want.is_contiguous()
    assert vkml.tensor(3.0).unfold(0, 0, 1).shape == torch.tensor(3.0).unfold(0, 0, 1).shape


def _both(fn):
    """``fn(vkml)`` and ``fn(torch)``: their results, or their error types and first words."""
    out = []
    for lib in (vkml, torch):
        try:
            out.append(("ok", fn(lib)))
        except Exception as e:  # noqa: BLE001  (the error is the result compared)
            out.append((type(e).__name__, str(e)[:60]))
    return out


def _unfold_write_through(L):
    x = L.arange(7.0)
    x.unfold(0, 2, 3).mul_(10)  # windows apart: a write reaches the tensor
    return x.tolist()


def _unfold_write_row(L):
    x = L.arange(6.0)
    v = x.unfold(0, 3, 1)
    v[1] = 9  # one window of overlapping ones: no element twice
    x.add_(1)  # and a write to the tensor shows through the windows
    return x.tolist(), v.tolist(), x._version


def _strided_values(L):
    x = L.arange(10.0)
    v = x[2:].as_strided((3, 2), (2, 1))
    w = x.as_strided((2, 2), (3, 1), 1)
    w.mul_(-1)  # as_strided views share the storage: v shows the write
    return v.tolist(), w.tolist(), x.tolist(), w.stride(), w.storage_offset(), x[2:].as_strided((2,), (1,)).tolist()


def _strided_bounds(L):
    L.arange(6.0).as_strided((3, 3), (1, 2))


def _strided_negative(L):
    L.arange(6.0).as_strided((3, 3), (-1, 1))


def _strided_lengths(L):
    L.arange(6.0).as_strided((3, 3), (1,))


def _strided_overlap_write(L):
    L.arange(10.0).as_strided((3, 2), (1, 0)).add_(1)


def _unsqueeze_versions(L):
    x = L.arange(6.0)
    v = x[1:3]
    x.unsqueeze_(0)
    x.unsqueeze_(-1)
    shape, strides = tuple(x.shape), x.stride()
    x.squeeze_()
    x.mul_(2)  # the view taken before the in-place view ops still shares the storage
    return shape, strides, tuple(x.shape), x._version, v.tolist()


def _t_views(L):
    x = L.arange(6.0).reshape(2, 3)
    col, flat = x[:, 1], x.view(6)
    x.t_()
    x.mul_(10)
    col.fill_(7)
    return x.tolist(), x.stride(), x.is_contiguous(), col.tolist(), flat.tolist(), x._version


def _views_before_t_(L):
    x = L.arange(6.0).reshape(2, 3)
    v, w = x[0], x[:, 1:]
    x.t_()  # views taken before keep their layout in the storage
    return v.stride(), w.stride(), w.storage_offset(), v.is_contiguous(), w.contiguous().tolist()


def _saved_view_before_t_(L):
    a = L.ones(2, 3, requires_grad=True)
    x = a * 1
    v = x[0]
    x.t_()
    y = v * v
    v.mul_(2)  # a write to what y saved, through a view taken before the t_
    y.sum().backward()


def _swaps(L):
    x = L.zeros(2, 3, 4)
    x.swapdims_(0, 2)
    x.swapaxes_(1, 2)
    x.transpose_(0, 1)
    return tuple(x.shape), x.stride()


def _t_3d(L):
    L.zeros(2, 3, 4).t_()


def _leaf(L):
    L.zeros(3, requires_grad=True).unsqueeze_(0)


def _nonleaf_grad(L):
    x = L.ones(3, requires_grad=True)
    y = x * 2
    y.unsqueeze_(0)
    (y * L.arange(3.0)).sum().backward()
    return x.grad.tolist(), tuple(y.shape)


def _saved_version(L):
    a = L.ones(3, requires_grad=True)
    b = a * 2
    c = b * b
    b.unsqueeze_(0)  # bumps b's version: c's backward needs b as it was
    c.sum().backward()


def _as_strided_inplace(L):
    x = L.arange(6.0)
    x.as_strided_((2, 2), (1, 1))
    return x.tolist(), x.stride(), x._version


def _resize(L):
    x = L.arange(6.0)
    x.resize_(2, 3)
    a = x.tolist()
    x.resize_(2, 2)
    b = x.tolist()
    x.resize_(6)  # the storage kept its elements
    y = L.arange(6.0)[2:]
    y.resize_(2, 2)
    z = L.zeros(2, 3)
    z.resize_(3, 3)  # grown: the old elements first
    return a, b, x.tolist(), x._version, y.tolist(), y.storage_offset(), tuple(z.shape), z[:2].tolist()


def _resize_grad(L):
    L.arange(6.0, requires_grad=True).resize_(2, 2)


@pytest.mark.parametrize(
    "case",
    [
        _unfold_write_through,
        _unfold_write_row,
        _strided_values,
        _strided_bounds,
        _strided_negative,
        _strided_lengths,
        _strided_overlap_write,
        _unsqueeze_versions,
        _t_views,
        _views_before_t_,
        _saved_view_before_t_,
        _swaps,
        _t_3d,
        _leaf,
        _nonleaf_grad,
        _saved_version,
        _as_strided_inplace,
        _resize,
        _resize_grad,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_views_and_inplace_view_methods_as_torch(case):
    got, want = _both(case)
    if got[0] == "ok" or want[0] == "ok":
        assert got == want
    else:  # the same error type; vkml's message names its own dtypes
        assert got[0] == want[0], (got, want)


def test_write_through_overlapping_windows_raises():
    """PyTorch writes through overlapping windows element by element in memory order (x becomes
    [1, 3, 5, 6, 6, 6] for this add_); vkml refuses with PyTorch's own overlap error, leaving x as it was."""
    x = vkml.arange(6.0)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.unfold(0, 3, 1).add_(1)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and x._version == 0


def test_inplace_view_method_errors_leave_the_tensor_as_it_was():
    x = vkml.arange(6.0)
    with pytest.raises(IndexError, match="unsqueeze"):
        x.unsqueeze_(5)
    y = vkml.arange(6.0)[2:]
    y.as_strided_((6,), (1,), 0)  # checked against the storage, not the view's 4 elements
    assert x._base is None and x._version == 0 and x.shape == (6,) and y.tolist() == list(map(float, range(6)))


def test_window_and_strided_gradients_as_torch():
    data = RNG.standard_normal(9).astype(np.float32)
    weights = RNG.standard_normal((3, 3)).astype(np.float32)
    grads = []
    for lib in (vkml, torch):
        x = lib.tensor(data, requires_grad=True)
        y = lib.tensor(data, requires_grad=True)
        ((x.unfold(0, 3, 3) * lib.tensor(weights)).sum() + (y[1:].as_strided((3, 3), (2, 1)) ** 2).sum()).backward()
        grads.append((x.grad.tolist(), y.grad.tolist()))
    assert grads[0] == grads[1]


def test_conv2d_im2col_is_one_view_node():
    """One conv2d records a handful of nodes (was 14: nine slices, a cat, ...): one product reading the
    windows of one window view (the implicit GEMM), its result already in the NCHW layout."""
    x, w = vkml.zeros(1, 2, 6, 6).realize(), vkml.zeros(3, 2, 3, 3).realize()
    out = F.conv2d(x, w, padding=1, stride=(2, 1))
    nodes, stack = {}, [out.node]
    while stack:
        n = stack.pop()
        if id(n) not in nodes and not n.realized:
            nodes[id(n)] = n
            stack.extend(n.srcs)
    ops = sorted(str(n.op) for n in nodes.values())
    assert Op.CAT not in ops and ops.count(Op.MATMUL) == 1 and len(ops) <= 8, ops
    before = counters["dispatches"]
    out.realize()
    assert counters["dispatches"] - before == 1  # the product, writing the NCHW layout (no columns kernel)


def test_unfold_gradient_adds_taps_in_order(dev):
    """F.unfold's (im2col's) input gradient: every tap's gradient spread back, added in ascending tap order
    (float32, one rounding per add), the same bits on CPU and Vulkan; pinned against numpy doing that."""
    x_np = RNG.standard_normal((1, 2, 5, 6)).astype(np.float32)
    g_np = RNG.standard_normal((1, 2 * 2 * 3, 5 * 3)).astype(np.float32)
    x = vkml.tensor(x_np, device=dev, requires_grad=True)
    cols = F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    assert np.array_equal(
        cols.detach().numpy(), torch.nn.functional.unfold(torch.tensor(x_np), (2, 3), (2, 1), 1, (1, 2)).numpy()
    )
    (cols * vkml.tensor(g_np, device=dev)).sum().backward()
    g = g_np.reshape(1, 2, 2, 3, 5, 3)
    total = np.zeros((1, 2, 7, 8), np.float32)
    for i, j in itertools.product(range(2), range(3)):
        spread = np.zeros((1, 2, 7, 8), np.float32)
        spread[:, :, i * 2 : i * 2 + 5, j : j + 2 * 3 : 2] = g[:, :, i, j]
        total = total + spread
    assert np.array_equal(x.grad.numpy(), total[:, :, 1:-1, 1:-1])


def test_window_views_on_devices(dev):
    """Window views over realized buffers, a padded level and an as_strided view read the same on CPU and Vulkan."""
    data = RNG.standard_normal((3, 10)).astype(np.float32)
    x = vkml.tensor(data, device=dev).realize()
    t = torch.tensor(data)
    np.testing.assert_array_equal(x.unfold(1, 4, 3).numpy(), t.unfold(1, 4, 3).numpy())
    np.testing.assert_array_equal(x[1:, 2:].unfold(0, 2, 1).numpy(), t[1:, 2:].unfold(0, 2, 1).numpy())
    np.testing.assert_array_equal(x.as_strided((4, 5), (3, 1), 2).numpy(), t.as_strided((4, 5), (3, 1), 2).numpy())
    padded = vkml.nn.functional.pad(x, (2, 1)).unfold(1, 3, 2) * 2
    np.testing.assert_array_equal(padded.numpy(), torch.nn.functional.pad(t, (2, 1)).unfold(1, 3, 2).numpy() * 2)
