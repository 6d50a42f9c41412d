"""scatter_reduce, scatter(reduce=), index_add/copy/fill/reduce, masked_select/scatter, take, put, argwhere.

Every case runs on torch, on the CPU backend and on lavapipe: vkml gives torch's values (and
gradients), and the CPU backend gives Vulkan's bits, repeated indices included (they combine
in index order, vkml/frontend/index_ops.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(1617)
X = RNG.standard_normal((4, 5)).astype(np.float32)
SRC = RNG.standard_normal((3, 5)).astype(np.float32)
IDX0 = np.array([[0, 1, 0, 3, 0], [2, 1, 0, 3, 3], [0, 0, 0, 1, 2]])  # repeated positions along dim 0
IDX1 = np.array([[4, 4, 0], [1, -0, 1], [2, 2, 2], [0, 3, 0]])  # along dim 1, smaller than SRC
SLOTS = np.array([3, 0, 3])  # index_* along dim 0, with a repeat
SRC_ROWS = RNG.standard_normal((3, 5)).astype(np.float32)
SRC_COLS = RNG.standard_normal((4, 3)).astype(np.float32)
INTS = RNG.integers(-9, 9, (4, 5))
TIES = np.array([[1.0, 2.0, 2.0, -1.0, 0.0]], np.float32)  # amax/amin ties for the gradient split
NANS = np.array([1.0, np.nan, 3.0, 0.0], np.float32)
HALF = np.array([2048.0, 1.0], np.float16)
BOOLS = np.array([True, False, False, True])


class Lib:
    """Tensors of one library on one device: ``m(array)``, ``m(array, grad=True)``, and ``lib`` (torch or vkml)."""

    def __init__(self, lib, device=None):
        self.lib, self.device = lib, device

    def __call__(self, array, grad: bool = False):
        array = np.asarray(array)
        if array.dtype == np.float64:  # Python floats: float32 in both libraries
            array = array.astype(np.float32)
        if self.lib is torch:
            t = torch.tensor(array)
        else:
            t = vkml.tensor(array, device=self.device)
        return t.requires_grad_() if grad else t


REDUCES = ["sum", "prod", "mean", "amax", "amin"]

CASES = {
    **{
        f"scatter_reduce {r} self={s}": (lambda m, r=r, s=s: m(X).scatter_reduce(0, m(IDX0), m(SRC), r, include_self=s))
        for r in REDUCES
        for s in (True, False)
    },
    **{
        f"scatter_reduce dim -1 {r}": (lambda m, r=r: m.lib.scatter_reduce(m(X), -1, m(IDX1), m(SRC_COLS), r))
        for r in REDUCES
    },
    **{
        f"scatter_reduce int {r} self={s}": (
            lambda m, r=r, s=s: m(INTS).scatter_reduce(1, m(IDX1), m(INTS[:, ::-1].copy()), r, include_self=s)
        )
        for r in REDUCES
        for s in (True, False)
    },
    "scatter_reduce amax nan": lambda m: m(NANS).scatter_reduce(0, m([0, 1, 0, 2]), m(NANS[::-1].copy()), "amax"),
    "scatter_reduce amin nan": lambda m: m(NANS).scatter_reduce(0, m([0, 1, 0, 2]), m(NANS[::-1].copy()), "amin"),
    "scatter_reduce signed zero": lambda m: m([0.0, 1.0]).scatter_reduce(
        0, m([0, 0]), m([-0.0, -0.0]), "sum", include_self=False
    ),
    "scatter_reduce float16 sum": lambda m: m(HALF[:1]).scatter_reduce(0, m([0, 0]), m(HALF[[1, 1]]), "sum"),
    "scatter_reduce float16 mean": lambda m: m(HALF[:1]).scatter_reduce(0, m([0, 0]), m(HALF[[1, 1]]), "mean"),
    "scatter_reduce empty index": lambda m: m(X).scatter_reduce(0, m(np.zeros((0, 5), np.int64)), m(SRC), "sum"),
    "scatter_reduce_": lambda m: m(X).scatter_reduce_(0, m(IDX0), m(SRC), "amin"),
    "scatter reduce add": lambda m: m(X).scatter(0, m(IDX0), m(SRC), reduce="add"),
    "scatter reduce multiply": lambda m: m.lib.scatter(m(X), 0, m(IDX0), m(SRC), reduce="multiply"),
    "scatter_ value multiply": lambda m: m(X).scatter_(1, m(IDX1), 2.0, reduce="multiply"),
    "scatter float16 add": lambda m: m(HALF[:1]).scatter(0, m([0, 0]), m(HALF[[1, 1]]), reduce="add"),
    "scatter_add float16": lambda m: m(HALF[:1]).scatter_add(0, m([0, 0]), m(HALF[[1, 1]])),
    "index_put_ accumulate float16": lambda m: m(HALF[:1]).index_put_((m([0, 0]),), m(HALF[[1, 1]]), accumulate=True),
    "index_add": lambda m: m.lib.index_add(m(X), 0, m(SLOTS), m(SRC_ROWS)),
    "index_add alpha dim 1": lambda m: m(X).index_add(1, m([4, 4, 0]), m(SRC_COLS), alpha=-2),
    "index_add int32 index": lambda m: m(X).index_add(1, m(np.array([4, 1, 4], np.int32)), m(SRC_COLS)),
    "index_add_": lambda m: m(X).index_add_(0, m(SLOTS), m(SRC_ROWS)),
    "index_add 0-d": lambda m: m(np.float32(5)).index_add(0, m(0), m(np.float32(1))),
    "index_add float16": lambda m: m(HALF[:1]).index_add(0, m([0, 0]), m(HALF[[1, 1]])),
    "index_add empty": lambda m: m(X).index_add(0, m(np.zeros(0, np.int64)), m(np.zeros((0, 5), np.float32))),
    "index_copy": lambda m: m.lib.index_copy(m(X), 0, m(SLOTS), m(SRC_ROWS)),
    "index_copy_ dim -1": lambda m: m(X).index_copy_(-1, m([4, 0, 4]), m(SRC_COLS)),
    "index_fill": lambda m: m.lib.index_fill(m(X), 1, m([0, -1, 0]), -1.5),
    "index_fill_ tensor value": lambda m: m(X).index_fill_(0, m([2]), m(np.float32(7))),
    "index_fill int": lambda m: m(INTS).index_fill(1, m([1]), 2.75),
    "index_fill empty": lambda m: m(X).index_fill(0, m(np.zeros(0, np.int64)), 1.0),
    **{
        f"index_reduce {r} self={s}": (
            lambda m, r=r, s=s: m(X).index_reduce(0, m(SLOTS), m(SRC_ROWS), r, include_self=s)
        )
        for r in ("prod", "mean", "amax", "amin")
        for s in (True, False)
    },
    "index_reduce_ int mean": lambda m: m(INTS).index_reduce_(1, m([2, 2, 0]), m(INTS[:, :3].copy()), "mean"),
    "index_reduce float16 mean": lambda m: m(HALF[:1]).index_reduce(0, m([0, 0]), m(HALF[[1, 1]]), "mean"),
    "masked_select": lambda m: m.lib.masked_select(m(X), m(X > 0)),
    "masked_select broadcast": lambda m: m(X).masked_select(m(np.array([True, False, True, True, False]))),
    "masked_select broadcast input": lambda m: m(X[0]).masked_select(m(X > 0)),
    "masked_select empty": lambda m: m(X).masked_select(m(np.zeros((4, 5), bool))),
    "masked_select 0-d": lambda m: m(np.float32(5)).masked_select(m(np.bool_(True))),
    "masked_scatter": lambda m: m.lib.masked_scatter(m(X), m(X > 0), m(-np.arange(30, dtype=np.float32))),
    "masked_scatter broadcast": lambda m: m(X).masked_scatter(m(np.array([True, False, False, True, True])), m(SRC)),
    "masked_scatter_": lambda m: m(X).masked_scatter_(m(X < 0), m(SRC)),
    "take": lambda m: m.lib.take(m(X), m([[0, -1], [19, 3], [3, 3]])),
    "take 0-d": lambda m: m(X).take(m(-20)),
    "take empty": lambda m: m(X).take(m(np.zeros((0, 2), np.int64))),
    "put": lambda m: m.lib.put(m(X), m([0, 0, -1]), m([1.0, 2.0, 3.0])),
    "put accumulate": lambda m: m(X).put(m([[0, 0], [-1, 19]]), m([[1.0, 2.0], [3.0, 4.0]]), accumulate=True),
    "put_": lambda m: m(X).put_(m([7, 7, 2]), m([5.0, 6.0, 8.0])),
    "put_ accumulate float16": lambda m: m(HALF[:1]).put_(m([0, 0]), m(HALF[[1, 1]]), accumulate=True),
    "argwhere": lambda m: m.lib.argwhere(m(X > 0.5)),
    "argwhere method": lambda m: m(INTS).argwhere(),
    "argwhere 0-d": lambda m: m.lib.argwhere(m(np.float32(3))),
    "argwhere 0-d zero": lambda m: m(np.float32(0)).argwhere(),
    "where one argument": lambda m: m.lib.where(m(X > 0.5)),
    "where 0-d": lambda m: m.lib.where(m(np.float32(3))),
    "take_along_dim flat": lambda m: m.lib.take_along_dim(m(X), m([3, 0, 19])),
    "index_put": lambda m: m.lib.index_put(m(X), (m([0, 0, 3]), m([1, 1, 2])), m([1.0, 2.0, 3.0])),
    "index_select method negative dim": lambda m: m(X).index_select(-1, m([4, 0, 4])),
    "repeat_interleave tensor": lambda m: m(X).repeat_interleave(m([1, 0, 2, 1]), dim=0, output_size=4),
    **{
        f"bool scatter_reduce {r}": (
            lambda m, r=r: m(BOOLS).scatter_reduce(0, m([1, 1, 2, 2]), m([True, True, False, True]), r)
        )
        for r in ("sum", "prod", "amax", "amin")
    },
    "bool index_add": lambda m: m(BOOLS).index_add(0, m([1, 1]), m([True, False])),
    "bool put accumulate": lambda m: m(BOOLS).put(m([1, 2]), m([True, False]), accumulate=True),
    "bool scatter multiply": lambda m: m(BOOLS).scatter(0, m([0, 0]), m([True, False]), reduce="multiply"),
    "gather 0-d": lambda m: m.lib.gather(m(np.float32(5)), 0, m(0)),
    "gather 0-d input, 1-d index": lambda m: m.lib.gather(m(np.float32(5)), -1, m([0, 0])),
    "scatter_reduce 0-d": lambda m: m(np.float32(5)).scatter_reduce(0, m(0), m(np.float32(1)), "sum"),
    "scatter 0-d repeated": lambda m: m(np.float32(5)).scatter(0, m([0, 0]), m([1.0, 2.0])),
    "scatter_add 0-d": lambda m: m(np.float32(5)).scatter_add(0, m(0), m(np.float32(1))),
    "index_select 0-d": lambda m: m(np.float32(5)).index_select(0, m([0])),
}


def _arrays(out) -> list[np.ndarray]:
    outs = out if isinstance(out, tuple) else (out,)
    return [o.detach().numpy() if isinstance(o, torch.Tensor) else o.numpy() for o in outs]


def _run(fn, lib, device=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's beta and deprecation warnings (index_reduce, scatter's reduce)
        return _arrays(fn(Lib(lib, device)))


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    nan_a, nan_b = (np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool) for x in (a, b))
    keep = ~nan_a
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and np.array_equal(nan_a, nan_b)
        and a[keep].tobytes() == b[keep].tobytes()
    )


@pytest.mark.parametrize("name", CASES)
def test_values_match_torch_and_cpu_matches_vulkan(name, gpu):
    fn = CASES[name]
    want = _run(fn, torch)
    cpu = _run(fn, vkml, vkml.device("cpu"))
    vk = _run(fn, vkml, gpu)
    assert len(want) == len(cpu) == len(vk)
    for w, c, v in zip(want, cpu, vk):
        assert c.shape == w.shape, name
        assert str(c.dtype) == str(w.dtype), name
        assert _same_bits(c, w), (name, c, w)  # torch's CPU combines in index order too: the same bits
        assert _same_bits(c, v), (name, c, v)


GRADS = {
    **{
        f"scatter_reduce {r} self={s}": (
            lambda m, r=r, s=s: (lambda x, src: (x.scatter_reduce(0, m(IDX0), src, r, include_self=s), [x, src]))(
                m(X, True), m(SRC, True)
            )
        )
        for r in REDUCES
        for s in (True, False)
    },
    **{
        f"scatter_reduce ties {r} self={s}": (
            lambda m, r=r, s=s: (
                lambda x, src: (x.scatter_reduce(1, m([[0, 0, 1, 1, 0]]), src, r, include_self=s), [x, src])
            )(m([[2.0, 1.0]], True), m(TIES, True))
        )
        for r in ("amax", "amin")
        for s in (True, False)
    },
    "scatter_reduce prod one zero": lambda m: (
        lambda x, src: (x.scatter_reduce(0, m([0, 0, 1, 1, 1]), src, "prod"), [x, src])
    )(m([2.0, 3.0, 4.0], True), m([0.0, 5.0, 0.0, 0.0, 7.0], True)),
    "scatter_reduce prod zero in self": lambda m: (
        lambda x, src: (x.scatter_reduce(0, m([0, 0, 1]), src, "prod"), [x, src])
    )(m([0.0, 3.0], True), m([2.0, 5.0, 0.0], True)),
    "index_add alpha": lambda m: (lambda x, s: (x.index_add(1, m([4, 4, 0]), s, alpha=2.5), [x, s]))(
        m(X, True), m(SRC_COLS, True)
    ),
    "index_copy repeated": lambda m: (lambda x, s: (x.index_copy(0, m(SLOTS), s), [x, s]))(
        m(X, True), m(SRC_ROWS, True)
    ),
    "index_fill tensor value": lambda m: (lambda x, v: (x.index_fill(1, m([0, 4]), v), [x, v]))(
        m(X, True), m(np.float32(2), True)
    ),
    **{
        f"index_reduce {r}": (
            lambda m, r=r: (lambda x, s: (x.index_reduce(0, m(SLOTS), s, r, include_self=False), [x, s]))(
                m(X, True), m(SRC_ROWS, True)
            )
        )
        for r in ("prod", "mean", "amax", "amin")
    },
    "masked_select": lambda m: (lambda x: (x.masked_select(m(X > 0)), [x]))(m(X, True)),
    "masked_scatter": lambda m: (lambda x, s: (x.masked_scatter(m(X > 0), s), [x, s]))(
        m(X, True), m(np.arange(30, dtype=np.float32), True)
    ),
    "take repeated": lambda m: (lambda x: (x.take(m([[0, -1], [0, 0]])), [x]))(m(X, True)),
    "put repeated": lambda m: (lambda x, s: (x.put(m([1, 1, -1]), s), [x, s]))(m(X, True), m([1.0, 2.0, 3.0], True)),
    "put accumulate": lambda m: (lambda x, s: (x.put(m([1, 1, -1]), s, accumulate=True), [x, s]))(
        m(X, True), m([1.0, 2.0, 3.0], True)
    ),
    "scatter repeated": lambda m: (lambda x, s: (x.scatter(0, m(IDX0), s), [x, s]))(m(X, True), m(SRC, True)),
    "index_put repeated": lambda m: (lambda x, s: (x.index_put((m([1, 1, 0]),), s), [x, s]))(
        m(X, True), m(SRC_ROWS, True)
    ),
}


def _grads(fn, lib, device=None) -> list[np.ndarray]:
    m = Lib(lib, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, leaves = fn(m)
    upstream = np.linspace(-1.0, 2.0, out.numel(), dtype=np.float32).reshape(tuple(out.shape))
    out.backward(m(upstream))
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize("name", GRADS)
def test_gradients_match_torch_and_cpu_matches_vulkan(name, gpu):
    want = _grads(GRADS[name], torch)
    cpu = _grads(GRADS[name], vkml, vkml.device("cpu"))
    vk = _grads(GRADS[name], vkml, gpu)
    for w, c, v in zip(want, cpu, vk):
        np.testing.assert_allclose(c, w, rtol=1e-6, atol=0, err_msg=name)
        assert _same_bits(c, v), (name, c, v)


def test_src_beyond_a_smaller_index_gets_zero_gradient():
    # PyTorch's backward refuses this case (ScatterReduceBackward0 returns the index's shape); the
    # part of src the index pairs with gets PyTorch's gradient of the same op on that part, the rest 0
    x, src = torch.tensor(X, requires_grad=True), torch.tensor(SRC[:2, :3].copy(), requires_grad=True)
    x.scatter_reduce(0, torch.tensor(IDX0[:2, :3]), src, "mean", include_self=False).sum().backward()
    vx, vsrc = vkml.tensor(X, requires_grad=True), vkml.tensor(SRC, requires_grad=True)
    vx.scatter_reduce(0, vkml.tensor(IDX0[:2, :3]), vsrc, "mean", include_self=False).sum().backward()
    np.testing.assert_array_equal(vx.grad.numpy(), x.grad.numpy())
    want = np.zeros_like(SRC)
    want[:2, :3] = src.grad.numpy()
    np.testing.assert_array_equal(vsrc.grad.numpy(), want)


def test_repeated_indices_combine_in_index_order():
    # float32 sums that depend on the order: (1 - 2^24) + 2^24 is 1, (2^24 + 1) - 2^24 is 0 (2^24 + 1 rounds)
    big = 2.0**24
    for op in (
        lambda x, i, s: x.scatter_reduce(0, i, s, "sum"),
        lambda x, i, s: x.scatter_add(0, i, s),
        lambda x, i, s: x.index_add(0, i, s),
        lambda x, i, s: x.put(i, s, accumulate=True),
        lambda x, i, s: x.index_put((i,), s, accumulate=True),
    ):
        for values, want in (([1.0, -big, big], 1.0), ([big, 1.0, -big], 0.0)):
            for lib in (torch, vkml):
                assert op(lib.zeros(1), lib.tensor([0, 0, 0]), lib.tensor(values)).tolist() == [want]


def test_index_add_rounds_alpha_times_source_first():
    # PyTorch's CPU fuses x + alpha * s into one rounding; vkml rounds the product first (docs/ops/index_add.md)
    x, s = torch.tensor(X), torch.tensor(SRC_COLS)
    want = x.index_add(1, torch.tensor([4, 4, 0]), s, alpha=2.5).numpy()
    got = vkml.tensor(X).index_add(1, vkml.tensor([4, 4, 0]), vkml.tensor(SRC_COLS), alpha=2.5).numpy()
    np.testing.assert_allclose(got, want, rtol=2**-22, atol=0)
    rounded_first = x.index_add(1, torch.tensor([4, 4, 0]), s * 2.5).numpy()
    np.testing.assert_array_equal(got, rounded_first)


def test_scatter_with_reduce_has_no_gradient_as_torch():
    x = vkml.tensor([1.0, 2.0], requires_grad=True)
    y = x.scatter(0, vkml.tensor([0, 0]), vkml.tensor([3.0, 4.0]), reduce="add")
    assert y.tolist() == [8.0, 2.0]
    with pytest.raises(RuntimeError, match="derivative for aten::scatter"):
        y.sum().backward()


def _raises(fn, exc, text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc):
            fn(Lib(torch))
        before = X.copy()
        m = Lib(vkml)
        with pytest.raises(exc, match=text):
            fn(m)
    np.testing.assert_array_equal(before, X)


ERRORS = {
    "scatter_reduce out of range": (
        lambda m: m(X).scatter_reduce(0, m(IDX0 + 2), m(SRC), "sum"),
        RuntimeError,
        "'scatter_reduce': index 5 is out of bounds for dimension 0 with size 4",
    ),
    "scatter_reduce negative": (
        lambda m: m(X).scatter_reduce(0, m(-IDX0), m(SRC), "sum"),
        RuntimeError,
        "index -1 is out of bounds",
    ),
    "scatter_reduce bad reduce": (
        lambda m: m(X).scatter_reduce(0, m(IDX0), m(SRC), "maximum"),
        RuntimeError,
        "reduce argument must be either sum, prod, mean, amax or amin",
    ),
    "scatter_reduce dtype": (
        lambda m: m(X).scatter_reduce(0, m(IDX0), m(INTS), "sum"),
        RuntimeError,
        "Expected self.dtype to be equal to src.dtype",
    ),
    "scatter_reduce include_self": (
        lambda m: m(X).scatter_reduce(0, m(IDX0), m(SRC), "sum", include_self=1),
        TypeError,
        "include_self",
    ),
    "scatter bad reduce": (
        lambda m: m(X).scatter(0, m(IDX0), m(SRC), reduce="mean"),
        RuntimeError,
        "reduce argument must be either add or multiply",
    ),
    "scatter dtype": (
        lambda m: m(X).scatter(0, m(IDX0), m(INTS)),
        RuntimeError,
        "Expected self.dtype to be equal to src.dtype",
    ),
    "index_add out of range": (
        lambda m: m(X).index_add(1, m([0, 5, 1]), m(SRC_COLS)),
        RuntimeError,
        "index_add_\\(\\): index 5 is out of bounds for dimension 1 with size 5",
    ),
    "index_add negative": (
        lambda m: m(X).index_add(1, m([0, -1, 1]), m(SRC_COLS)),
        RuntimeError,
        "index -1 is out of bounds",
    ),
    "index_add count": (
        lambda m: m(X).index_add(1, m([0, 1]), m(SRC_COLS)),
        RuntimeError,
        "Number of indices \\(2\\) should be equal to source.size\\(dim\\): \\(3\\)",
    ),
    "index_add 2-d index": (lambda m: m(X).index_add(1, m([[0, 1, 2]]), m(SRC_COLS)), IndexError, "vector"),
    "index_add float index": (
        lambda m: m(X).index_add(1, m([0.0, 1.0, 2.0]), m(SRC_COLS)),
        RuntimeError,
        "int32/int64",
    ),
    "index_add dtype": (lambda m: m(X).index_add(1, m([0, 1, 2]), m(INTS[:, :3])), RuntimeError, "same scalar type"),
    "index_add shape": (lambda m: m(X).index_add(1, m([0, 1, 2]), m(SRC)), RuntimeError, "must match self"),
    "index_copy out of range": (
        lambda m: m(X).index_copy(0, m([0, 4, 1]), m(SRC_ROWS)),
        IndexError,
        "index_copy_\\(\\): index 4 is out of bounds for dimension 0 with size 4",
    ),
    "index_fill out of range": (lambda m: m(X).index_fill(1, m([5]), 1.0), IndexError, "index 5 is out of bounds"),
    "index_fill 1-d value": (lambda m: m(X).index_fill(1, m([0]), m([1.0])), RuntimeError, "0-dimensional"),
    "index_reduce out of range": (
        lambda m: m(X).index_reduce(0, m([0, -1, 1]), m(SRC_ROWS), "amax"),
        IndexError,
        "index -1 is out of bounds",
    ),
    "index_reduce sum": (
        lambda m: m(X).index_reduce(0, m(SLOTS), m(SRC_ROWS), "sum"),
        RuntimeError,
        "Expected reduce to be one of prod, mean, amax or amin",
    ),
    "masked_select int mask": (lambda m: m(X).masked_select(m(INTS)), RuntimeError, "expected BoolTensor"),
    "masked_select shape": (
        lambda m: m(X).masked_select(m([True, False])),
        (RuntimeError, ValueError),
        "masked_select",
    ),
    "masked_scatter short source": (
        lambda m: m(X).masked_scatter(m(X > -10), m(SRC)),
        RuntimeError,
        "Number of elements of source < number of ones in mask",
    ),
    "masked_scatter int mask": (lambda m: m(X).masked_scatter(m(INTS), m(SRC)), RuntimeError, "boolean masks"),
    "masked_scatter dtype": (lambda m: m(X).masked_scatter(m(X > 0), m(INTS)), RuntimeError, "same dtypes"),
    "take out of range": (
        lambda m: m(X).take(m([0, 20])),
        IndexError,
        "out of range: tried to access index 20 on a tensor of 20 elements",
    ),
    "take negative": (lambda m: m(X).take(m([-21])), IndexError, "index -21"),
    "take int32": (lambda m: m(X).take(m(np.array([0], np.int32))), RuntimeError, "Expected a long tensor"),
    "put out of range": (lambda m: m(X).put(m([20]), m([1.0])), IndexError, "index 20 on a tensor of 20"),
    "put count": (lambda m: m(X).put(m([0, 1]), m([1.0, 2.0, 3.0])), IndexError, "same number of elements"),
    "put dtype": (lambda m: m(X).put(m([0]), m([1])), RuntimeError, "same"),
    "gather dims": (lambda m: m(X).gather(0, m([0])), RuntimeError, "same number of dimensions"),
    "index_select 0-d two": (lambda m: m(np.float32(5)).index_select(0, m([0, 0])), RuntimeError, "only 1 value"),
    "index_select 0-d out of range": (lambda m: m(np.float32(5)).index_select(0, m([1])), IndexError, "index 1"),
    "take_along_dim 0-d": (lambda m: m.lib.take_along_dim(m(np.float32(5)), m(0), 0), IndexError, "no dimensions"),
    "bool scatter_reduce mean": (
        lambda m: m(BOOLS).scatter_reduce(0, m([0]), m([True]), "mean"),
        NotImplementedError,
        "bool",
    ),
    "bool index_reduce": (lambda m: m(BOOLS).index_reduce(0, m([0]), m([True]), "amax"), NotImplementedError, "bool"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_torch(name):
    _raises(*ERRORS[name])


def test_failed_inplace_op_leaves_the_tensor_intact():
    x = vkml.tensor(X)
    with pytest.raises(RuntimeError):
        x.index_add_(0, vkml.tensor([0, 9, 1]), vkml.tensor(SRC_ROWS))
    assert x._version == 0
    np.testing.assert_array_equal(x.numpy(), X)


def test_inplace_variants_return_self_and_bump_the_version():
    x = vkml.tensor(X)
    for call in (
        lambda t: t.scatter_reduce_(0, vkml.tensor(IDX0), vkml.tensor(SRC), "sum"),
        lambda t: t.index_add_(0, vkml.tensor(SLOTS), vkml.tensor(SRC_ROWS)),
        lambda t: t.index_copy_(0, vkml.tensor(SLOTS), vkml.tensor(SRC_ROWS)),
        lambda t: t.index_fill_(0, vkml.tensor([1]), 0.5),
        lambda t: t.index_reduce_(0, vkml.tensor(SLOTS), vkml.tensor(SRC_ROWS), "amax"),
        lambda t: t.masked_scatter_(vkml.tensor(X > 0), vkml.tensor(SRC)),
        lambda t: t.put_(vkml.tensor([1]), vkml.tensor([0.5])),
    ):
        version = x._version
        assert call(x) is x
        assert x._version == version + 1


def test_inplace_through_a_view_reaches_the_base():
    for lib in (torch, vkml):
        x = lib.zeros(3, 4)
        x[1].index_add_(0, lib.tensor([0, 0, 3]), lib.tensor([1.0, 2.0, 3.0]))
        x[:, 2].put_(lib.tensor([2]), lib.tensor([5.0]))
        if lib is torch:
            want = x.numpy()
        else:
            np.testing.assert_array_equal(x.numpy(), want)
