"""Gradients of custom elementwise ops: derived from the body, or user-supplied; against torch and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
from vkml import debug, dsl
from vkml.dsl import autodiff
from vkml.dsl import elementwise as custom
from vkml.ops.registry import REGISTRY

CPU = vkml.device("cpu")


@pytest.fixture(autouse=True)
def _clean_registry():
    with custom.restoring_registry():
        yield


def _grads(op, arrays, upstream, device=CPU, **kwargs):
    """The custom op's output and each input's gradient for the given upstream gradient, as numpy."""
    xs = [vkml.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = op(*xs, **kwargs)
    out.backward(vkml.tensor(upstream, device=device))
    return out.numpy(), [x.grad.numpy() for x in xs]


def _torch_grads(fn, arrays, upstream):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    out.backward(torch.tensor(upstream))
    return out.detach().numpy(), [np.zeros_like(a) if x.grad is None else x.grad.numpy() for x, a in zip(xs, arrays)]


def _check_against_torch(op, torch_fn, arrays, rtol=1e-5, atol=1e-6, **kwargs):
    rng = np.random.default_rng(11)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    upstream = rng.standard_normal(shape).astype(np.float32)
    out, grads = _grads(op, arrays, upstream, **kwargs)
    want_out, want = _torch_grads(torch_fn, arrays, upstream)
    np.testing.assert_allclose(out, want_out, rtol=rtol, atol=atol)
    for i, (g, w) in enumerate(zip(grads, want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")


def _normal(shape, seed, scale=2.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _positive(shape, seed):
    return np.random.default_rng(seed).uniform(0.2, 4.0, shape).astype(np.float32)


# name: (the DSL function, how the module — torch or vkml — spells it, the inputs' maker)
UNARY = {
    "exp": (dsl.exp, lambda m: m.exp, _normal),
    "exp2": (dsl.exp2, lambda m: m.exp2, _normal),
    "expm1": (dsl.expm1, lambda m: m.expm1, _normal),
    "log": (dsl.log, lambda m: m.log, _positive),
    "log2": (dsl.log2, lambda m: m.log2, _positive),
    "log1p": (dsl.log1p, lambda m: m.log1p, _positive),
    "sqrt": (dsl.sqrt, lambda m: m.sqrt, _positive),
    "rsqrt": (dsl.rsqrt, lambda m: m.rsqrt, _positive),
    "tanh": (dsl.tanh, lambda m: m.tanh, _normal),
    "sigmoid": (dsl.sigmoid, lambda m: m.sigmoid, _normal),
    "erf": (dsl.erf, lambda m: m.erf, _normal),
    "erfc": (dsl.erfc, lambda m: m.erfc, _normal),
    "erfinv": (dsl.erfinv, lambda m: m.erfinv, lambda s, k: np.tanh(_normal(s, k, 1.0))),
    "sinc": (dsl.sinc, lambda m: m.sinc, _normal),
    "gelu": (dsl.gelu, lambda m: m.nn.functional.gelu, _normal),
    "gelu_tanh": (dsl.gelu_tanh, lambda m: lambda x: m.nn.functional.gelu(x, approximate="tanh"), _normal),
    "softplus": (dsl.softplus, lambda m: m.nn.functional.softplus, lambda s, k: _normal(s, k, 12.0)),
    "softplus_beta": (
        lambda x: dsl.softplus(x, beta=2.0, threshold=5.0),
        lambda m: lambda x: m.nn.functional.softplus(x, beta=2.0, threshold=5.0),
        _normal,
    ),
    "abs": (dsl.abs, lambda m: m.abs, _normal),
    "relu": (dsl.relu, lambda m: m.relu, _normal),
    "neg": (lambda x: -x, lambda m: m.neg, _normal),
    "sign": (dsl.sign, lambda m: m.sign, _normal),
    "floor": (dsl.floor, lambda m: m.floor, _normal),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_derived_gradient_of_each_function_matches_torch_and_the_ops_own(name):
    # The tracer runs the op's OpDef rule, so a custom op's gradient is the built-in op's, bit for bit.
    fn, spelled, make = UNARY[name]
    op = vkml.elementwise(lambda x: fn(x), name=f"g_{name}")
    x = make((6, 7), 1)
    _check_against_torch(op, spelled(torch), [x])
    upstream = _normal((6, 7), 11)
    _, (got,) = _grads(op, [x], upstream)
    _, (want,) = _grads(spelled(vkml), [x], upstream)
    assert_same_bits(got, want, f"dsl.{name} against vkml's own gradient")


BINARY = {
    "add": (lambda a, b: a + b, lambda m: m.add),
    "sub": (lambda a, b: a - b, lambda m: m.sub),
    "mul": (lambda a, b: a * b, lambda m: m.mul),
    "div": (lambda a, b: a / b, lambda m: m.div),
    "dsl.div": (dsl.div, lambda m: m.div),
    "pow": (dsl.pow, lambda m: m.pow),
    "maximum": (dsl.maximum, lambda m: m.maximum),
    "minimum": (dsl.minimum, lambda m: m.minimum),
    "atan2": (dsl.atan2, lambda m: m.atan2),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_derived_gradient_of_binary_functions_matches_torch_with_broadcasting(name):
    fn, spelled = BINARY[name]
    op = vkml.elementwise(lambda a, b: fn(a, b), name=f"g_{name.replace('.', '_')}")
    a, b = _positive((4, 5), 2), _positive((5,), 3)
    if name in ("maximum", "minimum"):
        b[:2] = a[0, :2]  # ties: PyTorch gives half the gradient to each side
    _check_against_torch(op, spelled(torch), [a, b])
    upstream = _normal((4, 5), 11)
    _, got = _grads(op, [a, b], upstream)
    _, want = _grads(spelled(vkml), [a, b], upstream)
    for i in range(2):
        assert_same_bits(got[i], want[i], f"{name}: gradient {i} against vkml's own")


def test_pow_special_points_follow_torch():
    op = vkml.elementwise(lambda x, y: dsl.pow(x, y), name="powspecial")
    x = np.float32([0.0, 0.0, 2.0, -1.0, 3.0])
    y = np.float32([0.0, 2.0, 0.0, 0.5, -1.0])
    _check_against_torch(op, torch.pow, [x, y])
    square = vkml.elementwise(lambda x: dsl.pow(x, 2.0), name="square")
    _check_against_torch(square, lambda t: torch.pow(t, 2.0), [np.float32([-3.0, 0.0, 0.5])])


def test_clamp_gradient_follows_torch_in_every_case():
    op = vkml.elementwise(lambda x, lo, hi: dsl.clamp(x, lo, hi), name="clampg")
    nan = np.nan
    x = np.float32([nan, 0.0, 3.0, 0.0, 5.0, 1.0, 1.0, 0.0, 5.0, -2.0, 0.5, 2.0])
    lo = np.float32([0.0, nan, 0.0, 1.0, 1.0, 1.0, 2.0, 3.0, 3.0, 0.0, 0.5, 0.0])
    hi = np.float32([2.0, 2.0, nan, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 2.0])
    _check_against_torch(op, torch.clamp, [x, lo, hi])
    # vkml.clamp runs the same rule (x < lo == hi and NaN operands gave lo or hi a gradient before)
    _check_against_torch(vkml.clamp, torch.clamp, [x, lo, hi])
    lower = vkml.elementwise(lambda x, lo: dsl.clamp_min(x, lo), name="clampmin")
    _check_against_torch(lower, lambda a, b: torch.clamp(a, min=b), [x, lo])
    upper = vkml.elementwise(lambda x, hi: dsl.clamp_max(x, hi), name="clampmax")
    _check_against_torch(upper, lambda a, b: torch.clamp(a, max=b), [x, hi])


def test_where_and_relu_special_points_follow_torch():
    op = vkml.elementwise(lambda c, a, b: dsl.where(c > 0, a * a, b), name="whereg")
    c = np.float32([1.0, -1.0, 2.0, 0.0])
    _check_against_torch(op, lambda c, a, b: torch.where(c > 0, a * a, b), [c, _normal(4, 1), _normal(4, 2)])
    relu = vkml.elementwise(lambda x: dsl.relu(x), name="relug")
    _check_against_torch(relu, torch.relu, [np.float32([np.nan, 0.0, -0.0, 1.0, -1.0])])


def _smooth(x, a, b):
    return x * dsl.sigmoid(a * x) + dsl.tanh(b) * dsl.log1p(x * x) - dsl.exp(-x * x) / (b * b + 1.0)


def _smooth_torch(x, a, b):
    return x * torch.sigmoid(a * x) + torch.tanh(b) * torch.log1p(x * x) - torch.exp(-x * x) / (b * b + 1.0)


def _smooth_vkml(x, a, b):
    return x * vkml.sigmoid(a * x) + vkml.tanh(b) * vkml.log1p(x * x) - vkml.exp(-x * x) / (b * b + 1.0)


def test_a_composite_body_matches_torch_autograd_of_the_same_formula():
    op = vkml.elementwise(_smooth, name="smooth")
    arrays = [_normal((3, 8), 4), _normal((3, 1), 5), _normal((8,), 6)]
    _check_against_torch(op, _smooth_torch, arrays)
    # and has the bits of vkml's autograd through the same formula: the same rules, the same roundings
    # (unbroadcast operands: a broadcast one's gradient is summed in another order there)
    arrays, upstream = [_normal((3, 8), k) for k in (4, 5, 6)], _normal((3, 8), 7)
    _, got = _grads(op, arrays, upstream)
    _, want = _grads(_smooth_vkml, arrays, upstream)
    for i in range(3):
        assert_same_bits(got[i], want[i], f"gradient {i} against vkml's autograd")


def test_derived_gradients_match_central_finite_differences():
    op = vkml.elementwise(_smooth, name="smooth_fd")
    x, a, b = _normal(64, 7, 1.5), _normal(64, 8), _normal(64, 9)
    _, grads = _grads(op, [x, a, b], np.ones(64, np.float32))
    step = np.float32(1e-2)
    for i in range(3):
        plus = [v.copy() for v in (x, a, b)]
        minus = [v.copy() for v in (x, a, b)]
        plus[i] += step
        minus[i] -= step
        f_plus = op(*(vkml.tensor(v) for v in plus)).numpy().astype(np.float64)
        f_minus = op(*(vkml.tensor(v) for v in minus)).numpy().astype(np.float64)
        fd = (f_plus - f_minus) / (np.float64(plus[i] - minus[i]))
        np.testing.assert_allclose(grads[i], fd, rtol=2e-3, atol=2e-3, err_msg=f"input {i}")


def test_gradient_passes_through_convert_as_through_a_cast():
    # dsl.convert's rule used to unpack its (value, dtype) arguments as one: any gradient through it raised
    op = vkml.elementwise(
        lambda x: dsl.convert(dsl.exp(dsl.convert(x, vkml.float64)), vkml.float32) + x * x, name="through64"
    )
    _check_against_torch(op, lambda t: t.double().exp().float() + t * t, [_normal(9, 3)])


def test_a_bodys_python_equality_is_traced_as_the_ir_reads_it():
    # == on IR values is identity (False here, so the body is 3x); the OpDef rules' == records, but
    # only while a rule runs: the derived gradient is 3, never the 2 of an elementwise comparison.
    op = vkml.elementwise(lambda x, y: dsl.where(x == y, x * 2.0, x * 3.0), name="pyeq")
    x = vkml.tensor([1.0, 2.0], requires_grad=True)
    out = op(x, vkml.tensor([1.0, 2.0]))
    out.sum().backward()
    assert out.tolist() == [3.0, 6.0] and x.grad.tolist() == [3.0, 3.0]


def test_python_scalars_get_no_gradient_and_defaults_work():
    @vkml.elementwise
    def leaky(x, slope=0.1):
        return dsl.where(x > 0, x, x * slope)

    x = vkml.tensor([-2.0, 3.0], requires_grad=True)
    leaky(x).sum().backward()
    assert x.grad.tolist() == [np.float32(0.1), 1.0]
    x.grad = None
    leaky(x, 0.5).sum().backward()
    assert x.grad.tolist() == [0.5, 1.0]


def test_float16_inputs_get_float16_gradients():
    op = vkml.elementwise(lambda x: dsl.exp(x) * x, name="xexp")
    x = vkml.tensor(np.float16([0.5, -1.0, 2.0]), requires_grad=True)
    op(x).sum().backward()
    assert x.grad.dtype is vkml.float16
    x32 = np.float32([0.5, -1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy().astype(np.float32), np.exp(x32) * (1 + x32), rtol=1e-3)


def test_gradient_kernel_fuses_into_one_dispatch(monkeypatch):
    monkeypatch.setenv("VKML_BACKWARD_RUNS", "lazy")  # x's gradient alone, computed when read
    op = vkml.elementwise(_smooth, name="smooth_fused")
    x, a, b = (vkml.tensor(v, requires_grad=True) for v in (_normal(50, 1), _normal(50, 2), _normal(50, 3)))
    op(x, a, b).backward(vkml.ones(50))
    debug.reset_counters()
    x.grad.numpy()
    assert debug.counters()["dispatches"] == 1


def _rules(x, a, b):
    # _smooth and the OpDef rules that compare and select (x == 0, ties, bounds, a zero base)
    return (
        _smooth(x, a, b)
        + dsl.gelu(x)
        + dsl.pow(b * b + 0.5, x * 0.25)
        + dsl.clamp(x, -1.0, a)
        + dsl.maximum(x, b)
        + dsl.sinc(a)
        + dsl.atan2(x, b)
    )


def test_vulkan_gradients_equal_cpu_bit_for_bit(gpu):
    op = vkml.elementwise(_rules, name="rules_vk")
    arrays = [_normal(300, 1), _normal(300, 2), _normal(300, 3)]
    upstream = _normal(300, 4)
    cpu_out, cpu_grads = _grads(op, arrays, upstream)
    vk_out, vk_grads = _grads(op, arrays, upstream, device=gpu)
    assert_same_bits(vk_out, cpu_out, "forward")
    for i, (v, c) in enumerate(zip(vk_grads, cpu_grads)):
        assert_same_bits(v, c, f"gradient {i}")


# ---------------------------------------------------------------------- user-supplied backward


def test_user_backward_replaces_the_derived_one():
    def hard_clip_grad(grad, x, lo, hi):
        # a straight-through estimator: the gradient passes everywhere
        return grad, None, None

    @vkml.elementwise(backward=hard_clip_grad)
    def hard_clip(x, lo, hi):
        return dsl.minimum(dsl.maximum(x, lo), hi)

    x = vkml.tensor([-3.0, 0.5, 3.0], requires_grad=True)
    lo = vkml.tensor([-1.0, -1.0, -1.0], requires_grad=True)
    hard_clip(x, lo, 1.0).backward(vkml.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [1.0, 2.0, 3.0]
    assert lo.grad.tolist() == [0.0, 0.0, 0.0]  # None: zero


def test_user_backward_makes_a_non_differentiable_body_usable():
    def abs_bits(x):
        return dsl.bitcast(dsl.bitcast(x, dsl.uint32) & 0x7FFFFFFF, vkml.float32)

    plain = vkml.elementwise(abs_bits, name="abs_bits")
    x = vkml.tensor([-2.0, 3.0], requires_grad=True)
    with pytest.raises(vkml.DTypeError, match=r"cannot differentiate dsl.bitcast.*backward=") as info:
        plain(x).sum().backward()
    assert "test_custom_grad.py" in str(info.value)  # the user's line

    with_grad = vkml.elementwise(abs_bits, name="abs_bits2", backward=lambda g, x: g * dsl.sign(x))
    x.grad = None
    with_grad(x).sum().backward()
    assert x.grad.tolist() == [-1.0, 1.0]


def test_user_backward_must_give_one_gradient_per_input():
    op = vkml.elementwise(lambda x, y: x * y, name="badgrad", backward=lambda g, x, y: g * y)
    x = vkml.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"backward returned 1 gradient\(s\) for 2 input\(s\)"):
        op(x, vkml.tensor([2.0])).sum().backward()


def test_loops_and_ifs_cannot_be_derived():
    def body(x):
        (y,) = dsl.loop(0, 3, 1, (x,), lambda i, acc: acc * x)
        return y

    op = vkml.elementwise(body, name="looped")
    x = vkml.tensor([2.0], requires_grad=True)
    assert op(x).tolist() == [16.0]  # the forward runs: loops are fine in a body
    with pytest.raises(vkml.DTypeError, match=r"cannot differentiate dsl.loop.*pass backward="):
        op(x).sum().backward()


def test_each_derivative_is_written_once():
    """Every traceable op with a gradient takes it from its OpDef's rule: the tracer writes none of its own."""
    assert not hasattr(autodiff, "OWN_RULES")
    assert autodiff.PRIMS["convert"].grad.from_rule == "cast"  # a cast: the tensors' cast rule (ops.grads.RULES)
    for name, prim in autodiff.PRIMS.items():
        if prim.grad is None or name == "convert":  # zero gradient, or the cast
            continue
        opdef = "where" if name == "select" else name  # dsl.where records select
        assert REGISTRY[opdef].grad is not None, name
        assert getattr(prim.grad, "from_opdef", None) == opdef, name


def test_digamma_cannot_be_differentiated_twice():
    # trigamma's OpDef rule asks ctx.F for polygamma(2, x), which the tracer does not have
    with pytest.raises(autodiff.NotDifferentiable, match=r"dsl.digamma twice.*backward="):
        autodiff.gradient_exprs(lambda x: autodiff.apply("trigamma", x), 1)
