"""``Dirichlet(concentration)``, as ``torch.distributions.Dirichlet``."""

from __future__ import annotations

import math

import vkml as _vk
from vkml.frontend import mt19937
from vkml.frontend import random as _random
from vkml.nn import functional as _F

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _size

__all__ = ["Dirichlet"]


def _sample_dirichlet(concentration):
    """PyTorch's ``_sample_dirichlet`` draws (double gammas normalised per row, on the host)."""
    with _vk.no_grad():
        alpha = concentration.detach()
        work = _vk.float64 if alpha.dtype is _vk.float64 else _vk.float32
        values = alpha.to(work).numpy()
        drawn = _random.host_draw("_sample_dirichlet", alpha.shape, work, alpha.device, None, mt19937.dirichlet, values)
        return drawn.to(alpha.dtype)


def _beta_grad_alpha_small(x: float, alpha: float, beta: float, factor: float) -> float:
    """d x / d alpha for x ~ Beta(alpha, beta) near 0: a Taylor series (PyTorch's); ``factor`` is
    digamma(alpha) - digamma(alpha + beta) - log x."""
    numer = 1.0
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer *= (i - beta) * x / i
        denom = alpha + i
        series += numer / denom * (factor + 1 / denom)
    result = x * math.pow(1 - x, -beta) * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_beta_small(x: float, alpha: float, beta: float, factor: float) -> float:
    """d x / d beta for x ~ Beta(alpha, beta) near 0 (PyTorch's series); ``factor`` is
    digamma(alpha + beta) - digamma(beta)."""
    numer, betas, dbetas, series = 1.0, 1.0, 0.0, factor / alpha
    for i in range(1, 9):
        numer *= -x / i
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series += numer / (alpha + i) * (dbetas + factor * betas)
    result = -math.pow(1 - x, 1 - beta) * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_alpha_mid(x: float, alpha: float, beta: float) -> float:
    """d x / d alpha for alpha and beta both large: Rice's saddle point expansion (PyTorch's)."""
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x <= mean + 0.1 * std:  # around the singularity at x = mean
        poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
            (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta
            + alpha
            * (
                3 * (59 + 180 * beta - 90 * x) * (beta * beta)
                + alpha * ((453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))
            )
        )
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
        return prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = (
        (1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
        * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
        / (1 + 1 / (12 * total) + 1 / (288 * total * total))
    )
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (math.sqrt(2 * alpha / beta) * math.pow(total, 1.5) * axbx * axbx)
    term2 = 0.5 * math.log(alpha / (total * x))
    term3 = math.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4_base = beta * math.log(beta / (total * (1 - x))) + alpha * math.log(alpha / (total * x))
    term4 = math.pow(term4_base, -1.5)
    return stirling * prefactor * (term1 + term2 * (term3 + (term4 if x < mean else -term4)))


# PyTorch's rational correction to the analytic approximation, c[numerator/denominator][i][j][k]
_DIRICHLET_RATIONAL = (
    (
        ((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
         (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
         (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
        ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
         (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
         (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
        ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
         (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
         (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05)),
    ),
    (
        ((1, -0.02924021934, -0.04438342661, 0.007285809825),
         (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
         (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
        ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
         (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
         (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
        ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
         (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
         (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06)),
    ),
)  # fmt: skip


def _dirichlet_grad_one(x: float, alpha: float, total: float, psi_alpha: float, psi_total: float) -> float:
    """PyTorch's ``dirichlet_grad_one``: -(d/dalpha cdf(x; alpha, total - alpha)) / pdf / (1 - x), for x
    drawn from Beta(alpha, total - alpha); ``psi_*`` are the digammas of alpha and total."""
    beta = total - alpha
    boundary = total * x * (1 - x)
    if x <= 0.5 and boundary < 2.5:  # x near 0
        return _beta_grad_alpha_small(x, alpha, beta, psi_alpha - psi_total - math.log(x))
    if x >= 0.5 and boundary < 0.75:  # x near 1
        return -_beta_grad_beta_small(1 - x, beta, alpha, psi_total - psi_alpha)
    if alpha > 6 and beta > 6:
        return _beta_grad_alpha_mid(x, alpha, beta)
    u = math.log(x)
    a = math.log(alpha) - u
    b = math.log(total) - a
    p = q = 0.0
    for i, pow_u in enumerate((1.0, u, u * u)):
        for j, pow_a in enumerate((1.0, a, a * a)):
            cp, cq = _DIRICHLET_RATIONAL[0][i][j], _DIRICHLET_RATIONAL[1][i][j]
            p += pow_u * pow_a * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])))
            q += pow_u * pow_a * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])))
    return p / q * (x * (psi_total - psi_alpha) / beta)


def _dirichlet_grad(x, concentration, total):
    """PyTorch's ``_dirichlet_grad``: elementwise, on the host in double (PyTorch's CPU kernel reads
    them too), in the concentration's dtype."""
    with _vk.no_grad():
        alpha, total = concentration.detach().to(_vk.float64), total.detach().to(_vk.float64)
        psi_alpha = _vk.digamma(alpha).numpy().reshape(-1).tolist()
        psi_total = _vk.digamma(total).numpy().reshape(-1).tolist()
        columns = (t.numpy().reshape(-1).tolist() for t in (x.detach().to(_vk.float64), alpha, total))
        grads = [_dirichlet_grad_one(*row) for row in zip(*columns, psi_alpha, psi_total)]
        out = _vk.tensor(grads, dtype=_vk.float64, device=concentration.device)
        return out.reshape(tuple(concentration.shape)).to(concentration.dtype)


class _Dirichlet(_vk.autograd.Function):
    """``_sample_dirichlet`` with PyTorch's implicit reparameterisation gradient."""

    @staticmethod
    def forward(ctx, concentration):
        x = _sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, True).expand_as(concentration)
        grad = _dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, True))


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex, with ``concentration`` (last dim: the categories).

    ``rsample`` differentiates the sample with respect to the concentration by PyTorch's implicit
    reparameterisation (its approximations of the Beta CDF's derivative, computed on the host).

    >>> import vkml
    >>> from vkml.distributions import Dirichlet
    >>> Dirichlet(vkml.tensor([1.0, 3.0])).mean.tolist()
    [0.25, 0.75]
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    # the exponential family's parameters (ExponentialFamily: its entropy, the Bregman KL)
    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - _vk.lgamma(x.sum(-1))

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = _size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _Dirichlet.apply(self.concentration.expand(shape))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with _vk.no_grad():
            return _sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            _vk.xlogy(self.concentration - 1.0, value).sum(-1)
            + _vk.lgamma(self.concentration.sum(-1))
            - _vk.lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # all concentrations below 1: the mode is the corner of the largest
        corner = _F.one_hot(mode.argmax(-1), concentrationm1.shape[-1]).to(mode)
        below = (self.concentration < 1).all(dim=-1, keepdim=True)
        return _vk.where(below, corner, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            _vk.lgamma(self.concentration).sum(-1)
            - _vk.lgamma(a0)
            - (k - a0) * _vk.digamma(a0)
            - ((self.concentration - 1.0) * _vk.digamma(self.concentration)).sum(-1)
        )
