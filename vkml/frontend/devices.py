"""Devices: ``vkml.device("cpu")``, ``vkml.device("vulkan:0")``, ``best_device()``.

Device indices follow the Vulkan loader's enumeration order, which is not stable across
machines or driver installs: prefer ``best_device()`` in code meant to run anywhere.

The Vulkan runtime (its modules, the codegen they use, cffi) is imported by the first call that
asks for a Vulkan device or its reports, not by ``import vkml``: a program on the CPU device never
loads it, and the import no longer pays for it before the first line of user code.

    >>> import vkml
    >>> vkml.device("cpu")
    device('cpu')
"""

from __future__ import annotations

from ..errors import DeviceError
from ..runtime.base import Device
from ..runtime.cpu import CPU


def vulkan_device_reports() -> list[dict]:
    """One report per Vulkan physical device: index, name, device_type, driver, API version, features.

    Returns [] when no Vulkan loader or driver is installed.
    """
    from ..runtime.vulkan import reports as vulkan_reports  # here: see the module docstring

    return vulkan_reports.vulkan_device_reports()


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
        from ..runtime.vulkan import backend as vulkan_runtime  # here: see the module docstring

        return vulkan_runtime.device(int(name[7:]))  # the one registry: one VulkanDevice per physical device
    raise DeviceError(f"unknown device {spec!r}: use 'cpu' or 'vulkan:N'")


def best_device() -> Device:
    """A discrete GPU if there is one, else integrated, else any Vulkan device, else the CPU."""
    from ..runtime.vulkan import reports as vulkan_reports

    reports = vulkan_device_reports()
    if not reports:
        return CPU
    best = min(reports, key=lambda r: (vulkan_reports.device_rank(r), r["index"]))
    return device(f"vulkan:{best['index']}")
