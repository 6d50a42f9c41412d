"""``torch._dynamo`` and ``torch._inductor.config`` names programs set around ``torch.compile``, against torch."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import vkml


@pytest.fixture(autouse=True, scope="module")
def _torch_dynamo():
    # imported by the tests that use them rather than at collection: torch._dynamo takes over a second
    # of CPU to import, in every pytest-xdist worker that collects this file
    importlib.import_module("torch._dynamo")
    importlib.import_module("torch._inductor.config")


def _error(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 - the comparison is of the errors
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("name", ["suppress_errors", "cache_size_limit", "recompile_limit", "optimize_ddp", "verbose"])
def test_dynamo_config_defaults_are_torchs(name):
    assert getattr(vkml._dynamo.config, name) == getattr(torch._dynamo.config, name)


def test_config_settings_patch_and_unknown_names_behave_as_torch():
    for lib in (torch, vkml):
        config = lib._dynamo.config
        config.suppress_errors = True
        assert config.suppress_errors is True
        config.suppress_errors = False
        with config.patch(cache_size_limit=64):
            assert config.cache_size_limit == 64
        assert config.cache_size_limit == 8
        lib._inductor.config.coordinate_descent_tuning = True
        lib._inductor.config.coordinate_descent_tuning = False
        assert lib._inductor.config.triton.unique_kernel_names is True
    for fn in (
        lambda lib: setattr(lib._dynamo.config, "suppress_error", True),
        lambda lib: lib._dynamo.config.no_such_setting,
        lambda lib: lib._inductor.config.no_such_setting,
    ):
        assert _error(fn, vkml) == _error(fn, torch) is not None


def test_dynamo_modules_import_by_name():
    for name in ("vkml._dynamo", "vkml._dynamo.config", "vkml._inductor.config"):
        assert importlib.import_module(name) is not None


def test_disabled_functions_and_compiled_models_run_as_the_model():
    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh())
        lib._dynamo.reset()
        # torch.compile's first call loads inductor for seconds: vkml's wrapper is checked against torch's
        # OptimizedModule in tests/test_torch_gaps.py; here torch's side is the model itself
        compiled = lib.compile(model) if lib is vkml else model

        @lib._dynamo.disable
        def head(x):
            return x.sum(-1)

        @lib.compiler.disable(recursive=False)
        def scale(x):
            return x * 2

        out = scale(head(compiled(lib.ones(2, 3))))
        return compiled, model, lib.compiler.is_compiling(), out.detach().numpy()

    (_, model, compiling, want), (compiled, vk_model, vk_compiling, got) = run(torch), run(vkml)
    assert compiled._orig_mod is vk_model and compiling is vk_compiling is False
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_compiled_model_deep_copies_and_pickles_as_a_model_of_its_own():
    """EMA and checkpoint code copy the compiled model (``ema = copy.deepcopy(model)``): the copy is an
    OptimizedModule over a copied model, computing what torch's model with the same weights computes."""
    import copy
    import pickle

    torch.manual_seed(0)
    reference = torch.nn.Linear(3, 2)
    model = vkml.nn.Linear(3, 2)
    model.load_state_dict({k: v.numpy() for k, v in reference.state_dict().items()})
    compiled = vkml.compile(model)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = reference(torch.tensor(x)).detach().numpy()
    for other in (copy.deepcopy(compiled), pickle.loads(pickle.dumps(compiled))):
        assert type(other).__name__ == "OptimizedModule" and other._orig_mod is not model
        assert list(other.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
        np.testing.assert_allclose(other(vkml.tensor(x)).detach().numpy(), want, rtol=1e-6)
        with vkml.no_grad():
            other.weight.add_(1.0)  # the copy's own weights: the original is untouched
        np.testing.assert_allclose(compiled(vkml.tensor(x)).detach().numpy(), want, rtol=1e-6)
