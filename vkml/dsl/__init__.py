"""The DSL for custom operators: the functions a ``@vkml.elementwise`` body or a ``@vkml.kernel`` may use.

A body is a Python function over IR values. Arithmetic (``+ - * /``, unary ``-``), comparisons
(``< <= > >=``) and ``& | ~`` work on the values directly; everything else is here. These
are the very definitions vkml's own operators use: ``dsl.exp`` is ``vkml.exp``'s body (the
math library's exact decomposition), ``dsl.maximum`` is ``vkml.maximum``'s, so a custom op
gives the same bits as the built-in composition it replaces.

    >>> import vkml
    >>> from vkml import dsl
    >>> @vkml.elementwise
    ... def softclip(x, lo, hi):
    ...     return dsl.minimum(dsl.maximum(x, lo), hi)
    >>> softclip(vkml.tensor([-2.0, 0.5, 3.0]), -1.0, 1.0).tolist()
    [-1.0, 0.5, 1.0]

Python control flow cannot look at an IR value: ``if x > 0:`` raises and points at the
line. Use ``dsl.where(cond, a, b)`` (both sides are computed, one is selected), or in a
general kernel ``with dsl.if_(cond):`` and ``dsl.loop``/``dsl.range_``.

The functions marked *differentiable* below are the ones automatic gradients understand
(vkml.dsl.autodiff); the kernel-only functions (index space, shared memory, barriers,
subgroups, structured control flow) and the bit-level ones are not, and a body that uses
them needs ``backward=``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..ir import builder as _B
from ..ir.types import bool_, float16, float32, int32, int64, uint32
from ..ops import mathlib as _M
from ..ops.registry import REGISTRY as _REGISTRY
from . import autodiff as _AD
from . import kernel as _kernel

# ---------------------------------------------------------------- differentiable math


def exp(x):
    """e**x (≤ 1 ulp). Example: ``dsl.exp(-x * x)``. Differentiable."""
    return _AD.apply("exp", x)


def exp2(x):
    """2**x (≤ 1 ulp). Differentiable."""
    return _AD.apply("exp2", x)


def expm1(x):
    """e**x - 1, accurate near 0 (≤ 1 ulp). Differentiable."""
    return _AD.apply("expm1", x)


def log(x):
    """Natural logarithm (≤ 1 ulp). Differentiable."""
    return _AD.apply("log", x)


def log2(x):
    """Base-2 logarithm (≤ 1 ulp). Differentiable."""
    return _AD.apply("log2", x)


def log1p(x):
    """log(1 + x), accurate near 0 (≤ 1 ulp). Differentiable."""
    return _AD.apply("log1p", x)


def sqrt(x):
    """Square root, correctly rounded. Differentiable."""
    return _AD.apply("sqrt", x)


def rsqrt(x):
    """1 / sqrt(x), as torch.rsqrt. Differentiable."""
    return _AD.apply("rsqrt", x)


def tanh(x):
    """Hyperbolic tangent (≤ 2 ulp). Differentiable."""
    return _AD.apply("tanh", x)


def sigmoid(x):
    """1 / (1 + exp(-x)) (≤ 2 ulp). Differentiable."""
    return _AD.apply("sigmoid", x)


def erf(x):
    """The error function (≤ 2 ulp). Differentiable."""
    return _AD.apply("erf", x)


def gelu(x):
    """x * Phi(x), the exact erf form (≤ 2 ulp). Differentiable."""
    return _AD.apply("gelu", x)


def gelu_tanh(x):
    """GELU's tanh approximation (≤ 2 ulp). Differentiable."""
    return _AD.apply("gelu_tanh", x)


def abs(x):  # noqa: A001 - PyTorch's name
    """|x| (floats: clears the sign bit); gradient sign(x). Differentiable."""
    return _AD.apply("abs", x)


def relu(x):
    """max(x, 0) as PyTorch (relu(-0.0) = -0.0). Differentiable."""
    return _AD.apply("relu", x)


def pow(x, y):  # noqa: A001 - PyTorch's name
    """x ** y with C99's special cases (floats ≤ 1 ulp; integers exact). Differentiable."""
    return _AD.apply("pow", x, y)


def div(a, b):
    """a / b, correctly rounded (what the ``/`` operator builds). Differentiable."""
    return _AD.apply("div", a, b)


def maximum(a, b):
    """Elementwise maximum; a NaN wins (vkml.maximum). Differentiable."""
    return _AD.apply("maximum", a, b)


def minimum(a, b):
    """Elementwise minimum; a NaN wins (vkml.minimum). Differentiable."""
    return _AD.apply("minimum", a, b)


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta*x)) / beta, linear above ``threshold`` (≤ 2 ulp). ``beta`` and
    ``threshold`` are Python numbers. Differentiable.

    Example: ``dsl.softplus(x, beta=2.0)``.
    """
    return _AD.apply("softplus", x, beta, threshold)


def clamp(x, min=None, max=None):  # noqa: A002 - PyTorch's argument names
    """Clamp into [min, max] (either may be None) with vkml.clamp's NaN rules. Differentiable.

    Example: ``dsl.clamp(x, -1.0, 1.0)``.
    """
    return _AD.apply("clamp", x, min, max)


def clamp_min(x, min):  # noqa: A002
    """clamp(x, min=min). Differentiable."""
    return _AD.apply("clamp", x, min, None)


def clamp_max(x, max):  # noqa: A002
    """clamp(x, max=max). Differentiable."""
    return _AD.apply("clamp", x, None, max)


def where(cond, a, b):
    """``a`` where ``cond`` holds, else ``b``: a pure select (both are computed). Differentiable.

    Example: ``dsl.where(x > 0, x, 0.01 * x)``.
    """
    return _AD.apply("select", cond, a, b)


select = where


def convert(x, dtype):
    """``x`` as ``dtype`` (int -> float rounds to nearest, float -> int truncates). Differentiable
    between float types; an integer result has zero gradient.

    Example: ``dsl.convert(i, vkml.float32)``.
    """
    return _AD.apply("convert", x, dtype)


def const(value, dtype):
    """A constant of ``dtype``. A Python number next to an IR value needs no ``const``:
    ``x * 0.5`` makes one of x's type.

    Example: ``dsl.const(1, vkml.int32)``.
    """
    return _AD.apply("const", value, dtype)


# ---------------------------------------------------------------- zero gradient


def sign(x):
    """-1, 0 or 1 by the sign of x (sign(NaN) = NaN). Zero gradient."""
    return _AD.apply("sign", x)


def floor(x):
    """Round toward -inf. Zero gradient."""
    return _AD.apply("floor", x)


def ceil(x):
    """Round toward +inf. Zero gradient."""
    return _AD.apply("ceil", x)


def trunc(x):
    """Round toward zero. Zero gradient."""
    return _AD.apply("trunc", x)


def round_even(x):
    """Round half to even (torch.round). Zero gradient."""
    return _AD.apply("round_even", x)


def isnan(x):
    """x is NaN, as bool. Zero gradient."""
    return _AD.apply("isnan", x)


def eq(a, b):
    """a == b as bool (``==`` on IR values compares identity: use this). Zero gradient."""
    return _AD.apply("eq", a, b)


def ne(a, b):
    """a != b as bool (True where either is NaN). Zero gradient."""
    return _AD.apply("ne", a, b)


# ---------------------------------------------------------------- not differentiable


def _untraceable(fn: Callable, name: str | None = None) -> Callable:
    name = name or fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _AD.is_tracing():
            raise _AD.not_traceable(name)
        return fn(*args, **kwargs)

    return wrapper


bitcast = _untraceable(_B.bitcast)
f32_to_f16 = _untraceable(_M.f32_to_f16, "f32_to_f16")  # round to nearest even, e.g. to store into float16
const_bits = _untraceable(_B.const_bits)
global_id = _untraceable(_B.global_id)
local_id = _untraceable(_B.local_id)
workgroup_id = _untraceable(_B.workgroup_id)
num_workgroups = _untraceable(_B.num_workgroups)
barrier = _untraceable(_B.barrier)
shuffle_xor = _untraceable(_B.shuffle_xor)
if_ = _untraceable(_B.if_)
if_else = _untraceable(_B.if_else)
range_ = _untraceable(_B.range_)
loop = _untraceable(_B.loop)


def shared(size: int, dtype):
    """A workgroup-shared array of ``size`` elements, in a ``@vkml.kernel`` only.

    Index it like a buffer: ``tile[i] = v``, ``v = tile[i]``; it starts zeroed; separate
    writes and reads by other invocations with ``dsl.barrier()``.

    Example: ``tile = dsl.shared(16 * 16, vkml.float32)``.
    """
    if _AD.is_tracing():
        raise _AD.not_traceable("shared")
    return _kernel.shared_array(size, dtype)


__all__ = [
    "abs",
    "barrier",
    "bitcast",
    "bool_",
    "ceil",
    "clamp",
    "clamp_max",
    "clamp_min",
    "const",
    "const_bits",
    "convert",
    "div",
    "eq",
    "erf",
    "exp",
    "exp2",
    "expm1",
    "f32_to_f16",
    "float16",
    "float32",
    "floor",
    "gelu",
    "gelu_tanh",
    "global_id",
    "if_",
    "if_else",
    "int32",
    "int64",
    "isnan",
    "local_id",
    "log",
    "log1p",
    "log2",
    "loop",
    "maximum",
    "minimum",
    "ne",
    "num_workgroups",
    "pow",
    "range_",
    "relu",
    "round_even",
    "rsqrt",
    "select",
    "shared",
    "shuffle_xor",
    "sigmoid",
    "sign",
    "softplus",
    "sqrt",
    "tanh",
    "trunc",
    "uint32",
    "where",
    "workgroup_id",
]


# Trigonometric, hyperbolic, error and gamma functions (the math library's routines, the same bits as
# vkml.sin and the rest on every device): one for every op whose OpDef says ``public=Public(dsl=True)``,
# documented from that OpDef.
def _math_function(op):
    def fn(x):
        return _AD.apply(op.name, x)

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = f"{op.summary} Precision: {op.precision}. Differentiable (vkml/dsl/autodiff.py)."
    return fn


_MATH_FUNCTIONS = [op.name for op in _REGISTRY.values() if op.public is not None and op.public.dsl]
for _name in _MATH_FUNCTIONS:
    globals()[_name] = _math_function(_REGISTRY[_name])


def atan2(y, x):
    """The angle of the point (x, y) in (-pi, pi] (≤ 1 ulp). Differentiable."""
    return _AD.apply("atan2", y, x)


__all__ += [*_MATH_FUNCTIONS, "atan2"]
