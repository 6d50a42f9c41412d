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

__all__ = ["max", "min", "aminmax", "cummax", "cummin", "kthvalue", "median", "nanmedian", "mode", "sort", "topk"]
