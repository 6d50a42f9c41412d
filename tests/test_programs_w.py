"""Aladdin Persson's Machine-Learning-Collection and bentrevett's pytorch-seq2seq / pytorch-sentiment-analysis
(tests/programs/) run under vkml as under PyTorch, by their import lines alone; each docstring lists the
idioms it checks.

The comparisons run with ``make test-all`` (``-m stress``); ``make test`` runs the gaps they found
(tests/test_program_fixes_w.py).
"""

from __future__ import annotations

from test_programs import program_tests

# name: (steps, rtol)
PROGRAMS = {
    "aladdin_cnn_architectures": (3, 1e-4),
    "aladdin_gans": (3, 1e-4),
    "aladdin_transformer_scratch": (3, 1e-4),
    "aladdin_yolov1": (3, 1e-4),
}
VARIANTS = {
    "aladdin_cnn_architectures": [
        {"MODEL": "vgg"},
        {"MODEL": "googlenet"},
        {"MODEL": "resnet"},
        {"MODEL": "efficientnet"},
    ],
    "aladdin_gans": [{"MODEL": "dcgan"}, {"MODEL": "wgan"}, {"MODEL": "wgan_gp"}, {"MODEL": "cond_gan"}],
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)
