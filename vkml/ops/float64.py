"""Which operators take float64, one table.

float64 is computed as float64 (never narrowed to float32). An op takes it only where its
float64 result is exact IEEE arithmetic: add, sub, mul and compares are IR primitives; div and
sqrt are correctly rounded on int64 significands (mathlib/f64.py); the rest only select, round
to an integer or compare. Every other op refuses a float64 operand with NotImplementedError
naming the op (vkml/graph/build.py): vkml has no float64 exp, log, tanh, ... within a stated
bound yet, and computing them in float32 would silently lose precision.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import types as T
from . import elementwise, elementwise_more, reduce  # noqa: F401 - the ops this table extends
from .registry import REGISTRY

FLOAT64_OPS = (
    # arithmetic
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "abs",
    "sign",
    "sgn",
    "square",
    "reciprocal",
    "sqrt",
    # selection and comparison
    "maximum",
    "minimum",
    "clamp",
    "clamp_min",
    "clamp_max",
    "relu",
    "where",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "isreal",
    "signbit",
    # rounding to integral values
    "floor",
    "ceil",
    "trunc",
    "round",
    # reductions over the fixed tree
    "sum",
    "prod",
    "amax",
    "amin",
    "argmax",
    "argmin",
)

for _name in FLOAT64_OPS:
    _op = REGISTRY[_name]
    REGISTRY[_name] = replace(_op, dtypes=_op.dtypes + (T.float64,))
