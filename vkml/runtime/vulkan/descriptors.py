"""Descriptor sets, one per distinct binding, reused across runs.

A set is keyed by the exact ranges it binds (block id, offset, range per binding); the same
kernel on the same buffers — every step of a training loop — finds its set already written
and costs no allocation and no ``vkUpdateDescriptorSets``. Block ids are never reused, so a
set that names freed memory is simply never looked up again.

Sets come from pools created on demand. When a run outgrows the pools, a new one is added
(sets recorded earlier in that run stay valid); at the start of the next run — when no work
is in flight — everything is reset into a single pool, and the cache starts empty. The pool
grows (to twice all of them) only when that one run needed more sets than a pool holds: a
loop whose shapes change every step fills the cache over many runs, and growing for that
would grow the pool without end.

    >>> sets = DescriptorSets(logical)                                  # doctest: +SKIP
    >>> handle = sets.lookup(pipeline.set_layouts, key, bindings)       # doctest: +SKIP
"""

from __future__ import annotations

from .instance import RESULT_NAMES, check, vk
from .logical_device import LogicalDevice

_POOL_EXHAUSTED = {
    code for code, name in RESULT_NAMES.items() if name in ("VK_ERROR_OUT_OF_POOL_MEMORY", "VK_ERROR_FRAGMENTED_POOL")
}


class DescriptorSets:
    """Allocates, writes and caches storage-buffer descriptor sets for one device."""

    def __init__(self, logical: LogicalDevice, sets_per_pool: int = 1024, descriptors_per_set: int = 8):
        api = vk()
        self.logical = logical
        self.ffi, self.lib, self.device = logical.ffi, logical.lib, logical.handle
        self.sets_per_pool = sets_per_pool
        self.descriptors_per_set = descriptors_per_set
        self.pools: list = [self._new_pool()]
        # Counted here, not left to the driver: some (lavapipe) never report a full pool.
        self._sets_left = self.sets_per_pool
        self._descriptors_left = self.sets_per_pool * self.descriptors_per_set
        self.cache: dict[tuple, object] = {}
        self._allocate_info = self.ffi.new("VkDescriptorSetAllocateInfo*")
        self._allocate_info.sType = api.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
        self._allocate_info.descriptorSetCount = 1
        self._writes: dict[int, tuple] = {}  # binding count → (VkWriteDescriptorSet[n], VkDescriptorBufferInfo[n])
        self.sets_written = 0  # for tests and tuning: descriptor updates actually made
        self._run_sets = 0  # sets allocated since the last begin_run: what one run needed
        self.generation = 0  # counts resets: command buffers recorded before one refer to freed sets

    def _new_pool(self):
        api = vk()
        ffi = self.ffi
        size = ffi.new("VkDescriptorPoolSize*")
        size.type = api.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        size.descriptorCount = self.sets_per_pool * self.descriptors_per_set
        info = ffi.new("VkDescriptorPoolCreateInfo*")
        info.sType = api.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
        info.maxSets = self.sets_per_pool
        info.poolSizeCount = 1
        info.pPoolSizes = size
        pool = ffi.new("VkDescriptorPool*")
        check(self.lib.vkCreateDescriptorPool(self.device, info, ffi.NULL, pool), "vkCreateDescriptorPool")
        return pool[0]

    def begin_run(self) -> None:
        """Call when no submitted work is pending: folds overflow pools back into one pool."""
        run_sets, self._run_sets = self._run_sets, 0
        if len(self.pools) == 1:
            return
        for pool in self.pools:
            self.lib.vkDestroyDescriptorPool(self.device, pool, self.ffi.NULL)
        if run_sets > self.sets_per_pool:
            self.sets_per_pool *= 2 * len(self.pools)  # twice what the last run needed
        self.cache.clear()
        self.generation += 1
        self.pools = [self._new_pool()]
        self._sets_left = self.sets_per_pool
        self._descriptors_left = self.sets_per_pool * self.descriptors_per_set

    def lookup(self, set_layouts, key: tuple, bindings: list[tuple]) -> object:
        """A ``VkDescriptorSet[1]`` binding ``bindings[i] = (VkBuffer, offset, range)`` at binding ``i``.

        ``key`` must identify ``bindings`` exactly (the caller builds it from block ids).
        """
        found = self.cache.get(key)
        if found is not None:
            return found
        descriptor_set = self._allocate(set_layouts, len(bindings))
        self._write(descriptor_set[0], bindings)
        self.cache[key] = descriptor_set
        return descriptor_set

    def _allocate(self, set_layouts, descriptor_count: int):
        info = self._allocate_info
        info.pSetLayouts = set_layouts
        out = self.ffi.new("VkDescriptorSet[1]")
        if self._sets_left < 1 or self._descriptors_left < descriptor_count:
            self._add_pool(descriptor_count)
        info.descriptorPool = self.pools[-1]
        result = self.lib.vkAllocateDescriptorSets(self.device, info, out)
        if result in _POOL_EXHAUSTED:
            self._add_pool(descriptor_count)
            info.descriptorPool = self.pools[-1]
            result = self.lib.vkAllocateDescriptorSets(self.device, info, out)
        check(result, "vkAllocateDescriptorSets")
        self._sets_left -= 1
        self._descriptors_left -= descriptor_count
        self._run_sets += 1
        return out

    def _add_pool(self, descriptor_count: int) -> None:
        """Open another pool (earlier ones may hold sets recorded into the pending command buffer)."""
        # A kernel with more buffers than a whole pool holds gets a pool wide enough for it.
        self.descriptors_per_set = max(self.descriptors_per_set, -(-descriptor_count // self.sets_per_pool))
        self.pools.append(self._new_pool())
        self._sets_left = self.sets_per_pool
        self._descriptors_left = self.sets_per_pool * self.descriptors_per_set

    def _write(self, descriptor_set, bindings: list[tuple]) -> None:
        count = len(bindings)
        writes, infos = self._writes.get(count) or self._new_writes(count)
        for i, (buffer, offset, size) in enumerate(bindings):
            info = infos[i]
            info.buffer = buffer
            info.offset = offset
            info.range = size
            writes[i].dstSet = descriptor_set
        self.lib.vkUpdateDescriptorSets(self.device, count, writes, 0, self.ffi.NULL)
        self.sets_written += 1

    def _new_writes(self, count: int) -> tuple:
        api = vk()
        writes = self.ffi.new("VkWriteDescriptorSet[]", count)
        infos = self.ffi.new("VkDescriptorBufferInfo[]", count)
        for i in range(count):
            writes[i].sType = api.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            writes[i].dstBinding = i
            writes[i].descriptorCount = 1
            writes[i].descriptorType = api.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            writes[i].pBufferInfo = infos + i
        self._writes[count] = (writes, infos)
        return writes, infos

    def destroy(self) -> None:
        for pool in self.pools:
            self.lib.vkDestroyDescriptorPool(self.device, pool, self.ffi.NULL)
        self.pools = []
        self.cache.clear()
