"""Optimizer state as PyTorch holds it in a checkpoint: group keys and defaults, ``step`` as a 0-d float32
tensor, int steps loaded, ``add_param_group`` and the schedulers' ``state_dict``, against torch."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import vkml

_NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD"]


def _stepped(lib, name, steps=1):
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    opt = getattr(lib.optim, name)(model.parameters(), lr=1e-2)
    for _ in range(steps):
        model(lib.arange(6.0).reshape(2, 3)).pow(2).sum().backward()
        opt.step()
        opt.zero_grad()
    return model, opt


def _plain(value):
    """A state dict's value as comparable Python data (a tensor as (dtype name, shape, values))."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return (str(value.dtype).split(".")[-1], tuple(value.shape), np.round(value.detach().numpy(), 5).tolist())
    return value


@pytest.mark.parametrize("name", _NAMES)
def test_state_dict_layout_and_defaults_are_torchs(name):
    layouts = []
    for lib in (torch, vkml):
        _, opt = _stepped(lib, name)
        sd = opt.state_dict()
        layouts.append(
            (
                sorted(sd["param_groups"][0].items()),
                {i: {k: _plain(v) for k, v in state.items()} for i, state in sd["state"].items()},
                inspect.signature(opt.zero_grad).parameters["set_to_none"].default,
            )
        )
    assert layouts[1] == layouts[0]


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop"])
def test_a_state_dict_with_int_steps_loads_and_steps_as_torch(name):
    weights = []
    for lib in (torch, vkml):
        model, opt = _stepped(lib, name, steps=2)
        sd = opt.state_dict()
        for state in sd["state"].values():
            state["step"] = int(state["step"].item())  # an older checkpoint's int step
        opt.load_state_dict(sd)
        model(lib.arange(6.0).reshape(2, 3)).pow(2).sum().backward()
        opt.step()
        weights.append((model.weight.detach().numpy(), float(opt.state_dict()["state"][0]["step"])))
    np.testing.assert_allclose(weights[1][0], weights[0][0], rtol=1e-5)
    assert weights[1][1] == weights[0][1] == 3.0


def test_add_param_group_and_scheduler_state_are_torchs():
    results = []
    for lib in (torch, vkml):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.Linear(3, 1))
        opt = lib.optim.AdamW(model[0].parameters(), lr=1e-2)
        opt.add_param_group({"params": model[1].parameters(), "lr": 1e-3, "weight_decay": 0.0})
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        for _ in range(3):
            opt.step()
            sched.step()
        groups = [sorted((k, v) for k, v in g.items() if k != "params") for g in opt.state_dict()["param_groups"]]
        results.append((groups, sched.get_last_lr(), sorted(sched.state_dict().items())))
    assert results[1] == results[0]
