"""The tiled matmul kernel (vkml/kernels/matmul/tiled.py): its stated order, bound, tails and fusion.

Every float output adds its float32 products in ascending k, starting from -0.0. The oracle
below is that order written in numpy; the CPU interpreter must match it bit for bit for any
tile configuration, and a Vulkan device must match the CPU bit for bit unless its tiles use
fused multiply-adds (large GPUs, not lavapipe): then it must stay within the stated bound.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from optest import assert_same_bits, from_torch, fused_multiply_add, random_floats, to_torch

import vkml
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.kernels import matmul as matmul_templates
from vkml.kernels.matmul import coopmat as kernels_matmul_coopmat
from vkml.kernels.matmul import coopmat2 as kernels_matmul_coopmat2
from vkml.kernels.matmul import tiled as kernels_matmul
from vkml.kernels.matmul.tiled import MatmulConfig, choose_config
from vkml.schedule import scheduler as schedule

U = 2.0**-24  # unit roundoff of float32


def ordered_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The stated order: float32 products added for k = 0, 1, ... from -0.0, rounded once to the result dtype."""
    out_dtype = np.result_type(a, b)
    a2 = (a[None, :] if a.ndim == 1 else a).astype(np.float32)
    b2 = (b[:, None] if b.ndim == 1 else b).astype(np.float32)
    shape = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + (a2.shape[-2], b2.shape[-1])
    acc = np.full(shape, -0.0, np.float32)
    with np.errstate(all="ignore"):
        for k in range(a2.shape[-1]):
            acc = acc + a2[..., :, k : k + 1] * b2[..., k : k + 1, :]
    out = acc.astype(out_dtype)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


def fused_order_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The same order with each step a fused multiply-add (one rounding), as a device that fuses ``mul_add``."""
    acc = np.full((a.shape[0], b.shape[1]), -0.0, np.float32)
    for k in range(a.shape[1]):
        acc = fused_multiply_add(np.broadcast_to(a[:, k : k + 1], acc.shape), np.broadcast_to(b[k], acc.shape), acc)
    return acc


def gamma(n: int) -> float:
    return n * U / (1 - n * U)


def fuses(device, shape_a, shape_b, dtype=np.float32) -> bool:
    """Whether ``device``'s tiles for this product accumulate with ``mul_add`` or, for float16 operands, on
    cooperative matrices (then only the bound holds; tests/test_matmul_coopmat.py checks that path)."""
    features = getattr(device, "features", None)
    if dtype == np.float16 and kernels_matmul_coopmat.applies(features, vkml.float16, vkml.float16):
        return True
    return choose_config(features, shape_a[-2] if len(shape_a) > 1 else 1, shape_b[-1], shape_a[-1]).fused


def assert_like_cpu(got: np.ndarray, cpu: np.ndarray, device, a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Vulkan's result: the CPU's bits, or within twice the bound of them where the device fuses."""
    if not fuses(device, a.shape, b.shape):
        assert_same_bits(got, cpu, what)
        return
    magnitude = from_torch(torch.matmul(to_torch(np.abs(a)).double(), to_torch(np.abs(b)).double()))
    assert np.all(np.abs(got.astype(np.float64) - cpu) <= 2 * gamma(a.shape[-1]) * magnitude), what


def on(device, *arrays):
    return [vkml.tensor(a, device=device) for a in arrays]


@pytest.fixture(scope="module")
def gpu():
    return vkml.device("vulkan:0")


SHAPES = [
    ((64, 64), (64, 64)),  # whole tiles
    ((37, 29), (29, 45)),  # tails in m, k and n
    ((1, 300), (300, 70)),  # m = 1: a row vector
    ((70, 300), (300, 1)),  # n = 1
    ((9, 1), (1, 13)),  # k = 1: outer product
    ((300,), (300,)),  # 1-D · 1-D
    ((300,), (300, 5)),
    ((6, 300), (300,)),
    ((3, 17, 9), (3, 9, 11)),  # batched
    ((2, 1, 17, 9), (4, 9, 11)),  # broadcast batch dims
    ((5,), (2, 5, 3)),  # 1-D with a batch
    ((129, 8), (8, 33)),  # more than one tile of C on the CPU
]


@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_shapes_follow_the_order_and_stay_within_the_bound(shape_a, shape_b, gpu):
    a, b = random_floats(shape_a, seed=1), random_floats(shape_b, seed=2)
    want = ordered_matmul(a, b)
    cpu = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert_same_bits(cpu, want, f"cpu {shape_a} @ {shape_b}")
    ta, tb = on(gpu, a, b)
    assert_like_cpu((ta @ tb).numpy(), cpu, gpu, a, b, f"vulkan {shape_a} @ {shape_b}")
    exact = from_torch(torch.matmul(to_torch(a).double(), to_torch(b).double()))
    magnitude = from_torch(torch.matmul(to_torch(np.abs(a)).double(), to_torch(np.abs(b)).double()))
    assert np.all(np.abs(cpu - exact) <= gamma(shape_a[-1]) * magnitude)
    assert cpu.shape == tuple(torch.matmul(to_torch(a), to_torch(b)).shape)


@pytest.mark.parametrize(
    "shape_a, shape_b", [((0, 4), (4, 3)), ((3, 4), (4, 0)), ((3, 0), (0, 5)), ((2, 0, 4), (4, 3))]
)
def test_empty_operands(shape_a, shape_b, gpu):
    a, b = np.ones(shape_a, np.float32), np.ones(shape_b, np.float32)
    want = from_torch(to_torch(a) @ to_torch(b))  # k = 0 gives +0.0, as PyTorch
    assert_same_bits((vkml.tensor(a) @ vkml.tensor(b)).numpy(), want, "cpu")
    ta, tb = on(gpu, a, b)
    assert_same_bits((ta @ tb).numpy(), want, "vulkan")


def test_error_bound_holds_on_cancelling_sums():
    # Large terms that cancel leave a small result: the bound is relative to Σ|a||b|, not to |c|.
    g = np.random.default_rng(3)
    k = 2000
    a = (g.standard_normal((4, k)) * np.exp2(g.integers(-20, 20, (4, k)))).astype(np.float32)
    b = (g.standard_normal((k, 5)) * np.exp2(g.integers(-20, 20, (k, 5)))).astype(np.float32)
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert_same_bits(got, ordered_matmul(a, b), "order")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    magnitude = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert np.all(np.abs(got - exact) <= gamma(k) * magnitude)


def test_float16_accumulates_in_float32_and_rounds_once(gpu):
    a = (random_floats((33, 70), seed=4) * 4).astype(np.float16)
    b = (random_floats((70, 19), seed=5) * 4).astype(np.float16)
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert got.dtype == np.float16
    assert_same_bits(got, ordered_matmul(a, b), "float16 @ float16")
    ta, tb = on(gpu, a, b)
    if not fuses(gpu, a.shape, b.shape, a.dtype):
        assert_same_bits((ta @ tb).numpy(), got, "float16 on vulkan")
    # Two dtypes raise, as PyTorch (tests/test_dtype_rules.py); a conversion fuses into the product's loads.
    mixed = (vkml.tensor(a).float() @ vkml.tensor(b.astype(np.float32))).numpy()
    assert_same_bits(mixed, ordered_matmul(a.astype(np.float32), b.astype(np.float32)), "float16 @ float32")
    ints = (
        vkml.tensor(np.arange(6, dtype=np.int32).reshape(2, 3)).float() @ vkml.tensor(b[:3].astype(np.float32))
    ).numpy()
    assert_same_bits(
        ints, ordered_matmul(np.arange(6, dtype=np.float32).reshape(2, 3), b[:3].astype(np.float32)), "int"
    )


def test_nan_inf_and_signed_zero(gpu):
    inf, nan = np.inf, np.nan
    a = np.array(
        [[nan, 1.0, 0.0], [inf, 1.0, 0.0], [inf, -inf, 0.0], [0.0, inf, 0.0], [-1.0, 0.0, -0.0], [1e38, 1e38, 0.0]],
        np.float32,
    )
    b = np.array([[1.0, 0.0], [1.0, -2.0], [5.0, 0.0]], np.float32)
    want = ordered_matmul(a, b)
    got = (vkml.tensor(a) @ vkml.tensor(b)).numpy()
    assert_same_bits(got, want, "cpu")
    ta, tb = on(gpu, a, b)
    assert_same_bits((ta @ tb).numpy(), got, "vulkan")  # the specials come out the same fused or not
    torch_result = from_torch(to_torch(a) @ to_torch(b))
    assert np.array_equal(np.isnan(got), np.isnan(torch_result))  # NaN and inf as PyTorch
    assert np.array_equal(got[np.isinf(got)], torch_result[np.isinf(got)])
    # -0.0 products stay -0.0, also when k is not a multiple of the K-step (the padded products are -0.0).
    assert np.signbit(got[4, 1]) and got[4, 1] == 0


@pytest.mark.parametrize("k", [1, 5, 8, 13])
def test_negative_zero_sums_survive_the_k_tail(k, gpu):
    a = np.full((3, k), -1.0, np.float32)
    b = np.zeros((k, 4), np.float32)
    for device in ("cpu", gpu):
        ta, tb = on(device, a, b)
        got = (ta @ tb).numpy()
        assert np.all(got == 0) and np.all(np.signbit(got)), f"k={k} on {device}: {got}"


CONFIGS = [
    MatmulConfig(32, 32, 8, 2, 2),
    MatmulConfig(128, 128, 8, 8, 8),  # the large-GPU tiles
    MatmulConfig(16, 64, 4, 4, 4),  # a partial round of staging loads
    MatmulConfig(8, 4, 2, 1, 1),  # tiny tiles: many workgroups and K-steps
    MatmulConfig(1, 32, 16, 1, 1),  # row-vector tiles
    MatmulConfig(128, 128, 8, 8, 8, fused=True),  # the interpreter rounds mul_add twice: the same bits
    MatmulConfig(64, 32, 8, 4, 2, packed=True),  # adjacent rows and columns per invocation
    MatmulConfig(64, 128, 8, 8, 8, packed=True),  # NARROW_GPU_TILES: a side of 64 (conv2d's products)
]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_bits_do_not_depend_on_the_tiles(config, monkeypatch, gpu):
    monkeypatch.setattr(kernels_matmul, "choose_config", lambda features, m, n, k: config)
    a, b = random_floats((2, 37, 29), seed=6), random_floats((29, 45), seed=7)
    want = ordered_matmul(a, b)
    assert_same_bits((vkml.tensor(a) @ vkml.tensor(b)).numpy(), want, f"{config} on cpu")
    got = (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy()
    if not config.fused:  # (a fused kernel: see the next test)
        assert_same_bits(got, want, f"{config} on vulkan")


def test_a_fused_kernel_follows_one_of_the_two_orders(monkeypatch, gpu):
    config = MatmulConfig(32, 32, 8, 4, 4, fused=True)
    monkeypatch.setattr(kernels_matmul, "choose_config", lambda features, m, n, k: config)
    a, b = random_floats((37, 300), seed=15), random_floats((300, 45), seed=16)
    unfused, fused = ordered_matmul(a, b), fused_order_matmul(a, b)
    assert (unfused != fused).any()  # the data tells the two apart
    assert_same_bits((vkml.tensor(a) @ vkml.tensor(b)).numpy(), unfused, "cpu")
    got = (vkml.tensor(a, device=gpu) @ vkml.tensor(b, device=gpu)).numpy()
    assert np.array_equal(got, unfused) or np.array_equal(got, fused), "a device rounds every step once, or twice"
    kernel = _matmul_kernel(config, a.shape, b.shape, lambda y: y)
    assert "%glsl Fma" in compile_kernel(kernel, DeviceFeatures.lavapipe_like()).asm


def test_modes_name_their_configs():
    # A config is its own mode: frozen, so it keys the template cache as it is (no text parsed back).
    for config in CONFIGS:
        assert hash(config) == hash(replace(config)) and config == replace(config)
        assert str(config).startswith(f"{config.bm}x{config.bn}x{config.bk}/{config.tm}x{config.tn}")


def test_configs_fit_the_devices(monkeypatch):
    for features in (None, DeviceFeatures.lavapipe_like(), DeviceFeatures.h200_like(), DeviceFeatures()):
        for m, n, k in [(4096, 4096, 4096), (1, 4096, 64), (4096, 1, 64), (3, 5, 2), (100, 7, 1)]:
            c = choose_config(features, m, n, k)
            limit = features.max_workgroup_invocations if features else 1024
            assert 1 <= c.threads <= limit
            assert c.bm % c.tm == 0 and c.bn % c.tn == 0
            if features:
                assert c.shared_bytes <= features.max_compute_shared_memory_size
            assert c.bm <= max(2 * m, c.tm) and c.bn <= max(2 * n, c.tn)  # small sides get small tiles
    monkeypatch.setenv("VKML_MATMUL_FMA", "0")
    assert choose_config(DeviceFeatures.h200_like(), 4096, 4096, 4096) == MatmulConfig(128, 128, 8, 8, 8, False, True)
    monkeypatch.setattr(kernels_matmul, "SMALL_GPU_TILES", kernels_matmul.TileFamily(16, 16, 4, 4, 64))
    assert choose_config(DeviceFeatures.lavapipe_like(), 4096, 4096, 4096).bk == 16  # 32 KiB of shared memory
    assert not choose_config(DeviceFeatures.lavapipe_like(), 4096, 4096, 4096).fused
    assert not choose_config(None, 4096, 4096, 4096).fused
    assert not choose_config(DeviceFeatures.h200_like(), 4096, 4096, 4096).fused  # VKML_MATMUL_FMA=0: the CPU's bits
    monkeypatch.setenv("VKML_MATMUL_FMA", "1")
    assert choose_config(DeviceFeatures.h200_like(), 4096, 4096, 4096).fused
    assert choose_config(DeviceFeatures.h200_like(), 64, 64, 64).fused  # 1: every size
    assert not choose_config(DeviceFeatures.lavapipe_like(), 4096, 4096, 4096).fused  # small tiles never fuse
    monkeypatch.delenv("VKML_MATMUL_FMA")  # the default, auto: large products only
    assert choose_config(DeviceFeatures.h200_like(), 4096, 4096, 4096).fused
    assert choose_config(DeviceFeatures.h200_like(), 512, 512, 512).fused  # exactly FMA_MIN_MULTIPLY_ADDS
    assert not choose_config(DeviceFeatures.h200_like(), 512, 512, 511).fused
    assert not choose_config(DeviceFeatures.h200_like(), 60, 64, 64).fused  # the demo's layers keep the CPU's bits
    assert not choose_config(DeviceFeatures.lavapipe_like(), 4096, 4096, 4096).fused
    monkeypatch.setenv("VKML_MATMUL_FMA", "bogus")  # anything else means auto
    assert choose_config(DeviceFeatures.h200_like(), 4096, 4096, 4096).fused


def _matmul_kernel(config: MatmulConfig, shape_a, shape_b, epilogue):
    x, w = vkml.tensor(np.ones(shape_a, np.float32)), vkml.tensor(np.ones(shape_b, np.float32))
    root = epilogue(x @ w).node
    plan = schedule.Plan([root])
    (main,) = plan.chains[id(root)]
    return kernels_matmul.lower_matmul(root, main, set(plan.roots), frozenset(), config).kernels[0].kernel


@pytest.mark.parametrize("features", [DeviceFeatures.h200_like(), DeviceFeatures.lavapipe_like()], ids=["h200", "lvp"])
def test_kernels_for_each_device_validate(features):
    for shape_a, shape_b in [((256, 256), (256, 256)), ((37, 29), (29, 45)), ((2, 1, 30), (30, 7))]:
        config = choose_config(features, shape_a[-2], shape_b[-1], shape_a[-1])
        kernel = _matmul_kernel(config, shape_a, shape_b, lambda y: vkml.relu(y + 1.0))
        compile_kernel(kernel, features)  # assembles and runs spirv-val


def _dispatches(*tensors) -> int:
    debug.reset_counters()
    vkml.realize(*tensors)
    return debug.counters()["dispatches"]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_epilogue_is_fused_and_exact(dtype, gpu):
    x = random_floats((40, 24), seed=8).astype(dtype)
    w = random_floats((24, 20), seed=9).astype(dtype)
    b = random_floats((20,), seed=10).astype(dtype)
    results = []
    for device in ("cpu", gpu):
        tx, tw, tb = on(device, x, w, b)
        y = vkml.nn.functional.gelu(tx @ tw + tb) * 0.5
        # the workgroup-scope template (VK_NV_cooperative_matrix2 devices) computes the product alone
        plain_product_only = isinstance(matmul_templates.mode((tx @ tw).node), kernels_matmul_coopmat2.Mode)
        assert _dispatches(y) == (2 if plain_product_only else 1)
        results.append(y.numpy())
        xw = (tx @ tw).realize()  # the same ops one kernel at a time
        assert_same_bits(results[-1], (vkml.nn.functional.gelu(xw + tb) * 0.5).numpy(), f"fused on {device}")
    if not fuses(gpu, x.shape, w.shape, dtype):
        assert_same_bits(results[1], results[0], "vulkan vs cpu")


def test_operands_that_compute_run_first_and_views_are_inlined():
    x = vkml.tensor(random_floats((16, 12), seed=11))
    w = vkml.tensor(random_floats((16, 12), seed=12))
    assert _dispatches(x @ w.T) == 1  # a transposed operand is index arithmetic
    assert _dispatches(x.T[::2] @ w[:, 1::2]) == 1
    assert _dispatches((x * 2) @ w.T) == 2  # x * 2 is computed once, not once per column tile
    y = (x * 2).T @ w
    assert _dispatches(y) == 2
    assert_same_bits(y.numpy(), ordered_matmul((x.numpy() * 2).T, w.numpy()), "(x * 2).T @ w")
    s = (x @ w.T).sum()  # a reduction of a product: two kernels
    assert _dispatches(s) == 2


def test_gradients_flow_through_the_kernel(gpu):
    a, b = random_floats((2, 5, 7), seed=13), random_floats((7, 3), seed=14)
    grads = []
    for device in ("cpu", gpu):
        ta, tb = (vkml.tensor(v, device=device, requires_grad=True) for v in (a, b))
        (ta @ tb).relu().sum().backward()
        grads.append((ta.grad.numpy(), tb.grad.numpy()))
    pa, pb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    (pa @ pb).relu().sum().backward()
    for got, want in zip(grads[0], (pa.grad.numpy(), pb.grad.numpy())):
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5)
    for cpu, vk in zip(*grads):
        if fuses(gpu, a.shape, b.shape):
            assert np.allclose(vk, cpu, rtol=1e-5, atol=1e-5)
        else:
            assert_same_bits(vk, cpu, "gradient on vulkan vs cpu")


@pytest.mark.parametrize("layout_a", ["rows", "transposed", "flipped"])
@pytest.mark.parametrize("layout_b", ["rows", "transposed", "strided"])
def test_operand_layouts_give_the_same_bits(layout_a, layout_b, gpu):
    a, b = random_floats((37, 29), seed=17), random_floats((29, 45), seed=18)
    want = ordered_matmul(a, b)
    for device in ("cpu", gpu):
        ta, tb = _in_layout(a, layout_a, device), _in_layout(b, layout_b, device)
        assert_like_cpu((ta @ tb).numpy(), want, device, a, b, f"{layout_a} @ {layout_b} on {device}")


def _in_layout(x: np.ndarray, layout: str, device) -> vkml.Tensor:
    if layout == "transposed":
        return vkml.tensor(np.ascontiguousarray(x.T), device=device).T
    if layout == "flipped":
        return vkml.tensor(np.ascontiguousarray(x[::-1, ::-1]), device=device).flip((0, 1))
    if layout == "strided":
        wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
        wide[:, ::2] = x
        return vkml.tensor(wide, device=device)[:, ::2]
    return vkml.tensor(x, device=device)


def test_staging_reads_along_the_contiguous_axis():
    x, w = vkml.tensor(np.ones((8, 4), np.float32)), vkml.tensor(np.ones((6, 4), np.float32))
    mm = (x @ w.T).node  # nn.Linear's product: B = w.T has k contiguous
    assert kernels_matmul._contiguous_along_k(mm.srcs[0], True)
    assert kernels_matmul._contiguous_along_k(mm.srcs[1], False)
    mm = (x.T @ x).node  # a weight gradient: A = x.T has m contiguous, B = x has n contiguous
    assert not kernels_matmul._contiguous_along_k(mm.srcs[0], True)
    assert not kernels_matmul._contiguous_along_k(mm.srcs[1], False)


def test_two_layers_are_two_dispatches():
    g = np.random.default_rng(19)
    x, w1, w2 = (vkml.tensor(g.standard_normal(s, dtype=np.float32)) for s in ((64, 2), (128, 2), (3, 128)))
    hidden = vkml.relu(vkml.nn.functional.linear(x, w1))  # one kernel: the product and its relu
    y = vkml.nn.functional.linear(hidden, w2)  # the second product reads it
    assert _dispatches(y) == 2
    h = ordered_matmul(x.numpy(), w1.numpy().T)
    assert_same_bits(y.numpy(), ordered_matmul(np.maximum(h, 0), w2.numpy().T), "two layers")


# ---------------------------------------------------------------- split k


def test_split_k_chunks_depend_on_the_shape_alone():
    from vkml.frontend.operators import split_k_chunks

    assert split_k_chunks(1, 576, 64, 200704) == 98  # a 3×3 conv's weight gradient at batch 64: 9 tiles, chunks ≥ 2048
    assert split_k_chunks(1, 4096, 4096, 4096) == 1  # enough tiles
    assert split_k_chunks(1, 64, 64, 4095) == 1  # k too short for two chunks of 2048
    assert split_k_chunks(1, 8, 8, 2 * 4099) == 2  # 4099 is prime: the only divisor that fits
    assert split_k_chunks(1100, 8, 8, 1 << 20) == 1  # a batch that fills the GPU already
    assert split_k_chunks(300, 8, 8, 1 << 20) == 4  # 300 tiles: four chunks bring it past SPLIT_K_TILES


@pytest.mark.parametrize("where", ["cpu", "vulkan"])
def test_a_split_product_adds_its_chunks_over_the_sum_tree(where, gpu):
    """(16, 8192) @ (8192, 8) splits k in 4: the same bits as the 4 chunk products added by ``sum``, on
    every device (the order is the shapes'), within the page's bound of the float64 product."""
    device = gpu if where == "vulkan" else vkml.device("cpu")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((16, 8192), np.float32), rng.standard_normal((8192, 8), np.float32)
    got = (vkml.tensor(a, device=device) @ vkml.tensor(b, device=device)).numpy()
    chunks = [vkml.tensor(a[:, i : i + 2048]) @ vkml.tensor(b[i : i + 2048]) for i in range(0, 8192, 2048)]
    assert_same_bits(got, vkml.stack(chunks).sum(0).numpy(), "split product")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    gamma = (2048 + 3) * 2.0**-24
    assert np.all(np.abs(got - exact) <= gamma * (np.abs(a).astype(np.float64) @ np.abs(b)))
