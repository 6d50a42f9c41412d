"""``ExponentialFamily``: the base PyTorch gives its exponential-family distributions."""

from __future__ import annotations

import vkml as _vk

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions of the form p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)): a family gives its natural
    parameters θ (``_natural_params``), its log normalizer F (``_log_normalizer``) and the expected
    carrier measure E[k(x)] (``_mean_carrier_measure``). The families' own ``entropy`` is in closed form;
    this class's (PyTorch's Bregman-divergence route, through autograd) is what ``kl_divergence`` of two
    laws of one family and ``ExponentialFamily.entropy(d)`` use.

    >>> import vkml
    >>> from vkml.distributions import ExponentialFamily, Normal
    >>> round(ExponentialFamily.entropy(Normal(0.0, 1.0)).item(), 4)
    1.4189
    """

    @property
    def _natural_params(self) -> tuple:
        """The natural parameters θ, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normalizer F(θ), of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(x)], the carrier measure's expectation."""
        raise NotImplementedError

    def entropy(self):
        """H = F(θ) - <θ, ∇F(θ)> - E[k(x)], with ∇F by autograd (PyTorch's)."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = _vk.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for nparam, gradient in zip(nparams, gradients):
            result -= (nparam * gradient).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
