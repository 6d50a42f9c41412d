"""``torch.nn.modules.module``."""

from ._export import export

export(globals(), ["Module"], {"_IncompatibleKeys": "vkml.nn.loading"})
