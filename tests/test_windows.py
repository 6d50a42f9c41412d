"""A view of a realized tensor at a fresh offset is a window of its memory: no new kernel.

Before, every offset was part of the kernels' structure: ``x[i:i + n].pow(2).sum()`` planned,
lowered and compiled anew at every ``i`` (issue 20 measured 0.001 of PyTorch's speed). Now the
view is rebased on an alias of the buffer that starts at an aligned position at or below ``i``
(vkml/graph/build.py), and its offset in the alias is a kernel parameter: a window has one
structure, whatever ``i`` (tests/test_view_offsets.py counts them).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

import vkml
from vkml.runtime.counters import counters

DATA = np.random.default_rng(7).standard_normal(1 << 16).astype(np.float32)


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def _sum_of_squares(x, start, n):
    return (x[start : start + n] * x[start : start + n]).sum()


def test_fresh_offsets_replay_the_plan_and_compile_nothing(dev):
    x = vkml.tensor(DATA, device=dev)
    align = dev.alias_alignment(vkml.float32)
    for start in range(100, 100 + align):  # every residue once: the structures a window can have
        _sum_of_squares(x, start, 4096).item()
    starts = range(5000, 60000, 997)  # 56 fresh offsets
    # The same bits as the sum of a tensor that starts there (computed first: it plans too).
    wants = [_sum_of_squares(vkml.tensor(DATA[start : start + 4096]), 0, 4096).item() for start in starts]
    before = dict(counters)
    for start, want in zip(starts, wants):
        assert _sum_of_squares(x, start, 4096).item() == want
    assert counters["plans"] == before["plans"]
    assert counters["kernels_compiled"] == before["kernels_compiled"]
    assert counters["pipelines_created"] == before["pipelines_created"]


CASES = {
    "slice": lambda t: t[1000:1777],
    "rows": lambda t: t.reshape(256, 256)[37:90],
    "block": lambda t: t.reshape(256, 256)[40:80, 17:200],
    "strided": lambda t: t[333:9000:7],
    "transposed": lambda t: t.reshape(256, 256)[64:128].T,
    "expanded": lambda t: t[5000:5010].reshape(10, 1).expand(10, 6),
    "padded": lambda t: torch.nn.functional.pad(t[1030:1060], (3, 2)) if isinstance(t, torch.Tensor) else None,
    "window of a window": lambda t: t[2048:40000][1000:1200][17:50],
    "select": lambda t: t.reshape(64, 1024)[33],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_windows_give_pytorchs_values(dev, name):
    make = CASES[name]
    if name == "padded":
        got = vkml.nn.functional.pad(vkml.tensor(DATA, device=dev)[1030:1060], (3, 2))
    else:
        got = make(vkml.tensor(DATA, device=dev))
    want = make(torch.from_numpy(DATA))
    assert np.array_equal(got.numpy(), want.numpy())
    assert np.array_equal((got * 2.0 + 1.0).numpy(), (want * 2.0 + 1.0).numpy())


def test_a_window_keeps_its_memory_alive_after_the_tensor_is_gone(dev):
    x = vkml.tensor(DATA, device=dev)
    window = x[4096:8192]
    del x
    gc.collect()
    for _ in range(3):  # new buffers take whatever memory is free
        vkml.ones(1 << 16, device=dev).realize()
    assert np.array_equal(window.numpy(), DATA[4096:8192])
    assert np.array_equal((window + 1.0).numpy(), DATA[4096:8192] + np.float32(1.0))


def test_windows_of_float16_bool_and_int64(dev):
    for array in (DATA.astype(np.float16), DATA > 0, (DATA * 1000).astype(np.int64)):
        x = vkml.tensor(array, device=dev)
        for start in (17, 64, 1001):
            assert np.array_equal(x[start : start + 300].numpy(), array[start : start + 300])
            assert np.array_equal(
                (x[start : start + 300] == x[start + 1 : start + 301]).numpy(),
                array[start : start + 300] == array[start + 1 : start + 301],
            )


def test_gradients_reach_the_tensor_a_window_was_taken_from(dev):
    w = vkml.tensor(DATA[:4096], device=dev, requires_grad=True)
    (w[1000:2000] * 3.0).sum().backward()
    expected = np.zeros(4096, np.float32)
    expected[1000:2000] = 3.0
    assert np.array_equal(w.grad.numpy(), expected)


def test_a_write_through_a_window_changes_the_owner_and_not_earlier_reads(dev):
    x = vkml.tensor(DATA[:4096].copy(), device=dev)
    before = x[1024:2048] * 1.0
    x[1024:2048] = 5.0
    expected = DATA[:4096].copy()
    expected[1024:2048] = 5.0
    assert np.array_equal(x.numpy(), expected)
    assert np.array_equal(before.numpy(), DATA[1024:2048])
