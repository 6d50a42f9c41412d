"""``torch.utils.benchmark``: ``Timer``, its ``Measurement`` and a ``Compare`` table, as PyTorch's recipe
uses them.

``Timer(stmt, setup, globals=...)`` runs ``stmt`` as ``timeit`` does and waits for the device's submitted
work at the end of each block of runs (PyTorch synchronizes CUDA the same way). vkml is lazy: a statement
whose result nobody reads builds a graph that never runs, so time statements that read or realize their
result (``(x @ y).realize()``, ``loss.item()``, ``backward()`` and an optimizer step) — the times are then
those of the work. ``collect_callgrind`` and the fuzzers are PyTorch's C++ tooling and are not offered.

>>> import vkml
>>> import vkml.utils.benchmark as benchmark
>>> x = vkml.ones(8, 8)
>>> m = benchmark.Timer(stmt="(x @ x).realize()", globals={"x": x}, label="matmul").timeit(3)
>>> m.number_per_run, m.mean > 0
(3, True)
"""

from __future__ import annotations

import enum
import statistics
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field

from ..frontend import accelerator

__all__ = ["Compare", "Language", "Measurement", "TaskSpec", "Timer", "select_unit"]


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


@dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels a ``Compare`` table groups by."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt: {self.stmt}" if "\n" not in self.stmt else "stmt: (multiline)"


def select_unit(t: float) -> tuple[str, float]:
    """The unit PyTorch prints a time of ``t`` seconds in, and the seconds of one such unit."""
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if t < scale * 1e3:
            return unit, scale
    return "s", 1.0


@dataclass
class Measurement:
    """The times of ``number_per_run`` runs of a statement, one entry of ``raw_times`` per block;
    ``times`` are per run, in seconds."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict | None = None
    times: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.times = [t / self.number_per_run for t in self.raw_times]

    def __getattr__(self, name: str):
        if name in ("stmt", "setup", "label", "sub_label", "description", "env", "num_threads", "title"):
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        if len(self.times) < 2:
            return 0.0
        quartiles = statistics.quantiles(self.times, n=4, method="inclusive")
        return quartiles[2] - quartiles[0]

    @property
    def has_warnings(self) -> bool:
        return self.iqr / self.median > 0.1 if len(self.times) >= 4 else False

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        lines = [f"<vkml.utils.benchmark.Measurement object at {id(self):#x}>", self.task_spec.title]
        if self.task_spec.description:
            lines.append(self.task_spec.description)
        if self.task_spec.setup not in ("", "pass"):
            lines.append(f"setup: {self.task_spec.setup}")
        threads = f"{self.task_spec.num_threads} thread" + ("s" if self.task_spec.num_threads != 1 else "")
        if len(self.times) == 1:
            lines.append(f"  {self.median / scale:.2f} {unit}")
            lines.append(f"  1 measurement, {self.number_per_run} runs , {threads}")
        else:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  {len(self.times)} measurements, {self.number_per_run} runs per measurement, {threads}")
        return "\n".join(lines)


class Timer:
    """PyTorch's ``torch.utils.benchmark.Timer``: ``timeit(number)``, ``blocked_autorange`` and
    ``adaptive_autorange`` give a ``Measurement``; the device's work is waited for after each block."""

    def __init__(
        self,
        stmt: str | Callable = "pass",
        setup: str | Callable = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timeit.default_timer,
        globals: dict | None = None,  # noqa: A002 - PyTorch's argument name
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if language not in (Language.PYTHON, "py", "python"):
            raise NotImplementedError("torch.utils.benchmark.Timer: vkml times Python statements only")
        self._timer = timer
        self._timeit = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=dict(globals or {}))
        self._task_spec = TaskSpec(
            stmt=stmt if isinstance(stmt, str) else getattr(stmt, "__name__", repr(stmt)),
            setup=setup if isinstance(setup, str) else getattr(setup, "__name__", repr(setup)),
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )

    def _block(self, number: int) -> float:
        start = self._timer()
        self._timeit.timeit(number)
        accelerator.synchronize()
        return self._timer() - start

    def timeit(self, number: int = 1000000) -> Measurement:
        """``number`` runs of the statement as one block, after one warm-up run."""
        self._block(1)
        return Measurement(number, [self._block(number)], self._task_spec)

    def _runs_per_block(self, min_block_s: float) -> int:
        number = 1
        while self._block(number) < min_block_s:
            number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a run count that takes at least 0.1 ms each, until ``min_run_time`` seconds are spent."""
        number = self._runs_per_block(1e-4)
        raw, total = [], 0.0
        while total < min_run_time or not raw:
            block = self._block(number)
            raw.append(block)
            total += block
            if callback is not None:
                callback(number, block)
        return Measurement(number, raw, self._task_spec)

    def adaptive_autorange(
        self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0, callback=None
    ) -> Measurement:
        """Blocks until the interquartile range is within ``threshold`` of the median (at least
        ``min_run_time``, at most ``max_run_time`` seconds, at least three blocks)."""
        number = self._runs_per_block(min_run_time / 10)
        raw, total = [], 0.0
        while True:
            block = self._block(number)
            raw.append(block)
            total += block
            if callback is not None:
                callback(number, block)
            measurement = Measurement(number, raw, self._task_spec)
            steady = len(raw) > 3 and measurement.iqr <= threshold * measurement.median
            if total >= max_run_time or (total >= min_run_time and steady):
                return measurement

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("torch.utils.benchmark.Timer.collect_callgrind: vkml has no Callgrind tooling")


class Compare:
    """A table of measurements: one block per ``label``, rows by ``sub_label``, columns by ``description``
    (PyTorch's ``Compare``); ``print(compare)`` or ``compare.print()`` shows the medians."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results = list(results)
        self._trim = False

    def extend_results(self, results: list[Measurement]) -> None:
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        """Accepted; the table stays plain text."""

    def highlight_warnings(self) -> None:
        """Accepted; the table stays plain text."""

    def __str__(self) -> str:
        blocks = []
        for label in dict.fromkeys(m.task_spec.label for m in self._results):
            group = [m for m in self._results if m.task_spec.label == label]
            unit, scale = select_unit(min(m.median for m in group))
            columns = list(dict.fromkeys(m.task_spec.description or "" for m in group))
            rows = list(dict.fromkeys(m.task_spec.sub_label or "" for m in group))
            cells = {(m.task_spec.sub_label or "", m.task_spec.description or ""): m.median / scale for m in group}
            width = max([len(r) for r in rows] + [1])
            header = " " * width + "  |  " + "  |  ".join(columns)
            threads = f"{group[0].task_spec.num_threads} threads: "
            lines = [f"[----- {label} -----]", header, threads + "-" * max(len(header) - len(threads), 4)]
            for row in rows:
                values = [cells.get((row, c)) for c in columns]
                shown = [("" if v is None else f"{v:.0f}" if self._trim else f"{v:.1f}") for v in values]
                lines.append(row.rjust(width) + "  |  " + "  |  ".join(shown))
            lines.append(f"\nTimes are in {_UNIT_NAMES[unit]} ({unit}).\n")
            blocks.append("\n".join(lines))
        return "\n".join(blocks)

    def print(self) -> None:
        print(str(self))


_UNIT_NAMES = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}
