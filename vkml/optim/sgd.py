"""SGD with momentum, dampening, weight decay and Nesterov, as ``torch.optim.SGD`` computes it."""

from __future__ import annotations

import functools

from ..frontend.operators import HALF_PRECISION, add
from ..graph.build import check_scalar_fits
from ..ir import types as T
from ..ops.cast import host_round
from ..tensor import Tensor
from . import fused
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
        nodes = _fused_nodes(param, grad, state, group)
        if nodes is not None:
            return _update_nodes(nodes, state, group)
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

    def _group_step(self, group: dict, updates: list, targets: list) -> bool:
        """``step``'s loop over ``group`` where every parameter with a gradient takes ``_update_nodes``
        (``_fused_nodes``), has its momentum buffer already where there is momentum (not its first step), a
        plain gradient without history and PyTorch's alphas that fit its dtype, and appears once; False,
        having changed nothing, elsewhere. The same nodes and state writes as the generic loop, without its
        per-parameter bookkeeping."""
        if type(self).update is not SGD.update or not fused.plain_step(group, _NUMBER_KEYS):
            return False
        momentum = group["momentum"]
        alphas = (group["weight_decay"], momentum if group["nesterov"] else 0, -group["lr"])
        taken, seen = [], set()
        state_of = self.state
        for p in group["params"]:
            grad = p._grad if p._ctx is None else p.grad
            if grad is None:
                continue
            if grad.__class__ is not Tensor or grad._ctx is not None or grad._requires_grad or id(p) in seen:
                return False
            seen.add(id(p))
            state = state_of.get(p)
            buf = state.get("momentum_buffer") if state else None
            if momentum != 0 and buf is None:
                return False
            try:
                for alpha in alphas:
                    _alpha_fits(alpha, p)
            except RuntimeError:
                return False  # the generic loop raises it, after the parameters before this one
            nodes = fused.nodes_of((p, grad) if momentum == 0 else (p, grad, buf), fused.FLOATS)
            if nodes is None:
                return False
            taken.append((p, grad, state, nodes))
        for p, grad, state, nodes in taken:
            new = _update_nodes(nodes, state, group)
            updates.append((p, new))
            targets.append(new)
            targets.append(grad)
            if state:
                targets += [v for v in state.values() if isinstance(v, Tensor)]
        return True


def _update_nodes(nodes: tuple, state: dict, group: dict):
    """``SGD.update``'s arithmetic (maximize included) as one elementwise node per new tensor
    (vkml/optim/fused.py) over ``_fused_nodes``: the operators' formula, op for op, so the same kernel and bits."""
    momentum, wd = group["momentum"], group["weight_decay"]
    p, g = nodes[:2]
    neg_lr = -group["lr"]
    if p.dtype is T.float32:
        ops = fused.sgd_ops(momentum, group["dampening"], wd, group["nesterov"], group["maximize"])
    else:  # float16, bfloat16: _update_half's roundings, its alpha rounded to the dtype
        ops = fused.sgd_half_ops(p.dtype, momentum, group["dampening"], wd, group["nesterov"], group["maximize"])
        neg_lr = host_round(neg_lr, p.dtype)
    decayed = (p,) if wd != 0 else ()  # weight decay: the gradient reads the parameter
    if momentum == 0:
        d = fused.node(ops.gradient, g, *decayed) if decayed or group["maximize"] else g
    elif len(nodes) == 2:  # the first buffer is the gradient's value (PyTorch clones it)
        d = fused.node(ops.gradient, g, *decayed)
        state["momentum_buffer"] = Tensor(d)
    else:
        d = fused.node(ops.momentum_buffer, nodes[2], g, *decayed)
        fused.assign(state, "momentum_buffer", d)
    if group["nesterov"]:
        return Tensor(fused.node(ops.param, p, d, neg_lr, g))
    return Tensor(fused.node(ops.param, p, d, neg_lr))


_NUMBERS = (int, float)
_NUMBER_KEYS = ("lr", "momentum", "dampening", "weight_decay")


def _fused_nodes(param, grad, state: dict, group: dict) -> tuple | None:
    """The nodes of the parameter, the gradient and the momentum buffer (where there is one) where ``update``
    may build its nodes itself (``_update_nodes``): tensors of one shape, device and dtype (float32, float16 or
    bfloat16) without grad, Python-number hyper-parameters, lazy mode, no memory format to carry. None
    elsewhere."""
    if not fused.plain_step(group, _NUMBER_KEYS):
        return None
    buf = state.get("momentum_buffer")
    tensors = (param, grad) if buf is None or group["momentum"] == 0 else (param, grad, buf)
    return fused.nodes_of(tensors, fused.FLOATS)


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
    dtype = param.dtype
    if not dtype.is_floating_point:
        return
    if alpha.__class__ in _NUMBERS:  # the same few numbers at every step: each checked once
        _number_fits(alpha, alpha.__class__, dtype)
    else:
        check_scalar_fits("SGD.step", alpha, dtype)


@functools.lru_cache(maxsize=256)
def _number_fits(alpha, kind: type, dtype) -> None:
    """``check_scalar_fits`` of a Python number (``kind`` keeps 1 and 1.0 apart); an alpha that does not fit
    raises at every call (lru_cache keeps no exception)."""
    check_scalar_fits("SGD.step", alpha, dtype)
