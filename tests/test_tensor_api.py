"""Tensor attributes and small methods (vkml/frontend/tensor_api.py) against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def test_sizes_and_type_names():
    for dtype, tdtype in (
        (vkml.float32, torch.float32),
        (vkml.float16, torch.float16),
        (vkml.int64, torch.int64),
        (vkml.bool, torch.bool),
        (vkml.int32, torch.int32),
    ):
        x, t = vkml.zeros(2, 3, dtype=dtype), torch.zeros(2, 3, dtype=tdtype)
        assert (x.element_size(), x.itemsize, x.nbytes) == (t.element_size(), t.itemsize, t.nbytes)
        assert (x.ndimension(), x.nelement()) == (t.ndimension(), t.nelement())
        assert x.type() == t.type().replace("torch.", "vkml.")
    x = vkml.tensor([1.5, -2.5])
    assert x.type("torch.LongTensor").dtype is vkml.int64 and x.type(vkml.int64).tolist() == [1, -2]
    assert x.type("torch.FloatTensor") is x  # a cuda type name moves it: test_classic_program_idioms.py
    assert x.type_as(vkml.zeros(1, dtype=vkml.int32)).tolist() == [1, -2]
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NoSuchTensor")
    assert x.is_floating_point() and not x.long().is_floating_point() and not x.is_complex() and not x.is_sparse
    assert x.share_memory_() is x and not x.is_pinned()


def test_new_constructors_take_the_tensors_dtype_and_device(dev):
    x = vkml.tensor([1, 2], dtype=vkml.int32, device=dev)
    t = torch.tensor([1, 2], dtype=torch.int32)
    for name, args in (("new_zeros", (2, 3)), ("new_ones", ((4,),)), ("new_empty", (0, 2))):
        got, want = getattr(x, name)(*args), getattr(t, name)(*args)
        assert got.shape == tuple(want.shape) and got.dtype is vkml.int32 and got.device is dev
        if name != "new_empty":
            assert np.array_equal(got.numpy(), want.numpy())
    full = x.new_full((2,), 7, dtype=vkml.float32)
    assert full.dtype is vkml.float32 and full.tolist() == [7.0, 7.0]
    made = x.new_tensor([[1.5, 2.5]])
    assert made.dtype is vkml.int32 and made.tolist() == [[1, 2]] and made.device is dev
    grad = vkml.zeros(1).new_ones(3, requires_grad=True)
    assert grad.requires_grad and grad.is_leaf
    with pytest.raises(TypeError, match="size"):
        x.new_zeros(2.5)


VIEWS = {
    "whole": lambda t: t,
    "transpose": lambda t: t.transpose(0, 2),
    "slice": lambda t: t[1:, :, 1:3],
    "step": lambda t: t[:, ::2],
    "select": lambda t: t[1],
    "expand": lambda t: t[:, :1].expand(2, 5, 4),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "reshape": lambda t: t.reshape(6, 4),
    "permuted slice": lambda t: t.permute(2, 0, 1)[1:3],
    "size-1 dims": lambda t: t[:1, 1:2],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_strides_offsets_and_contiguity_are_pytorchs(name):
    make = VIEWS[name]
    got, want = make(vkml.tensor(A)), make(torch.from_numpy(A))
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.is_contiguous() == want.is_contiguous()
    if got.ndim:
        assert got.stride(-1) == want.stride(-1)


def test_conjugate_transposes_of_real_tensors():
    x = vkml.tensor(A[0])
    assert np.array_equal(x.H.numpy(), A[0].T) and np.array_equal(vkml.tensor(A).mH.numpy(), A.transpose(0, 2, 1))
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        _ = vkml.tensor(A).H


def test_small_composites_give_pytorchs_bits(dev):
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal((5, 7)).astype(np.float32) for _ in range(3))
    x, y, z = (vkml.tensor(v, device=dev) for v in (a, b, c))
    tx, ty, tz = (torch.from_numpy(v) for v in (a, b, c))
    # addcmul: PyTorch's kernels fuse the product into the sum (one rounding); vkml rounds the
    # product first, so it may differ by half an ulp of the product (stated in its docstring).
    for value in (0.3, 1):
        got, want = vkml.addcmul(x, y, z, value=value).numpy(), torch.addcmul(tx, ty, tz, value=value).numpy()
        product = np.abs(np.float32(value) * b * c)
        assert np.all(np.abs(got - want) <= np.spacing(product) / 2 + np.spacing(np.abs(want)))
    # rsub with alpha: PyTorch fuses alpha * x into the difference too (as its add and sub do).
    got, want = vkml.rsub(x, 2.0, alpha=3).numpy(), torch.rsub(tx, 2.0, alpha=3).numpy()
    assert np.all(np.abs(got - want) <= np.spacing(np.abs(3 * a)) / 2 + np.spacing(np.abs(want)))
    # A sum: vkml's reduction tree (docs/ops/sum.md), not PyTorch's order.
    assert np.allclose(x.sum_to_size(1, 7).numpy(), tx.sum_to_size(1, 7).numpy(), rtol=1e-6, atol=1e-6)
    cases = [
        (vkml.addcdiv(x, y, z, value=-1.7), torch.addcdiv(tx, ty, tz, value=-1.7)),
        (vkml.clamp_min(x, 0.1), torch.clamp_min(tx, 0.1)),
        (vkml.clamp_max(x, -0.1), torch.clamp_max(tx, -0.1)),
        (vkml.rsub(x, y), torch.rsub(tx, ty)),
        (vkml.positive(x), torch.positive(tx)),
        (vkml.broadcast_to(x[:1], (3, 5, 7)), torch.broadcast_to(tx[:1], (3, 5, 7))),
        (vkml.select(x, 1, -2), torch.select(tx, 1, -2)),
        (x.unfold(1, 3, 2), tx.unfold(1, 3, 2)),
        (x.unfold(0, 5, 1), tx.unfold(0, 5, 1)),
    ]
    for got, want in cases:
        assert got.shape == tuple(want.shape)
        assert np.array_equal(got.numpy().view(np.uint32), want.numpy().view(np.uint32))
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        vkml.addcdiv(x, vkml.tensor([1]), vkml.tensor([2]))
    with pytest.raises(RuntimeError, match="bool tensor"):  # PyTorch's class
        vkml.positive(vkml.tensor([True]))
    with pytest.raises(IndexError, match="out of range"):
        vkml.select(x, 0, 5)
    with pytest.raises(RuntimeError, match="maximum size"):
        x.unfold(1, 8, 1)


def test_in_place_forms_write_and_return_the_tensor(dev):
    a = np.array([-1.5, 0.25, 2.0, 3.0], np.float32)
    for name, args in (
        ("lt_", (1.0,)),
        ("ge_", (0.25,)),
        ("eq_", (2.0,)),
        ("ne_", (2.0,)),
        ("clamp_min_", (0.5,)),
        ("clamp_max_", (0.5,)),
        ("relu_", ()),
        ("sigmoid_", ()),
        ("tanh_", ()),
        ("exp_", ()),
        ("abs_", ()),
        ("addcmul_", (np.float32(2), np.float32(3))),
    ):
        x, t = vkml.tensor(a, device=dev), torch.from_numpy(a.copy())
        args_v = tuple(vkml.tensor(v, device=dev) if isinstance(v, np.floating) else v for v in args)
        args_t = tuple(torch.tensor(v) if isinstance(v, np.floating) else v for v in args)
        assert getattr(x, name)(*args_v) is x
        getattr(t, name)(*args_t)
        assert np.allclose(x.numpy(), t.numpy(), rtol=1e-6, atol=0), name
    counts = vkml.tensor([1, 2, 3], device=dev)
    counts.lt_(2)  # a comparison written into an int tensor: 0 and 1
    assert counts.tolist() == [1, 0, 0] and counts.dtype is vkml.int64


def test_unfold_passes_gradients_back_to_overlapping_windows(dev):
    a = np.arange(10, dtype=np.float32)
    x = vkml.tensor(a, device=dev, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    weights = np.arange(12, dtype=np.float32).reshape(4, 3)
    (x.unfold(0, 3, 2) * vkml.tensor(weights, device=dev)).sum().backward()
    (t.unfold(0, 3, 2) * torch.from_numpy(weights)).sum().backward()
    assert np.array_equal(x.grad.numpy(), t.grad.numpy())


def test_random_fills_draw_in_range_and_agree_across_devices(gpu):
    results = {}
    for dev in (vkml.device("cpu"), gpu):
        vkml.manual_seed(11)
        out = {}
        out["random"] = vkml.zeros(4000, device=dev).random_(3, 9).numpy()
        out["random_to"] = vkml.zeros(4000, dtype=vkml.int64, device=dev).random_(5).numpy()
        out["random_full"] = vkml.zeros(4000, dtype=vkml.int64, device=dev).random_().numpy()
        out["random_float"] = vkml.zeros(4000, device=dev).random_().numpy()
        out["bernoulli"] = vkml.zeros(4000, device=dev).bernoulli_(0.25).numpy()
        out["exponential"] = vkml.zeros(4000, device=dev).exponential_(2.0).numpy()
        out["geometric"] = vkml.zeros(4000, device=dev).geometric_(0.5).numpy()
        out["log_normal"] = vkml.zeros(4000, device=dev).log_normal_(0.0, 0.5).numpy()
        results[dev.kind] = out
    for name, values in results["cpu"].items():
        assert np.array_equal(values, results["vulkan"][name]), name  # the same bits on every device
    got = results["cpu"]
    assert got["random"].min() == 3 and got["random"].max() == 8 and np.all(got["random"] == np.round(got["random"]))
    assert set(np.unique(got["random_to"])) == {0, 1, 2, 3, 4}
    assert got["random_full"].min() >= 0 and got["random_full"].max() > 2**62  # the whole int64 range
    assert 0 <= got["random_float"].min() and got["random_float"].max() <= 2**24
    assert set(np.unique(got["bernoulli"])) == {0.0, 1.0} and abs(got["bernoulli"].mean() - 0.25) < 0.03
    assert got["exponential"].min() >= 0 and abs(got["exponential"].mean() - 0.5) < 0.05
    assert got["geometric"].min() >= 1 and abs(got["geometric"].mean() - 2.0) < 0.15
    assert got["log_normal"].min() > 0 and abs(np.log(got["log_normal"]).std() - 0.5) < 0.05
    with pytest.raises(RuntimeError, match="bernoulli_ expects p"):
        vkml.zeros(2).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        vkml.zeros(2).random_(5, 5)
    with pytest.raises(vkml.DTypeError, match="floating point"):
        vkml.zeros(2, dtype=vkml.int64).exponential_()


def test_format_of_a_zero_dim_tensor_is_its_values():
    loss = vkml.tensor(0.123456)
    assert f"{loss:.4f}" == f"{torch.tensor(0.123456):.4f}" == "0.1235"
    assert f"{vkml.tensor(7):5d}" == f"{torch.tensor(7):5d}"
    assert f"{vkml.tensor([1.0])}" == str(vkml.tensor([1.0]))  # no spec: the repr, as object.__format__
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{vkml.tensor([1.0, 2.0]):.2f}"


def test_gradient_hooks_and_retained_gradients_follow_pytorch(dev):
    def run(lib, make):
        seen = []
        x = make([1.0, 2.0, 3.0], requires_grad=True)
        handle = x.register_hook(lambda g: g * 2)  # a leaf's hook changes what .grad receives
        y = x * x
        y.retain_grad()
        y.register_hook(lambda g: seen.append(g.tolist()))  # observes, returns None
        z = (y * 3.0).sum()
        z.backward(retain_graph=True)
        first = (x.grad.tolist(), y.grad.tolist(), y.retains_grad, x.retains_grad)
        handle.remove()
        z.backward()  # no leaf hook now; both gradients accumulate
        return first, x.grad.tolist(), y.grad.tolist(), seen

    got = run(vkml, lambda v, **kw: vkml.tensor(v, device=dev, **kw))
    want = run(torch, lambda v, **kw: torch.tensor(v, **kw))
    assert got == want
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        vkml.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        vkml.ones(2).retain_grad()


def test_iteration_numel_size_and_dtype_type():
    x = vkml.arange(6).reshape(2, 3)
    assert [row.tolist() for row in x] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(vkml.tensor(1.0))
    assert vkml.numel(x) == torch.numel(torch.zeros(2, 3)) == 6
    size = vkml.Size([2, 3])
    assert size == (2, 3) == torch.Size([2, 3]) and size.numel() == 6 and repr(size) == "vkml.Size([2, 3])"
    assert isinstance(x.dtype, vkml.dtype) and isinstance(vkml.float32, vkml.dtype)
    with pytest.raises(TypeError):
        vkml.Size([2.5])
