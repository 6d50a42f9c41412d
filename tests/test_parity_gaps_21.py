"""PyTorch parity gaps closed in session 21, each against torch CPU: ``Tensor.set_`` in its four forms
(storage shared both ways, old views keeping the old storage, PyTorch's errors); ``torch.utils._pytree``
(containers, specs, maps, errors, registered nodes) and ``vkml.func`` over its pytrees; topk's ties where
docs/ops/topk.md says they agree with PyTorch's CPU."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils._pytree as torch_pytree

import vkml
from vkml.utils import _pytree as vkml_pytree

# ---------------------------------------------------------------------- Tensor.set_


def _set_to_tensor(lib, dev):
    t = lib.arange(4.0, device=dev)
    v = t[1:3]  # taken before: keeps t's old storage
    a = lib.arange(10.0, 16.0, device=dev)
    t.set_(a)
    v.mul_(10)
    t[0] = -1
    a[1] += 100
    w = t.view(2, 3)
    w[1, 2] = 7
    return [t, v, a, w, t.stride(), t.storage_offset()]


def _set_to_view(lib, dev):
    s = lib.arange(12.0, device=dev).view(3, 4)[:, 1:].t()  # strided, offset 1
    q = lib.zeros(1, device=dev)
    q.set_(s)
    s[0, 1] = 33
    q[2, 2] += 5
    return [q, s, q.stride(), q.storage_offset(), q.is_set_to(s)]


def _set_strided(lib, dev):
    a = lib.arange(8.0, device=dev)
    t = lib.zeros(2, device=dev)
    t.set_(a, 1, (2, 3), (3, 1))
    t[1] *= -1
    u = lib.zeros(2, device=dev)
    u.set_(a.untyped_storage(), 2, (3,), (2,))
    u += 100
    r = lib.zeros(2, device=dev)
    r.set_(a, 0, (2, 2))  # stride row-major by default
    return [t, u, r, a, t.stride(), t.storage_offset()]


def _set_storage_whole(lib, dev):
    a = lib.arange(6, device=dev).view(2, 3)
    t = lib.zeros(1, dtype=a.dtype, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.set_(a.t().storage())
    t[5] = 60
    u = lib.zeros(1, dtype=a.dtype, device=dev).set_(a[1].untyped_storage())
    return [t, u, a]


def _set_empty(lib, dev):
    x = lib.arange(6.0, device=dev)
    old = x.view(2, 3)
    x.set_()
    old[0, 0] = 9  # the old storage still lives through the view
    return [x, old, tuple(x.shape), x.untyped_storage().nbytes()]


def _set_self_and_own_view(lib, dev):
    x = lib.arange(6.0, device=dev)
    y = x[2:]
    x.set_(y)
    x[0] = 50
    z = lib.arange(3.0, device=dev)
    z.set_(z)
    z[0] = 7
    return [x, y, z]


def _set_leaf_under_no_grad(lib, dev):
    p = lib.zeros(3, requires_grad=True, device=dev)
    src = lib.ones(3, device=dev)
    with lib.no_grad():
        p.set_(src)
    (p * 2).sum().backward()
    with lib.no_grad():
        src.add_(1)
    return [p.detach(), p.grad, p.is_leaf, p.requires_grad]


SET_CASES = {
    "tensor": _set_to_tensor,
    "strided_view": _set_to_view,
    "offset_size_stride": _set_strided,
    "whole_storage": _set_storage_whole,
    "empty": _set_empty,
    "self_and_own_view": _set_self_and_own_view,
    "leaf_under_no_grad": _set_leaf_under_no_grad,
}


def _plain(values):
    return [v.tolist() if isinstance(v, (torch.Tensor, vkml.Tensor)) else v for v in values]


@pytest.mark.parametrize("case", SET_CASES)
def test_set_shares_storage_as_torch(case):
    fn = SET_CASES[case]
    assert _plain(fn(vkml, "cpu")) == _plain(fn(torch, "cpu"))


@pytest.mark.parametrize("case", ["tensor", "offset_size_stride"])
def test_set_on_vulkan_equals_torch(case, gpu):
    fn = SET_CASES[case]
    assert _plain(fn(vkml, gpu)) == _plain(fn(torch, "cpu"))


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e).split("\n")[0]
    return None


SET_ERRORS = {
    "dtype": lambda L: L.zeros(2).set_(L.arange(3)),
    "leaf_requires_grad": lambda L: L.zeros(2, requires_grad=True).set_(L.ones(2)),
    "offset_without_size": lambda L: L.zeros(2).set_(L.ones(2), 0),
    "not_a_source": lambda L: L.zeros(2).set_(5),
    "negative_offset": lambda L: L.zeros(2).set_(L.ones(4).untyped_storage(), -1, (1,)),
    "negative_stride": lambda L: L.zeros(2).set_(L.ones(4), 0, (2,), (-1,)),
}


@pytest.mark.parametrize("case", SET_ERRORS)
def test_set_errors_in_torch_words(case):
    fn = SET_ERRORS[case]
    assert _error(lambda: fn(vkml)) == _error(lambda: fn(torch))


def test_set_past_the_storage_refused():
    # PyTorch grows the storage (uninitialised elements); vkml refuses rather than read what is not there
    with pytest.raises(NotImplementedError, match="set_"):
        vkml.zeros(2).set_(vkml.ones(4), 2, (3,))


# ---------------------------------------------------------------------- torch.utils._pytree

Point = collections.namedtuple("Point", "x y")

TREES = {
    "leaf": lambda: 5,
    "none": lambda: None,
    "empty_containers": lambda: [(), [], {}],
    "nested": lambda: {"b": [1, (2, None)], "a": Point(3, 4), "c": collections.OrderedDict(z=5, y=6)},
    "defaultdict_deque": lambda: [collections.defaultdict(list, {"q": 7}), collections.deque([8, 9], maxlen=3)],
    "mixed_keys": lambda: {1: "a", "x": 2.5, (3,): [None]},
}


def _spec_text(mod, tree):
    leaves, spec = mod.tree_flatten(tree)
    rebuilt = mod.tree_unflatten([("leaf", x) for x in leaves], spec)
    paths = [(mod.keystr(p), x) for p, x in mod.tree_flatten_with_path(tree)[0]]
    return leaves, repr(spec), spec.num_leaves, spec.num_nodes, repr(rebuilt), mod.treespec_pprint(spec), paths


@pytest.mark.parametrize("case", TREES)
def test_pytree_flatten_unflatten_as_torch(case):
    tree = TREES[case]()
    assert _spec_text(vkml_pytree, tree) == _spec_text(torch_pytree, tree)


def _maps(mod):
    Pair = collections.namedtuple("Pair", "a b")
    return [
        mod.tree_map(lambda a, b: (a, b), [1, 2], [[1], {"x": 3}]),
        mod.tree_map(lambda a, b: a + b, {"x": 1, "y": (2,)}, {"y": (20,), "x": 10}),
        mod.tree_map_only(int, lambda x: -x, [1, 2.0, "a", Pair(3, None)]),
        mod.tree_map_only((int, float), lambda x: -x, [1, 2.0, "a"]),
        mod.tree_leaves([1, [2, 3]], is_leaf=lambda x: isinstance(x, list) and len(x) == 2),
        (mod.tree_all(lambda x: x > 0, [1, 2]), mod.tree_any(lambda x: x > 1, (1, 2))),
        list(mod.tree_iter([1, (2, {"k": 3})])),
        mod.tree_structure([1, {"k": 2}]) == mod.tree_structure([5, {"k": 6}]),
        mod.tree_structure([1, {"k": 2}]) == mod.tree_structure([5, {"j": 6}]),
        mod.tree_structure((1, [2])).flatten_up_to(((1, 2), [3])),
    ]


def test_pytree_maps_as_torch():
    assert repr(_maps(vkml_pytree)) == repr(_maps(torch_pytree))


PYTREE_ERRORS = {
    "unflatten_count": lambda P: P.tree_unflatten([1, 2], P.tree_structure([1, 2, 3])),
    "arity": lambda P: P.tree_map(lambda a, b: a, [1, 2], [1, 2, 3]),
    "type": lambda P: P.tree_map(lambda a, b: a, [1, 2], (1, 2)),
    "keys": lambda P: P.tree_map(lambda a, b: a, {"a": 1}, {"b": 1}),
    "not_a_spec": lambda P: P.tree_unflatten([1], 5),
}


@pytest.mark.parametrize("case", PYTREE_ERRORS)
def test_pytree_errors_in_torch_words(case):
    fn = PYTREE_ERRORS[case]
    assert _error(lambda: fn(vkml_pytree)) == _error(lambda: fn(torch_pytree))


def test_pytree_registered_node_as_torch():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __repr__(self):
            return f"Box({self.a!r}, {self.b!r})"

    out = []
    for mod in (vkml_pytree, torch_pytree):
        mod.register_pytree_node(Box, lambda b: ([b.a, b.b], "ctx"), lambda v, ctx: Box(*v))
        try:
            tree = [Box(1, (2, 3)), 4]
            again = _error(lambda m=mod: m.register_pytree_node(Box, lambda b: ([], None), lambda v, c: Box(*v)))
            out.append((repr(mod.tree_map(lambda x: x * 10, tree)), repr(mod.tree_structure(tree)), again))
        finally:
            mod._deregister_pytree_node(Box)
    assert out[0] == out[1]


def test_pytree_size_and_return_types():
    values, spec = vkml_pytree.tree_flatten(vkml.Size([2, 3]))
    t_values, t_spec = torch_pytree.tree_flatten(torch.Size([2, 3]))
    assert (values, repr(spec)) == (t_values, repr(t_spec))
    x = [[1.0, 5.0], [3.0, 2.0]]
    v_leaves, v_spec = vkml_pytree.tree_flatten(vkml.tensor(x).max(0))
    t_leaves, t_spec = torch_pytree.tree_flatten(torch.tensor(x).max(0))
    assert [leaf.tolist() for leaf in v_leaves] == [leaf.tolist() for leaf in t_leaves]
    assert repr(v_spec) == repr(t_spec)
    assert type(vkml_pytree.tree_unflatten(v_leaves, v_spec)).__name__ == "max"


def test_func_grad_over_named_tuples_and_ordered_dicts():
    # torch.func.grad gives the gradient in the argument's own pytree; the values come from torch.autograd
    # here (importing torch.func costs seconds)
    Params = collections.namedtuple("Params", "w b")

    def loss(p, batch):
        return ((batch["x"] * p.w + p.b["bias"]) ** 2).sum()

    p = Params(vkml.tensor([1.0, -2.0]), collections.OrderedDict(bias=vkml.tensor(0.5)))
    g = vkml.func.grad(loss)(p, {"x": vkml.tensor([3.0, 4.0])})
    tw, tb = torch.tensor([1.0, -2.0], requires_grad=True), torch.tensor(0.5, requires_grad=True)
    want = torch.autograd.grad(loss(Params(tw, {"bias": tb}), {"x": torch.tensor([3.0, 4.0])}), (tw, tb))
    assert type(g) is Params and type(g.b) is collections.OrderedDict
    assert (g.w.tolist(), g.b["bias"].item()) == (want[0].tolist(), want[1].item())


# ---------------------------------------------------------------------- topk's ties (docs/ops/topk.md)


def _topk_rule_cases(count: int, seed: int):
    """Rows with ties where docs/ops/topk.md says vkml's indices are PyTorch's: (x, k, largest, whole) with
    ``whole`` True where the sorted indices agree, False where only the chosen set does."""
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        n = int(rng.integers(1, 200))
        k = int(rng.integers(1, n + 1))
        largest = bool(rng.integers(0, 2))
        x = rng.integers(0, int(rng.integers(1, 3 * n + 2)), n).astype(np.float32)
        if len(cases) % 4 == 0:
            x[rng.integers(0, n, 2)] = np.nan
        key = np.where(np.isnan(x), -np.inf, -x) if largest else np.where(np.isnan(x), np.inf, x)
        order = np.lexsort((np.arange(n), key))
        boundary_tie = k < n and key[order[k]] == key[order[k - 1]]
        distinct = len(set(key[order[:k]].tolist())) == k
        whole = n <= 3 or (k == 1 and n >= 64) or (distinct and not boundary_tie)
        if whole or not boundary_tie:
            cases.append((x, k, largest, whole))
    return cases


def _check_topk_rules(cases, device):
    for x, k, largest, whole in cases:
        got = vkml.tensor(x, device=device).topk(k, largest=largest).indices.tolist()
        want = torch.from_numpy(x).topk(k, largest=largest).indices.tolist()
        assert (got == want) if whole else (set(got) == set(want)), (x.tolist(), k, largest)


def test_topk_ties_agree_where_the_page_says():
    _check_topk_rules(_topk_rule_cases(6, 0), "cpu")


def test_topk_ties_agree_where_the_page_says_on_vulkan(gpu):
    _check_topk_rules(_topk_rule_cases(2, 1), gpu)


@pytest.mark.stress
def test_topk_ties_agree_where_the_page_says_many():
    _check_topk_rules(_topk_rule_cases(300, 2), "cpu")


def test_topk_ties_named_differently_as_the_page_shows():
    # the page's two examples: PyTorch's heap and introselect orders, vkml's position order
    x = np.zeros(200, np.float32)
    x[[5, 9, 20]] = 1
    assert torch.from_numpy(x).topk(3).indices.tolist() == [20, 9, 5]
    assert vkml.tensor(x).topk(3).indices.tolist() == [5, 9, 20]
    y = np.zeros(10, np.float32)
    y[[1, 5, 9]] = 1
    assert torch.from_numpy(y).topk(1).indices.tolist() == [5]
    assert vkml.tensor(y).topk(1).indices.tolist() == [vkml.tensor(y).argmax().item()] == [1]


# ---------------------------------------------------------------------- element writes in a Python loop


def _element_loop(lib, device, writes: int):
    m = lib.zeros(8, 8, device=device)
    for i in range(writes):
        m[i % 8, (3 * i) % 8] += 0.5 * (i % 5)
    return m


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_element_add_in_a_loop_two_dispatches_a_write(device, request):
    # ``m[i, j] += x`` is an in-place add through the view m[i, j], then Python's store of that view back
    # into m[i, j]: a copy onto itself, which writes nothing now (3 dispatches a write before, 2 after)
    dev = request.getfixturevalue("gpu") if device == "vulkan" else "cpu"
    _element_loop(vkml, dev, 24).realize()
    vkml.debug.reset_counters()
    got = _element_loop(vkml, dev, 24).tolist()
    assert vkml.debug.counters()["dispatches"] <= 2 * 24
    assert got == _element_loop(torch, "cpu", 24).tolist()


def _writes_and_reads(lib, ops):
    t = lib.zeros(5, 4)
    seen = []
    for kind, i, j, x in ops:
        if kind == 0:
            t[i, j] += x
        elif kind == 1:
            t[i, j] *= x
        elif kind == 2:
            t[i] -= x
        elif kind == 3:
            row = t[i]
            row[j] += x
        elif kind == 4:
            t[i, j] = t[j % 5, i % 4]
        elif kind == 5:
            seen.append(t[i, j] * 1.0)
        else:
            seen.append(t._version)
    return [t.tolist(), [v if isinstance(v, int) else v.tolist() for v in seen]]


def test_element_writes_and_reads_as_torch():
    rng = np.random.default_rng(0)
    for _ in range(12):
        ops = [tuple(int(v) for v in rng.integers(0, (7, 5, 4, 4))) for _ in range(int(rng.integers(1, 20)))]
        assert _writes_and_reads(vkml, ops) == _writes_and_reads(torch, ops), ops


# ---------------------------------------------------------------------- a kernel's buffers stay under the cap


def _selects_of_computed_scalars(lib, device, levels: int):
    """A chain of selects, each over a scalar computed from the one before (what a loop of element writes
    whose values depend on each other builds): the walk made each scalar a kernel of its own and the select
    chain's kernel read them all, past what lavapipe binds (it crashed at submit)."""
    t = lib.zeros(32, 32, device=device)
    idx = lib.arange(1024, device=device).reshape(32, 32)
    s = lib.full((), 1.0, device=device)
    for k in range(levels):
        s = s * 0.5 + float(k % 7)
        t = lib.where(idx == (k * 37) % 1024, s, t)
    return t


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_select_chain_over_computed_scalars_binds_few_buffers(device, request):
    from vkml.schedule.scheduler import MAX_KERNEL_LOADS

    dev = request.getfixturevalue("gpu") if device == "vulkan" else "cpu"
    widths = []
    vkml.debug.kernel_listeners.append(lambda kernel: widths.append(len(kernel.buffers)))
    try:
        got = _selects_of_computed_scalars(vkml, dev, 60).tolist()
    finally:
        vkml.debug.kernel_listeners.pop()
    assert max(widths) <= MAX_KERNEL_LOADS + 1  # its reads and its output
    assert got == _selects_of_computed_scalars(torch, "cpu", 60).tolist()
