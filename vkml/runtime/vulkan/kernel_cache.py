"""Compiled kernels (SPIR-V + push-constant layout), cached in memory and on disk by IR hash.

The key is a SHA-256 of the kernel's IR text, the device features codegen was given, the
bindings it reaches by device address (``by_address``, for buffers beyond
``maxStorageBufferRange``; empty for almost every kernel), and a fingerprint of the codegen
sources (so a changed code generator never reuses old SPIR-V).
A second process with the same cache folder compiles nothing.

The folder is untrusted input: another process, a full disk or a hostile user may have put
anything there. An entry names its key and vkml's version inside it and is used only when
both match the lookup's; it is read (``read_entry``) without following a symlink, without
blocking (a FIFO), only from a regular file of at most ``MAX_ENTRY_BYTES``. An entry that
fails any check, or whose SPIR-V the driver rejects (vkml/runtime/vulkan/pipelines.py), is removed
and rebuilt from the IR: a damaged cache costs a recompile, never a crash, a hang or a wrong
kernel. A folder that cannot be written (a file, read-only, full) costs a warning once; the
kernels are then compiled in memory.

The folder is bounded (``config.cache_max_bytes()``, ``VKML_CACHE_MAX_BYTES``): a hit touches
the entry's times, and a write that takes the folder over its budget removes the least
recently used files (``DiskBudget``).

    >>> cache = KernelCache(features)                # doctest: +SKIP
    >>> binary = cache.binary(kernel)                # compiles once, then memory, then disk
    >>> binary.spirv[:4]                             # doctest: +SKIP
    b'\\x03\\x02#\\x07'

Every entry carries an HMAC of its body under the folder's secret key
(vkml/runtime/vulkan/cache_secret.py): an entry this user's vkml wrote after its SPIR-V passed
spirv-val says so, and a later process hands it to the driver without running spirv-val again
(a warm start runs no tool). Where the folder has no trusted key, entries are signed with the
empty key and every entry read is validated first.

File format (``<cache>/kernels/<key>.spv``): ``MAGIC``, the HMAC-SHA256 of the rest, a 4-byte
little-endian length, that many bytes of JSON (key, vkml version, whether spirv-val passed it,
push constants, push size, entry point, address slots), the SPIR-V words.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import os
import stat
import struct
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ... import config
from ...codegen import compile_kernel
from ...codegen import tools as spirv_tools
from ...codegen.features import DeviceFeatures
from ...errors import CompileError
from ...ir import lru
from ...ir import types as T
from ...ir.core import Kernel
from ..counters import count
from .cache_secret import mac_key
from .dump import dump_kernel

MAGIC = b"VKMLSPV3"
SPIRV_MAGIC = 0x07230203
# No kernel's SPIR-V comes near this; a larger file is not an entry (a symlink to /dev/zero, a hostile file).
MAX_ENTRY_BYTES = 16 << 20


def vkml_version() -> str:
    """vkml's version as an entry records it: the package version and the cache format."""
    return f"{config.VERSION}/{MAGIC.decode()}"


@dataclass(frozen=True)
class KernelBinary:
    """What the runtime needs from a compiled kernel: SPIR-V and the push-constant layout."""

    spirv: bytes
    push_constants: tuple[tuple[str, T.DType, int], ...]  # (param name, dtype, byte offset)
    push_size: int
    entry_point: str = "main"
    address_slots: tuple[tuple[int, int], ...] = ()  # (binding, byte offset) of each uint64 device address
    # Read from the disk cache rather than compiled in this process: a driver error rebuilds it (pipelines.py).
    from_disk: bool = field(default=False, compare=False)
    # Its SPIR-V passed spirv-val: compiled by codegen (which validates), or read from an entry whose MAC
    # verifies under the folder's trusted key and which says so (vkml/runtime/vulkan/cache_secret.py).
    validated: bool = field(default=False, compare=False)

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

    def to_bytes(self, key: str = "", secret: bytes | None = None) -> bytes:
        """The entry for cache key ``key``: the key and vkml's version travel inside the MAC'd body.

        ``secret``: the MAC key (default: the cache folder's, ``entry_secret``).
        """
        header = {
            "key": key,
            "version": vkml_version(),
            "validated": self.validated,
            "push_constants": [[name, dtype.name, offset] for name, dtype, offset in self.push_constants],
            "push_size": self.push_size,
            "entry_point": self.entry_point,
            "address_slots": [list(slot) for slot in self.address_slots],
        }
        header_bytes = json.dumps(header, sort_keys=True).encode()
        body = struct.pack("<I", len(header_bytes)) + header_bytes + self.spirv
        return MAGIC + entry_mac(body, secret) + body

    @classmethod
    def from_bytes(cls, data: bytes, key: str = "", secret: bytes | None = None) -> KernelBinary | None:
        """The binary stored in ``data`` for cache key ``key``, or None if it is damaged in any way,
        names another key or another vkml version, or was not signed with ``secret`` (default: the
        cache folder's). It counts as ``validated`` only where the secret is a trusted key."""
        try:
            if data[: len(MAGIC)] != MAGIC:
                return None
            secret = entry_secret() if secret is None else secret
            digest, body = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
            if not hmac.compare_digest(entry_mac(body, secret), digest):
                return None
            (length,) = struct.unpack_from("<I", body)
            if length > len(body) - 4:
                return None
            header = json.loads(body[4 : 4 + length])
            # A valid entry copied under another name is another kernel: the MAC cannot tell, the key can.
            if header["key"] != key or header["version"] != vkml_version():
                return None
            spirv = body[4 + length :]
            if len(spirv) < 20 or len(spirv) % 4 or struct.unpack_from("<I", spirv)[0] != SPIRV_MAGIC:
                return None
            push_size = int(header["push_size"])
            push_constants = tuple((str(n), T.by_name(d), int(o)) for n, d, o in header["push_constants"])
            address_slots = tuple((int(b), int(o)) for b, o in header["address_slots"])
            offsets = [o for _, _, o in push_constants] + [o for _, o in address_slots]
            if not 0 <= push_size <= 1 << 16 or any(not 0 <= o < push_size for o in offsets):
                return None
            return cls(
                spirv=spirv,
                push_constants=push_constants,
                push_size=push_size,
                entry_point=str(header["entry_point"]),
                address_slots=address_slots,
                from_disk=True,
                validated=bool(secret) and header.get("validated") is True,
            )
        except Exception:  # noqa: BLE001  (whatever the bytes are, the answer is "not an entry")
            return None

    def fits(self, kernel: Kernel) -> bool:
        """Whether the push constants name exactly ``kernel``'s parameters with their dtypes.

        A forged entry that passes every other check must still not make a dispatch miss a parameter.
        """
        given = sorted((name, dtype.name) for name, dtype, _ in self.push_constants)
        return given == sorted(kernel.param_types())


def entry_secret() -> bytes:
    """The MAC key of the cache folder's entries: its trusted key, or b"" where it has none (cache_secret.py)."""
    return mac_key(config.cache_dir()) or b""


def entry_mac(body: bytes, secret: bytes | None = None) -> bytes:
    """HMAC-SHA256 of an entry's ``body`` under ``secret`` (default: ``entry_secret()``)."""
    return hmac.new(entry_secret() if secret is None else secret, body, hashlib.sha256).digest()


def kernel_ir_text(kernel: Kernel) -> str:
    """The kernel's canonical IR text: what every cache key is made from."""
    return str(kernel)


def codegen_sources() -> list[Path]:
    """The code generator's source files (the codegen package's folder, wherever it lies)."""
    return sorted(Path(spirv_tools.__file__).resolve().parent.rglob("*.py"))


@functools.cache
def codegen_fingerprint() -> str:
    """A hash of vkml's code generator sources: part of every kernel-cache key."""
    root = Path(spirv_tools.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in codegen_sources():
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def default_compiler(kernel: Kernel, features: DeviceFeatures, by_address: tuple[int, ...] = ()):
    return compile_kernel(kernel, features, by_address)


# ---------------------------------------------------------------- untrusted files


_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def read_entry(path: Path, max_bytes: int, touch: bool = False) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a symlink) of at most ``max_bytes``, else None.

    Never blocks: the open does not follow a final symlink (``/dev/zero``) and does not wait
    for a FIFO's writer; the type and size come from the opened file (``fstat``), so a file
    swapped after a check is not read. ``touch`` sets its times to now: the disk budget's
    least-recently-used order.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        chunks, left = [], info.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                return None  # shrank while read: another writer; not an entry
            chunks.append(chunk)
            left -= len(chunk)
        if os.read(fd, 1):
            return None  # grew while read
        if touch:
            with contextlib.suppress(OSError):
                os.utime(fd)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def remove_entry(path: Path) -> None:
    """Remove whatever is at ``path`` (a file, a link, a FIFO, a folder) so that a good entry can take its place.

    A symlink is removed, never followed; a folder's tree is removed without following links in it.
    """
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            import shutil  # here: shutil loads bz2 and lzma, and a warm start removes nothing

            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a half."""
    import tempfile  # here: tempfile loads random, and a warm start writes nothing

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if os.path.isdir(path) and not os.path.islink(path):
            remove_entry(path)  # os.replace cannot replace a folder
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_warned: set[str] = set()


def warn_unwritable(folder: Path, error: OSError) -> None:
    """Say once per folder that the cache cannot be written there (vkml keeps working from memory)."""
    if str(folder) in _warned:
        return
    _warned.add(str(folder))
    reason = error.strerror or type(error).__name__
    warnings.warn(
        f"vkml: cannot write the kernel cache in {str(folder)!r} ({reason}); compiled kernels are kept "
        "in memory only (set VKML_CACHE_DIR to a writable folder)",
        RuntimeWarning,
        stacklevel=3,
    )


class DiskBudget:
    """Keeps one cache folder's files within ``config.cache_max_bytes()``, least recently used out first.

    The folder is scanned once per process (the first write) for its total; each write adds
    its size. Only a write that takes the total over the budget scans again, removes the
    oldest files (by modification time, which a hit refreshes) down to 3/4 of the budget and
    resets the total: a scan per a quarter-budget of writes, not per write. Other processes'
    writes are seen at the next scan.
    """

    SUFFIXES = (".spv", ".bin", ".tpl")

    def __init__(self):
        self.total: int | None = None
        self.folder: Path | None = None
        self.lock = threading.Lock()

    def added(self, folder: Path, nbytes: int) -> None:
        """``nbytes`` were just written under ``folder`` (the cache root)."""
        budget = config.cache_max_bytes()
        with self.lock:
            if self.total is None or self.folder != folder:
                self.folder, self.total = folder, sum(size for _, size, _ in self._files(folder))
            else:
                self.total += nbytes
            if self.total > budget:
                self.total = self._evict(folder, budget * 3 // 4)

    def _files(self, folder: Path) -> list[tuple[float, int, Path]]:
        """(mtime, size, path) of every cache file (regular files only; links and the rest are not ours)."""
        found = []
        for sub in ("kernels", "pipelines", "templates"):
            try:
                names = os.listdir(folder / sub)
            except OSError:
                continue
            for name in names:
                if not name.endswith(self.SUFFIXES):
                    continue
                path = folder / sub / name
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    found.append((info.st_mtime, info.st_size, path))
        return found

    def _evict(self, folder: Path, target: int) -> int:
        files = sorted(self._files(folder), key=lambda item: item[0])
        total = sum(size for _, size, _ in files)
        for _, size, path in files:
            if total <= target:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
                count("cache_files_evicted")
        return total


disk_budget = DiskBudget()


# ---------------------------------------------------------------- the cache


# SPIR-V that passed spirv-val in this process, by the SHA-256 of its bytes and the target
# environment: an entry read from disk again (after the memory level dropped it, or by a second
# device) is not validated again. Validity depends on those bytes alone, so an entry changed
# on disk since has another digest and is validated afresh.
_validated = lru.LRU("validated_spirv")


def _validated_key(spirv: bytes, target_env: str) -> tuple[bytes, str]:
    return hashlib.sha256(spirv).digest(), target_env


class KernelCache:
    """IR → ``KernelBinary`` for one set of device features: memory, then disk, then codegen.

    The memory level is an LRU bounded by ``lru.LIMITS["kernel_binaries"]`` (entries, SPIR-V bytes).
    """

    def __init__(self, features: DeviceFeatures, compiler: Callable | None = None):
        self.features = features
        self.compiler = compiler or default_compiler
        self._memory = lru.LRU("kernel_binaries", weight=lambda binary: len(binary.spirv))

    def key(self, ir_text: str, by_address: tuple[int, ...] = ()) -> str:
        digest = hashlib.sha256()
        for part in (ir_text, repr(self.features), codegen_fingerprint()):
            digest.update(part.encode() + b"\0")
        if by_address:  # absent for descriptor-only kernels, so their keys stay what they were
            digest.update(f"by_address={sorted(by_address)}".encode() + b"\0")
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return config.cache_dir() / "kernels" / f"{key}.spv"

    def binary(
        self, kernel: Kernel, ir_text: str | None = None, by_address: tuple[int, ...] = (), rebuild: bool = False
    ) -> KernelBinary:
        """The compiled form of ``kernel``; ``counters['kernels_compiled']`` counts real compilations.

        ``by_address``: bindings the kernel reaches through a device address (see ``vkml.codegen``).
        ``rebuild``: the binary found before was rejected (by the driver): drop it from memory and
        disk and compile afresh.
        """
        ir_text = ir_text if ir_text is not None else kernel_ir_text(kernel)
        key = self.key(ir_text, by_address)
        path = self.path(key)
        if rebuild:
            self._memory.pop(key)
            remove_entry(path)
            count("cache_entries_rejected")
        else:
            found = self._memory.get(key)
            if found is not None:
                return found
        found = None if rebuild else self._read(path, key, kernel)
        if found is None:
            # A compiler that predates by_address (the tests' hand compilers) is only asked for descriptor kernels.
            compiled = (
                self.compiler(kernel, self.features, by_address) if by_address else self.compiler(kernel, self.features)
            )
            found = KernelBinary.from_compiled(compiled)
            if self.compiler is default_compiler:  # codegen validated it (a hand compiler may not have)
                found = dataclasses.replace(found, validated=True)
                _validated.put(_validated_key(found.spirv, self.features.target_env), True)
            count("kernels_compiled")
            self._write(path, found.to_bytes(key))
        self._memory.put(key, found)
        dump_kernel(kernel, ir_text, found.spirv, self.features, key, by_address)
        return found

    def _read(self, path: Path, key: str, kernel: Kernel) -> KernelBinary | None:
        """The entry at ``path`` for ``key``; a file there that is not one is removed (and counted).

        An entry's SPIR-V passes spirv-val before any driver sees it, as a fresh compile does, unless
        its MAC under the folder's trusted key says this user's vkml validated it when it wrote it:
        a forged entry (which cannot have that MAC) must cost a recompile, not a driver crash.
        """
        data = read_entry(path, MAX_ENTRY_BYTES, touch=True)
        found = None if data is None else KernelBinary.from_bytes(data, key)
        if found is not None and found.fits(kernel) and (found.validated or self._valid(found)):
            return found
        if data is not None or os.path.lexists(path):
            remove_entry(path)
            count("cache_entries_rejected")
        return None

    def _valid(self, binary: KernelBinary) -> bool:
        """Whether ``binary``'s SPIR-V passes spirv-val (once per process for the same bytes: ``_validated``)."""
        seen = _validated_key(binary.spirv, self.features.target_env)
        if _validated.get(seen):
            return True
        try:
            spirv_tools.validate(binary.spirv, self.features.target_env, isolated=True)
        except CompileError:
            return False
        _validated.put(seen, True)
        return True

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        """Store an entry; a folder that cannot take it (a file, read-only, full) costs a warning, once."""
        try:
            write_atomically(path, data)
        except OSError as error:
            warn_unwritable(path.parent, error)
            return
        disk_budget.added(path.parent.parent, len(data))
