"""torch.special's functions of vkml/ops/special.py (ndtr ... the orthogonal polynomials), torch.i0 and
torch.mvlgamma against torch and mpmath, on the CPU and on lavapipe.

- Each op on float32 and float64 tensors of edge values (0, ±0, negatives, large, ±inf, NaN) gives torch's
  special values and NaN-ness, and values within a few ulp of torch's float64 result (float32 against
  torch's float64 rounded once; PyTorch's own float32 kernels are further off); the documented divergences
  are asserted where they apply (``DIVERGENCES_ASSERTED``).
- The float64 routines are within the bound their op page states, against mpmath at 50 digits.
- Gradients match torch's where torch has one; where it has none the result does not require grad.
- Lavapipe gives the CPU's bits.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
from vkml.ops.registry import REGISTRY

EDGES = np.array(
    [-40.0, -27.0, -10.0, -3.0, -1.5, -1.0, -0.5, -1e-30, -0.0, 0.0, 1e-30, 0.3, 0.5, 1.0, 2.5, 8.0, 9.0, 30.0,
     90.0, 800.0, 1e200, np.inf, -np.inf, np.nan]
)  # fmt: skip
PROBABILITIES = np.array([0.0, 1e-300, 1e-30, 1e-8, 0.01, 0.2, 0.25, 0.3, 0.5 - 1e-12, 0.5, 0.7, 0.75, 0.9, 1 - 1e-9,
                          1.0, 1.5, -0.1, np.nan])  # fmt: skip
UNARY = ("ndtr", "ndtri", "log_ndtr", "erfcx", "i0", "i0e", "i1", "i1e", "spherical_bessel_j0", "entr")
UNARY += ("modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1")
BESSEL_JY = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1")
UNARY += (*BESSEL_JY, "airy_ai")
ABSOLUTE = (*BESSEL_JY, "airy_ai")  # within absolute bounds near their zeros; PyTorch's are 1e-8 off
POLYNOMIALS = tuple(name for name in dir(torch.special) if "_polynomial_" in name)
SPECIAL_OPS = set(UNARY) | set(POLYNOMIALS) | {"xlog1py"}
GRAD_TESTED = {"ndtr", "ndtri", "log_ndtr", "erfcx", "i0", "i0e", "i1", "i1e", "entr", "xlog1py"}
GRAD_TESTED |= {"igamma", "igammac"}  # test_incomplete_gamma_as_torch_and_mpmath
UNSET_AT_NAN = {f"{k}_polynomial_{x}" for k, x in (("chebyshev", "u"), ("chebyshev", "w"), ("laguerre", "l"))}
UNSET_AT_NAN |= {"shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_w", "legendre_polynomial_p"}
DIVERGENCES_ASSERTED = {"ndtr", "i0", "i1", "igamma", "igammac"} | UNSET_AT_NAN | set(ABSOLUTE)
XS = np.array([-2.5, -1.0, -0.7, -0.0, 0.0, 0.3, 0.5, 1.0, 1.2, 3.0, np.inf, -np.inf, np.nan])
NS = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 7.0, 9.0, 12.0, 30.0, 4.7, np.nan, np.inf, -np.inf])


def _inputs(name: str) -> tuple[np.ndarray, ...]:
    if name == "ndtri":
        return (PROBABILITIES,)
    if name in POLYNOMIALS:
        x, n = np.meshgrid(XS, NS)
        return x.ravel(), n.ravel()
    if name == "xlog1py":
        x, y = np.meshgrid(np.array([0.0, -2.0, 0.5, 3.0, np.inf, np.nan]), np.array([-2.0, -1.0, -0.5, 0.0, 4.0,
                                                                                        np.inf, np.nan]))  # fmt: skip
        return x.ravel(), y.ravel()
    return (EDGES,)


def _vkml(name: str, *arrays, dtype=vkml.float32, device=None):
    fn = vkml.i0 if name == "i0" else getattr(vkml.special, name)
    return fn(*(vkml.tensor(a, dtype=dtype, device=device) for a in arrays))


def _torch(name: str, *arrays, dtype=torch.float64):
    return getattr(torch.special, name)(*(torch.tensor(a, dtype=dtype) for a in arrays)).numpy()


def _divergent(name: str, arrays, want: np.ndarray, dtype) -> np.ndarray:
    """Where a documented divergence applies (asserted here): vkml's accurate value stands, not torch's."""
    x = arrays[0]
    if name == "ndtr":  # PyTorch's (1 + erf(x/sqrt 2))/2 cancels in the left tail
        return x < -2.0
    if name in ("i0", "i1") and dtype is vkml.float32:  # PyTorch's float32 exp(|x|) overflows from 88.72
        theirs = _torch(name, *arrays, dtype=torch.float32)
        early = np.isinf(theirs) & (np.abs(x) > 88.72) & (np.abs(x) < 91.9)
        return early
    if name in UNSET_AT_NAN:  # PyTorch's CPU kernel returns an unset value for a NaN x and n >= 2
        n = arrays[1]
        return np.isnan(x) & (n >= 2) & np.isfinite(n)
    return np.zeros(x.shape, bool)


# The default suite runs a few rows of each table (each op is a kernel of its own, seconds to build on this
# CI's two cores); `make test-all` runs every row.
_DEFAULT = {"ndtr", "i0e", "xlog1py", "legendre_polynomial_p"}


def _rows(names, default=_DEFAULT):
    return [name if name in default else pytest.param(name, marks=pytest.mark.stress) for name in sorted(names)]


def _table_rows():
    for name in sorted(SPECIAL_OPS):
        for dtype in (vkml.float32, vkml.float64):
            default = dtype is vkml.float32 and name in _DEFAULT | {"entr", "bessel_j0", "erfcx", "i1"}
            marks = () if default else (pytest.mark.stress,)
            yield pytest.param(name, dtype, marks=marks, id=f"{name}-{dtype.name}")


@pytest.mark.parametrize(("name", "dtype"), list(_table_rows()))
def test_matches_torch_at_edge_values(name, dtype):
    arrays = _inputs(name)
    if dtype is vkml.float32:
        with np.errstate(over="ignore"):
            arrays = tuple(a.astype(np.float32).astype(np.float64) for a in arrays)  # the inputs vkml sees
    got = _vkml(name, *arrays, dtype=dtype)
    assert got.dtype is dtype
    got = got.numpy().astype(np.float64)
    want = _torch(name, *arrays)
    if dtype is vkml.float32:
        with np.errstate(over="ignore"):
            want = want.astype(np.float32).astype(np.float64)  # torch's float64 value rounded once
    if name in ABSOLUTE:  # PyTorch's are 1e-8 off (asserted): mpmath is the oracle where the value is finite
        theirs = want
        at = arrays[0] if name == "airy_ai" else np.abs(arrays[0])
        with mp.workdps(30):
            want = np.array([float(_MP[name](mp.mpf(float(v)))) if np.isfinite(t) and v != 0 else t
                             for v, t in zip(at, theirs)])  # fmt: skip
        want = np.where((arrays[0] < 0) & (name == "bessel_j1"), -want, want)
        if dtype is vkml.float32:
            want = want.astype(np.float32).astype(np.float64)
        if dtype is vkml.float64:
            assert (np.abs(theirs - want) > 1e-9).any(), f"{name}: PyTorch's divergence is gone"
    divergent = _divergent(name, arrays, want, dtype)
    if name in UNSET_AT_NAN:
        assert np.isnan(got[divergent]).all(), f"{name}: a NaN input gives NaN"
        theirs = _torch(name, *arrays)[divergent]
        assert not np.isnan(theirs).all(), f"{name}: PyTorch's divergence is gone; update the op page"
    elif divergent.any():
        theirs = _torch(name, *arrays, dtype=torch.float64 if name == "ndtr" else torch.float32)[divergent]
        mine = got[divergent]
        assert (np.abs(mine - theirs) > 1e-3 * np.abs(mine)).any(), f"{name}: PyTorch's divergence is gone"
    keep = ~divergent
    got, want = got[keep], want[keep]
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{name}: NaN where torch has none, or none where it has"
    exact = ~np.isfinite(want) | (want == 0)
    assert_same_bits(got[exact], want[exact], f"{name}: torch's infinities and zeros")
    finite = ~exact & ~np.isnan(want)
    if name in ABSOLUTE:  # an absolute bound near the zeros: 2^-48 of max(|value|, 1), float32 1 ulp of that
        scale = np.maximum(np.abs(want[finite]), 1.0)
        tol = scale * (2.0**-23 if dtype is vkml.float32 else 2.0**-48)
        if name == "airy_ai":  # and the phase's (x < -2) or e^-zeta's (x > 2) rounding
            xs = np.abs(arrays[0][keep][finite])
            tol = tol + np.where(arrays[0][keep][finite] < 0, 1.0, np.abs(want[finite])) * xs**1.5 * 2.0**-50
        assert (np.abs(got[finite] - want[finite]) <= tol).all(), f"{name}: beyond its absolute bound"
        return
    # float32: within 1 float32 ulp of torch's float64 value rounded; float64: the op page's few ulp
    # (the polynomials: PyTorch's float64 recurrence, the same steps)
    tol = 2 * np.spacing(np.abs(want[finite]).astype(np.float32)).astype(np.float64) if dtype is vkml.float32 else 0
    if dtype is vkml.float64:  # PyTorch's own float64 results are a few ulp off (log_ndtr's tail 1e-14)
        tol = 1e-13 * np.abs(want[finite])
    if name in POLYNOMIALS:  # the recurrences cancel: rounding errors relative to max(|T_k|, 1)
        tol = np.maximum(tol, (3e-7 if dtype is vkml.float32 else 4e-15) * np.maximum(np.abs(want[finite]), 1))
    err = np.abs(got[finite] - want[finite])
    assert (err <= tol).all(), f"{name}: {arrays[0][keep][finite][err > tol]} off torch by {err[err > tol]}"


_MP = {
    "ndtr": lambda x: mp.ncdf(x),
    "log_ndtr": lambda x: mp.log(mp.ncdf(x)),
    "erfcx": lambda x: mp.exp(x * x) * mp.erfc(x),
    "i0": lambda x: mp.besseli(0, x),
    "i0e": lambda x: mp.besseli(0, x) * mp.exp(-abs(x)),
    "i1": lambda x: mp.besseli(1, x),
    "i1e": lambda x: mp.besseli(1, x) * mp.exp(-abs(x)),
    "spherical_bessel_j0": lambda x: mp.sin(x) / x,
    "bessel_j0": lambda x: mp.besselj(0, x),
    "bessel_j1": lambda x: mp.besselj(1, x),
    "bessel_y0": lambda x: mp.bessely(0, x),
    "bessel_y1": lambda x: mp.bessely(1, x),
    "airy_ai": lambda x: mp.airyai(x),
    "modified_bessel_k0": lambda x: mp.besselk(0, x),
    "modified_bessel_k1": lambda x: mp.besselk(1, x),
    "scaled_modified_bessel_k0": lambda x: mp.besselk(0, x) * mp.exp(x),
    "scaled_modified_bessel_k1": lambda x: mp.besselk(1, x) * mp.exp(x),
}
_BOUND = {"ndtr": 2, "log_ndtr": 4, "erfcx": 2, "i0": 12, "i0e": 8, "i1": 12, "i1e": 8, "spherical_bessel_j0": 2}
_BOUND.update(dict.fromkeys(("modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0"), 8))
_BOUND["scaled_modified_bessel_k1"] = 8


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    order = lambda a: np.where(a.view(np.int64) < 0, -(a.view(np.int64) & (2**63 - 1)), a.view(np.int64))  # noqa: E731
    return np.abs(order(got) - order(want))  # in int64: as float64 these integers would round to 512


@pytest.mark.parametrize("name", _rows(set(_MP) - set(ABSOLUTE)))  # J, Y, Ai: absolute bounds, the table test
def test_float64_within_the_stated_bound(name):
    rng = np.random.default_rng(len(name))
    x = np.concatenate([rng.uniform(-12, 12, 24), rng.uniform(-40, 40, 8), EDGES[np.abs(EDGES) < 1e3]])
    if name in ("i0", "i1"):
        x = x[np.abs(x) < 700]
    if "bessel_k" in name:
        x = np.abs(x[(x != 0) & (np.abs(x) < 700)])
    x = x[x != 0] if name == "spherical_bessel_j0" else x
    got = _vkml(name, x, dtype=vkml.float64).numpy()
    with mp.workdps(50):
        want = np.array([float(_MP[name](mp.mpf(float(v)))) for v in x])
    ok = np.isfinite(want) & (np.abs(want) > 2.0**-1022)
    assert str(_BOUND[name]) in REGISTRY[name].precision.split("float64: ")[1][:4]
    err = _ulps(got[ok], want[ok])
    assert err.max() <= _BOUND[name], f"{name}: {x[ok][np.argmax(err)]} is {err.max()} ulp off"


@pytest.mark.stress  # float64 ndtri and ndtr: two large kernels
def test_ndtri_inverts_ndtr_and_its_float64_bound():
    # ndtri(ndtr(x)) = x in float64 where ndtr(x) is not rounded to 1 (torch's double ndtri as the oracle)
    x = np.array([-37.5, -20.0, -5.0, -1.0, -0.3, 0.0, 0.3, 1.0, 5.0, 8.0])
    p = vkml.special.ndtr(vkml.tensor(x, dtype=vkml.float64))
    back = vkml.special.ndtri(p).numpy()
    np.testing.assert_allclose(back[x < 0], x[x < 0], rtol=1e-15)
    got = vkml.special.ndtri(vkml.tensor(PROBABILITIES, dtype=vkml.float64)).numpy()
    want = _torch("ndtri", PROBABILITIES)
    ok = np.isfinite(want) & (want != 0)
    assert _ulps(got[ok], want[ok]).max() <= 4
    assert "≤ 4 ulp" in REGISTRY["ndtri"].precision.split("float64: ")[1]


@pytest.mark.parametrize("name", _rows(GRAD_TESTED - {"igamma", "igammac"}, {"i1", "xlog1py"}))
def test_gradient_matches_torch(name):
    arrays = {
        "ndtri": (np.array([0.01, 0.3, 0.8]),),
        "xlog1py": (np.array([0.0, 1.5, -2.0]), np.array([-1.0, 0.5, 3.0])),
    }
    arrays = arrays.get(name, (np.array([-3.0, -0.5, 0.0, 0.7, 9.0]),))
    if name == "entr":
        arrays = (np.array([0.2, 1.0, 3.0]),)
    ours = [vkml.tensor(a, dtype=vkml.float64, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    fn = vkml.i0 if name == "i0" else getattr(vkml.special, name)
    (fn(*ours) * vkml.tensor([1.0, 2.0, 3.0, 4.0, 5.0][: len(arrays[0])], dtype=vkml.float64)).sum().backward()
    (getattr(torch.special, name)(*theirs) * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0][: len(arrays[0])])).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-300)


def test_no_gradient_where_torch_has_none_and_namespace_calls():
    x = vkml.tensor([0.5, 2.0], requires_grad=True)
    for name in ("spherical_bessel_j0", "modified_bessel_i0", "modified_bessel_i1"):
        assert not getattr(vkml.special, name)(x).requires_grad, name
        assert getattr(torch.special, name)(torch.tensor([0.5], requires_grad=True)).requires_grad is False
    assert not vkml.special.chebyshev_polynomial_t(x, 3).requires_grad
    assert vkml.special.i1(x).requires_grad and vkml.i0(x).requires_grad
    # the modified Bessel functions of the first kind are i0 and i1's values
    assert_same_bits(vkml.special.modified_bessel_i0(x).numpy(), vkml.i0(x).detach().numpy(), "modified_bessel_i0")
    # a Python number for x or n, not both (PyTorch's overloads); n truncated
    assert vkml.special.chebyshev_polynomial_t(0.5, vkml.tensor([2, 3])).tolist() == [-0.5, -1.0]
    assert vkml.special.legendre_polynomial_p(vkml.tensor([0.5]), 2.9).tolist() == [-0.125]
    with pytest.raises(TypeError):
        vkml.special.chebyshev_polynomial_t(0.5, 3)
    # dtypes as torch: integers give float32, float16 stays float16, float64 n promotes
    assert vkml.special.ndtr(vkml.tensor([1, 2])).dtype is vkml.float32
    assert vkml.special.erfcx(vkml.tensor([1.0], dtype=vkml.float16)).dtype is vkml.float16
    n64 = vkml.tensor([3.0], dtype=vkml.float64)
    assert vkml.special.hermite_polynomial_h(vkml.tensor([0.5]), n64).dtype is vkml.float64
    # out=, Tensor.i0_ and torch.i0_
    out = vkml.empty(2)
    assert vkml.special.ndtr(vkml.tensor([0.0, 1.0]), out=out) is out and out.tolist()[0] == 0.5
    y = vkml.tensor([0.0, 1.0])
    y.i0_()
    assert_same_bits(y.numpy(), torch.i0(torch.tensor([0.0, 1.0], dtype=torch.float64)).float().numpy(), "i0_")


def test_float16_is_the_float32_result_rounded():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.0, np.inf, np.nan], np.float16).astype(np.float32)
    for name in ("ndtr", "erfcx", "i1e"):
        got = getattr(vkml.special, name)(vkml.tensor(x, dtype=vkml.float16)).numpy()
        want = getattr(vkml.special, name)(vkml.tensor(x)).numpy().astype(np.float16)
        assert_same_bits(got, want, name)


def test_mvlgamma_and_multigammaln_as_torch():
    x = np.array([[1.5, 2.0, 7.25], [0.2, 3.0, 40.0]], np.float32)
    for p in (3,):
        want = torch.mvlgamma(torch.tensor(x), p).numpy()
        np.testing.assert_allclose(vkml.mvlgamma(vkml.tensor(x), p).numpy(), want, rtol=2e-6)
        np.testing.assert_allclose(vkml.tensor(x).mvlgamma(p).numpy(), want, rtol=2e-6)
        np.testing.assert_allclose(vkml.special.multigammaln(vkml.tensor(x), p).numpy(), want, rtol=2e-6)
    assert vkml.mvlgamma(vkml.tensor([2, 3]), 2).dtype is vkml.float32
    t = vkml.tensor(x)
    assert t.mvlgamma_(2) is t
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        vkml.mvlgamma(vkml.tensor(x), 0)
    with pytest.raises(TypeError, match="must be int, not float"):
        vkml.mvlgamma(vkml.tensor(x), 2.0)


@pytest.mark.stress  # lgamma's backward kernels
def test_mvlgamma_gradient_as_torch():
    x = np.array([[1.5, 2.0, 7.25], [0.2, 3.0, 40.0]], np.float32)
    v = vkml.tensor(x, requires_grad=True)
    w = torch.tensor(x, requires_grad=True)
    vkml.mvlgamma(v, 3).sum().backward()
    torch.mvlgamma(w, 3).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), w.grad.numpy(), rtol=1e-5)


_CHEAP_ON_LAVAPIPE = ("i0e", "entr", "xlog1py", "chebyshev_polynomial_t", "hermite_polynomial_he")


@pytest.mark.parametrize(
    "name",
    [n if n in _CHEAP_ON_LAVAPIPE else pytest.param(n, marks=pytest.mark.stress) for n in sorted(SPECIAL_OPS)],
)
def test_same_bits_on_lavapipe(name, gpu):
    # The polynomials at degrees up to 30: lavapipe runs the recurrence of each lane for its own n
    arrays = _inputs(name)
    for dtype in (vkml.float32, vkml.float64):
        want = _vkml(name, *arrays, dtype=dtype).numpy()
        got = _vkml(name, *arrays, dtype=dtype, device=gpu).numpy()
        keep = ~np.isnan(want)
        assert_same_bits(got[keep], want[keep], f"{name} ({dtype}) on {gpu}")
        assert np.isnan(got[~keep]).all()


def test_the_ops_are_defined_once():
    assert {op.name for op in REGISTRY.values() if op.body is not None and op.name in SPECIAL_OPS} == SPECIAL_OPS
    assert math.isclose(vkml.special.ndtri(vkml.tensor([0.975], dtype=vkml.float64)).item(), 1.959963984540054)


INCOMPLETE_GAMMA = {"igamma", "igammac"}
SPECIAL_OPS_TESTED = SPECIAL_OPS | INCOMPLETE_GAMMA  # what tests/test_ops_elementwise.py counts as tested


def test_incomplete_gamma_in_float32_and_its_errors():
    a = np.array([0.5, 3.0, 20.0, 0.0, 0.0, -1.0, 1.0, np.inf, 2.0, np.nan], np.float32)
    x = np.array([0.1, 2.5, 25.0, 0.0, 1.0, 1.0, 0.0, np.inf, np.inf, 1.0], np.float32)
    got = vkml.special.gammainc(vkml.tensor(a), vkml.tensor(x)).numpy()
    with mp.workdps(30):
        want = [
            float(mp.gammainc(mp.mpf(float(p)), 0, mp.mpf(float(q)), regularized=True)) for p, q in zip(a[:3], x[:3])
        ]
    np.testing.assert_allclose(got[:3], np.float32(want), rtol=1.2e-7)
    assert_same_bits(got[3:], torch.special.gammainc(torch.tensor(a[3:]), torch.tensor(x[3:])).numpy(), "specials")
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):  # as PyTorch's
        vkml.igamma(vkml.tensor([2, 3]), vkml.tensor([1, 2]))
    assert vkml.igamma(vkml.tensor([2, 3]), vkml.tensor([1.0, 2.0])).dtype is vkml.float32
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        vkml.special.gammainc(vkml.tensor([2.0]), 3.0)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        vkml.igamma(vkml.tensor([1.0], requires_grad=True), vkml.tensor([2.0])).sum().backward()


@pytest.mark.stress  # four large kernels (float64 and float32, each function) and their gradients
def test_incomplete_gamma_as_torch_and_mpmath():
    inf, nan = math.inf, math.nan
    a = np.array([0.5, 3.0, 20.0, 1e-5, 100.0, 0.0, 0.0, 0.0, -1.0, 1.0, 1.0, inf, inf, 2.0, nan, 1.0])
    x = np.array([0.1, 2.5, 25.0, 1.1, 101.0, 0.0, 1.0, inf, 1.0, -1.0, 0.0, 1.0, inf, inf, 1.0, nan])
    regular = np.arange(len(a)) < 5
    for name, lower in (("igamma", True), ("igammac", False)):
        with mp.workdps(40):
            want = np.array([float(mp.gammainc(mp.mpf(p), 0, mp.mpf(q), regularized=True)) if lower else
                             float(mp.gammainc(mp.mpf(p), mp.mpf(q), mp.inf, regularized=True))
                             for p, q in zip(a[regular], x[regular])])  # fmt: skip
        got64 = getattr(vkml, name)(vkml.tensor(a, dtype=vkml.float64), vkml.tensor(x, dtype=vkml.float64)).numpy()
        np.testing.assert_allclose(got64[regular], want, rtol=1e-12)
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
        assert_same_bits(got64[~regular], theirs[~regular], f"{name}: torch's special values")
        # the divergence: PyTorch's float64 values at (100, 101) and, for igammac, (1e-5, 1.1) are further off
        assert abs(theirs[4] - want[4]) > 1e-10 * abs(want[4]) > abs(got64[4] - want[4])
        a32, x32 = vkml.tensor(a, dtype=vkml.float32), vkml.tensor(x, dtype=vkml.float32)
        got32 = getattr(vkml.special, "gammainc" if lower else "gammaincc")(a32, x32)
        assert got32.dtype is vkml.float32
        np.testing.assert_allclose(got32.numpy()[regular], want.astype(np.float32), rtol=1.2e-7)
        assert_same_bits(getattr(a32, name)(x32).numpy(), got32.numpy(), f"Tensor.{name}")
    # d/dx as torch; d/da raises as torch
    av = vkml.tensor([0.5, 3.0, 20.0], dtype=vkml.float64)
    xv = vkml.tensor([0.1, 2.5, 25.0], dtype=vkml.float64, requires_grad=True)
    xt = torch.tensor([0.1, 2.5, 25.0], dtype=torch.float64, requires_grad=True)
    vkml.igammac(av, xv).sum().backward()
    torch.igammac(torch.tensor([0.5, 3.0, 20.0], dtype=torch.float64), xt).sum().backward()
    np.testing.assert_allclose(xv.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        vkml.igamma(vkml.tensor([1.0], requires_grad=True), vkml.tensor([2.0])).sum().backward()
    t = vkml.tensor([2.0, 3.0])
    assert t.igamma_(vkml.tensor([1.0, 1.0])) is t


@pytest.mark.stress  # two large kernels on lavapipe
def test_incomplete_gamma_same_bits_on_lavapipe(gpu):
    a, x = np.array([0.5, 3.0, 20.0, 1e-5, 100.0, 0.0]), np.array([0.1, 2.5, 25.0, 1.1, 101.0, 1.0])
    for name in sorted(INCOMPLETE_GAMMA):
        want = getattr(vkml, name)(vkml.tensor(a, dtype=vkml.float32), vkml.tensor(x, dtype=vkml.float32)).numpy()
        got = getattr(vkml, name)(
            vkml.tensor(a, dtype=vkml.float32, device=gpu), vkml.tensor(x, dtype=vkml.float32, device=gpu)
        ).numpy()
        assert_same_bits(got, want, f"{name} on {gpu}")
