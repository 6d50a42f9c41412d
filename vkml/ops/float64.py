"""Which operators take float64, two tables.

float64 is computed as float64 (never narrowed to float32). ``FLOAT64_OPS`` are exact IEEE
arithmetic: add, sub, mul and compares are IR primitives; div and sqrt are correctly rounded on
int64 significands (mathlib/f64.py); the rest only select, round to an integer or compare.
``FLOAT64_MATH`` are the transcendental functions with a float64 routine within a stated bound
(mathlib/f64math.py, f64trig.py), each bound measured against mpmath by tests/test_mathlib_f64.py;
the op page shows it after the float32 one. Every other op refuses a float64 operand with
NotImplementedError naming the op (vkml/graph/build.py): computing it in float32 would silently
lose precision.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import types as T
from . import elementwise, elementwise_more, reduce, transcendental  # noqa: F401 - the ops these tables extend
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
    "shift_max",  # the row maximum softmax, log_softmax and logsumexp subtract (select only)
    "max_pool_step",  # max_pool1d/2d/3d's running window maximum (select only)
    # activations that only select, clamp or scale once
    "hardtanh",
    "leaky_relu",
    "threshold",
    "hardsigmoid",  # PyTorch's formula: one rounded sum, a clamp, a correctly rounded division
    "hardswish",  # ... and one product
    "frac",
    "fmax",
    "fmin",
    # exact: bit operations, selects, and fmod by long division (mathlib/f64more.py)
    "copysign",
    "nan_to_num",
    "hardshrink",
    "softshrink",
    "fmod",
    "remainder",  # exact fmod, then one rounded sum (PyTorch's formula)
    "floor_divide",  # PyTorch's div_floor_floating: exact fmod, correctly rounded divisions
    "div_trunc",  # div(rounding_mode="trunc"): trunc of the correctly rounded quotient
    "lerp",  # PyTorch's two-sided formula, each step rounded (no fused multiply-add)
    "round_decimals",  # PyTorch's formula: one exact product or correctly rounded division, an exact round
    "round_neg_decimals",
)

_ONE_ULP = "≤ 1 ulp of the correctly rounded float64 result (measured worst case 1 ulp)"

# op -> its float64 precision (the float64 routine's docstring in mathlib/f64math.py says how)
FLOAT64_MATH = {
    "exp": _ONE_ULP + ", subnormal results included",
    "exp2": _ONE_ULP + "; exact for integers",
    "expm1": _ONE_ULP,
    "log": _ONE_ULP,
    "log2": _ONE_ULP + "; exact for powers of two",
    "log10": _ONE_ULP,
    "log1p": _ONE_ULP,
    "tanh": _ONE_ULP,
    "sigmoid": _ONE_ULP,
    "softplus": _ONE_ULP + " (beta = 1; another beta adds the rounding of one division)",
    "silu": _ONE_ULP,
    "mish": _ONE_ULP,
    "sinh": _ONE_ULP,
    "cosh": _ONE_ULP,
    "asinh": _ONE_ULP,
    "acosh": _ONE_ULP,
    "atanh": _ONE_ULP,
    "sin": _ONE_ULP + ", huge arguments included (Payne-Hanek reduction)",
    "cos": _ONE_ULP + ", huge arguments included (Payne-Hanek reduction)",
    "tan": _ONE_ULP + ", huge arguments included (Payne-Hanek reduction)",
    "asin": _ONE_ULP,
    "acos": _ONE_ULP,
    "atan": _ONE_ULP,
    "atan2": _ONE_ULP,
    "sinc": _ONE_ULP + ", near its zeros too (x reduced exactly mod 2)",
    "erf": _ONE_ULP,
    "erfc": _ONE_ULP + ", subnormal results included",
    "gelu": _ONE_ULP,
    "gelu_tanh": "≤ 1 ulp of the correctly rounded value of PyTorch's float64 formula (measured worst case 1 ulp), "
    "the left tail included, where PyTorch's own gives -0.0",
    "pow": _ONE_ULP + " for finite nonzero results; exact where the result is a float64",
    "rsqrt": "1 / sqrt(x), two correct roundings: the bits of PyTorch's double kernel",
    # composed of the above, with PyTorch's float64 formula
    "elu": "expm1 ≤ 1 ulp, then products each correctly rounded; negcoef = alpha·scale formed in float64, "
    "as PyTorch's double kernel",
    "logsigmoid": _ONE_ULP + " (-softplus(-x) without a threshold)",
    "softsign": "one rounded sum and one correctly rounded division (PyTorch's formula)",
    "tanhshrink": "tanh ≤ 1 ulp, then one difference (large relative error near 0, as PyTorch)",
    "deg2rad": "one correctly rounded product by float64(pi/180): the bits of PyTorch",
    "rad2deg": "one correctly rounded product by float64(180/pi): the bits of PyTorch",
    "logit": _ONE_ULP + ", near the zero at 1/2 too (mathlib/f64more.py)",
    "erfinv": "≤ 2 ulp of the correctly rounded result (measured worst case 1 ulp), up to |x| = 1 - 2^-53 "
    "(PyTorch's rational start, Newton steps with an erfc residual near ±1)",
    "digamma": "PyTorch's formula (its calc_digamma), each step correctly rounded, log and tan ≤ 1 ulp: within "
    "2 ulp of max(|result|, 4) of PyTorch's float64 value (measured; most results are its bits), so as accurate as "
    "PyTorch's (which cancels near digamma's zeros)",
    "trigamma": "PyTorch's formula (its calc_trigamma), each step correctly rounded, sin ≤ 1 ulp: within 2 ulp of "
    "PyTorch's float64 value (measured worst case 1 ulp), large finite values at the negative integers as PyTorch's",
    "lgamma": "x > 0: ≤ 2 ulp of the correctly rounded result (measured worst case 1 ulp); x < 0: ≤ 2 ulp of "
    "max(|result|, 1) (the reflection cancels near lgamma's negative zeros; measured worst case 1)",
    "hypot": _ONE_ULP + " (double-double sum of squares, corrected square root)",
    "xlogy": "≤ 2 ulp (measured worst case 1 ulp): log ≤ 1 ulp, then one correctly rounded product (PyTorch's formula)",
    "logaddexp": "≤ 1 ulp of max(|input|, |other|, |result|) (measured): PyTorch's formula "
    "max + log1p(exp(-|a - b|)) with exp and log1p ≤ 1 ulp each; it cancels where the result is near 0",
    "logaddexp2": "≤ 1 ulp of max(|input|, |other|, |result|) (measured): PyTorch's formula "
    "max + log1p(exp2(-|a - b|))·(1/ln 2) with exp2 and log1p ≤ 1 ulp each; it cancels where the result is near 0",
}

_EARLY_OVERFLOW = (
    "float64: PyTorch's vectorized float64 {0} (tensors of 16 or more elements) overflows to inf for "
    "709.78 < |x| <= 710.4758, where the result is finite; its scalar path and vkml give the finite result."
)
# op -> how PyTorch's float64 kernel differs (vkml keeps the accurate value; the op page shows it)
FLOAT64_DIVERGENCE = {
    "sinh": _EARLY_OVERFLOW.format("sinh"),
    "cosh": _EARLY_OVERFLOW.format("cosh"),
    "sigmoid": "float64: PyTorch's float64 sigmoid is 0 below about -709.78 (1 / (1 + inf)); vkml gives the "
    "subnormal result, e^x to within its rounding, down to -745.13.",
    "log1p": "float64: PyTorch's float64 log1p(±5e-324) is 0; vkml gives ±5e-324 (log1p(x) rounds to x there).",
}

for _name in FLOAT64_OPS:
    _op = REGISTRY[_name]
    REGISTRY[_name] = replace(_op, dtypes=_op.dtypes + (T.float64,))
for _name, _precision in FLOAT64_MATH.items():
    _op = REGISTRY[_name]
    REGISTRY[_name] = replace(
        _op, dtypes=_op.dtypes + (T.float64,), precision=f"{_op.precision}; float64: {_precision}"
    )
