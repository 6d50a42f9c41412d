"""``vkml.linalg``: PyTorch's ``torch.linalg`` norms (the functions live in vkml/frontend/statistics.py)."""

from __future__ import annotations

from .statistics import linalg_norm as norm
from .statistics import matrix_norm, vector_norm

__all__ = ["norm", "vector_norm", "matrix_norm"]
