"""``vkml.autograd.function``: the module ``torch.autograd.function`` is, for the names users import from it.

``Function`` and ``FunctionCtx`` are vkml/frontend/autograd_api.py's; ``once_differentiable`` marks a
``backward`` that is not itself differentiable: it runs with recording off, and where its result
would be differentiated again (a ``create_graph=True`` backward), the second backward raises
PyTorch's RuntimeError instead of silently giving a wrong (zero) second derivative.

>>> import vkml
>>> class Square(vkml.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     @once_differentiable
...     def backward(ctx, g):
...         (x,) = ctx.saved_tensors
...         return 2 * x * g
>>> x = vkml.tensor([3.0], requires_grad=True)
>>> vkml.autograd.grad(Square.apply(x).sum(), x)[0].tolist()
[6.0]
"""

from __future__ import annotations

import functools

from ..tensor import Tensor
from .autograd import is_grad_enabled, no_grad
from .autograd_api import Function, FunctionCtx

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]

_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


class InplaceFunction(Function):
    """A ``Function`` told whether it may write its input in place (``self.inplace``), as PyTorch's."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class _DelayedError(Function):
    """Passes its input through; differentiating it raises ``message``."""

    @staticmethod
    def forward(ctx, value, message):
        ctx.message = message
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(ctx.message)


def once_differentiable(fn):
    """Decorate a ``Function``'s ``backward`` that cannot be differentiated: it runs under ``no_grad``,
    and a ``create_graph=True`` backward that would differentiate its result raises at that point."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled() or not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        wrapped = tuple(
            _DelayedError.apply(o.detach().requires_grad_(o.dtype.is_float), _TWICE)
            if isinstance(o, Tensor) and o.dtype.is_float
            else o
            for o in ((outputs,) if single else outputs)
        )
        return wrapped[0] if single else wrapped

    return wrapper
