"""Tensors larger than ``maxStorageBufferRange`` on Vulkan (lavapipe: 128 MiB).

A descriptor cannot bind such a buffer whole, so a kernel given one reaches it through its
buffer device address instead (vkml.codegen's ``by_address``; vkml/runtime/vulkan/backend.py picks
it per dispatch). The tensor here is 160 MiB of float32 (41,943,040 elements): on lavapipe
its last 32 MiB lie past the range, and before this path existed a kernel saw zeros there.
Expected values come from numpy: the reduction's expected bits from a numpy implementation of
the contract's pairwise tree (DESIGN.md §4), itself checked against the CPU backend.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vkml
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.errors import CompileError, DeviceError
from vkml.ir import types as T
from vkml.ir.builder import KernelBuilder, global_id, if_
from vkml.runtime.base import Dispatch
from vkml.runtime.vulkan.kernel_cache import KernelBinary
from vkml.runtime.vulkan.pipelines import PushConstantPacker

N = 41_943_040  # 160 MiB of float32
RANGE_ELEMENTS = (128 << 20) // 4  # the first float32 element past a 128 MiB range
LAVAPIPE = DeviceFeatures.lavapipe_like()


def contract_tree_sum(values: np.ndarray) -> np.float32:
    """The contract's reduction tree: neighbours paired level by level, an odd tail carried up."""
    level = values
    while level.size > 1:
        pairs = level.size // 2
        summed = level[0 : 2 * pairs : 2] + level[1 : 2 * pairs : 2]
        level = np.concatenate([summed, level[-1:]]) if level.size % 2 else summed
    return level[0]


@pytest.fixture(scope="module")
def gpu():
    device = vkml.best_device()
    assert device.kind == "vulkan", "these tests run on a Vulkan device (lavapipe in CI)"
    return device


@pytest.fixture(scope="module")
def random_values() -> np.ndarray:
    return np.random.default_rng(160).standard_normal(N, dtype=np.float32)


@pytest.fixture
def bound_ranges(gpu, monkeypatch) -> list[int]:
    """Every descriptor range the device binds while the test runs."""
    ranges: list[int] = []
    lookup = gpu.descriptors.lookup

    def spy(set_layouts, key, bindings):
        ranges.extend(size for _, _, size in bindings)
        return lookup(set_layouts, key, bindings)

    monkeypatch.setattr(gpu.descriptors, "lookup", spy)
    gpu.recordings.forget()  # an earlier test's recording of the same batch would bind nothing here
    return ranges


# ---------------------------------------------------------------- on the device


def test_sum_of_ones_is_exact(gpu, bound_ranges):
    x = vkml.tensor(np.ones(N, np.float32), device=gpu)
    assert x.sum().item() == 41943040.0
    assert bound_ranges and max(bound_ranges) <= gpu.max_storage_buffer_range


def test_sum_of_random_values_follows_the_contract_tree(gpu, random_values, bound_ranges):
    got = np.float32(vkml.tensor(random_values, device=gpu).sum().item())
    expected = contract_tree_sum(random_values)
    assert got.tobytes() == expected.tobytes(), (got, expected)
    assert max(bound_ranges) <= gpu.max_storage_buffer_range


def test_the_numpy_tree_is_the_cpu_backends_tree():
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 7, 64, 1000, 4097):
        values = rng.standard_normal(n, dtype=np.float32)
        cpu = np.float32(vkml.tensor(values, device="cpu").sum().item())
        assert cpu.tobytes() == contract_tree_sum(values).tobytes(), n


def test_elementwise_reads_and_writes_past_the_range(gpu, random_values, bound_ranges):
    y = (vkml.tensor(random_values, device=gpu) * 2 + 1).numpy()
    expected = random_values * np.float32(2) + np.float32(1)
    for i in (0, N // 2, RANGE_ELEMENTS - 1, RANGE_ELEMENTS, RANGE_ELEMENTS + 1, N - 1):
        assert y[i] == expected[i], f"element {i}: {y[i]} != {expected[i]}"
    assert np.array_equal(y, expected)
    assert max(bound_ranges) <= gpu.max_storage_buffer_range


def test_views_across_the_range_boundary(gpu, random_values):
    x = vkml.tensor(random_values, device=gpu)
    around = slice(RANGE_ELEMENTS - 5, RANGE_ELEMENTS + 5)
    assert np.array_equal(x[around].numpy(), random_values[around])
    assert np.array_equal(x[-3:].numpy(), random_values[-3:])
    window = np.float32(x[around].sum().item())
    assert window.tobytes() == contract_tree_sum(random_values[around]).tobytes()


def _scale_kernel():
    kb = KernelBuilder("scale_large")
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            out[i] = x[i] * 2.0
    return kb.finish()


def test_a_device_without_buffer_addresses_refuses_clearly(gpu):
    # As a buffer past the range on a device created without bufferDeviceAddress (a small one
    # stands in: on the H200 no single allocation can exceed its 4 GiB range).
    big = gpu.allocate(T.float32, 64)
    big.beyond_range, big.device_address = True, None
    out = gpu.allocate(T.float32, 64)
    with pytest.raises(DeviceError, match=r"buffer 'x' holds \d+ bytes, more than .*lacks bufferDeviceAddress"):
        gpu.run([Dispatch(_scale_kernel(), (1, 1, 1), {"x": big, "out": out}, {"n": 64})])


# ---------------------------------------------------------------- codegen and packing


@pytest.mark.parametrize("version", [(1, 3), (1, 4), (1, 5), (1, 6)])
def test_by_address_kernels_validate_for_every_spirv_version(version):
    features = dataclasses.replace(LAVAPIPE, spirv_version=version)
    compiled = compile_kernel(_scale_kernel(), features, by_address={0})
    asm = compiled.asm
    assert "OpMemoryModel PhysicalStorageBuffer64 GLSL450" in asm
    assert "OpCapability PhysicalStorageBufferAddresses" in asm and "OpCapability Int64" in asm
    assert ('OpExtension "SPV_KHR_physical_storage_buffer"' in asm) == (version < (1, 5))
    # The u32 element index is zero-extended to 64 bits before the address computation.
    assert "OpUConvert %ulong %v0" in asm and "Aligned 4" in asm
    # Only the addressed buffer loses its descriptor; float controls and NoContraction stay.
    assert "Binding 0" not in asm and "OpDecorate %buf1_out Binding 1" in asm
    assert "RoundingModeRTE 32" in asm and "NoContraction" in asm
    assert compiled.address_slots == ((0, 8),) and compiled.push_size == 16
    assert "int64" in compiled.features_used and "buffer_device_address" in compiled.features_used


def test_kernels_without_addresses_are_unchanged_and_cached_apart():
    kernel = _scale_kernel()
    plain = compile_kernel(kernel, LAVAPIPE)
    assert "OpMemoryModel Logical GLSL450" in plain.asm and "Int64" not in plain.asm
    assert plain.address_slots == () and plain.push_size == 4
    addressed = compile_kernel(kernel, LAVAPIPE, by_address=[0, 1])
    assert addressed is not plain and addressed is compile_kernel(kernel, LAVAPIPE, by_address={1, 0})
    assert addressed.address_slots == ((0, 8), (1, 16))
    data = addressed.pack_params({"n": 5}, {0: 0x1_0000_0040, 1: 0x2_0000_0000})
    assert np.frombuffer(data, np.uint64)[1:].tolist() == [0x1_0000_0040, 0x2_0000_0000]


def test_by_address_needs_the_features_and_the_push_constant_space():
    with pytest.raises(CompileError, match="bufferDeviceAddress"):
        compile_kernel(_scale_kernel(), dataclasses.replace(LAVAPIPE, buffer_device_address=False), by_address={0})
    with pytest.raises(CompileError, match="shaderInt64"):
        compile_kernel(_scale_kernel(), dataclasses.replace(LAVAPIPE, int64=False), by_address={0})
    with pytest.raises(CompileError, match=r"binding\(s\) \[2\]"):
        compile_kernel(_scale_kernel(), LAVAPIPE, by_address={2})
    kb = KernelBuilder("many_params")
    buffers = [kb.buffer(f"b{i}", T.float32, "readwrite") for i in range(9)]
    params = [kb.param(f"p{i}", T.uint32) for i in range(15)]
    with kb:
        buffers[0][global_id(0)] = buffers[1][params[0]]
    kernel = kb.finish()
    compile_kernel(kernel, LAVAPIPE)  # 60 bytes of parameters fit in 128
    with pytest.raises(CompileError, match="136 bytes of parameters and buffer addresses exceed"):
        compile_kernel(kernel, LAVAPIPE, by_address=range(9))


def test_push_constant_packer_places_addresses_after_the_parameters():
    packer = PushConstantPacker("k", (("n", T.uint32, 0),), 24, ((2, 8), (0, 16)))
    data = packer.pack({"n": 3}, {0: 1 << 40, 2: 7})
    assert np.frombuffer(data[:4], np.uint32)[0] == 3
    assert np.frombuffer(data[8:], np.uint64).tolist() == [7, 1 << 40]
    with pytest.raises(DeviceError, match=r"device addresses of bindings \[2, 0\] not given"):
        packer.pack({"n": 3}, {0: 1})
    with pytest.raises(CompileError, match="bad byte offset"):
        PushConstantPacker("k", (("n", T.uint32, 0),), 16, ((0, 4),))


def test_kernel_binaries_keep_their_address_slots_on_disk():
    compiled = compile_kernel(_scale_kernel(), LAVAPIPE, by_address={1})
    binary = KernelBinary.from_compiled(compiled)
    assert binary.address_slots == ((1, 8),)
    assert KernelBinary.from_bytes(binary.to_bytes()) == binary
