"""vkml.utils.checkpoint: the values, gradients and warnings of torch.utils.checkpoint."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import vkml
import vkml.utils.checkpoint

W = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)


def _run(lib, checkpoint_module, use_reentrant, x_requires_grad):
    layer = lib.nn.Linear(4, 4)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(W))
        layer.bias.zero_()
    x = lib.tensor(W[0], requires_grad=x_requires_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kwargs = {} if use_reentrant == "unset" else {"use_reentrant": use_reentrant}
        out = checkpoint_module.checkpoint(lambda t: layer(t).tanh(), x, **kwargs)
    messages = sorted(str(w.message).split(".")[0] for w in caught)
    grad = None
    if out.requires_grad:
        out.sum().backward()
        grad = layer.weight.grad.numpy()
    return out.detach().numpy(), out.requires_grad, grad, messages


@pytest.mark.parametrize("use_reentrant", [True, False, "unset"])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_checkpoint_matches_torch(use_reentrant, x_requires_grad):
    ours = _run(vkml, vkml.utils.checkpoint, use_reentrant, x_requires_grad)
    theirs = _run(torch, torch.utils.checkpoint, use_reentrant, x_requires_grad)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1] == theirs[1]  # reentrant with no input requiring grad: no graph, as PyTorch
    if theirs[2] is not None:
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5)
    assert ours[3] == theirs[3]


def test_checkpoint_sequential_and_errors():
    seq = vkml.nn.Sequential(vkml.nn.Linear(3, 3), vkml.nn.ReLU(), vkml.nn.Linear(3, 2))
    x = vkml.ones(1, 3, requires_grad=True)
    out = vkml.utils.checkpoint.checkpoint_sequential(seq, 2, x, use_reentrant=True)
    np.testing.assert_array_equal(out.detach().numpy(), seq(x).detach().numpy())
    out.sum().backward()
    assert seq[0].weight.grad is not None
    with pytest.raises(ValueError, match="Unexpected keyword arguments: b"):
        vkml.utils.checkpoint.checkpoint(lambda a, b=1: a, x, b=2, use_reentrant=True)


def _hook_order(lib, checkpoint_module, call):
    """The module hooks that fire in the forward and in backward's replay of a checkpointed
    Sequential (Linear, ReLU, Dropout(p=0), Linear), and the input's gradient."""
    log = []
    lib.manual_seed(0)
    seq = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Dropout(0.0), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for layer in (seq[0], seq[3]):
            layer.weight.copy_(lib.tensor(W[: layer.weight.shape[0], : layer.weight.shape[1]]))
    for i, layer in enumerate(seq):
        layer.register_forward_pre_hook(lambda mod, args, i=i: log.append(f"pre{i}"))
        layer.register_forward_hook(lambda mod, args, out, i=i: log.append(f"post{i}"))
    seq.register_forward_hook(lambda mod, args, out: log.append("post_seq"))
    x = lib.tensor(W[:2, :3], requires_grad=True)
    out = call(checkpoint_module, seq, x)
    log.append("backward")
    out.sum().backward()
    return log, x.grad.numpy()


HOOK_CALLS = {
    "reentrant": lambda c, seq, x: c.checkpoint(seq, x, use_reentrant=True),
    "non_reentrant": lambda c, seq, x: c.checkpoint(seq, x, use_reentrant=False),
    "no_early_stop": lambda c, seq, x: c.checkpoint(seq, x, use_reentrant=False, early_stop=False),
    "set_checkpoint_early_stop": lambda c, seq, x: _without_early_stop(c, seq, x),
    "sequential": lambda c, seq, x: c.checkpoint_sequential(seq, 2, x, use_reentrant=False),
    "sequential_reentrant": lambda c, seq, x: c.checkpoint_sequential(seq, 2, x, use_reentrant=True),
    "saves_nothing": lambda c, seq, x: c.checkpoint(lambda t: (t + 1).reshape(3, 2) * 2.0, x, use_reentrant=False),
}


def _without_early_stop(c, seq, x):
    with c.set_checkpoint_early_stop(False):
        return c.checkpoint(seq, x, use_reentrant=False)


@pytest.mark.parametrize("name", sorted(HOOK_CALLS))
def test_replay_fires_pytorchs_hooks(name):
    """PyTorch's non-reentrant replay stops inside the op that saves the segment's last tensor (the
    last Linear here): the checkpointed module's own forward hook does not fire again."""
    got, got_grad = _hook_order(vkml, vkml.utils.checkpoint, HOOK_CALLS[name])
    want, want_grad = _hook_order(torch, torch.utils.checkpoint, HOOK_CALLS[name])
    assert got == want
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-6)


def _random_state_after_replay(lib, checkpoint_module, reentrant, preserve):
    """(whether the replay's dropout mask is the forward's, whether the random numbers drawn after
    backward are those a run without the replay draws)."""
    lib.manual_seed(0)
    drop = lib.nn.Dropout(0.5)
    masks = []
    drop.register_forward_hook(lambda mod, args, out: masks.append(out.detach().numpy() != 0))
    x = lib.ones(64, requires_grad=True)
    out = checkpoint_module.checkpoint(lambda t: drop(t) * t, x, use_reentrant=reentrant, preserve_rng_state=preserve)
    out.sum().backward()
    after = lib.rand(8).numpy()
    lib.manual_seed(0)
    drop(lib.ones(64))
    return bool((masks[0] == masks[1]).all()), bool((lib.rand(8).numpy() == after).all())


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("preserve", [True, False])
def test_preserve_rng_state_replays_the_mask_and_forks_the_generator(reentrant, preserve):
    got = _random_state_after_replay(vkml, vkml.utils.checkpoint, reentrant, preserve)
    want = _random_state_after_replay(torch, torch.utils.checkpoint, reentrant, preserve)
    assert got == want


def test_non_reentrant_replay_writes_the_inputs_as_pytorchs():
    """PyTorch's non-reentrant replay runs the segment on its inputs themselves: an in-place write to
    one there bumps its version again, and backward's version check raises."""
    for lib, module in ((vkml, vkml.utils.checkpoint), (torch, torch.utils.checkpoint)):
        lin = lib.nn.Linear(3, 3)
        x = lib.ones(2, 3, requires_grad=True) * 1
        out = module.checkpoint(lambda t, lin=lin: lin(t.mul_(2)).relu_(), x, use_reentrant=False)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
