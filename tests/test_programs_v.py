"""Nine more official PyTorch tutorials (tests/programs/) run under vkml as under PyTorch, by their import lines
alone: "Learn the Basics" (quickstart_basics), the 60 Minute Blitz (blitz_cifar), char-RNN name generation
(char_rnn_generation), batched seq2seq translation with Bahdanau attention (seq2seq_translation), language
modeling with nn.Transformer (transformer_lm_tutorial), EmbeddingBag text classification
(text_classification_tutorial), Deep Learning for NLP (nlp_basics_tutorial), knowledge distillation
(distillation_tutorial) and the Introduction to PyTorch YouTube series (intro_youtube_series); each docstring
lists the idioms it checks.

The comparisons run with ``make test-all`` (``-m stress``); ``make test`` runs the gaps they found
(tests/test_program_fixes_v.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _numbers, compare_program, program_tests, run_program

# name: (steps, rtol)
PROGRAMS = {
    "quickstart_basics": (3, 1e-4),
    "blitz_cifar": (3, 1e-4),
    "char_rnn_generation": (4, 1e-4),
    "seq2seq_translation": (4, 1e-4),
    "transformer_lm_tutorial": (4, 1e-4),
    "text_classification_tutorial": (6, 1e-4),
    "nlp_basics_tutorial": (3, 1e-4),
    "distillation_tutorial": (3, 1e-4),
    "intro_youtube_series": (3, 1e-4),
}
VARIANTS = {
    "quickstart_basics": [
        {"PART": "tensors"},
        {"PART": "datasets"},
        {"PART": "build_model"},
        {"PART": "autograd"},
        {"PART": "optimization"},
    ],
    "blitz_cifar": [{"PART": "neural_networks"}],
    "seq2seq_translation": [{"ATTENTION": False}],
    "transformer_lm_tutorial": [{"BEST": "state_dict"}],
    "nlp_basics_tutorial": [{"PART": "bow"}, {"PART": "ngram"}],
    "distillation_tutorial": [{"LOSS": "cosine"}, {"LOSS": "regressor"}],
    "intro_youtube_series": [{"PART": "tensors"}, {"PART": "autograd"}, {"PART": "models"}],
}

# the programs that pick a device by torch.cuda.is_available(): both libraries on the CPU for the comparison
CONSTANTS = {"blitz_cifar": {"USE_CUDA": False}}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS, CONSTANTS)


# the programs that shuffle (a DataLoader's shuffle=True, a RandomSampler, random_split): vkml's generator is
# PyTorch's, so with only dropout off the shuffled runs agree too
SHUFFLED = {
    "quickstart_basics": {},
    "blitz_cifar": {"USE_CUDA": False},
    "seq2seq_translation": {"DROPOUT": 0.0},
    "text_classification_tutorial": {},
}


@pytest.mark.stress
@pytest.mark.parametrize("name", list(SHUFFLED))
def test_program_with_its_shuffles_matches_pytorch(name, monkeypatch):
    steps, rtol = PROGRAMS[name]
    compare_program(name, monkeypatch, steps, rtol, constants=SHUFFLED[name] or None, deterministic=False)


@pytest.mark.stress
@pytest.mark.parametrize("name", [name for name in PROGRAMS if name not in ("blitz_cifar", "nlp_basics_tutorial")])
def test_program_runs_as_written(name, monkeypatch):
    """Live dropout masks (vkml's own stream) and shuffles: finite losses, every result key."""
    _, expected = run_program(name, "torch", monkeypatch, PROGRAMS[name][0], constants=CONSTANTS.get(name))
    _, got = run_program(
        name, "vkml", monkeypatch, PROGRAMS[name][0], constants=CONSTANTS.get(name), deterministic=False
    )
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == PROGRAMS[name][0] and all(math.isfinite(x) for x in got["losses"])


@pytest.mark.stress
@pytest.mark.parametrize("name", ["quickstart_basics", "seq2seq_translation"])
def test_program_on_the_vulkan_device_matches_pytorch_on_the_cpu(gpu, monkeypatch, name):
    """The tutorials' ``device`` (``torch.accelerator.current_accelerator()`` in the quickstart) naming the Vulkan
    device: the model and batches moved by ``.to(device)``, ``torch.empty(..., device=device).fill_``,
    ``TensorDataset(torch.LongTensor(ids).to(device), ...)``, a state_dict saved and loaded there. (The transformer
    LM passes too, in two minutes on lavapipe.)"""
    steps = PROGRAMS[name][0]
    initial, expected = run_program(name, "torch", monkeypatch, steps)
    _, got = run_program(name, "vkml", monkeypatch, steps, initial, {"device": gpu})
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-4, atol=1e-6, err_msg=name)
