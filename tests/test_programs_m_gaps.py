"""The gaps found by the library-style programs of tests/programs/ (hf_gpt2, timm_vit, dit_adaln,
conformer_ctc, lightning_loop, retinanet_fpn), each against PyTorch.

lightning_loop's bf16-mixed run differed from its first loss: PyTorch's float16/bfloat16 ``linear``
with a bias (its addmm path), ``addmm`` and ``baddbmm`` add the bias to the product's float32 sums
and round once, where vkml rounded the product and then the sum.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _pair(array, dtype, requires_grad=False):
    expected = torch.tensor(array).to(getattr(torch, dtype)).requires_grad_(requires_grad)
    got = vkml.tensor(array).to(getattr(vkml, dtype)).requires_grad_(requires_grad)
    return expected, got


def _bits(tensor):
    return tensor.detach().float().numpy()


@pytest.mark.parametrize(("dtype", "input_shape"), [("bfloat16", (6, 8)), ("float16", (3, 6, 8)), ("bfloat16", (8,))])
def test_half_linear_adds_the_bias_before_rounding_as_pytorch(dtype, input_shape):
    rng = np.random.default_rng(0)
    arrays = [
        rng.normal(size=input_shape).astype(np.float32),
        (0.3 * rng.normal(size=(32, 8))).astype(np.float32),
        rng.normal(size=32).astype(np.float32),
    ]
    (x, xv), (w, wv), (b, bv) = (_pair(a, dtype, requires_grad=True) for a in arrays)
    expected = torch.nn.functional.linear(x, w, b)
    got = vkml.nn.functional.linear(xv, wv, bv)
    assert got.dtype is getattr(vkml, dtype)
    np.testing.assert_array_equal(_bits(got), _bits(expected))
    upstream = rng.normal(size=expected.shape).astype(np.float32)
    expected.backward(torch.tensor(upstream).to(expected.dtype))
    got.backward(vkml.tensor(upstream).to(got.dtype))
    np.testing.assert_array_equal(_bits(xv.grad), _bits(x.grad))
    np.testing.assert_array_equal(_bits(bv.grad), _bits(b.grad))
    # the weight's gradient sums over the batch rows in PyTorch's order: a cancelling sum may end a unit apart
    np.testing.assert_allclose(_bits(wv.grad), _bits(w.grad), rtol=2**-7, atol=1e-3)


def test_half_linear_of_a_non_contiguous_batch_rounds_twice_as_pytorch(dtype="bfloat16"):
    """PyTorch's linear takes matmul then ``add_`` for a non-contiguous input of 3 or more dims."""
    rng = np.random.default_rng(1)
    x, xv = _pair(rng.normal(size=(6, 3, 8)).astype(np.float32), dtype)
    w, wv = _pair((0.3 * rng.normal(size=(32, 8))).astype(np.float32), dtype)
    b, bv = _pair(rng.normal(size=32).astype(np.float32), dtype)
    expected = torch.nn.functional.linear(x.transpose(0, 1), w, b)
    got = vkml.nn.functional.linear(xv.transpose(0, 1), wv, bv)
    np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_half_addmm_and_baddbmm_round_once_as_pytorch():
    rng = np.random.default_rng(2)
    (c, cv), (a, av), (m, mv) = (
        _pair(rng.normal(size=shape).astype(np.float32), "float16") for shape in ((6, 32), (6, 8), (8, 32))
    )
    expected = torch.addmm(c, a, m, beta=0.5, alpha=2)
    np.testing.assert_array_equal(_bits(vkml.addmm(cv, av, mv, beta=0.5, alpha=2)), _bits(expected))
    (c, cv), (a, av), (m, mv) = (
        _pair(rng.normal(size=shape).astype(np.float32), "bfloat16") for shape in ((3, 6, 32), (3, 6, 8), (3, 8, 32))
    )
    expected = torch.baddbmm(c, a, m)
    got = vkml.baddbmm(cv, av, mv)
    # PyTorch's own float32 sums come in another order: a sum that cancels may end one unit apart
    np.testing.assert_allclose(_bits(got), _bits(expected), rtol=2**-7, atol=1e-3)
    single = (c.float() + torch.bmm(a.float(), m.float())).to(c.dtype)
    np.testing.assert_array_equal(_bits(got), _bits(single))


def test_bf16_autocast_linear_matches_pytorch_bits():
    """A Linear under CPU autocast (the program's case): bfloat16 output of the once-rounded sum."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 8)).astype(np.float32)
    w = (0.3 * rng.normal(size=(32, 8))).astype(np.float32)
    b = rng.normal(size=32).astype(np.float32)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        expected = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    with vkml.autocast(device_type="cpu", dtype=vkml.bfloat16):
        got = vkml.nn.functional.linear(vkml.tensor(x), vkml.tensor(w), vkml.tensor(b))
    assert got.dtype is vkml.bfloat16
    np.testing.assert_array_equal(_bits(got), _bits(expected))
