"""``vkml.distributions``: PyTorch's ``torch.distributions`` on vkml tensors.

Parameters, ``log_prob``, ``entropy``, moments and ``kl_divergence`` compute what PyTorch
computes, with gradients; samples come from vkml's generator (``vkml.manual_seed`` makes them
reproducible, the same on every device; they are not PyTorch's numbers). docs/distributions.md
lists what exists and where vkml differs.

>>> import vkml
>>> from vkml.distributions import Categorical
>>> m = Categorical(probs=vkml.tensor([0.1, 0.9]))
>>> action = m.sample()
>>> tuple(m.log_prob(action).shape)
()
"""

from . import constraints, kl, kl_families, transforms  # noqa: F401 (kl_families registers its pairs)
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Chi2, Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "NegativeBinomial",
    "HalfCauchy",
    "InverseGamma",
    "Pareto",
    "Weibull",
    "biject_to",
    "transform_to",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "Binomial",
    "Multinomial",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "MixtureSameFamily",
    "StudentT",
    "Poisson",
    "HalfNormal",
    "Gumbel",
    "Geometric",
    "Gamma",
    "Dirichlet",
    "Chi2",
    "Cauchy",
    "Beta",
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Categorical",
    "ComposeTransform",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "ExponentialFamily",
    "Independent",
    "Laplace",
    "LogNormal",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "PowerTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "constraints",
    "identity_transform",
    "kl",
    "kl_divergence",
    "register_kl",
    "transforms",
    "LowRankMultivariateNormal",
    "ContinuousBernoulli",
    "FisherSnedecor",
    "GeneralizedPareto",
    "Kumaraswamy",
    "LKJCholesky",
    "LogisticNormal",
    "VonMises",
    "Wishart",
    "CumulativeDistributionTransform",
    "PositiveDefiniteTransform",
    "ReshapeTransform",
    "CatTransform",
    "StackTransform",
    "CorrCholeskyTransform",
]
