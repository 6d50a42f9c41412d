"""The host side of building layer graphs: what the op calls keep between steps, and layers
whose graphs are built on nodes (vkml/nn/functional_layers.py) still behaving as their ops."""

from __future__ import annotations

import numpy as np

import vkml
import vkml.nn.functional as F
from vkml.frontend import autograd


def test_running_stats_remembered_once_per_buffer():
    # batch_norm hands its running statistics to the next optimizer step; a loop with no step
    # (evaluation in train mode, a warm-up) used to add both buffers again at each call, and
    # each call walked the whole list: its cost grew with the number of calls.
    autograd.take_backward_roots()
    x = vkml.tensor(np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2))
    mean, var = vkml.zeros(2), vkml.ones(2)
    for _ in range(40):
        F.batch_norm(x, mean, var, training=True)
    roots = autograd.take_backward_roots()
    assert len(roots) == 2 and {id(r) for r in roots} == {id(mean), id(var)}
    np.testing.assert_allclose(mean.numpy(), np.array([5.5, 9.5]) * (1 - 0.9**40), rtol=1e-5)


def test_max_pool_of_one_tap_is_not_a_view_of_its_input():
    x = vkml.tensor(np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2))
    y = F.max_pool2d(x, 1)
    y.add_(1)
    x.mul_(10)
    np.testing.assert_array_equal(x.numpy().ravel(), np.arange(8) * 10)
    np.testing.assert_array_equal(y.numpy().ravel(), np.arange(8) + 1)
