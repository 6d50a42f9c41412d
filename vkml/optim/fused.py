"""The common optimizers' steps as a few elementwise nodes per parameter (bodies: vkml/ops/optim_steps.py).

``Adam.update`` and ``SGD.update`` written with operators build a dozen nodes per parameter at every step
(each Python-number operand a constant and its broadcast besides), and each node costs the host its Python
work again in the plan lookup. Here each state tensor's new value is ONE elementwise node whose body is the
whole formula, written once in vkml/ops/optim_steps.py op for op as the operators compute it (the registered
ops' own bodies, in the same order and on the same operands, rounded to float16 or bfloat16 where they
round), so the fused kernel the scheduler
makes of them is the operators' kernel: the same bits on every device. Adam, AdamW, SGD, RMSprop and
Adagrad take float32, float16 and bfloat16 parameters here (every other case takes the operators).

The hyper-parameters a training run keeps fixed (betas, eps, momentum, dampening, L2 weight decay,
maximize, nesterov) are constants of the body, one set of ``OpDef``s per distinct set of values (memoized:
the same set is the same op, so the plan of one step is the plan of the next). The numbers that change
between steps (Adam's ``-lr / (1 - beta1^step)`` and ``sqrt(1 - beta2^step)``, the learning rate, AdamW's
``1 - lr * wd``) are constant nodes, so kernel parameters: a new value reuses the kernel, the plan and, with
``vkml.jit``, the recording (``Optimizer._jit_scalars``). A fresh process reads the groups' kernels from the
template store, as for registered ops (``StepOpDef``).

    >>> ops = adam_ops(weight=0.1, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False, maximize=False)
    >>> ops.exp_avg.op.name
    'adam_exp_avg'
"""

from __future__ import annotations

import functools
import operator
from typing import NamedTuple

from ..frontend import autograd
from ..frontend import memory_format as _memory_format
from ..frontend.mutation import assign_node
from ..graph import build as lazy
from ..graph.build import const_node, stepping_const_node
from ..graph.node import Elementwise, Node, Op
from ..ir import types as T
from ..nn.module import Parameter
from ..ops import optim_steps
from ..tensor import Tensor

_F32 = T.float32
_ELEMENTWISE = Op.ELEMENTWISE


def _ops(kind: type, formula: str, settings: tuple, dtype: T.DType = _F32):
    """``kind`` (a named tuple of ``Elementwise``) of the bodies ``formula`` makes of ``settings``
    (vkml/ops/optim_steps.py), as ops of ``dtype``: unregistered elementwise ops whose templates the disk
    keeps (``StepOpDef``). A float16 or bfloat16 op's body computes in float32 and its result is rounded to
    ``dtype`` once, by the kernel, as a registered op's."""
    suffix = "" if dtype is _F32 else f"_{dtype.name}"
    ops = []
    for output in kind._fields:
        name = f"{formula.removesuffix('_half')}_{output}{suffix}"
        body = optim_steps.StepBody(formula, settings, output)
        summary = f"{kind.__name__.removesuffix('Ops')}'s {output.replace('_', ' ')}."
        opdef = optim_steps.StepOpDef(name, "elementwise", f"{name}(...)", summary, (dtype,), "same", body)
        ops.append(Elementwise(opdef, dtype))
    return kind(*ops)


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


class StepScalar(float):
    """A number of ``node``'s sources that changes on every step (Adam's ``-lr / (1 - beta1^step)`` and
    ``sqrt(1 - beta2^step)``): its constant is a ``Stepping`` one, which eager replays read from a ring
    buffer from the plan's first realize on (vkml/schedule/eager_scalars.py). The same value and bits."""

    __slots__ = ()


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
        if value.__class__ is StepScalar:
            scalar = _constants[key] = stepping_const_node(float(value), dtype, device)
        else:
            scalar = _constants[key] = const_node(value, dtype, (), device)
    return lazy.expand_to(scalar, shape)


_TENSORS = (Tensor, Parameter)  # exactly these: a subclass of a program's own may change what an op does
_NUMBERS = (int, float)


def plain_step(group: dict, numbers: tuple[str, ...]) -> bool:
    """Whether an update may build its nodes itself: lazy mode, no grad, and the group's hyper-parameters named
    ``numbers`` Python numbers (a tensor ``lr`` takes the operators)."""
    if lazy.is_eager() or autograd.is_grad_enabled():
        return False
    for key in numbers:
        if group[key].__class__ not in _NUMBERS:
            return False
    return True


FLOAT32 = (_F32,)
FLOATS = (_F32, T.float16, T.bfloat16)


def nodes_of(tensors: tuple, dtypes: tuple[T.DType, ...] = FLOAT32) -> tuple[Node, ...] | None:
    """The nodes of ``tensors`` where all are plain tensors of one of ``dtypes``, one shape and one device,
    none with a channels-last format to carry (None elsewhere: the operators keep the formats)."""
    nodes = []
    formats = _memory_format.ACTIVE
    for t in tensors:
        if t.__class__ not in _TENSORS or (formats and _memory_format.format_of(t) is not None):
            return None
        nodes.append(t._node if t._base is None else t.node)  # Tensor.node, inlined for an owner
    kinds = list(map(_kind_of, nodes))  # (dtype, shape, device) of each, compared in C: every parameter, every step
    if kinds[0][0] not in dtypes or kinds.count(kinds[0]) != len(kinds):
        return None
    return tuple(nodes)


_kind_of = operator.attrgetter("dtype", "shape", "device")


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


class AdagradOps(NamedTuple):
    """Adagrad's elementwise ops for one set of fixed hyper-parameters (``adagrad_ops``):
    ``sum(s, g[, p])``: ``s + g' * g'``; ``param(p, s', neg_clr, g)``: ``p + (neg_clr * g') / (sqrt(s') + eps)``."""

    sum: Elementwise
    param: Elementwise


@functools.lru_cache(maxsize=64)
def adam_ops(weight: float, beta2: float, eps: float, weight_decay: float, decoupled: bool, maximize: bool) -> AdamOps:
    """Adam's ops where ``weight`` is ``1 - beta1`` (``Adam.update``'s operators, op for op)."""
    return _ops(AdamOps, "adam", (weight, beta2, eps, weight_decay, decoupled, maximize))


@functools.lru_cache(maxsize=64)
def adam_half_ops(
    dtype: T.DType, weight: float, beta2: float, eps: float, weight_decay: float, decoupled: bool, maximize: bool
) -> AdamOps:
    """``adam_ops`` for ``dtype`` (float16 or bfloat16) parameters (``Adam._update_half``'s operators)."""
    return _ops(AdamOps, "adam_half", (dtype, weight, beta2, eps, weight_decay, decoupled, maximize), dtype)


@functools.lru_cache(maxsize=64)
def sgd_ops(momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> SGDOps:
    """SGD's ops (``SGD.update``'s operators, op for op)."""
    return _ops(SGDOps, "sgd", (momentum, dampening, weight_decay, nesterov, maximize))


@functools.lru_cache(maxsize=64)
def sgd_half_ops(
    dtype: T.DType, momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool
) -> SGDOps:
    """``sgd_ops`` for ``dtype`` parameters (sgd.py's ``_update_half``): ``param``'s number is the learning
    rate's alpha, ``host_round(-lr, dtype)``."""
    return _ops(SGDOps, "sgd_half", (dtype, momentum, dampening, weight_decay, nesterov, maximize), dtype)


@functools.lru_cache(maxsize=64)
def rmsprop_ops(
    alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool
) -> RMSpropOps:
    """RMSprop's ops (``RMSprop.update``'s operators, op for op)."""
    return _ops(RMSpropOps, "rmsprop", (alpha, eps, weight_decay, momentum, centered, maximize))


@functools.lru_cache(maxsize=64)
def rmsprop_half_ops(
    dtype: T.DType, alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool
) -> RMSpropOps:
    """``rmsprop_ops`` for ``dtype`` parameters (rmsprop.py's ``_update_half``): ``param``'s number is
    ``host_round(-lr, dtype)`` with momentum (an alpha), ``-lr`` without (addcdiv's value)."""
    settings = (dtype, alpha, eps, weight_decay, momentum, centered, maximize)
    return _ops(RMSpropOps, "rmsprop_half", settings, dtype)


@functools.lru_cache(maxsize=64)
def adagrad_ops(eps: float, weight_decay: float, maximize: bool) -> AdagradOps:
    """Adagrad's ops (``Adagrad.update``'s dense operators, op for op)."""
    return _ops(AdagradOps, "adagrad", (eps, weight_decay, maximize))


@functools.lru_cache(maxsize=64)
def adagrad_half_ops(dtype: T.DType, eps: float, weight_decay: float, maximize: bool) -> AdagradOps:
    """``adagrad_ops`` for ``dtype`` parameters (``Adagrad.update``'s half-precision operators)."""
    return _ops(AdagradOps, "adagrad_half", (dtype, eps, weight_decay, maximize), dtype)
