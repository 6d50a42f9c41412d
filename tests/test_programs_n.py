"""Third-party-style training programs (tests/programs/) run under vkml as under PyTorch, by their import
lines alone: pytorch/examples' imagenet/main.py training loop (imagenet_main).

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data; every number must agree to the program's tolerance. The
whole comparisons run with ``make test-all`` (``-m stress``); ``make test`` compares the programs' pure
functions. The gaps they found are tested in tests/test_program_fixes_n.py.
"""

from __future__ import annotations

import pytest
from test_programs import compare_program, program_tests

# name: (steps, rtol)
PROGRAMS = {
    "imagenet_main": (4, 1e-4),
    "yolo_loss": (3, 1e-4),
    "snli_classifier": (4, 1e-4),
    "lstm_tagger": (4, 1e-4),
    "mnist_hogwild": (4, 1e-4),
    "sngan_projection": (2, 1e-4),
    "metric_learning": (3, 1e-4),
    "custom_optimizers": (4, 1e-4),
}
VARIANTS = {
    "yolo_loss": [{"FL_GAMMA": 1.5}],
    "snli_classifier": [{"BIRNN": False, "FIX_EMB": False, "PROJECTION": False, "N_LAYERS": 2}],
    "sngan_projection": [{"SN": "parametrizations", "LOSS": "ns"}],
    "metric_learning": [{"LOSS": "arcface"}, {"LOSS": "cosine_triplet"}],
    "custom_optimizers": [{"OPTIMIZER": "lookahead"}, {"OPTIMIZER": "adamw"}, {"ADAPTIVE": True}],
    "lstm_tagger": [{"LOSS": "packed", "SORT": "tensor"}, {"SORT": "tensor", "CHAR_CNN": False}],
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


@pytest.mark.stress
def test_imagenet_resume_goes_on_as_the_uninterrupted_run(monkeypatch):
    got = compare_program("imagenet_main", monkeypatch, 4, 1e-4)
    assert got["resumes_exactly"] and got["best_saved"] and got["best"] == [True, False]
