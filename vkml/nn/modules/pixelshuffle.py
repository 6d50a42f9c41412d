"""``torch.nn.modules.pixelshuffle``."""

from ._export import export

export(globals(), ["PixelShuffle", "PixelUnshuffle"])
