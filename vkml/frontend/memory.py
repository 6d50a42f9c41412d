"""Device memory as PyTorch's ``torch.cuda`` memory functions report it, for any vkml device.

vkml keeps freed device memory for reuse (vkml/runtime/vulkan/memory.py: large blocks
suballocated, big buffers' blocks kept for the next big buffer), so *reserved* bytes (held
from the driver) can exceed *allocated* bytes (live tensors), as with PyTorch's caching
allocator; ``empty_cache()`` gives back what no live tensor uses. ``device=None`` means
``best_device()`` (PyTorch: the current CUDA device).

    >>> import vkml
    >>> cpu = vkml.device("cpu")
    >>> x = vkml.ones(1024, device=cpu).realize()
    >>> vkml.memory_allocated(cpu) >= 4096
    True
"""

from __future__ import annotations

from ..runtime.base import Device
from .devices import best_device
from .devices import device as as_device


def _device(device) -> Device:
    return best_device() if device is None else as_device(device)


def _stats(device) -> dict[str, int]:
    return _device(device).memory_stats()


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by live tensors now.

    >>> import vkml
    >>> vkml.memory_allocated("cpu") >= 0
    True
    """
    return _stats(device)["allocated_bytes"]


def max_memory_allocated(device=None) -> int:
    """The most bytes live tensors held at once since the start or ``reset_peak_memory_stats``.

    >>> import vkml
    >>> vkml.max_memory_allocated("cpu") >= vkml.memory_allocated("cpu")
    True
    """
    return _stats(device)["peak_bytes"]


def memory_reserved(device=None) -> int:
    """Bytes of device memory vkml holds from the driver: live tensors plus memory kept for reuse.

    >>> import vkml
    >>> vkml.memory_reserved("cpu") >= vkml.memory_allocated("cpu")
    True
    """
    return _stats(device)["reserved_bytes"]


def max_memory_reserved(device=None) -> int:
    """The most bytes held from the driver at once since the start or ``reset_peak_memory_stats``.

    >>> import vkml
    >>> vkml.max_memory_reserved("cpu") >= 0
    True
    """
    return _stats(device)["peak_reserved_bytes"]


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks of ``max_memory_allocated`` and ``max_memory_reserved`` from now.

    >>> import vkml
    >>> vkml.reset_peak_memory_stats("cpu")
    """
    _device(device).reset_peak_memory()


def empty_cache(device=None) -> None:
    """Give the driver back the device memory that no live tensor uses (PyTorch's
    ``torch.cuda.empty_cache``). Tensors keep their memory and values; later allocations
    reach the driver again until the cache fills.

    >>> import vkml
    >>> vkml.empty_cache("cpu")
    """
    _device(device).empty_cache()


def memory_stats(device=None) -> dict[str, int]:
    """Counters under PyTorch's ``torch.cuda.memory_stats`` names (the ones vkml keeps):
    ``allocated_bytes.all.current`` / ``.peak``, ``reserved_bytes.all.current`` / ``.peak``,
    and on Vulkan devices ``allocation.all.current`` (live allocations) and ``num_ooms``.

    >>> import vkml
    >>> sorted(vkml.memory_stats("cpu"))[:2]
    ['allocated_bytes.all.current', 'allocated_bytes.all.peak']
    """
    stats = _stats(device)
    out = {
        "allocated_bytes.all.current": stats["allocated_bytes"],
        "allocated_bytes.all.peak": stats["peak_bytes"],
        "reserved_bytes.all.current": stats["reserved_bytes"],
        "reserved_bytes.all.peak": stats["peak_reserved_bytes"],
    }
    if "allocations" in stats:
        out["allocation.all.current"] = stats["allocations"]
        out["num_ooms"] = stats["out_of_memory_errors"]
    return out
