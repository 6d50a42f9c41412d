"""Adamax, NAdam and RAdam, as ``torch.optim`` computes them (single-tensor path), operation for operation."""

from __future__ import annotations

import numpy as np

from ..frontend import pointwise
from ..frontend.creation import zeros_like
from ..frontend.operators import HALF_PRECISION, add, maximum
from ..frontend.tensor_api import addcdiv, addcmul
from .adam import lerp
from .optimizer import Optimizer, check_args, maximized

# The implementation-only flags (PyTorch picks a loop, a multi-tensor kernel or a graph-capturable
# form with them; the arithmetic is the same): vkml accepts and keeps them; every step is one fused
# submission either way.


def _moments(state: dict, param) -> None:
    state["step"] = 0
    state["exp_avg"] = zeros_like(param)
    state["exp_avg_sq"] = zeros_like(param)


def _decayed(param, grad, group: dict):
    """(param, grad) after weight decay: L2 (added to the gradient) or decoupled (the parameter shrinks)."""
    lr, wd = group["lr"], group["weight_decay"]
    if wd == 0:
        return param, grad
    if group.get("decoupled_weight_decay"):
        return param * (1 - lr * wd), grad
    if param.dtype in HALF_PRECISION:  # PyTorch's grad.add(param, alpha=wd): float32, rounded once
        return param, add(grad, param, alpha=wd)
    return param, grad + wd * param


class Adamax(Optimizer):
    """Adam with the infinity norm in place of the second moment (Kingma & Ba, section 7).

    ``foreach`` and ``capturable`` are accepted and kept; ``differentiable=True`` raises
    NotImplementedError.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, 0.9]
    """

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        beta1, beta2 = group["betas"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_inf"] = zeros_like(param)
        state["step"] += 1
        grad = maximized(grad, group)
        param, grad = _decayed(param, grad, group)
        half = param.dtype in HALF_PRECISION  # PyTorch's lerp_ and addcdiv_: float32, rounded once
        exp_avg = state["exp_avg"] = (pointwise.lerp if half else lerp)(state["exp_avg"], grad, 1 - beta1)
        exp_inf = state["exp_inf"] = maximum(state["exp_inf"] * beta2, grad.abs() + group["eps"])
        clr = group["lr"] / (1 - beta1 ** state["step"])
        if half:
            return addcdiv(param, exp_avg, exp_inf, value=-clr)
        return param + ((-clr) * exp_avg) / exp_inf


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), its momentum decaying by ``momentum_decay``;
    ``decoupled_weight_decay=True`` gives NAdamW.

    ``foreach`` and ``capturable`` are accepted and kept; ``differentiable=True`` raises
    NotImplementedError. ``state["mu_product"]`` is a 0-d float32 tensor, as PyTorch's, whose
    number the host keeps (``HostScalar``), rounded to float32 after each product as PyTorch's is.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = NAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> sorted(opt.state[w])
    ['exp_avg', 'exp_avg_sq', 'mu_product', 'step']
    """

    _float_state = ("mu_product",)
    _host_scalar_state = ("step", "mu_product")
    _saved_tensor_state = ("step", "mu_product")

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        lr, (beta1, beta2), decay = group["lr"], group["betas"], group["momentum_decay"]
        if not state:
            state["step"] = 0
            state["mu_product"] = 1.0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        step = state["step"]
        grad = maximized(grad, group)
        param, grad = _decayed(param, grad, group)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        mu_product = state["mu_product"] = float(np.float32(state["mu_product"]) * np.float32(mu))
        if param.dtype in HALF_PRECISION:  # PyTorch's lerp_, addcmul_, addcdiv_: float32, rounded once
            exp_avg = state["exp_avg"] = pointwise.lerp(state["exp_avg"], grad, 1 - beta1)
            exp_avg_sq = state["exp_avg_sq"] = addcmul(state["exp_avg_sq"] * beta2, grad, grad, value=1 - beta2)
            denom = (exp_avg_sq / (1 - beta2**step)).sqrt() + group["eps"]
            param = addcdiv(param, grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
            return addcdiv(param, exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product * mu_next))
        exp_avg = state["exp_avg"] = lerp(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + ((1 - beta2) * grad) * grad
        denom = (exp_avg_sq / (1 - beta2**step)).sqrt() + group["eps"]
        param = param + ((-lr * (1.0 - mu) / (1.0 - mu_product)) * grad) / denom
        return param + (((-lr * mu_next) / (1.0 - mu_product * mu_next)) * exp_avg) / denom


class RAdam(Optimizer):
    """Adam with the variance of the adaptive step rectified (Liu et al.): plain momentum SGD
    while the approximated SMA length is at most 5; ``decoupled_weight_decay=True`` as AdamW.

    ``foreach`` and ``capturable`` are accepted and kept; ``differentiable=True`` raises
    NotImplementedError.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.8, 0.8]
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        lr, (beta1, beta2) = group["lr"], group["betas"]
        if not state:
            _moments(state, param)
        state["step"] += 1
        step = state["step"]
        grad = maximized(grad, group)
        param, grad = _decayed(param, grad, group)
        exp_avg = state["exp_avg"] = lerp(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + ((1 - beta2) * grad) * grad
        bias_correction2 = 1 - beta2**step
        corrected = exp_avg / (1 - beta1**step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t <= 5.0:
            return param - corrected * lr
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        # torch computes scalar / tensor as reciprocal(tensor) * scalar
        adaptive_lr = (exp_avg_sq.sqrt() + group["eps"]).reciprocal() * bias_correction2**0.5
        return param - corrected * lr * adaptive_lr * rect
