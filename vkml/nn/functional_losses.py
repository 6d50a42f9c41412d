"""Losses with ``torch.nn.functional``'s names and arguments, as elementwise composites and sums.

Re-exported by ``vkml.nn.functional``. ``nll_loss`` picks each target's log-probability by an
elementwise comparison with the class indices (no gather kernel), as ``cross_entropy`` does, and
checks the indices the same way (vkml/schedule/checks.py).

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.l1_loss(vkml.tensor([1.0, 2.0]), vkml.tensor([2.0, 2.0])).item()  # doctest: +SKIP
0.5
"""

from __future__ import annotations

import warnings

from ..errors import ShapeError
from ..frontend import autograd, creation, mutation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..frontend.dtype_info import scalar_type_name
from ..frontend.dtypes import promote_types
from ..ir import types as T
from ..ops import grads as _grads
from ..ops.cast import host_round
from ..schedule import checks
from . import functional as F

_REDUCTIONS = ("mean", "sum", "none")


def _same_size(op: str, input, target) -> None:
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"'{op}': Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )


def _check_reduction(op: str, reduction: str, allowed=_REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"'{op}': {reduction} is not a valid value for reduction")


@autograd.shown_as("NllLossBackward0", lambda input, *a, **k: (autograd.edge(input),))
def nll_loss(
    input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean"
):
    """Negative log-likelihood of log-probabilities ``input`` (N, C, ...) or (C,) at integer ``target`` classes.

    Each element's loss is ``-weight[t] · input[n, t]`` (0 where ``t == ignore_index``); 'mean'
    divides the sum by the summed weights of the targets counted, as PyTorch's. A batch size of
    ``target`` other than ``input``'s is PyTorch's ValueError. An integer ``input`` raises PyTorch's
    NotImplementedError (no kernel for it).

    >>> nll_loss(vkml.tensor([[-1.0, -2.0]]), vkml.tensor([1])).item()  # doctest: +SKIP
    2.0
    """
    reduction = F.legacy_reduction(size_average, reduce, reduction)
    _check_reduction("nll_loss", reduction)
    unbatched = input.ndim == 1
    if unbatched:
        input, target = functions.unsqueeze(input, 0), functions.unsqueeze(target, 0)
    if input.ndim < 2:
        raise ValueError(f"'nll_loss': Expected 1 or more dimensions (got {input.ndim})")
    if not input.dtype.is_float:
        frame = "nll_loss_out_frame" if input.ndim == 2 else "nll_loss2d_forward_out_frame"
        raise NotImplementedError(f"\"{frame}\" not implemented for '{mutation.torch_name(input.dtype)}'")
    num_classes = input.shape[1]
    F._class_target_dtype("nll_loss", target)
    if target.ndim and target.shape[0] != input.shape[0]:  # PyTorch's first check, a ValueError (so is ShapeError)
        raise ShapeError(
            f"'nll_loss': Expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]})."
        )
    if tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise ShapeError(
            f"'nll_loss': input of shape {input.shape} needs targets of shape "
            f"{(input.shape[0],) + tuple(input.shape[2:])}, got {target.shape}"
        )
    F._weight_dtype("nll_loss", input, weight)
    if weight is not None and tuple(weight.shape) != (num_classes,):
        raise RuntimeError(
            f"'nll_loss': weight tensor should be defined either for all {num_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )
    message = F._out_of_bounds("nll_loss", "Target", num_classes)
    hits = F._checked_hits("nll_loss", target, num_classes, 1, message, ignore_index=ignore_index)
    valid = target != ignore_index
    picked = functions.where(hits, input, 0.0).sum(1)
    if weight is None:
        loss = functions.where(valid, -picked, 0.0)
        count = valid.sum() if reduction == "mean" else None
    else:
        w = functions.reshape(weight, num_classes, *([1] * (input.ndim - 2)))
        target_weight = functions.where(valid, functions.where(hits, w, 0.0).sum(1), 0.0)
        loss = -picked * target_weight
        count = target_weight.sum()
    if unbatched and reduction == "none":
        loss = functions.squeeze(loss, 0)
    return F._reduce(loss, reduction, "nll_loss", count)


def _input_and_target_edges(input, target, *args, **kwargs) -> tuple:
    """PyTorch's edges of a loss node: to ``input`` and ``target`` only (a weight is not differentiated)."""
    return autograd.edge(input), autograd.edge(target)


@autograd.shown_as("BinaryCrossEntropyBackward0", _input_and_target_edges)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """``-weight · (target · log(input) + (1 - target) · log(1 - input))``, each log clamped at -100 as PyTorch's.

    As PyTorch's: ``target`` must have ``input``'s dtype (a RuntimeError names both), ``weight`` is
    taken in ``input``'s dtype, and an input outside [0, 1] (NaN included) is a RuntimeError. That
    one is raised when the loss is read, not at the call: reading the values here would wait for
    the device (the check is computed with the loss, vkml/schedule/checks.py).

    >>> binary_cross_entropy(vkml.tensor([0.5]), vkml.tensor([1.0])).item()  # doctest: +SKIP
    0.6931471824645996
    """
    reduction = F.legacy_reduction(size_average, reduce, reduction)
    _check_reduction("binary_cross_entropy", reduction)
    _same_size("binary_cross_entropy", input, target)
    if not input.dtype.is_float:
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{scalar_type_name(input.dtype)}'")
    if target.dtype is not input.dtype:
        raise RuntimeError(
            f"'binary_cross_entropy': Found dtype {scalar_type_name(target.dtype)} but expected "
            f"{scalar_type_name(input.dtype)}"
        )
    if weight is not None and weight.dtype is not input.dtype:
        weight = weight.to(input.dtype)
    if input.dtype in functions.HALF_PRECISION:
        loss = _half_bce(input, target, weight, reduction)
    else:
        log_p = functions.clamp(functions.log(input), min=-100.0)
        log_q = functions.clamp(functions.log(1.0 - input), min=-100.0)
        loss = -(target * log_p + (1.0 - target) * log_q)
        if weight is not None:
            loss = loss * weight
        loss = F._reduce(loss, reduction, "binary_cross_entropy")
    _check_probabilities("binary_cross_entropy", input, loss)
    return loss


def _half_bce(input, target, weight, reduction: str):
    """PyTorch's float16/bfloat16 kernel: ``(t - 1) · max(log1p(-x), -100) - t · max(log(x), -100)`` op for
    op in the dtype, times the weight, then the reduction; differentiated by its backward kernels
    (``_grad_half_bce``) where the weight needs no gradient (PyTorch's formula gives it none)."""
    x, t = input.detach(), target.detach()
    log_q = functions.clamp(functions.log1p(-x), min=-100.0)
    log_p = functions.clamp(functions.log(x), min=-100.0)
    loss = (t - 1.0) * log_q - t * log_p
    if weight is not None:
        loss = loss * weight.detach()
    loss = F._reduce(loss, reduction, "binary_cross_entropy")
    differentiated = autograd.is_grad_enabled() and (input.requires_grad or target.requires_grad)
    if not differentiated or (weight is not None and weight.requires_grad):
        if differentiated:  # the generic formula, which differentiates the weight too
            log_p = functions.clamp(functions.log(input), min=-100.0)
            log_q = functions.clamp(functions.log(1.0 - input), min=-100.0)
            return F._reduce(-(target * log_p + (1.0 - target) * log_q) * weight, reduction, "binary_cross_entropy")
        return loss
    return autograd.record("half_bce", (input, target, weight), loss, {"reduction": reduction})


def _grad_half_bce(c):
    """PyTorch's binary_cross_entropy_backward_out_cpu, ``g · (x - t) / max((1 - x) · x, eps)`` op for op in
    the dtype (eps = 1e-12 in the dtype: 0 in float16), and binary_cross_entropy_target_backward,
    ``-logit(x) · g``; each times the weight, then divided by the count for 'mean'."""
    x, t, weight = c.inputs
    g = c.g
    eps = functions.cast(creation.tensor(1e-12, dtype=T.float32, device=x.device), x.dtype)
    grads = [None, None, None]
    if c.needs[0]:
        grads[0] = g * (x - t) / c.F.maximum((1.0 - x) * x, eps)
    if c.needs[1]:
        grads[1] = -c.F.logit(x) * g
    for k in (0, 1):
        if grads[k] is not None:
            if weight is not None:
                grads[k] = grads[k] * weight
            if c.attrs["reduction"] == "mean":
                grads[k] = grads[k] / x.numel()
    return tuple(grads)


_grads.RULES["half_bce"] = _grad_half_bce


def _check_probabilities(op: str, input, loss) -> None:
    """PyTorch's RuntimeError where ``input`` holds a value outside [0, 1] or NaN, raised at the
    read of ``loss`` (computed with it, as nll_loss's class check; eager mode: now)."""
    if input.numel() == 0:
        return
    bad = functions.logical_not((input >= 0.0) & (input <= 1.0)).any()
    message = f"'{op}': all elements of input should be between 0 and 1 (called at {checks.user_line()})"
    if loss.node.realized:  # eager mode computed the loss already: check now, at the op
        if bad.item():
            raise RuntimeError(message)
        return
    checks.defer(loss.node, (bad.node,), lambda values: message if values[0] else None, RuntimeError)


@autograd.shown_as("BinaryCrossEntropyWithLogitsBackward0", _input_and_target_edges)
def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None
):
    """BCE of ``sigmoid(input)`` computed stably: ``(1 - t)·x + (1 + (pos_weight - 1)·t)·softplus(-x)``.

    >>> binary_cross_entropy_with_logits(vkml.tensor([0.0]), vkml.tensor([1.0])).item()  # doctest: +SKIP
    0.6931471824645996
    """
    reduction = F.legacy_reduction(size_average, reduce, reduction)
    _check_reduction("binary_cross_entropy_with_logits", reduction)
    if tuple(target.shape) != tuple(input.shape):  # PyTorch words this op's check otherwise than BCE's
        raise ValueError(
            f"'binary_cross_entropy_with_logits': Target size ({target.shape}) must be the same as input size "
            f"({input.shape})"
        )
    if not input.dtype.is_float:
        raise NotImplementedError(
            f"\"binary_cross_entropy_with_logits\" not implemented for '{scalar_type_name(input.dtype)}'"
        )
    if not target.dtype.is_float and target.dtype is not T.bool_:  # bool: 'sub''s own error, as PyTorch's
        raise RuntimeError(
            f"'binary_cross_entropy_with_logits': result type {scalar_type_name(input.dtype)} can't be cast to "
            f"the desired output type {scalar_type_name(target.dtype)}"
        )
    # PyTorch's loss has the dtype of input and target promoted; the weights scale it in place (no promotion)
    dtype = promote_types(input.dtype, target.dtype)
    if weight is not None and weight.dtype is not dtype:
        weight = weight.to(dtype)
    if pos_weight is not None and pos_weight.dtype is not dtype:
        pos_weight = pos_weight.to(dtype)
    if _half_bce_backward(input, target, weight, pos_weight):
        # PyTorch differentiates a float16/bfloat16 loss with its own formula, op for op in the dtype
        loss = binary_cross_entropy_with_logits(
            input.detach(), target.detach(), weight, reduction=reduction, pos_weight=pos_weight
        )
        attrs = {"reduction": reduction}
        return autograd.record("half_bce_with_logits", (input, target, weight, pos_weight), loss, attrs)
    softplus = F.softplus(-input)  # log(1 + exp(-x)), exact -x where -x > 20
    if pos_weight is None:
        loss = (1.0 - target) * input + softplus
    else:
        loss = (1.0 - target) * input + ((pos_weight - 1.0) * target + 1.0) * softplus
    if weight is not None:
        loss = loss * weight
    return F._reduce(loss, reduction, "binary_cross_entropy_with_logits")


def _half_bce_backward(input, target, weight, pos_weight) -> bool:
    """Whether autograd differentiates a float16/bfloat16 ``binary_cross_entropy_with_logits`` by
    PyTorch's backward formulas (the weights, which those formulas do not differentiate, need no grad)."""
    if input.dtype not in functions.HALF_PRECISION or target.dtype is not input.dtype:
        return False
    if not autograd.is_grad_enabled() or not (input.requires_grad or target.requires_grad):
        return False
    return all(w is None or not w.requires_grad for w in (weight, pos_weight))


def _grad_half_bce_with_logits(c):
    """PyTorch's binary_cross_entropy_with_logits_backward and ..._target_backward
    (torch/csrc/autograd/FunctionsManual.cpp), op for op in the input's dtype."""
    x, t, weight, pos_weight = c.inputs
    F_, g = c.F, c.g
    grads = [None, None, None, None]
    if c.needs[0]:
        if pos_weight is None:
            gx = F_.sigmoid(x) - t
        else:
            pt = pos_weight * t
            gx = (pt + 1) - t
            gx = gx * F_.sigmoid(x) - pt
        grads[0] = gx * g
    if c.needs[1]:
        if pos_weight is None:
            grads[1] = -x * g
        else:
            grads[1] = (F.logsigmoid(-x) - F.logsigmoid(x) * pos_weight) * g
    for k in (0, 1):
        if grads[k] is not None:
            if weight is not None:
                grads[k] = grads[k] * weight
            if c.attrs["reduction"] == "mean":
                grads[k] = grads[k] / x.numel()
    return tuple(grads)


_grads.RULES["half_bce_with_logits"] = _grad_half_bce_with_logits


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """Mean (or sum) of absolute differences, broadcast as PyTorch does (with its warning when the shapes
    differ); ``weight`` (input's shape) scales each term, and 'mean' then divides by its sum.

    >>> l1_loss(vkml.tensor([1.0]), vkml.tensor([3.0])).item()  # doctest: +SKIP
    2.0
    """
    F.target_size_warning(input, target)
    reduction = F.legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        _check_reduction("l1_loss", reduction)
    return F.weighted_reduce(abs(input - target), weight, input, reduction, "l1_loss")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    """``0.5·d²/beta`` where ``|d| < beta``, else ``|d| - 0.5·beta`` (d = input - target); beta 0 is ``l1_loss``.

    >>> smooth_l1_loss(vkml.tensor([0.5, 3.0]), vkml.tensor([0.0, 0.0]), reduction="none").tolist()  # doctest: +SKIP
    [0.125, 2.5]
    """
    reduction = F.legacy_reduction(size_average, reduce, reduction)
    _check_reduction("smooth_l1_loss", reduction)
    if beta < 0:
        raise RuntimeError("'smooth_l1_loss': smooth_l1_loss does not support negative values for beta.")
    F.target_size_warning(input, target)
    if beta == 0:  # PyTorch's l1_loss, with its nodes
        return F._reduce(abs(input - target), reduction, "smooth_l1_loss")
    return _smooth_l1(input, target, reduction, beta)


@autograd.shown_as("SmoothL1LossBackward0", _input_and_target_edges)
def _smooth_l1(input, target, reduction: str, beta: float):
    diff = input - target
    size = abs(diff)
    loss = functions.where(size < beta, 0.5 * diff * diff / beta, size - 0.5 * beta)
    return F._reduce(loss, reduction, "smooth_l1_loss")


@autograd.shown_as("HuberLossBackward0", _input_and_target_edges)
def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    """``0.5·d²`` where ``|d| < delta``, else ``delta·(|d| - 0.5·delta)`` (d = input - target).

    >>> huber_loss(vkml.tensor([3.0]), vkml.tensor([0.0])).item()  # doctest: +SKIP
    2.5
    """
    _check_reduction("huber_loss", reduction)
    if delta <= 0:
        raise RuntimeError("'huber_loss': huber_loss does not support non-positive values for delta.")
    F.target_size_warning(input, target)
    if input.dtype.is_float and target.dtype is not input.dtype:
        target = target.to(input.dtype)  # PyTorch's huber_loss computes in the input's dtype
    if input.dtype in (T.float16, T.bfloat16):
        loss = _narrow_huber(input, target, delta)
    else:
        diff = input - target
        size = abs(diff)
        loss = functions.where(size < delta, 0.5 * diff * diff, delta * (size - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return F._reduce(loss, reduction, "huber_loss")


def _narrow_huber(input, target, delta: float):
    """PyTorch's float16/bfloat16 huber kernels: each loss in float32, rounded once; the gradient in the
    input's dtype from the rounded difference (``_grad_narrow_huber``)."""
    with autograd.no_grad():
        diff = input.float() - target.float()
        size = abs(diff)
        loss = functions.where(size < delta, 0.5 * diff * diff, delta * (size - 0.5 * delta)).to(input.dtype)
    return autograd.record("narrow_huber", (input, target), loss, {"delta": delta})


def _grad_narrow_huber(c):
    input, target = c.inputs
    # PyTorch's vectorized lanes: x = input - target and each product rounded to the input's dtype, delta
    # held in it (its scalar loop over a row's last few elements multiplies by the float32 delta instead)
    g, delta = c.g, host_round(c.attrs["delta"], input.dtype)
    x = input - target
    grad = functions.where(x <= -delta, -(g * delta), functions.where(x >= delta, g * delta, x * g))
    return (grad if c.needs[0] else None), (-grad if c.needs[1] else None)


_grads.RULES["narrow_huber"] = _grad_narrow_huber


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """``target · (log(target) - input)`` (0 where target is 0), or ``exp(t)·(t - input)`` with ``log_target``;
    'batchmean' divides the sum by the batch size.

    >>> kl_div(vkml.tensor([0.0]), vkml.tensor([1.0])).item()  # doctest: +SKIP
    0.0
    """
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' "
            "divides only by the batch size, and aligns with the KL div math definition.'mean' will be changed to "
            "behave the same as 'batchmean' in the next major release.",
            stacklevel=2,
        )
    reduction = F.legacy_reduction(size_average, reduce, reduction)
    _check_reduction("kl_div", reduction, _REDUCTIONS + ("batchmean",))
    if log_target:
        loss = functions.exp(target) * (target - input)
    else:
        # PyTorch's formula: xlogy(target, target) (0·log(0) counts as 0; negative and NaN targets give
        # NaN), whose gradient gives target log(target) + target/target, NaN at target <= 0
        loss = functions.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return F._reduce(loss, reduction, "kl_div")


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels (each (n, c) plane of (N, C, H, W)) with probability ``p``, scaling the others by
    1/(1-p), while ``training``. A 3-D input is read as (N, C, L), with PyTorch's warning; other
    ranks warn too and mask over their first two dims (a 2-D input element by element).

    >>> dropout2d(vkml.ones(1, 2, 2, 2), training=False).shape  # doctest: +SKIP
    (1, 2, 2, 2)
    """
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (3, 4):  # PyTorch warns, then masks over the first two dims (mnist_rnn's (N, C))
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result in an "
            "error in a future release. To retain the behavior and silence this warning, please use dropout "
            "instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial "
            "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    if not training or p == 0 or input.numel() == 0:
        return input
    if input.ndim < 2 and p != 1:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)

    def apply(x):
        if p == 1:
            return x * 0.0
        keep = vkrandom.keep_mask(shape, p, x.device)
        return functions.where(keep, x * (1.0 / (1.0 - p)), 0.0)

    return mutation.inplace(input, "dropout2d_", apply) if inplace else apply(input)
