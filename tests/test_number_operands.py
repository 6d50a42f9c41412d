"""Where PyTorch's signatures take a Python number in place of a tensor, vkml takes one too, and where
they want a Tensor (torch.maximum(x, 1.0), torch.eq(1.0, x)), vkml raises PyTorch's TypeError: a
program never runs on vkml with an argument PyTorch refuses. Each case runs on both libraries."""

import pytest
import torch

import vkml

# (call, label): the call gets the library module, a float tensor x, an int tensor i and a bool tensor b
CASES = {
    "maximum(x, 1.5)": lambda m, x, i, b: m.maximum(x, 1.5),
    "maximum(1.5, x)": lambda m, x, i, b: m.maximum(1.5, x),
    "minimum(x, 1.5)": lambda m, x, i, b: m.minimum(x, 1.5),
    "x.maximum(1.5)": lambda m, x, i, b: x.maximum(1.5),
    "fmax(x, 1.5)": lambda m, x, i, b: m.fmax(x, 1.5),
    "fmin(1.5, x)": lambda m, x, i, b: m.fmin(1.5, x),
    "hypot(x, 1.5)": lambda m, x, i, b: m.hypot(x, 1.5),
    "logaddexp(x, 1.5)": lambda m, x, i, b: m.logaddexp(x, 1.5),
    "logaddexp2(1.5, x)": lambda m, x, i, b: m.logaddexp2(1.5, x),
    "logical_and(b, True)": lambda m, x, i, b: m.logical_and(b, True),
    "logical_or(True, b)": lambda m, x, i, b: m.logical_or(True, b),
    "logical_xor(b, True)": lambda m, x, i, b: m.logical_xor(b, True),
    "eq(x, 1.5)": lambda m, x, i, b: m.eq(x, 1.5),
    "eq(1.5, x)": lambda m, x, i, b: m.eq(1.5, x),
    "greater(2, i)": lambda m, x, i, b: m.greater(2, i),
    "x.lt(1.5)": lambda m, x, i, b: x.lt(1.5),
    "1.5 == x": lambda m, x, i, b: 1.5 == x,
    "1.5 < x": lambda m, x, i, b: 1.5 < x,
    "copysign(x, -1.0)": lambda m, x, i, b: m.copysign(x, -1.0),
    "copysign(-1.0, x)": lambda m, x, i, b: m.copysign(-1.0, x),
    "fmod(x, 2.0)": lambda m, x, i, b: m.fmod(x, 2.0),
    "fmod(2.0, x)": lambda m, x, i, b: m.fmod(2.0, x),
    "remainder(2.0, x)": lambda m, x, i, b: m.remainder(2.0, x),
    "floor_divide(2.0, x)": lambda m, x, i, b: m.floor_divide(2.0, x),
    "clamp(x, 0.0)": lambda m, x, i, b: m.clamp(x, 0.0),
    "clamp(x, 0.0, x)": lambda m, x, i, b: m.clamp(x, 0.0, x),
    "clamp(x, x, x)": lambda m, x, i, b: m.clamp(x, x, x),
    "clamp(1.5, x)": lambda m, x, i, b: m.clamp(1.5, x),
    "clamp_min(1.5, x)": lambda m, x, i, b: m.clamp_min(1.5, x),
    "where(b, 1.0, x)": lambda m, x, i, b: m.where(b, 1.0, x),
    "where(b, x, 1.0)": lambda m, x, i, b: m.where(b, x, 1.0),
    "where(b, 1.0, 2.0)": lambda m, x, i, b: m.where(b, 1.0, 2.0),
    "where(True, x, x)": lambda m, x, i, b: m.where(True, x, x),
    "max(1.5, x)": lambda m, x, i, b: m.max(1.5, x),
    "rsub(x, 1.5)": lambda m, x, i, b: m.rsub(x, 1.5),
    "rsub(1.5, x)": lambda m, x, i, b: m.rsub(1.5, x),
    "1.5 - x": lambda m, x, i, b: 1.5 - x,
    "gcd(i, 2)": lambda m, x, i, b: m.gcd(i, 2),
    "trapezoid(x, 1.5)": lambda m, x, i, b: m.trapezoid(x, 1.5),
    "trapezoid(x, dx=1.5)": lambda m, x, i, b: m.trapezoid(x, dx=1.5),
    "xlogy(2.0, x)": lambda m, x, i, b: m.xlogy(2.0, m.abs(x)),
    "add(1.5, x)": lambda m, x, i, b: m.add(1.5, x),
    "bitwise_and(3, i)": lambda m, x, i, b: m.bitwise_and(3, i),
}


def _outcome(m, call):
    x, i, b = m.tensor([1.0, -2.0, 3.5]), m.tensor([1, 2, 3]), m.tensor([True, False, True])
    try:
        return call(m, x, i, b).tolist()
    except TypeError:
        return TypeError


@pytest.mark.parametrize("label", list(CASES))
def test_python_numbers_accepted_and_refused_as_pytorch(label):
    expected, got = _outcome(torch, CASES[label]), _outcome(vkml, CASES[label])
    if isinstance(expected, list) and any(isinstance(v, float) for v in expected):
        # transcendental values (xlogy's log) may differ by an ulp between PyTorch builds; both are in bound
        assert got == pytest.approx(expected, rel=1e-6)
    else:
        assert got == expected


def test_refusal_names_the_argument_and_face_calls_still_take_numbers():
    x = vkml.tensor([1.0, -2.0])
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        vkml.maximum(x, 0.0)
    # the face's own calls (F.<name>) take a number anywhere: relu-like composites rely on it
    from vkml.frontend import operators as F

    assert F.maximum(x, 0.0).tolist() == [1.0, 0.0]
    assert x.tolist() == [1.0, -2.0]
