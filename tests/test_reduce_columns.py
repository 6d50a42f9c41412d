"""The columns mode (vkml/kernels/reduce_columns.py): reductions that keep the innermost axis.

Checked bit for bit against the contract's tree (``test_ops_reduce.tree_oracle``) on the CPU
interpreter under several tunings — each splits the reduced axis into different blocks and
chunks, so partial blocks, partial chunks and every depth of the binary counter are reached —
and on lavapipe against the CPU. Which mode a reduction takes is pinned here too.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from optest import F32_SPECIALS, LAYOUTS, assert_same_bits, in_layout, lowered, random_floats, random_ints
from test_ops_reduce import tree_oracle

import vkml
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.kernels import reduce_columns as columns
from vkml.kernels import tuning as KT
from vkml.kernels.reduce_columns import columns_layout
from vkml.schedule import scheduler as schedule

CPU = vkml.device("cpu")
H200 = KT.tuning_from_features(DeviceFeatures.h200_like())
TUNINGS = {
    "cpu": KT.CPU_TUNING,
    "h200": H200,
    "tiny": replace(KT.CPU_TUNING, reduce_lanes=8, columns_per_chunk=2, columns_outputs=2),  # 2 outputs x 4 blocks
    "one-block": replace(KT.CPU_TUNING, reduce_lanes=16, columns_per_chunk=2, columns_outputs=16),  # no shared memory
    "wide-blocks": replace(KT.CPU_TUNING, reduce_lanes=256, columns_per_chunk=8, columns_outputs=2),  # 32 blocks
}
NAMES = ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin")


def is_columns(t: vkml.Tensor) -> bool:
    kernels = lowered(t)
    return len(kernels) == 1 and kernels[0].name.startswith("C_")


def reduce(name: str, t: vkml.Tensor, dim, keepdim: bool = False) -> np.ndarray:
    return getattr(vkml, name)(t, dim=dim, keepdim=keepdim).numpy()


def test_layouts_split_the_reduced_axis_into_aligned_power_of_two_blocks():
    assert columns_layout(4096, 4096, H200) == columns_layout(4096, 4096, KT.GPU_TUNING)
    lay = columns_layout(4096, 4096, H200)
    assert (lay.outputs, lay.blocks, lay.rows_per_block, lay.per_chunk, lay.lanes) == (16, 16, 256, 16, 256)
    short = columns_layout(3, 4096, H200)  # one chunk of 4 slots, one block
    assert (short.blocks, short.rows_per_block, short.per_chunk) == (1, 4, 4)
    odd = columns_layout(4097, 10, H200)  # 10 outputs: 16 lanes along them
    assert (odd.outputs, odd.rows_per_block, odd.blocks, odd.blocks_present(4097)) == (16, 512, 16, 9)
    wide = columns_layout(300, 12, TUNINGS["wide-blocks"])  # the tuning test reaches the most blocks
    assert (wide.outputs, wide.blocks, wide.blocks_present(300)) == (2, 32, 19)


def test_which_reductions_take_the_columns_mode():
    x = vkml.tensor(random_floats((64, 32), seed=1))
    assert is_columns(x.sum(0)) and is_columns(x.amax(0)) and is_columns(x.argmax(0))
    assert is_columns(x.mean(0, keepdim=True))
    assert is_columns(vkml.tensor(random_floats((4, 50, 8))).sum(1))  # the middle axis of a 3-D tensor
    assert not is_columns(x.sum(1))  # the innermost axis: rows
    assert not is_columns(x.T.sum(0))  # a transposed source reads the reduced axis contiguously: rows
    assert not is_columns(vkml.tensor(random_floats((64, 4))).sum(0))  # 4 outputs side by side: too narrow
    assert not is_columns(vkml.tensor(random_floats((1 << 14, 2))).sum(0))  # few long, narrow columns: blocks
    softmax = lowered(vkml.softmax(x, dim=0))
    assert not any(k.name.startswith("C_") for k in softmax)  # chains stay in the rows mode


@pytest.mark.parametrize("tuning", TUNINGS, ids=list(TUNINGS))
def test_same_bits_as_the_tree_under_every_tuning(tuning, cpu_tuning):
    cpu_tuning(TUNINGS[tuning])
    cases = [((n, 12), 0) for n in (1, 2, 3, 5, 8, 9, 31, 33, 100, 300)] + [((3, 37, 16), 1), ((6, 5, 9), (0, 1))]
    for shape, dim in cases:
        x = random_floats(shape, seed=sum(shape))
        for name in NAMES:
            if name in ("argmax", "argmin") and isinstance(dim, tuple):
                continue
            if name == "prod":
                x = (1 + x / 8).astype(np.float32)
            # keepdim=True lowers every template again (it changes the structure key) for the same
            # tree: the 3-D cases and one 2-D shape check it under each tuning
            for keepdim in (False, True) if len(shape) == 3 or shape[0] == 33 else (False,):
                got = reduce(name, vkml.tensor(x), dim, keepdim)
                assert_same_bits(got, tree_oracle(name, x, dim, keepdim), f"{tuning}: {name}{shape} dim={dim}")


@given(
    a=st.integers(2, 3),  # with b: at least 32 outputs, so never the blocks mode
    n=st.integers(1, 70),
    b=st.integers(16, 40),
    lanes=st.sampled_from([1, 2, 4, 8, 32]),
    per=st.sampled_from([1, 2, 4, 16]),
    outputs=st.sampled_from([1, 2, 8, 64]),
)
def test_any_blocks_and_chunks_keep_the_tree(a, n, b, lanes, per, outputs):
    """(a, n, b) -> (a, b) over the middle axis, for power-of-two layouts of every size."""
    tuning = replace(KT.CPU_TUNING, reduce_lanes=lanes, columns_per_chunk=per, columns_outputs=outputs)
    KT.set_tuning(CPU, tuning)
    try:
        x = random_floats((a, n, b), seed=n * b)
        t = vkml.tensor(x)
        assert is_columns(t.sum(1))
        assert_same_bits(t.sum(1).numpy(), tree_oracle("sum", x, 1), f"{tuning}")
        assert_same_bits(t.argmin(1).numpy(), tree_oracle("argmin", x, 1), f"{tuning}")
    finally:
        KT.set_tuning(CPU, None)


def _special_cases() -> list[tuple[str, np.ndarray, str]]:
    """(reduction, input, what) over columns: signed zeros, NaN, infinities, float16 and integers."""
    zeros = np.full((7, 16), -0.0, np.float32)
    zeros[:, 3] = 0.0
    zeros[4, 5] = 0.0
    specials = np.resize(F32_SPECIALS, (30, 9)).T.copy()  # every column its own mix of specials
    specials = np.tile(specials, (1, 2))
    infs = np.ones((5, 8), np.float32)
    infs[1, 0], infs[3, 0], infs[2, 1] = np.inf, -np.inf, -np.inf
    halves = random_floats((37, 24), seed=5, scale=200.0).astype(np.float16)
    halves[3, 2], halves[10, 4] = np.nan, np.inf
    return [
        ("sum", zeros, "a sum of -0.0 stays -0.0"),
        ("sum", specials, "specials"),
        ("amax", specials, "specials"),
        ("argmin", specials, "specials"),
        ("sum", infs, "inf + -inf"),
        ("amin", infs, "infinities"),
        ("sum", halves, "float16"),
        ("mean", halves, "float16"),
        ("argmax", halves, "float16"),
        ("sum", random_ints((41, 10), np.int32, seed=3), "int32"),
        ("amax", random_ints((41, 10), np.int32, seed=3), "int32"),
        ("sum", random_ints((41, 10), np.int64, seed=4, high=1 << 40), "int64"),
        ("prod", random_ints((9, 10), np.int64, seed=4, low=-5, high=5), "int64"),
        ("sum", random_ints((33, 9), np.int32, seed=6, low=0, high=2).astype(np.bool_), "bool"),
    ]


@pytest.mark.parametrize("name, x, what", _special_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_specials_and_dtypes_on_the_cpu_and_lavapipe(name, x, what, gpu):
    integer_max = name == "amax" and x.dtype.kind == "i"  # the oracle's maximum is for floats; ints have one answer
    want = x.max(0) if integer_max else tree_oracle(name, x, 0)
    t = vkml.tensor(x)
    assert is_columns(getattr(vkml, name)(t, dim=0))
    assert_same_bits(reduce(name, t, 0), want, f"cpu: {name} of {what}")
    assert_same_bits(reduce(name, vkml.tensor(x, device=gpu), 0), want, f"vulkan: {name} of {what}")


def test_layouts_and_fused_producers_and_consumers_are_one_dispatch_with_cpu_bits(gpu):
    a, b = random_floats((300, 40), seed=8), random_floats((300, 40), seed=9)
    c = random_floats((40,), seed=10)

    def graph(dev):
        ta, tb, tc = (vkml.tensor(v, device=dev) for v in (a, b, c))
        return vkml.exp((ta - tb) * 0.25).sum(0) * 3.0 + tc  # producers inside the loads, consumers at the store

    want = (tree_oracle("sum", np.exp((a - b) * np.float32(0.25)), 0) * np.float32(3)).astype(np.float32) + c
    for dev in (CPU, gpu):
        y = graph(dev)
        assert is_columns(y)
        debug.reset_counters()
        got = y.numpy()
        assert debug.counters()["dispatches"] == 1
        assert_same_bits(got, graph(CPU).numpy(), f"{dev} against the CPU")
        assert np.allclose(got, want, rtol=1e-5, atol=1e-4)
    for layout in LAYOUTS:  # any view of the source gives the tree's bits
        for dev in (CPU, gpu):
            t, values = in_layout(a, layout)
            got = (t.to(dev) if dev is not CPU else t).sum(0, keepdim=True).numpy()
            assert_same_bits(got, tree_oracle("sum", values, 0, True), f"{layout} on {dev}")


def test_lavapipe_equals_the_cpu_on_long_columns(gpu):
    """Several blocks per output, several chunks per block, and outputs that do not fill a workgroup."""
    for shape, dim in [((4097, 24), 0), ((1000, 3, 20), (0, 1)), ((2, 700, 33), 1)]:
        x = random_floats(shape, seed=shape[0])
        for name in ("sum", "amax", "argmax"):
            if name == "argmax" and isinstance(dim, tuple):
                continue
            got = reduce(name, vkml.tensor(x, device=gpu), dim)
            assert_same_bits(got, reduce(name, vkml.tensor(x), dim), f"{name}{shape} on lavapipe against the CPU")
            assert_same_bits(got, tree_oracle(name, x, dim), f"{name}{shape} against the tree")


def test_the_h200_layouts_validate_for_the_h200(cpu_tuning):
    h200 = DeviceFeatures.h200_like()
    cpu_tuning(KT.tuning_from_features(h200))
    x = vkml.tensor(random_floats((4096, 64), seed=2))
    graphs = [x.sum(0), x.half().sum(0), x.argmax(0), x.long().amax(0), (x > 0).sum(0), x.reshape(64, 64, 64).mean(1)]
    for graph in graphs:
        (kernel,) = lowered(graph)
        assert kernel.name.startswith("C_")
        compile_kernel(kernel, h200)
    assert lowered(graphs[0])[0].local_size == (256, 1, 1)  # 16 outputs x 16 blocks of 256
    long = vkml.tensor(np.zeros((1 << 16, 64), np.float32))
    for graph in (long.sum(0), long.argmin(0), long.half().mean(0)):  # split: partials, then their columns
        kernels = lowered(graph)
        assert [k.name.split("_")[0] for k in kernels] == ["C0", "C1"]
        for kernel in kernels:
            compile_kernel(kernel, h200)
    assert lowered(graphs[-1])[0].local_size == (64, 1, 1)  # a reduced length of 64: 4 blocks of 16


def test_an_empty_reduced_axis_gives_the_identity_on_both_backends(gpu):
    for dev in (CPU, gpu):
        x = vkml.zeros((3, 0, 16), device=dev)
        assert_same_bits(x.sum(1).numpy(), np.zeros((3, 16), np.float32), f"sum on {dev}")
        assert_same_bits(x.prod(1, keepdim=True).numpy(), np.ones((3, 1, 16), np.float32), f"prod on {dev}")
        assert np.isnan(x.mean(1).numpy()).all()


@pytest.fixture
def short_splits(monkeypatch):
    """Split the reduced axis at a few rows, so short inputs take several passes (lowered anew, not cached)."""
    monkeypatch.setattr(columns, "COLUMNS_SPLIT_ROWS", 8)
    monkeypatch.setattr(columns, "SPLIT_BLOCK_ROWS", 4)
    schedule.clear_template_cache()
    yield
    schedule.clear_template_cache()


@pytest.mark.parametrize("tuning", ["tiny", "cpu"])
def test_split_columns_take_one_pass_per_level_and_keep_the_tree(tuning, short_splits, cpu_tuning):
    cpu_tuning(TUNINGS[tuning])
    for shape, dim in [((1000, 13), 0), ((64, 12), 0), ((3, 300, 16), 1), ((257, 2, 9), (0, 1))]:
        x = random_floats(shape, seed=shape[0] + 1)
        for name in NAMES:
            if name in ("argmax", "argmin") and isinstance(dim, tuple):
                continue
            if name == "prod":
                x = (1 + x / 64).astype(np.float32)
            got = reduce(name, vkml.tensor(x), dim)
            assert_same_bits(got, tree_oracle(name, x, dim), f"{tuning}: {name}{shape} dim={dim}")
    kernels = lowered(vkml.tensor(random_floats((1000, 13))).sum(0))
    assert [k.name.split("_")[0] for k in kernels] == (["C0", "C1", "C2"] if tuning == "tiny" else ["C0", "C1"])


def test_few_long_columns_are_split_over_workgroups_on_both_backends(gpu):
    x = random_floats((20000, 24), seed=11)
    want = tree_oracle("sum", x, 0)
    for dev in (CPU, gpu):
        y = vkml.tensor(x, device=dev).sum(0) * 2.0
        debug.reset_counters()
        got = y.numpy()
        assert debug.counters()["dispatches"] == 2  # the spans' partials, then the columns of partials
        assert_same_bits(got, want * np.float32(2), f"sum on {dev}")
        assert_same_bits(vkml.tensor(x, device=dev).argmax(0).numpy(), tree_oracle("argmax", x, 0), f"{dev}")
