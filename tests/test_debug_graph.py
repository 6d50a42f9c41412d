"""vkml.debug.graph: the lazy graph as Graphviz dot, one box per kernel its realize would run."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import vkml

A = (np.arange(16, dtype=np.float32).reshape(4, 4) - 6) / 5


def build(dev):
    a = vkml.tensor(A, device=dev)
    return [(a * 2 + 1).exp().sum(0), a @ a]


def test_graph_boxes_match_the_kernels_the_realize_runs(dev, tmp_path) -> None:
    outs = build(dev)
    text = vkml.debug.graph(outs, tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == text + "\n"
    assert text.startswith("digraph vkml {") and text.endswith("}")
    boxes = re.findall(r'label="kernel \d+ \((\d+) dispatch(?:es)?\)"', text)
    assert not any(o.node.realized for o in outs)  # drawing realizes nothing
    vkml.debug.reset_counters()
    vkml.realize(*outs)
    assert sum(map(int, boxes)) == vkml.debug.counters()["dispatches"] == 2
    assert "matmul (4, 4)" in text and "('exp'" in text
    # Every node is drawn once, in at most one box; realized tensors draw as buffers, in no box.
    drawn = re.findall(r"^  (n\d+) \[label=", text, flags=re.M)
    boxed = re.findall(r"^    (n\d+);$", text, flags=re.M)
    assert len(drawn) == len(set(drawn)) and len(boxed) == len(set(boxed)) and set(boxed) <= set(drawn)
    after = vkml.debug.graph(outs[0])
    assert "cluster" not in after and "buffer (4,)" in after


@pytest.fixture(params=["cpu", "gpu"])
def dev(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def test_svg_needs_graphviz(tmp_path) -> None:
    outs = build(vkml.device("cpu"))
    if shutil.which("dot") is None:
        with pytest.raises(RuntimeError, match="graph\\(\\): writing .*g.svg.* needs Graphviz's dot"):
            vkml.debug.graph(outs, tmp_path / "g.svg")
    else:
        vkml.debug.graph(outs, tmp_path / "g.svg")
        assert "<svg" in (tmp_path / "g.svg").read_text()
    assert (tmp_path / "g.dot").read_text().startswith("digraph vkml {")
