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
arithmetic); a discrete NVIDIA GPU runs both at the same speed. An address also takes
8 of lavapipe's 128 push-constant bytes, and a kernel without addresses needs neither Int64
nor bufferDeviceAddress. ``by_address`` is part of the compile-cache key.

    ck = compile_kernel(kernel, DeviceFeatures.lavapipe_like(), by_address={0})
    ck.address_slots      # ((0, 8),): binding 0's address sits at push-constant byte 8
"""

from __future__ import annotations

from collections.abc import Iterable

from ..ir.core import Kernel
from . import spirv
from .compiled import CompiledKernel, push_slot_nbytes
from .features import DeviceFeatures

__all__ = ["CompiledKernel", "DeviceFeatures", "compile_kernel", "emit_spirv", "push_slot_nbytes"]


def emit_spirv(kernel: Kernel, features: DeviceFeatures, by_address: Iterable[int] = ()) -> str:
    """The annotated SPIR-V assembly of ``kernel`` for a device with ``features``.

    ``by_address``: bindings reached through a buffer device address (see the module docstring).
    """
    return spirv.emit_spirv(kernel, features, by_address)


def compile_kernel(kernel: Kernel, features: DeviceFeatures, by_address: Iterable[int] = ()) -> CompiledKernel:
    """Verify, emit, assemble and validate ``kernel``; raise ``CompileError`` on any failure.

    ``by_address``: bindings reached through a buffer device address (see the module docstring).
    """
    return spirv.compile_kernel(kernel, features, by_address)
