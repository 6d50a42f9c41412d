"""``torch.nn.modules.channelshuffle``."""

from ._export import export

export(globals(), ["ChannelShuffle"])
