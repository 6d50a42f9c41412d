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
