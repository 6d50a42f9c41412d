"""ctc_loss and CTCLoss against PyTorch: values and gradients on the CPU backend, the same bits on Vulkan,
PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from layercheck import check

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

TF = torch.nn.functional


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ctc_loss: logits through log_softmax (PyTorch's gradient with respect to log_probs itself assumes
# they are normalised: its backward adds exp(log_probs); through log_softmax both agree)
CTC = [
    ("padded none", [[1, 2, 2], [3, 1, 0], [4, 4, 4]], (6, 5, 6), (3, 2, 1), {"reduction": "none"}),
    ("concatenated tensor lengths", [1, 2, 2, 3, 1, 4], "tensor", (3, 2, 1), {}),
    (
        "zero infinity sum",
        [[1, 2, 2], [3, 1, 0], [4, 4, 4]],
        (6, 1, 6),
        (3, 2, 0),
        {"reduction": "sum", "zero_infinity": True},
    ),
    ("blank 2 repeats", [[1, 1, 3], [0, 0, 0], [4, 3, 4]], (6, 6, 4), (3, 3, 2), {"blank": 2}),
]


@pytest.mark.parametrize(("what", "targets", "input_lengths", "target_lengths", "kwargs"), CTC, ids=[c[0] for c in CTC])
def test_ctc_loss_matches_torch(what, targets, input_lengths, target_lengths, kwargs, gpu):
    logits, targets = _x((6, 3, 5)), np.array(targets, np.int64)

    def call(f, module):
        def go(x, t):
            il, tl = input_lengths, target_lengths
            if input_lengths == "tensor":  # torch takes both lengths as tensors or both as tuples
                il, tl = module.tensor((6, 5, 6)), module.tensor(target_lengths)
            return f(module.nn.functional.log_softmax(x, 2), t, il, tl, **kwargs)

        return go

    device = gpu if what in ("padded none", "blank 2 repeats") else None
    check(
        call(F.ctc_loss, vkml),
        call(TF.ctc_loss, torch),
        [logits, targets],
        device,
        rtol=2e-6,
        atol=2e-6,
        grad=[True, False],
    )


def test_ctc_loss_unbatched_and_errors_match_torch():
    logits = _x((5, 4))
    got = F.ctc_loss(F.log_softmax(vkml.tensor(logits), 1), vkml.tensor([1, 3]), vkml.tensor(5), vkml.tensor(2))
    want = TF.ctc_loss(torch.tensor(logits).log_softmax(1), torch.tensor([1, 3]), torch.tensor(5), torch.tensor(2))
    assert got.shape == () and got.item() == pytest.approx(want.item(), rel=2e-6)
    lp, t = vkml.zeros(5, 2, 4), vkml.tensor([[1, 2], [3, 3]])
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 5, but got value 6"):
        F.ctc_loss(lp, t, (5, 6), (2, 2))
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at dimension 1"):
        F.ctc_loss(lp, t, (5, 4), (2, 3))
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, t, (5,), (2, 2))
    with pytest.raises(ValueError, match="x is not a valid value for reduction"):
        F.ctc_loss(lp, t, (5, 4), (2, 2), reduction="x")
    with pytest.raises(IndexError, match="ctc_loss.*out of range"):
        F.ctc_loss(lp, vkml.tensor([[1, 4], [3, 3]]), (5, 4), (2, 2)).item()


def test_ctc_loss_module_matches_torch():
    logits, targets = _x((5, 2, 4)), np.array([[0, 2, 3], [3, 3, 0]])
    mine, ref = nn.CTCLoss(blank=1, zero_infinity=True), torch.nn.CTCLoss(blank=1, zero_infinity=True)
    assert repr(mine) == repr(ref) and mine.reduction == ref.reduction == "mean"
    got = mine(F.log_softmax(vkml.tensor(logits), 2), vkml.tensor(targets), (5, 4), (3, 2)).item()
    want = ref(torch.tensor(logits).log_softmax(2), torch.tensor(targets), (5, 4), (3, 2)).item()
    assert got == pytest.approx(want, rel=2e-6)
