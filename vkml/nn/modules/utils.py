"""``torch.nn.modules.utils``: ``_single``, ``_pair``, ``_triple``, ``_quadruple`` and ``_ntuple``.

>>> _pair(3), _pair((1, 2))
((3, 3), (1, 2))
"""

from __future__ import annotations

import collections.abc
from itertools import repeat


def _ntuple(n: int, name: str = "parse"):
    """A parser giving an iterable as a tuple and repeating anything else ``n`` times, as PyTorch's."""

    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
