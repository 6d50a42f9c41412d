"""Per-device tunings of the kernel templates never change bits.

Elementwise kernels with vectors (aligned groups of four positions per invocation) and
reductions with more lanes, more elements per lane and shuffle levels are run on the CPU
interpreter under several tunings and on lavapipe under its own, against numpy and the
contract's tree (``optest.tree_reduce``). The lowered IR is inspected to see that contiguous
leaves and outputs do move as vectors and that other views fall back to scalar loads.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from optest import first_extreme_index, lowered, maximum_ref, tree_reduce

import vkml
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.ir.core import Instr, walk
from vkml.kernels import tuning as KT
from vkml.kernels.reduce_rows import Layout, reduce_layout

CPU = vkml.device("cpu")
# Small layouts reach chunk, lane and subgroup boundaries with short inputs.
SMALL_GPU = replace(KT.GPU_TUNING, local_size=8, reduce_lanes=16, reduce_per_lane=4, reduce_row_per_lane=8, subgroup=4)
TUNINGS = {
    "cpu": KT.CPU_TUNING,
    "gpu": KT.GPU_TUNING,
    "h200": KT.tuning_from_features(DeviceFeatures.h200_like()),
    "small-gpu": SMALL_GPU,
    "shared-only": replace(SMALL_GPU, subgroup=1, vectors_per_invocation=2),
    "narrow-shuffles": replace(KT.GPU_TUNING, subgroup=32, wide_shuffles=False),
}


def accesses(kernel, op: str) -> dict[str, int]:
    """How many ``op`` instructions (load, vload, vstore, ...) each buffer gets."""
    counts: dict[str, int] = {}
    for stmt in walk(kernel.body):
        if isinstance(stmt, Instr) and stmt.op == op:
            counts[stmt.attrs[0]] = counts.get(stmt.attrs[0], 0) + 1
    return counts


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_tuning_from_device_features():
    h200 = KT.tuning_from_features(DeviceFeatures.h200_like())
    assert (h200.local_size, h200.vector, h200.reduce_lanes, h200.subgroup) == (256, 4, 256, 32)
    assert (h200.row_lanes, h200.reduce_row_per_lane) == (512, 16)  # an 8192-float row: one chunk, 16 a lane
    assert reduce_layout(8192, h200, whole_row=True) == Layout(16, 512)
    assert reduce_layout(8192, h200) == Layout(16, 256)  # the blocks mode keeps its lanes
    with pytest.raises(ValueError, match="row_lanes"):
        replace(KT.GPU_TUNING, row_lanes=48)
    lavapipe = KT.tuning_from_features(DeviceFeatures.lavapipe_like())
    assert (lavapipe.subgroup, lavapipe.reduce_lanes, lavapipe.wide_shuffles) == (8, 64, True)  # 8 subgroups
    minimal = KT.tuning_from_features(DeviceFeatures())  # 128 invocations, no shuffles
    assert (minimal.local_size, minimal.reduce_lanes, minimal.subgroup) == (128, 128, 1)
    assert KT.tuning_for(CPU) == KT.CPU_TUNING
    with pytest.raises(ValueError, match="power of two"):
        replace(KT.GPU_TUNING, reduce_lanes=48)


def test_the_h200_layouts_validate_for_the_h200(cpu_tuning):
    """Every kernel of a few graphs, lowered with the H200's tuning, passes spirv-val for its features."""
    h200 = DeviceFeatures.h200_like()
    cpu_tuning(KT.tuning_from_features(h200))
    rng = np.random.default_rng(9)
    x = vkml.tensor(rng.standard_normal((8, 8192)).astype(np.float32))
    h = x.half()
    graphs = [
        vkml.softmax(x, dim=1),
        vkml.nn.functional.layer_norm(x, (8192,), x[0], x[1]),
        x.reshape(-1).sum(),
        h.sum(dim=1),  # float16 in, float32 shuffles
        x.argmax(dim=1),  # int64 indices through shuffles
        (x * 2.0).half() + h,
    ]
    for graph in graphs:
        for kernel in lowered(graph):
            compile_kernel(kernel, h200)


# ---------------------------------------------------------------- elementwise


def _views(a: np.ndarray, b: np.ndarray, row: np.ndarray, col: np.ndarray):
    """(name, vkml function, numpy function) over a (24, 32) ``a``, ``b``, a (32,) row and a (24, 1) column."""
    return [
        ("contiguous", lambda x, y, r, c: x * y + 1.0, lambda x, y, r, c: x * y + np.float32(1)),
        ("row-broadcast", lambda x, y, r, c: x - r, lambda x, y, r, c: x - r),
        ("column-broadcast", lambda x, y, r, c: x * c, lambda x, y, r, c: x * c),
        ("transposed", lambda x, y, r, c: x + y.T.T.reshape(32, 24).T.reshape(24, 32), None),
        ("aligned-slice", lambda x, y, r, c: x[:, 4:20] + y[:, 8:24], lambda x, y, r, c: x[:, 4:20] + y[:, 8:24]),
        ("unaligned-slice", lambda x, y, r, c: x[:, 1:17] + y[:, 3:19], lambda x, y, r, c: x[:, 1:17] + y[:, 3:19]),
        ("step-slice", lambda x, y, r, c: x[:, ::2] + 1.0, lambda x, y, r, c: x[:, ::2] + np.float32(1)),
        ("flip-rows", lambda x, y, r, c: x.flip(0) - y, lambda x, y, r, c: x[::-1] - y),
        ("flip-columns", lambda x, y, r, c: x.flip(1) - y, lambda x, y, r, c: x[:, ::-1] - y),
        (
            "aligned-pad",
            lambda x, y, r, c: vkml.nn.functional.pad(x[:, :24], (4, 4)) + 1.0,
            lambda x, y, r, c: np.pad(x[:, :24], ((0, 0), (4, 4))) + np.float32(1),
        ),
        (
            "unaligned-pad",
            lambda x, y, r, c: vkml.nn.functional.pad(x[:, :30], (1, 1)) + 1.0,
            lambda x, y, r, c: np.pad(x[:, :30], ((0, 0), (1, 1))) + np.float32(1),
        ),
        ("odd-columns", lambda x, y, r, c: x[:, :31] * 2.0, lambda x, y, r, c: x[:, :31] * np.float32(2)),
        ("cat", lambda x, y, r, c: vkml.cat([x, y.flip(0)], 1), lambda x, y, r, c: np.concatenate([x, y[::-1]], 1)),
        (
            "reshape-of-transpose",
            lambda x, y, r, c: x.T.reshape(24, 32) + y,
            lambda x, y, r, c: x.T.reshape(24, 32) + y,
        ),
        ("to-float16", lambda x, y, r, c: (x + y).half(), lambda x, y, r, c: (x + y).astype(np.float16)),
        ("compare", lambda x, y, r, c: x > y, lambda x, y, r, c: x > y),
        ("where", lambda x, y, r, c: vkml.where(x > r, x, c), lambda x, y, r, c: np.where(x > r, x, c)),
        ("to-int64", lambda x, y, r, c: (x * 100).long(), lambda x, y, r, c: (x * 100).astype(np.int64)),
    ]


def _inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in ((24, 32), (24, 32), (32,), (24, 1))]


CASES = _views(*_inputs())


@pytest.mark.parametrize("name, fn, ref", CASES, ids=[c[0] for c in CASES])
def test_elementwise_same_bits_under_every_tuning_and_on_vulkan(name, fn, ref, cpu_tuning, gpu):
    arrays = _inputs()
    results = {}
    for label, tuning in TUNINGS.items():
        cpu_tuning(tuning)
        results[label] = fn(*[vkml.tensor(a) for a in arrays]).numpy()
    results["vulkan"] = fn(*[vkml.tensor(a, device=gpu) for a in arrays]).numpy()
    want = ref(*arrays) if ref is not None else results["cpu"]
    for label, got in results.items():
        assert same_bits(got, np.asarray(want)), f"{name} under {label}"


def test_contiguous_leaves_and_the_output_move_as_vectors(cpu_tuning):
    cpu_tuning(KT.GPU_TUNING)
    x, y, r, c = (vkml.tensor(a) for a in _inputs())
    (kernel,) = lowered(x * y - r + c)
    assert kernel.local_size == (256, 1, 1)
    assert accesses(kernel, "vstore") == {"out0": 1}
    assert accesses(kernel, "vload") == {"in1": 4, "in2": 4, "in3": 4}  # x, y and the row broadcast
    assert accesses(kernel, "load") == {"in4": 1}  # the column: one element for the whole group


def test_other_views_fall_back_to_scalar_loads(cpu_tuning):
    cpu_tuning(KT.GPU_TUNING)
    x, y, _, _ = (vkml.tensor(a) for a in _inputs())
    (kernel,) = lowered(x + y.T.reshape(24, 32).flip(1))
    assert accesses(kernel, "vload") == {"in1": 4}
    assert accesses(kernel, "load") == {"in2": 4}
    (odd,) = lowered(x[:, :31] + 1.0)  # 31 columns: no aligned groups at all
    assert accesses(odd, "vload") == {} and accesses(odd, "vstore") == {}


def test_several_groups_per_invocation_cover_every_size(cpu_tuning):
    cpu_tuning(replace(SMALL_GPU, vectors_per_invocation=4))
    for n in (4, 28, 32, 36, 124, 128, 132, 4 * 33 * 4 + 8):
        x = np.arange(n, dtype=np.float32)
        assert same_bits((vkml.tensor(x) * 3.0).numpy(), x * np.float32(3)), n


def test_an_invocations_groups_share_what_depends_on_the_row(cpu_tuning):
    """With whole workgroups per row, layer norm's per-row values are loaded and computed once per invocation."""
    x = vkml.tensor(np.random.default_rng(6).standard_normal((6, 256)).astype(np.float32))
    w, b = (vkml.tensor(np.random.default_rng(s).standard_normal(256).astype(np.float32)) for s in (7, 8))
    results = []
    for per in (1, 4):
        # 8 lanes × 4 groups of 4: half a row (rows longer than a reduction chunk, so a kernel of their own)
        cpu_tuning(replace(SMALL_GPU, vectors_per_invocation=per))
        y = vkml.nn.functional.layer_norm(x, (256,), w, b)
        norm = lowered(y)[1]
        assert sum(accesses(norm, "load").values()) == 2  # the row's sum and its rsqrt, once
        assert sum(accesses(norm, "vstore").values()) == per
        results.append(y.numpy())
    assert same_bits(results[0], results[1])


# ---------------------------------------------------------------- reductions

LENGTHS = sorted({n + d for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096) for d in (-1, 0, 1)} - {0})


def _oracle(name: str, x: np.ndarray) -> np.ndarray:
    if name == "sum":
        return tree_reduce(x, np.add)
    if name == "amax":  # a NaN comes back as the default NaN (0xFFC00000), whatever NaN the row held
        out = np.atleast_1d(tree_reduce(x, maximum_ref))
        out[np.isnan(out)] = np.array(0xFFC00000, np.uint32).view(np.float32)
        return out
    return first_extreme_index(x, largest=True)


@pytest.mark.parametrize("tuning", ["cpu", "small-gpu", "shared-only", "h200"])
@pytest.mark.parametrize("rows", [1, 3, 40])
def test_reductions_follow_the_tree_at_every_boundary(tuning, rows, cpu_tuning):
    """Lengths around every power of two up to past a GPU chunk: lane, subgroup, chunk and pass edges."""
    cpu_tuning(TUNINGS[tuning])
    rng = np.random.default_rng(rows)
    lengths = LENGTHS if rows < 40 else [n for n in LENGTHS if n < 600]
    for n in lengths:
        x = (rng.standard_normal((rows, n)) * 100).astype(np.float32)
        x[:, ::7] = np.float32(-0.0)
        if n > 5:
            x[0, n // 2] = np.nan  # NaN wins amax and argmax from any position
        t = vkml.tensor(x)
        for name in ("sum", "amax", "argmax"):
            got = getattr(t, name)(dim=1).numpy()
            assert same_bits(got, _oracle(name, x)), f"{name} of {rows}×{n} under {tuning}"


def _softmax_and_layer_norm(x: np.ndarray, dim: int) -> list:
    t = vkml.tensor(x)
    n = x.shape[-1]
    w = vkml.tensor(np.linspace(-2, 2, n, dtype=np.float32))
    return [vkml.softmax(t, dim=dim).numpy(), vkml.nn.functional.layer_norm(t, (n,), w, w * 0.5).numpy()]


@pytest.mark.parametrize("tuning", ["small-gpu", "shared-only", "h200"])
def test_rows_in_one_kernel_give_the_bits_of_the_cpu_layout(tuning, cpu_tuning):
    """Rule 7 under each device layout (vectors or scalars, rows filling the chunk or not, any dim)
    gives the bits of the CPU reference's layout, which takes two kernels where a row is past 256."""
    rng = np.random.default_rng(12)
    cases = [((5, 128), 1), ((5, 127), 1), ((3, 4, 33), 2), ((40, 6), 0), ((2, 8190), 1), ((2, 8192), 1)]
    for shape, dim in cases:
        x = (rng.standard_normal(shape) * 4).astype(np.float32)
        x.reshape(-1)[::11] = np.float32(-0.0)
        cpu_tuning(KT.CPU_TUNING)
        want = _softmax_and_layer_norm(x, dim)
        cpu_tuning(TUNINGS[tuning])
        got = _softmax_and_layer_norm(x, dim)
        for a, b, what in zip(got, want, ("softmax", "layer_norm")):
            assert same_bits(a, b), f"{what} of {shape} over dim {dim} under {tuning}"


def _staged(kernel) -> bool:
    return any(decl.name == "row_out" for decl in kernel.shared)


def test_whole_rows_are_stored_as_contiguous_vectors_with_the_same_bits(cpu_tuning, gpu):
    """A rows kernel that writes whole rows stores them as contiguous vectors: softmax's staged in
    shared memory (tuning.staged_row_max), layer norm's computed again at those positions. The
    stores change, not a bit of the result; rows that are not whole lanes' runs, or too long to
    stage, are stored from the lanes' registers as before."""
    staged, direct = replace(SMALL_GPU, staged_row_max=128), replace(SMALL_GPU, staged_row_max=64)
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((6, 128)) * 4).astype(np.float32)
    x[2, 5], x[3, :] = np.nan, np.float32(-0.0)
    for dtype in (np.float32, np.float16):
        cpu_tuning(staged)
        t = vkml.tensor(x.astype(dtype))
        (rows_kernel,) = lowered(vkml.softmax(t, dim=1))
        assert _staged(rows_kernel) and accesses(rows_kernel, "vstore") == {"out0": 2}
        w = vkml.tensor(np.ones(128, np.float32))
        (norm_kernel,) = lowered(vkml.nn.functional.layer_norm(t, (128,), w, w))
        assert not _staged(norm_kernel) and accesses(norm_kernel, "vload")["in3"] == 16  # x loaded again
        # exp(x - max)'s exp is no reduction's source: staged, a lane would compute all of its exps
        # before its first store (the H200, 8192²: 318 -> 422 µs), so its lanes store their own
        (shifted_exp,) = lowered(vkml.exp(t - t.amax(1, keepdim=True)))
        assert not _staged(shifted_exp) and list(accesses(shifted_exp, "vload").values()) == [8]
        got = _softmax_and_layer_norm(x.astype(dtype), 1)
        cpu_tuning(direct)
        assert not _staged(lowered(vkml.softmax(t, dim=1))[0])
        want = _softmax_and_layer_norm(x.astype(dtype), 1)
        for a, b, what in zip(got, want, ("softmax", "layer_norm")):
            assert same_bits(a, b), f"{what}, {np.dtype(dtype).name}, staged"
    cpu_tuning(staged)
    assert not _staged(lowered(vkml.softmax(vkml.tensor(x[:, :127]), dim=1))[0])  # the last lane is not full
    assert KT.tuning_from_features(DeviceFeatures.h200_like()).staged_row_max == 8192  # 48 KiB of shared memory
    for shape in ((3, 1024), (2, 1000)):
        y = (rng.standard_normal(shape) * 4).astype(np.float32)
        t = vkml.tensor(y, device=gpu)
        w = vkml.tensor(np.linspace(-2, 2, shape[1], dtype=np.float32), device=gpu)
        assert _staged(lowered(vkml.softmax(t, dim=1))[0]) == (shape[1] == 1024)
        on_gpu = [vkml.softmax(t, dim=1).numpy(), vkml.nn.functional.layer_norm(t, shape[1:], w, w * 0.5).numpy()]
        for a, b, what in zip(on_gpu, _softmax_and_layer_norm(y, 1), ("softmax", "layer_norm")):
            assert same_bits(a, b), f"{what} of {shape} on {gpu.name} against the CPU"


def _row_ops_of_views(a: np.ndarray, b: np.ndarray) -> list:
    x, y = vkml.tensor(a), vkml.tensor(b)
    w = vkml.tensor(np.linspace(-2, 2, a.shape[1], dtype=np.float32))
    F = vkml.nn.functional
    outs = [
        F.layer_norm(y.T, (a.shape[1],), None, None),  # rows of a transposed view
        vkml.softmax(y.T * 2.0, -1),
        vkml.softmax(x.flip(1), -1) * x,
        vkml.log_softmax(x * 0.5, -1),
        F.layer_norm(x[:, ::2], (a.shape[1] // 2,), w[::2], None),
        F.layer_norm((x + 1.0).half(), (a.shape[1],), w.half(), w.half()),
    ]
    return [t.numpy() for t in outs]


@pytest.mark.parametrize("tuning", ["h200", "small-gpu-staged"])
def test_rows_of_views_keep_the_bits_of_the_cpu_layout(tuning, cpu_tuning):
    """Whole rows written back as contiguous vectors (computed again or staged) from views, casts and
    extra operands: the bits of the CPU reference's layout."""
    rng = np.random.default_rng(14)
    a, b = (
        (rng.standard_normal((64, 512)) * 3).astype(np.float32),
        (rng.standard_normal((512, 64)) * 3).astype(np.float32),
    )
    cpu_tuning(KT.CPU_TUNING)
    want = _row_ops_of_views(a, b)
    cpu_tuning(TUNINGS["h200"] if tuning == "h200" else replace(SMALL_GPU, reduce_row_per_lane=32, staged_row_max=512))
    for i, (got, expected) in enumerate(zip(_row_ops_of_views(a, b), want)):
        assert same_bits(got, expected), f"case {i} under {tuning}"


def test_reductions_on_vulkan_follow_the_tree(gpu):
    rng = np.random.default_rng(5)
    for rows, n in [(1, 4095), (1, 4097), (2, 8193), (3, 70000), (40, 257), (40, 8192), (64, 1000)]:
        x = rng.standard_normal((rows, n)).astype(np.float32)
        t = vkml.tensor(x, device=gpu)
        for name in ("sum", "amax", "argmax"):
            got = getattr(t, name)(dim=1).numpy()
            assert same_bits(got, _oracle(name, x)), f"{name} of {rows}×{n} on {gpu}"


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int64, np.bool_])
def test_reductions_of_other_dtypes_on_vulkan_equal_the_cpu(dtype, gpu):
    """Vector loads of float16 (8 bytes), int64 (32 bytes) and bool (uint32 words), and their shuffles."""
    rng = np.random.default_rng(10)
    for rows, n in [(3, 4096), (40, 260), (1, 9000)]:
        x = (rng.standard_normal((rows, n)) * 50).astype(dtype)
        for name in ("sum",) if dtype is np.bool_ else ("sum", "amax", "argmin"):
            want = getattr(vkml.tensor(x), name)(dim=1).numpy()
            got = getattr(vkml.tensor(x, device=gpu), name)(dim=1).numpy()
            assert same_bits(got, want), f"{name} of {rows}×{n} {np.dtype(dtype).name}"


def test_sum_over_every_layout_of_a_3d_tensor(cpu_tuning, gpu):
    x = np.random.default_rng(2).standard_normal((6, 20, 12)).astype(np.float32)
    for tuning in (KT.CPU_TUNING, SMALL_GPU):
        cpu_tuning(tuning)
        for dims in ((2,), (1, 2), (0, 2), (0,), (0, 1, 2)):
            want = vkml.tensor(x, device=gpu).sum(dim=dims).numpy()
            assert same_bits(vkml.tensor(x).sum(dim=dims).numpy(), want), dims


def test_a_long_sum_takes_two_passes(cpu_tuning):
    cpu_tuning(SMALL_GPU)  # chunks of 64: 2^13 elements give 128 chunks, then one pass over them
    x = np.random.default_rng(3).standard_normal(1 << 13).astype(np.float32)
    kernels = lowered(vkml.tensor(x).sum())
    assert len(kernels) == 2
    assert same_bits(vkml.tensor(x).sum().numpy(), tree_reduce(x, np.add))


def test_softmax_and_layer_norm_read_a_row_once_when_it_fits(cpu_tuning):
    cpu_tuning(SMALL_GPU)  # 16 lanes × up to 8: rows of 128 fit one chunk
    x = vkml.tensor(np.random.default_rng(4).standard_normal((6, 128)).astype(np.float32))
    w, b = vkml.tensor(np.ones(128, np.float32)), vkml.tensor(np.zeros(128, np.float32))
    (rows_kernel,) = lowered(vkml.softmax(x, dim=1))  # rule 7: max, sum and the quotient in one kernel
    assert accesses(rows_kernel, "vload") == {"in3": 8} and accesses(rows_kernel, "load") == {}
    assert accesses(rows_kernel, "vstore") == {"out0": 2}  # 8 elements a lane, stored as two vectors
    (norm_kernel,) = lowered(vkml.nn.functional.layer_norm(x, (128,), w, b))
    # x for the trees, then x again (from cache), weight and bias at contiguous positions for the output:
    # its per-element work is a few products and sums (kernels_reduce._store_row_reloaded)
    assert accesses(norm_kernel, "vload") == {"in3": 16, "in4": 8, "in5": 8}
    assert accesses(norm_kernel, "vstore") == {"out0": 2}
    for fn in (lambda t: vkml.softmax(t, dim=1), lambda t: vkml.nn.functional.layer_norm(t, (128,), w, b)):
        fused = fn(x).numpy()
        cpu_tuning(KT.CPU_TUNING)
        vkml.set_eager(True)
        try:
            eager = fn(x).numpy()
        finally:
            vkml.set_eager(False)
        cpu_tuning(SMALL_GPU)
        assert same_bits(fused, eager)
