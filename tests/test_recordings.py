"""Recorded command buffers submitted again (vkml/runtime/vulkan/recordings.py): only for the very same
batch on the very same memory, and what they compute is what a fresh recording computes."""

from __future__ import annotations

import gc

import numpy as np

import vkml
from vkml import debug
from vkml.runtime.base import Dispatch
from vkml.runtime.vulkan.recordings import fingerprint

DATA = np.linspace(0.5, 4.0, 1024, dtype=np.float32)


def _step(x, k: float) -> np.ndarray:
    return ((x * k + 1.0) * x).numpy()


def _expected(data: np.ndarray, k: float) -> np.ndarray:
    return (data * np.float32(k) + np.float32(1.0)) * data


def _reused() -> int:
    return debug.counters()["recordings_reused"]


def _settled(gpu, data: np.ndarray, k: float):
    """``data`` on ``gpu``, after two steps with ``k``: the state a repeated step meets from then on.

    Earlier tests' garbage, collected between two steps, would open a hole that first-fit takes
    (the steps would differ in memory); and a first step whose descriptor sets overflow the pool
    makes the next run fold the pools, which drops every recording. Both happen once."""
    gc.collect()
    x = vkml.tensor(data, device=gpu)
    for _ in range(2):
        _step(x, k)
    return x


def test_a_repeated_batch_is_submitted_again_and_reads_the_current_data(gpu):
    x = _settled(gpu, DATA, 2.0)  # the result's memory is freed when a step returns: the next step gets it again
    debug.reset_counters()
    np.testing.assert_array_equal(_step(x, 2.0), _expected(DATA, 2.0))
    assert _reused() == 1 and debug.counters()["submissions"] == 1 and debug.counters()["dispatches"] >= 1
    new = DATA[::-1].copy()
    gpu.upload(x.node.buffer, new)  # same memory, new contents
    np.testing.assert_array_equal(_step(x, 2.0), _expected(new, 2.0))
    assert _reused() == 2


def test_a_different_parameter_or_buffer_is_recorded_afresh(gpu):
    x = vkml.tensor(DATA, device=gpu)
    _step(x, 0.0)
    debug.reset_counters()
    negative_zero = _step(x, -0.0)  # equal to 0.0 as a number, not as bits
    assert _reused() == 0
    np.testing.assert_array_equal(negative_zero.view(np.uint32), _expected(DATA, -0.0).view(np.uint32))
    y = vkml.tensor(DATA + 1, device=gpu)  # the same batch over other memory
    np.testing.assert_array_equal(_step(y, -0.0), _expected(DATA + 1, -0.0))
    assert _reused() == 0


def test_replaced_descriptor_pools_drop_every_recording(gpu):
    x = _settled(gpu, DATA, 3.0)
    gpu.descriptors.generation += 1  # what a reset of the pools does: recorded sets are gone
    debug.reset_counters()
    np.testing.assert_array_equal(_step(x, 3.0), _expected(DATA, 3.0))
    assert _reused() == 0
    _step(x, 3.0)
    assert _reused() == 1


def test_timestamped_runs_reuse_recordings_and_still_time_each_dispatch(gpu):
    assert gpu.timestamp_queries.supported  # lavapipe and the H200 both write timestamps
    x = _settled(gpu, DATA, 5.0)
    with gpu.timestamped() as runs:
        _step(x, 5.0)
        debug.reset_counters()
        np.testing.assert_array_equal(_step(x, 5.0), _expected(DATA, 5.0))
    assert _reused() == 1
    assert len(runs) == 2 and len(runs[0]) == len(runs[1]) >= 1
    assert all(seconds >= 0.0 for seconds in runs[1])


def test_fingerprint_tells_parameters_apart_by_bits_and_type():
    class Buf:
        binding_key, dtype = (1, 0, 64), vkml.float32

    def key(value):
        return fingerprint([Dispatch(kernel=None, grid=(1, 1, 1), buffers={"x": Buf()}, params={"s": value})], False)

    assert key(0.5) == key(0.5)
    assert key(0.0) != key(-0.0)
    assert key(1) != key(1.0) and key(True) != key(1)
    assert key(float("nan")) != key(float("nan"))  # never reused: a NaN is not equal to itself
    assert key(0.5) != fingerprint([Dispatch(None, (1, 1, 1), {"x": Buf()}, {"s": 0.5})], True)


def test_waits_poll_the_fence_before_sleeping_where_asked(gpu, monkeypatch):
    """A GPU polls its fences for a while before sleeping (lavapipe does not: its work needs the cores)."""
    cpu_driver = gpu.logical.info.properties["deviceType"] == 4  # lavapipe: its work needs the cores
    assert (gpu.recordings.spin_seconds == 0) == cpu_driver
    polls = []
    lib = gpu.recordings.lib

    class CountingLib:  # the raw cffi lib, with vkGetFenceStatus counted
        def __getattr__(self, name):
            return getattr(lib, name)

        def vkGetFenceStatus(self, device, fence):
            polls.append(fence)
            return lib.vkGetFenceStatus(device, fence)

    monkeypatch.setattr(gpu.recordings, "lib", CountingLib())
    monkeypatch.setattr(gpu.recordings, "spin_seconds", 0.5)
    x = vkml.tensor(DATA, device=gpu)
    for k in (1.0, 2.0, 3.0):
        assert np.array_equal(_step(x, k), _expected(DATA, k))
        (x * k).realize()
        gpu.synchronize()
    assert polls  # the waits polled, and every result arrived
    monkeypatch.setattr(gpu.recordings, "spin_seconds", 1e-9)  # too short: the wait sleeps after one poll
    assert np.array_equal(_step(x, 5.0), _expected(DATA, 5.0))


def test_fence_spin_reads_its_variable(monkeypatch):
    from vkml import config

    monkeypatch.setenv("VKML_FENCE_SPIN_US", "150")
    assert config.fence_spin_us(2000) == 150
    for bad in ("-3", "soon", ""):
        monkeypatch.setenv("VKML_FENCE_SPIN_US", bad)
        assert config.fence_spin_us(2000) == 2000
