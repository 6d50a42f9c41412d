"""Ordinary PyTorch programs in the style of well-known repositories (tests/programs/) run under vkml
as under PyTorch, by their import lines alone.

"The Annotated Transformer" (annotated_transformer), kuangliu/pytorch-cifar's model zoo
(cifar_zoo), minGPT's optimizer groups and top-k sampling (mingpt_configure) and an SSD-style box
loss with hard negative mining (ssd_box_loss); each docstring lists the idioms it checks. As in
tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data with their random draws off; every number must agree
to the program's tolerance. Comparisons that compile many kernels on the CPU interpreter run with
``make test-all`` (``-m stress``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers, program_tests, run_program

# name: (steps, rtol)
PROGRAMS = {
    "annotated_transformer": (3, 1e-4),
    "cifar_zoo": (3, 1e-4),
    "ssd_box_loss": (3, 1e-4),
    "mingpt_configure": (3, 1e-4),
}
# Other module constants a program is compared under, besides its defaults.
VARIANTS = {"cifar_zoo": [{"MODEL": m} for m in ("MobileNetV2", "DenseNet", "PreActResNet")]}


def _run(name, backend, monkeypatch, initial=None, constants=None):
    return run_program(name, backend, monkeypatch, PROGRAMS[name][0], initial, constants)


test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


@pytest.mark.stress
@pytest.mark.parametrize("name", ["ssd_box_loss", "mingpt_configure"])
def test_program_same_bits_on_vulkan(name, monkeypatch, gpu):
    """On a Vulkan device each number is the CPU backend's, bit for bit (and so PyTorch's, as above)."""
    initial, expected = _run(name, "torch", monkeypatch)
    _, on_cpu = _run(name, "vkml", monkeypatch, initial)
    _, on_vulkan = _run(name, "vkml", monkeypatch, initial, {"DEVICE": str(gpu)})
    assert _numbers(on_vulkan) == _numbers(on_cpu)
    np.testing.assert_allclose(_numbers(on_vulkan), _numbers(expected), rtol=PROGRAMS[name][1], atol=1e-6)


def _criteria(backend, monkeypatch):
    """The Annotated Transformer's LabelSmoothing and the SSD MultiBox loss (with their gradients) on
    fixed inputs: the short form of two of the comparisons above, for ``make test``."""
    rng = np.random.default_rng(3)
    annotated = _load("annotated_transformer", backend, monkeypatch)
    torch = annotated.torch
    logits = torch.tensor(rng.standard_normal((6, 7)).astype(np.float32), requires_grad=True)
    target = torch.tensor([3, 0, 5, 0, 1, 6])  # two padding rows: index_fill_ over nonzero
    smoothing = annotated.LabelSmoothing(size=7, padding_idx=0, smoothing=0.2)
    kl = smoothing(logits.log_softmax(-1), target)
    kl.backward()
    ssd = _load("ssd_box_loss", backend, monkeypatch)
    torch = ssd.torch
    images, targets = ssd.synthetic_batch(np.random.default_rng(0))
    priors = ssd.make_priors()
    loc = torch.tensor(0.1 * rng.standard_normal((3, priors.size(0), 4)).astype(np.float32), requires_grad=True)
    conf = torch.tensor(rng.standard_normal((3, priors.size(0), 3)).astype(np.float32), requires_grad=True)
    loss_l, loss_c = ssd.MultiBoxLoss(3, 0.5, 3)((loc, conf, priors), [torch.tensor(t) for t in targets])
    (loss_l + loss_c).backward()
    return [kl.item(), logits.grad.flatten().tolist(), loss_l.item(), loss_c.item()] + [
        loc.grad.flatten().tolist(),
        conf.grad.flatten().tolist(),
    ]


def test_program_losses_match_pytorch(monkeypatch):
    expected = _criteria("torch", monkeypatch)
    got = _criteria("vkml", monkeypatch)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-5, atol=1e-6)


@pytest.mark.stress
def test_mingpt_runs_as_written_with_live_dropout(monkeypatch):
    """With its dropout live (as written) the program trains to finite numbers that differ from the
    dropout-free run: the Dropout layers reached through the ModuleDict lambda are live in train()."""
    runs = []
    for deterministic in (True, False):
        program = _load("mingpt_configure", "vkml", monkeypatch, deterministic=deterministic)
        runs.append(program.train(program.build(), steps=2))
    off, live = runs
    assert all(math.isfinite(x) for x in live["losses"] + live["grad_norms"])
    assert live["losses"][0] != off["losses"][0]
    assert live["n_params"] == off["n_params"] and live["group_sizes"] == off["group_sizes"] == [9, 20]
