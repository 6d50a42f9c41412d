"""The VK_NV_cooperative_matrix2 matmul template (vkml/kernels/matmul/coopmat2.py) and its IR instructions.

Everywhere: selection from the device features (an H200-like set with the cm2 fields), the
emitted module passes spirv-val with exactly the cm2 capabilities, and the CPU interpreter runs
the template's kernel to the scalar template's float32 sums, narrowed to nearest even. On a
device with cm2 (the H200) the GPU suite's ``gpu`` tests check its results against numpy's
float64 product within docs/ops/matmul.md's bound, tails and subnormal float16 outputs included;
on lavapipe they check that the scalar path runs and gives the CPU's bits.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_zoo import tensor_matrix_kernel
from optest import assert_same_bits
from test_matmul_coopmat import device_bound, f16_operands, magnitude, ulp_f16

import vkml
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.errors import IRError
from vkml.ir import parse
from vkml.ir import types as T
from vkml.ir.core import Instr, Loop, walk
from vkml.ir.interp import reference as interp
from vkml.ir.verify import verify_kernel
from vkml.kernels import matmul as matmul_templates
from vkml.kernels.matmul import (
    coopmat as kernels_matmul_coopmat,
)
from vkml.kernels.matmul import (
    coopmat2 as kernels_matmul_coopmat2,
)
from vkml.schedule import scheduler as schedule

H200 = DeviceFeatures.h200_like()
LAVAPIPE = DeviceFeatures.lavapipe_like()


def _with(**change) -> DeviceFeatures:
    return DeviceFeatures(**{**H200.__dict__, **change})


def _kernels(names: list[str], fn):
    debug.kernel_listeners.append(lambda kernel: names.append(kernel))
    try:
        return fn()
    finally:
        debug.kernel_listeners.pop()


@pytest.fixture
def coopmat2_on_cpu(monkeypatch):
    """The CPU interpreter takes the coopmat2 template for float16 products (as an H200 would)."""
    monkeypatch.setattr(kernels_matmul_coopmat, "applies", lambda features, a, b: a is T.float16 is b)
    monkeypatch.setattr(kernels_matmul_coopmat2, "applies", lambda features, a, b, shape=None: a is T.float16 is b)
    fits = kernels_matmul_coopmat2.fits
    monkeypatch.setattr(kernels_matmul_coopmat2, "fits", lambda mm, features: fits(mm, H200))
    schedule.clear_template_cache()
    yield
    schedule.clear_template_cache()


def sequential_f16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The contract's order: from -0.0, float32 sums of exact products in ascending k, one RTE rounding."""
    acc = np.full((a.shape[0], b.shape[1]), -0.0, np.float32)
    for k in range(a.shape[1]):
        acc = acc + a[:, k, None].astype(np.float32) * b[None, k, :].astype(np.float32)
    return acc.astype(np.float16)


# ---------------------------------------------------------------- selection


def test_selection_follows_the_device_features(monkeypatch):
    f16, f32 = T.float16, T.float32
    assert kernels_matmul_coopmat2.applies(H200, f16, f16)
    assert not kernels_matmul_coopmat2.applies(H200, f16, f32)
    assert not kernels_matmul_coopmat2.applies(LAVAPIPE, f16, f16) and not kernels_matmul_coopmat2.applies(
        None, f16, f16
    )
    for change in (
        {"cooperative_matrix_workgroup": False},
        {"cooperative_matrix_flexible": ()},
        {"cooperative_matrix_max_dimension": 64},
        {"rte_float16": False},  # the hardware narrowing would not be round-to-nearest-even
        {"spirv_version": (1, 5)},
    ):
        assert not kernels_matmul_coopmat2.applies(_with(**change), f16, f16), change
    only_256 = tuple(e[:-1] + (256,) for e in H200.cooperative_matrix_flexible)
    assert not kernels_matmul_coopmat2.applies(_with(cooperative_matrix_flexible=only_256), f16, f16)
    monkeypatch.setenv("VKML_MATMUL_COOPMAT2", "0")
    assert not kernels_matmul_coopmat2.applies(H200, f16, f16) and kernels_matmul_coopmat.applies(H200, f16, f16)
    monkeypatch.setenv("VKML_MATMUL_COOPMAT2", "1")
    monkeypatch.setenv("VKML_MATMUL_COOPMAT", "0")
    assert not kernels_matmul_coopmat2.applies(H200, f16, f16)


def test_only_plain_products_of_stored_matrices_fit():
    a, b = f16_operands((64, 32), (32, 48), seed=1)
    x, w = vkml.tensor(a), vkml.tensor(b)
    assert kernels_matmul_coopmat2.fits((x @ w).node, H200)
    assert kernels_matmul_coopmat2.fits(((x + 1.0) @ w).node, H200)  # computed first, then loaded
    assert not kernels_matmul_coopmat2.fits((x @ vkml.tensor(b.T.copy()).T).node, H200)  # a view
    batched = vkml.tensor(np.stack([a, a])) @ vkml.tensor(np.stack([b, b]))
    assert not kernels_matmul_coopmat2.fits(batched.node, H200)
    assert not kernels_matmul_coopmat2.fits((x @ w).node, _with(max_storage_buffer_range=1024))


def test_the_mode_prefers_coopmat2(coopmat2_on_cpu):
    a, b = f16_operands((256, 4), (4, 384), seed=2)
    mode = matmul_templates.mode((vkml.tensor(a) @ vkml.tensor(b)).node)
    assert mode == kernels_matmul_coopmat2.Mode(32, kernels_matmul_coopmat2.DEFAULT)
    assert str(mode) == "matmul coopmat2 32 128x128x64 t128 g16"
    # A side a 128 tile would pass the edge of (N = 64 here: conv2d's im2col product) takes a 64 tile.
    skinny = matmul_templates.mode((vkml.tensor(a) @ vkml.tensor(b[:, :64].copy())).node)
    assert str(skinny) == "matmul coopmat2 32 128x64x64 t128 g16"
    small = matmul_templates.mode((vkml.tensor(a[:8]) @ vkml.tensor(b[:, :8].copy())).node)
    assert str(small) == "matmul coopmat2 32 64x64x64 t64 g16"
    other = kernels_matmul_coopmat2.Shape(128, 256, 64, 256, 8)
    assert kernels_matmul_coopmat2.mode(H200, other) == kernels_matmul_coopmat2.Mode(32, other)
    unrolled = kernels_matmul_coopmat2.Shape(unroll=2)
    assert str(unrolled) == "128x128x64 t128 u2 g16"
    assert kernels_matmul_coopmat2.Shape.parse(str(unrolled)) == unrolled  # VKML_MATMUL_COOPMAT2_SHAPE's form
    for bad in ("128x128 t128", "128x128x64 t128 q2", "128x128x64 u0"):
        with pytest.raises(ValueError):
            kernels_matmul_coopmat2.Shape.parse(bad)


def test_the_shape_variable_picks_the_shape(coopmat2_on_cpu, monkeypatch):
    a, b = f16_operands((8, 4), (4, 8), seed=2)
    monkeypatch.setenv("VKML_MATMUL_COOPMAT2_SHAPE", " 128x128x64  t128 u2 g8 ")
    assert (
        str(matmul_templates.mode((vkml.tensor(a) @ vkml.tensor(b)).node)) == "matmul coopmat2 32 128x128x64 t128 u2 g8"
    )


# ---------------------------------------------------------------- the interpreted kernel


@pytest.mark.parametrize("m, k, n", [(128, 128, 128), (45, 70, 40), (130, 200, 129), (1, 3, 1)])
def test_the_interpreted_kernel_gives_the_sequential_sums_rounded_to_nearest_even(m, k, n, coopmat2_on_cpu):
    a, b = f16_operands((m, k), (k, n), seed=m + k + n)
    kernels: list = []
    got = _kernels(kernels, lambda: (vkml.tensor(a) @ vkml.tensor(b)).numpy())
    assert [kernel.name for kernel in kernels] == [f"MMW_{m}x{n}"]
    assert_same_bits(got, sequential_f16(a, b), "the CPU's coopmat2 kernel")
    edges = {s.attrs[3] for s in walk(kernels[0].body) if isinstance(s, Instr) and s.op.startswith("cm_tensor")}
    assert edges == ({"inside"} if (m, k, n) == (128, 128, 128) else {"clamp"})


def test_a_reshaped_computed_operand_is_loaded_as_stored(coopmat2_on_cpu):
    """conv2d's im2col matrix is a reshape of the windows' cat: the kernel reads the cat's buffer."""
    a, b = f16_operands((6, 8, 24), (24, 40), seed=5)
    x = vkml.tensor(a)
    lhs = (x + 1.0).reshape(48, 24)
    assert kernels_matmul_coopmat2.fits((lhs @ vkml.tensor(b)).node, H200)
    assert not kernels_matmul_coopmat2.fits((x[:, ::2].reshape(24, 24) @ vkml.tensor(b)).node, H200)  # strided
    bits = ((x.view(vkml.int16) * 1).view(vkml.float16)).reshape(48, 24)  # conv2d's float16 columns: a bit view
    assert kernels_matmul_coopmat2.fits((bits @ vkml.tensor(b)).node, H200)
    assert not kernels_matmul_coopmat2.fits((x.float().half().reshape(48, 24) @ vkml.tensor(b)).node, H200)
    kernels: list = []
    got = _kernels(kernels, lambda: (lhs @ vkml.tensor(b)).numpy())
    assert len(kernels) == 2 and kernels[1].name.startswith("MMW_"), [k.name for k in kernels]  # the add, then
    assert_same_bits(got, sequential_f16((a.astype(np.float32) + 1).astype(np.float16).reshape(48, 24), b), "reshape")


def test_a_consumer_runs_after_the_product(coopmat2_on_cpu):
    """The template computes the plain product only: a bias and an activation get a kernel of their own,
    rather than moving the product to the subgroup-scope template with a fused epilogue."""
    a, b = f16_operands((40, 24), (24, 40), seed=6)
    bias = np.linspace(-1, 1, 40).astype(np.float16)
    kernels: list = []
    got = _kernels(kernels, lambda: vkml.relu(vkml.tensor(a) @ vkml.tensor(b) + vkml.tensor(bias)).numpy())
    assert [kernel.name for kernel in kernels] == ["MMW_40x40", "E_relu_add_40x40"]
    want = np.maximum((sequential_f16(a, b).astype(np.float32) + bias.astype(np.float32)).astype(np.float16), 0)
    assert_same_bits(got, want, "product, then bias and relu")


@pytest.mark.parametrize("m, k, n", [(130, 448, 129), (45, 70, 40), (128, 256, 128)])
def test_unrolled_k_steps_give_the_same_sums(m, k, n, coopmat2_on_cpu, monkeypatch):
    """u2 and u3: whole loop iterations, then the K-steps left one at a time (448 = 2·192 + 64, 70 < 128)."""
    a, b = f16_operands((m, k), (k, n), seed=m + k)
    want = sequential_f16(a, b)
    for unroll in (2, 3):
        monkeypatch.setenv("VKML_MATMUL_COOPMAT2_SHAPE", f"128x128x64 t128 u{unroll} g16")
        kernels: list = []
        got = _kernels(kernels, lambda: (vkml.tensor(a) @ vkml.tensor(b)).numpy())
        assert [kernel.name for kernel in kernels] == [f"MMW_{m}x{n}"]
        assert_same_bits(got, want, f"the CPU's coopmat2 kernel, u{unroll}")
        loads = [s for s in walk(kernels[0].body) if isinstance(s, Instr) and s.op == "cm_tensor_load"]
        loops = [s for s in walk(kernels[0].body) if isinstance(s, Loop)]
        whole = k // (64 * unroll) > 0
        assert len(loads) == 2 * (unroll * whole + (k % (64 * unroll) > 0 or not whole)), unroll
        constants = {
            id(s.result): s.attrs[0] for s in walk(kernels[0].body) if isinstance(s, Instr) and s.op == "const"
        }
        steps = [constants[id(loop.step)] for loop in loops]
        assert steps == [64 * unroll] * whole + [64] * (len(loops) - whole)


def test_grouped_tiles_visit_every_tile_once():
    from vkml.ir.builder import KernelBuilder, workgroup_id

    for tiles, group in (((5, 3), 2), ((64, 64), 16), ((17, 1), 16), ((1, 7), 16)):
        kb = KernelBuilder("tiles", local_size=(1, 1, 1))
        out = kb.buffer("out", T.uint32, "write")
        with kb:
            w = workgroup_id(0)
            row, col = kernels_matmul_coopmat2.grouped_tile(w, tiles, group)
            out[w] = row * tiles[1] + col
        seen = np.zeros(tiles[0] * tiles[1], np.uint32)
        interp.run(kb.finish(), (seen.size, 1, 1), {"out": seen}, {})
        assert sorted(seen.tolist()) == list(range(seen.size)), (tiles, group)


# ---------------------------------------------------------------- the IR instructions


def _tensor_kernel(edge: str = "clamp"):
    kernel = tensor_matrix_kernel()
    return kernel if edge == "clamp" else parse(str(kernel).replace("clamp", edge))


def test_tensor_instructions_print_parse_clamp_and_narrow():
    kernel = _tensor_kernel()
    assert parse(str(kernel)) == kernel
    assert "= cm_tensor_load a[%2], %3, 40, 16, clamp" in str(kernel) and "cm_acc_f32_32x32_wg" in str(kernel)
    a, b = f16_operands((40, 16), (16, 20), seed=4)
    c = np.full(40 * 20, np.float16(7), np.float16)
    interp.run(kernel, (2, 1, 1), {"a": a.ravel().copy(), "b": b.ravel().copy(), "c": c}, {})
    # rows 40..63 of the second block and columns 20..31 read +0.0 and are not stored
    assert_same_bits(c.reshape(40, 20), sequential_f16(a, b), "a clamped block")
    with pytest.raises(IndexError, match="edge 'inside'"):
        interp.run(_tensor_kernel("inside"), (2, 1, 1), {"a": a.ravel(), "b": b.ravel(), "c": c.copy()}, {})


def test_tiny_results_narrow_to_float16_subnormals(coopmat2_on_cpu):
    a = np.full((16, 8), 2.0**-12, np.float16)
    b = np.full((8, 16), 2.0**-9, np.float16)  # each output 8·2^-21 = 2^-18: a float16 subnormal
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert np.all(got == np.float16(2.0**-18)) and np.float16(2.0**-18) < np.finfo(np.float16).tiny


def test_the_verifier_wants_workgroup_uniform_operands_and_known_buffers():
    from vkml.ir.builder import KernelBuilder, local_id, subgroup_id

    for index in (local_id, subgroup_id):  # subgroup_id is uniform per subgroup, not per workgroup
        kb = KernelBuilder("bad", local_size=(64, 1, 1), subgroup_size=32)
        a = kb.buffer("a", T.float16, "read")
        with kb:
            a.load_matrix(
                (index(0) if index is local_id else index(), 0),
                T.matrix_type(T.float16, 16, 16, "a", "workgroup"),
                (16, 16),
            )
        scope = "subgroup" if index is local_id else "workgroup"  # local_id differs within a subgroup already
        with pytest.raises(IRError, match=f"differs within a {scope}"):
            verify_kernel(kb.finish())
    text = str(_tensor_kernel()).replace("buffer a: f16 read", "buffer a: f16 write")
    with pytest.raises(IRError, match="write-only buffer 'a'"):
        verify_kernel(parse(text))
    with pytest.raises(IRError, match="different scopes"):
        verify_kernel(parse(str(_tensor_kernel()).replace("cm_acc_f32_32x32_wg", "cm_acc_f32_32x32")))


# ---------------------------------------------------------------- SPIR-V for an H200-like device


@pytest.mark.parametrize("m, k, n", [(8192, 8192, 8192), (8200, 8192, 8100), (37, 29, 45)])
def test_the_kernel_validates_for_an_h200_like_device(m, k, n):
    from vkml.graph.node import Node  # noqa: F401  (the node below is built lazily, never run)

    a = vkml.zeros(m, k, dtype=vkml.float16)
    b = vkml.zeros(k, n, dtype=vkml.float16)
    mm = (a @ b).node
    template = kernels_matmul_coopmat2.lower_matmul_coopmat2(mm, mm, set(), set(), 32, kernels_matmul_coopmat2.DEFAULT)
    (kt,) = template.kernels
    assert kt.grid[0] * max(kt.grid[1], 1) >= -(-m // 128) * -(-n // 128)
    compiled = compile_kernel(kt.kernel, H200)  # spirv-val, vulkan1.3
    asm = compiled.asm
    for needed in (
        "OpCapability CooperativeMatrixTensorAddressingNV",
        'OpExtension "SPV_NV_cooperative_matrix2"',
        "OpExecutionMode %main RoundingModeRTE 16",
        "OpCooperativeMatrixLoadTensorNV",
        "OpFConvert %cm_acc_half_128x128_wg",
        "OpCooperativeMatrixStoreTensorNV",
    ):
        assert needed in asm, needed
    clamp = "OpTypeTensorLayoutNV %uint_2 %uint_1" in asm
    assert clamp == ((m, k, n) != (8192, 8192, 8192))
    with pytest.raises(vkml.CompileError, match="cooperative_matrix_workgroup"):
        compile_kernel(kt.kernel, _with(cooperative_matrix_workgroup=False))
    with pytest.raises(vkml.CompileError, match="no workgroup-scope shape"):
        compile_kernel(kt.kernel, _with(cooperative_matrix_flexible=()))


def _loops(asm: str) -> list[list[str]]:
    """Each loop's instructions, header to merge block, in the emitted assembly (comments left out)."""
    found, current, merge = [], None, None  # labels: %loop1_header .. %loop1_merge, the prototype's %header .. %merge
    for line in asm.splitlines():
        words = line.split()
        if current is None and words[-1:] == ["OpLabel"] and words[0].endswith("header"):
            current, merge = [], words[0].removesuffix("header") + "merge"
        elif current is not None and words[:1] == [merge]:
            found.append(current)
            current = None
        elif current is not None and words and not words[0].startswith(";"):
            current.append(line.strip())
    return found


def _opcodes(lines: list[str]) -> list[str]:
    return sorted(next(word for word in line.split() if word.startswith("Op")) for line in lines)


@pytest.mark.parametrize("text", ["128x128x64 t128 g16", "128x128x64 t128 u2 g16"])
@pytest.mark.parametrize("m, k, n", [(8192, 8192, 8192), (8200, 8192, 8100), (200, 200, 200)])
def test_the_k_loop_creates_no_tensor_layout(text, m, k, n):
    """Tensor layouts and the buffers' first elements are made once, at the kernel's start, as the prototype
    (extra/proto_coopmat2.py) makes them: in the K loop a K-step costs the prototype's instructions, no more."""
    import proto_coopmat2

    shape = kernels_matmul_coopmat2.Shape.parse(text)
    mm = (vkml.zeros(m, k, dtype=vkml.float16) @ vkml.zeros(k, n, dtype=vkml.float16)).node
    template = kernels_matmul_coopmat2.lower_matmul_coopmat2(mm, mm, set(), set(), 32, shape)
    asm = compile_kernel(template.kernels[0].kernel, H200).asm  # spirv-val too
    loops = _loops(asm)
    assert len(loops) == (2 if shape.unroll > 1 and k % (64 * shape.unroll) else 1)  # u2: then the K-steps left
    body = [line for loop in loops for line in loop]
    made = ("OpCreateTensorLayout", "OpTensorLayoutSet", "OpCreateTensorView", "OpTensorViewSet", "OpAccessChain")
    assert not [line for line in body if any(op in line for op in made)]
    assert sum("OpCooperativeMatrixLoadTensorNV" in line for line in loops[0]) == 2 * shape.unroll
    kernel_start = asm.split("%entry = OpLabel")[1].split("OpBranch")[0]
    assert kernel_start.count("OpCreateTensorLayoutNV") == 1  # one layout type: all inside, or all clamped
    assert kernel_start.count("OpTensorLayoutSetDimensionNV") == len({(m, k), (k, n), (m, n)})
    if (m, k, n) == (8192, 8192, 8192):
        config = proto_coopmat2.Config.parse(f"{text} f16")
        (prototype,) = _loops(proto_coopmat2.module_text(config, m, n, k))
        mine = _opcodes(loops[0])
        for opcode in set(mine):
            assert mine.count(opcode) <= _opcodes(prototype).count(opcode), (opcode, loops[0], prototype)


def test_subgroup_scope_kernels_declare_no_cm2():
    from codegen_zoo import matrix_kernel

    asm = compile_kernel(matrix_kernel(), H200).asm
    assert "cooperative_matrix2" not in asm and "TensorAddressing" not in asm


# ---------------------------------------------------------------- on the Vulkan device present


@pytest.mark.parametrize("m, k, n", [(256, 512, 384), (200, 333, 150), (1000, 1024, 1100)])
def test_the_device_runs_the_path_its_features_choose(gpu, m, k, n):
    """The H200: coopmat2's kernel within the device bound of float64; lavapipe: the scalar path's CPU bits."""
    a, b = f16_operands((m, k), (k, n), seed=m + n)
    kernels: list = []
    got = _kernels(kernels, lambda: (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy())
    again = (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy()
    assert_same_bits(again, got, "the same bits every run")
    if kernels_matmul_coopmat2.applies(gpu.features, T.float16, T.float16):
        assert [kernel.name for kernel in kernels] == [f"MMW_{m}x{n}"]
        exact = a.astype(np.float64) @ b.astype(np.float64)
        slack = ulp_f16(np.maximum(np.abs(exact), np.abs(got.astype(np.float64)))) / 2
        assert np.all(np.abs(got.astype(np.float64) - exact) <= device_bound(k) * magnitude(a, b) + slack)
    else:
        assert not gpu.features.cooperative_matrix_workgroup or not gpu.features.cooperative_matrix
        assert not any(kernel.name.startswith("MMW") for kernel in kernels)
        assert_same_bits(got, (vkml.tensor(a) @ vkml.tensor(b)).numpy(), "the scalar path on the device")


def test_the_device_narrows_tiny_sums_to_float16_subnormals(gpu):
    a = np.full((130, 72), 2.0**-12, np.float16)  # tails in m and k
    b = np.full((72, 140), 2.0**-9, np.float16)  # each output 72·2^-21: a float16 subnormal, exactly
    got = (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy()
    assert_same_bits(got, np.full((130, 140), np.float16(72 * 2.0**-21)), "subnormal float16 outputs")


def test_a_large_ragged_product_stays_within_the_bound(gpu):
    """8200 × 8192 @ 8192 × 8100 on the H200 (tails in m and n); a small ragged one elsewhere."""
    big = kernels_matmul_coopmat2.applies(gpu.features, T.float16, T.float16)
    m, k, n = (8200, 8192, 8100) if big else (70, 50, 30)
    a, b = f16_operands((m, k), (k, n), seed=9)
    got = (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy()
    rows = np.random.default_rng(0).choice(m, size=min(m, 64), replace=False)  # float64 checks of sampled rows
    exact = a[rows].astype(np.float64) @ b.astype(np.float64)
    slack = ulp_f16(np.maximum(np.abs(exact), np.abs(got[rows].astype(np.float64)))) / 2
    assert np.all(np.abs(got[rows].astype(np.float64) - exact) <= device_bound(k) * magnitude(a[rows], b) + slack)
