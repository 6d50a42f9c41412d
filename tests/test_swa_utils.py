"""vkml.optim.swa_utils against torch.optim.swa_utils on the CPU: averages, BN statistics, SWALR."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.optim.swa_utils

import vkml
import vkml.optim.swa_utils

RNG = np.random.default_rng(11)
STATES = [
    {k: RNG.standard_normal(shape).astype(np.float32) for k, shape in (("0.weight", (3, 2)), ("0.bias", (3,)))}
    for _ in range(4)
]
BATCHES = [RNG.standard_normal((5, 2)).astype(np.float32) for _ in range(3)]


def _model(lib):
    return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))


def _average(lib, swa, kind):
    model = _model(lib)
    averaged = {
        "swa": lambda: swa.AveragedModel(model),
        "ema_multi": lambda: swa.AveragedModel(model, multi_avg_fn=swa.get_ema_multi_avg_fn(0.9)),
        "ema": lambda: swa.AveragedModel(model, avg_fn=swa.get_ema_avg_fn(0.7)),
        "swa_buffers": lambda: swa.AveragedModel(model, use_buffers=True),
        "swa_multi": lambda: swa.AveragedModel(model, multi_avg_fn=swa.get_swa_multi_avg_fn()),
    }[kind]()
    for state in STATES:
        with lib.no_grad():
            for name, value in model.state_dict().items():
                if name in state:
                    value.copy_(lib.tensor(state[name]))
        model(lib.tensor(BATCHES[0]))  # moves the BatchNorm statistics
        averaged.update_parameters(model)
    swa.update_bn([(lib.tensor(b),) for b in BATCHES], averaged)
    return {k: v.detach().numpy() for k, v in averaged.state_dict().items()}


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema", "swa_buffers", "swa_multi"])
def test_averaged_model_matches_torch(kind):
    ours, theirs = _average(vkml, vkml.optim.swa_utils, kind), _average(torch, torch.optim.swa_utils, kind)
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6, atol=1e-7, err_msg=key)


@pytest.mark.parametrize("strategy, epochs", [("cos", 3), ("linear", 2), ("cos", 0)])
def test_swalr_matches_torch(strategy, epochs):
    rates = []
    for lib in (vkml, torch):
        opt = lib.optim.SGD(lib.nn.Linear(1, 1).parameters(), lr=0.8)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
        seen = [sched.get_last_lr()[0]]
        for _ in range(5):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr()[0])
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy"):
        vkml.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="step")
