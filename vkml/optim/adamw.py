"""``torch.optim.adamw``: where PyTorch defines ``AdamW`` (vkml defines it in ``vkml.optim.adam``)."""

from .adam import AdamW

__all__ = ["AdamW"]
