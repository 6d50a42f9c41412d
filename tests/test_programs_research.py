"""Eleven more ordinary PyTorch training programs (tests/programs/) run under vkml as under PyTorch,
by their import lines alone: idioms of research reference code.

A GCN / GraphSAGE with message passing by hand (gcn_node_classification), a U-Net with Dice + BCE
(unet_segmentation), a physics-informed network with second derivatives by ``autograd.grad``
(pinn_burgers), MAML on sine waves (maml_sine), a RealNVP flow (realnvp_flow), knowledge distillation
(distillation), a CTC speech model (ctc_speech), an LSTM text classifier over packed sequences
(text_classifier), a mixture density network (mixture_density) and a DQN with a replay memory and a
target network (dqn_replay) and a VQ-VAE with an EMA codebook (vqvae_ema); each docstring lists the idioms
it checks. As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict
loaded into the vkml model, and both train on the same data with their random draws off; every
number must agree to the program's tolerance.

Each compiles tens of kernels on the CPU interpreter (5 to 25 s on CI's 2 cores), so the comparisons
run with ``make test-all`` (``-m stress``), as do the GCN's and the mixture density network's runs on
lavapipe, which must give the CPU backend's bits. The gaps the programs and their probes found have
short tests of their own in ``make test`` (tests/test_research_program_idioms.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers

# name: (steps, rtol)
PROGRAMS = {
    "gcn_node_classification": (3, 1e-4),
    "unet_segmentation": (2, 1e-4),
    "pinn_burgers": (3, 1e-4),
    "maml_sine": (2, 1e-4),
    "realnvp_flow": (3, 1e-4),
    "distillation": (3, 2e-4),  # the KL term is a small difference of larger sums
    "ctc_speech": (3, 1e-4),
    "text_classifier": (3, 1e-4),
    "mixture_density": (4, 1e-4),
    "dqn_replay": (4, 1e-4),
    "vqvae_ema": (3, 1e-4),
}


def _run(name, backend, monkeypatch, initial=None, device=None, constants=None):
    steps, _ = PROGRAMS[name]
    constants = dict(constants or {}, **({} if device is None else {"DEVICE": device}))
    program = _load(name, backend, monkeypatch, constants=constants)
    model = program.build()
    if initial is None:
        initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict({key: program.torch.tensor(value) for key, value in initial.items()})
    return initial, program.train(model, steps=steps)


def _compare(name, monkeypatch, device=None, constants=None):
    steps, rtol = PROGRAMS[name]
    initial, expected = _run(name, "torch", monkeypatch, constants=constants)
    _, got = _run(name, "vkml", monkeypatch, initial, device, constants)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == steps and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=1e-6, err_msg=name)
    return got


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    _compare(name, monkeypatch)


@pytest.mark.stress
@pytest.mark.parametrize("name", ["gcn_node_classification", "mixture_density"])
def test_program_same_bits_on_vulkan(name, monkeypatch, gpu):
    """On a Vulkan device each number is the CPU backend's, bit for bit (and so PyTorch's, as above)."""
    initial, expected = _run(name, "torch", monkeypatch)
    _, on_cpu = _run(name, "vkml", monkeypatch, initial)
    _, on_vulkan = _run(name, "vkml", monkeypatch, initial, device=str(gpu))
    assert _numbers(on_vulkan) == _numbers(on_cpu)
    np.testing.assert_allclose(_numbers(on_vulkan), _numbers(expected), rtol=PROGRAMS[name][1], atol=1e-6)
