"""float64 routines of the remaining elementwise ops: fmod (exact), copysign, hypot and logit.

Built like f64.py (int64 significands, select-based) and f64math.py (double-double on f64dd);
vkml/ops/float64.py states each op's float64 bound and tests/test_mathlib_f64.py measures it.
"""

from __future__ import annotations

from ...ir.builder import const, eq, isnan, loop, select
from ...ir.core import Value
from . import f64dd as dd
from .f64 import ABS_MASK, DEFAULT_NAN_BITS, I64, INF_BITS, SIGN_BIT, _quiet, from_bits, to_bits, unpack
from .f64math import _int_to_f64


def nan_of(x: Value, y: Value) -> Value:
    """The NaN of an operation on x and y: the first NaN operand quieted, else the default NaN."""
    return select(isnan(x), _quiet(x), select(isnan(y), _quiet(y), from_bits(const(DEFAULT_NAN_BITS, I64))))


def copysign(a: Value, b: Value) -> Value:
    """|a| with the sign bit of b (exact, bit operations only)."""
    return from_bits((to_bits(a) & ABS_MASK) | (to_bits(b) & SIGN_BIT))


_STEP = 10  # bits a long-division step: r < my < 2^53, so r << 10 fits in int64


def fmod(x: Value, y: Value) -> Value:
    """x - trunc(x/y)·y exactly (C's fmod, numpy.fmod): long division of the significands.

    |x| = mx·2^(ex-52) and |y| = my·2^(ey-52) with mx, my in [2^52, 2^53) (``unpack``); the
    remainder of mx·2^(ex-ey) by my is found ten bits a step, and r·2^(ey-52) is exact because the
    true remainder is a multiple of the smaller ulp of x and y below |y|. The sign is x's.
    Special values: fmod(x, ±0), fmod(±inf, y) and NaN give NaN; |x| < |y| (also y = ±inf) gives x.
    """
    xb, yb = to_bits(x), to_bits(y)
    ax, ay = xb & ABS_MASK, yb & ABS_MASK
    mx, ex = unpack(ax)
    my, ey = unpack(ay)
    r0 = select(mx < my, mx, mx - my)

    def step(_, left, r):
        s = select(left < 0, const(0, I64), select(left > _STEP, const(_STEP, I64), left))
        v = r << s
        return left - _STEP, v - (v / my) * my

    # ex - ey <= 1023 + 1074 = 2097 bits to bring down, ten a step
    _, r = loop(0, 210, 1, (ex - ey, r0), step)
    # r < 2^53 to float64 exactly in two halves; then r·2^(ey-52), ey - 52 >= -1126, in two exact steps
    value = _int_to_f64(r >> 26) * 67108864.0 + _int_to_f64(r & ((1 << 26) - 1))
    k = ey - 52
    low = k < -1000
    mag = value * dd.pow2(select(low, k + 200, k)) * select(low, dd.f64(2.0**-200), dd.f64(1.0))
    out = from_bits(to_bits(mag) | (xb & SIGN_BIT))
    out = select(ax < ay, x, out)
    invalid = isnan(x) | isnan(y) | (ax >= INF_BITS) | eq(ay, 0)
    return select(invalid, nan_of(x, y), out)
