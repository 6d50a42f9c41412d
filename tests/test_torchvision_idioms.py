"""Idioms of torchvision's model code (torchvision/models, torchvision/ops) that vkml must run as PyTorch does."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import skip_before_pytorch

import vkml


def test_assert_raises_assertion_error_with_message():
    # torchvision's VisionTransformer checks shapes with torch._assert
    vkml._assert(vkml.tensor(True), "unused")
    vkml._assert(3 % 1 == 0, "unused")
    with pytest.raises(AssertionError, match="Wrong image height! Expected 32 but got 16!"):
        vkml._assert(16 == 32, "Wrong image height! Expected 32 but got 16!")
    with pytest.raises(AssertionError, match="all zero"):
        vkml._assert(vkml.tensor(0.0), "all zero")
    assert "_assert" not in vkml.__all__ and "_assert" not in torch.__all__


def _frozen_batchnorm(lib):
    """torchvision.ops.FrozenBatchNorm2d's state handling: buffers only, and a checkpoint's
    num_batches_tracked dropped by an overridden _load_from_state_dict."""

    class FrozenBatchNorm2d(lib.nn.Module):
        def __init__(self, num_features: int, eps: float = 1e-5):
            super().__init__()
            self.eps = eps
            self.register_buffer("weight", lib.ones(num_features))
            self.register_buffer("bias", lib.zeros(num_features))
            self.register_buffer("running_mean", lib.zeros(num_features))
            self.register_buffer("running_var", lib.ones(num_features))

        def _load_from_state_dict(
            self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        ):
            num_batches_tracked_key = prefix + "num_batches_tracked"
            if num_batches_tracked_key in state_dict:
                del state_dict[num_batches_tracked_key]
            super()._load_from_state_dict(
                state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
            )

        def forward(self, x):
            scale = self.weight.reshape(1, -1, 1, 1) * (self.running_var.reshape(1, -1, 1, 1) + self.eps).rsqrt()
            return x * scale + (self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale)

    return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1, bias=False), FrozenBatchNorm2d(3))


def test_overridden_load_from_state_dict_edits_a_copy_and_loads():
    trained = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1, bias=False), torch.nn.BatchNorm2d(3))
    with torch.no_grad():
        for t in (trained[1].weight, trained[1].bias, trained[1].running_mean):
            t.copy_(torch.randn(3))
        trained[1].running_var.copy_(torch.rand(3) + 0.5)
    checkpoint = trained.state_dict()
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(np.float32)
    results = []
    for lib, convert in ((torch, lambda v: v), (vkml, lambda v: vkml.tensor(v.numpy()))):
        model = _frozen_batchnorm(lib)
        state = {key: convert(value) for key, value in checkpoint.items()}
        keys = model.load_state_dict(state)  # strict: num_batches_tracked is gone before the check
        assert keys.missing_keys == [] and keys.unexpected_keys == []
        assert "1.num_batches_tracked" in state  # the caller's dict is not edited
        results.append(model(lib.tensor(x)).detach().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_load_from_state_dict_called_alone_writes_and_reports():
    # PyTorch's base method: this module's own entries, written at once, unexpected keys under strict
    for lib in (torch, vkml):
        layer = lib.nn.Linear(2, 1)
        missing, unexpected, errors = [], [], []
        state = {"fc.weight": lib.ones(1, 2), "fc.extra": lib.ones(1)}
        layer._load_from_state_dict(state, "fc.", {}, True, missing, unexpected, errors)
        assert (missing, unexpected, errors) == (["fc.bias"], ["fc.extra"], [])
        assert layer.weight.tolist() == [[1.0, 1.0]]


def test_load_state_dict_error_leaves_overridden_module_unwritten():
    model = _frozen_batchnorm(vkml)
    before = model[1].running_mean.tolist()
    state = {"0.weight": vkml.ones(3, 2, 1, 1), "1.weight": vkml.ones(3), "1.bias": vkml.ones(3)}
    state |= {"1.running_mean": vkml.ones(3), "1.running_var": vkml.ones(4)}
    with pytest.raises(RuntimeError, match="size mismatch for 1.running_var"):
        model.load_state_dict(state)
    assert model[1].running_mean.tolist() == before and model[0].weight.abs().sum().item() != 6.0


@pytest.mark.parametrize(
    ("shape", "size", "scale_factor", "mode", "align_corners"),
    [
        ((2, 3, 17, 23), (5, 9), None, "bilinear", False),  # torchvision's resize: a downscale
        ((1, 2, 8, 8), (13, 5), None, "bicubic", True),  # up along one dim, down along the other
        ((1, 1, 12, 7), None, (0.37, 1.7), "bicubic", False),
        ((2, 3, 17, 23), (5, 9), None, "lanczos", False),  # torchvision's InterpolationMode.LANCZOS
        ((1, 2, 6, 9), (13, 4), None, "lanczos", False),
        ((1, 1, 16, 16), None, (0.3, 0.3), "lanczos", False),
    ],
)
def test_interpolate_antialias_matches_pytorch(shape, size, scale_factor, mode, align_corners):
    if mode == "lanczos":
        skip_before_pytorch(2, 13, "no lanczos mode")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    kwargs = dict(size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners, antialias=True)
    xt = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.interpolate(xt, **kwargs)
    g = np.random.default_rng(1).standard_normal(tuple(expected.shape)).astype(np.float32)
    expected.backward(torch.tensor(g))
    xv = vkml.tensor(x, requires_grad=True)
    got = vkml.nn.functional.interpolate(xv, **kwargs)
    got.backward(vkml.tensor(g))
    # PyTorch's weights are computed in float32 with its build's contractions: within a few ulp
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xv.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_interpolate_antialias_same_bits_on_vulkan(gpu):
    x = vkml.tensor(np.random.default_rng(2).standard_normal((1, 2, 11, 9)).astype(np.float32))
    for mode in ("bilinear", "bicubic", "lanczos"):
        on_cpu = vkml.nn.functional.interpolate(x, size=(4, 5), mode=mode, antialias=True).numpy()
        on_gpu = vkml.nn.functional.interpolate(x.to(gpu), size=(4, 5), mode=mode, antialias=True).cpu().numpy()
        np.testing.assert_array_equal(on_gpu, on_cpu)


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((1, 1, 4, 4), dict(size=(6, 6), mode="lanczos")),  # needs antialias=True
        ((1, 1, 4, 4), dict(size=(6, 6), mode="lanczos", antialias=True, align_corners=True)),
        ((1, 1, 4), dict(size=6, mode="lanczos")),  # the catch-all: lanczos is 4-D only
        ((1, 1, 4, 4, 4), dict(size=6, mode="lanczos")),
        ((1, 1, 4), dict(size=6, mode="lanczos", antialias=True)),
    ],
)
def test_interpolate_lanczos_errors_match_pytorch(shape, kwargs):
    skip_before_pytorch(2, 13, "no lanczos mode")
    with pytest.raises(Exception) as expected:
        torch.nn.functional.interpolate(torch.zeros(shape), **kwargs)
    with pytest.raises(expected.type) as got:
        vkml.nn.functional.interpolate(vkml.zeros(shape), **kwargs)
    assert str(got.value) == f"'interpolate': {expected.value}"


def test_nn_modules_paths_hold_the_layers_and_private_bases():
    import vkml.nn as nn
    from vkml.nn.modules.utils import _pair, _quadruple, _single, _triple

    # torchvision's split_normalization_params, and copied layers' imports, name these paths
    norm_classes = (
        nn.modules.batchnorm._BatchNorm,
        nn.LayerNorm,
        nn.GroupNorm,
        nn.modules.instancenorm._InstanceNorm,
        nn.LocalResponseNorm,
    )
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.InstanceNorm2d(4, affine=True), nn.Linear(2, 2))
    norm = [type(m).__name__ for m in model.modules() if isinstance(m, norm_classes)]
    assert norm == ["BatchNorm2d", "InstanceNorm2d"]
    assert isinstance(model[0], nn.modules.conv._ConvNd) and nn.modules.Conv2d is nn.Conv2d
    for name in ("CrossEntropyLoss", "MSELoss", "NLLLoss", "L1Loss"):  # the loss bases as PyTorch's
        for base in ("_Loss", "_WeightedLoss"):
            expected = issubclass(getattr(torch.nn, name), getattr(torch.nn.modules.loss, base))
            assert issubclass(getattr(nn, name), getattr(nn.modules.loss, base)) == expected, (name, base)
    assert nn.modules.container.Sequential is nn.Sequential and nn.modules.module.Module is nn.Module
    for ours, theirs in ((_single, "_single"), (_pair, "_pair"), (_triple, "_triple"), (_quadruple, "_quadruple")):
        reference = getattr(torch.nn.modules.utils, theirs)
        assert ours(3) == reference(3) and ours([1, 2]) == reference([1, 2])


def test_sample_dirichlet_draws_on_the_simplex():
    # torchvision.transforms.v2.MixUp: lam = float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0])
    vkml.manual_seed(0)
    draws = vkml._sample_dirichlet(vkml.tensor([[0.5, 0.5]] * 64 + [[2.0, 6.0]] * 64))
    values = draws.numpy()
    assert draws.shape == (128, 2) and (values >= 0).all()
    np.testing.assert_allclose(values.sum(1), 1.0, rtol=1e-6)
    assert abs(values[64:, 0].mean() - 0.25) < 0.06  # mean alpha / sum(alpha)
    with pytest.raises(TypeError, match="_sample_dirichlet"):
        vkml._sample_dirichlet([0.5, 0.5])
