"""``torch.optim.rprop``: where PyTorch defines ``Rprop`` (vkml defines it in ``vkml.optim.asgd``)."""

from .asgd import Rprop

__all__ = ["Rprop"]
