"""``VonMises(loc, concentration)``, as ``torch.distributions.VonMises``: a distribution of angles.

``log_prob`` and ``variance`` use PyTorch's polynomial approximations of log I0 and log I1 (so they
agree with PyTorch's to rounding). ``sample`` is Best and Fisher's rejection method, as PyTorch's,
run in float64 on the CPU backend (PyTorch also samples in double: single precision hangs for small
concentrations) and moved back to the parameters' device and dtype; its draws are vkml's generator's.
"""

from __future__ import annotations

import math

import vkml as _vk

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [
    0.39894228,
    0.1328592e-1,
    0.225319e-2,
    -0.157565e-2,
    0.916281e-2,
    -0.2057706e-1,
    0.2635537e-1,
    -0.1647633e-1,
    0.392377e-2,
]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_COEF_LARGE = [
    0.39894228,
    -0.3988024e-1,
    -0.362018e-2,
    0.163801e-2,
    -0.1031555e-1,
    0.2282967e-1,
    -0.2895312e-1,
    0.1787654e-1,
    -0.420059e-2,
]
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y, coef):
    coef = list(coef)
    result = coef.pop()
    while coef:
        result = coef.pop() + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """``log(I_order(x))`` for ``x > 0`` and order 0 or 1 (Abramowitz and Stegun's fits, as PyTorch's)."""
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return _vk.where(x < 3.75, small, large)


def _rejection_sample(loc, concentration, proposal_r, x):
    done = _vk.zeros(x.shape, dtype=_vk.bool, device=loc.device)
    while not done.all():
        u1, u2, u3 = _vk.rand((3,) + tuple(x.shape), dtype=loc.dtype, device=loc.device).unbind()
        z = _vk.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        if accept.any():
            # realized each round: every round then replays one plan instead of a deeper graph
            x = _vk.where(accept, (u3 - 0.5).sign() * f.acos(), x).realize()
            done = (done | accept).realize()
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The circular von Mises distribution: ``loc`` and values are angles in radians (any real, modulo 2 pi).

    >>> import vkml
    >>> from vkml.distributions import VonMises
    >>> round(VonMises(vkml.tensor(0.0), vkml.tensor(1.0)).log_prob(vkml.tensor(0.0)).item(), 4)
    -1.1704
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, _vk.Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * _vk.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _loc(self):
        return self.loc.detach().to("cpu", _vk.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.detach().to("cpu", _vk.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa**2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho**2) / (2 * rho)
        taylor = 1 / kappa + kappa  # second order, around 0, for small kappa
        return _vk.where(kappa < 1e-5, taylor, proposal_r)

    def sample(self, sample_shape=()):
        """Best and Fisher, "Efficient simulation of the von Mises distribution" (1979), in float64."""
        with _vk.no_grad():
            shape = self._extended_shape(sample_shape)
            x = _vk.zeros(shape, dtype=_vk.float64, device="cpu")
            drawn = _rejection_sample(self._loc, self._concentration, self._proposal_r, x)
            return drawn.to(self.loc.device, self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        try:
            return super().expand(batch_shape)
        except NotImplementedError:
            validate_args = self.__dict__.get("_validate_args")
            loc = self.loc.expand(batch_shape)
            concentration = self.concentration.expand(batch_shape)
            return type(self)(loc, concentration, validate_args=validate_args)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance."""
        log_ratio = _log_modified_bessel_fn(self.concentration, order=1) - _log_modified_bessel_fn(
            self.concentration, order=0
        )
        return 1 - log_ratio.exp()
