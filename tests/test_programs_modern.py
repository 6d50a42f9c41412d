"""Modern training programs (tests/programs/) run under vkml as under PyTorch, by their import lines alone.

A DDPM U-Net, a BERT-style encoder classifier, a ViT, a GRU seq2seq with attention over packed
sequences, and a tabular classifier that checkpoints and resumes: each model is built under
PyTorch, its initial state_dict is loaded into the vkml model, both train on the same data for a
few steps, and every loss and metric must agree. Random draws during training come from different
generators in the two libraries, so the comparison turns them off (tests/test_programs.py's ``DETERMINISTIC``: dropout and
drop-path at 0, no shuffling or weighted sampling, DDPM noise from numpy); one more test runs each
program as written, draws included, under vkml alone.

The programs compile a few hundred kernels each on the CPU interpreter, so the default suite
runs the smallest in a short form and the rest run with ``make test-all`` (``-m stress``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers


def _run_both(name: str, steps: int, monkeypatch, device=None, constants=None):
    import vkml

    on_torch = _load(name, "torch", monkeypatch, constants=constants)
    model = on_torch.build()
    initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    expected = on_torch.train(model, steps=steps)

    on_vkml = _load(
        name, "vkml", monkeypatch, constants=dict(constants or {}, **({} if device is None else {"DEVICE": device}))
    )
    model = on_vkml.build()
    model.load_state_dict({key: vkml.tensor(value) for key, value in initial.items()})
    got = on_vkml.train(model, steps=steps)
    return expected, got


def _compare(name: str, steps: int, monkeypatch, device=None, constants=None, rtol=1e-4):
    expected, got = _run_both(name, steps, monkeypatch, device, constants)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == steps and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=1e-5, err_msg=name)


NAMES = ["ddpm_unet", "bert_classifier", "vit_classifier", "seq2seq_attention", "tabular_checkpoint"]


@pytest.mark.stress
@pytest.mark.parametrize("name", NAMES)
def test_program_matches_pytorch(name, monkeypatch):
    _compare(name, 3, monkeypatch)


def test_tabular_checkpoint_short_form_matches_pytorch(monkeypatch):
    """The default suite's form: two epochs of two batches, a checkpoint file between them, resumed."""
    _compare("tabular_checkpoint", 2, monkeypatch, constants={"N": 16})


@pytest.mark.stress
@pytest.mark.parametrize("name", NAMES)
def test_program_matches_pytorch_on_vulkan(name, monkeypatch, gpu):
    _compare(name, 2, monkeypatch, device=gpu)


@pytest.mark.stress
@pytest.mark.parametrize("name", NAMES)
def test_program_runs_as_written(name, monkeypatch):
    """Without the comparison's overrides: live dropout, shuffled or weighted batches, sampled noise."""
    program = _load(name, "vkml", monkeypatch, deterministic=False)
    result = program.train(program.build(), steps=2)
    assert len(result["losses"]) == 2 and all(math.isfinite(x) for x in result["losses"])
