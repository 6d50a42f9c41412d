"""PyTorch's test/nn/test_convolution.py (its CPU-instantiated and plain tests), run on torch and on vkml side by side.

Each scenario follows one of test_convolution's tests: the argument checks and their messages (input rank,
kernel larger than the padded input, non-positive stride, groups, padding strings and modes, inconsistent
dtypes, a second backward), ``padding='same'``/``'valid'`` against explicit padding (forward and backward),
ConvTranspose's ``output_size``, grouped convolutions against their halves, empty batches and channels,
non-contiguous and expanded weights, channels-last inputs and weights, double backward, and the bug
reproducers it carries. Where PyTorch's test asserts only an exception's class, the scenario returns the
class (``error_kind``); elsewhere what a scenario returns, raises and warns on vkml must be what it does on
torch (tests/pytorch_suite.py). The default suite runs the scenarios that build few kernels; ``-m
exhaustive`` runs them all. Not ported: the CUDA, cuDNN, MIOpen, oneDNN and NNPACK tests, conv_tbc and
torch.nn.grad (not in vkml), the legacy pickle, aten-internal ops (slow_conv3d, _select_conv_backend,
_convolution_double_backward) and the complex dtypes.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from pytorch_suite import check, error_kind, known_params

import vkml

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's (each compiles kernels on first use)


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def rnd(*shape, seed: int = 0, dtype=np.float32):
    return np.random.default_rng(seed + 7 * len(shape) + int(np.prod(shape))).standard_normal(shape).astype(dtype)


def t(m, a, rg=False, **kw):
    return m.tensor(a, requires_grad=rg, **kw)


def F(m):
    return m.nn.functional


def seeded(m, module, seed: int = 0):
    """``module`` with its parameters set from a seeded generator (torch's and vkml's initialisations differ)."""
    with m.no_grad():
        for k, p in enumerate(module.parameters()):
            p.copy_(m.tensor(rnd(*p.shape, seed=seed + k), dtype=p.dtype))
    return module


def grads(*tensors):
    return tuple(x.grad for x in tensors)


# ---------- argument checks (test_invalid_conv1d/2d/3d, test_mismatch_shape_conv2d, test_conv_invalid_groups)
@sc
def invalid_conv1d_kernel_too_large(m):
    m.nn.Conv1d(3, 33, 10)(t(m, rnd(1, 3, 4)))


@sc
def invalid_conv1d_negative_stride(m):
    m.nn.Conv1d(3, 6, 3, stride=-1)(t(m, rnd(1, 3, 4)))


@sc
def mismatch_shape_conv2d(m):
    F(m).conv2d(t(m, rnd(1, 10, 1, 28, 28)), t(m, rnd(6, 1, 5, 5)))


@sc
def invalid_conv2d_dilated_kernel(m):
    return error_kind(lambda: m.nn.Conv2d(1, 1, kernel_size=3, dilation=2, stride=2)(m.zeros(1, 1, 4, 4)))


@sc
def invalid_conv2d_dilated_kernel_message(m):
    m.nn.Conv2d(1, 1, kernel_size=3, dilation=2, stride=2)(m.zeros(1, 1, 4, 4))


@sc
def invalid_conv2d_kernel_too_large(m):
    m.nn.Conv2d(3, 33, 10)(t(m, rnd(1, 3, 1, 1)))


@sc
def invalid_conv2d_negative_stride(m):
    m.nn.Conv2d(3, 6, 4, stride=-1)(t(m, rnd(1, 3, 4, 4)))


@sc
def invalid_conv2d_zero_stride(m):
    m.nn.Conv2d(3, 6, 4, stride=0)(t(m, rnd(1, 3, 4, 4)))


@sc
def invalid_conv2d_half(m):
    module = m.nn.Conv2d(3, 6, 4, stride=-1).to(m.float16)
    module(t(m, rnd(1, 3, 4, 4)).to(m.float16))


@sc
def invalid_conv3d_dilated_kernel(m):
    return error_kind(lambda: m.nn.Conv3d(1, 1, kernel_size=3, dilation=2, stride=2)(m.zeros(1, 1, 4, 4, 4)))


@sc
def invalid_conv3d_negative_stride(m):
    m.nn.Conv3d(1, 1, kernel_size=3, stride=-2)(m.zeros(1, 1, 4, 4, 4))


def _invalid_groups(cls, groups):
    def f(m):
        getattr(m.nn, cls)(1, 1, kernel_size=3, dilation=2, stride=2, groups=groups)

    return f


for _cls, _groups in (("Conv1d", 0), ("Conv2d", -1), ("Conv3d", -2), ("ConvTranspose2d", 0)):
    SC[f"conv_invalid_groups_{_cls}_{_groups}"] = _invalid_groups(_cls, _groups)


@sc
def conv_groups_not_dividing_in_channels(m):
    m.nn.Conv2d(3, 4, 3, groups=2)


@sc
def conv_groups_not_dividing_out_channels(m):
    m.nn.Conv2d(4, 3, 3, groups=2)


@sc
def conv_negative_padding_functional(m):
    F(m).conv2d(t(m, rnd(1, 1, 5, 5)), t(m, rnd(1, 1, 3, 3)), padding=-1)


# ---------- padding='same' / 'valid' (test_Conv*d_module_same_padding, test_conv*d_same_padding)
def warn_always(f):
    """``f`` with warn-once warnings (padding='same' with an even kernel) given every time, on either side."""

    def run(m):
        m.set_warn_always(True)
        try:
            return f(m)
        finally:
            m.set_warn_always(False)

    run.__name__ = f.__name__
    return run


def _module_same_padding(n, kernel, dilation, padding_mode, pad):
    shape = {1: (1, 1, 20), 2: (1, 1, 9, 20), 3: (1, 1, 4, 4, 4)}[n]

    @warn_always
    def f(m):
        x = t(m, rnd(*shape))
        module = seeded(m, getattr(m.nn, f"Conv{n}d")(1, 1, kernel, padding="same", dilation=dilation))
        conv = getattr(F(m), f"conv{n}d")
        out = [module(x), conv(x, module.weight, module.bias, padding="same", dilation=dilation)]
        if padding_mode is not None:
            moded = getattr(m.nn, f"Conv{n}d")(1, 1, kernel, padding="same", padding_mode=padding_mode)
            moded = seeded(m, moded)
            padded = F(m).pad(x, pad, mode=padding_mode)
            out += [moded(x), conv(padded, moded.weight, moded.bias, padding="valid")]
        return out

    return f


SC["Conv1d_module_same_padding"] = _module_same_padding(1, 10, 1, "replicate", [4, 5])
SLOW["Conv1d_module_same_padding_dilated"] = _module_same_padding(1, 10, 2, None, None)
SLOW["Conv2d_module_same_padding"] = _module_same_padding(2, (5, 10), 1, None, None)
SLOW["Conv2d_module_same_padding_dilated"] = _module_same_padding(2, (3, 4), (1, 2), "reflect", [1, 2, 1, 1])
SLOW["Conv3d_module_same_padding"] = _module_same_padding(3, (2, 3, 4), 1, "circular", [1, 2, 1, 1, 0, 1])
SLOW["Conv3d_module_same_padding_dilated"] = _module_same_padding(3, (2, 3, 4), (3, 2, 1), None, None)


def with_sets_sorted(fn):
    """What ``fn()`` raises, a set in its message printed sorted: PyTorch's messages print a Python set, whose
    order comes from the hash seed of the process that compiled the module (torch's and vkml's differ)."""
    try:
        fn()
    except (ValueError, RuntimeError) as error:
        message = re.sub(r"\{([^{}]*)\}", lambda s: str(sorted(s.group(1).split(", "))), str(error))
        return type(error).__name__, message
    return "no error"


def _same_padding_errors(n, padding, stride):
    def f(m):
        return with_sets_sorted(lambda: getattr(m.nn, f"Conv{n}d")(3, 33, 10, padding=padding, stride=stride))

    return f


for _n in (1, 2, 3):
    SC[f"Conv{_n}d_invalid_padding_string"] = _same_padding_errors(_n, "foo", 1)
    SC[f"Conv{_n}d_same_padding_stride_2"] = _same_padding_errors(_n, "same", 2)
SC["Conv2d_same_padding_stride_1_3"] = _same_padding_errors(2, "same", (1, 3))
SC["Conv2d_same_padding_stride_4_1"] = _same_padding_errors(2, "same", (4, 1))
SC["Conv3d_same_padding_stride_1_1_3"] = _same_padding_errors(3, "same", (1, 1, 3))
SC["Conv3d_same_padding_stride_5_1_1"] = _same_padding_errors(3, "same", (5, 1, 1))


@sc
def conv2d_functional_same_padding_stride(m):
    F(m).conv2d(t(m, rnd(1, 1, 5, 5)), t(m, rnd(1, 1, 3, 3)), padding="same", stride=2)


@slow
@warn_always
def conv1d_same_padding_sizes(m):
    sizes = []
    for in_size in (50, 53):
        for k_size in (1, 2, 3, 8):
            for dilation in (1, 3):
                x, y = t(m, rnd(1, 1, in_size)), t(m, rnd(1, 1, k_size, seed=1))
                sizes.append(F(m).conv1d(x, y, padding="same", dilation=dilation).shape[2])
    return sizes


@sc
@warn_always
def conv1d_same_padding(m):
    x, y, y4 = t(m, rnd(1, 1, 12)), t(m, rnd(1, 1, 3, seed=1)), t(m, rnd(1, 1, 4, seed=2))
    return (
        F(m).conv1d(x, y, padding="same"),
        F(m).conv1d(x, y, padding=1),
        F(m).conv1d(x, y4, padding="same", dilation=2),
        F(m).conv1d(x, y4, padding=3, dilation=2),
        F(m).conv1d(x, y4, padding="same", dilation=3),
        F(m).conv1d(x, y4, padding=5, dilation=3)[..., 1:],
    )


@slow
@warn_always
def conv2d_same_padding(m):
    x = t(m, rnd(1, 1, 10, 11))
    y, y2, y3 = t(m, rnd(1, 1, 4, 5, seed=1)), t(m, rnd(1, 1, 3, 4, seed=2)), t(m, rnd(1, 1, 4, 4, seed=3))
    return (
        F(m).conv2d(x, y, padding="same"),
        F(m).conv2d(x, y, padding=(2, 2))[..., 1:, :],
        F(m).conv2d(x, y2, padding="same", dilation=2),
        F(m).conv2d(x, y2, padding=(2, 3), dilation=2),
        F(m).conv2d(x, y3, padding="same", dilation=3),
        F(m).conv2d(x, y3, padding=5, dilation=3)[..., 1:, 1:],
    )


@slow
@warn_always
def conv3d_same_padding(m):
    x, y, y2 = t(m, rnd(1, 1, 10, 11, 12)), t(m, rnd(1, 1, 1, 2, 5, seed=1)), t(m, rnd(1, 1, 4, 4, 4, seed=2))
    return (
        F(m).conv3d(x, y, padding="same"),
        F(m).conv3d(x, y, padding=(0, 1, 2))[..., :, 1:, :],
        F(m).conv3d(x, y, padding="same", dilation=2),
        F(m).conv3d(x, y, padding=(0, 1, 4), dilation=2),
        F(m).conv3d(x, y2, padding="same", dilation=3),
        F(m).conv3d(x, y2, padding=5, dilation=3)[..., 1:, 1:, 1:],
    )


def _valid_padding(n):
    def f(m):
        x, y = t(m, rnd(*(1,) * (n + 1), 10)), t(m, rnd(*(1,) * (n + 1), 4, seed=1))
        conv = getattr(F(m), f"conv{n}d")
        return conv(x, y), conv(x, y, padding="valid")

    return f


SC["conv1d_valid_padding"] = _valid_padding(1)
SLOW["conv2d_valid_padding"] = _valid_padding(2)
SLOW["conv3d_valid_padding"] = _valid_padding(3)


def _padding_backward(n, shape, kernel, padding, dilation, crop, dtype=np.float32):
    """The gradients of conv(padding='same'/'valid') next to those of the explicit padding they stand for."""

    @warn_always
    def f(m):
        out = []
        for pad in (padding, "same" if padding != 0 else "valid"):
            x, y = t(m, rnd(*shape, dtype=dtype), True), t(m, rnd(*kernel, seed=1, dtype=dtype), True)
            z = getattr(F(m), f"conv{n}d")(x, y, padding=pad, dilation=dilation)
            if pad == padding and crop:
                z = z[(..., *([slice(1, None)] * crop))]
            z.sum().abs().backward()
            out.append(grads(x, y))
        return out

    return f


SC["conv1d_same_padding_backward_symmetric"] = _padding_backward(1, (1, 1, 12), (1, 1, 4), 3, 2, 0)
SLOW["conv1d_same_padding_backward_asymmetric"] = _padding_backward(1, (1, 1, 12), (1, 1, 4), 2, 1, 1)
SLOW["conv2d_same_padding_backward_symmetric"] = _padding_backward(2, (1, 1, 10, 11), (1, 1, 4, 5), (3, 4), 2, 0)
SLOW["conv2d_same_padding_backward_asymmetric"] = _padding_backward(2, (1, 1, 10, 11), (1, 1, 4, 4), 2, 1, 2)
SLOW["conv3d_same_padding_backward_symmetric"] = _padding_backward(
    3, (1, 1, 1, 11, 12), (1, 1, 1, 2, 5), (0, 1, 4), 2, 0, np.float64
)
SLOW["conv3d_same_padding_backward_asymmetric"] = _padding_backward(
    3, (1, 1, 1, 11, 12), (1, 1, 1, 4, 4), 2, 1, 2, np.float64
)
SLOW["conv1d_valid_padding_backward"] = _padding_backward(1, (1, 1, 10), (1, 1, 4), 0, 1, 0)
SLOW["conv2d_valid_padding_backward"] = _padding_backward(2, (1, 1, 1, 10), (1, 1, 1, 4), 0, 1, 0)
SLOW["conv3d_valid_padding_backward"] = _padding_backward(3, (1, 1, 1, 1, 10), (1, 1, 1, 1, 4), 0, 1, 0, np.float64)


# ---------- types, arguments, backward twice
@sc
def Conv2d_inconsistent_types(m):
    return error_kind(lambda: F(m).conv2d(t(m, rnd(4, 1, 7, 7)), t(m, rnd(1, 1, 3, 3, dtype=np.float64))))


@sc
def Conv2d_inconsistent_bias_type(m):
    x, w = t(m, rnd(4, 1, 7, 7)), t(m, rnd(1, 1, 3, 3))
    return error_kind(lambda: F(m).conv2d(x, w, t(m, rnd(1, dtype=np.float64))))


@sc
def Conv2d_missing_argument(m):
    return error_kind(lambda: m.nn.Conv2d(3, 3, 3)(None))


@slow
def Conv2d_backward_twice(m):
    o1 = m.nn.Conv2d(3, 3, 3)(t(m, rnd(2, 3, 5, 5)))
    o1.sum().backward()
    o1.sum().backward()


def _incorrect_input_size(cls, dims):
    def f(m):
        module = getattr(m.nn, cls)(3, 8, 3)
        return [error_kind(lambda d=d: module(m.zeros((3,) * d))) for d in dims]

    return f


for _cls, _dims in (
    ("Conv1d", (1, 4)),
    ("ConvTranspose1d", (1, 4)),
    ("Conv2d", (2, 5)),
    ("ConvTranspose2d", (2, 5)),
    ("Conv3d", (3, 6)),
    ("ConvTranspose3d", (3, 6)),
):
    SC[f"conv_modules_raise_error_on_incorrect_input_size_{_cls}"] = _incorrect_input_size(_cls, _dims)


@sc
def conv_rank_error_message(m):
    m.nn.Conv2d(3, 8, 3)(m.zeros(3, 3))


def _shapecheck(cls, args, kwargs, size, dtype="float32"):
    def f(m):
        module = getattr(m.nn, cls)(*args, **kwargs).to(getattr(m, dtype))
        return error_kind(lambda: module(m.zeros(3, *size, dtype=getattr(m, dtype))).shape)

    return f


for _i, (_cls, _args, _kw, _size) in enumerate(
    [
        ("Conv1d", (1, 1, 3), {}, (1, 2)),
        ("Conv1d", (1, 1, 3), {"stride": 2}, (1, 2)),
        ("Conv1d", (1, 1, 2), {}, (1, 2)),
        ("Conv1d", (1, 1, 2), {"stride": 2}, (1, 2)),
        ("Conv1d", (1, 1, 3), {"stride": 2, "padding": 1}, (1, 2)),
        ("Conv2d", (1, 1, (3, 3)), {}, (1, 2, 2)),
        ("Conv2d", (1, 1, (3, 3)), {}, (1, 3, 3)),
        ("Conv2d", (1, 1, (3, 3)), {"padding": 1}, (1, 2, 2)),
        ("Conv3d", (1, 1, (3, 3, 3)), {}, (1, 2, 2, 2)),
        ("Conv3d", (1, 1, (3, 3, 3)), {}, (1, 3, 3, 3)),
        ("Conv3d", (1, 1, (3, 3, 3)), {"padding": 1}, (1, 2, 2, 2)),
    ]
):
    SC[f"conv_shapecheck_{_i}"] = _shapecheck(_cls, _args, _kw, _size)
SC["conv_shapecheck_half"] = _shapecheck("Conv2d", (1, 1, (3, 3)), {}, (1, 2, 2), "float16")
SC["conv_shapecheck_bfloat16"] = _shapecheck("Conv1d", (1, 1, 3), {"stride": 2}, (1, 2), "bfloat16")


# ---------- ConvTranspose output_size
@sc
def ConvTranspose2d_output_size(m):
    module = m.nn.ConvTranspose2d(3, 4, 3, 3, 0, 2)
    x = m.zeros(2, 3, 6, 6)
    out = []
    for h in range(15, 22, 2):
        for w in range(15, 22, 3):
            if 18 <= h <= 20 and 18 <= w <= 20:
                out.append(tuple(module(x, output_size=(h, w)).shape[2:]))
            else:
                out.append(error_kind(lambda h=h, w=w: module(x, (h, w))))
    return out


@sc
def ConvTranspose2d_output_size_message(m):
    m.nn.ConvTranspose2d(3, 4, 3, 3, 0, 2)(m.zeros(2, 3, 6, 6), output_size=(15, 21))


@sc
def ConvTranspose2d_output_size_wrong_length(m):
    m.nn.ConvTranspose2d(3, 4, 3, 3, 0, 2)(m.zeros(2, 3, 6, 6), output_size=(15, 21, 3))


@slow
def ConvTranspose2d_output_size_downsample_upsample(m):
    shapes = []
    for h, w, k, d, s, p in ((13, 13, 2, 1, 1, 0), (17, 14, 3, 2, 2, 1), (23, 16, 4, 4, 3, 2), (20, 15, 3, 3, 3, 0)):
        conv = m.nn.Conv2d(3, 2, kernel_size=k, stride=s, padding=p, dilation=d)
        t_conv = m.nn.ConvTranspose2d(2, 3, kernel_size=k, stride=s, padding=p, dilation=d)
        x = m.zeros(2, 3, h, w)
        shapes.append(tuple(t_conv(conv(x), output_size=x.shape).shape))
    return shapes


@sc
def ConvTranspose3d_correct_output_size(m):
    return m.nn.ConvTranspose3d(2, 2, 2)(m.zeros(1, 2, 1, 1, 1), output_size=(1, 2, 2, 2, 2)).shape


@sc
def conv_transpose_with_output_size_and_no_batch_dim_2d(m):
    module = m.nn.ConvTranspose2d(1, 1, kernel_size=16, stride=16, padding=7, bias=False)
    return module(m.zeros(1, 15, 13), output_size=(1, 240, 200)).shape


@sc
def conv_transpose_with_output_size_and_no_batch_dim_3d(m):
    module = m.nn.ConvTranspose3d(1, 1, kernel_size=16, stride=16, padding=7, bias=False)
    return module(m.zeros(1, 15, 13, 13), output_size=(1, 240, 200, 200)).shape


@slow
def conv_transpose_output_size_values(m):
    module = seeded(m, m.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1))
    x = t(m, rnd(1, 2, 4, 5), True)
    out = module(x, output_size=(8, 10))
    (out * out).sum().backward()
    return out, x.grad, module.weight.grad, module.bias.grad


# ---------- padding modes (test_conv_padding_mode)
@sc
def conv_padding_mode_unknown(m):
    return with_sets_sorted(lambda: m.nn.Conv2d(3, 3, 3, padding_mode="xyz"))


@sc
def conv_padding_mode_int(m):
    return error_kind(lambda: m.nn.Conv2d(3, 3, 3, padding_mode=3))


@sc
def conv_transpose_padding_mode_reflect(m):
    m.nn.ConvTranspose2d(3, 3, 3, padding_mode="reflect")


def _padding_mode_values(n, mode, padding):
    def f(m):
        shape = {1: (2, 2, 7), 2: (2, 2, 5, 6), 3: (1, 2, 4, 5, 4)}[n]
        module = seeded(m, getattr(m.nn, f"Conv{n}d")(2, 3, 3, padding=padding, padding_mode=mode))
        x = t(m, rnd(*shape), True)
        out = module(x)
        (out * out).sum().backward()
        return out, x.grad, module.weight.grad

    return f


for _n in (1, 2, 3):
    for _mode in ("reflect", "circular", "replicate"):
        (SC if (_n, _mode) == (2, "reflect") else SLOW)[f"conv{_n}d_padding_mode_{_mode}"] = _padding_mode_values(
            _n, _mode, 1 if _n != 2 else (1, 2)
        )


# ---------- groups (test_Conv2d_groups_nobias(_v2), test_Conv3d_groups_nobias/wbias, test_Conv2d_naive_groups)
def _groups(n, cin, cout, groups, bias, size, dtype=np.float32):
    def f(m):
        cls = getattr(m.nn, f"Conv{n}d")
        module = seeded(m, cls(cin, cout, kernel_size=3, groups=groups, bias=bias).to(getattr(m, np.dtype(dtype).name)))
        x = t(m, rnd(2, cin, *(size,) * n, dtype=dtype), True)
        out = module(x)
        out.backward(t(m, rnd(*out.shape, seed=9, dtype=dtype)))
        # the halves as two ungrouped convolutions, as PyTorch's test compares them
        halves = []
        ci, co = cin // groups, cout // groups
        for g in range(groups):
            half = cls(ci, co, kernel_size=3, bias=bias).to(getattr(m, np.dtype(dtype).name))
            with m.no_grad():
                half.weight.copy_(module.weight[g * co : (g + 1) * co])
                if bias:
                    half.bias.copy_(module.bias[g * co : (g + 1) * co])
            halves.append(half(x.detach()[:, g * ci : (g + 1) * ci]))
        return out, m.cat(halves, 1), x.grad, module.weight.grad, module.bias.grad if bias else None

    return f


SC["Conv2d_groups_nobias"] = _groups(2, 4, 4, 2, False, 6)
SLOW["Conv2d_groups_nobias_v2"] = _groups(2, 4, 16, 2, False, 6)
SLOW["Conv3d_groups_nobias"] = _groups(3, 4, 16, 2, False, 6)
SLOW["Conv3d_groups_wbias"] = _groups(3, 4, 16, 2, True, 6)
SLOW["Conv2d_naive_groups"] = _groups(2, 4, 4, 2, True, 6)
SLOW["Conv2d_depthwise_naive_groups"] = _groups(2, 2, 4, 2, True, 6)
SLOW["Conv2d_groups_double"] = _groups(2, 4, 4, 2, True, 5, np.float64)


@slow
def Conv2d_backward_depthwise(m):
    x = t(m, rnd(2, 2, 4, 20, dtype=np.float64), True)
    w = t(m, rnd(2, 1, 3, 5, seed=1, dtype=np.float64), True)
    out = F(m).conv2d(x, w, bias=None, stride=(1, 10), groups=2)
    (out * out).sum().backward()
    return out, x.grad, w.grad


@slow
def Conv2d_OneDNN_groups(m):
    out = []
    for groups, dilation in ((24, 1), (23, 2)):
        op = m.nn.Conv2d(groups, groups, 3, stride=2, padding=1, dilation=dilation, groups=groups, bias=False)
        op.weight.data = m.ones(groups, 1, 3, 3)
        res = op(m.ones(1, groups, 6, 6))
        res.backward(m.ones(res.shape))
        out.append(op.weight.grad)
    return out


@sc
def conv2d_discontiguous_weight(m):
    x = m.ones(4, 16, 16, 16)
    weight = m.arange(0, 1.0, 1 / 2.0**10).reshape(32, 16, 1, 2)[:, :, :, ::2]
    y = F(m).conv2d(x, weight, None)
    return weight.is_contiguous(), y.sum()


# ---------- double backward (test_conv_double_backward_no_bias/_groups/_stride)
def _double_backward(kern, stride, padding, chan_in, chan_out, inp_size, dilation, groups=1, bias=True):
    def f(m):
        x = t(m, rnd(2, chan_in, inp_size, inp_size, dtype=np.float64), True)
        w = t(m, rnd(chan_out, chan_in // groups, kern, kern, seed=1, dtype=np.float64), True)
        b = t(m, rnd(chan_out, seed=2, dtype=np.float64), True) if bias else None
        out = F(m).conv2d(x, w, b, stride, padding, dilation, groups)
        gy = t(m, rnd(*out.shape, seed=3, dtype=np.float64), True)
        gx, gw = m.autograd.grad(out, (x, w), gy, create_graph=True)
        (gx.square().sum() + gw.square().sum()).backward()
        return out, gx, gw, x.grad, w.grad, gy.grad

    return f


SC["conv_double_backward_no_bias"] = _double_backward(3, 2, 1, 2, 4, 5, 1, bias=False)
SLOW["conv_double_backward_bias"] = _double_backward(3, 2, 1, 2, 4, 5, 1)
SLOW["conv_double_backward_groups"] = _double_backward(3, 1, 2, 4, 8, 6, 1, groups=2)
SLOW["conv_double_backward_stride_dilated"] = _double_backward(3, 2, 1, 1, 2, 5, 2)
SLOW["conv_double_backward_stride_7"] = _double_backward(3, 2, 0, 1, 2, 7, 1)


@slow
def conv_double_backward_first_order_graph(m):
    x = t(m, rnd(2, 2, 5, 5), True)
    w = t(m, rnd(4, 2, 3, 3, seed=1), True)
    (g,) = m.autograd.grad(F(m).conv2d(x, w, None, 2, 1).sum(), x, create_graph=True)
    return g.requires_grad, g


# ---------- empty inputs (test_conv_empty_channel, test_group_conv_empty, test_(group_)convTranspose_empty)
def _empty_input(make_module, shape):
    """_test_module_empty_input: forward, a backward of ones, zero gradients everywhere."""

    def f(m):
        module = make_module(m)
        x = m.zeros(*shape, requires_grad=True)
        out = module(x)
        out.sum().backward()
        return out, x.grad, [p.grad for p in module.parameters()]

    return f


SC["conv_empty_channel_1d"] = _empty_input(lambda m: m.nn.Conv1d(0, 8, 2, stride=2), (2, 0, 15))
SLOW["conv_empty_channel_2d"] = _empty_input(lambda m: m.nn.Conv2d(0, 33, 3, stride=2), (2, 0, 50, 100))
SLOW["conv_empty_channel_3d"] = _empty_input(lambda m: m.nn.Conv3d(0, 33, 3, stride=2), (2, 0, 50, 20, 40))
SC["group_conv_empty"] = _empty_input(lambda m: m.nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4), (0, 4, 4, 4))
SLOW["group_convTranspose_empty"] = _empty_input(
    lambda m: m.nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, groups=4), (0, 4, 4, 4)
)
SLOW["convTranspose_empty"] = _empty_input(lambda m: m.nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1), (0, 4, 4, 4))
SLOW["conv3d_empty_batch"] = _empty_input(lambda m: m.nn.Conv3d(2, 3, 2), (0, 2, 3, 3, 3))


def _empty_channel_error(cls, out, kernel, shape):
    def f(m):
        getattr(m.nn, cls)(0, out, kernel, stride=2)(m.zeros(*shape))

    return f


SC["conv_empty_channel_error_1d"] = _empty_channel_error("Conv1d", 8, 2, (2, 1, 0))
SC["conv_empty_channel_error_2d"] = _empty_channel_error("Conv2d", 33, 3, (2, 1, 40, 0))
SC["conv_empty_channel_error_3d"] = _empty_channel_error("Conv3d", 33, 3, (2, 1, 50, 0, 40))


# ---------- convolution with the shapes of test_conv_backend (the slow and empty backends)
def _backend(shape, transposed, dilated, groups, bias, strided, contiguous):
    def f(m):
        c_in, c_out, dim = shape[1], 12, len(shape) - 2
        x = t(m, rnd(*shape), True)
        w_shape = (c_in, c_out // groups) if transposed else (c_out, c_in // groups)
        w = t(m, rnd(*w_shape, *(3,) * dim, seed=1), True)
        b = t(m, rnd(c_out, seed=2), True) if bias else None
        leaves = [x, w] + ([b] if bias else [])
        if not contiguous:  # repeat_interleave then every other element: PyTorch's non-contiguous copies
            x, w = (m.repeat_interleave(v, 2, dim=-1)[..., ::2] for v in (x, w))
            b = m.repeat_interleave(b, 2, dim=-1)[..., ::2] if bias else None
        stride, dilation = (2 if strided else 1,) * dim, (2 if dilated else 1,) * dim
        out = m.convolution(x, w, b, stride, (0,) * dim, dilation, transposed, (0,) * dim, groups)
        out.backward(t(m, rnd(*out.shape, seed=3)))
        return out, [v.grad for v in leaves]

    return f


_BACKENDS = {
    "slow1d": ((2, 6, 7), False, False, 3),
    "slow1d_transposed": ((2, 6, 7), True, False, 3),
    "slow1d_dilated": ((2, 6, 7), False, True, 3),
    "slow1d_dilated_transposed": ((2, 6, 7), True, True, 3),
    "slow2d": ((2, 6, 7, 8), False, False, 3),
    "slow2d_transposed": ((2, 6, 7, 8), True, False, 3),
    "slow2d_dilated": ((2, 6, 7, 8), False, True, 3),
    "slow2d_dilated_transposed": ((2, 6, 7, 8), True, True, 3),
    "slow3d": ((2, 6, 7, 8, 9), False, False, 3),
    "slow3d_dilated": ((2, 6, 7, 8, 9), False, True, 3),
    "empty_batch1d": ((0, 6, 7), False, False, 3),
    "empty_channel1d": ((2, 0, 7), False, False, 3),
    "empty_batch_channel1d": ((0, 0, 7), False, False, 3),
    "empty_batch2d": ((0, 6, 7, 8), False, False, 3),
    "empty_channel2d": ((2, 0, 7, 8), False, False, 3),
    "empty_batch_channel2d": ((0, 0, 7, 8), False, False, 3),
    "empty_batch3d": ((0, 6, 7, 8, 9), False, False, 3),
    "empty_channel3d": ((2, 0, 7, 8, 9), False, False, 3),
    "empty_batch_channel3d": ((0, 0, 7, 8, 9), False, False, 3),
}
for _name, (_shape, _tr, _dil, _g) in _BACKENDS.items():
    for _bias in (False, True):
        for _strided in (False, True):
            for _contig in (False, True):
                _key = f"conv_backend_{_name}_bias{int(_bias)}_strided{int(_strided)}_contig{int(_contig)}"
                _f = _backend(_shape, _tr, _dil, _g, _bias, _strided, _contig)
                (SC if _key in ("conv_backend_slow2d_bias1_strided1_contig0",) else SLOW)[_key] = _f


# ---------- non-contiguous weights (test_conv_noncontig_weights(_and_bias))
def _noncontig_weights(dim, grouped):
    def f(m):
        groups = 3 if grouped else 1
        w = t(m, rnd(*[3] * dim))
        w = w.expand([3, 3 // groups, *w.shape]).detach().requires_grad_()
        x = t(m, rnd(1, 3, *[5] * dim, seed=1), True)
        y = getattr(F(m), f"conv{dim}d")(x, w, groups=groups)
        y.sum().backward()
        first = (y, x.grad, w.grad)
        x.grad, w.grad = None, None
        y = getattr(F(m), f"conv_transpose{dim}d")(x, w, groups=groups)
        y.sum().backward()
        return first, (y, x.grad, w.grad)

    return f


for _dim in (1, 2, 3):
    for _grouped in (False, True):
        (SC if (_dim, _grouped) == (2, True) else SLOW)[f"conv_noncontig_weights_{_dim}d_grouped{int(_grouped)}"] = (
            _noncontig_weights(_dim, _grouped)
        )


@slow
def conv_noncontig_weights_and_bias(m):
    out = []
    for bias in (True, False):
        conv1 = m.nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3, bias=bias)
        input_nc = t(m, rnd(1, 3, 20, 20, 2))[:, :, :, :, 1]
        conv1.weight = m.nn.Parameter(t(m, rnd(8, 3, 7, 7, 2, seed=1))[:, :, :, :, 1])
        if bias:
            conv1.bias = m.nn.Parameter(t(m, rnd(8, 2, seed=2))[:, 1])
        out1 = conv1(input_nc)
        conv1.weight = m.nn.Parameter(conv1.weight.contiguous())
        if bias:
            conv1.bias = m.nn.Parameter(conv1.bias.contiguous())
        out.append((out1, conv1(input_nc.contiguous())))
    return out


@slow
def conv_contiguous_for_oneDNN(m):
    conv = seeded(m, m.nn.Conv2d(1, 16, kernel_size=(5, 2), stride=(2, 1), padding=(0, 1)))
    x = m.transpose(t(m, rnd(1, 2, 21, 11, 1)), 1, 4)[..., 0]
    return conv(x)


# ---------- channels last (test_conv_thnn_nhwc)
def _nhwc(cls, n, c, h, w, out_channels, kernel_size, dilation, groups, input_cl, weight_cl):
    def f(m):
        cl = m.channels_last
        x = t(m, np.random.default_rng(h).integers(-3, 3, (n, c, h, w)).astype(np.float32))
        if input_cl:
            x = x.to(memory_format=cl)
        x.requires_grad_()
        conv = seeded(m, getattr(m.nn, cls)(c, out_channels, kernel_size, dilation=dilation, groups=groups))
        if weight_cl:
            conv = conv.to(memory_format=cl)
        out = conv(x)
        out.backward(t(m, np.random.default_rng(w).integers(-3, 3, tuple(out.shape)).astype(np.float32)))
        return (
            out.is_contiguous(memory_format=cl),
            out,
            conv.weight.grad,
            conv.bias.grad,
            x.grad,
        )

    return f


for _i, (_cls, _args) in enumerate(
    [
        ("Conv2d", (2, 8, 4, 4, 4, 3, 1, 1)),
        ("Conv2d", (2, 8, 4, 4, 8, 3, 1, 8)),
        ("Conv2d", (2, 8, 11, 13, 16, 3, 2, 1)),
        ("ConvTranspose2d", (2, 8, 4, 4, 4, 3, 1, 1)),
        ("ConvTranspose2d", (2, 8, 4, 4, 8, 3, 1, 8)),
    ]
):
    for _fmt in ((True, True), (True, False), (False, True)):
        _key = f"conv_thnn_nhwc_{_i}_{_cls}_in{int(_fmt[0])}_w{int(_fmt[1])}"
        (SC if _key == "conv_thnn_nhwc_0_Conv2d_in1_w0" else SLOW)[_key] = _nhwc(_cls, *_args, *_fmt)
SLOW["conv_thnn_nhwc_one_channel"] = _nhwc("Conv2d", 2, 1, 10, 10, 8, 3, 1, 1, False, True)


@slow
def conv2d_no_grad(m):
    out = []
    for batch, groups in ((1, 1), (2, 2), (3, 4)):
        x = t(m, np.random.default_rng(batch).random((batch, groups, 8, 8)).astype(np.float32))
        module = seeded(m, m.nn.Conv2d(groups, 8, kernel_size=(3, 3), groups=groups))
        with m.no_grad():
            no_grad = module(x)
        out.append((no_grad, module(x)))
    return out


# ---------- reproducers (issues 120211, 120406, 120547)
@slow
def permute_conv2d_issue_120211(m):
    image = t(m, rnd(1, 24, 24, 3)).permute(0, 3, 1, 2)
    return [F(m).conv2d(image, m.zeros(3, 1, 1, r * 2 + 1), groups=3).shape for r in (0, 3, 11)]


@slow
def conv3d_issue_120406(m):
    return F(m).conv3d(m.ones(2, 3, 8, 9, 26), m.ones(3, 1, 1, 1, 17), groups=3)


@slow
def conv1d_issue_120547(m):
    x = t(m, rnd(1, 1, 16)).transpose(1, 2)
    return F(m).conv1d(x, m.ones(16, 1, 32), m.ones(16), 1, 16, 1, 16)


# Over the default suite's time budget (each builds several kernels): these run with -m exhaustive
_OVER_BUDGET = (
    "Conv1d_module_same_padding",
    "Conv2d_groups_nobias",
    "conv1d_same_padding",
    "conv1d_same_padding_backward_symmetric",
    "conv2d_discontiguous_weight",
    "conv2d_padding_mode_reflect",
    "conv_backend_slow2d_bias1_strided1_contig0",
    "conv_double_backward_no_bias",
    "conv_noncontig_weights_2d_grouped1",
    "conv_thnn_nhwc_0_Conv2d_in1_w0",
    "conv_transpose_with_output_size_and_no_batch_dim_2d",
    "conv_transpose_with_output_size_and_no_batch_dim_3d",
)
for _name in _OVER_BUDGET:
    SLOW[_name] = SC.pop(_name)


# Where vkml still differs from PyTorch, and why (strict: a fix makes the test fail until it leaves this list)
KNOWN: dict[str, str] = {}


def _tolerances(name: str) -> dict:
    # vkml's convolutions sum their products in another order than PyTorch's
    return {"rtol": 1e-4, "atol": 1e-4}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_convolution_scenario_matches_torch(name: str) -> None:
    check(SC[name], **_tolerances(name))


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_convolution_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], **_tolerances(name))


def test_convolutions_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: a grouped, strided, channels-last convolution with its gradients."""

    def scenario(m):
        device = {"device": gpu} if m is vkml else {}
        x = m.tensor(rnd(2, 4, 7, 6), requires_grad=True, **device)
        w = m.tensor(rnd(6, 2, 3, 2, seed=1), requires_grad=True, **device)
        out = F(m).conv2d(x.to(memory_format=m.channels_last), w, None, 2, (1, 0), 1, 2)
        (out * out).sum().backward()
        return out, x.grad, w.grad

    check(scenario, rtol=1e-4, atol=1e-4)
