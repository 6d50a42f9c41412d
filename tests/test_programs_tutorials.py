"""More official PyTorch tutorials and pytorch/examples programs (tests/programs/) run under vkml as
under PyTorch, by their import lines alone: the spatial transformer network (spatial_transformer), the
FGSM adversarial examples over the quickstart's loops (fgsm_attack), transfer learning with a frozen
backbone (transfer_learning) and the super-resolution example (super_resolution); each docstring lists
the idioms it checks.

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data with their random draws off; every number must agree. Each
compiles tens of kernels on the CPU interpreter (a few seconds on CI's 2 cores), so the comparisons run
with ``make test-all`` (``-m stress``), as do the spatial transformer's and the super-resolution net's runs
on lavapipe, which must give the CPU backend's bits; the gaps the programs found have short tests of their
own (tests/test_tutorial_program_gaps.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _numbers, compare_program, run_program

# name: steps
PROGRAMS = {
    "spatial_transformer": 3,
    "fgsm_attack": 8,  # the attack needs test images the model already classifies right
    "transfer_learning": 4,  # two epochs of a train and a val phase
    "super_resolution": 4,
}


def _run(name, backend, monkeypatch, initial=None, deterministic=True):
    return run_program(name, backend, monkeypatch, PROGRAMS[name], initial, deterministic=deterministic)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    compare_program(name, monkeypatch, PROGRAMS[name], rtol=1e-4)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_runs_as_written(name, monkeypatch):
    """With live dropout and shuffled batches from vkml's generator."""
    _, result = _run(name, "vkml", monkeypatch, deterministic=False)
    assert len(result["losses"]) == PROGRAMS[name] and all(math.isfinite(x) for x in result["losses"])


@pytest.mark.stress
@pytest.mark.parametrize("name", ["spatial_transformer", "super_resolution"])
def test_program_same_bits_on_vulkan(name, monkeypatch, gpu):
    """With a Vulkan default device each number is the CPU backend's, bit for bit: the spatial transformer's
    grid_sample reads its coordinates back to the host inside a trained model."""
    import vkml

    initial, expected = _run(name, "torch", monkeypatch)
    _, on_cpu = _run(name, "vkml", monkeypatch, initial)
    vkml.set_default_device(gpu)
    try:
        _, on_vulkan = _run(name, "vkml", monkeypatch, initial)
        assert vkml.zeros(1).device is gpu  # what the program makes (data, model) is made there
    finally:
        vkml.set_default_device(None)
    assert _numbers(on_vulkan) == _numbers(on_cpu)
    np.testing.assert_allclose(_numbers(on_vulkan), _numbers(expected), rtol=1e-4, atol=1e-6)
