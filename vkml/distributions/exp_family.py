"""``ExponentialFamily``: the base PyTorch gives its exponential-family distributions."""

from __future__ import annotations

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions of the exponential family. vkml computes their entropies in closed form
    (PyTorch's Bregman-divergence route is not used), so only the class itself is provided."""
