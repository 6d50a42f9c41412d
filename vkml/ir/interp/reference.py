"""The CPU reference interpreter: the executable definition of what kernel IR means.

Each IR instruction runs once over every simulated invocation with numpy, in lock-step.
A value is a numpy array with one entry per invocation, or a one-entry array when it is the
same for all of them (constants, parameters, anything computed only from those); numpy
broadcasting mixes the two. Every statement runs under an *active mask*: ``None`` when all
invocations are active (the common case, which skips all masking work), else a bool array.
This module is the definition; ``run`` normally executes the kernel compiled once into closures
(``interp_compiled``: the same bits, 2-7x faster), and ``run(..., plain=True)`` walks it here.

    kb = KernelBuilder("double", local_size=(64, 1, 1))
    x, out = kb.buffer("x", float32, "read"), kb.buffer("out", float32, "write")
    n = kb.param("n", uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            out[i] = x[i] + x[i]
    run(kb.finish(), (2, 1, 1), {"x": xs, "out": result}, {"n": 100})

Semantics fixed here (Vulkan leaves some of them undefined; kernels must not rely on those):

- Pure instructions compute ``SPECS[op].np_fn`` under ``np.errstate(all="ignore")``.
- ``If`` runs ``then`` under mask & cond and ``orelse`` under mask & ~cond; results merge by lane.
- ``Loop`` bounds may differ per invocation; an invocation stops when its index reaches ``end``
  (signed compare for signed index types); carried values change only where it still runs.
- An active invocation that loads or stores out of range raises ``IndexError``.
- Several active invocations storing to one address in one instruction: the highest
  invocation (workgroup-major, then local linear index) wins.
- ``vload x[q], c`` is ``x[4q + c]``; ``vstore x[q], a, b, c, d`` stores ``x[4q + j]`` for each j
  (the vector forms change how Vulkan accesses memory, never what a kernel computes); so does
  ``shared_vstore`` for a shared array.
- Shared arrays start zeroed. ``barrier`` needs no action in lock-step execution, but the
  active mask must be uniform per workgroup (else ``IRError``).
- ``shuffle_xor`` reads the invocation whose local linear index is ours xor the mask; an
  inactive or missing partner gives our own value.
- ``subgroup_id`` is the local linear index // the kernel's ``subgroup_size``; cooperative
  matrices (``cm_*``) hold one value per subgroup: ``interp_matrix`` defines them.
- Workgroups run in chunks of whole workgroups, in linear workgroup order, to bound memory
  (invocations of different workgroups that touch one address race on Vulkan; here the chunk
  size decides, so kernels must not rely on it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

import numpy as np

from ...errors import IRError
from .. import builder as B
from .. import types as T
from ..core import Block, If, Instr, Kernel, Loop, Value
from ..instructions import SPECS, VECTOR_WIDTH
from . import compiled as interp_compiled
from . import matrix as interp_matrix
from .lanes import Mask, narrow, none_active
from .memory import Memory

DEFAULT_MAX_INVOCATIONS = 1 << 18  # per chunk: ~1 MiB per 32-bit value, cache-friendly


def run(
    kernel: Kernel,
    grid: tuple[int, int, int],
    buffers: Mapping[str, np.ndarray],
    params: Mapping[str, int | float | np.generic],
    *,
    max_invocations: int | None = None,
    plain: bool = False,
) -> None:
    """Execute ``kernel`` over ``grid`` workgroups, writing into ``buffers`` in place.

    ``buffers`` maps every declared buffer to a 1-D array of its dtype; ``params`` maps every
    parameter to a scalar, converted to the declared dtype. ``max_invocations`` bounds how
    many invocations are simulated at once (whole workgroups are never split; the default
    keeps a chunk's values in cache). The kernel runs compiled (``interp_compiled``, the same
    bits) unless ``plain`` is set or the compiler does not take it; plain mode walks the IR
    statement by statement and is the definition below.

    >>> run(kernel, (4, 1, 1), {"x": xs, "out": out}, {"n": 256})
    """
    grid = _check_grid(kernel, grid)
    arrays = _check_buffers(kernel, buffers)
    param_values = _check_params(kernel, params)
    group_size = int(math.prod(kernel.local_size))  # not np.prod: per dispatch, and several µs on a tuple
    if group_size <= 0:
        raise IRError(f"kernel {kernel.name!r}: local_size {kernel.local_size} must be positive")
    total_groups = grid[0] * grid[1] * grid[2]
    program = None if plain else interp_compiled.compile_kernel(kernel, dead_values)
    if max_invocations is None:
        max_invocations = DEFAULT_MAX_INVOCATIONS if program is None else program.chunk_invocations
    groups_per_chunk = max(1, max_invocations // group_size)
    dead_after = dead_values(kernel) if program is None else {}
    views_ok = program.views_ok(arrays) if program is not None else {}
    groups_1d = grid[1] == grid[2] == 1
    with np.errstate(all="ignore"):
        for first in range(0, total_groups, groups_per_chunk):
            last = min(first + groups_per_chunk, total_groups)
            chunk = _Chunk(kernel, grid, range(first, last), arrays, param_values, dead_after)
            if program is None:
                chunk.block(kernel.body, None)
            else:
                program.run_chunk(chunk, first, groups_1d, views_ok, param_values)


def evaluate(fn: Callable, *arrays: np.ndarray, local_size: int = 64) -> np.ndarray | tuple[np.ndarray, ...]:
    """Run the elementwise DSL function ``fn`` over 1-D arrays; return its output array(s).

    ``fn`` receives one loaded Value per input array and returns a Value or a tuple of them.

    >>> evaluate(lambda a, b: a * b + a, np.float32([1, 2]), np.float32([3, 4]))
    array([ 4., 10.], dtype=float32)
    """
    inputs = [np.asarray(a) for a in arrays]
    if not inputs:
        raise ValueError("evaluate needs at least one input array")
    for k, a in enumerate(inputs):
        if a.ndim != 1 or len(a) != len(inputs[0]):
            raise ValueError(f"evaluate: input {k} has shape {a.shape}; inputs must be 1-D of one length")
    kb = B.KernelBuilder("evaluate", local_size=(local_size, 1, 1))
    refs = [kb.buffer(f"in{k}", T.from_numpy(a.dtype), "read") for k, a in enumerate(inputs)]
    n = kb.param("n", T.uint32)
    with kb:
        i = B.global_id(0)
        with B.if_(i < n):
            result = fn(*(ref[i] for ref in refs))
            outputs = result if isinstance(result, tuple) else (result,)
            for k, value in enumerate(outputs):
                if not isinstance(value, Value):
                    raise ValueError(f"evaluate: fn returned {value!r} as output {k}; expected IR Values")
                kb.buffer(f"out{k}", value.dtype, "write")[i] = value
    kernel = kb.finish()
    length = len(inputs[0])
    results = [np.zeros(length, dtype=v.dtype.np) for v in outputs]
    buffers = {f"in{k}": a for k, a in enumerate(inputs)} | {f"out{k}": r for k, r in enumerate(results)}
    run(kernel, (-(-length // local_size), 1, 1), buffers, {"n": length})
    return tuple(results) if isinstance(result, tuple) else results[0]


# ---------------------------------------------------------------- argument checks


def _check_grid(kernel: Kernel, grid) -> tuple[int, int, int]:
    if grid.__class__ is tuple and len(grid) == 3:  # what the scheduler gives: checked without generators
        x, y, z = grid
        if x.__class__ is int and y.__class__ is int and z.__class__ is int and x >= 0 and y >= 0 and z >= 0:
            return grid
    grid = tuple(grid)
    if len(grid) != 3 or any(not isinstance(g, (int, np.integer)) or g < 0 for g in grid):
        raise ValueError(f"kernel {kernel.name!r}: grid must be three non-negative ints, got {grid}")
    return tuple(int(g) for g in grid)


def _check_buffers(kernel: Kernel, buffers: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    declared = {b.name for b in kernel.buffers}
    _check_names(kernel, "buffer", declared, set(buffers))
    for decl in kernel.buffers:
        a = buffers[decl.name]
        if not isinstance(a, np.ndarray) or a.ndim != 1:
            shape = getattr(a, "shape", type(a).__name__)
            raise ValueError(f"kernel {kernel.name!r}: buffer {decl.name!r} must be a 1-D numpy array, got {shape}")
        if a.dtype != _scalar_type(decl.dtype)[0]:
            raise ValueError(
                f"kernel {kernel.name!r}: buffer {decl.name!r} is declared {decl.dtype.name} but the array is {a.dtype}"
            )
        if decl.access != "read" and not a.flags.writeable:
            raise ValueError(f"kernel {kernel.name!r}: buffer {decl.name!r} ({decl.access}) is not writeable")
    return dict(buffers)


def _check_params(kernel: Kernel, params: Mapping) -> dict[Value, np.ndarray]:
    _check_names(kernel, "param", {p.name for p in kernel.params}, set(params))
    values = {}
    for decl in kernel.params:
        given = params[decl.name]
        try:
            scalar = _to_dtype(given, decl.dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise ValueError(
                f"kernel {kernel.name!r}: param {decl.name!r} = {given!r} does not fit {decl.dtype.name}: {e}"
            ) from None
        values[decl.value] = np.array([scalar])  # of the scalar's own dtype, decl.dtype's
    return values


# dtype name -> (numpy dtype, its scalar type, and for integers the range): every dispatch of the CPU
# device checks each buffer's dtype and converts each parameter, and np.iinfo and DType.np build new
# objects on each call.
_SCALARS: dict[str, tuple] = {}


def _scalar_type(dtype: T.DType) -> tuple:
    found = _SCALARS.get(dtype.name)
    if found is None:
        np_dtype = dtype.np
        if dtype.is_int:
            info = np.iinfo(np_dtype)
            found = (np_dtype, np_dtype.type, int(info.min), int(info.max))
        else:
            found = (np_dtype, np_dtype.type, None, None)
        _SCALARS[dtype.name] = found
    return found


def _to_dtype(value, dtype: T.DType):
    _, make, low, high = _scalar_type(dtype)
    if low is not None:
        if isinstance(value, (bool, np.bool_)) or int(value) != value:
            raise ValueError("not an integer")
        if not low <= int(value) <= high:
            raise ValueError(f"outside [{low}, {high}]")
        return make(int(value))
    return make(value)


def _check_names(kernel: Kernel, what: str, declared: set, given: set) -> None:
    missing, extra = sorted(declared - given), sorted(given - declared)
    if missing or extra:
        raise ValueError(
            f"kernel {kernel.name!r}: {what}s do not match the declaration "
            f"(missing: {missing or 'none'}, unexpected: {extra or 'none'})"
        )


# ---------------------------------------------------------------- masks


def merge(mask: Mask, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``new`` on the lanes of ``mask``, ``old`` elsewhere."""
    return new if mask is None else np.where(mask, new, old)


def _vector_element(index: np.ndarray, component: int) -> np.ndarray:
    """The element index ``VECTOR_WIDTH * index + component`` (64-bit: no wrap-around)."""
    return index.astype(np.int64) * VECTOR_WIDTH + component


# ---------------------------------------------------------------- freeing dead values


def dead_values(kernel: Kernel) -> dict[int, list[list[Value]]]:
    """Per block (by id) and statement: the values of that block that are dead after it.

    Only bounds memory: a value is dropped after the last statement of its own block that
    uses it (a use inside a nested block counts for the enclosing statement, so values stay
    alive through a loop that reads them). Values a block yields are kept.
    """
    dead: dict[int, list[list[Value]]] = {}

    def visit(block: Block, defined_on_entry: tuple[Value, ...]) -> None:
        last_use: dict[Value, int] = {v: -1 for v in defined_on_entry}
        for j, stmt in enumerate(block.body):
            for v in _used(stmt):
                if v in last_use:
                    last_use[v] = j
            for v in _defined(stmt):
                last_use[v] = j
            if isinstance(stmt, If):
                visit(stmt.then, ())
                visit(stmt.orelse, ())
            elif isinstance(stmt, Loop):
                visit(stmt.body, (stmt.index, *stmt.carried))
        for v in block.yields:
            last_use.pop(v, None)
        per_stmt: list[list[Value]] = [[] for _ in block.body]
        for v, j in last_use.items():
            if j >= 0:
                per_stmt[j].append(v)
        dead[id(block)] = per_stmt

    visit(kernel.body, tuple(p.value for p in kernel.params))
    return dead


def _defined(stmt) -> tuple[Value, ...]:
    if isinstance(stmt, Instr):
        return (stmt.result,) if stmt.result is not None else ()
    return stmt.results


def _used(stmt):
    """Every value ``stmt`` reads, its nested blocks included."""
    if isinstance(stmt, Instr):
        yield from stmt.args
    elif isinstance(stmt, If):
        yield stmt.cond
        for block in (stmt.then, stmt.orelse):
            for inner in block.body:
                yield from _used(inner)
            yield from block.yields
    elif isinstance(stmt, Loop):
        yield from (stmt.start, stmt.end, stmt.step, *stmt.inits)
        for inner in stmt.body.body:
            yield from _used(inner)
        yield from stmt.body.yields


# ---------------------------------------------------------------- execution


class _Chunk:
    """Whole workgroups ``groups`` (linear indices) executed together in lock-step."""

    def __init__(self, kernel: Kernel, grid, groups: range, buffers: dict, params: dict, dead_after: dict):
        self.kernel = kernel
        self.dead_after = dead_after
        self.grid = grid
        self.group_size = math.prod(kernel.local_size)
        self.groups = groups
        self.lanes = len(groups) * self.group_size
        self.values: dict[Value, np.ndarray] = dict(params)
        self.memory = Memory(kernel, groups, self.group_size, buffers)
        self._ids: dict[tuple, np.ndarray] = {}
        self.subgroups = interp_matrix.Subgroups(kernel, self.lanes, self.group_size)
        self.workgroups = interp_matrix.Subgroups(kernel, self.lanes, self.group_size, size=self.group_size)

    # Lane l belongs to workgroup groups[l // group_size], local linear index l % group_size
    # (made on first use: a compiled kernel often needs neither).

    @functools.cached_property
    def local_linear(self) -> np.ndarray:
        return np.tile(np.arange(self.group_size, dtype=np.uint32), len(self.groups))

    @functools.cached_property
    def group_linear(self) -> np.ndarray:
        return np.repeat(np.arange(self.groups.start, self.groups.stop, dtype=np.uint32), self.group_size)

    # -- statements

    def block(self, block: Block, mask: Mask) -> None:
        dead_after = self.dead_after[id(block)]
        for stmt, dead in zip(block.body, dead_after):
            if isinstance(stmt, Instr):
                self.instr(stmt, mask)
            elif isinstance(stmt, If):
                self.if_(stmt, mask)
            elif isinstance(stmt, Loop):
                self.loop(stmt, mask)
            else:
                raise IRError(f"kernel {self.kernel.name!r}: unknown statement {stmt!r}")
            for value in dead:
                self.values.pop(value, None)

    def if_(self, stmt: If, mask: Mask) -> None:
        cond = self.get(stmt.cond)
        then_mask = narrow(mask, cond, self.lanes)
        ran_then = not none_active(then_mask)
        if ran_then:
            self.block(stmt.then, then_mask)
        ran_else = False
        if stmt.orelse.body or stmt.results:
            else_mask = narrow(mask, ~cond, self.lanes)
            ran_else = not none_active(else_mask)
            if ran_else:
                self.block(stmt.orelse, else_mask)
        for result, t, e in zip(stmt.results, stmt.then.yields, stmt.orelse.yields):
            if ran_then and ran_else:
                self.values[result] = self.merge(result, cond, self.get(t), self.get(e))
            else:
                self.values[result] = self.get(t) if ran_then else self.get(e)

    def loop(self, loop: Loop, mask: Mask) -> None:
        index, end, step = self.get(loop.start), self.get(loop.end), self.get(loop.step)
        carried = [self.get(v) for v in loop.inits]
        running = narrow(mask, index < end, self.lanes)
        if not none_active(running):
            self._check_step(step, running)
        while not none_active(running):
            self.values[loop.index] = index
            self.values.update(zip(loop.carried, carried))
            self.block(loop.body, running)
            carried = [
                self.merge(v, running, self.get(y), c) for v, y, c in zip(loop.carried, loop.body.yields, carried)
            ]
            # A lane that stopped never runs again (running only shrinks), so its index may move on.
            index = index + step
            running = narrow(running, index < end, self.lanes)
        self.values.update(zip(loop.results, carried))

    def merge(self, value: Value, mask: Mask, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        """``new`` where ``mask`` holds, else ``old``, for ``value`` (per lane, or per subgroup for a matrix)."""
        if T.is_matrix(value.dtype):
            return interp_matrix.merge(interp_matrix.holders(self, value.dtype), mask, new, old)
        return merge(mask, new, old)

    def _check_step(self, step: np.ndarray, running: Mask) -> None:
        bad = step <= 0 if running is None else (step <= 0) & running
        if bad.any():
            lane = int(np.argmax(bad))
            value = step[lane if step.shape[0] > 1 else 0]
            raise IRError(
                f"kernel {self.kernel.name!r}: loop step must be positive, got {value} ({self.lane_description(lane)})"
            )

    # -- instructions

    def instr(self, instr: Instr, mask: Mask) -> None:
        op = instr.op
        spec = SPECS.get(op)
        if spec is None:
            raise IRError(f"kernel {self.kernel.name!r}: unknown instruction {op!r}")
        args = [self.get(a) for a in instr.args]
        if spec.kind == "matrix":
            out = interp_matrix.execute(self, instr, args, mask)
            if out is not None:
                self.values[instr.result] = out
            return
        if spec.kind == "pure":
            extra = (T.by_name(instr.attrs[0]),) if op in ("bitcast", "convert") else ()
            out = spec.np_fn(*args, *extra)
        elif op == "const":
            out = np.array([instr.attrs[0]], dtype=instr.result.dtype.np)
        elif spec.kind == "index":
            out = self.invocation_id(op, instr.attrs[0])
        elif op == "subgroup_id":
            out = self.local_linear // np.uint32(self.kernel.subgroup_size)
        elif op in ("load", "shared_load"):
            out = self.memory.load(op, instr.attrs[0], args[0], mask, self.lane_description)
        elif op in ("store", "shared_store"):
            self.memory.store(op, instr.attrs[0], args[0], args[1], mask, self.lane_description)
            return
        elif op == "vload":
            at = _vector_element(args[0], int(instr.attrs[1]))
            out = self.memory.load(op, instr.attrs[0], at, mask, self.lane_description)
        elif op in ("vstore", "shared_vstore"):
            for j, value in enumerate(args[1:]):
                at = _vector_element(args[0], j)
                self.memory.store(op, instr.attrs[0], at, value, mask, self.lane_description)
            return
        elif op in ("barrier", "subgroup_barrier"):  # lock-step lanes: only uniformity to check
            self.check_barrier(mask)
            return
        elif op == "shuffle_xor":
            out = self.shuffle_xor(args[0], int(instr.attrs[0]), mask)
        else:
            raise IRError(f"kernel {self.kernel.name!r}: the interpreter does not know instruction {op!r}")
        if out.dtype != instr.result.dtype.np:  # the table's numpy function disagrees with its type rule
            raise IRError(
                f"kernel {self.kernel.name!r}: {op} produced {out.dtype}, its type is {instr.result.dtype.name}"
            )
        self.values[instr.result] = out

    def get(self, value: Value) -> np.ndarray:
        try:
            return self.values[value]
        except KeyError:
            raise IRError(f"kernel {self.kernel.name!r}: {value!r} is used before it is defined") from None

    def invocation_id(self, op: str, axis: int) -> np.ndarray:
        """``op`` (global_id, local_id, workgroup_id, num_workgroups) on ``axis`` for every lane."""
        key = (op, axis)
        if key not in self._ids:
            self._ids[key] = self._compute_id(op, axis)
        return self._ids[key]

    def _compute_id(self, op: str, axis: int) -> np.ndarray:
        if op == "num_workgroups":
            return np.array([self.grid[axis]], dtype=np.uint32)
        if op == "global_id":
            group = self.invocation_id("workgroup_id", axis)
            return group * np.uint32(self.kernel.local_size[axis]) + self.invocation_id("local_id", axis)
        sizes, linear = (
            (self.kernel.local_size, self.local_linear) if op == "local_id" else (self.grid, self.group_linear)
        )
        if sizes[axis] == 1:
            return np.zeros(1, dtype=np.uint32)
        below = int(np.prod(sizes[:axis]))  # x + y*X + z*X*Y
        return (linear // np.uint32(below)) % np.uint32(sizes[axis])

    def check_barrier(self, mask: Mask) -> None:
        if mask is None:
            return
        per_group = mask.reshape(-1, self.group_size)
        split = per_group.any(axis=1) & ~per_group.all(axis=1)
        if split.any():
            group = int(self.group_linear[np.argmax(split) * self.group_size])
            raise IRError(
                f"kernel {self.kernel.name!r}: barrier reached by only some invocations of workgroup "
                f"{group} (linear index); barriers need uniform control flow"
            )

    def shuffle_xor(self, value: np.ndarray, xor_mask: int, mask: Mask) -> np.ndarray:
        if value.shape[0] == 1:
            return value
        partner_local = self.local_linear ^ np.uint32(xor_mask)
        exists = partner_local < self.group_size
        lane = np.arange(self.lanes)
        partner = np.where(exists, lane - self.local_linear + partner_local, lane)
        if mask is not None:
            partner = np.where(mask[partner], partner, lane)
        return value[partner]

    def lane_description(self, lane: int) -> str:
        """Which invocation lane ``lane`` is, for error messages."""
        ids = [int(np.broadcast_to(self.invocation_id("global_id", a), (self.lanes,))[lane]) for a in range(3)]
        return f"invocation with global id {tuple(ids)}"
