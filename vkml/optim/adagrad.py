"""Adagrad, as ``torch.optim.Adagrad`` computes it (single-tensor path), operation for operation."""

from __future__ import annotations

from ..frontend.creation import full_like
from ..frontend.host_scalar import HostScalar
from ..frontend.operators import HALF_PRECISION, add
from ..frontend.tensor_api import addcdiv, addcmul
from ..ir import types as T
from ..tensor import Tensor
from . import fused
from .optimizer import Optimizer, check_args, check_fused_foreach, maximized
from .sparse_adam import SparseRows


class Adagrad(Optimizer):
    """Divide by the root of the sum of squared gradients (Duchi et al.); the step size decays as
    ``lr / (1 + (step - 1) * lr_decay)``; the sum starts at ``initial_accumulator_value``.

    ``foreach`` and ``fused`` are accepted and kept (they only pick an implementation in PyTorch);
    ``differentiable=True`` raises NotImplementedError. Sparse gradients do not exist in vkml.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = Adagrad([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.5, 0.5]
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        check_args(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
        )
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        check_fused_foreach(fused, foreach)
        # PyTorch's Adagrad fills every parameter's state at construction: a state_dict before any step has it
        for group in self.param_groups:
            for p in group["params"]:
                step = HostScalar(0, T.float32 if group["fused"] else None)
                self.state[p] = {"step": step, "sum": full_like(p, initial_accumulator_value)}

    _sparse_grads = True  # only the rows a sparse gradient names change, sums included (PyTorch's)

    def update(self, param, grad, state: dict, group: dict):
        if not state:
            state["step"] = 0
            # PyTorch starts every group's sum at the optimizer's default, not the group's value
            state["sum"] = full_like(param, self.defaults["initial_accumulator_value"])
        state["step"] += 1
        if fused.plain_step(group, _NUMBER_KEYS):
            nodes = fused.nodes_of((param, grad, state["sum"]), fused.FLOATS)
            if nodes is not None:
                return _update_nodes(nodes, state, group)
        grad = maximized(grad, group)
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        if grad.is_sparse:
            if group["weight_decay"] != 0:
                raise RuntimeError("weight_decay option is not compatible with sparse gradients")
            grad = SparseRows(grad)
            if grad.empty:
                return param
            values = grad.values
            total = state["sum"] = grad.add(state["sum"], values * values)
            return grad.add(param, (values / (grad.take(total).sqrt() + group["eps"])) * -clr)
        if param.dtype in HALF_PRECISION:  # PyTorch's add(alpha), addcmul_, addcdiv_: float32, rounded once
            if group["weight_decay"] != 0:
                grad = add(grad, param, alpha=group["weight_decay"])
            total = state["sum"] = addcmul(state["sum"], grad, grad, value=1)
            return addcdiv(param, grad, total.sqrt() + group["eps"], value=-clr)
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        total = state["sum"] = state["sum"] + grad * grad
        return param + ((-clr) * grad) / (total.sqrt() + group["eps"])


_NUMBER_KEYS = ("lr", "lr_decay", "eps", "weight_decay")


def _update_nodes(nodes: tuple, state: dict, group: dict):
    """``Adagrad.update``'s dense arithmetic (maximize included) as one elementwise node per new tensor
    (vkml/optim/fused.py) over the nodes of the parameter, the gradient and the sum: the operators' formula,
    op for op, so the same kernel and bits."""
    wd = group["weight_decay"]
    p, g, s = nodes
    if p.dtype is T.float32:
        ops = fused.adagrad_ops(group["eps"], wd, group["maximize"])
    else:  # float16, bfloat16: the half-precision operators' roundings
        ops = fused.adagrad_half_ops(p.dtype, group["eps"], wd, group["maximize"])
    clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
    s = fused.node(ops.sum, s, g, *((p,) if wd != 0 else ()))  # weight decay: the gradient reads the parameter
    fused.assign(state, "sum", s)
    return Tensor(fused.node(ops.param, p, s, -clr, g))
