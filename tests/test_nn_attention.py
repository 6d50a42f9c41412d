"""scaled_dot_product_attention and MultiheadAttention against torch: outputs and gradients; Vulkan equals CPU bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn
import vkml.nn.functional as VF

CPU = vkml.device("cpu")
TF = torch.nn.functional
RTOL, ATOL = 1e-5, 1e-6


def _randn(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _bool_mask(rng, *shape) -> np.ndarray:
    mask = rng.random(shape) < 0.7
    mask[..., 0] = True  # every row attends somewhere: the fully masked row has its own case
    return mask


# name -> (q, k, v shapes, keyword builder); the builder gets the rng and returns numpy keyword arguments.
SDPA_CASES = {
    "plain": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6), lambda g: {}),
    "bool_mask": ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), lambda g: {"attn_mask": _bool_mask(g, 3, 5)}),
    "float_mask": ((2, 1, 3, 4), (2, 1, 5, 4), (2, 1, 5, 4), lambda g: {"attn_mask": _randn(g, 2, 1, 3, 5)}),
    "causal_rect": ((1, 2, 4, 4), (1, 2, 6, 4), (1, 2, 6, 3), lambda g: {"is_causal": True}),
    "scale": ((2, 3, 4), (2, 5, 4), (2, 5, 4), lambda g: {"scale": 0.3}),
    "gqa": ((1, 4, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), lambda g: {"enable_gqa": True}),
    "broadcast_batch": ((1, 3, 4), (3, 5, 4), (3, 5, 4), lambda g: {"attn_mask": _randn(g, 5)}),
    "two_dims": ((3, 4), (5, 4), (5, 2), lambda g: {}),
    "masked_row": (
        (1, 1, 3, 4),
        (1, 1, 4, 4),
        (1, 1, 4, 4),
        lambda g: {"attn_mask": np.array([[True] * 4, [False] * 4, [True, False, True, False]])},
    ),
}


def _sdpa_pair(name: str, device):
    q_shape, k_shape, v_shape, make_kwargs = SDPA_CASES[name]
    g = np.random.default_rng(3)
    arrays = [_randn(g, *q_shape), _randn(g, *k_shape), _randn(g, *v_shape)]
    kwargs = make_kwargs(g)
    pt_in = [torch.from_numpy(a).requires_grad_() for a in arrays]
    pt_kwargs = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    pt_out = TF.scaled_dot_product_attention(*pt_in, **pt_kwargs)
    upstream = _randn(g, *pt_out.shape)
    pt_out.backward(torch.from_numpy(upstream))
    vk_in = [vkml.tensor(a, device=device, requires_grad=True) for a in arrays]
    vk_kwargs = {k: vkml.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    out = VF.scaled_dot_product_attention(*vk_in, **vk_kwargs)
    out.backward(vkml.tensor(upstream, device=device))
    vk = [out.numpy()] + [t.grad.numpy() for t in vk_in]
    pt = [pt_out.detach().numpy()] + [t.grad.numpy() for t in pt_in]
    return vk, pt


@pytest.mark.parametrize("name", sorted(SDPA_CASES))
def test_sdpa_matches_torch(name):
    vk, pt = _sdpa_pair(name, CPU)
    for what, a, b in zip(("out", "grad q", "grad k", "grad v"), vk, pt, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{name}: {what}")


@pytest.mark.parametrize("name", ["bool_mask", "float_mask", "causal_rect", "gqa", "masked_row"])
def test_sdpa_vulkan_equals_cpu(name, gpu):
    cpu, _ = _sdpa_pair(name, CPU)
    on_gpu, _ = _sdpa_pair(name, gpu)
    for what, a, b in zip(("out", "grad q", "grad k", "grad v"), on_gpu, cpu, strict=True):
        assert_same_bits(a, b, f"{name}: {what} on {gpu.name}")


def test_sdpa_masked_row_is_zero_not_nan():
    q = vkml.ones(1, 2, 4)
    mask = vkml.tensor([[True, True], [False, False]])
    out = VF.scaled_dot_product_attention(q, vkml.ones(1, 2, 4), vkml.ones(1, 2, 4), attn_mask=mask)
    assert out.tolist()[0][1] == [0.0] * 4


def test_sdpa_float16_with_float32_mask_stays_float16():
    """A float32 mask on float16 inputs gives a float16 result (the mask is cast), as PyTorch."""
    g = np.random.default_rng(5)
    q, k, v = (_randn(g, 1, 3, 4).astype(np.float16) for _ in range(3))
    mask = _randn(g, 3, 3)
    pt = TF.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(mask))
    out = VF.scaled_dot_product_attention(*(vkml.tensor(a) for a in (q, k, v)), attn_mask=vkml.tensor(mask))
    assert out.dtype == vkml.float16 and pt.dtype == torch.float16
    np.testing.assert_allclose(out.numpy().astype(np.float32), pt.numpy().astype(np.float32), rtol=5e-3, atol=2e-3)


def test_sdpa_dropout_uses_vkml_generator_and_matches_across_devices(gpu):
    """dropout_p drops weights (kept ones scaled by 1/(1-p)) with the seeded generator: same bits on both devices."""
    g = np.random.default_rng(0)
    q, k, v = _randn(g, 2, 3, 4), _randn(g, 2, 5, 4), np.eye(5, dtype=np.float32)[None].repeat(2, 0)
    outs = []
    for device in (CPU, gpu):
        vkml.manual_seed(7)
        args = [vkml.tensor(a, device=device) for a in (q, k, v)]
        outs.append(VF.scaled_dot_product_attention(*args, dropout_p=0.5).numpy())
    assert_same_bits(outs[1], outs[0], "dropout on Vulkan")
    # v is the identity, so the output is the dropped weight matrix: each entry 0 or 2 × softmax.
    weights = VF.softmax(vkml.tensor(q) @ vkml.tensor(k).transpose(-2, -1) * 0.5, -1).numpy()
    dropped = outs[0] == 0
    assert dropped.any() and (~dropped).any()
    np.testing.assert_allclose(outs[0][~dropped], 2 * weights[~dropped], rtol=1e-6)
    vkml.manual_seed(7)
    again = VF.scaled_dot_product_attention(*(vkml.tensor(a) for a in (q, k, v)), dropout_p=0.5).numpy()
    assert_same_bits(again, outs[0], "dropout with the same seed")


@pytest.mark.parametrize(
    "kwargs, shapes, error, words",
    [
        ({"is_causal": True, "attn_mask": np.ones((3, 5), bool)}, None, RuntimeError, "is_causal"),
        ({}, ((1, 3, 4), (1, 5, 3), (1, 5, 4)), RuntimeError, "last dim"),
        ({}, ((1, 3, 4), (1, 5, 4), (1, 6, 4)), RuntimeError, "sequence length"),
        ({"enable_gqa": True}, ((3, 3, 4), (2, 5, 4), (2, 5, 4)), RuntimeError, "must divide"),
        ({"attn_mask": np.zeros((3, 5), np.int32)}, None, RuntimeError, "attn_mask dtype"),
        ({}, ((4,), (4,), (4,)), RuntimeError, "at least 2 dimensional"),
        ({"dropout_p": 1.5}, None, ValueError, "dropout_p"),
        ({"attn_mask": np.zeros((2, 3, 5), np.float32)}, None, RuntimeError, "does not broadcast"),
        ({}, ((2, 3, 4), (3, 5, 4), (3, 5, 4)), RuntimeError, "batch dims"),
    ],
)
def test_sdpa_errors_are_eager_and_name_the_op(kwargs, shapes, error, words):
    shapes = shapes or ((1, 3, 4), (1, 5, 4), (1, 5, 4))
    args = [vkml.ones(*s) for s in shapes]
    kwargs = {k: vkml.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with pytest.raises(error, match=words) as info:
        VF.scaled_dot_product_attention(*args, **kwargs)
    assert "scaled_dot_product_attention" in str(info.value)
    pt_args = [torch.ones(*s) for s in shapes]
    pt_kwargs = {k: torch.from_numpy(v.numpy()) if isinstance(v, vkml.Tensor) else v for k, v in kwargs.items()}
    with pytest.raises((RuntimeError, ValueError)):
        TF.scaled_dot_product_attention(*pt_args, **pt_kwargs)


# ---------------------------------------------------------------------- MultiheadAttention

# name -> (constructor kwargs, forward kwargs builder, batch_first); E=8, 2 heads, L=3, S=4, N=2.
MHA_CASES = {
    "self_weights": ({}, lambda g: {}, False),
    "batch_first_no_weights": ({"batch_first": True}, lambda g: {"need_weights": False}, True),
    "per_head_weights": ({}, lambda g: {"average_attn_weights": False}, False),
    "masks_bool": (
        {},
        lambda g: {
            "attn_mask": ~_bool_mask(g, 3, 4),
            "key_padding_mask": np.array([[False] * 3 + [True], [False] * 4]),
        },
        False,
    ),
    "masks_no_weights": (
        {"batch_first": True},
        lambda g: {
            "attn_mask": _randn(g, 4, 3, 4),
            "key_padding_mask": np.array([[0, 0, 0, -np.inf], [0] * 4], np.float32),
            "need_weights": False,
        },
        True,
    ),
    "padding_only_no_weights": (
        {},
        lambda g: {"key_padding_mask": np.array([[False] * 3 + [True], [False] * 4]), "need_weights": False},
        False,
    ),
    "kdim_vdim_bias_kv": ({"kdim": 5, "vdim": 6, "add_bias_kv": True, "add_zero_attn": True}, lambda g: {}, False),
    "no_bias": ({"bias": False}, lambda g: {}, False),
    "causal_hint": (
        {},
        lambda g: {"attn_mask": np.triu(np.ones((3, 4), bool), 1), "is_causal": True, "need_weights": False},
        False,
    ),
}


def _mha_pair(name: str, device, unbatched: bool = False):
    ctor, make_kwargs, batch_first = MHA_CASES[name]
    torch.manual_seed(0)
    pt = torch.nn.MultiheadAttention(8, 2, **ctor)
    vk = nn.MultiheadAttention(8, 2, **ctor)
    vk.load_state_dict(pt.state_dict())
    vk.to(device)
    g = np.random.default_rng(1)
    kdim, vdim = ctor.get("kdim", 8), ctor.get("vdim", 8)
    shape = (lambda seq, e: (seq, e)) if unbatched else (lambda seq, e: (2, seq, e) if batch_first else (seq, 2, e))
    arrays = [_randn(g, *shape(3, 8)), _randn(g, *shape(4, kdim)), _randn(g, *shape(4, vdim))]
    kwargs = make_kwargs(g)
    pt_out, pt_w = pt(*(torch.from_numpy(a) for a in arrays), **_torch_kwargs(kwargs))
    vk_out, vk_w = vk(*(vkml.tensor(a, device=device) for a in arrays), **_vk_kwargs(kwargs, device))
    upstream = _randn(g, *pt_out.shape)
    pt_out.backward(torch.from_numpy(upstream))
    vk_out.backward(vkml.tensor(upstream, device=device))
    assert (vk_w is None) == (pt_w is None)
    vk_res = {"out": vk_out.numpy(), **{k: p.grad.numpy() for k, p in vk.named_parameters()}}
    pt_res = {"out": pt_out.detach().numpy(), **{k: p.grad.numpy() for k, p in pt.named_parameters()}}
    if vk_w is not None:
        vk_res["weights"], pt_res["weights"] = vk_w.numpy(), pt_w.detach().numpy()
    return vk_res, pt_res


def _torch_kwargs(kwargs):
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _vk_kwargs(kwargs, device):
    return {k: vkml.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


@pytest.mark.parametrize("name", sorted(MHA_CASES))
def test_mha_matches_torch(name):
    vk, pt = _mha_pair(name, CPU)
    assert vk.keys() == pt.keys()
    for what in pt:
        np.testing.assert_allclose(vk[what], pt[what], rtol=RTOL, atol=1e-5, err_msg=f"{name}: {what}")


def test_mha_unbatched_matches_torch():
    vk, pt = _mha_pair("self_weights", CPU, unbatched=True)
    for what in pt:
        np.testing.assert_allclose(vk[what], pt[what], rtol=RTOL, atol=1e-5, err_msg=what)


@pytest.mark.parametrize("name", ["masks_bool", "masks_no_weights", "kdim_vdim_bias_kv"])
def test_mha_vulkan_equals_cpu(name, gpu):
    cpu, _ = _mha_pair(name, CPU)
    on_gpu, _ = _mha_pair(name, gpu)
    for what in cpu:
        assert_same_bits(on_gpu[what], cpu[what], f"{name}: {what} on {gpu.name}")


@pytest.mark.parametrize("ctor", [{}, {"kdim": 5, "vdim": 6, "add_bias_kv": True, "bias": False}])
def test_mha_parameters_named_and_initialised_as_torch(ctor):
    pt = torch.nn.MultiheadAttention(8, 2, **ctor)
    vkml.manual_seed(0)
    vk = nn.MultiheadAttention(8, 2, **ctor)
    assert list(vk.state_dict()) == list(pt.state_dict())
    for k, v in pt.state_dict().items():
        assert vk.state_dict()[k].shape == tuple(v.shape), k
    assert repr(vk) == repr(pt)
    if "bias" not in ctor:
        assert not vk.in_proj_bias.numpy().any() and not vk.out_proj.bias.numpy().any()
    weight = vk.in_proj_weight if vk.in_proj_weight is not None else vk.k_proj_weight
    bound = np.sqrt(6.0 / sum(weight.shape))  # xavier_uniform_
    values = weight.numpy()
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.5 * bound


def test_mha_dropout_only_in_training():
    mha = nn.MultiheadAttention(4, 2, dropout=0.5)
    x = vkml.ones(3, 1, 4)
    vkml.manual_seed(3)
    train_w = mha(x, x, x)[1].numpy()
    mha.eval()
    eval_w = mha(x, x, x)[1].numpy()
    np.testing.assert_allclose(eval_w, np.full((1, 3, 3), 1 / 3), rtol=1e-6)
    assert not np.allclose(train_w, eval_w)


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: nn.MultiheadAttention(6, 4), AssertionError, "divisible"),
        (
            lambda: nn.MultiheadAttention(4, 2)(vkml.ones(3, 1, 5), vkml.ones(3, 1, 5), vkml.ones(3, 1, 5)),
            AssertionError,
            "embedding dimension",
        ),
        (
            lambda: nn.MultiheadAttention(4, 2)(
                vkml.ones(3, 1, 4), vkml.ones(3, 1, 4), vkml.ones(3, 1, 4), is_causal=True
            ),
            RuntimeError,
            "is_causal",
        ),
        (
            lambda: nn.MultiheadAttention(4, 2)(
                vkml.ones(3, 1, 4), vkml.ones(3, 1, 4), vkml.ones(3, 1, 4), attn_mask=vkml.ones(2, 3)
            ),
            RuntimeError,
            "attn_mask",
        ),
        (
            lambda: nn.MultiheadAttention(4, 2)(
                vkml.ones(3, 1, 4), vkml.ones(3, 1, 4), vkml.ones(3, 1, 4), attn_mask=vkml.ones(3, 3, dtype=vkml.int32)
            ),
            AssertionError,
            "bool and floating",
        ),
    ],
)
def test_mha_errors(make, error, words):
    with pytest.raises(error, match=words):
        make()


def test_sdpa_float_mask_gradient_matches_torch():
    """A float mask is an input like q, k and v: its gradient is the scores' (torch's too)."""
    g = np.random.default_rng(6)
    q, k, v, mask = _randn(g, 2, 3, 4), _randn(g, 2, 5, 4), _randn(g, 2, 5, 4), _randn(g, 3, 5)
    pt_mask = torch.from_numpy(mask).requires_grad_()
    pt = TF.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), attn_mask=pt_mask)
    pt.sum().backward()
    vk_mask = vkml.tensor(mask, requires_grad=True)
    out = VF.scaled_dot_product_attention(*(vkml.tensor(a) for a in (q, k, v)), attn_mask=vk_mask)
    out.sum().backward()
    np.testing.assert_allclose(vk_mask.grad.numpy(), pt_mask.grad.numpy(), rtol=RTOL, atol=ATOL)
