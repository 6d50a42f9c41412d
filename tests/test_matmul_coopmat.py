"""The cooperative-matrix matmul template (vkml/kernels/matmul/coopmat.py): selection, oracle, SPIR-V, device.

The CPU interpreter runs the template's whole kernel when the selection is forced for it
(its ``cm_mul_add`` adds exact products in ascending k): it must give the scalar template's
bits, so the oracle of test_matmul.py applies unchanged, and stay within γ_K Σ|a||b| of the
float64 product. A device with cooperative matrices must stay within the stated device bound
of the CPU and repeat its own bits; lavapipe has none and must keep the scalar path and the
CPU's bits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fake_devices import offering
from optest import assert_same_bits
from test_matmul import ordered_matmul

import vkml
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.ir import types as T
from vkml.ir.core import Instr, walk
from vkml.kernels import matmul as matmul_templates
from vkml.kernels.matmul import (
    coopmat as kernels_matmul_coopmat,
)
from vkml.kernels.matmul import (
    coopmat2 as kernels_matmul_coopmat2,
)
from vkml.kernels.matmul.coopmat import Shape
from vkml.kernels.matmul.tiled import MatmulConfig
from vkml.schedule import scheduler as schedule

H200 = DeviceFeatures.h200_like()
U = 2.0**-24


def gamma(n: int, u: float = U) -> float:
    return n * u / (1 - n * u)


def device_bound(k: int) -> float:
    """docs/ops/matmul.md: on matrix units |computed - exact| <= 2γ_(K+16) Σ|a||b| before the float16 rounding."""
    return 2 * gamma(k + 16)


def f16_operands(shape_a, shape_b, seed: int):
    g = np.random.default_rng(seed)
    a = (g.standard_normal(shape_a) * 2).astype(np.float16)
    b = (g.standard_normal(shape_b) * 2).astype(np.float16)
    return a, b


def magnitude(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))


def ulp_f16(x: np.ndarray) -> np.ndarray:
    x = np.abs(x.astype(np.float16))
    return (np.nextafter(x, np.float16(np.inf)) - x).astype(np.float64)


@pytest.fixture
def coopmat_on_cpu(monkeypatch):
    """The CPU interpreter runs float16 products on the cooperative-matrix template; yields the kernels run."""
    monkeypatch.setattr(kernels_matmul_coopmat, "applies", lambda features, a, b: a is T.float16 is b)
    names: list[str] = []
    listener = names.append
    debug.kernel_listeners.append(lambda kernel: listener(kernel.name))
    schedule.clear_template_cache()
    yield names
    debug.kernel_listeners.pop()
    schedule.clear_template_cache()


# ---------------------------------------------------------------- selection


def test_selection_follows_the_device_features(monkeypatch):
    f16, f32 = T.float16, T.float32
    assert kernels_matmul_coopmat.applies(H200, f16, f16)
    assert not kernels_matmul_coopmat.applies(H200, f16, f32) and not kernels_matmul_coopmat.applies(H200, f32, f32)
    assert not kernels_matmul_coopmat.applies(DeviceFeatures.lavapipe_like(), f16, f16)
    assert not kernels_matmul_coopmat.applies(None, f16, f16)  # the CPU interpreter
    for change in (
        {"cooperative_matrix_shapes": ()},
        {"cooperative_matrix": False},
        {"vulkan_memory_model": False},
        {"max_compute_shared_memory_size": 32768},
        {"spirv_version": (1, 5)},
        {"max_workgroup_invocations": 128},
    ):
        assert not kernels_matmul_coopmat.applies(DeviceFeatures(**{**H200.__dict__, **change}), f16, f16), change
    assert kernels_matmul_coopmat.shared_bytes() == 49152 <= H200.max_compute_shared_memory_size
    monkeypatch.setenv("VKML_MATMUL_COOPMAT", "0")
    assert not kernels_matmul_coopmat.applies(H200, f16, f16)


def test_a_device_with_cooperative_matrices_gets_them_enabled_and_selected():
    """What runtime/reports.py does with an H200-like physical device: the features, the extension, the shapes."""
    from vkml.runtime.vulkan import reports

    info = offering({"VK_KHR_cooperative_matrix"}, minor=4)
    info.properties = {"subgroupSize": 32, "subgroupSupportedOperations": 0x7FF}
    info.limits = {
        "maxPushConstantsSize": 256,
        "maxStorageBufferRange": (1 << 32) - 1,
        "maxComputeSharedMemorySize": 49152,
        "maxComputeWorkGroupInvocations": 1024,
        "maxComputeWorkGroupSize": (1024, 1024, 64),
        "maxComputeWorkGroupCount": (1 << 31, 65535, 65535),
    }
    info.cooperative_matrix_shapes = [
        {"m": 16, "n": 16, "k": 16, "a": "float16", "b": "float16", "c": "float32", "result": "float32", "scope": s}
        for s in ("subgroup",)
    ]
    enabled = reports.features_to_enable(info)
    wanted = {"cooperativeMatrix", "vulkanMemoryModel", "shaderFloat16", "storageBuffer16BitAccess"}
    assert wanted <= enabled
    assert "VK_KHR_cooperative_matrix" in reports.extensions_to_enable(info, enabled)
    features = reports.device_features(info)
    assert features.spirv_version == (1, 6) and features.has_matrix_shape(16, 16, 16)
    assert kernels_matmul_coopmat.applies(features, T.float16, T.float16)
    info.features["cooperativeMatrix"] = False  # listed shapes count only with the feature enabled
    assert not reports.device_features(info).cooperative_matrix_shapes


def test_the_mode_names_the_template(coopmat_on_cpu):
    a, b = f16_operands((128, 4), (4, 128), seed=1)
    node = (vkml.tensor(a) @ vkml.tensor(b)).node
    mode = matmul_templates.mode(node)
    assert mode == kernels_matmul_coopmat.Mode(32, kernels_matmul_coopmat.DEFAULT)  # the interpreter: 32 lanes
    assert str(mode) == "matmul coopmat 32 128x128x32 sg64x32 v4"
    skinny = matmul_templates.mode((vkml.tensor(a) @ vkml.tensor(b[:, :64].copy())).node)
    assert str(skinny) == "matmul coopmat 32 64x64x64 sg32x32 v4"  # a side of 64: smaller tiles
    other = Shape(256, 128, 16, 64, 64, 1)
    assert kernels_matmul_coopmat.mode(H200, other) == kernels_matmul_coopmat.Mode(32, other)
    node32 = (vkml.tensor(a.astype(np.float32)) @ vkml.tensor(b.astype(np.float32))).node
    assert isinstance(matmul_templates.mode(node32), MatmulConfig)  # the scalar tiles


# ---------------------------------------------------------------- the interpreted kernel is the oracle

SHAPES = [
    ((128, 64), (64, 128)),  # whole tiles, two K-steps
    ((37, 29), (29, 45)),  # tails in m, k and n
    ((130, 70), (70, 260)),  # two tiles of C each way, a partial K-step
    ((1, 300), (300, 3)),  # a row vector, 10 K-steps
    ((9, 1), (1, 13)),  # k = 1
    ((2, 33, 40), (2, 40, 17)),  # batched
    ((3, 1, 20, 16), (2, 16, 9)),  # broadcast batch dims
    ((300,), (300, 5)),  # 1-D
]


@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_the_interpreted_kernel_gives_the_scalar_bits_within_the_bound(shape_a, shape_b, coopmat_on_cpu):
    a, b = f16_operands(shape_a, shape_b, seed=sum(shape_a) + sum(shape_b))
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert coopmat_on_cpu and all(name.startswith("MMC") for name in coopmat_on_cpu), coopmat_on_cpu
    assert got.dtype == np.float16
    assert_same_bits(got, ordered_matmul(a, b), f"{shape_a} @ {shape_b}")
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    k = shape_a[-1]
    bound = gamma(k) * magnitude(a, b) + ulp_f16(exact) / 2  # the float32 sum, then one rounding to float16
    assert np.all(np.abs(got.astype(np.float64) - exact) <= bound * (1 + 2**-20))


def test_layouts_and_a_fused_epilogue_keep_the_bits(coopmat_on_cpu):
    x, w = f16_operands((40, 70), (45, 70), seed=3)
    bias = np.random.default_rng(4).standard_normal(45).astype(np.float16)
    tx, tw, tb = vkml.tensor(x), vkml.tensor(w), vkml.tensor(bias)
    y = vkml.relu(tx @ tw.T + tb)  # nn.Linear's layout: B has k contiguous; the epilogue is fused
    debug.reset_counters()
    got = y.numpy()
    assert debug.counters()["dispatches"] == 1
    product = ordered_matmul(x, np.ascontiguousarray(w.T))
    want = np.maximum((product.astype(np.float32) + bias.astype(np.float32)).astype(np.float16), np.float16(0))
    assert_same_bits(got, want, "relu(x @ w.T + b)")
    gradient_like = (tx.T @ vkml.tensor(x[:, :45])).numpy()  # A with m contiguous
    assert_same_bits(gradient_like, ordered_matmul(np.ascontiguousarray(x.T), x[:, :45]), "x.T @ x")


def test_operands_contiguous_along_the_other_axis_are_staged_along_it_by_vector_stores(coopmat_on_cpu):
    """B in ``x @ w.T`` (k contiguous) and A in ``x.T @ y`` (m contiguous): rows of the tile run along the
    contiguous axis, four element loads make one vector store, and matrices are read column-major."""
    x, w = f16_operands((40, 72), (45, 72), seed=8)
    tx, tw = vkml.tensor(x), vkml.tensor(w)
    assert_same_bits((tx @ tw.T).numpy(), ordered_matmul(x, np.ascontiguousarray(w.T)), "x @ w.T")
    y = f16_operands((72, 20), (1, 1), seed=9)[0]
    assert_same_bits((tx.T @ vkml.tensor(y[:40])).numpy(), ordered_matmul(np.ascontiguousarray(x.T), y[:40]), "x.T @ y")
    for shape_a, shape_b, whole_groups in (((40, 72), (45, 72), True), ((40, 70), (45, 70), False)):
        xs, ws = (vkml.tensor(np.ones(s, np.float16)) for s in (shape_a, shape_b))
        root = (xs @ ws.T).node
        plan = schedule.Plan([root])
        (main,) = plan.chains[id(root)]
        kernel = kernels_matmul_coopmat.lower_matmul_coopmat(root, main, set(plan.roots), frozenset(), 32)
        kernel = kernel.kernels[0].kernel
        loads = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "cm_shared_load"]
        assert {s.attrs for s in loads} == {("a_tile", 40, "row"), ("b_tile", 40, "col")}
        assert kernel.vector_shared() == ({"a_tile", "b_tile"} if whole_groups else set()), shape_a
        assert kernel.shared_array("b_tile").size == 2 * 128 * 40
        compile_kernel(kernel, H200)  # spirv-val


def test_nan_and_inf_propagate_as_in_the_scalar_template(coopmat_on_cpu):
    a, b = f16_operands((20, 40), (40, 18), seed=6)
    a[3, 7], a[5, 2], b[9, 4], b[1, 0] = np.nan, np.inf, -np.inf, 0.0
    a[6, :] = np.float16(60000)  # float32 accumulation: the row's sums exceed float16 only at the rounding
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    with np.errstate(over="ignore"):
        assert_same_bits(got, ordered_matmul(a, b), "specials")
    assert np.isnan(got[3]).all() and np.isinf(got[6]).any()


def test_views_of_float16_buffers_load_whole_groups(coopmat_on_cpu):
    x, w = f16_operands((40, 72), (64, 36), seed=7)
    tx, tw = vkml.tensor(x), vkml.tensor(w)
    for a_view, b_view, a, b in (
        (tx[:, 4:68], tw, x[:, 4:68], w),  # an aligned slice: groups of 4 stay groups of the buffer
        (tx[:, 4:68], tw[:, 4:36], x[:, 4:68], w[:, 4:36]),
        (tx[:, 3:67], tw.flip(1)[:, :32], x[:, 3:67], w[:, ::-1][:, :32]),  # not aligned, reversed: one by one
    ):
        got = (a_view @ b_view).numpy()
        assert_same_bits(got, ordered_matmul(np.ascontiguousarray(a), np.ascontiguousarray(b)), "views")


def test_padded_products_leave_negative_zero_sums(coopmat_on_cpu):
    a = np.full((3, 5), -1.0, np.float16)
    b = np.zeros((5, 4), np.float16)
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert np.all(got == 0) and np.all(np.signbit(got))  # k = 5 is padded to 32: the pads add -0.0


# ---------------------------------------------------------------- the kernel and its SPIR-V


def _kernel(shape_a, shape_b, epilogue=lambda y: y, shape=None):
    x, w = (vkml.tensor(np.ones(s, np.float16)) for s in (shape_a, shape_b))
    root = epilogue(x @ w).node
    plan = schedule.Plan([root])
    (main,) = plan.chains[id(root)]
    template = kernels_matmul_coopmat.lower_matmul_coopmat(root, main, set(plan.roots), frozenset(), 32, shape)
    return template.kernels[0].kernel


# ---------------------------------------------------------------- the shapes the sweep times


def test_shapes_print_parse_and_say_what_does_not_lower():
    for shape in kernels_matmul_coopmat.CANDIDATES:
        assert Shape.parse(str(shape)) == shape and shape.problem(32) is None, shape
        assert kernels_matmul_coopmat.fits(H200, shape), shape
    assert len(set(kernels_matmul_coopmat.CANDIDATES)) == len(kernels_matmul_coopmat.CANDIDATES)
    assert "multiples of 16" in Shape(128, 128, 24, 64, 32).problem(32)
    assert "tile the workgroup" in Shape(128, 128, 32, 96, 32).problem(32)
    assert "vector must be 1 or 4" in Shape(vector=2).problem(32)
    assert "whole number of rounds" in Shape(64, 128, 16, 16, 16).problem(32)  # 1024 invocations, 1024 of A
    assert not kernels_matmul_coopmat.fits(H200, Shape(256, 128, 32, 64, 64))  # 57 KiB of shared memory
    assert "epilogue must be 1 or 2" in Shape(epilogue=3).problem(32)
    assert not kernels_matmul_coopmat.fits(H200, Shape(epilogue=2))  # 56 KiB


def test_two_epilogue_blocks_take_one_barrier_per_accumulator():
    def barriers(shape: Shape) -> int:
        kernel = _kernel((256, 256), (256, 256), shape=shape)
        return sum(1 for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "barrier")

    one, two = Shape(128, 128, 16, 64, 32), Shape(128, 128, 16, 64, 32, epilogue=2)
    accumulators = (one.sub_m // 16) * (one.sub_n // 16)
    assert barriers(one) - barriers(two) == accumulators
    assert two.shared_bytes() - one.shared_bytes() == 4 * 16 * 16 * one.subgroups
    with pytest.raises(ValueError, match="vector must be 1 or 4"):
        _kernel((64, 64), (64, 64), shape=Shape(vector=2))


@pytest.mark.parametrize("shape", kernels_matmul_coopmat.CANDIDATES, ids=str)
def test_every_candidate_gives_the_scalar_bits(shape, coopmat_on_cpu, monkeypatch):
    monkeypatch.setattr(kernels_matmul_coopmat, "DEFAULT", shape)
    # Tails in m, k and n; k and n multiples of 4: groups of four staged as vectors where the shape says so.
    a, b = f16_operands((shape.bm + 9, shape.bk + 8), (shape.bk + 8, shape.bn + 4), seed=shape.bm + shape.sub_m)
    product = vkml.tensor(a) @ vkml.tensor(b)
    assert matmul_templates.mode(product.node).shape == shape
    assert_same_bits(product.numpy(), ordered_matmul(a, b), str(shape))
    assert coopmat_on_cpu and all(name.startswith("MMC") for name in coopmat_on_cpu), coopmat_on_cpu
    kernel = _kernel(a.shape, b.shape, shape=shape)
    stores = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op in ("shared_vstore", "shared_store")]
    assert {s.op for s in stores} == ({"shared_vstore"} if shape.vector == 4 else {"shared_store"}) | (
        {"shared_store"} if shape.vector == 1 else set()
    )
    mul_adds = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "cm_mul_add"]
    assert len(mul_adds) == (shape.sub_m // 16) * (shape.sub_n // 16) * (shape.bk // 16)
    assert kernel.local_size == (32 * shape.subgroups, 1, 1)
    compile_kernel(kernel, H200)  # spirv-val


@pytest.mark.parametrize(
    "shape_a, shape_b", [((256, 256), (256, 256)), ((37, 29), (29, 45)), ((2, 1, 30), (30, 7))], ids=str
)
def test_the_kernel_validates_for_an_h200_like_device(shape_a, shape_b):
    kernel = _kernel(shape_a, shape_b, lambda y: vkml.relu(y + 1.0))
    assert kernel.local_size == (256, 1, 1) and kernel.subgroup_size == 32
    mul_adds = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "cm_mul_add"]
    assert len(mul_adds) == 16  # 4 x 2 accumulators, two 16-deep sub-steps per K-step of 32
    # Operands whose innermost dim holds whole groups of 4 are staged by vector loads and vector shared stores,
    # the others element-wise.
    vector_loaded = {s.attrs[0] for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "vload"}
    assert len(vector_loaded) == (2 if shape_a == (256, 256) else 0), vector_loaded
    assert kernel.vector_shared() == ({"a_tile", "b_tile"} if shape_a == (256, 256) else set())
    compiled = compile_kernel(kernel, H200)  # spirv-val, vulkan1.3
    assert "OpCooperativeMatrixMulAddKHR" in compiled.asm and "OpMemoryModel Logical Vulkan" in compiled.asm
    lavapipe_with_room = DeviceFeatures(
        **{**DeviceFeatures.lavapipe_like().__dict__, "max_compute_shared_memory_size": 65536}
    )
    with pytest.raises(vkml.CompileError, match="needs cooperative_matrix but device lacks cooperativeMatrix"):
        compile_kernel(kernel, lavapipe_with_room)


# ---------------------------------------------------------------- on the Vulkan device present


def test_the_device_runs_the_path_its_features_choose(gpu):
    a, b = f16_operands((150, 300), (300, 140), seed=5)
    cpu = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    features = gpu.features
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    try:
        first = (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy()
        again = (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy()
    finally:
        debug.kernel_listeners.pop()
    assert_same_bits(again, first, "the same bits every run")
    if kernels_matmul_coopmat.applies(features, T.float16, T.float16):
        # the workgroup-scope template (VK_NV_cooperative_matrix2) where the device has it, as on the H200
        prefix = "MMW" if kernels_matmul_coopmat2.applies(features, T.float16, T.float16) else "MMC"
        assert all(name.startswith(prefix) for name in names), names
        # The CPU is within γ_K of the exact product, the device within the device bound; each then rounds once.
        both = (gamma(300) + device_bound(300)) * magnitude(a, b)
        slack = ulp_f16(np.maximum(np.abs(cpu), np.abs(first)).astype(np.float64))
        assert np.all(np.abs(first.astype(np.float64) - cpu.astype(np.float64)) <= both + slack)
    else:  # lavapipe: no cooperative matrices, the scalar tiles and the CPU's bits
        assert not features.cooperative_matrix or not features.has_matrix_shape(16, 16, 16)
        assert names and not any(name.startswith("MMC") for name in names), names
        assert_same_bits(first, cpu, "the scalar path on the device")


def test_the_sweep_tool_times_or_checks_a_shape(gpu):
    """bench/bench_matmul_coopmat.py: timed on a device with cooperative matrices (a small size here),
    else each shape checked where nothing can be timed (spirv-val and the interpreter)."""
    timed = kernels_matmul_coopmat.applies(gpu.features, T.float16, T.float16)
    root = Path(__file__).resolve().parent.parent
    shape = "128x128x16 sg64x32 v4"
    args = ["--shape", shape] + (["--size", "256", "--repeats", "1"] if timed else [])
    run = subprocess.run(
        [sys.executable, str(root / "bench" / "bench_matmul_coopmat.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        # Prepend, not replace: where the dependencies come from PYTHONPATH (the GPU machine) they must stay.
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (line,) = [line for line in run.stdout.splitlines() if f"{shape} " in line and "error/bound" in line]
    assert float(line.split("error/bound")[1]) <= 1, line
    if timed:
        assert "TFLOP/s" in line, line
    else:
        assert "no float16 cooperative matrices, nothing to time" in run.stdout
        assert "fits an H200" in line, line


def test_a_split_float16_product_keeps_float32_chunks(coopmat_on_cpu):
    """(4, 4096) @ (4096, 4) float16 splits k in 2 (matmul's split_k_chunks): the chunks run on the
    matrix template with float32 results (no float16 rounding per chunk), then ``sum`` adds them. On the
    interpreter (the scalar order) that is the float32 composition, rounded once to float16."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 4096)).astype(np.float16)
    b = rng.standard_normal((4096, 4)).astype(np.float16)
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert got.dtype == np.float16 and any(name.startswith("MMC_") for name in coopmat_on_cpu)
    wide = [vkml.tensor(a[:, i : i + 2048]).float() @ vkml.tensor(b[i : i + 2048]).float() for i in (0, 2048)]
    assert_same_bits(got, vkml.stack(wide).sum(0).half().numpy(), "split float16 product")
