"""The backward engine: ``backward()`` walks the contexts that vkml/frontend/autograd.py recorded
and runs each op's gradient rule (see autograd.py's docstring for when the work runs).

Split from autograd.py because the rules read their operands as vkml/tensor.py's ``SavedTensor``:
autograd.py is loaded before tensor.py (the operators' decorators need it), this module while
tensor.py imports, so it names tensor.py as a module and reads ``SavedTensor`` when a rule runs.

>>> import vkml
>>> x = vkml.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0]
"""

from __future__ import annotations

import warnings

import vkml

from .. import config
from .. import tensor as _tensor
from ..ops import grads as G
from . import autograd, memory_format, operators
from .realize import realize

# PyTorch's warning where backward(create_graph=True) writes a gradient that keeps its graph into .grad
CREATE_GRAPH_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient "
    "which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you "
    "have to use this function, make sure to reset the .grad fields of your parameters to None after use to break "
    "the cycle and avoid the leak."
)

SECOND_TIME = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward."
)


def _key(t, ctx) -> int:
    """What gradients are summed under: a computed value's context, a leaf's handle."""
    return id(ctx) if ctx is not None else id(t)


def _graph_order(roots) -> list:
    """(tensor, context) of every value ``roots`` were computed from that requires grad, users before operands.

    A value is its context, not its handle: an in-place op gives a handle a new context, and
    ops recorded before it keep the old one (``Context.parent_ctxs``). A depth-first post-order,
    each value's operands visited last first (the order of a stack of pushed operands, which the
    gradients' sums follow); post-orders of successive roots share one ``seen`` set, so each value
    still follows everything it was computed from. Each value's operands are walked by one iterator.
    """
    order, seen = [], set()
    for root in roots:
        ctx = root._ctx
        key = id(ctx) if ctx is not None else id(root)
        if key in seen:
            continue
        seen.add(key)
        if ctx is None:
            order.append((root, None))
            continue
        if ctx.parents is None:  # released
            raise RuntimeError(SECOND_TIME)
        stack = [((root, ctx), zip(reversed(ctx.parents), reversed(ctx.parent_ctxs)))]
        while stack:
            item, operands = stack[-1]
            for p, pc in operands:
                if p is None:
                    continue
                key = id(pc) if pc is not None else id(p)  # _key, inlined: every edge of the graph passes here
                if key in seen:
                    continue
                seen.add(key)
                if pc is None:  # a leaf: nothing below it
                    order.append((p, None))
                    continue
                if pc.parents is None:
                    raise RuntimeError(SECOND_TIME)
                stack.append(((p, pc), zip(reversed(pc.parents), reversed(pc.parent_ctxs))))
                break
            else:  # every operand is done
                stack.pop()
                order.append(item)
    return order[::-1]


def _fit(grad, operand, op: str):
    """``grad`` summed over the dims ``operand`` was broadcast along, in ``operand``'s dtype."""
    if grad.shape != operand.shape:
        grad = G.unbroadcast(grad, operand.shape)
        if grad.shape != operand.shape:
            raise AssertionError(
                f"the gradient rule of {op!r} gave shape {grad.shape} for an operand of {operand.shape}"
            )
    return grad if grad.dtype is operand.dtype else grad.to(operand.dtype)


def backward(root, gradient=None, retain_graph: bool | None = None, create_graph: bool = False, inputs=None) -> None:
    """Add d(root)/d(leaf) to the ``.grad`` of every leaf ``root`` depends on (when it runs: see the module doc);
    with ``inputs``, to those tensors' ``.grad`` only."""
    if inputs is not None and not len(inputs):
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward([root], [gradient], retain_graph, create_graph, inputs=inputs)


def _root_gradient(root, gradient, index: int, create_graph: bool):
    if gradient is None:
        if root.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return vkml.ones_like(root)
    if not G.is_tensor(gradient):
        return vkml.full_like(root, gradient)
    if gradient.shape != root.shape:
        raise RuntimeError(
            f"Mismatch in shape: grad_output[{index}] has a shape of {gradient.shape} and output[{index}] has a "
            f"shape of {root.shape}."
        )
    return gradient if create_graph else gradient.detach()


def run_backward(
    roots: list,
    gradients: list,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs=None,
    accumulate: bool = True,
    api: str = "backward()",
) -> dict:
    """The engine of ``backward()``, ``vkml.autograd.backward`` and ``vkml.autograd.grad``.

    Walks the graph of ``roots`` (seeded with ``gradients``), once. ``accumulate``: add what reaches
    each leaf — or, with ``inputs``, each of ``inputs`` — to its ``.grad``; otherwise only return
    the gradient of each of ``inputs``, by ``_key``. ``create_graph``: the rules run with recording on,
    on operands that keep their place in the graph, so the gradients can be differentiated again.
    """
    if retain_graph is None:
        retain_graph = create_graph
    for i, root in enumerate(roots):
        if not root.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    seeds = [_root_gradient(r, g, i, create_graph) for i, (r, g) in enumerate(zip(roots, gradients))]
    targets = None if inputs is None else {_key(t, t.grad_fn): t for t in inputs}
    order = _graph_order(roots)
    runs = config.backward_runs()
    if runs == "split":
        realize(*roots)  # the forward starts on the device while the gradient graph is built
    grads: dict = {}
    for root, seed in zip(roots, seeds):
        key = _key(root, root._ctx)
        grads[key] = seed if key not in grads else grads[key] + seed
    found, leaves = {}, []
    any_node_hooks = autograd.NodeHooks.made  # grad_fn.register_(pre)hook's: read per node only once there are any
    node_hooks = None
    with autograd.set_grad_enabled(create_graph):
        for t, ctx in order:
            key = id(ctx) if ctx is not None else id(t)  # _key, inlined: every value of the graph passes here
            g = grads.pop(key, None)
            if g is not None and getattr(t, "_grad_hooks", None):
                g = _run_hooks(t, ctx, g)
            if g is not None and targets is not None and key in targets:
                g = found[key] = _dense_like(targets[key], g)
                if accumulate:
                    target = targets[key]
                    target.grad = g if target._grad is None else _sum(target._grad, g)
                    leaves.append(target.grad)
                    if ctx is None:
                        _run_post_accumulate_hooks(target)
            if ctx is None:
                if g is not None and accumulate and targets is None:
                    if any_node_hooks:
                        node_hooks = getattr(t, "_accumulate_hooks", None)  # its AccumulateGrad's
                    if node_hooks is not None:
                        g = _run_node_prehooks(node_hooks, g)
                    if t.grad is None and memory_format.ACTIVE and memory_format.format_of(t) is not None:
                        g = g.clone(memory_format=memory_format.format_of(t))  # the leaf's layout (PyTorch's)
                    elif t.grad is None:
                        g = _dense_like(t, g)
                        if g._base is not None and g._gradview:
                            g = g.detach()  # AccumulateGrad stores new_grad.detach(): a leaf's .grad is no view
                    t.grad = g if t.grad is None else _sum(t.grad, g)
                    leaves.append(t.grad)
                    _run_post_accumulate_hooks(t)
                    if node_hooks is not None and node_hooks.post:
                        _run_node_posthooks(node_hooks, (), g)
                continue
            if g is not None:
                # _retains, inlined: Tensor.retain_grad() (a non-leaf keeps its gradient)
                if accumulate and getattr(t, "_retained_ctx", None) is ctx:
                    t.grad = g if t._grad is None else _sum(t._grad, g)
                if any_node_hooks:
                    node_hooks = getattr(ctx, "node_hooks", None)
                if node_hooks is not None:
                    g = _run_node_prehooks(node_hooks, g)
                if autograd._AnomalyMode.enabled:
                    with autograd.anomaly_report(ctx):
                        _apply_rule(ctx, g, grads, vkml, create_graph, node_hooks)
                else:
                    _apply_rule(ctx, g, grads, vkml, create_graph, node_hooks)
            if not retain_graph:
                ctx.release()
    if accumulate and create_graph and leaves:
        warnings.warn(CREATE_GRAPH_CYCLE, stacklevel=3)
    results = leaves if accumulate else list(found.values())
    if runs == "split" and results:
        realize(*_dense_parts(results))  # the gradients start while the optimizer's update is built
    elif runs == "end":
        realize(*roots, *_dense_parts(results))
    if accumulate:
        for root in roots:
            autograd._remember_root(root)
    return found


def _sum(a, b):
    """``a + b`` for two gradients, either of which may be sparse (``nn.Embedding(sparse=True)``'s): sparse
    plus sparse stays sparse, a sparse one meeting a dense one adds into the dense one (PyTorch's
    ``add(dense, sparse)``; ``add(sparse, dense)`` is refused)."""
    if a.is_sparse and not b.is_sparse:
        return b + a
    return a + b


def _dense_parts(tensors: list) -> list:
    """``tensors`` with each sparse one replaced by the dense tensors it holds (indices and values), which
    ``realize`` computes."""
    parts = []
    for t in tensors:
        parts += [t._sp_indices, t._sp_values] if t.is_sparse else [t]
    return parts


def _dense_like(t, g):
    """``g`` in row-major order where ``t`` is: PyTorch's gradient layout contract for ``.grad``, and the
    layout its kernels give ``autograd.grad``'s results (a Linear weight's gradient is a transposed
    product here, a convolution input's a slice of a padded one), so ``grad.view(n, -1)`` works."""
    if g._base is None and getattr(g, "_format", None) is None:
        return g  # not a view, no memory format: row-major (is_contiguous's own first test, without its cost)
    if t.is_contiguous() and not g.is_contiguous():
        return g.contiguous()
    return g


def _run_hooks(t, ctx, g):
    """``g`` after the hooks ``Tensor.register_hook`` put on ``t`` while it had context ``ctx``:
    each is called with the gradient, and one that returns a tensor replaces it (PyTorch's rule)."""
    hooks = getattr(t, "_grad_hooks", None)
    if not hooks:
        return g
    for hook_ctx, hook in list(hooks.values()):
        if hook_ctx is ctx:
            replaced = hook(g)
            if replaced is not None:
                _check_hook_result(hook, g, replaced)
                g = replaced
    return g


# PyTorch's names of the operands a node saves, by position (``MulBackward0._saved_self``, ``_saved_other``)
_SAVED_OPERANDS = {"self": 0, "other": 1}


def _saved_operand(ctx: autograd.Context, index: int):
    """Operand ``index`` as ``ctx`` keeps it: the tensor itself while its value is the one saved (PyTorch's
    ``_saved_self is x``), else the saved value; a packed one through its unpack hook."""
    saved = ctx.saved[index]
    if type(saved) is autograd.PackedSaved:
        return saved.unpack()
    if type(saved) is not tuple:
        return saved  # a number the op took
    node, owner = saved[0], saved[1]
    if owner is not None and owner._node is node:
        return owner
    return _tensor.SavedTensor(saved, ("an operand of", ctx.name))


class RawSavedTensor:
    """``grad_fn._raw_saved_self``: one saved operand, on which ``register_hooks(pack, unpack)`` sets
    saved-tensor hooks (``pack`` runs now, ``unpack`` when the gradient reads it)."""

    def __init__(self, ctx: autograd.Context, index: int):
        self._ctx, self._index = ctx, index

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        ctx = self._ctx
        if ctx.saved is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need "
                "to backward through the graph a second time or if you need to access saved variables after calling "
                "backward."
            )
        if type(ctx.saved[self._index]) is autograd.PackedSaved:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair "
                "of hooks is allowed at a time."
            )
        packed = autograd.PackedSaved(_saved_operand(ctx, self._index), (pack_hook, unpack_hook))
        ctx.saved = (*ctx.saved[: self._index], packed, *ctx.saved[self._index + 1 :])


def _saved_attribute(ctx: autograd.Context, name: str):
    """``grad_fn._saved_<self|other|result>`` and ``grad_fn._raw_saved_<self|other>`` (PyTorch's names)."""
    raw = name.startswith("_raw_saved_")
    which = name.removeprefix("_raw_saved_" if raw else "_saved_")
    index = _SAVED_OPERANDS.get(which)
    known = (which == "result" and not raw) or (index is not None and ctx.saved is not None and index < len(ctx.saved))
    if not known and not (index is not None and ctx.saved is None):
        raise AttributeError(f"'{autograd.grad_fn_name(ctx)}' object has no attribute '{name}'")
    if raw:
        return RawSavedTensor(ctx, index)  # readable after backward; its register_hooks then raises
    if ctx.saved is None:
        raise RuntimeError(SECOND_TIME)
    if which == "result":
        if type(ctx.output) is autograd.PackedSaved:
            return ctx.output.unpack()
        node, owner, version = ctx.output
        return _tensor.SavedTensor((node, owner(), version), ("output 0 of", ctx.name))
    return _saved_operand(ctx, index)


autograd.saved_attribute = _saved_attribute


def _run_node_prehooks(node_hooks: autograd.NodeHooks, g):
    """``g`` after a node's ``register_prehook`` hooks: each gets ``(g,)``; a tuple it returns replaces it."""
    for hook in list(node_hooks.pre.values()):
        replaced = hook((g,))
        if replaced is not None:
            g = replaced[0]
    return g


def _run_node_posthooks(node_hooks: autograd.NodeHooks, results: tuple, g) -> tuple:
    """A rule's ``results`` after its node's ``register_hook`` hooks: each gets ``(grad_inputs,
    grad_outputs)``; a tuple it returns replaces ``grad_inputs`` (PyTorch's rule)."""
    for hook in list(node_hooks.post.values()):
        replaced = hook(tuple(results), (g,))
        if replaced is not None:
            if len(replaced) != len(results):
                raise RuntimeError(
                    f"hook '{getattr(hook, '__name__', 'hook')}' has returned an incorrect number of values "
                    f"(got {len(replaced)}, but expected {len(results)})"
                )
            results = tuple(replaced)
    return results


def _check_hook_result(hook, g, replaced) -> None:
    """PyTorch's checks of a tensor hook's result: a tensor of the gradient's dtype and size."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(replaced, _tensor.Tensor) or not isinstance(g, _tensor.Tensor):
        return  # a complex or sparse gradient keeps its own rules
    if replaced.dtype != g.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {g.type()} got {replaced.type()})")
    if tuple(replaced.shape) != tuple(g.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")


def _run_post_accumulate_hooks(t) -> None:
    hooks = getattr(t, "_post_accumulate_hooks", None)
    if hooks:
        for hook in list(hooks.values()):
            hook(t)


def _rule_operand(saved, parent, parent_ctx, role, create_graph: bool):
    """What a rule computes with for one operand: its saved value, version-checked; for ``create_graph``
    linked to the graph (a leaf's own handle, a computed value's context) so second gradients reach it."""
    value = _tensor.SavedTensor(saved, role)
    if not create_graph or parent is None:
        return value
    value.node  # noqa: B018  (raises PyTorch's error if the operand was written in place since)
    if parent_ctx is None:
        return parent
    value._ctx, value._requires_grad = parent_ctx, True
    return value


def _unpacked_operand(saved: autograd.PackedSaved, parent, parent_ctx, create_graph: bool):
    """What a rule computes with for an operand a ``saved_tensors_hooks`` pack hook kept: the unpack hook's
    tensor; for ``create_graph`` linked to the graph as ``_rule_operand`` links it."""
    value = saved.unpack()
    if not create_graph or parent is None:
        return value
    if parent_ctx is None:
        return parent
    linked = _tensor.Tensor(value.node)
    linked._ctx, linked._requires_grad = parent_ctx, True
    return linked


def _apply_rule(ctx: autograd.Context, g, grads: dict, namespace, create_graph: bool = False, node_hooks=None) -> None:
    parents, parent_ctxs = ctx.parents, ctx.parent_ctxs
    role = ("an operand of", ctx.name)
    saved_tensor = _tensor.SavedTensor
    inputs, needs = [], []
    for s, p, pc in zip(ctx.saved, parents, parent_ctxs):
        needs.append(p is not None)
        kind = type(s)
        if kind is tuple:
            # _rule_operand's usual case inlined: a saved value, version-checked when read
            inputs.append(
                _rule_operand(s, p, pc, role, True) if create_graph and p is not None else saved_tensor(s, role)
            )
        elif kind is autograd.PackedSaved:
            inputs.append(_unpacked_operand(s, p, pc, create_graph))
        else:
            inputs.append(s)
    inputs, needs = tuple(inputs), tuple(needs)
    if type(ctx.output) is autograd.PackedSaved:  # the result as the unpack hook gives it back
        value = ctx.output.unpack()
        output = _tensor.Tensor(value.node) if create_graph else value
    elif ctx.name == "gelu" and type(ctx.saved[0]) is autograd.PackedSaved:
        # PyTorch saves gelu's input alone and recomputes from it; vkml's rule reads Φ(x) off the result,
        # which must then be the result of the input the unpack hook gave back
        with autograd.no_grad():
            output = namespace.nn.functional.gelu(inputs[0].detach())
    else:
        node, owner, version = ctx.output
        output = saved_tensor((node, owner(), version), ("output 0 of", ctx.name))
    if create_graph:
        output._ctx, output._requires_grad = ctx, True
    results = ctx.rule(G.GradContext(g, inputs, output, ctx.attrs, namespace, needs))
    if autograd._AnomalyMode.enabled and autograd._AnomalyMode.check_nan:
        autograd._check_anomaly(ctx, results)
    if len(results) != len(parents):
        raise AssertionError(
            f"the gradient rule of {ctx.name!r} gave {len(results)} gradients for {len(needs)} operands"
        )
    if create_graph:
        results = _link_masks(ctx, inputs, results)
    if node_hooks is not None and node_hooks.post:
        results = _run_node_posthooks(node_hooks, results, g)
    for parent, parent_ctx, grad in zip(parents, parent_ctxs, results):
        if parent is None or grad is None:
            continue
        grad = _fit(grad, parent, ctx.name)
        key = id(parent_ctx) if parent_ctx is not None else id(parent)  # _key, inlined
        previous = grads.get(key)
        grads[key] = grad if previous is None else _sum(previous, grad)


def _link_masks(ctx, inputs, results) -> tuple:
    """``results`` with the first gradient linked to the operands ``G.MASK_OPERANDS`` names for the
    op, so that differentiating it again reaches them with zeros, as PyTorch's formula does."""
    masked = [inputs[i] for i in G.MASK_OPERANDS.get(ctx.name, ()) if ctx.parents[i] is not None]
    first = next((i for i, r in enumerate(results) if r is not None), None)
    if not masked or first is None:
        return results
    results = list(results)
    results[first] = zero_link(results[first], masked)
    return tuple(results)


@autograd.differentiable("zero_link", inputs=("grad", "masked"))
def zero_link(grad, masked):
    """``grad`` (a new handle on its node) recorded as depending on ``masked`` with a zero derivative."""
    return operators._wrap(grad.node)


def _zero_link_grad(c: G.GradContext) -> tuple:
    return (c.g, *(vkml.zeros_like(m) if need else None for m, need in zip(c.inputs[1:], c.needs[1:])))


G.RULES["zero_link"] = _zero_link_grad
