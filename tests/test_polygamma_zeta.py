"""polygamma(n, x) for n >= 2 and the Hurwitz zeta function (vkml/ops/mathlib/zeta.py) against mpmath and torch.

The bounds are the op pages': for x > 0 (q > 0) within 1 ulp of the true value (measured worst 0.51 ulp, 0.74
for subnormal results); for x < 0 the folding onto positive arguments may cancel near the function's zeros, so
there the bound is 1 ulp plus 2^-36 of the largest term n!/|x - round(x)|^(n+1) (measured: within 0.5 ulp).
The same bits on CPU and lavapipe; float16 is the float32 result rounded once.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml

F32 = np.float32


def _ulp(want: np.ndarray) -> np.ndarray:
    return np.spacing(np.abs(want.astype(F32))).astype(np.float64)


def _reference(n: int, x: np.ndarray) -> np.ndarray:
    with mp.workprec(80):
        return np.array([float(mp.polygamma(n, mp.mpf(float(a)))) for a in x])


def _check_polygamma(n: int, x: np.ndarray, got: np.ndarray) -> None:
    want = _reference(n, x)
    ok = np.isfinite(want) & (np.abs(want) < 3.4e38) & (np.abs(want) > 2.0**-126)
    err = np.abs(got[ok].astype(np.float64) - want[ok])
    xs = x[ok].astype(np.float64)
    largest = np.where(xs < 0, math.factorial(n) / np.abs(xs - np.round(xs)) ** (n + 1), 0.0)
    excess = err - (_ulp(want[ok]) + 2.0**-36 * largest)
    assert excess.max() <= 0, f"polygamma({n}): x={xs[np.argmax(excess)]!r} beyond the bound"


def _sample(seed: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.concatenate(
        [rng.uniform(0, 20, size), np.exp(rng.uniform(-20, 25, size)), -rng.uniform(0, 40, size)]
    ).astype(F32)
    return np.where(x == np.floor(x), x + F32(0.5), x)  # no pole; one length, so one kernel for every n


@pytest.mark.parametrize("n", [2, 3, 12, 40])
def test_polygamma_within_its_bound(n):
    x = _sample(n, 40)
    got = vkml.polygamma(n, vkml.tensor(x)).numpy()
    _check_polygamma(n, x, got)
    assert_same_bits(vkml.tensor(x).polygamma(n).numpy(), got, "Tensor.polygamma")
    assert_same_bits(vkml.special.polygamma(n, vkml.tensor(x)).numpy(), got, "vkml.special.polygamma")


SPECIALS = np.array([0.0, -0.0, -1.0, -7.0, -(2.0**24), np.inf, -np.inf, np.nan, 1e30], F32)


def test_polygamma_same_bits_on_lavapipe_special_values_as_torch(gpu):
    # poles (±0, negative integers): (-1)^(n+1) inf; +inf: NaN; -inf: (-1)^(n+1) inf; NaN: NaN
    x = np.concatenate([_sample(2, 30), SPECIALS])
    special = slice(90, None)
    for n in (2, 3):  # one kernel for every n (n + 1 and log n! are parameters)
        got = vkml.polygamma(n, vkml.tensor(x)).numpy()
        assert_same_bits(vkml.polygamma(n, vkml.tensor(x, device=gpu)).numpy(), got, f"polygamma({n}) on {gpu}")
        assert_same_bits(got[special], torch.polygamma(n, torch.from_numpy(x[special])).numpy(), f"n={n} specials")


@pytest.mark.stress  # two more large kernels on lavapipe
def test_zeta_same_bits_on_lavapipe(gpu):
    s, q = np.array([2.5, 3.0, 1.01, 2.0], F32), np.array([0.5, -2.25, 40.0, 1e-30], F32)
    want = vkml.special.zeta(vkml.tensor(s), vkml.tensor(q)).numpy()
    assert_same_bits(vkml.special.zeta(vkml.tensor(s, device=gpu), vkml.tensor(q, device=gpu)).numpy(), want, "zeta")
    got = vkml.polygamma(5, vkml.tensor(np.concatenate([_sample(5, 30), SPECIALS]), device=gpu)).numpy()
    regular = np.isfinite(got)
    _check_polygamma(5, np.concatenate([_sample(5, 30), SPECIALS])[regular], got[regular])


@pytest.mark.stress  # minutes: the mpmath reference of 2^20 values
@pytest.mark.parametrize("n", [2, 7])
def test_polygamma_float16_exhaustive_and_float32_sample(n):
    # every finite float16 but the poles, and 2^20 float32 inputs (the mpmath reference takes minutes)
    x16 = np.arange(65536, dtype=np.uint16).view(np.float16)
    x16 = x16[np.isfinite(x16) & ((x16 > 0) | (x16 != np.floor(x16)))]
    got32 = vkml.polygamma(n, vkml.tensor(x16.astype(F32))).numpy()
    with np.errstate(over="ignore"):
        assert_same_bits(vkml.polygamma(n, vkml.tensor(x16)).numpy(), got32.astype(np.float16), "float16")
    _check_polygamma(n, x16.astype(F32), got32)
    x = _sample(100 + n, (1 << 20) // 3 + 1)
    _check_polygamma(n, x, vkml.polygamma(n, vkml.tensor(x)).numpy())


def test_polygamma_divergence_where_torch_overflows_n_factorial():
    # PyTorch's float32 kernel forms exp(lgamma(n + 1)) first: inf for n >= 35 (35! > 3.4e38), NaN where
    # its zeta underflows to 0 as well
    x = np.array([5.0, 40.0], F32)
    theirs = torch.polygamma(35, torch.from_numpy(x)).numpy()
    assert np.isinf(theirs[0]) and np.isnan(theirs[1])
    got = vkml.polygamma(35, vkml.tensor(x)).numpy()
    _check_polygamma(35, x, got)
    assert np.isfinite(got).all()


def test_polygamma_gradient_as_torch():
    # d/dx polygamma(n, x) = polygamma(n + 1, x) (trigamma's, polygamma(2, x): tests/test_ops_trig.py)
    x = np.array([0.3, 1.7, 6.0, -1.25], F32)
    t = torch.tensor(x, requires_grad=True)
    torch.polygamma(2, t).sum().backward()
    v = vkml.tensor(x, requires_grad=True)
    vkml.polygamma(2, v).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), t.grad.numpy(), rtol=2e-5)


@pytest.mark.stress  # three more large kernels
def test_zeta_gradient_as_torch():
    # the derivative in q is -x zeta(x + 1, q); in x PyTorch has none
    t = torch.tensor([1.5, 3.0], requires_grad=True)
    torch.special.zeta(torch.tensor([2.5, 4.0]), t).sum().backward()
    v = vkml.tensor([1.5, 3.0], requires_grad=True)
    vkml.special.zeta(vkml.tensor([2.5, 4.0]), v).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_polygamma_argument_errors():
    x = vkml.tensor([1.0])
    with pytest.raises(TypeError, match="must be int"):
        vkml.polygamma(2.0, x)
    with pytest.raises(NotImplementedError, match="float64"):
        vkml.polygamma(3, vkml.tensor(np.array([1.0])))
    with pytest.raises(TypeError, match="Tensor"):
        vkml.special.zeta(2.0, 1.0)


def test_zeta_against_mpmath_and_torch():
    # finite values against mpmath, then Cephes' special values against torch, in one call
    s = np.array([2.0, 2.5, 3.0, 1.5, 4.0, 1.01, 10.0, 3.0, 2.0, 3.0, 7.0, 300.0, 1.5], F32)
    q = np.array([1.0, 0.5, 2.0, 3.0, 1e-3, 1.0, 5.0, -1.5, -1.5, -2.25, 40.0, 1.25, 3e38], F32)
    s2 = np.array([1.0, 0.5, 2.0, 2.5, np.inf, np.nan, 2.0, 2.0, 2.0, 3.0, 1e30, 1e30, 1e30], F32)
    q2 = np.array([1.0, 1.0, 0.0, -1.5, 2.0, 1.0, np.inf, np.nan, -2.0, -0.0, 0.5, 1.0, 2.0], F32)
    got = vkml.special.zeta(vkml.tensor(np.stack([s, s2])), vkml.tensor(np.stack([q, q2]))).numpy()
    with mp.workprec(80):
        want = np.array([float(mp.zeta(float(a), float(b))) for a, b in zip(s, q)])
    assert (np.abs(got[0] - want) <= _ulp(want)).all(), (got[0], want)
    want2 = torch.special.zeta(torch.from_numpy(s2), torch.from_numpy(q2)).numpy()
    assert_same_bits(got[1, :-1], want2[:-1], "special values")
    # divergence: where every term underflows PyTorch's Cephes loop gives NaN (0 * inf); the sum is 0
    assert np.isnan(want2[-1]) and got[1, -1] == 0.0
    # no derivative in x, as PyTorch (raised when the graph is built, before any kernel runs)
    w = vkml.tensor([2.5], requires_grad=True)
    with pytest.raises(NotImplementedError, match="zeta"):
        vkml.special.zeta(w, vkml.tensor([1.5])).sum().backward()
