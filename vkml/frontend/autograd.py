"""Autograd: ops record how they were made; ``backward()`` builds the gradient graph, lazily.

Recording. While grad mode is on, an op whose operand requires grad gives its (floating
point) result a ``Context``: the op's gradient rule (``OpDef.grad`` for registered ops,
``vkml.ops.grads.RULES`` for composite and movement ops), its operands and its other
arguments. A composite op (matmul, softmax, ...) records once, as itself: the ops it is built
of run with recording off.

Backward (the engine is vkml/frontend/backward.py). ``loss.backward()`` walks the recorded graph
from ``loss``, gives each rule the sum of its output's gradients, and adds what reaches a leaf to
the leaf's ``.grad``. It is one of the points where work runs (DESIGN.md), so that the device
computes while Python builds what comes next; ``VKML_BACKWARD_RUNS`` (vkml/config.py) says how:

- ``split`` (the default): ``backward()`` first realizes ``loss`` — the forward starts on the
  device while the gradient graph is built —, and at its end the gradients it added to — they
  run while the optimizer's update is built. Submissions return without waiting
  (vkml/runtime/vulkan/backend.py), so ``loss.item()`` waits for the forward alone, and the next
  step's forward is built while this step's gradients and update still run. A training step
  is three submissions: forward, gradients, update. The forward's activations are kept in
  buffers either way (the gradients read them), so the split costs no fusion that matters;
  an elementwise result the forward fused away is recomputed from its inputs, to the same bits.
- ``end``: forward and gradients in one submission, at the end of ``backward()``.
- ``lazy``: ``backward()`` only records nodes; a gradient is computed when read, and
  ``optimizer.step()`` realizes, in one ``vkml.frontend.realize``, the new parameters, the optimizer's
  state, the gradients, and every tensor ``backward()`` was called on since the previous step
  (one submission per training step).

Whichever is chosen, the values are the same bits. Several ``backward()`` calls before a step
(gradient accumulation) add to ``.grad``; in ``lazy`` the step runs them all in one graph.
After ``backward()`` the recorded graph is released (as PyTorch does without
``retain_graph=True``): a second ``backward()`` through it raises.

>>> import vkml
>>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0]
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterator

from ..ops import grads as G
from ..ops.registry import REGISTRY
from .hooks import RemovableHandle
from .printing import grad_fn_name


class _GradMode(threading.local):
    """Grad mode is per thread, as in PyTorch: one thread's ``no_grad`` (an optimizer step,
    ``backward`` itself) leaves another thread's recording on."""

    enabled = True  # every thread starts with recording on
    inference = False  # inside vkml.inference_mode()
    # called with (op name, operands) by each op that records in this thread: a non-reentrant
    # checkpoint (vkml/utils/checkpoint.py) counts its segment's ops to stop its replay where PyTorch's does
    watch = None
    # the innermost ``autograd.graph.saved_tensors_hooks`` block's (pack, unpack), or None
    # (vkml/frontend/autograd_graph.py); ``disabled_hooks``: the message of a ``disable_saved_tensors_hooks`` block
    saved_hooks = None
    disabled_hooks = None


_mode = _GradMode()


# Ops whose gradient rule reads no operand's values, only shapes and dtypes: PyTorch saves no tensor
# for them, and a ``saved_tensors_hooks`` pack hook does not see their operands here either.
_VALUE_FREE_RULES = frozenset(
    ("add", "sub", "neg", "sum", "reshape", "permute", "expand", "cast", "cat", "pad", "flip", "slice", "clone")
)
# Ops whose gradient rule reads their result and no operand's value, as PyTorch's formula does (it saves
# ``result``): under ``saved_tensors_hooks`` the result goes through the hooks and the operands do not.
_RESULT_SAVING_RULES = frozenset(
    ("exp", "exp2", "expm1", "tanh", "sigmoid", "sqrt", "rsqrt", "relu", "reciprocal", "tan", "softmax", "log_softmax")
)
# Ops whose rule reads operands and result, both saved by PyTorch's formula (``pow`` by a tensor exponent)
_RESULT_ALSO_SAVING_RULES = frozenset(("pow", "hypot", "logsumexp"))


class PackedSaved:
    """A tensor an op keeps for its gradient, as a ``saved_tensors_hooks`` pack hook returned it: the
    gradient rule computes with ``unpack()``, the unpack hook's tensor."""

    __slots__ = ("packed", "unpack_hook")

    def __init__(self, tensor, hooks: tuple):
        pack, self.unpack_hook = hooks
        # the ops the pack hook runs save their operands plainly, as in PyTorch (not through the hook again)
        previous, _mode.saved_hooks = _mode.saved_hooks, None
        try:
            self.packed = pack(tensor)
        finally:
            _mode.saved_hooks = previous

    def unpack(self):
        value = self.unpack_hook(self.packed)
        if not G.is_tensor(value):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type {type(value).__name__}"
            )
        return value


# tensors backward() ran on (and buffers realize_at_next_step was given) since the last optimizer
# step, by id: one entry per live tensor however often it comes back (a BatchNorm buffer, each
# forward), so a loop without an optimizer step keeps it as long as its live tensors, not its steps
_backward_roots: dict[int, weakref.ref] = {}
_backward_roots_pruned = [0]  # the entries left by the last pruning of dead ones
_backward_roots_lock = threading.Lock()


def is_grad_enabled() -> bool:
    """Whether ops record gradient contexts now, in this thread (``vkml.no_grad()`` turns it off)."""
    return _mode.enabled


class set_grad_enabled:
    """Turn recording on or off from now on, or for a ``with`` block (restored at its end), or for
    the calls of a function it decorates (``@vkml.set_grad_enabled(False)``), as in PyTorch.

    >>> import vkml
    >>> with vkml.set_grad_enabled(False):
    ...     vkml.is_grad_enabled()
    False
    """

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(
                f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not {type(mode).__name__}"
            )
        self.previous, _mode.enabled = _mode.enabled, mode

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _mode.enabled = self.previous

    def __call__(self, func):
        _mode.enabled, mode = self.previous, _mode.enabled  # as a decorator it changes nothing now

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with set_grad_enabled(mode):
                return func(*args, **kwargs)

        return decorated


class no_grad(contextlib.ContextDecorator):
    """Ops inside record nothing: results never require grad (evaluation, optimizer updates).

    A context manager or a decorator, with or without parentheses (``@vkml.no_grad``), as in PyTorch.

    >>> import vkml
    >>> w = vkml.ones(2, requires_grad=True)
    >>> with vkml.no_grad():
    ...     (w * 2).requires_grad
    False
    """

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not isinstance(args[0], bool):  # used as a bare decorator
            return cls()(args[0])
        return super().__new__(cls)

    def __call__(self, func):
        if not inspect.isgeneratorfunction(func):
            return super().__call__(func)

        @functools.wraps(func)
        def generator(*args, **kwargs):
            # each resumption of the generator runs in the mode, and the caller's code between them in its own,
            # as PyTorch's decorator of a generator function does
            gen = func(*args, **kwargs)
            try:
                with self:
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self:
                            gen.close()
                        raise
                    except BaseException as error:
                        with self:
                            response = gen.throw(error)
                    else:
                        with self:
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return generator

    def __enter__(self):
        self.previous, _mode.enabled = _mode.enabled, False
        return self

    def __exit__(self, *exc) -> None:
        _mode.enabled = self.previous


class enable_grad(no_grad):
    """Recording on inside, even within ``no_grad``."""

    def __enter__(self):
        self.previous, _mode.enabled = _mode.enabled, True
        return self


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``vkml.inference_mode()``."""
    return _mode.inference


class inference_mode(no_grad):
    """``no_grad`` for inference: ops inside record nothing (``mode=False``: inference mode off and grad
    mode on inside, even within ``no_grad``, as PyTorch's guard sets both).

    A context manager or a decorator (``@vkml.inference_mode()`` or ``@vkml.inference_mode``).
    The tensors made inside are inference tensors, as in PyTorch (``is_inference()``, also their
    views): outside the region an in-place write to one, or ``requires_grad_()``, raises
    PyTorch's RuntimeError, and so does a gradient rule reading one as a saved value. PyTorch
    raises that last one when the op is recorded; vkml when backward reads the value (the op
    records its operands, and only its rule knows which values it uses), so ``w + x`` works in
    both and ``(w * x).sum().backward()`` raises in both.

    >>> import vkml
    >>> w = vkml.ones(2, requires_grad=True)
    >>> with vkml.inference_mode():
    ...     (w * 2).requires_grad, vkml.is_inference_mode_enabled()
    (False, True)
    """

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.previous = (_mode.enabled, _mode.inference)
        # PyTorch's guard sets both modes: inference_mode(False) turns grad mode on, even inside no_grad
        _mode.enabled, _mode.inference = not self.mode, self.mode
        return self

    def __exit__(self, *exc) -> None:
        _mode.enabled, _mode.inference = self.previous


# The storage owners made inside inference_mode (Tensor.__init__ adds them): a view's owner is its
# base, so a view of an inference tensor is one too, and a tensor made inside from a normal one's
# storage (a view) is not, as in PyTorch. Keyed by id (a Tensor's == is elementwise); an entry goes with
# its tensor, so a reused id is never found.
_inference_owners: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
# "Any inference tensor alive?", asked by every recorded op and every saved tensor read: the mapping's own dict,
# whose truth is C's (the mapping's ``__len__`` is Python code). An entry whose tensor just died may linger there
# until its callback runs, which only costs that look the exact check (``is_inference_owner``).
_inference_entries: dict = _inference_owners.data

INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
    "it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`."
)


def mark_inference(t) -> None:
    _inference_owners[id(t)] = t


def is_inference_owner(owner) -> bool:
    return _inference_owners.get(id(owner)) is owner


def is_inference(input) -> bool:
    """Whether ``input`` was made inside ``vkml.inference_mode()`` (or views such a tensor's storage).

    >>> import vkml
    >>> with vkml.inference_mode():
    ...     x = vkml.ones(2)
    >>> x.is_inference(), vkml.ones(2).is_inference()
    (True, False)
    """
    return is_inference_owner(input if input._base is None else input._base)


def check_inference_write(t, what: str = "inplace") -> None:
    """PyTorch's refusal to write (or set requires_grad on) an inference tensor outside inference_mode."""
    if _mode.inference or not _inference_entries or not is_inference(t):
        return
    if what == "requires_grad":
        raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
    raise RuntimeError(
        "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a "
        "normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."
    )


class _AnomalyMode:
    """``detect_anomaly`` / ``set_detect_anomaly``: process-wide, as PyTorch's."""

    enabled = False
    check_nan = True


def is_anomaly_enabled() -> bool:
    return _AnomalyMode.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _AnomalyMode.check_nan


def records_composites_whole() -> bool:
    """Whether a composite (linear, dropout, cross_entropy) may record as ONE op with its own rule: grad mode
    on and nothing that must see its operators' ops one by one (saved-tensor hooks, a checkpoint's op count
    (``watch``), anomaly mode). Callers check autocast and their operands themselves."""
    mode = _mode
    return mode.enabled and mode.saved_hooks is None and mode.watch is None and not _AnomalyMode.enabled


class set_detect_anomaly:
    """Turn anomaly detection on or off (a function call, or a context that restores the old mode).

    With it on, backward checks every gradient a rule computes and raises PyTorch's error naming
    the op whose backward made a NaN (``check_nan``). Each check reads the gradient back: a
    debugging mode, slow as PyTorch's is.
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        self.previous = (_AnomalyMode.enabled, _AnomalyMode.check_nan)
        _AnomalyMode.enabled, _AnomalyMode.check_nan = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        _AnomalyMode.enabled, _AnomalyMode.check_nan = self.previous


class detect_anomaly(contextlib.ContextDecorator):
    """A context (or decorator) with anomaly detection on; see ``set_detect_anomaly``.

    >>> import vkml
    >>> x = vkml.tensor([0.0], requires_grad=True)
    >>> import warnings; warnings.simplefilter("ignore")
    >>> with vkml.autograd.detect_anomaly():
    ...     vkml.sqrt(x * 0 - 1).sum().backward()
    Traceback (most recent call last):
    RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self) -> None:
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
            "for debugging.",
            UserWarning,
            stacklevel=2,
        )
        self.previous = (_AnomalyMode.enabled, _AnomalyMode.check_nan)
        _AnomalyMode.enabled, _AnomalyMode.check_nan = True, self.check_nan

    def __exit__(self, *exc) -> None:
        _AnomalyMode.enabled, _AnomalyMode.check_nan = self.previous


def torch_backward_name(name: str) -> str:
    """PyTorch's name of an op's backward node: ``"max_pool2d"`` -> ``"MaxPool2DBackward0"``."""
    return grad_fn_name(name)


@contextlib.contextmanager
def anomaly_report(ctx) -> Iterator[None]:
    """In anomaly mode, an error in ``ctx``'s backward is preceded by PyTorch's warning naming the node and
    where its forward ran (recorded when the forward ran in anomaly mode too)."""
    try:
        yield
    except Exception:
        trace = getattr(ctx, "trace", None)
        where = (
            "Traceback of forward call that caused the error:\n" + trace
            if trace is not None
            else "No forward pass information available. Enable detect anomaly during forward pass for more information."
        )
        warnings.warn(f"Error detected in {torch_backward_name(ctx.name)}. {where}", UserWarning, stacklevel=2)
        raise


def _check_anomaly(ctx, results) -> None:
    for i, grad in enumerate(results):
        if grad is not None and hasattr(grad, "dtype") and grad.dtype.is_float and bool((grad != grad).any()):
            raise RuntimeError(f"Function '{torch_backward_name(ctx.name)}' returned nan values in its {i}th output.")


class _OpName(str):
    """A context's op name (``"mul"``), which vkml reads as a string, and called, PyTorch's
    ``grad_fn.name()``: the name of the node's class (``"MulBackward0"``)."""

    __slots__ = ()

    def __call__(self) -> str:
        return grad_fn_name(self)


_OP_NAMES: dict[str, _OpName] = {}


# ops whose Python-number operands are Scalar arguments of PyTorch's op (no edge in its graph), where the
# arithmetic ops' (``x + 1``) are wrapped in a tensor that has one
_SCALAR_ARGUMENT_OPS = frozenset(
    ("leaky_relu", "elu", "clamp", "clamp_min", "clamp_max", "hardtanh", "threshold", "remainder", "fmod")
)


class Context:
    """How one tensor was made: its op's rule, its operands, its other arguments."""

    __slots__ = (
        "name", "rule", "parents", "parent_ctxs", "saved", "output", "attrs", "_next_after_release", "trace",
        "node_hooks",
    )  # fmt: skip

    def __init__(self, name: str, rule: Callable, parents: tuple, saved: tuple, output, attrs: dict, parent_ctxs=None):
        found = _OP_NAMES.get(name)  # one immutable name per op, shared by its contexts
        self.name = found if found is not None else _OP_NAMES.setdefault(name, _OpName(name))
        self.rule = rule
        self.parents = parents  # per operand: the tensor gradients flow to, or None
        # per operand: the parent's context when this op was recorded (``record`` reads them as it finds the
        # parents). An in-place op gives a handle a new context later; gradients follow the one the operand
        # had (vkml/frontend/mutation.py).
        if parent_ctxs is None:
            parent_ctxs = tuple(p._ctx if p is not None else None for p in parents)
        self.parent_ctxs = parent_ctxs
        # per operand: Tensor._saved()'s (node, storage owner, version), or a Python number; made
        # SavedTensors (vkml/tensor.py) for the rule at backward, which check the version
        self.saved = saved
        # the result's (node, weak reference to its storage owner, version): no cycle through _ctx; or,
        # for a rule that reads its result under saved-tensor hooks, the result as the pack hook kept it
        self.output = output
        self.attrs = attrs
        if _AnomalyMode.enabled:  # where the forward ran, for the warning of an error in this node's backward
            self.trace = "".join(traceback.format_stack()[:-1])

    @property
    def released(self) -> bool:
        return self.parents is None

    def release(self) -> None:
        """Drop the operands, so the forward graph can be freed once backward() has used it."""
        # PyTorch's graph keeps its edges after backward frees the saved tensors: so does this one. What
        # they lead to is kept (a context, a leaf, which PyTorch's AccumulateGrad holds too), not the edges:
        # most graphs are never read after backward, and every op of every step is released.
        parents = self.parents
        if parents is not None and getattr(self.name, "edges", None) is None:
            self._next_after_release = tuple(self._edge_sources())
        if parents is not None:
            release_rule = getattr(self.rule, "release", None)  # a custom Function's: its ctx's saved tensors
            if release_rule is not None:
                release_rule()
        self.parents = self.parent_ctxs = self.saved = self.output = None

    @property
    def next_functions(self) -> tuple:
        """PyTorch's edges to the operands' nodes, one ``(node, 0)`` per operand: the context the
        operand had when this op was recorded, an ``AccumulateGrad`` for a leaf that requires grad,
        ``None`` for an operand no gradient flows to."""
        shown = getattr(self.name, "edges", None)  # a composite's: PyTorch's edges (``shown_as``)
        if shown is not None:
            return tuple((named_node(node), i) for node, i in shown)
        if self.parents is None:
            kept = self._next_after_release
            if kept and type(kept[0]) is tuple:  # made already: the same edges every read, as before release
                return kept
            self._next_after_release = self._edges(kept)
            return self._next_after_release
        return self._edges(self._edge_sources())

    def _edge_sources(self) -> list:
        """What each operand PyTorch gives an edge to leads to: its context then, the leaf, or None. PyTorch's
        node has no edge for a number its op takes as a Scalar argument (``leaky_relu``'s slope, ``clamp``'s
        bounds) nor for ``where``'s condition."""
        sources = [p if p is None or c is None else c for p, c in zip(self.parents, self.parent_ctxs, strict=True)]
        if self.name in _SCALAR_ARGUMENT_OPS:
            return [src for src, kept in zip(sources, self.saved, strict=True) if not isinstance(kept, (int, float))]
        if self.name == "where":
            return sources[1:]
        return sources

    @staticmethod
    def _edges(sources) -> tuple:
        """``next_functions`` of what each operand's gradient flows to: None, a context, or a leaf (its
        ``AccumulateGrad``)."""
        edges = []
        for source in sources:
            if source is None:
                edges.append((None, 0))
            elif isinstance(source, Context):
                edges.append((named_node(source), 0))
            else:
                edges.append((named_node(AccumulateGrad(source)), 0))
        return tuple(edges)

    def __repr__(self) -> str:  # a C++ node's class name: CopySlices for "torch::autograd::CopySlices"
        return f"<{grad_fn_name(self).rpartition('::')[2]} object at {id(self):#x}>"

    def __getattr__(self, name: str):
        # ``grad_fn._saved_self`` / ``_saved_other`` / ``_saved_result`` and ``_raw_saved_self`` /
        # ``_raw_saved_other``: what the node keeps, as the saved-tensor hooks tutorial reads it
        # (vkml/frontend/backward.py's ``saved_attribute``, set when it loads)
        if name.startswith(("_saved_", "_raw_saved_")) and saved_attribute is not None:
            return saved_attribute(self, name)
        raise AttributeError(f"'{grad_fn_name(self)}' object has no attribute '{name}'")

    # PyTorch's Node API on the graph's nodes (``torch.autograd.graph.Node``): hooks the backward engine
    # runs around this node's rule (vkml/frontend/backward.py), and a dict for the user's notes. Made on
    # first use: most nodes never have any, and recording an op stays one object.
    def _hooks(self) -> NodeHooks:
        hooks = getattr(self, "node_hooks", None)
        if hooks is None:
            hooks = self.node_hooks = NodeHooks()
            NodeHooks.made = True
        return hooks

    @property
    def metadata(self) -> dict:
        """The node's dict for whatever a user keeps on it (PyTorch's ``Node.metadata``)."""
        return self._hooks().metadata

    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """``hook(grad_outputs)`` runs before this node's gradient rule; a tuple it returns replaces the
        gradients the rule reads. Returns a handle whose ``remove()`` undoes it."""
        hooks = self._hooks().pre
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs)`` runs after this node's gradient rule (``grad_inputs``: one
        gradient or None per edge of ``next_functions``); a tuple it returns replaces ``grad_inputs``.
        Returns a handle whose ``remove()`` undoes it."""
        hooks = self._hooks().post
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle


saved_attribute: Callable | None = None  # backward.py's reader of ``grad_fn._saved_*`` (it reads SavedTensors)


class NodeHooks:
    """A node's hooks before and after its rule (by handle id, in registration order) and its metadata."""

    __slots__ = ("pre", "post", "metadata")
    # whether any node ever had hooks: until then backward() reads no node's (a missing slot's getattr
    # raises and catches an AttributeError, a cost per node that graphs without hooks should not pay)
    made = False

    def __init__(self) -> None:
        self.pre: dict = {}
        self.post: dict = {}
        self.metadata: dict = {}


class AccumulateGrad:
    """The node a leaf's gradient reaches the leaf through (``grad_fn.next_functions``): its
    ``variable`` is the leaf; it has no edges of its own."""

    __slots__ = ("variable",)
    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    # Hooks on the accumulator (the gradient-bucketing idiom ``p.expand_as(p).grad_fn.next_functions[0][0]``)
    # live on the leaf: vkml makes a new AccumulateGrad on each read of next_functions.
    def _hooks(self) -> NodeHooks:
        hooks = getattr(self.variable, "_accumulate_hooks", None)
        if hooks is None:
            hooks = self.variable._accumulate_hooks = NodeHooks()
            NodeHooks.made = True
        return hooks

    @property
    def metadata(self) -> dict:
        return self._hooks().metadata

    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """``hook((grad,))`` runs before the leaf's ``.grad`` is accumulated; a tuple it returns replaces it."""
        return Context.register_prehook(self, hook)

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """``hook((), (grad,))`` runs after the leaf's ``.grad`` is accumulated (PyTorch's AccumulateGrad hook)."""
        return Context.register_hook(self, hook)

    def __eq__(self, other) -> bool:  # one per leaf in PyTorch: two edges to one leaf compare equal
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self) -> int:
        return id(self.variable)

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def rule_for(name: str) -> Callable | None:
    """The gradient rule of op ``name``; None if the op is not differentiable."""
    op = REGISTRY.get(name)
    return op.grad if op is not None else G.RULES.get(name)


def _requires_grad(x) -> bool:
    return getattr(x, "requires_grad", False) is True


def record(name: str, operands, out, attrs: dict | None = None):
    """Give ``out`` the context of op ``name`` if grad mode is on and an operand requires grad; returns ``out``."""
    if not _mode.enabled or not out.dtype.is_float:
        return out
    # One pass finds each operand's parent and its context then: one requires_grad read per operand (a
    # view's reads its base's history: Tensor.requires_grad); ``is``, not ``in`` or parents.count(None):
    # those compare each tensor by Tensor.__eq__.
    parents, parent_ctxs, recorded = [], [], False
    for x in operands:
        if x is out:  # an op that returned an operand as it is: nothing to record
            return out
        if getattr(x, "requires_grad", False) is True:
            parents.append(x)
            parent_ctxs.append(x._ctx)
            recorded = True
        else:
            parents.append(None)
            parent_ctxs.append(None)
    if not recorded:  # the usual case: nothing to record
        return out
    op = REGISTRY.get(name)  # rule_for, inlined: every recorded op asks
    rule = op.grad if op is not None else G.RULES.get(name)
    if rule is None:
        return out
    hooks = _mode.saved_hooks
    if hooks is not None or _inference_entries:  # rare: saved-tensor hooks, or inference tensors exist
        saved, output = _saved_checked(name, operands, out, hooks)
    else:
        saved = []
        for x in operands:
            kind = type(x)
            tensor = _tensor_kinds.get(kind)
            if tensor is None:
                tensor = _tensor_kinds[kind] = G.is_tensor(x)
            if not tensor:
                saved.append(x)
            elif x._base is None:  # Tensor._saved of a tensor that owns its storage, inlined
                saved.append((x._node, x, (x._vcount - x._vhidden, x._vcount, ())))
            else:
                saved.append(x._saved())
        node, owner, version = out._saved()
        output = (node, weakref.ref(owner), version)
    out._ctx = Context(name, rule, tuple(parents), tuple(saved), output, attrs or {}, tuple(parent_ctxs))
    out._requires_grad = True
    if _mode.watch is not None:
        _mode.watch(name, operands)
    return out


def _saved_checked(name: str, operands, out, hooks) -> tuple[list, object]:
    """``record``'s saved operands and result where saved-tensor hooks are on or inference tensors exist:
    PyTorch refuses to save an inference tensor when the op records; a pack hook gets what PyTorch's node
    saves (its result alone for ``exp``, ``tanh``, ...; operands and result for ``pow``, ``hypot``, ...;
    vkml's operands otherwise, none for the value-free rules)."""
    reads_values = name not in _VALUE_FREE_RULES  # value-free rules read shapes and dtypes alone
    pack = hooks is not None and reads_values
    pack_result = pack and name in _RESULT_SAVING_RULES
    if pack_result:
        pack = False
    elif pack and name in _RESULT_ALSO_SAVING_RULES:
        pack_result = name != "pow" or G.is_tensor(operands[1])  # pow by a number saves its input alone
    refuse_inference = reads_values and bool(_inference_entries)
    saved = []
    for x in operands:
        if not G.is_tensor(x):
            saved.append(x)
            continue
        if refuse_inference and is_inference(x):
            raise RuntimeError(INFERENCE_SAVED)
        saved.append(PackedSaved(x, hooks) if pack else x._saved())
    if pack_result:  # packed after the operands, as PyTorch's node saves its result when the op returns
        return saved, PackedSaved(out, hooks)
    node, owner, version = out._saved()
    return saved, (node, weakref.ref(owner), version)


# type of an operand -> whether it is a tensor (``G.is_tensor``, which asks the class), once per type
_tensor_kinds: dict[type, bool] = {}


_NEVER_GRAD = frozenset((int, float, bool, str, type(None)))  # arguments that are no tensor


def _any_requires_grad(values) -> bool:
    """Whether a value, or an element of a list or tuple value, requires grad (the one level of lists
    ``differentiable`` flattens): the sizes and flags most arguments are skip the attribute lookup."""
    for v in values:
        kind = type(v)
        if kind in _NEVER_GRAD:
            continue
        if isinstance(v, (list, tuple)):
            for w in v:
                if type(w) not in _NEVER_GRAD and getattr(w, "requires_grad", False) is True:
                    return True
        elif getattr(v, "requires_grad", False) is True:
            return True
    return False


def _binder(signature: inspect.Signature) -> Callable:
    """``signature.bind(*args, **kwargs)`` with defaults applied, as a dict in the signature's order,
    for arguments the function has already accepted: a signature without ``**kwargs`` binds by
    position and name without ``inspect``'s checks (they cost more than most ops' recording); a
    ``*args`` parameter takes the positions left, as a tuple."""
    params = list(signature.parameters.values())
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):

        def general(args, kwargs) -> dict:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)

        return general
    # per parameter: (name, default, 0 keyword only / 1 positional or keyword / 2 *args)
    table = [
        (
            p.name,
            p.default,
            2 if p.kind is inspect.Parameter.VAR_POSITIONAL else int(p.kind is not inspect.Parameter.KEYWORD_ONLY),
        )
        for p in params
    ]

    def plain_bind(args, kwargs) -> dict:
        bound, i = {}, 0
        for name, default, kind in table:
            if kind == 2:
                bound[name], i = tuple(args[i:]), len(args)
            elif kind and i < len(args):
                bound[name] = args[i]
                i += 1
            else:
                bound[name] = kwargs.get(name, default)
        return bound

    return plain_bind


def differentiable(name: str, inputs: tuple[str, ...] = ("input",)):
    """Decorator for a front-end function that is one op for autograd (rule ``ops.grads.RULES[name]``).

    ``inputs`` names the parameters holding differentiable operands (a list parameter, as
    ``cat``'s ``tensors``, gives one operand per element); the others reach the rule as
    ``ctx.attrs``. The function's own ops run with recording off.
    """

    def wrap(fn):
        signature = inspect.signature(fn)
        arguments = _binder(signature)

        @functools.wraps(fn)
        def recorded(*args, **kwargs):
            mode = _mode
            if not mode.enabled or not (_any_requires_grad(args) or (kwargs and _any_requires_grad(kwargs.values()))):
                return fn(*args, **kwargs)
            mode.enabled = False  # no_grad() for the call, without its object (grad mode was on)
            try:
                out = fn(*args, **kwargs)
            finally:
                mode.enabled = True
            bound = arguments(args, kwargs)  # fn took these arguments (they bind), in a new dict
            operands = []  # a list or tuple value gives one operand per element
            for p in inputs:
                value = bound.pop(p)
                if isinstance(value, (list, tuple)):
                    operands.extend(value)
                else:
                    operands.append(value)
            return record(name, operands, out, bound)  # the other arguments, in the signature's order

        return recorded

    return wrap


# ---------------------------------------------------------------------- hooks and the roots of backward()


def register_hook(t, hook):
    """``Tensor.register_hook``: ``hook(grad)`` runs when the gradient with respect to ``t`` is
    computed; a tensor it returns is used instead. Returns a handle whose ``remove()`` undoes it."""
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = getattr(t, "_grad_hooks", None)
    if hooks is None:
        hooks = t._grad_hooks = {}
    handle = RemovableHandle(hooks)
    hooks[handle.id] = (t.grad_fn, hook)
    return handle


def register_post_accumulate_grad_hook(t, hook):
    """``Tensor.register_post_accumulate_grad_hook``: ``hook(t)`` runs after backward adds to ``t.grad``
    (a leaf's); returns a handle whose ``remove()`` undoes it."""
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = getattr(t, "_post_accumulate_hooks", None)
    if hooks is None:
        hooks = t._post_accumulate_hooks = {}
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


def warn_non_leaf_grad() -> None:
    """PyTorch's warning on reading ``.grad`` of a non-leaf tensor that does not retain it."""
    warnings.warn(NON_LEAF_GRAD, UserWarning, stacklevel=3)


def retain_grad(t) -> None:
    """``Tensor.retain_grad``: a non-leaf tensor keeps its gradient in ``.grad`` after ``backward()``."""
    if not t.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if t.grad_fn is not None:
        t._retained_ctx = t.grad_fn


def _remember_root(root) -> None:
    with _backward_roots_lock:
        known = _backward_roots.get(id(root))
        if known is not None and known() is root:
            return
        _backward_roots[id(root)] = weakref.ref(root)  # replaces a dead tensor's entry of the same id
        if len(_backward_roots) > 2 * _backward_roots_pruned[0] + 16:  # dead entries: amortised O(1)
            for key in [k for k, r in _backward_roots.items() if r() is None]:
                del _backward_roots[key]
            _backward_roots_pruned[0] = len(_backward_roots)


def realize_at_next_step(t) -> None:
    """Have the next optimizer step's submission realize ``t`` too (a side effect nobody reads, such
    as BatchNorm's running statistics): its lazy graph, and the activations it holds, end there
    instead of growing step after step until the value is read."""
    _remember_root(t)


def take_backward_roots() -> list:
    """The live tensors ``backward()`` ran on since the last call (the optimizer realizes them with its step)."""
    with _backward_roots_lock:
        roots = [r() for r in _backward_roots.values()]
        _backward_roots.clear()
        _backward_roots_pruned[0] = 0
    return [t for t in roots if t is not None]


# ---------------------------------------------------------------------- PyTorch's node names for composites

# A composite op (mean, mse_loss, linear, ...) is recorded as the contexts of the ops it is built
# from; PyTorch records one node named after the ATen op. ``shown_as`` gives the composite's last
# context PyTorch's name and edges: ``name()``, repr and ``type(grad_fn).__name__`` say
# ``MeanBackward0`` and ``next_functions`` lead to the composite's operands, as PyTorch's graph does.
# Backward still runs the inner contexts: only what a user reads of the graph changes.


class _ShownName(_OpName):
    """The op name a context keeps (compared as its op's name), with the PyTorch node it shows."""

    def __call__(self) -> str:
        return self.shown


class GraphNode:
    """A node PyTorch's graph has where vkml records none (the ``TBackward0`` of ``linear``'s weight)."""

    __slots__ = ("_name", "_edges")

    def __init__(self, name: str, next_functions: tuple):
        self._name, self._edges = name, next_functions

    @property
    def next_functions(self) -> tuple:
        return tuple((named_node(node), i) for node, i in self._edges)

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {id(self):#x}>"


_NODE_CLASSES: dict[tuple[type, str], type] = {}


def named_node(node):
    """``node`` with the class PyTorch's node of that name has (``type(grad_fn).__name__ == "MulBackward0"``):
    a subclass of its class with that name and no fields, so the object stays the same."""
    if node is None or type(node) not in (Context, GraphNode):
        return node
    shown = node.name()
    key = (type(node), shown)
    cls = _NODE_CLASSES.get(key)
    if cls is None:
        cls = _NODE_CLASSES[key] = type(
            shown.rpartition("::")[2], (type(node),), {"__slots__": (), "__module__": "vkml.autograd"}
        )
    node.__class__ = cls
    return node


def edge(x) -> tuple:
    """PyTorch's edge to operand ``x``: its node, an ``AccumulateGrad`` for a leaf that requires grad, or None."""
    if not _requires_grad(x):
        return (None, 0)
    ctx = x.grad_fn
    return (ctx if ctx is not None else AccumulateGrad(x), 0)


def show(out, name: str, edges: tuple):
    """Give ``out``'s context PyTorch's node ``name`` with ``edges``; returns ``out``."""
    ctx = getattr(out, "_ctx", None)
    if ctx is not None:
        if type(ctx) is not Context:  # named after its inner op by an earlier read of grad_fn
            ctx.__class__ = Context
        shown = _ShownName(str(ctx.name))
        shown.shown, shown.edges = name, edges
        ctx.name = shown
    return out


def show_chain(out, input, names: tuple):
    """Show ``out``, made from ``input`` by one recorded op or two, as PyTorch's chain of nodes ``names``
    (applied first to last: ``x[0, 1:]`` is ``("SelectBackward0", "SliceBackward0")``); returns ``out``."""
    link = edge(input)
    for name in names[:-1]:
        link = (GraphNode(name, (link,)), 0)
    return show(out, names[-1], (link,))


def shown_as(name, edges: Callable | None = None):
    """Decorate a composite op so that its result's ``grad_fn`` is PyTorch's node ``name`` (a string, or
    a function of the call's arguments giving it), with edges to the tensor arguments (or ``edges(*args,
    **kwargs)``'s, made before the call, as PyTorch's edges name the operands' nodes at the call). An op
    that returns a tuple (``kthvalue``'s values and indices, ``std_mean``) shows it on each result that
    has a node: PyTorch's one node has them all as outputs."""

    def decorate(fn):
        @functools.wraps(fn)
        def _shown_composite(*args, **kwargs):  # private name: stack readers skip it for the public op's
            if not _mode.enabled:
                return fn(*args, **kwargs)
            made = edges(*args, **kwargs) if edges is not None else _tensor_edges(args, kwargs)
            out = fn(*args, **kwargs)
            if made is None:
                return out
            for result in out if isinstance(out, tuple) else (out,):
                ctx = getattr(result, "_ctx", None)
                if ctx is None or any(ctx is getattr(a, "_ctx", None) for a in args):
                    continue  # no node, or an operand returned as it is (a mean over no element): its own
                show(result, name if isinstance(name, str) else name(*args, **kwargs), made)
            return out

        return _shown_composite

    return decorate


def input_edge(input, *args, **kwargs) -> tuple:
    """The edges of PyTorch's node of an op differentiable in its first argument only (``gather``, ``cumsum``)."""
    return (edge(input),)


def _tensor_edges(args, kwargs) -> tuple | None:
    values = [a for a in (*args, *kwargs.values()) if hasattr(a, "_ctx")]
    if not any(_requires_grad(a) for a in values):
        return None
    return tuple(edge(a) for a in values)


def _transposed(weight) -> tuple:
    """The edge to PyTorch's ``TBackward0`` of a weight (what ``linear`` transposes)."""
    e = edge(weight)
    return e if e[0] is None else (GraphNode("TBackward0", (e,)), 0)


def linear_edges(input, weight, bias=None) -> tuple | None:
    """PyTorch's graph of ``linear``: ``AddmmBackward0(bias, input, TBackward0(weight))`` for a 2-d input
    with a bias, ``MmBackward0(input, TBackward0(weight))`` without; a batched input is flattened by a
    ``ViewBackward0`` and the result unflattened by ``ViewBackward0`` (``UnsafeViewBackward0`` without a
    bias). A 1-d input is made a row: by ``UnsqueezeBackward0`` for ``mm``, whose result ``SqueezeBackward4``
    drops it again, or by ``ViewBackward0`` for ``addmm``, whose result is viewed back."""
    if not (_requires_grad(input) or _requires_grad(weight) or _requires_grad(bias)):
        return None
    ndim = input.dim()
    if ndim == 1:
        row = edge(input)
        row = (
            row if row[0] is None else (GraphNode("UnsqueezeBackward0" if bias is None else "ViewBackward0", (row,)), 0)
        )
        if bias is None:
            return ((GraphNode("MmBackward0", (row, _transposed(weight))), 0),)
        return ((GraphNode("AddmmBackward0", (edge(bias), row, _transposed(weight))), 0),)
    if ndim == 2:
        return (
            (edge(bias), edge(input), _transposed(weight)) if bias is not None else (edge(input), _transposed(weight))
        )
    if ndim > 2:
        flat = edge(input)
        flat = flat if flat[0] is None else (GraphNode("ViewBackward0", (flat,)), 0)
        if bias is None:
            return ((GraphNode("MmBackward0", (flat, _transposed(weight))), 0),)
        return ((GraphNode("AddmmBackward0", (edge(bias), flat, _transposed(weight))), 0),)
    return None


def linear_name(input, weight, bias=None) -> str:
    if input.dim() == 1:
        return "ViewBackward0" if bias is not None else "SqueezeBackward4"
    if input.dim() > 2:
        return "ViewBackward0" if bias is not None else "UnsafeViewBackward0"
    return "AddmmBackward0" if bias is not None else "MmBackward0"


def cross_entropy_edges(input, target, *args, label_smoothing: float = 0.0, **kwargs) -> tuple | None:
    """PyTorch's graph of ``cross_entropy`` over class indices: ``NllLossBackward0(LogSoftmaxBackward0(input))``.
    Class probabilities or label smoothing keep vkml's nodes (None)."""
    # a target that is no tensor (a Python number) is cross_entropy's own TypeError, raised after this
    if not _requires_grad(input) or not hasattr(target, "dtype") or target.dtype.is_float:
        return None
    if label_smoothing > 0 or len(args) > 5:
        return None
    return ((GraphNode("LogSoftmaxBackward0", (edge(input),)), 0),)
