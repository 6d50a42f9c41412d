"""GPU timestamps of ``VulkanDevice.run`` (``timestamps=True`` and ``timestamped()``), on lavapipe."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vkml
from vkml.ir import types as T
from vkml.ir.builder import KernelBuilder, global_id, if_
from vkml.runtime.base import Dispatch
from vkml.runtime.vulkan.backend import VulkanDevice, vulkan_device_reports

pytestmark = pytest.mark.skipif(not vulkan_device_reports(), reason="no Vulkan device")


def _scale_kernel():
    """out[i] = x[i] * 2 for i < n."""
    kb = KernelBuilder("ts_scale", (64, 1, 1))
    x, out = kb.buffer("x", T.float32, "read"), kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            out[i] = x[i] * 2.0
    return kb.finish()


@pytest.fixture(scope="module")
def dev() -> VulkanDevice:
    return vkml.device("vulkan:0")


def _buffers(dev: VulkanDevice, n: int):
    x, y, z = (dev.allocate(T.float32, n) for _ in range(3))
    dev.upload(x, np.arange(n, dtype=np.float32))
    return x, y, z


def test_run_returns_one_positive_duration_per_dispatch_and_results_stay_right(dev):
    n = 4096
    x, y, z = _buffers(dev, n)
    kernel = _scale_kernel()
    grid = (n // 64, 1, 1)
    dispatches = [
        Dispatch(kernel, grid, {"x": x, "out": y}, {"n": n}),
        Dispatch(kernel, grid, {"x": y, "out": z}, {"n": n}),  # depends on the first: a barrier between
        Dispatch(kernel, (0, 1, 1), {"x": y, "out": z}, {"n": n}),  # empty grid: never launched
    ]
    seconds = dev.run(dispatches, timestamps=True)
    assert len(seconds) == 3
    assert all(math.isfinite(s) and s > 0 for s in seconds[:2])
    assert seconds[2] == 0.0
    np.testing.assert_array_equal(dev.download(z), np.arange(n, dtype=np.float32) * 4)


def test_run_without_timestamps_returns_none(dev):
    x, y, _ = _buffers(dev, 64)
    assert dev.run([Dispatch(_scale_kernel(), (1, 1, 1), {"x": x, "out": y}, {"n": 64})]) is None


def test_timestamped_collects_every_run_of_a_realize_and_stops_after_the_block(dev):
    a = vkml.tensor(np.arange(1000, dtype=np.float32), device=dev)
    with dev.timestamped() as runs:
        (a * 3 + 1).realize()
        a.sum().realize()
    assert len(runs) == 2
    assert len(runs[0]) == 1  # one fused elementwise kernel
    assert len(runs[1]) >= 1
    assert all(s > 0 for run in runs for s in run)
    (a - 1).realize()
    assert len(runs) == 2
    assert dev._timestamp_sinks == []


def test_more_dispatches_than_the_first_query_pool_holds(dev):
    x, y, _ = _buffers(dev, 64)
    kernel = _scale_kernel()
    many = [Dispatch(kernel, (1, 1, 1), {"x": x, "out": y}, {"n": 64})] * 200
    seconds = dev.run(many, timestamps=True)
    assert len(seconds) == 200 and all(s > 0 for s in seconds)
    assert dev.timestamp_queries._capacity >= 201
