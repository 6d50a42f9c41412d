"""``torch.nn.modules.conv``."""

from ._export import export

export(
    globals(),
    ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"],
    {"_ConvNd": "vkml.nn.conv", "_ConvTransposeNd": "vkml.nn.spatial"},
)
