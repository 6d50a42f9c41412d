"""What pytorch/examples' programs needed beyond the rest of the suite (tests/programs/ runs three of them).

Each check is one a program of pytorch/examples ran into: the word language model's
``model.rnn.flatten_parameters()``, the device choice through ``torch.accelerator`` and
``torch.xpu``, the siamese network's deprecated ``nn.init.xavier_uniform``, and fast neural
style's ``style.repeat(...)`` followed by an in-place ``div_`` (repeat gives new memory).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml
import vkml.nn as nn


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_rnn_flatten_parameters_and_all_weights_match_pytorch(kind):
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True)
    ours = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True)
    ours.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    assert ours.flatten_parameters() is None
    assert [[p.shape for p in layer] for layer in ours.all_weights] == [
        [tuple(p.shape) for p in layer] for layer in theirs.all_weights
    ]
    for mine, real in zip(sum(ours.all_weights, []), sum(theirs.all_weights, [])):
        np.testing.assert_array_equal(mine.detach().numpy(), real.detach().numpy())
    assert all(isinstance(p, nn.Parameter) for p in sum(ours.all_weights, []))
    without_bias = nn.GRU(2, 3, bias=False)
    assert [len(layer) for layer in without_bias.all_weights] == [2]


def test_accelerator_names_the_device_cuda_names(gpu):
    import vkml.accelerator
    import vkml.xpu

    assert vkml.accelerator.is_available() is vkml.cuda.is_available() is True
    device = vkml.accelerator.current_accelerator()
    assert device == vkml.device("cuda") and device.type == "vulkan"
    assert vkml.accelerator.current_device_index() == vkml.accelerator.current_device_idx() == device.index
    assert vkml.accelerator.device_count() == vkml.cuda.device_count()
    vkml.accelerator.set_device_index(device.index)
    with pytest.raises(NotImplementedError, match="set_device_index"):
        vkml.accelerator.set_device_index(device.index + 7)
    # the pytorch/examples idiom: a tensor moved there computes there
    x = vkml.ones(3).to(device) * 2
    vkml.accelerator.synchronize()
    assert x.device == device and x.tolist() == [2.0, 2.0, 2.0]
    assert vkml.xpu.is_available() is False and vkml.xpu.device_count() == 0


@pytest.mark.parametrize("name", ["xavier_uniform", "xavier_normal", "kaiming_uniform", "orthogonal", "normal"])
def test_deprecated_init_names_warn_and_initialise(name):
    vkml.manual_seed(3)
    expected = getattr(nn.init, name + "_")(nn.Parameter(vkml.zeros(4, 5)))
    vkml.manual_seed(3)
    weight = nn.Parameter(vkml.zeros(4, 5))
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        out = getattr(nn.init, name)(weight)
    assert out is weight
    np.testing.assert_array_equal(weight.detach().numpy(), expected.detach().numpy())
    with pytest.warns(FutureWarning):
        getattr(torch.nn.init, name)(torch.zeros(4, 5))  # the same warning class as PyTorch


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.repeat(2, 1, 1, 1),  # fast neural style's style image, one copy per batch entry
        lambda t: t.repeat(1, 1, 1),
        lambda t: t.tile((1,)),
        lambda t: t.repeat_interleave(1, dim=0),
        lambda t: t[:1].repeat_interleave(2, dim=0),
        lambda t: t.repeat_interleave(1),
    ],
)
@pytest.mark.parametrize("device_kind", ["cpu", "gpu"])
def test_repeat_gives_new_memory_that_takes_in_place_writes(op, device_kind, request):
    device = request.getfixturevalue("gpu") if device_kind == "gpu" else vkml.device("cpu")
    values = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    ours, theirs = vkml.tensor(values, device=device), torch.tensor(values)
    out, expected = op(ours), op(theirs)
    out.div_(255.0)  # formerly refused (stride-0 view) or written through into the input
    expected.div_(255.0)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_array_equal(ours.numpy(), values)
    ours.add_(1)  # and a write to the input leaves the repeat alone
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_dropout2d_on_2d_input_warns_and_masks_each_element_as_pytorch():
    """mnist_rnn puts nn.Dropout2d after an LSTM's (N, C) output: PyTorch warns and drops elements."""
    import vkml.nn.functional as F

    x = vkml.ones(64, 32)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d, which is deprecated"):
        out = nn.Dropout2d(0.5)(x)
    values = out.numpy()
    assert set(np.unique(values)) == {0.0, 2.0}
    # element-wise, not row- or column-wise: neither a row nor a column is all one value
    assert 0 < (values == 0).mean() < 1 and len({tuple(r) for r in values}) > 2
    assert not all((c == c[0]).all() for c in values.T)
    with pytest.warns(UserWarning, match="2-D input"):
        assert F.dropout2d(x, 0.5, training=False) is x
    with pytest.warns(UserWarning, match="1-D input"), pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.dropout2d(vkml.ones(3), 0.5)
    with pytest.warns(UserWarning, match="1-D input"):
        assert F.dropout2d(vkml.ones(3), 1.0).tolist() == [0.0, 0.0, 0.0]
    with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout"):  # warned in eval too
        F.dropout2d(vkml.ones(2, 3, 4), 0.5, training=False)


def test_range_indexes_as_a_list_of_ints():
    """mnist_forward_forward's overlay: x_[range(x.shape[0]), y] = x.max()."""
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    ours, theirs = vkml.tensor(values), torch.tensor(values)
    labels = [2, 0, 1, 1]
    ours[range(ours.shape[0]), vkml.tensor(labels)] = ours.max()
    theirs[range(theirs.shape[0]), torch.tensor(labels)] = theirs.max()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours[range(1, 4, 2)].numpy(), theirs[range(1, 4, 2)].numpy())
    np.testing.assert_array_equal(ours[:, range(0)].numpy(), theirs[:, range(0)].numpy())


def test_a_repeated_training_step_reuses_the_cpu_interpreters_programs(monkeypatch):
    """The forward-forward layer's step: its reductions' programs are several MiB each, and a bound
    smaller than one step's programs made every step compile them all again (5x the time)."""
    from vkml.ir.interp import compiled

    compiles = []
    original = compiled._compile
    monkeypatch.setattr(
        compiled, "_compile", lambda kernel, dead: compiles.append(kernel.name) or original(kernel, dead)
    )
    vkml.manual_seed(0)
    layer = nn.Linear(20, 16)
    x = vkml.randn(16, 20)
    counts = []
    for _ in range(3):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        loss = vkml.relu(vkml.mm(x_direction, layer.weight.T) + layer.bias.unsqueeze(0)).pow(2).mean(1).mean()
        loss.backward()
        loss.item(), layer.weight.grad.sum().item()
        counts.append(len(compiles))
    assert counts[0] > 0 and counts[2] == counts[1], compiles[counts[1] :]
