"""The programs in examples/ run as a user runs them (a short form), on the CPU backend and on Vulkan."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_modules_and_buffers(gpu):
    on_cpu = _run("modules_and_buffers.py", "--steps", "4")
    first, last = map(float, re.search(r"loss: (\S+) -> (\S+)", on_cpu).groups())
    assert last < first
    assert "restored model agrees: True" in on_cpu and "steps: 4 |" in on_cpu
    assert "(0-1): 2 x Residual(" in on_cpu and "saved: mean, std, stem.weight" in on_cpu
    # The same bits on Vulkan: every printed number is the same.
    assert _run("modules_and_buffers.py", "--steps", "4", "--device", gpu.name) == on_cpu


def test_cnn_classifier(gpu):
    on_cpu = _run("cnn_classifier.py", "--steps", "4")
    first, last = map(float, re.search(r"loss: (\S+) -> (\S+)", on_cpu).groups())
    assert last < first
    assert "batches tracked: 4 |" in on_cpu and "(0): Conv2d(1, 8, kernel_size=(3, 3)" in on_cpu
    # The same bits on Vulkan: every printed loss is the same.
    assert _run("cnn_classifier.py", "--steps", "4", "--device", gpu.name) == on_cpu
