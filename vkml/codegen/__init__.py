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

Buffers larger than ``maxStorageBufferRange`` (lavapipe: 128 MiB) cannot be reached through a
descriptor. The caller names them in ``by_address`` (binding indices): the kernel then reads
and writes them through a ``PhysicalStorageBuffer`` pointer (buffer device address, core in
Vulkan 1.2) whose 64-bit value the runtime puts in the push-constant block after the
parameters (``CompiledKernel.address_slots``); their descriptor binding is left unused. The
element index is widened to 64 bits before the address computation, so byte offsets past
4 GiB are exact. Only those buffers go by address, not every buffer: measured with
bench/bench_addresses.py on 2^24 float32, lavapipe runs ``x * 2 + 1`` and ``a + b`` 2.0–2.7×
slower by address than by descriptor (the same with a 32-bit index, so it is not the 64-bit
arithmetic); the H200 runs both at the same speed (0.97–1.09× at 2^26). An address also takes
8 of lavapipe's 128 push-constant bytes, and a kernel without addresses needs neither Int64
nor bufferDeviceAddress. ``by_address`` is part of the compile-cache key.

    ck = compile_kernel(kernel, DeviceFeatures.lavapipe_like(), by_address={0})
    ck.address_slots      # ((0, 8),): binding 0's address sits at push-constant byte 8
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
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
    ``address_slots`` lists ``(binding, byte offset)`` of each buffer reached by address (a
    uint64 device address, after the parameters, 8-byte aligned); ``push_size`` is the block's
    size in bytes (a multiple of 4; 0 when there are no params and no addresses).
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
    address_slots: tuple[tuple[int, int], ...] = ()
    compile_ms: float = field(default=0.0, compare=False)  # verify + emit + assemble + validate

    @property
    def entry_point(self) -> str:
        """The OpEntryPoint name to pass as ``pName`` (the kernel's name); alias of ``entry``."""
        return self.entry

    def pack_params(self, values: dict, addresses: dict[int, int] | None = None) -> bytes:
        """The push-constant bytes for ``values`` (param name -> Python or numpy scalar) and
        ``addresses`` (binding -> device address, for the buffers in ``address_slots``).

        >>> ck.pack_params({"n": 3, "scale": 0.5})   # doctest: +SKIP
        """
        missing = [name for name, _, _ in self.push_constants if name not in values]
        missing += [f"address of binding {b}" for b, _ in self.address_slots if b not in (addresses or {})]
        if missing:
            raise KeyError(f"kernel {self.entry!r}: no value for parameter(s) {', '.join(missing)}")
        out = bytearray(self.push_size)
        for name, dtype, offset in self.push_constants:
            out[offset : offset + push_slot_nbytes(dtype)] = _encode_param(dtype, values[name])
        for binding, offset in self.address_slots:
            out[offset : offset + 8] = struct.pack("<Q", addresses[binding])
        return bytes(out)


def _encode_param(dtype: DType, value) -> bytes:
    if dtype is T.bool_:
        return struct.pack("<I", 1 if bool(value) else 0)
    if dtype is T.float16:
        return struct.pack("<I", int(np.array(value, dtype=np.float16).view(np.uint16)))
    return np.array(value).astype(dtype.np, casting="unsafe").astype(dtype.np.newbyteorder("<")).tobytes()


def emit_spirv(kernel: Kernel, features: DeviceFeatures, by_address: Iterable[int] = ()) -> str:
    """The annotated SPIR-V assembly of ``kernel`` for a device with ``features``.

    ``by_address``: bindings reached through a buffer device address (see the module docstring).
    """
    from .spirv import emit_spirv as _emit

    return _emit(kernel, features, by_address)


def compile_kernel(kernel: Kernel, features: DeviceFeatures, by_address: Iterable[int] = ()) -> CompiledKernel:
    """Verify, emit, assemble and validate ``kernel``; raise ``CompileError`` on any failure.

    ``by_address``: bindings reached through a buffer device address (see the module docstring).
    """
    from .spirv import compile_kernel as _compile

    return _compile(kernel, features, by_address)
