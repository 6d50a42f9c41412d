"""Device memory: large blocks suballocated first-fit, one dedicated allocation per big buffer.

Every block is one ``VkDeviceMemory`` with one ``VkBuffer`` over all of it; a tensor is a
range ``(block, offset, size)`` of that buffer, so descriptors bind the block's buffer at an
offset and no per-tensor Vulkan object exists. Offsets respect
``minStorageBufferOffsetAlignment`` (and ``nonCoherentAtomSize`` for mapped memory). Where the
device was created with ``bufferDeviceAddress``, every block's buffer also has a device
address (``MemoryBlock.device_address``): kernels reach buffers larger than
``maxStorageBufferRange`` through it. A freed range is kept for the next kernel output of its
size (the range that buffer of the same plan had on its last replays, else the lowest such range:
``MemoryPool._sized``, ``take_placed``), as PyTorch's caching allocator does, so a loop's buffers
settle on the same memory and its recorded command buffers are reused; kept ranges go back to
first fit before a new block is made.

Which memory type (``choose_memory``):
- a DEVICE_LOCAL|HOST_VISIBLE type on the largest device-local heap (an integrated or CPU
  device, or a discrete GPU with resizable BAR): mapped once, the host copies into it
  directly; it reads it directly too when it is HOST_CACHED (uncached reads over PCIe are
  slow, so a discrete GPU downloads through a cached staging buffer instead);
- otherwise a DEVICE_LOCAL type, reached through a HOST_VISIBLE staging buffer.

    >>> ranges = RangeAllocator(1024)
    >>> ranges.allocate(100, 64), ranges.allocate(10, 64)
    (0, 128)
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from dataclasses import dataclass
from typing import ClassVar

from ...errors import OutOfMemoryError
from . import instance as vk_instance
from .logical_device import LogicalDevice
from .physical_device import DEVICE_LOCAL, HOST_CACHED, HOST_COHERENT, HOST_VISIBLE, PhysicalDeviceInfo

MiB = 1 << 20
GiB = 1 << 30
WHOLE_SIZE = (1 << 64) - 1  # VK_WHOLE_SIZE (the binding spells it -1, which cffi rejects)
# Core Vulkan 1.2 values the `vulkan` binding only has under (None-valued) KHR aliases.
BUFFER_USAGE_SHADER_DEVICE_ADDRESS = 0x00020000
MEMORY_ALLOCATE_DEVICE_ADDRESS = 0x00000002
# Blocks are large so that allocations rarely reach the driver; smaller on small heaps.
LARGE_BLOCK_SIZE = 256 * MiB
SMALL_BLOCK_SIZE = 64 * MiB
# A block keeps at most this many ranges freed in flight (MemoryBlock.freed); past it, those whose
# work is complete are dropped, and if that is not enough the block counts as freed in flight
# whole until the latest of them (a loop that never waits cannot grow the list).
FREED_LIMIT = 4096
# An upload looks at most this many of the ranges uploads of its size gave back for one no work may use.
IDLE_CANDIDATES = 8
# The ranges a plan's buffer remembers (``MemoryPool.take_placed``): a value that outlives its step by
# one (a check read at the next step's) needs three to cycle over.
PLACED_KEPT = 3


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


class RangeAllocator:
    """First-fit allocation of aligned ranges in ``[0, capacity)``, with coalescing on release."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._starts: list[int] = [0]  # free ranges, sorted by start
        self._ends: list[int] = [capacity]
        self.used = 0

    def allocate(self, size: int, alignment: int, avoid: tuple | None = None) -> int | None:
        """The offset of a free ``size``-byte range aligned to ``alignment``, or None if none fits.

        ``avoid``: ranges the result must not overlap (free or not), as ``disjoint`` gives them."""
        starts, ends = self._starts, self._ends
        for i in range(len(starts)):  # every realize allocates its outputs here: no temporary lists
            start, end = starts[i], ends[i]
            offset = (start + alignment - 1) // alignment * alignment
            stop = offset + size
            if avoid is not None:
                offset = _past(avoid, offset, size, alignment, end)
                stop = offset + size
            if stop > end:
                continue
            if offset > start:  # the alignment gap stays free, and what follows the range
                ends[i] = offset
                if stop < end:
                    starts.insert(i + 1, stop)
                    ends.insert(i + 1, end)
            elif stop < end:
                starts[i] = stop
            else:
                del starts[i], ends[i]
            self.used += size
            return offset
        return None

    def release(self, offset: int, size: int) -> None:
        """Return ``[offset, offset + size)``; merges with free neighbours."""
        end = offset + size
        i = bisect.bisect_left(self._starts, offset)
        if (i < len(self._starts) and self._starts[i] < end) or (i > 0 and self._ends[i - 1] > offset):
            raise ValueError(f"release of [{offset}, {end}) overlaps a free range (double free?)")
        self.used -= size
        merge_left = i > 0 and self._ends[i - 1] == offset
        merge_right = i < len(self._starts) and self._starts[i] == end
        if merge_left and merge_right:
            self._ends[i - 1] = self._ends[i]
            del self._starts[i], self._ends[i]
        elif merge_left:
            self._ends[i - 1] = end
        elif merge_right:
            self._starts[i] = offset
        else:
            self._starts.insert(i, offset)
            self._ends.insert(i, end)

    @property
    def free_ranges(self) -> list[tuple[int, int]]:
        return list(zip(self._starts, self._ends))

    @property
    def empty(self) -> bool:
        return self.used == 0


def disjoint(ranges) -> tuple[list[int], list[int]]:
    """``(start, stop, ...)`` ranges merged where they overlap or touch: (starts, stops), sorted."""
    starts: list[int] = []
    stops: list[int] = []
    for start, stop, *_ in sorted(ranges):
        if stops and start <= stops[-1]:
            stops[-1] = max(stops[-1], stop)
        else:
            starts.append(start)
            stops.append(stop)
    return starts, stops


def _past(avoid: tuple, offset: int, size: int, alignment: int, end: int) -> int:
    """The first aligned offset from ``offset`` whose ``size`` bytes overlap no range of ``avoid``
    (or one whose range passes ``end``)."""
    starts, stops = avoid
    i = bisect.bisect_right(stops, offset)  # the first range that ends after offset
    while i < len(starts) and starts[i] < offset + size <= end:
        offset = (stops[i] + alignment - 1) // alignment * alignment
        i = bisect.bisect_right(stops, offset, i)
    return offset


@dataclass(frozen=True)
class MemoryChoice:
    """Where buffers live and how the host reaches them."""

    device_type: int  # memory type index for buffers
    staging_type: int | None  # memory type index for staging, None when never needed
    direct_upload: bool  # the host writes buffer memory through a mapping
    direct_download: bool  # the host reads buffer memory through a mapping
    coherent: bool  # the buffer memory type is HOST_COHERENT (no flush/invalidate needed)


def choose_memory(memory_types: list[tuple[int, int]], memory_heaps: list[tuple[int, int]], type_bits: int):
    """Pick buffer and staging memory types from ``(flags, heap)`` lists; see the module docstring.

    >>> choose_memory([(0xF, 0)], [(2 << 30, 1)], 0x1).direct_download
    True
    """
    allowed = [i for i, _ in enumerate(memory_types) if type_bits & (1 << i)]
    if not allowed:
        raise OutOfMemoryError("no memory type can hold a storage buffer on this device")

    def flags(i: int) -> int:
        return memory_types[i][0]

    local_heaps = [h for h, (_, heap_flags) in enumerate(memory_heaps) if heap_flags & 1]
    biggest_local_heap = max(local_heaps, key=lambda h: memory_heaps[h][0]) if local_heaps else None

    mapped_local = [
        i
        for i in allowed
        if flags(i) & (DEVICE_LOCAL | HOST_VISIBLE) == DEVICE_LOCAL | HOST_VISIBLE
        and memory_types[i][1] == biggest_local_heap
    ]
    if mapped_local:
        # Prefer coherent, then cached: fewer flushes, fast reads.
        best = min(mapped_local, key=lambda i: (not flags(i) & HOST_COHERENT, not flags(i) & HOST_CACHED))
        cached = bool(flags(best) & HOST_CACHED)
        coherent = bool(flags(best) & HOST_COHERENT)
        staging = None if cached else _staging_type(memory_types, allowed)
        return MemoryChoice(best, staging, True, cached or staging is None, coherent)

    local = [i for i in allowed if flags(i) & DEVICE_LOCAL]
    staging = _staging_type(memory_types, allowed)
    if local:
        if staging is None:
            raise OutOfMemoryError("no host-visible memory type for staging transfers on this device")
        return MemoryChoice(local[0], staging, False, False, True)
    if staging is None:
        raise OutOfMemoryError("no usable memory type for storage buffers on this device")
    coherent = bool(flags(staging) & HOST_COHERENT)
    return MemoryChoice(staging, None, True, True, coherent)


def _staging_type(memory_types: list[tuple[int, int]], allowed: list[int]) -> int | None:
    visible = [i for i in allowed if memory_types[i][0] & HOST_VISIBLE]
    if not visible:
        return None
    # Cached system memory reads back fast; coherent avoids explicit flushes.
    return min(
        visible,
        key=lambda i: (
            not memory_types[i][0] & HOST_CACHED,
            not memory_types[i][0] & HOST_COHERENT,
            bool(memory_types[i][0] & DEVICE_LOCAL),
        ),
    )


class MemoryBlock:
    """One ``VkDeviceMemory`` with a ``VkBuffer`` over all of it, mapped if host-visible."""

    _ids = itertools.count()

    def __init__(self, logical: LogicalDevice, size: int, memory_type: int, mapped: bool, dedicated: bool):
        vk = vk_instance.vk()
        self.id = next(MemoryBlock._ids)
        self.size = size
        self.last_use = 0  # serial of the last submission that bound this block (vkml/runtime/vulkan/recordings.py)
        # Ranges given back while submitted work may still use them: (start, stop, serial of the
        # last submission that may). Kernels may reuse such a range at once (the queue orders them);
        # the host may write it only once that serial is complete (``MemoryPool.allocate``'s for_host).
        self.freed: list[tuple[int, int, int]] = []
        self.dedicated = dedicated
        self.logical = logical
        self.buffer = create_storage_buffer(logical, size)
        requirements = vk.vkGetBufferMemoryRequirements(logical.handle, self.buffer)
        addressable = has_device_addresses(logical)
        flags = None
        if addressable:
            flags = vk.VkMemoryAllocateFlagsInfo(
                sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO, flags=MEMORY_ALLOCATE_DEVICE_ADDRESS
            )
        try:
            self.memory = vk.vkAllocateMemory(
                logical.handle,
                vk.VkMemoryAllocateInfo(pNext=flags, allocationSize=requirements.size, memoryTypeIndex=memory_type),
                None,
            )
        except Exception:
            vk.vkDestroyBuffer(logical.handle, self.buffer, None)
            raise
        vk.vkBindBufferMemory(logical.handle, self.buffer, self.memory, 0)
        self.device_address = buffer_device_address(logical, self.buffer) if addressable else None
        self.ranges = None if dedicated else RangeAllocator(size)
        self.address = None  # a `char *` to the mapped memory
        if mapped:
            ffi, lib = logical.ffi, logical.lib
            pointer = ffi.new("void **")
            vk_instance.check(lib.vkMapMemory(logical.handle, self.memory, 0, WHOLE_SIZE, 0, pointer), "vkMapMemory")
            self.address = ffi.cast("char *", pointer[0])

    def destroy(self) -> None:
        vk = vk_instance.vk()
        if self.address is not None:
            vk.vkUnmapMemory(self.logical.handle, self.memory)
            self.address = None
        vk.vkDestroyBuffer(self.logical.handle, self.buffer, None)
        vk.vkFreeMemory(self.logical.handle, self.memory, None)


def has_device_addresses(logical: LogicalDevice) -> bool:
    """Whether buffers on this device get device addresses (bufferDeviceAddress was enabled)."""
    return "bufferDeviceAddress" in logical.enabled_features


def buffer_device_address(logical: LogicalDevice, buffer) -> int:
    """The device address of ``buffer``'s first byte (``vkGetBufferDeviceAddress``)."""
    ffi, lib = logical.ffi, logical.lib
    info = ffi.new("VkBufferDeviceAddressInfo*")
    info.sType = vk_instance.vk().VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO
    info.buffer = buffer
    return int(lib.vkGetBufferDeviceAddress(logical.handle, info))


def create_storage_buffer(logical: LogicalDevice, size: int):
    vk = vk_instance.vk()
    usage = (
        vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
        | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
        | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
    )
    if has_device_addresses(logical):
        usage |= BUFFER_USAGE_SHADER_DEVICE_ADDRESS
    info = vk.VkBufferCreateInfo(size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
    return vk.vkCreateBuffer(logical.handle, info, None)


@dataclass(eq=False)
class Allocation:
    """``size`` bytes at ``offset`` in ``block`` (``reserved`` bytes taken, after alignment).

    ``host``: it was made for the host to write (``for_host``); freed, it goes back to the ranges
    kept for the next upload of its size, not for kernel outputs.

    ``busy``: the last submission that may use the range, so the host writes it only once that
    one is complete. Set when it is allocated for the host to write (``for_host``): the latest
    submission that may still use a range an earlier buffer gave back there; and when it is
    released: the block's last use then, which covers every submission that bound it.
    """

    block: MemoryBlock
    offset: int
    size: int
    reserved: int
    busy: int = 0
    # Made for the host to write (an upload): given back to the host's kept ranges. Set on the instance
    # of such an allocation only, so that the others' __init__ does not pay for it.
    host: ClassVar[bool] = False


class MemoryPool:
    """Suballocates buffers from blocks of one memory type; tracks allocated and peak bytes."""

    def __init__(self, logical: LogicalDevice, block_size: int | None = None):
        vk = vk_instance.vk()
        self.logical = logical
        info: PhysicalDeviceInfo = logical.info
        probe = create_storage_buffer(logical, 4096)
        requirements = vk.vkGetBufferMemoryRequirements(logical.handle, probe)
        vk.vkDestroyBuffer(logical.handle, probe, None)
        self.choice = choose_memory(info.memory_types, info.memory_heaps, requirements.memoryTypeBits)
        heap = info.memory_types[self.choice.device_type][1]
        self.heap_size = info.memory_heaps[heap][0]
        self.max_allocation = int(info.properties.get("maxMemoryAllocationSize") or info.memory_heaps[heap][0])
        self.max_buffer = int(info.properties.get("maxBufferSize") or self.max_allocation)
        self.alignment = max(
            int(requirements.alignment),
            int(info.limits["minStorageBufferOffsetAlignment"]),
            int(info.limits["nonCoherentAtomSize"]),
            64,
        )
        if block_size is None:
            block_size = LARGE_BLOCK_SIZE if self.heap_size >= 8 * GiB else SMALL_BLOCK_SIZE
        self.block_size = min(block_size, self.max_allocation, self.max_buffer)
        self.blocks: list[MemoryBlock] = []  # shared blocks, suballocated
        self.dedicated: set[MemoryBlock] = set()
        # Dedicated blocks kept after their buffer died, for the next big buffer, and emptied shared
        # blocks kept for the next time the shared ones fill up (together up to 1/8 of the heap): a
        # training step frees and makes the same gigabyte every step, and vkAllocateMemory of a
        # 256 MiB block costs milliseconds on a discrete GPU.
        self.spare: list[MemoryBlock] = []
        self.spare_blocks: list[MemoryBlock] = []
        self.spare_limit = min(self.heap_size // 8, 8 * GiB)
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.allocations = 0  # live allocations
        self.peak_reserved_bytes = 0
        self.out_of_memory_errors = 0
        self.closed = False
        self._pending: deque[Allocation] = deque()  # released by finalizers, returned at the next allocate
        # Ranges of shared blocks given back, by reserved size: dicts {(block id, offset): block}. The next kernel output of that size takes the range
        # its plan's buffer had on a recent replay if it is free (``take_placed``), else the lowest
        # (``allocate``, ``take_sized``): choices that depend on which ranges are free, not on the
        # order they were freed in. A loop that frees and makes the same sizes every step settles on
        # the same ranges, step after step, and its runs on the same bindings (their recordings and
        # descriptor sets are reused); each plan's own ranges keep that when other buffers of its sizes
        # come and go between its replays (a new batch's upload, a tensor kept for a step). Handed back
        # to the blocks' free ranges (``_return_sized``) before a new block is made, and by empty_cache.
        self._sized: dict[int, dict[tuple, MemoryBlock]] = {}
        # The same for ranges uploads gave back (``Allocation.host``): the next upload of that size takes
        # the lowest that no submitted work may still use. Apart from the kernel outputs' so that a new
        # batch uploaded every step cycles over its own ranges instead of moving the outputs'.
        self._host_sized: dict[int, dict[tuple, MemoryBlock]] = {}
        # Waits until a submission serial is complete (the device sets it): a block that
        # submitted work may still use must not be freed. Ranges need no wait: work on the one
        # queue is ordered, so a range freed while in flight is only ever reused by later work.
        self.wait_for = lambda serial: None
        # The highest submission serial known to be complete (the device sets it): ranges freed
        # before it are idle, the host may write them (``allocate``'s for_host).
        self.completed = lambda: 0

    @property
    def mapped(self) -> bool:
        """Whether buffer blocks are mapped into the host's address space."""
        return self.choice.direct_upload or self.choice.direct_download

    @property
    def reserved_bytes(self) -> int:
        return sum(b.size for b in (*self.blocks, *self.dedicated, *self.spare, *self.spare_blocks))

    def allocate(self, nbytes: int, what: str | tuple = "", for_host: bool = False) -> Allocation:
        """``nbytes`` (> 0) of device memory; raises OutOfMemoryError naming the size and ``what`` it
        is for (a text, or (numel, dtype), spelt out only for the error).

        ``for_host``: the host is about to write it (an upload). Then the first fit among the
        shared blocks' ranges that no submitted work may still use is taken, if one is free, and
        the allocation's ``busy`` says which submission the host must see complete before it
        writes (0: none): a range freed while in flight is reused by the next upload only if
        nothing idle fits, and never touches work on other ranges."""
        if self._pending:
            self._drain()
        alignment = self.alignment
        reserved = (nbytes + alignment - 1) // alignment * alignment
        if not for_host and reserved <= self.block_size // 2:
            # The common case first (every realize's outputs): a range of this size freed last, or
            # one of a shared block, first fit.
            sized = self._sized.get(reserved)
            if sized:
                at = min(sized)
                block = sized.pop(at)
                offset = at[1]
                self.allocated_bytes += nbytes
                self.allocations += 1
                if self.allocated_bytes > self.peak_bytes:
                    self.peak_bytes = self.allocated_bytes
                return Allocation(block, offset, nbytes, reserved)
            for block in self.blocks:
                offset = block.ranges.allocate(reserved, alignment)
                if offset is not None:
                    self.allocated_bytes += nbytes
                    self.allocations += 1
                    if self.allocated_bytes > self.peak_bytes:
                        self.peak_bytes = self.allocated_bytes
                    return Allocation(block, offset, nbytes, reserved)
        if what.__class__ is tuple:
            what = f" for {what[0]} {what[1].name} elements"
        if reserved > min(self.max_allocation, self.max_buffer):
            self.out_of_memory_errors += 1
            raise OutOfMemoryError(
                f"{self.logical_name()}: cannot allocate {_human(nbytes)} ({nbytes} bytes){what}: larger than the "
                f"device's largest single allocation ({_human(min(self.max_allocation, self.max_buffer))})"
            )
        if reserved > self.block_size // 2:
            block = self._take_spare(reserved) or self._new_block(reserved, dedicated=True, nbytes=nbytes, what=what)
            self.dedicated.add(block)
            return self._account(Allocation(block, 0, nbytes, reserved), for_host)
        if for_host:
            completed = self.completed()
            kept = self._host_sized.get(reserved)
            if kept:
                allocation = self._take_idle(kept, nbytes, reserved, completed)
                if allocation is not None:
                    return allocation
            for block in self.blocks:
                freed = block.freed = [entry for entry in block.freed if entry[2] > completed]
                offset = block.ranges.allocate(reserved, self.alignment, disjoint(freed) if freed else None)
                if offset is not None:
                    return self._account(Allocation(block, offset, nbytes, reserved), host=True)
        for block in self.blocks:
            offset = block.ranges.allocate(reserved, self.alignment)
            if offset is not None:
                return self._account(Allocation(block, offset, nbytes, reserved), for_host)
        if self._sized or self._host_sized:  # the ranges kept by size, coalesced with the free ones, before a new block
            self._return_sized()
            return self.allocate(nbytes, what, for_host)
        block = self.spare_blocks.pop() if self.spare_blocks else None
        block = block or self._new_block(self.block_size, dedicated=False, nbytes=nbytes, what=what)
        self.blocks.append(block)
        offset = block.ranges.allocate(reserved, self.alignment)
        return self._account(Allocation(block, offset, nbytes, reserved), for_host)

    def _take_idle(self, kept: list, nbytes: int, reserved: int, completed: int) -> Allocation | None:
        """The lowest of the first few ``kept`` ranges (an upload's size's) that no submitted work may still
        use, taken for the host, or None."""
        for at in sorted(kept)[:IDLE_CANDIDATES]:
            block = kept[at]
            start = at[1]
            stop = start + reserved
            if any(a < stop and start < b and s > completed for a, b, s in block.freed):
                continue
            del kept[at]
            allocation = Allocation(block, start, nbytes, reserved)
            allocation.host = True
            self.allocated_bytes += nbytes
            self.allocations += 1
            self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
            return allocation
        return None

    def take_sized(self, nbytes: int, reserved: int) -> Allocation | None:
        """``allocate``'s common case alone, for a caller that sized the request before: a range of
        ``reserved`` bytes (``nbytes`` aligned up; at most half a block, not for the host) that a
        buffer of that size gave back, or None (then ``allocate``); the caller drains ``_pending`` first."""
        sized = self._sized.get(reserved)
        if not sized:
            return None
        at = min(sized)
        block = sized.pop(at)
        self.allocated_bytes += nbytes
        self.allocations += 1
        if self.allocated_bytes > self.peak_bytes:
            self.peak_bytes = self.allocated_bytes
        return Allocation(block, at[1], nbytes, reserved)

    def take_placed(self, nbytes: int, reserved: int, placed: list | None) -> Allocation | None:
        """``take_sized`` for a plan's buffer: of the ranges it had on its last replays (``placed``, as
        (block id, offset), the latest new one first, at most ``PLACED_KEPT``), the first that is free,
        else the lowest, which joins ``placed``. A buffer of a loop's plan keeps its range while other
        buffers of its size come and go between the plan's replays; one still alive a step later (a
        parameter an update replaces, a result a loop holds until the next is made) makes it take two or
        three ranges in turn. ``placed`` None: ``take_sized``."""
        sized = self._sized.get(reserved)
        if not sized:
            return None
        if placed is not None:
            for at in placed:
                block = sized.pop(at, None)
                if block is not None:  # free
                    self.allocated_bytes += nbytes
                    self.allocations += 1
                    if self.allocated_bytes > self.peak_bytes:
                        self.peak_bytes = self.allocated_bytes
                    return Allocation(block, at[1], nbytes, reserved)
        at = min(sized)  # the lowest: what is free decides, not the order it was freed in
        block = sized.pop(at)
        if placed is not None:
            placed.insert(0, at)
            del placed[PLACED_KEPT:]
        self.allocated_bytes += nbytes
        self.allocations += 1
        if self.allocated_bytes > self.peak_bytes:
            self.peak_bytes = self.allocated_bytes
        return Allocation(block, at[1], nbytes, reserved)

    def release(self, allocation: Allocation) -> None:
        """Queue an allocation's range for return (buffer finalizers call this).

        Finalizers run whenever the garbage collector does, which can be in the middle of
        ``allocate`` editing a block's free list: so they only queue, and the pool returns
        queued ranges at its next ``allocate`` or ``stats`` (a deque's append is atomic). The
        block's last use now is the last submission that may use the range: nothing submitted
        after the buffer died binds it.
        """
        allocation.busy = allocation.block.last_use
        self._pending.append(allocation)

    def _drain(self) -> None:
        pending = self._pending
        completed = self.completed()  # may only grow meanwhile: a range it calls busy takes _release_now's path
        while pending:
            allocation = pending.popleft()
            block = allocation.block
            if block.dedicated or allocation.busy > completed or self.closed:
                self._release_now(allocation)
                continue
            # _release_now of an idle range of a shared block (every realize's outputs), written out
            self.allocated_bytes -= allocation.size
            self.allocations -= 1
            reserved = allocation.reserved
            sized_of = self._host_sized if allocation.host else self._sized
            sized = sized_of.get(reserved)
            if sized is None:
                sized = sized_of[reserved] = {}
            sized[block.id, allocation.offset] = block

    def _release_now(self, allocation: Allocation) -> None:
        """Give an allocation's range back; frees empty blocks beyond the first."""
        if self.closed:
            return
        self.allocated_bytes -= allocation.size
        self.allocations -= 1
        block = allocation.block
        if allocation.busy > self.completed():
            if block.dedicated:
                self._freed_in_flight(block, 0, block.size, allocation.busy)
            else:
                self._freed_in_flight(
                    block, allocation.offset, allocation.offset + allocation.reserved, allocation.busy
                )
        if block.dedicated:
            self.dedicated.discard(block)
            if self._make_spare_room(block.size):
                self.spare.append(block)  # a loop that makes big tensors gets the same memory back
            else:
                self._destroy(block)
            return
        sized_of = self._host_sized if allocation.host else self._sized
        sized = sized_of.get(allocation.reserved)
        if sized is None:
            sized = sized_of[allocation.reserved] = {}
        sized[block.id, allocation.offset] = block

    def _return_sized(self) -> None:
        """Give every range kept by size back to its block's free ranges; frees empty blocks beyond the first."""
        for sized in (self._sized, self._host_sized):
            kept = dict(sized)
            sized.clear()
            for reserved, ranges in kept.items():
                for (_, offset), block in ranges.items():
                    self._return_range(block, offset, reserved)

    def _return_range(self, block: MemoryBlock, offset: int, reserved: int) -> None:
        block.ranges.release(offset, reserved)
        if block.ranges.empty and len(self.blocks) > 1:
            self.blocks.remove(block)
            if self._make_spare_room(block.size):
                self.spare_blocks.append(block)  # all its ranges are free: ready to be a shared block again
            else:
                self._destroy(block)

    def _freed_in_flight(self, block: MemoryBlock, start: int, stop: int, serial: int) -> None:
        freed = block.freed
        freed.append((start, stop, serial))
        if len(freed) > FREED_LIMIT:
            completed = self.completed()
            freed[:] = [entry for entry in freed if entry[2] > completed]
            if len(freed) > FREED_LIMIT // 2:
                freed[:] = [(0, block.size, max(entry[2] for entry in freed))]

    def _destroy(self, block: MemoryBlock) -> None:
        self.wait_for(block.last_use)
        block.destroy()

    def _make_spare_room(self, size: int) -> bool:
        """Whether a block of ``size`` bytes may be kept as spare, after giving the driver back blocks kept
        before it where the limit asks for it (dedicated ones first, each list oldest first): the newest
        is the likeliest to be asked for again (a loop's output, freed every step), the oldest what
        earlier work left behind, which would otherwise make every later big buffer a driver call."""
        if size > self.spare_limit:
            return False
        while self._spare_bytes() + size > self.spare_limit:
            oldest = self.spare if self.spare else self.spare_blocks
            self._destroy(oldest.pop(0))
        return True

    def _spare_bytes(self) -> int:
        return sum(b.size for b in self.spare) + sum(b.size for b in self.spare_blocks)

    def _account(self, allocation: Allocation, for_host: bool = False, host: bool = False) -> Allocation:
        if host or (for_host and not allocation.block.dedicated):
            allocation.host = True
        if for_host:  # the latest submission that may still use a range freed in flight under it
            start, stop = allocation.offset, allocation.offset + allocation.reserved
            allocation.busy = max((s for a, b, s in allocation.block.freed if a < stop and start < b), default=0)
        self.allocated_bytes += allocation.size
        self.allocations += 1
        self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
        return allocation

    def _new_block(self, size: int, dedicated: bool, nbytes: int, what: str) -> MemoryBlock:
        block = self._new_block_or_raise(size, dedicated, nbytes, what)
        self.peak_reserved_bytes = max(self.peak_reserved_bytes, self.reserved_bytes + block.size)
        return block

    def _new_block_or_raise(self, size: int, dedicated: bool, nbytes: int, what: str) -> MemoryBlock:
        try:
            return MemoryBlock(self.logical, size, self.choice.device_type, self.mapped, dedicated)
        except Exception as first:
            if not vk_instance.is_out_of_memory(first):
                raise
            # Empty shared blocks may be what stands in the way: free them and try once more.
            if self._drop_empty_blocks():
                try:
                    return MemoryBlock(self.logical, size, self.choice.device_type, self.mapped, dedicated)
                except Exception as second:
                    if not vk_instance.is_out_of_memory(second):
                        raise
            self.out_of_memory_errors += 1
            raise OutOfMemoryError(
                f"{self.logical_name()}: cannot allocate {_human(nbytes)} ({nbytes} bytes){what}: the driver refused a "
                f"{_human(size)} block ({type(first).__name__}); allocated {_human(self.allocated_bytes)}, reserved "
                f"{_human(self.reserved_bytes)}"
            ) from None

    def _take_spare(self, reserved: int) -> MemoryBlock | None:
        """The smallest kept dedicated block that fits ``reserved`` without wasting more than half of it."""
        fits = [b for b in self.spare if reserved <= b.size <= 2 * reserved]
        if not fits:
            return None
        block = min(fits, key=lambda b: b.size)
        self.spare.remove(block)
        return block

    def _drop_empty_blocks(self) -> bool:
        self._return_sized()
        empty = [b for b in self.blocks if b.ranges.empty] + self.spare + self.spare_blocks
        for block in empty:
            if block in self.blocks:
                self.blocks.remove(block)
            self._destroy(block)
        self.spare, self.spare_blocks = [], []
        return bool(empty)

    def logical_name(self) -> str:
        return f"vulkan:{self.logical.info.index}"

    def stats(self) -> dict[str, int]:
        self._drain()
        return {
            "allocated_bytes": self.allocated_bytes,
            "peak_bytes": self.peak_bytes,
            "reserved_bytes": self.reserved_bytes,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "allocations": self.allocations,
            "out_of_memory_errors": self.out_of_memory_errors,
        }

    def reset_peak(self) -> None:
        self._drain()
        self.peak_bytes = self.allocated_bytes
        self.peak_reserved_bytes = self.reserved_bytes

    def empty_cache(self) -> int:
        """Give the driver back every block no live buffer uses (waiting for work that may still
        use one); returns the bytes released. Shared blocks with a live range stay."""
        self._drain()
        before = self.reserved_bytes
        self._drop_empty_blocks()
        return before - self.reserved_bytes


def _human(nbytes: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes} B"
