"""The CPU interpreter's fast path: the semantics of ``interp``, compiled once per kernel.

``interp._Chunk`` walks the IR tree for every chunk and looks each statement up as it goes.
Here a kernel is compiled once (cached per kernel object) into nested lists of Python
closures over numbered value slots: constants are made once, dead values are dropped by
slot, every numpy function is bound ahead of time. Loads and stores whose index is an affine
function of ``local_id(0)`` and ``workgroup_id(0)`` (plus values that are uniform over the
chunk) read and write strided views instead of gathering and scattering lane by lane
(``interp_views``). Index values known only by such a form, and read only by accesses and
by order comparisons with a constant, are not computed at all (``Program._deferrable``); a
pure ufunc may write its result over an operand that dies at it and that nothing else holds.

Every step computes what ``_Chunk`` computes for the same statement, lane for lane, and
raises the same errors (the slow cases call the same code); tests/test_interp_compiled.py
runs kernels both ways and compares bits. ``compile_kernel`` returns None for a kernel it
does not take (one the verifier rejects, or an instruction it does not know), which then
runs in the plain interpreter.
"""

from __future__ import annotations

import functools
import math
import sys
import weakref
from collections.abc import Callable

import numpy as np

from ...errors import IRError
from .. import lru
from .. import types as T
from ..core import Block, If, Instr, Kernel, Loop, Value, walk
from ..instructions import SPECS, VECTOR_WIDTH
from ..types import by_name
from ..verify import verify_kernel_once
from .lanes import narrow as _narrow
from .lanes import none_active as _none_active
from .views import DIV as _DIV
from .views import GROUP as _GROUP
from .views import LOCAL as _LOCAL
from .views import MOD as _MOD
from .views import ONE as _ONE
from .views import SWAPPED as _SWAPPED
from .views import Access as _Access
from .views import Deferred as _Deferred
from .views import decided as _decided
from .views import is_lane_form

_LANE_OPS = ("local_id", "workgroup_id", "global_id", "add", "sub", "mul", "shl", "idiv", "irem", "shr", "and")
_MAX_TERMS = 8  # a longer form is a value of its own (keeps compile time linear)
CHUNK_INVOCATIONS = 1 << 14  # lanes per chunk: a value is 64 KiB at 32 bits, so a kernel's live set stays in L2
# A kernel of few steps (an elementwise add: two loads, the add, the store) spends most of a
# 16K-lane chunk on the chunk's own setup; 64K lanes halve its time (measured on the op
# suite: add 144 -> 76 us, maximum 260 -> 138 us), while longer kernels slow down once their
# values outgrow L2 and the allocator's mmap threshold (128 KiB).
SHORT_KERNEL_STEPS = 24
SHORT_CHUNK_INVOCATIONS = 1 << 16

Step = Callable  # (state, values, mask) -> None


class _State:
    """What the steps of one chunk share: the plain chunk (ids, memory, errors) and its shape."""

    __slots__ = ("chunk", "memory", "lanes", "groups", "group_size", "first_group", "groups_1d", "views_ok", "ids")

    def __init__(self, chunk, first_group: int, groups_1d: bool, views_ok: dict[str, bool]):
        self.chunk = chunk
        self.memory = chunk.memory
        self.lanes = chunk.lanes
        self.group_size = chunk.group_size
        self.groups = chunk.lanes // chunk.group_size
        self.first_group = first_group
        self.groups_1d = groups_1d  # workgroup_id(0) is the linear workgroup index
        self.views_ok = views_ok  # per buffer: a load may return a view (nothing in the run writes it)
        self.ids: dict[tuple[str, int], np.ndarray] = {}

    def invocation_id(self, op: str, axis: int) -> np.ndarray:
        """``_Chunk.invocation_id``'s values, without its integer divisions where they are known."""
        key = (op, axis)
        ids = self.ids.get(key)
        if ids is None:
            ids = self.ids[key] = self._compute_id(op, axis)
        return ids

    def _compute_id(self, op: str, axis: int) -> np.ndarray:
        chunk = self.chunk
        local_size = chunk.kernel.local_size
        if op == "local_id" and local_size[axis] != 1:  # the same for every chunk of as many workgroups
            key = (tuple(local_size), axis, self.groups)
            if key not in _LOCAL_IDS:
                if len(_LOCAL_IDS) > 64:
                    _LOCAL_IDS.clear()
                _LOCAL_IDS[key] = chunk.invocation_id(op, axis)
            return _LOCAL_IDS[key]
        if op == "workgroup_id" and axis == 0 and self.groups_1d and chunk.grid[0] != 1:
            # The chunk's groups counted from 0 are the same for every chunk of as many: one add, not a repeat.
            key = ("groups", self.groups, self.group_size)
            if key not in _LOCAL_IDS:
                if len(_LOCAL_IDS) > 64:
                    _LOCAL_IDS.clear()
                _LOCAL_IDS[key] = np.repeat(np.arange(self.groups, dtype=np.uint32), self.group_size)
            return _LOCAL_IDS[key] + np.uint32(self.first_group)  # below the grid's group count: no wrap
        if op == "global_id":
            group = self.invocation_id("workgroup_id", axis)
            return group * np.uint32(local_size[axis]) + self.invocation_id("local_id", axis)
        return chunk.invocation_id(op, axis)


_LOCAL_IDS: dict[tuple, np.ndarray] = {}  # local_id and chunk-relative workgroup arrays, by shape (never written)


class Program:
    """A kernel compiled to closures; ``run_chunk`` executes one chunk like ``_Chunk.block``."""

    def __init__(self, kernel: Kernel, dead_after: dict[int, list[list[Value]]]):
        # No reference to the kernel itself: the cache must not keep it alive.
        self.name = kernel.name
        self.local_size = kernel.local_size
        self.shared_sizes = {a.name: a.size for a in kernel.shared}
        self.slots: dict[Value, int] = {}
        self.template: list = []  # a fresh chunk's slots: constants filled in, the rest None
        self.consts: set[Value] = set()
        self.local_1d = kernel.local_size[1] == kernel.local_size[2] == 1
        self.params = [(self._slot(p.value), p.value) for p in kernel.params]
        self.forms: dict[Value, dict] = {p.value: {p.value: 1} for p in kernel.params}
        instrs = [stmt for stmt in walk(kernel.body) if isinstance(stmt, Instr)]
        for instr in instrs:
            if instr.result is not None:
                self.forms[instr.result] = self._form(instr)
        # Values an access's index form reads stay alive to that access (their own last use may be earlier).
        self.keep = {
            term
            for i in instrs
            if SPECS.get(i.op) is not None and SPECS[i.op].kind == "memory"
            for term in self.forms.get(i.args[0], ())
            if isinstance(term, Value)
        }
        self.written = {i.attrs[0] for i in instrs if i.op in ("store", "vstore")}
        self.dead_after = dead_after
        self.group_size = math.prod(kernel.local_size)
        self.defs = {i.result: i for i in instrs if i.result is not None}
        self.deferred = self._deferrable(kernel.body, instrs)
        self.steps = 0  # instruction steps outside loops; a loop counts as a long kernel
        self.body = self._block(kernel.body)
        short = self.steps <= SHORT_KERNEL_STEPS
        self.chunk_invocations = SHORT_CHUNK_INVOCATIONS if short else CHUNK_INVOCATIONS

    # ---------------------------------------------------------------- running

    def run_chunk(self, chunk, first_group: int, groups_1d: bool, views_ok: dict[str, bool], params: dict) -> None:
        values = list(self.template)
        for slot, value in self.params:
            values[slot] = params[value]
        _run(self.body, _State(chunk, first_group, groups_1d, views_ok), values, None)

    def views_ok(self, buffers: dict[str, np.ndarray]) -> dict[str, bool]:
        """Per buffer: whether a load may alias it (no store of this kernel can reach its memory)."""
        written = [buffers[name] for name in self.written]
        return {
            name: name not in self.written and not any(np.may_share_memory(a, w) for w in written)
            for name, a in buffers.items()
        }

    # ---------------------------------------------------------------- compiling

    def _slot(self, value: Value) -> int:
        if value not in self.slots:
            self.slots[value] = len(self.template)
            self.template.append(None)
        return self.slots[value]

    def _block(self, block: Block) -> list[Step]:
        steps = []
        for stmt, dead in zip(block.body, self.dead_after[id(block)]):
            if isinstance(stmt, Instr):
                step = self._instr(stmt, dead)
            elif isinstance(stmt, If):
                step = self._if(stmt)
            elif isinstance(stmt, Loop):
                step = self._loop(stmt)
            else:
                raise _Unsupported(stmt)
            if step is not None:
                steps.append(step)
                self.steps += 1 if isinstance(stmt, Instr) else 0
            # Constants live in the template for the whole chunk (a loop body re-reads them).
            gone = tuple(
                self.slots[v]
                for v in dead
                if v in self.slots and v not in self.consts and v not in self.keep and v not in self.deferred
            )
            if gone:
                steps.append(_Clear(gone))
        return [_generate(self.name, steps)] if steps else []

    def _if(self, stmt: If) -> Step:
        cond = self._slot(stmt.cond)
        then, orelse = self._block(stmt.then), self._block(stmt.orelse)
        has_else = bool(stmt.orelse.body or stmt.results)
        merges = [
            (self._slot(r), self._slot(t), self._slot(e))
            for r, t, e in zip(stmt.results, stmt.then.yields, stmt.orelse.yields)
        ]

        def step(st: _State, v: list, mask) -> None:
            c = v[cond]
            then_mask = _narrow(mask, c, st.lanes)
            ran_then = not _none_active(then_mask)
            if ran_then:
                _run(then, st, v, then_mask)
            ran_else = False
            if has_else:
                else_mask = _narrow(mask, ~c, st.lanes)
                ran_else = not _none_active(else_mask)
                if ran_else:
                    _run(orelse, st, v, else_mask)
            for r, t, e in merges:
                if ran_then and ran_else:
                    v[r] = select(c, _get(st, v, t), _get(st, v, e))
                else:
                    v[r] = _get(st, v, t) if ran_then else _get(st, v, e)

        return step

    def _loop(self, loop: Loop) -> Step:
        self.steps += SHORT_KERNEL_STEPS + 1
        start, end, stride = self._slot(loop.start), self._slot(loop.end), self._slot(loop.step)
        inits = [self._slot(v) for v in loop.inits]
        index = self._slot(loop.index)
        carried = [self._slot(v) for v in loop.carried]
        body = self._block(loop.body)
        yields = [self._slot(v) for v in loop.body.yields]
        results = [self._slot(v) for v in loop.results]

        def step(st: _State, v: list, mask) -> None:
            i, stop, by = _get(st, v, start), _get(st, v, end), _get(st, v, stride)
            now = [_get(st, v, s) for s in inits]
            running = _narrow(mask, i < stop, st.lanes)
            if not _none_active(running):
                st.chunk._check_step(by, running)
            while not _none_active(running):
                v[index] = i
                for s, c in zip(carried, now):
                    v[s] = c
                _run(body, st, v, running)
                now = [_merge(running, _get(st, v, y), c) for y, c in zip(yields, now)]
                i = i + by  # a stopped lane never runs again, so its index may move on
                running = _narrow(running, i < stop, st.lanes)
            for s, c in zip(results, now):
                v[s] = c

        return step

    def _instr(self, instr: Instr, dead: list[Value] = ()) -> Step | None:
        op = instr.op
        spec = SPECS.get(op)
        if spec is None or spec.kind == "matrix" or op == "subgroup_id":
            raise _Unsupported(instr)  # cooperative matrices: one value per subgroup, the plain interpreter's
        args = tuple(self._slot(a) for a in instr.args)
        result = self._slot(instr.result) if instr.result is not None else None
        if op == "const":
            self.template[result] = np.array([instr.attrs[0]], dtype=instr.result.dtype.np)
            self.consts.add(instr.result)
            return None
        if instr.result in self.deferred:
            self.template[result] = _Deferred(self.forms[instr.result], instr.result.dtype.np)
            return None
        ranged = self._ranged_compare(instr)
        if ranged is not None:
            side, const = ranged
            bounded = _Deferred(self.forms[instr.args[side]], instr.args[side].dtype.np)
            return _compare(self.name, op, spec.np_fn, args, result, bounded, side, args[const], self.group_size)
        want = instr.result.dtype.np if instr.result is not None else None
        if op == "select":
            return _inline_or_pure(self.name, instr, select, args, (), result, want)
        if spec.kind == "pure":
            extra = (by_name(instr.attrs[0]),) if op in ("bitcast", "convert") else ()
            reusable = self._reusable(instr, dead)
            if reusable:
                return _pure_in_place(self.name, op, spec.np_fn, args, result, want, reusable)
            return _inline_or_pure(self.name, instr, spec.np_fn, args, extra, result, want)
        if spec.kind == "index":
            return _index(op, instr.attrs[0], result)
        if op in ("load", "shared_load", "vload"):
            component = int(instr.attrs[1]) if op == "vload" else None
            access = _Access(self, op, instr.attrs[0], instr.args[0], component)
            return _load(self.name, access, args[0], result, want)
        if op in ("store", "shared_store"):
            return _store(_Access(self, op, instr.attrs[0], instr.args[0], None), args[0], args[1])
        if op in ("vstore", "shared_vstore"):
            parts = [_Access(self, op, instr.attrs[0], instr.args[0], j) for j in range(VECTOR_WIDTH)]
            return _vstore(parts, args[0], args[1:])
        if op in ("barrier", "subgroup_barrier"):  # lock-step lanes: only uniformity to check
            return lambda st, v, mask: st.chunk.check_barrier(mask)
        if op == "shuffle_xor":
            return _shuffle(self.name, int(instr.attrs[0]), args[0], result, want)
        raise _Unsupported(instr)

    def _lane_form(self, value: Value) -> bool:
        """Whether ``value`` is an integer known by a form over lane terms alone (not a constant)."""
        form = self.forms.get(value)
        return (
            form is not None
            and value.dtype.is_int
            and form != {value: 1}
            and is_lane_form(form)
            and (value not in self.defs or self.defs[value].op != "const")
        )

    def _ranged_compare(self, instr: Instr) -> tuple[int, int] | None:
        """(side of the lane-form operand, side of the constant) for an order comparison of the two, else None."""
        if instr.op not in _SWAPPED:
            return None
        for side in (0, 1):
            arg, other = instr.args[side], instr.args[1 - side]
            if self._lane_form(arg) and other in self.defs and self.defs[other].op == "const":
                return side, 1 - side
        return None

    def _deferrable(self, body: Block, instrs: list[Instr]) -> set[Value]:
        """Index values no step needs computed: every use is an access's index (a view follows the form),
        an order comparison with a constant (decided by the form's range) or another such value.

        The index arithmetic of an elementwise kernel is then never run: ``workgroup_id * 64 +
        local_id`` and its bounds check ``< n`` become a view and, where the chunk lies inside the
        bounds, a uniform True. A slow path or an undecided comparison computes the lanes (``_value``).
        """
        candidates = {r for r, i in self.defs.items() if i.op in _LANE_OPS and self._lane_form(r)}
        needs: list[tuple[Value, Value | None]] = []  # (value, the result of the step that reads it)
        for i in instrs:
            kind = SPECS[i.op].kind if i.op in SPECS else None
            ranged = self._ranged_compare(i)
            for k, a in enumerate(i.args):
                if (kind == "memory" and k == 0) or (ranged is not None and k == ranged[0]):
                    continue
                needs.append((a, i.result))
        for stmt in walk(body):
            if isinstance(stmt, If):
                read = (stmt.cond, *stmt.then.yields, *stmt.orelse.yields)
            elif isinstance(stmt, Loop):
                read = (stmt.start, stmt.end, stmt.step, *stmt.inits, *stmt.body.yields)
            else:
                continue
            needs.extend((a, None) for a in read)
        needs.extend((a, None) for a in body.yields)
        deferred = set(candidates)
        changed = True
        while changed:
            changed = False
            for value, reader in needs:
                if value in deferred and reader not in deferred:
                    deferred.discard(value)
                    changed = True
        return deferred

    def _reusable(self, instr: Instr, dead: list[Value]) -> tuple[int, ...]:
        """Positions of ``instr``'s operands whose array its ufunc may overwrite with the result.

        An operand qualifies when this instruction is its last use (``dead``), it is not a
        constant or a value kept for an access's index, and the ufunc computes the
        operand's own dtype from these operand types (dtype resolution does not depend on
        shapes, so a one-lane trial decides). At run time the array must also be owned by
        nothing else (``_owned``). Writing the result over an operand that dies here keeps the
        working set smaller (a lone chain of in-place ufuncs at 16K lanes runs ~2x faster; in the
        op suite's kernels, with several values live, the gain is a few percent).
        """
        fn = SPECS[instr.op].np_fn
        if not isinstance(fn, np.ufunc) or fn.nout != 1 or instr.result is None:
            return ()
        want = instr.result.dtype.np
        try:
            trial = fn(*(np.zeros(1, dtype=a.dtype.np) for a in instr.args))
        except TypeError:
            return ()
        if trial.dtype != want:
            return ()
        return tuple(
            k
            for k, a in enumerate(instr.args)
            if a in dead and a not in self.consts and a not in self.keep and a.dtype.np == want
        )

    def _form(self, instr: Instr) -> dict:
        """``instr``'s result as an affine form, exact modulo 2^bits of its integer type."""
        result = instr.result
        opaque = {result: 1}
        if not result.dtype.is_int:
            return opaque
        op, attrs = instr.op, instr.attrs
        if op == "const":
            return {_ONE: int(attrs[0])}
        if op == "local_id" and attrs[0] == 0 and self.local_1d:
            return {_LOCAL: 1}
        if op == "workgroup_id" and attrs[0] == 0:
            return {_GROUP: 1}
        if op == "global_id" and attrs[0] == 0 and self.local_1d:
            return {_LOCAL: 1, _GROUP: self.local_size[0]}
        if op not in ("add", "sub", "mul", "shl", "idiv", "irem", "shr", "and"):
            return opaque
        a, b = (self.forms.get(x, {x: 1}) for x in instr.args)
        if op in ("idiv", "irem", "shr", "and"):
            return self._split(op, a, b, result) or opaque
        if op == "add":
            form = _combine(a, b, 1)
        elif op == "sub":
            form = _combine(a, b, -1)
        elif op == "mul" and set(b) == {_ONE}:
            form = {k: c * b[_ONE] for k, c in a.items()}
        elif op == "mul" and set(a) == {_ONE}:
            form = {k: c * a[_ONE] for k, c in b.items()}
        elif op == "shl" and set(b) == {_ONE} and instr.args[1].dtype is result.dtype:
            form = {k: c << (b[_ONE] & (8 * result.dtype.nbytes - 1)) for k, c in a.items()}
        else:
            return opaque
        return form if len(form) <= _MAX_TERMS else opaque

    def _split(self, op: str, a: dict, b: dict, result: Value) -> dict | None:
        """``local_id(0)`` divided by or reduced modulo a constant that divides the group size, as a form."""
        if a != {_LOCAL: 1} or set(b) != {_ONE} or result.dtype is not T.uint32:
            return None
        c = b[_ONE]
        if op == "shr":
            op, c = "idiv", 1 << (c & 31)
        elif op == "and":
            if c < 0 or (c + 1) & c:  # and with 2^k - 1 is the remainder modulo 2^k
                return None
            op, c = "irem", c + 1
        size = self.local_size[0]
        if c <= 0 or size % c:
            return None
        return {(_DIV if op == "idiv" else _MOD, c): 1}


class _Unsupported(Exception):
    """A statement the compiler leaves to the plain interpreter."""


def _combine(a: dict, b: dict, sign: int) -> dict:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, 0) + sign * c
    return {k: c for k, c in out.items() if c != 0}


# ---------------------------------------------------------------- the cache


# By kernel object (its id, checked by a weak reference), LRU-bounded (ir/lru.py: "programs"): a
# loop whose shapes change every step makes new kernels every step, and a program is large.
_programs = lru.LRU("programs", weight=lambda entry: _program_bytes(entry[1]))


def _program_bytes(program: Program | None) -> int:
    """About what a program holds: closures and slots, some 300 bytes an instruction (tracemalloc)."""
    return 64 if program is None else 1024 * (len(program.defs) + 1)


def compile_kernel(kernel: Kernel, dead_after: Callable[[Kernel], dict]) -> Program | None:
    """The compiled form of ``kernel`` (made once per kernel object), or None: run it plainly."""
    key = id(kernel)
    cached = _programs.get(key)
    if cached is not None and cached[0]() is kernel:
        return cached[1]
    program = _compile(kernel, dead_after)
    _programs.put(key, (weakref.ref(kernel, functools.partial(_forget, key)), program))
    return program


def _forget(key: int, ref: weakref.ref) -> None:
    """A kernel died: drop its program, unless its id already names a newer kernel's."""
    found = _programs.get(key)
    if found is not None and found[0] is ref:
        _programs.pop(key)


def _compile(kernel: Kernel, dead_after: Callable[[Kernel], dict]) -> Program | None:
    try:
        verify_kernel_once(kernel)  # the plain interpreter gives an ill-formed kernel's errors
        return Program(kernel, dead_after(kernel))
    except (IRError, _Unsupported):
        return None


# ---------------------------------------------------------------- steps


def _run(steps: list[Step], st: _State, v: list, mask) -> None:
    for step in steps:
        step(st, v, mask)


def _get(st: _State, v: list, slot: int) -> np.ndarray:
    value = v[slot]
    if value is None:  # the verifier rules this out; kept so a slip reads like the plain interpreter's
        raise IRError(f"kernel {st.chunk.kernel.name!r}: a value is used before it is defined")
    return value


class _Clear:
    """Drop the values of ``slots`` (they are dead): a line of the generated block."""

    def __init__(self, slots: tuple[int, ...]):
        self.slots = slots


class _Inline:
    """A pure instruction whose numpy function is known to give its type: a line of the generated block."""

    def __init__(self, fn: Callable, args: tuple, extra: tuple, result: int):
        self.fn, self.args, self.extra, self.result = fn, args, extra, result


def _inline_or_pure(kernel: str, instr: Instr, fn: Callable, args: tuple, extra: tuple, result: int, want):
    """An ``_Inline`` where a one-lane trial on the operands' types gives ``want``, else a checked ``_pure`` step.

    Every value the steps see has its declared type (loads, parameters and constants are made
    so, and every step is checked or trial-checked), and numpy's result type depends on the
    operand types alone, not their lengths: the trial's type is every run's type.
    """
    try:
        with np.errstate(all="ignore"):
            trial = fn(*(np.zeros(1, dtype=a.dtype.np) for a in instr.args), *extra)
    except Exception:  # noqa: BLE001  (the checked step raises the same error at run time)
        trial = None
    if isinstance(trial, np.ndarray) and trial.dtype == want:
        return _Inline(fn, args, extra, result)
    return _pure(kernel, instr.op, fn, args, extra, result, want)


def _generate(kernel: str, items: list) -> Step:
    """One Python function running a block's steps in order, pure instructions and drops written inline.

    A block of a long kernel (softmax's row kernel runs ~2700 steps a chunk) otherwise pays a
    closure call, a loop turn and a type check per instruction and a call per drop; here an
    inline instruction is one line ``v[r] = f(v[a], v[b])``.
    """
    names: dict[str, object] = {}
    lines = ["def block(st, v, mask):"]
    for k, item in enumerate(items):
        if isinstance(item, _Clear):
            lines.append("    " + "; ".join(f"v[{slot}] = None" for slot in item.slots))
        elif isinstance(item, _Inline):
            names[f"f{k}"] = item.fn
            operands = [f"v[{a}]" for a in item.args]
            for j, extra in enumerate(item.extra):
                names[f"e{k}_{j}"] = extra
                operands.append(f"e{k}_{j}")
            lines.append(f"    v[{item.result}] = f{k}({', '.join(operands)})")
        else:
            names[f"s{k}"] = item
            lines.append(f"    s{k}(st, v, mask)")
    namespace = dict(names)
    exec(compile("\n".join(lines), f"<kernel {kernel}>", "exec"), namespace)  # noqa: S102  (our own lines)
    return namespace["block"]


_COUNT_LANES = 1 << 14
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.where(cond, a, b)`` for operands of one dtype, as a bitwise blend of their bits.

    The same bits by construction (b ^ ((a ^ b) * 1) is a, b ^ ((a ^ b) * 0) is b: an integer
    product by 0 or 1 is exact) and no branch per lane: np.where is several times slower on an
    unpredictable condition. Where the condition is the same on every lane the result is that
    operand itself (an in-place step then sees two references and leaves it alone: ``_owned``).

    >>> select(np.array([True, False]), np.float32([1, 2]), np.float32([3, 4]))
    array([1., 4.], dtype=float32)
    """
    bits = _UNSIGNED.get(a.dtype.itemsize)
    if a.dtype != b.dtype or bits is None or cond.dtype != np.bool_:
        return np.where(cond, a, b)
    # Most conditions in the math library's special-case selects hold on no lane or on all.
    lanes = cond.shape[0]
    if lanes > 1:
        if lanes <= _COUNT_LANES:  # one count answers both, in about a third of any() plus all()
            held = np.count_nonzero(cond)
            none, every = held == 0, held == lanes
        else:  # on a long condition any() and all() cost less than a count (measured)
            none = not cond.any()
            every = not none and cond.all()
        if none and b.shape == cond.shape:
            return b
        if every and a.shape == cond.shape:
            return a
    ua, ub = a.view(bits), b.view(bits)
    keep = cond.astype(bits)  # 1 where a is taken: (a ^ b) * 1 is a ^ b, times 0 it is 0
    out = np.bitwise_xor(ua, ub)
    if out.shape != keep.shape:  # broadcast: an operand or the condition is one lane
        out = np.multiply(out, keep)
    else:
        np.multiply(out, keep, out=out)
    np.bitwise_xor(out, ub, out=out)
    return out.view(a.dtype)


def _merge(mask, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``interp.merge``: ``new`` on the lanes of ``mask``, ``old`` elsewhere."""
    return new if mask is None else select(mask, new, old)


def _wrong_type(kernel: str, op: str, out: np.ndarray, want: np.dtype):
    return IRError(f"kernel {kernel!r}: {op} produced {out.dtype}, its type is {np.dtype(want).name}")


def _pure(kernel: str, op: str, fn: Callable, args: tuple, extra: tuple, result: int, want) -> Step:
    if len(args) == 1 and not extra:
        (a,) = args

        def step(st: _State, v: list, mask) -> None:
            out = fn(v[a])
            if out.dtype != want:
                raise _wrong_type(kernel, op, out, want)
            v[result] = out

    elif len(args) == 2:
        a, b = args

        def step(st: _State, v: list, mask) -> None:
            out = fn(v[a], v[b])
            if out.dtype != want:
                raise _wrong_type(kernel, op, out, want)
            v[result] = out

    else:

        def step(st: _State, v: list, mask) -> None:
            out = fn(*(v[s] for s in args), *extra)
            if out.dtype != want:
                raise _wrong_type(kernel, op, out, want)
            v[result] = out

    return step


def _owned(x: np.ndarray, others: int) -> bool:
    """Whether nothing but its slot, the calling step's local and ``others`` more references hold ``x``.

    Then writing over it changes no other value: a view of it (a bitcast) would hold a
    reference through its base, a cached index array one through its cache, a buffer's view
    or a constant has a base or a single lane.
    """
    return x.shape[0] != 1 and x.base is None and sys.getrefcount(x) <= 4 + others


def _pure_in_place(kernel: str, op: str, fn: np.ufunc, args: tuple, result: int, want, reusable: tuple) -> Step:
    """``_pure`` for a ufunc that writes its result over an operand dying here, when that operand is owned."""
    if len(args) == 1:
        (a,) = args

        def step(st: _State, v: list, mask) -> None:
            x = v[a]
            v[result] = fn(x, out=x) if _owned(x, 0) else fn(x)

        return step
    if len(args) != 2:
        return _pure(kernel, op, fn, args, (), result, want)
    a, b = args
    first, second = 0 in reusable, 1 in reusable

    def step(st: _State, v: list, mask) -> None:
        x, y = v[a], v[b]
        if first and x is not y and _owned(x, 0) and x.shape[0] >= y.shape[0]:
            out = fn(x, y, out=x)
        elif second and x is not y and _owned(y, 0) and y.shape[0] >= x.shape[0]:
            out = fn(x, y, out=y)
        else:
            out = fn(x, y)
            if out.dtype != want:
                raise _wrong_type(kernel, op, out, want)
        v[result] = out

    return step


def _value(st: _State, v: list, slot: int) -> np.ndarray:
    """The slot's array, computing a deferred index value's lanes on first need."""
    value = v[slot]
    if isinstance(value, _Deferred):
        value = v[slot] = value.materialize(st)
    return value


def _compare(kernel: str, op: str, fn, args: tuple, result: int, bounded: _Deferred, side: int, const: int, size: int):
    """An order comparison of a lane form with a constant: uniform where the form's range decides it."""
    a, b = args
    oriented = op if side == 0 else _SWAPPED[op]  # the form on the left

    def step(st: _State, v: list, mask) -> None:
        answer = _decided(oriented, bounded.bounds(st, size), int(v[const][0]))
        if answer is not None:
            v[result] = np.ones(1, dtype=np.bool_) if answer else np.zeros(1, dtype=np.bool_)
            return
        out = fn(_value(st, v, a), _value(st, v, b))
        if out.dtype != np.bool_:
            raise _wrong_type(kernel, op, out, np.bool_)
        v[result] = out

    return step


def _index(op: str, axis: int, result: int) -> Step:
    def step(st: _State, v: list, mask) -> None:
        v[result] = st.invocation_id(op, axis)

    return step


def _shuffle(kernel: str, xor_mask: int, arg: int, result: int, want) -> Step:
    def step(st: _State, v: list, mask) -> None:
        out = st.chunk.shuffle_xor(v[arg], xor_mask, mask)
        if out.dtype != want:
            raise _wrong_type(kernel, "shuffle_xor", out, want)
        v[result] = out

    return step


# ---------------------------------------------------------------- memory (views: interp_views)


def _load(kernel: str, access: _Access, index: int, result: int, want) -> Step:
    op, name = access.op, access.name
    component = access.offset if access.vector else None

    def step(st: _State, v: list, mask) -> None:
        view = access.view(st, v)
        if view is not None:
            flat = view.reshape(-1)  # a copy unless numpy can keep it a view
            aliased = np.may_share_memory(flat, view)
            if aliased and (access.shared or not st.views_ok[name] or flat.strides[0] != flat.itemsize):
                flat = flat.copy()  # a later store must not change a loaded value
            out = flat if mask is None else select(mask, flat, access.inactive(st))
        else:
            at = access.slow_index(_value(st, v, index), component)
            out = st.memory.load(op, name, at, mask, st.chunk.lane_description)
        if out.dtype != want:
            raise _wrong_type(kernel, op, out, want)
        v[result] = out

    return step


def _store_one(st: _State, access: _Access, v: list, index: int, value: np.ndarray, mask) -> None:
    view = access.view(st, v)
    if view is not None and value.dtype == view.dtype and access.distinct(view):
        value = value.reshape(view.shape) if value.shape[0] != 1 else value[0]
        if mask is None:
            view[...] = value
        else:
            np.copyto(view, value, where=mask.reshape(view.shape))
        return
    at = access.slow_index(_value(st, v, index), access.offset if access.vector else None)
    st.memory.store(access.op, access.name, at, value, mask, st.chunk.lane_description)


def _store(access: _Access, index: int, value: int) -> Step:
    def step(st: _State, v: list, mask) -> None:
        _store_one(st, access, v, index, v[value], mask)

    return step


def _vstore(parts: list[_Access], index: int, values: tuple[int, ...]) -> Step:
    def step(st: _State, v: list, mask) -> None:
        for access, value in zip(parts, values):
            _store_one(st, access, v, index, v[value], mask)

    return step
