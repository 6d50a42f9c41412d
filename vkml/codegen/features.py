"""What code generation needs to know about a device, filled by the runtime from the physical device.

    feats = DeviceFeatures.lavapipe_like()      # tests; the runtime builds its own from Vulkan queries
    feats.target_env                             # 'vulkan1.3' (passed to spirv-as / spirv-val)

Codegen is pure: the same kernel and the same ``DeviceFeatures`` give the same SPIR-V, so this
object is part of the compile-cache key (it is frozen and hashable).
"""

from __future__ import annotations

from dataclasses import dataclass

# VkSubgroupFeatureFlagBits, as reported in VkPhysicalDeviceSubgroupProperties.supportedOperations.
SUBGROUP_BASIC = 0x1
SUBGROUP_VOTE = 0x2
SUBGROUP_ARITHMETIC = 0x4
SUBGROUP_BALLOT = 0x8
SUBGROUP_SHUFFLE = 0x10
SUBGROUP_SHUFFLE_RELATIVE = 0x20
SUBGROUP_CLUSTERED = 0x40
SUBGROUP_QUAD = 0x80

# The Vulkan device feature / property behind each field, for error messages that say what is missing.
VULKAN_NAMES = {
    "float16": "shaderFloat16",
    "float64": "shaderFloat64",
    "int64": "shaderInt64",
    "int16": "shaderInt16",
    "int8": "shaderInt8",
    "storage_buffer_16bit": "storageBuffer16BitAccess",
    "storage_buffer_8bit": "storageBuffer8BitAccess",
    "rte_float32": "shaderRoundingModeRTEFloat32",
    "rte_float16": "shaderRoundingModeRTEFloat16",
    "signed_zero_inf_nan_float32": "shaderSignedZeroInfNanPreserveFloat32",
    "signed_zero_inf_nan_float16": "shaderSignedZeroInfNanPreserveFloat16",
    "denorm_preserve_float32": "shaderDenormPreserveFloat32",
    "denorm_preserve_float16": "shaderDenormPreserveFloat16",
    "rte_float64": "shaderRoundingModeRTEFloat64",
    "signed_zero_inf_nan_float64": "shaderSignedZeroInfNanPreserveFloat64",
    "denorm_preserve_float64": "shaderDenormPreserveFloat64",
    "subgroup_shuffle": "subgroupSupportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT",
    "subgroup_extended_types": "shaderSubgroupExtendedTypes",
    "cooperative_matrix": "cooperativeMatrix (VK_KHR_cooperative_matrix)",
    "cooperative_matrix_workgroup": "cooperativeMatrixWorkgroupScope, cooperativeMatrixFlexibleDimensions and "
    "cooperativeMatrixTensorAddressing (VK_NV_cooperative_matrix2)",
    "cooperative_matrix_workgroup_ops": "cooperativeMatrixReductions, cooperativeMatrixConversions and "
    "cooperativeMatrixPerElementOperations (VK_NV_cooperative_matrix2)",
    "shader_fma": "shaderFmaFloat32 (VK_KHR_shader_fma)",
    "vulkan_memory_model": "vulkanMemoryModel",
    "buffer_device_address": "bufferDeviceAddress",
}

# What a tensor of each dtype needs from a device (``DeviceFeatures`` fields): its buffers' element
# width and the type its values are converted from. bfloat16 is held as int16 bits.
DTYPE_FEATURES = {
    "float16": ("float16", "storage_buffer_16bit"),
    "bfloat16": ("int16", "storage_buffer_16bit"),
    "float64": ("float64",),
    "int64": ("int64",),
    "uint8": ("int8", "storage_buffer_8bit"),
    "int8": ("int8", "storage_buffer_8bit"),
    "int16": ("int16", "storage_buffer_16bit"),
    "uint16": ("int16", "storage_buffer_16bit"),
}

# SPIR-V version -> the spirv-tools target environment of the matching Vulkan version.
_TARGET_ENVS = {(1, 3): "vulkan1.1", (1, 4): "vulkan1.1spv1.4", (1, 5): "vulkan1.2", (1, 6): "vulkan1.3"}


@dataclass(frozen=True)
class DeviceFeatures:
    """Device capabilities and limits that decide what SPIR-V a kernel may use.

    The defaults describe a minimal Vulkan 1.2 device (no optional features, the spec's
    required minimum limits); ``lavapipe_like()`` and ``h200_like()`` describe the two
    devices the project is tested on (reference/vulkan.md).
    """

    float16: bool = False
    float64: bool = False
    int64: bool = False
    int16: bool = False
    int8: bool = False
    storage_buffer_16bit: bool = False
    storage_buffer_8bit: bool = False
    rte_float32: bool = False
    rte_float16: bool = False
    signed_zero_inf_nan_float32: bool = False
    signed_zero_inf_nan_float16: bool = False
    denorm_preserve_float32: bool = False
    denorm_preserve_float16: bool = False
    rte_float64: bool = False
    signed_zero_inf_nan_float64: bool = False
    denorm_preserve_float64: bool = False
    subgroup_size: int = 1
    subgroup_ops: int = SUBGROUP_BASIC
    subgroup_extended_types: bool = False  # subgroup ops on 16- and 64-bit types
    cooperative_matrix: bool = False
    shader_fma: bool = False
    vulkan_memory_model: bool = False
    buffer_device_address: bool = False  # buffers beyond max_storage_buffer_range are reached by address
    max_push_constants_size: int = 128
    max_storage_buffer_range: int = 1 << 27
    max_compute_shared_memory_size: int = 16384
    max_workgroup_invocations: int = 128
    max_workgroup_size: tuple[int, int, int] = (128, 128, 64)
    max_workgroup_count: tuple[int, int, int] = (65535, 65535, 65535)
    spirv_version: tuple[int, int] = (1, 5)
    # (M, N, K, A type, B type, C type, result type, scope) per shape the driver lists for
    # VK_KHR_cooperative_matrix, types as "float16"/"float32"...; empty without the feature.
    cooperative_matrix_shapes: tuple[tuple, ...] = ()
    # VK_NV_cooperative_matrix2's workgroup-scope matrices of flexible sizes loaded through tensor layouts
    # (all three features enabled), its list of (M, N, K granularity, A, B, C, result type, scope,
    # workgroup invocations) and cooperativeMatrixFlexibleDimensionsMaxDimension.
    cooperative_matrix_workgroup: bool = False
    cooperative_matrix_flexible: tuple[tuple, ...] = ()
    cooperative_matrix_max_dimension: int = 0
    # and its row reductions, accumulator conversions and per-element functions (all three enabled)
    cooperative_matrix_workgroup_ops: bool = False

    def missing_for_dtype(self, dtype_name: str) -> list[str]:
        """The Vulkan features a tensor of ``dtype_name`` needs and this device lacks (empty: it has them).

        >>> DeviceFeatures().missing_for_dtype("float64")
        ['shaderFloat64']
        """
        return [VULKAN_NAMES[f] for f in DTYPE_FEATURES.get(dtype_name, ()) if not getattr(self, f)]

    @property
    def subgroup_shuffle(self) -> bool:
        return bool(self.subgroup_ops & SUBGROUP_SHUFFLE)

    def has_matrix_shape(self, m: int, n: int, k: int, ab: str = "float16", c: str = "float32") -> bool:
        """Whether the device multiplies ``ab`` matrices M×K · K×N into ``c`` (and gives ``c``) per subgroup.

        >>> DeviceFeatures.h200_like().has_matrix_shape(16, 16, 16)
        True
        """
        wanted = (m, n, k, ab, ab, c, c, "subgroup")
        return self.cooperative_matrix and any(tuple(shape) == wanted for shape in self.cooperative_matrix_shapes)

    def has_flexible_shape(
        self, m: int, n: int, k: int, invocations: int, ab: str = "float16", c: str = "float32"
    ) -> bool:
        """Whether workgroups of ``invocations`` may multiply ``ab`` matrices M×K · K×N into ``c`` at workgroup
        scope (VK_NV_cooperative_matrix2: a listed entry's granularities divide the sizes).

        >>> DeviceFeatures.h200_like().has_flexible_shape(128, 128, 64, 128)
        True
        """
        if not self.cooperative_matrix_workgroup or max(m, n, k) > self.cooperative_matrix_max_dimension:
            return False
        for gm, gn, gk, a, b, cc, result, scope, threads in self.cooperative_matrix_flexible:
            types_fit = (a, b, cc, result, scope) == (ab, ab, c, c, "workgroup") and threads == invocations
            if types_fit and m % gm == 0 and n % gn == 0 and k % gk == 0:
                return True
        return False

    @property
    def target_env(self) -> str:
        """The ``--target-env`` for spirv-as / spirv-val, e.g. ``'vulkan1.2'`` for SPIR-V 1.5."""
        try:
            return _TARGET_ENVS[tuple(self.spirv_version)]
        except KeyError:
            known = ", ".join(f"{a}.{b}" for a, b in _TARGET_ENVS)
            raise ValueError(f"SPIR-V version {self.spirv_version} not supported (known: {known})") from None

    @classmethod
    def lavapipe_like(cls) -> DeviceFeatures:
        """Mesa lavapipe 22.3 (Vulkan 1.3 on the CPU): the CI device."""
        return cls(
            float16=True,
            float64=True,
            int64=True,
            int16=True,
            int8=True,
            storage_buffer_16bit=True,
            storage_buffer_8bit=True,
            rte_float32=True,
            rte_float16=True,
            signed_zero_inf_nan_float32=True,
            signed_zero_inf_nan_float16=True,
            rte_float64=True,
            signed_zero_inf_nan_float64=True,
            subgroup_size=8,
            subgroup_ops=0xBF,
            subgroup_extended_types=True,
            vulkan_memory_model=True,
            buffer_device_address=True,
            max_push_constants_size=128,
            max_storage_buffer_range=1 << 27,
            max_compute_shared_memory_size=32768,
            max_workgroup_invocations=1024,
            max_workgroup_size=(1024, 1024, 1024),
            max_workgroup_count=(65535, 65535, 65535),
            spirv_version=(1, 6),
        )

    @classmethod
    def h200_like(cls) -> DeviceFeatures:
        """NVIDIA H200, driver 580 (Vulkan 1.4)."""
        return cls(
            float16=True,
            float64=True,
            int64=True,
            int16=True,
            int8=True,
            storage_buffer_16bit=True,
            storage_buffer_8bit=True,
            rte_float32=True,
            rte_float16=True,
            signed_zero_inf_nan_float32=True,
            signed_zero_inf_nan_float16=True,
            rte_float64=True,
            signed_zero_inf_nan_float64=True,
            subgroup_size=32,
            subgroup_ops=0x7FF,
            subgroup_extended_types=True,
            cooperative_matrix=True,
            vulkan_memory_model=True,
            buffer_device_address=True,
            max_push_constants_size=256,
            max_storage_buffer_range=(1 << 32) - 1,
            max_compute_shared_memory_size=49152,
            max_workgroup_invocations=1024,
            max_workgroup_size=(1024, 1024, 64),
            max_workgroup_count=((1 << 31) - 1, 65535, 65535),
            spirv_version=(1, 6),
            # f16 x f16 -> f32 shapes of the H200's list (reference/vulkan.md)
            cooperative_matrix_shapes=tuple(
                (m, n, k, "float16", "float16", "float32", "float32", "subgroup")
                for m, n, k in ((16, 16, 16), (16, 8, 16), (16, 8, 8))
            ),
            # VK_NV_cooperative_matrix2 (extra/proto_coopmat2.py ran 128x128x64 with 128 and 256 invocations)
            cooperative_matrix_workgroup=True,
            cooperative_matrix_flexible=tuple(
                (16, 16, 16, "float16", "float16", "float32", "float32", "workgroup", threads) for threads in (128, 256)
            ),
            cooperative_matrix_max_dimension=256,
            cooperative_matrix_workgroup_ops=True,
        )
