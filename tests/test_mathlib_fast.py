"""The contract's cheap float32 routines: their bounds on dense samples, their bits on Vulkan, their cost.

exp, log, sigmoid and tanh were rewritten for the issue rate (exp in float32 alone past an exact
Cody-Waite step; the others float32 arithmetic with exact 12-bit halves in place of double-float
divisions; see mathlib/explog.py and mathlib/special.py);
erf's and gelu's tails divide the same way (``dd.quotient_short``); silu and mish are x times an
unrounded quotient from sigmoid's exp; sqrt estimates in float32 and rounds by an exact integer
residual (its bits are tests/test_mathlib.py's). Each keeps its documented bound, checked here
against a float64 reference on every 1999th float32 of the range where the function is not
constant (every float32 there with ``-m exhaustive``), computes the same bits on lavapipe as on
the CPU interpreter, and keeps its instruction count (bench/count_instructions.py, the H200's
kernel) under the figure it was rewritten to.
"""

from __future__ import annotations

import numpy as np
import pytest
from optest import erf64, gelu64, gelu_tanh64, sigmoid64
from test_mathlib import SPECIALS, THRESHOLDS, neighbours, ulp_distance

import vkml
from vkml.ir.interp.reference import evaluate
from vkml.ops import mathlib as M

# name -> (float64 reference, ulp bound, bit patterns [lo, hi) of the non-constant range, both
# signs where the function takes negative inputs, IR instructions an element at most)
ROUTINES = {
    "exp": (np.exp, 1, [(0x00000000, 0x42B20000), (0x80000000, 0xC2D00000)], 40),
    "log": (np.log, 1, [(0x00000000, 0x7F800000)], 52),
    "sigmoid": (sigmoid64, 2, [(0x00000000, 0x42DC0000), (0x80000000, 0xC2DC0000)], 73),
    "tanh": (np.tanh, 2, [(0x00000000, 0x41180000)], 81),
    "erf": (erf64, 2, [(0x00000000, 0x40A00000)], 188),
    "gelu": (gelu64, 2, [(0x00000000, 0x41800000), (0x80000000, 0xC1800000)], 164),
    "gelu_tanh": (gelu_tanh64, 2, [(0x00000000, 0x41400000), (0x80000000, 0xC1400000)], 162),
    "silu": (lambda x: x / (1.0 + np.exp(-x)), 2, [(0x00000000, 0x41A00000), (0x80000000, 0xC2DC0000)], 81),
    "mish": (lambda x: x * np.tanh(np.log1p(np.exp(x))), 2, [(0x00000000, 0x41A00000), (0x80000000, 0xC2DC0000)], 154),
}
# IR instructions an element at most of routines whose bounds tests/test_mathlib.py checks (sqrt's and
# div's bits against numpy's, pow's and log2's ulps), and which are cheap only on their common branch
OTHER_INSTRUCTIONS = {"sqrt": 43, "div": 72, "pow": 187, "log2": 122}
CHUNK = 1 << 22  # elements an interpreter call: bounds its memory


def _worst(name: str, stride: int) -> int:
    """The largest ulp distance of ``name`` on every ``stride``-th pattern of its ranges."""
    ref, _, ranges, _ = ROUTINES[name]
    worst = 0
    for lo, hi in ranges:
        for start in range(lo, hi, CHUNK * stride):
            u = np.arange(start, min(hi, start + CHUNK * stride), stride, dtype=np.uint64).astype(np.uint32)
            x = u.view(np.float32)
            with np.errstate(all="ignore"):
                d = ulp_distance(evaluate(getattr(M, name), x), ref(x.astype(np.float64)))
            worst = max(worst, int(d.max()))
    return worst


@pytest.mark.parametrize("name", list(ROUTINES))
def test_bound_on_every_1999th_float(name):
    assert _worst(name, 1999) <= ROUTINES[name][1]


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", list(ROUTINES))
def test_bound_on_every_float(name):
    assert _worst(name, 1) <= ROUTINES[name][1]


def test_same_bits_on_lavapipe(gpu):
    g = np.random.default_rng(5)
    x = np.concatenate(
        [
            SPECIALS,
            THRESHOLDS,
            -THRESHOLDS,
            g.uniform(-12, 12, 4096).astype(np.float32),
            np.float32(2.0) ** g.uniform(-149, 127, 4096).astype(np.float32),  # log's subnormals too
            np.float32([2.0**-12, -(2.0**-12), 9.5, -9.5, -110.0, 110.0]),
        ]
    )
    for name in [*ROUTINES, "sqrt"]:
        fn = {
            "gelu": vkml.nn.functional.gelu,
            "silu": vkml.nn.functional.silu,
            "mish": vkml.nn.functional.mish,
            "gelu_tanh": lambda t: vkml.nn.functional.gelu(t, approximate="tanh"),
        }.get(name) or getattr(vkml, name)
        cpu = fn(vkml.tensor(x)).numpy()
        vulkan = fn(vkml.tensor(x, device=gpu)).numpy()
        nan = np.isnan(cpu)
        assert np.array_equal(np.isnan(vulkan), nan), name
        assert np.array_equal(vulkan[~nan].view(np.uint32), cpu[~nan].view(np.uint32)), name


def _gelu_edges() -> np.ndarray:
    """gelu's inputs at the edges of its one formula: the clamp at |x| = 15, the x/2 branch below
    2^-60, where results turn subnormal (-13.2) and zero (-14.4), where gelu(x) = x starts (5.3),
    subnormals, the largest floats, zeros, infinities, NaNs, and every binade's first floats."""
    g = np.random.default_rng(20)
    binades = np.float32(2.0) ** np.arange(-149, 128, dtype=np.float64).astype(np.float32)
    points = [15.0, 2.0**-60, 13.2, 14.4, 5.3, 2.0**-126, 2.0**-149, 1.0, 2.0]
    magnitudes = np.concatenate(
        [
            neighbours(points, 64),
            neighbours(binades.tolist(), 2),
            (np.float32(2.0) ** g.uniform(-149, 5, 20000)).astype(np.float32),
        ]
    )
    magnitudes = magnitudes[magnitudes >= 0]
    return np.concatenate([SPECIALS, magnitudes, -magnitudes])


def test_gelu_edges_within_bound_and_same_bits_on_lavapipe(gpu):
    x = _gelu_edges()
    with np.errstate(all="ignore"):
        got = evaluate(M.gelu, x)
        ref = gelu64(x.astype(np.float64))
    assert ulp_distance(got, ref).max() <= ROUTINES["gelu"][1]
    finite = np.isfinite(x)
    assert np.array_equal(np.signbit(got[finite & (got == 0)]), np.signbit(x[finite & (got == 0)]))  # gelu(±0) = ±0
    vulkan = vkml.nn.functional.gelu(vkml.tensor(x, device=gpu)).numpy()
    nan = np.isnan(got)
    assert np.array_equal(np.isnan(vulkan), nan)
    assert np.array_equal(vulkan[~nan].view(np.uint32), got[~nan].view(np.uint32))


def test_pow_same_bits_on_lavapipe(gpu):
    """pow's core (log|x| and e^v as double-floats through Cody-Waite pairs) on both of its branches."""
    g = np.random.default_rng(21)
    n = 4096
    parts = [
        np.exp2(g.uniform(-149, 127, n)) * g.choice([-1.0, 1.0], n),
        g.uniform(0.999, 1.001, n),
        g.uniform(-10, 10, n),
        g.uniform(-3, 3, n),
        g.uniform(-1e5, 1e5, n),
        g.integers(-40, 41, n),
    ]
    parts = [p.astype(np.float32) for p in parts]
    x = np.concatenate([*parts[:3], np.repeat(SPECIALS, SPECIALS.size)])
    y = np.concatenate([*parts[3:], np.tile(SPECIALS, SPECIALS.size)])
    cpu = vkml.pow(vkml.tensor(x), vkml.tensor(y)).numpy()
    vulkan = vkml.pow(vkml.tensor(x, device=gpu), vkml.tensor(y, device=gpu)).numpy()
    nan = np.isnan(cpu)
    assert np.array_equal(np.isnan(vulkan), nan)
    assert np.array_equal(vulkan[~nan].view(np.uint32), cpu[~nan].view(np.uint32))


@pytest.mark.parametrize("name", [*ROUTINES, *OTHER_INSTRUCTIONS])
def test_instructions_an_element(name):
    import count_instructions as C

    (dispatch,) = C.h200_dispatches(name, (4096,), None)
    counts, elements = C.per_element(dispatch, 4096)
    per_element = sum(n for c, n in counts.items() if not c.startswith(" ")) / elements
    limit = OTHER_INSTRUCTIONS[name] if name in OTHER_INSTRUCTIONS else ROUTINES[name][3]
    assert per_element <= limit and counts["conversion"] == 0
