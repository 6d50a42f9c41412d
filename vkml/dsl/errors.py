"""Mistakes in users' DSL code, reported at the user's own line.

A custom operator's body runs inside vkml (when it is called, and again when its kernel is
built), so a plain traceback ends deep in the builder or the math library. ``at_user_line``
re-raises such an error with the innermost frame *outside* the vkml package in front:

    softclip (my_ops.py:12): an IR value has no Python truth value (...); use dsl.where(cond, a, b) ...
        if x > hi:
"""

from __future__ import annotations

import contextlib
import linecache
import traceback
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # vkml's folder: frames there are not the user's

# Extra advice by a fragment of the original message.
_HINTS = {
    "operand types differ": "convert one side first, e.g. dsl.convert(i, vkml.float32)",
    "unsupported Python value": "only Python numbers and IR values mix with IR values",
    "cannot infer an IR type": "give a constant its type with dsl.const(value, dtype)",
    "unsupported operand type(s) for **": "use dsl.pow(x, y)",
    "bad operand type for abs()": "use dsl.abs(x)",
    "used where": "convert one side first with dsl.convert(value, dtype)",
    "store of f32 into f16": "narrow it first with dsl.f32_to_f16(value) (round to nearest even)",
}


def _inside_vkml(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(PACKAGE_DIR)
    except (OSError, ValueError):
        return False


def user_frame(tb) -> traceback.FrameSummary | None:
    """The innermost frame of traceback ``tb`` whose code lies outside the vkml package."""
    for frame in reversed(traceback.extract_tb(tb)):
        if not _inside_vkml(frame.filename):
            return frame
    return None


def _hint(message: str) -> str:
    for fragment, hint in _HINTS.items():
        if fragment in message:
            return f"; {hint}"
    return ""


def locate(what: str, filename: str, lineno: int, message: str, line: str | None = None) -> str:
    """``message`` prefixed with ``what (file:line)`` and followed by the source line."""
    line = line if line is not None else linecache.getline(filename, lineno).strip()
    text = f"{what} ({filename}:{lineno}): {message}{_hint(message)}"
    return f"{text}\n    {line}" if line else text


@contextlib.contextmanager
def at_user_line(what: str, fallback=None):
    """Re-raise any error from the block with the user's file:line and source line in its message.

    The exception keeps its type (DTypeError, IRError, TypeError, ...), so callers can catch it
    as before. ``fallback`` (a function) names the place when no frame outside vkml took part,
    e.g. for a body that returns the wrong thing: its ``def`` line.

    >>> with at_user_line("softclip"):          # doctest: +SKIP
    ...     body(*values)
    """
    try:
        yield
    except Exception as e:  # noqa: BLE001 - re-raised with the same type
        if getattr(e, "_vkml_located", False):
            raise
        frame = user_frame(e.__traceback__)
        if frame is not None:
            message = locate(what, frame.filename, frame.lineno, str(e), frame.line)
        elif fallback is not None:
            code = fallback.__code__
            message = locate(what, code.co_filename, code.co_firstlineno, str(e))
        else:
            raise
        try:
            located = type(e)(message)
        except Exception:  # noqa: BLE001 - an exception type whose constructor wants more
            raise e from None
        located._vkml_located = True
        raise located.with_traceback(e.__traceback__) from None
