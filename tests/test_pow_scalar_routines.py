"""``x ** e`` for the exponents PyTorch's pow kernel hands to another routine (aten's PowKernel, CPU and
CUDA alike): 0.5 is sqrt, -0.5 rsqrt, -1 reciprocal, 3 ``x*x*x`` and -2 ``1/(x*x)`` for float32 and
float64 (the first three for bfloat16 too); the gradient stays pow's (PowBackward0, which asks pow
again for ``e - 1``). Same bits as those routines (so sqrt(-0.0) = -0.0 as PyTorch, where pow gave
+0.0), CPU = Vulkan."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml

ROUTINES = {
    0.5: lambda x: np.sqrt(x),
    -0.5: lambda x: np.reciprocal(np.sqrt(x)),  # PyTorch's rsqrt rounds the root, then the quotient
    -1: lambda x: np.reciprocal(x),
    3: lambda x: x * x * x,
    -2: lambda x: np.reciprocal(x * x),
}


def _inputs(dtype):
    rng = np.random.default_rng(7)
    x = np.abs(rng.standard_normal(4096) * 3).astype(dtype)
    return np.concatenate([x, np.array([-0.0, 0.0, -2.0, np.inf, -np.inf, np.nan, 1e-30], dtype)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, -1.0, 3, 3.0, -2])
def test_special_exponents_take_pytorchs_routine(exponent, dtype, gpu):
    x = _inputs(dtype)
    with np.errstate(all="ignore"):
        want = ROUTINES[exponent](x)
    for device in ("cpu", gpu):
        got = (vkml.tensor(x, device=device) ** exponent).numpy()
        assert_same_bits(got, want, f"x ** {exponent} on {device}")
    # the signs of zeros and infinities are PyTorch's
    edge = (torch.tensor(x[-7:]) ** exponent).numpy()
    numbers = ~np.isnan(edge)
    np.testing.assert_array_equal(np.signbit(edge[numbers]), np.signbit(want[-7:][numbers]))


@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, 3, -2])
def test_special_exponents_keep_pows_gradient(exponent):
    x = _inputs(np.float32)[:4096] + np.float32(0.25)
    t = torch.tensor(x, requires_grad=True)
    (t**exponent).sum().backward()
    v = vkml.tensor(x, requires_grad=True)
    out = v**exponent
    assert type(out.grad_fn).__name__ == "PowBackward0"
    out.sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), t.grad.numpy(), rtol=2e-6)


def test_bfloat16_square_root_is_sqrt_and_float16_stays_pow():
    x = np.float32([0.3, 2.0, 7.0, -0.0])
    got = (vkml.tensor(x).to(vkml.bfloat16) ** 0.5).float().numpy()
    want = (torch.tensor(x).to(torch.bfloat16) ** 0.5).float().numpy()
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[-1])  # sqrt(-0.0)
    # float16 stays on pow in PyTorch's CPU kernel: pow(-0.0, 0.5) is +0.0
    half = (vkml.tensor(x).to(vkml.float16) ** 0.5).float().numpy()
    np.testing.assert_array_equal(half, (torch.tensor(x).to(torch.float16) ** 0.5).float().numpy())
    assert not np.signbit(half[-1])
