"""PyTorch's test/test_indexing.py (TestIndexing and the NumpyTests it ports), its hand-written
checks run on torch and on vkml and compared as tests/pytorch_suite_ops.py says: basic and advanced
reads and writes, bool and uint8 masks, ellipsis and None, negative and out-of-range indices,
``index_put_`` with ``accumulate``, empty indices, views versus copies, and the errors with
PyTorch's wording. A sample also runs with lavapipe as the default device.
"""

from __future__ import annotations

import pytest
from pytorch_suite_ops import cases, on_device, same

# Cases that take over ~0.06 s each (CPU-backend kernels to build): behind the exhaustive marker
# (pytest -m exhaustive), so that this file adds little to the default suite.
SLOW = frozenset(
    (
        "test_errors[bounds dim 1]",
        "test_get[0-d uint8 mask]",
        "test_get[big]",
        "test_get[bool list]",
        "test_get[broaden mask]",
        "test_get[int]",
        "test_get[mask 2d of 3d]",
        "test_get[numpy true]",
        "test_get[take_along_dim broadcast]",
        "test_get[take_along_dim]",
        "test_get_on_vulkan[bool weird 2]",
        "test_get_on_vulkan[rows cols 2d]",
        "test_get_on_vulkan[two masks]",
        "test_set[accumulate duplicates]",
        "test_set[accumulate expanded]",
        "test_set[bools and slices]",
        "test_set[byte mask accumulate]",
        "test_set[index_copy scalars]",
        "test_set[index_put bool src]",
        "test_set[index_put src dtype]",
        "test_set[int32 index_put_]",
        "test_set[scalar tensor grad]",
        "test_set[scalars]",
        "test_set[strided]",
        "test_set[then read]",
        "test_set_on_vulkan[accumulate duplicates]",
        "test_set_on_vulkan[bool 2d middle]",
        "test_set_on_vulkan[ellipsis pairs]",
        "test_set_on_vulkan[strided]",
    )
)


def consec(m, size, start=1):
    """1, 2, 3 ... in ``size`` (float32), as PyTorch's test builds its reference tensor."""
    n = 1
    for s in size:
        n *= s
    return m.arange(start, start + n, dtype=m.float32).view(*size)


def _setitem(make, index, value):
    """``x[index] = value`` on a fresh ``make(m)``; returns ``x``."""

    def run(m):
        x = make(m)
        x[index(m) if callable(index) else index] = value(m) if callable(value) else value
        return x

    return run


def _t(values, dtype="int64"):
    return lambda m: m.tensor(values, dtype=getattr(m, dtype))


R333 = lambda m: consec(m, (3, 3, 3))  # noqa: E731
R32 = lambda m: consec(m, (3, 2))  # noqa: E731
R45 = lambda m: m.arange(0.0, 20).view(4, 5)  # noqa: E731
R485 = lambda m: m.arange(0.0, 160).view(4, 8, 5)  # noqa: E731

GET = {
    # test_index
    "int": lambda m: R333(m)[1],
    "two ints": lambda m: R333(m)[0, 1],
    "slice": lambda m: R333(m)[0:2],
    "ellipsis last": lambda m: R333(m)[..., 2],
    "int ellipsis int": lambda m: R333(m)[0, ..., 2],
    "ellipsis ints": lambda m: R333(m)[2, ..., 2, 2],
    "ellipsis 5d": lambda m: consec(m, (3, 3, 3, 3, 3))[2, 1, 0, ..., 1],
    "long tensor": lambda m: consec(m, (5, 5, 5))[m.tensor([2, 4])],
    "empty long tensor": lambda m: R333(m)[m.tensor([], dtype=m.int64)],
    "none after int": lambda m: R333(m)[2, None, None],
    "none around slice": lambda m: R333(m)[None, 1:3, None, None],
    "zero-length slice": lambda m: R333(m)[slice(0), 2],
    "zero-length inner": lambda m: R333(m)[2, 1:1, 2],
    "steps": lambda m: consec(m, (10, 10, 10))[None, 2, 1:9:4],
    "steps 2": lambda m: consec(m, (10, 10, 10))[:, 2, 1:6:2],
    "step past end": lambda m: m.arange(10)[::11],
    # test_advancedindex
    "list one": lambda m: consec(m, (10,))[[0]],
    "tuple index": lambda m: consec(m, (10,))[(0, 2, 4),],
    "rows cols": lambda m: R32(m)[[0, 1, 1, 0, 2], [1]],
    "rows 2d cols": lambda m: R32(m)[m.tensor([[0, 0], [1, 2]]), ([0],)],
    "rows cols 2d": lambda m: R32(m)[m.tensor([[0, 0], [1, 2]]), m.tensor([[0, 1], [1, 0]])],
    "transposed": lambda m: m.arange(12.0).view(3, 4).t()[[0, 1, 1, 0, 3], [1]],
    "strided": lambda m: m.arange(0.0, 24).view(3, 8)[:, 1::2][:2][[0, 0, 1, 1], [0, 1, 0, 0]],
    "fewer indices": lambda m: R32(m)[[1], ...],
    "ellipsis first": lambda m: R32(m)[..., [1]],
    "dup cols": lambda m: R45(m)[:, [0, 1, 1, 2, 2]],
    "neg": lambda m: R45(m)[[-1], [0]],
    "non-adjacent": lambda m: R485(m)[(0, 2, 3), :, (1, 3, 4)],
    "broadcast pair": lambda m: R485(m)[((0, 1), (1, 0)), ((2, 3),), :],
    "ellipsis middle": lambda m: R485(m)[:, ..., (2, 3, 4)],
    "ellipsis then pair": lambda m: R485(m)[..., ((0, 1), (1, 0)), ((2, 1), (3, 5)), :],
    "pair then ellipsis": lambda m: R485(m)[((0, 1), (1, 0)), ((2, 1), (3, 5)), :, ...],
    "4d split": lambda m: m.arange(0.0, 1296).view(3, 9, 8, 6)[:, (0, 1, 3), (4,), (1, 3, 4)],
    "4d leading": lambda m: m.arange(0.0, 1296).view(3, 9, 8, 6)[
        ((1, 2), (1, 2)), ((0, 1), (2, 3)), ((2, 3), (3, 5)), :
    ],
    "big": lambda m: m.arange(0, 123344, dtype=m.int32)[[0, 123, 44488, 68807, 123343],],
    # shapes
    "none shapes": lambda m: [m.zeros(5, 7, 3)[i].shape for i in (None, (slice(None), None), (..., None))],
    "bool tensor rows": lambda m: consec(m, (5, 7, 3))[m.tensor([True, False, True, True, False])],
    "uint8 mask": lambda m: consec(m, (5, 7, 3))[m.tensor([1, 0, 1, 1, 0], dtype=m.uint8)],
    "bool of bool": lambda m: m.tensor([True, False, True])[m.tensor([True, False, False])],
    "uint8 of bool": lambda m: m.tensor([True, False, True])[m.tensor([1, 0, 0], dtype=m.uint8)],
    "list windows": lambda m: m.arange(100.0)[[range(i, i + 10) for i in range(32)]],
    "two masks": lambda m: consec(m, (5, 7, 3))[m.tensor([1, 0, 1, 1, 0]).bool(), :, m.tensor([1, 1, 1]).bool()],
    "two byte masks": lambda m: consec(m, (5, 7, 3))[
        m.tensor([1, 0, 1, 1, 0], dtype=m.uint8), :, m.tensor([1, 1, 1], dtype=m.uint8)
    ],
    "mask 2d of 3d": lambda m: consec(m, (5, 7, 3))[consec(m, (5, 7)) % 3 == 0],
    "empty mask result": lambda m: m.tensor([1.0])[m.tensor([1.0]) == 0],
    "int32 indices": lambda m: R45(m)[m.tensor([3, 0, 1], dtype=m.int32), m.tensor([1, 1, 4], dtype=m.int32)],
    "int32 rows": lambda m: R45(m)[m.tensor([3, 0], dtype=m.int32), :],
    "int indices 2d": lambda m: m.arange(0, 12).view(4, 3)[m.tensor([[0, 0], [3, 3]]), m.tensor([[0, 2], [0, 2]])],
    "broadcast rows": lambda m: m.arange(0, 12).view(4, 3)[m.tensor([0, 3])[:, None], m.tensor([0, 2])],
    "empty ndim index": lambda m: m.arange(5.0)[m.empty(0, 2, dtype=m.int64)],
    "empty ndim index inner": lambda m: m.zeros(2, 3, 4, 5)[:, m.empty(0, 6, dtype=m.int64)],
    "empty dim list": lambda m: m.zeros(10, 0)[[1, 2]],
    "two empty lists": lambda m: m.zeros(10, 0)[[], []],
    "ellipsis tensor": lambda m: m.arange(0, 9).view(3, 3)[..., m.tensor([0, 2])],
    "tensor ellipsis": lambda m: m.arange(0, 9).view(3, 3)[m.tensor([0, 2]), ...],
    "variable slicing": lambda m: m.arange(0, 16).view(4, 4)[m.tensor([0, 1], dtype=m.int32)[0] : m.tensor([0, 1])[1]],
    # test_multi_dimensional_bool_mask
    "seq mask": lambda m: m.zeros(2, 2, 3)[((True, False), (False, False)),].shape,
    "seq mask step": lambda m: m.zeros(2, 2, 3)[((True, False), (False, False)), ::2].shape,
    "seq mask none": lambda m: m.zeros(2, 2, 3)[((True, False), (False, False)), None].shape,
    "seq mask int": lambda m: m.zeros(2, 2, 3)[((True, False), (False, False)), 0].shape,
    "seq mask true": lambda m: m.zeros(2, 2, 3)[((True, False), (False, False)), True, True, True].shape,
    "seq mask false": lambda m: m.zeros(2, 2, 3)[((True, False), (False, False)), True, False, True].shape,
    "mask tensor true": lambda m: m.zeros(2, 2, 3)[m.tensor([[True, False], [False, False]]), m.tensor(True)].shape,
    "mask tensor false": lambda m: m.zeros(2, 2, 3)[m.tensor([[True, False], [False, False]]), m.tensor(False)].shape,
    "mask zero-d int": lambda m: m.zeros(2, 2, 3)[m.tensor([[True, False], [False, False]]), m.tensor(0)].shape,
    "mask middle": lambda m: m.zeros(3, 2, 2, 5)[:, m.tensor([[True, False], [False, False]]), :].shape,
    "mask middle int": lambda m: m.zeros(3, 2, 2, 5)[0, m.tensor([[True, False], [False, False]]), ::2].shape,
    "mask middle ellipsis": lambda m: (
        m.zeros(3, 2, 2, 5)[None, ..., m.tensor([[True, False], [False, False]]), ::2].shape
    ),
    # test_index_getitem_copy_bools_slices, test_single_bool_index
    "true": lambda m: m.arange(6.0).view(2, 3)[True],
    "false": lambda m: m.arange(6.0).view(2, 3)[False],
    "uint8 true": lambda m: m.arange(6.0).view(2, 3)[m.tensor(1, dtype=m.uint8)],
    "uint8 false": lambda m: m.arange(6.0).view(2, 3)[m.tensor(0, dtype=m.uint8)],
    "0-d true": lambda m: m.tensor(3.0)[True],
    "0-d false": lambda m: m.tensor(3.0)[False],
    "0-d uint8 mask": lambda m: m.tensor(1)[m.tensor(True, dtype=m.uint8)],
    "0-d bool mask": lambda m: m.tensor(True)[m.tensor(True)],
    # test_getitem_scalars
    "0-d tensor ints": lambda m: m.arange(6.0).view(2, 3)[m.tensor(0), m.tensor(1)],
    "0-d int32": lambda m: m.arange(6.0).view(2, 3)[m.tensor(1, dtype=m.int32)],
    "0-d int16": lambda m: m.arange(6.0).view(2, 3)[m.tensor(1, dtype=m.int16)],
    "0-d mixed": lambda m: m.arange(6.0).view(2, 3)[0, m.tensor(1)],
    "scalar ellipsis": lambda m: m.tensor(2.5)[...],
    "empty tuple": lambda m: m.tensor([1, 2, 3])[()],
    "empty list": lambda m: m.tensor([1, 2, 3])[[]],
    "float empty index": lambda m: m.tensor([1, 2, 3])[m.tensor([]).float()],
    # NumpyTests
    "numpy true": lambda m: m.tensor([[1, 2, 3], [4, 5, 6]])[True],
    "bool onedim": lambda m: m.tensor([[0.0, 0.0, 0.0]])[m.tensor([True])],
    "bool twodim": lambda m: m.arange(1, 10).view(3, 3)[
        m.tensor([[True, False, True], [False, True, False], [True, False, True]])
    ],
    "bool weird": lambda m: m.ones(2, 3, 4)[False, True, ...].shape,
    "bool weird 2": lambda m: m.ones(2, 3, 4)[True, [0, 1], True, True, [1], [[2]]],
    "bool weird tensors": lambda m: m.ones(2, 3, 4)[m.tensor(True), [0, 1], m.tensor(True), m.tensor(True), [1], [[2]]],
    "bool alldims": lambda m: m.ones(2, 3)[True, True].shape,
    "bool list": lambda m: m.arange(1, 10).view(3, 3)[[True, False, False]],
    "bool list pair": lambda m: m.arange(1, 10).view(3, 3)[[True, False, False], [True, False, False]],
    "bool list two": lambda m: m.arange(1, 10).view(3, 3)[[True, True, False]],
    "everything": lambda m: m.arange(1, 10).view(3, 3)[m.ones(3, 3).bool()],
    "broaden mask": lambda m: m.arange(6).view(2, 3)[m.tensor([True, False]), :],
    # take_along_dim (test_take_along_dim)
    "take_along_dim": lambda m: m.take_along_dim(
        m.arange(24.0).view(2, 3, 4).flip(1), m.arange(24.0).view(2, 3, 4).argsort(1), 1
    ),
    "take_along_dim none": lambda m: m.take_along_dim(m.arange(12.0).view(3, 4), m.tensor([11, 0, 5])),
    "take_along_dim broadcast": lambda m: m.take_along_dim(m.ones(3, 4, 1), m.ones(1, 2, 5, dtype=m.int64), 1),
    "take_along_dim empty": lambda m: m.take_along_dim(m.ones(3, 4, 5), m.ones(3, 0, 5, dtype=m.int64), 1),
    # index_select, index_copy, index_fill of scalars
    "index_select int32": lambda m: m.arange(12.0).view(3, 4).index_select(1, m.tensor([3, 0, 0], dtype=m.int32)),
    "index_select 0-d": lambda m: m.tensor(5.0).index_select(0, m.zeros((), dtype=m.int64)),
    "index_select 0-d source 1-d index": lambda m: m.tensor(5.0).index_select(0, m.zeros(1, dtype=m.int64)),
    "index_fill 0-d": lambda m: m.tensor(1).index_fill(0, m.tensor([0]), -1),
    "index_fill": lambda m: m.tensor([[1, 2], [4, 5]]).index_fill_(1, m.tensor([0]), 0),
}


@pytest.mark.parametrize("name", cases(GET, "test_get", SLOW))
def test_get(name):
    same(GET[name], name=name)


def _strided_set(m):
    x = m.arange(0.0, 24).view(3, 8)
    strided = x.view(-1)[10:].as_strided((2, 2), (7, 1))
    strided[[0, 1], [1, 0]] = m.tensor([-1.0, 2.0])
    return x, strided


def _set_then_read(m):
    x = consec(m, (10,))
    x[[0]] = -2
    x[[2, 3, 4]] = 4
    x[(0, 2, 4),] = m.tensor([5.0, 4.0, 3.0])
    return x


def _set_through_copy(m):
    """``x[1:2, [1, 2]]`` is a copy: zeroing it leaves ``x``; assigning to it writes ``x``."""
    x = m.arange(0, 12).view(4, 3)
    x[1:2, [1, 2]].zero_()
    y = x.clone()
    y[1:2, [1, 2]] = 0
    return x, y


def _bools_slices_set(m):
    out = []
    for a in (m.arange(6.0).view(2, 3), m.tensor(3)):
        neg = m.ones_like(a) * -1
        expanded = neg.unsqueeze(0).unsqueeze(0)
        a[True] = expanded
        a[False] = 5
        a[m.tensor(1, dtype=m.uint8)] = expanded * 2
        a[m.tensor(0, dtype=m.uint8)] = 5
        a[None] = expanded * 3
        out.append(a.clone())
        a[...] = expanded * 4
        out.append(a)
    return out


def _scalar_setitem(m):
    a = m.arange(6.0).view(2, 3)
    b = m.tensor([7.0, 8.0, 9.0])
    a[m.tensor(0)] = b
    a[1, m.tensor(0)] = 7.7
    r = m.tensor(1.0)
    r[...] = 9.9
    s = m.tensor(1)
    s[(Ellipsis,)] = 2
    return a, r, s


def _index_put_accumulate_expanded(m):
    t = m.zeros(5, 2)
    t.index_put_([m.tensor([0, 1, 2, 3]), m.tensor([1])], m.tensor(1.0), accumulate=True)
    t.index_put_([m.tensor([0, 1, 2, 3]), m.tensor([1])], m.tensor([1.0]), accumulate=True)
    u = m.zeros(4, 3, 2)
    idx = [m.tensor([0]), m.arange(3)[:, None], m.arange(2)[None, :]]
    u.index_put_(idx, m.tensor([-1.0, -2.0]), accumulate=True)
    u.index_put_(idx, m.tensor([[-1.0, -2.0]]), accumulate=True)
    return t, u


def _index_put_duplicates(m):
    import numpy as np

    rng = np.random.default_rng(7)
    idx = np.floor(np.cumsum(rng.uniform(-1, 1, 300))).astype(np.int64)
    idx = idx - idx.min()
    base = m.tensor(rng.standard_normal(int(idx.max()) + 1))
    vals = m.tensor(rng.standard_normal(idx.size))
    return base.index_put((m.tensor(idx),), vals, accumulate=True)


def _index_put_int32(m):
    x = m.arange(16.0).view(4, 4)
    src = m.tensor([1.5, 2.5, 3.5, 4.5])
    outs = []
    for accumulate in (False, True):
        for idx_dtype in (m.int64, m.int32):
            ind = m.arange(4, dtype=idx_dtype)
            outs.append(m.index_put_(x.clone(), (ind, ind), src, accumulate))
    return outs


def _byte_mask_accumulate(m):
    mask = m.zeros(10, dtype=m.uint8)
    y = m.ones(10, 10)
    y.index_put_((mask,), y[mask], accumulate=True)
    z = m.ones(10, 10)
    bmask = m.zeros(10, dtype=m.bool)
    z.index_put_((bmask,), z[bmask], accumulate=True)
    return y, z


def _set_item_scalar_tensor_grad(m):
    z = m.zeros(4, 3)
    w = m.tensor(1.0, requires_grad=True)
    z[:, 0] = w
    z.sum().backward()
    return w.grad


def _index_copy_scalars(m):
    outs = []
    for st in ((), (1,)):
        for si in ((), (1,)):
            for ss in ((), (1,)):
                target = m.full(st, 2.0)
                target.index_copy_(0, m.zeros(si, dtype=m.int64), m.full(ss, 5.0))
                outs.append(target)
    return outs


SET = {
    "list scalar": _setitem(R45, [1, 3], 44.0),
    "slice list": _setitem(R45, (slice(None), [1, 3]), 44.0),
    "list slice tensor": _setitem(R45, ([0, 2], slice(None)), lambda m: m.arange(10.0).view(2, 5)),
    "weird shape": _setitem(R45, (slice(None), [[0, 1], [2, 3]]), lambda m: m.arange(16.0).view(4, 2, 2)),
    "negatives": _setitem(R45, ([0, 2], [-1]), lambda m: m.tensor([7.0, 8.0])),
    "non-adjacent": _setitem(R485, ((0, 2, 3), slice(None), (1, 3, 4)), lambda m: m.arange(24.0).view(3, 8)),
    "pairs": _setitem(R485, (slice(None), ((0, 1), (2, 3)), ((0,),)), 212.0),
    "ellipsis pairs": _setitem(R485, (Ellipsis, ((0, 1), (1, 0)), ((2, 1), (3, 5)), slice(None)), 212.0),
    "4d": _setitem(
        lambda m: m.arange(0.0, 1296).view(3, 9, 8, 6), (slice(None), slice(None), [[2]], [[0, 3], [4, 4]]), 1333.0
    ),
    "step": _setitem(lambda m: m.zeros(4, 4), (0, slice(1, None, 2)), lambda m: m.tensor([3.0, 4.0])),
    "bool rows": _setitem(lambda m: m.tensor([[1, 2], [3, 4]]), lambda m: (m.tensor([1, 0]).bool(), slice(None)), 0),
    "bool cols": _setitem(lambda m: m.tensor([[1, 2], [3, 4]]), lambda m: (slice(None), m.tensor([1, 0]).bool()), 0),
    "bool 2d middle": _setitem(
        lambda m: m.tensor([[[[1], [2]], [[3], [4]]]]),
        lambda m: (slice(None), m.tensor([[1, 0], [0, 1]]).bool(), slice(None)),
        0,
    ),
    "empty index": _setitem(lambda m: m.arange(0, 12).view(4, 3), lambda m: m.tensor([], dtype=m.int64), -1),
    "empty mask": _setitem(lambda m: m.arange(0, 12).view(4, 3), lambda m: m.zeros(4, 3).bool(), -1),
    "int row": _setitem(lambda m: m.arange(0, 4).view(2, 2), 1, 5),
    "int row tensor": _setitem(lambda m: m.arange(0, 4).view(2, 2), 1, lambda m: m.arange(5, 7)),
    "byte mask rows": _setitem(
        lambda m: m.arange(0.0, 16).view(4, 4),
        lambda m: m.tensor([1, 0, 1, 0], dtype=m.uint8),
        lambda m: m.tensor([3.0, 4.0, 5.0, 6.0]),
    ),
    "bool mask twodim": _setitem(
        lambda m: m.arange(1, 10).view(3, 3),
        lambda m: m.tensor([[True, False, True], [False, True, False], [True, False, True]]),
        0,
    ),
    "bool onedim": _setitem(lambda m: m.tensor([[0.0, 0.0, 0.0]]), lambda m: m.tensor([True]), 1.0),
    "mask value broadcast": _setitem(
        lambda m: m.zeros(3, 4), lambda m: m.tensor([True, False, True]), lambda m: m.arange(4.0)
    ),
    "float value into int": _setitem(lambda m: m.zeros(5, dtype=m.int64), [0, 2], 2.7),
    "float tensor into int": _setitem(lambda m: m.zeros(5, dtype=m.int64), [0, 2], lambda m: m.tensor([-1.5, 3.9])),
    "int into bool": _setitem(lambda m: m.zeros(4, dtype=m.bool), lambda m: m.tensor([1, 3]), 2),
    "double into float": _setitem(lambda m: m.zeros(4), 1, lambda m: m.tensor(0.1, dtype=m.float64)),
    "strided": _strided_set,
    "then read": _set_then_read,
    "copy vs assign": _set_through_copy,
    "bools and slices": _bools_slices_set,
    "scalars": _scalar_setitem,
    "accumulate expanded": _index_put_accumulate_expanded,
    "accumulate duplicates": _index_put_duplicates,
    "int32 index_put_": _index_put_int32,
    "byte mask accumulate": _byte_mask_accumulate,
    "scalar tensor grad": _set_item_scalar_tensor_grad,
    "index_copy scalars": _index_copy_scalars,
    "index_put src dtype": lambda m: m.ones(3, 2, 4, dtype=m.int64).index_put_(
        (m.tensor([0, 2, 1]),), m.ones(3, 2, 4, dtype=m.int64), accumulate=True
    ),
    "index_put bool src": lambda m: m.ones(3, 2, dtype=m.bool).index_put_(
        (m.tensor([0, 2, 1]),), m.zeros(3, 2, dtype=m.bool), accumulate=True
    ),
}


@pytest.mark.parametrize("name", cases(SET, "test_set", SLOW))
def test_set(name):
    same(SET[name], name=name)


ERRORS = {
    "zero step": (lambda m: R333(m)[1:9:0], None),
    "negative step": (lambda m: R333(m)[1:9:-1], "step must be greater than zero"),
    "too many ints": (lambda m: R333(m)[1, 1, 1, 1], "too many indices for tensor of dimension 3"),
    "too many with slice": (lambda m: R333(m)[1, 1, 1, 1:1], None),
    "float index": (lambda m: R333(m)[0.0], None),
    "float slice": (lambda m: R333(m)[0.0:2.0], None),
    "float then slice": (lambda m: R333(m)[0.0, :, 0.0:2.0], None),
    "float ellipsis": (lambda m: R333(m)[0.0, ..., 0.0:2.0], None),
    "negative float": (lambda m: R333(m)[0, -1.4], None),
    "delitem": (lambda m: R333(m).__delitem__(0), None),
    "too many tensors": (lambda m: R32(m)[[1], [0, 2], [3]], None),
    "out of range int": (lambda m: m.zeros(10)[10], "out of"),
    "out of range negative": (lambda m: m.zeros(10)[-11], "out of"),
    "out of range tensor": (lambda m: m.zeros(10)[m.tensor([10])], "out of"),
    "out of range list": (lambda m: m.zeros(10)[[-11]], "out of"),
    "list too many": (lambda m: m.zeros(1000)[[range(i, i + 10) for i in range(31)]], "too many indices"),
    "dim size 0": (lambda m: m.zeros(10, 0)[:, [0, 1]], "for dimension with size 0"),
    "empty byte index": (lambda m: m.zeros(5)[m.empty(0, 2, dtype=m.uint8)], None),
    "setitem expansion": (lambda m: m.zeros(2, 3).__setitem__(True, m.zeros(2, 3).expand(5, 1, 2, 3)), None),
    "setitem expansion tensor": (
        lambda m: m.zeros(2, 3).__setitem__(m.tensor(True), m.zeros(2, 3).expand(5, 1, 2, 3)),
        None,
    ),
    "0-d slice": (lambda m: m.tensor(1.0)[:], None),
    "0-d tensor index": (lambda m: m.tensor(1.0)[m.tensor(0)], None),
    "0-d setitem slice": (lambda m: m.tensor(1.0).__setitem__(slice(None), 8.8), None),
    "0-d setitem tensor": (lambda m: m.tensor(1.0).__setitem__(m.tensor(0), 8.8), None),
    "0-d setitem slice expanded": (lambda m: m.tensor(3).__setitem__(slice(None), m.ones(1, 1)), None),
    "0-d int index": (lambda m: m.tensor(10)[0], "invalid index"),
    "string slice": (lambda m: m.arange(0, 16).view(4, 4)["0":"1"], "slice indices"),
    "bounds dim 1": (
        lambda m: m.arange(0, 100).view(2, 5, 10)[0, 5],
        "index 5 is out of bounds for dimension 1 with size 5",
    ),
    "bounds dim 0": (
        lambda m: m.arange(0, 100).view(2, 5, 10)[4, 5],
        "index 4 is out of bounds for dimension 0 with size 2",
    ),
    "bounds dim 2": (
        lambda m: m.arange(0, 100).view(2, 5, 10)[0, 1, 15],
        "index 15 is out of bounds for dimension 2 with size 10",
    ),
    "bounds slice": (
        lambda m: m.arange(0, 100).view(2, 5, 10)[:, :, 12],
        "index 12 is out of bounds for dimension 2 with size 10",
    ),
    "int64 min": (lambda m: m.tensor([])[-(2**63)], None),
    "int64 max": (lambda m: m.tensor([])[2**63 - 1], None),
    "huge int": (lambda m: m.zeros(3, 3)[1 << 30], None),
    "overflow int": (lambda m: m.zeros(3, 3)[1 << 64], None),
    "mask too short": (lambda m: m.ones(5, 4, 3)[m.tensor([True])], "mask"),
    "mask too long": (lambda m: m.ones(5, 4, 3)[m.tensor([False] * 6)], "mask"),
    "byte mask shape": (lambda m: m.ones(5, 4, 3)[m.zeros(4, 4, dtype=m.uint8)], "mask"),
    "byte mask shape after slice": (lambda m: m.ones(5, 4, 3)[:, m.zeros(4, 4, dtype=m.uint8)], "mask"),
    "false with list": (lambda m: m.ones(2, 3, 4)[False, [0, 1], ...], None),
    "false tensor with list": (lambda m: m.ones(2, 3, 4)[m.tensor(False), [0, 1], ...], None),
    "float tensor index": (lambda m: m.tensor([1, 2, 3])[m.tensor([]).float()], None),
    "bool assign empty": (lambda m: m.arange(0, 4).__setitem__(m.arange(0, 4) > -1, m.tensor([])), "shape mismatch"),
    "bool assign three": (
        lambda m: m.arange(0, 4).__setitem__(m.arange(0, 4) > -1, m.tensor([1, 2, 3])),
        "shape mismatch",
    ),
    "bool assign one row": (
        lambda m: m.arange(0, 4)[:1].__setitem__(m.arange(0, 4)[:1] > -1, m.tensor([1, 2, 3])),
        "shape mismatch",
    ),
    "index_put empty indices": (lambda m: m.rand(()).index_put([], m.tensor([1.0]), True), None),
    "index_copy too large": (lambda m: m.zeros(3, 5).index_copy_(1, m.full((8,), 5), m.zeros(3, 8)), None),
    "index_copy negative": (lambda m: m.zeros(3, 5).index_copy_(1, m.full((8,), -1), m.zeros(3, 8)), None),
    "index_copy very negative": (lambda m: m.zeros(3, 5).index_copy_(1, m.full((8,), -6), m.zeros(3, 8)), None),
    "take_along_dim ndim": (
        lambda m: m.take_along_dim(m.zeros(2, 3, 1, 4), m.zeros(3, 1, 4, dtype=m.int64), dim=0),
        "input and indices should have the same number of dimensions",
    ),
    "take_along_dim bool": (
        lambda m: m.take_along_dim(m.zeros(2, 3), m.zeros(2, 3, dtype=m.bool), dim=0),
        "dtype of indices should be Long",
    ),
    "take_along_dim float": (
        lambda m: m.take_along_dim(m.zeros(2, 3), m.zeros(2, 3), dim=0),
        "dtype of indices should be Long",
    ),
    "take_along_dim int32": (
        lambda m: m.take_along_dim(m.zeros(2, 3), m.zeros(2, 3, dtype=m.int32), dim=0),
        "dtype of indices should be Long",
    ),
    "take_along_dim dim -7": (
        lambda m: m.take_along_dim(m.zeros(2, 3), m.zeros(2, 3, dtype=m.int64), dim=-7),
        "Dimension out of range",
    ),
    "take_along_dim dim 7": (
        lambda m: m.take_along_dim(m.zeros(2, 3), m.zeros(2, 3, dtype=m.int64), dim=7),
        "Dimension out of range",
    ),
    "index_fill complex": (lambda m: m.tensor([[1, 2], [4, 5]]).index_fill_(1, m.tensor([0]), 1 + 1j), "Scalar"),
    "unravel float": (lambda m: m.unravel_index(m.tensor(0.5), (2, 2)), "expected 'indices' to be integer"),
    "unravel empty float": (lambda m: m.unravel_index(m.tensor([]), (10, 3, 5)), "expected 'indices' to be integer"),
    "unravel tensor shape": (
        lambda m: m.unravel_index(m.tensor([1], dtype=m.int64), m.tensor([1, 2, 3])),
        "expected 'shape' to be int or sequence",
    ),
    "unravel float in shape": (
        lambda m: m.unravel_index(m.tensor([1], dtype=m.int64), (1, 2, 2.0)),
        "expected 'shape' sequence to only contain ints",
    ),
    "unravel negative shape": (
        lambda m: m.unravel_index(m.tensor(0), (2, -3)),
        r"'shape' cannot have negative values, but got \(2, -3\)",
    ),
}


@pytest.mark.parametrize("name", cases(ERRORS, "test_errors", SLOW))
def test_errors(name):
    fn, match = ERRORS[name]
    same(fn, match=match, name=name)


VULKAN_SAMPLE = [
    "rows cols 2d",
    "two masks",
    "non-adjacent",
    "broadcast rows",
    "empty ndim index inner",
    "bool weird 2",
]
VULKAN_SET_SAMPLE = ["ellipsis pairs", "accumulate duplicates", "bool 2d middle", "float tensor into int", "strided"]


@pytest.mark.parametrize("name", cases(VULKAN_SAMPLE, "test_get_on_vulkan", SLOW))
def test_get_on_vulkan(name, gpu):
    same(on_device(gpu, GET[name]), name=name)


@pytest.mark.parametrize("name", cases(VULKAN_SET_SAMPLE, "test_set_on_vulkan", SLOW))
def test_set_on_vulkan(name, gpu):
    same(on_device(gpu, SET[name]), name=name)
