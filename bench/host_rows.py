"""Host cost of the op-suite rows, from the op call to the synchronised result, on shapes a CPU driver runs at once.

    python3 bench/host_rows.py [ROW ...] [--device vulkan:0] [--top 12] [--runs 300]

Rows: add, mul, chain8 (eight elementwise ops), sum, sum0 (over dim 0), softmax, layer_norm,
log_softmax, cross_entropy (the same labels at every call, never read), relu, linear, max_pool2d,
batch_norm (training, the running statistics realized with the output) and train_step (Linear,
ReLU, Linear, cross_entropy, backward, Adam; the loss is never read). For each, after 30 untimed
repetitions: the Python bytecodes one repetition executes (sys.settrace: a loaded machine leaves
the count unchanged), and over ``--runs`` more the median and minimum host time outside the driver
(the wall time less the time inside ``vk*`` calls, as bench/realize_phases.py measures it).
``--top N`` lists the N functions that execute the most bytecodes of their own.
docs/benchmarks.md ("Host cost per realize (session 12)") reads them.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
for path in (str(TOOLS.parent), str(TOOLS)):
    if path not in sys.path:
        sys.path.insert(0, path)

import numpy as np  # noqa: E402
from realize_phases import driver_time  # noqa: E402

import vkml  # noqa: E402


def cases(device) -> dict:
    """Each row's step: it builds and returns the tensors one repetition realizes."""
    F, nn = vkml.nn.functional, vkml.nn
    rng = np.random.default_rng(0)

    def t(shape):
        return vkml.tensor(rng.standard_normal(shape).astype("float32"), device=device).realize()

    n = 1 << 12
    a, b, m, w, bias = t((n,)), t((n,)), t((64, 64)), t((64,)), t((64,))
    labels = vkml.tensor(rng.integers(0, 64, 64), device=device).realize()
    x4, g4, b4, mean4 = t((2, 4, 8, 8)), t((4,)), t((4,)), t((4,))
    var4 = t((4,)).abs().realize()
    lin_w, lin_b, lin_x = t((32, 64)), t((32,)), t((16, 64))
    made = {
        "add": lambda: (a + b,),
        "mul": lambda: (a * b,),
        "chain8": lambda: (((((((((a * 1.5) + b) * 0.5) - b) * a) + 1.0) * b) - a),),
        "sum": lambda: (a.sum(),),
        "sum0": lambda: (m.sum(0),),
        "softmax": lambda: (m.softmax(-1),),
        "layer_norm": lambda: (F.layer_norm(m, (64,), w, bias),),
        "log_softmax": lambda: (F.log_softmax(m, -1),),
        "cross_entropy": lambda: (F.cross_entropy(m, labels),),
        "relu": lambda: (F.relu(a),),
        "linear": lambda: (F.linear(lin_x, lin_w, lin_b),),
        "max_pool2d": lambda: (F.max_pool2d(x4, 3, 2, 1),),
        "batch_norm": lambda: (F.batch_norm(x4, mean4, var4, g4, b4, training=True), mean4, var4),
    }
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10)).to(device)
    opt, inputs = vkml.optim.Adam(model.parameters()), t((8, 16))
    target = vkml.tensor(rng.integers(0, 10, 8), device=device).realize()

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(inputs), target)
        loss.backward()
        opt.step()
        return (loss, *model.parameters())

    made["train_step"] = step
    return made


def repeat(device, fn) -> None:
    vkml.realize(*fn())
    device.synchronize()


def bytecodes(device, fn, runs: int = 5) -> tuple[float, collections.Counter]:
    counts: collections.Counter = collections.Counter()

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[(code.co_filename.split("/vkml/")[-1], code.co_firstlineno, code.co_name)] += 1
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(runs):
            repeat(device, fn)
    finally:
        sys.settrace(None)
    return sum(counts.values()) / runs, counts


def host_time(device, fn, runs: int) -> tuple[float, float]:
    """Median and minimum seconds of a repetition outside the driver (Vulkan) or the interpreter (CPU)."""
    outside = []
    with driver_time(device) as spent:
        for _ in range(runs):
            spent[0] = 0.0
            started = time.perf_counter()
            repeat(device, fn)
            outside.append(time.perf_counter() - started - spent[0])
    outside.sort()
    return outside[len(outside) // 2], outside[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--device", default=None)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    made = cases(device)
    for name in args.rows or list(made):
        fn = made[name]
        for _ in range(30):
            repeat(device, fn)
        total, counts = bytecodes(device, fn)
        median, least = host_time(device, fn, args.runs if name != "train_step" else max(1, args.runs // 10))
        print(
            f"{name:14s} {total:8.0f} bytecodes | host outside the driver: median {median * 1e6:8.1f} µs, "
            f"min {least * 1e6:8.1f} µs"
        )
        for (file, line, function), count in counts.most_common(args.top):
            print(f"    {count / 5:8.0f}  {file}:{line} {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
