"""Counter-based random numbers, written once in the IR's exact integer and float primitives.

vkml's random values are PyTorch's, drawn on the host (vkml/frontend/mt19937.py); this stream
serves the draws computed inside kernels instead: dropout masks (keep_mask in
vkml/frontend/random.py) and the fused attention's dropout. Its generator is Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as
easy as 1, 2, 3", SC 2011): a keyed bijection on a 64-bit counter built of 32-bit additions,
rotations and xors only, so every device computes the same bits. Element ``i`` of a random
tensor is a pure function of (key, counter = (i, call offset)): no state lives on the device
and the elements are independent of how kernels are laid out.

The functions here work on IR values (inside a kernel) and on numpy uint32 arrays alike, so
the tests hold the kernel against the very same code run in numpy, and that code against the
published known-answer vectors.

>>> import numpy as np
>>> [hex(v) for v in threefry2x32(*(np.zeros(1, np.uint32),) * 4)]  # doctest: +SKIP
['0x6b200159', '0x99ba4efe']
"""

from __future__ import annotations

import numpy as np

from ..ir import builder as B
from ..ir import types as T
from . import mathlib as M

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
KEY_PARITY = 0x1BD11BDA
ROUNDS = 20


def _rotl(x, r: int):
    return (x << r) | (x >> (32 - r))


def threefry2x32(x0, x1, k0, k1):
    """Threefry-2x32-20 of counter (x0, x1) under key (k0, k1): two uint32 words (IR values or numpy arrays)."""
    ks = (k0, k1, k0 ^ k1 ^ KEY_PARITY)
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for r in range(ROUNDS):
        x0 = x0 + x1
        x1 = _rotl(x1, ROTATIONS[r % 8]) ^ x0
        if r % 4 == 3:  # key injection every four rounds
            s = r // 4 + 1
            x0 = x0 + ks[s % 3]
            x1 = x1 + ks[(s + 1) % 3] + s
    return x0, x1


def _f32(x: float) -> float:
    return float(np.float32(x))


# sin(t) and cos(t) on [0, π/2] by their Taylor series (truncated below 2^-32), Horner in t²,
# with the coefficients rounded to float32.
_SIN = tuple(_f32((-1) ** k / np.prod(np.arange(1.0, 2 * k + 2))) for k in range(7))
_COS = tuple(_f32((-1) ** k / np.prod(np.arange(1.0, 2 * k + 1))) for k in range(8))
_HALF_PI_STEP = _f32(np.pi / 2) * 2.0**-22  # exact: a power of two times a float32


def _series(t2, coefficients):
    acc = B.const(coefficients[-1], T.float32)
    for c in reversed(coefficients[:-1]):
        acc = acc * t2 + c
    return acc


def cos_turns(bits24):
    """cos(2π·bits24/2^24) for an integer in [0, 2^24): quadrant from the top 2 bits, then a series."""
    quadrant = bits24 >> 22
    t = B.convert(bits24 & 0x3FFFFF, T.float32) * _HALF_PI_STEP  # in [0, π/2)
    t2 = t * t
    sin, cos = t * _series(t2, _SIN), _series(t2, _COS)
    q = [B.eq(quadrant, B.const(k, T.uint32)) for k in range(3)]
    return B.select(q[0], cos, B.select(q[1], -sin, B.select(q[2], -cos, sin)))


def uniform(w0, w1):
    """A float32 in [0, 1) on the grid k·2^-24 from the top 24 bits of ``w0``."""
    return B.convert(w0 >> 8, T.float32) * (1.0 / (1 << 24))


def uniform_f16(w0, w1):
    """A float32 in [0, 1) on the grid k·2^-11 (the top 11 bits of ``w0``): exact in float16, never rounds to 1."""
    return B.convert(w0 >> 21, T.float32) * (1.0 / (1 << 11))


def normal(w0, w1):
    """A standard normal float32 by Box–Muller: sqrt(-2·log u1)·cos(2π·u2), u1 in (0, 1].

    24-bit uniforms bound |z| by sqrt(-2·log 2^-24) ≈ 5.77: the tails beyond are cut.
    """
    u1 = B.convert((w0 >> 8) + 1, T.float32) * (1.0 / (1 << 24))
    radius = M.sqrt(M.log(u1) * -2.0)
    return radius * cos_turns(w1 >> 8)


KINDS = {"uniform": uniform, "uniform_f16": uniform_f16, "normal": normal}


def random_value(kind: str, index, key0, key1, offset):
    """The ``kind`` random float32 of element ``index`` (uint32 IR values) under key and call offset."""
    w0, w1 = threefry2x32(index, offset, key0, key1)
    return KINDS[kind](w0, w1)
