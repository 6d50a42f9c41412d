"""ASGD and Rprop, as ``torch.optim`` computes them (single-tensor path), operation for operation."""

from __future__ import annotations

import numpy as np

from ..frontend.creation import full_like, zeros_like
from ..frontend.operators import where
from .optimizer import Optimizer, check_args, maximized


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky): SGD with a decaying step ``eta``; ``state["ax"]`` holds the
    running average of the parameter, which averages from step ``t0`` on.

    ``foreach`` and ``capturable`` are accepted and kept; ``differentiable=True`` raises
    NotImplementedError. ``state["eta"]`` and ``state["mu"]`` are 0-d float32 tensors, as
    PyTorch's, whose numbers the host keeps (``HostScalar``), rounded to float32 as PyTorch's are.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = ASGD([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> sorted(opt.state[w])
    ['ax', 'eta', 'mu', 'step']
    """

    _float_state = ("eta", "mu")
    _host_scalar_state = ("step", "eta", "mu")
    _saved_tensor_state = ("step", "eta", "mu")

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        check_args(lr=lr, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        lr, lambd = group["lr"], group["lambd"]
        if not state:
            state["step"] = 0
            state["eta"] = float(np.float32(lr))
            state["mu"] = 1.0
            state["ax"] = zeros_like(param)
        state["step"] += 1
        step = state["step"]
        grad = maximized(grad, group)
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        eta = state["eta"]
        param = param * (1 - lambd * eta)
        param = param + (-eta) * grad
        ax = state["ax"]
        state["ax"] = ax + (param - ax) * state["mu"] if state["mu"] != 1 else param
        state["eta"] = float(np.float32(lr / ((1 + lambd * lr * step) ** group["alpha"])))
        state["mu"] = float(np.float32(1 / max(1, step - group["t0"])))
        return param


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller & Braun): each element's step size grows by ``etas[1]``
    while its gradient keeps its sign and shrinks by ``etas[0]`` when it flips (that step is
    skipped), within ``step_sizes``; the update uses the gradient's sign only.

    ``foreach`` and ``capturable`` are accepted and kept; ``differentiable=True`` raises
    NotImplementedError.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = Rprop([w], lr=0.25)
    >>> (w * w).sum().backward(); opt.step()
    >>> w.tolist()
    [0.75, 0.75]
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_args(lr=lr, etas=etas)
        defaults = {
            "lr": lr,
            "etas": tuple(etas),
            "step_sizes": tuple(step_sizes),
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        (etaminus, etaplus), (step_min, step_max) = group["etas"], group["step_sizes"]
        if not state:
            state["step"] = 0
            state["prev"] = zeros_like(param)
            state["step_size"] = full_like(grad, group["lr"])
        state["step"] += 1
        grad = maximized(grad, group)
        sign = (grad * state["prev"]).sign()
        # sign -> etaplus, etaminus or 1; a NaN stays NaN (PyTorch's masked assignments skip it)
        factor = where(sign > 0, etaplus, where(sign < 0, etaminus, where(sign == 0, 1.0, sign)))
        step_size = state["step_size"] = (state["step_size"] * factor).clamp(step_min, step_max)
        grad = where(sign < 0, 0.0, grad)  # torch: grad[sign == etaminus] = 0, the same elements
        state["prev"] = grad
        return param + (-grad.sign()) * step_size
