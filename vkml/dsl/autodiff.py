"""Gradients of elementwise DSL bodies, derived from the body itself (reverse mode).

The math library's functions are written with bitcasts and integer operations, which have no
useful derivative at the bit level. So a body is differentiated at the level of the calls it
makes: vkml calls it once more on ``Sym`` tracers, on which the arithmetic operators and the
``vkml.dsl`` functions *record* one node each (``exp(x)`` is one node whose derivative is
known) instead of emitting IR. Reverse mode over the recorded graph builds each input's
gradient as another ``Sym`` expression, and ``emit`` turns that into IR by calling the very
same ``vkml.dsl`` functions on IR values.

    >>> from vkml import dsl
    >>> grads = gradient_exprs(lambda x, y: dsl.exp(x) * y, 2)
    >>> [g.op for g in grads]          # d/dx = g*y*exp(x), d/dy = g*exp(x)
    ['mul', 'mul']

Supported (each rule is the op's OpDef ``grad``, PyTorch's formula, ties and NaN cases included):
``+ - * /``, unary ``-``, ``where``/``select``, ``exp exp2 expm1 log log2 log1p sqrt rsqrt
tanh sigmoid erf gelu gelu_tanh softplus pow abs maximum minimum clamp clamp_min clamp_max
relu div convert const``, ``sin cos tan asin acos atan atan2 sinh cosh asinh acosh atanh erfc
erfinv log10 sinc lgamma digamma`` (digamma once: its second derivative is not implemented); comparisons, ``isnan``, ``sign floor ceil trunc round_even`` and
bool/integer operators have zero gradient. Anything else (``bitcast``, ``shuffle_xor``, loops,
ifs, index-space functions, builder or mathlib functions called directly) cannot be traced:
the error says so and suggests ``backward=``.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DTypeError
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Value
from ..ops import mathlib as M
from ..ops.grads import RULES, GradContext
from ..ops.registry import REGISTRY

_state = threading.local()


class NotDifferentiable(DTypeError):
    """A body uses something the symbolic tracer cannot differentiate."""


def is_tracing() -> bool:
    """True while a body runs on ``Sym`` tracers (the vkml.dsl functions then record)."""
    return getattr(_state, "tracing", False)


@contextlib.contextmanager
def tracing():
    previous = is_tracing()
    _state.tracing = True
    try:
        yield
    finally:
        _state.tracing = previous


class Sym:
    """One recorded operation: ``op`` applied to ``args`` (Syms, Python numbers, None, dtypes)."""

    __slots__ = ("op", "args", "dtype")

    def __init__(self, op: str, args: tuple, dtype: T.DType):
        self.op, self.args, self.dtype = op, args, dtype

    def __repr__(self) -> str:
        return f"<Sym {self.op} {self.dtype.short}>"

    def __bool__(self):
        raise DTypeError(
            "an IR value has no Python truth value (Python `if`, `while`, `and`, `or`, `not` cannot "
            "look at it); use dsl.where(cond, a, b)"
        )

    __index__ = __bool__


def _operator(op: str, swap: bool = False):
    if swap:
        return lambda a, b: record(op, b, a)
    return lambda a, b: record(op, a, b)


for _name, _op in {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "truediv": "div",
    "mod": "mod",
    "and": "and",
    "or": "or",
    "xor": "xor",
    "lshift": "shl",
    "rshift": "shr",
}.items():
    setattr(Sym, f"__{_name}__", _operator(_op))
    setattr(Sym, f"__r{_name}__", _operator(_op, swap=True))
for _name in ("lt", "le", "gt", "ge"):
    setattr(Sym, f"__{_name}__", _operator(_name))
Sym.__neg__ = lambda a: record("neg", a)
Sym.__invert__ = lambda a: record("not", a)


def _in_rules(op: str, swap: bool = False):
    # == != and ** record only while an OpDef gradient rule runs (x == 0, a == b, a ** (b - 1) there).
    # In a user's body they stay what they are on IR values, where the body runs first: == and != by
    # identity (vkml/ir/builder.py), ** undefined; so tracing never reads a body otherwise than the IR.
    recording = _operator(op, swap)

    def method(a, b):
        return recording(a, b) if getattr(_state, "in_rule", False) else NotImplemented

    return method


Sym.__eq__ = _in_rules("eq")
Sym.__ne__ = _in_rules("ne")
Sym.__hash__ = object.__hash__  # by identity; the tracer keys its tables by id() anyway
Sym.__pow__ = _in_rules("pow")
Sym.__rpow__ = _in_rules("pow", swap=True)
Sym.stands_for_tensor = True  # ops.grads.is_tensor: an operand, not a Python number


# ---------------------------------------------------------------- the primitives


@dataclass(frozen=True)
class Prim:
    """A traceable operation: its IR implementation, how many leading args are values, its gradient.

    ``grad(node, g)`` returns one adjoint (a Sym, or None for zero) per value argument;
    ``grad=None`` means the result carries no gradient (comparisons, rounding, bits).
    """

    impl: Callable
    nvalues: int
    grad: Callable | None = None


# ---------------------------------------------------------------- derivatives written once, on the OpDef
#
# Every derivative is its op's OpDef.grad (written with tensor operators, methods and ctx.F), run on
# Syms: their operators and methods record (``_SYM_METHODS``), ``_SymF`` is the rule's ``ctx.F``, and
# ``ops.grads.is_tensor`` counts a Sym as a tensor (``stands_for_tensor``). So a custom op's gradient
# is the formula of the built-in op's, rounded the same way, and no derivative is written twice.
_SYM_METHODS = ("cos", "sin", "cosh", "sinh", "rsqrt", "sign", "digamma", "exp", "log", "tanh", "sigmoid")
for _name in _SYM_METHODS:
    setattr(Sym, _name, lambda a, _op=_name: record(_op, a))


class _SymF:
    """``ctx.F`` for an OpDef's gradient rule run on Syms: the few vkml functions those rules call."""

    @staticmethod
    def where(condition, x, y) -> Sym:
        return record("select", condition, x, y)

    @staticmethod
    def full_like(like: Sym, value) -> Sym:
        return record("const", value, like.dtype)

    @staticmethod
    def zeros_like(like: Sym) -> Sym:
        return record("const", 0.0, like.dtype)

    @staticmethod
    def polygamma(n: int, x) -> Sym:
        if n != 1:  # trigamma's rule asks for polygamma(2, x), which mathlib does not trace
            raise NotDifferentiable(
                "cannot differentiate dsl.digamma twice: the derivative of polygamma(1, x), polygamma(2, x), is "
                "not implemented; pass backward=... to @vkml.elementwise"
            )
        return record("trigamma", x)


def _run_rule(rule: Callable, inputs: tuple, n: Sym, g: Sym, attrs: dict) -> tuple:
    # An operand wants a gradient when it is a float Sym; a Python number, a bound left out (None)
    # or an integer value gets none, as a tensor rule's ``needs`` says for its operands.
    needs = tuple(isinstance(a, Sym) and a.dtype.is_float for a in inputs)
    previous = getattr(_state, "in_rule", False)
    _state.in_rule = True
    try:
        return tuple(rule(GradContext(g, inputs, n, attrs, _SymF, needs)))
    finally:
        _state.in_rule = previous


def _run_opdef_rule(name: str, inputs: tuple, n: Sym, g: Sym, attrs: dict) -> tuple:
    return _run_rule(REGISTRY[name].grad, inputs, n, g, attrs)


def _opdef_grad(name: str, nvalues: int, attrs: tuple[str, ...] = ()) -> Callable:
    """The Prim gradient of ``name``: its OpDef's ``grad`` rule, run on the recorded node's Syms.

    ``attrs`` names the node's arguments after its values (Python numbers such as softplus's beta),
    handed to the rule as ``ctx.attrs``.
    """

    def grad(n: Sym, g: Sym) -> tuple:
        return _run_opdef_rule(name, n.args[:nvalues], n, g, dict(zip(attrs, n.args[nvalues:])))

    grad.from_opdef = name  # what tests/test_custom_grad.py checks
    return grad


def _clamp_grad(n: Sym, g: Sym) -> tuple:
    # dsl.clamp records one node whose bounds may be None; its gradient is the rule of the op that
    # vkml.clamp records for those bounds (clamp, clamp_min or clamp_max), as the tensor path does.
    x, lo, hi = n.args
    if lo is None and hi is None:
        return (g, None, None)
    if lo is None:
        gx, ghi = _run_opdef_rule("clamp_max", (x, hi), n, g, {})
        return (gx, None, ghi)
    if hi is None:
        gx, glo = _run_opdef_rule("clamp_min", (x, lo), n, g, {})
        return (gx, glo, None)
    return _run_opdef_rule("clamp", (x, lo, hi), n, g, {})


_clamp_grad.from_opdef = "clamp"


def _convert_grad(n: Sym, g: Sym) -> tuple:
    # dsl.convert(x, dtype) is a cast: the rule of the tensors' cast (ops.grads.RULES), g in x's dtype.
    # (Only a float x gets a gradient and only a float result passes one: the tracer drops the rest.)
    return _run_rule(RULES["cast"], n.args[:1], n, g, {})


_convert_grad.from_rule = "cast"
Sym.to = lambda a, dtype: a if dtype is a.dtype else record("convert", a, dtype)  # the cast rule's g.to


PRIMS: dict[str, Prim] = {
    # arithmetic (the operators on IR values)
    "add": Prim(operator.add, 2, _opdef_grad("add", 2)),
    "sub": Prim(operator.sub, 2, _opdef_grad("sub", 2)),
    "mul": Prim(operator.mul, 2, _opdef_grad("mul", 2)),
    "div": Prim(operator.truediv, 2, _opdef_grad("div", 2)),
    "neg": Prim(operator.neg, 1, _opdef_grad("neg", 1)),
    "select": Prim(B.select, 3, _opdef_grad("where", 3)),  # dsl.where
    "convert": Prim(B.convert, 1, _convert_grad),
    "const": Prim(B.const, 0),
    # the math library, differentiated as whole functions
    "exp": Prim(M.exp, 1, _opdef_grad("exp", 1)),
    "exp2": Prim(M.exp2, 1, _opdef_grad("exp2", 1)),
    "expm1": Prim(M.expm1, 1, _opdef_grad("expm1", 1)),
    "log": Prim(M.log, 1, _opdef_grad("log", 1)),
    "log2": Prim(M.log2, 1, _opdef_grad("log2", 1)),
    "log1p": Prim(M.log1p, 1, _opdef_grad("log1p", 1)),
    "sqrt": Prim(M.sqrt, 1, _opdef_grad("sqrt", 1)),
    "rsqrt": Prim(M.rsqrt, 1, _opdef_grad("rsqrt", 1)),
    "tanh": Prim(M.tanh, 1, _opdef_grad("tanh", 1)),
    "sigmoid": Prim(M.sigmoid, 1, _opdef_grad("sigmoid", 1)),
    "erf": Prim(M.erf, 1, _opdef_grad("erf", 1)),
    "gelu": Prim(M.gelu, 1, _opdef_grad("gelu", 1)),
    "gelu_tanh": Prim(M.gelu_tanh, 1, _opdef_grad("gelu_tanh", 1)),
    "softplus": Prim(M.softplus, 1, _opdef_grad("softplus", 1, ("beta", "threshold"))),
    # the built-in ops' own bodies (integer and float), so dsl.maximum is vkml.maximum
    "pow": Prim(REGISTRY["pow"].body, 2, _opdef_grad("pow", 2)),
    "abs": Prim(REGISTRY["abs"].body, 1, _opdef_grad("abs", 1)),
    "maximum": Prim(REGISTRY["maximum"].body, 2, _opdef_grad("maximum", 2)),
    "minimum": Prim(REGISTRY["minimum"].body, 2, _opdef_grad("minimum", 2)),
    "clamp": Prim(lambda x, lo, hi: _clamp_impl(x, lo, hi), 3, _clamp_grad),
    "relu": Prim(REGISTRY["relu"].body, 1, _opdef_grad("relu", 1)),
    # zero gradient
    "sign": Prim(REGISTRY["sign"].body, 1),
    "floor": Prim(B.floor, 1),
    "ceil": Prim(B.ceil, 1),
    "trunc": Prim(B.trunc, 1),
    "round_even": Prim(B.round_even, 1),
    "isnan": Prim(B.isnan, 1),
    "eq": Prim(B.eq, 2),
    "ne": Prim(B.ne, 2),
    "lt": Prim(operator.lt, 2),
    "le": Prim(operator.le, 2),
    "gt": Prim(operator.gt, 2),
    "ge": Prim(operator.ge, 2),
    "and": Prim(operator.and_, 2),
    "or": Prim(operator.or_, 2),
    "xor": Prim(operator.xor, 2),
    "not": Prim(operator.invert, 1),
    "mod": Prim(operator.mod, 2),
    "shl": Prim(operator.lshift, 2),
    "shr": Prim(operator.rshift, 2),
}
_BOOL_RESULTS = {"eq", "ne", "lt", "le", "gt", "ge", "isnan"}


def _clamp_impl(x, lo, hi):
    if lo is None and hi is None:
        return x
    if lo is None:
        return REGISTRY["clamp_max"].body(x, hi)
    if hi is None:
        return REGISTRY["clamp_min"].body(x, lo)
    return REGISTRY["clamp"].body(x, lo, hi)


# ---------------------------------------------------------------- recording and applying


def record(op: str, *args) -> Sym:
    """A Sym for ``op(*args)``; its dtype follows the IR's rule for ``op``."""
    if op in ("convert", "const"):
        return Sym(op, args, args[1])
    if op in _BOOL_RESULTS:
        return Sym(op, args, T.bool_)
    values = args[1:] if op == "select" else args
    like = next((a for a in values if isinstance(a, Sym)), None)
    return Sym(op, args, like.dtype if like is not None else T.float32)


def coerce(op: str, args: tuple) -> tuple:
    """``args`` with Python numbers in value positions made IR constants of their neighbours' type."""
    nvalues = PRIMS[op].nvalues
    values, static = list(args[:nvalues]), args[nvalues:]
    if op == "select":
        if not isinstance(values[0], Value):
            values[0] = B.as_value(values[0], dtype=T.bool_)
        like_from = values[1:]
    else:
        like_from = values
    like = next((v for v in like_from if isinstance(v, Value)), None)
    first = 1 if op == "select" else 0
    for i in range(first, nvalues):
        v = values[i]
        if v is not None and not isinstance(v, Value):
            values[i] = B.as_value(v, like=like) if like is not None else B.as_value(v, dtype=T.float32)
    return (*values, *static)


def apply(op: str, *args):
    """What the vkml.dsl function ``op`` does: record a Sym while tracing, else emit IR."""
    if is_tracing():
        return record(op, *args)
    return PRIMS[op].impl(*coerce(op, args))


def not_traceable(name: str) -> NotDifferentiable:
    return NotDifferentiable(
        f"cannot differentiate dsl.{name} (only straight-line code over the functions listed in "
        "vkml.dsl.autodiff is derived automatically); pass backward=... to @vkml.elementwise"
    )


# ---------------------------------------------------------------- reverse mode


def _topological(out: Sym) -> list[Sym]:
    order, seen, stack = [], set(), [(out, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if isinstance(a, Sym) and id(a) not in seen)
    return order


def gradient_exprs(fn: Callable, n_inputs: int, dtype: T.DType = T.float32) -> list[Sym | None]:
    """The gradient of ``fn``'s result with respect to each of its inputs, as Sym expressions.

    The expressions read the inputs as ``Sym("input", (i,))`` and the incoming gradient as
    input ``n_inputs``; None means a zero gradient. Raises ``NotDifferentiable``.
    """
    inputs = [Sym("input", (i,), dtype) for i in range(n_inputs)]
    with tracing():
        out = fn(*inputs)
    if not isinstance(out, Sym):
        if isinstance(out, Value):
            raise NotDifferentiable(
                "the body emitted IR while being traced (a builder or mathlib function called "
                "directly?); use the vkml.dsl functions, or pass backward=..."
            )
        return [None] * n_inputs  # a constant: no input matters
    adjoint: dict[int, Sym] = {id(out): Sym("input", (n_inputs,), dtype)}
    for node in reversed(_topological(out)):
        g = adjoint.get(id(node))
        if g is None or node.op == "input":
            continue
        rule = PRIMS[node.op].grad
        if rule is None:
            continue
        for arg, contribution in zip(node.args, rule(node, g)):
            if isinstance(arg, Sym) and contribution is not None and arg.dtype.is_float:
                previous = adjoint.get(id(arg))
                adjoint[id(arg)] = contribution if previous is None else previous + contribution
    return [adjoint.get(id(x)) for x in inputs]


def emit(expr: Sym, inputs: list[Value]) -> Value:
    """IR for ``expr``, reading ``Sym("input", (i,))`` as ``inputs[i]`` (shared nodes emitted once)."""
    values: dict[int, object] = {}
    for node in _topological(expr):
        if node.op == "input":
            values[id(node)] = inputs[node.args[0]]
            continue
        args = tuple(values[id(a)] if isinstance(a, Sym) else a for a in node.args)
        nvalues = PRIMS[node.op].nvalues
        if nvalues and not any(isinstance(a, Value) for a in args[:nvalues]):
            args = (B.as_value(args[0], dtype=node.dtype), *args[1:])  # constant operands only
        values[id(node)] = PRIMS[node.op].impl(*coerce(node.op, args))
    return values[id(expr)]


# ---------------------------------------------------------------- trigonometric, hyperbolic, error and gamma
# functions: every op whose OpDef says ``public=Public(dsl=True)`` (vkml.dsl makes its function from the
# same OpDef), with the OpDef's body and rule; atan2, and trigamma (digamma's derivative), besides.

PRIMS.update(
    {
        op.name: Prim(op.body, 1, _opdef_grad(op.name, 1))
        for op in REGISTRY.values()
        if op.public is not None and op.public.dsl
    }
)
PRIMS["atan2"] = Prim(M.atan2, 2, _opdef_grad("atan2", 2))
PRIMS["trigamma"] = Prim(M.trigamma, 1, _opdef_grad("trigamma", 1))
