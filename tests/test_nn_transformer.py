"""Transformer layers against torch: a torch state_dict gives torch's outputs and gradients; Vulkan equals CPU bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn

CPU = vkml.device("cpu")
D, HEADS, FF = 8, 2, 16


def _randn(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _causal(n: int) -> np.ndarray:
    return np.triu(np.full((n, n), -np.inf, np.float32), 1)


def _padding() -> np.ndarray:
    return np.array([[False, False, False, True], [False] * 4])


# name -> (torch factory, vkml factory, input builder: rng -> (positional arrays, keyword arrays/values))
CASES = {
    "encoder_layer_post_norm": (
        lambda m: m.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0),
        lambda g: ([_randn(g, 4, 2, D)], {"src_mask": np.isinf(_causal(4)), "src_key_padding_mask": _padding()}),
    ),
    "encoder_layer_norm_first_gelu_batch_first": (
        lambda m: m.TransformerEncoderLayer(D, HEADS, FF, 0.0, "gelu", batch_first=True, norm_first=True),
        lambda g: ([_randn(g, 2, 4, D)], {}),
    ),
    "encoder_stack_norm": (
        lambda m: m.TransformerEncoder(
            m.TransformerEncoderLayer(D, HEADS, FF, 0.0), 2, norm=m.LayerNorm(D), enable_nested_tensor=False
        ),
        lambda g: ([_randn(g, 4, 2, D)], {"mask": _causal(4), "is_causal": True}),
    ),
    "decoder_layer": (
        lambda m: m.TransformerDecoderLayer(D, HEADS, FF, 0.0, bias=False),
        lambda g: (
            [_randn(g, 3, 2, D), _randn(g, 4, 2, D)],
            {"tgt_mask": _causal(3), "memory_key_padding_mask": _padding()},
        ),
    ),
    "decoder_stack_norm_first": (
        lambda m: m.TransformerDecoder(m.TransformerDecoderLayer(D, HEADS, FF, 0.0, norm_first=True), 2),
        lambda g: ([_randn(g, 3, 2, D), _randn(g, 4, 2, D)], {"tgt_mask": _causal(3), "tgt_is_causal": True}),
    ),
    "transformer": (
        lambda m: m.Transformer(D, HEADS, 1, 1, FF, 0.0, batch_first=True),
        lambda g: (
            [_randn(g, 2, 4, D), _randn(g, 2, 3, D)],
            {"tgt_mask": _causal(3), "src_key_padding_mask": _padding()},
        ),
    ),
}


def _convert(value, to_vk: bool, device):
    if isinstance(value, np.ndarray):
        return vkml.tensor(value, device=device) if to_vk else torch.from_numpy(value)
    return value


def _pair(name: str, device):
    make, make_inputs = CASES[name]
    torch.manual_seed(0)
    pt = make(torch.nn)
    vk = make(nn)
    vk.load_state_dict(pt.state_dict())
    vk.to(device)
    g = np.random.default_rng(2)
    args, kwargs = make_inputs(g)
    pt_out = pt(*(_convert(a, False, None) for a in args), **{k: _convert(v, False, None) for k, v in kwargs.items()})
    vk_out = vk(*(_convert(a, True, device) for a in args), **{k: _convert(v, True, device) for k, v in kwargs.items()})
    upstream = _randn(g, *pt_out.shape)
    pt_out.backward(torch.from_numpy(upstream))
    vk_out.backward(vkml.tensor(upstream, device=device))
    vk_res = {"out": vk_out.numpy(), **{k: p.grad.numpy() for k, p in vk.named_parameters()}}
    pt_res = {"out": pt_out.detach().numpy(), **{k: p.grad.numpy() for k, p in pt.named_parameters()}}
    return vk_res, pt_res


@pytest.mark.parametrize("name", sorted(CASES))
def test_transformer_modules_match_torch(name):
    vk, pt = _pair(name, CPU)
    assert vk.keys() == pt.keys()
    for what in pt:
        np.testing.assert_allclose(vk[what], pt[what], rtol=1e-4, atol=1e-5, err_msg=f"{name}: {what}")


@pytest.mark.parametrize("name", ["encoder_layer_post_norm", "decoder_layer"])
def test_transformer_vulkan_equals_cpu(name, gpu):
    cpu, _ = _pair(name, CPU)
    on_gpu, _ = _pair(name, gpu)
    for what in cpu:
        assert_same_bits(on_gpu[what], cpu[what], f"{name}: {what} on {gpu.name}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_keys_and_shapes_are_torchs(name):
    make, _ = CASES[name]
    pt, vk = make(torch.nn), make(nn)
    assert [(k, tuple(v.shape)) for k, v in vk.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in pt.state_dict().items()
    ]


def test_stack_layers_start_equal_and_are_independent():
    """torch deep-copies the layer: every copy starts with its values, and each is a parameter of its own."""
    layer = nn.TransformerEncoderLayer(D, HEADS, FF)
    stack = nn.TransformerEncoder(layer, 2)
    first, second = stack.layers[0].linear1.weight, stack.layers[1].linear1.weight
    assert first is not second and first is not layer.linear1.weight
    assert_same_bits(first.numpy(), layer.linear1.weight.numpy(), "copy 0")
    assert_same_bits(second.numpy(), layer.linear1.weight.numpy(), "copy 1")
    assert len(list(stack.parameters())) == 2 * len(list(layer.parameters()))


def test_generate_square_subsequent_mask_is_torchs():
    vk = nn.Transformer.generate_square_subsequent_mask(4).numpy()
    pt = torch.nn.Transformer.generate_square_subsequent_mask(4).numpy()
    assert_same_bits(vk, pt, "mask")


def test_transformer_xavier_init_and_dropout_in_training():
    vkml.manual_seed(0)
    model = nn.Transformer(D, HEADS, 1, 1, FF, dropout=0.5)
    w = model.encoder.layers[0].linear1.weight.numpy()
    assert np.abs(w).max() <= np.sqrt(6.0 / (D + FF))
    src, tgt = vkml.ones(4, 1, D), vkml.ones(3, 1, D)
    a, b = model(src, tgt).numpy(), model(src, tgt).numpy()
    assert not np.array_equal(a, b)  # new dropout masks each call
    model.eval()
    assert_same_bits(model(src, tgt).numpy(), model(src, tgt).numpy(), "eval is deterministic")


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: nn.TransformerEncoderLayer(D, HEADS, activation="tanh"), RuntimeError, "relu/gelu"),
        (lambda: nn.Transformer(D, HEADS, 1, 1, FF)(vkml.ones(4, 2, D), vkml.ones(3, 1, D)), RuntimeError, "batch"),
        (lambda: nn.Transformer(D, HEADS, 1, 1, FF)(vkml.ones(4, 2, 6), vkml.ones(3, 2, 6)), RuntimeError, "d_model"),
    ],
)
def test_transformer_errors(make, error, words):
    with pytest.raises(error, match=words):
        make()
