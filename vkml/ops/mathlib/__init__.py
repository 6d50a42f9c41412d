"""The math library: every non-primitive float function, written in the DSL out of exact primitives.

Import point for the rest of vkml (``from vkml.ops import mathlib``). Each public function
documents its precision (``Precision:``), its NaN/inf behaviour (``Special values:``) and any
``Divergence from PyTorch:``; the docs generator reads those lines.
"""

from .exact import abs, clamp, div, maximum, minimum, relu, rsqrt, sign, sqrt
from .f16 import f16_to_f32, f32_to_f16

__all__ = [
    "abs",
    "clamp",
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
