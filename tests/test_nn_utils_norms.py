"""nn.utils.weight_norm / spectral_norm and the clip_grad family against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from optest import random_floats, to_torch

import vkml

X = random_floats((4, 3), seed=1)


def _pair(make_vk, make_pt):
    torch.manual_seed(0)
    ref = make_pt()
    mine = make_vk()
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return mine, ref


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        mine, ref = _pair(
            lambda: vkml.nn.utils.weight_norm(vkml.nn.Linear(3, 2), dim=dim),
            lambda: torch.nn.utils.weight_norm(torch.nn.Linear(3, 2), dim=dim),
        )
    assert list(mine.state_dict()) == list(ref.state_dict())
    for _step in range(2):
        out_v, out_t = mine(vkml.tensor(X)), ref(to_torch(X))
        np.testing.assert_allclose(out_v.numpy(), out_t.detach().numpy(), rtol=1e-5, atol=1e-6)
        (out_v * out_v).sum().backward()
        (out_t * out_t).sum().backward()
        for (name, p), (_, q) in zip(mine.named_parameters(), ref.named_parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
            with vkml.no_grad():
                p -= 0.1 * p.grad
            with torch.no_grad():
                q -= 0.1 * q.grad
            p.grad, q.grad = None, None
    vkml.nn.utils.remove_weight_norm(mine)
    torch.nn.utils.remove_weight_norm(ref)
    assert list(mine.state_dict()) == list(ref.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(mine.weight.numpy(), ref.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_weight_norm_warns_and_refuses_twice():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        lin = vkml.nn.utils.weight_norm(vkml.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="two weight_norm hooks"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        vkml.nn.utils.weight_norm(lin)
    with pytest.raises(ValueError, match="not found"):
        vkml.nn.utils.remove_spectral_norm(lin)


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_spectral_norm_matches_torch_given_its_vectors(kind):
    def make(lib):
        module = lib.nn.Linear(3, 4) if kind == "linear" else lib.nn.Conv1d(2, 3, 2)
        return lib.nn.utils.spectral_norm(module, n_power_iterations=2)

    mine, ref = _pair(lambda: make(vkml), lambda: make(torch))
    assert list(mine.state_dict()) == list(ref.state_dict())
    x = X if kind == "linear" else random_floats((2, 2, 5), seed=2)
    for training in (True, True, False):
        mine.train(training)
        ref.train(training)
        out_v, out_t = mine(vkml.tensor(x)), ref(to_torch(x))
        np.testing.assert_allclose(out_v.numpy(), out_t.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(mine.weight_u.numpy(), ref.weight_u.numpy(), rtol=1e-4, atol=1e-5)
    out_v.sum().backward()
    out_t.sum().backward()
    np.testing.assert_allclose(mine.weight_orig.grad.numpy(), ref.weight_orig.grad.numpy(), rtol=1e-4, atol=1e-5)
    vkml.nn.utils.remove_spectral_norm(mine)
    torch.nn.utils.remove_spectral_norm(ref)
    np.testing.assert_allclose(mine.weight.numpy(), ref.weight.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_clip_grad_family_writes_in_place_like_torch():
    grads = [random_floats((3,), seed=5) * 4, random_floats((2, 2), seed=6) * 4]
    params_v = [vkml.nn.Parameter(vkml.zeros(g.shape)) for g in grads]
    params_t = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for p, q, g in zip(params_v, params_t, grads, strict=True):
        p.grad, q.grad = vkml.tensor(g), to_torch(g)
    held = params_v[0].grad
    norm_v = vkml.nn.utils.clip_grad_norm_(params_v, 1.5, norm_type=3.0)
    norm_t = torch.nn.utils.clip_grad_norm_(params_t, 1.5, norm_type=3.0)
    assert norm_v.item() == pytest.approx(norm_t.item(), rel=1e-6)
    np.testing.assert_allclose(held.numpy(), params_t[0].grad.numpy(), rtol=1e-6)  # in place, as torch
    total = vkml.nn.utils.get_total_norm([p.grad for p in params_v])
    assert total.item() == pytest.approx(torch.nn.utils.get_total_norm([q.grad for q in params_t]).item(), rel=1e-6)
    vkml.nn.utils.clip_grads_with_norm_(params_v, 0.5, total)
    torch.nn.utils.clip_grads_with_norm_(params_t, 0.5, torch.nn.utils.get_total_norm([q.grad for q in params_t]))
    np.testing.assert_allclose(params_v[1].grad.numpy(), params_t[1].grad.numpy(), rtol=1e-5)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        vkml.nn.utils.clip_grad_norm(params_v, 1.0)
    vkml.nn.utils.clip_grad_value_(params_v, 0.01)
    assert float(held.abs().max()) <= 0.01


def test_weight_norm_dim_minus_one_is_the_whole_tensors_norm_as_pytorch():
    # dim=-1 is PyTorch's spelling of dim=None (one norm over the whole weight), in both forms
    with pytest.warns(FutureWarning):
        old = vkml.nn.utils.weight_norm(vkml.nn.Linear(3, 2), dim=-1)
    assert tuple(old.weight_g.shape) == ()
    new = vkml.nn.utils.parametrizations.weight_norm(vkml.nn.Linear(3, 2), dim=-1)
    assert tuple(new.parametrizations.weight.original0.shape) == ()
