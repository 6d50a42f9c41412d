"""The meta device: tensors with a shape, a dtype and no data (PyTorch's ``device("meta")``).

Big-model code builds a model on it (``with torch.device("meta"): model = GPT(cfg)``) to learn its
shapes without paying for its memory or its initialization, then gives it storage elsewhere
(``model.to_empty(device=...)``) and initializes or loads it there. A meta buffer holds no memory, a
realize on the meta device runs no kernel (the scheduler makes each node a meta buffer), and nothing
can be read back: ``download`` raises PyTorch's error.
"""

from __future__ import annotations

import numpy as np

from ..ir.types import DType
from .base import Buffer, Device, Dispatch


class MetaBuffer(Buffer):
    """A buffer of ``numel`` elements that has no memory."""

    __slots__ = ("device", "dtype", "numel")

    def __init__(self, device: MetaDevice, dtype: DType, numel: int):
        self.device, self.dtype, self.numel = device, dtype, numel


class MetaDevice(Device):
    """``vkml.device("meta")``: shapes and dtypes only."""

    name = "meta"
    kind = "meta"

    def allocate(self, dtype: DType, numel: int) -> MetaBuffer:
        return MetaBuffer(self, dtype, int(numel))

    @property
    def largest_allocation_nbytes(self) -> int:
        return 1 << 62  # nothing is allocated: any tensor fits

    def upload(self, buffer: Buffer, array: np.ndarray) -> None:
        return None  # the values are dropped, as PyTorch's copy to a meta tensor drops them

    def upload_new(self, dtype: DType, array: np.ndarray) -> Buffer:
        return MetaBuffer(self, dtype, array.size)

    def download(self, buffer: Buffer) -> np.ndarray:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    def run(self, dispatches: list[Dispatch]) -> None:
        return None  # the scheduler never plans kernels for the meta device (vkml/schedule/scheduler.py)


META = MetaDevice()
