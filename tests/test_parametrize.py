"""``nn.utils.parametrize`` and ``nn.utils.parametrizations`` (weight_norm, spectral_norm) against PyTorch:
the state dict keys, the parametrized weights and their gradients from one state dict, the power
iteration's buffers, assignment through ``right_inverse``, removal, caching and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _copy_into(ours, theirs) -> None:
    ours.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


def _close(mine, theirs, rtol=1e-5):
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-6)


def _pair(make, wrap):
    torch.manual_seed(0)
    theirs = wrap(torch, make(torch))
    ours = wrap(vkml, make(vkml))
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _copy_into(ours, theirs)
    return ours, theirs


CONV = lambda lib: lib.nn.Conv2d(2, 3, 3)  # noqa: E731
LINEAR = lambda lib: lib.nn.Linear(4, 3)  # noqa: E731


@pytest.mark.parametrize(
    ("make", "wrap"),
    [
        (LINEAR, lambda lib, m: lib.nn.utils.parametrizations.weight_norm(m)),
        (LINEAR, lambda lib, m: lib.nn.utils.parametrizations.weight_norm(m, dim=None)),
        (LINEAR, lambda lib, m: lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=2)),
        # a conv's weight reshaped to (out, in * kh * kw) for the power iteration: ~5 s on CI's interpreter
        pytest.param(
            CONV,
            lambda lib, m: lib.nn.utils.parametrizations.spectral_norm(m),
            marks=pytest.mark.stress,
            id="spectral_norm_conv",
        ),
    ],
    ids=["weight_norm", "weight_norm_whole", "spectral_norm_linear", "spectral_norm_conv"],
)
def test_parametrization_forward_backward_and_buffers_match_pytorch(make, wrap):
    ours, theirs = _pair(make, wrap)
    assert type(ours).__name__ == type(theirs).__name__
    shape = (2, 2, 5, 5) if isinstance(theirs, torch.nn.Conv2d) else (2, 4)
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    for _ in range(2):  # the second forward starts from the buffers the first updated (spectral_norm)
        out_t, out_v = theirs(torch.tensor(x)), ours(vkml.tensor(x))
        _close(out_v, out_t)
        out_t.square().sum().backward()
        out_v.square().sum().backward()
    for (name, p_v), (their_name, p_t) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert name == their_name
        _close(p_v.grad, p_t.grad, rtol=1e-4)
    for (name, b_v), (their_name, b_t) in zip(ours.named_buffers(), theirs.named_buffers(), strict=True):
        assert name == their_name
        _close(b_v, b_t)
    ours.eval()
    theirs.eval()
    _close(ours(vkml.tensor(x)), theirs(torch.tensor(x)))


def test_weight_norm_loads_the_hook_based_checkpoint_keys():
    torch.manual_seed(0)
    with pytest.warns(FutureWarning):
        old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    ours = vkml.nn.utils.parametrizations.weight_norm(vkml.nn.Linear(4, 3))
    _copy_into(ours, old)
    _close(ours.weight, old.weight)


class _Symmetric:
    """A parametrization (for either library's nn.Module) with a right_inverse."""

    @staticmethod
    def make(lib):
        class Symmetric(lib.nn.Module):
            def forward(self, x):
                return x.triu() + x.triu(1).transpose(-1, -2)

            def right_inverse(self, a):
                return a.triu()

        return Symmetric()


def test_register_assign_cache_and_remove_as_pytorch():
    results = {}
    for lib in (torch, vkml):
        P = lib.nn.utils.parametrize
        layer = lib.nn.Linear(3, 3)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(np.arange(9, dtype=np.float32).reshape(3, 3)))
        P.register_parametrization(layer, "weight", _Symmetric.make(lib))
        assert P.is_parametrized(layer) and P.is_parametrized(layer, "weight") and not P.is_parametrized(layer, "bias")
        assert P.type_before_parametrizations(layer) is lib.nn.Linear and isinstance(layer, lib.nn.Linear)
        keys = sorted(layer.state_dict())
        symmetric = layer.weight.tolist()
        layer.weight = lib.tensor([[1.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 0.0, 6.0]])
        assigned = layer.weight.tolist()
        with P.cached():
            assert layer.weight is layer.weight
        assert layer.weight is not layer.weight
        names = [n for n, _ in layer.named_parameters()]
        P.remove_parametrizations(layer, "weight")
        assert type(layer) is lib.nn.Linear and not hasattr(layer, "parametrizations")
        results[lib.__name__] = (keys, symmetric, assigned, names, layer.weight.tolist(), sorted(layer.state_dict()))
    assert results["vkml"] == results["torch"]


@pytest.mark.parametrize(
    "case",
    ["no_such_name", "changes_shape", "remove_unparametrized", "leave_sequence_unparametrized"],
)
def test_parametrize_errors_are_pytorchs(case):
    messages = []
    for lib in (torch, vkml):
        P = lib.nn.utils.parametrize
        layer = lib.nn.Linear(3, 2)

        class Flatten(lib.nn.Module):
            def forward(self, x):
                return x.flatten()

        with pytest.raises(ValueError) as info:
            if case == "no_such_name":
                P.register_parametrization(layer, "gain", Flatten())
            elif case == "changes_shape":
                P.register_parametrization(layer, "weight", Flatten())
            elif case == "remove_unparametrized":
                P.remove_parametrizations(layer, "weight")
            else:
                lib.nn.utils.parametrizations.weight_norm(layer)
                P.remove_parametrizations(layer, "weight", leave_parametrized=False)
        messages.append(str(info.value).split("\n")[0].split("'")[0].split(" ")[:4])
        assert type(layer).__name__ in ("Linear", "ParametrizedLinear")
    assert messages[0] == messages[1]


def test_an_optimizer_trains_the_originals():
    torch.manual_seed(0)
    theirs = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 2))
    ours = vkml.nn.utils.parametrizations.weight_norm(vkml.nn.Linear(4, 2))
    _copy_into(ours, theirs)
    x = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    for lib, model in ((torch, theirs), (vkml, ours)):
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
        model(lib.tensor(x)).square().mean().backward()
        optimizer.step()
    _close(ours.weight, theirs.weight, rtol=1e-5)
