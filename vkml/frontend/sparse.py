"""``vkml.sparse``: PyTorch's ``torch.sparse`` functions vkml has, for sparse COO tensors
(vkml/frontend/sparse_coo.py; docs/sparse.md).
"""

from __future__ import annotations

import sys

from .sparse_coo import LEGACY_CONSTRUCTORS, addmm
from .sparse_coo import sparse_log_softmax as log_softmax
from .sparse_coo import sparse_mm as mm
from .sparse_coo import sparse_softmax as softmax
from .sparse_coo import sparse_sum as sum  # noqa: A004

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax"]

# torch.sparse.FloatTensor(indices, values, size) and the other deprecated constructors (pygcn uses them)
globals().update(LEGACY_CONSTRUCTORS)


def __getattr__(name: str):
    # torch.sparse.torch is torch itself (the module imports it): capsule-network code writes
    # ``torch.sparse.torch.eye(n).index_select(0, labels)`` for its one-hot targets
    if name == "torch":
        return sys.modules["vkml"]
    raise AttributeError(f"module 'vkml.sparse' has no attribute {name!r}")
