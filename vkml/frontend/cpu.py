"""``vkml.cpu``: the functions PyTorch programs call on ``torch.cpu`` to stay device-agnostic.

As in PyTorch they answer for the one CPU device and do nothing else: ``current_device()`` is the
string ``"cpu"``, ``device_count()`` 1, ``set_device`` changes nothing. ``vkml.cpu.amp`` holds the
deprecated ``torch.cpu.amp.autocast`` and ``GradScaler`` spellings (vkml/frontend/cpu_amp.py).

    >>> import vkml
    >>> vkml.cpu.is_available(), vkml.cpu.device_count(), vkml.cpu.current_device()
    (True, 1, 'cpu')
"""

from __future__ import annotations

from . import devices

__all__ = ["current_device", "device_count", "is_available", "is_initialized", "set_device", "synchronize"]


def is_available() -> bool:
    """Always True: vkml always has its CPU device."""
    return True


def is_initialized() -> bool:
    """Always True, as PyTorch's."""
    return True


def device_count() -> int:
    """Always 1: vkml, like PyTorch, has one CPU device."""
    return 1


def current_device() -> str:
    """Always ``"cpu"`` (a string, as PyTorch's, not an index)."""
    return "cpu"


def set_device(device) -> None:
    """Does nothing, as PyTorch's: there is one CPU device."""


def synchronize(device=None) -> None:
    """Wait for the work submitted to the CPU device (it runs when submitted, so this returns at once)."""
    devices.device("cpu").synchronize()
