"""``torch.nn.utils.fusion``: fold an eval-mode BatchNorm into the conv or linear layer before it.

In eval mode BatchNorm is the affine map ``y = (x - mean) * w / sqrt(var + eps) + b`` per channel, so it
folds into the preceding layer's weight (scaled per output channel) and bias. The fused layer is a
copy of the conv or linear layer with new parameters; the originals are untouched.

>>> import vkml
>>> conv, bn = vkml.nn.Conv2d(1, 2, 1).eval(), vkml.nn.BatchNorm2d(2).eval()
>>> x = vkml.ones(1, 1, 2, 2)
>>> bool(((fuse_conv_bn_eval(conv, bn)(x) - bn(conv(x))).abs() < 1e-6).all())
True
"""

from __future__ import annotations

import copy

from ...frontend.autograd import no_grad
from ...frontend.creation import ones_like, zeros_like
from ..module import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _bn_parts(bn_rm, bn_w, bn_b):
    return (ones_like(bn_rm) if bn_w is None else bn_w), (zeros_like(bn_rm) if bn_b is None else bn_b)


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The weight and bias (new Parameters) of a conv followed by an eval-mode BatchNorm with these statistics.

    The output channels are dim 0 of the weight, or dim 1 with ``transpose`` (a transposed conv)."""
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w, bn_b = _bn_parts(bn_rm, bn_w, bn_b)
    inv_std = (bn_rv + bn_eps).rsqrt()
    per_channel = [1, -1] if transpose else [-1, 1]
    scale = (bn_w * inv_std).reshape(per_channel + [1] * (conv_w.dim() - 2))
    weight = (conv_w * scale).to(dtype=conv_w.dtype)
    bias = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(weight, conv_w.requires_grad), Parameter(bias, conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` computing ``bn(conv(x))``; both must be in eval mode."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_conv_bn_eval: the BatchNorm keeps no running statistics")
    fused = copy.deepcopy(conv)
    with no_grad():
        fused.weight, fused.bias = fuse_conv_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose
        )
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The weight and bias (new Parameters) of a linear layer followed by an eval-mode BatchNorm."""
    bias_dtype = linear_w.dtype if linear_b is None else linear_b.dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    bn_w, bn_b = _bn_parts(bn_rm, bn_w, bn_b)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    weight = linear_w * scale.unsqueeze(-1).to(dtype=linear_w.dtype)
    bias = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return Parameter(weight, linear_w.requires_grad), Parameter(bias, linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` computing ``bn(linear(x))``; both in eval mode, ``bn`` over its output features
    (or over one feature)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_linear_bn_eval: the BatchNorm keeps no running statistics")
    fused = copy.deepcopy(linear)
    with no_grad():
        fused.weight, fused.bias = fuse_linear_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
        )
    return fused
