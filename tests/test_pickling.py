"""Whole objects through pickle, copy.deepcopy and vkml.save/vkml.load, as PyTorch's (vkml/frontend/pickling.py)."""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest
import torch

import vkml


def _save_load(lib, obj, **kwargs):
    buffer = io.BytesIO()
    lib.save(obj, buffer)
    buffer.seek(0)
    return lib.load(buffer, **kwargs)


ROUND_TRIPS = {
    "pickle": lambda lib, obj: pickle.loads(pickle.dumps(obj)),
    "deepcopy": lambda lib, obj: copy.deepcopy(obj),
    "save": lambda lib, obj: _save_load(lib, obj, weights_only=False),
    "save_weights_only": lambda lib, obj: _save_load(lib, obj, weights_only=True),
}


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_views_of_one_storage_stay_shared_where_pytorch_keeps_them(how):
    """deepcopy and save keep a storage shared by several tensors; plain pickle gives each its own."""
    seen = {}
    for lib in (torch, vkml):
        x = lib.arange(6.0).reshape(2, 3)
        base, row, t = ROUND_TRIPS[how](lib, [x, x[1], x.t()])
        base[1, 0] = 100.0
        seen[lib.__name__] = (row.tolist(), t.tolist(), tuple(t.stride()), row.storage_offset(), x.tolist())
    assert seen["vkml"] == seen["torch"]


@pytest.mark.parametrize("how", ["pickle", "save"])
def test_a_whole_module_and_its_optimizer_round_trip(how):
    vkml.manual_seed(0)
    model = vkml.nn.Sequential(vkml.nn.Linear(3, 4), vkml.nn.ReLU(), vkml.nn.Linear(4, 2))
    model[2].weight.requires_grad_(False)
    opt = vkml.optim.Adam(model.parameters(), lr=0.1)
    model(vkml.ones(2, 3)).sum().backward()
    opt.step()
    loaded_model, loaded_opt = ROUND_TRIPS[how](vkml, {"m": model, "o": opt}).values()
    assert type(loaded_model) is vkml.nn.Sequential and type(loaded_opt) is vkml.optim.Adam
    for (name, p), (_, q) in zip(model.named_parameters(), loaded_model.named_parameters()):
        assert type(q) is vkml.nn.Parameter and q.requires_grad == p.requires_grad, name
        assert np.array_equal(q.numpy(), p.numpy()) and q.grad is None, name  # PyTorch's pickling drops .grad
    # The optimizer's parameters are the loaded model's (one pickle, one memo), its state by value.
    assert all(a is b for a, b in zip(loaded_opt.param_groups[0]["params"], loaded_model.parameters()))
    state = loaded_opt.state[loaded_opt.param_groups[0]["params"][0]]
    assert np.array_equal(state["exp_avg"].numpy(), opt.state[model[0].weight]["exp_avg"].numpy())
    x = vkml.ones(1, 3)
    assert np.array_equal(loaded_model(x).detach().numpy(), model(x).detach().numpy())


class Tied(vkml.nn.Module):  # at module level: pickle names a class by where it is defined
    def __init__(self):
        super().__init__()
        self.embed = vkml.nn.Embedding(5, 3)
        self.head = vkml.nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "save"])
def test_tied_weights_stay_tied(how):
    model = ROUND_TRIPS[how](vkml, Tied())
    assert model.head.weight is model.embed.weight
    assert [n for n, _ in model.named_parameters()] == ["embed.weight"]


def test_weights_only_refuses_a_pickled_module_with_pytorchs_error():
    buffer = io.BytesIO()
    vkml.save(vkml.nn.Linear(2, 1), buffer)
    expected = io.BytesIO()
    torch.save(torch.nn.Linear(2, 1), expected)
    for lib, data in ((torch, expected), (vkml, buffer)):
        data.seek(0)
        with pytest.raises(
            pickle.UnpicklingError, match=r"(?s)Weights only load failed.*Unsupported global: GLOBAL \S+Linear"
        ):
            lib.load(data)  # weights_only defaults to True (PyTorch >= 2.6)
    buffer.seek(0)
    assert isinstance(vkml.load(buffer, weights_only=False), vkml.nn.Linear)


def test_tensors_pickle_by_value_with_dtype_device_and_requires_grad(gpu):
    w = vkml.tensor([1.5, -2.0, 3.25], requires_grad=True)
    w.grad = vkml.ones(3)
    y = w * 2  # computed by an op: pickles its values as a leaf (as PyTorch's)
    tensors = [
        w,
        y,
        vkml.tensor([[1, 2], [3, 4]], dtype=vkml.int16, device=gpu).t(),
        vkml.tensor([0.5, 1.0], dtype=vkml.bfloat16),
        vkml.tensor([True, False]),
    ]
    for t, u in zip(tensors, pickle.loads(pickle.dumps(tensors))):
        assert (u.dtype, u.device, u.requires_grad, u.grad, u.grad_fn) == (
            t.dtype,
            t.device,
            t.requires_grad,
            None,
            None,
        )
        assert u.tolist() == t.tolist() and tuple(u.stride()) == tuple(t.stride())
    copied = copy.deepcopy(w)
    assert copied.grad.tolist() == [1.0, 1.0, 1.0] and copied.requires_grad  # deepcopy keeps .grad (as PyTorch)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(y)
    moved = _save_load(vkml, [vkml.nn.Linear(1, 1).to(gpu)], weights_only=False, map_location="cpu")
    assert moved[0].weight.device == vkml.device("cpu")


def test_devices_and_an_lr_scheduler_pickle_as_pytorchs(gpu):
    """A device pickles by name (torch.device does); an optimizer pickles without its hooks and its LR
    scheduler's wrapper of ``step`` (PyTorch's ``Optimizer.__getstate__``), so a scheduler pickles too."""
    assert pickle.loads(pickle.dumps([vkml.device("cpu"), gpu])) == [vkml.device("cpu"), gpu]
    for lib in (torch, vkml):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        opt.register_step_pre_hook(lambda *args: None)  # a lambda: pickled, it would raise
        sched = lib.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
        loaded = pickle.loads(pickle.dumps(sched))
        assert (type(loaded).__name__, loaded.last_epoch, loaded.optimizer.param_groups[0]["lr"]) == ("StepLR", 0, 0.1)
    buffer = io.BytesIO()
    vkml.save({"device": gpu, "x": vkml.zeros(1)}, buffer)
    buffer.seek(0)
    assert vkml.load(buffer)["device"] == gpu  # weights only: a device is allowed, as torch.device


def test_save_finds_a_public_function_a_module_holds():
    """TransformerEncoderLayer keeps F.relu (an autocast wrapper, named after the function it wraps): vkml.save
    pickles it by where it is public, as torch.save pickles torch.nn.functional.relu."""
    layer = vkml.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    loaded = _save_load(vkml, layer, weights_only=False)
    assert loaded.activation is vkml.nn.functional.relu
    x = vkml.ones(1, 3, 8)
    assert np.array_equal(loaded(x).detach().numpy(), layer(x).detach().numpy())


def test_tensors_take_attributes_that_copies_and_pickles_keep_as_pytorchs():
    """PyTorch's tensors take any attribute; deepcopy and pickle keep a plain tensor's, pickle a
    Parameter's, and a Parameter's deepcopy drops them. A Tensor's class still becomes Parameter
    when a view of a parameter is unpickled before it (Python 3.12 refused that with Parameter's own
    ``__dict__`` slot)."""
    results = []
    for m in (torch, vkml):
        t = m.zeros(2)
        t.label = [1]
        layer = m.nn.Linear(2, 2)
        layer.bias.mark = 5
        copied, unpickled = copy.deepcopy(t), pickle.loads(pickle.dumps(t))
        layer_unpickled, layer_copied = pickle.loads(pickle.dumps(layer)), copy.deepcopy(layer)
        results.append(
            (
                copied.label,
                copied.label is t.label,
                unpickled.label,
                getattr(layer_unpickled.bias, "mark", None),
                getattr(layer_copied.bias, "mark", None),
            )
        )
    assert results[0] == results[1] == ([1], False, [1], 5, None)
    layer = vkml.nn.Linear(3, 2)
    head, back = pickle.loads(pickle.dumps([layer.weight.detach()[0], layer]))
    assert type(back.weight) is vkml.nn.Parameter and back.weight.requires_grad
    np.testing.assert_array_equal(back.weight.detach().numpy(), layer.weight.detach().numpy())
