"""Half ``linear`` with a bias, ``addmm`` and ``baddbmm`` on the cooperative-matrix matmul template.

PyTorch adds the bias to a half product's float32 sums and rounds once, so vkml builds those as a
float32 matmul of the float16 operands widened in the kernel (a cast, under views), the bias added in
float32, then one narrowing. The widening is exact and half products are exact in float32, so that
float32 product is the float16 one with its float32 sums kept: the matmul selection
(vkml/kernels/matmul/__init__.py ``mode``, ``lowering.widened_from``) gives it the float16
cooperative-matrix template (kernels ``MMC_…``) with the bias and the narrowing fused at its store,
as it gives a float16 ``x @ w.T + b``. The CPU interpreter runs that template when its selection is
forced (``coopmat_on_cpu``) and must give the scalar template's bits; bfloat16 has no matrix template
and keeps the scalar one; lavapipe (no cooperative matrices) keeps the scalar path and the CPU's bits.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits
from test_matmul import ordered_matmul
from test_matmul_coopmat import device_bound, gamma, magnitude, ulp_f16

import vkml
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.graph.node import Op
from vkml.ir import types as T
from vkml.ir.core import Instr, walk
from vkml.kernels import matmul as matmul_templates
from vkml.kernels.lowering import widened_from
from vkml.kernels.matmul import coopmat as kernels_matmul_coopmat
from vkml.kernels.matmul import coopmat2 as kernels_matmul_coopmat2
from vkml.kernels.matmul.tiled import MatmulConfig
from vkml.schedule import scheduler as schedule

H200 = DeviceFeatures.h200_like()


@pytest.fixture
def coopmat_on_cpu(monkeypatch):
    """The CPU interpreter runs float16 products on the cooperative-matrix template; yields the kernels run."""
    monkeypatch.setattr(kernels_matmul_coopmat, "applies", lambda features, a, b: a is T.float16 is b)
    names: list[str] = []
    listener = names.append
    debug.kernel_listeners.append(lambda kernel: listener(kernel.name))
    schedule.clear_template_cache()
    yield names
    debug.kernel_listeners.pop()
    schedule.clear_template_cache()


def _halves(seed: int, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float16) for shape in shapes]


def _products(names: list[str]) -> list[str]:
    return [name for name in names if name.startswith("MM")]


def _matmul_node(tensor):
    """The matmul node under ``tensor``'s graph (the first found from the root)."""
    stack, seen = [tensor.node], set()
    while stack:
        node = stack.pop()
        if node.op == Op.MATMUL:
            return node
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(node.srcs)
    raise AssertionError("no matmul node")


def _wide(*arrays):
    return [a.astype(np.float32) for a in arrays]


# ---------------------------------------------------------------- selection


def test_widened_half_operands_select_the_half_matrix_template(coopmat_on_cpu, monkeypatch):
    x, w, b = (vkml.tensor(a) for a in _halves(0, (40, 72), (45, 72), (45,)))
    node = _matmul_node(vkml.nn.functional.linear(x, w, b))
    assert node.dtype is T.float32 and all(s.dtype is T.float32 for s in node.srcs)  # the float32 sums
    mode = matmul_templates.mode(node)
    assert str(mode) == "matmul coopmat 32 64x64x64 sg32x32 v4"  # a side of 45: the small tiles
    # coopmat2 narrows to float16 in hardware: a float32 product of widened operands never takes it
    monkeypatch.setattr(kernels_matmul_coopmat2, "applies", lambda features, a, b, shape=None: a is T.float16 is b)
    monkeypatch.setattr(kernels_matmul_coopmat2, "fits", lambda node, features: True)
    assert isinstance(matmul_templates.mode(node), kernels_matmul_coopmat.Mode)
    assert isinstance(matmul_templates.mode((x @ w.T).node), kernels_matmul_coopmat2.Mode)  # the plain product does
    # bfloat16 (no matrix template), a float32 operand that is not a widened half, a computed one: the scalar tiles
    bx, bw, bb = (t.to(vkml.bfloat16) for t in (x, w, b))
    assert isinstance(matmul_templates.mode(_matmul_node(vkml.nn.functional.linear(bx, bw, bb))), MatmulConfig)
    for other in (w.float().exp(), vkml.tensor(w.float().numpy())):
        assert isinstance(matmul_templates.mode((x.float() @ other.T).node), MatmulConfig)


def test_the_device_features_decide_as_for_a_float16_product():
    """The selection passes the operands' half dtype to ``coopmat.applies``: an H200-like device takes the
    matrix template, lavapipe and the CPU interpreter do not."""
    x, w = (vkml.tensor(a) for a in _halves(1, (40, 72), (45, 72)))
    node = _matmul_node(x.float() @ w.float().T)
    a_dtype, b_dtype = (widened_from(s) for s in node.srcs)
    assert a_dtype is T.float16 is b_dtype
    assert kernels_matmul_coopmat.applies(H200, a_dtype, b_dtype)
    assert not kernels_matmul_coopmat.applies(DeviceFeatures.lavapipe_like(), a_dtype, b_dtype)
    assert isinstance(matmul_templates.mode(node), MatmulConfig)  # the CPU interpreter: scalar tiles


# ---------------------------------------------------------------- the forced template's bits on the CPU


def _linear_case(x, w, b, upstream):
    """Forward and backward of half ``linear`` with a bias: the output and the three gradients."""
    tx, tw, tb = (vkml.tensor(a).requires_grad_(True) for a in (x, w, b))
    y = vkml.nn.functional.linear(tx, tw, tb)
    y.backward(vkml.tensor(upstream))
    return [t.numpy() for t in (y, tx.grad, tw.grad, tb.grad)]


# (37, 29): tails in m, k and n; the others (a long k, a batch of inputs) run with -m stress
@pytest.mark.parametrize(
    "shape",
    [(37, 29), *(pytest.param(shape, marks=pytest.mark.stress) for shape in ((130, 72), (1, 300), (3, 20, 64)))],
    ids=str,
)
def test_half_linear_forward_and_backward_on_the_template_give_the_scalar_bits(shape, coopmat_on_cpu, monkeypatch):
    x, w, b = _halves(sum(shape), shape, (45, shape[-1]), (45,))
    upstream = _halves(2, (*shape[:-1], 45))[0]
    scalar_names = []
    with monkeypatch.context() as scalar:  # the scalar tiles: the selection as on a device without matrices
        scalar.setattr(kernels_matmul_coopmat, "applies", lambda features, a, b: False)
        schedule.clear_template_cache()
        debug.kernel_listeners.append(lambda kernel: scalar_names.append(kernel.name))
        try:
            want = _linear_case(x, w, b, upstream)
        finally:
            debug.kernel_listeners.pop()
    schedule.clear_template_cache()
    coopmat_on_cpu.clear()
    got = _linear_case(x, w, b, upstream)
    # before: the forward, the input's and the weight's gradients were MM_… (scalar float32 FMA on cast operands)
    assert _products(scalar_names) and all(name.startswith("MM_") for name in _products(scalar_names))
    products = _products(coopmat_on_cpu)
    assert len(products) == 3 and all(name.startswith("MMC_") for name in products), coopmat_on_cpu
    assert products[0].startswith("MMC_to_f16_add_")  # the bias added in float32 and one narrowing, fused
    for what, g, s in zip(("output", "input grad", "weight grad", "bias grad"), got, want):
        assert_same_bits(g, s, f"{shape} {what}")
    # and the numbers: the float32 sums in ascending k, the bias added in float32, one rounding to float16
    x32, w32, b32, g32 = _wide(x, w, b, upstream)
    assert_same_bits(got[0], (ordered_matmul(x32, np.ascontiguousarray(w32.T)) + b32).astype(np.float16), "output")
    assert_same_bits(got[1], ordered_matmul(g32, w32).astype(np.float16), "input grad")
    if len(shape) == 2:  # (a batch's weight gradient adds the entries' float32 products over sum's tree)
        assert_same_bits(got[2], ordered_matmul(np.ascontiguousarray(g32.T), x32).astype(np.float16), "weight grad")


def test_half_addmm_and_baddbmm_on_the_template_round_once(coopmat_on_cpu):
    c, a, m = _halves(3, (37, 45), (37, 29), (29, 45))
    got = vkml.addmm(vkml.tensor(c), vkml.tensor(a), vkml.tensor(m), beta=0.5, alpha=2).numpy()
    c32, a32, m32 = _wide(c, a, m)
    assert_same_bits(got, (0.5 * c32 + 2 * ordered_matmul(a32, m32)).astype(np.float16), "addmm")
    c, a, m = _halves(4, (3, 37, 45), (3, 37, 72), (3, 72, 45))
    got = vkml.baddbmm(vkml.tensor(c), vkml.tensor(a), vkml.tensor(m)).numpy()
    c32, a32, m32 = _wide(c, a, m)
    assert_same_bits(got, (c32 + ordered_matmul(a32, m32)).astype(np.float16), "baddbmm")
    names = _products(coopmat_on_cpu)
    assert [name.split("_")[0] for name in names] == ["MMC", "MMC"], names
    # the same bits as PyTorch's addmm wherever its float32 sums are the ascending ones (a short K)
    c, a, m = _halves(5, (6, 32), (6, 8), (8, 32))
    expected = torch.addmm(*(torch.tensor(t) for t in (c, a, m)), beta=0.5, alpha=2).numpy()
    assert_same_bits(vkml.addmm(*(vkml.tensor(t) for t in (c, a, m)), beta=0.5, alpha=2).numpy(), expected, "torch")


def test_an_autocast_float16_linear_takes_the_template(coopmat_on_cpu):
    """``nn.Linear`` (float32 parameters) under float16 autocast: the operands are float32 cast to float16
    (rounded in the loads) then widened; the matrix template, the ascending sums' bits, PyTorch's values."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((40, 16)).astype(np.float32)
    torch.manual_seed(6)
    layer = torch.nn.Linear(16, 45)
    ours = vkml.nn.Linear(16, 45)
    ours.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in layer.state_dict().items()})
    with torch.autocast(device_type="cpu", dtype=torch.float16):
        expected = layer(torch.tensor(x))
    with vkml.autocast(device_type="cpu", dtype=vkml.float16):
        got = ours(vkml.tensor(x))
    assert got.dtype is vkml.float16 and expected.dtype is torch.float16
    # PyTorch's float32 sums come in its own order: a sum that cancels may end a float16 unit apart
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=2**-10, atol=2**-14)
    (product,) = _products(coopmat_on_cpu)
    assert product.startswith("MMC_to_f16_add_to_f32_"), product
    x16, w16, b16 = x.astype(np.float16), layer.weight.detach().numpy().astype(np.float16), layer.bias.detach().numpy()
    want = ordered_matmul(*_wide(x16, np.ascontiguousarray(w16.T))) + b16.astype(np.float16).astype(np.float32)
    assert_same_bits(got.numpy(), want.astype(np.float16), "the ascending sums")


def test_bfloat16_linear_keeps_the_scalar_tiles(coopmat_on_cpu):
    x, w, b = (vkml.tensor(a.astype(np.float32)).to(vkml.bfloat16) for a in _halves(7, (37, 29), (45, 29), (45,)))
    got = vkml.nn.functional.linear(x, w, b).float().numpy()
    (product,) = _products(coopmat_on_cpu)
    assert product.startswith("MM_"), product
    x32, w32, b32 = (t.float().numpy() for t in (x, w, b))
    want = torch.tensor(ordered_matmul(x32, np.ascontiguousarray(w32.T)) + b32).to(torch.bfloat16).float().numpy()
    assert_same_bits(got, want, "bfloat16 linear")


# ---------------------------------------------------------------- the kernel


def test_the_kernel_loads_the_float16_buffers_and_validates():
    """The widened operands are staged from the float16 buffers as stored (vector loads where the innermost
    dim holds whole groups of four), not loaded as float32 and narrowed back."""
    x, w = (vkml.tensor(np.ones(s, np.float16)) for s in ((256, 256), (256, 256)))
    bias = vkml.tensor(np.ones(256, np.float16))
    root = vkml.nn.functional.linear(x, w, bias).node
    plan = schedule.Plan([root])
    (main,) = plan.chains[id(root)]
    template = kernels_matmul_coopmat.lower_matmul_coopmat(root, main, set(plan.roots), frozenset(), 32)
    kernel = template.kernels[0].kernel
    # x (k innermost) in vector loads; w.T (k contiguous, n innermost) in groups of four gathered loads
    vector_loaded = {s.attrs[0] for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "vload"}
    assert len(vector_loaded) == 1, vector_loaded
    assert kernel.vector_shared() == {"a_tile", "b_tile"}
    # the staging loads float16 as stored: the kernel's only narrowings are the epilogue's, one per output
    shape = kernels_matmul_coopmat.DEFAULT
    outputs = (shape.sub_m // 16) * (shape.sub_n // 16) * (16 * 16 // 32)  # an invocation's, 32-wide subgroups
    narrowings = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "f16_from_bits"]
    assert len(narrowings) == outputs
    assert kernel.name.startswith("MMC_to_f16_add_")
    compiled = compile_kernel(kernel, H200)  # spirv-val
    assert "OpCooperativeMatrixMulAddKHR" in compiled.asm


# ---------------------------------------------------------------- on the Vulkan device present


def test_the_device_runs_half_linear_with_a_bias_on_the_path_its_features_choose(gpu):
    x, w, b = _halves(8, (150, 300), (140, 300), (140,))
    cpu = vkml.nn.functional.linear(*(vkml.tensor(a) for a in (x, w, b))).numpy()
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    try:
        first = vkml.nn.functional.linear(*(vkml.tensor(a, device=gpu) for a in (x, w, b))).numpy()
        again = vkml.nn.functional.linear(*(vkml.tensor(a, device=gpu) for a in (x, w, b))).numpy()
    finally:
        debug.kernel_listeners.pop()
    assert_same_bits(again, first, "the same bits every run")
    products = _products(names)
    if kernels_matmul_coopmat.applies(gpu.features, T.float16, T.float16):
        assert products and all(name.startswith("MMC_") for name in products), names
        # both sums within their bounds of the exact one; the bias adds in float32, then one rounding each
        x64, w64 = x.astype(np.float64), np.ascontiguousarray(w.T).astype(np.float64)
        both = (gamma(300) + device_bound(300)) * magnitude(x64, w64)
        slack = ulp_f16(np.maximum(np.abs(cpu), np.abs(first)).astype(np.float64))
        assert np.all(np.abs(first.astype(np.float64) - cpu.astype(np.float64)) <= both + slack)
    else:  # lavapipe: the scalar tiles and the CPU's bits
        assert products and all(name.startswith("MM_") for name in products), names
        assert_same_bits(first, cpu, "the scalar path on the device")
