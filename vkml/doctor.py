"""``python -m vkml.doctor``: what vkml finds on this machine, and whether each device computes.

It prints vkml's, Python's and numpy's versions, whether the Vulkan loader loaded and an instance
started (and why not), each Vulkan device's report (vkml.vulkan_device_reports()), the SPIR-V tools,
the kernel cache folder, and runs one small kernel on the CPU and on every usable Vulkan device,
checking its result. The exit status is 0 when every device computed the right answer.

    python -m vkml.doctor
"""

from __future__ import annotations

import platform
import subprocess
import sys
import time
import traceback
from importlib import metadata

import numpy as np

from . import config
from .codegen import tools as spirv_tools
from .frontend import creation, devices
from .ir import types as T
from .runtime.vulkan import instance as vulkan_instance
from .runtime.vulkan import kernel_cache


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> list[str]:
    return [
        f"vkml {config.VERSION} (kernel cache entries {kernel_cache.vkml_version()}), from {__file__.rsplit('/', 2)[0]}",
        f"Python {platform.python_version()} ({sys.executable}) on {platform.platform()}",
        f"numpy {np.__version__}; vulkan (cffi binding) {_version('vulkan')}",
    ]


def loader() -> list[str]:
    if not vulkan_instance.loader_present():
        return [f"Vulkan loader: not found ({vulkan_instance.unavailable_reason()}); only the cpu device exists"]
    if not vulkan_instance.available():
        return [f"Vulkan loader: found, but no instance started: {vulkan_instance.unavailable_reason()}"]
    api = vulkan_instance.version_string(vulkan_instance.instance_api_version())
    return [f"Vulkan loader: found; instance API {api}; {len(vulkan_instance.physical_devices())} physical device(s)"]


def device_lines(report: dict) -> list[str]:
    """The facts of one device report that decide what vkml does there."""
    head = f"vulkan:{report['index']}: {report.get('name', '?')} ({report.get('device_type', '?')})"
    if "error" in report or not report.get("usable"):
        return [head, f"    not usable: {report.get('error', 'needs Vulkan 1.1 and a compute queue')}"]
    f = report["features"]
    heaps = ", ".join(
        f"{h['size'] / 2**30:.1f} GiB{' device-local' if h['device_local'] else ''}" for h in report["memory_heaps"]
    )
    limits = report["limits"]
    timestamps = limits.get("timestampPeriod", 0) and limits.get("timestampComputeAndGraphics")
    return [
        head,
        f"    driver {report['driver_name']} {report['driver_version']} ({report['driver_info']}), Vulkan {report['api_version']}",
        f"    float16 {f['float16']}, int64 {f['int64']}, int8 {f['int8']}, subgroup size {f['subgroup_size']}, "
        f"cooperative matrix {f['cooperative_matrix']}, SPIR-V {'.'.join(map(str, f['spirv_version']))}",
        f"    RTE float32 {f['rte_float32']}, denormals kept {f['denorm_preserve_float32']}, "
        f"timestamps {'yes' if timestamps else 'no'}, memory {heaps}",
    ]


def tool_lines() -> list[str]:
    lines = []
    for name in ("spirv-as", "spirv-val"):
        try:
            path = spirv_tools.tool_path(name)
            done = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=False)
            first = (done.stdout or done.stderr).strip().splitlines()[:1]
            lines.append(f"{name}: {path} ({first[0] if first else 'version unknown'})")
        except Exception as exc:  # noqa: BLE001 - a report, not a failure
            lines.append(f"{name}: MISSING: {exc}")
    return lines


def cache_lines() -> list[str]:
    folder = config.cache_dir()
    if not folder.exists():
        return [f"kernel cache: {folder} (does not exist yet: created at the first compile)"]
    # other processes write and rename files here meanwhile (a compile's temporary file): count what is left
    sizes = []
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                sizes.append(path.stat().st_size)
        except OSError:
            continue
    used = sum(sizes)
    budget = config.cache_max_bytes()
    writable = "writable" if _writable(folder) else "NOT WRITABLE: compiled kernels will not be kept"
    return [
        f"kernel cache: {folder}: {len(sizes)} files, {used / 2**20:.1f} MiB of {budget / 2**20:.0f} MiB, {writable}"
    ]


def _writable(folder) -> bool:
    probe = folder / ".vkml-doctor-probe"
    try:
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


def smoke_test(device) -> tuple[bool, str]:
    """Run one fused kernel and one reduction on ``device``; (passed, what happened)."""
    try:
        start = time.perf_counter()
        x = creation.arange(64, dtype=T.float32, device=device)
        got = ((x * 2 + 1).sum()).item()
        seconds = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - the report names what failed
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return False, f"FAILED: {detail}"
    want = float(sum(2 * i + 1 for i in range(64)))
    if got != want:
        return False, f"FAILED: sum(2x+1 for x in 0..63) gave {got}, expected {want}"
    return True, f"ok ({seconds * 1e3:.0f} ms, compiling included)"


def main(argv: list[str] | None = None) -> int:
    out: list[str] = ["vkml doctor", ""]
    out += versions() + [""] + loader()
    reports = devices.vulkan_device_reports()
    for report in reports:
        out += device_lines(report)
    out += [""] + tool_lines() + cache_lines()
    best = devices.best_device()
    out += [
        f'best_device(): {best.name}; "cuda" names {best.name if best.kind == "vulkan" else "nothing (no Vulkan)"}',
        "",
    ]
    print("\n".join(out), flush=True)
    passed = True
    targets = [devices.device("cpu")] + [f"vulkan:{r['index']}" for r in reports if r.get("usable")]
    for target in targets:
        try:
            dev = devices.device(target)
        except Exception as exc:  # noqa: BLE001
            ok, text, name = False, f"FAILED to open: {type(exc).__name__}: {exc}", str(target)
        else:
            name = dev.name
            ok, text = smoke_test(dev)
        passed &= ok
        print(f"smoke test on {name}: {text}", flush=True)
    print("\nall devices computed correctly" if passed else "\nSOME DEVICES FAILED (see above)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
