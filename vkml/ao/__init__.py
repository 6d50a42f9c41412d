"""``torch.ao``'s names: ``vkml.ao.quantization`` (vkml/ao/quantization.py), which says that vkml cannot
quantize."""

from . import quantization

__all__ = ["quantization"]
