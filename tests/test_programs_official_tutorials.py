"""Six more official PyTorch tutorials and recipes (tests/programs/) run under vkml as under PyTorch, by
their import lines alone: "Learning PyTorch with Examples" (pytorch_with_examples), the torch.func
tutorials on Jacobians, ensembling and neural tangent kernels (func_tutorials), forward-mode AD
(forward_ad_tutorial), the character-level RNN name classifier (char_rnn_names), translation with
nn.Transformer (translation_transformer), and the warmstarting, zeroing-gradients and profiler recipes
(recipes_warmstart_profiler); each docstring lists the idioms it checks.

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both run on the same synthetic data with their random draws off; every number must
agree. Each compiles tens of kernels on the CPU interpreter, so the comparisons run with
``make test-all`` (``-m stress``); the gap they found (vkml.autograd.forward_ad) has short tests of its
own in tests/test_forward_ad.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _numbers, run_program

# name: steps
PROGRAMS = {
    "pytorch_with_examples": 3,
    "func_tutorials": 2,
    "forward_ad_tutorial": 3,
    "char_rnn_names": 4,
    "translation_transformer": 3,
    "recipes_warmstart_profiler": 2,
}


def _run(name, backend, monkeypatch, initial=None, deterministic=True):
    return run_program(name, backend, monkeypatch, PROGRAMS[name], initial, deterministic=deterministic)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    initial, expected = _run(name, "torch", monkeypatch)
    _, got = _run(name, "vkml", monkeypatch, initial)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == PROGRAMS[name] and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.stress
def test_translation_runs_as_written(monkeypatch):
    """With live dropout in the transformer and its positional encoding, from vkml's generator."""
    _, result = _run("translation_transformer", "vkml", monkeypatch, deterministic=False)
    assert len(result["losses"]) == 3 and all(math.isfinite(x) for x in result["losses"])
    assert result["decoded"][0] == 2 and len(result["decoded"]) <= 10  # BOS first, at most max_len tokens
