"""Uploads that overlap the GPU work in flight (vkml/runtime/vulkan/backend.py, memory.py, transfers.py).

A training loop's ``x.to(device)`` must not wait for the previous step's GPU work: a new
buffer gets a memory range no submitted work may still use, written through the mapping while
the GPU runs; where it must reuse a range freed in flight (or the memory is not mapped) the
data is staged and its copy queued behind that work. Counts are exact (decided from serial
numbers, tests/test_inflight.py); the results are checked against the CPU backend's bits.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkml
import vkml.nn as nn
import vkml.nn.functional as F
from vkml.ir import types as T
from vkml.ir.builder import KernelBuilder, const, global_id, if_, loop
from vkml.runtime.base import Dispatch
from vkml.runtime.counters import counters, snapshot
from vkml.runtime.vulkan import transfers
from vkml.runtime.vulkan.backend import VulkanDevice
from vkml.runtime.vulkan.memory import MemoryChoice, RangeAllocator, disjoint
from vkml.utils.data import DataLoader, TensorDataset

N = 4096  # float32 elements: 16 KiB
DATA = np.linspace(-2.0, 3.0, N, dtype=np.float32)


def _delta(before: dict, key: str) -> int:
    return counters[key] - before[key]


def _reader_kernel():
    """out[i] = the sum over j of x[j] * x[i]: every invocation reads all of x (16M products for
    4096 elements, a while on lavapipe), so a host write into x's memory right after the
    submission would land while the run still reads it."""
    kb = KernelBuilder("upload_overlap_reader", (64, 1, 1))
    x, out = kb.buffer("x", T.float32, "read"), kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            zero, one = const(0, T.uint32), const(1, T.uint32)
            (total,) = loop(zero, n, one, [const(0.0, T.float32)], lambda j, acc: (acc + x[j] * x[i],))
            out[i] = total
    return kb.finish()


def _read(dev, kernel, x):
    """Submit the reader over buffer ``x`` (returns at once); its output buffer."""
    out = dev.allocate(T.float32, N)
    dev.run([Dispatch(kernel, (N // 64, 1, 1), {"x": x, "out": out}, {"n": N})])
    return out


def _expected(dev, kernel) -> np.ndarray:
    """The reader's result over DATA, once nothing else runs (and its pipeline made)."""
    x = dev.upload_new(T.float32, DATA)
    return dev.download(_read(dev, kernel, x))


def test_an_upload_that_must_reuse_a_range_freed_in_flight_is_queued_behind_the_run(gpu):
    dev = VulkanDevice(gpu.index, block_size=2 * N * 4)  # room for two such buffers: x, then out
    kernel = _reader_kernel()
    expected = _expected(dev, kernel)
    x = dev.upload_new(T.float32, DATA)
    out = _read(dev, kernel, x)  # in flight, reads x
    freed = x.binding_key
    del x
    before = snapshot()
    z = dev.upload_new(T.float32, np.full(N, 7.0, np.float32))  # nothing else fits: x's range
    waits, queued = _delta(before, "host_waits"), _delta(before, "transfer_submissions")
    assert z.binding_key == freed
    assert np.array_equal(dev.download(out), expected)  # the run read x, not z
    assert np.array_equal(dev.download(z), np.full(N, 7.0, np.float32))
    assert waits == 0 and queued == 1  # the copy was submitted behind the run, unwaited
    dev.synchronize()


def test_an_upload_into_a_buffer_a_run_still_reads_is_queued_behind_it(gpu):
    dev = VulkanDevice(gpu.index)
    kernel = _reader_kernel()
    expected = _expected(dev, kernel)
    x = dev.upload_new(T.float32, DATA)
    out = _read(dev, kernel, x)  # in flight, reads x
    before = snapshot()
    dev.upload(x, DATA * np.float32(2.0))
    waits, queued = _delta(before, "host_waits"), _delta(before, "transfer_submissions")
    assert np.array_equal(dev.download(out), expected)
    assert np.array_equal(dev.download(x), DATA * np.float32(2.0))
    assert waits == 0 and queued == 1
    dev.synchronize()


def _train(device, batches: int, every: int, loader_seed: int = 1) -> tuple[list, list, list]:
    """A DataLoader loop as PyTorch users write it; the loss read every ``every`` steps (0: never);
    the host waits and queued copies of each step; the losses' and parameters' bits."""
    vkml.manual_seed(0)
    g = np.random.default_rng(0)
    data = TensorDataset(
        vkml.tensor(g.standard_normal((batches * 8, 6)).astype(np.float32)), vkml.tensor(g.integers(0, 3, batches * 8))
    )
    net = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).to(device)
    opt = vkml.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(data, batch_size=8, shuffle=True, generator=vkml.Generator().manual_seed(loader_seed))
    losses, steps = [], []
    for step, (x, y) in enumerate(loader):
        before = snapshot()
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        uploaded = (_delta(before, "host_waits"), getattr(device, "recordings", None) and device.recordings.pending)
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
        if every and step % every == 0:
            loss.item()
        steps.append((*uploaded, _delta(before, "host_waits"), _delta(before, "transfer_submissions")))
    bits = [np.float32(loss.item()).view(np.uint32) for loss in losses]
    return bits, [p.numpy().view(np.uint32).tolist() for p in net.parameters()], steps


class _Unmapped:
    """Make ``dev``'s buffer memory look unmapped for writes (a discrete GPU without resizable BAR):
    every upload is staged and its copy queued."""

    def __init__(self, dev):
        choice = dev.memory.choice
        dev.memory.choice = MemoryChoice(choice.device_type, choice.device_type, False, True, choice.coherent)


@pytest.mark.parametrize("memory", ["mapped", "unmapped"])
def test_a_dataloader_step_waits_only_for_the_loss_it_reads(gpu, memory):
    """Batch N+1 is on the device while step N's backward and update still run: written through
    the mapping (mapped memory), or staged with its copy queued behind them (unmapped); the host
    waited for nothing but each step's ``loss.item()`` (the forward; not even that where a realize
    since found the forward finished: it reads finished checks without waiting). Over 10 steps the
    ring of staging buffers wraps: a write into memory a run still used would change the bits."""
    dev = VulkanDevice(gpu.index)
    if memory == "unmapped":
        _Unmapped(dev)
    bits, params, steps = _train(dev, 10, every=1)
    assert (bits, params) == _train(vkml.device("cpu"), 10, every=1)[:2]
    for step, (upload_waits, pending, waits, queued) in enumerate(steps):
        assert upload_waits == 0 and waits <= 1, step
        assert pending or step == 0, step  # step N's gradients and update were in flight meanwhile
        if step:  # (the first step also uploads cross_entropy's class indices, kept from then on)
            assert queued == (0 if memory == "mapped" else 2), step
    dev.synchronize()


@pytest.mark.parametrize("memory", ["mapped", "unmapped"])
def test_a_loop_that_never_reads_gives_the_cpu_bits(gpu, memory):
    """No ``loss.item()``: the host runs ahead until the recordings and transfer slots it reuses
    make it wait for work a few steps back. Small blocks: uploads find idle ranges among many
    freed in flight (mapped), or their copies reuse such ranges (unmapped)."""
    dev = VulkanDevice(gpu.index, block_size=64 << 10)
    if memory == "unmapped":
        _Unmapped(dev)
    bits, params, steps = _train(dev, 12, every=0, loader_seed=2)
    assert (bits, params) == _train(vkml.device("cpu"), 12, every=0, loader_seed=2)[:2]
    assert sum(step[3] for step in steps[1:]) == (0 if memory == "mapped" else 2 * 11)
    dev.synchronize()


def test_a_queued_upload_larger_than_its_chunk_goes_round_the_ring(gpu, monkeypatch):
    """16 chunks through 8 transfer slots: the ninth reuses the first slot's staging memory once
    that copy is complete (the host waits for it), and so on."""
    monkeypatch.setattr(transfers, "QUEUED_CHUNK", 1024)
    dev = VulkanDevice(gpu.index)
    _Unmapped(dev)
    before = snapshot()
    x = vkml.tensor(DATA, device=dev)
    waits, queued = _delta(before, "host_waits"), _delta(before, "transfer_submissions")
    assert np.array_equal(x.numpy(), DATA) and np.array_equal((x * 2.0).numpy(), DATA * np.float32(2.0))
    assert queued == N * 4 // 1024 and waits == queued - len(dev.recordings.transfer_slots)
    dev.synchronize()


@pytest.mark.parametrize("memory", ["mapped", "unmapped"])
def test_the_host_array_may_change_once_to_returns(gpu, memory):
    """``.to(device, non_blocking=True)`` has copied the host data when it returns, also when the
    copy itself is queued behind work in flight (PyTorch's pinned non-blocking copy has not)."""
    dev = VulkanDevice(gpu.index)
    if memory == "unmapped":
        _Unmapped(dev)
    array = DATA.copy()
    host = vkml.from_numpy(array)  # shares array's memory
    y = (vkml.tensor(DATA, device=dev) * 2.0).realize()  # in flight
    x = host.to(dev, non_blocking=True)
    array[:] = 0.0
    assert np.array_equal(x.numpy(), DATA) and np.array_equal(y.numpy(), DATA * np.float32(2.0))
    dev.synchronize()


def test_the_range_allocator_passes_over_ranges_to_avoid():
    """The first fit that overlaps none of the given ranges (merged where they overlap or touch)."""
    ranges = RangeAllocator(1024)
    avoid = disjoint([(0, 100, 5), (90, 200, 3), (300, 320, 1)])
    assert avoid == ([0, 300], [200, 320])
    assert ranges.allocate(64, 64, avoid) == 320  # [256, 320) would overlap [300, 320)
    assert ranges.allocate(100, 64, avoid) == 384  # [256, 356) passes the free range's end (320)
    assert ranges.allocate(600, 64, avoid) is None
    assert ranges.allocate(64, 64) == 0  # nothing to avoid: first fit
