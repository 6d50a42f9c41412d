"""Order statistics (vkml/frontend/selection.py): kthvalue, median, nanmedian, mode, quantile, nanquantile.

Values equal PyTorch's exactly (selection moves values, never rounds them; quantile's lerp is
PyTorch's formula); indices equal PyTorch's where the selected value occurs once, and name an
element holding the value otherwise (PyTorch's quickselect names any of them). Gradients match
PyTorch's, and lavapipe gives the CPU's bits.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from optest import (
    assert_device_gives_cpu_bits,
    assert_same_bits,
    from_torch,
    random_floats,
    random_ints,
    result_arrays,
    to_torch,
    weighted_grad,
)

import vkml

NAN, INF = float("nan"), float("inf")


def _floats(seed=0, shape=(3, 9)):
    return random_floats(shape, seed=seed)


def _ties_nans():
    return np.array(
        [
            [3, 1, 2, 1, 3, NAN, 0],
            [2, 2, 5, 0, 2, 1, -0.0],
            [NAN, NAN, NAN, NAN, NAN, NAN, NAN],
            [-INF, 4, INF, 4, 0, -0.0, 0],
        ],
        np.float32,
    )


# (id, input, function of (module, tensor), differentiable)
CASES = [
    ("kthvalue", _floats, lambda m, x: m.kthvalue(x, 3, 1), True),
    ("kthvalue_dim0_keepdim", lambda: _floats(1, (7, 3)), lambda m, x: x.kthvalue(7, 0, keepdim=True), True),
    ("kthvalue_ties_nans", _ties_nans, lambda m, x: m.kthvalue(x, 2), False),
    ("kthvalue_last_nan", _ties_nans, lambda m, x: m.kthvalue(x, 7), False),
    (
        "kthvalue_int",
        lambda: random_ints((3, 8), np.int32, seed=2, low=-5, high=5),
        lambda m, x: m.kthvalue(x, 4),
        False,
    ),
    ("median_all", _floats, lambda m, x: m.median(x), True),
    ("median_dim", _floats, lambda m, x: m.median(x, 1), True),
    ("median_even", lambda: _floats(3, (4, 8)), lambda m, x: x.median(0, keepdim=True), True),
    ("median_3d_first_dim", lambda: _floats(12, (5, 2, 3)), lambda m, x: m.median(x, 0), True),
    ("kthvalue_3d_keepdim", lambda: _floats(13, (2, 5, 3)), lambda m, x: m.kthvalue(x, 2, -2, keepdim=True), True),
    ("mode_3d", lambda: random_ints((6, 2, 3), np.int32, seed=14, low=0, high=3), lambda m, x: m.mode(x, 0), False),
    ("quantile_3d", lambda: _floats(15, (4, 2, 3)), lambda m, x: m.quantile(x, 0.3, 0, keepdim=True), True),
    ("median_ties_nans", _ties_nans, lambda m, x: m.median(x, 1), False),
    ("median_all_nan", _ties_nans, lambda m, x: m.median(x), False),
    ("median_int", lambda: random_ints((5, 6), np.int64, seed=4), lambda m, x: m.median(x, 0), False),
    ("median_empty", lambda: np.zeros(0, np.float32), lambda m, x: m.median(x), False),
    ("nanmedian_dim", _ties_nans, lambda m, x: m.nanmedian(x, 1), False),
    ("nanmedian_all", _ties_nans, lambda m, x: m.nanmedian(x), False),
    ("nanmedian_grad", _floats, lambda m, x: x.nanmedian(1), True),
    (
        "mode",
        lambda: random_ints((4, 12), np.int32, seed=5, low=0, high=4).astype(np.float32),
        lambda m, x: m.mode(x, 1),
        True,
    ),
    (
        "mode_bool",
        lambda: random_ints((3, 7), np.int32, seed=9, low=0, high=2).astype(bool),
        lambda m, x: m.mode(x, 1),
        False,
    ),
    ("mode_int_dim0", lambda: random_ints((9, 3), np.int64, seed=6, low=-2, high=2), lambda m, x: x.mode(0), False),
    ("quantile", _floats, lambda m, x: m.quantile(x, 0.3), True),
    ("quantile_dim", _floats, lambda m, x: m.quantile(x, 0.75, dim=1), True),
    (
        "quantile_q_tensor",
        _floats,
        lambda m, x: m.quantile(x, m.tensor([0.0, 0.1, 0.5, 1.0]), dim=0, keepdim=True),
        True,
    ),
    ("quantile_nans", _ties_nans, lambda m, x: m.quantile(x, 0.4, dim=1), False),
    ("nanquantile", _ties_nans, lambda m, x: m.nanquantile(x, 0.4, dim=1), False),
    ("nanquantile_keepdim_all", _floats, lambda m, x: x.nanquantile(0.9, keepdim=True), True),
    ("quantile_lower", _floats, lambda m, x: m.quantile(x, 0.37, 1, interpolation="lower"), False),
    ("quantile_higher", _floats, lambda m, x: m.quantile(x, 0.37, 1, interpolation="higher"), False),
    ("quantile_midpoint", _floats, lambda m, x: m.quantile(x, 0.37, 1, interpolation="midpoint"), True),
    (
        "quantile_nearest",
        lambda: _floats(7, (3, 5)),
        lambda m, x: m.quantile(x, m.tensor([0.125, 0.375, 0.5]), 1, interpolation="nearest"),
        False,
    ),
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
    w, g = result_arrays(want), result_arrays(got)
    assert [a.dtype for a in g] == [a.dtype for a in w] and [a.shape for a in g] == [a.shape for a in w]
    if case[0].startswith(("quantile", "nanquantile")) and "lower" not in case[0] and "higher" not in case[0]:
        # PyTorch's vectorised lerp fuses its multiply-add; vkml rounds the product: 1 ulp at most
        np.testing.assert_allclose(g[0], w[0], rtol=2.5e-7, atol=1e-30)
    else:  # selection moves values: the same bits
        assert_same_bits(g[0], w[0], case[0])
    if len(g) == 2:  # indices: PyTorch's where the value is unique, else one holding the value
        values, indices = g
        moved = np.moveaxis(x, _dim_of(case[0], x), -1)
        flat_values = values.reshape(moved.shape[:-1])
        flat_indices = indices.reshape(moved.shape[:-1])
        picked = np.take_along_axis(moved, flat_indices[..., None], -1)[..., 0]
        assert_same_bits(picked, flat_values, case[0] + " indices name the values")
        occurrences = ((moved == flat_values[..., None]) | (np.isnan(moved) & np.isnan(flat_values)[..., None])).sum(-1)
        unique = occurrences == 1
        np.testing.assert_array_equal(flat_indices[unique], w[1].reshape(moved.shape[:-1])[unique])


def _dim_of(name: str, x: np.ndarray) -> int:
    dims = {"kthvalue_dim0_keepdim": 0, "median_even": 0, "median_int": 0, "mode_int_dim0": 0, "median_3d_first_dim": 0}
    dims.update({"kthvalue_3d_keepdim": 1, "mode_3d": 0})
    return dims.get(name, x.ndim - 1)


def _grad_of(lib, fn, x_np, device=None):
    return weighted_grad(lib, fn, x_np, device, seed=55)


GRAD_CASES = [c for c in CASES if c[3]]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(case):
    _, make, fn, _ = case
    x = make()
    np.testing.assert_allclose(_grad_of(vkml, fn, x), _grad_of(torch, fn, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vulkan_gives_the_cpu_bits(case, gpu):
    name, make, fn, differentiable = case
    grad_seed = 55 if differentiable and name in ("kthvalue", "median_dim", "mode", "quantile_dim") else None
    assert_device_gives_cpu_bits(fn, make(), gpu, name, grad_seed)


ERRORS = [
    ("kthvalue_k_too_big", lambda m: m.kthvalue(m.ones(2, 3), 4), RuntimeError, "out of range"),
    ("kthvalue_k_zero", lambda m: m.kthvalue(m.ones(3), 0), RuntimeError, "out of range"),
    ("median_bool", lambda m: m.median(m.ones(3, dtype=m.bool), 0), NotImplementedError, "bool"),
    ("kthvalue_empty_dim", lambda m: m.kthvalue(m.ones(0, 2), 1, 0), IndexError, "non-zero size"),
    ("median_empty_dim", lambda m: m.median(m.ones(2, 0), 1), IndexError, "non-zero size"),
    ("quantile_q_range", lambda m: m.quantile(m.ones(3), 1.5), RuntimeError, "range"),
    ("quantile_int", lambda m: m.quantile(m.ones(3, dtype=m.int32), 0.5), RuntimeError, "float"),
    (
        "quantile_interpolation",
        lambda m: m.quantile(m.ones(3), 0.5, interpolation="cubic"),
        RuntimeError,
        "interpolation",
    ),
    ("mode_dim_range", lambda m: m.mode(m.ones(3), 2), IndexError, "range"),
    ("quantile_float16", lambda m: m.quantile(m.ones(3, dtype=m.float16), 0.5), RuntimeError, "float"),
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


@pytest.mark.parametrize("row", [[1.0, NAN, 2.0], [NAN, NAN, 1.0], [NAN], [2.0, 2.0, NAN, 1.0, NAN]])
def test_mode_counts_nans_as_one_value_sorting_last(row):
    """Where PyTorch's unstable sort gives a definite answer, vkml's agrees (a lone NaN was index -1)."""
    x = np.array(row, np.float32)
    got, want = vkml.mode(vkml.tensor(x)), torch.mode(to_torch(x))
    assert_same_bits(got.values.numpy(), from_torch(want.values), f"mode {row}")
    assert np.isnan(x[got.indices.item()]) == np.isnan(got.values.item())
    if not np.isnan(got.values.item()):
        assert x[got.indices.item()] == got.values.item()


def test_long_rows_select_through_the_sort():
    """Ranks and counts come from the stable sort (O(n log^2 n)), not n^2 comparisons: 20000 elements are quick."""
    x = random_floats(20000, seed=80).round(2)
    got, want = vkml.median(vkml.tensor(x), 0), torch.median(to_torch(x), 0)
    assert_same_bits(got.values.numpy(), from_torch(want.values), "median")
    assert x[got.indices.item()] == got.values.item()
    got_k = vkml.kthvalue(vkml.tensor(x), 12345)
    assert_same_bits(got_k.values.numpy(), from_torch(torch.kthvalue(to_torch(x), 12345).values), "kthvalue")
    ints = random_ints(20000, np.int64, seed=81, low=0, high=500)
    got_m, want_m = vkml.mode(vkml.tensor(ints)), torch.mode(to_torch(ints))
    assert got_m.values.item() == want_m.values.item()  # PyTorch's index names any of them at this length
    assert got_m.indices.item() == np.flatnonzero(ints == want_m.values.item())[-1]  # vkml: the last, as documented
