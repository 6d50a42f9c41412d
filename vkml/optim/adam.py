"""Adam and AdamW, computed as ``torch.optim.Adam`` / ``AdamW`` do (single-tensor path), operation for operation."""

from __future__ import annotations

import math

from ..frontend.creation import zeros_like
from ..frontend.operators import maximum
from .optimizer import Optimizer


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction; ``weight_decay`` adds ``wd * p`` to the gradient (L2).

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, 0.9]
    """

    decoupled = False  # AdamW: decay the parameter itself instead

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(
                f"{type(self).__name__}: invalid lr={lr}, betas={betas}, eps={eps} or weight_decay={weight_decay}"
            )
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad}
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        step = state["step"]
        if wd and self.decoupled:
            param = param * (1 - lr * wd)
        elif wd:
            grad = grad + wd * param
        exp_avg = state["exp_avg"] + (1 - beta1) * (grad - state["exp_avg"])  # torch's lerp, weight < 0.5
        exp_avg_sq = state["exp_avg_sq"] * beta2 + ((1 - beta2) * grad) * grad  # torch's addcmul order
        state["exp_avg"], state["exp_avg_sq"] = exp_avg, exp_avg_sq
        if group["amsgrad"]:
            exp_avg_sq = state["max_exp_avg_sq"] = maximum(state["max_exp_avg_sq"], exp_avg_sq)
        step_size = lr / (1 - beta1**step)
        denom = exp_avg_sq.sqrt() / math.sqrt(1 - beta2**step) + eps
        return param + ((-step_size) * exp_avg) / denom


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * wd`` before the Adam step."""

    decoupled = True

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
    ):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)
