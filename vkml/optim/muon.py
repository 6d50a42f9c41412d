"""Muon, as ``torch.optim.Muon`` computes it: momentum orthogonalized by a Newton-Schulz iteration, for 2-D
parameters (Keller Jordan's method; PyTorch 2.9's optimizer, its names, defaults and checks).

Each step: the momentum buffer moves toward the gradient (``lerp`` by ``1 - momentum``), the update is
the buffer (or, with ``nesterov``, the gradient moved toward it), orthogonalized by ``ns_steps`` quintic
Newton-Schulz steps in bfloat16 (``ns_coefficients``), and the parameter is decayed by ``1 - lr *
weight_decay`` then moved by ``-adjusted_lr`` times the update (``adjust_lr_fn``: "original",
sqrt(max(1, rows / columns)); "match_rms_adamw", 0.2 sqrt(max(rows, columns))).

Precision: the iteration runs in bfloat16 as PyTorch's does, and vkml rounds each product and sum of
``addmm`` to bfloat16 where PyTorch's CPU kernel rounds ``beta * C + alpha * A @ B`` once, so updates
agree with PyTorch's to bfloat16's precision (a few of its ulps), not bit for bit; vkml's CPU and
Vulkan agree bit for bit.
"""

from __future__ import annotations

import math

from ..frontend.creation import zeros_like
from ..frontend.shape import addmm
from .optimizer import Optimizer

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """The orthogonalized ``grad`` (about U V^T of its SVD, its singular values taken near 1)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.bfloat16()
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)  # the spectral norm at most 1
    for _ in range(ns_steps):
        gram = x @ x.T
        x = addmm(x, addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    rows, columns = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / columns))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, columns))
    return lr


class Muon(Optimizer):
    """``torch.optim.Muon(params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
    ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None)`` (see the module).

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.eye(2))
    >>> opt = Muon([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> tuple(w.shape)
    (2, 2)
    """

    _complex_refused = "step"

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                size = p.size()[:-1] if self.is_complex_pair(p) else p.size()  # a complex one: its step refuses it
                if len(size) != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: {size}")

    def update(self, param, grad, state: dict, group: dict):
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = zeros_like(grad)
        momentum = group["momentum"]
        buf = state["momentum_buffer"] = state["momentum_buffer"].lerp(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        lr = float(group["lr"])
        adjusted = _adjust_lr(lr, group["adjust_lr_fn"], param.shape)
        param = param * (1 - lr * group["weight_decay"])
        return param + update.to(param.dtype) * (-adjusted)  # add_(update, alpha=...) in the parameter's dtype
