"""Sorting and searching (vkml/frontend/sorting.py, searching.py): sort, argsort, msort, topk, searchsorted, bucketize, isin.

vkml's sort is always stable, so its values and indices equal PyTorch's ``stable=True`` sort bit
for bit (ties, NaN, -0.0, inf included); topk is the first k of that order. Gradients of the
values match PyTorch's, lavapipe gives the CPU's bits, and bad arguments raise PyTorch's
error types.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import INT_SPECIALS, assert_same_bits, random_floats, random_ints, result_arrays, to_torch, weighted_grad

import vkml

NAN, INF = float("nan"), float("inf")


def _specials():
    return np.array(
        [
            [3, 1, NAN, 1, -0.0, 0, 3, NAN, -INF, INF, 0, -0.0],
            [NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
            [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2],
            [0, -0.0, 0, -0.0, INF, -INF, 1e-45, -1e-45, 5, -5, NAN, 0],
        ],
        np.float32,
    )


def _ties(seed, shape, dtype=np.float32):
    return random_ints(shape, np.int32, seed=seed, low=-4, high=4).astype(dtype)


# (id, input, function of (module, tensor), differentiable)
CASES = [
    ("sort_1d", lambda: random_floats(37, seed=1), lambda m, x: m.sort(x, stable=True), True),
    ("sort_specials", _specials, lambda m, x: m.sort(x, stable=True), False),
    ("sort_specials_desc", _specials, lambda m, x: m.sort(x, descending=True, stable=True), False),
    ("sort_ties_dim0", lambda: _ties(2, (33, 3)), lambda m, x: m.sort(x, dim=0, stable=True), True),
    ("sort_ties_desc_3d", lambda: _ties(3, (2, 5, 3)), lambda m, x: x.sort(dim=1, descending=True, stable=True), True),
    ("sort_int64", lambda: random_ints((4, 19), np.int64, seed=4), lambda m, x: m.sort(x, stable=True), False),
    ("sort_int_extremes", lambda: np.tile(INT_SPECIALS[np.int64], (2, 2)), lambda m, x: m.sort(x, stable=True), False),
    (
        "topk_smallest_int32_extremes",
        lambda: INT_SPECIALS[np.int32][::-1].copy(),
        lambda m, x: m.topk(x, 5, largest=False),
        False,
    ),
    (
        "sort_int32_desc",
        lambda: _ties(5, (3, 16), np.int32),
        lambda m, x: m.sort(x, dim=-1, descending=True, stable=True),
        False,
    ),
    ("sort_bool", lambda: _ties(6, (2, 9)) > 0, lambda m, x: m.sort(x, stable=True), False),
    ("sort_float16", lambda: _ties(7, (3, 10), np.float16) / 3, lambda m, x: m.sort(x, stable=True), False),
    ("sort_0d", lambda: np.array(2.5, np.float32), lambda m, x: m.sort(x, stable=True), False),
    ("sort_empty", lambda: np.zeros((3, 0), np.float32), lambda m, x: m.sort(x, stable=True), False),
    ("sort_one", lambda: np.ones((3, 1), np.float32), lambda m, x: m.sort(x, stable=True), False),
    ("sort_long_row", lambda: _ties(8, (2, 300)), lambda m, x: m.sort(x, stable=True), False),
    # rows past one shared-memory block (512 slots): global steps and block merges
    ("sort_rows_past_a_block", lambda: _ties(15, (3, 1500)), lambda m, x: m.sort(x, stable=True), True),
    (
        "sort_desc_past_two_blocks",
        lambda: random_floats((2, 2100), seed=16).round(1),
        lambda m, x: m.sort(x, dim=1, descending=True, stable=True),
        False,
    ),
    ("argsort", lambda: _ties(9, (4, 7)), lambda m, x: m.argsort(x, dim=0, stable=True), False),
    ("argsort_desc_nan", _specials, lambda m, x: x.argsort(descending=True, stable=True), False),
    ("msort", lambda: _ties(10, (6, 3)), lambda m, x: m.msort(x), True),
    ("topk", lambda: random_floats((3, 20), seed=11), lambda m, x: m.topk(x, 5), True),
    ("topk_smallest_dim0", lambda: random_floats((9, 4), seed=12), lambda m, x: x.topk(3, 0, largest=False), True),
    ("topk_nan", _specials, lambda m, x: m.topk(x, 4), False),
    ("topk_all", lambda: random_floats((2, 6), seed=13), lambda m, x: m.topk(x, 6, largest=False), True),
    ("topk_zero", lambda: random_floats((2, 6), seed=13), lambda m, x: m.topk(x, 0), False),
    ("topk_0d", lambda: np.array(-1.5, np.float32), lambda m, x: m.topk(x, 1), False),
    ("topk_int", lambda: random_ints((3, 11), np.int64, seed=14), lambda m, x: m.topk(x, 3), False),
]
IDS = [c[0] for c in CASES]


def _stable_reference(name, x, want):
    """PyTorch's topk names any of several tied elements: compare with its stable sort's first k instead."""
    if not name.startswith("topk"):
        return result_arrays(want)
    dim = 0 if name == "topk_smallest_dim0" else -1
    k = want.values.shape[dim] if want.values.ndim else 1
    largest = "smallest" not in name and name != "topk_all"
    if x.ndim == 0:
        return result_arrays(want)
    s = torch.sort(to_torch(x), dim=dim, descending=largest, stable=True)
    return [a.numpy() for a in (s.values.narrow(dim, 0, k), s.indices.narrow(dim, 0, k))]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_and_indices_match_torch_stable_sort(case):
    name, make, fn, _ = case
    x = make()
    want, got = fn(torch, to_torch(x)), fn(vkml, vkml.tensor(x))
    if isinstance(want, tuple):
        assert type(got).__name__ == type(want).__name__ and got._fields == ("values", "indices")
    g = result_arrays(got)
    assert_same_bits(g[0], result_arrays(want)[0], name)  # values: the same bits as PyTorch's
    w = _stable_reference(name, x, want)
    for a, b in zip(g, w, strict=True):
        assert_same_bits(a, b, name)


GRAD_CASES = [c for c in CASES if c[3]]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_value_gradients_match_torch(case):
    _, make, fn, _ = case
    x = make()
    want = weighted_grad(torch, lambda m, t: fn(m, t)[0] if isinstance(fn(m, t), tuple) else fn(m, t), x, seed=3)
    got = weighted_grad(vkml, lambda m, t: fn(m, t)[0] if isinstance(fn(m, t), tuple) else fn(m, t), x, seed=3)
    assert_same_bits(got, want, case[0])  # a permutation of the weights: exact


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vulkan_gives_the_cpu_bits(case, gpu):
    name, make, fn, differentiable = case
    x = make()
    cpu, dev = fn(vkml, vkml.tensor(x)), fn(vkml, vkml.tensor(x, device=gpu))
    for c, d in zip(result_arrays(cpu), result_arrays(dev), strict=True):
        assert_same_bits(d, c, name)
    if differentiable and name in ("sort_ties_dim0", "topk"):
        assert_same_bits(weighted_grad(vkml, fn, x, gpu, seed=4), weighted_grad(vkml, fn, x, seed=4), name + " grad")


def test_sort_is_stable_whatever_stable_says():
    """Ties keep their positions with stable=False too (documented: vkml's sort is always stable)."""
    x = np.zeros(50, np.float32)
    x[::2] = -0.0
    got = vkml.sort(vkml.tensor(x), stable=False)
    np.testing.assert_array_equal(got.indices.numpy(), np.arange(50))
    np.testing.assert_array_equal(vkml.argsort(vkml.tensor(x), descending=True).numpy(), np.arange(50))


# ---------------------------------------------------------------------- searching

SEQ = np.array([-INF, -2, -0.0, 0, 0, 1, 1, 1, 3.5, INF], np.float32)
VALUES = np.array([[NAN, -INF, -2, 0, -0.0, 1, 2, INF, 7], [-3, 1, 1, 3.5, 3.4, 0.5, -1, 9, NAN]], np.float32)


def _t(m, like, data):
    """A tensor of ``data`` on ``like``'s device."""
    return m.tensor(data) if m is torch else m.tensor(data, device=like.device)


SEARCHES = [
    ("searchsorted", lambda m, s, v: m.searchsorted(s, v)),
    ("searchsorted_right", lambda m, s, v: m.searchsorted(s, v, right=True)),
    ("searchsorted_side", lambda m, s, v: m.searchsorted(s, v, side="right", out_int32=True)),
    ("searchsorted_rows", lambda m, s, v: m.searchsorted(m.stack([s[:9], s[1:]]), v)),
    ("searchsorted_scalar", lambda m, s, v: m.searchsorted(s, 1.0, right=True)),
    ("searchsorted_int_values", lambda m, s, v: m.searchsorted(s, _t(m, s, [[0, 1, 5]]))),
    ("searchsorted_sorter", lambda m, s, v: m.searchsorted(s.flip(0), v, sorter=_t(m, s, list(range(9, -1, -1))))),
    ("searchsorted_nan_seq", lambda m, s, v: m.searchsorted(_t(m, s, [1.0, NAN, 2.0]), v)),
    ("searchsorted_empty_seq", lambda m, s, v: m.searchsorted(s[:0], v)),
    ("searchsorted_empty_values", lambda m, s, v: m.searchsorted(s, v[:, :0])),
    ("bucketize", lambda m, s, v: m.bucketize(v, s)),
    ("bucketize_right_int32", lambda m, s, v: m.bucketize(v, s, right=True, out_int32=True)),
    ("bucketize_scalar", lambda m, s, v: m.bucketize(3, s)),
    ("isin", lambda m, s, v: m.isin(v, s)),
    ("isin_invert", lambda m, s, v: m.isin(v, s[::2], invert=True)),
    ("isin_nan_tests", lambda m, s, v: m.isin(v, _t(m, s, [NAN, 0.0, 7.0, NAN]))),
    ("isin_scalar_test", lambda m, s, v: m.isin(v, 1.0)),
    ("isin_scalar_element", lambda m, s, v: m.isin(-2.0, s)),
    ("isin_int_float", lambda m, s, v: m.isin(_t(m, s, [[0, 1, 2, 3]]), s)),
    ("isin_empty", lambda m, s, v: m.isin(v, s[:0])),
]


def _search_inputs(m, device=None):
    if m is torch:
        return to_torch(SEQ), to_torch(VALUES)
    return vkml.tensor(SEQ, device=device), vkml.tensor(VALUES, device=device)


@pytest.mark.parametrize("case", SEARCHES, ids=[c[0] for c in SEARCHES])
def test_searches_match_torch(case):
    name, fn = case
    want, got = fn(torch, *_search_inputs(torch)), fn(vkml, *_search_inputs(vkml))
    assert_same_bits(result_arrays(got)[0], result_arrays(want)[0], name)


@pytest.mark.parametrize("case", SEARCHES, ids=[c[0] for c in SEARCHES])
def test_searches_on_vulkan_give_the_cpu_bits(case, gpu):
    name, fn = case
    cpu, dev = fn(vkml, *_search_inputs(vkml)), fn(vkml, *_search_inputs(vkml, gpu))
    assert_same_bits(result_arrays(dev)[0], result_arrays(cpu)[0], name)


def test_random_searches_and_isin_match_torch():
    g = np.random.default_rng(20)
    seq = np.sort(g.integers(-20, 20, (3, 40)), axis=1).astype(np.int64)
    vals = g.integers(-25, 25, (3, 17)).astype(np.int64)
    for right in (False, True):
        want = torch.searchsorted(to_torch(seq), to_torch(vals), right=right).numpy()
        np.testing.assert_array_equal(vkml.searchsorted(vkml.tensor(seq), vkml.tensor(vals), right=right).numpy(), want)
    want = torch.isin(to_torch(vals), to_torch(seq[0])).numpy()
    np.testing.assert_array_equal(vkml.isin(vkml.tensor(vals), vkml.tensor(seq[0])).numpy(), want)


# ---------------------------------------------------------------------- errors

_TORCH_BEFORE_2_12 = tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 12)

ERRORS = [
    ("sort_dim", lambda m: m.sort(m.ones(3), dim=2), IndexError, "range"),
    ("sort_dim_none", lambda m: m.sort(m.ones(3), dim=None), TypeError, "dim"),
    ("sort_descending_int", lambda m: m.sort(m.ones(3), descending=1), TypeError, "descending"),
    ("sort_list", lambda m: m.sort([1, 2]), TypeError, "Tensor"),
    ("topk_k_float", lambda m: m.topk(m.ones(3), 1.0), TypeError, "'k'"),
    ("topk_k_too_big", lambda m: m.topk(m.ones(3), 4), RuntimeError, "out of range"),
    ("topk_k_negative", lambda m: m.topk(m.ones(3), -1), RuntimeError, "out of range"),
    ("topk_bool", lambda m: m.topk(m.ones(3, dtype=m.bool), 1), RuntimeError, "bool"),
    ("searchsorted_0d", lambda m: m.searchsorted(m.tensor(1), m.tensor([1, 2])), RuntimeError, "dimension"),
    (
        "searchsorted_rows_mismatch",
        lambda m: m.searchsorted(m.ones(2, 2), m.ones(3, 2)),
        RuntimeError,
        "first N-1 dimensions",
    ),
    ("searchsorted_side", lambda m: m.searchsorted(m.ones(2), m.ones(2), side="middle"), RuntimeError, "side"),
    (
        "searchsorted_opposites",
        lambda m: m.searchsorted(m.ones(2), m.ones(2), side="left", right=True),
        RuntimeError,
        "opposites",
    ),
    (
        "searchsorted_bool",
        lambda m: m.searchsorted(m.ones(2, dtype=m.bool), m.ones(2, dtype=m.bool)),
        NotImplementedError,
        "bool",
    ),
    (
        "searchsorted_sorter_range",
        lambda m: m.searchsorted(m.ones(2), m.ones(2), sorter=m.tensor([0, 2])),
        RuntimeError,
        "out of range",
    ),
    (
        "searchsorted_sorter_dtype",
        lambda m: m.searchsorted(m.ones(2), m.ones(2), sorter=m.tensor([0, 1], dtype=m.int32)),
        RuntimeError,
        "long",
    ),
    ("searchsorted_scalar_rows", lambda m: m.searchsorted(m.ones(2, 2), 1.0), RuntimeError, "scalar only"),
    ("bucketize_2d", lambda m: m.bucketize(m.ones(2), m.ones(1, 2)), RuntimeError, "1 dimension"),
    ("isin_bool", lambda m: m.isin(m.ones(2, dtype=m.bool), m.ones(1, dtype=m.bool)), RuntimeError, "bool"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_eager_and_of_torchs_type(case):
    name, fn, error, text = case
    # PyTorch before 2.12 refused sort(dim=None) with a RuntimeError about dimnames; later, TypeError.
    with pytest.raises(RuntimeError if name == "sort_dim_none" and _TORCH_BEFORE_2_12 else error):
        fn(torch)
    with pytest.raises(error, match=text) as info:
        fn(vkml)
    assert "'" in str(info.value), f"{name}: the message names the op: {info.value}"


@pytest.mark.parametrize("descending", [False, True])
def test_stable_order_at_every_network_shape(descending):
    """Row lengths around powers of two and the 512-slot block: the stable order of torch, bit for bit."""
    g = np.random.default_rng(50)
    for n in (2, 3, 7, 64, 65, 511, 512, 513, 1023, 1025):
        x = g.integers(-3, 3, (2, n)).astype(np.float32)
        x[0, g.integers(0, n, max(1, n // 8))] = NAN
        got = vkml.sort(vkml.tensor(x), descending=descending)
        want = torch.sort(to_torch(x), descending=descending, stable=True)
        assert_same_bits(got.values.numpy(), want.values.numpy(), f"values n={n}")
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=f"indices n={n}")


def test_a_long_sort_runs_in_parts_with_the_same_result(monkeypatch):
    """Past PENDING_SORT_BYTES of intermediate buffers the stages so far run first: the result is unchanged."""
    from vkml.frontend import sorting

    x = random_floats((2, 3000), seed=60).round(1)
    whole = vkml.sort(vkml.tensor(x), descending=True)
    monkeypatch.setattr(sorting, "PENDING_SORT_BYTES", 1)
    runs = []
    monkeypatch.setattr(sorting, "realize", lambda *t: runs.append(len(t)) or vkml.realize(*t))
    parts = vkml.sort(vkml.tensor(x), descending=True)
    assert runs == [2, 2, 2]  # after the merges of stages 1024, 2048 and 4096
    assert_same_bits(parts.values.numpy(), whole.values.numpy(), "values")
    np.testing.assert_array_equal(parts.indices.numpy(), whole.indices.numpy())


@pytest.mark.parametrize("on_gpu", [False, True])
def test_grids_past_the_workgroup_limit_spill_into_y(monkeypatch, on_gpu, request):
    """With a tiny per-axis workgroup limit every kernel's grid spills into y (and the block kernels
    get spill workgroups past the last block): the results are unchanged. Shapes unique to this test,
    so no kernel built under the patched limit is reused elsewhere."""
    from vkml.frontend import sorting

    device = request.getfixturevalue("gpu") if on_gpu else None
    monkeypatch.setattr(sorting, "MAX_WORKGROUPS", 3)
    x = random_floats((5, 1111), seed=70).round(1)
    got = vkml.sort(vkml.tensor(x, device=device), descending=True)
    want = torch.sort(to_torch(x), descending=True, stable=True)
    assert_same_bits(got.values.numpy(), want.values.numpy(), "values")
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    found = vkml.searchsorted(vkml.tensor(np.sort(x[0]), device=device), vkml.tensor(x, device=device))
    np.testing.assert_array_equal(found.numpy(), torch.searchsorted(torch.sort(to_torch(x[0]))[0], to_torch(x)))


def test_random_shapes_dims_and_dtypes_match_torch_stable_sort():
    g = np.random.default_rng(90)
    for trial in range(14):
        shape = tuple(int(s) for s in g.integers(1, 9, g.integers(1, 4)))
        dim = int(g.integers(-len(shape), len(shape)))
        dtype = (np.float32, np.float16, np.int32, np.int64)[trial % 4]
        x = g.integers(-4, 4, shape).astype(dtype)
        if x.dtype.kind == "f":
            x.reshape(-1)[g.random(x.size) < 0.2] = np.nan
            x.reshape(-1)[g.random(x.size) < 0.2] = -0.0
        descending = bool(trial % 3 == 0)
        got = vkml.sort(vkml.tensor(x), dim=dim, descending=descending)
        want = torch.sort(to_torch(x), dim=dim, descending=descending, stable=True)
        what = f"trial {trial}: {shape} {x.dtype} dim={dim} descending={descending}"
        assert_same_bits(got.values.numpy(), want.values.numpy(), what)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=what)
        k = int(g.integers(0, x.shape[dim] + 1))
        # topk: the first k of the stable order (PyTorch's own topk may pick another of tied -0.0 and 0.0)
        top = vkml.topk(vkml.tensor(x), k, dim=dim, largest=not descending)
        first = torch.sort(to_torch(x), dim=dim, descending=not descending, stable=True)
        assert_same_bits(top.values.numpy(), first.values.narrow(dim, 0, k).numpy(), what + " topk")
        np.testing.assert_array_equal(top.indices.numpy(), first.indices.narrow(dim, 0, k).numpy(), err_msg=what)
