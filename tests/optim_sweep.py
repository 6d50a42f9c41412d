"""Run one optimizer configuration in torch.optim and vkml.optim side by side and compare them.

The configurations come from PyTorch's own table (``torch.testing._internal.common_optimizers``'s
``optim_db``, read by tests/test_optimdb_sweep.py under the ``exhaustive`` marker) or are written by
hand (the default suite's regression rows). ``compare_run`` steps both frameworks from the same
initial values:

- ``"grads"``: a fixed sequence of gradients assigned to ``.grad`` before each ``step()``;
- ``"closure"``: a tiny model (a linear layer, an embedding for SparseAdam) whose loss and gradients
  each ``step(closure)`` computes (LBFGS needs it; every optimizer takes one);

and checks after each step the parameters, then the live state (``opt.state[p]``: keys, each
tensor's type, shape, dtype and values — ``state["step"]`` a 0-d float32 tensor, as PyTorch keeps
it), ``state_dict()`` (the same, and ``param_groups``), and that a fresh vkml optimizer loading
vkml's or PyTorch's ``state_dict`` takes the next step as PyTorch's does.
"""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import torch

import vkml

STEPS = 5
# float32 tolerances: PyTorch's CPU kernels fuse multiply-adds that vkml rounds twice (docs/optim.md)
RTOL, ATOL = 1e-5, 1e-6
# Muon's Newton-Schulz iteration runs in bfloat16, rounded per op in vkml and per addmm in PyTorch;
# LBFGS's twenty iterations a step near a least-squares optimum magnify float32 rounding
LOOSE = {"Muon": (2e-2, 2e-3), "LBFGS": (2e-4, 2e-5)}


# LBFGS's history (curvature pairs accepted when ``y.s > 1e-10``, its two-loop coefficients) follows
# float32 rounding near the optimum: its state is compared by keys, types, shapes and dtypes only
STRUCTURE_ONLY = {"LBFGS"}


def tolerances(name: str) -> tuple[float, float]:
    return LOOSE.get(name, (RTOL, ATOL))


# ---------------------------------------------------------------------- values across frameworks


def to_vkml(value, memo: dict | None = None):
    """``value`` with every torch tensor replaced by a vkml one (a Parameter by a Parameter; one torch
    tensor met twice becomes one vkml tensor, so duplicate parameters stay duplicates)."""
    memo = {} if memo is None else memo
    if isinstance(value, torch.Tensor):
        if id(value) not in memo and value.is_sparse:
            sparse = value.detach().coalesce()
            indices, values = sparse.indices().numpy().copy(), sparse.values().numpy().copy()
            memo[id(value)] = vkml.sparse_coo_tensor(vkml.tensor(indices), vkml.tensor(values), tuple(value.shape))
        if id(value) not in memo:
            array = value.detach().numpy().copy()
            out = vkml.tensor(array)
            if isinstance(value, torch.nn.Parameter):
                out = vkml.nn.Parameter(out, requires_grad=value.requires_grad)
            memo[id(value)] = out
        return memo[id(value)]
    if isinstance(value, dict):
        return {k: to_vkml(v, memo) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_vkml(v, memo) for v in value)
    return value


def _numpy(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return np.asarray(value.detach().numpy() if isinstance(value, vkml.Tensor) else value)


def assert_same_entry(ours, theirs, where: str, rtol: float, atol: float, values: bool = True) -> None:
    """One state or group entry: a torch tensor must be a vkml tensor of its shape and dtype and values
    (``values=False``: of its shape and dtype; a number a number of its type)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, vkml.Tensor), f"{where}: PyTorch keeps a tensor, vkml a {type(ours).__name__}"
        assert tuple(ours.shape) == tuple(theirs.shape), f"{where}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (
            f"{where}: dtype {ours.dtype} != {theirs.dtype}"
        )
        if not values:
            return
        if theirs.is_sparse:
            theirs = theirs.to_dense()
            ours = ours.to_dense()
        np.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=rtol, atol=atol, err_msg=where)
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), f"{where}: {ours!r} != {theirs!r}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_entry(a, b, f"{where}[{i}]", rtol, atol, values)
    elif isinstance(theirs, float):
        assert not isinstance(ours, vkml.Tensor), f"{where}: PyTorch keeps a number, vkml a tensor"
        if values:
            np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=where)
    else:
        assert not isinstance(ours, vkml.Tensor), f"{where}: PyTorch keeps {theirs!r}, vkml a tensor"
        assert ours == theirs if values else type(ours) is type(theirs), f"{where}: {ours!r} != {theirs!r}"


def assert_same_state(ours: dict, theirs: dict, where: str, rtol: float, atol: float, values: bool = True) -> None:
    assert sorted(ours) == sorted(theirs), f"{where}: keys {sorted(ours)} != {sorted(theirs)}"
    for key in theirs:
        assert_same_entry(ours[key], theirs[key], f"{where}[{key!r}]", rtol, atol, values)


def assert_same_state_dict(ours: dict, theirs: dict, rtol: float, atol: float, values: bool = True) -> None:
    assert sorted(ours) == sorted(theirs)
    assert sorted(ours["state"]) == sorted(theirs["state"]), "state_dict: parameter indices"
    for index, state in theirs["state"].items():
        assert_same_state(ours["state"][index], state, f"state_dict()['state'][{index}]", rtol, atol, values)
    assert len(ours["param_groups"]) == len(theirs["param_groups"])
    for i, (a, b) in enumerate(zip(ours["param_groups"], theirs["param_groups"])):
        assert_same_state(a, b, f"state_dict()['param_groups'][{i}]", rtol, atol)


# ---------------------------------------------------------------------- the runs


class Problem:
    """The same parameters and data in both frameworks: a linear layer's weight and bias (the weight
    alone for Muon, 2-D only), or an embedding with sparse gradients (SparseAdam)."""

    def __init__(self, name: str, seed: int = 0):
        g = np.random.default_rng(seed)
        self.name = name
        self.sparse = name == "SparseAdam"
        if self.sparse:
            shapes = [(5, 3)]
            self.indices = [np.array([0, 2, 2, 4]), np.array([1, 2, 3, 3]), np.array([4, 0, 1, 2])]
        else:
            shapes = [(2, 3)] if name == "Muon" else [(2, 3), (2,)]
        self.start = [g.standard_normal(s).astype(np.float32) for s in shapes]
        self.grads = [[(g.standard_normal(s) * (1 + k % 3)).astype(np.float32) for s in shapes] for k in range(STEPS)]
        self.grads[2][0][0, :2] = 0.0  # zero gradients: Rprop's sign rule, Adagrad's sum
        self.grads[3][0][1] = -self.grads[2][0][1]  # sign flips
        self.x = g.standard_normal((4, 3)).astype(np.float32)
        self.y = g.standard_normal((4, 2 if not self.sparse else 3)).astype(np.float32)

    def params(self, lib):
        if lib is torch:
            return [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in self.start]
        return [vkml.nn.Parameter(vkml.tensor(a.copy())) for a in self.start]

    def loss(self, lib, params, k: int):
        """The step-``k`` loss of the tiny model (mean squared error)."""
        x, y = lib.tensor(self.x), lib.tensor(self.y)
        if self.sparse:
            idx = lib.tensor(self.indices[k % len(self.indices)])
            out = lib.nn.functional.embedding(idx, params[0], sparse=True)
            return ((out - y) ** 2).mean()
        out = x @ params[0].T
        if len(params) > 1:
            out = out + params[1]
        return ((out - y) ** 2).mean()

    def set_grads(self, lib, params, k: int) -> None:
        for p, g in zip(params, self.grads[k]):
            p.grad = lib.tensor(g.copy())


def _make(lib, name: str, params, kwargs: dict):
    cls = getattr(lib.optim, name)
    return cls(params, **(kwargs if lib is torch else to_vkml(kwargs)))


def _step(lib, problem: Problem, opt, params, mode: str, k: int):
    if mode == "grads":
        problem.set_grads(lib, params, k)
        return opt.step()

    def closure():
        opt.zero_grad()
        loss = problem.loss(lib, params, k)
        loss.backward()
        return loss

    return opt.step(closure)


def compare_run(name: str, kwargs: dict, mode: str = "grads", steps: int = STEPS) -> None:
    """Steps ``name(**kwargs)`` in both frameworks and compares parameters, state and state_dict (module doc)."""
    rtol, atol = tolerances(name)
    values = name not in STRUCTURE_ONLY
    problem = Problem(name)
    if problem.sparse or name == "LBFGS":
        mode = "closure"  # SparseAdam needs sparse gradients, LBFGS a closure
    theirs_p, ours_p = problem.params(torch), problem.params(vkml)
    theirs, ours = _make(torch, name, theirs_p, kwargs), _make(vkml, name, ours_p, kwargs)
    for k in range(steps):
        loss_t = _step(torch, problem, theirs, theirs_p, mode, k)
        loss_v = _step(vkml, problem, ours, ours_p, mode, k)
        if loss_t is not None:
            np.testing.assert_allclose(loss_v.item(), loss_t.item(), rtol=rtol, atol=atol, err_msg=f"loss {k}")
        for i, (a, b) in enumerate(zip(ours_p, theirs_p)):
            np.testing.assert_allclose(_numpy(a), _numpy(b), rtol=rtol, atol=atol, err_msg=f"param {i} step {k}")
    for i, (a, b) in enumerate(zip(ours_p, theirs_p)):
        assert (a in ours.state) == (b in theirs.state), f"state of param {i}"
        if b in theirs.state:
            assert_same_state(ours.state[a], theirs.state[b], f"state[param {i}]", rtol, atol, values)
    assert_same_state_dict(ours.state_dict(), theirs.state_dict(), rtol, atol, values)
    _compare_resumed(name, kwargs, problem, mode, steps, theirs, theirs_p, ours)


def _compare_resumed(name, kwargs, problem, mode, k, theirs, theirs_p, ours) -> None:
    """A fresh vkml optimizer loading vkml's, and one loading PyTorch's, state_dict take the next step
    as PyTorch's optimizer does."""
    rtol, atol = tolerances(name)
    # PyTorch's state_dict holds its live tensors, which its next step changes in place: a copy
    saved = {"vkml": ours.state_dict(), "torch": copy.deepcopy(theirs.state_dict())}
    values = [_numpy(p).copy() for p in theirs_p]
    _step(torch, problem, theirs, theirs_p, mode, k % STEPS)
    for source, sd in saved.items():
        params = [vkml.nn.Parameter(vkml.tensor(v.copy())) for v in values]
        resumed = _make(vkml, name, params, kwargs)
        resumed.load_state_dict(sd)
        _step(vkml, problem, resumed, params, mode, k % STEPS)
        for i, (a, b) in enumerate(zip(params, theirs_p)):
            np.testing.assert_allclose(
                _numpy(a), _numpy(b), rtol=rtol, atol=atol, err_msg=f"param {i} after loading {source}'s state_dict"
            )
        for i, (a, b) in enumerate(zip(params, theirs_p)):
            if b in theirs.state:
                where = f"resumed from {source}: state[{i}]"
                assert_same_state(resumed.state[a], theirs.state[b], where, rtol, atol, name not in STRUCTURE_ONLY)


# ---------------------------------------------------------------------- error inputs


def check_error(name: str, params, kwargs: dict, on_step: bool, error_type: type, regex: str) -> None:
    """vkml raises (or warns) ``error_type`` matching ``regex`` where torch's ``optim_db`` says PyTorch does.

    ``params`` are torch's (converted here); None means one 2-D parameter."""
    params = to_vkml(params) if params is not None else [vkml.nn.Parameter(vkml.randn(2, 2))]
    kwargs = to_vkml(kwargs)
    cls = getattr(vkml.optim, name)
    if issubclass(error_type, Warning):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cls(params, **kwargs)
        assert any(issubclass(w.category, error_type) and re.search(regex, str(w.message)) for w in caught), (
            f"no {error_type.__name__} matching {regex!r}: {[str(w.message) for w in caught]}"
        )
        return
    try:
        opt = cls(params, **kwargs)
        if on_step:
            for p in opt.param_groups[0]["params"]:
                p.grad = vkml.zeros_like(p)
            opt.step()
    except error_type as e:
        assert re.search(regex, str(e)), f"{error_type.__name__} {str(e)!r} does not match {regex!r}"
        return
    raise AssertionError(f"no {error_type.__name__} matching {regex!r}")
