"""``vkml.finfo`` / ``vkml.iinfo``: PyTorch's attributes, repr and errors for every dtype."""

from __future__ import annotations

import pytest
import torch

import vkml

FLOATS = ["float32", "float16", "bfloat16", "float64"]
INTS = ["uint8", "int8", "int16", "uint16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_is_torch_s(name):
    got, want = vkml.finfo(getattr(vkml, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(got, attr) == getattr(want, attr) and type(getattr(got, attr)) is type(getattr(want, attr))
    assert repr(got) == repr(want)
    assert got == vkml.finfo(getattr(vkml, name))


@pytest.mark.parametrize("name", INTS)
def test_iinfo_is_torch_s(name):
    got, want = vkml.iinfo(getattr(vkml, name)), torch.iinfo(getattr(torch, name))
    assert (got.bits, got.min, got.max, got.dtype) == (want.bits, want.min, want.max, want.dtype)
    assert repr(got) == repr(want)


def test_finfo_default_is_the_default_dtype():
    assert vkml.finfo() == vkml.finfo(vkml.float32)
    vkml.set_default_dtype(vkml.float64)
    try:
        assert vkml.finfo().bits == 64
    finally:
        vkml.set_default_dtype(vkml.float32)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.finfo(lib.int32),
        lambda lib: lib.finfo(lib.bool),
        lambda lib: lib.iinfo(lib.float32),
        lambda lib: lib.iinfo(lib.bool),
        lambda lib: lib.finfo("float32"),
        lambda lib: lib.iinfo(3),
    ],
)
def test_info_errors_are_torch_s(call):
    with pytest.raises(TypeError) as want:
        call(torch)
    with pytest.raises(TypeError) as got:
        call(vkml)
    assert str(got.value) == str(want.value).replace("torch", "vkml")


def test_can_cast_is_torch_s():
    names = FLOATS + INTS + ["bool"]
    for a in names:
        for b in names:
            want = torch.can_cast(getattr(torch, a), getattr(torch, b))
            assert vkml.can_cast(getattr(vkml, a), getattr(vkml, b)) == want, (a, b)
    with pytest.raises(TypeError):
        vkml.can_cast("float32", vkml.int32)
