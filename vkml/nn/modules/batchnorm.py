"""``torch.nn.modules.batchnorm``."""

from ._export import export

export(
    globals(),
    [
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "SyncBatchNorm",
        "LazyBatchNorm1d",
        "LazyBatchNorm2d",
        "LazyBatchNorm3d",
    ],
    {"_NormBase": "vkml.nn.normalization", "_BatchNorm": "vkml.nn.normalization"},
)
