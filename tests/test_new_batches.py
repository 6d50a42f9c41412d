"""A training loop that feeds a new batch every step replays its realizes' recordings (issue 20).

Each new batch is a new upload, which used to move where the step's outputs landed (the pool handed
a realize the lowest free range of each size, and the upload's range came and went among them), so
the forward and the gradients recorded their command buffers anew every step. A plan's buffers now
go back to the ranges they had on its last replays (``MemoryPool.take_placed``), uploads cycle over
the ranges uploads gave back, labels uploaded within range need no device check, and plan lookup
chooses the matmul tiles again only when what they depend on changed. Counted, not timed.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml
import vkml.nn.functional as F
from vkml import debug
from vkml.kernels.matmul import tiled
from vkml.schedule import checks


def _batches(steps: int, batch: int = 32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps, batch, 8)).astype(np.float32)
    y = rng.integers(0, 3, (steps, batch))
    return x, y


@pytest.mark.stress  # ~13 s on lavapipe with a fresh kernel cache: tests/test_host_cost.py counts the demo's step
def test_a_step_with_a_new_batch_reuses_its_recordings(gpu):
    steps = 10
    x_np, y_np = _batches(steps)
    vkml.manual_seed(0)
    # tests/test_host_cost.py's MLP: its kernels are made once for both
    model = vkml.nn.Sequential(vkml.nn.Linear(8, 16), vkml.nn.ReLU(), vkml.nn.Linear(16, 3)).to(gpu)
    peer = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p, q in zip(model.parameters(), peer.parameters()):
            q.copy_(torch.from_numpy(p.numpy()))
    opt = vkml.optim.Adam(model.parameters(), lr=0.01)
    peer_opt = torch.optim.Adam(peer.parameters(), lr=0.01)
    reused, losses, peer_losses = [], [], []
    for step in range(steps):
        # A new batch every step, uploaded as a data loader's is, while the last step may still run.
        x, y = vkml.tensor(x_np[step], device=gpu), vkml.tensor(y_np[step], device=gpu)
        before = debug.counters()["recordings_reused"]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        reused.append(debug.counters()["recordings_reused"] - before)
        peer_loss = torch.nn.functional.cross_entropy(peer(torch.from_numpy(x_np[step])), torch.from_numpy(y_np[step]))
        peer_opt.zero_grad()
        peer_loss.backward()
        peer_opt.step()
        peer_losses.append(peer_loss.item())
    np.testing.assert_allclose(losses, peer_losses, rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), peer.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    # The forward, the gradients and the update each submit an earlier recording again once the
    # parameters that change every step moved into their rings (the first steps).
    assert reused[-3:] == [3, 3, 3], reused


def test_a_realize_keeps_its_output_memory_while_uploads_of_its_size_come_between(gpu):
    a_np = np.arange(1000, dtype=np.float32)
    a = vkml.tensor(a_np, device=gpu)
    bindings, results = [], []
    for step in range(8):
        b_np = np.full(1000, step, np.float32)
        b = vkml.tensor(b_np, device=gpu)  # an upload of the output's size, a new one every step
        out = (a + b).realize()
        bindings.append(out.node.buffer.binding_key)
        results.append((out.numpy(), a_np + b_np))
        del out, b
    for got, want in results:
        np.testing.assert_array_equal(got, want)
    assert len(set(bindings[2:])) == 1, bindings  # the output's range, step after step


def test_a_plans_buffers_never_alias_live_ones(gpu):
    # The ranges a plan had are taken again only when free: results kept alive get other memory.
    x = vkml.tensor(np.arange(256, dtype=np.float32), device=gpu)
    kept = [(x * float(k)).realize() for k in range(6)]  # the same plan, each result kept
    assert len({t.node.buffer.binding_key for t in kept}) == 6
    for k, t in enumerate(kept):
        np.testing.assert_array_equal(t.numpy(), np.arange(256, dtype=np.float32) * k)


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_labels_uploaded_within_range_need_no_device_check(where, request, monkeypatch):
    device = vkml.device("cpu") if where == "cpu" else request.getfixturevalue("gpu")
    made = []
    defer = checks.defer
    monkeypatch.setattr(checks, "defer", lambda *args, **kwargs: made.append(defer(*args, **kwargs)) or made[-1])
    logits_np = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    labels = np.array([0, 2, 1, 2])
    logits = vkml.tensor(logits_np, device=device)
    dataset = vkml.tensor(np.tile(labels, 3), device=device)
    for target in (vkml.tensor(labels, device=device), dataset[4:8], dataset[5:9]):  # a batch; windows
        got = F.cross_entropy(logits, target).item()
        want = torch.nn.functional.cross_entropy(torch.from_numpy(logits_np), torch.from_numpy(target.numpy()))
        assert got == pytest.approx(want.item(), rel=1e-6)
    assert made == []  # no check built: the host saw every value at the upload
    computed = vkml.tensor(labels, device=device) + 0  # computed on the device: checked there
    F.cross_entropy(logits, computed).item()
    assert len(made) == 1


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_labels_uploaded_out_of_range_raise_as_torch(where, request):
    device = vkml.device("cpu") if where == "cpu" else request.getfixturevalue("gpu")
    logits_np = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    labels = np.array([0, 5, 1, 2])
    with pytest.raises(IndexError, match="Target 5 is out of bounds") as expected:
        torch.nn.functional.cross_entropy(torch.from_numpy(logits_np), torch.from_numpy(labels))
    logits = vkml.tensor(logits_np, device=device)
    with pytest.raises(IndexError, match=str(expected.value).strip(".")):
        F.cross_entropy(logits, vkml.tensor(labels, device=device)).item()
    # A window of the labels without the bad one passes; one with it raises.
    dataset = vkml.tensor(np.concatenate([labels, [1, 1, 0, 2]]), device=device)
    F.cross_entropy(logits, dataset[4:8]).item()
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(logits, dataset[1:5]).item()


def test_labels_written_after_their_upload_are_checked_again(gpu):
    logits = vkml.tensor(np.zeros((3, 3), np.float32), device=gpu)
    target = vkml.tensor(np.array([0, 1, 2]), device=gpu)
    gpu.upload(target.node.buffer, np.array([0, 7, 2]))  # the values the host saw are gone
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(logits, target).item()


def test_plan_lookup_sees_a_patched_tile_choice(gpu, monkeypatch):
    calls = []
    choose = tiled.choose_config

    def counted(features, m, n, k):
        calls.append((m, n, k))
        return choose(features, m, n, k)

    monkeypatch.setattr(tiled, "choose_config", counted)
    a_np, w_np = (np.random.default_rng(1).standard_normal((2, 33, 33)).astype(np.float32)[i] for i in (0, 1))
    a, w = vkml.tensor(a_np, device=gpu), vkml.tensor(w_np, device=gpu)
    want = torch.from_numpy(a_np) @ torch.from_numpy(w_np)
    for _ in range(3):  # plans, then replays that check the tiles once
        np.testing.assert_allclose((a @ w).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    calls.clear()
    for _ in range(3):
        (a @ w).numpy()
    assert calls == []  # replays do not choose the tiles again
    config = tiled.MatmulConfig(8, 4, 2, 1, 1)
    monkeypatch.setattr(tiled, "choose_config", lambda features, m, n, k: config)
    plans = debug.counters()["plans"]
    np.testing.assert_allclose((a @ w).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    assert debug.counters()["plans"] == plans + 1  # the patch is seen: a plan with its tiles
