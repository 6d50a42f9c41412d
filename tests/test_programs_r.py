"""Dive into Deep Learning's PyTorch code (tests/programs/d2l_*.py) runs under vkml as under PyTorch, by its
import lines alone: linear and softmax regression from scratch and concise, the MLP with dropout and weight
decay from scratch and concise, the builders' guide (modules, parameters, initialisation, custom layers, file
I/O), the classic and modern CNNs (LeNet, AlexNet, VGG, NiN, GoogLeNet, batch normalization from scratch,
ResNet, DenseNet), the recurrent networks from scratch and concise (RNN, GRU, LSTM, deep, bidirectional) and
the GRU encoder-decoder with its masked loss.

Their idioms are the book's from-scratch tensor code that learners copy: ``param -= lr * param.grad /
batch_size`` under ``no_grad``, ``y_hat[range(len(y_hat)), y]``, ``float(cmp.type(y.dtype).sum())``,
``F.one_hot(X.T, len(vocab))``, ``p.grad[:] *= theta / norm``, ``state.detach_()``. vkml's generator is
PyTorch's, so the book's ``torch.normal`` data and ``random.shuffle`` batches are the same in both. The
comparisons run with ``make test-all`` (``-m stress``); ``make test`` compares the data pipelines and the
small functions. The gaps they found are tested in tests/test_program_fixes_r.py.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_programs import _load, compare_program, program_tests

# name: (steps, rtol)
PROGRAMS = {
    "d2l_linear_regression": (3, 1e-4),
    "d2l_softmax_regression": (3, 1e-4),
    "d2l_mlp_regularization": (3, 1e-4),
    "d2l_builders_guide": (3, 1e-4),
    "d2l_classic_cnns": (3, 1e-4),
    "d2l_modern_cnns": (3, 1e-4),
    "d2l_rnn_scratch": (3, 1e-4),
    "d2l_rnn_concise": (3, 1e-4),
    "d2l_seq2seq": (3, 1e-4),
}
VARIANTS = {
    "d2l_linear_regression": [{"CONCISE": True}],
    "d2l_softmax_regression": [{"CONCISE": True}],
    "d2l_mlp_regularization": [
        {"MODEL": "dropout_scratch"},
        {"MODEL": "dropout_concise"},
        {"MODEL": "decay_scratch"},
        {"MODEL": "decay_concise"},
    ],
    "d2l_classic_cnns": [{"ARCH": "alexnet"}, {"ARCH": "vgg"}, {"ARCH": "nin"}],
    "d2l_modern_cnns": [{"ARCH": "bn_concise"}, {"ARCH": "googlenet"}, {"ARCH": "resnet"}, {"ARCH": "densenet"}],
    "d2l_rnn_scratch": [{"CELL": "gru"}, {"CELL": "lstm", "USE_RANDOM_ITER": True}],
    "d2l_rnn_concise": [
        {"CELL": "RNN"},
        {"CELL": "LSTM"},
        {"CELL": "GRU", "NUM_LAYERS": 2},
        {"CELL": "LSTM", "NUM_LAYERS": 2, "BIDIRECTIONAL": True},
    ],
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


def test_d2l_data_pipelines_match_pytorch(monkeypatch):
    """The book's data code, by both libraries: ``synthetic_data`` from the seeded ``torch.normal``,
    ``data_iter``'s ``random.shuffle`` and ``torch.tensor(indices[i: ...])`` batches, the char ``Vocab`` and
    the random and sequential partitions of a token sequence, the same values and dtypes."""
    results = []
    for backend in ("torch", "vkml"):
        linear = _load("d2l_linear_regression", backend, monkeypatch, deterministic=False)
        text = _load("d2l_rnn_scratch", backend, monkeypatch, deterministic=False)
        torch = linear.torch
        random.seed(0)
        torch.manual_seed(0)
        features, labels = linear.synthetic_data(torch.tensor([2, -3.4]), 4.2, 12)
        batches = [[X.tolist(), y.tolist()] for X, y in linear.data_iter(5, features, labels)]
        corpus, vocab = text.load_corpus_time_machine(80)
        partitions = [
            [[X.tolist(), Y.tolist(), str(X.dtype).split(".")[-1]] for X, Y in fn(list(range(23)), 2, 4)]
            for fn in (text.seq_data_iter_random, text.seq_data_iter_sequential)
        ]
        results.append([batches, corpus, vocab.idx_to_token, vocab[["t", "h", "?"]], partitions])
    (got_batches, *got_rest), (want_batches, *want_rest) = results[1], results[0]
    assert got_rest == want_rest
    # the features are the seeded draws, bit for bit; the labels come from a (12, 2) @ (2,) product, whose
    # last bit PyTorch's CPU BLAS sets by instruction set (it differed on an AVX-512 machine)
    for (got_x, got_y), (want_x, want_y) in zip(got_batches, want_batches, strict=True):
        assert got_x == want_x
        np.testing.assert_allclose(got_y, want_y, rtol=1e-6, atol=1e-6)


@pytest.mark.stress
@pytest.mark.parametrize(
    ("name", "constants"),
    [
        ("d2l_mlp_regularization", {"MODEL": "dropout_scratch"}),
        ("d2l_softmax_regression", None),
        ("d2l_linear_regression", {"CONCISE": True}),
    ],
    ids=["dropout_scratch", "softmax_scratch", "linear_concise"],
)
def test_d2l_program_with_its_draws_live_matches_pytorch(monkeypatch, name, constants):
    """As written, its draws live: the book's ``dropout_layer`` masks by ``torch.rand(X.shape) > dropout``, and
    ``rand`` and a shuffling ``DataLoader`` draw from vkml's generator as from PyTorch's, so the numbers agree."""
    compare_program(name, monkeypatch, 2, 1e-4, constants=constants, deterministic=False)
