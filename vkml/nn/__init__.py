"""Neural-network helpers with PyTorch's names: ``vkml.nn.functional`` (``gelu``, ``softplus``, ...)."""

from . import functional

__all__ = ["functional"]
