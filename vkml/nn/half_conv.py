"""Where a float16/bfloat16 convolution rounds as PyTorch's CPU one does (its slow path: im2col, one
``cpublas::gemm`` a sample and group, col2im), beyond what the float32 product's order gives.

PyTorch's weight gradient accumulates over the batch in the weight's dtype: sample by sample, the
sample's float32 sums are added to the gradient so far (widened) and rounded back (a gemm with
beta = 1). One product over all the samples' columns rounds once instead, which differs where the
samples' contributions cancel.
"""

from __future__ import annotations

from ..frontend import autograd
from ..frontend import operators as functions
from ..ir import types as T
from ..ops import grads as G

# PyTorch's CPU rounding of the gradients (a product a sample, and at stride 1 the input's as W^T @ g folded
# back tap by tap) costs a GPU several times the fast forms' time on large layers (a ResNet stage-1 layer's
# backward; the commit that set this bound says how it was measured):
# vkml follows it for convolutions of up to this many multiply-adds (N·O·L·C/groups·taps), the fast forms
# above (one product over the batch; the stride-1 input gradient as one convolution)
EXACT_MULTIPLY_ADDS = 2**22


def rounds_as_cpu(dtype, multiply_adds: int) -> bool:
    """Whether a float16/bfloat16 convolution of this many multiply-adds takes PyTorch's CPU gradients."""
    return dtype in functions.HALF_PRECISION and multiply_adds <= EXACT_MULTIPLY_ADDS


# Up to this many samples the weight's and bias's gradients add sample by sample (an op pair a sample,
# fused into one kernel); a larger batch sums its samples in float32 and rounds once
SEQUENTIAL_SAMPLES = 64


def accumulate_samples(per_sample, dtype):
    """``per_sample`` (N, ...) float32 sums added as PyTorch's gemm with beta = 1 adds them: the first
    rounded to ``dtype``, each next one added to the sum so far (widened) and rounded back. Beyond
    SEQUENTIAL_SAMPLES samples, the float32 sum over N rounded once (docs/ops/conv2d.md)."""
    if per_sample.shape[0] > SEQUENTIAL_SAMPLES:
        return functions.cast(functions.sum(per_sample, 0), dtype)
    total = functions.cast(per_sample[0], dtype)
    for n in range(1, per_sample.shape[0]):
        total = functions.cast(functions.cast(total, T.float32) + per_sample[n], dtype)
    return total


def grouped_product(w, cols, wide: bool):
    """``w`` (G, O/G, K) @ ``cols`` (N, G, K, L) of half operands: (N, G, O/G, L), float32 sums rounded
    once to the dtype (``wide``: kept in float32, for the bias to be added before the one rounding).
    Differentiable as PyTorch's convolution in groups and its transposed one: ``cols`` gets W^T @ g
    rounded once, ``w`` the samples' float32 products, each added to the sum so far widened and
    rounded back to the dtype (``_grad_half_grouped_conv``).

    >>> w = vkml.ones(2, 1, 3, dtype=vkml.float16)
    >>> grouped_product(w, vkml.ones(4, 2, 3, 5, dtype=vkml.float16), False).shape
    (4, 2, 1, 5)
    """
    a, b = w.detach(), cols.detach()
    out = functions.matmul(*functions.half_in_float32(a, b)) if wide else functions.matmul(a, b)
    return autograd.record("half_grouped_conv", (w, cols), out, {"wide": wide})


def _grad_half_grouped_conv(c):
    w, cols = c.inputs
    g = functions.cast(c.g, w.dtype) if c.attrs["wide"] else c.g  # exact: the float32 holds half values
    grad_w = grad_cols = None
    if c.needs[1]:
        grad_cols = functions.matmul(functions.transpose(w, -1, -2), g)  # (N, G, K, L)
    if c.needs[0]:
        wide_g, wide_cols = functions.half_in_float32(g, cols)
        per_sample = functions.matmul(wide_g, functions.transpose(wide_cols, -1, -2))  # (N, G, O/G, K) float32
        grad_w = accumulate_samples(per_sample, w.dtype)
    return grad_w, grad_cols


G.RULES["half_grouped_conv"] = _grad_half_grouped_conv


def bias_per_sample(input, dilation) -> bool:
    """Whether PyTorch's CPU convolution of ``input`` sums its bias's gradient sample by sample in the dtype:
    its dilated convolution (slow_conv_dilated, a sample at a time) of float16/bfloat16."""
    return input.dtype in functions.HALF_PRECISION and any(d > 1 for d in dilation)


def add_bias(out, bias, wide: bool):
    """``out`` (N, O, *spatial; float32 sums if ``wide``) plus ``bias`` (O,), in the bias's dtype (``wide``:
    added in float32, rounded once), its gradient as PyTorch's dilated convolution's: each sample's float32
    sum over the positions rounded to the dtype, then added to the sum so far in the dtype
    (``_grad_half_conv_bias``).

    >>> add_bias(vkml.zeros(2, 3, 4, dtype=vkml.float16), vkml.ones(3, dtype=vkml.float16), False).shape
    (2, 3, 4)
    """
    column = functions.reshape(bias.detach(), bias.shape[0], *([1] * (out.ndim - 2)))
    if wide:
        value = functions.cast(out.detach() + functions.cast(column, T.float32), bias.dtype)
    else:
        value = out.detach() + column
    return autograd.record("half_conv_bias", (out, bias), value, {"wide": wide})


def _grad_half_conv_bias(c):
    out, bias = c.inputs
    wide_g = functions.cast(c.g, T.float32)
    grad_out = wide_g if c.attrs["wide"] else c.g
    grad_bias = None
    if c.needs[1]:
        sums = functions.sum(wide_g, tuple(range(2, wide_g.ndim))) if wide_g.ndim > 2 else wide_g  # (N, O)
        per_sample = functions.cast(sums, bias.dtype)
        if per_sample.shape[0] > SEQUENTIAL_SAMPLES:
            return grad_out, functions.cast(functions.sum(sums, 0), bias.dtype)
        grad_bias = per_sample[0]
        for n in range(1, per_sample.shape[0]):
            grad_bias = grad_bias + per_sample[n]
    return grad_out, grad_bias


G.RULES["half_conv_bias"] = _grad_half_conv_bias
