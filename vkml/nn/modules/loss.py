"""``torch.nn.modules.loss``."""

from ._export import export

export(
    globals(),
    [
        "L1Loss",
        "NLLLoss",
        "PoissonNLLLoss",
        "GaussianNLLLoss",
        "KLDivLoss",
        "MSELoss",
        "BCELoss",
        "BCEWithLogitsLoss",
        "HingeEmbeddingLoss",
        "MultiLabelMarginLoss",
        "SmoothL1Loss",
        "HuberLoss",
        "SoftMarginLoss",
        "CrossEntropyLoss",
        "MultiLabelSoftMarginLoss",
        "CosineEmbeddingLoss",
        "MarginRankingLoss",
        "MultiMarginLoss",
        "TripletMarginLoss",
        "TripletMarginWithDistanceLoss",
        "CTCLoss",
    ],
    {"_Loss": "vkml.nn.losses", "_WeightedLoss": "vkml.nn.losses"},
)
