"""The IR verifier: every kernel passes here before codegen or interpretation.

It checks declarations (names, access modes, local_size), the type of every instruction
(against the instruction table), buffer and shared-array accesses, dominance (a value is
used only where its definition is in scope), the shapes of ``if`` and ``loop``, and that
barriers sit in control flow that is uniform across the workgroup. Every error names the
offending statement in the text form's syntax, e.g.

    IRError: barrier in non-uniform control flow (inside `if %7`, where %7 depends on global_id): barrier

Cooperative-matrix instructions (``cm_*``) act for a whole subgroup at once: they need a
kernel ``subgroup_size``, control flow that is uniform across each subgroup, and operands
(index, fill value) that are the same in the whole subgroup. ``subgroup_id`` is such a value;
``local_id`` is not. An instruction on workgroup-scope matrices needs all that across the
whole workgroup (where ``subgroup_id`` differs too). A ``cm_map``'s function is closed: it holds pure and
const instructions (and ``if``s of them) on its own parameters and values only.
"""

from __future__ import annotations

import re
import weakref

import numpy as np

from ..errors import IRError
from . import types as T
from .core import ACCESS_MODES, Block, BufferDecl, ElementFunction, If, Instr, Kernel, Loop, Value, walk
from .instructions import (
    MATRIX_MEMORY_OPS,
    MATRIX_TENSOR_LOADS,
    MATRIX_TENSOR_OPS,
    SPECS,
    VECTOR_WIDTH,
    matrix_result_type,
    result_type,
)
from .text import ValueNames, format_statement

MAX_WORKGROUP_INVOCATIONS = 1024  # Vulkan's guaranteed minimum of maxComputeWorkGroupInvocations
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Words the text form reads as literals where an operand may stand, so no buffer may be called so.
_OPERAND_KEYWORDS = ("inf", "nan", "true", "false")
# Sources of values that differ between the invocations of one workgroup.
_NONUNIFORM_OPS = ("global_id", "local_id", "shuffle_xor", "shared_load")


def verify_kernel_once(k: Kernel) -> Kernel:
    """``verify_kernel(k)``, skipped for a kernel object checked before: for the runners of built
    kernels (the CPU device, the interpreter), each of which would otherwise check a large kernel again.

    >>> verify_kernel_once(kb.finish()).name
    'scale'
    """
    key = id(k)
    seen = _VERIFIED.get(key)
    if seen is None or seen() is not k:
        verify_kernel(k)
        _VERIFIED[key] = weakref.ref(k, lambda _, key=key: _VERIFIED.pop(key, None))
    return k


# The kernels verify_kernel_once passed, by id (a kernel compares by identity; an entry leaves with it).
_VERIFIED: dict[int, weakref.ref] = {}


def verify_kernel(k: Kernel) -> Kernel:
    """Check ``k`` against the IR's rules; return it unchanged or raise IRError naming the statement.

    >>> verify_kernel(kb.finish()).name
    'scale'
    """
    checker = _Checker(k)
    checker.declarations()
    checker.block(k.body, [{id(p.value) for p in k.params}])
    if k.body.yields:
        raise IRError(f"kernel {k.name!r}: the kernel body yields values; only if/loop blocks yield")
    uniformity = _Uniformity(k)
    uniformity.block(k.body)
    _check_uniform_flow(k.body, uniformity.reasons, checker.name, [], _is_barrier, "barrier")
    if any(isinstance(s, Instr) and SPECS[s.op].kind == "matrix" for s in walk(k.body)):
        per_subgroup = _Uniformity(k, scope="subgroup")
        per_subgroup.block(k.body)
        _check_uniform_flow(k.body, per_subgroup.reasons, checker.name, [], _is_matrix_op, "matrix instruction")
        _check_matrix_merges(k.body, per_subgroup.reasons, checker.name, "subgroup")
        what = "workgroup-scope matrix instruction"
        _check_uniform_flow(k.body, uniformity.reasons, checker.name, [], _is_workgroup_matrix_op, what)
        _check_matrix_merges(k.body, uniformity.reasons, checker.name, "workgroup")
    return k


class _Checker:
    """Declarations, types, memory accesses and dominance, in one walk over the kernel."""

    def __init__(self, k: Kernel):
        self.k = k
        self.name = ValueNames(k)
        self.defined: set[int] = set()
        self.vector_shared = k.vector_shared()  # held as vectors of 4 on a device

    def fail(self, stmt, problem: str):
        raise IRError(f"{problem}: {format_statement(stmt, self.name)}")

    # ---------------------------------------------------------------- declarations

    def declarations(self) -> None:
        k = self.k
        if not _IDENTIFIER.match(k.name):
            raise IRError(f"kernel name {k.name!r} is not an identifier")
        sizes = tuple(k.local_size)
        if len(sizes) != 3 or any(not isinstance(s, (int, np.integer)) or s < 1 for s in sizes):
            raise IRError(f"kernel {k.name!r}: local_size {sizes} must be three integers >= 1")
        if sizes[0] * sizes[1] * sizes[2] > MAX_WORKGROUP_INVOCATIONS:
            raise IRError(
                f"kernel {k.name!r}: local_size {sizes} has {sizes[0] * sizes[1] * sizes[2]} invocations, "
                f"more than {MAX_WORKGROUP_INVOCATIONS}"
            )
        seen: set[str] = set()
        for decl in (*k.buffers, *k.params, *k.shared):
            what = type(decl).__name__.removesuffix("Decl").lower()
            if not _IDENTIFIER.match(decl.name) or decl.name in _OPERAND_KEYWORDS:
                raise IRError(f"kernel {k.name!r}: {what} name {decl.name!r} is not a usable identifier")
            if decl.name in seen:
                raise IRError(f"kernel {k.name!r}: {decl.name!r} is declared twice")
            seen.add(decl.name)
            allowed = T.ALL + T.STORAGE_ONLY if isinstance(decl, BufferDecl) else T.ALL  # u8/i8/i16: buffers only
            if decl.dtype not in allowed:
                raise IRError(f"kernel {k.name!r}: {what} {decl.name!r} has unknown type {decl.dtype!r}")
        group = k.subgroup_size
        if group is not None:
            if not isinstance(group, int) or group < 1 or group & (group - 1):
                raise IRError(f"kernel {k.name!r}: subgroup_size {group!r} is not a power of two")
            if (sizes[0] * sizes[1] * sizes[2]) % group:
                raise IRError(f"kernel {k.name!r}: local_size {sizes} is not a whole number of subgroups of {group}")
        for b in k.buffers:
            if b.access not in ACCESS_MODES:
                raise IRError(
                    f"kernel {k.name!r}: buffer {b.name!r} has access {b.access!r}; use one of {ACCESS_MODES}"
                )
        for s in k.shared:
            if s.size < 1:
                raise IRError(f"kernel {k.name!r}: shared array {s.name!r} has size {s.size}; it needs at least 1")
            if s.name in self.vector_shared and s.size % VECTOR_WIDTH:
                raise IRError(
                    f"kernel {k.name!r}: shared array {s.name!r} takes vector stores but its size {s.size} "
                    f"is not a multiple of {VECTOR_WIDTH}"
                )
        for p in k.params:
            if p.value.dtype is not p.dtype:
                raise IRError(
                    f"kernel {k.name!r}: param %{p.name} is declared {p.dtype.short} but its value is {p.value.dtype.short}"
                )
            self.defined.add(id(p.value))

    # ---------------------------------------------------------------- dominance

    def define(self, stmt, v: Value, scopes: list[set[int]]) -> None:
        if id(v) in self.defined:
            self.fail(stmt, f"{self.name(v)} is defined a second time")
        self.defined.add(id(v))
        scopes[-1].add(id(v))

    def use(self, stmt, v: Value, scopes: list[set[int]]) -> None:
        if not isinstance(v, Value):
            self.fail(stmt, f"operand {v!r} is not an IR value")
        if any(id(v) in scope for scope in scopes):
            return
        if id(v) in self.defined:
            self.fail(stmt, f"{self.name(v)} is used outside the block that defines it")
        if self.name(v).startswith("%?"):
            self.fail(stmt, f"{self.name(v)} is used but never defined")
        self.fail(stmt, f"{self.name(v)} is used before its definition")

    # ---------------------------------------------------------------- statements

    def block(self, block: Block, scopes: list[set[int]]) -> None:
        for stmt in block.body:
            if isinstance(stmt, Instr):
                self.instr(stmt, scopes)
            elif isinstance(stmt, If):
                self.if_stmt(stmt, scopes)
            elif isinstance(stmt, Loop):
                self.loop_stmt(stmt, scopes)
            else:
                raise IRError(f"kernel {self.k.name!r}: a block holds {stmt!r}, which is not an Instr, If or Loop")

    def nested(self, stmt, block: Block, scopes: list[set[int]], defines: tuple[Value, ...] = ()) -> None:
        scopes.append(set())
        for v in defines:
            self.define(stmt, v, scopes)
        self.block(block, scopes)
        for v in block.yields:
            self.use(stmt, v, scopes)
        scopes.pop()

    def if_stmt(self, stmt: If, scopes: list[set[int]]) -> None:
        self.use(stmt, stmt.cond, scopes)
        if stmt.cond.dtype is not T.bool_:
            self.fail(stmt, f"if condition {self.name(stmt.cond)} is {stmt.cond.dtype.short}, not bool")
        self.nested(stmt, stmt.then, scopes)
        self.nested(stmt, stmt.orelse, scopes)
        want = _types(stmt.results)
        for branch, block in (("then", stmt.then), ("else", stmt.orelse)):
            if _types(block.yields) != want:
                self.fail(
                    stmt,
                    f"the {branch} branch yields ({_types(block.yields)}) but the if's results are ({want})",
                )
        for r in stmt.results:
            self.define(stmt, r, scopes)

    def loop_stmt(self, stmt: Loop, scopes: list[set[int]]) -> None:
        for v in (stmt.start, stmt.end, stmt.step, *stmt.inits):
            self.use(stmt, v, scopes)
        bound_types = {stmt.start.dtype, stmt.end.dtype, stmt.step.dtype}
        if len(bound_types) != 1 or not stmt.start.dtype.is_int:
            shown = ", ".join(v.dtype.short for v in (stmt.start, stmt.end, stmt.step))
            self.fail(stmt, f"loop bounds must be integers of one type, got ({shown})")
        if stmt.index.dtype is not stmt.start.dtype:
            self.fail(stmt, f"loop index is {stmt.index.dtype.short} but the bounds are {stmt.start.dtype.short}")
        want = _types(stmt.inits)
        for what, values in (("carried values", stmt.carried), ("yields", stmt.body.yields), ("results", stmt.results)):
            if _types(values) != want:
                self.fail(stmt, f"loop {what} are ({_types(values)}) but its initial values are ({want})")
        self.nested(stmt, stmt.body, scopes, defines=(stmt.index, *stmt.carried))
        for r in stmt.results:
            self.define(stmt, r, scopes)

    def instr(self, stmt: Instr, scopes: list[set[int]]) -> None:
        for a in stmt.args:
            self.use(stmt, a, scopes)
        spec = SPECS.get(stmt.op)
        if spec is None:
            self.fail(stmt, f"unknown instruction {stmt.op!r}")
        if spec.kind in ("matrix", "subgroup_index") and self.k.subgroup_size is None:
            self.fail(stmt, f"{stmt.op} acts per subgroup: the kernel must declare its subgroup_size")
        if spec.kind == "matrix":  # its attrs are checked with its types
            expected = self.matrix(stmt)
        elif spec.kind == "memory":
            self.attrs(stmt, spec.kind)
            expected = self.memory(stmt)
        else:
            self.attrs(stmt, spec.kind)
            try:
                expected = result_type(stmt.op, tuple(a.dtype for a in stmt.args), tuple(stmt.attrs))
            except IRError as e:
                self.fail(stmt, str(e))
        got = stmt.result.dtype if stmt.result is not None else None
        if got is not expected:
            shown = expected.short if expected is not None else "no result"
            self.fail(stmt, f"{stmt.op} gives {shown} but its result is typed {got.short if got else 'nothing'}")
        if stmt.result is not None:
            self.define(stmt, stmt.result, scopes)

    def attrs(self, stmt: Instr, kind: str) -> None:
        """The non-value operands must be what the builder stores for this instruction."""
        a = tuple(stmt.attrs)
        if kind == "const":
            ok = len(a) == 1 and isinstance(a[0], np.generic) and a[0].dtype.name in {t.name for t in T.ALL}
            want = "one numpy scalar of a vkml dtype"
        elif kind == "index":
            ok = len(a) == 1 and isinstance(a[0], int) and 0 <= a[0] <= 2
            want = "one axis 0, 1 or 2"
        elif kind == "subgroup":
            ok = len(a) == 1 and isinstance(a[0], int) and a[0] >= 0
            want = "one non-negative integer mask"
        elif stmt.op == "vload":
            ok = len(a) == 2 and isinstance(a[0], str) and isinstance(a[1], int) and 0 <= a[1] < VECTOR_WIDTH
            want = f"a buffer name and a component below {VECTOR_WIDTH}"
        elif kind == "memory":
            ok = len(a) == 1 and isinstance(a[0], str)
            want = "the name of a buffer or shared array"
        elif stmt.op in ("bitcast", "convert"):
            ok = len(a) == 1 and isinstance(a[0], str) and a[0] in {t.name for t in T.ALL + T.STORAGE_ONLY}
            want = "one target dtype name"
        else:
            ok, want = a == (), "none"
        if not ok:
            self.fail(stmt, f"{stmt.op} attrs are {a!r}; expected {want}")

    def matrix(self, stmt: Instr):
        """Check a cooperative-matrix instruction; return the result type it gives."""
        array = None
        if stmt.op in MATRIX_MEMORY_OPS and stmt.attrs and isinstance(stmt.attrs[0], str):
            try:
                array = self.k.shared_array(stmt.attrs[0]).dtype
            except KeyError:
                self.fail(stmt, f"no shared array named {stmt.attrs[0]!r} is declared")
        if stmt.op in MATRIX_TENSOR_OPS and stmt.attrs and isinstance(stmt.attrs[0], str):
            try:
                buffer = self.k.buffer(stmt.attrs[0])
            except KeyError:
                self.fail(stmt, f"no buffer named {stmt.attrs[0]!r} is declared")
            if buffer.access == ("write" if stmt.op in MATRIX_TENSOR_LOADS else "read"):
                self.fail(stmt, f"{stmt.op} with {buffer.access}-only buffer {buffer.name!r}")
            array = buffer.dtype
        elif array is not None and stmt.attrs[0] in self.vector_shared and stmt.attrs[1] % VECTOR_WIDTH:
            # The array is held as vectors: a matrix's rows must start on whole vectors.
            self.fail(stmt, f"stride {stmt.attrs[1]} into vector-stored {stmt.attrs[0]!r} is not a multiple of 4")
        if stmt.op == "cm_map" and len(stmt.attrs) == 1 and isinstance(stmt.attrs[0], ElementFunction):
            self.element_function(stmt, stmt.attrs[0])
        result = stmt.result.dtype if stmt.result is not None else None
        try:
            return matrix_result_type(stmt.op, tuple(a.dtype for a in stmt.args), tuple(stmt.attrs), result, array)
        except IRError as e:
            self.fail(stmt, str(e))

    def element_function(self, stmt: Instr, fn: ElementFunction) -> None:
        """A ``cm_map``'s function: closed (its parameters and its own values only), pure and const
        instructions that type-check (in ``if`` blocks too, as float division builds), one yielded value."""
        scope = {id(p) for p in fn.params}
        self.function_block(stmt, fn.body, scope)
        if len(fn.body.yields) != 1:
            self.fail(stmt, "cm_map's function must yield one value")

    def function_block(self, stmt: Instr, block: Block, scope: set[int]) -> None:
        def visible(values) -> None:
            outside = next((a for a in values if id(a) not in scope), None)
            if outside is not None:
                self.fail(stmt, f"cm_map's function uses {self.name(outside)}, not its own: pass it as an operand")

        for inner in block.body:
            if isinstance(inner, If):
                visible((inner.cond,))
                for branch in (inner.then, inner.orelse):
                    self.function_block(stmt, branch, set(scope))
                if _types(inner.then.yields) != _types(inner.results) or _types(inner.orelse.yields) != _types(
                    inner.results
                ):
                    self.fail(stmt, "in cm_map's function: an if's branches must yield its results' types")
                scope.update(id(r) for r in inner.results)
                continue
            kind = SPECS[inner.op].kind if isinstance(inner, Instr) and inner.op in SPECS else None
            if kind not in ("pure", "const"):
                what = inner.op if isinstance(inner, Instr) else type(inner).__name__.lower()
                self.fail(stmt, f"cm_map's function may hold pure and const instructions and ifs only, not {what}")
            visible(inner.args)
            self.attrs(inner, kind)
            try:
                expected = result_type(inner.op, tuple(a.dtype for a in inner.args), tuple(inner.attrs))
            except IRError as e:
                self.fail(stmt, f"in cm_map's function: {e}")
            if inner.result is None or inner.result.dtype is not expected:
                self.fail(stmt, f"in cm_map's function: {inner.op} gives {expected.short}, typed otherwise")
            scope.add(id(inner.result))
        visible(block.yields)

    def memory(self, stmt: Instr) -> T.DType | None:
        """Check a load/store of a buffer or shared array; return the result type it gives."""
        name = stmt.attrs[0]
        shared = stmt.op.startswith("shared_")
        try:
            decl = self.k.shared_array(name) if shared else self.k.buffer(name)
        except KeyError:
            self.fail(stmt, f"no {'shared array' if shared else 'buffer'} named {name!r} is declared")
        is_store = stmt.op.endswith("store")
        want_args = (1 + VECTOR_WIDTH if stmt.op in ("vstore", "shared_vstore") else 2) if is_store else 1
        if len(stmt.args) != want_args:
            self.fail(stmt, f"{stmt.op} takes {want_args} operand(s), got {len(stmt.args)}")
        index = stmt.args[0]
        if not index.dtype.is_int:
            self.fail(stmt, f"index {self.name(index)} is {index.dtype.short}, not an integer")
        if not shared and is_store and decl.access == "read":
            self.fail(stmt, f"store to read-only buffer {name!r}")
        if not shared and not is_store and decl.access == "write":
            self.fail(stmt, f"load from write-only buffer {name!r}")
        if is_store:
            for value in stmt.args[1:]:
                if value.dtype is not decl.dtype:
                    self.fail(stmt, f"stores {value.dtype.short} into {name!r}, which holds {decl.dtype.short}")
            return None
        return decl.dtype


def _types(values) -> str:
    return ", ".join(v.dtype.short for v in values)


# ---------------------------------------------------------------- uniformity


class _Uniformity:
    """Which values may differ between invocations of one workgroup, and why.

    ``reasons`` maps each non-uniform value to what it depends on (``global_id``,
    ``a load from writable buffer 'x'``, ...); values not in it are uniform.
    """

    def __init__(self, k: Kernel, scope: str = "workgroup"):
        self.k = k
        self.scope = scope  # "workgroup", or "subgroup": subgroup_id and matrices are uniform there
        self.reasons: dict[int, str] = {}

    def why(self, values) -> str | None:
        return next((self.reasons[id(v)] for v in values if id(v) in self.reasons), None)

    def mark(self, v: Value, reason: str | None) -> bool:
        """Record ``v`` as non-uniform for ``reason``; True if that is news."""
        if reason is None or id(v) in self.reasons:
            return False
        self.reasons[id(v)] = reason
        return True

    def block(self, block: Block) -> None:
        for stmt in block.body:
            if isinstance(stmt, Instr) and stmt.result is not None:
                self.mark(stmt.result, self.instr_reason(stmt))
            elif isinstance(stmt, If):
                self.block(stmt.then)
                self.block(stmt.orelse)
                for r, a, b in zip(stmt.results, stmt.then.yields, stmt.orelse.yields):
                    self.mark(r, self.why([stmt.cond, a, b]))
            elif isinstance(stmt, Loop):
                self.loop(stmt)

    def loop(self, stmt: Loop) -> None:
        bounds = self.why([stmt.start, stmt.end, stmt.step])
        self.mark(stmt.index, bounds)
        for c, init in zip(stmt.carried, stmt.inits):
            self.mark(c, bounds or self.why([init]))
        # A carried value turns non-uniform when its yield does; repeat until nothing changes.
        changed = True
        while changed:
            self.block(stmt.body)
            changed = False
            for c, y in zip(stmt.carried, stmt.body.yields):
                changed |= self.mark(c, self.why([y]))
        for r, c in zip(stmt.results, stmt.carried):
            self.mark(r, self.why([c]))

    def instr_reason(self, stmt: Instr) -> str | None:
        if stmt.op in _NONUNIFORM_OPS or (stmt.op == "subgroup_id" and self.scope == "workgroup"):
            return stmt.op
        if stmt.op in ("load", "vload"):
            buffer = self.k.buffer(stmt.attrs[0])
            if buffer.access != "read":
                return f"a load from writable buffer {buffer.name!r}"
        return self.why(stmt.args)


def _check_matrix_merges(block: Block, reasons: dict[int, str], name: ValueNames, scope: str) -> None:
    """An ``if`` or ``loop`` that yields matrices of ``scope`` must decide the same way in the whole ``scope``."""

    def held(values) -> bool:
        return any(T.is_matrix(v.dtype) and (scope == "subgroup" or v.dtype.scope == scope) for v in values)

    for stmt in walk(block):
        if isinstance(stmt, If) and held(stmt.results):
            deciding = [stmt.cond]
        elif isinstance(stmt, Loop) and held(stmt.carried):
            deciding = [stmt.start, stmt.end, stmt.step]
        else:
            continue
        bad = next((v for v in deciding if id(v) in reasons), None)
        if bad is not None:
            raise IRError(
                f"matrices merge under {name(bad)}, which differs within a {scope} (it depends on "
                f"{reasons[id(bad)]}): {format_statement(stmt, name)}"
            )


def _is_barrier(stmt) -> bool:
    return isinstance(stmt, Instr) and stmt.op in ("barrier", "subgroup_barrier")


def _is_matrix_op(stmt) -> bool:
    return isinstance(stmt, Instr) and SPECS[stmt.op].kind == "matrix"


def _is_workgroup_matrix_op(stmt) -> bool:
    """A matrix instruction that takes or gives a workgroup-scope matrix."""
    if not _is_matrix_op(stmt):
        return False
    types = [v.dtype for v in (*stmt.args, *([stmt.result] if stmt.result is not None else []))]
    return any(T.is_matrix(t) and t.scope == "workgroup" for t in types)


def _check_uniform_flow(block: Block, reasons: dict[int, str], name: ValueNames, context: list[str], picks, what):
    """Raise on a statement ``picks`` selects that is reached under a non-uniform condition or loop bound
    (``context`` lists those around) or whose scalar operands are not uniform (``reasons``: at that scope)."""
    for stmt in block.body:
        if picks(stmt) and context:
            raise IRError(f"{what} in non-uniform control flow ({context[-1]}): {format_statement(stmt, name)}")
        if picks(stmt):
            scope = "workgroup" if what.startswith("workgroup") else "subgroup"
            operand = next((a for a in stmt.args if id(a) in reasons and not T.is_matrix(a.dtype)), None)
            if operand is not None:
                raise IRError(
                    f"{what} operand {name(operand)} differs within a {scope} (it depends on "
                    f"{reasons[id(operand)]}): {format_statement(stmt, name)}"
                )
        if isinstance(stmt, If):
            inner = context
            if id(stmt.cond) in reasons:
                cond = name(stmt.cond)
                inner = [*context, f"inside `if {cond}`, where {cond} depends on {reasons[id(stmt.cond)]}"]
            _check_uniform_flow(stmt.then, reasons, name, inner, picks, what)
            _check_uniform_flow(stmt.orelse, reasons, name, inner, picks, what)
        elif isinstance(stmt, Loop):
            inner = context
            bound = next((v for v in (stmt.start, stmt.end, stmt.step) if id(v) in reasons), None)
            if bound is not None:
                head = format_statement(stmt, name)
                where = f"inside `{head}`, where {name(bound)} depends on {reasons[id(bound)]}"
                inner = [*context, where]
            _check_uniform_flow(stmt.body, reasons, name, inner, picks, what)
