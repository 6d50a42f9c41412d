"""Adafactor, as ``torch.optim.Adafactor`` computes it (its single-tensor path), operation for operation.

A matrix (or a batch of them: every parameter of two dims or more) keeps row and column means of the
squared gradient instead of a full second moment (Shazeer and Stern); a vector keeps the full one.
Each step reads two numbers back to the host, as PyTorch's does: the parameter's RMS (the step size is
relative to it) and the update's RMS (clipped at ``d``).
"""

from __future__ import annotations

import math

from ..frontend.creation import zeros, zeros_like
from ..frontend.dtype_info import finfo
from .optimizer import Optimizer, maximized


class Adafactor(Optimizer):
    """``torch.optim.Adafactor(params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
    *, foreach=None, maximize=False)``: PyTorch's checks, defaults and arithmetic. ``eps[0]`` None is the
    parameter dtype's machine epsilon; ``foreach`` is accepted and kept (it only picks an implementation).

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2, 2))
    >>> opt = Adafactor([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.flatten().tolist()]
    [0.9, 0.9, 0.9, 0.9]
    """

    _complex_refused = "step"

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        if not state:
            state["step"] = 0.0
            if grad.ndim > 1:
                state["row_var"] = zeros(*grad.shape[:-1], 1, dtype=grad.dtype, device=grad.device)
                state["col_var"] = zeros(*grad.shape[:-2], 1, grad.shape[-1], dtype=grad.dtype, device=grad.device)
            else:
                state["variance"] = zeros_like(grad)
        grad = maximized(grad, group)
        lr, (eps1, eps2) = float(group["lr"]), group["eps"]
        if eps1 is None:
            eps1 = finfo(param.dtype).eps
        state["step"] += 1.0
        step = state["step"]
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / (step**0.5))
        alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho
        if group["weight_decay"] != 0:
            param = param * (1 - lr * group["weight_decay"])
        if grad.ndim > 1:
            row_mean = grad.norm(dim=-1, keepdim=True).square() / grad.shape[-1]
            row_var = state["row_var"] = state["row_var"].lerp(row_mean, one_minus_beta2)
            col_mean = grad.norm(dim=-2, keepdim=True).square() / grad.shape[-2]
            col_var = state["col_var"] = state["col_var"].lerp(col_mean, one_minus_beta2)
            estimate = (row_var @ col_var) / row_var.mean(dim=-2, keepdim=True).clamp(min=eps1)
        else:
            estimate = state["variance"] = state["variance"].lerp(grad * grad, one_minus_beta2)
        update = estimate.clamp(min=eps1 * eps1).rsqrt() * grad
        denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * group["d"]))
        return param + update * (-alpha / denom)
