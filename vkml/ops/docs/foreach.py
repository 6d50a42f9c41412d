"""The page of PyTorch's ``torch._foreach_*`` list ops (vkml/frontend/foreach.py)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, vkml

_F = vkml.frontend.foreach

PAGES: dict[str, OpDoc] = {
    "foreach": OpDoc(
        "composite",
        (
            "vkml._foreach_<op>(self) and vkml._foreach_<op>_(self) for the unary ops abs, acos, asin, atan, ceil, "
            "cos, cosh, erf, erfc, exp, expm1, floor, frac, lgamma, log, log10, log1p, log2, neg, reciprocal, "
            "round, rsqrt, sigmoid, sign, sin, sinh, sqrt, tan, tanh, trunc",
            "vkml._foreach_<op>(self, other, *, alpha=None) and the in-place form for add, sub, mul, div (other: a "
            "number, a list of numbers, a list of tensors or one tensor; alpha with tensors), maximum, minimum, "
            "clamp_min, clamp_max, pow (also vkml._foreach_pow(number, exponents))",
            "vkml._foreach_lerp(self, tensors1, weight) and vkml._foreach_lerp_ (weight: a number, a list of "
            "numbers or a list of tensors)",
            "vkml._foreach_addcmul(self, tensor1, tensor2, value=1), vkml._foreach_addcdiv(...) and their "
            "in-place forms (value: a number, a list of numbers or a 1-D tensor of them)",
            "vkml._foreach_norm(self, ord=2, dtype=None), vkml._foreach_max(self), vkml._foreach_clone(self)",
            "vkml._foreach_zero_(self), vkml._foreach_copy_(self, src, non_blocking=False)",
        ),
        _F,
        precision="each tensor's op, with that op's precision (see its page: add, lerp, addcmul, vector_norm, ...)",
        special="As each tensor's op.",
        divergence="No multi-tensor kernel: each tensor's op is recorded in the lazy graph and fuses with what "
        "reads it. The in-place forms return the list they were given (PyTorch 2.13 does; older versions return "
        "None).",
        gradient=THROUGH,
    ),
}
