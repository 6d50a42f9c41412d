"""A view's offset is a kernel parameter: a loop over slices of one shape compiles a bounded few kernels.

Issue 16: slicing a tensor at 1,000 offsets compiled up to eight kernels per view shape (the
offset modulo the vector width, and for a realized tensor modulo the binding alignment, were
structure), and a row write at the first or the last row compiled its own. Now
``View.structure`` keeps of an offset only whether it is zero and, where aligned vector groups
could pass the view, whether it is a multiple of the width (so vector loads stay for aligned
windows, and one kernel serves every other offset); a write region keeps its length, and its
position is a parameter.

Each case runs its offsets on the CPU and on lavapipe — 1,000 for slices (1,000 corners of a
2-D block), every third one below 1,000 for a reduction, every row or column of a 250-long
cache for writes: all residues modulo 4, 8 and 16 and both edges, so every structure the key
could still tell apart comes up — and counts the plans and compiles of the whole loop, first
steps included. The bound: 2 for a realized tensor (a window at an aligned start is the buffer
itself; every other offset), 3 where a zero offset is a third (a lazy value's slice at 0, a
block at the origin), 1 for writes. Every result is checked against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from optest import lowered

import vkml
from vkml.ir.core import Instr, walk
from vkml.kernels import tuning as kernels_tuning
from vkml.runtime.counters import counters

RNG = np.random.default_rng(1016)
DATA = RNG.standard_normal(4096).astype(np.float32)
ROW = RNG.standard_normal(32).astype(np.float32)


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def _slice(dev, length):
    x = vkml.tensor(DATA, device=dev)
    return lambda i: ((x[i : i + length] * 2.0).numpy(), DATA[i : i + length] * np.float32(2.0))


def _block(dev):
    x = vkml.tensor(DATA.reshape(64, 64), device=dev)
    want = DATA.reshape(64, 64)

    def step(i):
        r, c = i % 50, i // 21  # 1,000 (row, column) corners: every residue of the start modulo 16
        return (x[r : r + 8, c : c + 16] + 1.0).numpy(), want[r : r + 8, c : c + 16] + np.float32(1.0)

    return step


def _lazy_slice(dev):
    x = vkml.tensor(DATA, device=dev)
    return lambda i: (((x * 3.0)[i : i + 64] - 1.0).numpy(), DATA[i : i + 64] * np.float32(3.0) - np.float32(1.0))


def _window_sum(dev):
    x = vkml.tensor(DATA, device=dev)
    return lambda i: (x[i : i + 128].sum(dtype=vkml.float32).numpy(), None)


def _row_writes(dev):
    cache = vkml.zeros(250, 32, device=dev).realize()
    value = vkml.tensor(ROW, device=dev)

    def step(i):
        cache[i] = value * float(i % 7)  # the first and the last row too
        cache.realize()
        if i % 50 != 49:
            return None, None
        want = np.zeros((250, 32), np.float32)
        want[: i + 1] = ROW * (np.arange(i + 1) % 7)[:, None].astype(np.float32)
        return cache.numpy(), want

    return step


def _column_writes(dev):
    cache = vkml.zeros(8, 250, device=dev).realize()

    def step(i):
        cache[:, i] = float(i)
        cache.realize()
        if i != 249:
            return None, None
        return cache.numpy(), np.broadcast_to(np.arange(250, dtype=np.float32), (8, 250))

    return step


CASES = {  # name: (steps, the offsets they run, at most this many plans and compiles)
    "slice of 64": (lambda dev: _slice(dev, 64), range(1000), 2),
    "slice of 61": (lambda dev: _slice(dev, 61), range(1000), 2),
    "window sum": (_window_sum, range(0, 1000, 3), 2),
    "block": (_block, range(1000), 3),
    "lazy slice": (_lazy_slice, range(1000), 3),
    "row writes": (_row_writes, range(250), 1),
    "column writes": (_column_writes, range(250), 1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_thousand_offsets_compile_a_bounded_few_kernels(dev, name):
    make, offsets, bound = CASES[name]
    step = make(dev)
    before = dict(counters)
    for i in offsets:
        got, want = step(i)
        if want is not None:
            np.testing.assert_array_equal(got, want)
    made = {k: counters[k] - before[k] for k in ("plans", "kernels_compiled", "pipelines_created")}
    assert made["plans"] <= bound, made
    assert made["kernels_compiled"] <= bound and made["pipelines_created"] <= bound, made


def test_window_sums_at_every_offset_have_the_bits_of_a_fresh_tensor(dev):
    x = vkml.tensor(DATA, device=dev)
    for i in list(range(0, 40)) + [1000, 2049, 3963, 3967, 3968]:  # residues modulo 4, 8 and 16; both ends
        want = vkml.tensor(DATA[i : i + 128], device=dev).sum().numpy()
        assert x[i : i + 128].sum().numpy().view(np.uint32) == want.view(np.uint32)


def _accesses(kernel, op: str) -> dict[str, int]:
    """How many ``op`` instructions (load, vload, vstore) each buffer of ``kernel`` gets."""
    counts: dict[str, int] = {}
    for stmt in walk(kernel.body):
        if isinstance(stmt, Instr) and stmt.op == op:
            counts[stmt.attrs[0]] = counts.get(stmt.attrs[0], 0) + 1
    return counts


def test_aligned_windows_keep_their_vector_loads(cpu_tuning):
    """The aligned case is not slowed: a window at an aligned start and a lazy slice at an
    aligned offset still load aligned vectors; an unaligned slice loads element by element."""
    cpu_tuning(kernels_tuning.GPU_TUNING)
    x = vkml.tensor(DATA)
    (aligned,) = lowered(x[1024:2048] * 2.0)
    assert _accesses(aligned, "vload") == {"in1": 4} and _accesses(aligned, "vstore") == {"out0": 1}
    (lazy,) = lowered((x * 3.0)[1024:2048] + 1.0)
    assert _accesses(lazy, "vload") == {"in1": 4}
    (unaligned,) = lowered((x * 3.0)[1025:2049] + 1.0)
    assert _accesses(unaligned, "vload") == {} and _accesses(unaligned, "load") == {"in1": 4}


@pytest.mark.parametrize("dtype", ["float16", "int64", "uint8"])
def test_windows_of_other_widths_at_every_residue(dev, dtype):
    """Binding alignments of 8, 2 and 16 elements: every residue modulo 16 and both ends read right,
    within the bound of a float32 window (a zero offset is the third structure: int64's alignment
    is below the vector width, so an aligned start can be a nonzero offset in its alias)."""
    data = (np.arange(1000) % 251).astype(dtype)
    x = vkml.tensor(data, device=dev)
    before = counters["plans"]
    for i in list(range(0, 40)) + [500, 934, 935, 936]:  # 936: the window ends at the end
        np.testing.assert_array_equal((x[i : i + 64] + 1).numpy(), data[i : i + 64] + data.dtype.type(1))
    assert counters["plans"] - before <= 3
