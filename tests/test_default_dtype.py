"""set_default_dtype / get_default_dtype, is_tensor, is_floating_point, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


@pytest.fixture
def default_float16():
    torch.set_default_dtype(torch.float16)
    vkml.set_default_dtype(vkml.float16)
    yield
    torch.set_default_dtype(torch.float32)
    vkml.set_default_dtype(vkml.float32)


@pytest.fixture(params=["float16", "float64", "bfloat16"])
def default_float(request):
    """Each float dtype PyTorch takes as the default (float64 and bfloat16 were refused before)."""
    torch.set_default_dtype(getattr(torch, request.param))
    vkml.set_default_dtype(getattr(vkml, request.param))
    yield getattr(vkml, request.param)
    torch.set_default_dtype(torch.float32)
    vkml.set_default_dtype(vkml.float32)


CREATED = {
    "tensor": lambda ns: ns.tensor([1.5, 2.0]),
    "tensor_int": lambda ns: ns.tensor([1, 2]),
    "zeros": lambda ns: ns.zeros(2),
    "ones": lambda ns: ns.ones(2, 3),
    "full": lambda ns: ns.full((2,), 1.5),
    "full_int": lambda ns: ns.full((2,), 3),
    "arange_float": lambda ns: ns.arange(0.5, 3),
    "arange_int": lambda ns: ns.arange(3),
    "rand": lambda ns: ns.rand(2),
    "randn": lambda ns: ns.randn(2),
    "empty": lambda ns: ns.empty(2),
    "eye": lambda ns: ns.eye(2),
    "linspace": lambda ns: ns.linspace(0, 1, 3),
    "normal": lambda ns: ns.normal(0.0, 1.0, size=(2,)),
    "int_true_div": lambda ns: ns.arange(3) / 2,
    "int_times_float": lambda ns: ns.arange(3) * 0.5,
    "int_sqrt": lambda ns: ns.sqrt(ns.arange(3)),
    "float32_times_float": lambda ns: ns.ones(2, dtype=ns.float32) * 0.5,
    "linear_weight": lambda ns: ns.nn.Linear(2, 2).weight,
}


@pytest.mark.parametrize("name", sorted(CREATED))
def test_float_default_gives_torchs_dtypes(name, default_float):
    assert vkml.get_default_dtype() is default_float
    assert CREATED[name](vkml).dtype.name == str(CREATED[name](torch).dtype).removeprefix("torch.")


def test_values_follow_the_default_and_it_comes_back(default_float16):
    x = vkml.tensor([1.0 / 3.0, 70000.0])
    assert x.numpy().tolist() == torch.tensor([1.0 / 3.0, 70000.0]).numpy().tolist()  # rounded to float16 (inf)
    np.testing.assert_array_equal((vkml.arange(5) / 3).numpy(), (torch.arange(5) / 3).numpy())
    vkml.set_default_dtype(vkml.float32)
    torch.set_default_dtype(torch.float32)
    assert vkml.tensor([1.5]).dtype is vkml.float32 and (vkml.arange(3) / 2).dtype is vkml.float32


def test_default_float32_and_refused_dtypes():
    assert vkml.get_default_dtype() is vkml.float32
    with pytest.raises(TypeError, match="^only floating-point types are supported as the default type$"):
        vkml.set_default_dtype(vkml.int64)
    with pytest.raises(TypeError, match="^only floating-point types"):
        vkml.set_default_dtype("float16")  # as torch: a dtype object, not its name
    assert vkml.get_default_dtype() is vkml.float32


def test_is_tensor_and_is_floating_point():
    p = vkml.nn.Parameter(vkml.ones(2))
    assert vkml.is_tensor(p) and vkml.is_tensor(vkml.ones(1)) and not vkml.is_tensor(np.ones(1))
    for dtype in (vkml.float32, vkml.float16, vkml.int64, vkml.int32, vkml.bool):
        t = vkml.zeros(2, dtype=dtype)
        expected = torch.zeros(2, dtype=getattr(torch, dtype.name)).is_floating_point()
        assert vkml.is_floating_point(t) == t.is_floating_point() == expected
    with pytest.raises(TypeError) as want:
        torch.is_floating_point(3)
    with pytest.raises(TypeError) as got:
        vkml.is_floating_point(3)
    assert str(got.value) == str(want.value)
