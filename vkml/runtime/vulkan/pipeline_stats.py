"""What the driver says about a compiled pipeline (VK_KHR_pipeline_executable_properties).

NVIDIA reports, per executable, figures such as its register count and shared memory, which
decide how many workgroups an SM holds at once; lavapipe reports its own. Capturing them costs
compile time, so it is off unless asked for before the pipelines are created:

    >>> dev = vkml.device("vulkan:0")                      # doctest: +SKIP
    >>> dev.pipelines.capture_statistics = True             # doctest: +SKIP
    >>> ... realize something ...                           # doctest: +SKIP
    >>> executable_statistics(dev.logical, dev.pipelines.lookup(kernel).pipeline.handle)  # doctest: +SKIP
    [{'executable': 'Compute Shader', 'subgroup_size': 32, 'statistics': {'Register Count': 40, ...}}]

bench/profile_dispatches.py ``--stats`` prints them next to each kernel's GPU time.
"""

from __future__ import annotations

from .instance import check, vk

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


def _listed(logical, function: str, about, struct: str, stype: str):
    """Vulkan's two-call enumeration: ``function(device, about, &count, NULL)``, then ``count`` ``Vk{struct}``.

    Returns the cffi array itself (its items borrow its memory), or None without the function.
    """
    call = _device_function(logical, function)
    if call is None:
        return None
    ffi, api = logical.ffi, vk()
    count = ffi.new("uint32_t*")
    check(call(logical.handle, about, count, ffi.NULL), function)
    items = ffi.new(f"Vk{struct}[]", count[0])
    for item in items:
        item.sType = getattr(api, f"VK_STRUCTURE_TYPE_{stype}")
    check(call(logical.handle, about, count, items), function)
    return items


def executable_statistics(logical, pipeline) -> list[dict]:
    """Per executable of ``pipeline`` (a VkPipeline created with capture): its name, subgroup size, statistics.

    Returns [] where the device cannot report them.
    """
    if not supported(logical):
        return []
    api, ffi = vk(), logical.ffi
    info = ffi.new("VkPipelineInfoKHR*")
    info.sType = api.VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR
    info.pipeline = pipeline
    executables = _listed(
        logical,
        "vkGetPipelineExecutablePropertiesKHR",
        info,
        "PipelineExecutablePropertiesKHR",
        "PIPELINE_EXECUTABLE_PROPERTIES_KHR",
    )
    found = []
    for index, executable in enumerate(executables if executables is not None else ()):
        which = ffi.new("VkPipelineExecutableInfoKHR*")
        which.sType = api.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR
        which.pipeline = pipeline
        which.executableIndex = index
        stats = _listed(
            logical,
            "vkGetPipelineExecutableStatisticsKHR",
            which,
            "PipelineExecutableStatisticKHR",
            "PIPELINE_EXECUTABLE_STATISTIC_KHR",
        )
        values = {}
        for s in stats if stats is not None else ():
            field = _FORMATS[int(s.format)] if 0 <= int(s.format) < len(_FORMATS) else "u64"
            values[ffi.string(s.name).decode()] = getattr(s.value, field)
        found.append(
            {
                "executable": ffi.string(executable.name).decode(),
                "subgroup_size": int(executable.subgroupSize),
                "statistics": values,
            }
        )
    return found
