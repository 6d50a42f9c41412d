"""Every operator, defined once: importing this package fills the registry."""

from . import elementwise, elementwise_more, float64, reduce, special, transcendental, uint16  # noqa: F401
from .registry import REGISTRY, OpDef, get

__all__ = ["REGISTRY", "OpDef", "get"]
