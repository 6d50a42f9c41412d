"""Active-lane masks, shared by both interpreters: which invocations of a chunk run a block."""

from __future__ import annotations

import numpy as np

Mask = np.ndarray | None  # None: every invocation of the chunk is active


def narrow(mask: Mask, cond: np.ndarray, lanes: int) -> Mask:
    """The lanes of ``mask`` where ``cond`` holds; ``None`` if that is every lane."""
    if cond.shape[0] == 1:  # uniform condition
        return mask if cond[0] else np.zeros(lanes, dtype=bool)
    active = cond if mask is None else mask & cond
    return None if active.all() else active


def none_active(mask: Mask) -> bool:
    return mask is not None and not mask.any()
