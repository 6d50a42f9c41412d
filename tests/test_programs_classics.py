"""Ordinary PyTorch programs in the style of well-known repositories (tests/programs/) run under vkml
as under PyTorch, by their import lines alone.

"The Annotated Transformer" (annotated_transformer), kuangliu/pytorch-cifar's model zoo
(cifar_zoo), minGPT's optimizer groups and top-k sampling (mingpt_configure) and an SSD-style box
loss with hard negative mining (ssd_box_loss); each docstring lists the idioms it checks. As in
tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data with their random draws off; every number must agree
to the program's tolerance. Comparisons that compile many kernels on the CPU interpreter run with
``make test-all`` (``-m stress``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers

# name: (steps, rtol)
PROGRAMS = {
    "annotated_transformer": (3, 1e-4),
    "cifar_zoo": (3, 1e-4),
    "ssd_box_loss": (3, 1e-4),
    "mingpt_configure": (3, 1e-4),
}
# Other module constants a program is compared under, besides its defaults.
VARIANTS = {"cifar_zoo": [{"MODEL": m} for m in ("MobileNetV2", "DenseNet", "PreActResNet")]}


def _run(name, backend, monkeypatch, initial=None, constants=None):
    steps, _ = PROGRAMS[name]
    program = _load(name, backend, monkeypatch, constants=constants)
    model = program.build()
    if initial is None:
        initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict({key: program.torch.tensor(value) for key, value in initial.items()})
    return initial, program.train(model, steps=steps)


def _compare(name, monkeypatch, constants=None):
    steps, rtol = PROGRAMS[name]
    initial, expected = _run(name, "torch", monkeypatch, constants=constants)
    _, got = _run(name, "vkml", monkeypatch, initial, constants)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == steps and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=1e-6, err_msg=name)
    return got


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    _compare(name, monkeypatch)


@pytest.mark.stress
@pytest.mark.parametrize(
    ("name", "constants"), [(name, c) for name, cs in VARIANTS.items() for c in cs], ids=lambda v: str(v)
)
def test_program_variant_matches_pytorch(name, constants, monkeypatch):
    _compare(name, monkeypatch, constants)
