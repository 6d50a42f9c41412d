"""Lowered kernel templates on disk, for one Vulkan device: what lets a warm process skip lowering.

The scheduler's template cache (vkml/schedule/scheduler.py) keeps in memory, per group structure,
the kernels lowered for it; its disk level (vkml/schedule/template_disk.py) turns a template into
bytes and back. This module stores those bytes: ``<cache>/templates/<key>.tpl``, one file per key,
written atomically, read as the kernel cache reads its entries (vkml/runtime/vulkan/kernel_cache.py:
no symlink followed, no FIFO waited for, a regular file of at most ``MAX_TEMPLATE_BYTES``).

An entry is used only under the folder's trusted key (vkml/runtime/vulkan/cache_secret.py): its
MAC says this user's vkml wrote it, so its kernels are the ones lowered for that structure; a
template anybody could have written would name kernels of another computation, which the kernel
cache would compile and run faithfully. Without a trusted key the store holds nothing. The key
of an entry covers the scheduler's (the group's structure, the device's tuning, the fusion
limits), a hash of the lowering sources, the Python and numpy versions and this device's
features; the entry names its key and vkml's version inside, so a copied or stale entry is a
miss. Any entry that fails a check is removed (``cache_entries_rejected``) and the group lowered
again.

File format: ``MAGIC``, the HMAC-SHA256 of the rest under the folder's key, the UTF-8 JSON
``{"key", "version", "template"}``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sys
import threading
from pathlib import Path

import numpy as np

from ... import config
from ..counters import count
from .cache_secret import mac_key
from .kernel_cache import (
    KernelCache,
    codegen_fingerprint,
    disk_budget,
    read_entry,
    remove_entry,
    vkml_version,
    warn_unwritable,
    write_atomically,
)

MAGIC = b"VKMLTPL1"
# A template holds its kernels' text (a few hundred kB for the largest); a larger file is not an entry.
MAX_TEMPLATE_BYTES = 16 << 20


# What lowering reads (vkml/kernels/ and what it builds on), as folders and files under vkml/: hashed into
# every key. Named, not imported: this layer is below them.
LOWERING_SOURCES = ("ir", "ops", "graph", "kernels", "schedule", "config.py", "errors.py", "codegen/features.py")

_fingerprint_lock = threading.Lock()
_fingerprint: list[str] = []


def lowering_fingerprint() -> str:
    """A hash of the lowering sources' names and contents, computed once (``prefetch`` starts it early)."""
    with _fingerprint_lock:  # a second caller waits for the first one's result
        if not _fingerprint:
            root = Path(__file__).resolve().parent.parent.parent
            digest = hashlib.sha256()
            for path in _source_files(root):
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
            _fingerprint.append(digest.hexdigest())
        return _fingerprint[0]


def _source_files(root: Path) -> list[Path]:
    found = []
    for name in LOWERING_SOURCES:
        if name.endswith(".py"):
            found.append(root / name)
            continue
        for folder, subfolders, files in os.walk(root / name):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            found += [Path(folder) / f for f in sorted(files) if f.endswith((".py", ".lark"))]
    return found


def prefetch() -> None:
    """Hash the lowering and codegen sources in a thread, while the device opens and the first graph is built."""
    threading.Thread(target=_hash_sources, name="vkml-fingerprint", daemon=True).start()


def _hash_sources() -> None:
    with contextlib.suppress(Exception):  # a failure here is met again, and raised, where the hash is needed
        lowering_fingerprint()
        codegen_fingerprint()


class TemplateStore:
    """Templates by key for the device whose kernel cache is ``kernels`` (its features key both)."""

    def __init__(self, kernels: KernelCache):
        self.kernels = kernels
        # Lowering computes constants with numpy, in this Python: their versions key the entries too.
        versions = f"{sys.version}\0{np.__version__}\0"
        self._prefix = (versions + repr(kernels.features)).encode() + b"\0"

    def key(self, structure: str) -> str:
        """The file key of a template whose scheduler key is ``structure`` on this device."""
        fingerprint = lowering_fingerprint().encode() + b"\0"
        return hashlib.sha256(self._prefix + fingerprint + structure.encode()).hexdigest()

    @staticmethod
    def path(key: str) -> Path:
        return config.cache_dir() / "templates" / f"{key}.tpl"

    def load(self, key: str):
        """The stored template (the JSON value ``save`` was given) for ``key``, or None."""
        secret = mac_key(config.cache_dir())
        if secret is None:
            return None
        path = self.path(key)
        data = read_entry(path, MAX_TEMPLATE_BYTES, touch=True)
        found = None if data is None else _unpack(data, key, secret)
        if found is None and (data is not None or os.path.lexists(path)):
            self.reject(key)
        return found

    def reject(self, key: str) -> None:
        """Remove the entry for ``key``: it is damaged, or its kernels are not what it says."""
        remove_entry(self.path(key))
        count("cache_entries_rejected")

    def save(self, key: str, template) -> None:
        """Store ``template`` (JSON-able) for ``key``; nothing without a trusted key or a writable folder."""
        secret = mac_key(config.cache_dir())
        if secret is None:
            return
        body = json.dumps({"key": key, "version": vkml_version(), "template": template}, sort_keys=True).encode()
        data = MAGIC + hmac.new(secret, body, hashlib.sha256).digest() + body
        path = self.path(key)
        try:
            write_atomically(path, data)
        except OSError as error:
            warn_unwritable(path.parent, error)
            return
        disk_budget.added(path.parent.parent, len(data))

    def has_binary(self, ir_text: str) -> bool:
        """Whether the kernel cache holds, in memory or as a file, the SPIR-V of the kernel of ``ir_text``."""
        key = self.kernels.key(ir_text)
        return self.kernels._memory.get(key) is not None or os.path.isfile(self.kernels.path(key))


def _unpack(data: bytes, key: str, secret: bytes):
    """The template of an entry for ``key`` under ``secret``, or None if it is anything else."""
    try:
        if data[: len(MAGIC)] != MAGIC:
            return None
        digest, body = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
        if not hmac.compare_digest(hmac.new(secret, body, hashlib.sha256).digest(), digest):
            return None
        entry = json.loads(body)
        if not isinstance(entry, dict) or entry.get("key") != key or entry.get("version") != vkml_version():
            return None
        return entry.get("template")
    except Exception:  # noqa: BLE001  (whatever the bytes are, the answer is "not an entry")
        return None
