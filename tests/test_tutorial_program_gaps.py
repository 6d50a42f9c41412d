"""Gaps the tutorial programs of tests/test_programs_tutorials.py found around them, each against PyTorch:
``pixel_shuffle``'s integer factor (the super-resolution example), ``affine_grid``'s batch check and
``grid_sample``'s non-finite grid points under 'border' and 'reflection' (a spatial transformer whose
``theta`` blows up)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import vkml
import vkml.nn.functional as VF


@pytest.mark.parametrize("factor", [2.0, True, 2.5])
@pytest.mark.parametrize("name", ["pixel_shuffle", "pixel_unshuffle"])
def test_shuffle_factor_must_be_an_int_as_pytorch(name, factor):
    x = np.arange(16.0, dtype=np.float32).reshape(1, 4, 2, 2)
    with pytest.raises(TypeError) as expected:
        getattr(TF, name)(torch.tensor(x), factor)
    with pytest.raises(TypeError) as got:
        getattr(VF, name)(vkml.tensor(x), factor)
    assert str(got.value) == str(expected.value)
    # a numpy integer and a one-element integer tensor are ints, as in PyTorch
    for ok in (np.int64(2), 2):
        assert getattr(VF, name)(vkml.tensor(x), ok).tolist() == getattr(TF, name)(torch.tensor(x), ok).tolist()
    assert VF.pixel_shuffle(vkml.tensor(x), vkml.tensor(2)).tolist() == TF.pixel_shuffle(torch.tensor(x), 2).tolist()


@pytest.mark.parametrize("size", [[3, 1, 4, 4], [3, 1, 2, 4, 4]])
def test_affine_grid_batch_mismatch_raises_runtime_error_as_pytorch(size):
    theta = np.ones((2, len(size) - 2, len(size) - 1), np.float32)
    with pytest.raises(RuntimeError) as expected:
        TF.affine_grid(torch.tensor(theta), size, align_corners=False)
    with pytest.raises(RuntimeError, match="affine_grid") as got:
        VF.affine_grid(vkml.tensor(theta), size, align_corners=False)
    assert str(expected.value) in str(got.value)


def _sample(lib, F, grid, padding_mode, mode, device=None):
    x = lib.arange(1.0, 10.0).view(1, 1, 3, 3)
    if device is not None:
        x = x.to(device)
    grid = lib.tensor(grid).to(x.device)
    return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=False)


NONFINITE = np.array([[[[np.inf, 0.0], [0.0, np.nan], [-np.inf, 0.5], [0.25, -0.5]]]], np.float32)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_nonfinite_grid_points_as_pytorch(padding_mode, mode):
    """PyTorch's clip takes 0 for a NaN coordinate: a NaN or infinite point reads the first element under
    'border' and 'reflection' (reflecting an infinity gives NaN first); under 'zeros' it stays NaN (bilinear)."""
    expected = _sample(torch, TF, NONFINITE, padding_mode, mode).numpy()
    got = _sample(vkml, VF, NONFINITE, padding_mode, mode).numpy()
    np.testing.assert_array_equal(got, expected)


def test_grid_sample_nonfinite_grid_points_on_lavapipe(gpu):
    for padding_mode in ("border", "reflection"):
        on_cpu = _sample(vkml, VF, NONFINITE, padding_mode, "bilinear").numpy()
        on_gpu = _sample(vkml, VF, NONFINITE, padding_mode, "bilinear", device=gpu).numpy()
        assert on_gpu.tobytes() == on_cpu.tobytes()
        assert np.isfinite(on_gpu).all()


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_bfloat16_as_pytorch(mode):
    """A bfloat16 grid's coordinates are read back widened to float32 (numpy has no bfloat16): the
    samples are PyTorch's, bit for bit."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 2, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, size=(1, 3, 3, 2)).astype(np.float32)
    expected = TF.grid_sample(
        torch.tensor(x).bfloat16(), torch.tensor(grid).bfloat16(), mode=mode, padding_mode="border", align_corners=False
    )
    got = VF.grid_sample(
        vkml.tensor(x).bfloat16(), vkml.tensor(grid).bfloat16(), mode=mode, padding_mode="border", align_corners=False
    )
    assert got.dtype is vkml.bfloat16
    np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


@pytest.mark.parametrize(
    ("shape", "mode"), [((1, 2, 5, 6), "bilinear"), ((1, 2, 5, 6), "bicubic"), ((1, 2, 5), "linear")]
)
def test_interpolate_keeps_bfloat16_as_pytorch(shape, mode):
    """A bfloat16 input is weighed in float32 and rounded once: the result and its gradient stay bfloat16
    (they came out float32), within one bfloat16 rounding of PyTorch's (bilinear: its bits)."""
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    results = []
    for lib in (torch, vkml):
        input = lib.tensor(x).to(lib.bfloat16).requires_grad_()
        y = lib.nn.functional.interpolate(input, scale_factor=2, mode=mode, align_corners=False)
        y.float().sum().backward()
        assert y.dtype is lib.bfloat16 and input.grad.dtype is lib.bfloat16
        results.append((y.detach().float().numpy(), input.grad.float().numpy()))
    (expected, expected_grad), (got, got_grad) = results
    np.testing.assert_allclose(got, expected, rtol=2**-8, atol=0)
    np.testing.assert_allclose(got_grad, expected_grad, rtol=2**-8, atol=0)
    if mode == "bilinear":
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_rms_norm_default_eps_is_its_compute_types_as_pytorch(dtype):
    """``eps=None`` is float32's epsilon for the half types (float16's own swamped mean(x²) of 1e-6), and
    bfloat16 no longer raises numpy's TypeError."""
    x = np.full((2, 4), 1e-3, np.float32)
    expected = TF.rms_norm(torch.tensor(x).to(getattr(torch, dtype)), (4,))
    got = VF.rms_norm(vkml.tensor(x).to(getattr(vkml, dtype)), (4,))
    assert got.dtype is getattr(vkml, dtype)
    np.testing.assert_array_equal(got.double().numpy(), expected.double().numpy())
