"""The CPU reference interpreter: control flow, memory, barriers, subgroups, the index space, chunking.

Instruction-by-instruction checks live in test_interp_instructions.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from vkml.errors import IRError
from vkml.ir import types as T
from vkml.ir.builder import (
    KernelBuilder,
    barrier,
    const,
    convert,
    eq,
    global_id,
    if_,
    if_else,
    local_id,
    loop,
    num_workgroups,
    range_,
    shuffle_xor,
    workgroup_id,
)
from vkml.ir.core import Block, Instr, Kernel, Value
from vkml.ir.interp.reference import run

RNG = np.random.default_rng(1234)


def assert_same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal dtypes and equal bits (so NaN payloads and the sign of zero count)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if actual.dtype.kind == "f":
        np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))
    else:
        np.testing.assert_array_equal(actual, expected)


def float32_samples(n: int) -> np.ndarray:
    """Special float32 values (NaN, infinities, zeros, subnormals, ties) then random ones."""
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, -1.5, 0.5, 3e38, -3e38, 1e-45, -1e-45, 1e-40]
    return np.concatenate([np.float32(special), (RNG.standard_normal(n - len(special)) * 3).astype(np.float32)])


# ---------------------------------------------------------------- control flow


def test_if_else_results_merge_by_lane_under_divergent_masks():
    kb = KernelBuilder("branches", local_size=(16, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    tag = kb.buffer("tag", T.int32, "readwrite")
    with kb:
        i = global_id(0)
        v = x[i]

        def inner():
            return if_else(v < -1.0, lambda: (v - 1.0, const(2, T.int32)), lambda: (v * v, const(3, T.int32)))

        r, t = if_else(v > 0.0, lambda: (v + v, const(1, T.int32)), inner)
        out[i] = r
        with if_(eq(t, 2)):  # an if without else: other lanes keep the buffer's contents
            tag[i] = tag[i] + t
    xs = float32_samples(208)
    outs, tags = np.zeros_like(xs), np.arange(len(xs), dtype=np.int32)
    run(kb.finish(), (len(xs) // 16, 1, 1), {"x": xs, "out": outs, "tag": tags}, {})
    with np.errstate(all="ignore"):
        expected = np.where(xs > 0, xs + xs, np.where(xs < -1, xs - 1, xs * xs))
    assert_same_bits(outs, expected)
    np.testing.assert_array_equal(tags, np.arange(len(xs)) + np.where(~(xs > 0) & (xs < -1), 2, 0))


def test_loops_with_per_lane_trip_counts_steps_and_carried_values():
    kb = KernelBuilder("per_lane_loop", local_size=(8, 1, 1))
    ends = kb.buffer("ends", T.int32, "read")
    sums = kb.buffer("sums", T.int32, "write")
    mixes = kb.buffer("mixes", T.int32, "write")
    with kb:
        i = global_id(0)
        step = convert(i % 3 + 1, T.int32)
        s, m = loop(
            -3, ends[i], step, [const(0, T.int32), const(1, T.int32)], lambda k, s, m: (s + k, (m * 3 + k) & 0xFFFF)
        )
        sums[i], mixes[i] = s, m
    lanes = 40
    end_values = RNG.integers(-6, 25, size=lanes).astype(np.int32)
    out_s, out_m = np.zeros(lanes, np.int32), np.zeros(lanes, np.int32)
    run(kb.finish(), (5, 1, 1), {"ends": end_values, "sums": out_s, "mixes": out_m}, {})
    for lane in range(lanes):
        s, m = 0, 1
        for k in range(-3, int(end_values[lane]), lane % 3 + 1):  # signed compare: -3 < end
            s, m = s + k, (m * 3 + k) & 0xFFFF
        assert (out_s[lane], out_m[lane]) == (s, m), lane
    assert (end_values <= -3).any() and (end_values > 10).any()  # zero-trip and long lanes both occur


def test_zero_trip_loop_keeps_inits_and_runs_no_body():
    kb = KernelBuilder("zero_trip", local_size=(4, 1, 1))
    out = kb.buffer("out", T.uint32, "readwrite")
    start = kb.param("start", T.uint32)
    with kb:
        i = global_id(0)

        def body(k, acc):
            out[i] = const(99, T.uint32)
            return acc + k

        (total,) = loop(start, 3, 1, [i], body)
        out[i + 8] = total
    buf = np.zeros(16, np.uint32)
    run(kb.finish(), (2, 1, 1), {"out": buf}, {"start": 5})  # unsigned: 5 < 3 is false
    assert buf.tolist() == [0] * 8 + list(range(8))
    run(kb.finish(), (2, 1, 1), {"out": buf}, {"start": 1})
    assert buf.tolist() == [99] * 8 + [i + 1 + 2 for i in range(8)]


def test_nested_control_flow_loop_in_if_in_loop():
    kb = KernelBuilder("nested", local_size=(8, 1, 1))
    x = kb.buffer("x", T.int32, "read")
    out = kb.buffer("out", T.int32, "write")
    grid_out = kb.buffer("grid", T.int32, "write")
    with kb:
        i = global_id(0)
        v = x[i]

        def outer(j, acc):
            def odd_lane():
                (inner,) = loop(0, j, 1, [acc], lambda k, a: a + k * v)
                return (inner,)

            (acc,) = if_else(eq(v % 2, 1), odd_lane, lambda: (acc - j,))
            grid_out[i * 6 + convert(j, T.uint32)] = acc
            return acc

        (result,) = loop(0, v % 7, 1, [const(0, T.int32)], outer)
        out[i] = result
    xs = RNG.integers(0, 40, size=24).astype(np.int32)
    out_buf = np.zeros(24, np.int32)
    grid_buf = np.full(24 * 6, -1, np.int32)
    run(kb.finish(), (3, 1, 1), {"x": xs, "out": out_buf, "grid": grid_buf}, {})
    expected_grid = np.full(24 * 6, -1, np.int32)
    for lane, v in enumerate(xs.tolist()):
        acc = 0
        for j in range(v % 7):
            acc = acc + sum(k * v for k in range(j)) if v % 2 == 1 else acc - j
            expected_grid[lane * 6 + j] = acc
        assert out_buf[lane] == acc
    np.testing.assert_array_equal(grid_buf, expected_grid)


def test_loop_with_non_positive_step_raises():
    kb = KernelBuilder("bad_step", local_size=(1, 1, 1))
    step = kb.param("step", T.int32)
    out = kb.buffer("out", T.int32, "write")
    with kb:
        (r,) = loop(0, 10, step, [const(0, T.int32)], lambda k, a: a + k)
        out[0] = r
    with pytest.raises(IRError, match="'bad_step'.*step must be positive, got 0"):
        run(kb.finish(), (1, 1, 1), {"out": np.zeros(1, np.int32)}, {"step": 0})


def test_loop_step_is_checked_on_running_lanes_only():
    kb = KernelBuilder("lane_steps", local_size=(4, 1, 1))
    steps = kb.buffer("steps", T.int32, "read")
    out = kb.buffer("out", T.int32, "write")
    with kb:
        i = global_id(0)
        (r,) = loop(0, convert(i, T.int32), steps[i], [const(0, T.int32)], lambda k, a: a + k)
        out[i] = r
    out = np.zeros(4, np.int32)
    run(kb.finish(), (1, 1, 1), {"steps": np.int32([-1, 1, 2, 1]), "out": out}, {})  # lane 0 runs zero times
    assert out.tolist() == [0, 0, 0, 3]
    with pytest.raises(IRError, match=r"step must be positive, got -3 \(invocation with global id \(2, 0, 0\)\)"):
        run(kb.finish(), (1, 1, 1), {"steps": np.int32([1, 1, -3, 1]), "out": out}, {})


# ---------------------------------------------------------------- shared memory, barriers, subgroups


def tree_sum_kernel(with_loop: bool) -> Kernel:
    """Each 64-wide workgroup sums its 64 elements with a shared-memory tree."""
    kb = KernelBuilder("tree_sum", local_size=(64, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    partial = kb.shared("partial", T.float32, 64)
    with kb:
        lid = local_id(0)
        partial[lid] = x[global_id(0)]
        barrier()

        def level(_, stride):
            with if_(lid < stride):
                partial[lid] = partial[lid] + partial[lid + stride]
            barrier()
            return stride >> 1

        if with_loop:
            loop(0, 6, 1, [const(32, T.uint32)], level)
        else:
            for stride in (32, 16, 8, 4, 2, 1):
                level(None, const(stride, T.uint32))
        with if_(eq(lid, 0)):
            out[workgroup_id(0)] = partial[0]
    return kb.finish()


def reference_tree_sum(xs: np.ndarray) -> np.ndarray:
    v = xs.reshape(-1, 64).copy()
    for stride in (32, 16, 8, 4, 2, 1):
        v[:, :stride] = v[:, :stride] + v[:, stride : 2 * stride]
    return v[:, 0]


@pytest.mark.parametrize("with_loop", [False, True], ids=["unrolled", "loop"])
@pytest.mark.parametrize("max_invocations", [64, 200, 1 << 20])
def test_shared_memory_tree_reduction(with_loop, max_invocations):
    xs = (RNG.standard_normal(7 * 64) * 1e3).astype(np.float32)
    out = np.zeros(7, np.float32)
    run(tree_sum_kernel(with_loop), (7, 1, 1), {"x": xs, "out": out}, {}, max_invocations=max_invocations)
    assert_same_bits(out, reference_tree_sum(xs))


@pytest.mark.parametrize("group", [32, 64])
def test_shuffle_xor_butterfly_sum(group):
    kb = KernelBuilder("butterfly", local_size=(group, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    with kb:
        i = global_id(0)
        v = x[i]
        for mask in (16, 8, 4, 2, 1):
            v = v + shuffle_xor(v, mask)
        out[i] = v
    xs = RNG.standard_normal(3 * group).astype(np.float32)
    out = np.zeros_like(xs)
    run(kb.finish(), (3, 1, 1), {"x": xs, "out": out}, {})
    v = xs.reshape(-1, 32)
    for mask in (16, 8, 4, 2, 1):
        v = v + v[:, np.arange(32) ^ mask]
    assert_same_bits(out, v.reshape(-1))
    assert np.all(out.reshape(-1, 32) == out.reshape(-1, 32)[:, :1])  # every lane holds its subgroup's sum


def test_shuffle_xor_with_inactive_partner_returns_own_value():
    kb = KernelBuilder("shuffle_masked", local_size=(8, 1, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        i = global_id(0)
        with if_(eq(i % 2, 0)):  # odd lanes inactive
            out[i * 2] = shuffle_xor(i, 1)  # partner odd: own value
            out[i * 2 + 1] = shuffle_xor(i, 2)  # partner even: its value
    buf = np.full(16, 77, np.uint32)
    run(kb.finish(), (1, 1, 1), {"out": buf}, {})
    assert buf[0::4].tolist() == [0, 2, 4, 6]
    assert buf[1::4].tolist() == [2, 0, 6, 4]
    assert np.all(buf[2::4] == 77) and np.all(buf[3::4] == 77)


def test_barrier_under_divergent_mask_raises():
    kb = KernelBuilder("divergent_barrier", local_size=(8, 1, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        i = local_id(0)
        with if_(i < 4):
            barrier()
        with if_(workgroup_id(0) < 1):  # uniform per workgroup: fine
            barrier()
        out[global_id(0)] = i
    with pytest.raises(IRError, match="divergent_barrier.*barrier.*workgroup 0"):
        run(kb.finish(), (2, 1, 1), {"out": np.zeros(16, np.uint32)}, {})


def test_uniform_per_workgroup_barrier_is_fine():
    kb = KernelBuilder("group_barrier", local_size=(8, 1, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        with if_(workgroup_id(0) < 1):
            barrier()
        out[global_id(0)] = local_id(0)
    buf = np.zeros(16, np.uint32)
    run(kb.finish(), (2, 1, 1), {"out": buf}, {})
    assert buf.tolist() == list(range(8)) * 2


# ---------------------------------------------------------------- memory rules


def copy_kernel(index_type: T.DType = T.uint32, offset: int = 0) -> Kernel:
    kb = KernelBuilder("copy", local_size=(4, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    with kb:
        i = convert(global_id(0), index_type) + offset
        out[i] = x[i]
    return kb.finish()


def test_out_of_range_store_raises_naming_kernel_buffer_index_and_length():
    buffers = {"x": np.zeros(12, np.float32), "out": np.zeros(10, np.float32)}
    with pytest.raises(IndexError, match=r"'copy'.*store buffer 'out' at index 10.*length 10.*\(10, 0, 0\)"):
        run(copy_kernel(), (3, 1, 1), buffers, {})


def test_out_of_range_load_and_negative_index_raise():
    buffers = {"x": np.zeros(10, np.float32), "out": np.zeros(12, np.float32)}
    with pytest.raises(IndexError, match=r"load buffer 'x' at index 10.*length 10"):
        run(copy_kernel(), (3, 1, 1), buffers, {})
    buffers = {"x": np.zeros(12, np.float32), "out": np.zeros(12, np.float32)}
    with pytest.raises(IndexError, match=r"index -2\b"):
        run(copy_kernel(T.int32, -2), (3, 1, 1), buffers, {})


def test_inactive_lanes_never_index_out_of_range():
    kb = KernelBuilder("guarded", local_size=(64, 1, 1))
    x = kb.buffer("x", T.int32, "read")
    out = kb.buffer("out", T.int32, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            out[i] = x[i] * 2
    xs = np.arange(5, dtype=np.int32)
    out = np.zeros(5, np.int32)
    run(kb.finish(), (1, 1, 1), {"x": xs, "out": out}, {"n": 5})
    assert out.tolist() == [0, 2, 4, 6, 8]
    empty = np.zeros(0, np.int32)
    run(kb.finish(), (1, 1, 1), {"x": empty, "out": empty}, {"n": 0})


@pytest.mark.parametrize("max_invocations", [8, 1 << 20])
def test_colliding_stores_highest_invocation_wins(max_invocations):
    kb = KernelBuilder("collide", local_size=(8, 1, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        i = global_id(0)
        out[0] = i
        out[i % 3 + 1] = i
        with if_(eq(i % 2, 0)):
            out[4] = i
            out[5 + (i & 1)] = const(7, T.uint32) + i  # uniform index, per-lane values
    buf = np.zeros(7, np.uint32)
    run(kb.finish(), (4, 1, 1), {"out": buf}, {}, max_invocations=max_invocations)
    assert buf.tolist() == [31, 30, 31, 29, 30, 37, 0]


# ---------------------------------------------------------------- the index space and chunking


@pytest.mark.parametrize(
    ("local_size", "grid"), [((8, 4, 1), (3, 5, 1)), ((2, 3, 2), (2, 1, 3)), ((1, 4, 1), (5, 2, 1))]
)
def test_invocation_ids_on_every_axis(local_size, grid):
    kb = KernelBuilder("ids", local_size=local_size)
    outs = {name: kb.buffer(name, T.uint32, "write") for name in ("gid", "lid", "wid", "nwg")}
    sizes = [g * s for g, s in zip(grid, local_size)]
    with kb:
        gx, gy, gz = (global_id(a) for a in range(3))
        slot = (gz * sizes[1] + gy) * sizes[0] + gx
        for axis in range(3):
            outs["gid"][slot * 3 + axis] = global_id(axis)
            outs["lid"][slot * 3 + axis] = local_id(axis)
            outs["wid"][slot * 3 + axis] = workgroup_id(axis)
            outs["nwg"][slot * 3 + axis] = num_workgroups(axis)
    total = int(np.prod(sizes))
    bufs = {name: np.zeros(total * 3, np.uint32) for name in outs}
    run(kb.finish(), grid, bufs, {}, max_invocations=int(np.prod(local_size)) * 2)
    z, y, x = np.meshgrid(*(np.arange(s) for s in reversed(sizes)), indexing="ij")
    gid = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    np.testing.assert_array_equal(bufs["gid"].reshape(-1, 3), gid)
    np.testing.assert_array_equal(bufs["lid"].reshape(-1, 3), gid % np.array(local_size))
    np.testing.assert_array_equal(bufs["wid"].reshape(-1, 3), gid // np.array(local_size))
    np.testing.assert_array_equal(bufs["nwg"].reshape(-1, 3), np.broadcast_to(grid, (total, 3)))


def mixed_kernel() -> Kernel:
    """Shared memory, shuffles, loops and a 2-D grid together, for chunking comparisons."""
    kb = KernelBuilder("mixed", local_size=(16, 2, 1))
    x = kb.buffer("x", T.int32, "read")
    out = kb.buffer("out", T.int32, "write")
    row = kb.shared("row", T.int32, 32)
    width = kb.param("width", T.uint32)
    with kb:
        gx, gy = global_id(0), global_id(1)
        lin = local_id(0) + local_id(1) * 16
        v = x[gy * width + gx]
        row[lin] = v
        barrier()
        neighbour = row[(lin + 5) % 32]
        (acc,) = loop(0, v & 7, 1, [neighbour], lambda k, a: a * 3 + k)
        out[gy * width + gx] = acc + shuffle_xor(v, 3)
    return kb.finish()


def test_chunking_gives_the_same_result_as_one_chunk():
    width, height = 64, 6
    xs = RNG.integers(-1000, 1000, size=width * height).astype(np.int32)
    results = []
    for max_invocations in (1, 32, 96, 1 << 20):
        out = np.zeros_like(xs)
        run(mixed_kernel(), (4, 3, 1), {"x": xs, "out": out}, {"width": width}, max_invocations=max_invocations)
        results.append(out)
    for other in results[1:]:
        np.testing.assert_array_equal(results[0], other)
    assert np.count_nonzero(results[0]) > len(xs) // 2


def test_large_one_dimensional_grid():
    n = 1 << 22
    kb = KernelBuilder("iota", local_size=(256, 1, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        i = global_id(0)
        out[i] = i * 3 + 1
    buf = np.zeros(n, np.uint32)
    run(kb.finish(), (n // 256, 1, 1), {"out": buf}, {})
    np.testing.assert_array_equal(buf, np.arange(n, dtype=np.uint32) * 3 + 1)


# ---------------------------------------------------------------- argument checks


def test_buffer_and_param_checks_are_eager_and_named():
    kernel = KernelBuilder("checked", local_size=(4, 1, 1))
    x = kernel.buffer("x", T.float32, "read")
    out = kernel.buffer("out", T.float32, "write")
    n = kernel.param("n", T.uint32)
    scale = kernel.param("scale", T.float32)
    with kernel:
        i = global_id(0)
        with if_(i < n):
            out[i] = x[i] * scale
    kernel = kernel.finish()
    good = {"x": np.ones(4, np.float32), "out": np.zeros(4, np.float32)}
    params = {"n": 4, "scale": 0.1}
    run(kernel, (1, 1, 1), good, params)
    assert_same_bits(good["out"], np.full(4, np.float32(0.1)))
    cases = [
        ({"x": good["x"]}, params, r"'checked'.*buffers.*missing: \['out'\]"),
        (good | {"y": good["x"]}, params, r"buffers.*unexpected: \['y'\]"),
        (good | {"x": np.ones(4)}, params, r"buffer 'x' is declared float32 but the array is float64"),
        (good | {"x": np.ones((2, 2), np.float32)}, params, r"buffer 'x' must be a 1-D numpy array, got \(2, 2\)"),
        (good | {"x": [1.0]}, params, r"buffer 'x' must be a 1-D numpy array"),
        (good, {"n": 4}, r"params.*missing: \['scale'\]"),
        (good, params | {"m": 1}, r"params.*unexpected: \['m'\]"),
        (good, params | {"n": -1}, r"param 'n' = -1 does not fit uint32"),
        (good, params | {"n": 2.5}, r"param 'n' = 2.5 does not fit uint32"),
    ]
    for buffers, given, message in cases:
        with pytest.raises(ValueError, match=message):
            run(kernel, (1, 1, 1), buffers, given)
    readonly = np.zeros(4, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="'out'.*not writeable"):
        run(kernel, (1, 1, 1), good | {"out": readonly}, params)
    with pytest.raises(ValueError, match="grid"):
        run(kernel, (1, 1), good, params)


def test_value_used_before_definition_raises_irerror():
    undefined = Value(T.float32, "ghost")
    body = Block([Instr("add", (undefined, undefined), Value(T.float32))])
    kernel = Kernel("broken", (1, 1, 1), (), (), (), body)
    with pytest.raises(IRError, match="'broken'.*ghost.*before it is defined"):
        run(kernel, (1, 1, 1), {}, {})


def test_range_loop_without_carried_values_stores_each_iteration():
    kb = KernelBuilder("fill_rows", local_size=(2, 1, 1))
    out = kb.buffer("out", T.int32, "write")
    with kb:
        i = global_id(0)
        with range_(4) as k:
            out[i * 4 + k] = convert(i * 10 + k, T.int32)
    buf = np.zeros(16, np.int32)
    run(kb.finish(), (2, 1, 1), {"out": buf}, {})
    assert buf.tolist() == [r * 10 + c for r in range(4) for c in range(4)]
