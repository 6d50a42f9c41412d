"""The lazy graph: one ``Node`` per op result, realized into a device buffer on demand.

Node ops:
- ``buffer``: realized data (``buffer`` holds the device Buffer, contiguous in ``shape``).
- ``const``: one scalar broadcast to ``shape`` (``arg`` = the Python value); becomes a kernel parameter.
- ``elementwise``: ``arg`` = (op name, compute dtype); sources have this node's shape.
- ``cast``: ``arg`` = None; converts the source to this node's dtype.
- ``reduce``: ``arg`` = (op name, reduced axes); ``shape`` keeps the reduced dims as size 1.
- ``view``: ``arg`` = ViewStack over the source's logical (contiguous) index; movement ops.
- ``cat``: ``arg`` = dim; sources of one dtype, equal except along ``dim``.
- ``matmul``: ``arg`` = "float32" (the accumulator); sources A (..., M, K) and B (..., K, N) of
  float dtypes, with the batch dims of this node (views broadcast them); the products are
  added in ascending k (vkml/kernels/matmul/tiled.py).
- ``random``: ``arg`` = "uniform" | "uniform_f16" | "normal"; sources: three int32 scalar
  constants (key words and offset, vkml/frontend/random.py), so they reach kernels as parameters; the
  value at linear index i is ``vkml.ops.random.random_value``.
- ``kernel``: an output of a user's ``@vkml.kernel`` (``arg`` = its ``KernelOutput``, vkml/dsl/kernel.py);
  sources are the kernel's tensor inputs, realized before it runs as a dispatch of its own.

When a node is realized it turns into a ``buffer`` node in place and drops its sources, so
intermediates are freed as soon as no tensor or graph refers to them. That happens under
its device's lock (vkml/schedule/scheduler.py); other threads may read the node meanwhile, and do so
in the order ``become_buffer`` states.
"""

from __future__ import annotations

import math
import os
import sys

from .. import config
from ..ir.types import DType
from ..runtime.base import Buffer, Device

# VKML_DEBUG=3 names the user's source line of every op in its report of the fused groups
# (vkml/debug.py). Read once, at import: a node has no way to learn its line later, and reading
# the environment for every node would cost more than building the node. Tests set it directly.
RECORD_ORIGINS = config.debug_level() >= 3
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_line() -> str | None:
    """``file:line`` of the innermost caller outside the vkml package: the user's line that made the op."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return None
    path = frame.f_code.co_filename
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        relative = path
    return f"{relative if not relative.startswith('..') else path}:{frame.f_lineno}"


class Node:
    # trace_mark, trace_pos: the plan_cache.trace walk that saw the node last, and where it put it (that walk reads them).
    __slots__ = (
        "op",
        "srcs",
        "arg",
        "shape",
        "dtype",
        "device",
        "buffer",
        "origin",
        "trace_mark",
        "trace_pos",
        "__weakref__",
    )

    def __init__(
        self, op: str, srcs: tuple, arg, shape: tuple[int, ...], dtype: DType, device: Device, origin: str | None = None
    ):
        self.op = op
        self.srcs = srcs
        self.arg = arg
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self.buffer: Buffer | None = None
        # "file:line" of the user's call that made the node, under VKML_DEBUG=3 (RECORD_ORIGINS)
        self.origin = origin if origin is not None or not RECORD_ORIGINS else user_line()
        self.trace_mark = 0

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def realized(self) -> bool:
        return self.op == "buffer"

    def become_buffer(self, buffer: Buffer) -> None:
        # In this order, for threads that read a node while another realizes it (under the
        # device's lock, which readers building graphs do not take): ``op`` turns "buffer" only
        # once ``buffer`` is set, and ``srcs`` and ``arg`` are dropped only after, so a reader
        # that reads them before ``op`` gets those of the op it sees (``lazy.view_node``).
        self.buffer = buffer
        self.op = "buffer"
        self.srcs, self.arg = (), None

    def __repr__(self) -> str:
        return f"<Node {self.op} {self.shape} {self.dtype.name} on {self.device}>"


def toposort(roots: list[Node]) -> list[Node]:
    """Unrealized nodes reachable from ``roots``, sources before users.

    A depth-first post-order from the last root, visiting each node's sources last first (the
    order fusion decisions and dispatches follow). Each node's sources are walked by one
    iterator, so a node is pushed once and entered once.
    """
    order: list[Node] = []
    seen: set[int] = set()
    for root in reversed(roots):
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, reversed(root.srcs))]
        while stack:
            node, sources = stack[-1]
            for s in sources:
                if id(s) not in seen:
                    seen.add(id(s))
                    stack.append((s, reversed(s.srcs)))
                    break
            else:  # every source is done
                stack.pop()
                order.append(node)
    return order
