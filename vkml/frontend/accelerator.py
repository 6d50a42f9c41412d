"""``vkml.accelerator`` and ``vkml.xpu``: the device-agnostic names PyTorch programs ask first.

pytorch/examples' programs pick their device with
``torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")``
and some also ask ``torch.xpu.is_available()``. vkml's accelerator is the Vulkan device that
``"cuda"`` names (``vkml.cuda``, docs/devices.md); there is never an Intel XPU backend.

    >>> import vkml
    >>> vkml.accelerator.is_available() == vkml.cuda.is_available()
    True
    >>> vkml.xpu.is_available()
    False
"""

from __future__ import annotations

import types

from . import cuda, devices


def is_available() -> bool:
    """Whether a usable Vulkan device exists (``vkml.cuda.is_available()``)."""
    return cuda.is_available()


def device_count() -> int:
    """How many Vulkan devices there are (``vkml.cuda.device_count()``)."""
    return cuda.device_count() if cuda.is_available() else 0


def current_accelerator(check_available: bool = False):
    """The device ``"cuda"`` names, or None when no Vulkan device is usable.

    PyTorch returns its build's accelerator type even when no device is present unless
    ``check_available``; vkml's build always has Vulkan, so without a usable device it
    answers None either way (as a CPU-only PyTorch does), never a device that cannot open.
    """
    return devices.device("cuda") if cuda.is_available() else None


def current_device_index() -> int:
    """The index of the device ``"cuda"`` names; -1 without one, as PyTorch's."""
    return cuda.current_device() if cuda.is_available() else -1


def set_device_index(device) -> None:
    """Accepts the current device only: vkml has no per-thread current device to move.

    ``"cuda"`` always names ``vkml.best_device()``'s Vulkan device; a program that wants
    another one names it (``"cuda:1"``) where it moves tensors.
    """
    index = device.index if hasattr(device, "index") else device
    if index is not None and index != current_device_index():
        raise NotImplementedError(
            f"accelerator.set_device_index: vkml cannot change the current device (it is "
            f"{current_device_index()}, asked {index}); name the device instead, as 'cuda:{index}'"
        )


def synchronize(device=None) -> None:
    """Wait for the device's submitted work (``vkml.cuda.synchronize``); nothing to wait for without one."""
    if cuda.is_available():
        cuda.synchronize(device)


current_device_idx = current_device_index
set_device_idx = set_device_index


def empty_cache() -> None:
    """``vkml.cuda.empty_cache()``: frees cached device memory."""
    cuda.empty_cache()


def memory_allocated(device_index=None) -> int:
    return cuda.memory_allocated(device_index) if cuda.is_available() else 0


def max_memory_allocated(device_index=None) -> int:
    return cuda.max_memory_allocated(device_index) if cuda.is_available() else 0


def memory_reserved(device_index=None) -> int:
    return cuda.memory_reserved(device_index) if cuda.is_available() else 0


def max_memory_reserved(device_index=None) -> int:
    return cuda.max_memory_reserved(device_index) if cuda.is_available() else 0


def reset_peak_memory_stats(device_index=None) -> None:
    if cuda.is_available():
        cuda.reset_peak_memory_stats(device_index)


accelerator = types.ModuleType("vkml.accelerator", "PyTorch's torch.accelerator, answered for vkml's Vulkan devices.")
for _name in (
    "is_available",
    "device_count",
    "current_accelerator",
    "current_device_index",
    "current_device_idx",
    "set_device_index",
    "set_device_idx",
    "synchronize",
    "empty_cache",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
):
    setattr(accelerator, _name, globals()[_name])


def _no_xpu() -> bool:
    return False


def _no_xpu_count() -> int:
    return 0


# vkml has no Intel XPU backend (an Intel GPU is reached as a Vulkan device, through "cuda").
xpu = types.ModuleType("vkml.xpu", "PyTorch's torch.xpu: never available in vkml.")
xpu.is_available = _no_xpu
xpu.device_count = _no_xpu_count
