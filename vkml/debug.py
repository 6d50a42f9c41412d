"""What vkml did: event counters and the kernels of recent realizes.

>>> import vkml
>>> vkml.debug.reset_counters()
>>> _ = (vkml.ones(4) * 2).numpy()
>>> vkml.debug.counters()["dispatches"]
1
"""

from __future__ import annotations

from collections import deque

from .runtime import counters as _counters

# Names and grids of the kernels dispatched by recent realizes, newest last.
recent_kernels: deque = deque(maxlen=256)
# Callables given every dispatched Kernel (vkml-dump-spirv --run uses this).
kernel_listeners: list = []


def counters() -> dict[str, int]:
    """A copy of the event counters: kernels_compiled, dispatches, submissions, barriers, bytes_uploaded, ..."""
    return _counters.snapshot()


def reset_counters() -> None:
    """Zero every counter."""
    _counters.reset_counters()


def record_dispatches(device_name: str, dispatches) -> None:
    for d in dispatches:
        recent_kernels.append((device_name, d.kernel.name, d.grid, d.kernel.local_size))
        for listener in kernel_listeners:
            listener(d.kernel)
