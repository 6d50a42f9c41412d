"""``VKML_DUMP_SPIRV=DIR``: write each kernel a process loads for Vulkan as IR, assembly and binary."""

from __future__ import annotations

from pathlib import Path

from ... import config
from ...codegen import emit_spirv
from ...codegen.features import DeviceFeatures
from ...ir.core import Kernel


def dump_kernel(
    kernel: Kernel, ir_text: str, spirv: bytes, features: DeviceFeatures, key: str, by_address: tuple[int, ...] = ()
) -> Path | None:
    """Write ``<name>-<key>.vkir/.spvasm/.spv`` into the dump folder, if one is set; return the stem."""
    folder = config.dump_spirv_dir()
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{kernel.name}-{key[:12]}"
    stem.with_suffix(".vkir").write_text(ir_text)
    stem.with_suffix(".spvasm").write_text(emit_spirv(kernel, features, by_address))
    stem.with_suffix(".spv").write_bytes(spirv)
    return stem
