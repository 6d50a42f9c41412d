"""Eight more ordinary PyTorch training programs (tests/programs/) run under vkml as under PyTorch,
by their import lines alone.

A nanoGPT-style train.py with bfloat16 autocast live on the CPU (gpt_amp_train), a DCGAN
(dcgan_weights_init), a convolutional VAE (vae_conv), an actor-critic on a hand-written environment
(actor_critic), a char-level GRU with truncated backpropagation (char_gru_tbptt), a CIFAR-style ResNet
(cifar_resnet), activation checkpointing with an EMA and gradient accumulation (ema_checkpointing)
and a SimCLR NT-Xent loop (simclr); each docstring lists the idioms it checks. As in
tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data; every loss and metric must agree to the program's
tolerance (gpt_amp_train's is bfloat16's: its matmuls round to 8 bits of mantissa in either
library, at points that differ by a float32 rounding). The random draws of the DCGAN, the VAE and
the actor-critic come from one numpy generator in both libraries (tests/test_programs_examples.py's
``_numpy_draws``), and shuffling is off (``DETERMINISTIC``); one more test runs each as written.

PyTorch's ``torch.compile`` runs inductor on its first call (tens of seconds on the CPU), so the
reference side calls the model itself; vkml's ``vkml.compile`` runs as the program calls it.

Each program compiles 40 to 150 kernels on the CPU interpreter (3 to 10 s on CI's 2 cores), so the
comparisons run with ``make test-all`` (``-m stress``) but for the actor-critic's; the fixes they
found have short tests of their own (tests/test_training_program_idioms.py, tests/test_amp.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers
from test_programs_examples import _numpy_draws

# name: (steps, rtol, whether its random draws come from numpy for the comparison)
PROGRAMS = {
    "gpt_amp_train": (3, 2e-3, False),
    "dcgan_weights_init": (2, 1e-4, True),
    "vae_conv": (2, 1e-4, True),
    "actor_critic": (2, 1e-4, True),
    "char_gru_tbptt": (3, 1e-4, False),
    "cifar_resnet": (2, 1e-4, False),
    "ema_checkpointing": (2, 1e-4, False),
    "simclr": (2, 1e-4, False),
}
SHORT = {"actor_critic"}  # in the default suite


def _run(name, backend, monkeypatch, initial=None, device=None, constants=None):
    steps, _, draws = PROGRAMS[name]
    constants = dict(constants or {}, **({} if device is None else {"DEVICE": device}))
    program = _load(name, backend, monkeypatch, constants=constants)
    if draws:
        _numpy_draws(program.torch, monkeypatch)
    if backend == "torch":
        monkeypatch.setattr(program.torch, "compile", lambda model, **options: model)
    model = program.build()
    if initial is None:
        initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict({key: program.torch.tensor(value) for key, value in initial.items()})
    return initial, program.train(model, steps=steps)


def _compare(name, monkeypatch, device=None, constants=None):
    steps, rtol, _ = PROGRAMS[name]
    initial, expected = _run(name, "torch", monkeypatch, constants=constants)
    _, got = _run(name, "vkml", monkeypatch, initial, device, constants)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == steps and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=() if name in SHORT else pytest.mark.stress) for name in PROGRAMS]
)
def test_program_matches_pytorch(name, monkeypatch):
    _compare(name, monkeypatch)


@pytest.mark.stress
@pytest.mark.parametrize(
    "name, constants",
    [
        ("gpt_amp_train", {"AMP_DTYPE": "float16"}),  # float16 autocast with the GradScaler enabled
        ("char_gru_tbptt", {"CELL": "LSTM"}),  # repackage_hidden over the (h, c) tuple
        ("simclr", {"MASK": "fill_diagonal_"}),
        ("cifar_resnet", {"SCHEDULE": "multistep"}),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())),
)
def test_program_variant_matches_pytorch(name, constants, monkeypatch):
    _compare(name, monkeypatch, constants=constants)


@pytest.mark.stress
@pytest.mark.parametrize("name", ["gpt_amp_train", "dcgan_weights_init"])
def test_program_matches_pytorch_on_vulkan(name, monkeypatch, gpu):
    """On a Vulkan device (``DEVICE = "cuda"``: the GPT's autocast is then Vulkan's, bfloat16 still)."""
    import vkml

    assert vkml.device("cuda") == gpu
    _compare(name, monkeypatch, device="cuda")


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_runs_as_written(name, monkeypatch):
    """Without the comparison's overrides: live dropout, shuffled batches, vkml's own random draws."""
    program = _load(name, "vkml", monkeypatch, deterministic=False)
    result = program.train(program.build(), steps=PROGRAMS[name][0])
    assert all(math.isfinite(x) for x in _numbers(result)), result
