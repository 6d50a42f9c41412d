"""The common optimizers' steps as a few elementwise nodes per parameter, their bodies written once here.

``Adam.update`` and ``SGD.update`` written with operators build a dozen nodes per parameter at every step
(each Python-number operand a constant and its broadcast besides), and each node costs the host its Python
work again in the plan lookup. Here each state tensor's new value is ONE elementwise node whose body is the
whole formula, op for op as the operators compute it (the registered ops' own bodies, in the same order and
on the same operands, rounded to float16 or bfloat16 where they round), so the fused kernel the scheduler
makes of them is the operators' kernel: the same bits on every device. Adam, AdamW, SGD, RMSprop and
Adagrad take float32, float16 and bfloat16 parameters here (every other case takes the operators).

The hyper-parameters a training run keeps fixed (betas, eps, momentum, dampening, L2 weight decay,
maximize, nesterov) are constants of the body, one set of ``OpDef``s per distinct set of values (memoized:
the same set is the same op, so the plan of one step is the plan of the next). The numbers that change
between steps (Adam's ``-lr / (1 - beta1^step)`` and ``sqrt(1 - beta2^step)``, the learning rate, AdamW's
``1 - lr * wd``) are constant nodes, so kernel parameters: a new value reuses the kernel, the plan and, with
``vkml.jit``, the recording (``Optimizer._jit_scalars``).

    >>> ops = adam_ops(weight=0.1, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False, maximize=False)
    >>> ops.exp_avg.op.name
    'adam_exp_avg'
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..frontend import autograd
from ..frontend import memory_format as _memory_format
from ..frontend.mutation import assign_node
from ..graph import build as lazy
from ..graph.build import const_node
from ..graph.node import Elementwise, Node, Op
from ..ir import builder as B
from ..ir import types as T
from ..nn.module import Parameter
from ..ops.cast import host_round, narrow
from ..ops.registry import REGISTRY, OpDef
from ..tensor import Tensor

_F32 = T.float32
_ELEMENTWISE = Op.ELEMENTWISE
# the registered ops' bodies: the fused formulas compute exactly what the operators' nodes compute
_add, _sub, _mul, _div = (REGISTRY[name].body for name in ("add", "sub", "mul", "div"))
_neg, _sqrt, _maximum = (REGISTRY[name].body for name in ("neg", "sqrt", "maximum"))


def _const(value: float, like):
    """A hyper-parameter inside a body: the float32 nearest to it, as a Python-number operand's parameter is."""
    with B.rounding_float_constants():
        return B.const(float(value), like.dtype)


def _op(name: str, summary: str, body, dtype: T.DType = _F32) -> Elementwise:
    """The node argument of an unregistered elementwise op of ``dtype`` (memory-only: vkml/schedule/template_disk.py).

    A float16 or bfloat16 op's body computes in float32 and its result is rounded to ``dtype`` once, by the
    kernel, as a registered op's; where the operators round a step in between, the body says so (``narrow``).
    """
    opdef = OpDef(name, "elementwise", f"{name}(...)", summary, dtypes=(dtype,), result="same", body=body)
    return Elementwise(opdef, dtype)


def node(arg: Elementwise, *sources) -> Node:
    """The elementwise node ``arg`` over ``sources`` (nodes of one shape on one device; Python floats become
    broadcast constants of that shape, so kernel parameters)."""
    first = sources[0]
    shape, device, dtype = first.shape, first.device, arg.compute
    for s in sources:
        if s.__class__ is not Node:  # a loop only where there is a number: most nodes have none
            sources = tuple([s if s.__class__ is Node else _broadcast(s, shape, device, dtype) for s in sources])
            break
    return Node(_ELEMENTWISE, sources, arg, shape, dtype, device)


# The constant nodes of the numbers a step passes, by value and device: the parameters of a step share
# each number's constant (each kernel that reads it binds it as a parameter of its own), so a parameter
# costs one broadcast per number, not a constant and a broadcast. Bounded: new values come every step.
_constants: dict = {}
_CONSTANTS_LIMIT = 64


def _broadcast(value: float, shape: tuple[int, ...], device, dtype: T.DType) -> Node:
    """``value`` as a constant of the op's dtype broadcast to ``shape``: a float32 kernel parameter, as an
    operator's number (a float16 op's too: its number is not rounded to float16)."""
    key = (value.__class__, value if value else repr(value), device, dtype)  # -0.0 is not 0.0
    scalar = _constants.get(key)
    if scalar is None:
        if len(_constants) >= _CONSTANTS_LIMIT:
            _constants.clear()
        scalar = _constants[key] = const_node(value, dtype, (), device)
    return lazy.expand_to(scalar, shape)


_TENSORS = (Tensor, Parameter)  # exactly these: a subclass of a program's own may change what an op does
_NUMBERS = (int, float)


def plain_step(group: dict, numbers: tuple[str, ...]) -> bool:
    """Whether an update may build its nodes itself: lazy mode, no memory format to carry, no grad, and the
    group's hyper-parameters named ``numbers`` Python numbers (a tensor ``lr`` takes the operators)."""
    if lazy.is_eager() or _memory_format.ACTIVE or autograd.is_grad_enabled():
        return False
    for key in numbers:
        if group[key].__class__ not in _NUMBERS:
            return False
    return True


FLOAT32 = (_F32,)
FLOATS = (_F32, T.float16, T.bfloat16)


def nodes_of(tensors: tuple, dtypes: tuple[T.DType, ...] = FLOAT32) -> tuple[Node, ...] | None:
    """The nodes of ``tensors`` where all are plain tensors of one of ``dtypes``, one shape and one device
    (None elsewhere)."""
    nodes = []
    for t in tensors:
        if t.__class__ not in _TENSORS:
            return None
        nodes.append(t.node)
    shape, device, dtype = nodes[0].shape, nodes[0].device, nodes[0].dtype
    if dtype not in dtypes:
        return None
    for n in nodes:
        if n.dtype is not dtype or n.shape != shape or n.device is not device:
            return None
    return tuple(nodes)


def assign(state: dict, key: str, node: Node) -> None:
    """``state[key]`` takes the value ``node``: the state tensor itself where it owns its storage (PyTorch's
    optimizers write their state in place, vkml/optim/optimizer.py ``_update_in_place``), a new one otherwise."""
    held = state[key]
    if held._base is None:
        assign_node(held, node)
    else:
        state[key] = Tensor(node)


class AdamOps(NamedTuple):
    """Adam's elementwise ops for one set of fixed hyper-parameters (``adam_ops``).

    - ``exp_avg(m, g[, p])``: ``lerp(m, g', 1 - beta1)`` where ``g'`` is the gradient after maximize and L2 decay;
    - ``exp_avg_sq(v, g[, p])``: ``v * beta2 + ((1 - beta2) * g') * g'``;
    - ``max_exp_avg_sq(w, v)``: ``maximum(w, v)`` (amsgrad);
    - ``param(p, m, v, neg_step_size, bias_correction2_sqrt[, decay])``: ``p * decay`` (AdamW) plus
      ``neg_step_size * m / (sqrt(v) / bias_correction2_sqrt + eps)``.

    ``p`` is a source of the first two only with L2 weight decay, ``decay`` of ``param`` only with decoupled.
    """

    exp_avg: Elementwise
    exp_avg_sq: Elementwise
    max_exp_avg_sq: Elementwise
    param: Elementwise


# The ops are memoized by value, and lru_cache keys 0.0 and -0.0 alike: a body reads a hyper-parameter that
# may be -0.0 (the checks let it through) only as a product added to a non-negative term, or as an eps added
# to a non-negative root, where the zero's sign never reaches a result.
@functools.lru_cache(maxsize=64)
def adam_ops(weight: float, beta2: float, eps: float, weight_decay: float, decoupled: bool, maximize: bool) -> AdamOps:
    """Adam's ops where ``weight`` is ``1 - beta1`` (``Adam.update``'s operators, op for op)."""
    l2 = weight_decay != 0 and not decoupled

    def gradient(g, p):
        if maximize:
            g = _neg(g)
        if l2:
            g = _add(g, _mul(_const(weight_decay, g), p))
        return g

    def exp_avg(m, g, p=None):
        g = gradient(g, p)
        if abs(weight) < 0.5:  # torch.lerp from the nearer end
            return _add(m, _mul(_const(weight, m), _sub(g, m)))
        return _sub(g, _mul(_sub(g, m), _const(1 - weight, m)))

    def exp_avg_sq(v, g, p=None):
        g = gradient(g, p)
        return _add(_mul(v, _const(beta2, v)), _mul(_mul(_const(1 - beta2, g), g), g))  # torch's addcmul order

    def param(p, m, v, neg_step_size, bias_correction2_sqrt, decay=None):
        if decay is not None:
            p = _mul(p, decay)
        denom = _add(_div(_sqrt(v), bias_correction2_sqrt), _const(eps, v))
        return _add(p, _div(_mul(neg_step_size, m), denom))

    return AdamOps(
        _op("adam_exp_avg", "Adam's first moment.", exp_avg),
        _op("adam_exp_avg_sq", "Adam's second moment.", exp_avg_sq),
        _op("adam_max_exp_avg_sq", "Adam's running maximum of the second moment (amsgrad).", _maximum),
        _op("adam_param", "Adam's new parameter.", param),
    )


class SGDOps(NamedTuple):
    """SGD's elementwise ops for one set of fixed hyper-parameters (``sgd_ops``).

    - ``gradient(g[, p])``: the gradient after maximize and weight decay (the first momentum buffer's value);
    - ``momentum_buffer(b, g[, p])``: ``b * momentum + (1 - dampening) * g'``;
    - ``param(p, d, neg_lr[, g])``: ``p + neg_lr * d`` where ``d`` is the buffer (or, without momentum,
      the gradient); with nesterov ``p + neg_lr * (g' + momentum * d)``, so ``g`` and ``p`` are sources too
      where weight decay needs ``p``.
    """

    gradient: Elementwise
    momentum_buffer: Elementwise
    param: Elementwise


@functools.lru_cache(maxsize=64)
def sgd_ops(momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> SGDOps:
    """SGD's ops (``SGD.update``'s operators, op for op)."""

    def gradient(g, p=None):
        if maximize:
            g = _neg(g)
        if weight_decay != 0:
            g = _add(g, _mul(_const(weight_decay, g), p))
        return g

    def momentum_buffer(b, g, p=None):
        g = gradient(g, p)
        return _add(_mul(b, _const(momentum, b)), _mul(_const(1 - dampening, g), g))

    def param(p, d, neg_lr, g=None):
        if nesterov:
            d = _add(gradient(g, p), _mul(_const(momentum, d), d))
        return _add(p, _mul(neg_lr, d))

    return SGDOps(
        _op("sgd_gradient", "SGD's gradient after maximize and weight decay.", gradient),
        _op("sgd_momentum_buffer", "SGD's momentum buffer.", momentum_buffer),
        _op("sgd_param", "SGD's new parameter.", param),
    )


# Float16 and bfloat16 parameters: the steps of ``Adam._update_half`` and sgd.py's ``_update_half``, where
# each of PyTorch's ops (``add`` with alpha, ``lerp_``, ``addcmul_``, ``addcdiv_``, and each plain op) computes
# in float32 and rounds once to the parameter's dtype: ``narrow`` marks those roundings inside a body (the
# kernel rounds the body's result). An alpha is rounded to the dtype first (vkml/frontend/operators.py
# ``add``), as is the number added to a tensor (``+ eps``: vkml/graph/build.py ``_scalar_operand``).


def _lerp_op(start, end, weight: float):
    """The registered ``lerp``'s body at a fixed weight (a float16 tensor's ``lerp_``)."""
    return REGISTRY["lerp"].body(start, end, _const(weight, start))


def _added_number(value: float, dtype: T.DType) -> float:
    """A Python number added to a ``dtype`` tensor, as the operators take it (float32, then ``dtype``)."""
    return host_round(float(np.float32(value)), dtype)


@functools.lru_cache(maxsize=64)
def adam_half_ops(
    dtype: T.DType, weight: float, beta2: float, eps: float, weight_decay: float, decoupled: bool, maximize: bool
) -> AdamOps:
    """``adam_ops`` for ``dtype`` (float16 or bfloat16) parameters (``Adam._update_half``'s operators)."""
    l2 = weight_decay != 0 and not decoupled
    alpha, eps = host_round(weight_decay, dtype), _added_number(eps, dtype)

    def gradient(g, p):
        if maximize:
            g = _neg(g)
        if l2:  # add(grad, param, alpha=wd)
            g = narrow(_add(g, _mul(p, _const(alpha, g))), dtype)
        return g

    def exp_avg(m, g, p=None):
        return _lerp_op(m, gradient(g, p), weight)

    def exp_avg_sq(v, g, p=None):  # addcmul(v * beta2, g, g, value=1 - beta2)
        g = gradient(g, p)
        return _add(narrow(_mul(v, _const(beta2, v)), dtype), _mul(_mul(_const(1 - beta2, g), g), g))

    def param(p, m, v, neg_step_size, bias_correction2_sqrt, decay=None):
        if decay is not None:
            p = narrow(_mul(p, decay), dtype)
        root = narrow(_sqrt(v), dtype)
        denom = narrow(_add(narrow(_div(root, bias_correction2_sqrt), dtype), _const(eps, root)), dtype)
        return _add(p, _div(_mul(neg_step_size, m), denom))  # addcdiv(p, m, denom, value=neg_step_size)

    name = dtype.name
    return AdamOps(
        _op(f"adam_exp_avg_{name}", "Adam's first moment.", exp_avg, dtype),
        _op(f"adam_exp_avg_sq_{name}", "Adam's second moment.", exp_avg_sq, dtype),
        _op(f"adam_max_exp_avg_sq_{name}", "Adam's running maximum (amsgrad).", _maximum, dtype),
        _op(f"adam_param_{name}", "Adam's new parameter.", param, dtype),
    )


@functools.lru_cache(maxsize=64)
def sgd_half_ops(
    dtype: T.DType, momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool
) -> SGDOps:
    """``sgd_ops`` for ``dtype`` parameters (sgd.py's ``_update_half``): ``param``'s number is the learning
    rate's alpha, ``host_round(-lr, dtype)``."""
    decay, damped, nesterov_alpha = (host_round(x, dtype) for x in (weight_decay, 1 - dampening, momentum))

    def gradient(g, p=None):
        if maximize:
            g = _neg(g)
        if weight_decay != 0:  # add(grad, param, alpha=wd)
            g = narrow(_add(g, _mul(p, _const(decay, g))), dtype)
        return g

    def momentum_buffer(b, g, p=None):  # add(b * momentum, g', alpha=1 - dampening)
        g = gradient(g, p)
        return _add(narrow(_mul(b, _const(momentum, b)), dtype), _mul(g, _const(damped, g)))

    def param(p, d, neg_lr, g=None):
        if nesterov:  # add(g', buf, alpha=momentum)
            d = narrow(_add(gradient(g, p), _mul(d, _const(nesterov_alpha, d))), dtype)
        return _add(p, _mul(d, neg_lr))  # add(p, d, alpha=-lr)

    name = dtype.name
    return SGDOps(
        _op(f"sgd_gradient_{name}", "SGD's gradient after maximize and weight decay.", gradient, dtype),
        _op(f"sgd_momentum_buffer_{name}", "SGD's momentum buffer.", momentum_buffer, dtype),
        _op(f"sgd_param_{name}", "SGD's new parameter.", param, dtype),
    )


def _gradient_body(weight_decay: float, maximize: bool):
    """``g -> -g`` under maximize, then ``+ weight_decay * p`` (L2): the gradient an update descends along."""

    def gradient(g, p=None):
        if maximize:
            g = _neg(g)
        if weight_decay != 0:
            g = _add(g, _mul(_const(weight_decay, g), p))
        return g

    return gradient


def _lerp(start, end, weight: float):
    """``torch.lerp(start, end, weight)`` for a fixed weight, from the nearer end (vkml/optim/adam.py ``lerp``)."""
    if abs(weight) < 0.5:
        return _add(start, _mul(_const(weight, start), _sub(end, start)))
    return _sub(end, _mul(_sub(end, start), _const(1 - weight, start)))


class RMSpropOps(NamedTuple):
    """RMSprop's elementwise ops for one set of fixed hyper-parameters (``rmsprop_ops``); ``g'`` is the gradient
    after maximize and weight decay (``p`` a source wherever ``g`` is, with weight decay).

    - ``square_avg(s, g[, p])``: ``s * alpha + ((1 - alpha) * g') * g'``;
    - ``grad_avg(a, g[, p])``: ``lerp(a, g', 1 - alpha)`` (centered);
    - ``momentum_buffer(b, s', [a',] g[, p])``: ``b * momentum + g' / avg`` where ``avg`` is ``sqrt(s')``
      (centered: ``sqrt(s' - a' * a')``) plus eps;
    - ``param(p, b', neg_lr)`` with momentum, else ``param(p, s', [a',] neg_lr, g)``: ``p + neg_lr * b'``, or
      ``p + (neg_lr * g') / avg``.
    """

    square_avg: Elementwise
    grad_avg: Elementwise
    momentum_buffer: Elementwise
    param: Elementwise


@functools.lru_cache(maxsize=64)
def rmsprop_ops(
    alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool
) -> RMSpropOps:
    """RMSprop's ops (``RMSprop.update``'s operators, op for op)."""
    gradient = _gradient_body(weight_decay, maximize)

    def avg(s, a):
        root = _sqrt(_sub(s, _mul(a, a))) if centered else _sqrt(s)  # torch's addcmul(value=-1): the same bits
        return _add(root, _const(eps, root))

    def square_avg(s, g, p=None):
        g = gradient(g, p)
        return _add(_mul(s, _const(alpha, s)), _mul(_mul(_const(1 - alpha, g), g), g))

    def grad_avg(a, g, p=None):
        return _lerp(a, gradient(g, p), 1 - alpha)

    def momentum_buffer(b, s, *rest):
        a, (g, *p) = (rest[0], rest[1:]) if centered else (None, rest)
        return _add(_mul(b, _const(momentum, b)), _div(gradient(g, *p), avg(s, a)))

    def param(p, *rest):
        if momentum > 0:
            buf, neg_lr = rest
            return _add(p, _mul(neg_lr, buf))
        s, *rest = rest
        a, (neg_lr, g) = (rest[0], rest[1:]) if centered else (None, rest)
        return _add(p, _div(_mul(neg_lr, gradient(g, p)), avg(s, a)))

    return RMSpropOps(
        _op("rmsprop_square_avg", "RMSprop's running mean of the squared gradient.", square_avg),
        _op("rmsprop_grad_avg", "RMSprop's running mean of the gradient (centered).", grad_avg),
        _op("rmsprop_momentum_buffer", "RMSprop's momentum buffer.", momentum_buffer),
        _op("rmsprop_param", "RMSprop's new parameter.", param),
    )


class AdagradOps(NamedTuple):
    """Adagrad's elementwise ops for one set of fixed hyper-parameters (``adagrad_ops``):
    ``sum(s, g[, p])``: ``s + g' * g'``; ``param(p, s', neg_clr, g)``: ``p + (neg_clr * g') / (sqrt(s') + eps)``."""

    sum: Elementwise
    param: Elementwise


@functools.lru_cache(maxsize=64)
def adagrad_ops(eps: float, weight_decay: float, maximize: bool) -> AdagradOps:
    """Adagrad's ops (``Adagrad.update``'s dense operators, op for op)."""
    gradient = _gradient_body(weight_decay, maximize)

    def sum_(s, g, p=None):
        g = gradient(g, p)
        return _add(s, _mul(g, g))

    def param(p, s, neg_clr, g):
        root = _sqrt(s)
        return _add(p, _div(_mul(neg_clr, gradient(g, p)), _add(root, _const(eps, root))))

    return AdagradOps(
        _op("adagrad_sum", "Adagrad's sum of squared gradients.", sum_),
        _op("adagrad_param", "Adagrad's new parameter.", param),
    )


@functools.lru_cache(maxsize=64)
def rmsprop_half_ops(
    dtype: T.DType, alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool
) -> RMSpropOps:
    """``rmsprop_ops`` for ``dtype`` parameters (rmsprop.py's ``_update_half``): ``param``'s number is
    ``host_round(-lr, dtype)`` with momentum (an alpha), ``-lr`` without (addcdiv's value)."""
    decay, eps = host_round(weight_decay, dtype), _added_number(eps, dtype)

    def gradient(g, p=None):
        if maximize:
            g = _neg(g)
        if weight_decay != 0:  # add(grad, param, alpha=wd)
            g = narrow(_add(g, _mul(p, _const(decay, g))), dtype)
        return g

    def avg(s, a):
        if centered:  # addcmul(s, a, a, value=-1).sqrt()
            root = _sqrt(narrow(_add(s, _mul(_mul(_const(-1.0, a), a), a)), dtype))
        else:
            root = _sqrt(s)
        return narrow(_add(narrow(root, dtype), _const(eps, root)), dtype)

    def square_avg(s, g, p=None):  # addcmul(s * alpha, g', g', value=1 - alpha)
        g = gradient(g, p)
        return _add(narrow(_mul(s, _const(alpha, s)), dtype), _mul(_mul(_const(1 - alpha, g), g), g))

    def grad_avg(a, g, p=None):
        return _lerp_op(a, gradient(g, p), 1 - alpha)

    def momentum_buffer(b, s, *rest):  # addcdiv(b * momentum, g', avg)
        a, (g, *p) = (rest[0], rest[1:]) if centered else (None, rest)
        scaled = narrow(_mul(b, _const(momentum, b)), dtype)
        return _add(scaled, _div(_mul(_const(1.0, b), gradient(g, *p)), avg(s, a)))

    def param(p, *rest):
        if momentum > 0:  # add(p, buf, alpha=-lr)
            buf, neg_lr = rest
            return _add(p, _mul(buf, neg_lr))
        s, *rest = rest
        a, (neg_lr, g) = (rest[0], rest[1:]) if centered else (None, rest)
        return _add(p, _div(_mul(neg_lr, gradient(g, p)), avg(s, a)))  # addcdiv(p, g', avg, value=-lr)

    name = dtype.name
    return RMSpropOps(
        _op(f"rmsprop_square_avg_{name}", "RMSprop's running mean of the squared gradient.", square_avg, dtype),
        _op(f"rmsprop_grad_avg_{name}", "RMSprop's running mean of the gradient (centered).", grad_avg, dtype),
        _op(f"rmsprop_momentum_buffer_{name}", "RMSprop's momentum buffer.", momentum_buffer, dtype),
        _op(f"rmsprop_param_{name}", "RMSprop's new parameter.", param, dtype),
    )


@functools.lru_cache(maxsize=64)
def adagrad_half_ops(dtype: T.DType, eps: float, weight_decay: float, maximize: bool) -> AdagradOps:
    """``adagrad_ops`` for ``dtype`` parameters (``Adagrad.update``'s half-precision operators)."""
    decay, eps = host_round(weight_decay, dtype), _added_number(eps, dtype)

    def gradient(g, p=None):
        if maximize:
            g = _neg(g)
        if weight_decay != 0:  # add(grad, param, alpha=wd)
            g = narrow(_add(g, _mul(p, _const(decay, g))), dtype)
        return g

    def sum_(s, g, p=None):  # addcmul(s, g', g', value=1)
        g = gradient(g, p)
        return _add(s, _mul(_mul(_const(1.0, g), g), g))

    def param(p, s, neg_clr, g):  # addcdiv(p, g', sqrt(s) + eps, value=-clr)
        root = narrow(_sqrt(s), dtype)
        denom = narrow(_add(root, _const(eps, root)), dtype)
        return _add(p, _div(_mul(neg_clr, gradient(g, p)), denom))

    name = dtype.name
    return AdagradOps(
        _op(f"adagrad_sum_{name}", "Adagrad's sum of squared gradients.", sum_, dtype),
        _op(f"adagrad_param_{name}", "Adagrad's new parameter.", param, dtype),
    )
