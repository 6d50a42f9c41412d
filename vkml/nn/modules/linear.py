"""``torch.nn.modules.linear``."""

from ._export import export

export(
    globals(),
    ["Identity", "Linear", "Bilinear", "LazyLinear"],
    {"NonDynamicallyQuantizableLinear": "vkml.nn.attention"},
)
