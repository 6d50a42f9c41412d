"""``torch.nn.modules.container``."""

from ._export import export

export(globals(), ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"])
