"""Command buffers kept after their run, so that the same batch of dispatches is not recorded twice.

A loop that realizes the same graph structure over tensors of the same sizes gets, run after
run, the same kernels, grids and parameters bound to the same memory: the allocator hands out
the ranges the previous iteration freed. Recording such a batch again costs about 7 µs a
dispatch on lavapipe's host and about 20 on the H200's; submitting the earlier command buffer
again costs nothing more than a submission.

``Recordings`` holds a few command buffers, each with the ``fingerprint`` of the batch it
holds: per dispatch the kernel object, the grid, every buffer's memory range and dtype, and
every parameter (zeros by their repr, so ``-0.0`` is not ``0.0``). Memory ranges are named by
block ids, which are never reused, so an equal fingerprint means the very same bindings. A
recording also refers to descriptor sets and the timestamp query pool; when either is
replaced (``token`` changes) every recording is dropped.

    >>> slot = recordings.find(fingerprint(dispatches, False))   # doctest: +SKIP
"""

from __future__ import annotations

from . import vk_instance
from .vk_device import UINT64_MAX, LogicalDevice

SLOTS = 4


def fingerprint(dispatches, timestamps: bool) -> tuple:
    """What a recorded command buffer depends on, for one batch of dispatches."""
    parts: list = [timestamps]
    for d in dispatches:
        buffers = tuple([(name, getattr(b, "binding_key", None), b.dtype) for name, b in d.buffers.items()])
        params = d.params
        values = tuple([(name, type(v), v if v else repr(v)) for name, v in params.items()]) if params else ()
        parts.append((id(d.kernel), tuple(d.grid), buffers, values))
    return tuple(parts)


class Recordings:
    """``SLOTS`` command buffers (least recently used re-recorded first) and one fence."""

    def __init__(self, logical: LogicalDevice, slots: int = SLOTS):
        vk = vk_instance.vk()
        ffi = logical.ffi
        self.lib = logical.lib
        self.device = logical.handle
        self.queue = logical.queue
        self.pool = logical.create_command_pool()
        self.buffers = [logical.allocate_command_buffer(self.pool) for _ in range(slots)]
        self.keys: list = [None] * slots
        self.payloads: list = [None] * slots  # what the run that recorded a slot reported, and its kernels
        self.recent = list(range(slots))  # least recently used first
        self.token = None
        self.fence = logical.create_fence()
        self._fences = ffi.new("VkFence[1]", [self.fence])
        self._command_buffers = ffi.new("VkCommandBuffer[1]")
        self._begin = ffi.new("VkCommandBufferBeginInfo*")
        self._begin.sType = vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        self._begin.flags = 0  # not one-time: a slot may be submitted again
        self._submit = ffi.new("VkSubmitInfo*")
        self._submit.sType = vk.VK_STRUCTURE_TYPE_SUBMIT_INFO
        self._submit.commandBufferCount = 1
        self._submit.pCommandBuffers = self._command_buffers

    def check_token(self, token) -> None:
        """Drop every recording if what they refer to (descriptor pools, query pool) was replaced."""
        if token != self.token:
            self.forget()
            self.token = token

    def forget(self) -> None:
        """Drop every recording: the next runs record afresh (tests use it to watch recording)."""
        self.keys = [None] * len(self.keys)
        self.payloads = [None] * len(self.payloads)

    def find(self, key: tuple) -> int | None:
        """The slot holding a recording of ``key``'s batch, or None."""
        for slot, held in enumerate(self.keys):
            if held is not None and held == key:
                self._touch(slot)
                return slot
        return None

    def begin(self) -> tuple[int, object]:
        """The least recently used slot, reset and begun: (slot, command buffer to record into)."""
        slot = self.recent[0]
        self._touch(slot)
        self.keys[slot] = self.payloads[slot] = None
        command_buffer = self.buffers[slot]
        vk_instance.check(self.lib.vkResetCommandBuffer(command_buffer, 0), "vkResetCommandBuffer")
        vk_instance.check(self.lib.vkBeginCommandBuffer(command_buffer, self._begin), "vkBeginCommandBuffer")
        return slot, command_buffer

    def remember(self, slot: int, key: tuple, payload: tuple) -> None:
        """Keep ``slot``'s recording for ``key``; ``payload`` must hold the dispatches' kernels (ids are in the key)."""
        self.keys[slot], self.payloads[slot] = key, payload

    def submit_and_wait(self, slot: int, end: bool) -> None:
        """Submit ``slot``'s command buffer (ending its recording first if ``end``) and wait for it."""
        lib = self.lib
        command_buffer = self.buffers[slot]
        if end:
            vk_instance.check(lib.vkEndCommandBuffer(command_buffer), "vkEndCommandBuffer")
        self._command_buffers[0] = command_buffer
        vk_instance.check(lib.vkResetFences(self.device, 1, self._fences), "vkResetFences")
        vk_instance.check(lib.vkQueueSubmit(self.queue, 1, self._submit, self.fence), "vkQueueSubmit")
        vk_instance.check(lib.vkWaitForFences(self.device, 1, self._fences, 1, UINT64_MAX), "vkWaitForFences")

    def _touch(self, slot: int) -> None:
        self.recent.remove(slot)
        self.recent.append(slot)
