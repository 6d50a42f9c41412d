"""docs/dsl.md runs: its python blocks in order, each `output` block equal to what the block before printed.

A python block whose first line is ``# name.py`` is a module file: it is written to a
temporary folder instead of being run. A ``sh`` block runs ``vkml-dump-spirv`` in that folder,
in a process of its own, and its ``output`` block must be the start of what it printed.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from vkml.dsl import elementwise as custom

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "dsl.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def _blocks() -> list[tuple[str, str, int]]:
    text = DOC.read_text()
    return [(m.group(1), m.group(2), text[: m.start()].count("\n") + 2) for m in BLOCK.finditer(text)]


def _run_python(code: str, line: int, namespace: dict) -> str:
    filename = f"{DOC}:{line}"
    # Errors quote the user's source line; give linecache the block's text as if it were a file.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, filename, "exec"), namespace)
    return out.getvalue()


def _run_sh(command: str, cwd: Path) -> str:
    # A process of its own, as on a command line: the guide's session has its own ops registered.
    argv = shlex.split(command.strip())
    assert argv[0] == "vkml-dump-spirv", f"only vkml-dump-spirv commands run here, not {argv[0]}"
    # Keep the caller's PYTHONPATH (where the dependencies may live, as on the GPU machine) after the repo.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "vkml.cli", *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_guide_has_examples_of_every_kind():
    kinds = [kind for kind, _, _ in _blocks()]
    assert kinds.count("python") >= 10 and "sh" in kinds and kinds.count("output") >= 10
    text = DOC.read_text()
    for topic in ("@vkml.elementwise", "@vkml.kernel", "dsl.shared", "dsl.barrier", "shuffle_xor", "backward="):
        assert topic in text


def test_every_example_runs_and_prints_what_the_guide_says(tmp_path):
    namespace: dict = {"__name__": "dsl_guide"}
    last_kind, last_output = None, None
    with custom.restoring_registry():
        for kind, body, line in _blocks():
            where = f"docs/dsl.md:{line}"
            if kind == "python":
                first = body.splitlines()[0]
                if re.fullmatch(r"# \w+\.py", first):
                    (tmp_path / first[2:]).write_text(body)
                    continue
                last_kind, last_output = kind, _run_python(body, line, namespace)
            elif kind == "sh":
                last_kind, last_output = kind, _run_sh(body, tmp_path)
            elif kind == "output":
                assert last_output is not None, f"{where}: an output block with no example before it"
                if last_kind == "sh":
                    assert last_output.startswith(body), f"{where}: the command printed\n{last_output[:400]}"
                else:
                    assert last_output == body, f"{where}: the example printed\n{last_output}"
                last_output = None


@pytest.mark.parametrize("name", ["dsl", "dsl.elementwise", "dsl.kernel", "dsl.autodiff"])
def test_the_modules_point_at_the_guide_or_explain_themselves(name):
    import importlib

    module = importlib.import_module(f"vkml.{name}")
    assert module.__doc__ and len(module.__doc__.splitlines()) > 5
