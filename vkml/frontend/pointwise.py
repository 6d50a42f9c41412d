"""More pointwise operators with PyTorch's names (issue 17): rounding, remainders, classification,
comparisons of closeness, bit operations.

Each function checks its arguments eagerly and records one registered elementwise op
(vkml/ops/elementwise_more.py) or composes existing ones; vkml/frontend/public.py installs the
functions named in ``EXPORTS`` as vkml.<name> and Tensor methods. The plain ones (floor, isnan,
copysign, hypot, ...: nothing to check before the op is recorded) have no code here: their OpDefs
declare their public names (``OpDef.public``).
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import types as T
from ..schedule import checks
from . import autograd, mutation
from . import operators as F
from .exports import Export
from .operators import _binary, _elementwise, _tensor_node

true_divide = F.div


def _check_integer_divisor(op: str, input, other) -> None:
    """PyTorch's RuntimeError for an integer division by a Python 0 (its CPU kernels raise
    'ZeroDivisionError'; a float division gives inf or NaN)."""
    if type(other) not in (int, bool) or not isinstance(input, F._tensor.Tensor) or input.dtype.is_float:
        return
    bits = 64 if input.dtype is T.bool_ else input.dtype.bits  # the divisor wraps into the result's dtype
    if other & ((1 << bits) - 1) == 0:  # int8 // -256 divides by 0, as PyTorch's kernel sees it
        raise RuntimeError(f"'{op}': ZeroDivisionError (an integer {input.dtype.name} tensor divided by {other})")


def _defer_zero_divisor_check(op: str, out, divisor) -> None:
    """PyTorch's RuntimeError 'ZeroDivisionError' for an integer result whose divisor tensor holds a 0,
    raised when ``out`` (or anything computed from it) is read: reading the divisor here would wait
    for the device (vkml/schedule/checks.py, as cross_entropy's index check)."""
    if out.dtype.is_float or not isinstance(divisor, F._tensor.Tensor) or divisor.numel() == 0:
        return
    flag = F.eq(divisor.detach(), 0).any()
    message = f"'{op}' (called at {checks.user_line()}): ZeroDivisionError (an integer divisor holds 0)"
    if out.node.realized:  # eager mode computed the result already: check now, at the op
        if flag.item():
            raise RuntimeError(message)
        return
    checks.defer(out.node, (flag.node,), lambda values: message if values[0] else None, RuntimeError)


def _integer_division(name: str):
    op = _binary(name)

    def fn(input, other):
        if name == "fmod":  # PyTorch's fmod has no Scalar-input overload (remainder and floor_divide do)
            F.require_tensor("fmod", "input", 1, input)
        _check_integer_divisor(name, input, other)
        out = op(input, other)
        _defer_zero_divisor_check(name, out, other)
        return out

    fn.__name__, fn.__doc__ = name, op.__doc__
    return fn


fmod, remainder, floor_divide = (_integer_division(n) for n in ("fmod", "remainder", "floor_divide"))


def _integer_only(op: str, *operands) -> None:
    # PyTorch's NotImplementedError: bit operations have no float kernels
    for x in operands:
        if isinstance(x, F._tensor.Tensor) and x.dtype.is_float:
            raise NotImplementedError(f"'{op}' is not implemented for '{mutation.torch_name(x.dtype)}' tensors")
        if type(x) is float:
            raise NotImplementedError(f"'{op}' is not implemented for a float operand ({x!r})")


def _bitwise(name: str):
    fn = _binary(name)

    def op(input, other):
        _integer_only(name, input, other)
        return fn(input, other)

    op.__name__ = name
    op.__doc__ = fn.__doc__
    return op


bitwise_and, bitwise_or, bitwise_xor = (_bitwise(n) for n in ("bitwise_and", "bitwise_or", "bitwise_xor"))
bitwise_left_shift, bitwise_right_shift = _bitwise("bitwise_left_shift"), _bitwise("bitwise_right_shift")


def bitwise_not(input):
    """``~input``: bitwise not of an integer tensor, logical not of a bool one; see docs/ops/bitwise_not.md."""
    node = _tensor_node("bitwise_not", input)
    if node.dtype.is_float:
        raise NotImplementedError(f"'bitwise_not' is not implemented for '{mutation.torch_name(node.dtype)}' tensors")
    return _elementwise("bitwise_not", input)


def round(input, *, decimals: int = 0):
    """Round half to even, to ``decimals`` decimal places (PyTorch's formula); see docs/ops/round.md."""
    node = _tensor_node("round", input)
    if type(decimals) is not int:
        raise TypeError(f"'round': decimals must be an int, got {type(decimals).__name__}")
    if decimals == 0:
        return _elementwise("round", input)
    if not node.dtype.is_float:
        raise NotImplementedError(f"\"round_cpu\" not implemented for '{mutation.torch_name(node.dtype)}'")
    # PyTorch's scale: std::pow(10, |d|) as a double (Python's float ** is the same C pow), cast to the
    # op's math type (float32 for float16, bfloat16 and float32); past the double range it is inf
    if node.dtype is T.float64:
        scale = 10.0 ** abs(decimals) if abs(decimals) < 309 else math.inf
    else:
        scale = float(np.float32(10.0 ** abs(decimals))) if abs(decimals) < 39 else math.inf
    out = _elementwise("round_decimals" if decimals > 0 else "round_neg_decimals", input, scale)
    if out._ctx is not None:  # PyTorch's round.decimals overload: one edge, to the input
        autograd.show(out, "RoundBackward1", (autograd.edge(input),))
    return out


def _float_only(op: str, input) -> None:
    node = _tensor_node(op, input)
    if not node.dtype.is_float:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{mutation.torch_name(node.dtype)}'")


def frac(input):
    """``input - trunc(input)`` for float tensors; see docs/ops/frac.md."""
    _float_only("frac", input)
    return _elementwise("frac", input)


def div_rounded(input, other, rounding_mode):
    """``div(input, other, rounding_mode=...)``: None divides, 'trunc' and 'floor' round the quotient."""
    if rounding_mode is None:
        return F.div(input, other)
    if rounding_mode == "trunc":
        _check_integer_divisor("div", input, other)
        out = _elementwise("div_trunc", input, other)
        _defer_zero_divisor_check("div", out, other)
        return out
    if rounding_mode == "floor":
        return floor_divide(input, other)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def _c_name(dtype) -> str:
    """The C++ type name PyTorch's dtype checks print (``float``, ``double``, ``c10::Half``)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}[dtype.name]


def lerp(input, end, weight):
    """``input + weight * (end - input)`` with PyTorch's two-sided formula; see docs/ops/lerp.md."""
    for name, x in (("input", input), ("end", end)):
        node = _tensor_node("lerp", x)
        if not node.dtype.is_float:
            raise NotImplementedError(f"'lerp' is not implemented for '{mutation.torch_name(node.dtype)}' {name}")
    if input.dtype is not end.dtype:
        raise RuntimeError(
            f"'lerp': expected dtype {_c_name(input.dtype)} for `end` but got dtype {_c_name(end.dtype)}"
        )
    if isinstance(weight, F._tensor.Tensor) and weight.dtype is not input.dtype:
        raise RuntimeError(
            f"'lerp': expected dtype {_c_name(input.dtype)} for `weight` but got dtype {_c_name(weight.dtype)}"
        )
    out = _elementwise("lerp", input, end, weight)
    if out._ctx is not None:  # PyTorch's lerp.Scalar node has no edge for the weight; lerp.Tensor's has one
        weighted = isinstance(weight, F._tensor.Tensor)
        edges = (autograd.edge(input), autograd.edge(end)) + ((autograd.edge(weight),) if weighted else ())
        autograd.show(out, "LerpBackward1" if weighted else "LerpBackward0", edges)
    return out


def nan_to_num(input, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
    """NaN, +inf and -inf replaced (defaults: 0, the dtype's largest and lowest value); see docs/ops/nan_to_num.md.

    Integer and bool tensors come back unchanged (as PyTorch).
    """
    node = _tensor_node("nan_to_num", input)
    if not node.dtype.is_float:
        return F.clone(input)
    big = (
        65504.0
        if node.dtype is T.float16
        else float(np.finfo(np.float64 if node.dtype is T.float64 else np.float32).max)
    )
    posinf = big if posinf is None else float(posinf)
    neginf = -big if neginf is None else float(neginf)
    return _elementwise("nan_to_num", input, float(nan), posinf, neginf)


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``|input - other| <= atol + rtol * |other|`` elementwise, as PyTorch (bool result).

    Precision: the difference, product and sum are each rounded in the tensors' dtype, as PyTorch.
    Special values: equal infinities are close; NaN is close to NaN only with ``equal_nan``.
    """
    a, b = _tensor_node("isclose", input), _tensor_node("isclose", other)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"isclose(): expected both tensors to have the same dtype, got {a.dtype.name} and {b.dtype.name}"
        )
    if rtol < 0:
        raise RuntimeError(f"isclose(): rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"isclose(): atol must be greater than or equal to zero, but got {atol}")
    close = F.eq(input, other)
    if a.dtype is T.bool_:
        return close
    if not a.dtype.is_float:  # PyTorch measures integer differences in the default float dtype (no wrapping)
        input, other = F.cast(input, T.float32), F.cast(other, T.float32)
    if equal_nan and a.dtype.is_float:
        close = F.logical_or(close, F.logical_and(F.isnan(input), F.isnan(other)))
    allowed = F.abs(F.mul(other, float(rtol))) + float(atol)
    actual = F.abs(F.sub(input, other))
    return F.logical_or(close, F.logical_and(F.isfinite(actual), F.le(actual, allowed)))


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``isclose(input, other, ...)`` holds (a Python bool; reads the result back)."""
    return bool(F.logical_not(isclose(input, other, rtol, atol, equal_nan)).numpy().sum() == 0)


def equal(input, other) -> bool:
    """True if both tensors have the same shape and elements (NaN differs from NaN); a Python bool."""
    a, b = _tensor_node("equal", input), _tensor_node("equal", other)
    if a.shape != b.shape:
        return False
    return bool(F.ne(input, other).numpy().sum() == 0)


def float_power(input, exponent):
    """``pow`` computed in float64 and returned as float64, whatever the operands' dtypes, as PyTorch's
    (see docs/ops/float_power.md). A device without float64 refuses it (DTypeError), as it refuses
    every float64 tensor.
    """
    if isinstance(input, F._tensor.Tensor):
        input = F.cast(input, T.float64)
    if isinstance(exponent, F._tensor.Tensor):
        exponent = F.cast(exponent, T.float64)
    elif not isinstance(input, F._tensor.Tensor):
        raise TypeError("'float_power' needs at least one tensor operand")
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        exponent = float(exponent)
    if not isinstance(input, F._tensor.Tensor):
        input = float(input)  # a Python float base with a float64 exponent tensor: float64
    return F.pow(input, exponent)


def _float_power_(self, exponent):
    """``Tensor.float_power_``: the float64 result written back, so only a float64 tensor takes it (PyTorch's
    RuntimeError for any other, where a plain in-place op would round the result into the tensor)."""
    node = _tensor_node("float_power_", self)
    if node.dtype is not T.float64:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {mutation.torch_name(node.dtype)} but the operation's "
            "result requires dtype Double"
        )
    return self.copy_(float_power(self, exponent))


# The public names: vkml.<name>, Tensor.<name> and, with inplace, Tensor.<name>_ (``x.floor_()``).
EXPORTS = (
    Export("round", method=True, inplace=True),
    Export("frac", method=True, inplace=True),
    Export("fmod", method=True, inplace=True),
    Export("remainder", method=True, inplace=True),
    Export("floor_divide", method=True, inplace=True),
    Export("true_divide", method=True, inplace=True),
    Export("lerp", method=True, inplace=True),
    Export("isclose", method=True),
    Export("allclose", method=True),
    Export("equal", method=True),
    Export("nan_to_num", method=True, inplace=True),
    Export("float_power", method=True),
    Export("float_power_", function=False, method=_float_power_),
    Export("bitwise_and", method=True, inplace=True),
    Export("bitwise_or", method=True, inplace=True),
    Export("bitwise_xor", method=True, inplace=True),
    Export("bitwise_not", method=True, inplace=True),
    Export("bitwise_left_shift", method=True, inplace=True),
    Export("bitwise_right_shift", method=True, inplace=True),
)
