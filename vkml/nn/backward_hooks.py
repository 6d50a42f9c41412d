"""Module backward hooks: ``register_full_backward_hook`` and ``register_full_backward_pre_hook``.

As in PyTorch, a call of a module with backward hooks passes its tensor inputs and its output
through identity functions: the output's gives the gradient with respect to the output
(``grad_output``, which pre-hooks may replace), the input's the gradient with respect to the
input (``grad_input``, which full hooks see and may replace). Where no input requires grad the
full hooks fire at the output, with ``grad_input`` all None and PyTorch's warning.

vkml runs a custom Function's backward once per output (vkml/frontend/autograd_api.py), so one
identity per input could not hand the hooks every input's gradient at once. Inputs that require
grad (of one dtype and device) therefore go in as one flat tensor, ``cat`` of them all, and the
module sees slices of it: that tensor's gradient arrives in one piece, which is split into each
input's. A returned tuple's tensors that require grad come out the same way (its other items have
None gradients; an output nothing used has a zero one, where PyTorch's pre-hook sees None). Inputs
or outputs of several dtypes raise NotImplementedError rather than fire the hooks with partial
gradients.
"""

from __future__ import annotations

import math
import warnings

from ..frontend import operators as functions
from ..frontend.autograd import is_grad_enabled
from ..frontend.autograd_api import Function
from ..tensor import Tensor

__all__ = ["with_backward_hooks"]


class _HookCall:
    """One forward call's hooks and the gradients they exchange."""

    def __init__(self, module, pre_hooks: list, hooks: list, inputs: int, tracked: list[int]):
        self.module, self.pre_hooks, self.hooks = module, pre_hooks, hooks
        self.inputs, self.tracked = inputs, tracked  # tracked: the positions of the inputs requiring grad
        self.outputs, self.out_positions = 1, [0]  # how many outputs, and which require grad
        self.grad_output: tuple = ()

    def on_output(self, grad):
        return self.on_outputs([grad])[0]

    def on_outputs(self, grads: list) -> list:
        """The gradients of the outputs that require grad after the pre-hooks (which may replace
        ``grad_output``); where no input requires grad, the full hooks fire here."""
        grad_output = [None] * self.outputs
        for position, grad in zip(self.out_positions, grads):
            grad_output[position] = grad
        self.grad_output = tuple(grad_output)
        for hook in self.pre_hooks:
            result = hook(self.module, self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != self.outputs:
                    raise RuntimeError(
                        f"Backward pre hook returned an invalid number of grad_output, got {len(result)}, but "
                        f"expected {self.outputs}"
                    )
                self.grad_output = result
        if not self.tracked and self.hooks:
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module outputs since no "
                "inputs require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.",
                stacklevel=2,
            )
            for hook in self.hooks:
                result = hook(self.module, (None,) * self.inputs, self.grad_output)
                if result is not None and not (isinstance(result, tuple) and all(r is None for r in result)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should always return None or "
                        "None for all gradients."
                    )
        return [self.grad_output[position] for position in self.out_positions]

    def on_input(self, grad):
        return self.on_inputs([grad])[0]

    def on_inputs(self, grads: list) -> list:
        """The tracked inputs' gradients after the full hooks (each may replace ``grad_input``)."""
        grad_input = [None] * self.inputs
        for position, grad in zip(self.tracked, grads):
            grad_input[position] = grad
        for hook in self.hooks:
            result = hook(self.module, tuple(grad_input), self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != self.inputs:
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got {len(result)}, but expected "
                        f"{self.inputs}"
                    )
                grad_input = list(result)
        return [grad_input[position] for position in self.tracked]


class BackwardHookFunction(Function):
    """The identity (under PyTorch's name, which its errors give), whose backward hands its gradient to
    ``call.on_input`` or ``call.on_output``."""

    @staticmethod
    def forward(ctx, x, call, side: str):
        ctx.hand_over = getattr(call, side)
        return x

    @staticmethod
    def backward(ctx, grad):
        return ctx.hand_over(grad), None, None


class _Joined(Function):
    """Several tensors as one flat tensor (their ``cat``), whose backward splits its gradient into theirs and
    hands them to ``hand_over`` (``call.on_inputs`` or ``call.on_outputs``) together."""

    @staticmethod
    def forward(ctx, hand_over, *tensors):
        ctx.hand_over, ctx.shapes = hand_over, [t.shape for t in tensors]
        return functions.cat([functions.reshape(t, -1) for t in tensors])

    @staticmethod
    def backward(ctx, grad):
        grads, start = [], 0
        for shape in ctx.shapes:
            size = math.prod(shape)
            grads.append(functions.reshape(grad[start : start + size], *shape))
            start += size
        return (None, *ctx.hand_over(grads))


def _hooked(module, values: tuple, positions: list[int], call: _HookCall, side: str) -> tuple:
    """``values`` with those at ``positions`` passed through the identities whose backward calls the hooks
    (``side``: "input" or "output")."""
    if len(positions) == 1:
        return tuple(
            BackwardHookFunction.apply(v, call, f"on_{side}") if i == positions[0] else v for i, v in enumerate(values)
        )
    kinds = {(values[i].dtype, values[i].device) for i in positions}
    if len(kinds) > 1:
        raise NotImplementedError(
            f"backward hooks of {type(module).__name__}: vkml hooks the {side}s that require grad when they share "
            f"one dtype and device; this call has {len(kinds)}"
        )
    flat = _Joined.apply(getattr(call, f"on_{side}s"), *(values[i] for i in positions))
    hooked, start = list(values), 0
    for k, i in enumerate(positions):
        size = values[i].numel()
        hooked[i] = functions.reshape(flat[start : start + size], *values[i].shape)
        hooked[i]._custom_view = (k, "BackwardHookFunction")  # as PyTorch's outputs: not written in place
        start += size
    return tuple(hooked)


def with_backward_hooks(module, forward, args: tuple, kwargs: dict, pre_hooks: list, hooks: list):
    """``forward(*args, **kwargs)`` with the module's backward hooks wired around it (module text)."""
    if not is_grad_enabled():
        return forward(*args, **kwargs)
    # grad_input has one entry per positional argument, None for those that are not tensors (PyTorch's)
    tracked = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    call = _HookCall(module, pre_hooks, hooks, len(args), tracked)
    if tracked:
        args = _hooked(module, args, tracked, call, "input")
    output = forward(*args, **kwargs)
    if isinstance(output, Tensor):
        return BackwardHookFunction.apply(output, call, "on_output") if output.requires_grad else output
    if not isinstance(output, tuple):
        warnings.warn(
            "For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but "
            f"received {type(output)}",
            stacklevel=3,
        )
        return output
    requiring = [i for i, o in enumerate(output) if isinstance(o, Tensor) and o.requires_grad]
    if not requiring:
        return output
    call.outputs, call.out_positions = len(output), requiring
    return _hooked(module, output, requiring, call, "output")
