"""Python cost per recorded op and per realize (issue 20), counted in bytecodes.

    python3 bench/node_cost.py [--device cpu] [--top 15] [--only ops|realize|demo|adam]

Prints, each after warm-up (plans compiled and recorded, memos full), the Python bytecodes
(``sys.settrace`` opcode events: a loaded machine leaves them unchanged) and the Python frames of:

- (a) one elementwise op recorded, not realized, on realized (60, 64) float32 tensors: ``a + b``,
  ``x * 2.0``, ``x.exp()``, ``relu(x)``, and the nodes each builds;
- (b) a realize of an already planned single-kernel graph (``a + b`` of 2^16 floats): ``.realize()``
  (plan lookup, buffers, the recording's submission), then ``synchronize()`` (the wait), then
  ``.numpy()`` of a realized 2^16-element result (the download);
- (c) the demo's training step (vkml/demo.py, ``make demo``: 2 -> 64 -> 64 -> 3, ReLU, dropout,
  cross-entropy, Adam, a new batch each step) by phase, building / realizing as
  bench/recording_cost.py splits them;
- (d) ``Adam.step()`` over 8 parameters (four Linear(16, 16) layers), building / realizing.

``--top N`` lists, for each case, the N functions that execute the most bytecodes of their own.
docs/benchmarks.md ("Session 21: recording and realize cost") reads them.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
if str(TOOLS.parent) not in sys.path:
    sys.path.insert(0, str(TOOLS.parent))
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

import numpy as np  # noqa: E402
from recording_cost import demo_step_phases, split_bytecodes  # noqa: E402

import vkml  # noqa: E402
import vkml.nn.functional as F  # noqa: E402
from vkml.graph import node as node_module  # noqa: E402

_PACKAGE = os.path.dirname(os.path.abspath(vkml.__file__))


def counted(fn, own: collections.Counter | None = None) -> tuple[object, int, int]:
    """``fn()``'s result, its bytecodes and its Python frames; ``own`` gets each function's own bytecodes."""
    totals = [0, 0]

    def tracer(frame, event, arg):
        if event == "call":
            totals[1] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            totals[0] += 1
            if own is not None:
                code = frame.f_code
                own[(code.co_filename.replace(_PACKAGE + os.sep, ""), code.co_firstlineno, code.co_name)] += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn()
    finally:
        sys.settrace(previous)
    return result, totals[0], totals[1]


def _nodes_built(fn) -> int:
    """Nodes ``fn()`` builds (``Node.__init__`` calls)."""
    made, init = [0], node_module.Node.__init__

    def counting_init(self, *args, **kwargs):
        made[0] += 1
        init(self, *args, **kwargs)

    node_module.Node.__init__ = counting_init
    try:
        fn()
    finally:
        node_module.Node.__init__ = init
    return made[0]


def _print_top(own: collections.Counter, top: int) -> None:
    for (file, line, function), count in own.most_common(top):
        print(f"      {count:7d}  {file}:{line} {function}")


def recorded_ops(device, top: int = 0) -> dict:
    """(a): {case: (bytecodes, frames, nodes)} of one recorded op, the median of 6 calls after 4 untimed."""
    rng = np.random.default_rng(0)
    a, b = (vkml.tensor(rng.standard_normal((60, 64)).astype(np.float32), device=device).realize() for _ in range(2))
    made = {
        "a + b": lambda: a + b,
        "x * 2.0": lambda: a * 2.0,
        "x.exp()": lambda: a.exp(),
        "relu(x)": lambda: F.relu(a),
    }
    found = {}
    for name, fn in made.items():
        for _ in range(4):
            fn()
        own: collections.Counter = collections.Counter()
        samples = [counted(fn)[1:] for _ in range(6)]
        counted(fn, own)
        found[name] = (*sorted(samples)[len(samples) // 2], _nodes_built(fn), own)
    print("(a) one op recorded, not realized: bytecodes, frames, nodes")
    for name, (codes, frames, nodes, own) in found.items():
        print(f"  {name:10s} {codes:6d} {frames:4d} {nodes:3d}")
        _print_top(own, top)
    return found


def planned_realize(device, top: int = 0) -> dict:
    """(b): bytecodes and frames of ``.realize()``, ``synchronize()`` and ``.numpy()`` of a planned ``a + b``."""
    rng = np.random.default_rng(1)
    a, b = (vkml.tensor(rng.standard_normal(1 << 16).astype(np.float32), device=device).realize() for _ in range(2))
    keep = []
    for _ in range(6):  # plans, compiles and records; then replays
        keep[:] = [(a + b).realize()]
        device.synchronize()
    samples: dict = {"realize()": [], "synchronize()": [], ".numpy()": []}
    owns = {name: collections.Counter() for name in samples}
    for i in range(5):
        out = a + b
        last = i == 4
        _, codes, frames = counted(out.realize, owns["realize()"] if last else None)
        samples["realize()"].append((codes, frames))
        _, codes, frames = counted(device.synchronize, owns["synchronize()"] if last else None)
        samples["synchronize()"].append((codes, frames))
        got, codes, frames = counted(out.numpy, owns[".numpy()"] if last else None)
        samples[".numpy()"].append((codes, frames))
        keep[:] = [out]
    np.testing.assert_array_equal(got, a.numpy() + b.numpy())
    print("(b) a planned single-kernel realize (a + b, 2^16 floats): bytecodes, frames")
    found = {}
    for name, values in samples.items():
        found[name] = sorted(values)[len(values) // 2]
        print(f"  {name:14s} {found[name][0]:6d} {found[name][1]:4d}")
        _print_top(owns[name], top)
    return found


def demo_step(device, top: int = 0) -> dict:
    """(c): {phase: (building, realizing)} of the demo's step with a new batch each step."""
    counts, own = demo_step_phases(device, "backward" if top else None, steps=12, batches="upload")
    print("(c) the demo's step (new batches): bytecodes building / realizing")
    total = [0, 0]
    for name in ("forward", "zero_grad", "backward", "step", "item"):
        building, realizing = counts[name]
        total[0] += building
        total[1] += realizing
        print(f"  {name:10s} {building:7d} {realizing:7d}")
    print(f"  {'all':10s} {total[0]:7d} {total[1]:7d}   ({sum(total)}; recordings reused: {counts['reused']})")
    if top:
        print("    backward's building, own bytecodes:")
        _print_top(own, top)
    return counts


def adam_step(device, top: int = 0) -> tuple[int, int]:
    """(d): building and realizing bytecodes of ``Adam.step()`` over 8 parameters, after 8 steps."""
    vkml.manual_seed(0)
    layers = [vkml.nn.Linear(16, 16) for _ in range(4)]
    model = vkml.nn.Sequential(*layers).to(device)
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    x = vkml.tensor(np.random.default_rng(2).standard_normal((32, 16)).astype(np.float32), device=device)
    own: collections.Counter = collections.Counter()
    for i in range(10):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        device.synchronize()
        if i < 8:
            optimizer.step()
        else:
            _, building, realizing = split_bytecodes(optimizer.step, own if i == 9 else None)
    print("(d) Adam.step() over 8 parameters: bytecodes building / realizing")
    print(f"  step       {building:7d} {realizing:7d}   ({building + realizing})")
    _print_top(own, top)
    return building, realizing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--only", choices=("ops", "realize", "demo", "adam"), default=None)
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    print(f"device: {device.name}")
    for name, fn in (("ops", recorded_ops), ("realize", planned_realize), ("demo", demo_step), ("adam", adam_step)):
        if args.only in (None, name):
            fn(device, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
