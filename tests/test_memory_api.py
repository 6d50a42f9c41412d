"""vkml's memory functions, as torch.cuda's: allocated, reserved, peaks, empty_cache."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vkml


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def test_allocated_follows_live_tensors_and_the_peak_remembers(dev):
    gc.collect()
    base = vkml.memory_allocated(dev)
    vkml.reset_peak_memory_stats(dev)
    x = vkml.ones(1 << 20, device=dev).realize()  # 4 MiB
    assert vkml.memory_allocated(dev) - base == 4 << 20
    assert vkml.max_memory_allocated(dev) - base >= 4 << 20
    assert vkml.memory_reserved(dev) >= vkml.memory_allocated(dev)
    del x
    gc.collect()
    assert vkml.memory_allocated(dev) == base
    assert vkml.max_memory_allocated(dev) - base >= 4 << 20  # the peak stays until reset
    vkml.reset_peak_memory_stats(dev)
    assert vkml.max_memory_allocated(dev) == base
    stats = vkml.memory_stats(dev)
    assert stats["allocated_bytes.all.current"] == base
    assert stats["reserved_bytes.all.peak"] >= stats["reserved_bytes.all.current"]


def test_empty_cache_returns_unused_blocks_and_keeps_live_tensors(gpu):
    gc.collect()
    vkml.empty_cache(gpu)  # earlier tests' kept blocks would leave no room to keep another
    keep = vkml.tensor(np.arange(1000, dtype=np.float32), device=gpu).realize()
    big = vkml.ones(64 << 20, device=gpu).realize()  # 256 MiB: a block of its own, kept for reuse once freed
    del big
    gc.collect()
    held = vkml.memory_reserved(gpu)
    assert held - vkml.memory_allocated(gpu) >= 256 << 20  # cached, as PyTorch's allocator does
    vkml.empty_cache(gpu)
    assert vkml.memory_reserved(gpu) <= held - (256 << 20)
    assert vkml.memory_reserved(gpu) >= vkml.memory_allocated(gpu)
    assert np.array_equal(keep.numpy(), np.arange(1000, dtype=np.float32))
    assert vkml.memory_stats(gpu)["num_ooms"] >= 0
    again = (vkml.ones(64 << 20, device=gpu) * 2.0).sum().item()  # memory comes back from the driver
    assert again == 2.0 * (64 << 20)


def test_device_none_means_the_best_device():
    assert vkml.memory_allocated() == vkml.memory_allocated(vkml.best_device())
    vkml.empty_cache()  # any device: no error
