"""Progress bars: ``vkml.utils.progress`` and the bar a realize shows while it compiles new kernels."""

from __future__ import annotations

import io
import sys
import types

import numpy as np
from test_cache_faults import forget_memory

import vkml
from vkml.utils.progress import Bar, progress_bar

A = (np.arange(16 * 16, dtype=np.float32).reshape(16, 16) - 100) / 150


def workload(dev) -> list[np.ndarray]:
    """Three new kernels in one realize (a matmul, a fused row reduction, a column reduction)."""
    a = vkml.tensor(A, device=dev)
    outs = [a @ a, (a * 1.5 + 2).exp().sum(0), a.amax(1)]
    vkml.realize(*outs)
    return [out.numpy() for out in outs]


def test_compiles_show_a_bar_with_vkml_progress(gpu, tmp_path, monkeypatch, capfd) -> None:
    monkeypatch.setenv("VKML_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("VKML_COMPILE_THREADS", "2")
    monkeypatch.setenv("VKML_PROGRESS", "1")
    forget_memory(gpu)
    capfd.readouterr()
    results = workload(gpu)
    err = capfd.readouterr().err
    # the total is shown; tqdm (where installed) may clear its bar before drawing 3/3
    assert "vkml: compiling kernels" in err and "/3" in err, err
    # The bar changes nothing else: the CPU's bits.
    for ours, reference in zip(results, workload(vkml.device("cpu"))):
        assert ours.tobytes() == reference.tobytes()
    # Kernels that the process already holds compile nothing and show nothing.
    workload(gpu)
    assert "compiling" not in capfd.readouterr().err
    forget_memory(gpu)


def test_no_bar_when_stderr_is_captured_or_disabled(gpu, tmp_path, monkeypatch, capfd) -> None:
    monkeypatch.setenv("VKML_COMPILE_THREADS", "2")
    for folder, mode in (("unset", None), ("off", "0")):
        monkeypatch.setenv("VKML_CACHE_DIR", str(tmp_path / folder))
        if mode is None:
            monkeypatch.delenv("VKML_PROGRESS", raising=False)
        else:
            monkeypatch.setenv("VKML_PROGRESS", mode)
        forget_memory(gpu)
        capfd.readouterr()
        workload(gpu)
        assert "compiling" not in capfd.readouterr().err
    forget_memory(gpu)


def test_builtin_bar_follows_tqdms_interface(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError: the built-in bar
    out = io.StringIO()
    bar = progress_bar(range(4), desc="training", file=out)
    assert isinstance(bar, Bar)
    seen = []
    for i in bar:
        seen.append(i)
        bar.set_postfix_str(f"loss {i}")
    assert seen == [0, 1, 2, 3]
    text = out.getvalue()
    assert text.endswith("\n") and "training: [" in text and "4/4" in text and "loss 3" in text
    # update() counts, initial starts partway (a resumed run), disable draws nothing, delay waits.
    out = io.StringIO()
    with progress_bar(total=10, initial=5, file=out) as bar:
        bar.update(2)
    assert "7/10" in out.getvalue()
    out = io.StringIO()
    for _ in progress_bar(range(3), file=out, disable=True):
        pass
    assert out.getvalue() == ""
    out = io.StringIO()
    with progress_bar(total=3, file=out, delay=60.0) as bar:
        bar.update(3)
    assert out.getvalue() == ""


def test_progress_bar_is_tqdm_when_installed(monkeypatch) -> None:
    made = []

    class FakeTqdm:  # stands for tqdm.tqdm: progress_bar must hand it the iterable and the arguments
        def __init__(self, iterable=None, **kwargs):
            made.append((iterable, kwargs))

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeTqdm))
    items = [1, 2]
    bar = progress_bar(items, total=2, desc="x")
    assert isinstance(bar, FakeTqdm) and made == [(items, {"total": 2, "desc": "x"})]
