"""``Gamma(concentration, rate)`` and ``Chi2(df)``, as ``torch.distributions.Gamma`` / ``Chi2``.

Sampling: PyTorch's CPU sampler (Marsaglia and Tsang's rejection method with its squeeze,
concentrations below 1 boosted by U^(1/a)), element by element on the host from vkml's generator
(vkml/frontend/mt19937.py): after the same ``manual_seed``, PyTorch's samples. The concentrations
are read back to the host, as PyTorch's CPU kernel reads them.
"""

from __future__ import annotations

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


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    ``rsample`` differentiates with respect to ``rate``; with respect to ``concentration`` it
    raises NotImplementedError (PyTorch's implicit reparameterisation is not implemented).

    >>> from vkml.distributions import Gamma
    >>> Gamma(2.0, 4.0).mean.item()
    0.5
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

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
        if self.concentration.requires_grad and _vk.is_grad_enabled():
            raise NotImplementedError(
                f"{type(self).__name__}.rsample: the gradient with respect to the concentration "
                "(PyTorch's implicit reparameterisation) is not implemented in vkml; use sample(), "
                "or detach the concentration"
            )
        shape = tuple(self._extended_shape(sample_shape))
        return _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

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
