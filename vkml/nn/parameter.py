"""``torch.nn.parameter``: the module older repositories import ``Parameter`` from, and the lazy modules'
placeholders ``UninitializedParameter`` / ``UninitializedBuffer`` with ``is_lazy``.

>>> from vkml.nn.parameter import Parameter, is_lazy
>>> import vkml
>>> Parameter(vkml.zeros(2)).requires_grad, is_lazy(vkml.nn.LazyLinear(3).weight)
(True, True)
"""

from __future__ import annotations

from .module import Buffer, Parameter, UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "is_lazy"]
