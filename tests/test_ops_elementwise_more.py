"""The pointwise ops of issue 17 against PyTorch: one table row per case, over edge inputs.

``check`` runs a case on the CPU backend and on lavapipe (the same bits, NaN payloads
included) and compares with torch's CPU result: bit for bit where the op is exact (NaN by
NaN-ness), within a stated ulp bound of a float64 reference otherwise. Gradients are
compared with torch's on smooth inputs, and again CPU against Vulkan bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import F32_SPECIALS, INT_SPECIALS, assert_same_bits, bits, pairs_grid, ulp32

import vkml
import vkml.nn.functional as VF
from vkml.ops.registry import REGISTRY

CPU = vkml.device("cpu")
TF = torch.nn.functional

# Values where rounding and remainders are tricky: halves, the edge of float32 integers, huge ratios.
ROUNDING = np.array(
    [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 8388607.5, -8388607.5, 4194304.5, 8388608.0]
    + [16777217.0, 1e-40, -1e-40, 0.1, -0.1, 123.456, -987.654, 1e38, -0.05, 0.15, 1.25, 0.125],
    dtype=np.float32,
)
EDGE = np.concatenate([F32_SPECIALS, ROUNDING])
GRID_A, GRID_B = pairs_grid(EDGE, EDGE)  # every pair: ±0, ±inf, NaN, subnormals, huge/tiny ratios


def _ints(dtype):
    return INT_SPECIALS[dtype]


def ordered(a: np.ndarray) -> np.ndarray:
    """float32 bits as integers in the order of the floats (ulp distance = difference)."""
    i = bits(np.asarray(a, np.float32)).astype(np.int64)
    return np.where(i >= 1 << 31, (1 << 31) - i, i)


def assert_within_ulp(got, want, max_ulp: int, what: str) -> None:
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    assert (nan_g == nan_w).all(), f"{what}: NaN at {np.flatnonzero(nan_g != nan_w)[:6]}"
    dist = np.abs(ordered(got) - ordered(want))
    dist[nan_w] = 0
    assert dist.max(initial=0) <= max_ulp, (
        f"{what}: {int((dist > max_ulp).sum())} beyond {max_ulp} ulp, worst {dist.max()} at "
        f"{np.flatnonzero(dist > max_ulp)[:6]}: got {got[dist > max_ulp][:4]} want {want[dist > max_ulp][:4]}"
    )


def run(vkml_fn, inputs, device):
    return vkml_fn(*[vkml.tensor(a, device=device) for a in inputs]).numpy()


def check(name, inputs, torch_fn, vkml_fn, grad=True, *, gpu, ulp=0, keep=None, ref64=False, scale=None):
    """Compare op ``name`` with torch over ``inputs`` (numpy arrays), on CPU and Vulkan.

    ``ulp`` = 0: bit-equal to torch's CPU result (NaN by NaN-ness); otherwise within ``ulp``
    float32 ulps of torch's result, computed in float64 when ``ref64`` (the exact value
    rounded once). ``keep``: mask of the elements compared with torch (documented divergences
    are asserted apart). ``scale``: count the ulps of these magnitudes instead of the result's
    (for formulas that cancel, such as lerp's). ``grad``: also compare the gradients of the float32
    inputs (upstream ones) where torch's are finite and the inputs are finite, and CPU against
    Vulkan bit for bit; ``GRADS`` below checks each gradient on smooth inputs too.
    """
    if grad:
        _check_grads(name, inputs, torch_fn, vkml_fn, gpu, keep)
    got = run(vkml_fn, inputs, CPU)
    on_gpu = run(vkml_fn, inputs, gpu)
    assert got.dtype == on_gpu.dtype, f"{name}: dtype {got.dtype} on Vulkan, {on_gpu.dtype} on CPU"
    # The contract: every bit of a non-NaN result; a NaN result by NaN-ness (a GPU may return its canonical NaN)
    same = (bits(got) == bits(on_gpu)) | (np.isnan(got) & np.isnan(on_gpu)) if got.dtype.kind == "f" else got == on_gpu
    assert same.all(), f"{name}: Vulkan differs from CPU at {np.flatnonzero(~same)[:6]}"
    if ref64:
        with np.errstate(over="ignore", invalid="ignore"):  # float64 results beyond float32 round to ±inf
            want = torch_fn(*[torch.from_numpy(np.asarray(a, np.float64)) for a in inputs]).numpy().astype(np.float32)
    else:
        want = torch_fn(*[torch.from_numpy(np.asarray(a)) for a in inputs]).numpy()
    if keep is not None:
        got, want = got[keep], want[keep]
        scale = None if scale is None else scale[keep]
    if scale is not None:
        finite = np.isfinite(want) & np.isfinite(got)
        assert (np.isnan(got) == np.isnan(want)).all(), f"{name}: NaN differs"
        err = np.abs(got[finite].astype(np.float64) - want[finite]) / ulp32(scale[finite])
        assert err.max(initial=0) <= ulp, f"{name}: {err.max()} ulp of the scale"
        assert (got[~finite] == want[~finite])[~np.isnan(want[~finite])].all(), f"{name}: infinities differ"
    elif ulp == 0:
        assert_same_bits(got, want.astype(got.dtype) if want.dtype == np.float64 else want, name)
    else:
        assert_within_ulp(got, want, ulp, name)


def _check_grads(name, inputs, torch_fn, vkml_fn, gpu, keep):
    if not all(np.asarray(a).dtype == np.float32 for a in inputs):
        return
    tt = [torch.tensor(a, requires_grad=True) for a in inputs]
    out = torch_fn(*tt)
    if not out.requires_grad:  # bool results and rounding of the inputs' own dtype are not differentiable
        return
    out.backward(torch.ones_like(out))
    results = []
    for device in (CPU, gpu):
        vt = [vkml.tensor(a, device=device, requires_grad=True) for a in inputs]
        vkml_fn(*vt).backward(vkml.ones(out.shape, device=device))
        results.append([v.grad.numpy() if v.grad is not None else np.zeros(v.shape, np.float32) for v in vt])
    same_shape = all(np.shape(a) == np.shape(inputs[0]) for a in inputs)
    for i, (got, on_gpu, t) in enumerate(zip(*results, tt)):
        # NaN gradients by NaN-ness: which NaN a product of two NaNs keeps differs between the CPU
        # and lavapipe in the existing ops the rules are built of (pow's, for one)
        both_nan = np.isnan(got) & np.isnan(on_gpu)
        assert ((bits(got) == bits(on_gpu)) | both_nan).all(), f"{name} grad {i}: Vulkan differs from CPU"
        want = np.zeros(got.shape, np.float32) if t.grad is None or t.grad._is_zerotensor() else t.grad.numpy()
        # compared where every input is finite (and kept); a broadcast operand: where it is finite
        ok = np.isfinite(want) & np.isfinite(got)
        if same_shape:
            ok &= np.logical_and.reduce([np.isfinite(a) for a in inputs]) & (True if keep is None else keep)
        else:
            ok &= np.isfinite(inputs[i])
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-4, atol=1e-6, err_msg=f"{name} grad {i}")


# ---------------------------------------------------------------------- float32, exact ops


def np_fmod(a, b):
    """C's fmod (exact): the oracle, since PyTorch's vectorized kernel is a - trunc(a/b)·b (inexact)."""
    with np.errstate(all="ignore"):
        return np.fmod(a, b)


def np_remainder(a, b):
    """PyTorch's remainder formula on the exact fmod: mod + b where mod != 0 and the signs differ."""
    mod = np_fmod(a, b)
    with np.errstate(all="ignore"):
        return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod).astype(a.dtype)


def np_floor_divide(a, b):
    """PyTorch's div_floor_floating (its scalar formula) on the exact fmod, in the inputs' dtype."""
    with np.errstate(all="ignore"):
        mod = np_fmod(a, b)
        div = (a - mod) / b
        div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div).astype(a.dtype)
        fl = np.floor(div)
        fl = np.where(div - fl > 0.5, fl + 1, fl).astype(a.dtype)
        out = np.where(div != 0, fl, np.copysign(np.zeros_like(a), a / b))
        return np.where(b == 0, a / b, out).astype(a.dtype)


def _numpy_oracle(fn):
    return lambda *ts: torch.from_numpy(np.asarray(fn(*[t.detach().numpy() for t in ts])))


EXACT_UNARY = {
    "floor": (torch.floor, vkml.floor),
    "ceil": (torch.ceil, vkml.ceil),
    "trunc": (torch.trunc, vkml.trunc),
    "fix": (torch.fix, vkml.fix),
    "round": (torch.round, vkml.round),
    "round_decimals_2": (lambda x: torch.round(x, decimals=2), lambda x: vkml.round(x, decimals=2)),
    "round_decimals_-1": (lambda x: torch.round(x, decimals=-1), lambda x: vkml.round(x, decimals=-1)),
    "frac": (torch.frac, vkml.frac),
    "signbit": (torch.signbit, vkml.signbit),
    "square": (torch.square, vkml.square),
    "reciprocal": (torch.reciprocal, vkml.reciprocal),
    "isnan": (torch.isnan, vkml.isnan),
    "isinf": (torch.isinf, vkml.isinf),
    "isposinf": (torch.isposinf, vkml.isposinf),
    "isneginf": (torch.isneginf, vkml.isneginf),
    "isfinite": (torch.isfinite, vkml.isfinite),
    "isreal": (torch.isreal, vkml.isreal),
    "nan_to_num": (torch.nan_to_num, vkml.nan_to_num),
    "nan_to_num_values": (
        lambda x: torch.nan_to_num(x, nan=1.5, posinf=7.0, neginf=-3.0),
        lambda x: vkml.nan_to_num(x, nan=1.5, posinf=7.0, neginf=-3.0),
    ),
    "logical_not": (torch.logical_not, vkml.logical_not),
    "hardtanh": (TF.hardtanh, VF.hardtanh),
    "relu6": (TF.relu6, VF.relu6),
    "hardsigmoid": (TF.hardsigmoid, VF.hardsigmoid),
    "hardswish": (TF.hardswish, VF.hardswish),
    "softsign": (TF.softsign, VF.softsign),
    "threshold": (lambda x: TF.threshold(x, 0.5, -2.0), lambda x: VF.threshold(x, 0.5, -2.0)),
    "hardshrink": (TF.hardshrink, VF.hardshrink),
    "leaky_relu": (TF.leaky_relu, VF.leaky_relu),
    "leaky_relu_0.2": (lambda x: TF.leaky_relu(x, 0.2), lambda x: VF.leaky_relu(x, 0.2)),
}


@pytest.mark.parametrize("name", sorted(EXACT_UNARY))
def test_exact_unary_float32(name, gpu):
    torch_fn, vkml_fn = EXACT_UNARY[name]
    check(name, [EDGE], torch_fn, vkml_fn, gpu=gpu)


def test_softshrink_float32(gpu):
    # The zero of a negative x inside [-lambd, lambd] is +0.0 (PyTorch's vector path; its scalar tail gives -0.0)
    check("softshrink", [EDGE], TF.softshrink, VF.softshrink, gpu=gpu, keep=(EDGE >= 0) | (EDGE < -0.5))
    assert bits(VF.softshrink(vkml.tensor([-0.0, -0.25])).numpy()).tolist() == [0, 0]


@pytest.mark.parametrize("decimals", [1, 5, 38, 39, 50, -3, -38, -39])
def test_round_decimals_extremes(decimals, gpu):
    # 10^|d| past float32's range is inf in PyTorch's formula too (NaN or ±0 results)
    with np.errstate(over="ignore"):
        halves = EDGE.astype(np.float16)  # (values past 65504 become ±inf)
    for values in (EDGE, halves):
        fns = (lambda x: torch.round(x, decimals=decimals), lambda x: vkml.round(x, decimals=decimals))
        check(f"round(decimals={decimals})", [values], *fns, gpu=gpu)


def _round_decimals_float64_inputs() -> np.ndarray:
    rng = np.random.default_rng(17)
    spread = rng.standard_normal(400) * 10.0 ** rng.integers(-25, 25, 400)
    # ties after the scaling (0.125 -> 1.25 at d = 1), decimal fractions just off a tie, the range's ends
    ties = np.array([0.5, 1.5, 2.5, -2.5, 0.125, -0.375, 0.05, 0.15, 0.25, 0.35, 1.005, 2.675, 12345.5, 150.0])
    ends = np.array([1e308, -1.7976931348623157e308, 5e-324, -1e-300, 2.0**52 + 0.5, 2.0**53, 4.5e15])
    return np.concatenate([spread, ties, ties * 1e-3, ends, [0.0, -0.0, np.inf, -np.inf, np.nan]])


def test_round_decimals_float64_bits_of_torch(gpu):
    # PyTorch's double kernel: nearbyint(x * 10^d) / 10^d (d > 0), nearbyint(x / 10^-d) * 10^-d (d < 0), with
    # 10^|d| = std::pow(10, |d|) as a double; past 10^308 it is inf (NaN or ±0 results, as PyTorch's)
    x = _round_decimals_float64_inputs()
    for d in (1, 2, 3, 7, 15, 16, 22, 23, 100, 308, 309, 400, -1, -2, -5, -16, -22, -23, -308, -309, -400):
        want = torch.round(torch.from_numpy(x), decimals=d).numpy()
        for device in ("cpu", gpu):
            got = vkml.round(vkml.tensor(x, device=device), decimals=d).numpy()
            assert got.dtype == np.float64
            assert_same_bits(got, want, f"round(float64, decimals={d}) on {device}")


def test_sgn_float32(gpu):
    check("sgn", [EDGE], torch.sgn, vkml.sgn, gpu=gpu, keep=~np.isnan(EDGE))  # NaN: see the divergences


EXACT_BINARY = {
    "fmod": (_numpy_oracle(np_fmod), vkml.fmod),
    "remainder": (_numpy_oracle(np_remainder), vkml.remainder),
    "floor_divide": (_numpy_oracle(np_floor_divide), vkml.floor_divide),
    "div_floor": (_numpy_oracle(np_floor_divide), lambda a, b: vkml.div(a, b, rounding_mode="floor")),
    "div_trunc": (
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        lambda a, b: vkml.div(a, b, rounding_mode="trunc"),
    ),
    "mod_operator": (_numpy_oracle(np_remainder), lambda a, b: a % b),
    "floordiv_operator": (_numpy_oracle(np_floor_divide), lambda a, b: a // b),
    "true_divide": (torch.true_divide, vkml.true_divide),
    "copysign": (torch.copysign, vkml.copysign),
    "fmax": (torch.fmax, vkml.fmax),
    "fmin": (torch.fmin, vkml.fmin),
    "isclose": (torch.isclose, vkml.isclose),
    "isclose_equal_nan": (
        lambda a, b: torch.isclose(a, b, rtol=1e-3, atol=1e-6, equal_nan=True),
        lambda a, b: vkml.isclose(a, b, rtol=1e-3, atol=1e-6, equal_nan=True),
    ),
    "logical_and": (torch.logical_and, vkml.logical_and),
    "logical_or": (torch.logical_or, vkml.logical_or),
    "logical_xor": (torch.logical_xor, vkml.logical_xor),
}


@pytest.mark.parametrize("name", sorted(EXACT_BINARY))
def test_exact_binary_float32_all_pairs(name, gpu):
    torch_fn, vkml_fn = EXACT_BINARY[name]
    keep = None
    if name in ("fmax", "fmin"):
        keep = ~((GRID_A == 0) & (GRID_B == 0))  # the sign of a zero: see test_documented_divergences
    check(name, [GRID_A, GRID_B], torch_fn, vkml_fn, gpu=gpu, keep=keep)


def test_fmod_and_remainder_random_bits_exact(gpu):
    # Arbitrary exponent gaps (up to the whole float32 range): the long division must be exact.
    g = np.random.default_rng(5)
    a = (g.standard_normal(4000) * np.exp2(g.integers(-149, 127, 4000))).astype(np.float32)
    b = (g.standard_normal(4000) * np.exp2(g.integers(-149, 127, 4000))).astype(np.float32)
    for name, oracle in (("fmod", np_fmod), ("remainder", np_remainder), ("floor_divide", np_floor_divide)):
        check(name, [a, b], _numpy_oracle(oracle), getattr(vkml, name), gpu=gpu)
    # Where PyTorch's quotient a/b is exactly representable, its vectorized fmod is exact too.
    with np.errstate(all="ignore"):
        small = (np.abs(a) < 1e6) & (np.abs(b) > 1e-3) & (np.abs(b) < 1e3) & (np.abs(a / b) < 2**20)
    check("fmod vs torch", [a[small][:64], b[small][:64]], torch.fmod, vkml.fmod, gpu=gpu)


def test_fmod_divergence_from_torch_is_what_docs_say():
    # PyTorch: NaN where a/b overflows; vkml: the exact remainder (0, since 1 is a multiple of 2^-149)
    a, b = torch.tensor([1.0] * 64), torch.tensor([1e-45] * 64)  # (long enough for its vector path)
    assert torch.isnan(torch.fmod(a, b)).all()
    assert (vkml.fmod(vkml.tensor(a.numpy()), vkml.tensor(b.numpy())).numpy() == 0).all()


APPROX = {
    # name: (torch fn, vkml fn, ulp bound against the float64 result, domain)
    "hypot": (torch.hypot, vkml.hypot, 1),
    "xlogy": (torch.xlogy, vkml.xlogy, 2),
    "float_power": (torch.float_power, vkml.float_power, 1),
}


@pytest.mark.parametrize("name", sorted(APPROX))
def test_approximate_binary_against_float64(name, gpu):
    torch_fn, vkml_fn, ulp = APPROX[name]
    check(name, [GRID_A, GRID_B], torch_fn, vkml_fn, gpu=gpu, ulp=ulp, ref64=True)


def test_hypot_random_no_overflow(gpu):
    g = np.random.default_rng(7)
    a = (g.standard_normal(3000) * np.exp2(g.integers(-149, 127, 3000))).astype(np.float32)
    b = (g.standard_normal(3000) * np.exp2(g.integers(-149, 127, 3000))).astype(np.float32)
    check("hypot", [a, b], torch.hypot, vkml.hypot, gpu=gpu, ulp=1, ref64=True)


def test_logaddexp_within_bound(gpu):
    # The bound is stated in ulps of the larger operand (the result is max + a correction of at most ln 2).
    g = np.random.default_rng(3)
    a = (g.standard_normal(2000) * 30).astype(np.float32)
    b = (a + g.standard_normal(2000) * 4).astype(np.float32)
    a, b = np.concatenate([a, EDGE]), np.concatenate([b, EDGE[::-1]])
    for name in ("logaddexp", "logaddexp2"):
        scale = np.nan_to_num(np.maximum(np.abs(a), np.abs(b)), posinf=1.0)  # (infinities compare exactly)
        check(name, [a, b], getattr(torch, name), getattr(vkml, name), gpu=gpu, ulp=4, ref64=True, scale=scale)


def test_lerp_scalar_and_tensor_weight(gpu):
    # Within 2 ulp of 4·max(|a|, |b|) of the float64 result: the formula cancels near its zeros
    # (PyTorch's fused multiply-add rounds differently there).
    g = np.random.default_rng(4)
    a, b = (g.standard_normal(500).astype(np.float32) for _ in range(2))
    w = g.uniform(-1, 2, 500).astype(np.float32)
    scale = 4 * np.maximum(np.abs(a), np.abs(b))  # |w·(b - a)| ≤ 2·|b - a| here
    check("lerp", [a, b, w], torch.lerp, vkml.lerp, gpu=gpu, ulp=2, ref64=True, scale=scale)
    for weight in (0.3, 0.75, 1.0):
        torch_fn = lambda x, y, weight=weight: torch.lerp(x, y, weight)  # noqa: E731
        vkml_fn = lambda x, y, weight=weight: vkml.lerp(x, y, weight)  # noqa: E731
        check("lerp", [a, b], torch_fn, vkml_fn, gpu=gpu, ulp=2, ref64=True, scale=scale)


ACTIVATIONS = {
    # name: (torch fn, vkml fn, ulp bound against torch's float64 result)
    "silu": (TF.silu, VF.silu, 3),
    "mish": (TF.mish, VF.mish, 5),
    "elu": (TF.elu, VF.elu, 2),
    "elu_alpha": (lambda x: TF.elu(x, 0.5), lambda x: VF.elu(x, 0.5), 2),
    "selu": (TF.selu, VF.selu, 3),
    "celu": (lambda x: TF.celu(x, 2.0), lambda x: VF.celu(x, 2.0), 3),
    "logsigmoid": (TF.logsigmoid, VF.logsigmoid, 3),
    "tanhshrink": (TF.tanhshrink, VF.tanhshrink, 4),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_within_bound(name, gpu):
    torch_fn, vkml_fn, ulp = ACTIVATIONS[name]
    keep = None
    if name == "tanhshrink":
        keep = np.abs(EDGE) >= 1  # x - tanh(x) cancels near 0 (documented)
    check(name, [EDGE], torch_fn, vkml_fn, gpu=gpu, ulp=ulp, ref64=True, keep=keep)


# ---------------------------------------------------------------------- integers and bools

INT_BINARY = {
    "fmod": (torch.fmod, vkml.fmod),
    "remainder": (torch.remainder, vkml.remainder),
    "floor_divide": (torch.floor_divide, vkml.floor_divide),
    "div_trunc": (
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        lambda a, b: vkml.div(a, b, rounding_mode="trunc"),
    ),
    "mod_operator": (lambda a, b: a % b, lambda a, b: a % b),
    "floordiv_operator": (lambda a, b: a // b, lambda a, b: a // b),
    "and": (lambda a, b: a & b, lambda a, b: a & b),
    "or": (lambda a, b: a | b, lambda a, b: a | b),
    "xor": (lambda a, b: a ^ b, lambda a, b: a ^ b),
    "bitwise_and": (torch.bitwise_and, vkml.bitwise_and),
    "maximum": (torch.maximum, vkml.maximum),
    "minimum": (torch.minimum, vkml.minimum),
    "fmax": (torch.fmax, vkml.fmax),
    "fmin": (torch.fmin, vkml.fmin),
    "logical_and": (torch.logical_and, vkml.logical_and),
    "logical_xor": (torch.logical_xor, vkml.logical_xor),
    "copysign": (torch.copysign, vkml.copysign),
    "isclose": (torch.isclose, vkml.isclose),
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_integer_binary(name, dtype, gpu):
    torch_fn, vkml_fn = INT_BINARY[name]
    a, b = pairs_grid(_ints(dtype), _ints(dtype))
    # PyTorch raises for an integer division by zero (see the divergences), and its vector path
    # stops the process (SIGFPE) for INT_MIN / -1: both are checked apart
    b = np.where((b == 0) | ((b == -1) & (a == np.iinfo(dtype).min)), dtype(3), b)
    check(name, [a, b], torch_fn, vkml_fn, gpu=gpu)


TORCH_INT = {"int32": torch.int32, "int64": torch.int64}


@pytest.mark.parametrize("dtype", [vkml.int32, vkml.int64])
def test_integer_min_by_minus_one_wraps_as_torch_scalar_path(dtype, gpu):
    low = -(2 ** (dtype.bits - 1))
    tdt = TORCH_INT[dtype.name]
    for device in (CPU, gpu):
        a = vkml.tensor([low], dtype=dtype, device=device)
        m = vkml.tensor([-1], dtype=dtype, device=device)
        want = {"floor_divide": low, "fmod": 0, "remainder": 0}
        for name, value in want.items():
            assert (
                getattr(vkml, name)(a, m).tolist()
                == [value]
                == getattr(torch, name)(torch.tensor([low], dtype=tdt), torch.tensor([-1], dtype=tdt)).tolist()
            )


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_shifts_and_not(dtype, gpu):
    a = np.repeat(_ints(dtype), 10)
    counts = np.tile(np.array([-1, 0, 1, 3, 7, 30, 31, 32, 63, 64], dtype=dtype), len(_ints(dtype)))
    check("<<", [a, counts], lambda x, y: x << y, lambda x, y: x << y, gpu=gpu)
    check(">>", [a, counts], lambda x, y: x >> y, lambda x, y: x >> y, gpu=gpu)
    check("~", [a], lambda x: ~x, lambda x: ~x, gpu=gpu)
    for name in ("floor", "ceil", "trunc", "round", "sgn", "square", "signbit", "isnan", "isfinite", "isinf"):
        check(name, [a], getattr(torch, name), getattr(vkml, name), gpu=gpu)
    check("reciprocal", [a], torch.reciprocal, vkml.reciprocal, gpu=gpu)
    check("logical_not", [a], torch.logical_not, vkml.logical_not, gpu=gpu)


def test_bool_ops(gpu):
    a, b = pairs_grid(np.array([False, True]), np.array([False, True]))
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "maximum", "minimum", "fmax", "fmin", "logical_xor"):
        check(name, [a, b], getattr(torch, name), getattr(vkml, name), gpu=gpu)
    for op in ("__and__", "__or__", "__xor__"):
        fn = lambda x, y, op=op: getattr(x, op)(y)  # noqa: E731
        check(op, [a, b], fn, fn, gpu=gpu)
    for name in ("bitwise_not", "signbit", "isnan", "isfinite", "logical_not"):
        check(name, [a], getattr(torch, name), getattr(vkml, name), gpu=gpu)
    check("~", [a], lambda x: ~x, lambda x: ~x, gpu=gpu)


def test_reflected_operators_with_python_numbers(gpu):
    a = np.array([7, -7, 3, -1], np.int32)
    for fn in (lambda x: 10 % x, lambda x: 10 // x, lambda x: 6 & x, lambda x: 6 | x, lambda x: 6 ^ x):
        check("reflected", [a], fn, fn, gpu=gpu)
    f = np.array([2.5, -0.75, 3.0, -0.0], np.float32)
    for fn in (lambda x: 7.5 % x, lambda x: -7.5 // x, lambda x: x % 2.0, lambda x: x // -2.0):
        check("reflected", [f], fn, fn, grad=False, gpu=gpu)  # (PyTorch: no derivative of scalar % tensor)
    shifts = np.array([0, 1, 4], np.int64)
    check("rlshift", [shifts], lambda x: 3 << x, lambda x: 3 << x, gpu=gpu)


# ---------------------------------------------------------------------- float16

F16_EXACT = ("floor", "ceil", "trunc", "round", "fmod", "remainder", "copysign", "fmax", "fmin", "signbit", "isinf")


@pytest.mark.parametrize("name", F16_EXACT)
def test_float16_exact(name, gpu):
    values = np.array([0.5, -2.5, 1.5, 6e-8, -0.0, np.inf, -np.inf, np.nan, 65504, 3.0, -7.25, 1e-3], np.float16)
    fn = {"fmod": _numpy_oracle(np_fmod), "remainder": _numpy_oracle(np_remainder)}.get(name, getattr(torch, name))
    if REGISTRY[name].body.__code__.co_argcount == 2:
        a, b = pairs_grid(values, values)
        check(
            name,
            [a, b],
            fn,
            getattr(vkml, name),
            gpu=gpu,
            keep=None if name not in ("fmax", "fmin") else ~((a == 0) & (b == 0)),
        )
    else:
        check(name, [values], fn, getattr(vkml, name), gpu=gpu)


def test_float16_rounded_once(gpu):
    # float16 computes in float32 and rounds once, as PyTorch's CPU kernels (opmath float)
    g = np.random.default_rng(8)
    x = np.concatenate([(g.standard_normal(300) * 4), [0.0, -0.0, np.inf, -np.inf, np.nan, 65504, -65504, 6e-8]])
    x = x.astype(np.float16)
    y = g.standard_normal(x.size).astype(np.float16)
    check("nan_to_num", [x], torch.nan_to_num, vkml.nan_to_num, gpu=gpu)
    check("hardswish", [x], TF.hardswish, VF.hardswish, gpu=gpu)
    check("leaky_relu", [x], TF.leaky_relu, VF.leaky_relu, gpu=gpu)
    for name in ("hypot", "logaddexp", "xlogy"):
        got = run(getattr(vkml, name), [x, y], CPU)
        want = getattr(torch, name)(torch.from_numpy(x), torch.from_numpy(y)).numpy()
        assert got.dtype == np.float16 and (np.isnan(got) == np.isnan(want)).all(), name
        ok = ~np.isnan(want)
        # one float16 rounding of a float32 value within a few float32 ulps: at most 1 float16 ulp apart
        dist = np.abs(bits(got[ok]).astype(np.int32) - bits(want[ok]).astype(np.int32))
        assert dist.max() <= 1 or name == "xlogy" and (np.sign(got[ok]) == np.sign(want[ok])).all(), name
    for name in ("silu", "mish", "logsigmoid", "softsign"):
        got = run(getattr(VF, name), [x], CPU)
        want = getattr(TF, name)(torch.from_numpy(x)).numpy()
        finite = np.isfinite(want)
        assert (np.isnan(got) == np.isnan(want)).all(), name
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-3, atol=1e-7, err_msg=name)


def test_clamp_with_tensor_bounds(gpu):
    g = np.random.default_rng(6)
    x = np.concatenate([g.standard_normal(200) * 3, [np.nan, 0.0, -0.0, np.inf]]).astype(np.float32)
    lo = np.concatenate([g.standard_normal(200), [0.0, np.nan, 0.0, -1.0]]).astype(np.float32)
    hi = (lo + np.abs(g.standard_normal(lo.size)) - 0.3).astype(np.float32)  # some hi < lo: hi wins
    check("clamp", [x, lo, hi], torch.clamp, vkml.clamp, gpu=gpu)
    check("clip", [x, lo], lambda a, b: torch.clip(a, min=b), lambda a, b: vkml.clip(a, min=b), gpu=gpu)
    check("clamp_max", [x, hi], lambda a, b: a.clamp(max=b), lambda a, b: a.clamp(max=b), gpu=gpu)
    xi = np.array([5, -7, 0, 2**31 - 1], np.int32)
    li, hi_i = np.array([0, 0, 1, 3], np.int32), np.array([3, 3, 2, 1], np.int32)
    check("clamp int", [xi, li, hi_i], torch.clamp, vkml.clamp, gpu=gpu)
    # gradients flow to whichever of x, min, max the output took (as PyTorch)
    xs, ls, hs = (a[:200] for a in (x, lo, hi))
    keep = (xs != ls) & (xs != hs) & (ls != hs)
    xs, ls, hs = xs[keep], ls[keep], hs[keep]
    tt = [torch.tensor(a, requires_grad=True) for a in (xs, ls, hs)]
    torch.clamp(*tt).sum().backward()
    vt = [vkml.tensor(a, requires_grad=True) for a in (xs, ls, hs)]
    vkml.clamp(*vt).sum().backward()
    for v, t in zip(vt, tt):
        assert v.grad.tolist() == t.grad.tolist()


# ---------------------------------------------------------------------- documented divergences


def test_documented_divergences():
    # sgn(NaN) is NaN (as vkml.sign); PyTorch returns 0
    assert np.isnan(vkml.sgn(vkml.tensor([float("nan")])).numpy()).all()
    # integer division by zero raises PyTorch's RuntimeError, at the read (tests/test_dtype_rules.py)
    zero = vkml.tensor([0, 0], dtype=vkml.int32)
    five = vkml.tensor([5, -5], dtype=vkml.int32)
    for fn in (vkml.fmod, vkml.remainder, vkml.floor_divide, lambda a, b: vkml.div(a, b, rounding_mode="trunc")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(five, zero).tolist()
    # fmax/fmin of zeros: +0 and -0 as IEEE 754-2019's maximumNumber/minimumNumber
    pz, nz = vkml.tensor([0.0, -0.0]), vkml.tensor([-0.0, 0.0])
    assert (bits(vkml.fmax(pz, nz).numpy()) == 0).all()
    assert (bits(vkml.fmin(pz, nz).numpy()) == 0x80000000).all()
    # float16 floor_divide rounds once (PyTorch's vectorized path rounds its steps to float16)
    half = vkml.floor_divide(vkml.tensor([65504.0], dtype=vkml.float16), vkml.tensor([-7.25], dtype=vkml.float16))
    assert half.tolist() == [-9040.0]
    t = torch.floor_divide(
        torch.full((64,), 65504.0, dtype=torch.float16), torch.full((64,), -7.25, dtype=torch.float16)
    )
    assert t[0].item() == -9032.0  # (its vectorized path; 64 elements take it)
    # float_power computes and returns float64, as PyTorch's
    assert vkml.float_power(vkml.tensor([2]), 3).dtype is vkml.float64


# ---------------------------------------------------------------------- errors, as PyTorch's


def test_errors_are_eager_and_name_the_op():
    f = vkml.tensor([1.0, 2.0])
    i = vkml.tensor([1, 2])
    with pytest.raises(NotImplementedError, match="bitwise_and"):
        vkml.bitwise_and(f, f)
    with pytest.raises(NotImplementedError, match="bitwise_not"):
        vkml.bitwise_not(f)
    with pytest.raises(NotImplementedError, match="silu"):
        VF.silu(i)
    with pytest.raises(TypeError, match="invert"):
        _ = ~f
    with pytest.raises(NotImplementedError, match="bitwise_left_shift"):
        _ = f << 1
    with pytest.raises(NotImplementedError, match="round"):
        vkml.round(i, decimals=1)
    with pytest.raises(NotImplementedError, match="frac"):
        vkml.frac(i)
    with pytest.raises(RuntimeError, match="rounding_mode"):
        vkml.div(f, f, rounding_mode="ceil")
    with pytest.raises(RuntimeError, match="negative integer powers"):
        vkml.pow(i, -1)
    with pytest.raises(RuntimeError, match="lerp"):
        vkml.lerp(f, vkml.tensor([1.0, 2.0], dtype=vkml.float16), 0.5)
    with pytest.raises(NotImplementedError, match="lerp"):
        vkml.lerp(i, i, 0.5)
    with pytest.raises(RuntimeError, match="Halving dimension"):
        VF.glu(vkml.ones(2, 3))
    assert f.tolist() == [1.0, 2.0] and i.tolist() == [1, 2]  # inputs intact


def test_allclose_and_equal():
    a = vkml.tensor([1.0, float("nan"), 3.0])
    b = vkml.tensor([1.0 + 1e-7, float("nan"), 3.0])
    ta, tb = torch.tensor(a.numpy()), torch.tensor(b.numpy())
    assert vkml.allclose(a, b) == torch.allclose(ta, tb) is False
    assert vkml.allclose(a, b, equal_nan=True) == torch.allclose(ta, tb, equal_nan=True) is True
    assert vkml.equal(a, a) == torch.equal(ta, ta)
    assert vkml.equal(b[2:], b[2:]) is True and vkml.equal(a, a[:2]) is False


# ---------------------------------------------------------------------- modules, functional extras, in-place


def test_composite_activations(gpu):
    g = np.random.default_rng(2)
    x = g.standard_normal((3, 4, 5)).astype(np.float32)
    w = np.array([0.25, -0.5, 2.0, 0.0], np.float32)
    check("glu", [x], lambda t: TF.glu(t, 1), lambda t: VF.glu(t, 1), gpu=gpu, ulp=3)
    check("prelu", [x, w], TF.prelu, VF.prelu, gpu=gpu)
    check("softmin", [x], lambda t: TF.softmin(t, 2), lambda t: VF.softmin(t, 2), gpu=gpu, ulp=4)


MODULES = [
    ("SiLU", ()),
    ("Mish", ()),
    ("ELU", (0.7,)),
    ("SELU", ()),
    ("CELU", (1.3,)),
    ("LeakyReLU", (0.1,)),
    ("Hardtanh", (-2.0, 2.0)),
    ("ReLU6", ()),
    ("Hardsigmoid", ()),
    ("Hardswish", ()),
    ("Softsign", ()),
    ("LogSigmoid", ()),
    ("Softmin", (1,)),
    ("Threshold", (0.1, 20.0)),
    ("Softplus", (2.0, 10.0)),
    ("Hardshrink", (0.3,)),
    ("Softshrink", (0.3,)),
    ("Tanhshrink", ()),
    ("GLU", ()),
    ("PReLU", ()),
]


@pytest.mark.parametrize("name, args", MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(name, args):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32) * 4
    got = getattr(vkml.nn, name)(*args)(vkml.tensor(x)).numpy()
    want = getattr(torch.nn, name)(*args)(torch.from_numpy(x)).detach().numpy()
    assert_within_ulp(got, want, 5, name)


@pytest.mark.parametrize(
    "name",
    ["silu", "elu", "selu", "celu", "leaky_relu", "hardtanh", "relu6", "hardsigmoid", "hardswish", "mish", "threshold"],
)
def test_inplace_activations_write_the_input(name):
    x = np.array([-2.0, -0.5, 0.0, 0.75, 3.0], np.float32)
    args = (0.1, 9.0) if name == "threshold" else ()
    t = vkml.tensor(x)
    out = getattr(VF, name)(t, *args, inplace=True)
    want = getattr(TF, name)(torch.from_numpy(x.copy()), *args, inplace=True).numpy()
    assert out is t
    assert_within_ulp(t.numpy(), want, 5, name)


def test_augmented_assignment_operators_write_in_place():
    ops = ("__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imod__", "__ifloordiv__")
    for op in ops:
        v, t = vkml.tensor([12, -7, 5]), torch.tensor([12, -7, 5])
        alias, talias = v[1:], t[1:]  # a view sees the write, as in PyTorch
        assert getattr(v, op)(3) is v
        getattr(t, op)(3)
        assert v.tolist() == t.tolist() and alias.tolist() == talias.tolist(), op
    b = vkml.tensor([True, False])
    b &= vkml.tensor([True, True])
    assert b.tolist() == [True, False] and b.dtype is vkml.bool
    x = vkml.tensor([7.0, -7.0])
    assert x.div_(2.0, rounding_mode="floor").tolist() == [3.0, -4.0]


def test_inplace_methods():
    x = vkml.tensor([1.5, -2.5, 7.0])
    assert x.floor_() is x and x.tolist() == [1.0, -3.0, 7.0]
    x.fmod_(2.0)
    assert x.tolist() == [1.0, -1.0, 1.0]
    i = vkml.tensor([6, 5])
    i.bitwise_and_(3)
    assert i.tolist() == [2, 1]


# ---------------------------------------------------------------------- gradients


def _smooth(n, seed, low=-3.0, high=3.0):
    g = np.random.default_rng(seed)
    v = g.uniform(low, high, n).astype(np.float32)
    return np.where(np.abs(v - np.round(v)) < 0.05, v + 0.1, v).astype(np.float32)  # away from kinks


GRADS = {
    # name: (torch fn, vkml fn, number of differentiable inputs, domain low, high)
    "floor": (torch.floor, vkml.floor, 1),
    "round": (torch.round, vkml.round, 1),
    "round_decimals": (lambda x: torch.round(x, decimals=1), lambda x: vkml.round(x, decimals=1), 1),
    "round_neg_decimals": (lambda x: torch.round(x, decimals=-1), lambda x: vkml.round(x, decimals=-1), 1),
    "ceil": (torch.ceil, vkml.ceil, 1),
    "trunc": (torch.trunc, vkml.trunc, 1),
    "frac": (torch.frac, vkml.frac, 1),
    "sgn": (torch.sgn, vkml.sgn, 1),
    "square": (torch.square, vkml.square, 1),
    "reciprocal": (torch.reciprocal, vkml.reciprocal, 1),
    "copysign": (torch.copysign, vkml.copysign, 2),
    "fmod": (torch.fmod, vkml.fmod, 2),
    "remainder": (torch.remainder, vkml.remainder, 2),
    "fmax": (torch.fmax, vkml.fmax, 2),
    "fmin": (torch.fmin, vkml.fmin, 2),
    "logaddexp": (torch.logaddexp, vkml.logaddexp, 2),
    "logaddexp2": (torch.logaddexp2, vkml.logaddexp2, 2),
    "xlogy": (torch.xlogy, vkml.xlogy, 2),
    "hypot": (torch.hypot, vkml.hypot, 2),
    "nan_to_num": (torch.nan_to_num, vkml.nan_to_num, 1),
    "lerp": (torch.lerp, vkml.lerp, 3),
    "silu": (TF.silu, VF.silu, 1),
    "mish": (TF.mish, VF.mish, 1),
    "leaky_relu": (TF.leaky_relu, VF.leaky_relu, 1),
    "elu": (TF.elu, VF.elu, 1),
    "hardtanh": (TF.hardtanh, VF.hardtanh, 1),
    "selu": (TF.selu, VF.selu, 1),
    "celu": (lambda x: TF.celu(x, 0.7), lambda x: VF.celu(x, 0.7), 1),
    "relu6": (lambda x: TF.relu6(x * 3), lambda x: VF.relu6(x * 3), 1),
    "softmin": (lambda x: TF.softmin(x, 0), lambda x: VF.softmin(x, 0), 1),
    "hardsigmoid": (TF.hardsigmoid, VF.hardsigmoid, 1),
    "hardswish": (TF.hardswish, VF.hardswish, 1),
    "softsign": (TF.softsign, VF.softsign, 1),
    "logsigmoid": (TF.logsigmoid, VF.logsigmoid, 1),
    "threshold": (lambda x: TF.threshold(x, 0.5, 2.0), lambda x: VF.threshold(x, 0.5, 2.0), 1),
    "hardshrink": (TF.hardshrink, VF.hardshrink, 1),
    "softshrink": (TF.softshrink, VF.softshrink, 1),
    "tanhshrink": (TF.tanhshrink, VF.tanhshrink, 1),
    "glu": (TF.glu, VF.glu, 1),
    "prelu": (TF.prelu, VF.prelu, 2),
}
# Registered ops whose gradient these cases check (tests/test_autograd.py counts them as tested).
GRAD_TESTED = set(GRADS) | {"elu", "round_decimals", "round_neg_decimals", "div_trunc", "floor_divide"}


def _grad_inputs(name, arity):
    xs = [_smooth(24, seed) for seed in range(arity)]
    if name in ("xlogy", "lerp") or name.startswith("round"):
        xs[-1 if name != "lerp" else 2] = np.abs(xs[-1 if name != "lerp" else 2]) + 0.1
    if name in ("fmod", "remainder", "floor_divide", "div_trunc"):
        xs[1] = np.where(np.abs(xs[1]) < 0.5, 0.7, xs[1]).astype(np.float32)
    if name == "prelu":
        xs = [xs[0].reshape(4, 6), np.array([0.25], np.float32)]
    if name == "glu":
        xs = [xs[0].reshape(4, 6)]
    return xs


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_torch(name, gpu):
    torch_fn, vkml_fn, arity = GRADS[name]
    xs = _grad_inputs(name, arity if name != "lerp" else 3)
    out_shape = torch_fn(*[torch.from_numpy(x) for x in xs]).shape
    upstream = _smooth(int(np.prod(out_shape)), 9).reshape(out_shape)
    tt = [torch.tensor(x, requires_grad=True) for x in xs]
    torch_fn(*tt).backward(torch.from_numpy(upstream))
    results = []
    for device in (CPU, gpu):
        vt = [vkml.tensor(x, device=device, requires_grad=True) for x in xs]
        vkml_fn(*vt).backward(vkml.tensor(upstream, device=device))
        results.append([v.grad.numpy() for v in vt])
    for i, (got, on_gpu, t, x) in enumerate(zip(*results, tt, xs)):
        # (sgn's gradient is a ZeroTensor, which has no storage to read)
        want = np.zeros(x.shape, np.float32) if t.grad._is_zerotensor() else t.grad.numpy()
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=f"{name} grad {i}")
        # NaN gradients by NaN-ness: which NaN a product of two NaNs keeps differs between the CPU
        # and lavapipe in the existing ops the rules are built of (pow's, for one)
        both_nan = np.isnan(got) & np.isnan(on_gpu)
        assert ((bits(got) == bits(on_gpu)) | both_nan).all(), f"{name} grad {i}: Vulkan differs from CPU"


def test_rounding_divisions_have_zero_gradients():
    # PyTorch does not differentiate floor_divide or div(rounding_mode=...); vkml gives zeros (as floor's)
    a, b = (vkml.tensor([3.5, -2.0], requires_grad=True) for _ in range(2))
    (vkml.floor_divide(a, b) + vkml.div(a, b, rounding_mode="trunc")).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [0.0, 0.0]


def test_inplace_logical_ops_give_zero_gradients():
    # docs/ops/logical_and.md: PyTorch's in-place logical ops record nothing (its gradient passes through
    # them); vkml's is zero for both operands, as PyTorch's in-place comparisons' (x.eq_(y))
    for name in ("logical_and_", "logical_or_", "logical_xor_", "eq_"):
        x = vkml.tensor([1.5, 0.0], requires_grad=True)
        y = vkml.tensor([0.0, 2.0], requires_grad=True)
        (getattr(x.clone(), name)(y) * 3).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0] and y.grad.tolist() == [0.0, 0.0], name


NEW_OPS = {
    op.name for op in REGISTRY.values() if op.body is not None and op.body.__module__.endswith("elementwise_more")
}
# Registered ops whose divergence from PyTorch a test here asserts (tests/test_ops_elementwise.py counts them).
DIVERGENCES_ASSERTED = {
    "sgn",
    "fmod",
    "remainder",
    "floor_divide",
    "div_trunc",
    "softshrink",
    "lerp",
    "signbit",
    "copysign",
    "logical_and",  # in place: test_inplace_logical_ops_give_zero_gradients
    "logical_or",
    "logical_xor",
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_nans_sign_is_read_on_the_cpu_and_may_be_lost_on_a_gpu(dtype, gpu):
    """signbit and copysign show a NaN's sign bit: the CPU reads it as PyTorch does; a GPU may hand back
    its canonical NaN (the H200 does for float16), so there only the NaN-free positions are promised."""
    x = np.array([np.nan, -np.nan, -1.5, 0.0, -0.0, np.inf], dtype)
    y = np.array([2.0, 2.0, -np.nan, np.nan, -1.0, -0.0], dtype)
    for name in ("signbit", "copysign"):
        args = [x] if name == "signbit" else [x, y]
        want = getattr(torch, name)(*[torch.from_numpy(a) for a in args]).numpy()
        cpu = getattr(vkml, name)(*[vkml.tensor(a) for a in args]).numpy()
        on_gpu = getattr(vkml, name)(*[vkml.tensor(a, device=gpu) for a in args]).numpy()
        assert_same_bits(cpu, want, f"{name} on the CPU")
        sign_source = args[-1]
        keep = ~np.isnan(sign_source)
        assert_same_bits(on_gpu[keep], cpu[keep], f"{name} on {gpu.name}, NaN-free positions")
        if name == "copysign":  # with a NaN sign source the magnitude is still |input|
            magnitude = np.abs(on_gpu[~keep]).astype(dtype)
            assert_same_bits(magnitude, np.abs(x[~keep]), "copysign's magnitude")


def test_every_new_op_is_tested():
    names = NEW_OPS
    tested = set(EXACT_UNARY) | set(EXACT_BINARY) | set(APPROX) | set(ACTIVATIONS) | GRAD_TESTED
    tested |= {
        "isreal",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "bitwise_left_shift",
        "bitwise_right_shift",
    }
    tested |= {"logaddexp", "logaddexp2", "lerp"}
    assert names <= tested, sorted(names - tested)


def test_float64_rounding_on_vulkan_matches_numpy(gpu):
    """Float64 trunc and round on Vulkan, bit for bit: Mesa's lavapipe 22.3 on an AVX2 host returned
    |x| >= 2^31 unrounded and +0 for trunc(-0.3) from the driver's own Trunc and RoundEven (the
    emitter now builds both from Floor and Ceil: vkml/codegen/spirv.py)."""
    x = np.array(
        [-0.3, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, -2.5, 3.5, 2.0**31 + 0.5, -(2.0**32) - 0.5, 1.5e12 + 0.75,
         -1.8e13 - 0.5, 2.0**52 + 1, 2.0**52 - 0.5, 1e300, np.inf, -np.inf, np.nan, 5e-324, -5e-324],
    )  # fmt: skip
    t = vkml.tensor(x, device=gpu)
    for name, oracle in (("trunc", np.trunc), ("round", np.rint), ("floor", np.floor), ("ceil", np.ceil)):
        assert_same_bits(getattr(vkml, name)(t).numpy(), oracle(x), f"{name} float64 on {gpu}")
