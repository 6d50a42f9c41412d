"""Movement ops are views: random chains of them must index like numpy does."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import vkml
from vkml.graph.view import View, ViewStack


def _apply_numpy_and_vkml(ops, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    t = vkml.tensor(a)
    for op in ops:
        kind = op[0]
        if kind == "permute":
            order = op[1][: a.ndim]
            order = sorted(range(a.ndim), key=lambda i: order[i] if i < len(order) else i)
            a, t = a.transpose(order), t.permute(*order)
        elif kind == "flip" and a.ndim:
            d = op[1] % a.ndim
            a, t = np.flip(a, d), t.flip(d)
        elif kind == "slice" and a.ndim:
            d = op[1] % a.ndim
            start, step = op[2] % max(a.shape[d], 1), op[3]
            index = [slice(None)] * a.ndim
            index[d] = slice(start, None, step)
            a, t = a[tuple(index)], t[tuple(index)]
        elif kind == "reshape":
            flat = a.reshape(-1)
            if op[1] and flat.size % op[1] == 0:
                a, t = flat.reshape(op[1], -1), t.reshape(op[1], -1)
            else:
                a, t = flat, t.reshape(-1)
        elif kind == "expand":
            a2 = a[None]
            a, t = np.broadcast_to(a2, (op[1],) + a.shape), t.unsqueeze(0).expand(op[1], *a.shape)
    return a, t


ops_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("permute"), st.permutations(range(4))),
        st.tuples(st.just("flip"), st.integers(0, 3)),
        st.tuples(st.just("slice"), st.integers(0, 3), st.integers(0, 5), st.integers(1, 3)),
        st.tuples(st.just("reshape"), st.integers(0, 6)),
        st.tuples(st.just("expand"), st.integers(1, 3)),
    ),
    max_size=6,
)


@settings(max_examples=60)
@given(ops=ops_strategy, shape=st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_random_movement_chains_match_numpy(ops, shape):
    expected, t = _apply_numpy_and_vkml(ops, tuple(shape))
    got = t.numpy()
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)


def test_reshape_of_transposed_view_stays_one_layer_when_strides_chain():
    v = View.contiguous((4, 6)).permute((1, 0))  # strides (1, 6)
    assert v.reshape((6, 2, 2)) == View((6, 2, 2), (1, 12, 6), 0, None)
    assert v.reshape((24,)) is None  # not expressible: a second layer is needed
    stack = ViewStack((View.contiguous((4, 6)),)).permute((1, 0)).reshape((24,))
    assert len(stack.views) == 2


def test_pad_masks_and_flip_of_padded_view():
    v = View.contiguous((3,)).pad(((2, 1),))
    assert v.shape == (6,) and v.mask == ((2, 5),) and v.offset == -2
    f = v.flip((0,))
    assert f.mask == ((1, 4),)


def test_views_do_not_copy_until_realized():
    x = vkml.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = x.T[1:, ::2].flip(0)
    assert y.node.op == "view" and y.node.srcs[0] is x.node
    assert np.array_equal(y.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4).T[1:, ::2][::-1])
