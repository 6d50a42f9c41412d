"""Cold start: what ``import vkml`` loads, and the same kernels when a realize compiles in parallel.

Timing is bench/bench_cold_start.py's business (docs/benchmarks.md); these tests assert no time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter that imports this checkout's vkml; its stdout."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **env}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# ---------------------------------------------------------------------------- import vkml


DEFERRED = ("vkml.nn", "vkml.optim", "vkml.utils", "lark", "multiprocessing", "vkml.runtime.vulkan", "cffi")


def test_import_vkml_defers_what_a_first_op_does_not_need() -> None:
    code = f"import json, sys, vkml; print(json.dumps([m for m in {list(DEFERRED)!r} if m in sys.modules]))"
    assert json.loads(_python(code)) == []


def test_deferred_submodules_work_as_attributes_and_imports() -> None:
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
"""
    assert _python(code).splitlines() == [
        "Linear SGD DataLoader",
        "True True True True",
        "True",
        "module 'vkml' has no attribute 'no_such_name'",
    ]


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
