"""Progress bars: tqdm when it is installed, else ``Bar``, a one-line bar with the part of tqdm's
interface vkml and its examples use (iterate, ``update``, ``set_postfix_str``, ``close``, ``delay``).

The public name is ``vkml.utils.progress.progress_bar``; this module lives in the runtime so that
the kernel compiler (vkml/runtime/vulkan/pipelines.py) can show a bar while one realize compiles
many new kernels without the runtime importing the face.

``Bar`` writes to stderr (or ``file``), redraws with a carriage return, and is safe to ``update``
from several threads. With ``delay`` it draws nothing until that many seconds have passed since it
was made, as tqdm's ``delay`` does: a short job leaves no trace.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from .. import config

WIDTH = 30


class Bar:
    """A one-line progress bar on stderr: ``for x in Bar(it, total=n): ...`` or ``bar.update(k)``."""

    def __init__(
        self,
        iterable: Iterable | None = None,
        total: int | None = None,
        initial: int = 0,
        desc: str = "",
        disable: bool = False,
        file: Any = None,
        unit: str = "it",
        delay: float = 0.0,
        leave: bool = True,
    ):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.n, self.desc = iterable, total, initial, desc
        self.disable, self.file, self.unit, self.delay, self.leave = disable, file, unit, delay, leave
        self.postfix = ""
        self.start = time.perf_counter()
        self._drawn = False  # whether a line is on the screen (close() then ends it)
        self._closed = False
        self._lock = threading.Lock()  # update() may come from several threads

    def __iter__(self) -> Iterator:
        if self.iterable is None:
            raise TypeError("Bar: iterating needs an iterable; use update() otherwise")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.n += n
            self._draw()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        with self._lock:
            self.postfix = s
            if refresh:
                self._draw()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._drawn:
                stream = self.file if self.file is not None else sys.stderr
                if self.leave:
                    self._draw(force=True)
                    print(file=stream, flush=True)
                else:
                    print("\r" + " " * len(self._line()) + "\r", end="", file=stream, flush=True)

    def _line(self) -> str:
        elapsed = time.perf_counter() - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        head = f"{self.desc}: " if self.desc else ""
        if self.total:
            done = WIDTH * min(self.n, self.total) // self.total
            body = f"[{'#' * done}{'.' * (WIDTH - done)}] {self.n}/{self.total}"
        else:
            body = f"{self.n}"
        tail = f" {self.postfix}" if self.postfix else ""
        return f"{head}{body} {elapsed:.1f}s {rate:.1f} {self.unit}/s{tail}"

    def _draw(self, force: bool = False) -> None:
        if self.disable or (self._closed and not force):
            return
        if not force and not self._drawn and time.perf_counter() - self.start < self.delay:
            return
        stream = self.file if self.file is not None else sys.stderr
        print("\r" + self._line(), end="", file=stream, flush=True)
        self._drawn = True


def progress_bar(iterable: Iterable | None = None, **kwargs: Any) -> Any:
    """A progress bar with tqdm's interface: ``tqdm.tqdm(iterable, **kwargs)`` when tqdm is installed, else ``Bar``.

    ``kwargs`` are tqdm's names that ``Bar`` also takes: ``total``, ``initial``, ``desc``,
    ``disable``, ``file``, ``unit``, ``delay``, ``leave``.
    """
    try:
        from tqdm import tqdm  # lazy: optional dependency
    except ImportError:
        return Bar(iterable, **kwargs)
    return tqdm(iterable, **kwargs)


def compile_bar(total: int) -> Any | None:
    """The bar for one realize compiling ``total`` new kernels, or ``None`` when none is to be shown.

    ``VKML_PROGRESS=1`` shows it at once; unset, it shows only when stderr is a terminal, and only
    once the compiles have taken a second (a test's captured stderr, or a warm cache, sees nothing).
    """
    mode = config.progress()
    if mode is False:
        return None
    if mode is None:
        isatty = getattr(sys.stderr, "isatty", None)
        if isatty is None or not isatty():
            return None
    delay = 0.0 if mode else 1.0
    return progress_bar(total=total, desc="vkml: compiling kernels", unit="kernel", delay=delay, leave=False)
