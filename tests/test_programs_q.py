"""Training programs in the style of 2017-2021 GitHub repositories (tests/programs/) run under vkml as under
PyTorch, by their import lines alone: a pytorch-cifar-era script (cifar_legacy), pytorch/examples' mnist of
the 0.3-0.4 days (mnist_legacy), a 2017 DCGAN with preallocated buffers (gan_legacy), the 2017 seq2seq
attention tutorial (seq2seq_legacy), a Kaggle tabular kernel (kaggle_legacy), pytorch/examples' VAE with an
Adam written the pre-1.5 way (vae_legacy) and its word_language_model of 0.3 (word_lm_legacy).

Their idioms are the old ones current PyTorch still takes, most with a deprecation warning: ``Variable``
and ``volatile=True``, ``size_average=`` / ``reduce=``, ``F.softmax(x)`` without ``dim``, ``F.upsample``,
``nn.init.xavier_uniform``, ``clip_grad_norm``, ``torch.FloatTensor(sizes)``, ``loss.data[0]`` (an
IndexError now). The comparisons run with ``make test-all`` (``-m stress``); ``make test`` runs the mnist
script for two steps. The gaps they found are tested in tests/test_program_fixes_q.py.
"""

from __future__ import annotations

from test_programs import compare_program, program_tests

# name: (steps, rtol)
PROGRAMS = {
    "cifar_legacy": (3, 1e-4),
    "mnist_legacy": (3, 1e-4),
    "gan_legacy": (3, 1e-4),
    "seq2seq_legacy": (3, 1e-4),
    "kaggle_legacy": (3, 1e-4),
    "vae_legacy": (3, 1e-4),
    "word_lm_legacy": (3, 1e-4),
}
VARIANTS = {
    "cifar_legacy": [{"ARCH": "resnet"}],
    "gan_legacy": [{"UPSAMPLE": "bilinear"}],
    "vae_legacy": [{"SAMPLE_NOISE": False}],
    "word_lm_legacy": [{"RNN_TYPE": "GRU"}],
}
# Both libraries on the CPU for the comparison: vkml's torch.cuda.is_available() is its Vulkan device
CONSTANTS = {"cifar_legacy": {"use_cuda": False}, "seq2seq_legacy": {"use_cuda": False}}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS, CONSTANTS)


def test_mnist_legacy_matches_pytorch(monkeypatch):
    """The 0.4-era mnist script: Variable/volatile, implicit log_softmax dim, size_average=False, its warnings."""
    got = compare_program("mnist_legacy", monkeypatch, 2, 1e-4)
    assert len(got["warnings"]) == 3
