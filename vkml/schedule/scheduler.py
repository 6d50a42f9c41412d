"""Scheduling: group the lazy graph into kernels, lower them, run them in one submission.

Fusion rules (each pinned by tests that count dispatches, tests/test_schedule.py):
1. Elementwise ops, casts, constants and views (reshape, permute, expand, slice, flip, pad,
   cat) are inlined into the kernel that consumes them: chains of them never make a dispatch
   of their own, and movement ops are index arithmetic.
2. A reduction fuses its elementwise producers (computed inside its loads) and its
   elementwise consumers of the reduced shape, when it has a single consumer and is reached
   from the kernel's root through elementwise ops and contiguous reshapes only. Otherwise
   the reduction is realized by its own kernel and loaded by its consumers.
3. Reductions over the same rows share one kernel when a later one reads an earlier one's
   result broadcast back over the row (softmax: max then sum of exp(x - max); layer norm:
   mean then variance). The earlier results are also written out for other consumers. Only
   reads through elementwise ops count: a result also read through a view that moves rows
   (flip, transpose, pad) is not shared, and a chain whose kernel would load something
   computed from its own results runs unshared.
4. A node with several consumers is inlined (recomputed) into each, unless its inlined
   expression costs more than ``RECOMPUTE_LIMIT`` nodes: then it is computed once.
5. An expression seen through a broadcasting view (one that multiplies the number of
   elements) is realized first unless it costs at most ``BROADCAST_RECOMPUTE_LIMIT`` — or it
   is a row result of rule 3.
6. A single reduction with few long rows is split over aligned blocks: one dispatch per pass.
   Fewer than ``Tuning.reduce_split_rows`` rows (batch norm's per-channel sums) count as few
   when the rows are long enough; such a reduction then starts no rule-3 chain: what it reads
   of earlier reductions over its rows (var's mean) comes from their own split kernels.
7. An elementwise root of the rows' shape that reads rule-3 reductions broadcast over their
   rows (softmax's exp(x - max) / sum, layer norm's (x - mean) * rstd * w + b) joins their
   kernel when a row fits one chunk of the device's rows kernel (``Tuning``): each lane keeps
   its elements in registers, so x is read once, what the reductions computed from it (exp)
   is reused, and per-row values (rstd) are computed once per row. Softmax and layer norm
   are then one dispatch; longer rows keep rules 3 and 5 (two dispatches).
8. A single reduction that keeps the innermost axis (``grad.sum(0)``) runs in the columns mode
   (vkml/kernels/reduce_columns.py) instead of rules 2 and 6: neighbouring invocations take
   neighbouring outputs; one dispatch, or one per pass when few outputs have long columns
   (the reduced axis is then split over workgroups). Chains (rule 3) stay in the rows mode.
All dispatches of one realize go into one submission. Fusion never changes bits: every op's
value is the same whether it is inlined, recomputed or realized.

Lowered kernels are cached by the structure of their group (ops, shapes, dtypes, views and
sharing; not the data, not the values of constants nor views' offsets and mask bounds, which
travel as parameters: ``Signature``), so a loop
that builds the same graph again reuses the same Kernel objects and compiled pipelines. A
whole realize is cached the same way, one level up (vkml/schedule/plan_cache.py): a graph whose
structure was realized before skips planning and lowering and binds the earlier recipe; on
Vulkan, where its buffers and parameters repeat too, the device submits its recording again,
found by the recipe's key over them (``plan_cache.replay_key``) before any dispatch is made.
"""

from __future__ import annotations

import contextlib
import math
import operator
import sys
import threading
from collections import OrderedDict, defaultdict

from .. import debug
from ..graph.build import realize_as_alias
from ..graph.node import STATE_NODES, Node, Op, toposort
from ..ir import lru
from ..kernels import (
    lowering as kernels,
)
from ..kernels import matmul as kernels_matmul
from ..kernels import (
    reduce_columns as kernels_reduce_columns,
)
from ..kernels import (
    reduce_rows as kernels_reduce,
)
from ..kernels import (
    tuning as kernels_tuning,
)
from ..kernels.index import index_arithmetic, needs_wide_index
from ..kernels.lowering import BufferKind, GroupMode, ViewRole
from ..runtime.base import Buffer, Dispatch
from ..runtime.counters import counters
from . import checks, eager_scalars, plan_cache, template_disk

RECOMPUTE_LIMIT = 12
BROADCAST_RECOMPUTE_LIMIT = 3
# The most buffers one fused kernel reads, whatever the device: a kernel binds each as a storage
# buffer, and devices cap those per stage (lavapipe at 32, some drivers lower; vkml leaves room for
# the outputs and index tables). A walk that would load more makes the next inlined expression a
# kernel of its own. Fixed, not the device's limit, so every device fuses alike.
MAX_KERNEL_LOADS = 24
_WIDEST_PARAM_NBYTES = 8  # a 64-bit scalar parameter

_templates: OrderedDict = OrderedDict()
# vkml.jit's recorder while a capture runs (vkml/frontend/jit.py): told of every realize's dispatches.
recorder = None
# Held while a realize plans, by any device's: the template and plan caches are shared by every
# device, and so is the recursion limit that planning raises. Taken inside a device's lock.
_planning = threading.RLock()


def _consumer_counts(nodes: list[Node]) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for n in nodes:
        for s in n.srcs:
            counts[id(s)] += 1
    return counts


def _inline_kind(node: Node) -> bool:
    return node.op in (Op.ELEMENTWISE, Op.CAST) or (node.op == Op.VIEW and node.arg.is_contiguous)


class Plan:
    """Which nodes are kernel roots, and which reductions each root's kernel computes."""

    def __init__(self, targets: list[Node], nodes: list[Node] | None = None):
        """``nodes``: ``toposort`` of the unrealized targets, where the caller has it already."""
        if nodes is None:
            nodes = toposort([t for t in targets if not t.realized])
        self.nodes = nodes
        self.consumers = _consumer_counts(self.nodes)
        self.roots: dict[int, Node] = {id(t): t for t in targets if not t.realized}
        self.chains: dict[int, list[Node]] = {}  # root -> reductions its kernel computes, in order
        self.produced_by: dict[int, Node] = {}  # chain member -> the root whose kernel writes it
        self._cost: dict[int, int] = {}
        self._row_results: set[int] = set()
        self._claimed: set[int] = set()  # nodes read through a row broadcast inside a chain
        self.whole_rows: set[int] = set()  # roots of rule 7: their kernel writes every position of the rows
        self._order: dict[int, int] | None = None  # node -> position in self.nodes, when a chain needs it
        for node in reversed(self.nodes):  # users before sources
            if id(node) in self.roots:
                self._claim(node)
        if len(self.roots) > MAX_KERNEL_LOADS:  # only then can a kernel read more buffers than the cap
            self._split_wide_kernels()
        self._drop_unreachable_chain_members()

    def cost(self, node: Node) -> int:
        """Number of nodes inlined to compute ``node`` (roots and leaves count 1)."""
        if node.op == Op.CONST or (node.op == Op.VIEW and node.srcs[0].op == Op.CONST):
            return 0  # a broadcast constant is a parameter: free to recompute anywhere
        if node.realized or id(node) in self.roots or node.op in (Op.REDUCE, Op.MATMUL):
            return 1
        known = self._cost.get(id(node))
        if known is None:
            total = 1
            for s in node.srcs:  # a loop, not sum(generator): this runs for every inlined node
                total += self.cost(s)
            known = self._cost[id(node)] = min(1000, total)
        return known

    def _make_root(self, node: Node) -> None:
        if id(node) not in self.roots:
            self.roots[id(node)] = node
            self._claim(node)

    def _claim(self, root: Node) -> None:
        """Walk the expression of ``root``, deciding which sources become roots themselves."""
        if id(root) in self.produced_by or id(root) in self._claimed:
            return
        self._claimed.add(id(root))
        main = self._main_reduce(root)
        chain = [] if main is None else [main] if main.op == Op.MATMUL else self._chain(main)
        if main is None:
            chain = self._whole_row_chain(root)
            if chain:
                self.whole_rows.add(id(root))
        if chain:
            self.chains[id(root)] = chain
            for red in chain if main is None else chain[:-1]:
                self.produced_by[id(red)] = root
                self.roots[id(red)] = red
        fused = {id(r) for r in chain}
        roots, consumers = self.roots, self.consumers  # the same dicts: _make_root below adds to roots
        seen, stack = set(), [root]
        # MAX_KERNEL_LOADS: the buffers this kernel reads so far, and those its pending nodes will
        # read directly (reserved when pushed): loads + reserved stays within the cap
        loads: set[int] = set()
        reserved, reserved_by = 0, {}
        while stack:
            node = stack.pop()
            reserved -= reserved_by.pop(id(node), 0)
            if id(node) in seen or node.realized:
                continue
            seen.add(id(node))
            node_op = node.op
            for s in node.srcs:
                s_id, s_op = id(s), s.op
                if node_op == Op.KERNEL or s_op == Op.KERNEL:  # a user's @vkml.kernel reads and writes whole buffers
                    if not s.realized:
                        self._make_root(s)
                    loads.add(s_id)
                    continue
                if s_op == Op.CONST:
                    continue
                if s.realized or (s_id in roots and s_id not in fused):
                    loads.add(s_id)
                    continue
                if s_op == Op.REDUCE or s_op == Op.MATMUL:
                    if s_id in fused:
                        stack.append(s)
                    else:
                        self._make_root(s)
                        loads.add(s_id)  # read as a buffer like any other root: counted against the cap
                    continue
                if node_op == Op.MATMUL:  # operand elements are loaded many times: compute them once
                    for operand in kernels_matmul.computed_operands(s, self._is_loaded):
                        self._make_root(operand)
                    if s_id in roots:
                        continue
                broadcast = node_op == Op.VIEW and node.numel > s.numel
                if broadcast and id(node) in self._row_results:
                    stack.append(s)
                elif broadcast and self.cost(s) > BROADCAST_RECOMPUTE_LIMIT:
                    self._make_root(s)
                elif consumers[s_id] > 1 and self.cost(s) > RECOMPUTE_LIMIT:
                    self._make_root(s)
                elif s_id in STATE_NODES:  # a tensor's state, written in place: kept, not recomputed next step
                    self._make_root(s)
                    loads.add(s_id)
                else:
                    direct = self._direct_loads(s, loads)
                    if len(loads) + reserved + direct > MAX_KERNEL_LOADS:
                        self._make_root(s)  # its own kernel: this one reads its result, one buffer
                        loads.add(s_id)
                    else:
                        reserved += direct
                        reserved_by[s_id] = reserved_by.get(s_id, 0) + direct
                        stack.append(s)

    def _split_wide_kernels(self) -> None:
        """Split each elementwise kernel that reads more than MAX_KERNEL_LOADS buffers.

        ``_claim`` counts loads as it inlines, but a walk goes down a long chain first and reaches the
        chain's side sources last, where the recompute rules make each one a kernel of its own: a chain
        of selects over computed scalars (a loop of element writes) read a buffer per select, past what a
        device binds. Such a kernel is cut at the inlined node whose own loads are nearest half of its
        loads, until every kernel is under the cap."""
        pending = [r for r in self.roots.values() if id(r) not in self.chains]
        while pending:
            root = pending.pop()
            inlined, leaves_of = self._loads_below(root)
            total = len(leaves_of[id(root)])
            if total <= MAX_KERNEL_LOADS or not inlined:
                continue
            cut = min(inlined, key=lambda n: abs(len(leaves_of[id(n)]) - total // 2))
            self.roots[id(cut)] = cut
            self._claimed.add(id(cut))
            pending += [root, cut]

    def _loads_below(self, root: Node) -> tuple[list[Node], dict[int, set[int]]]:
        """The elementwise nodes ``root``'s kernel inlines, and per node (root included) the buffers it reads."""
        leaves_of: dict[int, set[int]] = {}
        inlined: list[Node] = []
        order: list[Node] = []  # sources before users, inlined nodes only
        seen, stack = {id(root)}, [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            stack.append((node, True))
            for x in node.srcs:
                if id(x) in seen or x.op == Op.CONST or x.realized or id(x) in self.roots:
                    continue
                seen.add(id(x))
                stack.append((x, False))
        for node in order:
            reads: set[int] = set()
            for x in node.srcs:
                if x.op == Op.CONST:
                    continue
                if x.realized or id(x) in self.roots:
                    reads.add(id(x))
                else:
                    reads |= leaves_of.get(id(x), set())
            leaves_of[id(node)] = reads
            if node is not root and node.op in (Op.ELEMENTWISE, Op.CAST):
                inlined.append(node)
        return inlined, leaves_of

    def _direct_loads(self, node: Node, loads: set[int]) -> int:
        """Buffers inlining ``node`` makes a kernel read directly, beyond ``loads``."""
        if node.op == Op.CAT:
            # each source of a cat reads at least one buffer of its own (a slice of a realized tensor
            # is a leaf of its own): counted so, a cat past the cap becomes a kernel of its own
            return len(node.srcs)
        count = 0
        for x in node.srcs:
            if (
                id(x) not in loads
                and x.op != Op.CONST
                and (x.realized or id(x) in self.roots or x.op in (Op.REDUCE, Op.MATMUL, Op.KERNEL))
            ):
                count += 1
        return count

    def _is_loaded(self, node: Node) -> bool:
        return node.realized or id(node) in self.roots

    def _main_reduce(self, root: Node) -> Node | None:
        """The reduction (or matmul) ``root``'s kernel computes: root itself, or one under a same-size expression."""
        if root.op in (Op.REDUCE, Op.MATMUL):
            return root
        if not _inline_kind(root):
            return None
        found, stack = [], [root]
        while stack:
            node = stack.pop()
            for s in node.srcs:
                if s.realized or id(s) in self.roots:
                    continue
                if s.op in (Op.REDUCE, Op.MATMUL):
                    found.append(s)
                elif _inline_kind(s) and self.consumers[id(s)] == 1:  # shared nodes are read elsewhere too
                    stack.append(s)
        if len(found) == 1 and self.consumers[id(found[0])] == 1 and found[0].numel == root.numel:
            if found[0].op == Op.MATMUL and isinstance(kernels_matmul.mode(found[0]), kernels_matmul.coopmat2.Mode):
                return None  # the workgroup-scope template computes the plain product only: its consumers run after
            return found[0]
        return None

    def _chain(self, red: Node) -> list[Node]:
        """Earlier reductions over ``red``'s rows that ``red`` reads through row broadcasts, then ``red``.

        Only ``red`` when it is split over workgroups (rule 6's few long rows): a chain keeps one
        workgroup a row, so the earlier reductions (var's mean) are realized by their own split
        kernels and read as buffers.
        """
        if kernels_reduce.splits_rows(red):
            return [red]
        return self._row_chain(red.srcs[0], red) + [red]

    def _whole_row_chain(self, root: Node) -> list[Node]:
        """Rule 7: the reductions ``root`` reads broadcast over their rows, when ``root`` has the rows' shape
        and a row fits one chunk of the device's rows kernel; else []."""
        if root.op not in (Op.ELEMENTWISE, Op.CAST):
            return []
        red = self._first_row_broadcast(root)
        if red is None or not kernels_reduce.row_in_one_chunk(red, kernels_tuning.tuning_for(root.device)):
            return []
        return self._row_chain(root, red)

    def _first_row_broadcast(self, root: Node) -> Node | None:
        """A reduction over rows of ``root``'s shape that ``root`` reads through a row broadcast."""
        stack, seen = [root], set()
        while stack:
            node = stack.pop()
            if id(node) in seen or node.realized or node.shape != root.shape:
                continue
            seen.add(id(node))
            if node.op in (Op.ELEMENTWISE, Op.CAST):
                stack.extend(node.srcs)
            elif node.op == Op.VIEW and node.numel > node.srcs[0].numel:
                for r in self._row_reductions(node.srcs[0], None):
                    if r.srcs[0].shape == root.shape and kernels.is_row_broadcast(node, r):
                        return r
        return None

    def _row_chain(self, start: Node, red: Node) -> list[Node]:
        """Reductions over ``red``'s rows read through row broadcasts from ``start`` (a position in a row), in order.

        The walk follows only what keeps positions (elementwise ops and casts), so a result read
        there is the one for the row being computed. A reduction also reachable through
        anything else (a flip, a transpose, a pad) would be read at another row: then none is
        shared, and the reader loads the results from their own kernels.
        """
        chain: list[Node] = []
        views, others = [], []
        stack, seen = [start], set()
        while stack:
            node = stack.pop()
            if id(node) in seen or node.realized or node.op == Op.CONST:
                continue
            seen.add(id(node))
            if node.op in (Op.ELEMENTWISE, Op.CAST) and node.shape == red.srcs[0].shape:
                stack.extend(node.srcs)
                continue
            if node.op == Op.VIEW and kernels.is_row_broadcast(node, red):
                inner = self._row_reductions(node.srcs[0], red)
                if inner:
                    views.append(node)
                    for r in inner:  # adopt r (and its own chain) even if r was made a root already
                        sub = self.chains.get(id(r)) or self._chain(r)
                        chain.extend(x for x in sub if x not in chain)
                    continue
            others.append(node)
        if chain and self._reaches_any(others, {id(r) for r in chain}):
            return []
        for r in chain:
            self.chains.pop(id(r), None)
        self._row_results.update(id(v) for v in views)
        if self._order is None:
            self._order = {id(n): i for i, n in enumerate(self.nodes)}
        return sorted(chain, key=lambda r: self._order[id(r)])  # sources before their readers

    @staticmethod
    def _reaches_any(starts: list[Node], targets: set[int], through_reductions: bool = False) -> bool:
        """Whether ``starts`` are computed from one of ``targets`` (by default not looking inside other reductions)."""
        stack, seen = list(starts), set()
        while stack:
            node = stack.pop()
            if id(node) in seen or node.realized:
                continue
            seen.add(id(node))
            if id(node) in targets:
                return True
            if through_reductions or node.op not in (Op.REDUCE, Op.MATMUL):
                stack.extend(node.srcs)
        return False

    def _row_reductions(self, node: Node, red: Node | None) -> list[Node]:
        """Reductions like ``red`` (same rows; None: like each other) under ``node`` through reduced-shape expressions only."""
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            if n.realized or n.op == Op.CONST or (n.op == Op.VIEW and n.srcs[0].op == Op.CONST):
                continue
            if n.op == Op.REDUCE:
                like = red if red is not None else (out[0] if out else n)
                same_rows = (
                    n.arg.axes == like.arg.axes and n.shape == like.shape and n.srcs[0].shape == like.srcs[0].shape
                )
                if not same_rows or id(n) in self.produced_by:
                    return []
                out.append(n)
            elif _inline_kind(n):
                stack.extend(n.srcs)
            else:
                return []
        return out

    def _drop_unreachable_chain_members(self) -> None:
        """A chain member must be computed inline from its root; one cut off by a later root runs alone.

        So must every stored member when something the root's kernel loads is computed from one
        (layer norm's rsqrt(var + eps), realized for another reader, comes from the mean): the
        kernels would wait on each other. The root then loads them from kernels of their own.
        """
        for root_id, chain in list(self.chains.items()):
            root = self.roots[root_id]
            fused = {id(r) for r in chain}
            reached, loaded, stack = set(), [], [root]
            while stack:
                node = stack.pop()
                if id(node) in reached:
                    continue
                reached.add(id(node))
                for s in node.srcs:
                    if s.realized:
                        continue
                    if id(s) not in self.roots or id(s) in fused:
                        stack.append(s)
                    elif s is not root:
                        loaded.append(s)
            kept = [r for r in chain if id(r) in reached]
            stored = {id(r) for r in kept if self.produced_by.get(id(r)) is root}
            if stored and self._reaches_any(loaded, stored, through_reductions=True):
                kept = [r for r in kept if id(r) not in stored]
            kept_ids = {id(r) for r in kept}
            for r in chain:
                if id(r) not in kept_ids:  # (the last member, the root's own reduction, may be cut off too)
                    self.produced_by.pop(id(r), None)
                    self.roots[id(r)] = r
                    self.chains[id(r)] = [r]
            self.chains[root_id] = kept
            if not kept:
                self.whole_rows.discard(root_id)

    def groups(self) -> list[Node]:
        """Roots whose kernels must be lowered (chain members come with their chain's root)."""
        return [n for n in self.nodes if id(n) in self.roots and id(n) not in self.produced_by]


class Signature:
    """The structure of one group, as a cache key, and its leaves, constants and views in a fixed order.

    The group is walked by ``plan_cache.group_structure``, the walk of the plan key, so one walker
    describes a graph's structure for both caches.

    A view is described by ``ViewStack.structure``: its offsets and mask bounds are parameters
    like the constants' values, unless they are past the budget (then baked, and in the key).
    """

    def __init__(self, root: Node, chain: list[Node], stored: list[Node], leaf_ids, mode):
        fused = {id(r) for r in chain}
        order, walk = plan_cache.group_structure(root, kernels_matmul.mode, _GroupLeaves(leaf_ids, fused))
        self.leaves: list[Node] = []
        self.consts: list[Node] = []
        self.views: list[Node] = []  # inlined views with values (offsets, mask bounds)
        for n in order:  # classified as the walk took them: realized or loaded leaves, constants, views
            if n.realized or (id(n) in leaf_ids and id(n) not in fused):
                self.leaves.append(n)
            elif n.op == Op.CONST:
                self.consts.append(n)
            elif n.op == Op.VIEW and n.arg.value_count(n.srcs[0].numel):
                self.views.append(n)
        self.baked = self._over_budget() | self._views_over_budget(root, leaf_ids)
        baked_values = tuple((i, repr(n.arg)) for i, n in enumerate(self.consts) if id(n) in self.baked)
        baked_views = tuple((i, n.arg) for i, n in enumerate(self.views) if id(n) in self.baked)
        position = {id(n): i for i, n in enumerate(order)}
        chain_at = tuple(position[id(r)] for r in chain)
        stored_at = tuple(position[id(r)] for r in stored)
        self.key = (mode, walk, chain_at, stored_at, baked_values, baked_views)

    def _views_over_budget(self, root: Node, leaf_ids) -> frozenset[int]:
        """Views whose values do not fit the views' parameter budget (in signature order): baked in.

        A value is a parameter of the kernel's index type: 4 bytes, 8 where the group indexes in
        int64 (decided as ``_lower_group`` decides it; only looked at when 8 bytes would not fit).
        """
        budget = kernels.VIEW_PARAM_BUDGET_NBYTES
        counts = [n.arg.value_count(n.srcs[0].numel) for n in self.views]
        nbytes = 8
        if sum(counts) * nbytes > budget and not needs_wide_index(root, leaf_ids):
            nbytes = 4
        used, baked = 0, set()
        for n, count in zip(self.views, counts):
            used += count * nbytes
            if used > budget:
                baked.add(id(n))
        return frozenset(baked)

    def _over_budget(self) -> frozenset[int]:
        """Constants past the parameter budget (in signature order): the kernel bakes their values in."""
        if len(self.consts) * _WIDEST_PARAM_NBYTES <= kernels.PARAM_BUDGET_NBYTES:
            return frozenset()  # the usual few constants fit whatever their dtypes
        used, baked = 0, set()
        for n in self.consts:
            used += max(4, kernels.param_dtype(n.dtype).nbytes)
            if used > kernels.PARAM_BUDGET_NBYTES:
                baked.add(id(n))
        return frozenset(baked)


def _lower_group(root: Node, chain: list[Node], leaf_ids, mode, baked) -> kernels.GroupTemplate:
    # Index arithmetic is 64-bit only where the group's shapes need it.
    with index_arithmetic(needs_wide_index(root, leaf_ids)):
        if isinstance(mode, kernels_matmul.MODES):
            return kernels_matmul.lower(root, chain[-1], leaf_ids, baked, mode)
        return _lower_elementwise_or_reduce(root, chain, leaf_ids, mode, baked)


def _lower_elementwise_or_reduce(
    root: Node, chain: list[Node], leaf_ids, mode: GroupMode, baked
) -> kernels.GroupTemplate:
    if not chain:
        return kernels.lower_elementwise(root, leaf_ids, baked)
    if mode is GroupMode.BLOCKS:
        return kernels_reduce.lower_blocks(root, chain[-1], leaf_ids, baked)
    if mode is GroupMode.WHOLE_ROWS:
        return kernels_reduce.lower_rows(root, chain, chain, leaf_ids, baked, whole_rows=True)
    if mode is GroupMode.COLUMNS:
        return kernels_reduce_columns.lower_columns(root, chain[-1], leaf_ids, baked)
    return kernels_reduce.lower_rows(root, chain, chain[:-1], leaf_ids, baked)


def _indexed(group: kernels.GroupTemplate, sig: Signature, outputs: list[Node]) -> kernels.GroupTemplate:
    """The template with node roles replaced by positions in the signature (cacheable)."""
    leaf_pos = {id(n): i for i, n in enumerate(sig.leaves)}
    const_pos = {id(n): i for i, n in enumerate(sig.consts)}
    view_pos = {id(n): i for i, n in enumerate(sig.views)}
    out_pos = {id(n): i for i, n in enumerate(outputs)}
    indexed = []
    for kt in group.kernels:
        buffers = {}
        for name, role in kt.buffers.items():
            pos = {BufferKind.LEAF: leaf_pos, BufferKind.OUT: out_pos}.get(role.kind)
            buffers[name] = role if pos is None else role._replace(what=pos[id(role.what)])
        params = {}
        for name, role in kt.params.items():
            if isinstance(role, ViewRole):  # by the view's position
                params[name] = role._replace(view=view_pos[id(role.view)])
            else:
                params[name] = const_pos[id(role)]
        indexed.append(kernels.KernelTemplate(kt.kernel, kt.grid, buffers, params))
    return kernels.GroupTemplate(indexed, list(group.temps))


class _TemplateKey:
    """A template cache key that hashes its nested tuple once: the cache looks it up, then moves it.

    The tuple holds every node's description (views included), so hashing it is not cheap.
    """

    __slots__ = ("parts", "_hash")

    def __init__(self, parts: tuple):
        self.parts = parts
        self._hash = hash(parts)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, _TemplateKey) and self._hash == other._hash and self.parts == other.parts


class _GroupLeaves:
    """Ids of the unrealized nodes a group's kernels load (``in`` only): ``loaded`` but the chain's reductions,
    which the group computes; the leaves of its ``plan_cache.group_structure`` walk."""

    __slots__ = ("_loaded", "_fused")

    def __init__(self, loaded, fused: set[int]):
        self._loaded = loaded
        self._fused = fused

    def __contains__(self, node_id: int) -> bool:
        return node_id in self._loaded and node_id not in self._fused


class _LoadedIds:
    """Ids of the nodes a group loads: the plan's roots but the group's own outputs (``in`` only).

    Stands for ``roots - own`` without copying every root once per group, which made lowering a
    plan quadratic in its number of groups.
    """

    __slots__ = ("_roots", "_own")

    def __init__(self, roots, own: set[int]):
        self._roots = roots
        self._own = own

    def __contains__(self, node_id: int) -> bool:
        return node_id in self._roots and node_id not in self._own


class _Group:
    def __init__(self, plan: Plan, root: Node, leaf_ids):
        self.root = root
        self.chain = plan.chains.get(id(root), [])
        stored = self.chain[:-1]
        if self.chain and self.chain[-1].op == Op.MATMUL:  # the mode names the tiles (they depend on the device)
            self.mode = kernels_matmul.mode(self.chain[-1])
        elif self.chain and id(root) in plan.whole_rows:
            self.mode, stored = GroupMode.WHOLE_ROWS, self.chain
        else:
            self.mode = (
                kernels_reduce.choose_mode(self.chain[-1], len(self.chain)) if self.chain else GroupMode.ELEMENTWISE
            )
            if (
                self.mode in (GroupMode.ROWS, GroupMode.BLOCKS)
                and len(self.chain) == 1
                and kernels_reduce_columns.columns_fit(self.chain[0])
            ):
                self.mode = GroupMode.COLUMNS  # rule 8: a lone reduction over a strided axis
        self.outputs = [root] + stored
        # Everything realized by other groups of this plan is loaded; this group's own outputs are computed.
        self.leaf_ids = _LoadedIds(leaf_ids, {id(n) for n in self.outputs})
        self.sig = Signature(root, self.chain, stored, self.leaf_ids, self.mode)

    def template(self) -> kernels.GroupTemplate:
        key = _TemplateKey((self.sig.key, kernels_tuning.tuning_for(self.root.device)))  # laid out per device
        found = _templates.get(key)
        if found is None:
            # Then the disk (a Vulkan device's): what an earlier process lowered for this structure.
            device, limits = self.root.device, _limits()
            found = template_disk.load(device, key.parts, limits, self.sig, len(self.outputs))
            if found is None:
                lowered = _lower_group(self.root, self.chain, self.leaf_ids, self.mode, self.sig.baked)
                found = template_disk.save(device, key.parts, limits, _indexed(lowered, self.sig, self.outputs))
                counters["templates_lowered"] += 1
            else:
                counters["templates_loaded"] += 1
            _templates[key] = found
            while len(_templates) > lru.LIMITS["templates"][0]:  # bounded: shapes that change every step
                _templates.popitem(last=False)
        else:
            _templates.move_to_end(key)
        return found


def compile_recipe(plan: Plan) -> plan_cache.Recipe:
    """The plan's kernels, buffers and parameters as positions in ``plan.nodes`` (see vkml/schedule/plan_cache.py)."""
    leaf_ids = set(plan.roots)  # a snapshot: the groups' _LoadedIds read it
    groups = [_Group(plan, root, leaf_ids) for root in plan.groups()]
    position = {id(n): i for i, n in enumerate(plan.nodes)}
    recipe = plan_cache.Recipe()
    slot: dict[int, int] = {}  # node -> its index in recipe.outputs
    calls: set[int] = set()  # the fused calls stepped (two outputs of one call are two groups, one dispatch)
    for g in _dependency_order(groups):
        if g.root.op == Op.KERNEL:
            if getattr(g.root.arg, "structure", None) is not None:  # a fused op's call: a step like a group's
                call = g.root.arg.call
                if id(call) not in calls:
                    calls.add(id(call))
                    recipe.steps.append(_call_step(recipe, g.root, position, slot))
                continue
            # a user's @vkml.kernel binds its own buffers (vkml/dsl/kernel.py)
            recipe.steps.append(plan_cache.Step(None, position[id(g.root)], None, None))
            recipe.custom_roots.append(position[id(g.root)])
            continue
        for n in g.outputs:
            slot[id(n)] = len(recipe.outputs)
            recipe.outputs.append(plan_cache.Output(position[id(n)], n.dtype, n.numel))
        if g.root.numel == 0:
            continue
        template = g.template()
        first_temp = len(recipe.temps)
        recipe.temps += template.temps
        consts = g.sig.consts
        recipe.baked += [plan_cache.Baked(position[id(n)], repr(n.arg)) for n in consts if id(n) in g.sig.baked]
        recipe.baked += [plan_cache.Baked(position[id(n)], n.arg) for n in g.sig.views if id(n) in g.sig.baked]
        for kt in template.kernels:
            buffer_refs = []
            BufferRef = plan_cache.BufferRef
            for name, (kind, pos) in kt.buffers.items():
                if kind is BufferKind.LEAF:
                    leaf = g.sig.leaves[pos]
                    if leaf.realized:
                        buffer_refs.append(BufferRef(name, plan_cache.LEAF, position[id(leaf)]))
                    elif id(leaf) in slot:
                        buffer_refs.append(BufferRef(name, plan_cache.OUT, slot[id(leaf)]))
                    else:  # written by a user's kernel
                        buffer_refs.append(BufferRef(name, plan_cache.CUSTOM, position[id(leaf)]))
                elif kind is BufferKind.OUT:
                    buffer_refs.append(BufferRef(name, plan_cache.OUT, slot[id(g.outputs[pos])]))
                else:
                    buffer_refs.append(BufferRef(name, plan_cache.TEMP, first_temp + pos))
            param_refs = tuple(
                plan_cache.ParamRef(
                    name,
                    position[id(consts[pos])]
                    if pos.__class__ is int
                    else plan_cache.ViewParam(
                        position[id(g.sig.views[pos.view])], pos.level, pos.field, pos.divisor, pos.bits
                    ),
                )
                for name, pos in kt.params.items()
            )
            recipe.steps.append(plan_cache.Step(kt.kernel, kt.grid, tuple(buffer_refs), param_refs))
    return recipe


def _call_step(recipe: plan_cache.Recipe, root: Node, position: dict, slot: dict) -> plan_cache.Step:
    """The step of the fused call ``root`` is an output of (vkml/nn/functional_attention.py ``_Call``): its
    kernel, grid and parameters are the call's, as its ``lower`` would bind them, its outputs the recipe's, so
    a later call of the same structure replays the plan and its recording. An output the plan does not reach
    is a temporary that ``plan_cache.finish`` hands to that output's node (``recipe.side``)."""
    call = root.arg.call
    BufferRef = plan_cache.BufferRef
    buffer_refs = []
    tensor_names = [n for n in call.input_names if n not in call.params]
    for name, src in zip(tensor_names, root.srcs):
        if src.realized:
            buffer_refs.append(BufferRef(name, plan_cache.LEAF, position[id(src)]))
        elif id(src) in slot:
            buffer_refs.append(BufferRef(name, plan_cache.OUT, slot[id(src)]))
        else:  # written by a user's kernel
            buffer_refs.append(BufferRef(name, plan_cache.CUSTOM, position[id(src)]))
    here = position[id(root)]
    for index, (name, ref, (shape, dtype)) in enumerate(zip(call.output_names, call.out_nodes, call.out_specs)):
        numel, sibling = math.prod(shape), ref()
        if sibling is not None and id(sibling) in position:
            slot[id(sibling)] = len(recipe.outputs)
            recipe.outputs.append(plan_cache.Output(position[id(sibling)], dtype, numel))
            buffer_refs.append(BufferRef(name, plan_cache.OUT, slot[id(sibling)]))
        else:
            recipe.side.append((len(recipe.temps), here, index))
            buffer_refs.append(BufferRef(name, plan_cache.TEMP, len(recipe.temps)))
            recipe.temps.append((dtype, numel))
    params = tuple(plan_cache.ParamRef(name, plan_cache.CallParam(here, name)) for name in call.params)
    return plan_cache.Step(call.kernel, call.grid, tuple(buffer_refs), params)


def lower(plan: Plan) -> tuple[list[Dispatch], dict[int, Buffer], list[Buffer]]:
    """Dispatches for every group of ``plan``, the roots' output buffers, and temporaries."""
    recipe = compile_recipe(plan)
    dispatches, outs, temps = plan_cache.bind(recipe, plan.nodes, plan.nodes[0].device if plan.nodes else None)
    outputs = {id(plan.nodes[p]): b for (p, _, _), b in zip(recipe.outputs, outs)}
    for p, b in zip(recipe.custom_roots, outs[len(recipe.outputs) :]):
        outputs[id(plan.nodes[p])] = b
    return dispatches, outputs, temps


def _dependency_order(groups: list[_Group]) -> list[_Group]:
    """Groups ordered so that every group runs after those producing its leaves."""
    producer = {id(n): g for g in groups for n in g.outputs}
    order, done, visiting = [], set(), set()

    def visit(g: _Group) -> None:
        if id(g) in done:
            return
        if id(g) in visiting:
            raise AssertionError("cycle between kernel groups")
        visiting.add(id(g))
        for leaf in g.sig.leaves:
            dep = producer.get(id(leaf))
            if dep is not None and dep is not g:
                visit(dep)
        visiting.discard(id(g))
        done.add(id(g))
        order.append(g)

    for g in groups:
        visit(g)
    return order


@contextlib.contextmanager
def _deep_enough(depth: int):
    """Raise Python's recursion limit for the length of a graph's longest possible chain."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, 8 * depth + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


_BUFFER, _VIEW = Op.BUFFER, Op.VIEW
_OP_OF = operator.attrgetter("op")


def _limits() -> tuple:
    """The fusion limits and parameter budgets (tests and tuning runs change these)."""
    return (
        RECOMPUTE_LIMIT,
        BROADCAST_RECOMPUTE_LIMIT,
        MAX_KERNEL_LOADS,
        kernels.PARAM_BUDGET_NBYTES,
        kernels.VIEW_PARAM_BUDGET_NBYTES,
    )


# (device name, tuning, limits) -> a small int standing for them in the plan caches' keys, which every
# realize hashes: an int hashes in C, a Tuning by its dataclass's Python __hash__.
_namespace_ids: dict = {}
_namespace_last: dict = {}  # device name -> (tuning, limits, id) of its last realize


def _namespace(device) -> int:
    """What a plan depends on besides the graph's structure: device, tuning and limits, as an int (equal
    ints, equal namespaces)."""
    name = device.name
    tuning = kernels_tuning.tuning_for(device)
    limits = _limits()
    last = _namespace_last.get(name)
    if last is not None and last[0] is tuning and last[1] == limits:
        return last[2]
    found = _namespace_ids.setdefault((name, tuning, limits), len(_namespace_ids))
    _namespace_last[name] = (tuning, limits, found)
    return found


def realize(*targets: Node) -> None:
    """Compute every target node; one ``Device.run`` (one submission) per device involved.

    A graph whose structure was realized before reuses that plan (vkml/schedule/plan_cache.py). Value
    checks of the ops it computes (vkml/schedule/checks.py) are computed in the same submission and read
    when its results are.
    """
    found = carried = ()
    if checks.active():
        found, carried = checks.reached(targets)
        targets = targets + tuple(n for check in found for n in check.nodes)
    if len(targets) == 1:  # the common case, without the grouping by device
        node = targets[0]
        if node.op != _BUFFER:
            device = node.device
            with device.lock:
                if node.op != _BUFFER:
                    _realize_on(device, [node])
        if found or carried:
            if recorder is not None and found:
                recorder.checked(found)
            checks.submitted([*found, *carried], targets)
        return
    by_device: dict[str, list[Node]] = defaultdict(list)
    for t in targets:
        if not t.realized:
            by_device[t.device.name].append(t)
    for nodes in by_device.values():
        device = nodes[0].device
        # One realize at a time per device, from its graph walk to its nodes becoming buffers: a
        # node another thread realized meanwhile is a buffer here, never computed twice or half-seen.
        with device.lock:
            nodes = [t for t in nodes if not t.realized]
            if nodes:
                _realize_on(device, nodes)
    if found or carried:
        if recorder is not None and found:
            recorder.checked(found)
        checks.submitted([*found, *carried], targets)


def _realize_on(device, nodes: list[Node]) -> None:
    """``realize`` of unrealized ``nodes`` of one device, under its lock."""
    if device.kind == "meta":  # shapes only (vkml/runtime/meta.py): each node a buffer without memory, no kernel
        for node in nodes:
            node.become_buffer(device.allocate(node.dtype, node.numel))
        return
    if _VIEW in map(_OP_OF, nodes):
        nodes = [n for n in nodes if n.op != _VIEW or not realize_as_alias(n)]  # an aligned window: no kernel, no copy
        if not nodes:
            return
    namespace = _namespace(device)
    planned = False
    found = plan_cache.find(namespace, nodes, kernels_matmul.mode)
    if found is not None:
        recipe, order = found
    else:
        order, structure = plan_cache.trace(nodes, kernels_matmul.mode)
        key = None if structure is None else plan_cache.Key(namespace, structure)
        with _planning:
            recipe = plan_cache.lookup(key, order)
            if recipe is None:
                planned = True
                with _deep_enough(len(order)):  # planning and lowering recurse along expression chains
                    recipe = compile_recipe(Plan(nodes, order))
                plan_cache.store(key, recipe)
                counters["plans"] += 1
            if key is not None:
                plan_cache.remember(namespace, nodes, order, recipe, kernels_matmul.mode)
    run_again = getattr(device, "run_again", None)
    if run_again is not None and recorder is None and recipe.steps and not debug.timing_wanted():
        # A Vulkan device keeps the command buffers of recent runs: the plan's key over these
        # buffers finds one without making the dispatches, whose work then is only a miss's.
        outs, temps, key = plan_cache.allocate_keyed(recipe, order, device, eager_scalars.replay_key)
        if key is not None:
            ringed = key[0]  # the recipe, or its form that reads changing parameters from a ring entry
            if run_again(key, outs + temps if temps else outs):
                debug.record_dispatches(device.name, recipe.steps)  # a Step has its dispatch's kernel and grid
            else:
                if ringed is recipe:
                    dispatches = plan_cache.dispatches_of(recipe, order, outs, temps)
                else:
                    dispatches = eager_scalars.dispatches_of(ringed, order, outs, temps, key[-1])
                debug.record_dispatches(device.name, dispatches)
                device.run(dispatches, key=key)
            if ringed is not recipe:
                ringed.ring.read_by(key[-1], device.last_submission)
            plan_cache.finish(recipe, order, outs, temps)
            return
        dispatches = plan_cache.dispatches_of(recipe, order, outs, temps)
    else:
        dispatches, outs, temps = plan_cache.bind(recipe, order, device)
    if recorder is not None:
        recorder.realized(device, dispatches, recipe, order)
    if dispatches:
        debug.record_dispatches(device.name, dispatches)
        if debug.timing_wanted():  # VKML_DEBUG or vkml.profiler: each dispatch timed, reported
            groups = fused_groups(nodes, order) if debug.level() >= 3 else None
            debug.run_timed(device, dispatches, planned, groups)
        else:
            device.run(dispatches)
    plan_cache.finish(recipe, order, outs, temps)
    del temps


def fused_groups(nodes: list[Node], order: list[Node]) -> list[tuple[int, list[Node]]]:
    """The kernel groups of a realize of ``nodes``, in dispatch order, for ``VKML_DEBUG=3``: each as
    (its number of dispatches, the nodes its kernels compute, sources first).

    Planned again from the graph (a replayed plan keeps positions, not groups); a node recomputed
    by two kernels is listed in both. Called before the nodes are realized.
    """
    with _planning, _deep_enough(len(order)):
        plan = Plan(nodes, order)
        leaf_ids = set(plan.roots)
        ordered = _dependency_order([_Group(plan, root, leaf_ids) for root in plan.groups()])
        counts = [
            1 if g.root.op == Op.KERNEL else 0 if g.root.numel == 0 else len(g.template().kernels) for g in ordered
        ]
    position = {id(n): i for i, n in enumerate(plan.nodes)}
    result = []
    for g, count in zip(ordered, counts):
        members: dict[int, Node] = {}
        stack = list(g.outputs) + list(g.chain)
        while stack:
            n = stack.pop()
            if n.realized or id(n) in members:
                continue
            owner = plan.produced_by.get(id(n), n if id(n) in plan.roots else None)
            if owner is not None and owner is not g.root:
                continue  # another kernel writes it; this one loads it
            members[id(n)] = n
            stack.extend(n.srcs)
        result.append((count, sorted(members.values(), key=lambda n: position.get(id(n), -1))))
    return result


def clear_template_cache() -> None:
    """Forget every lowered kernel and every cached plan (tests use it to count lowering)."""
    with _planning:
        _templates.clear()
        plan_cache.clear()


def kernel_groups(nodes: list[Node]) -> list[tuple[int, list[Node]]]:
    """``fused_groups`` of a realize of ``nodes`` (of one device) that has not run: for ``vkml.debug.graph``."""
    nodes = [n for n in nodes if not n.realized]
    return fused_groups(nodes, toposort(nodes)) if nodes else []


debug.kernel_grouper = kernel_groups
