"""Batch, group, instance and RMS normalisation and ``normalize``, as composites of reductions and elementwise ops.

Re-exported by ``vkml.nn.functional`` with ``torch.nn.functional``'s names, arguments and
defaults. Normalisation uses the biased variance; the running variance of batch and instance
norm is updated with the unbiased one (n/(n-1)), as PyTorch's. Running statistics are written in
place (``Tensor.copy_`` under ``no_grad``), so buffers keep their identity. Training batch norm with
spatial dims is one op for autograd, with the gradient's closed form (``_batch_norm_train_grad``).

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.batch_norm(vkml.tensor([[1.0], [3.0]]), None, None, training=True).tolist()  # doctest: +SKIP
[[-0.99999...], [0.99999...]]
"""

from __future__ import annotations

import math

import numpy as np

from ..frontend import autograd, statistics
from ..frontend import memory_format as _memory_format
from ..frontend import operators as functions
from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as G
from ..ops.cast import host_round


def _float(x):
    return x.float() if x.dtype in (T.float16, T.bfloat16) else x


def _normalized(x, dims, eps):
    """(x - mean) · rsqrt(var + eps) over ``dims`` (biased variance), and the mean and variance."""
    mean = _mean(x, dims)
    centred = x - mean
    var = _mean(centred * centred, dims)
    return centred * functions.rsqrt(var + eps), mean, var


def _mean(x, dims):
    """``x.mean(dims, keepdim=True)``; over (N, *spatial) of an (N, C, *spatial) ``x`` (batch norm's
    statistics) as ``_channel_mean``'s two sums."""
    if x.ndim < 3 or tuple(dims) != (0, *range(2, x.ndim)):
        return x.mean(dims, keepdim=True)
    return _channel_mean(x)[0]


def _channel_mean(x):
    """The mean of each channel of an (N, C, *spatial) ``x``, as (1, C, 1, ...) and as (C,) (one
    node: the first is a view of the second), as two sums: each sample's channel row over its
    positions (contiguous rows), then those N sums in turn over the batch, each over ``sum``'s
    tree. A GPU reads the rows at memory speed where one reduction over (N, *spatial) strides
    across the channels (docs/ops/batch_norm.md states the order)."""
    batch, channels = x.shape[0], x.shape[1]
    rows = functions.reshape(x, batch, channels, -1).sum(-1)  # (N, C)
    flat = rows.sum(0) / (x.numel() // channels)
    return functions.reshape(flat, 1, channels, *([1] * (x.ndim - 2))), flat


def _channel_shape(input):
    return (input.shape[1],) + (1,) * (input.ndim - 2)


def _affine(out, weight, bias, shape):
    if weight is not None:
        out = out * functions.reshape(weight, *shape)
    if bias is not None:
        out = out + functions.reshape(bias, *shape)
    return out


def _update(buffer, value, momentum: float) -> None:
    """buffer <- (1 - momentum) · buffer + momentum · value, in place and outside autograd."""
    with autograd.no_grad():
        value = value.detach()
        if value.dtype is not buffer.dtype:
            value = value.to(buffer.dtype)
        if _memory_format.ACTIVE:
            moved = buffer * (1.0 - momentum) + value * momentum
        else:  # the same nodes as the line above, built on nodes: nothing here records or carries a format
            kept = lazy.elementwise("mul", [buffer.node, 1.0 - momentum])
            moved = functions._wrap(lazy.elementwise("add", [kept, lazy.elementwise("mul", [value.node, momentum])]))
        buffer.copy_(moved)
    autograd.realize_at_next_step(buffer)  # else a loop that never reads it keeps every batch alive


def _batch_statistics(x, eps):
    """x - mean and 1/sqrt(var + eps) of each channel of an (N, C, *spatial) ``x`` (``_normalized``'s ops, the
    means as ``_channel_mean``'s), and the mean and biased variance as (C,)."""
    if autograd.is_grad_enabled() or _memory_format.ACTIVE:  # recorded (a second derivative), or formats carried
        mean, flat_mean = _channel_mean(x)
        centred = x - mean
        var, flat_var = _channel_mean(centred * centred)
        return centred, functions.rsqrt(var + eps), flat_mean, flat_var
    # Outside autograd (every training forward): the same nodes built directly, without a handle, an
    # autocast check and a grad check per op (a layer's build is most of its host time).
    node = x.node
    kept = (1, node.shape[1]) + (1,) * (len(node.shape) - 2)
    flat_mean = _channel_mean_node(node)
    centred = lazy.elementwise("sub", [node, lazy.reshape_node(flat_mean, kept)])
    flat_var = _channel_mean_node(lazy.elementwise("mul", [centred, centred]))
    shifted = lazy.elementwise("add", [lazy.reshape_node(flat_var, kept), eps])
    rstd = lazy.unary_fast("rsqrt", shifted) or lazy.elementwise("rsqrt", [shifted])
    wrap = functions._wrap
    return wrap(centred), wrap(rstd), wrap(flat_mean), wrap(flat_var)


def _channel_mean_node(node):
    """``_channel_mean``'s (C,) node of a node: the same reshape, two sums and division."""
    shape = node.shape
    batch, channels = shape[0], shape[1]
    count = math.prod(shape) // channels
    rows = lazy.reduce("sum", lazy.reshape_node(node, (batch, channels, count // batch)), (2,), False)
    return _divided(lazy.reduce("sum", rows, (0,), False), count)


def _divided(node, count):
    """``Tensor / count`` of a float node and a positive Python number, on nodes: ``div``'s rule, a
    power of two's exact reciprocal multiplied (the same bits), else the division."""
    reciprocal = functions.exact_reciprocal(count)
    if reciprocal is not None:
        return lazy.elementwise("mul", [node, reciprocal])
    return lazy.elementwise("div", [node, count])


def layer_norm_unrecorded(x, input, dims: tuple, weight, bias, eps: float):
    """``layer_norm``'s ops on its float ``x`` (``input`` widened) built on nodes, where the call records
    nothing (no operand requires grad, or grad mode is off: inference, evaluation) and carries no
    format: the same nodes without a handle, an autocast check and a grad check per op. None where it
    must record (the ops then build the graph autograd walks), or for an empty reduction."""
    if _memory_format.ACTIVE or (
        autograd.is_grad_enabled() and any(t is not None and t.requires_grad for t in (input, weight, bias))
    ):
        return None
    node = x.node
    count = math.prod(node.shape[d] for d in dims)
    if not count:
        return None
    mean = _divided(lazy.reduce("sum", node, dims, True), float(count))  # ``mean``'s sum and float count
    centred = lazy.elementwise("sub", [node, mean])
    variance = _divided(lazy.reduce("sum", lazy.elementwise("mul", [centred, centred]), dims, True), float(count))
    shifted = lazy.elementwise("add", [variance, eps])
    out = lazy.elementwise("mul", [centred, lazy.unary_fast("rsqrt", shifted) or lazy.elementwise("rsqrt", [shifted])])
    if weight is not None:
        out = lazy.elementwise("mul", [out, weight.node])
    if bias is not None:
        out = lazy.elementwise("add", [out, bias.node])
    return functions._wrap(out)


def _channel_sum(t):
    """The sum of each channel of an (N, C, *spatial) ``t``, (C,), in ``_channel_mean``'s order: each sample's
    positions, then the N row sums over the batch."""
    return functions.reshape(t, t.shape[0], t.shape[1], -1).sum(-1).sum(0)


@autograd.differentiable("batch_norm_train", inputs=("x", "weight", "bias", "centred", "rstd"))
def _batch_norm_train(x, weight, bias, centred, rstd, eps):
    """Batch norm's training output (x - mean)·rstd·weight + bias for an (N, C, *spatial) ``x`` from its
    statistics (``_batch_statistics``, computed outside autograd): one op for autograd, whose rule
    (``_batch_norm_train_grad``) is the closed form of the gradient, where the ops' own rules took about
    twenty (a reshape, a sum, a product, ... each) a layer."""
    shape = _channel_shape(x)
    if _memory_format.ACTIVE:  # the ops carry a channels-last input's format to the output
        return _affine(centred * rstd, weight, bias, shape)
    # The same nodes as _affine's ops, built directly (autograd sees this function as one op).
    out = lazy.elementwise("mul", [centred.node, rstd.node])
    # Each parameter viewed as (1, C, 1, ...) and broadcast: the view the ops' reshape to (C, 1, ...) and
    # broadcast end with, without the reshape's own view node on the way
    kept, full = (1, *shape), out.shape
    if weight is not None:
        out = lazy.elementwise("mul", [out, lazy.expand_to(lazy.reshape_node(weight.node, kept), full)])
    if bias is not None:
        out = lazy.elementwise("add", [out, lazy.expand_to(lazy.reshape_node(bias.node, kept), full)])
    return functions._wrap(out)


def _batch_norm_train_grad(c):
    """With x̂ = (x - mean)·rstd, Σ over each channel's N·H·W = M positions (``_channel_sum``'s order):
    the bias's Σ g, the weight's Σ g·x̂, the input's (rstd·weight)·((g - Σ g / M) - x̂·(Σ g·x̂ / M)), each
    operation rounded in that order. Under ``create_graph`` the statistics are computed again from x,
    recorded, so that a second derivative reaches x through them."""
    x, weight, bias, centred, rstd = c.inputs
    if autograd.is_grad_enabled():
        centred, rstd, _, _ = _batch_statistics(x, c.attrs["eps"])
    shape = _channel_shape(x)
    g = c.g
    normalized = centred * rstd
    g_sum = _channel_sum(g)
    g_normalized_sum = _channel_sum(g * normalized)
    gx = gw = gb = None
    if c.needs[0]:
        count = x.numel() // x.shape[1]
        scale = rstd if weight is None else rstd * functions.reshape(weight, *shape)
        mean_g = functions.reshape(g_sum / count, *shape)
        mean_gn = functions.reshape(g_normalized_sum / count, *shape)
        gx = scale * ((g - mean_g) - normalized * mean_gn)
    if c.needs[1]:
        gw = functions.reshape(g_normalized_sum, *weight.shape)
    if c.needs[2]:
        gb = functions.reshape(g_sum, *bias.shape)
    return gx, gw, gb, None, None


G.RULES["batch_norm_train"] = _batch_norm_train_grad


@autograd.shown_as(
    "NativeBatchNormBackward0",
    lambda input, running_mean, running_var, weight=None, bias=None, *a, **k: (
        autograd.edge(input),
        autograd.edge(weight),
        autograd.edge(bias),
    ),
)
def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalise each channel (dim 1) of ``input`` (N, C, ...) over the batch and every other dim.

    While ``training``, the batch's mean and biased variance normalise, and ``running_mean`` /
    ``running_var`` (if given) move towards the batch's mean and unbiased variance by ``momentum``.
    Otherwise the running statistics normalise. Then ``weight`` and ``bias`` per channel.

    >>> batch_norm(vkml.ones(2, 3), vkml.zeros(3), vkml.ones(3)).shape  # doctest: +SKIP
    (2, 3)
    """
    if input.ndim < 2:  # PyTorch reads the channel count from dim 1: only an empty input gets past it
        if input.numel():
            raise IndexError(
                f"'batch_norm': Dimension out of range (expected to be in range of [-1, 0], but got 1) "
                f"(expected at least 2D input, got {input.ndim}D input)"
            )
        return input.clone()
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"'batch_norm': {name} should contain {channels} elements not {t.numel()}")
    shape = _channel_shape(input)
    x = _float(input)
    dims = (0, *range(2, input.ndim))
    if training:
        count = input.numel() // channels if channels else 0
        if count == 1:
            raise ValueError(
                f"'batch_norm': Expected more than 1 value per channel when training, got input size {input.shape}"
            )
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
        if count == 0:  # an empty batch: PyTorch's empty output, running statistics left as they are
            out = _affine(x * 0.0, weight, bias, shape)
            return out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out
        if _all_narrow(input, running_mean, running_var, weight, bias):
            return _narrow_batch_norm_train(input, running_mean, running_var, weight, bias, momentum, eps)
        if input.ndim < 3:
            out, mean, var = _normalized(x, dims, eps)
            mean, var = functions.reshape(mean, channels), functions.reshape(var, channels)
        else:  # _normalized's ops, with each statistic's (C,) node at hand for the updates; one op for autograd
            with autograd.no_grad():
                centred, rstd, mean, var = _batch_statistics(x, eps)
            out = _batch_norm_train(x, weight, bias, centred, rstd, eps)
            weight = bias = None  # applied in the op
        if running_mean is not None:
            _update(running_mean, mean, momentum)
        if running_var is not None:
            _update(running_var, var * (count / (count - 1)), momentum)
    else:
        if eps < 0.0:
            raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
        if running_mean is None or running_var is None:
            raise RuntimeError("'batch_norm': running_mean and running_var must be defined in evaluation mode")
        mean = functions.reshape(_float(running_mean), *shape)
        var = functions.reshape(_float(running_var), *shape)
        out = (x - mean) * functions.rsqrt(var + eps)
    out = _affine(out, weight, bias, shape)
    return out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out


def _all_narrow(input, *params) -> bool:
    """A float16/bfloat16 input whose given parameters and buffers share its dtype (a model's ``.half()``):
    PyTorch's CPU kernel then keeps its statistics in that dtype (``_narrow_batch_norm_train``)."""
    return input.dtype in (T.float16, T.bfloat16) and all(t is None or t.dtype is input.dtype for t in params)


def _narrow_batch_norm_train(input, running_mean, running_var, weight, bias, momentum: float, eps: float):
    """PyTorch CPU's training batch norm of a float16/bfloat16 input with parameters of its dtype.

    The sums are float32; the saved mean and 1/sqrt(var + eps) are rounded to the input's dtype and the
    output is ``x·alpha + beta`` (alpha = invstd·weight, beta = bias - mean·alpha in float32, then one
    fused multiply-add, rounded once). float16 takes the variance and the running statistics from the
    float32 sums (the running ones in float64); bfloat16 rounds the sum of squares, the variance and
    each step of the running update to bfloat16, as its arithmetic does, and for an input without
    spatial positions centres the squares on the rounded mean."""
    narrow, shape = input.dtype, _channel_shape(input)
    channels = input.shape[1]
    count = input.numel() // channels
    x = input.detach().float()
    with autograd.no_grad():
        _, mean = _channel_mean(x)
        rounded_mean = mean.to(narrow).float()
        no_positions = math.prod(input.shape[2:]) == 1
        centre = rounded_mean if narrow is T.bfloat16 and no_positions else mean
        centred = x - functions.reshape(centre, *shape)
        square_sum = _channel_sum(centred * centred)
        if narrow is T.float16:
            var = square_sum / float(count)
        else:
            square_sum = square_sum.to(narrow).float()
            var = _narrow_quotient(square_sum, count, narrow)
        invstd = functions.rsqrt(var + eps).to(narrow).float()
        _narrow_running_update(running_mean, running_var, mean, rounded_mean, square_sum, count, momentum)
        alpha = invstd if weight is None else invstd * weight.detach().float()
        beta = -(rounded_mean * alpha) if bias is None else bias.detach().float() - rounded_mean * alpha
        # x·alpha + beta rounded once to float32 (PyTorch's contracted loop): the float64 product of a
        # float16/bfloat16 and a float32 is exact, and rounding its sum to float64 first changes the
        # float32 result only at a float32 midpoint
        wide = functions.reshape(alpha.double(), *shape), functions.reshape(beta.double(), *shape)
        out = (input.detach().double() * wide[0] + wide[1]).float().to(narrow)
    attrs = {"mean": rounded_mean, "invstd": invstd}
    return autograd.record("narrow_batch_norm", (input, weight, bias), out, attrs)


def _narrow_quotient(t, count: int, narrow):
    """``t / count`` as PyTorch's reduced-precision scalar divides: both in ``narrow``, the quotient rounded to it."""
    return (t / host_round(float(count), narrow)).to(narrow).float()


def _narrow_running_update(running_mean, running_var, mean, rounded_mean, square_sum, count, momentum) -> None:
    """PyTorch CPU's running-statistics update of a float16/bfloat16 batch norm (``_narrow_batch_norm_train``)."""
    if running_mean is None and running_var is None:
        return
    narrow = (running_mean if running_mean is not None else running_var).dtype
    with autograd.no_grad():
        if narrow is T.float16:  # double arithmetic on the float32 statistics
            if running_mean is not None:
                moved = mean.double() * momentum + running_mean.double() * (1.0 - momentum)
                running_mean.copy_(moved.to(narrow))
            if running_var is not None:
                unbiased = square_sum.double() / float(count - 1)
                running_var.copy_((unbiased * momentum + running_var.double() * (1.0 - momentum)).to(narrow))
        else:  # bfloat16 arithmetic: the momentum and every product and sum rounded to bfloat16
            step = host_round(momentum, narrow)
            keep = host_round(1.0 - step, narrow)
            if running_mean is not None:
                moved = (rounded_mean * step).to(narrow).float() + (running_mean.float() * keep).to(narrow).float()
                running_mean.copy_(moved.to(narrow))
            if running_var is not None:
                unbiased = _narrow_quotient(square_sum, count - 1, narrow)
                moved = unbiased * step + (running_var.float() * keep).to(narrow).float()
                running_var.copy_(moved.to(narrow))
    for buffer in (running_mean, running_var):
        if buffer is not None:
            autograd.realize_at_next_step(buffer)


def _grad_narrow_batch_norm(c):
    """PyTorch CPU's batch-norm backward from the saved (rounded) mean and invstd, in float32, each
    gradient rounded once: dx = ((dy - Σdy/M) - (x - mean)·k)·invstd·weight with k = Σ((x - mean)·dy)·invstd²/M."""
    x, weight, _ = c.inputs
    mean, invstd = c.attrs["mean"], c.attrs["invstd"]
    narrow, shape = x.dtype, _channel_shape(x)
    count = x.numel() // x.shape[1]
    dy = c.g.float()
    centred = x.float() - functions.reshape(mean, *shape)
    total = _channel_sum(dy)
    dotp = _channel_sum(centred * dy)
    grads = [None, None, None]
    if c.needs[0]:
        k = dotp * invstd * invstd / float(count)
        dx = (dy - functions.reshape(total / float(count), *shape)) - centred * functions.reshape(k, *shape)
        dx = dx * functions.reshape(invstd, *shape)
        if weight is not None:
            dx = dx * functions.reshape(weight.float(), *shape)
        grads[0] = dx.to(narrow)
    if c.needs[1]:
        grads[1] = (dotp * invstd).to(narrow)
    if c.needs[2]:
        grads[2] = total.to(narrow)
    return tuple(grads)


G.RULES["narrow_batch_norm"] = _grad_narrow_batch_norm


def _half_instance_norm(input, running_mean, running_var, weight, bias, momentum, eps):
    """PyTorch's float16 instance norm: its batch-norm kernel keeps each instance's mean and
    1/sqrt(var + eps) in the input's dtype, normalises with them in float32 and rounds once; its
    backward kernel works from those statistics in float32 (``_grad_half_instance_norm``)."""
    shape, dims, narrow = _channel_shape(input), tuple(range(2, input.ndim)), input.dtype
    x = input.detach().float()
    _, mean, var = _normalized(x, dims, eps)
    channels, count = input.shape[1], math.prod(input.shape[2:])
    if running_mean is not None:
        _update(running_mean, functions.reshape(mean, -1, channels).mean(0), momentum)
    if running_var is not None:
        _update(running_var, functions.reshape(var, -1, channels).mean(0) * (count / (count - 1)), momentum)
    mean, invstd = mean.to(narrow).float(), functions.rsqrt(var + eps).to(narrow).float()
    weight_, bias_ = (None if t is None else t.detach().float() for t in (weight, bias))
    out = _affine((x - mean) * invstd, weight_, bias_, shape).to(narrow)
    attrs = {"mean": mean, "invstd": invstd, "dims": dims}
    return autograd.record("half_instance_norm", (input, weight, bias), out, attrs)


def _grad_half_instance_norm(c):
    """batch_norm_backward_cpu's training formulas over each (sample, channel) in float32, each gradient
    rounded once; the weight's and bias's per-instance gradients are rounded, then summed over the batch
    (PyTorch's instance_norm repeats them along the batch)."""
    x, weight, _ = c.inputs
    mean, invstd, dims = c.attrs["mean"], c.attrs["invstd"], c.attrs["dims"]
    narrow, shape = x.dtype, _channel_shape(x)
    dy, centred = c.g.float(), x.float() - mean
    n = math.prod(x.shape[2:])
    dotp = (centred * dy).sum(dims, keepdim=True)
    total = dy.sum(dims, keepdim=True)
    grads = [None, None, None]
    if c.needs[0]:
        k = dotp * invstd * invstd / n
        dx = (dy - total / n - centred * k) * invstd
        if weight is not None:
            dx = dx * functions.reshape(weight.float(), *shape)
        grads[0] = dx.to(narrow)
    channels = x.shape[1]
    if c.needs[1]:
        grads[1] = functions.reshape((dotp * invstd).to(narrow), -1, channels).sum(0)
    if c.needs[2]:
        grads[2] = functions.reshape(total.to(narrow), -1, channels).sum(0)
    return tuple(grads)


G.RULES["half_instance_norm"] = _grad_half_instance_norm


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalise each (sample, channel) of ``input`` (N, C, ...) over its own spatial dims.

    With ``use_input_stats`` the instance's statistics normalise and the running ones (if given)
    move towards their mean over the batch (unbiased variance); otherwise the running ones normalise.

    >>> instance_norm(vkml.tensor([[[1.0, 3.0]]])).tolist()  # doctest: +SKIP
    [[[-0.99999..., 0.99999...]]]
    """
    if input.ndim < 3:
        raise ValueError(f"'instance_norm': expected at least 3D input (got {input.ndim}D input)")
    shape = _channel_shape(input)
    x = _float(input)
    dims = tuple(range(2, input.ndim))
    if use_input_stats:
        count = math.prod(input.shape[2:])
        if count <= 1:
            raise ValueError(
                f"'instance_norm': Expected more than 1 spatial element when training, got input size {input.shape}"
            )
        if input.dtype is T.float16:  # (bfloat16's statistics round otherwise: not matched yet)
            return _half_instance_norm(input, running_mean, running_var, weight, bias, momentum, eps)
        out, mean, var = _normalized(x, dims, eps)
        channels = input.shape[1]
        if running_mean is not None:
            _update(running_mean, functions.reshape(mean, -1, channels).mean(0), momentum)
        if running_var is not None:
            _update(running_var, functions.reshape(var, -1, channels).mean(0) * (count / (count - 1)), momentum)
    else:
        mean = functions.reshape(_float(running_mean), *shape)
        out = (x - mean) * functions.rsqrt(functions.reshape(_float(running_var), *shape) + eps)
    out = _affine(out, weight, bias, shape)
    return out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out


def _detached(t):
    return None if t is None else t.detach()


def _group_statistics(input, groups: int, eps: float):
    """Each (sample, group)'s mean and 1/sqrt(var + eps), (N, G) in float32 from values rounded to the
    input's dtype (PyTorch's group-norm kernel returns them in it)."""
    x = functions.reshape(input.float(), input.shape[0], groups, -1)
    mean = x.mean(2)
    centred = x - functions.unsqueeze(mean, 2)
    rstd = functions.rsqrt((centred * centred).mean(2) + eps)
    return mean.to(input.dtype).float(), rstd.to(input.dtype).float()


def _grad_half_group_norm(c):
    """PyTorch's GroupNormBackward kernel in float32 from the statistics in the input's dtype, each
    gradient rounded once: dX = rstd·γ·dY + c2·X + c3 per group, dγ and dβ summed over the batch."""
    x, weight, _ = c.inputs
    mean, rstd = c.attrs["stats"]
    n, channels, groups = x.shape[0], x.shape[1], c.attrs["groups"]
    per_group = channels // groups
    X = functions.reshape(x.float(), n, channels, -1)
    dy = functions.reshape(c.g.float(), n, channels, -1)
    gamma = None if weight is None else weight.float()

    def weigh(t):
        return t if gamma is None else t * gamma

    ds, db = (dy * X).sum(2), dy.sum(2)  # (N, C)

    def by_group(t):  # (N, C) -> (N, G): summed over each group's channels
        return functions.reshape(t, n, groups, per_group).sum(2)

    def per_channel(t):  # (N, G) -> (N, C)
        return functions.reshape(functions.unsqueeze(t, 2).expand(n, groups, per_group), n, channels)

    grads = [None, None, None]
    if c.needs[0]:
        ds_g, db_g = by_group(weigh(ds)), by_group(weigh(db))
        s = 1.0 / (per_group * X.shape[2])
        c2 = (db_g * mean - ds_g) * rstd * rstd * rstd * s
        c3 = -c2 * mean - db_g * rstd * s
        c1 = weigh(per_channel(rstd))
        dx = functions.unsqueeze(c1, 2) * dy + functions.unsqueeze(per_channel(c2), 2) * X
        dx = dx + functions.unsqueeze(per_channel(c3), 2)
        grads[0] = functions.reshape(dx, *x.shape).to(x.dtype)
    if c.needs[1]:
        grads[1] = ((ds - db * per_channel(mean)) * per_channel(rstd)).sum(0).to(x.dtype)
    if c.needs[2]:
        grads[2] = db.sum(0).to(x.dtype)
    return tuple(grads)


G.RULES["half_group_norm"] = _grad_half_group_norm


@autograd.shown_as(
    "NativeGroupNormBackward0",
    lambda input, num_groups, weight=None, bias=None, *a, **k: tuple(autograd.edge(t) for t in (input, weight, bias)),
)
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise each sample's channels in ``num_groups`` groups (each over its channels and every other dim).

    >>> group_norm(vkml.tensor([[1.0, 3.0]]), 1).tolist()  # doctest: +SKIP
    [[-0.99999..., 0.99999...]]
    """
    if input.ndim < 2:
        raise RuntimeError(f"'group_norm': Expected at least 2 dimensions for input tensor but received {input.ndim}")
    # PyTorch's _verify_batch_size over (N·C/G, G, *spatial): a group of one value has no variance
    verified = [input.shape[0] * input.shape[1] // num_groups, num_groups, *input.shape[2:]]
    if math.prod(verified[:1] + verified[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {verified}")
    if input.shape[1] % num_groups:
        raise RuntimeError(
            "'group_norm': Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {list(input.shape)} and num_groups={num_groups}"
        )
    if input.dtype is T.float16 and autograd.is_grad_enabled() and input.numel() > 0:
        if any(t is not None and t.requires_grad for t in (input, weight, bias)):
            value = group_norm(input.detach(), num_groups, _detached(weight), _detached(bias), eps)
            stats = _group_statistics(input.detach(), num_groups, eps)
            attrs = {"groups": num_groups, "stats": stats}
            return autograd.record("half_group_norm", (input, weight, bias), value, attrs)
    # the group's size spelled out: a zero batch has no size for a -1 to infer
    group_size = math.prod(input.shape[1:]) // num_groups
    x = functions.reshape(_float(input), input.shape[0], num_groups, group_size)
    out, _, _ = _normalized(x, (2,), eps)
    out = _affine(functions.reshape(out, *input.shape), weight, bias, _channel_shape(input))
    out = out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out
    if _memory_format.ACTIVE and out._base is None:  # PyTorch's group norm keeps a channels-last input's layout
        _memory_format.mark(out, _memory_format.format_of(input))
    return out


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):
    """x · rsqrt(mean(x²) + eps) over the last ``len(normalized_shape)`` dims, times ``weight``;
    ``eps=None`` is the machine epsilon of the type it computes in (float32 for float16 and bfloat16, whose
    own epsilon would swamp small inputs), as PyTorch's ``numeric_limits<opmath_type>::epsilon()``.

    >>> rms_norm(vkml.tensor([[3.0, 4.0]]), (2,)).shape  # doctest: +SKIP
    (1, 2)
    """
    if isinstance(normalized_shape, int):  # PyTorch's signature takes a sequence only (modules take an int)
        raise TypeError("rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    shape = tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape) :]) != shape or not shape:
        raise RuntimeError(
            f"'rms_norm': Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}"
        )
    if eps is None:
        eps = float(np.finfo(np.float64 if input.dtype is T.float64 else np.float32).eps)
    x = _float(input)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    mean_square = (x * x).mean(dims, keepdim=True)
    if mean_square._ctx is not None:  # PyTorch's nodes: x.pow(2).mean(dims, keepdim=True).add(eps) (a Scalar add)
        autograd.show(mean_square, "MeanBackward1", ((autograd.GraphNode("PowBackward0", (autograd.edge(x),)), 0),))
    shifted = mean_square + eps
    if shifted._ctx is not None:
        autograd.show(shifted, "AddBackward1", (autograd.edge(mean_square),))
    out = x * functions.rsqrt(shifted)
    if weight is not None:
        out = out * weight
    return out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """``input / max(‖input‖_p, eps)`` along ``dim`` (the norm kept as a size-1 dim).

    >>> normalize(vkml.tensor([[3.0, 4.0]])).tolist()  # doctest: +SKIP
    [[0.6000000238418579, 0.800000011920929]]
    """
    if out is not None:
        raise NotImplementedError("'normalize': out= is not supported")
    if input.dtype in (T.float16, T.bfloat16):
        # PyTorch's normalize divides by input.norm(p, dim, keepdim=True): a norm computed in float32 and
        # rounded once, differentiated by its own formula in the input's dtype (linalg.vector_norm's)
        norm = statistics.vector_norm(input, p, dim, keepdim=True)
    elif p == 1:
        norm = abs(input).sum(dim, keepdim=True)
    elif p == math.inf:
        norm = abs(input).amax(dim, keepdim=True)
    elif p == 0:  # the count of nonzeros, no gradient of its own (PyTorch's norm p=0)
        norm = (input != 0).sum(dim, keepdim=True).to(input.dtype)
    else:
        total = (input * input if p == 2 else abs(input) ** p).sum(dim, keepdim=True)
        # The root's derivative is infinite at 0: a zero vector's gradient is 0, as PyTorch's
        # norm (its subgradient), so the root only sees positive sums.
        positive = total > 0
        safe = functions.where(positive, total, 1.0)
        root = functions.sqrt(safe) if p == 2 else safe ** (1.0 / p)
        norm = functions.where(positive, root, 0.0)
    out = input / functions.clamp(norm, min=eps)
    if out._ctx is not None and input.requires_grad:
        # PyTorch's: input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
        norm_node = autograd.GraphNode("LinalgVectorNormBackward0", (autograd.edge(input),))
        clamped = autograd.GraphNode("ClampMinBackward0", ((norm_node, 0),))
        autograd.show(
            out, "DivBackward0", (autograd.edge(input), (autograd.GraphNode("ExpandBackward0", ((clamped, 0),)), 0))
        )
    return out
