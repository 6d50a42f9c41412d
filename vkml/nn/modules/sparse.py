"""``torch.nn.modules.sparse``."""

from ._export import export

export(globals(), ["Embedding", "EmbeddingBag"])
