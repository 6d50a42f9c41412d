"""A second process that runs the same graph compiles nothing; a damaged cache entry is rebuilt."""

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, numpy as np, vkml
from vkml import debug
dev = vkml.best_device()
assert dev.name != "cpu", "no Vulkan device"
x = vkml.tensor(np.arange(24, dtype=np.float32).reshape(4, 6), device=dev)
y = vkml.softmax(x * 0.5, dim=1).sum(dim=0) + 1.0
print(json.dumps({"values": y.tolist(), "compiled": debug.counters()["kernels_compiled"]}))
"""


def _run(cache: Path) -> dict:
    env = dict(os.environ, VKML_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing_and_damaged_entries_are_rebuilt(tmp_path):
    first = _run(tmp_path)
    assert first["compiled"] >= 2  # the softmax kernels and the sum
    second = _run(tmp_path)
    assert second["compiled"] == 0
    assert second["values"] == first["values"]

    entries = sorted((tmp_path / "kernels").glob("*.spv"))
    assert len(entries) == first["compiled"]
    entries[0].write_bytes(entries[0].read_bytes()[:40])  # truncated
    entries[1].write_bytes(b"garbage" * 10)
    third = _run(tmp_path)
    assert third["compiled"] == 2
    assert third["values"] == first["values"]
    assert _run(tmp_path)["compiled"] == 0  # rewritten
