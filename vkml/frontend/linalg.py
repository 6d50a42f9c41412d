"""``vkml.linalg``: PyTorch's ``torch.linalg`` norms (vkml/frontend/statistics.py) and cross (combining.py)."""

from __future__ import annotations

from .combining import linalg_cross as cross
from .statistics import linalg_norm as norm
from .statistics import matrix_norm, vector_norm

__all__ = ["norm", "vector_norm", "matrix_norm", "cross"]
