"""``Tensor.view(dtype)``: PyTorch's bit reinterpretation (``view.dtype``) on CPU and lavapipe."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import vkml

PAIRS = {
    vkml.float32: torch.float32,
    vkml.float16: torch.float16,
    vkml.bfloat16: torch.bfloat16,
    vkml.float64: torch.float64,
    vkml.int64: torch.int64,
    vkml.int32: torch.int32,
    vkml.int16: torch.int16,
    vkml.uint16: torch.uint16,
    vkml.int8: torch.int8,
    vkml.uint8: torch.uint8,
    vkml.bool: torch.bool,
}
INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _source(dtype: vkml.dtype, device) -> tuple[torch.Tensor, vkml.Tensor]:
    """Random bytes as a (2, 8) ``dtype`` tensor in both libraries: floats without NaN (a NaN's payload
    is not kept by every device), bools 0 or 1."""
    raw = torch.randint(0, 256, (2, 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(dtype.nbytes))
    tx = (raw & 1).bool() if dtype is vkml.bool else raw.view(PAIRS[dtype])
    if tx.is_floating_point():
        tx = torch.where(tx.isnan(), 1.5, tx)
    if dtype is vkml.bfloat16:
        return tx, vkml.tensor(tx.float().numpy(), device=device).bfloat16()
    return tx, vkml.tensor(tx.numpy(), device=device)


def _bits(t) -> np.ndarray:
    """The bytes of a torch tensor, or of a vkml tensor read back through its own view."""
    if isinstance(t, torch.Tensor):
        return t.contiguous().view(INT_OF_SIZE[t.element_size()]).numpy()
    return t.view({1: vkml.uint8, 2: vkml.int16, 4: vkml.int32, 8: vkml.int64}[t.dtype.nbytes]).numpy()


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_view_dtype_every_pair_gives_torch_bits(where, request):
    device = request.getfixturevalue("gpu") if where == "gpu" else vkml.device("cpu")
    for src, dst in itertools.product(PAIRS, PAIRS):
        if dst is vkml.bool and src is not vkml.bool:
            continue  # bytes other than 0 and 1 are no bool PyTorch defines
        tx, x = _source(src, device)
        want, got = tx.view(PAIRS[dst]), x.view(dst)
        assert got.dtype is dst and tuple(got.shape) == tuple(want.shape), (src, dst)
        assert not got.requires_grad
        expected, actual = _bits(want), _bits(got)
        if want.is_floating_point():  # NaN-ness only: a device may hand back its canonical NaN
            nan = want.float().isnan().numpy()
            assert np.isnan(got.float().numpy())[nan].all(), (src, dst)
            expected, actual = expected[~nan], actual[~nan]
        np.testing.assert_array_equal(actual, expected, err_msg=f"{src} -> {dst}")


def test_view_dtype_is_a_view_for_one_element_size():
    for lib in (torch, vkml):
        x = lib.arange(6, dtype=lib.float32).reshape(2, 3)
        y = x.t().view(lib.int32)  # a view of a view
        x.add_(1)  # a write to the base shows in the view...
        y[0, 1] = 0  # ...and one through the view in the base
        got = (x.tolist(), y.tolist(), y.stride(), y.is_contiguous(), x.view(dtype=lib.int32).shape)
        if lib is torch:
            want = got
    assert got == want


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.tensor(1.0).view(lib.uint8),  # 0-dim
        lambda lib: lib.zeros(3, 4).t().view(lib.uint8),  # stride(-1) != 1
        lambda lib: lib.zeros(3, 3, dtype=lib.uint8).view(lib.float16),  # size(-1)
        lambda lib: lib.zeros(4, 4, dtype=lib.uint8)[:, 1:3].view(lib.float16),  # storage_offset()
        lambda lib: lib.zeros(5, 6, dtype=lib.uint8)[:, :4].view(lib.float32),  # stride(0)
        lambda lib: lib.zeros(2, 0, dtype=lib.uint8).view(lib.float32),  # stride(0) of an empty tensor
    ],
)
def test_view_dtype_errors_are_torch_s(make):
    with pytest.raises(RuntimeError) as want:
        make(torch)
    with pytest.raises(RuntimeError) as got:
        make(vkml)
    assert str(got.value) == str(want.value)


def test_view_dtype_of_views_and_empty_tensors():
    for make in (
        lambda lib: lib.arange(12, dtype=lib.float32).reshape(3, 4)[:, :3].view(lib.float16),
        lambda lib: lib.arange(20, dtype=lib.uint8).reshape(5, 4)[1:].view(lib.float32),
        lambda lib: lib.zeros(3, dtype=lib.float32).expand(2, 3).view(lib.uint8),
        lambda lib: lib.zeros(2, 0, dtype=lib.float32).view(lib.uint8),
        lambda lib: lib.tensor([True, False, True, True]).view(lib.int16),
    ):
        want, got = make(torch), make(vkml)
        assert tuple(got.shape) == tuple(want.shape) and got.tolist() == want.tolist()


def test_view_dtype_leaves_shapes_alone():
    x = vkml.zeros(2, 3)
    assert x.view(6).shape == (6,) and x.view(3, -1).shape == (3, 2)
    with pytest.raises(TypeError):
        x.view("int32")  # as torch: neither a dtype nor a shape
