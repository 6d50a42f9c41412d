"""``nn.AdaptiveLogSoftmaxWithLoss`` against PyTorch's: outputs, loss, gradients, ``log_prob``, ``predict``,
its state dict keys, a 0-d target and the errors; CPU and lavapipe give the same bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(8)
X = RNG.standard_normal((9, 16)).astype(np.float32)
Y = np.array([0, 4, 5, 11, 12, 19, 7, 2, 15])


def _pair(device="cpu"):
    torch.manual_seed(1)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs=[5, 12], div_value=2.0, head_bias=True)
    ours = vkml.nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs=[5, 12], div_value=2.0, head_bias=True)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ours.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours.to(device), theirs


def test_adaptive_softmax_matches_pytorch(gpu):
    results = []
    for device in ("cpu", gpu):
        ours, theirs = _pair(device)
        got = ours(vkml.tensor(X, device=device), vkml.tensor(Y, device=device))
        want = theirs(torch.tensor(X), torch.tensor(Y))
        np.testing.assert_allclose(got.output.detach().numpy(), want.output.detach().numpy(), rtol=1e-5, atol=1e-5)
        got.loss.backward()
        want.loss.backward()
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
        log_prob = ours.log_prob(vkml.tensor(X, device=device)).detach().numpy()
        np.testing.assert_allclose(log_prob, theirs.log_prob(torch.tensor(X)).detach().numpy(), rtol=1e-5, atol=1e-5)
        assert ours.predict(vkml.tensor(X, device=device)).tolist() == theirs.predict(torch.tensor(X)).tolist()
        results.append((got.output.detach().numpy(), log_prob))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_adaptive_softmax_takes_a_single_sample_and_raises_as_pytorch():
    ours, theirs = _pair()
    single = ours(vkml.tensor(X[0]), vkml.tensor(3))
    assert (
        tuple(single.output.shape) == ()
        and abs(single.loss.item() - theirs(torch.tensor(X[0]), torch.tensor(3)).loss.item()) < 1e-5
    )
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        ours(vkml.tensor(X[:2]), vkml.tensor([0, 25]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        ours(vkml.tensor(X[:2]), vkml.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        vkml.nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs=[12, 5])
