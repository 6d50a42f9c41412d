"""Composite ops: softmax, log_softmax, logsumexp, matmul (@) and the vkml.nn.functional wrappers.

matmul is checked bit for bit against its stated order (each float output adds its float32
products in ascending k, starting from -0.0; docs/ops/matmul.md) and for closeness against
PyTorch; softmax-like ops against the float64 result within a bound derived from their steps,
with PyTorch's NaN/inf rules exactly.
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
    assert_same_bits,
    assert_ulp,
    f16_ulp_distance,
    from_torch,
    in_layout,
    random_floats,
    random_ints,
    to_torch,
    ulp_error,
    vk,
)

import vkml
import vkml.nn.functional as VF

NAN, INF = float("nan"), float("inf")


def _softmax64(x: np.ndarray, dim: int) -> np.ndarray:
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)


def _logsumexp64(x: np.ndarray, dim) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=dim, keepdims=True)
    return (np.log(np.exp(x - m).sum(axis=dim, keepdims=True)) + m).squeeze(axis=dim)


def _softmax_bound(x: np.ndarray, dim: int) -> np.ndarray:
    """ulps (functions.softmax's docstring): x - max rounds (|x - max| ulp of exp's argument), exp (1), the
    tree sum (log2 n), the product by the rounded reciprocal (1.5; a correctly rounded division would be 0.5)."""
    spread = np.abs(x.astype(np.float64) - x.max(axis=dim, keepdims=True))
    return 3 + spread * 1.0 + math.ceil(math.log2(max(x.shape[dim], 2)))


def _adversarial_rows(n: int) -> np.ndarray:
    """Rows that stress the quotient: ties, one dominant term, results near and in the subnormal range,
    sums just below and above powers of two, -inf entries, and wide random spreads."""
    g = np.random.default_rng(54)
    rows = [
        np.zeros(n),  # S = n exactly: every result is fl(1/n) * 1
        np.where(np.arange(n) == 3, 0.0, -30.0),  # S = 1 + tiny
        np.where(np.arange(n) % 2 == 0, 0.0, -90.0),  # subnormal e alongside ones
        np.linspace(-103.0, 0.0, n),  # e from subnormal to 1
        np.linspace(-88.0, -86.0, n) * np.where(np.arange(n) == 0, 0.0, 1.0),  # e near the normal limit
        np.log(np.arange(1, n + 1)),  # e = k/n: a spread of quotients
        np.where(np.arange(n) < n // 2, -np.inf, g.standard_normal(n)),
        g.standard_normal(n) * 30.0,
        g.standard_normal(n) * 0.01 + 1e4,  # large x: x - max is exact, its spread small
        np.log(np.full(n, 1.0 - 2.0**-20)) * np.arange(n),  # sum just under a power of two for n = 2^k
    ]
    return np.stack(rows).astype(np.float32)


@pytest.mark.parametrize("n", [7, 64, 1000, 5000])
def test_softmax_is_the_product_by_the_rows_rounded_reciprocal(n):
    """Bit for bit fl(e * fl(1/S)) from vkml's own e = exp(x - max) and tree sum S, and never more than one
    float from the correctly rounded quotient e / S (functions.softmax's bound), on random and adversarial rows."""
    x = np.concatenate([_adversarial_rows(n), random_floats((6, n), seed=55, scale=8.0)])
    t = vk(x)
    e = vkml.exp(t - vkml.amax(t, 1, keepdim=True))
    e_np, s_np = e.numpy(), vkml.sum(e, 1, keepdim=True).numpy()
    got = vkml.softmax(t, 1).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        assert_same_bits(got, e_np * (np.float32(1.0) / s_np), f"softmax over {n} = e * (1/S)")
        divided = e_np / s_np
    ordered = [
        np.where(v.view(np.int32) < 0, -(v.view(np.int32) & 0x7FFFFFFF), v.view(np.int32)) for v in (got, divided)
    ]
    finite = np.isfinite(divided)
    assert np.abs(ordered[0] - ordered[1].astype(np.int64))[finite].max() <= 1
    with np.errstate(invalid="ignore"):
        quotient64 = e_np.astype(np.float64) / s_np.astype(np.float64)
    assert ulp_error(got, quotient64)[finite].max() <= 1.5  # fl(1/S) within 2^-24 relative, then one rounding
    beyond = ulp_error(got, _softmax64(x, 1)) > _softmax_bound(x, 1)
    assert not beyond.any(), f"softmax over {n} beyond its bound at {np.argwhere(beyond)[:3].tolist()}"
    assert (s_np[np.isfinite(s_np)] >= 1.0).all()  # the docstring's reason 1/S never overflows


SPECIAL_ROWS = np.array(
    [
        [0.0, -INF, 1.0, 0.0],
        [-INF, -INF, -INF, -INF],
        [1.0, INF, 0.0, 2.0],
        [1.0, NAN, 0.0, 2.0],
        [1e30, 1e30, -1e30, 0.0],
        [INF, -INF, 0.0, 0.0],
        [-0.0, 0.0, -0.0, 0.0],
        [88.0, -88.0, 100.0, -100.0],
    ],
    np.float32,
)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_family_random_within_bound(op, dim):
    x = random_floats((12, 37), seed=50, scale=4.0)
    got = getattr(vkml, op)(vk(x), dim).numpy()
    ref = _softmax64(x, dim)
    if op == "softmax":
        beyond = ulp_error(got, ref) > _softmax_bound(x, dim)
        assert not beyond.any(), f"softmax(dim={dim}) beyond its bound at {np.argwhere(beyond)[:3].tolist()}"
        np.testing.assert_allclose(got.sum(axis=dim), 1.0, rtol=1e-5)
    else:
        # log_softmax = (x - max) - log(sum): absolute error ~ ulp(x - max) + ulp(log sum), relative to its magnitude
        with np.errstate(divide="ignore"):
            want = np.log(ref)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    torch_out = from_torch(getattr(torch, op)(to_torch(x), dim))
    np.testing.assert_allclose(got, torch_out, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_family_special_rows_like_torch(op):
    got = getattr(vkml, op)(vk(SPECIAL_ROWS), 1).numpy()
    want = from_torch(getattr(torch, op)(to_torch(SPECIAL_ROWS), 1))
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{op}: NaN rows differ from torch\n{got}\n{want}"
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(got[np.isinf(got)], want[np.isinf(want)])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-6, atol=1e-30)
    if op == "softmax":
        assert got[0].tolist()[1] == 0.0 and np.isnan(got[1]).all() and np.isnan(got[2]).all()
        assert got[4].tolist()[:3] == [0.5, 0.5, 0.0]
    else:
        assert got[0, 1] == -INF and np.isnan(got[1]).all()


def _shift_rows() -> np.ndarray:
    """Rows where shift_max and amax differ (a zero's sign, a NaN that does not win) and their neighbours."""
    rows = [
        [0.0, -0.0, -1.0, -2.0],
        [-0.0, 0.0, -0.0, 0.0],
        [-0.0, -3.0, -INF, -1.0],
        [0.0, -0.0, -INF, -INF],
        [NAN, 1.0, 0.0, 2.0],
        [1.0, 2.0, NAN, -NAN],
        [INF, NAN, 0.0, 1.0],
        [-INF, -INF, -INF, -INF],
        [-INF, NAN, -INF, -INF],
        [INF, INF, 1.0, -INF],
        [-0.0, -0.0, -0.0, -0.0],
        [3.0, 3.0, -0.0, 0.0],
    ]
    return np.array(rows, np.float32)


@pytest.mark.parametrize("where", ["cpu", "vulkan"])
def test_softmax_family_has_the_bits_of_the_exact_max(where, gpu):
    """softmax, log_softmax and logsumexp shift by shift_max (two instructions a combine, not amax's twelve); with
    amax in its place every result has the same bits, on rows where the two maxima differ (functions._shift_by_max)."""
    x = np.concatenate([_shift_rows(), random_floats((5, 4), seed=56, scale=3.0)])
    device = gpu if where == "vulkan" else vkml.device("cpu")
    for dim in (1, 0):
        t = vkml.tensor(x, device=device)
        shift, exact = vkml.frontend.operators._shift_max(t, dim, keepdim=True), vkml.amax(t, dim, keepdim=True)
        if dim == 1:  # the rows really do tell the two maxima apart
            s, e = shift.numpy()[:12, 0], exact.numpy()[:12, 0]
            assert (np.signbit(s) != np.signbit(e)).any() and (np.isnan(e) & ~np.isnan(s)).any()
        e = vkml.exp(t - exact)
        total = vkml.sum(e, dim, keepdim=True)
        m = vkml.where(vkml.abs(exact) == INF, 0.0, exact)
        want = {
            "softmax": e * vkml.frontend.operators.div(1.0, total),
            "log_softmax": (t - exact) - vkml.log(total),
            "logsumexp": vkml.log(vkml.sum(vkml.exp(t - m), dim, keepdim=True)) + m,
        }
        for op, expected in want.items():
            got = getattr(vkml, op)(t, dim, **({"keepdim": True} if op == "logsumexp" else {}))
            assert_same_bits(got.numpy(), expected.numpy(), f"{op}(dim={dim}) on {where}")


def test_logsumexp_rules_and_dims():
    got = vkml.logsumexp(vk(SPECIAL_ROWS), 1).numpy()
    want = from_torch(torch.logsumexp(to_torch(SPECIAL_ROWS), 1))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert got[1] == -INF and got[2] == INF and got[5] == INF  # all -inf; containing +inf; (inf, -inf)
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-6)
    x = random_floats((5, 6, 7), seed=51)
    for dim, keepdim in ((0, False), (-1, True), ((0, 2), False), ((1, 2), True)):
        got = vkml.logsumexp(vk(x), dim, keepdim=keepdim).numpy()
        want = from_torch(torch.logsumexp(to_torch(x), dim, keepdim=keepdim))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-6)
        ref = _logsumexp64(x, dim)
        np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=2e-6)
    empty = vkml.logsumexp(vk(np.zeros((2, 0), np.float32)), 1).numpy()
    assert_same_bits(empty, np.array([-INF, -INF], np.float32), "logsumexp over an empty dim")


@pytest.mark.parametrize("op", ["softmax", "logsumexp"])
def test_softmax_family_float16_rounds_once(op):
    x = (random_floats((6, 40), seed=52) * 2).astype(np.float16)
    got = getattr(vkml, op)(vk(x), 1).numpy()
    assert got.dtype == np.float16
    wide = getattr(vkml, op)(vk(x.astype(np.float32)), 1).numpy()
    assert_same_bits(got, wide.astype(np.float16), f"float16 {op} = float32 {op} rounded once")
    # PyTorch's own float16 log_softmax loses small results (0.0 for -0.000424): compare with its
    # float32 result on the same inputs, rounded to float16.
    want = from_torch(getattr(torch, op)(to_torch(x.astype(np.float32)), 1)).astype(np.float16)
    assert f16_ulp_distance(got, want).max() <= 1, f"float16 {op} against torch's float32 result"


def test_float16_log_softmax_over_the_last_dim_rounds_as_pytorchs_cpu_kernel():
    # PyTorch's CPU kernel keeps the row's sum of exponentials and its log in float16 (small results are
    # lost: 0.0 for -0.000424, where its CUDA kernel rounds once); vkml gives the CPU kernel's bits, over
    # the last dim (docs/dtypes.md, "Where PyTorch's half-precision kernels round"). Over another dim
    # PyTorch rounds once, as vkml does.
    x = (random_floats((6, 40), seed=52) * 2).astype(np.float16)
    got = vkml.log_softmax(vk(x), 1).numpy()
    assert_same_bits(got, from_torch(torch.log_softmax(to_torch(x), 1)), "float16 log_softmax over the last dim")
    over_rows = vkml.log_softmax(vk(x), 0).numpy()
    wide = vkml.log_softmax(vk(x.astype(np.float32)), 0).numpy()
    assert_same_bits(over_rows, wide.astype(np.float16), "float16 log_softmax over dim 0 = float32 rounded once")


def test_softmax_family_on_views_and_errors():
    x = random_floats((9, 16), seed=53)
    for layout in ("transposed", "strided", "flipped"):
        t, values = in_layout(x, layout)
        assert_same_bits(vkml.softmax(t, 1).numpy(), vkml.softmax(vk(values), 1).numpy(), f"softmax of a {layout} view")
    with pytest.raises(vkml.DTypeError, match="floating point"):
        vkml.softmax(vkml.arange(4), 0)
    with pytest.raises(IndexError, match=r"'softmax': Dimension out of range .*but got 2"):
        vkml.softmax(vk(x), 2)


# ---------------------------------------------------------------------- matmul


def matmul_oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each output: the products added in ascending k from -0.0, in float32 (int64 for ints)."""
    out_dtype = np.result_type(a, b)
    acc = np.float32 if out_dtype.kind == "f" else out_dtype
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    products = a2.astype(acc)[..., :, None, :] * np.swapaxes(b2.astype(acc), -1, -2)[..., None, :, :]
    if products.shape[-1] == 0:
        out = np.zeros(products.shape[:-1], out_dtype)
    else:
        out = np.full(products.shape[:-1], -0.0 if acc is np.float32 else 0, acc)
        for k in range(products.shape[-1]):
            out = out + products[..., k]
        out = out.astype(out_dtype)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


SHAPES = [
    ((5,), (5,)),
    ((3, 5), (5,)),
    ((5,), (5, 4)),
    ((3, 5), (5, 4)),
    ((1, 1), (1, 1)),
    ((2, 3, 70), (70, 3)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (2, 4, 3)),
    ((3, 0), (0, 2)),
    ((0, 3), (3, 2)),
]


@pytest.mark.parametrize("shape_a, shape_b", SHAPES)
def test_matmul_shapes_bits_and_torch(shape_a, shape_b):
    a = random_floats(shape_a, seed=54)
    b = random_floats(shape_b, seed=55)
    got = (vk(a) @ vk(b)).numpy()
    want = from_torch(torch.matmul(to_torch(a), to_torch(b)))
    assert got.shape == want.shape
    assert_same_bits(got, matmul_oracle(a, b).reshape(want.shape), f"{shape_a} @ {shape_b}")
    k = shape_a[-1]
    magnitude = from_torch(torch.abs(to_torch(a)) @ torch.abs(to_torch(b)))
    bound = 2 * (k + 1) * 2.0**-24 * magnitude  # both sides within γ_k Σ|a||b| of the exact result
    assert np.all(np.abs(got - want) <= bound), f"{shape_a} @ {shape_b} against torch"


def test_matmul_same_tensor_on_both_sides():
    # Regression: a memo keyed by id() of temporaries returned wrong values for x @ x.
    x = random_floats((6, 6), seed=56)
    t = vk(x)
    assert_same_bits((t @ t).numpy(), matmul_oracle(x, x), "x @ x")
    assert_same_bits((t @ t.T).numpy(), matmul_oracle(x, x.T), "x @ x.T")
    y = t * 2
    assert_same_bits((y @ y).numpy(), matmul_oracle(x * 2, x * 2), "y @ y of a lazy y")
    v = vk(x[0])
    assert_same_bits((v @ v).numpy(), matmul_oracle(x[0], x[0]), "v @ v")


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int64])
def test_matmul_dtypes(dtype):
    if dtype is np.float16:
        a, b = (random_floats((4, 33), seed=57) * 4).astype(dtype), (random_floats((33, 5), seed=58) * 4).astype(dtype)
    else:
        a, b = random_ints((4, 33), dtype, seed=57), random_ints((33, 5), dtype, seed=58)
    got = (vk(a) @ vk(b)).numpy()
    want = from_torch(to_torch(a) @ to_torch(b))
    assert got.dtype == want.dtype
    assert_same_bits(got, matmul_oracle(a, b), f"{np.dtype(dtype).name} matmul against the tree")
    if dtype is np.float16:
        assert f16_ulp_distance(got, want).max() <= 1
    else:
        assert_same_bits(got, want, f"{np.dtype(dtype).name} matmul against torch")
    with pytest.raises(RuntimeError, match="same dtype"):  # as PyTorch: two dtypes never promote
        vk(a) @ vk(b.astype(np.float32))


@pytest.mark.parametrize("layout", ["transposed", "strided", "flipped", "expanded"])
def test_matmul_of_views(layout):
    a = random_floats((8, 8), seed=59)
    b = random_floats((8, 8), seed=60)
    ta, va = in_layout(a, layout)
    got = (ta @ vk(b)).numpy()
    assert_same_bits(got, matmul_oracle(va, b), f"{layout} @ b")
    got = (vk(b) @ ta).numpy()
    assert_same_bits(got, matmul_oracle(b, va), f"b @ {layout}")


def test_matmul_special_values_like_torch():
    a = np.array([[NAN, 1.0], [INF, 1.0], [INF, -INF], [0.0, 1.0]], np.float32)
    b = np.array([[1.0, 0.0], [1.0, 1.0]], np.float32)
    got = (vk(a) @ vk(b)).numpy()
    want = from_torch(to_torch(a) @ to_torch(b))
    assert_same_bits(got, want, "matmul with NaN and inf")


def test_matmul_errors():
    with pytest.raises(vkml.ShapeError, match=r"'matmul': mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x2\)"):
        vkml.ones(2, 3) @ vkml.ones(4, 2)
    with pytest.raises(vkml.ShapeError, match="'matmul'.*at least 1 dim"):
        vkml.matmul(vkml.tensor(1.0), vkml.ones(2))
    with pytest.raises(vkml.DTypeError, match="'matmul'.*bool"):
        vk(np.ones((2, 2), bool)) @ vk(np.ones((2, 2), bool))
    with pytest.raises(vkml.ShapeError, match="'matmul'"):
        vkml.ones(2, 2, 3) @ vkml.ones(3, 3, 2)


def test_mixed_devices_raise_at_the_op():
    gpu = vkml.device("vulkan:0")
    a = vkml.ones(2, 2)
    b = vkml.ones(2, 2, device=gpu)
    with pytest.raises(vkml.DeviceError, match=r"'matmul' operands are on different devices: cpu and vulkan:0"):
        a @ b
    with pytest.raises(vkml.DeviceError, match="'add'.*cpu.*vulkan:0"):
        a + b
    with pytest.raises(vkml.DeviceError, match="'cat'"):
        vkml.cat([a, b])


# ---------------------------------------------------------------------- vkml.nn.functional


def test_nn_functional_wrappers_are_the_ops():
    x = random_floats((4, 9), seed=61)
    t = vk(x)
    assert_same_bits(VF.relu(t).numpy(), vkml.relu(t).numpy(), "F.relu")
    assert_same_bits(VF.softmax(t, 1).numpy(), vkml.softmax(t, 1).numpy(), "F.softmax")
    assert_same_bits(VF.log_softmax(t, 0).numpy(), vkml.log_softmax(t, 0).numpy(), "F.log_softmax")
    assert_same_bits(VF.gelu(t).numpy(), VF.gelu(t, approximate="none").numpy(), "F.gelu default")
    assert_same_bits(VF.softplus(t).numpy(), VF.softplus(t, beta=1, threshold=20).numpy(), "F.softplus default")
    assert_ulp(VF.sigmoid(t).numpy(), 1 / (1 + np.exp(-x.astype(np.float64))), 2, "F.sigmoid")
    with pytest.raises(ValueError, match="beta"):
        VF.softplus(t, beta=0)


@st.composite
def _matmul_case(draw):
    m, k, n = draw(st.integers(1, 5)), draw(st.integers(0, 9)), draw(st.integers(1, 5))
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    batch_b = tuple(draw(st.sampled_from([s, 1])) for s in batch)[draw(st.integers(0, len(batch))) :]
    shape_a = draw(st.sampled_from([(k,), batch + (m, k)]))
    shape_b = draw(st.sampled_from([(k,), batch_b + (k, n)]))
    elements = st.floats(-1e3, 1e3, width=32)
    return draw(hnp.arrays(np.float32, shape_a, elements=elements)), draw(
        hnp.arrays(np.float32, shape_b, elements=elements)
    )


@given(case=_matmul_case())
def test_random_matmul_shapes_follow_the_order_and_torch_shapes(case):
    a, b = case
    got = (vk(a) @ vk(b)).numpy()
    want = from_torch(to_torch(a) @ to_torch(b))
    assert got.shape == want.shape, f"{a.shape} @ {b.shape}"
    assert_same_bits(got, matmul_oracle(a, b).reshape(want.shape), f"{a.shape} @ {b.shape}")


def test_matmul_of_negative_zero_products_is_negative_zero():
    # Documented divergence (docs/ops/matmul.md): PyTorch's BLAS starts from +0.0 and gives +0.0.
    a = np.array([[-1.0, 0.0], [1.0, 0.0]], np.float32)
    b = np.array([[0.0], [-2.0]], np.float32)
    assert_same_bits((vk(a) @ vk(b)).numpy(), np.array([[-0.0], [0.0]], np.float32), "-0.0 products")
