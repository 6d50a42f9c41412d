"""``torch.nn.modules.module``."""

from ._export import export

export(globals(), ["Module"])
