"""The large GPUs' tiles for skinny products (kernels_matmul.skinny_config, issue 7): the CPU's bits.

K ≤ 8 gets wide unpacked tiles; a side ≤ 8 with a longer K gets one output per owning
invocation, long K-steps and staging-only invocations. Neither may change the order of the
sum, so on every shape (tails, batches, transposed operands, epilogues) the CPU interpreter
and lavapipe, running the tiles an H200 picks, must give the bits of ``ordered_matmul``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from optest import assert_same_bits, random_floats
from test_matmul import _dispatches, _matmul_kernel, ordered_matmul

import vkml
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.kernels import matmul as matmul_templates
from vkml.kernels.matmul import tiled as kernels_matmul
from vkml.kernels.matmul.tiled import MatmulConfig, choose_config, skinny_config

H200 = DeviceFeatures.h200_like()


def h200_tiles(features, m: int, n: int, k: int) -> MatmulConfig:
    """The H200's tiles, unfused, with K-steps halved to fit ``features``' shared memory (lavapipe has 32 KiB)."""
    config = replace(choose_config(H200, m, n, k), fused=False)
    while features is not None and config.shared_bytes > features.max_compute_shared_memory_size:
        config = replace(config, bk=config.bk // 2)
    return config


def _relu_linear(x, w, b):
    return vkml.relu(x @ w.T + b)


def _masked(g, w, h):
    return (g @ w) * (h > 0)


def _linear(h, w, b):
    return h @ w.T + b


# (label, operand shapes, vkml function, the same in numpy over ordered_matmul)
CASES = [
    (
        "relu(x @ w.T + b), K = 2",
        [(70, 2), (300, 2), (300,)],
        _relu_linear,
        lambda x, w, b: np.maximum(ordered_matmul(x, w.T) + b, np.float32(0)),
    ),
    (
        "(g @ w) * (h > 0), K = 3",
        [(70, 3), (3, 150), (70, 150)],
        _masked,
        lambda g, w, h: ordered_matmul(g, w) * (h > 0),
    ),
    ("batched, K = 3", [(2, 40, 3), (3, 150)], lambda a, b: a @ b, ordered_matmul),
    ("a.T @ b, K = 1", [(1, 70), (1, 130)], lambda a, b: a.T @ b, lambda a, b: ordered_matmul(a.T, b)),
    ("h @ w.T + b, N = 3", [(37, 300), (3, 300), (3,)], _linear, lambda h, w, b: ordered_matmul(h, w.T) + b),
    ("h.T @ g, N = 3", [(300, 37), (300, 3)], lambda h, g: h.T @ g, lambda h, g: ordered_matmul(h.T, g)),
    ("x.T @ g, M = 2", [(300, 2), (300, 45)], lambda x, g: x.T @ g, lambda x, g: ordered_matmul(x.T, g)),
    ("N = 2, K tail of 1 (129)", [(70, 129), (129, 2)], lambda a, b: a @ b, ordered_matmul),
    ("N = 1, K = 9", [(50, 9), (9, 1)], lambda a, b: a @ b, ordered_matmul),
    ("1-D @ 2-D: M = 1", [(300,), (300, 45)], lambda a, b: a @ b, ordered_matmul),
    ("batched x @ w.T, N = 3", [(3, 21, 300), (3, 300)], lambda a, w: a @ w.T, lambda a, w: ordered_matmul(a, w.T)),
    ("batched both, M = 5, N = 7", [(2, 5, 130), (2, 130, 7)], lambda a, b: a @ b, ordered_matmul),
]


@pytest.mark.parametrize("label, shapes, fn, oracle", CASES, ids=[c[0] for c in CASES])
def test_h200_skinny_tiles_give_the_cpu_bits(label, shapes, fn, oracle, monkeypatch, gpu):
    arrays = [random_floats(shape, seed=20 + i) for i, shape in enumerate(shapes)]
    want = oracle(*arrays)
    monkeypatch.setattr(kernels_matmul, "choose_config", h200_tiles)
    for device in ("cpu", gpu):
        tensors = [vkml.tensor(a, device=device) for a in arrays]
        y = fn(*tensors)
        mm = _product(y.node)
        (m, k), n = mm.srcs[0].shape[-2:], mm.shape[-1]
        assert h200_tiles(None, m, n, k) == skinny_config(m, n, k), f"{label}: the H200 takes the skinny tiles"
        assert _dispatches(y) == 1  # the epilogue stays in the product's kernel
        assert_same_bits(y.numpy(), want, f"{label} on {device}")


def _product(node):
    while node.op != "matmul":
        node = next(s for s in node.srcs if s.op == "matmul" or (not s.realized and s.srcs))
    return node


CONFIGS = [
    MatmulConfig(16, 4, 32, 1, 1, invocations=96, pad=1),  # staging-only invocations, partial staging rounds
    MatmulConfig(8, 8, 16, 2, 1, invocations=64),  # owners of two rows each, fewer than a warp
    MatmulConfig(16, 4, 64, 1, 4, invocations=64, pad=1),  # one owner per row, 4 columns each
    MatmulConfig(2, 32, 8, 1, 1, invocations=128, pad=0),
    MatmulConfig(32, 64, 4, 4, 4),  # the short-K layout: unpacked columns 16 invocations wide
]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_staging_only_invocations_change_no_bits(config, monkeypatch, gpu):
    monkeypatch.setattr(kernels_matmul, "choose_config", lambda features, m, n, k: config)
    a, b = random_floats((2, 37, 29), seed=6), random_floats((29, 45), seed=7)
    want = ordered_matmul(a, b)
    for device in ("cpu", gpu):
        got = (vkml.tensor(a, device=device) @ vkml.tensor(b, device=device)).numpy()
        assert_same_bits(got, want, f"{config} on {device}")
    assert matmul_templates.mode((vkml.tensor(a) @ vkml.tensor(b)).node) == config
    assert config.threads == max(config.invocations, config.owners)


# Issue 7's products at the MLP's size (2 → 4096 → 4096 → 3, batches of 4096), with their tiles' kinds.
ISSUE_7 = [(4096, 4096, 2), (4096, 4096, 3), (4096, 3, 4096), (4096, 2, 4096), (2, 4096, 4096), (3, 4096, 4096)]


@pytest.mark.parametrize("m, n, k", ISSUE_7)
def test_only_large_gpus_take_the_skinny_tiles(m, n, k, monkeypatch):
    monkeypatch.setenv("VKML_MATMUL_FMA", "0")
    config = choose_config(H200, m, n, k)
    assert config == skinny_config(m, n, k)
    assert config.shared_bytes <= H200.max_compute_shared_memory_size and config.threads <= 1024
    tiles = -(-m // config.bm) * -(-n // config.bn)
    if k <= kernels_matmul.SHORT_K:  # coalesced stores: a warp's 32 invocations write 32 adjacent outputs
        assert not config.packed and config.bn // config.tn >= 32 and tiles >= 1024
    else:  # one output per owner, and twice as many workgroups as the H200 has multiprocessors (132)
        assert config.tm == config.tn == 1 and config.threads > config.owners and tiles >= 128
        assert config.bk >= 128
    for features in (None, DeviceFeatures.lavapipe_like()):  # lavapipe and the interpreter keep their tiles
        assert choose_config(features, m, n, k) != skinny_config(m, n, k)


def test_skinny_kernels_for_the_h200_validate():
    shapes = [((4096, 2), (2, 4096)), ((1000, 1000), (1000, 3)), ((2, 1000), (1000, 300)), ((3, 9, 40), (40, 5))]
    for shape_a, shape_b in shapes:
        config = skinny_config(shape_a[-2], shape_b[-1], shape_a[-1])
        assert config is not None
        kernel = _matmul_kernel(config, shape_a, shape_b, lambda y: vkml.relu(y + 1.0))
        compile_kernel(kernel, H200)  # assembles and runs spirv-val
