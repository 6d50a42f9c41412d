"""Gradient rules: the context each rule receives, and the rules of composite and movement ops.

A rule ``grad(ctx)`` returns one gradient per operand of its op (None where an operand gets
none). It builds the gradient lazily out of tensor methods and operators on ``ctx.g``,
``ctx.inputs`` and ``ctx.output``, and out of ``ctx.F`` — the ``vkml`` package (``F.where``,
``F.zeros_like``, ``F.constant_pad_nd``, ...), handed in by the autograd driver so that
``ops/`` never imports the front end.

Elementwise and reduction rules sit next to their op's body (``OpDef.grad`` in
elementwise.py and reduce.py). The rules here are for the ops the front end builds out of
others (matmul, softmax, ...) and for movement ops, one rule per op, in ``RULES``.

The driver (vkml/frontend/autograd.py) sums each gradient over the dims its operand was broadcast
along and casts it to the operand's dtype, so no rule does either.

>>> sorted(RULES)[:3]
['cast', 'cat', 'expand']
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class GradContext:
    """What a gradient rule sees of one recorded op."""

    g: Any  # the gradient of the op's output: a tensor of the output's shape and dtype
    inputs: tuple  # the operands as the op got them: tensors (detached) or Python numbers
    output: Any  # the op's result (detached)
    attrs: dict  # the op's other arguments by name (dim, keepdim, dims, ...)
    F: Any  # the vkml package: where, zeros_like, constant_pad_nd, ...
    needs: tuple[bool, ...]  # which operands want a gradient


def is_tensor(x) -> bool:
    # Asked of the class: reading a saved tensor's node checks its version (vkml/tensor.py, SavedTensor).
    # A symbol of the DSL's tracer (vkml/dsl/autodiff.py, Sym) stands for a tensor: the tracer runs
    # the OpDef rules on symbols.
    cls = type(x)
    return (hasattr(cls, "shape") and hasattr(cls, "node")) or getattr(cls, "stands_for_tensor", False)


def as_tensor(c: GradContext, x):
    """``x`` as a tensor shaped like the output (Python numbers become constants)."""
    return x if is_tensor(x) else c.F.full_like(c.output, x)


def normalize_dims(dim, ndim: int) -> tuple[int, ...]:
    """The dims a reduction's ``dim`` argument names, non-negative and sorted (None: all)."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):  # () reduces every dim, as in PyTorch
        return tuple(range(ndim))
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)  # an int or a numpy integer
    return tuple(sorted({int(d) % max(ndim, 1) for d in dims})) if ndim else ()


def restore_reduced(t, shape: tuple[int, ...], dim, keepdim: bool):
    """A reduction's result (or its gradient) with the reduced dims put back as size 1."""
    if keepdim or not shape:
        return t
    dims = normalize_dims(dim, len(shape))
    return t.reshape(*(1 if d in dims else s for d, s in enumerate(shape)))


def spread_reduced(t, shape: tuple[int, ...], dim, keepdim: bool):
    """A reduction's gradient broadcast back over the reduced dims."""
    return restore_reduced(t, shape, dim, keepdim).expand(*shape)


def unbroadcast(g, shape: tuple[int, ...]):
    """``g`` summed over the dims along which a tensor of ``shape`` was broadcast to ``g.shape``."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    dims = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(shape) if s == 1 and g.shape[lead + d] != 1)
    summed = g.sum(dims, keepdim=True) if dims else g
    return summed.reshape(*shape)


def _pads_for(ndim: int, dim: int, before: int, after: int) -> list[int]:
    """The ``constant_pad_nd`` list (last dim first, as PyTorch) that pads only ``dim``."""
    pads = [0] * (2 * ndim)
    back = ndim - 1 - dim
    pads[2 * back], pads[2 * back + 1] = before, after
    return pads


# ---------------------------------------------------------------------- composites


def _matmul(c: GradContext):
    a, b = c.inputs
    g = c.g
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(1) if b.ndim == 1 else b
    if a.ndim == 1:
        g = g.unsqueeze(-2 if b.ndim > 1 else 0)
    if b.ndim == 1:
        g = g.unsqueeze(-1)
    half = getattr(c.output, "dtype", None) is not None and c.output.dtype.name in HALF_NAMES
    if half and a2.ndim >= 3 and b2.ndim == 2 and c.needs[1]:
        # PyTorch folds a batched operand times a matrix or vector into one product (at::matmul's
        # should_fold): the matrix's gradient is one sum over every batch row, rounded once
        rows = math.prod(a2.shape[:-1])  # (sizes, not -1: an empty batch folds too)
        gb = a2.reshape(rows, a2.shape[-1]).transpose(0, 1) @ g.reshape(rows, g.shape[-1])
    else:
        gb = unbroadcast(a2.transpose(-1, -2) @ g, b2.shape) if c.needs[1] else None
    if half and a2.ndim == 2 and b2.ndim >= 3 and c.needs[0]:
        # a matrix times a batched operand: PyTorch computes (b^T a^T)^T with b^T folded likewise
        inner = math.prod(b2.shape[:-2]) * b2.shape[-1]
        folded_g = g.movedim(-2, 0).reshape(g.shape[-2], inner)  # (M, batch · N)
        folded_b = b2.transpose(-1, -2).reshape(inner, b2.shape[-2])  # (batch · N, K)
        ga = folded_g @ folded_b
    else:
        ga = unbroadcast(g @ b2.transpose(-1, -2), a2.shape) if c.needs[0] else None
    # back to a 1-d operand's shape; an operand of 2 or more dims has its shape already (a reshape to it
    # would make the gradient a view of the product, which PyTorch's is not)
    if ga is not None and a2 is not a:
        ga = ga.reshape(*a.shape)
    if gb is not None and b2 is not b:
        gb = gb.reshape(*b.shape)
    return ga, gb


HALF_NAMES = ("float16", "bfloat16")


def opmath(rule: Callable) -> Callable:
    """``rule`` for an op whose PyTorch backward is one kernel that computes float16/bfloat16 in float32
    (its opmath type) and rounds once: with a half output, the rule runs on float32 copies of the
    half tensors and the driver rounds each gradient once, to its operand's dtype."""

    @functools.wraps(rule)  # (the op pages show the rule's own source: tools/gen_op_docs.py)
    def wide_rule(c: GradContext):
        if getattr(c.output, "dtype", None) is None or c.output.dtype.name not in HALF_NAMES:
            return rule(c)

        def widen(t):
            return t.to(c.F.float32) if is_tensor(t) and t.dtype.name in HALF_NAMES else t

        wide = GradContext(widen(c.g), tuple(widen(x) for x in c.inputs), widen(c.output), c.attrs, c.F, c.needs)
        return rule(wide)

    return wide_rule


def _wide(c: GradContext, *tensors) -> tuple:
    """``tensors`` in float32 where the op's output is float16/bfloat16: a rule whose PyTorch backward
    kernel computes in float32 (its opmath) and rounds once, which ``_narrow`` then does."""
    if c.output.dtype.name not in HALF_NAMES:
        return tensors
    return tuple(t.to(c.F.float32) for t in tensors)


def _narrow(c: GradContext, grad):
    return grad.to(c.output.dtype) if grad.dtype != c.output.dtype else grad


def _softmax(c: GradContext):
    y, g = _wide(c, c.output, c.g)
    dim = c.attrs["dim"]
    return (_narrow(c, (g - (g * y).sum(dim, keepdim=True)) * y),)


def _log_softmax(c: GradContext):
    y, g = _wide(c, c.output, c.g)
    dim = c.attrs["dim"]
    return (_narrow(c, g - y.exp() * g.sum(dim, keepdim=True)),)


def _logsumexp(c: GradContext):
    (x,) = c.inputs
    dim, keepdim = c.attrs["dim"], c.attrs["keepdim"]
    g = restore_reduced(c.g, x.shape, dim, keepdim)
    out = restore_reduced(c.output, x.shape, dim, keepdim)
    return (g * (x - out).exp(),)


# ---------------------------------------------------------------------- movement


def _reshape(c: GradContext):
    return (c.g.reshape(*c.inputs[0].shape),)


def _permute(c: GradContext):
    (x,) = c.inputs
    dims = c.attrs["dims"]
    if dims is None:  # given positionally: permute(x, 2, 0, 1) or permute(x, (2, 0, 1))
        dims = c.attrs["sizes"]
    elif not isinstance(dims, (tuple, list)):
        dims = (dims,)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    order = [d % x.ndim for d in dims]
    inverse = [order.index(d) for d in range(x.ndim)]
    return (c.g.permute(*inverse),)


def _expand(c: GradContext):
    return (unbroadcast(c.g, c.inputs[0].shape),)


def _flip(c: GradContext):
    return (c.g.flip(c.attrs["dims"]),)


def _slice(c: GradContext):
    """Each dim's kept elements go back to positions start, start+step, ...; zeros elsewhere."""
    (x,) = c.inputs
    if c.g.numel() == 0:
        return (c.F.zeros_like(x),)
    g, F = c.g, c.F
    for d, (start, step) in enumerate(zip(c.attrs["starts"], c.attrs["steps"])):
        kept = g.shape[d]
        if step > 1 and kept > 1:  # interleave step-1 zeros after each element, drop the trailing ones
            g = F.constant_pad_nd(g.unsqueeze(d + 1), _pads_for(g.ndim + 1, d + 1, 0, step - 1))
            g = g.reshape(*g.shape[:d], kept * step, *g.shape[d + 2 :])
            g = F.constant_pad_nd(g, _pads_for(g.ndim, d, 0, 1 - step))
        span = g.shape[d]
        g = F.constant_pad_nd(g, _pads_for(g.ndim, d, start, x.shape[d] - start - span))
    return (g,)


def _spread(F, g, dim: int, offset: int, step: int, length: int):
    """``g``'s elements along ``dim`` placed at offset, offset + step, ... of a dim of ``length``, zeros between."""
    count = g.shape[dim]
    if step > 1 and count > 1:  # step - 1 zeros after each element, the trailing ones dropped
        g = F.constant_pad_nd(g.unsqueeze(dim + 1), _pads_for(g.ndim + 1, dim + 1, 0, step - 1))
        g = g.reshape(*g.shape[:dim], count * step, *g.shape[dim + 2 :])
        g = F.constant_pad_nd(g, _pads_for(g.ndim, dim, 0, 1 - step))
    span = g.shape[dim]
    return F.constant_pad_nd(g, _pads_for(g.ndim, dim, offset, length - offset - span))


def fold_windows(F, g, x, dims, sizes, steps, dilations, descending: bool = False):
    """The gradient of ``x`` from ``g``, the gradient of its windows (``Tensor.unfold`` over ``dims``:
    (..., counts, ..., *sizes)): each tap's gradient spread back to the positions it read, the taps
    added in ascending row-major order, or descending (``descending``: the order in which a loop over
    the windows, row-major, reaches one position of ``x``, as PyTorch's pooling backward adds)."""
    lead = g.ndim - len(dims)
    total = None
    order = list(itertools.product(*(range(k) for k in sizes)))
    for taps in reversed(order) if descending else order:
        block = g[(slice(None),) * lead + taps]
        for d, k, s, dl in zip(dims, taps, steps, dilations):
            block = _spread(F, block, d, k * dl, s, x.shape[d])
        total = block if total is None else total + block
    return F.zeros_like(x) if total is None or g.numel() == 0 else total


def _window(c: GradContext):
    """``fold_windows`` in ascending tap order (the order of the shifted slices im2col was built of
    before: the same bits), or descending for pooling's windows (``window(..., descending=True)``)."""
    a = c.attrs
    descending = a.get("descending", False)
    return (fold_windows(c.F, c.g, c.inputs[0], a["dims"], a["sizes"], a["steps"], a["dilations"], descending),)


def _pad(c: GradContext):
    return (c.F.constant_pad_nd(c.g, [-p for p in c.attrs["pad"]]),)


def _cat(c: GradContext):
    g, dim = c.g, c.attrs["dim"] % c.g.ndim
    grads, start = [], 0
    for t in c.inputs:
        if t.ndim != g.ndim:  # PyTorch's legacy rule let an empty 1-D tensor join any cat; its gradient is empty
            grads.append(c.F.zeros_like(t))
            continue
        size = t.shape[dim]
        index = (slice(None),) * dim + (slice(start, start + size),)
        grads.append(g[index])
        start += size
    return tuple(grads)


def _cast(c: GradContext):
    return (c.g.to(c.inputs[0].dtype),)


def _to_device(c: GradContext):
    return (c.g.to(c.inputs[0].device),)


def _clone(c: GradContext):
    return (c.g,)


def _zero(c: GradContext):
    """PyTorch's gradient of a sample with respect to its parameters where it defines none (poisson): zero."""
    return (c.F.zeros_like(c.g),)


# op -> the operands its gradient reads only through a comparison (relu's x > 0, a pooling window's
# argmax). PyTorch's backward formula takes them as inputs with a zero derivative, so under
# create_graph the gradient stays connected to them and a second derivative with respect to them is
# zeros, not "unused" (a Hessian-vector product of a ReLU network by its input): the engine
# (vkml/frontend/backward.py) links the rule's result to them.
MASK_OPERANDS: dict[str, tuple[int, ...]] = {
    "relu": (0,),
    "leaky_relu": (0,),
    "hardtanh": (0,),
    "threshold": (0,),
    "hardshrink": (0,),
    "softshrink": (0,),
    "max_pool_step": (0, 1),
    "max_pool_windows": (0,),
}

RULES: dict[str, Callable] = {
    "matmul": _matmul,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "logsumexp": _logsumexp,
    "reshape": _reshape,
    "permute": _permute,
    "expand": _expand,
    "flip": _flip,
    "slice": _slice,
    "pad": _pad,
    "window": _window,
    "cat": _cat,
    "cast": _cast,
    "to_device": _to_device,
    "clone": _clone,
    "poisson": _zero,
}
