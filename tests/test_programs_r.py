"""Dive into Deep Learning's PyTorch code (tests/programs/d2l_*.py) runs under vkml as under PyTorch, by its
import lines alone: linear and softmax regression from scratch and concise, the MLP with dropout and weight
decay from scratch and concise, the builders' guide (modules, parameters, initialisation, custom layers, file
I/O), the classic and modern CNNs (LeNet, AlexNet, VGG, NiN, GoogLeNet, batch normalization from scratch,
ResNet, DenseNet) and the recurrent networks from scratch and concise (RNN, GRU, LSTM, deep, bidirectional).

Their idioms are the book's from-scratch tensor code that learners copy: ``param -= lr * param.grad /
batch_size`` under ``no_grad``, ``y_hat[range(len(y_hat)), y]``, ``float(cmp.type(y.dtype).sum())``,
``F.one_hot(X.T, len(vocab))``, ``p.grad[:] *= theta / norm``, ``state.detach_()``. vkml's generator is
PyTorch's, so the book's ``torch.normal`` data and ``random.shuffle`` batches are the same in both. The
comparisons run with ``make test-all`` (``-m stress``); ``make test`` compares the data pipelines and the
small functions. The gaps they found are tested in tests/test_program_fixes_r.py.
"""

from __future__ import annotations

from test_programs import program_tests

# name: (steps, rtol)
PROGRAMS = {
    "d2l_linear_regression": (3, 1e-4),
    "d2l_softmax_regression": (3, 1e-4),
    "d2l_mlp_regularization": (3, 1e-4),
    "d2l_builders_guide": (3, 1e-4),
    "d2l_classic_cnns": (3, 1e-4),
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
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)
