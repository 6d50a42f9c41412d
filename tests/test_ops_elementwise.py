"""Elementwise ops with exact results, checked bit for bit against PyTorch (CPU).

Exact here means what the registry says: add/sub/mul/neg/abs/maximum/minimum/clamp/relu/sign,
comparisons and where are primitives; div, sqrt and rsqrt are correctly rounded. Inputs
cover NaN, ±inf, ±0, subnormals, empty and size-1 dims and non-contiguous views. Where the
registry documents a divergence from PyTorch, the torch comparison leaves that input out
and ``test_documented_values`` asserts vkml's value instead.
"""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optest import (
    F16_SPECIALS,
    F32_SPECIALS,
    INT_SPECIALS,
    LAYOUTS,
    assert_same_bits,
    assert_ulp,
    from_torch,
    in_layout,
    pairs_grid,
    random_floats,
    random_ints,
    to_torch,
    vk,
)

import vkml
from vkml.ops.registry import REGISTRY

NAN, INF = float("nan"), float("inf")

BINARY = {
    "add": (vkml.add, torch.add),
    "sub": (vkml.sub, torch.sub),
    "mul": (vkml.mul, torch.mul),
    "div": (vkml.div, torch.div),
    "maximum": (vkml.maximum, torch.maximum),
    "minimum": (vkml.minimum, torch.minimum),
    # max pooling's fold step (no public name): torch's pooling rule written out with torch.where
    "max_pool_step": (
        lambda a, b: vkml.frontend.operators._elementwise("max_pool_step", a, b),
        lambda a, b: torch.where((b > a) | torch.isnan(b), b, a),
    ),
    "eq": (vkml.eq, torch.eq),
    "ne": (vkml.ne, torch.ne),
    "lt": (vkml.lt, torch.lt),
    "le": (vkml.le, torch.le),
    "gt": (vkml.gt, torch.gt),
    "ge": (vkml.ge, torch.ge),
}
UNARY = {
    "neg": (vkml.neg, torch.neg),
    "abs": (vkml.abs, torch.abs),
    "sign": (vkml.sign, torch.sign),
    "relu": (vkml.relu, torch.relu),
    "sqrt": (vkml.sqrt, torch.sqrt),
    "rsqrt": (vkml.rsqrt, torch.rsqrt),
}
INT_BINARY = ("add", "sub", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge")
INT_UNARY = ("neg", "abs", "sign", "relu")


def _zero_sign_differs(a, b):
    """Inputs where maximum/minimum of two zeros of opposite sign: the documented divergence."""
    return (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))


# Inputs where the registry documents a divergence from PyTorch: left out of torch comparisons.
DIVERGES = {
    "maximum": _zero_sign_differs,
    "minimum": _zero_sign_differs,
    "sign": lambda a: np.isnan(a),
}


def run_binary(name, a, b):
    vk_fn, torch_fn = BINARY[name]
    got = vk_fn(vk(a), vk(b)).numpy()
    want = from_torch(torch_fn(to_torch(a), to_torch(b)))
    keep = ~DIVERGES[name](a, b) if name in DIVERGES else np.ones(got.shape, bool)
    return got, want, keep


def _sqrt_oracle(a):
    # numpy's float32 sqrt is correctly rounded; PyTorch's (AVX512 build) is not: see the test below.
    with np.errstate(invalid="ignore"):
        return np.sqrt(a.astype(np.float32)).astype(a.dtype)


# Ops whose oracle is not torch: the correctly rounded result.
ORACLE = {"sqrt": _sqrt_oracle}


def run_unary(name, a):
    vk_fn, torch_fn = UNARY[name]
    got = vk_fn(vk(a)).numpy()
    want = ORACLE[name](a) if name in ORACLE else from_torch(torch_fn(to_torch(a)))
    keep = ~DIVERGES[name](a) if name in DIVERGES else np.ones(got.shape, bool)
    return got, want, keep


def test_every_elementwise_op_is_tested_somewhere():
    from test_ops_transcendental import TRANSCENDENTAL

    tested = set(BINARY) | set(UNARY) | set(TRANSCENDENTAL) | {"clamp", "clamp_min", "clamp_max", "where", "pow"}
    tested |= {"logical_and", "logical_or", "logical_not"}
    from test_ops_elementwise_more import NEW_OPS

    tested |= NEW_OPS  # issue 17's ops: tests/test_ops_elementwise_more.py checks each
    from test_ops_trig import TRIG_OPS

    tested |= TRIG_OPS  # sin ... erfinv: tests/test_ops_trig.py checks each
    from test_special import SPECIAL_OPS_TESTED

    tested |= SPECIAL_OPS_TESTED  # torch.special's ndtr ... legendre_polynomial_p: tests/test_special.py
    registered = {op.name for op in REGISTRY.values() if op.kind == "elementwise"}
    assert registered <= tested, f"elementwise ops without a test: {sorted(registered - tested)}"


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_special_grid_float32(name):
    a, b = pairs_grid(F32_SPECIALS, F32_SPECIALS)
    got, want, keep = run_binary(name, a, b)
    assert_same_bits(got[keep], want[keep], f"{name} over all pairs of special values")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_specials_float32(name):
    got, want, keep = run_unary(name, F32_SPECIALS)
    assert_same_bits(got[keep], want[keep], f"{name} of special values")


def test_div_and_sqrt_random_bits_including_subnormals():
    g = np.random.default_rng(1)
    a = (g.standard_normal(3000) * np.exp2(g.integers(-140, 120, 3000))).astype(np.float32)
    b = (g.standard_normal(3000) * np.exp2(g.integers(-140, 120, 3000))).astype(np.float32)
    got, want, _ = run_binary("div", a, b)
    assert_same_bits(got, want, "div over wide exponents")
    for name in ("sqrt", "rsqrt"):
        got, want, _ = run_unary(name, np.abs(a))  # sqrt: numpy's bits; rsqrt: torch's (1 / sqrt, both rounded)
        assert_same_bits(got, want, f"{name} over wide exponents")


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_division_by_a_power_of_two_is_a_product_with_the_same_bits(device):
    """``x / 2^k`` becomes ``x * 2^-k`` (functions.div): same bits as the exact division, subnormals included."""
    dev = vkml.device("cpu") if device == "cpu" else vkml.best_device()
    g = np.random.default_rng(21)
    a = (g.standard_normal(2000) * np.exp2(g.integers(-149, 128, 2000))).astype(np.float32)
    a = np.concatenate([a, F32_SPECIALS])
    x = vkml.tensor(a, device=dev)
    for c in (2, 8192, 0.5, -0.25, 2.0**126, 2.0**-126, -(2.0**40)):
        product = x / c
        assert product.node.arg.op.name == "mul", c
        with np.errstate(all="ignore"):
            want = a / np.float32(c)  # IEEE division, correctly rounded
        assert_same_bits(product.numpy(), want, f"x / {c}")
    for c in (3, 2.0**127, 2.0**-127, 0.0):  # not powers of two, or a reciprocal out of the normal range
        assert (x / c).node.arg.op.name == "div", c
    with np.errstate(all="ignore"):
        h = a.astype(np.float16)
        want = (h.astype(np.float32) / 4).astype(np.float16)
    half = vkml.tensor(h, device=dev) / 4  # float16: the product in float32, rounded once
    assert_same_bits(half.numpy(), want, "f16 / 4")


def test_sqrt_is_correctly_rounded_and_within_one_ulp_of_torch():
    g = np.random.default_rng(14)
    a = np.abs(g.standard_normal(20000) * np.exp2(g.integers(-140, 120, 20000))).astype(np.float32)
    got = vkml.sqrt(vk(a)).numpy()
    assert_ulp(got, np.sqrt(a.astype(np.float64)), 0.5, "sqrt is correctly rounded")
    # PyTorch CPU's float32 sqrt (AVX512 build) is off by one ulp on ~0.7% of inputs: not bit-comparable.
    assert_ulp(from_torch(torch.sqrt(to_torch(a))), got.astype(np.float64), 1, "torch.sqrt against vkml.sqrt")


def test_rsqrt_within_one_and_a_half_ulp():
    # Two correct roundings (sqrt, then 1/x) — what PyTorch computes — stay within 1.5 ulp of 1/sqrt(x).
    g = np.random.default_rng(15)
    a = np.abs(g.standard_normal(20000) * np.exp2(g.integers(-140, 120, 20000))).astype(np.float32)
    got = vkml.rsqrt(vk(a)).numpy()
    with np.errstate(divide="ignore"):
        assert_ulp(got, 1.0 / np.sqrt(a.astype(np.float64)), 1.5, "rsqrt")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(BINARY) + sorted(UNARY))
def test_views_float32(name, layout):
    x = random_floats((12, 20), seed=2)
    y = random_floats((12, 20), seed=3)
    tx, x_vals = in_layout(x, layout)
    other_layout = LAYOUTS[(LAYOUTS.index(layout) + 1) % len(LAYOUTS)]
    ty, y_vals = in_layout(y, other_layout)
    if name in BINARY:
        vk_fn, torch_fn = BINARY[name]
        got = vk_fn(tx, ty).numpy()
        want = from_torch(torch_fn(to_torch(x_vals), to_torch(y_vals)))
        keep = ~DIVERGES[name](x_vals, y_vals) if name in DIVERGES else np.ones(got.shape, bool)
    else:
        vk_fn, torch_fn = UNARY[name]
        got = vk_fn(tx).numpy()
        want = ORACLE[name](x_vals) if name in ORACLE else from_torch(torch_fn(to_torch(x_vals)))
        keep = np.ones(got.shape, bool)
    assert_same_bits(got[keep], want[keep], f"{name} on a {layout} view")


@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((0,), (0,)),
        ((3, 0), (1, 0)),
        ((0, 4), (4,)),
        ((1, 5), (3, 1)),
        ((1, 1), (1,)),
        ((), ()),
        ((), (2, 3)),
        ((4, 1, 3), (2, 1)),
    ],
)
def test_broadcast_and_degenerate_shapes(shape_a, shape_b):
    a = random_floats(shape_a, seed=4)
    b = random_floats(shape_b, seed=5)
    for name in ("add", "mul", "div", "maximum", "lt"):
        got, want, _ = run_binary(name, a, b)
        assert_same_bits(got, want, f"{name} of shapes {shape_a} and {shape_b}")
    got, want, _ = run_unary("neg", a)
    assert_same_bits(got, want, f"neg of shape {shape_a}")


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "lt", "eq"])
def test_binary_float16_bit_equal_to_torch(name):
    a, b = pairs_grid(F16_SPECIALS, F16_SPECIALS)
    g = np.random.default_rng(6)
    a = np.concatenate([a, (g.standard_normal(2000) * 50).astype(np.float16)])
    b = np.concatenate([b, (g.standard_normal(2000) * 50).astype(np.float16)])
    got, want, keep = run_binary(name, a, b)
    assert got.dtype == want.dtype
    assert_same_bits(got[keep], want[keep], f"{name} in float16")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float16_bit_equal_to_torch(name):
    g = np.random.default_rng(7)
    a = np.concatenate([F16_SPECIALS, np.abs(g.standard_normal(2000) * 100).astype(np.float16)])
    a = np.concatenate([a, -a[:500]])
    got, want, keep = run_unary(name, a)
    assert_same_bits(got[keep], want[keep], f"{name} in float16")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", INT_BINARY)
def test_binary_integers_wrap_like_torch(name, dtype):
    specials = INT_SPECIALS[dtype]
    a, b = pairs_grid(specials, specials)
    a = np.concatenate([a, random_ints(500, dtype, seed=8)])
    b = np.concatenate([b, random_ints(500, dtype, seed=9)])
    got, want, _ = run_binary(name, a, b)
    assert_same_bits(got, want, f"{name} in {np.dtype(dtype).name}")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", INT_UNARY)
def test_unary_integers_like_torch(name, dtype):
    a = np.concatenate([INT_SPECIALS[dtype], random_ints(300, dtype, seed=10)])
    got, want, _ = run_unary(name, a)
    assert_same_bits(got, want, f"{name} in {np.dtype(dtype).name}")


def test_integer_true_division_gives_float32_like_torch():
    a = np.array([7, -7, 0, 1, 2**31 - 1, -(2**31), 5, 0], np.int32)
    b = np.array([2, 2, 0, 0, 3, -1, -0, 7], np.int32)
    got, want, _ = run_binary("div", a, b)
    assert got.dtype == np.float32
    assert_same_bits(got, want, "int32 / int32")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_pow_like_torch(dtype):
    base = np.array([2, 3, -2, 1, -1, 0, 7, -3, 2, 10], dtype)
    exponent = np.array([10, 5, 3, -1, -3, -1, 0, 4, 40, 19], dtype)
    got = vkml.pow(vk(base), vk(exponent)).numpy()
    assert_same_bits(got, from_torch(torch.pow(to_torch(base), to_torch(exponent))), "integer pow")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64])
def test_clamp_tensor_and_scalar_bounds(dtype):
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):  # huge specials become ±inf in float16
            x = np.concatenate([F32_SPECIALS.astype(dtype), random_floats(200, seed=11).astype(dtype)])
        bounds = [(-1.5, 2.0), (0.0, None), (None, -0.0), (3.0, -3.0), (NAN, 1.0), (None, NAN)]
    else:
        x = np.concatenate([INT_SPECIALS[dtype], random_ints(200, dtype, seed=11)])
        bounds = [(-7, 20), (0, None), (None, -1), (3, -3)]
    for lo, hi in bounds:
        got = vkml.clamp(vk(x), min=lo, max=hi).numpy()
        want = from_torch(torch.clamp(to_torch(x), min=lo, max=hi))
        if lo is None and hi is not None and np.isnan(hi):
            # The rule of the reference PyTorch (2.13, semantics.md): a NaN bound makes every output NaN.
            # Older releases (2.11, on the GPU machine) return x for a NaN max alone; assert the rule itself.
            want = np.full_like(x, np.nan)
        assert_same_bits(got, want, f"clamp(min={lo}, max={hi}) in {np.dtype(dtype).name}")
    lo_t = np.full_like(x, 1) if dtype in (np.int32, np.int64) else random_floats(x.shape, seed=12).astype(dtype)
    hi_t = lo_t + (np.abs(random_floats(x.shape, seed=13)).astype(dtype) if lo_t.dtype.kind == "f" else 5)
    if lo_t.dtype.kind == "f":
        lo_t[::17] = np.nan
    got = vkml.clamp(vk(x), vk(lo_t), vk(hi_t)).numpy()
    want = from_torch(torch.clamp(to_torch(x), to_torch(lo_t), to_torch(hi_t)))
    assert_same_bits(got, want, "clamp with tensor bounds")
    got = vkml.clamp(vk(x), min=vk(lo_t)).numpy()
    assert_same_bits(got, from_torch(torch.clamp(to_torch(x), min=to_torch(lo_t))), "clamp_min with a tensor bound")


def test_clamp_needs_a_bound():
    with pytest.raises(RuntimeError, match="clamp"):  # PyTorch's class
        vkml.clamp(vkml.ones(2))


def test_where_is_a_pure_select_with_promotion_and_broadcasting():
    cond = np.array([[True, False, True], [False, False, True]])
    a = np.array([[NAN, 1.0, -0.0]], np.float32)
    b = np.array([[2.0], [NAN]], np.float32)
    got = vkml.where(vk(cond), vk(a), vk(b)).numpy()
    want = from_torch(torch.where(to_torch(cond), to_torch(a), to_torch(b)))
    assert_same_bits(got, want, "where")
    ints = np.array([1, 2, 3], np.int32)
    for other in (2.5, 7, vk(np.array([0.5, 0.25, 0.125], np.float16))):
        t_other = other if not isinstance(other, vkml.Tensor) else to_torch(other.numpy())
        got = vkml.where(vk(cond[0]), vk(ints), other).numpy()
        want = from_torch(torch.where(to_torch(cond[0]), to_torch(ints), t_other))
        assert_same_bits(got, want, f"where(int32, {other!r})")
    with pytest.raises(vkml.DTypeError, match="where"):
        vkml.where(vk(ints), vk(ints), vk(ints))


def test_logical_ops_on_bool():
    a, b = pairs_grid(np.array([True, False]), np.array([True, False]))
    assert_same_bits(vkml.logical_and(vk(a), vk(b)).numpy(), a & b, "logical_and")
    assert_same_bits(vkml.logical_or(vk(a), vk(b)).numpy(), a | b, "logical_or")
    assert_same_bits(vkml.logical_not(vk(a)).numpy(), ~a, "logical_not")
    assert_same_bits((~vk(a)).numpy(), ~a, "~ on a bool tensor")
    assert_same_bits((vk(a) + vk(b)).numpy(), from_torch(to_torch(a) + to_torch(b)), "bool + bool")
    # Other dtypes count nonzero values as True (PyTorch's); the result is bool
    assert vkml.logical_and(vkml.ones(2), vkml.tensor([0.0, float("nan")])).tolist() == [False, True]


# ---------------------------------------------------------------------- documented values

# (op, inputs, expected): the registry's special/divergence text, value by value.
DOCUMENTED = [
    ("maximum", (0.0, -0.0), 0.0),
    ("maximum", (-0.0, 0.0), 0.0),
    ("maximum", (NAN, 1.0), NAN),
    ("maximum", (1.0, NAN), NAN),
    ("minimum", (0.0, -0.0), -0.0),
    ("minimum", (-0.0, 0.0), -0.0),
    ("minimum", (-INF, NAN), NAN),
    ("sign", (NAN,), NAN),
    ("sign", (-0.0,), 0.0),
    ("sign", (-INF,), -1.0),
    ("relu", (-0.0,), -0.0),
    ("relu", (-INF,), 0.0),
    ("relu", (NAN,), NAN),
    ("abs", (-0.0,), 0.0),
    ("neg", (0.0,), -0.0),
    ("add", (INF, -INF), NAN),
    ("sub", (INF, INF), NAN),
    ("mul", (0.0, INF), NAN),
    ("div", (1.0, 0.0), INF),
    ("div", (1.0, -0.0), -INF),
    ("div", (-1.0, 0.0), -INF),
    ("div", (0.0, 0.0), NAN),
    ("div", (INF, INF), NAN),
    ("div", (NAN, 0.0), NAN),
    ("sqrt", (-0.0,), -0.0),
    ("sqrt", (-1.0,), NAN),
    ("sqrt", (INF,), INF),
    ("rsqrt", (0.0,), INF),
    ("rsqrt", (-0.0,), -INF),
    ("rsqrt", (-1.0,), NAN),
    ("rsqrt", (INF,), 0.0),
    ("clamp", (-0.0, 0.0, 1.0), -0.0),
    ("clamp", (5.0, 3.0, 1.0), 1.0),
    ("clamp", (2.0, NAN, 3.0), NAN),
    ("clamp", (NAN, 0.0, 1.0), NAN),
]


def _ops_of(entries) -> list[str]:
    return sorted({e[0] for e in entries})


@pytest.mark.parametrize("name", _ops_of(DOCUMENTED))
def test_documented_values(name):
    entries = [e for e in DOCUMENTED if e[0] == name]
    columns = [np.array([e[1][i] for e in entries], np.float32) for i in range(len(entries[0][1]))]
    want = np.array([e[2] for e in entries], np.float32)
    fn = getattr(vkml, name)
    got = fn(*[vk(c) for c in columns]).numpy()
    assert_same_bits(got, want, f"{name} at its documented values")


def test_every_elementwise_divergence_is_asserted():
    from test_ops_elementwise_more import DIVERGENCES_ASSERTED
    from test_ops_transcendental import DOCUMENTED as MORE
    from test_ops_trig import DIVERGENCES_ASSERTED as TRIG_DIVERGENCES
    from test_special import DIVERGENCES_ASSERTED as SPECIAL_DIVERGENCES

    covered = set(_ops_of(DOCUMENTED)) | set(_ops_of(MORE)) | DIVERGENCES_ASSERTED | TRIG_DIVERGENCES
    covered |= SPECIAL_DIVERGENCES
    with_divergence = {op.name for op in REGISTRY.values() if op.kind == "elementwise" and op.divergence}
    assert with_divergence <= covered, f"divergences without a test: {sorted(with_divergence - covered)}"


# ---------------------------------------------------------------------- promotion


@pytest.mark.parametrize(
    "a, b",
    [
        (np.array([1, 2], np.int32), np.array([0.5, 1.5], np.float32)),
        (np.array([1, 2], np.int64), np.array([0.5, 1.5], np.float16)),
        (np.array([1.5, 2.25], np.float16), np.array([0.1, 1.3], np.float32)),
        (np.array([1, 2], np.int32), np.array([3, 4], np.int64)),
        (np.array([True, False]), np.array([3, 4], np.int32)),
        (np.array([1, 2], np.int32), np.array(2.5, np.float32)),  # 0-dim float outranks int
        (np.array([1.5, 2.5], np.float16), np.array(2.5, np.float32)),  # 0-dim stays below dims
        (np.array(3, np.int64), np.array(2.5, np.float16)),
    ],
)
def test_tensor_promotion_like_torch(a, b):
    for name in ("add", "mul", "maximum"):
        got, want, _ = run_binary(name, a, b)
        assert got.dtype == want.dtype, f"{name}: {a.dtype} with {b.dtype}"
        assert_same_bits(got, want, f"{name} of {a.dtype} and {b.dtype}")


@pytest.mark.parametrize(
    "dtype, scalar",
    [
        (dtype, scalar)
        for dtype in (np.float16, np.float32, np.int32, np.int64, np.bool_)
        for scalar in (2.5, 0.1, 3, True, -7, 1e10)
    ],
)
def test_python_scalar_promotion_like_torch(dtype, scalar):
    x = np.array([1.5, -3.0, 0.0, 2.0]).astype(dtype)
    for op in (lambda p, q: p + q, lambda p, q: q * p, lambda p, q: p - q, lambda p, q: p / q):
        try:
            want = from_torch(op(to_torch(x), scalar))
        except RuntimeError:
            continue  # e.g. bool - bool: torch refuses; vkml's error is tested elsewhere
        got = op(vk(x), scalar).numpy()
        assert got.dtype == want.dtype, f"{np.dtype(dtype).name} with {scalar!r}"
        assert_same_bits(got, want, f"{np.dtype(dtype).name} with {scalar!r}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_scalar_divided_by_tensor_is_reciprocal_times_scalar_as_torch(dtype):
    # PyTorch's `2.5 / x` is `x.reciprocal() * 2.5` (two roundings), not one division
    x = random_floats(2000, seed=16).astype(dtype)
    x = x[x != 0]
    for scalar in (2.5, 0.1, -7):
        got = (scalar / vk(x)).numpy()
        assert_same_bits(got, from_torch(scalar / to_torch(x)), f"{scalar} / {np.dtype(dtype).name} tensor")


def test_float16_with_python_scalar_as_torch():
    # PyTorch CPU's mul and div: float(x) op float32(scalar), rounded once to float16; its add and sub
    # round the scalar to float16 first (1/3 -> 0.33325), then compute in float32 and round once
    x = np.arange(-2048, 2048, dtype=np.float16) * np.float16(0.37)
    x32 = x.astype(np.float32)
    for scalar in (0.1, 2.5, 1 / 3):
        s32, s16 = np.float32(scalar), np.float32(np.float16(scalar))
        for name, op, s in (
            ("+", np.add, s16),
            ("-", np.subtract, s16),
            ("*", np.multiply, s32),
            ("/", np.divide, s32),
        ):
            got = {"+": vk(x) + scalar, "-": vk(x) - scalar, "*": vk(x) * scalar, "/": vk(x) / scalar}[name].numpy()
            assert got.dtype == np.float16
            assert_same_bits(got, op(x32, s).astype(np.float16), f"float16 {name} {scalar}")
            want = {"+": to_torch(x) + scalar, "-": to_torch(x) - scalar, "*": to_torch(x) * scalar}
            want["/"] = to_torch(x) / scalar
            assert_same_bits(got, from_torch(want[name]), f"float16 {name} {scalar} vs torch")


def test_broadcast_mismatch_names_op_and_shapes():
    with pytest.raises(vkml.ShapeError, match=r"'add'.*\(2, 3\).*\(4,\)"):
        vkml.ones(2, 3) + vkml.ones(4)
    with pytest.raises(vkml.ShapeError, match="'maximum'"):
        vkml.maximum(vkml.ones(3), vkml.ones(2, 2))


def test_dtype_errors_name_the_op():
    with pytest.raises(RuntimeError, match="'sub': Subtraction.*bool"):  # PyTorch's type
        vkml.sub(vk(np.array([True])), vk(np.array([False])))
    with pytest.raises(vkml.DTypeError, match="'abs'.*bool"):  # lt orders bools, as PyTorch (test_dtype_rules)
        vkml.abs(vk(np.array([True])))
    with pytest.raises(TypeError, match="'add' needs at least one tensor"):
        vkml.add(1.0, 2.0)


# ---------------------------------------------------------------------- random shapes and values


@st.composite
def _broadcast_case(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    other = tuple(draw(st.sampled_from([s, 1])) for s in shape)[draw(st.integers(0, len(shape))) :]
    dtype = draw(st.sampled_from([np.float32, np.float16, np.int32, np.int64]))
    if np.dtype(dtype).kind == "f":
        elements = st.floats(width=np.dtype(dtype).itemsize * 8, allow_nan=True, allow_infinity=True)
    else:
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    a = draw(hnp.arrays(dtype, shape, elements=elements))
    b = draw(hnp.arrays(dtype, other, elements=elements))
    swap = draw(st.booleans())
    return (b, a) if swap else (a, b)


@given(case=_broadcast_case(), name=st.sampled_from(["add", "sub", "mul", "div", "maximum", "minimum", "le", "ne"]))
def test_random_broadcasts_match_torch(case, name):
    a, b = case
    got, want, keep = run_binary(name, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_same_bits(got[keep], want[keep], f"{name} of {a.dtype}{a.shape} and {b.dtype}{b.shape}")
    if a.ndim == 2:  # the same through a transposed view
        t = vk(np.ascontiguousarray(a.T)).T
        assert_same_bits(BINARY[name][0](t, vk(b)).numpy(), got, f"{name} with a transposed operand")
