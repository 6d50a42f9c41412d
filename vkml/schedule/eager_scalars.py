"""Eager realizes of a cached plan whose parameters change on every step: they move into a ring buffer.

A training step realizes the same plans every step over the same memory (the allocator hands
out the ranges the last step freed), so the device could submit each realize's earlier command
buffer again (``VulkanDevice.run_again``) but for a few kernel parameters whose values change on
every step: dropout's random key, Adam's bias corrections, the offset of a moving window. Push
constants are recorded into the command buffer, so each such realize recorded its dispatches
anew.

Parameters known to change every step (``Stepping`` constants: a random draw's key words, Adam's
bias corrections) move at the plan's first realize, so their kernel variants are compiled with the
plan's other kernels, in the first steps, instead of the push-constant kernels. For the others, per
recipe, a ``Watch`` compares each replay's parameter values with the last replay's. A parameter that
changed on ``STREAK`` replays in a row, and whose value also differs from the last replay's over the
same buffers (a value that follows the buffers, as a dataset window's offset does, stays a push
constant: each window's recording holds its own), moves: the recipe gets a ``Ringed`` form whose
steps run kernel variants reading the moved parameters from a ring of small buffers
(vkml/schedule/scalar_ring.py, vkml.jit's machinery).
Its replay key leaves those values out and names the ring entry instead, so the device finds the
recording; the host writes the entry's words (one ``struct`` call into a numpy array, one copy
into the mapped memory) once the submission that read that entry last is complete. A parameter
that changes rarely (a learning rate a scheduler steps each epoch) stays a push constant: the
realize that sees the change records anew, as before. The words are the push constants' bits,
so results are the same; ``VKML_EAGER_SCALARS=0`` keeps every parameter a push constant.

Only on devices whose memory the host writes through a mapping (``writes_mapped``): elsewhere an
upload is a submission of its own, dearer than recording anew.

    >>> x = vkml.ones(1 << 10, device="vulkan:0")      # doctest: +SKIP
    >>> for step in range(8):                          # doctest: +SKIP
    ...     y = (x * (0.5 + step)).realize()           # the factor moves to the ring at the third step
    >>> vkml.debug.counters()["recordings_reused"]     # doctest: +SKIP
    4
"""

from __future__ import annotations

import operator
import struct

import numpy as np

from .. import config
from ..graph.node import Stepping
from ..runtime.base import PARAM_CODES
from ..runtime.counters import counters
from . import plan_cache
from .scalar_ring import SCALARS, WORD_DTYPES, ScalarRing, scalars_variant

WORD_DTYPE_NAMES = frozenset(d.name for d in WORD_DTYPES)

STREAK = 2  # replays in a row that changed a parameter before it moves to the ring
RECENT_BUFFERS = 16  # a step's realizes alternate between sets of memory ranges; a dataset's windows cycle over more

_binding_of = operator.attrgetter("binding_key", "dtype")
_buffer_of = operator.attrgetter("buffer")
_value_of = operator.attrgetter("arg.value")  # a constant's (``ParamRef.at`` an int)
_PACK_ERRORS = (struct.error, OverflowError, TypeError)  # a value no push constant holds: the packer's error


class Params:
    """Some of a recipe's parameters, packed as the device packs them: ``refs`` their sources (a constant's
    position, or a ``ViewParam``), ``positions`` the same when all are constants (read in C) else None,
    ``packer`` their struct (the push constants' codes, ``runtime.base.PARAM_CODES``), ``starts`` each one's
    first byte in it, ``indices`` their indices in the recipe's ``replay`` parameter order (numpy arrays)."""

    __slots__ = ("refs", "positions", "packer", "starts", "indices")

    def __init__(self, refs: list, codes: list, indices: list, fmt: str | None = None):
        self.refs, self.indices = refs, np.array(indices, np.intp)
        self.positions = refs if all(p.__class__ is int for p in refs) else None
        self.packer = struct.Struct(fmt if fmt is not None else "<" + "".join(codes))
        sizes = [struct.calcsize("<" + code) for code in codes]
        self.starts = np.cumsum([0, *sizes[:-1]], dtype=np.intp) if sizes else np.zeros(0, np.intp)

    def values(self, order: list) -> list:
        """Each parameter's value over the nodes of ``order``, as ``plan_cache.dispatches_of`` binds it."""
        if self.positions is not None:
            return list(map(_value_of, map(order.__getitem__, self.positions)))
        values = []
        for p in self.refs:
            if p.__class__ is int:
                values.append(order[p].arg.value)
            else:
                position, level, field, divisor, bits = p  # view_value, inlined as in plan_cache.dispatches_of
                view = order[position].arg.views[level]
                value = (view.offset if field == -1 else view.mask[field // 2][field % 2]) // divisor
                values.append(value % (1 << bits) if bits else value)
        return values


def _codes(recipe: plan_cache.Recipe) -> list:
    """The struct code of each parameter of ``recipe``, in its ``replay`` order."""
    codes = []
    for step in recipe.steps:
        decls = dict(step.kernel.param_types())  # (name, dtype name): a kernel read from disk stays unparsed
        codes += [PARAM_CODES[decls[ref.name]] for ref in step.params]
    return codes


class Ringed:
    """A recipe whose ``moved`` parameters (indices in its ``replay`` parameter order) come from a ring.

    - ``recipe``: the same recipe with the kernel variants and without the moved parameters (what
      ``dispatches_of`` binds);
    - ``window_steps``: the index of each step that reads a window of the ring, in the ring's order;
    - ``kept``: the ``Params`` that stay push constants; ``words``: the moved ones, packed into the
      ring's words (each window's, then padding up to the next window);
    - ``ring``: the ``ScalarRing`` on ``device``.
    """

    __slots__ = ("recipe", "window_steps", "moved", "kept", "words", "ring")

    def __init__(self, recipe: plan_cache.Recipe, moved: frozenset, device):
        variant = plan_cache.Recipe()
        variant.outputs, variant.temps, variant.custom_roots = recipe.outputs, recipe.temps, recipe.custom_roots
        self.moved, self.window_steps = moved, []
        codes = _codes(recipe)
        kept_refs, kept_codes, kept_indices, moved_refs, counts, windows = [], [], [], [], [], []
        index = 0
        for s, step in enumerate(recipe.steps):
            names, kept, window = [], [], ""
            for ref in step.params:
                if index in moved:
                    names.append(ref.name)
                    moved_refs.append(ref.at)
                    window += codes[index]
                else:
                    kept.append(ref)
                    kept_refs.append(ref.at)
                    kept_codes.append(codes[index])
                    kept_indices.append(index)
                index += 1
            if names:
                self.window_steps.append(s)
                counts.append(len(names))
                windows.append(window)
                kernel = scalars_variant(step.kernel, tuple(names))
                variant.steps.append(plan_cache.Step(kernel, step.grid, step.buffers, tuple(kept)))
            else:
                variant.steps.append(step)
        self.recipe = variant
        self.ring = ScalarRing(device, counts)
        ends = [*self.ring.starts[1:], len(self.ring.words)]
        fmt = "<" + "".join(
            w + "x" * (4 * (end - start - len(w))) for w, start, end in zip(windows, self.ring.starts, ends)
        )
        self.words = Params(moved_refs, [], [], fmt)
        self.kept = Params(kept_refs, kept_codes, kept_indices)


class Watch:
    """What one recipe's replays did (``recipe.scalars``): its parameters (``Params``), the last replay's
    packed values, how many replays in a row changed each parameter, the packed values of the last replay
    over each recent set of buffers (``buffers``), its ``Ringed`` form if any (then ``params`` is the
    form's kept ones), and ``stepping``: the parameters that move at the next replay, known to change
    every step (``Stepping`` constants: a random key's words, Adam's bias corrections)."""

    __slots__ = ("device", "mapped", "params", "last", "streaks", "buffers", "ringed", "movable", "stepping")

    def __init__(self, recipe: plan_cache.Recipe, device, order: list):
        self.device = device
        self.mapped = device.writes_mapped
        codes = _codes(recipe)
        self.params = Params(list(recipe.replay[1]), codes, list(range(len(codes))))
        self.last = None
        self.streaks = np.zeros(len(codes), np.int64)
        self.buffers: dict = {}  # the buffer parts of recent replays' keys -> the last packed values over them
        self.ringed: Ringed | None = None
        # Parameters that can move: one 32-bit word each, of a kernel with room for the ring's binding.
        # The others stay push constants whatever they do.
        bindings = getattr(device, "limits", {}).get("maxPerStageDescriptorStorageBuffers", 1 << 30)
        movable = []
        for step in recipe.steps:
            decls = dict(step.kernel.param_types())
            room = len(step.kernel.buffers) < bindings
            movable += [room and decls[ref.name] in WORD_DTYPE_NAMES for ref in step.params]
        self.movable = np.array(movable, bool)
        self.stepping = frozenset(
            i
            for i, ref in enumerate(recipe.replay[1])
            if movable[i] and ref.__class__ is int and order[ref].arg.__class__ is Stepping
        )


def replay_key(recipe: plan_cache.Recipe, order: list, outs: list, temps: list, device) -> tuple | None:
    """``plan_cache.replay_key`` for a recipe with parameters (``plan_cache.allocate_keyed`` calls it).

    The key names the recipe (or its ``Ringed`` form), every buffer as ``plan_cache.replay_key`` does,
    the bytes of the push constants (equal bytes, equal recordings), and where some parameters moved to
    the ring, the ring entry just written with their words. On a miss the scheduler binds
    ``dispatches_of``, and after the submission tells the ring which one read the entry."""
    watch = recipe.scalars
    if watch is None or watch.device is not device:
        watch = recipe.scalars = Watch(recipe, device, order)
    if not watch.mapped or not config.eager_scalars():
        return plan_cache.replay_key(recipe, order, outs, temps)
    if watch.stepping:  # the first replay that may move them: before the push-constant kernels are compiled
        _move(watch, recipe, watch.stepping)
        watch.stepping = frozenset()
    ringed = watch.ringed
    parts = [
        recipe if ringed is None else ringed,
        *map(_binding_of, map(_buffer_of, map(order.__getitem__, recipe.replay[0]))),
        *map(_binding_of, outs),
    ]
    if temps:
        parts += map(_binding_of, temps)
    params = watch.params
    try:
        pushed = params.packer.pack(*params.values(order))
        words = ringed.words.packer.pack(*ringed.words.values(order)) if ringed is not None else None
    except _PACK_ERRORS:  # the device's packer raises its error
        return plan_cache.replay_key(recipe, order, outs, temps)
    if pushed != watch.last:
        _changed(watch, recipe, pushed, parts)
        if watch.ringed is not ringed:  # parameters moved: the new form's key
            return replay_key(recipe, order, outs, temps, device)
    parts.append(pushed)
    if ringed is not None:
        parts.append(ringed.ring.put(words))
    return tuple(parts)


def _changed(watch: Watch, recipe: plan_cache.Recipe, pushed: bytes, parts: list) -> None:
    """A replay whose push constants differ from the last replay's: count each parameter's streak, and
    move those whose streak is long enough and whose value also differs from the last replay's over the
    same buffers (a value that follows the buffers, as a dataset window's offset does, needs no ring: the
    recording of those buffers holds it)."""
    last, watch.last = watch.last, pushed
    buffers, seen = tuple(parts[1:]), watch.buffers
    before = seen.pop(buffers, None)  # the last packed values over these buffers
    if len(seen) >= RECENT_BUFFERS:
        del seen[next(iter(seen))]  # the oldest set
    seen[buffers] = pushed
    if last is None:
        return
    # Which parameters' bytes differ, in numpy (a recipe may have a hundred): then each one's streak
    params = watch.params
    starts, indices, streaks = params.starts, params.indices, watch.streaks
    changed = np.logical_or.reduceat(np.frombuffer(pushed, np.uint8) != np.frombuffer(last, np.uint8), starts)
    streaks[indices] = np.where(changed, streaks[indices] + 1, 0)
    if before is None:  # buffers no recent replay bound: no recording to reuse yet
        return
    moving = (streaks[indices] >= STREAK) & watch.movable[indices]
    if moving.any():
        moving &= np.logical_or.reduceat(np.frombuffer(pushed, np.uint8) != np.frombuffer(before, np.uint8), starts)
        ready = indices[moving].tolist()
        if ready:
            _move(watch, recipe, frozenset(ready))


def _move(watch: Watch, recipe: plan_cache.Recipe, ready: frozenset) -> None:
    """Parameters ``ready`` (indices in ``recipe.replay`` order) join those in the ring: a new ``Ringed`` form."""
    moved = ready | (watch.ringed.moved if watch.ringed is not None else frozenset())
    watch.ringed = Ringed(recipe, moved, watch.device)
    # fewer push constants: compared afresh
    watch.params, watch.last = watch.ringed.kept, None
    watch.buffers.clear()
    counters["scalars_moved"] += len(ready)


def dispatches_of(ringed: Ringed, order: list, outs: list, temps: list, entry: int) -> list:
    """The dispatches of a ``Ringed`` recipe, each variant bound to its window of ring entry ``entry``."""
    dispatches = plan_cache.dispatches_of(ringed.recipe, order, outs, temps)
    for s, window in zip(ringed.window_steps, ringed.ring.windows[entry]):
        dispatches[s].buffers[SCALARS] = window
    return dispatches
