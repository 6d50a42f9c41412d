"""Aladdin Persson's Machine-Learning-Collection (aladdin_basics, aladdin_cnn_architectures, aladdin_gans,
aladdin_pix2pix_cyclegan, aladdin_transformer_scratch, aladdin_unet_segmentation, aladdin_yolov1) and bentrevett's pytorch-seq2seq and
pytorch-sentiment-analysis notebooks (bentrevett_seq2seq, bentrevett_conv_transformer_seq2seq,
bentrevett_sentiment) run under vkml as under PyTorch, by their import lines alone; each docstring lists the
idioms it checks.

Each picks its device as its source does (``"cuda" if torch.cuda.is_available() else "cpu"``): the
comparisons put both libraries on the CPU, and a second set runs vkml as written, on its Vulkan device
(vkml's "cuda"), against PyTorch on the CPU. All run with ``make test-all`` (``-m stress``); ``make test``
runs the gap they found (tests/test_program_fixes_w.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers, program_tests, run_program

# name: (steps, rtol)
PROGRAMS = {
    "aladdin_basics": (3, 1e-4),
    "aladdin_cnn_architectures": (3, 1e-4),
    "aladdin_gans": (3, 1e-4),
    "aladdin_pix2pix_cyclegan": (3, 1e-4),
    "aladdin_transformer_scratch": (3, 1e-4),
    "aladdin_yolov1": (3, 1e-4),
    "aladdin_unet_segmentation": (3, 1e-4),
    "bentrevett_seq2seq": (3, 1e-4),
    "bentrevett_conv_transformer_seq2seq": (3, 1e-4),
    "bentrevett_sentiment": (3, 1e-4),
}
VARIANTS = {
    "aladdin_basics": [
        {"PART": "tensor_basics"},
        {"PART": "rnn"},
        {"PART": "rnn", "RNN_TYPE": "gru"},
        {"PART": "rnn", "RNN_TYPE": "lstm"},
        {"PART": "rnn", "RNN_TYPE": "blstm"},
    ],
    "aladdin_cnn_architectures": [
        {"MODEL": "vgg"},
        {"MODEL": "googlenet"},
        {"MODEL": "resnet"},
        {"MODEL": "efficientnet"},
    ],
    "aladdin_gans": [{"MODEL": "dcgan"}, {"MODEL": "wgan"}, {"MODEL": "wgan_gp"}, {"MODEL": "cond_gan"}],
    "aladdin_pix2pix_cyclegan": [{"MODEL": "cyclegan"}],
    "bentrevett_seq2seq": [{"MODEL": "gru_context"}, {"MODEL": "attention"}, {"MODEL": "packed"}],
    "bentrevett_conv_transformer_seq2seq": [{"MODEL": "transformer"}],
    "bentrevett_sentiment": [
        {"MODEL": "lstm_packed"},
        {"MODEL": "fasttext"},
        {"MODEL": "cnn"},
        {"MODEL": "cnn_multiclass"},
    ],
}
# the device each program picks by torch.cuda.is_available(): the CPU for both libraries in the comparison
DEVICE_NAME = {"aladdin_pix2pix_cyclegan": "DEVICE", "aladdin_yolov1": "DEVICE", "aladdin_unet_segmentation": "DEVICE"}
CONSTANTS = {name: {DEVICE_NAME.get(name, "device"): "cpu"} for name in PROGRAMS}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS, CONSTANTS)

ON_VULKAN = [
    ("aladdin_transformer_scratch", {}),
    ("aladdin_gans", {"MODEL": "wgan_gp"}),
    ("aladdin_yolov1", {}),
    ("bentrevett_seq2seq", {"MODEL": "packed"}),
    ("bentrevett_sentiment", {"MODEL": "lstm_packed"}),
    ("bentrevett_conv_transformer_seq2seq", {}),
    ("aladdin_cnn_architectures", {"MODEL": "efficientnet"}),
]


@pytest.mark.stress
@pytest.mark.parametrize(("name", "constants"), ON_VULKAN, ids=lambda v: v if isinstance(v, str) else str(v))
def test_program_as_written_on_vulkan_matches_pytorch(name, constants, monkeypatch, gpu):
    """vkml's run as written: ``torch.cuda.is_available()`` is True, so the program's device is vkml's Vulkan
    device; PyTorch's on the CPU, from the same initial state."""
    import vkml

    assert vkml.device("cuda") == gpu
    steps, rtol = PROGRAMS[name]
    on_cpu = dict(constants, **CONSTANTS[name])
    initial, expected = run_program(name, "torch", monkeypatch, steps, constants=on_cpu)
    _, got = run_program(name, "vkml", monkeypatch, steps, initial, constants or None)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == steps and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=1e-5, err_msg=name)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_runs_as_written_with_its_random_draws(name, monkeypatch):
    """Without the comparison's overrides (on the CPU): live dropout, shuffled batches, vkml's own draws."""
    program = _load(name, "vkml", monkeypatch, deterministic=False, constants=CONSTANTS[name])
    result = program.train(program.build(), steps=PROGRAMS[name][0])
    assert all(math.isfinite(x) for x in _numbers(result)), result


@pytest.mark.stress
@pytest.mark.parametrize("name", ["aladdin_unet_segmentation", "aladdin_pix2pix_cyclegan"])
def test_program_under_cuda_autocast_on_vulkan_runs(name, monkeypatch, gpu):
    """As written on vkml's Vulkan device, where ``torch.cuda.amp.autocast()`` is on (float16 convolutions, a
    ``ConvTranspose2d`` among them; PyTorch's CPU build turns it off): its losses near PyTorch's float32 ones."""
    import vkml

    assert vkml.device("cuda") == gpu
    steps, _ = PROGRAMS[name]
    initial, expected = run_program(name, "torch", monkeypatch, steps, constants=CONSTANTS[name])
    _, got = run_program(name, "vkml", monkeypatch, steps, initial)
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-2, err_msg=name)
