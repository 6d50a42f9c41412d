"""Reductions with few outputs and long rows split over workgroups (the blocks mode, reduce_rows.py).

Batch norm's per-channel sums of an (N, C, H, W) tensor over (0, 2, 3) keep the middle axis: C
outputs of N·H·W elements each. One workgroup an output leaves most of a GPU idle, so such a
reduction is split at aligned chunks, one workgroup each, and a second pass combines the chunks'
results by the upper levels of the contract's tree. Checked here: the plan and its grids, and the
bits — against the tree (``test_ops_reduce.tree_oracle``), against the unsplit plan
(``VKML_REDUCE_SPLIT=0``), and lavapipe against the CPU — for odd sizes, rows that end inside a
chunk, special values in any place, float16/bfloat16, fused producers and consumers, and empty
tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits, lowered, random_floats
from test_ops_reduce import tree_oracle

import vkml
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.kernels import reduce_rows
from vkml.kernels import tuning as KT
from vkml.schedule import scheduler as schedule

CPU = vkml.device("cpu")
H200 = KT.tuning_from_features(DeviceFeatures.h200_like())
LAVAPIPE = KT.tuning_from_features(DeviceFeatures.lavapipe_like())
H200_MULTIPROCESSORS = 132

# (N, C, H, W) over (0, 2, 3) with C >= ROWS_MODE_MIN_ROWS (the rows mode before the split): with the
# CPU's and lavapipe's chunk of 1024, 5·29·31 = 4495 is 5 chunks, the last one partial; 7·1·641 a
# prime length; 4·37·33 = 4884 a row whose (H, W) planes end inside chunks.
SHAPES = [(5, 40, 29, 31), (7, 33, 1, 641), (4, 48, 37, 33)]


def plan(*tensors) -> list[tuple[str, tuple, tuple]]:
    """``(kernel name, grid, local size)`` of each dispatch the scheduler would make (nothing runs)."""
    dispatches, _, _ = schedule.lower(schedule.Plan([t.node for t in tensors]))
    return [(d.kernel.name, tuple(d.grid), d.kernel.local_size) for d in dispatches]


def workgroups(grid: tuple) -> int:
    return grid[0] * grid[1] * grid[2]


def unsplit(monkeypatch, fn):
    """``fn()`` under ``VKML_REDUCE_SPLIT=0``."""
    with monkeypatch.context() as m:
        m.setenv("VKML_REDUCE_SPLIT", "0")
        return fn()


def test_batch_norm_sized_channel_sums_split_to_fill_the_device(cpu_tuning, monkeypatch):
    cpu_tuning(H200)
    x, g = vkml.zeros((64, 64, 56, 56)), vkml.ones((64, 64, 56, 56))  # lazy: lowered, never computed
    graphs = {
        "sum": x.sum((0, 2, 3)),
        "where": vkml.where(x <= 0, g, 0.0).sum((0, 2, 3)),  # batch norm backward's kernels fuse their producers
        "mean": x.mean((0, 2, 3)),
        "float16": x.half().sum((0, 2, 3)),
        "bfloat16": x.bfloat16().mean((0, 2, 3)),
    }
    for what, graph in graphs.items():
        (first, grid0, lanes), (second, grid1, _) = plan(graph)
        assert first.startswith("R0_") and second.startswith("R1_"), what
        assert workgroups(grid0) == 64 * 49 >= 8 * H200_MULTIPROCESSORS, what  # one 4096-element chunk each
        assert lanes == (256, 1, 1) and workgroups(grid1) == 64, what
        assert "where" not in what or "where" in first  # the producer stays in the first pass
        (before,) = unsplit(monkeypatch, lambda graph=graph: plan(graph))
        assert before[0].startswith("R_") and workgroups(before[1]) == 64, what  # the plan without the split
    var = [(name.split("_")[0], workgroups(grid)) for name, grid, _ in plan(vkml.var(x, (0, 2, 3)))]
    assert var == [("R0", 3136), ("R1", 64)] * 2  # the mean's sum, then the squared deviations': no chain
    assert len(unsplit(monkeypatch, lambda: plan(vkml.var(x, (0, 2, 3))))) == 1  # unsplit: one chain kernel


def test_the_h200_split_kernels_validate_for_the_h200(cpu_tuning):
    cpu_tuning(H200)
    x, g = vkml.zeros((64, 64, 56, 56)), vkml.ones((64, 64, 56, 56))
    for graph in (vkml.where(x <= 0, g, 0.0).sum((0, 2, 3)), x.half().mean((0, 2, 3))):
        kernels = lowered(graph)
        assert [k.name.split("_")[0] for k in kernels] == ["R0", "R1"]
        for kernel in kernels:  # vectors across the kept axis, subgroup shuffles, float16 partials in float32
            compile_kernel(kernel, DeviceFeatures.h200_like())


def test_reductions_that_fill_the_device_or_have_short_rows_stay_unsplit(cpu_tuning):
    cpu_tuning(H200)
    assert [workgroups(g) for _, g, _ in plan(vkml.zeros((8, 1024, 32, 32)).sum((0, 2, 3)))] == [1024]
    assert [workgroups(g) for _, g, _ in plan(vkml.zeros((64, 64, 4, 4)).sum((0, 2, 3)))] == [64]  # 1 chunk a row
    assert [workgroups(g) for _, g, _ in plan(vkml.zeros((64, 3 * 4096)).sum(1))] == [64]  # 3 chunks a row
    assert [workgroups(g) for _, g, _ in plan(vkml.zeros((64, 4 * 4096)).sum(1))] == [256, 64]  # 4: split
    many = plan(vkml.softmax(vkml.zeros((2048, 1 << 14)), dim=1))
    assert [name.split("_")[0] for name, _, _ in many] == ["R", "E"]  # many rows: one chain kernel, as before
    few = plan(vkml.softmax(vkml.zeros((64, 1 << 16)), dim=1))  # few long rows: max and sum split, no chain
    assert [name.split("_")[0] for name, _, _ in few] == ["R0", "R1", "R0", "R1", "E"]
    assert reduce_rows.SPLIT_MIN_CHUNKS == 4 and KT.GPU_TUNING.reduce_split_rows == KT.SPLIT_ROWS


def test_the_switch_reads_the_environment_on_each_call(monkeypatch):
    split = KT.tuning_for(CPU)
    assert split.reduce_split_rows == KT.SPLIT_ROWS
    monkeypatch.setenv("VKML_REDUCE_SPLIT", "0")
    off = KT.tuning_for(CPU)
    assert off.reduce_split_rows == 0 and KT.tuning_for(CPU) is off  # one object: plan caches keep hitting
    monkeypatch.setenv("VKML_REDUCE_SPLIT", "1")
    assert KT.tuning_for(CPU) is split


def _specials() -> np.ndarray:
    """``SHAPES[0]`` with special values placed in chosen channels, at chunk and row boundaries."""
    x = random_floats(SHAPES[0], seed=1)
    x[3, 0, 28, 30] = np.nan  # the last element of a row's last (partial) chunk
    x[0, 1, 0, 0] = np.inf  # a row's first element
    x[2, 2, 10, 7], x[4, 2, 0, 1] = np.inf, -np.inf  # inf and -inf in different chunks: NaN at the top
    x[:, 3] = -0.0  # a sum of -0.0s is -0.0: the identity never enters the tree
    x[1, 4, 5, 5] = x[3, 4, 5, 5] = np.float32(3e38)  # overflows to inf only in the second pass
    return x


CASES = [(name, "random", SHAPES[0]) for name in ("sum", "mean", "prod", "amax", "amin")]
CASES += [(name, "specials", SHAPES[0]) for name in ("sum", "amax", "amin")]
CASES += [("sum", "random", shape) for shape in SHAPES[1:]]


@pytest.mark.parametrize("name, values, shape", CASES, ids=[f"{n}-{v}-{'x'.join(map(str, s))}" for n, v, s in CASES])
def test_split_channel_reductions_give_the_trees_bits_on_the_cpu(name, values, shape):
    x = _specials() if values == "specials" else random_floats(shape, seed=sum(shape))
    if name == "prod":
        x = (1 + x / 64).astype(np.float32)
    y = getattr(vkml, name)(vkml.tensor(x), dim=(0, 2, 3))
    assert plan(y)[0][0].startswith("R0_")
    assert_same_bits(y.numpy(), tree_oracle(name, x, (0, 2, 3)), f"{name} of {values} {shape}")
    if name in ("amax", "amin"):  # one right answer: torch's too
        want = getattr(torch, name)(torch.from_numpy(x), dim=(0, 2, 3)).numpy()
        assert_same_bits(y.numpy(), want, f"{name} against torch")


def test_lavapipe_the_cpu_and_the_unsplit_plan_agree(gpu, monkeypatch):
    x, specials = random_floats(SHAPES[2], seed=3), _specials()
    graphs = [
        ("sum of specials", lambda dev: vkml.tensor(specials, device=dev).sum((0, 2, 3))),
        ("float16 mean", lambda dev: vkml.tensor(x, device=dev).half().mean((0, 2, 3), keepdim=True)),
        ("argmax of long rows", lambda dev: vkml.tensor(x.reshape(48, -1), device=dev).argmax(1)),
    ]
    cpu = {}
    for what, graph in graphs:
        cpu[what] = graph(CPU).numpy()
        if KT.tuning_for(gpu) == LAVAPIPE:  # these rows split on lavapipe's chunks (the H200's are longer)
            assert plan(graph(gpu))[0][0].startswith("R0_"), what
        assert_same_bits(graph(gpu).numpy(), cpu[what], f"{what}: lavapipe against the CPU")
    unsplit_sum = unsplit(monkeypatch, lambda: graphs[0][1](CPU).numpy())  # one workgroup a channel
    assert_same_bits(unsplit_sum, cpu["sum of specials"], "the unsplit plan against the split one")
    assert_same_bits(cpu["sum of specials"], tree_oracle("sum", specials, (0, 2, 3)), "sum against the tree")
    half = torch.from_numpy(x).half().float().numpy()
    want = (tree_oracle("sum", half, (0, 2, 3), True) / np.float32(half[:, 0].size)).astype(np.float16)
    assert_same_bits(cpu["float16 mean"], want, "float16 mean against the tree")
    assert_same_bits(cpu["argmax of long rows"], torch.from_numpy(x.reshape(48, -1)).argmax(1).numpy(), "argmax")


def test_bfloat16_rounds_once_after_both_passes():
    x = random_floats(SHAPES[1], seed=4)
    got = vkml.tensor(x).bfloat16().sum((0, 2, 3)).float().numpy()
    rounded = torch.from_numpy(x).bfloat16().float().numpy()
    want = torch.from_numpy(tree_oracle("sum", rounded, (0, 2, 3))).bfloat16().float().numpy()
    assert_same_bits(got, want, "bfloat16 sum")


def test_batch_norm_backward_producers_and_consumers_stay_fused(gpu, monkeypatch):
    shape = (5, 40, 27, 28)  # W a multiple of 4: lavapipe loads the first pass as vectors
    x, g = random_floats(shape, seed=5), random_floats(shape, seed=6)
    m = random_floats((1, 40, 1, 1), seed=7)

    def graph(dev):
        tx, tg, tm = (vkml.tensor(v, device=dev) for v in (x, g, m))
        return (vkml.where(tx > 0, tg, 0.0) * (tx - tm)).sum((0, 2, 3)) * 0.5 + 1.0

    want = unsplit(monkeypatch, lambda: graph(CPU).numpy())
    for dev in (CPU, gpu):
        y = graph(dev)
        split = dev is CPU or KT.tuning_for(dev) == LAVAPIPE  # the H200's chunks leave these rows unsplit
        if split:
            assert [name.split("_")[0] for name, _, _ in plan(y)] == ["R0", "R1"]
        debug.reset_counters()
        assert_same_bits(y.numpy(), want, f"{dev} against the unsplit CPU")
        # no kernel of its own for the where, the product or the sum
        assert debug.counters()["dispatches"] == 2 if split else debug.counters()["dispatches"] <= 2
    inner = np.where(x > 0, g, np.float32(0)) * (x - m)
    assert np.allclose(want, tree_oracle("sum", inner, (0, 2, 3)) * np.float32(0.5) + 1, rtol=1e-5, atol=1e-3)


def test_variance_splits_both_passes_with_the_trees_bits():
    x = random_floats(SHAPES[0], seed=8)
    got = vkml.var(vkml.tensor(x), (0, 2, 3)).numpy()
    n = x.size // x.shape[1]
    centred = x - tree_oracle("sum", x, (0, 2, 3), True) / np.float32(n)
    want = tree_oracle("sum", centred * centred, (0, 2, 3)) / np.float32(n - 1)
    assert_same_bits(got, want, "var against the tree's two passes")
    assert np.allclose(got, torch.from_numpy(x).var((0, 2, 3)).numpy(), rtol=1e-5)


def test_vector_loads_across_kept_axes_keep_the_bits(cpu_tuning):
    """The H200's layout (vectors of 4, chunks of 4096) on the CPU: planes of W = 56 and a permuted view."""
    cpu_tuning(H200)
    x = random_floats((4, 40, 60, 56), seed=9)
    y = vkml.tensor(x).sum((0, 2, 3))
    assert [name.split("_")[0] for name, _, _ in plan(y)] == ["R0", "R1"]
    assert_same_bits(y.numpy(), tree_oracle("sum", x, (0, 2, 3)), "sum over (0, 2, 3)")
    stored = random_floats((56, 60, 40, 4), seed=10)
    view = vkml.tensor(stored).permute(3, 2, 1, 0)  # the reduced innermost axis strided in memory
    want = tree_oracle("amax", np.ascontiguousarray(stored.transpose(3, 2, 1, 0)), (0, 2, 3))
    assert_same_bits(view.amax((0, 2, 3)).numpy(), want, "amax of a permuted view")


def test_empty_channel_reductions_give_the_identity(gpu):
    for dev in (CPU, gpu):
        for shape in ((0, 40, 64, 64), (64, 40, 0, 8), (5, 0, 64, 64)):
            x = vkml.zeros(shape, device=dev)
            assert_same_bits(x.sum((0, 2, 3)).numpy(), np.zeros(shape[1], np.float32), f"sum of {shape} on {dev}")
            assert np.isnan(x.mean((0, 2, 3)).numpy()).all()
