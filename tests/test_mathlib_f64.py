"""float64 transcendental functions (vkml/ops/mathlib/f64math.py, f64trig.py) against mpmath.

- Each routine, through the CPU interpreter, on a few thousand inputs (log-uniform over the whole
  float64 range, a focused range, thresholds and specials): the ulp distance to the correctly
  rounded result (mpmath at 120 bits), counted in the integer order of float64 bit patterns, is
  within the bound the op page states (vkml/ops/float64.py, ``FLOAT64_MATH``). NaN-ness agrees.
- The public ops on float64 tensors: NaN, infinities and signed zeros as torch's float64 kernels,
  bit for bit; and the same bits on lavapipe as on the CPU.
- ``-m exhaustive``: 2^16 inputs a routine.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch

import vkml
from vkml.ir.interp.reference import evaluate
from vkml.ops import mathlib as M
from vkml.ops.float64 import FLOAT64_MATH
from vkml.ops.mathlib.f64erf import GELU_BETA, GELU_KAPPA
from vkml.ops.registry import REGISTRY

NAN, INF = float("nan"), float("inf")
N = 1000
mpmath.mp.prec = 120

SPECIALS = np.array(
    [0.0, -0.0, INF, -INF, NAN, -NAN, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 5e-324, -5e-324, 2.2250738585072014e-308]
    + [-2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1e-300, -1e-300, 1e300, -1e300]
)
# Overflow/underflow thresholds and split points of the evaluations (where results turn subnormal,
# pi/4, 2^28 for asinh/acosh, 20/22/40 where the hyperbolic and logistic formulas switch).
THRESHOLDS = np.array(
    [709.782712893384, -745.1332191019411, -708.3964185322641, 1024.0, -1074.0, -1075.0, 710.4758600739439]
    + [0.7853981633974483, 2.0**28, 2.0**-27, 19.06, 20.0, 22.0, 40.0, -40.0, 36.0, 1.4142135623730951]
    + [0.7071067811865476, 6381956970095103 * 2.0**797, 1e22, 3.141592653589793, 1.5707963267948966]
)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def log_uniform(seed: int, lo: float = -1074, hi: float = 1024, signed: bool = True, n: int = N) -> np.ndarray:
    """|x| = 2^U(lo, hi) * U(1, 2): every binade equally likely."""
    g = rng(seed)
    with np.errstate(over="ignore"):
        x = np.exp2(g.uniform(lo, hi, n)) * g.uniform(1.0, 2.0, n)
    x = np.where(np.isinf(x), 1.0, x)
    return x * g.choice([-1.0, 1.0], n) if signed else x


def neighbours(values, steps: int = 2) -> np.ndarray:
    """Each value and its ``steps`` float64 neighbours on either side."""
    v = np.asarray(values, np.float64)
    out = [v]
    lo, hi = v.copy(), v.copy()
    for _ in range(steps):
        lo, hi = np.nextafter(lo, -INF), np.nextafter(hi, INF)
        out += [lo, hi]
    return np.concatenate(out)


def uniform(seed: int, lo: float, hi: float) -> np.ndarray:
    return rng(seed).uniform(lo, hi, N)


def ordered(x: np.ndarray) -> np.ndarray:
    """float64 bit patterns as integers in numeric order (-0 and +0 both map to 0)."""
    i = np.asarray(x, np.float64).view(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFFFFFFFFFF), i)


def mp_reference(fn, *arrays: np.ndarray) -> np.ndarray:
    """fn over mpmath numbers at 120 bits, rounded to float64; NaN where it is undefined or complex."""
    out = np.empty(len(arrays[0]))
    for i, args in enumerate(zip(*arrays)):
        if any(not np.isfinite(a) for a in args):
            out[i] = NAN  # non-finite inputs are checked against torch (test_special_values_like_torch)
            continue
        try:
            r = fn(*(mpmath.mpf(float(a)) for a in args))
            out[i] = NAN if isinstance(r, mpmath.mpc) else float(r)
        except (ValueError, ZeroDivisionError):
            out[i] = NAN
    return out


def assert_within_ulp(got, want, bound: int, inputs, what: str) -> None:
    finite_in = np.all([np.isfinite(a) for a in inputs], axis=0)
    got, want = got[finite_in], want[finite_in]
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    assert (nan_g == nan_w).all(), f"{what}: NaN where the result is not (or not where it is)"
    d = np.abs(ordered(got[~nan_w]) - ordered(want[~nan_w]))
    if d.size and d.max() > bound:
        worst = np.argsort(d)[-3:][::-1]
        xs = [np.asarray(a)[finite_in][~nan_w] for a in inputs]
        shown = "; ".join(f"x={tuple(a[i] for a in xs)} got {got[~nan_w][i]!r} want {want[~nan_w][i]!r}" for i in worst)
        raise AssertionError(f"{what}: {int((d > bound).sum())} of {d.size} beyond {bound} ulp: {shown}")


def _sigmoid(v):
    return 1 / (1 + mpmath.exp(-v))


def _softplus(v):
    return v if v > 20 else mpmath.log1p(mpmath.exp(v))


def _gelu_tanh(v):  # PyTorch's formula with its double constants, as v * sigmoid(2 b (v + k v^3))
    b, k = mpmath.mpf(GELU_BETA), mpmath.mpf(GELU_KAPPA)
    return v / (1 + mpmath.exp(-2 * b * (v + k * v**3)))


def _sinc(v):
    return mpmath.mpf(1) if v == 0 else mpmath.sinpi(v) / (mpmath.pi * v)


def _softplus_exact(v):
    return mpmath.log1p(mpmath.exp(v))


def _erfc(v):
    return mpmath.erfc(v) if abs(v) < 100 else mpmath.mpf(0 if v > 0 else 2)  # mpmath overflows far out


def _gelu(v):
    return v * _erfc(-v / mpmath.sqrt(2)) / 2


# name -> (mpmath function, inputs beyond the log-uniform sweep, thresholds and specials)
UNARY = {
    "exp": (mpmath.exp, lambda: uniform(1, -746, 710)),
    "exp2": (lambda v: mpmath.power(2, v), lambda: np.concatenate([uniform(2, -1076, 1025), np.arange(-1075.0, 1025)])),
    "expm1": (mpmath.expm1, lambda: uniform(3, -45, 710)),
    "log": (mpmath.log, lambda: uniform(4, 0.5, 2)),
    "log2": (
        lambda v: mpmath.log(v, 2),
        lambda: np.concatenate([uniform(5, 0.5, 2), np.exp2(np.arange(-1074.0, 1024))]),
    ),
    "log10": (mpmath.log10, lambda: np.concatenate([uniform(6, 0.5, 2), 10.0 ** np.arange(-22.0, 23)])),
    "log1p": (mpmath.log1p, lambda: np.concatenate([uniform(7, -1, 1), log_uniform(8, -60, 0)])),
    "tanh": (mpmath.tanh, lambda: uniform(9, -22, 22)),
    "sigmoid": (_sigmoid, lambda: uniform(10, -760, 45)),
    "silu": (lambda v: v * _sigmoid(v), lambda: uniform(11, -760, 45)),
    "softplus": (_softplus, lambda: uniform(12, -760, 45)),
    "mish": (lambda v: v * mpmath.tanh(_softplus_exact(v)), lambda: uniform(36, -770, 45)),
    "sinh": (mpmath.sinh, lambda: np.concatenate([uniform(13, -712, 712), uniform(14, -3, 3)])),
    "cosh": (mpmath.cosh, lambda: np.concatenate([uniform(15, -712, 712), uniform(16, -3, 3)])),
    "asinh": (mpmath.asinh, lambda: log_uniform(17, -30, 30)),
    "acosh": (mpmath.acosh, lambda: 1 + log_uniform(18, -52, 4, signed=False)),
    "atanh": (mpmath.atanh, lambda: np.concatenate([uniform(19, -1, 1), 1 - log_uniform(20, -53, -1, signed=False)])),
    "sin": (mpmath.sin, lambda: np.concatenate([uniform(21, -10, 10), log_uniform(22, -2, 60)])),
    "cos": (mpmath.cos, lambda: np.concatenate([uniform(23, -10, 10), log_uniform(24, -2, 60)])),
    "tan": (mpmath.tan, lambda: np.concatenate([uniform(25, -10, 10), log_uniform(26, -2, 60)])),
    "asin": (mpmath.asin, lambda: np.concatenate([uniform(27, -1, 1), 1 - log_uniform(28, -53, -1, signed=False)])),
    "acos": (mpmath.acos, lambda: np.concatenate([uniform(29, -1, 1), 1 - log_uniform(30, -53, -1)])),
    "atan": (mpmath.atan, lambda: uniform(31, -10, 10)),
    "sinc": (_sinc, lambda: np.concatenate([uniform(37, -10, 10), neighbours(np.arange(-20.0, 20.0, 0.5))])),
    "erf": (mpmath.erf, lambda: np.concatenate([uniform(32, -7, 7), neighbours(0.5 * 1.25 ** np.arange(12.0))])),
    "erfc": (_erfc, lambda: np.concatenate([uniform(33, -7, 30), neighbours(0.5 * 1.25 ** np.arange(19.0))])),
    "logsigmoid": (lambda v: -_softplus_exact(-v), lambda: uniform(35, -760, 760)),
    "gelu_tanh": (_gelu_tanh, lambda: np.concatenate([uniform(38, -25, 10), uniform(39, -3, 3)])),
    "gelu": (
        _gelu,
        lambda: np.concatenate([uniform(34, -40, 10), neighbours(-np.sqrt(0.5) * 1.25 ** np.arange(19.0))]),
    ),
}
ROUTINES = {"silu": M.silu64, "mish": M.mish64, "logsigmoid": REGISTRY["logsigmoid"].body}


def _routine(name):
    return ROUTINES.get(name) or getattr(M, name).f64


def _bound(name: str) -> int:
    """The ulp bound the op page states for float64."""
    assert FLOAT64_MATH[name].startswith("≤ 1 ulp"), name
    return 1


def _unary_inputs(name: str, seed: int) -> np.ndarray:
    _, focused = UNARY[name]
    return np.concatenate(
        [log_uniform(100 + seed), focused(), neighbours(THRESHOLDS), neighbours(-THRESHOLDS), SPECIALS]
    )


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_within_stated_ulp_of_mpmath(name):
    x = _unary_inputs(name, list(UNARY).index(name))
    got = evaluate(_routine(name), x)
    assert got.dtype == np.float64
    assert_within_ulp(got, mp_reference(UNARY[name][0], x), _bound(name), (x,), name)


def _binary_inputs(name: str, seed: int, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    g = rng(seed)
    if name == "atan2":
        y = np.concatenate([log_uniform(seed, n=n), g.uniform(-3, 3, n)])
        x = np.concatenate([log_uniform(seed + 1, n=n), g.uniform(-3, 3, n)])
        return y, x
    # pow: exponents spread so that y*log(x) covers every finite, nonzero result; integer powers
    x = np.concatenate([log_uniform(seed, signed=False, n=n), g.uniform(0, 3, n)])
    with np.errstate(divide="ignore"):
        y = g.uniform(-745, 709, 2 * n) / np.log(x)
    y = np.where(np.isfinite(y), y, 1.0)
    xi, yi = g.integers(1, 30, n) * g.choice([-1.0, 1.0], n), g.integers(-20, 20, n).astype(float)  # zero: specials
    return np.concatenate([x, xi, -x[:n]]), np.concatenate([y, yi, np.round(y[:n])])


@pytest.mark.parametrize("name", ["pow", "atan2"])
def test_binary_within_stated_ulp_of_mpmath(name):
    a, b = _binary_inputs(name, 200 if name == "pow" else 300)
    got = evaluate(getattr(M, name).f64, a, b)
    ref = mpmath.power if name == "pow" else mpmath.atan2
    want = mp_reference(ref, a, b)
    if name == "atan2":  # mpmath has no signed zero: atan2(-0.0, x < 0) is -pi, its +pi
        want = np.where((a == 0) & np.signbit(a), -np.abs(want), want)
    assert_within_ulp(got, want, _bound(name), (a, b), name)


def test_pow_is_exact_where_the_result_is_a_float64():
    base = np.repeat(np.arange(-12.0, 13.0), 25)
    exponent = np.tile(np.arange(-12.0, 13.0), 25)
    got = evaluate(M.pow.f64, base, exponent)
    with np.errstate(divide="ignore"):
        want = np.power(base, exponent)  # exact here: every power of an integer up to 12^12 < 2^53, and 1/2^k
    exact = np.isfinite(want) & (
        (np.abs(exponent) <= 12) & (exponent >= 0) | np.isin(np.abs(base), [1.0, 2.0, 4.0, 8.0])
    )
    np.testing.assert_array_equal(got[exact], want[exact])


# ---------------------------------------------------------------- the public ops


def _public(name):
    if name == "gelu_tanh":
        return (
            lambda x: vkml.nn.functional.gelu(x, approximate="tanh"),
            lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
        )
    if name in ("silu", "softplus", "gelu", "logsigmoid", "mish"):
        return getattr(vkml.nn.functional, name), getattr(torch.nn.functional, name)
    return getattr(vkml, name), getattr(torch, name)


OPS = [*UNARY, "pow", "atan2"]


def _special_pairs() -> tuple[np.ndarray, np.ndarray]:
    values = np.array([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 5e-324, 1e308])
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.ravel(), b.ravel()


def _assert_same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    bad = (nan_g != nan_w) | (~nan_w & (got.view(np.int64) != want.view(np.int64)))
    if bad.any():
        i = np.flatnonzero(bad)[:6]
        raise AssertionError(f"{what}: {int(bad.sum())} differ, e.g. got {got[i]} want {want[i]}")


@pytest.mark.parametrize("name", OPS)
def test_special_values_like_torch(name):
    fn, torch_fn = _public(name)
    args = _special_pairs() if name in ("pow", "atan2") else (np.concatenate([SPECIALS, THRESHOLDS, -THRESHOLDS]),)
    got = fn(*(vkml.tensor(a) for a in args))
    assert got.dtype is vkml.float64
    want = torch_fn(*(torch.from_numpy(a) for a in args)).numpy()
    # Finite nonzero inputs are judged against mpmath above: torch's vectorized float64 kernels
    # are 1 ulp off at times, overflow early (sinh(710.47)) or flush subnormals (log1p(5e-324)).
    special = np.any([~np.isfinite(a) | (a == 0) for a in args], axis=0)
    if name in ("gelu", "gelu_tanh"):  # the documented divergence: vkml gives the limits, PyTorch NaN for -inf
        infinite = np.isinf(args[0])
        _assert_same_bits(got.numpy()[infinite], np.where(args[0][infinite] > 0, INF, -0.0), f"{name}(±inf)")
        special &= ~infinite
    if name == "pow":
        special |= (np.abs(args[0]) == 1) | ((args[0] < 0) & (args[1] != np.round(args[1])))
    _assert_same_bits(got.numpy()[special], want[special], f"{name} specials")


def test_same_bits_on_vulkan(gpu):
    x = np.concatenate(
        [log_uniform(400, -40, 12, n=200), SPECIALS, THRESHOLDS, -THRESHOLDS, rng(401).uniform(-3, 3, 200)]
    )
    a, b = _binary_inputs("pow", 402, n=64)
    y, z = _binary_inputs("atan2", 403, n=64)
    for name in OPS:
        fn, _ = _public(name)
        args = {"pow": (a, b), "atan2": (y, z)}.get(name, (x,))
        cpu = fn(*(vkml.tensor(v) for v in args)).numpy()
        vulkan = fn(*(vkml.tensor(v, device=gpu) for v in args)).numpy()
        _assert_same_bits(vulkan, cpu, f"{name} on lavapipe against the CPU")


def test_softmax_family_computes_in_float64():
    x = rng(500).normal(size=(3, 9)) * 20
    for name in ("softmax", "log_softmax", "logsumexp"):
        got = getattr(vkml, name)(vkml.tensor(x), dim=1)
        assert got.dtype is vkml.float64
        want = getattr(torch, name)(torch.from_numpy(x), dim=1).numpy()
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-14, err_msg=name)


def test_float64_autograd_through_the_new_ops():
    def f(lib, x):  # asin's derivative takes rsqrt, gelu's erf and exp
        return (x.exp() * x.tanh() + x.sin().atan() + (x * 0.3).asin() + lib.nn.functional.gelu(x)).sum()

    x = vkml.tensor(np.array([0.3, -1.2, 2.5]), requires_grad=True)
    f(vkml, x).backward()
    t = torch.tensor([0.3, -1.2, 2.5], dtype=torch.float64, requires_grad=True)
    f(torch, t).backward()
    assert x.grad.dtype is vkml.float64
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-14)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_on_many_random_inputs(name):
    k = list(UNARY).index(name)
    focused = UNARY[name][1]()
    lo, hi = focused[np.isfinite(focused)].min(), focused[np.isfinite(focused)].max()
    x = np.concatenate([log_uniform(1000 + k, n=1 << 15), rng(2000 + k).uniform(lo, hi, 1 << 15)])
    got = evaluate(_routine(name), x)
    assert_within_ulp(got, mp_reference(UNARY[name][0], x), _bound(name), (x,), name)


def test_activations_composed_of_them_take_float64():
    g = rng(600)
    x = np.concatenate([g.normal(size=200) * 5, log_uniform(601, n=60), SPECIALS])
    vx, tx = vkml.tensor(x), torch.from_numpy(x)
    nnf, tnf = vkml.nn.functional, torch.nn.functional
    same_bits = {
        "hardtanh": (nnf.hardtanh(vx, -1.1, 2.3), tnf.hardtanh(tx, -1.1, 2.3)),
        "leaky_relu": (nnf.leaky_relu(vx, 0.013), tnf.leaky_relu(tx, 0.013)),
        "threshold": (nnf.threshold(vx, 0.3, -7.1), tnf.threshold(tx, 0.3, -7.1)),
        "softsign": (nnf.softsign(vx), tnf.softsign(tx)),
        "hardsigmoid": (nnf.hardsigmoid(vx), tnf.hardsigmoid(tx)),
        "hardswish": (nnf.hardswish(vx), tnf.hardswish(tx)),
        "elu": (nnf.elu(vx, 1.3), tnf.elu(tx, 1.3)),
        "selu": (nnf.selu(vx), tnf.selu(tx)),
        "deg2rad": (vkml.deg2rad(vx), torch.deg2rad(tx)),
        "rad2deg": (vkml.rad2deg(vx), torch.rad2deg(tx)),
        "frac": (vkml.frac(vx), torch.frac(tx)),
        "rsqrt": (vkml.rsqrt(vx), torch.rsqrt(tx)),
        "fmax": (vkml.fmax(vx, vx.flip(0)), torch.fmax(tx, tx.flip(0))),
        "fmin": (vkml.fmin(vx, vx.flip(0)), torch.fmin(tx, tx.flip(0))),
    }
    for name, (got, want) in same_bits.items():
        assert got.dtype is vkml.float64, name
        _assert_same_bits(got.numpy(), want.numpy(), name)
    # expm1 and tanh within 1 ulp where PyTorch's are too: close, not bit-equal
    # softplus above its op's threshold of 20: log1p(exp(-x)) is kept (e^-20 relative matters in float64)
    pairs = [(nnf.celu(vx, 0.7), tnf.celu(tx, 0.7)), (nnf.tanhshrink(vx), tnf.tanhshrink(tx))]
    z = np.concatenate([x, [41.0, 50.0, 60.0, 79.0]])  # beta*z in (20, 40]
    vz, tz = vkml.tensor(z), torch.from_numpy(z)
    pairs.append((nnf.softplus(vz, beta=0.5, threshold=40.0), tnf.softplus(tz, beta=0.5, threshold=40.0)))
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15, atol=1e-15)


# ---------------------------------------------------------------- the exact float64 ops


def _exact_pairs() -> tuple[np.ndarray, np.ndarray]:
    a, b = _special_pairs()
    x, y = log_uniform(700, n=300), log_uniform(701, n=300)  # quotients over the whole range
    g = rng(702)
    return np.concatenate([a, x, g.normal(size=100) * 10]), np.concatenate([b, y, g.normal(size=100)])


def _exact_ops(lib, a, b, w):
    nnf = lib.nn.functional
    return {
        "copysign": lib.copysign(a, b),
        "fmod": lib.fmod(a, b),
        "remainder": lib.remainder(a, b),
        "floor_divide": lib.floor_divide(a, b),
        "div(trunc)": lib.div(a, b, rounding_mode="trunc"),
        "nan_to_num": lib.nan_to_num(a),
        "nan_to_num(1.5, 2.5, -3.5)": lib.nan_to_num(a, 1.5, 2.5, -3.5),
        "hardshrink": nnf.hardshrink(a, 0.7),
        "softshrink": nnf.softshrink(a, 0.7),
        "lerp": lib.lerp(a, b, w),
    }


def test_exact_ops_give_the_bits_of_their_float64_formula():
    a, b = _exact_pairs()
    w = rng(703).uniform(-1.5, 2.5, len(a))
    got = _exact_ops(vkml, vkml.tensor(a), vkml.tensor(b), vkml.tensor(w))
    with np.errstate(all="ignore"):
        mod = np.fmod(a, b)  # C's fmod, exact
        d = b - a
        want = {
            "fmod": mod,
            # PyTorch's formulas (its vectorized kernels round a/b first: NaN where it overflows)
            "remainder": np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod),
            "lerp": np.where(np.abs(w) < 0.5, a + w * d, b - d * (1 - w)),  # no fused multiply-add
        }
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    for name, t in _exact_ops(torch, ta, tb, torch.from_numpy(w)).items():
        want.setdefault(name, t.numpy())
    for name, v in got.items():
        assert v.dtype is vkml.float64, name
        _assert_same_bits(v.numpy(), want[name], name)
    with np.errstate(all="ignore"):
        fair = np.abs(a / b) < 2.0**52  # where torch's own remainder is exact
    _assert_same_bits(got["remainder"].numpy()[fair], torch.remainder(ta, tb).numpy()[fair], "remainder vs torch")


def test_exact_ops_same_bits_on_vulkan(gpu):
    a, b = _exact_pairs()
    w = rng(704).uniform(-1.5, 2.5, len(a))
    cpu = _exact_ops(vkml, vkml.tensor(a), vkml.tensor(b), vkml.tensor(w))
    dev = _exact_ops(vkml, vkml.tensor(a, device=gpu), vkml.tensor(b, device=gpu), vkml.tensor(w, device=gpu))
    for name in cpu:
        _assert_same_bits(dev[name].numpy(), cpu[name].numpy(), f"{name} on lavapipe against the CPU")


def test_exact_ops_autograd_in_float64():
    def f(lib, x, y):
        nnf = lib.nn.functional
        return (
            lib.copysign(x, y) * lib.fmod(x, y)
            + lib.remainder(x, y)
            + lib.lerp(x, y, 0.3)
            + nnf.hardshrink(x, 0.4) * nnf.softshrink(y, 0.2)
            + lib.nan_to_num(x * y)
        ).sum()

    xs, ys = [0.3, -1.7, 2.5, 4.1], [0.7, 0.9, -1.1, -2.3]
    x, y = vkml.tensor(np.array(xs), requires_grad=True), vkml.tensor(np.array(ys), requires_grad=True)
    f(vkml, x, y).backward()
    tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(ys, dtype=torch.float64, requires_grad=True)
    f(torch, tx, ty).backward()
    assert x.grad.dtype is vkml.float64
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-15)


# ---------------------------------------------------------------- logit, hypot, xlogy, logaddexp


def _logit(v):
    return mpmath.log(v / (1 - v)) if 0 < v < 1 else mpmath.nan


ELEMENTARY = {  # op -> (mpmath function, inputs, bound in ulp of the result)
    "logit": (
        _logit,
        lambda: (
            np.concatenate(
                [
                    log_uniform(800, -1074, 0, signed=False, n=150),
                    0.5 + log_uniform(801, -60, -2, n=100),
                    1 - log_uniform(802, -53, -2, signed=False, n=100),
                ]
            ),
        ),
        1,
    ),
    "erfinv": (
        mpmath.erfinv,
        lambda: (
            np.concatenate(
                [log_uniform(807, -1074, 0, n=100), uniform(808, -1, 1)[:100], 1 - log_uniform(809, -53, -1, n=100)]
            ),
        ),
        2,
    ),
    "hypot": (lambda u, v: mpmath.sqrt(u * u + v * v), lambda: (log_uniform(803, n=300), log_uniform(804, n=300)), 1),
    "xlogy": (lambda u, v: u * mpmath.log(v), lambda: (log_uniform(805, n=300), np.abs(log_uniform(806, n=300))), 2),
}


@pytest.mark.parametrize("name", list(ELEMENTARY))
def test_elementary_within_stated_ulp_of_mpmath(name):
    fn, inputs, bound = ELEMENTARY[name]
    args = inputs()
    assert f"≤ {bound} ulp" in FLOAT64_MATH[name]
    got = getattr(vkml, name)(*(vkml.tensor(a) for a in args)).numpy()
    assert_within_ulp(got, mp_reference(fn, *args), bound, args, name)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_within_an_ulp_of_its_largest_term(name):
    # PyTorch's formula max + log1p(exp(-|a - b|)) cancels where the result is near 0: the bound is
    # in ulp of max(|a|, |b|, |result|), as the op page states
    g = rng(810)
    a = np.concatenate([g.normal(size=200) * 5, g.normal(size=100) * 700, log_uniform(811, n=60)])
    b = np.concatenate([g.normal(size=200) * 5, g.normal(size=100) * 700, log_uniform(812, n=60)])
    e = mpmath.e if name == "logaddexp" else 2
    want = mp_reference(lambda u, v: mpmath.log(mpmath.power(e, u) + mpmath.power(e, v), e), a, b)
    got = getattr(vkml, name)(vkml.tensor(a), vkml.tensor(b)).numpy()
    assert "of max(|input|, |other|, |result|)" in FLOAT64_MATH[name]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), np.abs(want))
    assert np.max(np.abs(got - want) / np.spacing(scale)) <= 1, name


def test_elementary_specials_like_torch_and_same_bits_on_vulkan(gpu):
    a, b = _special_pairs()
    x = np.concatenate([SPECIALS, [0.25, 0.75, 0.1, 0.9]])
    for name in ("hypot", "xlogy", "logaddexp", "logaddexp2", "logit", "erfinv"):
        args = (x,) if name in ("logit", "erfinv") else (a, b)
        got = getattr(vkml, name)(*(vkml.tensor(v) for v in args)).numpy()
        want = getattr(torch, name)(*(torch.from_numpy(v) for v in args)).numpy()
        special = np.any([~np.isfinite(v) | (v == 0) for v in args], axis=0)
        if name == "logit":  # its ends and outside [0, 1]; inside, PyTorch rounds x / (1 - x) first
            special |= (x >= 1) | (x < 0)
        if name == "erfinv":
            special |= np.abs(x) >= 1
        _assert_same_bits(got[special], want[special], f"{name} specials")
        vulkan = getattr(vkml, name)(*(vkml.tensor(v, device=gpu) for v in args)).numpy()
        _assert_same_bits(vulkan, got, f"{name} on lavapipe against the CPU")
    for eps in (1e-6, 0.3):  # the clamp bounds are eps and 1 - eps in float64
        got = vkml.logit(vkml.tensor(x), eps).numpy()
        want = torch.logit(torch.from_numpy(x), eps).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_elementary_autograd_in_float64():
    def f(lib, x, y):
        return (
            lib.logit(x * 0.2 + 0.5) + lib.erfinv(x * 0.3) + lib.hypot(x, y) + lib.xlogy(x, y * y) + lib.logaddexp(x, y)
        ).sum() + (lib.logaddexp2(x, y).sum())

    xs, ys = [0.3, -1.7, 2.4, 0.1], [0.7, 0.9, -1.1, -2.3]
    x, y = vkml.tensor(np.array(xs), requires_grad=True), vkml.tensor(np.array(ys), requires_grad=True)
    f(vkml, x, y).backward()
    tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(ys, dtype=torch.float64, requires_grad=True)
    f(torch, tx, ty).backward()
    assert x.grad.dtype is vkml.float64
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-14)


def test_digamma_and_trigamma_follow_pytorchs_float64_formula(gpu):
    x = np.concatenate([log_uniform(820, -1074, 1024, n=200), uniform(821, -20, 20)[:300], SPECIALS])
    x = np.concatenate([x, np.arange(-4.0, 5.0), np.arange(-4.0, 5.0) + 0.5])
    tx = torch.from_numpy(x)
    got = {"digamma": vkml.digamma(vkml.tensor(x)), "trigamma": vkml.polygamma(1, vkml.tensor(x))}
    want = {"digamma": torch.digamma(tx).numpy(), "trigamma": torch.polygamma(1, tx).numpy()}
    for name, v in got.items():
        assert v.dtype is vkml.float64
        g, w = v.numpy(), want[name]
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
        finite = np.isfinite(w)
        _assert_same_bits(g[~finite], w[~finite], f"{name} specials")
        # the bound the op page states: log, tan and sin may differ from PyTorch's by 1 ulp
        scale = np.maximum(np.abs(w[finite]), 4.0) if name == "digamma" else np.abs(w[finite])
        assert np.max(np.abs(g[finite] - w[finite]) / np.spacing(scale)) <= 2, name
        assert "within 2 ulp" in FLOAT64_MATH[name]
    vulkan = {
        "digamma": vkml.digamma(vkml.tensor(x, device=gpu)),
        "trigamma": vkml.polygamma(1, vkml.tensor(x, device=gpu)),
    }
    for name, v in vulkan.items():
        _assert_same_bits(v.numpy(), got[name].numpy(), f"{name} on lavapipe against the CPU")
    # digamma's derivative is trigamma, in float64
    xs = vkml.tensor(np.array([0.3, 2.5, -1.5]), requires_grad=True)
    vkml.digamma(xs).sum().backward()
    np.testing.assert_allclose(
        xs.grad.numpy(), torch.polygamma(1, torch.tensor([0.3, 2.5, -1.5], dtype=torch.float64)).numpy(), rtol=1e-15
    )


def test_lgamma_within_its_stated_bound(gpu):
    assert "x > 0: ≤ 2 ulp" in FLOAT64_MATH["lgamma"] and "x < 0: ≤ 2 ulp of max(|result|, 1)" in FLOAT64_MATH["lgamma"]
    pos = np.concatenate(
        [
            log_uniform(830, -70, 40, signed=False, n=150),
            uniform(831, 0.5, 2.5)[:150],
            log_uniform(832, 890, 1023, signed=False, n=20),
        ]
    )
    got = vkml.lgamma(vkml.tensor(pos)).numpy()
    assert_within_ulp(got, mp_reference(mpmath.loggamma, pos), 2, (pos,), "lgamma, x > 0")
    neg = -np.concatenate([uniform(833, 0, 20)[:200], log_uniform(834, -70, 10, signed=False, n=60)])
    want = mp_reference(lambda v: mpmath.log(abs(mpmath.gamma(v))), neg)
    got = vkml.lgamma(vkml.tensor(neg)).numpy()
    assert np.max(np.abs(got - want) / np.spacing(np.maximum(np.abs(want), 1.0))) <= 2
    x = np.concatenate([SPECIALS, [-1.0, -2.0, -3.5, 1e306, -1e306]])
    got = vkml.lgamma(vkml.tensor(x))
    special = ~np.isfinite(x) | (x == 0) | ((x < 0) & (x == np.round(x))) | (np.abs(x) > 1e300)
    _assert_same_bits(got.numpy()[special], torch.lgamma(torch.from_numpy(x)).numpy()[special], "lgamma specials")
    both = np.concatenate([pos, neg, x])
    cpu = vkml.lgamma(vkml.tensor(both)).numpy()
    _assert_same_bits(vkml.lgamma(vkml.tensor(both, device=gpu)).numpy(), cpu, "lgamma on lavapipe against the CPU")
    xs = vkml.tensor(np.array([0.3, 2.5, -1.5]), requires_grad=True)  # its derivative, digamma, in float64
    vkml.lgamma(xs).sum().backward()
    want = torch.digamma(torch.tensor([0.3, 2.5, -1.5], dtype=torch.float64)).numpy()
    np.testing.assert_allclose(xs.grad.numpy(), want, rtol=1e-15)
