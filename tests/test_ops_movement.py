"""Movement ops (views: reshape, permute, transpose, .T, expand, squeeze, unsqueeze, flip, __getitem__; cat)
against PyTorch: the same values bit for bit, for every dtype, alone and composed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits, from_torch, random_floats, to_torch, tree_reduce, vk

import vkml
from vkml.runtime.counters import counters

DTYPES = [np.float32, np.float16, np.int32, np.int64, np.bool_]


def sample(shape, dtype, seed=40) -> np.ndarray:
    x = random_floats(shape, seed=seed, scale=20.0)
    if np.dtype(dtype).kind == "f":
        out = x.astype(dtype)
        flat = out.reshape(-1)
        flat[: min(3, flat.size)] = [np.nan, -np.inf, -0.0][: min(3, flat.size)]
        return out
    if dtype is np.bool_:
        return x > 0
    return x.astype(dtype)


# (name, vkml edit, torch edit) on a (2, 3, 4, 5) tensor
VIEWS = [
    ("reshape", lambda t: t.reshape(6, 20), lambda t: t.reshape(6, 20)),
    ("reshape -1", lambda t: t.reshape(-1, 4, 5), lambda t: t.reshape(-1, 4, 5)),
    ("view", lambda t: t.view(120), lambda t: t.view(120)),
    ("flatten", lambda t: t.flatten(), lambda t: t.flatten()),
    ("permute", lambda t: t.permute(3, 1, 0, 2), lambda t: t.permute(3, 1, 0, 2)),
    ("permute negative", lambda t: t.permute(-1, -2, -3, -4), lambda t: t.permute(-1, -2, -3, -4)),
    ("transpose", lambda t: t.transpose(1, 3), lambda t: t.transpose(1, 3)),
    ("transpose negative", lambda t: vkml.transpose(t, -1, 0), lambda t: torch.transpose(t, -1, 0)),
    ("T", lambda t: t.reshape(6, 20).T, lambda t: t.reshape(6, 20).T),
    ("expand", lambda t: t[:, :1].expand(2, 7, 4, 5), lambda t: t[:, :1].expand(2, 7, 4, 5)),
    ("expand new dims", lambda t: t[0, 0].expand(3, 4, 5), lambda t: t[0, 0].expand(3, 4, 5)),
    ("expand -1", lambda t: t[:, :, :1].expand(-1, -1, 6, -1), lambda t: t[:, :, :1].expand(-1, -1, 6, -1)),
    ("squeeze all", lambda t: t[:, :1, :, :1].squeeze(), lambda t: t[:, :1, :, :1].squeeze()),
    ("squeeze dim", lambda t: t[:, :1].squeeze(1), lambda t: t[:, :1].squeeze(1)),
    ("squeeze non-1 dim", lambda t: t.squeeze(0), lambda t: t.squeeze(0)),
    ("unsqueeze", lambda t: t.unsqueeze(2), lambda t: t.unsqueeze(2)),
    ("unsqueeze -1", lambda t: t.unsqueeze(-1), lambda t: t.unsqueeze(-1)),
    ("flip", lambda t: t.flip(1), lambda t: t.flip(1)),
    ("flip dims", lambda t: vkml.flip(t, (0, 3)), lambda t: torch.flip(t, (0, 3))),
    ("int index", lambda t: t[1], lambda t: t[1]),
    ("negative index", lambda t: t[-1, 2], lambda t: t[-1, 2]),
    ("slice", lambda t: t[:, 1:3], lambda t: t[:, 1:3]),
    ("step slice", lambda t: t[:, ::2, 1::3], lambda t: t[:, ::2, 1::3]),
    ("negative bounds", lambda t: t[..., -3:-1], lambda t: t[..., -3:-1]),
    ("out of range slice", lambda t: t[:, 1:100], lambda t: t[:, 1:100]),
    ("empty slice", lambda t: t[:, 2:1], lambda t: t[:, 2:1]),
    ("ellipsis and None", lambda t: t[None, ..., 2, None], lambda t: t[None, ..., 2, None]),
    ("mixed", lambda t: t[1, ::2, None, 3:], lambda t: t[1, ::2, None, 3:]),
    ("scalar element", lambda t: t[1, 2, 3, 4], lambda t: t[1, 2, 3, 4]),
    # compositions: views of views
    ("permute then reshape", lambda t: t.permute(2, 0, 3, 1).reshape(4, 30), lambda t: t.permute(2, 0, 3, 1).reshape(4, 30)),
    ("flip then slice", lambda t: t.flip(2)[:, 1:, ::3], lambda t: t.flip(2)[:, 1:, ::3]),
    ("slice then T then flip", lambda t: t[1, :, 1:4].T.flip(0), lambda t: t[1, :, 1:4].permute(2, 1, 0).flip(0)),
    ("expand then permute then reshape", lambda t: t[:1].expand(3, 3, 4, 5).permute(1, 0, 2, 3).reshape(9, 20),
     lambda t: t[:1].expand(3, 3, 4, 5).permute(1, 0, 2, 3).reshape(9, 20)),
    ("transpose then reshape (copy)", lambda t: t.transpose(0, 3).reshape(5, -1), lambda t: t.transpose(0, 3).reshape(5, -1)),
    ("reshape, flip, unsqueeze, slice", lambda t: t.reshape(10, 12).flip(1).unsqueeze(0)[0, 2::3, :7],
     lambda t: t.reshape(10, 12).flip(1).unsqueeze(0)[0, 2::3, :7]),
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, vk_edit, torch_edit", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_match_torch(name, vk_edit, torch_edit, dtype):
    x = sample((2, 3, 4, 5), dtype)
    got = vk_edit(vk(x))
    want = from_torch(torch_edit(to_torch(x)))
    assert got.shape == want.shape, f"{name}: shape {got.shape} vs torch {want.shape}"
    assert_same_bits(got.numpy(), want, name)


@pytest.mark.parametrize("name, vk_edit, torch_edit", VIEWS[::3], ids=[v[0] for v in VIEWS[::3]])
def test_views_feed_elementwise_and_reductions(name, vk_edit, torch_edit):
    x = sample((2, 3, 4, 5), np.float32)
    x[np.isnan(x) | np.isinf(x)] = 1.0
    v = vk_edit(vk(x))
    want = from_torch(torch_edit(to_torch(x)))
    assert_same_bits((v * 2 - 1).numpy(), (want * np.float32(2) - np.float32(1)).astype(np.float32), f"{name} * 2 - 1")
    if want.ndim:
        got = v.sum(-1).numpy()
        oracle = tree_reduce(want, np.add) if want.shape[-1] else np.zeros(want.shape[:-1], np.float32)
        assert_same_bits(got, oracle.astype(np.float32), f"{name} summed over its last dim")


def _storage_of(node):
    """The realized buffer a view node reads (an alias's parent: a window of a buffer is one)."""
    source = node.srcs[0] if node.op == "view" else node
    buffer = source.buffer
    return getattr(buffer, "parent", buffer)


@pytest.mark.parametrize("where", ["cpu", "vulkan"])
def test_views_never_copy_and_share_the_source(where, gpu):
    dev = gpu if where == "vulkan" else vkml.device("cpu")
    x = vkml.tensor(np.arange(96, dtype=np.float32).reshape(2, 12, 4), device=dev).realize()
    views = (x.permute(2, 0, 1), x[1, :, ::2], x.flip(0), x[:, :1].expand(2, 5, 4), x.reshape(24, 4), x[1, 4:9])
    for v in views:
        assert v.node.op in ("view", "buffer")
        assert _storage_of(v.node) is x.node.buffer
    # x[1:, 4:9] starts at element 64, aligned: realized, it is a window of x's memory itself, no
    # copy (until then a view of it, whose kernels serve every offset: tests/test_view_offsets.py).
    window = x[1:, 4:9]
    dispatches = counters["dispatches"]
    assert np.array_equal(window.numpy(), np.arange(96, dtype=np.float32).reshape(2, 12, 4)[1:, 4:9])
    assert window.node.op == "buffer" and window.node.buffer.parent is x.node.buffer
    assert counters["dispatches"] == dispatches


def test_float16_nan_payloads_survive_a_copy_through_a_view():
    payloads = np.array([0x7E00, 0xFE00, 0x7E01, 0x7FFF, 0x7C00, 0x8001], np.uint16).view(np.float16)
    got = vk(payloads.reshape(2, 3)).T.numpy()
    assert_same_bits(got.view(np.uint16), payloads.reshape(2, 3).T.view(np.uint16), "quiet NaN payloads in float16")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat(dtype):
    a, b, c = sample((2, 3), dtype, 41), sample((4, 3), dtype, 42), sample((1, 3), dtype, 43)
    for dim, parts in ((0, (a, b, c)), (1, (a, a.T[:2].T)), (-1, (b, b[:, ::2]))):
        got = vkml.cat([vk(p) for p in parts], dim)
        want = from_torch(torch.cat([to_torch(p) for p in parts], dim))
        assert_same_bits(got.numpy(), want, f"cat dim={dim}")
    # views as parts, and a cat feeding an elementwise op
    got = vkml.cat([vk(b).flip(0), vk(a).T.flip(0).T, vk(b)[1::2]], 0)
    want = from_torch(torch.cat([to_torch(b).flip(0), to_torch(a).flip(1), to_torch(b)[1::2]], 0))
    assert_same_bits(got.numpy(), want, "cat of views")


def test_cat_promotes_skips_legacy_empties_and_checks_shapes():
    a = vk(np.array([[1, 2]], np.int32))
    b = vk(np.array([[0.5, 1.5]], np.float16))
    got = vkml.cat([a, b], 0)
    want = torch.cat([to_torch(np.array([[1, 2]], np.int32)), to_torch(np.array([[0.5, 1.5]], np.float16))], 0)
    assert_same_bits(got.numpy(), from_torch(want), "cat of int32 and float16")
    empty = vk(np.zeros((0,), np.float32))
    assert_same_bits(
        vkml.cat([vk(np.ones((2, 2), np.float32)), empty]).numpy(), np.ones((2, 2), np.float32), "legacy empty"
    )
    assert vkml.cat([vk(np.zeros((0, 3), np.float32)), vk(np.ones((2, 3), np.float32))]).shape == (2, 3)
    with pytest.raises(vkml.ShapeError, match="Sizes of tensors must match except in dimension"):
        vkml.cat([vkml.ones(2, 3), vkml.ones(2, 4)], 0)
    with pytest.raises(vkml.ShapeError, match="'cat'.*zero-dim"):
        vkml.cat([vkml.tensor(1.0), vkml.tensor(2.0)])
    with pytest.raises(ValueError, match="non-empty list of Tensors"):
        vkml.cat([])


def test_movement_errors():
    t = vkml.ones(2, 3)
    with pytest.raises(vkml.ShapeError, match="'reshape'.*size 6"):
        t.reshape(4, 2)
    with pytest.raises(vkml.ShapeError, match="'reshape'.*-1"):
        t.reshape(-1, -1)
    with pytest.raises(vkml.ShapeError, match="'permute'"):
        t.permute(0, 0)
    with pytest.raises(IndexError, match="'transpose'"):
        t.transpose(0, 2)
    with pytest.raises(vkml.ShapeError, match=r"'expand'.*existing size \(3\)"):
        t.expand(2, 4)
    with pytest.raises(vkml.ShapeError, match=r"expand.*the number of sizes provided \(1\) must be greater or equal"):
        t.expand(3)
    with pytest.raises(IndexError, match="out of bounds"):
        t[2]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    with pytest.raises(IndexError, match="__getitem__"):  # PyTorch's class and text ("only integers, slices ...")
        t[1.5]
    with pytest.raises(TypeError, match="__getitem__"):
        t[[0, 1], "a"]
    with pytest.raises(TypeError, match="'reshape'.*integers"):
        t.reshape(2.0, 3)


def test_zero_dim_and_empty_views():
    s = vk(np.array(3.5, np.float32))
    assert s.T.shape == () and s.reshape(1, 1).tolist() == [[3.5]] and s.unsqueeze(0).tolist() == [3.5]
    assert s.flatten().shape == torch.tensor(3.5).flatten().shape
    e = vk(np.zeros((0, 3), np.float32))
    assert e.T.shape == (3, 0) and e.reshape(3, 0, 5).shape == (3, 0, 5) and e[:, 1].shape == (0,)
    assert e.T.numpy().shape == (3, 0)
