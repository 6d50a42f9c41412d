"""Modules holding public functions (``self.act = F.relu``) pickle and deepcopy them by reference, as torch's."""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest
import torch

import vkml


class TorchBlock(torch.nn.Module):
    def __init__(self, act, gate):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.act, self.gate = act, gate

    def forward(self, x):
        return self.gate(self.act(self.lin(x)))


class VkmlBlock(vkml.nn.Module):
    def __init__(self, act, gate):
        super().__init__()
        self.lin = vkml.nn.Linear(3, 3)
        self.act, self.gate = act, gate

    def forward(self, x):
        return self.gate(self.act(self.lin(x)))


# (nn.functional name, top-level name) pairs a model keeps as attributes
_PAIRS = [("relu", "tanh"), ("gelu", "sigmoid"), ("silu", "exp"), ("softplus", "abs")]


@pytest.mark.parametrize("act,gate", _PAIRS)
def test_public_functions_pickle_by_reference(act, gate):
    for lib in (torch, vkml):
        for fn in (getattr(lib.nn.functional, act), getattr(lib, gate)):
            assert pickle.loads(pickle.dumps(fn)) is fn


@pytest.mark.parametrize("act,gate", _PAIRS)
def test_a_module_with_function_attributes_round_trips(act, gate):
    outputs = []
    for lib in (torch, vkml):
        lib.manual_seed(0)
        block = (TorchBlock if lib is torch else VkmlBlock)(getattr(lib.nn.functional, act), getattr(lib, gate))
        x = lib.arange(6.0).reshape(2, 3) / 4
        loaded = pickle.loads(pickle.dumps(block))
        copied = copy.deepcopy(block)
        buffer = io.BytesIO()
        lib.save(block, buffer)
        buffer.seek(0)
        saved = lib.load(buffer, weights_only=False)
        assert loaded.act is copied.act is saved.act is block.act
        results = [m(x).detach().numpy() for m in (block, loaded, copied, saved)]
        for r in results[1:]:
            np.testing.assert_array_equal(r, results[0])
        outputs.append(results[0])
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-6, atol=1e-6)
