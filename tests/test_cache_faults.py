"""The on-disk kernel cache is untrusted input: every fault costs a recompile, never a crash,
a hang or a wrong kernel. Each case damages the cache in a fresh folder, runs an op on
Vulkan, compares its bits with the CPU's, and checks that the bad entry was removed or
replaced. Then the folder's byte budget (``VKML_CACHE_MAX_BYTES``).

Tests run as root in CI, where ``chmod 000`` does not stop a read: the unreadable case then
reads the (valid) entry, and ``open_denied`` makes ``open`` fail the way it does for a user.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import signal
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import vkml
from vkml.codegen import spirv as codegen_spirv
from vkml.runtime.counters import counters
from vkml.runtime.vulkan import cache_secret, kernel_cache
from vkml.runtime.vulkan.kernel_cache import MAGIC, KernelBinary, read_entry
from vkml.runtime.vulkan.pipelines import PIPELINE_CACHE_MAGIC, PipelineCacheFile
from vkml.schedule import scheduler as schedule

A = (np.arange(64, dtype=np.float32) / 7).reshape(8, 8)
B = (3 - np.arange(64, dtype=np.float32) / 5).reshape(8, 8)


def victim(a, b):
    return a * b + 1.5


def donor(a, b):  # the same bindings and parameters as the victim's kernel, another computation
    return a + b - 2.5


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail, rather than hang the suite, if the block takes longer than ``seconds`` (a FIFO read would)."""

    def expire(signum, frame):
        raise TimeoutError(f"hung for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def forget_memory(dev) -> None:
    """Drop every in-memory level, as a new process would start: the next op reads the disk."""
    dev.kernels._memory.clear()
    dev.pipelines._by_text.clear()
    dev.pipelines._by_object.clear()
    dev.recordings.forget()
    schedule.clear_template_cache()
    codegen_spirv.clear_compile_cache()


def run(dev, op) -> np.ndarray:
    with deadline(60):
        return op(vkml.tensor(A, device=dev), vkml.tensor(B, device=dev)).numpy()


def cpu_bits(op) -> np.ndarray:
    return op(vkml.tensor(A), vkml.tensor(B)).numpy().view(np.uint32)


def entries(folder: Path) -> set[Path]:
    return set((folder / "kernels").glob("*.spv"))


@pytest.fixture
def cache(gpu, tmp_path, monkeypatch):
    """A fresh cache folder holding the donor's entries and then the victim's: (folder, victim paths, donor path)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("VKML_CACHE_DIR", str(folder))
    forget_memory(gpu)
    run(gpu, donor)
    donors = entries(folder)
    forget_memory(gpu)
    run(gpu, victim)
    victims = sorted(entries(folder) - donors)
    assert len(donors) == 1 and len(victims) == 1  # one elementwise kernel each
    yield folder, victims[0], next(iter(donors))
    forget_memory(gpu)


def _body(data: bytes) -> tuple[dict, bytes]:
    """An entry's JSON header and SPIR-V."""
    body = data[len(MAGIC) + 32 :]
    (length,) = struct.unpack_from("<I", body)
    return json.loads(body[4 : 4 + length]), body[4 + length :]


def _signed(header: dict | bytes, spirv: bytes, magic: bytes = MAGIC, secret: bytes = b"") -> bytes:
    """An entry with a correct MAC under ``secret`` around ``header`` and ``spirv`` (the empty key: what
    anybody can make; the folder's key: what this user's vkml, or a program of this user, can make)."""
    raw = header if isinstance(header, bytes) else json.dumps(header, sort_keys=True).encode()
    body = struct.pack("<I", len(raw)) + raw + spirv
    return magic + hmac.new(secret, body, hashlib.sha256).digest() + body


def _folder_secret(path: Path) -> bytes:
    """The MAC key of the folder holding entry ``path`` (the empty key where it has no trusted one)."""
    return kernel_cache.mac_key(path.parent.parent) or b""


def forged(path: Path, spirv=None, **changes) -> None:
    """The entry changed and signed with its folder's own key, so that the checks past the MAC are what
    refuse it. Changed SPIR-V comes with ``validated: false``: nothing vouches for it."""
    header, good_spirv = _body(path.read_bytes())
    header.update(changes)
    if spirv is not None:
        header["validated"] = False
    path.write_bytes(_signed(header, good_spirv if spirv is None else spirv(good_spirv), secret=_folder_secret(path)))


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]


def _old_format(path: Path) -> None:
    """A well-formed entry of the format before keys (VKMLSPV1): no key, no version inside."""
    header, spirv = _body(path.read_bytes())
    del header["key"], header["version"]
    path.write_bytes(_signed(header, spirv, b"VKMLSPV1"))


def _symlink(target) -> callable:
    def damage(path: Path, donor_path: Path, tmp: Path) -> None:
        where = target(path, donor_path, tmp)
        path.unlink()
        path.symlink_to(where)

    return damage


def _outside_copy(path: Path, donor_path: Path, tmp: Path) -> Path:
    copy = tmp / "outside.spv"
    copy.write_bytes(path.read_bytes())
    return copy


def _directory(with_files: bool):
    def damage(path: Path, donor_path: Path, tmp: Path) -> None:
        path.unlink()
        path.mkdir()
        if with_files:
            (path / "inner.spv").write_bytes(donor_path.read_bytes())
            (path / "link").symlink_to(donor_path)

    return damage


def _deny_open(monkeypatch, path: Path) -> None:
    real_open = os.open

    def open_(file, flags, *args, **kwargs):
        if os.fspath(file) == os.fspath(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(kernel_cache.os, "open", open_)


def _sparse(nbytes: int):
    def damage(path: Path, donor_path: Path, tmp: Path) -> None:
        with open(path, "r+b") as f:
            f.truncate(nbytes)

    return damage


W = lambda fn: lambda path, donor_path, tmp: path.write_bytes(fn(path.read_bytes()))  # noqa: E731
SPIRV_HEADER = struct.pack("<5I", 0x07230203, 0x00010300, 0, 64, 0)

# name -> damage(victim path, donor path, a scratch folder). Every case: right bits, no hang, entry rebuilt.
ENTRY_FAULTS = {
    "zero_length": W(lambda d: b""),
    "magic_only": W(lambda d: MAGIC),
    "truncated_half": W(lambda d: d[: len(d) // 2]),
    "truncated_one_byte": W(lambda d: d[:-1]),
    "trailing_byte": W(lambda d: d + b"\0"),
    "garbage": W(lambda d: os.urandom(len(d))),
    "wrong_magic": W(lambda d: b"VKMLSPVX" + d[len(MAGIC) :]),
    "checksum_flipped": W(lambda d: _flip(d, len(MAGIC) + 3)),
    "body_flipped": W(lambda d: _flip(d, len(d) - 7)),
    "old_format": lambda p, d, t: _old_format(p),
    # The tester's case: a valid entry of another kernel under this key (right checksum) ran that kernel.
    "other_kernels_entry": lambda p, d, t: p.write_bytes(d.read_bytes()),
    "empty_key": lambda p, d, t: forged(p, key=""),
    "wrong_version": lambda p, d, t: forged(p, version="0.0.1/VKMLSPV2"),
    "version_missing": lambda p, d, t: forged(p, version=None),
    "forged_random_spirv": lambda p, d, t: forged(p, spirv=lambda s: SPIRV_HEADER + os.urandom(len(s))),
    "forged_zero_spirv": lambda p, d, t: forged(p, spirv=lambda s: SPIRV_HEADER + bytes(len(s))),
    "forged_spirv_magic": lambda p, d, t: forged(p, spirv=lambda s: b"\0\0\0\0" + s[4:]),
    "forged_short_spirv": lambda p, d, t: forged(p, spirv=lambda s: s[:16]),
    "forged_odd_length_spirv": lambda p, d, t: forged(p, spirv=lambda s: s + b"\0"),
    "forged_truncated_spirv": lambda p, d, t: forged(p, spirv=lambda s: s[: len(s) // 8 * 4]),
    "forged_entry_point": lambda p, d, t: forged(p, entry_point="not_there"),
    "forged_missing_parameter": lambda p, d, t: forged(p, push_constants=[]),
    "forged_extra_parameter": lambda p, d, t: forged(p, push_constants=[["s1", "float32", 0], ["s2", "float32", 4]]),
    "forged_unknown_dtype": lambda p, d, t: forged(p, push_constants=[["s0", "float128", 0]]),
    "forged_push_size_huge": lambda p, d, t: forged(p, push_size=1 << 20),
    "forged_push_beyond_size": lambda p, d, t: forged(p, push_size=4, push_constants=[["s0", "float32", 64]]),
    "forged_header_not_json": lambda p, d, t: p.write_bytes(
        _signed(b"{not json", _body(p.read_bytes())[1], secret=_folder_secret(p))
    ),
    "signed_by_anybody": lambda p, d, t: p.write_bytes(_signed(*_body(p.read_bytes()))),
    "forged_header_length": lambda p, d, t: p.write_bytes(
        (lambda data: _signed(b"", b"")[:40] + struct.pack("<I", 1 << 30) + data[44:])(p.read_bytes())
    ),
    "fifo": lambda p, d, t: (p.unlink(), os.mkfifo(p)),
    "symlink_to_dev_zero": _symlink(lambda p, d, t: Path("/dev/zero")),
    "symlink_to_other_entry": _symlink(lambda p, d, t: d),
    "symlink_to_own_copy_outside": _symlink(_outside_copy),
    "dangling_symlink": _symlink(lambda p, d, t: t / "nowhere.spv"),
    "empty_directory": _directory(False),
    "directory_with_files": _directory(True),
    "huge_sparse_file": _sparse(kernel_cache.MAX_ENTRY_BYTES + 1),
    "unreadable_chmod_000": lambda p, d, t: p.chmod(0),
}


def _valid_entry(path: Path) -> bool:
    """Whether ``path`` holds a good entry of its folder (signed with that folder's key)."""
    data = read_entry(path, kernel_cache.MAX_ENTRY_BYTES)
    secret = cache_secret.mac_key(path.parent.parent) or b""
    return data is not None and KernelBinary.from_bytes(data, path.stem, secret) is not None


@pytest.mark.parametrize("fault", sorted(ENTRY_FAULTS) + ["open_denied"])
def test_a_bad_cache_entry_costs_a_recompile_never_a_wrong_result(gpu, cache, tmp_path, monkeypatch, fault):
    folder, path, donor_path = cache
    donor_bytes = donor_path.read_bytes()
    if fault == "open_denied":
        _deny_open(monkeypatch, path)
    else:
        ENTRY_FAULTS[fault](path, donor_path, tmp_path)
    forget_memory(gpu)
    before = dict(counters)
    out = run(gpu, victim)
    monkeypatch.undo()  # os.open back, for the checks below
    assert np.array_equal(out.view(np.uint32), cpu_bits(victim))
    assert _valid_entry(path) and not path.is_symlink()  # removed, then written anew
    assert donor_path.read_bytes() == donor_bytes  # a link to it was removed, not followed
    rejected = counters["cache_entries_rejected"] - before["cache_entries_rejected"]
    if fault == "unreadable_chmod_000" and os.geteuid() == 0:
        assert rejected == 0  # root reads it anyway, and it is a good entry: honest, nothing to reject
    else:
        assert rejected >= 1 and counters["kernels_compiled"] > before["kernels_compiled"]


@pytest.mark.parametrize("trusted", [True, False], ids=["folder_key", "no_trusted_key"])
@pytest.mark.parametrize("fault", sorted(f for f in ENTRY_FAULTS if f.startswith("forged_") and "spirv" in f))
def test_forged_spirv_is_refused_before_the_driver_sees_it(gpu, cache, tmp_path, monkeypatch, fault, trusted):
    """SPIR-V that nothing vouches for passes spirv-val before a driver sees it (one that crashes on malformed
    SPIR-V would otherwise take the process down): an entry under the folder's key that does not say it was
    validated, and any entry of a folder with no trusted key, which anybody could have signed."""
    folder, path, donor_path = cache
    if not trusted:
        monkeypatch.setattr(kernel_cache, "mac_key", lambda folder: None)
    ENTRY_FAULTS[fault](path, donor_path, tmp_path)
    forget_memory(gpu)
    rebuilds = []
    original = kernel_cache.KernelCache.binary

    def watched(self, kernel, *args, rebuild=False, **kwargs):
        rebuilds.append(rebuild)
        return original(self, kernel, *args, rebuild=rebuild, **kwargs)

    monkeypatch.setattr(kernel_cache.KernelCache, "binary", watched)
    out = run(gpu, victim)
    assert np.array_equal(out.view(np.uint32), cpu_bits(victim))
    assert rebuilds and not any(rebuilds)  # never handed to the driver, so never rejected by it


def test_a_copied_entry_of_another_kernel_is_not_run(gpu, cache):
    """The tester's wrong-result case, spelled out: before keys were inside entries, the donor's kernel
    ran with the victim's constant (a + b and 1.5): wrong values, no error."""
    folder, path, donor_path = cache
    path.write_bytes(donor_path.read_bytes())
    forget_memory(gpu)
    out = run(gpu, victim)
    assert np.array_equal(out, A * B + np.float32(1.5))


def test_the_good_entry_is_used_and_compiles_nothing(gpu, cache):
    folder, path, _ = cache
    forget_memory(gpu)
    before = counters["kernels_compiled"]
    assert np.array_equal(run(gpu, victim).view(np.uint32), cpu_bits(victim))
    assert counters["kernels_compiled"] == before


# ---------------------------------------------------------------- the folder itself


def _folder_file(tmp: Path) -> Path:
    target = tmp / "a_file"
    target.write_bytes(b"not a folder")
    return target


def _folder_under_file(tmp: Path) -> Path:
    return _folder_file(tmp) / "cache"


def _kernels_is_file(tmp: Path) -> Path:
    (tmp / "c").mkdir()
    (tmp / "c" / "kernels").write_bytes(b"not a folder")
    return tmp / "c"


def _kernels_is_link_to_dev_null(tmp: Path) -> Path:
    (tmp / "c").mkdir()
    (tmp / "c" / "kernels").symlink_to("/dev/null")
    return tmp / "c"


def _folder_is_link(tmp: Path) -> Path:
    (tmp / "real").mkdir()
    (tmp / "link").symlink_to(tmp / "real")
    return tmp / "link"


def _kernels_read_only(tmp: Path) -> Path:
    (tmp / "c" / "kernels").mkdir(parents=True)
    (tmp / "c" / "kernels").chmod(0o555)
    return tmp / "c"


FOLDER_FAULTS = {
    "cache_dir_is_a_file": _folder_file,
    "cache_dir_under_a_file": _folder_under_file,
    "kernels_is_a_file": _kernels_is_file,
    "kernels_links_to_dev_null": _kernels_is_link_to_dev_null,
    "cache_dir_is_a_symlink": _folder_is_link,
    "kernels_read_only": _kernels_read_only,
}


@pytest.mark.parametrize("fault", sorted(FOLDER_FAULTS) + ["disk_full"])
def test_a_folder_that_cannot_hold_the_cache_costs_at_most_a_warning(gpu, tmp_path, monkeypatch, fault):
    if fault == "disk_full":
        folder = tmp_path / "c"

        def full(path, data):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        monkeypatch.setattr(kernel_cache, "write_atomically", full)
    else:
        folder = FOLDER_FAULTS[fault](tmp_path)
    monkeypatch.setenv("VKML_CACHE_DIR", str(folder))
    kernel_cache._warned.clear()
    forget_memory(gpu)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(gpu, victim)
        forget_memory(gpu)
        again = run(gpu, victim)  # the folder is asked again: still no crash, one warning in all
    assert np.array_equal(out.view(np.uint32), cpu_bits(victim))
    assert np.array_equal(again.view(np.uint32), cpu_bits(victim))
    messages = [str(w.message) for w in caught if "kernel cache" in str(w.message)]
    assert len(messages) <= 1
    writable = fault == "cache_dir_is_a_symlink" or (fault == "kernels_read_only" and os.geteuid() == 0)
    assert (messages == []) == writable, messages
    if writable:
        assert entries(folder)  # a symlinked folder (a moved ~/.cache) is a legitimate place
    forget_memory(gpu)


# ---------------------------------------------------------------- the VkPipelineCache file


def _resigned(change):
    def damage(data: bytes) -> bytes:
        payload = bytearray(data[40:])
        change(payload)
        return PIPELINE_CACHE_MAGIC + hashlib.sha256(bytes(payload)).digest() + bytes(payload)

    return damage


def _set(offset: int, value: bytes):
    def change(payload: bytearray) -> None:
        payload[offset : offset + len(value)] = value

    return change


PIPELINE_CACHE_FAULTS = {
    "zero_length": lambda d: b"",
    "garbage": lambda d: os.urandom(len(d)),
    "garbage_after_magic": lambda d: PIPELINE_CACHE_MAGIC + os.urandom(len(d)),
    "truncated": lambda d: d[: len(d) // 3],
    "truncated_header": _resigned(lambda p: p.__delitem__(slice(20, None))),
    "wrong_header_size": _resigned(_set(0, struct.pack("<I", 16))),
    "wrong_header_version": _resigned(_set(4, struct.pack("<I", 2))),
    "wrong_vendor": _resigned(lambda p: p.__setitem__(8, p[8] ^ 1)),
    "wrong_device": _resigned(lambda p: p.__setitem__(12, p[12] ^ 1)),
    "wrong_uuid": _resigned(_set(16, bytes(16))),
}


@pytest.mark.parametrize("fault", sorted(PIPELINE_CACHE_FAULTS) + ["fifo", "symlink_to_dev_zero", "huge", "directory"])
def test_a_bad_pipeline_cache_file_is_dropped(gpu, tmp_path, monkeypatch, fault):
    monkeypatch.setenv("VKML_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "pipelines.bin"
    first = PipelineCacheFile(gpu.logical, path)
    saved = gpu.pipelines.cache_file
    gpu.pipelines.cache_file = first
    try:
        forget_memory(gpu)
        run(gpu, victim)  # fills the cache
        first.save()
        assert PipelineCacheFile(gpu.logical, path).loaded_bytes > 0
        data = path.read_bytes()
        if fault in PIPELINE_CACHE_FAULTS:
            path.write_bytes(PIPELINE_CACHE_FAULTS[fault](data))
        else:
            path.unlink()
            if fault == "fifo":
                os.mkfifo(path)
            elif fault == "symlink_to_dev_zero":
                path.symlink_to("/dev/zero")
            elif fault == "huge":
                with open(path, "wb") as f:
                    f.truncate(256 << 20 | 1)
            else:
                path.mkdir()
        with deadline(60):
            loaded = PipelineCacheFile(gpu.logical, path)
        assert loaded.loaded_bytes == 0
        assert not os.path.lexists(path)  # dropped
        gpu.pipelines.cache_file = loaded
        forget_memory(gpu)
        assert np.array_equal(run(gpu, victim).view(np.uint32), cpu_bits(victim))
        loaded.save()
        assert PipelineCacheFile(gpu.logical, path).loaded_bytes > 0  # a good file takes its place
    finally:
        gpu.pipelines.cache_file = saved
        forget_memory(gpu)


# ---------------------------------------------------------------- the byte budget


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in entries(folder))


def test_the_folder_keeps_to_its_byte_budget_least_recently_used_out_first(gpu, tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("VKML_CACHE_DIR", str(folder))
    monkeypatch.setattr(kernel_cache, "disk_budget", kernel_cache.DiskBudget())
    forget_memory(gpu)
    run(gpu, victim)
    (entry,) = entries(folder)
    size = entry.stat().st_size
    budget = 4 * size + size // 2  # room for four entries
    monkeypatch.setenv("VKML_CACHE_MAX_BYTES", str(budget))
    shapes = [(8, 8), (4, 16), (2, 32), (16, 4), (32, 2), (64, 1), (1, 64), (64,)]
    kept_hot = entry
    for i, shape in enumerate(shapes):  # a new kernel per shape (shapes are structure)
        os.utime(kept_hot, (1, 1))  # look old, then be hit: the hit must make it the newest again
        forget_memory(gpu)
        with deadline(60):
            (vkml.tensor(A, device=gpu).reshape(shape) * vkml.tensor(B, device=gpu).reshape(shape) + 1.5).numpy()
            run(gpu, victim)  # a hit on the victim's entry
        assert _folder_bytes(folder) <= budget, i
    assert kept_hot.exists()  # used every round: never the least recently used
    assert counters["cache_files_evicted"] > 0
    assert 1 < len(entries(folder)) < 1 + len(shapes)  # some went, the recent ones stay


def test_the_budget_scans_the_folder_once_then_only_when_over(tmp_path, monkeypatch):
    monkeypatch.setenv("VKML_CACHE_MAX_BYTES", "1000")
    budget = kernel_cache.DiskBudget()
    scans = []
    real_files = budget._files
    monkeypatch.setattr(budget, "_files", lambda folder: scans.append(1) or real_files(folder))
    (tmp_path / "kernels").mkdir()
    for i in range(20):
        path = tmp_path / "kernels" / f"{i:02d}.spv"
        path.write_bytes(bytes(100))
        os.utime(path, (i, i))  # written in order: 00 is the least recently used
        budget.added(tmp_path, 100)
    # One scan for the first total, then one (plus one for the survivors) per overflow: 1000 -> 750.
    assert len(scans) <= 1 + 2 * 5
    names = sorted(p.name for p in (tmp_path / "kernels").iterdir())
    assert sum((tmp_path / "kernels" / n).stat().st_size for n in names) <= 1000
    assert names[-1] == "19.spv" and "00.spv" not in names


def test_a_hit_refreshes_the_entry_time(gpu, cache):
    folder, path, _ = cache
    os.utime(path, (1, 1))
    forget_memory(gpu)
    run(gpu, victim)
    assert path.stat().st_mtime > 1e9
