"""Compute pipelines from compiled kernels, their layouts, push-constant packing, and a
``VkPipelineCache`` persisted on disk.

Layout convention (shared with codegen): descriptor set 0, binding ``i`` is the kernel's
``i``-th buffer (a storage buffer); parameters are one push-constant block laid out as the
``KernelBinary`` says. Set layouts are shared by every kernel with the same buffer count.

A kernel dispatched on a buffer larger than ``maxStorageBufferRange`` gets a variant pipeline
(``Pipelines.addressed``) compiled to reach that buffer through its device address, which
goes into the push-constant block after the parameters; its descriptor still binds (at most
the range) but the variant never reads it.

The pipeline-cache file is named by the device's ``pipelineCacheUUID``, vendor/device IDs,
driver version and a hash of the driver-info string (lavapipe 22.3's UUID is a constant, so
the UUID alone would not tell two Mesa versions apart). It is wrapped in a checksum; a damaged
or foreign file is ignored and replaced.

    >>> pipelines = Pipelines(logical, kernel_cache)    # doctest: +SKIP
    >>> entry = pipelines.lookup(kernel)               # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import hashlib
import struct
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from .. import config
from ..errors import CompileError, DeviceError, DTypeError
from ..ir import types as T
from ..ir.core import Kernel
from . import pipeline_stats
from .counters import counters
from .kernel_cache import KernelBinary, KernelCache, kernel_ir_text, write_atomically
from .vk_device import LogicalDevice
from .vk_instance import check, vk

PIPELINE_CACHE_MAGIC = b"VKMLPLC1"

# Push-constant encodings; bool parameters travel as uint32 0/1 (SPIR-V bool has no size).
_PUSH_CODES = {"float32": "f", "float16": "e", "int32": "i", "uint32": "I", "int64": "q", "bool": "I"}
_PUSH_SIZES = {"f": 4, "e": 2, "i": 4, "I": 4, "q": 8}


class PushConstantPacker:
    """Packs a dispatch's parameters (and buffer device addresses) into the kernel's push-constant
    bytes with one ``struct`` call.

    ``address_slots`` are ``(binding, offset)`` of uint64 addresses; they must follow the parameters.
    """

    def __init__(
        self,
        kernel_name: str,
        layout: tuple[tuple[str, T.DType, int], ...],
        size: int,
        address_slots: tuple[tuple[int, int], ...] = (),
    ):
        self.kernel_name = kernel_name
        self.names = tuple(name for name, _, _ in sorted(layout, key=lambda item: item[2]))
        self.address_bindings = tuple(binding for binding, _ in sorted(address_slots, key=lambda item: item[1]))
        self.size = size
        fmt, position = "<", 0
        for _, dtype, offset in sorted(layout, key=lambda item: item[2]):
            code = _PUSH_CODES.get(dtype.name)
            if code is None:
                raise CompileError(f"kernel {kernel_name!r}: no push-constant encoding for {dtype.name} parameters")
            if offset < position:
                raise CompileError(f"kernel {kernel_name!r}: push constants overlap at byte {offset}")
            fmt += "x" * (offset - position) + code
            position = offset + _PUSH_SIZES[code]
        for binding, offset in sorted(address_slots, key=lambda item: item[1]):
            if offset < position or offset % 8:
                raise CompileError(f"kernel {kernel_name!r}: address of binding {binding} at bad byte offset {offset}")
            fmt += "x" * (offset - position) + "Q"
            position = offset + 8
        if position > size:
            raise CompileError(f"kernel {kernel_name!r}: push constants end at byte {position}, past push_size {size}")
        fmt += "x" * (size - position)
        self.struct = struct.Struct(fmt)

    def pack(self, params: dict, addresses: dict[int, int] | None = None) -> bytes:
        """The push-constant bytes; ``addresses`` maps binding -> device address for the address slots."""
        try:
            values = [params[name] for name in self.names]
        except KeyError as missing:
            raise DeviceError(
                f"kernel {self.kernel_name!r}: parameter {missing.args[0]!r} not given "
                f"(given: {sorted(params)}, expected: {list(self.names)})"
            ) from None
        if self.address_bindings:
            given = addresses or {}
            if any(binding not in given for binding in self.address_bindings):
                raise DeviceError(
                    f"kernel {self.kernel_name!r}: device addresses of bindings {list(self.address_bindings)} "
                    f"not given (given: {sorted(given)})"
                )
            values += [given[binding] for binding in self.address_bindings]
        try:
            return self.struct.pack(*values)
        except (struct.error, TypeError, OverflowError) as exc:
            described = ", ".join(f"{n}={v!r}" for n, v in zip(self.names, values))
            raise DTypeError(f"kernel {self.kernel_name!r}: bad parameter value among {described}: {exc}") from None


@dataclass(eq=False)
class Pipeline:
    """A compute pipeline and what recording a dispatch of it needs."""

    handle: object
    layout: object
    set_layouts: object  # cdata VkDescriptorSetLayout[1] (for descriptor set allocation)
    buffer_count: int
    packer: PushConstantPacker
    push_data: object  # a reusable cdata char[push_size] for vkCmdPushConstants


@dataclass(eq=False)
class KernelEntry:
    """Per kernel object: its pipeline and the dispatch plan ``(name, dtype, reads, writes)`` per buffer."""

    pipeline: Pipeline
    plan: tuple[tuple[str, T.DType, bool, bool], ...]
    name: str
    kernel: weakref.ref  # for compiling variants
    addressed: dict = field(default_factory=dict)  # by_address bindings -> variant Pipeline


class PipelineCacheFile:
    """A ``VkPipelineCache`` loaded from (and saved back to) one file in the cache folder."""

    def __init__(self, logical: LogicalDevice, path: Path | None = None):
        self.logical = logical
        self.path = path if path is not None else self.default_path(logical)
        self.loaded_bytes = 0
        initial = self._read_valid()
        ffi = logical.ffi
        info = ffi.new("VkPipelineCacheCreateInfo*")
        info.sType = vk().VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO
        keep = None
        if initial:
            keep = ffi.from_buffer(initial)
            info.initialDataSize = len(initial)
            info.pInitialData = keep
            self.loaded_bytes = len(initial)
        handle = ffi.new("VkPipelineCache*")
        result = logical.lib.vkCreatePipelineCache(logical.handle, info, ffi.NULL, handle)
        if result != 0 and initial:  # the driver refused our data after all: start empty
            info.initialDataSize, info.pInitialData = 0, ffi.NULL
            self.loaded_bytes = 0
            result = logical.lib.vkCreatePipelineCache(logical.handle, info, ffi.NULL, handle)
        check(result, "vkCreatePipelineCache")
        del keep
        self.handle = handle[0]
        self.dirty = False

    @staticmethod
    def default_path(logical: LogicalDevice) -> Path:
        props = logical.info.properties
        driver = hashlib.sha256(props.get("driverInfo", "").encode()).hexdigest()[:12]
        name = (
            f"{props['pipelineCacheUUID'].hex()}-{props['vendorID']:04x}-{props['deviceID']:04x}-"
            f"{props['driverVersion']:08x}-{driver}.bin"
        )
        return config.cache_dir() / "pipelines" / name

    def _expected_header(self) -> bytes:
        """The first 32 bytes of this device's cache data (VkPipelineCacheHeaderVersionOne)."""
        props = self.logical.info.properties
        return struct.pack("<IIII", 32, 1, props["vendorID"], props["deviceID"]) + props["pipelineCacheUUID"]

    def _read_valid(self) -> bytes | None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return None
        if data[: len(PIPELINE_CACHE_MAGIC)] != PIPELINE_CACHE_MAGIC:
            return None
        digest, payload = data[len(PIPELINE_CACHE_MAGIC) : len(PIPELINE_CACHE_MAGIC) + 32], data[40:]
        if hashlib.sha256(payload).digest() != digest:
            return None
        # Some drivers crash on foreign data instead of rejecting it: check the header ourselves.
        if payload[:32] != self._expected_header():
            return None
        return payload

    def save(self) -> None:
        """Write the cache's current data to its file (atomically); errors are ignored."""
        ffi, lib = self.logical.ffi, self.logical.lib
        size = ffi.new("size_t*")
        if lib.vkGetPipelineCacheData(self.logical.handle, self.handle, size, ffi.NULL) != 0 or size[0] == 0:
            return
        data = ffi.new("char[]", size[0])
        if lib.vkGetPipelineCacheData(self.logical.handle, self.handle, size, data) < 0:
            return
        payload = bytes(ffi.buffer(data, size[0]))
        try:
            write_atomically(self.path, PIPELINE_CACHE_MAGIC + hashlib.sha256(payload).digest() + payload)
            self.dirty = False
        except OSError:
            pass


class Pipelines:
    """Kernel → pipeline for one device: per kernel object, then per IR text, then compile."""

    def __init__(self, logical: LogicalDevice, kernels: KernelCache, cache_file: PipelineCacheFile | None = None):
        self.logical = logical
        self.kernels = kernels
        self.cache_file = cache_file if cache_file is not None else PipelineCacheFile(logical)
        self._by_object: dict[int, tuple[weakref.ref, KernelEntry]] = {}
        self._by_text: dict = {}  # IR text (and, for address variants, their bindings) -> Pipeline
        self._set_layouts: dict[int, object] = {}
        self._pipeline_layouts: dict[tuple[int, int], object] = {}
        self.max_push = int(logical.limits["maxPushConstantsSize"])
        # Ask the driver to keep register counts and the like (runtime/pipeline_stats.py); set it before
        # the pipelines of interest are created. Only where the device was created with the feature.
        self.capture_statistics = False
        atexit.register(_save_at_exit, weakref.ref(self))

    def lookup(self, kernel: Kernel) -> KernelEntry:
        """The pipeline and dispatch plan for ``kernel`` (fast when the same object is seen again)."""
        found = self._by_object.get(id(kernel))
        if found is not None and found[0]() is kernel:
            return found[1]
        text = kernel_ir_text(kernel)
        pipeline = self._by_text.get(text)
        if pipeline is None:
            binary = self.kernels.binary(kernel, text)
            pipeline = self.create(kernel.name, len(kernel.buffers), binary)
            self._by_text[text] = pipeline
        plan = tuple((b.name, b.dtype, b.access != "write", b.access != "read") for b in kernel.buffers)
        entry = KernelEntry(pipeline, plan, kernel.name, weakref.ref(kernel))
        key = id(kernel)
        self._by_object[key] = (weakref.ref(kernel, lambda _ref, key=key: self._by_object.pop(key, None)), entry)
        return entry

    def addressed(self, entry: KernelEntry, by_address: tuple[int, ...]) -> Pipeline:
        """The variant of ``entry``'s kernel that reaches bindings ``by_address`` through device addresses."""
        found = entry.addressed.get(by_address)
        if found is not None:
            return found
        kernel = entry.kernel()
        text = kernel_ir_text(kernel)
        pipeline = self._by_text.get((text, by_address))
        if pipeline is None:
            binary = self.kernels.binary(kernel, text, by_address)
            pipeline = self._by_text[(text, by_address)] = self.create(kernel.name, len(kernel.buffers), binary)
        entry.addressed[by_address] = pipeline
        return pipeline

    def create(self, name: str, buffer_count: int, binary: KernelBinary) -> Pipeline:
        """A compute pipeline from SPIR-V; the driver compile goes through the persistent cache."""
        if binary.push_size > self.max_push:
            raise CompileError(
                f"kernel {name!r} needs {binary.push_size} bytes of push constants; the device allows {self.max_push}"
            )
        api = vk()
        ffi, lib, device = self.logical.ffi, self.logical.lib, self.logical.handle
        push_size = (binary.push_size + 3) // 4 * 4
        layout = self._pipeline_layout(buffer_count, push_size)

        module_info = ffi.new("VkShaderModuleCreateInfo*")
        module_info.sType = api.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
        code = ffi.from_buffer(binary.spirv)
        module_info.codeSize = len(binary.spirv)
        module_info.pCode = ffi.cast("uint32_t *", code)
        module = ffi.new("VkShaderModule*")
        check(lib.vkCreateShaderModule(device, module_info, ffi.NULL, module), f"vkCreateShaderModule ({name})")

        entry_name = ffi.new("char[]", binary.entry_point.encode())
        info = ffi.new("VkComputePipelineCreateInfo*")
        info.sType = api.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
        info.stage.sType = api.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
        info.stage.stage = api.VK_SHADER_STAGE_COMPUTE_BIT
        info.stage.module = module[0]
        info.stage.pName = entry_name
        info.layout = layout
        if self.capture_statistics and pipeline_stats.supported(self.logical):
            info.flags = api.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
        handle = ffi.new("VkPipeline*")
        result = lib.vkCreateComputePipelines(device, self.cache_file.handle, 1, info, ffi.NULL, handle)
        lib.vkDestroyShaderModule(device, module[0], ffi.NULL)
        check(result, f"vkCreateComputePipelines ({name})")
        counters["pipelines_created"] += 1
        self.cache_file.dirty = True
        return Pipeline(
            handle=handle[0],
            layout=layout,
            set_layouts=ffi.new("VkDescriptorSetLayout[1]", [self._set_layout(buffer_count)]),
            buffer_count=buffer_count,
            packer=PushConstantPacker(name, binary.push_constants, push_size, binary.address_slots),
            push_data=ffi.new("char[]", max(push_size, 4)),
        )

    def _set_layout(self, buffer_count: int):
        found = self._set_layouts.get(buffer_count)
        if found is None:
            api = vk()
            bindings = [
                api.VkDescriptorSetLayoutBinding(
                    binding=i,
                    descriptorType=api.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                    descriptorCount=1,
                    stageFlags=api.VK_SHADER_STAGE_COMPUTE_BIT,
                )
                for i in range(buffer_count)
            ]
            info = api.VkDescriptorSetLayoutCreateInfo(bindingCount=buffer_count, pBindings=bindings or None)
            found = self._set_layouts[buffer_count] = api.vkCreateDescriptorSetLayout(self.logical.handle, info, None)
        return found

    def _pipeline_layout(self, buffer_count: int, push_size: int):
        key = (buffer_count, push_size)
        found = self._pipeline_layouts.get(key)
        if found is None:
            api = vk()
            ranges = []
            if push_size:
                ranges = [api.VkPushConstantRange(stageFlags=api.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_size)]
            info = api.VkPipelineLayoutCreateInfo(
                setLayoutCount=1,
                pSetLayouts=[self._set_layout(buffer_count)],
                pushConstantRangeCount=len(ranges),
                pPushConstantRanges=ranges or None,
            )
            found = self._pipeline_layouts[key] = api.vkCreatePipelineLayout(self.logical.handle, info, None)
        return found

    def save_cache(self) -> None:
        """Persist the pipeline cache now (it is also saved at interpreter exit when it changed)."""
        self.cache_file.save()


def _save_at_exit(pipelines_ref: weakref.ref) -> None:
    pipelines = pipelines_ref()
    if pipelines is not None and pipelines.cache_file.dirty:
        pipelines.cache_file.save()
