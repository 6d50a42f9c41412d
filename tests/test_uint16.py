"""uint16 tensors as PyTorch 2.x has them: made, moved, converted and viewed like any dtype, the few
ops PyTorch's CPU kernels take, no promotion with another integer or bool dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import torch_at_least

import vkml

VALUES = np.array([[1, 65535, 300], [0, 7, 40000]], dtype=np.uint16)
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]

CASES = {
    "numpy keeps uint16": lambda L, x: x,
    "float": lambda L, x: x.float(),
    "to int32": lambda L, x: x.to(L.int32),
    "from float32 wraps": lambda L, x: x.float().neg().sub(1.5).to(L.uint16),
    "from int64 wraps": lambda L, x: (x.long() * 3 - 70000).to(L.uint16),
    "transpose and slice": lambda L, x: x.t()[1:],
    "cat": lambda L, x: L.cat([x, x.flip(0) if L is vkml else torch.from_numpy(VALUES[::-1].copy())]),
    "view int16": lambda L, x: x.view(L.int16),
    "view uint8": lambda L, x: x.view(L.uint8),
    "int16 view uint16": lambda L, x: x.view(L.int16).view(L.uint16),
    "mul wraps": lambda L, x: x * x,
    "eq": lambda L, x: x == 7,
    "bitwise and": lambda L, x: x & 0xFF0F,
    "sum is int64": lambda L, x: x.sum(1),
    "div is float": lambda L, x: x / 3,
    "where": lambda L, x: L.where(x.float() > 5, x, x.t().t().mul(0)),
    "zeros": lambda L, x: L.zeros(2, dtype=L.uint16),
    "tensor wraps -1": lambda L, x: L.tensor([-1, 65535], dtype=L.uint16),
}


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_uint16_is_torch_s(where, request):
    device = request.getfixturevalue("gpu") if where == "gpu" else vkml.device("cpu")
    for name, case in CASES.items():
        try:
            want = case(torch, torch.from_numpy(VALUES.copy()))
        except NotImplementedError:
            if torch_at_least(2, 13):
                raise
            continue  # an older PyTorch lacks this uint16 kernel: nothing to compare with
        got = case(vkml, vkml.tensor(VALUES, device=device))
        assert str(got.dtype) == str(want.dtype).replace("torch", "vkml"), name
        assert got.tolist() == want.tolist(), name


@pytest.mark.parametrize("unsigned", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("other", DTYPES + ["uint16", "uint32", "uint64"])
def test_promotion_is_torch_s(other, unsigned):
    u = getattr(vkml, unsigned)
    for a, b in ((u, getattr(vkml, other)), (getattr(vkml, other), u)):
        try:
            want = torch.promote_types(getattr(torch, a.name), getattr(torch, b.name))
        except RuntimeError as e:
            with pytest.raises(RuntimeError) as got:
                vkml.promote_types(a, b)
            assert str(got.value) == str(e)
        else:
            assert vkml.promote_types(a, b).name == str(want).removeprefix("torch.")


def test_ops_pytorch_lacks_raise_and_limits_are_torch_s():
    x = vkml.tensor(VALUES)
    with pytest.raises(vkml.DTypeError, match="'add' does not support dtype uint16"):
        x + x  # PyTorch: NotImplementedError "add_stub" not implemented for 'UInt16'
    with pytest.raises(RuntimeError, match="Promotion for uint16"):
        x * vkml.tensor(VALUES.astype(np.int32))
    info, want = vkml.iinfo(vkml.uint16), torch.iinfo(torch.uint16)
    assert (info.min, info.max, info.bits, repr(info)) == (want.min, want.max, want.bits, repr(want))
    with pytest.raises(RuntimeError, match="cannot be converted to type uint16"):
        vkml.tensor([70000], dtype=vkml.uint16)


def test_uint16_saves_loads_and_collates(tmp_path):
    x = vkml.tensor(VALUES)
    vkml.save({"x": x}, tmp_path / "u16.pt")
    back = vkml.load(tmp_path / "u16.pt")["x"]
    assert back.dtype is vkml.uint16 and back.tolist() == VALUES.tolist()
    batch = vkml.utils.data.default_collate([VALUES[0], VALUES[1]])
    assert batch.dtype is vkml.uint16 and batch.tolist() == VALUES.tolist()
    assert vkml.from_numpy(VALUES).dtype is vkml.uint16


@pytest.mark.parametrize("name", ["uint32", "uint64"])
def test_uint32_and_uint64_are_dtypes_without_tensors(name):
    dtype = getattr(vkml, name)
    info, want = vkml.iinfo(dtype), torch.iinfo(getattr(torch, name))
    assert (info.min, info.max, info.bits, repr(info)) == (want.min, want.max, want.bits, repr(want))
    assert vkml.can_cast(dtype, vkml.int8) == torch.can_cast(getattr(torch, name), torch.int8)
    for make in (
        lambda: vkml.zeros(2, dtype=dtype),
        lambda: vkml.tensor(np.zeros(2, dtype=name)),
        lambda: vkml.ones(2).to(dtype),
        lambda: vkml.ones(2).view(dtype),
    ):
        with pytest.raises(NotImplementedError, match=f"vkml has no {name} tensors"):
            make()
