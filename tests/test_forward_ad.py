"""vkml.autograd.forward_ad against torch.autograd.forward_ad: dual levels, make_dual / unpack_dual,
tangents through ops, modules and a jvp-only custom Function, and PyTorch's errors. vkml computes the
tangents by the double backward trick (vkml/frontend/forward_ad.py); these check the values."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw
import vkml.autograd.forward_ad as vfw

import vkml

X = np.array([[0.3, -1.2, 2.0], [0.5, 0.1, -0.7]], dtype=np.float32)
T = np.array([[1.0, 0.5, -2.0], [0.25, -1.0, 3.0]], dtype=np.float32)
W = np.array([[0.2, -0.4], [1.1, 0.3], [-0.6, 0.9]], dtype=np.float32)


def _tangent(lib, fw, fn):
    with fw.dual_level():
        dual = fw.make_dual(lib.tensor(X), lib.tensor(T))
        out = fn(lib, dual)
        primal, tangent = fw.unpack_dual(out)
        return primal.detach().numpy(), tangent.detach().numpy()


CASES = {
    "sin_mul": lambda lib, x: x.sin() * x,
    "matmul_softmax": lambda lib, x: (x @ lib.tensor(W)).softmax(-1),
    "sum_exp": lambda lib, x: x.exp().sum(0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tangents_match_pytorch(case):
    expected = _tangent(torch, tfw, CASES[case])
    got = _tangent(vkml, vfw, CASES[case])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_module_parameters_as_duals_keep_reverse_mode():
    """A parameter made dual gives the output's tangent and still receives .grad by backward."""
    results = []
    for lib, fw in ((torch, tfw), (vkml, vfw)):
        weight = lib.tensor(W.T.copy(), requires_grad=True)
        with fw.dual_level():
            dual = fw.make_dual(weight, lib.ones_like(weight))
            out = lib.nn.functional.linear(lib.tensor(X), dual).pow(2).sum()
            primal, tangent = fw.unpack_dual(out)
            assert type(fw.unpack_dual(out)).__name__ == "UnpackedDualTensor"
        out.backward()
        results.append([primal.item(), tangent.item(), *weight.grad.flatten().tolist()])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)


def _jvp_only(lib):
    class Fn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.result = a.exp() * b * k
            return ctx.result

        @staticmethod
        def jvp(ctx, ga, gb, gk):
            assert gk is None  # a non-tensor input has no tangent; a tensor without one gets zeros
            return ga * ctx.result + gb * 0

    return Fn


def test_jvp_only_function_calls_its_jvp():
    got = []
    for lib, fw in ((torch, tfw), (vkml, vfw)):
        fn = _jvp_only(lib)
        with fw.dual_level():
            dual = fw.make_dual(lib.tensor(X), lib.tensor(T))
            out = fn.apply(dual, lib.tensor(W.T.copy()), 2.0)
            got.append(fw.unpack_dual(out.sin()).tangent.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-5, atol=1e-6)


def test_no_tangent_and_errors_as_pytorch():
    x, t = vkml.tensor(X), vkml.tensor(T)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        vfw.make_dual(x, t)
    with vfw.dual_level() as level:
        assert level == 0
        dual = vfw.make_dual(x, t)
        assert vfw.unpack_dual(dual).tangent is t and vfw.unpack_dual(x + 1).tangent is None
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            vfw.enter_dual_level()
        with pytest.raises(RuntimeError, match="Tensor is of size \\[2, 3\\] while the given forward gradient"):
            vfw.make_dual(x, vkml.ones(3))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            vfw.make_dual(vkml.tensor([1, 2]), vkml.tensor([1, 2]))
        with vkml.no_grad(), pytest.raises(NotImplementedError, match="make_dual"):
            vfw.make_dual(x, t)
        out = dual * 2
    assert vfw.unpack_dual(out).tangent is None  # the level is closed
    assert x.tolist() == X.tolist() and not x.requires_grad  # the user's tensor is untouched


def _exp_with_jvp(lib, wrong: bool):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.result = x.exp()
            return ctx.result

        @staticmethod
        def jvp(ctx, g):
            return g * ctx.result * (2.0 if wrong else 1.0)

    return Exp


@pytest.mark.parametrize("wrong", [False, True])
def test_gradcheck_forward_ad_as_pytorch(wrong):
    """gradcheck(check_forward_ad=True, check_backward_ad=False), as the forward-AD tutorial calls it,
    passes a right jvp and names a wrong one as PyTorch does."""
    outcomes = []
    for lib in (torch, vkml):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        fn = _exp_with_jvp(lib, wrong).apply
        try:
            outcomes.append(lib.autograd.gradcheck(fn, (x,), check_forward_ad=True, check_backward_ad=False))
        except Exception as e:  # noqa: BLE001 - the two libraries' error classes differ by module
            outcomes.append(str(e).split(",")[0])
    assert outcomes[1] == outcomes[0]
    assert outcomes[0] == (
        True if not wrong else "Jacobian computed with forward mode mismatch for output 0 with respect to input 0"
    )
