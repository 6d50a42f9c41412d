"""Vision, audio and classic-ML programs (tests/programs/) run under vkml as under PyTorch, by their import
lines alone: the Speech Command tutorial's M5 (speech_m5), torchvision's DeepLabV3 with its reference
training (deeplab_aspp), mixup and CutMix (mixup_cutmix) and an old repository's DataParallel script with
worker-process loaders and a focal loss (legacy_dataparallel).

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data; the random draws the programs make stay live, since vkml's
generator gives PyTorch's draws; dropout is off (``DROPOUT = 0``). The whole comparisons run with
``make test-all`` (``-m stress``); ``make test`` runs a few of the programs' functions. The gaps they found
are tested in tests/test_program_fixes_o.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _load, program_tests

# PyTorch warns that pin_memory=True has no accelerator to pin for on this machine
pytestmark = pytest.mark.filterwarnings("ignore:'pin_memory' argument")

# name: (steps, rtol)
PROGRAMS = {
    "speech_m5": (3, 1e-4),
    "deeplab_aspp": (3, 1e-4),
    "mixup_cutmix": (3, 1e-4),
    "legacy_dataparallel": (3, 1e-4),
    "knn_anomaly": (3, 1e-4),
    "resnet_finetune_bf16": (3, 1e-4),
    "siamese_contrastive": (3, 1e-4),
    "speech_enhance_stft": (3, 1e-4),
}
VARIANTS = {
    "speech_m5": [{"FRONTEND": "spectrogram", "POOL": "functional"}],
    "deeplab_aspp": [{"ATROUS": "multi_grid"}],
    "speech_enhance_stft": [{"LOSS": "spectral", "MASKING": "complex"}],
    "siamese_contrastive": [{"LOSS": "triplet"}, {"LOSS": "functional_triplet"}],
    "resnet_finetune_bf16": [{"HEAD": "conv"}, {"CHANNELS_LAST": False, "HEAD": "conv"}, {"AMP": False}],
    "knn_anomaly": [{"VOTE": "weighted", "THRESHOLD": "percentile"}, {"THRESHOLD": "sigma"}],
    "legacy_dataparallel": [{"FOCAL": "gather", "NUM_WORKERS": 0}],
    "mixup_cutmix": [{"MIX": "cutmix"}, {"MIX": "cutmix", "CUTMIX_PROB": 0.5}, {"MIX": "beta", "ALPHA": 0.4}],
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


def _both(name, monkeypatch):
    return _load(name, "torch", monkeypatch), _load(name, "vkml", monkeypatch)


def test_deeplab_criterion_and_confusion_matrix_match_pytorch(monkeypatch):
    """cross_entropy(ignore_index=255) over the out and aux heads, with its gradient, and the bincount
    confusion matrix updated in place under inference_mode, with its IoU report."""
    rng = np.random.default_rng(0)
    out = rng.normal(size=(2, 3, 5, 5)).astype(np.float32)
    aux = rng.normal(size=(2, 3, 5, 5)).astype(np.float32)
    target = rng.integers(0, 3, size=(2, 5, 5))
    target[:, 0, :] = 255
    results = []
    for program in _both("deeplab_aspp", monkeypatch):
        torch = program.torch
        logits = torch.tensor(out, requires_grad=True)
        loss = program.criterion({"out": logits, "aux": torch.tensor(aux)}, torch.tensor(target))
        loss.backward()
        confmat = program.ConfusionMatrix(3)
        for _ in range(2):
            confmat.update(torch.tensor(target).flatten(), logits.detach().argmax(1).flatten())
        results.append((loss.item(), logits.grad.numpy(), confmat.mat.tolist(), str(confmat)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-8)
    assert results[1][2:] == results[0][2:]


def test_focal_loss_matches_pytorch(monkeypatch):
    """The focal loss in both forms (torch.where with Python floats, gather from an alpha tensor), with its
    gradient."""
    rng = np.random.default_rng(1)
    logits = rng.normal(size=8).astype(np.float32)
    targets = (rng.random(8) > 0.5).astype(np.float32)
    results = []
    for backend in ("torch", "vkml"):
        row = []
        for focal in ("binary", "gather"):
            program = _load("legacy_dataparallel", backend, monkeypatch, constants={"FOCAL": focal})
            x = program.torch.tensor(logits, requires_grad=True)
            loss = program.FocalLoss()(x, program.torch.tensor(targets))
            loss.backward()
            row += [loss.item(), x.grad.numpy()]
        results.append(row)
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
