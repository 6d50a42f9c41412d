"""Utilities with ``torch.utils``'s names: ``vkml.utils.data`` (datasets, samplers, ``DataLoader``);
``vkml.utils.progress`` (progress bars, tqdm when installed); ``vkml.utils.checkpoint``
(activation checkpointing's API); ``vkml.utils.hooks`` (``RemovableHandle``); ``vkml.utils.model_zoo``
(``load_url``, vkml/hub.py's download); ``vkml.utils._pytree`` (pytrees: ``tree_flatten``, ``tree_map``, ...); ``vkml.utils.benchmark`` (``Timer``, ``Measurement``, ``Compare``);
and, imported by name as PyTorch's, ``vkml.utils.tensorboard`` (``SummaryWriter``; needs the optional
``tensorboard`` package)."""

from . import _pytree as _pytree  # torch.utils._pytree is bound by import torch too
from . import benchmark, checkpoint, data, hooks, model_zoo, progress

__all__ = ["benchmark", "checkpoint", "data", "hooks", "model_zoo", "progress"]
