"""``torch.nn.modules.transformer``."""

from ._export import export

export(
    globals(),
    [
        "TransformerEncoder",
        "TransformerDecoder",
        "TransformerEncoderLayer",
        "TransformerDecoderLayer",
        "Transformer",
    ],
)
