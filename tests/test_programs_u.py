"""Three widely copied tutorial series (tests/programs/) run under vkml as under PyTorch, by their import lines
alone: yunjey's pytorch-tutorial (yunjey_basics, yunjey_cnn_resnet, yunjey_rnn_lm, yunjey_gan_vae,
yunjey_captioning_style), karpathy's nn-zero-to-hero lectures (zero_to_hero_mlp, zero_to_hero_batchnorm,
backprop_ninja, makemore_wavenet) and Phillip Lippe's UvA deep learning tutorials (uva_intro_optim,
uva_cnn_blocks, uva_transformer_gnn, uva_generative); each docstring lists the idioms it checks.

The comparisons run with ``make test-all`` (``-m stress``); ``make test`` runs the micrograd checks and the
gaps they found (tests/test_program_fixes_u.py).
"""

from __future__ import annotations

from test_programs import compare_program, program_tests

# name: (steps, rtol)
PROGRAMS = {
    "yunjey_basics": (3, 1e-4),
    "yunjey_cnn_resnet": (4, 1e-4),
    "yunjey_rnn_lm": (3, 1e-4),
    "yunjey_gan_vae": (3, 1e-4),
    "yunjey_captioning_style": (3, 1e-4),
    "zero_to_hero_mlp": (3, 1e-4),
    "zero_to_hero_batchnorm": (3, 1e-4),
    "backprop_ninja": (3, 1e-4),
    "makemore_wavenet": (3, 1e-4),
    "uva_intro_optim": (3, 1e-4),
    "uva_transformer_gnn": (3, 1e-4),
    "uva_generative": (3, 1e-4),
    "uva_cnn_blocks": (3, 1e-4),
}
VARIANTS = {
    "yunjey_basics": [{"MODEL": "linear_regression"}, {"MODEL": "logistic_regression"}, {"MODEL": "feedforward"}],
    "yunjey_cnn_resnet": [{"MODEL": "resnet"}],
    "yunjey_rnn_lm": [{"MODEL": "birnn"}, {"MODEL": "language_model"}],
    "yunjey_gan_vae": [{"MODEL": "vae"}],
    "yunjey_captioning_style": [{"MODEL": "style_transfer"}],
    "zero_to_hero_mlp": [{"PART": "bigram"}, {"PART": "mlp"}],
    "zero_to_hero_batchnorm": [{"STYLE": "classes"}],
    "makemore_wavenet": [{"HIERARCHICAL": False}],
    "uva_intro_optim": [
        {"PART": "activations"},
        {"PART": "activations", "ACT_FN": "swish"},
        {"PART": "optimization"},
        {"PART": "optimization", "OPTIMIZER": "sgd_momentum", "INIT": "xavier"},
        {"PART": "optimization", "OPTIMIZER": "sgd", "INIT": "const"},
    ],
    "uva_transformer_gnn": [{"PART": "gnn"}],
    "uva_generative": [{"PART": "flow"}, {"PART": "pixelcnn"}],
    "uva_cnn_blocks": [
        {"ARCH": "resnet", "ACT_FN": "tanh"},
        {"ARCH": "preact_resnet"},
        {"ARCH": "densenet", "ACT_FN": "gelu"},
    ],
}
# the programs that pick a device by torch.cuda.is_available(): both libraries on the CPU for the comparison
CONSTANTS = {name: {"USE_CUDA": False} for name in PROGRAMS if name.startswith("yunjey")}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS, CONSTANTS)


def test_micrograd_checks_match_pytorch(monkeypatch):
    """The micrograd lecture's checks against autograd on float64 scalars (``.double()``, ``requires_grad =
    True``, ``.data.item()``, ``.grad.item()``, micrograd's sanity and more-ops tests), by both libraries."""
    got = compare_program("zero_to_hero_mlp", monkeypatch, 2, 1e-6, constants={"PART": "micrograd"})
    assert got["neuron_matches_micrograd"] and got["sanity"][2:] == [True, True] and all(got["more_ops_match"])
