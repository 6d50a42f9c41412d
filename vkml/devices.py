"""Devices: ``vkml.device("cpu")``, ``vkml.device("vulkan:0")``, ``best_device()``.

Device indices follow the Vulkan loader's enumeration order, which is not stable across
machines or driver installs: prefer ``best_device()`` in code meant to run anywhere.

    >>> import vkml
    >>> vkml.device("cpu")
    device('cpu')
"""

from __future__ import annotations

import threading

from .errors import DeviceError
from .runtime.base import Device
from .runtime.cpu import CPU

_vulkan_devices: dict[int, Device] = {}
_opening = threading.Lock()  # two threads asking for a device first at once get the same one


def vulkan_device_reports() -> list[dict]:
    """One report per Vulkan physical device: index, name, device_type, driver, API version, features.

    Returns [] when no Vulkan loader or driver is installed.
    """
    from .runtime.reports import vulkan_device_reports as reports

    return reports()


def device(spec) -> Device:
    """The device named ``spec``: ``"cpu"``, ``"vulkan"`` (= ``"vulkan:0"``) or ``"vulkan:N"``.

    >>> device("cpu").name
    'cpu'
    """
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"device() expects a string like 'cpu' or 'vulkan:0', got {spec!r}")
    name = spec.strip().lower()
    if name == "cpu":
        return CPU
    if name == "vulkan":
        name = "vulkan:0"
    if name.startswith("vulkan:") and name[7:].isdigit():
        index = int(name[7:])
        found = _vulkan_devices.get(index)
        if found is not None:
            return found
        with _opening:
            if index not in _vulkan_devices:
                reports = vulkan_device_reports()
                if index >= len(reports):
                    have = ", ".join(f"vulkan:{r['index']} ({r['name']})" for r in reports) or "none"
                    raise DeviceError(f"no Vulkan device {index}: this machine has {have}")
                from .runtime.vulkan import VulkanDevice

                _vulkan_devices[index] = VulkanDevice(index)
            return _vulkan_devices[index]
    raise DeviceError(f"unknown device {spec!r}: use 'cpu' or 'vulkan:N'")


def best_device() -> Device:
    """A discrete GPU if there is one, else integrated, else any Vulkan device, else the CPU."""
    from .runtime.reports import device_rank

    reports = vulkan_device_reports()
    if not reports:
        return CPU
    best = min(reports, key=lambda r: (device_rank(r), r["index"]))
    return device(f"vulkan:{best['index']}")
