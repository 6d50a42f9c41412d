"""vkml.distributions against torch.distributions: values, gradients, errors, sampling.

Exact quantities (log_prob, entropy, moments, cdf/icdf, kl_divergence) and their gradients are
compared with PyTorch on the same parameters; samples (vkml's generator, not PyTorch's) are
checked for shape, support, moments and reproducibility.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.distributions as TD

import vkml
import vkml.distributions as VD

RNG = np.random.default_rng(7)
LOC = RNG.standard_normal(3).astype(np.float32)
SCALE = (RNG.random(3) + 0.5).astype(np.float32)
PROBS = RNG.random((2, 4)).astype(np.float32) + 0.1
LOGITS = RNG.standard_normal((2, 4)).astype(np.float32)
P01 = (RNG.random(3) * 0.8 + 0.1).astype(np.float32)
M = RNG.standard_normal((3, 3)).astype(np.float32)
COV = (M @ M.T + np.eye(3, dtype=np.float32)).astype(np.float32)


def _make(lib, array, grad=True):
    if lib is torch:
        return torch.tensor(array, requires_grad=grad)
    return vkml.tensor(array, requires_grad=grad)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


# name -> (builder(D, params), params, a value in the support, methods besides log_prob/entropy)
CASES = {
    "Normal": (lambda D, p: D.Normal(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, LOC + 0.3, "cdf icdf"),
    "Uniform": (
        lambda D, p: D.Uniform(p["low"], p["high"]),
        {"low": LOC, "high": LOC + SCALE},
        LOC + SCALE / 3,
        "cdf icdf",
    ),
    "Exponential": (lambda D, p: D.Exponential(p["rate"]), {"rate": SCALE}, SCALE * 0.7, "cdf icdf"),
    "Laplace": (lambda D, p: D.Laplace(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, LOC - 0.4, "cdf icdf"),
    "Bernoulli-probs": (
        lambda D, p: D.Bernoulli(probs=p["probs"]),
        {"probs": P01},
        np.array([0, 1, 1], np.float32),
        "",
    ),
    "Bernoulli-logits": (
        lambda D, p: D.Bernoulli(logits=p["logits"]),
        {"logits": LOC},
        np.array([1, 0, 1], np.float32),
        "",
    ),
    "Categorical-probs": (
        lambda D, p: D.Categorical(probs=p["probs"]),
        {"probs": PROBS},
        np.array([3, 0], np.int64),
        "",
    ),
    "Categorical-logits": (
        lambda D, p: D.Categorical(logits=p["logits"]),
        {"logits": LOGITS},
        np.array([1, 2], np.int64),
        "",
    ),
    "OneHotCategorical": (
        lambda D, p: D.OneHotCategorical(logits=p["logits"]),
        {"logits": LOGITS},
        np.eye(4, dtype=np.float32)[[2, 1]],
        "",
    ),
    "Independent-Normal": (
        lambda D, p: D.Independent(D.Normal(p["loc"], p["scale"]), 1),
        {"loc": LOC, "scale": SCALE},
        LOC * 0.5,
        "",
    ),
    "LogNormal": (
        lambda D, p: D.LogNormal(p["loc"], p["scale"]),
        {"loc": LOC, "scale": SCALE},
        SCALE * 1.5,
        "cdf icdf",
    ),
    "MultivariateNormal-cov": (
        lambda D, p: D.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
        {"loc": LOC, "cov": COV},
        np.stack([LOC + 0.5, LOC - 1.0]),
        "",
    ),
    "MultivariateNormal-prec": (
        lambda D, p: D.MultivariateNormal(p["loc"], precision_matrix=p["prec"]),
        {"loc": LOC, "prec": COV},
        LOC + 0.25,
        "",
    ),
    "MultivariateNormal-tril": (
        lambda D, p: D.MultivariateNormal(p["loc"], scale_tril=p["tril"]),
        {"loc": LOC, "tril": np.linalg.cholesky(COV).astype(np.float32)},
        LOC - 0.25,
        "",
    ),
    "Cauchy": (lambda D, p: D.Cauchy(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, LOC + 1.5, "cdf icdf"),
    "HalfNormal": (lambda D, p: D.HalfNormal(p["scale"]), {"scale": SCALE}, SCALE * 0.7, "cdf icdf"),
    "Gumbel": (lambda D, p: D.Gumbel(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, LOC + 0.2, ""),
    "Geometric": (lambda D, p: D.Geometric(probs=p["probs"]), {"probs": P01}, np.array([0, 2, 5], np.float32), ""),
    "Gamma": (lambda D, p: D.Gamma(p["c"], p["rate"]), {"c": SCALE * 2, "rate": SCALE}, SCALE, ""),
    "Chi2": (lambda D, p: D.Chi2(p["df"]), {"df": SCALE * 3}, SCALE + 1, ""),
    "Beta": (lambda D, p: D.Beta(p["c1"], p["c0"]), {"c1": SCALE * 2, "c0": SCALE + 1}, P01, ""),
    "Dirichlet": (
        lambda D, p: D.Dirichlet(p["c"]),
        {"c": PROBS * 3},
        (PROBS / PROBS.sum(-1, keepdims=True)).astype(np.float32),
        "",
    ),
    "Poisson": (lambda D, p: D.Poisson(p["rate"]), {"rate": SCALE * 3}, np.array([0, 2, 5], np.float32), ""),
    "StudentT": (
        lambda D, p: D.StudentT(p["df"], p["loc"], p["scale"]),
        {"df": SCALE * 4, "loc": LOC, "scale": SCALE},
        LOC + 0.5,
        "",
    ),
    "MixtureSameFamily": (
        lambda D, p: D.MixtureSameFamily(D.Categorical(logits=p["logits"]), D.Normal(p["loc"], p["scale"])),
        {"logits": LOGITS[:, :3], "loc": np.stack([LOC, LOC[::-1]]), "scale": np.stack([SCALE, SCALE + 0.5])},
        np.array([0.3, -0.7], np.float32),
        "cdf",
    ),
    "RelaxedBernoulli": (
        lambda D, p: D.RelaxedBernoulli(p["t"], logits=p["logits"]),
        {"t": np.array(0.7, np.float32), "logits": LOC},
        P01,
        "",
    ),
    "RelaxedOneHotCategorical": (
        lambda D, p: D.RelaxedOneHotCategorical(p["t"], probs=p["probs"]),
        {"t": np.array(0.5, np.float32), "probs": PROBS},
        (PROBS / PROBS.sum(-1, keepdims=True)).astype(np.float32),
        "",
    ),
    "Binomial": (
        lambda D, p: D.Binomial(p["n"], probs=p["probs"]),
        {"n": np.array([5.0, 5.0, 5.0], np.float32), "probs": P01},
        np.array([0, 2, 5], np.float32),
        "",
    ),
    "Multinomial": (
        lambda D, p: D.Multinomial(5, logits=p["logits"]),
        {"logits": LOGITS},
        np.array([[1, 2, 0, 2], [0, 0, 5, 0]], np.float32),
        "",
    ),
    "HalfCauchy": (lambda D, p: D.HalfCauchy(p["scale"]), {"scale": SCALE}, SCALE * 0.7, "cdf icdf"),
    "Pareto": (lambda D, p: D.Pareto(p["scale"], p["alpha"]), {"scale": SCALE, "alpha": SCALE + 2.5}, SCALE * 1.5, ""),
    "Weibull": (lambda D, p: D.Weibull(p["scale"], p["c"]), {"scale": SCALE, "c": SCALE + 1.5}, SCALE * 0.8, ""),
    "InverseGamma": (lambda D, p: D.InverseGamma(p["c"], p["rate"]), {"c": SCALE + 2.5, "rate": SCALE}, SCALE, ""),
    "NegativeBinomial": (
        lambda D, p: D.NegativeBinomial(p["n"], logits=p["logits"]),
        {"n": SCALE * 3, "logits": LOC},
        np.array([0, 2, 5], np.float32),
        "",
    ),
    "TransformedDistribution": (
        lambda D, p: D.TransformedDistribution(
            D.Normal(p["loc"], p["scale"]), [D.AffineTransform(1.0, 2.0), D.SigmoidTransform()]
        ),
        {"loc": LOC, "scale": SCALE},
        P01,
        "",
    ),
}


TRANSFORMED = ("TransformedDistribution", "RelaxedBernoulli", "RelaxedOneHotCategorical")  # no moments


def _quantities(D, lib, case: str):
    builder, params, value, extra = CASES[case]
    tensors = {k: _make(lib, v, grad=v.dtype.kind == "f") for k, v in params.items()}
    d = builder(D, tensors)
    make_value = torch.tensor if lib is torch else vkml.tensor
    out = {"log_prob": d.log_prob(make_value(value))}
    if case not in ("LogNormal", "Poisson", "NegativeBinomial", "MixtureSameFamily", *TRANSFORMED):  # no entropy
        out["entropy"] = d.entropy()
    if case not in TRANSFORMED:
        out["mean"], out["variance"], out["stddev"] = d.mean, d.variance, d.stddev
    if case not in ("Uniform", "MixtureSameFamily", "Multinomial", *TRANSFORMED) and not case.startswith("Bernoulli"):
        out["mode"] = d.mode
    if "cdf" in extra:
        out["cdf"] = d.cdf(make_value(value))
    if "icdf" in extra:
        out["icdf"] = d.icdf(make_value(np.full(value.shape, 0.3, np.float32)))
    shapes = (tuple(d.batch_shape), tuple(d.event_shape))
    return tensors, out, shapes


# Each case compiles a few dozen kernels (~0.25 s each on the CPU backend): the default suite runs
# one of each family, the rest run under -m stress.
DEFAULT_CASES = ("Normal", "Categorical-logits", "MultivariateNormal-tril")


@pytest.mark.parametrize(
    "case", [c if c in DEFAULT_CASES else pytest.param(c, marks=pytest.mark.stress) for c in CASES]
)
def test_values_and_gradients_match_torch(case: str) -> None:
    t_params, t_out, t_shapes = _quantities(TD, torch, case)
    v_params, v_out, v_shapes = _quantities(VD, vkml, case)
    assert v_shapes == t_shapes
    assert set(v_out) == set(t_out)
    # one backward per library: the quantities weighted and summed
    differentiable = [k for k, v in t_params.items() if v.requires_grad]
    weighted = [n for n, t in t_out.items() if t.requires_grad and t.dtype.is_floating_point]
    weights = {n: RNG.standard_normal(tuple(t_out[n].shape)).astype(np.float32) for n in weighted}
    t_loss = sum((t_out[n] * torch.tensor(weights[n])).sum() for n in weighted)
    v_loss = sum((v_out[n] * vkml.tensor(weights[n])).sum() for n in weighted)
    t_grads = torch.autograd.grad(t_loss, [t_params[k] for k in differentiable], allow_unused=True)
    v_grads = vkml.autograd.grad(v_loss, [v_params[k] for k in differentiable], allow_unused=True)
    for name, t_value in t_out.items():
        np.testing.assert_allclose(_np(v_out[name]), _np(t_value), rtol=2e-5, atol=2e-6, err_msg=f"{case}.{name}")
    for k, tg, vg in zip(differentiable, t_grads, v_grads):
        assert tg is not None
        np.testing.assert_allclose(_np(vg), _np(tg), rtol=1e-4, atol=1e-5, err_msg=f"{case} d/d{k}")


# p builder, q builder over (D, tensors); the pairs PyTorch registers that vkml has
KL_PAIRS = {
    "Normal-Normal": (lambda D, t: D.Normal(t["a"], t["s"]), lambda D, t: D.Normal(t["b"], t["s2"])),
    "Categorical-Categorical": (lambda D, t: D.Categorical(logits=t["l1"]), lambda D, t: D.Categorical(probs=t["p2"])),
    "MultivariateNormal-MultivariateNormal": (
        lambda D, t: D.MultivariateNormal(t["a"], covariance_matrix=t["cov"]),
        lambda D, t: D.MultivariateNormal(t["b"], scale_tril=t["tril"]),
    ),
    "Independent-Independent": (
        lambda D, t: D.Independent(D.Normal(t["a"], t["s"]), 1),
        lambda D, t: D.Independent(D.Normal(t["b"], t["s2"]), 1),
    ),
    "Bernoulli-Bernoulli": (lambda D, t: D.Bernoulli(probs=t["q1"]), lambda D, t: D.Bernoulli(logits=t["a"])),
    "OneHotCategorical-OneHotCategorical": (
        lambda D, t: D.OneHotCategorical(logits=t["l1"]),
        lambda D, t: D.OneHotCategorical(logits=t["l2"]),
    ),
    "Uniform-Uniform": (
        lambda D, t: D.Uniform(t["a"], t["a"] + t["s"]),
        lambda D, t: D.Uniform(t["a"] - 1, t["a"] + 2),
    ),
    "Exponential-Exponential": (lambda D, t: D.Exponential(t["s"]), lambda D, t: D.Exponential(t["s2"])),
    "Laplace-Laplace": (lambda D, t: D.Laplace(t["a"], t["s"]), lambda D, t: D.Laplace(t["b"], t["s2"])),
    "Uniform-Normal": (lambda D, t: D.Uniform(t["a"], t["a"] + t["s"]), lambda D, t: D.Normal(t["b"], t["s2"])),
    "Exponential-Normal": (lambda D, t: D.Exponential(t["s"]), lambda D, t: D.Normal(t["b"], t["s2"])),
    "Beta-Beta": (lambda D, t: D.Beta(t["s"], t["s2"]), lambda D, t: D.Beta(t["s2"], t["s"] + 1)),
    "Dirichlet-Dirichlet": (lambda D, t: D.Dirichlet(t["p2"]), lambda D, t: D.Dirichlet(t["p2"] * 2 + 0.5)),
    "Gamma-Gamma": (lambda D, t: D.Gamma(t["s"], t["s2"]), lambda D, t: D.Gamma(t["s2"], t["s"])),
    "Gumbel-Gumbel": (lambda D, t: D.Gumbel(t["a"], t["s"]), lambda D, t: D.Gumbel(t["b"], t["s2"])),
    "Geometric-Geometric": (lambda D, t: D.Geometric(probs=t["q1"]), lambda D, t: D.Geometric(logits=t["a"])),
    "HalfNormal-HalfNormal": (lambda D, t: D.HalfNormal(t["s"]), lambda D, t: D.HalfNormal(t["s2"])),
    "Cauchy-Cauchy": (lambda D, t: D.Cauchy(t["a"], t["s"]), lambda D, t: D.Cauchy(t["b"], t["s2"])),
    "LogNormal-LogNormal": (lambda D, t: D.LogNormal(t["a"], t["s"]), lambda D, t: D.LogNormal(t["b"], t["s2"])),
    "Poisson-Poisson": (lambda D, t: D.Poisson(t["s"]), lambda D, t: D.Poisson(t["s2"])),
    "Binomial-Binomial": (lambda D, t: D.Binomial(4, probs=t["q1"]), lambda D, t: D.Binomial(4, logits=t["a"])),
    "Normal-Laplace": (lambda D, t: D.Normal(t["a"], t["s"]), lambda D, t: D.Laplace(t["b"], t["s2"])),
}
KL_PARAMS = {
    "a": LOC,
    "b": LOC[::-1].copy(),
    "s": SCALE,
    "s2": SCALE[::-1].copy() + 0.2,
    "l1": LOGITS,
    "l2": LOGITS[::-1].copy(),
    "p2": PROBS,
    "q1": P01,
    "cov": COV,
    "tril": np.linalg.cholesky(COV * 0.5 + np.eye(3, dtype=np.float32)).astype(np.float32),
}
DEFAULT_KL = ("Normal-Normal", "MultivariateNormal-MultivariateNormal")


@pytest.mark.parametrize(
    "pair", [p if p in DEFAULT_KL else pytest.param(p, marks=pytest.mark.stress) for p in KL_PAIRS]
)
def test_kl_divergence_and_its_gradient_match_torch(pair: str) -> None:
    make_p, make_q = KL_PAIRS[pair]
    results = {}
    for lib, D in ((torch, TD), (vkml, VD)):
        tensors = {k: _make(lib, v) for k, v in KL_PARAMS.items()}
        kl = D.kl_divergence(make_p(D, tensors), make_q(D, tensors))
        used = [t for t in tensors.values()]
        grads = (lib.autograd.grad(kl.sum(), used, allow_unused=True),)
        results[lib] = (kl, grads[0])
    (t_kl, t_grads), (v_kl, v_grads) = results[torch], results[vkml]
    assert tuple(v_kl.shape) == tuple(t_kl.shape)
    np.testing.assert_allclose(_np(v_kl), _np(t_kl), rtol=2e-5, atol=2e-6)
    for name, tg, vg in zip(KL_PARAMS, t_grads, v_grads):
        if tg is None:
            assert vg is None or not np.any(_np(vg)), name
        else:
            np.testing.assert_allclose(_np(vg), _np(tg), rtol=1e-4, atol=1e-5, err_msg=f"{pair} d/d{name}")


def test_kl_infinite_where_the_support_is_not_covered_and_registration() -> None:
    inf_kl = VD.kl_divergence(VD.Uniform(0.0, 2.0), VD.Uniform(vkml.tensor([-1.0, 0.5]), vkml.tensor([3.0, 3.0])))
    expected = TD.kl_divergence(TD.Uniform(0.0, 2.0), TD.Uniform(torch.tensor([-1.0, 0.5]), torch.tensor([3.0, 3.0])))
    np.testing.assert_allclose(inf_kl.numpy(), expected.numpy())
    assert math.isinf(inf_kl[1].item())
    with pytest.raises(
        NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type Categorical"
    ):
        VD.kl_divergence(VD.Normal(0.0, 1.0), VD.Categorical(logits=vkml.zeros(2)))
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        VD.register_kl(int, VD.Normal)

    class Wide(VD.Normal):
        pass

    @VD.register_kl(Wide, VD.Normal)
    def _kl_wide(p, q):
        return p.loc * 0 + 7

    assert VD.kl_divergence(Wide(0.0, 1.0), VD.Normal(0.0, 1.0)).item() == 7
    # the parent's rule still serves the other order
    assert VD.kl_divergence(VD.Normal(0.0, 1.0), Wide(0.0, 1.0)).item() == 0


def _message(fn) -> str:
    with pytest.raises(Exception) as info:
        fn()
    # the libraries' names differ in "torch.Size([2])" / "vkml.Size([2])" alone
    return re.sub(r"\b(torch|vkml)\.Size", "Size", f"{type(info.value).__name__}: {info.value}")


@pytest.mark.parametrize(
    "program",
    [
        lambda lib, D: D.Normal(lib.tensor([0.0, 1.0]), lib.tensor([1.0, -1.0])),
        lambda lib, D: D.MultivariateNormal(lib.zeros(2), lib.eye(2)).log_prob(lib.zeros(3)),
        lambda lib, D: D.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
        lambda lib, D: D.Categorical(probs=lib.tensor(0.5)),
        lambda lib, D: D.Categorical(logits=lib.tensor(0.5)),
        lambda lib, D: D.Categorical(probs=lib.tensor([0.5, -0.1])),
        lambda lib, D: D.Categorical(logits=lib.zeros(3)).log_prob(lib.tensor(3)),
        lambda lib, D: D.Bernoulli(probs=lib.tensor(0.5), logits=lib.tensor(0.0)),
        lambda lib, D: D.Bernoulli(probs=lib.tensor(1.5)),
        lambda lib, D: D.Bernoulli(probs=lib.tensor(0.5)).log_prob(lib.tensor(0.5)),
        lambda lib, D: D.Exponential(lib.tensor([-1.0])),
        lambda lib, D: D.MultivariateNormal(lib.zeros(2)),
        lambda lib, D: D.MultivariateNormal(lib.tensor(0.0), lib.eye(1)),
        lambda lib, D: D.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
        lambda lib, D: D.MultivariateNormal(lib.zeros(2), scale_tril=lib.tensor([[1.0, 1.0], [0.0, 1.0]])),
        lambda lib, D: D.Independent(D.Normal(0.0, 1.0), 1),
        lambda lib, D: D.Independent(D.Normal(lib.zeros(2), 1.0), 1).enumerate_support(),
        lambda lib, D: D.TransformedDistribution(D.Normal(0.0, 1.0), 3),
        lambda lib, D: D.Distribution.set_default_validate_args(2),
    ],
)
def test_errors_match_torch(program) -> None:
    assert _message(lambda: program(vkml, VD)) == _message(lambda: program(torch, TD))


def test_validate_args_false_and_set_default_validate_args() -> None:
    VD.Normal(0.0, -1.0, validate_args=False)  # no check: as PyTorch
    try:
        VD.Distribution.set_default_validate_args(False)
        assert VD.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        VD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="to satisfy the constraint GreaterThan"):
        VD.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="of distribution Uniform"):
        VD.Uniform(1.0, 0.0)


def test_shapes_expand_and_enumerate_support_match_torch() -> None:
    for lib, D in ((torch, TD), (vkml, VD)):
        d = D.Normal(lib.zeros(3), 1.0).expand((2, 3))
        c = D.Categorical(logits=lib.zeros(3)).expand((2,))
        o = D.OneHotCategorical(probs=lib.ones(2, 3) / 3)
        b = D.Bernoulli(probs=lib.full((2,), 0.5))
        m = D.MultivariateNormal(lib.zeros(2, 3), lib.eye(3))
        shapes = [
            tuple(d.batch_shape),
            tuple(d.sample((4,)).shape),
            tuple(c.batch_shape),
            tuple(c.sample((5,)).shape),
            tuple(o.sample().shape),
            tuple(m.rsample((2,)).shape),
            tuple(m.batch_shape) + tuple(m.event_shape),
            tuple(b.sample((3, 1)).shape),
        ]
        supports = [
            c.enumerate_support().tolist(),
            o.enumerate_support(expand=False).tolist(),
            b.enumerate_support().tolist(),
        ]
        names = re.sub(r"\b(torch|vkml)\.Size", "Size", f"{d!r} {c!r} {d.support} {c.support}")
        if lib is torch:
            expected = (shapes, supports, names)
        else:
            got = (shapes, supports, names)
    assert got == expected


LOC2, SCALE2 = np.array([1.0, -2.0], np.float32), np.array([0.5, 2.0], np.float32)
# name -> (distribution, its mean, its variance); samples of shape (n, 2)
SAMPLED = {
    "Normal": (lambda: VD.Normal(vkml.tensor(LOC2), vkml.tensor(SCALE2)), [1.0, -2.0], [0.25, 4.0]),
    "Laplace": (lambda: VD.Laplace(vkml.tensor(LOC2), vkml.tensor(SCALE2)), [1.0, -2.0], [0.5, 8.0]),
    "Exponential": (lambda: VD.Exponential(vkml.tensor(SCALE2)), [2.0, 0.5], [4.0, 0.25]),
    "Uniform": (lambda: VD.Uniform(vkml.tensor(LOC2), vkml.tensor(LOC2 + SCALE2)), [1.25, -1.0], [0.25 / 12, 4.0 / 12]),
    "Bernoulli": (lambda: VD.Bernoulli(probs=vkml.tensor([0.2, 0.7])), [0.2, 0.7], [0.16, 0.21]),
    "Categorical": (lambda: VD.Categorical(probs=vkml.tensor([[0.2, 0.8], [0.5, 0.5]])), [0.8, 0.5], [0.16, 0.25]),
    "MultivariateNormal": (
        lambda: VD.MultivariateNormal(vkml.tensor(LOC2), covariance_matrix=vkml.tensor([[1.0, 0.5], [0.5, 2.0]])),
        [1.0, -2.0],
        [1.0, 2.0],
    ),
    "Gamma": (lambda: VD.Gamma(vkml.tensor([0.5, 3.0]), vkml.tensor([1.0, 2.0])), [0.5, 1.5], [0.5, 0.75]),
    "Beta": (lambda: VD.Beta(vkml.tensor([0.5, 2.0]), vkml.tensor([0.5, 6.0])), [0.5, 0.25], [0.125, 0.0208333]),
    "Dirichlet": (lambda: VD.Dirichlet(vkml.tensor([1.0, 3.0])), [0.25, 0.75], [0.0375, 0.0375]),
    "Poisson": (lambda: VD.Poisson(vkml.tensor([3.0, 40.0])), [3.0, 40.0], [3.0, 40.0]),
    "StudentT": (lambda: VD.StudentT(vkml.tensor([5.0, 10.0]), vkml.tensor(LOC2)), [1.0, -2.0], [5 / 3, 1.25]),
    "MixtureSameFamily": (
        lambda: VD.MixtureSameFamily(
            VD.Categorical(probs=vkml.tensor([0.25, 0.75])),
            VD.Independent(VD.Normal(vkml.tensor([[0.0, 1.0], [4.0, -1.0]]), vkml.ones(2, 2)), 1),
        ),
        [3.0, -0.5],
        [4.0, 1.75],
    ),
    "Binomial": (lambda: VD.Binomial(vkml.tensor([3.0, 10.0]), probs=vkml.tensor([0.5, 0.2])), [1.5, 2.0], [0.75, 1.6]),
    "Multinomial": (lambda: VD.Multinomial(6, probs=vkml.tensor([0.25, 0.75])), [1.5, 4.5], [1.125, 1.125]),
    "Weibull": (lambda: VD.Weibull(vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 2.0])), [1.0, 1.7725], [1.0, 0.8584]),
    "Pareto": (lambda: VD.Pareto(vkml.tensor([1.0, 2.0]), vkml.tensor([6.0, 5.0])), [1.2, 2.5], [0.06, 0.4167]),
    "NegativeBinomial": (
        lambda: VD.NegativeBinomial(vkml.tensor([2.0, 5.0]), probs=vkml.tensor([0.5, 0.2])),
        [2.0, 1.25],
        [4.0, 1.5625],
    ),
    "Gumbel": (lambda: VD.Gumbel(vkml.tensor(LOC2), vkml.tensor(SCALE2)), [1.2886, -0.8456], [0.4112, 6.5797]),
    "Geometric": (lambda: VD.Geometric(probs=vkml.tensor([0.5, 0.2])), [1.0, 4.0], [2.0, 20.0]),
    "LogNormal": (
        lambda: VD.LogNormal(vkml.tensor([0.0, 0.5]), vkml.tensor([0.25, 0.1])),
        [1.0317, 1.6570],
        [0.0687, 0.0276],
    ),
}
DEFAULT_SAMPLED = ("Categorical", "MultivariateNormal")


@pytest.mark.parametrize(
    "name", [c if c in DEFAULT_SAMPLED else pytest.param(c, marks=pytest.mark.stress) for c in SAMPLED]
)
def test_samples_have_the_distributions_moments_and_support(name: str) -> None:
    n = 4000
    make, mean, var = SAMPLED[name]
    vkml.manual_seed(3)
    d = make()
    x = d.sample((n,))
    assert tuple(x.shape) == (n, 2)
    assert bool(d.support.check(x).all())
    values = x.numpy().astype(np.float64)
    for got, want, v in zip(values.mean(0), mean, var):
        assert abs(got - want) < 6 * math.sqrt(v / n), (got, want)  # 6 standard errors
    np.testing.assert_allclose(values.var(0), var, rtol=0.2)
    vkml.manual_seed(11)
    first = make().sample((5,)).numpy()
    vkml.manual_seed(11)
    np.testing.assert_array_equal(make().sample((5,)).numpy(), first)


def test_rsample_is_reparameterised() -> None:
    loc = vkml.tensor([0.5, -1.0], requires_grad=True)
    scale = vkml.tensor([2.0, 0.5], requires_grad=True)
    x = VD.Normal(loc, scale).rsample((3,))
    assert x.requires_grad and not VD.Normal(loc, scale).sample().requires_grad
    (x * x).sum().backward()
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(loc.grad.numpy(), (2 * x.detach()).sum(0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(scale.grad.numpy(), (2 * x.detach() * eps).sum(0).numpy(), rtol=1e-5)


def _policy_params():
    rng = np.random.default_rng(5)
    return [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((8, 4), (8,), (2, 8), (2,))]


def test_reinforce_policy_gradient_matches_torch() -> None:
    # pytorch/examples reinforcement_learning/reinforce.py: Categorical(probs), log_prob(action),
    # policy loss -log_prob * normalised return, Adam; the actions are fixed, the rest is the program's
    states = np.random.default_rng(6).standard_normal((2, 4, 4)).astype(np.float32)  # episodes x steps
    actions = np.random.default_rng(8).integers(0, 2, (2, 4))
    rewards = np.ones(4, np.float32)
    finals = {}
    for lib, D in ((torch, TD), (vkml, VD)):
        net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2), lib.nn.Softmax(dim=1))
        with lib.no_grad():
            for p, value in zip(net.parameters(), _policy_params()):
                p.copy_(lib.tensor(value))
        optimizer = lib.optim.Adam(net.parameters(), lr=1e-2)
        for episode in range(states.shape[0]):
            log_probs = []
            for step in range(states.shape[1]):
                probs = net(lib.tensor(states[episode, step]).unsqueeze(0))
                m = D.Categorical(probs)
                assert tuple(m.sample().shape) == (1,)
                log_probs.append(m.log_prob(lib.tensor([int(actions[episode, step])])))
            returns, R = [], 0.0
            for r in rewards[::-1]:
                R = float(r) + 0.99 * R
                returns.insert(0, R)
            returns = lib.tensor(returns)
            returns = (returns - returns.mean()) / (returns.std() + 1e-6)
            loss = lib.cat([-lp * R for lp, R in zip(log_probs, returns)]).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        finals[lib] = [p.detach().numpy() for p in net.parameters()]
    for t_p, v_p in zip(finals[torch], finals[vkml]):
        np.testing.assert_allclose(v_p, t_p, rtol=1e-4, atol=1e-5)


def test_vae_loss_with_normal_and_kl_divergence_matches_torch() -> None:
    # a VAE step: encoder -> Normal(mu, exp(logvar / 2)), z = rsample's formula with a fixed eps,
    # loss = reconstruction + kl_divergence(q, Normal(0, 1)).sum(); gradients compared with torch
    rng = np.random.default_rng(9)
    x = rng.random((4, 6)).astype(np.float32)
    eps = rng.standard_normal((4, 2)).astype(np.float32)
    weights = [rng.standard_normal(s).astype(np.float32) * 0.4 for s in ((4, 6), (4,), (6, 2), (6,))]
    grads = {}
    for lib, D in ((torch, TD), (vkml, VD)):
        enc, dec = lib.nn.Linear(6, 4), lib.nn.Linear(2, 6)
        with lib.no_grad():
            for p, value in zip([*enc.parameters(), *dec.parameters()], weights):
                p.copy_(lib.tensor(value))
        h = enc(lib.tensor(x))
        mu, logvar = h[:, :2], h[:, 2:]
        q = D.Normal(mu, lib.exp(0.5 * logvar))
        z = q.loc + q.scale * lib.tensor(eps)
        prior = D.Normal(lib.zeros_like(mu), lib.ones_like(mu))
        recon = lib.nn.functional.binary_cross_entropy(lib.sigmoid(dec(z)), lib.tensor(x), reduction="sum")
        kl = D.kl_divergence(q, prior).sum()
        loss = recon + kl
        loss.backward()
        grads[lib] = [loss.detach().numpy()] + [p.grad.numpy() for p in [*enc.parameters(), *dec.parameters()]]
    for t_g, v_g in zip(grads[torch], grads[vkml]):
        np.testing.assert_allclose(v_g, t_g, rtol=1e-4, atol=1e-5)


def test_submodule_paths_as_torch() -> None:
    import vkml.distributions.categorical
    import vkml.distributions.kl
    import vkml.distributions.normal
    from vkml.distributions.multivariate_normal import MultivariateNormal

    assert vkml.distributions.normal.Normal is VD.Normal
    assert vkml.distributions.categorical.Categorical is VD.Categorical
    assert vkml.distributions.kl.kl_divergence is VD.kl_divergence
    assert MultivariateNormal is VD.MultivariateNormal
    assert vkml.distributions.constraints.positive.check(vkml.tensor([1.0, -1.0])).tolist() == [True, False]


def test_same_bits_on_cpu_and_vulkan(gpu) -> None:
    results = []
    for device in ("cpu", gpu):
        vkml.manual_seed(4)
        loc = vkml.tensor(LOC, device=device)
        scale = vkml.tensor(SCALE, device=device)
        d = VD.Normal(loc, scale)
        c = VD.Categorical(logits=vkml.tensor(LOGITS, device=device))
        mvn = VD.MultivariateNormal(loc, covariance_matrix=vkml.tensor(COV, device=device))
        x = d.sample((2,))
        results.append(
            [
                x.numpy(),
                d.log_prob(x).numpy(),
                c.sample((3,)).numpy(),
                c.entropy().numpy(),
                mvn.log_prob(x).numpy(),
                mvn.rsample().numpy(),
            ]
        )
    for cpu_value, gpu_value in zip(*results):
        np.testing.assert_array_equal(gpu_value, cpu_value)


def test_gamma_rsample_differentiates_the_concentration_as_pytorch() -> None:
    """PyTorch's implicit reparameterisation (each of its three approximations: small samples, large
    concentrations, the rational one elsewhere), on the samples PyTorch draws after the same seed."""
    results = []
    for lib in (torch, vkml):
        lib.manual_seed(4)
        concentration = lib.tensor([0.3, 1.5, 4.0, 12.0, 30.0], requires_grad=True)
        rate = lib.tensor([1.0, 2.0, 0.5, 1.0, 3.0], requires_grad=True)
        x = lib.distributions.Gamma(concentration, rate).rsample((3,))
        (x * lib.arange(1.0, 16.0).reshape(3, 5)).sum().backward()
        results.append([x.detach().numpy(), concentration.grad.numpy(), rate.grad.numpy()])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.stress
def test_gamma_rsample_differentiates_with_respect_to_the_rate() -> None:
    rate = vkml.tensor([1.5], requires_grad=True)
    vkml.manual_seed(2)
    x = VD.Gamma(vkml.tensor([2.0]), rate).rsample((3,))
    x.sum().backward()  # x = g / rate: d/d rate = -x / rate
    np.testing.assert_allclose(rate.grad.numpy(), [-(x.detach() / 1.5).sum().item()], rtol=1e-5)


TRANSFORMS = {
    "ExpTransform": (lambda D: D.ExpTransform(), (2, 3)),
    "PowerTransform": (lambda D: D.PowerTransform(2.5), (2, 3)),
    "SigmoidTransform": (lambda D: D.SigmoidTransform(), (2, 3)),
    "TanhTransform": (lambda D: D.TanhTransform(), (2, 3)),
    "SoftplusTransform": (lambda D: D.SoftplusTransform(), (2, 3)),
    "AffineTransform": (lambda D: D.AffineTransform(0.5, -2.0), (2, 3)),
    "StickBreakingTransform": (lambda D: D.StickBreakingTransform(), (2, 3)),
    "IndependentTransform": (lambda D: D.IndependentTransform(D.SigmoidTransform(), 1), (2, 3)),
    "ComposeTransform": (lambda D: D.ComposeTransform([D.AffineTransform(1.0, 3.0), D.ExpTransform()]), (2, 3)),
    "inverse": (lambda D: D.ExpTransform().inv, (2, 3)),
}


@pytest.mark.stress
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_match_torch(name: str) -> None:
    make, shape = TRANSFORMS[name]
    x = np.abs(RNG.standard_normal(shape)).astype(np.float32) + 0.1  # in every domain here
    tv, tt = make(VD), make(TD)
    yv, yt = tv(vkml.tensor(x)), tt(torch.tensor(x))
    np.testing.assert_allclose(yv.numpy(), yt.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tv.inv(yv).numpy(), tt.inv(yt).numpy(), rtol=1e-4, atol=1e-5)
    ladj_v = tv.log_abs_det_jacobian(vkml.tensor(x), yv)
    ladj_t = tt.log_abs_det_jacobian(torch.tensor(x), yt)
    np.testing.assert_allclose(ladj_v.numpy(), ladj_t.numpy(), rtol=1e-5, atol=1e-5)
    assert (tv.domain.event_dim, tv.codomain.event_dim, tv.bijective) == (
        tt.domain.event_dim,
        tt.codomain.event_dim,
        tt.bijective,
    )


def test_biject_to_and_transform_to_pick_torchs_transforms() -> None:
    for registry in ("biject_to", "transform_to"):
        for name in ("real", "positive", "unit_interval", "simplex", "lower_cholesky", "real_vector"):
            picked = []
            for D in (VD, TD):
                try:
                    picked.append(repr(getattr(D, registry)(getattr(D.constraints, name))))
                except NotImplementedError as error:  # biject_to(lower_cholesky), in both
                    picked.append(str(error))
            assert picked[0] == picked[1], (registry, name)
    interval = VD.transform_to(VD.constraints.interval(-1.0, 3.0))
    y = interval(vkml.tensor([-50.0, 0.0, 50.0]))
    assert bool((y >= -1).all()) and bool((y <= 3).all())
    with pytest.raises(NotImplementedError, match="Cannot transform _PositiveDefinite constraints"):
        VD.biject_to(VD.constraints.positive_definite)


def test_positive_semidefinite_constraint_as_torch():
    import torch.distributions.constraints as torch_constraints

    from vkml.distributions import constraints

    for m in ([[2.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[0.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]):
        ours = constraints.positive_semidefinite.check(vkml.tensor(m)).tolist()
        assert ours == torch_constraints.positive_semidefinite.check(torch.tensor(m)).tolist(), m
