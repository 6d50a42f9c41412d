"""PyTorch names the peer sweep found missing (tools/api_coverage.py lists them): ``nonzero_static``,
``Tensor.cov``/``Tensor.corrcoef`` (the functions as methods) and the ``Tensor.is_<backend>`` queries of
backends vkml never runs on (always False, as on a CPU or CUDA tensor in PyTorch)."""

from __future__ import annotations

import numpy as np

from . import indexing
from . import operators as F
from .exports import Export
from .torch_names import corrcoef, cov


def nonzero_static(input, *, size: int, fill_value: int = -1):
    """``nonzero(input)`` with exactly ``size`` rows: the first ``size`` indices, padded with rows of
    ``fill_value`` where there are fewer (int64, as ``torch.nonzero_static``). The input is read back,
    as ``nonzero``'s.

    >>> nonzero_static(vkml.tensor([0, 1, 0, 2]), size=3).tolist()  # doctest: +SKIP
    [[1], [3], [-1]]
    """
    if not isinstance(input, F._tensor.Tensor):
        raise TypeError(f"nonzero_static(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    for name, value in (("size", size), ("fill_value", fill_value)):
        if type(value) is not int:
            raise TypeError(f"nonzero_static(): argument '{name}' must be int, not {type(value).__name__}")
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = indexing.nonzero(input).numpy()[:size]
    rows = np.full((size, input.ndim), fill_value, np.int64)
    rows[: found.shape[0]] = found
    return F._from_numpy(rows, input.device)


def _not_on(backend: str):
    def query(self) -> bool:
        return False

    query.__doc__ = f"False: vkml has no {backend} device (PyTorch's ``Tensor.is_{backend}``)."
    return property(query)


_BACKENDS = ("mps", "xpu", "ipu", "maia", "mtia", "xla")

EXPORTS = (
    Export("nonzero_static", method=True),
    Export("cov", function=False, method=cov),
    Export("corrcoef", function=False, method=corrcoef),
    *(Export(f"is_{b}", function=False, method=_not_on(b)) for b in _BACKENDS),
)
