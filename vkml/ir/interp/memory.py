"""Buffer and shared-array access for the CPU interpreter (see ``interp`` for the semantics).

Loads gather only on active lanes; stores scatter only active lanes; an active lane out of
range raises ``IndexError``. When several active lanes store to one address in one
instruction, the highest lane wins (Vulkan leaves this undefined).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import IRError
from ..core import Kernel


class Memory:
    """The buffers of a run and the shared arrays of one chunk of workgroups."""

    def __init__(self, kernel: Kernel, groups: range, group_size: int, buffers: dict[str, np.ndarray]):
        self.kernel = kernel
        self.buffers = buffers
        self.lanes = len(groups) * group_size
        self.group_size = group_size
        # One zeroed array per workgroup, flattened: group g's element i sits at g * size + i.
        self.shared = {s.name: np.zeros(len(groups) * s.size, dtype=s.dtype.np) for s in kernel.shared}
        self.shared_sizes = {s.name: s.size for s in kernel.shared}
        self._group_offsets: dict[str, np.ndarray] = {}

    def load(self, op: str, name: str, index: np.ndarray, mask, describe: Callable[[int], str]) -> np.ndarray:
        """The elements of buffer (``load``) or shared array (``shared_load``) ``name`` at ``index``."""
        target, flat = self._locate(op, name, index, mask, describe)
        return target[flat]

    def store(self, op: str, name: str, index: np.ndarray, value: np.ndarray, mask, describe) -> None:
        target, flat = self._locate(op, name, index, mask, describe)
        if value.dtype != target.dtype:  # numpy would convert silently
            raise IRError(f"kernel {self.kernel.name!r}: {op} of {value.dtype} into {target.dtype} array {name!r}")
        if mask is not None or flat.shape != value.shape:
            flat, value = np.broadcast_arrays(flat, value)
        if mask is not None:
            flat, value = flat[mask], value[mask]
        if flat.shape[0] > 1 and not np.all(flat[1:] > flat[:-1]):
            flat, value = last_write_per_address(flat, value)
        target[flat] = value

    def _locate(self, op: str, name: str, index: np.ndarray, mask, describe) -> tuple[np.ndarray, np.ndarray]:
        """The array behind ``name`` and the flat positions to access; inactive lanes point at 0."""
        shared = op.startswith("shared")
        what = "shared array" if shared else "buffer"
        arrays = self.shared if shared else self.buffers
        if name not in arrays:
            raise IRError(f"kernel {self.kernel.name!r}: {op} from undeclared {what} {name!r}")
        target = arrays[name]
        length = self.shared_sizes[name] if shared else target.shape[0]
        if mask is not None:
            index = np.where(mask, index, index.dtype.type(0))
        lowest = index.min() if index.dtype.kind == "i" else 0
        if lowest < 0 or index.max() >= length:
            self._raise_out_of_range(op, what, name, index, length, mask, describe)
        if shared:
            index = self._group_offset(name) + index
        else:
            index = index.astype(np.intp, copy=False)  # numpy gathers through intp indices several times faster
        return target, index

    def _group_offset(self, name: str) -> np.ndarray:
        """Per lane, where its workgroup's copy of shared array ``name`` starts."""
        if name not in self._group_offsets:
            group_in_chunk = np.arange(self.lanes, dtype=np.int64) // self.group_size
            self._group_offsets[name] = group_in_chunk * self.shared_sizes[name]
        return self._group_offsets[name]

    def _raise_out_of_range(self, op, what, name, index, length, mask, describe) -> None:
        bad = (index < 0) | (index >= length)
        if mask is not None:  # callers only run statements with at least one active lane
            bad &= mask
        lane = int(np.argmax(bad))
        lane_index = int(index[lane if index.shape[0] > 1 else 0])
        raise IndexError(
            f"kernel {self.kernel.name!r}: {op} {what} {name!r} at index {lane_index}, out of range "
            f"for length {length} ({describe(lane)})"
        )


def last_write_per_address(flat: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep only the highest lane's write to each address."""
    reversed_flat = flat[::-1]
    _, first_in_reversed = np.unique(reversed_flat, return_index=True)
    keep = flat.shape[0] - 1 - first_in_reversed
    return flat[keep], value[keep]
