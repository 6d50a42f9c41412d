"""vkml.autograd.functional and vkml.func against torch.autograd.functional and torch.func.

Each case runs the same function (written once, given the library as ``lib``) under both, on the
same inputs, and compares every tensor of the (possibly nested) result; errors must be the same
exception class.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3,)).astype(np.float32)
B = RNG.standard_normal((3,)).astype(np.float32)
M = RNG.standard_normal((2, 3)).astype(np.float32)


def _inputs(lib, *arrays):
    return tuple(lib.tensor(a) for a in arrays)


def _compare(got, want, atol=1e-5):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _compare(g, w, atol)
        return
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            _compare(got[k], want[k], atol)
        return
    assert isinstance(got, vkml.Tensor), type(got)
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    assert got.requires_grad == want.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=atol)


def _cube(lib):
    return lambda x: (x**3).sum()


FUNCTIONAL_CASES = {
    "vjp": lambda lib, F: F.vjp(lambda x: x.exp() * 2, _inputs(lib, A)[0], _inputs(lib, B)[0]),
    "vjp_tuple": lambda lib, F: F.vjp(lambda x, y: (x * y, x.sin()), _inputs(lib, A, B), _inputs(lib, B, A)),
    "vjp_scalar_no_v": lambda lib, F: F.vjp(lambda x: (x * x).sum(), _inputs(lib, A)[0]),
    "jvp": lambda lib, F: F.jvp(lambda x: x.tanh() * x, _inputs(lib, A)[0], _inputs(lib, B)[0]),
    "jvp_tuple": lambda lib, F: F.jvp(lambda x, y: (x * y).sum(), _inputs(lib, A, B), _inputs(lib, B, A)),
    "jacobian": lambda lib, F: F.jacobian(lambda x: lib.tensor(M) @ x.sin(), _inputs(lib, A)[0]),
    "jacobian_tuples": lambda lib, F: F.jacobian(lambda x, y: (x * y, (x + y).sum()), _inputs(lib, A, B)),
    "jacobian_independent": lambda lib, F: F.jacobian(lambda x, y: x * 2, _inputs(lib, A, B)),
    "jacobian_create_graph": lambda lib, F: F.jacobian(lambda x: x**2, _inputs(lib, A)[0], create_graph=True),
    "hessian": lambda lib, F: F.hessian(lambda x: (x.exp() * x).sum(), _inputs(lib, A)[0]),
    "hessian_tuple": lambda lib, F: F.hessian(lambda x, y: (x * x * y).sum(), _inputs(lib, A, B)),
    "vhp": lambda lib, F: F.vhp(lambda x: (x.sin() * x).sum(), _inputs(lib, A)[0], _inputs(lib, B)[0]),
    "hvp": lambda lib, F: F.hvp(lambda x: (x.sin() * x).sum(), _inputs(lib, A)[0], _inputs(lib, B)[0]),
}


@pytest.mark.parametrize("case", sorted(FUNCTIONAL_CASES))
def test_autograd_functional_matches_torch(case):
    import vkml.autograd.functional as VF

    fn = FUNCTIONAL_CASES[case]
    _compare(fn(vkml, VF), fn(torch, torch.autograd.functional))


FUNCTIONAL_ERRORS = {
    "strict_independent": lambda lib, F: F.jacobian(lambda x, y: x * 2, _inputs(lib, A, B), strict=True),
    "v_needed": lambda lib, F: F.vjp(lambda x: x * 2, _inputs(lib, A)[0]),
    "v_wrong_shape": lambda lib, F: F.vjp(lambda x: x * 2, _inputs(lib, A)[0], lib.tensor(M)),
    "hessian_not_scalar": lambda lib, F: F.hessian(lambda x: x * 2, _inputs(lib, A)[0]),
    "bad_strategy": lambda lib, F: F.jacobian(lambda x: x, _inputs(lib, A)[0], strategy="sideways"),
    "not_a_tensor": lambda lib, F: F.jacobian(lambda x: x, [1.0]),
}


@pytest.mark.parametrize("case", sorted(FUNCTIONAL_ERRORS))
def test_autograd_functional_errors_match_torch(case):
    import vkml.autograd.functional as VF

    fn = FUNCTIONAL_ERRORS[case]
    with pytest.raises(Exception) as theirs:
        fn(torch, torch.autograd.functional)
    with pytest.raises(type(theirs.value)):
        fn(vkml, VF)


def _per_sample_grads(lib, F):
    """The torch.func tutorial's idiom: per-sample gradients of a model's loss, vmap(grad(functional_call))."""
    model = lib.nn.Linear(3, 2)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(M))
        model.bias.copy_(lib.tensor(B[:2]))
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = lib.tensor(np.stack([A, B, A * B])), lib.tensor(np.array([0, 1, 1]))

    def loss(p, x, y):
        out = F.functional_call(model, p, (x.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, y.unsqueeze(0))

    return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)


FUNC_CASES = {
    "grad": lambda lib, F: F.grad(lambda x: (x.sin() * x).sum())(_inputs(lib, A)[0]),
    "grad_argnums": lambda lib, F: F.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(*_inputs(lib, A, B)),
    "grad_dict": lambda lib, F: F.grad(lambda d: (d["a"] * d["b"]).sum())(dict(zip("ab", _inputs(lib, A, B)))),
    "grad_has_aux": lambda lib, F: F.grad(lambda x: ((x * x).sum(), x.cos()), has_aux=True)(_inputs(lib, A)[0]),
    "grad_of_grad": lambda lib, F: F.grad(lambda x: F.grad(lambda y: (y**3).sum())(x).sum())(_inputs(lib, A)[0]),
    "grad_and_value": lambda lib, F: F.grad_and_value(lambda x: (x * x).sum())(_inputs(lib, A)[0]),
    "vjp": lambda lib, F: F.vjp(lambda x: x.exp(), _inputs(lib, A)[0])[1](_inputs(lib, B)[0]),
    "jacrev": lambda lib, F: F.jacrev(lambda x: x.sin() * x.sum())(_inputs(lib, A)[0]),
    "jacrev_argnums": lambda lib, F: F.jacrev(lambda x, y: x * y, argnums=(0, 1))(*_inputs(lib, A, B)),
    "jacfwd": lambda lib, F: F.jacfwd(lambda x: lib.tensor(M) @ x)(_inputs(lib, A)[0]),
    "hessian": lambda lib, F: F.hessian(lambda x: (x.exp() * x).sum())(_inputs(lib, A)[0]),
    "vmap": lambda lib, F: F.vmap(lambda row: (row * row).sum())(lib.tensor(M)),
    "vmap_in_dims": lambda lib, F: F.vmap(lambda c, v: c * v, in_dims=(1, None))(lib.tensor(M), lib.tensor(B[:2])),
    "vmap_out_dims": lambda lib, F: F.vmap(lambda r: (r, r.sum()), out_dims=(1, 0))(lib.tensor(M)),
    "vmap_nested": lambda lib, F: F.vmap(F.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(
        *_inputs(lib, A, M)
    ),
    "per_sample_grads": _per_sample_grads,
}


@pytest.mark.parametrize("case", sorted(FUNC_CASES))
def test_func_matches_torch(case):
    fn = FUNC_CASES[case]
    _compare(fn(vkml, vkml.func), fn(torch, torch.func))


FUNC_ERRORS = {
    "grad_not_scalar": lambda lib, F: F.grad(lambda x: x * 2)(_inputs(lib, A)[0]),
    "vmap_sizes": lambda lib, F: F.vmap(lambda a, b: a + b)(lib.tensor(A), lib.tensor(M)),
    "vmap_random_error": lambda lib, F: F.vmap(lambda r: r + lib.rand(3))(lib.tensor(M)),
    "vmap_randomness_name": lambda lib, F: F.vmap(lambda r: r, randomness="sometimes")(lib.tensor(M)),
    "vmap_no_mapped_input": lambda lib, F: F.vmap(lambda r: r, in_dims=None)(lib.tensor(M)),
}


@pytest.mark.parametrize("case", sorted(FUNC_ERRORS))
def test_func_errors_match_torch(case):
    fn = FUNC_ERRORS[case]
    with pytest.raises(Exception) as theirs:
        fn(torch, torch.func)
    with pytest.raises(type(theirs.value)):
        fn(vkml, vkml.func)


def test_vmap_randomness_same_and_different():
    """'same' gives every index the same draws, 'different' fresh ones; the error mode ends with vmap."""
    rows = vkml.zeros(3, 4)
    same = vkml.func.vmap(lambda r: r + vkml.rand(4), randomness="same")(rows).numpy()
    assert (same == same[0]).all() and np.unique(same[0]).size == 4
    different = vkml.func.vmap(lambda r: r + vkml.rand(4), randomness="different")(rows).numpy()
    assert not (different == different[0]).all()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vkml.func.vmap(lambda r: r + vkml.rand(4))(rows)
    assert vkml.rand(2).shape == (2,)  # drawing works again outside vmap


def test_functional_call_restores_the_module():
    """The module's own tensors are back after the call, also when the call raises."""
    layer = vkml.nn.Linear(3, 2)
    weight = layer.weight
    out = vkml.func.functional_call(layer, {"weight": vkml.zeros(2, 3)}, (vkml.ones(3),))
    np.testing.assert_array_equal(out.detach().numpy(), layer.bias.detach().numpy())
    assert layer.weight is weight
    with pytest.raises(RuntimeError):
        vkml.func.functional_call(layer, {"weight": vkml.zeros(5, 5)}, (vkml.ones(3),))
    assert layer.weight is weight
    with pytest.raises(RuntimeError, match="Missing key"):
        vkml.func.functional_call(layer, {"weight": vkml.zeros(2, 3)}, (vkml.ones(3),), strict=True)


def test_per_sample_grads_on_vulkan(gpu):
    """The per-sample-gradient idiom gives the CPU's bits on a Vulkan device."""
    with gpu:
        on_gpu = _per_sample_grads(vkml, vkml.func)
    assert on_gpu["weight"].device is gpu
    on_cpu = _per_sample_grads(vkml, vkml.func)
    for k in on_cpu:
        np.testing.assert_array_equal(on_gpu[k].numpy(), on_cpu[k].numpy())


def test_device_as_context_manager(gpu):
    """``with device:`` sets the default device of factories in the block (PyTorch's ``with torch.device``)."""
    with gpu:
        assert vkml.zeros(2).device is gpu and vkml.nn.Linear(2, 2).weight.device is gpu
        with vkml.device("cpu"):
            assert vkml.ones(1).device.name == "cpu"
        assert vkml.tensor([1.0]).device is gpu
    assert vkml.zeros(1).device is vkml.get_default_device()
    assert vkml.get_default_device().name == "cpu"
