"""The counter-based generator: Threefry's published vectors, the kernels against numpy, the same bits everywhere."""

from __future__ import annotations

import numpy as np
import pytest
from optest import assert_same_bits

import vkml
import vkml.nn.functional as VF
from vkml import debug
from vkml.ops.random import threefry2x32

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


def _words(seed: int, offset: int, n: int):
    """The two Threefry words of elements 0..n-1 of the draw at ``offset`` under ``seed``, in numpy."""
    index = np.arange(n, dtype=U32)
    key0, key1 = np.full(n, seed % 2**32, U32), np.full(n, seed >> 32, U32)
    return threefry2x32(index, np.full(n, offset, U32), key0, key1)


def test_rand_is_the_top_24_bits_of_the_first_word():
    seed = 0x0123456789ABCDEF
    vkml.manual_seed(seed)
    vkml.rand(5)  # offset 0
    got = vkml.rand(4, 250).numpy()  # offset 1
    w0, _ = _words(seed, 1, 1000)
    want = ((w0 >> 8).astype(np.float32) * np.float32(2.0**-24)).reshape(4, 250)
    assert_same_bits(got, want, "rand")


def test_randn_is_box_muller_of_both_words():
    seed = 42
    vkml.manual_seed(seed)
    got = vkml.randn(4096).numpy().astype(np.float64)
    w0, w1 = _words(seed, 0, 4096)
    u1 = ((w0 >> 8).astype(np.float64) + 1) * 2.0**-24
    u2 = (w1 >> 8).astype(np.float64) * 2.0**-24
    want = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("draw", ["rand", "randn", "rand_f16", "dropout"])
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
        return VF.dropout(vkml.ones(300, 7, device=device), 0.3).numpy()

    assert_same_bits(run(gpu), run(CPU), f"{draw} on {gpu.name}")


def test_draws_advance_and_seeding_replays():
    vkml.manual_seed(7)
    a, b = vkml.rand(64).numpy(), vkml.rand(64).numpy()
    assert not np.array_equal(a, b)
    state = vkml.frontend.random.default_generator.get_state()
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
    assert h.dtype == np.float16 and h.max() < 1 and len(np.unique(h)) > 1000


def test_a_new_seed_reuses_the_compiled_kernels(gpu):
    vkml.manual_seed(1)
    (vkml.randn(64, device=gpu) * 2).numpy()
    before = debug.counters()["kernels_compiled"]
    vkml.manual_seed(99)
    (vkml.randn(64, device=gpu) * 2).numpy()
    assert debug.counters()["kernels_compiled"] == before  # seed and offset are kernel parameters


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
    with pytest.raises(ValueError, match="32 bits"):
        vkml.rand(1 << 16, 1 << 16)
    with pytest.raises(TypeError, match="seed must be an int"):
        vkml.manual_seed(1.5)
    assert vkml.randn(2, requires_grad=True).requires_grad
