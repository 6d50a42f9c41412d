"""SPIR-V code generation: every instruction assembles and validates, the output is deterministic,
the precision decorations and execution modes are there, capabilities follow use, and failures
raise CompileError with what is needed to see why. Execution on Vulkan: test_codegen_parity.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from codegen_zoo import (
    control_flow_kernel,
    flash_matrix_kernel,
    kernels_for_coverage,
    matrix_kernel,
    ops_used,
    pure_cases,
    pure_kernel,
    reduction_kernel,
    shuffle_kernel,
    tensor_matrix_kernel,
)

from vkml.codegen import CompiledKernel, compile_kernel, emit_spirv, tools
from vkml.codegen.features import DeviceFeatures
from vkml.codegen.spirv import clear_compile_cache, push_layout
from vkml.codegen.spirv_ops import NO_CONTRACTION, OPCODES, SPECIAL
from vkml.errors import CompileError
from vkml.ir import types as T
from vkml.ir.builder import (
    KernelBuilder,
    barrier,
    const,
    convert,
    f16_from_bits,
    f16_to_bits,
    global_id,
    if_,
    local_id,
    select,
)
from vkml.ir.instructions import SPECS

LAVAPIPE = DeviceFeatures.lavapipe_like()
MINIMAL = DeviceFeatures()  # no optional features at all
COVERAGE = kernels_for_coverage()


def _add_kernel(dtype: T.DType, name: str = "add") -> object:
    kb = KernelBuilder(name, local_size=(64, 1, 1))
    a, b = kb.buffer("a", dtype, "read"), kb.buffer("b", dtype, "read")
    out = kb.buffer("out", dtype, "write")
    with kb:
        i = global_id(0)
        out[i] = a[i] + b[i]
    return kb.finish()


def _capabilities(asm: str) -> set[str]:
    return set(re.findall(r"^OpCapability (\w+)", asm, re.M))


def _execution_modes(asm: str) -> set[str]:
    """The float-control execution modes, e.g. {'RoundingModeRTE 32'} (LocalSize left out)."""
    return set(re.findall(r"^OpExecutionMode %main (?!LocalSize)(\w+ \d+)$", asm, re.M))


# ---------------------------------------------------------------- coverage


def test_coverage_kernels_use_every_instruction() -> None:
    # The matrix kernel needs a device with cooperative matrices (test_codegen_matrix.py compiles it).
    assert ops_used([*COVERAGE, matrix_kernel(), tensor_matrix_kernel(), flash_matrix_kernel()]) == set(SPECS)


@pytest.mark.parametrize("kernel", COVERAGE, ids=lambda k: k.name)
def test_every_kernel_assembles_and_validates(kernel) -> None:
    compiled = compile_kernel(kernel, LAVAPIPE)
    assert isinstance(compiled, CompiledKernel)
    assert compiled.spirv[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic number, little-endian
    assert len(compiled.spirv) % 4 == 0
    assert compiled.entry == kernel.name
    assert compiled.buffers == kernel.buffers


@pytest.mark.parametrize(
    "features",
    [DeviceFeatures.h200_like(), DeviceFeatures(**{**LAVAPIPE.__dict__, "spirv_version": (1, 5)})],
    ids=["h200-vulkan1.3", "vulkan1.2"],
)
def test_other_devices_and_targets_validate(features) -> None:
    for kernel in (control_flow_kernel(), reduction_kernel(T.float16), _add_kernel(T.float32)):
        compile_kernel(kernel, features)


def test_spirv_1_3_lists_only_inputs_and_declares_the_float_controls_extension() -> None:
    old = DeviceFeatures(**{**LAVAPIPE.__dict__, "spirv_version": (1, 3)})
    compiled = compile_kernel(_add_kernel(T.float32), old)
    entry = next(line for line in compiled.asm.splitlines() if line.startswith("OpEntryPoint"))
    assert "%buf0_a" not in entry and "%gl_GlobalInvocationId" in entry
    assert 'OpExtension "SPV_KHR_float_controls"' in compiled.asm


def test_every_pure_instruction_and_type_has_a_lowering() -> None:
    for op, spec in SPECS.items():
        if spec.kind != "pure" or op in SPECIAL:
            continue
        for dtype in spec.operand_types:
            assert dtype.kind in OPCODES[op], f"{op} on {dtype.short} has no SPIR-V opcode"
    assert SPECIAL <= set(SPECS)


# ---------------------------------------------------------------- determinism and readability


def test_emission_is_deterministic() -> None:
    first = emit_spirv(control_flow_kernel(), LAVAPIPE)
    again = emit_spirv(control_flow_kernel(), LAVAPIPE)  # a separately built, identical kernel
    assert first == again
    clear_compile_cache()
    assert (
        compile_kernel(control_flow_kernel(), LAVAPIPE).spirv == compile_kernel(control_flow_kernel(), LAVAPIPE).spirv
    )


def test_assembly_quotes_the_ir_and_names_values() -> None:
    kb = KernelBuilder("named", local_size=(8, 1, 1))
    x, out = kb.buffer("x", T.float32, "read"), kb.buffer("out", T.float32, "write")
    with kb:
        i = global_id(0)
        doubled = x[i] + x[i]
        doubled.hint = "doubled"
        out[i] = doubled
    asm = emit_spirv(kb.finish(), LAVAPIPE)
    assert "; %3 = add %1, %2 : f32" in asm  # the IR line, in the IR text's numbering
    assert re.search(r"^ +%v3 = OpFAdd %float %v1 %v2$", asm, re.M)
    assert 'OpName %v3 "doubled"' in asm
    assert 'OpName %buf0_x "x"' in asm


def test_compile_cache_returns_the_same_module_and_respects_names() -> None:
    clear_compile_cache()
    first = compile_kernel(_add_kernel(T.float32), LAVAPIPE)
    assert compile_kernel(_add_kernel(T.float32), LAVAPIPE) is first
    assert compile_kernel(_add_kernel(T.float32), MINIMAL) is not first  # features are part of the key
    renamed = _add_kernel(T.float32, name="add2")
    assert '"add2"' in compile_kernel(renamed, LAVAPIPE).asm


# ---------------------------------------------------------------- precision


FLOAT_RESULT = re.compile(r"^ +(%\w+) = (Op\w+) ", re.M)


@pytest.mark.parametrize("kernel", [k for k in COVERAGE if "f32" in k.name or "f16" in k.name], ids=lambda k: k.name)
def test_every_float_arithmetic_result_is_no_contraction(kernel) -> None:
    asm = emit_spirv(kernel, LAVAPIPE)
    decorated = set(re.findall(r"^OpDecorate (%\w+) NoContraction$", asm, re.M))
    arithmetic = [(rid, op) for rid, op in FLOAT_RESULT.findall(asm) if op in NO_CONTRACTION]
    for rid, op in arithmetic:
        assert rid in decorated, f"{op} result {rid} lacks NoContraction"
    assert not re.search(r"OpQuantizeToF16|OpExtInst \S+ %glsl PackHalf2x16", asm)
    if not kernel.name.startswith("mul_add"):  # the one instruction that asks for a fused multiply-add
        assert "Fma" not in asm


def test_float_arithmetic_list_covers_the_float_opcodes() -> None:
    float_ops = {row["float"] for name, row in OPCODES.items() if name in ("add", "sub", "mul")}
    assert float_ops <= NO_CONTRACTION


@pytest.mark.parametrize("dtype", [T.float32, T.float16], ids=lambda t: t.short)
def test_float_neg_is_a_sign_bit_flip(dtype) -> None:
    # OpFNegate obeys NaN propagation rules (lavapipe quiets f16 signalling NaNs); the IR's neg does not.
    asm = emit_spirv(pure_kernel(next(c for c in pure_cases() if c.name == f"neg_{dtype.short}")), LAVAPIPE)
    assert "OpFNegate" not in asm
    sign = "%uint_2147483648" if dtype is T.float32 else "%uint_32768"
    assert re.search(rf"= OpBitwiseXor %uint %t\w+ {sign}$", asm, re.M)


def test_float_controls_declared_per_width_used() -> None:
    f32_asm = emit_spirv(_add_kernel(T.float32), LAVAPIPE)
    assert _execution_modes(f32_asm) == {"RoundingModeRTE 32", "SignedZeroInfNanPreserve 32"}
    assert {"RoundingModeRTE", "SignedZeroInfNanPreserve"} <= _capabilities(f32_asm)
    f16_asm = emit_spirv(_add_kernel(T.float16), LAVAPIPE)
    assert _execution_modes(f16_asm) == {"RoundingModeRTE 16", "SignedZeroInfNanPreserve 16"}
    mixed = pure_kernel(next(c for c in pure_cases() if c.name == "convert_f16_to_float32"))
    assert _execution_modes(emit_spirv(mixed, LAVAPIPE)) == {
        "RoundingModeRTE 16",
        "SignedZeroInfNanPreserve 16",
        "RoundingModeRTE 32",
        "SignedZeroInfNanPreserve 32",
    }
    assert _execution_modes(emit_spirv(_add_kernel(T.int32), LAVAPIPE)) == set()


def test_float_controls_follow_the_device() -> None:
    denorm = DeviceFeatures(**{**LAVAPIPE.__dict__, "denorm_preserve_float32": True})
    compiled = compile_kernel(_add_kernel(T.float32), denorm)
    assert "DenormPreserve 32" in _execution_modes(compiled.asm)
    assert "denorm_preserve_float32" in compiled.features_used
    plain = compile_kernel(_add_kernel(T.float32), MINIMAL)  # a device without float controls still runs
    assert _execution_modes(plain.asm) == set()
    assert not {"RoundingModeRTE", "SignedZeroInfNanPreserve", "DenormPreserve"} & _capabilities(plain.asm)
    assert plain.features_used == frozenset()


# ---------------------------------------------------------------- capabilities and features


def test_capabilities_only_when_used() -> None:
    f32 = _capabilities(emit_spirv(_add_kernel(T.float32), LAVAPIPE))
    assert not {"Float16", "Int64", "Int16", "StorageBuffer16BitAccess"} & f32
    f16 = compile_kernel(_add_kernel(T.float16), LAVAPIPE)
    assert {"Float16", "StorageBuffer16BitAccess"} <= _capabilities(f16.asm)
    assert {"float16", "storage_buffer_16bit"} <= f16.features_used
    i64 = compile_kernel(_add_kernel(T.int64), LAVAPIPE)
    assert "Int64" in _capabilities(i64.asm) and "Float16" not in _capabilities(i64.asm)
    assert "int64" in i64.features_used
    shuffle = compile_kernel(shuffle_kernel(T.float32, 1), LAVAPIPE)
    assert "GroupNonUniformShuffle" in _capabilities(shuffle.asm)


def test_f16_bits_use_a_half_pair_and_no_int16() -> None:
    kb = KernelBuilder("f16_bits", local_size=(8, 1, 1))
    x, out = kb.buffer("x", T.uint32, "read"), kb.buffer("out", T.uint32, "write")
    with kb:
        i = global_id(0)
        h = f16_from_bits(x[i])
        out[i] = f16_to_bits(h) + convert(convert(h, T.float32), T.uint32)
    compiled = compile_kernel(kb.finish(), LAVAPIPE)
    caps = _capabilities(compiled.asm)
    assert "Float16" in caps and "Int16" not in caps and "StorageBuffer16BitAccess" not in caps
    assert re.search(r"= OpBitcast %v2half %v1\n.*= OpCompositeExtract %half %t\w+ 0", compiled.asm)
    assert re.search(r"= OpCompositeConstruct %v2half %v2 %half_0x0000\n.*= OpBitcast %uint", compiled.asm)
    assert "OpFConvert %half" not in compiled.asm and "OpQuantizeToF16" not in compiled.asm


@pytest.mark.parametrize(
    ("dtype", "feature", "vulkan_name"),
    [(T.int64, "int64", "shaderInt64"), (T.float16, "float16", "shaderFloat16")],
)
def test_missing_feature_names_it(dtype, feature, vulkan_name) -> None:
    with pytest.raises(CompileError, match=f"kernel 'add' needs {feature} but device lacks {vulkan_name}") as info:
        compile_kernel(_add_kernel(dtype), MINIMAL)
    assert "kernel add" in info.value.ir


def test_missing_16bit_storage_and_subgroup_features() -> None:
    no_storage = DeviceFeatures(**{**LAVAPIPE.__dict__, "storage_buffer_16bit": False})
    with pytest.raises(CompileError, match="needs storage_buffer_16bit but device lacks storageBuffer16BitAccess"):
        compile_kernel(_add_kernel(T.float16), no_storage)
    with pytest.raises(CompileError, match="needs subgroup_shuffle"):
        compile_kernel(shuffle_kernel(T.float32, 1), MINIMAL)
    no_extended = DeviceFeatures(**{**LAVAPIPE.__dict__, "subgroup_extended_types": False})
    with pytest.raises(
        CompileError, match="needs subgroup_extended_types but device lacks shaderSubgroupExtendedTypes"
    ):
        compile_kernel(shuffle_kernel(T.int64, 1), no_extended)
    with pytest.raises(CompileError, match="shuffle_xor mask 8 is not below the device's subgroup size 8"):
        compile_kernel(shuffle_kernel(T.float32, 8), LAVAPIPE)


def test_device_limits_are_checked() -> None:
    with pytest.raises(CompileError, match=r"local size \(256, 1, 1\) exceeds maxComputeWorkGroupSize"):
        compile_kernel(reduction_kernel(T.float32, local_size=256), MINIMAL)
    kb = KernelBuilder("square", local_size=(16, 16, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        out[global_id(0)] = local_id(1)
    with pytest.raises(CompileError, match="256 invocations per workgroup exceed maxComputeWorkGroupInvocations 128"):
        compile_kernel(kb.finish(), MINIMAL)
    kb = KernelBuilder("big_shared", local_size=(64, 1, 1))
    kb.shared("tile", T.float32, 16384)
    out = kb.buffer("out", T.float32, "write")
    with kb:
        out[global_id(0)] = const(1.0, T.float32)
    with pytest.raises(CompileError, match="65536 bytes of shared memory exceed maxComputeSharedMemorySize 32768"):
        compile_kernel(kb.finish(), LAVAPIPE)
    kb = KernelBuilder("many_params", local_size=(64, 1, 1))
    params = [kb.param(f"p{j}", T.int64) for j in range(17)]
    out = kb.buffer("out", T.int64, "write")
    with kb:
        out[global_id(0)] = params[0] + params[16]
    with pytest.raises(CompileError, match="136 bytes of parameters exceed maxPushConstantsSize 128"):
        compile_kernel(kb.finish(), LAVAPIPE)


# ---------------------------------------------------------------- push constants


def test_push_constant_layout_and_packing() -> None:
    kb = KernelBuilder("params", local_size=(1, 1, 1))
    n, big, h, flag = (
        kb.param(name, t) for name, t in (("n", T.uint32), ("big", T.int64), ("h", T.float16), ("flag", T.bool_))
    )
    out = kb.buffer("out", T.int64, "write")
    with kb:
        total = big + convert(n, T.int64) + convert(convert(h, T.float32), T.int64)
        out[0] = total + select(flag, const(1, T.int64), const(0, T.int64))
    kernel = kb.finish()
    assert push_layout(kernel) == (
        [("n", T.uint32, 0), ("big", T.int64, 8), ("h", T.float16, 16), ("flag", T.bool_, 20)],
        24,
    )
    compiled = compile_kernel(kernel, LAVAPIPE)
    assert compiled.push_size == 24
    data = compiled.pack_params({"n": 7, "big": -2, "h": 1.5, "flag": True})
    assert data == (
        np.uint32(7).tobytes()
        + b"\0" * 4
        + np.int64(-2).tobytes()
        + np.uint32(0x3E00).tobytes()
        + np.uint32(1).tobytes()
    )
    assert "OpMemberDecorate %Params 1 Offset 8" in compiled.asm
    with pytest.raises(KeyError, match="flag"):
        compiled.pack_params({"n": 7, "big": -2, "h": 1.5})


# ---------------------------------------------------------------- failures


def test_validator_failure_carries_its_message() -> None:
    bad = """OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "bad"
OpExecutionMode %main LocalSize 1 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%float = OpTypeFloat 32
%one = OpConstant %float 1
%main = OpFunction %void None %fn
%entry = OpLabel
%sum = OpIAdd %float %one %one
OpReturn
OpFunctionEnd
"""
    with pytest.raises(CompileError, match="spirv-val rejected the module") as info:
        tools.assemble_and_validate(bad, "vulkan1.3", ir="the ir")
    assert "IAdd" in info.value.validator and info.value.validator in str(info.value)
    assert info.value.assembly == bad and info.value.ir == "the ir"


def test_assembler_failure_carries_its_message() -> None:
    with pytest.raises(CompileError, match="spirv-as rejected the assembly") as info:
        tools.assemble("OpCapability Shader\n%x = OpNoSuchThing\n", "vulkan1.3")
    assert "OpNoSuchThing" in info.value.validator


def test_ir_verification_failure_is_a_compile_error() -> None:
    kb = KernelBuilder("divergent_barrier", local_size=(64, 1, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        i = local_id(0)
        with if_(i < 3):
            barrier()
        out[i] = i
    with pytest.raises(CompileError, match="failed IR verification.*barrier") as info:
        compile_kernel(kb.finish(), LAVAPIPE)
    assert "kernel divergent_barrier" in info.value.ir


def test_real_binaries_are_used() -> None:
    for name in ("spirv-as", "spirv-val"):
        path = tools.tool_path(name)
        assert path.parent.name == "bin" and path.parent.parent.name == "cmeel.prefix"
        assert not path.read_bytes()[:2] == b"#!"  # a compiled binary, not a Python launcher script


def test_float32_to_float64_is_exact_where_float32_subnormals_may_flush() -> None:
    """NVIDIA's OpFConvert flushes a float32 subnormal to zero (the H200 turned 1e-45 into 0.0);
    without DenormPreserve 32 the convert goes through the integer significand instead."""
    kb = KernelBuilder("widen", local_size=(64, 1, 1))
    a, out = kb.buffer("a", T.float32, "read"), kb.buffer("out", T.float64, "write")
    with kb:
        i = global_id(0)
        out[i] = convert(a[i], T.float64)
    kernel = kb.finish()
    flushing = DeviceFeatures(**{**DeviceFeatures.h200_like().__dict__, "denorm_preserve_float32": False})
    preserving = DeviceFeatures(**{**flushing.__dict__, "denorm_preserve_float32": True})
    exact = compile_kernel(kernel, flushing).asm  # validated by spirv-val on the way
    assert "OpConvertUToF" in exact and "OpULessThan" in exact and "OpFConvert" in exact
    plain = compile_kernel(kernel, preserving).asm
    assert "OpConvertUToF" not in plain
