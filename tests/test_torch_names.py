"""PyTorch's second names and the small torch-namespace helpers (vkml/frontend/torch_names.py) against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import random_floats, to_torch

import vkml

X = random_floats((3, 5), seed=3)
Y = random_floats((3, 5), seed=4)


@pytest.mark.parametrize("alias", ["absolute", "negative", "multiply", "subtract", "divide"])
def test_arithmetic_aliases_are_the_same_ops(alias):
    unary = alias in ("absolute", "negative")
    args_t = (to_torch(X),) if unary else (to_torch(X), to_torch(Y))
    args_v = (vkml.tensor(X),) if unary else (vkml.tensor(X), vkml.tensor(Y))
    want = getattr(torch, alias)(*args_t).numpy()
    np.testing.assert_array_equal(getattr(vkml, alias)(*args_v).numpy(), want)
    np.testing.assert_array_equal(getattr(args_v[0], alias)(*args_v[1:]).numpy(), want)
    inplace = vkml.tensor(X)
    assert getattr(inplace, alias + "_")(*args_v[1:]) is inplace
    np.testing.assert_array_equal(inplace.numpy(), want)


@pytest.mark.parametrize("alias", ["greater", "less", "greater_equal", "less_equal", "not_equal"])
def test_comparison_aliases_are_the_same_ops(alias):
    y = X.copy()
    y[0] = Y[0]
    want = getattr(torch, alias)(to_torch(X), to_torch(y)).numpy()
    got = getattr(vkml, alias)(vkml.tensor(X), vkml.tensor(y))
    assert got.dtype is vkml.bool
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(getattr(vkml.tensor(X), alias)(0.0).numpy(), getattr(to_torch(X), alias)(0.0))


def test_constants_are_pythons_floats():
    assert (vkml.pi, vkml.e, vkml.inf) == (torch.pi, torch.e, torch.inf)
    assert np.isnan(vkml.nan)


def test_broadcast_tensors_and_shapes():
    a, b = vkml.broadcast_tensors(vkml.tensor(X[:, :1]), vkml.tensor(Y[0]))
    ta, tb = torch.broadcast_tensors(to_torch(X[:, :1]), to_torch(Y[0]))
    np.testing.assert_array_equal(a.numpy(), ta.numpy())
    np.testing.assert_array_equal(b.numpy(), tb.numpy())
    assert tuple(vkml.broadcast_shapes((2, 1), (4,), 1)) == tuple(torch.broadcast_shapes((2, 1), (4,), 1))
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3 at -1"):
        vkml.broadcast_shapes((2,), (3,))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\)"):
        vkml.broadcast_tensors(vkml.ones(2), vkml.ones(3))


@pytest.mark.parametrize("p", [0, 1, 2, 3.5, float("inf"), -float("inf")])
def test_dist_matches_torch(p):
    want = torch.dist(to_torch(X), to_torch(Y[:1]), p=p).item()
    assert vkml.dist(vkml.tensor(X), vkml.tensor(Y[:1]), p=p).item() == pytest.approx(want, rel=1e-6)
    assert vkml.tensor(X).dist(vkml.tensor(Y), p).item() == pytest.approx(
        torch.dist(to_torch(X), to_torch(Y), p).item()
    )


COV_CASES = {
    "plain": {},
    "no_correction": {"correction": 0},
    "fweights": {"fweights": np.array([1, 2, 0, 3, 1], dtype=np.int64)},
    "aweights": {"aweights": np.array([0.5, 1.0, 2.0, 0.25, 1.5], dtype=np.float32)},
    "both": {
        "fweights": np.array([1, 2, 1, 3, 1], dtype=np.int64),
        "aweights": np.array([0.5, 1.0, 2.0, 0.25, 1.5], dtype=np.float32),
        "correction": 2,
    },
}


@pytest.mark.parametrize("name", list(COV_CASES))
def test_cov_matches_torch(name):
    kwargs = COV_CASES[name]
    want = torch.cov(to_torch(X), **{k: to_torch(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    got = vkml.cov(vkml.tensor(X), **{k: vkml.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_cov_of_one_variable_is_0d_and_corrcoef_matches_torch():
    got, want = vkml.cov(vkml.tensor(X[0])), torch.cov(to_torch(X[0]))
    assert got.shape == () == tuple(want.shape)
    assert got.item() == pytest.approx(want.item(), rel=1e-6)
    np.testing.assert_allclose(vkml.corrcoef(vkml.tensor(X)).numpy(), torch.corrcoef(to_torch(X)).numpy(), atol=1e-6)
    with pytest.raises(RuntimeError, match="fweights cannot be negative"):
        vkml.cov(vkml.tensor(X), fweights=vkml.tensor([1, -1, 1, 1, 1]))


def test_trapezoid_and_cumulative_trapezoid_match_torch():
    x = np.array([0.0, 0.5, 2.0, 2.5, 4.0], dtype=np.float32)
    for kwargs_t, kwargs_v in [
        ({}, {}),
        ({"dx": 0.5}, {"dx": 0.5}),
        ({"x": to_torch(x)}, {"x": vkml.tensor(x)}),
        ({"dim": 0}, {"dim": 0}),
    ]:
        for name in ("trapezoid", "cumulative_trapezoid"):
            want = getattr(torch, name)(to_torch(X), **kwargs_t).numpy()
            got = getattr(vkml, name)(vkml.tensor(X), **kwargs_v).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{name} {kwargs_t}")
    assert vkml.trapz is vkml.trapezoid


def test_can_cast_is_torchs_table():
    pairs = [("float32", "int32"), ("int32", "float32"), ("bool", "int64"), ("int64", "bool"), ("float16", "float32")]
    for a, b in pairs:
        assert vkml.can_cast(getattr(vkml, a), getattr(vkml, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b))
    with pytest.raises(TypeError, match="can_cast"):
        vkml.can_cast("float32", vkml.int32)


def test_is_nonzero_and_its_errors():
    assert vkml.is_nonzero(vkml.tensor([1.5])) and not vkml.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        vkml.is_nonzero(vkml.ones(2))
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        vkml.is_nonzero(vkml.ones(0))


def test_asarray_shares_what_it_can():
    t = vkml.ones(3)
    assert vkml.asarray(t) is t
    copied = vkml.asarray(t, copy=True)
    assert copied is not t and copied.tolist() == [1.0, 1.0, 1.0]
    assert vkml.asarray([1, 2]).dtype is vkml.int64
    with pytest.raises(ValueError, match="can.t alias arbitrary sequence into a tensor"):
        vkml.asarray([1.0, 2.0], copy=False)
    assert vkml.asarray([1.0], requires_grad=True).requires_grad


def test_rng_state_round_trips_and_seed_reseeds():
    vkml.manual_seed(5)
    assert vkml.initial_seed() == 5
    state = vkml.get_rng_state()
    assert state.dtype is vkml.uint8 and state.shape == (5056,)  # PyTorch's CPU state
    first = vkml.rand(4).numpy()
    vkml.set_rng_state(state)
    np.testing.assert_array_equal(vkml.rand(4).numpy(), first)
    s = vkml.seed()
    assert vkml.initial_seed() == s
    with pytest.raises(TypeError, match="set_rng_state"):
        vkml.set_rng_state(vkml.zeros(16))
    vkml.manual_seed(0)


def test_num_threads_is_recorded():
    before = vkml.get_num_threads()
    assert before >= 1
    vkml.set_num_threads(2)
    assert vkml.get_num_threads() == 2
    with pytest.raises(RuntimeError, match="positive integer"):
        vkml.set_num_threads(0)
    vkml.set_num_threads(before)


def test_in_reversed_and_unary_plus_as_torch():
    t, tt = vkml.tensor(X), to_torch(X)
    assert (float(X[1, 2]) in t) and (5.0 not in t)
    assert (vkml.tensor(X[0, 0]) in t) == (torch.tensor(X[0, 0]) in tt)
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in t  # noqa: B015
    np.testing.assert_array_equal(reversed(t).numpy(), reversed(tt).numpy())
    assert (+t) is t
    with pytest.raises(RuntimeError, match="bool tensor"):  # PyTorch 2.13's class (2.11 raised TypeError)
        +vkml.ones(2, dtype=vkml.bool)


@pytest.mark.parametrize("name", ["tril_", "triu_"])
def test_tril_and_triu_in_place(name):
    t, tt = vkml.tensor(X), to_torch(X).clone()
    row = t[1]
    assert getattr(t, name)(1) is t
    getattr(tt, name)(1)
    np.testing.assert_array_equal(t.numpy(), tt.numpy())
    np.testing.assert_array_equal(row.numpy(), tt[1].numpy())  # a view sees the write


def test_set_default_device_moves_factories_not_ops(gpu):
    try:
        vkml.set_default_device(gpu)
        assert vkml.get_default_device() is gpu
        made = [vkml.zeros(2), vkml.tensor([1.0]), vkml.rand(2), vkml.arange(3), vkml.nn.Linear(2, 2).weight]
        assert all(t.device is gpu for t in made)
        assert vkml.from_numpy(np.ones(2, np.float32)).device.name == "cpu"  # as torch: from_numpy is the CPU's
    finally:
        vkml.set_default_device(None)
    assert vkml.get_default_device().name == "cpu" and vkml.ones(1).device.name == "cpu"


def test_optimizer_hooks_run_as_torchs():
    calls = []
    for lib in (torch, vkml):
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([w], lr=0.5)
        name = lib.__name__
        pre = opt.register_step_pre_hook(lambda o, args, kwargs, name=name: calls.append((name, "pre")))
        opt.register_step_post_hook(lambda o, args, kwargs, name=name: calls.append((name, "post")))
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
        opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
        w.grad = lib.ones(2)
        opt.step()
        pre.remove()
        opt.step()
        state = opt.state_dict()
        assert state["extra"] == 1
        opt.load_state_dict(state)
        assert w.tolist() == [0.0, 0.0]
    assert calls[:3] == [("torch", "pre"), ("torch", "post"), ("torch", "post")]
    assert calls[3:] == [("vkml", "pre"), ("vkml", "post"), ("vkml", "post")]
