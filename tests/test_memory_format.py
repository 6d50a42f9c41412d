"""PyTorch's memory formats: accepted, checked, and no change of values (vkml/frontend/memory_format.py)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

import vkml


def test_the_names_exist_as_pytorchs():
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        assert isinstance(getattr(vkml, name), vkml.memory_format) and isinstance(
            getattr(torch, name), torch.memory_format
        )
        assert repr(getattr(vkml, name)) == f"vkml.{name}"
        assert pickle.loads(pickle.dumps(getattr(vkml, name))) is getattr(vkml, name)


def test_conversions_keep_the_values_and_a_model_runs():
    data = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    x = vkml.tensor(data)
    for converted in (
        x.to(memory_format=vkml.channels_last),
        x.contiguous(memory_format=vkml.channels_last),
        x.clone(memory_format=vkml.channels_last),
        x.to(vkml.float32, memory_format=vkml.preserve_format),
    ):
        assert converted.shape == x.shape and np.array_equal(converted.numpy(), data)
    conv = torch.nn.Conv2d(3, 4, 3)
    mine = vkml.nn.Conv2d(3, 4, 3)
    mine.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in conv.state_dict().items()})
    assert mine.to(memory_format=vkml.channels_last) is mine  # as PyTorch's: the module itself
    want = conv.to(memory_format=torch.channels_last)(torch.tensor(data).to(memory_format=torch.channels_last))
    np.testing.assert_allclose(mine(x.to(memory_format=vkml.channels_last)).numpy(), want.detach().numpy(), atol=1e-5)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: x.to(memory_format=lib.channels_last),
        lambda lib, x: x.contiguous(memory_format=lib.channels_last_3d),
        lambda lib, x: x.clone(memory_format=lib.channels_last),
    ],
)
def test_a_wrong_rank_raises_as_pytorch(call):
    with pytest.raises(RuntimeError, match="required rank") as theirs:
        call(torch, torch.ones(3, 4))
    with pytest.raises(RuntimeError) as mine:
        call(vkml, vkml.ones(3, 4))
    assert str(mine.value) == str(theirs.value)
    with pytest.raises(TypeError, match="memory_format"):
        vkml.ones(2).to(memory_format="channels_last")


def test_is_contiguous_answers_for_the_row_major_layout():
    # vkml keeps row-major order: the answer PyTorch gives for a row-major tensor of the same shape
    for shape in ((2, 3, 4, 4), (2, 1, 4, 4), (2, 3, 1, 1), (0, 3, 4, 4), (3, 4)):
        got = vkml.ones(*shape).is_contiguous(memory_format=vkml.channels_last)
        assert got == torch.ones(*shape).is_contiguous(memory_format=torch.channels_last), shape
    assert vkml.ones(2, 3, 4, 4).permute(0, 2, 3, 1).is_contiguous(memory_format=vkml.channels_last) is False


# Each probe runs on both libraries on the same (2, 3, 4, 5) values x and its channels-last copy xc and
# returns what PyTorch reports about the layout: the strides and contiguity of the result.
LAYOUT_PROBES = {
    "to": lambda m, x, xc: (xc.stride(), xc.is_contiguous(), xc.is_contiguous(memory_format=m.channels_last)),
    "contiguous": lambda m, x, xc: (xc.contiguous().stride(), xc.contiguous().is_contiguous(), x.contiguous() is x),
    "already": lambda m, x, xc: (
        xc.to(memory_format=m.channels_last) is xc,
        xc.contiguous(memory_format=m.channels_last) is xc,
    ),
    "views": lambda m, x, xc: (
        xc[0].stride(),
        xc.permute(0, 2, 3, 1).is_contiguous(),
        xc.detach().stride(),
        xc.data.stride(),
    ),
    "casts": lambda m, x, xc: (
        xc.double().stride(),
        xc.to(m.float16).stride(),
        x.to(m.float64, memory_format=m.channels_last).stride(),
    ),
    "elementwise": lambda m, x, xc: ((xc + x).stride(), (x + xc).stride(), (xc * 2).stride(), m.relu(xc).stride()),
    "broadcast": lambda m, x, xc: (
        (m.ones(1, 3, 1, 1) + xc).stride(),
        (m.ones(5) * xc).stride(),
        m.where(xc > 0, xc, 0.0).stride(),
    ),
    "like": lambda m, x, xc: (
        xc.clone().stride(),
        m.empty_like(xc).stride(),
        m.zeros_like(xc).stride(),
        m.ones_like(xc, memory_format=m.contiguous_format).stride(),
    ),
    "empty": lambda m, x, xc: (
        m.empty(2, 3, 4, 5, memory_format=m.channels_last).stride(),
        m.zeros(2, 1, 4, 1).to(memory_format=m.channels_last).stride(),
    ),
    "reduction": lambda m, x, xc: (xc.sum(1, keepdim=True).stride(), x.clone(memory_format=m.channels_last).stride()),
    "layers": lambda m, x, xc: (
        m.nn.functional.conv2d(xc, m.ones(2, 3, 3, 3)).stride(),
        m.nn.functional.conv2d(x, m.ones(2, 3, 3, 3).to(memory_format=m.channels_last)).stride(),
        m.nn.functional.max_pool2d(xc, 2).stride(),
        m.nn.functional.adaptive_avg_pool2d(xc, 1).stride(),
        m.nn.functional.batch_norm(xc, m.zeros(3), m.ones(3)).stride(),
    ),
    "3d": lambda m, x, xc: (m.ones(2, 3, 2, 2, 2).to(memory_format=m.channels_last_3d).stride(),),
}


@pytest.mark.parametrize("probe", list(LAYOUT_PROBES))
def test_strides_and_contiguity_follow_the_memory_format_as_pytorchs(probe):
    data = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 7
    results = []
    for m in (torch, vkml):
        x = m.tensor(data)
        results.append(LAYOUT_PROBES[probe](m, x, x.to(memory_format=m.channels_last)))
    assert results[1] == results[0]


def test_a_channels_last_model_trains_with_channels_last_gradients():
    net = vkml.nn.Sequential(vkml.nn.Conv2d(3, 4, 3, padding=1), vkml.nn.ReLU())
    plain = vkml.nn.Sequential(vkml.nn.Conv2d(3, 4, 3, padding=1), vkml.nn.ReLU())
    plain.load_state_dict(net.state_dict())
    net = net.to(memory_format=vkml.channels_last)
    assert net[0].weight.stride() == (27, 1, 9, 3) and plain[0].weight.stride() == (27, 9, 3, 1)
    x = vkml.tensor(np.linspace(-1, 1, 2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4))
    out = net(x.to(memory_format=vkml.channels_last))
    want = plain(x)
    assert out.stride() == (64, 1, 16, 4) and np.array_equal(out.numpy(), want.numpy())
    out.sum().backward()
    want.sum().backward()
    assert net[0].weight.grad.stride() == (27, 1, 9, 3)
    assert np.array_equal(net[0].weight.grad.numpy(), plain[0].weight.grad.numpy())


def test_a_unary_op_keeps_the_format_after_its_fast_path_was_taken():
    # lazy's fast path for a unary op of a kind met before once skipped the format (a GPU-suite ordering found it)
    vkml.relu(vkml.ones(2, 3, 4, 5))
    xc = vkml.ones(2, 3, 4, 5).to(memory_format=vkml.channels_last)
    assert vkml.relu(xc).stride() == vkml.exp(xc).stride() == (60, 1, 15, 3)


def test_the_format_bookkeeping_ends_with_the_last_channels_last_tensor():
    # Formats were once tracked by a flag that stayed set for the rest of the process: one converted model
    # made every later op look for formats and every optimizer take its unfused path.
    import gc

    from vkml.frontend import memory_format

    gc.collect()
    before = memory_format.live_count()
    x = vkml.ones(2, 3, 4, 5).to(memory_format=vkml.channels_last)
    y = x + 1  # takes x's format: a second live one
    assert memory_format.ACTIVE and memory_format.live_count() == before + 2
    z = y.contiguous()  # row-major: not counted
    assert memory_format.live_count() == before + 2 and z.stride() == (60, 20, 5, 1)
    del x, y
    gc.collect()
    assert memory_format.live_count() == before
    assert memory_format.ACTIVE == (before > 0)


def test_an_optimizer_fuses_plain_parameters_while_a_channels_last_model_lives():
    from vkml.optim import adam

    fused_calls = []
    real = adam._fused_nodes

    def spying(*args):
        nodes = real(*args)
        fused_calls.append(nodes is not None)
        return nodes

    channels_last_net = vkml.nn.Conv2d(3, 4, 3).to(memory_format=vkml.channels_last)
    plain = vkml.nn.Linear(3, 2)
    torch_plain = torch.nn.Linear(3, 2)
    torch_plain.load_state_dict({k: torch.tensor(v.numpy()) for k, v in plain.state_dict().items()})
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    for net, m, opt_of in ((plain, vkml, vkml.optim.Adam), (torch_plain, torch, torch.optim.Adam)):
        opt = opt_of(net.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            (net(m.tensor(x)) ** 2).sum().backward()
            if m is vkml:
                adam._fused_nodes, saved = spying, adam._fused_nodes
                try:
                    opt.step()
                finally:
                    adam._fused_nodes = saved
            else:
                opt.step()
    assert fused_calls and all(fused_calls)  # the plain model's parameters took the fused path
    for (name, got), want in zip(plain.state_dict().items(), torch_plain.state_dict().values()):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)
    # the channels-last model's own step keeps its formats
    opt = vkml.optim.Adam(channels_last_net.parameters(), lr=0.1)
    channels_last_net(vkml.ones(1, 3, 5, 5)).sum().backward()
    opt.step()
    assert channels_last_net.weight.stride() == (27, 1, 9, 3)
