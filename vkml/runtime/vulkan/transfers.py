"""Host ↔ device copies: straight through the mapping where the memory allows, else staged.

Small downloads (a few scalars, ``UNCACHED_READ_LIMIT``) from memory that is mapped but not
host-cached (a discrete GPU's BAR) read the mapping directly: slow per byte, but a
staged copy would be queued behind every submitted run, so reading one loss would wait for the
whole step (the host waits only for the run that wrote the buffer, vkml/runtime/vulkan/backend.py).

Staged copies go through one host-visible staging buffer (grown up to ``STAGING_CHUNK``; larger
transfers are copied chunk by chunk), recorded into their own command buffer and submitted
on the compute queue. Barriers at both ends of a staged copy order it against kernels
submitted before and after it (barriers reach across submissions on one queue).

Queued uploads (``upload_queued``) are how the host writes memory that submitted work may
still use without waiting for it: the data goes to the staging memory of one of the
recordings' transfer slots (round robin, each slot's staging buffer its own, reused once the
slot's last copy is complete), and the copy is submitted behind that work, ordered after it
by the barrier that opens the copy, with a serial number like a run's. The host returns at
once; a download or a later host write of that memory waits for the copy's serial.
"""

from __future__ import annotations

import numpy as np

from ..counters import counters
from .instance import check, vk
from .logical_device import LogicalDevice, Submitter
from .memory import WHOLE_SIZE, Allocation, MemoryBlock, MemoryPool, align_up

STAGING_CHUNK = 64 << 20
# A queued upload's chunk: each transfer slot keeps a staging buffer up to this size, so the ring
# holds at most TRANSFER_SLOTS times it (a loaded checkpoint goes through it chunk by chunk).
QUEUED_CHUNK = 16 << 20
# Bytes up to which a download reads an uncached mapping directly. Each CPU read of BAR memory is a
# PCIe round trip: a 4 KiB read this way costs more than a staged copy (graph100's download in
# bench/bench.py; docs/benchmarks.md), while a loss (4 bytes) need not wait for the step's tail.
UNCACHED_READ_LIMIT = 256


class Transfers:
    """Uploads and downloads for the buffers of one ``MemoryPool``."""

    def __init__(self, logical: LogicalDevice, pool: MemoryPool):
        self.logical = logical
        self.pool = pool
        self.ffi, self.lib = logical.ffi, logical.lib
        self.atom = int(logical.limits["nonCoherentAtomSize"])
        self._submitter: Submitter | None = None
        self._staging: MemoryBlock | None = None
        self._ring: dict[int, MemoryBlock] = {}  # index of a transfer slot -> its staging memory
        self._region = self.ffi.new("VkBufferCopy*")
        api = vk()
        self._before = self._memory_barrier(
            api.VK_ACCESS_SHADER_WRITE_BIT | api.VK_ACCESS_TRANSFER_WRITE_BIT | api.VK_ACCESS_HOST_WRITE_BIT,
            api.VK_ACCESS_TRANSFER_READ_BIT | api.VK_ACCESS_TRANSFER_WRITE_BIT,
        )
        self._after = self._memory_barrier(
            api.VK_ACCESS_TRANSFER_WRITE_BIT,
            api.VK_ACCESS_HOST_READ_BIT | api.VK_ACCESS_SHADER_READ_BIT | api.VK_ACCESS_SHADER_WRITE_BIT,
        )
        self._all_stages = (
            api.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
            | api.VK_PIPELINE_STAGE_TRANSFER_BIT
            | api.VK_PIPELINE_STAGE_HOST_BIT
        )
        self._transfer_stage = api.VK_PIPELINE_STAGE_TRANSFER_BIT

    def _memory_barrier(self, src_access: int, dst_access: int):
        barrier = self.ffi.new("VkMemoryBarrier*")
        barrier.sType = vk().VK_STRUCTURE_TYPE_MEMORY_BARRIER
        barrier.srcAccessMask = src_access
        barrier.dstAccessMask = dst_access
        return barrier

    # ------------------------------------------------------------------ public

    def upload(self, allocation: Allocation, data: np.ndarray) -> None:
        """Copy the bytes of the C-contiguous ``data`` into ``allocation``."""
        nbytes = data.nbytes
        if self.pool.choice.direct_upload:
            block = allocation.block
            self.ffi.memmove(block.address + allocation.offset, data, nbytes)
            if not self.pool.choice.coherent:
                self._flush(block, allocation.offset, nbytes)
        else:
            source = data.reshape(-1).view(np.uint8)
            for start in range(0, nbytes, STAGING_CHUNK):
                size = min(STAGING_CHUNK, nbytes - start)
                staging = self._staging_for(size)
                self.ffi.memmove(staging.address, source[start : start + size], size)
                self._flush_staging(staging, size)
                self._copy(staging.buffer, 0, allocation.block.buffer, allocation.offset + start, size)
        counters["bytes_uploaded"] += nbytes

    def upload_queued(self, allocation: Allocation, data: np.ndarray, recordings) -> int:
        """Copy the bytes of the C-contiguous ``data`` into ``allocation`` by copies submitted behind
        every submission so far, through transfer slots of ``recordings``; the last copy's serial.

        The host waits only for a transfer slot still in flight (``Recordings.begin_transfer``)."""
        nbytes = data.nbytes
        source = data.reshape(-1).view(np.uint8)
        serial = 0
        for start in range(0, nbytes, QUEUED_CHUNK):
            size = min(QUEUED_CHUNK, nbytes - start)
            index, slot, command_buffer = recordings.begin_transfer()
            staging = self._ring_staging(index, size)
            self.ffi.memmove(staging.address, source[start : start + size], size)
            self._flush_staging(staging, size)
            self._record_copy(
                command_buffer, staging.buffer, 0, allocation.block.buffer, allocation.offset + start, size
            )
            serial = recordings.submit(slot, True, f"a queued upload of {size} bytes")
            counters["transfer_submissions"] += 1
        counters["bytes_uploaded"] += nbytes
        return serial

    def copy_queued(self, copies: list, recordings) -> int:
        """Copy on the device, for each (source allocation, target allocation, bytes) of ``copies``,
        behind every submission so far, in one submission of a transfer slot of ``recordings``; its
        serial (vkml.jit's new arguments)."""
        index, slot, command_buffer = recordings.begin_transfer()
        for source, target, nbytes in copies:
            self._record_copy(
                command_buffer, source.block.buffer, source.offset, target.block.buffer, target.offset, nbytes
            )
        serial = recordings.submit(slot, True, f"{len(copies)} queued copies")
        counters["transfer_submissions"] += 1
        return serial

    def download(self, allocation: Allocation, out: np.ndarray) -> None:
        """Fill the C-contiguous ``out`` with the first ``out.nbytes`` bytes of ``allocation``."""
        nbytes = out.nbytes
        block = allocation.block
        if self.pool.choice.direct_download or (nbytes <= UNCACHED_READ_LIMIT and block.address is not None):
            if not self.pool.choice.coherent:
                self._invalidate(block, allocation.offset, nbytes)
            self.ffi.memmove(out, block.address + allocation.offset, nbytes)
        else:
            target = out.reshape(-1).view(np.uint8)
            for start in range(0, nbytes, STAGING_CHUNK):
                size = min(STAGING_CHUNK, nbytes - start)
                staging = self._staging_for(size)
                self._copy(allocation.block.buffer, allocation.offset + start, staging.buffer, 0, size)
                self._invalidate_staging(staging, size)
                self.ffi.memmove(target[start : start + size], staging.address, size)
        counters["bytes_downloaded"] += nbytes

    def close(self) -> None:
        if self._staging is not None:
            self._staging.destroy()
            self._staging = None
        for block in self._ring.values():
            block.destroy()
        self._ring = {}

    # ------------------------------------------------------------------ staging

    def _staging_for(self, size: int) -> MemoryBlock:
        if self._staging is None or self._staging.size < size:
            if self._staging is not None:
                self._staging.destroy()
            capacity = min(STAGING_CHUNK, max(align_up(size, 1 << 20), 4 << 20))
            self._staging = MemoryBlock(
                self.logical, capacity, self.pool.choice.staging_type, mapped=True, dedicated=True
            )
        return self._staging

    def _ring_staging(self, index: int, size: int) -> MemoryBlock:
        """Transfer slot ``index``'s staging memory, at least ``size`` bytes (its last copy is complete)."""
        staging = self._ring.get(index)
        if staging is None or staging.size < size:
            if staging is not None:
                staging.destroy()
            # Where buffer memory is mapped and no staging type was chosen, that memory stages too.
            choice = self.pool.choice
            memory_type = choice.device_type if choice.staging_type is None else choice.staging_type
            capacity = min(QUEUED_CHUNK, max(align_up(size, 1 << 20), 1 << 20))
            staging = self._ring[index] = MemoryBlock(self.logical, capacity, memory_type, mapped=True, dedicated=True)
        return staging

    def _copy(self, src_buffer, src_offset: int, dst_buffer, dst_offset: int, size: int) -> None:
        if self._submitter is None:
            self._submitter = Submitter(self.logical)
        self._record_copy(self._submitter.begin(), src_buffer, src_offset, dst_buffer, dst_offset, size)
        self._submitter.submit_and_wait()
        counters["transfer_submissions"] += 1

    def _record_copy(self, command_buffer, src_buffer, src_offset: int, dst_buffer, dst_offset: int, size: int) -> None:
        """A copy between barriers that order it after and before everything on the queue."""
        lib = self.lib
        stages = self._all_stages
        lib.vkCmdPipelineBarrier(
            command_buffer, stages, self._transfer_stage, 0, 1, self._before, 0, self.ffi.NULL, 0, self.ffi.NULL
        )
        self._region.srcOffset = src_offset
        self._region.dstOffset = dst_offset
        self._region.size = size
        lib.vkCmdCopyBuffer(command_buffer, src_buffer, dst_buffer, 1, self._region)
        lib.vkCmdPipelineBarrier(
            command_buffer, self._transfer_stage, stages, 0, 1, self._after, 0, self.ffi.NULL, 0, self.ffi.NULL
        )

    def _staging_coherent(self) -> bool:
        choice = self.pool.choice
        memory_type = choice.device_type if choice.staging_type is None else choice.staging_type
        return bool(self.logical.info.memory_types[memory_type][0] & 0x4)

    def _flush_staging(self, staging: MemoryBlock, size: int) -> None:
        if not self._staging_coherent():
            self._flush(staging, 0, size)

    def _invalidate_staging(self, staging: MemoryBlock, size: int) -> None:
        if not self._staging_coherent():
            self._invalidate(staging, 0, size)

    # ------------------------------------------------------------------ non-coherent memory

    def _mapped_range(self, block: MemoryBlock, offset: int, size: int):
        start = offset // self.atom * self.atom
        end = min(align_up(offset + size, self.atom), block.size)
        memory_range = self.ffi.new("VkMappedMemoryRange*")
        memory_range.sType = vk().VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE
        memory_range.memory = block.memory
        memory_range.offset = start
        memory_range.size = WHOLE_SIZE if end == block.size else end - start
        return memory_range

    def _flush(self, block: MemoryBlock, offset: int, size: int) -> None:
        memory_range = self._mapped_range(block, offset, size)
        check(self.lib.vkFlushMappedMemoryRanges(self.logical.handle, 1, memory_range), "vkFlushMappedMemoryRanges")

    def _invalidate(self, block: MemoryBlock, offset: int, size: int) -> None:
        memory_range = self._mapped_range(block, offset, size)
        check(
            self.lib.vkInvalidateMappedMemoryRanges(self.logical.handle, 1, memory_range),
            "vkInvalidateMappedMemoryRanges",
        )
