"""Ordinary PyTorch programs (tests/programs/) run under vkml as under PyTorch, by their import lines alone.

Each program's model is built under PyTorch; its initial state_dict is loaded into the vkml
model; both train on the same data for a few steps on the CPU, and every loss and metric must
agree (rtol 1e-4). A program that cannot run on vkml yet is a strict xfail naming the missing
feature: when the feature lands the test fails until the mark is removed.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).resolve().parent / "programs"
STEPS = 3
# Random draws during training come from different generators in the two libraries: the
# comparison runs without them (the Dropout layers stay in the model, with p = 0; drop-path off, the
# weighted sampler and shuffling off, the diffusion noise fixed). Each is set where a program has it.
DETERMINISTIC = {"DROPOUT": 0.0, "DROP_PATH": 0.0, "SHUFFLE": False, "SAMPLER": False, "FIXED_NOISE": True}


def _load(name: str, backend: str, monkeypatch, deterministic: bool = True, constants=None):
    """Import tests/programs/<name>.py afresh with its shim giving ``backend``'s modules; ``deterministic``
    turns its random draws off (``DETERMINISTIC``), ``constants`` sets others of its module constants."""
    monkeypatch.setenv("PROGRAMS_BACKEND", backend)
    monkeypatch.syspath_prepend(str(PROGRAMS))
    modules = {}
    for module_name in ("shim", name):
        spec = importlib.util.spec_from_file_location(module_name, PROGRAMS / f"{module_name}.py")
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, module_name, module)  # the program's `from shim import` finds this one
        spec.loader.exec_module(module)
        modules[module_name] = module
    assert modules["shim"].BACKEND == backend
    program = modules[name]
    if deterministic:
        for constant, value in DETERMINISTIC.items():
            if hasattr(program, constant):
                monkeypatch.setattr(program, constant, value)
    for constant, value in (constants or {}).items():
        monkeypatch.setattr(program, constant, value)
    return program


def run_program(name, backend, monkeypatch, steps, initial=None, constants=None, deterministic=True, prepare=None):
    """Build tests/programs/<name>.py under ``backend`` and train it ``steps`` steps: its initial state is
    ``initial`` (numpy arrays by state_dict key) when given, else its own, returned with the result.
    ``prepare(program)`` runs before the build (a program's random draws replaced, say)."""
    program = _load(name, backend, monkeypatch, deterministic=deterministic, constants=constants)
    if prepare is not None:
        prepare(program)
    model = program.build()
    if initial is None:
        initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict({key: program.torch.tensor(value) for key, value in initial.items()})
    return initial, program.train(model, steps=steps)


def compare_program(name, monkeypatch, steps, rtol, atol=1e-6, constants=None, **run):
    """PyTorch's run of a program, then vkml's from the same initial state: every number of their results
    within ``rtol``/``atol``, the losses finite. ``run``: run_program's other arguments. Returns vkml's."""
    initial, expected = run_program(name, "torch", monkeypatch, steps, constants=constants, **run)
    _, got = run_program(name, "vkml", monkeypatch, steps, initial, constants, **run)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == steps and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=atol, err_msg=name)
    return got


def _numbers(result) -> list[float]:
    """Every number in a program's result, flattened in order (booleans and ints included)."""
    if isinstance(result, dict):
        return [x for key in sorted(result) for x in _numbers(result[key])]
    if isinstance(result, list | tuple):
        return [x for item in result for x in _numbers(item)]
    if isinstance(result, str):
        return [float(ord(c)) for c in result]
    return [float(result)]


def _variant_id(value):
    """A variant test's id part: the program's name, its constants dict as written, pytest's own otherwise."""
    return str(value) if isinstance(value, dict) else None


def program_tests(programs: dict, variants: dict, constants: dict | None = None, prepare=None, **run):
    """A program suite's two stress tests, ``test_program_matches_pytorch`` (each program as written) and
    ``test_program_variant_matches_pytorch`` (under other module constants), returned for its module to bind.

    ``programs``: {name: (steps, rtol) or (steps, rtol, atol)}; ``variants``: {name: [constants, ...]}, or
    {name: [(constants, tolerance), ...]} where a variant needs its own (steps, rtol, atol) (None: the
    program's); ``constants``: {name: constants} set in every comparison of that program;
    ``prepare(program, monkeypatch)`` runs before each build; ``run``: compare_program's other arguments.
    """

    def compare(name, monkeypatch, variant=None, tolerance=None):
        steps, rtol, *atol = tolerance or programs[name]
        merged = dict(variant or {}, **(constants or {}).get(name, {})) or None
        given = dict(run)
        if prepare is not None:
            given["prepare"] = lambda program: prepare(program, monkeypatch)
        return compare_program(name, monkeypatch, steps, rtol, *atol, constants=merged, **given)

    @pytest.mark.stress
    @pytest.mark.parametrize("name", list(programs))
    def test_program_matches_pytorch(name, monkeypatch):
        compare(name, monkeypatch)

    pairs = [(name, v) for name, vs in variants.items() for v in vs]
    if any(isinstance(v, tuple) for _, v in pairs):  # (constants, tolerance) pairs

        @pytest.mark.stress
        @pytest.mark.parametrize(("name", "variant", "tolerance"), [(name, *v) for name, v in pairs], ids=_variant_id)
        def test_program_variant_matches_pytorch(name, variant, tolerance, monkeypatch):
            compare(name, monkeypatch, variant, tolerance)

    else:

        @pytest.mark.stress
        @pytest.mark.parametrize(("name", "variant"), pairs, ids=_variant_id)
        def test_program_variant_matches_pytorch(name, variant, monkeypatch):
            compare(name, monkeypatch, variant)

    return test_program_matches_pytorch, test_program_variant_matches_pytorch


CASES = [
    pytest.param("mlp_classifier", id="mlp_classifier"),
    pytest.param("cnn_batchnorm", id="cnn_batchnorm"),
    pytest.param("char_lstm", id="char_lstm"),
    pytest.param("transformer_lm", id="transformer_lm"),
    pytest.param("gpt_attention", id="gpt_attention"),
    pytest.param("conv_autoencoder", id="conv_autoencoder"),
    pytest.param("regression_manual_sgd", id="regression_manual_sgd"),
    pytest.param("checkpoint_resume", id="checkpoint_resume"),
    pytest.param("mnist_style", id="mnist_style"),
    pytest.param("autograd_tutorial", id="autograd_tutorial"),
    pytest.param("word_language_model", id="word_language_model"),
    pytest.param("fast_neural_style", id="fast_neural_style"),
    pytest.param("forward_forward", id="forward_forward"),
    # GPT-sized programs compile a few hundred kernels on the CPU interpreter: over 15 s each on
    # CI's 2 cores, so they run with `make test-all` (their fixes have short tests of their own)
    pytest.param("nanogpt", id="nanogpt", marks=pytest.mark.stress),
    pytest.param("makemore", id="makemore", marks=pytest.mark.stress),
    pytest.param("nn_tutorial", id="nn_tutorial"),
    pytest.param("neural_style", id="neural_style"),
    # two CNNs of a dozen distinct layer shapes each, forward and backward: ~25 s of CPU on the
    # interpreter, so with `make test-all` too (tests/test_torchvision_idioms.py holds its fixes' tests)
    pytest.param("torchvision_models", id="torchvision_models", marks=pytest.mark.stress),
]


@pytest.mark.parametrize("name", CASES)
def test_program_matches_pytorch(name, monkeypatch):
    compare_program(name, monkeypatch, STEPS, rtol=1e-4)


def test_program_runs_as_written_with_dropout_and_shuffling(monkeypatch):
    """Without the comparison's overrides: live dropout masks and shuffled batches from vkml's generator."""
    program = _load("mlp_classifier", "vkml", monkeypatch)
    monkeypatch.setattr(program, "DROPOUT", 0.5)
    monkeypatch.setattr(program, "SHUFFLE", True)
    model = program.build()
    assert any(isinstance(m, program.nn.Dropout) and m.p == 0.5 for m in model.modules())
    result = program.train(model, steps=2)
    assert len(result["losses"]) == 2 and all(math.isfinite(x) for x in result["losses"])


def test_shim_gives_each_library_the_same_names(monkeypatch):
    import torch

    import vkml

    assert _load("mlp_classifier", "torch", monkeypatch).torch is torch
    assert _load("mlp_classifier", "vkml", monkeypatch).torch is vkml


def test_a_seeded_program_builds_and_shuffles_as_pytorch_does(monkeypatch):
    # No state_dict copy: build() seeds the generator, so the initial weights and the shuffled
    # batches are PyTorch's own (only dropout's mask differs: vkml/frontend/random.py)
    numbers = []
    for backend in ("torch", "vkml"):
        program = _load("mlp_classifier", backend, monkeypatch, deterministic=False, constants={"DROPOUT": 0.0})
        assert program.SHUFFLE
        numbers.append(_numbers(program.train(program.build(), steps=STEPS + 3)))
    np.testing.assert_allclose(numbers[1], numbers[0], rtol=1e-4, atol=1e-6)
