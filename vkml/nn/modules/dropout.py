"""``torch.nn.modules.dropout``."""

from ._export import export

export(
    globals(),
    ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"],
    {"_DropoutNd": "vkml.nn.layers_more"},
)
