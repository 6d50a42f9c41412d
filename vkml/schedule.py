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
   mean then variance). The earlier results are also written out for other consumers.
4. A node with several consumers is inlined (recomputed) into each, unless its inlined
   expression costs more than ``RECOMPUTE_LIMIT`` nodes: then it is computed once.
5. An expression seen through a broadcasting view (one that multiplies the number of
   elements) is realized first unless it costs at most ``BROADCAST_RECOMPUTE_LIMIT`` — or it
   is a row result of rule 3.
6. A single reduction with few long rows is split over aligned blocks: one dispatch per pass.
7. A single reduction that keeps the innermost axis (``grad.sum(0)``) runs in the columns mode
   (vkml/kernels_reduce_columns.py) instead of rules 2 and 6: neighbouring invocations take
   neighbouring outputs; one dispatch, or one per pass when few outputs have long columns
   (the reduced axis is then split over workgroups). Chains (rule 3) stay in the rows mode.
All dispatches of one realize go into one submission. Fusion never changes bits: every op's
value is the same whether it is inlined, recomputed or realized.

Lowered kernels are cached by the structure of their group (ops, shapes, dtypes, views and
sharing; not the data, not the values of constants, which travel as parameters), so a loop
that builds the same graph again reuses the same Kernel objects and compiled pipelines.
"""

from __future__ import annotations

import contextlib
import sys
from collections import OrderedDict, defaultdict

from . import debug, kernels, kernels_matmul, kernels_reduce, kernels_reduce_columns, kernels_tuning
from .graph import Node, toposort
from .runtime.base import Buffer, Dispatch
from .view import ViewStack

RECOMPUTE_LIMIT = 12
BROADCAST_RECOMPUTE_LIMIT = 3
TEMPLATE_CACHE_SIZE = 1024
_WIDEST_PARAM_NBYTES = 8  # a 64-bit scalar parameter

_templates: OrderedDict = OrderedDict()


def _consumer_counts(nodes: list[Node]) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for n in nodes:
        for s in n.srcs:
            counts[id(s)] += 1
    return counts


def _is_row_broadcast(view: Node, red: Node) -> bool:
    """Whether ``view`` spreads a tensor of ``red``'s kept shape back over ``red``'s rows."""
    src = view.srcs[0]
    if src.shape != red.shape or view.shape != red.srcs[0].shape:
        return False
    return view.arg == ViewStack.contiguous(red.shape).expand(view.shape)


def _inline_kind(node: Node) -> bool:
    return node.op in ("elementwise", "cast") or (node.op == "view" and node.arg.is_contiguous)


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
        for node in reversed(self.nodes):  # users before sources
            if id(node) in self.roots:
                self._claim(node)
        self._drop_unreachable_chain_members()

    def cost(self, node: Node) -> int:
        """Number of nodes inlined to compute ``node`` (roots and leaves count 1)."""
        if node.op == "const" or (node.op == "view" and node.srcs[0].op == "const"):
            return 0  # a broadcast constant is a parameter: free to recompute anywhere
        if node.realized or id(node) in self.roots or node.op in ("reduce", "matmul"):
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
        chain = [] if main is None else [main] if main.op == "matmul" else self._chain(main)
        if main is not None:
            self.chains[id(root)] = chain
            for red in chain[:-1]:
                self.produced_by[id(red)] = root
                self.roots[id(red)] = red
        fused = {id(r) for r in chain}
        roots, consumers = self.roots, self.consumers  # the same dicts: _make_root below adds to roots
        seen, stack = set(), [root]
        while stack:
            node = stack.pop()
            if id(node) in seen or node.realized:
                continue
            seen.add(id(node))
            node_op = node.op
            for s in node.srcs:
                s_id, s_op = id(s), s.op
                if node_op == "kernel" or s_op == "kernel":  # a user's @vkml.kernel reads and writes whole buffers
                    if not s.realized:
                        self._make_root(s)
                    continue
                if s.realized or s_op == "const" or (s_id in roots and s_id not in fused):
                    continue
                if s_op == "reduce" or s_op == "matmul":
                    if s_id in fused:
                        stack.append(s)
                    else:
                        self._make_root(s)
                    continue
                if node_op == "matmul":  # operand elements are loaded many times: compute them once
                    for operand in kernels_matmul.computed_operands(s, self._is_loaded):
                        self._make_root(operand)
                    if s_id in roots:
                        continue
                broadcast = node_op == "view" and node.numel > s.numel
                if broadcast and id(node) in self._row_results:
                    stack.append(s)
                elif broadcast and self.cost(s) > BROADCAST_RECOMPUTE_LIMIT:
                    self._make_root(s)
                elif consumers[s_id] > 1 and self.cost(s) > RECOMPUTE_LIMIT:
                    self._make_root(s)
                else:
                    stack.append(s)

    def _is_loaded(self, node: Node) -> bool:
        return node.realized or id(node) in self.roots

    def _main_reduce(self, root: Node) -> Node | None:
        """The reduction (or matmul) ``root``'s kernel computes: root itself, or one under a same-size expression."""
        if root.op in ("reduce", "matmul"):
            return root
        if not _inline_kind(root):
            return None
        found, stack = [], [root]
        while stack:
            node = stack.pop()
            for s in node.srcs:
                if s.realized or id(s) in self.roots:
                    continue
                if s.op in ("reduce", "matmul"):
                    found.append(s)
                elif _inline_kind(s) and self.consumers[id(s)] == 1:  # shared nodes are read elsewhere too
                    stack.append(s)
        if len(found) == 1 and self.consumers[id(found[0])] == 1 and found[0].numel == root.numel:
            return found[0]
        return None

    def _chain(self, red: Node) -> list[Node]:
        """Earlier reductions over ``red``'s rows that ``red`` reads through row broadcasts, then ``red``."""
        chain: list[Node] = []
        stack, seen = [red.srcs[0]], set()
        while stack:
            node = stack.pop()
            if id(node) in seen or node.realized:
                continue
            seen.add(id(node))
            if node.op == "view" and _is_row_broadcast(node, red):
                inner = self._row_reductions(node.srcs[0], red)
                if inner:
                    self._row_results.add(id(node))
                    for r in inner:  # adopt r (and its own chain) even if r was made a root already
                        sub = self.chains.pop(id(r), None) or self._chain(r)
                        chain.extend(x for x in sub if x not in chain)
                    continue
            if node.op in ("elementwise", "cast", "view", "cat"):
                stack.extend(node.srcs)
        return chain + [red]

    def _row_reductions(self, node: Node, red: Node) -> list[Node]:
        """Reductions like ``red`` (same rows) under ``node`` through reduced-shape expressions only."""
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            if n.realized or n.op == "const" or (n.op == "view" and n.srcs[0].op == "const"):
                continue
            if n.op == "reduce":
                same_rows = n.arg[1] == red.arg[1] and n.shape == red.shape and n.srcs[0].shape == red.srcs[0].shape
                if not same_rows or id(n) in self.produced_by:
                    return []
                out.append(n)
            elif _inline_kind(n):
                stack.extend(n.srcs)
            else:
                return []
        return out

    def _drop_unreachable_chain_members(self) -> None:
        """A chain member must be computed inline from its root; one cut off by a later root runs alone."""
        for root_id, chain in list(self.chains.items()):
            root = self.roots[root_id]
            fused = {id(r) for r in chain}
            reached, stack = set(), [root]
            while stack:
                node = stack.pop()
                if id(node) in reached:
                    continue
                reached.add(id(node))
                for s in node.srcs:
                    if not s.realized and (id(s) not in self.roots or id(s) in fused):
                        stack.append(s)
            kept = [r for r in chain if id(r) in reached]
            for r in chain:
                if id(r) not in reached:  # (the last member, the root's own reduction, may be cut off too)
                    self.produced_by.pop(id(r), None)
                    self.roots[id(r)] = r
                    self.chains[id(r)] = [r]
            self.chains[root_id] = kept

    def groups(self) -> list[Node]:
        """Roots whose kernels must be lowered (chain members come with their chain's root)."""
        return [n for n in self.nodes if id(n) in self.roots and id(n) not in self.produced_by]


class Signature:
    """The structure of one group, as a cache key, and its leaves and constants in a fixed order."""

    def __init__(self, root: Node, chain: list[Node], stored: list[Node], leaf_ids, mode: str):
        self.leaves: list[Node] = []
        self.consts: list[Node] = []
        self._numbers: dict[int, int] = {}
        fused = {id(r) for r in chain}
        walk = self._walk(root, leaf_ids, fused)
        self.baked = self._over_budget()
        baked_values = tuple((i, repr(n.arg)) for i, n in enumerate(self.consts) if id(n) in self.baked)
        chain_at = tuple(self._numbers[id(r)] for r in chain)
        self.key = (mode, walk, chain_at, tuple(self._numbers[id(r)] for r in stored), baked_values)

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

    def _walk(self, node: Node, leaf_ids, fused) -> tuple:
        """Describe the group's nodes in post-order; every node is numbered when it is described.

        This runs for every group of every realize (the key is looked up before anything is
        lowered), so a node's leafness is decided once, on entry, and carried to its exit.
        """
        numbers = self._numbers
        out = []
        stack: list[tuple[Node, bool | None]] = [(node, None)]  # None: enter the node; else exit, with is_leaf
        while stack:
            n, is_leaf = stack.pop()
            n_id = id(n)
            if is_leaf is not None:
                numbers[n_id] = len(numbers)
                out.append(self._describe(n, is_leaf))
                continue
            if n_id in numbers:
                continue
            numbers[n_id] = -1  # visiting
            is_leaf = (n.realized or n_id in leaf_ids) and n_id not in fused
            stack.append((n, is_leaf))
            if not is_leaf:
                for s in reversed(n.srcs):
                    if id(s) not in numbers:
                        stack.append((s, None))
        return tuple(out)

    def _describe(self, n: Node, is_leaf: bool) -> tuple:
        if is_leaf:
            self.leaves.append(n)
            return ("leaf", n.shape, n.dtype.name)
        if n.op == "const":
            self.consts.append(n)
            return ("const", n.shape, n.dtype.name)
        numbers = self._numbers
        sources = tuple([numbers[id(s)] for s in n.srcs])
        return (n.op, n.arg, n.shape, n.dtype.name, sources)


def _lower_group(root: Node, chain: list[Node], leaf_ids, mode: str, baked) -> kernels.GroupTemplate:
    if not chain:
        return kernels.lower_elementwise(root, leaf_ids, baked)
    if mode.startswith("matmul"):
        return kernels_matmul.lower_matmul(root, chain[-1], leaf_ids, baked, kernels_matmul.parse_mode(mode))
    if mode == "blocks":
        return kernels_reduce.lower_blocks(root, chain[-1], leaf_ids, baked)
    if mode == "columns":
        return kernels_reduce_columns.lower_columns(root, chain[-1], leaf_ids, baked)
    return kernels_reduce.lower_rows(root, chain, chain[:-1], leaf_ids, baked)


def _indexed(group: kernels.GroupTemplate, sig: Signature, outputs: list[Node]) -> kernels.GroupTemplate:
    """The template with node roles replaced by positions in the signature (cacheable)."""
    leaf_pos = {id(n): i for i, n in enumerate(sig.leaves)}
    const_pos = {id(n): i for i, n in enumerate(sig.consts)}
    out_pos = {id(n): i for i, n in enumerate(outputs)}
    indexed = []
    for kt in group.kernels:
        buffers = {}
        for name, (kind, what) in kt.buffers.items():
            pos = {"leaf": leaf_pos, "out": out_pos}.get(kind)
            buffers[name] = (kind, pos[id(what)] if pos is not None else what)
        params = {name: const_pos[id(node)] for name, node in kt.params.items()}
        indexed.append(kernels.KernelTemplate(kt.kernel, kt.grid, buffers, params))
    return kernels.GroupTemplate(indexed, list(group.temps))


def _param_value(node: Node):
    return int(node.arg) if node.dtype.name == "bool" else node.arg


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
        if self.chain and self.chain[-1].op == "matmul":  # the mode names the tiles (they depend on the device)
            self.mode = kernels_matmul.mode(self.chain[-1])
        else:
            self.mode = kernels_reduce.choose_mode(self.chain[-1], len(self.chain)) if self.chain else "elementwise"
            if (
                self.mode in ("rows", "blocks")
                and len(self.chain) == 1
                and kernels_reduce_columns.columns_fit(self.chain[0])
            ):
                self.mode = "columns"  # rule 7: a lone reduction over a strided axis
        self.outputs = [root] + self.chain[:-1]
        # Everything realized by other groups of this plan is loaded; this group's own outputs are computed.
        self.leaf_ids = _LoadedIds(leaf_ids, {id(n) for n in self.outputs})
        self.sig = Signature(root, self.chain, self.chain[:-1], self.leaf_ids, self.mode)

    def template(self) -> kernels.GroupTemplate:
        key = _TemplateKey((self.sig.key, kernels_tuning.tuning_for(self.root.device)))  # laid out per device
        found = _templates.get(key)
        if found is None:
            lowered = _lower_group(self.root, self.chain, self.leaf_ids, self.mode, self.sig.baked)
            found = _indexed(lowered, self.sig, self.outputs)
            _templates[key] = found
            if len(_templates) > TEMPLATE_CACHE_SIZE:
                _templates.popitem(last=False)
        else:
            _templates.move_to_end(key)
        return found


def lower(plan: Plan) -> tuple[list[Dispatch], dict[int, Buffer], list[Buffer]]:
    """Dispatches for every group of ``plan``, the roots' output buffers, and temporaries."""
    leaf_ids = set(plan.roots)  # a snapshot: the groups' _LoadedIds read it
    groups = [_Group(plan, root, leaf_ids) for root in plan.groups()]
    outputs: dict[int, Buffer] = {}
    dispatches: list[Dispatch] = []
    temps: list[Buffer] = []
    for g in _dependency_order(groups):
        if g.root.op == "kernel":  # a user's @vkml.kernel binds its own buffers (vkml/dsl_kernel.py)
            dispatches += g.root.arg.lower(g.root, outputs)
            continue
        device = g.root.device
        outs = [device.allocate(n.dtype, n.numel) for n in g.outputs]
        for n, buf in zip(g.outputs, outs):
            outputs[id(n)] = buf
        if g.root.numel == 0:
            continue
        template = g.template()
        group_temps = [device.allocate(dtype, numel) for dtype, numel in template.temps]
        temps += group_temps
        for kt in template.kernels:
            buffers = {}
            for name, (kind, pos) in kt.buffers.items():
                if kind == "leaf":
                    leaf = g.sig.leaves[pos]
                    buffers[name] = leaf.buffer if leaf.realized else outputs[id(leaf)]
                elif kind == "out":
                    buffers[name] = outs[pos]
                else:
                    buffers[name] = group_temps[pos]
            params = {name: _param_value(g.sig.consts[pos]) for name, pos in kt.params.items()}
            dispatches.append(Dispatch(kt.kernel, kt.grid, buffers, params))
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


def realize(*targets: Node) -> None:
    """Compute every target node; one ``Device.run`` (one submission) per device involved."""
    by_device: dict[str, list[Node]] = defaultdict(list)
    for t in targets:
        if not t.realized:
            by_device[t.device.name].append(t)
    for nodes in by_device.values():
        order = toposort(nodes)  # sized once: for the recursion limit, then handed to the plan
        with _deep_enough(len(order)):  # planning and lowering recurse along expression chains
            plan = Plan(nodes, order)
            dispatches, outputs, temps = lower(plan)
        if dispatches:
            debug.record_dispatches(nodes[0].device.name, dispatches)
            nodes[0].device.run(dispatches)
        for root in plan.nodes:
            if id(root) in plan.roots:
                root.become_buffer(outputs[id(root)])
        del temps


def clear_template_cache() -> None:
    """Forget every lowered kernel (tests use it to count lowering)."""
    _templates.clear()
