"""Eight official PyTorch tutorials and recipes (tests/programs/) run under vkml as under PyTorch, by their
import lines alone: the ``torch.autograd.functional`` API in a Newton-CG loop (autograd_functional_newton),
"Double Backward with Custom Functions" and "Fusing Convolution and Batch Norm" (double_backward_fused_convbn),
"Hooks for autograd saved tensors" (saved_tensor_hooks), "Autograd mechanics" (autograd_mechanics), the
reproducibility, default-device, general-checkpoint and benchmark recipes (reproducible_checkpoint_recipes),
the Mario double DQN with frame stacking (mario_frame_stack), "Introduction to TorchScript"
(torchscript_intro) and the optimizer step fused into the backward pass (optimizer_in_backward); each
docstring lists the idioms it checks.

The comparisons run with ``make test-all`` (``-m stress``), three of them also with vkml's default device
the Vulkan one. The gaps they found are tested in tests/test_program_fixes_s.py, which ``make test`` runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _numbers, compare_program, program_tests, run_program

import vkml

# name: (steps, rtol)
PROGRAMS = {
    "autograd_functional_newton": (3, 1e-4),
    "double_backward_fused_convbn": (3, 1e-4),
    "saved_tensor_hooks": (2, 1e-4),
    "autograd_mechanics": (3, 1e-4),
    "reproducible_checkpoint_recipes": (3, 1e-4),
    "mario_frame_stack": (3, 1e-4),
    "torchscript_intro": (3, 1e-4),
    "optimizer_in_backward": (3, 1e-4),
}
VARIANTS = {
    "autograd_functional_newton": [{"CG_ITERS": 2, "DAMPING": 0.5}],
    "reproducible_checkpoint_recipes": [{"WORKERS": 0, "BATCH": 3}],
    "mario_frame_stack": [{"SKIP": 1, "BATCH": 2, "SYNC_EVERY": 3}],
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


@pytest.mark.stress  # ~10 s cold on the interpreter: the fixes' own tests run in make test
def test_autograd_mechanics_matches_pytorch(monkeypatch):
    """Node hooks, tensor hooks, retain_grad, accumulation and a gradient penalty: PyTorch's numbers."""
    compare_program("autograd_mechanics", monkeypatch, 2, 1e-4)


@pytest.mark.stress
@pytest.mark.parametrize("name", ["autograd_mechanics", "saved_tensor_hooks", "optimizer_in_backward"])
def test_program_on_the_vulkan_device_matches_pytorch_on_the_cpu(gpu, monkeypatch, name):
    """Built and trained with ``torch.set_default_device`` naming the Vulkan device: node, tensor and
    accumulate hooks, saved-tensor hooks (``save_on_cpu`` among them) and the optimizer in backward there."""
    steps = PROGRAMS[name][0]
    initial, expected = run_program(name, "torch", monkeypatch, steps)
    vkml.set_default_device(gpu)
    try:
        _, got = run_program(name, "vkml", monkeypatch, steps, initial)
    finally:
        vkml.set_default_device(None)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-4, atol=1e-6, err_msg=name)
