"""Writes and lazy reads at a fresh position every step plan once and compile nothing new.

A view's offset and mask bounds are kernel parameters (vkml/graph/view.py ``structure``,
vkml/kernels/lowering.py ``Lowering.view_values``), so ``x[i] = v``, ``x[:, j] = v``,
``cache[:, :, t] = k`` and ``(x * 2)[i:i + n]`` replay one plan over every position (zero and
aligned offsets included: the kernel tests alignment at run time, tests/test_view_offsets.py). The bits
are the old path's: with the views' parameter budget at 0 every view bakes its values as
constants, as before, and the tests compare both, and numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkml
from vkml.graph import view as graph_view
from vkml.kernels import index as kernels_index
from vkml.kernels import lowering as kernels_lowering
from vkml.kernels import tuning as kernels_tuning
from vkml.runtime.counters import counters
from vkml.schedule import scheduler

RNG = np.random.default_rng(16)


@pytest.fixture(params=["cpu", "cpu-vectors", "vulkan"])
def dev(request, gpu, cpu_tuning):
    if request.param == "vulkan":
        return gpu
    if request.param == "cpu-vectors":  # the CPU running the GPU layout: aligned groups of 4, vector loads
        cpu_tuning(kernels_tuning.GPU_TUNING)
    return vkml.device("cpu")


@pytest.fixture
def baked(monkeypatch):
    """Views bake their offsets and bounds as constants: the path before they were parameters."""

    def bake():
        monkeypatch.setattr(kernels_lowering, "VIEW_PARAM_BUDGET_NBYTES", 0)

    return bake


def _counted(steps):
    """Run ``steps`` (callables) after the first four; return the plans and compiles they made, and results."""
    results = [s() for s in steps[:4]]
    before = dict(counters)
    results += [s() for s in steps[4:]]
    made = {k: counters[k] - before[k] for k in ("plans", "kernels_compiled", "pipelines_created", "plan_replays")}
    return made, results


def _assert_replayed(made, steps):
    assert made["plans"] == 0
    assert made["kernels_compiled"] == 0
    assert made["pipelines_created"] == 0
    assert made["plan_replays"] >= steps


def _row_writes(dev, rows):
    cache = vkml.zeros(64, 128, device=dev).realize()
    want = np.zeros((64, 128), np.float32)
    values = RNG.standard_normal((len(rows), 128)).astype(np.float32)

    def step(i, r):
        def run():
            cache[r] = vkml.tensor(values[i], device=dev) * 3.0
            cache.realize()
            want[r] = values[i] * np.float32(3.0)
            return cache.numpy().copy()

        return run

    return [step(i, r) for i, r in enumerate(rows)], want


def test_row_writes_at_fresh_rows_replay_one_plan(dev):
    rows = [5, 6, 7, 8] + list(range(9, 60, 3))
    steps, want = _row_writes(dev, rows)
    made, results = _counted(steps)
    _assert_replayed(made, len(rows) - 4)
    np.testing.assert_array_equal(results[-1], want)


def test_column_writes_at_fresh_columns_replay_one_plan(dev):
    cache = vkml.zeros(64, 128, device=dev).realize()
    want = np.zeros((64, 128), np.float32)
    values = RNG.standard_normal((128, 64)).astype(np.float32)

    def step(j):
        def run():
            cache[:, j] = vkml.tensor(values[j], device=dev) + 1.0
            cache.realize()
            want[:, j] = values[j] + np.float32(1.0)

        return run

    columns = [1, 2, 3, 4] + list(range(5, 120, 7))  # every residue modulo 4 comes in the first four
    made, _ = _counted([step(j) for j in columns])
    _assert_replayed(made, len(columns) - 4)
    np.testing.assert_array_equal(cache.numpy(), want)


def test_kv_cache_writes_then_reads_match_numpy(dev):
    cache = vkml.zeros(2, 4, 48, 16, device=dev).realize()
    want = np.zeros((2, 4, 48, 16), np.float32)
    keys = RNG.standard_normal((48, 2, 4, 16)).astype(np.float32)

    def step(t):
        def run():
            k = vkml.tensor(keys[t], device=dev)
            cache[:, :, t] = k * 0.5
            cache.realize()
            want[:, :, t] = keys[t] * np.float32(0.5)
            return (cache[:, :, : t + 1] * 2.0).numpy()  # attention reads the positions so far

        return run

    results = [step(t)() for t in range(1, 47)]
    np.testing.assert_array_equal(cache.numpy(), want)
    np.testing.assert_array_equal(results[-1], want[:, :, :47] * np.float32(2.0))


def test_kv_cache_writes_alone_compile_nothing_new(dev):
    cache = vkml.zeros(2, 4, 48, 16, device=dev).realize()
    want = np.zeros((2, 4, 48, 16), np.float32)
    keys = RNG.standard_normal((48, 2, 4, 16)).astype(np.float32)

    def step(t):
        def run():
            cache[:, :, t] = vkml.tensor(keys[t], device=dev)
            cache.realize()
            want[:, :, t] = keys[t]

        return run

    made, _ = _counted([step(t) for t in range(1, 47)])
    _assert_replayed(made, 42)
    np.testing.assert_array_equal(cache.numpy(), want)


def test_two_writes_per_step_into_one_cache_compile_nothing_new(dev):
    """Keys and values written into one stacked cache, then realized: both regions' bounds are parameters."""
    cache = vkml.zeros(2, 4, 40, 16, device=dev).realize()
    want = np.zeros((2, 4, 40, 16), np.float32)
    keys = RNG.standard_normal((40, 2, 4, 16)).astype(np.float32)

    def step(t):
        def run():
            cache[0, :, t] = vkml.tensor(keys[t, 0], device=dev)
            cache[1, :, t] = vkml.tensor(keys[t, 1], device=dev) * 2.0
            cache.realize()
            want[0, :, t], want[1, :, t] = keys[t, 0], keys[t, 1] * np.float32(2.0)

        return run

    made, _ = _counted([step(t) for t in range(1, 39)])
    _assert_replayed(made, 34)
    np.testing.assert_array_equal(cache.numpy(), want)


LAZY_READS = {
    "rows": lambda y, i: y[i : i + 8] + 1.0,
    "aligned columns": lambda y, i: y[:, 2 * i : 2 * i + 64] - 1.0,  # even i: vector groups, offset // 4 travels
    "columns": lambda y, i: y[:, i : i + 61] * 0.25,
    "flipped rows": lambda y, i: y.flip(0)[i : i + 8] + 2.0,
    "row broadcast": lambda y, i: y[i : i + 8, 4:5].expand(8, 128) + y[i : i + 8],  # a uniform group
    "padded": lambda y, i: vkml.nn.functional.pad(y[i : i + 8], (0, 0, 3, 3)) + 1.0,
    "row sums": lambda y, i: y[i : i + 8].sum(1),
    "column sums": lambda y, i: y[i : i + 16].sum(0),
    "matmul": lambda y, i: y[i : i + 16, :32] @ y[:32, i : i + 16],
    "half rows": lambda y, i: y.half()[i : i + 8] * 2.0,  # float16 loads through the view
    "half matmul": lambda y, i: y.half()[i : i + 16, :32] @ y.half()[:32, i : i + 16],
}


NUMPY_READS = {
    "rows": lambda y, i: y[i : i + 8] + np.float32(1.0),
    "aligned columns": lambda y, i: y[:, 2 * i : 2 * i + 64] - np.float32(1.0),
    "columns": lambda y, i: y[:, i : i + 61] * np.float32(0.25),
    "flipped rows": lambda y, i: y[::-1][i : i + 8] + np.float32(2.0),
    "row broadcast": lambda y, i: np.broadcast_to(y[i : i + 8, 4:5], (8, 128)) + y[i : i + 8],
    "padded": lambda y, i: np.pad(y[i : i + 8], ((3, 3), (0, 0))) + np.float32(1.0),
    "half rows": lambda y, i: y.astype(np.float16)[i : i + 8] * np.float16(2.0),
}


@pytest.mark.parametrize("name", list(LAZY_READS))
def test_reads_of_a_lazy_value_at_fresh_offsets_replay_one_plan(dev, name, baked):
    data = RNG.standard_normal((64, 128)).astype(np.float32)
    x = vkml.tensor(data, device=dev)
    read = LAZY_READS[name]
    offsets = [1, 2, 3, 4] + list(range(5, 24, 3))
    made, results = _counted([lambda i=i: read(x * 2.0, i).numpy() for i in offsets])
    _assert_replayed(made, len(offsets) - 4)
    baked()  # the old path: every view's values are constants of its kernel
    olds = [read(x * 2.0, i).numpy() for i in offsets]
    for i, got, old in zip(offsets, results, olds):
        np.testing.assert_array_equal(got.view(np.uint8), old.view(np.uint8))
        if name in NUMPY_READS:  # (numpy sums in another order)
            np.testing.assert_array_equal(got, NUMPY_READS[name](data * np.float32(2.0), i))


def test_writes_and_reads_have_the_old_paths_bits(dev, baked):
    """Many writes fused into one kernel (past the parameter budget, some views bake), then reads."""
    data = RNG.standard_normal((40, 64)).astype(np.float32)
    values = RNG.standard_normal((40, 64)).astype(np.float32)

    def program():
        x = vkml.tensor(data, device=dev) * 1.5
        for r in range(3, 37, 2):
            x[r] = vkml.tensor(values[r], device=dev) - x[r - 1]
        x[:, 5:9] = x[:, 9:13].exp()
        return x.numpy(), x[7:30, 3:61].sum(0).numpy()

    new = program()
    again = program()  # a replay (baked views are checked by value)
    baked()
    old = program()
    for a, b, c in zip(new, again, old):
        np.testing.assert_array_equal(a.view(np.uint32), c.view(np.uint32))
        np.testing.assert_array_equal(b.view(np.uint32), c.view(np.uint32))
    want = data * np.float32(1.5)
    for r in range(3, 37, 2):
        want[r] = values[r] - want[r - 1]
    np.testing.assert_array_equal(new[0][:, :5], want[:, :5])


def test_baked_views_do_not_replay_a_plan_with_other_values():
    """Past the budget a view's values are in the kernel: the same structure at other rows replans."""
    dev = vkml.device("cpu")
    for first in (1, 3):
        x = vkml.zeros(40, 8, device=dev).realize()
        want = np.zeros((40, 8), np.float32)
        for r in range(first, first + 30, 2):
            x[r] = vkml.full((8,), float(r), device=dev)
            want[r] = r
        np.testing.assert_array_equal(x.numpy(), want)


def test_view_structure_keeps_what_lowering_decides():
    view = graph_view.View((8, 128), (128, 1), 5 * 128 + 3, ((0, 8), (2, 127)))
    same = graph_view.View((8, 128), (128, 1), 9 * 128 + 6, ((0, 8), (7, 132)))  # other residues too
    assert view.structure() == same.structure()
    assert view.value_count() == 2  # the offset and the lower bound of the cut dim
    assert graph_view.View((8, 128), (128, 1), 9 * 128 + 6, ((0, 8), (7, 131))).structure() != view.structure()
    aligned = graph_view.View((8, 128), (128, 1), 9 * 128 + 4, ((0, 8), (4, 129)))
    assert aligned.structure() == view.structure()  # alignment is tested at run time, not structure
    first = graph_view.View((8, 128), (128, 1), 0, ((0, 1), (0, 128)))
    last = graph_view.View((8, 128), (128, 1), 0, ((7, 8), (0, 128)))
    assert first.structure() == last.structure()  # a region at an edge: the code of any other row
    assert graph_view.View((8, 128), (128, 1), 0).structure() != graph_view.View((8, 128), (128, 1), 4).structure()
    # Over a source of 4096 a zero offset is a parameter too (a slice at 0), over 1024 there is none.
    at = [graph_view.View((8, 128), (128, 1), i).structure(4096) for i in range(9)]
    assert len(set(at)) == 1 and graph_view.View((8, 128), (128, 1), 0).value_count(4096) == 1
    assert graph_view.View((8, 128), (128, 1), 0).value_count(1024) == 0
    assert graph_view.View((8, 128), (0, 1), 0).value_count(128) == 0  # a broadcast: nothing to shift
    assert graph_view.WIDE_REACH == kernels_index.WIDE_INDEX_EXTENT
    far = graph_view.View((8,), (1,), 1 << 31)
    assert far.structure() != graph_view.View((8,), (1,), 4).structure()  # int64 indices


def test_view_parameter_budget_is_in_the_plan_namespace(dev, monkeypatch):
    key = scheduler._namespace(dev)
    monkeypatch.setattr(kernels_lowering, "VIEW_PARAM_BUDGET_NBYTES", 0)
    assert scheduler._namespace(dev) != key
