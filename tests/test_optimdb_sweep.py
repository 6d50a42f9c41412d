"""vkml.optim against PyTorch's own optimizer table, and the behaviours its optimizer and LR-scheduler
tests check (tests/optim_sweep.py runs one configuration in both frameworks).

The ``exhaustive`` tests walk ``torch.testing._internal.common_optimizers.optim_db`` (importing it
costs seconds and needs ``expecttest``): every OptimizerInfo whose class vkml.optim has, every
configuration ``_get_optim_inputs_including_global_cliquey_kwargs`` gives (fused and
differentiable added to each, and foreach, which that helper leaves out on the CPU), stepped with
fixed gradients and with a model's closure, and every error input. ``KNOWN_GAPS`` lists what vkml
refuses on purpose; those rows must keep failing as stated (a strict expected failure).

The default-suite tests are the regression rows of what the sweep found, written by hand.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from optim_sweep import check_error, compare_run

import vkml
from vkml.optim import lr_scheduler as vsched
from vkml.optim import swa_utils

NAMES = [
    "Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "LBFGS",
    "Muon", "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam",
]  # fmt: skip

# What vkml refuses on purpose: option -> (exception, why)
KNOWN_GAPS = {"differentiable": (NotImplementedError, "no autograd through the update (docs/optim.md)")}


# ---------------------------------------------------------------------- optim_db (exhaustive)


def _optim_db():
    from torch.testing._internal import common_optimizers  # seconds to import: exhaustive tests only

    return common_optimizers


@pytest.mark.exhaustive
@pytest.mark.parametrize("mode", ["grads", "closure"])
@pytest.mark.parametrize("name", NAMES)
def test_optim_db_inputs_match_torch(name: str, mode: str) -> None:
    db = _optim_db()
    (info,) = [i for i in db.optim_db if i.optim_cls.__name__ == name]
    inputs = db._get_optim_inputs_including_global_cliquey_kwargs("cpu", torch.float32, info)
    assert inputs
    if "foreach" in info.supported_impls:  # PyTorch leaves foreach out on the CPU; its CPU path runs it
        plain = [i for i in inputs if not any(i.kwargs.get(k) for k in ("fused", "differentiable"))]
        inputs += [db.OptimizerInput(None, {**i.kwargs, "foreach": True}, f"{i.desc} & foreach") for i in plain]
    for optim_input in inputs:
        gap = next((k for k in KNOWN_GAPS if optim_input.kwargs.get(k)), None)
        if gap is not None:
            error, why = KNOWN_GAPS[gap]
            with pytest.raises(error):  # strict: a gap that closes must leave KNOWN_GAPS
                compare_run(name, optim_input.kwargs, mode)
            continue
        try:
            compare_run(name, optim_input.kwargs, mode)
        except AssertionError as e:
            raise AssertionError(f"{name} {optim_input.desc!r} {optim_input.kwargs}: {e}") from None


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", NAMES)
def test_optim_db_error_inputs_match_torch(name: str) -> None:
    db = _optim_db()
    (info,) = [i for i in db.optim_db if i.optim_cls.__name__ == name]
    for error_input in info.optim_error_inputs_func("cpu", torch.float32):
        given = error_input.optimizer_error_input
        on_step = error_input.error_on == db.OptimizerErrorEnum.STEP_ERROR
        check_error(name, given.params, given.kwargs, on_step, error_input.error_type, error_input.error_regex)


# ---------------------------------------------------------------------- regression rows (default suite)

# The counters PyTorch keeps as 0-d tensors (step; NAdam's mu_product; ASGD's eta and mu; LBFGS's ro,
# al and H_diag), SparseAdam's int step, and a tensor lr loaded from PyTorch's state_dict.
ROWS = [
    ("Adam", {"weight_decay": 0.1}),
    ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("ASGD", {"t0": 1}),
    ("Rprop", {"foreach": True}),
    ("LBFGS", {"lr": 0.5, "max_iter": 4}),
    ("SparseAdam", {}),
    ("SGD", {"lr": torch.tensor(0.01), "momentum": 0.9, "fused": True}),
]


@pytest.mark.parametrize("name, kwargs", ROWS, ids=[r[0] for r in ROWS])
def test_state_and_state_dict_match_torch(name: str, kwargs: dict) -> None:
    compare_run(name, kwargs, steps=2)


def test_step_is_one_tensor_updated_in_place() -> None:
    """``state["step"]`` is a 0-d float32 CPU tensor; one taken earlier sees every step, and a write
    through the tensor API is what the next step counts from, as in PyTorch."""
    counts = {}
    for lib in (torch, vkml):
        w = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.Adam([w], lr=0.1)
        w.grad = lib.ones(3)
        opt.step()
        held = opt.state[w]["step"]
        opt.step()
        assert opt.state[w]["step"] is held and held.item() == 2.0
        assert held.dtype.__str__().endswith("float32") and tuple(held.shape) == () and str(held.device) == "cpu"
        held.fill_(10)  # the bias corrections of step 11 next
        opt.step()
        counts[lib.__name__] = (held.item(), w.detach().numpy().copy())
    assert counts["vkml"][0] == counts["torch"][0] == 11.0
    np.testing.assert_allclose(counts["vkml"][1], counts["torch"][1], rtol=1e-6)


def test_jit_replay_advances_the_step_tensor() -> None:
    w = vkml.nn.Parameter(vkml.ones(4))
    opt = vkml.optim.Adam([w], lr=0.1)
    tw = torch.nn.Parameter(torch.ones(4))
    topt = torch.optim.Adam([tw], lr=0.1)

    @vkml.jit(state=[w, opt])
    def train(x):
        opt.zero_grad()
        loss = ((w * x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    for k in range(4):
        x = np.full(4, 1.0 + k, np.float32)
        train(vkml.tensor(x))
        topt.zero_grad()
        ((tw * torch.from_numpy(x)) ** 2).sum().backward()
        topt.step()
    assert opt.state[w]["step"].item() == topt.state[tw]["step"].item() == 4.0
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-5)


ERRORS = [  # (optimizer, params, kwargs, at step, error, PyTorch's message)
    ("Adam", None, {"betas": (torch.tensor(0.9), torch.tensor(0.99)), "foreach": True}, False, ValueError,
     r"betas\[0\] as a Tensor is not supported for capturable=False and foreach=True"),
    ("Adafactor", [torch.nn.Parameter(torch.ones(2, 2, dtype=torch.complex64))], {}, True, RuntimeError,
     "Adafactor does not support complex parameters"),
    ("Muon", [torch.nn.Parameter(torch.ones(2, 2, dtype=torch.complex64))], {}, True, RuntimeError,
     "Muon does not support complex parameters"),
    ("SparseAdam", [torch.nn.Parameter(torch.ones(2, 2, dtype=torch.complex64))], {}, False, ValueError,
     r"Complex params at indices \[\[0, 0\]\]: SparseAdam does not support complex parameters"),
]  # fmt: skip


@pytest.mark.parametrize("name, params, kwargs, on_step, error, regex", ERRORS, ids=[r[0] for r in ERRORS])
def test_errors_match_torch(name, params, kwargs, on_step, error, regex) -> None:
    torch_params = params if params is not None else [torch.nn.Parameter(torch.ones(2, 2))]
    with pytest.raises(error, match=regex):  # PyTorch's own behaviour, so the row cannot drift
        opt = getattr(torch.optim, name)(torch_params, **kwargs)
        if on_step:
            for p in torch_params:
                p.grad = torch.zeros_like(p)
            opt.step()
    check_error(name, params, kwargs, on_step, error, regex)


# ---------------------------------------------------------------------- LR schedulers


def _optimizers():
    torch_opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1, momentum=0.9)
    vkml_opt = vkml.optim.SGD([vkml.nn.Parameter(vkml.ones(2))], lr=0.1, momentum=0.9)
    return torch_opt, vkml_opt


class Power:
    """A callable object: LambdaLR's state_dict() saves its ``__dict__`` (a function it saves as None)."""

    def __init__(self, base: float):
        self.base = base

    def __call__(self, epoch: int) -> float:
        return self.base**epoch


RESUMED = {  # built with last_epoch=4 on groups that carry initial_lr (and OneCycleLR's keys)
    "StepLR": lambda m, o: m.StepLR(o, 3, 0.5, last_epoch=4),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, 10, last_epoch=4),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, 1.0, total_steps=20, last_epoch=4),
    "CyclicLR": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, last_epoch=4),
    "LambdaLR": lambda m, o: m.LambdaLR(o, Power(0.9), last_epoch=4),
}


@pytest.mark.parametrize("name", list(RESUMED))
def test_last_epoch_resumes_as_torch(name: str) -> None:
    opts = _optimizers()
    for opt in opts:
        for group in opt.param_groups:
            group.update(initial_lr=0.1, max_lr=1.0, min_lr=1e-5, max_momentum=0.95, base_momentum=0.85)
    scheds = [RESUMED[name](torch.optim.lr_scheduler, opts[0]), RESUMED[name](vsched, opts[1])]
    for step in range(6):
        for opt, sched in zip(opts, scheds):
            opt.step()
            sched.step()
        assert scheds[1].get_last_lr() == scheds[0].get_last_lr(), f"{name} step {step}"


STATE_DICTS = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, Power(0.9)),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, Power(0.95)),
    "ReduceLROnPlateau": lambda m, o: m.ReduceLROnPlateau(o, patience=1),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, 2),
    "SequentialLR": lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, 0.5, 2), m.ExponentialLR(o, 0.9)], [2]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, 0.5, 2), m.ExponentialLR(o, 0.9)]),
    "SWALR": lambda m, o: (swa_utils if m is vsched else torch.optim.swa_utils).SWALR(o, 0.05, 3, "linear"),
}


@pytest.mark.parametrize("name", list(STATE_DICTS))
def test_scheduler_state_dict_is_torchs(name: str) -> None:
    """get_last_lr() step for step, then state_dict(): PyTorch's keys and plain values (LambdaLR's
    callable objects as their ``__dict__``, SWALR's strategy by name, nested schedulers' dicts)."""
    opts = _optimizers()
    scheds = [STATE_DICTS[name](torch.optim.lr_scheduler, opts[0]), STATE_DICTS[name](vsched, opts[1])]
    for step in range(5):
        for opt, sched in zip(opts, scheds):
            opt.step()
            sched.step(1.0) if name == "ReduceLROnPlateau" else sched.step()
        assert scheds[1].get_last_lr() == scheds[0].get_last_lr(), f"{name} step {step}"
    theirs, ours = (s.state_dict() for s in scheds)
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        if key == "_schedulers":
            assert [sorted(s) for s in ours[key]] == [sorted(s) for s in value]
        elif isinstance(value, (int, float, str, list, dict, type(None))) and key not in ("_scale_fn_ref",):
            assert ours[key] == value, key


def test_warm_restarts_take_fractional_epochs_as_torch() -> None:
    opts = _optimizers()
    scheds = [
        torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opts[0], 3, 2),
        vsched.CosineAnnealingWarmRestarts(opts[1], 3, 2),
    ]
    for epoch in [0.5, 1.2, 3.7, 9.1, 2.0, 20.5]:
        for sched in scheds:
            sched.step(epoch)
        assert scheds[1].get_last_lr() == scheds[0].get_last_lr(), epoch


# ---------------------------------------------------------------------- hooks and groups, as PyTorch's


def _hooks_in_order(lib) -> tuple:
    log = []
    w = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([w], lr=0.1)
    opt.register_step_pre_hook(lambda o, args, kw: log.append(("pre", type(args[0]).__name__, len(args), sorted(kw))))
    opt.register_step_post_hook(lambda o, args, kw: log.append(("post", len(args), sorted(kw))))
    opt.register_state_dict_pre_hook(lambda o: log.append("state_dict pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": log.append("state_dict post")})
    opt.register_load_state_dict_pre_hook(
        lambda o, sd: log.append(("load pre", sorted(sd))) or {k: v for k, v in sd.items() if k != "extra"}
    )
    opt.register_load_state_dict_post_hook(lambda o: log.append("load post"))
    w.grad = lib.ones(2)
    opt.step()
    opt.load_state_dict(opt.state_dict())
    opt.step(closure=None)
    return tuple(log)


def _pre_hook_replaces_the_call(lib) -> tuple:
    """A pre-hook's ``(args, kwargs)`` are what step is called with; ``args`` start with the optimizer."""
    w = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([w], lr=0.1)
    opt.register_step_pre_hook(lambda o, args, kw: ((o,), {"closure": lambda: 5.0}))
    w.grad = lib.ones(2)
    return float(opt.step()), w.tolist()


def _global_hooks(lib) -> tuple:
    module = importlib.import_module(f"{lib.__name__}.optim.optimizer")  # torch.optim drops the attribute
    log = []
    pre = module.register_optimizer_step_pre_hook(lambda o, args, kw: log.append(("global pre", type(o).__name__)))
    post = module.register_optimizer_step_post_hook(lambda o, args, kw: log.append("global post"))
    try:
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.Adam([w], lr=0.1)
        opt.register_step_pre_hook(lambda o, args, kw: log.append("pre"))
        opt.register_step_post_hook(lambda o, args, kw: log.append("post"))
        w.grad = lib.ones(2)
        opt.step()
    finally:
        pre.remove()
        post.remove()
    opt.step()
    return tuple(log)


def _group_added_later(lib) -> tuple:
    a, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.full((3,), 2.0))
    opt = lib.optim.Adam([a], lr=0.1)
    a.grad = lib.ones(2)
    opt.step()
    opt.add_param_group({"params": [b], "lr": 0.01, "betas": (0.8, 0.9)})
    a.grad, b.grad = lib.ones(2), lib.ones(3)
    opt.step()
    sd = opt.state_dict()
    steps = {k: v["step"].item() for k, v in sd["state"].items()}
    return [np.round(p.detach().numpy(), 6).tolist() for p in (a, b)], sorted(sd["param_groups"][1]), steps


@pytest.mark.parametrize("behaviour", [_hooks_in_order, _pre_hook_replaces_the_call, _global_hooks, _group_added_later])
def test_behaviour_matches_torch(behaviour) -> None:
    assert behaviour(vkml) == behaviour(torch)
