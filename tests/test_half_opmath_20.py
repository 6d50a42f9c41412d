"""More float16/bfloat16 ops that round where PyTorch's CPU kernels round (tests/test_half_opmath.py's
kind): the convolution's slow path (a product a sample and group, added to the weight's gradient in the
dtype sample by sample; the dilated one's bias gradient likewise), and the rows below. vkml must give
torch's values and gradients (of ``sum(out * w)``) bit for bit, on the CPU backend and on Vulkan.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

HALF_DTYPES = ("float16", "bfloat16")

# The gradient rules these rows check (tests/test_autograd.py asks every rule to be tested somewhere).
GRAD_TESTED = {"half_grouped_conv", "half_conv_bias", "half_bilinear"}


def _conv(name, **kwargs):
    return lambda m, *xs: getattr(m.nn.functional, name)(*xs, **kwargs)


# id -> (function of (module, *tensors), input shapes)
CASES = {
    # groups > 1 with a bias: the bias added to the float32 sums, one rounding; the weight's gradient
    # accumulated over the batch in the dtype
    "conv2d_depthwise_bias": (_conv("conv2d", groups=4), [(2, 4, 6, 6), (8, 1, 3, 3), (8,)]),
    "conv1d_groups_batch3": (_conv("conv1d", groups=2, padding=1), [(3, 4, 9), (6, 2, 3), (6,)]),
    # dilated: the bias's gradient summed a sample at a time, each sum rounded, then added in the dtype
    "conv2d_dilated_bias": (_conv("conv2d", dilation=2, padding=1), [(3, 2, 7, 7), (3, 2, 3, 3), (3,)]),
    "conv1d_dilated_groups": (_conv("conv1d", groups=2, dilation=2, stride=3), [(2, 4, 11), (2, 2, 3), (2,)]),
    "conv2d_one_group_batch4": (_conv("conv2d", stride=2), [(4, 3, 7, 6), (2, 3, 3, 2)]),
    # stride 1: the input's gradient is W^T @ g rounded, its taps then added in the dtype (col2im)
    "conv2d_input_grad_stride1": (_conv("conv2d", padding="same"), [(1, 3, 6, 5), (2, 3, 3, 3)]),
    "conv3d_input_grad_one_channel": (_conv("conv3d", padding="same", dilation=2), [(1, 1, 5, 6, 4), (1, 1, 2, 2, 3)]),
    # the transposed convolution's weight gradient: a sample at a time too
    "conv_transpose2d_batch3": (_conv("conv_transpose2d", stride=2), [(3, 4, 4, 4), (4, 2, 3, 3), (2,)]),
    "conv_transpose1d_groups": (_conv("conv_transpose1d", groups=2), [(2, 4, 6), (4, 3, 3)]),
    # _trilinear's two products (each rounded once) and its backward: three _trilinear calls, the terms of
    # a summed out dim added in the dtype
    "bilinear": (lambda m, a, b, w, bias: m.nn.functional.bilinear(a, b, w, bias), [(4, 3), (4, 5), (6, 3, 5), (6,)]),
    "bilinear_batch_dims": (lambda m, a, b, w: m.nn.functional.bilinear(a, b, w), [(2, 3, 4), (2, 3, 2), (3, 4, 2)]),
    # prod along a short dim: element after element, each product rounded; with a zero anywhere in the input,
    # every gradient is the exclusive products from both ends (cumprods), as prod_safe_zeros_backward
    "prod_dim": (lambda m, x: m.prod(x, 1), [(4, 5, 3)]),
    "prod_dim_keepdim_with_a_zero": (lambda m, x: m.prod(_with_a_zero(m, x), 0, keepdim=True), [(6, 4)]),
}


def _with_a_zero(m, x):
    """``x`` with its element 5 (flat) zeroed, by a product with 0/1 (exact, and exact in the gradient)."""
    mask = np.ones(tuple(x.shape), np.float32)
    mask.flat[5] = 0.0
    return x * m.tensor(mask, device=x.device).to(x.dtype)


# Rows in the default suite (seconds each on this machine's CPU interpreter); the rest run with -m stress.
DEFAULT = {"conv1d_dilated_groups"}
ON_VULKAN = {"conv1d_dilated_groups"}


def _inputs(shapes, seed: int):
    """Multiples of 1/8 below 8 in magnitude: their products and sums (and those with the loss's weights)
    are exact in float32 in any order, so only where each library rounds to the dtype shows (PyTorch's
    float32 sums run in another order than vkml's, which shows in the last bit where sums cancel)."""
    g = np.random.default_rng(seed)
    return [(g.integers(-63, 64, s) / 8).astype(np.float32) for s in shapes]


def _run(m, case: str, dtype: str, device=None):
    fn, shapes = CASES[case]
    dt = getattr(m, dtype)
    arrays = _inputs(shapes, seed=len(case))
    if m is torch:
        xs = [torch.tensor(a).to(dt).requires_grad_(True) for a in arrays]
    else:
        kw = {} if device is None else {"device": device}
        xs = [vkml.tensor(a, **kw).to(dt).requires_grad_(True) for a in arrays]
    out = fn(m, *xs)
    w = np.linspace(-1.0, 2.0, out.numel()).reshape(tuple(out.shape))
    weights = torch.tensor(w).to(dt) if m is torch else vkml.tensor(w, **({} if device is None else {"device": device}))
    grads = m.autograd.grad((out * weights.to(dt)).sum(), xs)
    return [t.float().detach().numpy() if m is torch else t.float().numpy() for t in (out, *grads)]


def _rows(fast):
    return [
        pytest.param(case, dtype, marks=[] if case in fast else [pytest.mark.stress], id=f"{case}-{dtype}")
        for case in sorted(CASES)
        for dtype in HALF_DTYPES
    ]


@pytest.mark.parametrize(("case", "dtype"), _rows(DEFAULT))
def test_half_op_rounds_as_pytorch(case, dtype):
    want = _run(torch, case, dtype)
    got = _run(vkml, case, dtype)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(g, w, err_msg=f"{case} {dtype}: {'output' if k == 0 else f'grad {k - 1}'}")


@pytest.mark.parametrize(
    "case", [c if c in ON_VULKAN else pytest.param(c, marks=pytest.mark.stress) for c in sorted(CASES)]
)
def test_half_op_gives_the_cpu_bits_on_vulkan(case, gpu):
    for dtype in HALF_DTYPES:
        cpu = _run(vkml, case, dtype)
        on_gpu = _run(vkml, case, dtype, device=gpu)
        for got, want in zip(on_gpu, cpu, strict=True):
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{case} {dtype}")
