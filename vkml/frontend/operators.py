"""vkml's public operators (``vkml.add``, ``Tensor.sum``, ...), with PyTorch's names and defaults.

Each function checks its arguments eagerly, records a node and returns a lazy Tensor. The
computation of every op is defined once in ``vkml/ops/`` (elementwise bodies, reduction
combines); this module only shapes graphs.
"""

from __future__ import annotations

import functools
import math
import re
import warnings

import numpy as np

from ..errors import DeviceError, DTypeError, DTypeNotImplementedError, ShapeError
from ..graph import build as lazy
from ..graph.node import Cat, Matmul, Node, Op
from ..ir import types as T
from ..ops import grads as _grads
from ..ops.cast import host_round, work_dtype
from ..ops.promotion import promote_types
from ..ops.registry import REGISTRY
from ..schedule.checks import note_uploaded_range
from . import autograd
from . import memory_format as _memory_format
from .autograd import differentiable
from .caller import user_stacklevel
from .devices import device as get_device
from .dtype_info import check_matmul_dtypes, cpp_type_name, refuse_no_tensor_dtype
from .dtypes import check_device_dtype, python_type_dtype
from .exports import Export


def _where_method(self, condition, other):
    """``Tensor.where(condition, other)``: this tensor where ``condition`` holds, else ``other`` (PyTorch's order)."""
    return where(condition, self, other)


# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("add", method=True),
    Export("amax", method=True),
    Export("amin", method=True),
    Export("argmax", method=True),
    Export("argmin", method=True),
    Export("cat"),
    Export("clamp", method=True),
    Export("clip", method=True),
    Export("clone"),
    Export("constant_pad_nd"),
    Export("div", method=True),
    Export("expand"),
    Export("flip"),
    Export("log_softmax", method=True),
    Export("logsumexp", method=True),
    Export("masked_fill", method=True),
    Export("matmul", method=True),
    Export("max", method=True),
    Export("mean", method=True),
    Export("min", method=True),
    Export("permute"),
    Export("pow", method=True),
    Export("prod", method=True),
    Export("reshape"),
    Export("softmax", method=True),
    Export("squeeze"),
    Export("sub", method=True),
    Export("sum", method=True),
    Export("transpose"),
    Export("unsqueeze"),
    Export("where", method=_where_method),
)


def _wrap(node: Node):
    t = _tensor.Tensor(node)
    # lazy.is_eager(), inlined: every recorded op asks
    eager = lazy._eager_override
    if eager or (eager is None and lazy._eager_from_env):
        t.realize()
    return t


def _node(x):
    if isinstance(x, _tensor.Tensor):
        return x.node
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"expected a vkml.Tensor or a Python number, got {type(x).__name__}")


def _tensor_node(op: str, x) -> Node:
    if not isinstance(x, _tensor.Tensor):
        raise TypeError(f"'{op}' expects a vkml.Tensor, got {type(x).__name__}")
    return x.node


def _sparse_operand(*operands):
    """The first sparse COO operand (vkml/frontend/sparse_coo.py), or None: an op with a sparse form
    hands it over (``operand._sparse_dispatch``); every other op raises reaching for its node."""
    tensor = _tensor.Tensor
    for o in operands:  # a plain Tensor is never sparse: no is_sparse property call for it
        if type(o) is not tensor and getattr(o, "is_sparse", False) is True:
            return o
    return None


def _cpu_scalars_moved(operands):
    """``operands`` with each 0-d CPU tensor moved to the device of the others, as PyTorch treats a 0-d
    CPU tensor in an op on another device's tensors (a loaded ``best_acc1`` against a GPU's accuracy):
    like a number. None when the operands' devices differ otherwise."""
    others = {o.node.device for o in operands if isinstance(o, _tensor.Tensor) and not _is_cpu_scalar(o)}
    if len(others) != 1:
        return None
    (target,) = others
    return [o.to(target) if isinstance(o, _tensor.Tensor) and _is_cpu_scalar(o) else o for o in operands]


def _is_cpu_scalar(t) -> bool:
    return t.node.device.type == "cpu" and not t.node.shape


def _elementwise(name: str, *operands):
    # Every op a user writes passes here: one pass over the operands finds their nodes and
    # whether autograd has anything to record (a tensor operand that requires grad).
    nodes = []
    any_tensor = wants_grad = False
    for o in operands:
        if isinstance(o, _tensor.Tensor):
            nodes.append(o.node)
            any_tensor = True
            wants_grad = wants_grad or o._requires_grad
        elif type(o) is complex:  # the ops that take one (add, mul, eq, ...) went to vkml/frontend/complex.py
            raise NotImplementedError(f"'{name}' is not implemented for a complex operand (got {o!r})")
        else:
            nodes.append(_node(o))
    if not any_tensor:
        raise TypeError(f"'{name}' needs at least one tensor operand")
    try:
        out = _tensor.Tensor(lazy.elementwise(name, nodes))
    except DeviceError:
        moved = _cpu_scalars_moved(operands)
        if moved is None:
            raise
        return _elementwise(name, *moved)
    if lazy.is_eager():
        out.realize()
    if _memory_format.ACTIVE:  # a channels-last operand of the result's shape gives the result its format
        _memory_format.propagate(out, *operands)
    return autograd.record(name, operands, out) if wants_grad else out


# PyTorch's results of unary ops whose OpDef takes no bool: sign and sgn of a bool tensor are its
# values, square is the int64 product (as PyTorch's pow(x, 2)). Checked before the op, for bool
# tensors only (any other op on a bool tensor the registry refuses raises PyTorch's NotImplementedError).
_BOOL_UNARY = {
    "sign": lambda x: _tensor.Tensor(x.node),
    "sgn": lambda x: _tensor.Tensor(x.node),
    "square": lambda x: _elementwise("mul", cast(x, T.int64), cast(x, T.int64)),
}


def _unary(name):
    def fn(input):
        # A tensor of a kind met before: its node from lazy's fast path, recorded as _elementwise records it
        # where it requires grad (read after the node: a view's node brings its _requires_grad up to date).
        if type(input) is _tensor.Tensor:
            node = lazy.unary_fast(name, input._node if input._base is None else input.node)
            if node is not None:
                out = _wrap(node) if not _memory_format.ACTIVE else _formatted(node, input)
                return autograd.record(name, (input,), out) if input._requires_grad else out
        return _elementwise(name, input)

    if name in _BOOL_UNARY:
        rule = _BOOL_UNARY[name]

        def fn(input):  # noqa: F811  (the same function, with the bool rule first)
            if isinstance(input, _tensor.Tensor) and input.dtype is T.bool_:
                return rule(input)
            return _elementwise(name, input)

    fn.__name__ = fn.__qualname__ = name  # a wrong call is "exp() takes 1 positional argument ...", as PyTorch
    fn.__doc__ = f"Elementwise ``{name}``; see docs/ops/{name}.md. Example: ``vkml.{name}(vkml.tensor([1.0, 2.0]))``."
    return fn


def _formatted(node: Node, *operands):
    """``_wrap(node)`` in the channels-last format of its first operand of its shape (memory_format.py)."""
    return _memory_format.propagate(_wrap(node), *operands)


def _binary(name):
    def fn(input, other):
        # The usual case first (tensors that need no grad, or a tensor and a Python number): the
        # node straight from lazy's fast path, with none of _elementwise's loops. A tensor that
        # owns its storage has its node in _node; a view's comes first from the property, which
        # also brings its _requires_grad up to date after a write through its storage.
        # An operand that requires grad takes the same path, then the record _elementwise makes.
        tensor = _tensor.Tensor
        if type(input) is tensor:
            a = input._node if input._base is None else input.node
            if type(other) is tensor:
                b = other._node if other._base is None else other.node
                node = lazy.binary_fast(name, a, b)
                if node is not None:
                    out = _wrap(node) if not _memory_format.ACTIVE else _formatted(node, input, other)
                    if input._requires_grad or other._requires_grad:
                        return autograd.record(name, (input, other), out)
                    return out
            elif type(other) in lazy.SCALAR_TYPES:
                node = lazy.binary_fast(name, a, other)
                if node is not None:
                    out = _wrap(node) if not _memory_format.ACTIVE else _formatted(node, input)
                    return autograd.record(name, (input, other), out) if input._requires_grad else out
        elif type(other) is tensor and type(input) in lazy.SCALAR_TYPES:
            b = other._node if other._base is None else other.node
            node = lazy.binary_fast(name, input, b)
            if node is not None:
                out = _wrap(node) if not _memory_format.ACTIVE else _formatted(node, other)
                return autograd.record(name, (input, other), out) if other._requires_grad else out
        return _elementwise(name, input, other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with broadcasting; see docs/ops/{name}.md. Example: ``vkml.{name}(x, y)``."
    return fn


_PLAIN: dict[str, object] = {}  # op name -> its public function: one object, however often asked for


def plain_function(name: str):
    """The public function of the registered op ``name`` whose OpDef declares ``public`` (vkml/ops/registry.py):
    its signature's one or two tensors in, the op recorded. vkml.<name>, its aliases, the Tensor methods
    (vkml/frontend/public.py) and ``vkml.special`` share it."""
    if name not in _PLAIN:
        op = REGISTRY[name]
        if op.public is None:
            raise ValueError(f"op {name!r} declares no public function (OpDef.public)")
        params = re.fullmatch(r"\w+\(([^)]*)\)", op.signature)
        arity = len(params.group(1).split(", ")) if params and "=" not in op.signature else 0
        if arity not in (1, 2):
            raise ValueError(f"op {name!r}: a plain public function takes one or two tensors, not {op.signature}")
        _PLAIN[name] = _unary(name) if arity == 1 else _binary(name)
    return _PLAIN[name]


def require_tensor(op: str, what: str, position: int, value) -> None:
    """PyTorch's TypeError where its signature wants a Tensor and gets a Python number (or anything else)."""
    if not isinstance(value, _tensor.Tensor):
        raise TypeError(f"{op}(): argument '{what}' (position {position}) must be Tensor, not {type(value).__name__}")


_NUMBER_OPERANDS = {"both": (True, True), "other": (False, True), "none": (False, False)}


def _refusing_numbers(name: str, fn, numbers: str):
    """``fn`` with PyTorch's TypeError for a Python number where ``OpDef.public.numbers`` wants a tensor
    (torch.maximum(x, 1.0), torch.eq(1.0, x)); ``fn`` itself where both take one."""
    input_ok, other_ok = _NUMBER_OPERANDS[numbers]
    if input_ok and other_ok:
        return fn

    tensor = _tensor.Tensor

    def public(input, other):
        # the usual call (tensors) pays one isinstance per checked operand, no further call
        if not (input_ok or isinstance(input, tensor)):
            require_tensor(name, "input", 1, input)
        if not (other_ok or isinstance(other, tensor)):
            require_tensor(name, "other", 2, other)
        return fn(input, other)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = fn.__doc__
    return public


_PUBLIC_PLAIN: dict[str, object] = {}


def public_function(name: str):
    """``vkml.<name>`` (and its Tensor method) of a registered op that declares ``public``: ``plain_function``
    with PyTorch's refusal of a Python number where its signature wants a tensor (``Public.numbers``)."""
    if name not in _PUBLIC_PLAIN:
        _PUBLIC_PLAIN[name] = _refusing_numbers(name, plain_function(name), REGISTRY[name].public.numbers)
    return _PUBLIC_PLAIN[name]


# The face's own code calls a plain op as this module's attribute (F.exp, F.eq, F.floor): bound here, once,
# for every registered op that declares ``public`` (importing vkml.ops filled the registry). Nothing in this
# module defines one of these names again (tests/test_public.py).
globals().update({op.name: plain_function(op.name) for op in REGISTRY.values() if op.public is not None})
# this module's own calls of them (ruff cannot see the names bound above)
_mul, _maximum, _minimum, _exp, _log = (plain_function(n) for n in ("mul", "maximum", "minimum", "exp", "log"))

_plain_add, _plain_sub, _divide = _binary("add"), _binary("sub"), _binary("div")


def _alpha_scaled(op: str, plain, input, other, alpha):
    """``alpha * other`` in the dtype of ``plain(input, other)``, with PyTorch's checks of ``alpha``.

    An integer or bool result takes no float alpha, and only a bool result a bool alpha (PyTorch's
    RuntimeErrors). The product is rounded before the add, as ``add_``'s; PyTorch's CPU may fuse
    the two into one rounding, so a result can differ from it in the last bit.
    """
    if isinstance(alpha, (_tensor.Tensor, np.generic)):
        alpha = alpha.item()
    dtype = plain(input, other).dtype  # lazy: only the result's dtype (and the operands' checks)
    if isinstance(alpha, complex) and not dtype.is_complex:
        raise RuntimeError(f"'{op}': For non-complex input tensors, argument alpha must not be a complex number.")
    if not dtype.is_float and isinstance(alpha, float):
        raise RuntimeError(
            f"'{op}': For integral input tensors, argument alpha must not be a floating point number. (got {alpha})"
        )
    if isinstance(alpha, bool) and dtype is not T.bool_:
        raise RuntimeError(f"'{op}': Boolean alpha only supported for Boolean results. (got {dtype.name})")
    if dtype.is_signed:  # PyTorch converts alpha to the result's dtype, checked (an unsigned one wraps it)
        lazy.check_scalar_fits(op, alpha, dtype)
    if isinstance(other, _tensor.Tensor):
        return cast(_mul(cast(other, dtype), alpha), dtype)  # a bool result keeps bool: b * 2 is int64
    return other * alpha


def _legacy_alpha(op: str, other, rest: tuple, alpha):
    """PyTorch's deprecated overload ``add(alpha, other)`` (``p.data.add_(-lr, grad)`` in older
    optimizers): (other, alpha), with PyTorch's warning; any other extra argument is a TypeError."""
    if len(rest) != 1 or not isinstance(rest[0], _tensor.Tensor) or isinstance(other, _tensor.Tensor):
        raise TypeError(f"{op}() takes 2 positional arguments (input, other) but {2 + len(rest)} were given")
    warnings.warn(
        f"This overload of {op} is deprecated:\n\t{op}(Number alpha, Tensor other)\nConsider using one of the "
        f"following signatures instead:\n\t{op}(Tensor other, *, Number alpha = 1)",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return rest[0], other


def add(input, other, *rest, alpha=1):
    """``input + alpha * other`` with broadcasting, correctly rounded; see docs/ops/add.md."""
    if rest:
        other, alpha = _legacy_alpha("add", other, rest, alpha)
    if other.__class__ is not _tensor.Tensor and _sparse_operand(other) is not None and _sparse_operand(input) is None:
        return other._sparse_dispatch("add", input, other, alpha=alpha)  # dense + sparse: dense (PyTorch's)
    if type(alpha) is not int or alpha != 1:  # alpha=True is PyTorch's error on a non-bool result
        scaled = _alpha_scaled("add", _plain_add, input, other, alpha)
        out = _plain_add(input, scaled)
        if out.dtype in HALF_PRECISION:
            wide, wide_other = half_in_float32(input, other)
            alpha = host_round(alpha, out.dtype)  # PyTorch converts alpha to the result's dtype first
            return cast(_plain_add(wide, _alpha_scaled("add", _plain_add, wide, wide_other, alpha)), out.dtype)
        return out
    return _plain_add(input, other)


def sub(input, other, *rest, alpha=1):
    """``input - alpha * other`` with broadcasting, correctly rounded; see docs/ops/sub.md."""
    if rest:
        other, alpha = _legacy_alpha("sub", other, rest, alpha)
    if other.__class__ is not _tensor.Tensor and _sparse_operand(other) is not None and _sparse_operand(input) is None:
        return other._sparse_dispatch("add", input, other, alpha=-alpha)  # dense - sparse: dense (PyTorch's)
    if type(alpha) is not int or alpha != 1:
        out = _plain_sub(input, _alpha_scaled("sub", _plain_sub, input, other, alpha))
        if out.dtype in HALF_PRECISION:
            wide, wide_other = half_in_float32(input, other)
            alpha = host_round(alpha, out.dtype)
            return cast(_plain_sub(wide, _alpha_scaled("sub", _plain_sub, wide, wide_other, alpha)), out.dtype)
        return out
    return _plain_sub(input, other)


# PyTorch computes a float16 or bfloat16 op that combines several operations in one kernel (add and sub with
# alpha, addcmul, addcdiv) in float32 and rounds its result once (alpha itself rounded to the half dtype); rounding each step to the half dtype
# instead moves about a quarter of the results by an ulp (SGD's ``p.add_(grad, alpha=-lr)`` and Adam's
# ``addcdiv_`` on bfloat16 weights). The steps in float32 are each rounded (no fused multiply-add), so a
# result can still differ from PyTorch's CPU by an ulp where its float32 value lies within an ulp of
# float32 of a half-precision rounding boundary.
HALF_PRECISION = (T.float16, T.bfloat16)


def half_in_float32(*values):
    """The tensors among ``values`` as float32 (Python numbers as they are), for an op computed in float32
    and rounded once to its half-precision result dtype."""
    return tuple(cast(v, T.float32) if isinstance(v, _tensor.Tensor) else v for v in values)


def div(input, other, *, rounding_mode=None):
    """``input / other`` with broadcasting, correctly rounded; see docs/ops/div.md.

    ``rounding_mode='trunc'`` or ``'floor'`` rounds the quotient (vkml/frontend/pointwise.py).

    A float tensor divided by a Python number that is a power of two in [2^-126, 2^126] (the
    count of a ``mean``, ``x / 2``) is multiplied by the exact reciprocal instead: quotient and
    product round the same real number, so every input gives the same bits, and a product is
    one instruction where the exact division is ~80.

    >>> div(vkml.tensor([1.0, 3.0]), 2).tolist()  # doctest: +SKIP
    [0.5, 1.5]
    """
    if rounding_mode is not None:
        return _pointwise.div_rounded(input, other, rounding_mode)
    if type(other) in (float, int) and isinstance(input, _tensor.Tensor) and input.dtype.is_float:
        if type(other) is int:
            lazy.check_scalar_fits("div", other, T.float32)  # PyTorch's OverflowError past 64 bits
        reciprocal = exact_reciprocal(other)
        if reciprocal is not None:
            out = _mul(input, reciprocal)
            if out._ctx is not None:  # PyTorch's node is a division's
                autograd.show(out, "DivBackward0", (autograd.edge(input), (None, 0)))
            return out
    return _divide(input, other)


def exact_reciprocal(divisor):
    """``1 / divisor`` where it is exact in float32 (``divisor`` a power of two in [2^-126, 2^126]), else
    None: a division by such a number is the product with it, the same bits for every input."""
    mantissa, exponent = math.frexp(divisor)
    if mantissa in (0.5, -0.5) and -126 <= exponent - 1 <= 126:  # (abs is the tensor op here)
        return 1.0 / divisor
    return None


_FLOATS = (T.float32, T.float64)
# exponent -> (input dtypes, the routine): PyTorch's pow_tensor_scalar takes sqrt, rsqrt and reciprocal for
# float, double and bfloat16 and ``x*x*x`` and ``1/(x*x)`` for float and double (aten/src/ATen/native/cpu/
# PowKernel.cpp); float16 stays on pow, as PyTorch's CPU kernel.
_POW_SPECIAL = {
    0.5: (_FLOATS + (T.bfloat16,), lambda x: _elementwise("sqrt", x)),
    -0.5: (_FLOATS + (T.bfloat16,), lambda x: _elementwise("rsqrt", x)),
    -1: (_FLOATS + (T.bfloat16,), lambda x: _elementwise("reciprocal", x)),
    3: (_FLOATS, lambda x: _mul(_mul(x, x), x)),
    -2: (_FLOATS, lambda x: _divide(1.0, _mul(x, x))),
}


def _pow_node_name(input, exponent) -> str:
    """PyTorch's overloads of pow: tensor ** scalar (0), tensor ** tensor (1), scalar ** tensor (2)."""
    if not hasattr(exponent, "_ctx"):
        return "PowBackward0"
    return "PowBackward1" if hasattr(input, "_ctx") else "PowBackward2"


@autograd.shown_as(_pow_node_name)
def pow(input, exponent):
    """``input ** exponent`` with broadcasting and PyTorch's result dtype (``int ** 2.0`` is float32).

    ``x ** 2`` is ``x * x`` (exact) where that keeps the dtype: a float tensor, or an integer
    tensor and the int 2. As in PyTorch's kernel, ``x ** 0.5`` is ``sqrt(x)``, ``x ** -0.5``
    ``1 / sqrt(x)``, ``x ** -1`` ``1 / x``, ``x ** 3`` ``x * x * x`` and ``x ** -2`` ``1 / (x * x)``
    (float32 and float64; the first three for bfloat16), each with pow's gradient.

    >>> (vkml.tensor([4.0, -0.0]) ** 0.5).tolist()  # doctest: +SKIP
    [2.0, -0.0]
    """
    exponent = exponent.item() if isinstance(exponent, np.generic) else exponent
    if type(exponent) is bool and isinstance(input, _tensor.Tensor) and input.dtype is T.bool_:
        # PyTorch's bool ** bool: x ** True is x, x ** False is True (its pow has no bool kernel
        # for a bool tensor exponent, which the registry refuses with its NotImplementedError)
        return _tensor.Tensor(input.node) if exponent else _elementwise("logical_or", input, True)
    if type(exponent) in (int, float) and isinstance(input, _tensor.Tensor):
        if exponent == 2:
            if input.dtype.is_float or (type(exponent) is int and input.dtype is not T.bool_):
                return _mul(input, input)
        elif exponent in _POW_SPECIAL and input.dtype in _POW_SPECIAL[exponent][0]:
            # PyTorch's kernels take these exponents by another routine (CPU and CUDA alike): its bits, and
            # pow's gradient formula recorded as PowBackward0 (which asks pow again for exponent - 1)
            out = _POW_SPECIAL[exponent][1](_tensor.Tensor(input.node))  # lazy: the value only
            return autograd.record("pow", (input, exponent), out) if input._requires_grad else out
    out = _elementwise("pow", input, exponent)
    if type(exponent) in (int, float) and out.dtype is not T.float32:
        # PyTorch converts the exponent to an integer or float16 result's dtype, and checks it fits
        lazy.check_scalar_fits("pow", exponent, out.dtype)
        if type(exponent) is int and exponent < 0 and not out.dtype.is_float:
            raise RuntimeError(f"'pow': Integers to negative integer powers are not allowed. (exponent {exponent})")
    return out


def where(condition, input=None, other=None):
    """``input`` where ``condition`` (a bool tensor) holds, else ``other``; broadcast.

    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)`` (it reads the condition back).
    """
    require_tensor("where", "condition", 1, condition)  # torch.where(True, x, y) is PyTorch's TypeError
    if input is None and other is None:
        return _indexing.nonzero(condition, as_tuple=True)
    if isinstance(input, np.generic):
        input = input.item()
    if isinstance(other, np.generic):
        other = other.item()
    out = _where_fast(condition, input, other)
    if out is None:
        out = _elementwise("where", condition, input, other)
    # PyTorch makes a Python value a tensor of the result's dtype, or of float32 for a float
    # (a float16 result takes any float: PyTorch converts it straight to float16, overflowing to inf)
    if type(input) in _INT_FLOAT and out.dtype is not T.float16:
        lazy.check_scalar_fits("where", input, out.dtype)
    if type(other) in _INT_FLOAT and out.dtype is not T.float16:
        lazy.check_scalar_fits("where", other, out.dtype)
    return out


_INT_FLOAT = frozenset((int, float))


def _where_fast(condition, input, other):
    """``_elementwise("where", ...)`` of plain tensors and Python numbers whose kinds were met before (a
    gradient rule's ``where(mask, g, 0.0)``): the node from lazy's fast path, recorded as _elementwise
    records it; None for anything else."""
    tensor, scalars = _tensor.Tensor, lazy.SCALAR_TYPES
    if type(condition) is not tensor:
        return None
    nodes, wants_grad = [condition._node if condition._base is None else condition.node], condition._requires_grad
    for value in (input, other):
        if type(value) is tensor:
            nodes.append(value._node if value._base is None else value.node)
            wants_grad = wants_grad or value._requires_grad
        elif type(value) in scalars:
            nodes.append(value)
        else:
            return None
    node = lazy.condition_fast("where", nodes)
    if node is None:
        return None
    out = _wrap(node) if not _memory_format.ACTIVE else _formatted(node, condition, input, other)
    return autograd.record("where", (condition, input, other), out) if wants_grad else out


def clamp(input, min=None, max=None):
    """Clamp into ``[min, max]`` with PyTorch's NaN rules (a NaN bound makes every output NaN)."""
    if min is None and max is None:
        raise RuntimeError("'clamp': At least one of 'min' or 'max' must not be None")  # PyTorch's class
    require_tensor("clamp", "input", 1, input)
    tensor_bounds = [v for v in (min, max) if isinstance(v, _tensor.Tensor)]
    if min is not None and max is not None and len(tensor_bounds) == 1 and tensor_bounds[0].ndim:
        # PyTorch's overloads take two Number bounds (a 0-dim tensor counts as one) or two Tensor bounds
        raise TypeError(
            f"clamp(): min and max must both be Tensors or both be numbers, got "
            f"({type(min).__name__}, {type(max).__name__})"
        )
    min, max = (v.item() if isinstance(v, np.generic) else v for v in (min, max))
    bounds = [v for v in (min, max) if v is not None]
    if len(bounds) == 1 and all(isinstance(v, _tensor.Tensor) and v.dtype is T.bool_ for v in (input, *bounds)):
        # PyTorch's clamp_min/clamp_max take a bool tensor bound for a bool tensor (not a Python bool, nor both)
        return _maximum(input, min) if max is None else _minimum(input, max)
    if max is None:
        out = _elementwise("clamp_min", input, min)
    elif min is None:
        out = _elementwise("clamp_max", input, max)
    else:
        out = _elementwise("clamp", input, min, max)
    for bound in (min, max):  # PyTorch converts a Python bound to the result's dtype
        if type(bound) in (int, float):
            lazy.check_scalar_fits("clamp", bound, out.dtype)
    if out._ctx is not None and not tensor_bounds:  # PyTorch's clamp of Scalar bounds, either or both
        autograd.show(out, "ClampBackward1", (autograd.edge(input),))
    return out


clip = clamp


@differentiable("cast")
def cast(input, dtype: T.DType):
    """``input.to(dtype)``: PyTorch's conversion rules (float→int truncates; NaN→INT_MIN; f32→f16 RNE)."""
    node = _tensor_node("to", input)
    dtype = python_type_dtype(dtype)
    if not isinstance(dtype, T.DType):
        raise DTypeError(f"'to': expected a vkml dtype, got {dtype!r}")
    refuse_no_tensor_dtype("to", dtype)
    check_device_dtype("to", dtype, node.device)
    if node.dtype is dtype:
        return input
    out = _wrap(lazy.cast_node(node, dtype))
    return _memory_format.propagate(out, input) if _memory_format.ACTIVE else out


@differentiable("to_device")
def to_device(input, device):
    """A copy of ``input`` on ``device`` (tensors never move on their own)."""
    dev = get_device(device) if not hasattr(device, "allocate") else device
    node = _tensor_node("to", input)
    if dev is node.device:
        return input
    if dev.kind == "meta":  # the values are dropped: nothing to read back
        return meta_tensor(node.shape, input.dtype)
    return _from_numpy(input._stored(), dev, input.dtype, "to")


def meta_tensor(shape: tuple, dtype: T.DType):
    """A tensor of ``shape`` and ``dtype`` on the meta device: no values (vkml/runtime/meta.py)."""
    device = get_device("meta")
    node = Node(Op.BUFFER, (), None, shape, dtype, device)
    node.buffer = device.allocate(dtype, node.numel)
    return _tensor.Tensor(node)


def _from_numpy(array: np.ndarray, device, dtype: T.DType | None = None, op: str = "tensor"):
    """A tensor of ``array``'s elements (of ``dtype``, whose storage they are: bfloat16 bits as int16)."""
    dtype = dtype or T.from_numpy(array.dtype)
    check_device_dtype(op, dtype, device)
    buf = device.upload_new(dtype, np.ascontiguousarray(array).reshape(-1))
    note_uploaded_range(buf, array)  # labels: their range check passes at the call (nn/functional.py)
    node = Node(Op.BUFFER, (), None, array.shape, dtype, device)
    node.buffer = buf
    return _tensor.Tensor(node)


# ---------------------------------------------------------------------- reductions


def _reduce(name: str, input, dim, keepdim: bool, op: str):
    """Reduction ``name`` as public function ``op`` (``max`` reduces with amax): dims checked, recorded."""
    node = _tensor_node(op, input)
    dim = lazy.reduce_dims(op, dim, len(node.shape))
    if name == "prod" and _multiplies_in_order(node, dim):
        out = _product_in_order(_wrap(node), dim[0], keepdim)
    else:
        out = _wrap(lazy.reduce(name, node, dim, keepdim, op))
    out = autograd.record(name, (input,), out, {"dim": dim, "keepdim": keepdim})
    if dim is not None and name in _DIM_OVERLOADS and out._ctx is not None:  # PyTorch's node of the dim overload
        autograd.show(out, _DIM_OVERLOADS[name], (autograd.edge(input),))
    return out


_DIM_OVERLOADS = {"sum": "SumBackward1", "prod": "ProdBackward1"}

# PyTorch's CPU product of float16/bfloat16 along one dim multiplies element after element in the dtype
# (each product rounded) where its reduction is not vectorized along that dim (an outer dim, or a short
# inner one); vkml does the same for dims of up to this many elements (a multiply each, one fused kernel)
_IN_ORDER_PRODUCT = 16


def _multiplies_in_order(node, dims) -> bool:
    """Whether ``prod`` over ``dims`` of ``node`` multiplies its elements one after another in the dtype."""
    if node.dtype not in HALF_PRECISION or dims is None or len(dims) != 1 or not node.shape:
        return False  # a 0-d tensor's dim 0 is itself: nothing to multiply
    if not node.shape[dims[0]]:
        return False
    return node.shape[dims[0]] <= _IN_ORDER_PRODUCT


def _product_in_order(x, d: int, keepdim: bool):
    """Π x along ``d``, left to right, each product rounded to x's dtype (not recorded: ``prod``'s rule is)."""
    x = x.detach()
    out = x.select(d, 0).clone()  # a new tensor, not a view of x, where the dim has one element
    for i in range(1, x.shape[d]):
        out = out * x.select(d, i)
    return unsqueeze(out, d) if keepdim else out


_TORCH_INT_NAMES = {"int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool"}


def _refuse_int_dtype_under_grad(input, dtype) -> None:
    """PyTorch's RuntimeError for a reduction or scan to a non-float ``dtype=`` of an input that requires
    grad (``x.sum(dtype=torch.int32)``): its result could not carry the gradient."""
    if dtype is None or getattr(dtype, "is_float", True) or not autograd.is_grad_enabled():
        return
    if getattr(input, "requires_grad", False) is True:
        raise RuntimeError(f"Autograd not support dtype: {_TORCH_INT_NAMES.get(dtype.name, dtype.name)}")


def _reduction(name):
    def fn(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        keepdim = _keepdim_or_keepdims(name, keepdim, keepdims)
        dim = _dim_or_axis(name, dim, axis)
        if name == "sum" and type(input) is not _tensor.Tensor and _sparse_operand(input) is not None:
            return input._sparse_dispatch("sum", input, dim, keepdim, dtype=dtype)  # torch.sum(sparse)
        if dtype is None:
            return _reduce(name, input, dim, keepdim, name)
        if name in ("amax", "amin"):
            raise TypeError(f"'{name}' got an unexpected keyword argument 'dtype'")
        # PyTorch converts the input to ``dtype`` first and reduces in it
        node = _tensor_node(name, input)
        lazy.reduce_dims(name, dim, len(node.shape))  # a bad dim is PyTorch's IndexError first
        _refuse_int_dtype_under_grad(input, dtype)
        return cast(_reduce(name, cast(input, dtype), dim, keepdim, name), dtype)

    fn.__name__ = name
    fn.__doc__ = f"``{name}`` over ``dim`` (all dims when None); see docs/ops/{name}.md. Example: ``x.{name}(dim=1)``."
    return fn


sum, prod, amax, amin = (_reduction(n) for n in ("sum", "prod", "amax", "amin"))


def _dim_or_axis(op: str, dim, axis, default=None):
    """``dim``, or PyTorch's alias ``axis=`` for it (naming both is a TypeError; ``default``: ``dim``'s
    default, which a given ``axis`` replaces)."""
    if axis is None:
        return dim
    if dim != default:
        raise TypeError(f"'{op}': got both 'dim' and its alias 'axis' ({dim!r}, {axis!r})")
    return axis


def _keepdim_or_keepdims(op: str, keepdim, keepdims):
    """``keepdim``, or PyTorch's numpy-style alias ``keepdims=`` for it (``x.sum(dim=1, keepdims=True)``);
    naming both is a TypeError."""
    if keepdims is None:
        return keepdim
    if keepdim is not False:
        raise TypeError(f"'{op}': got both 'keepdim' and its alias 'keepdims' ({keepdim!r}, {keepdims!r})")
    return keepdims


def _shift_max(input, dim=None, keepdim=False, op="shift_max"):
    """softmax's shift: a cheaper max that leaves every bit of the composites unchanged (_shift_by_max)."""
    return _reduce("shift_max", input, dim, keepdim, op)


def _arg_reduction(name: str, input, dim, keepdim: bool, op: str):
    node = _tensor_node(op, input)
    if dim is None:
        if node.numel == 0:
            lazy.reduce(name, node, None, False, op)  # raises PyTorch's error for an empty input
        flat = lazy.view_node(node, lambda s: s.reshape((node.numel,))) if node.shape else node
        out = lazy.reduce(name, flat, None, False, op)
        if keepdim and node.shape:  # PyTorch: every dim kept as size 1 (was: a 0-d result)
            ones = (1,) * len(node.shape)
            out = lazy.view_node(out, lambda s: s.reshape(ones))
        return _wrap(out)
    return _wrap(lazy.reduce(name, node, lazy.normalize_dim(op, dim, len(node.shape)), keepdim, op))


def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index (int64) of the first maximum — or of the first NaN — over ``dim`` (flattened when None)."""
    keepdim = _keepdim_or_keepdims("argmax", keepdim, keepdims)
    return _arg_reduction("argmax", input, _dim_or_axis("argmax", dim, axis), keepdim, "argmax")


def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index (int64) of the first minimum — or of the first NaN — over ``dim`` (flattened when None)."""
    keepdim = _keepdim_or_keepdims("argmin", keepdim, keepdims)
    return _arg_reduction("argmin", input, _dim_or_axis("argmin", dim, axis), keepdim, "argmin")


def max(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``max(x)`` is ``amax``; ``max(x, dim)`` returns (values, indices) like PyTorch; ``max(x, y)`` is ``maximum``."""
    keepdim = _keepdim_or_keepdims("max", keepdim, keepdims)
    if isinstance(dim, _tensor.Tensor):
        require_tensor("max", "input", 1, input)
        return _maximum(input, dim)
    dim = _dim_or_axis("max", dim, axis)
    return _extreme("max", "amax", "argmax", _return_types.max, input, dim, keepdim)


def min(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``min(x)`` is ``amin``; ``min(x, dim)`` returns (values, indices) like PyTorch; ``min(x, y)`` is ``minimum``."""
    keepdim = _keepdim_or_keepdims("min", keepdim, keepdims)
    if isinstance(dim, _tensor.Tensor):
        require_tensor("min", "input", 1, input)
        return _minimum(input, dim)
    dim = _dim_or_axis("min", dim, axis)
    return _extreme("min", "amin", "argmin", _return_types.min, input, dim, keepdim)


def _extreme(op: str, values_op: str, index_op: str, result_type, input, dim, keepdim: bool):
    """``op(x)`` (the ``values_op`` reduction of all), or ``op(x, dim)``: (values, indices) as ``result_type``."""
    if dim is None:
        out = _reduce(values_op, input, None, False, op)
        # PyTorch's max()/min() of all share the gradient among the NaNs when the result is NaN
        # (amax's rule gives NaN everywhere then): a rule of their own
        out = autograd.record("extreme_of_all", (input,), out.detach(), {})
        if out._ctx is not None:  # PyTorch's node: MaxBackward1 / MinBackward1
            autograd.show(out, f"{op.capitalize()}Backward1", (autograd.edge(input),))
        return out
    node = _tensor_node(op, input)
    dim = lazy.normalize_dim(op, dim, len(node.shape))
    indices = _arg_reduction(index_op, input, dim, keepdim, op)
    values = _wrap(lazy.reduce(values_op, node, dim, keepdim, op))
    values = autograd.record("value_at_index", (input,), values, {"dim": dim, "keepdim": keepdim, "indices": indices})
    if values._ctx is not None:  # PyTorch's node: MaxBackward0 / MinBackward0
        autograd.show(values, f"{op.capitalize()}Backward0", (autograd.edge(input),))
    return result_type(values, indices)


def _grad_value_at_index(c):
    # max(dim) and min(dim): the whole gradient goes to the element the index names, as PyTorch's
    # (amax's rule shares it among ties)
    (x,) = c.inputs
    if not x.ndim:
        return (c.g,)
    d, indices = c.attrs["dim"], c.attrs["indices"]
    g = c.g if c.attrs["keepdim"] else c.F.unsqueeze(c.g, d)
    at = indices if c.attrs["keepdim"] else c.F.unsqueeze(indices, d)
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    positions = c.F.arange(x.shape[d], dtype=c.F.int64, device=x.device).reshape(*shape)
    return (c.F.where(positions == at, g, 0.0),)


_grads.RULES["value_at_index"] = _grad_value_at_index


def _grad_extreme_of_all(c):
    # PyTorch's evenly_distribute_backward: the elements equal to the result, or the NaNs when it is NaN
    (x,) = c.inputs
    F = c.F
    hit = (x == c.output) | (F.isnan(x) & F.isnan(c.output))
    return (F.where(hit, c.g / hit.sum(), 0.0),)


_grads.RULES["extreme_of_all"] = _grad_extreme_of_all


def _reduced_count(node: Node, dims) -> int:
    """How many elements each output of a reduction over ``dims`` (checked: None or a tuple) takes."""
    if dims is None or not node.shape:
        return node.numel
    return math.prod(node.shape[d] for d in dims)


@autograd.shown_as(
    lambda input, dim=None, *a, axis=None, **k: "MeanBackward0" if dim is None and axis is None else "MeanBackward1"
)
def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Mean over ``dim``: the tree sum divided by the count (float dtypes only, as PyTorch).

    float16 sums and divides in float32 and rounds once. mean of an empty dim is NaN.
    ``dtype`` (a float dtype) converts the input first, as PyTorch.
    """
    keepdim = _keepdim_or_keepdims("mean", keepdim, keepdims)
    dim = _dim_or_axis("mean", dim, axis)
    if dtype is not None:
        _tensor_node("mean", input)
        if not isinstance(dtype, T.DType) or not dtype.is_float:
            raise RuntimeError(
                f"'mean': could not infer output dtype. Optional dtype must be a floating point dtype, got {dtype!r}"
            )
        input = cast(input, dtype)
    node = _tensor_node("mean", input)
    if not node.dtype.is_float:
        raise DTypeError(f"'mean': input dtype must be floating point, got {node.dtype.name}")
    dim = lazy.reduce_dims("mean", dim, len(node.shape))
    n = _reduced_count(node, dim)
    wide = cast(input, work_dtype(node.dtype))
    total = sum(wide, dim, keepdim)
    out = div(total, float(n)) if n else _mul(total, float("nan"))
    return cast(out, node.dtype)


# ---------------------------------------------------------------------- composites


def _float_work(input, op: str, integers: bool = False):
    """(float32 tensor to compute in, dtype to return): float16 computes in float32, as PyTorch CPU.

    ``integers``: an integer or bool input computes in float32 and returns float32 (logsumexp,
    as PyTorch); otherwise it is PyTorch's error.
    """
    node = _tensor_node(op, input)
    if not node.dtype.is_float:
        if not integers:  # PyTorch's NotImplementedError: its kernel has no integer or bool form
            raise DTypeNotImplementedError(f"'{op}': expected a floating point tensor, got {node.dtype.name}")
        return cast(input, T.float32), T.float32
    return cast(input, work_dtype(node.dtype)), node.dtype


def _shift_by_max(x, dim, op: str):
    """(x - m, m) with m the row's maximum by ``shift_max``: two instructions a combine, not twelve.

    The composites below give the same bits with it as with ``amax``. In a row without NaN the
    two differ at most in the sign of a zero m, and only where the row holds both +0 and -0: then
    x - m differs at most in the sign of a zero, exp(±0) = 1, and the sum S >= 2 (two terms of
    1), so log(S) > 0 and both signs give the same log_softmax and logsumexp. In a row with NaN
    every result is NaN either way: the NaN's own term is NaN, and so is the sum.
    """
    m = _shift_max(x, dim, keepdim=True, op=op)
    return x - m, m


def softmax(input, dim: int = None, dtype=None, *, axis: int = None):
    """exp(x - max) * (1 / sum(exp(x - max))) over ``dim`` (``axis=`` is PyTorch's alias). All -inf
    rows give NaN, as PyTorch. ``dtype`` casts the input first, as PyTorch's.

    The quotient is a product by the row's reciprocal, correctly rounded once per row, not a
    correctly rounded division per element: a deliberate, bounded divergence from PyTorch's
    formula, which divides (one multiply a element instead of a ~70-instruction division).
    With S the row's sum and r = fl(1/S), |r - 1/S| <= 2^-24 / S, so e * r is within 2^-24
    relative of e / S (at most 1 ulp of it; for a subnormal result under half of 2^-149)
    before its own rounding (half an ulp): at most 1.5 ulp from e / S, so at most one float
    from the correctly rounded quotient, which a division gives to half an ulp. The result is
    within 3 + |x - max| + ceil(log2 n) ulp of the exact softmax (exp ≤ 1 ulp; the rounding of
    x - max, as PyTorch; the tree sum; this product).
    S is always safe to invert: in a row without NaN or +inf and not all -inf the max is
    finite, its own term is exp(0) = 1 exactly and no term is negative or above 1 + 2^-23
    (exp of x - max <= 0, within 1 ulp), and rounding is monotonic, so 1 <= S <= 2n: 1/S is a
    normal float, never inf or subnormal. In any other row S is NaN, and so is every result,
    as with the division.

    The max is ``shift_max``'s, one compare and one select a combine: it can differ from
    amax's only in the sign of a zero or in a row with NaN, and neither changes a bit of the
    result (``_shift_by_max``).

    Where a row fits one chunk of the device's rows kernel (``Tuning``: 8192 floats on a GPU with 48 KiB of shared memory), max, sum
    and quotient are one kernel that reads x once and computes each exp once (vkml/schedule/scheduler.py,
    rule 7), and the reciprocal once per row; longer rows take two. Both give the same bits.
    """
    if axis is not None:
        if dim is not None:
            raise TypeError("'softmax': received both dim and its alias axis")
        dim = axis
    if dim is None:
        raise TypeError("'softmax': argument 'dim' must be an int, got None")
    return _softmax(input if dtype is None else cast(input, dtype), dim)


def _exp_of_shifted(shifted):
    """exp(x - max) for softmax and log_softmax: the contract's exp. (A routine for x <= 0 alone saved
    three instructions an element, but the row kernel of a wide softmax then held more than twice the
    registers and ran slower: docs/benchmarks.md, session 12.)"""
    return _exp(shifted)


@differentiable("softmax")
def _softmax(input, dim: int):
    """``softmax`` of an input already in the dtype asked for: the op autograd records."""
    x, dtype = _float_work(input, "softmax")
    dim = lazy.normalize_dim("softmax", dim, x.ndim)
    if x.numel() == 0:  # no rows, or rows of no elements: nothing to normalise (PyTorch's empty result)
        return cast(x, dtype)
    shifted, _ = _shift_by_max(x, dim, "softmax")
    e = _exp_of_shifted(shifted)
    return cast(e * div(1.0, sum(e, dim, keepdim=True)), dtype)


def log_softmax(input, dim: int, dtype=None):
    """x - max - log(sum(exp(x - max))) over ``dim``; ``dtype`` casts the input first, as PyTorch's."""
    return _log_softmax(input if dtype is None else cast(input, dtype), dim)


@differentiable("log_softmax")
def _log_softmax(input, dim: int):
    """``log_softmax`` of an input already in the dtype asked for: the op autograd records."""
    x, dtype = _float_work(input, "log_softmax")
    dim = lazy.normalize_dim("log_softmax", dim, x.ndim)
    if x.numel() == 0:  # no rows, or rows of no elements: nothing to normalise (PyTorch's empty result)
        return cast(x, dtype)
    shifted, _ = _shift_by_max(x, dim, "log_softmax")
    total = sum(_exp_of_shifted(shifted), dim, keepdim=True)
    if dtype in HALF_PRECISION and dim == x.ndim - 1:
        # PyTorch's last-dim kernel keeps the sum of exponentials, and its log, in float16/bfloat16
        return cast(shifted - cast(cast(_log(cast(cast(total, dtype), x.dtype)), dtype), x.dtype), dtype)
    return cast(shifted - _log(total), dtype)


def logsumexp(input, dim=None, keepdim: bool = False, *, axis=None, keepdims=None):
    """log(sum(exp(x))) over ``dim``, shifted by the finite max (PyTorch's rule: all -inf gives -inf).

    Integer and bool inputs compute in float32 and give float32, as PyTorch. ``dim`` is an int
    or a tuple of ints (``axis=`` is its alias).
    """
    keepdim = _keepdim_or_keepdims("logsumexp", keepdim, keepdims)
    dim = _dim_or_axis("logsumexp", dim, axis)
    if dim is None:
        raise TypeError("'logsumexp': missing the required argument 'dim'")
    return _logsumexp(input, dim, keepdim)


@differentiable("logsumexp")
def _logsumexp(input, dim, keepdim: bool = False):
    x, dtype = _float_work(input, "logsumexp", integers=True)
    node = x.node
    dim = lazy.reduce_dims("logsumexp", dim, len(node.shape))
    if _reduced_count(node, dim) == 0:
        return cast(sum(x, dim, keepdim) + float("-inf"), dtype)
    _, m = _shift_by_max(x, dim, "logsumexp")
    m = where(abs(m) == float("inf"), 0.0, m)
    out = _log(sum(_exp(x - m), dim, keepdim=True)) + m
    if not keepdim:
        out = squeeze(out, dim)
    return cast(out, dtype)


def matmul(input, other):
    """Matrix product with PyTorch's rules for 1-D and batched operands.

    Each float output adds its float32 products in ascending k, starting from -0.0: the
    same bits on every device (order and error bound: docs/ops/matmul.md), except float16
    products on cooperative matrices, which stay within the bound stated there.
    float16 and bfloat16 multiply and sum in float32 and round once. float64 multiplies in
    float64 and adds the k products over the contract's fixed pairwise tree (as ``sum``).
    Example: ``vkml.ones(2, 3) @ vkml.ones(3, 4)`` is a 2×4 tensor of 3.0.
    """
    sparse = _sparse_operand(input, other)
    if sparse is not None:
        return sparse._sparse_dispatch("matmul", input, other)
    a, b = _tensor_node("matmul", input), _tensor_node("matmul", other)
    lazy.check_devices("matmul", [a, b])
    if not a.shape or not b.shape:
        raise ShapeError(f"'matmul': both operands need at least 1 dim, got shapes {a.shape} and {b.shape}")
    check_matmul_dtypes("matmul", a.dtype, b.dtype, len(a.shape), len(b.shape))  # PyTorch raises, never promotes
    if a.dtype is T.bool_ or b.dtype is T.bool_:  # PyTorch's class: no bool kernel
        raise DTypeNotImplementedError("'matmul' does not support bool tensors: \"dot\" not implemented for 'Bool'")
    x, y = input, other
    squeeze_a, squeeze_b = len(a.shape) == 1, len(b.shape) == 1
    if squeeze_a:
        x = unsqueeze(x, 0)
    if squeeze_b:
        y = unsqueeze(y, 1)
    # the shapes of x and y, read off the nodes (a Tensor's shape is a Size, whose slices cost calls)
    x_shape = (1, *a.shape) if squeeze_a else a.shape
    y_shape = (*b.shape, 1) if squeeze_b else b.shape
    m, k = x_shape[-2:]
    k2, n = y_shape[-2:]
    if k != k2:
        if len(b.shape) == 2 and len(a.shape) >= 2:  # PyTorch's mm (a batch of rows folded into one matrix)
            rows = math.prod(a.shape[:-1])
            raise ShapeError(f"'matmul': mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {k2}x{n})")
        raise ShapeError(f"'matmul': shapes {a.shape} and {b.shape} cannot be multiplied ({k} != {k2})")
    batch = lazy.broadcast_shapes("matmul", x_shape[:-2], y_shape[:-2])
    result_dtype = promote_types(a.dtype, b.dtype)
    if a.dtype is T.float16 and b.dtype is T.float16:
        # Cooperative-matrix kernels load float16 buffers as stored (vectors, whole tiles): an aligned
        # window of a realized tensor (x[i:i + n]) is given to them as its alias, not as a view.
        for t in (x, y):
            lazy.realize_as_alias(t.node)
    if result_dtype.is_float and k > 0 and result_dtype is not T.float64:  # the tiled kernel (kernels/matmul/tiled.py)
        chunks = split_k_chunks(math.prod(batch), m, n, k)
        if chunks > 1:  # few outputs, long sums: chunks of k in parallel, their float32 sums added by ``sum``
            xs = transpose(reshape(x, *x.shape[:-1], chunks, k // chunks), -3, -2)
            ys = reshape(y, *y.shape[:-2], chunks, k // chunks, n)
            partial = _product(xs, ys, (*batch, chunks), m, k // chunks, n, T.float32)
            out = cast(sum(partial, -3), result_dtype)
        else:
            out = _product(x, y, batch, m, k, n, result_dtype)
    else:  # integers (exact in any order), float64 (the sum's tree) and k == 0 (zeros): a sum of products
        wide = T.float32 if result_dtype in (T.float16, T.bfloat16) else result_dtype
        xa = expand(reshape(cast(x, wide), *x.shape[:-1], 1, k), *batch, m, n, k)
        yb = expand(unsqueeze(transpose(cast(y, wide), -1, -2), -3), *batch, m, n, k)
        out = cast(sum(xa * yb, -1), result_dtype)
    if squeeze_a:
        out = squeeze(out, -2)
    if squeeze_b:
        out = squeeze(out, -1)
    return out


_matmul_recorded = differentiable("matmul", inputs=("input", "other"))(matmul)


@functools.wraps(matmul)
def matmul(input, other):  # noqa: F811  (the recorded op, shown as PyTorch's nodes)
    out = _matmul_recorded(input, other)
    if getattr(out, "_ctx", None) is not None:
        shown = _matmul_graph(input, other)
        if shown is not None:
            autograd.show(out, *shown)
    return out


def _reshaped_edge(t, shape: tuple, link: tuple) -> tuple:
    """``link`` (the edge to ``t``'s node) through PyTorch's nodes of ``t.reshape(shape)``: a ``ViewBackward0``
    where the reshape is a view, else the copy's ``CloneBackward0`` and ``UnsafeViewBackward0``."""
    if link[0] is None:
        return link
    if _mutation.viewable(t, shape):
        return (autograd.GraphNode("ViewBackward0" if t.is_contiguous() else "ReshapeAliasBackward0", (link,)), 0)
    return (autograd.GraphNode("UnsafeViewBackward0", ((autograd.GraphNode("CloneBackward0", (link,)), 0),)), 0)


def _matmul_graph(input, other) -> tuple | None:
    """PyTorch's node and edges of ``matmul(input, other)`` (its ``_matmul_impl``: dot, mv, mm, a batch folded
    into mm or mv, bmm of expanded operands); None for the broadcasting cases vkml shows as its own node."""
    da, db = input.ndim, getattr(other, "ndim", 0)
    ea, eb = autograd.edge(input), autograd.edge(other)
    if db == 1 and da <= 2:
        return ("MvBackward0" if da == 2 else "DotBackward0"), (ea, eb)
    if da == 1 and db == 2:
        row = ea if ea[0] is None else (autograd.GraphNode("UnsqueezeBackward0", (ea,)), 0)
        return "SqueezeBackward4", ((autograd.GraphNode("MmBackward0", (row, eb)), 0),)
    if da >= 3 and db in (1, 2):  # the batch folded into the rows of one matrix
        flat = _reshaped_edge(input, (math.prod(input.shape[:-1]), input.shape[-1]), ea)
        return "UnsafeViewBackward0", (
            (autograd.GraphNode("MmBackward0" if db == 2 else "MvBackward0", (flat, eb)), 0),
        )
    if da >= 3 and db >= 3 and tuple(input.shape[:-2]) == tuple(other.shape[:-2]):

        def batched(t, link):
            if link[0] is None:
                return link
            expanded = (autograd.GraphNode("ExpandBackward0", (link,)), 0)
            return _reshaped_edge(t, (math.prod(t.shape[:-2]), *t.shape[-2:]), expanded)

        bmm = autograd.GraphNode("BmmBackward0", (batched(input, ea), batched(other, eb)))
        return "UnsafeViewBackward0", ((bmm, 0),)
    return None


def _product(x, y, batch: tuple, m: int, k: int, n: int, result_dtype: T.DType):
    """The matmul node of ``x`` (..., m, k) and ``y`` (..., k, n) broadcast to ``batch``: float32 products
    added in ascending k from -0.0, rounded once to ``result_dtype`` (kernels/matmul/)."""
    # An integer operand is converted to float32 (as matmul's sum of products would): float16 widens in the kernel.
    xa, yb = x.node, y.node
    if not xa.dtype.is_float:
        xa = lazy.cast_node(xa, T.float32)
    if not yb.dtype.is_float:
        yb = lazy.cast_node(yb, T.float32)
    xa, yb = lazy.expand_to(xa, (*batch, m, k)), lazy.expand_to(yb, (*batch, k, n))
    return _wrap(Node(Op.MATMUL, (xa, yb), Matmul(T.float32), (*batch, m, n), result_dtype, xa.device))


# Products with fewer 64×64 output tiles than this may split k: about two workgroups of 128×128 tiles per core
# of a 132-core GPU (256 left a conv's weight gradient at one workgroup per core: docs/benchmarks.md, session 15).
SPLIT_K_TILES = 1024
SPLIT_K_CHUNK = 2048  # the shortest chunk of k a split leaves


def split_k_chunks(batch_count: int, m: int, n: int, k: int) -> int:
    """How many chunks of k a float matmul of ``batch_count`` products of (m, k) @ (k, n) adds separately.

    A product with few outputs and a long k (a weight gradient: 576 × 200704 @ 200704 × 64 for a
    3×3 convolution of 64 channels at batch 64) would leave a GPU's cores idle, each output tile's
    k walked by one workgroup. Split, chunk c of the k products is its own product (float32,
    ascending k from -0.0), and the chunks' float32 results are added by ``sum``'s fixed tree, then
    rounded once. The count depends on the shape alone, so every device computes the same order
    (docs/ops/matmul.md): the largest divisor of k that is at most ``SPLIT_K_TILES`` / tiles and
    leaves chunks of at least ``SPLIT_K_CHUNK``; 1 (no split) for every other product.

    >>> split_k_chunks(1, 576, 64, 200704), split_k_chunks(1, 4096, 4096, 4096), split_k_chunks(1, 64, 64, 4096)
    (98, 1, 2)
    """
    tiles = batch_count * -(-m // 64) * -(-n // 64)
    if tiles >= SPLIT_K_TILES or k < 2 * SPLIT_K_CHUNK:
        return 1
    wanted, longest = -(-SPLIT_K_TILES // tiles), k // SPLIT_K_CHUNK
    most = wanted if wanted < longest else longest  # ``min`` is vkml.min in this module
    return next((c for c in range(most, 1, -1) if k % c == 0), 1)


# ---------------------------------------------------------------------- movement


_INT = frozenset((int,))


def _shape_args(op: str, shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if _INT.issuperset(map(type, shape)):  # the usual sizes: Python ints (never bools), checked in C
        return tuple(shape)
    for s in shape:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"'{op}': sizes must be integers, got {shape}")
    return tuple(int(s) for s in shape)


def keyword_sizes(method: str, sizes: tuple, keyword: dict, name: str) -> tuple:
    """A movement method's sizes given as PyTorch also takes them, by the one keyword ``name``
    (``x.reshape(shape=(2, 3))``, ``x.permute(dims=(1, 0))``): the method's ``*sizes``; any other
    keyword, or the keyword with sizes, is Python's TypeError."""
    for key in keyword:
        if key != name:
            raise TypeError(f"{method}() got an unexpected keyword argument '{key}'")
    if sizes:
        raise TypeError(f"{method}() got multiple values for argument '{name}'")
    return (keyword[name],)


def _view(input, edit):
    return _wrap(lazy.view_node(input.node, edit))


@differentiable("reshape")
def _reshape_recorded(input, *sizes, shape=None):
    """The same elements in a new shape (one dim may be -1; ``shape=`` as PyTorch's keyword). Never copies."""
    node = _tensor_node("reshape", input)
    if shape is not None and sizes:
        raise TypeError("reshape() got multiple values for argument 'shape'")
    shape = _shape_args("reshape", sizes if shape is None else (shape,))  # Python ints: a key of _ORDERS
    key = ("reshape", node.shape, shape)
    checked = _ORDERS.get(key)
    if checked is None:
        checked = _kept_order(key, _reshaped_shape(node.shape, shape))
    return _mutation.link_reshape(_wrap(lazy.reshape_node(node, checked)), input, checked)


@functools.wraps(_reshape_recorded)
def reshape(input, *sizes, shape=None):
    out = _reshape_recorded(input, *sizes, shape=shape)
    if getattr(out, "_ctx", None) is not None and out is not input and input._base is not None:
        # PyTorch's reshape of a non-contiguous tensor: ``_reshape_alias`` where a view can do, else a copy
        # (its clone's and ``_unsafe_view``'s nodes); a contiguous one is a plain ``view``
        if not _mutation.viewable(input, out.shape):
            autograd.show_chain(out, input, ("CloneBackward0", "UnsafeViewBackward0"))
        elif not input.is_contiguous():
            autograd.show(out, "ReshapeAliasBackward0", (autograd.edge(input),))
    return out


def _reshaped_shape(old: tuple, shape: tuple) -> tuple:
    """``reshape``'s ``shape`` checked against the ``old`` shape's size, its -1 replaced by the size it stands for."""
    numel = math.prod(old)
    if shape.count(-1) > 1:
        raise ShapeError(f"'reshape': only one dim can be -1, got {shape}")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 and numel == 0:
            raise ShapeError(
                f"'reshape': cannot reshape tensor of 0 elements into shape {list(shape)} because the unspecified "
                "dimension size -1 can be any value and is ambiguous"
            )
        if known == 0 or numel % known:
            raise ShapeError(f"'reshape': shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if any(s < 0 for s in shape) or math.prod(shape) != numel:
        raise ShapeError(f"'reshape': shape '{list(shape)}' is invalid for input of size {numel} (shape {old})")
    return shape


# Checked dims of permute and transpose by (dims, ndim, the dims' types), and expand's checked sizes by (shape,
# sizes): a program permutes and broadcasts few ways, and a key with the types never lets a bool or a numpy
# integer pass for the int it equals (expand's sizes are Python ints already). Errors are not kept.
_ORDERS: dict = {}
_ORDERS_KEPT = 1024


def _kept_order(key: tuple, order: tuple) -> tuple:
    if len(_ORDERS) >= _ORDERS_KEPT:
        _ORDERS.clear()
    _ORDERS[key] = order
    return order


def _permutation(dims: tuple, nd: int) -> tuple:
    """``permute``'s ``dims`` checked against ``nd`` dims, each made non-negative."""
    if len(dims) == 1 and type(dims[0]) is not int:  # permute(x, (1, 0)): sizes given as one sequence
        return _checked_permutation(dims, nd)
    key = (nd, *dims, *map(type, dims))
    found = _ORDERS.get(key)
    return found if found is not None else _kept_order(key, _checked_permutation(dims, nd))


def _checked_permutation(dims: tuple, nd: int) -> tuple:
    dims = _shape_args("permute", dims)
    norm = tuple(lazy.normalize_dim("permute", d, nd) for d in dims)
    if len(set(norm)) != len(norm):
        raise ShapeError(f"'permute': duplicate dims are not allowed, got {dims}")
    if len(norm) != nd:
        raise ShapeError(
            "'permute': number of dimensions in the tensor input does not match the length of the desired ordering "
            f"of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(norm)}"
        )
    if sorted(norm) != list(range(nd)):
        raise ShapeError(f"'permute': dims {dims} are not a permutation of {nd} dims")
    return norm


@differentiable("permute")
def permute(input, *sizes, dims=None):
    """Reorder dims (a view); ``dims=`` as PyTorch's keyword."""
    node = _tensor_node("permute", input)
    if dims is not None and sizes:
        raise TypeError("permute() got multiple values for argument 'dims'")
    norm = _permutation(sizes if dims is None else (dims,), len(node.shape))
    return _mutation.link_view(_wrap(lazy.permute_node(node, norm)), input, ("permute", norm))


def transpose(input, dim0: int, dim1: int):
    """Swap two dims (a view)."""
    nd = len(_tensor_node("transpose", input).shape)
    key = ("transpose", nd, dim0, dim1, type(dim0), type(dim1))
    order = _ORDERS.get(key)
    if order is None:
        d0, d1 = lazy.normalize_dim("transpose", dim0, nd), lazy.normalize_dim("transpose", dim1, nd)
        if nd == 0:
            return input
        swapped = list(range(nd))
        swapped[d0], swapped[d1] = swapped[d1], swapped[d0]
        order = _kept_order(key, tuple(swapped))
    return _shown_view(permute(input, *order), input, "TransposeBackward0")


def _shown_view(out, input, name: str):
    """``out``, a view op's result recorded as vkml's reshape or permute, shown as PyTorch's node ``name``."""
    if out._ctx is not None and out is not input:
        autograd.show(out, name, (autograd.edge(input),))
    return out


@differentiable("expand")
def expand(input, *sizes):
    """Broadcast size-1 dims to ``sizes`` (-1 keeps a dim); a view with stride 0."""
    node = _tensor_node("expand", input)
    sizes = _shape_args("expand", sizes)  # Python ints: the key below holds no numpy int or bool
    key = ("expand", node.shape, sizes)
    full = _ORDERS.get(key)
    if full is None:
        if len(sizes) < len(node.shape):  # PyTorch's words, which name the legacy tensor type
            raise ShapeError(
                f"expand({input.type()}{{{list(node.shape)}}}, size={list(sizes)}): the number of sizes provided "
                f"({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({len(node.shape)})"
            )
        full = _kept_order(key, _expanded_shape(node.shape, sizes))
    return _mutation.link_view(_wrap(lazy.expand_to(node, full)), input, ("expand", full, node.shape))


def _expanded_shape(shape: tuple, sizes: tuple) -> tuple:
    """``expand``'s ``sizes`` checked against ``shape``, each -1 replaced by the size it keeps."""
    if len(sizes) < len(shape):
        raise ShapeError(f"'expand': {sizes} has fewer dims than the tensor's shape {shape}")
    lead = len(sizes) - len(shape)
    full = []
    for d, s in enumerate(sizes):
        old = shape[d - lead] if d >= lead else 1
        if s == -1:
            if d < lead:
                raise ShapeError(
                    f"'expand': The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                    f"dimension {d} (sizes {sizes})"
                )
            s = old
        elif s < 0:
            raise ShapeError(
                f"'expand': size {s} at dim {d} is negative (only -1, which keeps a size, may be): {sizes}"
            )
        if old != s and old != 1:
            raise ShapeError(
                f"'expand': The expanded size of the tensor ({s}) must match the existing size ({old}) at "
                f"non-singleton dimension {d}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}"
            )
        full.append(s)
    return tuple(full)


def squeeze(input, dim=None, *, axis=None):
    """Drop size-1 dims (all, or the given ones; ``axis=`` is PyTorch's alias of ``dim``)."""
    dim = _dim_or_axis("squeeze", dim, axis)
    node = _tensor_node("squeeze", input)
    nd = len(node.shape)
    if dim is None:
        dims = {d for d, s in enumerate(node.shape) if s == 1}
    else:
        dims = {lazy.normalize_dim("squeeze", d, nd) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
        dims = {d for d in dims if nd and node.shape[d] == 1}
    out = reshape(input, *[s for d, s in enumerate(node.shape) if d not in dims])
    # PyTorch's node: squeeze(), squeeze(dim), squeeze(dims)
    kind = 0 if dim is None else 2 if isinstance(dim, (tuple, list)) else 1
    return _shown_view(out, input, f"SqueezeBackward{kind}")


def unsqueeze(input, dim: int | None = None, *, axis=None):
    """Insert a size-1 dim at ``dim`` (``axis=`` is PyTorch's alias)."""
    dim = _dim_or_axis("unsqueeze", dim, axis)
    if dim is None:
        raise TypeError("unsqueeze() missing 1 required positional argument: 'dim'")
    node = _tensor_node("unsqueeze", input)
    nd = len(node.shape) + 1
    d = lazy.normalize_dim("unsqueeze", dim, nd)
    shape = list(node.shape)
    shape.insert(d, 1)
    return _shown_view(reshape(input, *shape), input, "UnsqueezeBackward0")


@differentiable("flip")
def flip(input, dims):
    """Reverse the order of elements along ``dims`` (a view with negative strides).

    ``dims`` is a tuple or list of dims (an int is taken as one dim); a 0-d tensor comes back
    as it is, as PyTorch's.
    """
    node = _tensor_node("flip", input)
    ndim = len(node.shape)
    norm = lazy.reduce_dims("flip", dims if isinstance(dims, (tuple, list)) else (dims,), ndim) or ()
    if ndim == 0 or not norm:
        return input
    return _view(input, lambda st: st.flip(norm))


def cat(tensors, dim: int = 0, *, axis=None):
    """Concatenate along ``dim`` (``axis=`` is PyTorch's alias); shapes must match elsewhere. Dtypes promote as in PyTorch."""
    if axis is not None:
        if dim != 0:
            raise TypeError(f"'cat': got both 'dim' and its alias 'axis' ({dim!r}, {axis!r})")
        dim = axis
    if isinstance(tensors, _tensor.Tensor):  # iterable, but PyTorch takes only a sequence of tensors
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    out = _cat(tensors, dim)
    if _memory_format.ACTIVE:  # PyTorch's: the inputs' format where they all suggest the same one
        formats = {_memory_format.suggested(t) for t in tensors if t.shape != (0,)}
        if len(formats) == 1 and None not in formats:
            (fmt,) = formats
            out = out.clone(memory_format=fmt) if out._base is not None else _memory_format.mark(out, fmt)
    return out


@differentiable("cat", inputs=("tensors",))
def _cat(tensors, dim: int):
    """``cat`` with its dim settled: the op autograd records."""
    if not tensors:
        raise ShapeError("torch.cat(): expected a non-empty list of Tensors")  # PyTorch's RuntimeError
    for k, t in enumerate(tensors):
        if t is None:
            raise TypeError(
                f"cat(): argument 'tensors' (position 1) must be tuple of Tensors, not NoneType (got None at {k})"
            )
    nodes = [_tensor_node("cat", t) for t in tensors]
    dev = lazy.check_devices("cat", nodes)
    ref = next((n for n in nodes if n.shape != (0,)), nodes[0])
    if not ref.shape:
        raise ShapeError("'cat': zero-dimensional tensor (at position 0) cannot be concatenated")
    if all(n.shape == (0,) for n in nodes):  # PyTorch's legacy rule: all skipped, the dim is not checked
        return _wrap(lazy.cast_node(nodes[0], _promoted(nodes)))
    d = lazy.normalize_dim("cat", dim, len(ref.shape))
    parts = []
    for k, n in enumerate(nodes):
        if n.shape == (0,) and len(ref.shape) != 1:
            continue  # PyTorch's legacy rule: 1-D empty tensors are skipped
        if len(n.shape) != len(ref.shape):
            raise ShapeError(f"Tensors must have same number of dimensions: got {len(ref.shape)} and {len(n.shape)}")
        for i, (a, b) in enumerate(zip(n.shape, ref.shape)):
            if i != d and a != b:
                raise ShapeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {b} but got size {a} "
                    f"for tensor number {k} in the list."
                )
        parts.append(n)
    dtype = parts[0].dtype
    for n in parts[1:]:
        dtype = promote_types(dtype, n.dtype)
    parts = [lazy.cast_node(n, dtype) for n in parts]
    shape = list(ref.shape)
    shape[d] = builtins_sum(n.shape[d] for n in parts)
    if len(parts) == 1:
        return _wrap(parts[0])
    return _wrap(_cat_tree(parts, d, dtype, dev))


def _promoted(nodes) -> T.DType:
    dtype = nodes[0].dtype
    for n in nodes[1:]:
        dtype = promote_types(dtype, n.dtype)
    return dtype


# The most sources one cat node joins. A kernel binds every buffer it reads, and devices cap those
# per stage (lavapipe at 32): a cat of more tensors is a tree of cats, so the scheduler can give a
# subtree a kernel of its own (scheduler.MAX_KERNEL_LOADS) and no kernel binds past the cap.
CAT_FANIN = 8


def _cat_tree(parts, d: int, dtype, dev) -> Node:
    """``parts`` joined along ``d`` by cat nodes of at most ``CAT_FANIN`` sources each (the same values)."""
    while len(parts) > CAT_FANIN:
        joined = []
        for i in range(0, len(parts), CAT_FANIN):
            chunk = parts[i : i + CAT_FANIN]
            if len(chunk) == 1:
                joined.append(chunk[0])
                continue
            shape = list(chunk[0].shape)
            shape[d] = builtins_sum(n.shape[d] for n in chunk)
            joined.append(Node(Op.CAT, tuple(chunk), Cat(d), tuple(shape), dtype, dev))
        parts = joined
    shape = list(parts[0].shape)
    shape[d] = builtins_sum(n.shape[d] for n in parts)
    return Node(Op.CAT, tuple(parts), Cat(d), tuple(shape), dtype, dev)


def builtins_sum(values):
    total = 0
    for v in values:
        total += v
    return total


def getitem(input, index):
    """Indexing: ints, slices (positive steps), None and Ellipsis give views; tensors, lists and bools a copy.

    Advanced indices (tensors, lists, bools) follow PyTorch's shape rules; see vkml/frontend/indexing.py.
    """
    node = _tensor_node("__getitem__", input)
    index = _indexing.scalar_tensors_as_ints(_indexing.sequence_as_tuple(index))
    if _indexing.is_advanced(index):
        return _indexing.getitem(input, index)
    single = not isinstance(index, tuple)
    if single:
        index = (index,)
    key = _index_key(index)
    plan = _INDEX_PLANS.get((node.shape, key)) if key is not None else None
    if plan is None:
        plan = _index_plan(node, index)
        if key is not None:
            if len(_INDEX_PLANS) >= _INDEX_PLANS_KEPT:  # a loop whose indices change every step
                _INDEX_PLANS.clear()
            _INDEX_PLANS[(node.shape, key)] = plan
    starts, stops, steps, final_shape, sliced_shape = plan
    if not (autograd.is_grad_enabled() and input.requires_grad):
        # lazy: nothing to record, so the slice and the reshape that drops its indexed dims are one view
        return _index_view(input, starts, stops, steps, None if final_shape == sliced_shape else final_shape)
    sliced = _slice(input, starts, stops, steps)
    # No reshape when no dim goes: a reshape to the same shape is a view with contiguous strides, and
    # PyTorch's slices keep their own (t[:1, 1:2] of a (2, 3, 4) tensor: strides (12, 4, 1)).
    out = sliced if final_shape == sliced_shape else reshape(sliced, *final_shape)
    if out is not input:
        autograd.show_chain(out, input, _index_node_names(node.shape, index, single))
    return out


_INDEX_NODE_NAMES: dict = {}


def _index_node_names(shape: tuple, index: tuple, single: bool) -> tuple:
    """PyTorch's backward nodes of a basic index, in the order it applies them (left to right: an int is a
    ``select``, a slice a ``slice`` unless it keeps the whole dim inside a tuple index, None an
    ``unsqueeze``); ``AliasBackward0`` where the index changes nothing (``x[...]``, ``x[:, :]``)."""
    key = _index_key(index)
    found = _INDEX_NODE_NAMES.get((shape, key, single)) if key is not None else None
    if found is not None:
        return found
    n_real = len([i for i in index if i is not None and i is not Ellipsis])
    names, dim = [], 0
    for item in index:
        if item is Ellipsis:
            dim += len(shape) - n_real
        elif item is None:
            names.append("UnsqueezeBackward0")
        elif isinstance(item, slice):
            if single or item.indices(shape[dim]) != (0, shape[dim], 1):
                names.append("SliceBackward0")
            dim += 1
        else:
            names.append("SelectBackward0")
            dim += 1
    found = tuple(names) or ("AliasBackward0",)
    if key is not None:
        if len(_INDEX_NODE_NAMES) >= _INDEX_PLANS_KEPT:
            _INDEX_NODE_NAMES.clear()
        _INDEX_NODE_NAMES[(shape, key, single)] = found
    return found


# ``_index_plan`` by (shape, ``_index_key``): a loop indexes the same shapes the same way at every step (a
# batch's rows, a convolution's windows). Errors are not kept.
_INDEX_PLANS: dict = {}
_INDEX_PLANS_KEPT = 1024
_PLAIN_INDEX_TYPES = frozenset((int, type(None), type(Ellipsis)))
_SLICE_FIELD_TYPES = frozenset((int, type(None)))


def _index_key(index: tuple) -> tuple | None:
    """A key of a basic index of Python ints, None, ``...`` and slices of Python ints; None where it holds
    anything else (a bool, a numpy integer, a tensor bound: the general path reads and checks them)."""
    key = []
    for item in index:
        kind = type(item)
        if kind is slice:
            if not _SLICE_FIELD_TYPES.issuperset((type(item.start), type(item.stop), type(item.step))):
                return None
            key.append((item.start, item.stop, item.step))
        elif kind in _PLAIN_INDEX_TYPES:
            key.append(item)
        else:
            return None
    return tuple(key)


def _too_many_indices(index: tuple, ndim: int) -> str:
    """PyTorch's message for an index with more entries than dims: ``loss.data[0]`` of a 0-dim loss (the
    pre-0.4 idiom) names ``item()``."""
    if ndim == 0 and len(index) == 1 and isinstance(index[0], (int, np.integer)):
        return (
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ "
            "to convert a 0-dim tensor to a number"
        )
    if ndim == 0 and len(index) == 1 and isinstance(index[0], slice):
        return "slice() cannot be applied to a 0-dim tensor."
    return f"too many indices for tensor of dimension {ndim}"


def _index_plan(node: Node, index: tuple) -> tuple:
    """(starts, stops, steps, final shape, sliced shape) of a basic index of ``node``'s shape, checked as
    PyTorch does: the sliced shape keeps a dim of 1 for each int, the final one drops it and adds None's."""
    n_real = len([i for i in index if i is not None and i is not Ellipsis])
    if n_real > len(node.shape):
        raise IndexError(_too_many_indices(index, len(node.shape)))
    ellipses = [k for k, i in enumerate(index) if i is Ellipsis]  # (not ``in``: == of a tensor is elementwise)
    if ellipses:
        e, k = ellipses[0], len(node.shape) - n_real
        rest = index[e + 1 :]
        if len(ellipses) > 1:
            # PyTorch lets every ``...`` skip k dims: after the first there are none left, so a later
            # one is a no-op when k == 0 or nothing but ``...`` follows it, and an index after it fails
            later = rest.index(Ellipsis)
            if k and any(i is not Ellipsis for i in rest[later:]):
                raise IndexError(
                    f"'__getitem__': an index after a second '...' is out of range for {len(node.shape)} dims"
                )
            rest = tuple(i for i in rest if i is not Ellipsis)
        index = index[:e] + (slice(None),) * k + rest
    index = index + (slice(None),) * (len(node.shape) - len([i for i in index if i is not None]))
    starts, stops, steps, final_shape, sliced_shape, d = [], [], [], [], [], 0
    for item in index:
        if item is None:
            final_shape.append(1)
            continue
        size = node.shape[d]
        if isinstance(item, slice):
            step = 1 if item.step is None else item.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            a, b, _ = slice(item.start, item.stop, 1).indices(size)
            b = builtins_max(a, b)
            starts.append(a), stops.append(b), steps.append(step)
            final_shape.append(-(-(b - a) // step))
            sliced_shape.append(final_shape[-1])
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            i = int(item)
            if not -(1 << 63) <= i < 1 << 63:  # PyTorch reads the index as an int64 first
                raise ValueError("Overflow when unpacking long long")
            if not -size <= i < size:
                raise IndexError(f"'__getitem__': index {i} is out of bounds for dimension {d} with size {size}")
            i %= size
            starts.append(i), stops.append(i + 1), steps.append(1)
            sliced_shape.append(1)
        else:
            raise _indexing.unsupported_index("__getitem__", item)
        d += 1
    return tuple(starts), tuple(stops), tuple(steps), tuple(final_shape), tuple(sliced_shape)


def _slice_view(input, starts: tuple, stops: tuple, steps: tuple):
    """Elements starts[d], starts[d] + steps[d], ... below stops[d] of each dim d (a view), unrecorded."""
    out = _view(input, lambda st: st.slice(starts, stops, steps))
    return _mutation.link_view(out, input, ("slice", starts, stops, steps))


_slice = differentiable("slice")(_slice_view)
_slice.__doc__ = "``_slice_view``, recorded for autograd (rule ``slice``)."


def _index_view(input, starts: tuple, stops: tuple, steps: tuple, shape: tuple | None):
    """``_slice_view``, then (``shape`` not None) reshaped to ``shape`` in the same view: a basic index's
    result where nothing records (an int's dim dropped, None's added: always a view in PyTorch)."""
    if shape is None:
        return _slice_view(input, starts, stops, steps)
    out = _view(input, lambda st: st.slice(starts, stops, steps).reshape(shape))
    return _mutation.link_view(out, input, ("slice", starts, stops, steps), ("reshape", shape))


@differentiable("pad")
def constant_pad_nd(input, pad, value=0.0):
    """Pad with ``value`` (a view: no copy); ``pad`` lists (before, after) amounts from the last dim back.

    Where nothing grows (zero or negative amounts only) the result is a copy: as PyTorch's, it never
    shares ``input``'s storage.

    As PyTorch's ``constant_pad_nd``: ``pad = (left, right)`` pads the last dim,
    ``(left, right, top, bottom)`` the last two; negative amounts crop.

    >>> constant_pad_nd(vkml.tensor([1.0, 2.0]), (1, 2)).tolist()  # doctest: +SKIP
    [0.0, 1.0, 2.0, 0.0, 0.0]
    """
    node = _tensor_node("constant_pad_nd", input)
    pad = tuple(int(p) for p in pad)
    key = (node.shape, pad)
    plan = _PAD_PLANS.get(key)
    if plan is None:
        plan = _pad_plan(node.shape, pad)
        if len(_PAD_PLANS) >= _PAD_PLANS_KEPT:  # a loop whose shapes change every step
            _PAD_PLANS.clear()
        _PAD_PLANS[key] = plan
    starts, stops, grow = plan
    nd = len(node.shape)
    cropped = _slice(input, starts, stops, (1,) * nd) if starts is not None else input
    padded = _view(cropped, lambda st: st.pad(grow)) if grow is not None else cropped
    if type(value) in (bool, int, float):
        # PyTorch converts the fill to the tensor's dtype (it never promotes): ints truncate toward zero,
        # bool takes its truth, and a value outside the dtype's range (float16's too) is its RuntimeError.
        lazy.check_scalar_fits("constant_pad_nd", value, node.dtype, strict_unsigned=True)  # -1 does not wrap here
        if not node.dtype.is_float:
            value = bool(value) if node.dtype is T.bool_ else int(value)
    if grow is not None and 0 in cropped.shape:
        # nothing of input survives: the pad value everywhere, with input's (empty) gradient through a where
        # that never takes it (a pad view of an empty buffer would load element 0, which it has not)
        link = expand(cast(sum(cropped), node.dtype), *padded.shape)  # (a bool or int sum is int64)
        return where(_wrap(lazy.const_node(True, T.bool_, padded.shape, node.device)), value, link)
    if padded is cropped:  # nothing grew: input itself or a crop of it, which PyTorch returns as a copy
        return clone(padded)
    if value == 0:
        return padded
    inside = _view(_wrap(lazy.const_node(True, T.bool_, cropped.shape, node.device)), lambda st: st.pad(grow))
    return where(inside, padded, value)


# ``_pad_plan`` by (shape, pad): a loop pads the same shapes the same way at every step (a convolution's
# input, a slice's gradient). Errors are not kept.
_PAD_PLANS: dict = {}
_PAD_PLANS_KEPT = 1024


def _pad_plan(shape: tuple, pad: tuple) -> tuple:
    """``constant_pad_nd``'s crop (starts, stops; None: none) and growth (per dim (before, after); None:
    none) of a tensor of ``shape`` by ``pad``, checked as PyTorch checks it."""
    nd = len(shape)
    if len(pad) % 2:  # PyTorch's RuntimeError, for both checks
        raise RuntimeError(f"'constant_pad_nd': Padding length must be divisible by 2, got pad {pad}")
    if len(pad) // 2 > nd:
        raise RuntimeError(
            f"'constant_pad_nd': Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {nd}"
        )
    amounts = [(0, 0)] * nd
    for k in range(len(pad) // 2):
        amounts[nd - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    # (functions.max shadows the builtin in this module)
    starts = [-b if b < 0 else 0 for b, _ in amounts]
    stops = [size + a if a < 0 else size for size, (_, a) in zip(shape, amounts)]
    if any(lo > hi for lo, hi in zip(starts, stops)):
        raise ShapeError(f"'constant_pad_nd': pad {pad} crops more than shape {shape} holds")
    crops = starts != [0] * nd or list(stops) != list(shape)
    grow = tuple((b if b > 0 else 0, a if a > 0 else 0) for b, a in amounts)
    grows = any(p != (0, 0) for p in grow)
    return (tuple(starts) if crops else None, tuple(stops) if crops else None, grow if grows else None)


def builtins_max(a, b):
    return a if a >= b else b


@differentiable("clone")
def clone(input, *, memory_format=None):
    """A copy of ``input`` with storage of its own: the same node (nodes never change, writes make
    new ones), so it costs nothing until one of the two is written. ``memory_format`` (default
    preserve_format) is the copy's layout (vkml/frontend/memory_format.py)."""
    out = _wrap(_tensor_node("clone", input))
    if memory_format is None or memory_format is _memory_format.preserve_format:
        return _memory_format.mark(out, _memory_format.format_of(input)) if _memory_format.ACTIVE else out
    return _memory_format.mark(out, memory_format)


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` (bool) holds, both broadcast together; ``input``'s dtype.

    >>> masked_fill(vkml.tensor([1, 2, 3]), vkml.tensor([True, False, True]), 0).tolist()  # doctest: +SKIP
    [0, 2, 0]
    """
    node = _tensor_node("masked_fill", input)
    mask_node = _tensor_node("masked_fill", mask)
    if mask_node.dtype is not T.bool_:
        raise DTypeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {cpp_type_name(mask_node.dtype)}"
        )
    # the result takes the broadcast shape (PyTorch's out-of-place form; masked_fill_ keeps input's)
    lazy.broadcast_shapes("masked_fill", mask_node.shape, node.shape)  # PyTorch's order in its words
    given_tensor = isinstance(value, _tensor.Tensor)
    if given_tensor:
        if value.ndim != 0:
            raise ShapeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        value = cast(value, node.dtype)
    else:
        value = lazy.fill_value("masked_fill", value, node.dtype)
        value = _wrap(lazy.const_node(_node(value), node.dtype, (), node.device))
    edges = (autograd.edge(input),) + ((autograd.edge(value),) if given_tensor else ())
    out = where(mask, value, input)
    if out._ctx is not None:  # PyTorch's node: the Scalar overload (0) or the Tensor one (1)
        autograd.show(out, "MaskedFillBackward1" if given_tensor else "MaskedFillBackward0", edges)
    return out


# Last, because tensor.py reads this module's names when it is imported; the functions above
# look Tensor up at call time, once per op instead of through an import statement.
from .. import tensor as _tensor  # noqa: E402
from . import indexing as _indexing  # noqa: E402
from . import mutation as _mutation  # noqa: E402
from . import pointwise as _pointwise  # noqa: E402
from . import return_types as _return_types  # noqa: E402
