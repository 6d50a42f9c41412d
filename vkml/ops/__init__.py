"""Every operator, defined once: importing this package fills the registry."""

from . import elementwise, elementwise_more, float64, reduce, special, transcendental, uint16  # noqa: F401
from .registry import REGISTRY, OpDef, get

# The ops defined here, in vkml's own sources: a custom op (vkml.dsl) registered later is not one of them,
# and its body may change between processes without any vkml source changing (vkml/schedule/template_disk.py).
BUILTIN: frozenset[OpDef] = frozenset(REGISTRY.values())

__all__ = ["BUILTIN", "REGISTRY", "OpDef", "get"]
