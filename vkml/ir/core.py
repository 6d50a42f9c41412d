"""The kernel IR's data structures: SSA values, instructions, structured control flow.

A kernel is a tree: a ``Block`` holds statements (``Instr``, ``If``, ``Loop``); ``If`` and
``Loop`` hold blocks of their own and define their results as SSA values. Values are
identified by object identity; the text form numbers them in definition order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .types import DType

ACCESS_MODES = ("read", "write", "readwrite")


class Value:
    """An SSA value of one scalar type (or a cooperative matrix, ``types.MatrixType``). Arithmetic on it emits IR (see ``builder``)."""

    __slots__ = ("dtype", "hint")

    def __init__(self, dtype: DType, hint: str | None = None):
        self.dtype = dtype
        self.hint = hint

    def __repr__(self) -> str:
        return f"<Value {self.hint or hex(id(self))}: {self.dtype.short}>"

    # Operator overloads live in builder.py (installed there) to keep this module data-only.


@dataclass(eq=False)
class Instr:
    """One instruction. ``attrs`` holds its non-value operands (a constant, an axis, a buffer name)."""

    op: str
    args: tuple[Value, ...]
    result: Value | None
    attrs: tuple = ()


@dataclass(eq=False)
class Block:
    body: list = field(default_factory=list)
    yields: tuple[Value, ...] = ()


@dataclass(eq=False)
class If:
    """``results = if cond {then; yield a} else {orelse; yield b}``."""

    cond: Value
    then: Block
    orelse: Block
    results: tuple[Value, ...] = ()


@dataclass(eq=False)
class Loop:
    """``for index in range(start, end, step)`` carrying ``carried`` (initialised from ``inits``).

    The body yields the next carried values; ``results`` are the carried values after the last
    iteration (the inits when the loop runs zero times). ``step`` is positive.

    ``unroll`` False asks the device compiler to keep the loop rolled (SPIR-V's ``DontUnroll``): a
    driver that fully unrolls a constant-trip loop with a large body can spill its registers. It is
    a hint on how the loop is compiled, never on what it computes; the interpreters ignore it.
    """

    start: Value
    end: Value
    step: Value
    index: Value
    inits: tuple[Value, ...]
    carried: tuple[Value, ...]
    body: Block
    results: tuple[Value, ...] = ()
    unroll: bool = True


class ElementFunction:
    """The body of a ``cm_map``: a closed function (it uses its parameters and what its body defines, nothing of
    the kernel around it) of one matrix element, ``(row, col, element, operands...) -> element``. Its body holds
    pure and const instructions only and yields the one result (a device calls it as a SPIR-V function, the CPU
    interpreter evaluates it on every element). Functions compare and hash by structure, as kernels do."""

    __slots__ = ("params", "body")

    def __init__(self, params: tuple[Value, ...], body: Block):
        self.params = tuple(params)
        self.body = body

    @property
    def param_types(self) -> tuple:
        return tuple(p.dtype for p in self.params)

    @property
    def result_type(self):
        return self.body.yields[0].dtype if len(self.body.yields) == 1 else None

    def key(self) -> tuple:
        """The function up to renaming of its values."""
        numbers: dict[int, int] = {id(p): i for i, p in enumerate(self.params)}

        def use(v: Value):
            return numbers.get(id(v), ("undefined", id(v)))

        body = []
        for s in self.body.body:
            res = None
            if isinstance(s, Instr) and s.result is not None:
                numbers[id(s.result)] = len(numbers)
                res = (numbers[id(s.result)], s.result.dtype.short)
            body.append((s.op, tuple(use(a) for a in s.args), _attrs_key(s.attrs), res) if isinstance(s, Instr) else s)
        return (tuple(t.short for t in self.param_types), tuple(body), tuple(use(y) for y in self.body.yields))

    def __eq__(self, other) -> bool:
        return isinstance(other, ElementFunction) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return f"<ElementFunction of ({', '.join(t.short for t in self.param_types)})>"


@dataclass(frozen=True)
class BufferDecl:
    name: str
    dtype: DType
    access: str  # read | write | readwrite


@dataclass(frozen=True)
class ParamDecl:
    """A scalar parameter (a push constant on Vulkan); ``value`` is its SSA value in the body."""

    name: str
    dtype: DType
    value: Value = field(compare=False)


@dataclass(frozen=True)
class SharedDecl:
    """A workgroup-shared array of ``size`` elements."""

    name: str
    dtype: DType
    size: int


# str(kernel) is its text form, bound by vkml/ir/text.py (the printer is written on these classes).
@dataclass(eq=False)
class Kernel:
    name: str
    local_size: tuple[int, int, int]
    buffers: tuple[BufferDecl, ...]
    params: tuple[ParamDecl, ...]
    shared: tuple[SharedDecl, ...]
    body: Block
    # The subgroup size the kernel is written for; needed by subgroup-scoped matrix ops and
    # subgroup_id (the interpreter groups invocations by it, a device must run it at that size).
    subgroup_size: int | None = None

    def buffer(self, name: str) -> BufferDecl:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def shared_array(self, name: str) -> SharedDecl:
        for s in self.shared:
            if s.name == name:
                return s
        raise KeyError(name)

    def param_types(self) -> tuple[tuple[str, str], ...]:
        """(name, dtype name) of each parameter: what a dispatch must give, without reading the body."""
        return tuple((p.name, p.dtype.name) for p in self.params)

    def vector_shared(self) -> frozenset[str]:
        """The shared arrays some ``shared_vstore`` writes: a device holds them as vectors of four."""
        return frozenset(s.attrs[0] for s in walk(self.body) if isinstance(s, Instr) and s.op == "shared_vstore")

    def __eq__(self, other) -> bool:
        return isinstance(other, Kernel) and structure(self) == structure(other)

    def __hash__(self) -> int:
        return hash(structure(self))


def walk(block: Block):
    """Every statement in ``block`` and its nested blocks, in program order."""
    for stmt in block.body:
        yield stmt
        if isinstance(stmt, If):
            yield from walk(stmt.then)
            yield from walk(stmt.orelse)
        elif isinstance(stmt, Loop):
            yield from walk(stmt.body)


def structure(k: Kernel) -> tuple:
    """A hashable description of ``k`` up to renaming of values (alpha-equivalence)."""
    numbers: dict[int, int] = {}

    def define(v: Value) -> tuple:
        numbers[id(v)] = len(numbers)
        return (numbers[id(v)], v.dtype.short)

    def use(v: Value):
        return numbers.get(id(v), ("undefined", id(v)))

    def block(b: Block) -> tuple:
        out = []
        for s in b.body:
            if isinstance(s, Instr):
                res = define(s.result) if s.result is not None else None
                out.append(("instr", s.op, tuple(use(a) for a in s.args), _attrs_key(s.attrs), res))
            elif isinstance(s, If):
                c = use(s.cond)
                t, e = block(s.then), block(s.orelse)
                out.append(("if", c, t, e, tuple(define(r) for r in s.results)))
            elif isinstance(s, Loop):
                head = (use(s.start), use(s.end), use(s.step), tuple(use(v) for v in s.inits))
                idx = define(s.index)
                car = tuple(define(c) for c in s.carried)
                body, results = block(s.body), tuple(define(r) for r in s.results)
                out.append(("loop", head, idx, car, body, results, s.unroll))
        return (tuple(out), tuple(use(y) for y in b.yields))

    params = tuple((p.name, p.dtype.short, define(p.value)) for p in k.params)
    buffers = tuple((b.name, b.dtype.short, b.access) for b in k.buffers)
    shared = tuple((s.name, s.dtype.short, s.size) for s in k.shared)
    return (k.name, tuple(k.local_size), k.subgroup_size, buffers, params, shared, block(k.body))


def _attrs_key(attrs: tuple) -> tuple:
    # Constants compare by bits so that NaN payloads and -0.0 are told apart.
    return tuple((a.dtype.name, a.tobytes()) if isinstance(a, np.generic) else a for a in attrs)
