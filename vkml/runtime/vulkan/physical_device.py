"""What a physical device offers: properties, limits, memory, optional features, extensions.

Queried once per physical device through ``pNext`` chains of the Vulkan 1.1/1.2/1.3
aggregate structs (or their extension ancestors on older devices); the result is plain
Python values in a ``PhysicalDeviceInfo``. ``feature_chain(info, names)`` builds the chain
that enables a chosen subset at device creation, from the same table.

    >>> info = query(0)                         # doctest: +SKIP
    >>> info.features["shaderFloat16"], info.properties["subgroupSize"]
    (True, 8)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import instance as vk_instance
from . import newer_api as vk_newer

V1_1, V1_2, V1_3 = (1, 1), (1, 2), (1, 3)
NEWEST = (99, 0)


@dataclass(frozen=True)
class ChainStruct:
    """One struct of a ``pNext`` chain, used when ``min_api <= api < below_api`` and ``extension`` is present."""

    ctype: str
    stype: str
    fields: tuple[str, ...]  # "ours=theirs" where the struct spells a field differently
    min_api: tuple[int, int] = V1_1
    below_api: tuple[int, int] = NEWEST
    extension: str | None = None


# Optional device features vkml reads and, where supported, enables. Each feature is read from
# exactly one struct per device (the aggregate one where the API version has it).
FEATURE_STRUCTS = (
    ChainStruct(
        "VkPhysicalDeviceVulkan11Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES",
        ("storageBuffer16BitAccess", "storagePushConstant16"),
        min_api=V1_2,
    ),
    ChainStruct(
        "VkPhysicalDeviceVulkan12Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES",
        (
            "shaderFloat16",
            "shaderInt8",
            "storageBuffer8BitAccess",
            "storagePushConstant8",
            "shaderSubgroupExtendedTypes",
            "scalarBlockLayout",
            "hostQueryReset",
            "shaderBufferInt64Atomics",
            "vulkanMemoryModel",
            "vulkanMemoryModelDeviceScope",
            "bufferDeviceAddress",
        ),
        min_api=V1_2,
    ),
    ChainStruct(
        "VkPhysicalDeviceVulkan13Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES",
        ("subgroupSizeControl", "computeFullSubgroups", "maintenance4"),
        min_api=V1_3,
    ),
    ChainStruct(
        "VkPhysicalDevice16BitStorageFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES",
        ("storageBuffer16BitAccess", "storagePushConstant16"),
        below_api=V1_2,
    ),
    ChainStruct(
        "VkPhysicalDeviceShaderFloat16Int8Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES",
        ("shaderFloat16", "shaderInt8"),
        below_api=V1_2,
        extension="VK_KHR_shader_float16_int8",
    ),
    ChainStruct(
        "VkPhysicalDevice8BitStorageFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES",
        ("storageBuffer8BitAccess", "storagePushConstant8"),
        below_api=V1_2,
        extension="VK_KHR_8bit_storage",
    ),
    ChainStruct(
        "VkPhysicalDeviceVulkanMemoryModelFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES",
        ("vulkanMemoryModel", "vulkanMemoryModelDeviceScope"),
        below_api=V1_2,
        extension="VK_KHR_vulkan_memory_model",
    ),
    ChainStruct(
        "VkPhysicalDeviceBufferDeviceAddressFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES",
        ("bufferDeviceAddress",),
        below_api=V1_2,
        extension="VK_KHR_buffer_device_address",
    ),
    ChainStruct(
        "VkPhysicalDeviceSubgroupSizeControlFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES",
        ("subgroupSizeControl", "computeFullSubgroups"),
        below_api=V1_3,
        extension="VK_EXT_subgroup_size_control",
    ),
    ChainStruct(
        "VkPhysicalDeviceCooperativeMatrixFeaturesKHR",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR",
        ("cooperativeMatrix",),
        extension="VK_KHR_cooperative_matrix",
    ),
    ChainStruct(  # lets tools ask the driver for register counts (vkml/runtime/vulkan/pipeline_stats.py)
        "VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR",
        ("pipelineExecutableInfo",),
        extension="VK_KHR_pipeline_executable_properties",
    ),
    # Newer than the binding: declared in vk_newer (workgroup-scope matrices, extra/proto_coopmat2.py).
    ChainStruct(
        "VkPhysicalDeviceCooperativeMatrix2FeaturesNV",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV",
        (
            "cooperativeMatrixWorkgroupScope",
            "cooperativeMatrixFlexibleDimensions",
            "cooperativeMatrixTensorAddressing",
            # row reductions, per-element functions, accumulator -> A conversions: extra/proto_flash_cm2.py
            "cooperativeMatrixReductions",
            "cooperativeMatrixConversions",
            "cooperativeMatrixPerElementOperations",
        ),
        extension="VK_NV_cooperative_matrix2",
    ),
)

# VkPhysicalDeviceFeatures (Vulkan 1.0) members vkml enables where supported.
CORE_FEATURES = ("shaderInt64", "shaderInt16", "shaderFloat64")

_FLOAT_CONTROLS = tuple(
    f"shader{what}Float{bits}"
    for what in (
        "SignedZeroInfNanPreserve",
        "DenormPreserve",
        "DenormFlushToZero",
        "RoundingModeRTE",
        "RoundingModeRTZ",
    )
    for bits in (16, 32, 64)
)

PROPERTY_STRUCTS = (
    ChainStruct(
        "VkPhysicalDeviceVulkan11Properties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES",
        (
            "subgroupSize",
            "subgroupSupportedStages",
            "subgroupSupportedOperations",
            "maxMemoryAllocationSize",
            "maxPerSetDescriptors",
        ),
        min_api=V1_2,
    ),
    ChainStruct(
        "VkPhysicalDeviceVulkan12Properties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES",
        ("driverID", "driverName", "driverInfo", *_FLOAT_CONTROLS),
        min_api=V1_2,
    ),
    ChainStruct(
        "VkPhysicalDeviceVulkan13Properties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES",
        ("minSubgroupSize", "maxSubgroupSize", "maxComputeWorkgroupSubgroups", "maxBufferSize"),
        min_api=V1_3,
    ),
    ChainStruct(
        "VkPhysicalDeviceSubgroupProperties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES",
        (
            "subgroupSize",
            "subgroupSupportedStages=supportedStages",
            "subgroupSupportedOperations=supportedOperations",
        ),
        below_api=V1_2,
    ),
    ChainStruct(
        "VkPhysicalDeviceMaintenance3Properties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES",
        ("maxMemoryAllocationSize", "maxPerSetDescriptors"),
        below_api=V1_2,
    ),
    ChainStruct(
        "VkPhysicalDeviceDriverProperties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES",
        ("driverID", "driverName", "driverInfo"),
        below_api=V1_2,
        extension="VK_KHR_driver_properties",
    ),
    ChainStruct(
        "VkPhysicalDeviceFloatControlsProperties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES",
        _FLOAT_CONTROLS,
        below_api=V1_2,
        extension="VK_KHR_shader_float_controls",
    ),
    ChainStruct(
        "VkPhysicalDeviceSubgroupSizeControlProperties",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES",
        ("minSubgroupSize", "maxSubgroupSize", "maxComputeWorkgroupSubgroups"),
        below_api=V1_3,
        extension="VK_EXT_subgroup_size_control",
    ),
    ChainStruct(
        "VkPhysicalDeviceCooperativeMatrix2PropertiesNV",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV",
        (
            "cooperativeMatrixWorkgroupScopeMaxWorkgroupSize",
            "cooperativeMatrixFlexibleDimensionsMaxDimension",
            "cooperativeMatrixWorkgroupScopeReservedSharedMemory",
        ),
        extension="VK_NV_cooperative_matrix2",
    ),
)

LIMITS = (
    "maxStorageBufferRange",
    "maxPushConstantsSize",
    "maxMemoryAllocationCount",
    "maxBoundDescriptorSets",
    "maxPerStageDescriptorStorageBuffers",
    "maxDescriptorSetStorageBuffers",
    "maxComputeSharedMemorySize",
    "maxComputeWorkGroupCount",
    "maxComputeWorkGroupInvocations",
    "maxComputeWorkGroupSize",
    "minStorageBufferOffsetAlignment",
    "nonCoherentAtomSize",
    "timestampComputeAndGraphics",
    "timestampPeriod",
)

# VkMemoryPropertyFlagBits vkml looks at.
# VkPhysicalDeviceType of a CPU implementation (lavapipe): its memory and pipelines are host memory.
PHYSICAL_DEVICE_TYPE_CPU = 4
DEVICE_LOCAL, HOST_VISIBLE, HOST_COHERENT, HOST_CACHED = 0x1, 0x2, 0x4, 0x8
MEMORY_FLAG_NAMES = {DEVICE_LOCAL: "DEVICE_LOCAL", HOST_VISIBLE: "HOST_VISIBLE", HOST_COHERENT: "HOST_COHERENT"}
MEMORY_FLAG_NAMES[HOST_CACHED] = "HOST_CACHED"

QUEUE_COMPUTE, QUEUE_GRAPHICS = 0x2, 0x1


@dataclass
class PhysicalDeviceInfo:
    """Everything vkml reads from one physical device, as plain Python values."""

    index: int
    handle: object
    api_version: int  # the device's, capped by the instance's
    properties: dict = field(default_factory=dict)  # VkPhysicalDeviceProperties + chained properties
    limits: dict = field(default_factory=dict)
    features: dict[str, bool] = field(default_factory=dict)  # optional features: supported or not
    feature_struct: dict[str, ChainStruct] = field(default_factory=dict)  # feature → struct that carries it
    extensions: frozenset[str] = frozenset()
    memory_types: list[tuple[int, int]] = field(default_factory=list)  # (property flags, heap index)
    memory_heaps: list[tuple[int, int]] = field(default_factory=list)  # (size, flags)
    queue_family: int | None = None  # a family with compute, or None
    cooperative_matrix_shapes: list[dict] = field(default_factory=list)
    cooperative_matrix_flexible: list[dict] = field(default_factory=list)  # VK_NV_cooperative_matrix2's

    @property
    def api(self) -> tuple[int, int]:
        return ((self.api_version >> 22) & 0x7F, (self.api_version >> 12) & 0x3FF)


def _declared(struct: ChainStruct):
    """``(ffi, sType)`` declaring ``struct``: the binding's, else vk_newer's; None where neither does."""
    ffi, _ = vk_instance.raw()
    try:
        ffi.typeof(struct.ctype)
    except Exception:  # the installed binding predates this struct
        if vk_newer.knows(struct.ctype):
            return vk_newer.ffi, vk_newer.STYPES[struct.stype]
        return None
    stype = getattr(vk_instance.vk(), struct.stype, None)
    return None if stype is None else (ffi, stype)


def declared_outside_binding(struct: ChainStruct | None) -> bool:
    """Whether ``struct`` is one of vk_newer's (the installed binding predates it)."""
    return struct is not None and vk_newer.knows(struct.ctype) and _declared(struct)[0] is vk_newer.ffi


def _applies(struct: ChainStruct, api: tuple[int, int], extensions: frozenset[str]) -> bool:
    if not struct.min_api <= api < struct.below_api:
        return False
    if struct.extension is not None and struct.extension not in extensions:
        return False
    return _declared(struct) is not None


def _new_chain(head_ctype: str, head_stype: str, structs: list[ChainStruct]):
    """``(head, {struct: cdata})``: a zeroed head struct with ``structs`` linked behind it."""
    vk = vk_instance.vk()
    ffi, _ = vk_instance.raw()
    head = ffi.new(head_ctype + "*")
    head.sType = getattr(vk, head_stype)
    nodes = {}
    previous = ffi.NULL
    for struct in reversed(structs):
        struct_ffi, stype = _declared(struct)
        node = struct_ffi.new(struct.ctype + "*")
        node.sType = stype
        node.pNext = previous
        previous = node
        nodes[struct] = node
    head.pNext = previous
    return head, nodes


def _plain(value, ffi):
    """A cffi field value as a Python value (strings decoded, arrays as tuples)."""
    kind = ffi.typeof(value).kind if isinstance(value, ffi.CData) else None
    if kind == "array":
        if ffi.typeof(value).item.cname == "char":
            return ffi.string(value).decode(errors="replace")
        return tuple(value)
    return value


def _split(spec: str) -> tuple[str, str]:
    ours, _, theirs = spec.partition("=")
    return ours, theirs or ours


def query(index: int) -> PhysicalDeviceInfo:
    """Read the physical device ``index`` (in ``vk_instance.physical_devices()`` order)."""
    vk = vk_instance.vk()
    ffi, lib = vk_instance.raw()
    handle = vk_instance.physical_devices()[index]

    base = vk.vkGetPhysicalDeviceProperties(handle)
    api_version = min(base.apiVersion, vk_instance.instance_api_version())
    info = PhysicalDeviceInfo(index=index, handle=handle, api_version=api_version)
    info.extensions = _device_extensions(handle, ffi, lib)
    api = info.api

    props = info.properties
    props.update(
        deviceName=base.deviceName,
        deviceType=int(base.deviceType),
        vendorID=int(base.vendorID),
        deviceID=int(base.deviceID),
        apiVersion=int(base.apiVersion),
        driverVersion=int(base.driverVersion),
        pipelineCacheUUID=bytes(ffi.buffer(base.pipelineCacheUUID)),
    )
    for name in LIMITS:
        info.limits[name] = _plain(getattr(base.limits, name), ffi)

    if api >= V1_1:
        _query_chained_properties(info, ffi, lib)
        _query_features(info, ffi, lib)
    else:
        core = vk.vkGetPhysicalDeviceFeatures(handle)
        info.features.update({name: bool(getattr(core, name)) for name in CORE_FEATURES})

    memory = vk.vkGetPhysicalDeviceMemoryProperties(handle)
    info.memory_types = [
        (int(memory.memoryTypes[i].propertyFlags), int(memory.memoryTypes[i].heapIndex))
        for i in range(memory.memoryTypeCount)
    ]
    info.memory_heaps = [
        (int(memory.memoryHeaps[i].size), int(memory.memoryHeaps[i].flags)) for i in range(memory.memoryHeapCount)
    ]
    info.queue_family = _compute_queue_family(vk, handle)
    if info.features.get("cooperativeMatrix"):
        info.cooperative_matrix_shapes = _cooperative_matrix_shapes(handle, ffi)
    if info.features.get("cooperativeMatrixFlexibleDimensions"):
        info.cooperative_matrix_flexible = _flexible_dimensions(handle)
    return info


def _device_extensions(handle, ffi, lib) -> frozenset[str]:
    """The device's extension names, read with raw calls: the binding's wrapper converts each name through a
    ``dir()`` of its C type (a device has a hundred or more of them)."""
    count = ffi.new("uint32_t*")
    vk_instance.check(
        lib.vkEnumerateDeviceExtensionProperties(handle, ffi.NULL, count, ffi.NULL),
        "vkEnumerateDeviceExtensionProperties",
    )
    properties = ffi.new("VkExtensionProperties[]", count[0])
    result = lib.vkEnumerateDeviceExtensionProperties(handle, ffi.NULL, count, properties)
    vk_instance.check(result, "vkEnumerateDeviceExtensionProperties")
    return frozenset(ffi.string(properties[i].extensionName).decode() for i in range(count[0]))


def _query_chained_properties(info: PhysicalDeviceInfo, ffi, lib) -> None:
    structs = [s for s in PROPERTY_STRUCTS if _applies(s, info.api, info.extensions)]
    head, nodes = _new_chain("VkPhysicalDeviceProperties2", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2", structs)
    lib.vkGetPhysicalDeviceProperties2(info.handle, head)
    for struct, node in nodes.items():
        for spec in struct.fields:
            ours, theirs = _split(spec)
            value = _plain(getattr(node, theirs), ffi)
            # The float-control members are VkBool32; the rest are counts, sizes or masks.
            info.properties[ours] = bool(value) if ours in _FLOAT_CONTROLS else value


def _query_features(info: PhysicalDeviceInfo, ffi, lib) -> None:
    structs = [s for s in FEATURE_STRUCTS if _applies(s, info.api, info.extensions)]
    head, nodes = _new_chain("VkPhysicalDeviceFeatures2", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2", structs)
    lib.vkGetPhysicalDeviceFeatures2(info.handle, head)
    for name in CORE_FEATURES:
        info.features[name] = bool(getattr(head.features, name))
    for struct, node in nodes.items():
        for name in struct.fields:
            info.features[name] = bool(getattr(node, name))
            info.feature_struct[name] = struct


def _compute_queue_family(vk, handle) -> int | None:
    """A queue family with compute; one without graphics first (a dedicated compute queue)."""
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(handle)
    candidates = [i for i, f in enumerate(families) if f.queueFlags & QUEUE_COMPUTE and f.queueCount > 0]
    if not candidates:
        return None
    # Timestamps matter for profiling later: a family without them is a last resort.
    candidates.sort(key=lambda i: (families[i].timestampValidBits == 0, bool(families[i].queueFlags & QUEUE_GRAPHICS)))
    return candidates[0]


COMPONENT_TYPES = {
    0: "float16",
    1: "float32",
    2: "float64",
    3: "int8",
    4: "int16",
    5: "int32",
    6: "int64",
    7: "uint8",
    8: "uint16",
    9: "uint32",
    10: "uint64",
    1000141000: "bfloat16",
}
SCOPES = {1: "device", 2: "workgroup", 3: "subgroup", 5: "queue_family"}


def _cooperative_matrix_shapes(handle, ffi) -> list[dict]:
    """Every (M, N, K, A, B, C, result, scope) combination the driver lists for VK_KHR_cooperative_matrix."""
    function = vk_instance.instance_function("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
    if function is None:
        return []
    vk = vk_instance.vk()
    count = ffi.new("uint32_t*")
    if function(handle, count, ffi.NULL) != 0 or count[0] == 0:
        return []
    items = ffi.new("VkCooperativeMatrixPropertiesKHR[]", count[0])
    for i in range(count[0]):
        items[i].sType = vk.VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
    if function(handle, count, items) < 0:
        return []
    shapes = []
    for i in range(count[0]):
        p = items[i]
        shapes.append(
            {
                "m": int(p.MSize),
                "n": int(p.NSize),
                "k": int(p.KSize),
                "a": COMPONENT_TYPES.get(int(p.AType), str(int(p.AType))),
                "b": COMPONENT_TYPES.get(int(p.BType), str(int(p.BType))),
                "c": COMPONENT_TYPES.get(int(p.CType), str(int(p.CType))),
                "result": COMPONENT_TYPES.get(int(p.ResultType), str(int(p.ResultType))),
                "saturating": bool(p.saturatingAccumulation),
                "scope": SCOPES.get(int(p.scope), str(int(p.scope))),
            }
        )
    return shapes


def _flexible_dimensions(handle) -> list[dict]:
    """VK_NV_cooperative_matrix2's flexible shapes: granularities of M, N, K per type and scope, and the
    workgroup size that workgroup-scope matrices of that entry need."""
    function = vk_newer.instance_function("vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV")
    if function is None:
        return []
    ffi, device = vk_newer.ffi, vk_newer.handle(handle)
    count = ffi.new("uint32_t*")
    if function(device, count, ffi.NULL) != 0 or count[0] == 0:
        return []
    items = ffi.new("VkCooperativeMatrixFlexibleDimensionsPropertiesNV[]", count[0])
    for i in range(count[0]):
        items[i].sType = vk_newer.STYPES["VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV"]
    if function(device, count, items) < 0:
        return []
    kinds = {"a": "AType", "b": "BType", "c": "CType", "result": "ResultType"}
    return [
        {
            "m": int(p.MGranularity),
            "n": int(p.NGranularity),
            "k": int(p.KGranularity),
            **{
                ours: COMPONENT_TYPES.get(int(getattr(p, theirs)), str(getattr(p, theirs)))
                for ours, theirs in kinds.items()
            },
            "saturating": bool(p.saturatingAccumulation),
            "scope": SCOPES.get(int(p.scope), str(int(p.scope))),
            "workgroup_invocations": int(p.workgroupInvocations),
        }
        for p in (items[i] for i in range(count[0]))
    ]


def feature_chain(info: PhysicalDeviceInfo, enable: set[str]):
    """``(VkPhysicalDeviceFeatures2*, keepalive)`` with exactly the features in ``enable`` turned on.

    Only structs that carry an enabled feature are chained; ``keepalive`` holds the cdata
    objects that must outlive the ``vkCreateDevice`` call.
    """
    structs = []
    for name in sorted(enable):
        struct = info.feature_struct.get(name)
        if struct is not None and struct not in structs:
            structs.append(struct)
    head, nodes = _new_chain("VkPhysicalDeviceFeatures2", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2", structs)
    for name in CORE_FEATURES:
        if name in enable:
            setattr(head.features, name, 1)
    for struct, node in nodes.items():
        for name in struct.fields:
            if name in enable:
                setattr(node, name, 1)
    return head, (head, list(nodes.values()))
