"""The meta device (shapes and dtypes, no data) and building models on it, against torch."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import vkml

TORCH_2_13 = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)


def _both(fn):
    """``fn(lib)`` for torch and vkml: the results, or the (type name, message) of what each raised."""
    out = []
    for lib in (torch, vkml):
        try:
            out.append(fn(lib))
        except Exception as e:  # noqa: BLE001 - the comparison is of the errors
            out.append((type(e).__name__, str(e)))
    return out


def _text(value) -> str:
    return repr(value).replace("torch.", "").replace("vkml.", "")


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.empty(2, 3, device="meta"),
        lambda lib: lib.ones(3).to("meta"),
        lambda lib: lib.arange(5, device="meta"),
        lambda lib: lib.randn(2, 2, device="meta", dtype=lib.float16),
        lambda lib: lib.tensor([1.0, 2.0], device="meta"),
        lambda lib: lib.empty(2, 3, device="meta") @ lib.empty(3, 4, device="meta"),
        lambda lib: lib.empty(4, 6, device="meta").view(2, 12)[:, 3:].sum(0),
        lambda lib: lib.empty(3, device="meta", requires_grad=True) * 2,
        lambda lib: lib.nn.Parameter(lib.empty(2, device="meta")),
        lambda lib: lib.zeros_like(lib.empty(2, 3, device="meta")).any(),
    ],
)
def test_meta_tensors_print_their_shape_as_torch(make):
    want, got = _both(lambda lib: _text(make(lib)))
    assert got == want


@pytest.mark.parametrize(
    "read",
    [
        lambda t: t.numpy(),
        lambda t: t.sum().item(),
        lambda t: bool(t.sum()),
        lambda t: float(t.sum()),
        lambda t: t.tolist(),
        lambda t: t.cpu(),
        lambda t: t.to("cpu"),
    ],
)
def test_reading_a_meta_tensor_raises_torchs_error(read):
    want, got = _both(lambda lib: read(lib.empty(2, 3, device="meta")))
    assert isinstance(want, tuple) and got == want


def test_meta_device_queries_match_torch():
    for lib in (torch, vkml):
        x = lib.empty(2, 3, device="meta")
        assert x.is_meta and not lib.ones(1).is_meta
        assert (x.device.type, x.device.index, str(x.device)) == ("meta", None, "meta")
        assert x.shape == (2, 3) and x.new_empty(4).is_meta


@pytest.mark.skipif(not TORCH_2_13, reason="PyTorch before 2.13 moves the generator for some meta draws")
def test_meta_draws_leave_the_generator_where_it_was():
    def draws(lib):
        lib.manual_seed(0)
        lib.randn(5, device="meta")
        lib.nn.init.trunc_normal_(lib.empty(4, device="meta"), std=0.02)
        lib.nn.init.normal_(lib.empty(7, device="meta"))
        lib.nn.functional.dropout(lib.empty(3, device="meta"), 0.5)
        lib.nn.init.orthogonal_(lib.empty(4, 3, device="meta"))
        lib.nn.init.sparse_(lib.empty(4, 3, device="meta"), 0.5)
        lib.empty(4, device="meta").bernoulli_(0.5).exponential_()
        lib.randperm(4, device="meta"), lib.randint(0, 5, (3,), device="meta")
        with lib.device("meta"):
            lib.nn.Linear(3, 4)
        return np.asarray(lib.randn(3).tolist())

    want, got = _both(draws)
    np.testing.assert_array_equal(got, want)


def test_a_model_built_on_meta_moves_to_empty_and_initializes_as_torch():
    def build(lib):
        with lib.device("meta"):
            model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.GELU(), lib.nn.Linear(8, 2))
        assert all(p.is_meta for p in model.parameters())
        assert model.to_empty(device="cpu") is model
        lib.manual_seed(3)
        for layer in (model[0], model[2]):
            layer.reset_parameters()
        return [p.detach().numpy() for p in model.parameters()]

    want, got = _both(build)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(b, a)


def test_module_to_from_meta_says_to_use_to_empty():
    want, got = _both(lambda lib: lib.nn.Linear(2, 2, device="meta").to("cpu"))
    assert got[0] == "NotImplementedError" and got == want


def test_loading_into_meta_parameters_warns_and_assign_takes_the_values():
    def load(lib):
        model = lib.nn.Linear(3, 2, device="meta")
        state = {"weight": lib.ones(2, 3), "bias": lib.zeros(2)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.load_state_dict(state)
        assert model.weight.is_meta
        messages = [str(w.message) for w in caught]
        result = model.load_state_dict(state, assign=True)
        return messages, repr(result), model.weight.is_meta, model(lib.ones(1, 3)).tolist()

    want, got = _both(load)
    assert got == want


def test_meta_tensors_pickle_and_deepcopy_as_shapes():
    for lib in (torch, vkml):
        x = lib.empty(2, 3, device="meta", requires_grad=True)
        for copied in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
            assert copied.is_meta and copied.shape == (2, 3) and copied.requires_grad


def test_default_device_context_and_setting_reach_factories():
    for lib in (torch, vkml):
        with lib.device("meta"):
            assert lib.ones(2).is_meta and lib.nn.Linear(2, 2).weight.is_meta
            assert not lib.ones(2, device="cpu").is_meta
        assert not lib.ones(2).is_meta
        lib.set_default_device("meta")
        try:
            assert lib.zeros(3).is_meta
        finally:
            lib.set_default_device(None)
        assert not lib.zeros(3).is_meta


def test_to_empty_gives_each_module_its_own_parameter_as_torch():
    def tie(lib):
        with lib.device("meta"):
            model = lib.nn.Sequential(lib.nn.Embedding(5, 4), lib.nn.Linear(4, 5, bias=False), lib.nn.LayerNorm(4))
        model[1].weight = model[0].weight
        model.to_empty(device="cpu")
        lib.manual_seed(0)
        for layer in model:
            layer.reset_parameters()
        return model[1].weight is model[0].weight, [p.detach().numpy() for p in model.parameters()]

    (want_tied, want), (got_tied, got) = tie(torch), tie(vkml)
    assert got_tied is want_tied is False
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(b, a)


def test_skip_init_builds_on_meta_and_draws_nothing():
    def build(lib):
        lib.manual_seed(0)
        layer = lib.nn.utils.skip_init(lib.nn.Linear, 3, 4)
        return layer.weight.shape, layer.weight.is_meta, lib.randn(3).tolist()

    assert build(vkml) == build(torch)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.nn.LayerNorm(4),
        lambda lib: lib.nn.GroupNorm(2, 4),
        lambda lib: lib.nn.RMSNorm(4),
        lambda lib: lib.nn.PReLU(3, init=0.1),
    ],
    ids=["LayerNorm", "GroupNorm", "RMSNorm", "PReLU"],
)
def test_layers_reset_their_parameters_after_to_empty_as_torch(make):
    def reset(lib):
        with lib.device("meta"):
            layer = make(lib)
        layer.to_empty(device="cpu")
        layer.reset_parameters()
        return [p.detach().numpy() for p in layer.parameters()]

    for a, b in zip(reset(torch), reset(vkml), strict=True):
        np.testing.assert_array_equal(b, a)
