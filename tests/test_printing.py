"""repr/str/print of tensors and modules give PyTorch's text (vkml/frontend/printing.py).

Each case builds the same values in both libraries and compares the strings, with ``torch.`` read
as ``vkml.`` in dtype names; on lavapipe the text is the CPU's with ``device='vulkan:0'`` added.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import vkml  # noqa: E402

_RNG = np.random.default_rng(0)
_NAN, _INF = float("nan"), float("inf")

# name -> (values, dtype name); the dtype name is looked up in both libraries
CASES = {
    "float_vector": ([1.0, 2.5, -3.0], "float32"),
    "whole_floats": ([1.0, 2.0, -30.0], "float32"),
    "zeros": ([0.0, 0.0], "float32"),
    "negative_zero": ([-0.0, 1.0], "float32"),
    "scalar_float": (3.0, "float32"),
    "scalar_fraction": (0.1, "float32"),
    "scalar_int": (7, "int64"),
    "scalar_bool": (True, "bool"),
    "ints": ([1, 2, -300], "int64"),
    "int32": ([1, 2, 3], "int32"),
    "int8": ([-128, 0, 127], "int8"),
    "uint8": ([0, 255], "uint8"),
    "int16": ([[1, -2], [300, 4]], "int16"),
    "bools": ([[True, False], [False, True]], "bool"),
    "float16": ([0.1, 1.5, 65504.0], "float16"),
    "bfloat16": ([0.1, 1.5, -3.0], "bfloat16"),
    "float64": ([0.1, 1.0 / 3.0], "float64"),
    "small_scientific": ([1e-8, 1.0, 2.0], "float32"),
    "large_scientific": ([1e9, 1.0], "float32"),
    "wide_ratio": ([0.5, 1234.5], "float32"),
    "nan_inf": ([_NAN, _INF, -_INF, 1.5], "float32"),
    "only_nonfinite": ([_NAN, _INF], "float32"),
    "whole_with_nan": ([_NAN, 2.0, -_INF], "float32"),
    "matrix": (_RNG.standard_normal((4, 5)).astype(np.float32), "float32"),
    "cube": (_RNG.standard_normal((2, 3, 4)).astype(np.float32) * 100, "float32"),
    "four_dims": (np.arange(24, dtype=np.float32).reshape(2, 1, 3, 4) / 7, "float32"),
    "wrapped_row": (_RNG.standard_normal(40).astype(np.float32), "float32"),
    "wrapped_rows": (_RNG.standard_normal((2, 30)).astype(np.float32) * 1e5, "float32"),
    "summarized_vector": (np.arange(2000, dtype=np.float32) / 3, "float32"),
    "summarized_ints": (np.arange(3000).reshape(30, 100), "int64"),
    "summarized_cube": (_RNG.standard_normal((12, 10, 11)).astype(np.float32), "float32"),
    "summarized_hidden_outlier": (np.concatenate([np.ones(500), [1e12], np.ones(600)]).astype(np.float32), "float32"),
    "empty": ([], "float32"),
    "empty_int": ([], "int64"),
    "empty_matrix": (np.zeros((0, 3), np.float32), "float32"),
    "empty_half": (np.zeros((2, 0), np.float16), "float16"),
}


def _pair(values, dtype: str):
    return torch.tensor(values, dtype=getattr(torch, dtype)), vkml.tensor(values, dtype=getattr(vkml, dtype))


def _torch_text(t) -> str:
    return repr(t).replace("torch.", "vkml.")


@pytest.mark.parametrize("name", list(CASES))
def test_tensor_repr_is_pytorchs(name):
    expected, got = _pair(*CASES[name])
    assert repr(got) == _torch_text(expected)
    assert str(got) == _torch_text(expected)


@pytest.mark.parametrize(
    "options",
    [
        {"precision": 2},
        {"precision": 8},
        {"sci_mode": True},
        {"sci_mode": False},
        {"threshold": 5},
        {"threshold": 5, "edgeitems": 1},
        {"threshold": 5, "edgeitems": 0},
        {"linewidth": 30},
        {"profile": "short"},
        {"profile": "full"},
    ],
    ids=str,
)
def test_print_options_as_pytorchs(options):
    values = [
        ([1.12345, 2e-3, 400.0, -5.5, 0.25, 6.0, 7.0, 8.0, 9.0, 10.0], "float32"),
        (np.arange(48, dtype=np.float32).reshape(4, 3, 4) / 3, "float32"),
        (np.arange(1500), "int64"),
        ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], "float32"),
    ]
    torch.set_printoptions(**options)
    vkml.set_printoptions(**options)
    try:
        for v in values:
            expected, got = _pair(*v)
            assert repr(got) == _torch_text(expected), (options, v)
    finally:
        torch.set_printoptions(profile="default")
        vkml.set_printoptions(profile="default")


def test_set_printoptions_rejects_an_unknown_profile():
    with pytest.raises(ValueError, match="profile"):
        vkml.set_printoptions(profile="long")
    assert repr(vkml.tensor([1.5])) == "tensor([1.5000])"


def _double(lib):
    """One custom Function, of the same class name in each library (its grad_fn is named after it)."""

    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Double


def test_autograd_suffixes_and_parameter():
    for lib in (torch, vkml):
        lib.manual_seed(0)
    texts = []
    for lib in (torch, vkml):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 2
        texts.append(
            [
                repr(x),
                repr(y),
                repr(y.sum()),
                repr(y.exp()),
                repr(x + 1),
                repr(x.detach()),
                repr(x.view(4)),
                repr(x.float()),
                repr(x.to(lib.float16)),
                repr(x @ x),
                repr(_double(lib).apply(x)),
                repr(lib.nn.Parameter(lib.ones(2))),
                str(lib.nn.Parameter(lib.ones(2), requires_grad=False)),
            ]
        )
    assert texts[1] == [t.replace("torch.", "vkml.") for t in texts[0]]


def test_suffixes_wrap_at_linewidth():
    values = np.arange(12, dtype=np.float32).reshape(2, 6) / 3 + 1000
    expected = torch.tensor(values, dtype=torch.float16, requires_grad=True)
    got = vkml.tensor(values, dtype=vkml.float16, requires_grad=True)
    assert repr(got) == _torch_text(expected)
    assert repr(got).endswith("]],\n       dtype=vkml.float16, requires_grad=True)")


def test_printing_realizes_a_lazy_tensor():
    x = vkml.ones(3) * 2  # lazy
    assert not x.node.realized
    assert repr(x) == "tensor([2., 2., 2.])"
    assert x.node.realized


def test_print_writes_the_repr(capsys):
    print(vkml.tensor([1, 2]), vkml.tensor(0.5))
    assert capsys.readouterr().out == "tensor([1, 2]) tensor(0.5000)\n"


@pytest.mark.parametrize("name", ["float_vector", "ints", "bools", "nan_inf", "bfloat16", "scalar_float", "int8"])
def test_vulkan_tensor_prints_its_device(gpu, name):
    # short tensors: the device suffix, first of the suffixes as in PyTorch, does not wrap
    expected, got = _pair(*CASES[name])
    text = _torch_text(expected)
    assert (
        repr(got.to(gpu))
        == text[:-1].replace(", dtype=", ", device='vulkan:0', dtype=")
        + ("" if ", dtype=" in text else ", device='vulkan:0'")
        + ")"
    )


def test_vulkan_summarized_matches_cpu(gpu):
    values = _RNG.standard_normal((40, 40)).astype(np.float32)
    cpu = repr(vkml.tensor(values))
    # the last row is too long for the suffix: it goes on a line of its own, under the bracket
    assert repr(vkml.tensor(values).to(gpu)) == cpu[:-1] + ",\n       device='vulkan:0')"
    values = np.arange(2000)
    assert repr(vkml.tensor(values).to(gpu)) == repr(vkml.tensor(values))[:-1] + ", device='vulkan:0')"


# ---------------------------------------------------------------------- modules


def _modules(lib):
    nn = lib.nn
    return [
        nn.Linear(3, 4),
        nn.Linear(3, 4, bias=False),
        nn.Conv2d(3, 8, 3),
        nn.Conv2d(3, 8, (3, 5), stride=2, padding=1, bias=False),
        nn.Conv2d(4, 8, 3, groups=2, dilation=2, padding=2, padding_mode="reflect"),
        nn.Conv1d(3, 4, 5),
        nn.ConvTranspose2d(3, 4, 2, stride=2),
        nn.BatchNorm2d(3),
        nn.BatchNorm1d(5, affine=False),
        nn.Dropout(),
        nn.Dropout(0.1, inplace=True),
        nn.LayerNorm(4),
        nn.LayerNorm([4, 5], elementwise_affine=False),
        nn.Embedding(10, 3, padding_idx=0),
        nn.ReLU(),
        nn.ReLU(inplace=True),
        nn.GELU(approximate="tanh"),
        nn.LeakyReLU(),
        nn.LeakyReLU(0.2, inplace=True),
        nn.ELU(0.5, True),
        nn.CELU(),
        nn.Hardtanh(-2, 2),
        nn.ReLU6(True),
        nn.Hardswish(True),
        nn.Threshold(0.1, 20),
        nn.Softplus(2, 10),
        nn.Hardshrink(0.3),
        nn.Softshrink(),
        nn.Softmin(1),
        nn.GLU(),
        nn.PReLU(3),
        nn.Softmax(dim=1),
        nn.MaxPool2d(3, stride=2, padding=1),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.GroupNorm(2, 4),
        nn.MultiheadAttention(8, 2),
        nn.LSTM(3, 4),
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))),
        nn.Sequential(*[nn.Linear(2, 2) for _ in range(4)]),
        nn.ModuleList([nn.Linear(2, 2), nn.ReLU()]),
        nn.ModuleDict({"a": nn.Linear(2, 2)}),
    ]


def _without_norm_bias(text: str) -> str:
    # the norm layers' bias= field is newer than PyTorch 2.11 (the GPU machine's): compared without it
    return re.sub(r"(affine=\w+), bias=\w+", r"\1", text)


def test_module_repr_is_pytorchs():
    for expected, got in zip(_modules(torch), _modules(vkml), strict=True):
        assert _without_norm_bias(repr(got)) == _without_norm_bias(repr(expected))


def test_a_subclass_prints_its_name():
    class Mine(vkml.Tensor):
        pass

    class MineT(torch.Tensor):
        pass

    assert repr(Mine(vkml.ones(2).node)) == repr(torch.ones(2).as_subclass(MineT)).replace("MineT", "Mine")
