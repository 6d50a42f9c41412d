"""Everyday mistakes raise PyTorch's exception class with PyTorch's words inside vkml's message (which may add
the public op's name and where it was called): a program's ``except``/``pytest.raises(..., match=...)`` written
for PyTorch works on vkml."""

from __future__ import annotations

import re

import pytest
import torch

import vkml

CASES = {
    "linear": lambda m: m.nn.functional.linear(m.ones(2, 3), m.ones(5, 4)),
    "matmul": lambda m: m.ones(2, 3) @ m.ones(4, 5),
    "cross_entropy target": lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.tensor([0, 5])).item(),
    "nll_loss target": lambda m: m.nn.functional.nll_loss(m.ones(2, 3), m.tensor([0, -2])).item(),
    "embedding index": lambda m: m.nn.Embedding(3, 2)(m.tensor([3])).sum().item(),
    "index": lambda m: m.ones(3)[m.tensor([4])].sum().item(),
    "view": lambda m: m.ones(2, 3).t().view(6),
    "cat": lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]),
    "stack": lambda m: m.stack([m.ones(2), m.ones(3)]),
    "binary_cross_entropy": lambda m: m.nn.functional.binary_cross_entropy(m.tensor([1.5]), m.tensor([1.0])).item(),
    "conv2d channels": lambda m: m.nn.Conv2d(3, 4, 3)(m.ones(1, 2, 5, 5)),
    "item": lambda m: m.ones(2).item(),
    "batch_norm one value": lambda m: m.nn.BatchNorm1d(3)(m.ones(1, 3)),
    "reshape": lambda m: m.ones(2, 3).reshape(4, 2),
    "reshape -1": lambda m: m.ones(2, 3).reshape(-1, 4),
    "gather index dtype": lambda m: m.gather(m.ones(2, 3), 1, m.tensor([[0.0]])),
    "expand": lambda m: m.ones(2, 3).expand(4, 3),
    "leaf in-place": lambda m: m.ones(2, requires_grad=True).add_(1),
    "backward without grad": lambda m: m.ones(2).sum().backward(),
    "empty optimizer": lambda m: m.optim.SGD([], lr=0.1),
    "negative lr": lambda m: m.optim.SGD([m.nn.Parameter(m.ones(2))], lr=-1),
}


def _raised(m, case):
    with pytest.raises(Exception) as info:
        CASES[case](m)
    return info.value


@pytest.mark.parametrize("case", list(CASES))
def test_the_error_is_pytorchs(case):
    want, got = _raised(torch, case), _raised(vkml, case)
    assert isinstance(got, type(want)), (type(got), type(want))
    words = str(want).splitlines()[0].replace("torch.", "vkml.")
    assert re.search(re.escape(words), str(got)), (words, str(got))
