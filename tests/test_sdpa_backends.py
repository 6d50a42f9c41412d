"""``torch.nn.attention.sdpa_kernel`` / ``SDPBackend`` and ``torch.backends.cuda``'s ``enable_*_sdp``: MATH
selects the composite (scores in memory), the fused names the fused kernel, none raises PyTorch's error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml
from vkml.nn.attention import SDPBackend, sdpa_kernel

RNG = np.random.default_rng(5)
Q, K, V = (RNG.standard_normal((1, 2, 6, 8)).astype(np.float32) for _ in range(3))


def _sdpa(device, dtype=vkml.float32):
    q, k, v = (vkml.tensor(a, device=device, dtype=dtype) for a in (Q, K, V))
    return vkml.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()


def _math_by_hand(device):
    q, k, v = (vkml.tensor(a, device=device) for a in (Q, K, V))
    scores = (q @ k.transpose(-2, -1)) * (1 / np.sqrt(8))
    scores = scores.masked_fill(~vkml.ones(6, 6, dtype=vkml.bool, device=device).tril(), float("-inf"))
    return (scores.softmax(-1) @ v).numpy()


def test_math_is_the_composite_and_the_fused_names_the_kernel(gpu):
    want = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (Q, K, V)), is_causal=True).numpy()
    for device in ("cpu", gpu):
        with sdpa_kernel(SDPBackend.MATH):
            np.testing.assert_array_equal(_sdpa(device), _math_by_hand(device))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            fused = _sdpa(device)
        np.testing.assert_allclose(fused, want, rtol=2e-6, atol=2e-6)
        np.testing.assert_array_equal(fused, _sdpa(device))  # the default takes the fused kernel


def test_switches_nest_restore_and_raise_pytorchs_error():
    assert vkml.backends.cuda.flash_sdp_enabled() and vkml.backends.cuda.math_sdp_enabled()
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        assert vkml.backends.cuda.mem_efficient_sdp_enabled() and not vkml.backends.cuda.math_sdp_enabled()
        with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention"):
            _sdpa("cpu", vkml.float64)  # the fused kernel takes no float64, and the composite is off
        with sdpa_kernel(SDPBackend.MATH):
            assert _sdpa("cpu", vkml.float64).dtype == np.float64
        assert not vkml.backends.cuda.math_sdp_enabled()
    assert vkml.backends.cuda.math_sdp_enabled() and vkml.backends.cuda.cudnn_sdp_enabled()
    try:
        for name in ("flash", "mem_efficient", "cudnn"):
            getattr(vkml.backends.cuda, f"enable_{name}_sdp")(False)
        np.testing.assert_array_equal(_sdpa("cpu"), _math_by_hand("cpu"))
    finally:
        for name in ("flash", "mem_efficient", "cudnn"):
            getattr(vkml.backends.cuda, f"enable_{name}_sdp")(True)
    with pytest.raises(AssertionError, match="got str"):
        sdpa_kernel("math")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with vkml.backends.cuda.sdp_kernel(enable_math=False):
            assert not vkml.backends.cuda.math_sdp_enabled() and vkml.backends.cuda.flash_sdp_enabled()
    assert any(issubclass(w.category, FutureWarning) for w in caught)
