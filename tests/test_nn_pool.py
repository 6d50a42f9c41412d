"""Pooling against PyTorch: forward, indices and input gradients; Vulkan = CPU bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from layercheck import check

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

TF = torch.nn.functional


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


MAX2D = [
    ("kernel only", (2, 3, 6, 6), (2,), {}),
    ("stride pad", (2, 2, 7, 6), (3,), {"stride": 2, "padding": 1}),
    ("ceil dilation", (1, 2, 9, 8), ((3, 2),), {"stride": (2, 3), "dilation": (2, 1), "ceil_mode": True}),
    ("ceil pad", (1, 2, 6, 7), (3, 2, 1), {"ceil_mode": True}),
    ("unbatched", (3, 5, 5), (2, 1), {}),
]


@pytest.mark.parametrize(("what", "shape", "args", "kwargs"), MAX2D, ids=[c[0] for c in MAX2D])
def test_max_pool2d_matches_torch(what, shape, args, kwargs, gpu):
    check(
        lambda x: F.max_pool2d(x, *args, return_indices=True, **kwargs),
        lambda x: TF.max_pool2d(x, *args, return_indices=True, **kwargs),
        [_x(shape)],
        gpu if what in ("stride pad", "ceil dilation") else None,
    )


def test_max_pool_gradient_goes_to_the_first_maximum(gpu):
    # ties everywhere (rounded values) and overlapping windows: PyTorch gives each window's
    # gradient to its first maximum in row-major order
    x = np.round(_x((2, 2, 6, 6), 3)).astype(np.float32)
    _, (grad,) = check(
        lambda t: F.max_pool2d(t, 3, 1, 1, return_indices=True),
        lambda t: TF.max_pool2d(t, 3, 1, 1, return_indices=True),
        [x],
        gpu,
        rtol=1e-6,
        atol=0,
    )
    xt = torch.tensor(x, requires_grad=True)
    TF.max_pool2d(xt, 3, 1, 1).backward(torch.ones(2, 2, 6, 6))
    ones = vkml.tensor(x, requires_grad=True)
    F.max_pool2d(ones, 3, 1, 1).backward(vkml.ones(2, 2, 6, 6))
    np.testing.assert_array_equal(ones.grad.numpy(), xt.grad.numpy())  # counts of windows won: exact
    assert (grad != 0).sum() < x.size  # ties left elements without gradient


@pytest.mark.parametrize(("kernel", "stride", "padding"), [(3, 1, 1), (2, 1, 0), (5, 2, 2)])
@pytest.mark.parametrize("indices", [False, True])
def test_overlapping_pool_gradients_add_in_pytorchs_order(kernel, stride, padding, indices, gpu):
    # float32 avg_pool2d and max_pool2d with indices: each element's windows added in their row-major
    # order, as PyTorch's backward adds them (the window view's taps descending)
    x, w = _x((2, 3, 11, 10), 7), _x((2, 3, 11, 10), 8)

    def run(m, f, t, upstream):
        out = (
            f(t, kernel, stride, padding, return_indices=True)[0]
            if indices
            else m.avg_pool2d(t, kernel, stride, padding)
        )
        (out * upstream(w[..., : out.shape[-2], : out.shape[-1]])).sum().backward()

    t = torch.tensor(x, requires_grad=True)
    run(TF, TF.max_pool2d, t, torch.tensor)
    v = vkml.tensor(x, device=gpu, requires_grad=True)
    run(F, F.max_pool2d, v, lambda a: vkml.tensor(a, device=gpu))
    np.testing.assert_array_equal(v.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation"), [(3, 1, 1, 1), (3, 1, 1, 2), (5, 2, 2, 1)])
def test_overlapping_max_pool_gradients_add_in_pytorchs_order(kernel, stride, padding, dilation, dtype, gpu):
    # an element that wins several windows receives their gradients added in the dtype, in the windows'
    # row-major order (PyTorch's CPU kernel): the same bits, float32 and float16, CPU and Vulkan
    x = _x((2, 3, 11, 10), 5)
    w = _x((2, 3, 11, 10), 6)
    t = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    out = TF.max_pool2d(t, kernel, stride, padding, dilation)
    (out * torch.tensor(w[..., : out.shape[-2], : out.shape[-1]], dtype=out.dtype)).sum().backward()
    want = t.grad.float().numpy()
    for device in ("cpu", gpu):
        v = vkml.tensor(x, device=device).to(getattr(vkml, dtype)).requires_grad_()
        got = F.max_pool2d(v, kernel, stride, padding, dilation)
        upstream = vkml.tensor(w[..., : got.shape[-2], : got.shape[-1]], device=device).to(got.dtype)
        (got * upstream).sum().backward()
        np.testing.assert_array_equal(v.grad.float().numpy(), want, err_msg=f"{dtype} on {device}")


def test_max_pool1d_and_module(gpu):
    check(
        lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True),
        lambda x: TF.max_pool1d(x, 3, 2, 1, ceil_mode=True),
        [_x((2, 3, 8))],
    )
    layer, ref = nn.MaxPool2d(3, 2, 1), torch.nn.MaxPool2d(3, 2, 1)
    assert repr(layer) == repr(ref)
    x = _x((1, 2, 5, 5))
    np.testing.assert_array_equal(layer(vkml.tensor(x, device=gpu)).numpy(), ref(torch.tensor(x)).numpy())
    out, idx = nn.MaxPool1d(2, return_indices=True)(vkml.tensor(x[0]))
    want, want_idx = torch.nn.MaxPool1d(2, return_indices=True)(torch.tensor(x[0]))
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    np.testing.assert_array_equal(idx.numpy(), want_idx.numpy())


AVG2D = [
    ("kernel only", (2, 3, 6, 6), (2,), {}),
    ("pad counted", (2, 2, 7, 6), (3, 2, 1), {}),
    ("pad not counted, ceil", (1, 2, 7, 8), (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("ceil counted", (1, 2, 6, 7), ((3, 2), (2, 3), (1, 1)), {"ceil_mode": True}),
    ("divisor", (2, 2, 5, 5), (2, 1), {"divisor_override": 3}),
]


@pytest.mark.parametrize(("what", "shape", "args", "kwargs"), AVG2D, ids=[c[0] for c in AVG2D])
def test_avg_pool2d_matches_torch(what, shape, args, kwargs, gpu):
    check(
        lambda x: F.avg_pool2d(x, *args, **kwargs),
        lambda x: TF.avg_pool2d(x, *args, **kwargs),
        [_x(shape)],
        gpu if what == "pad not counted, ceil" else None,
        rtol=1e-6,
        atol=1e-6,
    )


def test_avg_pool1d_and_modules():
    x = _x((2, 3, 9))
    check(lambda t: F.avg_pool1d(t, 4, 3, 2, True, False), lambda t: TF.avg_pool1d(t, 4, 3, 2, True, False), [x])
    layer, ref = nn.AvgPool2d(3, 2, 1, count_include_pad=False), torch.nn.AvgPool2d(3, 2, 1, count_include_pad=False)
    y = _x((2, 2, 5, 5))
    np.testing.assert_allclose(layer(vkml.tensor(y)).numpy(), ref(torch.tensor(y)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(
        nn.AvgPool1d(3)(vkml.tensor(x)).numpy(), torch.nn.AvgPool1d(3)(torch.tensor(x)).numpy(), rtol=1e-6
    )


@pytest.mark.parametrize("size", [1, (3, 4), (2, None), 5])
def test_adaptive_pools_match_torch(size, gpu):
    x = _x((2, 3, 7, 8))
    device = gpu if size == (3, 4) else None
    check(
        lambda t: F.adaptive_avg_pool2d(t, size),
        lambda t: TF.adaptive_avg_pool2d(t, size),
        [x],
        device,
        rtol=1e-6,
        atol=1e-6,
    )
    check(
        lambda t: F.adaptive_max_pool2d(t, size, return_indices=True),
        lambda t: TF.adaptive_max_pool2d(t, size, return_indices=True),
        [x],
        device,
    )
    assert nn.AdaptiveAvgPool2d(size)(vkml.tensor(x)).shape == tuple(
        torch.nn.AdaptiveAvgPool2d(size)(torch.tensor(x)).shape
    )


def test_global_average_pool_is_the_mean():
    x = _x((2, 3, 4, 4))
    got = nn.AdaptiveAvgPool2d(1)(vkml.tensor(x)).numpy()
    np.testing.assert_array_equal(got, vkml.tensor(x).mean((-2, -1), keepdim=True).numpy())


ERRORS = [
    (lambda: F.max_pool2d(vkml.ones(1, 1, 5, 5), 3, padding=2), "pad should be at most half"),
    (lambda: F.max_pool2d(vkml.ones(1, 1, 5, 5), 0), "kernel_size must be greater than zero"),
    (lambda: F.avg_pool2d(vkml.ones(1, 1, 5, 5), 2, stride=0), "stride should not be zero"),
    (lambda: F.max_pool2d(vkml.ones(5, 5), 2), "3D or 4D"),
    (lambda: F.max_pool2d(vkml.ones(1, 1, 2, 2), 3), "output size"),
    (lambda: F.avg_pool2d(vkml.ones(1, 1, 4, 4), 2, divisor_override=0), "divisor must be not zero"),
]


@pytest.mark.parametrize(("call", "match"), ERRORS)
def test_pool_errors_match_torch(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_float16_pooling_rounds_once_as_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float16)
    got = F.avg_pool2d(vkml.tensor(x), 3, 2, 1)
    assert got.dtype is vkml.float16
    np.testing.assert_array_equal(got.numpy(), TF.avg_pool2d(torch.tensor(x), 3, 2, 1).numpy())
    np.testing.assert_array_equal(F.max_pool2d(vkml.tensor(x), 2).numpy(), TF.max_pool2d(torch.tensor(x), 2).numpy())


@pytest.mark.parametrize("adaptive", [False, True])
def test_max_pools_select_the_last_nan_as_torch(adaptive, gpu):
    x = _x((2, 2, 6, 6), 4)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = x[1, 1, 4, 4] = np.nan
    x[0, 1, 0, :2] = 7.0  # a tie: the first maximum
    fn, tfn = (F.adaptive_max_pool2d, TF.adaptive_max_pool2d) if adaptive else (F.max_pool2d, TF.max_pool2d)
    (out, _), _ = check(
        lambda t: fn(t, 3 if not adaptive else 2, return_indices=True),
        lambda t: tfn(t, 3 if not adaptive else 2, return_indices=True),
        [x],
        gpu,
        rtol=0,
        atol=0,
    )
    assert np.isnan(out).sum() == 2


def test_pool_module_reprs_match_torch():
    for name, args, kwargs in [
        ("MaxPool2d", (3,), {}),
        ("MaxPool2d", (3, 2, 1), {"ceil_mode": True}),
        ("MaxPool1d", (2,), {}),
        ("AvgPool2d", (3,), {}),
        ("AvgPool1d", (3,), {}),
        ("AdaptiveAvgPool2d", (1,), {}),
        ("AdaptiveMaxPool2d", ((2, 3),), {}),
    ]:
        assert repr(getattr(nn, name)(*args, **kwargs)) == repr(getattr(torch.nn, name)(*args, **kwargs))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_pool_values_fold_the_taps_as_torch(n, gpu):
    """Without indices a max pool is one elementwise fold over strided views: NaN (the last), the
    first of tied maxima (its sign bit, -0.0 before 0.0), padding and gradients as PyTorch's."""
    x = _x((2, 2) + (7,) * n, 5)
    flat = x.reshape(-1)
    flat[[3, 20, 27]] = np.nan
    flat[[5, 6]] = [-0.0, 0.0]
    flat[[8, 9]] = [0.0, -0.0]
    fn, tfn = getattr(F, f"max_pool{n}d"), getattr(TF, f"max_pool{n}d")
    # gradients of overlapping windows add in another order than PyTorch's: within an ulp
    check(lambda t: fn(t, 3, 2, 1), lambda t: tfn(t, 3, 2, 1), [x], gpu, rtol=1e-6, atol=1e-7)
    got, want = fn(vkml.tensor(x), 3, 2, 1).numpy(), tfn(torch.tensor(x), 3, 2, 1).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite].view(np.uint32), want[finite].view(np.uint32))  # -0.0 kept
    vkml_x = vkml.tensor(x, device=gpu)
    vkml_x.realize()
    before = vkml.runtime.counters.counters["dispatches"]
    fn(vkml_x, 3, 2, 1).realize()
    assert vkml.runtime.counters.counters["dispatches"] - before == 1
