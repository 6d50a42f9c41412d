"""``torch.nn.modules.adaptive``."""

from ._export import export

export(globals(), ["AdaptiveLogSoftmaxWithLoss"])
