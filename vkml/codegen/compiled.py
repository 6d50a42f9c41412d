"""What compiling a kernel yields: validated SPIR-V and how to bind it (push constants, addresses)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..ir import types as T
from ..ir.core import BufferDecl
from ..ir.types import DType


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
