"""``HostScalar``: a 0-d tensor whose value the host also keeps as a Python number.

PyTorch's optimizers keep per-parameter counters as 0-d tensors (``state["step"]``, NAdam's
``mu_product``, ASGD's ``eta`` and ``mu``), and vkml's compute each step's constants (bias
corrections) on the host from them. A ``HostScalar`` is such a tensor that also remembers the number
it was last set to, so the host reads it without a realize; a write through the tensor API
(``state["step"].fill_(0)``) leaves the remembered number stale, and ``host_number`` then reads the
tensor's value. vkml.jit advances one on replay with ``+=`` of a number, which sets both.

>>> from vkml.frontend.host_scalar import HostScalar, host_number
>>> step = HostScalar(0)
>>> step += 1
>>> step.item(), host_number(step), step.dtype
(1.0, 1, vkml.float32)
"""

from __future__ import annotations

import numpy as np

from ..graph.node import Node
from ..ir import types as T
from ..ops.promotion import default_float
from ..tensor import Tensor
from . import operators as F
from .devices import device

# (number, dtype) -> the realized node holding it: tensors set to the same number share one
# (every parameter's ``step`` moves together), so a step makes one node, not one per parameter.
_NODES: dict[tuple, Node] = {}
_NODES_KEPT = 256


def _constant(number, dtype: T.DType) -> Node:
    key = (number, dtype)
    node = _NODES.get(key)
    if node is None:
        if len(_NODES) >= _NODES_KEPT:
            _NODES.clear()
        node = _NODES[key] = F._from_numpy(np.array(number, dtype.np), device("cpu"), dtype).node
    return node


def scalar_dtype() -> T.DType:
    """PyTorch's ``_get_scalar_dtype()``: float64 when that is the default float dtype, else float32."""
    return T.float64 if default_float() is T.float64 else T.float32


class HostScalar(Tensor):
    """A 0-d float tensor on the CPU device that also holds ``number`` on the host (module doc)."""

    # slots, not the instance dict: pickling and deepcopy carry a tensor's dict, and these are host-only
    __slots__ = ("_number", "_number_node")

    def __init__(self, number, dtype: T.DType | None = None):
        node = _constant(number, dtype or scalar_dtype())
        Tensor.__init__(self, node)
        self._number = number
        self._number_node = node

    def set_number(self, number) -> None:
        """Give the tensor the value ``number`` (a write, as PyTorch's in-place update of the counter)."""
        dtype = self._node.dtype
        found = _NODES.get((number, dtype))  # the usual case (every parameter's counter moves together)
        node = found if found is not None else _constant(number, dtype)
        if self._base is None:  # an owner: mutation.assign_node's write of the whole tensor, inline
            self._node = node
            self._vcount += 1
        else:
            self.node = node
        self._number = number
        self._number_node = node

    def __iadd__(self, other):
        kind = other.__class__
        if kind is int or kind is float:  # vkml.jit's replay advances every parameter's counter so each step
            current = self._base is None and self._node is self._number_node
            self.set_number((self._number if current else host_number(self)) + other)
            return self
        if isinstance(other, (int, float)) and not isinstance(other, bool):  # an int or float subclass
            self.set_number(host_number(self) + other)
            return self
        return Tensor.__iadd__(self, other)


def host_number(value):
    """The number a state entry holds: a ``HostScalar``'s remembered one while it is current, a
    tensor's value (read back), or ``value`` itself when it is a number."""
    if isinstance(value, HostScalar) and value._base is None and value._node is getattr(value, "_number_node", None):
        return value._number
    if hasattr(value, "item"):  # a tensor of any framework, a numpy scalar
        return value.item()
    return value
