"""Prototype: the float16 flash-attention forward on VK_NV_cooperative_matrix2, timed against PyTorch's.

    python3 extra/proto_flash_cm2.py                                  # default shapes × both exps, default sizes
    python3 extra/proto_flash_cm2.py --size "B4 H8 T4096 D64 causal" --shape "128x64 t256" --exp sw
    python3 extra/proto_flash_cm2.py --print-asm "64x64 t128 sw"      # the SPIR-V text, no device needed

out = softmax(Q Kᵀ·scale [+ causal mask]) V and lse = the row's log-sum-exp (float32), for float16 Q, K,
V, out of shape (B, H, T, D), scale 1/√D. Every size is baked into the module (extra/flash_cm2_spirv.py
writes it). Design, one workgroup of ``t`` invocations per ``Br`` query rows of one (b, h), all of its
matrices of workgroup scope (the driver stages them through shared memory and splits the work):

1. Q: one Br×D float16 A matrix, tensor-loaded once from the (B·H·T)×D layout sliced at its rows.
2. Per key block of Bc rows (ascending, flash attention): Kᵀ (D×Bc B matrix) tensor-loaded from the
   same layout through a view with permutation (1, 0), so no transposed copy exists;
   S = Q Kᵀ (float32 Br×Bc accumulator from -0.0); scaled by OpMatrixTimesScalar, or, on the
   blocks the causal diagonal crosses, by a per-element function of (row, column) that also sets the
   keys after the query to -inf; blocks wholly after the diagonal are never visited (a second loop
   takes the crossed blocks, so the first loop's body has no mask at all).
3. Row max: OpCooperativeMatrixReduceNV (Row, a max combine) into a Br×Bc matrix whose every
   column holds its row's value; m' = max(m, rowmax), P = e^(S - m'), α = e^(m - m') are
   OpCooperativeMatrixPerElementOpNV calls of SPIR-V functions (element-wise matrix arithmetic has no
   max and no exp). The exp is one of two (``Config.exp``): ``hw`` = GLSL.std.450 Exp2 of x·log2(e)
   (the hardware's approximation, the upper bound of speed); ``sw`` = the float32 routine vkml's
   attention uses for these weights (vkml/kernels/attention_coopmat.py ``weight_exp``: round to an
   integer by adding 1.5·2²³, a degree-5 polynomial of 2^f, the exponent field), every float
   operation NoContraction as vkml emits them.
4. l' = l·α + rowsum(P) (Reduce Row with an add combine: the float32 weights, as vkml's kernel);
   O' = diag(α)·O + P V: α is widened to Br×D by one more row reduce (max of equal values) when
   Bc ≠ D, multiplies O element-wise, and O' = MulAdd(P as a float16 A matrix (OpFConvert
   accumulator → A, CooperativeMatrixConversionsNV; rounded to nearest even), V block, diag(α)·O).
   m starts at -inf; no row is ever all -inf after the first block (it always holds key 0), so
   α = e^(-inf) = 0 wipes only the zero start and no NaN arises.
5. At the end O / l (l widened like α) narrowed to float16 and tensor-stored; lse = m + log(l) by a
   per-element function, stored through a view clipped to column 0 into a (B·H·T)×1 layout.

Variants (``Config``): ``mma`` takes the row sum as P (float16) times a matrix of ones on the tensor
cores, as ggml's cm2 shader does, instead of the reduction; ``m16`` keeps m, l and α in Br×16 matrices
(α's exp on 16 columns, not Bc) and widens m' for P by one more row reduce. T that is not a multiple
of the blocks (ragged): the layout clamps (Constant: loads past the last row read 0), unmasked runs
mask the keys from T on in a last, partial block, and the last query block's stores are clipped by
a view to its rows before T.

Workgroup order (``block_of``): without a mask, the query blocks of one (b, h) are neighbours (the
workgroups in flight share its keys and values in L2); causal, the query blocks go in descending
order across all (b, h) (the longest rows start first, the short ones fill the tail).

What a full integration into vkml's IR would need (DESIGN §1 layers): matrix types of workgroup
scope with flexible sizes (codegen knows them for the matmul, kernels/matmul/coopmat2.py), plus IR
instructions for (a) a row reduction of an accumulator matrix into a matrix of a given column count
with a combine function (max, add, "any" for widening), (b) a per-element map over one or more
matrices of one shape whose body is IR evaluated on (row, column, elements...) — emitted as a
SPIR-V function, interpreted on the CPU by looping rows and columns, (c) element-wise matrix
arithmetic (mul, add, sub, div, times scalar) and (d) accumulator → A/B conversion with a type
change; tensor loads through a transposing view and stores through a clipping view. The CPU
interpreter (the IR's definition) needs each of them with a fixed element order for the reduction
so that the device's bits stay within the attention page's bound rather than equal (extra/cm2_interp.py
sketches those semantics in numpy, tensor addressing included); the verifier
needs the uniform-control-flow rule for these tangled instructions. A kernel then replaces
attention_coopmat.py's shared-memory round trips where the device reports the features. That is now
vkml/kernels/attention_cm2.py (the "64x64 t128 m16" config with ``sw``; the IR's ``cm_reduce_rows``,
``cm_map``, ``cm_convert``, ``cm_scale``/``cm_mul`` and the transposed and row-clipped tensor accesses);
bench/bench_attention.py --matrices-only times it through the public API against the subgroup-scope kernel.

Assembled and validated by the cmeel spirv-as / spirv-val that vkml uses; tests/test_proto_flash_cm2.py
does that on every machine and runs the module text on that interpreter against the float64
reference. On a device with VK_NV_cooperative_matrix2 and its reduction, conversion and
per-element features: per shape and exp a float64 check at small sizes (largest
error over vkml's attention bound, out and lse; must stay ≤ 1), then per size the median GPU time of
``--repeats`` dispatches (GPU timestamps, as extra/proto_coopmat2.py), TFLOP/s (4·B·H·T²·D, halved
for causal) and the ratio to PyTorch's F.scaled_dot_product_attention timed in the same run where
torch has CUDA. Without the extension (lavapipe) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flash_cm2_spirv import (  # noqa: E402
    ALL_EXPS,
    EXPS,
    Config,
    Problem,
    block_of,
    grid,
    key_blocks,
    module_text,
    probe_text,
    shape_problem,
    spirv,
)
from proto_coopmat2 import Runner, pipeline_statistics  # noqa: E402
from proto_coopmat2 import device_problem as coopmat2_device_problem  # noqa: E402

__all__ = ["EXPS", "Config", "Problem", "block_of", "grid", "key_blocks", "module_text", "probe_text", "spirv"]

FEATURES = (
    "cooperativeMatrixWorkgroupScope",
    "cooperativeMatrixFlexibleDimensions",
    "cooperativeMatrixTensorAddressing",
    "cooperativeMatrixReductions",
    "cooperativeMatrixConversions",
    "cooperativeMatrixPerElementOperations",
)

DEFAULT_CONFIGS = tuple(
    Config.parse(text)
    for text in (
        "64x64 t128",
        "64x64 t256",
        "128x64 t256",
        "64x128 t128",
        "64x64 t128 mma",
        "128x64 t256 mma",
        "64x64 t128 m16",
        "128x64 t256 m16",
        "128x64 t256 mma m16",
    )
)
DEFAULT_PROBLEMS = tuple(
    Problem.parse(text) for text in ("B4 H8 T1024 D64", "B4 H8 T4096 D64 causal", "B4 H16 T4096 D128")
)


# ---------------------------------------------------------------------------- host-side references


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool):
    """``(out, lse, out_bound, lse_bound)`` in float64 for (…, T, D) inputs, scale 1/√D.

    The bounds are vkml's attention page's (vkml/kernels/attention_coopmat.py ``bound``) for the output;
    for the lse, the weights' and scores' parts of it plus the rounding of a float32 result.
    """
    from vkml.kernels.attention_coopmat import bound

    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    seq, dim = q.shape[-2:]
    scale = 1 / math.sqrt(dim)
    allowed = np.tril(np.ones((seq, seq), bool)) if causal else np.ones((seq, seq), bool)
    s = np.where(allowed, scale * (q @ np.swapaxes(k, -1, -2)), -np.inf)
    top = s.max(-1, keepdims=True)
    e = np.exp(s - top)
    total = e.sum(-1, keepdims=True)
    w = e / total
    out, lse = w @ v, (top + np.log(total))[..., 0]
    c_w, c_s, c_v = bound(dim)
    magnitude = scale * (np.abs(q) @ np.swapaxes(np.abs(k), -1, -2)).max(-1, keepdims=True)
    spread = np.abs(out.astype(np.float16))
    ulp = (np.nextafter(spread, np.float16(np.inf)) - spread).astype(np.float64)
    out_bound = (c_w + c_s * magnitude) * (w @ np.abs(v)) + c_v * (allowed @ np.abs(v)) + ulp / 2
    lse_bound = (c_w + c_s * magnitude)[..., 0] + 2.0**-23 * np.abs(lse)
    return out, lse, out_bound, lse_bound


def emulate(config: Config, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool):
    """``(out, lse)``: the kernel's steps in numpy float32 for (T, D) inputs — the same blocks visited
    (``key_blocks``), the same masking and online-softmax updates, P rounded to float16 for P V (and for
    the row sum with ``config.ones``) — to check the schedule and the algebra on the host."""
    seq, dim = q.shape
    scale = np.float32(1 / math.sqrt(dim))
    padded = -(-seq // math.lcm(config.br, config.bc)) * math.lcm(config.br, config.bc)
    q, k, v = (np.concatenate([x, np.zeros((padded - seq, dim), x.dtype)]) for x in (q, k, v))  # as loads past T
    out, lse = np.zeros((padded, dim), np.float16), np.zeros(padded, np.float32)
    for q0 in range(0, seq, config.br):
        qf = q[q0 : q0 + config.br].astype(np.float32)
        o = np.zeros((config.br, dim), np.float32)
        m = np.full((config.br, 1), -np.inf, np.float32)
        l = np.zeros((config.br, 1), np.float32)
        whole, end = key_blocks(config, seq, q0, causal)
        for j in range(end):
            k0 = j * config.bc
            s = (qf @ k[k0 : k0 + config.bc].astype(np.float32).T) * scale
            if j >= whole:  # a block the diagonal crosses, or the one holding T
                keys, queries = np.arange(k0, k0 + config.bc)[None, :], np.arange(q0, q0 + config.br)[:, None]
                s = np.where(((keys > queries) & causal) | (keys >= seq), np.float32(-np.inf), s)
            m_new = np.maximum(m, s.max(1, keepdims=True))
            p, alpha = np.exp(s - m_new), np.exp(m - m_new)
            weights = p.astype(np.float16).astype(np.float32)  # what multiplies V (and sums, with ``ones``)
            l = l * alpha + (weights if config.ones else p).sum(1, keepdims=True, dtype=np.float32)
            o = o * alpha + weights @ v[k0 : k0 + config.bc].astype(np.float32)
            m = m_new
        out[q0 : q0 + config.br] = (o / l).astype(np.float16)
        lse[q0 : q0 + config.br] = (m + np.log(l))[:, 0]
    return out[:seq], lse[:seq]


# ---------------------------------------------------------------------------- on a device


def device_problem(device) -> str | None:
    """Why ``device`` cannot run the prototype (None: it can): the matmul prototype's check with these features."""
    return coopmat2_device_problem(device, FEATURES)


def flexible_problem(config: Config, problem: Problem, flexible: list[dict], max_dimension: int) -> str | None:
    """Why the driver's flexible-dimension list rules out ``config``'s two products (None: an entry allows them)."""
    wanted = {"a": "float16", "b": "float16", "c": "float32", "result": "float32", "scope": "workgroup"}
    entries = [e for e in flexible if all(e.get(key) == value for key, value in wanted.items())]
    if not entries:
        return "no workgroup-scope float16 × float16 → float32 entry"
    br, bc, d = config.br, config.bc, problem.dim
    if max_dimension and max(br, bc, d) > max_dimension:
        return f"a dimension above cooperativeMatrixFlexibleDimensionsMaxDimension {max_dimension}"
    for e in entries:  # S = Q Kᵀ is br×bc×d, P V is br×d×bc, the row state br×(state or bc)
        fits = br % e["m"] == 0 and bc % e["n"] == 0 and d % e["k"] == 0 and d % e["n"] == 0 and bc % e["k"] == 0
        fits = fits and (config.state or bc) % e["n"] == 0
        if fits and e["workgroup_invocations"] == config.threads:
            return None
    return f"no entry with {config.threads} invocations whose granularity divides {br}×{bc}×{d}"


def attention(runner: Runner, config: Config, problem: Problem, q, k, v, repeats: int):
    """``(out, lse, per-dispatch seconds)`` of the kernel on (B, H, T, D) float16 arrays."""
    from vkml.ir import types as T
    from vkml.runtime.vulkan.kernel_cache import KernelBinary

    device = runner.device
    rows = problem.batch * problem.heads * problem.seq
    buffers = [device.allocate(T.float16, rows * problem.dim) for _ in range(4)] + [device.allocate(T.float32, rows)]
    for buffer, array in zip(buffers, (q, k, v)):
        device.upload(buffer, np.ascontiguousarray(array))
    if any(buffer.binding[1] % 16 for buffer in buffers):  # tensor loads want 16-byte aligned pointers
        raise SystemExit("a buffer is not 16-byte aligned")
    binary = KernelBinary(spirv=spirv(config, problem), push_constants=(), push_size=0)
    pipeline = device.pipelines.create(f"proto_flash_cm2_{config.br}x{config.bc}", len(buffers), binary)
    runner.statistics = pipeline_statistics(device, pipeline)
    seconds = runner.run(pipeline, buffers, grid(config, problem), repeats)
    out = device.download(buffers[3]).reshape(q.shape)
    return out, device.download(buffers[4]).reshape(q.shape[:-1]), seconds


def operands(rng: np.random.Generator, problem: Problem) -> tuple[np.ndarray, ...]:
    shape = (problem.batch, problem.heads, problem.seq, problem.dim)
    return tuple(rng.standard_normal(shape, dtype=np.float32).astype(np.float16) for _ in range(3))


def check(runner: Runner, config: Config, problem: Problem, rng) -> tuple[float, float]:
    """(out error / bound, lse error / bound), the largest over every element of ``problem``."""
    q, k, v = operands(rng, problem)
    out, lse, _ = attention(runner, config, problem, q, k, v, 1)
    exact, exact_lse, out_bound, lse_bound = reference(q, k, v, problem.causal)
    out_ratio = np.abs(out.astype(np.float64) - exact) / out_bound
    lse_ratio = np.abs(lse.astype(np.float64) - exact_lse) / lse_bound
    return float(np.nan_to_num(out_ratio, nan=np.inf).max()), float(np.nan_to_num(lse_ratio, nan=np.inf).max())


def check_problems(problems) -> list[Problem]:
    """A small problem per (D, causal) of ``problems`` (several blocks of queries and keys, two heads), and
    a ragged one (T a multiple of no block: clamped loads, a masked tail block, clipped stores)."""
    kinds = dict.fromkeys((p.dim, p.causal) for p in problems)
    return [*(Problem(1, 2, 512, dim, causal) for dim, causal in kinds), Problem(1, 2, 300, problems[0].dim)]


def torch_seconds(problems, repeats: int) -> dict[Problem, float]:
    """PyTorch CUDA's float16 F.scaled_dot_product_attention median GPU seconds per problem; {} without CUDA."""
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    from bench_timing import time_torch

    cuda, found = torch.device("cuda"), {}
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for problem in problems:
        shape = (problem.batch, problem.heads, problem.seq, problem.dim)
        q, k, v = (torch.randn(shape, device=cuda, dtype=torch.float16) for _ in range(3))
        call = functools.partial(sdpa, q, k, v, is_causal=problem.causal)
        found[problem] = time_torch(call, cuda, repeats, budget_s=5.0, warmups=3).gpu.median
    torch.cuda.empty_cache()
    return found


def sweep(device, configs, problems, repeats: int, force: bool) -> None:
    from vkml.runtime.vulkan import pipeline_stats

    info = device.logical.info
    flexible = info.cooperative_matrix_flexible
    max_dimension = int(info.properties.get("cooperativeMatrixFlexibleDimensionsMaxDimension", 0))
    print(f"{device.name}: {info.properties.get('deviceName')}; flexible entries:")
    for e in flexible:
        print(
            f"  {e['a']}×{e['b']}→{e['c']}/{e['result']} {e['scope']:9s} granularity "
            f"{e['m']}×{e['n']}×{e['k']}, {e['workgroup_invocations']} invocations"
        )
    peer = torch_seconds(problems, repeats)
    for problem in problems:
        if problem in peer:
            seconds = peer[problem]
            print(f"  PyTorch SDPA {problem}: {seconds * 1e3:.3f} ms, {problem.flops / seconds / 1e12:.1f} TFLOP/s")
    if not peer:
        print("  no CUDA in torch here: no PyTorch figures")
    small = check_problems(problems)
    print("check: out and lse error / bound (at most 1) at " + ", ".join(map(str, small)))
    print("ms: median GPU time of a dispatch; ×torch: PyTorch's time over this kernel's (above 1: faster)")
    print(
        f"{'config':24s} {'check out/lse':>{14 * len(small)}s}"
        + "".join(f" | {p}: ms TFLOP/s ×torch" for p in problems)
    )
    runner, rng = Runner(device), np.random.default_rng(0)
    device.pipelines.capture_statistics = pipeline_stats.supported(device.logical)  # registers, shared memory
    inputs = {problem: operands(rng, problem) for problem in problems}
    for config in configs:
        line = f"{str(config):24s}"
        reasons = [flexible_problem(config, p, flexible, max_dimension) or shape_problem(config, p) for p in small]
        if any(reasons) and not force:
            print(f"{line} skipped: {next(r for r in reasons if r)}", flush=True)
            continue
        try:
            for problem in small:
                out_ratio, lse_ratio = check(runner, config, problem, rng)
                line += f" {f'{out_ratio:.3f}/{lse_ratio:.3f}':>13s}"
            for problem in problems:
                if (
                    why := flexible_problem(config, problem, flexible, max_dimension) or shape_problem(config, problem)
                ) and not force:
                    line += f" | skipped: {why}"
                    continue
                _, _, seconds = attention(runner, config, problem, *inputs[problem], repeats)
                median = statistics.median(seconds)
                ratio = f"{peer[problem] / median:6.2f}" if problem in peer else "     -"
                line += f" | {median * 1e3:8.3f} {problem.flops / median / 1e12:7.1f} {ratio}"
            line += f"  [{runner.statistics}]" if runner.statistics else ""
        except Exception as exc:  # a shape the driver refuses must not end the sweep
            line += f" failed: {type(exc).__name__}: {str(exc)[:300]}"
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", action="append", default=[], help='a problem, e.g. "B4 H8 T4096 D64 causal"')
    parser.add_argument("--shape", action="append", default=[], help='a config, e.g. "128x64 t256" (exp from --exp)')
    parser.add_argument(
        "--exp",
        choices=("hw", "sw", "sw4", "sw3", "both", "all"),
        default="both",
        help="the exp of the weights (both: hw and sw; all: with weight_exp's frame at polynomial degrees 4 and 3)",
    )
    parser.add_argument("--repeats", type=int, default=20, help="dispatches timed per size (the median is shown)")
    parser.add_argument("--force", action="store_true", help="also run configs the flexible-dimension list rules out")
    parser.add_argument("--print-asm", metavar="CONFIG", help="print the SPIR-V of CONFIG at the last --size and exit")
    parser.add_argument("--device", default=None, help="a Vulkan device (default: the best one)")
    args = parser.parse_args()
    problems = [Problem.parse(text) for text in args.size] or list(DEFAULT_PROBLEMS)
    if args.print_asm:
        print(module_text(Config.parse(args.print_asm), problems[-1]))
        return
    exps = {"both": EXPS, "all": ALL_EXPS}.get(args.exp, (args.exp,))
    shapes = [Config.parse(text) for text in args.shape] or list(DEFAULT_CONFIGS)
    configs = [replace(config, exp=exp) for config in shapes for exp in exps]
    for config in configs:  # every module must pass spirv-val, with or without a device
        for problem in [*problems, *check_problems(problems)]:
            if shape_problem(config, problem) is None:
                spirv(config, problem)
    import vkml

    device = vkml.device(args.device) if args.device else vkml.best_device()
    problem = device_problem(device)
    if problem is not None:
        print(f"{problem}: nothing to run. The {len(configs)} configs' modules pass spirv-val.")
        return
    sweep(device, configs, problems, args.repeats, args.force)


if __name__ == "__main__":
    sys.exit(main())
