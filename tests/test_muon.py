"""``optim.Muon`` against ``torch.optim.Muon``: the same steps to bfloat16's precision (its Newton-Schulz
iteration runs in bfloat16, rounded per op in vkml, once per addmm in PyTorch), the same bits on CPU and
lavapipe, and PyTorch's argument errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(12)
W = RNG.standard_normal((6, 4)).astype(np.float32)
X = RNG.standard_normal((5, 6)).astype(np.float32)


def _train(lib, device=None, **options):
    kw = {} if device is None else {"device": device}
    w = lib.nn.Parameter(lib.tensor(W, **kw))
    opt = lib.optim.Muon([w], **options)
    for _ in range(3):
        opt.zero_grad()
        loss = ((lib.tensor(X, **kw) @ w) ** 2).mean()
        loss.backward()
        opt.step()
    return w.detach().numpy()


@pytest.mark.parametrize(
    "options", [{}, {"nesterov": False, "adjust_lr_fn": "match_rms_adamw", "lr": 0.02, "weight_decay": 0.0}]
)
def test_muon_steps_as_pytorch_to_bfloat16_precision(options, gpu):
    want = _train(torch, **options)
    got = _train(vkml, **options)
    moved = np.abs(want - W).max()
    assert moved > 0 and np.abs(got - want).max() <= 0.05 * moved  # bfloat16 carries 8 bits
    np.testing.assert_array_equal(_train(vkml, gpu, **options), got)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lr": -1.0}, "Learning rate should be >= 0"),
        ({"momentum": -0.5}, "momentum should be >= 0"),
        ({"weight_decay": -1.0}, "weight decay should be >= 0"),
        ({"adjust_lr_fn": "other"}, "Adjust learning rate function other is not supported"),
    ],
)
def test_muon_checks_its_arguments_as_pytorch(kwargs, message):
    for lib in (torch, vkml):
        with pytest.raises(ValueError, match=message):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(2, 2))], **kwargs)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        vkml.optim.Muon([vkml.nn.Parameter(vkml.ones(2))])
