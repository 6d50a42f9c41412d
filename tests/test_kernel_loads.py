"""A fused kernel reads at most MAX_KERNEL_LOADS buffers: lavapipe binds 32 storage buffers a stage.

Before the cap, a sum of 32 separately realized tensors fused into one kernel that read 32 buffers:
lavapipe returned a wrong sum without an error, and 33 crashed the process in vkQueueSubmit.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkml
from vkml.runtime.counters import counters
from vkml.schedule import scheduler


@pytest.mark.parametrize("count", [32, 40])
def test_a_long_sum_of_realized_tensors_is_right_on_every_device(count, gpu):
    values = [np.full(8, i + 1, np.float32) for i in range(count)]
    for device in (vkml.device("cpu"), gpu):
        tensors = [vkml.tensor(v, device=device) for v in values]
        for t in tensors:
            t.realize()
        acc = tensors[0]
        for t in tensors[1:]:
            acc = acc + t
        before = counters["dispatches"]
        got = acc.numpy()
        np.testing.assert_array_equal(got, np.full(8, count * (count + 1) / 2, np.float32))
        assert counters["dispatches"] - before >= 2  # split: no kernel reads more than the cap


def test_a_tree_of_many_leaves_is_split_too(gpu):
    leaves = [vkml.tensor(np.full(4, float(i), np.float32), device=gpu) for i in range(64)]
    for t in leaves:
        t.realize()
    level = leaves
    while len(level) > 1:
        level = [level[i] * 1.0 + level[i + 1] for i in range(0, len(level), 2)]
    np.testing.assert_array_equal(level[0].numpy(), np.full(4, sum(range(64)), np.float32))
    assert scheduler.MAX_KERNEL_LOADS <= 24


def _widest_kernel(monkeypatch) -> list[int]:
    """Collect the buffer count of every dispatch run from here on; returns the (growing) list."""
    from vkml import debug

    widths: list[int] = []
    record = debug.record_dispatches

    def counting(device_name, dispatches):
        widths.extend(len(d.buffers) for d in dispatches)
        return record(device_name, dispatches)

    monkeypatch.setattr(debug, "record_dispatches", counting)
    return widths


def test_reductions_computed_in_the_same_realize_count_against_the_cap(gpu, monkeypatch):
    """clip_grad_norm_'s shape: one norm per parameter, combined. Reductions made roots of their own
    were read without being counted, so 70 norms fused into one kernel reading 71 buffers (40: 41) and
    lavapipe (32 storage buffers a stage) crashed the process."""
    count = 40
    values = [np.full(3, i + 1, np.float32) for i in range(count)]
    widths = _widest_kernel(monkeypatch)
    for device in (vkml.device("cpu"), gpu):
        norms = [vkml.tensor(v, device=device).norm() for v in values]
        total = sum(norms[1:], norms[0])
        expected = sum(float(np.linalg.norm(v)) for v in values)
        assert total.item() == pytest.approx(expected, rel=1e-5)
        assert max(widths) <= 32
