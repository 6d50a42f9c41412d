"""Normalisation layers against PyTorch: outputs, gradients, running statistics over train and eval steps;
Vulkan = CPU bits."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
from layercheck import check
from optest import assert_same_bits

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

TF = torch.nn.functional
CPU = vkml.device("cpu")


def _x(shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5).astype(np.float32)


def _steps(make_vk, make_pt, shapes, device, modes):
    """Run both modules through train/eval steps; compare outputs, input and parameter gradients, buffers."""
    torch.manual_seed(0)
    ref = make_pt()
    layer = make_vk()
    state = {k: v.clone() for k, v in ref.state_dict().items()}
    for k, v in state.items():  # non-trivial affine parameters
        if k in ("weight", "bias"):
            state[k] = v + torch.linspace(-0.5, 0.5, v.numel()).reshape(v.shape)
    ref.load_state_dict(state)
    layer.load_state_dict(dict(ref.state_dict()))
    layer.to(device)
    results = []
    for step, (shape, mode) in enumerate(zip(shapes, modes)):
        ref.train(mode)
        layer.train(mode)
        x = _x(shape, step)
        xt = torch.tensor(x, requires_grad=True)
        xv = vkml.tensor(x, device=device, requires_grad=True)
        want, got = ref(xt), layer(xv)
        up = np.random.default_rng(10 + step).standard_normal(shape).astype(np.float32)
        want.backward(torch.tensor(up))
        got.backward(vkml.tensor(up, device=device))
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5, err_msg=f"step {step}")
        np.testing.assert_allclose(xv.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"step {step}")
        results.append(got.numpy())
        results.append(xv.grad.numpy())
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(
            getattr(layer, name).grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name
        )
        results.append(getattr(layer, name).grad.numpy())
    for name, b in ref.named_buffers():
        mine = getattr(layer, name)
        if b.dtype == torch.int64:
            assert mine.item() == b.item() and mine.dtype is vkml.int64, name
        else:
            np.testing.assert_allclose(mine.numpy(), b.numpy(), rtol=1e-6, atol=1e-6, err_msg=name)
            results.append(mine.numpy())
    assert sorted(layer.state_dict()) == sorted(ref.state_dict())
    return results


NORMS = {
    "bn2d": (lambda: nn.BatchNorm2d(3), lambda: torch.nn.BatchNorm2d(3), [(4, 3, 3, 2)] * 3),
    "bn2d momentum None": (
        lambda: nn.BatchNorm2d(3, momentum=None),
        lambda: torch.nn.BatchNorm2d(3, momentum=None),
        [(2, 3, 2, 2)] * 3,
    ),
    "bn1d 2D": (lambda: nn.BatchNorm1d(4, momentum=0.3), lambda: torch.nn.BatchNorm1d(4, momentum=0.3), [(5, 4)] * 3),
    "bn1d 3D no affine": (
        lambda: nn.BatchNorm1d(2, affine=False),
        lambda: torch.nn.BatchNorm1d(2, affine=False),
        [(3, 2, 4)] * 3,
    ),
    "bn2d no running stats": (
        lambda: nn.BatchNorm2d(2, track_running_stats=False),
        lambda: torch.nn.BatchNorm2d(2, track_running_stats=False),
        [(2, 2, 3, 3)] * 3,
    ),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4), [(3, 4, 2, 3)] * 3),
    "instancenorm": (lambda: nn.InstanceNorm2d(3), lambda: torch.nn.InstanceNorm2d(3), [(2, 3, 3, 4)] * 3),
    "instancenorm stats affine": (
        lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        lambda: torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        [(2, 3, 3, 4)] * 3,
    ),
    "instancenorm unbatched": (lambda: nn.InstanceNorm1d(3), lambda: torch.nn.InstanceNorm1d(3), [(3, 5)] * 3),
    "bn3d": (lambda: nn.BatchNorm3d(2), lambda: torch.nn.BatchNorm3d(2), [(2, 2, 2, 3, 2)] * 3),
    "instancenorm3d unbatched": (
        lambda: nn.InstanceNorm3d(2, affine=True),
        lambda: torch.nn.InstanceNorm3d(2, affine=True),
        [(2, 3, 2, 2)] * 3,
    ),
    "rmsnorm": (lambda: nn.RMSNorm((3, 4)), lambda: torch.nn.RMSNorm((3, 4)), [(2, 3, 4)] * 3),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_norm_layers_match_torch_over_train_and_eval_steps(name, gpu):
    make_vk, make_pt, shapes = NORMS[name]
    modes = [True, True, False]
    on_cpu = _steps(make_vk, make_pt, shapes, CPU, modes)
    if name in ("bn2d", "groupnorm", "instancenorm stats affine"):
        on_gpu = _steps(make_vk, make_pt, shapes, gpu, modes)
        for k, (a, b) in enumerate(zip(on_gpu, on_cpu)):
            assert_same_bits(a, b, f"{name} result {k} on {gpu.name}")


def test_norm_reprs_and_state_match_torch():
    pairs = [
        (nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)),
        (nn.BatchNorm1d(3, affine=False, momentum=None), torch.nn.BatchNorm1d(3, affine=False, momentum=None)),
        (nn.GroupNorm(2, 4, affine=False), torch.nn.GroupNorm(2, 4, affine=False)),
        (nn.InstanceNorm2d(3), torch.nn.InstanceNorm2d(3)),
        (nn.BatchNorm3d(3), torch.nn.BatchNorm3d(3)),
        (nn.InstanceNorm3d(3, affine=True), torch.nn.InstanceNorm3d(3, affine=True)),
        (nn.RMSNorm(4), torch.nn.RMSNorm(4)),
    ]
    if "bias" in inspect.signature(torch.nn.BatchNorm2d).parameters:  # PyTorch 2.13 added BatchNorm's bias=
        pairs.append((nn.BatchNorm2d(3, bias=False), torch.nn.BatchNorm2d(3, bias=False)))
    for mine, ref in pairs:
        ours = repr(mine)
        if "bias=" not in repr(ref):  # PyTorch before 2.13 prints no bias=
            ours = ours.replace(", bias=True", "").replace(", bias=False", "")
        assert ours == repr(ref)
        assert list(mine.state_dict()) == list(ref.state_dict())
        for k, v in ref.state_dict().items():
            np.testing.assert_array_equal(mine.state_dict()[k].numpy(), v.numpy())


def test_batch_norm_updates_buffers_in_place():
    bn = nn.BatchNorm2d(2)
    mean, var, count = bn.running_mean, bn.running_var, bn.num_batches_tracked
    bn(vkml.tensor(_x((3, 2, 2, 2))))
    assert bn.running_mean is mean and bn.running_var is var and bn.num_batches_tracked is count
    assert count.item() == 1 and not mean.requires_grad
    bn.eval()
    bn(vkml.tensor(_x((3, 2, 2, 2))))
    assert count.item() == 1


@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1)])
def test_normalize_matches_torch(p, dim):
    x = _x((3, 4, 2))
    x[0, :, 0] = 0  # a zero vector: the eps clamp
    check(lambda t: F.normalize(t, p, dim), lambda t: TF.normalize(t, p, dim), [x], rtol=1e-5, atol=1e-6)


def test_functional_norms_match_torch():
    x, w, b = _x((4, 6, 3)), _x((6,), 1), _x((6,), 2)
    rm, rv = _x((6,), 3), np.abs(_x((6,), 4)) + 0.1
    check(
        lambda *t: F.batch_norm(t[0], t[3], t[4], t[1], t[2], False, 0.1, 1e-3),
        lambda *t: TF.batch_norm(t[0], t[3], t[4], t[1], t[2], False, 0.1, 1e-3),
        [x, w, b, rm, rv],
        grad=[True, True, True, False, False],
    )
    check(lambda *t: F.group_norm(t[0], 3, t[1], t[2]), lambda *t: TF.group_norm(t[0], 3, t[1], t[2]), [x, w, b])
    check(lambda *t: F.rms_norm(t[0], (3,), t[1]), lambda *t: TF.rms_norm(t[0], (3,), t[1]), [x, _x((3,), 5)])
    check(lambda t: F.instance_norm(t), lambda t: TF.instance_norm(t), [x])


ERRORS = [
    (lambda: nn.BatchNorm1d(3)(vkml.ones(1, 3)), ValueError, "Expected more than 1 value per channel"),
    (lambda: nn.BatchNorm2d(3)(vkml.ones(3, 2, 2)), ValueError, "expected 4D input"),
    (lambda: nn.BatchNorm1d(3)(vkml.ones(2, 3, 4, 4)), ValueError, "expected 2D or 3D input"),
    (lambda: nn.GroupNorm(3, 4), ValueError, r"num_channels \(4\) must be divisible by num_groups \(3\)"),
    (lambda: F.group_norm(vkml.ones(2, 4, 3), 3), RuntimeError, "divisible by num_groups"),
    (lambda: F.batch_norm(vkml.ones(2, 3), vkml.zeros(4), vkml.ones(4)), RuntimeError, "should contain 3 elements"),
    (lambda: nn.InstanceNorm2d(3)(vkml.ones(2, 2)), ValueError, "expected 3D or 4D input"),
]


@pytest.mark.parametrize(("call", "error", "match"), ERRORS)
def test_norm_errors_match_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_running_statistics_are_realized_with_the_step_not_kept_lazy():
    """A loop that never reads BatchNorm's running statistics must not keep every batch alive."""
    bn = nn.BatchNorm1d(3)
    opt = vkml.optim.SGD(bn.parameters(), lr=0.1)
    for step in range(3):
        loss = bn(vkml.tensor(_x((4, 3), seed=step))).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert bn.running_mean.node.realized and bn.running_var.node.realized
        assert bn.num_batches_tracked.node.realized
    assert bn.num_batches_tracked.item() == 3


def test_layer_norm_takes_a_dtype_as_torch():
    layer = vkml.nn.LayerNorm(4, dtype=vkml.float16)
    assert layer.weight.dtype is vkml.float16 and layer.bias.dtype is vkml.float16
    assert layer(vkml.ones(2, 4, dtype=vkml.float16)).dtype is vkml.float16


def test_batch_norm_training_backward_is_one_rule(monkeypatch, gpu):
    """While training with spatial dims batch norm is one op for autograd: its backward runs one gradient rule
    (the closed form, docs/ops/batch_norm.md), not a rule per reshape, sum and product, and gives PyTorch's
    gradients and running statistics (on Vulkan: the CPU interpreter's reductions are slow to run)."""
    from vkml.frontend import backward

    rules = []
    apply_rule = backward._apply_rule
    monkeypatch.setattr(
        backward, "_apply_rule", lambda ctx, *a, **k: (rules.append(ctx.name), apply_rule(ctx, *a, **k))
    )
    x, g = _x((3, 2, 4, 5)) * 2 + 1, _x((3, 2, 4, 5), seed=1)
    layer, reference = nn.BatchNorm2d(2), torch.nn.BatchNorm2d(2).double()
    with torch.no_grad():
        reference.weight.copy_(torch.tensor([0.5, -2.0]))
        reference.bias.copy_(torch.tensor([1.0, 0.25]))
    layer.load_state_dict({k: vkml.tensor(v.float().numpy()) for k, v in reference.state_dict().items()})
    layer.to(gpu)
    vx, tx = vkml.tensor(x, device=gpu, requires_grad=True), torch.tensor(x, dtype=torch.float64, requires_grad=True)
    got = vkml.autograd.grad(layer(vx), (vx, layer.weight, layer.bias), vkml.tensor(g, device=gpu))
    want = torch.autograd.grad(reference(tx), (tx, reference.weight, reference.bias), torch.tensor(g).double())
    assert rules == ["batch_norm_train"]
    for a, b, what in zip(got, want, ("input", "weight", "bias")):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5, err_msg=what)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(layer, name).numpy(), getattr(reference, name).numpy(), rtol=1e-6)
