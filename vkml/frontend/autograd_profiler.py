"""``torch.autograd.profiler``: the older profiler's names, which tutorials and older training code use
(``with torch.autograd.profiler.profile(use_cuda=...) as prof``, ``record_function``), over
``vkml.profiler``'s (vkml/frontend/profiler.py): ``profile`` takes the older signature (``enabled``
first; ``use_cuda`` or ``use_device="cuda"`` adds the device's kernels), and ``emit_nvtx`` / ``emit_itt``
are empty ranges (Vulkan has no NVTX or ITT markers).

>>> import vkml
>>> with vkml.autograd.profiler.profile() as prof:
...     with vkml.autograd.profiler.record_function("step"):
...         _ = (vkml.ones(2) + 1).tolist()
>>> "step" in [e.key for e in prof.key_averages()]
True
"""

from __future__ import annotations

import contextlib

from . import profiler as _profiler
from .profiler import EventList, FunctionEvent, FunctionEventAvg, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "emit_itt", "emit_nvtx", "profile", "record_function"]


class profile(_profiler.profile):  # noqa: N801 - torch.autograd.profiler's name
    """``torch.autograd.profiler.profile``: ``enabled=False`` records nothing (and ``with`` binds None)."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config=None,
        acc_events: bool = False,
        custom_trace_id_callback=None,
    ):
        activities = {_profiler.ProfilerActivity.CPU} if use_cpu else set()
        super().__init__(
            activities=activities,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
            with_flops=with_flops,
            with_modules=with_modules,
            use_cuda=use_cuda or use_device in ("cuda", "vulkan"),
        )
        self.enabled = enabled

    def __enter__(self) -> profile | None:
        if not self.enabled:
            return None  # as PyTorch's: ``with profile(enabled=False) as prof`` binds None
        self.start()
        return self


def emit_nvtx(enabled: bool = True, record_shapes: bool = False):
    """An empty range: Vulkan has no NVTX markers (``torch.autograd.profiler.emit_nvtx``)."""
    return contextlib.nullcontext()


def emit_itt(enabled: bool = True, record_shapes: bool = False):
    """An empty range: vkml emits no ITT markers (``torch.autograd.profiler.emit_itt``)."""
    return contextlib.nullcontext()
