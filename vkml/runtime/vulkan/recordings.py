"""Command buffers kept after their run, so that the same batch of dispatches is not recorded twice.

A loop that realizes the same graph structure over tensors of the same sizes gets, run after
run, the same kernels, grids and parameters bound to the same memory: the allocator hands out
the ranges the previous iteration freed. Recording such a batch again costs microseconds a
dispatch on the host (``bench/profile_host.py``); submitting the earlier command buffer again
costs nothing more than a submission.

``Recordings`` holds a few command buffers, each with the ``fingerprint`` of the batch it
holds: per dispatch the kernel object, the grid, every buffer's memory range and dtype, and
every parameter (zeros by their repr, so ``-0.0`` is not ``0.0``). Memory ranges are named by
block ids, which are never reused, so an equal fingerprint means the very same bindings. A
recording also refers to descriptor sets and the timestamp query pool; when either is
replaced (``token`` changes) every recording is dropped. A caller may name a batch by a key of its
own that differs wherever the fingerprint would (``VulkanDevice.run(key=...)``): vkml.jit's replays,
and a realize whose cached plan repeats (``plan_cache.replay_key``), which then finds and submits the
recording without making its dispatches (``VulkanDevice.run_again``). Keys are found by a dict.

Submissions do not wait (``submit``): each slot has its own fence and the serial number of its
last submission, and the host waits (``wait_for``) only for the work it needs. A fence signals
once every command submitted before it on the queue is complete, so waiting for the first
pending submission at or after serial ``n`` completes everything up to ``n``. A slot still in
flight is waited for before it is recorded again or submitted again.

Besides the recording slots, ``TRANSFER_SLOTS`` command buffers take the copies of queued
uploads (vkml/runtime/vulkan/transfers.py), round robin (``begin_transfer``): they share the
serial numbers and fences, so a download or a host write that needs such a copy complete
waits for it as for a run, and a run submitted after it is ordered after it on the queue.

A wait polls the fence (``vkGetFenceStatus``) for up to ``spin_seconds`` before it sleeps in
``vkWaitForFences``: on NVIDIA's driver a sleeping wait returns tens of µs after the work is
done, a third of a 2^24-float ``a + b`` with its synchronize (bench/bench.py's wall columns;
docs/benchmarks.md). Each poll is a C call that releases the GIL, so other Python
threads run meanwhile. On a CPU driver (lavapipe) the work itself needs the cores: no polling.

Every method runs under the device's lock (vkml/runtime/vulkan/backend.py), but for the host's wait
for a result (``claim`` then ``wait_claimed``): that one waits on the fence without the lock,
so other threads record and submit meanwhile. A fence some thread is waiting on that way is
never reset: a submission on its slot takes another fence (``_fence_for``).

    >>> slot = recordings.find(fingerprint(dispatches, False))   # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import NamedTuple

from ... import config
from ...errors import DeviceError
from ..counters import counters
from . import instance as vk_instance
from .logical_device import UINT64_MAX, LogicalDevice
from .physical_device import PHYSICAL_DEVICE_TYPE_CPU

# A training step makes a few submissions (forward, backward, update), each on one of two sets of
# memory (parameters an update replaces), and each batch of a dataset sliced at its own offset is its
# own binding: room for an epoch of ten such windows (less the transfer slots).
SLOTS = 32
# Copies of uploads queued behind in-flight work, each with its own staging memory: a training
# loop uploads a batch or two a step, so a slot is reused a few steps later, when its copy is
# long complete (reusing a slot still pending waits for it).
TRANSFER_SLOTS = 8
VK_SUCCESS, VK_NOT_READY = 0, 1
SPIN_US_ON_GPUS = 2000


class Recorded(NamedTuple):
    """What the run that recorded a slot reported, for a run that submits the slot again.

    ``launched`` and ``barriers``: how many dispatches were recorded and barriers between them (the
    run's report); ``launched_at``: each launched dispatch's index, where timestamps were taken (else None);
    ``kept``: the dispatches' kernels and bound pipelines, alive while the recording refers to them;
    ``written``: the buffers the batch writes; ``blocks``: the memory blocks it binds;
    ``again_counts``: what each submission of it again adds to the counters ``recordings_reused``,
    ``submissions``, ``dispatches`` and ``barriers`` (``VulkanDevice.run_again``).
    """

    launched: int
    barriers: int
    launched_at: list[int] | None
    kept: tuple
    written: object
    blocks: tuple
    again_counts: tuple


def fingerprint(dispatches, timestamps: bool) -> tuple:
    """What a recorded command buffer depends on, for one batch of dispatches."""
    parts: list = [timestamps]
    for d in dispatches:
        buffers = tuple([(name, getattr(b, "binding_key", None), b.dtype) for name, b in d.buffers.items()])
        params = d.params
        values = tuple([(name, type(v), v if v else repr(v)) for name, v in params.items()]) if params else ()
        parts.append((id(d.kernel), tuple(d.grid), buffers, values))
    return tuple(parts)


def _label(label) -> str:
    """A submission's label (``Recordings.submit``) as text."""
    if isinstance(label, tuple):
        count, kernel = label
        return f"{count} dispatches, the first {kernel.name!r}"
    return label


class Recordings:
    """``SLOTS`` command buffers (least recently used re-recorded first), each with its fence.

    ``submitted`` is the serial of the last submission, ``completed`` the highest serial known
    to be complete; ``serials[slot]`` is the serial of the slot's last submission.
    """

    def __init__(self, logical: LogicalDevice, slots: int = SLOTS, transfer_slots: int = TRANSFER_SLOTS):
        vk = vk_instance.vk()
        ffi = logical.ffi
        self.lib = logical.lib
        self.device = logical.handle
        self.queue = logical.queue
        self.pool = logical.create_command_pool()
        self.transfer_slots = list(range(slots, slots + transfer_slots))  # after the recording slots
        self.next_transfer = 0  # index in transfer_slots of the next one begin_transfer takes
        slots += transfer_slots  # every list below is per slot, over both kinds
        self.buffers = [logical.allocate_command_buffer(self.pool) for _ in range(slots)]
        self.keys: list = [None] * slots  # a transfer slot's stays None: find never returns it
        self._slot_of: dict = {}  # key -> its slot, for every non-None entry of keys: one hash, no scan
        self.payloads: list = [None] * slots  # what the run that recorded a slot reported, and its kernels
        self.recent = list(range(slots - transfer_slots))  # recording slots, least recently used first
        self.token = None
        self._logical = logical
        self.fences = [ffi.new("VkFence[1]", [logical.create_fence()]) for _ in range(slots)]
        self._waiters: dict[int, int] = {}  # id(fence) -> threads waiting on it without the lock
        self._spare_fences: list = []  # fences taken off a slot while waited on, once nobody waits
        self._detached: dict[int, object] = {}  # id -> fence taken off its slot while threads wait on it
        # serial -> the slot it was submitted on, while that slot's last: a slot is submitted again only
        # once its last submission is complete, so a pending serial's entry is always here
        self._slot_at: dict[int, int] = {}
        self.serials = [0] * slots
        self.labels: list = [""] * slots  # what each slot's last submission ran, for errors (``_label``)
        self.submitted = 0
        self.completed = 0
        self.name = f"vulkan:{logical.info.index}"
        self._command_buffers = ffi.new("VkCommandBuffer[1]")
        self._begin = ffi.new("VkCommandBufferBeginInfo*")
        self._begin.sType = vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        self._begin.flags = 0  # not one-time: a slot may be submitted again
        self._submit = ffi.new("VkSubmitInfo*")
        self._submit.sType = vk.VK_STRUCTURE_TYPE_SUBMIT_INFO
        self._submit.commandBufferCount = 1
        self._submit.pCommandBuffers = self._command_buffers
        on_cpu = logical.info.properties.get("deviceType") == PHYSICAL_DEVICE_TYPE_CPU
        self.spin_seconds = config.fence_spin_us(0 if on_cpu else SPIN_US_ON_GPUS) * 1e-6

    def check_token(self, token) -> None:
        """Drop every recording if what they refer to (descriptor pools, query pool) was replaced."""
        if token != self.token:
            self.forget()
            self.token = token

    def forget(self) -> None:
        """Drop every recording: the next runs record afresh (tests use it to watch recording)."""
        self.keys = [None] * len(self.keys)
        self.payloads = [None] * len(self.payloads)
        self._slot_of.clear()

    def find(self, key: tuple) -> int | None:
        """The slot holding a recording of ``key``'s batch, or None."""
        slot = self._slot_of.get(key)
        if slot is not None:
            self._touch(slot)
        return slot

    def begin(self) -> tuple[int, object]:
        """The least recently used slot, reset and begun: (slot, command buffer to record into)."""
        slot = self.recent[0]
        self.wait_for(self.serials[slot])  # a pending command buffer cannot be reset
        self._touch(slot)
        if self.keys[slot] is not None:
            del self._slot_of[self.keys[slot]]
        self.keys[slot] = self.payloads[slot] = None
        command_buffer = self.buffers[slot]
        vk_instance.check(self.lib.vkResetCommandBuffer(command_buffer, 0), "vkResetCommandBuffer")
        vk_instance.check(self.lib.vkBeginCommandBuffer(command_buffer, self._begin), "vkBeginCommandBuffer")
        return slot, command_buffer

    def begin_transfer(self) -> tuple[int, int, object]:
        """The next transfer slot (round robin), once its last copy is complete, reset and begun:
        (its index among the transfer slots, the slot, the command buffer to record into)."""
        index = self.next_transfer
        self.next_transfer = (index + 1) % len(self.transfer_slots)
        slot = self.transfer_slots[index]
        self.wait_for(self.serials[slot])  # its command buffer and its staging memory are free after
        command_buffer = self.buffers[slot]
        vk_instance.check(self.lib.vkResetCommandBuffer(command_buffer, 0), "vkResetCommandBuffer")
        vk_instance.check(self.lib.vkBeginCommandBuffer(command_buffer, self._begin), "vkBeginCommandBuffer")
        return index, slot, command_buffer

    def remember(self, slot: int, key: tuple, payload: Recorded) -> None:
        """Keep ``slot``'s recording for ``key``; ``payload`` must hold the dispatches' kernels (ids are in the key)."""
        if self.keys[slot] is not None:
            del self._slot_of[self.keys[slot]]
        old = self._slot_of.get(key)
        if old is not None:  # an equal batch recorded again (a caller that did not look first)
            self.keys[old] = self.payloads[old] = None
        self.keys[slot], self.payloads[slot] = key, payload
        self._slot_of[key] = slot

    def submit(self, slot: int, end: bool, label) -> int:
        """Submit ``slot``'s command buffer (ending its recording first if ``end``); returns its serial.

        Does not wait; ``label`` says what it runs, for the error a failed wait raises: a text, or
        (dispatch count, first kernel), spelt out only then (every run submits, few fail).
        """
        lib = self.lib
        command_buffer = self.buffers[slot]
        if end:
            vk_instance.check(lib.vkEndCommandBuffer(command_buffer), "vkEndCommandBuffer")
        else:
            self.wait_for(self.serials[slot])  # not recorded for simultaneous use: one pending submission at a time
        fences = self._fence_for(slot)
        self._command_buffers[0] = command_buffer
        vk_instance.check(lib.vkResetFences(self.device, 1, fences), "vkResetFences")
        vk_instance.check(lib.vkQueueSubmit(self.queue, 1, self._submit, fences[0]), "vkQueueSubmit")
        self.submitted += 1
        self._slot_at.pop(self.serials[slot], None)
        self._slot_at[self.submitted] = slot
        self.serials[slot] = self.submitted
        self.labels[slot] = label
        return self.submitted

    def submit_again(self, key: tuple) -> tuple[int, Recorded] | None:
        """``find`` then ``submit`` of the slot without ending it, in one call: (serial, the slot's
        ``Recorded``), or None where no slot holds ``key``. What every replayed realize runs
        (``VulkanDevice.run_again``), so the two are written out here."""
        slot = self._slot_of.get(key)
        if slot is None:
            return None
        recent = self.recent
        recent.remove(slot)
        recent.append(slot)
        if self.serials[slot] > self.completed:
            self.wait_for(self.serials[slot])  # not recorded for simultaneous use: one pending submission at a time
        fences = self.fences[slot]
        if id(fences) in self._waiters:
            fences = self._fence_for(slot)
        self._command_buffers[0] = self.buffers[slot]
        lib = self.lib
        result = lib.vkResetFences(self.device, 1, fences)
        if result:
            vk_instance.check(result, "vkResetFences")
        result = lib.vkQueueSubmit(self.queue, 1, self._submit, fences[0])
        if result:
            vk_instance.check(result, "vkQueueSubmit")
        serial = self.submitted = self.submitted + 1
        slot_at = self._slot_at
        slot_at.pop(self.serials[slot], None)
        slot_at[serial] = slot
        self.serials[slot] = serial
        # labels[slot] stays: the submission that recorded the slot labelled it with these dispatches
        return serial, self.payloads[slot]

    @property
    def pending(self) -> bool:
        """Whether some submission may still be running."""
        return self.completed < self.submitted

    def wait_for(self, serial: int) -> None:
        """Return once submission ``serial`` (and so every earlier one) is complete; 0 waits for nothing.

        A failure the device reports at this point raises ``DeviceError`` naming the submission.
        """
        if serial <= self.completed:
            return
        serial = min(serial, self.submitted)
        slot = self._first_pending_at(serial)
        counters["host_waits"] += 1
        result = self._wait(self.fences[slot])
        self._settle(result, self.serials[slot], self.labels[slot])

    def done(self, serial: int) -> bool:
        """Whether submission ``serial`` is complete, asking the fence without waiting."""
        if serial <= self.completed:
            return True
        slot = self._first_pending_at(min(serial, self.submitted))
        result = self.lib.vkGetFenceStatus(self.device, self.fences[slot][0])
        if result == VK_NOT_READY:
            return False
        self._settle(result, self.serials[slot], self.labels[slot])
        return serial <= self.completed

    def claim(self, serial: int) -> tuple | None:
        """Under the lock: what ``wait_claimed`` waits on, without the lock, for submission ``serial``;
        None when it is complete (counted as in ``wait_for``)."""
        if serial <= self.completed:
            if self.pending:
                counters["waits_skipped"] += 1
            return None
        if serial > self.submitted:
            serial = self.submitted
        slot = self._slot_at.get(serial)  # _first_pending_at's common case first
        if slot is None or self.serials[slot] != serial:
            slot = self._first_pending_at(serial)
        fence = self.fences[slot]
        waiters, fence_id = self._waiters, id(fence)
        waiters[fence_id] = waiters.get(fence_id, 0) + 1
        counters["host_waits"] += 1
        return fence, self.serials[slot], self.labels[slot]

    def wait_claimed(self, claim: tuple, lock) -> None:
        """Wait, without holding ``lock`` (the device's), for what ``claim`` returned; then mark it complete."""
        fence, serial, label = claim
        result = None
        try:
            result = (
                self.lib.vkWaitForFences(self.device, 1, fence, 1, UINT64_MAX)
                if not self.spin_seconds
                else self._wait(fence)
            )
        finally:
            # One lock for both: this runs between the GPU's finish and the caller's return.
            with lock:
                waiters, fence_id = self._waiters, id(fence)
                left = waiters.pop(fence_id) - 1
                if left:
                    waiters[fence_id] = left
                elif self._detached:
                    detached = self._detached.pop(fence_id, None)
                    if detached is not None:  # taken off its slot meanwhile (_fence_for)
                        self._spare_fences.append(detached)
                if result is not None:
                    if result < 0:
                        self._settle(result, serial, label)  # raises
                    if serial > self.completed:
                        self.completed = serial

    def _wait(self, fence) -> int:
        """Wait until ``fence`` signals: poll it for ``spin_seconds``, then sleep on it. The Vulkan result."""
        if self.spin_seconds:
            lib, device, handle = self.lib, self.device, fence[0]
            deadline = time.perf_counter() + self.spin_seconds
            result = lib.vkGetFenceStatus(device, handle)
            while result == VK_NOT_READY and time.perf_counter() < deadline:
                result = lib.vkGetFenceStatus(device, handle)
            if result != VK_NOT_READY:
                return result  # VK_SUCCESS, or the device's error
        return self.lib.vkWaitForFences(self.device, 1, fence, 1, UINT64_MAX)

    def _fence_for(self, slot: int):
        """The slot's fence, to be reset for a submission: another one if a thread waits on it unlocked."""
        fence = self.fences[slot]
        if id(fence) in self._waiters:
            self._detached[id(fence)] = fence
            if self._spare_fences:
                fence = self._spare_fences.pop()
            else:
                fence = self._logical.ffi.new("VkFence[1]", [self._logical.create_fence()])
            self.fences[slot] = fence
        return fence

    def _first_pending_at(self, serial: int) -> int:
        """The pending slot submitted first at or after ``serial``: its fence covers everything before it."""
        slot = self._slot_at.get(serial)
        if slot is not None and self.serials[slot] == serial:  # pending: still its slot's last (``_slot_at``)
            return slot
        return min(
            (s for s, n in enumerate(self.serials) if n >= serial and n > self.completed), key=self.serials.__getitem__
        )

    def _settle(self, result: int, serial: int, label) -> None:
        """Mark submission ``serial`` complete after a wait on its fence returned ``result``."""
        if result < 0:
            error = vk_instance.RESULT_NAMES.get(result, str(result))
            self.completed = self.submitted  # nothing of it can be waited for any more
            raise DeviceError(
                f"{self.name}: submission {serial} ({_label(label)}) failed on the device: {error} "
                "(reported when the host waited for its results)"
            )
        self.completed = max(self.completed, serial)

    def wait_all(self) -> None:
        """Return once every submission is complete (device.synchronize())."""
        self.wait_for(self.submitted)

    def _touch(self, slot: int) -> None:
        self.recent.remove(slot)
        self.recent.append(slot)
