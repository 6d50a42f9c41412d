"""The Vulkan runtime on lavapipe (or whatever Vulkan device is first): reports, memory,
transfers, submission with hazard barriers, kernel and pipeline caches.

Kernels here are hand-written SPIR-V assembly (assembled by the real spirv-as binary), fed
to the runtime through its ``compiler`` hook, so these tests do not depend on codegen.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from vkml.codegen.features import VULKAN_NAMES, DeviceFeatures
from vkml.codegen.tools import assemble_and_validate
from vkml.errors import DeviceError, DTypeError, OutOfMemoryError, ShapeError
from vkml.ir import types as T
from vkml.ir.builder import KernelBuilder, convert, global_id, if_, select
from vkml.runtime.base import Dispatch
from vkml.runtime.counters import counters, reset_counters, snapshot
from vkml.runtime.vulkan import transfers as transfers_module
from vkml.runtime.vulkan.backend import VulkanDevice, device_rank, vulkan_device_reports
from vkml.runtime.vulkan.kernel_cache import KernelBinary, KernelCache, kernel_ir_text
from vkml.runtime.vulkan.memory import MemoryChoice, RangeAllocator, choose_memory
from vkml.runtime.vulkan.pipelines import PipelineCacheFile, PushConstantPacker

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- hand-written kernels

_HEADER = """
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid {interface}
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rta ArrayStride 4
OpMemberDecorate %Buf 0 Offset 0
OpDecorate %Buf Block
{bindings}
OpMemberDecorate %PC 0 Offset 0
OpMemberDecorate %PC 1 Offset 4
OpDecorate %PC Block
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%bool = OpTypeBool
%v3u = OpTypeVector %u32 3
%pin_v3u = OpTypePointer Input %v3u
%gid = OpVariable %pin_v3u Input
%rta = OpTypeRuntimeArray %f32
%Buf = OpTypeStruct %rta
%psb_Buf = OpTypePointer StorageBuffer %Buf
%psb_f32 = OpTypePointer StorageBuffer %f32
{variables}
%PC = OpTypeStruct %f32 %u32
%ppc_PC = OpTypePointer PushConstant %PC
%pc = OpVariable %ppc_PC PushConstant
%ppc_f32 = OpTypePointer PushConstant %f32
%ppc_u32 = OpTypePointer PushConstant %u32
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
%np = OpAccessChain %ppc_u32 %pc %c1
%n = OpLoad %u32 %np
%inb = OpULessThan %bool %i %n
OpSelectionMerge %end None
OpBranchConditional %inb %body %end
%body = OpLabel
%cp = OpAccessChain %ppc_f32 %pc %c0
%c = OpLoad %f32 %cp
{body}
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"""


def _kernel_asm(buffers: list[str], body: str) -> str:
    bindings = "\n".join(f"OpDecorate %{b} DescriptorSet 0\nOpDecorate %{b} Binding {i}" for i, b in enumerate(buffers))
    variables = "\n".join(f"%{b} = OpVariable %psb_Buf StorageBuffer" for b in buffers)
    interface = " ".join(f"%{b}" for b in buffers) + " %pc"
    return _HEADER.format(interface=interface, bindings=bindings, variables=variables, body=body)


# x[i] += c  (x: readwrite)
ADD_SCALAR = _kernel_asm(
    ["x"],
    """%xp = OpAccessChain %psb_f32 %x %c0 %i
%xv = OpLoad %f32 %xp
%sum = OpFAdd %f32 %xv %c
OpStore %xp %sum""",
)
# dst[i] = src[i] + c  (src: read, dst: write)
COPY_ADD = _kernel_asm(
    ["src", "dst"],
    """%sp = OpAccessChain %psb_f32 %src %c0 %i
%sv = OpLoad %f32 %sp
%sum = OpFAdd %f32 %sv %c
%dp = OpAccessChain %psb_f32 %dst %c0 %i
OpStore %dp %sum""",
)


def assemble(text: str) -> bytes:
    return assemble_and_validate(text, "vulkan1.2")


@dataclass
class FakeCompiled:
    """Stands in for codegen's CompiledKernel."""

    spirv: bytes
    push_constants: list
    push_size: int


_ASSEMBLED: dict[str, bytes] = {}
PUSH_LAYOUT = [("c", T.float32, 0), ("n", T.uint32, 4)]


def hand_compiler(kernel, features: DeviceFeatures, by_address=()) -> FakeCompiled:
    if by_address:  # a variant reaching a buffer past maxStorageBufferRange by device address: codegen's job
        from vkml.codegen import compile_kernel

        return compile_kernel(kernel, features, by_address)
    source = {"add_scalar": ADD_SCALAR, "copy_add": COPY_ADD}[kernel.name]
    if kernel.name not in _ASSEMBLED:
        _ASSEMBLED[kernel.name] = assemble(source)
    return FakeCompiled(_ASSEMBLED[kernel.name], PUSH_LAYOUT, 8)


def add_scalar_kernel():
    """The IR that ADD_SCALAR implements (the runtime keys caches on it)."""
    kb = KernelBuilder("add_scalar")
    x = kb.buffer("x", T.float32, "readwrite")
    c = kb.param("c", T.float32)
    kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        x[i] = x[i] + c
    return kb.finish()


def copy_add_kernel():
    kb = KernelBuilder("copy_add")
    src = kb.buffer("src", T.float32, "read")
    dst = kb.buffer("dst", T.float32, "write")
    c = kb.param("c", T.float32)
    kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        dst[i] = src[i] + c
    return kb.finish()


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vkml-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VKML_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def dev(cache_dir) -> VulkanDevice:
    return VulkanDevice(0, compiler=hand_compiler)


@pytest.fixture(scope="module")
def small_block_dev(cache_dir) -> VulkanDevice:
    """1 MiB blocks, so that several blocks and dedicated allocations appear with small arrays."""
    return VulkanDevice(0, compiler=hand_compiler, block_size=1 << 20)


def dispatch_add(kernel, buffer, c: float, n: int) -> Dispatch:
    return Dispatch(kernel, ((n + 63) // 64, 1, 1), {"x": buffer}, {"c": c, "n": n})


def upload_new(device, array: np.ndarray):
    buffer = device.allocate(T.from_numpy(array.dtype), array.size)
    device.upload(buffer, array)
    return buffer


# ---------------------------------------------------------------- reports


def test_reports_describe_every_device():
    reports = vulkan_device_reports()
    assert reports, "a Vulkan device (lavapipe at least) is expected here"
    feature_fields = {f.name for f in dataclasses.fields(DeviceFeatures)}
    for index, report in enumerate(reports):
        assert report["index"] == index
        assert report["device_type"] in ("discrete_gpu", "integrated_gpu", "virtual_gpu", "cpu", "other")
        assert isinstance(report["name"], str) and report["name"]
        assert report["driver_name"] and report["driver_version"]
        assert report["api_version"].count(".") == 2
        assert len(bytes.fromhex(report["pipeline_cache_uuid"])) == 16
        assert set(report["features"]) == feature_fields
        assert report["limits"]["maxStorageBufferRange"] > 0
        assert len(report["limits"]["maxComputeWorkGroupCount"]) == 3
        assert report["memory_types"] and report["memory_heaps"]
        json.dumps(report)  # plain values only


def test_device_rank_sorts_discrete_integrated_virtual_cpu_other():
    order = ["discrete_gpu", "integrated_gpu", "virtual_gpu", "cpu", "other"]
    reports = [{"device_type": t, "index": i} for i, t in enumerate(reversed(order))]
    assert [r["device_type"] for r in sorted(reports, key=device_rank)] == order
    assert device_rank({"device_type": "discrete_gpu", "usable": False}) > device_rank({"device_type": "other"})


@pytest.mark.parametrize(
    "setup",
    [
        "import sys; sys.modules['vulkan'] = None",  # no binding / no loader library
        "import os; os.environ['VK_ICD_FILENAMES'] = os.environ['VK_DRIVER_FILES'] = '/nonexistent/icd.json'",
    ],
)
def test_reports_are_empty_without_vulkan(setup):
    code = f"{setup}\nfrom vkml.runtime.vulkan.backend import vulkan_device_reports, devices\nprint(vulkan_device_reports(), devices())"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] []"


def test_device_features_reflect_what_was_enabled(dev):
    report = vulkan_device_reports()[dev.index]
    supported = {name for name, on in report["vulkan_features"].items() if on}
    assert dev.enabled_features <= supported
    features = dataclasses.asdict(dev.features)
    for field, vulkan_name in VULKAN_NAMES.items():
        if field in features and vulkan_name in supported | set(report["vulkan_features"]):
            assert features[field] == (vulkan_name in dev.enabled_features), field
    assert dev.features.max_storage_buffer_range == report["limits"]["maxStorageBufferRange"]
    assert dev.features.max_workgroup_count == tuple(report["limits"]["maxComputeWorkGroupCount"])
    assert features == report["features"]


# ---------------------------------------------------------------- memory and transfers


def _random_array(dtype: T.DType, numel: int, rng) -> np.ndarray:
    if dtype is T.bool_:
        return rng.random(numel) < 0.5
    bits = rng.integers(0, 256, size=numel * dtype.nbytes, dtype=np.uint8)
    return bits.view(dtype.np)  # every bit pattern, NaN payloads included


@pytest.mark.parametrize("dtype", T.ALL, ids=lambda t: t.name)
@pytest.mark.parametrize("numel", [0, 1, 3, 1001, 300_007])
def test_upload_download_round_trip(small_block_dev, dtype, numel):
    rng = np.random.default_rng(numel)
    array = _random_array(dtype, numel, rng)
    buffer = upload_new(small_block_dev, array)
    back = small_block_dev.download(buffer)
    assert back.dtype == dtype.np and back.shape == (numel,)
    assert back.tobytes() == array.tobytes()


def test_bool_is_one_uint32_per_element_on_the_device(dev):
    buffer = upload_new(dev, np.array([True, False, True]))
    assert buffer.device_nbytes == 12
    raw = np.empty(3, np.uint32)
    dev.transfers.download(buffer.allocation, raw)
    assert raw.tolist() == [1, 0, 1]


def test_buffers_spread_over_blocks_and_memory_returns_to_baseline(small_block_dev):
    d = small_block_dev
    baseline = d.memory_stats()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (50_000, 100_000, 200_000, 700_000, 3)]
    buffers = [upload_new(d, a) for a in arrays]
    stats = d.memory_stats()
    assert stats["allocated_bytes"] - baseline["allocated_bytes"] == sum(a.nbytes for a in arrays)
    assert stats["peak_bytes"] >= stats["allocated_bytes"]
    assert len({b.allocation.block.id for b in buffers}) >= 3  # several blocks and a dedicated allocation
    assert any(b.allocation.block.dedicated for b in buffers)
    for buffer, array in zip(buffers, arrays):
        assert np.array_equal(d.download(buffer), array)
    peak = d.memory_stats()["peak_bytes"]
    del buffers, buffer
    after = d.memory_stats()
    assert after["allocated_bytes"] == baseline["allocated_bytes"]
    assert after["peak_bytes"] == peak
    spare = d.memory._spare_bytes()  # dedicated and emptied shared blocks kept for reuse, within their limit
    assert spare <= d.memory.spare_limit
    assert after["reserved_bytes"] - spare <= max(baseline["reserved_bytes"], d.memory.block_size)


def test_emptied_shared_blocks_are_kept_and_reused(small_block_dev):
    # A training step frees and makes the same buffers every step: the blocks it needed beyond
    # the first stay reserved and come back, instead of a vkAllocateMemory each time.
    d = small_block_dev
    quarter = d.memory.block_size // 4 // 4  # float32 elements in a quarter of a block: shared, not dedicated
    first = [d.allocate(T.float32, quarter) for _ in range(12)]
    blocks = {b.allocation.block.id for b in first}
    assert len(blocks) >= 3 and not any(b.allocation.block.dedicated for b in first)
    reserved = d.memory_stats()["reserved_bytes"]
    del first
    assert d.memory_stats()["reserved_bytes"] == reserved  # emptied blocks kept (within spare_limit)
    assert sum(len(kept) for kept in d.memory._sized.values()) == 12  # every range kept for its size's next buffer
    again = [d.allocate(T.float32, quarter) for _ in range(12)]
    assert {b.allocation.block.id for b in again} == blocks  # the same blocks, no new ones
    assert d.memory_stats()["reserved_bytes"] == reserved
    data = np.arange(quarter, dtype=np.float32)
    d.upload(again[-1], data)
    assert np.array_equal(d.download(again[-1]), data)
    del again
    d.synchronize()
    assert d.empty_cache() > 0 and d.memory_stats()["reserved_bytes"] < reserved  # the emptied blocks go back


def test_a_freed_range_comes_back_for_its_size_in_a_cycle(small_block_dev):
    # A loop that frees and makes the same sizes gets the same ranges back (its runs keep their
    # recordings); first fit over coalesced free ranges would let the layout drift.
    d = small_block_dev
    keep = d.allocate(T.float32, 1000)
    offsets = []
    for _ in range(4):  # a parameter replaced every step: the new one made while the old one lives
        new = d.allocate(T.float32, 1000)
        keep, old = new, keep
        del old
        offsets.append(keep.allocation.offset)
    assert offsets[0] == offsets[2] and offsets[1] == offsets[3] and offsets[0] != offsets[1]


def test_a_kept_range_is_chosen_by_address_not_by_the_order_of_frees(small_block_dev):
    # What a step frees in another order still gives the next step the same memory.
    d = small_block_dev
    for order in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        made = [d.allocate(T.float32, 500) for _ in range(3)]
        offsets = sorted(b.allocation.offset for b in made)
        for i in order:
            made[i] = None
        d.memory_stats()  # returns the queued ranges
        again = d.allocate(T.float32, 500)
        assert again.allocation.offset == offsets[0]
        del again, made
        d.memory_stats()


def test_ranges_kept_by_size_go_back_before_a_new_block(small_block_dev):
    d = small_block_dev
    quarter = d.memory.block_size // 4 // 4
    half = 2 * quarter  # the largest buffer a shared block holds
    first = [d.allocate(T.float32, quarter) for _ in range(8)]
    fillers = []
    while any(stop - start >= half * 4 for b in d.memory.blocks for start, stop in b.ranges.free_ranges):
        fillers.append(d.allocate(T.float32, half))  # no free range left that fits half a block
    del first
    reserved = d.memory_stats()["reserved_bytes"]  # (stats returns the ranges buffers queued when dropped)
    assert d.memory._sized
    bigger = d.allocate(T.float32, half)  # none of its size kept, no free range fits: the kept ones coalesce
    assert d.memory_stats()["reserved_bytes"] == reserved and not d.memory._sized
    uploaded = d.upload_new(T.float32, np.arange(quarter, dtype=np.float32))  # the host writes: never a kept range
    assert np.array_equal(d.download(uploaded), np.arange(quarter, dtype=np.float32))
    del bigger, fillers


def test_offsets_respect_storage_alignment(small_block_dev):
    d = small_block_dev
    alignment = d.limits["minStorageBufferOffsetAlignment"]
    buffers = [d.allocate(T.float16, n) for n in (1, 3, 5, 7, 9)]
    assert all(b.allocation.offset % alignment == 0 for b in buffers)
    ranges = sorted((b.allocation.offset, b.allocation.offset + b.device_nbytes) for b in buffers)
    assert all(end <= start for (_, end), (start, _) in zip(ranges, ranges[1:]))  # no overlap


def test_range_allocator_first_fit_and_coalescing():
    ranges = RangeAllocator(1000)
    a, b, c = ranges.allocate(100, 64), ranges.allocate(100, 64), ranges.allocate(100, 64)
    assert (a, b, c) == (0, 128, 256)
    ranges.release(b, 100)
    assert ranges.allocate(50, 64) == 128  # first fit reuses the hole
    ranges.release(128, 50)
    ranges.release(a, 100)
    ranges.release(c, 100)
    assert ranges.free_ranges == [(0, 1000)] and ranges.empty
    assert ranges.allocate(1000, 64) == 0
    assert ranges.allocate(1, 64) is None
    with pytest.raises(ValueError, match="double free"):
        ranges.release(0, 1000) or ranges.release(0, 1000)


def test_range_allocator_random_workload_never_overlaps():
    rng = np.random.default_rng(1)
    ranges = RangeAllocator(1 << 16)
    live: dict[int, int] = {}
    for _ in range(2000):
        if live and rng.random() < 0.45:
            offset = list(live)[rng.integers(len(live))]
            ranges.release(offset, live.pop(offset))
        else:
            size = int(rng.integers(1, 3000))
            offset = ranges.allocate(size, 16)
            if offset is not None:
                assert offset % 16 == 0
                live[offset] = size
        spans = sorted((o, o + s) for o, s in live.items())
        assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    for offset, size in live.items():
        ranges.release(offset, size)
    assert ranges.free_ranges == [(0, 1 << 16)]


def test_memory_choice_for_the_tested_devices():
    lavapipe = choose_memory([(0xF, 0)], [(2 << 30, 1)], 0x1)
    assert lavapipe == MemoryChoice(0, None, True, True, True)
    # H200: DEVICE_LOCAL; DEVICE_LOCAL|HOST_VISIBLE|COHERENT over the same heap (ReBAR); cached system memory.
    h200 = choose_memory([(0x1, 0), (0x7, 0), (0xE, 1)], [(140 << 30, 1), (94 << 30, 0)], 0x7)
    assert (h200.device_type, h200.staging_type, h200.direct_upload, h200.direct_download) == (1, 2, True, False)
    # A discrete GPU without ReBAR: its small host-visible BAR heap must not hold tensors.
    no_rebar = choose_memory(
        [(0x1, 0), (0x7, 2), (0x6, 1), (0xE, 1)], [(8 << 30, 1), (16 << 30, 0), (256 << 20, 1)], 0xF
    )
    assert (no_rebar.device_type, no_rebar.staging_type, no_rebar.direct_upload) == (0, 3, False)


def test_staged_transfers_in_chunks(cache_dir, monkeypatch):
    """The path of devices whose memory the host cannot map, exercised on this device."""
    staged = VulkanDevice(0, compiler=hand_compiler, block_size=1 << 20)
    choice = staged.memory.choice
    staging_type = choice.device_type
    staged.memory.choice = MemoryChoice(choice.device_type, staging_type, False, False, True)
    monkeypatch.setattr(transfers_module, "STAGING_CHUNK", 256 << 10)  # downloads
    monkeypatch.setattr(transfers_module, "QUEUED_CHUNK", 256 << 10)  # uploads (copies queued behind the work)
    rng = np.random.default_rng(2)
    before = snapshot()
    for numel in (1, 1000, 300_001):  # the last one takes several chunks and a dedicated allocation
        array = rng.standard_normal(numel).astype(np.float32)
        buffer = upload_new(staged, array)
        assert buffer.allocation.block.address is None  # really not mapped
        assert np.array_equal(staged.download(buffer), array)
    assert counters["transfer_submissions"] - before["transfer_submissions"] == 2 * (1 + 1 + 5)
    # Kernels see staged uploads and staged downloads see kernel results.
    kernel = add_scalar_kernel()
    x = upload_new(staged, np.arange(100, dtype=np.float32))
    staged.run([dispatch_add(kernel, x, 0.5, 100)])
    assert np.array_equal(staged.download(x), np.arange(100, dtype=np.float32) + 0.5)


def test_larger_than_max_storage_buffer_range(dev):
    max_range = dev.max_storage_buffer_range
    numel = min(max_range, 1 << 30) // 4 + 5_000_000  # past the range (128 MiB on lavapipe)
    array = np.arange(numel, dtype=np.uint32)
    buffer = upload_new(dev, array.view(np.float32))
    assert buffer.device_nbytes > min(max_range, 1 << 30)
    back = dev.download(buffer).view(np.uint32)
    assert back[0] == 0 and back[-1] == numel - 1 and np.array_equal(back, array)
    assert buffer.binding[2] == min(buffer.device_nbytes, max_range)  # never binds past the limit
    # A kernel given a buffer past the range runs a variant that reaches it by device address.
    kernel = add_scalar_kernel()
    dev.run([dispatch_add(kernel, buffer, 1.0, 64)])
    assert dev.download(buffer)[:64].tolist() == (array[:64].view(np.float32) + 1.0).tolist()
    beyond = buffer.device_nbytes > max_range  # lavapipe: yes; a 4 GiB range: no
    assert buffer.beyond_range == beyond and buffer.device_address is not None
    variants = dev.pipelines.lookup(kernel).addressed
    assert list(variants) == ([(0,)] if beyond else [])


def test_allocation_failure_names_the_size(dev):
    with pytest.raises(OutOfMemoryError, match=r"4000000000000 bytes"):
        dev.allocate(T.float32, 1_000_000_000_000)


def test_bad_uploads_and_allocations_raise(dev):
    buffer = dev.allocate(T.float32, 4)
    with pytest.raises(DTypeError, match="int32"):
        dev.upload(buffer, np.zeros(4, np.int32))
    with pytest.raises(ShapeError, match="5 elements"):
        dev.upload(buffer, np.zeros(5, np.float32))
    with pytest.raises(ShapeError):
        dev.allocate(T.float32, -1)


# ---------------------------------------------------------------- running kernels


def test_chain_on_one_buffer_needs_n_minus_1_barriers(dev):
    kernel = add_scalar_kernel()
    x = upload_new(dev, np.zeros(1000, np.float32))
    before = snapshot()
    dev.run([dispatch_add(kernel, x, 1.5, 1000) for _ in range(5)])
    assert counters["barriers"] - before["barriers"] == 4
    assert counters["submissions"] - before["submissions"] == 1
    assert counters["dispatches"] - before["dispatches"] == 5
    assert np.array_equal(dev.download(x), np.full(1000, 7.5, np.float32))


def test_independent_dispatches_need_no_barrier(dev):
    kernel = add_scalar_kernel()
    buffers = [upload_new(dev, np.full(100, i, np.float32)) for i in range(6)]
    before = snapshot()
    dev.run([dispatch_add(kernel, b, 2.0, 100) for b in buffers])
    assert counters["barriers"] - before["barriers"] == 0
    assert counters["submissions"] - before["submissions"] == 1
    for i, b in enumerate(buffers):
        assert np.array_equal(dev.download(b), np.full(100, i + 2.0, np.float32))


def test_read_after_read_is_free_write_after_read_is_not(dev):
    copy = copy_add_kernel()
    add = add_scalar_kernel()
    a = upload_new(dev, np.arange(64, dtype=np.float32))
    b, c = dev.allocate(T.float32, 64), dev.allocate(T.float32, 64)

    def copy_to(dst, value):
        return Dispatch(copy, (1, 1, 1), {"src": a, "dst": dst}, {"c": value, "n": 64})

    before = snapshot()
    dev.run([copy_to(b, 1.0), copy_to(c, 2.0)])  # both only read a: no barrier
    assert counters["barriers"] - before["barriers"] == 0
    dev.run([copy_to(b, 1.0), dispatch_add(add, a, 100.0, 64)])  # then a is written: write-after-read
    assert counters["barriers"] - before["barriers"] == 1
    dev.run([dispatch_add(add, a, 1.0, 64), copy_to(c, 0.0)])  # read-after-write
    assert counters["barriers"] - before["barriers"] == 2
    dev.run([copy_to(b, 0.0), copy_to(b, 5.0)])  # write-after-write
    assert counters["barriers"] - before["barriers"] == 3
    assert counters["submissions"] - before["submissions"] == 4
    base = np.arange(64, dtype=np.float32)
    assert np.array_equal(dev.download(a), base + 101.0)
    assert np.array_equal(dev.download(b), base + 101.0 + 5.0)
    assert np.array_equal(dev.download(c), base + 101.0)


def test_a_barrier_clears_earlier_hazards(dev):
    add = add_scalar_kernel()
    x, y = upload_new(dev, np.zeros(64, np.float32)), upload_new(dev, np.zeros(64, np.float32))
    before = snapshot()
    # x, x (barrier), y: y was never touched before, and the barrier already ordered everything.
    dev.run([dispatch_add(add, x, 1.0, 64), dispatch_add(add, x, 1.0, 64), dispatch_add(add, y, 1.0, 64)])
    assert counters["barriers"] - before["barriers"] == 1


def test_counters_count_compiles_transfers_and_reset(tmp_path, monkeypatch):
    monkeypatch.setenv("VKML_CACHE_DIR", str(tmp_path))  # an empty disk cache
    reset_counters()
    assert all(v == 0 for v in counters.values())
    first = VulkanDevice(0, compiler=hand_compiler)
    x = upload_new(first, np.ones(10, np.float32))
    assert counters["bytes_uploaded"] == 40
    first.run([dispatch_add(add_scalar_kernel(), x, 1.0, 10)])
    first.run([dispatch_add(add_scalar_kernel(), x, 1.0, 10)])  # equal IR, new object: found in memory
    assert counters["kernels_compiled"] == 1 and counters["pipelines_created"] == 1
    assert first.download(x).tolist() == [3.0] * 10
    assert counters["bytes_downloaded"] == 40
    assert counters["dispatches"] == 2 and counters["submissions"] == 2 and counters["barriers"] == 0
    # A new device with empty memory caches, as in a new process: the disk cache has the kernel.
    second = VulkanDevice(0, compiler=hand_compiler)
    second.run([dispatch_add(add_scalar_kernel(), upload_new(second, np.ones(10, np.float32)), 1.0, 10)])
    assert counters["kernels_compiled"] == 1


def test_compiles_once_per_ir_and_never_in_a_second_process(cache_dir):
    calls = []

    def counting_compiler(kernel, features):
        calls.append(kernel.name)
        return hand_compiler(kernel, features)

    features = DeviceFeatures(float16=True, subgroup_size=3)  # a feature set no other test uses
    first = KernelCache(features, counting_compiler)
    before = snapshot()
    binary = first.binary(add_scalar_kernel())
    first.binary(add_scalar_kernel())
    assert calls == ["add_scalar"] and counters["kernels_compiled"] - before["kernels_compiled"] == 1
    second = KernelCache(features, counting_compiler)  # as a new process would build it
    assert second.binary(add_scalar_kernel()) == binary
    assert calls == ["add_scalar"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "flip"])
def test_damaged_kernel_cache_file_is_recompiled(cache_dir, damage):
    calls = []

    def counting_compiler(kernel, features):
        calls.append(kernel.name)
        return hand_compiler(kernel, features)

    features = DeviceFeatures(int64=True, subgroup_size=5)
    kernel = copy_add_kernel()
    good = KernelCache(features, counting_compiler).binary(kernel)
    path = KernelCache(features).path(KernelCache(features).key(kernel_ir_text(kernel)))
    data = path.read_bytes()
    damaged = {
        "truncate": data[: len(data) // 2],
        "garbage": os.urandom(len(data)),
        "empty": b"",
        "flip": data[:-5] + bytes([data[-5] ^ 1]) + data[-4:],
    }[damage]
    path.write_bytes(damaged)
    compiled_before = len(calls)
    again = KernelCache(features, counting_compiler).binary(kernel)
    assert again == good and len(calls) == compiled_before + 1
    assert KernelBinary.from_bytes(path.read_bytes(), path.stem) == good  # rewritten whole


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign_header"])
def test_damaged_pipeline_cache_file_is_ignored(dev, tmp_path, damage):
    path = tmp_path / "pipelines.bin"
    fresh = PipelineCacheFile(dev.logical, path)
    assert fresh.loaded_bytes == 0
    binary = KernelBinary.from_compiled(hand_compiler(add_scalar_kernel(), dev.features))
    dev.pipelines.cache_file, saved = fresh, dev.pipelines.cache_file
    try:
        dev.pipelines.create("add_scalar", 1, binary)
    finally:
        dev.pipelines.cache_file = saved
    fresh.save()
    assert PipelineCacheFile(dev.logical, path).loaded_bytes > 0  # a good file is used
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        path.write_bytes(b"VKMLPLC1" + os.urandom(len(data)))
    else:  # a well-formed file from another device: right checksum, wrong Vulkan header
        import hashlib

        payload = bytearray(data[40:])
        payload[16:32] = bytes(16)
        path.write_bytes(b"VKMLPLC1" + hashlib.sha256(bytes(payload)).digest() + bytes(payload))
    reloaded = PipelineCacheFile(dev.logical, path)
    assert reloaded.loaded_bytes == 0
    reloaded.save()
    assert PipelineCacheFile(dev.logical, path).loaded_bytes > 0


def test_pipeline_cache_file_is_keyed_by_device_and_driver(dev, cache_dir):
    path = PipelineCacheFile.default_path(dev.logical)
    props = dev.logical.info.properties
    assert path.parent == cache_dir / "pipelines"
    assert props["pipelineCacheUUID"].hex() in path.name and f"{props['driverVersion']:08x}" in path.name


def test_push_constants_pack_at_their_offsets():
    packer = PushConstantPacker("k", (("n", T.uint32, 8), ("a", T.float32, 0), ("flag", T.bool_, 4)), 16)
    data = packer.pack({"a": 1.5, "n": 7, "flag": True})
    assert len(data) == 16
    assert np.frombuffer(data[:4], np.float32)[0] == 1.5
    assert np.frombuffer(data[4:12], np.uint32).tolist() == [1, 7]
    with pytest.raises(DeviceError, match="'n' not given"):
        packer.pack({"a": 1.0, "flag": False})
    with pytest.raises(DTypeError, match="n=-1"):
        packer.pack({"a": 1.0, "n": -1, "flag": False})


def test_dispatch_errors_are_clear(dev):
    kernel = add_scalar_kernel()
    x = dev.allocate(T.float32, 64)
    too_big = dev.limits["maxComputeWorkGroupCount"][0] + 1
    with pytest.raises(DeviceError, match="maxComputeWorkGroupCount"):
        dev.run([Dispatch(kernel, (too_big, 1, 1), {"x": x}, {"c": 1.0, "n": 64})])
    with pytest.raises(DeviceError, match="buffer 'x' not given"):
        dev.run([Dispatch(kernel, (1, 1, 1), {}, {"c": 1.0, "n": 64})])
    with pytest.raises(DTypeError, match="holds int32"):
        dev.run([Dispatch(kernel, (1, 1, 1), {"x": dev.allocate(T.int32, 64)}, {"c": 1.0, "n": 64})])
    with pytest.raises(DeviceError, match="'c' not given"):
        dev.run([Dispatch(kernel, (1, 1, 1), {"x": x}, {"n": 64})])
    # The device still works after a failed recording.
    dev.upload(x, np.zeros(64, np.float32))
    dev.run([dispatch_add(kernel, x, 3.0, 64)])
    assert np.array_equal(dev.download(x), np.full(64, 3.0, np.float32))


def test_empty_grids_and_zero_size_buffers(dev):
    kernel = add_scalar_kernel()
    empty = dev.allocate(T.float32, 0)
    before = snapshot()
    dev.run([])
    dev.run([Dispatch(kernel, (0, 1, 1), {"x": empty}, {"c": 1.0, "n": 0})])
    assert counters["submissions"] == before["submissions"]
    dev.run([Dispatch(kernel, (1, 1, 1), {"x": empty}, {"c": 1.0, "n": 0})])  # binds a placeholder range
    assert counters["submissions"] - before["submissions"] == 1
    assert dev.download(empty).shape == (0,)


def test_descriptor_sets_are_reused_across_runs(dev):
    kernel = add_scalar_kernel()
    x = upload_new(dev, np.zeros(64, np.float32))
    dev.run([dispatch_add(kernel, x, 1.0, 64)])
    written = dev.descriptors.sets_written
    for _ in range(3):
        dev.run([dispatch_add(kernel, x, 1.0, 64)])
    assert dev.descriptors.sets_written == written
    assert np.array_equal(dev.download(x), np.full(64, 4.0, np.float32))


def test_descriptor_pool_overflow_within_one_run(cache_dir):
    d = VulkanDevice(0, compiler=hand_compiler)
    d.descriptors.sets_per_pool = 4
    d.descriptors.begin_run()
    d.descriptors.pools.append(d.descriptors._new_pool())
    d.descriptors.begin_run()  # folds into one pool of 4 sets (the run before needed none: no growth)
    kernel = add_scalar_kernel()
    buffers = [upload_new(d, np.zeros(64, np.float32)) for _ in range(20)]
    d.run([dispatch_add(kernel, b, 1.0, 64) for b in buffers])  # needs 20 sets: overflows into new pools
    assert len(d.descriptors.pools) > 1
    d.run([dispatch_add(kernel, b, 2.0, 64) for b in buffers])
    assert len(d.descriptors.pools) == 1
    assert all(np.array_equal(d.download(b), np.full(64, 3.0, np.float32)) for b in buffers)


def test_kernels_from_the_code_generator_run(cache_dir):
    """The default compiler (vkml.codegen): its entry point name and push-constant layout."""
    d = VulkanDevice(0)
    kb = KernelBuilder("scale_shift")
    x = kb.buffer("x", T.float32, "read")
    flags = kb.buffer("flags", T.bool_, "read")
    out = kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    scale = kb.param("scale", T.float32)
    shift = kb.param("shift", T.int64)
    with kb:
        i = global_id(0)
        with if_(i < n):
            value = x[i] * scale + convert(shift, T.float32)
            out[i] = select(flags[i], value, x[i])
    kernel = kb.finish()
    values = np.arange(100, dtype=np.float32)
    mask = np.arange(100) % 3 == 0
    xs, fs, os_ = upload_new(d, values), upload_new(d, mask), d.allocate(T.float32, 100)
    d.run([Dispatch(kernel, (2, 1, 1), {"x": xs, "flags": fs, "out": os_}, {"n": 100, "scale": 0.5, "shift": -3})])
    expected = np.where(mask, values * np.float32(0.5) + np.float32(-3), values)
    assert np.array_equal(d.download(os_), expected)


def test_one_device_registry_names_and_runtime_give_the_same_object(gpu):
    import vkml
    from vkml.runtime.vulkan import backend as vulkan_runtime

    assert vkml.device(gpu.name) is vulkan_runtime.device(gpu.index) is gpu
    assert vkml.device("vulkan") is vulkan_runtime.device(0)
    with pytest.raises(vkml.DeviceError, match="no Vulkan device 99"):
        vkml.device("vulkan:99")


def test_the_cache_key_covers_the_code_generator_sources():
    """A changed code generator must never reuse old SPIR-V: the fingerprint hashes its sources (it once
    pointed at a folder that no longer existed after a move, and hashed nothing)."""
    from vkml.runtime.vulkan import kernel_cache

    names = {path.name for path in kernel_cache.codegen_sources()}
    assert {"spirv.py", "spirv_memory.py", "features.py"} <= names
