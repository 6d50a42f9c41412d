"""GPU timestamps around the dispatches of one ``VulkanDevice.run``, for profiling and benchmarks.

A run with timestamps writes one timestamp when its command buffer starts and one after each
dispatch completes (``vkCmdWriteTimestamp`` at the compute-shader stage). Dispatch ``i``'s
duration is the gap between the timestamp before it and the one after it, so it includes the
hazard barrier in front of it and the durations of a run add up to its GPU time. Writing a
timestamp after each dispatch can keep independent dispatches from overlapping; the figures
are for profiling, not free.

    >>> dev = vkml.device("vulkan:0")                     # doctest: +SKIP
    >>> seconds = dev.run(dispatches, timestamps=True)     # doctest: +SKIP
    >>> with dev.timestamped() as runs:                    # doctest: +SKIP
    ...     (a + b).realize()
    >>> sum(runs[0])                                       # doctest: +SKIP
    0.00073
"""

from __future__ import annotations

from ...errors import DeviceError
from .instance import check, vk
from .logical_device import LogicalDevice


class TimestampQueries:
    """A query pool of timestamps for one logical device, grown to the largest run seen."""

    def __init__(self, logical: LogicalDevice):
        api = vk()
        self.logical = logical
        self.period_ns = float(logical.limits.get("timestampPeriod", 0.0))
        families = api.vkGetPhysicalDeviceQueueFamilyProperties(logical.info.handle)
        self.valid_bits = int(families[logical.queue_family].timestampValidBits)
        self._pool = None
        self._capacity = 0
        self._results = None
        self._top = api.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
        self._after = api.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        self._flags = api.VK_QUERY_RESULT_64_BIT | api.VK_QUERY_RESULT_WAIT_BIT
        self.generation = 0  # counts query pools replaced: command buffers recorded before refer to a freed one

    @property
    def supported(self) -> bool:
        """Whether the compute queue can write timestamps at all."""
        return self.valid_bits > 0 and self.period_ns > 0

    def begin(self, command_buffer, dispatch_count: int) -> None:
        """Reset ``dispatch_count + 1`` queries and write the starting timestamp (query 0)."""
        if not self.supported:
            name = self.logical.info.properties.get("deviceName", "this device")
            raise DeviceError(f"run(timestamps=True): {name}'s compute queue has no timestamps (timestampValidBits 0)")
        self._reserve(dispatch_count + 1)
        lib = self.logical.lib
        lib.vkCmdResetQueryPool(command_buffer, self._pool, 0, dispatch_count + 1)
        lib.vkCmdWriteTimestamp(command_buffer, self._top, self._pool, 0)

    def after(self, command_buffer, query: int) -> None:
        """Write timestamp ``query`` once every earlier dispatch has finished."""
        self.logical.lib.vkCmdWriteTimestamp(command_buffer, self._after, self._pool, query)

    def read(self, count: int) -> list[int]:
        """The first ``count`` timestamps of the last run, in device ticks (the run must be complete)."""
        lib = self.logical.lib
        check(
            lib.vkGetQueryPoolResults(
                self.logical.handle, self._pool, 0, count, count * 8, self._results, 8, self._flags
            ),
            "vkGetQueryPoolResults",
        )
        mask = (1 << self.valid_bits) - 1
        return [int(self._results[i]) & mask for i in range(count)]

    def seconds_between(self, ticks: list[int]) -> list[float]:
        """Consecutive differences of ``ticks`` in seconds (wrap-around of the valid bits handled)."""
        modulus = 1 << self.valid_bits
        return [((b - a) % modulus) * self.period_ns * 1e-9 for a, b in zip(ticks, ticks[1:])]

    def _reserve(self, count: int) -> None:
        if count <= self._capacity:
            return
        api = vk()
        capacity = max(64, 1 << (count - 1).bit_length())
        if self._pool is not None:
            api.vkDestroyQueryPool(self.logical.handle, self._pool, None)
            self._pool = None
            self.generation += 1
        info = api.VkQueryPoolCreateInfo(queryType=api.VK_QUERY_TYPE_TIMESTAMP, queryCount=capacity)
        self._pool = api.vkCreateQueryPool(self.logical.handle, info, None)
        self._capacity = capacity
        self._results = self.logical.ffi.new("uint64_t[]", capacity)
