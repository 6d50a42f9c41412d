"""The peer op-suite sweep's errors, warnings and autograd edge forms (the third part's companion of
tests/test_peer_ops_c.py): each row runs on torch and on vkml and must raise PyTorch's exception
class with PyTorch's message (``torch.Size`` read as ``vkml.Size``), warn PyTorch's warning, or give
PyTorch's values. Second derivatives are checked as tinygrad's helper checks a first one: the
gradient and the gradient of a weighted sum of it, both against PyTorch's.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import vkml

TORCH_2_13 = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)


def _leaf(m, values=(1.0, 2.0, 3.0)):
    return m.tensor(list(values), requires_grad=True)


def _backward_twice(m):
    y = (_leaf(m) ** 2).sum()
    y.backward()
    y.backward()


def _grad_twice(m):
    x = _leaf(m)
    y = (x * x).sum()
    m.autograd.grad(y, x)
    m.autograd.grad(y, x)


def _set_grad(m, value):
    x = _leaf(m)
    x.grad = value(m)


def _assign_requires_grad(m):
    x = m.tensor([1, 2])
    x.requires_grad = True


def _unused(m, **kw):
    x, z = _leaf(m), _leaf(m)
    return m.autograd.grad((x * x).sum(), [x, z], **kw)


# (name, call(m)): PyTorch raises; vkml must raise its class with its message
ERRORS = [
    ("backward_non_scalar", lambda m: (_leaf(m) * 2).backward()),
    ("backward_twice", _backward_twice),
    ("grad_twice", _grad_twice),
    ("backward_without_grad", lambda m: m.tensor([1.0, 2.0]).sum().backward()),
    ("backward_int_output", lambda m: (_leaf(m) > 1).sum().backward()),
    ("backward_gradient_shape", lambda m: (_leaf(m) * 2).backward(m.tensor([1.0, 0.0]))),
    ("grad_non_scalar", lambda m: m.autograd.grad(_leaf(m) * 2, _leaf(m))),
    ("grad_output_without_grad", lambda m: m.autograd.grad(m.tensor([1.0]).sum(), m.tensor([1.0]))),
    ("grad_input_without_grad", lambda m: m.autograd.grad((_leaf(m) * 2).sum(), m.tensor([1.0]))),
    ("grad_unused", _unused),
    ("grad_materialize_not_allow_unused", lambda m: _unused(m, allow_unused=False, materialize_grads=True)),
    ("requires_grad_int", lambda m: m.tensor([1, 2]).requires_grad_()),
    ("requires_grad_attribute_int", _assign_requires_grad),
    ("requires_grad_false_non_leaf", lambda m: (_leaf(m) * 2).requires_grad_(False)),
    ("inplace_on_leaf", lambda m: _leaf(m).add_(1)),
    ("grad_of_wrong_size", lambda m: _set_grad(m, lambda m: m.zeros(2))),
    ("item_of_many", lambda m: m.ones(2, 3).item()),
    ("item_of_empty", lambda m: m.ones(0).item()),
    ("bool_of_many", lambda m: bool(m.ones(2))),
    ("len_of_0d", lambda m: len(m.tensor(1.0))),
    ("iter_of_0d", lambda m: iter(m.tensor(1.0))),
    ("index_of_float", lambda m: [1, 2][m.tensor(1.0)]),
    ("mT_of_1d", lambda m: m.ones(3).mT),
    ("mH_of_1d", lambda m: m.ones(3).mH),
    ("H_of_1d", lambda m: m.ones(3).H),
    ("narrow_float_start", lambda m: m.ones(3).narrow(0, m.tensor(1.0), 1)),
    ("view_ambiguous_empty", lambda m: m.ones(0, 3).view(-1, 0)),
    ("reshape_ambiguous_empty", lambda m: m.ones(0, 3).reshape(0, -1)),
    ("permute_too_few_dims", lambda m: m.ones(2, 3, 4).permute(0, 1)),
    ("expand_new_leading_minus_one", lambda m: m.ones(2, 1).expand(-1, 2, 3)),
    ("inplace_complex_into_float", lambda m: m.ones(2).add_(1j)),
    ("inplace_complex_into_double", lambda m: m.ones(2, dtype=m.float64).mul_(2j)),
    ("inplace_complex_into_int", lambda m: m.ones(2, dtype=m.int64).sub_(1j)),
    ("max_pool2d_no_window", lambda m: m.nn.functional.max_pool2d(m.ones(1, 2, 3, 3), 4)),
    ("avg_pool1d_no_window", lambda m: m.nn.functional.avg_pool1d(m.ones(2, 3), 4)),
    ("max_pool3d_no_window", lambda m: m.nn.functional.max_pool3d(m.ones(1, 1, 3, 5, 5), (4, 2, 2))),
    ("fill_int8_overflow", lambda m: m.ones(2, dtype=m.int8).fill_(300)),
    ("fill_uint8_negative_float", lambda m: m.ones(2, dtype=m.uint8).fill_(-1.0)),
]


def _message(m, error: Exception) -> str:
    text = str(error).split("\n")[0].replace("torch.Size", "vkml.Size")
    return re.sub(r"value \S+ cannot be converted", "value cannot be converted", text)  # vkml names the value


def _torch_message(error: Exception) -> str:
    text = str(error).split("\n")[0].replace("torch.Size", "vkml.Size")
    # PyTorch's C++ type names where vkml names the dtype
    for cpp, name in (("int8_t", "int8"), ("uint8_t", "uint8")):
        text = text.replace(f"type {cpp} ", f"type {name} ")
    return re.sub(r"^\w+\(\w+\): ", "", text)  # "permute(sparse_coo): ...": the kernel's name, which vkml has not


@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_torch(name, call):
    if name == "grad_unused" and not TORCH_2_13:
        pytest.skip("PyTorch 2.13's wording (index of the unused tensor); earlier ones say 'One of the ...'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(want.type) as got:
            call(vkml)
    expected = _torch_message(want.value)
    # vkml may name the op first ("'fill_': ...") where PyTorch's message has no op name
    assert _message(vkml, got.value).endswith(expected) or expected in _message(vkml, got.value), name


# (name, call(m), PyTorch's warning's first sentence): vkml must warn it and give PyTorch's values.
# PyTorch warns some of these once per process (TORCH_WARN_ONCE): where it warns here, its text is checked too.
WARNINGS = [
    ("T_of_0d", lambda m: m.tensor(2.0).T, "Tensor.T is deprecated on 0-D tensors"),
    ("T_of_1d", lambda m: m.ones(3).T, "The use of `x.T` on tensors of dimension other than 2 to reverse"),
    ("T_of_3d", lambda m: m.ones(2, 3, 4).T, "The use of `x.T` on tensors of dimension other than 2 to reverse"),
    ("mT_of_0d", lambda m: m.tensor(2.0).mT, "Tensor.mT is deprecated on 0-D tensors"),
    ("mH_of_0d", lambda m: m.tensor(2.0).mH, "Tensor.mH is deprecated on 0-D tensors"),
    ("H_of_0d", lambda m: m.tensor(2.0).H, "Tensor.H is deprecated on 0-D tensors"),
    ("grad_of_non_leaf", lambda m: _non_leaf_grad(m), "The .grad attribute of a Tensor that is not a leaf Tensor"),
    (
        "backward_create_graph",
        lambda m: _backward_create_graph(m),
        "Using backward() with create_graph=True will create a reference cycle",
    ),
]


def _non_leaf_grad(m):
    y = _leaf(m) * 2
    y.sum().backward()
    return y.grad


def _backward_create_graph(m):
    x = _leaf(m)
    (x**3).sum().backward(create_graph=True)
    return x.grad


def _caught(call, m):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call(m)
    return out, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize(("name", "call", "text"), WARNINGS, ids=[w[0] for w in WARNINGS])
def test_warnings_as_torch(name, call, text):
    want, want_warnings = _caught(call, torch)
    got, got_warnings = _caught(call, vkml)
    assert all(w.startswith(text) for w in want_warnings), f"{name}: PyTorch's warning is now {want_warnings}"
    assert len(got_warnings) == 1 and got_warnings[0].startswith(text), f"{name}: {got_warnings}"
    if want is None:
        assert got is None, name
    else:
        assert tuple(got.shape) == tuple(want.shape), name
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


def test_grad_allow_unused_and_materialize_as_torch():
    for kw in ({"allow_unused": True}, {"allow_unused": True, "materialize_grads": True}, {"materialize_grads": True}):
        want, got = _unused(torch, **kw), _unused(vkml, **kw)
        assert [g is None for g in got] == [w is None for w in want], kw
        for g, w in zip(got, want):
            if w is not None:
                np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_backward_inputs_gradient_and_accumulation_as_torch():
    results = []
    for m in (torch, vkml):
        x, z = _leaf(m), _leaf(m)
        (x * z).sum().backward(inputs=[x])
        (x * 2).backward(m.tensor([1.0, 0.0, 2.0]))
        (x * x).sum().backward()
        results.append((x.grad.tolist(), z.grad))
    assert results[0] == results[1]


def test_create_graph_grad_requires_grad_as_torch():
    for m in (torch, vkml):
        x = _leaf(m)
        (g,) = m.autograd.grad((x * x).sum(), x, create_graph=True)
        assert g.requires_grad and g.grad_fn is not None
        (h,) = m.autograd.grad((x * x).sum(), x)
        assert not h.requires_grad


# (name, f(m, x)): the first and second derivatives (of a weighted sum of the first) as PyTorch's
SECOND = [
    ("sin", lambda m, x: x.sin()),
    ("exp", lambda m, x: x.exp()),
    ("cube", lambda m, x: x * x * x),
    ("tanh", lambda m, x: x.tanh()),
    ("sigmoid", lambda m, x: x.sigmoid()),
    ("log", lambda m, x: x.log()),
    ("sqrt", lambda m, x: x.sqrt()),
    ("pow", lambda m, x: x.pow(3)),
    ("reciprocal", lambda m, x: 1 / x),
    ("relu_times_x", lambda m, x: x.relu() * x),
    ("softplus", lambda m, x: m.nn.functional.softplus(x)),
    ("gelu", lambda m, x: m.nn.functional.gelu(x)),
    ("silu", lambda m, x: m.nn.functional.silu(x)),
    ("log_softmax", lambda m, x: x.log_softmax(0)),
    ("norm", lambda m, x: x.norm().expand(3)),
    ("atan", lambda m, x: x.atan()),
    ("abs_times_x", lambda m, x: x.abs() * x),
    ("elu", lambda m, x: m.nn.functional.elu(x)),
    ("cumsum_squared", lambda m, x: x.cumsum(0) ** 2),
    ("var", lambda m, x: x.var().expand(3)),
    ("logsumexp", lambda m, x: m.logsumexp(x, 0).expand(3)),
    ("erf", lambda m, x: x.erf()),
    ("lgamma", lambda m, x: x.lgamma()),
    ("layer_norm", lambda m, x: m.nn.functional.layer_norm(x, (3,))),
    ("clamp_squared", lambda m, x: m.clamp(x, 0.6, 2.5) ** 2),
    ("max_times_x", lambda m, x: x.max() * x),
    ("where", lambda m, x: m.where(x > 1.5, x * x, x**3)),
]


def _first_and_second(m, f):
    x = m.tensor([0.5, 1.3, 2.7], requires_grad=True)
    (g,) = m.autograd.grad(f(m, x).sum(), x, create_graph=True)
    weighted = (g * m.tensor([1.0, -2.0, 0.5])).sum()
    (gg,) = m.autograd.grad(weighted, x, allow_unused=True, materialize_grads=True)
    return g.detach().numpy(), gg.numpy()


# the default run's sample (the CPU backend compiles each new kernel: the rest run with -m exhaustive)
SECOND_SAMPLE = {"cube", "tanh", "log_softmax", "max_times_x", "where"}


def _second_params():
    marks = {False: (pytest.mark.exhaustive,), True: ()}
    return [pytest.param(name, f, id=name, marks=marks[name in SECOND_SAMPLE]) for name, f in SECOND]


@pytest.mark.parametrize(("name", "f"), _second_params())
def test_second_derivative_as_torch(name, f):
    (g, gg), (wg, wgg) = _first_and_second(vkml, f), _first_and_second(torch, f)
    np.testing.assert_allclose(g, wg, rtol=2e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(gg, wgg, rtol=2e-5, atol=1e-5, err_msg=name)


@pytest.mark.exhaustive
def test_third_derivative_as_torch():
    got = []
    for m in (torch, vkml):
        x = m.tensor([0.5, 1.3], requires_grad=True)
        (g,) = m.autograd.grad((x.sin() * x.exp()).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = m.autograd.grad(gg.sum(), x)
        got.append(ggg.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-5)
