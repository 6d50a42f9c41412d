"""``Tensor.fill_diagonal_``: PyTorch's in-place fill of a tensor's main diagonal (SimCLR's and
other contrastive losses mask the self-similarities of a square matrix with it).

The diagonal is the positions whose indices are all equal, ``min(rows, columns)`` of them in 2-D;
a tensor of more dimensions must have them all of one length. ``wrap=True`` on a matrix more than
one row taller than wide starts the diagonal again below it, PyTorch's rule: the positions
``k * (columns + 1)`` of the row-major order. The fill is a ``masked_fill_`` with a constant mask,
so the value converts to the tensor's dtype as ``fill_``'s does and the gradient is zero at the
filled positions.

>>> import vkml
>>> vkml.zeros(2, 3).fill_diagonal_(1.0).tolist()
[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from ..ops.cast import host_round
from .creation import tensor
from .exports import Export

EXPORTS = (Export("fill_diagonal_", function=False, method=True),)


def fill_diagonal_(input, fill_value, wrap: bool = False):
    """Fill the main diagonal of ``input`` with ``fill_value`` in place and return ``input``, as
    ``torch.Tensor.fill_diagonal_`` (``wrap``: see the module text).

    >>> import vkml
    >>> vkml.zeros(5, 2).fill_diagonal_(1, wrap=True).tolist()
    [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    """
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = shape[0], shape[1]
    if len(shape) > 2 and any(size != height for size in shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(shape, dtype=bool)
    diagonal = np.arange(min(height, width))
    mask[(diagonal,) * len(shape)] = True
    if wrap and len(shape) == 2 and height > width + 1:
        mask.reshape(-1)[:: width + 1] = True
    if input.dtype.is_float and type(fill_value) in (int, float) and -(1 << 63) <= fill_value < 1 << 64:
        fill_value = host_round(float(fill_value), input.dtype)  # PyTorch rounds, unchecked (1e10 is inf in float16)
    return input.masked_fill_(tensor(mask, device=input.device), fill_value)
