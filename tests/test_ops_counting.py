"""Counting and combining (vkml/frontend/counting.py, combining.py): unique, unique_consecutive,
bincount, histc, diff, cross, linalg.cross, kron, block_diag, cdist.

Counts, unique values and movements equal PyTorch's exactly; arithmetic (diff, cross, kron,
cdist) to the last bit where the formula is PyTorch's, else within a few ulp. Gradients match
PyTorch's, lavapipe gives the CPU's bits, and bad arguments raise PyTorch's error types.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from optest import (
    assert_device_gives_cpu_bits,
    assert_same_bits,
    random_floats,
    random_ints,
    result_arrays,
    to_torch,
    weighted_grad,
)

import vkml

NAN, INF = float("nan"), float("inf")


def _specials():
    return np.array([3, 1, NAN, 1, -0.0, 0, 3, NAN, -INF, INF, 0, -0.0, 1], np.float32)


def _ties(seed, shape, dtype=np.float32, low=-3, high=3):
    return random_ints(shape, np.int32, seed=seed, low=low, high=high).astype(dtype)


def _rows():
    return np.array([[1, 2, 0], [0, 5, 1], [1, 2, 0], [0, 5, 1], [0, 5, 1], [-1, 9, 9]], np.int64)


# (id, input, function of (module, tensor), exact, differentiable)
CASES = [
    ("unique", _specials, lambda m, x: m.unique(x), True, False),
    ("unique_all", _specials, lambda m, x: m.unique(x, return_inverse=True, return_counts=True), True, False),
    ("unique_inverse_2d", lambda: _ties(1, (4, 5), np.int64), lambda m, x: x.unique(return_inverse=True), True, False),
    ("unique_counts", lambda: _ties(2, (30,), np.int32), lambda m, x: m.unique(x, return_counts=True), True, False),
    ("unique_unsorted", lambda: _ties(3, (9,)), lambda m, x: m.unique(x, sorted=False), True, False),
    ("unique_bool", lambda: _ties(4, (7,)) > 0, lambda m, x: m.unique(x, return_counts=True), True, False),
    ("unique_0d", lambda: np.array(2.0, np.float32), lambda m, x: m.unique(x, return_inverse=True), True, False),
    ("unique_empty", lambda: np.zeros(0, np.float32), lambda m, x: m.unique(x, return_counts=True), True, False),
    (
        "unique_dim0",
        _rows,
        lambda m, x: m.unique(x, dim=0, return_inverse=True, return_counts=True),
        True,
        False,
    ),
    ("unique_dim1", lambda: _rows().T.copy(), lambda m, x: m.unique(x, dim=1, return_inverse=True), True, False),
    ("unique_consecutive", _specials, lambda m, x: m.unique_consecutive(x), True, False),
    (
        "unique_consecutive_all",
        lambda: _ties(5, (3, 6), low=0, high=2),
        lambda m, x: x.unique_consecutive(return_inverse=True, return_counts=True),
        True,
        False,
    ),
    (
        "unique_consecutive_dim0",
        _rows,
        lambda m, x: m.unique_consecutive(x, return_counts=True, dim=0),
        True,
        False,
    ),
    ("bincount", lambda: _ties(6, (40,), np.int64, 0, 9), lambda m, x: m.bincount(x), True, False),
    ("bincount_minlength", lambda: _ties(7, (5,), np.int32, 0, 3), lambda m, x: x.bincount(minlength=7), True, False),
    ("bincount_empty", lambda: np.zeros(0, np.int64), lambda m, x: m.bincount(x), True, False),
    (
        "bincount_weights",
        lambda: _ties(8, (50,), np.int64, 0, 6),
        lambda m, x: m.bincount(x, weights=_like(m, x, random_floats(50, seed=9))),
        True,
        False,
    ),
    (  # weights other than float32 give float64 sums, as PyTorch's
        "bincount_weights_float64",
        lambda: _ties(8, (50,), np.int64, 0, 6),
        lambda m, x: m.bincount(x, weights=_like(m, x, random_floats(50, seed=9).astype(np.float64) / 3)),
        True,
        False,
    ),
    (
        "bincount_weights_int",
        lambda: _ties(8, (9,), np.int64, 0, 6),
        lambda m, x: m.bincount(x, weights=_like(m, x, np.arange(9, dtype=np.int32))),
        True,
        False,
    ),
    ("histc", lambda: random_floats(200, seed=10), lambda m, x: m.histc(x, bins=7, min=-4, max=5), True, False),
    ("histc_data_range", lambda: random_floats((4, 30), seed=11), lambda m, x: m.histc(x, bins=13), True, False),
    ("histc_specials", _specials, lambda m, x: x.histc(bins=4, min=-1, max=3), True, False),
    ("histc_one_value", lambda: np.full(5, 3.0, np.float32), lambda m, x: m.histc(x, bins=4), True, False),
    ("histc_empty", lambda: np.zeros(0, np.float32), lambda m, x: m.histc(x, bins=3), True, False),
    ("histc_float16", lambda: random_floats(60, seed=12).astype(np.float16), lambda m, x: m.histc(x, 9), True, False),
    ("diff", lambda: random_floats((3, 7), seed=13), lambda m, x: m.diff(x), True, True),
    ("diff_n2_dim0", lambda: random_floats((6, 4), seed=14), lambda m, x: x.diff(2, 0), True, True),
    ("diff_n_past_length", lambda: random_floats((2, 3), seed=15), lambda m, x: m.diff(x, 5), True, False),
    ("diff_n0", lambda: random_floats((2, 3), seed=15), lambda m, x: m.diff(x, 0), True, False),
    ("diff_bool", lambda: _ties(16, (9,)) > 0, lambda m, x: m.diff(x), True, False),
    ("diff_int_specials", _specials, lambda m, x: m.diff(x), True, False),
    (
        "diff_prepend_append",
        lambda: random_floats((2, 4), seed=17),
        lambda m, x: m.diff(x, 1, -1, prepend=_like(m, x, np.ones((2, 2), np.float32)), append=x[:, :1] * 2),
        True,
        True,
    ),
    (
        "diff_int_prepend_float",
        lambda: _ties(18, (5,), np.int64),
        lambda m, x: m.diff(x, prepend=_like(m, x, np.array([0.5], np.float32))),
        True,
        False,
    ),
    ("cross_dim", lambda: random_floats((4, 3), seed=19), lambda m, x: m.cross(x, x.flip(0), dim=1), False, True),
    (
        "linalg_cross_broadcast",
        lambda: random_floats((2, 1, 3), seed=20),
        lambda m, x: m.linalg.cross(x, _like(m, x, random_floats((1, 4, 3), seed=21))),
        False,
        True,
    ),
    ("cross_int", lambda: _ties(22, (3, 5), np.int64), lambda m, x: x.cross(x.flip(1) * 2, dim=0), True, False),
    ("kron", lambda: random_floats((2, 3), seed=23), lambda m, x: m.kron(x, x[:, :2] + 1), True, True),
    (
        "kron_ranks",
        lambda: random_floats((3,), seed=24),
        lambda m, x: x.kron(_like(m, x, np.ones((2, 2, 1), np.float32))),
        True,
        True,
    ),
    ("kron_0d", lambda: np.array(2.0, np.float32), lambda m, x: m.kron(x, x.reshape(1, 1) + 1), True, False),
    (
        "block_diag",
        lambda: random_floats((2, 3), seed=25),
        lambda m, x: m.block_diag(x, x[0, 0], x[1], _like(m, x, np.ones((0, 2), np.float32))),
        True,
        True,
    ),
    (
        "block_diag_promote",
        lambda: _ties(26, (2, 2), np.int64),
        lambda m, x: m.block_diag(x, _like(m, x, np.array([0.5, -0.0], np.float32))),
        True,
        False,
    ),
    ("cdist", lambda: random_floats((5, 4), seed=27), lambda m, x: m.cdist(x, x[:3] * 0.5), False, True),
    ("cdist_p1", lambda: random_floats((5, 4), seed=28), lambda m, x: m.cdist(x, x[1:], p=1), False, True),
    ("cdist_inf", lambda: random_floats((2, 5, 4), seed=29), lambda m, x: m.cdist(x, x[:, :2], p=INF), True, False),
    ("cdist_p0", lambda: _ties(30, (4, 6)), lambda m, x: m.cdist(x, x, p=0), True, False),
    ("cdist_p3", lambda: random_floats((3, 4), seed=31), lambda m, x: m.cdist(x, x + 1, p=3.0), False, True),
    ("cdist_batch", lambda: random_floats((2, 3, 4), seed=32), lambda m, x: m.cdist(x, x[:1, :2]), False, True),
    ("cdist_empty", lambda: np.zeros((0, 3), np.float32), lambda m, x: m.cdist(x, x), True, False),
    ("kron_empty", lambda: np.zeros((2, 0), np.float32), lambda m, x: m.kron(x, x[:1]), True, False),
    ("cdist_self_zero_grad", lambda: random_floats((3, 2), seed=33), lambda m, x: m.cdist(x, x), False, True),
]
IDS = [c[0] for c in CASES]


def _like(m, x, array):
    """``array`` as a tensor of ``m`` on ``x``'s device."""
    return to_torch(np.asarray(array)) if m is torch else vkml.tensor(np.asarray(array), device=x.device)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_results_match_torch(case):
    name, make, fn, exact, _ = case
    x = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = fn(torch, to_torch(x)), fn(vkml, vkml.tensor(x))
    w, g = result_arrays(want), result_arrays(got)
    assert len(g) == len(w), name
    for a, b in zip(g, w, strict=True):
        if exact or a.dtype.kind != "f":
            assert_same_bits(a, b.astype(a.dtype) if name == "bincount_weights" else b, name)
        else:
            assert a.dtype == b.dtype and a.shape == b.shape, name
            np.testing.assert_allclose(a, b, rtol=4e-6, atol=1e-6, err_msg=name)


GRAD_CASES = [c for c in CASES if c[4]]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(case):
    name, make, fn, _, _ = case
    x = make()
    got, want = weighted_grad(vkml, fn, x, seed=5), weighted_grad(torch, fn, x, seed=5)
    assert not np.isnan(got).any(), name
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vulkan_gives_the_cpu_bits(case, gpu):
    name, make, fn, _, differentiable = case
    checked_grads = ("diff_prepend_append", "cdist", "cdist_self_zero_grad", "block_diag")
    grad_seed = 6 if differentiable and name in checked_grads else None
    assert_device_gives_cpu_bits(fn, make(), gpu, name, grad_seed)


def test_cross_without_dim_warns_and_takes_the_first_dim_of_size_3():
    x = random_floats((3, 3), seed=40)
    with pytest.warns(UserWarning, match="dim"):
        got = vkml.cross(vkml.tensor(x), vkml.tensor(x[::-1].copy()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.cross(to_torch(x), to_torch(x[::-1].copy()))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=4e-6, atol=1e-6)


def test_histc_matches_torch_on_many_random_ranges():
    g = np.random.default_rng(41)
    for trial in range(6):
        x = (g.standard_normal(300) * 10 ** g.uniform(-3, 3)).astype(np.float32)
        lo, hi = sorted(g.uniform(-2, 2, 2) * np.abs(x).max())
        bins = int(g.integers(1, 60))
        want = torch.histc(to_torch(x), bins=bins, min=float(lo), max=float(hi)).numpy()
        got = vkml.histc(vkml.tensor(x), bins=bins, min=float(lo), max=float(hi)).numpy()
        assert_same_bits(got, want, f"histc trial {trial}")


ERRORS = [
    ("histc_int", lambda m: m.histc(m.ones(3, dtype=m.int64)), NotImplementedError, "int64"),
    ("histc_bins", lambda m: m.histc(m.ones(3), bins=0), RuntimeError, "bins"),
    ("histc_min_max", lambda m: m.histc(m.ones(3), bins=3, min=3, max=1), RuntimeError, "larger"),
    ("histc_not_finite", lambda m: m.histc(m.tensor([1.0, INF])), RuntimeError, "finite"),
    ("histc_nan_range", lambda m: m.histc(m.tensor([1.0, NAN])), RuntimeError, "finite"),
    ("bincount_float", lambda m: m.bincount(m.ones(3)), NotImplementedError, "float32"),
    ("bincount_negative", lambda m: m.bincount(m.tensor([-1, 2])), RuntimeError, "non-negative"),
    ("bincount_2d", lambda m: m.bincount(m.tensor([[1, 2]])), RuntimeError, "1-d"),
    ("bincount_minlength", lambda m: m.bincount(m.tensor([1, 2]), minlength=-1), RuntimeError, "minlength"),
    (
        "bincount_weights_length",
        lambda m: m.bincount(m.tensor([1, 2]), weights=m.ones(3)),
        RuntimeError,
        "same length",
    ),
    ("diff_0d", lambda m: m.diff(m.tensor(1.0)), RuntimeError, "one-dimensional"),
    ("diff_negative_n", lambda m: m.diff(m.ones(3), n=-1), RuntimeError, "non-negative"),
    ("diff_prepend_dims", lambda m: m.diff(m.ones(1, 2), prepend=m.ones(2)), RuntimeError, "same dimension"),
    ("cross_no_size_3", lambda m: m.cross(m.ones(2, 2), m.ones(2, 2)), RuntimeError, "size 3"),
    ("linalg_cross_size", lambda m: m.linalg.cross(m.ones(3, 2), m.ones(3, 2)), RuntimeError, "length 3"),
    (
        "linalg_cross_dtypes",
        lambda m: m.linalg.cross(m.ones(3, dtype=m.int64), m.ones(3)),
        RuntimeError,
        "same dtype",
    ),
    ("cross_ndims", lambda m: m.cross(m.ones(2, 1, 3), m.ones(4, 3), dim=-1), RuntimeError, "number of dim"),
    ("unique_zero_sized", lambda m: m.unique(m.ones(3, 0), dim=0), RuntimeError, "0 sized"),
    ("block_diag_3d", lambda m: m.block_diag(m.ones(2, 2, 2)), RuntimeError, "2 or fewer"),
    ("cdist_1d", lambda m: m.cdist(m.ones(3), m.ones(4, 3)), RuntimeError, "2D"),
    ("cdist_columns", lambda m: m.cdist(m.ones(2, 3), m.ones(4, 2)), RuntimeError, "columns"),
    ("cdist_negative_p", lambda m: m.cdist(m.ones(2, 3), m.ones(4, 3), p=-1), RuntimeError, "non-negative"),
    ("cdist_int", lambda m: m.cdist(m.ones(2, 3, dtype=m.int64), m.ones(4, 3, dtype=m.int64)), RuntimeError, "float"),
    ("unique_dim", lambda m: m.unique(m.ones(2, 3), dim=2), IndexError, "range"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_eager_and_of_torchs_type(case):
    name, fn, error, text = case
    with pytest.raises(error):
        fn(torch)
    with pytest.raises(error, match=text) as info:
        fn(vkml)
    # vkml's 'op' or PyTorch's own naming of it (quantile() ..., torch.block_diag: ...)
    named = "'" in str(info.value) or re.search(r"\w+\(\)|torch\.\w+", str(info.value))
    assert named, f"{name}: the message names the op: {info.value}"


def test_block_diag_of_nothing_is_an_empty_row():
    assert vkml.block_diag().shape == torch.block_diag().shape == (1, 0)
