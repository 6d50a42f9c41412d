"""``nn.utils.prune`` against PyTorch's: the masks, the ``_orig``/``_mask`` layout, combined pruning,
global pruning, gradients through the mask, ``remove`` and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401 - torch.nn.utils does not import it

import vkml


def _model(lib, seed=0):
    rng = np.random.default_rng(seed)
    model = lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.ReLU(), lib.nn.Linear(5, 3))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.normal(size=tuple(p.shape)).astype(np.float32)))
    return model


def _prune_and_train(lib):
    """Every number a pruning session shows: masks after each step, gradients, the removed weight."""
    prune = lib.nn.utils.prune
    model = _model(lib)
    seen = []
    prune.l1_unstructured(model[0], "weight", amount=0.3)
    seen += [sorted(model.state_dict()), int((model[0].weight == 0).sum())]
    prune.ln_structured(model[0], "weight", amount=0.4, n=2, dim=0)  # combined: a PruningContainer
    seen.append(model[0].weight_mask.tolist())
    prune.l1_unstructured(model[0], "weight", amount=3, importance_scores=model[0].weight_orig.detach() ** 2)
    seen += [model[0].weight_mask.tolist(), [type(h).__name__ for h in model[0]._forward_pre_hooks.values()]]
    prune.global_unstructured(
        [(model[0], "weight"), (model[2], "weight"), (model[2], "bias")],
        pruning_method=prune.L1Unstructured,
        amount=0.25,
    )
    seen += [model[0].weight_mask.tolist(), model[2].weight_mask.tolist(), model[2].bias_mask.tolist()]
    x = lib.tensor(np.random.default_rng(1).normal(size=(4, 6)).astype(np.float32))
    model(x).square().sum().backward()
    seen += [model[0].weight_orig.grad.tolist(), model[2].bias_orig.grad.tolist(), prune.is_pruned(model)]
    prune.remove(model[0], "weight")
    seen += [sorted(model[0].state_dict()), model[0].weight.tolist(), type(model[0].weight).__name__]
    seen += [len(list(model.parameters())), prune.is_pruned(model[0])]
    seen.append(prune.L1Unstructured(amount=2).prune(lib.tensor([3.0, -1.0, 0.5, 4.0])).tolist())
    conv = lib.nn.Conv2d(2, 4, 3)
    with lib.no_grad():
        conv.weight.copy_(lib.tensor(np.random.default_rng(2).normal(size=(4, 2, 3, 3)).astype(np.float32)))
    prune.ln_structured(conv, "weight", amount=1, n=1, dim=1)
    seen.append(conv.weight_mask.sum(dim=(0, 2, 3)).tolist())
    return seen


def test_prune_session_matches_pytorch():
    got, expected = _prune_and_train(vkml), _prune_and_train(torch)
    assert len(got) == len(expected)
    for index, (a, b) in enumerate(zip(got, expected, strict=True)):
        if isinstance(a, str | bool | int) or (isinstance(a, list) and isinstance(a[0], str)):
            assert a == b, index
        else:  # masks exactly, gradients to float32's rounding
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=str(index))


def test_custom_method_identity_and_random_masks():
    prune = vkml.nn.utils.prune

    class EveryOther(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask

    layer = vkml.nn.Linear(3, 2)
    EveryOther.apply(layer, "weight")
    assert layer.weight_mask.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    prune.identity(layer, "bias")
    assert layer.bias_mask.tolist() == [1.0, 1.0]
    prune.random_unstructured(layer, "bias", amount=1)
    assert layer.bias_mask.sum().item() == 1.0
    conv = vkml.nn.Conv2d(2, 4, 3)
    prune.random_structured(conv, "weight", amount=0.5, dim=0)
    kept = conv.weight_mask.sum(dim=(1, 2, 3))
    assert sorted(kept.tolist()) == [0.0, 0.0, 18.0, 18.0]
    assert ((conv.weight == 0) == (conv.weight_mask == 0)).all().item()


@pytest.mark.parametrize(
    "call",
    [
        lambda p, nn: p.l1_unstructured(nn.Linear(2, 2), "weight", amount=-1),
        lambda p, nn: p.l1_unstructured(nn.Linear(2, 2), "weight", amount=1.5),
        lambda p, nn: p.l1_unstructured(nn.Linear(2, 2), "weight", amount="a"),
        lambda p, nn: p.l1_unstructured(nn.Linear(2, 2), "weight", amount=5),
        lambda p, nn: p.ln_structured(nn.Linear(2, 2), "bias", amount=1, n=1, dim=0),
        lambda p, nn: p.remove(nn.Linear(2, 2), "weight"),
        lambda p, nn: p.global_unstructured(
            [(nn.Linear(2, 2), "weight")], pruning_method=p.LnStructured, amount=1, n=1
        ),
    ],
)
def test_errors_match_pytorch(call):
    with pytest.raises(Exception) as expected:
        call(torch.nn.utils.prune, torch.nn)
    with pytest.raises(type(expected.value)) as got:
        call(vkml.nn.utils.prune, vkml.nn)

    def text(error):  # up to the module's and the shape's repr, the library's name made neutral
        return str(error).split(" of module ")[0].split("Found tensor")[0].replace("torch.", "vkml.")

    assert text(got.value) == text(expected.value)


def test_failed_prune_leaves_the_module_as_it_was():
    layer = vkml.nn.Linear(2, 2)
    before = layer.weight
    with pytest.raises(ValueError):
        vkml.nn.utils.prune.l1_unstructured(layer, "weight", amount=9)
    assert sorted(layer.state_dict()) == ["bias", "weight"] and layer.weight is before
    assert not vkml.nn.utils.prune.is_pruned(layer)
