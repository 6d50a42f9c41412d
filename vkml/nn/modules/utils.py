"""``torch.nn.modules.utils``: ``_single``, ``_pair``, ``_triple``, ``_quadruple``, ``_ntuple`` and
``consume_prefix_in_state_dict_if_present``.

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


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that have it, in place, and from the keys of its
    ``_metadata`` (``"module."`` of a checkpoint saved from a DistributedDataParallel wrapper), as PyTorch's.

    >>> state = {"module.weight": 1, "bias": 2}
    >>> consume_prefix_in_state_dict_if_present(state, "module."); sorted(state)
    ['bias', 'weight']
    """
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix) :]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata):
        # "" is the wrapper's own entry, kept; "module" (the prefix without its dot) is the wrapped model's
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix) :]] = metadata.pop(key)
