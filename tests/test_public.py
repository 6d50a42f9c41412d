"""The public surface is made by one installer from the ops' declarations (vkml/frontend/public.py)."""

from __future__ import annotations

import inspect
from collections import Counter

import vkml
from vkml.frontend import public


def _unwrap_autocast(fn):
    return inspect.unwrap(fn, stop=lambda f: not getattr(f, "__wrapped_by_autocast__", False))


def test_every_export_is_bound_where_it_says():
    for export, fn in public.exports():
        assert fn is not None or export.method not in (True, False), export
        if export.function:
            assert export.name in vkml.__all__, export
            assert _unwrap_autocast(getattr(vkml, export.name)) is fn, export
        if export.method is not False:
            assert export.name in vars(vkml.Tensor), export
        if export.inplace:
            method = vars(vkml.Tensor)[export.name + "_"]
            assert _unwrap_autocast(method).__kwdefaults__["_name"] == export.name + "_", export


def test_no_public_name_is_declared_twice():
    # A second declaration would silently replace the first: the later module's function would win.
    functions = Counter(export.name for export, _ in public.exports() if export.function)
    methods = Counter(export.name for export, _ in public.exports() if export.method is not False)
    assert [name for name, n in functions.items() if n > 1] == []
    assert [name for name, n in methods.items() if n > 1] == []


def test_inplace_method_writes_the_result_and_returns_the_tensor():
    x = vkml.tensor([0.25, 4.0])
    assert x.sqrt_() is x and x.tolist() == [0.5, 2.0]
    y = vkml.tensor([1.0, -2.0])
    assert y.clamp_min_(0.0) is y and y.tolist() == [1.0, 0.0]
