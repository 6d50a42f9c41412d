"""``torch.multiprocessing``: Python's ``multiprocessing``, with PyTorch's additions (``spawn``, sharing strategies).

Everything of ``multiprocessing`` is here (``Process``, ``Queue``, ``Pool``, ``set_start_method``,
``get_context``, ...). vkml tensors cross processes by value (pickled through their numpy data), so the
sharing strategy is recorded for PyTorch programs that set it and changes nothing. ``spawn(fn, args,
nprocs)`` starts ``nprocs`` processes calling ``fn(i, *args)``, as PyTorch's: with ``join`` it waits and
raises ``ProcessRaisedException`` (with the child's traceback) or ``ProcessExitedException`` when a child
fails; without, it returns the ``ProcessContext``. A child that uses Vulkan opens its own device (a
spawned process, never a fork of one that holds a device).

>>> import vkml.multiprocessing as mp
>>> mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
True
"""

from __future__ import annotations

import multiprocessing
import sys
import traceback
from multiprocessing import *  # noqa: F403  (torch.multiprocessing re-exports all of it)

__all__ = [name for name in dir(multiprocessing) if not name.startswith("_")] + [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
    "spawn",
    "start_processes",
]

_STRATEGIES = {"file_descriptor", "file_system"} if sys.platform != "darwin" else {"file_system"}
_strategy = ["file_descriptor" if sys.platform != "darwin" else "file_system"]


def get_all_sharing_strategies() -> set[str]:
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Record the strategy (vkml tensors are pickled by value, so it changes nothing); an unknown one raises."""
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"unknown sharing strategy {new_strategy!r}: one of {sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    """A spawned process failed (PyTorch's base class, with its ``error_index`` and ``pid``)."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a nonzero code or by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _run(fn, index: int, args: tuple, errors) -> None:
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        errors.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started: ``join`` waits for them (see ``spawn``)."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """True once every process ended well; raises for the first that failed (terminating the others)."""
        for process in self.processes:
            process.join(timeout)
        for index, process in enumerate(self.processes):
            if process.exitcode is None:
                return False
            if process.exitcode != 0:
                for other in self.processes:
                    if other.is_alive():
                        other.terminate()
                queue = self.error_queues[index]
                if not queue.empty():
                    message = f"\n\n-- Process {index} terminated with the following error:\n{queue.get()}"
                    raise ProcessRaisedException(message, index, process.pid)
                raise ProcessExitedException(
                    f"process {index} terminated with exit code {process.exitcode}",
                    index,
                    process.pid,
                    process.exitcode,
                )
        return True


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    context = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for index in range(nprocs):
        queue = context.SimpleQueue()
        process = context.Process(target=_run, args=(fn, index, tuple(args), queue), daemon=daemon)
        process.start()
        processes.append(process)
        queues.append(queue)
    spawned = ProcessContext(processes, queues)
    if not join:
        return spawned
    while not spawned.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """``torch.multiprocessing.spawn``: ``nprocs`` processes each calling ``fn(i, *args)`` (see the module)."""
    if start_method != "spawn":
        raise ValueError(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t torch.multiprocessing.start_processes(...)"
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
