"""Utilities with ``torch.utils``'s names: ``vkml.utils.data`` (datasets, samplers, ``DataLoader``);
``vkml.utils.progress`` (progress bars, tqdm when installed); ``vkml.utils.checkpoint``
(activation checkpointing's API); ``vkml.utils.hooks`` (``RemovableHandle``)."""

from . import checkpoint, data, hooks, progress

__all__ = ["checkpoint", "data", "hooks", "progress"]
