"""``vkml.autograd.graph``: hooks on the tensors autograd keeps for backward, as ``torch.autograd.graph``.

Inside ``saved_tensors_hooks(pack, unpack)`` every tensor an op keeps for its gradient is handed to
``pack`` when the op runs, and the gradient rule computes with ``unpack(packed)`` at backward:
``save_on_cpu`` keeps them on the host, and programs use the pair to offload, compress or log
activations. vkml keeps every tensor operand of a recorded op (PyTorch keeps those its formula
reads), so ``pack`` may run more often than under PyTorch; the gradients are the same
(docs/autograd.md).

>>> import vkml
>>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
>>> with vkml.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
...     y = (x * x).sum()
>>> y.backward(); x.grad.tolist()
[2.0, 4.0]
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from .autograd import AccumulateGrad, Context, GraphNode, _mode

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]


class Node(abc.ABC):  # noqa: B024 - PyTorch's Node is an abstract base for isinstance checks
    """``torch.autograd.graph.Node``: what ``grad_fn`` and the entries of ``next_functions`` are, for
    ``isinstance`` checks (``name()``, ``next_functions``, ``metadata``, ``register_hook``,
    ``register_prehook`` on vkml's nodes).

    >>> import vkml
    >>> y = vkml.ones(2, requires_grad=True).exp()
    >>> isinstance(y.grad_fn, vkml.autograd.graph.Node)
    True
    """


for _node_class in (Context, AccumulateGrad, GraphNode):
    Node.register(_node_class)


class saved_tensors_hooks:  # noqa: N801 - torch.autograd.graph's name
    """Within the block, ``pack_hook(tensor)`` runs on each tensor a recorded op keeps for its gradient
    and ``unpack_hook(packed)`` gives the rule its tensor back at backward. Blocks nest: the
    innermost's hooks apply. Hooks are per thread, as PyTorch's.

    >>> import vkml
    >>> packed = []
    >>> x = vkml.ones(2, requires_grad=True)
    >>> with vkml.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
    ...     y = x.exp().sum()
    >>> len(packed) > 0
    True
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _mode.disabled_hooks is not None:
            raise RuntimeError(_mode.disabled_hooks)
        self._previous = _mode.saved_hooks
        _mode.saved_hooks = (self.pack_hook, self.unpack_hook)

    def __exit__(self, *exc) -> None:
        _mode.saved_hooks = self._previous


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch.autograd.graph's name
    """Keep the tensors saved for backward on the CPU and copy each back to its device when the
    gradient needs it (PyTorch's trade of transfers for device memory). ``pin_memory`` is accepted:
    vkml stages host memory for its devices itself.

    >>> import vkml
    >>> x = vkml.ones(2, requires_grad=True)
    >>> with vkml.autograd.graph.save_on_cpu():
    ...     y = (x * 3).sum()
    >>> y.backward(); x.grad.tolist()
    [3.0, 3.0]
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Within the block, entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``, as PyTorch's.

    >>> import vkml
    >>> with vkml.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
    ...     pass
    """
    previous = _mode.disabled_hooks
    _mode.disabled_hooks = error_message
    try:
        yield
    finally:
        _mode.disabled_hooks = previous
