"""A physical device that exists only on paper, for testing what vkml would enable on it."""

from __future__ import annotations

from vkml.runtime.vulkan import physical_device as vk_physical


def offering(extensions, minor: int = 3) -> vk_physical.PhysicalDeviceInfo:
    """A Vulkan 1.``minor`` device listing ``extensions``, with every feature of each struct that applies there.

    >>> "pipelineExecutableInfo" in offering({"VK_KHR_pipeline_executable_properties"}).features
    True
    """
    extensions = frozenset(extensions)
    info = vk_physical.PhysicalDeviceInfo(0, None, (1 << 22) | (minor << 12), extensions=extensions)
    for struct in vk_physical.FEATURE_STRUCTS:
        if vk_physical._applies(struct, info.api, extensions):
            for name in struct.fields:
                info.features[name], info.feature_struct[name] = True, struct
    return info
