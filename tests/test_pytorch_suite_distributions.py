"""PyTorch's test/distributions/test_distributions.py, test_constraints.py and test_transforms.py, run on torch
and on vkml side by side.

Each scenario follows one of their tests. The generic ones (test_repr, test_sample_detached,
test_rsample_requires_grad, test_support_attributes, test_distribution_expand and its subclass variant,
test_enumerate_support_type, TestDistributionShapes' shapes, TestValidation) run over an example table like
PyTorch's ``_get_examples``; the others follow one test each (Bernoulli's entropies and enumerate_support,
Categorical's and OneHotCategorical's probs against logits, MultivariateNormal's three parametrisations,
the log_prob at a support's boundary, cdf/icdf round trips, TestKL's shapes and infinite/edge cases,
TestNumericalStability, TestLazyLogitsInitialization, the constraints' checks and ``biject_to``/``transform_to``,
the transforms' values, inverses, Jacobians and shapes). vkml draws PyTorch's CPU random stream, so after
the same ``manual_seed`` a scenario's samples are compared exactly. A scenario returns what the PyTorch test
asserts on; on vkml it must return, raise and warn what it does on torch (tests/pytorch_suite.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_suite import check

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's: the scenarios that build many kernels


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def attempt(fn):
    """``fn()``, or the class of what it raises: PyTorch's tests skip NotImplementedError (``mean`` of Cauchy,
    ``enumerate_support`` of a continuous law) and assert only the class elsewhere."""
    try:
        return fn()
    except (NotImplementedError, ValueError, RuntimeError) as error:
        # the builtin class: vkml's may subclass it (ShapeError is a RuntimeError, as PyTorch's broadcast error)
        return (
            "raises",
            next(c.__name__ for c in (NotImplementedError, RuntimeError, ValueError) if isinstance(error, c)),
        )


def T(m, value, grad=True):
    """A float32 leaf tensor of ``value`` (requires_grad as the examples' parameters do)."""
    return m.tensor(np.asarray(value, dtype=np.float32), requires_grad=grad)


SPD = np.array([[2.0, 0.5, 0.1], [0.5, 1.5, 0.2], [0.1, 0.2, 1.0]], np.float32)
TRIL = np.linalg.cholesky(SPD).astype(np.float32)

# name -> builder(m, D) of a list of distributions: PyTorch's _get_examples, the families vkml has
EXAMPLES = {
    "Bernoulli": lambda m, D: [D.Bernoulli(T(m, [0.7, 0.2, 0.4])), D.Bernoulli(0.3), D.Bernoulli(logits=T(m, [0.1]))],
    "Geometric": lambda m, D: [D.Geometric(T(m, [0.7, 0.2, 0.4])), D.Geometric(0.3)],
    "Beta": lambda m, D: [D.Beta(T(m, [1.5, 0.5]), T(m, [0.8, 2.0])), D.Beta(0.5, 0.5)],
    "Binomial": lambda m, D: [
        D.Binomial(10, T(m, [[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])),
        D.Binomial(T(m, [5, 10], False), T(m, [0.3, 0.7])),
    ],
    "Multinomial": lambda m, D: [D.Multinomial(10, T(m, [[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]]))],
    "Categorical": lambda m, D: [
        D.Categorical(T(m, [[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])),
        D.Categorical(logits=T(m, [0.0, -1.0, 2.0])),
    ],
    "OneHotCategorical": lambda m, D: [
        D.OneHotCategorical(T(m, [[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])),
        D.OneHotCategorical(logits=T(m, [0.0, -1.0])),
    ],
    "Cauchy": lambda m, D: [D.Cauchy(T(m, [0.0, 1.0]), T(m, [1.0, 2.0])), D.Cauchy(0.0, 1.0)],
    "HalfCauchy": lambda m, D: [D.HalfCauchy(T(m, [1.0, 0.5]))],
    "HalfNormal": lambda m, D: [D.HalfNormal(T(m, [1.0, 0.5]))],
    "Chi2": lambda m, D: [D.Chi2(T(m, [2.0, 5.0]))],
    "StudentT": lambda m, D: [D.StudentT(T(m, [2.5, 5.0])), D.StudentT(T(m, [3.0]), T(m, [1.0]), T(m, [2.0]))],
    "Dirichlet": lambda m, D: [D.Dirichlet(T(m, [[0.5, 1.5, 2.0], [1.0, 1.0, 3.0]]))],
    "Exponential": lambda m, D: [D.Exponential(T(m, [1.0, 0.5])), D.Exponential(0.2)],
    "FisherSnedecor": lambda m, D: [D.FisherSnedecor(T(m, [2.0, 5.0]), T(m, [3.0, 9.0]))],
    "Gamma": lambda m, D: [D.Gamma(T(m, [1.0, 0.3]), T(m, [2.0, 1.0])), D.Gamma(0.5, 0.5)],
    "Gumbel": lambda m, D: [D.Gumbel(T(m, [0.0, 1.0]), T(m, [1.0, 2.0]))],
    "InverseGamma": lambda m, D: [D.InverseGamma(T(m, [2.0, 3.0]), T(m, [1.0, 2.0]))],
    "Kumaraswamy": lambda m, D: [D.Kumaraswamy(T(m, [1.5, 2.0]), T(m, [0.8, 3.0]))],
    "Laplace": lambda m, D: [D.Laplace(T(m, [0.0, 1.0]), T(m, [1.0, 2.0])), D.Laplace(0.0, 1.0)],
    "LogNormal": lambda m, D: [D.LogNormal(T(m, [0.0, 1.0]), T(m, [1.0, 0.5]))],
    "LogisticNormal": lambda m, D: [D.LogisticNormal(T(m, [0.0, 1.0]), T(m, [1.0, 0.5]))],
    "LowRankMultivariateNormal": lambda m, D: [
        D.LowRankMultivariateNormal(T(m, [1.0, 0.0, -1.0]), T(m, [[1.0], [0.5], [-0.2]]), T(m, [0.5, 1.0, 2.0]))
    ],
    "MultivariateNormal": lambda m, D: [
        D.MultivariateNormal(T(m, [1.0, 0.0, -1.0]), covariance_matrix=T(m, SPD)),
        D.MultivariateNormal(T(m, [1.0, 0.0, -1.0]), scale_tril=T(m, TRIL)),
        D.MultivariateNormal(T(m, [1.0, 0.0, -1.0]), precision_matrix=T(m, SPD)),
    ],
    "NegativeBinomial": lambda m, D: [
        D.NegativeBinomial(10, T(m, [0.2, 0.6])),
        D.NegativeBinomial(T(m, [5.0, 3.0], False), logits=T(m, [0.5, -0.5])),
    ],
    "Normal": lambda m, D: [D.Normal(T(m, [0.0, 1.0]), T(m, [1.0, 0.5])), D.Normal(0.0, 1.0)],
    "Pareto": lambda m, D: [D.Pareto(T(m, [1.0, 2.0]), T(m, [2.0, 3.0])), D.Pareto(1.0, 2.0)],
    "Poisson": lambda m, D: [D.Poisson(T(m, [1.0, 4.0])), D.Poisson(3.0)],
    "RelaxedBernoulli": lambda m, D: [D.RelaxedBernoulli(T(m, [0.5]), T(m, [0.3, 0.7]))],
    "RelaxedOneHotCategorical": lambda m, D: [
        D.RelaxedOneHotCategorical(T(m, [0.5]), T(m, [[0.1, 0.2, 0.7], [0.5, 0.3, 0.2]]))
    ],
    "Uniform": lambda m, D: [D.Uniform(T(m, [0.0, 1.0]), T(m, [1.0, 3.0])), D.Uniform(0.0, 2.0)],
    "VonMises": lambda m, D: [D.VonMises(T(m, [0.0, 1.0]), T(m, [1.0, 10.0]))],
    "Weibull": lambda m, D: [D.Weibull(T(m, [1.0, 2.0]), T(m, [1.5, 0.5]))],
    "ContinuousBernoulli": lambda m, D: [
        D.ContinuousBernoulli(T(m, [0.2, 0.5, 0.9])),
        D.ContinuousBernoulli(logits=T(m, [0.3])),
    ],
    "GeneralizedPareto": lambda m, D: [D.GeneralizedPareto(T(m, [0.0, 1.0]), T(m, [1.0, 2.0]), T(m, [0.2, -0.1]))],
    "Independent": lambda m, D: [D.Independent(D.Normal(T(m, [[0.0, 1.0]]), T(m, [[1.0, 2.0]])), 1)],
    "MixtureSameFamily": lambda m, D: [
        D.MixtureSameFamily(D.Categorical(T(m, [0.3, 0.7])), D.Normal(T(m, [0.0, 2.0]), T(m, [1.0, 0.5])))
    ],
    "TransformedDistribution": lambda m, D: [
        D.TransformedDistribution(D.Normal(T(m, [0.0, 1.0]), T(m, [1.0, 2.0])), [D.transforms.ExpTransform()])
    ],
    "Wishart": lambda m, D: [D.Wishart(T(m, [4.0]), covariance_matrix=T(m, SPD))],
    "LKJCholesky": lambda m, D: [D.LKJCholesky(3, T(m, [0.5, 2.0]))],
}

# the families whose sampler takes a different number of draws on vkml (its rejection loop is vectorised
# otherwise): their samples are compared by shape and support, not value
RESAMPLED = {"VonMises", "LKJCholesky"}


def _maybe(value, exact: bool):
    """A sample as compared: itself, or (dtype, shape) where the sampler's draws differ (RESAMPLED)."""
    return value if exact else (str(value.dtype).split(".")[-1], tuple(value.shape))


def generic(name):
    """The generic TestDistributions checks for one family, over its examples."""

    def scenario(m):
        D = m.distributions
        D.Distribution.set_default_validate_args(True)
        exact = name not in RESAMPLED
        out = []
        m.manual_seed(0)
        for d in EXAMPLES[name](m, D):
            row = {
                "repr": repr(d).startswith(type(d).__name__),  # test_repr
                "shapes": (tuple(d.batch_shape), tuple(d.event_shape)),
                "support": (d.support.event_dim, d.support.is_discrete),  # test_support_attributes
                "flags": (d.has_rsample, d.has_enumerate_support),
            }
            sample = d.sample()
            row["sample_detached"] = sample.requires_grad  # test_sample_detached
            row["sample"] = _maybe(sample, exact)
            row["sample_shape"] = tuple(d.sample((2, 3)).shape)
            row["log_prob"] = d.log_prob(sample) if exact else tuple(d.log_prob(sample).shape)
            if d.has_rsample:
                rsample = d.rsample((2,))
                row["rsample_requires_grad"] = rsample.requires_grad  # test_rsample_requires_grad
                row["rsample"] = _maybe(rsample, exact)
            for prop in ("mean", "mode", "variance", "stddev"):
                row[prop] = attempt(lambda d=d, prop=prop: getattr(d, prop))
            row["entropy"] = attempt(d.entropy)
            row["enumerate_support"] = attempt(lambda d=d: d.enumerate_support())
            if d.has_enumerate_support:  # test_enumerate_support_type
                row["enumerate_support_type"] = type(d.sample()) is type(d.enumerate_support())
            # test_distribution_expand: expanded batch shape, sample shape, log_prob, moments
            expanded = d.expand((2, *d.batch_shape))
            esample = expanded.sample()
            row["expand"] = (
                type(expanded) is type(d),
                tuple(expanded.batch_shape),
                tuple(esample.shape),
                expanded.log_prob(esample) if exact else None,
                attempt(lambda e=expanded: e.mean),
            )
            out.append(row)
        return out

    return scenario


DEFAULT_GENERIC = {"Normal", "Bernoulli", "Categorical", "MultivariateNormal", "Gamma"}
for _name in EXAMPLES:
    (SC if _name in DEFAULT_GENERIC else SLOW)[f"generic_{_name}"] = generic(_name)


@slow
def distribution_subclass_expand(m):
    """test_distribution_subclass_expand: a subclass expands to itself."""
    D = m.distributions
    out = []
    for name in ("Normal", "Gamma", "Categorical", "Dirichlet", "MultivariateNormal"):
        base = getattr(D, name)

        class SubClass(base):
            pass

        d = EXAMPLES[name](m, D)[0]
        sub = SubClass.__new__(SubClass)
        sub.__dict__.update(d.__dict__)
        expanded = sub.expand((2, *d.batch_shape))
        out.append((type(expanded) is SubClass, tuple(expanded.sample().shape)))
    return out


# -- validation: TestValidation's bad examples ---------------------------------------------------------------

BAD = {
    "Normal-scale": lambda m, D: D.Normal(T(m, [0.0, 1.0]), T(m, [1.0, -1.0])),
    "Bernoulli-probs": lambda m, D: D.Bernoulli(T(m, [1.1, 0.2])),
    "Categorical-probs": lambda m, D: D.Categorical(T(m, [[-0.1, 0.5]])),
    "Beta-concentration": lambda m, D: D.Beta(T(m, [0.0]), T(m, [1.0])),
    "Gamma-rate": lambda m, D: D.Gamma(T(m, [1.0]), T(m, [-1.0])),
    "Uniform-bounds": lambda m, D: D.Uniform(T(m, [1.0]), T(m, [0.5])),
    "Exponential-rate": lambda m, D: D.Exponential(T(m, [0.0, -2.0])),
    "Laplace-scale": lambda m, D: D.Laplace(T(m, [0.0]), T(m, [0.0])),
    "Dirichlet-concentration": lambda m, D: D.Dirichlet(T(m, [0.0, 1.0])),
    "MultivariateNormal-cov": lambda m, D: D.MultivariateNormal(T(m, [0.0, 0.0]), T(m, [[1.0, 0.0], [0.0, -2.0]])),
    "MultivariateNormal-no-matrix": lambda m, D: D.MultivariateNormal(T(m, [0.0, 0.0])),
    "MultivariateNormal-two-matrices": lambda m, D: D.MultivariateNormal(
        T(m, [0.0]), covariance_matrix=T(m, [[1.0]]), precision_matrix=T(m, [[1.0]])
    ),
    "Binomial-total_count": lambda m, D: D.Binomial(T(m, [-1.0], False), T(m, [0.5])),
    "Geometric-probs": lambda m, D: D.Geometric(T(m, [0.0])),
    "Poisson-rate": lambda m, D: D.Poisson(T(m, [-0.5])),
    "StudentT-df": lambda m, D: D.StudentT(T(m, [0.0])),
    "Pareto-scale": lambda m, D: D.Pareto(T(m, [0.0]), T(m, [1.0])),
    "Both-probs-and-logits": lambda m, D: D.Bernoulli(probs=T(m, [0.5]), logits=T(m, [0.0])),
    "Neither-probs-nor-logits": lambda m, D: D.Categorical(),
    "Normal-broadcast": lambda m, D: D.Normal(T(m, [0.0, 1.0]), T(m, [1.0, 2.0, 3.0])),
}


def bad(name):
    def scenario(m):
        m.distributions.Distribution.set_default_validate_args(True)
        return BAD[name](m, m.distributions)

    return scenario


for _name in BAD:
    SC[f"invalid_{_name}"] = bad(_name)


@sc
def log_prob_outside_the_support(m):
    """TestValidation: a value outside the support raises in log_prob, not with validate_args=False."""
    D = m.distributions
    D.Distribution.set_default_validate_args(True)
    out = []
    for d, value in (
        (D.Exponential(T(m, [1.0, 2.0])), T(m, [-1.0, 1.0], False)),
        (D.Bernoulli(T(m, [0.3, 0.6])), T(m, [0.5, 1.0], False)),
        (D.Uniform(T(m, [0.0, 0.0]), T(m, [1.0, 1.0])), T(m, [0.5, 1.5], False)),
    ):
        out.append(attempt(lambda d=d, value=value: d.log_prob(value)))
    out.append(D.Uniform(T(m, [0.0]), T(m, [1.0]), validate_args=False).log_prob(T(m, [1.5, 0.5], False)))
    return out


@sc
def log_prob_outside_the_support_message(m):
    D = m.distributions
    D.Distribution.set_default_validate_args(True)
    return D.Exponential(T(m, [1.0, 2.0])).log_prob(T(m, [-1.0, 1.0], False))


# -- family tests --------------------------------------------------------------------------------------------


@sc
def bernoulli(m):
    """test_bernoulli: sample shapes, no rsample, log_prob by probs and by logits, entropies."""
    D = m.distributions
    p, r = T(m, [0.7, 0.2, 0.4]), T(m, 0.3)
    m.manual_seed(1)
    shapes = [tuple(D.Bernoulli(p).sample((8,)).shape), tuple(D.Bernoulli(r).sample((3, 2)).shape)]
    shapes.append(tuple(D.Bernoulli(0.3).sample().shape))
    s = D.Bernoulli(p).sample()
    logits = p.log() - (-p).log1p()
    return (
        shapes,
        s,
        D.Bernoulli(p).log_prob(s),
        D.Bernoulli(logits=logits).log_prob(s),
        attempt(D.Bernoulli(r).rsample),
        D.Bernoulli(p).entropy(),
        D.Bernoulli(T(m, [0.0])).entropy(),
        D.Bernoulli(s.new_tensor([1.0])).entropy(),
    )


@sc
def bernoulli_enumerate_support(m):
    D = m.distributions
    out = []
    for probs in ([0.1], [0.1, 0.9], [[0.1, 0.2], [0.3, 0.4]]):
        d = D.Bernoulli(T(m, probs))
        out.append((d.enumerate_support(expand=False), d.enumerate_support(expand=True)))
    return out


@sc
def bernoulli_3d(m):
    D = m.distributions
    p = T(m, np.full((2, 3, 5), 0.5))
    m.manual_seed(2)
    return tuple(D.Bernoulli(p).sample().shape), tuple(D.Bernoulli(p).sample((2,)).shape), D.Bernoulli(p).sample()


# PyTorch's tests' arange(0.05, 1, 0.1) in float64, as literals: PyTorch's CPU arange rounds by its SIMD
# width (0.75 or 0.7500000000000001), so the floors of NegativeBinomial.mode would follow the machine
PROBS_05_TO_95 = [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95]


@slow
def geometric(m):
    """test_geometric and test_geometric_log_prob_and_entropy (float64, as PyTorch's test sets the default)."""
    D = m.distributions
    p = m.tensor([0.7, 0.2, 0.4], dtype=m.float64, requires_grad=True)
    m.manual_seed(19)
    s = D.Geometric(p).sample((8,))
    return (
        s,
        D.Geometric(1).sample(),
        D.Geometric(1).log_prob(m.tensor(1.0)),
        D.Geometric(1).log_prob(m.tensor(0.0)),
        D.Geometric(p).log_prob(s),
        D.Geometric(logits=p.log() - (-p).log1p()).log_prob(s),
        D.Geometric(p).entropy(),
        D.Geometric(0.3).entropy(),
        attempt(lambda: D.Geometric(0)),
        attempt(D.Geometric(m.tensor(0.3)).rsample),
    )


@slow
def binomial(m):
    """test_binomial_log_prob_and_entropy, test_binomial_stable, test_binomial_enumerate_support,
    test_binomial_extreme_vals, test_binomial_log_prob_vectorized_count (float64)."""
    D = m.distributions
    probs = m.tensor(PROBS_05_TO_95, dtype=m.float64)
    out = []
    m.manual_seed(20)
    for total_count in (1, 2, 10):
        logits = D.utils.probs_to_logits(probs, is_binary=True)
        d = D.Binomial(total_count, logits=logits)
        x = d.sample()
        out.append((x, D.Binomial(total_count, probs).log_prob(x), d.log_prob(x), d.entropy()))
    x = m.tensor(0.0, requires_grad=True)
    (stable_grad,) = m.autograd.grad(D.Binomial(1.0, logits=x).log_prob(m.tensor(0.0)), x)
    extreme = D.Binomial(100, 0)
    extreme1 = D.Binomial(100, 1)
    zero_counts = m.zeros(2, 2)
    vectorized = [
        D.Binomial(count, m.tensor([0.2, 0.7, 0.9])).log_prob(value)
        for count, value in (
            (m.tensor([10]), m.tensor([7.0, 3.0, 9.0])),
            (m.tensor([1, 2, 10]), m.tensor([0.0, 1.0, 9.0])),
        )
    ]
    return (
        out,
        D.Binomial(1.0, logits=m.tensor([-100.0, 100.0])).log_prob(m.tensor([0.0, 0.0])),
        stable_grad,
        [D.Binomial(3, m.tensor(p)).enumerate_support(expand=False) for p in ([0.1], [[0.1, 0.2], [0.3, 0.4]])],
        D.Binomial(3, m.tensor([[0.1, 0.2], [0.3, 0.4]])).enumerate_support(),
        (extreme.sample(), extreme.log_prob(m.tensor([0.0])), extreme.log_prob(m.tensor([1.0])).exp()),
        (extreme1.sample(), extreme1.log_prob(m.tensor([100.0])), extreme1.log_prob(m.tensor([99.0])).exp()),
        (D.Binomial(zero_counts, 1).sample(), D.Binomial(zero_counts, 1).log_prob(zero_counts)),
        vectorized,
        attempt(D.Binomial(10, m.tensor([0.5])).rsample),
    )


@sc
def binomial_dtype_errors(m):
    """test_torch_binomial_dtype_errors: integer counts or probabilities are refused with PyTorch's words."""
    out = []
    for dtype in (m.int32, m.int64, m.int16):
        for count, prob in ((m.tensor([10, 10], dtype=dtype), m.tensor([0.5, 0.5])),
                            (m.tensor([10.0, 10.0]), m.tensor([0, 1], dtype=dtype))):  # fmt: skip
            try:
                m.binomial(count, prob)
                out.append("no error")
            except ValueError as error:
                out.append(str(error))
    return out


@slow
def negative_binomial(m):
    D = m.distributions
    probs = m.tensor(PROBS_05_TO_95, dtype=m.float64)
    m.manual_seed(21)
    out = []
    for total_count in (1, 2, 10):
        d = D.NegativeBinomial(total_count, probs)
        x = d.sample()
        logits = D.utils.probs_to_logits(probs, is_binary=True)
        out.append((x, d.log_prob(x), D.NegativeBinomial(total_count, logits=logits).log_prob(x), d.mean, d.mode))
    return out, attempt(D.NegativeBinomial(10, probs).rsample), attempt(D.NegativeBinomial(10, probs).entropy)


@slow
def multinomial(m):
    """test_multinomial_1d / _2d and their log_prob and entropy; extreme probabilities."""
    D = m.distributions
    p = m.tensor([0.1, 0.2, 0.3], dtype=m.float64, requires_grad=True)
    p2 = m.tensor([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]], dtype=m.float64)
    m.manual_seed(22)
    d = D.Multinomial(10, probs=p)
    x = d.sample()
    by_logits = D.Multinomial(10, logits=p.log())
    return (
        x,
        d.log_prob(x),
        by_logits.log_prob(x),
        by_logits.entropy(),
        tuple(D.Multinomial(10, p).sample((2, 2)).shape),
        tuple(D.Multinomial(10, p2).sample((3, 4)).shape),
        D.Multinomial(10, m.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=m.float64)).sample(),
        attempt(D.Multinomial(10, p).rsample),
        d.mean,
        d.variance,
    )


@sc
def categorical_1d(m):
    D = m.distributions
    p = T(m, [0.1, 0.2, 0.3])
    m.manual_seed(3)
    d = D.Categorical(p)
    return (
        d.sample(),
        tuple(d.sample((2, 2)).shape),
        tuple(d.sample((1,)).shape),
        d.sample().requires_grad,
        d.mean.isnan().all().item(),
        d.variance.isnan().all().item(),
        d.probs,
        d.logits,
        d.param_shape,
    )


@sc
def categorical_2d(m):
    """test_categorical_2d: shapes, log_prob of a batch of values, probs and logits normalised."""
    D = m.distributions
    probabilities = [[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]]
    p = T(m, probabilities)
    m.manual_seed(4)
    d = D.Categorical(p)
    return (
        tuple(d.sample().shape),
        tuple(d.sample((3, 4)).shape),
        d.sample((6,)),
        d.log_prob(m.tensor([[0, 1], [2, 0]])),
        d.log_prob(m.tensor([1, 2])),
        d.probs,
        D.Categorical(logits=p.log()).logits,
        d.entropy(),
        d.mode,
    )


@sc
def categorical_enumerate_support(m):
    D = m.distributions
    out = []
    for probs in ([0.1, 0.2, 0.7], [[0.1, 0.9], [0.3, 0.7]]):
        d = D.Categorical(T(m, probs))
        out.append((d.enumerate_support(expand=False), d.enumerate_support()))
    return out


@sc
def categorical_probs_vs_logits(m):
    """Categorical and OneHotCategorical made from probs and from (unnormalised) logits agree; lazy properties."""
    D = m.distributions
    logits = T(m, [[1.0, 2.0, -1.0], [0.0, 0.0, 3.0]])
    by_logits = D.Categorical(logits=logits)
    by_probs = D.Categorical(probs=by_logits.probs)
    onehot = D.OneHotCategorical(logits=logits)
    value = m.tensor([2, 0])
    lazy = D.Categorical(logits=logits, validate_args=False)
    before = ("probs" in lazy.__dict__, "logits" in lazy.__dict__)
    lazy.probs  # noqa: B018 - the access makes the lazy property
    return (
        by_logits.log_prob(value),
        by_probs.log_prob(value),
        onehot.log_prob(m.nn.functional.one_hot(value, 3).float()),
        by_logits.entropy(),
        onehot.entropy(),
        onehot.mean,
        onehot.variance,
        before,
        "probs" in lazy.__dict__,
    )


@sc
def one_hot_categorical(m):
    D = m.distributions
    p = T(m, [[0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])
    m.manual_seed(5)
    d = D.OneHotCategorical(p)
    s = d.sample((4,))
    return s, d.log_prob(s), d.enumerate_support(expand=False), tuple(d.enumerate_support().shape), d.mode


@sc
def categorical_extremes_and_masked_entropy(m):
    """test_categorical_2d's extreme probabilities (seeded samples) and gh-40553's entropy with -inf logits."""
    D = m.distributions
    p = m.tensor([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]], requires_grad=True)
    s = m.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    m.manual_seed(0)
    logits = p.detach().log()
    logits[1, 1] = logits[0, 2] = float("-inf")
    return (
        D.Categorical(s).sample((2,)),
        D.Categorical(s).entropy(),
        D.Categorical(logits=logits).entropy(),
        attempt(D.Categorical(p).rsample),
        tuple(D.Categorical(p).mean.shape),
    )


@slow
def one_hot_categorical_2d(m):
    D = m.distributions
    p = m.tensor([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]], requires_grad=True)
    m.manual_seed(23)
    dist = D.OneHotCategorical(p)
    x = dist.sample()
    return x, dist.log_prob(x), D.Categorical(p).log_prob(x.max(-1)[1]), attempt(dist.rsample)


@slow
def relaxed_bernoulli_and_one_hot_categorical(m):
    """test_relaxed_bernoulli, test_relaxed_one_hot_categorical_1d/2d: shapes, rsample's backward; a huge
    temperature gives 0.5 (test_rounded_relaxed_bernoulli) and equal probabilities."""
    D = m.distributions
    p = m.tensor([0.7, 0.2, 0.4], requires_grad=True)
    temp = m.tensor(0.67, requires_grad=True)
    m.manual_seed(24)
    r = D.RelaxedBernoulli(temp, p).rsample()
    r.backward(m.ones_like(r))
    probs = m.tensor([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]], requires_grad=True)
    c = D.RelaxedOneHotCategorical(m.tensor([3.0]), probs)
    cs = c.rsample()
    return (
        r,
        p.grad,
        temp.grad,
        tuple(D.RelaxedBernoulli(temp, 0.3).sample((3, 2)).shape),
        D.RelaxedBernoulli(temp, p, validate_args=False).log_prob(r.detach()),
        cs,
        c.log_prob(cs.detach()),
        tuple(c.sample((3, 4)).shape),
        [D.RelaxedBernoulli(1e10, q).rsample() for q in (0.001, 0.2, 0.999)],
        D.RelaxedOneHotCategorical(1e10, m.tensor([0.2, 0.2, 0.6])).rsample(),
    )


@sc
def uniform_rsample_gradients_from_the_rng_state(m):
    """test_uniform: rsample's gradients are 1 - u and u for the uniforms the saved RNG state gives."""
    D = m.distributions
    low = m.zeros(5, 5, requires_grad=True)
    high = (m.ones(5, 5) * 3).requires_grad_()
    m.manual_seed(25)
    state = m.get_rng_state()
    rand = low.new(low.size()).uniform_()
    m.set_rng_state(state)
    u = D.Uniform(low, high).rsample()
    u.backward(m.ones_like(u))
    uniform = D.Uniform(m.zeros(1), m.ones(1) * 3, validate_args=False)
    outside = [uniform.log_prob(m.tensor([4.0])), uniform.cdf(m.tensor([-1.0])), uniform.cdf(m.tensor([4.0]))]
    return u, low.grad, 1 - rand, high.grad, outside


@sc
def poisson_shapes_and_zero_rate(m):
    """test_poisson_shape and test_poisson_log_prob's zero rate: log_prob(1) differentiates to inf."""
    D = m.distributions
    m.manual_seed(26)
    rate = m.randn(2, 3).abs().requires_grad_()
    rate_zero = m.zeros([], requires_grad=True)
    D.Poisson(rate_zero).log_prob(m.ones_like(rate_zero)).backward()
    shapes = [
        tuple(D.Poisson(rate).sample().shape),
        tuple(D.Poisson(rate).sample((7,)).shape),
        tuple(D.Poisson(2.0).sample((2,)).shape),
    ]
    return shapes, rate_zero.grad, D.Poisson(rate).log_prob(m.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0]]))


@slow
def cauchy_and_half_cauchy_rsample_gradients(m):
    """test_cauchy / test_halfcauchy: moments, shapes, and rsample's gradients are the saved-state cauchy_ draws."""
    D = m.distributions
    loc, scale = m.zeros(5, 5, requires_grad=True), m.ones(5, 5, requires_grad=True)
    m.manual_seed(27)
    state = m.get_rng_state()
    eps = loc.new(loc.size()).cauchy_()
    m.set_rng_state(state)
    c = D.Cauchy(loc, scale).rsample()
    c.backward(m.ones_like(c))
    half_scale = m.ones(5, 5, requires_grad=True)
    state = m.get_rng_state()
    half_eps = half_scale.new(half_scale.size()).cauchy_().abs_()
    m.set_rng_state(state)
    h = D.HalfCauchy(half_scale).rsample()
    h.backward(m.ones_like(h))
    one = m.ones(1, requires_grad=True)
    return (
        (D.Cauchy(m.zeros(1), one).mean, D.Cauchy(m.zeros(1), one).variance),
        (D.HalfCauchy(one).mean, D.HalfCauchy(one).variance),
        loc.grad,
        scale.grad,
        eps,
        half_scale.grad,
        half_eps,
        tuple(D.Cauchy(0.0, 1.0).sample((1,)).shape),
    )


@slow
def half_normal_log_normal_logistic_normal_extremes(m):
    """test_halfnormal, test_lognormal, test_logisticnormal, test_inversegamma: extreme parameters' samples and
    log_prob's broadcasting."""
    D = m.distributions
    m.manual_seed(1)
    delta = m.tensor([1e-5, 1e-5])
    mean_delta = m.tensor([1.0, 0.0])
    return (
        D.HalfNormal(delta).sample((1, 2)),
        D.LogNormal(mean_delta, delta).sample((1, 2)),
        D.LogisticNormal(mean_delta, delta).sample(),
        tuple(D.HalfNormal(m.ones(2, 1, 4)).log_prob(m.ones(3, 1)).shape),
        tuple(D.LogNormal(m.zeros(4), m.ones(2, 1, 1)).log_prob(m.ones(3, 1)).shape),
        tuple(D.InverseGamma(m.ones(4), m.ones(2, 1, 1)).log_prob(m.ones(3, 1)).shape),
        tuple(D.LogisticNormal(m.zeros(5, 5), m.ones(5, 5)).sample((7,)).shape),
        tuple(D.LogisticNormal(0.2, 0.6).sample().shape),
    )


@slow
def mixture_same_family(m):
    """test_mixture_same_family_shape and its log_prob and cdf against torch's values."""
    D = m.distributions
    m.manual_seed(28)
    out = []
    for batch in ((), (3,), (4, 3)):
        mix = D.MixtureSameFamily(
            D.Categorical(m.rand(*batch, 5)), D.Normal(m.randn(*batch, 5), m.rand(*batch, 5) + 0.1)
        )
        mix2 = D.MixtureSameFamily(
            D.Categorical(m.rand(*batch, 5)),
            D.Independent(D.Normal(m.randn(*batch, 5, 2), m.rand(*batch, 5, 2) + 0.1), 1),
        )
        x = mix.sample((2, 7))
        out.append((x, mix.log_prob(x), mix.cdf(x), mix.mean, mix.variance))
        x2 = mix2.sample((2,))
        out.append((x2, mix2.log_prob(x2), tuple(mix2.sample().shape)))
    return out


@slow
def normal_rsample_gradient_is_the_saved_state_draw(m):
    """test_normal: the extreme-scale samples, and scale's gradient is the normal draw of the saved RNG state."""
    D = m.distributions
    m.manual_seed(29)
    loc = m.randn(5, 5, requires_grad=True)
    scale = m.randn(5, 5).abs().requires_grad_()
    m.manual_seed(1)
    extreme = D.Normal(m.tensor([1.0, 0.0]), m.tensor([1e-5, 1e-5])).sample((1, 2))
    state = m.get_rng_state()
    eps = m.normal(m.zeros_like(loc), m.ones_like(scale))
    m.set_rng_state(state)
    z = D.Normal(loc, scale).rsample()
    z.backward(m.ones_like(z))
    return extreme, z, loc.grad, scale.grad, eps


@slow
def lowrank_multivariate_normal(m):
    """test_lowrank_multivariate_normal_shape / _log_prob / _properties: shapes, batched against unbatched
    log_prob, and the same moments, matrices and entropy as the MultivariateNormal of its covariance."""
    D = m.distributions
    m.manual_seed(30)
    mean = m.randn(5, 3, requires_grad=True)
    cov_factor = m.randn(5, 3, 2, requires_grad=True)
    cov_diag = m.randn(5, 3).abs().requires_grad_()
    batched = D.LowRankMultivariateNormal(mean, cov_factor, cov_diag)
    x = batched.sample((10,))
    unbatched = m.stack(
        [D.LowRankMultivariateNormal(mean[i], cov_factor[i], cov_diag[i]).log_prob(x[:, i]) for i in range(5)]
    ).t()
    loc, factor, diag = m.randn(5), m.randn(5, 2), m.randn(5).abs()
    cov = factor.matmul(factor.t()) + diag.diag()
    low = D.LowRankMultivariateNormal(loc, factor, diag)
    full = D.MultivariateNormal(loc=loc, covariance_matrix=cov)
    shapes = [
        tuple(D.LowRankMultivariateNormal(m.randn(6, 5, 3), m.randn(3, 1), m.ones(3)).sample((2, 7)).shape),
        tuple(D.LowRankMultivariateNormal(m.randn(3), m.randn(6, 5, 3, 2), m.ones(6, 5, 3)).sample((2,)).shape),
    ]
    return (
        x,
        batched.log_prob(x),
        unbatched,
        [(getattr(low, k), getattr(full, k)) for k in ("mean", "variance", "covariance_matrix", "scale_tril")],
        (low.precision_matrix, full.precision_matrix),
        (low.entropy(), full.entropy()),
        shapes,
    )


@sc
def normal(m):
    """test_normal: sample shapes, rsample's gradients, log_prob, cdf/icdf, entropy."""
    D = m.distributions
    loc, scale = T(m, [[1.0, 0.0], [-1.0, 0.5]]), T(m, [[0.5, 1.0], [2.0, 0.3]])
    m.manual_seed(6)
    d = D.Normal(loc, scale)
    r = d.rsample((3,))
    r.sum().backward()
    value = T(m, [[0.3, -0.2], [1.0, 0.4]], False)
    return (
        r,
        loc.grad,
        scale.grad,
        tuple(D.Normal(0.0, 1.0).sample((5,)).shape),
        d.log_prob(value),
        d.cdf(value),
        d.icdf(d.cdf(value)),
        d.entropy(),
        d.mean,
        d.stddev,
    )


@sc
def multivariate_normal_properties(m):
    """test_multivariate_normal_properties: the three parametrisations give the same matrices, log_prob and
    entropy; samples after the same seed agree."""
    D = m.distributions
    loc = T(m, [1.0, 0.0, -1.0])
    cov, tril, prec = T(m, SPD), T(m, TRIL), T(m, np.linalg.inv(SPD))
    by_cov = D.MultivariateNormal(loc, covariance_matrix=cov)
    by_tril = D.MultivariateNormal(loc, scale_tril=tril)
    by_prec = D.MultivariateNormal(loc, precision_matrix=prec)
    value = T(m, [[0.5, 0.5, 0.5], [1.0, -1.0, 0.0]], False)
    out = []
    for d in (by_cov, by_tril, by_prec):
        m.manual_seed(7)
        out.append((d.scale_tril, d.covariance_matrix, d.precision_matrix, d.log_prob(value), d.entropy(), d.rsample()))
    return out, by_cov.mean, by_cov.variance, by_cov.mode


@sc
def multivariate_normal_shape(m):
    D = m.distributions
    mean = T(m, np.zeros((5, 3)))
    mean_no_batch = T(m, np.zeros(3))
    tril = T(m, np.broadcast_to(TRIL, (5, 3, 3)).copy())
    d = D.MultivariateNormal(mean, scale_tril=tril)
    d2 = D.MultivariateNormal(mean_no_batch, scale_tril=T(m, TRIL))
    d3 = D.MultivariateNormal(mean_no_batch, covariance_matrix=T(m, np.broadcast_to(SPD, (4, 3, 3)).copy()))
    return (
        tuple(d.sample().shape),
        tuple(d.sample((2, 7)).shape),
        tuple(d2.sample().shape),
        tuple(d3.sample((2,)).shape),
        tuple(d3.batch_shape),
    )


@sc
def multivariate_normal_gradients(m):
    """rsample and log_prob differentiate loc and scale_tril / covariance_matrix as PyTorch's."""
    D = m.distributions
    loc, cov = T(m, [1.0, 0.0, -1.0]), T(m, SPD)
    m.manual_seed(8)
    d = D.MultivariateNormal(loc, covariance_matrix=cov)
    (d.rsample((2,)).pow(2).sum() + d.log_prob(T(m, [0.2, 0.3, 0.4], False)) + d.entropy()).backward()
    return loc.grad, cov.grad


@sc
def gamma_log_prob_at_boundary(m):
    D = m.distributions
    out = []
    for concentration, value in ((1.0, 0.0), (0.5, 0.0), (2.0, 0.0)):
        d = D.Gamma(concentration, 1.0)
        out.append(d.log_prob(m.tensor(value)))
    return out


@sc
def beta_log_prob(m):
    D = m.distributions
    out = []
    for con1, con0, x in ((1.0, 1.0, 0.3), (0.5, 2.0, 0.7), (3.0, 4.0, 0.01)):
        out.append(D.Beta(m.tensor([con1]), m.tensor([con0])).log_prob(m.tensor([x])))
    return out


@sc
def dirichlet_log_prob(m):
    D = m.distributions
    alpha = T(m, [[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    x = T(m, [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], False)
    d = D.Dirichlet(alpha)
    lp = d.log_prob(x)
    lp.sum().backward()
    return lp, alpha.grad, d.mean, d.variance, d.entropy()


@sc
def uniform(m):
    """test_uniform: sample shapes, log_prob inside and outside the support without validation, rsample grads."""
    D = m.distributions
    low, high = T(m, [0.0, 1.0]), T(m, [1.0, 3.0])
    m.manual_seed(9)
    d = D.Uniform(low, high, validate_args=False)
    r = d.rsample()
    r.sum().backward()
    return (
        r,
        low.grad,
        high.grad,
        d.log_prob(m.tensor([0.5, 3.5])),
        d.log_prob(m.tensor([-0.5, 2.0])),
        d.cdf(m.tensor([0.5, 2.0])),
        d.icdf(m.tensor([0.25, 0.5])),
        d.entropy(),
    )


@sc
def exponential_and_laplace(m):
    D = m.distributions
    rate = T(m, [0.5, 2.0])
    m.manual_seed(10)
    e = D.Exponential(rate)
    lap = D.Laplace(T(m, [0.0, 1.0]), T(m, [1.0, 0.5]))
    value = m.tensor([0.3, 1.7])
    r = e.rsample((2,)) + lap.rsample((2,))
    r.sum().backward()
    return (
        r,
        rate.grad,
        e.log_prob(value),
        e.cdf(value),
        lap.log_prob(value),
        lap.cdf(value),
        lap.icdf(m.tensor([0.2, 0.9])),
    )


@slow
def cdf_icdf_inverse(m):
    """test_cdf_icdf_inverse: icdf(cdf(x)) == x for the examples that have both."""
    D = m.distributions
    out = []
    m.manual_seed(11)
    for name in ("Normal", "Uniform", "Exponential", "Laplace", "Cauchy", "HalfCauchy", "HalfNormal", "Gumbel"):
        d = EXAMPLES[name](m, D)[0]
        x = d.sample((4,))
        out.append((name, attempt(lambda d=d, x=x: d.icdf(d.cdf(x)))))
    return out


@slow
def cdf_log_prob(m):
    """test_cdf_log_prob: the cdf's derivative is the density (here: compared with torch's values). Gamma's
    parameters do not require grad here: gamma_cdf_gradient_of_the_value_alone has them require it."""
    D = m.distributions
    out = []
    m.manual_seed(12)
    laws = [
        (name, EXAMPLES[name](m, D)[0]) for name in ("Normal", "Exponential", "Laplace", "Beta", "Pareto", "Weibull")
    ]
    laws.append(("Gamma", D.Gamma(T(m, [1.0, 0.3], False), T(m, [2.0, 1.0], False))))
    for name, d in laws:
        x = d.sample().detach().requires_grad_()
        cdf = attempt(lambda d=d, x=x: d.cdf(x))
        if isinstance(cdf, tuple):
            out.append((name, cdf))
            continue
        (grad,) = m.autograd.grad(cdf.sum(), [x])
        out.append((name, grad, d.log_prob(x).exp()))
    return out


@sc
def gamma_cdf_gradient_of_the_value_alone(m):
    """autograd.grad of Gamma's cdf with respect to the value alone, the concentration requiring grad: PyTorch
    never asks gammainc for the derivative it lacks (in its first argument)."""
    D = m.distributions
    d = D.Gamma(T(m, [1.0, 0.3]), T(m, [2.0, 1.0]))
    x = T(m, [0.5, 1.5])
    (grad,) = m.autograd.grad(d.cdf(x).sum(), [x])
    return grad, d.log_prob(x).exp()


# vkml's backward computes every input's gradient that requires grad, not only those autograd.grad asks for
XFAIL = {
    "gamma_cdf_gradient_of_the_value_alone": "vkml's autograd.grad runs every needed rule's input gradients, "
    "not only those on a path to the requested inputs: igamma's missing derivative in its first argument raises",
}


@sc
def independent_shape(m):
    D = m.distributions
    base = D.Normal(T(m, np.zeros((2, 3, 4))), T(m, np.ones((2, 3, 4))))
    out = []
    for n in (0, 1, 2, 3):
        d = D.Independent(base, n)
        s = d.sample()
        out.append((tuple(d.batch_shape), tuple(d.event_shape), tuple(d.log_prob(s).shape), d.support.event_dim))
    return out, attempt(lambda: D.Independent(base, 4))


@sc
def valid_parameter_broadcasting(m):
    D = m.distributions
    cases = [
        D.Normal(loc=m.tensor([0.0, 0.0]), scale=1),
        D.Normal(loc=0, scale=m.tensor([1.0, 1.0])),
        D.Normal(loc=m.tensor([0.0, 0.0]), scale=m.tensor([1.0])),
        D.Normal(loc=m.tensor([[0.0], [0.0]]), scale=m.tensor([1.0, 1.0])),
        D.Gamma(concentration=m.tensor([1.0, 1.0]), rate=1),
        D.Beta(concentration1=m.tensor([1.0, 1.0]), concentration0=1),
        D.Uniform(low=0, high=m.tensor([1.0, 1.0, 1.0])),
        D.Laplace(loc=m.tensor([[0.0, 0.0]]), scale=m.tensor([[1.0], [1.0]])),
        D.Pareto(scale=m.tensor([1.0, 1.0]), alpha=1),
        D.StudentT(df=m.tensor([1.0, 1.0]), loc=1),
        D.Binomial(total_count=m.tensor([10.0, 10.0]), probs=m.tensor(0.5)),
    ]
    return [tuple(d.sample().shape) for d in cases]


@sc
def invalid_parameter_broadcasting(m):
    D = m.distributions
    out = []
    for make in (
        lambda: D.Normal(loc=m.tensor([0.0, 0.0]), scale=m.tensor([1.0, 1.0, 1.0])),
        lambda: D.Gamma(m.tensor([[1.0, 1.0]]), m.tensor([[1.0], [1.0], [1.0]]).t()),
        lambda: D.Uniform(low=m.tensor([0.0, 0.0]), high=m.tensor([1.0, 1.0, 1.0])),
        lambda: D.MultivariateNormal(m.zeros(3), scale_tril=m.eye(2)),
        lambda: D.Normal(loc=m.tensor([[0, 0]]), scale=m.tensor([1, 1, 1, 1])),
        lambda: D.FisherSnedecor(m.tensor([1, 1]), m.tensor([1, 1, 1])),
        lambda: D.Gumbel(m.tensor([[[0, 0, 0], [0, 0, 0]]]), m.tensor([1, 1])),
        lambda: D.Kumaraswamy(m.tensor([[1, 1]]), m.tensor([1, 1, 1, 1])),
        lambda: D.Laplace(m.tensor([0, 0]), m.tensor([1, 1, 1])),
        lambda: D.Pareto(m.tensor([1, 1]), m.tensor([1, 1, 1])),
        lambda: D.StudentT(m.tensor([1.0, 1.0]), scale=m.tensor([1.0, 1.0, 1.0])),
        lambda: D.StudentT(m.tensor([1.0, 1.0]), loc=m.tensor([1.0, 1.0, 1.0])),
    ):
        try:
            make()
            out.append("no error")
        except (RuntimeError, ValueError) as error:
            out.append(type(error).__name__)
    return out


# -- KL --------------------------------------------------------------------------------------------------------


@sc
def kl_shape(m):
    """TestKL.test_kl_shape: kl_divergence of a law with itself has its batch shape and is zero."""
    D = m.distributions
    out = []
    for name in ("Normal", "Bernoulli", "Categorical", "Gamma", "Beta", "Dirichlet", "MultivariateNormal", "Uniform"):
        d = EXAMPLES[name](m, D)[0]
        kl = D.kl_divergence(d, d)
        out.append((name, tuple(kl.shape), kl))
    return out


@sc
def kl_infinite(m):
    D = m.distributions
    pairs = [
        (D.Uniform(m.tensor([0.0]), m.tensor([2.0])), D.Uniform(m.tensor([0.5]), m.tensor([1.0]))),
        (D.Normal(m.tensor([0.0]), m.tensor([1.0])), D.Exponential(m.tensor([1.0]))),
        (D.Normal(m.tensor([0.0]), m.tensor([1.0])), D.Uniform(m.tensor([0.0]), m.tensor([1.0]))),
        (D.Beta(m.tensor([1.0]), m.tensor([1.0])), D.Uniform(m.tensor([0.25]), m.tensor([1.0]))),
        (D.Exponential(m.tensor([1.0])), D.Uniform(m.tensor([0.0]), m.tensor([1.0]))),
        (D.Bernoulli(m.tensor([0.5])), D.Bernoulli(m.tensor([0.0]))),
    ]
    return [D.kl_divergence(p, q) for p, q in pairs]


@sc
def kl_edgecases(m):
    D = m.distributions
    return (
        D.kl_divergence(D.Bernoulli(m.tensor(0.0)), D.Bernoulli(m.tensor(0.0))),
        D.kl_divergence(D.Bernoulli(m.tensor(1.0)), D.Bernoulli(m.tensor(1.0))),
        D.kl_divergence(D.Categorical(m.tensor([0.0, 1.0])), D.Categorical(m.tensor([0.0, 1.0]))),
    )


@sc
def kl_unregistered_pair(m):
    D = m.distributions
    return D.kl_divergence(D.Beta(m.tensor([1.0]), m.tensor([2.0])), D.Categorical(m.tensor([0.5, 0.5])))


@sc
def kl_transformed_and_independent(m):
    D = m.distributions
    base1 = D.Normal(T(m, [0.0, 1.0]), T(m, [1.0, 2.0]))
    base2 = D.Normal(T(m, [0.5, 0.0]), T(m, [2.0, 1.0]))
    t1 = D.TransformedDistribution(base1, [D.transforms.ExpTransform()])
    t2 = D.TransformedDistribution(base2, [D.transforms.ExpTransform()])
    i1, i2 = D.Independent(base1, 1), D.Independent(base2, 1)
    return D.kl_divergence(t1, t2), D.kl_divergence(i1, i2), attempt(lambda: D.kl_divergence(i1, base2))


@slow
def kl_registered_pairs(m):
    """TestKL: every pair of the examples' families that both libraries register gives torch's value."""
    D = m.distributions
    names = ("Normal", "Laplace", "Exponential", "Gamma", "Beta", "Uniform", "Bernoulli", "Poisson", "Gumbel", "Pareto")
    out = []
    for a in names:
        for b in names:
            p, q = EXAMPLES[a](m, D)[0], EXAMPLES[b](m, D)[0]
            out.append((a, b, attempt(lambda p=p, q=q: D.kl_divergence(p, q))))
    return out


@slow
def entropy_exponential_family(m):
    """test_entropy_exponential_family: the families' entropy equals ExponentialFamily's formula."""
    D = m.distributions
    out = []
    for name in ("Normal", "Exponential", "Gamma", "Beta", "Dirichlet", "Bernoulli", "Poisson"):
        d = EXAMPLES[name](m, D)[0]
        out.append((name, attempt(d.entropy), attempt(lambda d=d: D.ExponentialFamily.entropy(d))))
    return out


# -- numerical stability -----------------------------------------------------------------------------------


@sc
def bernoulli_gradient_at_the_ends(m):
    """TestNumericalStability.test_bernoulli_gradient: finite log_prob and gradients at probs 0 and 1."""
    D = m.distributions
    out = []
    for probs, value in ((0.0, 0.0), (1.0, 1.0), (1e-4, 1.0), (1 - 1e-4, 0.0)):
        p = T(m, [probs])
        lp = D.Bernoulli(p).log_prob(m.tensor([value]))
        lp.backward()
        out.append((lp, p.grad))
    for logits, value in ((-100.0, 0.0), (100.0, 1.0), (100.0, 0.0)):
        x = T(m, [logits])
        lp = D.Bernoulli(logits=x).log_prob(m.tensor([value]))
        lp.backward()
        out.append((lp, x.grad))
    return out


@sc
def categorical_log_prob_extremes(m):
    D = m.distributions
    out = []
    for logits in ([0.0, float("-inf")], [float("-inf"), 0.0], [100.0, -100.0]):
        d = D.Categorical(logits=m.tensor(logits))
        out.append((d.log_prob(m.tensor(0)), d.log_prob(m.tensor(1)), d.probs, d.entropy()))
    return out


@sc
def probs_to_logits_and_back(m):
    D = m.distributions
    u = m.distributions.utils
    p = m.tensor([[0.1, 0.2, 0.7], [1e-8, 0.5, 0.5 - 1e-8]])
    return (
        u.probs_to_logits(p),
        u.probs_to_logits(p, is_binary=True),
        u.logits_to_probs(m.tensor([0.5, -20.0, 30.0]), is_binary=True),
        u.clamp_probs(m.tensor([0.0, 1.0, 0.5])),
        D.Bernoulli(m.tensor([1e-8, 1 - 1e-8])).logits,
    )


# -- constraints (test_constraints.py) -------------------------------------------------------------------------


CONSTRAINTS = [
    ("real", ()),
    ("positive", ()),
    ("nonnegative", ()),
    ("greater_than", (-1.5,)),
    ("greater_than_eq", (0.0,)),
    ("less_than", (1.0,)),
    ("interval", (-2.0, 2.0)),
    ("half_open_interval", (-2.0, 2.0)),
    ("unit_interval", ()),
    ("simplex", ()),
    ("corr_cholesky", ()),
    ("lower_cholesky", ()),
    ("lower_triangular", ()),
    ("positive_definite", ()),
    ("positive_semidefinite", ()),
    ("real_vector", ()),
    ("boolean", ()),
    ("nonnegative_integer", ()),
    ("positive_integer", ()),
    ("integer_interval", (0, 3)),
]


def _constraint(m, name, args):
    C = m.distributions.constraints
    value = getattr(C, name)
    return value(*args) if args else value


@sc
def constraint_checks(m):
    """test_constraints: each constraint's check on values inside and outside, its event_dim and is_discrete."""
    values = [
        m.tensor([[-2.0, 0.0, 0.5], [1.0, 3.0, 2.0], [0.2, 0.3, 0.5]]),
        m.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]]),
        m.tensor([[2.0, 0.5, 0.1], [0.5, 1.5, 0.2], [0.1, 0.2, 1.0]]),
        m.tensor([[0.0, 1.0, 2.0], [3.0, 1.0, 0.0], [1.0, 1.0, 1.0]]),
    ]
    out = []
    for name, args in CONSTRAINTS:
        c = _constraint(m, name, args)
        out.append((name, c.event_dim, c.is_discrete, [c.check(v) for v in values]))
    return out


# test_constraints.py's EXAMPLES: (constraint, value) whose check PyTorch's test asserts
MATRIX_EXAMPLES = [
    ("symmetric", [[2.0, 0], [2.0, 2]]),
    ("positive_semidefinite", [[2.0, 0], [2.0, 2]]),
    ("positive_definite", [[2.0, 0], [2.0, 2]]),
    ("symmetric", [[3.0, -5], [-5.0, 3]]),
    ("positive_semidefinite", [[3.0, -5], [-5.0, 3]]),
    ("positive_definite", [[3.0, -5], [-5.0, 3]]),
    ("positive_semidefinite", [[1.0, 2], [2.0, 4]]),
    ("positive_definite", [[1.0, 2], [2.0, 4]]),
    ("positive_semidefinite", [[[1.0, -2], [-2.0, 1]], [[2.0, 3], [3.0, 2]]]),
    ("positive_definite", [[[1.0, -2], [-2.0, 4]], [[1.0, -1], [-1.0, 1]]]),
    ("symmetric", [[[4.0, 2], [2.0, 4]], [[3.0, -1], [-1.0, 3]]]),
    ("positive_definite", [[[4.0, 2], [2.0, 4]], [[3.0, -1], [-1.0, 3]]]),
]


@sc
def constraint_matrix_examples(m):
    C = m.distributions.constraints
    return [getattr(C, name).check(m.tensor(value, dtype=m.float64)) for name, value in MATRIX_EXAMPLES]


# test_constraints.py's CONSTRAINTS for test_biject_to and test_transform_to (tensor bounds are float64)
BIJECT_CONSTRAINTS = [
    ("real", ()),
    ("real_vector", ()),
    ("positive", ()),
    ("greater_than", ([-10.0, -2, 0, 2, 10],)),
    ("greater_than", (2,)),
    ("greater_than_eq", (-2,)),
    ("less_than", ([-10.0, -2, 0, 2, 10],)),
    ("less_than", (-2,)),
    ("unit_interval", ()),
    ("interval", ([-4.0, -2, 0, 2, 4], [-3.0, 3, 1, 5, 5])),
    ("interval", (1, 2)),
    ("half_open_interval", ([-4.0, -2, 0, 2, 4], [-3.0, 3, 1, 5, 5])),
    ("half_open_interval", (-2, -1)),
    ("simplex", ()),
    ("corr_cholesky", ()),
    ("lower_cholesky", ()),
    ("positive_definite", ()),
]


def biject_and_transform(registry_name):
    """test_biject_to / test_transform_to: the transform's output satisfies the constraint, its inverse (or
    pseudo-inverse) round-trips, the log-Jacobian's shape."""

    def scenario(m):
        D = m.distributions
        C = D.constraints
        out = []
        for name, args in BIJECT_CONSTRAINTS:
            c = getattr(C, name)
            if args:
                c = c(*(m.tensor(a, dtype=m.float64) if isinstance(a, list) else a for a in args))
            t = attempt(lambda c=c: getattr(D, registry_name)(c))
            if isinstance(t, tuple):
                out.append((name, t))
                continue
            m.manual_seed(16)
            x = m.randn(6, 6, dtype=m.float64) if name == "corr_cholesky" else m.randn(5, 5, dtype=m.float64)
            y = t(x)
            row = [name, type(t).__name__, t.bijective, y, bool(c.check(y).all())]
            if registry_name == "biject_to":
                row += [t.inv(y), tuple(t.log_abs_det_jacobian(x, y).shape)]
            else:
                row.append(t(t.inv(y)))
            out.append(tuple(row))
        return out

    return scenario


SLOW["biject_to"] = biject_and_transform("biject_to")
SLOW["transform_to"] = biject_and_transform("transform_to")


@sc
def constraint_dependent_and_registry_errors(m):
    C = m.distributions.constraints
    D = m.distributions
    return (
        C.is_dependent(C.dependent),
        C.is_dependent(C.real),
        C.is_dependent(D.Binomial.support),
        attempt(lambda: C.dependent.check(m.ones(1))),
        repr(C.interval(0.0, 1.0)),
        repr(C.independent(C.real, 1)),
        C.independent(C.real, 1).event_dim,
    )


# -- transforms (test_transforms.py) ---------------------------------------------------------------------------


def transforms(m):
    T_ = m.distributions.transforms
    return {
        "Abs": T_.AbsTransform(),
        "Exp": T_.ExpTransform(),
        "Power": T_.PowerTransform(exponent=m.tensor([2.0, 3.0, 0.5])),
        "Sigmoid": T_.SigmoidTransform(),
        "Tanh": T_.TanhTransform(),
        "Softplus": T_.SoftplusTransform(),
        "Affine": T_.AffineTransform(m.tensor([1.0, -1.0, 0.5]), m.tensor([2.0, 0.5, -1.0])),
        "Affine-event": T_.AffineTransform(0.5, 3.0, event_dim=1),
        "Softmax": T_.SoftmaxTransform(),
        "StickBreaking": T_.StickBreakingTransform(),
        "LowerCholesky": T_.LowerCholeskyTransform(),
        "CorrCholesky": T_.CorrCholeskyTransform(),
        "Compose": T_.ComposeTransform([T_.AffineTransform(0.0, 2.0), T_.ExpTransform()]),
        "Inverse-Exp": T_.ExpTransform().inv,
        "Independent": T_.IndependentTransform(T_.ExpTransform(), 1),
        "Reshape": T_.ReshapeTransform((2, 3), (3, 2)),
        "Cumulative": T_.CumulativeDistributionTransform(m.distributions.Normal(0.0, 1.0)),
    }


@slow
def transform_values_and_jacobians(m):
    """test_transforms' forward/inverse/log_abs_det_jacobian, domain/codomain event dims and the shapes."""
    x = m.tensor([[0.3, 1.2, 0.8], [1.5, 0.1, 0.4]])
    out = []
    for name, t in transforms(m).items():
        value = x.reshape(3, 2)[:2] if name == "Reshape" else x
        if name in ("LowerCholesky",):
            value = m.tensor([[0.3, 1.2], [0.8, 1.5]])
        y = t(value)
        row = {
            "y": y,
            "dims": (
                t.domain.event_dim,
                t.codomain.event_dim,
                t.bijective,
                t.sign if name in ("Exp", "Affine-event", "Sigmoid") else None,
            ),
            "shapes": (tuple(t.forward_shape(value.shape)), tuple(t.inverse_shape(y.shape))),
        }
        row["inv"] = attempt(lambda t=t, y=y: t.inv(y))
        row["ladj"] = attempt(lambda t=t, value=value, y=y: t.log_abs_det_jacobian(value, y))
        out.append((name, row))
    return out


def transform_list(m, cache_size: int) -> list:
    """test_transforms.py's get_transforms: each transform and its inverse (random parameters seeded)."""
    T_ = m.distributions.transforms
    m.manual_seed(17)

    def affine(*shape):
        return T_.AffineTransform(m.randn(*shape), m.randn(*shape), cache_size=cache_size)

    forward = [
        T_.AbsTransform(cache_size=cache_size),
        T_.ExpTransform(cache_size=cache_size),
        T_.PowerTransform(exponent=2, cache_size=cache_size),
        T_.PowerTransform(exponent=m.tensor(5.0).normal_(), cache_size=cache_size),
        T_.SigmoidTransform(cache_size=cache_size),
        T_.TanhTransform(cache_size=cache_size),
        T_.AffineTransform(0, 1, cache_size=cache_size),
        T_.AffineTransform(1, -2, cache_size=cache_size),
        affine(5),
        affine(4, 5),
        T_.SoftmaxTransform(cache_size=cache_size),
        T_.SoftplusTransform(cache_size=cache_size),
        T_.StickBreakingTransform(cache_size=cache_size),
        T_.LowerCholeskyTransform(cache_size=cache_size),
        T_.CorrCholeskyTransform(cache_size=cache_size),
        T_.ComposeTransform([affine(4, 5), T_.ExpTransform(cache_size=cache_size)]),
        T_.ComposeTransform([T_.AffineTransform(0, 1, cache_size=cache_size), affine(4, 5)]),
        T_.ReshapeTransform((4, 5), (2, 5, 2)),
        T_.IndependentTransform(affine(5), 1),
    ]
    return forward + [t.inv for t in forward]


def transform_data(m, transform):
    """test_transforms.py's generate_data: an input in the transform's domain (seeded)."""
    C = m.distributions.constraints
    T_ = m.distributions.transforms
    m.manual_seed(1)
    while isinstance(transform, T_.IndependentTransform):
        transform = transform.base_transform
    if isinstance(transform, T_.ReshapeTransform):
        return m.randn(*transform.in_shape)
    if isinstance(transform.inv, T_.ReshapeTransform):
        return m.randn(*transform.inv.out_shape)
    domain = transform.domain
    while isinstance(domain, C.independent) and domain is not C.real_vector:
        domain = domain.base_constraint
    if domain is C.lower_cholesky or transform.codomain is C.lower_cholesky:
        return m.empty(6, 6).normal_()
    if domain is C.real:
        return m.empty(4, 5).normal_()
    if domain is C.real_vector:
        return m.empty(3, 6).normal_()
    if domain is C.positive:
        return m.empty(4, 5).normal_().exp()
    if domain is C.unit_interval:
        return m.empty(4, 5).uniform_()
    if isinstance(domain, C.interval):
        return m.empty(4, 5).uniform_() * (domain.upper_bound - domain.lower_bound) + domain.lower_bound
    if domain is C.simplex:
        x = m.empty(4, 5).normal_().exp()
        return x / x.sum(-1, True)
    if domain is C.corr_cholesky:
        x = m.empty(4, 5, 5).normal_().tril()
        x = x / x.norm(dim=-1, keepdim=True)
        x.diagonal(dim1=-1).copy_(x.diagonal(dim1=-1).abs())
        return x
    raise ValueError(f"Unsupported domain: {domain}")


def transforms_checked(which):
    """test_inv_inv, test_with_cache, test_forward_inverse (cached and not) and test_jacobian's values and
    shapes, for the transforms of ``transform_list`` (``which``: a slice of it)."""

    def scenario(m):
        out = []
        for t in transform_list(m, 0)[which]:
            x = transform_data(m, t).requires_grad_()
            row = {"inv_inv": t.inv.inv is t}
            cached = t.with_cache(1)
            y = attempt(lambda cached=cached, x=x: cached(x))
            if isinstance(y, tuple):
                out.append((type(t).__name__, y))
                continue
            row["with_cache"] = (cached._cache_size, cached(x) is y, cached.inv(y) is x)
            row["y"] = y
            row["forward_shape"] = tuple(t.forward_shape(x.shape)) == tuple(y.shape)
            x2 = attempt(lambda t=t, y=y: t.inv(y.clone()))
            row["x2"] = x2 if isinstance(x2, tuple) else (x2, tuple(t.inverse_shape(y.shape)), t(x2))
            ladj = attempt(lambda t=t, x=x, y=y: t.log_abs_det_jacobian(x.detach(), y.detach()))
            row["ladj"] = ladj
            row["flags"] = (t.bijective, t.domain.event_dim, t.codomain.event_dim)
            out.append((type(t).__name__, row))
        return out

    return scenario


SC["transforms_exp_and_affine"] = transforms_checked(slice(1, 2))
SLOW["transforms_forward"] = transforms_checked(slice(0, 19))
SLOW["transforms_inverse"] = transforms_checked(slice(19, 38))


@sc
def transform_equality(m):
    """test_equality: a transform equals itself only (ExpTransform() equals another, as both libraries say);
    identity_transform equals its inverse."""
    transforms = transform_list(m, 0)
    T_ = m.distributions.transforms
    return [[x == y for y in transforms] for x in transforms], T_.identity_transform == T_.identity_transform.inv


@slow
def transformed_distribution_shapes(m):
    """test_transformed_distribution_shapes: batch and event shapes of compositions; rsample and log_prob run."""
    D = m.distributions
    T_ = D.transforms
    t0, t1, t2 = T_.ExpTransform(), T_.SoftmaxTransform(), T_.LowerCholeskyTransform()
    base0 = D.Normal(m.zeros(4, 4), m.ones(4, 4))
    base1 = D.Dirichlet(m.ones(4, 4))
    base2 = D.Normal(m.zeros(3, 4, 4), m.ones(3, 4, 4))
    dists = [base0, base1, base2]
    for base in (base0, base1):
        for parts in ([t0], [t1], [t0, t1], [t0, t2], [t1, t0], [t1, t2], [t2, t0], [t2, t1], [t2]):
            dists.append(D.TransformedDistribution(base, parts))
    for parts in ([t2], [t0, t2], [t1, t2], [t2, t0], [t2, t1]):
        dists.append(D.TransformedDistribution(base2, parts))
    out = [
        (
            T_.ComposeTransform([t0, t1]).event_dim,
            T_.ComposeTransform([t0, t2]).event_dim,
            T_.ComposeTransform([t1, t2]).event_dim,
        )
    ]
    m.manual_seed(18)
    for d in dists:
        x = d.rsample()
        out.append((tuple(d.batch_shape), tuple(d.event_shape), tuple(attempt(lambda d=d, x=x: d.log_prob(x)).shape)))
    return out


@sc
def transform_cache_and_equality(m):
    """test_transforms' caching: cache_size=1 returns the input of the last call from inv; equality; repr."""
    T_ = m.distributions.transforms
    x = m.tensor([0.5, -0.3])
    cached = T_.ExpTransform(cache_size=1)
    y = cached(x)
    uncached = T_.ExpTransform()
    return (
        cached.inv(y) is x,
        uncached.inv(uncached(x)) is x,
        T_.ExpTransform() == T_.ExpTransform(),
        T_.ExpTransform() == T_.SigmoidTransform(),
        T_.ExpTransform().inv == T_.ExpTransform().inv,
        T_.ExpTransform().inv.inv == T_.ExpTransform(),
        repr(T_.ExpTransform()),
        repr(T_.ComposeTransform([T_.ExpTransform(), T_.AbsTransform()])),
        attempt(lambda: T_.ExpTransform(cache_size=2)),
        T_.ExpTransform().with_cache(1)._cache_size,
    )


@sc
def transform_jacobian_matches_autograd(m):
    """test_jacobian: each elementwise transform's log_abs_det_jacobian is log|dy/dx| by autograd."""
    T_ = m.distributions.transforms
    out = []
    for t in (
        T_.ExpTransform(),
        T_.SigmoidTransform(),
        T_.TanhTransform(),
        T_.SoftplusTransform(),
        T_.PowerTransform(2.0),
    ):
        x = m.tensor([0.3, 0.7, 1.1], requires_grad=True)
        y = t(x)
        (grad,) = m.autograd.grad(y.sum(), [x])
        out.append((grad.abs().log(), t.log_abs_det_jacobian(x, y)))
    return out


@sc
def transformed_distribution(m):
    """TransformedDistribution with a composition: sample, rsample's gradient, log_prob, cdf and icdf."""
    D = m.distributions
    T_ = D.transforms
    loc, scale = T(m, [0.0, 1.0]), T(m, [1.0, 0.5])
    d = D.TransformedDistribution(D.Normal(loc, scale), [T_.AffineTransform(1.0, 2.0), T_.ExpTransform()])
    m.manual_seed(13)
    r = d.rsample((3,))
    r.sum().backward()
    value = m.tensor([1.5, 4.0])
    return r, loc.grad, scale.grad, d.log_prob(value), d.cdf(value), d.icdf(m.tensor([0.3, 0.6])), tuple(d.batch_shape)


@sc
def log_normal_and_logistic_normal(m):
    D = m.distributions
    m.manual_seed(14)
    ln = D.LogNormal(T(m, [0.0, 1.0]), T(m, [1.0, 0.5]))
    lg = D.LogisticNormal(T(m, [0.0, 1.0]), T(m, [1.0, 0.5]))
    s = lg.sample()
    return ln.sample((2,)), ln.mean, ln.variance, ln.entropy(), s, lg.log_prob(s), tuple(lg.event_shape)


# the default suite's scenarios that took over ~0.3 s on the 2-core CI machine (kernels to build: lgamma,
# digamma, the generic checks of a family), run with the exhaustive ones
HEAVY = {
    "kl_shape", "dirichlet_log_prob", "generic_Gamma", "gamma_cdf_gradient_of_the_value_alone",
    "generic_MultivariateNormal", "kl_infinite", "constraint_checks", "generic_Categorical",
    "transform_jacobian_matches_autograd", "kl_edgecases", "categorical_2d", "generic_Bernoulli", "categorical_1d",
    "exponential_and_laplace", "beta_log_prob", "one_hot_categorical", "log_normal_and_logistic_normal",
    "transformed_distribution", "kl_transformed_and_independent", "categorical_probs_vs_logits",
    "multivariate_normal_shape", "multivariate_normal_gradients", "independent_shape",
    "invalid_MultivariateNormal-cov", "multivariate_normal_properties", "transform_equality",
    "categorical_enumerate_support", "bernoulli_gradient_at_the_ends", "gamma_log_prob_at_boundary",
    "categorical_extremes_and_masked_entropy", "uniform_rsample_gradients_from_the_rng_state",
    "poisson_shapes_and_zero_rate",
}  # fmt: skip
SLOW.update((name, SC.pop(name)) for name in HEAVY)


def _params(table):
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=XFAIL[n])) if n in XFAIL else n
        for n in sorted(table)
    ]


@pytest.mark.parametrize("name", _params(SC))
def test_distributions_scenario_matches_torch(name: str) -> None:
    check(SC[name], rtol=1e-4, atol=1e-5)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", _params(SLOW))
def test_distributions_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], rtol=1e-4, atol=1e-5)


def test_distributions_scenarios_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: Normal's rsample and log_prob and a Categorical's samples."""
    from pytorch_suite_ops import on_device

    def scenario(m):
        D = m.distributions
        m.manual_seed(15)
        loc, scale = T(m, [0.0, 1.0]), T(m, [1.0, 2.0])
        d = D.Normal(loc, scale)
        r = d.rsample((2,))
        (r.sum() + d.log_prob(m.tensor([0.5, 0.5])).sum()).backward()
        return r, loc.grad, scale.grad, D.Categorical(m.tensor([0.2, 0.3, 0.5])).sample((4,))

    check(on_device(gpu, scenario), rtol=1e-4, atol=1e-5)
