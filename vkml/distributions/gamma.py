"""``Gamma(concentration, rate)`` and ``Chi2(df)``, as ``torch.distributions.Gamma`` / ``Chi2``.

Sampling: PyTorch's CPU sampler (Marsaglia and Tsang's rejection method with its squeeze,
concentrations below 1 boosted by U^(1/a)), element by element on the host from vkml's generator
(vkml/frontend/mt19937.py): after the same ``manual_seed``, PyTorch's samples. The concentrations
are read back to the host, as PyTorch's CPU kernel reads them.
"""

from __future__ import annotations

import math
from numbers import Number

import vkml as _vk
from vkml.frontend import mt19937
from vkml.frontend import random as _random

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all

__all__ = ["Chi2", "Gamma"]


def _standard_gamma(concentration):
    """Gamma(concentration, 1) samples of concentration's shape (no gradient): PyTorch's draws."""
    with _vk.no_grad():
        alpha = concentration.detach()
        work = _vk.float64 if alpha.dtype is _vk.float64 else _vk.float32
        values = alpha.to(work).numpy()
        drawn = _random.host_draw(
            "_standard_gamma", alpha.shape, work, alpha.device, None, mt19937.standard_gamma, values
        )
        return drawn.to(alpha.dtype)


# PyTorch's bivariate rational approximation of the reparameterised gradient (Distributions.h)
_RATIONAL = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (
        0.040121004,
        -0.0065914022,
        -0.0026286047,
        -0.0013441777,
        0.017050642,
        -0.0021309326,
        0.00085092367,
        -1.5247877e-07,
    ),
)


def _gamma_grad_one(alpha: float, x: float, digamma_alpha: float) -> float:
    """d x / d alpha for x ~ Gamma(alpha, 1) with the uniforms held fixed, as PyTorch's
    ``standard_gamma_grad_one`` approximates it: a Taylor series of the CDF for small x, Rice's
    saddle point expansion for large alpha, a rational approximation elsewhere."""
    if x < 0.8:
        numer, denom = 1.0, alpha
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer *= -x / i
            denom += 1
            series1 += numer / denom
            series2 += numer / (denom * denom)
        pow_x_alpha = math.pow(x, alpha)
        gamma_pdf = math.pow(x, alpha - 1) * math.exp(-x)
        gamma_cdf = pow_x_alpha * series1
        gamma_cdf_alpha = (math.log(x) - digamma_alpha) * gamma_cdf - pow_x_alpha * series2
        result = -gamma_cdf_alpha / gamma_pdf if gamma_pdf else math.nan
        return 0.0 if math.isnan(result) else result
    if alpha > 8.0:
        if 0.9 * alpha <= x <= 1.1 * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
            return numer_1 * numer_2 / (1244160 * (alpha * alpha) * (alpha * alpha))
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = math.pow(x - alpha - alpha * math.log(x / alpha), -1.5)
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = math.log(x / alpha) * term23 - math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        return -stirling * x * term1 / denom
    u, v = math.log(x / alpha), math.log(alpha)
    coef_v = [c0 + u * (c1 + u * c2) for c0, c1, c2 in zip(*_RATIONAL)]
    p = coef_v[0] + v * (coef_v[1] + v * (coef_v[2] + v * coef_v[3]))
    q = coef_v[4] + v * (coef_v[5] + v * (coef_v[6] + v * coef_v[7]))
    return math.exp(p / q)


def _standard_gamma_grad(concentration, sample):
    """PyTorch's ``_standard_gamma_grad``: elementwise d sample / d concentration, computed on the
    host in double (PyTorch's CPU kernel reads both too), in the concentration's dtype."""
    with _vk.no_grad():
        alpha = concentration.detach().to(_vk.float64)
        digammas = _vk.digamma(alpha).numpy().reshape(-1).tolist()
        pairs = zip(alpha.numpy().reshape(-1).tolist(), sample.detach().to(_vk.float64).numpy().reshape(-1).tolist())
        grads = [_gamma_grad_one(a, x, d) for (a, x), d in zip(pairs, digammas)]
        out = _vk.tensor(grads, dtype=_vk.float64, device=concentration.device).reshape(tuple(concentration.shape))
        return out.to(concentration.dtype)


class _StandardGamma(_vk.autograd.Function):
    """``torch._standard_gamma`` with its gradient: ``grad * _standard_gamma_grad(alpha, sample)``."""

    @staticmethod
    def forward(ctx, concentration):
        sample = _standard_gamma(concentration)
        ctx.save_for_backward(concentration, sample)
        return sample

    @staticmethod
    def backward(ctx, grad):
        concentration, sample = ctx.saved_tensors
        return grad * _standard_gamma_grad(concentration, sample)


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    ``rsample`` differentiates with respect to ``rate`` and, by PyTorch's implicit
    reparameterisation (its approximations of d sample / d concentration), ``concentration``.

    >>> from vkml.distributions import Gamma
    >>> Gamma(2.0, 4.0).mean.item()
    0.5
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    # the exponential family's parameters (ExponentialFamily: its entropy, the Bregman KL)
    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _vk.lgamma(x + 1) + (x + 1) * _vk.log(-y.reciprocal())

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = _vk.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = _size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        concentration = self.concentration.expand(shape)
        if concentration.requires_grad and _vk.is_grad_enabled():  # the implicit reparameterisation
            return _StandardGamma.apply(concentration) / self.rate.expand(shape)
        return _standard_gamma(concentration) / self.rate.expand(shape)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with _vk.no_grad():
            return _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        value = _vk.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (
            _vk.xlogy(self.concentration, self.rate)
            + _vk.xlogy(self.concentration - 1, value)
            - self.rate * value
            - _vk.lgamma(self.concentration)
        )

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _vk.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        return (
            self.concentration
            - _vk.log(self.rate)
            + _vk.lgamma(self.concentration)
            + (1.0 - self.concentration) * _vk.digamma(self.concentration)
        )


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2).

    >>> from vkml.distributions import Chi2
    >>> Chi2(3.0).mean.item()
    3.0
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2
