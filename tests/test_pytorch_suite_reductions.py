"""PyTorch's test/test_reductions.py (TestReductions: its hand-written checks, not the OpInfo ones
tests/opdb_sweep.py runs), on torch and on vkml, compared as tests/pytorch_suite_ops.py says: dim=None,
dim=() and keepdim, dtype promotion of sums and products (int and bool to int64, dtype=, out=),
all/any (uint8 in, uint8 out), argmax/argmin of ties and NaN, max/min/amax/amin with inf and NaN,
aminmax, mode, median and nanmedian, var/std with correction and their *_mean forms, logsumexp of
-inf rows, nansum, count_nonzero, bincount, histc, bucketize/searchsorted, quantile errors, reductions
of empty tensors, and PyTorch's errors.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from pytorch_suite_ops import cases, on_device, same

# Cases that take over ~0.06 s each (CPU-backend kernels to build): behind the exhaustive marker
# (pytest -m exhaustive), so that this file adds little to the default suite.
SLOW = frozenset(
    (
        "test_reductions[accreal]",
        "test_reductions[all any empty]",
        "test_reductions[all any out]",
        "test_reductions[all any]",
        "test_reductions[amin amax some dims]",
        "test_reductions[bincount]",
        "test_reductions[bucketize]",
        "test_reductions[count_nonzero]",
        "test_reductions[dim reduction float16]",
        "test_reductions[dim reduction float32]",
        "test_reductions[dim reduction float64]",
        "test_reductions[dim reduction int16]",
        "test_reductions[dim reduction int32]",
        "test_reductions[dim reduction int64]",
        "test_reductions[dim reduction int8]",
        "test_reductions[empty reductions]",
        "test_reductions[histc]",
        "test_reductions[integer upcast]",
        "test_reductions[logsumexp grad]",
        "test_reductions[logsumexp]",
        "test_reductions[mean dtype]",
        "test_reductions[median corner cases]",
        "test_reductions[median]",
        "test_reductions[min max indices]",
        "test_reductions[min max inf bfloat16]",
        "test_reductions[min max inf float16]",
        "test_reductions[min max inf float32]",
        "test_reductions[min max inf float64]",
        "test_reductions[min max nan]",
        "test_reductions[mode]",
        "test_reductions[nansum]",
        "test_reductions[prod bool]",
        "test_reductions[quantile]",
        "test_reductions[reduce dtype grad]",
        "test_reductions[sum all]",
        "test_reductions[sum low precision noncontiguous]",
        "test_reductions[upcast out]",
        "test_reductions[var std]",
        "test_reductions_on_vulkan[dim reduction float32]",
        "test_reductions_on_vulkan[logsumexp]",
        "test_reductions_on_vulkan[median]",
        "test_reductions_on_vulkan[min max nan]",
        "test_reductions_on_vulkan[var std]",
    )
)


RNG = np.random.default_rng(2024)
A345 = RNG.standard_normal((3, 4, 5)).astype(np.float32)
A55 = RNG.standard_normal((5, 5)).astype(np.float32)
A20 = RNG.standard_normal((20, 20)).astype(np.float32)
INTS = RNG.integers(-9, 9, (3, 4, 5))
EX = [[-1, 2, 1], [5, 3, 6]]
INF, NAN = math.inf, math.nan


def _rng():
    """A generator seeded afresh: each side of a case draws the same values."""
    return np.random.default_rng(11)


def _dim_reduction(dtype):
    def run(m):
        x = m.tensor(EX, dtype=getattr(m, dtype))
        out = [x.sum(), x.sum(0), x.sum(1), x.min(), x.argmin(), x.argmin(dim=None), x.min(0), x.amin(0), x.argmin(0)]
        out += [x.min(dim=0, keepdim=True), x.amin(dim=0, keepdim=True), x.argmin(dim=0, keepdim=True), x.min(1)]
        out += [x.amin(1), x.argmin(1), x.min(dim=1, keepdim=True), x[:, :2].min(), x[:, :2].amin(), x[:, :2].argmin()]
        out += [x.max(), x.amax(), x.argmax(), x.max(0), x.amax(0), x.argmax(dim=0), x.max(dim=0, keepdim=True)]
        out += [x.max(1), x.argmax(dim=1, keepdim=True), x[:, :2].max(), x[:, :2].argmax()]
        y = m.tensor(EX, dtype=x.sum(0).dtype)
        m.sum(x, 0, out=y)
        out.append(y)
        if dtype in ("float32", "float64", "float16"):
            out += [x.mean(), x.mean(0), x.mean(1), x.mean((0, 1))]
        if dtype not in ("float16", "bfloat16"):
            out += [x.prod(), x.prod(0), x.prod(1)]
        return out

    return run


def _integer_upcast(m):
    out = []
    for d in (m.uint8, m.int8, m.int16, m.int32, m.int64, m.bool, m.float32, m.float64):
        x = m.ones(3, 4, 5, dtype=d)
        for fn in (
            lambda x, **k: m.sum(x, **k),
            lambda x, **k: m.sum(x, 0, **k),
            lambda x, **k: m.prod(x, **k),
            lambda x, **k: m.prod(x, 0, **k),
            lambda x, **k: m.cumsum(x, 0, **k),
            lambda x, **k: m.cumprod(x, 0, **k),
        ):
            out += [fn(x).dtype, fn(x, dtype=m.int32).dtype, fn(x, dtype=m.float64).dtype, fn(x, dtype=m.int16)]
    return out


def _upcast_out(m):
    out = []
    x = m.ones(3, 4, 5, dtype=m.int32)
    for fn in (lambda x, **k: m.sum(x, 0, **k), lambda x, **k: m.prod(x, 0, **k), lambda x, **k: m.cumsum(x, 0, **k)):
        for d in (m.int64, m.float32, m.int16):
            o = m.ones(fn(x).shape, dtype=d)
            r = fn(x, out=o)
            out += [r.dtype, r]
            r = fn(x, out=o, dtype=d)
            out += [r.dtype, r]
    return out


def _all_any(m):
    out = []
    for size in ((10,), (5, 5)):
        x = m.ones(*size).byte()
        out += [x.all(), x.any()]
        x[3] = 0
        out += [x.all(), x.any()]
        x.zero_()
        out += [x.all(), x.any()]
        x.fill_(2)
        out += [x.all(), x.any(), x.all().dtype]
        b = m.ones(*size).bool()
        b[3] = False
        out += [b.all(), b.any()]
    x = m.tensor([[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=m.uint8)
    out += [
        x.all(dim=0),
        x.any(dim=1, keepdim=True),
        x.prod(dim=0).byte(),
        x.sum(dim=1, keepdim=True).clamp(0, 1).byte(),
    ]
    out += [m.tensor([], dtype=m.uint8).all(), m.tensor([], dtype=m.uint8).any(), m.tensor([], dtype=m.bool).all()]
    a = m.tensor(_rng().integers(0, 255, (7, 11, 3)), dtype=m.uint8)
    out += [m.all(a, dim=0), a.to(m.bool).all(dim=0)]
    for d in (m.float32, m.int64, m.int32, m.uint8, m.bool, m.float16):
        t = m.tensor(INTS % 3, dtype=d)
        out += [
            m.all(t),
            m.any(t),
            m.all(t, 1),
            m.any(t, 0, keepdim=True),
            m.all(t.T),
            m.any(t[..., ::2]),
            m.all(t, dim=0).dtype,
        ]
    return out


def _all_any_out(m):
    out = []
    for d in (m.bool, m.uint8):
        x = m.tensor(INTS[0] % 2, dtype=d)
        o = m.empty_like(x)
        m.all(x, 0, out=o)
        out.append(o)
        o = m.empty_like(x)
        m.any(x, 1, out=o)
        out.append(o)
    return out


def _empty_any_all(m):
    x = m.zeros(2, 0, 4)
    out = []
    for d in (m.float32, m.int64, m.uint8, m.bool, m.float16):
        xb = x.to(d)
        out += [xb.any(2).shape, xb.any(2, keepdim=True).shape, xb.any(1), xb.any(1, keepdim=True), xb.any()]
        out += [xb.all(2).shape, xb.all(1), xb.all(1, keepdim=True), xb.all()]
    return out


def _minmax_inf(dtype):
    def run(m):
        a = m.tensor([[-INF, -INF, INF, 3], [INF, INF, -INF, -1]], dtype=getattr(m, dtype))
        return [
            m.max(a, dim=1),
            m.amax(a, dim=1),
            m.max(a),
            m.amax(a),
            m.min(a, dim=1),
            m.amin(a, dim=1),
            m.min(a),
            m.amin(a),
        ]

    return run


def _minmax_nan(m):
    out = []
    for index in (0, 4, 99):
        x = m.tensor(_rng().standard_normal(100).astype(np.float32))
        x[index] = NAN
        for fn in (m.max, m.min):
            out += [fn(x, 0), fn(x)]
        for fn in (m.amax, m.amin, m.argmax, m.argmin):
            out += [fn(x, 0), fn(x)]
        out += [m.aminmax(x), m.aminmax(x, dim=0)]
    a = m.arange(25.0).view(5, 5)
    a[2, 2] = NAN
    out += [a.min(), a.max(), a.amin(), a.amax(), a.min(0).values, a.max(0).values, a.amin(0), a.amax(0)]
    return out


def _minmax_indices(m):
    x = m.tensor(_rng().integers(-1000, 1000, (5, 5)))
    out = []
    for t in (x, x.t()):
        for d in (0, 1):
            out += [m.max(t, d, False), m.min(t, d, False), m.amax(t, d), m.amin(t, d), m.aminmax(t, dim=d)]
    y = m.tensor(_rng().standard_normal((10, 10, 10)).astype(np.float32))[:, 4]
    out += [m.max(y), m.amin(y, (0, 1)), m.aminmax(y), m.aminmax(y, dim=1, keepdim=True)]
    b = m.tensor(_rng().integers(0, 2, (6, 6))).bool()
    out += [m.max(b), m.min(b, 0), m.amax(b, 1), m.aminmax(b.to(m.int32))]
    return out


def _argminmax_ties(m):
    out = []
    for d in (m.float32, m.int64, m.float16, m.uint8, m.bool):
        t = m.ones(3, 3, dtype=d)
        out += [m.argmax(t), m.argmin(t), m.argmax(t, 0), m.argmin(t, 1)]
        if d.is_floating_point:
            t[2, 2] = NAN
            out += [m.argmax(t), m.argmin(t)]
    for values in ([[1, 5], [2, 10], [3, 3]], [[1, 5], [2, 10], [0, 0]]):
        t = m.tensor(values)
        out += [m.argmax(t, dim=1), m.argmax(t.T, dim=1), m.max(t, dim=1)[1], m.argmin(t, dim=1), m.min(t.T, dim=1)[1]]
    x = m.tensor(_rng().integers(0, 4, (6, 7)).astype(np.float32))
    out += [m.argmax(x), m.argmin(x), m.argmax(x, 0), m.argmin(x, 1), m.max(x, 1), m.min(x.T, 0)]
    z = m.zeros(1, 32768)
    out += [z.argmax(dim=0), z.argmin(dim=-2), z.argmax(dim=0, keepdim=True)]
    s = m.tensor(4.0)
    out += [
        s.argmax(),
        s.argmax(dim=None),
        s.argmax(dim=0),
        s.argmax(dim=0, keepdim=True),
        s.argmin(dim=0, keepdim=True),
    ]
    return out


def _mode(m):
    x = m.arange(1.0, 101).view(10, 10)
    x[:2] = 1
    x[:, :2] = 1
    out = [m.mode(x, keepdim=False), m.mode(x, 0, False), x]
    v, i = m.tensor(()), m.tensor((), dtype=m.int64)
    m.mode(x, keepdim=False, out=(v, i))
    out += [v, i]
    for shape in ((10, 10), (4, 64)):
        a = m.zeros(shape, dtype=m.bool)
        a[:, (shape[1] - 1) // 2 :] = True
        values, indices = a.mode(-1)
        out += [values, a.gather(1, indices.unsqueeze(1)).squeeze(1)]
    for d in (m.int64, m.int32, m.float32, m.uint8):
        t = m.tensor(INTS % 4, dtype=d)
        out += [t.mode(), t.mode(0), t.mode(1, keepdim=True)]
    return out


def _median(m):
    out = []
    for shape in ((7,), (6,), (3, 5), (4, 6), (3, 4, 5)):
        t = m.tensor(_rng().standard_normal(shape).astype(np.float32))
        out += [t.median(), t.nanmedian()]
        for dim in range(t.ndim):
            out += [t.median(dim, True), t.nanmedian(dim, True), t.median(dim)]
        ti = t.mul(10).to(m.int64)
        out += [ti.median(), ti.median(0)]
    t = m.tensor(_rng().random((5, 6)).astype(np.float32))
    t.masked_fill_(t < 0.2, NAN)
    out += [m.median(t), m.nanmedian(t), m.median(t, 0, True), m.nanmedian(t, 1, True), m.median(t, 1)]
    a = m.arange(12)
    out += [a[::2].median(), a[::2].nanmedian(), a.view(3, 4).T.median(), a.view(3, 4)[::2, ::2].median(-1)[0]]
    out += [a.view(2, 3, 2).T.median(), a.view(2, 3, 2)[:, ::2, :].nanmedian(-1)[0]]
    return out


def _median_corner(m):
    t = m.tensor
    return [
        m.median(t(NAN)),
        m.median(t([])),
        m.nanmedian(t(NAN)),
        m.median(t(NAN), 0),
        m.nanmedian(t(NAN), 0),
        m.median(t([NAN]), 0, True),
        m.nanmedian(t([NAN]), 0, True),
        m.median(t([[NAN, NAN], [1, 2]]), 0)[0],
        m.nanmedian(t([[NAN, NAN], [1, 2]]), 0)[0],
        m.median(t([[NAN, NAN], [1, 2]]), 1)[0],
        m.nanmedian(t([[NAN, NAN], [1, 2]]), 1)[0],
    ]


def _var_std(m):
    x = m.tensor(A20)
    out = []
    for dim in (None, 0, 1):
        for unbiased in (False, True):
            for keepdim in (False, True):
                if dim is None:
                    out += [m.var(x, unbiased), m.std(x, unbiased)]
                else:
                    out += [m.var(x, dim, unbiased, keepdim), m.std(x, dim, unbiased, keepdim)]
                    o = m.empty(0)
                    m.var(x, dim, unbiased, keepdim, out=o)
                    out.append(o)
    for dim, correction, keepdim in [
        *itertools.product((None, 0, 1), (None, 0, 10, 30), (False, True)),
        (None, -100, True),
    ]:
        kw = {"dim": dim, "correction": correction, "keepdim": keepdim}
        out += [m.var(x, **kw), m.std(x, **kw), m.var_mean(x, **kw), m.std_mean(x, **kw)]
    y = m.tensor(A345)
    for dim in (0, 1, 2, (0, 2), (1, 2)):
        for unbiased in (False, True):
            out += [m.var_mean(y, dim=dim, unbiased=unbiased), m.std_mean(y, dim=dim, unbiased=unbiased, keepdim=True)]
    out += [m.var_mean(y), m.std_mean(y, unbiased=False)]
    out += [
        m.tensor([2281.5, 2281.25]).var(0),
        m.tensor([2281.5, 2281.25]).var(),
        m.tensor([2281.5, 2281.25]).unsqueeze(1).var(0),
    ]
    return out


def _dof_warning(m):
    import warnings

    out = []
    for fn in (m.std, m.var, m.var_mean, m.std_mean):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn(m.ones(10, 20), dim=-1, correction=20)
        out.append(any("degrees of freedom is <= 0" in str(x.message) for x in w))
    return out


def _logsumexp(m):
    x = m.tensor(A345)
    rows = m.tensor([[-INF, -INF, -INF], [0.0, -INF, 1.0], [INF, 1.0, -INF], [INF, INF, 0.0], [-INF, INF, 2.0]])
    return [
        m.logsumexp(x, 0),
        m.logsumexp(x, (0, 2)),
        m.logsumexp(x, 1, keepdim=True),
        m.logsumexp(rows, 1),
        m.logsumexp(rows, 0),
        m.logsumexp(x, dim=None) if _takes_none(m) else m.logsumexp(x, (0, 1, 2)),
        m.logsumexp(m.tensor(5.0), 0),
        m.logsumexp(m.arange(6).view(2, 3), 1),
    ]


def _takes_none(m):
    try:
        m.logsumexp(m.zeros(2), dim=None)
        return True
    except TypeError:
        return False


def _logsumexp_grad(m):
    x = m.tensor(A345[0], requires_grad=True)
    m.logsumexp(x, dim=(0, 1)).backward()
    g1 = x.grad
    y = m.tensor([[-INF, -INF], [0.0, 1.0]], requires_grad=True)
    m.logsumexp(y, 1).sum().backward()
    return g1, y.grad


def _nansum(m):
    out = []
    for d in (m.float32, m.float64, m.int64, m.int32, m.float16):
        x = m.tensor(_rng().integers(-50, 50, (17, 17))).to(d)
        if d.is_floating_point:
            x[x < 10] = NAN
        for nc in (False, True):
            t = x.T if nc else x
            out += [m.nansum(t), m.nansum(t, 0), m.nansum(t, 1), m.nansum(t, dtype=m.float64)]
    return out


def _count_nonzero(m):
    out = []
    for d in (m.float32, m.int64, m.bool, m.uint8, m.float16):
        x = m.tensor(INTS % 3, dtype=d)
        out += [m.count_nonzero(x), m.count_nonzero(x, 0), m.count_nonzero(x, (0, 2)), m.count_nonzero(x, (2, 0, 1))]
    y = m.tensor([[INF, NAN, 0.0], [-0.0, 1.0, -INF]])
    out += [
        m.count_nonzero(y),
        m.count_nonzero(y, 1),
        m.count_nonzero(m.tensor(3.0)),
        m.count_nonzero(m.zeros(0, 3), 0),
    ]
    return out


def _bincount(m):
    t = m.tensor
    inputs = t([[0, 0], [3, 1], [2, 1], [1, 1], [3, 4]])
    weights = t([[0.1, 1], [0.2, 2], [0.3, 3], [0.4, 4], [0.5, 5]])
    return [
        m.bincount(t([], dtype=m.int64)),
        m.bincount(t([], dtype=m.int64), minlength=10),
        t([0, 3, 2, 1, 3], dtype=m.uint8).bincount(),
        t([0, 1, 2, 3, 255], dtype=m.uint8).bincount(),
        t([0, 1, 2, 3, 255], dtype=m.int16).bincount(),
        m.bincount(t([1, 1, 1, 1]), minlength=5),
        m.bincount(t([0, 1, 1, 1, 4]), t([0.1, 0.2, 0.3, 0.4, 0.5])),
        m.bincount(t([0, 1, 1, 1, 4]), t([1, 2, 3, 4, 5], dtype=m.int8)),
        inputs[:, 0].bincount(),
        inputs[:, 1].bincount(weights[:, 1]),
        inputs[:, 1].contiguous().bincount(weights[:, 1]),
        m.zeros(32, 2, dtype=m.int64)[:, 0].bincount(),
        m.ones(32, 2, dtype=m.int64)[:, 0].bincount(),
        m.ones(1000, dtype=m.int8).bincount(),
    ]


def _histc(m):
    t = m.tensor
    return [
        m.histc(t([]), min=0, max=3),
        m.histc(t([2.0, 5.0])),
        m.histc(m.ones(5), bins=5),
        m.histc(m.ones(5), bins=5, min=2, max=3),
        m.histc(t([2.0, 4, 2, 2, 5, 4]), bins=5, min=1, max=5),
        m.histc(t([1.0, 2, 1]), bins=4, min=0, max=3),
        m.histc(t([1.0, 2, 1], dtype=m.float64), bins=4, min=0, max=3),
        m.histc(t(0.0), bins=1, min=0, max=3),
        m.histc(t([INF]), bins=1, min=0, max=3),
        m.histc(t([1.0, 2.0, INF]), bins=4, max=3),
        m.histc(t([1.0, 2.0, NAN]), bins=4, max=3),
        m.histc(t([1.0, 2, 1]), bins=4, min=5, max=5),
        m.histc(t(_rng().standard_normal(301).astype(np.float32)), bins=10),
        m.histc(t(_rng().standard_normal(201).astype(np.float32)), min=0.1, max=1),
        m.histc(t(np.float32(np.finfo(np.float32).max)).expand(3), bins=4).sum(),
    ]


def _bucketize(m):
    t = m.tensor
    v3 = t([[[1, 3, 5], [2, 4, 6]], [[1, 2, 3], [4, 5, 6]]])
    b = t([1, 2, 3, 4, 5, 6])
    out = [m.bucketize(v3, b), m.bucketize(v3, b, right=True)]
    o = m.empty(2, 2, 3, dtype=m.int64)
    out.append(m.bucketize(v3, b, out=o))
    v1 = t([1, 2, 3, 4, 5, 6, 7, 8, 9])
    for d in (m.float32, m.float16):
        bd = t([0.9, 1, 2, 2, 3, 3, 4, 4.1, 9, 9], dtype=d)
        out += [m.searchsorted(bd, v1.to(d), out_int32=True), m.bucketize(v1.to(d), bd, out_int32=True)]
    out += [m.searchsorted(b, t([[[]]], dtype=m.int64)), m.bucketize(t([[[]]], dtype=m.int64), b)]
    vn = t([1.0, NAN, 2.0, NAN], dtype=m.float64)
    bn = t([0.0, 1.0, 2.0, 3.0], dtype=m.float64)
    out += [m.searchsorted(bn, vn), m.searchsorted(bn, vn, right=True), m.searchsorted(bn, vn, side="right")]
    out += [m.searchsorted(v3.permute(2, 1, 0).to(m.float64), v3.permute(2, 1, 0).to(m.int32))]
    bs = t([1.5, 2.5, 3.5])
    out += [m.searchsorted(bs, 2), m.bucketize(t(2), bs), m.searchsorted(bs, t(NAN)), m.bucketize(NAN, bs, right=True)]
    seq = t([3.0, 1.0, 2.0])
    out += [m.searchsorted(seq, t([2.5, 0.5]), sorter=t([1, 2, 0]))]
    return out


def _empty_reductions(m):
    x = m.zeros(2, 0, 4)
    out = []
    for fn in (m.prod, m.sum, m.mean, m.var, m.std, m.logsumexp, m.amax, m.amin, m.nansum):
        out += [fn(x, dim=2), fn(x, dim=-1, keepdim=True)]
        if fn not in (m.amax, m.amin):
            out += [fn(x, dim=1), fn(x, dim=-2, keepdim=True)]
    for fn in (m.prod, m.sum, m.mean, m.var, m.std, m.nansum):
        out.append(fn(x))
    out += [m.max(x, dim=2).values, m.min(x, dim=-1, keepdim=True).values, m.median(x, dim=2).values]
    out += [m.argmax(x, dim=2), m.argmin(x, dim=-1, keepdim=True), m.kthvalue(x, 1, dim=2).values]
    out += [m.norm(x, dim=1), m.count_nonzero(x, 1)]
    return out


def _mean_dtype(m):
    a = m.tensor(INTS)
    b = m.tensor(EX, dtype=m.float64)
    o = m.empty((1, 1, 4))
    c = m.tensor([[[1.0, 1, 1, 1]], [[2.0, 2, 2, 2]], [[3.0, 3, 3, 3]]])
    r = m.mean(c, dim=0, keepdim=True, out=o)
    return [a.mean(dtype=m.float32), a.to(m.float32).mean(), b.mean(dtype=m.float32), r, r is o, a.sum(dtype=m.float32)]


def _accreal(m):
    x = m.ones(2, 3, 4)
    return [
        type(x.double().sum().item()),
        type(x.long().sum().item()),
        type(x.int().sum().item()),
        type(x.byte().sum().item()),
        type(x.bool().sum().item()),
    ]


def _prod_bool(m):
    out = []
    for val in ([True, True], [True, False], [False, False], [], [False] * 256):
        t = m.tensor(val, dtype=m.bool)
        out += [m.prod(t, dtype=m.bool), m.prod(t), m.sum(t), m.cumsum(t, 0) if val else t.sum()]
    return out


def _dims(m):
    x = m.tensor(A345)
    out = []
    # PyTorch's prod takes one int dim (a tuple is its TypeError); vkml's also takes several (docs/ops/prod.md)
    for fn in (m.sum, m.mean, m.amax, m.amin, m.nansum, m.logsumexp, m.std, m.var):
        out += [fn(x, dim=(0, 2)), fn(x, dim=(2, 0), keepdim=True), fn(x, dim=[-1]), fn(x, dim=(0, 1, 2))]
        if fn not in (m.logsumexp,):
            out += [fn(x, dim=None) if fn not in (m.amax, m.amin) else fn(x)]
    out += [m.prod(x, dim=2), m.prod(x, dim=-3, keepdim=True), m.prod(x)]
    for fn in (m.sum, m.mean, m.amax, m.amin, m.nansum):
        out += [fn(x, dim=()), fn(x, dim=[]), fn(x, dim=(), keepdim=True)]
    out += [x.sum(axis=(0, 2), keepdims=True), m.sum(m.tensor(3.0), 0), m.sum(m.tensor(3.0), (), keepdim=True)]
    s = m.tensor(3.0)
    out += [
        s.sum(dim=0),
        s.mean(dim=-1),
        s.amax(0),
        s.max(0),
        s.argmax(0),
        s.prod(0, keepdim=True),
        s.std(0),
        s.logsumexp(0),
    ]
    return out


def _sum_lowp_noncontig(m):
    out = []
    for d in (m.float16, m.bfloat16):
        x = m.ones(20, 20, 20, dtype=d)[::2, ::2, ::2]
        for perm in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
            xt = x.permute(perm)
            out += [m.sum(xt, (0,)), m.sum(xt, (1, 2)), m.sum(xt, (0, 1, 2))]
    return out


def _reduce_dtype_grad(m):
    out = []
    for fn, no_dim in ((m.sum, True), (m.prod, True), (m.cumsum, False), (m.cumprod, False)):
        x = m.tensor(A55[:3, :3], requires_grad=True)
        if no_dim:
            (g,) = m.autograd.grad([fn(x, dtype=m.float64)], [x])
            out += [g, g.dtype]
        gi = m.tensor(A55[:1, :3].repeat(3, 0) if fn in (m.cumsum, m.cumprod) else A55[0, :3])
        (g2,) = m.autograd.grad([fn(x, dim=0, dtype=m.float64)], [x], gi.double())
        out += [g2, g2.dtype]
    return out


def _quantile(m):
    x = m.tensor(A345.astype(np.float64))
    out = []
    for q in (0.5, [0.0, 1.0], [0.1, 0.25, 0.9]):
        qt = m.tensor(q, dtype=m.float64) if isinstance(q, list) else q
        for interp in ("linear", "lower", "higher", "midpoint", "nearest"):
            for dim in (None, 0, 2):
                out += [m.quantile(x, qt, dim=dim, keepdim=dim == 2, interpolation=interp)]
    y = m.tensor([[NAN, NAN], [1.0, 2.0]], dtype=m.float64)
    out += [
        m.quantile(y, 0.5, dim=1),
        m.nanquantile(y, 0.5, dim=1),
        m.nanquantile(y, m.tensor([0.25, 0.75], dtype=m.float64), dim=0),
    ]
    for a, q in (([1.0, 2, 3], 0.5), ([1.0, 2, 3, 4], 0.5), ([3.0, 1, 4, 2], 0.5), ([1.0, 2, 3, 4], [0.25, 0.5, 0.75])):
        t = m.tensor(a, requires_grad=True)
        m.quantile(t, m.tensor(q), 0).sum().backward()
        out.append(t.grad)
    return out


CASES = {
    **{
        f"dim reduction {d}": _dim_reduction(d)
        for d in ("float32", "float64", "int64", "int32", "int16", "int8", "float16")
    },
    "integer upcast": _integer_upcast,
    "upcast out": _upcast_out,
    "all any": _all_any,
    "all any out": _all_any_out,
    "all any empty": _empty_any_all,
    **{f"min max inf {d}": _minmax_inf(d) for d in ("float32", "float64", "float16", "bfloat16")},
    "min max nan": _minmax_nan,
    "min max indices": _minmax_indices,
    "argmin argmax ties": _argminmax_ties,
    "mode": _mode,
    "median": _median,
    "median corner cases": _median_corner,
    "var std": _var_std,
    "degrees of freedom warning": _dof_warning,
    "logsumexp": _logsumexp,
    "logsumexp grad": _logsumexp_grad,
    "nansum": _nansum,
    "count_nonzero": _count_nonzero,
    "bincount": _bincount,
    "histc": _histc,
    "bucketize": _bucketize,
    "empty reductions": _empty_reductions,
    "mean dtype": _mean_dtype,
    "accreal": _accreal,
    "prod bool": _prod_bool,
    "dims": _dims,
    "sum low precision noncontiguous": _sum_lowp_noncontig,
    "reduce dtype grad": _reduce_dtype_grad,
    "quantile": _quantile,
    "sum all": lambda m: [m.tensor([1.0, 2, 3, 4, 5], dtype=m.float64).sum(), m.tensor([True, False, True]).sum()],
    "amin amax some dims": lambda m: [
        (m.amin(x, dim=d, keepdim=k), m.amax(x, dim=d, keepdim=k))
        for x in [m.tensor(A345)]
        for d in ((0, 1), (0, 2), (1, 2))
        for k in (False, True)
    ],
}

# float sums in vkml's fixed order (docs/architecture.md) against PyTorch's own
TOLERANCE = {"atol": 1e-5, "rtol": 1.3e-6}
FLOAT16 = {"atol": 1e-3, "rtol": 1e-3}


@pytest.mark.parametrize("name", cases(CASES, "test_reductions", SLOW))
def test_reductions(name):
    same(CASES[name], name=name, **(FLOAT16 if "float16" in name or "low precision" in name else TOLERANCE))


ERRORS = {
    "dim out of range": (lambda m: m.sum(m.zeros(3, 3), dim=2), "Dimension out of range"),
    "dim duplicate": (lambda m: m.sum(m.zeros(3, 3, 3), dim=(0, 1, 1)), None),
    "repeated dim mean": (
        lambda m: m.mean(m.zeros(3, 3, 3, 3), dim=(0, 0)),
        "appears multiple times in the list of dims",
    ),
    "repeated dim sum": (
        lambda m: m.sum(m.zeros(3, 3, 3, 3), dim=(0, -4)),
        "appears multiple times in the list of dims",
    ),
    "repeated dim std": (
        lambda m: m.std(m.zeros(3, 3, 3, 3), dim=(0, 0)),
        "appears multiple times in the list of dims",
    ),
    "repeated dim var": (
        lambda m: m.var(m.zeros(3, 3, 3, 3), dim=(0, -4)),
        "appears multiple times in the list of dims",
    ),
    "repeated dim logsumexp": (
        lambda m: m.logsumexp(m.zeros(3, 3, 3, 3), dim=(0, 0)),
        "appears multiple times in the list of dims",
    ),
    "repeated dim nansum": (
        lambda m: m.nansum(m.zeros(3, 3, 3, 3), dim=(0, 0)),
        "appears multiple times in the list of dims",
    ),
    "amax empty dim": (lambda m: m.amax(m.zeros(2, 0, 4), dim=1), "Expected reduction dim"),
    "amin empty dim": (lambda m: m.amin(m.zeros(2, 0, 4), dim=1), "Expected reduction dim"),
    "max empty dim": (lambda m: m.max(m.zeros(2, 0, 4), dim=1), "Expected reduction dim"),
    "median empty dim": (lambda m: m.median(m.zeros(2, 0, 4), dim=1), "Expected reduction dim"),
    "argmax empty dim": (lambda m: m.argmax(m.zeros(2, 0, 4), dim=1), "Expected reduction dim"),
    "argmax empty": (lambda m: m.argmax(m.zeros(2, 0, 4)), "Expected reduction dim"),
    "argmin empty": (lambda m: m.argmin(m.zeros(2, 0, 4)), "Expected reduction dim"),
    "kthvalue empty dim": (lambda m: m.kthvalue(m.zeros(2, 0, 4), 1, dim=1), "Expected reduction dim"),
    "amax empty all": (lambda m: m.amax(m.zeros(0)), None),
    "max empty all": (lambda m: m.max(m.zeros(0, 3)), None),
    "mode wrong values dtype": (
        lambda m: m.mode(
            m.ones(10, dtype=m.uint8), -1, True, out=(m.ones(10, dtype=m.int8), m.ones(10, dtype=m.int64))
        ),
        "expected scalar type .* but got .* for values",
    ),
    "mode wrong indices dtype": (
        lambda m: m.mode(m.ones(10), -1, True, out=(m.ones(10), m.ones(10, dtype=m.float64))),
        "expected scalar type .* but got .* for indices",
    ),
    "max illegal values": (
        lambda m: m.max(m.zeros(5, 5), dim=0, out=(m.empty(5, dtype=m.int32), m.empty(5, dtype=m.int64))),
        r"scalar type|dtype",
    ),
    "min illegal indices": (
        lambda m: m.min(m.zeros(5, 5), dim=0, out=(m.empty(5), m.empty(5, dtype=m.float64))),
        r"scalar type|dtype",
    ),
    "all out float": (
        lambda m: m.all(m.zeros(3, 3), 0, out=m.empty(3, 3)),
        "all only supports bool tensor for result, got",
    ),
    "any out int": (
        lambda m: m.any(m.zeros(3, 3, dtype=m.int64), 0, out=m.empty(3, 3, dtype=m.int64)),
        "any only supports bool tensor for result, got",
    ),
    "nanmean int": (
        lambda m: m.nanmean(m.zeros(3, 4, dtype=m.int64)),
        r"nanmean\(\): expected input to have floating point or complex dtype but got \w+",
    ),
    "nanmean bool": (
        lambda m: m.nanmean(m.zeros(3, dtype=m.bool)),
        r"nanmean\(\): expected input to have floating point or complex dtype but got \w+",
    ),
    "mean int": (lambda m: m.mean(m.zeros(3, dtype=m.int64)), None),
    "bincount negative": (lambda m: m.bincount(m.tensor([1, -1])), "1-d non-negative integral"),
    "bincount 2-d": (lambda m: m.bincount(m.tensor([[1, 2], [3, 4]])), "1-d non-negative integral"),
    "bincount float": (lambda m: m.bincount(m.tensor([1.0, 0.3])), "not implemented"),
    "bincount minlength": (
        lambda m: m.bincount(m.tensor([1, 3]), m.tensor([0.2, 0.2]), minlength=-1),
        "minlength should be >= 0",
    ),
    "bincount 2-d weights": (lambda m: m.bincount(m.tensor([1, 0]), m.tensor([[1.0, 0.3], [1.0, 0.3]])), "1-d"),
    "bincount weights length": (lambda m: m.bincount(m.tensor([1, 0]), m.tensor([1.0, 0.3, 0.5])), "same length"),
    "histc negative bins": (lambda m: m.histc(m.tensor([1.0]), bins=-1), "bins must be > 0"),
    "histc inf": (lambda m: m.histc(m.tensor([INF])), r"range of \[[\w,+\-\.\ ]+\] is not finite"),
    "histc -inf": (lambda m: m.histc(m.tensor([-INF])), r"range of \[[\w,+\-\.\ ]+\] is not finite"),
    "histc inf both": (lambda m: m.histc(m.tensor([-INF, INF])), r"range of \[[\w,+\-\.\ ]+\] is not finite"),
    "histc inf with values": (
        lambda m: m.histc(m.tensor([1.0, 2.0, INF])),
        r"range of \[[\w,+\-\.\ ]+\] is not finite",
    ),
    "histc nan": (lambda m: m.histc(m.tensor([NAN])), r"range of \[nan, nan\] is not finite"),
    "histc min > max": (
        lambda m: m.histc(m.tensor([1.0, 2.0, 3.0]), bins=4, min=5, max=1),
        "max must be larger than min",
    ),
    "searchsorted dims": (
        lambda m: m.searchsorted(m.tensor([[1, 2, 3], [4, 5, 6]]), m.zeros(2, 2, 3, dtype=m.int64)),
        "first N-1 dimensions of boundaries tensor and input value tensor must match",
    ),
    "bucketize 2-d boundaries": (
        lambda m: m.bucketize(m.zeros(2, 2, 3, dtype=m.int64), m.tensor([[1, 2, 3], [4, 5, 6]])),
        "boundaries tensor must be 1 dimension",
    ),
    "searchsorted scalar 2-d": (
        lambda m: m.searchsorted(m.tensor([[1, 2, 3], [4, 5, 6]]), 1),
        "only when boundaries tensor dimension is 1",
    ),
    "searchsorted out float": (
        lambda m: m.searchsorted(m.arange(9), m.arange(9), out=m.zeros(9)),
        "output tensor's dtype is wrong",
    ),
    "searchsorted out int32": (
        lambda m: m.searchsorted(m.arange(9), m.arange(9), out=m.zeros(9, dtype=m.int32)),
        "output tensor's dtype is wrong",
    ),
    "searchsorted out int64 int32": (
        lambda m: m.searchsorted(m.arange(9), m.arange(9), out=m.zeros(9, dtype=m.int64), out_int32=True),
        "output tensor's dtype is wrong",
    ),
    "searchsorted side": (
        lambda m: m.searchsorted(m.arange(9), m.arange(9), side="bad"),
        "side can only be 'left' or 'right'",
    ),
    "searchsorted sorter size": (
        lambda m: m.searchsorted(m.arange(9.0), m.arange(9), sorter=m.arange(8)),
        "boundary and sorter must have the same size",
    ),
    "searchsorted sorter dtype": (
        lambda m: m.searchsorted(m.arange(9.0), m.arange(9), sorter=m.arange(9.0)),
        "sorter must be a tensor of long dtype",
    ),
    "searchsorted sorter range": (
        lambda m: m.searchsorted(m.tensor([1, 2, 3]), 2.5, sorter=m.tensor([0, 1, 3])),
        "sorter index out of range",
    ),
    "searchsorted sorter negative": (
        lambda m: m.searchsorted(m.tensor([1, 2, 3]), 2.5, sorter=m.tensor([-1, 1, 2])),
        "sorter index out of range",
    ),
    "quantile empty": (lambda m: m.quantile(m.tensor([]), 0.5), r"quantile\(\) input tensor must be non-empty"),
    "quantile q 2-d": (
        lambda m: m.quantile(m.tensor([1.0]), m.tensor([[1.0]])),
        r"quantile\(\) q must be a scalar or 1D tensor",
    ),
    "quantile int": (
        lambda m: m.quantile(m.tensor([1]), 0.5),
        r"quantile\(\) input tensor must be either float or double dtype",
    ),
    "quantile q dtype": (
        lambda m: m.quantile(m.tensor([1.0]), m.tensor([1])),
        r"quantile\(\) q tensor must be same dtype as the input tensor",
    ),
    "quantile q negative": (
        lambda m: m.quantile(m.tensor([1.0]), -1.0),
        r"quantile\(\) q must be in the range \[0, 1\] but got -1",
    ),
    "quantile q large": (
        lambda m: m.quantile(m.tensor([1.0]), 1.1),
        r"quantile\(\) q must be in the range \[0, 1\] but got 1.1",
    ),
    "quantile out dtype": (
        lambda m: m.quantile(m.tensor([1.0]), 0.5, out=m.empty([], dtype=m.int32)),
        r"quantile\(\) out tensor must be same dtype as the input tensor",
    ),
    "quantile interpolation": (
        lambda m: m.quantile(m.tensor([1.0]), m.tensor([1.0]), None, False, interpolation="random_mode"),
        r"quantile\(\) interpolation must be one of linear, lower, higher, midpoint or nearest, but got random_mode",
    ),
    "quantile q values": (
        lambda m: m.quantile(m.tensor([1.0]), m.tensor([0.5, 1.1, -1])),
        r"quantile\(\) q values must be in the range \[0, 1\]",
    ),
    "aminmax complex": (lambda m: m.aminmax(m.tensor(1.0 + 1j), dim=0), "not implemented"),
    "nansum complex": (lambda m: m.nansum(m.tensor([1 + 1j, 2j])), "nansum on CPU does not support complex inputs"),
    "sum out dtype": (
        lambda m: m.sum(m.ones(3, 4, dtype=m.int32), 0, out=m.ones(4, dtype=m.int64), dtype=m.int16),
        None,
    ),
}


@pytest.mark.parametrize("name", cases(ERRORS, "test_errors", SLOW))
def test_errors(name):
    fn, match = ERRORS[name]
    same(fn, match=match, name=name)


@pytest.mark.parametrize(
    "name",
    cases(
        ["dim reduction float32", "min max nan", "argmin argmax ties", "logsumexp", "median", "var std"],
        "test_reductions_on_vulkan",
        SLOW,
    ),
)
def test_reductions_on_vulkan(name, gpu):
    same(on_device(gpu, CASES[name]), name=name, **TOLERANCE)
