"""The host-side shortcuts of graph building give what the general code gives, and a replayed realize
stays within its bytecode ceiling (issue 20)."""

import gc
import inspect
import sys

import numpy as np
import pytest
import torch

import vkml
from vkml.errors import ShapeError
from vkml.frontend.autograd import _binder
from vkml.graph import build
from vkml.graph.view import View, contiguous_strides

pytestmark = pytest.mark.usefixtures("no_channels_last_seen_yet")  # conftest.py: counts as if first


def _f1(input, *shape): ...
def _f2(input, dim=None, keepdim=False, *, dtype=None): ...
def _f3(a, /, b, *rest, c=3, d): ...
def _f4(tensors, dim=0, **rest): ...


@pytest.mark.parametrize(
    "fn, args, kwargs",
    [
        (_f1, (1, 2, 3), {}),
        (_f1, (1,), {}),
        (_f2, (1,), {"keepdim": True}),
        (_f2, (1, 2), {"dtype": 5}),
        (_f3, (1, 2, 3, 4), {"d": 9}),
        (_f3, (1,), {"b": 2, "d": 1}),
        (_f4, ([1, 2],), {"dim": 1, "x": 2}),
    ],
)
def test_binder_binds_as_inspect(fn, args, kwargs):
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    got = _binder(inspect.signature(fn))(args, kwargs)
    assert list(got.items()) == list(bound.arguments.items())


def test_shape_caches_keep_python_ints():
    shape = (np.int64(3), np.int64(4))
    assert contiguous_strides(shape) == (4, 1)
    assert all(type(s) is int for s in contiguous_strides((3, 4)))
    assert View.contiguous([2, 5]) == View((2, 5), (5, 1))
    assert View.contiguous((2, 5)) is View.contiguous((2, 5))


@pytest.mark.parametrize("dim, keepdim", [(1, False), ((0, 2), False), (1, True), (None, False), ((), False)])
def test_reduce_nodes_as_general_path(dim, keepdim):
    x = vkml.arange(24.0).reshape(2, 3, 4)
    node = build.reduce("sum", x.node, build.reduce_dims("sum", dim, 3), keepdim)
    expected = x.numpy().sum(axis=dim if dim != () else None, keepdims=keepdim)
    assert node.shape == expected.shape
    np.testing.assert_array_equal(vkml.Tensor(node).numpy(), expected)


def test_differentiable_reshape_records_shape():
    w = vkml.ones(2, 3, requires_grad=True)
    y = vkml.reshape(w, 3, 2)
    assert y.grad_fn is not None
    (y * vkml.arange(6.0).reshape(3, 2)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(6.0, dtype=np.float32).reshape(2, 3))


@pytest.mark.parametrize("shapes", [((2, 1), (1, 3)), ((4,), (2, 1), ()), ((2, 3), (3, 2)), ()])
def test_broadcast_shapes_as_torch(shapes):
    try:
        expected = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        with pytest.raises(ShapeError, match="cannot be broadcast"):
            build.broadcast_shapes("add", *shapes)
        with pytest.raises(ShapeError, match="cannot be broadcast"):  # a second time: no cached answer
            build.broadcast_shapes("add", *shapes)
        return
    assert build.broadcast_shapes("add", *shapes) == expected
    assert build.broadcast_shapes("add", *shapes) == expected


def _bytecodes(step) -> int:
    """Python bytecodes ``step()`` executes (sys.settrace opcode events: the same on a loaded machine)."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        step()
    finally:
        sys.settrace(previous)
    return count


# Bytecodes of a replayed ``(a + b).realize()`` from the op call to the submission's return
# (docs/benchmarks.md, "Session 14: host cost": 1790 before it, 1441 after; "Session 16: host cost":
# 1,476 -> 1,440; "Session 21: recording and realize cost": 1,406): a ceiling a little above what it costs, so
# that a regression fails.
ADD_REALIZE_CEILING = 1_450


def test_replayed_realize_bytecodes_stay_under_their_ceiling(gpu):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(1 << 16).astype(np.float32) for _ in range(2)]
    a, b = (vkml.tensor(x, device=gpu) for x in args)
    last, counts = [None], []
    for _ in range(10):  # the first call plans, compiles and records; the later ones replay all of it
        gpu.synchronize()  # the wait is the device's time, not the realize's

        def step():
            last[0] = (a + b).realize()  # the previous result dies here, as in a loop

        counts.append(_bytecodes(step))
    np.testing.assert_array_equal(last[0].numpy().view(np.uint32), (args[0] + args[1]).view(np.uint32))
    assert min(counts[-4:]) > 300  # the counter sees the replay's own work (add, plan lookup, submit, wait)
    assert min(counts[-4:]) <= ADD_REALIZE_CEILING, counts


# Bytecodes of ``x.sum().item()`` of 2^12 floats, to the value (docs/benchmarks.md, "Session 16: host
# cost": 2,442 before it, 2,374 after).
SUM_ITEM_CEILING = 2_480


def test_sum_item_bytecodes_stay_under_their_ceiling(gpu):
    x_np = np.random.default_rng(0).standard_normal(1 << 12).astype(np.float32)
    x = vkml.tensor(x_np, device=gpu)
    values, counts = [], []
    for _ in range(8):  # the first call plans and compiles; the later ones replay and wait for the value
        gpu.synchronize()
        counts.append(_bytecodes(lambda: values.append(x.sum().item())))
    assert len(set(values)) == 1  # the fixed tree: the same bits every time
    np.testing.assert_allclose(values[-1], x_np.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)
    assert min(counts[-4:]) > 500
    assert min(counts[-4:]) <= SUM_ITEM_CEILING, counts


# Bytecodes of a ``vkml.jit`` replay of the demo's step (bench/bench_jit.py's: 2 -> 16 -> 16 -> 3 here,
# ReLU, dropout, cross-entropy, Adam; a dataset's windows at three offsets), a ``synchronize()`` before it
# (docs/benchmarks.md, "Session 16: host cost": 3,636 before it, 1,889 after; issue 20's proxy for 50 µs
# is 2,000). Adam's ``state["step"]`` became a 0-d tensor as PyTorch's (a HostScalar) in the same session:
# advancing the six counters and the step's new constant node take it to 2,244 (2,604 before the counters'
# inline ``+=``). Session 17 measured 2,328-2,352 in a fresh process with the eager scalars' ring (shared
# with jit) and the recording work merged.
JIT_REPLAY_CEILING = 2_400


def _demo_steps(gpu, jitted: bool) -> tuple[list, list, dict | None]:
    """The demo's step, 16 calls over a dataset's windows: the losses read every 4th call, the
    bytecodes of the last 4 calls (settrace is slow: the warm-up is not counted), the jit's stats."""
    import vkml.nn.functional as F
    from vkml import demo

    x_all, y_all = demo.make_spirals(points_per_class=demo.BATCH)
    vkml.manual_seed(0)
    model = demo.make_model(gpu, width=16)  # the replay's Python work does not depend on the width
    opt = vkml.optim.Adam(model.parameters(), lr=0.01)
    x = vkml.tensor(x_all[: 3 * demo.BATCH], device=gpu)
    y = vkml.tensor(y_all[: 3 * demo.BATCH], device=gpu)
    batches = [(x[i * demo.BATCH : (i + 1) * demo.BATCH], y[i * demo.BATCH : (i + 1) * demo.BATCH]) for i in range(3)]

    def step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = vkml.jit(step) if jitted else step
    bits, counts, last = [], [], [None]
    for i in range(16):  # warm-up (compiles, records, captures), then replays
        gpu.synchronize()
        batch = batches[i % 3]

        def call(batch=batch):
            last[0] = f(*batch)  # the loss before dies here, as in a training loop

        if i < 12:
            call()
        else:
            counts.append(_bytecodes(call))
        if i % 4 == 3:  # a loss read now and then passes the labels' checks
            bits.append(np.float32(last[0].item()).view(np.uint32))
    return bits, counts, (f.stats if jitted else None)


def test_jit_replay_bytecodes_stay_under_their_ceiling(gpu):
    plain, _, _ = _demo_steps(gpu, jitted=False)
    captured, counts, stats = _demo_steps(gpu, jitted=True)
    assert captured == plain  # the replays' losses have the uncaptured steps' bits
    assert stats["replays"] >= 8
    assert min(counts) > 500  # the counter sees the replay's own work
    assert min(counts) <= JIT_REPLAY_CEILING, counts


# Bytecodes of one Adam step (``opt.step()``: the update's nodes, its realize and the bookkeeping) of the demo's
# model (2 -> 64 -> 64 -> 3, six parameters), its gradients computed before (docs/benchmarks.md, "Session 17:
# optimizer steps": 60,858 before it, 35,122 after; session 20: 20,239 before Adam's group loop, 18,200 after): a
# ceiling with room for the allocator's and the memos' state inside the whole suite's worker, far below the
# operators' path. Session 21: 17,395, the group's ops and step numbers made once per group.
ADAM_STEP_CEILING = 21_000


def test_adam_step_bytecodes_stay_under_their_ceiling(gpu):
    import vkml.nn.functional as F
    from vkml import demo

    x_all, y_all = demo.make_spirals(points_per_class=demo.BATCH)
    model = demo.make_model(gpu)
    opt = vkml.optim.Adam(model.parameters(), lr=0.01)
    x, y = vkml.tensor(x_all[: demo.BATCH], device=gpu), vkml.tensor(y_all[: demo.BATCH], device=gpu)
    counts, losses = [], []
    for i in range(8):  # the first steps compile and plan; the later ones build nodes and replay plans
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        gpu.synchronize()  # the wait is the device's time, not the step's
        if i < 5:  # settrace is slow: the warm-up is not counted
            opt.step()
        else:
            counts.append(_bytecodes(opt.step))
        losses.append(loss.item())
    assert losses[-1] < losses[0]  # the steps descend
    assert min(counts[-3:]) > 3_000  # the counter sees the step's own work
    assert min(counts[-3:]) <= ADAM_STEP_CEILING, counts


# Bytecodes of one eager training step of a small MLP (Linear, ReLU, Linear, cross_entropy, backward,
# Adam; the loss not read) on realized inputs (docs/benchmarks.md, "Session 15: host cost": 127,599 before
# it, 115,109 after; session 17: 116,884 before it, 78,080 after the eager scalars' rings, the recording
# work and the fused optimizer steps together, 77,365 after other tests in one worker; an earlier tree
# counted ~16,000 more there; session 18: 78,130 before it, 76,211 after the plans' buffer placement and the
# matmul tiles' policy check; session 19: 76,211 before it, 65,210 after linear recorded as one op; session 20:
# 59,432 after cross_entropy recorded as one op, 58,108 after the optimizers' group loop, 52,577 after
# cross_entropy's nodes built directly, 50,717 after linear's bias gradient built directly; session 21: 48,669
# after the lighter node constructor and Adam's shared step numbers): a ceiling above what it costs, so that a
# regression in graph building, autograd, the update or the reuse of the realizes' recordings fails.
MLP_STEP_CEILING = 50_200


def test_eager_training_step_bytecodes_stay_under_their_ceiling(gpu):
    import vkml.nn.functional as F

    rng = np.random.default_rng(0)
    x_np, y_np = rng.standard_normal((32, 8)).astype(np.float32), rng.integers(0, 3, 32)
    model = vkml.nn.Sequential(vkml.nn.Linear(8, 16), vkml.nn.ReLU(), vkml.nn.Linear(16, 3)).to(gpu)
    peer = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p, q in zip(model.parameters(), peer.parameters()):
            q.copy_(torch.from_numpy(p.numpy()))
    opt = vkml.optim.Adam(model.parameters(), lr=0.01)
    peer_opt = torch.optim.Adam(peer.parameters(), lr=0.01)
    x, y = vkml.tensor(x_np, device=gpu), vkml.tensor(y_np, device=gpu)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    counts = []
    # The first steps compile and plan; the later ones build and replay plans, and from the first few
    # replays on, Adam's bias corrections come from a ring buffer and each realize submits its recording
    # again. Only the last three are counted (tracing a step that compiles takes seconds).
    for i in range(14):
        gpu.synchronize()  # the wait is the device's time, not the step's
        if i < 11:
            step()
        else:
            counts.append(_bytecodes(step))
        peer_loss = torch.nn.functional.cross_entropy(peer(torch.from_numpy(x_np)), torch.from_numpy(y_np))
        peer_opt.zero_grad()
        peer_loss.backward()
        peer_opt.step()
    for p, q in zip(model.parameters(), peer.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert min(counts) > 20_000  # the counter sees the step's own work
    assert min(counts) <= MLP_STEP_CEILING, counts


# Bytecodes of recording one differentiable op, not realized: ``a + b`` of realized (60, 64) tensors where
# ``a`` requires grad, its context (the backward node) included (docs/benchmarks.md, "Session 17: recording
# cost": 788 before it, 644 after; session 21: 595).
RECORDED_ADD_CEILING = 620


def test_recorded_add_bytecodes_stay_under_their_ceiling(gpu):
    rng = np.random.default_rng(0)
    a_np, b_np, w_np = (rng.standard_normal((60, 64)).astype(np.float32) for _ in range(3))
    a = vkml.tensor(a_np, device=gpu, requires_grad=True).realize()
    b = vkml.tensor(b_np, device=gpu).realize()
    out = []
    counts = [_bytecodes(lambda: out.append(a + b)) for _ in range(4)]
    ta = torch.tensor(a_np, requires_grad=True)
    expected = ta + torch.from_numpy(b_np)
    got = out[-1]
    assert got.grad_fn.name() == expected.grad_fn.name()  # AddBackward0: the context was recorded
    (got * vkml.tensor(w_np, device=gpu)).sum().backward()
    (expected * torch.from_numpy(w_np)).sum().backward()
    np.testing.assert_array_equal(got.numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    assert min(counts[-2:]) > 100  # the counter sees the op's own work
    assert min(counts[-2:]) <= RECORDED_ADD_CEILING, counts


# Bytecodes of recording one elementwise op outside autograd, not realized, on realized (60, 64) float32
# tensors (docs/benchmarks.md, "Session 21: recording and realize cost": bench/node_cost.py's (a) counted
# a + b 332, x * 2.0 579, x.exp() 211, relu 220 before it, 268, 519, 199, 208 after; this test's lambda adds
# ~9): a ceiling a little above, so that a regression in the op's path fails.
RECORDED_OP_CEILINGS = {"a + b": 290, "x * 2.0": 545, "x.exp()": 220, "relu": 230}


@pytest.mark.parametrize("case", sorted(RECORDED_OP_CEILINGS))
def test_recorded_op_bytecodes_stay_under_their_ceiling(gpu, case):
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((60, 64)).astype(np.float32) for _ in range(2))
    a, b = (vkml.tensor(x, device=gpu).realize() for x in (a_np, b_np))
    ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
    made = {
        "a + b": (lambda: a + b, lambda: ta + tb),
        "x * 2.0": (lambda: a * 2.0, lambda: ta * 2.0),
        "x.exp()": (lambda: a.exp(), lambda: ta.exp()),
        "relu": (lambda: vkml.nn.functional.relu(a), lambda: torch.nn.functional.relu(ta)),
    }
    build, peer = made[case]
    out = []
    counts = [_bytecodes(lambda: out.append(build())) for _ in range(5)]
    assert out[-1].node.op == "elementwise"  # recorded, not run
    np.testing.assert_allclose(out[-1].numpy(), peer().numpy(), rtol=2e-7, atol=0)
    assert min(counts[-2:]) > 100  # the counter sees the op's own work
    assert min(counts[-2:]) <= RECORDED_OP_CEILINGS[case], counts


# Bytecodes of ``w.t()`` of a realized weight, the transpose linear takes in its forward and backward
# (1,431 before session 15, 950 after; 687 in session 21).
TRANSPOSE_CEILING = 720


def test_transpose_of_a_buffer_bytecodes_stay_under_their_ceiling(gpu):
    w_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = vkml.tensor(w_np, device=gpu).realize()
    out = []
    counts = [_bytecodes(lambda: out.append(w.t())) for _ in range(4)]
    np.testing.assert_array_equal(out[-1].numpy(), w_np.T)
    assert min(counts[-2:]) > 100
    assert min(counts[-2:]) <= TRANSPOSE_CEILING, counts


# Bytecodes of a basic index of a realized tensor outside autograd (a batch's rows, a time step's
# column): x[3:40] 1,340 and x[5] 2,169 before session 16, 954 and 1,077 after on the CPU (the slice and the
# reshape that drops x[5]'s dim are one view, without the recording wrapper's argument scan).
INDEX_CEILING = 1_300


@pytest.mark.parametrize("index", [(slice(3, 40),), (5,), (slice(None), 1), (Ellipsis, None, slice(1, None, 2))])
def test_basic_index_of_a_buffer_bytecodes_stay_under_their_ceiling(gpu, index):
    x_np = np.arange(256 * 64, dtype=np.float32).reshape(256, 64)
    x = vkml.tensor(x_np, device=gpu).realize()
    out = []
    counts = [_bytecodes(lambda: out.append(x[index])) for _ in range(4)]
    got = out[-1]
    np.testing.assert_array_equal(got.numpy(), x_np[index])
    assert got.stride() == torch.from_numpy(x_np)[index].stride()
    assert min(counts[-2:]) > 100
    assert min(counts[-2:]) <= INDEX_CEILING, counts


def test_basic_index_views_write_through_and_differentiate_as_torch():
    """The unrecorded one-view path (no grad) and the recorded one (grad) give PyTorch's values, a
    write through the result reaches the base, and the gradient lands at the indexed rows."""
    x_np = np.arange(24, dtype=np.float32).reshape(4, 6)
    x, tx = vkml.tensor(x_np.copy()), torch.tensor(x_np.copy())
    row, trow = x[2], tx[2]
    row.mul_(10)
    trow.mul_(10)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    w, tw = vkml.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    (w[1] * w[:, 3][:, None]).sum().backward()
    (tw[1] * tw[:, 3][:, None]).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


# Bytecodes of the demo's step (vkml/demo.py's ``train_step``: 2 -> 16 -> 16 -> 3 here, ReLU, dropout,
# cross-entropy, Adam, ``loss.item()``) with a new batch uploaded every step, as a data loader gives
# (docs/benchmarks.md, "Session 18: new batches replay": 169,322 before it, the forward and the gradients
# recorded anew every step; 107,392 after, 3 of 3 recordings reused; session 19, "Session 19: early ring
# variants and the small step": 89,721 after linear recorded as one op; session 20: 83,785 after
# cross_entropy recorded as one op, 81,746 after the optimizers' group loop, 76,235 after cross_entropy's
# nodes built directly, 73,445 after linear's bias gradient built directly, 71,686 after dropout recorded as
# one op; session 21: 69,627 after the lighter node constructor and Adam's shared step numbers).
NEW_BATCH_STEP_CEILING = 71_600


def test_a_step_with_a_new_batch_replays_its_recordings_under_its_ceiling(gpu, monkeypatch):
    from vkml import debug, demo

    x_all, y_all = demo.make_spirals(points_per_class=demo.BATCH)

    def run(device, counted: bool):
        model = demo.make_model(device, width=16)  # seeds vkml: the same weights and masks on every device
        opt = vkml.optim.Adam(model.parameters(), lr=0.01)
        losses, counts, reused = [], [], []
        for i in range(12):
            rows = slice((i % 3) * demo.BATCH, (i % 3 + 1) * demo.BATCH)
            x, y = vkml.tensor(x_all[rows], device=device), vkml.tensor(y_all[rows], device=device)
            device.synchronize()  # the wait is the device's time, not the step's
            before = debug.counters()["recordings_reused"]
            if counted and i >= 9:  # settrace is slow: the warm-up is not counted
                counts.append(_bytecodes(lambda x=x, y=y: losses.append(demo.train_step(model, opt, x, y))))
            else:
                losses.append(demo.train_step(model, opt, x, y))
            reused.append(debug.counters()["recordings_reused"] - before)
        return losses, counts, reused

    losses, counts, reused = run(gpu, counted=True)
    monkeypatch.setenv("VKML_EAGER_SCALARS", "0")  # parameters as push constants: every step records anew
    reference, _, _ = run(gpu, counted=False)
    assert np.array(losses, np.float32).tobytes() == np.array(reference, np.float32).tobytes()  # the same bits
    assert reused[-3:] == [3, 3, 3], reused  # forward, gradients and update: each an earlier recording
    assert min(counts) > 20_000
    assert min(counts) <= NEW_BATCH_STEP_CEILING, counts


# Bytecodes of one replayed realize of a single-kernel row, its ops built before it (docs/benchmarks.md,
# "Session 19: fixed cost per realize": softmax 1,967 and sdpa 2,326 before it on lavapipe (sdpa's dispatch
# made and fingerprinted every call), after: the counts below less ~3%; session 21: a + b of 2^16 floats
# 1,102, softmax 1,942, sdpa 1,482, realize() no longer autocast's wrapper).
SINGLE_KERNEL_REALIZE_CEILINGS = {"add": 1_140, "softmax": 1_990, "sdpa": 1_520}


def _single_kernel_row(gpu, row: str):
    """(a builder of the row's lazy output, the PyTorch result) for ``row`` on realized inputs."""
    rng = np.random.default_rng(0)
    if row == "add":
        a_np, b_np = (rng.standard_normal(1 << 16).astype(np.float32) for _ in range(2))
        a, b = (vkml.tensor(x, device=gpu).realize() for x in (a_np, b_np))
        return (lambda: a + b), torch.from_numpy(a_np) + torch.from_numpy(b_np)
    if row == "softmax":
        s_np = rng.standard_normal((64, 256)).astype(np.float32)
        s = vkml.tensor(s_np, device=gpu).realize()
        return (lambda: s.softmax(-1)), torch.from_numpy(s_np).softmax(-1)
    qkv_np = [rng.standard_normal((2, 2, 32, 16)).astype(np.float32) for _ in range(3)]
    q, k, v = (vkml.tensor(a, device=gpu).realize() for a in qkv_np)
    expected = torch.nn.functional.scaled_dot_product_attention(*map(torch.from_numpy, qkv_np), is_causal=True)
    return (lambda: vkml.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)), expected


@pytest.mark.parametrize("row", ["add", "softmax", "sdpa"])
def test_single_kernel_realize_bytecodes_stay_under_their_ceiling(gpu, row):
    from vkml import debug

    build, expected = _single_kernel_row(gpu, row)
    counts, reused, last = [], [], [None]
    for i in range(8):  # the first call plans, compiles and records; the later ones replay the recording
        gpu.synchronize()  # the wait is the device's time, not the realize's
        out = build()
        before = debug.counters()["recordings_reused"]
        if i < 5:  # settrace is slow: the warm-up is not counted
            out.realize()
        else:
            counts.append(_bytecodes(out.realize))
        reused.append(debug.counters()["recordings_reused"] - before)
        last[0] = out
    np.testing.assert_allclose(last[0].numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    assert reused[-3:] == [1, 1, 1], reused  # each realize submits its earlier recording again
    assert min(counts) > 300  # the counter sees the realize's own work
    assert min(counts) <= SINGLE_KERNEL_REALIZE_CEILINGS[row], counts


class _AttentionBlock(vkml.nn.Module):
    """Layer norm, a qkv projection, causal attention over 2 heads and an output projection (a transformer
    block's attention half, as bench/profile_host.py's block)."""

    def __init__(self, nn, width: int = 16):
        super().__init__() if nn is vkml.nn else nn.Module.__init__(self)
        self.norm, self.qkv, self.proj = nn.LayerNorm(width), nn.Linear(width, 3 * width), nn.Linear(width, width)

    @staticmethod
    def attend(module, functional, x):
        batch, tokens, width = x.shape
        q, k, v = module.qkv(module.norm(x)).split(width, dim=-1)
        q, k, v = (t.reshape(batch, tokens, 2, width // 2).transpose(1, 2) for t in (q, k, v))
        attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + module.proj(attended.transpose(1, 2).reshape(batch, tokens, width))

    def forward(self, x):
        return self.attend(self, vkml.nn.functional, x)


def test_attention_training_steps_reuse_their_recordings(gpu):
    """An eager SGD step of an attention block (forward, gradients, update) submits its three earlier
    recordings again: attention's realizes replay their plans, and its saved output and log-sum-exp die with
    the step (a Function's saved output no longer waits for the garbage collector). The transformer block of
    bench/profile_host.py (block_train_step, AdamW) reuses 3 of 3 so (docs/benchmarks.md, session 19)."""
    from vkml import debug

    x_np = np.random.default_rng(0).standard_normal((2, 8, 16)).astype(np.float32)
    vkml.manual_seed(0)
    model = _AttentionBlock(vkml.nn).to(gpu)
    peer = torch.nn.Module()
    peer.norm, peer.qkv, peer.proj = torch.nn.LayerNorm(16), torch.nn.Linear(16, 48), torch.nn.Linear(16, 16)
    with torch.no_grad():
        for (name, p), (peer_name, q) in zip(model.named_parameters(), peer.named_parameters()):
            assert name == peer_name
            q.copy_(torch.from_numpy(p.numpy()))
    opt = vkml.optim.SGD(model.parameters(), lr=0.1)
    x, tx = vkml.tensor(x_np, device=gpu), torch.from_numpy(x_np)
    reused, losses, peer_losses = [], [], []
    # In a process that ran other tests first, the pool's spare blocks move where the first steps' results
    # land: reuse then starts at the fifth step, not the third (measured in a pytest worker); 8 steps.
    gc.collect()
    for _ in range(8):
        before = debug.counters()["recordings_reused"]
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        reused.append(debug.counters()["recordings_reused"] - before)
        peer.zero_grad()
        peer_loss = _AttentionBlock.attend(peer, torch.nn.functional, tx).square().mean()
        peer_loss.backward()
        with torch.no_grad():  # torch.optim.SGD's step, without importing torch's compiler (seconds)
            for q in peer.parameters():
                q -= 0.1 * q.grad
        peer_losses.append(peer_loss.item())
    np.testing.assert_allclose(losses, peer_losses, rtol=1e-5)
    for p, q in zip(model.parameters(), peer.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)
    assert reused[-3:] == [3, 3, 3], reused  # forward, gradients and update: each an earlier recording


def test_a_functions_saved_output_is_freed_by_backward_as_torch():
    """backward() frees a custom Function's saved tensors (its output among them) as PyTorch does: the output
    then dies with its handle, without the garbage collector, and ``saved_tensors`` raises PyTorch's error."""
    import gc
    import weakref

    def exp_function(autograd):
        class Exp(autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

        return Exp

    x_np = np.linspace(-1, 1, 6, dtype=np.float32)
    x, tx = vkml.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y, ty = exp_function(vkml.autograd).apply(x), exp_function(torch.autograd).apply(tx)
    y.sum().backward(retain_graph=True)  # kept: a second backward may read them
    ty.sum().backward(retain_graph=True)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time") as theirs:
        ty.grad_fn.saved_tensors  # noqa: B018
    with pytest.raises(RuntimeError, match="backward through the graph a second time") as ours:
        y._ctx.rule.ctx.saved_tensors  # noqa: B018
    assert str(ours.value) == str(theirs.value)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        output = weakref.ref(y)
        del y
        assert output() is None  # no cycle left through the Function's context
    finally:
        if was_enabled:
            gc.enable()
