"""The Vulkan loader and the one instance per process, created on first use.

Importing this module touches nothing; ``instance()`` loads ``libvulkan`` and creates the
instance the first time it is called. Where there is no loader or no driver, ``available()``
is False and ``physical_devices()`` is empty — nothing raises.

    >>> from vkml.runtime import vk_instance
    >>> vk_instance.available()  # doctest: +SKIP
    True

Raw calls: ``raw()`` returns the ``vulkan`` package's cffi ``(ffi, lib)``; the package's
high-level functions build structs from keyword arguments on every call (30–100 µs), so the
hot path calls ``lib`` on structs built once (reference/vulkan.md).
"""

from __future__ import annotations

import threading

from ...errors import DeviceError

# VK_API_VERSION_1_3: the highest version whose structs the installed `vulkan` package knows.
REQUESTED_API_VERSION = (1 << 22) | (3 << 12)

_lock = threading.Lock()
_state: dict = {}  # "vk", "instance", "physical_devices", "api_version", "error"


def _load() -> None:
    """Import the binding and create the instance, once; remember why if that fails."""
    if "loaded" in _state:
        return
    with _lock:
        if "loaded" in _state:
            return
        try:
            import vulkan as vk  # lazy: optional dependency (OSError when libvulkan is missing)

            _state["loader"] = True
            api_version = REQUESTED_API_VERSION
            try:
                # A Vulkan 1.0 loader cannot accept apiVersion > 1.0.
                api_version = min(api_version, vk.vkEnumerateInstanceVersion())
            except Exception:
                api_version = 1 << 22
            app = vk.VkApplicationInfo(
                pApplicationName="vkml", applicationVersion=1, pEngineName="vkml", apiVersion=api_version
            )
            inst = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
            _state["vk"] = vk
            _state["instance"] = inst
            _state["api_version"] = api_version
            _state["physical_devices"] = list(vk.vkEnumeratePhysicalDevices(inst))
        except Exception as exc:  # no loader, no ICD, or a broken driver: Vulkan is just absent
            _state["error"] = f"{type(exc).__name__}: {exc}"
            _state["physical_devices"] = []
        _state["loaded"] = True


def available() -> bool:
    """Whether a Vulkan instance exists in this process (loader and at least one driver)."""
    _load()
    return "instance" in _state


def unavailable_reason() -> str:
    """Why Vulkan is absent ('' when it is present)."""
    _load()
    return _state.get("error", "")


def loader_present() -> bool:
    """Whether the Vulkan loader (libvulkan) loaded, whether or not an instance could be created."""
    _load()
    return bool(_state.get("loader"))


def vk():
    """The ``vulkan`` module (high-level functions and constants); raises DeviceError without Vulkan."""
    _load()
    if "vk" not in _state:
        raise DeviceError(f"Vulkan is not available: {_state.get('error', 'no instance')}")
    return _state["vk"]


def instance():
    """The process-wide VkInstance; raises DeviceError without Vulkan."""
    vk()
    return _state["instance"]


def instance_api_version() -> int:
    """The apiVersion the instance was created with (caps what a device may use)."""
    vk()
    return _state["api_version"]


def physical_devices() -> list:
    """The VkPhysicalDevice handles, in the loader's order (empty without Vulkan)."""
    _load()
    return list(_state["physical_devices"])


def raw():
    """``(ffi, lib)`` of the binding, for calls on prebuilt structs."""
    vk()
    from vulkan._vulkan import ffi, lib  # lazy: optional dependency (vk() above loaded it)

    return ffi, lib


def instance_function(name: str):
    """An instance-level extension function as a raw cffi function pointer, or None if absent."""
    ffi, lib = raw()
    pointer = lib.vkGetInstanceProcAddr(instance(), name.encode())
    if pointer == ffi.NULL:
        return None
    return ffi.cast(f"PFN_{name}", pointer)


def check(result: int, what: str) -> None:
    """Raise DeviceError for a failed raw call (``result`` is its VkResult; 0 is success)."""
    if result < 0:
        name = RESULT_NAMES.get(result, str(result))
        raise DeviceError(f"{what} failed: {name}")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` (from the binding or from ``check``) reports exhausted host or device memory."""
    text = f"{type(exc).__name__} {exc}"
    return any(
        s in text for s in ("OutOfDeviceMemory", "OutOfHostMemory", "OUT_OF_DEVICE_MEMORY", "OUT_OF_HOST_MEMORY")
    )


def version_string(version: int) -> str:
    """``VK_MAKE_API_VERSION`` decoded: ``4206822`` → ``'1.3.230'``."""
    return f"{(version >> 22) & 0x7F}.{(version >> 12) & 0x3FF}.{version & 0xFFF}"


RESULT_NAMES = {
    -1: "VK_ERROR_OUT_OF_HOST_MEMORY",
    -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    -3: "VK_ERROR_INITIALIZATION_FAILED",
    -4: "VK_ERROR_DEVICE_LOST",
    -5: "VK_ERROR_MEMORY_MAP_FAILED",
    -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
    -8: "VK_ERROR_FEATURE_NOT_PRESENT",
    -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
    -10: "VK_ERROR_TOO_MANY_OBJECTS",
    -1000069000: "VK_ERROR_OUT_OF_POOL_MEMORY",
    -12: "VK_ERROR_FRAGMENTED_POOL",
}
