"""Counts of runtime events, shared by every backend: a plain dict anyone may read or reset.

    >>> from vkml.runtime.counters import counters, reset_counters
    >>> reset_counters()
    >>> counters["submissions"]
    0

Keys: ``dispatches`` (kernel launches run), ``submissions`` (queue submissions that run
kernels; one per ``Device.run``), ``barriers`` (compute-to-compute barriers between dependent
dispatches), ``kernels_compiled`` (IR → SPIR-V compilations, i.e. misses of both the memory
and the disk cache), ``pipelines_created`` (driver pipeline compilations), ``bytes_uploaded``,
``bytes_downloaded``, ``transfer_submissions`` (queue submissions made only to copy data
through a staging buffer: downloads and uploads where the host does not map the memory, and
uploads queued behind work that may still use their memory), ``plans``
(realizes that planned and lowered their graph), ``plan_replays`` (realizes that reused the
plan of an earlier graph of the same structure, vkml/schedule/plan_cache.py), ``recordings_reused``
(runs that submitted an earlier run's command buffer again instead of recording one,
vkml/runtime/vulkan/recordings.py; their dispatches and barriers are counted as if recorded),
``host_waits`` (times the host blocked until submitted work completed: a download of its
results, the freeing of memory it may use, a command buffer it holds (a transfer slot's
too, with its staging memory), ``synchronize``; an upload never waits for runs),
``waits_skipped`` (downloads, and uploads written through the mapping, that went ahead while
submitted work was still running, because that work does not touch their memory),
``cache_entries_rejected`` (kernel-cache files that were not a valid entry for their key, or
that the driver refused, and were removed to be rebuilt, vkml/runtime/vulkan/kernel_cache.py),
``cache_files_evicted`` (cache files removed to keep the folder within its byte budget),
``cache_evictions`` (in-memory cache entries dropped to stay within their bounds, vkml/ir/lru.py),
``pipelines_destroyed`` (VkPipelines destroyed once evicted and unused, vkml/runtime/vulkan/pipelines.py),
``templates_lowered`` (kernel groups lowered to IR: misses of the memory and the disk template caches),
``templates_loaded`` (kernel groups whose lowered kernels were read from the disk instead,
vkml/schedule/template_disk.py), ``scalars_moved`` (kernel parameters of cached plans that changed on
every eager replay and moved from push constants into a ring buffer, vkml/schedule/eager_scalars.py).
"""

from __future__ import annotations

import threading

from ..ir import lru

KEYS = (
    "dispatches",
    "submissions",
    "barriers",
    "kernels_compiled",
    "pipelines_created",
    "bytes_uploaded",
    "bytes_downloaded",
    "transfer_submissions",
    "plans",
    "plan_replays",
    "recordings_reused",
    "host_waits",
    "waits_skipped",
    "cache_entries_rejected",
    "cache_files_evicted",
    "cache_evictions",
    "pipelines_destroyed",
    "templates_lowered",
    "templates_loaded",
    "scalars_moved",
)

counters: dict[str, int] = dict.fromkeys(KEYS, 0)
lru.counters = counters  # the bounded caches count their evictions here (vkml/ir/lru.py)


_lock = threading.Lock()


def count(key: str, n: int = 1) -> None:
    """Add ``n`` to ``counters[key]`` under a lock: what threads that compile kernels side by side
    (vkml/runtime/vulkan/pipelines.py, ``Pipelines.prepare``) count, so no increment is lost."""
    with _lock:
        counters[key] += n


def reset_counters() -> None:
    """Set every counter back to zero (in place: references to ``counters`` stay valid)."""
    for key in counters:
        counters[key] = 0


def snapshot() -> dict[str, int]:
    """A copy of the counters, to subtract from a later snapshot."""
    return dict(counters)
