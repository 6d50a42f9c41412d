"""The harness of the tests/test_pytorch_suite_*.py files: a scenario ``fn(m)`` follows one of PyTorch's own
tests (test/test_nn.py, test/test_autograd.py, ...) with ``m`` torch or vkml, and whatever it sees on vkml
(what it returns, tensors' values, dtypes and shapes, the exception's class and message, the warnings'
classes and messages) must be what it sees on torch.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import vkml


class Raised:
    """An exception a scenario raised: compared by class (vkml's may subclass torch's, as DTypeError does
    RuntimeError) and message (torch's words within vkml's)."""

    def __init__(self, error: BaseException) -> None:
        self.kind = type(error).__name__
        self.classes = {c.__name__ for c in type(error).__mro__}
        self.message = _same_words(str(error))

    def __repr__(self) -> str:
        return f"raises {self.kind}({self.message!r})"


def record(fn, m) -> tuple:
    """What ``fn(m)`` returns (or raises) and the warnings it gives, as plain values."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = plain(fn(m))
        except Exception as error:  # the class and message are what is compared
            result = Raised(error)
    return result, [(w.category.__name__, _same_words(str(w.message))) for w in caught]


def _same_words(message: str) -> str:
    """A message without what only PyTorch's build can say: where in its C++ source a warning was raised, the
    traceback anomaly mode prints, and its own type names (vkml's messages name vkml.Size)."""
    message = re.sub(r" \(Triggered internally at .*\)$", "", message, flags=re.S)
    message = message.split("Traceback of forward call that caused the error:")[0]
    return _vkml_names(message)


def _vkml_names(text: str) -> str:
    """``text`` naming vkml's types where it names torch's (``torch.float32``, ``torch Tensor``), as vkml's
    messages and reprs do (a deliberate difference)."""
    return re.sub(r"\btorch([. ])", r"vkml\1", text)


def plain(value):
    """Tensors become (dtype name, shape, float64 values or None when they cannot be read); containers are walked."""
    if isinstance(value, (torch.Tensor, vkml.Tensor)):
        dtype = str(value.dtype).replace("torch.", "").replace("vkml.", "")
        tensor = value.detach() if hasattr(value, "detach") else value
        array = np.asarray(tensor.cpu().numpy() if hasattr(tensor, "cpu") else tensor.numpy())
        return ("tensor", dtype, tuple(value.shape), array.astype(np.float64))
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value) if not hasattr(value, "_fields") else tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return _vkml_names(value)
    if isinstance(value, (torch.dtype, vkml.dtype)):
        return str(value).replace("torch.", "").replace("vkml.", "")
    if isinstance(value, torch.Size):
        return tuple(value)
    return value


def differences(got, want, where: str = "", rtol: float = 1e-5, atol: float = 1e-6) -> list[str]:
    """Where ``got`` (vkml's record) differs from ``want`` (torch's); floats and tensors within the tolerances."""
    if isinstance(want, Raised) or isinstance(got, Raised):
        if not (isinstance(want, Raised) and isinstance(got, Raised)):
            return [f"{where}: vkml {got!r}, torch {want!r}"]
        # PyTorch's suites match a message with assertRaisesRegex (re.search): torch's words must be in vkml's,
        # which may name the op first (the project's convention) or add the values at fault
        if want.kind not in got.classes or want.message not in got.message:
            return [f"{where}: vkml {got!r}, torch {want!r}"]
        return []
    if isinstance(want, tuple) and want[:1] == ("tensor",):
        if not (isinstance(got, tuple) and got[:1] == ("tensor",)):
            return [f"{where}: vkml {got!r}, torch a tensor"]
        if got[1:3] != want[1:3]:
            return [f"{where}: vkml {got[1:3]}, torch {want[1:3]}"]
        if not np.allclose(got[3], want[3], rtol=rtol, atol=atol, equal_nan=True):
            return [f"{where}: vkml {got[3].tolist()}, torch {want[3].tolist()}"]
        return []
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(got) != len(want):
            return [f"{where}: vkml {got!r}, torch {want!r}"]
        out = []
        for i, (g, w) in enumerate(zip(got, want)):
            out += differences(g, w, f"{where}[{i}]", rtol, atol)
        return out
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{where}: keys vkml {sorted(map(str, got))}, torch {sorted(map(str, want))}"]
        out = []
        for k in want:
            out += differences(got[k], want[k], f"{where}[{k!r}]", rtol, atol)
        return out
    if isinstance(want, float) and isinstance(got, float):
        return (
            []
            if np.isclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
            else [f"{where}: vkml {got}, torch {want}"]
        )
    if type(got) is not type(want) or got != want:
        return [f"{where}: vkml {got!r}, torch {want!r}"]
    return []


def check(fn, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Run ``fn`` on torch and on vkml; fail with every difference."""
    want, got = record(fn, torch), record(fn, vkml)
    found = differences(got, want, "", rtol, atol)
    assert not found, "\n".join(found)


def known_params(table, known: dict) -> list:
    """``table``'s scenario names as pytest parameters, those in ``known`` (name -> reason) strict xfails: a
    known divergence that stops diverging fails until its entry goes."""
    return [pytest.param(n, marks=pytest.mark.xfail(reason=known[n], strict=True)) if n in known else n for n in table]


def half_tolerances(name: str) -> dict:
    """The tolerances of a scenario comparing values: float16/bfloat16 ones (named so) round once, as PyTorch's, from
    sums taken in another order."""
    if "float16" in name:
        return {"rtol": 1e-2, "atol": 1e-2}
    return {"rtol": 1e-5, "atol": 1e-5}


_BUILTIN_ERRORS = (NotImplementedError, IndexError, TypeError, ValueError, RuntimeError)


def error_kind(fn) -> str:
    """The builtin class of what ``fn()`` raises ('no error' when it returns): PyTorch's assertRaises without a
    message checks only that (vkml's classes may subclass the builtin one)."""
    try:
        out = fn()
        if hasattr(out, "numpy"):
            out.detach().cpu().numpy()  # a lazy library may only check values when it computes them
    except _BUILTIN_ERRORS as error:
        return next(c.__name__ for c in _BUILTIN_ERRORS if isinstance(error, c))
    return "no error"
