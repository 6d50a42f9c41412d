"""Functions ``vkml.multiprocessing.spawn`` runs in child processes (tests/test_compat_modules.py): a module of
its own, importable without torch, so that each child starts quickly."""

from __future__ import annotations

from pathlib import Path


def write_index(index: int, folder: str, text: str) -> None:
    Path(folder, f"{index}.txt").write_text(f"{text}{index}")


def fail(index: int) -> None:
    raise ValueError(f"boom in {index}")
