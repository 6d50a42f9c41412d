"""Scans (vkml/frontend/scans.py): cumsum, cumprod, cummax, cummin, logcumsumexp against PyTorch.

Values, dtypes and gradients are compared with PyTorch's; the bits with a numpy model of the
stated Hillis-Steele order, and Vulkan's bits with the CPU's, for every layout.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import (
    assert_device_gives_cpu_bits,
    assert_same_bits,
    in_layout,
    lowered,
    random_floats,
    random_ints,
    result_arrays,
    to_torch,
    weighted_grad,
)

import vkml

NAN, INF = float("nan"), float("inf")


def _floats(seed=0, shape=(3, 13)):
    return random_floats(shape, seed=seed, scale=1.5)


def _ties_and_nans():
    x = np.array([[1, 3, 3, NAN, 2, NAN, 5, -1], [0.0, -0.0, 0.0, 2, 2, -INF, INF, 1]], np.float32)
    return x


def _with_zeros():
    x = _floats(3)
    x[0, 4], x[2, 0], x[2, 7] = 0.0, 0.0, 0.0
    return x


# (id, input, function of (module, tensor), differentiable)
CASES = [
    ("cumsum", _floats, lambda m, x: m.cumsum(x, 1), True),
    ("cumsum_dim0", lambda: _floats(1, (9, 4)), lambda m, x: m.cumsum(x, 0), True),
    ("cumsum_3d_neg_dim", lambda: _floats(2, (2, 5, 3)), lambda m, x: x.cumsum(-2), True),
    ("cumsum_int32", lambda: random_ints((3, 11), np.int32, seed=3), lambda m, x: m.cumsum(x, 1), False),
    (
        "cumsum_bool",
        lambda: random_ints((3, 7), np.int32, seed=4, low=0, high=2).astype(bool),
        lambda m, x: m.cumsum(x, 1),
        False,
    ),
    (
        "cumsum_dtype",
        lambda: random_ints((3, 7), np.int32, seed=5),
        lambda m, x: m.cumsum(x, 1, dtype=m.float32),
        False,
    ),
    ("cumsum_float16", lambda: _floats(6).astype(np.float16), lambda m, x: m.cumsum(x, 1), False),
    ("cumsum_axis", _floats, lambda m, x: m.cumsum(x, axis=1), True),
    ("cumsum_0d", lambda: np.float32(2.5), lambda m, x: m.cumsum(x, 0), False),
    ("cumsum_empty", lambda: np.zeros((2, 0), np.float32), lambda m, x: m.cumsum(x, 1), False),
    ("cumprod", _floats, lambda m, x: m.cumprod(x, 1), True),
    ("cumprod_zeros", _with_zeros, lambda m, x: x.cumprod(1), True),
    (
        "cumprod_int64",
        lambda: random_ints((3, 9), np.int64, seed=7, low=-3, high=4),
        lambda m, x: m.cumprod(x, 1),
        False,
    ),
    ("cummax", _floats, lambda m, x: m.cummax(x, 1), True),
    ("cummax_ties_nans", _ties_and_nans, lambda m, x: m.cummax(x, 1), False),
    ("cummin", lambda: _floats(8, (10, 3)), lambda m, x: x.cummin(0), True),
    ("cummin_ties_nans", _ties_and_nans, lambda m, x: m.cummin(x, -1), False),
    ("cummax_int", lambda: random_ints((3, 10), np.int32, seed=9, low=-3, high=3), lambda m, x: m.cummax(x, 1), False),
    (
        "cummin_bool",
        lambda: random_ints((3, 9), np.int32, seed=13, low=0, high=2).astype(bool),
        lambda m, x: m.cummin(x, 1),
        False,
    ),
    ("cummax_0d", lambda: np.float32(2.5), lambda m, x: m.cummax(x, 0), False),
    ("logcumsumexp", _floats, lambda m, x: m.logcumsumexp(x, 1), True),
    ("logcumsumexp_dim0", lambda: _floats(10, (7, 2)), lambda m, x: x.logcumsumexp(0), True),
    (
        "logcumsumexp_infs",
        lambda: np.array([[-INF, -INF, 1.0, INF, 2.0, -INF], [NAN, 1, 2, 3, 4, 5]], np.float32),
        lambda m, x: m.logcumsumexp(x, 1),
        False,
    ),
    ("logcumsumexp_float16", lambda: _floats(11).astype(np.float16), lambda m, x: m.logcumsumexp(x, 1), False),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch(case):
    _, make, fn, _ = case
    x = make()
    want, got = fn(torch, to_torch(x)), fn(vkml, vkml.tensor(x))
    if isinstance(want, tuple):
        assert type(got).__name__ == type(want).__name__ and got._fields == ("values", "indices")
        assert got.values is got[0] and got.indices is got[1]
    for w, g in zip(result_arrays(want), result_arrays(got), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if w.dtype.kind == "f":
            rtol = 2e-3 if w.dtype == np.float16 else 1e-5
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(g, w)


def _grad_of(lib, fn, x_np, device=None):
    return weighted_grad(lib, fn, x_np, device, seed=77)


GRAD_CASES = [c for c in CASES if c[3]]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(case):
    _, make, fn, _ = case
    x = make()
    want, got = _grad_of(torch, fn, x), _grad_of(vkml, fn, x, vkml.device("cpu"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vulkan_gives_the_cpu_bits(case, gpu):
    name, make, fn, differentiable = case
    grad_seed = 77 if differentiable and name in ("cumsum", "cumprod_zeros", "cummax", "logcumsumexp") else None
    assert_device_gives_cpu_bits(fn, make(), gpu, name, grad_seed)


def hillis_steele(x: np.ndarray, combine) -> np.ndarray:
    """The scans' stated order on the last axis, in numpy: y[i] = y[i - 2^k] ⊕ y[i] for i >= 2^k, k = 0, 1, ..."""
    y = x.copy()
    step = 1
    while step < y.shape[-1]:
        y = np.concatenate([y[..., :step], combine(y[..., :-step], y[..., step:])], axis=-1)
        step *= 2
    return y


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 33, 100])
def test_cumsum_and_cumprod_are_the_stated_order(n):
    x = random_floats((3, n), seed=n, scale=2.0)
    assert_same_bits(vkml.cumsum(vkml.tensor(x), 1).numpy(), hillis_steele(x, np.add), f"cumsum n={n}")
    assert_same_bits(vkml.cumprod(vkml.tensor(x), 1).numpy(), hillis_steele(x, np.multiply), f"cumprod n={n}")


@pytest.mark.parametrize("n", [64, 4096])
def test_a_scan_is_log2_n_parallel_steps_not_a_walk_along_the_row(n):
    """Each Hillis-Steele step is elementwise over the whole tensor: at most one kernel a step."""
    x = vkml.tensor(random_floats((4, n), seed=1))
    steps = (n - 1).bit_length()
    assert len(lowered(vkml.cumsum(x, 1))) <= steps
    assert len(lowered(vkml.cumsum(x.T, 0))) <= steps


def test_cumsum_of_negative_zeros_stays_negative_zero():
    """The identity never enters a combine (the contract): -0.0 + -0.0 is -0.0 at every position."""
    out = vkml.cumsum(vkml.tensor(np.full(5, -0.0, np.float32)), 0).numpy()
    assert_same_bits(out, np.full(5, -0.0, np.float32), "cumsum of -0.0")


@pytest.mark.parametrize("layout", ["transposed", "strided", "flipped"])
def test_layout_never_changes_the_bits(layout):
    x = _floats(12, (6, 6))
    t, values = in_layout(x, layout)
    for op in ("cumsum", "cumprod", "logcumsumexp", "cummax"):
        for dim in (0, 1):
            got = result_arrays(getattr(vkml, op)(t, dim))
            want = result_arrays(getattr(vkml, op)(vkml.tensor(values), dim))
            for g, w in zip(got, want, strict=True):
                assert_same_bits(g, w, f"{op} dim={dim} {layout}")


ERRORS = [
    ("cumsum_no_dim", lambda m: m.cumsum(m.ones(3)), TypeError, "dim"),
    ("cumsum_dim_range", lambda m: m.cumsum(m.ones(3), 1), IndexError, "range"),
    ("cummax_dim_range", lambda m: m.cummax(m.ones(2, 3), -3), IndexError, "range"),
    ("logcumsumexp_int", lambda m: m.logcumsumexp(m.ones(3, dtype=m.int64), 0), NotImplementedError, "int64"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_eager_and_of_torchs_type(case):
    name, fn, error, text = case
    with pytest.raises(error):
        fn(torch)
    with pytest.raises(error, match=text) as info:
        fn(vkml)
    assert "'" in str(info.value), f"{name}: the message names the op: {info.value}"
