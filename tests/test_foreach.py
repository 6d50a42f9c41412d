"""PyTorch's ``torch._foreach_*`` list ops (vkml/frontend/foreach.py): the EMA idiom
``torch._foreach_lerp_(ema, params, 1 - decay)`` and the optimizers' and gradient utilities' calls
give PyTorch's values, return types and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

_RNG = np.random.default_rng(0)
A, B, C = ([_RNG.uniform(0.5, 2, size=s).astype(np.float32) for s in [(2,), (3, 2)]] for _ in range(3))


def _ts(lib, arrays):
    return [lib.tensor(a) for a in arrays]


def _inplace(lib, name, args, **kwargs):
    """Call the in-place form on a fresh list; vkml returns that list, written (as PyTorch 2.13; older ones None)."""
    tensors = _ts(lib, A)
    result = getattr(lib, name)(tensors, *args(lib), **kwargs)
    assert result is tensors or lib is torch
    return tensors


CASES = {
    "add_scalar": lambda lib: lib._foreach_add(_ts(lib, A), 1.5),
    "add_list_alpha": lambda lib: lib._foreach_add(_ts(lib, A), _ts(lib, B), alpha=2),
    "add_scalar_list": lambda lib: lib._foreach_add(_ts(lib, A), [1, 2.5]),
    "add_one_tensor": lambda lib: lib._foreach_add(_ts(lib, A), lib.tensor(2.0)),
    "sub_inplace_alpha": lambda lib: _inplace(lib, "_foreach_sub_", lambda lib: (_ts(lib, B),), alpha=0.5),
    "mul_inplace": lambda lib: _inplace(lib, "_foreach_mul_", lambda lib: (0.9,)),
    "div_one_tensor": lambda lib: lib._foreach_div(_ts(lib, A), lib.tensor(3.0)),
    "lerp_inplace": lambda lib: _inplace(lib, "_foreach_lerp_", lambda lib: (_ts(lib, B), 0.1)),
    "lerp_weights": lambda lib: lib._foreach_lerp(_ts(lib, A), _ts(lib, B), _ts(lib, C)),
    "addcdiv_scalars": lambda lib: lib._foreach_addcdiv(_ts(lib, A), _ts(lib, B), _ts(lib, C), [0.3, -1.0]),
    "addcmul_tensor_scalars": lambda lib: lib._foreach_addcmul(
        _ts(lib, A), _ts(lib, B), _ts(lib, C), lib.tensor([3.0, -1.0])
    ),
    "norm": lambda lib: lib._foreach_norm(_ts(lib, A)),
    "norm_inf": lambda lib: lib._foreach_norm(_ts(lib, A), float("inf")),
    "max": lambda lib: lib._foreach_max(_ts(lib, A)),
    "exp_inplace": lambda lib: _inplace(lib, "_foreach_exp_", lambda lib: ()),
    "neg": lambda lib: lib._foreach_neg(_ts(lib, A)),
    "maximum_scalar": lambda lib: lib._foreach_maximum(_ts(lib, A), 1.0),
    "maximum_inplace_list": lambda lib: _inplace(lib, "_foreach_maximum_", lambda lib: (_ts(lib, B),)),
    "clamp_min_inplace": lambda lib: _inplace(lib, "_foreach_clamp_min_", lambda lib: (1.0,)),
    "pow_scalar_base": lambda lib: lib._foreach_pow(2.0, _ts(lib, A)),
    "zero_": lambda lib: _inplace(lib, "_foreach_zero_", lambda lib: ()),
    "copy_": lambda lib: _inplace(lib, "_foreach_copy_", lambda lib: (_ts(lib, B),)),
    "int_div": lambda lib: lib._foreach_div([lib.ones(2, dtype=lib.int64)], 2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_foreach_matches_pytorch(case):
    expected, got = CASES[case](torch), CASES[case](vkml)
    assert type(got) is type(expected)
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):
        assert str(mine.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6)


ERRORS = {
    "empty": (lambda lib: lib._foreach_add([], 1), RuntimeError, "at least one tensor"),
    "scalar_list_length": (lambda lib: lib._foreach_add(_ts(lib, A), [1]), RuntimeError, "same number of elements"),
    "tensor_list_length": (
        lambda lib: lib._foreach_lerp(_ts(lib, A), _ts(lib, B)[:1], 0.5),
        RuntimeError,
        "got 2 and 1",
    ),
    "alpha_with_scalar": (lambda lib: lib._foreach_add(_ts(lib, A), 1, alpha=2), TypeError, "_foreach_add"),
    "self_not_a_list": (lambda lib: lib._foreach_mul(lib.ones(2), 2.0), TypeError, "_foreach_mul"),
    "float_into_int": (
        lambda lib: lib._foreach_add_([lib.ones(2, dtype=lib.int64)], 1.5),
        RuntimeError,
        "can't be cast",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_foreach_errors_are_pytorchs(case):
    call, error, text = ERRORS[case]
    with pytest.raises(error, match=text):
        call(torch)
    before = _ts(vkml, A)
    with pytest.raises(error, match=text):
        call(vkml)
    assert [t.tolist() for t in before] == [a.tolist() for a in A]


def test_foreach_ema_update_on_every_device(gpu):
    """The EMA update as timm and diffusers write it, with gradients off, on the CPU and on Vulkan."""
    for device in (vkml.device("cpu"), gpu):
        ema = [vkml.tensor(a, device=device) for a in A]
        params = [vkml.tensor(b, device=device, requires_grad=True) for b in B]
        with vkml.no_grad():
            vkml._foreach_lerp_(ema, params, 0.25)
            vkml._foreach_mul_(ema, 2.0)
        for e, a, b in zip(ema, A, B):
            assert e.device == device and not e.requires_grad
            np.testing.assert_allclose(e.cpu().numpy(), 2 * (a + 0.25 * (b - a)), rtol=1e-6)
