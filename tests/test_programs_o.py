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

import pytest
from test_programs import program_tests

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
