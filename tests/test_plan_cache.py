"""The plan cache (vkml/schedule/plan_cache.py): a repeated graph structure is not planned again, a
replayed plan gives the bits of a fresh one, and a structurally different graph never
reuses another's plan."""

from __future__ import annotations

import numpy as np
import pytest

import vkml
from vkml import debug
from vkml.graph import build as lazy
from vkml.graph.node import Elementwise, Node, Op, toposort
from vkml.kernels import lowering as kernels
from vkml.kernels import matmul as matmul_templates
from vkml.ops.registry import REGISTRY
from vkml.schedule import plan_cache
from vkml.schedule import scheduler as schedule


def _devices():
    return [vkml.device("cpu"), vkml.best_device()]


def _counts():
    c = debug.counters()
    return c["plans"], c["plan_replays"]


def _data(seed: int, shape=(4, 8), dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)


def _graph(a, b, k1: float, k2: float):
    """Shared nodes, scalars, a view, a reduction fused with its consumers, a broadcast back."""
    x = a * b + k1
    y = vkml.maximum(x * x, b.T.reshape(4, 8)) - k2
    m = y.amax(dim=1, keepdim=True)
    return (vkml.exp(y - m) * 0.5 + x).sum(dim=0)


def _fresh(fn, *args):
    """``fn(*args)`` realized through a plan made from scratch."""
    schedule.clear_template_cache()
    return fn(*args).numpy()


@pytest.mark.parametrize("device", _devices(), ids=lambda d: d.name)
def test_repeated_structure_is_planned_once_and_replayed(device):
    a = vkml.tensor(_data(0), device=device)
    b = vkml.tensor(_data(1, (8, 4)).T.copy(), device=device)
    schedule.clear_template_cache()
    debug.reset_counters()
    for i in range(5):
        _graph(a, b, 0.25 * i, 1.5).numpy()
    assert _counts() == (1, 4)
    compiled = debug.counters()["kernels_compiled"]
    _graph(a, b, 3.0, -1.0).numpy()
    assert debug.counters()["kernels_compiled"] == compiled
    assert _counts() == (1, 5)


@pytest.mark.parametrize("device", _devices(), ids=lambda d: d.name)
def test_replayed_plan_gives_the_bits_of_a_fresh_plan(device):
    a0, b0 = vkml.tensor(_data(0), device=device), vkml.tensor(_data(1), device=device)
    _graph(a0, b0, 0.5, 1.0).numpy()  # the plan that later graphs replay
    for seed, k1, k2 in ((2, -0.75, 3.0), (4, 1e-3, -2.5), (6, 0.0, -0.0)):
        a, b = vkml.tensor(_data(seed), device=device), vkml.tensor(_data(seed + 1), device=device)
        debug.reset_counters()
        replayed = _graph(a, b, k1, k2).numpy()
        assert _counts() == (0, 1)
        fresh = _fresh(_graph, a, b, k1, k2)
        assert _counts() == (1, 1)
        np.testing.assert_array_equal(replayed.view(np.uint32), fresh.view(np.uint32))


def test_replay_on_lavapipe_equals_the_cpu_reference():
    gpu = vkml.best_device()
    outs = []
    for device in (vkml.device("cpu"), gpu):
        a, b = vkml.tensor(_data(8), device=device), vkml.tensor(_data(9), device=device)
        _graph(a, b, 0.1, 0.2).numpy()
        debug.reset_counters()
        outs.append(_graph(b, a, -0.3, 0.7).numpy())
        assert _counts() == (0, 1)
    np.testing.assert_array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))


def _same_structure_pairs():
    """(name, first graph, second graph) pairs whose structures differ in one respect only."""
    f32 = lambda s: vkml.tensor(_data(s))  # noqa: E731
    f16 = lambda s: vkml.tensor(_data(s).astype(np.float16))  # noqa: E731
    square = lambda s: vkml.tensor(_data(s, (8, 8)))  # noqa: E731

    def shared():
        x = f32(0) * f32(1)
        return x + x

    def unshared():
        return f32(0) * f32(1) + f32(0) * f32(1)

    def one_leaf_twice():
        a = f32(0)
        return a * a

    return [
        ("view: transpose or not", lambda: square(0).T * 2.0 + 1.0, lambda: square(0) * 2.0 + 1.0),
        ("view: which dim flips", lambda: square(0).flip(0) + 1.0, lambda: square(0).flip(1) + 1.0),
        ("view: which dim", lambda: square(0).sum(dim=0), lambda: square(0).sum(dim=1)),
        ("dtype of a tensor", lambda: f32(0) * 3.0, lambda: f16(0) * 3.0),
        ("sharing of a node", shared, unshared),
        ("sharing of a leaf", one_leaf_twice, lambda: f32(0) * f32(1)),
        (
            "dtype of a constant",
            lambda: vkml.full((4, 8), 3, dtype=vkml.int32).float() * f32(0),
            lambda: vkml.full((4, 8), 3, dtype=vkml.int64).float() * f32(0),
        ),
        ("op", lambda: vkml.maximum(f32(0), f32(1)), lambda: vkml.minimum(f32(0), f32(1))),
        ("shape", lambda: f32(0) + 1.0, lambda: vkml.tensor(_data(0, (8, 4))) + 1.0),
    ]


@pytest.mark.parametrize("name, first, second", _same_structure_pairs(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_structurally_different_graph_is_planned_afresh(name, first, second):
    schedule.clear_template_cache()
    first().numpy()
    debug.reset_counters()
    out = second()
    _, key_first = plan_cache.trace([first().node], matmul_templates.mode)
    _, key_second = plan_cache.trace([out.node], matmul_templates.mode)
    assert key_first != key_second, name
    got = out.numpy()
    assert _counts() == (1, 0), name
    np.testing.assert_array_equal(got, _fresh(second), err_msg=name)


def test_equal_structures_have_equal_keys_whatever_the_constants():
    a, b = vkml.tensor(_data(0)), vkml.tensor(_data(1))
    _, k1 = plan_cache.trace([_graph(a, b, 0.5, 1.0).node], matmul_templates.mode)
    _, k2 = plan_cache.trace([_graph(b, a, -7.0, 2.0).node], matmul_templates.mode)
    assert k1 == k2


def test_targets_are_part_of_the_key():
    a = vkml.tensor(_data(0))
    x = a * 2.0
    y = x + 1.0
    vkml.realize(y, x)  # x is a target: it gets a buffer of its own
    debug.reset_counters()
    x2 = a * 3.0
    y2 = x2 + 1.0
    y2.realize()  # same nodes, x2 is not a target
    assert _counts() == (1, 0)
    np.testing.assert_array_equal(y2.numpy(), _data(0) * np.float32(3.0) + np.float32(1.0))


def test_baked_constants_are_checked_by_value():
    """Past the parameter budget a kernel bakes constants in: a replay needs the same values."""
    n_consts = kernels.PARAM_BUDGET_NBYTES // 4 + 4
    a = vkml.tensor(_data(0))

    def chain(values):
        x = a
        for v in values:
            x = x * v + 0.0
        return x

    def expected(values):
        x = _data(0)
        for v in values:
            x = x * np.float32(v) + np.float32(0.0)
        return x

    first = [1.0 + i / 64 for i in range(n_consts)]
    second = [1.0 - i / 64 for i in range(n_consts)]
    chain(first).numpy()
    debug.reset_counters()
    np.testing.assert_array_equal(chain(second).numpy(), expected(second))
    assert debug.counters()["plans"] == 1  # the baked values differ: planned again
    debug.reset_counters()
    np.testing.assert_array_equal(chain(second).numpy(), expected(second))
    assert _counts() == (0, 1)


def test_a_graph_with_a_user_kernel_is_never_cached():
    @vkml.kernel(outputs=lambda x: (x.shape, x.dtype), local_size=(64,))
    def copy(x, out):
        i = vkml.dsl.global_id(0)
        with vkml.dsl.if_(i < x.numel):
            out[i] = x[i]

    a = vkml.tensor(np.arange(8, dtype=np.float32))
    for k in range(3):
        debug.reset_counters()
        np.testing.assert_array_equal((copy(a * 2.0) + float(k)).numpy(), np.arange(8) * 2.0 + k)
        assert _counts() == (1, 0)


def test_trace_order_is_toposort_order():
    rng = np.random.default_rng(5)
    for _ in range(50):
        device = vkml.device("cpu")
        pool = [vkml.tensor(_data(int(s))).node for s in rng.integers(0, 99, 3)]
        for _ in range(int(rng.integers(1, 30))):
            if rng.random() < 0.3:  # a broadcast constant (trace emits those without a push), sometimes shared
                const = lazy.const_node(float(rng.random()), vkml.float32, (4, 8), device)
                pool += [const] * int(rng.integers(1, 3))
                continue
            srcs = tuple(pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(1, 4))))
            pool.append(
                Node(Op.ELEMENTWISE, srcs, Elementwise(REGISTRY["add"], srcs[0].dtype), (4, 8), srcs[0].dtype, device)
            )
        roots = [pool[int(i)] for i in rng.integers(3, len(pool), 2)] if len(pool) > 4 else [pool[-1]]
        order, key = plan_cache.trace(roots, matmul_templates.mode)
        assert order == toposort(roots)
        assert key is not None


def test_the_key_names_each_source_even_where_the_order_is_the_same():
    """Two graphs emitted in the same order that differ only in which node one unary op reads."""
    cpu = vkml.device("cpu")
    f32 = vkml.float32

    def graph(neg_reads_p: bool):
        a, b = vkml.tensor(_data(0)).node, vkml.tensor(_data(1)).node
        p = Node(Op.ELEMENTWISE, (a, b), Elementwise(REGISTRY["mul"], f32), (4, 8), f32, cpu)
        q = Node(Op.ELEMENTWISE, (a, b), Elementwise(REGISTRY["add"], f32), (4, 8), f32, cpu)
        neg = Node(Op.ELEMENTWISE, (p if neg_reads_p else q,), Elementwise(REGISTRY["neg"], f32), (4, 8), f32, cpu)
        return Node(Op.ELEMENTWISE, (neg, p, q), Elementwise(REGISTRY["where"], f32), (4, 8), f32, cpu)

    (order_p, key_p), (order_q, key_q) = (plan_cache.trace([graph(w)], matmul_templates.mode) for w in (True, False))
    assert [n.arg for n in order_p] == [n.arg for n in order_q]
    assert key_p != key_q


def test_trace_marks_on_shared_nodes_never_leak_between_walks():
    """trace keeps its marks on the nodes: walks over overlapping graphs, in any order, and after
    some of the nodes became buffers, give what a walk of fresh copies would."""
    rng = np.random.default_rng(11)
    cpu = vkml.device("cpu")
    leaves = [vkml.tensor(_data(s)).node for s in range(3)]
    pool = list(leaves)
    for _ in range(40):
        if rng.random() < 0.3:
            pool.append(lazy.const_node(float(rng.random()), vkml.float32, (4, 8), cpu))
            continue
        srcs = tuple(pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(1, 4))))
        pool.append(Node(Op.ELEMENTWISE, srcs, Elementwise(REGISTRY["add"], vkml.float32), (4, 8), vkml.float32, cpu))
    realized = 0
    for step in range(60):
        roots = [pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(1, 4)))]
        order, key = plan_cache.trace(roots, matmul_templates.mode)
        assert order == toposort(roots)
        # The key names sources by position in this walk, whatever earlier walks left on the nodes.
        position = {id(n): p for p, n in enumerate(order)}
        for entry, node in zip(key, order):
            refs = entry[4]
            srcs = [refs] if isinstance(refs, int) else list(refs)
            assert srcs == [position[id(s)] for s in node.srcs]
            assert entry[0] == node.op
        assert key[-1] == tuple(position[id(r)] for r in roots)
        if step % 10 == 9:  # a node realized in between is a buffer, without sources, in every later key
            victim = next((n for n in reversed(order) if n.op == "elementwise"), None)
            if victim is not None:
                victim.become_buffer(cpu.allocate(vkml.float32, 32))
                _, later = plan_cache.trace([victim], matmul_templates.mode)
                assert later == (("buffer", None, (4, 8), vkml.float32, ()), (0,))
                realized += 1
    assert realized >= 3


def test_trace_walks_in_threads_do_not_mix():
    import sys
    import threading

    a, b = vkml.tensor(_data(0)), vkml.tensor(_data(1))
    x = a
    for k in range(100):  # long walks over shared nodes
        x = x * b + float(k)
    graphs = [[(vkml.tensor(_data(2)) * 2.0 + 0.5).node, x.node] for _ in range(4)]
    expected = [plan_cache.trace(g, matmul_templates.mode) for g in graphs]
    failures = []

    def work(i):
        for _ in range(50):
            if plan_cache.trace(graphs[i], matmul_templates.mode) != expected[i]:
                failures.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: inside walks, were they not locked
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures


def test_a_recipe_names_its_parts():
    # Steps, buffer and parameter references are named tuples: read by field, not by position.
    x = vkml.arange(6, dtype=vkml.float32).reshape(2, 3)
    y = x.T * 2.0 + 1.0  # a view's offsets and a constant reach the kernel as parameters
    order, _ = plan_cache.trace([y.node], matmul_templates.mode)
    recipe = schedule.compile_recipe(schedule.Plan([y.node], order))
    (step,) = recipe.steps
    assert isinstance(step, plan_cache.Step) and step.kernel is not None
    sources = {ref.source for ref in step.buffers}
    assert sources == {plan_cache.LEAF, plan_cache.OUT}
    assert all(isinstance(ref, plan_cache.ParamRef) for ref in step.params)
    (output,) = recipe.outputs
    assert order[output.position] is y.node and output.numel == 6


def test_a_group_keys_a_loaded_result_as_a_buffer():
    """The template key is the plan key's walk over one group (plan_cache.group_structure), with what
    the group loads taken as buffers: reading a result computed in the same realize or a realized
    tensor of that shape is one template, and the group's key has the plan key's entries."""
    schedule.clear_template_cache()
    x = vkml.tensor(_data(0))
    total = x.sum(0)
    vkml.realize(total, total.exp() * 2)  # the product's kernel loads the sum's result
    lowered = len(schedule._templates)
    done = x.sum(0).realize()
    (done.exp() * 2).realize()  # the same kernels, the sum read from its buffer
    assert len(schedule._templates) == lowered == 2
    root = done.exp().neg().node
    order, key = plan_cache.group_structure(root, matmul_templates.mode, set())
    assert order == toposort([root])  # one source a node: both walks take the same order
    assert key == plan_cache.trace([root], matmul_templates.mode)[1]
