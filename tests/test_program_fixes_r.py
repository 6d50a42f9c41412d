"""The gaps the d2l.ai programs (tests/test_programs_r.py) found, each against PyTorch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import vkml


def _float_warnings(m, convert, grad_mode=True):
    """The messages of the warnings ``convert(t)`` raises for a tensor ``t`` computed from a leaf that
    requires grad (PyTorch's warning is once per process: the filter "always" shows each)."""
    leaf = m.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.set_warn_always(True)
        try:
            with m.set_grad_enabled(grad_mode):
                convert((leaf * 2).sum())
        finally:
            torch.set_warn_always(False)
    return [str(w.message).split(" (Triggered")[0] for w in caught]


@pytest.mark.parametrize(
    "convert",
    [float, math.exp, lambda t: float(t.detach()), lambda t: t.item(), int, lambda t: f"{float(t.data):.2f}"],
    ids=["float", "math.exp", "detached", "item", "int", "data"],
)
@pytest.mark.parametrize("grad_mode", [True, False])
def test_float_of_a_tensor_that_requires_grad_warns_as_pytorch(convert, grad_mode):
    """The book's ``metric.add(float(l.sum()), ...)`` and ``math.exp(total / count)`` of a loss that still
    requires grad: PyTorch warns (grad mode on), vkml did not."""
    expected = _float_warnings(torch, convert, grad_mode)
    assert _float_warnings(vkml, convert, grad_mode) == expected
    assert len(expected) == (grad_mode and convert in (float, math.exp))


# The book's and the common ones in `make test`; every reduction with a ``keepdim`` under -m stress
KEEPDIMS_REDUCTIONS = ["sum", "mean", "argmax", "max", "std", "all"]
KEEPDIMS_REST = ["prod", "amax", "amin", "argmin", "min", "var", "logsumexp", "any", "median", "nanmedian", "nansum",
                 "nanmean", "std_mean", "var_mean"]  # fmt: skip


@pytest.mark.parametrize(
    "name", KEEPDIMS_REDUCTIONS + [pytest.param(name, marks=pytest.mark.stress) for name in KEEPDIMS_REST]
)
def test_keepdims_is_keepdims_numpy_alias(name):
    """The book's probability section normalizes counts by ``cum_counts.sum(dim=1, keepdims=True)``:
    PyTorch takes numpy's ``keepdims=`` for every reduction's ``keepdim=``; vkml raised TypeError."""
    results = []
    for m in (torch, vkml):
        t = m.tensor([[1.0, 2.0, 5.0], [4.0, 3.0, 0.5]])
        calls = [getattr(m, name)(t, dim=1, keepdims=True), getattr(m, name)(t, axis=0, keepdims=False)]
        if hasattr(t, name):
            calls.append(getattr(t, name)(dim=1, keepdims=True))
        results.append([(r[0] if isinstance(r, tuple) else r).tolist() for r in calls])
    assert results[1] == results[0]


def test_keepdim_and_keepdims_together_raise_type_error():
    for m in (torch, vkml):
        with pytest.raises(TypeError):
            m.tensor([[1.0, 2.0]]).sum(dim=1, keepdim=True, keepdims=True)


@pytest.mark.parametrize("dtype", [None, "float32"])
def test_tensor_of_an_object_array_raises_pytorchs_type_error(dtype):
    """The book's house-prices code makes ``torch.tensor(all_features[:n_train].values, dtype=torch.float32)``;
    with pandas 2 ``get_dummies`` columns are bool, ``.values`` of float and bool columns is an object array,
    and PyTorch's TypeError names the dtypes it takes (vkml raised its own wording; its list is its own dtypes)."""
    features = np.array([[1.5, True, False], [-0.5, False, True]], dtype=object)
    messages = []
    for m in (torch, vkml):
        with pytest.raises(TypeError) as caught:
            m.tensor(features, dtype=getattr(m, dtype) if dtype else None)
        messages.append(str(caught.value).split(" The only supported types are: "))
    assert messages[1][0] == messages[0][0] == "can't convert np.ndarray of type numpy.object_."
    assert "float32" in messages[1][1]


def test_tensor_of_a_list_of_object_rows_raises_type_error():
    """``torch.tensor([frame.values[0]])``, a row of float and bool values in a list: PyTorch's TypeError;
    vkml's int64-overflow check let a StopIteration out."""
    row = np.array([[1.5, True, False]], dtype=object)[0]
    for m in (torch, vkml):
        with pytest.raises(TypeError):
            m.tensor([row])
