"""Losses of issue 18 with ``torch.nn.functional``'s names, arguments and reductions: Poisson and Gaussian
NLL, the margin and ranking losses, soft margins and triplets.

Each is an elementwise composite and a sum, PyTorch's formula step by step; class indices are
picked by an elementwise comparison with 0..C-1 (no gather kernel) and checked as
``cross_entropy``'s (vkml/schedule/checks.py). Re-exported by ``vkml.nn.functional``.

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.soft_margin_loss(vkml.tensor([0.0]), vkml.tensor([1.0])).item()  # doctest: +SKIP
0.6931471824645996
"""

from __future__ import annotations

import math

import numpy as np

from ..frontend import autograd, creation
from ..frontend import operators as functions
from ..ir import types as T
from ..ops import grads as G
from . import activation
from . import functional as F
from . import functional_more as FM

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(op: str, size_average, reduce, reduction: str) -> str:
    reduction = F.legacy_reduction(size_average, reduce, reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"'{op}': {reduction} is not a valid value for reduction")
    return reduction


def _broadcast(op: str, *tensors) -> None:
    """PyTorch's broadcasting check, eager, naming the op."""
    functions.lazy.broadcast_shapes(op, *(tuple(t.shape) for t in tensors))


def _require_tensors(op: str, **arguments) -> None:
    """PyTorch's argument check of a loss bound in C++: each named argument, in order, must be a tensor
    (``TypeError: soft_margin_loss(): argument 'target' (position 2) must be Tensor, not int``)."""
    for position, (name, value) in enumerate(arguments.items(), 1):
        if not isinstance(value, functions._tensor.Tensor):
            raise TypeError(
                f"{op}(): argument '{name}' (position {position}) must be Tensor, not {type(value).__name__}"
            )


def poisson_nll_loss(
    input,
    target,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
):
    """Negative log-likelihood of a Poisson distribution.

    ``exp(input) - target·input`` (``log_input``), else ``input - target·log(input + eps)``; ``full`` adds
    Stirling's ``t·log(t) - t + ½·log(2πt)`` where t > 1.

    >>> poisson_nll_loss(vkml.tensor([0.0]), vkml.tensor([1.0])).item()  # doctest: +SKIP
    1.0
    """
    _require_tensors("poisson_nll_loss", input=input, target=target)
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    _broadcast("poisson_nll_loss", input, target)
    if log_input:
        loss = functions.exp(input) - target * input
    else:
        loss = input - target * functions.log(input + eps)
    if full:
        big = target > 1
        t = functions.where(big, target, 2.0)  # the logs only see t > 1, so no NaN leaks into gradients
        stirling = t * functions.log(t) - t + 0.5 * functions.log(2 * math.pi * t)
        loss = loss + functions.where(big, stirling, 0.0)
    return F._reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """``½·(log(max(var, eps)) + (input - target)² / max(var, eps))`` (+ ½·log(2π) with ``full``).

    ``var`` has ``input``'s shape, or one dim fewer (homoscedastic), or one dim of size 1. The clamp
    at ``eps`` passes the gradient through unchanged, as PyTorch's (it clamps under no_grad). A
    negative ``var`` entry is PyTorch's ValueError, raised when a result computed through the loss
    is read (reading ``var`` at the call would wait for the device).

    >>> gaussian_nll_loss(vkml.tensor([1.0]), vkml.tensor([1.0]), vkml.tensor([1.0])).item()  # doctest: +SKIP
    0.0
    """
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("'gaussian_nll_loss': var has negative entry/entries")
        var = creation.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    elif tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = functions.unsqueeze(var, -1)
        elif input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass
        else:
            raise ValueError("'gaussian_nll_loss': var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"'gaussian_nll_loss': {reduction} is not valid")
    # max(var, eps) in value (var - var is exactly 0), the identity in gradient
    clamped = var - var.detach() + functions.clamp(var.detach(), min=eps)
    FM.defer_value_check("gaussian_nll_loss", clamped, var < 0, "var has negative entry/entries")
    diff = input - target
    loss = 0.5 * (functions.log(clamped) + diff * diff / clamped)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return F._reduce(loss, reduction, "gaussian_nll_loss")


def margin_ranking_loss(
    input1, input2, target, margin: float = 0, size_average=None, reduce=None, reduction: str = "mean"
):
    """``max(0, -target·(input1 - input2) + margin)``.

    >>> margin_ranking_loss(vkml.tensor([1.0]), vkml.tensor([2.0]), vkml.tensor([1.0])).item()  # doctest: +SKIP
    1.0
    """
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, target: {list(target.shape)} "
        )
    _broadcast("margin_ranking_loss", input1, input2, target)
    loss = functions.clamp(-target * (input1 - input2) + margin, min=0.0)
    return F._reduce(loss, reduction, "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
    """Hinge embedding loss of distances labelled 1 or -1.

    ``input`` where target is 1, ``max(0, margin - input)`` where it is -1 (both terms where it is neither,
    as PyTorch's: each term is masked by target != -1 and target != 1).

    >>> hinge_embedding_loss(vkml.tensor([0.3]), vkml.tensor([-1.0])).item()  # doctest: +SKIP
    0.7
    """
    _require_tensors("hinge_embedding_loss", input=input, target=target)
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    _broadcast("hinge_embedding_loss", input, target)
    margin_part = functions.where(target != 1, functions.clamp(margin - input, min=0.0), 0.0)
    self_part = functions.where(target != -1, input, 0.0)
    return F._reduce(margin_part + self_part, reduction, "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """``log(1 + exp(-target·input))``, as ``softplus`` (exact ``-target·input`` above 20).

    >>> soft_margin_loss(vkml.tensor([0.0]), vkml.tensor([1.0])).item()  # doctest: +SKIP
    0.6931471824645996
    """
    _require_tensors("soft_margin_loss", input=input, target=target)
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    _broadcast("soft_margin_loss", input, target)
    if getattr(target, "requires_grad", False) and F.autograd.is_grad_enabled():  # PyTorch's kernel has no target grad
        raise RuntimeError(
            "The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. This input "
            "cannot have requires_grad True."
        )
    if input.dtype in functions.HALF_PRECISION and target.dtype is input.dtype:
        # PyTorch's kernel: log1p(exp(-input * target)) op for op in the dtype, each rounding, then the reduction;
        # its backward kernel (soft_margin_loss_backward) likewise
        loss = F._reduce(
            functions.log1p(functions.exp(-input.detach() * target.detach())), reduction, "soft_margin_loss"
        )
        return autograd.record("half_soft_margin_loss", (input, target), loss, {"reduction": reduction})
    return F._reduce(F.softplus(-target * input), reduction, "soft_margin_loss")


def _grad_half_soft_margin_loss(c):
    """PyTorch's soft_margin_loss_backward: -norm · target · z / (1 + z) · grad, z = exp(-target · input),
    op for op in the input's dtype."""
    x, t = c.inputs
    norm = 1.0 / x.numel() if c.attrs["reduction"] == "mean" else 1.0
    z = functions.exp(-t * x)
    scale = creation.tensor(-norm, dtype=x.dtype, device=x.device)  # PyTorch's mul_(-norm) rounds it to the dtype
    return ((t * z) * scale / (z + 1) * c.g, None)


G.RULES["half_soft_margin_loss"] = _grad_half_soft_margin_loss


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """Multi-label one-versus-all logistic loss.

    ``-(t·logsigmoid(x) + (1 - t)·logsigmoid(-x))`` times ``weight``, averaged over the classes (last dim),
    then reduced over the samples.

    >>> multilabel_soft_margin_loss(vkml.zeros(1, 2), vkml.ones(1, 2)).item()  # doctest: +SKIP
    0.6931471824645996
    """
    reduction = _reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    if isinstance(target, functions._tensor.Tensor):  # PyTorch's Python formula takes a number too
        _broadcast("multilabel_soft_margin_loss", input, target)
    loss = -(target * activation.logsigmoid(input) + (1 - target) * activation.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return F._reduce(loss, reduction, "multilabel_soft_margin_loss")


def cosine_embedding_loss(
    input1, input2, target, margin: float = 0, size_average=None, reduce=None, reduction: str = "mean"
):
    """Cosine embedding loss of pairs labelled 1 (similar) or -1 (dissimilar).

    ``1 - cos`` where target is 1, ``max(0, cos - margin)`` where it is -1; ``cos`` is PyTorch's
    ``Σ x1·x2 / sqrt((Σ x1² + 1e-12)·(Σ x2² + 1e-12))`` over the last dim.

    >>> cosine_embedding_loss(vkml.ones(1, 2), vkml.ones(1, 2), vkml.tensor([1.0])).item()  # doctest: +SKIP
    0.0
    """
    _require_tensors("cosine_embedding_loss", input1=input1, input2=input2, target=target)
    reduction = _reduction("cosine_embedding_loss", size_average, reduce, reduction)
    if target.ndim not in (0, 1):
        raise RuntimeError("'cosine_embedding_loss': 0D or 1D target tensor expected, multi-target not supported")
    want = 2 if target.ndim == 1 else 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(
            f"'cosine_embedding_loss': {target.ndim}D target tensor expects {want}D input tensors, but found inputs "
            f"with sizes {list(input1.shape)} and {list(input2.shape)}."
        )
    d = target.ndim
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + 1e-12
    mag2 = (input2 * input2).sum(d) + 1e-12
    cos = prod / functions.sqrt(mag1 * mag2)
    _broadcast("cosine_embedding_loss", cos, target)
    pos = functions.where(target == 1, 1 - cos, 0.0)
    neg = functions.where(target == -1, functions.clamp(cos - margin, min=0.0), 0.0)
    return F._reduce(pos + neg, reduction, "cosine_embedding_loss")


def _class_scores(op: str, input):
    """(input as (N, C), whether it was 1-D) for the multi-class margin losses, with PyTorch's shape check."""
    if not ((input.ndim == 2 and input.shape[1] != 0) or (input.ndim == 1 and input.shape[0] != 0) or input.ndim == 0):
        raise RuntimeError(
            f"'{op}': Expected non-empty vector or matrix with optional 0-dim batch size, but got: {list(input.shape)}"
        )
    if input.ndim < 2:
        return functions.reshape(input, 1, -1), True
    return input, False


def multi_margin_loss(
    input,
    target,
    p: int = 1,
    margin: float = 1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
):
    """``Σ_{i≠y} max(0, margin - x[y] + x[i])^p · weight[y] / C`` per sample (y = target, p 1 or 2).

    >>> multi_margin_loss(vkml.tensor([[0.0, 1.0]]), vkml.tensor([1])).item()  # doctest: +SKIP
    0.0
    """
    _require_tensors("multi_margin_loss", input=input, target=target)
    reduction = _reduction("multi_margin_loss", size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("'multi_margin_loss': only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("'multi_margin_loss': weight must be one-dimensional")
    x, flat = _class_scores("multi_margin_loss", input)
    n, c = x.shape
    if target.ndim > 1 or target.numel() != n:
        raise RuntimeError(
            "'multi_margin_loss': target tensor should be 1-D with size equal to the number of input samples (batch "
            f"size). Expected target size [{n}], but got {list(target.shape)}. Input has shape {list(input.shape)}."
        )
    if weight is not None and tuple(weight.shape) != (c,):
        raise RuntimeError(f"'multi_margin_loss': inconsistent weight size, expected {c} but got {list(weight.shape)}")
    t = functions.reshape(target, n)
    hits = F._checked_hits("multi_margin_loss", t, c, 1, _range_error("multi_margin_loss"), RuntimeError)
    picked = functions.where(hits, x, 0.0).sum(1, keepdim=True)
    z = functions.clamp(margin - picked + x, min=0.0)
    h = z if p == 1 else z * z
    if weight is not None:
        h = h * functions.where(hits, weight, 0.0).sum(1, keepdim=True)
    loss = functions.where(hits, 0.0, h).sum(1) / c
    if flat:
        loss = functions.reshape(loss, tuple(target.shape))
    return F._reduce(loss, reduction, "multi_margin_loss")


def _range_error(op: str):
    def message(value: int, called: str) -> str:
        return f"'{op}'{called}: target out of range (got class index {value})"

    return message


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """Multi-label hinge loss over class-index targets.

    ``Σ_{j target} Σ_{i not target} max(0, 1 - (x[j] - x[i])) / C`` per sample; the targets of a row are its
    class indices before the first -1.

    >>> multilabel_margin_loss(vkml.tensor([[0.1, 0.2, 0.4, 0.8]]), vkml.tensor([[3, 0, -1, 1]])).item()  # doctest: +SKIP
    0.8500000238418579
    """
    _require_tensors("multilabel_margin_loss", input=input, target=target)
    reduction = _reduction("multilabel_margin_loss", size_average, reduce, reduction)
    x, flat = _class_scores("multilabel_margin_loss", input)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(
            f"'multilabel_margin_loss': inconsistent target size: {list(target.shape)} for input of size: "
            f"{list(input.shape)}"
        )
    n, c = x.shape
    t = functions.reshape(target, n, c)
    # slot k counts while no negative index came at or before it (PyTorch stops at the first negative)
    counted = (t < 0).long().cumsum(1) == 0
    message = _range_error("multilabel_margin_loss")
    # a counted slot must be a class in [0, C); -1 marks the others, which match no class
    slots = F._checked_hits(
        "multilabel_margin_loss", functions.where(counted, t, -1), c, -1, message, RuntimeError, ignore_index=-1
    )  # (N, K, C): slot k names class c
    is_target = slots.any(1)  # (N, C)
    picked = functions.where(slots, functions.unsqueeze(x, 1), 0.0).sum(2)  # (N, K): x[target[k]]
    z = functions.clamp(1.0 - functions.unsqueeze(picked, 2) + functions.unsqueeze(x, 1), min=0.0)  # (N, K, C)
    keep = functions.unsqueeze(counted, 2) & functions.unsqueeze(functions.logical_not(is_target), 1)
    loss = functions.where(keep, z, 0.0).sum((1, 2)) / c
    if flat:
        loss = functions.reshape(loss, tuple(input.shape[:-1]) if input.ndim else ())
    return F._reduce(loss, reduction, "multilabel_margin_loss")


def _triplet_dims(op: str, anchor, positive, negative) -> None:
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            f"'{op}': The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
            f"anchor {anchor.ndim}D, positive {positive.ndim}D, and negative {negative.ndim}D inputs"
        )


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
):
    """Triplet loss of anchors, positives and negatives.

    ``max(0, margin + d(a, p) - d(a, n))`` with d = ``pairwise_distance(·, ·, p, eps)``; ``swap`` takes
    ``min(d(a, n), d(p, n))`` for the negative distance.

    >>> triplet_margin_loss(vkml.zeros(1, 2), vkml.zeros(1, 2), vkml.ones(1, 2)).item()  # doctest: +SKIP
    0.0
    """
    _require_tensors("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    reduction = _reduction("triplet_margin_loss", size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"'triplet_margin_loss': margin must be greater than 0, got {margin}")
    _triplet_dims("triplet_margin_loss", anchor, positive, negative)
    d_pos = FM.pairwise_distance(anchor, positive, p, eps)
    d_neg = FM.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = functions.minimum(d_neg, FM.pairwise_distance(positive, negative, p, eps))
    loss = functions.clamp(margin + d_pos - d_neg, min=0.0)
    return F._reduce(loss, reduction, "triplet_margin_loss")


def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin: float = 1.0, swap: bool = False, reduction="mean"
):
    """``triplet_margin_loss`` with any ``distance_function(x, y)`` (default ``pairwise_distance``).

    >>> triplet_margin_with_distance_loss(vkml.zeros(1, 2), vkml.zeros(1, 2), vkml.ones(1, 2)).item()  # doctest: +SKIP
    0.0
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"'triplet_margin_with_distance_loss': {reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"'triplet_margin_with_distance_loss': margin must be greater than 0, got {margin}")
    _triplet_dims("triplet_margin_with_distance_loss", anchor, positive, negative)
    distance = FM.pairwise_distance if distance_function is None else distance_function
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = functions.minimum(d_neg, distance(positive, negative))
    loss = functions.clamp(margin + d_pos - d_neg, min=0.0)
    return F._reduce(loss, reduction, "triplet_margin_with_distance_loss")


# ---------------------------------------------------------------------- CTC


def _lengths(op: str, name: str, lengths, batch: int, device):
    """(int64 tensor of the lengths on ``device``, their Python values or None when given as a tensor)."""
    if isinstance(lengths, functions._tensor.Tensor):
        if lengths.dtype.is_float or lengths.dtype is T.bool_:
            raise RuntimeError(f"'{op}': {name} must be integral, got {lengths.dtype.name}")
        flat = functions.reshape(lengths, -1)
        if flat.shape[0] != batch:
            raise RuntimeError(f"'{op}': {name} must be of size batch_size")
        return flat.long().to(device), None  # PyTorch reads lengths on any device (the host's, for cuDNN)
    values = [int(v) for v in (lengths if isinstance(lengths, (list, tuple)) else [lengths])]
    if len(values) != batch:
        raise RuntimeError(f"'{op}': {name} must be of size batch_size")
    return creation.tensor(values, dtype=T.int64, device=device), values


def _logsumexp_guarded(terms, dim=None):
    """log(Σ exp) of the tensors ``terms`` (elementwise), or of ``terms`` along ``dim``, with -inf where every
    term is -inf and no NaN in value or gradient: the shift by the max is detached (the result does not
    depend on it), and the log only sees positive sums."""
    if dim is None:
        m = terms[0]
        for t in terms[1:]:
            m = functions.maximum(m, t)
    else:
        m = functions.amax(terms, dim, keepdim=True)
    m = m.detach()
    m = functions.where(m == -math.inf, 0.0, m)
    if dim is None:
        total = functions.exp(terms[0] - m)
        for t in terms[1:]:
            total = total + functions.exp(t - m)
    else:
        total = functions.exp(terms - m).sum(dim, keepdim=True)
    positive = total > 0
    out = functions.where(positive, functions.log(functions.where(positive, total, 1.0)) + m, -math.inf)
    return out if dim is None else functions.squeeze(out, dim)


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
):
    """Connectionist temporal classification loss of ``log_probs`` (T, N, C) or (T, C) against target sequences.

    The forward (alpha) recursion of Graves et al. in log space over the extended labels
    (blank, t1, blank, t2, ..., blank): one step per time t, each a guarded 3-way logsumexp of
    shifted alphas plus the emissions, frozen after each sample's input length. Targets are
    (N, S) padded rows or, with the lengths given, one concatenated 1-D tensor. 'mean' divides
    each loss by its target length (at least 1), then averages; ``zero_infinity`` zeroes
    infinite losses and their gradients.

    Cost: a Python loop over T building O(T) small ops, and an (T, N, S, C) select for the
    emissions: meant for the sequence lengths of a training batch, not thousands of steps.

    >>> lp = vkml.zeros(3, 1, 2)  # doctest: +SKIP
    >>> ctc_loss(lp, vkml.tensor([[1]]), (3,), (1,), reduction="none").shape  # doctest: +SKIP
    (1,)
    """
    op = "ctc_loss"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"'{op}': {reduction} is not a valid value for reduction")
    if log_probs.ndim not in (2, 3) or not log_probs.dtype.is_float:
        raise RuntimeError(f"'{op}': log_probs must be a (T, N, C) or (T, C) float tensor, got {log_probs.shape}")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = functions.unsqueeze(log_probs, 1)
        if targets.ndim == 1:
            targets = functions.unsqueeze(targets, 0)
    steps, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError(f"'{op}': blank must be in label range, got {blank} for {classes} classes")
    if targets.dtype.is_float or targets.dtype is T.bool_:
        raise RuntimeError(f"'{op}': targets must be integral, got {targets.dtype.name}")
    device = log_probs.device
    targets = targets.to(device)  # host targets (cuDNN's kind) move to log_probs' device, as PyTorch moves them
    in_len, in_values = _lengths(op, "input_lengths", input_lengths, batch, device)
    tgt_len, tgt_values = _lengths(op, "target_lengths", target_lengths, batch, device)
    if in_values is not None and any(v > steps or v < 0 for v in in_values):
        bad = next(v for v in in_values if v > steps or v < 0)
        raise RuntimeError(f"'{op}': Expected input_lengths to have value at most {steps}, but got value {bad}")
    if targets.ndim == 1:  # concatenated: the lengths' values place each target (PyTorch reads them too)
        values = tgt_values if tgt_values is not None else [int(v) for v in tgt_len.tolist()]
        if sum(values) > targets.shape[0]:
            raise RuntimeError(f"'{op}': targets has {targets.shape[0]} values, fewer than the target lengths' sum")
        width = max(values + [1])
        starts = np.cumsum([0] + values[:-1])
        flat = np.array([[starts[n] + k if k < values[n] else 0 for k in range(width)] for n in range(batch)], np.int64)
        targets = (
            functions.getitem(targets, (flat,))
            if targets.shape[0]
            else creation.zeros(batch, width, dtype=T.int64, device=device)
        )
        tgt_values = values
    elif targets.ndim != 2 or targets.shape[0] != batch:
        raise RuntimeError(f"'{op}': targets must be (N, S) or 1-D, got shape {targets.shape} for batch {batch}")
    width = targets.shape[1]
    if tgt_values is not None and max(tgt_values + [0]) > width:
        raise RuntimeError(
            f"'{op}': Expected tensor to have size at least {max(tgt_values)} at dimension 1, but got size {width} "
            "for argument #2 'targets'"
        )
    positions = F._class_indices(max(width, 1), device)[:width]
    counted = functions.unsqueeze(positions, 0) < functions.unsqueeze(tgt_len, 1)  # (N, S)
    labels = functions.where(counted, targets, -1)
    hits = F._checked_hits(op, labels, classes, -1, _range_error(op), IndexError, ignore_index=-1)  # (N, S, C)
    # emissions: log p of each target label (T, N, S) and of the blank (T, N, 1), interleaved as the
    # extended labels (T, N, 2S + 1)
    label_emit = functions.where(functions.unsqueeze(hits, 0), functions.unsqueeze(log_probs, 2), 0.0).sum(-1)
    blank_emit = log_probs.narrow(2, blank, 1)
    pairs = functions.cat(
        [functions.unsqueeze(blank_emit.expand(steps, batch, width), 3), functions.unsqueeze(label_emit, 3)], 3
    )
    emit = functions.cat([functions.reshape(pairs, steps, batch, 2 * width), blank_emit], 2)
    length = 2 * width + 1
    # a label state may skip the blank before it when its label differs from the previous label
    if width > 1:
        differs = targets.narrow(1, 1, width - 1) != targets.narrow(1, 0, width - 1)  # (N, S-1)
        false = creation.zeros(batch, 1, dtype=T.bool_, device=device)
        skip_label = functions.cat([false, differs], 1)  # (N, S)
        skip = functions.cat(
            [
                functions.reshape(
                    functions.cat(
                        [functions.unsqueeze(false.expand(batch, width), 2), functions.unsqueeze(skip_label, 2)], 2
                    ),
                    batch,
                    2 * width,
                ),
                false,
            ],
            1,
        )
    else:
        skip = creation.zeros(batch, length, dtype=T.bool_, device=device)
    state = F._class_indices(length, device)
    start = functions.unsqueeze(state, 0) < functions.where(functions.unsqueeze(tgt_len, 1) > 0, 2, 1)
    alpha = functions.where(start, emit[0], -math.inf)
    none = creation.full((batch, 1), -math.inf, dtype=log_probs.dtype, device=device)
    none2 = creation.full((batch, 2), -math.inf, dtype=log_probs.dtype, device=device)
    for t in range(1, steps):
        one_back = functions.cat([none, alpha.narrow(1, 0, length - 1)], 1)
        two_back = functions.where(skip, functions.cat([none2, alpha.narrow(1, 0, length - 2)], 1), -math.inf)
        step = _logsumexp_guarded([alpha, one_back, two_back]) + emit[t]
        alpha = functions.where(functions.unsqueeze(in_len > t, 1), step, alpha)
    end = functions.unsqueeze(2 * tgt_len, 1)
    final = (functions.unsqueeze(state, 0) == end) | (functions.unsqueeze(state, 0) == end - 1)
    loss = -_logsumexp_guarded(functions.where(final, alpha, -math.inf), 1)
    if zero_infinity:
        loss = functions.where(loss == math.inf, 0.0, loss)
    if unbatched:
        loss = functions.reshape(loss, ())
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    divisor = functions.clamp(tgt_len, min=1).to(loss.dtype)
    return (loss / (divisor if not unbatched else functions.reshape(divisor, ()))).mean()


FUNCTIONS = [
    "ctc_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "cosine_embedding_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]
