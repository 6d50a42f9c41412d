"""Utilities with ``torch.utils``'s names: ``vkml.utils.data`` (datasets, samplers, ``DataLoader``);
``vkml.utils.progress`` (progress bars, tqdm when installed)."""

from . import data, progress

__all__ = ["data", "progress"]
