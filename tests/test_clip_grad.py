"""vkml.nn.utils against torch.nn.utils: gradient clipping by norm and by value, parameters as a vector."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import vkml
from vkml.nn import utils as vutils

SHAPES = [(3, 4), (5,), (2, 2, 2)]


def _pair(scale: float, device="cpu"):
    rng = np.random.default_rng(3)
    grads = [(rng.standard_normal(s) * scale).astype(np.float32) for s in SHAPES]
    tparams = [torch.nn.Parameter(torch.zeros(s)) for s in SHAPES]
    vparams = [vkml.nn.Parameter(vkml.zeros(*s, device=device)) for s in SHAPES]
    for tp, vp, g in zip(tparams, vparams, grads):
        tp.grad = torch.from_numpy(g.copy())
        vp.grad = vkml.tensor(g, device=device)
    return tparams, vparams


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, 0])
@pytest.mark.parametrize("scale", [0.01, 10.0])  # below the max norm (no change) and above it
def test_clip_grad_norm_matches_torch(norm_type, scale: float) -> None:
    tparams, vparams = _pair(scale)
    tnorm = torch.nn.utils.clip_grad_norm_(tparams, max_norm=1.5, norm_type=norm_type)
    vnorm = vutils.clip_grad_norm_(vparams, max_norm=1.5, norm_type=norm_type)
    assert vnorm.shape == () and vnorm.dtype == vkml.float32
    np.testing.assert_allclose(vnorm.item(), tnorm.item(), rtol=1e-6)
    for tp, vp in zip(tparams, vparams):
        np.testing.assert_allclose(vp.grad.numpy(), tp.grad.numpy(), rtol=2e-6, atol=1e-7)


def test_clip_grad_norm_on_device_same_bits_as_cpu(gpu) -> None:
    _, cpu_params = _pair(10.0)
    _, gpu_params = _pair(10.0, device=gpu)
    cpu_norm = vutils.clip_grad_norm_(cpu_params, 1.0)
    gpu_norm = vutils.clip_grad_norm_(gpu_params, 1.0)
    assert gpu_norm.device == gpu and gpu_norm.numpy().tobytes() == cpu_norm.numpy().tobytes()
    for c, g in zip(cpu_params, gpu_params):
        assert g.grad.device == gpu and g.grad.numpy().tobytes() == c.grad.numpy().tobytes()


def test_clip_grad_norm_single_tensor_no_grads_and_nonfinite() -> None:
    w = vkml.nn.Parameter(vkml.zeros(2))
    assert vutils.clip_grad_norm_(w, 1.0).item() == torch.nn.utils.clip_grad_norm_(torch.zeros(2), 1.0).item() == 0.0
    w.grad = vkml.tensor([math.inf, 1.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        vutils.clip_grad_norm_(w, 1.0, error_if_nonfinite=True)
    assert w.grad.tolist() == [math.inf, 1.0]  # the error leaves the gradient as it was
    assert math.isinf(vutils.clip_grad_norm_(w, 1.0).item())


def test_reachable_as_in_torch() -> None:
    assert vkml.nn.utils is vutils and vkml.nn.utils.clip_grad_norm_ is vutils.clip_grad_norm_


def test_clip_grad_value_matches_torch() -> None:
    tparams, vparams = _pair(3.0)
    torch.nn.utils.clip_grad_value_(tparams, 1.25)
    assert vutils.clip_grad_value_(vparams, 1.25) is None
    for tp, vp in zip(tparams, vparams):
        assert vp.grad.numpy().tobytes() == tp.grad.numpy().tobytes()


def test_parameters_to_vector_and_back() -> None:
    tparams, vparams = _pair(1.0)
    for tp, vp in zip(tparams, vparams):
        tp.data, vp.node = tp.grad.clone(), vp.grad.node  # give the parameters distinct values
    vec = vutils.parameters_to_vector(vparams)
    assert vec.tolist() == torch.nn.utils.parameters_to_vector(tparams).tolist()
    ids = [id(p) for p in vparams]
    vutils.vector_to_parameters(vec * 2, vparams)
    assert [id(p) for p in vparams] == ids
    for tp, vp in zip(tparams, vparams):
        assert vp.shape == tuple(tp.shape) and vp.numpy().tobytes() == (tp.detach() * 2).numpy().tobytes()
    with pytest.raises(TypeError, match="expected vkml.Tensor"):
        vutils.vector_to_parameters([1.0], vparams)
