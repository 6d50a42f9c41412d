"""``F.multi_head_attention_forward`` (vkml/nn/attention.py) against PyTorch's: outputs, attention weights and
gradients for the in-projection and separate-projection forms (OpenAI CLIP's attention pooling), masks,
bias_k/bias_v, add_zero_attn, unbatched inputs; and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

E, H, L, S, N = 8, 2, 3, 5, 2


def _arrays(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)

    def r(*shape):
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    return {
        "q": r(L, N, E),
        "k": r(S, N, E),
        "v": r(S, N, E),
        "in_w": r(3 * E, E),
        "in_b": r(3 * E),
        "qw": r(E, E),
        "kw": r(E, E),
        "vw": r(E, E),
        "out_w": r(E, E),
        "out_b": r(E),
        "bias_k": r(1, 1, E),
        "bias_v": r(1, 1, E),
        "float_mask": r(L, S),
    }


CASES = {
    "in_proj": {},
    "separate_clip_style": {"separate": True, "need_weights": False},
    "weights_per_head": {"average_attn_weights": False},
    "bias_kv_zero_attn": {"bias_kv": True, "add_zero_attn": True},
    "key_padding_bool": {"key_padding": True},
    "attn_mask_float": {"float_mask": True, "need_weights": False},
    "causal_bool_mask": {"causal": True},
    "unbatched": {"unbatched": True},
}


def _run(m, arrays: dict, case: dict):
    leaves = {k: m.tensor(v, requires_grad=True) for k, v in arrays.items() if k != "float_mask"}
    q, k, v = leaves["q"], leaves["k"], leaves["v"]
    if case.get("unbatched"):
        q, k, v = q[:, 0], k[:, 0], v[:, 0]
    kwargs = {}
    if case.get("key_padding"):
        kwargs["key_padding_mask"] = m.tensor([[False] * (S - 2) + [True] * 2, [False] * S])
    if case.get("float_mask"):
        kwargs["attn_mask"] = m.tensor(arrays["float_mask"])
    if case.get("causal"):
        kwargs["attn_mask"] = m.triu(m.ones(L, S, dtype=m.bool), diagonal=1)
        kwargs["is_causal"] = True
    if case.get("separate"):
        kwargs.update(use_separate_proj_weight=True, q_proj_weight=leaves["qw"])
        kwargs.update(k_proj_weight=leaves["kw"], v_proj_weight=leaves["vw"])
    bias_kv = case.get("bias_kv")
    out, weights = m.nn.functional.multi_head_attention_forward(
        q,
        k,
        v,
        E,
        H,
        None if case.get("separate") else leaves["in_w"],
        leaves["in_b"],
        leaves["bias_k"] if bias_kv else None,
        leaves["bias_v"] if bias_kv else None,
        case.get("add_zero_attn", False),
        0.0,
        leaves["out_w"],
        leaves["out_b"],
        need_weights=case.get("need_weights", True),
        average_attn_weights=case.get("average_attn_weights", True),
        **kwargs,
    )
    loss = (out * out).sum() + (0 if weights is None else (weights * weights).sum())
    loss.backward()
    grads = {name: t.grad for name, t in leaves.items() if t.grad is not None}
    return out, weights, grads


@pytest.mark.parametrize("name", list(CASES))
def test_multi_head_attention_forward_matches_pytorch(name):
    arrays = _arrays()
    got_out, got_w, got_g = _run(vkml, arrays, CASES[name])
    want_out, want_w, want_g = _run(torch, arrays, CASES[name])
    np.testing.assert_allclose(got_out.detach().numpy(), want_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert (got_w is None) == (want_w is None)
    if want_w is not None:
        assert tuple(got_w.shape) == tuple(want_w.shape)
        np.testing.assert_allclose(got_w.detach().numpy(), want_w.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(got_g) == sorted(want_g)
    for key in want_g:
        np.testing.assert_allclose(got_g[key].numpy(), want_g[key].numpy(), rtol=1e-4, atol=1e-5, err_msg=key)


def test_multi_head_attention_forward_raises_as_pytorch():
    a = _arrays()
    for m in (torch, vkml):
        q, w, b, ow = (m.tensor(a[k]) for k in ("q", "in_w", "in_b", "out_w"))
        f = m.nn.functional.multi_head_attention_forward
        with pytest.raises(AssertionError, match="was expecting embedding dimension of 6, but got 8"):
            f(q, q, q, 6, H, w, b, None, None, False, 0.0, ow, None)
        with pytest.raises(AssertionError, match="use_separate_proj_weight is True but q_proj_weight is None"):
            f(q, q, q, E, H, None, b, None, None, False, 0.0, ow, None, use_separate_proj_weight=True)
