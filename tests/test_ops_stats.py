"""Statistics, predicates and norms (vkml/frontend/statistics.py) against PyTorch, CPU and lavapipe.

Each case is written once for both libraries (``m`` is ``vkml`` or ``torch``): values, result
dtypes and shapes are compared with PyTorch's (closeness for floats, whose summation orders
differ; equality for integers and bools), gradients likewise, and the Vulkan device must give
the CPU's bits for values and gradients.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from optest import assert_same_bits, from_torch, in_layout, random_floats, random_ints, result_arrays, to_torch

import vkml

NAN, INF = float("nan"), float("inf")


def _floats(seed=0, shape=(4, 6)):
    return random_floats(shape, seed=seed)


def _with_specials():
    x = _floats(1)
    x[0, 2], x[1, :] = NAN, NAN
    x[2, 3], x[3, 0] = 0.0, -0.0
    return x


def _some_nans():
    """NaNs, but no row or column of NaN only (whose nanmean gradient diverges: docs/ops/nanmean.md)."""
    x = _floats(15)
    x[0, 2], x[2, 5], x[3, 0] = NAN, NAN, NAN
    return x


def _with_zeros():
    x = _floats(2)
    x[0, :], x[1, 1], x[2, ::2] = 0.0, -0.0, 0.0
    x[3, 4] = NAN
    return x


# (id, input, function of (module, tensor), differentiable)
CASES = [
    ("var", _floats, lambda m, x: m.var(x), True),
    ("var_dim", _floats, lambda m, x: m.var(x, 1), True),
    ("var_dim_keepdim", _floats, lambda m, x: m.var(x, 0, keepdim=True), True),
    ("var_tuple_correction0", _floats, lambda m, x: m.var(x, (0, 1), correction=0), True),
    ("var_correction_float", _floats, lambda m, x: m.var(x, -1, correction=0.5), True),
    ("var_unbiased_positional", _floats, lambda m, x: m.var(x, 1, False), True),
    ("var_unbiased_only", _floats, lambda m, x: m.var(x, False), True),
    ("var_unbiased_kw", _floats, lambda m, x: m.var(x, dim=0, unbiased=True, keepdim=True), True),
    ("var_axis", _floats, lambda m, x: m.var(x, axis=1), True),
    ("var_correction_ge_n", _floats, lambda m, x: m.var(x, 1, correction=6), False),
    ("var_method", _floats, lambda m, x: x.var(1, correction=2), True),
    ("var_float16", lambda: _floats(3).astype(np.float16), lambda m, x: m.var(x, 1), False),
    ("var_nan", _with_specials, lambda m, x: m.var(x, 1), False),
    ("std", _floats, lambda m, x: m.std(x), True),
    ("std_dim", _floats, lambda m, x: m.std(x, 0, unbiased=False), True),
    ("std_method", _floats, lambda m, x: x.std(dim=(0, 1), keepdim=True), True),
    ("var_mean", _floats, lambda m, x: m.var_mean(x, 1), True),
    ("var_mean_keepdim", _floats, lambda m, x: m.var_mean(x, 0, keepdim=True, correction=0), True),
    ("std_mean", _floats, lambda m, x: m.std_mean(x, (0, 1)), True),
    ("std_mean_float16", lambda: _floats(4).astype(np.float16), lambda m, x: m.std_mean(x, 0), False),
    ("all", _with_zeros, lambda m, x: m.all(x), False),
    ("all_dim", _with_zeros, lambda m, x: m.all(x, 1), False),
    ("all_tuple_keepdim", _with_zeros, lambda m, x: m.all(x, (0, 1), keepdim=True), False),
    ("all_int", lambda: random_ints((4, 6), np.int32, seed=5, low=-2, high=3), lambda m, x: x.all(0), False),
    (
        "all_bool",
        lambda: random_ints((4, 6), np.int32, seed=6, low=0, high=2).astype(bool),
        lambda m, x: x.all(1),
        False,
    ),
    ("all_empty", lambda: np.zeros((0, 3), np.float32), lambda m, x: m.all(x, 0), False),
    ("any", _with_zeros, lambda m, x: m.any(x), False),
    ("any_dim", _with_zeros, lambda m, x: m.any(x, 1, keepdim=True), False),
    ("any_int", lambda: random_ints((4, 6), np.int64, seed=7, low=-1, high=2), lambda m, x: x.any(dim=1), False),
    ("any_empty", lambda: np.zeros((0, 3), np.float32), lambda m, x: m.any(x, 0), False),
    ("count_nonzero", _with_zeros, lambda m, x: m.count_nonzero(x), False),
    ("count_nonzero_dim", _with_zeros, lambda m, x: m.count_nonzero(x, 0), False),
    ("count_nonzero_tuple", _with_zeros, lambda m, x: x.count_nonzero((0, 1)), False),
    ("nansum", _with_specials, lambda m, x: m.nansum(x), True),
    ("nansum_dim", _with_specials, lambda m, x: m.nansum(x, 1, keepdim=True), True),
    ("nansum_int", lambda: random_ints((4, 6), np.int32, seed=8), lambda m, x: m.nansum(x, 0), False),
    ("nansum_dtype", _with_specials, lambda m, x: x.nansum(1, dtype=m.float16), False),
    ("nanmean", _with_specials, lambda m, x: m.nanmean(x), True),
    ("nanmean_dim", _some_nans, lambda m, x: m.nanmean(x, 1), True),
    ("nanmean_all_nan_row", _with_specials, lambda m, x: m.nanmean(x, 1), False),
    ("nanmean_method", _some_nans, lambda m, x: x.nanmean(0, keepdim=True), True),
    ("aminmax", _floats, lambda m, x: m.aminmax(x), False),
    ("aminmax_dim", _floats, lambda m, x: m.aminmax(x, dim=1), True),
    (
        "aminmax_keepdim_int",
        lambda: random_ints((4, 6), np.int32, seed=9),
        lambda m, x: x.aminmax(dim=0, keepdim=True),
        False,
    ),
    (
        "aminmax_bool",
        lambda: random_ints((4, 6), np.int32, seed=16, low=0, high=2).astype(bool),
        lambda m, x: m.aminmax(x, dim=1),
        False,
    ),
    ("max_dim", _floats, lambda m, x: m.max(x, 1), True),
    ("max_dim_keepdim", _floats, lambda m, x: x.max(dim=0, keepdim=True), True),
    ("min_dim", _floats, lambda m, x: m.min(x, -1), True),
    ("max_unpacked_values", _floats, lambda m, x: m.max(x, 1)[0], True),
    ("min_indices_field", _floats, lambda m, x: m.min(x, 0).indices, False),
    ("vector_norm", _floats, lambda m, x: m.linalg.vector_norm(x), True),
    ("vector_norm_1", _floats, lambda m, x: m.linalg.vector_norm(x, 1, 1), True),
    ("vector_norm_0", _with_zeros, lambda m, x: m.linalg.vector_norm(x, 0, 1), False),
    ("vector_norm_inf", _floats, lambda m, x: m.linalg.vector_norm(x, INF, 0, keepdim=True), True),
    ("vector_norm_neg_inf", _floats, lambda m, x: m.linalg.vector_norm(x, -INF), True),
    ("vector_norm_3", _floats, lambda m, x: m.linalg.vector_norm(x, 3, (0, 1)), True),
    ("vector_norm_0_5", _floats, lambda m, x: m.linalg.vector_norm(x, 0.5, 1), True),
    ("vector_norm_neg_1", _floats, lambda m, x: m.linalg.vector_norm(x, -1, 1), True),
    (
        "vector_norm_float16_dtype",
        lambda: _floats(5).astype(np.float16),
        lambda m, x: m.linalg.vector_norm(x, dtype=m.float32),
        False,
    ),
    ("norm", _floats, lambda m, x: m.norm(x), True),
    ("norm_p_dim", _floats, lambda m, x: m.norm(x, 3, 1), True),
    ("norm_fro_dim", _floats, lambda m, x: x.norm("fro", dim=(0, 1), keepdim=True), True),
    ("linalg_norm", _floats, lambda m, x: m.linalg.norm(x), True),
    ("linalg_norm_fro", _floats, lambda m, x: m.linalg.norm(x, "fro"), True),
    ("linalg_norm_matrix_1", _floats, lambda m, x: m.linalg.norm(x, 1), True),
    ("linalg_norm_matrix_inf", _floats, lambda m, x: m.linalg.norm(x, INF), True),
    ("linalg_norm_matrix_neg_1", _floats, lambda m, x: m.linalg.norm(x, -1, keepdim=True), True),
    ("linalg_norm_matrix_neg_inf", _floats, lambda m, x: m.linalg.norm(x, -INF), True),
    ("linalg_norm_vector_dim", _floats, lambda m, x: m.linalg.norm(x, 3, dim=1), True),
    ("linalg_norm_batched", lambda: _floats(6, (2, 3, 4)), lambda m, x: m.linalg.norm(x, 1, dim=(2, 1)), True),
    ("matrix_norm", lambda: _floats(7, (2, 3, 4)), lambda m, x: m.linalg.matrix_norm(x), True),
    ("logsumexp_tuple", _floats, lambda m, x: m.logsumexp(x, (0, 1)), True),
    ("logsumexp_axis", _floats, lambda m, x: m.logsumexp(x, axis=1, keepdim=True), True),
    ("mean_dtype", lambda: _floats(8).astype(np.float16), lambda m, x: m.mean(x, 1, dtype=m.float32), False),
    ("mean_int_dtype", lambda: random_ints((4, 6), np.int32, seed=10), lambda m, x: x.mean(dtype=m.float32), False),
    ("mean_axis", _floats, lambda m, x: m.mean(x, axis=0), True),
    ("sum_dtype_int", _floats, lambda m, x: m.sum(x, 1, dtype=m.int32), False),
    ("sum_dtype_float16", _floats, lambda m, x: x.sum(dtype=m.float16), False),
    (
        "sum_int_dtype_float",
        lambda: random_ints((4, 6), np.int32, seed=11),
        lambda m, x: m.sum(x, 0, dtype=m.float32),
        False,
    ),
    ("sum_axis", _floats, lambda m, x: x.sum(axis=1), True),
    (
        "prod_dtype",
        lambda: random_ints((4, 6), np.int32, seed=12, low=-3, high=4),
        lambda m, x: m.prod(x, 1, dtype=m.int64),
        False,
    ),
    ("prod_axis_keepdim", _floats, lambda m, x: m.prod(x, axis=0, keepdim=True), True),
    ("amax_axis", _floats, lambda m, x: m.amax(x, axis=1), True),
]
IDS = [c[0] for c in CASES]
RETURN_TYPES = {"aminmax": ("min", "max"), "max": ("values", "indices"), "min": ("values", "indices")}


def _torch_dtype_name(a: np.ndarray) -> str:
    return a.dtype.name


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch(case):
    _, make, fn, _ = case
    x = make()
    with np.errstate(all="ignore"):
        want, got = fn(torch, to_torch(x)), fn(vkml, vkml.tensor(x))
    assert type(want).__name__ == type(got).__name__ or not isinstance(want, tuple), (type(want), type(got))
    if type(got).__name__ in RETURN_TYPES and isinstance(got, tuple):
        assert got._fields == RETURN_TYPES[type(got).__name__]
        for field in got._fields:  # the named fields are the tuple's items, as PyTorch's
            assert getattr(got, field) is got[got._fields.index(field)]
    for w, g in zip(result_arrays(want), result_arrays(got), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if w.dtype.kind == "f":
            rtol = 2e-3 if w.dtype == np.float16 else 2e-5
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(g, w)


def _grad_of(m, fn, x_np, w_seed=99):
    """d(sum of w * the float results)/dx, with fixed weights w (values first for a (values, indices) pair)."""
    if m is torch:
        x = to_torch(x_np).requires_grad_(True)
    else:
        x = vkml.tensor(x_np, device=m, requires_grad=True)
    out = fn(torch if m is torch else vkml, x)
    parts = [p for p in (out if isinstance(out, tuple) else (out,)) if p.dtype in (torch.float32, vkml.float32)]
    total = 0
    for k, p in enumerate(parts):
        w = random_floats(tuple(p.shape), seed=w_seed + k)
        w = to_torch(w) if m is torch else vkml.tensor(w, device=m)
        total = total + (p * w).sum()
    total.backward()
    return from_torch(x.grad) if m is torch else x.grad.numpy()


GRAD_CASES = [c for c in CASES if c[3]]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(case):
    name, make, fn, _ = case
    x = make()
    torch_fn = fn
    if name == "aminmax_dim":  # (amin, amax): the same gradient, which PyTorch's aminmax lacks before 2.13
        torch_fn = lambda m, x: (torch.amin(x, dim=1), torch.amax(x, dim=1))  # noqa: E731
    want, got = _grad_of(torch, torch_fn, x), _grad_of(vkml.device("cpu"), fn, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# Gradients checked on lavapipe too: one case of each op and ord (the others differ only in how
# the arguments are spelled, which the CPU tests cover; this keeps the file under its time budget).
VULKAN_GRADIENTS = {
    "var_dim",
    "std_dim",
    "var_mean",
    "std_mean",
    "nansum_dim",
    "nanmean_dim",
    "aminmax_dim",
    "max_dim",
    "vector_norm",
    "vector_norm_1",
    "vector_norm_inf",
    "vector_norm_0_5",
    "linalg_norm_matrix_1",
    "logsumexp_tuple",
    "prod_axis_keepdim",
}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vulkan_gives_the_cpu_bits(case, gpu):
    _, make, fn, differentiable = case
    x = make()
    cpu = result_arrays(fn(vkml, vkml.tensor(x)))
    dev = result_arrays(fn(vkml, vkml.tensor(x, device=gpu)))
    for c, d in zip(cpu, dev, strict=True):
        assert_same_bits(d, c, case[0])
    if differentiable and case[0] in VULKAN_GRADIENTS:
        assert_same_bits(_grad_of(gpu, fn, x), _grad_of(vkml.device("cpu"), fn, x), case[0] + " gradient")


@pytest.mark.parametrize("layout", ["transposed", "flipped"])
def test_layout_never_changes_the_bits(layout):
    x = _floats(13)
    t, values = in_layout(x, layout)
    for fn in (
        lambda m, x: m.var(x, 1),
        lambda m, x: m.std_mean(x, 0),
        lambda m, x: m.linalg.vector_norm(x, 3, 1),
        lambda m, x: m.nanmean(x, 1),
    ):
        for a, b in zip(result_arrays(fn(vkml, t)), result_arrays(fn(vkml, vkml.tensor(values))), strict=True):
            assert_same_bits(a, b, layout)


def test_variance_is_the_stated_two_pass_order():
    """var's bits are those of its stated order: float32 mean by the tree, deviations, tree sum of squares."""
    x = _floats(14, (3, 37))
    t = vkml.tensor(x)
    m = vkml.mean(t, 1, keepdim=True)
    d = t - m
    want = (vkml.sum(d * d, 1) / 36.0).numpy()
    assert_same_bits(vkml.var(t, 1).numpy(), want, "var")
    assert_same_bits(vkml.std(t, 1).numpy(), vkml.sqrt(vkml.tensor(want)).numpy(), "std")


def test_norm_gradient_at_zero_is_zero_as_torch():
    for ord in (2, 3, 0.5):
        x = vkml.zeros(2, 3, requires_grad=True)
        vkml.linalg.vector_norm(x, ord, 1).sum().backward()
        tx = torch.zeros(2, 3, requires_grad=True)
        torch.linalg.vector_norm(tx, ord, 1).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), from_torch(tx.grad))


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_dim_give_a_tie_whole_gradient_to_the_index(op):
    """As PyTorch's: amax's rule shared it among the tied elements (was 1/3 to each of three ties)."""
    data = np.array([[1, 3, 3, 3, 1], [5, 5, -2, -2, 5]], np.float32)
    for keepdim in (False, True):
        x, t = vkml.tensor(data, requires_grad=True), to_torch(data).requires_grad_(True)
        w = np.array([1.5, -2.0], np.float32).reshape((2, 1) if keepdim else (2,))
        (getattr(vkml, op)(x, 1, keepdim).values * vkml.tensor(w)).sum().backward()
        (getattr(torch, op)(t, 1, keepdim).values * to_torch(w)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), from_torch(t.grad))


def test_linalg_is_importable_as_a_module():
    import vkml.linalg as linalg
    import vkml.return_types as rt

    assert linalg.vector_norm is vkml.linalg.vector_norm
    assert isinstance(vkml.max(vkml.ones(2, 2), 1), rt.max)
    values, indices = vkml.min(vkml.tensor([[3.0, 1.0]]), 1)
    assert values.tolist() == [1.0] and indices.tolist() == [1]


ERRORS = [
    ("var_int", lambda m: m.var(m.ones(3, dtype=m.int32)), RuntimeError, "std and var"),
    ("std_bool", lambda m: m.std(m.ones(3, dtype=m.bool)), RuntimeError, "std and var"),
    ("var_dim_range", lambda m: m.var(m.ones(2, 3), 5), IndexError, "range"),
    ("var_unbiased_and_correction", lambda m: m.var(m.ones(3), 0, unbiased=False, correction=0), TypeError, ""),
    ("all_repeated_dim", lambda m: m.all(m.ones(2, 3), (0, 0)), RuntimeError, "multiple times"),
    ("nanmean_int", lambda m: m.nanmean(m.ones(3, dtype=m.int32)), RuntimeError, "floating point"),
    ("aminmax_empty", lambda m: m.aminmax(m.ones(0)), RuntimeError, "aminmax"),
    ("vector_norm_int", lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.int32)), RuntimeError, "floating point"),
    ("vector_norm_narrowing", lambda m: m.linalg.vector_norm(m.ones(3), dtype=m.float16), RuntimeError, "narrowing"),
    ("vector_norm_inf_empty", lambda m: m.linalg.vector_norm(m.ones(0), INF), RuntimeError, "identity"),
    ("linalg_norm_3d_ord", lambda m: m.linalg.norm(m.ones(2, 2, 2), 1), RuntimeError, "1D or 2D"),
    ("linalg_norm_fro_vector", lambda m: m.linalg.norm(m.ones(3), "fro"), RuntimeError, "2 dim"),
    ("mean_int_dtype", lambda m: m.mean(m.ones(3), dtype=m.int32), RuntimeError, "dtype"),
    ("sum_dim_and_axis", lambda m: m.sum(m.ones(3), 0, axis=0), TypeError, ""),
    ("max_empty_dim", lambda m: m.max(m.ones(0, 2), 0), IndexError, ""),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_eager_and_of_torchs_type(case):
    name, fn, error, text = case
    with pytest.raises(error):
        fn(torch)
    with pytest.raises(error, match=text or None) as info:
        fn(vkml)
    # vkml's 'op' or PyTorch's own naming of it (quantile() ..., torch.block_diag: ...)
    named = "'" in str(info.value) or re.search(r"\w+\(\)|torch\.\w+", str(info.value))
    assert named, f"{name}: the message names the op: {info.value}"


def test_matrix_norms_of_singular_values_match_torch():
    # the singular values come from linalg.svdvals (on the host: tests/test_linalg.py checks it further)
    a = _floats(3)
    for call in (lambda m, x: m.linalg.norm(x, 2), lambda m, x: m.norm(x, "nuc"), lambda m, x: m.linalg.norm(x, -2)):
        np.testing.assert_allclose(call(vkml, vkml.tensor(a)).numpy(), call(torch, torch.tensor(a)).numpy(), rtol=1e-5)
    assert math.isclose(vkml.linalg.norm(vkml.ones(2, 2), "fro").item(), 2.0)


def test_vulkan_gradient_cases_exist():
    assert VULKAN_GRADIENTS <= {c[0] for c in GRAD_CASES}
