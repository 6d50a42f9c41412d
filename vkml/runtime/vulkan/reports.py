"""One plain-dict report per Vulkan physical device, the ranking used by ``best_device()``,
and the ``DeviceFeatures`` that codegen reads.

    >>> from vkml.runtime.vulkan.reports import vulkan_device_reports, device_rank
    >>> reports = vulkan_device_reports()     # [] without a Vulkan loader or driver
    >>> best = min(reports, key=device_rank) if reports else None
"""

from __future__ import annotations

import dataclasses
import functools

from ...codegen.features import DeviceFeatures
from . import instance as vk_instance
from . import physical_device as vk_physical
from .physical_device import PhysicalDeviceInfo

DEVICE_TYPES = {0: "other", 1: "integrated_gpu", 2: "discrete_gpu", 3: "virtual_gpu", 4: "cpu"}
_PREFERENCE = {"discrete_gpu": 0, "integrated_gpu": 1, "virtual_gpu": 2, "cpu": 3, "other": 4}

NVIDIA_VENDOR_ID = 0x10DE

# The optional features vkml turns on at device creation whenever the device supports them.
WANTED_FEATURES = frozenset(
    {
        "shaderInt64",
        "shaderInt16",
        "shaderFloat16",
        "shaderFloat64",
        "shaderInt8",
        "storageBuffer16BitAccess",
        "storagePushConstant16",
        "storageBuffer8BitAccess",
        "storagePushConstant8",
        "shaderSubgroupExtendedTypes",
        "scalarBlockLayout",
        "hostQueryReset",
        "shaderBufferInt64Atomics",
        "vulkanMemoryModel",
        "vulkanMemoryModelDeviceScope",
        "subgroupSizeControl",
        "computeFullSubgroups",
        "maintenance4",
        "cooperativeMatrix",
        # VK_NV_cooperative_matrix2: workgroup-scope matrices of flexible sizes loaded by tensor layouts
        # (codegen's cm_tensor_* and workgroup-scope matrices; kernels_matmul_coopmat2).
        "cooperativeMatrixWorkgroupScope",
        "cooperativeMatrixFlexibleDimensions",
        "cooperativeMatrixTensorAddressing",
        "cooperativeMatrixReductions",  # these three: extra/proto_flash_cm2.py's attention
        "cooperativeMatrixConversions",
        "cooperativeMatrixPerElementOperations",
        "bufferDeviceAddress",  # kernels reach buffers beyond maxStorageBufferRange by address
        "pipelineExecutableInfo",  # register counts for the profiling tools (runtime/pipeline_stats.py)
    }
)

# Device extensions enabled when present: those the enabled features need, and (on Vulkan
# 1.1 devices) what Vulkan 1.2 made core.
_EXTENSIONS_FOR_OLD_DEVICES = ("VK_KHR_shader_float_controls", "VK_KHR_spirv_1_4", "VK_KHR_driver_properties")


@functools.cache
def physical_device_info(index: int) -> PhysicalDeviceInfo:
    """The queried facts about physical device ``index`` (cached for the process)."""
    return vk_physical.query(index)


def physical_device_count() -> int:
    return len(vk_instance.physical_devices())


def features_to_enable(info: PhysicalDeviceInfo) -> set[str]:
    """The optional features vkml enables on this device: every wanted one it supports."""
    return {name for name in WANTED_FEATURES if info.features.get(name)}


def extensions_to_enable(info: PhysicalDeviceInfo, enabled_features: set[str]) -> list[str]:
    """Device extensions to request: those carrying an enabled feature, plus the 1.2-core ones on 1.1 devices."""
    wanted = {
        info.feature_struct[name].extension
        for name in enabled_features
        if name in info.feature_struct and info.feature_struct[name].extension
    }
    if info.api < vk_physical.V1_2:
        wanted.update(e for e in _EXTENSIONS_FOR_OLD_DEVICES if e in info.extensions)
    return sorted(wanted)


def spirv_version(info: PhysicalDeviceInfo) -> tuple[int, int]:
    """The newest SPIR-V version the device consumes: 1.6 for Vulkan 1.3, 1.5 for 1.2, 1.3/1.4 for 1.1."""
    if info.api >= vk_physical.V1_3:
        return (1, 6)
    if info.api >= vk_physical.V1_2:
        return (1, 5)
    return (1, 4) if "VK_KHR_spirv_1_4" in info.extensions else (1, 3)


def device_features(info: PhysicalDeviceInfo, enabled: set[str] | None = None) -> DeviceFeatures:
    """Codegen's view of the device; ``enabled`` (default: what vkml would enable) gates optional features.

    Fields that ``DeviceFeatures`` does not (yet) have are skipped; fields this function does
    not know keep their conservative defaults.
    """
    if enabled is None:
        enabled = features_to_enable(info)
    props, limits = info.properties, info.limits
    values = {
        "float16": "shaderFloat16" in enabled,
        "float64": "shaderFloat64" in enabled,
        "int64": "shaderInt64" in enabled,
        "int16": "shaderInt16" in enabled,
        "int8": "shaderInt8" in enabled,
        "storage_buffer_16bit": "storageBuffer16BitAccess" in enabled,
        "storage_buffer_8bit": "storageBuffer8BitAccess" in enabled,
        "rte_float32": bool(props.get("shaderRoundingModeRTEFloat32")),
        "rte_float16": bool(props.get("shaderRoundingModeRTEFloat16")),
        "signed_zero_inf_nan_float32": bool(props.get("shaderSignedZeroInfNanPreserveFloat32")),
        "signed_zero_inf_nan_float16": bool(props.get("shaderSignedZeroInfNanPreserveFloat16")),
        "denorm_preserve_float32": bool(props.get("shaderDenormPreserveFloat32")),
        "denorm_preserve_float16": bool(props.get("shaderDenormPreserveFloat16")),
        "rte_float64": bool(props.get("shaderRoundingModeRTEFloat64")),
        "signed_zero_inf_nan_float64": bool(props.get("shaderSignedZeroInfNanPreserveFloat64")),
        "denorm_preserve_float64": bool(props.get("shaderDenormPreserveFloat64")),
        "subgroup_size": int(props.get("subgroupSize", 1)),
        "subgroup_ops": int(props.get("subgroupSupportedOperations", 1)),
        "subgroup_extended_types": "shaderSubgroupExtendedTypes" in enabled,
        "cooperative_matrix": "cooperativeMatrix" in enabled,
        # The installed `vulkan` binding has no VK_KHR_shader_fma structs, so it is never enabled.
        "shader_fma": False,
        "vulkan_memory_model": "vulkanMemoryModel" in enabled,
        "buffer_device_address": "bufferDeviceAddress" in enabled,
        "max_push_constants_size": int(limits["maxPushConstantsSize"]),
        "max_storage_buffer_range": int(limits["maxStorageBufferRange"]),
        "max_compute_shared_memory_size": int(limits["maxComputeSharedMemorySize"]),
        "max_workgroup_invocations": int(limits["maxComputeWorkGroupInvocations"]),
        "max_workgroup_size": tuple(int(v) for v in limits["maxComputeWorkGroupSize"]),
        "max_workgroup_count": tuple(int(v) for v in limits["maxComputeWorkGroupCount"]),
        "spirv_version": spirv_version(info),
        "cooperative_matrix_shapes": _matrix_shapes(info) if "cooperativeMatrix" in enabled else (),
        "cooperative_matrix_workgroup": all(name in enabled for name in CM2_FEATURES),
        "cooperative_matrix_flexible": _flexible_shapes(info) if all(name in enabled for name in CM2_FEATURES) else (),
        "cooperative_matrix_max_dimension": int(props.get("cooperativeMatrixFlexibleDimensionsMaxDimension") or 0),
        "cooperative_matrix_workgroup_ops": all(name in enabled for name in CM2_FEATURES + CM2_OPERATIONS),
    }
    known = {f.name for f in dataclasses.fields(DeviceFeatures)}
    return DeviceFeatures(**{k: v for k, v in values.items() if k in known})


def _matrix_shapes(info: PhysicalDeviceInfo) -> tuple[tuple, ...]:
    """The driver's cooperative-matrix shapes as ``DeviceFeatures.cooperative_matrix_shapes`` holds them."""
    keys = ("m", "n", "k", "a", "b", "c", "result", "scope")
    return tuple(tuple(shape[key] for key in keys) for shape in info.cooperative_matrix_shapes)


# VK_NV_cooperative_matrix2's features that workgroup-scope matrices loaded by tensor layouts need.
CM2_FEATURES = (
    "cooperativeMatrixWorkgroupScope",
    "cooperativeMatrixFlexibleDimensions",
    "cooperativeMatrixTensorAddressing",
)
# ... and what the flash-attention forward's reductions, conversions and per-element functions need.
CM2_OPERATIONS = (
    "cooperativeMatrixReductions",
    "cooperativeMatrixConversions",
    "cooperativeMatrixPerElementOperations",
)


def _flexible_shapes(info: PhysicalDeviceInfo) -> tuple[tuple, ...]:
    """The driver's flexible-dimension entries as ``DeviceFeatures.cooperative_matrix_flexible`` holds them."""
    keys = ("m", "n", "k", "a", "b", "c", "result", "scope", "workgroup_invocations")
    return tuple(tuple(entry[key] for key in keys) for entry in info.cooperative_matrix_flexible)


def driver_version_string(info: PhysicalDeviceInfo) -> str:
    """The driver version in the vendor's own scheme (NVIDIA packs 10.8.8.6 bits)."""
    raw = info.properties["driverVersion"]
    if info.properties["vendorID"] == NVIDIA_VENDOR_ID:
        return f"{(raw >> 22) & 0x3FF}.{(raw >> 14) & 0xFF}.{(raw >> 6) & 0xFF}.{raw & 0x3F}"
    return vk_instance.version_string(raw)


def _flag_names(flags: int) -> list[str]:
    return [name for bit, name in vk_physical.MEMORY_FLAG_NAMES.items() if flags & bit]


def report(info: PhysicalDeviceInfo) -> dict:
    """The report of one physical device (see ``vulkan_device_reports``)."""
    props = info.properties
    features = dataclasses.asdict(device_features(info))
    return {
        "index": info.index,
        "name": props["deviceName"],
        "device_type": DEVICE_TYPES.get(props["deviceType"], "other"),
        "vendor_id": props["vendorID"],
        "device_id": props["deviceID"],
        "driver_name": props.get("driverName", ""),
        "driver_info": props.get("driverInfo", ""),
        "driver_version": driver_version_string(info),
        "driver_version_raw": props["driverVersion"],
        "api_version": vk_instance.version_string(props["apiVersion"]),
        "pipeline_cache_uuid": props["pipelineCacheUUID"].hex(),
        "usable": info.api >= vk_physical.V1_1 and info.queue_family is not None,
        "features": features,
        "vulkan_features": {name: info.features.get(name, False) for name in sorted(WANTED_FEATURES)},
        "limits": {
            **info.limits,
            "maxMemoryAllocationSize": props.get("maxMemoryAllocationSize"),
            "maxBufferSize": props.get("maxBufferSize"),
            "minSubgroupSize": props.get("minSubgroupSize"),
            "maxSubgroupSize": props.get("maxSubgroupSize"),
        },
        "memory_heaps": [{"size": size, "device_local": bool(flags & 1)} for size, flags in info.memory_heaps],
        "memory_types": [{"heap": heap, "flags": _flag_names(flags)} for flags, heap in info.memory_types],
        "cooperative_matrix_shapes": list(info.cooperative_matrix_shapes),
        "cooperative_matrix_flexible": list(info.cooperative_matrix_flexible),
        "extensions": sorted(info.extensions),
    }


def vulkan_device_reports() -> list[dict]:
    """One report per Vulkan physical device; ``[]`` when there is no Vulkan loader or driver.

    Each report has ``index, name, device_type`` ("discrete_gpu" | "integrated_gpu" |
    "virtual_gpu" | "cpu" | "other"), ``driver_name, driver_info, driver_version,
    api_version, pipeline_cache_uuid``, ``features`` (codegen's DeviceFeatures fields as plain
    values), ``limits``, memory heaps and types, cooperative-matrix shapes and extensions.

        >>> [r["name"] for r in vulkan_device_reports()]  # doctest: +SKIP
        ['llvmpipe (LLVM 15.0.6, 256 bits)']
    """
    reports = []
    for index in range(physical_device_count()):
        try:
            reports.append(report(physical_device_info(index)))
        except Exception as exc:  # one broken driver must not hide the others
            reports.append({"index": index, "name": "?", "device_type": "other", "usable": False, "error": str(exc)})
    return reports


def device_rank(report: dict) -> int:
    """A sort key for ``best_device()``: smaller is preferred. discrete < integrated < virtual < cpu < other.

    >>> device_rank({"device_type": "discrete_gpu"}) < device_rank({"device_type": "cpu"})
    True
    >>> min([{"device_type": "cpu"}, {"device_type": "integrated_gpu"}], key=device_rank)["device_type"]
    'integrated_gpu'
    """
    if not report.get("usable", True):
        return len(_PREFERENCE) + 1  # a device vkml cannot open comes last
    return _PREFERENCE.get(report.get("device_type", "other"), len(_PREFERENCE))
