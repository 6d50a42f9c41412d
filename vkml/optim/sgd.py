"""SGD with momentum, dampening, weight decay and Nesterov, as ``torch.optim.SGD`` computes it."""

from __future__ import annotations

from ..frontend.operators import HALF_PRECISION, add
from ..graph.build import check_scalar_fits
from .optimizer import Optimizer, check_args, check_fused_foreach, maximized


class SGD(Optimizer):
    """``p -= lr * g``, where g has weight decay added and goes through the momentum buffer.

    ``foreach`` and ``fused`` only pick one of PyTorch's implementations of the same arithmetic:
    vkml accepts and keeps them (one fused step either way); ``differentiable=True`` raises
    NotImplementedError.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = SGD([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step()
    >>> w.tolist()
    [0.0, 0.0]
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        check_args(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        check_fused_foreach(fused, foreach)

    _sparse_grads = True  # a sparse gradient updates through dense + sparse (weight decay refuses it, as PyTorch's)

    def update(self, param, grad, state: dict, group: dict):
        # PyTorch's alphas (weight decay, nesterov's momentum, -lr), checked before the state changes
        for alpha in (group["weight_decay"], group["momentum"] if group["nesterov"] else 0, -group["lr"]):
            _alpha_fits(alpha, param)
        grad = maximized(grad, group)
        if param.dtype in HALF_PRECISION:
            return _update_half(param, grad, state, group)
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            # the first buffer is a copy of the gradient (PyTorch clones it), not a view that shares its values
            buf = grad.clone() if buf is None else buf * momentum + (1 - group["dampening"]) * grad
            state["momentum_buffer"] = buf
            grad = grad + momentum * buf if group["nesterov"] else buf
        return param + (-group["lr"]) * grad


def _update_half(param, grad, state: dict, group: dict):
    """SGD's step for float16 and bfloat16 parameters, op for op as PyTorch's: each ``add`` with ``alpha``
    computes in float32 and rounds once (``update`` rounds each product, the same arithmetic in float32)."""
    momentum = group["momentum"]
    if group["weight_decay"] != 0:
        grad = add(grad, param, alpha=group["weight_decay"])
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = grad.clone() if buf is None else add(buf * momentum, grad, alpha=1 - group["dampening"])
        state["momentum_buffer"] = buf
        grad = add(grad, buf, alpha=momentum) if group["nesterov"] else buf
    return add(param, grad, alpha=-group["lr"])


def _alpha_fits(alpha, param) -> None:
    """PyTorch's SGD adds with ``add(..., alpha=)``, which refuses an alpha the parameter's dtype cannot
    hold (lr=1e10 on float16 parameters): its RuntimeError, before any parameter changes."""
    if param.dtype.is_floating_point:
        check_scalar_fits("SGD.step", alpha, param.dtype)
