"""``nn.utils.parametrize`` and ``nn.utils.parametrizations`` against PyTorch: values, gradients, state dict
keys, the class swap, removal, assignment through ``right_inverse``, caching and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(11)


def _module_pair(make):
    """The same module built by vkml and by torch, with torch's values copied into vkml's."""
    theirs = make(torch)
    ours = make(vkml)
    ours.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _grads(module, lib, x):
    module.zero_grad()
    out = module(lib.tensor(x))
    (out * out).sum().backward()
    return out.detach().numpy(), {n: p.grad.numpy() for n, p in module.named_parameters()}


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

    return Symmetric()


def test_a_custom_parametrization_matches_pytorch():
    ours, theirs = _module_pair(lambda lib: lib.nn.Linear(4, 4))
    for module, lib in ((ours, vkml), (theirs, torch)):
        lib.nn.utils.parametrize.register_parametrization(module, "weight", _symmetric(lib))
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    (out, grads), (want, want_grads) = _grads(ours, vkml, x), _grads(theirs, torch, x)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    for name in want_grads:
        np.testing.assert_allclose(grads[name], want_grads[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert vkml.nn.utils.parametrize.type_before_parametrizations(ours) is vkml.nn.Linear


@pytest.mark.parametrize("leave", [True, False])
def test_removing_a_parametrization_restores_the_parameter(leave):
    ours, theirs = _module_pair(lambda lib: lib.nn.Linear(3, 3))
    for module, lib in ((ours, vkml), (theirs, torch)):
        P = lib.nn.utils.parametrize
        P.register_parametrization(module, "weight", _symmetric(lib))
        P.remove_parametrizations(module, "weight", leave_parametrized=leave)
        assert not P.is_parametrized(module)
    assert type(ours) is vkml.nn.Linear and isinstance(ours.weight, vkml.nn.Parameter)
    assert sorted(ours.state_dict()) == ["bias", "weight"]
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())


def test_assignment_goes_through_right_inverse_and_cached_computes_once():
    class Scaled(vkml.nn.Module):
        calls = 0

        def forward(self, x):
            Scaled.calls += 1
            return 2 * x

        def right_inverse(self, value):
            return value / 2

    layer = vkml.nn.Linear(2, 2)
    vkml.nn.utils.parametrize.register_parametrization(layer, "weight", Scaled())
    layer.weight = vkml.ones(2, 2)
    assert layer.parametrizations.weight.original.tolist() == [[0.5, 0.5], [0.5, 0.5]]
    Scaled.calls = 0
    with vkml.nn.utils.parametrize.cached():
        first, second = layer.weight, layer.weight
    assert first is second and Scaled.calls == 1
    layer.weight, layer.weight  # noqa: B018  (outside the block: computed at each access)
    assert Scaled.calls == 3


def test_parametrization_errors_match_pytorch():
    class Wider(vkml.nn.Module):
        def forward(self, x):
            return vkml.cat([x, x], 1)

    layer = vkml.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="may not change the shape"):
        vkml.nn.utils.parametrize.register_parametrization(layer, "weight", Wider())
    assert type(layer) is vkml.nn.Linear and "weight" in layer._parameters  # nothing changed
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        vkml.nn.utils.parametrize.register_parametrization(layer, "nope", Wider())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        vkml.nn.utils.parametrize.remove_parametrizations(layer, "weight")


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_pytorch(dim):
    ours, theirs = _module_pair(lambda lib: lib.nn.Conv2d(2, 3, 3))
    vkml.nn.utils.parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-6, err_msg=key)
    x = RNG.standard_normal((2, 2, 5, 5)).astype(np.float32)
    (out, grads), (want, want_grads) = _grads(ours, vkml, x), _grads(theirs, torch, x)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    for name in want_grads:
        np.testing.assert_allclose(grads[name], want_grads[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_weight_norm_loads_the_hook_based_state_dict():
    old = torch.nn.Linear(3, 2)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(old)
    layer = vkml.nn.utils.parametrizations.weight_norm(vkml.nn.Linear(3, 2))
    layer.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in old.state_dict().items()})
    np.testing.assert_allclose(layer.weight.detach().numpy(), old.weight.detach().numpy(), rtol=1e-6)


def test_spectral_norm_matches_pytorch_in_training_and_eval(gpu):
    theirs = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(5, 4))
    state = {k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()}  # torch updates _u in place
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    want = [theirs(torch.tensor(x)).detach().numpy() for _ in range(2)]  # two power-iteration steps
    want_u = theirs.parametrizations.weight[0]._u.numpy()
    theirs.eval()
    want.append(theirs(torch.tensor(x)).detach().numpy())
    results = {}
    for device in ("cpu", gpu):
        ours = vkml.nn.utils.parametrizations.spectral_norm(vkml.nn.Linear(5, 4)).to(device)
        assert sorted(ours.state_dict()) == sorted(state)
        ours.load_state_dict({k: vkml.tensor(v, device=device) for k, v in state.items()})
        got = [ours(vkml.tensor(x, device=device)).detach().numpy() for _ in range(2)]
        np.testing.assert_allclose(ours.parametrizations.weight[0]._u.numpy(), want_u, rtol=1e-5, atol=1e-6)
        ours.eval()
        got.append(ours(vkml.tensor(x, device=device)).detach().numpy())
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        results[str(device)] = got
    for g, c in zip(*results.values()):
        np.testing.assert_array_equal(g, c)  # the same bits on every device


def test_spectral_norm_picks_dim_1_for_transposed_convolutions():
    layer = vkml.nn.utils.parametrizations.spectral_norm(vkml.nn.ConvTranspose2d(2, 3, 3))
    assert layer.parametrizations.weight[0].dim == 1
    assert tuple(layer.parametrizations.weight[0]._u.shape) == (3,)


@pytest.mark.parametrize(
    ("shape", "orthogonal_map", "trivial"),
    [((3, 3), None, True), ((3, 3), "cayley", False), ((4, 4), "householder", True), ((5, 3), None, False)],
)
def test_orthogonal_matches_pytorch(shape, orthogonal_map, trivial):
    start = RNG.standard_normal(shape).astype(np.float32)
    results = []
    for lib in (vkml, torch):
        layer = lib.nn.Linear(1, 1)
        layer.weight = lib.nn.Parameter(lib.tensor(start))
        lib.nn.utils.parametrizations.orthogonal(layer, orthogonal_map=orthogonal_map, use_trivialization=trivial)
        weight = layer.weight
        (weight * lib.tensor(start)).sum().backward()
        grads = {n: p.grad.numpy() for n, p in layer.named_parameters() if p.grad is not None}
        results.append((weight.detach().numpy(), grads, sorted(layer.state_dict())))
    (ours, our_grads, our_keys), (theirs, their_grads, their_keys) = results
    assert our_keys == their_keys
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    for name, grad in their_grads.items():
        np.testing.assert_allclose(our_grads[name], grad, rtol=1e-4, atol=1e-5, err_msg=name)


def test_orthogonal_keeps_a_tall_weight_orthogonal_and_checks_its_arguments():
    layer = vkml.nn.utils.parametrizations.orthogonal(vkml.nn.Linear(3, 5))  # weight 5 x 3: a random base
    w = layer.weight.detach().numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder"'):
        vkml.nn.utils.parametrizations.orthogonal(vkml.nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"):
        vkml.nn.utils.parametrizations.orthogonal(vkml.nn.Linear(2, 2), "bias")
