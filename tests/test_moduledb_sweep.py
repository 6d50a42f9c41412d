"""PyTorch's module tables (``common_modules.module_db`` and ``common_nn``'s module tests) against
vkml.nn; tests/moduledb_sweep.py says what is compared. It imports torch.testing._internal (about
5 s, needs ``expecttest``), so it runs only with ``pytest -m exhaustive tests/test_moduledb_sweep.py``:
the samples are made when that marker is selected, and none otherwise. KNOWN lists what fails
(strictly expected to); the fixes it found have hand-written rows in tests/test_moduledb_fixes.py.
"""

from __future__ import annotations

import pytest

_SUM_ORDER = (
    "a float32 gradient summed over many terms, off torch's by a few ulps of the sum (2e-6 to 4e-6 relative): "
    "the summation order; each side is as close to the float64 result (docs/module_sweep.md)"
)
KNOWN: dict[str, str] = {
    "nn_ConvTranspose3d-0-train": _SUM_ORDER,
    "nn_LazyConvTranspose3d-0-train": _SUM_ORDER,
    "nn_MultiheadAttention-9-train": _SUM_ORDER,
    "nn_MultiheadAttention-9-eval": _SUM_ORDER,
    "common_nn-ReplicationPad3d_complex-109": "replicate padding of a complex tensor is not implemented",
}


def _exhaustive_selected(config: pytest.Config) -> bool:
    return "exhaustive" in (config.option.markexpr or "").replace("not exhaustive", "")


def _param(check, name, *args):
    marks = (pytest.mark.xfail(strict=True, reason=KNOWN[name]),) if name in KNOWN else ()
    return pytest.param((check, args), id=name, marks=marks)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "moduledb_case" not in metafunc.fixturenames:
        return
    params = []
    if _exhaustive_selected(metafunc.config):
        # imported here, not at the top: the tables cost seconds that the default suite never needs
        import moduledb_sweep as sweep

        samples = sweep.all_samples()
        params += [_param(sweep.check_sample, s.name, s) for s in samples]
        params += [_param(sweep.check_factory_kwargs, s.name + "-factory", s) for s in sweep.factory_samples(samples)]
        params += [_param(sweep.check_error_input, e[0], *e) for e in sweep.module_db_error_samples()]
    metafunc.parametrize("moduledb_case", params)


@pytest.mark.exhaustive
def test_module_table_row_matches_torch(moduledb_case):
    check, args = moduledb_case
    check(*args)


@pytest.mark.exhaustive
def test_known_failures_are_rows(request):
    """A KNOWN entry names a row that exists (a renamed row would leave a stale entry behind)."""
    import moduledb_sweep as sweep

    samples = sweep.all_samples()
    names = {s.name for s in samples} | {s.name + "-factory" for s in samples}
    names |= {e[0] for e in sweep.module_db_error_samples()}
    assert set(KNOWN) <= names, sorted(set(KNOWN) - names)
