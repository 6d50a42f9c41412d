"""Adam and AdamW, computed as ``torch.optim.Adam`` / ``AdamW`` do (single-tensor path), operation for operation."""

from __future__ import annotations

import math

from ..frontend import pointwise
from ..frontend.creation import zeros_like
from ..frontend.host_scalar import HostScalar, host_number
from ..frontend.operators import HALF_PRECISION, add, maximum
from ..frontend.tensor_api import addcdiv, addcmul
from ..frontend.type_queries import is_tensor
from ..ir import types as T
from ..tensor import Tensor
from . import fused
from .optimizer import Optimizer, check_args, check_fused_foreach, maximized


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction; ``weight_decay`` adds ``wd * p`` to the gradient (L2),
    or with ``decoupled_weight_decay=True`` scales ``p`` by ``1 - lr * wd`` first (AdamW).

    ``foreach``, ``fused`` and ``capturable`` only pick one of PyTorch's implementations of the
    same arithmetic: vkml accepts and keeps them (its step is one fused submission either way, and
    ``state["step"]`` stays on the CPU, its number kept by the host); ``differentiable=True`` raises NotImplementedError. For float16 and
    bfloat16 parameters the arithmetic is the single-tensor and foreach paths' (each of ``lerp_``,
    ``addcmul_``, ``addcdiv_`` rounded once): PyTorch's fused kernel rounds only each state's final
    value, so it can differ from them, and from vkml, in the last bit of a half-precision weight.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.ones(2))
    >>> opt = Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, 0.9]
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ):
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        # PyTorch's Adam and AdamW (not its other optimizers) refuse an int beta, as in betas=(0, 0.99)
        if not (all(isinstance(b, float) for b in betas) or all(is_tensor(b) for b in betas)):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas):
            if is_tensor(beta):
                if foreach and not capturable:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
        check_fused_foreach(fused, foreach)

    _sparse_hint = ", please consider SparseAdam instead"

    def update(self, param, grad, state: dict, group: dict):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        nodes = _fused_nodes(param, grad, state, group)
        if nodes is not None:
            return self._update_nodes(nodes, state, group)
        grad = maximized(grad, group)
        if param.dtype in HALF_PRECISION:
            return self._update_half(param, grad, state, group)
        if wd != 0 and group["decoupled_weight_decay"]:
            param = param * (1 - lr * wd)
        elif wd != 0:
            grad = grad + wd * param
        exp_avg = lerp(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] * beta2 + ((1 - beta2) * grad) * grad  # torch's addcmul order
        state["exp_avg"], state["exp_avg_sq"] = exp_avg, exp_avg_sq
        if group["amsgrad"]:
            exp_avg_sq = state["max_exp_avg_sq"] = maximum(state["max_exp_avg_sq"], exp_avg_sq)
        neg_step_size, bias_correction2_sqrt = self._jit_scalars(group, state)
        denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps
        return param + (neg_step_size * exp_avg) / denom

    def _update_nodes(self, nodes: tuple, state: dict, group: dict, shared: dict | None = None):
        """``update``'s arithmetic (below it, maximize included) as one elementwise node per new tensor
        (vkml/optim/fused.py) over ``_fused_nodes``: the operators' formula, op for op, so the same kernel and
        bits, without a dozen operator calls and their constants per parameter at every step. ``shared``
        (``_group_step``'s, one per group and step): the ops by dtype and the step's numbers by step count,
        made for the group's first parameter of each and reused for the others (the same values)."""
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        decoupled = wd != 0 and group["decoupled_weight_decay"]
        p, g, m, v = nodes[:4]
        ops = shared.get(p.dtype) if shared is not None else None
        if ops is None:
            if p.dtype is T.float32:
                ops = fused.adam_ops(1 - beta1, beta2, eps, wd, decoupled, group["maximize"])
            else:  # float16, bfloat16: _update_half's roundings
                ops = fused.adam_half_ops(p.dtype, 1 - beta1, beta2, eps, wd, decoupled, group["maximize"])
            if shared is not None:
                shared[p.dtype] = ops
        decayed = (p,) if wd != 0 and not decoupled else ()  # L2: the gradient reads the parameter
        m = fused.node(ops.exp_avg, m, g, *decayed)
        v = fused.node(ops.exp_avg_sq, v, g, *decayed)
        fused.assign(state, "exp_avg", m)
        fused.assign(state, "exp_avg_sq", v)
        if group["amsgrad"]:
            v = fused.node(ops.max_exp_avg_sq, nodes[4], v)
            fused.assign(state, "max_exp_avg_sq", v)
        # new values every step: eager replays read them from a ring from the first realize on
        counter = state["step"]
        if shared is not None and counter.__class__ is HostScalar:  # _group_step's: a current counter
            numbers = shared.get(counter._number)
            if numbers is None:
                numbers = shared[counter._number] = tuple(map(fused.StepScalar, self._jit_scalars(group, state)))
            neg_step_size, bias_correction2_sqrt = numbers
        else:
            neg_step_size, bias_correction2_sqrt = map(fused.StepScalar, self._jit_scalars(group, state))
        if decoupled:
            return Tensor(fused.node(ops.param, p, m, v, neg_step_size, bias_correction2_sqrt, 1 - lr * wd))
        return Tensor(fused.node(ops.param, p, m, v, neg_step_size, bias_correction2_sqrt))

    def _group_step(self, group: dict, updates: list, targets: list) -> bool:
        """``step``'s loop over ``group`` where every parameter with a gradient takes ``_update_nodes``
        (``_fused_nodes``), has its state already (not its first step), a counter that is the host's number
        (``HostScalar``) and a plain gradient without history, and appears once; False, having changed
        nothing, elsewhere. The same nodes, state writes and counters as the generic loop, without its
        per-parameter bookkeeping (the counters taken out and put back, the in-place pass, the checks)."""
        kind = type(self)
        if kind.update is not Adam.update or kind._update_nodes is not Adam._update_nodes or group["amsgrad"]:
            return False
        beta1, beta2 = group["betas"]
        if (
            not fused.plain_step(group, _NUMBER_KEYS)
            or beta1.__class__ not in _NUMBERS
            or beta2.__class__ not in _NUMBERS
        ):
            return False
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
            if not state:
                return False
            counter = state.get("step")
            if counter.__class__ is not HostScalar or counter._base is not None:
                return False
            if counter._node is not getattr(counter, "_number_node", None):  # a number written to it since
                return False
            nodes = fused.nodes_of((p, grad, state.get("exp_avg"), state.get("exp_avg_sq")), fused.FLOATS)
            if nodes is None:
                return False
            taken.append((p, grad, state, counter, nodes))
        shared: dict = {}
        for p, grad, state, counter, nodes in taken:
            counter.set_number(counter._number + 1)  # ``state["step"] += 1``: the step reads it as a number
            new = self._update_nodes(nodes, state, group, shared)
            updates.append((p, new))
            targets.append(new)
            targets.append(grad)
            targets += [v for v in state.values() if isinstance(v, Tensor)]
        return True

    def _update_half(self, param, grad, state: dict, group: dict):
        """``update`` for float16 and bfloat16 parameters, op for op as PyTorch's single-tensor and foreach
        paths: ``lerp_``, ``addcmul_``, ``add`` with alpha and ``addcdiv_`` each compute in float32 and
        round once to the parameter's dtype (the float32 ``update`` writes them as separate products,
        which is the same arithmetic there but rounds each product here)."""
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if wd != 0 and group["decoupled_weight_decay"]:
            param = param * (1 - lr * wd)
        elif wd != 0:
            grad = add(grad, param, alpha=wd)
        exp_avg = state["exp_avg"] = pointwise.lerp(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] = addcmul(state["exp_avg_sq"] * beta2, grad, grad, value=1 - beta2)
        if group["amsgrad"]:
            exp_avg_sq = state["max_exp_avg_sq"] = maximum(state["max_exp_avg_sq"], exp_avg_sq)
        neg_step_size, bias_correction2_sqrt = self._jit_scalars(group, state)
        denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps
        return addcdiv(param, exp_avg, denom, value=neg_step_size)

    def _jit_scalars(self, group: dict, state: dict) -> tuple[float, float]:
        """The per-step numbers of ``update`` at ``state["step"]`` (vkml.jit recomputes them on replay)."""
        lr, (beta1, beta2), step = group["lr"], group["betas"], host_number(state["step"])
        return -(lr / (1 - beta1**step)), math.sqrt(1 - beta2**step)

    def _jit_covered(self, group: dict) -> tuple[str, ...]:
        """The hyper-parameters that reach ``update``'s work only through ``_jit_scalars``: a vkml.jit
        replay recomputes them (a scheduler's ``lr``), so its guard does not hold them constant."""
        lr, wd = group["lr"], group["weight_decay"]
        if lr.__class__ is float and not (wd != 0 and group["decoupled_weight_decay"]):
            return ("lr",)
        return ()  # ``1 - lr * wd`` (decoupled weight decay) is a constant of the recording


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * wd`` before the Adam step."""

    _sparse_refuser = "Adam"  # PyTorch's AdamW refuses a sparse gradient in Adam's words

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )


_NUMBERS = (int, float)
_NUMBER_KEYS = ("lr", "eps", "weight_decay")


def _fused_nodes(param, grad, state: dict, group: dict) -> tuple | None:
    """The nodes of the parameter, the gradient and the moments (the running maximum last, with amsgrad) where
    ``update`` may build its nodes itself (``_update_nodes``): tensors of one shape, device and dtype (float32,
    float16 or bfloat16) without grad, Python-number hyper-parameters, lazy mode, no memory format to carry.
    None elsewhere."""
    beta1, beta2 = group["betas"]
    if not fused.plain_step(group, _NUMBER_KEYS) or beta1.__class__ not in _NUMBERS or beta2.__class__ not in _NUMBERS:
        return None
    tensors = (param, grad, state["exp_avg"], state["exp_avg_sq"])
    if group["amsgrad"]:
        tensors += (state["max_exp_avg_sq"],)
    return fused.nodes_of(tensors, fused.FLOATS)


def lerp(start, end, weight: float):
    """``torch.lerp(start, end, weight)`` for a Python weight, in its order: from the nearer end."""
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)
