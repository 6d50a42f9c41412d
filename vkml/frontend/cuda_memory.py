"""``vkml.cuda.memory``: the ``torch.cuda.memory`` module's names for the functions ``vkml.cuda`` answers
(``memory_allocated``, ``max_memory_allocated``, ``memory_reserved``, ``memory_stats``, ``memory_summary``,
``empty_cache``, ...), so ``torch.cuda.memory.memory_allocated()`` ports. The allocation-history tools of
PyTorch's "Understanding CUDA Memory Usage" (``_record_memory_history``, ``_dump_snapshot``, ``_snapshot``)
record CUDA caching-allocator events vkml does not have: they raise NotImplementedError naming themselves.

>>> import vkml
>>> vkml.cuda.memory.memory_allocated is vkml.cuda.memory_allocated
True
"""

from __future__ import annotations

from .cuda import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_peak_memory_stats,
)

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_peak_memory_stats",
]


def _no_history(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"torch.cuda.memory.{name}: vkml keeps no allocation history (it has no CUDA caching allocator); "
            "vkml.cuda.memory_stats() and memory_summary() give its allocator's totals"
        )

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


_record_memory_history = _no_history("_record_memory_history")
_dump_snapshot = _no_history("_dump_snapshot")
_snapshot = _no_history("_snapshot")
