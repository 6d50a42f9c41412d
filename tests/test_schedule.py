"""Fusion rules of vkml/schedule/scheduler.py, pinned by counting dispatches (CPU backend)."""

import numpy as np
import pytest

import vkml
from vkml import debug


def _dispatches(*tensors) -> int:
    debug.reset_counters()
    vkml.realize(*tensors)
    c = debug.counters()
    assert c["submissions"] == 1
    return c["dispatches"]


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request):
    """Both backends must count dispatches and submissions the same way."""
    return vkml.device("cpu") if request.param == "cpu" else vkml.best_device()


def test_elementwise_chain_with_broadcast_is_one_dispatch(rng, dev):
    a = vkml.tensor(rng.standard_normal((64, 33), dtype=np.float32), device=dev)
    b = vkml.tensor(rng.standard_normal((33,), dtype=np.float32), device=dev)
    y = a
    for i in range(8):
        y = (y * b + float(i)) if i % 2 else vkml.maximum(y, b) - 0.5
    assert _dispatches(y) == 1
    expected = a.numpy()
    for i in range(8):
        expected = (
            (expected * b.numpy() + np.float32(i)) if i % 2 else np.maximum(expected, b.numpy()) - np.float32(0.5)
        )
    assert np.array_equal(y.numpy(), expected.astype(np.float32))


def test_reduction_fuses_producers_and_consumers(rng, dev):
    a = vkml.tensor(rng.standard_normal((16, 100), dtype=np.float32), device=dev)
    b = vkml.tensor(rng.standard_normal((16, 100), dtype=np.float32), device=dev)
    y = (a * b).sum(dim=1) * 2
    assert _dispatches(y) == 1


def test_movement_ops_add_no_dispatch(rng, dev):
    a = vkml.tensor(rng.standard_normal((8, 6, 4), dtype=np.float32), device=dev)
    y = (a.permute(2, 0, 1)[1:, ::2].flip(0).reshape(3, -1) + 1).T
    assert _dispatches(y) == 1
    expected = np.ascontiguousarray(a.numpy().transpose(2, 0, 1)[1:, ::2][::-1]).reshape(3, -1) + 1
    assert np.array_equal(y.numpy(), expected.T)


def test_realize_of_several_tensors_is_one_submission(rng, dev):
    a = vkml.tensor(rng.standard_normal((10, 10), dtype=np.float32), device=dev)
    b, c, d = a + 1, a.sum(0), (a * 3).amax(1)
    debug.reset_counters()
    vkml.realize(b, c, d)
    assert debug.counters()["submissions"] == 1
    assert debug.counters()["dispatches"] == 3


def test_long_reduction_takes_one_dispatch_per_pass_and_keeps_the_tree(dev):
    n = 5000  # > one block of 256: two passes
    x = vkml.tensor(np.full(n, -0.0, dtype=np.float32), device=dev)
    s = x.sum()
    assert _dispatches(s) == 2
    assert np.signbit(s.item())  # the identity never enters: a sum of -0.0 stays -0.0


def test_shared_cheap_node_is_recomputed_and_expensive_one_computed_once(rng, dev):
    a = vkml.tensor(rng.standard_normal((32,), dtype=np.float32), device=dev)
    cheap = a + 1
    assert _dispatches(cheap * 2, cheap * 3) == 2  # both inline `cheap`
    expensive = a
    for _ in range(20):
        expensive = expensive * 1.5 + 0.25
    assert _dispatches(expensive * 2, expensive * 3) == 3  # expensive is computed once


# At least SPLIT_MIN_CHUNKS (4) chunks of the rows kernel on the CPU (4096), lavapipe (2048) and the H200 (8192),
# so that 40 such rows split on every device (10000 split on lavapipe alone).
LONG_ROW = 40000


def test_reduction_seen_through_a_broadcast_is_realized_first(rng, dev):
    x = vkml.tensor(rng.standard_normal((40, LONG_ROW), dtype=np.float32), device=dev)
    y = x - x.amax(dim=1, keepdim=True)
    assert _dispatches(y) == 3  # the amax's own kernels (40 long rows: split, two passes), then the difference


def test_short_rows_and_their_broadcast_reduction_are_one_dispatch(rng, dev):
    x = vkml.tensor(rng.standard_normal((4, 50), dtype=np.float32), device=dev)
    y = x - x.amax(dim=1, keepdim=True)
    assert _dispatches(y) == 1  # rule 7: the row fits one chunk
    assert np.array_equal(y.numpy(), x.numpy() - x.numpy().max(1, keepdims=True))


def test_same_tensor_on_both_sides_of_matmul():
    # Regression: a memo keyed by id() of temporary index objects returned a stale value.
    x = vkml.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (x @ x).tolist() == [[7.0, 10.0], [15.0, 22.0]]


def test_fused_equals_eager(rng):
    a_np = rng.standard_normal((12, 40), dtype=np.float32)
    b_np = rng.standard_normal((40,), dtype=np.float32)

    def graph(a, b):
        h = vkml.maximum(a * b, a - 1.0)
        r = (h / 3.0).sum(dim=1, keepdim=True)
        return (h.flip(1)[:, 1::2] * r).amin(dim=0) + h.T.sum(1)[::2]

    lazy = graph(vkml.tensor(a_np), vkml.tensor(b_np)).numpy()
    vkml.set_eager(True)
    try:
        eager = graph(vkml.tensor(a_np), vkml.tensor(b_np)).numpy()
    finally:
        vkml.set_eager(False)
    assert np.array_equal(lazy.view(np.uint32), eager.view(np.uint32))


def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dim=-1, keepdim=True)
    return xc / vkml.sqrt(var + eps) * w + b


def _eager(fn, *arrays, dev):
    vkml.set_eager(True)
    try:
        return fn(*(vkml.tensor(a, device=dev) for a in arrays)).numpy()
    finally:
        vkml.set_eager(False)


def _same_bits(a, b) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("cols, expected", [(200, 1), (LONG_ROW, 2)])
def test_softmax_dispatches_and_matches_unfused(rng, dev, cols, expected):
    """Rows in one chunk: one kernel (rule 7), exp computed once; longer rows: max and sum, then the quotient."""
    x_np = rng.standard_normal((16, cols), dtype=np.float32)
    y = vkml.softmax(vkml.tensor(x_np, device=dev), dim=1)
    assert _dispatches(y) == expected
    assert _same_bits(y.numpy(), _eager(lambda t: vkml.softmax(t, dim=1), x_np, dev=dev))


@pytest.mark.parametrize("cols, expected", [(200, 1), (LONG_ROW, 2)])
def test_layer_norm_dispatches_and_matches_unfused(rng, dev, cols, expected):
    x, w, b = (rng.standard_normal(shape, dtype=np.float32) for shape in ((8, cols), (cols,), (cols,)))

    def layer_norm(*ts):
        return vkml.nn.functional.layer_norm(ts[0], (cols,), ts[1], ts[2])

    y = layer_norm(*(vkml.tensor(a, device=dev) for a in (x, w, b)))
    assert _dispatches(y) == expected
    assert _same_bits(y.numpy(), _eager(layer_norm, x, w, b, dev=dev))
    import torch

    ref = torch.nn.functional.layer_norm(torch.tensor(x), (cols,), torch.tensor(w), torch.tensor(b))
    assert np.allclose(y.numpy(), ref.numpy(), atol=2e-5)


def test_layer_norm_written_out_is_at_most_two_dispatches(rng, dev):
    x = vkml.tensor(rng.standard_normal((8, 300), dtype=np.float32), device=dev)
    w = vkml.tensor(rng.standard_normal((300,), dtype=np.float32), device=dev)
    b = vkml.tensor(rng.standard_normal((300,), dtype=np.float32), device=dev)
    y = _layer_norm(x, w, b)  # division by sqrt: rstd is not computed on its own
    assert _dispatches(y) <= 2
    import torch

    ref = torch.nn.functional.layer_norm(
        torch.tensor(x.numpy()), (300,), torch.tensor(w.numpy()), torch.tensor(b.numpy())
    )
    assert np.allclose(y.numpy(), ref.numpy(), atol=2e-5)


def test_a_row_result_read_at_another_row_is_not_shared(rng, dev):
    # Regression: rule 3 shared the max through a flip of the rows, so each row used another row's max.
    x_np = rng.standard_normal((6, 40), dtype=np.float32)
    x = vkml.tensor(x_np, device=dev)
    m = x.amax(1, keepdim=True)
    s = (x - m).flip(0).sum(1)
    y = (x - m).flip(0) + (x - m)
    expected = x_np - x_np.max(1, keepdims=True)
    assert np.array_equal(s.numpy(), vkml.tensor(expected[::-1].copy(), device=dev).sum(1).numpy())
    assert np.array_equal(y.numpy(), expected[::-1] + expected)


def test_linear_relu_is_one_dispatch(rng, dev):
    x = vkml.tensor(rng.standard_normal((32, 20), dtype=np.float32), device=dev)
    w = vkml.tensor(rng.standard_normal((20, 16), dtype=np.float32), device=dev)
    b = vkml.tensor(rng.standard_normal((16,), dtype=np.float32), device=dev)
    assert _dispatches(vkml.relu(x @ w + b)) == 1


def test_chain_of_eight_ops_on_2_20_elements_is_one_dispatch(dev):
    a = vkml.ones(1 << 20, device=dev)
    b = vkml.full((1 << 20,), 0.5, device=dev)
    y = a
    for op in (vkml.add, vkml.mul, vkml.sub, vkml.maximum, vkml.add, vkml.mul, vkml.minimum, vkml.sub):
        y = op(y, b)
    assert _dispatches(y) == 1


def test_rebuilding_the_same_graph_reuses_lowered_kernels(rng):
    from vkml.schedule import scheduler as schedule

    x_np = rng.standard_normal((4, 50), dtype=np.float32)
    kernels = []
    for step in range(3):
        x = vkml.tensor(x_np)
        y = (vkml.softmax(x * float(step + 1), dim=1) + step).sum()
        plan = schedule.Plan([y.node])
        dispatches, _, _ = schedule.lower(plan)
        kernels.append([d.kernel for d in dispatches])
        assert y.item() == pytest.approx(4.0 * (1 + 50 * step), rel=1e-5)
    assert all(a is b for a, b in zip(kernels[0], kernels[2]))  # new constants, same kernels


def test_kernels_sharing_a_row_reduction_are_ordered_by_dependency(rng):
    x = vkml.tensor(rng.standard_normal((6, 40), dtype=np.float32))
    m = x.amax(dim=1, keepdim=True)
    centred = x - m  # needs m, which the softmax kernel below writes
    s = vkml.exp(centred).sum(dim=1, keepdim=True)
    vkml.realize(centred, s, m)
    expected = x.numpy() - x.numpy().max(1, keepdims=True)
    assert np.array_equal(centred.numpy(), expected)


def test_barriers_only_between_dependent_dispatches():
    gpu = vkml.best_device()
    x = vkml.tensor(np.arange(64, dtype=np.float32).reshape(8, 8), device=gpu)
    debug.reset_counters()
    vkml.realize(x.sum(0), x.amax(1), x * 2)  # three independent kernels
    assert debug.counters()["dispatches"] == 3 and debug.counters()["barriers"] == 0
    debug.reset_counters()
    long_rows = vkml.tensor(np.ones((40, LONG_ROW), dtype=np.float32), device=gpu)
    vkml.softmax(long_rows, dim=1).realize()  # each kernel reads what the one before wrote
    # 40 long rows are split (rule 6): the max's two passes, the sum's two, then the quotient
    assert debug.counters()["dispatches"] == 5 and debug.counters()["barriers"] == 4


def test_scalars_past_the_parameter_budget_are_baked_in_rounded(dev):
    # Regression: a baked constant that float32 cannot represent exactly (1/0.9) was refused.
    x = vkml.ones(4, device=dev)
    y = x
    for i in range(30):
        y = y * (1 / 0.9) + float(i)
    expected = np.ones(4, dtype=np.float32)
    for i in range(30):
        expected = expected * np.float32(1 / 0.9) + np.float32(i)
    assert np.array_equal(y.numpy(), expected)


def test_a_chain_of_thousands_of_ops_realizes():
    # Regression: lowering recursed once per op and hit Python's recursion limit at ~1,000 ops.
    x = vkml.ones(8)
    y = x
    for _ in range(3000):
        y = y * 1.0 + 0.5
    assert y.sum().item() == 8 * (1 + 0.5 * 3000)


def test_softmax_backward_over_short_rows_is_one_dispatch(rng, dev, monkeypatch):
    """y * (g - sum(g * y)): the sum and the gradient of the row in one kernel (rule 7), as torch computes it."""
    import torch

    monkeypatch.setenv("VKML_BACKWARD_RUNS", "lazy")  # the gradient's graph as one realize sees it

    x_np, g_np = (rng.standard_normal((8, 100), dtype=np.float32) for _ in range(2))
    x = vkml.tensor(x_np, device=dev, requires_grad=True)
    vkml.softmax(x, dim=1).backward(vkml.tensor(g_np, device=dev))
    assert _dispatches(x.grad) == 1
    tx = torch.tensor(x_np, requires_grad=True)
    torch.softmax(tx, 1).backward(torch.tensor(g_np))
    assert np.allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-6)


def test_float16_softmax_over_short_rows_is_one_dispatch_and_matches_unfused(rng, dev):
    x_np = (rng.standard_normal((6, 120)) * 3).astype(np.float16)
    y = vkml.softmax(vkml.tensor(x_np, device=dev), dim=1)
    assert _dispatches(y) == 1
    want = _eager(lambda t: vkml.softmax(t, dim=1), x_np, dev=dev)
    assert y.numpy().dtype == np.float16 and np.array_equal(y.numpy().view(np.uint16), want.view(np.uint16))


def test_a_row_kernel_never_loads_what_is_computed_from_its_own_results(rng, dev):
    # Regression: layer norm's output took the mean into its kernel (rule 7) while loading
    # rsqrt(var + eps), realized for another reader and computed from that mean: a cycle of kernels.
    x_np = rng.standard_normal((6, 40), dtype=np.float32)
    x = vkml.tensor(x_np, device=dev)
    centred = x - x.mean(1, keepdim=True)
    rstd = vkml.rsqrt((centred * centred).mean(1, keepdim=True) + 1e-5)
    y, other = centred * rstd, (x * rstd).flip(0)  # the flip reads rstd at other rows: realized first
    vkml.realize(y, other)
    c = x_np - x_np.mean(1, keepdims=True)
    rstd_np = 1 / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5)
    assert np.allclose(y.numpy(), c * rstd_np, atol=1e-5)
    assert np.allclose(other.numpy(), (x_np * rstd_np)[::-1], atol=1e-5)
