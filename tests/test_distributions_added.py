"""The distributions and KL pairs added to vkml.distributions after the first set (tests/test_distributions.py):
ContinuousBernoulli, FisherSnedecor, GeneralizedPareto, Kumaraswamy, LogisticNormal, VonMises, and every
pair PyTorch registers between the families vkml has.

Exact quantities (log_prob, entropy, moments, cdf/icdf, kl_divergence) and their gradients are compared
with PyTorch on the same parameters; samples (vkml's generator) by shape, support and moments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.kl as TK

import vkml
import vkml.distributions as VD

RNG = np.random.default_rng(11)
REAL = RNG.standard_normal(3).astype(np.float32)
POS = (RNG.random(3) + 0.5).astype(np.float32)
POS2 = (RNG.random(3) + 0.5).astype(np.float32)
UNIT = np.array([0.2, 0.4996, 0.8], np.float32)  # the middle one inside ContinuousBernoulli's Taylor region

# name -> (builder(D, tensors), parameters, a value in the support, extra methods)
CASES = {
    "ContinuousBernoulli-probs": (
        lambda D, p: D.ContinuousBernoulli(probs=p["p"]),
        {"p": UNIT},
        UNIT[::-1].copy(),
        "cdf icdf",
    ),
    "ContinuousBernoulli-logits": (
        lambda D, p: D.ContinuousBernoulli(logits=p["l"]),
        # logits away from 0: just outside the Taylor region the closed forms cancel, and their gradients
        # agree with PyTorch's only to about 1% in float32
        {"l": np.array([-1.3, 0.8, 2.1], np.float32)},
        np.array([0.1, 0.5, 0.7], np.float32),
        "cdf icdf",
    ),
    "FisherSnedecor": (lambda D, p: D.FisherSnedecor(p["a"], p["b"]), {"a": POS * 8, "b": POS2 * 10}, POS, ""),
    "GeneralizedPareto": (
        lambda D, p: D.GeneralizedPareto(p["loc"], p["scale"], p["c"]),
        {"loc": REAL, "scale": POS, "c": np.array([0.3, 0.0, -0.2], np.float32)},
        REAL + 0.4,
        "cdf icdf",
    ),
    "Kumaraswamy": (lambda D, p: D.Kumaraswamy(p["a"], p["b"]), {"a": POS + 1, "b": POS2 + 1}, UNIT, ""),
    "LogisticNormal": (
        lambda D, p: D.LogisticNormal(p["loc"], p["scale"]),
        {"loc": REAL, "scale": POS},
        np.array([0.1, 0.2, 0.3, 0.4], np.float32),
        "",
    ),
    "VonMises": (
        lambda D, p: D.VonMises(p["loc"], p["k"]),
        {"loc": REAL, "k": np.array([0.5, 2.0, 5.0], np.float32)},
        REAL[::-1].copy(),
        "",
    ),
}
# Each case compiles tens of kernels on the CPU interpreter (5-20 s): they run under -m stress; the default
# suite keeps one KL pair, LKJCholesky's log_prob, the errors and the registry.
DEFAULT_CASES = ()


def _quantities(D, lib, case: str):
    """The case's quantities by name; one PyTorch does not implement is the exception's name."""
    builder, params, value, extra = CASES[case]
    tensors = {k: lib.tensor(v, requires_grad=True) for k, v in params.items()}
    d = builder(D, tensors)
    tensor = lib.tensor
    calls = {
        "log_prob": lambda: d.log_prob(tensor(value)),
        "entropy": d.entropy,
        "mean": lambda: d.mean,
        "variance": lambda: d.variance,
        "stddev": lambda: d.stddev,
        "mode": lambda: d.mode,
    }
    if "cdf" in extra:
        calls["cdf"] = lambda: d.cdf(tensor(value))
        calls["icdf"] = lambda: d.icdf(tensor(np.full(value.shape, 0.3, np.float32)))
    out = {}
    for name, call in calls.items():
        try:
            out[name] = call()
        except NotImplementedError:
            out[name] = "NotImplementedError"
    return tensors, out, (tuple(d.batch_shape), tuple(d.event_shape))


@pytest.mark.parametrize(
    "case", [c if c in DEFAULT_CASES else pytest.param(c, marks=pytest.mark.stress) for c in CASES]
)
def test_values_and_gradients_match_torch(case: str) -> None:
    t_params, t_out, t_shapes = _quantities(TD, torch, case)
    v_params, v_out, v_shapes = _quantities(VD, vkml, case)
    assert v_shapes == t_shapes
    assert {k: isinstance(v, str) for k, v in v_out.items()} == {k: isinstance(v, str) for k, v in t_out.items()}
    computed = [n for n, t in t_out.items() if not isinstance(t, str)]
    for name in computed:
        np.testing.assert_allclose(
            v_out[name].detach().numpy(), t_out[name].detach().numpy(), rtol=2e-5, atol=2e-6, err_msg=f"{case}.{name}"
        )
    weighted = [n for n in computed if t_out[n].requires_grad and not t_out[n].isnan().any()]
    weights = {n: RNG.standard_normal(tuple(t_out[n].shape)).astype(np.float32) for n in weighted}
    t_loss = sum((t_out[n] * torch.tensor(weights[n])).sum() for n in weighted)
    v_loss = sum((v_out[n] * vkml.tensor(weights[n])).sum() for n in weighted)
    names = list(t_params)
    t_grads = torch.autograd.grad(t_loss, [t_params[k] for k in names], allow_unused=True)
    v_grads = vkml.autograd.grad(v_loss, [v_params[k] for k in names], allow_unused=True)
    for k, tg, vg in zip(names, t_grads, v_grads):
        if tg is None:
            assert vg is None or not np.any(vg.numpy()), k
        else:
            np.testing.assert_allclose(vg.numpy(), tg.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{case} d/d{k}")


# A distribution of each family vkml has that PyTorch's kl registry names, by (D, tensors)
FAMILIES = {
    "Bernoulli": lambda D, t: D.Bernoulli(probs=t["unit"]),
    "Beta": lambda D, t: D.Beta(t["pos"], t["pos2"]),
    "Binomial": lambda D, t: D.Binomial(5, probs=t["unit"]),
    "ContinuousBernoulli": lambda D, t: D.ContinuousBernoulli(probs=t["unit"]),
    "Exponential": lambda D, t: D.Exponential(t["pos"]),
    "Gamma": lambda D, t: D.Gamma(t["pos"] + 1, t["pos2"]),
    "Gumbel": lambda D, t: D.Gumbel(t["real"], t["pos"]),
    "Laplace": lambda D, t: D.Laplace(t["real"], t["pos"]),
    "Normal": lambda D, t: D.Normal(t["real"], t["pos2"]),
    "Pareto": lambda D, t: D.Pareto(t["pos"], t["pos2"] + 2),
    "Poisson": lambda D, t: D.Poisson(t["pos"]),
    "Uniform": lambda D, t: D.Uniform(t["low"], t["low"] + t["pos"]),
}
KL_TENSORS = {"unit": UNIT, "pos": POS, "pos2": POS2, "real": REAL, "low": np.array([0.05, 0.1, 1.2], np.float32)}
KL_PAIRS = sorted(
    f"{p.__name__}-{q.__name__}" for p, q in TK._KL_REGISTRY if p.__name__ in FAMILIES and q.__name__ in FAMILIES
)
DEFAULT_KL = ("Uniform-Pareto",)


@pytest.mark.parametrize(
    "pair", [p if p in DEFAULT_KL else pytest.param(p, marks=pytest.mark.stress) for p in KL_PAIRS]
)
def test_kl_divergence_and_its_gradient_match_torch(pair: str) -> None:
    p_name, q_name = pair.split("-")
    results = {}
    for lib, D in ((torch, TD), (vkml, VD)):
        tensors = {k: lib.tensor(v, requires_grad=True) for k, v in KL_TENSORS.items()}
        kl = D.kl_divergence(FAMILIES[p_name](D, tensors), FAMILIES[q_name](D, tensors))
        grads = None
        if kl.requires_grad:  # not where the KL is infinite whatever the parameters
            finite = kl.detach().isfinite().to(kl.dtype)
            loss = (kl.nan_to_num(0.0, 0.0, 0.0) * finite).sum()
            grads = lib.autograd.grad(loss, list(tensors.values()), allow_unused=True)
        results[lib] = (kl, grads)
    (t_kl, t_grads), (v_kl, v_grads) = results[torch], results[vkml]
    assert tuple(v_kl.shape) == tuple(t_kl.shape)
    np.testing.assert_allclose(v_kl.detach().numpy(), t_kl.detach().numpy(), rtol=2e-5, atol=2e-6)
    assert (v_grads is None) == (t_grads is None)
    if t_grads is None:
        return
    for name, tg, vg in zip(KL_TENSORS, t_grads, v_grads):
        if tg is None:
            assert vg is None or not np.any(vg.numpy()), name
        else:
            np.testing.assert_allclose(vg.numpy(), tg.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{pair} d/d{name}")


def test_every_registered_pair_of_vkmls_families_is_registered() -> None:
    """PyTorch's registry, restricted to the families vkml has, is vkml's."""
    names = {n for n in TD.__all__ if hasattr(VD, n)}
    theirs = {(p.__name__, q.__name__) for p, q in TK._KL_REGISTRY if p.__name__ in names and q.__name__ in names}
    ours = {(p.__name__, q.__name__) for p, q in VD.kl._KL_REGISTRY}
    assert theirs - ours == set()


def _normals(lib, D, tensors):
    """Two low-rank normals and a full one over ``tensors``, by the names the pairs below use."""
    low = D.LowRankMultivariateNormal(tensors["loc"], tensors["W"], tensors["D"])
    other = D.LowRankMultivariateNormal(tensors["loc"] * 0.5, tensors["W"] * 0.7, tensors["D"] + 0.3)
    full = D.MultivariateNormal(tensors["loc"] + 1, covariance_matrix=tensors["C"])
    return {"LowRankMultivariateNormal": low, "LowRank2": other, "MultivariateNormal": full}


_M = RNG.standard_normal((4, 4)).astype(np.float32)
NORMAL_TENSORS = {
    "loc": RNG.standard_normal((2, 4)).astype(np.float32),
    "W": RNG.standard_normal((2, 4, 2)).astype(np.float32),
    "D": (RNG.random((2, 4)) + 0.5).astype(np.float32),
    "C": (_M @ _M.T + np.eye(4)).astype(np.float32),
}


@pytest.mark.parametrize(
    "pair",
    [
        "LowRankMultivariateNormal-LowRank2",
        pytest.param("MultivariateNormal-LowRankMultivariateNormal", marks=pytest.mark.stress),
        pytest.param("LowRankMultivariateNormal-MultivariateNormal", marks=pytest.mark.stress),
    ],
)
def test_low_rank_normal_kl_pairs_match_torch(pair: str) -> None:
    p_name, q_name = pair.split("-")
    results = []
    for lib, D in ((torch, TD), (vkml, VD)):
        tensors = {k: lib.tensor(v, requires_grad=True) for k, v in NORMAL_TENSORS.items()}
        made = _normals(lib, D, tensors)
        kl = D.kl_divergence(made[p_name], made[q_name])
        grads = lib.autograd.grad(kl.sum(), list(tensors.values()), allow_unused=True)
        results.append([kl.detach().numpy()] + [None if g is None else g.numpy() for g in grads])
    for got, want in zip(results[1], results[0]):
        if want is None:
            assert got is None or not np.any(got)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


# name -> (builder, sample mean, sample variance) of a batch of two; moments from PyTorch's formulas
SAMPLED = {
    "ContinuousBernoulli": lambda D, lib: D.ContinuousBernoulli(lib.tensor([0.2, 0.9])),
    "FisherSnedecor": lambda D, lib: D.FisherSnedecor(lib.tensor([6.0, 10.0]), lib.tensor([12.0, 20.0])),
    "GeneralizedPareto": lambda D, lib: D.GeneralizedPareto(
        lib.tensor([0.0, 1.0]), lib.tensor([1.0, 2.0]), lib.tensor([0.1, -0.3])
    ),
    "Kumaraswamy": lambda D, lib: D.Kumaraswamy(lib.tensor([2.0, 0.7]), lib.tensor([3.0, 1.5])),
    "VonMises": lambda D, lib: D.VonMises(lib.tensor([0.5, -2.0]), lib.tensor([4.0, 10.0])),
}


@pytest.mark.stress
@pytest.mark.parametrize("name", list(SAMPLED))
def test_samples_have_the_distributions_moments_and_support(name: str) -> None:
    n = 4000
    expected = SAMPLED[name](TD, torch)
    mean, var = expected.mean.numpy().astype(np.float64), expected.variance.numpy().astype(np.float64)
    vkml.manual_seed(5)
    d = SAMPLED[name](VD, vkml)
    x = d.sample((n,))
    assert tuple(x.shape) == (n, 2)
    assert bool(d.support.check(x).all())
    values = x.numpy().astype(np.float64)
    if name == "VonMises":  # circular moments: the mean direction, 1 - the mean resultant length
        resultant = np.exp(1j * values).mean(0)
        np.testing.assert_allclose(np.angle(resultant), mean, atol=0.05)
        np.testing.assert_allclose(1 - np.abs(resultant), var, rtol=0.1)
    else:
        for got, want, v in zip(values.mean(0), mean, var):
            assert abs(got - want) < 6 * math.sqrt(v / n), (name, got, want)  # 6 standard errors
        np.testing.assert_allclose(values.var(0), var, rtol=0.25, err_msg=name)
    vkml.manual_seed(7)
    first = SAMPLED[name](VD, vkml).sample((3,)).numpy()
    vkml.manual_seed(7)
    np.testing.assert_array_equal(SAMPLED[name](VD, vkml).sample((3,)).numpy(), first)


INVALID = (  # (D, lib) -> a call that raises PyTorch's ValueError
    lambda D, lib: D.FisherSnedecor(lib.tensor([-1.0]), lib.tensor([1.0])),
    lambda D, lib: D.VonMises(lib.tensor([0.0]), lib.tensor([0.0])),
    lambda D, lib: D.Kumaraswamy(lib.tensor([1.0]), lib.tensor([1.0])).log_prob(lib.tensor([1.5])),
    lambda D, lib: D.ContinuousBernoulli(probs=lib.tensor([1.5]), validate_args=True),
    lambda D, lib: D.ContinuousBernoulli(),
)


def _error(build, D, lib) -> str:
    try:
        build(D, lib)
    except ValueError as error:
        return str(error).split(" of distribution")[0].split("\n")[0][:80]
    return "no error"


def test_errors_match_torch() -> None:
    assert [_error(build, VD, vkml) for build in INVALID] == [_error(build, TD, torch) for build in INVALID]


def _shapes(lib, D) -> dict:
    loc = lib.zeros(2, 3, requires_grad=True)
    made = {
        "LogisticNormal": D.LogisticNormal(loc, lib.ones(2, 3)),
        "Kumaraswamy": D.Kumaraswamy(loc + 2.0, lib.ones(2, 3)),
        "GeneralizedPareto": D.GeneralizedPareto(loc, 1.0, 0.2),
        "FisherSnedecor": D.FisherSnedecor(loc + 4.0, 5.0),
    }
    shapes = {}
    for name, d in made.items():
        x = d.rsample((4,))
        grad = lib.autograd.grad(x.sum(), loc, allow_unused=True)[0]
        expanded = d.expand((5, 2)) if name == "LogisticNormal" else d.expand((5, 2, 3))
        shapes[name] = (tuple(x.shape), tuple(d.batch_shape), tuple(d.event_shape), grad is not None)
        shapes[name] += (tuple(expanded.sample().shape),)
    return shapes


@pytest.mark.stress
def test_shapes_and_rsample_gradients_match_torch() -> None:
    assert _shapes(vkml, VD) == _shapes(torch, TD)


@pytest.mark.stress  # float64 digamma and the gamma sampler: ~10 s of compiles on the CPU interpreter
def test_dirichlet_and_beta_rsample_differentiate_the_concentration_as_pytorch() -> None:
    """PyTorch's implicit reparameterisation (``_dirichlet_grad``: its series near 0 and 1, the saddle
    point for large concentrations, the rational correction elsewhere) on the samples PyTorch draws."""
    results = []
    weights = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    for lib in (torch, vkml):
        lib.manual_seed(4)
        concentration = lib.tensor([[0.5, 2.0, 7.0], [10.0, 12.0, 0.3]], requires_grad=True)
        x = lib.distributions.Dirichlet(concentration).rsample()
        a, b = lib.tensor([0.2, 3.0, 8.0], requires_grad=True), lib.tensor([2.0, 0.7, 9.0], requires_grad=True)
        y = lib.distributions.Beta(a, b).rsample((2,))
        ((x * lib.tensor(weights)).sum() + (y * lib.tensor(weights)).sum()).backward()
        results.append(
            [x.detach().numpy(), y.detach().numpy(), concentration.grad.numpy(), a.grad.numpy(), b.grad.numpy()]
        )
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-7)


def test_lkj_cholesky_log_prob_and_gradient_match_torch() -> None:
    torch.manual_seed(0)
    samples = TD.LKJCholesky(3, torch.tensor([0.5, 2.0])).sample((2,))
    results = []
    for lib, D in ((torch, TD), (vkml, VD)):
        concentration = lib.tensor([0.5, 2.0], requires_grad=True)
        log_prob = D.LKJCholesky(3, concentration).log_prob(lib.tensor(samples.numpy()))
        log_prob.sum().backward()
        results.append((log_prob.detach().numpy(), concentration.grad.numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=2e-5)


def _correlations(factors) -> np.ndarray:
    """The off-diagonal correlations of L L^T for each factor L: (..., pairs)."""
    corr = (factors @ factors.transpose(-1, -2)).numpy().astype(np.float64)
    rows, cols = np.tril_indices(corr.shape[-1], -1)
    return corr[..., rows, cols]


@pytest.mark.stress
def test_lkj_cholesky_samples_spread_as_pytorchs() -> None:
    """The onion method's correlations, by their mean and variance against PyTorch's sampler (whose
    marginals differ by position, so the reference is its samples, not the LKJ marginal formula)."""
    n, dim, eta = 3000, 4, [0.5, 3.0]
    torch.manual_seed(2)
    want = _correlations(TD.LKJCholesky(dim, torch.tensor(eta)).sample((20000,)))
    vkml.manual_seed(2)
    d = VD.LKJCholesky(dim, vkml.tensor(eta))
    factors = d.sample((n,))
    assert tuple(factors.shape) == (n, 2, dim, dim)
    assert bool(d.support.check(factors).all())
    got = _correlations(factors)
    assert np.all(np.abs(got.mean(0)) < 6 * np.sqrt(want.var(0) / n))
    np.testing.assert_allclose(got.var(0), want.var(0), rtol=0.12)


WISHART_COV = np.array([[2.0, 0.5, 0.1], [0.5, 1.5, 0.2], [0.1, 0.2, 1.0]], np.float32)


@pytest.mark.stress
@pytest.mark.parametrize("scale", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_values_and_gradients_match_torch(scale: str) -> None:
    torch.manual_seed(0)
    values = TD.Wishart(torch.tensor([4.0, 6.5]), covariance_matrix=torch.tensor(WISHART_COV)).sample((2,))
    given = {
        "covariance_matrix": WISHART_COV,
        "precision_matrix": np.linalg.inv(WISHART_COV),
        "scale_tril": np.linalg.cholesky(WISHART_COV),
    }[scale].astype(np.float32)
    results = []
    for lib, D in ((torch, TD), (vkml, VD)):
        df, matrix = lib.tensor([4.0, 6.5], requires_grad=True), lib.tensor(given, requires_grad=True)
        d = D.Wishart(df, **{scale: matrix})
        out = [d.log_prob(lib.tensor(values.numpy())), d.entropy(), d.mean, d.variance, d.mode]
        (out[0].sum() + out[1].sum() + out[3].sum()).backward()
        results.append([t.detach().numpy() for t in out] + [df.grad.numpy(), matrix.grad.numpy()])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.stress
def test_wishart_rsample_has_the_mean_and_a_gradient() -> None:
    vkml.manual_seed(1)
    df = vkml.tensor([5.0, 8.0], requires_grad=True)
    d = VD.Wishart(df, covariance_matrix=vkml.tensor(WISHART_COV))
    x = d.rsample((3000,))
    assert tuple(x.shape) == (3000, 2, 3, 3)
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    assert np.all(np.abs(x.detach().numpy().mean(0) - mean) < 6 * np.sqrt(var / 3000))
    (grad,) = vkml.autograd.grad(x.sum(), df)
    np.testing.assert_allclose(grad.numpy() / 3000, np.full(2, WISHART_COV.sum()), rtol=0.1)  # d mean / d df


def test_poisson_and_negative_binomial_samples_are_pytorchs() -> None:
    """PyTorch's CPU sampler (PTRS from rate 10, Knuth's products below) on vkml's generator, which is
    PyTorch's: the same seed gives the same counts, and the generator goes on where PyTorch's does."""
    rates = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 400.0, 1e5], np.float32)
    results = []
    for lib, D in ((torch, TD), (vkml, VD)):
        lib.manual_seed(3)
        counts = [lib.poisson(lib.tensor(rates)), D.Poisson(lib.tensor(rates)).sample((2,))]
        counts.append(D.NegativeBinomial(lib.tensor([3.0, 20.0]), probs=lib.tensor([0.3, 0.8])).sample((3,)))
        results.append([c.numpy() for c in counts] + [lib.rand(3).numpy()])
    for got, want in zip(*results[::-1]):
        np.testing.assert_array_equal(got, want)


def test_binomial_samples_are_pytorchs() -> None:
    """PyTorch's CPU sampler (BTRS where count * p >= 10, inversion below, float32 arithmetic as its
    float kernel) on vkml's generator: the same seed gives the same counts and generator state."""
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 200, 400).astype(np.float32)
    probs = np.concatenate([rng.random(396), [0.0, 1.0, 0.5, 0.999]]).astype(np.float32)
    results = []
    for lib, D in ((torch, TD), (vkml, VD)):
        lib.manual_seed(5)
        drawn = [lib.binomial(lib.tensor(counts), lib.tensor(probs))]
        drawn.append(D.Binomial(lib.tensor([10.0, 60.0]), probs=lib.tensor([0.3, 0.9])).sample((3,)))
        drawn.append(lib.binomial(lib.tensor(counts[:8], dtype=lib.float64), lib.tensor(probs[:8], dtype=lib.float64)))
        results.append([t.numpy() for t in drawn] + [lib.rand(3).numpy()])
    for got, want in zip(*results[::-1]):
        np.testing.assert_array_equal(got, want)


def _transform_results(lib, D) -> list:
    x = lib.tensor(RNG_T.standard_normal((2, 3, 3)).astype(np.float32))
    out = []
    reshape = D.transforms.ReshapeTransform((3, 3), (9,))
    y = reshape(x)
    out += [y, reshape.inv(y), reshape.log_abs_det_jacobian(x, y), reshape.forward_shape((5, 3, 3))]
    out.append(reshape.inverse_shape((9,)))
    positive = D.transforms.PositiveDefiniteTransform()
    p = positive(x)
    out += [p, positive.inv(p), bool(positive.codomain.check(p).all())]
    cdf = D.transforms.CumulativeDistributionTransform(D.Normal(0.0, 1.0))
    u = cdf(x[0])
    out += [u, cdf.inv(u), cdf.log_abs_det_jacobian(x[0], u)]
    copula = D.TransformedDistribution(D.Normal(lib.zeros(3), lib.ones(3)), [cdf])
    out.append(copula.log_prob(lib.tensor([0.2, 0.5, 0.9])))
    return [v.numpy() if hasattr(v, "numpy") else v for v in out]


RNG_T = np.random.default_rng(3)


def test_reshape_positive_definite_and_cdf_transforms_match_torch() -> None:
    state = RNG_T.bit_generator.state
    want = _transform_results(torch, TD)
    RNG_T.bit_generator.state = state
    got = _transform_results(vkml, VD)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            assert tuple(g) == tuple(w) if isinstance(w, tuple) else g == w


def _cat_stack_results(lib, D) -> list:
    T = D.transforms
    x = lib.tensor(np.linspace(-1.0, 2.0, 24, dtype=np.float32).reshape(2, 12))
    cat = T.CatTransform([T.ExpTransform(), T.identity_transform, T.SigmoidTransform()], dim=1, lengths=[4, 4, 4])
    y = cat(x)
    out = [y, cat.inv(y), cat.log_abs_det_jacobian(x, y), bool(cat.codomain.check(y).all()), cat.bijective]
    stack = T.StackTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=0)
    z = stack(x)
    out += [z, stack.inv(z), stack.log_abs_det_jacobian(x, z), stack.domain.check(x), cat.event_dim]
    return [v.numpy() if hasattr(v, "numpy") else v for v in out]


def test_cat_and_stack_transforms_match_torch() -> None:
    for got, want in zip(_cat_stack_results(vkml, VD), _cat_stack_results(torch, TD)):
        if isinstance(want, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        else:
            assert got == want


def _corr_cholesky_results(lib, D) -> list:
    transform = D.transforms.CorrCholeskyTransform()
    x = lib.tensor(np.linspace(-2.0, 1.5, 12, dtype=np.float32).reshape(2, 6), requires_grad=True)
    y = transform(x)
    log_det = transform.log_abs_det_jacobian(x, y)
    (grad,) = lib.autograd.grad((y.sum() + log_det.sum()), x)
    out = [y, transform.inv(y), log_det, grad, bool(transform.codomain.check(y).all())]
    return [v.detach().numpy() if hasattr(v, "numpy") else v for v in out] + [
        tuple(transform.forward_shape((5, 6))),
        tuple(transform.inverse_shape((4, 4))),
    ]


def test_corr_cholesky_transform_matches_torch() -> None:
    for got, want in zip(_corr_cholesky_results(vkml, VD), _corr_cholesky_results(torch, TD)):
        if isinstance(want, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        else:
            assert got == want


def test_registries_pick_torchs_transforms_for_the_added_constraints() -> None:
    picked = []
    for D in (TD, VD):
        C = D.constraints
        made = [
            D.transform_to(C.positive_definite),
            D.transform_to(C.positive_semidefinite),
            D.biject_to(C.corr_cholesky),
            D.transform_to(C.corr_cholesky),
            D.biject_to(C.cat([C.positive, C.real], 0, [2, 3])),
            D.transform_to(C.stack([C.unit_interval, C.positive], 1)),
        ]
        picked.append(
            [type(t).__name__ for t in made] + [type(t).__name__ for t in made[4].transforms + made[5].transforms]
        )
    assert picked[1] == picked[0]
