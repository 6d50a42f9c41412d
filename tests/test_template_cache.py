"""The disk level of the template cache (vkml/schedule/template_disk.py, vkml/runtime/vulkan/template_store.py)
and the folder's key (vkml/runtime/vulkan/cache_secret.py) are untrusted input like the kernel entries
(tests/test_cache_faults.py): each fault costs a lowering (or a compile), never a crash, a hang or a wrong
result. One good folder is filled once; each case damages a copy of it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import stat
import threading
from pathlib import Path

import numpy as np
import pytest
from test_cache_faults import A, B, cpu_bits, deadline, donor, forget_memory, victim

import vkml
from vkml.dsl import elementwise as custom
from vkml.runtime.counters import counters
from vkml.runtime.vulkan import cache_secret, template_store
from vkml.runtime.vulkan.template_store import MAGIC, MAX_TEMPLATE_BYTES
from vkml.schedule import scheduler as schedule


def run(dev, op) -> np.ndarray:
    with deadline(60):
        return op(vkml.tensor(A, device=dev), vkml.tensor(B, device=dev)).numpy()


def templates(folder: Path) -> set[Path]:
    return set((folder / "templates").glob("*.tpl"))


@pytest.fixture(scope="module")
def good_folder(tmp_path_factory):
    """A folder holding the donor's template and entries, then the victim's: (folder, victim's, donor's template)."""
    gpu = vkml.best_device()  # the gpu fixture's device (a fixture of each test's own)
    folder = tmp_path_factory.mktemp("templates") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VKML_CACHE_DIR", str(folder))
        forget_memory(gpu)
        run(gpu, donor)
        donors = templates(folder)
        forget_memory(gpu)
        run(gpu, victim)
        victims = templates(folder) - donors
        forget_memory(gpu)
    assert len(donors) == 1 and len(victims) == 1  # one group each
    return folder, next(iter(victims)).name, next(iter(donors)).name


@pytest.fixture
def cache(gpu, good_folder, tmp_path, monkeypatch):
    """A copy of the good folder, in use: (folder, victim's template path, donor's template path)."""
    source, victim_name, donor_name = good_folder
    folder = tmp_path / "cache"
    shutil.copytree(source, folder, symlinks=True)
    monkeypatch.setenv("VKML_CACHE_DIR", str(folder))
    cache_secret.forget()
    forget_memory(gpu)
    yield folder, folder / "templates" / victim_name, folder / "templates" / donor_name
    forget_memory(gpu)
    cache_secret.forget()


def _secret(folder: Path) -> bytes:
    return (folder / cache_secret.KEY_NAME).read_bytes()


def _entry(path: Path) -> dict:
    return json.loads(path.read_bytes()[len(MAGIC) + 32 :])


def _signed(entry: dict, secret: bytes) -> bytes:
    body = json.dumps(entry, sort_keys=True).encode()
    return MAGIC + hmac.new(secret, body, hashlib.sha256).digest() + body


def _resigned(change):
    """The entry changed by ``change`` and signed with the folder's own key: only the content checks stand."""

    def damage(path: Path, donor_path: Path, tmp: Path) -> None:
        entry = _entry(path)
        change(entry)
        path.write_bytes(_signed(entry, _secret(path.parent.parent)))

    return damage


def _kernel0(entry: dict) -> dict:
    return entry["template"]["kernels"][0]


def _set(where, **values):
    def change(entry: dict) -> None:
        where(entry).update(values)

    return change


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]


W = lambda fn: lambda path, donor_path, tmp: path.write_bytes(fn(path.read_bytes()))  # noqa: E731


def _symlink(target):
    def damage(path: Path, donor_path: Path, tmp: Path) -> None:
        where = target(path, donor_path, tmp)
        path.unlink()
        path.symlink_to(where)

    return damage


def _sparse(path: Path, donor_path: Path, tmp: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(MAX_TEMPLATE_BYTES + 1)


TEMPLATE_FAULTS = {
    "zero_length": W(lambda d: b""),
    "truncated_half": W(lambda d: d[: len(d) // 2]),
    "truncated_one_byte": W(lambda d: d[:-1]),
    "trailing_byte": W(lambda d: d + b" "),
    "garbage": W(lambda d: os.urandom(len(d))),
    "wrong_magic": W(lambda d: b"VKMLTPLX" + d[len(MAGIC) :]),
    "mac_flipped": W(lambda d: _flip(d, len(MAGIC) + 3)),
    "body_flipped": W(lambda d: _flip(d, len(d) - 9)),
    # What anybody can write: the empty key's MAC (or a plain checksum) around a template of their own.
    "signed_with_empty_key": lambda p, d, t: p.write_bytes(_signed(_entry(p), b"")),
    "plain_checksum": lambda p, d, t: p.write_bytes(
        (lambda body: MAGIC + hashlib.sha256(body).digest() + body)(p.read_bytes()[len(MAGIC) + 32 :])
    ),
    "other_groups_entry": lambda p, d, t: p.write_bytes(d.read_bytes()),
    "wrong_version": _resigned(_set(lambda e: e, version="0.0.1/VKMLSPV2")),
    "other_key_inside": _resigned(_set(lambda e: e, key="0" * 64)),
    "template_not_a_dict": _resigned(_set(lambda e: e, template=[1, 2])),
    "no_kernels": _resigned(_set(lambda e: e["template"], kernels=[])),
    "leaf_out_of_range": _resigned(lambda e: _kernel0(e)["roles"][0].__setitem__(2, 99)),
    "negative_position": _resigned(lambda e: _kernel0(e)["roles"][0].__setitem__(2, -1)),
    "unknown_buffer_kind": _resigned(lambda e: _kernel0(e)["roles"][0].__setitem__(1, "bogus")),
    "role_for_no_buffer": _resigned(lambda e: _kernel0(e)["roles"][0].__setitem__(0, "nope")),
    "parameter_unbound": _resigned(lambda e: _kernel0(e).__setitem__("param_roles", [])),
    "constant_out_of_range": _resigned(lambda e: _kernel0(e)["param_roles"][0].__setitem__(1, 1 << 40)),
    "unknown_dtype": _resigned(lambda e: _kernel0(e)["buffers"][0].__setitem__(1, "float128")),
    "bad_access": _resigned(lambda e: _kernel0(e)["buffers"][0].__setitem__(2, "execute")),
    "grid_not_ints": _resigned(_set(_kernel0, grid=["1", 1, 1])),
    "ir_not_text": _resigned(_set(_kernel0, ir=None)),
    "ir_of_no_compiled_kernel": _resigned(_set(_kernel0, ir="kernel nothing")),
    "fifo": lambda p, d, t: (p.unlink(), os.mkfifo(p)),
    "symlink_to_dev_zero": _symlink(lambda p, d, t: Path("/dev/zero")),
    "symlink_to_other_entry": _symlink(lambda p, d, t: d),
    "directory": lambda p, d, t: (p.unlink(), p.mkdir(), (p / "inner.tpl").write_bytes(d.read_bytes())),
    "huge_sparse_file": _sparse,
}


def _valid_template(path: Path) -> bool:
    secret = _secret(path.parent.parent)
    data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
    return template_store._unpack(data, path.stem, secret) is not None


@pytest.mark.parametrize("fault", sorted(TEMPLATE_FAULTS))
def test_a_bad_template_costs_a_lowering_never_a_wrong_result(gpu, cache, tmp_path, fault):
    folder, path, donor_path = cache
    donor_bytes = donor_path.read_bytes()
    TEMPLATE_FAULTS[fault](path, donor_path, tmp_path)
    expected = cpu_bits(victim)  # first: the CPU lowers its own templates
    before = dict(counters)
    out = run(gpu, victim)
    assert np.array_equal(out.view(np.uint32), expected)
    assert _valid_template(path)  # removed, then written anew
    assert donor_path.read_bytes() == donor_bytes  # a link to it was removed, not followed
    assert counters["templates_loaded"] == before["templates_loaded"]
    assert counters["templates_lowered"] > before["templates_lowered"]
    if fault != "ir_of_no_compiled_kernel":  # that one is a miss (no SPIR-V for it), not a bad entry
        assert counters["cache_entries_rejected"] > before["cache_entries_rejected"]
    assert counters["kernels_compiled"] == before["kernels_compiled"]  # the SPIR-V entry was good all along


def test_the_good_template_is_used_and_lowers_nothing(gpu, cache):
    expected = cpu_bits(victim)
    before = dict(counters)
    assert np.array_equal(run(gpu, victim).view(np.uint32), expected)
    assert counters["templates_loaded"] - before["templates_loaded"] == 1
    assert counters["templates_lowered"] == before["templates_lowered"]
    assert counters["kernels_compiled"] == before["kernels_compiled"]


def test_a_template_whose_spirv_is_gone_is_lowered_again(gpu, cache):
    """Its kernel would have to be parsed to be compiled: lowering it again costs less, and is what runs."""
    folder, path, _ = cache
    kernels = sorted((folder / "kernels").glob("*.spv"))
    for entry in kernels:
        entry.unlink()
    expected = cpu_bits(victim)
    before = dict(counters)
    assert np.array_equal(run(gpu, victim).view(np.uint32), expected)
    assert counters["templates_loaded"] == before["templates_loaded"]
    assert counters["kernels_compiled"] - before["kernels_compiled"] == 1


def test_other_lowering_sources_never_reuse_a_template(gpu, cache, monkeypatch):
    """The key holds a hash of the sources lowering reads: a changed vkml lowers afresh."""
    folder, path, _ = cache
    monkeypatch.setattr(template_store, "_fingerprint", ["another vkml"])
    expected = cpu_bits(victim)
    before = dict(counters)
    assert np.array_equal(run(gpu, victim).view(np.uint32), expected)
    assert counters["templates_loaded"] == before["templates_loaded"]
    assert len(templates(folder)) == 3  # a new entry beside the two others


def test_a_custom_op_is_kept_in_memory_only(gpu, cache):
    """A vkml.dsl op's body may change with no vkml source changing: its groups have no stable key."""
    folder, _, _ = cache
    with custom.restoring_registry():

        @vkml.elementwise
        def halfway(x, y):
            return (x + y) * 0.5

        out = run(gpu, lambda a, b: halfway(a, b) * 3.0)
    assert np.array_equal(out, (A + B) * np.float32(0.5) * np.float32(3.0))
    assert len(templates(folder)) == 2


# ---------------------------------------------------------------- the folder's key


def _key_path(folder: Path) -> Path:
    return folder / cache_secret.KEY_NAME


def _replace_with(make):
    def damage(folder: Path) -> None:
        path = _key_path(folder)
        path.unlink()
        make(path, folder)

    return damage


KEY_FAULTS = {
    "missing": lambda folder: _key_path(folder).unlink(),
    "truncated": lambda folder: _key_path(folder).write_bytes(_secret(folder)[:-1]),
    "longer": lambda folder: _key_path(folder).write_bytes(_secret(folder) + b"\0"),
    "readable_by_others": lambda folder: _key_path(folder).chmod(0o644),
    "symlink_to_a_key": _replace_with(
        lambda p, f: ((f / "k").write_bytes(bytes(32)), (f / "k").chmod(0o600), p.symlink_to(f / "k"))
    ),
    "directory": _replace_with(lambda p, f: p.mkdir()),
    "fifo": _replace_with(lambda p, f: os.mkfifo(p, 0o600)),
}


@pytest.mark.parametrize("fault", sorted(KEY_FAULTS))
def test_a_bad_key_file_is_replaced_and_trusts_nothing_it_signed(gpu, cache, fault):
    """A key file that is not this user's private 32 bytes is replaced by a new key; the entries signed with
    the old one are then misses (rebuilt), never trusted."""
    folder, path, _ = cache
    KEY_FAULTS[fault](folder)
    expected = cpu_bits(victim)
    before = dict(counters)
    with deadline(60):
        out = run(gpu, victim)
    assert np.array_equal(out.view(np.uint32), expected)
    info = os.lstat(_key_path(folder))
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_size == 32
    assert counters["templates_loaded"] == before["templates_loaded"]
    assert counters["kernels_compiled"] > before["kernels_compiled"]
    assert _valid_template(path)


def test_processes_making_the_key_at_once_agree_on_one(tmp_path):
    """Each writes a whole key and links it into place; the losers read the winner's."""
    folder = tmp_path / "cache"
    found: list[bytes | None] = []
    barrier = threading.Barrier(6)

    def make() -> None:
        barrier.wait()
        found.append(cache_secret._make_key(folder, _key_path(folder)))

    threads = [threading.Thread(target=make) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found)) == 1 and found[0] == _key_path(folder).read_bytes()
    assert sorted(p.name for p in folder.iterdir()) == [cache_secret.KEY_NAME]  # no temporary left


def test_writers_racing_on_one_template_leave_a_whole_entry(gpu, cache):
    """Concurrent writers of one entry (several processes filling a folder at once): a reader sees the old
    file or a new one, never a half; what is left is a good entry."""
    folder, path, _ = cache
    store = gpu.template_store
    key = path.stem
    value = _entry(path)["template"]
    stop = threading.Event()
    seen: list[bool] = []

    def write() -> None:
        while not stop.is_set():
            store.save(key, value)

    writers = [threading.Thread(target=write) for _ in range(3)]
    for thread in writers:
        thread.start()
    try:
        for _ in range(200):
            seen.append(store.load(key) == value)
    finally:
        stop.set()
        for thread in writers:
            thread.join()
    assert all(seen) and _valid_template(path)
    assert not [p for p in (folder / "templates").iterdir() if p.suffix == ".tmp"]


def test_a_lazy_kernel_is_the_kernel_its_text_describes(gpu, cache):
    """A kernel read from the disk: its body is parsed on first use, and ``dataclasses.replace`` (vkml.jit's
    variants) gives a plain Kernel."""
    import dataclasses

    from vkml.ir.core import Kernel
    from vkml.ir.lazy_kernel import LazyKernel
    from vkml.ir.text import parse_kernel

    run(gpu, victim)
    (template,) = [t for t in schedule._templates.values() if isinstance(t.kernels[0].kernel, LazyKernel)]
    kernel = template.kernels[0].kernel
    assert kernel._parsed is None  # nothing read its body to run it
    assert kernel == parse_kernel(str(kernel)) and kernel._parsed is not None
    renamed = dataclasses.replace(kernel, name="renamed")
    assert type(renamed) is Kernel and renamed.name == "renamed" and renamed.body is kernel.body


@pytest.mark.stress
def test_processes_filling_one_folder_at_once_leave_a_warm_cache(gpu, tmp_path):
    """Several new processes start on one empty folder at once (a job array): each gets the CPU's bits, and
    a process started afterwards lowers and compiles nothing."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    code = f"""
import json, numpy as np, vkml
from vkml.runtime.counters import counters
a = (np.arange(64, dtype=np.float32).reshape(8, 8) - 20) / 9
x = vkml.tensor(a, device={gpu.name!r})
out = vkml.softmax(x @ x, dim=-1).numpy()
print(json.dumps([out.tobytes().hex(), counters["templates_lowered"], counters["kernels_compiled"]]))
"""
    env = {**os.environ, "PYTHONPATH": str(root), "VKML_CACHE_DIR": str(tmp_path / "cache")}

    def start():
        return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)

    racing = [start() for _ in range(4)]
    outputs = [json.loads(p.communicate(timeout=300)[0]) for p in racing]
    (warm,) = [json.loads(start().communicate(timeout=300)[0])]
    a = (np.arange(64, dtype=np.float32).reshape(8, 8) - 20) / 9
    expected = vkml.softmax(vkml.tensor(a) @ vkml.tensor(a), dim=-1).numpy().tobytes().hex()
    assert all(out[0] == expected for out in outputs) and warm[0] == expected
    assert warm[1:] == [0, 0]
