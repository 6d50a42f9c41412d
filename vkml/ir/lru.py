"""Bounded in-memory caches: least recently used out first, by entry count and by bytes.

A loop whose shapes change every step (a batch size that varies) makes new kernels every
step; every cache of kernels, pipelines, plans and interpreter programs keyed by structure
would otherwise grow without end. Each such cache names its bound in ``LIMITS`` (entries,
bytes; None: no byte bound), read at every insertion, so a test can shrink a bound and the
next insertion honours it:

    >>> cache = LRU("kernel_binaries", weight=len)
    >>> cache.put("a", b"spirv")
    >>> cache.get("a")
    b'spirv'

``on_evict(key, value)`` runs (outside the lock) for each entry dropped by the bound; what
an evicted value owns (a VkPipeline) is its owner's to release safely
(vkml/runtime/vulkan/pipelines.py defers that past the GPU work that may use it).

The structure is an ``OrderedDict`` mutated only under the cache's own lock, so threads may
share a cache. The lock is re-entrant: a kernel's death (a weak-reference callback, which the
garbage collector may run inside any allocation, so inside ``put``) removes its entry from
the very cache that is allocating.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

# Where evictions are counted: vkml/runtime/counters.py puts its shared dict here (the IR layer
# cannot import the runtime).
counters: dict[str, int] = {"cache_evictions": 0}

# name -> (most entries, most bytes or None). Bytes are the ``weight`` the cache's owner gives.
LIMITS: dict[str, tuple[int, int | None]] = {
    "kernel_binaries": (512, 16 << 20),  # SPIR-V of compiled kernels, per device (runtime/kernel_cache.py)
    # VkPipelines by IR text, per device (runtime/vulkan/pipelines.py); the driver holds their bytes,
    # host memory on a CPU driver (lavapipe: about 1 MiB of machine code each), which caps them at
    # ``CPU_DRIVER_PIPELINES``.
    "pipelines": (512, None),
    "kernel_entries": (512, None),  # per kernel object: pipeline and dispatch plan (runtime/pipelines.py)
    # The CPU's compiled interpreter programs (ir/interp/compiled.py): about 1 KiB of closures
    # and slots per instruction, which is their weight. A reduction's program has thousands of
    # instructions (several MiB): the bound must hold one training step's programs, or every step
    # compiles them again (a forward-forward step of two Linear layers took 5x as long at 8 MiB;
    # a 2-layer LSTM's training step, with its fused step kernels of ~3,000 instructions forward
    # and backward, holds ~55 MiB of programs, and at 32 MiB recompiled all ~60 every iteration).
    # The bytes bound what is kept, the count only stops a flood of tiny programs: an encoder-decoder
    # Transformer's training step and greedy decoding need ~440 programs (~400 MiB by this weight,
    # ~150 MiB of resident memory), and at 256 programs / 128 MiB recompiled them all on every run.
    "programs": (2048, 512 << 20),
    "compiled_spirv": (256, 16 << 20),  # codegen's SPIR-V and assembly (codegen/spirv.py)
    # Lowered kernel templates (schedule/scheduler.py) and realize recipes (schedule/plan_cache.py).
    # Both hold kernels (their IR, and through them the CPU's programs): a training loop with a new
    # batch size every step fills them, and plateaus ~300 MiB above its first steps' memory on the CPU
    # (tests/test_cache_memory.py's stress test bounds it). A plan replayed skips the templates, so
    # a training step's few plans keep its kernels whatever the template count. A program of a few
    # hundred kernels with a generate loop (a new plan for each sequence length) must fit both: at
    # 128 templates and 32 plans such a program lowered all its kernels again on every run.
    "templates": (512, None),
    "plans": (128, None),
    "validated_spirv": (4096, None),  # digests of SPIR-V that passed spirv-val in this process (kernel_cache.py)
}


CPU_DRIVER_PIPELINES = 96


class LRU:
    """A dict bounded by ``LIMITS[name]``; ``get`` and ``put`` make an entry the most recently used."""

    def __init__(
        self,
        name: str,
        weight: Callable[[object], int] | None = None,
        on_evict: Callable | None = None,
        cap: int | None = None,
    ):
        self.name = name
        self.cap = cap  # at most this many entries whatever LIMITS says (a device whose entries are large)
        self.weight = weight
        self.on_evict = on_evict
        self.nbytes = 0
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key) -> bool:
        return key in self._items

    def get(self, key, default=None):
        with self._lock:
            value = self._items.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._items.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        """Insert or replace ``key``; then drop least recently used entries beyond the bounds."""
        with self._lock:
            old = self._items.pop(key, _MISSING)
            if old is not _MISSING and self.weight is not None:
                self.nbytes -= self.weight(old)
            self._items[key] = value
            if self.weight is not None:
                self.nbytes += self.weight(value)
            evicted = self._trim()
        self._evicted(evicted)

    def pop(self, key, default=None):
        with self._lock:
            value = self._items.pop(key, _MISSING)
            if value is _MISSING:
                return default
            if self.weight is not None:
                self.nbytes -= self.weight(value)
            return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.nbytes = 0

    def values(self) -> list:
        with self._lock:
            return list(self._items.values())

    def _trim(self) -> list:
        entries, nbytes = LIMITS[self.name]
        if self.cap is not None:
            entries = min(entries, self.cap)
        evicted = []
        items = self._items
        # The newest entry stays even when it alone is over the byte bound: it is about to be used.
        while len(items) > 1 and (len(items) > entries or (nbytes is not None and self.nbytes > nbytes)):
            key, value = items.popitem(last=False)
            if self.weight is not None:
                self.nbytes -= self.weight(value)
            evicted.append((key, value))
        return evicted

    def _evicted(self, evicted: list) -> None:
        if evicted:
            counters["cache_evictions"] += len(evicted)
            if self.on_evict is not None:
                for key, value in evicted:
                    self.on_evict(key, value)


_MISSING = object()
