"""Host cost of building layer graphs (the op calls before realize), per layer, realize excluded.

    python3 bench/layer_build.py [ROW ...] [--device cpu] [--bytecodes]

Rows: conv2d_f16, bn_train, maxpool, sdpa_f16, cross_entropy, adam10 (one Adam step over 10
parameters), train_step (Linear+ReLU+Linear, cross_entropy, backward, Adam). Shapes are tiny: the
build does not depend on sizes. Prints the median and the minimum of 200 builds in µs, any
realize inside a row (backward's, the optimizer step's) subtracted; ``--bytecodes`` instead counts
the Python bytecodes one build executes (sys.settrace), a measure that a loaded machine leaves
unchanged.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import vkml  # noqa: E402
from vkml.schedule import scheduler  # noqa: E402

_realize = scheduler.realize
_inside = [0.0, False]  # seconds spent realizing; whether bytecodes count now


def _timed_realize(*args, **kwargs):
    started, counting = time.perf_counter(), _inside[1]
    _inside[1] = False
    try:
        return _realize(*args, **kwargs)
    finally:
        _inside[0] += time.perf_counter() - started
        _inside[1] = counting


def cases(device) -> dict:
    F, nn = vkml.nn.functional, vkml.nn
    rng = np.random.default_rng(0)

    def t(shape, dtype="float32"):
        return vkml.tensor(rng.standard_normal(shape).astype(dtype), device=device).realize()

    made = {}
    x16, w16 = t((2, 4, 8, 8), "float16"), t((4, 4, 3, 3), "float16")
    made["conv2d_f16"] = lambda: [F.conv2d(x16, w16, padding=1)]
    x, g, b, mean, var = t((2, 4, 8, 8)), t((4,)), t((4,)), t((4,)), t((4,)).abs().realize()
    made["bn_train"] = lambda: [F.batch_norm(x, mean, var, g, b, training=True)]
    made["maxpool"] = lambda: [F.max_pool2d(x, 3, 2, 1)]
    q, k, v = (t((2, 2, 16, 8), "float16") for _ in range(3))
    made["sdpa_f16"] = lambda: [F.scaled_dot_product_attention(q, k, v)]
    logits, target = t((8, 10)), vkml.tensor(rng.integers(0, 10, 8), device=device)
    made["cross_entropy"] = lambda: [F.cross_entropy(logits, target)]
    params = [nn.Parameter(t((4, 4))) for _ in range(10)]
    for p in params:
        p.grad = t((4, 4))
    adam = vkml.optim.Adam(params)
    made["adam10"] = lambda: (adam.step(), params)[1]
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10)).to(device)
    opt, inputs = vkml.optim.Adam(model.parameters()), t((8, 16))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(inputs), target)
        loss.backward()
        opt.step()
        return [loss, *model.parameters()]

    made["train_step"] = step
    return made


def microseconds(fn, runs: int = 200) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        _inside[0] = 0.0
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started - _inside[0])
        vkml.realize(*out)
    times.sort()
    return times[len(times) // 2] * 1e6, times[0] * 1e6


def bytecodes(fn, runs: int = 5) -> float:
    count = [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode" and _inside[1]:
            count[0] += 1
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(runs):
            _inside[1] = True
            out = fn()
            _inside[1] = False
            vkml.realize(*out)
    finally:
        _inside[1] = False
        sys.settrace(None)
    return count[0] / runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--bytecodes", action="store_true")
    args = parser.parse_args(argv)
    scheduler.realize = _timed_realize
    made = cases(vkml.device(args.device))
    for name in args.rows or list(made):
        fn = made[name]
        for _ in range(3):
            vkml.realize(*fn())
        if args.bytecodes:
            print(f"{name:14s} {bytecodes(fn):9.0f} bytecodes a build")
        else:
            median, least = microseconds(fn)
            print(f"{name:14s} build median {median:7.0f} µs, min {least:7.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
