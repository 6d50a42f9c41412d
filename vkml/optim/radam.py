"""``torch.optim.radam``: where PyTorch defines ``RAdam`` (vkml defines it in ``vkml.optim.adam_variants``)."""

from .adam_variants import RAdam

__all__ = ["RAdam"]
