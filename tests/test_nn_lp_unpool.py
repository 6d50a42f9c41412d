"""lp_pool1d/2d/3d and max_unpool1d/2d/3d (and their modules) against PyTorch: values, shapes,
gradients and errors; on lavapipe, the CPU backend's bits."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from layercheck import check
from optest import torch_at_least

import vkml
import vkml.nn as nn
import vkml.nn.functional as F


def _x(shape, seed=0, positive=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return np.abs(x) + 0.25 if positive else x


def _with_zero_window(x):
    """A leading 2-wide block of zeros in every spatial dim: a window whose powers sum to 0 (gradient 0)."""
    x = x.copy()
    x[(..., *[slice(0, 2)] * (x.ndim - 2))] = 0.0
    return x


# (name, n, shape, norm_type, kernel_size, stride, ceil_mode, positive input, on the GPU too)
LP = [
    ("1d p2", 1, (2, 3, 9), 2, 3, None, False, False, True),
    ("1d p1.5 stride ceil", 1, (3, 8), 1.5, 3, 2, True, True, False),
    ("2d p2 rect stride ceil", 2, (2, 2, 6, 7), 2.0, (2, 3), (1, 2), True, False, True),
    ("2d p3 negative sums NaN", 2, (1, 2, 4, 4), 3, 2, None, False, False, False),
    ("2d p1 unbatched", 2, (3, 5, 4), 1, 2, 1, False, False, False),
    ("3d p2", 3, (1, 2, 4, 4, 5), 2, (2, 2, 3), None, False, False, True),
    ("3d p2.5 unbatched ceil", 3, (2, 3, 5, 4), 2.5, 2, (2, 1, 2), True, True, False),
]


@pytest.mark.parametrize(
    ("what", "n", "shape", "p", "k", "s", "ceil", "positive", "on_gpu"), LP, ids=[c[0] for c in LP]
)
def test_lp_pool_matches_torch(what, n, shape, p, k, s, ceil, positive, on_gpu, gpu):
    x = _with_zero_window(_x(shape, positive=positive))
    fn, ref = getattr(F, f"lp_pool{n}d"), getattr(TF, f"lp_pool{n}d")
    check(
        lambda t: fn(t, p, k, s, ceil),
        lambda t: ref(t, p, k, s, ceil),
        [x],
        gpu if on_gpu else None,
        rtol=2e-6,
        atol=2e-6,
    )


def test_lp_pool_window_of_zeros_has_gradient_zero():
    x = vkml.zeros(1, 1, 2, 2, requires_grad=True)
    out = F.lp_pool2d(x, 2, 2)
    out.sum().backward()
    assert out.tolist() == [[[[0.0]]]]
    assert x.grad.tolist() == [[[[0.0, 0.0], [0.0, 0.0]]]]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lp_pool_infinite_norm_is_max_or_min_of_abs(n):
    # PyTorch 2.12 and later (the formula before gave ones); compared with vkml's own max pool.
    x = vkml.tensor(_x((2, 2) + (5,) * n))
    lp, mp = getattr(F, f"lp_pool{n}d"), getattr(F, f"max_pool{n}d")
    np.testing.assert_array_equal(lp(x, math.inf, 2).numpy(), mp(x.abs(), 2).numpy())
    np.testing.assert_array_equal(lp(x, -math.inf, 2, 1).numpy(), (-mp(-x.abs(), 2, 1)).numpy())


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lp_pool_modules_match_torch(n):
    x = _x((1, 2) + (5,) * n, seed=n, positive=True)
    for args in [(2, 3), (1.5, 2, 1, True)]:
        layer, ref = getattr(nn, f"LPPool{n}d")(*args), getattr(torch.nn, f"LPPool{n}d")(*args)
        assert repr(layer) == repr(ref)
        np.testing.assert_allclose(layer(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).numpy(), rtol=2e-6, atol=2e-6)


def _pooled(n, shape, kernel, stride=None, padding=0, seed=0):
    """max_pool's output and indices (PyTorch's) for an input of ``shape``, as numpy arrays."""
    x = torch.tensor(np.round(_x(shape, seed) * 4) / 4)
    out, idx = getattr(TF, f"max_pool{n}d")(x, kernel, stride, padding, return_indices=True)
    return out.numpy(), idx.numpy()


# (name, n, pooled input shape, kernel, stride, padding, output_size, on the GPU too)
UNPOOL = [
    ("1d", 1, (2, 3, 8), 2, None, 0, None, True),
    ("1d unbatched stride pad output_size", 1, (3, 9), 3, 2, 1, (10,), False),
    ("2d", 2, (2, 2, 6, 6), 2, None, 0, None, True),
    ("2d output_size with batch and channel", 2, (1, 2, 7, 5), (3, 2), (2, 1), 1, (1, 2, 8, 5), False),
    ("2d unbatched", 2, (3, 4, 6), 2, None, 0, [5, 7], False),
    ("3d", 3, (1, 2, 4, 4, 6), 2, None, 0, None, True),
    ("3d unbatched stride pad", 3, (2, 5, 4, 4), (3, 2, 2), (2, 2, 1), (1, 0, 1), None, False),
]


@pytest.mark.parametrize(("what", "n", "shape", "k", "s", "p", "size", "on_gpu"), UNPOOL, ids=[c[0] for c in UNPOOL])
def test_max_unpool_matches_torch(what, n, shape, k, s, p, size, on_gpu, gpu):
    out, idx = _pooled(n, shape, k, s, p)
    fn, ref = getattr(F, f"max_unpool{n}d"), getattr(TF, f"max_unpool{n}d")
    check(
        lambda t, i: fn(t, i, k, s, p, size),
        lambda t, i: ref(t, i, k, s, p, size),
        [out, idx],
        gpu if on_gpu else None,
        rtol=0,
        atol=0,
    )


def test_max_unpool_repeated_indices_last_wins_and_each_gets_the_gradient(gpu):
    # PyTorch's CPU kernel writes in row-major order (the last write stays); its gradient is a gather
    values = _x((1, 2, 2, 2), seed=3)
    idx = np.array([[[[0, 5], [0, 15]], [[3, 3], [3, 0]]]], np.int64)
    if not torch_at_least(2, 13):  # older PyTorch picks another winner: the stated rule, computed here
        want = np.zeros((1, 2, 16), np.float32)
        for c in range(2):
            for value, at in zip(values[0, c].reshape(-1), idx[0, c].reshape(-1), strict=True):
                want[0, c, at] = value
        got = F.max_unpool2d(vkml.tensor(values, device=gpu), vkml.tensor(idx, device=gpu), 2)
        np.testing.assert_array_equal(got.numpy(), want.reshape(1, 2, 4, 4))
        return
    check(
        lambda t, i: F.max_unpool2d(t, i, 2),
        lambda t, i: TF.max_unpool2d(t, i, 2),
        [values, idx],
        gpu,
        rtol=0,
        atol=0,
    )


@pytest.mark.parametrize(("n", "dtype"), [(2, "float16"), (2, "float64"), (3, "bfloat16")])
def test_max_unpool_keeps_the_dtype_and_every_bit(n, dtype):
    out, idx = _pooled(n, (1, 2) + (4,) * n, 2)
    want = getattr(TF, f"max_unpool{n}d")(torch.tensor(out).to(getattr(torch, dtype)), torch.tensor(idx), 2)
    got = getattr(F, f"max_unpool{n}d")(vkml.tensor(out).to(getattr(vkml, dtype)), vkml.tensor(idx), 2)
    assert got.dtype is getattr(vkml, dtype)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_modules_match_torch(n):
    out, idx = _pooled(n, (2, 2) + (5,) * n, 2, 2, 0, seed=n)
    for args in [(2,), (2, 2, 0)]:
        layer, ref = getattr(nn, f"MaxUnpool{n}d")(*args), getattr(torch.nn, f"MaxUnpool{n}d")(*args)
        assert repr(layer) == repr(ref)
        size = (5,) * n
        np.testing.assert_array_equal(
            layer(vkml.tensor(out), vkml.tensor(idx), size).numpy(),
            ref(torch.tensor(out), torch.tensor(idx), size).numpy(),
        )


def test_max_unpool_empty_batch_and_empty_plane_as_torch():
    out, idx = _pooled(2, (2, 2, 4, 4), 2)
    for kwargs, batch in [({}, slice(0, 0)), ({"padding": 2}, slice(None))]:
        want = TF.max_unpool2d(torch.tensor(out[batch]), torch.tensor(idx[batch]), 2, **kwargs)
        got = F.max_unpool2d(vkml.tensor(out[batch]), vkml.tensor(idx[batch]), 2, **kwargs)
        assert got.shape == tuple(want.shape)


_OUT, _IDX = _pooled(2, (1, 2, 4, 4), 2)
_OUT3, _IDX3 = _pooled(3, (1, 2, 4, 4, 4), 2)
_OUT1, _IDX1 = _pooled(1, (2, 4), 2)


def _one_bad(idx, value):
    """``idx`` with its last element replaced by ``value`` (one bad index: PyTorch's threads name any of several)."""
    idx = idx.copy()
    idx.reshape(-1)[-1] = value
    return idx


ERRORS = [
    ("unpool int32 indices", lambda m, o, i: m.max_unpool2d(o, i.int(), 2), RuntimeError),
    ("unpool3d float indices", lambda m, o, i: m.max_unpool3d(o, i.float(), 2), RuntimeError),
    ("unpool shapes differ", lambda m, o, i: m.max_unpool2d(o, i[..., :1], 2), RuntimeError),
    ("unpool 2-D input", lambda m, o, i: m.max_unpool2d(o[0, 0], i[0, 0], 2), RuntimeError),
    ("unpool output_size out of range", lambda m, o, i: m.max_unpool2d(o, i, 2, output_size=(6, 6)), ValueError),
    ("unpool output_size length", lambda m, o, i: m.max_unpool2d(o, i, 2, output_size=(5,)), ValueError),
    ("unpool negative size", lambda m, o, i: m.max_unpool2d(o, i, 2, padding=3), ValueError),
    ("unpool empty channel dim", lambda m, o, i: m.max_unpool2d(o[:, :0], i[:, :0], 2), RuntimeError),
    ("unpool int input", lambda m, o, i: m.max_unpool2d(o.int(), i, 2), NotImplementedError),
    ("unpool3d 3-D input", lambda m, o, i: m.max_unpool3d(o[0], i[0], 2), RuntimeError),
    ("lp norm 0", lambda m, o, i: m.lp_pool2d(o, 0, 2), ZeroDivisionError),
    ("lp2d kernel of 3", lambda m, o, i: m.lp_pool2d(o, 2, (1, 1, 1)), ValueError),
    ("lp1d tuple kernel", lambda m, o, i: m.lp_pool1d(o[0], 2, (2,)), TypeError),
]
ERRORS_3D = [
    ("unpool3d zero stride", lambda m, o, i: m.max_unpool3d(o, i, 2, stride=0), RuntimeError),
    ("unpool3d empty depth", lambda m, o, i: m.max_unpool3d(o[:, :, :0], i[:, :, :0], 2), RuntimeError),
    ("unpool3d int input", lambda m, o, i: m.max_unpool3d(o.int(), i, 2), NotImplementedError),
]
ERRORS_1D = [
    ("unpool1d 1-D input", lambda m, o, i: m.max_unpool1d(o[0], i[0], 2), RuntimeError),
]

BAD_INDEX = [
    ("unpool index too large", lambda m, o, i: m.max_unpool2d(o, i, 2), RuntimeError, 16, (_OUT, _IDX)),
    ("unpool index negative", lambda m, o, i: m.max_unpool2d(o, i, 2), RuntimeError, -1, (_OUT, _IDX)),
    ("unpool3d index too large", lambda m, o, i: m.max_unpool3d(o, i, 2), RuntimeError, 99, (_OUT3, _IDX3)),
    (
        "unpool output too small",
        lambda m, o, i: m.max_unpool2d(o, i, 2, output_size=(3, 3)),
        RuntimeError,
        9,
        (_OUT, np.zeros_like(_IDX)),
    ),
    ("unpool1d index too large", lambda m, o, i: m.max_unpool1d(o, i, 2), RuntimeError, 4, (_OUT1, _IDX1)),
]


@pytest.mark.parametrize(
    ("what", "call", "error", "arrays"),
    [(*e, (_OUT, _IDX)) for e in ERRORS]
    + [(*e, (_OUT3, _IDX3)) for e in ERRORS_3D]
    + [(*e, (_OUT1, _IDX1)) for e in ERRORS_1D]
    + [(*e[:3], (o, _one_bad(i, e[3]))) for e in BAD_INDEX for o, i in [e[4]]],
    ids=[e[0] for e in ERRORS + ERRORS_3D + ERRORS_1D + BAD_INDEX],
)
def test_errors_match_torch(what, call, error, arrays):
    out, idx = arrays
    older = what == "unpool negative size" and not torch_at_least(2, 13)  # 2.11 fails later, otherwise
    with pytest.raises(Exception if older else error) as want:
        call(TF, torch.tensor(out), torch.tensor(idx))
    x, i = vkml.tensor(out), vkml.tensor(idx)
    with pytest.raises(error) as got:
        call(F, x, i)
    if error is not TypeError and not older:  # PyTorch's TypeErrors are its argument parser's; vkml names the op
        assert str(got.value) == str(want.value)
    assert x.tolist() == out.tolist() and i.tolist() == idx.tolist()  # the inputs are intact
