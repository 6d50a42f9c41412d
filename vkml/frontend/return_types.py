"""The named tuples PyTorch's ``torch.return_types`` gives back: ``vkml.max(x, 1).values``.

Each is a ``namedtuple`` with PyTorch's type name and field names, so both ``.values`` /
``.indices`` and tuple unpacking (``values, indices = x.max(1)``) work as with PyTorch.
"""

from __future__ import annotations

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001  (PyTorch's name: torch.return_types.max)
min = namedtuple("min", ["values", "indices"])  # noqa: A001
aminmax = namedtuple("aminmax", ["min", "max"])
cummax = namedtuple("cummax", ["values", "indices"])
cummin = namedtuple("cummin", ["values", "indices"])
kthvalue = namedtuple("kthvalue", ["values", "indices"])
median = namedtuple("median", ["values", "indices"])
nanmedian = namedtuple("nanmedian", ["values", "indices"])
mode = namedtuple("mode", ["values", "indices"])
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])

# torch.linalg's and the legacy linear-algebra names' (vkml/frontend/dense_linalg.py)
linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"])
linalg_slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
slogdet = namedtuple("slogdet", ["sign", "logabsdet"])
qr = namedtuple("qr", ["Q", "R"])
svd = namedtuple("svd", ["U", "S", "V"])
triangular_solve = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"])
lu_unpack = namedtuple("lu_unpack", ["P", "L", "U"])
lu_with_info = namedtuple("_lu_with_info", ["LU", "pivots", "info"])
geqrf = namedtuple("geqrf", ["a", "tau"])
frexp = namedtuple("frexp", ["mantissa", "exponent"])
histogram = namedtuple("histogram", ["hist", "bin_edges"])
_LINALG = [
    "frexp",
    "histogram",
    "linalg_inv_ex",
    "linalg_cholesky_ex",
    "linalg_solve_ex",
    "linalg_slogdet",
    "linalg_qr",
    "linalg_eigh",
]
_LINALG += ["linalg_svd", "linalg_lstsq", "slogdet", "qr", "svd", "triangular_solve"]

__all__ = ["max", "min", "aminmax", "cummax", "cummin", "kthvalue", "median", "nanmedian", "mode", "sort", "topk"]
__all__ += _LINALG
