"""The public surface is made by one installer from the ops' declarations (vkml/frontend/public.py)."""

from __future__ import annotations

import inspect
from collections import Counter

import pytest

import vkml
from vkml.frontend import public
from vkml.ops.registry import FLOAT_DTYPES, REGISTRY, OpDef, Public, register


def _unwrap_autocast(fn):
    # autocast's wrapper, and out='s (vkml/frontend/out_arg.py) below it
    return inspect.unwrap(
        fn, stop=lambda f: not (getattr(f, "__wrapped_by_autocast__", False) or getattr(f, "__wrapped_by_out__", False))
    )


def test_every_export_is_bound_where_it_says():
    for export, fn in public.exports():
        # vkml.newaxis is None, as torch.newaxis (numpy's alias for x[:, None])
        assert fn is not None or export.method not in (True, False) or export.name == "newaxis", export
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


@pytest.fixture
def cube_op():
    """A new elementwise op, defined as vkml's own are: one OpDef, nothing in the face."""
    op = register(
        OpDef(
            "test_cube",
            "elementwise",
            "test_cube(input)",
            "input * input * input.",
            dtypes=FLOAT_DTYPES,
            result="same",
            body=lambda a: a * a * a,
            precision="two roundings",
            grad=lambda c: (c.g * 3.0 * c.inputs[0] * c.inputs[0],),
            public=Public(aliases=("test_cube_alias",)),
        )
    )
    yield op
    REGISTRY.pop(op.name)
    public._FUNCTIONS.pop(op.name, None)


def test_an_elementwise_op_is_one_definition(cube_op):
    # What vkml/__init__.py does at import, into a fresh namespace and a Tensor class of our own: the
    # OpDef alone gives the function, its alias, the method and the in-place form. Its docs page comes
    # from the same OpDef (tools/gen_op_docs.py), and tests/test_ops_elementwise.py's
    # test_every_elementwise_op_is_tested_somewhere asks for its line in a table-driven op test.
    class Handle(vkml.Tensor):
        __slots__ = ()

    namespace: dict = {}
    names = public.install(namespace, Handle)
    assert {"test_cube", "test_cube_alias"} <= set(names)
    assert namespace["test_cube"] is namespace["test_cube_alias"]
    x = vkml.tensor([1.5, -2.0])
    assert namespace["test_cube"](x).tolist() == [3.375, -8.0]
    y = Handle(vkml.tensor([2.0, 0.5], requires_grad=True).node, requires_grad=True)
    assert Handle.test_cube(y).tolist() == [8.0, 0.125]
    Handle.test_cube(y).sum().backward()
    assert y.grad.tolist() == [12.0, 0.75]
    z = Handle(vkml.tensor([3.0]).node)
    assert Handle.test_cube_(z) is z and z.tolist() == [27.0]
    assert "test_cube" not in vars(vkml.Tensor)  # the real Tensor is left as it was
