"""The cache folder's secret: what tells an entry this user's vkml wrote from one anybody could write.

Every cache entry (compiled kernels, lowered templates) carries an HMAC-SHA256 of its body under a
random 32-byte key kept in ``<cache>/secret.key``. The key file is trusted only when it is a
regular file (not a symlink), owned by this process's user, readable and writable by that user
alone (mode 0600) and exactly ``KEY_BYTES`` long; anything else there is removed and a new key
made, which turns every earlier entry into a miss (recompiled, never run). An entry whose MAC
verifies under a trusted key was written by a vkml process of this user after its SPIR-V passed
spirv-val, so a warm process skips spirv-val and hands it to the driver at once.

Where no trusted key can be had (a read-only folder, one of another user's key files that cannot
be replaced), ``mac_key`` is None: entries are then signed with the empty key, which anybody can
compute, so the kernel cache validates every entry it reads (as it did before keys) and the
template cache (vkml/runtime/vulkan/template_store.py) is not used at all.

Two processes that make the key at once: each writes a full temporary file and links it into
place (``os.link`` fails when the name exists); the loser reads the winner's key.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path

KEY_NAME = "secret.key"
KEY_BYTES = 32
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)

_keys: dict[str, bytes | None] = {}  # folder -> its key (None: untrusted), once per process
_lock = threading.Lock()


def _read_key(path: Path) -> bytes | None | bool:
    """The key at ``path``; None where there is nothing; False where something there is not a trusted key."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None if not os.path.lexists(path) else False  # a dangling symlink is not a key
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.geteuid()
            or info.st_mode & 0o077
            or info.st_size != KEY_BYTES
        ):
            return False
        data = os.read(fd, KEY_BYTES + 1)
        return data if len(data) == KEY_BYTES else False
    except OSError:
        return False
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    """Remove whatever is at ``path`` without following a link (a folder with its tree)."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            import shutil  # here: shutil loads bz2 and lzma, and a warm start removes nothing

            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def _make_key(folder: Path, path: Path) -> bytes | None:
    """A new key linked into place at ``path``, or the one another process linked first; None if neither."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = _temporary(folder)
    except OSError:
        return None
    key = os.urandom(KEY_BYTES)  # as secrets.token_bytes, without loading secrets (random, hmac)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        try:
            os.link(temporary, path)
        except FileExistsError:
            found = _read_key(path)
            return found if isinstance(found, bytes) else None
        return key
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _temporary(folder: Path) -> tuple[int, str]:
    name = str(folder / f"{KEY_NAME}.{os.urandom(8).hex()}.tmp")
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), name


def mac_key(folder: Path) -> bytes | None:
    """The trusted key of cache folder ``folder`` (made if missing or bad), or None where there is none."""
    name = str(folder)
    with _lock:
        if name in _keys:
            return _keys[name]
        path = folder / KEY_NAME
        found = _read_key(path)
        if found is False:  # damaged, a link, a folder, another user's, readable by others: replace it
            _remove(path)
            found = None
        key = found if found is not None else _make_key(folder, path)
        _keys[name] = key
        return key


def forget() -> None:
    """Read the keys from their files again (tests that damage a key file)."""
    with _lock:
        _keys.clear()
