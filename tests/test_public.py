"""The public surface is made by one installer from the ops' declarations (vkml/frontend/public.py)."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections import Counter
from pathlib import Path

import pytest
from optest import F32_SPECIALS, assert_same_bits

import vkml
from vkml.frontend import operators as F
from vkml.frontend import public
from vkml.ops.registry import FLOAT_DTYPES, REGISTRY, OpDef, Public, register


def _unwrap_autocast(fn):
    # autocast's wrapper, out='s (vkml/frontend/out_arg.py) and complex operands' (vkml/frontend/complex.py) below it
    marks = ("__wrapped_by_autocast__", "__wrapped_by_out__", "__wrapped_by_complex__")
    return inspect.unwrap(fn, stop=lambda f: not any(getattr(f, mark, False) for mark in marks))


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
    F._PLAIN.pop(op.name, None)
    F._PUBLIC_PLAIN.pop(op.name, None)


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


def _docs_generator():
    path = Path(__file__).resolve().parent.parent / "tools" / "gen_op_docs.py"
    spec = importlib.util.spec_from_file_location("gen_op_docs", path)
    if spec.name in sys.modules:  # loaded by tests/test_op_docs.py
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def test_an_elementwise_op_gets_its_page_and_asks_for_its_table_line(cube_op, monkeypatch):
    # The rest of "one definition plus one line in a table-driven op test": its docs page is rendered
    # from the OpDef (and docs/ops/ is stale until tools/gen_op_docs.py writes it) ...
    gen = _docs_generator()
    page = gen.registry_page(cube_op)
    for text in ("# test_cube", "input * input * input.", "| precision | two roundings |", "c.g * 3.0 * c.inputs[0]"):
        assert text in page, text
    assert "test_cube.md" in gen.stale_files()
    # ... and the elementwise ops' completeness check asks for its line, after which the table runs it.
    import test_ops_elementwise as table

    with pytest.raises(AssertionError, match="test_cube"):
        table.test_every_elementwise_op_is_tested_somewhere()
    cube = next(fn for export, fn in public.exports() if export.name == "test_cube")
    monkeypatch.setitem(table.UNARY, "test_cube", (cube, lambda t: t * t * t))
    table.test_every_elementwise_op_is_tested_somewhere()
    got, want, keep = table.run_unary("test_cube", F32_SPECIALS)
    assert_same_bits(got[keep], want[keep], "test_cube against torch")


def test_a_plain_op_has_one_public_function():
    # F.<name> (the face's own calls), vkml.<name> and its aliases are the one function OpDef.public makes
    # (vkml.<name> refusing a Python number where Public.numbers says PyTorch does), and no face module
    # exports a second one-op wrapper (that op belongs in its OpDef's ``public``)
    declared = [op for op in REGISTRY.values() if op.public is not None]
    assert len(declared) > 60
    for op in declared:
        fn = public.function(op.name)
        assert getattr(F, op.name) is F.plain_function(op.name), op.name
        assert (fn is F.plain_function(op.name)) is (op.public.numbers == "both"), op.name
        for name in (op.name, *op.public.aliases):
            assert _unwrap_autocast(getattr(vkml, name)) is fn, name
            assert (name in vars(vkml.Tensor)) is op.public.method, name
            assert (name + "_" in vars(vkml.Tensor)) is op.public.inplace, name
    plain_code = (F._unary("any").__code__, F._binary("any").__code__)  # what every one-op wrapper runs
    wrappers = [
        export.name
        for export, fn in public.exports()[: -len(public.registry_exports())]
        if getattr(fn, "__code__", None) in plain_code
    ]
    assert wrappers == []


def test_a_wrong_call_names_the_op():
    # Python's TypeError names the function by its __qualname__: PyTorch's "exp() takes 1 positional argument
    # but 2 were given", not the maker's "_unary.<locals>.fn()"
    x = vkml.ones(2)
    with pytest.raises(TypeError, match=r"^exp\(\) takes 1 positional argument but 2 were given$"):
        vkml.exp(x, x)
    with pytest.raises(TypeError, match=r"^eq\(\) missing 1 required positional argument: 'other'$"):
        x.eq()
    with pytest.raises(TypeError, match=r"^floor\(\) takes 1 positional argument but 2 were given$"):
        x.floor_(x)


@pytest.mark.parametrize(
    ("method", "args", "expected"),
    [
        ("neg_", (), [-1.5, 2.0]),
        ("negative_", (), [-1.5, 2.0]),
        ("mul_", (2.0,), [3.0, -4.0]),
        ("fix_", (), [1.0, -2.0]),
    ],
)
def test_inplace_forms_made_from_the_opdef(method, args, expected):
    # these were written by hand in the face (Tensor.neg_, Tensor.mul_, legacy fix_) before OpDef.public made them
    x = vkml.tensor([1.5, -2.0])
    assert getattr(x, method)(*args) is x and x.tolist() == expected
    assert _unwrap_autocast(vars(vkml.Tensor)[method]).__kwdefaults__["_name"] == method  # named in its errors


@pytest.mark.parametrize("name", ["logical_and_", "logical_or_", "logical_xor_", "logical_not_", "true_divide_"])
def test_inplace_forms_as_torch(name):
    # PyTorch's Tensor.logical_and_ (or_, not_) writes the truth values in the tensor's own dtype; true_divide_
    # is div_ (an integer tensor cannot hold the float quotient)
    import torch

    cases = [([1.5, 0.0, -2.0, 0.0], [0.5, 2.0, 3.0, 1.0])]
    if name != "true_divide_":
        cases.append(([1, 0, 2, 0], [True, False, True, True]))
    for values, other in cases:
        x, expected = vkml.tensor(values), torch.tensor(values)
        args = () if name == "logical_not_" else (vkml.tensor(other),)
        torch_args = () if name == "logical_not_" else (torch.tensor(other),)
        assert getattr(x, name)(*args) is x
        getattr(expected, name)(*torch_args)
        assert x.dtype.name == str(expected.dtype).removeprefix("torch.") and x.tolist() == expected.tolist()
