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
the UUID alone would not tell two Mesa versions apart). It is untrusted input like the kernel
entries (vkml/runtime/vulkan/kernel_cache.py): read without following a symlink or blocking, from a
regular file of at most ``MAX_PIPELINE_CACHE_BYTES``, wrapped in a checksum, and its Vulkan
header (length, version, vendor, device, UUID) is checked before the driver sees it (some
drivers crash on foreign data). A file that fails, or that the driver refuses, is removed.

An entry whose SPIR-V the driver rejects (a forged or damaged disk-cache entry) is removed and
compiled again from the IR (``Pipelines._build``).

A run that meets several kernels no cache has builds them side by side first
(``Pipelines.prepare``, up to ``config.compile_threads()`` threads): emitting the assembly is
Python and holds the GIL, but ``spirv-as``/``spirv-val`` run as subprocesses and the driver's
``vkCreateComputePipelines`` (cffi releases the GIL around it) run outside it, so one kernel's
tools and driver compile overlap the next kernel's emission. The threads share only what is
made for it: the LRU caches and the disk budget have locks, layouts are made under
``_layouts_lock``, counters go through ``counters.count``, and a ``VkPipelineCache`` created
without the externally-synchronized flag may be used by several threads at once (Vulkan spec).
The caller holds the device lock throughout, so no recording or submission runs meanwhile. A
kernel whose build fails there is left to ``lookup``, which builds it again in dispatch order and
raises as a run without threads would.

Memory is bounded (vkml/ir/lru.py): pipelines by IR text and the per-kernel-object entries
are LRU caches. A VkPipeline is destroyed only once nothing refers to its ``Pipeline`` (no
cache, no kept recording: the recordings hold the pipelines they bound) and every submission
made before that moment is complete (``Pipelines.reap``).

    >>> pipelines = Pipelines(logical, kernel_cache)    # doctest: +SKIP
    >>> entry = pipelines.lookup(kernel)               # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import os
import stat
import struct
import threading
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from ... import config
from ...errors import CompileError, DeviceError, DTypeError
from ...ir import lru
from ...ir import types as T
from ...ir.core import Kernel
from ..base import PARAM_CODES, Dispatch
from ..counters import count
from ..progress import compile_bar
from . import pipeline_stats
from .instance import check, vk
from .kernel_cache import (
    KernelBinary,
    KernelCache,
    disk_budget,
    kernel_ir_text,
    read_entry,
    remove_entry,
    warn_unwritable,
    write_atomically,
)
from .logical_device import LogicalDevice
from .physical_device import PHYSICAL_DEVICE_TYPE_CPU

PIPELINE_CACHE_MAGIC = b"VKMLPLC1"
MAX_PIPELINE_CACHE_BYTES = 256 << 20

# Push-constant encodings (``PARAM_CODES``); bool parameters travel as uint32 0/1 (SPIR-V bool has no size).
_PUSH_SIZES = {"f": 4, "e": 2, "i": 4, "I": 4, "q": 8, "d": 8}


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
            code = PARAM_CODES.get(dtype.name)
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


def _file_size(path: Path) -> int | None:
    """The size of the regular file at ``path`` (a link is not followed), or None."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return found.st_size if stat.S_ISREG(found.st_mode) else None


class PipelineCacheFile:
    """A ``VkPipelineCache`` loaded from (and saved back to) one file in the cache folder."""

    def __init__(self, logical: LogicalDevice, path: Path | None = None):
        self.logical = logical
        self.path = path if path is not None else self.default_path(logical)
        self.loaded_bytes = 0
        self.saved_digest: bytes | None = None  # the SHA-256 of the data the file holds, as far as we know
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
            self.saved_digest = None
            remove_entry(self.path)
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
        """The file's cache data for this device, or None; a file there that is not such data is removed."""
        data = read_entry(self.path, MAX_PIPELINE_CACHE_BYTES, touch=True)
        payload = None if data is None else self._payload(data)
        if payload is None and (data is not None or os.path.lexists(self.path)):
            remove_entry(self.path)
        elif payload is not None:
            self.saved_digest = data[len(PIPELINE_CACHE_MAGIC) : len(PIPELINE_CACHE_MAGIC) + 32]
        return payload

    def _payload(self, data: bytes) -> bytes | None:
        if data[: len(PIPELINE_CACHE_MAGIC)] != PIPELINE_CACHE_MAGIC:
            return None
        digest, payload = data[len(PIPELINE_CACHE_MAGIC) : len(PIPELINE_CACHE_MAGIC) + 32], data[40:]
        if hashlib.sha256(payload).digest() != digest:
            return None
        # Some drivers crash on foreign data instead of rejecting it: check the header ourselves. The
        # spec's VkPipelineCacheHeaderVersionOne: headerSize (32), headerVersion (ONE), vendorID,
        # deviceID, pipelineCacheUUID; equal bytes check all five, and the length check the size.
        if len(payload) < 32 or payload[:32] != self._expected_header():
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
        if len(payload) + 40 > MAX_PIPELINE_CACHE_BYTES:
            return  # it would not be read back
        digest = hashlib.sha256(payload).digest()
        wrapped_size = len(PIPELINE_CACHE_MAGIC) + len(digest) + len(payload)
        if digest == self.saved_digest and _file_size(self.path) == wrapped_size:
            self.dirty = False  # the file holds this data already (a warm start that built nothing new)
            return
        wrapped = PIPELINE_CACHE_MAGIC + digest + payload
        try:
            write_atomically(self.path, wrapped)
        except OSError as error:
            warn_unwritable(self.path.parent, error)
            return
        self.dirty = False
        self.saved_digest = digest
        disk_budget.added(self.path.parent.parent, len(wrapped))


class Pipelines:
    """Kernel → pipeline for one device: per kernel object, then per IR text, then compile."""

    def __init__(self, logical: LogicalDevice, kernels: KernelCache, cache_file: PipelineCacheFile | None = None):
        self.logical = logical
        self.kernels = kernels
        self.cache_file = cache_file if cache_file is not None else PipelineCacheFile(logical)
        # Both LRU-bounded (ir/lru.py); an evicted Pipeline is destroyed once unused (``reap``).
        # A CPU driver's pipelines are host memory: at most CPU_DRIVER_PIPELINES of them, and as few
        # entries (an entry keeps its pipeline alive).
        on_cpu = logical.info.properties.get("deviceType") == PHYSICAL_DEVICE_TYPE_CPU
        cap = lru.CPU_DRIVER_PIPELINES if on_cpu else None
        self._by_object = lru.LRU("kernel_entries", cap=cap)  # id(kernel) -> (weakref to it, KernelEntry)
        # IR text (and, for address variants, their bindings) -> Pipeline
        self._by_text = lru.LRU("pipelines", cap=cap)
        # What the GPU may still run: ``progress()`` gives (last serial submitted, last serial complete);
        # VulkanDevice sets it to its recordings'. Without it no submission is pending.
        self.progress = lambda: (0, 0)
        # (serial that must complete first, VkPipeline). Appended to without a lock (a finalizer may run
        # inside any allocation, reap's included); only ``reap`` takes entries out, under its lock.
        self._retired: collections.deque[tuple[int, object]] = collections.deque()
        self._reap_lock = threading.Lock()
        self._set_layouts: dict[int, object] = {}
        self._pipeline_layouts: dict[tuple[int, int], object] = {}
        self._layouts_lock = threading.RLock()  # one layout per key, also when ``prepare``'s threads ask at once
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
            pipeline = self._build(kernel, text, ())
            self._by_text.put(text, pipeline)
        return self._remember(kernel, pipeline)

    def _remember(self, kernel: Kernel, pipeline: Pipeline) -> KernelEntry:
        """The entry of ``kernel`` object, kept until the kernel dies or the LRU drops it."""
        plan = tuple((b.name, b.dtype, b.access != "write", b.access != "read") for b in kernel.buffers)
        entry = KernelEntry(pipeline, plan, kernel.name, weakref.ref(kernel))
        key = id(kernel)
        self._by_object.put(key, (weakref.ref(kernel, lambda _ref, key=key: self._forget(key, _ref)), entry))
        return entry

    def prepare(self, dispatches: Iterable[Dispatch]) -> None:
        """Build, several at a time, the pipelines of the dispatches' kernels that no cache holds.

        Dispatches with an empty grid are left out (a run skips them, compiling nothing). See the
        module docstring. Afterwards ``lookup`` finds each of them in the caches. Nothing is
        raised here: a kernel whose build failed is not cached, and its ``lookup`` raises the error.
        """
        by_object = self._by_object  # a kernel seen before is the common case: one dict test each
        new = [d.kernel for d in dispatches if id(d.kernel) not in by_object and all(d.grid)]
        if len(new) < 2:
            return
        threads = config.compile_threads()
        if threads < 2:
            return
        missing: dict[str, Kernel] = {}
        for kernel in new:
            text = kernel_ir_text(kernel)
            if text not in missing and text not in self._by_text:
                missing[text] = kernel
        if len(missing) < 2:
            return
        bar = compile_bar(len(missing))  # None unless VKML_PROGRESS=1 or stderr is a terminal
        with ThreadPoolExecutor(max_workers=min(threads, len(missing)), thread_name_prefix="vkml-compile") as pool:
            builds = [(text, kernel, pool.submit(self._build, kernel, text, ())) for text, kernel in missing.items()]
            if bar is not None:
                try:
                    for _ in as_completed(build for _, _, build in builds):
                        bar.update(1)
                finally:
                    bar.close()
        for text, kernel, build in builds:  # every build is done: the pool's exit waited for them
            if build.exception() is None:
                self._by_text.put(text, build.result())
                self._remember(kernel, build.result())

    def _forget(self, key: int, ref: weakref.ref) -> None:
        """A kernel died: drop its entry (unless the id already names a newer kernel's)."""
        found = self._by_object.get(key)
        if found is not None and found[0] is ref:
            self._by_object.pop(key)

    def _build(self, kernel: Kernel, text: str, by_address: tuple[int, ...]) -> Pipeline:
        """A pipeline for ``kernel``; an entry from the disk cache that the driver rejects is rebuilt from the IR."""
        binary = self.kernels.binary(kernel, text, by_address)
        try:
            return self.create(kernel.name, len(kernel.buffers), binary)
        except (DeviceError, CompileError):
            if not binary.from_disk:
                raise
        binary = self.kernels.binary(kernel, text, by_address, rebuild=True)
        return self.create(kernel.name, len(kernel.buffers), binary)

    def addressed(self, entry: KernelEntry, by_address: tuple[int, ...]) -> Pipeline:
        """The variant of ``entry``'s kernel that reaches bindings ``by_address`` through device addresses."""
        found = entry.addressed.get(by_address)
        if found is not None:
            return found
        kernel = entry.kernel()
        text = kernel_ir_text(kernel)
        pipeline = self._by_text.get((text, by_address))
        if pipeline is None:
            pipeline = self._build(kernel, text, by_address)
            self._by_text.put((text, by_address), pipeline)
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
        packer = PushConstantPacker(name, binary.push_constants, push_size, binary.address_slots)
        self.reap()
        handle = ffi.new("VkPipeline*")
        result = lib.vkCreateComputePipelines(device, self.cache_file.handle, 1, info, ffi.NULL, handle)
        lib.vkDestroyShaderModule(device, module[0], ffi.NULL)
        check(result, f"vkCreateComputePipelines ({name})")
        count("pipelines_created")
        self.cache_file.dirty = True
        pipeline = Pipeline(
            handle=handle[0],
            layout=layout,
            set_layouts=ffi.new("VkDescriptorSetLayout[1]", [self._set_layout(buffer_count)]),
            buffer_count=buffer_count,
            packer=packer,
            push_data=ffi.new("char[]", max(push_size, 4)),
        )
        # Runs when the last reference goes (any thread, any moment): it only queues the handle. Not at
        # exit: the driver releases what is left with the device.
        weakref.finalize(pipeline, _retire, weakref.ref(self), handle[0]).atexit = False
        return pipeline

    def retire(self, handle) -> None:
        """Queue ``handle`` for destruction once every submission made so far is complete."""
        self._retired.append((self.progress()[0], handle))

    def reap(self) -> None:
        """Destroy the retired pipelines that no pending submission can use any more."""
        if not self._retired:
            return
        completed = self.progress()[1]
        done, waiting = [], []
        with self._reap_lock:
            for _ in range(len(self._retired)):
                serial, handle = self._retired.popleft()
                if serial <= completed:
                    done.append(handle)
                else:
                    waiting.append((serial, handle))
            self._retired.extend(waiting)
        for handle in done:
            self.logical.lib.vkDestroyPipeline(self.logical.handle, handle, self.logical.ffi.NULL)
            count("pipelines_destroyed")

    def _set_layout(self, buffer_count: int):
        with self._layouts_lock:
            return self._set_layout_locked(buffer_count)

    def _set_layout_locked(self, buffer_count: int):
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
        with self._layouts_lock:
            return self._pipeline_layout_locked(buffer_count, push_size)

    def _pipeline_layout_locked(self, buffer_count: int, push_size: int):
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


def _retire(pipelines_ref: weakref.ref, handle) -> None:
    pipelines = pipelines_ref()
    if pipelines is not None:  # else the device is gone, and its pipelines with it
        pipelines.retire(handle)


def _save_at_exit(pipelines_ref: weakref.ref) -> None:
    pipelines = pipelines_ref()
    if pipelines is not None and pipelines.cache_file.dirty:
        pipelines.cache_file.save()
