"""PyTorch argument forms found by running op-suite lambdas on vkml: each case runs on torch and on vkml
(CPU, and Vulkan for all but the error rows) and must give torch's dtype, values and gradients.

Covered: ``add``/``sub``'s ``alpha=``, ``Tensor.where(condition, other)`` (this tensor is the value where
the condition holds), ``softmax``/``log_softmax``'s ``dtype=``, ``Tensor.flip(0, 1)`` and the dtype
attributes ``is_floating_point``, ``is_complex``, ``itemsize``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml

X = np.array([[0.5, -1.25, 2.0, -0.75], [1.5, 0.25, -2.5, 3.0]], np.float32)
Y = np.array([[-1.0, 2.5, 0.75, 1.25], [0.5, -0.5, 1.75, -3.0]], np.float32)
I = np.array([[1, -2, 3, 0], [4, 5, -6, 7]], np.int32)
B = np.array([[True, False, True, False], [False, False, True, True]])

# (id, fn(m, x, y, i, b)): x and y are float32 tensors that require grad, i int32, b bool
CASES = [
    ("add_alpha", lambda m, x, y, i, b: m.add(x, y, alpha=2)),
    ("add_alpha_float", lambda m, x, y, i, b: x.add(y, alpha=-0.5)),
    ("add_alpha_scalar", lambda m, x, y, i, b: m.add(x, 1.5, alpha=3)),
    ("add_alpha_tensor", lambda m, x, y, i, b: m.add(x, y, alpha=m.tensor(2.0))),
    ("sub_alpha", lambda m, x, y, i, b: x.sub(y, alpha=0.25)),
    ("sub_alpha_int", lambda m, x, y, i, b: m.sub(i, i.flip(0), alpha=3)),
    ("add_alpha_int_into_half", lambda m, x, y, i, b: m.add(x.half(), i, alpha=0.5)),
    ("add_alpha_bool", lambda m, x, y, i, b: m.add(b, b.flip(1), alpha=2)),
    ("add_alpha_bool_false", lambda m, x, y, i, b: m.add(b, b.flip(1), alpha=False)),
    ("where_method", lambda m, x, y, i, b: x.where(x > 0, y)),
    ("where_method_scalar", lambda m, x, y, i, b: x.where(b, 0.0)),
    ("softmax_dtype", lambda m, x, y, i, b: m.softmax(x, 1, dtype=m.float64)),
    ("softmax_method_dtype", lambda m, x, y, i, b: x.softmax(0, dtype=m.float64)),
    ("softmax_int_dtype", lambda m, x, y, i, b: m.softmax(i, -1, dtype=m.float32)),
    ("log_softmax_dtype", lambda m, x, y, i, b: x.log_softmax(dim=1, dtype=m.float64)),
    ("functional_log_softmax_dtype", lambda m, x, y, i, b: m.nn.functional.log_softmax(x, 0, dtype=m.float64)),
    ("flip_varargs", lambda m, x, y, i, b: x.flip(0, 1)),
    ("flip_dims_keyword", lambda m, x, y, i, b: x.flip(dims=(1,))),
    ("flip_int", lambda m, x, y, i, b: i.flip(1)),
    ("cat_axis", lambda m, x, y, i, b: m.cat([x, y], axis=1)),
    ("cat_axis_promotes", lambda m, x, y, i, b: m.cat((i, x), axis=0)),
]

# (id, fn, PyTorch's exception class)
ERRORS = [
    ("add_int_float_alpha", lambda m, x, y, i, b: m.add(i, i, alpha=0.5), RuntimeError),
    ("sub_int_float_alpha", lambda m, x, y, i, b: i.sub(1, alpha=1.5), RuntimeError),
    ("add_int_bool_alpha", lambda m, x, y, i, b: m.add(i, i, alpha=True), RuntimeError),
    ("sub_bool_alpha", lambda m, x, y, i, b: m.sub(b, b, alpha=True), RuntimeError),
    ("flip_no_dims", lambda m, x, y, i, b: x.flip(), TypeError),
    # a dtype an op refuses is PyTorch's RuntimeError (vkml's DTypeError is also a TypeError)
    ("mean_of_int", lambda m, x, y, i, b: i.mean(), RuntimeError),
    ("neg_of_bool", lambda m, x, y, i, b: -b, RuntimeError),
    ("where_float_condition", lambda m, x, y, i, b: m.where(x, x, y), RuntimeError),
    ("rand_negative_size", lambda m, x, y, i, b: m.rand(2, -1), RuntimeError),
    ("randn_float_size", lambda m, x, y, i, b: m.randn(2.5), TypeError),
    ("item_of_many", lambda m, x, y, i, b: x.item(), RuntimeError),
]


def _inputs(m, device=None):
    kw = {} if device is None else {"device": device}
    x = m.tensor(X, requires_grad=True, **kw)
    y = m.tensor(Y, requires_grad=True, **kw)
    return x, y, m.tensor(I, **kw), m.tensor(B, **kw)


def _run(m, fn, device=None):
    """(values, dtype name, grads of sum(out * weights) w.r.t. x and y, None where unused or not float)."""
    x, y, i, b = _inputs(m, device)
    out = fn(m, x, y, i, b)
    values = out.detach().cpu().numpy()
    grads = None
    if out.dtype in (m.float16, m.float32, m.float64) and out.requires_grad:
        w = m.tensor(
            np.linspace(-1, 2, out.numel()).reshape(tuple(out.shape)),
            dtype=out.dtype,
            **({} if device is None else {"device": device}),
        )
        g = m.autograd.grad((out * w).sum(), [x, y], allow_unused=True)
        grads = [None if t is None else t.cpu().numpy() for t in g]
    return values, str(out.dtype).split(".")[-1], grads


def _check(got, want, name):
    (gv, gd, gg), (wv, wd, wg) = got, want
    assert gd == wd, f"{name}: dtype {gd} vs torch {wd}"
    assert gv.shape == wv.shape, name
    np.testing.assert_allclose(gv, wv, rtol=1e-6, atol=1e-7, err_msg=name)
    assert (gg is None) == (wg is None), name
    for a, w in zip(gg or (), wg or (), strict=True):
        assert (a is None) == (w is None), name
        if w is not None:
            assert a.dtype == w.dtype, name
            np.testing.assert_allclose(a, w, rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case):
    name, fn = case
    _check(_run(vkml, fn), _run(torch, fn), name)


@pytest.mark.parametrize("case", CASES[::3], ids=[c[0] for c in CASES[::3]])
def test_vulkan_matches_torch(case, gpu):
    name, fn = case
    _check(_run(vkml, fn, gpu), _run(torch, fn), name)


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(case):
    name, fn, cls = case
    with pytest.raises(cls):
        fn(torch, *_inputs(torch))
    x, y, i, b = _inputs(vkml)
    with pytest.raises(cls):
        fn(vkml, x, y, i, b)
    # the inputs are left as they were
    np.testing.assert_array_equal(x.detach().numpy(), X)
    np.testing.assert_array_equal(i.numpy(), I)


@pytest.mark.parametrize("name", ["float32", "float16", "float64", "int32", "int64", "bool", "uint8"])
def test_dtype_attributes_as_torch(name):
    got, want = getattr(vkml, name), getattr(torch, name)
    assert (got.is_floating_point, got.is_complex, got.itemsize) == (
        want.is_floating_point,
        want.is_complex,
        want.itemsize,
    )


# (id, fn(m)): creation with PyTorch's size= keyword (and numpy ints as sizes): shape and dtype as torch's
CREATION = [
    ("zeros_size_kw", lambda m: m.zeros(size=(2, 3))),
    ("ones_size_kw", lambda m: m.ones(size=[4], dtype=m.int32)),
    ("empty_size_kw", lambda m: m.empty(size=(3,))),
    ("rand_size_kw", lambda m: m.rand(size=(2, 2))),
    ("randn_size_kw", lambda m: m.randn(size=(5,), dtype=m.float64)),
    ("rand_numpy_int", lambda m: m.rand(np.int64(3), 2)),
]


@pytest.mark.parametrize("case", CREATION, ids=[c[0] for c in CREATION])
def test_creation_size_keyword(case):
    name, fn = case
    got, want = fn(vkml), fn(torch)
    assert tuple(got.shape) == tuple(want.shape), name
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
    if name.startswith(("zeros", "ones")):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_size_keyword_and_positional_sizes_clash_as_torch():
    with pytest.raises(TypeError):  # PyTorch's wording differs between versions
        torch.zeros(2, size=(2,))
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        vkml.zeros(2, size=(2,))


def test_arange_requires_grad_as_torch():
    for m in (torch, vkml):
        t = m.arange(0.0, 2.0, 0.5, requires_grad=True)
        assert t.requires_grad and t.is_leaf
        (g,) = m.autograd.grad((t * t).sum(), [t])
        np.testing.assert_array_equal(g.numpy(), [0.0, 1.0, 2.0, 3.0])
        with pytest.raises(RuntimeError):  # only float tensors can require grad
            m.arange(3, requires_grad=True)


def test_deprecated_alpha_first_overload_as_torch():
    """``p.data.add_(-lr, p.grad)`` (older optimizers): alpha first, with PyTorch's warning."""
    results = []
    for m in (torch, vkml):  # PyTorch warns once per process: only vkml's warning is checked
        p, g = m.ones(3), m.tensor([1.0, 2.0, 3.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p.add_(-0.5, g)
            q = m.sub(p, 2, g)
        if m is vkml:
            assert [str(w.message).split(":")[0] for w in caught] == [
                "This overload of add_ is deprecated",
                "This overload of sub is deprecated",
            ]
        results.append((p.tolist(), q.tolist()))
    assert results[0] == results[1]
    with pytest.raises(TypeError):
        vkml.add(vkml.ones(3), vkml.ones(3), vkml.ones(3))


def test_split_size_and_softmax_axis_keywords_as_torch():
    got, want = [], []
    for m, out in ((vkml, got), (torch, want)):
        x = m.arange(6.0)
        out.append([t.tolist() for t in x.split(split_size=4)])
        out.append([t.tolist() for t in m.split(x, split_size_or_sections=4)])
        out.append(m.softmax(x, axis=0).tolist())
        out.append(x.softmax(axis=0).tolist())
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2:], want[2:], rtol=1e-6)
    with pytest.raises(TypeError):
        vkml.softmax(vkml.ones(2))
