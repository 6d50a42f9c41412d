"""The code is ruff-clean, and vkml's layers import each other only in the design's direction.

Layers, bottom to top (docs/architecture.md): errors and config are leaves; ir/; codegen/ and
ops/ on ir/; runtime/ on codegen/; graph/ on ops/ and runtime/'s base types; kernels/ on graph/
and ops/; schedule/ on kernels/ and runtime/; the face (tensor.py, frontend/, dsl/, nn/, optim/,
utils/) on top. Every package below the face has a rule; the layers form no cycle, no
module below the face hides a vkml import inside a function, and an import inside a function
anywhere in vkml says why it waits (``# lazy: <reason>``).
"""

from __future__ import annotations

import ast
import functools
import re
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


LEAVES = ("vkml.errors", "vkml.config")
LAYER_RULES = (
    LayerRule("vkml.errors", allowed=("vkml.errors",)),
    LayerRule("vkml.config", allowed=("vkml.config",)),
    LayerRule("vkml.ir", allowed=("vkml.ir", "vkml.errors")),
    LayerRule("vkml.codegen", allowed=("vkml.codegen", "vkml.ir", "vkml.errors")),
    LayerRule("vkml.ops", allowed=("vkml.ops", "vkml.ir", "vkml.errors")),
    LayerRule("vkml.runtime", allowed=("vkml.runtime", "vkml.codegen", "vkml.ir", *LEAVES)),
    LayerRule("vkml.debug", allowed=("vkml.debug", "vkml.runtime", *LEAVES)),
    LayerRule("vkml.graph", allowed=("vkml.graph", "vkml.ops", "vkml.ir", "vkml.runtime.base", *LEAVES)),
    LayerRule(
        "vkml.kernels",
        allowed=("vkml.kernels", "vkml.graph", "vkml.ops", "vkml.ir", "vkml.codegen.features", *LEAVES),
    ),
    LayerRule(
        "vkml.schedule",
        allowed=("vkml.schedule", "vkml.kernels", "vkml.graph", "vkml.runtime", "vkml.ops", "vkml.ir", "vkml.debug")
        + LEAVES,
    ),
)
# The face: free to import any layer below; its own packages may use each other.
FACE = (
    "vkml.tensor",
    "vkml.frontend",
    "vkml.dsl",
    "vkml.nn",
    "vkml.optim",
    "vkml.utils",
    "vkml.distributions",
    "vkml.distributed",
    "vkml.multiprocessing",
    "vkml.hub",
    "vkml.ao",
    "vkml.quantization",
    "vkml.onnx",
    "vkml.cli",
    "vkml.demo",
    "vkml.doctor",
)
# Imports inside a function below the face, each with the reason it is not a cycle dodge.
LOCAL_IMPORTS_ALLOWED: set[tuple[str, str]] = set()


def _is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_name(path: Path) -> str:
    """Dotted module name of a file under the repository root, e.g. vkml/ir/core.py -> vkml.ir.core."""
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_vkml_modules(source: str | ast.AST, module: str, is_package: bool) -> set[str]:
    """Every vkml module that `source` (the text of `module`, or its parsed tree or a node of it) imports.

    `from X import name` counts as importing `X.name`: the name is a submodule, or an attribute
    defined by one, and either way the import reaches into X.

    >>> sorted(imported_vkml_modules("from ..errors import IRError", "vkml.ir.core", False))
    ['vkml.errors.IRError']
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source) if isinstance(source, str) else source):
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


@functools.cache
def _tree(path: Path) -> ast.Module:
    """``path`` parsed once per process: the layering tests walk every file of vkml/ (seconds on CI)."""
    return ast.parse(path.read_text())


def _files_of(layer: str) -> list[Path]:
    """The files of a layer: a package's modules, or the one module it is."""
    relative = Path(*layer.split("."))
    package_dir, single_file = REPO_ROOT / relative, (REPO_ROOT / relative).with_suffix(".py")
    files = sorted(package_dir.rglob("*.py")) if package_dir.is_dir() else [single_file]
    return [path for path in files if path.is_file()]


def _layer_violations(rule: LayerRule) -> tuple[int, list[str]]:
    """(number of files checked, one line per forbidden import) for the layer's existing files."""
    files = _files_of(rule.layer)
    violations = []
    for path in files:
        imported = imported_vkml_modules(_tree(path), module_name(path), path.name == "__init__.py")
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
    assert all(checked.values()), f"a layer with no files: {checked}"
    assert not violations, "imports against the layering of docs/architecture.md:\n" + "\n".join(violations)


def _layer_of(module: str) -> str | None:
    for name in [rule.layer for rule in LAYER_RULES] + list(FACE):
        if _is_within(module, name):
            return name
    return None


def test_every_module_belongs_to_a_layer() -> None:
    homeless = [
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE_DIR.rglob("*.py")
        if path != PACKAGE_DIR / "__init__.py" and _layer_of(module_name(path)) is None
    ]
    assert not homeless, f"modules outside every layer rule (add them to a layer): {homeless}"


def test_layers_below_the_face_form_no_cycle() -> None:
    edges: dict[str, set[str]] = {rule.layer: set() for rule in LAYER_RULES}
    for path in PACKAGE_DIR.rglob("*.py"):
        source_layer = _layer_of(module_name(path))
        if source_layer not in edges:
            continue
        for target in imported_vkml_modules(_tree(path), module_name(path), path.name == "__init__.py"):
            target_layer = _layer_of(target)
            if target_layer in edges and target_layer != source_layer:
                edges[source_layer].add(target_layer)
    done: set[str] = set()

    def visit(layer: str, path: tuple[str, ...]) -> None:
        assert layer not in path, f"layers import each other in a cycle: {' -> '.join(path + (layer,))}"
        if layer in done:
            return
        for below in sorted(edges[layer]):
            visit(below, path + (layer,))
        done.add(layer)

    for layer in sorted(edges):
        visit(layer, ())


def _local_vkml_imports(path: Path) -> list[str]:
    """vkml modules imported inside a function of ``path``."""
    module, is_package = module_name(path), path.name == "__init__.py"
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found += sorted(imported_vkml_modules(inner, module, is_package))
    return found


def test_no_import_inside_a_function_below_the_face() -> None:
    hidden = [
        f"{path.relative_to(REPO_ROOT)} imports {target} inside a function"
        for rule in LAYER_RULES
        for path in _files_of(rule.layer)
        for target in _local_vkml_imports(path)
        if (str(path.relative_to(REPO_ROOT)), target) not in LOCAL_IMPORTS_ALLOWED
    ]
    assert not hidden, "an import inside a function hides a cycle; move it up or fix the layering:\n" + "\n".join(
        hidden
    )


# An import inside a function, anywhere in vkml, says why it waits for the function to run, with one
# of these reasons after "# lazy:" on its line. Dodging an import cycle is not one: the face's modules
# name each other at their top (`from .. import tensor as _tensor` in a module that loads while
# tensor.py does), or the piece both need moves (docs/architecture.md, "Imports").
LAZY_REASONS = (
    "off import vkml's path",  # kept off `import vkml` (tests/test_cold_start.py): nn.compiled, distributions, ...
    "optional dependency",  # a package vkml runs without (torch, tqdm, a missing libvulkan)
    "names given at run time",  # importlib with a name from data (public.MODULES, the user's module)
)
LAZY_MARKER = re.compile(r"#\s*lazy:\s*(.*)$")


def _unmarked_local_imports(source: str, module: str, is_package: bool) -> list[str]:
    """Each import inside a function of ``source`` that needs a reason and has none: an import
    statement of a vkml module, or an ``importlib.import_module`` / ``__import__`` call (its name
    is computed), whose lines carry no ``# lazy: <one of LAZY_REASONS>``."""
    lines = source.splitlines()

    def marked(node: ast.AST) -> bool:
        for text in lines[node.lineno - 1 : node.end_lineno]:
            found = LAZY_MARKER.search(text)
            if found and found.group(1).startswith(LAZY_REASONS):
                return True
        return False

    unmarked = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                needs_reason = bool(imported_vkml_modules(ast.unparse(child), module, is_package))
            elif in_function and isinstance(child, ast.Call):
                called = child.func.attr if isinstance(child.func, ast.Attribute) else getattr(child.func, "id", "")
                needs_reason = called in ("import_module", "__import__")
            else:
                needs_reason = False
            if needs_reason and not marked(child):
                unmarked.append(f"{child.lineno}: {lines[child.lineno - 1].strip()}")
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), False)
    return sorted(set(unmarked), key=lambda line: int(line.partition(":")[0]))


# A line that may hold an import the scan must judge: an indented import without a marker, or a call
# by name. Only files with one are parsed (parsing all of vkml/ costs seconds on a CI machine).
_MAYBE_LOCAL_IMPORT = re.compile(
    rf"^[ \t]+(from|import)\s(?!.*#\s*lazy:\s*({'|'.join(map(re.escape, LAZY_REASONS))}))|import_module|__import__",
    re.M,
)


def test_every_import_inside_a_function_says_why() -> None:
    unmarked = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        source = path.read_text()
        if _MAYBE_LOCAL_IMPORT.search(source):
            found = _unmarked_local_imports(source, module_name(path), path.name == "__init__.py")
            unmarked += [f"{path.relative_to(REPO_ROOT)}:{line}" for line in found]
    assert not unmarked, (
        "an import inside a function without '# lazy: <reason>' (reasons: "
        + ", ".join(LAZY_REASONS)
        + "); a cycle is no reason: import at the top, or move what both modules need:\n"
        + "\n".join(unmarked)
    )


@pytest.mark.parametrize(
    ("source", "unmarked"),
    [
        ("def f():\n    from ..tensor import Tensor\n", ["2: from ..tensor import Tensor"]),
        ("def f():\n    import vkml\n", ["2: import vkml"]),
        (
            "class C:\n    def m(self):\n        from . import creation  # cycle\n",
            ["3: from . import creation  # cycle"],
        ),
        (
            "def f():\n    from ..tensor import Tensor  # lazy: because\n",
            ["2: from ..tensor import Tensor  # lazy: because"],
        ),
        ("def f():\n    from ..distributions import kl  # lazy: off import vkml's path\n", []),
        ("def f():\n    return importlib.import_module(name)\n", ["2: return importlib.import_module(name)"]),
        ("def f():\n    return importlib.import_module(name)  # lazy: names given at run time\n", []),
        ("def f():\n    import torch\n    from numpy import ndarray\n", []),
        ("from ..tensor import Tensor\n\ndef f():\n    return Tensor\n", []),
    ],
    ids=[
        "tensor",
        "package",
        "method",
        "other-reason",
        "marked",
        "importlib",
        "importlib-marked",
        "third-party",
        "top",
    ],
)
def test_local_import_scan_finds_unmarked_imports(source: str, unmarked: list[str]) -> None:
    assert _unmarked_local_imports(source, "vkml.frontend.example", False) == unmarked


# GPU models may be named only where a device's tuning is decided: comments elsewhere state
# invariants, and measurements live in docs/benchmarks.md with their device and date.
GPU_MODEL = re.compile(r"\b(H[12]00|A[1-9]0{2}|V100|L40S?|RTX|GeForce|Quadro|Radeon|RX ?[5-9][0-9]{3}|Arc A[0-9]{3})\b")
GPU_MODELS_ALLOWED = {"vkml/kernels/tuning.py", "vkml/codegen/features.py"}


def test_no_gpu_model_named_outside_the_tuning_tables() -> None:
    named = [
        f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if str(path.relative_to(REPO_ROOT)) not in GPU_MODELS_ALLOWED
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if GPU_MODEL.search(line)
    ]
    assert not named, "name the property (subgroup width, shared memory), not the GPU:\n" + "\n".join(named)


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
