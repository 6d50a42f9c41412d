"""``torch.nn.parameter``: the module older repositories import ``Parameter`` from.

>>> from vkml.nn.parameter import Parameter
>>> import vkml
>>> Parameter(vkml.zeros(2)).requires_grad
True

PyTorch's ``UninitializedParameter`` and ``UninitializedBuffer`` are absent: vkml's lazy modules
(vkml/nn/lazy.py) hold empty placeholders until their first call instead.
"""

from __future__ import annotations

from .module import Buffer, Parameter

__all__ = ["Buffer", "Parameter"]
