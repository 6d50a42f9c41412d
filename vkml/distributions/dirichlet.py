"""``Dirichlet(concentration)``, as ``torch.distributions.Dirichlet``."""

from __future__ import annotations

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


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex, with ``concentration`` (last dim: the categories).

    ``rsample`` raises NotImplementedError when the concentration requires a gradient (PyTorch's
    implicit reparameterisation is not implemented); ``sample`` works.

    >>> import vkml
    >>> from vkml.distributions import Dirichlet
    >>> Dirichlet(vkml.tensor([1.0, 3.0])).mean.tolist()
    [0.25, 0.75]
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

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
        if self.concentration.requires_grad and _vk.is_grad_enabled():
            raise NotImplementedError(
                f"{type(self).__name__}.rsample: the gradient with respect to the concentration "
                "(PyTorch's implicit reparameterisation) is not implemented in vkml; use sample(), "
                "or detach the concentration"
            )
        shape = tuple(self._extended_shape(sample_shape))
        return _sample_dirichlet(self.concentration.expand(shape))

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
