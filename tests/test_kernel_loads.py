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
