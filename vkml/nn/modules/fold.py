"""``torch.nn.modules.fold``."""

from ._export import export

export(globals(), ["Fold", "Unfold"])
