"""``load_state_dict(assign=True)`` and ``strict=False``'s report, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _model(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
    model[0].bias.requires_grad_(False)
    return model


def _assign(lib):
    model = _model(lib)
    state = {k: v.clone() * 0 + 2 for k, v in model.state_dict().items()}
    state["0.weight"] = lib.ones(4, 3, dtype=lib.float64)
    result = model.load_state_dict(state, assign=True)
    weight, bias, mean = model[0].weight, model[0].bias, model[1].running_mean
    return {
        "result": repr(result),
        "weight": (type(weight).__name__, str(weight.dtype).split(".")[-1], weight.requires_grad),
        "bias": (type(bias).__name__, bias.requires_grad),
        "buffer_is_given": mean is state["1.running_mean"],
        "param_is_given": weight is state["0.weight"],
        "values": model[0].weight.tolist() + model[0].bias.tolist(),
    }


def test_assign_puts_the_state_dicts_tensors_in_place():
    assert _assign(vkml) == _assign(torch)


def test_assigned_parameters_train():
    def step(lib):
        model = _model(lib)
        model.load_state_dict({k: v * 1.5 for k, v in model.state_dict().items()}, assign=True)
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        model(lib.arange(12.0).reshape(4, 3).sin()).pow(2).sum().backward()
        opt.step()
        return [p.detach().numpy() for p in model.parameters()]

    for a, b in zip(step(torch), step(vkml), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("assign", [False, True])
def test_strict_false_reports_keys_as_torch(assign):
    def load(lib):
        model = _model(lib)
        state = dict(model.state_dict())
        del state["0.bias"]
        state["extra.weight"] = lib.zeros(1)
        result = model.load_state_dict(state, strict=False, assign=assign)
        return repr(result), str(result), result.missing_keys, result.unexpected_keys, type(result).__name__

    assert load(vkml) == load(torch)


def test_a_mmap_loaded_checkpoint_assigns_into_a_meta_model(tmp_path):
    """lit-gpt's load: ``torch.load(path, mmap=True, weights_only=True)`` into a model built on meta."""

    def load(lib):
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save(_model(lib).state_dict(), path)
        with lib.device("meta"):
            model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
        model.load_state_dict(lib.load(path, mmap=True, weights_only=True), assign=True)
        with open(path, "rb") as handle, pytest.raises(ValueError, match="f must be a file path in order to use"):
            lib.load(handle, mmap=True)
        model.eval()
        return [p.is_meta for p in model.parameters()], model(lib.arange(6.0).reshape(2, 3)).tolist()

    got, want = load(vkml), load(torch)
    assert got[0] == want[0] == [False, False, False, False]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
