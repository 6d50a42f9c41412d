"""The Vulkan backend: ``VulkanDevice`` ("vulkan:N") and its buffers.

    >>> from vkml.runtime.vulkan import device, vulkan_device_reports
    >>> dev = device(0)                                   # doctest: +SKIP
    >>> buf = dev.allocate(float32, 4)                    # doctest: +SKIP
    >>> dev.upload(buf, np.arange(4, dtype=np.float32))   # doctest: +SKIP
    >>> dev.download(buf)                                 # doctest: +SKIP
    array([0., 1., 2., 3.], dtype=float32)

``run`` records every dispatch of a batch into one command buffer and makes one
``vkQueueSubmit``, and returns without waiting (``VKML_ASYNC=0``, or a run with timestamps,
waits). The host waits only where it must (vkml/runtime/vulkan/recordings.py keeps the fences):

- a download waits for the submission that wrote the buffer (``VulkanBuffer.ready_serial``);
- an upload never waits for runs: where submitted work may still use the memory it writes, it
  is queued behind that work instead (``Transfers.upload_queued``: the data is staged, the
  copy submitted with a serial, which then is the buffer's ``ready_serial``), and only the
  staging memory of a transfer slot still in flight is waited for. An upload into a new
  buffer (``upload_new``, what ``vkml.tensor`` and ``.to(device)`` do) gets memory no
  submitted work may still use where such a range is free, and writes it straight through the
  mapping, while the GPU runs; it is queued only where it must reuse a range freed in flight
  (per range: ``MemoryBlock.freed``), or where the memory is not mapped. An upload into an
  existing buffer is queued while any run that bound its memory block may be in flight
  (``MemoryBlock.last_use``);
- freeing a memory block, reusing a command buffer still in flight, replacing the descriptor
  pools and ``synchronize()`` wait likewise.

Threads: every method holds the device's lock (``Device.lock``), but for the host's waits of
downloads, ``write_after`` and ``synchronize()``, which wait on their fence without it
(``Recordings.claim``), so that other threads record and submit meanwhile. (An upload waits,
under the lock, only for a transfer slot's previous copy.)

Device memory needs no wait to be reused by later work: runs on the one queue are ordered by
the barrier that ends each of them. A compute→compute barrier goes in only where a dispatch reads or writes a
buffer an earlier dispatch of the batch wrote, or writes one an earlier dispatch read. Every
run ends with one barrier that makes its writes visible to the host, to transfers and to
later runs (not counted in ``counters['barriers']``, which counts hazard barriers). A batch
equal to a recent one (same kernels, grids and parameters on the same memory: a loop over a
graph of one structure) submits that run's command buffer again instead of recording
(vkml/runtime/vulkan/recordings.py); a realize of a cached plan finds it by the plan's key, before
making any dispatch (``run_again``).

Storage: bool elements are one uint32 (0/1) each on the device, converted on upload and
download; float16 is 2 bytes.

Buffers beyond ``maxStorageBufferRange`` (lavapipe: 128 MiB): a descriptor never binds more
than that range, so a dispatch that gives a kernel such a buffer runs a variant of the kernel
compiled with that binding reached through its buffer device address (bufferDeviceAddress,
core in Vulkan 1.2), which ``run`` pushes as a push constant; the descriptor still binds the
first ``maxStorageBufferRange`` bytes, unused. Every other buffer stays on its descriptor:
lavapipe runs elementwise kernels slower by address, a discrete NVIDIA GPU equally fast
(``bench/bench_addresses.py``; see ``vkml.codegen``), and addresses take push-constant space (8 of lavapipe's 128 bytes
each). A device without bufferDeviceAddress raises ``DeviceError`` for such a dispatch. The
choice is per dispatch, from the buffers' sizes, so one kernel runs on small and huge tensors
alike. (Where maxMemoryAllocationSize is below maxStorageBufferRange, as on NVIDIA's driver,
no buffer ever goes by address.)
"""

from __future__ import annotations

import collections
import itertools
import operator
import threading
from contextlib import contextmanager

import numpy as np

from ... import config
from ...errors import DeviceError, DTypeError, ShapeError
from ...ir import types as T
from ..base import Buffer, Device, Dispatch
from ..counters import counters
from . import template_store
from .descriptors import DescriptorSets
from .instance import vk
from .kernel_cache import KernelCache
from .logical_device import LogicalDevice
from .memory import PLACED_KEPT, Allocation, MemoryBlock, MemoryPool
from .pipelines import Pipelines
from .recordings import Recorded, Recordings, fingerprint
from .reports import device_rank, physical_device_count, physical_device_info, vulkan_device_reports
from .template_store import TemplateStore
from .timestamps import TimestampQueries
from .transfers import Transfers

__all__ = [
    "VulkanBuffer",
    "VulkanDevice",
    "device",
    "devices",
    "device_count",
    "device_rank",
    "vulkan_device_reports",
]

# How each dtype is stored in device memory (bool widens to one uint32 per element); the
# others are added as they are first met.
_STORAGE_NUMPY = {T.bool_.name: np.dtype(np.uint32)}


def storage_dtype(dtype: T.DType) -> np.dtype:
    """The numpy dtype of ``dtype``'s elements as they sit in Vulkan memory."""
    found = _STORAGE_NUMPY.get(dtype.name)
    if found is None:  # not .get(name, dtype.np): that builds a numpy dtype for every buffer
        found = _STORAGE_NUMPY[dtype.name] = dtype.np
    return found


def _buffer_fields(device: VulkanDevice, dtype: T.DType, numel: int, storage: np.dtype, allocation) -> dict:
    """A ``VulkanBuffer``'s attributes but ``allocation``: they depend on its memory range, dtype and size
    alone, so a realize's output on a range a buffer of its kind had before copies them (``allocate_each``)."""
    nbytes = numel * storage.itemsize
    limit = device.max_storage_buffer_range
    if allocation is not None:
        block, offset = allocation.block, allocation.offset
        size, hazard_key = min(nbytes, limit), (block.id, offset)
    else:
        block, offset = device._empty_block(), 0
        size, hazard_key = block.size, None  # nothing to read or write: never a hazard
    return {
        "device": device,
        "dtype": dtype,
        "numel": numel,
        "storage": storage,
        "device_nbytes": nbytes,
        "block": block,
        "hazard_key": hazard_key,
        "ready_serial": 0,  # the submission that last wrote it (a download waits for it)
        "binding": (block.buffer, offset, size),
        "binding_key": (block.id, offset, size),
        # Past the range a kernel must reach the buffer by device address (see the module docstring).
        "beyond_range": nbytes > limit,
        "device_address": None if block.device_address is None else block.device_address + offset,
    }


_ready_serial_of = operator.attrgetter("ready_serial")
_AGAIN_KEYS = ("recordings_reused", "submissions", "dispatches", "barriers")  # a run_again's counts
_add = operator.add
_repeat = itertools.repeat
_consume = collections.deque  # deque(iterator, 0) runs it to its end, keeping nothing

# Bounds the attribute sets ``allocate_each`` keeps per memory range: a loop settles on a few ranges.
BUFFER_TEMPLATES = 4096
_new_object = object.__new__
_NOT_PLACED = itertools.repeat(None)  # allocate_each without a plan's placement


class VulkanBuffer(Buffer):
    """``numel`` elements of ``dtype`` in a range of a device memory block; freed when dropped."""

    def __init__(self, device: VulkanDevice, dtype: T.DType, numel: int, for_host: bool = False):
        storage = storage_dtype(dtype)
        nbytes = numel * storage.itemsize
        # (numel, dtype): the pool spells it out only in an error message
        self.allocation = allocation = device.memory.allocate(nbytes, (numel, dtype), for_host) if nbytes else None
        self.__dict__.update(_buffer_fields(device, dtype, numel, storage, allocation))

    def __del__(self):
        # Not weakref.finalize: that costs about 2 µs a buffer, and every realize allocates its outputs.
        # The pool only queues the range (this may run inside the garbage collector, see MemoryPool.release).
        try:
            if self.allocation is not None:
                self.device.memory.release(self.allocation)
        except AttributeError:  # __init__ raised, or the interpreter is ending (the driver takes the memory back)
            pass

    def __repr__(self) -> str:
        return f"VulkanBuffer({self.device.name}, {self.dtype.name}, numel={self.numel})"


class VulkanBufferAlias(VulkanBuffer):
    """Elements ``[start, start + numel)`` of another buffer's memory, bound at their own offset.

    It holds no memory (the parent is kept alive and frees it) and is only read by kernels
    (``Device.alias``); ``start`` is a multiple of the pool's binding alignment.
    """

    def __init__(self, parent: VulkanBuffer, start: int, numel: int):
        if isinstance(parent, VulkanBufferAlias):  # one level, over the memory's owner
            parent, start = parent.parent, parent.start + start
        device = parent.device
        self.parent, self.start = parent, start
        self.device, self.dtype, self.numel, self.storage = device, parent.dtype, numel, parent.storage
        self.device_nbytes = numel * self.storage.itemsize
        block, offset = parent.block, parent.allocation.offset + start * self.storage.itemsize
        self.block = block
        self.allocation = Allocation(block, offset, self.device_nbytes, 0)  # for transfers; never released
        self.hazard_key = parent.hazard_key  # the parent's writes are this alias's
        self.ready_serial = parent.ready_serial
        size = min(self.device_nbytes, device.max_storage_buffer_range)
        self.binding = (block.buffer, offset, size)
        self.binding_key = (block.id, offset, size)
        self.beyond_range = self.device_nbytes > device.max_storage_buffer_range
        self.device_address = None if block.device_address is None else block.device_address + offset

    def __del__(self):
        pass  # the parent's memory

    def __repr__(self) -> str:
        return f"VulkanBufferAlias({self.device.name}, {self.dtype.name}, numel={self.numel}, start={self.start})"


class VulkanDevice(Device):
    """One Vulkan physical device opened for compute: memory, transfers, pipelines, submission.

    ``compiler`` (default: ``vkml.codegen.compile_kernel``) turns a ``Kernel`` and this
    device's ``DeviceFeatures`` into a compiled kernel; tests pass their own.
    """

    kind = "vulkan"

    def __init__(self, index: int, compiler=None, block_size: int | None = None):
        if not 0 <= index < physical_device_count():
            raise DeviceError(f"no Vulkan device {index}: {physical_device_count()} found")
        super().__init__()
        self.index = index
        self.name = f"vulkan:{index}"
        info = physical_device_info(index)
        self.logical = LogicalDevice(info)
        self.features = self.logical.features
        self.enabled_features = self.logical.enabled_features
        self.enabled_extensions = self.logical.enabled_extensions
        self.limits = dict(info.limits)
        self.max_storage_buffer_range = self.logical.max_storage_buffer_range
        self._max_grid = tuple(int(v) for v in info.limits["maxComputeWorkGroupCount"])
        self.memory = MemoryPool(self.logical, block_size)
        self.transfers = Transfers(self.logical, self.memory)
        self.kernels = KernelCache(self.features, compiler)
        self.template_store = TemplateStore(self.kernels)  # lowered kernels on disk (vkml/schedule/template_disk.py)
        template_store.prefetch()  # the sources' hashes, which the first realize's cache keys need
        self.pipelines = Pipelines(self.logical, self.kernels)
        self.descriptors = DescriptorSets(self.logical)
        self.recordings = Recordings(self.logical)
        # An evicted pipeline is destroyed only after the submissions that may use it (runtime/pipelines.py).
        self.pipelines.progress = lambda recordings=self.recordings: (recordings.submitted, recordings.completed)
        self.memory.wait_for = self.recordings.wait_for
        self.memory.completed = lambda recordings=self.recordings: recordings.completed
        self.timestamp_queries = TimestampQueries(self.logical)
        self._timestamp_sinks: list[list] = []  # see timestamped()
        self._empty: MemoryBlock | None = None
        self._prepared_sizes: dict = {}  # allocate_each's: a plan's sizes -> _prepare_sizes of them
        self._buffer_templates: dict = {}  # (block id, offset, numel, dtype) -> _buffer_fields of a buffer there
        self._build_barriers()

    def _build_barriers(self) -> None:
        api = vk()
        ffi = self.logical.ffi
        shader_rw = api.VK_ACCESS_SHADER_READ_BIT | api.VK_ACCESS_SHADER_WRITE_BIT
        self._hazard_barrier = ffi.new("VkMemoryBarrier*")
        self._hazard_barrier.sType = api.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        self._hazard_barrier.srcAccessMask = shader_rw
        self._hazard_barrier.dstAccessMask = shader_rw
        self._final_barrier = ffi.new("VkMemoryBarrier*")
        self._final_barrier.sType = api.VK_STRUCTURE_TYPE_MEMORY_BARRIER
        self._final_barrier.srcAccessMask = api.VK_ACCESS_SHADER_WRITE_BIT
        self._final_barrier.dstAccessMask = (
            api.VK_ACCESS_HOST_READ_BIT | shader_rw | api.VK_ACCESS_TRANSFER_READ_BIT | api.VK_ACCESS_TRANSFER_WRITE_BIT
        )
        self._compute_stage = api.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        self._after_stages = (
            api.VK_PIPELINE_STAGE_HOST_BIT
            | api.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
            | api.VK_PIPELINE_STAGE_TRANSFER_BIT
        )
        self._bind_point = api.VK_PIPELINE_BIND_POINT_COMPUTE
        self._push_stage = api.VK_SHADER_STAGE_COMPUTE_BIT

    def _empty_block(self) -> MemoryBlock:
        """A tiny block that zero-element buffers bind (a descriptor cannot bind nothing)."""
        if self._empty is None:
            self._empty = MemoryBlock(
                self.logical, self.memory.alignment, self.memory.choice.device_type, mapped=False, dedicated=True
            )
        return self._empty

    # ------------------------------------------------------------------ memory

    def allocate(self, dtype: T.DType, numel: int) -> VulkanBuffer:
        """A buffer of ``numel`` elements (contents undefined until written). Zero elements is fine."""
        # A realize asks for an int and a DType: the checks are for anything else.
        if numel.__class__ is not int or numel < 0 or dtype.__class__ is not T.DType:
            if not isinstance(dtype, T.DType):
                raise DTypeError(f"allocate: dtype must be a vkml dtype, got {dtype!r}")
            if isinstance(numel, bool) or int(numel) != numel or numel < 0:
                raise ShapeError(f"allocate: element count must be a non-negative integer, got {numel!r}")
            numel = int(numel)
        with self.lock:  # the memory pool's free lists
            return VulkanBuffer(self, dtype, numel)

    def allocate_each(self, sizes: tuple, placement: list | None = None) -> list[VulkanBuffer]:
        # A realize's buffers under one hold of the lock, without allocate's checks (a plan sized them).
        # Every realize runs this: a buffer on a range a buffer of the same dtype and size had before (a
        # loop's outputs, step after step) copies that one's attributes instead of making them.
        # ``placement``: the plan's own, the ranges each buffer had on its last replays (``MemoryPool.take_placed``).
        with self.lock:
            memory = self.memory
            if memory._pending:
                memory._drain()
            prepared = self._prepared_sizes.get(sizes)
            if prepared is None:
                prepared = self._prepare_sizes(sizes)
            take, templates = memory.take_placed, self._buffer_templates
            buffers = []
            for (dtype, numel, nbytes, reserved), placed in zip(prepared, placement or _NOT_PLACED):
                allocation = take(nbytes, reserved, placed) if reserved else None
                if allocation is None:
                    buffer = VulkanBuffer(self, dtype, numel)
                    if placed is not None and buffer.allocation is not None:  # first fit: the range to keep
                        placed.insert(0, (buffer.block.id, buffer.allocation.offset))
                        del placed[PLACED_KEPT:]
                    buffers.append(buffer)
                    continue
                key = (allocation.block.id, allocation.offset, numel, dtype)
                fields = templates.get(key)
                if fields is None:
                    if len(templates) >= BUFFER_TEMPLATES:
                        templates.clear()
                    fields = templates[key] = _buffer_fields(self, dtype, numel, storage_dtype(dtype), allocation)
                buffer = _new_object(VulkanBuffer)
                buffer.__dict__.update(fields)
                buffer.allocation = allocation
                buffers.append(buffer)
            return buffers

    def _prepare_sizes(self, sizes: tuple) -> tuple:
        """(dtype, numel, bytes, bytes reserved) of each of ``sizes``; reserved 0 where the pool's
        ``take_sized`` never serves it (an empty or large buffer). Kept for the next realize of the plan."""
        memory, prepared = self.memory, []
        for dtype, numel in sizes:
            nbytes = numel * storage_dtype(dtype).itemsize
            reserved = (nbytes + memory.alignment - 1) // memory.alignment * memory.alignment
            prepared.append((dtype, numel, nbytes, reserved if 0 < reserved <= memory.block_size // 2 else 0))
        if len(self._prepared_sizes) >= BUFFER_TEMPLATES:
            self._prepared_sizes.clear()
        prepared = self._prepared_sizes[sizes] = tuple(prepared)
        return prepared

    def alias_alignment(self, dtype: T.DType) -> int:
        # Descriptors bind at multiples of minStorageBufferOffsetAlignment; 16 bytes at least, the
        # widest vector a kernel loads (by address too).
        nbytes = max(16, int(self.limits["minStorageBufferOffsetAlignment"]))
        return max(1, nbytes // storage_dtype(dtype).itemsize)

    def alias(self, buffer: VulkanBuffer, start: int, numel: int) -> VulkanBuffer | None:
        if buffer.allocation is None or numel == 0:
            return None
        return VulkanBufferAlias(buffer, start, numel)

    @property
    def largest_allocation_nbytes(self) -> int:
        """The device's largest single allocation, within its buffer size limit and memory heap."""
        return min(self.memory.max_allocation, self.memory.max_buffer, self.memory.heap_size)

    def memory_stats(self) -> dict[str, int]:
        """``allocated_bytes`` (live buffers), ``peak_bytes`` (their high-water mark), ``reserved_bytes`` (driver memory held)."""
        with self.lock:
            return self.memory.stats()

    def reset_peak_memory(self) -> None:
        """Start new high-water marks from the bytes allocated and reserved now."""
        with self.lock:
            self.memory.reset_peak()

    def empty_cache(self) -> int:
        """Return the memory blocks no live buffer uses to the driver; the bytes released."""
        with self.lock:
            return self.memory.empty_cache()

    def upload(self, buffer: VulkanBuffer, array: np.ndarray) -> None:
        self._check_buffer(buffer, "upload")
        array = np.asarray(array)
        if array.dtype != buffer.dtype.np:
            raise DTypeError(f"upload: array of {array.dtype} into a {buffer.dtype.name} buffer on {self.name}")
        if array.size != buffer.numel:
            raise ShapeError(f"upload: array of {array.size} elements into a buffer of {buffer.numel} on {self.name}")
        if buffer.numel == 0:
            return
        buffer.__dict__.pop("uploaded_range", None)  # the values the host saw at its upload (schedule/checks.py)
        data = np.ascontiguousarray(array.reshape(-1), dtype=buffer.storage)
        with self.lock:  # the staging memory, the serials
            # Any run that bound the buffer's memory block may still use the buffer: runs submitted
            # from now on cannot (they would bind this buffer, which the caller is writing).
            self._write(buffer, data, buffer.block.last_use)

    def upload_new(self, dtype: T.DType, array: np.ndarray) -> VulkanBuffer:
        """A new buffer holding ``array`` (of ``dtype``'s storage, as ``upload`` takes it): its
        memory is a range no submitted work may still use where one is free, written at once."""
        array = np.asarray(array)
        if array.dtype != dtype.np:
            raise DTypeError(f"upload: array of {array.dtype} into a {dtype.name} buffer on {self.name}")
        with self.lock:  # the memory pool, the staging memory, the serials
            buffer = VulkanBuffer(self, dtype, array.size, for_host=True)
            if array.size:
                data = np.ascontiguousarray(array.reshape(-1), dtype=buffer.storage)
                self._write(buffer, data, buffer.allocation.busy)
        return buffer

    def _write(self, buffer: VulkanBuffer, data: np.ndarray, busy: int) -> None:
        """Write ``data`` into ``buffer``, whose memory submission ``busy`` may be the last to use:
        through the mapping if that one is complete, else by a copy queued behind it. Under the lock."""
        recordings = self.recordings
        if self.memory.choice.direct_upload and busy <= recordings.completed:
            if recordings.pending:
                counters["waits_skipped"] += 1  # written while runs that do not use this memory go on
            self.transfers.upload(buffer.allocation, data)
            return
        serial = self.transfers.upload_queued(buffer.allocation, data, recordings)
        buffer.ready_serial = serial  # a download, or a later write, waits for the copy
        buffer.block.last_use = max(buffer.block.last_use, serial)

    def write_after(self, buffer: VulkanBuffer, words: np.ndarray, serial: int) -> None:
        """Write ``words`` (as many as ``buffer`` holds, its storage dtype) into ``buffer`` once
        submission ``serial``, the last that reads it, is complete (vkml.jit's scalars: a wait for
        a known serial, then a write through the mapping, costs less than ``upload``'s queued
        copy behind every run that touched the buffer's memory block)."""
        with self.lock:  # the staging memory; the wait for the serial (``_wait_for_host``) is rare
            claim = self.recordings.claim(serial)
            if claim is None:
                self.transfers.upload(buffer.allocation, words)
                return
        self.recordings.wait_claimed(claim, self.lock)
        with self.lock:
            self.transfers.upload(buffer.allocation, words)

    def copy_queued(self, pairs: list) -> None:
        """Copy each (source, target) buffer pair of ``pairs`` (as many elements, one dtype) on the
        device, in one submission behind every run so far, which later runs see: vkml.jit's new
        arguments into the buffers its kept command buffers bind, so that a replay does not record
        anew for a new batch."""
        copies = []
        for source, target in pairs:
            if source.dtype is not target.dtype or source.numel != target.numel:
                raise ShapeError(f"copy_queued: {source!r} into {target!r} on {self.name}")
            if source.device_nbytes:
                copies.append((source.allocation, target.allocation, source.device_nbytes))
        if not copies:
            return
        with self.lock:  # the transfer slots, the serials
            serial = self.transfers.copy_queued(copies, self.recordings)
            for source, target in pairs:
                target.ready_serial = serial
                for block in (source.block, target.block):  # no host write reuses either range before the copy
                    block.last_use = max(block.last_use, serial)

    def ready_now(self, buffer: VulkanBuffer) -> bool:
        """Whether the run that wrote ``buffer`` last is complete (asked without waiting), and its
        memory is mapped: a read of it then copies without a submission or a wait."""
        with self.lock:
            return self.memory.mapped and self.recordings.done(buffer.ready_serial)

    def download_if_ready(self, buffers: list[VulkanBuffer]) -> list[np.ndarray] | None:
        """``download`` of each of ``buffers`` (this device's) if ``ready_now`` holds for all of them,
        else None: under one hold of the lock, one question to the fences, no wait (vkml.jit's
        replays read their earlier replays' value checks so, every replay)."""
        with self.lock:
            recordings = self.recordings
            if not self.memory.mapped or not recordings.done(max(map(_ready_serial_of, buffers))):
                return None
            if recordings.pending:  # as download's claim counts a read that later work does not hold up
                counters["waits_skipped"] += len(buffers)
            arrays = []
            for buffer in buffers:
                out = np.empty(buffer.numel, dtype=buffer.storage)
                if buffer.numel:
                    self.transfers.download(buffer.allocation, out)
                arrays.append(out != 0 if buffer.dtype is T.bool_ else out)
            return arrays

    @property
    def writes_mapped(self) -> bool:
        """Whether the host writes buffer memory through a mapping: an upload submits no copy."""
        return self.memory.choice.direct_upload

    @property
    def last_submission(self) -> int:
        """The serial of the latest run submitted (``write_after`` takes it)."""
        return self.recordings.submitted

    def download(self, buffer: VulkanBuffer) -> np.ndarray:
        self._check_buffer(buffer, "download")
        out = np.empty(buffer.numel, dtype=buffer.storage)
        if buffer.numel:
            with self.lock:  # the staging memory; as _wait_for_host, the wait itself without the lock
                claim = self.recordings.claim(buffer.ready_serial)
                if claim is None:
                    self.transfers.download(buffer.allocation, out)
            if claim is not None:
                self.recordings.wait_claimed(claim, self.lock)
                with self.lock:
                    self.transfers.download(buffer.allocation, out)
        if buffer.dtype is T.bool_:
            return out != 0
        return out

    def _wait_for_host(self, serial_now) -> None:
        """Before the host touches memory: wait for submission ``serial_now()`` (read under the lock)
        unless it is complete. The wait itself leaves the lock to other threads (``Recordings.claim``)."""
        with self.lock:
            claim = self.recordings.claim(serial_now())
        if claim is not None:
            self.recordings.wait_claimed(claim, self.lock)

    def synchronize(self) -> None:
        """Return once every submitted run is complete (no need before reading results: reads wait)."""
        recordings = self.recordings
        with self.lock:
            claim = recordings.claim(recordings.submitted)
        if claim is not None:
            recordings.wait_claimed(claim, self.lock)

    def _check_buffer(self, buffer, what: str) -> None:
        if not isinstance(buffer, VulkanBuffer) or buffer.device is not self:
            where = getattr(getattr(buffer, "device", None), "name", type(buffer).__name__)
            raise DeviceError(f"{what}: buffer on {where} used with {self.name}")

    # ------------------------------------------------------------------ kernels

    def run(self, dispatches: list[Dispatch], timestamps: bool = False, key=None) -> list[float] | None:
        """Record all dispatches into one command buffer and submit it once. See the module docstring.

        With ``timestamps`` (or inside ``timestamped()``) it returns each dispatch's GPU seconds
        (``vkml.runtime.vulkan.timestamps``; 0.0 for a dispatch with an empty grid), else None.
        ``key``: the caller's own fingerprint of the batch, in place of ``fingerprint(dispatches)``;
        it must differ whenever a kernel, grid, buffer's memory range or dtype, or parameter does
        (vkml.jit's replays know which few entries change, vkml/frontend/jit.py).
        """
        with self.lock:  # command buffers, fences, descriptor pools and the pipeline caches are the device's
            return self._run(dispatches, timestamps, key)

    def run_again(self, key, written) -> bool:
        """Submit again the command buffer a ``run(dispatches, key=key)`` recorded, if it is kept, and
        return True; else do nothing and return False (the caller then makes the dispatches and
        runs them with that key). ``written``: buffers the dispatches write (more do no harm:
        reads of them wait for this submission). Runs inside ``timestamped()`` are never replayed so.

        What a realize whose plan and buffers repeat does instead of ``run`` (vkml/schedule/scheduler.py):
        the same submission, without making its dispatches or their ``fingerprint``.
        """
        # Every replayed realize runs this: _run's preamble and _submit, _finish_run written out.
        with self.lock:
            if self._timestamp_sinks:
                return False
            recordings = self.recordings
            descriptors = self.descriptors
            if len(descriptors.pools) > 1:
                recordings.wait_all()  # as _run: the pools are about to be replaced
                descriptors.begin_run()
            else:
                descriptors._run_sets = 0  # begin_run of a single pool
            token = (descriptors.generation, self.timestamp_queries.generation)  # _recording_token()
            if token != recordings.token:
                recordings.check_token(token)
            submitted = recordings.submit_again(("given", False, key))
            if submitted is None:
                return False
            serial, done = submitted
            # for each: .ready_serial = serial, .last_use = serial (in C: a jit replay writes dozens)
            _consume(map(setattr, written, _repeat("ready_serial"), _repeat(serial)), 0)
            _consume(map(setattr, done.blocks, _repeat("last_use"), _repeat(serial)), 0)
            if not config.submit_async():
                recordings.wait_for(serial)
            # recordings_reused, submissions, dispatches and barriers, each added to in C
            counters.update(zip(_AGAIN_KEYS, map(_add, map(counters.__getitem__, _AGAIN_KEYS), done.again_counts)))
            return True

    def _run(self, dispatches: list[Dispatch], timestamps: bool, given_key=None) -> list[float] | None:
        timestamps = timestamps or bool(self._timestamp_sinks)
        if not dispatches:
            return [] if timestamps else None
        lib = self.logical.lib
        null = self.logical.ffi.NULL
        compute, bind_point, push_stage = self._compute_stage, self._bind_point, self._push_stage
        hazard_barrier = self._hazard_barrier
        max_x, max_y, max_z = self._max_grid
        lookup_pipeline = self.pipelines.lookup
        lookup_set = self.descriptors.lookup

        recordings = self.recordings
        if len(self.descriptors.pools) > 1:
            recordings.wait_all()  # the pools are about to be replaced: no set may be in use
        self.descriptors.begin_run()
        recordings.check_token(self._recording_token())
        key = fingerprint(dispatches, timestamps) if given_key is None else ("given", timestamps, given_key)
        slot = recordings.find(key)
        timer = self.timestamp_queries if timestamps else None
        if slot is not None:  # the same batch on the same memory as a recent run: submit its recording again
            done: Recorded = recordings.payloads[slot]
            self._submit(slot, False, dispatches, done.written, done.blocks, timer)
            counters["recordings_reused"] += 1
            return self._finish_run(dispatches, done.launched, done.barriers, done.launched_at, timer)
        # New kernels are compiled side by side before recording starts (the loop below looks them up).
        self.pipelines.prepare(dispatches)
        slot, command_buffer = recordings.begin()
        if timer is not None:
            timer.begin(command_buffer, len(dispatches))
            launched_at: list[int] = []  # index in ``dispatches`` of each launched dispatch
        written: set = set()
        read: set = set()
        blocks: set = set()  # the memory blocks it binds
        outputs: list = []  # (position, name) of each buffer it writes
        bound_pipeline = None
        bound_pipelines: list = []  # kept with the recording: a pipeline it binds must outlive it
        launched = barriers = 0
        for position, dispatch in enumerate(dispatches):
            x, y, z = dispatch.grid
            if not (0 <= x <= max_x and 0 <= y <= max_y and 0 <= z <= max_z):
                raise DeviceError(
                    f"kernel {dispatch.kernel.name!r}: grid {tuple(dispatch.grid)} exceeds {self.name}'s "
                    f"maxComputeWorkGroupCount {self._max_grid}; fold the excess workgroups into y (or z)"
                )
            if x == 0 or y == 0 or z == 0:
                continue
            entry = lookup_pipeline(dispatch.kernel)
            reads, writes, keys, bindings, addresses = self._bind(dispatch, entry, position, blocks, outputs)
            pipeline = self.pipelines.addressed(entry, tuple(addresses)) if addresses else entry.pipeline

            if not written.isdisjoint(reads) or not written.isdisjoint(writes) or not read.isdisjoint(writes):
                lib.vkCmdPipelineBarrier(command_buffer, compute, compute, 0, 1, hazard_barrier, 0, null, 0, null)
                barriers += 1
                written.clear()
                read.clear()
            read.update(reads)
            written.update(writes)

            if pipeline is not bound_pipeline:
                lib.vkCmdBindPipeline(command_buffer, bind_point, pipeline.handle)
                bound_pipeline = pipeline
                bound_pipelines.append(pipeline)
            if pipeline.buffer_count:
                descriptor_set = lookup_set(pipeline.set_layouts, keys, bindings)
                lib.vkCmdBindDescriptorSets(command_buffer, bind_point, pipeline.layout, 0, 1, descriptor_set, 0, null)
            if pipeline.packer.size:
                data = pipeline.packer.pack(dispatch.params, addresses)
                lib.vkCmdPushConstants(command_buffer, pipeline.layout, push_stage, 0, pipeline.packer.size, data)
            lib.vkCmdDispatch(command_buffer, x, y, z)
            launched += 1
            if timer is not None:
                timer.after(command_buffer, launched)
                launched_at.append(position)

        if not launched:
            return [0.0] * len(dispatches) if timestamps else None
        lib.vkCmdPipelineBarrier(
            command_buffer, compute, self._after_stages, 0, 1, self._final_barrier, 0, null, 0, null
        )
        blocks = tuple(blocks)
        self._submit(slot, True, dispatches, outputs, blocks, timer)
        recordings.check_token(self._recording_token())  # this recording may have replaced the query pool
        if timer is None:
            launched_at = None
        kept = ([d.kernel for d in dispatches], bound_pipelines)
        recordings.remember(
            slot, key, Recorded(launched, barriers, launched_at, kept, outputs, blocks, (1, 1, launched, barriers))
        )
        return self._finish_run(dispatches, launched, barriers, launched_at, timer)

    def _submit(self, slot: int, end: bool, dispatches, outputs: list, blocks: tuple, timer) -> None:
        """Submit a slot; mark what it writes and binds with its serial; wait if timed or synchronous."""
        serial = self.recordings.submit(slot, end, (len(dispatches), dispatches[0].kernel))
        for position, name in outputs:
            dispatches[position].buffers[name].ready_serial = serial
        for block in blocks:
            block.last_use = serial
        if timer is not None or not config.submit_async():
            self.recordings.wait_for(serial)

    def _recording_token(self) -> tuple:
        """What recorded command buffers refer to besides buffers and pipelines: see vkml/runtime/vulkan/recordings.py."""
        return (self.descriptors.generation, self.timestamp_queries.generation)

    def _finish_run(self, dispatches, launched: int, barriers: int, launched_at, timer) -> list[float] | None:
        counters["dispatches"] += launched
        counters["barriers"] += barriers
        counters["submissions"] += 1
        if timer is None:
            return None
        seconds = [0.0] * len(dispatches)
        for position, duration in zip(launched_at, timer.seconds_between(timer.read(launched + 1))):
            seconds[position] = duration
        for sink in self._timestamp_sinks:
            sink.append(seconds)
        return seconds

    @contextmanager
    def timestamped(self):
        """Time every ``run`` inside the block on the GPU; yields a list that gets, per run that
        launched work, the list of its dispatches' seconds.

        >>> with vkml.device("vulkan:0").timestamped() as runs:   # doctest: +SKIP
        ...     (a + b).realize()
        >>> runs                                                   # doctest: +SKIP
        [[0.00073]]
        """
        runs: list[list[float]] = []
        self._timestamp_sinks.append(runs)
        try:
            yield runs
        finally:
            self._timestamp_sinks.remove(runs)

    def _bind(self, dispatch: Dispatch, entry, position: int, blocks: set, outputs: list) -> tuple:
        """Check a dispatch's buffers against its kernel; return what it reads, writes and binds,
        and ``{binding: device address}`` of the buffers beyond ``maxStorageBufferRange``.

        Adds the memory blocks it binds to ``blocks`` and (position, name) of those it writes to ``outputs``."""
        given = dispatch.buffers
        reads, writes, keys, bindings, addresses = [], [], [], [], {}
        for index, (name, dtype, is_read, is_written) in enumerate(entry.plan):
            buffer = given.get(name)
            if buffer is None:
                raise DeviceError(f"kernel {entry.name!r}: buffer {name!r} not given (given: {sorted(given)})")
            if buffer.device is not self:
                where = getattr(buffer.device, "name", "?")
                raise DeviceError(
                    f"kernel {entry.name!r}: buffer {name!r} is on {where}, the kernel runs on {self.name}"
                )
            if T.storage(buffer.dtype) is not dtype:  # a bfloat16 buffer is bound as int16
                raise DTypeError(
                    f"kernel {entry.name!r}: buffer {name!r} holds {buffer.dtype.name}, the kernel declares {dtype.name}"
                )
            keys.append(buffer.binding_key)
            bindings.append(buffer.binding)
            blocks.add(buffer.block)
            if buffer.beyond_range:
                addresses[index] = self._device_address(entry, name, buffer)
            hazard_key = buffer.hazard_key
            if hazard_key is not None:
                if is_read:
                    reads.append(hazard_key)
                if is_written:
                    writes.append(hazard_key)
                    outputs.append((position, name))
        return reads, writes, tuple(keys), bindings, addresses

    def _device_address(self, entry, name: str, buffer: VulkanBuffer) -> int:
        if buffer.device_address is None:
            raise DeviceError(
                f"kernel {entry.name!r}: buffer {name!r} holds {buffer.device_nbytes} bytes, more than {self.name}'s "
                f"maxStorageBufferRange ({self.max_storage_buffer_range}), and the device lacks bufferDeviceAddress "
                f"to reach it otherwise"
            )
        return buffer.device_address

    def save_caches(self) -> None:
        """Write the pipeline cache to disk now (it is also written at exit when it changed)."""
        with self.lock:
            self.pipelines.save_cache()


_devices: dict[int, VulkanDevice] = {}
_devices_lock = threading.Lock()


def device_count() -> int:
    """How many Vulkan physical devices exist (0 without a loader or driver)."""
    return physical_device_count()


def device(index: int = 0) -> VulkanDevice:
    """The process-wide ``VulkanDevice`` for physical device ``index``, created on first use.

    >>> device(0).name   # doctest: +SKIP
    'vulkan:0'
    """
    found = _devices.get(index)
    if found is None:
        with _devices_lock:
            found = _devices.get(index)
            if found is None:
                # The count alone: the reports query every physical device, the others included, and are
                # made only to name them in the error.
                if not 0 <= index < physical_device_count():
                    reports = vulkan_device_reports()
                    have = ", ".join(f"vulkan:{r['index']} ({r['name']})" for r in reports) or "none"
                    raise DeviceError(f"no Vulkan device {index}: this machine has {have}")
                found = _devices[index] = VulkanDevice(index)
    return found


def opened_devices() -> list[VulkanDevice]:
    """The Vulkan devices this process has opened so far (none is opened by asking)."""
    return list(_devices.values())


def devices() -> list[VulkanDevice]:
    """Every usable Vulkan device, opened (lazily, once per index)."""
    return [device(r["index"]) for r in vulkan_device_reports() if r.get("usable")]
