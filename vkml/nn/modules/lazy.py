"""``torch.nn.modules.lazy``."""

from ..lazy import LazyModuleMixin  # noqa: F401
