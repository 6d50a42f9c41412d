"""Activation functions (``vkml.nn.functional.silu``, ...) and their modules (``vkml.nn.SiLU``, ...).

Each function is one registered elementwise op (vkml/ops/elementwise_more.py) or a composite
of existing ones, with PyTorch's arguments; ``inplace=True`` writes the result into the input
(``Tensor`` in-place semantics, vkml/frontend/mutation.py) and returns it.

>>> import vkml
>>> silu(vkml.tensor([0.0, 1.0])).shape
(2,)
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import ShapeError
from ..frontend import autograd, creation, mutation
from ..frontend import operators as functions
from ..frontend.caller import user_stacklevel
from ..ir.types import bool_, float64
from ..ops import grads as G
from ..ops.promotion import default_float
from . import functional
from .module import Module, Parameter

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float_input(op: str, input):
    node = functions._tensor_node(op, input)
    if not node.dtype.is_float:  # PyTorch's error: no integer kernel
        raise NotImplementedError(f"'{op}' is not implemented for '{mutation.torch_name(node.dtype)}' tensors")


def _int_to_float(op: str, input):
    """An integer tensor as the default float dtype: PyTorch composes softsign and tanhshrink of ops
    that promote an integer input (a bool one still raises)."""
    node = functions._tensor_node(op, input)
    if node.dtype.is_float or node.dtype is bool_:
        return input
    return functions.cast(input, default_float())


def _apply(op: str, input, inplace: bool, *params):
    """Op ``op`` of ``input`` and scalar ``params``, written into ``input`` when ``inplace``."""
    _float_input(op, input)
    if inplace:
        return mutation.inplace(input, op + "_", lambda t: functions._elementwise(op, t, *params))
    return functions._elementwise(op, input, *params)


def silu(input, inplace: bool = False):
    """``x * sigmoid(x)``, as ``x / (1 + exp(-x))``; see docs/ops/silu.md."""
    return _apply("silu", input, inplace)


def mish(input, inplace: bool = False):
    """``x * tanh(softplus(x))``; see docs/ops/mish.md."""
    return _apply("mish", input, inplace)


def _f32(value: float) -> float:
    return float(np.float32(value))


def _elu(op: str, input, alpha: float, scale: float, input_scale: float, inplace: bool):
    # PyTorch's kernel multiplies by negcoef = alpha·scale, formed in float32 from float32 operands
    # (in float64 for a float64 input, as its double kernel does)
    if getattr(input, "dtype", None) is float64:
        negcoef = float(alpha) * float(scale)
    else:
        negcoef = _f32(np.float32(alpha) * np.float32(scale))
    _float_input(op, input)
    if inplace:
        return mutation.inplace(
            input, op + "_", lambda t: functions._elementwise("elu", t, negcoef, float(scale), float(input_scale))
        )
    return functions._elementwise("elu", input, negcoef, float(scale), float(input_scale))


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """``x`` for x > 0, else ``alpha * (exp(x) - 1)``; see docs/ops/elu.md."""
    return _elu("elu", input, alpha, 1.0, 1.0, inplace)


def selu(input, inplace: bool = False):
    """``scale * elu(x, alpha)`` with the self-normalizing constants; see docs/ops/elu.md."""
    return _elu("selu", input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace)


@autograd.shown_as("CeluBackward0", autograd.input_edge)
def celu(input, alpha: float = 1.0, inplace: bool = False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; see docs/ops/elu.md."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu's alpha must be nonzero")
    return _elu("celu", input, alpha, 1.0, 1.0 / alpha, inplace)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """``x`` for x > 0, else ``negative_slope * x``; see docs/ops/leaky_relu.md."""
    return _apply("leaky_relu", input, inplace, float(negative_slope))


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """``clamp(x, min_val, max_val)``; see docs/ops/hardtanh.md."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    node = functions._tensor_node("hardtanh", input)
    if node.dtype is bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not node.dtype.is_float:
        # PyTorch clamps an integer tensor in its own dtype, the bounds converted to it (truncated)
        lo, hi = int(min_val), int(max_val)
        if inplace:
            return mutation.inplace(input, "hardtanh_", lambda t: functions.clamp(t, lo, hi))
        return functions.clamp(input, lo, hi)
    return _apply("hardtanh", input, inplace, float(min_val), float(max_val))


def relu6(input, inplace: bool = False):
    """``hardtanh(x, 0, 6)``; see docs/ops/hardtanh.md."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace: bool = False):
    """``clamp(x + 3, 0, 6) / 6``; see docs/ops/hardsigmoid.md."""
    return _apply("hardsigmoid", input, inplace)


def hardswish(input, inplace: bool = False):
    """``x * clamp(x + 3, 0, 6) / 6``; see docs/ops/hardswish.md."""
    return _apply("hardswish", input, inplace)


def softsign(input):
    """``x / (1 + |x|)``; see docs/ops/softsign.md."""
    out = _apply("softsign", _int_to_float("softsign", input), False)
    if out._ctx is not None and input.requires_grad:  # PyTorch's composite: input / (input.abs() + 1)
        magnitude = (autograd.GraphNode("AbsBackward0", (autograd.edge(input),)), 0)
        denominator = (autograd.GraphNode("AddBackward0", (magnitude, (None, 0))), 0)
        autograd.show(out, "DivBackward0", (autograd.edge(input), denominator))
    return out


def logsigmoid(input):
    """``log(sigmoid(x))`` without overflow; see docs/ops/logsigmoid.md."""
    return _apply("logsigmoid", input, False)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """``x`` where x > threshold, else ``value``; see docs/ops/threshold.md."""
    dtype = functions._tensor_node("threshold", input).dtype
    if dtype.is_float or dtype is bool_:
        return _apply("threshold", input, inplace, float(threshold), float(value))
    # PyTorch's integer kernel converts both scalars to the input's type first (truncating)
    bound, fill = _integer_scalar(threshold, dtype), _integer_scalar(value, dtype)
    if inplace:
        return mutation.inplace(input, "threshold_", lambda t: functions.where(t <= bound, fill, t))
    return functions.where(input <= bound, fill, input)


def _integer_scalar(value: float, dtype) -> int:
    limits = np.iinfo(dtype.name)
    if not limits.min <= value <= limits.max:  # NaN fails both comparisons
        raise RuntimeError(f"value cannot be converted to type {dtype.name}_t without overflow")
    return int(value)


def hardshrink(input, lambd: float = 0.5):
    """``x`` where |x| > lambd, else 0; see docs/ops/hardshrink.md."""
    return _apply("hardshrink", input, False, float(lambd))


def softshrink(input, lambd: float = 0.5):
    """``x - lambd`` above lambd, ``x + lambd`` below -lambd, else 0; see docs/ops/softshrink.md."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _apply("softshrink", input, False, float(lambd))


def tanhshrink(input):
    """``x - tanh(x)``; see docs/ops/tanhshrink.md."""
    return _apply("tanhshrink", _int_to_float("tanhshrink", input), False)


def softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's implicit softmax dim (deprecated, with its warning): 0 for 0-, 1- and 3-D inputs, else 1.

    The warning names the caller's line outside vkml, as PyTorch's ``_stacklevel`` does for its
    own call paths (vkml's autocast and method wrappers add frames a fixed ``stacklevel`` would
    count); ``stacklevel`` is kept for PyTorch's signature."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        stacklevel=user_stacklevel(),
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):
    """``softmax(-x, dim)``: precision and special values as ``softmax`` (docs/ops/softmax.md).

    Without ``dim``, PyTorch's implicit dim and warning (``softmax_dim``)."""
    if dim is None:
        dim = softmax_dim("softmin", input.ndim, _stacklevel)
    x = functions.cast(input, dtype) if dtype is not None else input
    return functions.softmax(functions.neg(x), dim)


@autograd.shown_as("GluBackward0", autograd.input_edge)
def glu(input, dim: int = -1):
    """``a * sigmoid(b)`` where ``a`` and ``b`` are the two halves of ``input`` along ``dim``."""
    node = functions._tensor_node("glu", input)
    if not node.dtype.is_float:  # PyTorch's class and words: no integer kernel
        raise NotImplementedError(f"\"glu_cpu\" not implemented for '{mutation.torch_name(node.dtype)}'")
    if not node.shape:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = functions.lazy.normalize_dim("glu", dim, len(node.shape))
    size = node.shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    half = size // 2
    first = tuple(slice(None) for _ in range(d))
    a = functions.getitem(input, first + (slice(0, half),))
    b = functions.getitem(input, first + (slice(half, size),))
    if node.dtype in functions.HALF_PRECISION:
        # PyTorch's kernel: a * sigmoid(b) in float32, rounded once; its backward rounds sigmoid(b) first
        # (glu_backward_cpu_out), so the gradient is a rule of its own (_grad_half_glu)
        wide_a, wide_b = functions.half_in_float32(a.detach(), b.detach())
        out = functions.cast(wide_a * functions.sigmoid(wide_b), node.dtype)
        return autograd.record("half_glu", (input,), out, {"dim": d})
    return a * functions.sigmoid(b)


def _grad_half_glu(c):
    """PyTorch's glu_backward_cpu_out: s = sigmoid(b) rounded to the dtype; the first half's gradient is
    s * grad in the dtype, the second half's ((1 - s) * s * a * grad) in float32, rounded once."""
    (x,) = c.inputs
    d = c.attrs["dim"]
    half = x.shape[d] // 2
    a, b = x.narrow(d, 0, half), x.narrow(d, half, half)
    s = functions.sigmoid(b)
    wide_s, wide_a, wide_g = functions.half_in_float32(s, a, c.g)
    grad_b = functions.cast((1.0 - wide_s) * wide_s * wide_a * wide_g, x.dtype)
    return (functions.cat([s * c.g, grad_b], d),)


G.RULES["half_glu"] = _grad_half_glu


def prelu(input, weight):
    """``x`` for x > 0, else ``weight * x``; ``weight`` has one element or one per channel (dim 1)."""
    node = functions._tensor_node("prelu", input)
    w = functions._tensor_node("prelu", weight)
    count = w.numel
    channels = node.shape[1] if len(node.shape) >= 2 else 1
    if count != 1 and count != channels:
        raise RuntimeError(
            f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {count} "
            f"and channel size = {channels}."
        )
    if len(w.shape) > 1:
        raise ShapeError(f"'prelu': weight must be 1-D or 0-D, got shape {w.shape}")
    if count != 1 and len(node.shape) >= 2:
        weight = functions.reshape(weight, count, *([1] * (len(node.shape) - 2)))
    elif count == 1 and w.shape:
        weight = functions.reshape(weight)
    return functions.where(input > 0, input, weight * input)


# ---------------------------------------------------------------------- modules


class _Inplace(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SiLU(_Inplace):
    def forward(self, input):
        return silu(input, self.inplace)


class Mish(_Inplace):
    def forward(self, input):
        return mish(input, self.inplace)


class SELU(_Inplace):
    def forward(self, input):
        return selu(input, self.inplace)


class ReLU6(_Inplace):
    def forward(self, input):
        return relu6(input, self.inplace)


class Hardsigmoid(_Inplace):
    def forward(self, input):
        return hardsigmoid(input, self.inplace)

    def extra_repr(self) -> str:
        return ""  # PyTorch's repr shows no inplace flag here


class Hardswish(_Inplace):
    def forward(self, input):
        return hardswish(input, self.inplace)

    def extra_repr(self) -> str:
        return ""  # PyTorch's repr shows no inplace flag here


class ELU(_Inplace):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, input):
        return elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(_Inplace):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, input):
        return celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class LeakyReLU(_Inplace):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, input):
        return leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Hardtanh(_Inplace):
    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ):
        super().__init__(inplace)
        # PyTorch's deprecated spellings, with its warning and its check
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning, 2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning, 2)
            max_val = max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input):
        return hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class Threshold(_Inplace):
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(inplace)
        self.threshold, self.value = threshold, value

    def forward(self, input):
        return threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Softsign(Module):
    def forward(self, input):
        return softsign(input)


class LogSigmoid(Module):
    def forward(self, input):
        return logsigmoid(input)


class Tanhshrink(Module):
    def forward(self, input):
        return tanhshrink(input)


class Hardshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Softshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return functional.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmin(Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GLU(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` for x > 0, else ``weight * x``; ``weight`` (``num_parameters`` values) starts at ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(creation.full((num_parameters,), init, dtype=dtype, device=device))

    def reset_parameters(self) -> None:
        """Weight back to ``init`` (after ``to_empty``, say)."""
        with autograd.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


FUNCTIONS = [
    "silu",
    "mish",
    "elu",
    "selu",
    "celu",
    "leaky_relu",
    "hardtanh",
    "relu6",
    "hardsigmoid",
    "hardswish",
    "softsign",
    "logsigmoid",
    "softmin",
    "threshold",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "glu",
    "prelu",
]
MODULES = [
    "SiLU",
    "Mish",
    "ELU",
    "SELU",
    "CELU",
    "LeakyReLU",
    "Hardtanh",
    "ReLU6",
    "Hardsigmoid",
    "Hardswish",
    "Softsign",
    "LogSigmoid",
    "Softmin",
    "Threshold",
    "Softplus",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "GLU",
    "PReLU",
]
