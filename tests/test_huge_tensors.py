"""Tensors of 2^31 elements and more: 64-bit element counts, offsets and reduction indices.

A kernel whose shapes, views or element counts reach 2^31 does its index arithmetic in int64
(``vkml.kernels.index.needs_wide_index``); smaller kernels keep uint32. Broadcast views cost no
memory, so tensors of billions of elements are cheap to build here. Reading a few of their
elements is cheap too; reducing all of them takes seconds on lavapipe and minutes in the CPU
interpreter, so the full-size reductions on CPU run under ``-m stress``.

Oracles: integers are exact; a float32 sum follows the contract's tree (DESIGN.md §4),
emulated by ``tree_sum`` below (PyTorch gives the same value for these inputs: 6442450944.0
for 2^32 + 5 copies of 1.5, 4.9e9 for 70000² ones); argmax is PyTorch's first index of the max.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import vkml
from vkml import debug
from vkml.ir import types as T
from vkml.kernels import index as kernels_index
from vkml.kernels.matmul import coopmat as kernels_matmul_coopmat
from vkml.schedule import scheduler as schedule

HUGE = 2**32 + 5
TAIL_INT = [5, -2, 7, 0, 7]  # the elements after 2^32 ones: the max comes first at 2^32 + 2
TAIL_FLOAT = [3.0, -1.0, 3.5, 0.5, 3.5]


def tree_sum(values: np.ndarray) -> np.float32:
    """The contract's tree in float32: neighbours paired level by level, an odd tail carried up."""
    level = np.asarray(values, np.float32)
    while level.size > 1:
        pairs = level.size // 2
        summed = level[0 : 2 * pairs : 2] + level[1 : 2 * pairs : 2]
        level = np.concatenate([summed, level[-1:]]) if level.size % 2 else summed
    return level[0]


@functools.cache
def tree_sum_of_copies(value: float, n: int) -> np.float32:
    """``tree_sum`` of ``n`` copies of ``value`` without materializing them: the tree splits ``n``
    at the largest power of two below it, and equal subtrees have equal sums."""
    if n == 1:
        return np.float32(value)
    half = 1 << ((n - 1).bit_length() - 1)
    return np.float32(tree_sum_of_copies(value, half) + tree_sum_of_copies(value, n - half))


def tree_sum_of_run_and_tail(value: float, run: int, tail: list[float]) -> np.float32:
    """``tree_sum`` of ``run`` (a power of two, larger than the tail) copies of ``value``, then ``tail``."""
    assert run & (run - 1) == 0 and len(tail) < run
    return np.float32(tree_sum_of_copies(value, run) + tree_sum(np.float32(tail)))


def test_the_tree_oracles_agree_with_the_plain_tree():
    for n in (1, 2, 3, 5, 8, 1000, 4097):
        assert tree_sum_of_copies(1.5, n) == tree_sum(np.full(n, 1.5, np.float32)), n
        assert tree_sum_of_copies(0.1, n) == tree_sum(np.full(n, 0.1, np.float32)), n
    values = np.concatenate([np.full(1024, 0.1, np.float32), np.float32(TAIL_FLOAT)])
    assert tree_sum_of_run_and_tail(0.1, 1024, TAIL_FLOAT) == tree_sum(values)
    # The float32 sum of 70000 * 70000 ones that the CPU backend got wrong (1440686336.0):
    assert tree_sum_of_copies(1.0, 70000 * 70000) == np.float32(4.9e9)


def _cat_of_ones_and_tail(device, dtype):
    """2^32 ones (1.5 for float32) then a short tail, built from a broadcast: 2^32 + 5 elements, no memory."""
    tail = TAIL_INT if dtype is vkml.int64 else TAIL_FLOAT
    ones = vkml.tensor([1 if dtype is vkml.int64 else 1.5], dtype=dtype, device=device).expand(2**32)
    return vkml.cat([ones, vkml.tensor(tail, dtype=dtype, device=device)])


def _check_reductions_of_a_broadcast(device):
    assert vkml.tensor([1], device=device).expand(HUGE).sum().item() == HUGE  # the finding: 268435402
    x = vkml.tensor([1.5], device=device).expand(HUGE)
    total = tree_sum_of_copies(1.5, HUGE)
    assert np.float32(x.sum().item()) == total
    assert np.float32(x.mean().item()) == total / np.float32(HUGE)  # PyTorch's sum / n in float32
    assert x.amax().item() == 1.5
    assert x.argmax().item() == 0  # all equal: PyTorch's first index


def _check_the_first_max_past_2_to_the_32(device, everything: bool):
    x = _cat_of_ones_and_tail(device, vkml.int64)
    assert x.shape == (HUGE,)
    assert x.argmax().item() == 2**32 + 2  # the first of the two maxima, as PyTorch
    if not everything:
        return
    assert x.sum().item() == 2**32 + sum(TAIL_INT)
    assert x.amax().item() == 7
    f = _cat_of_ones_and_tail(device, vkml.float32)
    total = tree_sum_of_run_and_tail(1.5, 2**32, TAIL_FLOAT)
    assert np.float32(f.sum().item()) == total
    assert np.float32(f.mean().item()) == total / np.float32(HUGE)
    assert f.amax().item() == 3.5
    assert f.argmax().item() == 2**32 + 2


def test_reductions_of_a_broadcast_of_2_to_the_32_plus_5_on_vulkan(gpu):
    _check_reductions_of_a_broadcast(gpu)


def test_argmax_past_2_to_the_32_on_vulkan(gpu):
    _check_the_first_max_past_2_to_the_32(gpu, everything=False)


@pytest.mark.stress
def test_reductions_past_2_to_the_32_on_vulkan_in_full(gpu):
    _check_the_first_max_past_2_to_the_32(gpu, everything=True)


@pytest.mark.stress
def test_reductions_of_a_broadcast_of_2_to_the_32_plus_5_on_cpu():
    _check_reductions_of_a_broadcast("cpu")


@pytest.mark.stress
def test_reductions_past_2_to_the_32_on_cpu():
    _check_the_first_max_past_2_to_the_32("cpu", everything=True)


@pytest.mark.stress
def test_float32_sum_of_70000_squared_ones_follows_the_tree_on_cpu():
    x = vkml.ones(70000, 70000)  # lazy: the reduction computes its ones, nothing is allocated
    total = tree_sum_of_copies(1.0, 70000 * 70000)
    assert np.float32(x.sum().item()) == total  # was 1440686336.0
    assert np.float32(x.mean().item()) == total / np.float32(70000 * 70000)  # was 0.294


# ---------------------------------------------------------------- cheap: views whose offsets pass 2^32


@pytest.fixture(params=["cpu", "vulkan"])
def device(request):
    return vkml.device("cpu") if request.param == "cpu" else request.getfixturevalue("gpu")


def _periodic(device):
    """0 1 2 … 6 0 1 … over 7 · 2^30 elements (a broadcast reshaped: element i is i % 7), and its indices."""
    flat = vkml.tensor(np.arange(7), device=device).expand(2**30, 7).reshape(-1)
    return flat, 7 * 2**30


def test_the_last_elements_of_a_view_past_2_to_the_32(device):
    flat, n = _periodic(device)
    expected = np.arange(n - 6, n) % 7
    assert flat[-6:].numpy().tolist() == expected.tolist()
    assert (flat[-6:].float() * 2).numpy().tolist() == (expected * 2.0).tolist()
    assert flat[-6:].sum().item() == expected.sum()
    assert flat[-6:].argmax().item() == int(np.argmax(expected))


def test_reductions_of_rows_past_2_to_the_32(device):
    flat, n = _periodic(device)
    rows = flat.reshape(n // 8, 8)[-3:]
    expected = (np.arange(n - 24, n) % 7).reshape(3, 8)
    assert rows.numpy().tolist() == expected.tolist()
    assert rows.sum(0).numpy().tolist() == expected.sum(0).tolist()
    assert rows.sum(1).numpy().tolist() == expected.sum(1).tolist()
    assert rows.argmax(1).numpy().tolist() == expected.argmax(1).tolist()
    assert rows.amax(0).numpy().tolist() == expected.max(0).tolist()


def test_row_and_column_kernels_past_2_to_the_32_match_a_small_copy(device):
    # Layout never changes a result (DESIGN.md §4): the same values in a small contiguous tensor
    # are the oracle, bit for bit, for softmax's and layer norm's row kernels and column sums.
    flat, n = _periodic(device)
    flat = flat.float()
    for width, count in ((1024, 2), (64, 40)):
        rows = flat.reshape(n // width, width)[-count:]
        values = (np.arange(n - width * count, n) % 7).astype(np.float32).reshape(count, width)
        copy = vkml.tensor(values, device=device)
        for fn in (
            lambda t: vkml.softmax(t, dim=-1),
            lambda t: vkml.nn.functional.layer_norm(t, t.shape[-1:]),
            lambda t: t.sum(0),
            lambda t: t.argmax(0),
        ):
            assert fn(rows).numpy().tobytes() == fn(copy).numpy().tobytes()


def _matmul_of_a_view_past_2_to_the_32(device, dtype):
    """(the last 64 rows of 64 of the periodic view) @ b, and the same product of a small copy."""
    flat, n = _periodic(device)
    a = flat.to(dtype).reshape(n // 64, 64)[-64:]
    a_copy = vkml.tensor((np.arange(n - 4096, n) % 7).reshape(64, 64), dtype=dtype, device=device)
    b = vkml.tensor(np.random.default_rng(64).standard_normal((64, 48)), dtype=dtype, device=device)
    return (a @ b).numpy(), (a_copy @ b).numpy()


def test_matmul_of_a_view_past_2_to_the_32(device):
    got, expected = _matmul_of_a_view_past_2_to_the_32(device, vkml.float32)
    assert got.tobytes() == expected.tobytes()


def test_a_64_bit_matmul_takes_scalar_tiles_where_cooperative_matrices_would_apply(monkeypatch):
    # The cooperative-matrix templates address in 32 bits; the CPU interpreter runs them for float16
    # once ``applies`` says so (as tests/test_matmul_coopmat.py does).
    monkeypatch.setattr(kernels_matmul_coopmat, "applies", lambda features, a, b: a is T.float16 is b)
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    schedule.clear_template_cache()
    try:
        got, expected = _matmul_of_a_view_past_2_to_the_32("cpu", vkml.float16)
    finally:
        debug.kernel_listeners.pop()
        schedule.clear_template_cache()
    assert np.abs(got.astype(np.float32) - expected.astype(np.float32)).max() <= 0.25  # float16 results
    products = [n.split("_")[0] for n in names if n.startswith("MM")]
    assert products == ["MM", "MMC"], names  # the view's product on scalar tiles, the small copy's on matrices


def test_int64_sums_of_counts_past_2_to_the_24_are_exact(device):
    n = 2**25 + 3
    assert vkml.ones(n, dtype=vkml.int64, device=device).sum().item() == n
    assert vkml.tensor([True], device=device).expand(n).sum().item() == n


def test_only_kernels_that_need_it_index_in_64_bits():
    small = vkml.ones(1000, 1000).sum(1)
    assert not kernels_index.needs_wide_index(small.node, set())
    assert kernels_index.needs_wide_index(vkml.ones(2**31).sum().node, set())
    assert kernels_index.needs_wide_index(_periodic("cpu")[0][-6:].node, set())  # 6 elements, offsets past 2^32
    with kernels_index.index_arithmetic(wide=True):
        assert kernels_index.index_dtype() is T.int64
    assert kernels_index.index_dtype() is T.uint32


# ---------------------------------------------------------------- sizes that cannot be held


@pytest.mark.parametrize(
    "op, make",
    [
        ("ones", lambda d: vkml.ones(2**40, 2**10, device=d)),
        ("zeros", lambda d: vkml.zeros(2**50, dtype=vkml.int64, device=d)),
        ("full", lambda d: vkml.full((2**45,), 3.0, device=d)),
        ("arange", lambda d: vkml.arange(2**50, device=d)),
        ("ones_like", lambda d: vkml.ones_like(vkml.tensor([1], device=d).expand(2**61))),
        ("zeros_like", lambda d: vkml.zeros_like(vkml.tensor([1.0], device=d).expand(2**40, 2))),
        ("full_like", lambda d: vkml.full_like(vkml.tensor([True], device=d).expand(2**50), False)),
        ("rand", lambda d: vkml.rand(2**31 - 1, 2**16, device=d)),
        ("randn", lambda d: vkml.randn(2**31 - 1, 2**16, dtype=vkml.float16, device=d)),
        ("tensor", lambda d: vkml.tensor(np.broadcast_to(np.float32(1), (2**50,)), device=d)),
    ],
)
def test_creation_past_the_devices_memory_raises_out_of_memory(device, op, make):
    with pytest.raises(vkml.OutOfMemoryError, match=rf"^{op}\(\): a \(\d+(, \d+)?,?\) \w+ tensor needs \d+ bytes"):
        make(device)


def test_views_past_2_to_the_32_elements_need_no_memory(device):
    x = vkml.tensor([2.0], device=device).expand(2**40)
    assert x.shape == (2**40,) and x[-2:].numpy().tolist() == [2.0, 2.0]


def test_tensor_takes_past_2_to_the_32_elements_where_memory_allows(gpu):
    # tensor() used to refuse 2^32 elements whatever their size in bytes (ValueError); now the
    # limit is the device's: 4 GiB of bool is more than lavapipe's largest allocation (2 GiB).
    assert gpu.largest_allocation_nbytes < 2**32
    with pytest.raises(vkml.OutOfMemoryError, match=r"tensor\(\): a \(4294967296,\) bool tensor needs 4294967296"):
        vkml.tensor(np.broadcast_to(np.True_, (2**32,)), device=gpu)


def test_a_cpu_allocation_numpy_refuses_is_out_of_memory():
    with pytest.raises(vkml.OutOfMemoryError, match=r"cpu: cannot allocate 2305843009213693952 float32 elements"):
        vkml.device("cpu").allocate(T.float32, 2**61)
