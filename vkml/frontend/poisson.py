"""``vkml.poisson(rates, generator=None)``: Poisson samples, drawn on the host from vkml's generator.

The algorithm is inversion: each element takes two of ``rand``'s 24-bit uniforms (two draws of the
generator, the same bits on every device) as one uniform ``u`` of 48 bits, and its sample is the
smallest ``k`` whose Poisson CDF reaches ``u``. The CDF is computed in float64 on the host: from the
mode (its value there is the regularized upper incomplete gamma function ``Q(m + 1, rate)``), the
search steps down or up adding probabilities, so a sample costs about ``sqrt(rate)`` steps. The rates
are read back (PyTorch's CPU op reads them too, to check them); the result is a new tensor on the
rates' device, so the values are the same bits on the CPU and on any Vulkan device.

Samples follow the distribution exactly up to the 48-bit uniform and float64's CDF (a probability
below 2^-48 is never drawn); they differ from PyTorch's, whose generator and algorithm (PTRS
rejection) are its own.

>>> import vkml
>>> _ = vkml.manual_seed(0)
>>> vkml.poisson(vkml.tensor([0.0, 4.0])).shape
vkml.Size([2])
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DTypeNotImplementedError
from . import autograd, creation
from . import operators as F
from . import random as R
from .exports import Export
from .mutation import torch_name


def _upper_gamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized upper incomplete gamma function Q(a, x) for a >= 1, x > 0, in float64.

    The series of P for x < a + 1, Lentz's continued fraction of Q otherwise (each converges fast
    there), both scaled by exp(-x + a·log x - lgamma(a)).
    """
    # terms: near x = a both need about sqrt(a) of them; they stop early once float64 holds the sum
    steps = int(12 * math.sqrt(float(a.max()))) + 200
    lgam = np.array([math.lgamma(v) for v in a.reshape(-1)]).reshape(a.shape)
    scale = np.exp(-x + a * np.log(x) - lgam)
    q = np.empty_like(x)
    series = x < a + 1
    if series.any():
        aa, xx = a[series], x[series]
        term = 1.0 / aa
        total = term.copy()
        n = aa.copy()
        for _ in range(steps):
            n += 1
            term *= xx / n
            total += term
            if (np.abs(term) < np.abs(total) * 1e-17).all():
                break
        q[series] = 1.0 - total * scale[series]
    frac = ~series
    if frac.any():
        aa, xx = a[frac], x[frac]
        tiny = 1e-300
        b = xx + 1.0 - aa
        c = np.full_like(b, 1.0 / tiny)
        d = 1.0 / b
        h = d.copy()
        for i in range(1, steps):
            an = -i * (i - aa)
            b += 2.0
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1.0 / d
            delta = d * c
            h *= delta
            if (np.abs(delta - 1.0) < 1e-16).all():
                break
        q[frac] = h * scale[frac]
    return np.clip(q, 0.0, 1.0)


def sample(rates: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The smallest k with CDF(k; rate) >= u, elementwise (float64 rates >= 0, u in [0, 1))."""
    out = np.zeros(rates.shape, np.float64)
    live = rates > 0
    lam, uu = rates[live], u[live]
    if not lam.size:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):  # the masked-off lanes of the steps below
        return _search(out, live, lam, uu)


def _search(out: np.ndarray, live: np.ndarray, lam: np.ndarray, uu: np.ndarray) -> np.ndarray:
    k = np.floor(lam)
    logp = -lam + k * np.log(lam) - np.array([math.lgamma(v + 1) for v in k])
    p = np.exp(logp)  # P(X = k)
    cdf = _upper_gamma(k + 1, lam)  # P(X <= k)
    # down: while u <= CDF(k - 1) = CDF(k) - P(k), step to k - 1 (P(k - 1) = P(k)·k/rate)
    down = (uu <= cdf - p) & (k > 0)
    while down.any():
        cdf = np.where(down, cdf - p, cdf)
        p = np.where(down, p * k / lam, p)
        k = np.where(down, k - 1, k)
        down = down & (uu <= cdf - p) & (k > 0)
    # up: while CDF(k) < u, step to k + 1 (P(k + 1) = P(k)·rate/(k + 1)); a CDF that rounding stops
    # short of u ends the search once the probabilities vanish
    up = uu > cdf
    while up.any():
        k = np.where(up, k + 1, k)
        p = np.where(up, p * lam / k, p)
        cdf = np.where(up, cdf + p, cdf)
        up = up & (uu > cdf) & (p > 0)
    out[live] = k
    return out


def poisson(input, generator=None):
    """Samples of Poisson(``input``) elementwise, in ``input``'s float dtype and on its device.

    A negative or NaN rate is PyTorch's RuntimeError, an integer tensor its NotImplementedError; an
    infinite rate raises too (PyTorch returns an undefined value). The gradient is zero, as
    PyTorch's. See the module doc for the algorithm (inversion on the host, two 24-bit draws).
    """
    node = F._tensor_node("poisson", input)
    if not node.dtype.is_float:
        raise DTypeNotImplementedError(f"\"poisson_cpu\" not implemented for '{torch_name(node.dtype)}'")
    u_high = R.rand(node.shape, generator=generator, device=node.device)
    u_low = R.rand(node.shape, generator=generator, device=node.device)
    values = np.asarray(input.detach()._host_values(), np.float64)
    if np.isnan(values).any() or (values < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if np.isinf(values).any():
        raise RuntimeError("poisson: an infinite rate has no sample (PyTorch returns an undefined value)")
    u = u_high._host_values().astype(np.float64) + u_low._host_values().astype(np.float64) * 2.0**-24
    counts = sample(values, u)
    out = creation.tensor(counts, dtype=node.dtype, device=node.device)  # counts past 2^24 round, as PyTorch's
    return autograd.record("poisson", (input,), out)


EXPORTS = (Export("poisson"),)
