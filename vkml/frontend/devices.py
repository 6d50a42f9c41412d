"""Devices: ``vkml.device("cpu")``, ``vkml.device("vulkan:0")``, ``best_device()``.

Device indices follow the Vulkan loader's enumeration order, which is not stable across
machines or driver installs: prefer ``best_device()`` in code meant to run anywhere.

PyTorch programs name their GPU ``"cuda"``: vkml reads ``"cuda"`` as ``best_device()``'s Vulkan
device and ``"cuda:N"`` as ``"vulkan:N"`` (docs/devices.md), so ``.to("cuda")`` runs on the GPU.
There is one registry of devices, ``vkml.runtime.vulkan.backend``'s: every name of a device gives
the same object.

    >>> import vkml
    >>> vkml.device("cpu")
    device('cpu')
"""

from __future__ import annotations

import importlib
import warnings

from ..errors import DeviceError
from ..runtime.base import DEFAULT_DEVICES, Device
from ..runtime.cpu import CPU
from ..runtime.meta import META

# The Vulkan runtime (its modules, the codegen they use, cffi) is imported by the first call that
# asks for a Vulkan device or its reports, not by ``import vkml``: a program on the CPU device
# never loads it. ``devices.vulkan_runtime`` and its kin still name the modules (PEP 562).
_VULKAN_MODULES = {
    "vulkan_runtime": "vkml.runtime.vulkan.backend",
    "vulkan_instance": "vkml.runtime.vulkan.instance",
    "vulkan_reports": "vkml.runtime.vulkan.reports",
}


def __getattr__(name: str):
    module = _VULKAN_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(module)  # lazy: off import vkml's path (the Vulkan runtime)


def _vulkan(name: str):
    return importlib.import_module(_VULKAN_MODULES[name])  # lazy: off import vkml's path (the Vulkan runtime)


def vulkan_device_reports() -> list[dict]:
    """One report per Vulkan physical device: index, name, device_type, driver, API version, features.

    Returns [] when no Vulkan loader or driver is installed.
    """
    return _vulkan("vulkan_reports").vulkan_device_reports()


class _DeviceType(type):
    def __instancecheck__(cls, value) -> bool:
        return isinstance(value, Device)


class device(metaclass=_DeviceType):  # noqa: N801 - torch.device's name
    """The device named ``spec``: ``"cpu"``, ``"vulkan"`` (= ``"vulkan:0"``), ``"vulkan:N"``, or PyTorch's
    ``"cuda"`` (``best_device()``'s Vulkan device), ``"cuda:N"`` (= ``"vulkan:N"``), ``device("cuda", N)``
    and an int ``N`` (= ``"cuda:N"``).

    Calling it returns the registry's ``Device`` object (one per device), and ``isinstance(d,
    vkml.device)`` holds for every device, as ``isinstance(d, torch.device)`` does.

    >>> device("cpu").name
    'cpu'
    >>> device("cuda:0") is device("vulkan:0")  # doctest: +SKIP
    True
    """

    def __new__(cls, spec, index: int | None = None) -> Device:
        return _named(spec, index)


def usable_vulkan_reports() -> list[dict]:
    """The reports of the Vulkan devices vkml can use: ``vkml.cuda.is_available()`` is whether there is one."""
    return [r for r in vulkan_device_reports() if r.get("usable")]


def _named(spec, index: int | None) -> Device:
    if isinstance(spec, Device) and index is None:
        return spec
    if isinstance(spec, int) and not isinstance(spec, bool) and index is None:
        spec, index = "cuda", spec
    if not isinstance(spec, str):
        raise TypeError(f"device() expects a string like 'cpu', 'cuda' or 'vulkan:0', got {spec!r}")
    name = spec.strip().lower()
    if index is not None:
        if ":" in name:
            raise DeviceError(
                f"device(): type (string) must not include an index because index was passed explicitly: {spec}"
            )
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise DeviceError(f"device(): the index must be a non-negative int, got {index!r}")
        name = f"{name}:{index}"
    if name in ("cpu", "cpu:0"):  # PyTorch's CPU device takes index 0; vkml's one CPU device is named "cpu"
        return CPU
    if name in ("meta", "meta:0"):
        return META
    if name == "vulkan":
        name = "vulkan:0"
    if name == "cuda":
        return _best_vulkan(spec)
    kind, _, number = name.partition(":")
    if kind in ("vulkan", "cuda") and number.isdigit():
        return _vulkan("vulkan_runtime").device(int(number))  # the one registry: one VulkanDevice per physical device
    usable = f"unknown device {spec!r}: use 'cpu', 'cuda', 'cuda:N', 'vulkan:N' or 'meta'"
    if kind not in _TORCH_DEVICE_TYPES:  # PyTorch's words first, then what vkml takes
        typed = spec.strip().partition(":")[0]
        raise DeviceError(
            f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at start of device string: {typed} ({usable})"
        )
    if kind in ("vulkan", "cuda", "meta", "cpu"):  # a type both know, with an index PyTorch cannot parse either
        raise DeviceError(f"Invalid device string: '{spec}' ({usable})")
    raise DeviceError(usable)


# PyTorch's device types, in the order its error lists them (c10/core/DeviceType.cpp)
_TORCH_DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla", "lazy",
    "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)  # fmt: skip


_default: Device | None = None  # set_default_device's choice; None is the CPU


def set_default_device(device) -> None:
    """Make ``device`` where factory functions (``zeros``, ``tensor``, ``rand``, ``nn`` layers'
    parameters, ...) put tensors when no ``device`` is given, as ``torch.set_default_device``;
    ``None`` restores the CPU. Process-wide, like PyTorch's. Ops on existing tensors stay on
    their operands' device.

    >>> import vkml
    >>> vkml.set_default_device("cpu")
    >>> vkml.get_default_device().name
    'cpu'
    """
    global _default
    _default = None if device is None else _named(device, None)


def get_default_device() -> Device:
    """The device factory functions use when none is given: the innermost ``with device:`` block's,
    else ``set_default_device``'s, else the CPU.

    >>> import vkml
    >>> with vkml.device("cpu"):
    ...     vkml.zeros(2).device.name
    'cpu'
    """
    stack = getattr(DEFAULT_DEVICES, "stack", None)
    if stack:
        return stack[-1]
    return CPU if _default is None else _default


def best_device() -> Device:
    """A discrete GPU if there is one, else integrated, else any Vulkan device, else the CPU.

    A Vulkan device that is present but cannot be opened is skipped with a warning (once per
    reason) naming why, rather than silently: the CPU is the answer only when no Vulkan device works.
    """
    found = _open_best()
    return CPU if found is None else found


def _reason() -> str:
    reason = _vulkan("vulkan_instance").unavailable_reason()
    return f" ({reason})" if reason else ""


def _best_vulkan(spec: str) -> Device:
    """``"cuda"``: the Vulkan device ``best_device()`` picks; DeviceError when none works."""
    found = _best or _open_best()
    if found is None:
        raise DeviceError(
            f"device {spec!r}: no Vulkan device is available{_reason()}; vkml.cuda.is_available() is False"
        )
    return found


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=4)


# The device "cuda" names once found: programs say .to("cuda") every step, and ranking the devices'
# reports again each time costs more than the copy of a small batch. Devices never leave a process.
_best: Device | None = None


def _open_best() -> Device | None:
    """The best Vulkan device that opens, or None; warns about each one present that fails."""
    global _best
    reports = vulkan_device_reports()
    if not reports and _vulkan("vulkan_instance").loader_present() and _vulkan("vulkan_instance").unavailable_reason():
        _warn_once(f"vkml: the Vulkan loader is installed but Vulkan failed to start{_reason()}; using the cpu")
    # By kind alone, usable or not: a broken discrete GPU is named even when an integrated one works.
    for report in sorted(
        reports, key=lambda r: (_vulkan("vulkan_reports").device_rank({**r, "usable": True}), r["index"])
    ):
        label = f"vulkan:{report['index']} ({report.get('name', '?')})"
        if not report.get("usable"):
            why = report.get("error") or "it lacks Vulkan 1.1 or a compute queue"
            _warn_once(f"vkml: {label} cannot be used: {why}")
            continue
        try:
            _best = _vulkan("vulkan_runtime").device(report["index"])
            return _best
        except Exception as exc:  # a driver that lists a device it cannot open: try the next one
            _warn_once(f"vkml: {label} failed to open: {type(exc).__name__}: {exc}")
    return None
