"""Host cost of recording ops: the Python bytecodes that build the lazy graph, apart from realizing it.

    python3 bench/recording_cost.py [--device vulkan:0] [--top 25] [--phase forward|zero_grad|backward|step|item]
                                    [--batches windows|same|upload] [--steps 8]

Prints, after warm-up (plans compiled, memos full):
- the demo's training step (vkml/demo.py: 2 -> 64 -> 64 -> 3, ReLU, dropout, cross-entropy, Adam, batches of
  60, ``loss.item()``) by phase, each phase's bytecodes split into building (the frontend, autograd, the
  optimizer's graph) and realizing (every call into vkml/schedule, runtime, kernels, codegen or ir, with all
  it calls);
- single ops on realized (60, 64) and (64, 64) float32 tensors, recorded and not realized: ``a + b``,
  ``x @ w``, ``relu(x)``, ``x.sum()``, each without grad and with ``a``, ``x`` requiring grad (the result's
  context, the backward node, included).

``--batches``: each step's batch is the next of ten windows of the dataset tensor (the default, as
``bench_training.py``), the first window every step, or a new upload of the next ten's rows (a data
loader's); ``--steps``: steps run, the last one counted (with the recordings it reused).
``--top N`` lists the N functions of ``--phase``'s building that execute the most bytecodes of their own.
Bytecodes are ``sys.settrace`` opcode events: a loaded machine leaves them unchanged.
docs/benchmarks.md ("Session 17: recording cost") reads them.
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

import numpy as np  # noqa: E402

import vkml  # noqa: E402
import vkml.nn.functional as F  # noqa: E402
from vkml import demo  # noqa: E402

_PACKAGE = os.path.dirname(os.path.abspath(vkml.__file__))
# Code in these packages realizes: a call into them counts as realizing, with everything it calls.
REALIZING = tuple(os.path.join(_PACKAGE, d) + os.sep for d in ("schedule", "runtime", "kernels", "codegen", "ir"))
PHASES = ("forward", "zero_grad", "backward", "step", "item")


def split_bytecodes(fn, own: collections.Counter | None = None) -> tuple[object, int, int]:
    """``fn()``'s result and its bytecodes building and realizing; ``own`` gets each building function's own count."""
    zone_of: dict[int, bool] = {}  # frame id -> whether it realizes
    counts = [0, 0]

    def tracer(frame, event, arg):
        if event == "call":
            parent = zone_of.get(id(frame.f_back), False)
            zone_of[id(frame)] = parent or frame.f_code.co_filename.startswith(REALIZING)
            frame.f_trace_opcodes = True
        elif event == "opcode":
            realizing = zone_of.get(id(frame), False)
            counts[realizing] += 1
            if own is not None and not realizing:
                code = frame.f_code
                own[(code.co_filename.replace(_PACKAGE + os.sep, ""), code.co_firstlineno, code.co_name)] += 1
        elif event == "return":
            zone_of.pop(id(frame), None)
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn()
    finally:
        sys.settrace(previous)
    return result, counts[0], counts[1]


def demo_step_phases(
    device, phase_top: str | None = None, steps: int = 8, batches: str = "windows"
) -> tuple[dict, collections.Counter]:
    """{phase: (building, realizing)} of the demo's last step of ``steps``, and the own counts of ``phase_top``'s
    building; ``counts["reused"]``: the recordings that step submitted again. ``batches``: see the module text."""
    x_all, y_all = demo.make_spirals()
    model = demo.make_model(device)
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    x = vkml.tensor(x_all[: demo.TRAIN_POINTS], device=device)
    y = vkml.tensor(y_all[: demo.TRAIN_POINTS], device=device)
    own: collections.Counter = collections.Counter()
    counts: dict = {}
    for i in range(steps):
        batch = slice((i % 10) * demo.BATCH, (i % 10 + 1) * demo.BATCH)
        if batches == "windows":
            xb, yb = x[batch], y[batch]
        elif batches == "same":
            xb, yb = x[: demo.BATCH], y[: demo.BATCH]
        else:
            xb, yb = vkml.tensor(x_all[batch], device=device), vkml.tensor(y_all[batch], device=device)
        device.synchronize()  # the wait is the device's time, not the step's
        reused = vkml.debug.counters()["recordings_reused"]
        calls = _step_phases(model, optimizer, xb, yb)
        for name in PHASES:
            own_here = own if i == steps - 1 and name == phase_top else None
            _, building, realizing = split_bytecodes(calls[name], own_here)
            counts[name] = (building, realizing)
        counts["reused"] = vkml.debug.counters()["recordings_reused"] - reused
    return counts, own


def _step_phases(model, optimizer, xb, yb) -> dict:
    """The demo's ``train_step`` cut into its phases, one call each, in ``PHASES``' order."""
    state: dict = {}
    return {
        "forward": lambda: state.__setitem__("loss", F.cross_entropy(model(xb), yb)),
        "zero_grad": optimizer.zero_grad,
        "backward": lambda: state["loss"].backward(),
        "step": optimizer.step,
        "item": lambda: state["loss"].item(),
    }


def single_ops(device) -> dict:
    """{case: building bytecodes} of one recorded op (the least of 6 calls after 4 untimed)."""
    rng = np.random.default_rng(0)

    def t(shape, grad=False):
        return vkml.tensor(rng.standard_normal(shape).astype(np.float32), device=device, requires_grad=grad).realize()

    a, b, x, w = t((60, 64)), t((60, 64)), t((60, 64)), t((64, 64))
    ga, gx = t((60, 64), True), t((60, 64), True)
    made = {
        "a + b": lambda: a + b,
        "x @ w": lambda: x @ w,
        "relu(x)": lambda: F.relu(x),
        "x.sum()": lambda: x.sum(),
        "a + b, a requires grad": lambda: ga + b,
        "x @ w, x requires grad": lambda: gx @ w,
        "relu(x), x requires grad": lambda: F.relu(gx),
        "x.sum(), x requires grad": lambda: gx.sum(),
    }
    found = {}
    for name, fn in made.items():
        for _ in range(4):
            fn()
        found[name] = min(split_bytecodes(fn)[1] for _ in range(6))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--phase", default="backward", choices=PHASES)
    parser.add_argument("--batches", default="windows", choices=("windows", "same", "upload"))
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    counts, own = demo_step_phases(device, args.phase if args.top else None, args.steps, args.batches)
    print(f"demo step on {device.name} ({args.batches} batches, step {args.steps}): bytecodes building / realizing")
    total = [0, 0]
    for name in PHASES:
        building, realizing = counts[name]
        total[0] += building
        total[1] += realizing
        print(f"  {name:10s} {building:8d} {realizing:8d}")
    print(f"  {'step':10s} {total[0]:8d} {total[1]:8d}   (all: {sum(total)}; recordings reused: {counts['reused']})")
    for (file, line, function), count in own.most_common(args.top):
        print(f"    {count:8d}  {file}:{line} {function}")
    print("one recorded op, not realized: bytecodes")
    for name, count in single_ops(device).items():
        print(f"  {name:26s} {count:6d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
