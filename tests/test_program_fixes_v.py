"""The gaps the official-tutorial programs of tests/test_programs_v.py found, each against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _final_states(m, cls, **kwargs):
    """The sequence models tutorial's ``print(out); print(hidden)`` of an RNN's final states, with PyTorch's weights."""
    torch.manual_seed(0)
    reference = getattr(torch.nn, cls)(3, 4, **kwargs)
    net = getattr(m.nn, cls)(3, 4, **kwargs)
    net.load_state_dict({k: m.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    x = m.tensor(np.sin(np.arange(30, dtype=np.float32)).reshape(5, 2, 3))
    _, hidden = net(x)
    states = hidden if isinstance(hidden, tuple) else (hidden,)
    return [[state.grad_fn.name(), len(state.grad_fn.next_functions), state.detach().numpy()] for state in states]


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [("LSTM", {}), ("GRU", {"num_layers": 2}), ("RNN", {"bidirectional": True}), ("LSTM", {"num_layers": 2})],
)
def test_rnn_final_states_show_pytorchs_stack_node(cls, kwargs):
    want, got = _final_states(torch, cls, **kwargs), _final_states(vkml, cls, **kwargs)
    assert [state[:2] for state in got] == [state[:2] for state in want]
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g[2], w[2], rtol=1e-5, atol=1e-6)
