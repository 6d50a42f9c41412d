"""``torch.optim.nadam``: where PyTorch defines ``NAdam`` (vkml defines it in ``vkml.optim.adam_variants``)."""

from .adam_variants import NAdam

__all__ = ["NAdam"]
