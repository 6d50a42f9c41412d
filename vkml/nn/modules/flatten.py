"""``torch.nn.modules.flatten``."""

from ._export import export

export(globals(), ["Flatten", "Unflatten"])
