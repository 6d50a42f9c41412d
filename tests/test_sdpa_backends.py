"""``torch.nn.attention.sdpa_kernel`` / ``SDPBackend`` and ``torch.backends.cuda``'s SDPA switches: the
flags PyTorch reports in and after each block, the same result under every enabled backend, and
PyTorch's errors for a bad argument and for every backend switched off."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention as torch_attention

import vkml
import vkml.nn.attention as vkml_attention

_Q = np.random.default_rng(0).normal(size=(1, 2, 4, 8)).astype(np.float32)
_SWITCHES = ("flash", "mem_efficient", "math", "cudnn")


def _flags(lib) -> tuple[bool, ...]:
    return tuple(getattr(lib.backends.cuda, f"{name}_sdp_enabled")() for name in _SWITCHES)


@pytest.mark.parametrize(
    "chosen", [["MATH"], ["FLASH_ATTENTION"], ["EFFICIENT_ATTENTION", "CUDNN_ATTENTION"], "FLASH_ATTENTION"]
)
def test_sdpa_kernel_sets_exactly_the_chosen_backends_and_restores(chosen):
    seen = {}
    for lib, attention in ((torch, torch_attention), (vkml, vkml_attention)):
        backends = (
            getattr(attention.SDPBackend, chosen)
            if isinstance(chosen, str)
            else [getattr(attention.SDPBackend, c) for c in chosen]
        )
        before = _flags(lib)
        with attention.sdpa_kernel(backends, set_priority=True):
            inside = _flags(lib)
        seen[lib.__name__] = (before, inside, _flags(lib))
    assert seen["vkml"] == seen["torch"]
    assert [b.value for b in vkml_attention.SDPBackend] == [
        b.value for b in torch_attention.SDPBackend.__members__.values()
    ]


def test_every_enabled_backend_gives_the_same_result():
    q = vkml.tensor(_Q)
    expected = vkml.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).numpy()
    for backend in ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
        with vkml_attention.sdpa_kernel([getattr(vkml_attention.SDPBackend, backend)]):
            got = vkml.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).numpy()
        np.testing.assert_array_equal(got, expected)
    theirs = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(_Q),) * 3, is_causal=True).numpy()
    np.testing.assert_allclose(expected, theirs, rtol=1e-5, atol=1e-6)


def test_no_backend_left_is_pytorchs_runtime_error():
    for lib, attention in ((torch, torch_attention), (vkml, vkml_attention)):
        q = lib.tensor(_Q)
        with attention.sdpa_kernel(attention.SDPBackend.ERROR):
            with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention"):
                lib.nn.functional.scaled_dot_product_attention(q, q, q)
        assert lib.nn.functional.scaled_dot_product_attention(q, q, q).shape == tuple(_Q.shape)
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
            with attention.sdpa_kernel("flash"):
                pass


def test_backends_cuda_switches_and_the_deprecated_sdp_kernel():
    seen = {}
    for lib in (torch, vkml):
        lib.backends.cuda.enable_flash_sdp(False)
        off = _flags(lib)
        lib.backends.cuda.enable_flash_sdp(True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
                inside = _flags(lib)
        assert [w.category for w in caught] == [FutureWarning]
        seen[lib.__name__] = (off, inside, _flags(lib), str(caught[0].message))
    assert seen["vkml"] == seen["torch"]
