"""Gaps the RL and self-supervised programs (tests/programs/: ppo_gae, sac_td3, mae_masking, ...) found,
each checked against PyTorch. (Categorical.sample()'s draw, a one-sample multinomial, and the gamma
family's samples are in tests/test_random.py with PyTorch's other draws; Gamma.rsample's gradient
with respect to the concentration in tests/test_distributions.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

# MAE's patchify: ``imgs.reshape(shape=(...))``; the other movement methods take their sizes by
# PyTorch's keyword too
KEYWORD_SIZES = [
    ("reshape", lambda x: x.reshape(shape=(3, 4))),
    ("view", lambda x: x.view(size=[4, 3])),
    ("permute", lambda x: x.permute(dims=(1, 0))),
    ("expand", lambda x: x.expand(size=(2, 2, 6))),
    ("repeat", lambda x: x.repeat(repeats=(2, 1, 1))),
    ("tile", lambda x: x.tile(dims=(2,))),
]


@pytest.mark.parametrize("method", [m for _, m in KEYWORD_SIZES], ids=[n for n, _ in KEYWORD_SIZES])
def test_movement_methods_take_their_sizes_by_keyword(method):
    values = np.arange(12, dtype=np.float32).reshape(2, 6)
    got = method(vkml.tensor(values, requires_grad=True))
    want = method(torch.tensor(values, requires_grad=True))
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    weights = np.linspace(-1, 1, want.numel(), dtype=np.float32).reshape(tuple(want.shape))
    source_got, source_want = vkml.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (method(source_got) * vkml.tensor(weights)).sum().backward()
    (method(source_want) * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(source_got.grad.numpy(), source_want.grad.numpy())


@pytest.mark.parametrize(
    "call",
    [lambda x: x.reshape(3, shape=(3, 4)), lambda x: x.reshape(shape=(3, 4), size=(3, 4))],
    ids=["both", "other"],
)
def test_a_wrong_size_keyword_is_a_type_error_as_in_pytorch(call):
    with pytest.raises(TypeError):
        call(torch.zeros(2, 6))
    with pytest.raises(TypeError):
        call(vkml.zeros(2, 6))


# efficient-kan's update_grid: ``torch.concatenate([...], dim=0)``; PyTorch's concat and concatenate
# take both names of the dim
CONCAT_NAMES = [
    ("concatenate dim", lambda L, ts: L.concatenate(ts, dim=1)),
    ("concatenate axis", lambda L, ts: L.concatenate(ts, axis=1)),
    ("concatenate positional", lambda L, ts: L.concatenate(ts, 1)),
    ("concat axis", lambda L, ts: L.concat(ts, axis=1)),
    ("concat dim", lambda L, ts: L.concat(ts, dim=1)),
]


@pytest.mark.parametrize("join", [j for _, j in CONCAT_NAMES], ids=[n for n, _ in CONCAT_NAMES])
def test_concat_and_concatenate_take_dim_and_axis(join):
    parts = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 2), np.float32)]
    got = join(vkml, [vkml.tensor(p) for p in parts])
    want = join(torch, [torch.tensor(p) for p in parts])
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# PixelCNN's sampling loop calls ``F.softmax(out[:, :, i, j])``: the deprecation warning names the
# program's line, as PyTorch's does, not a vkml wrapper's
IMPLICIT_SOFTMAX = [
    ("softmax", lambda L, x: L.nn.functional.softmax(x)),
    ("log_softmax", lambda L, x: L.nn.functional.log_softmax(x)),
    ("softmin", lambda L, x: L.nn.functional.softmin(x)),
]


@pytest.mark.parametrize("call", [c for _, c in IMPLICIT_SOFTMAX], ids=[n for n, _ in IMPLICIT_SOFTMAX])
def test_the_implicit_softmax_dim_warning_names_the_callers_line(call):
    import warnings

    for lib in (torch, vkml):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = call(lib, lib.ones(2, 3))
        (warning,) = [w for w in caught if "Implicit dimension choice" in str(w.message)]
        assert warning.filename == __file__, (lib.__name__, warning.filename)
        assert tuple(out.shape) == (2, 3)


# numpy-minded RL code writes ``obs.unsqueeze(axis=0)``, ``torch.stack(frames, axis=0)``: PyTorch
# takes ``axis`` as its alias of ``dim`` there too
AXIS_ALIASES = [
    ("squeeze method", lambda L, x: x[:1].squeeze(axis=0)),
    ("squeeze function", lambda L, x: L.squeeze(x[:, :1], axis=1)),
    ("unsqueeze method", lambda L, x: x.unsqueeze(axis=-1)),
    ("unsqueeze function", lambda L, x: L.unsqueeze(x, axis=0)),
    ("stack", lambda L, x: L.stack([x, 2 * x], axis=1)),
]


@pytest.mark.parametrize("call", [c for _, c in AXIS_ALIASES], ids=[n for n, _ in AXIS_ALIASES])
def test_axis_is_dims_alias_in_squeeze_unsqueeze_and_stack(call):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(call(vkml, vkml.tensor(values)).numpy(), call(torch, torch.tensor(values)).numpy())


def test_unsqueeze_without_a_dim_is_a_type_error_as_in_pytorch():
    for lib in (torch, vkml):
        with pytest.raises(TypeError):
            lib.zeros(2).unsqueeze()


AXIS_SELECTIONS = [
    ("sort", lambda L, x: x.sort(axis=0)[0]),
    ("argsort", lambda L, x: L.argsort(x, axis=0)),
    ("topk", lambda L, x: x.topk(1, axis=0)[1]),
    ("median", lambda L, x: x.median(axis=1)[0]),
    ("nanmedian", lambda L, x: L.nanmedian(x, axis=0)[0]),
    ("count_nonzero", lambda L, x: x.count_nonzero(axis=1)),
]


@pytest.mark.parametrize("call", [c for _, c in AXIS_SELECTIONS], ids=[n for n, _ in AXIS_SELECTIONS])
def test_axis_is_dims_alias_in_sorting_and_selection(call):
    values = np.array([[3.0, 0.0, 2.0], [1.0, 5.0, 0.0]], np.float32)
    np.testing.assert_array_equal(call(vkml, vkml.tensor(values)).numpy(), call(torch, torch.tensor(values)).numpy())
