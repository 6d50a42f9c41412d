"""Cooperative matrices in the IR: text form, verifier, interpreter semantics, SPIR-V for an H200-like device.

The interpreter is the oracle: its ``cm_mul_add`` adds the exact float16 products to the
float32 accumulator one at a time in ascending k, so a block product equals the sequential
float32 sum written below in numpy, bit for bit.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from codegen_zoo import MATRIX_A, MATRIX_ACC, MATRIX_B, matrix_kernel

from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.errors import CompileError, DTypeError, IRError
from vkml.ir import KernelBuilder, parse, verify
from vkml.ir import types as T
from vkml.ir.builder import barrier, const, emit, if_, if_else, local_id, matrix_fill, matrix_mul_add, subgroup_id
from vkml.ir.interp.reference import run

H200 = DeviceFeatures.h200_like()


def sequential_f32(a: np.ndarray, b: np.ndarray, start: float = -0.0) -> np.ndarray:
    """``start`` plus the float32 products a[i, k]·b[k, j] for k = 0, 1, ... one at a time, each sum rounded."""
    acc = np.full((a.shape[0], b.shape[1]), start, np.float32)
    for k in range(a.shape[1]):
        acc = acc + a[:, k : k + 1].astype(np.float32) * b[k : k + 1, :].astype(np.float32)
    return acc


def run_matrix_kernel(subgroup_size: int, steps: int, groups: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(1024 * groups) * 4).astype(np.float16)
    b = (rng.standard_normal(1024 * groups) * 4).astype(np.float16)
    out = np.zeros(512 * groups, np.float32)
    run(matrix_kernel(subgroup_size), (groups, 1, 1), {"a": a, "b": b, "out": out}, {"steps": steps})
    return a, b, out


# ---------------------------------------------------------------- types and text


def test_matrix_types_are_interned_and_named():
    assert T.matrix_type(T.float16, 16, 16, "a") is MATRIX_A
    assert MATRIX_ACC.short == "cm_acc_f32_16x16"
    assert T.value_type("cm_b_f16_16x8") is T.matrix_type(T.float16, 16, 8, "b")
    assert T.value_type("f32") is T.float32
    with pytest.raises(TypeError, match="unknown matrix type"):
        T.value_type("cm_a_f16_16")
    with pytest.raises(TypeError, match="no cooperative matrix"):
        T.matrix_type(T.int32, 16, 16, "a")


@pytest.mark.parametrize("subgroup_size", [32, 8])
def test_matrix_kernels_round_trip(subgroup_size):
    kernel = verify(matrix_kernel(subgroup_size))
    text = str(kernel)
    assert f"subgroup_size({subgroup_size})" in text.splitlines()[0]
    assert re.search(r"cm_shared_load a_tile\[%\d+\], 32, row +: cm_a_f16_16x16", text)
    assert re.search(r"cm_mul_add %\d+, %\d+, %\d+ +: cm_acc_f32_16x16", text)
    again = parse(text)
    assert again == kernel and str(again) == text


def test_the_subgroup_size_is_part_of_the_kernel():
    other = parse(str(matrix_kernel(32)).replace("subgroup_size(32)", "subgroup_size(16)"))
    assert other.subgroup_size == 16 and other != matrix_kernel(32) and hash(other) != hash(matrix_kernel(32))


# ---------------------------------------------------------------- verifier


def matrix_text(body: str, subgroup: str = " subgroup_size(32)", local_size: str = "64, 1, 1") -> str:
    head = f"kernel k local_size({local_size}){subgroup} {{\n  shared h: f16[1024]\n  shared f: f32[1024]\n\n"
    return head + body + "}\n"


LOAD_A = "  %0 = subgroup_id : u32\n  %1 = cm_shared_load h[%0], 16, row : cm_a_f16_16x16\n"


def rejects(text: str, *fragments: str) -> None:
    with pytest.raises(IRError) as info:
        verify(parse(text))
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_a_matrix_kernel_passes():
    verify(parse(matrix_text(LOAD_A + "  cm_shared_store h[%0], %1, 16, col\n")))


def test_matrix_instructions_need_a_subgroup_size():
    rejects(
        matrix_text(LOAD_A, subgroup=""), "subgroup_id acts per subgroup: the kernel must declare its subgroup_size"
    )


def test_the_workgroup_must_be_whole_subgroups():
    rejects(matrix_text(LOAD_A, local_size="48, 1, 1"), "is not a whole number of subgroups of 32")
    rejects(matrix_text(LOAD_A, subgroup=" subgroup_size(24)"), "subgroup_size 24 is not a power of two")


def test_matrix_operand_types_and_shapes_are_checked():
    rejects(matrix_text(LOAD_A + "  %2 = cm_mul_add %1, %1, %1 : cm_acc_f32_16x16\n"), "takes an a, a b and an acc")
    body = LOAD_A + "  %2 = cm_shared_load h[%0], 16, row : cm_b_f16_8x16\n"
    body += "  %3 = cm_shared_load f[%0], 16, row : cm_acc_f32_16x16\n  %4 = cm_mul_add %1, %2, %3 : cm_acc_f32_16x16\n"
    rejects(matrix_text(body), "shapes cm_a_f16_16x16 · cm_b_f16_8x16 + cm_acc_f32_16x16 do not fit")
    rejects(matrix_text(LOAD_A.replace("h[%0]", "f[%0]")), "a cm_a_f16_16x16 in a shared array of f32")
    rejects(matrix_text(LOAD_A + "  cm_shared_store h[%0], %1, 8, row\n"), "stride 8 is below the 16 elements")
    rejects(matrix_text(LOAD_A.replace(", row", ", diagonal")), "expected (array name, stride >= 1, 'row' or 'col')")
    rejects(matrix_text(LOAD_A.replace("h[%0]", "nowhere[%0]")), "no shared array named 'nowhere'")
    rejects(matrix_text(LOAD_A + "  %2 = add %1, %1 : cm_a_f16_16x16\n"), "add does not take cooperative matrices")
    fill = "  %0 = const 1.0 : f32\n  %1 = cm_fill %0 : cm_a_f16_16x16\n"
    rejects(matrix_text(fill), "cm_fill: a f32 cannot fill cm_a_f16_16x16")


def test_matrices_need_subgroup_uniform_control_flow_and_operands():
    per_lane = "  %0 = local_id 0 : u32\n  %1 = cm_shared_load h[%0], 16, row : cm_a_f16_16x16\n"
    rejects(matrix_text(per_lane), "operand %0 differs within a subgroup (it depends on local_id)")
    branch = "  %0 = local_id 0 : u32\n  %1 = const 4 : u32\n  %2 = lt %0, %1 : bool\n  if %2 {\n"
    branch += "    %3 = subgroup_id : u32\n    %4 = cm_shared_load h[%3], 16, row : cm_a_f16_16x16\n  }\n"
    rejects(matrix_text(branch), "matrix instruction in non-uniform control flow (inside `if %2`")
    merge = LOAD_A + "  %2 = local_id 0 : u32\n  %3 = const 4 : u32\n  %4 = lt %2, %3 : bool\n"
    merge += "  %5 = if %4 -> cm_a_f16_16x16 {\n    yield %1\n  } else {\n    yield %1\n  }\n"
    rejects(matrix_text(merge), "matrices merge under %4, which differs within a subgroup")
    # The subgroup id is uniform per subgroup, not per workgroup: no barrier may depend on it.
    barrier_under = (
        "  %0 = subgroup_id : u32\n  %1 = const 1 : u32\n  %2 = lt %0, %1 : bool\n  if %2 {\n    barrier\n  }\n"
    )
    rejects(matrix_text(barrier_under), "barrier in non-uniform control flow", "depends on subgroup_id")


def test_the_builder_checks_types_at_once():
    kb = KernelBuilder("k", (32, 1, 1), subgroup_size=32)
    h = kb.shared("h", T.float16, 256)
    with kb:
        a = h.load_matrix(0, MATRIX_A, 16)
        with pytest.raises(DTypeError, match="takes an a, a b and an acc"):
            matrix_mul_add(a, a, a)
        with pytest.raises(DTypeError, match="does not take cooperative matrices"):
            emit("add", a, a)
        with pytest.raises(DTypeError, match="a cm_acc_f32_16x16 in a shared array of f16"):
            h.load_matrix(0, MATRIX_ACC, 16)


# ---------------------------------------------------------------- interpreter


@pytest.mark.parametrize("subgroup_size", [32, 8])
@pytest.mark.parametrize("steps", [2, 1])
def test_mul_add_is_the_sequential_float32_sum_of_exact_products(subgroup_size, steps):
    a, b, out = run_matrix_kernel(subgroup_size, steps)
    for block in range(4):  # 2 workgroups x 2 subgroups
        a_s = a[512 * block : 512 * (block + 1)].reshape(16, 32)[:, : 16 * steps]
        b_s = b[512 * block : 512 * (block + 1)].reshape(32, 16)[: 16 * steps]
        got = out[256 * block : 256 * (block + 1)].reshape(16, 16)
        np.testing.assert_array_equal(got.view(np.uint32), sequential_f32(a_s, b_s).view(np.uint32))
        exact = a_s.astype(np.float64) @ b_s.astype(np.float64)
        bound = 16 * steps * 2.0**-24 * (np.abs(a_s.astype(np.float64)) @ np.abs(b_s.astype(np.float64)))
        assert np.all(np.abs(got - exact) <= bound * 1.001)


def test_an_if_else_selects_matrices_per_subgroup():
    _, _, out = run_matrix_kernel(32, 0)
    assert np.all(out.view(np.uint32) == 0)  # the else branch's +0.0 fill, not the loop's -0.0


def test_column_major_loads_and_stores_transpose():
    kb = KernelBuilder("transpose", (32, 1, 1), subgroup_size=32)
    h, f = kb.shared("h", T.float16, 256), kb.shared("f", T.float32, 512)
    src, out = kb.buffer("src", T.float16, "read"), kb.buffer("out", T.float32, "write")
    with kb:
        lane = local_id(0)
        for r in range(8):
            h[lane + 32 * r] = src[lane + 32 * r]
        identity = T.matrix_type(T.float16, 16, 16, "b")
        eye = h.load_matrix(0, identity, 16, "col")  # B = src^T
        ones = matrix_fill(1.0, T.matrix_type(T.float16, 16, 16, "a"))
        f.store_matrix(256, matrix_mul_add(ones, eye, matrix_fill(0.0, MATRIX_ACC)), 16, "col")
        for r in range(16):
            out[lane + 32 * r] = f[lane + 32 * r]
    values = np.arange(256, dtype=np.float16) / 8
    out = np.zeros(512, np.float32)
    run(kb.finish(), (1, 1, 1), {"src": values, "out": out}, {})
    # (ones · src^T)[i, j] = sum_k src[j, k]; stored column-major, so out[256 + 16 j + i] holds it.
    sums = values.reshape(16, 16).astype(np.float64).sum(axis=1)
    np.testing.assert_array_equal(out[256:].reshape(16, 16), np.repeat(sums[:, None], 16, axis=1))


def test_the_interpreter_rejects_split_subgroups_and_differing_operands():
    split = "  %0 = local_id 0 : u32\n  %1 = const 4 : u32\n  %2 = lt %0, %1 : bool\n  if %2 {\n"
    split += "    %3 = subgroup_id : u32\n    %4 = cm_shared_load h[%3], 16, row : cm_a_f16_16x16\n  }\n"
    with pytest.raises(IRError, match="runs in only part of subgroup 0"):
        run(parse(matrix_text(split)), (1, 1, 1), {}, {})
    per_lane = "  %0 = local_id 0 : u32\n  %1 = cm_shared_load h[%0], 16, row : cm_a_f16_16x16\n"
    with pytest.raises(IRError, match="the index of a matrix instruction differs within subgroup 0"):
        run(parse(matrix_text(per_lane)), (1, 1, 1), {}, {})
    past = "  %0 = const 1000 : u32\n  %1 = cm_shared_load h[%0], 16, row : cm_a_f16_16x16\n"
    with pytest.raises(IndexError, match="reaches past the shared array's 1024 elements"):
        run(parse(matrix_text(past)), (1, 1, 1), {}, {})


# ---------------------------------------------------------------- SPIR-V


def test_the_matrix_kernel_validates_for_an_h200_like_device():
    compiled = compile_kernel(matrix_kernel(32), H200)  # assembles and passes spirv-val (vulkan1.3)
    asm = compiled.asm
    for capability in ("CooperativeMatrixKHR", "VulkanMemoryModel", "Float16", "GroupNonUniform"):
        assert f"OpCapability {capability}\n" in asm
    assert 'OpExtension "SPV_KHR_cooperative_matrix"' in asm and "OpMemoryModel Logical Vulkan" in asm
    assert "OpTypeCooperativeMatrixKHR %half %uint_3 %uint_16 %uint_16 %uint_0" in asm
    assert "OpCooperativeMatrixMulAddKHR %cm_acc_float_16x16" in asm
    assert re.search(r"OpCooperativeMatrixLoadKHR %cm_b_half_16x16 %\w+ %uint_0 %uint_16 NonPrivatePointer$", asm, re.M)
    assert re.search(r"OpCooperativeMatrixStoreKHR %\w+ %\w+ %uint_0 %uint_16 NonPrivatePointer$", asm, re.M)
    # Under the Vulkan memory model only non-private accesses are ordered by barriers: every shared one is.
    shared = [line for line in asm.splitlines() if re.search(r"Op(Load|Store) (%\w+ )?%t\d+_[abc]_tile_at", line)]
    assert any("OpLoad" in line for line in shared) and any("OpStore" in line for line in shared)
    assert all(line.endswith("NonPrivatePointer") for line in shared), shared
    assert "OpPhi %cm_acc_float_16x16" in asm  # the carried accumulator and the if_else's result
    # Under the Vulkan memory model a barrier also makes workgroup memory available and visible.
    assert re.search(r"OpControlBarrier %uint_2 %uint_2 %uint_24840\b", asm)
    assert {"cooperative_matrix", "vulkan_memory_model"} <= compiled.features_used


def vector_tile_kernel(stride: int = 16, size: int = 512):
    """One subgroup: a 16×16 A block staged by vector stores (``shared_vstore``), loaded as a matrix, times B."""
    kb = KernelBuilder("vector_tile", (32, 1, 1), subgroup_size=32)
    a, b = kb.buffer("a", T.float16, "read"), kb.buffer("b", T.float16, "read")
    out = kb.buffer("out", T.float32, "write")
    a_tile, b_tile = kb.shared("a_tile", T.float16, size), kb.shared("b_tile", T.float16, 256)
    c_tile = kb.shared("c_tile", T.float32, 256)
    with kb:
        lid = local_id(0)
        for r in range(2):  # 64 groups of four: row (lid + 32r) // 4, column 4·(lid % 4) of the block
            u = lid + 32 * r
            a_tile.store4((u / 4) * (stride // 4) + u % 4, tuple(a[u * 4 + j] for j in range(4)))
        for r in range(8):
            b_tile[lid + 32 * r] = b[lid + 32 * r]
        barrier()
        a_m = a_tile.load_matrix(0, MATRIX_A, stride)
        acc = matrix_mul_add(a_m, b_tile.load_matrix(0, MATRIX_B, 16), matrix_fill(-0.0, MATRIX_ACC))
        c_tile.store_matrix(0, acc, 16)
        barrier()
        for r in range(8):
            out[lid + 32 * r] = c_tile[lid + 32 * r]
    return kb.finish()


def test_matrices_load_from_vector_stored_shared_arrays():
    kernel = verify(vector_tile_kernel(stride=24))
    text = str(kernel)
    assert re.search(r"shared_vstore a_tile\[%\d+\], %\d+, %\d+, %\d+, %\d+\n", text)
    assert parse(text) == kernel
    rng = np.random.default_rng(9)
    a, b = (rng.standard_normal(256) * 4).astype(np.float16), (rng.standard_normal(256) * 4).astype(np.float16)
    out = np.zeros(256, np.float32)
    run(kernel, (1, 1, 1), {"a": a, "b": b, "out": out}, {})
    assert np.array_equal(out.reshape(16, 16), sequential_f32(a.reshape(16, 16), b.reshape(16, 16)))
    # On a device the array is one of 4-vectors of halves: the matrix pointer is to a vector, the stride counts them.
    asm = compile_kernel(kernel, H200).asm  # spirv-val
    assert "OpTypeArray %v4half %uint_" in asm and "OpTypeArray %half %uint_256" in asm  # b_tile stays scalar
    assert re.search(r"OpStore %t\d+_a_tile_vec_at %t\d+_a_tile_vec NonPrivatePointer$", asm, re.M)
    assert re.search(r"OpCooperativeMatrixLoadKHR %cm_a_half_16x16 %\w+ %uint_0 %uint_6 NonPrivatePointer$", asm, re.M)
    assert re.search(r"OpCooperativeMatrixLoadKHR %cm_b_half_16x16 %\w+ %uint_0 %uint_16 NonPrivatePointer$", asm, re.M)


def test_vector_stored_arrays_need_whole_vectors():
    with pytest.raises(IRError, match="stride 18 into vector-stored 'a_tile' is not a multiple of 4"):
        verify(vector_tile_kernel(stride=18))
    with pytest.raises(IRError, match="takes vector stores but its size 510 is not a multiple of 4"):
        verify(vector_tile_kernel(size=510))
    kb = KernelBuilder("k", (32, 1, 1))
    h = kb.shared("h", T.float16, 256)
    with kb:
        with pytest.raises(IRError, match="shared_vstore takes 4 values, got 2"):
            h.store4(0, (1.0, 2.0))
        with pytest.raises(DTypeError, match="shared_vstore of f32 into f16 shared array 'h'"):
            h.store4(0, (1.0, 2.0, 3.0, const(1.5, T.float32)))


def test_kernels_without_matrices_keep_the_glsl_memory_model():
    kb = KernelBuilder("plain", (64, 1, 1))
    with kb:
        from vkml.ir.builder import barrier

        barrier()
    asm = compile_kernel(kb.finish(), H200).asm
    assert "OpMemoryModel Logical GLSL450" in asm and "%uint_264" in asm and "CooperativeMatrix" not in asm
    assert "NonPrivatePointer" not in asm


def test_devices_without_the_feature_or_shape_are_refused():
    with pytest.raises(CompileError, match="needs cooperative_matrix but device lacks cooperativeMatrix"):
        compile_kernel(matrix_kernel(8), DeviceFeatures.lavapipe_like())
    with pytest.raises(CompileError, match="written for subgroups of 8, the device's are 32"):
        compile_kernel(matrix_kernel(8), H200)
    no_shapes = DeviceFeatures(**{**H200.__dict__, "cooperative_matrix_shapes": ()})
    with pytest.raises(CompileError, match="lists no cooperative-matrix shape 16x16x16 float16 -> float32"):
        compile_kernel(matrix_kernel(32), no_shapes)
    old = DeviceFeatures(**{**H200.__dict__, "spirv_version": (1, 5)})
    with pytest.raises(CompileError, match="SPIR-V 1.6 only"):
        compile_kernel(matrix_kernel(32), old)


def test_h200_like_lists_its_float16_shapes():
    assert H200.has_matrix_shape(16, 16, 16) and H200.has_matrix_shape(16, 8, 8)
    assert not H200.has_matrix_shape(32, 32, 32) and not DeviceFeatures.lavapipe_like().has_matrix_shape(16, 16, 16)


def test_subgroup_id_alone_compiles_where_the_subgroup_size_matches():
    kb = KernelBuilder("ids", (64, 1, 1), subgroup_size=8)
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        out[local_id(0)] = subgroup_id()
    kernel = kb.finish()
    compile_kernel(kernel, DeviceFeatures.lavapipe_like())
    result = np.zeros(64, np.uint32)
    run(kernel, (1, 1, 1), {"out": result}, {})
    np.testing.assert_array_equal(result, np.arange(64) // 8)


def test_if_else_needs_matching_matrix_types():
    kb = KernelBuilder("k", (32, 1, 1), subgroup_size=32)
    with kb:
        with pytest.raises(DTypeError, match="both branches"):
            if_else(subgroup_id() < 1, lambda: matrix_fill(0.0, MATRIX_ACC), lambda: matrix_fill(0.0, MATRIX_B))
        with if_(subgroup_id() < 1):
            matrix_fill(1.0, MATRIX_A)  # subgroup-uniform: fine
    verify(kb.finish())
