"""bench/row_anatomy.py: each case is the one kernel its step claims, and the table comes out whole."""

from __future__ import annotations

import numpy as np
import row_anatomy

import vkml  # noqa: E402
from vkml import debug  # noqa: E402


def test_every_case_is_one_dispatch_with_the_right_values():
    dev = vkml.best_device()
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((16, 256), dtype=np.float32)
    w_np, b_np = rng.standard_normal(256, dtype=np.float32), rng.standard_normal(256, dtype=np.float32)
    x, w, b = (vkml.tensor(a, device=dev) for a in (x_np, w_np, b_np))
    x64 = x_np.astype(np.float64)
    centred = x64 - x64.mean(1, keepdims=True)
    normalised = centred / np.sqrt((centred**2).mean(1, keepdims=True) + 1e-5)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    expected = {
        "copy (x * 2)": 2 * x64,
        "row sum": x64.sum(1),
        "row max": x64.max(1),
        "centre (x - mean)": centred,
        "mean and variance": normalised,
        "layer norm": normalised * w_np + b_np,
        "exp(x - max)": e,
        "softmax": e / e.sum(1, keepdims=True),
    }
    built = row_anatomy.cases(x, w, b)
    assert list(built) == list(expected)
    for name, build in built.items():
        y = build()
        debug.reset_counters()
        y.realize()
        assert debug.counters()["dispatches"] == 1, name
        np.testing.assert_allclose(y.numpy(), expected[name], rtol=2e-5, atol=2e-5, err_msg=name)


def test_the_table_has_every_case(capsys):
    results = row_anatomy.main(["--size", "64", "--repeats", "2", "--budget", "0.05"])
    printed = capsys.readouterr().out
    assert len(results) == 8
    for name, (low, median) in results.items():
        assert 0 < low <= median, name
        assert f"| {name} |" in printed
