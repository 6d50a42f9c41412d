"""PyTorch's test/nn/test_pooling.py (its CPU-instantiated and plain tests), run on torch and on vkml side by side.

Each scenario follows one of test_pooling's tests: avg_pool against window sums (divisor_override, ceil_mode
with padding), adaptive pooling (None sizes, channels last, non-contiguous inputs, output size 0 and its
backward error, output size one, integer inputs), max_unpool (output_size ranges, the index errors,
channels last, the defaults of stride), empty batches and channels for every pool, fractional max pooling
(given samples, empty outputs, argument errors, NaN and -inf), max_pool's corner cases (dilation and
padding past the input, ceil_mode, integer inputs), indices (their values, the error after they change,
-inf, unbatched inputs), channels-last max and avg pooling with indices and gradients, NaN and -inf
propagation, zero strides and windows larger than the padded input. What a scenario returns, raises and
warns on vkml must be what it does on torch (tests/pytorch_suite.py); where PyTorch's test asserts only an
exception's class, the scenario returns the class. The default suite runs the scenarios that build few
kernels; ``-m exhaustive`` runs them all. Not ported: the CUDA-only and large-tensor tests, the quantized
pools and the legacy float16 CPU kernels' exact rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pytorch_suite import check, error_kind, half_tolerances, known_params

import vkml

# the rules checked here (tests/test_autograd.py asks every rule for a test): the backward of an adaptive
# pool to output size 0 raises PyTorch's error (the _adaptive_empty_output scenarios); a max pool's indices
# saved for backward (pool_indices_saved: the gradients through max_pool*d(return_indices=True), max_unpool1d's
# scenario, and PyTorch's version error once the indices are written in place)
GRAD_TESTED = {"adaptive_pool_empty", "pool_indices_saved"}
SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's (each compiles kernels on first use)


def rnd(*shape, seed: int = 0, dtype=np.float32):
    return np.random.default_rng(seed + 7 * len(shape) + int(np.prod(shape))).standard_normal(shape).astype(dtype)


def t(m, a, rg=False, **kw):
    return m.tensor(a, requires_grad=rg, **kw)


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def F(m):
    return m.nn.functional


def rint(lo, hi, *shape, seed: int = 0):
    return np.random.default_rng(seed + int(np.prod(shape))).integers(lo, hi, shape).astype(np.float32)


# ---------- TestAvgPool
@slow
def doubletensor_avg_pool2d(m):
    x = t(m, np.random.default_rng(1).random((1, 1, 5, 8)))
    return [F(m).avg_pool2d(x[0], (i, j)) for i in range(1, 6, 2) for j in range(1, 9, 3)]


@sc
def doubletensor_avg_pool2d_with_divisor(m):
    x = t(m, np.random.default_rng(2).random((1, 1, 3, 3)))
    return [F(m).avg_pool2d(x[0], (i, j), divisor_override=d) for i, j in ((1, 2), (3, 3)) for d in (1, 7, i * j)]


@slow
def doubletensor_avg_pool3d_with_divisor(m):
    x = t(m, np.random.default_rng(3).random((6, 5, 7)))
    return [
        F(m).avg_pool3d(x.unsqueeze(0), (i, j, k), divisor_override=d)
        for i, j, k in ((1, 2, 3), (6, 5, 7), (2, 4, 1))
        for d in (1, 7, None)
    ]


@sc
def avg_pool1d_ceil_mode(m):
    x = t(m, 10 * rnd(1, 16, 4))
    return F(m).avg_pool1d(x, ceil_mode=True, count_include_pad=True, kernel_size=1, stride=2)


@slow
def avg_pool2d_ceil_mode(m):
    x = t(m, 10 * rnd(1, 16, 4, 4))
    return F(m).avg_pool2d(x, ceil_mode=True, count_include_pad=True, kernel_size=(1, 2), padding=(0, 1), stride=2)


@slow
def avg_pool3d_ceil_mode(m):
    x = t(m, 10 * rnd(1, 16, 4, 4, 4))
    return F(m).avg_pool3d(x, ceil_mode=True, count_include_pad=True, kernel_size=(1, 2, 3), stride=2)


# ---------- adaptive pooling
@sc
def adaptive_pooling_size_none(m):
    shapes = []
    for numel in (2, 3):
        for pool_type in ("Max", "Avg"):
            module = getattr(m.nn, f"Adaptive{pool_type}Pool{numel}d")((2,) * (numel - 1) + (None,))
            shapes.append(module(m.zeros((4,) * (numel + 1))).shape)
    return shapes


@sc
def adaptive_pooling_size_overflow(m):
    return error_kind(lambda: m.nn.AdaptiveMaxPool1d(0x3FFFFFFFFFFFFFFF)(m.zeros(2, 2, 2)))


@sc
def adaptive_max_pooling_size_overflow_message(m):
    m.nn.AdaptiveMaxPool1d(0x3FFFFFFFFFFFFFFF)(m.zeros(2, 2, 2))


@sc
def adaptive_avg_pooling_size_overflow_message(m):
    m.nn.AdaptiveAvgPool2d((2**40, 2**30))(m.zeros(2, 2, 2))


def _adaptive_avg_nhwc(non_contiguous):
    def f(m):
        x = t(m, rint(1, 10, 4, 8, 8, 8)).contiguous(memory_format=m.channels_last)
        grad = t(m, rint(1, 10, 4, 8, 7, 7, seed=1))
        if non_contiguous:
            x, grad = x[:, ::2], grad[:, ::2]
        x.requires_grad_()
        out = m.nn.AdaptiveAvgPool2d((7, 7))(x)
        out.backward(grad)
        return out.is_contiguous(memory_format=m.channels_last), out, x.grad

    return f


SC["adaptive_pooling_avg_nhwc"] = _adaptive_avg_nhwc(False)
SLOW["adaptive_pooling_avg_nhwc_non_contiguous"] = _adaptive_avg_nhwc(True)


def _adaptive_lower_precision(cls, dtype, channels_last):
    def f(m):
        x = t(m, rint(1, 10, 3, 19, 8, 8)).to(getattr(m, dtype))
        if channels_last:
            x = x.to(memory_format=m.channels_last)
        x.requires_grad_()
        out = getattr(m.nn, cls)((7, 7))(x)
        out.sum().backward()
        fmt = m.channels_last if channels_last else m.contiguous_format
        return out.is_contiguous(memory_format=fmt), out, x.grad

    return f


for _cls in ("AdaptiveAvgPool2d", "AdaptiveMaxPool2d"):
    for _dtype in ("bfloat16", "float16"):
        for _cl in (False, True):
            _key = f"adaptive_pooling_lower_precision_{_cls}_{_dtype}_cl{int(_cl)}"
            (SC if _key == "adaptive_pooling_lower_precision_AdaptiveMaxPool2d_bfloat16_cl1" else SLOW)[_key] = (
                _adaptive_lower_precision(_cls, _dtype, _cl)
            )


def _empty_input(make_module, shape, channels_last=False):
    """_test_module_empty_input: forward, a backward of ones, zero gradients everywhere."""

    def f(m):
        module = make_module(m)
        x = m.ones(*shape)
        if channels_last:
            x = x.contiguous(memory_format=m.channels_last)
        x.requires_grad_()
        out = module(x)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()
        return out, x.grad

    return f


SC["adaptive_pooling_zero_batch_1d"] = _empty_input(lambda m: m.nn.AdaptiveAvgPool1d(5), (0, 10))
SC["adaptive_pooling_zero_batch_2d"] = _empty_input(lambda m: m.nn.AdaptiveAvgPool2d((5, 5)), (0, 10, 10))
SLOW["adaptive_pooling_zero_batch_3d"] = _empty_input(lambda m: m.nn.AdaptiveAvgPool3d((5, 5, 5)), (0, 10, 10, 10))


def _adaptive_empty_output(fn, shape):
    def f(m):
        x = t(m, rnd(*shape), True)
        getattr(F(m), fn)(x, 0).sum().backward()

    return f


for _fn, _shape in (
    ("adaptive_avg_pool2d", (1, 64, 10, 9)),
    ("adaptive_avg_pool3d", (1, 64, 10, 9)),
    ("adaptive_max_pool2d", (1, 64, 10, 9)),
    ("adaptive_max_pool3d", (1, 64, 10, 9)),
    ("adaptive_avg_pool1d", (1, 64)),
    ("adaptive_max_pool1d", (1, 64)),
):
    SC[f"adaptive_pooling_empty_output_size_{_fn}"] = _adaptive_empty_output(_fn, _shape)


def _adaptive_output_size_one(memory_format):
    def f(m):
        x = t(m, rint(1, 10, 2, 3, 6, 6), True)
        if memory_format == "non_contiguous":
            x = x[::2, ::2, ::2, ::2]
        else:
            x = x.to(memory_format=getattr(m, memory_format))
        out = m.nn.AdaptiveAvgPool2d((1, 1))(x)
        out.sum().backward()
        ref = x.contiguous().mean((-1, -2)).view((x.size(0), x.size(1), 1, 1))
        return out, ref, out.stride(), out.is_contiguous(memory_format=m.channels_last), out.is_contiguous()

    return f


for _mf in ("contiguous_format", "channels_last", "non_contiguous"):
    (SC if _mf == "channels_last" else SLOW)[f"adaptive_avg_pool2d_output_size_one_{_mf}"] = _adaptive_output_size_one(
        _mf
    )


@slow
def adaptive_avg_pool3d_output_size_one(m):
    x = t(m, rnd(2, 3, 6, 6, 6), True)
    out = m.nn.AdaptiveAvgPool3d(1)(x)
    out.sum().backward()
    return out, out.is_contiguous(), out.stride(), x.grad


def _adaptive_no_support_input(dtype):
    def f(m):
        out = []
        for numel in (2, 3):
            for pool_type in ("Max", "Avg"):
                module = getattr(m.nn, f"Adaptive{pool_type}Pool{numel}d")((2,) * numel)
                x = m.zeros((4,) * (numel + 1), dtype=getattr(m, dtype))
                out.append(error_kind(lambda module=module, x=x: module(x)))
        return out

    return f


for _dtype in ("uint8", "int8", "int16", "int32", "int64"):
    SC[f"adaptive_pooling_no_support_input_{_dtype}"] = _adaptive_no_support_input(_dtype)


@sc
def adaptive_pooling_no_support_input_message(m):
    m.nn.AdaptiveAvgPool2d((2, 2))(m.zeros(4, 4, 4, dtype=m.int64))


def _adaptive_max_nhwc(input_size, output_plane_size, contig):
    def f(m):
        two_d = len(output_plane_size) == 2
        cl = m.channels_last if two_d else m.channels_last_3d
        module = (m.nn.AdaptiveMaxPool2d if two_d else m.nn.AdaptiveMaxPool3d)(output_plane_size, return_indices=True)
        x = t(m, rint(1, 10, *input_size)).contiguous(memory_format=cl)
        grad = t(m, rint(1, 10, *input_size[:2], *output_plane_size, seed=1)).contiguous(memory_format=cl)
        if not contig:
            x, grad = x[:, ::2], grad[:, ::2]
        x.requires_grad_()
        out, ind = module(x)
        out.backward(grad)
        layout = (out.is_contiguous(memory_format=cl), ind.is_contiguous(memory_format=cl)) if two_d else ()
        return layout, out, ind, x.grad

    return f


for _i, (_in, _out) in enumerate(
    [
        ((4, 8, 10, 10), (7, 7)),
        ((4, 8, 9, 14), (5, 8)),
        ((4, 8, 11, 11), (1, 1)),
        ((2, 1, 3, 3), (1, 1)),
        ((4, 8, 10, 10, 10), (7, 7, 7)),
        ((2, 1, 3, 3, 3), (1, 1, 1)),
    ]
):
    for _contig in (True, False):
        _key = f"adaptive_pooling_max_nhwc_{_i}_contig{int(_contig)}"
        (SC if _key == "adaptive_pooling_max_nhwc_1_contig0" else SLOW)[_key] = _adaptive_max_nhwc(_in, _out, _contig)


# ---------- max_unpool
@sc
def MaxUnpool2d_output_size(m):
    pool, unpool = m.nn.MaxPool2d(3, stride=2, return_indices=True), m.nn.MaxUnpool2d(3, stride=2)
    big = t(m, np.random.default_rng(4).random((1, 1, 6, 6)).astype(np.float32))
    big[0][0][4][4] = 100
    out = [error_kind(lambda: unpool(*pool(big)))]
    small = t(m, np.random.default_rng(5).random((1, 1, 5, 5)).astype(np.float32))
    for i in range(0, 4, 2):
        for j in range(0, 4, 2):
            small[:, :, i, j] = 100
    output_small, indices_small = pool(small)
    for h in range(3, 10, 2):
        for w in range(3, 10, 3):
            if 4 <= h <= 6 and 4 <= w <= 6:
                size = (1, 1, h, w) if h == 6 else (h, w)
                out.append(unpool(output_small, indices_small, output_size=size))
            else:
                out.append(error_kind(lambda h=h, w=w: unpool(output_small, indices_small, (h, w))))
    return out


@sc
def MaxUnpool2d_output_size_message(m):
    pool, unpool = m.nn.MaxPool2d(3, stride=2, return_indices=True), m.nn.MaxUnpool2d(3, stride=2)
    unpool(*pool(t(m, rnd(1, 1, 5, 5))), output_size=(3, 9))


@sc
def MaxUnpool2d_invalid_index_message(m):
    pool, unpool = m.nn.MaxPool2d(3, stride=2, return_indices=True), m.nn.MaxUnpool2d(3, stride=2)
    big = t(m, np.zeros((1, 1, 6, 6), np.float32))
    big[0][0][4][4] = 100
    unpool(*pool(big))


@slow
def max_unpool2d_nhwc_cpu(m):
    x = t(m, rnd(2, 10, 9, 9)).contiguous(memory_format=m.channels_last)
    out, ind = m.nn.MaxPool2d(3, stride=2, return_indices=True)(x)
    out.requires_grad_()
    upout = m.nn.MaxUnpool2d(3, stride=2)(out, ind)
    upout.backward(t(m, rnd(*upout.shape, seed=1)).contiguous(memory_format=m.channels_last))
    return upout.is_contiguous(memory_format=m.channels_last), upout, out.grad


@sc
def max_unpool1d(m):
    output, indices = F(m).max_pool1d(t(m, rnd(1, 1, 4, dtype=np.float64)), 2, stride=2, return_indices=True)
    x = t(m, rnd(1, 1, 5, seed=1, dtype=np.float64), True)
    out2, ind2 = F(m).max_pool1d(x, 2, stride=2, return_indices=True)
    unpooled = F(m).max_unpool1d(out2, ind2, 2, stride=2, output_size=x.shape)
    unpooled.sum().backward()
    return (
        F(m).max_unpool1d(output, indices, 2),
        F(m).max_unpool1d(output, indices, 2, stride=2),
        unpooled,
        F(m).max_unpool1d(out2, ind2, 2, stride=2, output_size=x.size()),
        x.grad,
    )


@slow
def max_unpool2d_3d(m):
    x2 = t(m, rnd(1, 1, 4, 4, dtype=np.float64), True)
    output, indices = F(m).max_pool2d(x2, 2, stride=2, return_indices=True)
    x3 = t(m, rnd(4, 4, 4, 4, 4, seed=1, dtype=np.float64), True)
    output3, indices3 = F(m).max_pool3d(x3, 2, stride=2, return_indices=True)
    u2, u3 = F(m).max_unpool2d(output, indices, 2), F(m).max_unpool3d(output3, indices3, 2)
    (u2.square().sum() + u3.square().sum()).backward()
    return (
        u2,
        F(m).max_unpool2d(output, indices, 2, stride=2),
        u3,
        F(m).max_unpool3d(output3, indices3, 2, stride=2),
        (
            x2.grad,
            x3.grad,
        ),
    )


@sc
def max_unpool3d_input_check(m):
    x = m.ones(1, 3, 1, 1, 1)
    return error_kind(lambda: F(m).max_unpool3d(x, m.zeros(x.shape, dtype=m.int64), [1, 1]))


def _unpool_index(module_name, module_size, output_size, test_index, should_error):
    def f(m):
        unpool = getattr(m.nn, module_name)(module_size)
        output = t(m, np.random.default_rng(6).random(output_size).astype(np.float32))
        indices = m.zeros(output_size, dtype=m.int64)
        indices.view(-1)[0] = test_index
        out = unpool(output, indices)
        # where several elements go to one place, which is kept is left open (PyTorch's kernels differ)
        return out if should_error else out.shape

    return f


for _i, _case in enumerate(
    [
        ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), -1, True),
        ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), 2 * 2 * 4 * 5, True),
        ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), (2 * 2 * 4 * 5) - 1, False),
        ("MaxUnpool2d", (2, 3), (2, 1, 4, 2), 2 * 3 * 4 * 2, True),
        ("MaxUnpool2d", (2, 3), (2, 1, 4, 2), (2 * 3 * 4 * 2) - 1, False),
        ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), -1, True),
        ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), 2 * 2 * 2 * 3 * 4 * 5, True),
        ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), (2 * 2 * 2 * 3 * 4 * 5) - 1, False),
        ("MaxUnpool3d", (2, 2, 2), (2, 3, 4, 1), 2 * 2 * 2 * 3 * 4 * 1, True),
        ("MaxUnpool3d", (2, 2, 2), (2, 3, 4, 1), (2 * 2 * 2 * 3 * 4 * 1) - 1, False),
    ]
):
    (SC if _i in (0, 1, 2) else SLOW)[f"MaxUnpool_index_errors_case{_i + 1}"] = _unpool_index(*_case)


def _unpool_zero_batch(n):
    def f(m):
        pool = getattr(m.nn, f"MaxPool{n}d")(2, stride=2, return_indices=True)
        unpool = getattr(m.nn, f"MaxUnpool{n}d")(2, stride=2)
        x = m.zeros(0, 10, *(10,) * n, requires_grad=True)
        output, indices = pool(x)
        unpool_out = unpool(output, indices)
        unpool_out.sum().backward()
        return unpool_out, x.grad

    return f


SC["MaxUnpool_zero_batch_dim_1d"] = _unpool_zero_batch(1)
SLOW["MaxUnpool_zero_batch_dim_2d"] = _unpool_zero_batch(2)
SLOW["MaxUnpool_zero_batch_dim_3d"] = _unpool_zero_batch(3)


# ---------- empty inputs
SC["MaxPool1d_zero_batch_dim"] = _empty_input(lambda m: m.nn.MaxPool1d(3, stride=2), (0, 16, 50))
SLOW["MaxPool2d_zero_batch_dim"] = _empty_input(lambda m: m.nn.MaxPool2d(3, stride=2), (0, 16, 50, 32))
SLOW["MaxPool3d_zero_batch_dim"] = _empty_input(lambda m: m.nn.MaxPool3d(3, stride=2), (0, 16, 50, 44, 31))
SC["AdaptiveMaxPool1d_zero_batch_dim"] = _empty_input(lambda m: m.nn.AdaptiveMaxPool1d(3), (0, 16, 50))
SLOW["AdaptiveMaxPool2d_zero_batch_dim"] = _empty_input(lambda m: m.nn.AdaptiveMaxPool2d(3), (0, 16, 50, 32))
SLOW["AdaptiveMaxPool3d_zero_batch_dim"] = _empty_input(lambda m: m.nn.AdaptiveMaxPool3d(3), (0, 16, 50, 44, 31))
SC["AvgPool2d_empty"] = _empty_input(lambda m: m.nn.AvgPool2d(3, stride=2), (0, 16, 20, 32))
SLOW["AvgPool2d_empty_channels_last"] = _empty_input(lambda m: m.nn.AvgPool2d(3, stride=2), (0, 16, 20, 32), True)
SC["FractionalMaxPool2d_zero_batch"] = _empty_input(
    lambda m: m.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5)), (0, 16, 50, 32)
)
SLOW["FractionalMaxPool3d_zero_batch"] = _empty_input(
    lambda m: m.nn.FractionalMaxPool3d(3, output_ratio=(0.5, 0.5, 0.5)), (0, 16, 50, 32, 32)
)


def _empty_channel_error(make_module, shape):
    def f(m):
        make_module(m)(m.zeros(*shape))

    return f


for _name, _make, _shape in (
    ("MaxPool2d", lambda m: m.nn.MaxPool2d(3, stride=2), (1, 0, 50, 32)),
    ("MaxPool3d", lambda m: m.nn.MaxPool3d(3, stride=2), (1, 0, 50, 44, 31)),
    ("AdaptiveMaxPool1d", lambda m: m.nn.AdaptiveMaxPool1d(3), (1, 0, 50)),
    ("AdaptiveMaxPool2d", lambda m: m.nn.AdaptiveMaxPool2d(3), (1, 0, 50, 32)),
    ("AdaptiveMaxPool3d", lambda m: m.nn.AdaptiveMaxPool3d(3), (1, 0, 50, 44, 31)),
    ("AvgPool2d", lambda m: m.nn.AvgPool2d(3, stride=2), (16, 0, 20, 32)),
    ("FractionalMaxPool2d", lambda m: m.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5)), (1, 0, 50, 32)),
    (
        "FractionalMaxPool3d",
        lambda m: m.nn.FractionalMaxPool3d(3, output_ratio=(0.5, 0.5, 0.5)),
        (1, 0, 50, 32, 32),
    ),
):
    SC[f"{_name}_empty_channel_error"] = _empty_channel_error(_make, _shape)


# ---------- fractional max pooling
@sc
def FractionalMaxPool2d_zero_out_size(m):
    return m.nn.FractionalMaxPool2d([2, 2], output_size=[0, 1])(m.ones(16, 50, 32, 32))


@sc
def FractionalMaxPool3d_zero_out_size(m):
    return m.nn.FractionalMaxPool3d([3, 2, 2], output_size=[0, 1, 1])(m.ones(16, 50, 32, 32))


def _fractional_zero_samples(n):
    def f(m):
        samples = m.zeros(0, 16, n)
        module = getattr(m.nn, f"FractionalMaxPool{n}d")([2] * n, output_size=[1] * n, _random_samples=samples)
        out = module(m.zeros(0, 16, *(32,) * n))
        return out, error_kind(lambda: module(m.zeros(1, 16, *(32,) * n)))

    return f


SC["FractionalMaxPool2d_zero_samples"] = _fractional_zero_samples(2)
SLOW["FractionalMaxPool3d_zero_samples"] = _fractional_zero_samples(3)


@sc
def FractionalMaxPool2d_samples_message(m):
    module = m.nn.FractionalMaxPool2d([2, 2], output_size=[1, 1], _random_samples=m.zeros(0, 16, 2))
    module(m.zeros(1, 16, 32, 32))


def _fractional(n, batched):
    def f(m):
        shape = ((1,) if batched else ()) + (2,) + (7,) * n
        x = t(m, rnd(*shape, dtype=np.float64), True)
        samples = t(m, np.random.default_rng(7).random((1, 2, n)))
        out = getattr(F(m), f"fractional_max_pool{n}d")(x, (2,) * n, output_size=(3,) * n, _random_samples=samples)
        (out * out).sum().backward()
        return out, x.grad

    return f


SC["fractional_max_pool2d"] = _fractional(2, True)
SLOW["fractional_max_pool2d_unbatched"] = _fractional(2, False)
SLOW["fractional_max_pool3d"] = _fractional(3, True)
SLOW["fractional_max_pool3d_unbatched"] = _fractional(3, False)


def _fractional_error(n, kernel_size, output_size):
    def f(m):
        x = t(m, rnd(2, *(7,) * n, dtype=np.float64))
        samples = t(m, np.random.default_rng(7).random((1, 2, n)))
        fn = getattr(F(m), f"fractional_max_pool{n}d")
        fn(x, kernel_size=kernel_size, output_size=output_size, _random_samples=samples)

    return f


for _n, _cases in (
    (2, [((), (3, 3)), ((1,), (3, 3)), ((2, 2), (9, 3)), ((2, 2), (3, 9)), ((2, 2), (3,)), ((2, 2), ())]),
    (
        3,
        [
            ((), (3, 3, 3)),
            ((1,), (3, 3, 3)),
            ((1, 1), (3, 3, 3)),
            ((2, 2, 2), (9, 3, 3)),
            ((2, 2, 2), (3, 9, 3)),
            ((2, 2, 2), (3, 3, 9)),
            ((2, 2, 2), (3, 3)),
            ((2, 2, 2), (3,)),
            ((2, 2, 2), ()),
        ],
    ),
):
    for _k, _o in _cases:
        SC[f"fractional_max_pool{_n}d_error_k{len(_k)}_o{'x'.join(map(str, _o))}"] = _fractional_error(_n, _k, _o)


def _fractional_nan_inf(n, value):
    def f(m):
        x = m.full([1, 1] + n * [3], value, requires_grad=True)
        res = getattr(m.nn, f"FractionalMaxPool{n}d")(kernel_size=2, output_size=1)(x)
        res.backward(m.ones_like(res))
        return res, x.grad

    return f


for _n in (2, 3):
    for _v in (math.nan, -math.inf):
        (SC if _n == 2 else SLOW)[f"fractional_max_pool_nan_inf_{_n}d_{_v}"] = _fractional_nan_inf(_n, _v)


# ---------- shapes, corner cases, errors
def _pooling_shape(sizes, **kwargs):
    def f(m):
        shapes = []
        for kernel in ("max", "avg"):
            for i in (1, 2, 3):
                shapes.append(getattr(F(m), f"{kernel}_pool{i}d")(m.zeros(sizes[: i + 2]), **kwargs).shape)
        return shapes

    return f


SC["pooling_shape_ceil_stride2"] = _pooling_shape((1, 1, 5, 6, 7), kernel_size=1, stride=2, padding=0, ceil_mode=True)
SC["pooling_shape_pad1"] = _pooling_shape((1, 1, 3, 4, 5), kernel_size=2, stride=2, padding=1, ceil_mode=False)
SC["pooling_shape_pad1_ceil"] = _pooling_shape((1, 1, 3, 4, 5), kernel_size=2, stride=2, padding=1, ceil_mode=True)


@sc
def pooling_shape_issue_45357(m):
    return F(m).max_pool2d(t(m, rnd(1, 1, 6, 7)), 1, stride=(2, 2), padding=0, ceil_mode=True)


def _max_pool1d_corner(x, args, dtype):
    def f(m):
        return m.nn.MaxPool1d(*args)(m.tensor(x, dtype=getattr(m, dtype)))

    return f


for _dtype in ("float32", "float64"):
    for _i, (_x, _args) in enumerate(
        [
            ([[1]], (1, None, 0, 1, False, False)),
            ([[1]], (2, None, 1, 2, False, False)),
            ([[1], [1]], (2, None, 1, 2, False, False)),
            ([[1, 2]], (2, 1, 1, 2, False, False)),
            ([[1, 2]], (2, 2, 1, 2, False, True)),
        ]
    ):
        (SC if _dtype == "float32" else SLOW)[f"max_pool1d_corner_cases_{_dtype}_{_i}"] = _max_pool1d_corner(
            _x, _args, _dtype
        )


def _max_pool1d(size, kernel_size, stride, padding, dilation, ceil_mode, transposed=False):
    def f(m):
        x = t(m, rnd(*size))
        if transposed:
            x = x[::2, ::3, ::2].transpose(1, 2)
        args = (kernel_size, stride, padding, dilation)
        plain = m.nn.MaxPool1d(*args, ceil_mode=ceil_mode)(x)
        values, indices = m.nn.MaxPool1d(*args, ceil_mode=ceil_mode, return_indices=True)(x)
        return plain, values, indices

    return f


SC["max_pool1d_ceil"] = _max_pool1d((3, 9, 40), 3, 2, 1, 2, True)
SLOW["max_pool1d_floor"] = _max_pool1d((2, 5, 37), 4, 3, 2, 1, False)
SLOW["max_pool1d_dilated_ceil"] = _max_pool1d((2, 5, 38), 2, 4, 1, 3, True)
SLOW["max_pool1d_non_contiguous"] = _max_pool1d((5, 151, 33), 3, 2, 1, 2, True)
SLOW["max_pool1d_non_contiguous_transposed"] = _max_pool1d((5, 151, 33), 3, 2, 1, 2, True, True)


def _max_pool2d_corner(dtype, channels_last):
    def f(m):
        x = m.tensor([[[[-1, -2], [-3, -4]]]], dtype=getattr(m, dtype))
        if channels_last:
            x = x.to(memory_format=m.channels_last)
        return m.nn.MaxPool2d(2, 2, 1, 2, False, True)(x)

    return f


for _dtype in ("int32", "int64"):
    for _cl in (False, True):
        SC[f"max_pool2d_corner_cases_{_dtype}_cl{int(_cl)}"] = _max_pool2d_corner(_dtype, _cl)


def _avg_pool2d_nhwc(n, c, h, w, kernel_size, stride=None, count_include_pad=True, divisor_override=None, padding=0):
    def f(m):
        s = stride or kernel_size
        x = t(m, rnd(n, c, h, w)).contiguous(memory_format=m.channels_last).requires_grad_()
        grad = t(m, rnd(n, c, (h - kernel_size) // s + 1, (w - kernel_size) // s + 1, seed=1))
        pool = m.nn.AvgPool2d(
            kernel_size, stride=s, count_include_pad=count_include_pad, divisor_override=divisor_override
        )
        out = pool(x)
        out.backward(grad)
        return out.is_contiguous(memory_format=m.channels_last), out, x.grad

    return f


SC["avg_pool2d_nhwc"] = _avg_pool2d_nhwc(4, 8, 8, 8, 3)
SLOW["avg_pool2d_nhwc_no_pad_count"] = _avg_pool2d_nhwc(4, 8, 8, 8, 3, count_include_pad=False, padding=1)
SLOW["avg_pool2d_nhwc_divisor"] = _avg_pool2d_nhwc(4, 8, 8, 8, 3, divisor_override=42)
SLOW["avg_pool2d_nhwc_7"] = _avg_pool2d_nhwc(4, 8, 8, 8, 7)
SLOW["avg_pool2d_nhwc_stride1"] = _avg_pool2d_nhwc(4, 8, 7, 7, 3, stride=1)
SLOW["avg_pool2d_nhwc_129"] = _avg_pool2d_nhwc(1, 129, 8, 8, 3, stride=2)


def _max_pool_nhwc(n, c, h, w, kernel_size, stride=None, dtype="float32"):
    def f(m):
        s = stride or kernel_size
        x = t(m, rnd(n, c, h, w)).to(getattr(m, dtype))
        x = x.contiguous(memory_format=m.channels_last).requires_grad_()
        grad = t(m, rnd(n, c, (h - kernel_size) // s + 1, (w - kernel_size) // s + 1, seed=1)).to(getattr(m, dtype))
        out, ind = m.nn.MaxPool2d(kernel_size, s, return_indices=True)(x)
        out.backward(grad)
        cl = m.channels_last
        return out.is_contiguous(memory_format=cl), ind.is_contiguous(memory_format=cl), out, ind, x.grad

    return f


SC["max_pool2d_nhwc"] = _max_pool_nhwc(4, 8, 8, 8, 7)
SLOW["max_pool2d_nhwc_stride1"] = _max_pool_nhwc(4, 8, 7, 7, 3, stride=1)
SLOW["max_pool2d_nhwc_129"] = _max_pool_nhwc(1, 129, 8, 8, 3, stride=2)
SLOW["max_pool2d_nhwc_bfloat16"] = _max_pool_nhwc(4, 8, 8, 8, 7, dtype="bfloat16")
SLOW["max_pool2d_nhwc_float64"] = _max_pool_nhwc(4, 8, 7, 7, 3, stride=1, dtype="float64")


def _max_pool3d_ndhwc(n, c, h, w, d, kernel_size, stride=None):
    def f(m):
        batch = n or 1
        x = t(m, rnd(batch, c, d, h, w)).contiguous(memory_format=m.channels_last_3d)
        if not n:
            x = x.squeeze(0).detach().clone()
        x.requires_grad_()
        k = [kernel_size] * 3 if isinstance(kernel_size, int) else list(kernel_size)
        s = k if stride is None else [stride] * 3
        out_shape = [(size - kk) // ss + 1 for size, kk, ss in zip((d, h, w), k, s)]
        grad = t(m, rnd(batch, c, *out_shape, seed=1)).contiguous(memory_format=m.channels_last_3d)
        if not n:
            grad = grad.squeeze(0)
        out, ind = m.nn.MaxPool3d(k, s, return_indices=True)(x)
        out.backward(grad)
        cl = m.channels_last_3d
        batched_out, batched_ind = (out, ind) if n else (out.unsqueeze(0), ind.unsqueeze(0))
        return (
            batched_out.is_contiguous(memory_format=cl),
            batched_ind.is_contiguous(memory_format=cl),
            out,
            ind,
            x.grad,
        )

    return f


SC["max_pool3d_ndhwc"] = _max_pool3d_ndhwc(4, 8, 8, 8, 8, 7)
SLOW["max_pool3d_ndhwc_567"] = _max_pool3d_ndhwc(1, 8, 8, 8, 8, (5, 6, 7))
SLOW["max_pool3d_ndhwc_unbatched"] = _max_pool3d_ndhwc(0, 6, 12, 13, 14, (5, 6, 7))
SLOW["max_pool3d_ndhwc_stride"] = _max_pool3d_ndhwc(1, 79, 4, 4, 4, 3, stride=2)
SLOW["max_pool3d_ndhwc_unbatched_stride"] = _max_pool3d_ndhwc(0, 79, 4, 4, 4, 3, stride=2)


def _pool_reduced_floating(kind, shape, kernel_size, stride, channels_last, dtype):
    def f(m):
        x = t(m, rnd(*shape)).to(getattr(m, dtype))
        fmt = (m.channels_last if len(shape) == 4 else m.channels_last_3d) if channels_last else m.contiguous_format
        x = x.to(memory_format=fmt).requires_grad_()
        n = len(shape) - 2
        if kind == "max":
            out, ind = getattr(m.nn, f"MaxPool{n}d")(kernel_size, stride, return_indices=True)(x)
        else:
            out, ind = getattr(m.nn, f"AvgPool{n}d")(kernel_size, stride)(x), None
        out.sum().backward()
        return out.is_contiguous(memory_format=fmt), out, ind, x.grad

    return f


for _dtype in ("float16", "bfloat16"):
    for _i, (_shape, _k, _s, _cl) in enumerate(
        [
            ((4, 30, 8, 8), 7, 1, False),
            ((4, 65, 8, 8), 7, 1, True),
            ((1, 19, 20, 10), 8, 2, False),
            ((1, 19, 20, 10), 8, 2, True),
            ((1, 19, 10, 9, 14), 8, 2, True),
            ((4, 10, 3, 8, 8), 3, 1, False),
        ]
    ):
        for _kind in ("max", "avg"):
            if _kind == "avg" and len(_shape) == 5:
                continue
            _key = f"{_kind}_pool_reduced_floating_{_dtype}_{_i}"
            (SC if _key == "max_pool_reduced_floating_bfloat16_1" else SLOW)[_key] = _pool_reduced_floating(
                _kind, _shape, _k, _s, _cl, _dtype
            )


def _pooling_max_nhwc(n, c, h, w, kernel_size, stride, padding, dilation, contig):
    def f(m):
        oh = (h + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kernel_size[1] - 1) - 1) // stride[1] + 1
        x = t(m, rint(1, 10, n, c, h, w)).contiguous(memory_format=m.channels_last)
        grad = t(m, rint(1, 10, n, c, oh, ow, seed=1)).contiguous(memory_format=m.channels_last)
        if not contig:
            x, grad = x[:, ::2, :, :], grad[:, ::2, :, :]
        x.requires_grad_()
        out, ind = m.nn.MaxPool2d(kernel_size, stride, padding, dilation, return_indices=True)(x)
        out.backward(grad)
        cl = m.channels_last
        return out.is_contiguous(memory_format=cl), ind.is_contiguous(memory_format=cl), out, ind, x.grad

    return f


for _contig in (True, False):
    for _i, _args in enumerate(
        [
            (4, 8, 10, 10, (2, 2), (1, 1), (1, 1), (2, 2)),
            (4, 8, 9, 14, (2, 2), (1, 1), (1, 1), (2, 2)),
            (4, 8, 11, 11, (4, 4), (2, 2), (2, 2), (2, 2)),
        ]
    ):
        _key = f"pooling_max_nhwc_{_i}_contig{int(_contig)}"
        (SC if _key == "pooling_max_nhwc_2_contig0" else SLOW)[_key] = _pooling_max_nhwc(*_args, _contig)


# ---------- indices (_test_maxpool_indices)
def _maxpool_indices(num_dim, adaptive):
    def f(m):
        cls = getattr(m.nn, f"{'Adaptive' if adaptive else ''}MaxPool{num_dim}d")
        module = cls(2, return_indices=True)
        numel = 4 ** (num_dim + 1)
        x = m.arange(1, numel + 1).view(2, 2, *(4,) * num_dim).to(m.float32).requires_grad_()
        output, indices = module(x)
        output.backward(m.ones(output.size()), retain_graph=True)
        first = (output, indices, output.requires_grad, indices.requires_grad, x.grad)
        indices.add_(1)
        return first, error_kind(lambda: output.backward(m.ones(output.size())))

    return f


for _n in (1, 2, 3):
    for _adaptive in (False, True):
        _key = f"{'Adaptive' if _adaptive else ''}MaxPool{_n}d_indices"
        (SC if _key in ("MaxPool2d_indices", "AdaptiveMaxPool1d_indices") else SLOW)[_key] = _maxpool_indices(
            _n, _adaptive
        )


@sc
def maxpool_indices_minus_inf(m):
    out = []
    for n, shape in ((1, (1, 1, 1)), (2, (1, 1, 1)), (3, (1, 1, 1, 1))):
        out.append(getattr(m.nn, f"MaxPool{n}d")(kernel_size=1, return_indices=True)(m.full(shape, -math.inf)))
    return out


@sc
def maxpool_indices_changed_message(m):
    x = m.arange(1.0, 17.0).view(1, 1, 4, 4).requires_grad_()
    output, indices = m.nn.MaxPool2d(2, return_indices=True)(x)
    indices.add_(1)
    output.sum().backward()


def _indices_no_batch_dim(make, shape):
    def f(m):
        module = make(m)
        x = t(m, rnd(*shape))
        _, no_batch = module(x)
        _, single = module(x.unsqueeze(0))
        return no_batch, single.squeeze(0)

    return f


for _name, _make, _shape in (
    ("MaxPool1d", lambda m: m.nn.MaxPool1d(3, return_indices=True), (3, 5)),
    ("MaxPool2d", lambda m: m.nn.MaxPool2d(3, return_indices=True), (3, 5, 6)),
    ("MaxPool3d", lambda m: m.nn.MaxPool3d(3, return_indices=True), (3, 5, 6, 7)),
    ("AdaptiveMaxPool1d", lambda m: m.nn.AdaptiveMaxPool1d(3, return_indices=True), (3, 5)),
    ("AdaptiveMaxPool2d", lambda m: m.nn.AdaptiveMaxPool2d(3, return_indices=True), (3, 5, 6)),
    ("AdaptiveMaxPool3d", lambda m: m.nn.AdaptiveMaxPool3d(3, return_indices=True), (3, 5, 6, 7)),
):
    (SC if _name in ("MaxPool2d", "AdaptiveMaxPool1d") else SLOW)[f"maxpool_indices_no_batch_dim_{_name}"] = (
        _indices_no_batch_dim(_make, _shape)
    )


def _max_pool_nan_inf(fn_name, num_dim, value, adaptive):
    def f(m):
        fn = getattr(F(m), fn_name)
        x = m.full([1, 1] + num_dim * [3], value, requires_grad=True)
        res = fn(x, 1 if adaptive else 3)
        res.backward(m.ones_like(res))
        x.requires_grad_(False)
        return res, x.grad, fn(x, 1 if adaptive else 3)

    return f


for _adaptive in ("", "adaptive_"):
    for _n in (1, 2, 3):
        for _v in (math.nan, -math.inf):
            _key = f"max_pool_nan_inf_{_adaptive}{_n}d_{_v}"
            (SC if _n == 2 else SLOW)[_key] = _max_pool_nan_inf(f"{_adaptive}max_pool{_n}d", _n, _v, bool(_adaptive))


def _zero_stride(op, num_dim, module):
    def f(m):
        x = m.ones([1, 2] + num_dim * [4])
        if module:
            getattr(m.nn, f"{op.title()}Pool{num_dim}d")(kernel_size=2, stride=0)(x)
        else:
            getattr(F(m), f"{op}_pool{num_dim}d")(x, kernel_size=2, stride=0)

    return f


for _op in ("max", "avg"):
    for _n in (1, 2, 3):
        for _module in (False, True):
            SC[f"pooling_zero_stride_{_op}{_n}d{'_module' if _module else ''}"] = _zero_stride(_op, _n, _module)


def _pool_large_size(op, num_dim):
    def f(m):
        x = m.ones([1, 1, 16777217] + (num_dim - 1) * [1])
        return getattr(F(m), f"{op}_pool{num_dim}d")(x, 1, stride=1, padding=0).shape

    return f


for _op in ("max", "avg"):
    for _n in (1, 2, 3):
        (SC if (_op, _n) == ("max", 1) else SLOW)[f"pool_large_size_{_op}{_n}d"] = _pool_large_size(_op, _n)


def _pool_invalid_size(op, num_dim):
    def f(m):
        x = m.ones([1, 1] + num_dim * [4])
        fn = getattr(F(m), f"{op}_pool{num_dim}d")
        if op == "max":
            return fn(x, 3, stride=2, padding=0, dilation=2, return_indices=True)
        return fn(x, 6, stride=2, padding=0)

    return f


for _op in ("max", "avg"):
    for _n in (1, 2, 3):
        SC[f"pool_invalid_size_{_op}{_n}d"] = _pool_invalid_size(_op, _n)


@slow
def maxpool3d_non_square_backward(m):
    grads = []
    for dim in (2, 3, 4):
        x = m.zeros(tuple(8 if i != dim else 40 for i in range(4)), requires_grad=True)
        F(m).max_pool3d(x, kernel_size=(1, 1, 1)).sum().backward()
        grads.append(x.grad)
    return grads


@slow
def adaptive_pool_odd_size(m):
    imgs = t(m, rint(0, 256, 3, 59, 37))
    return F(m).adaptive_avg_pool2d(imgs, (35, 22)), F(m).adaptive_max_pool2d(imgs, (35, 22))


# Over the default suite's time budget (each builds several kernels): these run with -m exhaustive
_OVER_BUDGET = (
    "AdaptiveMaxPool1d_indices",
    "MaxPool2d_indices",
    "MaxUnpool2d_invalid_index_message",
    "MaxUnpool2d_output_size",
    "adaptive_avg_pool2d_output_size_one_channels_last",
    "adaptive_pooling_avg_nhwc",
    "adaptive_pooling_lower_precision_AdaptiveMaxPool2d_bfloat16_cl1",
    "adaptive_pooling_max_nhwc_1_contig0",
    "avg_pool1d_ceil_mode",
    "avg_pool2d_nhwc",
    "doubletensor_avg_pool2d_with_divisor",
    "fractional_max_pool2d",
    "fractional_max_pool_nan_inf_2d_-inf",
    "fractional_max_pool_nan_inf_2d_nan",
    "max_pool1d_ceil",
    "max_pool2d_nhwc",
    "max_pool3d_ndhwc",
    "max_pool_nan_inf_2d_-inf",
    "max_pool_nan_inf_2d_nan",
    "max_pool_reduced_floating_bfloat16_1",
    "max_unpool1d",
    "maxpool_indices_minus_inf",
    "maxpool_indices_no_batch_dim_AdaptiveMaxPool1d",
    "maxpool_indices_no_batch_dim_MaxPool2d",
    "pool_large_size_max1d",
    "pooling_max_nhwc_2_contig0",
)
for _name in _OVER_BUDGET:
    SLOW[_name] = SC.pop(_name)


# Where vkml still differs from PyTorch, and why (strict: a fix makes the test fail until it leaves this list)
_NONCONTIGUOUS_LAYOUT = "vkml does not see a channels-last layout in a view that slices the channels (x[:, ::2])"
KNOWN: dict[str, str] = {
    **{
        n: _NONCONTIGUOUS_LAYOUT
        for n in list(SC) + list(SLOW)
        if n.startswith(("adaptive_pooling_max_nhwc_", "pooling_max_nhwc_"))
        and n.endswith("contig0")
        and not n.startswith(
            (
                "adaptive_pooling_max_nhwc_2_",
                "adaptive_pooling_max_nhwc_3_",
                "adaptive_pooling_max_nhwc_4_",
                "adaptive_pooling_max_nhwc_5_",
            )
        )
    },
    "adaptive_pooling_avg_nhwc_non_contiguous": _NONCONTIGUOUS_LAYOUT,
    "max_unpool2d_nhwc_cpu": "vkml's max_unpool2d does not keep a channels-last input's layout",
    "max_pool3d_ndhwc_unbatched": "vkml's max_pool3d of an unbatched channels-last-3d input keeps the default layout",
    "max_pool_reduced_floating_float16_4": "vkml's float16 max_pool3d of a channels-last-3d input keeps the default "
    "layout",
}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_pooling_scenario_matches_torch(name: str) -> None:
    check(SC[name], **half_tolerances(name))


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_pooling_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], **half_tolerances(name))


def test_pooling_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: channels-last max pooling with indices, unpooling and avg pooling."""

    def scenario(m):
        device = {"device": gpu} if m is vkml else {}
        x = m.tensor(rnd(2, 3, 7, 6), requires_grad=True, **device)
        out, ind = F(m).max_pool2d(x.to(memory_format=m.channels_last), 3, 2, 1, return_indices=True)
        unpooled = F(m).max_unpool2d(out, ind, 3, 2, 1, output_size=x.shape)
        avg = F(m).avg_pool2d(x, 2, ceil_mode=True, count_include_pad=False)
        (unpooled.square().sum() + avg.sum()).backward()
        return out, ind, unpooled, avg, x.grad

    check(scenario)
