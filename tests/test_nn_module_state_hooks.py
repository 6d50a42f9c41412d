"""Module's state-dict hooks, extra state, set_submodule, to_empty and type, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _counter(lib):
    class Counter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.count = 3

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    return Counter()


@pytest.mark.parametrize("lib", [torch, vkml], ids=["torch", "vkml"])
def test_extra_state_round_trips_under_its_key(lib):
    m = _counter(lib)
    state = m.state_dict()
    assert list(state) == ["_extra_state", "lin.weight", "lin.bias"]
    other = _counter(lib)
    other.count = 0
    other.load_state_dict(state)
    assert other.count == 3
    del state["_extra_state"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
        other.load_state_dict(state)


@pytest.mark.parametrize("lib", [torch, vkml], ids=["torch", "vkml"])
def test_state_dict_hooks_see_and_edit(lib):
    seen = []
    net = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
    net.register_state_dict_pre_hook(lambda m, prefix, keep_vars: seen.append(("pre", prefix)))

    def drop_bias(m, sd, prefix, meta):
        del sd[prefix + "bias"]

    net[0].register_state_dict_post_hook(drop_bias)
    state = net.state_dict()
    assert seen == [("pre", "")] and list(state) == ["0.weight"]

    def rename(module, sd, prefix, meta, strict, missing, unexpected, errors):
        if prefix + "w" in sd:
            sd[prefix + "weight"] = sd.pop(prefix + "w")

    net[0].register_load_state_dict_pre_hook(rename)
    net.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
    result = net.load_state_dict({"0.w": np.ones((3, 2), np.float32) if lib is vkml else torch.ones(3, 2)})
    assert result.missing_keys == [] and net[0].weight.sum().item() == 6.0
    net.register_state_dict_post_hook(lambda m, sd, prefix, meta: sd)
    with pytest.raises(RuntimeError, match="post-hook must return None"):
        net.state_dict()


@pytest.mark.parametrize("lib", [torch, vkml], ids=["torch", "vkml"])
def test_set_submodule_to_empty_and_type(lib):
    net = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(2, 2)), lib.nn.ReLU())
    net.set_submodule("0.0", lib.nn.Linear(2, 5))
    assert net[0][0].out_features == 5
    with pytest.raises(AttributeError):
        net.set_submodule("0.missing", lib.nn.ReLU(), strict=True)
    assert net.type(lib.float16) is net and net[0][0].weight.dtype == lib.float16
    empty = net.to_empty(device="cpu")
    assert empty is net and tuple(net[0][0].weight.shape) == (5, 2)
    assert net.share_memory() is net and net.compile() is None
