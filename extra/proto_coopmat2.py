"""Prototype: a float16 GEMM on VK_NV_cooperative_matrix2 (workgroup-scope matrices), timed against cuBLAS's figure.

    python3 extra/proto_coopmat2.py --size 8192                   # the default shapes, 8192³ (and a small check)
    python3 extra/proto_coopmat2.py --size 4096 --size 8192 --shape "128x256x64 u2 g8 f32"
    python3 extra/proto_coopmat2.py --print-asm "128x128x32"      # the SPIR-V text, no device needed

C (float32, or float16 with ``f16``) = A (float16, M×K row-major) × B (float16, K×N row-major),
accumulated in float32. One workgroup of ``t`` invocations (256) owns a ``bm``×``bn`` tile of C as
ONE workgroup-scope accumulator; each K-step loads a ``bm``×``bk`` matrix of A and a ``bk``×``bn``
matrix of B straight from the storage buffers with OpCooperativeMatrixLoadTensorNV (a 2-D tensor
layout sliced at the tile: the driver stages through shared memory and pipelines the loads,
which vkml's KHR template does by hand), and the accumulator goes back with
OpCooperativeMatrixStoreTensorNV — no shared-memory epilogue. ``u`` K-steps are emitted per loop
iteration (straight-line, so the compiler can overlap them); ``g`` tile rows are walked together
(grouped order: the workgroups in flight share rows of A and columns of B in L2). Sizes that are
not whole tiles use the Constant clamp mode: loads past the edge read 0, stores there are dropped.

The module is assembled and validated by the cmeel spirv-as / spirv-val that vkml uses
(tests/test_proto_coopmat2.py does that on every machine). On a device with
VK_NV_cooperative_matrix2 (vkml enables its workgroup-scope, flexible-dimension and
tensor-addressing features where present) each shape that the driver's flexible-dimension list
allows runs: a full numpy check at a small ragged size, then per size the median GPU time of
``--repeats`` dispatches (GPU timestamps, one submission, a barrier between dispatches), TFLOP/s,
the ratio to cuBLAS (PyTorch CUDA's float16 ``a @ b`` timed in the same run where torch has CUDA,
else ``--cublas``, default 795 TFLOP/s: reference/vulkan.md) and the largest
error on sampled outputs over the bound of docs/ops/matmul.md (must stay ≤ 1). Without the
extension (lavapipe) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vkml.codegen.tools import assemble_and_validate

# A script beside bench/: its timing helpers are imported by name from there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_matmul_coopmat import bound_ratio  # noqa: E402

EXTENSION = "VK_NV_cooperative_matrix2"
FEATURES = (
    "cooperativeMatrixWorkgroupScope",
    "cooperativeMatrixFlexibleDimensions",
    "cooperativeMatrixTensorAddressing",
)
CUBLAS_TFLOPS = 795.0  # PyTorch CUDA float16 matmul on the H200, 786–805 (reference/vulkan.md)
USE = {"a": 0, "b": 1, "acc": 2}  # MatrixAKHR, MatrixBKHR, MatrixAccumulatorKHR
WORKGROUP_SCOPE = 2
CLAMP_UNDEFINED, CLAMP_CONSTANT = 0, 1


@dataclass(frozen=True)
class Config:
    """One kernel: the workgroup's tile of C (bm×bn), its K-step bk, invocations, K-steps per loop
    iteration, tile rows walked together, the output type, and whether B is stored transposed. Parsed
    from e.g. "128x256x64 t256 u2 g8 f32" or "128x256x64 bt".

    >>> Config.parse("128x256x64 u2"), Config.parse("64x64x32 t128 g1 f16").threads
    (Config(128x256x64 t256 u2 g8 f32), 128)
    """

    bm: int = 128
    bn: int = 128
    bk: int = 32
    threads: int = 256
    unroll: int = 1
    group: int = 8
    out: str = "f32"
    bt: bool = False  # B is stored transposed (N×K row-major: nn.Linear's weight in x @ w.T)

    def __str__(self) -> str:
        text = f"{self.bm}x{self.bn}x{self.bk} t{self.threads} u{self.unroll} g{self.group} {self.out}"
        return text + (" bt" if self.bt else "")

    def __repr__(self) -> str:
        return f"Config({self})"

    @classmethod
    def parse(cls, text: str) -> Config:
        tile, *rest = text.split()
        bm, bn, bk = (int(v) for v in tile.split("x"))
        config = cls(bm, bn, bk)
        for word in rest:
            if word in ("f32", "f16"):
                config = replace(config, out=word)
            elif word == "bt":
                config = replace(config, bt=True)
            else:
                field = {"t": "threads", "u": "unroll", "g": "group"}[word[0]]
                config = replace(config, **{field: int(word[1:])})
        return config


# Roughly ggml-vulkan's cm2 tiles (256 invocations; 128×256 / 128×128 with BK 64) and neighbours.
DEFAULT_CONFIGS = tuple(
    Config.parse(text)
    for text in (
        "128x128x32",
        "128x128x64",
        "128x256x32",
        "128x256x64",
        "256x128x64",
        "128x256x64 u2",
        "128x256x64 u4",
        "128x256x64 u8",  # ggml unrolls 8 K-steps of its 128×256×64 tile
        "128x256x64 g1",
        "128x256x64 g16",
        "128x256x64 f16",
        "128x256x64 bt",
        "128x128x64 t128",
    )
)


def tile_of(w: int, tiles: tuple[int, int], group: int) -> tuple[int, int]:
    """Workgroup ``w``'s (tile row, tile column) in grouped order: ``group`` tile rows at a time,
    down each column of the group before the next column (the kernel computes the same).

    >>> [tile_of(w, (3, 2), 2) for w in range(6)]
    [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    """
    tiles_m, tiles_n = tiles
    per_group = group * tiles_n
    first = (w // per_group) * group
    rows = min(group, tiles_m - first)
    local = w % per_group
    return first + local % rows, local // rows


class _Text:
    """SPIR-V assembly lines with cached constants (``%uN``) and fresh ids."""

    def __init__(self):
        self.constants: dict[int, str] = {}
        self.lines: list[str] = []
        self.count = 0

    def u(self, value: int) -> str:
        name = self.constants.setdefault(value, f"%u{value}")
        return name

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"%{stem}_{self.count}"

    def op(self, text: str) -> None:
        self.lines.append("        " + text)

    def let(self, stem: str, text: str) -> str:
        name = self.fresh(stem)
        self.op(f"{name} = {text}")
        return name


def module_text(config: Config, m: int, n: int, k: int) -> str:
    """The SPIR-V assembly of ``config``'s kernel for C[m, n] = A[m, k] @ B[k, n] (sizes baked in).

    Bindings 0, 1, 2 of set 0: A, B, C. Dispatch ``grid(config, m, n)`` workgroups.
    """
    bm, bn, bk, step = config.bm, config.bn, config.bk, config.bk * config.unroll
    tiles = (-(-m // bm), -(-n // bn))
    whole = m % bm == 0 and n % bn == 0 and k % step == 0
    clamp = CLAMP_UNDEFINED if whole else CLAMP_CONSTANT
    f16_out = config.out == "f16"
    t = _Text()

    # ---- the body first (it decides which constants exist), then the header around it
    t.op("%wg = OpLoad %v3uint %workgroup_id")
    w = t.let("w", "OpCompositeExtract %uint %wg 0")
    per_group = config.group * tiles[1]
    first = t.let("first", f"OpIMul %uint {t.let('g', f'OpUDiv %uint {w} {t.u(per_group)}')} {t.u(config.group)}")
    left = t.let("left", f"OpISub %uint {t.u(tiles[0])} {first}")
    rows = t.let("rows", f"OpExtInst %uint %glsl UMin {t.u(config.group)} {left}")
    local = t.let("local", f"OpUMod %uint {w} {t.u(per_group)}")
    tile_row = t.let("trow", f"OpIAdd %uint {first} {t.let('lr', f'OpUMod %uint {local} {rows}')}")
    tile_col = t.let("tcol", f"OpUDiv %uint {local} {rows}")
    row0 = t.let("row0", f"OpIMul %uint {tile_row} {t.u(bm)}")
    col0 = t.let("col0", f"OpIMul %uint {tile_col} {t.u(bn)}")
    pointers = [
        t.let(name, f"OpAccessChain %p_{kind} %{name} {t.u(0)} {t.u(0)}")
        for name, kind in (("A", "half"), ("B", "half"), ("C", "out"))
    ]
    created = t.let("layout", "OpCreateTensorLayoutNV %layout")
    layout_a = t.let("la", f"OpTensorLayoutSetDimensionNV %layout {created} {t.u(m)} {t.u(k)}")
    # B^T (N×K) is read through a view that swaps the slice's two dimensions (permutation 1, 0).
    b_dims = (n, k) if config.bt else (k, n)
    layout_b = t.let("lb", f"OpTensorLayoutSetDimensionNV %layout {created} {t.u(b_dims[0])} {t.u(b_dims[1])}")
    b_view = "TensorView %view" if config.bt else "None"
    if config.bt:
        t.op("%view = OpCreateTensorViewNV %view_type")
    layout_c = t.let("lc", f"OpTensorLayoutSetDimensionNV %layout {created} {t.u(m)} {t.u(n)}")
    t.op("OpBranch %header")
    t.lines.append("%header = OpLabel")
    t.op(f"%k = OpPhi %uint {t.u(0)} %entry %k_next %latch")
    t.op("%acc = OpPhi %mat_acc %acc_start %entry %acc_next %latch")
    t.op(f"%more = OpULessThan %bool %k {t.u(k)}")
    t.op("OpLoopMerge %merge %latch None")
    t.op("OpBranchConditional %more %body %merge")
    t.lines.append("%body = OpLabel")
    acc = "%acc"
    for sub in range(config.unroll):  # K ascends within the iteration
        k_sub = "%k" if sub == 0 else t.let("ks", f"OpIAdd %uint %k {t.u(sub * bk)}")
        slice_a = t.let("sa", f"OpTensorLayoutSliceNV %layout {layout_a} {row0} {t.u(bm)} {k_sub} {t.u(bk)}")
        a = t.let("a", f"OpCooperativeMatrixLoadTensorNV %mat_a {pointers[0]} %undef_a {slice_a} None None")
        b_slice = f"{col0} {t.u(bn)} {k_sub} {t.u(bk)}" if config.bt else f"{k_sub} {t.u(bk)} {col0} {t.u(bn)}"
        slice_b = t.let("sb", f"OpTensorLayoutSliceNV %layout {layout_b} {b_slice}")
        b = t.let("b", f"OpCooperativeMatrixLoadTensorNV %mat_b {pointers[1]} %undef_b {slice_b} None {b_view}")
        acc = t.let("acc", f"OpCooperativeMatrixMulAddKHR %mat_acc {a} {b} {acc}")
    t.op(f"%acc_next = OpCopyObject %mat_acc {acc}")
    t.op("OpBranch %latch")
    t.lines.append("%latch = OpLabel")
    t.op(f"%k_next = OpIAdd %uint %k {t.u(step)}")
    t.op("OpBranch %header")
    t.lines.append("%merge = OpLabel")
    result = t.let("d", "OpFConvert %mat_out %acc") if f16_out else "%acc"
    slice_c = t.let("sc", f"OpTensorLayoutSliceNV %layout {layout_c} {row0} {t.u(bm)} {col0} {t.u(bn)}")
    t.op(f"OpCooperativeMatrixStoreTensorNV {pointers[2]} {result} {slice_c} None None")
    t.op("OpReturn")
    body = t.lines

    out_type = "%half" if f16_out else "%float"
    scope, dims = t.u(WORKGROUP_SCOPE), t.u(2)
    tm, tn, tk, a_use, b_use, acc_use = (t.u(v) for v in (bm, bn, bk, USE["a"], USE["b"], USE["acc"]))
    zero, one, clamp_mode = t.u(0), t.u(1), t.u(clamp)  # every constant is named before the list below
    header = [
        "OpCapability Shader",
        "OpCapability Float16",
        "OpCapability StorageBuffer16BitAccess",
        "OpCapability VulkanMemoryModel",
        "OpCapability CooperativeMatrixKHR",
        "OpCapability CooperativeMatrixTensorAddressingNV",
        "OpCapability TensorAddressingNV",
        *(["OpCapability RoundingModeRTE"] if f16_out else []),
        'OpExtension "SPV_KHR_cooperative_matrix"',
        'OpExtension "SPV_NV_cooperative_matrix2"',
        'OpExtension "SPV_NV_tensor_addressing"',
        '%glsl = OpExtInstImport "GLSL.std.450"',
        "OpMemoryModel Logical Vulkan",
        'OpEntryPoint GLCompute %main "main" %A %B %C %workgroup_id',
        f"OpExecutionMode %main LocalSize {config.threads} 1 1",
        # The float32 → float16 narrowing of the f16 variant rounds to nearest even, as vkml's contract says.
        *(["OpExecutionMode %main RoundingModeRTE 16"] if f16_out else []),
        "OpDecorate %workgroup_id BuiltIn WorkgroupId",
        "OpDecorate %rt_half ArrayStride 2",
        f"OpDecorate %rt_out ArrayStride {2 if f16_out else 4}",
        "OpMemberDecorate %in_block 0 Offset 0",
        "OpDecorate %in_block Block",
        "OpMemberDecorate %out_block 0 Offset 0",
        "OpDecorate %out_block Block",
        *(f"OpDecorate %{name} DescriptorSet 0" for name in "ABC"),
        *(f"OpDecorate %{name} Binding {i}" for i, name in enumerate("ABC")),
        "OpDecorate %A NonWritable",
        "OpDecorate %B NonWritable",
        "OpDecorate %C NonReadable",
        "%void = OpTypeVoid",
        "%fn = OpTypeFunction %void",
        "%bool = OpTypeBool",
        "%uint = OpTypeInt 32 0",
        "%half = OpTypeFloat 16",
        "%float = OpTypeFloat 32",
        "%v3uint = OpTypeVector %uint 3",
        "%rt_half = OpTypeRuntimeArray %half",
        f"%rt_out = OpTypeRuntimeArray {out_type}",
        "%in_block = OpTypeStruct %rt_half",
        "%out_block = OpTypeStruct %rt_out",
        "%p_in = OpTypePointer StorageBuffer %in_block",
        "%p_out_block = OpTypePointer StorageBuffer %out_block",
        "%p_half = OpTypePointer StorageBuffer %half",
        f"%p_out = OpTypePointer StorageBuffer {out_type}",
        "%p_v3uint = OpTypePointer Input %v3uint",
        *(f"{name} = OpConstant %uint {value}" for value, name in sorted(t.constants.items())),
        f"%layout = OpTypeTensorLayoutNV {dims} {clamp_mode}",
        *(
            ["%false = OpConstantFalse %bool", f"%view_type = OpTypeTensorViewNV {dims} %false {one} {zero}"]
            if config.bt
            else []
        ),
        f"%mat_a = OpTypeCooperativeMatrixKHR %half {scope} {tm} {tk} {a_use}",
        f"%mat_b = OpTypeCooperativeMatrixKHR %half {scope} {tk} {tn} {b_use}",
        f"%mat_acc = OpTypeCooperativeMatrixKHR %float {scope} {tm} {tn} {acc_use}",
        *([f"%mat_out = OpTypeCooperativeMatrixKHR %half {scope} {tm} {tn} {acc_use}"] if f16_out else []),
        "%minus_zero = OpConstant %float -0.0",  # each output starts from -0.0 (docs/ops/matmul.md)
        "%acc_start = OpConstantComposite %mat_acc %minus_zero",
        "%undef_a = OpUndef %mat_a",  # what clipped loads would keep; no tensor view clips here
        "%undef_b = OpUndef %mat_b",
        "%A = OpVariable %p_in StorageBuffer",
        "%B = OpVariable %p_in StorageBuffer",
        "%C = OpVariable %p_out_block StorageBuffer",
        "%workgroup_id = OpVariable %p_v3uint Input",
        "%main = OpFunction %void None %fn",
        "%entry = OpLabel",
    ]
    return "\n".join([*header, *body, "OpFunctionEnd", ""])


def grid(config: Config, m: int, n: int) -> int:
    """Workgroups to dispatch (along x): one per tile of C."""
    return -(-m // config.bm) * -(-n // config.bn)


def spirv(config: Config, m: int, n: int, k: int) -> bytes:
    """The assembled module; spirv-val (vulkan1.3: SPIR-V 1.6) rejects a bad one with CompileError."""
    return assemble_and_validate(module_text(config, m, n, k), "vulkan1.3")


# ---------------------------------------------------------------------------- on a device


def device_problem(device, features: tuple[str, ...] = FEATURES) -> str | None:
    """Why ``device`` cannot run a prototype needing ``features`` of the extension (None: it can)."""
    if getattr(device, "kind", None) != "vulkan":
        return f"{device.name} is not a Vulkan device"
    info = device.logical.info
    name = info.properties.get("deviceName", device.name)
    if EXTENSION not in info.extensions:
        return f"{device.name} ({name}) does not offer {EXTENSION}"
    missing = [feature for feature in features if feature not in device.enabled_features]
    if missing:
        return f"{device.name} ({name}) offers {EXTENSION} but not the features {', '.join(missing)}"
    return None


def flexible_problem(config: Config, flexible: list[dict], max_dimension: int) -> str | None:
    """Why the driver's flexible-dimension list rules ``config`` out (None: an entry allows it)."""
    wanted = {"a": "float16", "b": "float16", "c": "float32", "result": "float32", "scope": "workgroup"}
    entries = [e for e in flexible if all(e.get(key) == value for key, value in wanted.items())]
    if not entries:
        return "no workgroup-scope float16 × float16 → float32 entry"
    if max_dimension and max(config.bm, config.bn, config.bk) > max_dimension:
        return f"a dimension above cooperativeMatrixFlexibleDimensionsMaxDimension {max_dimension}"
    for e in entries:
        fits = config.bm % e["m"] == 0 and config.bn % e["n"] == 0 and config.bk % e["k"] == 0
        if fits and e["workgroup_invocations"] == config.threads:
            return None
    listed = "; ".join(
        f"{e['m']}/{e['n']}/{e['k']} granularity, {e['workgroup_invocations']} invocations" for e in entries
    )
    return f"not a multiple of any entry's granularity with {config.threads} invocations ({listed})"


class Runner:
    """Records dispatches of one pipeline into one command buffer with a timestamp after each."""

    def __init__(self, device):
        from vkml.runtime.vulkan.instance import vk
        from vkml.runtime.vulkan.logical_device import Submitter
        from vkml.runtime.vulkan.timestamps import TimestampQueries

        api, ffi = vk(), device.logical.ffi
        self.device, self.lib, self.ffi = device, device.logical.lib, ffi
        self.submitter = Submitter(device.logical)
        self.timer = TimestampQueries(device.logical)
        self.compute = api.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        self.after = self.compute | api.VK_PIPELINE_STAGE_TRANSFER_BIT | api.VK_PIPELINE_STAGE_HOST_BIT
        self.bind_point = api.VK_PIPELINE_BIND_POINT_COMPUTE
        shader_rw = api.VK_ACCESS_SHADER_READ_BIT | api.VK_ACCESS_SHADER_WRITE_BIT
        self.between = ffi.new("VkMemoryBarrier*")  # dispatch after dispatch (the same C): no overlap
        self.between.sType = api.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        self.between.srcAccessMask = self.between.dstAccessMask = shader_rw
        self.final = ffi.new("VkMemoryBarrier*")  # C visible to the download
        self.final.sType = api.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        self.final.srcAccessMask = api.VK_ACCESS_SHADER_WRITE_BIT
        self.final.dstAccessMask = shader_rw | api.VK_ACCESS_TRANSFER_READ_BIT | api.VK_ACCESS_HOST_READ_BIT
        self.statistics = ""  # the last pipeline's registers and shared memory, where the driver says

    def pipeline(self, config: Config, m: int, n: int, k: int):
        from vkml.runtime.vulkan.kernel_cache import KernelBinary

        binary = KernelBinary(spirv=spirv(config, m, n, k), push_constants=(), push_size=0)
        name = f"proto_cm2_{config.bm}x{config.bn}x{config.bk}_{m}x{n}x{k}"
        pipeline = self.device.pipelines.create(name, 3, binary)
        self.statistics = pipeline_statistics(self.device, pipeline)
        return pipeline

    def run(self, pipeline, buffers, workgroups: int, repeats: int) -> list[float]:
        """GPU seconds of each of ``repeats`` dispatches (one submission)."""
        lib, null, device = self.lib, self.ffi.NULL, self.device
        device.descriptors.begin_run()
        keys = tuple(b.binding_key for b in buffers)
        descriptor_set = device.descriptors.lookup(pipeline.set_layouts, keys, [b.binding for b in buffers])
        command_buffer = self.submitter.begin()
        self.timer.begin(command_buffer, repeats)
        lib.vkCmdBindPipeline(command_buffer, self.bind_point, pipeline.handle)
        lib.vkCmdBindDescriptorSets(command_buffer, self.bind_point, pipeline.layout, 0, 1, descriptor_set, 0, null)
        for i in range(repeats):
            if i:
                lib.vkCmdPipelineBarrier(
                    command_buffer, self.compute, self.compute, 0, 1, self.between, 0, null, 0, null
                )
            lib.vkCmdDispatch(command_buffer, workgroups, 1, 1)
            self.timer.after(command_buffer, i + 1)
        lib.vkCmdPipelineBarrier(command_buffer, self.compute, self.after, 0, 1, self.final, 0, null, 0, null)
        self.submitter.submit_and_wait()
        return self.timer.seconds_between(self.timer.read(repeats + 1))


def pipeline_statistics(device, pipeline) -> str:
    """The driver's register and shared-memory figures for ``pipeline`` ('' where it reports none)."""
    from vkml.runtime.vulkan import pipeline_stats

    if not device.pipelines.capture_statistics:
        return ""
    found = pipeline_stats.executable_statistics(device.logical, pipeline.handle)
    figures = {k: v for e in found for k, v in e["statistics"].items() if "egister" in k or "hared" in k}
    return ", ".join(f"{k} {v}" for k, v in figures.items())


def product(runner: Runner, config: Config, a: np.ndarray, b: np.ndarray, repeats: int):
    """``(C as numpy, per-dispatch seconds)`` of ``a @ b`` under ``config``."""
    from vkml.ir import types as T

    device = runner.device
    (m, k), n = a.shape, b.shape[1]
    out = T.float16 if config.out == "f16" else T.float32
    buffers = [device.allocate(T.float16, a.size), device.allocate(T.float16, b.size), device.allocate(out, m * n)]
    for buffer, array in zip(buffers, (a, np.ascontiguousarray(b.T) if config.bt else b)):
        device.upload(buffer, array)
    if any(buffer.binding[1] % 16 for buffer in buffers):  # tensor loads want 16-byte aligned pointers
        raise SystemExit("a buffer is not 16-byte aligned")
    seconds = runner.run(runner.pipeline(config, m, n, k), buffers, grid(config, m, n), repeats)
    return device.download(buffers[2]).reshape(m, n), seconds


def operands(rng: np.random.Generator, m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal((m, k), dtype=np.float32).astype(np.float16)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(np.float16)
    return a, b


def full_check(runner: Runner, config: Config, rng) -> float:
    """error / bound over every output of a small product with tails in m, n and k (the clamped kernel)."""
    a, b = operands(rng, config.bm + 37, 3 * config.bk * config.unroll + 24, config.bn + 20)
    got, _ = product(runner, config, a, b, 1)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    k = a.shape[1]
    gamma = (k + 16) * 2.0**-24 / (1 - (k + 16) * 2.0**-24)
    big = np.maximum(np.abs(exact), np.abs(got.astype(np.float64))).astype(np.float16)
    half_ulp = (np.nextafter(big, np.float16(np.inf)) - big).astype(np.float64) / 2 if config.out == "f16" else 0.0
    return float(np.max(np.abs(got - exact) / (2 * gamma * magnitude + half_ulp + 1e-300)))


def torch_tflops(sizes, repeats: int) -> dict[int, float]:
    """PyTorch CUDA's float16 ``a @ b`` TFLOP/s per size (median of CUDA-event times); {} without CUDA."""
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    from bench_timing import time_torch

    cuda, found = torch.device("cuda"), {}
    for size in sizes:
        pair = [torch.randn(size, size, device=cuda, dtype=torch.float16) for _ in range(2)]
        timing = time_torch(functools.partial(torch.matmul, *pair), cuda, repeats, budget_s=5.0, warmups=3)
        found[size] = 2 * size**3 / timing.gpu.median / 1e12
    torch.cuda.empty_cache()
    return found


def sweep(device, configs, sizes, repeats: int, cublas: float, force: bool) -> None:
    from vkml.runtime.vulkan import pipeline_stats

    info = device.logical.info
    flexible = info.cooperative_matrix_flexible
    max_dimension = int(info.properties.get("cooperativeMatrixFlexibleDimensionsMaxDimension", 0))
    print(f"{device.name}: {info.properties.get('deviceName')}; {EXTENSION} properties:", end="")
    for key in (
        "WorkgroupScopeMaxWorkgroupSize",
        "FlexibleDimensionsMaxDimension",
        "WorkgroupScopeReservedSharedMemory",
    ):
        print(f" {key}={info.properties.get('cooperativeMatrix' + key)}", end="")
    print()
    for e in flexible:
        print(
            f"  flexible: {e['a']}×{e['b']}→{e['c']}/{e['result']} {e['scope']:9s} granularity "
            f"{e['m']}×{e['n']}×{e['k']}, {e['workgroup_invocations']} invocations"
        )
    peer = torch_tflops(sizes, repeats)
    for size in sizes:
        where = "PyTorch CUDA, this run" if size in peer else "--cublas, not measured here"
        print(f"  cuBLAS float16 {size}³: {peer.get(size, cublas):.1f} TFLOP/s ({where})")
    rng = np.random.default_rng(0)
    inputs = {size: operands(rng, size, size, size) for size in sizes}
    print(f"{'config':30s} {'check':>7s}" + "".join(f" {size:>6d}: ms   TFLOP/s  ×cuBLAS err/bound" for size in sizes))
    runner = Runner(device)
    device.pipelines.capture_statistics = pipeline_stats.supported(device.logical)  # registers, shared memory
    for config in configs:
        problem = flexible_problem(config, flexible, max_dimension)
        if problem is not None and not force:
            print(f"{str(config):30s} skipped: {problem}", flush=True)
            continue
        line = f"{str(config):30s}"
        try:
            line += f" {full_check(runner, config, rng):7.3f}"
            for size in sizes:
                a, b = inputs[size]
                got, seconds = product(runner, config, a, b, repeats)
                median = statistics.median(seconds)
                tflops = 2 * size**3 / median / 1e12
                ratio = bound_ratio(got, a, b, rng)
                line += f" {median * 1e3:9.3f} {tflops:9.1f} {tflops / peer.get(size, cublas):7.2f} {ratio:9.3f}"
            line += f"  [{runner.statistics}]" if runner.statistics else ""
        except Exception as exc:  # a shape the driver refuses must not end the sweep
            line += f" failed: {type(exc).__name__}: {str(exc)[:200]}"
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, action="append", help="square size (repeatable; default 4096 and 8192)")
    parser.add_argument("--shape", action="append", default=[], help='a config, e.g. "128x256x64 t256 u2 g8 f32"')
    parser.add_argument("--repeats", type=int, default=20, help="dispatches timed per size (the median is shown)")
    parser.add_argument("--cublas", type=float, default=CUBLAS_TFLOPS, help="cuBLAS TFLOP/s where torch has no CUDA")
    parser.add_argument("--force", action="store_true", help="also run configs the flexible-dimension list rules out")
    parser.add_argument("--print-asm", metavar="CONFIG", help="print the SPIR-V of CONFIG at --size (or 8192) and exit")
    parser.add_argument("--device", default=None, help="a Vulkan device (default: the best one)")
    args = parser.parse_args()
    configs = [Config.parse(text) for text in args.shape] or list(DEFAULT_CONFIGS)
    sizes = args.size or [4096, 8192]
    if args.print_asm:
        size = sizes[-1]
        print(module_text(Config.parse(args.print_asm), size, size, size))
        return
    for config in configs:  # every module must pass spirv-val, with or without a device
        spirv(config, sizes[-1], sizes[-1], sizes[-1])
    import vkml

    device = vkml.device(args.device) if args.device else vkml.best_device()
    problem = device_problem(device)
    if problem is not None:
        print(f"{problem}: nothing to run. The {len(configs)} modules pass spirv-val.")
        return
    sweep(device, configs, sizes, args.repeats, args.cublas, args.force)


if __name__ == "__main__":
    sys.exit(main())
