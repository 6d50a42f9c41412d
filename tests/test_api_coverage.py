"""vkml has PyTorch's commonly used names (tools/api_coverage.py), and docs/coverage.md says what it lacks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_tool():
    spec = importlib.util.spec_from_file_location("api_coverage", ROOT / "tools" / "api_coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


cov = _load_tool()

# Tier-1 names vkml lacks today. The list may only shrink: a name added to vkml must leave it (the
# test fails until it does), and a tier-1 name missing that is not listed here fails too.
KNOWN_MISSING: set[str] = set()

# Arguments of tier-1 names that vkml's function or class lacks, held the same way.
KNOWN_MISSING_ARGUMENTS: set[str] = set()


@pytest.fixture(scope="module")
def rows():
    return cov.compare()


def test_every_tier1_name_exists_except_the_known_missing(rows):
    missing = cov.missing_tier1(rows)
    new_gaps = sorted(missing - KNOWN_MISSING)
    assert not new_gaps, f"tier-1 names vkml lacks: {new_gaps}"
    now_present = sorted(KNOWN_MISSING - missing)
    assert not now_present, f"vkml has these now: remove them from KNOWN_MISSING: {now_present}"


def test_every_tier1_argument_exists_except_the_known_missing(rows):
    missing = cov.missing_tier1_arguments(rows)
    new_gaps = sorted(missing - KNOWN_MISSING_ARGUMENTS)
    assert not new_gaps, f"tier-1 arguments vkml lacks: {new_gaps}"
    now_present = sorted(KNOWN_MISSING_ARGUMENTS - missing)
    assert not now_present, f"vkml takes these now: remove them from KNOWN_MISSING_ARGUMENTS: {now_present}"


def test_parameters_reads_python_signatures():
    def f(a, b=1, *args, c, d=2):
        pass

    def g(a, **kwargs):
        pass

    class C:
        def __init__(self, x, y=0):
            pass

    assert cov.parameters(f) == ["a", "b", "c", "d"]
    assert cov.parameters(g) is None  # any keyword is taken: nothing can be said to be missing
    assert cov.parameters(C) == ["x", "y"]
    assert cov.parameters(42) is None
    assert not cov.counted_argument("size_average") and not cov.counted_argument("_weight")


def test_coverage_page_is_current(rows):
    text = cov.render(rows)
    assert cov.PAGE.read_text() == text, f"docs/coverage.md is stale: run `{cov.COMMAND}`"


def test_curated_names_are_pytorch_names_in_one_tier():
    """A typo in a tier list would silently put a name nowhere; a name in two tiers would be ambiguous."""
    snapshot = cov.load_snapshot()
    for ns in cov.NAMESPACES:
        lists = [ns.tier1.split(), ns.tier2.split(), ns.tier3.split()]
        listed = [name for names in lists for name in names]
        assert len(listed) == len(set(listed)), (ns.torch, sorted({n for n in listed if listed.count(n) > 1}))
        unknown = [name for name in listed if name not in snapshot[ns.torch]]
        assert not unknown, (ns.torch, unknown)
        excluded = [name for name in listed if cov.excluded_reason(name)]
        assert not excluded, (ns.torch, excluded)


def test_tier1_names_exist_in_the_installed_torch():
    """The snapshot may come from a newer torch than a machine has; tier 1 must hold for the older one too."""
    import torch

    for ns in cov.NAMESPACES:
        owner = ns.instance(torch) if ns.instance else importlib.import_module(ns.torch)
        absent = [name for name in ns.tier1.split() if name not in dir(owner)]
        assert not absent, (ns.torch, absent)


def test_exclusions_have_reasons_and_keep_tensor_operators():
    assert cov.excluded_reason("_foo") == "private (a leading underscore)"
    assert cov.excluded_reason("__init_subclass__") == "private (a leading underscore)"
    assert cov.excluded_reason("__add__") is None and cov.excluded_reason("__getitem__") is None
    assert cov.excluded_reason("chalf").startswith("complex32") and cov.excluded_reason("view_as_real") is None
    assert cov.excluded_reason("to_sparse_csr").startswith("sparse layouts other than COO")
    for name in ("to_sparse", "sparse_coo_tensor", "coalesce", "indices", "values", "spmm", "fftfreq", "rfft", "stft"):
        assert cov.excluded_reason(name) is None, name  # vkml has sparse COO tensors, complex tensors and fft
    assert cov.excluded_reason("quantize_per_tensor") == "quantization"
    # real ops whose names look like an excluded area stay in
    for name in ("quantile", "nanquantile", "isreal", "trace", "index_select"):
        assert cov.excluded_reason(name) is None, name


def test_a_missing_tier1_name_is_reported(monkeypatch):
    """The comparison sees vkml's side as it is: take a name away and it is missing, in tier 1, first."""
    import vkml.nn

    monkeypatch.delattr(vkml.nn, "Linear")
    rows = {row.namespace.torch: row for row in cov.compare()}
    assert rows["torch.nn"].missing[1][0] == "Linear"
    assert "torch.nn.Linear" in cov.missing_tier1(list(rows.values()))
    assert "Missing, tier 1 (" in cov.render(list(rows.values()))
