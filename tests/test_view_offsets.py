"""A view's offset is a kernel parameter: a loop over slices of one shape compiles one kernel.

Issue 16: slicing a tensor at 1,000 offsets compiled up to eight kernels per view shape (the
offset modulo the vector width, and for a realized tensor modulo the binding alignment, were
structure), then up to three (an offset of zero, one aligned to the vector width, any other).
Now ``View.structure`` keeps of an offset only whether it is a parameter (``View.shifts``: a
nonzero offset, or a zero one in a view narrower than what it views, so a slice at 0 is a slice
like any other), a realized tensor's window is always a view of an alias of its buffer (no
special case at an aligned start or at the buffer's origin), and where aligned vector groups
could pass a view the kernel tests its values' alignment at run time: vector loads where they
are multiples of the width, one load per position elsewhere, in one kernel. A write region
keeps its length, and its position is a parameter.

Each case runs its offsets on the CPU and on lavapipe — 1,000 for slices (1,000 corners of a
2-D block), every third one below 1,000 for a reduction, every row or column of a 250-long
cache for writes: all residues modulo 4, 8 and 16, zero and both edges — and counts the plans
and compiles of the whole loop, first steps included: one of each. Every result is checked
against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from optest import lowered

import vkml
from vkml.ir import text
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


CASES = {  # name: (steps, the offsets they run)
    "slice of 64": (lambda dev: _slice(dev, 64), range(1000)),
    "slice of 61": (lambda dev: _slice(dev, 61), range(1000)),
    "window sum": (_window_sum, range(0, 1000, 3)),
    "block": (_block, range(1000)),
    "lazy slice": (_lazy_slice, range(1000)),
    "row writes": (_row_writes, range(250)),
    "column writes": (_column_writes, range(250)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_thousand_offsets_compile_one_kernel(dev, name):
    make, offsets = CASES[name]
    step = make(dev)
    before = dict(counters)
    for i in offsets:
        got, want = step(i)
        if want is not None:
            np.testing.assert_array_equal(got, want)
    made = {k: counters[k] - before[k] for k in ("plans", "kernels_compiled", "pipelines_created")}
    assert made["plans"] <= 1, made
    # (0 on the CPU, or if cached; on Vulkan the offset, changing at every replay, moves to the eager scalars'
    # ring after two replays: the kernel's ring-reading variant is the one more compile, for any count of offsets)
    assert made["kernels_compiled"] <= 2 and made["pipelines_created"] <= 2, made


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


def test_one_kernel_keeps_vector_loads_for_aligned_offsets(cpu_tuning):
    """The aligned case is not slowed: a window of a realized tensor and a slice of a lazy value at
    an aligned offset, at an unaligned one and at 0 are one kernel, which tests the offset's
    alignment once (a uniform branch) and loads aligned vectors where it holds, as the aligned
    kernel did, and one element per position elsewhere; the results are numpy's at each."""
    cpu_tuning(kernels_tuning.GPU_TUNING)
    x = vkml.tensor(DATA)
    for make, want in (
        (lambda i: x[i : i + 1024] * 2.0, lambda i: DATA[i : i + 1024] * np.float32(2.0)),
        (lambda i: (x * 3.0)[i : i + 1024] + 1.0, lambda i: DATA[i : i + 1024] * np.float32(3.0) + np.float32(1.0)),
    ):
        kernels = [lowered(make(i)) for i in (1024, 1025, 0)]
        assert len({text.print_kernel(k) for (k,) in kernels}) == 1
        (kernel,) = kernels[0]
        assert _accesses(kernel, "vload") == {"in1": 4} and _accesses(kernel, "vstore") == {"out0": 1}
        assert _accesses(kernel, "load") == {"in1": 4}  # the other branch: positions one by one
        for i in (1024, 1025, 0, 3070):
            np.testing.assert_array_equal(make(i).numpy(), want(i))


@pytest.mark.parametrize("dtype", ["float16", "int64", "uint8"])
def test_windows_of_other_widths_at_every_residue(dev, dtype):
    """Binding alignments of 8, 2 and 16 elements: every residue modulo 16 and both ends read right,
    in one plan as a float32 window (int64's alignment is below the vector width: an aligned
    start can be an unaligned offset in its alias, and the kernel's run-time test sees it)."""
    data = (np.arange(1000) % 251).astype(dtype)
    x = vkml.tensor(data, device=dev)
    before = counters["plans"]
    for i in list(range(0, 40)) + [500, 934, 935, 936]:  # 936: the window ends at the end
        np.testing.assert_array_equal((x[i : i + 64] + 1).numpy(), data[i : i + 64] + data.dtype.type(1))
    assert counters["plans"] - before <= 1


@pytest.mark.parametrize("pads", [(4, 4), (3, 5), (8, 0)])
def test_pads_at_negative_offsets_read_right_in_vector_groups(dev, pads, cpu_tuning):
    """A pad's offset is negative (``-4`` for ``(4, 4)``), and where it and the mask are multiples of
    the vector width the kernel's aligned branch divides it by the width: as a uint32 parameter it
    must come out -1, not 2^30 - 1. Realized and lazy sources; the CPU runs the GPU tuning's vectors."""
    cpu_tuning(kernels_tuning.GPU_TUNING)
    data = DATA[:256].reshape(8, 32)
    x = vkml.tensor(data, device=dev)
    for source, values in ((x, data), (x * 2.0, data * np.float32(2.0))):
        got = vkml.nn.functional.pad(source, pads) + 1.0
        np.testing.assert_array_equal(got.numpy(), np.pad(values, ((0, 0), pads)) + np.float32(1.0))


def test_an_aligned_window_realized_alone_is_its_alias(dev):
    """Realizing ``x[i:i + n]`` at an aligned start runs no kernel: the window becomes an alias of
    ``x``'s memory (no copy, as PyTorch's slices share storage); at any other start one copy."""
    x = vkml.tensor(DATA, device=dev)
    align = dev.alias_alignment(vkml.float32)
    for start, kernels in ((align * 3, 0), (align * 3 + 1, 1), (0, 0)):
        window = x[start : start + 64]
        before = counters["dispatches"]
        np.testing.assert_array_equal(window.numpy(), DATA[start : start + 64])
        assert counters["dispatches"] - before == kernels
        assert window.node.realized


def test_both_branches_give_the_same_bits_on_the_cpu_and_lavapipe(gpu, cpu_tuning):
    """The run-time branch yields bool, float16 and float32 values (a where over windows of a mask,
    a half tensor and a lazy value; a pad of a block) at aligned and unaligned offsets: the CPU
    with vector groups as lavapipe has them and lavapipe give the same bits, and numpy's values."""
    cpu_tuning(kernels_tuning.GPU_TUNING)
    data = (np.arange(4096) % 7).astype(np.float16)
    results = []
    for dev in (vkml.device("cpu"), gpu):
        x, mask = vkml.tensor(data, device=dev), vkml.tensor(data > 3, device=dev)
        got = []
        for i in (0, 1, 4, 5, 8):
            chosen = vkml.where(mask[i : i + 64], x[i : i + 64] * 2, (x * 3)[i + 1 : i + 65])
            want = np.where(data[i : i + 64] > 3, data[i : i + 64] * 2, data[i + 1 : i + 65] * 3)
            np.testing.assert_array_equal(chosen.numpy(), want)
            padded = vkml.nn.functional.pad(x.reshape(64, 64)[i : i + 8].float() * 1.5, (4, 4))
            want = np.pad(data.reshape(64, 64)[i : i + 8].astype(np.float32) * np.float32(1.5), ((0, 0), (4, 4)))
            np.testing.assert_array_equal(padded.numpy(), want)
            got += [chosen.numpy(), padded.numpy()]
        results.append(got)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(*results))
