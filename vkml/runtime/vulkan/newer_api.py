"""Vulkan structs and commands newer than the installed ``vulkan`` binding (1.3.275), declared here.

The binding's cffi module is compiled and cannot take more declarations, so these live in a
cffi ``FFI`` of their own (ABI mode: no compiler). Its structs chain into the binding's
``pNext`` chains (a ``void *`` takes a pointer from either), and its commands are reached
through ``vkGetInstanceProcAddr``. Layouts follow the Vulkan registry (vk.xml): ``sType`` is an
enum (32 bits), then ``pNext``, then the members.

    >>> ffi.sizeof("VkPhysicalDeviceCooperativeMatrix2FeaturesNV")
    48
    >>> STYPES["VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV"]
    1000593000

``ffi`` is made when first used (a module ``__getattr__``): making an ``FFI`` imports cffi's C
parser, pycparser, which costs about as much as the rest of opening a device, and only a device
with VK_NV_cooperative_matrix2 uses these structs. ``knows`` answers from ``DECLARED`` without it.
"""

from __future__ import annotations

import functools
import re

import cffi

from . import instance as vk_instance

_DECLARATIONS = """
    typedef struct VkPhysicalDeviceCooperativeMatrix2FeaturesNV {
        int32_t sType; void *pNext;
        uint32_t cooperativeMatrixWorkgroupScope, cooperativeMatrixFlexibleDimensions,
            cooperativeMatrixReductions, cooperativeMatrixConversions, cooperativeMatrixPerElementOperations,
            cooperativeMatrixTensorAddressing, cooperativeMatrixBlockLoads;
    } VkPhysicalDeviceCooperativeMatrix2FeaturesNV;
    typedef struct VkPhysicalDeviceCooperativeMatrix2PropertiesNV {
        int32_t sType; void *pNext;
        uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize, cooperativeMatrixFlexibleDimensionsMaxDimension,
            cooperativeMatrixWorkgroupScopeReservedSharedMemory;
    } VkPhysicalDeviceCooperativeMatrix2PropertiesNV;
    typedef struct VkCooperativeMatrixFlexibleDimensionsPropertiesNV {
        int32_t sType; void *pNext;
        uint32_t MGranularity, NGranularity, KGranularity;
        int32_t AType, BType, CType, ResultType;
        uint32_t saturatingAccumulation;
        int32_t scope;
        uint32_t workgroupInvocations;
    } VkCooperativeMatrixFlexibleDimensionsPropertiesNV;
    typedef int32_t (*PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)(
        void *physicalDevice, uint32_t *pPropertyCount, VkCooperativeMatrixFlexibleDimensionsPropertiesNV *pProperties);
    """
# The C type names declared above: its structs and its function-pointer types.
DECLARED = frozenset(re.findall(r"typedef struct (\w+)", _DECLARATIONS) + re.findall(r"\(\*(\w+)\)", _DECLARATIONS))

# VK_NV_cooperative_matrix2 is extension 594: its structure types are 1000000000 + 593·1000 + i.
STYPES = {
    "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV": 1000593000,
    "VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV": 1000593001,
    "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV": 1000593002,
}


@functools.cache
def _ffi() -> cffi.FFI:
    ffi = cffi.FFI()  # imports pycparser: see the module docstring
    ffi.cdef(_DECLARATIONS)
    return ffi


def __getattr__(name: str):
    if name == "ffi":
        return _ffi()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def knows(ctype: str) -> bool:
    """Whether this module declares the C type ``ctype`` (a struct or function-pointer type name).

    >>> knows("VkPhysicalDeviceCooperativeMatrix2FeaturesNV"), knows("VkPhysicalDeviceFeatures2")
    (True, False)
    """
    return ctype in DECLARED


def handle(cdata) -> object:
    """A handle of the binding's ffi (a dispatchable handle is a pointer) as this ffi's ``void *``."""
    binding_ffi, _ = vk_instance.raw()
    return _ffi().cast("void *", int(binding_ffi.cast("uintptr_t", cdata)))


def instance_function(name: str):
    """An instance-level command declared here (``PFN_<name>``), or None if the loader lacks it."""
    binding_ffi, lib = vk_instance.raw()
    pointer = lib.vkGetInstanceProcAddr(vk_instance.instance(), name.encode())
    if pointer == binding_ffi.NULL:
        return None
    return _ffi().cast(f"PFN_{name}", int(binding_ffi.cast("uintptr_t", pointer)))
