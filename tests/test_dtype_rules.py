"""Where PyTorch refuses to mix dtypes (matrix products) or compares by identity (``x == None``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import torch_at_least

import vkml

DTYPES = ["float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
SHAPES = [((2,), (2,)), ((3, 2), (2,)), ((2,), (2, 3)), ((3, 2), (2, 3)), ((4, 3, 2), (2, 3)), ((3, 2), (4, 2, 3))]
SHAPES += [((4, 3, 2), (2,)), ((4, 3, 2), (4, 2, 3))]


def _both(shape, dtype):
    return torch.ones(shape, dtype=getattr(torch, dtype)), vkml.ones(shape, dtype=getattr(vkml, dtype))


def _same_error(call, torch_args, vkml_args, op: str):
    with pytest.raises(RuntimeError) as want:
        call(torch, *torch_args)
    with pytest.raises(RuntimeError) as got:
        call(vkml, *vkml_args)
    if torch_at_least(2, 13):  # older PyTorch words these errors differently ("expected scalar type ...")
        assert str(got.value) == f"{op}: {want.value}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matmul_of_two_dtypes_raises_torch_s_error(shapes, dtype):
    for first, second in (("float32", dtype), (dtype, "float32")):
        ta, va = _both(shapes[0], first)
        tb, vb = _both(shapes[1], second)
        _same_error(lambda L, a, b: a @ b, (ta, tb), (va, vb), "matmul")


def test_named_products_raise_torch_s_errors():
    cases = [
        ("mm", lambda L, a, b: L.mm(a, b), (2, 2), (2, 2)),
        ("bmm", lambda L, a, b: L.bmm(a, b), (1, 2, 2), (1, 2, 2)),
        ("mv", lambda L, a, b: L.mv(a, b), (2, 2), (2,)),
        ("dot", lambda L, a, b: L.dot(a, b), (2,), (2,)),
    ]
    for op, call, sa, sb in cases:
        ta, va = _both(sa, "float32")
        tb, vb = _both(sb, "float64")
        _same_error(call, (ta, tb), (va, vb), op)


def test_linear_of_two_dtypes_raises_torch_s_error():
    for x_dtype, bias_dtype in (("float64", "float32"), ("float32", "float64"), ("float64", "float16")):
        tx, vx = _both((3, 2), x_dtype)
        tw, vw = _both((4, 2), "float32")
        tb, vb = _both((4,), bias_dtype)
        with pytest.raises(RuntimeError) as want:
            torch.nn.functional.linear(tx, tw, tb)
        with pytest.raises(RuntimeError) as got:
            vkml.nn.functional.linear(vx, vw, vb)
        assert str(got.value) == str(want.value)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: double != float"):
        vkml.nn.functional.linear(vkml.ones(3, 2, dtype=vkml.float64), vkml.ones(4, 2))


@pytest.mark.parametrize(
    "other", [None, "a", [1.0, 1.0], (1, 2), object()], ids=["None", "str", "list", "tuple", "object"]
)
def test_comparing_with_a_non_number_is_identity_as_in_torch(other):
    t, x = torch.ones(2), vkml.ones(2)
    assert (x == other) is (t == other) is False and (other == x) is False
    assert (x != other) is (t != other) is True
    with pytest.raises(TypeError) as want:
        t < other  # noqa: B015
    with pytest.raises(TypeError) as got:
        x < other  # noqa: B015
    assert str(got.value) == str(want.value)
    assert (x == 1).tolist() == [True, True]


# Divergences from PyTorch found by walking issue 17's list; each case gives PyTorch's dtype and values.
_INTS = [[-7, -3, 0], [2, 5, 9]]
_BOOLS = [[True, False, True], [False, False, True]]
TORCH_CASES = {
    "pad int with a float value": lambda L, d: L.nn.functional.pad(L.tensor(_INTS, device=d), (1, 2), value=-1.5),
    "pad uint8 with 0.5": lambda L, d: L.nn.functional.pad(L.tensor(_INTS, device=d).to(L.uint8), (1, 0), value=0.5),
    "pad bool with 2": lambda L, d: L.nn.functional.pad(L.tensor(_BOOLS, device=d), (0, 1, 1, 0), value=2),
    "lt bool": lambda L, d: L.tensor(_BOOLS, device=d) < L.tensor(_BOOLS, device=d).flip(1),
    "ge bool": lambda L, d: L.ge(L.tensor(_BOOLS, device=d), L.tensor(_BOOLS, device=d).flip(0)),
    "gt bool scalar": lambda L, d: L.tensor(_BOOLS, device=d) > False,
    "amax bool": lambda L, d: L.tensor(_BOOLS, device=d).amax(1),
    "min bool": lambda L, d: L.tensor(_BOOLS, device=d).min(),
    "max bool dim": lambda L, d: tuple(L.max(L.tensor(_BOOLS, device=d), 0)),
    "min bool dim keepdim": lambda L, d: tuple(L.tensor(_BOOLS, device=d).min(1, keepdim=True)),
    "all uint8": lambda L, d: L.tensor(_INTS, device=d).to(L.uint8).all(1),
    "any uint8": lambda L, d: L.tensor(_INTS, device=d).to(L.uint8).any(),
    "max axis": lambda L, d: tuple(L.tensor(_INTS, device=d).max(axis=1)),
    "argmin axis": lambda L, d: L.argmin(L.tensor(_INTS, device=d), axis=0),
}


def _values(result):
    if isinstance(result, tuple):
        return [_values(r) for r in result]
    return (str(result.dtype).rpartition(".")[2], tuple(result.shape), result.tolist())


@pytest.mark.parametrize("where", ["cpu", "gpu"])
@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_gives_torch_s_dtype_and_values(name, where, request):
    device = request.getfixturevalue("gpu") if where == "gpu" else vkml.device("cpu")
    assert _values(TORCH_CASES[name](vkml, device)) == _values(TORCH_CASES[name](torch, "cpu"))


ERROR_CASES = {
    "pad uint8 with -1": lambda L: L.nn.functional.pad(L.tensor(_INTS).to(L.uint8), (1, 0), value=-1),
    "argmax bool": lambda L: L.tensor(_BOOLS).argmax(),
    "arange zero step": lambda L: L.arange(0, 5, 0),
    "arange step truncated to 0": lambda L: L.arange(0, 1, 0.1, dtype=L.int64),
    "arange step sign": lambda L: L.arange(0, 5, -1),
    "arange bool": lambda L: L.arange(3, dtype=L.bool),
    "div rounding mode": lambda L: L.div(L.ones(2), 2, rounding_mode="round"),
    "int // 0": lambda L: L.tensor([5, -3]) // 0,
    "int % 0": lambda L: L.tensor([5, -3], dtype=L.uint8) % 0,
    "fmod int by 0": lambda L: L.fmod(L.tensor([1, 2], dtype=L.int8), False),
    "div trunc int by 0": lambda L: L.div(L.tensor([5, -3]), 0, rounding_mode="trunc"),
    "div floor int by 0": lambda L: L.tensor([5, -3], dtype=L.int32).div(0, rounding_mode="floor"),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_raises_torch_s_error_type(name):
    if name == "arange step truncated to 0" and not torch_at_least(2, 13):
        with pytest.raises(ValueError, match="step must be nonzero"):  # PyTorch 2.13's; older ones accept it
            ERROR_CASES[name](vkml)
        return
    with pytest.raises(Exception) as want:
        ERROR_CASES[name](torch)
    with pytest.raises(type(want.value)):
        ERROR_CASES[name](vkml)


DIVISIONS = {
    "//": lambda L, a, b: a // b,
    "%": lambda L, a, b: a % b,
    "fmod": lambda L, a, b: L.fmod(a, b),
    "div trunc": lambda L, a, b: L.div(a, b, rounding_mode="trunc"),
    "div floor": lambda L, a, b: a.div(b, rounding_mode="floor"),
}


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_integer_division_by_a_zero_in_a_tensor_raises_at_the_read(where, request):
    device = request.getfixturevalue("gpu") if where == "gpu" else vkml.device("cpu")
    for name, divide in DIVISIONS.items():
        a, b = torch.tensor([5, -3, 7]), torch.tensor([2, 0, 3])
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            divide(torch, a, b)
        x, y = vkml.tensor(a.numpy(), device=device), vkml.tensor(b.numpy(), device=device)
        lazy = divide(vkml, x, y) + 1  # nothing is read yet: the check rides with the work
        with pytest.raises(RuntimeError, match="'.*' \\(called at .*\\): ZeroDivisionError"):
            lazy.tolist()
        assert x.tolist() == [5, -3, 7] and y.tolist() == [2, 0, 3], name  # operands intact
        ones = vkml.ones(3, dtype=vkml.int64, device=device)
        assert divide(vkml, x, y + ones).tolist() == divide(torch, a, b + 1).tolist(), name
        floats = divide(vkml, x.float(), y).tolist()  # a float division by 0 gives inf or NaN, no error
        np.testing.assert_array_equal(floats, divide(torch, a.float(), b).tolist(), err_msg=name)


ALIASES = {"absolute": "abs", "negative": "neg", "multiply": "mul", "subtract": "sub", "divide": "div"}
ALIASES |= {"greater": "gt", "less": "lt", "greater_equal": "ge", "less_equal": "le", "not_equal": "ne"}


@pytest.mark.parametrize("alias", list(ALIASES))
def test_numpy_style_aliases_are_torch_s(alias):
    t, x = torch.tensor([1.5, -2.0, 3.0]), vkml.tensor([1.5, -2.0, 3.0])
    args = () if alias in ("absolute", "negative") else (2.0,)
    assert getattr(vkml, alias)(x, *args).tolist() == getattr(torch, alias)(t, *args).tolist()
    assert getattr(x, alias)(*args).tolist() == getattr(t, alias)(*args).tolist()
    if alias in ("absolute", "negative", "multiply", "subtract", "divide"):
        getattr(x, alias + "_")(*args)
        getattr(t, alias + "_")(*args)
        assert x.tolist() == t.tolist()
