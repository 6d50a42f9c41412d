"""``@vkml.elementwise``: a Python function over IR values becomes a first-class operator.

    >>> import vkml
    >>> from vkml import dsl
    >>> @vkml.elementwise
    ... def softclip(x, lo, hi):
    ...     "Clip x into [lo, hi]."
    ...     return dsl.minimum(dsl.maximum(x, lo), hi)
    >>> softclip(vkml.tensor([-2.0, 0.5, 3.0]), -1.0, 1.0).tolist()
    [-1.0, 0.5, 1.0]

The function is registered in vkml's op registry as an elementwise ``OpDef`` whose body is
the function, named ``custom_<name>`` so it never clashes with a built-in. Everything else
comes from the machinery the built-in ops use: the call returns a lazy Tensor; tensor
arguments broadcast and promote as in PyTorch; Python numbers become kernel parameters (a
new value does not recompile); the op fuses with its neighbours (no dispatch of its own);
CPU and Vulkan compute the same bits; ``vkml-dump-spirv mymodule:softclip`` shows it.

The body runs on scalars of the compute dtype (float32 for float16 tensors, whose results
are rounded to float16 once, at the end of the body). It returns one value: of the compute
type (the op's result has the promoted dtype), or bool (a bool result), or any other type
(that dtype). Python floats in the body round to the nearest float32, as PyTorch's scalars.

Gradients come from the body (reverse mode over the dsl functions it calls,
vkml.dsl.autodiff), or from ``backward=fn``: ``fn(grad, *inputs)`` in the DSL, returning one
gradient value (or None) per input.

Mistakes raise when the op is called, with the user's file and line in the message.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable

from ..errors import DTypeError
from ..frontend import autograd
from ..frontend.operators import _node, _wrap
from ..graph import build as lazy
from ..graph.node import Node
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Value
from ..ops.cast import compute_dtype
from ..ops.registry import NUMERIC_DTYPES, REGISTRY, OpDef, register
from ..schedule import scheduler as schedule
from . import autodiff as dsl_autodiff
from .errors import at_user_line

PREFIX = "custom_"
_CUSTOM: dict[str, CustomOp] = {}  # registry name -> the op, for custom ops alive in the registry


def identifier(name: str) -> str:
    """``name`` made fit for kernel names (the IR text's NAME): other characters become ``_``."""
    return re.sub(r"\W", "_", name).strip("_")


def operand(op: str, pname: str, value):
    """``value`` as a graph operand (a Node or a Python number), or a TypeError naming the argument."""
    try:
        return _node(value)
    except TypeError:
        raise TypeError(
            f"{op}: argument {pname!r} is a {type(value).__name__} ({value!r}); expected a vkml.Tensor or a Python number"
        ) from None


class CustomOp:
    """An elementwise operator made from a DSL function. Call it like the function.

    ``name``: the registry name (``custom_<function name>``); ``fn``: the user's function;
    ``opdef``: its registry entry.
    """

    def __init__(self, fn: Callable, name: str | None, backward: Callable | None, dtypes, result: str):
        if result not in ("promote", "float"):
            raise ValueError(f"@vkml.elementwise: result must be 'promote' or 'float', not {result!r}")
        self.fn = fn
        self.backward_fn = backward
        self.signature = inspect.signature(fn)
        for p in self.signature.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TypeError(f"@vkml.elementwise {fn.__qualname__}: parameter {p} must be a plain positional one")
        if not self.signature.parameters:
            raise TypeError(f"@vkml.elementwise {fn.__qualname__}: an elementwise op needs at least one input")
        self.name = PREFIX + identifier(name or fn.__name__)
        self.__name__, self.__qualname__ = fn.__name__, fn.__qualname__
        self.__doc__, self.__module__, self.__wrapped__ = fn.__doc__, fn.__module__, fn
        self.__signature__ = self.signature
        self._result_dtypes: dict[T.DType, T.DType] = {}
        self._grad_ops: dict[int, str | None] = {}
        summary = (inspect.getdoc(fn) or f"Custom elementwise op {fn.__qualname__}.").splitlines()[0]
        self.opdef = OpDef(
            self.name,
            "elementwise",
            f"{fn.__name__}{self.signature}",
            summary,
            dtypes=tuple(dtypes) if dtypes is not None else NUMERIC_DTYPES,
            result=result,
            body=self._body,
            precision="user-defined",
            grad=self._grad_rule,
        )
        _install(self)

    def __repr__(self) -> str:
        return f"<vkml custom elementwise op {self.__qualname__} ({self.name})>"

    # ------------------------------------------------------------------ the body

    def _where(self) -> str:
        return f"custom op {self.__name__!r}"

    def _body(self, *values: Value) -> Value:
        """The registry body: the user's function, with errors at the user's line and PyTorch's float constants."""
        with at_user_line(self._where(), fallback=self.fn), B.rounding_float_constants():
            out = self.fn(*values)
            return _one_value(out, values, f"{self.__name__}()")

    def result_dtype(self, compute: T.DType) -> T.DType:
        """The dtype of the op's result when its operands compute in ``compute`` (traces the body once)."""
        if compute not in self._result_dtypes:
            carried = compute_dtype(compute)
            kb = B.KernelBuilder("trace")
            values = [kb.param(p, carried) for p in self.signature.parameters]
            with kb:
                out = self._body(*values)
            self._result_dtypes[compute] = compute if out.dtype is carried else out.dtype
        return self._result_dtypes[compute]

    # ------------------------------------------------------------------ calling

    def operands(self, args: tuple, kwargs: dict) -> list:
        """The call's arguments in parameter order (defaults filled in): Tensors and Python numbers."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}{self.signature}: {e}") from None
        bound.apply_defaults()
        nodes = [operand(self.__name__, pname, value) for pname, value in bound.arguments.items()]
        if not any(isinstance(n, Node) for n in nodes):
            raise TypeError(f"{self.__name__}: needs at least one vkml.Tensor argument")
        return list(bound.arguments.values())

    def __call__(self, *args, **kwargs):
        operands = self.operands(args, kwargs)
        node = lazy.elementwise(self.name, [_node(v) for v in operands])
        result = self.result_dtype(node.arg.compute)
        if result is not node.dtype:
            node = Node(node.op, node.srcs, node.arg, node.shape, result, node.device)
        return autograd.record(self.name, operands, _wrap(node))

    # ------------------------------------------------------------------ gradients

    def _grad_rule(self, c):
        """OpDef.grad: one elementwise op per operand that needs a gradient, over (grad, *operands)."""
        grads = []
        for i, needed in enumerate(c.needs):
            if not needed:
                grads.append(None)
                continue
            op_name = self.grad_op(i)
            if op_name is None:
                grads.append(c.F.zeros_like(c.inputs[i]))
                continue
            nodes = [_node(v) for v in (c.g, *c.inputs)]
            grads.append(_wrap(lazy.elementwise(op_name, nodes)))
        return tuple(grads)

    def grad_op(self, i: int) -> str | None:
        """The registry name of the op computing input ``i``'s gradient from (grad, *inputs); None if zero."""
        if i not in self._grad_ops:
            body = self._user_grad_body(i) if self.backward_fn is not None else self._derived_grad_body(i)
            name = None
            if body is not None:
                name = f"{self.name}__grad{i}"
                op = OpDef(name, "elementwise", f"{name}(grad, ...)", f"Gradient {i} of {self.__name__}.", body=body)
                _replace(op)
            self._grad_ops[i] = name
        return self._grad_ops[i]

    def _derived_grad_body(self, i: int):
        n = len(self.signature.parameters)
        with at_user_line(f"{self._where()} (deriving its gradient)", fallback=self.fn):
            with B.rounding_float_constants():
                exprs = dsl_autodiff.gradient_exprs(self.fn, n)
        expr = exprs[i]
        if expr is None:
            return None

        def body(g, *xs):
            with B.rounding_float_constants():
                return dsl_autodiff.emit(expr, [*xs, g])

        return body

    def _user_grad_body(self, i: int):
        n = len(self.signature.parameters)
        backward = self.backward_fn

        def pick(g, *xs):
            with at_user_line(f"backward of {self._where()}", fallback=backward), B.rounding_float_constants():
                out = backward(g, *xs)
                outs = out if isinstance(out, (tuple, list)) else (out,)
                if len(outs) != n:
                    raise TypeError(f"backward returned {len(outs)} gradient(s) for {n} input(s) of {self.__name__}")
                chosen = outs[i]
                return None if chosen is None else _one_value(chosen, xs, "backward")

        # Trace once on stand-in values: a None gradient means zero, and errors show here, early.
        kb = B.KernelBuilder("trace")
        values = [kb.param(f"a{j}", T.float32) for j in range(n + 1)]
        with kb:
            if pick(*values) is None:
                return None
        return pick


def _one_value(out, inputs, what: str) -> Value:
    if isinstance(out, (tuple, list)):
        raise DTypeError(f"{what} returned {len(out)} values; an elementwise body returns one IR value")
    if out is None:
        raise DTypeError(f"{what} returned None; an elementwise body returns one IR value (did you forget `return`?)")
    return B.as_value(out, like=inputs[0]) if inputs else out


def _install(op: CustomOp) -> None:
    """Register ``op``; a redefinition of the same function (same module and qualified name) replaces it."""
    existing = _CUSTOM.get(op.name)
    if op.name in REGISTRY and existing is None:
        raise ValueError(f"@vkml.elementwise: the name {op.name!r} is taken by a built-in op; pass name=...")
    if existing is not None:
        same = (existing.fn.__module__, existing.fn.__qualname__) == (op.fn.__module__, op.fn.__qualname__)
        if not same:
            raise ValueError(
                f"@vkml.elementwise: the name {op.name!r} is taken by {existing.fn.__module__}.{existing.fn.__qualname__}; "
                "pass name=... to tell them apart"
            )
        remove(existing)
    register(op.opdef)
    _CUSTOM[op.name] = op


def _replace(op: OpDef) -> None:
    _unregister(op.name)
    register(op)


def _unregister(name: str) -> None:
    # Only custom names come here. Nodes hold their OpDef (vkml/graph/node.py), so kernels lowered for
    # the old definition are keyed by it and never reused for the new one; they go to free them. So do
    # the remembered binary promotion decisions, which hold the old OpDef in the node argument they give.
    if REGISTRY.pop(name, None) is not None:
        schedule.clear_template_cache()
        lazy.forget_promotion_decisions()


def remove(op: CustomOp) -> None:
    """Take ``op`` (and its gradient ops) out of the registry; its name is free again.

    Tensors already built with it stay valid only until realized. Tests use this to leave the
    registry as they found it.
    """
    if _CUSTOM.get(op.name) is op:
        del _CUSTOM[op.name]
        _unregister(op.name)
    for name in op._grad_ops.values():
        if name is not None:
            _unregister(name)
    op._grad_ops.clear()


@contextlib.contextmanager
def restoring_registry():
    """Custom ops defined inside the block are removed from the registry at its end.

    >>> with restoring_registry():
    ...     op = elementwise(lambda x: x * 2, name="twice")
    >>> "custom_twice" in REGISTRY
    False
    """
    before = dict(_CUSTOM)
    try:
        yield
    finally:
        for name, op in list(_CUSTOM.items()):
            if before.get(name) is not op:
                remove(op)
        for name, op in before.items():
            if name not in _CUSTOM:
                _install(op)


def elementwise(
    fn: Callable | None = None,
    *,
    name: str | None = None,
    backward: Callable | None = None,
    dtypes=None,
    result: str = "promote",
):
    """Make ``fn`` (a function over IR values) an elementwise operator on tensors.

    ``name``: the op's name (default: the function's); ``backward``: ``fn(grad, *inputs)`` in
    the DSL returning one gradient (or None) per input, instead of the derived gradient;
    ``dtypes``: the compute dtypes accepted (default: every numeric dtype but float64, whose body would
    compute in float64: pass it explicitly when the body is exact there);
    ``result="float"``: integer operands compute in float32 (as ``vkml.exp``).

    >>> @elementwise
    ... def leaky(x, slope=0.01):
    ...     return dsl.where(x > 0, x, x * slope)
    >>> leaky(vkml.tensor([-1.0, 2.0])).tolist()       # doctest: +SKIP
    [-0.009999999776482582, 2.0]
    """

    def make(f: Callable) -> CustomOp:
        return CustomOp(f, name, backward, dtypes, result)

    return make(fn) if fn is not None else make


def custom_ops() -> dict[str, CustomOp]:
    """The custom elementwise ops in the registry now, by registry name."""
    return dict(_CUSTOM)
