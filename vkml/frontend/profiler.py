"""``vkml.profiler``: torch.profiler's ``profile``, ``record_function`` and ``key_averages().table()``,
timing every kernel vkml runs with GPU timestamps (Vulkan) or the interpreter's wall clock (CPU).

    >>> import vkml
    >>> from vkml.profiler import profile, ProfilerActivity, record_function
    >>> with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    ...     with record_function("step"):
    ...         total = (vkml.ones(64, 64) @ vkml.ones(64, 64)).sum().item()
    >>> print(prof.key_averages().table(sort_by="device_time_total", row_limit=10))  # doctest: +SKIP

A kernel's row is named after the kernel vkml generated (``vkml-dump-spirv`` shows its code); a
``record_function`` range's row has its wall-clock CPU time (self: less the CPU-device kernels run
inside it) and, as device time, the Vulkan kernels run inside it. Kernels of Vulkan devices count as
``ProfilerActivity.CUDA`` with device time; kernels of the CPU device as ``ProfilerActivity.CPU``
with CPU time (the interpreter's wall clock). While a profile records, each realize waits for its kernels
(timestamps are read at once), so Python and the GPU no longer overlap. docs/debugging.md.
"""

from __future__ import annotations

import enum
import gzip
import json
import os
import socket
import threading
import time
import warnings
from dataclasses import dataclass, field

from .. import debug


class ProfilerActivity(enum.Enum):
    """What to record: ``CPU`` (record_function ranges, CPU-device kernels), ``CUDA`` (Vulkan kernels)."""

    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


@dataclass
class FunctionEvent:
    """One kernel run or one ``record_function`` range; times in microseconds, as PyTorch's."""

    name: str
    device: str
    start_us: float
    cpu_time_total: float = 0.0
    device_time_total: float = 0.0
    input_shapes: list = field(default_factory=list)
    is_user_annotation: bool = False
    children_cpu_us: float = 0.0  # CPU time of the CPU-device kernels run inside a range

    @property
    def key(self) -> str:
        return self.name

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - self.children_cpu_us

    @property
    def self_device_time_total(self) -> float:
        return 0.0 if self.is_user_annotation else self.device_time_total


@dataclass
class FunctionEventAvg:
    """The events of one name (and input shape, when grouped so) added up."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    device_time_total: float = 0.0
    self_device_time_total: float = 0.0
    input_shapes: list = field(default_factory=list)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_time = property(lambda self: self.device_time)

    def add(self, event: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.device_time_total += event.device_time_total
        self.self_device_time_total += event.self_device_time_total


_SORT_KEYS = {
    "cpu_time_total": "cpu_time_total",
    "self_cpu_time_total": "self_cpu_time_total",
    "cpu_time": "cpu_time",
    "device_time_total": "device_time_total",
    "cuda_time_total": "device_time_total",
    "self_device_time_total": "self_device_time_total",
    "self_cuda_time_total": "self_device_time_total",
    "device_time": "device_time",
    "cuda_time": "device_time",
    "count": "count",
}


def _us(value: float) -> str:
    """PyTorch's time format: us below a millisecond, ms below a second, else s."""
    if value >= 1e6:
        return f"{value / 1e6:.3f}s"
    if value >= 1e3:
        return f"{value / 1e3:.3f}ms"
    return f"{value:.3f}us"


class EventList(list):
    """A list of events (or averages) with PyTorch's ``table``."""

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
    ) -> str:
        """A text table like torch.profiler's: one row per name, sorted by ``sort_by`` (descending)."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(f"table(): unknown sort_by {sort_by!r}; one of {sorted(_SORT_KEYS)}")
            rows.sort(key=lambda e: getattr(e, _SORT_KEYS[sort_by]), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        self_cpu = sum(e.self_cpu_time_total for e in self)
        self_device = sum(e.self_device_time_total for e in self)
        shapes = any(e.input_shapes for e in rows)
        width = min(max_name_column_width, max([len(e.key) for e in rows] + [4]))
        columns = ["Self CPU", "CPU total", "CPU time avg", "Self Device", "Self Device %", "Device total"]
        columns += ["Device time avg", "# of Calls"]
        line = "-" * width + "  " + "  ".join("-" * 15 for _ in columns)
        if shapes:
            line += "  " + "-" * 20
        head = f"{'Name':>{width}}  " + "  ".join(f"{c:>15}" for c in columns)
        if shapes:
            head += f"  {'Input Shapes':>20}"
        out = ([header] if header else []) + [line, head, line]
        for e in rows:
            share = f"{100 * e.self_device_time_total / self_device:.2f}%" if self_device else "0.00%"
            name = e.key if len(e.key) <= width else e.key[: width - 3] + "..."
            cells = [_us(e.self_cpu_time_total), _us(e.cpu_time_total), _us(e.cpu_time)]
            cells += [_us(e.self_device_time_total), share, _us(e.device_time_total), _us(e.device_time), str(e.count)]
            text = f"{name:>{width}}  " + "  ".join(f"{c:>15}" for c in cells)
            if shapes:
                text += f"  {str(e.input_shapes)[:max_shapes_column_width]:>20}"
            out.append(text)
        out += [line, f"Self CPU time total: {_us(self_cpu)}", f"Self Device time total: {_us(self_device)}", ""]
        return "\n".join(out)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for e in self:
            total.count += getattr(e, "count", 1)
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
            total.device_time_total += e.device_time_total
            total.self_device_time_total += e.self_device_time_total
        return total


_active: list[profile] = []  # the profiles recording now, innermost last
_lock = threading.Lock()

_UNSUPPORTED = ("profile_memory", "with_stack", "with_flops", "with_modules")


class ProfilerAction(enum.Enum):
    """What a ``schedule`` asks of a step: nothing, warming up, recording, recording then saving."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0):
    """``torch.profiler.schedule``: a function of the step number giving its ``ProfilerAction``: after
    ``skip_first`` steps, cycles of ``wait`` idle, ``warmup`` and ``active`` recorded steps, the last of
    which saves (``on_trace_ready``); ``repeat`` cycles (0: no end).

    >>> from vkml.profiler import schedule
    >>> [schedule(wait=1, warmup=1, active=2, repeat=1)(step).name for step in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:  # shifted by one wait: the first cycle starts at its warmup
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        within = step % cycle
        if within < wait:
            return ProfilerAction.NONE
        if within < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if within < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """``torch.profiler.tensorboard_trace_handler``: an ``on_trace_ready`` that writes each saved trace as
    ``<dir_name>/<worker_name>.<time in ms>.pt.trace.json`` (Chrome trace format; ``.gz`` with ``use_gzip``)."""

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json")
        if not use_gzip:
            prof.export_chrome_trace(path)
            return
        prof.export_chrome_trace(path)
        with open(path, "rb") as plain, gzip.open(path + ".gz", "wb") as packed:
            packed.write(plain.read())
        os.remove(path)

    return handler


class profile:  # noqa: N801 - torch.profiler's name
    """Record every kernel run inside the block with its device time (see the module text).

    Takes torch.profiler.profile's arguments. ``record_shapes=True`` keeps each kernel's grid as its
    input shape (``key_averages(group_by_input_shape=True)`` groups by it). ``schedule`` (see
    ``schedule``) picks the steps ``step()`` counts that are recorded; each recording that ends (its
    ``RECORD_AND_SAVE`` step, or leaving the block while recording) calls ``on_trace_ready(prof)``, and
    ``key_averages()`` then holds that recording's events. What vkml cannot record yet raises
    NotImplementedError when asked for: ``profile_memory``, ``with_stack``, ``with_flops``, ``with_modules``.
    """

    def __init__(
        self,
        *,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback=None,
        post_processing_timeout_s: float | None = None,
    ):
        given = {"schedule": schedule, "on_trace_ready": on_trace_ready, "profile_memory": profile_memory}
        given.update(with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        for name in _UNSUPPORTED:
            if given[name]:
                raise NotImplementedError(f"vkml.profiler.profile: {name}= is not supported yet (docs/debugging.md)")
        self.activities = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            self.activities.add(ProfilerActivity.CUDA)
        self.record_shapes = record_shapes
        self._events: list[FunctionEvent] = []
        self._open_ranges: list[FunctionEvent] = []
        self.step_num = 0
        self._recording = False
        self._schedule = schedule if schedule is not None else _always_record
        self._on_trace_ready = on_trace_ready
        self._action = ProfilerAction.NONE
        self._collecting = False  # within a recorded step: kernels and ranges become events

    # ------------------------------------------------------------------ recording
    def start(self) -> None:
        with _lock:
            _active.append(self)
            debug.run_listeners.append(self._on_run)
        self._recording = True
        self._action = self._schedule(self.step_num)
        self._transit(ProfilerAction.NONE, self._action)

    def stop(self) -> None:
        if not self._recording:
            return
        self._transit(self._action, None)
        with _lock:
            debug.run_listeners.remove(self._on_run)
            _active.remove(self)
        self._recording = False

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def step(self) -> None:
        """Mark the end of a training step: the schedule's action for the next one starts (or saves)."""
        self.step_num += 1
        if self._recording:
            before, self._action = self._action, self._schedule(self.step_num)
            self._transit(before, self._action)

    def _transit(self, before: ProfilerAction, after: ProfilerAction | None) -> None:
        """PyTorch's transitions between two steps' actions (``after`` None: the block ends)."""
        if before is ProfilerAction.RECORD_AND_SAVE or (before is ProfilerAction.RECORD and after is None):
            self._collecting = False
            if self._on_trace_ready is not None:
                self._on_trace_ready(self)
        elif before is ProfilerAction.RECORD and after not in _RECORDING:
            warnings.warn(f"Incorrect schedule: RECORD followed by {after.name}", stacklevel=3)
            self._collecting = False
        if after in _RECORDING and not self._collecting:
            self._events = []  # a new recording: key_averages() shows its events alone
            self._collecting = True

    def _wants(self, device_name: str) -> bool:
        activity = ProfilerActivity.CPU if device_name == "cpu" else ProfilerActivity.CUDA
        return activity in self.activities

    def _on_run(self, device_name: str, dispatches, seconds, host_start: float) -> None:
        if not self._collecting or not self._wants(device_name):
            return
        offset, on_cpu = 0.0, device_name == "cpu"
        for i, d in enumerate(dispatches):
            took = 0.0 if seconds is None else seconds[i] * 1e6
            shapes = [list(d.grid)] if self.record_shapes else []
            cpu_us, device_us = (took, 0.0) if on_cpu else (0.0, took)
            start = host_start * 1e6 + offset
            self._events.append(FunctionEvent(d.kernel.name, device_name, start, cpu_us, device_us, shapes))
            offset += took
            for opened in self._open_ranges:
                opened.device_time_total += device_us
                opened.children_cpu_us += cpu_us

    # ------------------------------------------------------------------ results
    def events(self) -> EventList:
        """Every recorded event in the order it happened."""
        return EventList(self._events)

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0, group_by_overload_name: bool = False
    ) -> EventList:
        """One entry per event name (per name and grid with ``group_by_input_shape``)."""
        if group_by_stack_n:
            raise NotImplementedError(
                "vkml.profiler: key_averages(group_by_stack_n=...) needs with_stack, not supported"
            )
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("key_averages(group_by_input_shape=True) needs profile(record_shapes=True)")
        groups: dict = {}
        for event in self._events:
            key = (event.name, str(event.input_shapes)) if group_by_input_shape else event.name
            if key not in groups:
                groups[key] = FunctionEventAvg(
                    event.name, input_shapes=event.input_shapes if group_by_input_shape else []
                )
            groups[key].add(event)
        return EventList(groups.values())

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON) that chrome://tracing and Perfetto open."""
        trace = [
            {
                "name": e.name,
                "ph": "X",
                "ts": e.start_us,
                "dur": e.cpu_time_total or e.device_time_total,
                "pid": e.device,
                "tid": "ranges" if e.is_user_annotation else "kernels",
                "cat": "user_annotation" if e.is_user_annotation else "kernel",
            }
            for e in self._events
        ]
        with open(path, "w") as out:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, out)


class record_function:  # noqa: N801 - torch.profiler's name
    """A named range: its row has its wall-clock time and, as device time, the kernels run inside it."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self._ranges: list[tuple[profile, FunctionEvent]] = []
        self._start = 0.0

    def __enter__(self) -> record_function:
        self._start = time.perf_counter()
        for prof in list(_active):
            if ProfilerActivity.CPU in prof.activities and prof._collecting:
                event = FunctionEvent(self.name, "cpu", self._start * 1e6, is_user_annotation=True)
                prof._open_ranges.append(event)
                self._ranges.append((prof, event))
        return self

    def __exit__(self, *exc) -> None:
        elapsed_us = (time.perf_counter() - self._start) * 1e6
        for prof, event in self._ranges:
            event.cpu_time_total = elapsed_us
            prof._open_ranges.remove(event)
            prof._events.append(event)
        self._ranges = []
