"""Training programs in the style of 2017-2021 GitHub repositories (tests/programs/) run under vkml as under
PyTorch, by their import lines alone: a pytorch-cifar-era script (cifar_legacy), pytorch/examples' mnist of
the 0.3-0.4 days (mnist_legacy), a 2017 DCGAN with preallocated buffers (gan_legacy), the 2017 seq2seq
attention tutorial (seq2seq_legacy), a Kaggle tabular kernel (kaggle_legacy), pytorch/examples' VAE with an
Adam written the pre-1.5 way (vae_legacy) and its word_language_model of 0.3 (word_lm_legacy).

Their idioms are the old ones current PyTorch still takes, most with a deprecation warning: ``Variable``
and ``volatile=True``, ``size_average=`` / ``reduce=``, ``F.softmax(x)`` without ``dim``, ``F.upsample``,
``nn.init.xavier_uniform``, ``clip_grad_norm``, ``torch.FloatTensor(sizes)``, ``loss.data[0]`` (an
IndexError now). The comparisons run with ``make test-all`` (``-m stress``); ``make test`` compares word_lm_legacy's
batching and state functions. The gaps they found are tested in tests/test_program_fixes_q.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _load, _numbers, compare_program, program_tests, run_program

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


@pytest.mark.stress
def test_mnist_legacy_warns_as_pytorch(monkeypatch):
    """The 0.4-era mnist script: Variable/volatile, implicit log_softmax dim, size_average=False, its warnings."""
    got = compare_program("mnist_legacy", monkeypatch, 2, 1e-4)
    assert len(got["warnings"]) == 3


def test_word_lm_batches_and_hidden_state_match_pytorch(monkeypatch):
    """word_language_model's batchify (narrow, view, t().contiguous()), get_batch's Variables (volatile in
    evaluation) and repackage_hidden by Variable(h.data): the same batches, a detached state, no graph."""
    results = []
    for backend in ("torch", "vkml"):
        program = _load("word_lm_legacy", backend, monkeypatch)
        source = program.batchify(program.corpus(23, 0), 3)
        data, target = program.get_batch(source, 4, evaluation=True)
        hidden = program.repackage_hidden((source.float()[:2] * 2, source.float()[2:4].requires_grad_()))
        results.append(
            [
                source.tolist(),
                data.tolist(),
                target.tolist(),
                [h.tolist() for h in hidden],
                [h.requires_grad for h in hidden],
            ]
        )
    assert results[1] == results[0]


@pytest.mark.stress
@pytest.mark.parametrize(
    ("name", "steps", "flag", "on_device"),
    [("mnist_legacy", 2, "NO_CUDA", False), ("seq2seq_legacy", 2, "use_cuda", True)],
)
def test_legacy_program_on_the_vulkan_device_matches_pytorch_on_the_cpu(gpu, monkeypatch, name, steps, flag, on_device):
    """As written, behind ``torch.cuda.is_available()``: vkml's "cuda" is the Vulkan device (``.cuda()``,
    ``pin_memory=True`` loaders, ``torch.cuda.manual_seed``), PyTorch runs on the CPU."""
    initial, expected = run_program(name, "torch", monkeypatch, steps, constants={flag: not on_device})
    _, got = run_program(name, "vkml", monkeypatch, steps, initial, {flag: on_device})
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-4, atol=1e-6)
