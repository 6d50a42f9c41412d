"""``vkml.linalg``: PyTorch's ``torch.linalg``. The norms are in vkml/frontend/statistics.py, cross in
combining.py, the factorizations and solves (computed on the host) in dense_linalg.py, the matmul
compositions in linalg_ops.py.
"""

from __future__ import annotations

from .combining import linalg_cross as cross
from .dense_linalg import LINALG as _DENSE
from .linalg_ops import LINALG as _OPS
from .statistics import linalg_norm as norm
from .statistics import matrix_norm, vector_norm

globals().update(_DENSE)
globals().update(_OPS)

__all__ = ["norm", "vector_norm", "matrix_norm", "cross", *_DENSE, *_OPS]
