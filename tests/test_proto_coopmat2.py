"""extra/proto_coopmat2.py: its VK_NV_cooperative_matrix2 GEMM modules pass spirv-val everywhere, and the
runtime enables the extension's features where a device offers them.

Nothing here needs the extension on the machine: assembling and validating is host work, and on
lavapipe the tool must say that it cannot run and exit 0. The timing runs on the H200 only.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import proto_coopmat2 as proto  # extra/ is on pytest's pythonpath (pyproject.toml)
import pytest
from fake_devices import offering

import vkml
from vkml.codegen.tools import assemble_and_validate
from vkml.errors import CompileError

ROOT = Path(__file__).resolve().parents[1]

RAGGED = (300, 200, 100)  # no size a whole number of tiles: the clamped kernel


@pytest.mark.parametrize("config", [*proto.DEFAULT_CONFIGS, proto.Config.parse("64x64x16 t128 u3 g1 f16 bt")], ids=str)
def test_every_module_passes_spirv_val(config):
    for m, n, k in ((8192, 8192, 8192), RAGGED):
        assert proto.spirv(config, m, n, k)[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic number, little-endian


def test_the_module_says_what_the_config_says():
    text = proto.module_text(proto.Config.parse("128x256x64 u2"), 8192, 8192, 8192)
    assert "OpTypeCooperativeMatrixKHR %float %u2 %u128 %u256 %u2" in text  # workgroup scope (2), accumulator
    assert text.count("OpCooperativeMatrixLoadTensorNV") == 4 and text.count("OpCooperativeMatrixMulAddKHR") == 2
    assert "OpCooperativeMatrixStoreTensorNV" in text and "OpTypePointer Workgroup" not in text  # no shared memory
    assert "OpTypeTensorLayoutNV %u2 %u0" in text  # whole tiles: no clamping
    ragged = proto.module_text(proto.Config.parse("128x128x32 f16 bt"), *RAGGED)
    assert "OpTypeTensorLayoutNV %u2 %u1" in ragged  # Constant: loads past the edge read 0, stores are dropped
    assert "OpFConvert %mat_out %acc" in ragged and "RoundingModeRTE 16" in ragged
    assert "TensorView %view" in ragged


def test_spirv_val_really_checks_the_cm2_instructions():
    """The venv's SPIRV-Tools know SPV_NV_cooperative_matrix2: a wrong module is refused, not waved through."""
    text = proto.module_text(proto.Config(), 256, 256, 256)
    for bad in (
        text.replace("OpTypeTensorLayoutNV %u2", "OpTypeTensorLayoutNV %u1"),  # 1-D layout, 2-D slices
        text.replace("OpCapability TensorAddressingNV\n", ""),
        text.replace("%half %u2 %u32 %u128 %u1", "%half %u2 %u32 %u128 %u0"),  # B declared as an A matrix
    ):
        assert bad != text
        with pytest.raises(CompileError, match="spirv-val rejected"):
            assemble_and_validate(bad, "vulkan1.3")


@pytest.mark.parametrize("tiles", [(64, 32), (7, 5), (3, 1), (1, 9)])
@pytest.mark.parametrize("group", [1, 2, 8])
def test_grouped_order_visits_every_tile_once(tiles, group):
    seen = [proto.tile_of(w, tiles, group) for w in range(tiles[0] * tiles[1])]
    assert sorted(seen) == [(r, c) for r in range(tiles[0]) for c in range(tiles[1])]


def test_configs_print_and_parse_back():
    for config in (*proto.DEFAULT_CONFIGS, proto.Config.parse("64x64x16 t128 u3 g1 f16 bt")):
        assert proto.Config.parse(str(config)) == config


def test_flexible_dimensions_decide_which_configs_run():
    entry = {"a": "float16", "b": "float16", "c": "float32", "result": "float32", "scope": "workgroup"}
    flexible = [{**entry, "m": 16, "n": 16, "k": 16, "workgroup_invocations": 256}]
    assert proto.flexible_problem(proto.Config(), flexible, 256) is None
    assert "granularity" in proto.flexible_problem(proto.Config(threads=128), flexible, 256)
    assert "MaxDimension" in proto.flexible_problem(proto.Config(bm=512), flexible, 256)
    assert "no workgroup-scope" in proto.flexible_problem(proto.Config(), [{**flexible[0], "scope": "subgroup"}], 0)


def test_the_tool_times_the_extension_or_says_it_is_missing_and_exits_cleanly():
    device = vkml.best_device()
    offered = device.kind == "vulkan" and proto.device_problem(device) is None
    done = subprocess.run(
        [sys.executable, str(ROOT / "extra" / "proto_coopmat2.py"), "--size", "256", "--shape", "128x128x64 t128"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    if offered:  # the H200: one timed row for the config, within the bound
        rows = [line for line in done.stdout.splitlines() if line.startswith("128x128x64 t128")]
        assert rows and "failed" not in rows[0] and "skipped" not in rows[0], done.stdout
    else:  # lavapipe
        assert "nothing to run" in done.stdout and "pass spirv-val" in done.stdout


def test_a_device_with_cooperative_matrix2_gets_its_features_enabled():
    """What runtime/reports.py and vk_physical.py do for a device listing VK_NV_cooperative_matrix2."""
    from vkml.runtime.vulkan import newer_api as vk_newer
    from vkml.runtime.vulkan import physical_device as vk_physical
    from vkml.runtime.vulkan import reports

    info = offering({"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2"})
    enabled = reports.features_to_enable(info)
    assert set(proto.FEATURES) <= enabled
    assert {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2"} <= set(
        reports.extensions_to_enable(info, enabled)
    )
    head, keep = vk_physical.feature_chain(info, enabled)
    found = []
    node = vk_newer.ffi.cast("VkPhysicalDeviceCooperativeMatrix2FeaturesNV *", head.pNext)
    while node != vk_newer.ffi.NULL:  # walk the chain by sType (every struct starts sType, pNext)
        if node.sType == vk_newer.STYPES["VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV"]:
            found.append(node)
        node = vk_newer.ffi.cast("VkPhysicalDeviceCooperativeMatrix2FeaturesNV *", node.pNext)
    (cm2,) = found
    assert cm2.cooperativeMatrixWorkgroupScope == cm2.cooperativeMatrixFlexibleDimensions == 1
    assert cm2.cooperativeMatrixTensorAddressing == 1 and cm2.cooperativeMatrixReductions == 1
    assert cm2.cooperativeMatrixConversions == cm2.cooperativeMatrixPerElementOperations == 1
    assert cm2.cooperativeMatrixBlockLoads == 0  # nothing uses decode functions
    del keep
    without = frozenset({"VK_KHR_cooperative_matrix"})  # lavapipe-like: no struct, nothing enabled
    assert not any(
        vk_physical._applies(s, info.api, without) for s in vk_physical.FEATURE_STRUCTS if "Matrix2" in s.ctype
    )


def test_a_device_refusing_the_newer_features_is_created_without_them(monkeypatch):
    """vkCreateDevice failing with VK_NV_cooperative_matrix2's features on retries without them (not vkml's end)."""
    import dataclasses

    from vkml.runtime.vulkan import logical_device as vk_device
    from vkml.runtime.vulkan import physical_device as vk_physical
    from vkml.runtime.vulkan import reports

    real = reports.physical_device_info(0)
    if real.api < vk_physical.V1_1 or real.queue_family is None:
        pytest.skip("no usable Vulkan device")
    (struct,) = [s for s in vk_physical.FEATURE_STRUCTS if "Matrix2" in s.ctype]
    pretend = dataclasses.replace(
        real,
        features={**real.features, **dict.fromkeys(struct.fields, True)},
        feature_struct={**real.feature_struct, **dict.fromkeys(struct.fields, struct)},
    )
    create, tried = vk_device.LogicalDevice._create, []

    def refuse_newer(self, vk, info, enabled):
        tried.append(set(enabled))
        if set(struct.fields) & enabled:
            raise RuntimeError("VK_ERROR_FEATURE_NOT_PRESENT")
        return create(self, vk, info, enabled)

    monkeypatch.setattr(vk_device.LogicalDevice, "_create", refuse_newer)
    logical = vk_device.LogicalDevice(pretend)
    assert len(tried) == 2 and set(struct.fields) <= tried[0]
    assert (
        not set(struct.fields) & logical.enabled_features
        and "VK_NV_cooperative_matrix2" not in logical.enabled_extensions
    )
    # everything else vkml wants stays enabled (on a device that has cm2, all but its fields)
    assert logical.enabled_features == frozenset(reports.features_to_enable(real)) - set(struct.fields)


# A stand-in for the cm2 module where there is none: workgroup w writes C[w] = w, so the
# tool's recording (pipeline, descriptor set, dispatches, timestamps, download) runs on lavapipe.
_STAND_IN = """OpCapability Shader
OpCapability Float16
OpCapability StorageBuffer16BitAccess
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %A %B %C %wid
OpExecutionMode %main LocalSize 1 1 1
OpDecorate %wid BuiltIn WorkgroupId
OpDecorate %rt_half ArrayStride 2
OpDecorate %rt_float ArrayStride 4
OpMemberDecorate %in_block 0 Offset 0
OpDecorate %in_block Block
OpMemberDecorate %out_block 0 Offset 0
OpDecorate %out_block Block
OpDecorate %A DescriptorSet 0
OpDecorate %A Binding 0
OpDecorate %B DescriptorSet 0
OpDecorate %B Binding 1
OpDecorate %C DescriptorSet 0
OpDecorate %C Binding 2
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%half = OpTypeFloat 16
%float = OpTypeFloat 32
%v3uint = OpTypeVector %uint 3
%rt_half = OpTypeRuntimeArray %half
%rt_float = OpTypeRuntimeArray %float
%in_block = OpTypeStruct %rt_half
%out_block = OpTypeStruct %rt_float
%p_in = OpTypePointer StorageBuffer %in_block
%p_out = OpTypePointer StorageBuffer %out_block
%p_float = OpTypePointer StorageBuffer %float
%p_v3 = OpTypePointer Input %v3uint
%u0 = OpConstant %uint 0
%A = OpVariable %p_in StorageBuffer
%B = OpVariable %p_in StorageBuffer
%C = OpVariable %p_out StorageBuffer
%wid = OpVariable %p_v3 Input
%main = OpFunction %void None %fn
%entry = OpLabel
%id = OpLoad %v3uint %wid
%w = OpCompositeExtract %uint %id 0
%value = OpConvertUToF %float %w
%at = OpAccessChain %p_float %C %u0 %w
OpStore %at %value
OpReturn
OpFunctionEnd
"""


def test_the_recording_runs_a_module_and_reads_back_its_output(monkeypatch):
    device = vkml.best_device()
    if device.kind != "vulkan":
        pytest.skip("needs a Vulkan device")
    monkeypatch.setattr(proto, "spirv", lambda config, m, n, k: assemble_and_validate(_STAND_IN, "vulkan1.3"))
    from vkml.runtime.vulkan import pipeline_stats

    monkeypatch.setattr(device.pipelines, "capture_statistics", pipeline_stats.supported(device.logical))
    runner = proto.Runner(device)
    a, b = proto.operands(np.random.default_rng(0), 256, 64, 384)
    config = proto.Config()  # 128×128 tiles: 2 × 3 workgroups
    got, seconds = proto.product(runner, config, a, b, 3)
    assert got.shape == (256, 384) and got.dtype == np.float32
    assert list(got.reshape(-1)[: proto.grid(config, 256, 384)]) == [0, 1, 2, 3, 4, 5]
    assert len(seconds) == 3 and all(s > 0 for s in seconds)
    assert isinstance(runner.statistics, str)  # the driver's register figures, where it gives any
