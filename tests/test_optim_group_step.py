"""Optimizers' loop over a whole parameter group (``Optimizer._group_step``: Adam's, AdamW's and SGD's usual
groups): the same parameters, state and counters, bit for bit, as the generic loop over parameters, which
every other group still takes."""

from __future__ import annotations

import numpy as np
import pytest

import vkml
from vkml.optim import SGD, Adam, AdamW
from vkml.optim.optimizer import Optimizer


def _train(device, make_optimizer, steps: int = 3):
    """Parameters, state tensors and counters of a small MLP after ``steps`` steps of ``make_optimizer``."""
    vkml.manual_seed(0)
    model = vkml.nn.Sequential(vkml.nn.Linear(3, 5), vkml.nn.ReLU(), vkml.nn.Linear(5, 2)).to(device)
    optimizer = make_optimizer(model)
    rng = np.random.default_rng(1)
    x = vkml.tensor(rng.standard_normal((8, 3)).astype(np.float32), device=device)
    y = vkml.tensor(rng.integers(0, 2, 8), device=device)
    for _ in range(steps):
        loss = vkml.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    values = [p.detach().numpy() for p in model.parameters()]
    for state in optimizer.state.values():
        for key in sorted(state):
            values.append(np.asarray(state[key].numpy()))
    return values


def _spy(monkeypatch, taken: list) -> None:
    """Append what each ``_group_step`` call returned to ``taken``."""
    for kind in (Adam, SGD):

        def spy(self, group, updates, targets, original=kind._group_step):
            taken.append(original(self, group, updates, targets))
            return taken[-1]

        monkeypatch.setattr(kind, "_group_step", spy)


OPTIMIZERS = {
    "adam": lambda m: Adam(m.parameters(), lr=0.01),
    "adamw": lambda m: AdamW(m.parameters(), lr=0.01, weight_decay=0.1),
    "adam_l2_maximize": lambda m: Adam(m.parameters(), lr=0.01, weight_decay=0.01, maximize=True),
    "sgd_momentum": lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9),
    "sgd_nesterov_decay": lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "sgd": lambda m: SGD(m.parameters(), lr=0.1),
    "two_groups": lambda m: Adam(
        [{"params": list(m.parameters())[:2]}, {"params": list(m.parameters())[2:], "lr": 0.1}], lr=0.01
    ),
}


# the default suite keeps three; the stress marker runs the rest
QUICK = ("adam", "sgd_momentum", "two_groups")


@pytest.mark.parametrize(
    "name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.stress) for n in sorted(OPTIMIZERS)]
)
def test_group_loop_keeps_the_generic_loops_bits(monkeypatch, name):
    taken: list = []
    _spy(monkeypatch, taken)
    grouped = _train(vkml.device("cpu"), OPTIMIZERS[name])
    groups = 2 if name == "two_groups" else 1
    # a first step makes the state (but SGD without momentum keeps none): the generic loop, then the group's
    assert taken == [name == "sgd"] * groups + [True] * (2 * groups), taken
    for kind in (Adam, SGD):
        monkeypatch.setattr(kind, "_group_step", Optimizer._group_step)
    generic = _train(vkml.device("cpu"), OPTIMIZERS[name])
    assert len(grouped) == len(generic)
    for got, want in zip(grouped, generic, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: Adam(ps, lr=0.01, amsgrad=True),
        lambda ps: Adam(ps + ps[:1], lr=0.01),  # a parameter listed twice: updated twice, as PyTorch
        lambda ps: SGD(ps, lr=0.1, momentum=0.9, foreach=False),
    ],
    ids=["amsgrad", "listed_twice", "sgd_first_step"],
)
@pytest.mark.filterwarnings("ignore:optimizer contains a parameter group with duplicate parameters")
def test_other_groups_take_the_generic_loop(make):
    params = [vkml.nn.Parameter(vkml.ones(3)), vkml.nn.Parameter(vkml.ones(2))]
    optimizer = make(params)
    for p in params:
        p.grad = vkml.full_like(p, 0.5)
    if isinstance(optimizer, Adam):
        optimizer.step()  # past the first step: the state is there
    assert not optimizer._group_step(optimizer.param_groups[0], [], [])
