"""PyTorch's test/test_shape_ops.py (TestShapeOps), its hand-written checks run on torch and on vkml
and compared as tests/pytorch_suite_ops.py says: unbind, tolist, movedim, diag and diagonal, trace,
clamp with scalar and tensor bounds (NaN propagation, out=), flip, fliplr/flipud, rot90, nonzero
(as_tuple, out=), unfold of empty and 0-dim tensors, and the errors with PyTorch's wording.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from optest import skip_before_pytorch
from pytorch_suite_ops import cases, on_device, same

# Cases that take over ~0.06 s each (CPU-backend kernels to build): behind the exhaustive marker
# (pytest -m exhaustive), so that this file adds little to the default suite.
SLOW = frozenset(
    (
        "test_shape_ops[clamp float32]",
        "test_shape_ops[clamp int64]",
        "test_shape_ops[clamp tensor bounds]",
        "test_shape_ops[diagonal multidim]",
        "test_shape_ops[flip numpy]",
        "test_shape_ops[flip]",
        "test_shape_ops[movedim]",
        "test_shape_ops[nonzero discontiguous]",
        "test_shape_ops[nonzero]",
        "test_shape_ops[trace float32]",
        "test_shape_ops[trace int32]",
        "test_shape_ops[trace int64]",
        "test_shape_ops[trace int8]",
        "test_shape_ops[trace uint8]",
        "test_shape_ops[unbind]",
        "test_shape_ops_on_vulkan[clamp nan]",
        "test_shape_ops_on_vulkan[flip]",
        "test_shape_ops_on_vulkan[nonzero discontiguous]",
    )
)


RNG = np.random.default_rng(31)
X100 = (RNG.random(100) * 50 - 25).astype(np.float32)
NAN_MASK = RNG.random(100) < 0.5
X_NAN = np.where(NAN_MASK, np.nan, X100).astype(np.float32)
BITS = RNG.integers(0, 2, (5, 5, 5))


def _clamp_forms(values, dtype):
    """Every form of clamp and clip PyTorch's test runs, for each of its bound combinations."""

    def run(m):
        out = []
        for lo, hi in itertools.product((-10, None), (10, None)):
            if lo is None and hi is None:
                continue
            x = m.tensor(values).to(getattr(m, dtype))
            for op in (m.clamp, m.Tensor.clamp, m.Tensor.clamp_, m.clip, m.Tensor.clip, m.Tensor.clip_):
                out.append(op(x.clone(), lo, hi))
            for op in (m.clamp, m.clip):
                o = m.empty_like(x)
                op(x, min=lo, max=hi, out=o)
                out.append(o)
        return out

    return run


def _nonzero_out(m):
    out = []
    for shape in ((12,), (12, 1), (1, 12), (6, 2), (3, 2, 2), (5, 5, 5)):
        n = int(np.prod(shape))
        for dtype in (m.float32, m.int64, m.bool, m.float16, m.uint8):
            t = m.tensor(BITS.reshape(-1)[:n].reshape(shape)).to(dtype)
            dst = m.empty([], dtype=m.int64)
            m.nonzero(t, out=dst)
            out += [t.nonzero(as_tuple=False), dst, m.nonzero(t, as_tuple=True), t.nonzero(as_tuple=True)]
    return out


def _nonzero_discontiguous(m):
    t = m.tensor(BITS[0, :4, :4])
    nc = m.zeros(4, 8, dtype=m.int64)[:, ::2]
    nc.copy_(t)
    dst1 = t.nonzero()
    dst3 = m.empty_like(dst1)
    ptr3 = dst3.data_ptr()
    m.nonzero(t, out=dst3)
    dst4 = m.empty(dst1.size(0), dst1.size(1) * 2, dtype=m.int64)[:, ::2]
    ptr4, strides4 = dst4.data_ptr(), dst4.stride()
    m.nonzero(t, out=dst4)
    return nc.nonzero(), dst3, dst3.data_ptr() == ptr3, dst4, dst4.data_ptr() == ptr4, dst4.stride() == strides4


def _flip_cases(m):
    data = m.tensor([1, 2, 3, 4, 5, 6, 7, 8]).view(2, 2, 2)
    nonctg = m.zeros(2, 2, 4, dtype=m.int64)[:, :, ::2]
    nonctg.copy_(data)
    out = []
    for t in (data, nonctg):
        for dims in (0, 1, 2, -1, (0, 1), (1, 0), (-3, 1), (0, 1, 2), (2, 0, 1)):
            out.append(t.flip(dims))
    expanded = m.tensor([1, 2, 3]).view(3, 1).expand(3, 2)
    out += [expanded.flip(0), expanded.flip(1), data.transpose(0, 1).flip((0, 1, 2))]
    rect = m.tensor([1, 2, 3, 4, 5, 6]).view(2, 3)
    out += [rect.flip(0), rect.flip(1)]
    image = m.arange(2 * 3 * 8 * 8.0).view(2, 3, 8, 8)
    for t in (image, image.contiguous(memory_format=m.channels_last)):
        out += [t.flip(3), t.flip(2), t[..., ::2, :].flip(3), t[..., ::2].flip(3)]
    empty = m.tensor(())
    out += [empty.flip(0), empty.flip(()), m.zeros(3, 2, 1).flip(()), m.zeros(3, 0, 2).flip(1), m.tensor(1.5).flip(0)]
    out += [m.zeros(2, 3, 4).flip(d).shape for d in ((0,), (1, 2), (0, 2))]
    return out


def _unfold_scalars(m):
    x = m.tensor(0.5)
    return x.unfold(0, 0, 1), x.unfold(0, 0, 2), x.unfold(0, 1, 1)


def _tolist(m):
    t3 = m.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])
    nc = t3.select(1, 1)
    return (
        m.tensor([]).tolist(),
        m.tensor([1.0, 2.0, 3.0]).tolist(),
        m.tensor([[1, 2], [3, 4]]).tolist(),
        nc.tolist(),
        nc.is_contiguous(),
    )


def _trace(dtype):
    def run(m):
        out = []
        for k, shape in enumerate(((10, 1), (1, 10), (20, 30), (30, 20), (25, 25))):
            rng = np.random.default_rng(k)  # the same values on both sides
            t = m.tensor(rng.integers(-9, 9, shape) if dtype != "float32" else rng.standard_normal(shape))
            t = t.to(getattr(m, dtype))
            out.append(t.trace())
        return out

    return run


def _movedim(m):
    x = m.arange(2 * 3 * 5 * 7.0).view(2, 3, 5, 7)
    out = []
    for fn in (m.movedim, m.moveaxis):
        for src, dst in (
            (0, 3),
            (-1, 0),
            (1, -2),
            ((0, 1), (1, 0)),
            ((0, 1), (0, 1)),
            (1, 1),
            ((), ()),
            ((3, 0, -3), (0, -1, 2)),
        ):
            out.append(fn(x, source=src, destination=dst))
    out.append(m.movedim(m.tensor(3.0), 0, 0))
    return out


CASES = {
    "unbind": lambda m: (
        [m.arange(120.0).view(2, 3, 4, 5).unbind(d) for d in range(4)] + [m.unbind(m.arange(6).view(2, 3), 1)]
    ),
    "tolist": _tolist,
    "movedim": _movedim,
    "diag": lambda m: [m.diag(m.arange(100.0).view(10, 10)), m.diag((m.arange(100).view(10, 10) % 3) == 0)],
    "diag out": lambda m: [o for o in [m.tensor(())] for _ in [m.diag(m.arange(16.0).view(4, 4), out=o)]],
    "diagonal": lambda m: [m.diagonal(m.arange(100.0).view(10, 10), 7), m.diag(m.arange(100.0).view(10, 10), 7)],
    "diagonal multidim": lambda m: (
        [
            m.diagonal(m.arange(10 * 11 * 12 * 13.0).view(10, 11, 12, 13), *a)
            for a in ((2, 2, 3), (2,), (-2, 1, 2), (0, -2, -1))
        ]
        + [m.diagonal(m.arange(10 * 11 * 12 * 13.0).view(10, 11, 12, 13).permute(1, 2, 3, 0), 0, -2, -1)]
    ),
    "trace int64": _trace("int64"),
    "trace int32": _trace("int32"),
    "trace uint8": _trace("uint8"),
    "trace int8": _trace("int8"),
    "trace float32": _trace("float32"),
    "clamp float32": _clamp_forms(X100, "float32"),
    "clamp int64": _clamp_forms(X100, "int64"),
    "clamp nan": _clamp_forms(X_NAN, "float32"),
    "clamp nan bounds": lambda m: [m.clamp(m.ones(3), None, float("nan")), m.clamp(m.ones(3), float("nan"), None)],
    "clamp tensor bounds": lambda m: [
        m.clamp(m.tensor(X_NAN), m.tensor(X100[::-1].copy()) - 5, m.tensor(X100[::-1].copy()) + 5),
        m.clamp(m.tensor(X100), min=m.tensor(0.0)),
        m.clamp(m.tensor(X100).view(10, 10), max=m.arange(10.0)),
        m.clamp(m.arange(10), m.tensor(2.5), m.tensor(7.5)),
        m.clamp(m.arange(10), 2.5, 7.5),
        m.clamp(m.arange(10, dtype=m.int32), m.tensor(2), 7),
        m.clamp(m.arange(10.0), m.tensor(8.0), m.tensor(2.0)),
    ],
    "flip": _flip_cases,
    "flip numpy": lambda m: [
        m.flip(x, dims=d)
        for x in [m.arange(5 * 6 * 7.0).view(5, 6, 7)]
        for k in range(1, 4)
        for d in itertools.combinations(range(3), k)
    ],
    "fliplr": lambda m: (
        [m.fliplr(m.arange(n * 6).view(n, 6) if n else None) for n in (5,)] + [m.fliplr(m.arange(60.0).view(3, 4, 5))]
    ),
    "flipud": lambda m: [m.flipud(m.arange(7)), m.flipud(m.arange(60.0).view(3, 4, 5))],
    "rot90": lambda m: (
        [
            m.arange(1, 5).view(2, 2).rot90(k, d)
            for k, d in (
                (0, [0, 1]),
                (1, [0, 1]),
                (2, [0, 1]),
                (3, [0, 1]),
                (1, [1, 0]),
                (5, [0, 1]),
                (-1, [0, 1]),
                (-5, [0, 1]),
            )
        ]
        + [
            m.arange(1, 5).view(2, 2).rot90(),
            m.arange(1, 9).view(2, 2, 2).rot90(1, [1, 2]),
            m.arange(1, 9).view(2, 2, 2).rot90(1, [1, -1]),
        ]
    ),
    "rot90 3d": lambda m: [m.rot90(m.arange(60.0).view(3, 4, 5), k, [0, 1]) for k in range(4)],
    "nonzero": _nonzero_out,
    "nonzero discontiguous": _nonzero_discontiguous,
    "nonzero out astuple false": lambda m: [
        o for o in [m.empty(0, dtype=m.int64)] for _ in [m.nonzero(m.tensor(BITS[0]), as_tuple=False, out=o)]
    ],
    "nonzero non-diff": lambda m: m.tensor(X100[:10], requires_grad=True).nonzero().requires_grad,
    "nonzero 0-d": lambda m: [m.tensor(3.0).nonzero(), m.tensor(0.0).nonzero(), m.tensor(3.0).nonzero(as_tuple=True)],
    "sparse dense dim": lambda m: [(x.sparse_dim(), x.dense_dim()) for x in (m.zeros(()), m.zeros(2), m.zeros(2, 3))],
    "unfold empty": lambda m: [
        m.empty((0, 1, 3, 0), dtype=d).unfold(2, 3, 2).shape for d in (m.float32, m.bool, m.int64)
    ],
    "unfold scalars": _unfold_scalars,
}


# cases whose PyTorch behaviour changed by 2.13, the release vkml follows
CHANGED_IN_2_13 = {
    "clamp nan bounds": "a NaN bound propagates",
    "rot90 dim -3": "rot90's dimension errors",
    "rot90 dim 2": "rot90's dimension errors",
    "rot90 dim 3": "rot90's dimension errors",
}

# float sums: vkml adds in its fixed tree order (docs/architecture.md), PyTorch in its own
TOLERANCE = {"trace float32": {"atol": 1e-5, "rtol": 1.3e-6}}


@pytest.mark.parametrize("name", cases(CASES, "test_shape_ops", SLOW))
def test_shape_ops(name):
    if name in CHANGED_IN_2_13:
        skip_before_pytorch(2, 13, CHANGED_IN_2_13[name])
    same(CASES[name], name=name, **TOLERANCE.get(name, {}))


ERRORS = {
    "movedim source": (lambda m: m.movedim(m.zeros(5, 6, 7, 8), 5, 0), "Dimension out of range"),
    "moveaxis destination": (lambda m: m.moveaxis(m.zeros(5, 6, 7, 8), 0, 5), "Dimension out of range"),
    "movedim mismatch": (
        lambda m: m.movedim(m.zeros(5, 6, 7, 8), (1, 0), (0,)),
        "movedim: Invalid source or destination dims:",
    ),
    "movedim repeated source": (
        lambda m: m.movedim(m.zeros(5, 6, 7, 8), (0, 0), (0, 1)),
        "movedim: repeated dim in `source`",
    ),
    "movedim repeated source 3": (
        lambda m: m.movedim(m.zeros(5, 6, 7, 8), (0, 1, 0), (0, 1, 2)),
        "movedim: repeated dim in `source`",
    ),
    "movedim repeated destination": (
        lambda m: m.moveaxis(m.zeros(5, 6, 7, 8), (0, 1), (1, 1)),
        "movedim: repeated dim in `destination`",
    ),
    "movedim repeated destination 3": (
        lambda m: m.moveaxis(m.zeros(5, 6, 7, 8), (0, 1, 2), (1, 0, 1)),
        "movedim: repeated dim in `destination`",
    ),
    "clamp number and tensor": (lambda m: m.clamp(m.arange(3.0), 0.0, m.arange(3.0)), None),
    "clamp no bounds": (lambda m: m.zeros(3).clamp(), "At least one of 'min' or 'max' must not be None"),
    "clamp_ no bounds": (lambda m: m.zeros(3).clamp_(), "At least one of 'min' or 'max' must not be None"),
    "torch.clamp no bounds": (lambda m: m.clamp(m.zeros(3)), "At least one of 'min' or 'max' must not be None"),
    "flip repeated dim": (lambda m: m.zeros(2, 2, 2).flip(0, 1, 1), None),
    "flip no dims": (lambda m: m.zeros(2, 2, 2).flip(), None),
    "flip too many dims": (lambda m: m.zeros(2, 2, 2).flip(0, 1, 2, 3), None),
    "flip dim 3": (lambda m: m.zeros(2, 2, 2).flip(3), None),
    "fliplr 1-d": (lambda m: m.fliplr(m.zeros(42)), "Input must be >= 2-d."),
    "fliplr 0-d": (lambda m: m.fliplr(m.tensor(42)), "Input must be >= 2-d."),
    "flipud 0-d": (lambda m: m.flipud(m.tensor(42.0)), "Input must be >= 1-d."),
    "rot90 dim -3": (lambda m: m.arange(4).view(2, 2).rot90(1, [0, -3]), None),
    "rot90 dim 2": (lambda m: m.arange(4).view(2, 2).rot90(1, [0, 2]), None),
    "rot90 dim 3": (lambda m: m.arange(8).view(2, 2, 2).rot90(1, [0, 3]), None),
    "rot90 same dims": (lambda m: m.arange(8).view(2, 2, 2).rot90(1, [1, 1]), None),
    "rot90 three dims": (lambda m: m.arange(8).view(2, 2, 2).rot90(1, [0, 1, 2]), None),
    "rot90 one dim": (lambda m: m.arange(8).view(2, 2, 2).rot90(1, [0]), None),
    "nonzero float out": (lambda m: m.nonzero(m.ones(3), out=m.empty([], dtype=m.float32)), "scalar type Long"),
    "nonzero as_tuple out": (lambda m: m.nonzero(m.ones(3, 3), as_tuple=True, out=m.empty(9, 3, dtype=m.int64)), None),
    "unfold size -1": (lambda m: m.arange(1.0, 8).unfold(0, -1, 1), "size is -1 but must be >= 0"),
    "unfold step -1": (lambda m: m.arange(1.0, 8).unfold(0, 1, -1), "step is -1 but must be > 0"),
}


@pytest.mark.parametrize("name", cases(ERRORS, "test_errors", SLOW))
def test_errors(name):
    if name in CHANGED_IN_2_13:
        skip_before_pytorch(2, 13, CHANGED_IN_2_13[name])
    fn, match = ERRORS[name]
    same(fn, match=match, name=name)


@pytest.mark.parametrize(
    "name", cases(["flip", "clamp nan", "nonzero discontiguous", "rot90 3d"], "test_shape_ops_on_vulkan", SLOW)
)
def test_shape_ops_on_vulkan(name, gpu):
    same(on_device(gpu, CASES[name]), name=name)
