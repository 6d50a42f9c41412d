"""The named tuples PyTorch's ``torch.return_types`` gives back: ``vkml.max(x, 1).values``.

Each is a ``namedtuple`` with PyTorch's type name and field names, so both ``.values`` /
``.indices`` and tuple unpacking (``values, indices = x.max(1)``) work as with PyTorch.
"""

from __future__ import annotations

from collections import namedtuple


def structseq(name: str, fields: list[str]) -> type:
    """A named tuple that prints as PyTorch's structseq does: ``vkml.return_types.max(\\nvalues=...,\\nindices=...)``
    (``print(torch.max(x, 1))`` in tutorials)."""

    def __repr__(self) -> str:
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(self._fields, self, strict=True))
        return f"vkml.return_types.{name}(\n{body})"

    return type(name, (namedtuple(name, fields),), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})


max = structseq("max", ["values", "indices"])  # noqa: A001  (PyTorch's name: torch.return_types.max)
min = structseq("min", ["values", "indices"])  # noqa: A001
aminmax = structseq("aminmax", ["min", "max"])
cummax = structseq("cummax", ["values", "indices"])
cummin = structseq("cummin", ["values", "indices"])
kthvalue = structseq("kthvalue", ["values", "indices"])
median = structseq("median", ["values", "indices"])
nanmedian = structseq("nanmedian", ["values", "indices"])
mode = structseq("mode", ["values", "indices"])
sort = structseq("sort", ["values", "indices"])
topk = structseq("topk", ["values", "indices"])

# torch.linalg's and the legacy linear-algebra names' (vkml/frontend/dense_linalg.py)
linalg_inv_ex = structseq("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = structseq("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex = structseq("linalg_solve_ex", ["result", "info"])
linalg_slogdet = structseq("linalg_slogdet", ["sign", "logabsdet"])
linalg_qr = structseq("linalg_qr", ["Q", "R"])
linalg_eigh = structseq("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = structseq("linalg_svd", ["U", "S", "Vh"])
linalg_lstsq = structseq("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
slogdet = structseq("slogdet", ["sign", "logabsdet"])
qr = structseq("qr", ["Q", "R"])
svd = structseq("svd", ["U", "S", "V"])
triangular_solve = structseq("triangular_solve", ["solution", "cloned_coefficient"])
linalg_lu_factor = structseq("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = structseq("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = structseq("linalg_lu", ["P", "L", "U"])
lu_unpack = structseq("lu_unpack", ["P", "L", "U"])
lu_with_info = structseq("_lu_with_info", ["LU", "pivots", "info"])
geqrf = structseq("geqrf", ["a", "tau"])
frexp = structseq("frexp", ["mantissa", "exponent"])
histogram = structseq("histogram", ["hist", "bin_edges"])
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
