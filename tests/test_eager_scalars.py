"""Eager realizes whose parameters change every step read them from a ring and reuse their recordings
(vkml/schedule/eager_scalars.py): the same bits as push constants, on lavapipe as on GPUs."""

import threading

import numpy as np
import pytest

import vkml
from vkml import demo
from vkml.runtime.counters import counters
from vkml.schedule.scalar_ring import RING, ScalarRing


@pytest.fixture(autouse=True)
def _mapped(gpu):
    if not gpu.writes_mapped:  # a capability, not a name: the ring is written through the mapping
        pytest.skip(f"{gpu.name} does not write buffers through a mapping: eager scalars stay push constants")


def _train(gpu, steps: int) -> tuple[list, list, list]:
    """The demo's loop (dropout, Adam, the loss read): each step's loss bits, each step's counts of reused
    recordings and submissions, and the final weights' bits."""
    x, y = demo.make_spirals(points_per_class=20)
    # seeds the generator: the same weights and dropout keys every run. A width no other test trains: a
    # recipe's parameters move once per process, and another test's demo loop may have moved them first.
    model = demo.make_model(gpu, 12)
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    xs, ys = vkml.tensor(x, device=gpu), vkml.tensor(y, device=gpu)
    losses, counts = [], []
    for _ in range(steps):
        before = dict(counters)
        losses.append(np.float32(demo.train_step(model, optimizer, xs, ys)).view(np.uint32))
        counts.append(
            (
                counters["recordings_reused"] - before["recordings_reused"],
                counters["submissions"] - before["submissions"],
            )
        )
    return losses, counts, [p.numpy().view(np.uint32) for p in model.parameters()]


def test_dropout_adam_loop_reuses_every_recording_with_the_same_bits(gpu, monkeypatch):
    monkeypatch.setenv("VKML_EAGER_SCALARS", "0")
    losses_pushed, counts_pushed, weights_pushed = _train(gpu, 12)
    monkeypatch.setenv("VKML_EAGER_SCALARS", "1")
    moved = counters["scalars_moved"]
    losses, counts, weights = _train(gpu, 12)
    assert losses == losses_pushed
    for a, b in zip(weights, weights_pushed):
        np.testing.assert_array_equal(a, b)
    assert all(reused == 0 for reused, _ in counts_pushed[2:])  # the key and bias corrections change every step
    assert counters["scalars_moved"] > moved
    # the steady steps: every realize (forward, gradients, update) submits its recording again
    assert all(reused == submitted == 3 for reused, submitted in counts[-3:]), counts


def _scalar_loop(gpu, factors, size: int = 256, keep: bool = False) -> list:
    """``x * f + 1`` realized for each factor, checked against numpy at once (the result then dropped, as in
    a loop: the next one gets its memory), or with ``keep`` all kept and checked at the end."""
    x_np = np.linspace(-2, 2, size, dtype=np.float32)
    x = vkml.tensor(x_np, device=gpu)
    results = []
    for f in factors:
        y = (x * f + 1).realize()
        if keep:
            results.append(y)
        else:
            _check(y, x_np, f)
    for f, y in zip(factors, results):
        _check(y, x_np, f)


def _check(y, x_np: np.ndarray, f: float) -> None:
    expected = x_np * np.float32(f) + np.float32(1)
    np.testing.assert_array_equal(y.numpy().view(np.uint32), expected.view(np.uint32))


def test_a_changing_scalar_moves_and_keeps_its_bits(gpu):
    factors = [0.1 * k - 0.5 for k in range(12)] + [-0.0, 1.5e38, 1.0 / 3.0, 7.0, 7.0, 7.0]
    before = dict(counters)
    _scalar_loop(gpu, factors)
    assert counters["scalars_moved"] - before["scalars_moved"] == 1  # the factor; the 1 stays a push constant
    assert counters["recordings_reused"] - before["recordings_reused"] >= len(factors) - 6


def test_a_slice_offset_that_moves_every_step_is_read_from_the_ring(gpu):
    data = np.arange(256, dtype=np.float32) * np.float32(0.25)
    d = vkml.tensor(data, device=gpu)
    before = dict(counters)
    for i in range(14):  # a window of a computed value at a new offset every step: a view parameter
        got = ((d + 1.0)[i * 8 + 3 : i * 8 + 19] * 2.0).numpy()
        np.testing.assert_array_equal(got, (data + np.float32(1))[i * 8 + 3 : i * 8 + 19] * np.float32(2.0))
    assert counters["scalars_moved"] > before["scalars_moved"]
    assert counters["recordings_reused"] - before["recordings_reused"] >= 8


def test_a_rarely_changing_scalar_stays_a_push_constant(gpu):
    before = dict(counters)
    _scalar_loop(gpu, [0.5] * 5 + [0.25] * 5 + [0.125] * 5, size=128)  # a learning rate stepped now and then
    assert counters["scalars_moved"] == before["scalars_moved"]


def test_a_ring_entry_is_written_once_the_run_that_read_it_is_complete(gpu, monkeypatch):
    size = 1 << 18
    _scalar_loop(gpu, [0.25 * k for k in range(6)], size)  # the factor moves to the ring
    writes = []  # (the entry's buffer, the serial waited for, the last submission then) of each write
    write_after = type(gpu).write_after

    def recording_write_after(self, buffer, words, serial):
        writes.append((buffer, serial, self.last_submission))
        return write_after(self, buffer, words, serial)

    monkeypatch.setattr(type(gpu), "write_after", recording_write_after)
    # Results read only at the end: several runs are in flight when their entries come round again.
    _scalar_loop(gpu, [0.5 + k for k in range(12)], size, keep=True)
    assert len(writes) == 12
    read_by: dict = {}
    for buffer, serial, last in writes:
        # each write waits for the submission that read its entry last: the realize two before this one
        if id(buffer) in read_by:
            assert serial == read_by[id(buffer)], writes
        read_by[id(buffer)] = last + 1  # this realize's submission
    assert len(read_by) == RING


def test_two_threads_realizing_one_recipe(gpu):
    x_np = np.linspace(-2, 2, 1040, dtype=np.float32)  # a size of its own (tests/test_replay.py steps x * k + 1)
    x = vkml.tensor(x_np, device=gpu)
    errors = []

    def work(offset: float):
        try:
            for k in range(20):
                f = offset + 0.5 * k
                got = (x * f + 1).numpy()
                np.testing.assert_array_equal(got, x_np * np.float32(f) + np.float32(1))
        except Exception as e:  # noqa: BLE001  (reported by the main thread)
            errors.append(e)

    before = dict(counters)
    threads = [threading.Thread(target=work, args=(offset,)) for offset in (0.25, 100.125)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert counters["scalars_moved"] > before["scalars_moved"]
    assert counters["recordings_reused"] > before["recordings_reused"]


def test_a_ring_on_memory_freed_in_flight_keeps_its_words(gpu):
    # A result freed while the run that writes it may still be going: a ring made then must not take
    # its memory and write it at once (the run would overwrite the words when it gets there).
    x = vkml.ones(1 << 22, device=gpu).realize()
    gpu.synchronize()
    rings = []
    for _ in range(4):
        total = x.sum().realize()  # in flight: one float, written at the end of a long reduction
        del total
        ring = ScalarRing(gpu, [1])
        ring.words[:] = 7
        rings.append((ring, ring.write()))
    gpu.synchronize()
    for ring, entry in rings:
        np.testing.assert_array_equal(gpu.download(ring.buffers[entry]), ring.words)


def test_a_parameter_that_starts_changing_later_joins_the_ring(gpu):
    x_np = np.linspace(-2, 2, 192, dtype=np.float32)
    x = vkml.tensor(x_np, device=gpu)
    before = dict(counters)
    for k in range(20):
        a, b = 0.5 + 0.25 * k, 1.0 if k < 8 else -0.125 * k  # the offset changes every step from the ninth
        got = (x * a - b).numpy()
        np.testing.assert_array_equal(got, x_np * np.float32(a) - np.float32(b))
    assert counters["scalars_moved"] - before["scalars_moved"] == 2  # the factor, then the offset
    assert counters["recordings_reused"] - before["recordings_reused"] >= 6


def _windows_loop(gpu, steps: int) -> tuple[list, list]:
    """bench/bench_training.py's loop at a small size: the demo's model (dropout, Adam) over three windows of
    one dataset tensor in turn. Each step's loss bits, and each step's counts of compiles and moves."""
    batch = 40
    x, y = demo.make_spirals(points_per_class=batch)  # three windows of 40 of the 120 points
    model = demo.make_model(gpu, 20)  # a width no other test trains: its kernels are compiled here
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    xs, ys = vkml.tensor(x, device=gpu), vkml.tensor(y, device=gpu)
    windows = [(xs[i : i + batch], ys[i : i + batch]) for i in range(0, 3 * batch, batch)]
    keys = ("pipelines_created", "plans", "scalars_moved", "recordings_reused")
    losses, counts = [], []
    for step in range(steps):
        before = [counters[k] for k in keys]
        losses.append(np.float32(demo.train_step(model, optimizer, *windows[step % 3])).view(np.uint32))
        counts.append(dict(zip(keys, (counters[k] - b for k, b in zip(keys, before)))))
    return losses, counts


def test_a_training_loop_over_windows_compiles_nothing_after_its_second_step(gpu, monkeypatch):
    # Dropout's key and Adam's bias corrections move into the ring at their plans' first realize (Adam's
    # second step has a plan of its own); the windows' offsets follow the windows' buffers and stay push
    # constants. Before, the moves came at steps 4, 8 and 10, each compiling kernel variants.
    monkeypatch.setenv("VKML_EAGER_SCALARS", "0")
    losses_pushed, _ = _windows_loop(gpu, 6)  # the ring's kernels run from the first step: six show the bits
    monkeypatch.setenv("VKML_EAGER_SCALARS", "1")
    losses, counts = _windows_loop(gpu, 12)
    assert losses[:6] == losses_pushed
    assert counts[0]["scalars_moved"] > 0 and counts[1]["scalars_moved"] > 0
    for step, count in enumerate(counts[2:], 3):
        assert count["pipelines_created"] == count["plans"] == count["scalars_moved"] == 0, (step, counts)
    assert all(count["recordings_reused"] == 3 for count in counts[-3:]), counts  # an epoch's recordings
