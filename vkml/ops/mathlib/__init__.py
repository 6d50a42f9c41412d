"""The math library: every non-primitive float function, written in the DSL out of exact primitives.

Import point for the rest of vkml (``from vkml.ops import mathlib``). Each public function
documents its precision (``Precision:``), its NaN/inf behaviour (``Special values:``) and any
``Divergence from PyTorch:``; the docs generator reads those lines.
"""

from ...ir import builder as _builder
from .exact import abs, clamp, clamp_max, clamp_min, div, maximum, minimum, relu, rsqrt, sign, sqrt
from .explog import exp, exp2, expm1, log, log1p, log2
from .f16 import f16_to_f32, f32_to_f16
from .power import pow
from .special import erf, gelu, gelu_tanh, sigmoid, softplus, tanh

_builder.float_division = div  # `a / b` on float IR values builds this division

__all__ = [
    "abs",
    "clamp",
    "clamp_max",
    "clamp_min",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "log2",
    "pow",
    "erf",
    "gelu",
    "gelu_tanh",
    "sigmoid",
    "softplus",
    "tanh",
    "div",
    "maximum",
    "minimum",
    "relu",
    "rsqrt",
    "sign",
    "sqrt",
    "f16_to_f32",
    "f32_to_f16",
]

# `a / b` on float IR values is this division: the IR builder leaves it to the math library.
from ...ir import builder as _builder  # noqa: E402

_builder.float_division = div
