"""PyTorch's test/nn/test_pruning.py, run on torch and on vkml side by side.

Each scenario follows one of its tests: the amount checks (``_validate_pruning_amount_init``,
``_validate_pruning_amount``, ``_compute_nparams_toprune``), the ``_orig`` / ``_mask`` layout random pruning
leaves on Linear and Conv3d weights and biases, identity and all-ones masks leaving forward and gradients
alone, a mocked ``compute_mask`` (gradients zero where masked, weights kept there by an update, forward by
hand, remove keeping the output), parameter identity through prune and remove, pickling, repeated pruning
into a ``PruningContainer`` (its errors and its compute_mask on known tensors), l1 and ln pruning by hand
with and without importance scores, equal magnitudes, random structured amounts, remove and its error,
global pruning, CustomFromMask, rollback when compute_mask fails, saving a pruned model and a pruned state
dict, ``prune()`` itself and an LSTM's flat weights. A scenario returns what the PyTorch test asserts on;
on vkml it must return, raise and warn what it does on torch (tests/pytorch_suite.py). Random masks and
weights come from ``manual_seed`` (vkml's generator is PyTorch's CPU generator) or seeded numpy arrays.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from unittest import mock

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401 - torch.nn.utils does not import it
from pytorch_suite import check, known_params

import vkml

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def P(m):
    return m.nn.utils.prune


def arr(seed: int, *shape) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _raised(fn) -> str | None:
    try:
        fn()
    except Exception as error:  # compared with torch's
        return type(error).__name__
    return None


def _modules(m):
    m.manual_seed(0)
    return [m.nn.Linear(5, 7), m.nn.Conv3d(2, 2, 2)]


# ---------- amounts
@sc
def validate_pruning_amount_init(m):
    check_init = P(m)._validate_pruning_amount_init
    seen = [_raised(lambda a=a: check_init(amount=a)) for a in ("I'm a string", 1.1, 20.0, -10)]
    seen += [_raised(lambda a=a: check_init(amount=a)) for a in (0.34, 1500, 0, 0.0, 1, 1.0)]
    return seen


@sc
def validate_pruning_amount(m):
    check_size = P(m)._validate_pruning_amount
    cases = ((20, 19), (0.3, 0), (19, 20), (0, 0), (1, 1))
    return [_raised(lambda a=a, s=s: check_size(amount=a, tensor_size=s)) for a, s in cases]


@sc
def compute_nparams_to_prune(m):
    count = P(m)._compute_nparams_toprune
    return [count(amount=a, tensor_size=s) for a, s in ((0, 15), (10, 15), (1, 15), (1.0, 15), (0.4, 17))]


# ---------- random pruning: layout, values
@sc
def random_pruning_sizes_orig_and_new_weight(m):
    seen = []
    for module in _modules(m):
        for name in ("weight", "bias"):
            original = getattr(module, name)
            before = original.detach().clone()
            P(m).random_unstructured(module, name=name, amount=0.1)
            mask, orig = getattr(module, name + "_mask"), getattr(module, name + "_orig")
            seen.append((tuple(mask.shape), tuple(orig.shape), tuple(getattr(module, name).shape)))
            seen.append((orig is original, bool(m.equal(orig, before))))
            seen.append(bool(m.equal(getattr(module, name), orig * mask.to(dtype=original.dtype))))
            seen.append((mask, type(getattr(module, name)).__name__))
    return seen


def _linear_with_mask(m, fill, masked_value):
    m.manual_seed(0)
    module = m.nn.Linear(5, 2)
    mask = fill(module.weight)
    mask[1, 0] = masked_value
    mask[0, 3] = masked_value
    with mock.patch.object(P(m).RandomUnstructured, "compute_mask") as compute_mask:
        compute_mask.return_value = mask
        P(m).random_unstructured(module, name="weight", amount=0.9)
    return module, mask


@sc
def identity_pruning(m):
    m.manual_seed(0)
    x = m.ones(1, 5)
    module = m.nn.Linear(5, 2)
    y_before = module(x)
    y_before.sum().backward()
    old_grads = module.weight.grad.clone(), module.bias.grad.clone()
    module.zero_grad()
    P(m).identity(module, name="weight")
    y_after = module(x)
    y_after.sum().backward()
    return old_grads, y_before, y_after, module.weight_orig.grad, module.bias.grad, module(x), module(x)


@sc
def random_pruning_0perc(m):
    """A mocked compute_mask of ones: forward and gradients as without pruning."""
    m.manual_seed(0)
    x = m.ones(1, 5)
    module = m.nn.Linear(5, 2)
    y_before = module(x)
    y_before.sum().backward()
    old_grad = module.weight.grad.clone()
    module.zero_grad()
    with mock.patch.object(P(m).RandomUnstructured, "compute_mask") as compute_mask:
        compute_mask.return_value = m.ones_like(module.weight)
        P(m).random_unstructured(module, name="weight", amount=0.9)
    y_after = module(x)
    y_after.sum().backward()
    return old_grad, y_before, y_after, module.weight_orig.grad, module.bias.grad


@sc
def random_pruning(m):
    module, mask = _linear_with_mask(m, m.ones_like, 0)
    module(m.ones(1, 5)).sum().backward()
    seen = [module.weight_orig.grad, module.bias.grad, mask]
    old = module.weight_orig.clone()
    for p in module.parameters():
        p.data.sub_(p.grad.data * 1.0)
    seen.append((old[1, 0], module.weight_orig[1, 0], old[0, 3], module.weight_orig[0, 3]))
    return seen


@sc
def random_pruning_forward(m):
    module, _ = _linear_with_mask(m, m.zeros_like, 1)
    yhat = module(m.ones(1, 5))
    return yhat, module.weight_orig[0, 3] + module.bias[0], module.weight_orig[1, 0] + module.bias[1]


@sc
def remove_pruning_forward(m):
    module, _ = _linear_with_mask(m, m.ones_like, 0)
    x = m.ones(1, 5)
    y_pruned = module(x)
    P(m).remove(module, "weight")
    return y_pruned, module(x), sorted(dict(module.named_parameters()))


@sc
def pruning_id_consistency(m):
    module = m.nn.Linear(5, 2, bias=False)
    tensor_id = id(next(iter(module.parameters())))
    P(m).random_unstructured(module, name="weight", amount=0.9)
    seen = [tensor_id == id(next(iter(module.parameters())))]
    P(m).remove(module, "weight")
    return [*seen, tensor_id == id(next(iter(module.parameters())))]


@sc
def random_pruning_pickle(m):
    seen = []
    for module in _modules(m):
        for name in ("weight", "bias"):
            P(m).random_unstructured(module, name=name, amount=0.1)
            new = pickle.loads(pickle.dumps(module))
            seen.append((type(new).__name__, sorted(new.state_dict()), getattr(new, name)))
            seen.append([type(h).__name__ for h in new._forward_pre_hooks.values()])
    return seen


# ---------- repeated pruning, PruningContainer
@slow
def multiple_pruning_calls(m):
    module = m.nn.Conv3d(2, 2, 2)
    with m.no_grad():
        module.weight.copy_(m.tensor(arr(0, 2, 2, 2, 2, 2)))
    P(m).l1_unstructured(module, name="weight", amount=0.1)
    first_mask = module.weight_mask
    P(m).ln_structured(module, name="weight", amount=0.3, n=2, dim=0)
    hook = next(iter(module._forward_pre_hooks.values()))
    seen = [type(hook).__name__, hook._tensor_name, len(hook), type(hook[0]).__name__, type(hook[1]).__name__]
    seen.append(bool(m.all(module.weight_mask[first_mask == 0] == 0)))
    P(m).ln_structured(module, name="weight", amount=0.1, n=float("inf"), dim=1)
    hook = next(iter(module._forward_pre_hooks.values()))
    seen += [hook._tensor_name, len(hook), module.weight_mask]
    return seen


@sc
def pruning_container(m):
    container = P(m).PruningContainer()
    container._tensor_name = "test"
    seen = [len(container)]
    p = P(m).L1Unstructured(amount=2)
    p._tensor_name = "test"
    container.add_pruning_method(p)
    seen.append(len(container))
    q = P(m).L1Unstructured(amount=2)
    q._tensor_name = "another_test"
    seen.append(_raised(lambda: container.add_pruning_method(q)))
    seen.append(_raised(lambda: container.add_pruning_method(10)))
    seen.append(_raised(lambda: container.add_pruning_method("ugh")))
    return seen


@sc
def pruning_container_compute_mask(m):
    container = P(m).PruningContainer()
    container._tensor_name = "test"
    t = m.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]).to(dtype=m.float32)
    default_mask = m.tensor([[1, 1, 1, 0], [1, 1, 0, 1]])
    seen = []
    for method in (P(m).L1Unstructured(amount=2), P(m).LnStructured(1, n=2, dim=0), P(m).LnStructured(1, n=2, dim=1)):
        method._tensor_name = "test"
        container.add_pruning_method(method)
        seen.append(container.compute_mask(t, default_mask))
    return seen


# ---------- l1 and ln pruning by hand
def _weight_by_hand(m):
    module = m.nn.Linear(4, 2)
    module.weight = m.nn.Parameter(m.tensor([[1, 2, 3, 4], [-4, -3, -2, -1]], dtype=m.float32))
    return module


@sc
def l1_unstructured_pruning(m):
    module = _weight_by_hand(m)
    P(m).l1_unstructured(module, "weight", amount=2)
    first = module.weight
    P(m).l1_unstructured(module, "weight", amount=2)
    return first, module.weight


@sc
def l1_unstructured_pruning_with_importance_scores(m):
    module = _weight_by_hand(m)
    scores = m.tensor([[4, 2, 1, 3], [-3, -1, -2, -4]], dtype=m.float32)
    P(m).l1_unstructured(module, "weight", amount=2, importance_scores=scores)
    first = module.weight
    P(m).l1_unstructured(module, "weight", amount=2, importance_scores=scores)
    return first, module.weight


@sc
def unstructured_pruning_same_magnitude(m):
    t = 2 * m.tensor(np.random.default_rng(0).integers(-1, 2, size=(10, 7)))
    count = P(m)._compute_nparams_toprune(0.2, t.nelement())
    mask = P(m).L1Unstructured(amount=0.2).compute_mask(t, default_mask=m.ones_like(t))
    return count, int(m.sum(mask == 0)), mask.dtype


@sc
def random_structured_pruning_amount(m):
    m.manual_seed(0)
    t = 2 * m.tensor(np.random.default_rng(1).integers(-1, 2, size=(5, 4, 2))).to(dtype=m.float32)
    mask = P(m).RandomStructured(amount=0.6, dim=2).compute_mask(t, default_mask=m.ones_like(t))
    return sorted(m.sum(mask == 0, dim=(0, 1)).tolist())


def _conv_by_hand(m):
    module = m.nn.Conv2d(3, 1, 2)
    module.weight.data = m.tensor([[[[1.0, 2.0], [1.0, 2.5]], [[0.5, 1.0], [0.1, 0.1]], [[-3.0, -5.0], [0.1, -1.0]]]])
    return module


@sc
def ln_structured_pruning(m):
    module = _conv_by_hand(m)
    P(m).ln_structured(module, "weight", amount=1, n=2, dim=1)
    first = module.weight_mask
    P(m).ln_structured(module, "weight", amount=1, n=1, dim=-1)
    return first, module.weight_mask


@sc
def ln_structured_pruning_importance_scores(m):
    module = _conv_by_hand(m)
    scores = m.tensor([[[[10.0, 1.0], [10.0, 1.0]], [[30.0, 3.0], [30.0, 3.0]], [[-20.0, -2.0], [-20.0, -2.0]]]])
    P(m).ln_structured(module, "weight", amount=1, n=2, dim=1, importance_scores=scores)
    first = module.weight_mask
    P(m).ln_structured(module, "weight", amount=1, n=1, dim=-1, importance_scores=scores)
    return first, module.weight_mask


# ---------- remove, global, custom masks, rollback
@sc
def remove_pruning(m):
    seen = []
    for module in _modules(m):
        for name in ("weight", "bias"):
            P(m).random_unstructured(module, name, amount=0.5)
            seen.append((sorted(dict(module.named_parameters())), sorted(dict(module.named_buffers()))))
            pruned = getattr(module, name)
            P(m).remove(module, name)
            seen.append((sorted(dict(module.named_parameters())), sorted(dict(module.named_buffers()))))
            seen.append((bool(m.equal(pruned, getattr(module, name))), type(getattr(module, name)).__name__))
    return seen


@sc
def remove_pruning_exception(m):
    seen = []
    for module in _modules(m):
        for name in ("weight", "bias"):
            seen.append((P(m).is_pruned(module), _raised(lambda mod=module, n=name: P(m).remove(mod, n))))
    return seen


@sc
def remove_pruning_error_message(m):
    return P(m).remove(m.nn.Linear(5, 7), "weight")


def _global(m, with_scores: bool):
    module = _weight_by_hand(m)
    other = m.nn.Linear(3, 1)
    other.weight = m.nn.Parameter(m.tensor([[0, 0.1, -2]]).to(dtype=m.float32))
    scores = None
    if with_scores:
        scores = {
            (module, "weight"): m.tensor([[4, 2, 1, 3], [-3, -1, -2, -4]], dtype=m.float32),
            (other, "weight"): m.tensor([[0, 10.0, -0.2]]).to(dtype=m.float32),
        }
    P(m).global_unstructured(
        ((module, "weight"), (other, "weight")),
        pruning_method=P(m).L1Unstructured,
        amount=4,
        importance_scores=scores,
    )
    return module.weight, other.weight, module.weight_mask.dtype


SC["global_pruning"] = lambda m: _global(m, False)
SC["global_pruning_importance_scores"] = lambda m: _global(m, True)


@sc
def custom_from_mask_pruning(m):
    mask = m.tensor([[0, 1, 1, 0], [0, 0, 1, 1]])
    default_mask = m.tensor([[0, 0, 0, 0], [1, 1, 1, 1]])
    t = m.tensor(arr(0, 2, 4))
    return P(m).CustomFromMask(mask=mask).compute_mask(t, default_mask)


@sc
def custom_from_mask_on_a_module(m):
    module = _weight_by_hand(m)
    P(m).custom_from_mask(module, "weight", mask=m.tensor([[0, 1, 1, 0], [1, 1, 0, 1]]))
    return module.weight, module.weight_mask, sorted(module.state_dict())


@sc
def pruning_rollback(m):
    seen = []
    for module in _modules(m):
        for name in ("weight", "bias"):
            with mock.patch.object(P(m).L1Unstructured, "compute_mask") as compute_mask:
                compute_mask.side_effect = Exception("HA!")
                seen.append(_raised(lambda mod=module, n=name: P(m).l1_unstructured(mod, name=n, amount=0.9)))
            seen.append((name in dict(module.named_parameters()), name + "_mask" in dict(module.named_buffers())))
            seen.append(name + "_orig" in dict(module.named_parameters()))
    return seen


# ---------- serialization
def _sequential(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Linear(10, 10), m.nn.ReLU(), m.nn.Linear(10, 1))


@slow
def pruning_serialization_model(m):
    model = _sequential(m)
    seen = [sorted(model.state_dict())]
    P(m).l1_unstructured(module=model[0], name="weight", amount=0.9)
    seen += [sorted(model.state_dict()), hasattr(model[0], "weight")]
    pruned = model[0].weight
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pt")
        m.save(model, path)
        new_model = m.load(path, weights_only=False)
    seen += [sorted(new_model.state_dict()), new_model[0].weight, pruned]
    x = m.tensor(arr(1, 3, 10))
    seen.append((model(x), new_model(x)))
    return seen


@sc
def pruning_serialization_state_dict(m):
    model = _sequential(m)
    P(m).l1_unstructured(module=model[0], name="weight", amount=0.9)
    pruned = model[0].weight
    P(m).remove(module=model[0], name="weight")
    seen = [sorted(model.state_dict())]
    new_model = m.nn.Sequential(m.nn.Linear(10, 10), m.nn.ReLU(), m.nn.Linear(10, 1))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "state.pt")
        m.save(model.state_dict(), path)
        new_model.load_state_dict(m.load(path))
    seen += [sorted(new_model.state_dict()), new_model[0].weight, pruned]
    return seen


@sc
def pruned_state_dict_loads_into_a_pruned_model(m):
    model = _sequential(m)
    P(m).l1_unstructured(module=model[0], name="weight", amount=0.5)
    other = m.nn.Sequential(m.nn.Linear(10, 10), m.nn.ReLU(), m.nn.Linear(10, 1))
    seen = [_raised(lambda: other.load_state_dict(model.state_dict()))]
    P(m).identity(other[0], "weight")
    other.load_state_dict(model.state_dict())
    return [*seen, other[0].weight, other[0].weight_mask]


# ---------- prune() itself
@sc
def prune(m):
    p = P(m).L1Unstructured(amount=2)
    t = m.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]).to(dtype=m.float32)
    default_mask = m.tensor([[1, 1, 1, 0], [1, 1, 0, 1]])
    scores = m.tensor([[1, 2, 3, 4], [1.5, 1.6, 1.7, 1.8]]).to(dtype=m.float32)
    return p.prune(t, default_mask), p.prune(t, default_mask, importance_scores=scores), p.prune(t, default_mask, t)


# ---------- LSTM
@slow
def rnn_pruning(m):
    m.manual_seed(0)
    lstm = m.nn.LSTM(8, 8)
    P(m).l1_unstructured(lstm, "weight_ih_l0", 0.5)
    seen = [sum(isinstance(p, m.nn.Parameter) for p in lstm._flat_weights)]
    P(m).remove(lstm, "weight_ih_l0")
    seen.append(sum(isinstance(p, m.nn.Parameter) for p in lstm._flat_weights))
    seen.append(("weight_ih_l0" in lstm._parameters, lstm._parameters["weight_ih_l0"] is not None))
    seen.append(("weight_ih_l0_orig" in lstm._parameters, sorted(dict(lstm.named_parameters()))))
    return seen


@slow
def rnn_pruning_forward(m):
    m.manual_seed(0)
    lstm = m.nn.LSTM(8, 8)
    P(m).l1_unstructured(lstm, "weight_ih_l0", 0.5)
    x = m.tensor(arr(2, 3, 2, 8))
    out, _ = lstm(x)
    out.sum().backward()
    return out, lstm.weight_ih_l0_orig.grad


# ---------- beyond PyTorch's file: norms, dtypes, messages, ties
@slow
def ln_structured_norms_and_float64(m):
    weight = arr(3, 3, 4)
    seen = []
    for n in (1, 2, 3, 0.5, float("inf"), float("-inf"), "fro"):
        module = m.nn.Linear(4, 3)
        module.weight = m.nn.Parameter(m.tensor(weight))
        P(m).ln_structured(module, "weight", amount=1, n=n, dim=0)
        seen.append(module.weight_mask)
    module = m.nn.Linear(4, 3).double()
    module.weight = m.nn.Parameter(m.tensor(weight, dtype=m.float64))
    P(m).ln_structured(module, "weight", amount=0.34, n=2, dim=1)
    P(m).l1_unstructured(module, "weight", amount=0.3)
    return [*seen, module.weight, module.weight_mask.dtype]


@sc
def importance_scores_of_another_shape(m):
    module = _weight_by_hand(m)
    return P(m).l1_unstructured(module, "weight", amount=1, importance_scores=m.ones(2, 2))


@sc
def prune_with_importance_scores_of_another_shape(m):
    return P(m).L1Unstructured(amount=1).prune(m.ones(2, 4), importance_scores=m.ones(3))


@sc
def custom_mask_of_another_shape(m):
    return P(m).custom_from_mask(_weight_by_hand(m), "weight", m.ones(2))


def _tied_norms(m):
    """Columns whose 2-norms tie (the weight is symmetric about 0): which one goes is topk's tie-break."""
    module = m.nn.Linear(4, 3)
    module.weight = m.nn.Parameter(m.tensor(np.arange(12.0).reshape(3, 4) - 5.5, dtype=m.float32))
    P(m).ln_structured(module, "weight", amount=1, n=2, dim=1)
    return module.weight_mask


SC["ln_structured_tied_norms"] = _tied_norms


# Divergences not fixed yet: strict xfails, so that a fix shows up as an XPASS to remove from here.
KNOWN: dict[str, str] = {
    "ln_structured_tied_norms": "vkml's topk breaks ties otherwise than PyTorch's CPU topk (prune calls topk as PyTorch)",
}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_prune_scenario_matches_torch(name: str) -> None:
    check(SC[name])


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_prune_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], rtol=1e-4, atol=1e-5)


def test_pruning_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: l1 then ln pruning of a Linear and its gradient through the mask."""

    def scenario(m):
        if m is vkml:
            vkml.set_default_device(gpu)
        try:
            module = _weight_by_hand(m)
            P(m).l1_unstructured(module, "weight", amount=3)
            P(m).ln_structured(module, "weight", amount=1, n=1, dim=1)
            module(m.ones(1, 4)).sum().backward()
            return module.weight, module.weight_mask, module.weight_orig.grad
        finally:
            vkml.set_default_device(None)

    check(scenario)


assert torch  # imported for torch.nn.utils.prune, which the scenarios reach through torch.nn.utils
