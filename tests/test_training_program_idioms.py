"""Fixes found by the training programs of tests/test_programs_training.py, each checked against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as torch_checkpoint

import vkml
import vkml.utils.checkpoint as vkml_checkpoint

X = np.arange(12, dtype=np.float32).reshape(4, 3) / 7


def _checkpointed_batchnorm(lib, checkpoint_module, form):
    """A Linear + BatchNorm (+ ReLU + Linear) run through ``form`` of checkpointing, forward and backward:
    the BatchNorm's statistics after the forward and after backward, and the input's gradient.

    ``checkpoint_module`` None runs what PyTorch's checkpoint does, by hand: the segment once for the
    forward and again, recording, when backward reaches it (torch.utils.checkpoint loads
    torch._dynamo on its first call, seconds; the stress test below calls it)."""
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.BatchNorm1d(3), lib.nn.ReLU(), lib.nn.Linear(3, 2))
    with lib.no_grad():
        net[0].weight.copy_(lib.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, -0.5], [0.25, 0.0, 1.0]]))
        net[3].weight.copy_(lib.tensor([[1.0, -1.0, 0.5], [0.5, 0.25, -1.0]]))
        net[0].bias.copy_(lib.tensor([0.1, -0.2, 0.3]))
        net[3].bias.zero_()
    x = lib.tensor(X, requires_grad=True)
    if checkpoint_module is None:
        segment = net if form != "sequential" else net[:2]
        with lib.no_grad():
            segment(x)
        forward = net[1].running_mean.tolist()
        y = net(x)
    else:
        if form == "non-reentrant":
            y = checkpoint_module.checkpoint(net, x, use_reentrant=False)
        elif form == "reentrant":
            y = checkpoint_module.checkpoint(net, x, use_reentrant=True)
        else:  # BN in the checkpointed half
            y = checkpoint_module.checkpoint_sequential(net, 2, x, use_reentrant=False)
        forward = net[1].running_mean.tolist()
    (y * y).sum().backward()
    bn = net[1]
    return forward, bn.running_mean.tolist(), bn.running_var.tolist(), bn.num_batches_tracked.item(), x.grad.tolist()


def _assert_same(got, want):
    assert got[3] == want[3] == 2
    flat = lambda r: np.concatenate([np.ravel(v) for v in r[:3] + r[4:]])  # noqa: E731
    np.testing.assert_allclose(flat(got), flat(want), rtol=1e-5, atol=1e-7)


FORMS = ["non-reentrant", "reentrant", "sequential"]


@pytest.mark.parametrize("form", FORMS)
def test_checkpoint_recomputes_batchnorm_statistics_in_backward_as_pytorch(form):
    """PyTorch runs a checkpointed segment again in backward, so a training-mode BatchNorm inside
    updates its running statistics twice (vkml ran the segment once: eval results drifted)."""
    _assert_same(_checkpointed_batchnorm(vkml, vkml_checkpoint, form), _checkpointed_batchnorm(torch, None, form))


@pytest.mark.stress
@pytest.mark.parametrize("form", FORMS)
def test_checkpoint_batchnorm_statistics_match_torch_utils_checkpoint(form):
    _assert_same(
        _checkpointed_batchnorm(vkml, vkml_checkpoint, form), _checkpointed_batchnorm(torch, torch_checkpoint, form)
    )


def test_checkpoint_replay_draws_the_forward_dropout_mask_and_leaves_the_generator_as_it_was():
    """The replay restores the forward's random state (the same dropout mask, so the same statistics)
    and puts the generator back: the draws after backward are those of a run without checkpointing."""

    def run(checkpointed):
        vkml.manual_seed(3)
        net = vkml.nn.Sequential(vkml.nn.Dropout(0.5), vkml.nn.BatchNorm1d(3))
        x = vkml.tensor(X, requires_grad=True)
        y = vkml_checkpoint.checkpoint(net, x, use_reentrant=False) if checkpointed else net(x)
        (y * y).sum().backward()
        return net[1].running_mean, x.grad, vkml.rand(3)

    plain_mean, plain_grad, plain_next = run(False)
    mean, grad, after = run(True)
    assert after.tolist() == plain_next.tolist()
    assert grad.tolist() == plain_grad.tolist()
    # two updates with the same batch mean m: (1 - 0.1)^2 * 0 + (1 - 0.9^2) m, where one gives 0.1 m
    np.testing.assert_allclose(mean.numpy(), plain_mean.numpy() * 1.9, rtol=1e-6)


def test_hook_registered_before_an_inplace_write_fires_with_the_old_values_gradient():
    """``y.register_hook(h); y.mul_(3)``: PyTorch calls ``h`` with the gradient of y's old value (vkml
    dropped it); a hook registered after the write gets the new value's gradient."""
    seen = {}
    for lib in (vkml, torch):
        calls = []
        x = lib.ones(2, requires_grad=True)
        y = x * x
        y.register_hook(lambda g, calls=calls: calls.append(("before", g.tolist())))
        y.mul_(3)
        y.register_hook(lambda g, calls=calls: calls.append(("after", g.tolist())))
        y.add_(1)
        y.sum().backward()
        seen[lib.__name__] = (calls, x.grad.tolist())
    assert seen["vkml"] == seen["torch"] == ([("after", [1.0, 1.0]), ("before", [3.0, 3.0])], [6.0, 6.0])


FILL_DIAGONAL = [
    ((3, 3), {}, "float32", -np.inf),
    ((2, 4), {}, "float32", 7.0),
    ((7, 3), {"wrap": True}, "float32", 1.0),
    ((7, 3), {}, "float32", 1.0),
    ((4, 3), {"wrap": True}, "float32", 1.0),  # one row taller than wide: nothing wraps
    ((2, 2, 2), {}, "float32", 5.0),
    ((3, 3), {}, "int32", 1.5),  # the value converts as fill_'s does
    ((2, 2), {}, "bool", 2),
]


@pytest.mark.parametrize("shape, kwargs, dtype, value", FILL_DIAGONAL)
def test_fill_diagonal_matches_pytorch(shape, kwargs, dtype, value):
    """``sim.fill_diagonal_(float('-inf'))`` of an NT-Xent loss: vkml had no ``Tensor.fill_diagonal_``."""
    start = np.arange(int(np.prod(shape))).reshape(shape) % 3
    got = vkml.tensor(start, dtype=getattr(vkml, dtype))
    want = torch.tensor(start, dtype=getattr(torch, dtype))
    assert got.fill_diagonal_(value, **kwargs) is got
    want.fill_diagonal_(value, **kwargs)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_fill_diagonal_errors_and_gradient_match_pytorch():
    for lib in (vkml, torch):
        with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
            lib.zeros(3).fill_diagonal_(1)
        with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
            lib.zeros(2, 3, 2).fill_diagonal_(1)
    grads = []
    for lib in (vkml, torch):
        x = lib.ones(3, 3, requires_grad=True)
        y = x * 2
        y.fill_diagonal_(0.0)
        (y * y).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]


def _critic(lib):
    """A WGAN-GP critic: strided conv, LeakyReLU, Linear, with fixed weights."""
    net = lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3, 2, 1), lib.nn.LeakyReLU(0.2), lib.nn.Flatten(), lib.nn.Linear(8, 1))
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    return net


def test_gradients_come_back_row_major_so_view_works_as_in_pytorch():
    """WGAN-GP's ``gradients.view(gradients.size(0), -1)`` of a conv critic's input gradient, and
    ``p.grad.view(-1)`` of a Linear weight: PyTorch's gradients are row-major there, vkml's were a
    transposed product and a slice of a padded tensor, and ``view`` raised."""
    results = []
    for lib in (vkml, torch):
        critic = _critic(lib)
        rng = np.random.default_rng(1)
        real, fake = (lib.tensor(rng.standard_normal((2, 1, 4, 4)).astype(np.float32)) for _ in range(2))
        interp = (0.3 * real + 0.7 * fake).requires_grad_(True)
        d = critic(interp)
        (g,) = lib.autograd.grad(d, interp, grad_outputs=lib.ones_like(d), create_graph=True)
        assert g.is_contiguous()
        penalty = ((g.view(g.size(0), -1).norm(2, dim=1) - 1) ** 2).mean() * 10
        (critic(fake).mean() - critic(real).mean() + penalty).backward()
        grads = [p.grad for p in critic.parameters()]
        assert all(g is None or g.is_contiguous() for g in grads)
        flat = lib.cat([g.view(-1) for g in grads if g is not None])
        results.append([penalty.item(), *flat.tolist()])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_cuda_get_device_properties_reports_the_vulkan_device(gpu):
    """``torch.cuda.get_device_properties(0).total_memory`` (a training script sizing its batch): vkml had
    no ``get_device_properties``."""
    props = vkml.cuda.get_device_properties(gpu.index)
    assert props == vkml.cuda.get_device_properties(gpu)
    assert props.name == vkml.cuda.get_device_name(gpu.index)
    assert (props.major, props.minor) == vkml.cuda.get_device_capability(gpu.index)
    assert props.total_memory == vkml.cuda.mem_get_info(gpu.index)[1] > 0
    assert props.warp_size >= 1 and props.max_threads_per_block >= props.warp_size
    assert not hasattr(props, "multi_processor_count")
    with pytest.raises(ValueError, match="Expected a cuda device"):
        vkml.cuda.get_device_properties("cpu")
