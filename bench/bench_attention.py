"""Time the fused scaled_dot_product_attention forward on one device (GPU timestamps), with and without
cooperative matrices, beside PyTorch's where CUDA is there:

    .venv/bin/python bench/bench_attention.py                       # B4 H8 T1024 D64 float16 and float32
    .venv/bin/python bench/bench_attention.py --seq 4096 --causal --dtype float32
    .venv/bin/python bench/bench_attention.py --causal --backward --dtype float32    # training: both passes
    .venv/bin/python bench/bench_attention.py --batch 1 --heads 1 --seq 64 --repeats 1   # lavapipe: a check

    .venv/bin/python bench/bench_attention.py --dtype float16 --matrices-only   # cm2 against the KHR kernel
    .venv/bin/python bench/bench_attention.py --dtype float16 --cm2-forms       # the cm2 kernel's forms

``--cm2-forms`` times the cm2 kernel in each ``CM2_FORMS`` configuration (the weights' exponential: "exp2",
log2 units with an integer running maximum, or "natural", session 16's; the key-block loops kept rolled or
left to the driver) in one process, beside PyTorch's, the forms in turn for ``--rounds`` rounds: each
form's time a call as above, and the median dispatch of ``--batched`` forwards realized together.

Each line: the shape, the path (``VKML_ATTENTION_CM2``, ``VKML_ATTENTION_COOPMAT`` and ``VKML_ATTENTION_TILED``
1 or 0: the variables pick the kernel on each call; float32 and devices without cooperative matrices take a
scalar kernel, the register-tiled one or, with ``VKML_ATTENTION_TILED=0``, the one-score-a-lane one; the
forward kernel that ran is named in brackets), the GPU time (median of the repeats, after a warm-up that compiles), and the
largest error of the first (batch, head) entry relative to the bound the op's page states
for the cooperative-matrix kernel (float64 reference): it must stay ≤ 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import numpy as np

import vkml
import vkml.nn.functional as VF
from vkml import debug
from vkml.kernels import attention_cm2, attention_coopmat

WARM_UP_S = 0.5


def time_forward(tensors, causal: bool, device, repeats: int, backward: bool = False) -> float:
    """GPU seconds of the forward (with ``backward``: the forward and the backward of ``out.sum()``)."""

    def once():
        out = VF.scaled_dot_product_attention(*tensors, is_causal=causal)
        if backward:
            out.sum().backward()
            vkml.realize(*(t.grad for t in tensors))
            for t in tensors:
                t.grad = None
        else:
            out.realize()

    started = time.perf_counter()
    once()  # compile
    while time.perf_counter() - started < WARM_UP_S:
        once()
    seconds = []
    for _ in range(repeats):
        with device.timestamped() as runs:
            once()
        seconds.append(sum(sum(run) for run in runs))
    return statistics.median(seconds)


def time_batched(tensors, causal: bool, device, count: int) -> tuple[float, float]:
    """The median GPU seconds of ``count`` forwards realized together (one submission, back to back: no host gap
    for the clocks to drop in) and the wall seconds per forward. Each has its own scale, so that none is merged."""
    scale = tensors[0].shape[-1] ** -0.5

    def build():
        return [
            VF.scaled_dot_product_attention(*tensors, is_causal=causal, scale=scale * (1 + i * 2**-20))
            for i in range(count)
        ]

    vkml.realize(*build())  # compile
    with device.timestamped() as runs:
        started = time.perf_counter()
        vkml.realize(*build())
        wall = time.perf_counter() - started
    return statistics.median(d for run in runs for d in run), wall / count


def forward_and_kernel(tensors, causal: bool) -> tuple[np.ndarray, str]:
    """The forward's output and the name of the attention kernel that computed it."""
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    try:
        got = VF.scaled_dot_product_attention(*tensors, is_causal=causal).detach().numpy()
    finally:
        debug.kernel_listeners.pop()
    return got, next((n for n in names if n.startswith("attention")), "?")


def bound_ratio(got: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> float:
    """max |got - exact| / bound over the first (batch, head) entry."""
    q, k, v = (x[0, 0].astype(np.float64) for x in (q, k, v))
    scale = 1 / np.sqrt(q.shape[-1])
    s = scale * (q @ k.T)
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    exact = w @ v
    c_w, c_s, c_v = attention_coopmat.bound(q.shape[-1])
    magnitude = scale * (np.abs(q) @ np.abs(k).T).max(-1, keepdims=True)
    top = np.abs(exact.astype(np.float16))
    ulp = (np.nextafter(top, np.float16(np.inf)) - top).astype(np.float64)
    unmasked = np.tril(np.ones(s.shape)) if causal else np.ones(s.shape)
    allowed = (c_w + c_s * magnitude) * (w @ np.abs(v)) + c_v * (unmasked @ np.abs(v)) + ulp / 2
    return float((np.abs(got[0, 0].astype(np.float64) - exact) / allowed).max())


def time_torch(arrays, causal: bool, repeats: int, backward: bool = False) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    tq, tk, tv = (torch.tensor(a, device="cuda", requires_grad=backward) for a in arrays)

    def once():
        out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
        if backward:
            out.sum().backward()

    for _ in range(10):
        once()
    seconds = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        once()
        end.record()
        torch.cuda.synchronize()
        seconds.append(start.elapsed_time(end) / 1e3)
    return statistics.median(seconds)


# (label, environment) of each kernel timed: the flash-attention kernel on workgroup-scope matrices (float16
# where the device has VK_NV_cooperative_matrix2), the subgroup-scope cooperative-matrix kernel, the
# register-tiled scalar kernels and the one-score-a-lane scalar kernels they replaced.
VARIANTS = (
    ("VKML_ATTENTION_CM2=1", {"VKML_ATTENTION_CM2": "1", "VKML_ATTENTION_COOPMAT": "1", "VKML_ATTENTION_TILED": "1"}),
    (
        "CM2=0 VKML_ATTENTION_COOPMAT=1",
        {"VKML_ATTENTION_CM2": "0", "VKML_ATTENTION_COOPMAT": "1", "VKML_ATTENTION_TILED": "1"},
    ),
    ("COOPMAT=0 VKML_ATTENTION_TILED=1", {"VKML_ATTENTION_COOPMAT": "0", "VKML_ATTENTION_TILED": "1"}),
    ("COOPMAT=0 VKML_ATTENTION_TILED=0", {"VKML_ATTENTION_COOPMAT": "0", "VKML_ATTENTION_TILED": "0"}),
)


# (label, attention_cm2.Config) of each form ``--cm2-forms`` times.
CM2_FORMS = (
    ("cm2 exp2 (the default)", attention_cm2.Config()),
    ("cm2 exp2, loops to the driver", attention_cm2.Config(unroll=True)),
    ("cm2 natural (session 16)", attention_cm2.Config(keys=64, weights="natural", unroll=True)),
    ("cm2 natural, DontUnroll", attention_cm2.Config(keys=64, weights="natural")),
    ("cm2 exp2, 64-key blocks", attention_cm2.Config(keys=64)),
)


@contextlib.contextmanager
def cm2_form(config: attention_cm2.Config):
    """The scaled_dot_product_attention calls inside take the cm2 kernel built with ``config`` where it applies."""
    built, chooses = attention_cm2.cached_forward_kernel, attention_cm2.applies
    attention_cm2.cached_forward_kernel = lambda shape, _=None, subgroup_size=32: built(shape, config, subgroup_size)
    # A new function object: the attention plans are keyed by it, so no plan of another form is reused.
    attention_cm2.applies = lambda features, shape, _=None: chooses(features, shape, config)
    try:
        yield
    finally:
        attention_cm2.cached_forward_kernel, attention_cm2.applies = built, chooses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--dtype", action="append", choices=["float16", "float32"], help="default: both")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--backward", action="store_true", help="time the forward and backward (of out.sum())")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device", default=None, help="a Vulkan device (default: the best one)")
    parser.add_argument("--matrices-only", action="store_true", help="time only the cooperative-matrix kernels")
    parser.add_argument("--cm2-forms", action="store_true", help="time only the cm2 kernel, in each of CM2_FORMS")
    parser.add_argument("--rounds", type=int, default=2, help="--cm2-forms: rounds over the forms")
    parser.add_argument("--forms", help="--cm2-forms: comma-separated indices into CM2_FORMS (default: all)")
    parser.add_argument("--batched", type=int, default=20, help="--cm2-forms: forwards realized together")
    args = parser.parse_args()
    device = vkml.device(args.device) if args.device else vkml.best_device()
    if device.kind != "vulkan":
        raise SystemExit("needs a Vulkan device (GPU timestamps)")
    rng = np.random.default_rng(0)
    size = (args.batch, args.heads, args.seq, args.dim)
    what = f"{' causal' if args.causal else ''}{' forward+backward' if args.backward else ''}"
    print(f"{device.name}: B{args.batch} H{args.heads} T{args.seq} D{args.dim}{what}")
    for dtype in args.dtype or ["float16", "float32"]:
        arrays = [rng.standard_normal(size).astype(dtype) for _ in range(3)]
        tensors = [vkml.tensor(a, device=device, requires_grad=args.backward).realize() for a in arrays]
        for round_ in range(args.rounds) if args.cm2_forms and dtype == "float16" else ():
            chosen = [CM2_FORMS[int(i)] for i in args.forms.split(",")] if args.forms else CM2_FORMS
            for label, config in chosen:  # the forms in turn, each round: drift in the clocks hits them alike
                with cm2_form(config):
                    seconds = time_forward(tensors, args.causal, device, args.repeats, args.backward)
                    batched, wall = time_batched(tensors, args.causal, device, args.batched)
                    got, ran = forward_and_kernel(tensors, args.causal)
                ratio = bound_ratio(got, *arrays, args.causal)
                print(
                    f"{dtype:8s} {label:32s}: {seconds * 1e3:9.3f} ms a call, {batched * 1e3:.3f} ms a dispatch of "
                    f"{args.batched} together ({wall * 1e3:.3f} ms wall each)  error/bound {ratio:.3f}  [{ran}]"
                    f"  round {round_}"
                )
        for label, switches in VARIANTS if not args.cm2_forms else ():
            matrices = switches["VKML_ATTENTION_COOPMAT"] == "1"
            if (dtype != "float16" and matrices) or (args.matrices_only and not matrices):
                continue  # float32 keeps the scalar kernels: the lines below
            os.environ.update(switches)
            seconds = time_forward(tensors, args.causal, device, args.repeats, args.backward)
            got, ran = forward_and_kernel(tensors, args.causal)
            ratio = bound_ratio(got, *arrays, args.causal)
            print(f"{dtype:8s} {label:32s}: {seconds * 1e3:9.3f} ms  error/bound {ratio:.3f}  [{ran}]")
            for name in switches:
                os.environ.pop(name)
        theirs = time_torch(arrays, args.causal, args.repeats, args.backward)
        if theirs is not None:
            print(f"{dtype:8s} torch (CUDA):               {theirs * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
