"""``torch.nn.modules.distance``."""

from ._export import export

export(globals(), ["PairwiseDistance", "CosineSimilarity"])
