"""graph.toposort: every reachable node once, sources before users, in a fixed documented order; typed nodes."""

import random

import vkml
from vkml.graph.node import Cast, Cat, Const, Elementwise, Matmul, Node, Op, Random, Reduce, Stepping, toposort
from vkml.graph.view import ViewStack
from vkml.ir import types as T
from vkml.runtime.cpu import CPU


def _reference(roots):
    """The documented order, written recursively: post-order from the last root, sources last first."""
    order, seen = [], set()

    def visit(node):
        seen.add(id(node))
        for s in reversed(node.srcs):
            if id(s) not in seen:
                visit(s)
        order.append(node)

    for root in reversed(roots):
        if id(root) not in seen:
            visit(root)
    return order


def _random_dag(rng: random.Random, size: int) -> list[Node]:
    nodes = []
    for _ in range(size):
        srcs = tuple(rng.sample(nodes, k=min(len(nodes), rng.randint(0, 3))))
        nodes.append(Node("elementwise" if srcs else "const", srcs, None, (1,), T.float32, CPU))
    return nodes


def test_toposort_matches_the_documented_order_on_random_graphs():
    rng = random.Random(3)
    for _ in range(300):
        nodes = _random_dag(rng, rng.randint(1, 40))
        roots = rng.sample(nodes, k=rng.randint(1, min(4, len(nodes))))
        order = toposort(roots)
        assert [id(n) for n in order] == [id(n) for n in _reference(roots)]
        position = {id(n): i for i, n in enumerate(order)}
        assert len(position) == len(order)  # each node once
        for n in order:
            assert all(position[id(s)] < position[id(n)] for s in n.srcs)  # sources first


def test_toposort_handles_chains_deeper_than_the_recursion_limit():
    node = Node("const", (), Const(1.0), (1,), T.float32, CPU)
    for _ in range(5000):
        node = Node("elementwise", (node,), None, (1,), T.float32, CPU)
    assert len(toposort([node])) == 5001


def test_every_node_the_frontend_builds_has_an_op_constant_and_its_named_arg():
    """Node.op is one of the Op constants and each op's arg its named type (vkml/graph/node.py)."""
    x = vkml.ones(2, 3)
    out = (
        vkml.cat([x * 2, x.int().float()], 0).sum(0, keepdim=True)
        + (x @ x.t()).sum()
        + vkml.nn.functional.dropout(vkml.ones(1, 3), 0.5)  # its mask: the fused random node
        + x.view(vkml.int32).view(vkml.float32).max(0).values
    )
    args = {
        Op.ELEMENTWISE: Elementwise,
        Op.REDUCE: Reduce,
        Op.CAST: Cast,
        Op.CAT: Cat,
        Op.MATMUL: Matmul,
        Op.RANDOM: Random,
        Op.VIEW: ViewStack,
        Op.CONST: Const,
    }
    nodes = toposort([out.node])
    assert {n.op for n in nodes} >= set(args)
    for n in nodes:
        assert type(n.op) is Op and n.op in Op.ALL, n
        if n.op in args:  # a Stepping constant (dropout's key: changes every step) is a Const
            assert type(n.arg) is args[n.op] or (n.op is Op.CONST and type(n.arg) is Stepping), n
