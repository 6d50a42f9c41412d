"""The common optimizers' steps, per element: the bodies of the fused optimizer ops (vkml/optim/fused.py).

Each formula is ``Adam.update``'s, ``SGD.update``'s, ``RMSprop.update``'s or ``Adagrad.update``'s arithmetic
(vkml/optim/), op for op as the operators compute it: the registered ops' own bodies, in the same order
and on the same operands, rounded to float16 or bfloat16 where the operators round (``narrow``). A
factory takes the fixed hyper-parameters (constants of the body) and gives one body per new tensor; the
numbers that change between steps are the bodies' operands (kernel parameters).

They live here, beside the registered ops, because what lowering reads is hashed into the template
store's key (vkml/runtime/vulkan/template_store.py, ``LOWERING_SOURCES``): a ``StepBody`` names its
formula and settings, which with these sources is all its kernel depends on, so a group of these ops has
a template text that is the same in every process and is kept on disk (vkml/schedule/template_disk.py),
as a group of registered ops is. They are no registered ops: nothing calls them but the optimizers.

    >>> settings = (0.9, 0.0, 0.0, False, False)  # momentum, dampening, weight decay, nesterov, maximize
    >>> sorted(bodies("sgd", settings))
    ['gradient', 'momentum_buffer', 'param']
    >>> StepBody("sgd", settings, "param") == StepBody("sgd", settings, "param")
    True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..ir import builder as B
from ..ir import types as T
from .cast import host_round, narrow
from .registry import REGISTRY, OpDef

# the registered ops' bodies: the fused formulas compute exactly what the operators' nodes compute
_add, _sub, _mul, _div = (REGISTRY[name].body for name in ("add", "sub", "mul", "div"))
_neg, _sqrt, _maximum = (REGISTRY[name].body for name in ("neg", "sqrt", "maximum"))


def _const(value: float, like):
    """A hyper-parameter inside a body: the float32 nearest to it, as a Python-number operand's parameter is."""
    with B.rounding_float_constants():
        return B.const(float(value), like.dtype)


def adam(weight: float, beta2: float, eps: float, weight_decay: float, decoupled: bool, maximize: bool) -> dict:
    """Adam's bodies where ``weight`` is ``1 - beta1`` (``Adam.update``'s operators, op for op)."""
    l2 = weight_decay != 0 and not decoupled
    gradient = _gradient_body(weight_decay if l2 else 0.0, maximize)

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

    return {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq, "max_exp_avg_sq": _maximum, "param": param}


def sgd(momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> dict:
    """SGD's bodies (``SGD.update``'s operators, op for op)."""

    gradient = _gradient_body(weight_decay, maximize)

    def momentum_buffer(b, g, p=None):
        g = gradient(g, p)
        return _add(_mul(b, _const(momentum, b)), _mul(_const(1 - dampening, g), g))

    def param(p, d, neg_lr, g=None):
        if nesterov:
            d = _add(gradient(g, p), _mul(_const(momentum, d), d))
        return _add(p, _mul(neg_lr, d))

    return {"gradient": gradient, "momentum_buffer": momentum_buffer, "param": param}


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


def adam_half(
    dtype: T.DType, weight: float, beta2: float, eps: float, weight_decay: float, decoupled: bool, maximize: bool
) -> dict:
    """``adam``'s bodies for ``dtype`` (float16 or bfloat16) parameters (``Adam._update_half``'s operators)."""
    l2 = weight_decay != 0 and not decoupled
    alpha, eps = host_round(weight_decay, dtype), _added_number(eps, dtype)

    gradient = _half_gradient_body(alpha, l2, dtype, maximize)

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

    return {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq, "max_exp_avg_sq": _maximum, "param": param}


def sgd_half(
    dtype: T.DType, momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool
) -> dict:
    """``sgd``'s bodies for ``dtype`` parameters (sgd.py's ``_update_half``): ``param``'s number is the learning
    rate's alpha, ``host_round(-lr, dtype)``."""
    decay, damped, nesterov_alpha = (host_round(x, dtype) for x in (weight_decay, 1 - dampening, momentum))

    gradient = _half_gradient_body(decay, weight_decay != 0, dtype, maximize)

    def momentum_buffer(b, g, p=None):  # add(b * momentum, g', alpha=1 - dampening)
        g = gradient(g, p)
        return _add(narrow(_mul(b, _const(momentum, b)), dtype), _mul(g, _const(damped, g)))

    def param(p, d, neg_lr, g=None):
        if nesterov:  # add(g', buf, alpha=momentum)
            d = narrow(_add(gradient(g, p), _mul(d, _const(nesterov_alpha, d))), dtype)
        return _add(p, _mul(d, neg_lr))  # add(p, d, alpha=-lr)

    return {"gradient": gradient, "momentum_buffer": momentum_buffer, "param": param}


def _gradient_body(weight_decay: float, maximize: bool):
    """``g -> -g`` under maximize, then ``+ weight_decay * p`` (L2): the gradient an update descends along."""

    def gradient(g, p=None):
        if maximize:
            g = _neg(g)
        if weight_decay != 0:
            g = _add(g, _mul(_const(weight_decay, g), p))
        return g

    return gradient


def _half_gradient_body(decay: float, l2: bool, dtype: T.DType, maximize: bool):
    """``_gradient_body`` for ``dtype`` parameters: with ``l2`` the term ``add(grad, param, alpha=decay)``
    (``decay`` the weight decay rounded to ``dtype``, added even where that rounding gave 0), rounded to
    ``dtype``."""

    def gradient(g, p=None):
        if maximize:
            g = _neg(g)
        if l2:
            g = narrow(_add(g, _mul(p, _const(decay, g))), dtype)
        return g

    return gradient


def _lerp(start, end, weight: float):
    """``torch.lerp(start, end, weight)`` for a fixed weight, from the nearer end (vkml/optim/adam.py ``lerp``)."""
    if abs(weight) < 0.5:
        return _add(start, _mul(_const(weight, start), _sub(end, start)))
    return _sub(end, _mul(_sub(end, start), _const(1 - weight, start)))


def rmsprop(alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool) -> dict:
    """RMSprop's bodies (``RMSprop.update``'s operators, op for op)."""
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

    return {"square_avg": square_avg, "grad_avg": grad_avg, "momentum_buffer": momentum_buffer, "param": param}


def adagrad(eps: float, weight_decay: float, maximize: bool) -> dict:
    """Adagrad's bodies (``Adagrad.update``'s dense operators, op for op)."""
    gradient = _gradient_body(weight_decay, maximize)

    def sum_(s, g, p=None):
        g = gradient(g, p)
        return _add(s, _mul(g, g))

    def param(p, s, neg_clr, g):
        root = _sqrt(s)
        return _add(p, _div(_mul(neg_clr, gradient(g, p)), _add(root, _const(eps, root))))

    return {"sum": sum_, "param": param}


def rmsprop_half(
    dtype: T.DType, alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool
) -> dict:
    """``rmsprop``'s bodies for ``dtype`` parameters (rmsprop.py's ``_update_half``): ``param``'s number is
    ``host_round(-lr, dtype)`` with momentum (an alpha), ``-lr`` without (addcdiv's value)."""
    decay, eps = host_round(weight_decay, dtype), _added_number(eps, dtype)

    gradient = _half_gradient_body(decay, weight_decay != 0, dtype, maximize)

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

    return {"square_avg": square_avg, "grad_avg": grad_avg, "momentum_buffer": momentum_buffer, "param": param}


def adagrad_half(dtype: T.DType, eps: float, weight_decay: float, maximize: bool) -> dict:
    """``adagrad``'s bodies for ``dtype`` parameters (``Adagrad.update``'s half-precision operators)."""
    decay, eps = host_round(weight_decay, dtype), _added_number(eps, dtype)

    gradient = _half_gradient_body(decay, weight_decay != 0, dtype, maximize)

    def sum_(s, g, p=None):  # addcmul(s, g', g', value=1)
        g = gradient(g, p)
        return _add(s, _mul(_mul(_const(1.0, g), g), g))

    def param(p, s, neg_clr, g):  # addcdiv(p, g', sqrt(s) + eps, value=-clr)
        root = narrow(_sqrt(s), dtype)
        denom = narrow(_add(root, _const(eps, root)), dtype)
        return _add(p, _div(_mul(neg_clr, gradient(g, p)), denom))

    return {"sum": sum_, "param": param}


FORMULAS = {
    "adam": adam,
    "adam_half": adam_half,
    "sgd": sgd,
    "sgd_half": sgd_half,
    "rmsprop": rmsprop,
    "rmsprop_half": rmsprop_half,
    "adagrad": adagrad,
    "adagrad_half": adagrad_half,
}


# Memoized by value, and lru_cache keys 0.0 and -0.0 alike: a body reads a hyper-parameter that may be -0.0
# (the checks let it through) only as a product added to a non-negative term, or as an eps added to a
# non-negative root, where the zero's sign never reaches a result.
@functools.lru_cache(maxsize=256)
def bodies(formula: str, settings: tuple) -> dict:
    """``FORMULAS[formula](*settings)``: the bodies of one optimizer's new tensors, by name."""
    return FORMULAS[formula](*settings)


@dataclass(frozen=True)
class StepBody:
    """The body of one new tensor of an optimizer's fused step: ``bodies(formula, settings)[output]``.

    Its fields are all it depends on besides this file's code, so the template store describes it by them."""

    formula: str
    settings: tuple
    output: str

    def __call__(self, *values):
        return bodies(self.formula, self.settings)[self.output](*values)


@dataclass(frozen=True, eq=False)
class StepOpDef(OpDef):
    """An optimizer step's elementwise op (``body`` a ``StepBody``): compared by identity as every ``OpDef``,
    described on disk by its fields where a registered op is by its name."""
