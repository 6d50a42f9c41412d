"""Utilities with ``torch.utils``'s names: ``vkml.utils.data`` (datasets, samplers, ``DataLoader``);
``vkml.utils.progress`` (progress bars, tqdm when installed); ``vkml.utils.checkpoint``
(activation checkpointing's API)."""

from . import checkpoint, data, progress

__all__ = ["checkpoint", "data", "progress"]
