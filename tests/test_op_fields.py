"""The scheduler and the kernels read what they need of an op from its OpDef, never from its name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vkml
from vkml.ops.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent


def _string_constants(path: Path):
    """The string literals of a module that are not docstrings, with their lines."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_schedule_and_kernels_name_no_op():
    # "inside"/"clamp" of a matrix tile's edge is a word, not the op clamp; "add" names a workgroup
    # matrix's row-reduction combine (the IR's cm_reduce_rows), not the op add; "exp2" names the cm2
    # attention kernel's form of its weights (Config.weights), not the op exp2
    allowed = {
        ("vkml/kernels/matmul/coopmat2.py", "clamp"),
        ("vkml/kernels/attention_cm2.py", "clamp"),
        ("vkml/kernels/attention_cm2.py", "add"),
        ("vkml/kernels/attention_cm2.py", "exp2"),
    }
    named = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for layer in ("schedule", "kernels")
        for path in sorted((ROOT / "vkml" / layer).rglob("*.py"))
        for line, value in _string_constants(path)
        if value in REGISTRY and (str(path.relative_to(ROOT)), value) not in allowed
    ]
    assert not named, "read the OpDef's fields (identity, arg, cheap_combine, recompute, ...):\n" + "\n".join(named)


@pytest.mark.parametrize(("name", "empty"), [("sum", 0), ("prod", 1)])
def test_an_empty_reduction_is_the_identity(name, empty):
    assert REGISTRY[name].identity == empty
    assert getattr(vkml.zeros(2, 0), name)(1).tolist() == [empty, empty]


@pytest.mark.parametrize(("name", "error"), [("amax", RuntimeError), ("argmax", IndexError)])
def test_an_empty_reduction_without_identity_is_pytorchs_error(name, error):
    assert REGISTRY[name].identity is None
    with pytest.raises(error, match=name):
        getattr(vkml.zeros(0), name)()
