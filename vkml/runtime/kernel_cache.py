"""Compiled kernels (SPIR-V + push-constant layout), cached in memory and on disk by IR hash.

The key is a SHA-256 of the kernel's IR text, the device features codegen was given, the
bindings it reaches by device address (``by_address``, for buffers beyond
``maxStorageBufferRange``; empty for almost every kernel), and a fingerprint of the codegen
sources (so a changed code generator never reuses old SPIR-V).
A second process with the same cache folder compiles nothing. A damaged file (truncated,
garbage, wrong version) is ignored and rewritten, never trusted.

    >>> cache = KernelCache(features)                # doctest: +SKIP
    >>> binary = cache.binary(kernel)                # compiles once, then memory, then disk
    >>> binary.spirv[:4]                             # doctest: +SKIP
    b'\\x03\\x02#\\x07'

File format (``<cache>/kernels/<key>.spv``): ``MAGIC``, the SHA-256 of the rest, a 4-byte
little-endian length, that many bytes of JSON (push constants, push size, entry point), the
SPIR-V words.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..codegen.features import DeviceFeatures
from ..ir import types as T
from ..ir.core import Kernel
from .counters import counters
from .dump import dump_kernel

MAGIC = b"VKMLSPV1"
SPIRV_MAGIC = 0x07230203


@dataclass(frozen=True)
class KernelBinary:
    """What the runtime needs from a compiled kernel: SPIR-V and the push-constant layout."""

    spirv: bytes
    push_constants: tuple[tuple[str, T.DType, int], ...]  # (param name, dtype, byte offset)
    push_size: int
    entry_point: str = "main"
    address_slots: tuple[tuple[int, int], ...] = ()  # (binding, byte offset) of each uint64 device address

    @classmethod
    def from_compiled(cls, compiled) -> KernelBinary:
        """From codegen's ``CompiledKernel`` (``.spirv``, ``.push_constants``, ``.push_size``, ``.address_slots``)."""
        return cls(
            spirv=bytes(compiled.spirv),
            push_constants=tuple((name, dtype, int(offset)) for name, dtype, offset in compiled.push_constants),
            push_size=int(compiled.push_size),
            entry_point=getattr(compiled, "entry_point", "main"),
            address_slots=tuple((int(b), int(o)) for b, o in getattr(compiled, "address_slots", ())),
        )

    def to_bytes(self) -> bytes:
        header = {
            "push_constants": [[name, dtype.name, offset] for name, dtype, offset in self.push_constants],
            "push_size": self.push_size,
            "entry_point": self.entry_point,
            "address_slots": [list(slot) for slot in self.address_slots],
        }
        header_bytes = json.dumps(header, sort_keys=True).encode()
        body = struct.pack("<I", len(header_bytes)) + header_bytes + self.spirv
        return MAGIC + hashlib.sha256(body).digest() + body

    @classmethod
    def from_bytes(cls, data: bytes) -> KernelBinary | None:
        """The binary stored in ``data``, or None if it is damaged in any way."""
        try:
            if data[: len(MAGIC)] != MAGIC:
                return None
            digest, body = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
            if hashlib.sha256(body).digest() != digest:
                return None
            (length,) = struct.unpack_from("<I", body)
            header = json.loads(body[4 : 4 + length])
            spirv = body[4 + length :]
            if len(spirv) < 20 or len(spirv) % 4 or struct.unpack_from("<I", spirv)[0] != SPIRV_MAGIC:
                return None
            return cls(
                spirv=spirv,
                push_constants=tuple((n, T.by_name(d), int(o)) for n, d, o in header["push_constants"]),
                push_size=int(header["push_size"]),
                entry_point=str(header["entry_point"]),
                address_slots=tuple((int(b), int(o)) for b, o in header.get("address_slots", ())),
            )
        except Exception:
            return None


def kernel_ir_text(kernel: Kernel) -> str:
    """The kernel's canonical IR text: what every cache key is made from."""
    return str(kernel)


@functools.cache
def codegen_fingerprint() -> str:
    """A hash of vkml's code generator sources: part of every kernel-cache key."""
    root = Path(__file__).resolve().parent.parent / "codegen"
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def default_compiler(kernel: Kernel, features: DeviceFeatures, by_address: tuple[int, ...] = ()):
    from ..codegen import compile_kernel

    return compile_kernel(kernel, features, by_address)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


class KernelCache:
    """IR → ``KernelBinary`` for one set of device features: memory, then disk, then codegen."""

    def __init__(self, features: DeviceFeatures, compiler: Callable | None = None):
        self.features = features
        self.compiler = compiler or default_compiler
        self._memory: dict[str, KernelBinary] = {}

    def key(self, ir_text: str, by_address: tuple[int, ...] = ()) -> str:
        digest = hashlib.sha256()
        for part in (ir_text, repr(self.features), codegen_fingerprint()):
            digest.update(part.encode() + b"\0")
        if by_address:  # absent for descriptor-only kernels, so their keys stay what they were
            digest.update(f"by_address={sorted(by_address)}".encode() + b"\0")
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return config.cache_dir() / "kernels" / f"{key}.spv"

    def binary(self, kernel: Kernel, ir_text: str | None = None, by_address: tuple[int, ...] = ()) -> KernelBinary:
        """The compiled form of ``kernel``; ``counters['kernels_compiled']`` counts real compilations.

        ``by_address``: bindings the kernel reaches through a device address (see ``vkml.codegen``).
        """
        ir_text = ir_text if ir_text is not None else kernel_ir_text(kernel)
        key = self.key(ir_text, by_address)
        found = self._memory.get(key)
        if found is not None:
            return found
        path = self.path(key)
        found = self._read(path)
        if found is None:
            # A compiler that predates by_address (the tests' hand compilers) is only asked for descriptor kernels.
            compiled = (
                self.compiler(kernel, self.features, by_address) if by_address else self.compiler(kernel, self.features)
            )
            found = KernelBinary.from_compiled(compiled)
            counters["kernels_compiled"] += 1
            try:
                write_atomically(path, found.to_bytes())
            except OSError:
                pass  # a read-only or full cache folder only costs a recompile next time
        self._memory[key] = found
        dump_kernel(kernel, ir_text, found.spirv, self.features, key, by_address)
        return found

    @staticmethod
    def _read(path: Path) -> KernelBinary | None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return KernelBinary.from_bytes(data)
