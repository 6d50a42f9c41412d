"""``torch.nn.utils.convert_conv2d_weight_memory_format`` and its 3-d twin: give every (transposed)
convolution's weight in a module tree a memory format, as PyTorch does before channels-last inference.

The weight keeps its Parameter object (its ``.data`` is replaced), so optimizers and hooks still hold it;
the layout changes strides only, never values.
"""

from __future__ import annotations

from ..conv import Conv2d
from ..spatial import Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """``module`` with the weight of every Conv2d and ConvTranspose2d in it in ``memory_format``."""
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """``module`` with the weight of every Conv3d and ConvTranspose3d in it in ``memory_format``."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
