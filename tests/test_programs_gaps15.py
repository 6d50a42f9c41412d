"""Programs in the style of popular repositories (tests/programs/) that use the idioms of session 15's gaps:
meta-device model construction, saved-tensor hooks, ``load_state_dict(assign=True)`` and ``strict=False``,
``torch.compile`` around a resumed training loop. Each runs under PyTorch and under vkml from its own
build (vkml's generator is PyTorch's, so the seeded initializations agree) or from PyTorch's initial state,
and every loss and metric must agree."""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _numbers, compare_program, run_program


def _own_builds(name, monkeypatch, steps, rtol, atol=1e-6, constants=None):
    """Both libraries build the program themselves (no state copied): initial weights and results must agree."""
    initial_torch, expected = run_program(name, "torch", monkeypatch, steps, constants=constants)
    initial_vkml, got = run_program(name, "vkml", monkeypatch, steps, constants=constants)
    assert sorted(initial_vkml) == sorted(initial_torch)
    for key in initial_torch:
        np.testing.assert_allclose(initial_vkml[key], initial_torch[key], rtol=1e-6, atol=1e-7, err_msg=key)
    assert sorted(got) == sorted(expected)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=atol, err_msg=name)
    return got


@pytest.mark.stress
def test_meta_init_gpt_matches_pytorch(monkeypatch):
    got = _own_builds("meta_init_gpt", monkeypatch, 3, rtol=1e-4)
    assert got["tied"] and got["copy_matches"] and not got["copy_on_meta"]


@pytest.mark.stress  # about 25 s on the CPU interpreter: tests/test_meta_device.py covers the idioms by default
def test_meta_init_gpt_short_form_matches_pytorch(monkeypatch):
    """A shorter form: one layer, one step."""
    got = _own_builds("meta_init_gpt", monkeypatch, 1, rtol=1e-4, constants={"N_LAYER": 1})
    assert got["tied"] and got["copy_matches"] and got["params"] == 3632


@pytest.mark.stress  # about 30 s on the CPU interpreter: tests/test_state_dict_assign.py covers the idioms by default
def test_hf_style_loading_matches_pytorch(monkeypatch):
    got = compare_program("hf_style_loading", monkeypatch, 2, rtol=1e-4)
    assert got["missing"] == "classifier.weight,classifier.bias" and got["frozen"]


@pytest.mark.stress  # PyTorch's torch.compile alone takes seconds: tests/test_dynamo_names.py covers the names by default
def test_compile_resume_matches_pytorch(monkeypatch):
    got = compare_program("compile_resume", monkeypatch, 4, rtol=1e-4)
    assert got["losses"] == got["resumed"] and got["same_params"]
