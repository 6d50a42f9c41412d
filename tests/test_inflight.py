"""Submissions the host does not wait for (vkml/runtime/vulkan/recordings.py, vkml/runtime/vulkan/backend.py).

A run returns once submitted; the host waits only to read results, to free memory in-flight
work may use, to reuse a command buffer or replace descriptor pools still in use (uploads:
tests/test_upload_overlap.py).
Whether a wait is made is decided from serial numbers, not from what the device happens to
have finished, so the ``host_waits`` and ``waits_skipped`` counts asserted here are exact.
Each test that counts gets a device of its own (a fresh memory pool: ranges are predictable).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vkml
import vkml.nn as nn
import vkml.nn.functional as F
from vkml.errors import DeviceError
from vkml.runtime.counters import counters, snapshot
from vkml.runtime.vulkan import transfers
from vkml.runtime.vulkan.backend import VulkanDevice
from vkml.runtime.vulkan.descriptors import DescriptorSets
from vkml.runtime.vulkan.memory import MemoryChoice

DATA = np.linspace(-2.0, 3.0, 4096, dtype=np.float32)


@pytest.fixture
def dev(gpu):
    device = VulkanDevice(gpu.index)
    yield device
    device.synchronize()


def _delta(before: dict, key: str) -> int:
    return counters[key] - before[key]


def test_a_realize_returns_unwaited_and_a_download_waits_for_its_writer(dev):
    x = vkml.tensor(DATA, device=dev)
    before = snapshot()
    y = (x * 3.0 + 1.0).realize()
    assert dev.recordings.pending and _delta(before, "host_waits") == 0
    assert np.array_equal(y.numpy(), DATA * np.float32(3.0) + np.float32(1.0))  # right after the submission
    assert _delta(before, "host_waits") == 1 and not dev.recordings.pending
    y.numpy()
    x.numpy()  # written by an upload, never by a run: nothing to wait for
    assert _delta(before, "host_waits") == 1


@pytest.mark.parametrize("ring", ["1", "0"])
def test_runs_in_flight_are_ordered_by_the_barrier_that_ends_each(dev, ring, monkeypatch):
    """Read-after-write, write-after-read and write-after-write between runs nobody waited for. With the
    eager scalars' ring (``float(i)`` changes at every realize: it moves to a ring after two) the host
    waits once, when the ring's memory, freed by runs still in flight, is first written; without it, never."""
    monkeypatch.setenv("VKML_EAGER_SCALARS", ring)
    x = vkml.tensor(DATA, device=dev)
    before = snapshot()
    y = x
    for i in range(6):  # each reads the last one's result; each freed range is reused by a later run
        y = (y * 0.5 + float(i)).realize()
    expected = DATA
    for i in range(6):
        expected = expected * np.float32(0.5) + np.float32(i)
    waits = 1 if ring == "1" and dev.kind == "vulkan" else 0
    assert _delta(before, "submissions") == 6 and _delta(before, "host_waits") <= waits
    assert np.array_equal(y.numpy(), expected)


def test_a_download_skips_the_wait_for_work_that_did_not_write_its_buffer(dev):
    x = vkml.tensor(DATA, device=dev)
    y = (x + 1.0).realize()
    y.numpy()
    before = snapshot()
    z = (y * 2.0).realize()  # in flight, reads y
    assert np.array_equal(y.numpy(), DATA + np.float32(1.0))
    assert _delta(before, "host_waits") == 0 and _delta(before, "waits_skipped") == 1
    assert np.array_equal(z.numpy(), (DATA + np.float32(1.0)) * np.float32(2.0))
    assert _delta(before, "host_waits") == 1


def test_small_downloads_read_an_uncached_mapping_directly(gpu):
    """The H200's memory: mapped, not host-cached. A staged copy would queue behind all submitted work."""
    dev = VulkanDevice(gpu.index)
    choice = dev.memory.choice
    dev.memory.choice = MemoryChoice(choice.device_type, choice.device_type, True, False, True)
    x = vkml.tensor(DATA, device=dev)
    small, large = (x + 1.0).sum().realize(), (x.reshape(1, -1) * x.reshape(-1, 1)[:4]).realize()
    before = snapshot()
    assert np.isclose(small.item(), np.sum(DATA + 1.0, dtype=np.float64), rtol=1e-6)
    assert _delta(before, "transfer_submissions") == 0
    # Beyond a few scalars the PCIe round trip of each read costs more than a staged copy (64 KiB here).
    assert large.numel() * 4 > transfers.UNCACHED_READ_LIMIT
    assert np.array_equal(large.numpy(), DATA[None, :] * DATA[:4, None])
    assert _delta(before, "transfer_submissions") == 1
    dev.synchronize()


def test_an_upload_passes_over_a_range_freed_in_flight_and_does_not_wait(dev):
    x = vkml.tensor(DATA, device=dev)
    y = (x * 2.0).realize()  # in flight, reads x
    freed = x.node.buffer.binding_key
    del x
    gc.collect()
    before = snapshot()
    z = vkml.tensor(np.full(DATA.size, 7.0, np.float32), device=dev)  # x's range is the first fit
    assert z.node.buffer.binding_key != freed  # ...but the run may still read it: an idle range is taken
    assert _delta(before, "host_waits") == 0 and _delta(before, "transfer_submissions") == 0
    assert _delta(before, "waits_skipped") == 1  # written through the mapping while the run goes on
    assert np.array_equal(y.numpy(), DATA * np.float32(2.0))
    assert np.array_equal(z.numpy(), np.full(DATA.size, 7.0, np.float32))


def test_an_upload_into_memory_no_pending_work_uses_does_not_wait(dev):
    x = vkml.tensor(DATA, device=dev)
    (x + 1.0).numpy()
    before = snapshot()
    vkml.tensor(DATA, device=dev)
    assert _delta(before, "host_waits") == 0


def test_a_recording_still_in_flight_is_waited_for_before_it_is_submitted_again(dev):
    x = vkml.tensor(DATA, device=dev)
    expected = DATA * np.float32(5.0) - np.float32(1.0)
    for _ in range(2):  # settle: the same batch on the same memory from now on
        (x * 5.0 - 1.0).numpy()
    before = snapshot()
    first = (x * 5.0 - 1.0).realize()
    range_of_first = first.node.buffer.binding_key
    del first
    second = (x * 5.0 - 1.0).realize()  # the same ranges: the first run's command buffer again
    assert second.node.buffer.binding_key == range_of_first
    assert _delta(before, "recordings_reused") == 2
    assert _delta(before, "host_waits") == 1  # that command buffer was still pending
    assert np.array_equal(second.numpy(), expected)


def test_a_cached_descriptor_set_is_bound_again_while_in_flight(dev):
    x = vkml.tensor(DATA, device=dev)
    y = (x + 1.0).realize()
    written = dev.descriptors.sets_written
    before = snapshot()
    del y
    z = (x - 1.0).realize()  # another kernel on the same ranges: the same descriptor set
    assert dev.descriptors.sets_written == written and _delta(before, "host_waits") == 0
    assert np.array_equal(z.numpy(), DATA - np.float32(1.0))


def test_descriptor_pools_are_replaced_only_once_nothing_is_in_flight(gpu):
    dev = VulkanDevice(gpu.index)
    dev.descriptors.destroy()
    dev.descriptors = DescriptorSets(dev.logical, sets_per_pool=2)
    xs = [vkml.tensor(DATA + i, device=dev) for i in range(3)]
    ys = vkml.realize(*(x * 2.0 for x in xs))  # three sets: a second pool
    assert len(dev.descriptors.pools) == 2
    before = snapshot()
    z = (xs[0] + 1.0).realize()  # folds the pools: waits for the run that uses them first
    assert _delta(before, "host_waits") == 1 and len(dev.descriptors.pools) == 1
    for i, y in enumerate(ys):
        assert np.array_equal(y.numpy(), (DATA + np.float32(i)) * np.float32(2.0))
    assert np.array_equal(z.numpy(), DATA + np.float32(1.0))
    dev.synchronize()


def test_a_block_freed_while_in_flight_is_waited_for_before_it_is_released(dev):
    dev.memory.spare_limit = 0  # freed dedicated blocks go back to the driver at once
    big = dev.memory.block_size // 8 + 64  # float32 elements past half a block: a dedicated block
    x = vkml.tensor(np.ones(big, np.float32), device=dev)
    assert x.node.buffer.allocation.block.dedicated
    y = x.sum().realize()  # in flight, reads x's block
    before = snapshot()
    del x
    vkml.tensor(DATA, device=dev)  # the next allocation releases x's block
    assert _delta(before, "host_waits") == 1
    assert y.item() == float(big) and _delta(before, "host_waits") == 1


def test_synchronize_waits_for_everything_and_then_for_nothing(dev):
    x = vkml.tensor(DATA, device=dev)
    (x * 2.0).realize()
    before = snapshot()
    dev.synchronize()
    dev.synchronize()
    assert _delta(before, "host_waits") == 1 and not dev.recordings.pending
    vkml.device("cpu").synchronize()  # the CPU's runs are complete when they return


class _FailingWaits:
    """The device's raw functions, with vkWaitForFences reporting a lost device."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        if name == "vkWaitForFences":
            return lambda *args: -4  # VK_ERROR_DEVICE_LOST
        return getattr(self._lib, name)


def test_a_failure_reported_at_the_wait_raises_device_error_naming_the_run(dev):
    x = vkml.tensor(DATA, device=dev)
    y = (x * 2.0).realize()
    recordings = dev.recordings
    real, spin = recordings.lib, recordings.spin_seconds
    recordings.lib = _FailingWaits(real)
    recordings.spin_seconds = 0  # a GPU polls the fence first (vkGetFenceStatus): go straight to the wait
    try:
        with pytest.raises(DeviceError, match=r"vulkan:\d: submission \d+ \(1 dispatches.*VK_ERROR_DEVICE_LOST"):
            y.numpy()
    finally:
        recordings.lib, recordings.spin_seconds = real, spin
        for fences, serial in zip(recordings.fences, recordings.serials):  # let the real work finish
            if serial:
                real.vkWaitForFences(recordings.device, 1, fences, 1, 1 << 62)


def _train(device, steps: int) -> tuple[list, list]:
    vkml.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3)).to(device)
    opt = vkml.optim.Adam(net.parameters(), lr=0.01)
    g = np.random.default_rng(0)
    x = vkml.tensor(g.standard_normal((40, 2)).astype(np.float32), device=device)
    y = vkml.tensor(g.integers(0, 3, 40), device=device)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = [p.numpy().view(np.uint32) for p in net.parameters()]
    return np.array(losses, np.float32).view(np.uint32).tolist(), [p.tolist() for p in params]


@pytest.mark.parametrize("runs", ["split", "end", "lazy"])
def test_training_bits_equal_the_synchronous_runtime(gpu, monkeypatch, runs):
    monkeypatch.setenv("VKML_ASYNC", "0")
    monkeypatch.setenv("VKML_BACKWARD_RUNS", "lazy")
    synchronous = _train(gpu, 4)
    monkeypatch.setenv("VKML_ASYNC", "1")
    monkeypatch.setenv("VKML_BACKWARD_RUNS", runs)
    assert _train(gpu, 4) == synchronous


def _fresh_descriptor_pool(gpu) -> None:
    """Start from an empty descriptor pool: one that earlier tests on this device filled would overflow
    mid-loop, and the run after an overflow folds the pools, waiting for the work in flight."""
    gpu.synchronize()
    gpu.descriptors._sets_left = 0  # the next set opens a second pool...
    (vkml.ones(7, device=gpu) * 3).numpy()
    (vkml.ones(7, device=gpu) * 3).numpy()  # ...and this run folds both into one, empty (nothing in flight)
    assert len(gpu.descriptors.pools) == 1


def test_a_training_step_waits_once_for_its_loss(gpu, monkeypatch):
    monkeypatch.setenv("VKML_BACKWARD_RUNS", "split")
    # Parameters that move into a ring (vkml/schedule/eager_scalars.py) write its entries behind finished
    # runs while later ones go on, each write a skipped wait: this counts the reads of the step alone.
    monkeypatch.setenv("VKML_EAGER_SCALARS", "0")
    _fresh_descriptor_pool(gpu)
    vkml.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3)).to(gpu)
    opt = vkml.optim.Adam(net.parameters(), lr=0.01)
    x, y = vkml.tensor(DATA[:64].reshape(32, 2), device=gpu), vkml.tensor(np.arange(32) % 3, device=gpu)
    for step in range(4):
        before = snapshot()
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()  # submits the forward, then the gradients
        opt.step()  # submits the update
        assert _delta(before, "submissions") == 3 and _delta(before, "host_waits") == 0, step
        loss.item()  # waits for the forward only: the gradients and the update may still run
        if step:  # (the first step compiles, and its recordings may fold the descriptor pools)
            assert _delta(before, "host_waits") == 1 and _delta(before, "waits_skipped") == 0, step
    gpu.synchronize()
