"""``torch.nn.modules.pooling``."""

from ._export import export

export(
    globals(),
    [
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "MaxUnpool1d",
        "MaxUnpool2d",
        "MaxUnpool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "FractionalMaxPool2d",
        "FractionalMaxPool3d",
        "LPPool1d",
        "LPPool2d",
        "LPPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
    ],
    {
        "_MaxPoolNd": "vkml.nn.pooling",
        "_AvgPoolNd": "vkml.nn.pooling",
        "_AdaptiveAvgPoolNd": "vkml.nn.pooling",
        "_AdaptiveMaxPoolNd": "vkml.nn.pooling",
    },
)
