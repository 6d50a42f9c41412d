"""A realize that replays its plan on Vulkan submits a kept recording found by the plan's key
(``plan_cache.replay_key``, ``VulkanDevice.run_again``) without making its dispatches: only where every
binding and parameter is the one recorded, and what it computes is what a fresh recording computes."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import vkml
from vkml import debug
from vkml.graph.node import Node, Op
from vkml.kernels import matmul as kernels_matmul
from vkml.runtime.vulkan.recordings import fingerprint
from vkml.schedule import plan_cache, scheduler
from vkml.tensor import Tensor

DATA = np.linspace(-2.0, 3.0, 1024, dtype=np.float32)


def _reused() -> int:
    return debug.counters()["recordings_reused"]


def _step(x, k: float) -> np.ndarray:
    return (x * k + 1.0).numpy()


def _expected(data: np.ndarray, k: float) -> np.ndarray:
    return data * np.float32(k) + np.float32(1.0)


def test_the_same_graph_over_other_inputs_reads_them(gpu):
    gc.collect()
    a, b = vkml.tensor(DATA, device=gpu), vkml.tensor(DATA[::-1].copy() * 3, device=gpu)
    for _ in range(2):  # each input's recording, then replays of both
        for x in (a, b):
            _step(x, 2.0)
    debug.reset_counters()
    for x, data in ((a, DATA), (b, DATA[::-1] * 3), (a, DATA)):
        np.testing.assert_array_equal(_step(x, 2.0), _expected(data, 2.0))
    assert _reused() == 3
    gpu.upload(a.node.buffer, DATA + 5)  # the same memory, new contents: the replay reads them
    np.testing.assert_array_equal(_step(a, 2.0), _expected(DATA + 5, 2.0))
    assert _reused() == 4


def _over(buffer) -> vkml.Tensor:
    """A tensor whose data is ``buffer`` (as vkml.tensor makes one over the buffer it uploads)."""
    node = Node(Op.BUFFER, (), None, (buffer.numel,), buffer.dtype, buffer.device)
    node.buffer = buffer
    return Tensor(node)


def test_a_freed_inputs_memory_taken_by_another_tensor_is_read_as_the_new_one(gpu):
    gc.collect()
    x = vkml.tensor(DATA, device=gpu)
    for _ in range(2):
        _step(x, 4.0)
    memory = x.node.buffer.binding_key
    del x
    gc.collect()
    held = []  # a new upload at x's memory: the pool hands the ranges uploads freed to uploads again, by size
    while True:
        buffer = gpu.upload_new(vkml.float32, DATA * -7)
        if buffer.binding_key == memory:
            break
        held.append(buffer)
        assert len(held) < 256
    del held
    y = _over(buffer)
    debug.reset_counters()
    for _ in range(3):  # replays of a recording that binds that memory, made for x or for y
        np.testing.assert_array_equal(_step(y, 4.0), _expected(DATA * -7, 4.0))
    assert _reused() >= 2


def test_parameters_and_view_offsets_pick_their_own_recording(gpu):
    gc.collect()
    x = vkml.tensor(DATA, device=gpu)
    cases = [(k, s) for k in (0.0, -0.0, 3.0) for s in (1, 2)]  # a list: as dict keys 0.0 and -0.0 are one
    for _ in range(2):
        for k, s in cases:
            (x[s : s + 512] * k).numpy()
    debug.reset_counters()
    for k, s in cases:
        got = (x[s : s + 512] * k).numpy()
        want = DATA[s : s + 512] * np.float32(k)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))  # -0.0 is not 0.0
    assert _reused() == len(cases)


def test_temporaries_and_several_dispatches_replay(gpu):
    gc.collect()
    data = np.arange(1 << 14, dtype=np.float32) % 7
    x = vkml.tensor(data, device=gpu)
    for _ in range(2):
        (x - x.sum() / x.numel()).numpy()
    debug.reset_counters()
    for shift in (0.0, 1.0):
        gpu.upload(x.node.buffer, data + shift)
        got = (x - x.sum() / x.numel()).numpy()
        np.testing.assert_allclose(got, (data + shift) - (data + shift).mean(dtype=np.float64), atol=1e-5)
    assert _reused() == 2


def test_a_replayed_result_is_marked_with_its_submission(gpu):
    gc.collect()
    x = vkml.tensor(DATA, device=gpu)
    for _ in range(2):
        _step(x, 6.0)
    debug.reset_counters()
    y = (x * 6.0 + 1.0).realize()
    assert _reused() == 1
    assert y.node.buffer.ready_serial == gpu.last_submission  # a read waits for this run
    np.testing.assert_array_equal(y.numpy(), _expected(DATA, 6.0))


def _keys(gpu, t):
    """(replay_key, fingerprint of the dispatches) of realizing ``t``, whose plan is cached; nothing runs."""
    order, structure = plan_cache.trace([t.node], kernels_matmul.mode)
    recipe = plan_cache.lookup(plan_cache.Key(scheduler._namespace(gpu), structure), order)
    outs, temps = plan_cache.allocate(recipe, gpu)
    dispatches = plan_cache.dispatches_of(recipe, order, outs, temps)
    return plan_cache.replay_key(recipe, order, outs, temps), fingerprint(dispatches, False)


def test_replay_keys_are_equal_exactly_where_fingerprints_are(gpu):
    x, y = vkml.tensor(DATA, device=gpu), vkml.tensor(DATA, device=gpu)
    variants = [
        lambda: x * 2.0,
        lambda: x * 2.0,
        lambda: x * -0.0,
        lambda: x * 0.0,
        lambda: y * 2.0,
        lambda: x[1:513] * 2.0,
        lambda: x[2:514] * 2.0,
        lambda: x[1:513] * 2.0,
    ]
    for v in variants:
        v().realize()  # plans cached
    gc.collect()
    keys = [_keys(gpu, v()) for v in variants]  # each one's outputs freed before the next allocates
    for i, (replay_i, print_i) in enumerate(keys):
        for replay_j, print_j in keys[i + 1 :]:
            assert (replay_i == replay_j) == (print_i == print_j)
    assert keys[0] == keys[1] and keys[5] == keys[7]
    assert keys[0][0] != keys[2][0] != keys[3][0] and keys[0][0] != keys[4][0] and keys[5][0] != keys[6][0]


def test_no_replay_without_a_kept_recording_or_inside_timestamped(gpu):
    x = vkml.tensor(DATA, device=gpu)
    gpu.recordings.forget()
    assert not gpu.run_again((object(),), [])
    for _ in range(2):
        _step(x, 8.0)
    with gpu.timestamped() as runs:
        np.testing.assert_array_equal(_step(x, 8.0), _expected(DATA, 8.0))
    assert len(runs) == 1 and len(runs[0]) >= 1  # timed: through run(), which times each dispatch


def test_threads_replaying_one_plan_read_their_own_inputs(gpu):
    inputs = [vkml.tensor(DATA + i, device=gpu) for i in range(2)]
    errors: list = []

    def work(i: int) -> None:
        try:
            for _ in range(15):
                np.testing.assert_array_equal(_step(inputs[i], 9.0), _expected(DATA + i, 9.0))
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.stress
def test_a_training_loop_settles_on_its_recordings(gpu):
    """Parameters, gradients and momenta are new buffers every step; the pool hands each size its
    lowest freed range (vkml/runtime/vulkan/memory.py), so after a few steps every submission of a
    step is a recording submitted again (first fit had the layout drift: none was)."""
    vkml.manual_seed(0)
    model = vkml.nn.Sequential(vkml.nn.Linear(16, 32), vkml.nn.ReLU(), vkml.nn.Linear(32, 4)).to(gpu)
    opt = vkml.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = vkml.randn(64, 16, device=gpu), vkml.randn(64, 4, device=gpu)
    for _ in range(12):
        before = debug.counters()
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        loss.item()
        after = debug.counters()
    assert after["recordings_reused"] - before["recordings_reused"] == after["submissions"] - before["submissions"] > 0
