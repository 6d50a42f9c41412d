"""Reductions: a combine function over the contract's fixed pairwise tree.

The tree is determined by the reduced length alone: neighbours pair level by level in
logical index order (element 2j with 2j+1), an odd tail is carried up unchanged, and the
identity never enters a combine, so a sum of -0.0 stays -0.0. ``combine(left, right)`` gets
the lower-index operand on the left. Arg-reductions combine (value, index) pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..ir import builder as B
from ..ir import types as T
from . import mathlib as M
from .cast import compute_dtype
from .grads import normalize_dims, restore_reduced, spread_reduced
from .mathlib.bits import DEFAULT_NAN_BITS
from .registry import FLOAT_DTYPES, NUMERIC_DTYPES, REGISTRY, OpDef, register


@dataclass(frozen=True)
class IntKey:
    """How a float reduction combines int32 keys instead of floats: ``lift`` maps an element (float32) to
    its key, the op's combine (its integer form) pairs keys, and ``lower`` maps the last key back."""

    lift: Callable
    lower: Callable
    dtype: T.DType = T.int32


def _order_key(bits):
    """The int32 key of float32 ``bits`` (an int32): keys order as the floats do, -0 just below +0,
    and the map is its own inverse."""
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


def _extreme_key(nan_key: int) -> IntKey:
    """amax's and amin's keys: a NaN is ``nan_key`` (the top or the bottom), so it wins every combine
    in one integer compare and select, and comes back as the default NaN."""

    def lift(x):
        return B.select(B.isnan(x), B.const(nan_key, T.int32), _order_key(B.bitcast(x, T.int32)))

    def lower(key):
        # chosen among int32 bit patterns, then moved to float32 (a bitcast moves bits untouched)
        nan_bits = B.const(DEFAULT_NAN_BITS - (1 << 32), T.int32)
        bits = B.select(B.eq(key, B.const(nan_key, T.int32)), nan_bits, _order_key(key))
        return B.bitcast(bits, T.float32)

    return IntKey(lift, lower)


# Integers, and floats as their int32 keys (``_extreme_key``): the tree never pairs two floats.
def _max(a, b):
    if a.dtype is T.float64:  # float64 has no int32 key: NaN wins, +0 over -0 (mathlib.maximum)
        return M.maximum(a, b)
    return B.select(a < b, b, a)


def _min(a, b):
    if a.dtype is T.float64:
        return M.minimum(a, b)
    return B.select(b < a, b, a)


def _argmax(left, right):
    (va, ia), (vb, ib) = left, right
    take = vb > va  # ordered: False when either is NaN
    if va.dtype.is_float:
        take = take | (B.isnan(vb) & ~B.isnan(va))
    return B.select(take, vb, va), B.select(take, ib, ia)


def _argmin(left, right):
    (va, ia), (vb, ib) = left, right
    take = vb < va
    if va.dtype.is_float:
        take = take | (B.isnan(vb) & ~B.isnan(va))
    return B.select(take, vb, va), B.select(take, ib, ia)


# ---------------------------------------------------------------------- gradients (PyTorch's formulas)


def _grad_sum(c):
    (x,) = c.inputs
    return (spread_reduced(c.g, x.shape, c.attrs["dim"], c.attrs["keepdim"]),)


def _grad_prod(c):
    # The product of the other elements: out / x without zeros; with one zero, the zero's position
    # gets the product of the rest; every other position's product holds a zero: 0, or NaN where a
    # NaN or an infinity is among its others (inf · 0), as PyTorch's exclusive products give.
    (x,) = c.inputs
    F, dim, keepdim = c.F, c.attrs["dim"], c.attrs["keepdim"]
    g = spread_reduced(c.g, x.shape, dim, keepdim)
    dims = normalize_dims(dim, x.ndim)
    is_zero = x == 0
    zeros = is_zero.sum(dims, keepdim=True) if dims else is_zero.long()
    others = F.where(is_zero, 1.0, x).prod(dims, keepdim=True) if dims else F.ones_like(x)
    out = restore_reduced(c.output, x.shape, dim, keepdim)
    nonfinite = (~F.isfinite(x)).long()
    nonfinite_others = (nonfinite.sum(dims, keepdim=True) if dims else nonfinite) - nonfinite
    with_zero = F.where(nonfinite_others > 0, math.nan, F.zeros_like(x))
    rest = F.where(is_zero & (zeros == 1), others, with_zero)
    if dim is None:  # PyTorch's prod() of all: two or more zeros give zeros outright
        rest = F.where(zeros >= 2, F.zeros_like(x), rest)
    grad = g * F.where(zeros == 0, out / F.where(is_zero, 1.0, x), rest)
    if dim is not None and x.dtype in (T.float16, T.bfloat16) and len(dims) == 1 and x.shape[dims[0]]:
        # PyTorch's prod_backward along a dim takes prod_safe_zeros_backward for every element as soon as
        # the input holds a zero anywhere: the exclusive products from both ends, each a cumprod (float32
        # running products, each rounded to the dtype), multiplied in the dtype
        grad = F.where(is_zero.any(), g * _exclusive_products(F, x, dims[0]), grad)
    return (grad,)


def _exclusive_products(F, x, d: int):
    """Π of the elements before each one along ``d`` times Π of those after it, as PyTorch's
    prod_safe_zeros_backward rounds them for a float16/bfloat16 ``x``."""
    n = x.shape[d]
    ones = F.ones_like(x.narrow(d, 0, 1))

    def running(values):  # cumprod of [1, values...] in float32, each product rounded to x's dtype
        return F.cumprod(F.cat([ones, values], d).float(), d).to(x.dtype)

    before = running(x.narrow(d, 0, n - 1))
    after = F.flip(running(F.flip(x.narrow(d, 1, n - 1), (d,))), (d,))
    return before * after


def _grad_extreme(c):
    # Ties share the gradient evenly (PyTorch's amax/amin rule).
    (x,) = c.inputs
    dim, keepdim = c.attrs["dim"], c.attrs["keepdim"]
    dims = normalize_dims(dim, x.ndim)
    hit = x == restore_reduced(c.output, x.shape, dim, keepdim)
    count = hit.sum(dims, keepdim=True) if dims else hit.long()
    g = spread_reduced(c.g, x.shape, dim, keepdim)
    # PyTorch's scale_grad_by_count, (g / count) * hit: a NaN result (no element equal) gives NaN
    return ((g / count) * hit,)


_TREE = "summed over the contract's fixed pairwise tree (same bits for any layout and device)"

register(
    OpDef(
        "sum",
        "reduce",
        "sum(input, dim=None, keepdim=False, *, dtype=None)",
        "Sum of elements over dims.",
        dtypes=NUMERIC_DTYPES + (T.bool_,),
        result="sum",
        combine=lambda a, b: a + b,
        identity=0,
        cheap_combine=True,
        precision=f"exact tree order: {_TREE}; error ≤ γ_⌈log2 n⌉·Σ|x|",
        special="NaN anywhere gives NaN; inf + -inf gives NaN; sum([]) = 0; a sum of -0.0 is -0.0. "
        "float16 accumulates in float32 and rounds once; int32 and bool sum to int64.",
        divergence="sum of -0.0 values is -0.0 (PyTorch: +0.0). A sum of finite values whose partial sums "
        "overflow with both signs can be NaN where PyTorch gives inf (tree order).",
        grad=_grad_sum,
    )
)
register(
    OpDef(
        "prod",
        "reduce",
        "prod(input, dim=None, keepdim=False, *, dtype=None)",
        "Product of elements over dims.",
        dtypes=NUMERIC_DTYPES + (T.bool_,),
        result="sum",
        combine=lambda a, b: a * b,
        identity=1,
        cheap_combine=True,
        precision=f"exact tree order: {_TREE}",
        special="NaN anywhere gives NaN; inf * 0 gives NaN; prod([]) = 1. int32 and bool multiply in int64.",
        divergence="float16/bfloat16 along one dim of up to 16 elements multiply in the dtype, element after "
        "element, each product rounded, as PyTorch's CPU; over more elements or several dims, in float32, "
        "rounded once, where PyTorch rounds after every step (or per vector lane for a long inner dim). "
        "`dim` may be a tuple of dims, as `sum`'s; PyTorch's prod takes one dim (a tuple is its TypeError).",
        grad=_grad_prod,
    )
)
register(
    OpDef(
        "amax",
        "reduce",
        "amax(input, dim=None, keepdim=False)",
        "Maximum over dims.",
        result="same",
        combine=_max,
        # int32 keys: one compare and one select a combine, where the float maximum's NaN and ±0
        # rules take twelve instructions (the same results; a NaN comes back as the default NaN)
        int_key=_extreme_key(0x7FFFFFFF),
        special="Any NaN gives NaN (float32: the default NaN, bits 0xFFC00000). amax of an empty dim raises.",
        divergence="amax([-0.0, 0.0]) is +0.0 whatever the order (PyTorch's sign depends on length).",
        grad=_grad_extreme,
    )
)
register(
    OpDef(
        "shift_max",
        "reduce",
        "shift_max(input, dim=None, keepdim=False)",
        "The maximum that softmax, log_softmax and logsumexp subtract before exp (internal; use amax).",
        dtypes=FLOAT_DTYPES,
        result="same",
        # One compare and one select, against amax's instructions for its NaN and ±0 rules, with
        # the same bits in the composites (their docstrings say why; tests/test_ops_composite.py
        # checks it). Timings: docs/benchmarks.md, seventh run.
        combine=lambda a, b: B.select(a > b, a, b),
        precision="exact for a row without NaN, up to the sign of a zero result",
        special="A row with NaN gives some element of the row (the NaN reaches every result of the composite "
        "through its sum instead). Of +0 and -0 either may come back.",
        divergence="Not a PyTorch op: amax is the maximum with PyTorch's rules.",
        torch_name="amax",
        reached_through=("vkml.softmax, vkml.log_softmax and vkml.logsumexp (vkml.frontend.operators._shift_max)",),
        no_grad="Not differentiable: only softmax, log_softmax and logsumexp use it, and their own rules differentiate them.",
    )
)
register(
    OpDef(
        "amin",
        "reduce",
        "amin(input, dim=None, keepdim=False)",
        "Minimum over dims.",
        result="same",
        combine=_min,
        # int32 keys: one compare and one select a combine, where the float maximum's NaN and ±0
        # rules take twelve instructions (the same results; a NaN comes back as the default NaN)
        int_key=_extreme_key(-0x80000000),
        special="Any NaN gives NaN (float32: the default NaN, bits 0xFFC00000). amin of an empty dim raises.",
        divergence="amin([0.0, -0.0]) is -0.0 whatever the order (PyTorch's sign depends on length).",
        grad=_grad_extreme,
    )
)
register(
    OpDef(
        "argmax",
        "reduce",
        "argmax(input, dim=None, keepdim=False)",
        "Index of the maximum (int64).",
        result="int64",
        combine=_argmax,
        arg=True,
        special="The index of the first NaN if any, else of the first maximum.",
    )
)
register(
    OpDef(
        "argmin",
        "reduce",
        "argmin(input, dim=None, keepdim=False)",
        "Index of the minimum (int64).",
        result="int64",
        combine=_argmin,
        arg=True,
        special="The index of the first NaN if any, else of the first minimum.",
    )
)


def reduce_dtypes(name: str, dtype: T.DType) -> tuple[T.DType, T.DType]:
    """(accumulation dtype, result dtype) of reduction ``name`` over ``dtype``."""
    rule = REGISTRY[name].result
    if rule == "sum":
        if not dtype.is_float:  # bool and every integer dtype sum to int64, as PyTorch
            return T.int64, T.int64
        return (T.float64 if dtype is T.float64 else T.float32), dtype
    if rule == "int64":
        return compute_dtype(dtype), T.int64
    return compute_dtype(dtype), dtype
