"""The cooperative-matrix attention forward (vkml/kernels/attention_coopmat.py): selection, bound, SPIR-V, device.

The CPU interpreter runs the kernel when the selection is forced for it (its ``cm_mul_add`` adds
exact products in ascending order): the result must lie within the bound that
docs/ops/scaled_dot_product_attention.md states for devices with cooperative matrices, against
attention computed in float64. spirv-val checks the SPIR-V for H200-like features; lavapipe has no
cooperative matrices and keeps the scalar kernel and the CPU's bits.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn.functional as VF
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.ir import types as T
from vkml.ir.core import Instr, walk
from vkml.kernels import attention_coopmat as coopmat
from vkml.kernels.attention import AttentionShape, Operand

H200 = DeviceFeatures.h200_like()


def _shape(dtype=T.float16, L=64, S=64, E=64, Ev=64, **more) -> AttentionShape:
    operands = (Operand((2 * L * E, L * E), (1, 1)), Operand((2 * S * E, S * E), (1, 1)))
    value = Operand((2 * S * Ev, S * Ev), (1, 1))
    return AttentionShape(dtype, (1, 2), L, S, E, Ev, operands[0], operands[1], value, **more)


@pytest.fixture
def coopmat_on_cpu(monkeypatch):
    """The CPU interpreter runs float16 attention forwards on the cooperative-matrix kernel; yields the kernels run."""
    monkeypatch.setattr(coopmat, "applies", lambda features, shape: shape.dtype is T.float16)
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    yield names
    debug.kernel_listeners.pop()


def _exact(q, k, v, kwargs):
    """Attention in float64 and the page's bound for each output element."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    if kwargs.get("enable_gqa"):
        k, v = (np.repeat(x, q.shape[-3] // x.shape[-3], axis=-3) for x in (k, v))
    scale = kwargs.get("scale", 1 / np.sqrt(q.shape[-1]))
    s = scale * (q @ np.swapaxes(k, -1, -2))
    L, S = s.shape[-2:]
    allowed = np.ones(s.shape, bool)
    mask = kwargs.get("attn_mask")
    if kwargs.get("is_causal"):
        allowed &= np.tril(np.ones((L, S), bool))
    if mask is not None and mask.dtype == bool:
        allowed &= mask
    elif mask is not None:
        s = s + mask.astype(np.float64)
    s = np.where(allowed, s, -np.inf)
    top = s.max(-1, keepdims=True)
    e = np.where(np.isfinite(top), np.exp(s - np.where(np.isfinite(top), top, 0)), 0.0)
    total = e.sum(-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    out = w @ v
    c_w, c_s, c_v = coopmat.bound(q.shape[-1])
    magnitude = abs(scale) * (np.abs(q) @ np.swapaxes(np.abs(k), -1, -2)).max(-1, keepdims=True)
    spread = np.abs(out.astype(np.float16))
    ulp = (np.nextafter(spread, np.float16(np.inf)) - spread).astype(np.float64)
    return out, (c_w + c_s * magnitude) * (w @ np.abs(v)) + c_v * (allowed @ np.abs(v)) + ulp / 2


def _arrays(name: str, seed: int):
    g = np.random.default_rng(seed)
    heads, kv_heads, L, S, E, Ev = 2, 2, 64, 64, 64, 64
    kwargs = {}
    if name == "causal":
        kwargs["is_causal"] = True
    if name == "tails":  # rows, keys and head dims that are not whole blocks; a bool mask with an empty row
        L, S, E, Ev = 37, 83, 30, 24  # q and k staged element by element (30 is not whole groups of 4), v by groups
        mask = g.random((heads, L, S)) < 0.6
        mask[1, 5] = False
        kwargs["attn_mask"] = mask
    if name == "gqa_float_mask":
        heads, S = 4, 100
        mask = np.where(g.random((L, S)) < 0.3, -np.inf, g.standard_normal((L, S))).astype(np.float16)
        kwargs.update(attn_mask=mask, enable_gqa=True, scale=0.3)
    batch = 2 if name == "gqa_float_mask" else 1  # k and v broadcast along the first batch dim
    q = (g.standard_normal((batch, heads, L, E)) * 1.5).astype(np.float16)
    k = (g.standard_normal((1, kv_heads, S, E)) * 1.5).astype(np.float16)
    v = g.standard_normal((1, kv_heads, S, Ev)).astype(np.float16)
    return q, k, v, kwargs


def _run(arrays, kwargs, device=None, requires_grad=False):
    tensors = [vkml.tensor(a, device=device, requires_grad=requires_grad) for a in arrays]
    named = {k: vkml.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    return tensors, VF.scaled_dot_product_attention(*tensors, **named)


def _torch_mask(mask: np.ndarray):
    return torch.tensor(mask) if mask.dtype == bool else torch.tensor(mask, dtype=torch.float64)


# ---------------------------------------------------------------- selection


def test_selection_follows_the_device_features_and_the_switch(monkeypatch):
    shape = _shape()
    assert coopmat.applies(H200, shape)
    assert not coopmat.applies(DeviceFeatures.lavapipe_like(), shape)
    assert not coopmat.applies(None, shape)  # the CPU interpreter
    assert not coopmat.applies(H200, _shape(T.float32)) and not coopmat.applies(H200, _shape(T.bfloat16))
    for change in (
        {"cooperative_matrix": False},
        {"subgroup_size": 64},
        {"subgroup_ops": 0x1},  # no shuffles
        {"vulkan_memory_model": False},
        {"max_compute_shared_memory_size": 2048},
    ):
        assert not coopmat.applies(DeviceFeatures(**{**H200.__dict__, **change}), shape), change
    assert coopmat.config_of(H200, shape) == coopmat.Config(64, 32)  # up to SHORT_KEYS keys: 32-key blocks first
    assert coopmat.config_of(H200, _shape(S=coopmat.SHORT_KEYS + 1)) == coopmat.Config(64, 64)
    assert coopmat.config_of(H200, _shape(E=128, Ev=128)) == coopmat.Config(32, 32)  # 64×64 blocks do not fit
    for config in coopmat.CONFIGS:
        assert config.rows % 16 == 0 and config.keys % 16 == 0
    monkeypatch.setenv("VKML_ATTENTION_COOPMAT", "0")
    assert not coopmat.applies(H200, shape)


# ---------------------------------------------------------------- the interpreted kernel within the bound

CASES = ["plain", "causal", "tails", "gqa_float_mask"]


@pytest.mark.parametrize("name", CASES)
def test_the_interpreted_kernel_is_within_the_bound(name, coopmat_on_cpu):
    q, k, v, kwargs = _arrays(name, seed=CASES.index(name))
    _, out = _run((q, k, v), kwargs)
    got = out.numpy()
    assert coopmat_on_cpu and all(n.startswith("attention_cm_") for n in coopmat_on_cpu), coopmat_on_cpu
    exact, tol = _exact(q, k, v, kwargs)
    error = np.abs(got.astype(np.float64) - exact)
    assert got.dtype == np.float16 and np.all(error <= tol), (error / tol).max()
    if name == "tails":
        assert np.all(got[0, 1, 5] == 0)  # a row with no key: zeros, as the scalar kernel and PyTorch's math path
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a, dtype=torch.float64) for a in (q, k, v)),
        **{k_: _torch_mask(a_) if isinstance(a_, np.ndarray) else a_ for k_, a_ in kwargs.items()},
    ).numpy()
    np.testing.assert_allclose(got.astype(np.float64), np.nan_to_num(want), rtol=2e-3, atol=2e-3)


def test_nan_rows_as_pytorch(coopmat_on_cpu):
    q, k, v, _ = _arrays("plain", seed=4)
    q[0, 0, 3, 5] = np.nan  # that row of that head
    k[0, 1, 10, 2] = np.nan  # every row of the other head
    _, out = _run((q, k, v), {})
    got = out.numpy()
    want = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a, dtype=torch.float64) for a in (q, k, v)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want.numpy()))
    assert np.isnan(got[0, 0, 3]).all() and np.isnan(got[0, 1]).all() and not np.isnan(np.delete(got[0, 0], 3, 0)).any()


def test_dropout_drops_what_the_scalar_kernel_drops(coopmat_on_cpu, monkeypatch):
    q, k, v, _ = _arrays("plain", seed=7)
    vkml.manual_seed(3)
    _, out = _run((q, k, v), {"dropout_p": 0.4})
    got = out.numpy()
    assert coopmat_on_cpu and coopmat_on_cpu[-1].startswith("attention_cm_"), coopmat_on_cpu
    monkeypatch.setattr(coopmat, "applies", lambda features, shape: False)
    vkml.manual_seed(3)
    _, out = _run((q, k, v), {"dropout_p": 0.4})
    scalar = out.numpy()
    assert not coopmat_on_cpu[-1].startswith("attention_cm_")
    _, tol = _exact(q, k, v, {})
    # The scalar kernel is float32-accurate; the kept weights are scaled by 1 / (1 - p).
    assert np.all(np.abs(got.astype(np.float64) - scalar) <= tol / 0.6 + np.abs(scalar) * 2.0**-11)


def test_a_large_dropout_scale_does_not_overflow_the_float16_weights(coopmat_on_cpu, monkeypatch):
    """dropout_p = 0.99999 keeps weights scaled by 1e5, past float16's range: the kernel scales after P V."""
    q, k = np.zeros((1, 1, 64, 16), np.float16), np.zeros((1, 1, 64, 16), np.float16)  # every weight 1
    v = np.random.default_rng(0).standard_normal((1, 1, 64, 16)).astype(np.float16)
    results = []
    for forced in (True, False):
        if not forced:
            monkeypatch.setattr(coopmat, "applies", lambda features, shape: False)
        vkml.manual_seed(1)  # a seed that keeps one weight of this shape
        results.append(_run((q, k, v), {"dropout_p": 0.99999})[1].numpy())
    got, scalar = results
    assert coopmat_on_cpu[0].startswith("attention_cm_") and np.abs(scalar).max() > 1000
    np.testing.assert_allclose(got.astype(np.float64), scalar.astype(np.float64), rtol=2e-3, atol=0)


def test_the_backward_takes_the_saved_log_sum_exp(coopmat_on_cpu):
    q, k, v, kwargs = _arrays("causal", seed=5)
    q, k, v = (a[:, :, :32, :32] for a in (q, k, v))
    (tq, tk, tv), out = _run((q, k, v), kwargs, requires_grad=True)
    grad = np.random.default_rng(1).standard_normal(out.shape).astype(np.float16)
    out.backward(vkml.tensor(grad))
    assert any(n.startswith("attention_cm_") for n in coopmat_on_cpu)
    pq, pk, pv = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v))
    torch.nn.functional.scaled_dot_product_attention(pq, pk, pv, **kwargs).backward(torch.tensor(grad).double())
    for mine, theirs in ((tq, pq), (tk, pk), (tv, pv)):
        np.testing.assert_allclose(mine.grad.numpy().astype(np.float64), theirs.grad.numpy(), rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------- the kernel and its SPIR-V


@pytest.mark.parametrize(
    "shape",
    [
        _shape(L=1000, S=1000),
        _shape(L=50, S=70, E=128, Ev=128, causal=True),
        _shape(E=30, Ev=24, mask="bool", mask_dtype=T.bool_, mask_strides=(0, 0, 64, 1), dropout=True),
    ],
    ids=["d64", "d128_causal", "tails_mask_dropout"],
)
def test_the_kernel_validates_for_an_h200_like_device(shape):
    config = coopmat.config_of(H200, shape)
    kernel = coopmat.forward_kernel(shape, config)
    assert kernel.local_size == (config.threads, 1, 1) and kernel.subgroup_size == 32
    assert config.shared_bytes(shape.head_dim, shape.value_dim) <= H200.max_compute_shared_memory_size
    mul_adds = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "cm_mul_add"]
    e16, ev16 = -(-shape.head_dim // 16), -(-shape.value_dim // 16)
    assert len(mul_adds) == (config.keys // 16) * (e16 + ev16)  # Q Kᵀ and P V of one key block
    # Rows of whole groups of 4 are staged by 8-byte loads and shared stores: the tile is then held as vectors.
    grouped = {"qp_tile", "k_tile"} if shape.head_dim % 4 == 0 else set()
    assert kernel.vector_shared() == grouped | ({"v_tile"} if shape.value_dim % 4 == 0 else set())
    compiled = compile_kernel(kernel, H200)  # spirv-val, vulkan1.3
    assert "OpCooperativeMatrixMulAddKHR" in compiled.asm and "OpMemoryModel Logical Vulkan" in compiled.asm
    # The key-block loop stays rolled (an unrolled one spilled on the H200: docs/benchmarks.md, session 14).
    assert compiled.asm.count("DontUnroll") == 1


def test_other_dtypes_are_refused():
    with pytest.raises(ValueError, match="takes float16, not float32"):
        coopmat.forward_kernel(_shape(T.float32), coopmat.Config())


# ---------------------------------------------------------------- on the Vulkan device present


def test_the_device_runs_the_path_its_features_choose(gpu, monkeypatch):
    monkeypatch.setenv("VKML_ATTENTION_CM2", "0")  # where cm2 applies it runs first (tests/test_attention_cm2.py)
    q, k, v, kwargs = _arrays("causal", seed=9)
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    try:
        _, out = _run((q, k, v), kwargs, device=gpu)
        first = out.numpy()
        _, out = _run((q, k, v), kwargs, device=gpu)
        again = out.numpy()
    finally:
        debug.kernel_listeners.pop()
    assert_same_bits(again, first, "the same bits every run")
    attention = [n for n in names if n.startswith("attention")]
    if coopmat.applies(gpu.features, _shape()):
        assert attention and all(n.startswith("attention_cm_") for n in attention), names
        exact, tol = _exact(q, k, v, kwargs)
        assert np.all(np.abs(first.astype(np.float64) - exact) <= tol)
    else:  # lavapipe: the scalar kernel and the CPU's bits
        assert attention and not any(n.startswith("attention_cm_") for n in attention), names
        _, cpu = _run((q, k, v), kwargs)
        assert_same_bits(first, cpu.numpy(), "the scalar kernel on the device")


def test_the_weights_exp_is_within_its_bound_and_passes_specials():
    """weight_exp (the cooperative-matrix kernel's e^x for x <= 0): relative error below 2^-22 + |x|·2^-23
    against float64, -inf and values below 2^-126 give +0.0, ±0.0 gives 1 (within the bound), NaN gives NaN."""
    from vkml.ir.builder import KernelBuilder, global_id
    from vkml.ir.interp import reference as interp
    from vkml.kernels.attention_coopmat import weight_exp

    kb = KernelBuilder("weight_exp", local_size=(64, 1, 1))
    x, out = kb.buffer("x", T.float32, "read"), kb.buffer("out", T.float32, "write")
    with kb:
        i = global_id(0)
        out[i] = weight_exp(x[i])
    kernel = kb.finish()
    rng = np.random.default_rng(4)
    values = np.concatenate(
        [-rng.exponential(3.0, 4000), -rng.uniform(0, 87.3, 4000), [0.0, -0.0, -np.inf, np.nan, -87.4, -200.0]]
    ).astype(np.float32)
    values = np.concatenate([values, np.zeros(-len(values) % 64, np.float32)])
    got = np.zeros_like(values)
    interp.run(kernel, (len(values) // 64, 1, 1), {"x": values, "out": got}, {})
    exact = np.exp(values.astype(np.float64))
    normal = exact >= 2.0**-126
    bound = 2.0**-22 + np.abs(values[normal].astype(np.float64)) * 2.0**-23  # the fit, then t = x·log2(e)
    assert np.all(np.abs(got[normal] - exact[normal]) <= bound * exact[normal])
    assert np.all(got[~normal & ~np.isnan(values)] == 0.0) and np.isnan(got[np.isnan(values)]).all()
    assert np.all(np.abs(got[values == 0.0] - 1.0) <= 2.0**-22)  # ±0.0 (and the padding)
