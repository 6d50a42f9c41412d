"""``torch.nn.modules.normalization``."""

from ._export import export

export(globals(), ["LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm"])
