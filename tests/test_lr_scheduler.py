"""vkml.optim.lr_scheduler gives PyTorch's learning rates, bit for bit, step for step.

Each case builds the same scheduler on a torch optimizer and on a vkml optimizer (two
parameter groups with different learning rates) and compares every group's lr, and the
momentum or beta1 where the scheduler cycles it, over 30 steps.
"""

from __future__ import annotations

import io
import math
import warnings

import pytest
import torch

import vkml
from vkml.optim import lr_scheduler as vsched

STEPS = 30


def _optimizers(kind: str = "sgd"):
    tw = [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3))]
    vw = [vkml.nn.Parameter(vkml.ones(2)), vkml.nn.Parameter(vkml.ones(3))]
    groups = lambda ws: [{"params": [ws[0]], "lr": 0.1}, {"params": [ws[1]], "lr": 0.03}]  # noqa: E731
    if kind == "adam":
        return torch.optim.Adam(groups(tw), lr=0.1), vkml.optim.Adam(groups(vw), lr=0.1)
    return torch.optim.SGD(groups(tw), lr=0.1, momentum=0.9), vkml.optim.SGD(groups(vw), lr=0.1, momentum=0.9)


def _groups(opt, keys_of=None) -> list[dict]:
    """Each group's hyper-parameters (lr, initial_lr, momentum or betas, ...), restricted to ``keys_of``'s keys."""
    keys_of = keys_of or opt
    return [
        {k: v for k, v in g.items() if k != "params" and k in ref}
        for g, ref in zip(opt.param_groups, keys_of.param_groups)
    ]


SCHEDULES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=4, gamma=0.7),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 14], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=1e-3),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=1e-4),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=11),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.4, total_iters=6),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 0.95**e, lambda e: 1 / (1 + e)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.9 if e % 2 else 0.99),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=20, power=1.7),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=STEPS + 1),
    "OneCycleLR-3phase-linear": lambda m, o: m.OneCycleLR(
        o, max_lr=0.4, epochs=4, steps_per_epoch=8, three_phase=True, anneal_strategy="linear"
    ),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, [0.01, 0.02], 0.1, step_size_up=4, mode="exp_range", gamma=0.97),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=12)], milestones=[5]
    ),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.9)]
    ),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_schedule_matches_torch_bit_for_bit(name: str, kind: str) -> None:
    topt, vopt = _optimizers(kind)
    tsched, vsch = SCHEDULES[name](torch.optim.lr_scheduler, topt), SCHEDULES[name](vsched, vopt)
    assert vsch.get_last_lr() == tsched.get_last_lr()
    for step in range(STEPS):
        topt.step()
        vopt.step()
        tsched.step()
        vsch.step()
        assert vsch.get_last_lr() == tsched.get_last_lr(), f"{name} step {step}"
        assert _groups(vopt) == _groups(topt, vopt), f"{name} step {step}"
    scheduler_keys = {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"}
    for vgroup, tgroup in zip(vopt.param_groups, topt.param_groups):
        assert scheduler_keys & set(vgroup) == scheduler_keys & set(tgroup) != set()


def test_reduce_lr_on_plateau_matches_torch() -> None:
    topt, vopt = _optimizers()
    kwargs = {"mode": "max", "factor": 0.5, "patience": 2, "cooldown": 1, "min_lr": [0.0, 0.01]}
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    vsch = vsched.ReduceLROnPlateau(vopt, **kwargs)
    metrics = [math.sin(i / 3.0) + 0.01 * i for i in range(STEPS)]
    for metric in metrics:
        tsched.step(torch.tensor(metric))  # one-element float32 tensors work like floats, as in PyTorch
        vsch.step(vkml.tensor(metric))
        assert vsch.get_last_lr() == tsched.get_last_lr()
        assert (vsch.best, vsch.num_bad_epochs, vsch.cooldown_counter) == (
            tsched.best,
            tsched.num_bad_epochs,
            tsched.cooldown_counter,
        )


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "LinearLR", "ConstantLR", "PolynomialLR"])
def test_step_with_epoch_uses_the_closed_form_and_warns(name: str) -> None:
    topt, vopt = _optimizers()
    tsched, vsch = SCHEDULES[name](torch.optim.lr_scheduler, topt), SCHEDULES[name](vsched, vopt)
    for epoch in (3, 9, 4, 17):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            vsch.step(epoch)
        assert any("epoch parameter" in str(w.message) for w in caught)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tsched.step(epoch)
        assert vsch.get_last_lr() == tsched.get_last_lr()


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_state_dict_resumes_the_schedule(name: str) -> None:
    """A scheduler loaded from another's state_dict, through vkml.save and vkml.load, continues the same."""
    _, opt_a = _optimizers()
    sched_a = SCHEDULES[name](vsched, opt_a)
    for _ in range(9):
        opt_a.step()
        sched_a.step()
    _, opt_b = _optimizers()
    sched_b = SCHEDULES[name](vsched, opt_b)
    buffer = io.BytesIO()
    vkml.save({"optimizer": opt_a.state_dict(), "scheduler": sched_a.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = vkml.load(buffer)
    opt_b.load_state_dict(checkpoint["optimizer"])
    sched_b.load_state_dict(checkpoint["scheduler"])
    for _ in range(9):
        for opt, sched in ((opt_a, sched_a), (opt_b, sched_b)):
            opt.step()
            sched.step()
        assert sched_b.get_last_lr() == sched_a.get_last_lr()


def test_scheduler_step_before_optimizer_step_warns_as_torch() -> None:
    _, vopt = _optimizers()
    sched = vsched.StepLR(vopt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()


def test_get_lr_outside_step_warns() -> None:
    _, vopt = _optimizers()
    sched = vsched.ExponentialLR(vopt, gamma=0.5)
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda m, o: m.StepLR(object(), 3), TypeError, "is not an Optimizer"),
        (lambda m, o: m.ConstantLR(o, factor=1.5), ValueError, "between 0 and 1"),
        (lambda m, o: m.LinearLR(o, start_factor=0), ValueError, "greater than 0"),
        (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "T_0"),
        (lambda m, o: m.OneCycleLR(o, max_lr=0.1), ValueError, "total_steps OR"),
        (lambda m, o: m.OneCycleLR(o, max_lr=[0.1], total_steps=5), ValueError, "same length"),
        (lambda m, o: m.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0"),
        (lambda m, o: m.ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown"),
        (lambda m, o: m.LambdaLR(o, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas"),
        (lambda m, o: m.StepLR(o, 3, last_epoch=4), KeyError, "initial_lr"),
        (lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3]), ValueError, "one more"),
    ],
)
def test_errors_match_torch(build, error, match: str) -> None:
    topt, vopt = _optimizers()
    with pytest.raises(error, match=match):
        build(torch.optim.lr_scheduler, topt)
    with pytest.raises(error, match=match):
        build(vsched, vopt)
