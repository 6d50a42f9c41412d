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
}
VARIANTS = {}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


@pytest.mark.stress
def test_imagenet_resume_goes_on_as_the_uninterrupted_run(monkeypatch):
    got = compare_program("imagenet_main", monkeypatch, 4, 1e-4)
    assert got["resumes_exactly"] and got["best_saved"] and got["best"] == [True, False]
