"""``torch.optim.adamax``: where PyTorch defines ``Adamax`` (vkml defines it in ``vkml.optim.adam_variants``)."""

from .adam_variants import Adamax

__all__ = ["Adamax"]
