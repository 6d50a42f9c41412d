"""``vkml.autograd``: PyTorch's ``torch.autograd`` namespace — ``grad``, ``backward``, ``Function`` and the grad modes.

The engine is vkml/frontend/autograd.py (``run_backward``); this module gives it PyTorch's
signatures, checks and messages, and lets users define ops with their own gradient.

>>> import vkml
>>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
>>> (g,) = vkml.autograd.grad((x**3).sum(), x, create_graph=True)
>>> g.tolist(), vkml.autograd.grad(g.sum(), x)[0].tolist()
([3.0, 12.0], [6.0, 12.0])
"""

from __future__ import annotations

import inspect
import warnings
import weakref

from ..ops import grads as G
from ..tensor import SavedTensor, Tensor
from . import autograd as _autograd
from . import backward as backward_engine
from . import mutation as _mutation
from .autograd import (
    Context,
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from .creation import zeros_like
from .shape import stack

__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "enable_grad",
    "grad",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_grad_enabled",
    "Variable",
    "gradcheck",
    "gradgradcheck",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
]


def _tensor_class():
    """The Tensor class (autograd_functional.py and func.py ask for it by this name)."""
    return Tensor


def _as_list(values, what: str) -> list:
    if values is None:
        return []
    if isinstance(values, _tensor_class()):
        return [values]
    return list(values)


def _gradients(tensors: list, grad_tensors, api: str) -> list:
    grads = [None] * len(tensors) if grad_tensors is None else _as_list(grad_tensors, "grad_tensors")
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    return grads


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` (weighted by ``grad_outputs``) with respect to ``inputs``, as a tuple;
    no ``.grad`` is touched. ``create_graph=True`` records them, for higher derivatives.

    ``inputs`` may be leaves or computed tensors. An input the outputs do not depend on raises,
    unless ``allow_unused=True`` (its gradient is None) or ``materialize_grads=True`` (zeros).
    ``only_inputs`` is accepted and ignored, as in PyTorch. ``is_grads_batched=True``: the first dim
    of each of ``grad_outputs`` is a batch, and each gradient gets that dim in front (PyTorch
    vectorizes the backward with vmap; vkml runs it once per batch element, on one retained graph,
    so the values are the same and the cost grows with the batch).

    >>> import vkml
    >>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
    >>> vkml.autograd.grad((x * x).sum(), [x])[0].tolist()
    [2.0, 4.0]
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)
    outputs, inputs = _as_list(outputs, "outputs"), _as_list(inputs, "inputs")
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for t in inputs:
        if not isinstance(t, Tensor) and getattr(t, "_pair", None) is None:
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
    # a complex input's gradient is its real pair's, given back as complex (docs/complex.md)
    handles = [t if getattr(t, "_pair", None) is not None else None for t in inputs]
    inputs = [t if h is None else h._pair for t, h in zip(inputs, handles)]
    grads = _gradients(outputs, grad_outputs, "grad()")
    for i, out in enumerate(outputs):  # the outputs first, as PyTorch's engine checks them
        if isinstance(out, Tensor) and not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    found = backward_engine.run_backward(
        outputs, grads, retain_graph, create_graph, inputs=inputs, accumulate=False, api="grad()"
    )
    results = []
    for i, t in enumerate(inputs):
        g = found.get(backward_engine._key(t, t.grad_fn))
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
            g = zeros_like(t) if materialize_grads else None
        results.append(g if g is None or handles[i] is None else handles[i]._from_pair(g))
    return tuple(results)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad(..., is_grads_batched=True)``: one backward per element of the grad_outputs' first dim,
    the gradients stacked along a new first dim (None where an input is unused)."""
    batched = _as_list(grad_outputs, "grad_outputs")
    sizes = {g.shape[0] for g in batched if g is not None and g.ndim > 0}
    if len(sizes) != 1 or any(g is not None and g.ndim == 0 for g in batched):
        raise RuntimeError("grad(): is_grads_batched=True needs grad_outputs with one common batch dim in front")
    (size,) = sizes
    rows = [
        grad(
            outputs,
            inputs,
            [None if g is None else g[b] for g in batched],
            retain_graph=True if b < size - 1 else retain_graph,
            create_graph=create_graph,
            allow_unused=allow_unused,
            materialize_grads=materialize_grads,
        )
        for b in range(size)
    ]
    return tuple(None if row[0] is None else stack(list(row)) for row in zip(*rows))


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Add the gradients of ``tensors`` (weighted by ``grad_tensors``) to the ``.grad`` of the leaves
    they depend on — of ``inputs`` only, if given — in one walk of the graph.

    >>> import vkml
    >>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
    >>> vkml.autograd.backward([(x * x).sum(), x.sum()])
    >>> x.grad.tolist()
    [3.0, 5.0]
    """
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("'grad_tensors' and 'grad_variables' (deprecated) arguments both passed to backward().")
        grad_tensors = grad_variables
    tensors = _as_list(tensors, "tensors")
    if inputs is not None:
        inputs = _as_list(inputs, "inputs")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    backward_engine.run_backward(
        tensors, _gradients(tensors, grad_tensors, "backward()"), retain_graph, create_graph, inputs
    )


# Set by vkml/frontend/forward_ad.py (which imports this module): called with (cls, ctx, args, outputs)
# for a Function that has a jvp and no backward; gives its outputs as dual tensors, or None outside a
# dual level.
function_jvp = None


class FunctionCtx:
    """The ``ctx`` of a ``Function``: what ``forward`` leaves for ``backward``.

    ``save_for_backward(*tensors)`` / ``saved_tensors`` (checked against later in-place writes,
    as PyTorch checks them), ``needs_input_grad`` (one bool per ``forward`` argument),
    ``mark_non_differentiable(*outputs)``, ``set_materialize_grads(value)``, ``mark_dirty(*inputs)``
    (inputs ``forward`` wrote in place and returns); any other attribute
    may hold what ``backward`` needs.
    """

    def __init__(self, needs_input_grad: tuple[bool, ...]):
        self.needs_input_grad = needs_input_grad
        self._to_save: tuple | None = ()  # None once backward() freed them
        self._non_differentiable: set[int] = set()
        self.materialize_grads = True
        self._unreleased = 0  # outputs' contexts a backward() has not released yet (``_FunctionRule.release``)

    def save_for_backward(self, *tensors) -> None:
        Tensor = _tensor_class()
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type {type(t).__name__}"
                )
        hooks = _autograd._mode.saved_hooks
        if hooks is not None:  # kept as the saved_tensors_hooks block's pack hook makes them
            self._to_save = tuple(None if t is None else _autograd.PackedSaved(t, hooks) for t in tensors)
            return
        self._to_save = tuple(None if t is None else (t, t._saved()) for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors ``save_for_backward`` kept, as they were then (a later in-place write raises here).

        In a backward that records (``create_graph=True``) they are the tensors themselves, so the
        gradient can be differentiated through them."""
        if self._to_save is None:
            raise RuntimeError(backward_engine.SECOND_TIME)
        out = []
        for item in self._to_save:
            if item is None:
                out.append(None)
                continue
            if type(item) is _autograd.PackedSaved:
                out.append(item.unpack())
                continue
            tensor, saved = item
            value = SavedTensor(saved, ("saved by", type(self).__name__))
            value.node  # noqa: B018  (raises PyTorch's error if the tensor was written in place since)
            out.append(tensor if is_grad_enabled() else value)
        return tuple(out)

    def mark_non_differentiable(self, *outputs) -> None:
        self._non_differentiable.update(id(t) for t in outputs)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        """Tell ``apply`` that ``forward`` wrote these inputs in place (and returns them): their history
        then continues through this function, as PyTorch rebases it."""
        self._dirty = getattr(self, "_dirty", set()) | {id(t) for t in tensors}


class Function:
    """A differentiable op with a user-written gradient, as ``torch.autograd.Function``.

    Subclass it with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``
    (or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``), and call ``apply``.
    ``backward`` returns one gradient per ``forward`` argument (None for non-tensors and for
    inputs that need none). ``forward`` runs with recording off.

    With several outputs, vkml calls ``backward`` once for each output that receives a
    gradient (the others' gradients zero, or None after ``ctx.set_materialize_grads(False)``)
    and sums the results; PyTorch calls it once with all of them. The gradients are the same,
    since a backward is linear in its grad outputs.

    >>> import vkml
    >>> class Cube(vkml.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x**3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return g * 3 * x**2
    >>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
    >>> Cube.apply(x).sum().backward(); x.grad.tolist()
    [3.0, 12.0]
    """

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so you "
            "should invoke them on the class itself. Instantiating an autograd function will raise an error in a "
            "future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        Tensor = _tensor_class()
        separate_setup = cls.setup_context is not Function.setup_context
        if separate_setup:  # as PyTorch: keywords and defaults bound to forward's parameters, all positional
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = tuple(bound.args), dict(bound.kwargs)
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        # each input's value and history before forward, for an input forward writes (ctx.mark_dirty)
        before = {id(a): _mutation._alias(a) for a in args if isinstance(a, Tensor) and a.requires_grad}
        with no_grad():
            out = cls.forward(*args, **kwargs) if separate_setup else cls.forward(ctx, *args, **kwargs)
        if separate_setup:
            cls.setup_context(ctx, args, out)
        outs = list(out) if isinstance(out, tuple) else [out]
        dirty = getattr(ctx, "_dirty", set())
        _check_dirty(cls, dirty, args, outs)
        if function_jvp is not None and getattr(cls, "jvp", None) is not None and cls.backward is Function.backward:
            duals = function_jvp(cls, ctx, args, outs)  # a jvp-only Function's tangents (forward_ad.py)
            if duals is not None:
                return tuple(duals) if isinstance(out, tuple) else duals[0]
        if not (is_grad_enabled() and any(needs)):
            return out
        differentiable = [
            isinstance(o, Tensor) and o.dtype.is_float and id(o) not in ctx._non_differentiable for o in outs
        ]
        inputs = {id(a) for a in args if isinstance(a, Tensor)}
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and id(o) not in dirty and (id(o) in inputs or o._ctx is not None):
                outs[i] = Tensor(o.node)  # an input returned as is: a new handle, so the input keeps its history
                if id(o) in inputs:  # PyTorch's view of the input: an in-place write to it is refused
                    _mutation.custom_function_view(outs[i], o, (i, cls.__name__))
        name = f"{cls.__name__}Backward"
        # a written input's gradient goes to its history before the write, which its handle no longer holds
        args_before = tuple(before.get(id(a), a) if id(a) in dirty else a for a in args)
        parents = tuple(a if need else None for a, need in zip(args_before, needs))
        saved = tuple(a._saved() if isinstance(a, Tensor) else a for a in args_before)
        for i, o in enumerate(outs):
            if not differentiable[i]:
                continue
            rule = _FunctionRule(cls, name, ctx, args, outs, i)
            ctx._unreleased += 1
            node, owner, version = o._saved()
            o._ctx = Context(name, rule, parents, saved, (node, weakref.ref(owner), version), {})
            o._requires_grad = True
        return tuple(outs) if isinstance(out, tuple) else outs[0]


def _check_dirty(cls, dirty: set, args: tuple, outs: list) -> None:
    """PyTorch's errors for ``ctx.mark_dirty``: only returned, non-leaf, non-view inputs may be written."""
    if not dirty:
        return
    if not dirty <= {id(o) for o in outs}:
        raise RuntimeError(
            "Some elements marked as dirty during the forward method were not returned as output. "
            "The inputs that are modified inplace must all be outputs of the Function."
        )
    Tensor = _tensor_class()
    for a in args:
        if isinstance(a, Tensor) and id(a) in dirty:
            if a.requires_grad and a.is_leaf:  # PyTorch's words for a Function's dirty input
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            if a._base is not None:
                raise NotImplementedError(
                    f"{cls.__name__}: ctx.mark_dirty of a view (PyTorch rebases its base's history) is not supported by vkml"
                )


class _FunctionRule:
    """The gradient rule of output ``index`` of one ``Function.apply`` call."""

    def __init__(self, cls, name: str, ctx: FunctionCtx, args: tuple, outs: list, index: int):
        Tensor = _tensor_class()
        self.cls, self.name, self.ctx, self.index = cls, name, ctx, index
        self.shapes = [a.shape if isinstance(a, Tensor) else None for a in args]
        # the other outputs' shapes and dtypes, for zero gradients; no reference to the outputs themselves
        self.out_meta = [(o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs]

    def __call__(self, c: G.GradContext) -> tuple:
        grads = []
        for i, meta in enumerate(self.out_meta):
            if i == self.index:
                grads.append(c.g)
            elif meta is not None and self.ctx.materialize_grads:
                grads.append(c.F.zeros(meta[0], dtype=meta[1], device=meta[2]))
            else:
                grads.append(None)
        result = self.cls.backward(self.ctx, *grads)
        result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(result) < len(self.shapes) or any(r is not None for r in result[len(self.shapes) :]):
            raise RuntimeError(
                f"function {self.name} returned an incorrect number of gradients "
                f"(expected {len(self.shapes)}, got {len(result)})"
            )
        result = result[: len(self.shapes)]
        for i, (g, shape) in enumerate(zip(result, self.shapes)):
            if g is None:
                continue
            if shape is None:
                raise RuntimeError(
                    f"function {self.name} returned a gradient different than None at position {i + 1}, "
                    "but the corresponding forward input was not a Variable"
                )
            if tuple(g.shape) != tuple(shape) and not _expandable(shape, g.shape):
                raise RuntimeError(
                    f"Function {self.name} returned an invalid gradient at index {i} - got {list(g.shape)} "
                    f"but expected shape compatible with {list(shape)}"
                )
        return result

    def release(self) -> None:
        """What backward() does to a context it used (``Context.release``): the last of the call's outputs'
        frees the saved tensors, as PyTorch frees them. An output ``forward`` saved (``save_for_backward(out)``)
        holds its context through them, a cycle that kept its memory until the garbage collector ran."""
        ctx = self.ctx
        ctx._unreleased -= 1
        if not ctx._unreleased:
            ctx._to_save = None


def _expandable(shape: tuple, target: tuple) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` (then a gradient of ``target`` sums back to it)."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], target[::-1]))


# gradcheck, gradgradcheck and the legacy Variable (vkml/frontend/gradcheck.py, which calls grad above)
from .gradcheck import GradcheckError, Variable, gradcheck, gradgradcheck  # noqa: E402, F401
