"""``torch.utils.hooks``: ``RemovableHandle``, the handle every ``register_*_hook`` returns."""

from __future__ import annotations

from ..frontend.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
