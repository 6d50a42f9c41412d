"""The code is ruff-clean, and vkml's layers import each other only in the design's direction.

Layers (DESIGN.md, section 1): ir/ imports nothing else of vkml; codegen/ and ops/ only ir/;
runtime/ never tensors, graphs or operators. errors.py is a leaf that every layer may import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = REPO_ROOT / "vkml"
LINTED_DIRS = ("vkml", "tests", "tools", "bench", "extra", "examples")


def _run_ruff(*args: str) -> subprocess.CompletedProcess[str]:
    # `python -m ruff` is the ruff of the interpreter running the tests, i.e. the venv's.
    paths = [name for name in LINTED_DIRS if (REPO_ROOT / name).is_dir()]
    command = [sys.executable, "-m", "ruff", *args, *paths]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "ruff_args",
    [("check", "--no-cache"), ("format", "--check", "--no-cache")],
    ids=["ruff-check", "ruff-format"],
)
def test_code_is_ruff_clean(ruff_args: tuple[str, ...]) -> None:
    result = _run_ruff(*ruff_args)
    assert result.returncode == 0, f"ruff {' '.join(ruff_args)} found problems:\n{result.stdout}{result.stderr}"


# --- dependency direction -------------------------------------------------------------------


@dataclass(frozen=True)
class LayerRule:
    """Which vkml modules the modules of one layer may import."""

    layer: str
    allowed: tuple[str, ...] | None = None  # None: anything not forbidden
    forbidden: tuple[str, ...] = ()

    def permits(self, module: str) -> bool:
        if any(_is_within(module, name) for name in self.forbidden):
            return False
        return self.allowed is None or any(_is_within(module, name) for name in self.allowed)


LAYER_RULES = (
    LayerRule("vkml.errors", allowed=("vkml.errors",)),
    LayerRule("vkml.ir", allowed=("vkml.ir", "vkml.errors")),
    LayerRule("vkml.codegen", allowed=("vkml.codegen", "vkml.ir", "vkml.errors")),
    LayerRule("vkml.ops", allowed=("vkml.ops", "vkml.ir", "vkml.errors")),
    LayerRule("vkml.runtime", forbidden=("vkml.tensor", "vkml.schedule", "vkml.ops", "vkml.nn", "vkml.optim")),
)


def _is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_name(path: Path) -> str:
    """Dotted module name of a file under the repository root, e.g. vkml/ir/core.py -> vkml.ir.core."""
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_vkml_modules(source: str, module: str, is_package: bool) -> set[str]:
    """Every vkml module that `source` (the text of `module`) imports, anywhere in the file.

    `from X import name` counts as importing `X.name`: the name is a submodule, or an attribute
    defined by one, and either way the import reaches into X.

    >>> sorted(imported_vkml_modules("from ..errors import IRError", "vkml.ir.core", False))
    ['vkml.errors.IRError']
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                base = ".".join(anchor[: len(anchor) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if _is_within(name, "vkml")}


def _layer_violations(rule: LayerRule) -> tuple[int, list[str]]:
    """(number of files checked, one line per forbidden import) for the layer's existing files."""
    relative = Path(*rule.layer.split("."))
    package_dir, single_file = REPO_ROOT / relative, (REPO_ROOT / relative).with_suffix(".py")
    files = sorted(package_dir.rglob("*.py")) if package_dir.is_dir() else [single_file]
    files = [path for path in files if path.is_file()]
    violations = []
    for path in files:
        imported = imported_vkml_modules(path.read_text(), module_name(path), path.name == "__init__.py")
        for target in sorted(imported):
            if not rule.permits(target):
                violations.append(f"{path.relative_to(REPO_ROOT)} imports {target}")
    return len(files), violations


def test_layers_import_only_in_the_design_direction() -> None:
    checked: dict[str, int] = {}
    violations: list[str] = []
    for rule in LAYER_RULES:
        checked[rule.layer], layer_violations = _layer_violations(rule)
        violations += layer_violations
    # Layers whose files do not exist yet are skipped; the IR core and errors always exist.
    assert checked["vkml.ir"] >= 4 and checked["vkml.errors"] == 1, checked
    assert not violations, "imports against the layering of DESIGN.md:\n" + "\n".join(violations)


@pytest.mark.parametrize(
    ("module", "is_package", "source", "expected"),
    [
        ("vkml.ir.builder", False, "from . import types as T", {"vkml.ir.types"}),
        ("vkml.ir.builder", False, "from ..tensor import Tensor", {"vkml.tensor.Tensor"}),
        ("vkml.ir", True, "from .core import Kernel", {"vkml.ir.core.Kernel"}),
        ("vkml.ir", True, "from .. import ops", {"vkml.ops"}),
        ("vkml.codegen.spirv", False, "def f():\n    from vkml.schedule import plan", {"vkml.schedule.plan"}),
        ("vkml.runtime.base", False, "import vkml.ops.unary as u, numpy", {"vkml.ops.unary"}),
        ("vkml.runtime.base", False, "import numpy\nfrom os import path", set()),
    ],
)
def test_import_parser_resolves_absolute_relative_and_nested_imports(
    module: str, is_package: bool, source: str, expected: set[str]
) -> None:
    assert imported_vkml_modules(source, module, is_package) == expected


@pytest.mark.parametrize(
    ("layer", "target", "permitted"),
    [
        ("vkml.ir", "vkml.errors.IRError", True),
        ("vkml.ir", "vkml.ir.core.Kernel", True),
        ("vkml.ir", "vkml.codegen", False),
        ("vkml.ir", "vkml", False),
        ("vkml.ir", "vkml.irx", False),
        ("vkml.codegen", "vkml.ir.types", True),
        ("vkml.codegen", "vkml.runtime.base", False),
        ("vkml.ops", "vkml.tensor.Tensor", False),
        ("vkml.runtime", "vkml.codegen.compile_kernel", True),
        ("vkml.runtime", "vkml.schedule", False),
        ("vkml.runtime", "vkml.ops.unary", False),
    ],
)
def test_layer_rules_tell_allowed_from_forbidden(layer: str, target: str, permitted: bool) -> None:
    rule = next(rule for rule in LAYER_RULES if rule.layer == layer)
    assert rule.permits(target) is permitted
