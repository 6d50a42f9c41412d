"""RMSprop, as ``torch.optim.RMSprop`` computes it (single-tensor path), operation for operation."""

from __future__ import annotations

from ..frontend import pointwise
from ..frontend.creation import zeros_like
from ..frontend.operators import HALF_PRECISION, add
from ..frontend.tensor_api import addcdiv, addcmul
from ..ir import types as T
from ..ops.cast import host_round
from ..tensor import Tensor
from . import fused
from .adam import lerp
from .optimizer import Optimizer, check_args, maximized


class RMSprop(Optimizer):
    """Divide the gradient by a running root mean square (Hinton); ``centered`` subtracts the
    squared running mean of the gradient first, ``momentum`` keeps a buffer of the steps.

    ``foreach`` and ``capturable`` are accepted and kept (they only pick an implementation in
    PyTorch); ``differentiable=True`` raises NotImplementedError.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = RMSprop([w], lr=0.01, momentum=0.9, centered=True)
    >>> (w * w).sum().backward(); opt.step()
    >>> sorted(opt.state[w])
    ['grad_avg', 'momentum_buffer', 'square_avg', 'step']
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_args(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update(self, param, grad, state: dict, group: dict):
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            state["step"] = 0
            state["square_avg"] = zeros_like(param)
            if momentum > 0:
                state["momentum_buffer"] = zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = zeros_like(param)
        state["step"] += 1
        if fused.plain_step(group, _NUMBER_KEYS):
            tensors = (param, grad, state["square_avg"])
            if group["centered"]:
                tensors += (state["grad_avg"],)
            if momentum > 0:
                tensors += (state["momentum_buffer"],)
            nodes = fused.nodes_of(tensors, fused.FLOATS)
            if nodes is not None:
                return _update_nodes(nodes, state, group)
        grad = maximized(grad, group)
        if param.dtype in HALF_PRECISION:
            return _update_half(param, grad, state, group)
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        square_avg = state["square_avg"] = state["square_avg"] * alpha + ((1 - alpha) * grad) * grad
        if group["centered"]:
            grad_avg = state["grad_avg"] = lerp(state["grad_avg"], grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt()  # torch's addcmul(value=-1): the same bits
        else:
            avg = square_avg.sqrt()
        avg = avg + group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"] = state["momentum_buffer"] * momentum + grad / avg
            return param + (-group["lr"]) * buf
        return param + ((-group["lr"]) * grad) / avg


_NUMBER_KEYS = ("lr", "alpha", "eps", "weight_decay", "momentum")


def _update_nodes(nodes: tuple, state: dict, group: dict):
    """``RMSprop.update``'s arithmetic (maximize included) as one elementwise node per new tensor
    (vkml/optim/fused.py) over the nodes of the parameter, the gradient and the state: the operators'
    formula, op for op, so the same kernel and bits."""
    momentum, wd, centered = group["momentum"], group["weight_decay"], group["centered"]
    p, g, s = nodes[:3]
    neg_lr = -group["lr"]
    if p.dtype is T.float32:
        ops = fused.rmsprop_ops(group["alpha"], group["eps"], wd, momentum, centered, group["maximize"])
    else:  # float16, bfloat16: _update_half's roundings
        ops = fused.rmsprop_half_ops(p.dtype, group["alpha"], group["eps"], wd, momentum, centered, group["maximize"])
        if momentum > 0:  # add(param, buf, alpha=-lr): the alpha rounded to the dtype
            neg_lr = host_round(neg_lr, p.dtype)
    decayed = (p,) if wd != 0 else ()  # weight decay: the gradient reads the parameter
    s = fused.node(ops.square_avg, s, g, *decayed)
    fused.assign(state, "square_avg", s)
    averages = (s,)
    if centered:
        a = fused.node(ops.grad_avg, nodes[3], g, *decayed)
        fused.assign(state, "grad_avg", a)
        averages = (s, a)
    if momentum > 0:
        buf = fused.node(ops.momentum_buffer, nodes[-1], *averages, g, *decayed)
        fused.assign(state, "momentum_buffer", buf)
        return Tensor(fused.node(ops.param, p, buf, neg_lr))
    return Tensor(fused.node(ops.param, p, *averages, neg_lr, g))


def _update_half(param, grad, state: dict, group: dict):
    """RMSprop's step for float16 and bfloat16 parameters, op for op as PyTorch's: ``add`` with alpha,
    ``lerp_``, ``addcmul`` and ``addcdiv_`` each compute in float32 and round once."""
    alpha, momentum = group["alpha"], group["momentum"]
    if group["weight_decay"] != 0:
        grad = add(grad, param, alpha=group["weight_decay"])
    square_avg = state["square_avg"] = addcmul(state["square_avg"] * alpha, grad, grad, value=1 - alpha)
    if group["centered"]:
        grad_avg = state["grad_avg"] = pointwise.lerp(state["grad_avg"], grad, 1 - alpha)
        avg = addcmul(square_avg, grad_avg, grad_avg, value=-1).sqrt()
    else:
        avg = square_avg.sqrt()
    avg = avg + group["eps"]
    if momentum > 0:
        buf = state["momentum_buffer"] = addcdiv(state["momentum_buffer"] * momentum, grad, avg)
        return add(param, buf, alpha=-group["lr"])
    return addcdiv(param, grad, avg, value=-group["lr"])
