"""The CPU backend: buffers are numpy arrays, kernels run in the IR interpreter.

It is the reference every other backend is checked against, so it does nothing the IR does
not say: each dispatch is ``vkml.ir.interp.run`` on the kernel as lowered.
"""

from __future__ import annotations

import os
import time
from collections import deque

import numpy as np

from ..errors import OutOfMemoryError
from ..ir.interp import reference as interp
from ..ir.types import DType
from ..ir.verify import verify_kernel_once
from .base import Buffer, Device, Dispatch
from .counters import counters


class CPUBuffer(Buffer):
    def __init__(self, device: CPUDevice, dtype: DType, numel: int):
        try:  # first: a buffer that failed here has no device, so its __del__ counts nothing
            self.array = np.zeros(numel, dtype=dtype.np)
        except (MemoryError, ValueError) as e:  # numpy: "Unable to allocate", "array is too big"
            raise OutOfMemoryError(
                f"cpu: cannot allocate {numel} {dtype.name} elements ({numel * dtype.nbytes} bytes): {e}"
            ) from None
        self.device, self.dtype, self.numel = device, dtype, numel  # counted by CPUDevice.allocate

    def __del__(self):
        # Only queued (a deque's append is atomic): this may run in any thread, inside the
        # garbage collector, while another thread counts under the device's lock.
        try:
            self.device._freed.append(self.nbytes)
        except AttributeError:  # interpreter shutdown
            pass


class CPUBufferAlias(CPUBuffer):
    """Elements of another CPU buffer (a numpy view of its array); holds no memory of its own."""

    def __init__(self, parent: CPUBuffer, start: int, numel: int):
        self.parent, self.start = parent, start
        self.array = parent.array[start : start + numel]
        self.device, self.dtype, self.numel = parent.device, parent.dtype, numel

    def __del__(self):
        pass  # the parent's memory: counted, and freed, with the parent


class CPUDevice(Device):
    """``vkml.device("cpu")``: the reference backend."""

    name = "cpu"
    kind = "cpu"

    def __init__(self):
        super().__init__()
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self._freed: deque[int] = deque()  # bytes of buffers dropped since the last count

    def allocate(self, dtype: DType, numel: int) -> CPUBuffer:
        buffer = CPUBuffer(self, dtype, int(numel))
        with self.lock:
            self._count_freed()
            self.allocated_bytes += buffer.nbytes
            self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
        return buffer

    def _count_freed(self) -> None:
        freed = self._freed
        while freed:
            self.allocated_bytes -= freed.popleft()

    @property
    def largest_allocation_nbytes(self) -> int:
        """The machine's physical memory: numpy may promise more (overcommit), but cannot deliver it."""
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):  # no sysconf (Windows): numpy's own refusal is the limit
            return 1 << 62

    def alias(self, buffer: CPUBuffer, start: int, numel: int) -> CPUBuffer:
        if isinstance(buffer, CPUBufferAlias):  # an alias of an alias: one level, over the memory's owner
            buffer, start = buffer.parent, buffer.start + start
        return CPUBufferAlias(buffer, start, numel)

    def upload(self, buffer: CPUBuffer, array: np.ndarray) -> None:
        buffer.__dict__.pop("uploaded_range", None)  # the values the host saw at its upload (schedule/checks.py)
        buffer.array[...] = np.asarray(array, dtype=buffer.dtype.np).reshape(-1)
        counters["bytes_uploaded"] += buffer.nbytes

    def download(self, buffer: CPUBuffer) -> np.ndarray:
        counters["bytes_downloaded"] += buffer.nbytes
        return buffer.array.copy()

    def run(self, dispatches: list[Dispatch], timestamps: bool = False) -> list[float] | None:
        """Interpret every dispatch in order; with ``timestamps``, return each one's wall-clock seconds
        (what a Vulkan device's timestamps give, for the profiler and ``VKML_DEBUG``)."""
        with self.lock:  # the interpreter's caches and the checked kernels are shared
            return self._run(dispatches, timestamps)

    def _run(self, dispatches: list[Dispatch], timestamps: bool = False) -> list[float] | None:
        seconds = [] if timestamps else None
        for d in dispatches:
            start = time.perf_counter() if timestamps else 0.0
            verify_kernel_once(d.kernel)  # the reference runs only kernels the IR's rules accept
            arrays = {name: buf.array for name, buf in d.buffers.items()}
            interp.run(d.kernel, d.grid, arrays, d.params)
            counters["dispatches"] += 1
            if timestamps:
                seconds.append(time.perf_counter() - start)
        counters["submissions"] += 1
        return seconds

    def memory_stats(self) -> dict:
        """Bytes of live buffers and their high-water mark; numpy holds no cache, so reserved = allocated."""
        with self.lock:
            self._count_freed()
            return {
                "allocated_bytes": self.allocated_bytes,
                "peak_bytes": self.peak_bytes,
                "reserved_bytes": self.allocated_bytes,
                "peak_reserved_bytes": self.peak_bytes,
            }

    def reset_peak_memory(self) -> None:
        """Start a new high-water mark from the bytes allocated now."""
        with self.lock:
            self._count_freed()
            self.peak_bytes = self.allocated_bytes


CPU = CPUDevice()
