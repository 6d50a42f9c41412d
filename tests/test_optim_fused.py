"""The optimizers' fused float32 steps (vkml/optim/fused.py) give the operators' bits, on the CPU and on Vulkan,
and record a handful of nodes per parameter."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
from vkml.frontend import host_scalar
from vkml.graph import node as graph_node
from vkml.optim import adagrad, adam, fused, rmsprop, sgd

pytestmark = pytest.mark.usefixtures("no_channels_last_seen_yet")  # conftest.py: counts as if first

CPU = vkml.device("cpu")

CASES = [
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adam", {"lr": 0.01, "betas": (0.25, 0.5), "maximize": True}),  # lerp from the other end
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True, "eps": 1e-6}),
    ("Adam", {"lr": 1, "betas": (0.0, 0.9), "eps": 0, "weight_decay": 1}),  # ints, a zero beta and eps
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.2, "centered": True, "weight_decay": 0.1}),  # lerp from the nearer end
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.1, "eps": 1e-4}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.5}),
    ("Adagrad", {"lr": 0.1, "maximize": True, "eps": 1e-3}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]
# Each optimizer's case with the most options in the default suite; the others with -m stress
DEFAULT_CASES = {4, 14, 18, 20}  # and AdamW's in float16 (DEFAULT_HALF)
BITS_CASES = [
    pytest.param(*case, id=name, marks=() if i in DEFAULT_CASES else pytest.mark.stress)
    for i, (case, name) in enumerate(zip(CASES, IDS))
]
SHAPES = [(5, 3), (3,), ()]
HALF_SHAPES = [(40, 25), (3,), ()]  # a half-precision rounding boundary is met often enough only by many values
STEPS = 3


def _values(seed: int = 0, shapes: list = SHAPES) -> tuple[list, list]:
    """Initial parameters, and each step's gradients (with a zero and a negative zero among them)."""
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    grads = [[rng.standard_normal(shape).astype(np.float32) for shape in shapes] for _ in range(STEPS)]
    grads[0][0][0, :2] = [0.0, -0.0]
    return params, grads


def _run(name: str, kwargs: dict, device, use_fused: bool, monkeypatch, dtype=None) -> list[np.ndarray]:
    """The parameters and every state tensor after ``STEPS`` steps, by the fused path or the operators'
    (parameters, gradients and state of ``dtype``, float32 when None)."""
    module = {"Adam": adam, "AdamW": adam, "SGD": sgd, "RMSprop": rmsprop, "Adagrad": adagrad}[name]
    with monkeypatch.context() as patch:
        if not use_fused:  # the operators' path, the fused path's reference
            patch.setattr(module, "_fused_nodes", lambda *args: None, raising=False)
            patch.setattr(fused, "plain_step", lambda *args: False)
        params, grads = _values(shapes=SHAPES if dtype is None else HALF_SHAPES)
        ps = [vkml.nn.Parameter(vkml.tensor(v, device=device, dtype=dtype)) for v in params]
        opt = getattr(vkml.optim, name)(ps, **kwargs)
        for step in grads:
            for p, g in zip(ps, step):
                p.grad = vkml.tensor(g, device=device, dtype=dtype)
            opt.step()
        out = [p.float().numpy() for p in ps]  # bfloat16 has no numpy dtype: its values, exactly
        for p in ps:
            out += [v.float().numpy() for k, v in sorted(opt.state.get(p, {}).items()) if k != "step"]
        return out


@pytest.mark.parametrize(("name", "kwargs"), BITS_CASES)
def test_fused_steps_give_the_operators_bits_on_cpu_and_vulkan(name, kwargs, gpu, monkeypatch):
    reference = _run(name, kwargs, CPU, False, monkeypatch)
    for device in (CPU, gpu):
        got = _run(name, kwargs, device, True, monkeypatch)
        assert len(got) == len(reference)
        for i, (a, b) in enumerate(zip(got, reference)):
            assert_same_bits(a, b, f"{name} {kwargs} on {device}, tensor {i}")


HALF_CASES = list(range(len(CASES)))
DEFAULT_HALF = {(6, "float16"), (14, "bfloat16")}


@pytest.mark.parametrize(
    ("name", "kwargs", "dtype"),
    [
        pytest.param(
            *CASES[i], dtype, id=f"{IDS[i]}-{dtype}", marks=() if (i, dtype) in DEFAULT_HALF else pytest.mark.stress
        )
        for i in HALF_CASES
        for dtype in ("float16", "bfloat16")
    ],
)
def test_fused_half_precision_steps_give_the_operators_bits(name, kwargs, dtype, gpu, monkeypatch):
    """Float16 and bfloat16 parameters: each of PyTorch's ops rounded once, as the operators' path does."""
    dtype = getattr(vkml, dtype)
    reference = _run(name, kwargs, CPU, False, monkeypatch, dtype)
    for device in (CPU, gpu):
        got = _run(name, kwargs, device, True, monkeypatch, dtype)
        assert len(got) == len(reference)
        for i, (a, b) in enumerate(zip(got, reference)):
            assert_same_bits(a, b, f"{name} {kwargs} {dtype.name} on {device}, tensor {i}")


@pytest.mark.stress  # tests/test_optim.py and test_optim_algorithms.py compare the usual settings with PyTorch
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_fused_steps_match_torch(name, kwargs, monkeypatch):
    got = _run(name, kwargs, CPU, True, monkeypatch)
    params, grads = _values()
    ps = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in params]
    opt = getattr(torch.optim, name)(ps, foreach=False, **kwargs)
    for step in grads:
        for p, g in zip(ps, step):
            p.grad = torch.from_numpy(g.copy())
        opt.step()
    want = [p.detach().numpy() for p in ps]
    for p in ps:
        want += [v.numpy() for k, v in sorted(opt.state.get(p, {}).items()) if k != "step"]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def _nodes_of_one_step(name: str, kwargs: dict, monkeypatch) -> int:
    """The graph nodes one step of the optimizer builds for three parameters (after a first step)."""
    params, grads = _values()
    ps = [vkml.nn.Parameter(vkml.tensor(v)) for v in params]
    opt = getattr(vkml.optim, name)(ps, **kwargs)
    built = [0]
    init = graph_node.Node.__init__

    def counting(self, *args, **kw):
        built[0] += 1
        init(self, *args, **kw)

    for step in grads[:2]:
        for p, g in zip(ps, step):
            p.grad = vkml.tensor(g)
        built[0] = 0
        with monkeypatch.context() as patch:
            patch.setattr(graph_node.Node, "__init__", counting)
            opt.step()
    return built[0]


@pytest.mark.parametrize(
    ("name", "kwargs", "new_tensors", "scalars", "new_values"),
    [
        # exp_avg, exp_avg_sq, the parameter; -lr / (1 - beta1^step) and sqrt(1 - beta2^step), new every step
        ("Adam", {}, 3, 2, 2),
        ("AdamW", {"amsgrad": True}, 4, 3, 2),  # the running maximum; the decay factor 1 - lr * wd
        ("SGD", {"momentum": 0.9}, 2, 1, 0),  # the buffer, the parameter; the learning rate
        ("RMSprop", {"centered": True, "momentum": 0.9}, 4, 1, 0),  # three averages and buffers, the parameter
        ("Adagrad", {}, 2, 1, 0),  # the sum, the parameter; the decayed learning rate
    ],
)
def test_a_fused_step_builds_a_few_nodes_per_parameter(name, kwargs, new_tensors, scalars, new_values, monkeypatch):
    """One node per new tensor, a broadcast per per-step number (none for the 0-d parameter), a constant
    per number the step before did not pass (the parameters share it), and the step counters' new value
    (one constant, shared by every parameter's counter) where the optimizer counts steps."""
    monkeypatch.setattr(fused, "_constants", {})
    monkeypatch.setattr(host_scalar, "_NODES", {})  # the counters' values made earlier in the process: made again
    counter = 0 if name == "SGD" else 1  # SGD keeps no step counter
    expected = new_tensors * len(SHAPES) + scalars * (len(SHAPES) - 1) + new_values + counter
    assert _nodes_of_one_step(name, kwargs, monkeypatch) == expected


def test_fused_ops_have_a_template_text_of_their_settings():
    """A group of fused ops has a template text (kept on disk, as a registered op's: a fresh process lowers
    nothing), which tells their settings apart."""
    from vkml.schedule import template_disk

    def text(eps):
        return template_disk.structure((fused.adam_ops(0.1, 0.999, eps, 0.0, False, False).param,), ())

    assert text(1e-8) is not None
    assert text(1e-8) == text(1e-8) != text(1e-6)
