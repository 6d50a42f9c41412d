"""Reductions: sum, mean, prod, amax, amin, argmax, argmin (dim, keepdim), against the contract and PyTorch.

sum/mean/prod are checked bit for bit against ``optest.tree_reduce`` (the contract's pairwise
tree in numpy) and only for closeness against PyTorch, whose summation order differs.
amax/amin follow the same tree with the contract's maximum (NaN wins, +0 above -0); argmax/
argmin equal PyTorch exactly (first NaN, else first extreme).
"""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optest import (
    F32_SPECIALS,
    LAYOUTS,
    assert_same_bits,
    f16_ulp_distance,
    first_extreme_index,
    from_torch,
    in_layout,
    lowered,
    maximum_ref,
    minimum_ref,
    random_floats,
    random_ints,
    reduced_last,
    to_torch,
    tree_reduce,
    vk,
)

import vkml
from vkml.ops.registry import REGISTRY

NAN, INF = float("nan"), float("inf")


def tree_oracle(name: str, x: np.ndarray, dim=None, keepdim: bool = False) -> np.ndarray:
    """The contract's result of reduction ``name`` over ``dim``, in numpy."""
    with np.errstate(all="ignore"):  # overflow to inf and NaN are part of what is checked
        return _tree_oracle(name, x, dim, keepdim)


def _tree_oracle(name: str, x: np.ndarray, dim, keepdim: bool) -> np.ndarray:
    flat, shape_result = reduced_last(x, dim, keepdim)
    n = flat.shape[-1]
    if name in ("sum", "prod"):
        acc = np.int64 if x.dtype.kind in "ib" else np.float32
        empty = 0 if name == "sum" else 1
        if n == 0:
            out = np.full(flat.shape[:-1], empty, acc)
        else:
            out = tree_reduce(flat.astype(acc), np.add if name == "sum" else np.multiply)
        return shape_result(out.astype(np.int64 if acc is np.int64 else x.dtype))
    if name == "mean":
        total = tree_reduce(flat.astype(np.float32), np.add) if n else np.zeros(flat.shape[:-1], np.float32)
        out = total / np.float32(n) if n else total * np.float32(NAN)
        return shape_result(out.astype(x.dtype))
    if name in ("amax", "amin"):
        return shape_result(tree_reduce(flat, maximum_ref if name == "amax" else minimum_ref))
    if name in ("argmax", "argmin"):
        return shape_result(first_extreme_index(flat, largest=name == "argmax"))
    raise ValueError(name)


def run(name: str, t: vkml.Tensor, dim=None, keepdim: bool = False) -> np.ndarray:
    fn = getattr(vkml, name)
    if dim is None and not keepdim:
        return fn(t).numpy()
    return fn(t, dim=dim, keepdim=keepdim).numpy()


def torch_run(name: str, x: np.ndarray, dim=None, keepdim: bool = False) -> np.ndarray:
    fn = getattr(torch, name)
    t = to_torch(x)
    if dim is None and not keepdim:
        return from_torch(fn(t))
    if name == "prod" and not isinstance(dim, int):  # torch.prod takes one dim: reduce them in turn
        dims = range(x.ndim) if dim is None else dim
        for d in sorted((d % x.ndim for d in dims), reverse=True):
            t = fn(t, dim=d, keepdim=keepdim)
        return from_torch(t)
    return from_torch(fn(t, dim=dim, keepdim=keepdim))


def assert_close_to_torch(got: np.ndarray, x: np.ndarray, want: np.ndarray, dim, what: str, prod=False) -> None:
    """Within both orders' error bounds (sums: γ_d·Σ|x| each; products: (n-1)·u relative each)."""
    flat, shape_result = reduced_last(np.abs(x.astype(np.float64)), dim, keepdim=got.ndim == x.ndim and x.ndim > 0)
    n = max(flat.shape[-1], 2)
    if prod:
        bound = 2 * n * 2.0**-24 * np.abs(want.astype(np.float64))
    else:
        bound = shape_result(2 * math.ceil(math.log2(n) + 3) * 2.0**-24 * flat.sum(axis=-1))
    if x.dtype == np.float16:  # each side rounds once to float16
        bound = bound + np.abs(want.astype(np.float64)) * 2.0**-10
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN positions differ from torch"
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite]), f"{what}: infinities differ from torch"
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))[finite]
    assert (diff <= np.broadcast_to(bound, got.shape)[finite]).all(), f"{what}: beyond the error bound of torch"


REDUCTIONS = ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin")


def test_every_registered_reduction_is_tested():
    registered = {op.name for op in REGISTRY.values() if op.kind == "reduce"}
    internal = {"shift_max"}  # softmax's shift: test_shift_max_* below and test_ops_composite.py
    assert registered <= set(REDUCTIONS) | internal, sorted(registered - set(REDUCTIONS) - internal)


DIMS = [None, 0, 1, -1, (0, 2), (2, 0), (0, 1, 2), -2]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_dims_and_keepdim_float32(name, keepdim):
    x = random_floats((5, 7, 9), seed=30)
    if name == "prod":
        x = (1 + x / 8).astype(np.float32)
    for dim in DIMS:
        if name in ("argmax", "argmin") and isinstance(dim, tuple):
            continue  # PyTorch's argmax takes one dim
        if dim is None and keepdim and name in ("argmax", "argmin"):
            continue
        got = run(name, vk(x), dim, keepdim)
        assert_same_bits(got, tree_oracle(name, x, dim, keepdim), f"{name}(dim={dim}, keepdim={keepdim})")
        want = torch_run(name, x, dim, keepdim)
        assert got.shape == want.shape, f"{name}(dim={dim}, keepdim={keepdim}) shape"
        if name in ("sum", "mean", "prod"):
            assert_close_to_torch(got, x, want, dim, f"{name}(dim={dim})", prod=name == "prod")
        else:
            assert_same_bits(got, want, f"{name}(dim={dim}, keepdim={keepdim}) against torch")


@pytest.mark.parametrize(
    "name, n",
    [(name, n) for name in ("sum", "prod", "amax", "argmin") for n in (1, 2, 3, 5, 8, 255, 256, 257, 1000, 4097)]
    + [("sum", 1 << 16), ("amax", 1 << 16)],  # one 2^16 case per family: several passes
)
def test_lengths_across_blocks_and_passes(name, n):
    """Lengths around the kernel's block (lanes × elements per lane) and several passes."""
    x = random_floats((n,), seed=n)
    if name == "prod":
        x = (1 + x / 64).astype(np.float32)
    got = run(name, vk(x))
    assert_same_bits(got, tree_oracle(name, x), f"{name} of {n} elements")
    if name in ("amax", "argmin"):
        assert_same_bits(got, torch_run(name, x), f"{name} of {n} elements against torch")
    else:
        assert_close_to_torch(got, x, torch_run(name, x), None, f"{name} of {n}", prod=name == "prod")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_layout_never_changes_the_bits(name, layout):
    x = random_floats((33, 40), seed=31)
    if name == "prod":
        x = (1 + x / 32).astype(np.float32)
    t, values = in_layout(x, layout)
    for dim in (None, 0, 1):
        got = run(name, t, dim)
        assert_same_bits(got, tree_oracle(name, values, dim), f"{name}(dim={dim}) of a {layout} view")


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "amax", "amin"])
def test_float16_accumulates_in_float32_and_rounds_once(name):
    x = (random_floats((6, 300), seed=32) * 4).astype(np.float16)
    if name == "prod":
        x = (1 + x / 64).astype(np.float16)
    for dim in (None, 1, 0):
        got = run(name, vk(x), dim)
        assert got.dtype == np.float16
        want = torch_run(name, x, dim)
        if name == "prod" and dim == 0:  # 6 elements: one after another in float16, as PyTorch's CPU
            assert_same_bits(got, want, "float16 prod(dim=0) against torch")
            continue
        assert_same_bits(got, tree_oracle(name, x, dim), f"float16 {name}(dim={dim})")
        if name in ("amax", "amin"):
            assert_same_bits(got, want, f"float16 {name}(dim={dim}) against torch")
        elif name == "prod":
            # PyTorch CPU multiplies float16 in float16, rounding every step (0.999 where the product
            # is 0.9977): compare with the float64 product instead, within one float16 step.
            flat, shape_result = reduced_last(x.astype(np.float64), dim)
            truth = shape_result(np.prod(flat, axis=-1)).astype(np.float16)
            assert f16_ulp_distance(got, truth).max() <= 1, f"float16 prod(dim={dim}) against the float64 product"
        else:
            assert_close_to_torch(got, x, want, dim, f"float16 {name}(dim={dim})")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin"])
def test_integers_exact_like_torch(name, dtype):
    if dtype is np.bool_:
        if name not in ("sum", "prod"):
            return
        x = np.random.default_rng(33).integers(0, 2, (7, 50)).astype(bool)
    elif name == "prod":
        x = random_ints((7, 50), dtype, seed=33, low=-3, high=4)
    else:
        x = random_ints((7, 50), dtype, seed=33, low=-(2**30), high=2**30)
        x[0, :4] = np.iinfo(dtype).max  # sums wrap
        x[1, :3] = np.iinfo(dtype).min
    for dim in (None, 0, 1, -1):
        if dim is None and name in ("argmax", "argmin"):
            got = run(name, vk(x))
        else:
            got = run(name, vk(x), dim)
        want = torch_run(name, x, dim)
        assert got.dtype == want.dtype, f"{name} of {np.dtype(dtype).name}: {got.dtype} vs torch {want.dtype}"
        assert_same_bits(got, want, f"{name}(dim={dim}) of {np.dtype(dtype).name}")


def test_nan_and_inf_semantics():
    rows = np.array(
        [
            [1.0, NAN, 2.0, NAN],
            [INF, -INF, 1.0, 2.0],
            [INF, 1.0, 2.0, 3.0],
            [3e38, 3e38, 1.0, 0.0],
            [INF, 0.0, 1.0, 1.0],
            [-0.0, -0.0, -0.0, -0.0],
            [2.0, 5.0, 5.0, -1.0],
            [-INF, -INF, -INF, -INF],
        ],
        np.float32,
    )
    for name in REDUCTIONS:
        got = run(name, vk(rows), 1)
        assert_same_bits(got, tree_oracle(name, rows, 1), f"{name} of special rows")
    sums = vkml.sum(vk(rows), 1).numpy()
    assert np.isnan(sums[0]) and np.isnan(sums[1]) and sums[2] == INF and sums[3] == INF
    assert np.isnan(vkml.prod(vk(rows), 1).numpy()[4])  # inf * 0
    assert vkml.argmax(vk(rows), 1).tolist()[:1] == [1] and vkml.argmin(vk(rows), 1).tolist()[:1] == [1]
    assert vkml.argmax(vk(rows), 1).tolist()[6] == 1  # ties: the first
    for name in ("argmax", "argmin"):
        assert_same_bits(run(name, vk(rows), 1), torch_run(name, rows, 1), f"{name} of special rows against torch")


def test_documented_divergences():
    # sum of -0.0 stays -0.0 (the identity never enters an addition); PyTorch gives +0.0.
    negzero = np.full(5, -0.0, np.float32)
    assert_same_bits(vkml.sum(vk(negzero)).numpy(), np.array(-0.0, np.float32), "sum of -0.0")
    assert_same_bits(vkml.mean(vk(negzero)).numpy(), np.array(-0.0, np.float32), "mean of -0.0")
    # amax/amin of mixed zeros: +0.0 / -0.0 whatever the order.
    for zeros in ([-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0, 0.0, -0.0]):
        z = np.array(zeros, np.float32)
        assert_same_bits(vkml.amax(vk(z)).numpy(), np.array(0.0, np.float32), f"amax{zeros}")
        assert_same_bits(vkml.amin(vk(z)).numpy(), np.array(-0.0, np.float32), f"amin{zeros}")
    # a sum of finite values whose partial sums overflow with both signs is NaN under the tree.
    assert math.isnan(vkml.sum(vk(np.array([3e38, 3e38, -3e38, -3e38], np.float32))).item())


def test_every_reduction_divergence_is_asserted():
    asserted = {"sum", "amax", "amin", "prod", "shift_max"}  # prod: the float16 test checks the one-rounding product
    with_divergence = {op.name for op in REGISTRY.values() if op.kind == "reduce" and op.divergence}
    assert with_divergence <= asserted, sorted(with_divergence - asserted)


@pytest.mark.parametrize("where", ["cpu", "vulkan"])
def test_amax_and_amin_pair_integer_keys_and_give_the_default_nan(where, gpu):
    """Float amax/amin combine int32 keys in float order (one integer compare and select a combine):
    the contract's values bit for bit, +0 above -0, and any NaN as the default NaN (float32; a float16
    result passes through the device's float16 -> float32 conversion, which on the H200 returns its
    canonical NaN, stored as 0x7FFF)."""
    from vkml.ir.core import Instr, walk

    device = gpu if where == "vulkan" else vkml.device("cpu")
    nan_a, nan_b = (np.array(b, np.uint32).view(np.float32) for b in (0x7FC00123, 0xFF800001))
    x = random_floats((6, 300), seed=62, scale=100.0)
    x[0, 7], x[1, 299], x[2, ::2] = nan_a, nan_b, np.float32(-0.0)
    x[2, 1::2], x[3] = np.float32(0.0), -np.float32(INF)
    x[4, 5], x[5, 0] = INF, -INF
    for dtype in (np.float32, np.float16):
        t = vkml.tensor(x.astype(dtype), device=device)
        for name, ref in (("amax", maximum_ref), ("amin", minimum_ref)):
            for dim in (1, 0, None):
                got = getattr(vkml, name)(t, dim=dim).numpy() if dim is not None else getattr(vkml, name)(t).numpy()
                flat, shape_result = reduced_last(x.astype(dtype), dim)
                want = np.atleast_1d(shape_result(tree_reduce(flat, ref)))
                got = np.atleast_1d(got)
                assert_same_bits(got, want, f"{name}(dim={dim}) {np.dtype(dtype).name} on {where}")
                if dtype is np.float32:
                    nan_bits = got[np.isnan(got)].view(np.uint32)
                    assert (nan_bits == 0xFFC00000).all() and nan_bits.size, f"{name}(dim={dim}) NaN bits"
    kernel = lowered(vkml.amax(vkml.tensor(x), dim=1))[0]
    compares = [i for i in walk(kernel.body) if isinstance(i, Instr) and i.op in ("lt", "gt", "le", "ge")]
    assert compares and all(i.args[0].dtype.is_int for i in compares), "amax's tree compares int32 keys"


def _shift_max_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """shift_max's combine: the left operand where it compares greater, else the right."""
    with np.errstate(invalid="ignore"):
        return np.where(a > b, a, b)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_shift_max_follows_the_tree_with_its_compare_and_select(dim):
    x = random_floats((9, 301), seed=60, scale=50.0)
    x[:, ::7] = np.resize(F32_SPECIALS, x[:, ::7].shape)
    flat, shape_result = reduced_last(x, dim)
    want = shape_result(tree_reduce(flat, _shift_max_ref))
    got = vkml.frontend.operators._shift_max(vk(x), dim).numpy()
    assert_same_bits(got, want, f"shift_max(dim={dim})")
    half = vkml.frontend.operators._shift_max(vk(x.astype(np.float16)), dim).numpy()
    assert_same_bits(half, shape_result(tree_reduce(flat.astype(np.float16), _shift_max_ref)), "float16")


def test_shift_max_is_amax_on_rows_without_nan_up_to_a_zeros_sign():
    x = random_floats((40, 33), seed=61, scale=8.0)
    x[::3, ::5] = np.float32(INF)
    x[1::3, ::4] = -np.float32(INF)
    x[2::5] = np.where(x[2::5] > 0, np.float32(0.0), np.float32(-0.0))  # rows of mixed zeros only
    got = vkml.frontend.operators._shift_max(vk(x), 1).numpy()
    want = vkml.amax(vk(x), 1).numpy()
    assert np.array_equal(got, want)  # == : +0 equals -0
    # The documented divergences: a zero of either sign, and a NaN that need not win.
    shift = vkml.frontend.operators._shift_max
    assert_same_bits(shift(vk(np.array([0.0, -0.0], np.float32))).numpy(), np.array(-0.0, np.float32), "[+0, -0]")
    assert shift(vk(np.array([NAN, 1.0], np.float32))).item() == 1.0  # amax: NaN
    row = np.array([2.0, NAN, -1.0, INF, NAN, 0.5], np.float32)
    got = shift(vk(row)).item()
    assert math.isnan(got) or got in row.tolist()  # always an element of the row


def test_empty_reductions():
    for shape, dim in (((0,), None), ((3, 0), 1), ((0, 4), 0), ((2, 0, 3), (1, 2))):
        x = np.zeros(shape, np.float32)
        for name in ("sum", "prod", "mean"):
            got = run(name, vk(x), dim)
            want = torch_run(name, x, dim)
            assert_same_bits(got, want, f"{name} over an empty dim of {shape}")
        # PyTorch's errors: RuntimeError without a dim, IndexError naming the empty dim
        with pytest.raises(RuntimeError if dim is None else IndexError, match="'amax': Expected reduction dim"):
            vkml.amax(vk(x), dim)
        with pytest.raises(IndexError, match=f"'argmin': Expected reduction dim {shape.index(0)} to have non-zero"):
            vkml.argmin(vk(x), shape.index(0))
    assert vkml.sum(vk(np.zeros((0,), np.int32))).numpy().dtype == np.int64
    # reducing a non-empty dim of a tensor that is empty elsewhere gives an empty result
    got = vkml.amax(vk(np.zeros((0, 3), np.float32)), 1).numpy()
    assert got.shape == (0,)


def test_zero_dim_and_size_one_dims():
    x = np.array(2.5, np.float32)
    for name in ("sum", "prod", "amax", "amin", "mean"):
        assert_same_bits(run(name, vk(x)), torch_run(name, x), f"{name} of a 0-dim tensor")
    assert vkml.argmax(vk(x)).item() == 0
    y = random_floats((1, 5, 1), seed=34)
    for name in REDUCTIONS:
        for dim in (0, 2, -2):
            got = run(name, vk(y), dim, True)
            assert_same_bits(got, tree_oracle(name, y, dim, True), f"{name}(dim={dim}) of (1, 5, 1)")
            assert got.shape == torch_run(name, y, dim, True).shape


def test_max_min_with_dim_return_values_and_indices():
    x = random_floats((4, 6), seed=35)
    x[2, 3] = NAN
    values, indices = vkml.max(vk(x), 1)
    want = torch.max(to_torch(x), 1)
    assert_same_bits(values.numpy(), from_torch(want.values), "max values")
    assert_same_bits(indices.numpy(), from_torch(want.indices), "max indices")
    values, indices = vkml.min(vk(x), 0, keepdim=True)
    want = torch.min(to_torch(x), 0, keepdim=True)
    assert_same_bits(values.numpy(), from_torch(want.values), "min values")
    assert_same_bits(indices.numpy(), from_torch(want.indices), "min indices")
    assert_same_bits(vkml.max(vk(x)).numpy(), from_torch(torch.max(to_torch(x))), "max of all")


def test_fused_producers_and_consumers_keep_the_tree():
    x = random_floats((16, 70), seed=36)
    t = vk(x)
    got = ((t * 2 + 1).sum(1) * 3).numpy()
    inner = (x * np.float32(2) + np.float32(1)).astype(np.float32)
    want = (tree_oracle("sum", inner, 1) * np.float32(3)).astype(np.float32)
    assert_same_bits(got, want, "(x*2+1).sum(1)*3")
    got = (t - t.amax(1, keepdim=True)).numpy()
    assert_same_bits(got, x - tree_oracle("amax", x, 1, True), "x - amax(x)")


def test_specials_in_every_position():
    x = np.tile(F32_SPECIALS, (3, 1))
    for name in REDUCTIONS:
        assert_same_bits(run(name, vk(x), 1), tree_oracle(name, x, 1), f"{name} over the special values")


def test_dtype_and_dim_errors():
    with pytest.raises(vkml.DTypeError, match="'mean'.*int64"):
        vkml.mean(vkml.arange(4))
    with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):  # amax takes bool, as PyTorch
        vkml.argmax(vk(np.array([True, False])))
    with pytest.raises(
        IndexError, match=r"'sum': Dimension out of range \(expected to be in range of \[-2, 1\], but got 3\)"
    ):
        vkml.sum(vkml.ones(2, 2), 3)
    with pytest.raises(RuntimeError, match="'sum': dim 0 appears multiple times"):
        vkml.sum(vkml.ones(2, 2), (0, 0))


@st.composite
def _reduce_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9))
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    elements = st.floats(width=np.dtype(dtype).itemsize * 8, allow_nan=True, allow_infinity=True)
    x = draw(hnp.arrays(dtype, shape, elements=elements))
    dims = draw(
        st.lists(
            st.integers(-len(shape), len(shape) - 1),
            min_size=1,
            max_size=len(shape),
            unique_by=lambda d: d % len(shape),
        )
    )
    return x, (dims[0] if len(dims) == 1 else tuple(dims)), draw(st.booleans()), draw(st.booleans())


@given(case=_reduce_case(), name=st.sampled_from(["sum", "prod", "mean", "amax", "amin", "argmax", "argmin"]))
def test_random_reductions_follow_the_tree(case, name):
    x, dim, keepdim, flipped = case
    if name in ("argmax", "argmin") and not isinstance(dim, int):
        dim = dim[0]
    t = vk(np.ascontiguousarray(np.flip(x))).flip(tuple(range(x.ndim))) if flipped else vk(x)
    got = run(name, t, dim, keepdim)
    assert_same_bits(
        got, tree_oracle(name, x, dim, keepdim), f"{name}(dim={dim}, keepdim={keepdim}) of {x.dtype}{x.shape}"
    )
