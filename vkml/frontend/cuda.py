"""``vkml.cuda``: the functions PyTorch programs call on ``torch.cuda``, answered for vkml's Vulkan GPUs.

``"cuda"`` names ``best_device()``'s Vulkan device and ``"cuda:N"`` Vulkan device N
(docs/devices.md), so ``device = "cuda" if torch.cuda.is_available() else "cpu"`` picks the GPU.

    >>> import vkml
    >>> vkml.cuda.is_available() == bool(vkml.cuda.device_count())  # doctest: +SKIP
    True
"""

from __future__ import annotations

import sys

from ..runtime.base import Device
from . import devices
from . import memory as _memory
from . import random as _random


def _usable_reports() -> list[dict]:
    return devices.usable_vulkan_reports()


def is_available() -> bool:
    """Whether a Vulkan device that vkml can use exists (what ``"cuda"`` names); False on CPU-only machines."""
    return bool(_usable_reports())


def is_initialized() -> bool:
    """Whether this process has opened a Vulkan device yet."""
    return bool(_opened_vulkan_devices())


def device_count() -> int:
    """How many Vulkan devices there are: ``"cuda:N"`` exists for N below it (the loader's order)."""
    return len(devices.vulkan_device_reports())


def _device(device) -> Device:
    """The Vulkan device ``device`` names (None: ``"cuda"``, an int N: ``"cuda:N"``)."""
    found = devices.device("cuda" if device is None else device)
    if found.kind != "vulkan":
        raise ValueError(f"Expected a cuda device, but got: {found.name}")
    return found


def current_device() -> int:
    """The index of the device plain ``"cuda"`` names (``best_device()``'s)."""
    return _device(None).index


def get_device_name(device=None) -> str:
    """The driver's name of a device (default: the one ``"cuda"`` names), as vulkan_device_reports() gives it."""
    index = _device(device).index
    return devices.vulkan_device_reports()[index]["name"]


def get_device_capability(device=None) -> tuple[int, int]:
    """The Vulkan API version (major, minor) of a device; it stands where CUDA puts a compute capability."""
    index = _device(device).index
    major, minor = devices.vulkan_device_reports()[index]["api_version"].split(".")[:2]
    return int(major), int(minor)


def synchronize(device=None) -> None:
    """Wait until every run submitted to a device (default: the one ``"cuda"`` names) is complete."""
    _device(device).synchronize()


def manual_seed(seed: int) -> None:
    """Seed vkml's one generator (``vkml.manual_seed``): its draws are the same bits on every device, so the
    generator of ``"cuda"`` and the CPU's are one and the same."""
    _random.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Same as ``manual_seed``: there is one generator for every device."""
    _random.manual_seed(seed)


def empty_cache() -> None:
    """Give the memory blocks that hold no live tensor back to the driver, on every Vulkan device opened."""
    for opened in _opened_vulkan_devices():
        opened.empty_cache()


# Memory: vkml/frontend/memory.py's functions (vkml.memory_allocated, ...), for the device "cuda" names.


def memory_allocated(device=None) -> int:
    """Bytes of a device's memory that live tensors hold (``vkml.memory_allocated``)."""
    return _memory.memory_allocated(_device(device))


def max_memory_allocated(device=None) -> int:
    """The high-water mark of ``memory_allocated`` since the start or ``reset_peak_memory_stats``."""
    return _memory.max_memory_allocated(_device(device))


def memory_reserved(device=None) -> int:
    """Bytes of device memory vkml holds from the driver (live tensors and cached blocks)."""
    return _memory.memory_reserved(_device(device))


def max_memory_reserved(device=None) -> int:
    return _memory.max_memory_reserved(_device(device))


def memory_stats(device=None) -> dict[str, int]:
    """PyTorch's ``torch.cuda.memory_stats`` keys that vkml keeps (``vkml.memory_stats``)."""
    return _memory.memory_stats(_device(device))


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks of ``max_memory_allocated`` and ``max_memory_reserved`` from now."""
    _memory.reset_peak_memory_stats(_device(device))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: vkml has no bfloat16 tensors yet (programs then pick float16 or float32)."""
    return False


def _opened_vulkan_devices() -> list:
    """The Vulkan devices opened so far; none when the runtime was never loaded (devices.py loads it
    on first use, so asking must not load it either)."""
    backend = sys.modules.get("vkml.runtime.vulkan.backend")
    return [] if backend is None else backend.opened_devices()


# The legacy tensor types of torch.cuda (torch.cuda.FloatTensor(2, 3), isinstance checks), defined with
# vkml.FloatTensor's in vkml/frontend/legacy_names.py
from .legacy_names import CUDA_TYPES  # noqa: E402

globals().update(CUDA_TYPES)
