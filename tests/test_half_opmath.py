"""float16 and bfloat16 ops that must round where PyTorch's CPU kernels and backward formulas round.

PyTorch does not compute every half-precision op "in float32, rounded once": some kernels round
intermediates (logspace rounds its ends and their difference), and many backward formulas are
composites of ops in the input's dtype, each rounding (torch/csrc/autograd/FunctionsManual.cpp).
Each row below is one such class: vkml must give torch's values and gradients (the gradients of
``sum(out * w)``), on the CPU backend and on Vulkan with the CPU's bits.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

HALF_DTYPES = ("float16", "bfloat16")

# The gradient rules (vkml/ops/grads.py RULES) whose gradients the rows below check
# (tests/test_autograd.py asks every rule to be tested somewhere).
GRAD_TESTED = {
    "half_vector_norm",
    "half_var",
    "half_std",
    "half_mean",
    "half_bce_with_logits",
    "float_gradient",
    "half_adaptive_avg3d",
    "half_instance_norm",
    "half_group_norm",
    "half_addcmul",
    "half_soft_margin_loss",
    "half_glu",
    "half_bce",
    "half_logit",
    "half_addr",
}


def _inputs(shapes, seed: int, scale: float = 3.0):
    g = np.random.default_rng(seed)
    return [(g.standard_normal(s) * scale).astype(np.float32) for s in shapes]


def _probability(x):
    """``x`` moved into (0, 1) by steps exact in both libraries (a power-of-two scale, a clamp, one add)."""
    return (x * 0.0625).clamp(-0.45, 0.45) + 0.5


# id -> (function of (module, *tensors), input shapes, whether gradients are compared)
CASES = {
    "logspace": (lambda m, dt: m.logspace(4.3, -3.7, 9, base=10.0, dtype=dt), None, False),
    "logspace_base2": (lambda m, dt: m.logspace(-2.45, 7.9, 23, base=2.0, dtype=dt), None, False),
    "logspace_one_step": (lambda m, dt: m.logspace(1.37, 0, 1, dtype=dt), None, False),
    "vector_norm_2": (lambda m, x: m.linalg.vector_norm(x, dim=1), [(4, 7)], True),
    "vector_norm_1": (lambda m, x: m.linalg.vector_norm(x, 1, dim=(0, 1)), [(3, 5)], True),
    "vector_norm_inf": (lambda m, x: m.linalg.vector_norm(x, float("inf"), dim=0, keepdim=True), [(5, 3)], True),
    "vector_norm_0.9": (lambda m, x: m.linalg.vector_norm(x, 0.9), [(3, 5)], True),
    "vector_norm_1.5": (lambda m, x: m.linalg.vector_norm(x, 1.5, dim=-1), [(3, 5)], True),
    "vector_norm_6_overflows": (lambda m, x: m.linalg.vector_norm(x, 6, dim=(0, -1), keepdim=True), [(3, 5)], True),
    "norm_fro": (lambda m, x: m.linalg.norm(x), [(4, 4)], True),
    "normalize": (lambda m, x: m.nn.functional.normalize(x, eps=1e-4), [(2, 3, 4, 5)], True),
    "var": (lambda m, x: m.var(x, dim=1), [(4, 6)], True),
    "var_mean": (lambda m, x: m.var_mean(x, dim=(0, 2), keepdim=True), [(3, 4, 5)], True),
    "std_mean": (lambda m, x: m.std_mean(x, correction=0), [(5, 5)], True),
    "std_one_element": (lambda m, x: m.std(x, dim=0), [(1, 3)], True),
    "bce_with_logits": (
        lambda m, x, t: m.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none"),
        [(5, 5), (5, 5)],
        True,
    ),
    "bce_with_logits_mean": (
        lambda m, x, t: m.nn.functional.binary_cross_entropy_with_logits(x, t),
        [(4, 6)] * 2,
        True,
    ),
    "interpolate_linear": (lambda m, x: m.nn.functional.interpolate(x, size=11, mode="linear"), [(2, 3, 7)], True),
    "interpolate_trilinear": (
        lambda m, x: m.nn.functional.interpolate(x, size=(5, 4, 6), mode="trilinear"),
        [(2, 3, 4, 3, 5)],
        True,
    ),
    "hardswish_grad": (lambda m, x: m.nn.functional.hardswish(x), [(10, 10)], True),
    "hardsigmoid_grad": (lambda m, x: m.nn.functional.hardsigmoid(x), [(10, 10)], True),
    "soft_margin_loss": (
        lambda m, x: m.nn.functional.soft_margin_loss(x, m.flip(x.detach(), (1,)).sign()),
        [(5, 5)],
        True,
    ),
    "addcmul": (lambda m, x, a, b: m.addcmul(x, a, b, value=0.3), [(1,), (5, 5, 1), (1, 5)], True),
    "addbmm": (lambda m, x, a, b: m.addbmm(x, a, b, beta=0.6, alpha=0.2), [(1,), (5, 5, 5), (5, 5, 10)], True),
    "log_softmax_last_dim": (lambda m, x: m.log_softmax(x, -1), [(6, 7)], True),
    "log_softmax_dim0": (lambda m, x: m.log_softmax(x, 0), [(6, 7)], True),
    "cross_entropy_probabilities": (lambda m, x, t: m.nn.functional.cross_entropy(x, t.softmax(1)), [(4, 5)] * 2, True),
    "softmax_grad": (lambda m, x: m.softmax(x, -1), [(6, 17)], True),
    "softmin_grad": (lambda m, x: m.nn.functional.softmin(x, 1), [(5, 8)], True),
    "instance_norm": (
        lambda m, x, w, b: m.nn.functional.instance_norm(x, weight=w, bias=b, eps=0.5),
        [(3, 2, 12), (2,), (2,)],
        True,
    ),
    "group_norm": (
        lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w, b, eps=0.5),
        [(3, 6, 5), (6,), (6,)],
        True,
    ),
    "group_norm_plain": (lambda m, x: m.nn.functional.group_norm(x, 3), [(2, 6, 2, 3)], True),
    "instance_norm_plain": (lambda m, x: m.nn.functional.instance_norm(x), [(2, 3, 4, 5)], True),
    "adaptive_avg_pool3d": (lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, (5, 7, 4)), [(2, 8, 8, 8)], True),
    "interpolate_area_up": (lambda m, x: m.nn.functional.interpolate(x, size=5, mode="area"), [(1, 2, 4, 4, 4)], True),
    "glu": (lambda m, x: m.nn.functional.glu(x, 1), [(3, 8, 5)], True),
    # gelu's gradient in float32 from erf, as PyTorch's half kernel (the inputs halved: away from
    # x < -3.5, where PyTorch's 1 + erf(x) cancels and the two math libraries' last float32 bits show)
    "gelu_grad": (lambda m, x: m.nn.functional.gelu(x * 0.5), [(8, 9)], True),
    "gelu_tanh_grad": (lambda m, x: m.nn.functional.gelu(x * 0.5, approximate="tanh"), [(8, 9)], True),
    "binary_cross_entropy": (
        lambda m, x, t: m.nn.functional.binary_cross_entropy(_probability(x), _probability(t), t.detach().abs()[0]),
        [(4, 5), (4, 5)],
        True,
    ),
    "binary_cross_entropy_none": (
        lambda m, x, t: m.nn.functional.binary_cross_entropy(_probability(x), _probability(t), reduction="none"),
        [(4, 5), (4, 5)],
        True,
    ),
    "logit": (lambda m, x: m.logit(_probability(x)), [(6, 7)], True),
    "logit_eps": (lambda m, x: m.logit(_probability(x), eps=0.1), [(6, 7)], True),
    "sigmoid_grad": (lambda m, x: m.sigmoid(x), [(6, 7)], True),
    # a batched operand times a matrix or vector: PyTorch folds the batch into one product, so the
    # matrix's gradient is one sum over all rows
    "matmul_folded": (lambda m, a, b: m.matmul(a, b), [(3, 4, 6), (6, 5)], True),
    "matmul_folded_vector": (lambda m, a, b: m.matmul(a, b), [(2, 3, 4, 6), (6,)], True),
    "matmul_matrix_times_batch": (lambda m, a, b: m.matmul(a, b), [(4, 6), (3, 6, 5)], True),
    "addr": (lambda m, x, a, b: m.addr(x, a, b, beta=0.6, alpha=0.2), [(5, 7), (5,), (7,)], True),
    "addr_beta_zero": (lambda m, x, a, b: m.addr(x, a, b, beta=0, alpha=1.3), [(1,), (4,), (6,)], True),
    "conv_transpose2d": (
        lambda m, x, w, b: m.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1),
        [(1, 3, 5, 4), (3, 2, 3, 3), (2,)],
        True,
    ),
    "interpolate_bicubic": (
        lambda m, x: m.nn.functional.interpolate(x, scale_factor=1.7, mode="bicubic"),
        [(1, 2, 5, 6)],
        True,
    ),
}


# Rows run in the default suite (each row builds its own kernels, seconds on this machine's CPU
# interpreter and lavapipe); the rest run with -m stress.
DEFAULT = {"logspace", "logspace_base2", "logspace_one_step", "vector_norm_2", "var", "std_one_element"}
DEFAULT |= {"interpolate_linear", "glu", "gelu_grad", "matmul_folded", "addr"}  # logit: tests/test_ops_trig.py
# Rows also run on Vulkan in the default suite; the rest with -m stress.
ON_VULKAN = {"vector_norm_2", "glu"}

# Rows whose values may differ from PyTorch's by one unit in the last place: PyTorch's build contracts
# ``t0 * w0 + t1 * w1`` into a fused multiply-add, which vkml (correctly rounded float32 ops) does not.
# addbmm: PyTorch's backward rounds bmm(g, batch2^T) before scaling it by alpha; vkml's addmm rule
# scales first (its values round after each batch as PyTorch's).
ONE_ULP = {"interpolate_linear", "interpolate_trilinear", "interpolate_bicubic", "addbmm"}
EPSILON = {"float16": 2.0**-10, "bfloat16": 2.0**-7}


# Rows matched for float16 only (PyTorch's bfloat16 kernels round their statistics otherwise).
FLOAT16_ONLY = {"instance_norm", "instance_norm_plain", "group_norm", "group_norm_plain"}


def _params(names, fast):
    return [n if n in fast else pytest.param(n, marks=pytest.mark.stress) for n in sorted(names)]


def _case_dtypes():
    rows = []
    for case in sorted(CASES):
        for dtype in ("float16",) if case in FLOAT16_ONLY else HALF_DTYPES:
            marks = [] if case in DEFAULT else [pytest.mark.stress]
            rows.append(pytest.param(case, dtype, marks=marks, id=f"{case}-{dtype}"))
    return rows


def _run(m, case: str, dtype: str, device=None):
    fn, shapes, grad = CASES[case]
    dt = getattr(m, dtype)
    if shapes is None:  # a factory: the dtype is its argument
        out = fn(m, dt)
        return [out.float() if m is vkml else out.float()], []
    kw = {} if device is None else {"device": device}
    arrays = _inputs(shapes, seed=len(case))
    if m is torch:
        xs = [torch.tensor(a).to(dt).requires_grad_(grad) for a in arrays]
    else:
        xs = [vkml.tensor(a, **kw).to(dt).requires_grad_(grad) for a in arrays]
    outs = fn(m, *xs)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    if not grad:
        return [o.float() for o in outs], []
    loss = 0
    for o in outs:
        w = np.linspace(-1.0, 2.0, o.numel()).reshape(tuple(o.shape))
        loss = loss + (o * (torch.tensor(w).to(dt) if m is torch else vkml.tensor(w, **kw).to(dt))).sum()
    grads = m.autograd.grad(loss, xs)
    return [o.float() for o in outs], [g.float() for g in grads]


def _numpy(ts):
    return [t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy() for t in ts]


@pytest.mark.parametrize(("case", "dtype"), _case_dtypes())
def test_half_op_rounds_as_pytorch(case, dtype):
    want_out, want_grads = (_numpy(ts) for ts in _run(torch, case, dtype))
    got_out, got_grads = (_numpy(ts) for ts in _run(vkml, case, dtype))
    for what, got, want in (("output", got_out, want_out), ("grad", got_grads, want_grads)):
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            if case in ONE_ULP:
                np.testing.assert_allclose(g, w, rtol=EPSILON[dtype], atol=0, err_msg=f"{case} {dtype}: {what} {k}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{case} {dtype}: {what} {k}")


@pytest.mark.parametrize("case", _params([c for c in CASES if CASES[c][1] is not None], ON_VULKAN))
def test_half_op_gives_the_cpu_bits_on_vulkan(case, gpu):
    for dtype in HALF_DTYPES:
        cpu_out, cpu_grads = (_numpy(ts) for ts in _run(vkml, case, dtype))
        vk_out, vk_grads = (_numpy(ts) for ts in _run(vkml, case, dtype, device=gpu))
        for got, want in zip(vk_out + vk_grads, cpu_out + cpu_grads, strict=True):
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{case} {dtype}")


@pytest.mark.parametrize("dtype", ("float32", *HALF_DTYPES))
def test_hardswish_gradient_is_zero_at_minus_three_as_pytorch(dtype):
    values = [-3.5, -3.0, -1.0, 3.0, 3.5]
    grads = []  # torch's, then vkml's
    for m in (torch, vkml):
        x = m.tensor(values, dtype=getattr(m, dtype), requires_grad=True)
        (grad,) = m.autograd.grad(m.nn.functional.hardswish(x).sum(), x)
        grads.append(grad.float().numpy() if m is vkml else grad.float().detach().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("name", ("i1", "i1e"))
@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_bessel_i1_backward_refuses_half_as_pytorch(name, dtype):
    raised = []
    for m in (torch, vkml):
        x = m.tensor([0.5, 2.0], dtype=getattr(m, dtype), requires_grad=True)
        with pytest.raises(NotImplementedError) as info:
            m.autograd.grad(getattr(m.special, name)(x).sum(), x)
        raised.append(str(info.value))
    assert raised[1] == raised[0]
