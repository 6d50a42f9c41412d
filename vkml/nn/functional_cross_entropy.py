"""``cross_entropy`` of class indices as ONE recorded op, with the rule its composite's ops' rules make.

``vkml.nn.functional.cross_entropy`` composes log_softmax, the class comparison, where, sums, a negation
and the mean's division: seven recorded ops, seven contexts, seven rules for the backward engine to
walk. The usual training call (float32 logits (N, C), int64 or uint8 class indices (N,), no class
weight, no label smoothing, grad mode on, nothing watching the graph) computes the same nodes with
recording off and records one context, ``cross_entropy`` (shown as PyTorch's ``NllLossBackward0``);
its rule builds the gradient the seven rules build, node for node, so the kernels and bits are the
composite's (tests/test_cross_entropy_one_op.py compares the graphs' structures and the values).

>>> import vkml
>>> import vkml.nn.functional as F
>>> x = vkml.zeros(2, 4, requires_grad=True)
>>> F.cross_entropy(x, vkml.tensor([1, 3])).grad_fn.name()
'NllLossBackward0'
"""

from __future__ import annotations

from ..frontend import amp as _amp
from ..frontend import autograd, memory_format
from ..frontend import operators as functions
from ..graph import build as lazy
from ..graph.node import Node
from ..ir import types as T
from ..ops import grads as G
from . import functional as F
from .module import Parameter

_PLAIN_TENSORS = (functions._tensor.Tensor, Parameter)  # exactly these: a subclass may change what an op does
_CLASS_DTYPES = (T.int64, T.uint8)


def recorded(input, target, ignore_index: int, reduction: str):
    """``cross_entropy(input, target, ignore_index=, reduction=)`` as one recorded op, or None where the
    composite must run: another dtype or rank, a target the composite refuses (its errors), grad mode off,
    or saved-tensor hooks, a checkpoint's op count, anomaly mode or autocast watching the ops."""
    if not autograd.records_composites_whole():
        return None
    if input.__class__ not in _PLAIN_TENSORS or target.__class__ not in _PLAIN_TENSORS or _amp._state.dtypes:
        return None
    if not input.requires_grad or input.dtype is not T.float32 or target.dtype not in _CLASS_DTYPES:
        return None
    shape = input.shape
    if len(shape) != 2 or target.shape != shape[:1]:
        return None
    autograd._mode.enabled = False  # no_grad() for the value, without its object
    try:
        message = F._out_of_bounds("cross_entropy", "Target", shape[1])
        if lazy.is_eager() or memory_format.ACTIVE or input.device is not target.device or 0 in shape:
            logp = functions.log_softmax(input, 1)  # the operators: modes they act on, their errors
            hits = F._checked_hits("cross_entropy", target, shape[1], 1, message, ignore_index=ignore_index)
            loss = -functions.where(hits, logp, 0.0).sum(1)
            valid = target != ignore_index
            count = valid.sum()
            loss = F._reduce(functions.where(valid, loss, 0.0), reduction, "cross_entropy", count)
        else:
            logp = _Tensor(_log_softmax_node(input.node))
            hits = F._checked_hits("cross_entropy", target, shape[1], 1, message, ignore_index=ignore_index)
            valid = target != ignore_index
            count_node = _sum(valid.node, None, False)
            loss_node = _loss_node(logp.node, hits.node, valid.node, count_node, reduction)
            count, loss = _Tensor(count_node), _Tensor(loss_node)
    finally:
        autograd._mode.enabled = True
    # the rule reads no operand's value but the op's own intermediates: kept as operands, released by backward
    return autograd.record("cross_entropy", (input, logp, hits, valid, count), loss, {"reduction": reduction})


# The operators' nodes, built directly (lazy's fast paths, else its general path: the nodes the operators
# build, without their tensors, checks and records): tests/test_cross_entropy_one_op.py compares structures.


def _binary(name: str, a, b) -> Node:
    node = lazy.binary_fast(name, a, b)
    return node if node is not None else lazy.elementwise(name, [a, b])


def _unary(name: str, a: Node) -> Node:
    node = lazy.unary_fast(name, a)
    return node if node is not None else lazy.elementwise(name, [a])


def _where(condition: Node, a, b) -> Node:
    node = lazy.condition_fast("where", [condition, a, b])
    return node if node is not None else lazy.elementwise("where", [condition, a, b])


def _sum(node: Node, dims, keepdim: bool) -> Node:
    return lazy.reduce("sum", node, dims, keepdim, "sum")


def _log_softmax_node(x: Node) -> Node:
    """``log_softmax(x, 1)``'s nodes for float32 (N, C): x - m - log(sum(exp(x - m))), m the rows' shift_max."""
    shifted = _binary("sub", x, lazy.reduce("shift_max", x, _DIM_1_TUPLE, True, "log_softmax"))
    return _binary("sub", shifted, _unary("log", _sum(_unary("exp", shifted), _DIM_1_TUPLE, True)))


def _loss_node(logp: Node, hits: Node, valid: Node, count: Node, reduction: str) -> Node:
    """The composite's loss after ``log_softmax``: ``-where(hits, logp, 0).sum(1)``, zero where not valid, reduced."""
    loss = _where(valid, _unary("neg", _sum(_where(hits, logp, 0.0), _DIM_1_TUPLE, False)), 0.0)
    if reduction == "none":
        return loss
    total = _sum(loss, None, False)
    return total if reduction == "sum" else _binary("div", total, count)


def _cross_entropy_grad(c):
    """The gradient the composite's rules build, last op first: the mean's division by the count (div's),
    the sum's spread (sum's), where's on the valid targets, neg's, the class sum's spread, where's on the
    hits, then log_softmax's on its output. With ``create_graph`` the log-probabilities are computed again
    from the input with recording on, so the gradient can be differentiated again through them."""
    x, logp, hits, valid, count = c.inputs
    g, vk = c.g, c.F
    reduction = c.attrs["reduction"]
    if not (autograd._mode.enabled or lazy.is_eager() or memory_format.ACTIVE) and g.dtype is T.float32:
        return (_Tensor(_grad_node(g.node, logp.node, hits.node, valid.node, count.node, reduction)),) + _NONE_4
    if reduction == "mean":
        g = g / count
    if reduction != "none":
        g = G.spread_reduced(g, valid.shape, None, False)
    g = -vk.where(valid, g, 0.0)
    g = vk.where(hits, G.spread_reduced(g, hits.shape, (1,), False), 0.0)
    if autograd._mode.enabled:  # create_graph: log_softmax's output, recorded
        logp = vk.log_softmax(x, 1)
    return (G.RULES["log_softmax"](G.GradContext(g, (x,), logp, _DIM_1, vk, (True,)))[0], None, None, None, None)


def _grad_node(g: Node, logp: Node, hits: Node, valid: Node, count: Node, reduction: str) -> Node:
    """``_cross_entropy_grad``'s operators as nodes (float32, grad mode off, lazy mode)."""
    if reduction == "mean":
        g = _binary("div", g, count)
    if reduction != "none":  # sum's spread: the reduced dim put back, expanded
        g = lazy.expand_to(lazy.reshape_node(g, (1,)), valid.shape)
    g = _unary("neg", _where(valid, g, 0.0))
    rows, classes = hits.shape
    g = _where(hits, lazy.expand_to(lazy.reshape_node(g, (rows, 1)), (rows, classes)), 0.0)
    # log_softmax's rule: g - exp(y) * g.sum(1, keepdim=True)
    return _binary("sub", g, _binary("mul", _unary("exp", logp), _sum(g, _DIM_1_TUPLE, True)))


_DIM_1 = {"dim": 1}
_DIM_1_TUPLE = (1,)
_NONE_4 = (None, None, None, None)
_Tensor = functions._tensor.Tensor
G.RULES["cross_entropy"] = _cross_entropy_grad
