"""``vkml.Size``: a shape, PyTorch's ``torch.Size`` (a tuple of ints with ``numel()``)."""

from __future__ import annotations

import math

import numpy as np


class Size(tuple):
    """A shape: a tuple of ints, with ``numel()`` (PyTorch's ``torch.Size``).

    ``Tensor.shape`` and ``Tensor.size()`` return one, as PyTorch's do; it equals (and hashes as)
    the plain tuple of the same ints.

    >>> import vkml
    >>> s = vkml.Size([2, 3])
    >>> s, s.numel(), s == (2, 3)
    (vkml.Size([2, 3]), 6, True)
    """

    def __new__(cls, sizes=()):
        values = tuple(sizes)
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in values):
            bad = next(v for v in values if isinstance(v, bool) or not isinstance(v, (int, np.integer)))
            raise TypeError(
                f"Size() takes an iterable of 'int' (item {values.index(bad)} is '{bad.__class__.__name__}')"
            )
        return super().__new__(cls, (int(v) for v in values))

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"vkml.Size({list(self)})"

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return as_size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return as_size(tuple.__add__(self, other))

    def __radd__(self, other):
        return as_size(tuple(other) + tuple(self))

    def __mul__(self, times):
        return as_size(tuple.__mul__(self, times))

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


def as_size(shape: tuple) -> Size:
    """``shape`` (a tuple of ints, not checked) as a ``Size``: the fast path of ``Tensor.shape``."""
    return tuple.__new__(Size, shape)
