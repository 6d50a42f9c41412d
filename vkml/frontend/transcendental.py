"""The trigonometric, error-function and gamma operators that check their arguments first (atan2, logit,
polygamma), and the ``vkml.special`` namespace (PyTorch's ``torch.special``).

Each function records one registered elementwise op (vkml/ops/transcendental.py); ``EXPORTS`` says how
users reach it (vkml/frontend/public.py binds it). The plain ones (sin ... digamma and their ``arc*``
aliases) have no code here: their OpDefs declare their public names.
"""

from __future__ import annotations

import types

import numpy as np

from ..ir import types as T
from ..ops import grads as _grads
from ..ops.mathlib.zeta import log_factorial
from . import autograd, public
from . import operators as F
from . import pointwise as _pointwise
from . import special_functions as _special_functions
from .exports import Export
from .operators import _binary, _elementwise, _tensor_node
from .out_arg import with_out

_atan2 = _binary("atan2")


def atan2(input, other):
    """The angle of the point (other, input) in (-pi, pi], broadcast; see docs/ops/atan2.md.

    As PyTorch, both operands must be tensors (a Python number is a TypeError).
    """
    for position, (name, x) in enumerate((("input", input), ("other", other))):
        if not isinstance(x, F._tensor.Tensor):
            raise TypeError(
                f"atan2(): argument '{name}' (position {position + 1}) must be Tensor, not {type(x).__name__}"
            )
    return _atan2(input, other)


def polygamma(n, input):
    """The n-th derivative of digamma: n = 0 is digamma, n = 1 trigamma; see docs/ops/trigamma.md.

    n >= 2: (-1)^(n+1) n! zeta(n + 1, x); see docs/ops/polygamma.md.
    """
    if type(n) is not int:
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return _elementwise("digamma", input)
    if n == 1:
        return _elementwise("trigamma", input)
    # n + 1 and n! (as its logarithm, a float32 pair) are parameters: one kernel serves every n
    return _elementwise("polygamma", input, float(n + 1), *log_factorial(n))


def zeta(input, other):
    """The Hurwitz zeta function zeta(x, q) = sum_{k >= 0} (q + k)^-x (torch.special.zeta); see docs/ops/zeta.md.

    As PyTorch, either operand may be a Python number, not both.
    """
    if not isinstance(input, F._tensor.Tensor) and not isinstance(other, F._tensor.Tensor):
        raise TypeError("zeta(): at least one of 'self' and 'other' must be a Tensor")
    return _elementwise("zeta", input, other)


def _polygamma_method(self, n):
    return polygamma(n, self)


arctan2 = atan2  # PyTorch's numpy-style alias (arcsin ... are OpDef.public aliases)


def logit(input, eps: float | None = None):
    """``log(p / (1 - p))`` with ``p = input`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given.

    As PyTorch: ``eps=None`` (or a negative eps) clamps nothing; the bounds are ``eps`` and ``1 - eps``
    in the input's float dtype. See docs/ops/logit.md.
    """
    node = _tensor_node("logit", input)
    if eps is not None and not isinstance(eps, (int, float)):
        raise TypeError(f"logit(): argument 'eps' must be float, not {type(eps).__name__}")
    if eps is None or eps < 0:
        lo, hi = float("-inf"), float("inf")
    else:
        kind = {T.float16: np.float16, T.float64: np.float64}.get(node.dtype, np.float32)
        lo = kind(eps)
        hi = float(kind(kind(1.0) - lo))
        lo = float(lo)
    if node.dtype in F.HALF_PRECISION:
        return _half_logit(input, lo, hi)
    return _elementwise("logit", input, lo, hi)


def _half_logit(input, lo: float, hi: float):
    """PyTorch's float16/bfloat16 kernel: ``log(x / (1 - x))`` op for op in the dtype (each rounding) on
    the clamped input; the gradient is the logit op's own rule (``g / (x · (1 - x))`` in the dtype)."""
    x = input.detach()
    if lo != float("-inf"):
        x = F.clamp(x, min=lo, max=hi)
    out = F.log(x / (1.0 - x))
    if not (input.requires_grad and autograd.is_grad_enabled()):
        return out
    return autograd.record("half_logit", (input,), out, {"lo": lo, "hi": hi})


def _grad_half_logit(c):
    (x,) = c.inputs
    d = c.g / (x * (1 - x))
    return (c.F.where((x < c.attrs["lo"]) | (x > c.attrs["hi"]), 0.0, d),)


_grads.RULES["half_logit"] = _grad_half_logit


# The public names of the ops defined here: each is vkml.<name>, Tensor.<name> and Tensor.<name>_, as in
# PyTorch; ``x.polygamma(n)`` takes n after the tensor, the function before it. sin ... digamma, whose
# public function is the plain one, declare theirs in their OpDef (vkml/ops/transcendental.py).
EXPORTS = (
    Export("atan2", method=True, inplace=True),
    Export("arctan2", method=True, inplace=True),
    Export("logit", method=True, inplace=True),
    Export("polygamma", method=_polygamma_method, inplace=True),
)


def _special_namespace() -> types.ModuleType:
    """``vkml.special``: the functions of ``torch.special`` that vkml has, under PyTorch's names."""
    ns = types.ModuleType("vkml.special", "PyTorch's torch.special names for the vkml functions that exist.")
    names = {
        "expit": F.sigmoid,
        "logit": logit,
        "erf": public.function("erf"),
        "erfc": public.function("erfc"),
        "erfinv": public.function("erfinv"),
        "expm1": public.function("expm1"),
        "exp2": public.function("exp2"),
        "log1p": public.function("log1p"),
        "sinc": public.function("sinc"),
        "gammaln": public.function("lgamma"),
        "digamma": public.function("digamma"),
        "psi": public.function("digamma"),
        "polygamma": polygamma,
        "zeta": zeta,
        "xlogy": public.function("xlogy"),
        "round": _pointwise.round,
        "logsumexp": F.logsumexp,
        "softmax": F.softmax,
        "log_softmax": F.log_softmax,
    }
    # PyTorch's special functions take out= (all but softmax and log_softmax); SPECIAL's already do
    names = {n: fn if n in ("softmax", "log_softmax") else with_out(fn, n) for n, fn in names.items()}
    names.update(_special_functions.SPECIAL)  # ndtr ... the orthogonal polynomials
    for name, fn in names.items():
        setattr(ns, name, fn)
    ns.__all__ = sorted(names)
    return ns


special = _special_namespace()
