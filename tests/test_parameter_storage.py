"""``nn.Parameter(t)`` shares ``t``'s storage, and ``nn.Buffer`` marks a buffer, as in PyTorch.

Each scenario is one function run twice, on (vkml, vkml.nn) and on (torch, torch.nn); what it
observes (values, versions, identities, flags, error messages) must be the same.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml
import vkml.nn as vnn

LIBS = {"vkml": (vkml, vnn), "torch": (torch, torch.nn)}


def _values(t) -> list:
    return np.asarray(t.detach().tolist(), np.float64).tolist()


def _both(scenario) -> None:
    got, want = (scenario(*LIBS[name]) for name in ("vkml", "torch"))
    assert got == want


def _writes_reach_both(lib, nn):
    t = lib.zeros(3)
    p = nn.Parameter(t)
    seen = [p._version, t._version]
    with lib.no_grad():
        p.add_(1)  # an optimizer's update: reaches t
    seen += [_values(t), p._version, t._version]
    t.mul_(3)  # a write to t: reaches p
    seen += [_values(p), p._version, t._version, p.is_leaf, p.requires_grad, t.requires_grad]
    p.data.add_(1)  # p.data is t's storage, versioned apart
    seen += [_values(t), p._version]
    (p * 2).sum().backward()
    seen += [_values(p.grad), t.grad is None]
    return seen


def _views_taken_before(lib, nn):
    t = lib.arange(6.0).reshape(2, 3)
    row = t[1]
    p = nn.Parameter(t)
    with lib.no_grad():
        p[1, 2] = 50.0
    row.add_(1)
    return [_values(row), _values(p), _values(t)]


def _over_a_view(lib, nn):
    base = lib.arange(6.0).reshape(2, 3)
    p = nn.Parameter(base[0])
    with lib.no_grad():
        p.mul_(10)
    seen = [_values(base), p.is_leaf]
    try:
        p[0].add_(1)
    except RuntimeError as error:
        seen.append(str(error))
    return seen


def _identity_and_flags(lib, nn):
    t = lib.zeros(2, requires_grad=True)
    p = nn.Parameter(t)
    q = nn.Parameter(lib.zeros(2), requires_grad=False)
    again = nn.Parameter(p)
    with lib.no_grad():
        again.add_(5)
    y = lib.ones(2, requires_grad=True) * 2  # a computed tensor: the Parameter is a leaf all the same
    from_y = nn.Parameter(y)
    ints = nn.Parameter(lib.arange(3), requires_grad=False)
    seen = [p is t, isinstance(p, nn.Parameter), isinstance(p, type(t)), p.requires_grad, p.is_leaf]
    seen += [q.requires_grad, isinstance(q, nn.Parameter), again is p, _values(p), from_y.is_leaf]
    seen += [from_y.grad_fn is None, ints.requires_grad, str(ints.dtype).split(".")[-1], tuple(nn.Parameter().shape)]
    try:
        nn.Parameter(lib.arange(3))
    except RuntimeError as error:
        seen.append(str(error).split(" (got")[0].lower())
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        p.add_(1)
    return seen


def _saved_value_then_parameter(lib, nn):
    a = lib.ones(3, requires_grad=True)
    y = a * 2
    z = y * y  # saves y
    nn.Parameter(y)  # shares y's storage; no write: backward reads y as saved
    z.sum().backward()
    seen = [_values(a.grad)]
    b = lib.ones(3, requires_grad=True)
    y = b * 2
    z = y * y
    p = nn.Parameter(y)
    with lib.no_grad():
        p.add_(1)  # a write to the saved storage: backward refuses
    try:
        z.sum().backward()
    except RuntimeError as error:
        seen.append("modified by an inplace operation" in str(error))
    return seen


def _half_keeps_the_source(lib, nn):
    t = lib.ones(3)
    m = nn.Module()
    m.w = nn.Parameter(t)
    m.half()
    seen = [str(t.dtype).split(".")[-1], str(m.w.dtype).split(".")[-1]]
    with lib.no_grad():
        m.w.add_(1)
    return seen + [_values(t), _values(m.w)]


def _optimizer_and_load(lib, nn, step=None):
    t = lib.ones(3)
    m = nn.Module()
    m.w = nn.Parameter(t)
    m.load_state_dict({"w": lib.full((3,), 4.0)})  # copied into the storage: t sees it
    seen = [_values(t)]
    (m.w * lib.arange(3.0)).sum().backward()
    if step is None:  # torch.optim's first optimizer imports torch._dynamo (seconds): SGD by hand
        with lib.no_grad():
            m.w.sub_(0.5 * m.w.grad)
    else:
        step(m.parameters())
    return seen + [_values(t), _values(m.w)]


def test_optimizer_step_reaches_the_source():
    def sgd(params):
        vkml.optim.SGD(params, lr=0.5).step()

    assert _optimizer_and_load(vkml, vnn, sgd) == _optimizer_and_load(torch, torch.nn)


def _buffers(lib, nn):
    m = nn.Module()
    m.steps = nn.Buffer(lib.zeros(()), persistent=False)
    m.mean = nn.Buffer(lib.ones(2))
    m.plain = lib.ones(2)  # a plain tensor is an attribute, not a buffer
    source = lib.ones(2, requires_grad=True)
    marked = nn.Buffer(source)
    with lib.no_grad():
        marked.add_(1)  # Buffer(t) is t.detach(): one storage
    seen = [[name for name, _ in m.named_buffers()], list(m.state_dict()), type(m.mean).__name__]
    seen += [isinstance(m.mean, nn.Buffer), isinstance(lib.ones(1), nn.Buffer), marked.requires_grad]
    seen += [marked.is_leaf, _values(source), m.mean.persistent, m.steps.persistent, tuple(nn.Buffer().shape)]
    try:
        m.register_buffer("plain", lib.ones(1))
    except KeyError as error:
        seen.append(str(error))
    return seen


@pytest.mark.parametrize(
    "scenario",
    [
        _writes_reach_both,
        _views_taken_before,
        _over_a_view,
        _identity_and_flags,
        _saved_value_then_parameter,
        _half_keeps_the_source,
        _optimizer_and_load,
        _buffers,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_matches_pytorch(scenario):
    _both(scenario)


def test_autograd_write_to_a_computed_source_raises():
    """PyTorch records ``y.mul_(3)`` on ``y`` alone; vkml cannot (the storage is the Parameter's) and says so."""
    a = vkml.ones(3, requires_grad=True)
    y = a * 2
    p = vnn.Parameter(y)
    with pytest.raises(NotImplementedError, match="nn.Parameter was made from"):
        y.mul_(3)
    with vkml.no_grad():
        y.mul_(3)  # outside autograd it is a plain write of the shared storage
    t = torch.ones(3, requires_grad=True) * 2
    q = torch.nn.Parameter(t)
    with torch.no_grad():
        t.mul_(3)
    assert _values(p) == _values(q) == _values(y)
