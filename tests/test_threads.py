"""Threads: any number of them may build and realize graphs on one device, sharing tensors.

Each thread realizes small graphs of several kinds (elementwise chains, reductions, a row
chain as softmax's, matmul, views, cat, argmax, layer norm, a user's DSL op and kernel, backward) over inputs every thread shares, including a lazy
tensor per round that several threads realize at once. Every result must have the bits of
the same graph realized by one thread alone, and the tensors the threads hold must keep their
values to the end. The long run is behind the ``stress`` marker (``pytest -m stress``).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading

import numpy as np
import pytest

import vkml
import vkml.nn as nn
import vkml.nn.functional as F
from vkml import dsl
from vkml.dsl.elementwise import restoring_registry
from vkml.runtime.vulkan.backend import VulkanDevice
from vkml.runtime.vulkan.recordings import Recordings

THREADS = 16
REALIZES = 200  # per thread, in the default suite

_rng = np.random.default_rng(14)
X = _rng.standard_normal((8, 16)).astype(np.float32)
W = _rng.standard_normal((16, 8)).astype(np.float32)
B = _rng.standard_normal(16).astype(np.float32)


class Inputs:
    """The realized tensors every thread reads, and ``rounds`` lazy tensors (one per round) they share."""

    def __init__(self, device, rounds: int):
        self.x = vkml.tensor(X, device=device)
        self.w = vkml.tensor(W, device=device)
        self.b = vkml.tensor(B, device=device)
        # Never realized before the threads start: the first thread to need one realizes it
        # while others may be realizing graphs that read it.
        self.shared = [(self.x * float(r % 7) + self.b).relu() for r in range(rounds)]


def _sum_rows(inp, r):
    return ((inp.x * float(r) + inp.shared[r]) * 0.5).sum(dim=1)


def _row_chain(inp, r):
    """Two reductions over the same rows and their elementwise reader: softmax's shape, without its exp."""
    centred = inp.shared[r] * float(r % 5 + 1) - inp.shared[r].amax(dim=-1, keepdim=True)
    return centred * (centred.sum(dim=-1, keepdim=True) - 1.0)


def _matmul(inp, r):
    return (inp.shared[r] @ inp.w + float(r)).relu()


def _views(inp, r):
    return inp.shared[r][1:, ::2].transpose(0, 1).flip(0) * float(r) - inp.x[:7, 3:11].T.flip(1)


def _cat_argmax(inp, r):
    both = vkml.cat([inp.shared[r], inp.x * float(r % 3)], dim=0)
    return both.argmax(dim=1)


def _layer_norm(inp, r):
    return F.layer_norm(inp.x + inp.shared[r], (16,), weight=inp.b, bias=inp.shared[r][0])


@pytest.fixture(scope="module", autouse=True)
def _registry_as_found():
    """The user's op ``_user_ops`` defines is taken out of the registry after this module's tests."""
    with restoring_registry():
        yield
    _user_ops.cache_clear()


@functools.cache
def _user_ops():
    """A user's elementwise op and kernel, defined on first use (defining registers an op)."""

    @vkml.elementwise
    def softsign(x, k):
        return x * k / (1.0 + dsl.abs(x))

    @vkml.kernel(outputs=lambda x, scale: (x.shape, x.dtype), local_size=(64,))
    def scaled(x, scale, out):
        i = dsl.global_id(0)
        with dsl.if_(i < x.numel):
            out[i] = x[i] * scale

    return softsign, scaled


def _custom(inp, r):
    """A user's elementwise op (fused) and a user's kernel (a dispatch of its own, plans not cached)."""
    softsign, scaled = _user_ops()
    return softsign(scaled(inp.shared[r], float(r)), 0.5) + inp.x


def _backward(inp, r):
    """A separate graph per call: the weight is a new leaf, so threads never share a ``.grad``."""
    w = vkml.tensor(W * np.float32(r % 4 + 1), device=inp.x.device, requires_grad=True)
    loss = ((inp.shared[r] @ w).relu() * inp.x[:, :8]).sum()
    loss.backward()
    return w.grad


KINDS = [_sum_rows, _row_chain, _matmul, _views, _cat_argmax, _layer_norm, _custom, _backward]


def _bits(t) -> bytes:
    a = t.numpy()
    return a.dtype.str.encode() + str(a.shape).encode() + a.tobytes()


def _jobs(thread: int, realizes: int) -> list[tuple[int, int]]:
    """(kind, round) of each realize of ``thread``: threads meet on the same round at about the same time."""
    return [((thread + i) % len(KINDS), i) for i in range(realizes)]


def _reference(device, realizes: int) -> dict[tuple[int, int], bytes]:
    """Every (kind, round) realized by this thread alone, on inputs of its own."""
    inp = Inputs(device, realizes)
    wanted = sorted({job for t in range(THREADS) for job in _jobs(t, realizes)})
    return {(k, r): _bits(KINDS[k](inp, r)) for k, r in wanted}


@contextlib.contextmanager
def _switching_often(interval_s: float = 1e-5):
    """Make Python switch threads often, so that races show in a short run."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(interval_s)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _run_threads(device, realizes: int, reference: dict) -> None:
    inp = Inputs(device, realizes)
    failures: list[str] = []
    held: list[tuple[object, bytes]] = []  # some results, read again once every thread is done
    start = threading.Barrier(THREADS)

    def work(thread: int) -> None:
        try:
            start.wait()
            for kind, r in _jobs(thread, realizes):
                out = KINDS[kind](inp, r)
                got = _bits(out)
                if got != reference[(kind, r)]:
                    failures.append(f"thread {thread}: {KINDS[kind].__name__} round {r} differs")
                if r % 16 == thread % 16:
                    held.append((out, got))
        except BaseException as e:  # noqa: BLE001 - any error in a thread is a failure of the test
            failures.append(f"thread {thread}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, f"{len(failures)} failures, the first: {failures[:5]}"
    assert len(held) >= THREADS
    for out, bits in held:
        assert _bits(out) == bits, "a result a thread held changed after it was read"
    for t, data in ((inp.x, X), (inp.w, W), (inp.b, B)):
        assert np.array_equal(t.numpy(), data), "an input every thread read changed"


@pytest.fixture(params=["cpu", "vulkan"])
def device(request):
    if request.param == "cpu":
        return vkml.device("cpu")
    return request.getfixturevalue("gpu")


def test_threads_realize_shared_graphs_with_single_thread_bits(device):
    reference = _reference(device, REALIZES)
    with _switching_often():
        _run_threads(device, REALIZES, reference)


def test_eager_mode_under_threads(device):
    """Every op runs at once (``set_eager``): threads realize op by op, interleaved."""
    reference = _reference(device, 24)
    vkml.set_eager(True)
    try:
        with _switching_often():
            _run_threads(device, 24, reference)
    finally:
        vkml.set_eager(False)


def test_grad_mode_is_per_thread(device):
    """``no_grad`` in one thread (an optimizer step, backward itself) leaves another thread's recording on, as in PyTorch."""
    entered, leave = threading.Event(), threading.Event()

    def quiet() -> None:
        with vkml.no_grad():
            entered.set()
            leave.wait(10)

    other = threading.Thread(target=quiet)
    other.start()
    try:
        entered.wait(10)
        w = vkml.tensor(W, device=device, requires_grad=True)
        y = (w * 2.0).sum()
        assert vkml.is_grad_enabled() and y.requires_grad
    finally:
        leave.set()
        other.join()
    y.backward()
    assert np.array_equal(w.grad.numpy(), np.full_like(W, 2.0))


def test_random_draws_from_threads_are_all_distinct(device):
    """The default generator hands each draw its own offset, whichever thread asks."""
    draws: list = []

    def draw() -> None:
        for _ in range(20):
            draws.append(vkml.rand(4, device=device))

    threads = [threading.Thread(target=draw) for _ in range(8)]
    with _switching_often(1e-6):
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    values = {d.numpy().tobytes() for d in draws}
    assert len(values) == len(draws) == 160


def _linear(device, g, in_features: int, out_features: int) -> nn.Linear:
    """An ``nn.Linear`` with weights from ``g`` (the default generator's draws depend on the threads' order)."""
    layer = nn.Linear(in_features, out_features, device=device)
    layer.weight = nn.Parameter(
        vkml.tensor(g.standard_normal((out_features, in_features)).astype(np.float32), device=device)
    )
    layer.bias = nn.Parameter(vkml.tensor(g.standard_normal(out_features).astype(np.float32), device=device))
    return layer


def _train(device, encoder, seed: int, steps: int = 4) -> bytes:
    """A few SGD steps of a small model of this thread's own over a frozen ``encoder`` shared by all threads."""
    g = np.random.default_rng(seed)
    head = _linear(device, g, 8, 3)
    opt = vkml.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
    x = vkml.tensor(g.standard_normal((4, 16)).astype(np.float32), device=device)
    target = vkml.tensor(g.standard_normal((4, 3)).astype(np.float32), device=device)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(head(encoder(x).relu()), target).backward()
        opt.step()
    return _bits(head.weight) + _bits(head.bias)


def test_threads_train_models_of_their_own(device):
    """backward() and optimizer steps in many threads at once, each on its own model; the encoder they share is frozen."""
    encoder = _linear(device, np.random.default_rng(99), 16, 8)
    for p in encoder.parameters():
        p.requires_grad_(False)
    reference = [_train(device, encoder, seed) for seed in range(THREADS)]
    got: dict[int, bytes | BaseException] = {}

    def work(seed: int) -> None:
        try:
            got[seed] = _train(device, encoder, seed)
        except BaseException as e:  # noqa: BLE001 - reported below
            got[seed] = e

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(THREADS)]
    with _switching_often():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [got[seed] for seed in range(THREADS)] == reference


def test_threads_on_two_devices_at_once(gpu):
    """The CPU's and the Vulkan device's realizes run side by side: the caches they share stay whole."""
    devices = (vkml.device("cpu"), gpu)
    references = [_reference(d, 30) for d in devices]
    errors: list[BaseException] = []

    def one_device(device, reference) -> None:
        try:
            _run_threads(device, 30, reference)
        except BaseException as e:  # noqa: BLE001 - reported by the test's thread below
            errors.append(e)

    runs = [threading.Thread(target=one_device, args=pair) for pair in zip(devices, references)]
    with _switching_often():
        for t in runs:
            t.start()
        for t in runs:
            t.join()
    assert not errors, errors


def test_a_wait_outside_the_lock_keeps_its_fence_while_its_slot_runs_again(gpu):
    """A download waits on its fence without the device's lock; a run submitted meanwhile on the same
    command buffer takes another fence rather than reset the one waited on (vkml/runtime/vulkan/recordings.py)."""
    dev = VulkanDevice(gpu.index)
    dev.recordings = recordings = Recordings(dev.logical, slots=1)  # every run on the one slot
    dev.memory.wait_for = recordings.wait_for
    x = vkml.tensor(X, device=dev)
    y = (x * 3.0 + 1.0).realize()
    with dev.lock:
        claim = recordings.claim(y.node.buffer.ready_serial)
    assert claim is not None
    waited = claim[0]
    z = (x * 5.0 - 2.0).realize()  # submitted while the claim's wait is pending
    assert recordings.fences[0] is not waited
    recordings.wait_claimed(claim, dev.lock)
    assert recordings._spare_fences == [waited]  # nobody waits on it now: the next swap reuses it
    assert np.array_equal(y.numpy(), X * np.float32(3.0) + np.float32(1.0))
    assert np.array_equal(z.numpy(), X * np.float32(5.0) - np.float32(2.0))
    dev.synchronize()


@pytest.mark.stress
def test_threads_stress(device):
    reference = _reference(device, 2000)
    with _switching_often():
        _run_threads(device, 2000, reference)
