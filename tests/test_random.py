"""The random stream: PyTorch's CPU values for the same seed (torch is the oracle), the same bits on every
device, and the dropout masks' fused Threefry stream (its published vectors)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn.functional as VF
from vkml import debug
from vkml.ops.random import threefry2x32

# vkml draws half-precision values and trunc_normal_ as PyTorch 2.13 does; older PyTorch (the GPU
# machine's 2.11) drew them by other algorithms, so there those cases have no oracle.
TORCH_2_13 = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)
NEEDS_2_13 = pytest.mark.skipif(not TORCH_2_13, reason="PyTorch 2.13's half-precision and trunc_normal_ draws")

CPU = vkml.device("cpu")
U32 = np.uint32


@pytest.mark.parametrize(
    ("counter", "key", "expected"),
    [  # Random123's known-answer vectors for threefry2x32, 20 rounds
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0)),
    ],
)
def test_threefry_matches_the_published_vectors(counter, key, expected):
    words = threefry2x32(*(np.array([v], U32) for v in counter + key))
    assert tuple(int(w[0]) for w in words) == expected


def _keep_mask_words(seed: int, n: int):
    """Element 0..n-1's first Threefry word of the dropout mask drawn first after ``manual_seed(seed)``:
    the key is the Mersenne Twister's first word and the seed's low half, the counter (i, 0)."""
    first = np.random.MT19937(0)
    first._legacy_seeding(seed % 2**32)
    key0 = U32(first.random_raw(1)[0])
    index = np.arange(n, dtype=U32)
    return threefry2x32(index, np.zeros(n, U32), np.full(n, key0, U32), np.full(n, seed % 2**32, U32))[0]


def test_dropout_mask_is_the_threefry_stream_keyed_by_one_word():
    seed = 0x0123456789ABCDEF
    vkml.manual_seed(seed)
    got = VF.dropout(vkml.ones(1000), 0.25).numpy() != 0
    u = (_keep_mask_words(seed, 1000) >> 8).astype(np.float32) * np.float32(2.0**-24)
    np.testing.assert_array_equal(got, u >= np.float32(0.25))
    vkml.manual_seed(seed)
    first = np.random.MT19937(0)
    first._legacy_seeding(seed % 2**32)
    first.random_raw(1)  # the mask's key: one word, as PyTorch's MKL dropout takes one
    want = (first.random_raw(3) & 0xFFFFFF).astype(np.float32) * np.float32(2.0**-24)
    VF.dropout(vkml.ones(8), 0.5)
    assert_same_bits(vkml.rand(3).numpy(), want, "the draw after a dropout")


def test_one_word_is_the_streams_next_word():
    # Generator.next_key (a dropout's key) takes one word without an array: the same stream and state
    from vkml.frontend.mt19937 import Engine

    one, many = Engine(7), Engine(7)
    got = [one.word(), one.word(), *one.words(3).tolist()]
    assert got == many.words(5).tolist()
    assert all(type(w) is int for w in got[:2])
    assert one.state_bytes() == many.state_bytes()


def _both(draw, seed: int = 11):
    torch.manual_seed(seed)
    want = draw(torch)
    vkml.manual_seed(seed)
    got = draw(vkml)
    return got, want


# (name, draw(lib)): PyTorch's CPU values for the same seed, bit for bit, and the stream after them.
DRAWS = [
    ("rand", lambda L: L.rand(4, 250)),
    ("rand float64", lambda L: L.rand(7, dtype=L.float64)),
    ("rand float16", lambda L: L.rand(40, dtype=L.float16)),
    ("randn 5", lambda L: L.randn(5)),  # the scalar double path, its second value cached
    ("randn 1000", lambda L: L.randn(1000)),  # Box-Muller in blocks of 16
    ("randn 37", lambda L: L.randn(37)),  # the last block drawn anew
    ("randn 70003", lambda L: L.randn(70003)),  # Box–Muller in more than one slice of rows, then the tail
    ("randn float64", lambda L: L.randn(33, dtype=L.float64)),
    ("randn float16", lambda L: L.randn(50, dtype=L.float16)),  # its own tail block
    ("normal_ bfloat16", lambda L: L.zeros(37, dtype=L.bfloat16).normal_(0.5, 2.0).float()),
    ("normal_", lambda L: L.zeros(70).normal_(-2.0, 5.0)),
    ("uniform_", lambda L: L.zeros(70).uniform_(-0.3, 0.7)),
    ("uniform_ float64", lambda L: L.zeros(70, dtype=L.float64).uniform_(-0.3, 0.45)),
    ("randint", lambda L: L.randint(3, 17, (4, 5))),
    ("randint wide", lambda L: L.randint(-(2**40), 2**40, (7,))),
    ("randint int32", lambda L: L.randint(0, 100, (7,), dtype=L.int32)),
    ("random_", lambda L: L.zeros(9, dtype=L.int64).random_()),
    ("random_ float", lambda L: L.zeros(9).random_(5, 9)),
    ("randperm", lambda L: L.randperm(50)),
    ("bernoulli", lambda L: L.bernoulli((L.arange(18.0) / 17).reshape(3, 6))),
    ("bernoulli p", lambda L: L.bernoulli(L.zeros(10), 0.4)),
    ("bernoulli_", lambda L: L.zeros(10).bernoulli_(0.4)),
    ("exponential_", lambda L: L.zeros(30).exponential_(3.0)),
    ("geometric_", lambda L: L.zeros(30).geometric_(0.2)),
    ("cauchy_", lambda L: L.zeros(30).cauchy_()),
    ("log_normal_", lambda L: L.zeros(7, dtype=L.float64).log_normal_(-0.3, 0.45)),  # z·std + mean fused
    ("normal(tensor, float)", lambda L: L.normal((L.arange(20.0) / 10 - 1), 2.0)),
    ("normal(tensor, tensor)", lambda L: L.normal((L.arange(20.0) / 10 - 1), (L.arange(1.0, 21.0) / 10))),
    ("normal(float, float, size)", lambda L: L.normal(1.0, 2.0, (40,))),
    ("multinomial", lambda L: L.multinomial((L.arange(1.0, 19.0) / 10).reshape(3, 6), 7, True)),
    ("multinomial no replacement", lambda L: L.multinomial((L.arange(1.0, 19.0) / 10).reshape(3, 6), 4)),
    # one sample with replacement takes PyTorch's exponential race too (Categorical.sample()'s draw)
    ("multinomial one sample", lambda L: L.multinomial((L.arange(1.0, 19.0) / 10).reshape(3, 6), 1, True)),
    ("Categorical.sample", lambda L: L.distributions.Categorical(logits=L.arange(12.0).reshape(4, 3) / 5).sample()),
    # PyTorch's gamma sampler, element by element: float32 arithmetic on alpha, boosts below 1
    ("Gamma.sample", lambda L: L.distributions.Gamma(L.tensor([0.3, 1.0, 2.5, 7.0, 0.05]), 2.0).sample((3,))),
    ("Gamma float64", lambda L: L.distributions.Gamma(L.tensor([0.3, 4.0], dtype=L.float64), 1.0).sample((2,))),
    ("Dirichlet.sample", lambda L: L.distributions.Dirichlet(L.tensor([[0.5, 1.0, 3.0], [2.0, 2.0, 0.1]])).sample()),
    ("Beta.rsample", lambda L: L.distributions.Beta(L.tensor([2.0, 0.5]), L.tensor([3.0, 0.7])).rsample((3,))),
    # ...leaving the generator's Box–Muller cache where PyTorch's is (the scalar randn after reads it)
    ("Gamma then randn", lambda L: L.cat([L.distributions.Gamma(L.full((41,), 0.6), 1.0).sample(), L.randn(3)])),
    ("randint_like", lambda L: L.randint_like(L.zeros(3, 20), 10)),
    ("randn cfloat", lambda L: L.view_as_real(L.randn(20, dtype=L.cfloat))),
]


HALF_DRAWS = {"rand float16", "randn float16", "normal_ bfloat16"}


@pytest.mark.parametrize(
    "draw", [pytest.param(d, id=n, marks=[NEEDS_2_13] if n in HALF_DRAWS else []) for n, d in DRAWS]
)
def test_draws_are_pytorchs(draw):
    got, want = _both(lambda L: (draw(L), L.rand(3)))
    for g, w, what in zip(got, want, ("values", "the next draw")):
        assert_same_bits(g.numpy(), w.numpy(), what)


def test_state_is_pytorchs_byte_for_byte():
    for setup in (lambda L: None, lambda L: L.randn(3), lambda L: L.rand(700)):
        got, want = _both(lambda L, setup=setup: (setup(L), L.get_rng_state())[1])
        assert got.dtype is vkml.uint8 and got.shape == (5056,)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    torch.manual_seed(3)
    torch.randn(3)  # leaves a cached normal value
    vkml.set_rng_state(vkml.tensor(torch.get_rng_state().numpy()))
    assert_same_bits(vkml.randn(5).numpy(), torch.randn(5).numpy(), "after PyTorch's state")
    g, t = vkml.Generator(), torch.Generator()
    g.set_state(vkml.tensor(t.manual_seed(4).get_state().numpy()))
    assert_same_bits(vkml.rand(4, generator=g).numpy(), torch.rand(4, generator=t).numpy(), "a Generator's state")
    assert g.initial_seed() == t.initial_seed() == 4
    assert vkml.manual_seed(-5).initial_seed() == torch.manual_seed(-5).initial_seed()
    with pytest.raises(ValueError):
        vkml.manual_seed(2**64)
    got, want = _both(lambda L: (L.rand(2).tolist(), L.random.initial_seed()))
    assert got == want and got[1] == 11  # torch.random's names
    vkml.manual_seed(1)
    first = vkml.rand(2).tolist()
    vkml.manual_seed(1)
    with vkml.random.fork_rng():
        vkml.randn(40)
    assert vkml.rand(2).tolist() == first  # the fork's draws left the stream where it was


def test_modules_built_after_a_seed_have_pytorchs_weights():
    def build(L):
        nn = L.nn
        return [
            nn.Linear(5, 7),
            nn.Conv2d(3, 4, 3),
            nn.Embedding(10, 4),
            nn.LSTM(4, 6, num_layers=2),
            nn.GRU(3, 5),
            nn.TransformerEncoderLayer(8, 2, 16),
            nn.Bilinear(3, 4, 5),
        ]

    got, want = _both(build, seed=0)
    for a, b in zip(got, want):
        sa, sb = a.state_dict(), b.state_dict()
        assert list(sa) == list(sb)
        for k in sa:
            assert_same_bits(sa[k].numpy(), sb[k].detach().numpy(), f"{type(a).__name__}.{k}")


@pytest.mark.parametrize(
    "init",
    [
        lambda I, w: I.kaiming_uniform_(w, a=5**0.5),
        lambda I, w: I.xavier_normal_(w),
        pytest.param(lambda I, w: I.trunc_normal_(w, std=0.02), marks=NEEDS_2_13),
        lambda I, w: I.sparse_(w, 0.5),
    ],
    ids=["kaiming_uniform_", "xavier_normal_", "trunc_normal_", "sparse_"],
)
def test_init_draws_are_pytorchs(init):
    got, want = _both(lambda L: (init(L.nn.init, L.zeros(6, 9)), L.rand(2)))
    for g, w in zip(got, want):
        assert_same_bits(g.numpy(), w.detach().numpy(), "init")


def test_dataloader_shuffles_in_pytorchs_order():
    def batches(L, **kw):
        data = L.utils.data.TensorDataset(L.arange(23))
        loader = L.utils.data.DataLoader(data, batch_size=5, shuffle=True, **kw)
        return [b[0].tolist() for _ in range(2) for b in loader], L.rand(2).tolist()

    got, want = _both(batches)
    assert got == want
    got, want = _both(lambda L: batches(L, generator=L.Generator().manual_seed(9)))
    assert got == want
    got, want = _both(lambda L: [list(s) for s in L.utils.data.random_split(range(10), [0.7, 0.3])])
    assert got == want


@pytest.mark.parametrize("draw", ["rand", "randn", "rand_f16", "dropout", "bernoulli", "multinomial"])
def test_same_seed_gives_the_same_bits_on_cpu_and_vulkan(draw, gpu):
    def run(device):
        vkml.manual_seed(1234)
        vkml.rand(3, device=device)  # advance the offset: later draws must agree too
        if draw == "rand":
            return vkml.rand(300, 7, device=device).numpy()
        if draw == "randn":
            return vkml.randn(300, 7, device=device).numpy()
        if draw == "rand_f16":
            return vkml.rand(2100, dtype=vkml.float16, device=device).numpy()
        if draw == "bernoulli":  # host uniforms compared with probabilities on the device
            return vkml.bernoulli(vkml.rand(300, 7, device=device)).numpy()
        if draw == "multinomial":  # host exponentials, the race's topk on the device
            return vkml.multinomial(vkml.rand(4, 30, device=device) + 0.01, 5).numpy()
        return VF.dropout(vkml.ones(300, 7, device=device), 0.3).numpy()

    assert_same_bits(run(gpu), run(CPU), f"{draw} on {gpu.name}")


def test_draws_advance_and_seeding_replays():
    vkml.manual_seed(7)
    a, b = vkml.rand(64).numpy(), vkml.rand(64).numpy()
    assert not np.array_equal(a, b)
    state = vkml.frontend.random.default_generator.get_state()
    assert state.shape == (5056,)
    c = vkml.rand(64).numpy()
    vkml.manual_seed(7)
    assert_same_bits(vkml.rand(64).numpy(), a, "replay after manual_seed")
    vkml.frontend.random.default_generator.set_state(state)
    assert_same_bits(vkml.rand(64).numpy(), c, "replay after set_state")
    g = vkml.Generator(7)
    assert_same_bits(vkml.rand(64, generator=g).numpy(), a, "a Generator of its own")
    assert vkml.manual_seed(8).initial_seed() == 8


def test_distributions_have_the_right_moments():
    vkml.manual_seed(0)
    u = vkml.rand(1 << 16).numpy()
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = vkml.randn(1 << 16).numpy()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.005
    h = vkml.rand(1 << 12, dtype=vkml.float16).numpy()
    assert h.dtype == np.float16 and h.max() <= 1 and len(np.unique(h)) > 1000  # rounded: 1 as in PyTorch


def test_a_new_seed_reuses_the_compiled_kernels(gpu):
    vkml.manual_seed(1)
    (vkml.randn(64, device=gpu) * 2).numpy()
    before = debug.counters()["kernels_compiled"]
    vkml.manual_seed(99)
    (vkml.randn(64, device=gpu) * 2).numpy()
    assert debug.counters()["kernels_compiled"] == before  # host-drawn values are buffers, not constants


def test_random_tensors_fuse_into_their_consumer():
    debug.reset_counters()
    (vkml.rand(100) * 3 + vkml.randn(100)).numpy()
    assert debug.counters()["dispatches"] == 1


def test_dropout_keeps_one_minus_p_and_scales():
    vkml.manual_seed(3)
    out = VF.dropout(vkml.ones(1 << 14), 0.25).numpy()
    assert set(np.unique(out)) == {0.0, np.float32(1 / 0.75)}
    assert abs((out > 0).mean() - 0.75) < 0.01
    assert VF.dropout(vkml.ones(3), 0.25, training=False).tolist() == [1.0, 1.0, 1.0]


def test_bad_requests_raise():
    with pytest.raises(vkml.DTypeError, match="floating point.*int64"):
        vkml.rand(3, dtype=vkml.int64)
    with pytest.raises(ValueError, match="2\\^32"):
        vkml.rand(1 << 16, 1 << 16)
    for lib in (torch, vkml):  # a Generator takes an int alone; torch.manual_seed converts with int()
        with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
            lib.Generator().manual_seed(1.5)
        assert lib.manual_seed(1.5).initial_seed() == 1
    assert vkml.randn(2, requires_grad=True).requires_grad


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_jit_replays_draw_host_values_anew_in_order(device, request):
    dev = CPU if device == "cpu" else request.getfixturevalue("gpu")

    def run(jitted: bool):
        vkml.manual_seed(0)
        w = vkml.nn.Parameter(vkml.randn(4, 3, device=dev))
        opt = vkml.optim.SGD([w], lr=0.1)

        def step(x):
            noise = vkml.randn_like(x) * 0.1  # a VAE's reparameterization: host-drawn, redrawn per replay
            h = VF.dropout(vkml.rand(x.shape[0], 4, device=dev) + (x + noise) @ w.t(), 0.25)  # a fused draw
            loss = (h * h).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        f = vkml.jit(step) if jitted else step
        x = vkml.ones(5, 3, device=dev)
        losses = [float(f(x).item()) for _ in range(5)]
        return losses, vkml.rand(2, device=dev).tolist(), (f.stats["replays"] if jitted else None)

    plain, captured = run(False), run(True)
    assert captured[2] >= 2  # the last calls replayed
    assert captured[:2] == plain[:2]  # every loss, and the stream after the steps
