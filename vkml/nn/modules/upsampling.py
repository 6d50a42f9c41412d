"""``torch.nn.modules.upsampling``."""

from ._export import export

export(globals(), ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"])
