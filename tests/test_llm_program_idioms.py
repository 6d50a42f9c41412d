"""Gaps found by the LLM-family programs (tests/programs/llama_decoder.py, moe_router.py,
selective_scan.py, t5_encoder_decoder.py), each checked against PyTorch on the CPU."""

from __future__ import annotations

import copy

import pytest
import torch

import vkml

PY_TYPES = [bool, int, float, complex]


@pytest.mark.parametrize("kind", PY_TYPES, ids=lambda t: t.__name__)
def test_python_number_types_are_dtypes(kind):
    """``torch.ones(T, T, dtype=bool)`` (Mamba-2's segsum mask), ``x.to(float)``, ``sum(dtype=int)``:
    PyTorch reads bool, int, float and complex as bool, int64, float64 and complex128 wherever a dtype
    is asked for."""
    cases = [
        lambda m: m.ones(2, 2, dtype=kind),
        lambda m: m.zeros_like(m.ones(2), dtype=kind),
        lambda m: m.full((2,), 1, dtype=kind),
        lambda m: m.tensor([1, 0], dtype=kind),
        lambda m: m.empty(3, dtype=kind).fill_(1),
        lambda m: m.ones(2).to(kind),
        lambda m: m.ones(2).to(dtype=kind),
        lambda m: m.ones(2).to("cpu", kind),
    ]
    if kind is not complex:  # nor has vkml new_zeros or reductions with a complex dtype= (docs/complex.md)
        cases += [lambda m: m.ones(2).new_zeros(2, dtype=kind), lambda m: m.ones(2).sum(dtype=kind)]
    if kind in (int, float):  # PyTorch has no bool cumsum
        cases.append(lambda m: m.ones(3).cumsum(0, dtype=kind))
    for case in cases:
        expected, got = case(torch), case(vkml)
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
        assert got.tolist() == expected.tolist()


def test_module_to_python_number_type():
    assert (
        vkml.nn.Linear(2, 2).to(float).weight.dtype is vkml.float64
        and torch.nn.Linear(2, 2).to(float).weight.dtype is torch.float64
    )
    assert vkml.nn.Linear(2, 2).to(dtype=float).bias.dtype is vkml.float64
    for m in (torch, vkml):  # an integer dtype is refused as for Module.to(torch.int64)
        with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
            m.nn.Linear(2, 2).to(int)


def test_python_bool_dtype_mask_in_masked_fill():
    """Mamba-2's segment sum: ``torch.tril(torch.ones(T, T, dtype=bool))`` masks a cumulative sum."""
    x = [[0.5, -1.0, 0.25], [2.0, 0.0, -0.5]]
    results = []
    for m in (torch, vkml):
        t = m.tensor(x)
        mask = m.tril(m.ones(3, 3, dtype=bool), diagonal=0)
        segsum = t[..., :, None] - t[..., None, :]
        results.append(segsum.masked_fill(~mask, -m.inf).exp().tolist())
    assert results[0] == results[1]


def test_parameter_takes_attributes_of_its_own():
    """mamba_ssm marks ``dt_proj.bias._no_reinit = True`` and its init reads it back with getattr;
    optimizer-group code marks ``p._no_weight_decay``. PyTorch's Parameter takes any attribute, and
    keeps it through ``Module.to`` (the same object) but not through ``copy.deepcopy``."""
    for m in (torch, vkml):
        layer = m.nn.Linear(3, 2)
        layer.bias._no_reinit = True
        assert getattr(layer.bias, "_no_reinit", False) is True
        assert getattr(layer.weight, "_no_reinit", False) is False
        assert layer.to("cpu").bias._no_reinit is True
        assert not hasattr(copy.deepcopy(layer).bias, "_no_reinit")
        with pytest.raises(AttributeError):
            layer.weight._no_reinit  # noqa: B018
