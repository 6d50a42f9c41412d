"""Reusing a realize's whole plan when the same graph structure is built again.

A training step or an inference loop builds the same graph on every iteration: the same ops,
shapes, dtypes, views and sharing, over new data and new constant values. Planning
(fusion), lowering and kernel selection depend on that structure alone, so the scheduler
turns a plan into a ``Recipe`` (what to allocate, which kernel reads which node's buffer,
which constant feeds which parameter; positions, never nodes) and keeps it under the
structure's ``trace`` key. A later realize of the same structure binds the recipe to its
own nodes (``bind``) without planning anything: the dispatches are the ones a fresh plan
would make, so the results are bit-identical.

The key is exact, not a hash: every node's op, argument (a view's ``structure`` but not its
offsets and mask bounds, the reduced axes, the op name and compute dtype; a constant's dtype
but not its value), shape, dtype and sources by position, and the positions of the targets.
Constants and views whose values a kernel bakes in (past the parameter budgets) are checked
by value when a recipe is reused. The same walk, over one group, keys the group's kernel
template (``group_structure``, read by ``scheduler.Signature``).

A realize looks first without walking (``find``): every node gets a structure id as it is built
(``Node.skey``, vkml/graph/node.py), and ``remember`` keeps each recipe under its roots' ids with
the way to reach each position from the roots; ``find`` reaches them and checks every edge and
position, so it hands a recipe only to the graph that ``trace`` would key the same.

    >>> import vkml
    >>> from vkml import debug
    >>> x = vkml.ones(4)
    >>> for step in range(3):
    ...     y = (x * step + 1).realize()
    >>> debug.counters()["plan_replays"] >= 2   # doctest: +SKIP
    True
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections import OrderedDict
from typing import NamedTuple

from ..graph.node import Node, Op
from ..ir import lru
from ..runtime.base import Dispatch
from ..runtime.counters import counters

LEAF, OUT, TEMP, CUSTOM = 0, 1, 2, 3  # where a kernel's buffer comes from (``BufferRef.source``)

_recipes: OrderedDict = OrderedDict()


def trace(roots: list[Node], mode_of_matmul) -> tuple[list[Node], tuple | None]:
    """``graph.toposort(roots)`` and the structure key of that graph (None: not cacheable).

    One walk does both: it is the order ``toposort`` gives (tests/test_plan_cache.py checks
    it), and each node, when emitted, adds (op, argument, shape, dtype, source positions) to
    the key. ``mode_of_matmul(node)`` names a matmul's tiles, which depend on the device.
    """
    with _trace_lock:
        order, key, cacheable = _walk(roots, mode_of_matmul, None, reversed, next(_walks))
    return order, tuple(key) if cacheable else None


def group_structure(root: Node, mode_of_matmul, loaded) -> tuple[list[Node], tuple]:
    """The nodes of a kernel group, sources before users, and the group's structure: the template key's part.

    The walk of ``trace`` (one describes a graph's structure for both keys), from the group's
    root, with the nodes in ``loaded`` (ids: results of other kernels, or realized) taken as
    leaves: a ``buffer`` entry each, whether computed or realized, so one template serves both.
    Sources are taken in order (``trace`` takes them last first, as dispatches go): the group's
    leaves, constants and views are numbered so, and that numbering names the kernel's bindings
    and parameters.
    """
    with _trace_lock:
        order, key, _ = _walk([root], mode_of_matmul, loaded, iter, next(_walks))
    return order, tuple(key)


_trace_lock = threading.Lock()
_walks = itertools.count(1)  # a new mark per walk (Node.trace_mark starts at 0: never seen)


def _walk(roots: list[Node], mode_of_matmul, loaded, sources_in, mark: int) -> tuple[list[Node], list, bool]:
    """Post-order from ``roots`` (the last first), each node's sources in the order ``sources_in`` gives.

    Returns the nodes, one key entry each (then the roots' positions), and whether a user kernel,
    which allocates its outputs, keeps the structure from being cached.

    Every realize walks its whole graph here, so the walk keeps its marks on the nodes (a
    node whose ``trace_mark`` is this walk's was seen, ``trace_pos`` is its position once
    emitted) rather than in a dict by id: about half the time. The lock keeps two threads'
    walks from overwriting each other's marks.
    """
    VIEW, CONST, KERNEL, BUFFER = Op.VIEW, Op.CONST, Op.KERNEL, Op.BUFFER  # locals: read for every node
    ELEMENTWISE, MATMUL = Op.ELEMENTWISE, Op.MATMUL
    order: list[Node] = []
    key: list = []
    emit = key.append
    cacheable = True
    n = 0  # len(order)
    # The node being walked and the iterator over its sources are locals; the stack holds its users'
    # (pushed on the way down, popped once it is emitted), so no step reads the stack's top again.
    stack: list = []
    for root in reversed(roots):
        if root.trace_mark == mark:
            continue
        root.trace_mark = mark
        node, sources = root, sources_in(root.srcs)
        while True:
            for s in sources:
                if s.trace_mark == mark:
                    continue
                s.trace_mark = mark
                if loaded is not None and id(s) in loaded:  # another kernel's result: a leaf of the group
                    s.trace_pos = n
                    n += 1
                    order.append(s)
                    emit((BUFFER, None, s.shape, s.dtype, ()))
                    continue
                srcs = s.srcs
                if srcs:
                    if s.op == VIEW:
                        const = srcs[0]
                        if (
                            const.op == CONST
                            and const.trace_mark != mark
                            and (loaded is None or id(const) not in loaded)
                        ):
                            # A broadcast constant (every scalar operand has one): both emitted at once, as pushes and pops would.
                            const.trace_mark, const.trace_pos, s.trace_pos = mark, n, n + 1
                            order += (const, s)
                            emit((CONST, None, const.shape, const.dtype, ()))
                            emit((VIEW, s.arg.structure(const.numel), s.shape, s.dtype, n))
                            n += 2
                            continue
                    stack.append((node, sources))
                    node, sources = s, sources_in(srcs)
                    break
                # No sources (a buffer, a constant): emitted at once, where a push and a pop would emit it.
                op = s.op
                if op == KERNEL:
                    cacheable = False
                s.trace_pos = n
                n += 1
                order.append(s)
                emit((op, None if op == CONST else s.arg, s.shape, s.dtype, ()))
            else:  # every source is emitted
                op, srcs = node.op, node.srcs
                count = len(srcs)
                if count == 2:
                    refs = (srcs[0].trace_pos, srcs[1].trace_pos)
                elif count == 1:
                    refs = srcs[0].trace_pos
                else:
                    refs = tuple([s.trace_pos for s in srcs])
                if op == ELEMENTWISE:
                    arg = node.arg
                elif op == VIEW:
                    # Offsets and mask bounds are parameters, as constants' values.
                    arg = node.arg.structure(srcs[0].numel)
                elif op == MATMUL:
                    arg = mode_of_matmul(node)
                elif op == CONST:
                    arg = None  # the value is a kernel parameter (baked values are checked by ``lookup``)
                else:
                    arg = node.arg
                    if op == KERNEL:  # a user's kernel allocates its own outputs; a fused op's names its structure
                        arg = getattr(arg, "structure", None)
                        if arg is None:
                            cacheable = False
                emit((op, arg, node.shape, node.dtype, refs))
                node.trace_pos = n
                n += 1
                order.append(node)
                if not stack:
                    break
                node, sources = stack.pop()
    emit(tuple([r.trace_pos for r in roots]))
    return order, key, cacheable


class Output(NamedTuple):
    """A buffer the plan writes for the node at ``position``."""

    position: int
    dtype: object
    numel: int


class BufferRef(NamedTuple):
    """A kernel's buffer ``name``: from ``source`` LEAF (``index``: the position of a realized node), OUT
    (an output index), TEMP (a temporary's index) or CUSTOM (the position of a user kernel's output)."""

    name: str
    source: int
    index: int


class ViewParam(NamedTuple):
    """A view's offset (``field`` -1) or mask bound (2 * dim, + 1 for the upper) at ``level`` of the view at
    ``position``, floor-divided by ``divisor``, modulo 2^``bits`` where ``bits`` is nonzero (``view_value``)."""

    position: int
    level: int
    field: int
    divisor: int
    bits: int


class CallParam(NamedTuple):
    """Parameter ``name`` of the fused call (``arg.call.params``: attention's scale, dropout's key) whose
    output node is at ``position``: each call of the same structure has its own values."""

    position: int
    name: str


class ParamRef(NamedTuple):
    """A kernel's parameter ``name``: the constant at position ``at`` (an int), a ``ViewParam`` or a ``CallParam``."""

    name: str
    at: int | ViewParam | CallParam


class Step(NamedTuple):
    """One dispatch. A user kernel's step is (None, its node's position, None, None): it lowers that node."""

    kernel: object
    grid: object
    buffers: tuple[BufferRef, ...] | None
    params: tuple[ParamRef, ...] | None


class Baked(NamedTuple):
    """A constant (the repr of its value: -0.0 differs from 0.0, NaN equals NaN) or view (its ViewStack)
    built into a kernel's code, checked by value when the recipe is reused."""

    position: int
    value: object


class Recipe:
    """A lowered plan in terms of positions in the ``trace`` order.

    - ``outputs``: one ``Output`` per buffer the plan writes for a node.
    - ``temps``: one (dtype, numel) per temporary buffer.
    - ``steps``: one ``Step`` per dispatch (its ``BufferRef``s and ``ParamRef``s).
    - ``side``: (temporary's index, position, output index) of each output of a fused call (a kernel node
      whose ``arg`` names a ``structure``) that the plan does not reach: ``finish`` makes that output's node,
      if alive, a buffer (attention's log-sum-exp, which the backward reads after the forward's realize).
    - ``custom_roots``: positions of user kernel nodes that become buffers (such plans are never cached).
    - ``baked``: the ``Baked`` constants and views.
    - ``replay``: what ``replay_key`` reads (made on its first call), False where a user kernel runs.
    - ``sizes``: what ``allocate`` asks the device for (made on its first call).
    - ``placement``: where those buffers were on its last replays, a list each (the device fills it:
      ``MemoryPool.take_placed``), so a loop's replays bind the same memory and reuse recordings.
    - ``positions``: each output's position (``finish``'s, made on its first call).
    - ``scalars``: what its eager replays' parameters did (vkml/schedule/eager_scalars.py's ``Watch``).
    """

    __slots__ = (
        "outputs",
        "temps",
        "steps",
        "side",
        "custom_roots",
        "baked",
        "replay",
        "sizes",
        "placement",
        "positions",
        "scalars",
    )

    def __init__(self):
        self.outputs: list[Output] = []
        self.temps: list[tuple] = []
        self.steps: list[Step] = []
        self.side: list[tuple] = []
        self.custom_roots: list[int] = []
        self.baked: list[Baked] = []
        self.replay: tuple | bool | None = None
        self.sizes: tuple | None = None  # (dtype, numel) of each output, then each temporary (``allocate``)
        self.placement: list | None = None
        self.positions: tuple | None = None
        self.scalars = None


def bind(recipe: Recipe, order: list[Node], device) -> tuple[list[Dispatch], list, list]:
    """The dispatches of ``recipe`` over the nodes of ``order``, with their output and temporary buffers.

    Returns (dispatches, output buffers by output index, temporaries). User kernel outputs are
    found in ``by_id`` (they allocate their own), which ``finish`` reads too.
    """
    outs, temps = allocate(recipe, device)
    return dispatches_of(recipe, order, outs, temps), outs, temps


def allocate(recipe: Recipe, device) -> tuple[list, list]:
    """New output and temporary buffers for a run of ``recipe`` (``bind``'s)."""
    sizes = recipe.sizes
    if sizes is None:
        sizes = recipe.sizes = tuple([(dtype, numel) for _, dtype, numel in recipe.outputs] + recipe.temps)
        recipe.placement = [[] for _ in sizes]
    buffers = device.allocate_each(sizes, recipe.placement)
    if not recipe.temps:
        return buffers, []
    count = len(recipe.outputs)
    return buffers[:count], buffers[count:]


def allocate_keyed(recipe: Recipe, order: list[Node], device, with_params=None) -> tuple[list, list, tuple | None]:
    """``allocate`` then ``replay_key`` over its buffers, in one call (every replayed realize):
    (output buffers, temporaries, the key or None). ``with_params(recipe, order, outs, temps, device)``
    keys a recipe with parameters in place of ``replay_key`` (vkml/schedule/eager_scalars.py)."""
    sizes = recipe.sizes
    if sizes is None:
        sizes = recipe.sizes = tuple([(dtype, numel) for _, dtype, numel in recipe.outputs] + recipe.temps)
        recipe.placement = [[] for _ in sizes]
    buffers = device.allocate_each(sizes, recipe.placement)
    if recipe.temps:
        count = len(recipe.outputs)
        outs, temps = buffers[:count], buffers[count:]
    else:
        outs, temps = buffers, []
    refs = recipe.replay
    if refs is None:
        refs = recipe.replay = _replay_refs(recipe)
    if refs is False:  # a user's kernel: no key
        return outs, temps, None
    if refs[1]:  # parameters: replay_key's longer way
        if with_params is not None and not refs[2]:  # a fused call's parameters stay push constants
            return outs, temps, with_params(recipe, order, outs, temps, device)
        return outs, temps, replay_key(recipe, order, outs, temps)
    # replay_key without parameters: the recipe, then (memory range, dtype) of each buffer, in C
    return (
        outs,
        temps,
        (recipe, *map(_binding_of, map(_buffer_of, map(order.__getitem__, refs[0]))), *map(_binding_of, buffers)),
    )


def dispatches_of(recipe: Recipe, order: list[Node], outs: list, temps: list) -> list[Dispatch]:
    """``bind``'s dispatches over buffers ``allocate`` made; appends user kernels' outputs to ``outs``."""
    by_id = None
    dispatches: list[Dispatch] = []
    # Every realize runs these loops, replayed or not: locals and inlined view_value keep them short.
    for kernel, grid, buffer_refs, param_refs in recipe.steps:
        if kernel is None:  # a user's @vkml.kernel binds its own buffers (vkml/dsl/kernel.py)
            if by_id is None:
                by_id = {id(order[p]): b for (p, _, _), b in zip(recipe.outputs, outs)}
            node = order[grid]
            dispatches += node.arg.lower(node, by_id)
            continue
        buffers = {}
        for name, kind, index in buffer_refs:
            if kind == OUT:
                buffers[name] = outs[index]
            elif kind == LEAF:
                buffers[name] = order[index].buffer
            elif kind == TEMP:
                buffers[name] = temps[index]
            else:
                buffers[name] = by_id[id(order[index])]
        params = {}
        for name, p in param_refs:
            if p.__class__ is int:
                value = order[p].arg.value
                params[name] = int(value) if value.__class__ is bool else value  # bool constants hold Python bools
                continue
            if p.__class__ is CallParam:
                params[name] = order[p[0]].arg.call.params[p[1]]
                continue
            position, level, field, divisor, bits = p  # view_value, inlined
            view = order[position].arg.views[level]
            value = (view.offset if field == -1 else view.mask[field // 2][field % 2]) // divisor
            params[name] = value % (1 << bits) if bits else value
        dispatches.append(Dispatch(kernel, grid, buffers, params))
    if by_id is not None:
        for p in recipe.custom_roots:
            outs.append(by_id[id(order[p])])
    return dispatches


def replay_key(recipe: Recipe, order: list[Node], outs: list, temps: list) -> tuple | None:
    """A key for a Vulkan recording of ``recipe``'s dispatches over these nodes and buffers
    (``VulkanDevice.run(key=...)``, ``run_again``), made without making the dispatches: None where
    the recipe runs a user's kernel, which makes its own.

    The recipe itself (by identity: the key keeps it alive, so no other recipe takes its id) stands
    for every kernel, grid and buffer and parameter name of its steps; then every buffer it binds,
    by memory range (block ids are never reused) and dtype, and every parameter's value and type (a
    zero by its repr: ``-0.0`` is not ``0.0``). So two keys are equal exactly when
    ``recordings.fingerprint`` of the two runs' dispatches would be.
    """
    refs = recipe.replay
    if refs is None:
        refs = recipe.replay = _replay_refs(recipe)
    if refs is False:
        return None
    leaves, param_refs, _ = refs
    # (memory range, dtype) of each buffer, in C: the recipe fixes how many there are of each kind
    parts: list = [recipe, *map(_binding_of, map(_buffer_of, map(order.__getitem__, leaves))), *map(_binding_of, outs)]
    if temps:
        parts += map(_binding_of, temps)
    if not param_refs:
        return tuple(parts)
    append = parts.append
    for p in param_refs:
        if p.__class__ is int:
            value = order[p].arg.value
        elif p.__class__ is CallParam:
            value = order[p[0]].arg.call.params[p[1]]
        else:
            position, level, field, divisor, bits = p  # view_value, inlined as in dispatches_of
            view = order[position].arg.views[level]
            value = (view.offset if field == -1 else view.mask[field // 2][field % 2]) // divisor
            if bits:
                value %= 1 << bits
        append(value.__class__)
        append(value if value else repr(value))
    return tuple(parts)


_binding_of = operator.attrgetter("binding_key", "dtype")
_buffer_of = operator.attrgetter("buffer")


def _replay_refs(recipe: Recipe) -> tuple | bool:
    """(the positions of the realized nodes the steps bind, first use first; every step's parameter
    sources in order; whether one is a ``CallParam``), or False if a step runs a user's kernel."""
    leaves: dict[int, None] = {}
    params: list = []
    for step in recipe.steps:
        if step.kernel is None:
            return False
        for _, kind, index in step.buffers:
            if kind == LEAF:
                leaves[index] = None
        params += [at for _, at in step.params]
    return tuple(leaves), tuple(params), any(p.__class__ is CallParam for p in params)


def view_value(stack, level: int, field: int, divisor: int, bits: int) -> int:
    """A view parameter's value (``ViewParam``): an offset or mask bound of level ``level`` of ``stack``.

    ``bind`` computes the same inline."""
    view = stack.views[level]
    value = view.offset if field == -1 else view.mask[field // 2][field % 2]
    value //= divisor
    return value % (1 << bits) if bits else value


def finish(recipe: Recipe, order: list[Node], outs: list, temps: list = ()) -> None:
    """Turn every node the recipe computed into a buffer node holding its result (``temps``: the run's
    temporaries, where the fused calls' outputs the plan did not reach are)."""
    positions = recipe.positions
    if positions is None:
        positions = recipe.positions = tuple([p for p, _, _ in recipe.outputs])
    if recipe.side:  # first: it reads through the calls' nodes, which become buffers below
        _give_side_outputs(recipe, order, temps)
    for p, buffer in zip(positions, outs):
        order[p].become_buffer(buffer)
    if recipe.custom_roots:  # user kernels' outputs, after the plan's (``dispatches_of``)
        for p, buffer in zip(recipe.custom_roots, outs[len(positions) :]):
            order[p].become_buffer(buffer)


def _give_side_outputs(recipe: Recipe, order: list[Node], temps: list) -> None:
    """``finish`` of the fused calls' outputs the plan does not reach (``Recipe.side``): each, if its node is
    alive and not realized, becomes a buffer on its temporary."""
    for temp, p, index in recipe.side:
        sibling = order[p].arg.call.out_nodes[index]()
        if sibling is not None and not sibling.realized:
            sibling.become_buffer(temps[temp])


class Key:
    """A ``trace`` key under a namespace (device, tuning, limits), hashed once: a realize looks it up, moves it, may store it.

    The key holds a tuple per node, so hashing it is not free; equality compares it all.
    """

    __slots__ = ("parts", "_hash")

    def __init__(self, namespace: tuple, structure: tuple):
        self.parts = (namespace, structure)
        self._hash = hash(self.parts)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, Key) and self._hash == other._hash and self.parts == other.parts


def lookup(key: Key | None, order: list[Node]) -> Recipe | None:
    """The recipe stored under ``key``, if its baked constants have the values of ``order``'s."""
    if key is None:
        return None
    found = _recipes.get(key)
    if found is None:
        return None
    for p, value in found.baked:
        arg = order[p].arg
        if (repr(arg) if value.__class__ is str else arg) != value:
            return None
    _recipes.move_to_end(key)
    counters["plan_replays"] += 1
    return found


def store(key: Key | None, recipe: Recipe) -> None:
    if key is None:
        return
    _recipes[key] = recipe
    _recipes.move_to_end(key)
    while len(_recipes) > lru.LIMITS["plans"][0]:  # bounded: shapes that change every step
        _recipes.popitem(last=False)


def clear() -> None:
    """Forget every stored recipe."""
    _recipes.clear()
    _by_roots.clear()


# The recipes again, keyed by the roots' structure ids (``Node.skey``, made as the graph was built), so
# a realize of a structure seen before finds its recipe and its nodes without walking the graph (``trace``
# costs about a hundred bytecodes a node). Whatever the ids say, ``find`` takes the recipe only for the
# graph it was made for: it reaches every position along one recorded source edge, and checks every other
# edge, every position's id, that the positions are distinct nodes and the matmuls' tiles. A miss walks.
_by_roots: OrderedDict = OrderedDict()
_skey_of = operator.attrgetter("skey")
_srcs_of = operator.attrgetter("srcs")
ENTRIES_PER_KEY = 4


class Found:
    """How ``find`` reaches a recipe's nodes from its roots, and what it checks (``remember`` makes it).

    - ``size``: the number of positions; ``roots``: (position, root index) of each position a root is first;
    - ``steps``: (position, user position, source index), users before their sources: the position's node is
      that source of that user's node;
    - ``edges``: (user position, source index, position) of every other edge, and ``root_edges``
      (position, root index) of every other root: each must reach that position's node; ``edge_columns``:
      the edges' users, source indices and positions as three tuples (``_also`` checks them in C);
    - ``skeys``: every position's structure id; ``matmuls``: (position, mode) of each matmul; ``policy``:
      what the modes were last checked under (the mode function, the device's features, its ``policy()``);
    - ``more``: whether any of ``edges``, ``root_edges``, ``matmuls`` and the recipe's baked values is there.
    """

    __slots__ = (
        "recipe",
        "size",
        "roots",
        "steps",
        "edges",
        "edge_columns",
        "root_edges",
        "skeys",
        "matmuls",
        "policy",
        "more",
    )


def find(namespace: tuple, roots: list[Node], mode_of_matmul) -> tuple[Recipe, list[Node]] | None:
    """The recipe ``remember`` stored for a graph of ``roots``' structure, and ``trace``'s order of these
    nodes, or None (then ``trace`` and ``lookup``)."""
    entries = _by_roots.get((namespace, tuple(map(_skey_of, roots))))
    if entries is None:
        return None
    for entry in entries:
        order = _reach(entry, roots, mode_of_matmul)
        if order is not None:
            counters["plan_replays"] += 1
            return entry.recipe, order
    return None


def _reach(entry: Found, roots: list[Node], mode_of_matmul) -> list[Node] | None:
    """``entry``'s positions filled with the nodes below ``roots``, if they form the graph it was made for."""
    order: list = [None] * entry.size
    try:
        for p, j in entry.roots:
            order[p] = roots[j]
        for p, user, i in entry.steps:
            order[p] = order[user].srcs[i]  # IndexError: a node realized since its users were built
    except IndexError:
        return None
    # Each position's id names its op, argument, shape and dtype (a node realized since gets a buffer's id);
    # with every edge reaching the same position and no node at two, the graph is the recorded one.
    if list(map(_skey_of, order)) != entry.skeys or len(set(order)) != entry.size:
        return None
    return order if not entry.more or _also(entry, roots, order, mode_of_matmul) else None


def _also(entry: Found, roots: list[Node], order: list[Node], mode_of_matmul) -> bool:
    """``_reach``'s checks of a graph with sharing, several roots, matmuls or baked values."""
    if entry.edges:  # order[user].srcs[i] is order[p] for every edge, in C: a graph with sharing has many
        users, indices, positions = entry.edge_columns
        try:
            reached = list(map(operator.getitem, map(_srcs_of, map(order.__getitem__, users)), indices))
        except IndexError:  # a node realized since its users were built
            return False
        if not all(map(operator.is_, reached, map(order.__getitem__, positions))):
            return False
    for p, j in entry.root_edges:
        if roots[j] is not order[p]:
            return False
    if entry.matmuls:
        # The tiles depend on the graph (the positions' ids, checked), the device and the policy: chosen
        # again only when the policy or the device's features differ from the last look's.
        policy = getattr(mode_of_matmul, "policy", None)
        looked = None
        if policy is not None:
            looked = (mode_of_matmul, getattr(order[entry.matmuls[0][0]].device, "features", None), policy())
        if looked is None or looked != entry.policy:
            for p, mode in entry.matmuls:
                if mode_of_matmul(order[p]) != mode:
                    return False
            entry.policy = looked
    for p, value in entry.recipe.baked:
        arg = order[p].arg
        if (repr(arg) if value.__class__ is str else arg) != value:
            return False
    return True


def remember(namespace: tuple, roots: list[Node], order: list[Node], recipe: Recipe, mode_of_matmul) -> None:
    """Store ``recipe`` for ``find``: ``order`` is ``trace(roots)``'s.

    Under the roots' ids as they are, with every position's id as it is: a node built before one of its
    sources was realized keeps the id of the graph it was built on, whose op, argument, shape and dtype
    are still its own (a node that becomes a buffer gets a buffer's id), and its sources are checked by
    their own ids. A loop that realizes a source before building on it anew keys the same way each time.
    """
    skeys = list(map(_skey_of, order))
    position = {id(node): p for p, node in enumerate(order)}
    entry = Found()
    size = entry.size = len(order)
    first: list = [None] * size
    roots_first, root_edges = [], []
    for j, root in enumerate(roots):
        p = position[id(root)]
        if first[p] is None:
            first[p] = True
            roots_first.append((p, j))
        else:
            root_edges.append((p, j))
    steps, edges = [], []
    for user in range(size - 1, -1, -1):
        for i, s in enumerate(order[user].srcs):
            p = position[id(s)]
            if first[p] is None:
                first[p] = (user, i)
            else:
                edges.append((user, i, p))
    for p in range(size - 1, -1, -1):
        if first[p] is not True:
            steps.append((p, *first[p]))
    entry.recipe = recipe
    entry.roots, entry.steps, entry.edges, entry.root_edges = (
        tuple(roots_first),
        tuple(steps),
        tuple(edges),
        tuple(root_edges),
    )
    entry.edge_columns = tuple(zip(*edges)) if edges else ((), (), ())
    entry.skeys = skeys
    entry.matmuls = tuple((p, mode_of_matmul(n)) for p, n in enumerate(order) if n.op == Op.MATMUL)
    entry.policy = None  # the first ``find`` checks the modes
    entry.more = bool(edges or root_edges or entry.matmuls or recipe.baked)
    # A few entries a key: a root built before a source was realized keeps its id, so one key may name two graphs
    key = (namespace, tuple(map(_skey_of, roots)))
    _by_roots[key] = (entry, *_by_roots.get(key, ())[: ENTRIES_PER_KEY - 1])
    _by_roots.move_to_end(key)
    while len(_by_roots) > lru.LIMITS["plans"][0]:
        _by_roots.popitem(last=False)
