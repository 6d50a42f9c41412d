"""vkml.autograd's checking tools against torch.autograd's: anomaly detection, gradcheck, Variable."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _input(lib):
    values = np.array([[0.3, -1.2], [2.0, 0.7]])
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def test_detect_anomaly_names_the_op_whose_backward_made_nan():
    for lib in (torch, vkml):
        x = lib.tensor([-1.0, 4.0], requires_grad=True)
        with (
            pytest.warns(UserWarning, match="Anomaly Detection has been enabled"),
            pytest.raises(RuntimeError) as caught,
        ):
            with lib.autograd.detect_anomaly():
                lib.sqrt(x).sum().backward()
        if lib is torch:
            want = str(caught.value)
        else:
            assert str(caught.value) == want
    vkml_x = vkml.tensor([-1.0], requires_grad=True)
    vkml.sqrt(vkml_x).sum().backward()  # outside the mode: no check, a NaN gradient
    assert np.isnan(vkml_x.grad.numpy()).all() and not vkml.autograd.is_anomaly_enabled()


def test_set_detect_anomaly_as_call_and_context():
    with vkml.autograd.set_detect_anomaly(True):
        assert vkml.autograd.is_anomaly_enabled()
    assert not vkml.autograd.is_anomaly_enabled()
    vkml.autograd.set_detect_anomaly(True, check_nan=False)
    try:
        x = vkml.tensor([-1.0], requires_grad=True)
        vkml.sqrt(x).sum().backward()  # check_nan=False: no error, as PyTorch
        assert not vkml.autograd.is_anomaly_check_nan_enabled()
    finally:
        vkml.autograd.set_detect_anomaly(False)


@pytest.mark.parametrize(
    "name,fn",
    [
        ("cubic", lambda lib, x: x * x * x - x),
        ("matmul_div", lambda lib, x: (x @ x.T) / (1 + x * x)),
        ("two_outputs", lambda lib, x: (x.sum(0), lib.sqrt(x * x + 1).mean())),
    ],
)
def test_gradcheck_passes_where_torchs_does(name, fn):
    assert torch.autograd.gradcheck(lambda x: fn(torch, x), (_input(torch),))
    assert vkml.autograd.gradcheck(lambda x: fn(vkml, x), (_input(vkml),))
    assert vkml.autograd.gradgradcheck(lambda x: fn(vkml, x), (_input(vkml),))


def test_gradcheck_finds_a_wrong_gradient():
    class WrongCube(vkml.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * x  # should be 3 x^2

    with pytest.raises(vkml.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        vkml.autograd.gradcheck(WrongCube.apply, (_input(vkml),))
    assert vkml.autograd.gradcheck(WrongCube.apply, (_input(vkml),), raise_exception=False) is False
    with pytest.warns(UserWarning, match="not a double precision"):
        vkml.autograd.gradcheck(lambda x: x * 2, (vkml.ones(2, requires_grad=True),), atol=1e-2, eps=1e-3)


def test_variable_is_the_legacy_wrapper():
    t = vkml.ones(2)
    v = vkml.autograd.Variable(t, requires_grad=True)
    assert v.requires_grad and isinstance(v, vkml.autograd.Variable) and isinstance(t, vkml.autograd.Variable)
    assert not isinstance(np.ones(2), vkml.autograd.Variable)
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
