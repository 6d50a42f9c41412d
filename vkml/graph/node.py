"""The lazy graph: one ``Node`` per op result, realized into a device buffer on demand.

A node's ``op`` is an ``Op`` (one of ten constants, each a ``str``: ``node.op == "view"`` holds for ``Op.VIEW``) and
its ``arg`` the named type of that op; nothing reads an ``arg`` by position:
- ``buffer``: realized data (``buffer`` holds the device Buffer, contiguous in ``shape``); ``arg`` None.
- ``const``: one scalar broadcast to ``shape`` (``arg`` = ``Const(value)``, the Python value); becomes a kernel
  parameter.
- ``elementwise``: ``arg`` = ``Elementwise(op, compute)``: the ``OpDef`` and the dtype it computes in;
  sources have this node's shape.
- ``cast``: ``arg`` = ``Cast(bits)``: converts the source's value to this node's dtype, or reads its
  bits as this dtype of the same size (``bits``, ``Tensor.view(dtype)``).
- ``reduce``: ``arg`` = ``Reduce(op, axes)``: the ``OpDef`` and the reduced axes; ``shape`` keeps the
  reduced dims as size 1.
- ``view``: ``arg`` = ViewStack over the source's logical (contiguous) index; movement ops.
- ``cat``: ``arg`` = ``Cat(dim)``; sources of one dtype, equal except along ``dim``.
- ``matmul``: ``arg`` = ``Matmul(accumulate)`` (float32); sources A (..., M, K) and B (..., K, N) of
  float dtypes, with the batch dims of this node (views broadcast them); the products are
  added in ascending k (vkml/kernels/matmul/tiled.py).
- ``random``: ``arg`` = ``Random(distribution)`` ("uniform", "uniform_f16", "normal"); sources: three int32 scalar
  constants (key words and offset, vkml/frontend/random.py), so they reach kernels as parameters; the
  value at linear index i is ``vkml.ops.random.random_value``.
- ``kernel``: an output of a user's ``@vkml.kernel`` (``arg`` = its ``KernelOutput``, vkml/dsl/kernel.py);
  sources are the kernel's tensor inputs, realized before it runs as a dispatch of its own.

The named types are tuples, so they key the plan and template caches as they are (an ``OpDef``
compares and hashes by identity: one object per registered op).

When a node is realized it turns into a ``buffer`` node in place and drops its sources, so
intermediates are freed as soon as no tensor or graph refers to them. That happens under
its device's lock (vkml/schedule/scheduler.py); other threads may read the node meanwhile, and do so
in the order ``become_buffer`` states.
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import sys
import weakref
from typing import ClassVar, NamedTuple

from .. import config
from ..ir.types import DType
from ..ops.registry import OpDef
from ..runtime.base import Buffer, Device


class Op(str):
    """What a node computes: one of the ten constants below (the module's text says each one's ``arg``).

    A ``str``, so ``node.op == "view"`` holds for ``Op.VIEW``, and no ``enum.Enum``: reading an Enum
    class's member goes through its metaclass's Python ``__getattr__`` hook (CPython 3.11), about 0.15 µs
    a read, seven times a plain class attribute; the graph builder reads these for every op a user
    writes and the plan key for every node of every realize.
    """

    __slots__ = ()
    BUFFER: ClassVar[Op]
    CONST: ClassVar[Op]
    ELEMENTWISE: ClassVar[Op]
    CAST: ClassVar[Op]
    REDUCE: ClassVar[Op]
    VIEW: ClassVar[Op]
    CAT: ClassVar[Op]
    MATMUL: ClassVar[Op]
    RANDOM: ClassVar[Op]
    KERNEL: ClassVar[Op]
    ALL: ClassVar[tuple[Op, ...]]

    def __repr__(self) -> str:
        return f"Op.{self.upper()}"


Op.ALL = tuple(
    Op(name)
    for name in ("buffer", "const", "elementwise", "cast", "reduce", "view", "cat", "matmul", "random", "kernel")
)
for _op in Op.ALL:
    setattr(Op, _op.upper(), _op)
_BUFFER = Op.BUFFER  # a global read by ``Node.realized`` (which runs everywhere) without the class lookup
_VIEW, _KERNEL = Op.VIEW, Op.KERNEL
# The ops whose ``arg`` is their structure as it is (a constant's holds its value, a view's its offsets).
_ARG_IS_STRUCTURE = frozenset((Op.ELEMENTWISE, Op.CAST, Op.REDUCE, Op.CAT, Op.MATMUL, Op.RANDOM))


class Const(NamedTuple):
    """A constant node's ``arg``: its Python value (a float, int or bool, as ``build._scalar_value`` made it)."""

    value: float | int | bool


class Stepping(Const):
    """A ``Const`` whose value a program changes on every step (a random draw's key words, Adam's bias
    corrections): the same constant to the graph and its kernels, but an eager replay reads it from a ring
    buffer from its plan's first realize on (vkml/schedule/eager_scalars.py) instead of learning over a
    few steps that it changes, so its kernel variants are compiled with the plan's other kernels."""

    __slots__ = ()


class Elementwise(NamedTuple):
    """An elementwise node's ``arg``: the op, and the dtype its body computes in (float32 for float16)."""

    op: OpDef
    compute: DType

    def __repr__(self) -> str:
        return f"Elementwise({self.op.name!r}, {self.compute!r})"


class Reduce(NamedTuple):
    """A reduction node's ``arg``: the op, and the reduced axes (sorted)."""

    op: OpDef
    axes: tuple[int, ...]

    def __repr__(self) -> str:
        return f"Reduce({self.op.name!r}, {self.axes!r})"


class Cast(NamedTuple):
    """A cast node's ``arg``: ``bits`` reads the source's bits as the node's dtype of the same size."""

    bits: bool


class Cat(NamedTuple):
    """A cat node's ``arg``: the dim its sources are joined along."""

    dim: int


class Matmul(NamedTuple):
    """A matmul node's ``arg``: the dtype its products are added in."""

    accumulate: DType


class Random(NamedTuple):
    """A random node's ``arg``: its distribution, a key of ``vkml.ops.random.KINDS``."""

    distribution: str


VALUE_CAST = Cast(False)
BITS_CAST = Cast(True)

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


# Structure ids: one int per distinct (op, structural argument, shape, dtype, the sources' ids), handed out
# as nodes are built, so a realize keys its plan by its roots' ids instead of walking every node
# (vkml/schedule/plan_cache.py, ``find``). Ids come from a counter and are never reused: a table that was
# cleared (bounded, as shapes that change every step would grow it) only makes equal structures miss.
_structures: dict = {}
_structure_ids = itertools.count(1)
STRUCTURES_LIMIT = 1 << 16
_skey_of = operator.attrgetter("skey")


def structure_id(label: tuple) -> int:
    """The id of ``label`` (op, structural argument, shape, dtype, the sources' ids): equal ids, equal labels."""
    found = _structures.get(label)
    if found is None:
        if len(_structures) >= STRUCTURES_LIMIT:
            _structures.clear()
        # setdefault: two threads interning one label at once agree, or (mid-clear) get two ids, which only misses
        found = _structures.setdefault(label, next(_structure_ids))
    return found


def structure_of(node: Node) -> int:
    """``node``'s structure id from what it holds now and its sources' ``skey`` (``Node.__init__`` inlines it).

    The key entry ``plan_cache.trace`` makes for the node, with the sources' ids for their positions:
    a view's ``structure`` (not its offsets and mask bounds), no constant's value, a matmul's
    ``Matmul`` (its tiles depend on the device: the plan cache checks them apart). A user kernel's
    output, which allocates its own buffers, gets a new negative id: no plan of it is stored."""
    op, srcs, arg = node.op, node.srcs, node.arg
    if op in _ARG_IS_STRUCTURE:
        label = arg
    elif op == _VIEW:
        label = arg.structure(srcs[0].numel)
    elif op == _KERNEL:
        label = getattr(arg, "structure", None)
        if label is None:
            return -next(_structure_ids)
    else:
        label = None
    return structure_id((op, label, node.shape, node.dtype, *map(_skey_of, srcs)))


class Node:
    # trace_mark, trace_pos: the plan_cache.trace walk that saw the node last, and where it put it (that walk reads them).
    # skey: the structure id of the node and the graph below it (``structure_of``), set when it is built and when it
    # becomes a buffer; a user of a node realized since it was built keeps the id of the graph it was built on,
    # which the plan cache's checks (``plan_cache.find``) tell from the graph it has now.
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
        "skey",
        "__weakref__",
    )

    def __init__(
        self, op: Op, srcs: tuple, arg, shape: tuple[int, ...], dtype: DType, device: Device, origin: str | None = None
    ):
        self.op = op
        self.srcs = srcs
        self.arg = arg
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self.buffer: Buffer | None = None
        self.trace_mark = 0
        # "file:line" of the user's call that made the node, under VKML_DEBUG=3 (RECORD_ORIGINS); left unset
        # otherwise (every op builds a node: a store less), read as ``getattr(node, "origin", None)``
        if RECORD_ORIGINS or origin is not None:
            self.origin = origin if origin is not None else user_line()
        # structure_of, inlined: every op builds a node
        if op in _ARG_IS_STRUCTURE:
            label = arg
        elif op == _VIEW:
            source = math.prod(srcs[0].shape)
            # ViewStack.structure's memo of its last source read without the call (a stack is mostly viewed
            # over one source: a scalar's broadcast, a weight's transpose)
            last = arg.__dict__.get("_structure")
            label = last[1] if last is not None and last[0] == source else arg.structure(source)
        elif op == _KERNEL:
            label = getattr(arg, "structure", None)
            if label is None:  # a user's kernel: a structure of its own, never seen again
                self.skey = -next(_structure_ids)
                return
        else:  # a constant's value is a kernel parameter; a buffer's arg is None
            label = None
        # the sources' ids after the rest, as structure_of lays them out (one C loop: fewer bytecodes than
        # a branch per source count)
        label = (op, label, self.shape, dtype, *map(_skey_of, srcs))
        try:  # a subscript, not .get: no call where the label is known, as it is in a loop's steps
            self.skey = _structures[label]
        except KeyError:
            self.skey = structure_id(label)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def realized(self) -> bool:
        return self.op == _BUFFER

    def become_buffer(self, buffer: Buffer) -> None:
        # In this order, for threads that read a node while another realizes it (under the
        # device's lock, which readers building graphs do not take): ``op`` turns "buffer" only
        # once ``buffer`` is set, and ``srcs`` and ``arg`` are dropped only after, so a reader
        # that reads them before ``op`` gets those of the op it sees (``lazy.view_node``).
        self.buffer = buffer
        label = (_BUFFER, None, self.shape, self.dtype)  # a built buffer node's label (no sources)
        self.skey = _structures.get(label) or structure_id(label)
        self.op = Op.BUFFER
        self.srcs, self.arg = (), None

    def __repr__(self) -> str:
        return f"<Node {self.op} {self.shape} {self.dtype.name} on {self.device}>"


# The nodes a tensor that lives across steps took by an in-place write under no_grad (a from-scratch optimizer's
# ``v[:] = beta * v + p.grad``, ``p[:] -= lr * v``), by id, while the tensor holds them: a realize that reaches one
# computes it once and keeps it (vkml/schedule/scheduler.py), else each step's graph would recompute every earlier
# step's, a chain as long as the training and a new kernel each step. An entry goes with its node.
STATE_NODES: dict[int, weakref.ref] = {}


def _forget_state(ref, key=None) -> None:
    STATE_NODES.pop(key, None)


def note_write(old: Node, new: Node, quiet: bool) -> None:
    """A tensor's node ``old`` replaced by ``new`` (an in-place write; ``quiet``: under no_grad or through
    ``.data``/``detach()``): ``new`` is a state node when ``old`` was stored, a constant or a state node itself."""
    was_state = STATE_NODES.pop(id(old), None) is not None
    if not quiet or new.op in (Op.BUFFER, Op.CONST) or new is old:
        return
    if was_state or old.op in (Op.BUFFER, Op.CONST) or (old.op == Op.VIEW and old.srcs[0].op == Op.CONST):
        key = id(new)
        STATE_NODES[key] = weakref.ref(new, lambda ref, key=key: _forget_state(ref, key))


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
