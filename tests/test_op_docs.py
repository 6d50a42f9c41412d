"""docs/ops/ is generated from the op registry and docstrings, and must match what the generator renders."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from vkml.ops.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_op_docs", ROOT / "tools" / "gen_op_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return gen.render_pages()


def test_pages_on_disk_are_current():
    stale = gen.stale_files()
    assert not stale, f"docs/ops is stale ({', '.join(stale)}): run `{gen.COMMAND}`"


def test_stale_pages_are_detected(tmp_path, pages):
    for name, text in pages.items():
        (tmp_path / name).write_text(text)
    assert gen.stale_files(tmp_path) == []
    (tmp_path / "add.md").write_text(pages["add.md"].replace("exact", "approximate"))
    (tmp_path / "removed_op.md").write_text("old")
    (tmp_path / "sum.md").unlink()
    assert gen.stale_files(tmp_path) == ["add.md", "removed_op.md", "sum.md"]


def test_every_registered_op_has_a_page_with_its_facts(pages):
    for op in REGISTRY.values():
        page = pages[f"{op.name}.md"]
        for fact in (op.summary, op.precision, op.special, op.divergence, *(t.name for t in op.dtypes)):
            escaped = fact.replace("|", "\\|")  # inside a table cell
            assert fact in page or escaped in page, f"{op.name}.md lacks {fact!r}"
        assert "## Divergences from PyTorch" in page


def test_issue_functions_have_pages(pages):
    required = (
        "mean softmax log_softmax logsumexp matmul reshape permute transpose expand squeeze unsqueeze flip cat "
        "getitem to zeros ones full arange gelu softplus"
    )
    missing = [name for name in required.split() if f"{name}.md" not in pages]
    assert not missing, missing


def test_math_library_notes_are_quoted(pages):
    from vkml.ops import mathlib

    for name in ("exp", "gelu", "pow", "div"):
        notes = gen.labelled_notes(getattr(mathlib, name).__doc__)
        assert notes["Precision"] in pages[f"{name}.md"], name
    assert "Math library" not in pages["add.md"]


def test_labelled_notes_parse_inline_and_multiline_labels():
    doc = """Title.

    Precision: exact. Special values: f(-0) = -0,
    f(inf) = inf.
    Divergence from PyTorch: none.

    Example: ``f(x)``.
    """
    assert gen.labelled_notes(doc) == {
        "Precision": "exact.",
        "Special values": "f(-0) = -0, f(inf) = inf.",
        "Divergence from PyTorch": "none.",
    }


def test_index_links_every_page(pages):
    links = set(re.findall(r"\]\((\w+)\.md\)", pages["README.md"]))
    assert links == {name[:-3] for name in pages if name != "README.md"}
