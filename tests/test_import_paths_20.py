"""Import paths and small names third-party programs use, against PyTorch's: ``torch.onnx.is_in_onnx_export``
(and export refused by name), ``torch.utils.data._utils.collate``, ``torch.nn.modules.module._addindent``,
``torch.nn.common_types``."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import vkml


def test_onnx_export_is_never_running_and_export_is_refused_by_name():
    assert vkml.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match=r"torch\.onnx\.export: vkml cannot export ONNX"):
        vkml.onnx.export(vkml.nn.Linear(2, 2), (vkml.ones(1, 2),), "model.onnx")


def test_collate_from_the_private_path_is_default_collate():
    module = importlib.import_module("vkml.utils.data._utils.collate")
    want = importlib.import_module("torch.utils.data._utils.collate").default_collate([(1, 2.0), (3, 4.0)])
    got = module.default_collate([(1, 2.0), (3, 4.0)])
    for g, w in zip(got, want):
        assert g.dtype.name == str(w.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert vkml.utils.data._utils.collate.default_convert is vkml.utils.data.default_convert


@pytest.mark.parametrize("text", ["one line", "Linear(\n  in=2\n)", "a\n\nb\n"])
def test_addindent_nests_as_pytorchs(text):
    got = vkml.nn.modules.module._addindent(text, 2)
    assert got == torch.nn.modules.module._addindent(text, 2)


def test_common_types_are_reachable_as_attributes():
    assert vkml.nn.common_types._size_2_t is not None
    assert torch.nn.common_types._size_2_t is not None


def _placeholder_kinds(m) -> list:
    lin, conv, bn = m.nn.LazyLinear(3), m.nn.LazyConv2d(4, 3), m.nn.LazyBatchNorm1d()
    held = [lin.weight, lin.bias, conv.weight, bn.weight, bn.running_mean]
    kinds = [type(t).__name__ for t in held] + [m.nn.parameter.is_lazy(t) for t in held] + [repr(lin.weight)]
    lin(m.ones(2, 5))
    conv(m.ones(1, 2, 5, 5))
    bn(m.ones(4, 6))
    kinds += [type(t).__name__ for t in held] + [m.nn.parameter.is_lazy(t) for t in held]
    kinds += [tuple(lin.weight.shape), tuple(conv.weight.shape), tuple(bn.running_mean.shape)]
    p = m.nn.parameter.UninitializedParameter(dtype=m.float64)
    p.materialize((2, 3))
    kinds += [type(p).__name__, tuple(p.shape), str(p.dtype).split(".")[-1], p.requires_grad]
    return kinds


def test_lazy_placeholders_are_uninitialized_until_the_first_call_as_pytorchs():
    # vkml's lazy modules once held plain empty Parameters: isinstance(p, UninitializedParameter) and
    # torch.nn.parameter.is_lazy were missing names
    assert _placeholder_kinds(vkml) == _placeholder_kinds(torch)
