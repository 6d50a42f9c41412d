"""Scheduling: group the lazy graph into kernels, lower them, run them in one submission.

Fusion rules (each pinned by tests that count dispatches):
1. Elementwise ops, casts, constants and views (reshape, permute, expand, slice, flip, pad,
   cat) are inlined into the kernel that consumes them: chains of them never make a dispatch
   of their own, and movement ops are index arithmetic.
2. A reduction fuses its elementwise producers (computed inside its loads) and its
   elementwise consumers of the reduced shape, when it has a single consumer and is reached
   from the kernel's root through elementwise ops and contiguous reshapes only. Otherwise
   the reduction is realized by its own kernel(s) and loaded by its consumers.
3. A node with several consumers is inlined (recomputed) into each, unless its inlined
   expression costs more than ``RECOMPUTE_LIMIT`` nodes: then it is computed once.
4. An elementwise expression seen through a broadcasting view (one that multiplies the
   number of elements) is realized first unless it costs at most ``BROADCAST_RECOMPUTE_LIMIT``.
5. A reduction over more than one block (see kernels.reduce_layout) takes one dispatch per
   pass; all dispatches of one realize go into one submission.
Fusion never changes bits: every op's value is the same whether it is inlined or realized.
"""

from __future__ import annotations

from collections import defaultdict

from . import debug, kernels
from .graph import Node, toposort
from .runtime.base import Buffer, Dispatch

RECOMPUTE_LIMIT = 12
BROADCAST_RECOMPUTE_LIMIT = 3


def _consumer_counts(nodes: list[Node]) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for n in nodes:
        for s in n.srcs:
            counts[id(s)] += 1
    return counts


class Plan:
    """Which nodes are kernel roots, and which reduction each root fuses."""

    def __init__(self, targets: list[Node]):
        self.nodes = toposort([t for t in targets if not t.realized])
        self.consumers = _consumer_counts(self.nodes)
        self.roots: dict[int, Node] = {id(t): t for t in targets if not t.realized}
        self.fused_reduce: dict[int, Node] = {}
        self._cost: dict[int, int] = {}
        for node in reversed(self.nodes):  # users before sources
            if id(node) in self.roots:
                self._claim(node)

    def cost(self, node: Node) -> int:
        """Number of nodes inlined to compute ``node`` (roots and leaves count 1)."""
        if node.realized or id(node) in self.roots or node.op in ("const", "reduce"):
            return 1
        if id(node) not in self._cost:
            self._cost[id(node)] = min(1000, 1 + sum(self.cost(s) for s in node.srcs))
        return self._cost[id(node)]

    def _make_root(self, node: Node) -> None:
        if id(node) not in self.roots:
            self.roots[id(node)] = node
            self._claim(node)

    def _claim(self, root: Node) -> None:
        """Walk the expression of ``root``, deciding which sources become roots themselves."""
        candidate = self._fusable_reduce(root)
        if candidate is not None:
            self.fused_reduce[id(root)] = candidate
        seen = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if id(node) in seen or node.realized:
                continue
            seen.add(id(node))
            for s in node.srcs:
                if s.realized or s.op == "const":
                    continue
                if id(s) in self.roots:
                    continue
                if s.op == "reduce":
                    if s is not candidate:
                        self._make_root(s)
                    else:
                        stack.extend(s.srcs)
                    continue
                broadcast = node.op == "view" and node.numel > s.numel
                if broadcast and self.cost(s) > BROADCAST_RECOMPUTE_LIMIT:
                    self._make_root(s)
                elif self.consumers[id(s)] > 1 and self.cost(s) > RECOMPUTE_LIMIT:
                    self._make_root(s)
                else:
                    stack.append(s)
        if root.op == "reduce" and candidate is None:
            self.fused_reduce[id(root)] = root

    def _fusable_reduce(self, root: Node) -> Node | None:
        if root.op == "reduce":
            return root
        found: list[Node] = []
        stack = [root]
        while stack:
            node = stack.pop()
            for s in node.srcs:
                if s.realized or id(s) in self.roots:
                    continue
                if s.op == "reduce":
                    found.append(s)
                elif s.op in ("elementwise", "cast") or (s.op == "view" and s.arg.is_contiguous):
                    stack.append(s)
        if len(found) == 1 and self.consumers[id(found[0])] == 1 and found[0].numel == root.numel:
            if root.op in ("elementwise", "cast") or (root.op == "view" and root.arg.is_contiguous):
                return found[0]
        return None

    def ordered_roots(self) -> list[Node]:
        return [n for n in self.nodes if id(n) in self.roots]


def lower(plan: Plan) -> tuple[list[Dispatch], dict[int, Buffer], list[Buffer]]:
    """Dispatches for every root of ``plan``, the roots' output buffers, and temporaries."""
    outputs: dict[int, Buffer] = {}
    dispatches: list[Dispatch] = []
    temps: list[Buffer] = []
    for root in plan.ordered_roots():
        out = root.device.allocate(root.dtype, root.numel)
        if root.numel:
            red = plan.fused_reduce.get(id(root))
            if red is not None:
                ds, ts = kernels.lower_reduce(root, red, out, outputs, root.device)
                dispatches += ds
                temps += ts
            else:
                dispatches += kernels.lower_elementwise(root, out, outputs)
        outputs[id(root)] = out
    return dispatches, outputs, temps


def realize(*targets: Node) -> None:
    """Compute every target node; one ``Device.run`` (one submission) per device involved."""
    by_device: dict[str, list[Node]] = defaultdict(list)
    for t in targets:
        if not t.realized:
            by_device[t.device.name].append(t)
    for nodes in by_device.values():
        plan = Plan(nodes)
        dispatches, outputs, temps = lower(plan)
        if dispatches:
            debug.record_dispatches(nodes[0].device.name, dispatches)
            nodes[0].device.run(dispatches)
        for root in plan.ordered_roots():
            root.become_buffer(outputs[id(root)])
        del temps
