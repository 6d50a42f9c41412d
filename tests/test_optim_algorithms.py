"""Every optimizer of vkml.optim against torch.optim (single-tensor path) over 20 steps of the same
gradients, its state_dict layout, its argument checks, and the same bits on the CPU and Vulkan.

PyTorch's CPU kernels fuse ``a + alpha * b`` into one FMA where vkml rounds twice (vkml has no
fused multiply-add primitive), so results agree to a few ulps per step, not bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn

CPU = vkml.device("cpu")

CASES = [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "maximize": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.9, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1, "weight_decay": 0.01}),
    ("Adagrad", {"lr": 0.1, "maximize": True}),
    ("Adadelta", {"lr": 1.0, "rho": 0.8, "weight_decay": 0.01}),
    ("Adadelta", {"maximize": True}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.01}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.9), "maximize": True}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.01, "decoupled_weight_decay": True, "momentum_decay": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("ASGD", {"lr": 0.05, "t0": 5, "weight_decay": 0.01}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.01, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.05), "maximize": True}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _gradients(steps: int = 20, n: int = 48) -> tuple[np.ndarray, list[np.ndarray]]:
    g = np.random.default_rng(1)
    start = g.standard_normal(n).astype(np.float32)
    grads = [(g.standard_normal(n) * (1 + i % 3)).astype(np.float32) for i in range(max(steps, 5))]
    grads[2][:5] = 0  # zero gradients: Rprop's sign rule, Adagrad's sum
    grads[4][:3] = -grads[3][:3]  # sign flips
    return start, grads[:steps]


def _run_vkml(name, kwargs, device, steps=20):
    start, grads = _gradients(steps)
    w = nn.Parameter(vkml.tensor(start, device=device))
    opt = getattr(vkml.optim, name)([w], **kwargs)
    for g in grads:
        w.grad = vkml.tensor(g, device=device)
        opt.step()
    return w, opt


def _run_torch(name, kwargs, steps=20):
    start, grads = _gradients(steps)
    w = torch.from_numpy(start.copy()).requires_grad_()
    opt = getattr(torch.optim, name)([w], foreach=False, **kwargs)
    for g in grads:
        w.grad = torch.from_numpy(g.copy())
        opt.step()
    return w, opt


def _value(v):
    """A vkml state entry as numpy: a tensor's values, or a Python float PyTorch keeps as a 0-d tensor."""
    return v.numpy() if hasattr(v, "node") else np.float32(v)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_twenty_steps_match_torch(name, kwargs):
    w, opt = _run_vkml(name, kwargs, CPU)
    wt, opt_t = _run_torch(name, kwargs)
    np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=1e-5, atol=1e-6)
    state, state_t = opt.state_dict(), opt_t.state_dict()
    assert sorted(state["state"][0]) == sorted(state_t["state"][0])
    for key, value in state_t["state"][0].items():
        if key == "step":
            assert state["state"][0][key] == int(value.item())
        else:
            np.testing.assert_allclose(_value(state["state"][0][key]), value.numpy(), rtol=1e-5, atol=1e-6, err_msg=key)
    group, group_t = state["param_groups"][0], state_t["param_groups"][0]
    assert set(group_t) <= set(group) and group["params"] == group_t["params"] == [0]
    assert all(group[k] == v for k, v in group_t.items() if k != "foreach")  # every torch entry, same value


# one case of each optimizer on the device: same bits as the CPU
GPU_CASES = [CASES[i] for i in (1, 3, 6, 8, 10, 12, 15, 17, 18, 21)]


@pytest.mark.parametrize(("name", "kwargs"), GPU_CASES, ids=[n for n, _ in GPU_CASES])
def test_cpu_and_vulkan_give_the_same_bits(name, kwargs, gpu):
    w_cpu, opt_cpu = _run_vkml(name, kwargs, CPU, steps=6)
    w_gpu, opt_gpu = _run_vkml(name, kwargs, gpu, steps=6)
    assert_same_bits(w_gpu.numpy(), w_cpu.numpy(), f"{name} parameter")
    for key, value in opt_cpu.state[w_cpu].items():
        if hasattr(value, "node"):
            assert_same_bits(opt_gpu.state[w_gpu][key].numpy(), value.numpy(), f"{name} state {key}")
        else:
            assert opt_gpu.state[w_gpu][key] == value


@pytest.mark.parametrize(
    ("name", "kwargs"), [CASES[i] for i in (6, 15, 18, 21)], ids=["RMSprop", "NAdam", "ASGD", "Rprop"]
)
def test_loading_torch_state_continues_as_torch_does(name, kwargs):
    """Ten steps in torch, its state_dict loaded into vkml, ten more steps in each: the same parameters."""
    start, grads = _gradients(20)
    wt = torch.from_numpy(start.copy()).requires_grad_()
    opt_t = getattr(torch.optim, name)([wt], foreach=False, **kwargs)
    for g in grads[:10]:
        wt.grad = torch.from_numpy(g.copy())
        opt_t.step()
    w = nn.Parameter(vkml.tensor(wt.detach().numpy()))
    opt = getattr(vkml.optim, name)([w], lr=123.0)
    opt.load_state_dict(opt_t.state_dict())
    assert opt.param_groups[0]["lr"] == kwargs["lr"]
    for g in grads[10:]:
        wt.grad, w.grad = torch.from_numpy(g.copy()), vkml.tensor(g)
        opt_t.step()
        opt.step()
    np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_through_save(tmp_path):
    w, opt = _run_vkml("NAdam", {"lr": 0.01}, CPU, steps=3)
    path = tmp_path / "opt.safetensors"
    vkml.save(opt.state_dict(), path)
    fresh_w = nn.Parameter(vkml.tensor(w.numpy()))
    fresh = vkml.optim.NAdam([fresh_w], lr=0.5)
    fresh.load_state_dict(vkml.load(path))
    assert fresh.state[fresh_w]["mu_product"] == opt.state[w]["mu_product"]
    g = vkml.tensor(np.linspace(-1, 1, 48, dtype=np.float32))
    w.grad, fresh_w.grad = g, g
    opt.step()
    fresh.step()
    assert_same_bits(fresh_w.numpy(), w.numpy(), "parameter after resuming")


# (optimizer, kwargs): torch and vkml raise the same error type and message
BAD = [
    ("SGD", {"lr": -1.0}),
    ("SGD", {"momentum": -0.5}),
    ("SGD", {"weight_decay": -1.0}),
    ("SGD", {"nesterov": True}),
    ("SGD", {"fused": True, "foreach": True}),
    ("Adam", {"eps": -1.0}),
    ("Adam", {"betas": (1.0, 0.9)}),
    ("Adam", {"betas": (0.9, -0.1)}),
    ("AdamW", {"lr": float("nan")}),
    ("RMSprop", {"alpha": -0.1}),
    ("RMSprop", {"momentum": -0.1}),
    ("Adagrad", {"lr_decay": -1.0}),
    ("Adagrad", {"initial_accumulator_value": -1.0}),
    ("Adadelta", {"rho": 1.5}),
    ("Adamax", {"betas": (0.9, 1.0)}),
    ("NAdam", {"momentum_decay": -1.0}),
    ("RAdam", {"weight_decay": -0.1}),
    ("ASGD", {"weight_decay": -0.1}),
    ("Rprop", {"etas": (1.5, 1.2)}),
    ("LBFGS", {"lr": -1.0}),
    # several bad arguments: the one PyTorch checks first is named (vkml/optim/optimizer.py, check_args)
    ("Adam", {"lr": -1.0, "eps": -1.0, "betas": (1.0, 1.0), "weight_decay": -1.0}),
    ("Adam", {"eps": -1.0, "betas": (1.0, 1.0)}),
    ("Adagrad", {"eps": -1.0, "initial_accumulator_value": -1.0, "weight_decay": -1.0}),
    ("Adadelta", {"rho": 2.0, "eps": -1.0, "weight_decay": -1.0}),
    ("RMSprop", {"eps": -1.0, "momentum": -1.0, "alpha": -1.0}),
    ("RMSprop", {"weight_decay": -1.0, "alpha": -1.0}),
    ("NAdam", {"weight_decay": -1.0, "momentum_decay": -1.0}),
    ("SGD", {"momentum": -1.0, "weight_decay": -1.0}),
]


@pytest.mark.parametrize(("name", "kwargs"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_invalid_arguments_raise_torch_errors(name, kwargs):
    with pytest.raises(Exception) as want:
        getattr(torch.optim, name)([torch.ones(2, requires_grad=True)], **kwargs)
    with pytest.raises(type(want.value)) as got:
        getattr(vkml.optim, name)([nn.Parameter(vkml.ones(2))], **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "NAdam", "Rprop"])
def test_differentiable_is_refused_and_implementation_flags_are_kept(name):
    with pytest.raises(NotImplementedError, match=f"{name}: differentiable=True"):
        getattr(vkml.optim, name)([nn.Parameter(vkml.ones(2))], differentiable=True)
    flags = {"foreach": False}
    opt = getattr(vkml.optim, name)([nn.Parameter(vkml.ones(2))], **flags)
    assert opt.param_groups[0]["foreach"] is False


def test_adam_implementation_flags_change_nothing():
    base, _ = _run_vkml("Adam", {"lr": 0.01, "amsgrad": True}, CPU, steps=4)
    for flags in ({"fused": True}, {"foreach": True}, {"capturable": True}):
        w, opt = _run_vkml("Adam", {"lr": 0.01, "amsgrad": True, **flags}, CPU, steps=4)
        assert_same_bits(w.numpy(), base.numpy(), str(flags))
        assert all(opt.param_groups[0][k] == v for k, v in flags.items())


def test_param_groups_and_their_checks():
    a, b, c = (nn.Parameter(vkml.ones(2)) for _ in range(3))
    frozen = vkml.ones(2)  # PyTorch accepts a parameter that does not require grad; it has no gradient
    opt = vkml.optim.RMSprop([{"params": [a, frozen]}, {"params": b, "momentum": 0.5}], lr=0.1)
    opt.add_param_group({"params": [c], "lr": 0.01, "centered": True})
    assert [(g["lr"], g["momentum"], g["centered"]) for g in opt.param_groups] == [
        (0.1, 0, False),
        (0.1, 0.5, False),
        (0.01, 0, True),
    ]
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="^param_group must be a dict"):
        opt.add_param_group([a])
    with pytest.raises(TypeError, match="ordered collections"):
        vkml.optim.SGD([{"params": {a}}], lr=0.1)
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable"):
        vkml.optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the params is int$"):
        vkml.optim.SGD([a, 3], lr=0.1)
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        vkml.optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        vkml.optim.Adam([])
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        vkml.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    for p in (a, b, c):
        (p * p).sum().backward()
    opt.step()
    assert a.tolist() != [1.0, 1.0] and frozen.tolist() == [1.0, 1.0]
    assert sorted(opt.state_dict()["state"]) == [0, 2, 3]  # the frozen tensor is index 1 and has no state


def test_named_parameters_give_param_names():
    net = nn.Linear(2, 1)
    opt = vkml.optim.AdamW(net.named_parameters(), lr=0.1)
    tnet = torch.nn.Linear(2, 1)
    opt_t = torch.optim.AdamW(tnet.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == opt_t.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [nn.Parameter(vkml.ones(1))]})


def test_zero_grad_set_to_none_false_zeroes_in_place():
    w = nn.Parameter(vkml.ones(3))
    opt = vkml.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and grad.tolist() == [0.0, 0.0, 0.0]  # the same tensor, zeroed, as in PyTorch
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0, 3.0]
    opt.zero_grad()
    assert w.grad is None


def _lbfgs_problem(framework):
    g = np.random.default_rng(0)
    a, b = g.standard_normal((6, 4)).astype(np.float32), g.standard_normal(6).astype(np.float32)
    start = g.standard_normal(4).astype(np.float32)
    if framework is torch:
        w = torch.from_numpy(start).requires_grad_()
        a, b = torch.from_numpy(a), torch.from_numpy(b)
    else:
        w = nn.Parameter(vkml.tensor(start))
        a, b = vkml.tensor(a), vkml.tensor(b)
    return w, lambda: ((a @ w - b) ** 2).sum() + (w**4).sum() * 0.1


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search_fn):
    results = []
    for framework, optim in ((torch, torch.optim), (vkml, vkml.optim)):
        w, objective = _lbfgs_problem(framework)
        opt = optim.LBFGS([w], lr=0.5, max_iter=8, history_size=3, line_search_fn=line_search_fn)

        def closure(opt=opt, objective=objective):
            opt.zero_grad()
            loss = objective()
            loss.backward()
            return loss

        first = opt.step(closure)
        state = opt.state[w]
        results.append((first.item(), w.detach().numpy(), state["func_evals"], state["n_iter"], len(state["old_dirs"])))
    (loss_t, w_t, *counts_t), (loss_v, w_v, *counts_v) = results
    assert loss_v == pytest.approx(loss_t, rel=1e-6)
    np.testing.assert_allclose(w_v, w_t, rtol=1e-4, atol=1e-5)
    assert counts_v == counts_t  # the same iterations, evaluations and history


def test_lbfgs_refuses_an_unknown_line_search():
    w, objective = _lbfgs_problem(vkml)
    opt = vkml.optim.LBFGS([w], line_search_fn="backtracking")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: objective())


def test_lbfgs_continues_from_torch_state():
    """A step of torch's LBFGS, its state loaded into vkml's, a second step in each: the same result."""
    (wt, objective_t), (w, objective) = _lbfgs_problem(torch), _lbfgs_problem(vkml)
    opt_t = torch.optim.LBFGS([wt], lr=0.5, max_iter=3, history_size=3)
    opt = vkml.optim.LBFGS([w], lr=0.5, max_iter=3, history_size=3)

    def closure_t():
        opt_t.zero_grad()
        loss = objective_t()
        loss.backward()
        return loss

    def closure():
        opt.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    opt_t.step(closure_t)
    w.node = vkml.tensor(wt.detach().numpy()).node
    opt.load_state_dict(opt_t.state_dict())
    assert isinstance(opt.state[w]["ro"][0], float) and opt.state[w]["old_dirs"][0].shape == (4,)
    opt_t.step(closure_t)
    opt.step(closure)
    np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert opt.state[w]["n_iter"] == opt_t.state[wt]["n_iter"]


def test_lbfgs_same_bits_on_vulkan(gpu):
    def run(device):
        g = np.random.default_rng(0)
        a = vkml.tensor(g.standard_normal((6, 4)).astype(np.float32), device=device)
        w = nn.Parameter(vkml.tensor(g.standard_normal(4).astype(np.float32), device=device))
        opt = vkml.optim.LBFGS([w], max_iter=3, history_size=2, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = ((a @ w - 1.0) ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        return w.numpy()

    assert_same_bits(run(gpu), run(CPU), "LBFGS parameters")


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_keeps_its_graphs_one_iteration_deep(line_search_fn):
    """The neural-style tutorial's LBFGS ran 20 closures in minutes: each direction was a lazy
    graph over the whole history, compiled anew every iteration. The state and the parameters
    are realized as the iterations go."""
    w, objective = _lbfgs_problem(vkml)
    opt = vkml.optim.LBFGS([w], lr=0.5, max_iter=6, history_size=3, line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    opt.step(closure)
    state = opt.state[w]
    assert state["n_iter"] > 3 and len(state["old_dirs"]) > 1
    assert w.node.realized and state["d"].node.realized
    assert all(v.node.realized for v in state["old_dirs"] + state["old_stps"])
