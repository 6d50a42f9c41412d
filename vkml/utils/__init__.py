"""Utilities with ``torch.utils``'s names: ``vkml.utils.data`` (datasets, samplers, ``DataLoader``)."""

from . import data

__all__ = ["data"]
