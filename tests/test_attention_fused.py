"""The fused scaled_dot_product_attention kernels: one dispatch forward, two backward, PyTorch's results within the
stated bound, the same bits everywhere.

The shapes span several key blocks and row blocks of the kernels (vkml/kernels/attention.py: the tiled
forward's 32 rows and 32 keys a block, the untiled one's 8 and 16; the tiled backward's 24 rows and 16
keys a workgroup) and a value width past one lane's 16 columns, so the online softmax's rescaling,
the padding rows and keys, and the second accumulator are all exercised. ``VKML_ATTENTION_TILED=0``
cases keep the untiled kernels (larger heads take them) covered.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn
import vkml.nn.functional as VF
from vkml.kernels import attention as fused

CPU = vkml.device("cpu")
TF = torch.nn.functional
# Measured against PyTorch in float64: float32 within 6e-7 on unit-scale
# data, float16 within one float16 rounding of the result; docs/ops/scaled_dot_product_attention.md.
TOLERANCE = {"float32": 2e-6, "float16": 1e-3}


def _case(name: str, dtype: str = "float32"):
    """(q, k, v, keyword arguments) as numpy arrays for case ``name``."""
    g = np.random.default_rng(11)
    heads = 4 if name == "gqa" else 2
    kv_heads = 2 if name == "gqa" else heads
    L, S = (21, 35) if name != "causal_tall" else (70, 20)
    q = g.standard_normal((1, heads, L, 8)).astype(dtype)
    k = g.standard_normal((1, kv_heads, S, 8)).astype(dtype)
    v = g.standard_normal((1, kv_heads, S, 19)).astype(dtype)
    kwargs = {}
    if name in ("causal", "causal_tall"):
        kwargs["is_causal"] = True
    if name == "gqa":
        kwargs["enable_gqa"] = True
    if name == "bool_mask":
        mask = g.random((heads, L, S)) < 0.6  # one per head
        mask[0, 3] = False  # a row with no key: zeros, as PyTorch's math path
        kwargs["attn_mask"] = mask
    if name == "float_mask":
        mask = np.where(g.random((L, S)) < 0.3, -np.inf, g.standard_normal((L, S))).astype(dtype)
        mask[5] = -np.inf
        kwargs["attn_mask"] = mask
        kwargs["scale"] = 0.7
    return q, k, v, kwargs


CASES = ["plain", "causal", "causal_tall", "gqa", "bool_mask", "float_mask"]


def _vkml(arrays, kwargs, device, requires_grad=False):
    tensors = [vkml.tensor(a, device=device, requires_grad=requires_grad) for a in arrays]
    vk_kwargs = {k: vkml.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    return tensors, VF.scaled_dot_product_attention(*tensors, **vk_kwargs)


def _torch(arrays, kwargs, requires_grad=False):
    tensors = [torch.from_numpy(a.astype(np.float64)).requires_grad_(requires_grad) for a in arrays]
    pt_kwargs = {
        k: torch.from_numpy(v.astype(np.float64) if v.dtype != bool else v) if isinstance(v, np.ndarray) else v
        for k, v in kwargs.items()
    }
    return tensors, TF.scaled_dot_product_attention(*tensors, **pt_kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", CASES)
def test_fused_matches_torch(name, dtype):
    q, k, v, kwargs = _case(name, dtype)
    _, out = _vkml((q, k, v), kwargs, CPU)
    _, ref = _torch((q, k, v), kwargs)
    tol = TOLERANCE[dtype]
    got = out.numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), ref.numpy(), rtol=tol, atol=tol, err_msg=name)
    if name == "bool_mask":
        assert not got[0, 0, 3].any()
    if name == "float_mask":
        assert not got[:, :, 5].any()


# float16 gradients are rounded once from float32: within about one float16 ulp of PyTorch in float64.
GRAD_TOLERANCE = {"float32": 1e-5, "float16": 2e-3}


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("causal_tall", "float32"), ("gqa", "float32"), ("bool_mask", "float32"), ("float_mask", "float32")]
    + [("gqa", "float16"), ("float_mask", "float16")],
)
def test_fused_gradients_match_torch(name, dtype):
    q, k, v, kwargs = _case(name, dtype)
    vk_in, out = _vkml((q, k, v), kwargs, CPU, requires_grad=True)
    pt_in, ref = _torch((q, k, v), kwargs, requires_grad=True)
    upstream = np.random.default_rng(2).standard_normal(ref.shape).astype(dtype)
    out.backward(vkml.tensor(upstream))
    ref.backward(torch.from_numpy(upstream.astype(np.float64)))
    tol = GRAD_TOLERANCE[dtype]
    for what, a, b in zip("qkv", vk_in, pt_in, strict=True):
        assert a.grad.dtype == a.dtype
        got = a.grad.numpy().astype(np.float64)
        np.testing.assert_allclose(got, b.grad.numpy(), rtol=tol, atol=tol, err_msg=f"{name}: d{what}")


def test_untiled_kernels_match_torch(monkeypatch):
    """VKML_ATTENTION_TILED=0 takes the one-score-a-lane kernels (what larger heads take): PyTorch's results
    and gradients within the same bounds, other bits than the tiled kernels'."""
    q, k, v, kwargs = _case("gqa")
    kwargs["is_causal"] = True
    upstream = np.random.default_rng(2).standard_normal((1, 4, 21, 19)).astype(np.float32)
    results = []
    for tiled in ("0", "1"):
        monkeypatch.setenv("VKML_ATTENTION_TILED", tiled)
        seen = []
        vkml.debug.kernel_listeners.append(seen.append)
        try:
            vk_in, out = _vkml((q, k, v), kwargs, CPU, requires_grad=True)
            out.backward(vkml.tensor(upstream))
        finally:
            vkml.debug.kernel_listeners.remove(seen.append)
        assert sum("tiled" in kernel.name for kernel in seen) == (3 if tiled == "1" else 0)
        results.append([out.numpy()] + [t.grad.numpy() for t in vk_in])
    pt_in, ref = _torch((q, k, v), kwargs, requires_grad=True)
    ref.backward(torch.from_numpy(upstream.astype(np.float64)))
    expected = [ref.detach().numpy()] + [t.grad.numpy() for t in pt_in]
    for what, got, want in zip(("out", "dq", "dk", "dv"), results[0], expected, strict=True):
        tol = TOLERANCE["float32"] if what == "out" else GRAD_TOLERANCE["float32"]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
    assert not np.array_equal(results[0][0], results[1][0])  # two summation orders


def test_backward_is_two_fused_kernels():
    """After the forward was realized, backward() runs the dQ and dK/dV kernels: no matmul, no second forward."""
    q, k, v, kwargs = _case("gqa")
    tensors, out = _vkml((q, k, v), kwargs, CPU, requires_grad=True)
    out.realize()
    seen = []
    vkml.debug.kernel_listeners.append(seen.append)
    try:
        out.backward(vkml.ones_like(out))
    finally:
        vkml.debug.kernel_listeners.remove(seen.append)
    names = [kernel.name for kernel in seen]
    assert sum(n.startswith("attention_dq_") for n in names) == 1
    assert sum(n.startswith("attention_dkv_") for n in names) == 1
    assert sum(n.startswith("attention_") for n in names) == 2, names
    assert not any(n.startswith("MM") for n in names), names
    assert all(t.grad is not None for t in tensors)


@pytest.mark.parametrize("device_kind", ["cpu", "gpu"])
def test_forward_is_one_fused_kernel(device_kind, gpu):
    """The forward of realized inputs is one dispatch of the attention kernel, with no buffer for the scores."""
    device = CPU if device_kind == "cpu" else gpu
    q, k, v, kwargs = _case("bool_mask")
    tensors = [vkml.tensor(a, device=device).realize() for a in (q, k, v)]
    mask = vkml.tensor(kwargs["attn_mask"], device=device).realize()
    out = VF.scaled_dot_product_attention(*tensors, attn_mask=mask)
    vkml.debug.reset_counters()
    seen = []
    vkml.debug.kernel_listeners.append(seen.append)
    try:
        out.realize()
    finally:
        vkml.debug.kernel_listeners.remove(seen.append)
    assert vkml.debug.counters()["dispatches"] == 1
    assert vkml.debug.counters()["submissions"] == 1
    (kernel,) = seen
    assert kernel.name.startswith("attention_")
    assert sorted(b.name for b in kernel.buffers) == ["k", "lse", "mask", "out", "q", "v"]


@pytest.mark.parametrize(
    ("name", "dtype", "tiled"),
    [("gqa", "float16", "1"), ("gqa", "float16", "0"), ("causal_tall", "float32", "1")]
    + [("bool_mask", "float32", "1"), ("float_mask", "float32", "1")],
)
def test_fused_vulkan_equals_cpu(name, dtype, tiled, gpu, monkeypatch):
    """Forward and, for two cases, the backward kernels give the same bits on lavapipe as on the CPU.

    The scalar kernel's contract: a device with cooperative matrices runs float16 on them, within the
    page's bound instead (tests/test_attention_coopmat.py), unless VKML_ATTENTION_COOPMAT=0.
    """
    monkeypatch.setenv("VKML_ATTENTION_COOPMAT", "0")
    monkeypatch.setenv("VKML_ATTENTION_TILED", tiled)
    q, k, v, kwargs = _case(name, dtype)
    if name == "gqa":  # causal, with dropout: the kernels' random keep masks agree too
        kwargs.update(is_causal=True, dropout_p=0.25)
    grads = name != "float_mask"
    results = []
    for device in (CPU, gpu):
        vkml.manual_seed(7)
        tensors, out = _vkml((q, k, v), kwargs, device, requires_grad=grads)
        if grads:
            out.sum().backward()
        results.append([out.numpy()] + ([t.grad.numpy() for t in tensors] if grads else []))
    for what, a, b in zip(("out", "dq", "dk", "dv"), results[1], results[0]):
        assert_same_bits(a, b, f"{name} {dtype} {what} on {gpu.name}")


def test_fused_results_are_deterministic():
    q, k, v, kwargs = _case("causal")
    first = _vkml((q, k, v), kwargs, CPU, requires_grad=True)
    second = _vkml((q, k, v), kwargs, CPU, requires_grad=True)
    for _, out in (first, second):
        out.sum().backward()
    assert_same_bits(first[1].numpy(), second[1].numpy(), "forward")
    for a, b in zip(first[0], second[0], strict=True):
        assert_same_bits(a.grad.numpy(), b.grad.numpy(), "gradient")


def test_multihead_attention_without_weights_uses_the_fused_kernel():
    """nn.MultiheadAttention with need_weights=False goes through the fused kernel, as PyTorch's fast path."""
    vkml.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2)
    x = vkml.randn(5, 3, 8)
    seen = []
    vkml.debug.kernel_listeners.append(seen.append)
    try:
        mha(x, x, x, need_weights=False)[0].realize()
    finally:
        vkml.debug.kernel_listeners.remove(seen.append)
    assert sum(kernel.name.startswith("attention_") for kernel in seen) == 1


@pytest.mark.parametrize("tiled", [False, True])
def test_shared_memory_of_the_kernel_matches_its_shape(tiled, monkeypatch):
    """``shared_bytes`` (what the front end checks against the device) is what the kernel declares."""
    monkeypatch.setenv("VKML_ATTENTION_TILED", str(int(tiled)))
    shape = fused.AttentionShape(
        dtype=vkml.float32,
        batch=(2,),
        query_len=3,
        key_len=5,
        head_dim=24,
        value_dim=40,
        query=fused.Operand((72,), (1,)),
        key=fused.Operand((120,), (1,)),
        value=fused.Operand((200,), (1,)),
        tiled=tiled,
    )
    kernel = fused.forward_kernel(shape)
    assert sum(4 * s.size for s in kernel.shared) == fused.shared_bytes(24, 40) == shape.shared_bytes


def test_plan_is_replayed_with_the_new_scale():
    """A graph with the fused kernel is plan-cached like any other; a replay dispatches its own call's scale."""
    q, k, v, _ = _case("plain")
    results = []
    for scale in (0.3, 0.7):
        vkml.debug.reset_counters()
        _, out = _vkml((q, k, v), {"scale": scale}, CPU)
        results.append((out.numpy(), vkml.debug.counters()["plan_replays"]))
        _, ref = _torch((q, k, v), {"scale": scale})
        np.testing.assert_allclose(results[-1][0], ref.numpy(), rtol=2e-6, atol=2e-6)
    assert results[1][1] == 1  # the second realize replayed the first one's plan
    assert not np.array_equal(results[0][0], results[1][0])


@pytest.mark.parametrize("which", ["key", "mask"])
def test_operands_on_two_devices_raise_naming_the_op(which, gpu):
    """The fused kernel reads every operand in one dispatch: mixed devices raise at the call, as PyTorch."""
    q = vkml.ones(1, 3, 4)
    key = q.to(gpu) if which == "key" else q
    mask = (vkml.ones(3, 3, device=gpu) > 0) if which == "mask" else None
    with pytest.raises(vkml.DeviceError, match="'scaled_dot_product_attention' operands are on different devices"):
        VF.scaled_dot_product_attention(q, key, q, attn_mask=mask)
    assert q.tolist() == [[[1.0] * 4] * 3]


def test_gradient_with_create_graph_is_differentiable():
    """create_graph=True records the gradient (through the composite ops), so a gradient penalty matches torch."""
    q, k, v, kwargs = _case("causal")
    vk_in, out = _vkml((q, k, v), kwargs, CPU, requires_grad=True)
    pt_in, ref = _torch((q, k, v), kwargs, requires_grad=True)
    (g,) = vkml.autograd.grad(out.sum(), [vk_in[0]], create_graph=True)
    (g * g).sum().backward()
    (pg,) = torch.autograd.grad(ref.sum(), [pt_in[0]], create_graph=True)
    (pg * pg).sum().backward()
    for what, a, b in zip("qkv", vk_in, pt_in, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"d{what}")


def test_dropout_is_fused_and_drops_what_the_composite_drops():
    """dropout_p > 0 runs in the kernels, drawing keep masks by keep_mask's rule: the composite path's
    results (and gradients) for the same seed, within the bound."""
    from vkml.nn import functional_attention

    q, k, v, _ = _case("gqa")
    results = []
    for fused_path in (True, False):
        vkml.manual_seed(3)
        tensors = [vkml.tensor(a, requires_grad=True) for a in (q, k, v)]
        seen = []
        vkml.debug.kernel_listeners.append(seen.append)
        try:
            if fused_path:
                out = VF.scaled_dot_product_attention(*tensors, dropout_p=0.3, is_causal=True, enable_gqa=True)
            else:
                out = functional_attention._composite(*tensors, None, 0.3, True, 8**-0.5, True)
            out.sum().backward()
        finally:
            vkml.debug.kernel_listeners.remove(seen.append)
        results.append([out.numpy()] + [t.grad.numpy() for t in tensors])
        assert any(kernel.name.startswith("attention_") for kernel in seen) == fused_path
    for what, a, b in zip(("out", "dq", "dk", "dv"), *results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=what)
    undropped = _vkml((q, k, v), {"is_causal": True, "enable_gqa": True}, CPU)[1].numpy()
    assert np.abs(results[0][0] - undropped).max() > 0.1  # weights were dropped


@pytest.mark.stress
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_kernels_at_a_model_head_size(causal, gpu, monkeypatch):
    """E = Ev = 64 (the largest head the tiled kernels take), several row and key blocks of each kernel:
    PyTorch's results and gradients within the bounds, the same bits on lavapipe as on the CPU."""
    monkeypatch.setenv("VKML_ATTENTION_COOPMAT", "0")
    g = np.random.default_rng(5)
    q, k, v = (g.standard_normal((1, 2, n, 64)).astype(np.float32) for n in (100, 130, 130))
    kwargs = {"is_causal": causal}
    upstream = g.standard_normal((1, 2, 100, 64)).astype(np.float32)
    results = []
    for device in (CPU, gpu):
        seen = []
        vkml.debug.kernel_listeners.append(seen.append)
        try:
            vk_in, out = _vkml((q, k, v), kwargs, device, requires_grad=True)
            out.backward(vkml.tensor(upstream, device=device))
        finally:
            vkml.debug.kernel_listeners.remove(seen.append)
        assert sum("tiled" in kernel.name for kernel in seen) == 3, [kernel.name for kernel in seen]
        results.append([out.numpy()] + [t.grad.numpy() for t in vk_in])
    pt_in, ref = _torch((q, k, v), kwargs, requires_grad=True)
    ref.backward(torch.from_numpy(upstream.astype(np.float64)))
    expected = [ref.detach().numpy()] + [t.grad.numpy() for t in pt_in]
    for what, on_gpu, on_cpu, want in zip(("out", "dq", "dk", "dv"), results[1], results[0], expected, strict=True):
        tol = TOLERANCE["float32"] if what == "out" else GRAD_TOLERANCE["float32"]
        np.testing.assert_allclose(on_cpu, want, rtol=tol, atol=tol, err_msg=what)
        assert_same_bits(on_gpu, on_cpu, f"{what} on {gpu.name}")
