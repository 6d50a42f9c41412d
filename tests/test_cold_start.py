"""Cold start: what ``import vkml`` loads, and the same kernels when a realize compiles in parallel.

Timing is bench/bench_cold_start.py's business (docs/benchmarks.md); these tests assert no time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_cache_faults import forget_memory

import vkml
from vkml.errors import CompileError, DeviceError
from vkml.runtime.counters import snapshot
from vkml.runtime.vulkan.kernel_cache import MAGIC

REPO_ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter that imports this checkout's vkml; its stdout."""
    # This checkout first, then whatever path the caller had (a machine may carry its packages there).
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "PYTHONPATH": path, **env}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# ---------------------------------------------------------------------------- import vkml


# vkml.nn too: autocast wraps nn.functional's functions when vkml.nn loads (vkml/nn/__init__.py).
DEFERRED = (
    "vkml.nn",
    "vkml.distributed",
    "vkml.kernels.attention",
    "vkml.optim",
    "vkml.utils",
    "vkml.distributions",
    "lark",
    "multiprocessing",
    "vkml.runtime.vulkan",
    "cffi",
    "zipfile",
    "subprocess",  # codegen assembles and validates in this process (vkml/codegen/tools.py)
    "sysconfig",  # where the SPIR-V tools lie is looked up at the first compile
    "secrets",  # seeds come from os.urandom: secrets loads random and hmac
    "numpy.random",  # the default generator's engine is seeded at its first draw
)


def test_import_vkml_defers_what_a_first_op_does_not_need() -> None:
    """What ``import vkml`` adds to what numpy (its unavoidable dependency) already imported: some
    Python builds' numpy or site imports zipfile itself."""
    code = (
        f"import json, sys, numpy; before = set(sys.modules); import vkml; "
        f"print(json.dumps([m for m in {list(DEFERRED)!r} if m in sys.modules and m not in before]))"
    )
    assert json.loads(_python(code)) == []


def test_deferred_submodules_work_as_attributes_and_imports() -> None:
    """vkml.nn, optim and utils load on first use; autocast then wraps nn.functional's functions, once
    each (none wraps a wrapper), named where PyTorch's are, and an autocast region casts through them."""
    code = """
import vkml
print(vkml.nn.Linear.__name__, vkml.optim.SGD.__name__, vkml.utils.data.DataLoader.__name__)
from vkml import nn, optim, utils
import vkml.nn.functional as F
print(nn is vkml.nn, optim is vkml.optim, utils is vkml.utils, F is vkml.nn.functional)
print(all(name in dir(vkml) for name in ("nn", "optim", "utils", "tensor", "softmax")))
try:
    vkml.no_such_name
except AttributeError as error:
    print(error)
functions = [getattr(F, name) for name in dir(F) if not name.startswith("_")]
functions = [fn for fn in functions if type(fn).__name__ == "function"]
unwrapped = [fn.__name__ for fn in functions if not getattr(fn, "__wrapped_by_autocast__", False)]
twice = [fn.__name__ for fn in functions if getattr(fn.__wrapped__, "__wrapped_by_autocast__", False)]
print(len(functions) > 100, unwrapped, twice, F.linear.__module__, F.relu.__module__, vkml.relu.__module__)
x = vkml.ones(2, 3)
with vkml.autocast("cpu", dtype=vkml.bfloat16):
    print(F.linear(x, vkml.ones(4, 3)).dtype, vkml.nn.Linear(3, 4)(x).dtype, F.softmax(x, -1).dtype)
"""
    assert _python(code).splitlines() == [
        "Linear SGD DataLoader",
        "True True True True",
        "True",
        "module 'vkml' has no attribute 'no_such_name'",
        "True [] [] vkml.nn.functional vkml.nn.functional vkml",
        "vkml.bfloat16 vkml.bfloat16 vkml.float32",
    ]


def test_a_cold_first_result_starts_no_process(gpu, tmp_path) -> None:
    """From ``import vkml`` to a first result compiled from nothing: no tool runs as a process, and no
    ``ldconfig`` (ctypes.util.find_library) either; bench/bench_cold_start.py times the same path."""
    code = f"""
import subprocess
spawned = []
class Counted(subprocess.Popen):
    def __init__(self, args, *rest, **options):
        spawned.append(args)
        super().__init__(args, *rest, **options)
subprocess.Popen = Counted
import numpy as np, vkml
from vkml.runtime.counters import counters
a = vkml.tensor(np.arange(64, dtype=np.float32).reshape(8, 8) / 64, device={gpu.name!r})
vkml.softmax(a @ a, dim=-1).numpy()
print(counters["kernels_compiled"], spawned)
"""
    # Mesa's shader cache off, as in the benchmark's cold samples: lavapipe's cache thread, still writing
    # new shaders when the interpreter exits, can crash the process at exit (with or without vkml's change).
    out = _python(code, VKML_CACHE_DIR=str(tmp_path / "cache"), MESA_SHADER_CACHE_DISABLE="true")
    assert out.strip() == "2 []"


def test_the_in_process_tools_give_the_binaries_bytes_and_messages(gpu, tmp_path, monkeypatch) -> None:
    """Assembling and validating through libSPIRV-Tools-shared is what spirv-as and spirv-val do: the same
    module bytes for every kernel of a realize, the same verdict, and the same error text."""
    from vkml.codegen import tools

    assembled: list[tuple[str, str]] = []
    real_assemble = tools.assemble

    def assemble(asm, target_env, ir=""):
        assembled.append((asm, target_env))
        return real_assemble(asm, target_env, ir)

    monkeypatch.setattr(tools, "assemble", assemble)
    fresh_compile(gpu, monkeypatch, tmp_path / "cache", 1)
    forget_memory(gpu)
    assert len(assembled) == 4 and tools._library() is not None
    for asm, target_env in assembled:
        ours = real_assemble(asm, target_env)
        theirs = tools._run("spirv-as", ["--target-env", target_env, "-o", "-", "-"], asm.encode())
        assert ours == theirs.stdout
        tools.validate(ours, target_env)
        tools.validate(ours, target_env, isolated=True)
    bad_text = "OpCapability Shader\n%x = OpNoSuchThing\n"
    rejected = tools._run("spirv-as", ["--target-env", "vulkan1.3", "-o", "-", "-"], bad_text.encode())
    with pytest.raises(CompileError) as in_process:
        real_assemble(bad_text, "vulkan1.3")
    assert in_process.value.validator == rejected.stderr.decode().strip()
    bad_module = real_assemble(assembled[0][0].replace("OpReturn\n", "OpUnreachable\nOpReturn\n", 1), "vulkan1.3")
    messages = []
    for isolated in (False, True):
        with pytest.raises(CompileError, match="spirv-val rejected the module") as caught:
            tools.validate(bad_module, "vulkan1.3", isolated=isolated)
        messages.append(caught.value.validator)
    assert messages[0] == messages[1] and messages[0].startswith("error: line ")


def test_the_parser_imports_lark_when_first_used() -> None:
    code = """
import sys, vkml
from vkml import ir
kernel = ir.parse("kernel k local_size(1, 1, 1) {\\n  buffer out: f32 write\\n}\\n")
print("lark" in sys.modules, kernel.name)
try:
    ir.parse("kernel k local_size(1, 1, 1) {\\n  buffer out: f32 wrte\\n}\\n")
except Exception as error:
    print(type(error).__name__, "line 2" in str(error))
"""
    assert _python(code).splitlines() == ["True k", "IRError True"]


def test_cpu_work_never_loads_the_vulkan_runtime() -> None:
    code = """
import sys, vkml
a = vkml.tensor([[1.0, 2.0], [3.0, 4.0]], device="cpu")
print(vkml.softmax(a @ a, dim=-1).numpy().round(4).tolist(), "vkml.runtime.vulkan" in sys.modules)
"""
    out = _python(code).strip()
    assert out.endswith("False"), out


def test_opening_a_device_never_loads_the_c_parser(gpu) -> None:
    """vkml/runtime/vulkan/newer_api.py's structs come parsed ahead of time (newer_api_types.py): no device,
    VK_NV_cooperative_matrix2's included, imports pycparser to declare them."""
    code = f"""
import sys, vkml
from vkml.runtime.vulkan import newer_api
a = vkml.tensor([[1.0, 2.0], [3.0, 4.0]], device={gpu.name!r})
vkml.softmax(a @ a, dim=-1).numpy()
newer_api.ffi.sizeof("VkPhysicalDeviceCooperativeMatrix2FeaturesNV")
print("pycparser" in sys.modules)
"""
    assert _python(code).strip() == "False"


def test_the_prebuilt_types_are_the_declarations() -> None:
    """Every type of newer_api_types.py has the size and field offsets that parsing the declarations gives."""
    from vkml.runtime.vulkan import newer_api

    assert newer_api.prebuilt is not None and newer_api.ffi is newer_api.prebuilt
    parsed = newer_api.parsed_ffi()

    def named(ctype) -> str:  # the table names a struct by its tag where the parse names its typedef
        return ctype.cname.replace("struct ", "")

    for name in sorted(newer_api.DECLARED):
        ours, theirs = newer_api.prebuilt.typeof(name), parsed.typeof(name)
        assert (ours.kind, named(ours)) == (theirs.kind, named(theirs))
        if ours.kind == "struct":
            assert newer_api.prebuilt.sizeof(name) == parsed.sizeof(name)
            fields = [(f, newer_api.prebuilt.offsetof(name, f)) for f, _ in ours.fields]
            assert fields == [(f, parsed.offsetof(name, f)) for f, _ in theirs.fields]
            assert [named(t.type) for _, t in ours.fields] == [named(t.type) for _, t in theirs.fields]
        else:
            assert named(ours.result) == named(theirs.result)
            assert [named(a) for a in ours.args] == [named(a) for a in theirs.args]


# ---------------------------------------------------------------------------- parallel compilation

A = (np.arange(24 * 24, dtype=np.float32).reshape(24, 24) - 250) / 300


def workload(dev) -> list[np.ndarray]:
    """Four new kernels in one realize (a matmul, row and column reductions, a fused softmax)."""
    a = vkml.tensor(A, device=dev)
    outs = [vkml.softmax(a @ a, dim=-1), (a * 2.5 + 1).exp().sum(0), a.amax(1)]
    vkml.realize(*outs)
    return [out.numpy() for out in outs]


def fresh_compile(gpu, monkeypatch, folder: Path, threads: int) -> tuple[list[np.ndarray], dict, list[str]]:
    """The workload compiled from nothing with ``threads``: (results, counter deltas, threads that built)."""
    monkeypatch.setenv("VKML_CACHE_DIR", str(folder))
    monkeypatch.setenv("VKML_COMPILE_THREADS", str(threads))
    forget_memory(gpu)
    builders: list[str] = []
    real_build = gpu.pipelines._build

    def build(*args):
        builders.append(threading.current_thread().name)
        return real_build(*args)

    monkeypatch.setattr(gpu.pipelines, "_build", build)
    before = snapshot()
    results = workload(gpu)
    after = snapshot()
    monkeypatch.setattr(gpu.pipelines, "_build", real_build)
    return results, {key: after[key] - before[key] for key in after}, builders


def cache_files(folder: Path) -> dict[str, bytes]:
    """Each entry's bytes after its MAC (each folder has a key of its own)."""
    return {path.name: path.read_bytes()[len(MAGIC) + 32 :] for path in (folder / "kernels").glob("*.spv")}


def test_parallel_compile_makes_the_same_kernels_and_bits(gpu, tmp_path, monkeypatch) -> None:
    serial, serial_counts, serial_builders = fresh_compile(gpu, monkeypatch, tmp_path / "serial", 1)
    parallel, parallel_counts, parallel_builders = fresh_compile(gpu, monkeypatch, tmp_path / "parallel", 4)
    forget_memory(gpu)
    assert set(serial_builders) == {"MainThread"} and len(serial_builders) == 4
    assert len(parallel_builders) == 4 and all(name.startswith("vkml-compile") for name in parallel_builders)
    for counts in (serial_counts, parallel_counts):
        assert counts["kernels_compiled"] == counts["pipelines_created"] == 4
        assert counts["submissions"] == 1
    # The same SPIR-V under the same keys, and the same bits as one after another and as the CPU.
    assert cache_files(tmp_path / "serial") == cache_files(tmp_path / "parallel")
    assert len(cache_files(tmp_path / "parallel")) == 4
    for ours, theirs, reference in zip(serial, parallel, workload(vkml.device("cpu"))):
        assert ours.tobytes() == theirs.tobytes() == reference.tobytes()


def _failing_compiler(gpu, monkeypatch, names: set[str]) -> None:
    real = gpu.kernels.compiler

    def compiler(kernel, features, *rest):
        if kernel.name in names:
            raise CompileError(f"forced failure compiling {kernel.name}")
        return real(kernel, features, *rest)

    monkeypatch.setattr(gpu.kernels, "compiler", compiler)


@pytest.mark.parametrize("failing", [{"MM_24x24"}, {"MM_24x24", "R_mul_div_sum_exp_24x24"}], ids=["one", "two"])
def test_a_failing_compile_raises_as_without_threads(gpu, tmp_path, monkeypatch, failing) -> None:
    raised = {}
    for threads in (1, 4):
        monkeypatch.setenv("VKML_CACHE_DIR", str(tmp_path / f"cache{threads}"))
        monkeypatch.setenv("VKML_COMPILE_THREADS", str(threads))
        forget_memory(gpu)
        _failing_compiler(gpu, monkeypatch, failing)
        with pytest.raises(CompileError) as caught:
            workload(gpu)
        raised[threads] = (type(caught.value), str(caught.value))
        monkeypatch.undo()
    assert raised[1] == raised[4]
    assert "forced failure compiling MM_24x24" in raised[4][1]  # the first failing kernel in dispatch order
    # The process and the device are intact: the same work now compiles and gives the CPU's bits.
    monkeypatch.setenv("VKML_CACHE_DIR", str(tmp_path / "after"))
    forget_memory(gpu)
    for ours, reference in zip(workload(gpu), workload(vkml.device("cpu"))):
        assert ours.tobytes() == reference.tobytes()
    forget_memory(gpu)


def _signed_entry(path: Path, spirv: bytes, secret: bytes = b"") -> None:
    """Replace the SPIR-V of the entry at ``path``, signed with ``secret`` (the empty key: what anybody can
    write; it is refused where the folder has a trusted key, and validated where it has none)."""
    data = path.read_bytes()
    body = data[len(MAGIC) + 32 :]
    (length,) = struct.unpack_from("<I", body)
    body = body[: 4 + length] + spirv
    path.write_bytes(MAGIC + hmac.new(secret, body, hashlib.sha256).digest() + body)


def test_damaged_entries_are_rebuilt_during_a_parallel_compile(gpu, tmp_path, monkeypatch) -> None:
    folder = tmp_path / "cache"
    expected, _, _ = fresh_compile(gpu, monkeypatch, folder, 1)
    good = cache_files(folder)
    damaged = sorted(good)[:3]
    kernels = folder / "kernels"
    (kernels / damaged[0]).write_bytes(good[damaged[0]][:-5])  # truncated: fails its checksum
    header = struct.pack("<5I", 0x07230203, 0x00010300, 0, 64, 0)
    _signed_entry(kernels / damaged[1], header + bytes(64))  # not signed with the folder's key: refused
    # The third passes every check, but the driver refuses it once (as a driver may refuse a forged module).
    refused: list[str] = []
    real_create = gpu.pipelines.create

    def create(name, buffer_count, binary):
        if binary.from_disk and binary.spirv == good[damaged[2]][-len(binary.spirv) :] and not refused:
            refused.append(name)
            raise DeviceError(f"vkCreateComputePipelines ({name}) refused the module")
        return real_create(name, buffer_count, binary)

    monkeypatch.setattr(gpu.pipelines, "create", create)
    results, counts, builders = fresh_compile(gpu, monkeypatch, folder, 4)
    forget_memory(gpu)
    assert refused and all(name.startswith("vkml-compile") for name in builders)
    assert counts["cache_entries_rejected"] == 3 and counts["kernels_compiled"] == 3
    assert cache_files(folder) == good  # each rebuilt entry is the one compiled before
    for ours, reference in zip(results, expected):
        assert ours.tobytes() == reference.tobytes()


# ---------------------------------------------------------------------------- the benchmark's samples


def test_start_benchmark_samples_compile_cold_and_nothing_warm(gpu) -> None:
    import bench_cold_start

    a = vkml.tensor(bench_cold_start.input_matrix())
    expected = vkml.softmax(a @ a, dim=-1)
    for cache, compiled in (("cold", 2), ("warm", 0)):
        samples, result = bench_cold_start.vkml_samples(gpu.name, 1, cache)
        assert [sample["kernels compiled"] for sample in samples] == [compiled]
        assert [sample["templates lowered"] for sample in samples] == [compiled]  # warm: read from the disk
        assert set(samples[0]) >= {"import", "device", "first result", "total", "cpu"}
        assert result.tobytes() == expected.numpy().tobytes()  # the CPU's bits


def test_matrix_types_stay_interned_when_threads_ask_at_once(monkeypatch) -> None:
    """Compile threads emit conversions between cooperative-matrix types (``MatrixType.like``): one object per type."""
    from vkml.ir import types as T

    real = T.MatrixType

    def slow(*args):  # widens the window between the lookup and the store, as a thread switch would
        time.sleep(0.05)
        return real(*args)

    monkeypatch.setattr(T, "_MATRIX_TYPES", {})
    monkeypatch.setattr(T, "MatrixType", slow)
    found: list = []
    threads = [threading.Thread(target=lambda: found.append(T.matrix_type(T.float16, 16, 16, "acc"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 4 and all(t is found[0] for t in found)
    assert T.matrix_type(T.float16, 16, 16, "acc") is found[0]


# ---------------------------------------------------------------------------- the warm path


def _watch_validation(monkeypatch) -> list[bytes]:
    """The SPIR-V modules spirv-val is asked about from now on."""
    from vkml.runtime.vulkan import kernel_cache

    validated: list[bytes] = []
    real_validate = kernel_cache.spirv_tools.validate

    def validate(spirv, target_env, *rest, **options):
        validated.append(spirv)
        return real_validate(spirv, target_env, *rest, **options)

    monkeypatch.setattr(kernel_cache.spirv_tools, "validate", validate)
    return validated


def test_a_warm_process_lowers_and_validates_nothing(gpu, tmp_path, monkeypatch) -> None:
    """Under the folder's trusted key, entries written after spirv-val passed are not validated again, and the
    groups' kernels come from the template store: a new process runs neither lowering nor a tool."""
    from vkml.runtime.vulkan import kernel_cache

    folder = tmp_path / "cache"
    expected, cold, _ = fresh_compile(gpu, monkeypatch, folder, 1)
    assert cold["templates_lowered"] == 4 and cold["templates_loaded"] == 0
    kernel_cache._validated.clear()  # as in a new process
    validated = _watch_validation(monkeypatch)
    results, warm, _ = fresh_compile(gpu, monkeypatch, folder, 4)
    forget_memory(gpu)
    assert validated == [] and warm["kernels_compiled"] == 0 and warm["cache_entries_rejected"] == 0
    assert warm["templates_lowered"] == 0 and warm["templates_loaded"] == 4
    for ours, reference in zip(results, expected):
        assert ours.tobytes() == reference.tobytes()


def test_an_entry_read_again_is_validated_once_per_process(gpu, tmp_path, monkeypatch) -> None:
    """Where the folder has no trusted key (cache_secret.py), every entry read is validated, once per process."""
    from vkml.runtime.vulkan import kernel_cache, template_store

    monkeypatch.setattr(kernel_cache, "mac_key", lambda folder: None)
    monkeypatch.setattr(template_store, "mac_key", lambda folder: None)
    folder = tmp_path / "cache"
    expected, _, _ = fresh_compile(gpu, monkeypatch, folder, 1)  # compiled here: codegen validated each
    assert not (folder / "templates").exists()  # no template is stored without a trusted key
    validated = _watch_validation(monkeypatch)
    results, counts, _ = fresh_compile(gpu, monkeypatch, folder, 4)  # memory levels dropped: read from disk
    assert counts["kernels_compiled"] == 0 and validated == []
    # Bytes changed on disk are other bytes: validated (and here rejected, then rebuilt) as ever.
    victim = sorted((folder / "kernels").glob("*.spv"))[0]
    header = struct.pack("<5I", 0x07230203, 0x00010300, 0, 64, 0)
    _signed_entry(victim, header + bytes(64))
    results, counts, _ = fresh_compile(gpu, monkeypatch, folder, 4)
    forget_memory(gpu)
    # The forged entry's check, then codegen's of the kernel compiled in its place; no other entry's.
    assert validated[0] == header + bytes(64) and len(validated) == 2
    assert counts["cache_entries_rejected"] == 1 and counts["kernels_compiled"] == 1
    for ours, reference in zip(results, expected):
        assert ours.tobytes() == reference.tobytes()


def test_a_warm_start_leaves_the_pipeline_cache_file_alone(gpu, tmp_path, monkeypatch) -> None:
    """The pipeline cache is written back at exit when pipelines were made; where the driver's data is what
    the file already holds (a warm start's pipelines came from it), the file is left as it is."""
    from vkml.runtime.vulkan.pipelines import PipelineCacheFile

    monkeypatch.setenv("VKML_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "pipelines.bin"
    saved = gpu.pipelines.cache_file
    try:
        files = []
        for _ in range(2):  # a cold process, then a warm one
            gpu.pipelines.cache_file = cache = PipelineCacheFile(gpu.logical, path)
            forget_memory(gpu)
            workload(gpu)
            assert cache.dirty
            cache.save()
            assert not cache.dirty
            files.append((path.read_bytes(), path.stat().st_ino))  # a write makes a new file (renamed into place)
        (first, first_inode), (second, second_inode) = files
        assert len(first) > 40 and (first != second or first_inode == second_inode)
        path.unlink()  # gone since: saved again
        cache.dirty = True
        cache.save()
        assert path.read_bytes() == second
    finally:
        gpu.pipelines.cache_file = saved
        forget_memory(gpu)
