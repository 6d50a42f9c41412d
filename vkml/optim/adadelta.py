"""Adadelta, as ``torch.optim.Adadelta`` computes it (single-tensor path), operation for operation."""

from __future__ import annotations

from ..frontend.creation import zeros_like
from ..frontend.operators import HALF_PRECISION, add
from ..frontend.tensor_api import addcmul
from .optimizer import Optimizer, check_args, maximized


class Adadelta(Optimizer):
    """Scale the gradient by RMS(past updates) / RMS(gradients) (Zeiler), then by ``lr``.

    ``foreach`` and ``capturable`` are accepted and kept (they only pick an implementation in
    PyTorch); ``differentiable=True`` raises NotImplementedError.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = Adadelta([w])
    >>> (w * w).sum().backward(); opt.step()
    >>> sorted(opt.state[w])
    ['acc_delta', 'square_avg', 'step']
    """

    def __init__(
        self,
        params,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_args(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        rho, eps = group["rho"], group["eps"]
        if not state:
            state["step"] = 0
            state["square_avg"] = zeros_like(param)
            state["acc_delta"] = zeros_like(param)
        state["step"] += 1
        grad = maximized(grad, group)
        if param.dtype in HALF_PRECISION:  # PyTorch's add(alpha) and addcmul_: float32, rounded once
            if group["weight_decay"] != 0:
                grad = add(grad, param, alpha=group["weight_decay"])
            square_avg = state["square_avg"] = addcmul(state["square_avg"] * rho, grad, grad, value=1 - rho)
            delta = (state["acc_delta"] + eps).sqrt() / (square_avg + eps).sqrt() * grad
            state["acc_delta"] = addcmul(state["acc_delta"] * rho, delta, delta, value=1 - rho)
            return add(param, delta, alpha=-group["lr"])
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        square_avg = state["square_avg"] = state["square_avg"] * rho + ((1 - rho) * grad) * grad
        std = (square_avg + eps).sqrt()
        delta = (state["acc_delta"] + eps).sqrt() / std * grad
        state["acc_delta"] = state["acc_delta"] * rho + ((1 - rho) * delta) * delta
        return param + (-group["lr"]) * delta
