"""vkml.jit: capture a training step once, replay it in one submission with the uncaptured step's bits."""

import operator

import numpy as np
import pytest

import vkml
import vkml.nn as nn
import vkml.nn.functional as F
from vkml import debug, demo


@pytest.fixture(params=["cpu", "gpu"])
def dev(request):
    return vkml.device("cpu") if request.param == "cpu" else request.getfixturevalue("gpu")


def _setup(dev, optimizer: str, dropout: bool, width: int = 8):
    vkml.manual_seed(0)
    layers = [nn.Linear(2, width), nn.ReLU()] + ([nn.Dropout(0.25)] if dropout else []) + [nn.Linear(width, 3)]
    model = nn.Sequential(*layers).to(dev)
    if optimizer == "adam":
        opt = vkml.optim.Adam(model.parameters(), lr=0.01)
    else:
        opt = vkml.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, opt


def _batches(dev, n: int, rows: int = 12):
    g = np.random.default_rng(1)
    xs = [vkml.tensor(g.standard_normal((rows, 2)).astype(np.float32), device=dev) for _ in range(n)]
    ys = [vkml.tensor(g.integers(0, 3, rows), device=dev) for _ in range(n)]
    return xs, ys


def _train(dev, optimizer, dropout, jitted, steps=5):
    model, opt = _setup(dev, optimizer, dropout)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = vkml.jit(step) if jitted else step
    xs, ys = _batches(dev, 3)
    losses, submissions = [], []
    for i in range(steps):
        before = debug.counters()["submissions"]
        losses.append(f(xs[i % 3], ys[i % 3]))
        submissions.append(debug.counters()["submissions"] - before)
    bits = [np.float32(t.item()).view(np.uint32) for t in losses]
    state = [p.numpy().view(np.uint32).copy() for p in model.parameters()]
    state += [v.numpy().view(np.uint32).copy() for s in opt.state.values() for v in s.values() if hasattr(v, "node")]
    grads = [p.grad.numpy().view(np.uint32).copy() for p in model.parameters()]
    return bits, state, grads, submissions, (f.stats if jitted else None)


@pytest.mark.parametrize("optimizer, dropout", [("sgd", False), ("adam", True)])
def test_replayed_steps_have_the_bits_of_uncaptured_steps_in_one_submission(dev, optimizer, dropout):
    plain = _train(dev, optimizer, dropout, jitted=False)
    captured = _train(dev, optimizer, dropout, jitted=True)
    assert captured[0] == plain[0]  # every step's loss
    assert all(np.array_equal(a, b) for a, b in zip(captured[1], plain[1], strict=True))  # parameters, moments
    assert all(np.array_equal(a, b) for a, b in zip(captured[2], plain[2], strict=True))  # gradients
    stats = captured[4]
    assert stats["replays"] >= 2 and stats["captures"] == 1
    replayed = captured[3][-stats["replays"] :]
    assert replayed == [1] * len(replayed)  # one submission per replayed step
    assert max(plain[3]) > 1


def test_the_demo_step_replays_in_one_submission_with_the_same_losses(gpu):
    data = demo.make_spirals()
    runs = []
    for jitted in (False, True):
        model = demo.make_model(gpu, width=16)
        opt = vkml.optim.Adam(model.parameters(), lr=0.01)
        x = vkml.tensor(data[0][: demo.BATCH * 3], device=gpu)
        y = vkml.tensor(data[1][: demo.BATCH * 3], device=gpu)

        def step(xb, yb, model=model, opt=opt):  # demo.train_step without its .item()
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        f = vkml.jit(step) if jitted else step
        losses, counts = [], []
        for i in range(10):  # a batch at any offset, 0 included, is one window structure: one recording
            batch = slice((i % 3) * demo.BATCH, (i % 3 + 1) * demo.BATCH)
            before = debug.counters()["submissions"]
            losses.append(f(x[batch], y[batch]))
            counts.append(debug.counters()["submissions"] - before)
        runs.append(([np.float32(t.item()).view(np.uint32) for t in losses], counts, f))
    assert runs[1][0] == runs[0][0]
    stats = runs[1][2].stats
    assert stats["captures"] == 1 and stats["replays"] == 7
    assert runs[1][1][-3:] == [1, 1, 1]  # one submission per replayed step


def test_a_shape_change_records_again_and_keeps_both_recordings():
    dev = vkml.device("cpu")
    w = vkml.ones(3, requires_grad=True)
    opt = vkml.optim.SGD([w], lr=0.5)

    @vkml.jit
    def step(x):
        loss = (x * w).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    small, large = vkml.ones(2, 3, device=dev), vkml.ones(4, 3, device=dev)
    for _ in range(3):
        step(small)
    assert step.stats["captures"] == 1
    for _ in range(3):
        step(large)
    assert step.stats["captures"] == 2
    replays = step.stats["replays"]
    step(small)
    assert step.stats["replays"] == replays + 1  # the first recording still fits
    # every step subtracted 0.5 * rows from each weight: 2, 2, 2, 4, 4, 4, 2 rows
    assert w.tolist() == [1 - 0.5 * 20] * 3


def test_max_captures_bounds_recording_anew():
    @vkml.jit(max_captures=1)
    def double(x):
        return x * 2

    for _ in range(2):
        double(vkml.ones(2))
    assert double(vkml.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(vkml.JitError, match="max_captures"):
        double(vkml.ones(3))


def test_reading_a_value_inside_a_capture_raises_a_clear_error():
    @vkml.jit
    def f(x):
        y = x * 2
        if y.sum().item() > 0:  # control flow on a value: the replay could not follow it
            return y
        return -y

    with pytest.raises(vkml.JitError, match=r"reading a tensor's values \(\.item\(\)"):
        f(vkml.ones(3))
    assert f.__wrapped__(vkml.ones(3)).tolist() == [2.0, 2.0, 2.0]  # nothing left half-recorded
    assert (vkml.ones(2) + 1).tolist() == [2.0, 2.0]


def test_a_changing_python_number_raises():
    scale = [1.0]

    @vkml.jit
    def f(x):
        scale[0] += 1
        return x * scale[0]

    f(vkml.ones(2))
    with pytest.raises(vkml.JitError, match="changed between calls"):
        f(vkml.ones(2))


def test_replays_take_new_inputs_and_never_overwrite_a_kept_result():
    @vkml.jit
    def f(x, y):
        return x * y + 1

    a, b = vkml.tensor([1.0, 2.0]), vkml.tensor([3.0, 4.0])
    kept = [f(a, b) for _ in range(5)]
    assert f.stats["replays"] == 3
    assert all(k.tolist() == [4.0, 9.0] for k in kept)
    assert f(b, b).tolist() == [10.0, 17.0]
    assert f(vkml.tensor([0.5, 0.0]), a).tolist() == [1.5, 1.0]
    assert all(k.tolist() == [4.0, 9.0] for k in kept)


def test_a_parameter_changed_between_calls_is_read_as_it_is_now():
    w = vkml.ones(2, requires_grad=True)
    opt = vkml.optim.SGD([w], lr=1.0)

    @vkml.jit
    def step(x):
        opt.zero_grad()
        (x * w).sum().backward()
        opt.step()

    for _ in range(3):
        step(vkml.ones(2))
    with vkml.no_grad():
        w.copy_(vkml.tensor([10.0, 20.0]))
    step(vkml.ones(2))
    assert step.stats["replays"] >= 2
    assert w.tolist() == [9.0, 19.0]


def test_capture_context_records_a_block_and_replays_it():
    w = nn.Parameter(vkml.zeros(3))
    opt = vkml.optim.SGD([w], lr=0.1)
    g = vkml.jit.capture(state=(w, opt))
    xs = [vkml.tensor([1.0, 2.0, 3.0]) * k for k in range(1, 6)]
    for x in xs:
        if g.ready:
            (loss,) = g.replay(x)
        else:
            with g.record(x):
                loss = ((x - w) ** 2).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                g.returns(loss)
    assert g.stats["replays"] == 3
    expected = np.zeros(3, np.float32)
    for x in xs:
        expected = expected - np.float32(0.1) * (np.float32(-2) * (x.numpy() - expected))
    np.testing.assert_array_equal(w.numpy(), expected)
    with pytest.raises(vkml.JitError, match="no recording fits"):
        g.replay(vkml.ones(4))


def test_a_replay_with_constant_parameters_submits_an_earlier_recording_again(gpu):
    model, opt = _setup(gpu, "sgd", dropout=False)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, ys = _batches(gpu, 2)
    for i in range(6):
        step(xs[i % 2], ys[i % 2]).item()  # reading the loss passes cross_entropy's check of the labels
    debug.reset_counters()
    for i in range(4):
        step(xs[i % 2], ys[i % 2]).item()
    counts = debug.counters()
    # the two halves of the ping-pong are two recordings, each submitted again
    assert counts["submissions"] == 4 and counts["recordings_reused"] == 4 and counts["plans"] == 0


def test_replays_of_an_adam_and_dropout_step_submit_one_recording_again(gpu):
    # Adam's bias corrections and dropout's key change every step: read from a buffer, they leave
    # the command buffer as it was; the unread losses' label checks are read once their run is
    # done, so no replay takes new buffers (new bindings) either.
    model, opt = _setup(gpu, "adam", dropout=True)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, ys = _batches(gpu, 1)
    for _ in range(4):
        step(xs[0], ys[0])
    debug.reset_counters()
    fresh = step.stats["fresh_buffers"]
    for _ in range(6):
        gpu.synchronize()
        loss = step(xs[0], ys[0])
    loss.item()
    counts = debug.counters()
    assert counts["submissions"] == 6 and counts["recordings_reused"] >= 4
    assert step.stats["fresh_buffers"] == fresh


def test_a_replayed_step_still_refuses_labels_out_of_range_when_its_loss_is_read(dev):
    model, opt = _setup(dev, "sgd", dropout=False)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, ys = _batches(dev, 1)
    for _ in range(4):
        step(xs[0], ys[0]).item()
    replays = step.stats["replays"]
    bad = vkml.tensor([0, 1, 7] + [0] * 9, device=dev)
    loss = step(xs[0], bad)
    for _ in range(2):  # later replays find the check's run done and read it (Vulkan), keeping the refusal
        dev.synchronize()
        step(xs[0], ys[0])
    assert step.stats["replays"] == replays + 3
    with pytest.raises(IndexError, match="out of bounds"):
        loss.item()


def _checks_open(step) -> int:
    return sum(len(p.made_checks) for p in step._captured.programs)


def test_a_check_that_passed_for_the_same_argument_nodes_is_not_made_again(dev):
    # The labels' check follows from the arguments alone: once it passed for the very argument
    # nodes, replays with them make none; a write into the labels makes new nodes, checked again.
    model, opt = _setup(dev, "sgd", dropout=False)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, _ = _batches(dev, 2)
    dataset = vkml.tensor(np.tile([0, 1, 2], 8), device=dev)
    ys = [dataset[:12], dataset[12:]]  # windows of a dataset tensor, as a loaded set's batches
    for i in range(6):
        step(xs[i % 2], ys[i % 2]).item()
    assert step.stats["replays"] >= 3
    step(xs[0], ys[0])
    step(xs[1], ys[1])
    assert _checks_open(step) == 0  # both passed before: no check made
    replays = step.stats["replays"]
    dataset[14] = 5  # in place: the window's node is a new one
    dataset.realize()  # the window is one of a buffer again: the same signature, replayed
    loss = step(xs[1], ys[1])
    assert step.stats["replays"] == replays + 1 and _checks_open(step) > 0
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        loss.item()


def test_a_labels_argument_written_in_place_is_checked_again(gpu):
    dev = gpu  # the CPU device's way through the checks: the test above
    model, opt = _setup(dev, "sgd", dropout=False)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, ys = _batches(dev, 1)
    for _ in range(5):
        step(xs[0], ys[0]).item()
    step(xs[0], ys[0])
    assert step.stats["replays"] >= 3 and _checks_open(step) == 0
    ys[0][3] = 7
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        step(xs[0], ys[0]).item()


def test_a_check_of_state_is_made_at_every_replay(dev):
    # Labels the function reads from state (not an argument) may change between replays: their
    # check is made and read every time, passed before or not.
    model, opt = _setup(dev, "sgd", dropout=False)
    xs, ys = _batches(dev, 1)
    labels = {"y": ys[0]}

    @vkml.jit
    def step(x):
        loss = F.cross_entropy(model(x), labels["y"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step(xs[0]).item()
    assert step.stats["replays"] >= 2
    step(xs[0])
    assert _checks_open(step) > 0
    labels["y"].copy_(vkml.tensor([0, 1, 6] + [0] * 9, device=dev))
    with pytest.raises(IndexError, match="Target 6 is out of bounds"):
        step(xs[0]).item()


def test_state_the_function_cannot_reach_is_refused_with_a_hint():
    w = vkml.ones(2, requires_grad=True)
    holder = {"opt": vkml.optim.SGD([w], lr=1.0)}

    calls = []

    def step(x, opt):  # the parameter is reached through nothing the jit can see
        calls.append(1)
        opt.zero_grad()
        (x * w).sum().backward()
        opt.step()

    g = vkml.jit.capture()
    with pytest.raises(vkml.JitError, match="state="):
        for _ in range(3):
            with g.record(vkml.ones(2)):
                step(vkml.ones(2), holder["opt"])
    kept = vkml.jit.capture(state=holder["opt"])
    for _ in range(2):
        with kept.record(vkml.ones(2)):
            step(vkml.ones(2), holder["opt"])
    assert kept.ready
    kept.replay(vkml.ones(2))
    assert w.tolist() == [1.0 - len(calls) - 1] * 2  # every call ran, then one replay: each subtracts x


def test_a_window_of_a_parameter_is_read_from_the_parameter_as_it_is_now(dev):
    def run(jitted):
        w = vkml.ones(8, requires_grad=True, device=dev)
        opt = vkml.optim.SGD([w], lr=1.0)

        def step(x):
            opt.zero_grad()
            loss = (x * w).sum() + (w[4:] * 2).sum()  # w[4:] of a realized w: a window of its buffer
            loss.backward()
            opt.step()
            return loss

        f = vkml.jit(step) if jitted else step
        losses = [f(vkml.ones(8, device=dev)).item() for _ in range(5)]
        return losses, w.tolist(), (f.stats if jitted else None)

    plain, captured = run(False), run(True)
    assert captured[:2] == plain[:2]
    assert captured[2]["replays"] == 3


def test_a_window_argument_composed_with_a_broadcast_replays_at_each_offset(dev):
    # The work broadcasts the argument's window: its kernel reads a view composed over the
    # window's alias, whose offset follows the argument's (cross_entropy's labels do this).
    data = vkml.arange(40, dtype=vkml.float32, device=dev) * 0.25
    results = []
    for jitted in (False, True):
        w = vkml.ones(5, 3, device=dev, requires_grad=True)
        opt = vkml.optim.SGD([w], lr=0.1)

        def step(xb, w=w, opt=opt):
            loss = (xb[:, None].expand(5, 3) * w).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        f = vkml.jit(step) if jitted else step
        out = [f(data[i * 5 : i * 5 + 5]) for i in range(7)]
        results.append([np.float32(t.item()).view(np.uint32) for t in out] + [w.detach().numpy().tobytes()])
    assert results[0] == results[1]
    assert f.stats["replays"] >= 4


# ---------------------------------------------------------------------- learning-rate schedulers


def _scheduled(dev, jitted: bool, two_groups: bool, optimizer: str = "adam", steps: int = 9):
    vkml.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 3)).to(dev)
    params = [{"params": m.parameters()} for m in (model[0], model[2])] if two_groups else model.parameters()
    cls = vkml.optim.Adam if optimizer == "adam" else vkml.optim.SGD
    opt = cls(params, lr=0.01)
    # Two groups keep equal learning rates while the step is captured (equal scalars: nothing told
    # them apart), then part: the replay must not use one group's scalars for the other's.
    factors = [lambda e: 0.9**e, lambda e: 0.9**e if e < 4 else 0.5 * 0.9**e]
    sched = vkml.optim.lr_scheduler.LambdaLR(opt, factors if two_groups else factors[0])

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = vkml.jit(step) if jitted else step
    xs, ys = _batches(dev, 1)
    losses = []
    for _ in range(steps):
        losses.append(np.float32(f(xs[0], ys[0]).item()).view(np.uint32))
        sched.step()
    losses += [p.detach().numpy().view(np.uint32).tobytes() for p in model.parameters()]
    return losses, (f.stats if jitted else None)


@pytest.mark.parametrize("two_groups", [False, True])
def test_adam_under_a_learning_rate_scheduler_replays_with_the_uncaptured_bits(dev, two_groups):
    # Adam's lr reaches the work only through its per-step scalars, recomputed by each replay:
    # a scheduler's new lr every step is not a new recording.
    plain, _ = _scheduled(dev, False, two_groups)
    captured, stats = _scheduled(dev, True, two_groups)
    assert captured == plain
    assert stats["replays"] >= 3 and stats["captures"] == 1 + two_groups  # the groups' parting records anew


def test_the_fast_guard_fits_only_where_the_full_guard_holds():
    # _FastGuard.fits reads the settings in C; wherever the guard a recording holds differs from the
    # guard now (a setting, a group's parting lr, a module's mode, grad mode, a new group), it must not fit.
    vkml.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 3))
    opt = vkml.optim.Adam([{"params": model[0].parameters()}, {"params": model[2].parameters()}], lr=0.01)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, ys = _batches(vkml.device("cpu"), 1)
    for _ in range(3):
        step(xs[0], ys[0])
    (program,) = step._captured.programs
    guard = program.fast_guard

    def same() -> bool:
        return program.roots.guard() == program.guard

    def lr(value, group=None):
        for g in opt.param_groups if group is None else [opt.param_groups[group]]:
            g["lr"] = value

    def betas(value):
        opt.param_groups[1]["betas"] = value

    def grad_mode(value):
        vkml.set_grad_enabled(value)

    extra = nn.Parameter(vkml.ones(2))
    changes = [
        (lambda: lr(0.02), lambda: lr(0.01), True),  # a covered setting, both groups alike
        (lambda: lr(0.02, group=1), lambda: lr(0.01, group=1), False),  # the groups part
        (lambda: lr(np.float64(0.01), group=1), lambda: lr(0.01, group=1), False),  # not covered: a constant
        (lambda: betas((0.8, 0.999)), lambda: betas((0.9, 0.999)), False),
        (lambda: model.eval(), lambda: model.train(), False),
        (lambda: grad_mode(False), lambda: grad_mode(True), False),
        (lambda: opt.add_param_group({"params": [extra]}), lambda: opt.param_groups.pop(), False),
        (lambda: opt.param_groups[0].pop("eps"), lambda: restore(opt.param_groups[0]), False),
    ]
    kept = dict(opt.param_groups[0])

    def restore(group):  # its keys in their order: the guard holds (name, value) pairs in order
        group.clear()
        group.update(kept)

    assert guard.fits() and same()
    for change, undo, fits in changes:
        change()
        try:
            assert same() is fits and guard.fits() is fits
        finally:
            undo()
        assert guard.fits() and same()


def test_a_replay_remembers_the_live_state_it_published_as_a_look_would(dev):
    # After a replay the live places hold the slots' nodes it published (parameters, moments):
    # what it remembers without a look is what _remember_live finds by looking.
    model, opt = _setup(dev, "adam", dropout=True)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, ys = _batches(dev, 1)
    for _ in range(4):
        step(xs[0], ys[0])
    (program,) = step._captured.programs
    assert program._live_slot_at is not None
    buffers, nodes = program._live_seen
    program._remember_live()
    looked = program._live_seen
    assert looked is not None
    assert all(map(operator.is_, buffers, looked[0])) and all(map(operator.is_, nodes, looked[1]))
    assert len(nodes) == len(looked[1]) == len(program.live_reads)


def test_a_scheduler_changing_a_constant_of_the_recording_raises_a_clear_error():
    with pytest.raises(vkml.JitError, match="learning rate a scheduler sets every step"):
        _scheduled(vkml.device("cpu"), True, False, optimizer="sgd")


def test_a_view_argument_over_a_tensor_realized_by_the_call_replays_at_each_offset(dev):
    # data is lazy when x is cut from it: the first call realizes it, so a call passing the same
    # x again sees another graph (a trace kept from the first call must not serve it). The
    # gradient's matmul then reads a window of data's buffer that the builder cuts per call: a
    # replay cuts its argument's, at that argument's offset.
    results = []
    for jitted in (False, True):
        data = vkml.arange(48, dtype=vkml.float32, device=dev).reshape(24, 2) * 0.125
        batches = [data[2:10], data[8:16]]
        vkml.manual_seed(0)
        model = nn.Linear(2, 3).to(dev)
        opt = vkml.optim.SGD(model.parameters(), lr=0.1)

        def step(x, model=model, opt=opt):
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        f = vkml.jit(step) if jitted else step
        out = [f(batches[0]) for _ in range(3)] + [f(batches[i % 2]) for i in range(5)]
        results.append([np.float32(t.item()).view(np.uint32) for t in out] + [model.weight.detach().numpy().tobytes()])
    assert results[0] == results[1]
    assert f.stats["replays"] >= 4


def test_gradients_kept_outside_are_never_overwritten_by_later_replays(dev):
    # A replay writes each state slot's other buffer; one a kept tensor (last step's gradient, as
    # PyTorch's zero_grad() leaves it to whoever holds it) still holds is replaced, not written.
    model, opt = _setup(dev, "adam", dropout=False)

    @vkml.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xs, ys = _batches(dev, 1)
    for _ in range(4):
        step(xs[0], ys[0])
    kept = [p.grad for p in model.parameters()]
    values = [t.numpy().copy() for t in kept]
    for _ in range(3):
        step(xs[0], ys[0])
    assert all(np.array_equal(t.numpy(), v) for t, v in zip(kept, values, strict=True))
    assert not np.array_equal(model[0].weight.grad.numpy(), values[0])
    assert step.stats["fresh_buffers"] > 0


def test_a_new_batch_every_step_reuses_the_recording_with_the_uncaptured_bits(dev):
    # A data loader's batch is a new tensor every step (new memory): the replay copies it into
    # the recording's own input buffers on the device, so the kept command buffer serves it.
    g = np.random.default_rng(3)
    data = [(g.standard_normal((12, 2)).astype(np.float32), g.integers(0, 3, 12)) for _ in range(4)]
    runs = []
    for jitted in (False, True):
        model, opt = _setup(dev, "adam", dropout=True)

        def step(x, y, model=model, opt=opt):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        f = vkml.jit(step) if jitted else step
        losses = []
        for i in range(11):
            # (uploads take the ranges uploads freed: an early replay may find a batch on the last one's
            # memory, bound as it is, and record that once)
            if i == 7:
                debug.reset_counters()
            x, y = data[i % 4]
            losses.append(np.float32(f(vkml.tensor(x, device=dev), vkml.tensor(y, device=dev)).item()).view(np.uint32))
        runs.append(losses + [p.detach().numpy().tobytes() for p in model.parameters()])
    assert runs[0] == runs[1]
    counts = debug.counters()
    assert counts["submissions"] == 4
    if dev.kind == "vulkan":
        assert counts["recordings_reused"] == 4  # no replay recorded its command buffer anew


def test_a_scheduler_stepped_inside_the_captured_function_raises_a_clear_error():
    # A replay runs no Python: the scheduler inside would not step, and the lr would stay.
    for name in ("Adam", "SGD"):
        model = nn.Linear(2, 3)
        opt = getattr(vkml.optim, name)(model.parameters(), lr=0.01)
        sched = vkml.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)

        @vkml.jit
        def step(x, model=model, opt=opt, sched=sched):
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            return loss

        with pytest.raises(vkml.JitError, match="scheduler's step\\(\\) inside it"):
            for _ in range(4):
                step(vkml.ones(4, 2))


# ---------------------------------------------------------------------- windows of the work's own values


def _spectral_step(dev, jitted: bool, read_back: bool):
    # An FNO layer's pattern: a zeros tensor made inside the step, a corner of it assigned from an
    # einsum over the same corner of another intermediate; the corner is a window of the
    # intermediate's buffer once an earlier realize of the step computed it.
    vkml.manual_seed(0)
    w = vkml.randn(3, 4, 2, 2, device=dev, requires_grad=True)
    opt = vkml.optim.Adam([w], lr=0.1)

    def step(x):
        h = x * 2.0
        out = vkml.zeros(5, 4, 4, 4, device=dev)
        out[:, :, :2, :2] = vkml.einsum("bixy,ioxy->boxy", h[:, :, :2, :2], w)
        loss = (out * out).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not read_back:
            return (loss,)
        w.realize()  # the new w's window is read from the buffer this replay wrote (ping-pong)
        with vkml.no_grad():
            return loss, (w[1:] * 3).sum()

    f = vkml.jit(step) if jitted else step
    g = np.random.default_rng(0)
    xs = [vkml.tensor(g.standard_normal((5, 3, 4, 4)).astype(np.float32), device=dev) for _ in range(2)]
    out = [np.float32(t.item()).view(np.uint32) for i in range(5) for t in f(xs[i % 2])]
    return out + [w.detach().numpy().tobytes(), w.grad.numpy().tobytes()], (f.stats if jitted else None)


@pytest.mark.parametrize("read_back", [False, True])
def test_a_slice_assigned_from_a_window_of_an_intermediate_replays_with_the_same_bits(dev, read_back):
    plain, _ = _spectral_step(dev, False, read_back)
    captured, stats = _spectral_step(dev, True, read_back)
    assert captured == plain
    assert stats["captures"] == 1 and stats["replays"] >= 2 and stats["fresh_buffers"] == 0


def test_a_window_of_an_intermediate_kept_outside_is_refused():
    kept = []

    @vkml.jit
    def step(x):
        h = (x * 2.0).realize()
        out = vkml.zeros(64)
        out[:8] = h[16:24] * 3.0  # a window of h's buffer
        kept.append(h[16:24])  # the step's own value, overwritten by every replay
        return out.sum()

    with pytest.raises(vkml.JitError, match="kept outside"):
        for _ in range(3):
            step(vkml.ones(64))


def test_a_replay_hands_out_a_node_again_only_where_nothing_remembers_it():
    # A replay reuses the node of an output nobody holds any more, unless something remembers it
    # weakly: labels that passed cross_entropy's check are remembered by node, and the new values
    # behind a reused node must be checked again.
    @vkml.jit
    def step(x):
        return (x * 1.0).long()

    logits = vkml.zeros(4, 3)
    for i in range(6):
        labels = step(vkml.full((4,), 1.0 + i % 2))
        F.cross_entropy(logits, labels).item()  # passes: remembered for the labels' node
        del labels
    labels = step(vkml.full((4,), 7.0))
    assert step.stats["replays"] >= 5
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(logits, labels).item()


def test_results_kept_in_any_pattern_keep_their_values_across_replays():
    # A replay writes, per slot, the buffer nothing holds: the spare one, else the one written
    # last, else a fresh one. Results kept and dropped in an irregular pattern (the loss, lazy work
    # on the parameter, its gradient) exercise each case; every kept value must stay as it was read.
    w = vkml.ones(8, requires_grad=True)
    opt = vkml.optim.SGD([w], lr=0.125)

    @vkml.jit
    def step(x):
        loss = (x * w).square().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    kept = []
    for i, keep in enumerate([0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0]):
        loss = step(vkml.full((8,), 0.25 * (i % 3)))
        window = w.detach()[2:6] + 0  # lazy: computes from this replay's value of w whenever realized
        if keep:
            kept.append((loss, loss.item(), window, window.tolist(), w.grad, w.grad.tolist()))
    for loss, value, window, values, grad, grads in kept:
        assert (loss.item(), window.tolist(), grad.tolist()) == (value, values, grads)
    assert step.stats["replays"] >= 10 and step.stats["fresh_buffers"] > 0


def test_an_fno_spectral_layer_replays_with_the_uncaptured_bits():
    # The layer as FNO code writes it: rfft2, a corner of a complex zeros tensor assigned from an
    # einsum over the same corner of the spectrum, irfft2.
    def run(jitted):
        vkml.manual_seed(0)
        w = nn.Parameter(vkml.randn(3, 4, 2, 2, dtype=vkml.cfloat) * 0.1)
        opt = vkml.optim.Adam([w], lr=0.01)

        def step(x):
            x_ft = vkml.fft.rfft2(x)
            out_ft = vkml.zeros(x.shape[0], 4, x.size(-2), x.size(-1) // 2 + 1, dtype=vkml.cfloat)
            out_ft[:, :, :2, :2] = vkml.einsum("bixy,ioxy->boxy", x_ft[:, :, :2, :2], w)
            loss = vkml.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1))).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        f = vkml.jit(step) if jitted else step
        g = np.random.default_rng(0)
        xs = [vkml.tensor(g.standard_normal((2, 3, 8, 8)).astype(np.float32)) for _ in range(2)]
        losses = [np.float32(f(xs[i % 2]).item()).view(np.uint32) for i in range(5)]
        return losses + [w.detach().real.numpy().tobytes(), w.detach().imag.numpy().tobytes()], f

    plain, _ = run(False)
    captured, f = run(True)
    assert captured == plain
    assert f.stats["captures"] == 1 and f.stats["replays"] >= 2
