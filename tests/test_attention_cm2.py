"""The flash-attention forward on VK_NV_cooperative_matrix2 (vkml/kernels/attention_cm2.py): selection, bound, SPIR-V.

Lavapipe has no cooperative matrices: the CPU interpreter runs the kernel when the selection is forced for it
(its reductions sum in the contract's tree, its ``cm_mul_add`` adds exact products in ascending order), and the
result must lie within the bound docs/ops/scaled_dot_product_attention.md states for devices with cooperative
matrices, against attention in float64; the backward, from the kernel's log-sum-exp, must match PyTorch's.
The weights' routines (weight_exp2, scale_exp2, running_max, row_sum_reciprocal, row_log) run as a plain kernel on the
interpreter, against float64, and on the Vulkan device present, which must give the interpreter's bits.
spirv-val checks the SPIR-V for H200-like features.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from optest import assert_same_bits
from test_attention_coopmat import _exact

import vkml
import vkml.nn.functional as VF
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.ir import builder as B
from vkml.ir import types as T
from vkml.ir.interp import reference as interp
from vkml.kernels import attention_cm2 as cm2
from vkml.kernels import attention_coopmat as coopmat
from vkml.kernels.attention import AttentionShape, Operand
from vkml.runtime.base import Dispatch

H200 = DeviceFeatures.h200_like()


def _shape(dtype=T.float16, L=64, S=64, E=64, Ev=64, heads=2, **more) -> AttentionShape:
    def operand(rows, width):
        return Operand((heads * rows * width, rows * width), (1, 1))

    return AttentionShape(dtype, (1, heads), L, S, E, Ev, operand(L, E), operand(S, E), operand(S, Ev), **more)


@pytest.fixture
def cm2_on_cpu(monkeypatch):
    """The CPU interpreter runs the float16 attention forwards this kernel supports on it; yields the kernels run."""
    monkeypatch.setattr(cm2, "applies", lambda features, shape, config=cm2.DEFAULT: cm2.supports(shape))
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    yield names
    debug.kernel_listeners.pop()


# ---------------------------------------------------------------- selection


def test_selection_follows_the_device_features_the_call_and_the_switches(monkeypatch):
    shape = _shape()
    assert cm2.applies(H200, shape) and cm2.applies(H200, _shape(L=1000, S=1000, E=128, Ev=128, causal=True))
    assert not cm2.applies(DeviceFeatures.lavapipe_like(), shape)
    assert not cm2.applies(None, shape)  # the CPU interpreter keeps its own kernel
    for change in (
        {"cooperative_matrix_workgroup": False},
        {"cooperative_matrix_workgroup_ops": False},  # no reductions, conversions or per-element functions
        {"cooperative_matrix_flexible": ()},
        {"vulkan_memory_model": False},
        {"rte_float16": False},
        {"spirv_version": (1, 5)},
    ):
        assert not cm2.applies(DeviceFeatures(**{**H200.__dict__, **change}), shape), change
    for other in (
        _shape(T.float32),
        _shape(T.bfloat16),
        _shape(E=32, Ev=32),
        _shape(E=80, Ev=80),
        _shape(mask="bool", mask_dtype=T.bool_, mask_strides=(0, 0, 64, 1)),
        _shape(dropout=True),
    ):
        assert not cm2.applies(H200, other), other
        assert coopmat.applies(H200, other) == (other.dtype is T.float16)  # the subgroup-scope kernel keeps those
    broadcast = AttentionShape(T.float16, (2,), 64, 64, 64, 64, *(Operand((0,), (1,)),) * 3)
    gqa = AttentionShape(T.float16, (4,), 64, 64, 64, 64, Operand((4096,), (1,)), *(Operand((4096,), (2,)),) * 2)
    assert cm2.applies(H200, broadcast) and cm2.applies(H200, gqa)
    monkeypatch.setenv("VKML_ATTENTION_CM2", "0")
    assert not cm2.applies(H200, shape) and coopmat.applies(H200, shape)
    monkeypatch.setenv("VKML_ATTENTION_CM2", "1")
    monkeypatch.setenv("VKML_ATTENTION_COOPMAT", "0")
    assert not cm2.applies(H200, shape)


# ---------------------------------------------------------------- the interpreted kernel within the bound

CASES = {
    "d64": dict(L=128, S=128, E=64),
    "d64_causal": dict(L=256, S=256, E=64, causal=True),  # rows from 128 on: a whole key block, then the diagonal
    "d128_causal_ragged": dict(L=100, S=100, E=128, causal=True),
    "d128_ragged": dict(L=70, S=150, E=128),
    "d64_causal_rows_past_keys": dict(L=90, S=40, E=64, causal=True),
    "gqa_broadcast_ragged": dict(L=70, S=100, E=64, gqa=True),
}
LONGER = ("d64", "d128_ragged", "d64_causal_rows_past_keys")  # run with -m stress: the default suite keeps its time


def _inputs(L, S, E, seed, causal=False, gqa=False):
    """q (1, 2, L, E), k and v (1, 2, S, E); ``gqa``: q (2, 4, L, E) with k and v broadcast along the first dim
    and each of their 2 heads serving 2 query heads."""
    g = np.random.default_rng(seed)
    q = (g.standard_normal((2, 4, L, E) if gqa else (1, 2, L, E)) * 1.5).astype(np.float16)
    k = (g.standard_normal((1, 2, S, E)) * 1.5).astype(np.float16)
    v = g.standard_normal((1, 2, S, E)).astype(np.float16)
    kwargs = {"is_causal": True} if causal else {}
    return q, k, v, {**kwargs, "enable_gqa": True} if gqa else kwargs


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.stress) if n in LONGER else n for n in CASES])
def test_the_interpreted_kernel_is_within_the_bound(name, cm2_on_cpu):
    q, k, v, kwargs = _inputs(**CASES[name], seed=list(CASES).index(name))
    out = VF.scaled_dot_product_attention(*(vkml.tensor(a) for a in (q, k, v)), **kwargs)
    got = out.numpy()
    assert cm2_on_cpu and all(n.startswith("attention_cm2_") for n in cm2_on_cpu), cm2_on_cpu
    exact, tol = _exact(q, k, v, kwargs)
    error = np.abs(got.astype(np.float64) - exact)
    assert got.dtype == np.float16 and np.all(error <= tol), (error / tol).max()


def test_the_session_16_form_is_within_the_bound(cm2_on_cpu, monkeypatch):
    """Config(keys=64, weights="natural", unroll=True), which bench_attention.py --cm2-forms times against the default."""
    built = cm2.cached_forward_kernel
    natural = cm2.Config(keys=64, weights="natural", unroll=True)
    monkeypatch.setattr(cm2, "cached_forward_kernel", lambda shape, _=None, subgroup_size=32: built(shape, natural))
    q, k, v, kwargs = _inputs(100, 100, 64, seed=8, causal=True)
    got = VF.scaled_dot_product_attention(*(vkml.tensor(a) for a in (q, k, v)), **kwargs).numpy()
    exact, tol = _exact(q, k, v, kwargs)
    assert cm2_on_cpu[-1].startswith("attention_cm2_") and np.all(np.abs(got.astype(np.float64) - exact) <= tol)


def test_nan_and_infinite_inputs_as_pytorch(cm2_on_cpu):
    q, k, v, _ = _inputs(64, 256, 64, seed=4)
    q[0, 0, 3, 5] = np.nan  # that row of that head
    k[0, 1, 200, 2] = np.nan  # every row of the other head, from the second key block on
    q[0, 0, 9, 1] = np.inf  # scores of ±inf: a NaN row
    q[0, 0, 12], q[0, 0, 12, 1] = 0.0, -np.inf  # scores of ±inf, NaN where k is 0
    k[0, 0, 20, 3] = -np.inf  # that key's score ±inf in every row
    v[0, 0, 40, 7] = np.inf  # that column
    got = VF.scaled_dot_product_attention(*(vkml.tensor(a) for a in (q, k, v))).numpy()
    want = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a, dtype=torch.float64) for a in (q, k, v)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want.numpy()))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want.numpy()))
    assert cm2_on_cpu[-1].startswith("attention_cm2_")


def test_the_log_sum_exp_is_within_its_bound():
    """The kernel's second output, which the backward takes: m + log(l) per row, within the weights' and scores'
    part of the bound plus a float32 rounding (extra/proto_flash_cm2.py's check), rows past L untouched."""
    L, E = 100, 128
    q, k, v, _ = _inputs(L, L, E, seed=6, causal=True)
    kernel = cm2.forward_kernel(_shape(L=L, S=L, E=E, Ev=E, causal=True))
    out, lse = np.zeros(2 * L * E, np.float16), np.full(2 * L + 7, 5.0, np.float32)
    buffers = {"q": q.ravel(), "k": k.ravel(), "v": v.ravel(), "out": out, "lse": lse}
    interp.run(kernel, cm2.grid(_shape(L=L, S=L, E=E, Ev=E, causal=True)), buffers, {"scale": np.float32(E**-0.5)})
    s = (q[0].astype(np.float64) @ np.swapaxes(k[0], -1, -2).astype(np.float64)) * E**-0.5
    s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    top = s.max(-1)
    exact = top + np.log(np.exp(s - top[..., None]).sum(-1))
    c_w, c_s, _ = coopmat.bound(E)
    magnitude = E**-0.5 * (np.abs(q[0]).astype(np.float64) @ np.swapaxes(np.abs(k[0]), -1, -2)).max(-1)
    assert np.all(np.abs(lse[: 2 * L].reshape(2, L) - exact) <= c_w + c_s * magnitude + 2.0**-23 * np.abs(exact))
    assert np.all(lse[2 * L :] == 5.0)  # the clipped store leaves the rows past the tensor alone


@pytest.mark.stress
def test_the_backward_takes_the_kernels_log_sum_exp(cm2_on_cpu):
    q, k, v, kwargs = _inputs(64, 64, 64, seed=5, causal=True)
    tensors = [vkml.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = VF.scaled_dot_product_attention(*tensors, **kwargs)
    grad = np.random.default_rng(1).standard_normal(out.shape).astype(np.float16)
    out.backward(vkml.tensor(grad))
    assert any(n.startswith("attention_cm2_") for n in cm2_on_cpu)
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v)]
    torch.nn.functional.scaled_dot_product_attention(*theirs, **kwargs).backward(torch.tensor(grad).double())
    for mine, their in zip(tensors, theirs):
        np.testing.assert_allclose(mine.grad.numpy().astype(np.float64), their.grad.numpy(), rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------- the weights' exponential


def _cubic(f: np.ndarray) -> np.ndarray:
    """``WEIGHT_CUBIC`` at f in numpy float32, each sum and product rounded as the kernel's Horner steps."""
    f = np.asarray(f, np.float32)
    a, b, c = (np.float32(v) for v in cm2.WEIGHT_CUBIC)
    return ((f + a) * f + b) * f + c


def _relative_error_of_the_cubic(f: np.ndarray) -> np.ndarray:
    return np.abs(_cubic(f).astype(np.float64) / (cm2.WEIGHT_SCALE * np.exp2(f.astype(np.float64))) - 1)


def _float32(*bits: int) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


def _routine_inputs(n: int = 1 << 14) -> dict[str, np.ndarray]:
    """Arguments of the five routines: x for weight_exp2 (random in [-130, 2], tiny and huge negatives, halves,
    the ends of the flushed range and specials), d for scale_exp2 (integers <= 0 and -inf), old and top for
    running_max (integers and infinities; block maxima of any kind), l for row_sum_reciprocal and row_log (1 to
    2^100, NaN and 0)."""
    g = np.random.default_rng(11)
    specials = np.concatenate(
        [
            np.float32([0.0, -0.0, 1.0, 1.5, 0.5, -0.5, -1.5, -126.0, -126.5, -127.0, -127.5, -128.0, -149.0]),
            np.float32([-1e30, -3e38, -np.inf, np.nan]),
            _float32(0xFFC00000, 0x7FC00000, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000001, 0x807FFFFF, 0x00000001, 0xC2FE0001),
            -np.exp2(g.uniform(-149, 0, 256)).astype(np.float32),  # tiny negatives, subnormal ones too
            -(np.arange(256, dtype=np.float32) / 2),  # halves: round-to-nearest's ties
        ]
    )
    x = np.concatenate([specials, g.uniform(-130, 2, n - len(specials)).astype(np.float32)])
    d = -g.integers(0, 140, n).astype(np.float32)
    d[:3] = (-np.inf, -0.0, 0.0)
    old = g.integers(-200, 50, n).astype(np.float32)
    old[:4] = (-np.inf, np.inf, -np.inf, 7.0)
    top = np.concatenate([np.float32([np.inf, -np.inf, -np.inf]), specials, g.uniform(-210, 60, n).astype(np.float32)])
    top = top[:n]
    l = np.exp2(g.uniform(0, 100, n)).astype(np.float32)
    l[:3] = (np.nan, 0.0, 1.0)
    return {"x": x, "d": d, "old": old, "top": top, "l": l}


OUTPUTS = ("p", "alpha", "m", "inverse", "log")


def _routines_kernel():
    kb = B.KernelBuilder("cm2_weight_routines", local_size=(64, 1, 1))
    x, d, old, top, l = (kb.buffer(name, T.float32, "read") for name in ("x", "d", "old", "top", "l"))
    p, alpha, m, inverse, log = (kb.buffer(name, T.float32, "write") for name in OUTPUTS)
    with kb:
        i = B.global_id(0)
        p[i] = cm2.weight_exp2(x[i])
        alpha[i] = cm2.scale_exp2(d[i])
        m[i] = cm2.running_max(old[i], top[i])
        inverse[i] = cm2.row_sum_reciprocal(l[i])
        log[i] = cm2.row_log(l[i])
    return kb.finish()


def test_the_weights_routines_are_exact_where_stated_and_within_their_bound():
    """weight_exp2 within 2^-13.6 of WEIGHT_SCALE·2^x (float64) above -126.5, +0.0 from there down (and -inf),
    NaN for NaN of either sign; scale_exp2 exactly 2^d; running_max max(old, floor(top)); row_sum_reciprocal
    within 2^-22 of 1 / l, NaN for NaN and 0; row_log within 2^-18 + 2^-23·log(l) of log(l), NaN for NaN."""
    inputs = _routine_inputs()
    n = len(inputs["x"])
    out = {name: np.zeros(n, np.float32) for name in OUTPUTS}
    interp.run(_routines_kernel(), (n // 64, 1, 1), {**inputs, **out}, {})
    x, p = inputs["x"].astype(np.float64), out["p"].astype(np.float64)
    with np.errstate(invalid="ignore"):
        kept = x > -126.5
        assert np.all(np.abs(p[kept] / (cm2.WEIGHT_SCALE * np.exp2(x[kept])) - 1) < 2.0**-13.6)
        assert np.all(p[kept] >= 2.0**-126) and np.all(out["p"][x <= -126.5].view(np.uint32) == 0)  # +0.0
    assert np.array_equal(np.isnan(p), np.isnan(x))
    # the cubic as the kernel evaluates it, times 2^k
    k = np.round(inputs["x"][kept])  # half to even, as the rounding sum
    assert np.array_equal(out["p"][kept], (_cubic(inputs["x"][kept] - k) * np.exp2(k)).astype(np.float32))
    d = inputs["d"]
    assert_same_bits(out["alpha"], np.where(d >= -126, np.exp2(d), 0.0).astype(np.float32), "scale_exp2")
    known = ~np.isnan(inputs["top"])  # a NaN block maximum: either side
    want = np.maximum(inputs["old"], np.floor(inputs["top"]))
    assert_same_bits(out["m"][known], want[known], "running_max")
    assert np.all(np.isnan(out["m"][~known]) | (out["m"][~known] == inputs["old"][~known]))
    l, inverse = inputs["l"].astype(np.float64), out["inverse"].astype(np.float64)
    assert np.all(np.abs(inverse[2:] * l[2:] - 1) < 2.0**-22) and np.isnan(inverse[:2]).all()
    log = out["log"].astype(np.float64)
    assert np.all(np.abs(log[2:] - np.log(l[2:])) < 2.0**-18 + 2.0**-23 * np.log(l[2:])) and np.isnan(log[0])


def test_the_weights_routines_give_the_interpreters_bits_on_the_device(gpu):
    """The same routines on the Vulkan device present (lavapipe in CI): the interpreter's bits (their results are
    never subnormal, so a device that flushes subnormals gives them too), except running_max's either side for a
    NaN block maximum (which a device may carry with the other sign) and, where the device flushes subnormals, its
    floor of a subnormal block maximum (0 there, -1 or 0 on the interpreter)."""
    inputs = _routine_inputs()
    n = len(inputs["x"])
    kernel, grid = _routines_kernel(), (n // 64, 1, 1)
    cpu = {**inputs, **{name: np.zeros(n, np.float32) for name in OUTPUTS}}
    interp.run(kernel, grid, cpu, {})
    buffers = {name: gpu.allocate(T.float32, n) for name in cpu}
    for name in inputs:
        gpu.upload(buffers[name], inputs[name])
    gpu.run([Dispatch(kernel, grid, buffers, {})])
    got = {name: gpu.download(buffers[name]) for name in OUTPUTS}
    assert_same_bits(got["p"], cpu["p"], "weight_exp2")
    assert_same_bits(got["inverse"], cpu["inverse"], "row_sum_reciprocal")
    assert_same_bits(got["log"], cpu["log"], "row_log")
    assert_same_bits(got["alpha"], cpu["alpha"], "scale_exp2")
    top = inputs["top"]
    either = np.isnan(top)
    if not gpu.features.denorm_preserve_float32:
        either |= (top != 0) & (np.abs(top) < 2.0**-126)
    assert_same_bits(got["m"][~either], cpu["m"][~either], "running_max")
    flushed = np.maximum(inputs["old"], np.where(np.isnan(top), top, 0.0))  # floor(±0) = ±0
    m, options = got["m"][either], (cpu["m"][either], inputs["old"][either], flushed[either])
    assert np.all(np.isnan(m) | np.any([m == option for option in options], axis=0))


@pytest.mark.exhaustive
def test_the_cubic_is_within_its_bound_on_every_reduced_argument():
    """Every float32 f in [-1/2, 1/2] (the reduced arguments f = x - round(x)): within 2^-13.6 of WEIGHT_SCALE·2^f."""
    for sign in (0, 0x80000000):
        for start in range(0, 0x3F000001, 1 << 24):
            bits = np.arange(start, min(start + (1 << 24), 0x3F000001), dtype=np.uint32) | np.uint32(sign)
            assert _relative_error_of_the_cubic(bits.view(np.float32)).max() < 2.0**-13.6


# ---------------------------------------------------------------- the kernel and its SPIR-V


@pytest.mark.parametrize(
    "shape",
    [
        _shape(L=1024, S=1024),
        _shape(L=100, S=100, E=128, Ev=128, causal=True),
        _shape(L=70, S=150, E=64, Ev=128),
        AttentionShape(
            T.float16,
            (2, 4),
            256,
            256,
            64,
            64,
            Operand((4 * 16384, 16384), (1, 1)),
            *(Operand((0, 16384), (1, 2)),) * 2,
        ),
    ],
    ids=["d64", "d128_causal_ragged", "ragged_e64_ev128", "gqa_broadcast"],
)
def test_the_kernel_validates_for_an_h200_like_device(shape):
    assert cm2.applies(H200, shape)
    kernel = cm2.forward_kernel(shape, subgroup_size=H200.subgroup_size)
    assert kernel.local_size == (cm2.DEFAULT.threads, 1, 1) and not kernel.shared  # the driver stages the matrices
    asm = compile_kernel(kernel, H200).asm  # spirv-val, vulkan1.3
    for needed in (
        "OpCooperativeMatrixReduceNV",
        "OpCooperativeMatrixPerElementOpNV",
        "OpCooperativeMatrixLoadTensorNV",
    ):
        assert needed in asm, needed
    assert "OpCooperativeMatrixLoadKHR" not in asm and "OpControlBarrier" not in asm  # no shared-memory round trips
    masked_loops = 1 if shape.causal or shape.key_len % cm2.DEFAULT.keys else 0
    assert asm.count("OpLoopMerge") == 1 + masked_loops  # the blocks without a mask, then the masked ones
    assert asm.count("DontUnroll") == 1 + masked_loops  # the driver would unroll the constant trip counts
    functions = re.findall(r"element_function = OpFunction (.*?)OpFunctionEnd", asm, re.S)
    weights = [f for f in functions if "Floor" in f or "%float_0x4b40007f" in f]
    assert len(weights) == 3 * (1 + masked_loops) and not any(
        "OpFOrd" in f or "cmp_" in f for f in weights
    )  # m', P, α: no float compare
    assert "DontUnroll" not in compile_kernel(cm2.forward_kernel(shape, cm2.Config(unroll=True)), H200).asm
    assert ("OpTensorViewSetClipNV" in asm) == bool(shape.query_len % cm2.DEFAULT.rows)


# ---------------------------------------------------------------- on the Vulkan device present


def test_the_device_runs_the_path_its_features_choose(gpu):
    q, k, v, kwargs = _inputs(150, 150, 64, seed=9, causal=True)  # ragged: a partial last block of each
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    try:
        runs = [VF.scaled_dot_product_attention(*(vkml.tensor(a, device=gpu) for a in (q, k, v)), **kwargs).numpy()]
        runs.append(VF.scaled_dot_product_attention(*(vkml.tensor(a, device=gpu) for a in (q, k, v)), **kwargs).numpy())
    finally:
        debug.kernel_listeners.pop()
    np.testing.assert_array_equal(runs[0].view(np.uint16), runs[1].view(np.uint16))  # the same bits every run
    attention = [n for n in names if n.startswith("attention")]
    if cm2.applies(gpu.features, _shape(L=150, S=150, causal=True)):
        assert attention and all(n.startswith("attention_cm2_") for n in attention), names
        exact, tol = _exact(q, k, v, kwargs)
        assert np.all(np.abs(runs[0].astype(np.float64) - exact) <= tol)
    else:  # lavapipe: no cooperative matrices
        assert attention and not any(n.startswith("attention_cm2_") for n in attention), names


def test_other_calls_are_refused():
    with pytest.raises(ValueError, match="does not take"):
        cm2.forward_kernel(_shape(T.float32))
