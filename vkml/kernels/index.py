"""Index arithmetic of lowered kernels: uint32 where every extent fits, int64 where one reaches 2^31.

GPUs do 32-bit integer arithmetic faster, so most kernels keep uint32 indices; a group whose
element counts, view shapes or view reach (``needs_wide_index``) could wrap them is lowered
inside ``index_arithmetic(wide=True)``, where index constants (``_u32``), local ids
(``local_index``) and workgroup ids are int64. The choice depends on shapes and strides
only, which the structure key holds, so a cached template keeps it.
"""

from __future__ import annotations

import contextlib
import contextvars

from ..graph.node import Node, Op
from ..graph.view import View
from ..ir import builder as B
from ..ir import types as T
from ..ir.core import Value

_U32 = 1 << 32
# A kernel whose element counts, offsets or intermediate extents reach this is built with
# int64 index arithmetic; below it uint32 arithmetic cannot wrap (every index expression
# stays under twice the largest extent), and it is faster on GPUs.
WIDE_INDEX_EXTENT = 1 << 31
_WIDE = contextvars.ContextVar("vkml_wide_index", default=False)


def _u32(v: int) -> Value:
    """An index constant: uint32 (modulo 2^32), or int64 inside ``index_arithmetic(wide=True)``."""
    if _WIDE.get():
        return B.const(v, T.int64)
    return B.const(v % _U32, T.uint32)


def index_dtype() -> T.DType:
    """The type of index values in the kernel being built (see ``index_arithmetic``)."""
    return T.int64 if _WIDE.get() else T.uint32


@contextlib.contextmanager
def index_arithmetic(wide: bool):
    """Build index arithmetic (``_u32``, ``local_index``, ``linear_workgroup``) in int64 if ``wide``."""
    token = _WIDE.set(wide)
    try:
        yield
    finally:
        _WIDE.reset(token)


def local_index() -> Value:
    """The invocation's local id along x, in the index type."""
    return B.convert(B.local_id(0), index_dtype())


def _extent(view: View) -> int:
    """One past the largest distance from 0 that ``view``'s linear index below can reach."""
    return abs(view.offset) + sum((s - 1) * abs(st) for s, st in zip(view.shape, view.strides) if s) + 1


def needs_wide_index(root: Node, leaves) -> bool:
    """Whether the group rooted at ``root`` (``leaves``: ids loaded, not inlined) has an element
    count, a view's shape or a view's reach of at least ``WIDE_INDEX_EXTENT``: then its kernels
    index in int64. Shapes and strides are part of the structure key, so the choice is too."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.numel >= WIDE_INDEX_EXTENT:
            return True
        if node.realized or id(node) in leaves:
            continue
        if node.op == Op.VIEW and any(
            v.numel >= WIDE_INDEX_EXTENT or _extent(v) >= WIDE_INDEX_EXTENT for v in node.arg.views
        ):
            return True
        stack.extend(node.srcs)
    return False
