"""The peer op-suite sweep, fifth part: what the op_db sweep's later groups found (tests/opdb_sweep.py
from the groups session 16 left untriaged). Each row is one of PyTorch's OpInfo samples written out by
hand, so that the fix stays covered in the default suite without importing torch.testing._internal.
Rows run on torch and on vkml and are compared as tests/peer_sweep.py says (values, dtype, shape,
gradients, inputs after the call, the exception class).
"""

from __future__ import annotations

import pytest
from peer_sweep import check


def _copy_into_result(m, x, src):
    """``copy_`` over all of a non-leaf: x's history gets a zero gradient (not None), src its own."""
    out = x * 2
    out.copy_(src * 3)
    return out


def _copy_through_reshape(m, x, src):
    """As above, written through a view that shows every element of the non-leaf."""
    out = x * 2
    out.view(-1).copy_((src * 3).reshape(-1))
    return out


def _setitem_all(m, x, src):
    out = x + 1
    out[:] = src * 3
    return out


def _scatter_reduce_bool(mode, include_self):
    def run(m, x, src):
        return m.scatter_reduce(x, 0, m.tensor([[0, 1], [0, 1], [2, 2]]), src, mode, include_self=include_self)

    return run


CASES = [
    # pairwise_distance (and the triplet losses over it) of integer tensors: the default float dtype
    ("pairwise_distance_int64", lambda m, a, b: m.nn.functional.pairwise_distance(a, b), ["i3x4", "i3x4"]),
    ("pairwise_distance_int64_eps0", lambda m, a, b: m.nn.functional.pairwise_distance(a, b, eps=0), ["i3x4", "i3x4"]),
    (
        "triplet_margin_loss_int64",
        lambda m, a, p, n: m.nn.functional.triplet_margin_loss(a, p, n, margin=1e-6),
        ["i5x10", "i5x10", "i5x10"],
    ),
    (
        "triplet_margin_loss_int64_swap",
        lambda m, a, p, n: m.nn.functional.triplet_margin_loss(a, p, n, swap=True),
        ["i5x10", "i5x10", "i5x10"],
    ),
    # threshold of an integer tensor: both scalars truncated to the input's type first
    ("threshold_int64", lambda m, x: m.nn.functional.threshold(x, 2.7, 7.9), ["i3x4"]),
    ("threshold_int64_negative_truncates", lambda m, x: m.nn.functional.threshold(x, -2.7, -1.9), ["i3x4"]),
    ("threshold_int32_inplace", lambda m, x: m.nn.functional.threshold(x, 1, -4, inplace=True), ["j3x4"]),
    ("threshold.top_level_int64", lambda m, x: m.threshold(x, 0.5, 9), ["i6"]),
    ("threshold_uint8_value_overflows", lambda m, x: m.nn.functional.threshold(x, 2.7, 300.9), ["u3x4"]),
    ("threshold_bool_raises", lambda m, x: m.nn.functional.threshold(x, 0.5, 0.0), ["b3x4"]),
    # batch_norm of a 1-D input: an empty one is returned as it is, a non-empty one is an IndexError
    (
        "batch_norm_empty_1d_training",
        lambda m, x: m.nn.functional.batch_norm(x, m.zeros(0), m.ones(0), training=True),
        ["f0"],
    ),
    ("batch_norm_empty_1d_eval", lambda m, x: m.nn.functional.batch_norm(x, m.zeros(0), m.ones(0)), ["f0"]),
    ("batch_norm_1d_raises", lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True), ["f3"]),
    ("batch_norm_0d_raises", lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True), ["f"]),
    # the cast methods take memory_format
    ("half.method_channels_last", lambda m, x: x.half(memory_format=m.channels_last), ["f2x3x4x5"]),
    ("long.method_contiguous_format", lambda m, x: x.long(memory_format=m.contiguous_format), ["f3x4"]),
    ("float.method_preserve_format", lambda m, x: x.float(memory_format=m.preserve_format), ["d3x4"]),
    ("bool.method_channels_last_rank_mismatch", lambda m, x: x.bool(memory_format=m.channels_last), ["f3x4"]),
    # narrow: a bool start tensor raises; narrow_copy's too-large dim is PyTorch's RuntimeError
    ("narrow_bool_start_raises", lambda m, x: m.narrow(x, 0, m.tensor(True), 1), ["f3x4"]),
    ("narrow_copy_dim_too_large", lambda m, x: m.narrow_copy(x, 2, 0, 1), ["f3x4"]),
    ("narrow_copy_dim_too_small", lambda m, x: m.narrow_copy(x, -3, 0, 1), ["f3x4"]),
    # writes over every element of a non-leaf: its history gets a zero gradient, as PyTorch's
    ("slice_scatter_whole_dim", lambda m, x, s: m.slice_scatter(x, s, 0, 0, 3), ["f3x4", "f3x4"]),
    ("slice_scatter.method_whole_dim_1", lambda m, x, s: x.slice_scatter(s, 1, 0, 4, 1), ["f3x4", "f3x4"]),
    ("copy__over_non_leaf", _copy_into_result, ["f3x4", "f3x4"]),
    ("copy__through_reshape_view", _copy_through_reshape, ["f3x4", "f3x4"]),
    ("setitem_all_with_tensor", _setitem_all, ["f3x4", "f3x4"]),
    # torch.fill: the input gets a zero gradient
    ("fill_number", lambda m, x: m.fill(x, 2.5), ["f3x4"]),
    ("fill_0d_tensor", lambda m, x, v: m.fill(x, v), ["f3x4", "f"]),
    # put and index_put that write nothing: the values still get a (zero) gradient
    ("put_empty_index", lambda m, x, s: m.put(x, m.zeros(0, dtype=m.int64), s), ["f3x2", "f0"]),
    ("put.method_empty_index_accumulate", lambda m, x, s: x.put(m.zeros(0, dtype=m.int64), s, True), ["f", "f0"]),
    (
        "index_put_false_mask_accumulate",
        lambda m, x, v: m.index_put(x, (m.zeros(3, dtype=m.bool),), v, True),
        ["f3x2", "f2"],
    ),
    # gather and scatter take an empty index of any integer dtype
    ("gather_empty_uint8_index", lambda m, x: m.gather(x, 0, m.zeros(0, dtype=m.uint8)), ["f5"]),
    ("gather_empty_2d_index_of_1d_input", lambda m, x: m.gather(x, 0, m.zeros(2, 0, dtype=m.uint8)), ["f5"]),
    ("gather_uint8_index_raises", lambda m, x: m.gather(x, 0, m.zeros(1, dtype=m.uint8)), ["f5"]),
    ("scatter_empty_int16_index", lambda m, x: m.scatter(x, 0, m.zeros(0, dtype=m.int16), 1.0), ["f5"]),
    # renorm needs 2 dims; roll of a 0-d tensor along a dim is an IndexError
    ("renorm_0d_raises", lambda m, x: m.renorm(x, 2, 0, 1.0), ["f"]),
    ("renorm_1d_raises", lambda m, x: m.renorm(x, 2, 0, 1.0), ["f3"]),
    ("renorm_dim_out_of_range", lambda m, x: m.renorm(x, 2, 2, 1.0), ["f3x2"]),
    ("roll_0d_dim_raises", lambda m, x: m.roll(x, 0, 0), ["f"]),
    ("roll_0d_no_dim", lambda m, x: m.roll(x, 1), ["f"]),
    # tensordot contracts a size-1 dim with any size (the other operand summed over it)
    ("tensordot_size1_contraction", lambda m, a, b: m.tensordot(a, b, dims=([0, 1], [2, 0])), ["f1x1x1", "f2x1x2"]),
    ("tensordot_size1_second", lambda m, a, b: m.tensordot(a, b, dims=([1], [0])), ["f2x3x4", "f1x5"]),
    ("tensordot_size1_int64", lambda m, a, b: m.tensordot(a, b, dims=([0, 1], [0, 2])), ["i1x2x3", "i4x1x2"]),
    # scatter_reduce of bool tensors without the old values: amax is "any", prod "all" (from True)
    *(
        (
            f"scatter_reduce_bool_{mode}_{'with' if own else 'without'}_self",
            _scatter_reduce_bool(mode, own),
            ["b3x2", "b3x2"],
        )
        for mode in ("amax", "amin", "prod", "sum")
        for own in (False, True)
    ),
    # pdist with p=0 counts: the input gets a zero gradient
    ("pdist_p0_grad", lambda m, x: m.nn.functional.pdist(x, 0.0), ["f4x3"]),
    # cat takes a sequence of tensors, not a tensor
    ("cat_of_a_tensor_raises", lambda m, x: m.cat(x), ["F2x3"]),
    ("concat_of_a_tensor_raises", lambda m, x: m.concat(x, 1), ["F2x3"]),
    # gather, index_select and take write only an out of the result's dtype
    (
        "gather_out_float64_raises",
        lambda m, x: m.gather(x, 1, m.tensor([[0, 0], [1, 0]]), out=m.empty(2, 2, dtype=m.float64)),
        ["F2x3"],
    ),
    ("gather_out_same_dtype", lambda m, x: m.gather(x, 1, m.tensor([[0, 0], [1, 0]]), out=m.empty(2, 2)), ["F2x3"]),
    (
        "index_select_out_float64_raises",
        lambda m, x: m.index_select(x, 1, m.tensor([0, 2]), out=m.empty(2, 2, dtype=m.float64)),
        ["F2x3"],
    ),
    ("take_out_int32_raises", lambda m, x: m.take(x, m.tensor([0, 5]), out=m.empty(2, dtype=m.int32)), ["i2x3"]),
    # dsplit into 0 sections is PyTorch's RuntimeError (not a division by zero)
    ("dsplit_zero_sections_raises", lambda m, x: m.dsplit(x, 0), ["f2x2x4"]),
    ("dsplit_uneven_raises", lambda m, x: m.dsplit(x, 3), ["f2x2x4"]),
    # index_add of bool tensors: a bool alpha keeps bool (False adds nothing)
    (
        "index_add_bool_alpha_false",
        lambda m, x, s: m.index_add(x, 0, m.tensor([0, 2]), s, alpha=False),
        ["b3x2", "b2x2"],
    ),
    ("index_add_bool_alpha_2", lambda m, x, s: m.index_add(x, 0, m.tensor([0, 0]), s, alpha=2), ["b3x2", "b2x2"]),
    # matrix_power(A, 0): the identity requires grad, A gets a zero gradient
    ("linalg.matrix_power_n0_grad", lambda m, a: m.linalg.matrix_power(a, 0), ["f2x3x3"]),
    ("matrix_power.method_n0_grad", lambda m, a: a.matrix_power(0), ["d2x2"]),
    # histogram of an empty input counts over [0, 1], as numpy
    ("histogram_empty_input", lambda m, x: m.histogram(x, 2), ["F2x0"]),
    ("histogram_empty_input_weighted", lambda m, x, w: m.histogram(x, 3, weight=w), ["F0", "F0"]),
    # gelu's unknown approximate is PyTorch's RuntimeError
    ("gelu_bad_approximate", lambda m, x: m.nn.functional.gelu(x, approximate="asdf"), ["f3"]),
]


@pytest.mark.parametrize(("fn", "specs"), [pytest.param(fn, s, id=n) for n, fn, s in CASES])
def test_matches_torch(request, fn, specs):
    check(request.node.callspec.id, fn, specs)


def test_case_names_unique():
    assert len({n for n, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "name", ["threshold_int64", "tensordot_size1_contraction", "slice_scatter_whole_dim", "pairwise_distance_int64"]
)
def test_vulkan_matches_torch(name, gpu):
    _, fn, specs = next(c for c in CASES if c[0] == name)
    check(name, fn, specs, device=gpu)
