"""Creation ops (vkml/frontend/construction.py) against PyTorch: eye, linspace, logspace, empty, and the random ones.

Deterministic ones match torch's values bit for bit (linspace's fused multiply-adds and logspace's float64
powers included).
Random ones are checked by their statistics, their shapes and dtypes, their reproducibility,
and the same bits on the CPU backend and lavapipe (their values are not PyTorch's).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml

DTYPES = {"float32": (vkml.float32, torch.float32), "float16": (vkml.float16, torch.float16),
          "int32": (vkml.int32, torch.int32), "int64": (vkml.int64, torch.int64), "bool": (vkml.bool, torch.bool)}  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, m", [(3, None), (2, 5), (4, 1), (0, 3), (3, 0)])
def test_eye_matches_torch(n, m, dtype):
    vd, td = DTYPES[dtype]
    got = vkml.eye(n, m, dtype=vd) if m is not None else vkml.eye(n, dtype=vd)
    want = torch.eye(n, m, dtype=td) if m is not None else torch.eye(n, dtype=td)
    assert_same_bits(got.numpy(), want.numpy(), f"eye({n}, {m}, {dtype})")


SPACES = [(0, 1, 7), (-3.3, 10.1, 101), (1e-3, 7, 1000), (5, -2, 11), (2.5, 2.5, 4), (0, 1, 1), (0, 1, 0), (-1, 10, 4)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64"])
@pytest.mark.parametrize("start, end, steps", SPACES)
def test_linspace_matches_torch_bit_for_bit(start, end, steps, dtype):
    vd, td = getattr(vkml, dtype), getattr(torch, dtype)
    got = vkml.linspace(start, end, steps, dtype=vd)
    want = torch.linspace(start, end, steps, dtype=td)
    if dtype == "bfloat16":
        got, want = got.float(), want.float()
    assert_same_bits(got.numpy(), want.numpy(), f"linspace{(start, end, steps)} of {dtype}")


def test_linspace_rounds_each_value_once_as_a_fused_multiply_add():
    """PyTorch's ``start + step * i`` is contracted into an fma: near zero, where the product and the start
    cancel, a rounded product is many ulps off (the "Learning PyTorch" tutorials' ``torch.linspace(-math.pi,
    math.pi, 2000)`` and the YouTube series' ``torch.linspace(0., 2. * math.pi, steps=25)``)."""
    for start, end, steps in [(-3.0, 5.0, 100), (-math.pi, math.pi, 2000), (0.0, 2.0 * math.pi, 25), (0.1, 0.7, 77)]:
        for vd, td in [(vkml.float32, torch.float32), (vkml.float64, torch.float64)]:
            got = vkml.linspace(start, end, steps, dtype=vd).numpy()
            assert_same_bits(got, torch.linspace(start, end, steps, dtype=td).numpy(), f"linspace({start}, {end})")


@pytest.mark.parametrize(
    "start, end, steps, base", [(0, 2, 3, 10.0), (-2.5, 3.7, 50, 10.0), (0, 10, 11, 2.0), (1, -1, 9, 3.5)]
)
def test_logspace_matches_torch(start, end, steps, base):
    for dtype in ("float32", "float64", "float16", "bfloat16"):
        got = vkml.logspace(start, end, steps, base, dtype=getattr(vkml, dtype)).float().numpy()
        want = torch.logspace(start, end, steps, base, dtype=getattr(torch, dtype)).float().numpy()
        assert_same_bits(got, want, f"logspace{(start, end, steps, base)} of {dtype}")
    ints = vkml.logspace(0, 3, 4, dtype=vkml.int64).numpy()
    assert_same_bits(ints, torch.logspace(0, 3, 4, dtype=torch.int64).numpy(), "integer logspace")


def test_linspace_takes_one_element_tensors_and_requires_grad():
    x = vkml.linspace(vkml.tensor(0.0), vkml.tensor(2.0), 3, requires_grad=True)
    assert x.requires_grad and x.tolist() == [0.0, 1.0, 2.0]


def test_empty_is_zeros_with_torchs_shape_and_dtype():
    for got, want in (
        (vkml.empty(2, 3), torch.empty(2, 3)),
        (vkml.empty((4,), dtype=vkml.int32), torch.empty((4,), dtype=torch.int32)),
    ):
        assert got.shape == tuple(want.shape) and got.dtype.name == str(want.dtype).split(".")[1]
        assert not got.numpy().any()
    like = vkml.empty_like(vkml.ones(2, 2, dtype=vkml.float16))
    assert like.shape == (2, 2) and like.dtype is vkml.float16


def test_full_takes_every_dtype_like_torch():
    for value, dtype in ((True, None), (3, None), (2.5, None), (1, vkml.bool), (2.5, vkml.int32), (7, vkml.float16)):
        got = vkml.full((2, 2), value, dtype=dtype).numpy()
        want = torch.full((2, 2), value, dtype=None if dtype is None else DTYPES[dtype.name][1]).numpy()
        assert_same_bits(got, want, f"full {value} {dtype}")


# ---------------------------------------------------------------------- random: statistics, devices, seeds

N = 20000


def _sigmas(count: float, n: int, p: float) -> float:
    """How many standard deviations ``count`` lies from a binomial(n, p)'s mean."""
    return abs(count - n * p) / max(np.sqrt(n * p * (1 - p)), 1e-12)


def test_randint_range_dtype_and_uniformity():
    vkml.manual_seed(1)
    x = vkml.randint(-3, 4, (N,))
    assert x.dtype is vkml.int64 and x.shape == (N,)
    values = x.numpy()
    counts = np.bincount(values + 3, minlength=7)
    assert counts.size == 7, "values outside [-3, 4)"
    assert max(_sigmas(c, N, 1 / 7) for c in counts) < 5, counts
    assert vkml.randint(5, (2, 3)).shape == (2, 3)
    keywords = vkml.randint(high=3, size=(50,)).numpy()
    assert keywords.min() >= 0 and keywords.max() < 3
    assert vkml.randint(0, 2, (100,), dtype=vkml.float32).dtype is vkml.float32
    # every residue of a wide range: k mod n of a 48-bit k, not multiples of a 24-bit step
    wide = vkml.randint(-(2**35), 2**35 + 3, (N,)).numpy()
    assert wide.min() >= -(2**35) and wide.max() < 2**35 + 3 and abs(wide.mean() / 2**36) < 0.02
    assert max(_sigmas(c, N, 1 / 7) for c in np.bincount(wide % 7)) < 5
    assert max(_sigmas(c, N, 1 / 256) for c in np.bincount(wide % 256, minlength=256)) < 5
    vkml.manual_seed(3)
    torch.manual_seed(3)  # any int64 range, as PyTorch: word64 % range + low
    np.testing.assert_array_equal(vkml.randint(0, 2**41, (5,)).numpy(), torch.randint(0, 2**41, (5,)).numpy())
    # a range of exactly 2^24 values: each 24-bit k is its own value (the multiply-shift is exact)
    vkml.manual_seed(9)
    k = vkml.rand(64).numpy().astype(np.float64) * 2**24
    vkml.manual_seed(9)
    assert_same_bits(vkml.randint(0, 2**24, (64,)).numpy(), k.astype(np.int64), "randint over 2^24 values")
    like = vkml.randint_like(vkml.zeros(3, 2, dtype=vkml.int32), 10)
    assert like.dtype is vkml.int32 and like.shape == (3, 2) and 0 <= like.numpy().min() and like.numpy().max() < 10


def test_randperm_is_a_uniform_permutation():
    vkml.manual_seed(2)
    p = vkml.randperm(50)
    assert p.dtype is vkml.int64 and sorted(p.tolist()) == list(range(50))
    assert vkml.randperm(0).shape == (0,)
    firsts = np.array([vkml.randperm(4).tolist()[0] for _ in range(400)])
    assert max(_sigmas(c, 400, 0.25) for c in np.bincount(firsts, minlength=4)) < 5


def test_bernoulli_probability_and_dtype():
    vkml.manual_seed(3)
    p = vkml.tensor(np.array([0.0, 0.2, 0.5, 1.0], np.float32)).expand(N, 4)
    draws = vkml.bernoulli(p).numpy()
    assert draws.dtype == np.float32 and set(np.unique(draws)) <= {0.0, 1.0}
    assert draws[:, 0].sum() == 0 and draws[:, 3].sum() == N
    for col, prob in ((1, 0.2), (2, 0.5)):
        assert _sigmas(draws[:, col].sum(), N, prob) < 5
    fixed = vkml.bernoulli(vkml.zeros(N, dtype=vkml.float16), 0.3).numpy()
    assert fixed.dtype == np.float16 and _sigmas(fixed.astype(np.float64).sum(), N, 0.3) < 5


def test_normal_forms_statistics_and_gradient():
    vkml.manual_seed(4)
    x = vkml.normal(2.0, 3.0, (N,)).numpy()
    assert abs(x.mean() - 2.0) < 5 * 3 / np.sqrt(N) and abs(x.std() - 3.0) < 0.1
    mean = vkml.tensor(np.array([-5.0, 0.0, 5.0], np.float32)).expand(N, 3)
    y = vkml.normal(mean, 0.5).numpy()
    assert np.allclose(y.mean(0), [-5, 0, 5], atol=5 * 0.5 / np.sqrt(N)) and np.allclose(y.std(0), 0.5, atol=0.02)
    z = vkml.normal(1.0, vkml.full((N,), 2.0)).numpy()
    assert abs(z.mean() - 1.0) < 5 * 2 / np.sqrt(N)
    assert vkml.normal(vkml.zeros(2, 1), vkml.ones(3)).shape == (2, 3)
    m = vkml.zeros(4, requires_grad=True)
    vkml.normal(m, 1.0).sum().backward()
    assert m.grad.tolist() == [1.0] * 4


def test_multinomial_with_replacement_follows_the_weights():
    vkml.manual_seed(5)
    w = np.array([1.0, 0.0, 3.0, 6.0], np.float32)
    draws = vkml.multinomial(vkml.tensor(w), N, replacement=True)
    assert draws.dtype is vkml.int64 and draws.shape == (N,)
    counts = np.bincount(draws.numpy(), minlength=4)
    assert counts[1] == 0
    assert max(_sigmas(c, N, p) for c, p in zip(counts, w / w.sum())) < 5, counts
    assert vkml.multinomial(vkml.ones(3, 5), 7, True).shape == (3, 7)


def test_multinomial_without_replacement_is_a_weighted_draw_of_distinct_categories():
    vkml.manual_seed(6)
    w = np.array([1.0, 0.0, 3.0, 6.0], np.float32)
    rows = vkml.multinomial(vkml.tensor(np.tile(w, (4000, 1))), 3).numpy()
    assert rows.shape == (4000, 3)
    assert all(len(set(r)) == 3 and 1 not in r for r in rows.tolist())
    first = np.bincount(rows[:, 0], minlength=4)
    assert max(_sigmas(c, 4000, p) for c, p in zip(first, w / w.sum())) < 5, first
    assert sorted(vkml.multinomial(vkml.ones(6), 6).tolist()) == list(range(6))


RANDOM = [
    ("randint", lambda g, d: vkml.randint(3, 90, (5, 7), generator=g, device=d)),
    ("randint wide", lambda g, d: vkml.randint(-(2**35), 2**35, (40,), generator=g, device=d)),
    ("randperm", lambda g, d: vkml.randperm(33, generator=g, device=d)),
    ("bernoulli", lambda g, d: vkml.bernoulli(vkml.full((9, 4), 0.4, device=d), generator=g)),
    ("normal", lambda g, d: vkml.normal(vkml.zeros(30, device=d), vkml.ones(30, device=d), generator=g)),
    ("normal float", lambda g, d: vkml.normal(1.0, 2.0, (30,), generator=g, device=d)),
    ("multinomial", lambda g, d: vkml.multinomial(vkml.ones(3, 6, device=d), 10, True, generator=g)),
    ("multinomial no replacement", lambda g, d: vkml.multinomial(vkml.ones(3, 6, device=d), 4, generator=g)),
]


@pytest.mark.parametrize("name, draw", RANDOM, ids=[r[0] for r in RANDOM])
def test_random_ops_same_bits_on_every_device_and_seed(name, draw, gpu):
    cpu = draw(vkml.Generator(7), "cpu").numpy()
    assert_same_bits(draw(vkml.Generator(7), gpu).numpy(), cpu, f"{name} on {gpu.name}")
    assert_same_bits(draw(vkml.Generator(7), "cpu").numpy(), cpu, f"{name} with the same seed again")
    g = vkml.Generator(7)
    draw(g, "cpu")
    assert (draw(g, "cpu").numpy() != cpu).any(), f"{name}: the next draw repeats the first"


ERRORS = [
    ("eye negative", lambda L: L.eye(-1), "got -1"),
    ("linspace steps", lambda L: L.linspace(0, 1, -1), "non-negative"),
    ("randint order", lambda L: L.randint(5, 3, (2,)), "from=5 >= to=3"),
    ("randperm negative", lambda L: L.randperm(-1), "negative dimension"),
    ("multinomial too many", lambda L: L.multinomial(L.ones(2), 3), "without replacement"),
    ("multinomial 3-D", lambda L: L.multinomial(L.ones(2, 2, 2), 1), "1 or 2 dim"),
    ("multinomial zero samples", lambda L: L.multinomial(L.ones(2), 0), "n_sample <= 0"),
    ("normal std", lambda L: L.normal(0.0, -1.0, (2,)), "std -1"),
    ("bernoulli p", lambda L: L.bernoulli(L.ones(2), 1.5), ""),
]


@pytest.mark.parametrize("name, call, words", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_like_torch(name, call, words):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(type(want.value)) as got:
        call(vkml)
    assert words in str(got.value), f"{name}: {got.value!r} lacks {words!r} (torch: {want.value})"


def test_eye_and_linspace_on_vulkan_match_cpu(gpu):
    for make in (lambda d: vkml.eye(3, 4, device=d), lambda d: vkml.linspace(-1, 1, 9, device=d),
                 lambda d: vkml.logspace(0, 1, 5, device=d)):  # fmt: skip
        assert_same_bits(make(gpu).numpy(), make("cpu").numpy(), "creation on vulkan")
