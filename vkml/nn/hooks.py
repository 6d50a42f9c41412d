"""The handle ``Module.register_forward_hook`` and ``register_forward_pre_hook`` return (one class
for modules and tensors: vkml/frontend/hooks.py)."""

from __future__ import annotations

from ..frontend.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
