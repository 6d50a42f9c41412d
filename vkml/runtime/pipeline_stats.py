"""What the driver says about a compiled pipeline (VK_KHR_pipeline_executable_properties).

NVIDIA reports, per executable, figures such as its register count and shared memory, which
decide how many workgroups an SM holds at once; lavapipe reports its own. Capturing them costs
compile time, so it is off unless asked for before the pipelines are created:

    >>> dev = vkml.device("vulkan:0")                      # doctest: +SKIP
    >>> dev.pipelines.capture_statistics = True             # doctest: +SKIP
    >>> ... realize something ...                           # doctest: +SKIP
    >>> executable_statistics(dev.logical, dev.pipelines.lookup(kernel).pipeline.handle)  # doctest: +SKIP
    [{'executable': 'Compute Shader', 'subgroup_size': 32, 'statistics': {'Register Count': 40, ...}}]

tools/profile_dispatches.py ``--stats`` prints them next to each kernel's GPU time.
"""

from __future__ import annotations

from .vk_instance import check, vk

FEATURE = "pipelineExecutableInfo"
_FORMATS = ("b32", "i64", "u64", "f64")  # VkPipelineExecutableStatisticFormatKHR 0..3


def supported(logical) -> bool:
    """Whether ``logical`` was created with pipelineExecutableInfo (so capture can be asked for)."""
    return FEATURE in logical.enabled_features


def _device_function(logical, name: str):
    pointer = logical.lib.vkGetDeviceProcAddr(logical.handle, name.encode())
    if pointer == logical.ffi.NULL:
        return None
    return logical.ffi.cast(f"PFN_{name}", pointer)


def executable_statistics(logical, pipeline) -> list[dict]:
    """Per executable of ``pipeline`` (a VkPipeline created with capture): its name, subgroup size, statistics.

    Returns [] where the device cannot report them.
    """
    properties_of = _device_function(logical, "vkGetPipelineExecutablePropertiesKHR")
    statistics_of = _device_function(logical, "vkGetPipelineExecutableStatisticsKHR")
    if not supported(logical) or properties_of is None or statistics_of is None:
        return []
    api, ffi = vk(), logical.ffi
    info = ffi.new("VkPipelineInfoKHR*")
    info.sType = api.VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR
    info.pipeline = pipeline
    count = ffi.new("uint32_t*")
    check(properties_of(logical.handle, info, count, ffi.NULL), "vkGetPipelineExecutablePropertiesKHR")
    executables = ffi.new("VkPipelineExecutablePropertiesKHR[]", count[0])
    for i in range(count[0]):
        executables[i].sType = api.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR
    check(properties_of(logical.handle, info, count, executables), "vkGetPipelineExecutablePropertiesKHR")
    found = []
    for index in range(count[0]):
        which = ffi.new("VkPipelineExecutableInfoKHR*")
        which.sType = api.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR
        which.pipeline = pipeline
        which.executableIndex = index
        n = ffi.new("uint32_t*")
        check(statistics_of(logical.handle, which, n, ffi.NULL), "vkGetPipelineExecutableStatisticsKHR")
        stats = ffi.new("VkPipelineExecutableStatisticKHR[]", n[0])
        for i in range(n[0]):
            stats[i].sType = api.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR
        check(statistics_of(logical.handle, which, n, stats), "vkGetPipelineExecutableStatisticsKHR")
        values = {}
        for i in range(n[0]):
            s = stats[i]
            field = _FORMATS[int(s.format)] if 0 <= int(s.format) < len(_FORMATS) else "u64"
            values[ffi.string(s.name).decode()] = getattr(s.value, field)
        found.append(
            {
                "executable": ffi.string(executables[index].name).decode(),
                "subgroup_size": int(executables[index].subgroupSize),
                "statistics": values,
            }
        )
    return found
