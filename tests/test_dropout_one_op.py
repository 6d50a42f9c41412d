"""``dropout`` recorded as one op (vkml/nn/functional.py ``_dropout_recorded``): the same nodes, values and
gradients, bit for bit, as its two operators (the product by the scale, the where on the kept elements), on
the CPU device and on Vulkan, and the same graph shown."""

from __future__ import annotations

import numpy as np
import pytest

import vkml
import vkml.nn.functional as VF

# the rule checked here (tests/test_autograd.py asks every rule for a test)
GRAD_TESTED = {"dropout"}


@pytest.fixture(params=["cpu", "vulkan"])
def device(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def _out_and_grad(device, twice: bool = False) -> list:
    vkml.manual_seed(5)  # the same masks on both sides
    x = vkml.tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6), device=device, requires_grad=True)
    out = VF.dropout(x * 1.5, 0.3)
    c = vkml.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6), device=device)
    (grad,) = vkml.autograd.grad((out * out * c).sum(), [x], create_graph=twice)
    results = [out, grad]
    if twice:
        results += vkml.autograd.grad((grad * grad).sum(), [x])
    return [r.detach().numpy() for r in results]


@pytest.mark.parametrize("twice", [pytest.param(False, marks=pytest.mark.stress), True])  # twice: both orders
def test_dropout_as_one_op_has_its_operators_bits(device, monkeypatch, twice):
    one_op = _out_and_grad(device, twice)
    monkeypatch.setattr(VF, "_dropout_recorded", lambda *args: None)
    operators = _out_and_grad(device, twice)
    for got, want in zip(one_op, operators, strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    kept = one_op[0] != 0
    assert 0 < kept.sum() < kept.size  # some dropped, some kept
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_allclose(one_op[0][kept], (x * 1.5)[kept] / np.float32(0.7), rtol=1e-6)


def test_dropout_as_one_op_builds_its_operators_nodes_and_graph(gpu, monkeypatch):
    monkeypatch.setenv("VKML_BACKWARD_RUNS", "lazy")  # the gradient's nodes as the rules built them
    x = vkml.ones(3, 4, device=gpu, requires_grad=True)

    def out_and_grad():
        vkml.manual_seed(1)
        out = VF.dropout(x * 2.0, 0.5)
        return out, vkml.autograd.grad(out.sum(), [x], retain_graph=True)[0]

    one_op = out_and_grad()
    monkeypatch.setattr(VF, "_dropout_recorded", lambda *args: None)
    operators = out_and_grad()
    assert one_op[0]._ctx.name == "dropout" and operators[0]._ctx.name == "where"
    assert [t.node.skey for t in one_op] == [t.node.skey for t in operators]

    def shown(out):
        (mul, _), none = out.grad_fn.next_functions
        return type(out.grad_fn).__name__, type(mul).__name__, none, type(mul.next_functions[0][0]).__name__

    # PyTorch CPU's nodes for dropout(x * 2.0): MulBackward0 over MulBackward0 and the mask's None
    assert shown(one_op[0]) == shown(operators[0]) == ("MulBackward0", "MulBackward0", (None, 0), "AccumulateGrad")


def test_dropout_in_place_and_without_grad_take_the_operators(monkeypatch):
    taken = []
    one_op = VF._dropout_recorded
    monkeypatch.setattr(VF, "_dropout_recorded", lambda *a: taken.append(one_op(*a)) or taken[-1])
    x = vkml.ones(3, 4, requires_grad=True)
    VF.dropout(x.detach(), 0.5)
    VF.dropout(x.half(), 0.5)
    with vkml.no_grad():
        VF.dropout(x, 0.5)
    assert taken and all(t is None for t in taken)
    VF.dropout(x * 1.0, 0.5, inplace=True)  # the operators, through the in-place write
    assert all(t is None for t in taken)
