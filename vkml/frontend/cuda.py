"""``vkml.cuda``: the functions PyTorch programs call on ``torch.cuda``, answered for vkml's Vulkan GPUs.

``"cuda"`` names ``best_device()``'s Vulkan device and ``"cuda:N"`` Vulkan device N
(docs/devices.md), so ``device = "cuda" if torch.cuda.is_available() else "cpu"`` picks the GPU.

    >>> import vkml
    >>> vkml.cuda.is_available() == bool(vkml.cuda.device_count())  # doctest: +SKIP
    True
"""

from __future__ import annotations

import sys
import time
from typing import NamedTuple

from ..runtime.base import Device
from . import devices
from . import memory as _memory
from . import random as _random
from . import rng_state as _rng_state


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


class _DeviceProperties(NamedTuple):
    """``torch.cuda.get_device_properties``'s record, for a Vulkan device (the fields Vulkan reports)."""

    name: str
    major: int  # the Vulkan API version, as get_device_capability gives it
    minor: int
    total_memory: int  # bytes of the device-local memory heaps
    is_integrated: bool
    is_multi_gpu_board: bool
    warp_size: int  # the subgroup size
    max_threads_per_block: int  # maxComputeWorkGroupInvocations


def get_device_properties(device=None) -> _DeviceProperties:
    """A device's properties (default: the one ``"cuda"`` names) under ``torch.cuda.get_device_properties``'
    field names, from vulkan_device_reports(). CUDA-only fields (``multi_processor_count``,
    ``L2_cache_size``, ``uuid``) are absent: Vulkan does not report them, and no number stands in."""
    index = _device(device).index
    report = devices.vulkan_device_reports()[index]
    major, minor = get_device_capability(index)
    limits, features = report["limits"], report["features"]
    return _DeviceProperties(
        name=report["name"],
        major=major,
        minor=minor,
        total_memory=sum(h["size"] for h in report["memory_heaps"] if h.get("device_local")),
        is_integrated=report["device_type"] == "integrated",
        is_multi_gpu_board=False,
        warp_size=int(features.get("subgroup_size") or limits["minSubgroupSize"]),
        max_threads_per_block=int(limits["maxComputeWorkGroupInvocations"]),
    )


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
    """Whether the device plain ``"cuda"`` names holds bfloat16 tensors: it stores 16-bit values
    (storageBuffer16BitAccess); vkml computes bfloat16 in float32 and rounds after every op, on
    every such device. False without a usable Vulkan device. Programs such as nanoGPT then pick
    bfloat16 autocast where PyTorch on a recent GPU does.

    >>> isinstance(vkml.cuda.is_bf16_supported(), bool)  # doctest: +SKIP
    True
    """
    if not is_available():
        return False
    report = devices.vulkan_device_reports()[current_device()]
    return bool(report["features"].get("storage_buffer_16bit"))


def _opened_vulkan_devices() -> list:
    """The Vulkan devices opened so far; none when the runtime was never loaded (devices.py loads it
    on first use, so asking must not load it either)."""
    backend = sys.modules.get("vkml.runtime.vulkan.backend")
    return [] if backend is None else backend.opened_devices()


# The legacy tensor types of torch.cuda (torch.cuda.FloatTensor(2, 3), isinstance checks), defined with
# vkml.FloatTensor's in vkml/frontend/legacy_names.py
from .legacy_names import CUDA_TYPES  # noqa: E402

globals().update(CUDA_TYPES)


# ---------------------------------------------------------------------- random state, device choice,
# memory summary, streams and events (torch.cuda's names that checkpointing and timing code calls)


def get_rng_state(device="cuda"):
    """The state of the generator ``"cuda"`` draws from: vkml's one generator (``vkml.get_rng_state``)."""
    _device(device)
    return _rng_state.get_rng_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore the state ``get_rng_state`` returned (the one generator of every device)."""
    _device(device)
    _rng_state.set_rng_state(new_state)


def get_rng_state_all() -> list:
    """One state per Vulkan device (``device_count()`` of them): the one generator's, each time."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """Restore the states ``get_rng_state_all`` returned (the generator is one, so the last one wins)."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def initial_seed() -> int:
    """The seed the generator was last seeded with (``vkml.initial_seed``)."""
    return _random.default_generator.initial_seed()


def seed() -> None:
    """Seed the generator from the operating system's entropy (``vkml.seed``)."""
    import secrets

    _random.default_generator.manual_seed(secrets.randbits(63))


def seed_all() -> None:
    """Same as ``seed``: there is one generator for every device."""
    seed()


def set_device(device) -> None:
    """Select the device ``"cuda"`` names. vkml's ``"cuda"`` is ``best_device()``'s Vulkan device
    (docs/devices.md): selecting it (or a negative index, PyTorch's no-op) is accepted; selecting
    another is a NotImplementedError rather than a choice silently ignored (name ``"cuda:N"`` instead)."""
    index = device if isinstance(device, int) else _device(device).index if device is not None else -1
    if index < 0 or index == current_device():
        return
    if index >= device_count():
        raise RuntimeError(
            f"CUDA error: invalid device ordinal (vkml.cuda.set_device({device!r}): {device_count()} devices)"
        )
    raise NotImplementedError(
        f"vkml.cuda.set_device({device!r}): vkml's 'cuda' is Vulkan device {current_device()}; name another one "
        f"as 'cuda:{index}' (docs/devices.md)"
    )


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of a device's memory: total the device-local heaps the driver reports, free that
    less what vkml holds (``memory_reserved``); other processes' use is not counted."""
    found = _device(device)
    heaps = devices.vulkan_device_reports()[found.index]["memory_heaps"]
    total = sum(h["size"] for h in heaps if h.get("device_local"))
    return max(total - memory_reserved(found), 0), total


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A table of ``memory_stats`` (current and peak bytes allocated and reserved), as ``torch.cuda.memory_summary``'s
    text reports them (vkml keeps fewer counters than PyTorch's allocator)."""
    stats = memory_stats(device)
    found = _device(device)
    lines = [
        "=" * 75,
        f" vkml memory summary, device {found.index} ({get_device_name(found.index)})",
        "-" * 75,
        f" {'metric':<40}{'current':>16}{'peak':>16}",
        "-" * 75,
        f" {'allocated bytes':<40}{stats['allocated_bytes.all.current']:>16}{stats['allocated_bytes.all.peak']:>16}",
        f" {'reserved bytes':<40}{stats['reserved_bytes.all.current']:>16}{stats['reserved_bytes.all.peak']:>16}",
        f" {'live allocations':<40}{stats['allocation.all.current']:>16}{'':>16}",
        f" {'out-of-memory errors':<40}{stats['num_ooms']:>16}{'':>16}",
        "=" * 75,
    ]
    return "\n".join(lines) + "\n"


class Event:
    """``torch.cuda.Event``: a point in a device's work. vkml submits each realize's work in order and
    ``record`` waits for the device first, so an event is complete once recorded (``query()`` True) and
    ``elapsed_time`` is the host's clock between two records, in milliseconds, work included.
    (``torch.Event``, vkml/frontend/runtime_names.py, is this with a device of any kind.)"""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self._time = None
        self.device = None  # the device "cuda" names, looked up when recorded

    def record(self, stream=None) -> None:
        (self.device or _device(None)).synchronize()
        self._time = time.perf_counter()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait(self, stream=None) -> None:
        return None

    def elapsed_time(self, end_event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


class Stream:
    """``torch.cuda.Stream``: vkml has one queue of work per device, in order; every stream is that one
    (``wait_stream``, ``wait_event`` have nothing to wait for, ``synchronize`` waits for the device).
    (``torch.Stream``, vkml/frontend/runtime_names.py, is this with a device of any kind.)"""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.device = _device(device)
        self.priority = priority

    def _new_event(self) -> Event:
        return Event()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        self.device.synchronize()

    def wait_stream(self, stream) -> None:
        return None

    def wait_event(self, event) -> None:
        return None

    def record_event(self, event=None) -> Event:
        event = self._new_event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self) -> int:
        return hash(str(self.device))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def current_stream(device=None) -> Stream:
    """The stream work goes to: the device's one queue."""
    return Stream(device)


def default_stream(device=None) -> Stream:
    return Stream(device)


class stream:  # noqa: N801  (torch.cuda.stream's name)
    """``with torch.cuda.stream(s):``: work inside goes to ``s``, which is the device's one queue in vkml."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc) -> None:
        return None
