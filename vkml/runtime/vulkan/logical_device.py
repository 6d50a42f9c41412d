"""A logical Vulkan device with one compute queue, and the optional features it was created with.

    >>> from vkml.runtime.vulkan.reports import physical_device_info
    >>> logical = LogicalDevice(physical_device_info(0))   # doctest: +SKIP
    >>> logical.features.float16                             # doctest: +SKIP
    True

``enabled_features`` / ``enabled_extensions`` record exactly what was requested, and
``features`` (codegen's ``DeviceFeatures``) is derived from that record, so codegen never
emits a capability the device was not created with.
"""

from __future__ import annotations

from ...codegen.features import DeviceFeatures
from ...errors import DeviceError
from . import instance as vk_instance
from . import physical_device as vk_physical
from . import reports
from .physical_device import PhysicalDeviceInfo

UINT64_MAX = (1 << 64) - 1


class LogicalDevice:
    """``VkDevice`` + one compute ``VkQueue`` + a command pool and fence for one-off transfers."""

    def __init__(self, info: PhysicalDeviceInfo):
        if info.queue_family is None:
            raise DeviceError(f"Vulkan device {info.index} ({info.properties['deviceName']}) has no compute queue")
        if info.api < vk_physical.V1_1:
            version = vk_instance.version_string(info.api_version)
            raise DeviceError(f"Vulkan device {info.index} supports only Vulkan {version}; vkml needs 1.1 or later")
        vk = vk_instance.vk()
        self.ffi, self.lib = vk_instance.raw()
        self.info = info
        self.queue_family = info.queue_family
        enabled = set(reports.features_to_enable(info))
        try:
            self.handle = self._create(vk, info, enabled)
        except Exception as exc:
            # Features declared outside the binding (vk_newer) are the least tried: retry without them.
            newer = {name for name in enabled if vk_physical.declared_outside_binding(info.feature_struct.get(name))}
            if not newer:
                raise DeviceError(f"vkCreateDevice failed for Vulkan device {info.index}: {exc}") from exc
            enabled -= newer
            try:
                self.handle = self._create(vk, info, enabled)
            except Exception as again:
                raise DeviceError(f"vkCreateDevice failed for Vulkan device {info.index}: {again}") from again
        self.features: DeviceFeatures = reports.device_features(info, set(self.enabled_features))
        self.queue = vk.vkGetDeviceQueue(self.handle, self.queue_family, 0)
        self.limits = info.limits
        self.max_storage_buffer_range = int(info.limits["maxStorageBufferRange"])

    def _create(self, vk, info: PhysicalDeviceInfo, enabled: set[str]):
        """``vkCreateDevice`` with ``enabled`` features (and the extensions they need), recorded on self."""
        self.enabled_features: frozenset[str] = frozenset(enabled)
        self.enabled_extensions: tuple[str, ...] = tuple(reports.extensions_to_enable(info, enabled))
        chain, keepalive = vk_physical.feature_chain(info, enabled)
        queue_info = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self.queue_family, queueCount=1, pQueuePriorities=[1.0]
        )
        create_info = vk.VkDeviceCreateInfo(
            pNext=chain,
            queueCreateInfoCount=1,
            pQueueCreateInfos=[queue_info],
            enabledExtensionCount=len(self.enabled_extensions),
            ppEnabledExtensionNames=list(self.enabled_extensions) or None,
            pEnabledFeatures=None,  # the features live in the VkPhysicalDeviceFeatures2 chain
        )
        handle = vk.vkCreateDevice(info.handle, create_info, None)
        del keepalive
        return handle

    # ------------------------------------------------------------------ small helpers

    def create_command_pool(self):
        vk = vk_instance.vk()
        flags = vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
        info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=self.queue_family, flags=flags)
        return vk.vkCreateCommandPool(self.handle, info, None)

    def allocate_command_buffer(self, pool):
        vk = vk_instance.vk()
        info = vk.VkCommandBufferAllocateInfo(
            commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
        )
        return vk.vkAllocateCommandBuffers(self.handle, info)[0]

    def create_fence(self):
        vk = vk_instance.vk()
        return vk.vkCreateFence(self.handle, vk.VkFenceCreateInfo(), None)


class Submitter:
    """One command buffer + one reused fence: begin, record, then ``submit_and_wait``.

    All structs are built once; the per-call path is raw ``lib`` calls only.
    """

    def __init__(self, logical: LogicalDevice):
        vk = vk_instance.vk()
        ffi, lib = logical.ffi, logical.lib
        self.logical = logical
        self.lib = lib
        self.device = logical.handle
        self.queue = logical.queue
        self.pool = logical.create_command_pool()
        self.command_buffer = logical.allocate_command_buffer(self.pool)
        self.fence = logical.create_fence()
        self._fences = ffi.new("VkFence[1]", [self.fence])
        self._command_buffers = ffi.new("VkCommandBuffer[1]", [self.command_buffer])
        self._begin = ffi.new("VkCommandBufferBeginInfo*")
        self._begin.sType = vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        self._begin.flags = vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
        self._submit = ffi.new("VkSubmitInfo*")
        self._submit.sType = vk.VK_STRUCTURE_TYPE_SUBMIT_INFO
        self._submit.commandBufferCount = 1
        self._submit.pCommandBuffers = self._command_buffers

    def begin(self):
        """Reset and begin the command buffer; returns it for recording."""
        vk_instance.check(self.lib.vkResetCommandBuffer(self.command_buffer, 0), "vkResetCommandBuffer")
        vk_instance.check(self.lib.vkBeginCommandBuffer(self.command_buffer, self._begin), "vkBeginCommandBuffer")
        return self.command_buffer

    def submit_and_wait(self) -> None:
        """End the command buffer, submit it once, and wait on the (then reset) fence."""
        lib = self.lib
        vk_instance.check(lib.vkEndCommandBuffer(self.command_buffer), "vkEndCommandBuffer")
        vk_instance.check(lib.vkResetFences(self.device, 1, self._fences), "vkResetFences")
        vk_instance.check(lib.vkQueueSubmit(self.queue, 1, self._submit, self.fence), "vkQueueSubmit")
        vk_instance.check(lib.vkWaitForFences(self.device, 1, self._fences, 1, UINT64_MAX), "vkWaitForFences")
