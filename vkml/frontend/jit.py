"""``vkml.jit``: record a step's submissions once, replay them with new inputs (docs/jit.md).

A training step builds the same graph every call: the plan cache already skips planning, but
the graph itself (forward, autograd, the optimizer's update) is still built in Python, node by
node. ``vkml.jit(fn)`` runs ``fn`` normally while recording every realize (its dispatches: kernel,
grid, buffers, parameters); once two consecutive calls record the same work, later calls skip
``fn`` and run the recorded dispatches as one submission.

Every buffer of the recording has a role, found by comparing the two recorded calls:

- an input's buffer (or a view parameter of an input): taken from each call's arguments;
- state: a tensor reachable from the arguments, the function's closure and globals, or
  ``state=`` (parameters, their ``.grad``, a module's buffers, an optimizer's state) whose value
  the call replaced. Each such slot has two buffers: a replay reads the current one and writes the
  other (ping-pong), so nothing is read after it was overwritten. The other one is reused only if
  no tensor outside still holds it (its reference count): otherwise a fresh buffer takes its
  place, so a value the caller kept never changes;
- the returned tensors: slots too, new ``Tensor`` objects every call;
- the rest (intermediates) are the recording's own and overwritten by every replay; a tensor
  computed inside and kept outside without being returned or reachable is refused at capture.

Every kernel parameter is either constant (equal in both recorded calls), an input view's
offset or bound, a random draw's key words (``vkml.Generator`` draws again on replay, in the same
order; values drawn on the host are inputs a replay draws anew, in that order too), or an optimizer's per-step scalar (``Optimizer._jit_scalars``, e.g. Adam's bias
corrections, recomputed after the replay advances the step counts the call advanced). Any other
parameter that changes between calls raises ``JitError``: it is a Python value the replay cannot
know.

What the guard checks on every call (a call that fits no recording records anew; at most
``max_captures`` recordings): the structure of every tensor argument (shapes, dtypes, views,
device, requires_grad), the other arguments (by ``==``), grad mode, the modules' ``training``
flags, the optimizers' hyper-parameters, and that every state tensor the work reads has the
recorded size (it is read from wherever it is now: calls between replays may change it).
"""

from __future__ import annotations

import collections
import functools
import gc
import importlib
import itertools
import math
import operator
import sys
import threading
import types
import weakref

import numpy as np

from ..graph import build as lazy
from ..graph.node import Node, Op
from ..ir import types as T
from ..kernels import matmul as kernels_matmul
from ..schedule import checks, plan_cache
from ..schedule import scheduler as schedule
from ..schedule.scalar_ring import SCALARS, WORD_DTYPES, ScalarRing, scalars_variant
from ..tensor import Tensor
from . import autograd
from .host_scalar import HostScalar, host_number
from .realize import realize

__all__ = ["jit", "capture", "JitError"]

MAX_CAPTURES = 8  # captures per jit object before a changing signature raises
MAX_WARMUP = 4  # calls that may each record different work before capture gives up


_uids = itertools.count()


def _calls_params(step) -> bool:
    """Whether a step reads a fused call's own parameters (``plan_cache.CallParam``), which a replay does not redraw."""
    return any(p.__class__ is plan_cache.CallParam for _, p in step.params)


class JitError(RuntimeError):
    """What breaks a capture: a read of values inside it, a changing Python value, an unknown tensor."""


class _NotSteady(Exception):
    """Two recorded calls did the same kernels but not on the same kind of state: record another."""


# ---------------------------------------------------------------------- recording one call


class _Recorder:
    """Installed as ``scheduler.recorder`` while one call runs: it sees every realize, draw and read.

    Only the recording thread's: another thread's work meanwhile is neither recorded nor refused.
    """

    def __init__(self, name: str):
        self.name = name
        self.thread = threading.get_ident()
        self.dispatches: list = []
        self.sources: list = []  # per dispatch: {param name: (node, view ref or None)}
        self.devices: set = set()
        self.draws: list = []  # (generator, key nodes)
        # (op, generator, buffer node, redraw): values drawn on the host (vkml/frontend/random.py), which a
        # replay draws anew and binds as an input
        self.host_draws: list = []
        self.order: list = []  # ("key" | "host", index): every draw, in the order the call made them
        self.checks: list = []  # (check, its nodes) computed by the recorded realizes

    def realized(self, device, dispatches, recipe, order) -> None:
        if threading.get_ident() != self.thread:
            return
        if any(step.kernel is None or _calls_params(step) for step in recipe.steps):
            raise JitError(f"{self.name}: a user's @vkml.kernel inside a captured function is not supported")
        self.devices.add(device)
        for step in recipe.steps:  # one dispatch per step (no step of a user's kernel: refused above)
            sources = {}
            for name, p in step.params:  # ParamRefs: a constant's position, or a ViewParam
                sources[name] = (order[p], None) if p.__class__ is int else (order[p.position], p[1:])
            self.sources.append(sources)
        self.dispatches += dispatches

    def checked(self, found) -> None:
        if threading.get_ident() != self.thread:
            return
        self.checks += [(c, c.nodes) for c in found]

    def drew(self, generator, nodes) -> None:
        if threading.get_ident() != self.thread:
            return
        self.order.append(("key", len(self.draws)))
        self.draws.append((generator, nodes))

    def host_drew(self, op: str, generator, node, redraw) -> None:
        if threading.get_ident() != self.thread:
            return
        self.order.append(("host", len(self.host_draws)))
        self.host_draws.append((op, generator, node, redraw))

    def read(self, tensor) -> None:
        if threading.get_ident() != self.thread:
            return
        raise JitError(
            f"{self.name}: reading a tensor's values (.item(), .tolist(), .numpy(), bool(), printing) inside a "
            f"captured function is not supported: the replay runs without Python, so the value could not steer "
            f"it. Read it after the call (return the tensor), or call the function without vkml.jit"
        )


# ---------------------------------------------------------------------- where state lives


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _is_module(x) -> bool:
    return hasattr(x, "_parameters") and hasattr(x, "_modules") and hasattr(x, "_buffers")


def _is_optimizer(x) -> bool:
    return hasattr(x, "param_groups") and hasattr(x, "state") and hasattr(x, "step")


class _Roots:
    """The objects whose tensors are state: found from the arguments, closure, globals and ``state=``."""

    def __init__(self, objects):
        self.tensors: dict[int, object] = {}  # id -> tensor (parameters and plain tensors: mutated in place)
        self.modules: dict[int, object] = {}
        self.optimizers: dict[int, object] = {}
        for obj in objects:
            self._add(obj, 0)

    def _add(self, obj, depth: int) -> None:
        if depth > 3 or obj is None:
            return
        obj = getattr(obj, "_pair", obj)  # a complex tensor's state is its real pair (docs/complex.md)
        if _is_tensor(obj):
            self.tensors.setdefault(id(obj), obj)
        elif _is_module(obj):
            if id(obj) in self.modules:
                return
            for m in obj.modules():
                self.modules[id(m)] = m
                for p in m._parameters.values():
                    if p is not None:
                        p = getattr(p, "_pair", p)
                        self.tensors.setdefault(id(p), p)
        elif _is_optimizer(obj):
            if id(obj) in self.optimizers:
                return
            self.optimizers[id(obj)] = obj
            for group in obj.param_groups:
                for p in group["params"]:
                    self.tensors.setdefault(id(p), p)
        elif isinstance(obj, (list, tuple)):
            for x in obj:
                self._add(x, depth + 1)
        elif isinstance(obj, dict):
            for x in obj.values():
                self._add(x, depth + 1)

    def locations(self) -> dict:
        """key -> (kind, holder, name): every place a state tensor sits now."""
        out = {}
        for t in self.tensors.values():
            out[("t", id(t))] = ("tensor", t, None)
            out[("g", id(t))] = ("attr", t, "grad")
        for m in self.modules.values():
            for name in m._buffers:
                out[("b", id(m), name)] = ("item", m._buffers, name)
        for opt in self.optimizers.values():
            for state in opt.state.values():
                for name, value in state.items():
                    if _is_tensor(value) and value.__class__ is not HostScalar:  # a counter: ``numbers``
                        out[("s", id(state), name)] = ("item", state, name)
        return out

    def numbers(self) -> dict:
        """(id(state), name) -> (state dict, name, value): the optimizers' host counters (Adam's ``step``,
        a ``HostScalar``)."""
        out = {}
        for opt in self.optimizers.values():
            for state in opt.state.values():
                for name, value in state.items():
                    if value.__class__ in (int, float):
                        out[(id(state), name)] = (state, name, value)
                    elif value.__class__ is HostScalar:  # a replay's ``+=`` of the delta sets it anew
                        out[(id(state), name)] = (state, name, host_number(value))
        return out

    def scalars(self) -> dict:
        """Per-step scalars of the optimizers as they would be used now: key -> value."""
        out = {}
        for opt in self.optimizers.values():
            fn = getattr(opt, "_jit_scalars", None)
            if fn is None:
                continue
            for gi, group in enumerate(opt.param_groups):
                for p in group["params"]:
                    state = opt.state.get(p)
                    if state:
                        for j, v in enumerate(fn(group, state)):
                            out[(id(opt), gi, id(p), j)] = v
        return out

    def scalar_sources(self, keys) -> tuple[list, list]:
        """Where each of ``keys`` (keys of ``scalars``) comes from, to recompute only those on a replay:
        ([(optimizer, group index, parameter)], per key (index in that list, position in the
        optimizer's ``_jit_scalars``))."""
        sources: list = []
        index: dict = {}
        for opt in self.optimizers.values():
            for gi, group in enumerate(opt.param_groups):
                for p in group["params"]:
                    index[(id(opt), gi, id(p))] = (opt, gi, p)
        at: dict = {}
        out = []
        for key in keys:
            where = key[:3]
            if where not in at:
                at[where] = len(sources)
                sources.append(index[where])
            out.append((at[where], key[3]))
        return sources, out

    def settings(self) -> tuple:
        """Every optimizer's hyper-parameters, those ``guard`` leaves out included."""
        return tuple(
            [
                tuple([(k, v) for k, v in g.items() if k != "params" and k != "param_names"])
                for opt in self.optimizers.values()
                for g in opt.param_groups
            ]
        )

    def guard(self) -> tuple:
        """What the recording assumed of the modules, optimizers and generators besides tensors.

        An optimizer's hyper-parameters are taken as they are, but for those its ``_jit_covered(group)``
        names (Adam's ``lr``): they reach the work only through ``_jit_scalars``, recomputed on every
        replay, so a learning-rate scheduler does not record anew. Groups whose covered values were
        equal may have been told apart by nothing at capture (their scalars were equal): which groups
        are equal is part of the guard."""
        training = tuple([m.training for m in self.modules.values()])
        hyper = []
        covered = []
        for opt in self.optimizers.values():
            names_of = getattr(opt, "_jit_covered", None)
            for g in opt.param_groups:
                names = names_of(g) if names_of is not None else ()
                hyper.append(
                    tuple([(k, v) for k, v in g.items() if k != "params" and k != "param_names" and k not in names])
                )
                covered.append(tuple([(k, g[k]) for k in names]))
        same = tuple([covered.index(c) for c in covered]) if len(covered) > 1 else ()
        return training, tuple(hyper), same, autograd.is_grad_enabled()


class _FastGuard:
    """``roots.guard() == expected`` in the usual case, without building the settings' tuples: the
    modules' flags in C, and per optimizer group one ``itemgetter`` of the settings the guard
    holds. ``fits`` is True only where ``guard()`` would equal ``expected`` (the same groups, the
    same keys, the same covered names and values); where it is False, ``guard()`` decides."""

    def __init__(self, roots: _Roots, expected: tuple):
        self.modules = list(roots.modules.values())
        self.training = [m.training for m in self.modules]
        self.grad = expected[3]
        self.optimizers = list(roots.optimizers.values())
        self.groups = [g for opt in self.optimizers for g in opt.param_groups]  # each optimizer's, in order
        self.sizes = [len(g) for g in self.groups]
        # per group, a getter of the settings the guard holds and their values; the groups whose
        # optimizer names covered settings (``_jit_covered``), with the names it gave
        self.getters, self.values = [], []
        self.covered_of, self.covered_groups, self.covered = [], [], []
        for opt in self.optimizers:
            names_of = getattr(opt, "_jit_covered", None)
            for g in opt.param_groups:
                names = names_of(g) if names_of is not None else ()
                keys = [k for k in g if k != "params" and k != "param_names" and k not in names]
                getter = operator.itemgetter(*keys, *keys[:1])  # two keys at least: a tuple always
                self.getters.append(getter)
                self.values.append(getter(g))
                if names_of is not None:
                    self.covered_of.append(names_of)
                    self.covered_groups.append(g)
                    self.covered.append(names)
        self.same = expected[2]
        self.exact = roots.guard() == expected  # else the snapshot is not the recording's: guard() decides

    def fits(self) -> bool:
        if not self.exact or autograd.is_grad_enabled() != self.grad:
            return False
        if list(map(_TRAINING_OF, self.modules)) != self.training:
            return False
        groups = list(itertools.chain.from_iterable(map(_PARAM_GROUPS_OF, self.optimizers)))
        if len(groups) != len(self.groups) or not all(map(operator.is_, groups, self.groups)):
            return False
        try:
            if list(map(len, groups)) != self.sizes or list(map(operator.call, self.getters, groups)) != self.values:
                return False
            if list(map(operator.call, self.covered_of, self.covered_groups)) != self.covered:
                return False
        except KeyError:
            return False
        return len(groups) < 2 or self._same_covered_values(groups)

    def _same_covered_values(self, groups: list) -> bool:
        """Whether the groups that share their covered settings' values are those that shared them."""
        names_of = dict(zip(map(id, self.covered_groups), self.covered))
        covered = [tuple([(k, g[k]) for k in names_of.get(id(g), ())]) for g in groups]
        return tuple([covered.index(c) for c in covered]) == self.same


_TRAINING_OF = operator.attrgetter("training")
_PARAM_GROUPS_OF = operator.attrgetter("param_groups")


def _scalar_values(sources: list) -> list:
    """Each source's ``_jit_scalars`` as its optimizer would use them now (``_Roots.scalar_sources``)."""
    return [opt._jit_scalars(opt.param_groups[gi], opt.state[p]) for opt, gi, p in sources]


def _get(loc):
    kind, holder, name = loc
    if kind == "tensor":
        return holder
    if kind == "attr":
        return getattr(holder, name)
    return holder.get(name)


def _function_roots(fn) -> list:
    """Objects ``fn`` can reach besides its arguments: defaults, closure cells and the globals it names."""
    out = []
    code = getattr(fn, "__code__", None)
    if fn.__closure__:
        for cell in fn.__closure__:
            try:
                out.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
    out += list(getattr(fn, "__defaults__", None) or ())
    out += list((getattr(fn, "__kwdefaults__", None) or {}).values())
    if code is not None:
        g = getattr(fn, "__globals__", {})
        out += [g[n] for n in code.co_names if n in g and not isinstance(g[n], (types.ModuleType, type))]
    if isinstance(fn, functools.partial):
        out += [*fn.args, *fn.keywords.values()]
    self_ = getattr(fn, "__self__", None)
    if self_ is not None:
        out.append(self_)
    return out


# ---------------------------------------------------------------------- one recorded call


def _flatten(value, tensors: list):
    """``value`` with each tensor replaced by its index in ``tensors`` (appended): a template to rebuild it."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return ("T", len(tensors) - 1)
    if isinstance(value, (list, tuple)):
        return (type(value), [_flatten(v, tensors) for v in value])
    if isinstance(value, dict):
        return (dict, {k: _flatten(v, tensors) for k, v in value.items()})
    return ("V", value)


@functools.lru_cache(maxsize=16)
def _tensors_template(count: int) -> tuple:
    """``_flatten((args, {}), ...)`` of ``count`` tensor arguments (shared: compared, never changed)."""
    return (tuple, [(tuple, [("T", i) for i in range(count)]), (dict, {})])


def _rebuild(template, tensors: list):
    kind, body = template
    if kind == "T":
        return tensors[body]
    if kind == "V":
        return body
    if kind is dict:
        return {k: _rebuild(v, tensors) for k, v in body.items()}
    items = [_rebuild(v, tensors) for v in body]
    return kind(items) if kind in (list, tuple) else kind(*items)  # a named tuple takes its fields


def _input_signature(tensors: list) -> tuple:
    """The structure of the argument tensors' graphs (trace order and key), their devices and flags."""
    # Every replay asks: maps over the tensors (their properties still run), no per-item loop.
    nodes = list(map(_TENSOR_NODE_OF, tensors))
    # ``requires_grad`` without its property: ``node`` brought each view's autograd history up to date
    extra = tuple(zip(map(_DEVICE_NAME_OF, nodes), map(_REQUIRES_GRAD_OF, tensors)))
    if list(map(_OP_OF, nodes)).count(Op.BUFFER) == len(nodes) and len(set(map(id, nodes))) == len(nodes):
        # Realized arguments (a data loader's batches): the trace of each is the node alone.
        return nodes, (tuple(zip(map(_SHAPE_OF, nodes), map(_DTYPE_OF, nodes))), extra)
    key = tuple(map(id, nodes))
    found = _TRACES.get(key)
    if found is not None:  # the same argument nodes as a recent call (a dataset's batches, views taken once)
        refs, ops, at, structure = found
        order = list(map(_call, refs))
        # Alive, each argument the very node traced then (an id is not reused while its object
        # lives), and no node realized since (the only change a node's graph sees).
        if (
            None not in order
            and tuple(map(_OP_OF, order)) == ops
            and all(map(operator.is_, map(order.__getitem__, at), nodes))
        ):
            return order, (structure, extra)
    order, structure = plan_cache.trace(nodes, kernels_matmul.mode) if nodes else ([], ())
    if len(_TRACES) >= TRACES_KEPT:
        del _TRACES[next(iter(_TRACES))]
    where = {id(n): i for i, n in enumerate(order)}
    _TRACES[key] = (
        tuple([weakref.ref(n) for n in order]),
        tuple([n.op for n in order]),
        [where[i] for i in key],
        structure,
    )
    return order, (structure, extra)


TRACES_KEPT = 16  # argument graphs whose trace is kept (weakly), for calls that pass the same ones again
_TRACES: dict = {}  # ids of the argument nodes -> (weak references to the trace's nodes, their ops, the
# arguments' positions in it, its structure key)


class _Call:
    """What one normal call of the function did, for ``_Program`` to compare and bind."""

    def __init__(self, roots: _Roots, args_tensors: list, arg_template, recorder: _Recorder):
        self.arg_template = arg_template
        self.inputs, self.signature = _input_signature(args_tensors)
        self.before = {k: _get(loc) for k, loc in roots.locations().items()}
        self.before_nodes = {k: (None if v is None else v.node) for k, v in self.before.items()}
        self.numbers_before = {k: v[2] for k, v in roots.numbers().items()}
        self.guard = roots.guard()
        self.settings = roots.settings()
        self.recorder = recorder

    def finish(self, roots: _Roots, result) -> None:
        self.locations = roots.locations()
        self.after = {k: _get(loc) for k, loc in self.locations.items()}
        self.after_nodes = {k: (None if v is None else v.node) for k, v in self.after.items()}  # a parameter is
        # the same object call after call: its node of this moment is what the next call reads
        self.outputs: list = []
        self.out_template = _flatten(result, self.outputs)
        self.numbers = roots.numbers()
        self.scalars = roots.scalars()
        self.settings_changed = roots.settings() != self.settings  # by the call itself: a replay would not
        # Values drawn on the host are inputs a replay draws anew (after the arguments' positions).
        self.inputs = [*self.inputs, *(node for _, _, node, _ in self.recorder.host_draws)]


def _realize_state(roots: _Roots, extra=()) -> None:
    """Realize every state tensor (and ``extra``) that is lazy: a recording ends with them as buffers."""
    lazy_ones = [v for loc in roots.locations().values() if (v := _get(loc)) is not None and not v.node.realized]
    lazy_ones += [t for t in extra if not t.node.realized]
    if lazy_ones:
        realize(*lazy_ones)


# ---------------------------------------------------------------------- the program


class _Slot:
    """A value the replay writes that outlives it: a state tensor's place, an output, a check's node.

    ``mine`` holds the slot's two buffers while the recording is made (the one written last
    first); then ``_Program._prepare_publish`` gives them, each with a realized node over it, to the
    replays' lists (``_Program._targets``). A replay writes a buffer whose node and buffer nothing
    else holds and hands out its node again: a node nobody holds has no reader whose values
    could change."""

    __slots__ = ("key", "loc", "mine", "last", "writes", "shape", "dtype", "same_object", "requires_grad")

    def __init__(self, key, loc, last, other, shape, dtype):
        self.key, self.loc = key, loc
        self.mine = [last, other]
        self.last = last  # the buffer the recorded call wrote
        self.shape, self.dtype = shape, dtype
        self.writes: list = []  # (dispatch, name) that write the slot
        self.same_object = True
        self.requires_grad = False


def _same_work(a: _Recorder, b: _Recorder) -> bool:
    if len(a.dispatches) != len(b.dispatches) or a.devices != b.devices or len(a.draws) != len(b.draws):
        return False
    for da, db in zip(a.dispatches, b.dispatches):
        if da.kernel is not db.kernel or tuple(da.grid) != tuple(db.grid) or da.buffers.keys() != db.buffers.keys():
            return False
        if da.params.keys() != db.params.keys():
            return False
        for name, buf in da.buffers.items():
            other = db.buffers[name]
            if other.numel != buf.numel or other.dtype is not buf.dtype:
                return False
    if a.order != b.order:
        return False
    for (op_a, ga, na, _), (op_b, gb, nb, _) in zip(a.host_draws, b.host_draws):
        if op_a != op_b or ga is not gb or na.shape != nb.shape or na.dtype is not nb.dtype:
            return False
    return all(ga is gb for (ga, _), (gb, _) in zip(a.draws, b.draws))


def _same_value(x, y) -> bool:
    return type(x) is type(y) and (x == y if x else repr(x) == repr(y)) or (x != x and y != y)


class _Program:
    """The second of two equal recorded calls, with a role for every buffer and parameter."""

    def __init__(self, name: str, first: _Call, call: _Call):
        self.name = name
        rec = call.recorder
        if len(rec.devices) != 1:
            raise JitError(f"{name}: the captured work runs on {len(rec.devices)} devices; vkml.jit needs exactly one")
        (self.device,) = rec.devices
        self.dispatches = rec.dispatches
        self.signature = call.signature
        self.arg_template = call.arg_template
        self.out_template = call.out_template
        self.guard = call.guard
        self.draw_generators = [g for g, _ in rec.draws]
        self.draw_order = list(rec.order)
        self.redraws = [redraw for _, _, _, redraw in rec.host_draws]
        self.uid = next(_uids)  # names this recording in command-buffer keys (an id() could be reused)
        self.fresh_buffers = 0
        written = _written_ids(self.dispatches)
        self._bind_slots(first, call, written)
        self._bind_inputs(call)
        self._check_fixed(first, call, written)
        self._bind_params(first, call)
        self._counters(first, call)
        self._check_by_arguments = self._checks_by_arguments(len(call.inputs) - len(rec.host_draws))
        self._buffer_scalars()
        self.params_changing = self.input_params + self.derived_params + self.draw_params + self.scalar_params
        self._param_positions = sorted({e[2] for e in self.input_params + self.derived_params})
        # What a replay keeps per argument nodes (``_record_of``): the view parameters where the
        # arguments alone give them, the checks that passed for them.
        self._values_by_arguments = bool(self._param_positions) and self._param_positions[-1] < self._arguments
        self._by_arguments = self._values_by_arguments or True in self._check_by_arguments
        self._records: dict = {}  # ids of the argument nodes -> their _ArgumentRecord
        # (check, its pass record or None, its index in check_slots): checks replays made and nobody
        # read yet (vkml/schedule/checks.py)
        self.made_checks: list = []
        self._check_internal(written)

    # -- buffers
    def _bind_slots(self, first: _Call, call: _Call, written: set) -> None:
        slots: dict = {}  # id(buffer written) -> slot
        by_before: dict = {}  # id(buffer of a state tensor before the call) -> its location
        self.state_slots: list[_Slot] = []
        self._rebase: list = []  # (location, requires_grad, node): views to replace by plain tensors
        for key, loc in call.locations.items():
            before_node = call.before_nodes.get(key)
            if before_node is not None and before_node.realized:
                by_before.setdefault(id(before_node.buffer), loc)
            after = call.after.get(key)
            before = call.before.get(key)
            if after is None:
                if before is not None:
                    self.state_slots.append(_Slot(key, loc, None, None, (), None))
                continue
            node = after.node
            if before is not None and node is before_node:
                continue  # unchanged
            if not node.realized or id(node.buffer) not in written:
                raise JitError(
                    f"{self.name}: a state tensor of shape {after.shape} was given a value the captured work did "
                    f"not compute (assigned from an argument or built outside); vkml.jit cannot replay it"
                )
            prev = first.after_nodes.get(key)
            if prev is None or not prev.realized or prev.buffer is node.buffer or id(node.buffer) in slots:
                raise _NotSteady  # the earlier call set it up differently (an optimizer's first step)
            slot = _Slot(key, loc, node.buffer, prev.buffer, after.shape, after.dtype)
            slot.same_object = before is after
            slot.requires_grad = after.requires_grad
            if after._base is not None:
                if slot.same_object:
                    raise JitError(
                        f"{self.name}: a view of shape {after.shape} is updated as state; vkml.jit cannot replay it"
                    )
                # A gradient may be a view of a lazy base (a sum reshaped) that keeps the step's
                # intermediates alive; replays hand out plain tensors, and so does this call.
                self._rebase.append((loc, after.requires_grad, node))
            slots[id(node.buffer)] = slot
            self.state_slots.append(slot)
        self.out_slots: list = []
        for i, (t, t_first) in enumerate(zip(call.outputs, first.outputs)):
            buf = t.node.buffer if t.node.realized else None
            if buf is None or id(buf) not in written:
                raise JitError(
                    f"{self.name}: output {i} (shape {t.shape}) was not computed by the captured work; vkml.jit "
                    f"returns only tensors the function computes"
                )
            slot = slots.get(id(buf))
            if slot is None:
                slot = _Slot(("o", i), None, buf, t_first.node.buffer, t.shape, t.dtype)
                slots[id(buf)] = slot
            self.out_slots.append(slot)
        self.check_slots = []
        for (check, nodes), (_, nodes_first) in zip(call.recorder.checks, first.recorder.checks):
            made = []
            for n, n_first in zip(nodes, nodes_first):
                slot = slots.get(id(n.buffer))
                if slot is None:
                    slot = slots[id(n.buffer)] = _Slot(
                        ("c", len(slots)), None, n.buffer, n_first.buffer, n.shape, n.dtype
                    )
                made.append(slot)
            self.check_slots.append((check.describe, check.error, made))
        self.slots = list({id(s): s for s in slots.values()}.values())
        for s in self.slots:
            if s.mine[1] is s.mine[0] or s.mine[1].numel != s.mine[0].numel:
                raise _NotSteady
        reads: dict = {}  # id(location tuple) -> (location, [(dispatch, name)], numel, dtype)
        for d in self.dispatches:
            for name, b in d.buffers.items():
                s = slots.get(id(b))
                if s is not None:
                    s.writes.append((d, name))
                    continue
                loc = by_before.get(id(b))
                if loc is not None:
                    reads.setdefault(id(loc), (loc, [], b.numel, b.dtype))[1].append((d, name))
        self._by_before = by_before
        # State the work reads is bound from the state tensors at every replay: a parameter holds
        # whatever buffer the last call (recorded or replayed, by any recording) left it.
        self.live_reads = [(loc, tuple(refs), numel, dtype) for loc, refs, numel, dtype in reads.values()]
        for s in self.slots:
            s.writes = tuple(s.writes)

    def _bind_inputs(self, call: _Call) -> None:
        leaf_pos = {id(n.buffer): i for i, n in enumerate(call.inputs) if n.realized}
        self.input_buffers = []  # (dispatch, name, position in the inputs' trace)
        for d in self.dispatches:
            for name, b in d.buffers.items():
                pos = leaf_pos.get(id(b))
                if pos is not None:
                    self.input_buffers.append((d, name, pos))
        self.input_positions = sorted({pos for _, _, pos in self.input_buffers})
        at = {pos: i for i, pos in enumerate(self.input_positions)}
        self._input_buffer_at = [at[pos] for _, _, pos in self.input_buffers]  # each one's index in those
        self._own_inputs: dict = {}  # index in input_positions -> the buffer new arguments are copied into
        self._last_inputs: list = [None] * len(self.input_positions)  # the arguments' binding keys last replay

    def _check_fixed(self, first: _Call, call: _Call, written: set) -> None:
        """Refuse a buffer read from outside the work that is neither an argument's nor bound from state,
        yet differs between the two calls: a replay would read the recorded one, stale."""
        bound = {(id(d), name) for d, name, _ in self.input_buffers}
        bound.update((id(d), name) for _, refs, _, _ in self.live_reads for d, name in refs)
        self.alias_reads = []  # (dispatch, name, location, start, numel, parent numel, dtype): a window of state
        self.window_reads = []  # (dispatch, name, position of an argument's view): the window of it the work cut
        # (dispatch, name, position in slots, start, numel): a window of a value the work wrote and
        # keeps (a state slot), cut anew from the slot's buffer of each replay
        self.slot_alias_reads = []
        leaves = {id(n.buffer): n for n in call.inputs if n.realized}
        slot_at = {id(s.last): i for i, s in enumerate(self.slots)}
        written_first = None
        for d, d_first in zip(self.dispatches, first.recorder.dispatches):
            for name, b in d.buffers.items():
                if id(b) in written or (id(d), name) in bound or b is d_first.buffers[name]:
                    continue
                parent = getattr(b, "parent", None)  # an alias: a window of a realized buffer, read in place
                if parent is not None and id(parent) in written:
                    # A window of a value an earlier realize of the work computed (a slice of an
                    # intermediate read after it was realized: ``out[:, :m] = f(x_ft[:, :m])``): the
                    # same window of the same value in both calls is the work's own.
                    if written_first is None:
                        written_first = _written_ids(first.recorder.dispatches)
                    b_first = d_first.buffers[name]
                    parent_first = getattr(b_first, "parent", None)
                    if (
                        parent_first is None
                        or id(parent_first) not in written_first
                        or (b_first.start, b_first.numel) != (b.start, b.numel)
                    ):
                        raise _NotSteady
                    at = slot_at.get(id(parent))
                    if at is not None:
                        self.slot_alias_reads.append((d, name, at, b.start, b.numel))
                    continue  # an intermediate's buffer is the recording's own: its window stays valid
                loc = None if parent is None else self._by_before.get(id(parent))
                if loc is not None:
                    self.alias_reads.append((d, name, loc, b.start, b.numel, parent.numel, parent.dtype))
                    continue
                leaf = None if parent is None else leaves.get(id(parent))
                pos = None if leaf is None else _window_input(call, first, leaf, b, d_first.buffers[name])
                if pos is not None:
                    self.window_reads.append((d, name, pos))
                    continue
                raise JitError(
                    f"{self.name}: kernel {d.kernel.name!r} reads a tensor of {b.numel} elements that changed "
                    f"between calls but is neither an argument nor state the jit reaches whole (a view of a "
                    f"parameter, or a tensor not reachable from the arguments, closure or globals: pass its "
                    f"holder in state=...)"
                )

    def _bind_params(self, first: _Call, call: _Call) -> None:
        node_pos = {id(n): i for i, n in enumerate(call.inputs)}
        draw_of = {id(n): (i, w) for i, (_, nodes) in enumerate(call.recorder.draws) for w, n in enumerate(nodes)}
        candidates: dict = {}
        for key, v in call.scalars.items():
            v0 = first.scalars.get(key)
            if v0 is not None:
                candidates.setdefault((v0, v), key)
        self.input_params, self.draw_params, self.scalar_params = [], [], []
        self.derived_params = []  # (dispatch, name, input position, level, field, divisor, bits, delta)
        for i, (d, d_first) in enumerate(zip(self.dispatches, first.recorder.dispatches)):
            for name, (node, ref) in call.recorder.sources[i].items():
                if id(node) in node_pos:
                    self.input_params.append((d, name, node_pos[id(node)], ref))
                    continue
                if ref is not None:
                    found = _derived_view_param(node, first.recorder.sources[i][name][0], ref, call, first, node_pos)
                    if found is not None:
                        self.derived_params.append((d, name, *found))
                        continue
                if ref is None and id(node) in draw_of:
                    self.draw_params.append((d, name, *draw_of[id(node)]))
                    continue
                now, then = d.params[name], d_first.params[name]
                if _same_value(now, then):
                    continue
                key = None if ref is not None else _match(candidates, then, now, node.dtype)
                if key is None:
                    raise JitError(
                        f"{self.name}: a Python number that feeds kernel {d.kernel.name!r} changed between calls "
                        f"({then!r} then {now!r}) and is not an input, a random draw or an optimizer's step count; "
                        f"vkml.jit cannot replay it. Pass the value as a tensor argument (or an optimizer the function "
                        f"reaches otherwise in state=...)"
                    )
                self.scalar_params.append((d, name, key, node.dtype))

    def _checks_by_arguments(self, arguments: int) -> list:
        """Per check of the work (``check_slots``), whether its values follow from the arguments alone
        (their buffers, their views' parameters, constants): not from state, a random draw, a value
        drawn on the host or an optimizer's scalars. Such a check that passed for the very argument
        nodes passes again (a realized node's values never change), so a replay with them makes no
        check (``_record_of``). ``arguments``: how many of the inputs are the arguments' trace."""
        outside = {(id(d), name) for _, refs, _, _ in self.live_reads for d, name in refs}
        outside.update((id(e[0]), e[1]) for e in self.alias_reads)
        outside.update((id(d), name) for d, name, pos in self.input_buffers + self.window_reads if pos >= arguments)
        stirred = {id(e[0]) for e in self.draw_params + self.scalar_params}
        stirred.update(id(e[0]) for e in self.input_params + self.derived_params if e[2] >= arguments)
        tainted: set = set()  # ids of the buffers whose values follow from anything but the arguments
        for d in self.dispatches:
            items = d.buffers.items()
            if id(d) in stirred or any(
                (id(d), name) in outside or id(b) in tainted or id(getattr(b, "parent", None)) in tainted
                for name, b in items
            ):
                tainted.update(id(b) for name, b in items if _writes(d, name))
        self._arguments = arguments
        return [not any(id(s.last) in tainted for s in slots) for _, _, slots in self.check_slots]

    def _record_of(self, inputs: list) -> _ArgumentRecord:
        """What this recording keeps for this call's argument nodes, kept for the last few: found by
        the nodes' ids, it holds weak references to the very nodes, alive (an id is not reused while
        its object lives; a node's view never changes, and a realized one is a new trace)."""
        nodes = inputs[: self._arguments]
        key = tuple(map(id, nodes))
        record = self._records.get(key)
        if record is not None and all(map(operator.is_, map(_call, record.refs), nodes)):
            return record
        if len(self._records) >= TRACES_KEPT:
            del self._records[next(iter(self._records))]
        values, values_key = self._input_values(inputs) if self._values_by_arguments else ((), ())
        record = self._records[key] = _ArgumentRecord(tuple(map(weakref.ref, nodes)), tuple(values), values_key)
        return record

    def _buffer_scalars(self) -> None:
        """On Vulkan, move the parameters that change on every replay (random keys, optimizer scalars)
        from push constants into a small buffer the kernels read, so that one command buffer serves
        every replay: push constants are recorded into it, buffer contents are not.

        Each dispatch with such parameters runs a variant of its kernel (``scalars_variant``) that
        loads them from ``SCALARS`` bound to its own aligned window of a ring buffer. The host
        writes a ring entry before the replay that reads it, once the replay that read it last is
        complete (vkml/schedule/scalar_ring.py: the host fills one entry while the device may still
        read the other). The words hold the bits the push constants would have held."""
        self.ring = None
        moved: dict = {}  # id(dispatch) -> (dispatch, [(name, source)])
        if self.device.kind != "vulkan" or not self.device.writes_mapped:
            return  # a staged upload is a submission of its own and waits: cheaper to record anew
        for entry in self.draw_params:
            d, name = entry[0], entry[1]
            moved.setdefault(id(d), (d, []))[1].append((name, ("draw", entry[2], entry[3])))
        for entry in self.scalar_params:
            d, name = entry[0], entry[1]
            moved.setdefault(id(d), (d, []))[1].append((name, ("scalar", entry[2], entry[3])))
        fills = []  # (word, whether a float32, source)
        windows = []  # (dispatch, the names it reads from its window, with their sources)
        for d, names in moved.values():
            decls = {p.name: p.dtype for p in d.kernel.params}
            names = [(n, src) for n, src in names if decls.get(n) in WORD_DTYPES]
            if names:
                windows.append((d, decls, names))
        if not windows:
            return
        self.ring = ScalarRing(self.device, [len(names) for _, _, names in windows])
        kept_draws, kept_scalars = set(), set()
        for (d, decls, names), start in zip(windows, self.ring.starts):
            d.kernel = scalars_variant(d.kernel, tuple(n for n, _ in names))
            for w, (n, src) in enumerate(names):
                fills.append((start + w, decls[n] is T.float32, src))
                (kept_draws if src[0] == "draw" else kept_scalars).add((id(d), n))
                del d.params[n]
        self.draw_params = [e for e in self.draw_params if (id(e[0]), e[1]) not in kept_draws]
        self.scalar_params = [e for e in self.scalar_params if (id(e[0]), e[1]) not in kept_scalars]
        self.ring_windows = [list(zip([d for d, _, _ in windows], entry)) for entry in self.ring.windows]
        self.ring_fills = fills
        self.ring_draws = any(src[0] == "draw" for _, _, src in fills)

    def bind_roots(self, roots: _Roots) -> None:
        """Where the optimizers' per-step scalars come from: only those the work takes are recomputed
        on a replay (``_Roots.scalar_sources``), and the ring's fills name them by position."""
        self.roots = roots
        self.fast_guard = _FastGuard(roots, self.guard)
        fills = self.ring_fills if self.ring is not None else []
        keys = [src[1] for _, _, src in fills if src[0] == "scalar"] + [e[2] for e in self.scalar_params]
        self.scalar_sources, where = roots.scalar_sources(keys)
        where = iter(where)
        # (whether a draw's key word, draw or source index, word or position in _jit_scalars,
        # dtype, whether a float32) -> the ring words that take it: dispatches share a scalar
        groups: dict = {}
        for at, is_float, src in fills:
            source = (True, src[1], src[2], T.int32) if src[0] == "draw" else (False, *next(where), src[2])
            groups.setdefault((*source, is_float), []).append(at)
        self.ring_fills = [(*source, tuple(ats)) for source, ats in groups.items()]
        # The optimizers' float32 scalars, converted together: (draw, a, b) sources, the ring
        # words each goes to, and for each of those words the index of its source.
        floats = [f for f in self.ring_fills if not f[0] and f[3] is T.float32 and f[4]]
        self.ring_float_sources = [(a, b) for _, a, b, _, _, _ in floats]
        self._float_a, self._float_b = [a for a, _ in self.ring_float_sources], [b for _, b in self.ring_float_sources]
        self.ring_float_at = np.array([at for f in floats for at in f[5]], np.intp)
        self.ring_float_of = np.array([k for k, f in enumerate(floats) for _ in f[5]], np.intp)
        self.ring_fills = [f for f in self.ring_fills if not (not f[0] and f[3] is T.float32 and f[4])]
        # 32-bit integer words (the draws' keys), likewise: their two's complement bits.
        ints = [f for f in self.ring_fills if not f[4] and (f[3] is T.int32 or f[3] is T.uint32)]
        self.ring_int_sources = [(draw, a, b) for draw, a, b, _, _, _ in ints]
        self._int_draw = [int(draw) for draw, _, _ in self.ring_int_sources]
        self._int_a, self._int_b = [a for _, a, _ in self.ring_int_sources], [b for _, _, b in self.ring_int_sources]
        self.ring_int_at = np.array([at for f in ints for at in f[5]], np.intp)
        self.ring_int_of = np.array([k for k, f in enumerate(ints) for _ in f[5]], np.intp)
        if ints:
            self.ring_fills = [f for f in self.ring_fills if not (not f[4] and (f[3] is T.int32 or f[3] is T.uint32))]
        self.scalar_params = [(d, name, *next(where), dtype) for d, name, _, dtype in self.scalar_params]
        self._prepare_live()
        self._prepare_binding()
        self._release_reads()
        self._prepare_publish()

    def _prepare_binding(self) -> None:
        """The dispatches' entries a replay binds when it records, flat, for ``map``: the buffer
        entries (arguments, state read, windows, slots written) with where each one's buffer comes
        from, and the parameters that change."""
        entries, live_at, written_at = [], [], []
        entries += [(d.buffers, name) for d, name, _ in self.input_buffers]
        for k, (_, refs, _, _) in enumerate(self.live_reads):
            entries += [(d.buffers, name) for d, name in refs]
            live_at += [k] * len(refs)
        entries += [(e[0].buffers, e[1]) for e in self.alias_reads + self.window_reads + self.slot_alias_reads]
        for i, s in enumerate(self.slots):  # written ones too: a slot's buffers are held by its own lists alone
            entries += [(d.buffers, name) for d, name in s.writes]
            written_at += [i] * len(s.writes)
        self._bind_dicts = [e[0] for e in entries]
        self._bind_names = [e[1] for e in entries]
        self._bind_live_at, self._bind_written_at = live_at, written_at
        self._param_dicts = [e[0].params for e in self.params_changing]
        self._param_names = [e[1] for e in self.params_changing]

    def _bind(self, in_buffers: list, live: list, aliases: list, written: list, values: list) -> None:
        """Bind this replay's buffers and parameters into the dispatches (``_prepare_binding``)."""
        buffers = [
            *in_buffers,
            *map(live.__getitem__, self._bind_live_at),
            *aliases,
            *map(written.__getitem__, self._bind_written_at),
        ]
        _drain(map(operator.setitem, self._bind_dicts, self._bind_names, buffers))
        _drain(map(operator.setitem, self._param_dicts, self._param_names, values))

    def _release_reads(self) -> None:
        """Let go of what the dispatches read from outside and of the slots they write: a state
        buffer another recording of this function may write next must be held by its tensor alone
        (the choice of a slot's buffer in ``replay`` counts its holders), and an argument's buffer
        is not kept alive past the call. A replay binds them again when it records."""
        _drain(map(operator.setitem, self._bind_dicts, self._bind_names, _NONES))

    def _write_scalars(self, words, values) -> int:
        """Fill the next ring entry with this replay's scalars (``words``: the draws' key words,
        ``values``: ``_scalar_values`` of ``scalar_sources``); returns its index (the dispatches
        bind its windows, ``ring_windows``, when the replay records)."""
        out = self.ring.words
        if self.ring_float_sources:
            floats = list(map(operator.getitem, map(values.__getitem__, self._float_a), self._float_b))
            if -_F32_OVERFLOW < min(floats) and max(floats) < _F32_OVERFLOW:
                # Finite in float32 (NaN too), as lazy._scalar_value leaves them: numpy's float32
                # rounding, one array for all, gives np.float32(value)'s bits.
                bits = np.array(floats, np.float64).astype(np.float32).view(np.uint32)
                out[self.ring_float_at] = bits[self.ring_float_of]
            else:
                for (a, b), at in zip(self.ring_float_sources, _words_of(self.ring_float_at, self.ring_float_of)):
                    value = lazy._scalar_value(values[a][b], T.float32)
                    out[at] = int(np.float32(value).view(np.uint32))
        if self.ring_int_sources:
            of = (values, words).__getitem__  # each int source's list: a draw's key words, else the scalars
            ints = list(map(operator.getitem, map(operator.getitem, map(of, self._int_draw), self._int_a), self._int_b))
            if -(1 << 63) <= min(ints) and max(ints) < 1 << 63:  # no OverflowError; int64 holds them
                out[self.ring_int_at] = np.array(ints, np.int64).astype(np.uint32)[self.ring_int_of]
            else:
                for (draw, a, b), at in zip(self.ring_int_sources, _words_of(self.ring_int_at, self.ring_int_of)):
                    out[at] = int(lazy._scalar_value(words[a][b] if draw else values[a][b], T.int32)) & 0xFFFFFFFF
        for draw, a, b, dtype, is_float, ats in self.ring_fills:
            value = lazy._scalar_value(words[a][b] if draw else values[a][b], dtype)
            # The bits the push constant held: a float32's, an integer's two's complement.
            bits = int(np.float32(value).view(np.uint32)) if is_float else int(value) & 0xFFFFFFFF
            for at in ats:
                out[at] = bits
        return self.ring.write()

    def _counters(self, first: _Call, call: _Call) -> None:
        self.numbers = []  # (state dict, name, delta)
        for key, (state, name, value) in call.numbers.items():
            before = call.numbers_before.get(key)
            if before is None or before == value:
                continue
            delta = value - before
            before_first = first.numbers_before.get(key)
            after_first = first.numbers.get(key)
            if before_first is None or after_first is None or after_first[2] - before_first != delta:
                raise JitError(f"{self.name}: the optimizer's {name!r} changed by different amounts on two calls")
            self.numbers.append((state, name, delta))
        # the same as columns, for replay's loop in C
        self._number_columns = tuple(map(tuple, zip(*self.numbers))) if self.numbers else None

    def _check_internal(self, written: set) -> None:
        """Refuse a recording whose intermediates are held outside (they would change under the holder)."""
        slot_buffers = {id(s.last) for s in self.slots}
        uses: dict = {}
        for d in self.dispatches:
            for b in d.buffers.values():
                uses[id(b)] = uses.get(id(b), 0) + 1
        # An alias the work reads of an intermediate holds its parent once more (``parent``); it is
        # itself an intermediate: a tensor kept outside over it (a slice) holds it.
        aliases = {}
        for d in self.dispatches:
            for b in d.buffers.values():
                parent = getattr(b, "parent", None)
                if parent is not None and id(parent) in written and id(parent) not in slot_buffers:
                    aliases[id(b)] = b
        for b in aliases.values():
            uses[id(b.parent)] = uses.get(id(b.parent), 0) + 1
        self._internal = [
            (b, uses[id(b)])
            for d in self.dispatches
            for b in d.buffers.values()
            if (id(b) in written and id(b) not in slot_buffers) or id(b) in aliases
        ]
        self._internal = list({id(b): (b, n) for b, n in self._internal}.values())

    def rebase(self) -> None:
        """Put plain tensors where the recorded call left views over lazy bases (see ``_bind_slots``)."""
        for (kind, holder, name), requires_grad, node in self._rebase:
            t = Tensor(node, requires_grad=requires_grad)
            setattr(holder, name, t) if kind == "attr" else holder.__setitem__(name, t)
        self._rebase = []

    def verify_internal(self) -> None:
        if any(sys.getrefcount(b) > n + 3 for b, n in self._internal):
            gc.collect()  # autograd's graphs hold cycles: what only they hold goes now
        for b, n in self._internal:
            # held by the dispatches' dicts n times, by the tuple in _internal once, by getrefcount's argument
            if sys.getrefcount(b) > n + 3:
                raise JitError(
                    f"{self.name}: a tensor of {b.numel} elements computed inside the captured function is kept "
                    f"outside it without being returned (a global, a list, a module attribute, a parameter of a "
                    f"module the function does not reach through its arguments, closure or globals); return it, "
                    f"or pass its holder in state=..."
                )
        self._internal = None

    # -- replay
    def _prepare_live(self) -> None:
        """Order ``live_reads`` by the kind of place (a tensor, a gradient, an item of a dict), so
        that ``_live_now`` fetches each kind's tensors with one ``map``."""
        order = {"tensor": 0, "attr": 1, "item": 2}
        self.live_reads.sort(key=lambda entry: order[entry[0][0]])
        self._live_tensors = [loc[1] for loc, *_ in self.live_reads if loc[0] == "tensor"]
        self._live_grads = [loc[1] for loc, *_ in self.live_reads if loc[0] == "attr"]
        self._live_dicts = [loc[1] for loc, *_ in self.live_reads if loc[0] == "item"]
        self._live_names = [loc[2] for loc, *_ in self.live_reads if loc[0] == "item"]
        self._live_fit = ([e[2] for e in self.live_reads], [e[3] for e in self.live_reads])
        self._live_seen = None  # (buffers, nodes) at the live places after the last replay

    def _live_now(self) -> list | None:
        """The nodes at the live places now, if each is a plain tensor's (no view), in C; else None."""
        try:
            ts = [
                *self._live_tensors,
                *map(_GRAD_OF, self._live_grads),
                *map(operator.getitem, self._live_dicts, self._live_names),
            ]
            nodes = list(map(_NODE_OF, ts))
        except (AttributeError, KeyError, TypeError):  # a gradient or a moment gone (None), not a dict
            return None
        return nodes if list(map(_BASE_OF, ts)).count(None) == len(ts) else None

    def _remember_live(self) -> None:
        """Keep the nodes at the live places after a replay (the ones it published, mostly): a next
        replay that finds the same ones knows their buffers, which fit."""
        self._live_seen = None
        nodes = self._live_now()
        if nodes is None or list(map(_OP_OF, nodes)).count(_BUFFER_OP) != len(nodes):
            return
        buffers = list(map(_BUFFER_OF, nodes))
        numels, dtypes = self._live_fit
        if list(map(_NUMEL_OF, buffers)) == numels and all(map(operator.is_, map(_DTYPE_OF, buffers), dtypes)):
            self._live_seen = (buffers, nodes)

    def live(self) -> tuple | None:
        """(the buffers the state tensors hold now, one per ``live_reads`` entry, and their nodes);
        None if one does not fit."""
        seen = self._live_seen
        if seen is not None and not self.alias_reads and self._live_now() == seen[1]:
            return seen
        found = []
        nodes = []
        for (kind, holder, name), _, numel, dtype in self.live_reads:
            if kind == "tensor":
                t = holder
            elif kind == "attr":
                t = holder._grad if name == "grad" else getattr(holder, name)
            else:
                t = holder.get(name)
            if t is None:
                return None
            node = t._node if t._base is None else t.node
            if node.op != _BUFFER_OP:
                t.realize()
                node = t.node
            b = node.buffer
            if b.numel != numel or b.dtype is not dtype:
                return None
            found.append(b)
            nodes.append(node)
        for _, _, loc, _, _, numel, dtype in self.alias_reads:
            t = _get(loc)
            node = None if t is None else (t._node if t._base is None else t.node)
            if node is None or not node.realized or node.buffer.numel != numel or node.buffer.dtype is not dtype:
                return None
        return found, nodes

    def draw(self) -> tuple[list, list]:
        """This replay's draws, in the recorded order: the key words of fused draws, the host-drawn nodes."""
        if not self.redraws:  # fused draws alone (dropout's keys): each generator's, in its order
            return list(map(_NEXT_KEY, self.draw_generators)), []
        words, drawn = [None] * len(self.draw_generators), [None] * len(self.redraws)
        for kind, i in self.draw_order:
            if kind == "key":
                words[i] = self.draw_generators[i].next_key()
            else:
                drawn[i] = self.redraws[i]().node
        return words, drawn

    def replay(self, inputs: list, live: tuple, words=None) -> list:
        # What changes from one replay to the next, gathered first: the command buffer recorded
        # for the same values is found by this key, without walking every dispatch; the
        # dispatches are bound only when none is kept (``Device.run_again``).
        live, live_nodes = live
        changes: list = [self.uid]
        vulkan = self.device.kind == "vulkan"  # the key of what changes serves Device.run_again alone
        leaves = list(map(_BUFFER_OF, map(inputs.__getitem__, self.input_positions)))
        copies = self._stable_inputs(leaves) if vulkan else ()
        in_buffers = list(map(leaves.__getitem__, self._input_buffer_at))
        del leaves
        if vulkan:
            changes += map(_KEY_OF, in_buffers)
        record = self._record_of(inputs) if self._by_arguments else None
        # the values of params_changing, in its order
        values, values_key = (
            (list(record.values), record.values_key) if self._values_by_arguments else self._input_values(inputs)
        )
        if vulkan:
            changes += map(_KEY_OF, live)
        aliases = []
        for _, _, loc, start, numel, _, _ in self.alias_reads:  # the same window of the state as it is now
            t = _get(loc)
            b = self.device.alias((t._node if t._base is None else t.node).buffer, start, numel)
            aliases.append(b)
            changes.append(getattr(b, "binding_key", None))
        for _, _, pos in self.window_reads:  # the window of this call's argument, as the work cut it
            b = _window_of(inputs[pos])
            if b is None:  # before anything changed: the state is as the call found it
                raise JitError(
                    f"{self.name}: the work reads a window of an argument of shape {tuple(inputs[pos].shape)} that "
                    f"the recording cannot cut at this offset; call the function without vkml.jit"
                )
            aliases.append(b)
            changes.append(getattr(b, "binding_key", None))
        if self.numbers:  # state[name] += delta for each (state, name, delta), in C
            states, names, deltas = self._number_columns
            _drain(
                map(operator.setitem, states, names, map(operator.iadd, map(operator.getitem, states, names), deltas))
            )
        if words is None and (self.draw_params or (self.ring is not None and self.ring_draws)):
            words = [g.next_key() for g in self.draw_generators]  # each generator draws once per replay
        scalars = _scalar_values(self.scalar_sources) if self.scalar_sources else None
        if self.ring is not None:
            ring_entry = self._write_scalars(words, scalars)
            changes.append(ring_entry)
        for _, _, i, w in self.draw_params:
            values.append(_param(lazy._scalar_value(words[i][w], T.int32)))
        for _, _, a, j, dtype in self.scalar_params:
            values.append(_param(lazy._scalar_value(scalars[a][j], dtype)))
        if vulkan:
            changes += values_key
            if self.draw_params or self.scalar_params:
                changes += [_value_key(v) for v in values[len(values_key) :]]
        if self.made_checks:
            self._read_finished_checks()
        open_checks = []
        for made in self.made_checks:  # a check that passed never reads its values again: its buffers are free
            check, made_for, at = made
            if check.passed:
                check.nodes = ()
                if made_for is not None:
                    made_for.passed.add(at)
            else:
                open_checks.append(made)
        written, targets = self._targets()  # per slot, the buffer this replay writes and its node
        if vulkan:
            changes += map(_KEY_OF, written)
        if self.slot_alias_reads:  # the windows of kept values the work reads back, cut from this replay's
            for _, _, at, start, numel in self.slot_alias_reads:
                b = self.device.alias(written[at], start, numel)
                aliases.append(b)
                changes.append(getattr(b, "binding_key", None))
        # The checks the state read carries stay with what is computed from it.
        carried = checks.carried_by(live_nodes) if checks.active() else []
        del live_nodes
        device = self.device
        if copies:
            device.copy_queued(copies)
        del copies
        if device.kind != "vulkan" or not device.run_again(tuple(changes), written):
            self._bind(in_buffers, live, aliases, written, values)
            if self.ring is not None:
                for d, window in self.ring_windows[ring_entry]:
                    d.buffers[SCALARS] = window
            del live, in_buffers, aliases
            if device.kind == "vulkan":
                device.run(self.dispatches, key=tuple(changes))
            else:
                device.run(self.dispatches)
            self._release_reads()
        else:
            del live, in_buffers, aliases
        if self.ring is not None:
            self.ring.read_by(ring_entry, device.last_submission)
        outs = self._publish(targets, carried, open_checks, record)
        at = self._live_slot_at
        if at is not None:
            self._live_seen = (list(map(written.__getitem__, at)), list(map(targets.__getitem__, at)))
        else:
            self._remember_live()
        return outs

    def _input_values(self, inputs: list) -> tuple[list, tuple]:
        """The kernel parameters the arguments' views give (``input_params``, ``derived_params``) and
        their part of the replay's key (kept per argument nodes where they alone give them: ``_record_of``)."""
        if not self.input_params and not self.derived_params:
            return [], ()
        values = []
        for _, _, pos, ref in self.input_params:
            node = inputs[pos]
            values.append(plan_cache.view_value(node.arg, *ref) if ref is not None else _param(node.arg.value))
        for _, _, pos, level, field, divisor, bits, delta in self.derived_params:
            value = (plan_cache.view_value(inputs[pos].arg, level, field, 1, 0) + delta) // divisor
            values.append(value % (1 << bits) if bits else value)
        return values, tuple([_value_key(v) for v in values])

    def _read_finished_checks(self) -> None:
        """Read the values of earlier replays' checks that the device has finished, as a read of
        the tensors would (``checks.verify_read``; a refusal is kept, raised at that read), so that
        their buffers are free again: each replay then writes the same buffers and reuses its
        command buffer, where unread checks would take new buffers (new bindings) every replay.
        Only where memory is mapped: the read is then a copy, with no submission and no wait."""
        device = self.device
        if device.kind != "vulkan":
            return
        for check, _, _ in self.made_checks:
            if check.passed or check.message is not None or not check.nodes:
                continue
            arrays = device.download_if_ready([n.buffer for n in check.nodes])
            if arrays is None:
                continue
            values = [a.reshape(n.shape).tolist() for a, n in zip(arrays, check.nodes)]
            check.message = check.describe(values)
            if check.message is None:
                checks.passed(check)

    def _stable_inputs(self, leaves: list) -> list:
        """Put the recording's own buffer in ``leaves`` (the buffers at ``input_positions``) for each
        argument buffer that is new since the last replay (a batch uploaded every step): the replay
        copies it there on the device first (the returned (argument's, own) pairs), and submits a
        command buffer kept for its own buffers instead of recording one for every new batch. An
        argument passed again (or a window of a tensor: a dataset sliced at a few offsets) is bound
        as it is."""
        keys = list(map(_KEY_OF, leaves))
        last = self._last_inputs
        if keys == last:  # the usual replay: the same buffers as the last one
            return ()
        self._last_inputs = keys
        # new since the last replay and not a window (an alias's parent is a tensor's whole buffer)
        new = map(
            operator.and_,
            map(operator.ne, keys, last),
            map(operator.is_, map(getattr, leaves, _PARENT_NAME, _NONES), _NONES),
        )
        copies = []
        for i in itertools.compress(range(len(leaves)), new):
            b = leaves[i]
            own = self._own_inputs.get(i)
            if own is None:
                own = self._own_inputs[i] = self.device.allocate(b.dtype, b.numel)
            copies.append((b, own))
            leaves[i] = own
        return copies

    def _targets(self) -> tuple[list, list]:
        """(per slot, the buffer this replay writes, its node): the one of the slot's two that nothing
        but the slot holds, the other one written last otherwise, else a fresh one.

        A slot's buffer is held by its place in ``_spare`` or ``_last`` and by its node; the node by
        its place alone. Any other holder is a tensor (or a view, a window, a lazy node) whose value
        must stay, or ``live`` (what the work reads, never to be written). The usual replay finds
        every spare one free: counted in C, without a loop."""
        getrefcount = sys.getrefcount
        spare_b, spare_n = self._spare
        if (
            max(map(getrefcount, spare_b), default=0) > _HELD_ONCE + 1
            or max(map(getrefcount, spare_n), default=0) > _HELD_ONCE
        ):
            spare_b, spare_n = self._targets_one_by_one()
        else:
            self._spare = self._last
        self._last = (spare_b, spare_n)
        getweakrefcount = weakref.getweakrefcount
        if any(map(getweakrefcount, spare_n)):  # remembered weakly: checks' marks (of old values), a pass, a trace
            _drain(map(checks.marks.pop, map(weakref.ref, spare_n), _NONES))
            if any(map(getweakrefcount, spare_n)):  # a pass remembered for the old values would hold for the new
                for i, n in enumerate(spare_n):
                    if getweakrefcount(n):
                        spare_n[i] = _buffer_node(spare_b[i], self.slots[i], self.device)
        return spare_b, spare_n

    def _targets_one_by_one(self) -> tuple[list, list]:
        """``_targets`` where a spare buffer or node is held (an unread check's, a kept result): those
        slots one by one, found in C; leaves ``_spare`` the other ones."""
        getrefcount = sys.getrefcount
        (spare_b, spare_n), (last_b, last_n) = self._spare, self._last
        over = operator.gt
        held = map(
            operator.or_,
            map(over, map(getrefcount, spare_b), itertools.repeat(_HELD_ONCE + 1)),
            map(over, map(getrefcount, spare_n), itertools.repeat(_HELD_ONCE)),
        )
        held = list(itertools.compress(range(len(spare_b)), held))
        out_b, out_n, other_b, other_n = list(spare_b), list(spare_n), list(last_b), list(last_n)
        for i in held:
            b, n = last_b[i], last_n[i]
            # The one written last, if its value was let go since: held by last_b and other_b (or
            # last_n and other_n), a buffer by its node, and by ``b`` (``n``) and getrefcount's argument.
            if getrefcount(b) <= 5 and getrefcount(n) <= 4:
                out_b[i], out_n[i] = b, n
                other_b[i], other_n[i] = spare_b[i], spare_n[i]
            else:  # both held: a fresh one, and the held spare one forgotten (not the one written last)
                s = self.slots[i]
                out_b[i] = b = self.device.allocate(s.dtype, b.numel)
                out_n[i] = _buffer_node(b, s, self.device)
                self.fresh_buffers += 1
        self._spare = (other_b, other_n)
        return out_b, out_n

    def _prepare_publish(self) -> None:
        """What ``_publish`` does for each state slot, decided once: (how, holder, name, position in
        ``slots`` or None, requires_grad). How: 0 the place takes None, 1 the tensor itself gets the
        new value, 2 the tensor now at the place does, 3 a new gradient, 4 a new tensor in a dict,
        5 a new tensor set as an attribute."""
        at = {id(s): i for i, s in enumerate(self.slots)}
        nodes = [[_buffer_node(b, s, self.device) for b in s.mine] for s in self.slots]
        # (buffers, nodes) per slot: those written last (by the recorded call), the other ones
        self._last = ([s.mine[0] for s in self.slots], [pair[0] for pair in nodes])
        self._spare = ([s.mine[1] for s in self.slots], [pair[1] for pair in nodes])
        self._publish_state = []
        for s in self.state_slots:
            kind, holder, name = s.loc
            if s.last is None:
                how = 0
            elif kind == "tensor":
                how = 1
            elif s.same_object:
                how = 2
            elif kind == "item":
                how = 4
            elif name == "grad" and isinstance(holder, Tensor) and holder.__class__.grad is _GRAD:
                how = 3
            else:
                how = 5
            self._publish_state.append((how, s.loc, at.get(id(s)), s.requires_grad))
        self._prepare_live_slots()
        # The two usual ways apart, for a loop each: a tensor that is state itself (a parameter),
        # and one that stays at its place (an optimizer's moment updated in place).
        # (tensors, positions in ``slots``), set in C; the places of the others, read each replay
        self._publish_fixed = (
            [loc[1] for how, loc, i, _ in self._publish_state if how == 1],
            [i for how, loc, i, _ in self._publish_state if how == 1],
        )
        same = [(loc, i) for how, loc, i, _ in self._publish_state if how == 2]
        self._publish_items = (
            [loc[1] for loc, _ in same if loc[0] == "item"],
            [loc[2] for loc, _ in same if loc[0] == "item"],
            [i for loc, i in same if loc[0] == "item"],
        )
        self._publish_same = [(loc, i) for loc, i in same if loc[0] != "item"]
        # New gradients (how 3) of parameters: the gradient tensor published last is given the new
        # node where nothing else holds it (``_publish_grads``); the others, new tensors.
        grads = [e for e in self._publish_state if e[0] == 3 and not e[3]]
        self._publish_grads = (
            [loc[1] for _, loc, _, _ in grads],
            [i for _, _, i, _ in grads],
            [self.slots[i].shape for _, _, i, _ in grads],
            [self.slots[i].dtype for _, _, i, _ in grads],
        )
        # ids of the gradient tensors the last replay left at those places: not references, which
        # would hold them (another recording of the function may have replaced them since)
        self._published_grads = None
        # Where each gradient's parameter is itself state this publishing gives its slot's node, of
        # the gradient's shape and dtype, the gradient setter's checks hold without a look.
        fixed_at = dict(zip(map(id, self._publish_fixed[0]), self._publish_fixed[1]))
        self._grads_follow = all(
            id(holder) in fixed_at
            and tuple(self.slots[fixed_at[id(holder)]].shape) == tuple(shape)
            and self.slots[fixed_at[id(holder)]].dtype is dtype
            for holder, _, shape, dtype in zip(*self._publish_grads)
        )
        self._publish_at = [*self._publish_fixed[1], *self._publish_items[2]]
        self._publish_at_with_grads = [*self._publish_at, *self._publish_grads[1]]
        self._publish_state = [e for e in self._publish_state if e[0] not in (1, 2) and not (e[0] == 3 and not e[3])]
        self._publish_outs = [at[id(s)] for s in self.out_slots]
        for s in self.slots:
            s.mine = s.last = None  # the replays' lists hold the buffers alone (counted by _targets)
        self._publish_checks = [
            (describe, error, [at[id(s)] for s in slots], by_args)
            for (describe, error, slots), by_args in zip(self.check_slots, self._check_by_arguments)
        ]
        # What the replay's checks mark: every slot's node but the checks' own (the mark would hold
        # the check, which holds its nodes: ``checks.submitted``).
        own = {i for _, _, slots, _ in self._publish_checks for i in slots}
        self._publish_marked = [i for i in range(len(self.slots)) if i not in own]

    def _prepare_live_slots(self) -> None:
        """Where every live place is one that publishing gives a slot's node in place (a parameter, a
        moment updated in place: ways 1 and 2), the slot of each: after a replay the live places
        hold those slots' nodes and buffers, which fit (``_remember_live`` need not look)."""
        published = {}
        for how, (kind, holder, name), i, _ in self._publish_state:
            if how == 1 or how == 2:
                published[(kind, id(holder), name)] = i
        at = [published.get((kind, id(holder), name)) for (kind, holder, name), *_ in self.live_reads]
        fits = all(
            i is not None and self.slots[i].dtype is dtype and math.prod(self.slots[i].shape) == numel
            for i, (_, _, numel, dtype) in zip(at, self.live_reads)
        )
        self._live_slot_at = at if fits else None

    def _publish(self, nodes: list, carried: list, open_checks: list, record) -> list:
        """Give the state places, the outputs and the checks ``nodes`` (over the buffers just
        written, one per slot). ``record``: the arguments' (``_record_of``) or None; the checks
        that passed for them are not made again."""
        passed = record.passed if record is not None else ()
        made = (
            []
            if len(passed) == len(self._publish_checks)
            else [
                (checks.Check(_nothing, tuple([nodes[i] for i in at]), describe, error), record if by_args else None, k)
                for k, (describe, error, at, by_args) in enumerate(self._publish_checks)
                if k not in passed
            ]
        )
        ts = self._publish_fixed[0]
        dicts, names, _ = self._publish_items
        ts = [*ts, *map(operator.getitem, dicts, names)]
        holders, at, shapes, dtypes = self._publish_grads
        grads = list(map(_GRAD_OF, holders)) if holders else None
        if (
            grads is not None
            and self._grads_follow  # the gradient setter's checks hold (``_prepare_publish``)
            and list(map(id, grads)) == self._published_grads  # alive (in grads): their ids are theirs alone
            and max(map(sys.getrefcount, grads)) <= _HELD_ONCE + 1  # the place and this list
            and not any(map(weakref.getweakrefcount, grads))
            and list(map(_BASE_OF, holders)).count(None) == len(holders)
        ):
            # Held by nothing else, the gradient each place holds is unseen: it takes the new value,
            # set with the parameters' and the moments' in one pass.
            _set_nodes([*ts, *grads], map(nodes.__getitem__, self._publish_at_with_grads))
            grads = None
        else:
            _set_nodes(ts, map(nodes.__getitem__, self._publish_at))
        for loc, i in self._publish_same:
            t = _get(loc)
            t._node = nodes[i]
            t._vcount += 1
        if grads is not None:
            if (
                list(map(id, grads)) == self._published_grads  # alive (in grads): their ids are theirs alone
                and max(map(sys.getrefcount, grads)) <= _HELD_ONCE + 1  # the place and this list
                and not any(map(weakref.getweakrefcount, grads))
                and list(map(_BASE_OF, holders)).count(None) == len(holders)
                and list(map(_SHAPE_OF, map(_NODE_OF, holders))) == shapes  # the gradient setter's checks
                and all(map(operator.is_, map(_DTYPE_OF, map(_NODE_OF, holders)), dtypes))
            ):
                # Held by nothing else, the gradient each place holds is unseen: it takes the new value.
                _set_nodes(grads, map(nodes.__getitem__, at))
            else:
                del grads
                for holder, i in zip(holders, at):
                    self._publish_one(3, ("attr", holder, "grad"), nodes[i], False)
            self._published_grads = list(map(id, map(_GRAD_OF, holders)))
        for how, loc, i, requires_grad in self._publish_state:
            if how == 0:
                kind, holder, name = loc
                setattr(holder, name, None) if kind == "attr" else holder.__setitem__(name, None)
                continue
            self._publish_one(how, loc, nodes[i], requires_grad)
        outs = [Tensor(nodes[i]) for i in self._publish_outs]
        self.made_checks = open_checks + made  # checks of earlier replays not read yet, then this one's
        if made or carried:  # else the targets carry no marks: _targets dropped those of their old values
            made = [check for check, _, _ in made]
            checks.submitted_anew(made + carried, list(map(nodes.__getitem__, self._publish_marked)))
        return outs

    @staticmethod
    def _publish_one(how: int, loc: tuple, node, requires_grad: bool) -> None:
        """A new tensor over ``node`` at place ``loc`` (``_prepare_publish``'s ways 3, 4 and 5)."""
        kind, holder, name = loc
        t = Tensor(node)
        if requires_grad:
            t.requires_grad_(True)
        if how == 3 and holder._base is None:
            # Tensor.grad's setter checks the dtype and size against the parameter's own:
            # those the recording's were, unless the parameter was given another.
            own = holder._node
            if own.shape != node.shape or own.dtype is not node.dtype:
                holder.grad = t  # PyTorch's error
            holder._grad = t
        elif how == 4:
            holder[name] = t
        else:
            setattr(holder, name, t)


class _ArgumentRecord:
    """What a recording keeps for argument nodes it saw (``_Program._record_of``)."""

    __slots__ = ("refs", "values", "values_key", "passed")

    def __init__(self, refs: tuple, values: tuple, values_key: tuple):
        self.refs = refs  # weak references to the nodes
        self.values, self.values_key = values, values_key  # their view parameters, where they alone give them
        self.passed: set = set()  # indices in check_slots of the checks that passed for them


def _words_of(at, of) -> list:
    """Per source, the ring words it fills (``at`` the words, ``of`` each one's source)."""
    words = [[] for _ in range(int(of.max()) + 1)] if len(of) else []
    for w, k in zip(at.tolist(), of.tolist()):
        words[k].append(w)
    return words


def _set_nodes(tensors: list, nodes) -> None:
    """``t._node = node; t._vcount += 1`` for each pair, in C (a new value in place)."""
    _drain(map(setattr, tensors, _NODE_NAME, nodes))
    _drain(map(setattr, tensors, _VCOUNT_NAME, map(operator.add, map(_VCOUNT_OF, tensors), _ONES)))


_drain = collections.deque(maxlen=0).extend  # runs an iterator to its end, in C
_NODE_NAME, _VCOUNT_NAME = itertools.repeat("_node"), itertools.repeat("_vcount")
_PARENT_NAME = itertools.repeat("parent")
_ONES, _NONES = itertools.repeat(1), itertools.repeat(None)  # shared: map() stops at its shortest iterable
_call = operator.methodcaller("__call__")  # of a weak reference: its object or None
_NEXT_KEY = operator.methodcaller("next_key")


def _held_once() -> int:
    """What ``sys.getrefcount`` says through ``map`` of an object one list alone holds."""
    return max(map(sys.getrefcount, [object()]))


_HELD_ONCE = _held_once()
_BUFFER_OP = Op.BUFFER
_F32_OVERFLOW = 2.0**128 - 2.0**103  # the least magnitude float32 rounds to infinity (graph/build.py's)
_KEY_OF = operator.attrgetter("binding_key")  # a Vulkan buffer's
_TENSOR_NODE_OF = operator.attrgetter("node")  # a Tensor's (a property: a view's node is brought up to date)
_DEVICE_NAME_OF = operator.attrgetter("device.name")
_REQUIRES_GRAD_OF = operator.attrgetter("_requires_grad")
_VCOUNT_OF = operator.attrgetter("_vcount")
_SHAPE_OF = operator.attrgetter("shape")
_GRAD_OF = operator.attrgetter("_grad")
_NODE_OF = operator.attrgetter("_node")
_BASE_OF = operator.attrgetter("_base")
_OP_OF = operator.attrgetter("op")
_BUFFER_OF = operator.attrgetter("buffer")
_NUMEL_OF = operator.attrgetter("numel")
_DTYPE_OF = operator.attrgetter("dtype")
_TENSOR_CLASS = itertools.repeat(Tensor)
_GRAD = Tensor.grad  # the property a replay's new gradients bypass where its checks hold
_nothing = Node(Op.BUFFER, (), None, (), None, None)  # a guard nothing computes through (replayed checks are done)


def _buffer_node(buffer, s: _Slot, device) -> Node:
    node = Node(_BUFFER_OP, (), None, s.shape, s.dtype, device)
    node.buffer = buffer
    return node


def _window_of(node):
    """The alias the graph builder cuts for a view of view node ``node``'s realized source, or None."""
    window = lazy._window_of_buffer(node.srcs[0], node.arg)
    return None if window is None else window.srcs[0].buffer


def _window_input(call: _Call, first: _Call, leaf, b, b_first):
    """The position of an argument's view over ``leaf`` (an argument's realized buffer) of which
    ``b`` is the window the graph builder cut (``graph.build._window_of_buffer``: the work viewed
    the argument anew, its gradient's transpose), the same in both recorded calls; None if none.
    A replay cuts the window of its own argument so: its offset follows the argument's."""
    for pos, n in enumerate(call.inputs):
        if n.op != "view" or n.srcs[0] is not leaf:
            continue
        n_first = first.inputs[pos]
        w, w_first = _window_of(n), _window_of(n_first)
        if (
            w is not None
            and w_first is not None
            and (w.start, w.numel) == (b.start, b.numel)
            and (w_first.start, w_first.numel) == (getattr(b_first, "start", None), b_first.numel)
        ):
            return pos
    return None


def _derived_view_param(node, node_first, ref, call: _Call, first: _Call, node_pos: dict):
    """A view parameter of a view the realize composed over an argument's buffer (an argument's
    window broadcast or reshaped inside the work): (input position, level, field, divisor, bits,
    delta) where the raw value is the argument view's own at the same level and field plus
    ``delta`` in both recorded calls; None if no argument view over the same buffer fits so.

    Composing views keeps the lower view's offset as a term of the sum (the upper views, equal in
    both calls, add the same amount), so a delta equal in both calls is the composition's."""
    level, field, divisor, bits = ref
    if node.op != "view" or node_first.op != "view" or not node.srcs or id(node.srcs[0]) not in node_pos:
        return None
    leaf = node.srcs[0]
    raw = plan_cache.view_value(node.arg, level, field, 1, 0)
    raw_first = plan_cache.view_value(node_first.arg, level, field, 1, 0)
    for pos, inp in enumerate(call.inputs):
        if inp.op != "view" or inp.srcs[0] is not leaf or level >= len(inp.arg.views):
            continue
        inp_first = first.inputs[pos]
        try:
            delta = raw - plan_cache.view_value(inp.arg, level, field, 1, 0)
            delta_first = raw_first - plan_cache.view_value(inp_first.arg, level, field, 1, 0)
        except TypeError:  # no mask at that level
            continue
        if delta == delta_first:
            return pos, level, field, divisor, bits, delta
    return None


def _value_key(v) -> tuple:
    """A parameter's value in a replay's key: -0.0 is not 0.0."""
    return (v.__class__, v if v else repr(v))


def _param(value):
    return int(value) if value.__class__ is bool else value


def _match(candidates: dict, then, now, dtype):
    for (v0, v1), key in candidates.items():
        a, b = lazy._scalar_value(v0, dtype), lazy._scalar_value(v1, dtype)
        if _same_value(a, then) and _same_value(b, now):
            return key
    return None


def _written_ids(dispatches) -> set:
    """ids of the buffers ``dispatches`` write."""
    return {id(b) for d in dispatches for n, b in d.buffers.items() if _writes(d, n)}


def _writes(d, name: str) -> bool:
    return name in _written_names(d.kernel)


def _written_names(kernel) -> frozenset:
    """Names of the buffers ``kernel`` writes (its declarations say so)."""
    found = _WRITTEN.get(id(kernel))
    if found is None or found[0]() is not kernel:
        names = frozenset(b.name for b in kernel.buffers if b.access != "read")
        found = _WRITTEN[id(kernel)] = (weakref.ref(kernel), names)
    return found[1]


_WRITTEN: dict = {}  # id(kernel) -> (weak reference, names written)


# ---------------------------------------------------------------------- the public objects


class _Captured:
    """The recording, guard and replay shared by ``jit`` (a function) and ``capture`` (a block)."""

    def __init__(self, name: str, fn, state, max_captures: int):
        self.name = name
        self.fn = fn
        self.state = tuple(state) if isinstance(state, (list, tuple)) else (state,)
        self.max_captures = max_captures
        self.programs: list[_Program] = []  # one per argument signature seen (at most max_captures)
        self.previous: list[_Call] = []  # the last recorded call of each signature not captured yet
        self.warmup = 0
        self._guard_changed = False  # whether the last recorded call's settings differed from the one before
        self.counts = {"recorded_calls": 0, "captures": 0, "replays": 0}
        self._open: tuple | None = None

    @property
    def ready(self) -> bool:
        """Whether a recording is held: a call with the same signature replays it."""
        return bool(self.programs)

    @property
    def stats(self) -> dict:
        """A new dict of the counts, with ``fresh_buffers`` (slots that could not be reused) summed."""
        return {**self.counts, "fresh_buffers": sum(p.fresh_buffers for p in self.programs)}

    # -- recording
    def _start(self, args, kwargs, extra_roots=()) -> None:
        if len(self.programs) >= self.max_captures:
            raise JitError(
                f"{self.name}: {len(self.programs)} recordings held (max_captures) and this call fits none: the "
                f"arguments' shapes, dtypes, views or devices, or the modules' and optimizers' settings keep changing"
            )
        if schedule.recorder is not None:
            raise JitError(f"{self.name}: captures do not nest (another capture is recording)")
        tensors: list = []
        template = _flatten((args, kwargs), tensors)
        objects = [v for v in (*args, *kwargs.values()) if not _is_tensor(v)]
        roots = _Roots([*objects, *extra_roots, *self.state])
        for t in tensors:  # an argument is an input, never state
            roots.tensors.pop(id(t), None)
        _realize_state(roots)
        recorder = _Recorder(self.name)
        call = _Call(roots, tensors, template, recorder)
        self._open = (roots, call, tensors, [t._node for t in tensors])
        schedule.recorder = recorder

    def _finish(self, box: list, failed: bool):
        result = box.pop()
        roots, call, tensors, nodes = self._open
        self._open = None
        try:
            if not failed:
                outs: list = []
                _flatten(result, outs)
                _realize_state(roots, outs)
        finally:
            schedule.recorder = None
        if failed:
            return None
        # Every call returns tensors without autograd history, recorded or replayed alike: a replay
        # has none to give, and a recorded call's graph would keep its intermediates alive.
        result = _detached(result)
        self.counts["recorded_calls"] += 1
        for t, n in zip(tensors, nodes):
            if t._node is not n:
                raise JitError(
                    f"{self.name}: the captured code writes into its argument of shape {t.shape}; pass what it "
                    f"updates as state (state=...), not as an argument"
                )
        call.finish(roots, result)
        same = [c for c in self.previous if c.signature == call.signature and c.arg_template == call.arg_template]
        previous = same[0] if same else None
        self.previous = [c for c in self.previous if c is not previous][-self.max_captures :] + [call]
        program = None
        self._guard_changed = previous is not None and previous.guard != call.guard
        if previous is not None and previous.settings_changed and call.settings_changed:
            raise JitError(
                f"{self.name}: the captured function changes an optimizer's hyper-parameters itself (a learning-rate "
                f"scheduler's step() inside it): a replay runs no Python and would leave them as they are. Step the "
                f"scheduler after the call, outside the function"
            )
        if previous is not None and previous.guard == call.guard and _same_work(previous.recorder, call.recorder):
            try:
                program = _Program(self.name, previous, call)
            except _NotSteady:
                program = None
        if program is not None:
            self.previous.remove(call)
            outs_now = list(call.outputs)
            del previous, same, call, result, outs
            program.rebase()
            program.verify_internal()
            program.bind_roots(roots)
            self.programs.append(program)
            self.warmup = 0
            self.counts["captures"] += 1
            return _rebuild(program.out_template, outs_now)
        self.warmup += 1
        if self.warmup > MAX_WARMUP:
            if self._guard_changed:
                raise JitError(
                    f"{self.name}: {self.warmup} calls in a row ran with other settings than the call before (an "
                    f"optimizer's hyper-parameters, such as a learning rate a scheduler sets every step, a module's "
                    f"train()/eval(), grad mode): a recording holds them as constants, so vkml.jit replays only "
                    f"work whose settings repeat. Adam's lr (AdamW's with weight_decay=0) may change between "
                    f"replays; for the others, step the scheduler less often or call the function without "
                    f"vkml.jit"
                )
            raise JitError(
                f"{self.name}: {self.warmup} calls in a row recorded different work (kernels, shapes or random "
                f"draws change every call); vkml.jit replays only work that repeats"
            )
        return result

    # -- replay
    def _lookup(self, args, kwargs):
        """(program, the arguments' trace order, live state buffers) of a recording that fits this call, or None."""
        if not self.programs:
            return None
        if not kwargs and all(map(isinstance, args, _TENSOR_CLASS)):  # the usual call: tensors alone
            tensors = list(args)
            template = _tensors_template(len(args))
        else:
            tensors = []
            template = _flatten((args, kwargs), tensors)
        inputs, signature = _input_signature(tensors)
        for program in self.programs:
            if program.arg_template == template and program.signature == signature:
                if program.fast_guard.fits() or program.roots.guard() == program.guard:
                    live = program.live()
                    if live is not None:
                        return program, inputs, live
        return None

    def _replay(self, found) -> list:
        program, inputs, live = found
        del found
        words, drawn = program.draw()  # before the replay, in the recorded order, as the call drew them
        outs = program.replay([*inputs, *drawn] if drawn else inputs, live, words)
        self.counts["replays"] += 1
        return _rebuild(program.out_template, outs)


def _detached(value):
    if _is_tensor(value):
        return value.detach() if value.requires_grad or value.grad_fn is not None else value
    if isinstance(value, (list, tuple)):
        items = [_detached(v) for v in value]
        return type(value)(items) if type(value) in (list, tuple) else type(value)(*items)
    if isinstance(value, dict):
        return {k: _detached(v) for k, v in value.items()}
    return value


class _TorchScriptNames(type):
    """``vkml.jit``'s class: torch.jit's TorchScript names (``script``, ``trace``, ...) are set on it by
    vkml/nn/torchscript.py, which ``import vkml`` does not load (vkml.nn is imported lazily); the first
    lookup of a missing name loads it, so ``@vkml.jit.script`` works before anything touched ``vkml.nn``."""

    def __getattr__(cls, name: str):
        if name.startswith("__") or "vkml.nn.torchscript" in sys.modules:
            raise AttributeError(f"type object 'jit' has no attribute '{name}'")
        importlib.import_module("vkml.nn.torchscript")  # lazy: off import vkml's path
        return getattr(cls, name)


class jit(metaclass=_TorchScriptNames):  # noqa: N801  (a decorator, spelled as torch.jit's functions are)
    """Record ``fn``'s work on its first calls, then replay it in one submission per call (docs/jit.md).

    >>> step = vkml.jit(lambda x: (x * 2).sum())   # doctest: +SKIP
    >>> for x in batches: loss = step(x)           # doctest: +SKIP

    ``state``: objects (modules, optimizers, tensors) the function updates besides those reachable
    from its arguments, closure and globals. ``max_captures``: how many times a changing signature
    may record anew before ``JitError``. Returned tensors are new tensors without autograd history.
    """

    def __init__(self, fn=None, *, state=(), max_captures: int = MAX_CAPTURES):
        if fn is not None and not callable(fn):
            raise TypeError(f"vkml.jit: expected a function, got {type(fn).__name__}")
        self._state, self._max = state, max_captures
        self._fn = fn
        if fn is not None:
            functools.update_wrapper(self, fn)
            name = getattr(fn, "__qualname__", type(fn).__name__)
            self._captured = _Captured(f"vkml.jit({name})", fn, state, max_captures)

    def __call__(self, *args, **kwargs):
        if self._fn is None:  # @vkml.jit(state=...): this call gets the function
            return jit(args[0], state=self._state, max_captures=self._max)
        c = self._captured
        found = c._lookup(args, kwargs)
        if found is not None:
            return c._replay(found)
        c._start(args, kwargs, _function_roots(self._fn))
        try:
            box = [self._fn(*args, **kwargs)]
        except BaseException:
            c._finish([None], failed=True)
            raise
        return c._finish(box, failed=False)  # the box, emptied there: this frame keeps no autograd graph alive

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    @property
    def stats(self) -> dict:
        """``recorded_calls``, ``captures``, ``replays`` and ``fresh_buffers`` (slots that could not be reused)."""
        return self._captured.stats


class capture:  # noqa: N801
    """Capture a block of code that is not a function (docs/jit.md).

    >>> g = vkml.jit.capture(state=(model, opt))          # doctest: +SKIP
    >>> for x, y in batches:                               # doctest: +SKIP
    ...     if g.ready:
    ...         loss, = g.replay(x, y)
    ...     else:
    ...         with g.record(x, y):
    ...             loss = F.mse_loss(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    ...             g.returns(loss)
    """

    def __init__(self, *, state=(), max_captures: int = MAX_CAPTURES):
        self._captured = _Captured("vkml.jit.capture", None, state, max_captures)
        self._result = None

    @property
    def ready(self) -> bool:
        """Whether ``replay`` can run (two recordings of the block did the same work)."""
        return self._captured.ready

    @property
    def stats(self) -> dict:
        return self._captured.stats

    def returns(self, *tensors) -> None:
        """Inside ``record``: the tensors ``replay`` returns (new ones each replay)."""
        self._result = tensors

    def record(self, *inputs):
        """A context that runs its block normally, recording it; ``inputs`` are what ``replay`` takes anew."""
        return _Recording(self, inputs)

    def replay(self, *inputs) -> tuple:
        """Run the recorded work with ``inputs`` in place of the recorded ones; the tensors given to ``returns``."""
        c = self._captured
        if not c.programs:
            raise JitError("vkml.jit.capture: nothing to replay yet; record the block (twice: see docs/jit.md)")
        found = c._lookup(inputs, {})
        if found is None:
            raise JitError(
                "vkml.jit.capture: no recording fits these inputs (their shapes, dtypes, views or devices) or the "
                "state; record the block with them"
            )
        return c._replay(found)


class _Recording:
    def __init__(self, owner: capture, inputs):
        self.owner, self.inputs = owner, inputs

    def __enter__(self):
        self.owner._result = ()
        self.owner._captured._start(self.inputs, {})
        return self.owner

    def __exit__(self, kind, value, tb) -> bool:
        c = self.owner._captured
        result, self.owner._result = self.owner._result, None
        self.owner._last = c._finish([result], failed=kind is not None)
        return False


jit.capture = capture  # vkml.jit.capture: the same machinery for a block
jit.JitError = JitError
