"""The gaps the official-tutorial programs of tests/test_programs_v.py found, each against PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from optest import assert_same_bits, skip_before_pytorch

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


def _sine_gradient(m):
    """The YouTube series' autograd page: ``torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)``
    through ``sin``, doubled, summed and backpropagated; ``a.grad`` is ``2 cos(a)``."""
    a = m.linspace(0.0, 2.0 * math.pi, steps=25, requires_grad=True)
    (2 * m.sin(a) + 1).sum().backward()
    return a.detach().numpy(), a.grad.numpy()


def test_linspace_values_and_their_sine_gradient_are_pytorchs():
    (want_a, want_grad), (got_a, got_grad) = _sine_gradient(torch), _sine_gradient(vkml)
    assert_same_bits(got_a, want_a, "linspace(0, 2 pi, 25)")  # a[19] was an ulp off: its cosine 15 ulps
    np.testing.assert_allclose(got_grad, want_grad, rtol=2e-7, atol=1e-7)


def test_logspace_is_pytorchs_float64_power_rounded_once():
    """Probing the fix above: PyTorch's logspace computes the exponents and ``std::pow`` in float64 (no fused
    multiply-add there); vkml's float32 logspace took float32 powers of float32 exponents."""
    skip_before_pytorch(2, 13, "logspace's float64 last bits differ in PyTorch 2.11 (the GPU machine's)")
    for args in [(-3.0, 2.0, 50), (0.25, 0.9, 137), (-6.97, -0.66, 382, 3.5)]:
        for dtype in ("float32", "float64"):
            got = vkml.logspace(*args, dtype=getattr(vkml, dtype)).numpy()
            assert_same_bits(got, torch.logspace(*args, dtype=getattr(torch, dtype)).numpy(), f"logspace{args}")
