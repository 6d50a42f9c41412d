"""``optim.Adafactor`` against ``torch.optim.Adafactor``: factored (matrix, batched) and full (vector) second
moments, weight decay, maximize, a given eps1, its state dict and its argument errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(4)
W = RNG.standard_normal((2, 4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)
X = RNG.standard_normal((2, 5, 4)).astype(np.float32)


@pytest.mark.parametrize(
    "options",
    [{}, {"lr": 0.05, "weight_decay": 0.01}, {"maximize": True, "eps": (1e-20, 1e-3), "d": 2.0}],
    ids=["defaults", "decay", "maximize"],
)
def test_adafactor_follows_pytorch(options):
    results = []
    for lib in (torch, vkml):
        w, b = lib.nn.Parameter(lib.tensor(W)), lib.nn.Parameter(lib.tensor(B))
        opt = lib.optim.Adafactor([w, b], **options)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = ((lib.tensor(X) @ w + b) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        state = opt.state_dict()["state"]
        results.append((w.detach().numpy(), b.detach().numpy(), losses, float(state[0]["step"]), sorted(state[0])))
    (w1, b1, l1, s1, k1), (w2, b2, l2, s2, k2) = results
    np.testing.assert_allclose(w2, w1, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(b2, b1, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(l2, l1, rtol=2e-6)
    assert (s1, k1) == (s2, k2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lr": -1.0}, "Learning rate should be >= 0"),
        ({"beta2_decay": 0.5}, "beta2_decay should be <= 0"),
        ({"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0"),
        ({"d": 0.5}, "Clipping threshold d should be >= 1"),
        ({"weight_decay": -1.0}, "weight_decay should be >= 0"),
    ],
)
def test_adafactor_checks_its_arguments_as_pytorch(kwargs, message):
    for lib in (torch, vkml):
        with pytest.raises(ValueError, match=message):
            lib.optim.Adafactor([lib.nn.Parameter(lib.ones(2))], **kwargs)
