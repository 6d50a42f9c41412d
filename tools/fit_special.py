"""Fit the Chebyshev series of vkml/ops/mathlib/f64special.py with mpmath (a developer tool).

Each series is sum_k c_k T_k(t) over t in [-1, 1], t an affine map of x or of 1/x; the
coefficients come from the discrete cosine transform of the function at N Chebyshev nodes,
computed at 50 digits, and are cut where they fall below 2^-60 of the largest. Run it to
print the tables:  python tools/fit_special.py
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def chebyshev(f, n: int = 80) -> list[float]:
    """c_0 .. c_{n-1} of f(t) on [-1, 1] (c_0 halved, as the evaluation adds it whole)."""
    nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / n) for j in range(n)]
    values = [f(t) for t in nodes]
    coeffs = []
    for k in range(n):
        s = mp.fsum(v * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / n) for j, v in enumerate(values))
        coeffs.append(2 * s / n)
    coeffs[0] /= 2
    top = max(abs(c) for c in coeffs)
    while abs(coeffs[-1]) < top * mp.mpf(2) ** -60:
        coeffs.pop()
    return [float(c) for c in coeffs]


def _i0e(x):
    return mp.besseli(0, x) * mp.exp(-x)


def _i1e(x):
    return mp.besseli(1, x) * mp.exp(-x)


def _x(t, lo, hi):  # t in [-1, 1] -> x in [lo, hi]
    return lo + (t + 1) * (hi - lo) / 2


def _inv(t, c):  # t = c/x - 1 -> x = c / (t + 1); t = -1 is x = inf
    return mp.inf if t == -1 else c / (t + 1)


def _k_near(order: int):
    def f(t):  # x^2 = 2 (t + 1) on [0, 4]; the log part taken out (x^order times the rest)
        x2 = 2 * (t + 1)
        if x2 == 0:
            return -mp.euler if order == 0 else mp.mpf(1)
        x = mp.sqrt(x2)
        rest = mp.besselk(order, x) - (-1) ** (order + 1) * mp.log(x / 2) * mp.besseli(order, x)
        return rest * x**order

    return f


def _k_far(order: int):
    def f(t):  # sqrt(x) e^x K(x) for x = 4/(t + 1) in [2, inf]
        x = _inv(t, 4)
        return mp.sqrt(x) * mp.exp(x) * mp.besselk(order, x)

    return f


def _near_x2(f):  # x^2 = 32 (t + 1) on [0, 64]
    return lambda t: f(mp.sqrt(32 * (t + 1)))


def _jy_far(order: int, which: str):
    """P(x) or x Q(x) of J_n = sqrt(2/(pi x)) (P cos(chi) - Q sin(chi)), Y_n = sqrt(2/(pi x)) (P sin(chi) +
    Q cos(chi)), chi = x - (2n + 1) pi/4, for x = sqrt(64 / ((t + 1)/2)) in [8, inf]."""

    def f(t):
        if t == -1:
            return mp.mpf(1) if which == "P" else (-1 if order == 0 else 3) / mp.mpf(8)
        x = mp.sqrt(128 / (t + 1))
        chi = x - (2 * order + 1) * mp.pi / 4
        j, y, scale = mp.besselj(order, x), mp.bessely(order, x), mp.sqrt(mp.pi * x / 2)
        if which == "P":
            return scale * (j * mp.cos(chi) + y * mp.sin(chi))
        return x * scale * (-j * mp.sin(chi) + y * mp.cos(chi))

    return f


def _y_near(order: int):
    def rest(x):
        if x == 0:
            return 2 / mp.pi * mp.euler if order == 0 else -(1 - 2 * mp.euler) / (2 * mp.pi)
        if order == 0:
            return mp.bessely(0, x) - 2 / mp.pi * mp.log(x / 2) * mp.besselj(0, x)
        return (mp.bessely(1, x) - 2 / mp.pi * (mp.besselj(1, x) * mp.log(x / 2) - 1 / x)) / x

    return _near_x2(rest)


_ZETA2 = 2 * mp.sqrt(8) / 3  # zeta = (2/3) |x|^(3/2) at |x| = 2


def _zeta_x(t):  # t = 2 zeta(2)/zeta - 1 -> |x| (t = -1 is infinity)
    zeta = 2 * _ZETA2 / (t + 1)
    return (3 * zeta / 2) ** (mp.mpf(2) / 3), zeta


def _airy_right(t):  # 2 sqrt(pi) x^(1/4) e^zeta Ai(x) for x >= 2
    if t == -1:
        return mp.mpf(1)
    x, zeta = _zeta_x(t)
    return 2 * mp.sqrt(mp.pi) * x ** (mp.mpf(1) / 4) * mp.exp(zeta) * mp.airyai(x)


def _airy_left(which: str):  # Ai(-y) = (P sin(theta) - Q cos(theta)) / (sqrt(pi) y^(1/4)), theta = zeta + pi/4
    def f(t):
        if t == -1:
            return mp.mpf(1) if which == "P" else mp.mpf(5) / 72
        y, zeta = _zeta_x(t)
        theta = zeta + mp.pi / 4
        scale = mp.sqrt(mp.pi) * y ** (mp.mpf(1) / 4)
        a, b = mp.airyai(-y) * scale, mp.airybi(-y) * scale
        if which == "P":
            return a * mp.sin(theta) + b * mp.cos(theta)
        return zeta * (-a * mp.cos(theta) + b * mp.sin(theta))

    return f


TABLES = {
    # i0e(x) for 0 <= x <= 8, t = x/4 - 1
    "I0E_NEAR": lambda t: _i0e(_x(t, 0, 8)),
    # sqrt(x) i0e(x) for x >= 8, t = 16/x - 1
    "I0E_FAR": lambda t: mp.sqrt(_inv(t, 16)) * _i0e(_inv(t, 16)),
    # i1e(x) / x for 0 <= x <= 8 (x = 0: 1/2)
    "I1E_NEAR": lambda t: mp.mpf(1) / 2 if _x(t, 0, 8) == 0 else _i1e(_x(t, 0, 8)) / _x(t, 0, 8),
    # sqrt(x) i1e(x) for x >= 8
    "I1E_FAR": lambda t: mp.sqrt(_inv(t, 16)) * _i1e(_inv(t, 16)),
    # K0(x) + log(x/2) I0(x) for 0 <= x <= 2, t = x^2/2 - 1
    "K0_NEAR": _k_near(0),
    # sqrt(x) e^x K0(x) for x >= 2, t = 4/x - 1
    "K0_FAR": _k_far(0),
    # x (K1(x) - log(x/2) I1(x)) for 0 <= x <= 2, t = x^2/2 - 1
    "K1_NEAR": _k_near(1),
    # sqrt(x) e^x K1(x) for x >= 2, t = 4/x - 1
    "K1_FAR": _k_far(1),
    # J0(x) in t = x^2/32 - 1 on [0, 8]
    "J0_NEAR": _near_x2(lambda x: mp.besselj(0, x)),
    # J1(x) / x in t = x^2/32 - 1 on [0, 8]
    "J1_NEAR": _near_x2(lambda x: mp.mpf(1) / 2 if x == 0 else mp.besselj(1, x) / x),
    # Y0(x) - (2/pi) log(x/2) J0(x) in t = x^2/32 - 1 on [0, 8]
    "Y0_NEAR": _y_near(0),
    # (Y1(x) - (2/pi) (log(x/2) J1(x) - 1/x)) / x in t = x^2/32 - 1 on [0, 8]
    "Y1_NEAR": _y_near(1),
    # the Hankel forms' P and x Q in t = 128/x^2 - 1 on [8, inf]
    "P0_FAR": _jy_far(0, "P"),
    "Q0_FAR": _jy_far(0, "Q"),
    "P1_FAR": _jy_far(1, "P"),
    "Q1_FAR": _jy_far(1, "Q"),
    # Ai(x) in t = x/2 on [-2, 2]
    "AI_NEAR": lambda t: mp.airyai(2 * t),
    # 2 sqrt(pi) x^(1/4) e^zeta Ai(x) in t = 2 zeta(2)/zeta - 1, zeta = (2/3) x^(3/2), x >= 2
    "AI_RIGHT": _airy_right,
    # P and zeta Q of Ai(-y) = (P sin(zeta + pi/4) - Q cos(zeta + pi/4)) / (sqrt(pi) y^(1/4)), y >= 2
    "AI_LEFT_P": _airy_left("P"),
    "AI_LEFT_Q": _airy_left("Q"),
}


def main() -> None:
    for name, f in TABLES.items():
        coeffs = chebyshev(f)
        print(f"{name} = _hex(")
        for c in coeffs:
            print(f'    "{c.hex()}",')
        print(")")


if __name__ == "__main__":
    main()
