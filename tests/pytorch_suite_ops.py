"""Run one of PyTorch's hand-written test checks on torch and on vkml and compare what comes out.

PyTorch's test_indexing.py, test_view_ops.py, test_shape_ops.py, test_tensor_creation_ops.py and
test_reductions.py check behaviour with explicit calls rather than OpInfo samples; the files
tests/test_pytorch_suite_*.py port those checks as cases ``(name, fn)``, where ``fn(m)`` makes its
inputs with ``m`` (torch or vkml), runs the calls and returns what the PyTorch test looks at:
tensors, tuples of them, shapes, strides, Python values, or booleans it computes (``v._base is x``,
a write through a view seen by the base ...).

``same(fn)`` compares, recursively: a tensor's dtype, shape and values (exact unless a tolerance
is given; NaN equals NaN); a Python value by equality; a raised exception by torch's class and,
where the case gives ``match``, a regular expression (the one PyTorch's test asserts) that both
messages must satisfy.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import torch

import vkml


class Raised:
    """What a side raised, kept as a result so that the comparison can report it."""

    def __init__(self, error: BaseException):
        self.error = error

    def __repr__(self) -> str:
        return f"{type(self.error).__name__}: {self.error}"


def call(m, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(m)
            _read(m, out)  # a lazy library may only check values when it computes them
            return out
        except Exception as e:  # noqa: BLE001 - compared with torch's class below
            return Raised(e)


def _read(m, out):
    if isinstance(out, m.Tensor):
        out.detach().cpu().numpy()
    elif isinstance(out, (tuple, list)):
        for o in out:
            _read(m, o)


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


def compare(got, want, what: str, atol: float = 0.0, rtol: float = 0.0) -> None:
    if isinstance(want, torch.Tensor):
        assert isinstance(got, vkml.Tensor), f"{what}: {got!r}, torch gives a tensor"
        assert _dtype_name(got.dtype) == _dtype_name(want.dtype), f"{what}: dtype {got.dtype} vs torch {want.dtype}"
        assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} vs torch {tuple(want.shape)}"
        g = torch.from_numpy(np.array(got.detach().cpu().numpy(), copy=True))
        w = want.detach().cpu()
        if w.dtype == torch.bfloat16:
            w, g = w.float(), g.float()
        torch.testing.assert_close(g, w, equal_nan=True, atol=atol, rtol=rtol, msg=lambda s: f"{what}: {s}")
    elif isinstance(want, (tuple, list, torch.Size)) and not isinstance(got, Raised):
        assert isinstance(got, (tuple, list, vkml.Size)), f"{what}: {got!r}"
        assert len(got) == len(want), f"{what}: {len(got)} items vs torch {len(want)}"
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            compare(g, w, f"{what}[{k}]", atol, rtol)
    elif isinstance(want, torch.dtype):
        assert _dtype_name(got) == _dtype_name(want), f"{what}: {got} vs torch {want}"
    elif isinstance(want, float) and isinstance(got, float):
        assert got == want or (got != got and want != want) or abs(got - want) <= atol + rtol * abs(want), (
            f"{what}: {got!r} vs torch {want!r}"
        )
    else:
        assert not isinstance(got, Raised), f"{what}: vkml raises {got!r}; torch gives {want!r}"
        assert type(got) is type(want) and got == want, f"{what}: {got!r} vs torch {want!r}"


def same(
    fn, match: str | None = None, atol: float = 0.0, rtol: float = 0.0, name: str = "", vkml_match: str | None = None
) -> None:
    """Assert that ``fn(vkml)`` gives what ``fn(torch)`` gives (see the module's docstring).

    ``vkml_match``: a regular expression only vkml's message must satisfy (where PyTorch's test
    asserts a wording that the installed PyTorch release words otherwise: vkml's carries both)."""
    want = call(torch, fn)
    got = call(vkml, fn)
    if isinstance(want, Raised):
        assert isinstance(got, Raised), f"{name}: torch raises {want!r}; vkml gives {got!r}"
        assert isinstance(got.error, type(want.error)), f"{name}: torch raises {want!r}; vkml {got!r}"
        if match is not None:
            assert re.search(match, str(want.error)), f"{name}: torch's message {want!r} lacks {match!r}"
            assert re.search(match, str(got.error)), f"{name}: vkml's message {got!r} lacks {match!r}"
        if vkml_match is not None:
            assert re.search(vkml_match, str(got.error)), f"{name}: vkml's message {got!r} lacks {vkml_match!r}"
        return
    if isinstance(got, Raised):
        raise AssertionError(f"{name}: vkml raises {got!r}") from got.error
    compare(got, want, name or "result", atol, rtol)


def on_device(device, fn):
    """``fn`` with vkml's default device set to ``device`` (torch stays on its CPU)."""

    def run(m):
        if m is torch:
            return fn(m)
        vkml.set_default_device(device)
        try:
            return fn(m)
        finally:
            vkml.set_default_device(None)

    return run


def cases(names, test: str, slow: frozenset) -> list:
    """``names`` as pytest parameters, those in ``slow`` (``"test_x[name]"``: the cases that took over
    ~0.06 s on the 2-core CI machine, tests/test_pytorch_suite_*.py) behind the ``exhaustive`` marker,
    so that the default suite stays within its time budget."""
    import pytest

    return [pytest.param(n, marks=pytest.mark.exhaustive) if f"{test}[{n}]" in slow else n for n in names]
