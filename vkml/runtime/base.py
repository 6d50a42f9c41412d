"""What every backend offers the scheduler: buffers, transfers, and running a batch of kernels.

The runtime knows devices and kernels, never tensors or operators. A ``Dispatch`` is one
kernel launch; ``Device.run`` executes a list of them in order as one unit of work (on Vulkan:
one command buffer, one submission, which the host does not wait for until it reads results).

Binding conventions shared with codegen: buffer ``i`` of a kernel is ``kernel.buffers[i]``
(descriptor set 0, binding i on Vulkan); parameters are passed by name.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from ..ir.core import Kernel
from ..ir.types import DType

# The struct code of each parameter dtype as a kernel's parameter block (Vulkan's push constants)
# holds it: what a Vulkan device packs, and what a ring of scalars (vkml/schedule/scalar_ring.py) writes.
PARAM_CODES = {"float32": "f", "float16": "e", "int32": "i", "uint32": "I", "int64": "q", "bool": "I", "float64": "d"}


class Buffer(ABC):
    """Device memory holding ``numel`` elements of ``dtype``. Freed when dropped."""

    dtype: DType
    numel: int
    device: Device

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.nbytes


@dataclass
class Dispatch:
    """One kernel launch: ``grid`` workgroups, buffers and scalar parameters bound by name."""

    kernel: Kernel
    grid: tuple[int, int, int]
    buffers: dict[str, Buffer]
    params: dict[str, int | float | np.generic] = field(default_factory=dict)


# The devices of the ``with device:`` blocks this thread is in, innermost last (Device.__enter__);
# vkml/frontend/devices.py get_default_device reads the top.
DEFAULT_DEVICES = threading.local()


class Device(ABC):
    """A place where tensors live and kernels run: ``cpu`` or ``vulkan:N``.

    ``lock`` serializes every use of the device's state by threads (memory, transfers,
    command buffers, fences, descriptor pools): the device's own methods take it, and the
    scheduler holds it around a whole realize, so that planning, running and turning nodes
    into buffers are one step to every other thread (docs/threads.md). It is reentrant.
    """

    name: str
    kind: str  # "cpu" | "vulkan"
    index: int | None = None  # the Vulkan device's index; None on the CPU (torch.device's ``index``)

    def __init__(self):
        self.lock = threading.RLock()

    @property
    def type(self) -> str:
        """``"cpu"`` or ``"vulkan"``, as torch.device's ``type`` (a device named ``"cuda"`` is a ``"vulkan"`` one)."""
        return self.kind

    def __enter__(self) -> Device:
        """``with device:`` makes it the default device of factory functions in the block, on this
        thread (PyTorch's ``with torch.device(...)``); blocks nest."""
        stack = getattr(DEFAULT_DEVICES, "stack", None)
        if stack is None:
            stack = DEFAULT_DEVICES.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> bool:
        DEFAULT_DEVICES.stack.pop()
        return False

    def __copy__(self) -> Device:
        return self  # one object per device: a copied tensor or module stays on the same device

    def __deepcopy__(self, memo: dict) -> Device:
        return self

    @abstractmethod
    def allocate(self, dtype: DType, numel: int) -> Buffer: ...

    def allocate_each(self, sizes: tuple, placement: list | None = None) -> list[Buffer]:
        """``allocate(dtype, numel)`` for each (dtype, numel) of ``sizes`` (a realize's outputs, sized by a
        plan: a vkml dtype and a non-negative int each). ``placement``: the plan's record of where its
        buffers were (a list each), for a device that places them where they were before."""
        allocate = self.allocate
        return [allocate(dtype, numel) for dtype, numel in sizes]

    @property
    @abstractmethod
    def largest_allocation_nbytes(self) -> int:
        """The most bytes one tensor's buffer can ever hold here (an allocation past it always fails)."""

    @abstractmethod
    def upload(self, buffer: Buffer, array: np.ndarray) -> None:
        """Copy a C-contiguous array of the buffer's dtype and size into it."""

    def upload_new(self, dtype: DType, array: np.ndarray) -> Buffer:
        """A new buffer of ``dtype`` holding ``array`` (C-contiguous, 1-D, of the dtype's storage).

        A device may pick memory for it that the host can write while earlier work still runs."""
        buffer = self.allocate(dtype, array.size)
        if array.size:
            self.upload(buffer, array)
        return buffer

    @abstractmethod
    def download(self, buffer: Buffer) -> np.ndarray:
        """A new numpy array (1-D, buffer's dtype) with the buffer's contents."""

    @abstractmethod
    def run(self, dispatches: list[Dispatch]) -> None:
        """Run all dispatches in order, as one unit of work.

        It may return before they complete (Vulkan does): ``download`` still returns their
        results, an ``upload`` is still ordered after work that uses the memory, and freeing a
        buffer still waits for it.
        """

    def synchronize(self) -> None:
        """Return once all work run on this device is complete (the CPU's runs complete before returning)."""
        return None

    def alias_alignment(self, dtype: DType) -> int:
        """Elements of ``dtype`` to which an alias's start is aligned (``alias``)."""
        return max(1, 16 // dtype.nbytes)

    def alias(self, buffer: Buffer, start: int, numel: int) -> Buffer | None:
        """A buffer over elements ``[start, start + numel)`` of ``buffer``'s memory, which it keeps
        alive; ``start`` is a multiple of ``alias_alignment``. None where the device has none.

        Kernels only read an alias: it stands for part of a realized buffer, whose contents never
        change (vkml/graph/build.py).
        """
        return None

    def empty_cache(self) -> int:
        """Return memory held for reuse but used by no live tensor; the bytes released (none here)."""
        return 0

    def __repr__(self) -> str:
        # PyTorch's text: device(type='cpu'), device(type='cuda', index=0)
        if self.index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={self.index})"

    def __str__(self) -> str:
        return self.name
