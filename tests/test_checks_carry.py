"""Value checks a training loop carries from step to step stay few when nobody reads the loss.

A class index check (vkml/schedule/checks.py) rides with the work it guards and is read with the
results. A loop that never reads its loss used to carry every earlier step's unread check into
every later realize: each realize walked and marked more of them, so a step's host time grew
with the number of steps. Checks the device has finished are now read by the next realize that
carries them.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkml
import vkml.nn as nn
import vkml.nn.functional as F
from vkml.schedule import checks


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    return vkml.device("cpu") if request.param == "cpu" else request.getfixturevalue("gpu")


def _loop(device, targets):
    """A Linear + cross_entropy + SGD step per batch of ``targets``; the loss is never read."""
    vkml.manual_seed(0)
    model = nn.Linear(4, 3).to(device)
    opt = vkml.optim.SGD(model.parameters(), lr=0.1)
    x = vkml.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4), device=device)
    for labels in targets:
        opt.zero_grad()
        # A new tensor each step, as a data loader gives: no pass is remembered for it. Computed on the
        # device (+ 0): labels uploaded within range pass at the call (tests/test_new_batches.py).
        loss = F.cross_entropy(model(x), vkml.tensor(labels, device=device) + 0)
        loss.backward()
        opt.step()
        device.synchronize()
        yield loss, model


def test_a_loop_that_never_reads_its_loss_carries_few_checks(device):
    for step, (_, model) in enumerate(_loop(device, [[0, 2]] * 10)):
        assert len(checks._open) <= 2, step
        assert len(checks._unverified.get(model.weight.node, ())) <= 2, step
    model.weight.numpy()  # read without an error: every check passed


def test_a_bad_index_in_an_unread_loop_still_raises(device):
    *_, (_, before) = _loop(device, [[0, 2]])
    expected = before.weight.numpy()  # the weight after the one good step
    targets = [[0, 2], [0, 7], [1, 2], [2, 0]]
    steps = []
    with pytest.raises(IndexError, match=r"'cross_entropy'.*Target 7 is out of bounds"):
        for step in _loop(device, targets):
            steps.append(step)
        steps[-1][0].item()  # the last loss
    model = steps[-1][1]
    # Raised at the read of the loss, or at a realize once the device had finished the check (the
    # optimizer's step, the next step's backward): a weight computed from the refused step is
    # never handed out, one from before it is the good step's.
    try:
        got = model.weight.numpy()
    except IndexError as error:
        assert "Target 7 is out of bounds" in str(error)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("labels", [[0, 2, 1], [0, 5, 1]])
def test_the_same_labels_are_checked_until_one_check_passes(device, monkeypatch, labels):
    made = []
    defer = checks.defer
    monkeypatch.setattr(checks, "defer", lambda *args, **kwargs: made.append(defer(*args, **kwargs)) or made[-1])
    logits = vkml.tensor(np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3), device=device)
    target = (vkml.tensor(labels, device=device) + 0).realize()  # computed: no uploaded range passes it
    for _ in range(4):
        loss = F.cross_entropy(logits, target).realize()  # never read
        device.synchronize()
    if max(labels) < 3:
        assert len(made) == 1  # the first check passed: the later calls make none
        assert loss.item() == pytest.approx(F.cross_entropy(logits.cpu(), target.cpu()).item())
    else:
        assert len(made) == 4  # a refused check is never a pass: every call checks, and the read raises
        with pytest.raises(IndexError, match="Target 5 is out of bounds"):
            loss.item()
