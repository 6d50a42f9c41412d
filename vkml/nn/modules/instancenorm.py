"""``torch.nn.modules.instancenorm``."""

from ._export import export

export(globals(), ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"], {"_InstanceNorm": "vkml.nn.normalization"})
