"""Eight official PyTorch tutorials and recipes (tests/programs/) run under vkml as under PyTorch, by their
import lines alone: the ``torch.autograd.functional`` API in a Newton-CG loop (autograd_functional_newton),
"Double Backward with Custom Functions" and "Fusing Convolution and Batch Norm" (double_backward_fused_convbn),
"Hooks for autograd saved tensors" (saved_tensor_hooks), "Autograd mechanics" (autograd_mechanics), the
reproducibility, default-device, general-checkpoint and benchmark recipes (reproducible_checkpoint_recipes),
the Mario double DQN with frame stacking (mario_frame_stack), "Introduction to TorchScript"
(torchscript_intro) and the optimizer step fused into the backward pass (optimizer_in_backward); each
docstring lists the idioms it checks.

The comparisons run with ``make test-all`` (``-m stress``); ``make test`` compares the autograd-mechanics
program, the cheapest. The gaps they found are tested in tests/test_program_fixes_s.py.
"""

from __future__ import annotations

from test_programs import compare_program, program_tests

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


def test_autograd_mechanics_matches_pytorch(monkeypatch):
    """Node hooks, tensor hooks, retain_grad, accumulation and a gradient penalty: PyTorch's numbers."""
    compare_program("autograd_mechanics", monkeypatch, 2, 1e-4)
