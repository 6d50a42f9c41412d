"""Kernel IR -> SPIR-V for Vulkan: emit annotated assembly, assemble and validate it.

    from vkml.codegen import compile_kernel
    from vkml.codegen.features import DeviceFeatures
    ck = compile_kernel(kernel, DeviceFeatures.lavapipe_like())
    ck.spirv          # validated SPIR-V words, ready for vkCreateShaderModule
    ck.pack_params({"n": 1000})   # the push-constant bytes for one dispatch

Binding conventions (the runtime relies on them): descriptor set 0, binding ``i`` is
``kernel.buffers[i]``, a storage buffer holding a runtime array of the buffer's element type,
except bool buffers, which hold one uint32 (0 or 1) per element. Parameters live in one
push-constant block, in declaration order, each at an offset aligned to its slot size (see
``CompiledKernel``). Codegen is pure: it imports only ``vkml.ir`` and ``vkml.errors``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..ir import types as T
from ..ir.core import BufferDecl, Kernel
from ..ir.types import DType
from .features import DeviceFeatures

__all__ = ["CompiledKernel", "DeviceFeatures", "compile_kernel", "emit_spirv", "push_slot_nbytes"]


def push_slot_nbytes(dtype: DType) -> int:
    """Bytes a parameter of ``dtype`` takes in the push-constant block (and its alignment).

    bool and float16 parameters take a 32-bit slot (bool: 0 or 1; float16: its bits in the low
    16, high 16 zero), so no 8/16-bit push-constant capability is needed.
    """
    return max(4, dtype.nbytes)


@dataclass(frozen=True)
class CompiledKernel:
    """A validated SPIR-V module for one kernel, and how to bind it.

    ``push_constants`` lists ``(param name, dtype, byte offset)`` in declaration order;
    ``push_size`` is the block's size in bytes (a multiple of 4; 0 when there are no params).
    ``features_used`` names the ``DeviceFeatures`` fields the module relies on (e.g. ``"int64"``).
    """

    spirv: bytes
    asm: str
    entry: str
    push_constants: list[tuple[str, DType, int]]
    push_size: int
    local_size: tuple[int, int, int]
    buffers: tuple[BufferDecl, ...]
    features_used: frozenset[str]
    compile_ms: float = field(default=0.0, compare=False)  # verify + emit + assemble + validate

    @property
    def entry_point(self) -> str:
        """The OpEntryPoint name to pass as ``pName`` (the kernel's name); alias of ``entry``."""
        return self.entry

    def pack_params(self, values: dict) -> bytes:
        """The push-constant bytes for ``values`` (param name -> Python or numpy scalar).

        >>> ck.pack_params({"n": 3, "scale": 0.5})   # doctest: +SKIP
        """
        missing = [name for name, _, _ in self.push_constants if name not in values]
        if missing:
            raise KeyError(f"kernel {self.entry!r}: no value for parameter(s) {', '.join(missing)}")
        out = bytearray(self.push_size)
        for name, dtype, offset in self.push_constants:
            out[offset : offset + push_slot_nbytes(dtype)] = _encode_param(dtype, values[name])
        return bytes(out)


def _encode_param(dtype: DType, value) -> bytes:
    if dtype is T.bool_:
        return struct.pack("<I", 1 if bool(value) else 0)
    if dtype is T.float16:
        return struct.pack("<I", int(np.array(value, dtype=np.float16).view(np.uint16)))
    return np.array(value).astype(dtype.np, casting="unsafe").astype(dtype.np.newbyteorder("<")).tobytes()


def emit_spirv(kernel: Kernel, features: DeviceFeatures) -> str:
    """The annotated SPIR-V assembly of ``kernel`` for a device with ``features``."""
    from .spirv import emit_spirv as _emit

    return _emit(kernel, features)


def compile_kernel(kernel: Kernel, features: DeviceFeatures) -> CompiledKernel:
    """Verify, emit, assemble and validate ``kernel``; raise ``CompileError`` on any failure."""
    from .spirv import compile_kernel as _compile

    return _compile(kernel, features)
