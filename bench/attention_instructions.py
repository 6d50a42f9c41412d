"""Instructions the fused attention kernels execute per (query row, key) pair, counted in their IR.

    .venv/bin/python bench/attention_instructions.py                 # E = Ev = 64, both forward kernels
    .venv/bin/python bench/attention_instructions.py --dim 32 --subgroup 32
    .venv/bin/python bench/attention_instructions.py --cm2          # the cm2 flash kernel's forms (float16)

The kernels are built (not run) for a long sequence, and the body of the loop over key blocks (query blocks
for dK/dV: the loop with a barrier in its own body) is counted with each inner loop of constant trip count taken that many times, the ``then`` side
of each if, summed over the workgroup's invocations and divided by the (query row, key) pairs one block
covers. The classes are bench/count_instructions.py's ("slots" weighs them by Hopper's issue rates);
"barriers" counts workgroup barriers per pair and "shared" the shared-memory loads and stores among the
memory instructions. ``--subgroup`` is the shuffle width (32 on NVIDIA, 8 on lavapipe): a narrower one takes
the row combines through shared memory, with a barrier.

``--cm2`` counts vkml/kernels/attention_cm2.py's kernel (each ``CM2_FORMS`` entry of bench_attention.py) per
(query row, key) pair of its unmasked key-block loop: the per-element functions' IR instructions times the
elements they run on (the scores' 64×64 and the row state's 64×16 per block), the element-wise matrix
instructions (one per element) and the elements the row reductions combine. The SPIR-V a device without
DenormPreserve gets (the H200) adds ~20 instructions per float32 comparison, which the IR count does not show:
"spirv" counts the functions' instructions in the SPIR-V for H200-like features.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from count_instructions import SLOTS, instruction_class  # noqa: E402

from vkml.codegen import compile_kernel  # noqa: E402
from vkml.codegen.features import DeviceFeatures  # noqa: E402
from vkml.ir import core  # noqa: E402
from vkml.ir import types as T  # noqa: E402
from vkml.kernels import attention as fused  # noqa: E402
from vkml.kernels import attention_backward as fused_backward  # noqa: E402
from vkml.kernels import attention_cm2  # noqa: E402


def _constants(block: core.Block, found: dict) -> dict:
    for stmt in block.body:
        if isinstance(stmt, core.Instr) and stmt.op == "const":
            found[id(stmt.result)] = stmt.attrs[0]
        elif isinstance(stmt, core.If):
            _constants(stmt.then, found)
            if stmt.orelse is not None:
                _constants(stmt.orelse, found)
        elif isinstance(stmt, core.Loop):
            _constants(stmt.body, found)
    return found


def executed(block: core.Block, constants: dict, times: int = 1, out: Counter | None = None) -> Counter:
    """Instructions by class of ``block`` run ``times`` times, inner loops of constant bounds unrolled."""
    out = Counter() if out is None else out
    for stmt in block.body:
        if isinstance(stmt, core.Instr):
            cls = instruction_class(stmt)
            if cls is not None:
                out[cls] += times
            if stmt.op == "barrier":
                out["barriers"] += times
            if stmt.op.startswith("shared"):
                out["shared"] += times
        elif isinstance(stmt, core.If):
            executed(stmt.then, constants, times, out)
        elif isinstance(stmt, core.Loop):
            bounds = [constants.get(id(v)) for v in (stmt.start, stmt.end, stmt.step)]
            bounds = [None if b is None else int(b) for b in bounds]
            trips = -(-(bounds[1] - bounds[0]) // bounds[2]) if None not in bounds else 1
            executed(stmt.body, constants, times * trips, out)
    return out


def block_loop(block: core.Block) -> core.Loop | None:
    """The loop with a barrier in its own body (the walk over key or query blocks)."""
    for stmt in block.body:
        if isinstance(stmt, core.Loop):
            if any(isinstance(s, core.Instr) and s.op == "barrier" for s in stmt.body.body):
                return stmt
            inner = block_loop(stmt.body)
        elif isinstance(stmt, core.If):
            inner = block_loop(stmt.then)
        else:
            continue
        if inner is not None:
            return inner
    return None


def per_pair(kernel: core.Kernel, pairs: int) -> Counter:
    """Instructions of one block's loop body over the workgroup, per (query row, key) pair it covers."""
    constants = _constants(kernel.body, {})
    counts = executed(block_loop(kernel.body).body, constants, kernel.local_size[0])
    barriers = counts.pop("barriers", 0) / kernel.local_size[0]
    result = Counter({c: n / pairs for c, n in counts.items()})
    result["barriers"] = barriers / pairs
    return result


def line(label: str, counts: Counter) -> str:
    classes = {c: n for c, n in counts.items() if c in SLOTS}
    slots = sum(SLOTS[c] * n for c, n in classes.items())
    text = ", ".join(f"{c} {n:.2f}" for c, n in classes.items())
    return (
        f"{label:25s} {sum(classes.values()):6.1f} instructions, {slots:6.1f} slots, shared {counts['shared']:.2f},"
        f" barriers {counts['barriers']:.4f} ({text})"
    )


def shape_of(dim: int, subgroup: int, tiled: bool) -> fused.AttentionShape:
    seq = 4096
    operand = fused.Operand((seq * dim,), (1,))
    return fused.AttentionShape(
        T.float32, (8,), seq, seq, dim, dim, operand, operand, operand, subgroup=subgroup, tiled=tiled
    )


def _loops_block(block: core.Block) -> core.Block | None:
    """The block that holds the key-block loops."""
    for stmt in block.body:
        if isinstance(stmt, core.Loop):
            return block
        if isinstance(stmt, core.If):
            found = _loops_block(stmt.then)
            if found is not None:
                return found
    return None


def _first_loop(block: core.Block) -> core.Loop:
    return next(s for s in _loops_block(block).body if isinstance(s, core.Loop))


def _elements(value: core.Value) -> int:
    return value.dtype.rows * value.dtype.cols


def _spirv_function_sizes(asm: str) -> list[int]:
    """Instructions (bitcasts, labels, parameters and returns aside) of each per-element function in ``asm``."""
    sizes = []
    for body in asm.split("element_function = OpFunction ")[1:]:
        lines = [line.strip() for line in body.split("OpFunctionEnd")[0].splitlines()[1:]]
        skipped = ("OpLabel", "OpFunctionParameter", "OpReturn", "OpBitcast")
        sizes.append(
            sum(1 for line in lines if line and not line.startswith(";") and not any(s in line for s in skipped))
        )
    return sizes


def cm2_per_pair(kernel: core.Kernel, config: attention_cm2.Config) -> tuple[Counter, list[tuple[int, int]]]:
    """The unmasked key-block loop's work per (query row, key) pair, and (elements, IR instructions) per map."""
    return _matrix_work(_first_loop(kernel.body).body.body, config.rows * config.keys)


def cm2_epilogue(kernel: core.Kernel, config: attention_cm2.Config, value_dim: int) -> Counter:
    """The work after the key-block loops (out = O / l, the log-sum-exp) per output element."""
    body = _loops_block(kernel.body).body
    last = max(i for i, s in enumerate(body) if isinstance(s, core.Loop))
    return _matrix_work(body[last + 1 :], config.rows * value_dim)[0]


def _matrix_work(statements, per: int) -> tuple[Counter, list[tuple[int, int]]]:
    counts, maps = Counter(), []
    pairs = per
    for stmt in statements:
        if not isinstance(stmt, core.Instr):
            continue
        if stmt.op == "cm_map":
            function = executed(stmt.attrs[0].body, _constants(stmt.attrs[0].body, {}))
            n = _elements(stmt.result)
            maps.append((n, sum(v for c, v in function.items() if c in SLOTS)))
            for c, v in function.items():
                counts[c] += v * n / pairs
        elif stmt.op in ("cm_mul", "cm_scale", "cm_add", "cm_sub"):
            counts["float"] += _elements(stmt.result) / pairs
        elif stmt.op == "cm_convert":
            counts["conversion"] += _elements(stmt.result) / pairs
        elif stmt.op == "cm_reduce_rows":
            counts["reduced"] += _elements(stmt.args[0]) / pairs
    return counts, maps


def cm2_main(dim: int) -> None:
    from bench_attention import CM2_FORMS

    seq = 4096
    operand = fused.Operand((seq * dim,), (1,))
    shape = fused.AttentionShape(T.float16, (8,), seq, seq, dim, dim, operand, operand, operand)
    print(f"cm2 kernel, E = Ev = {dim}: per (query row, key) pair of an unmasked key block")
    for label, config in CM2_FORMS:
        if label.endswith("DontUnroll") or "to the driver" in label:
            continue  # the same instructions as another form; only the loop control differs
        kernel = attention_cm2.forward_kernel(shape, config)
        counts, maps = cm2_per_pair(kernel, config)
        classes = {c: n for c, n in counts.items() if c in SLOTS}
        slots = sum(SLOTS[c] * n for c, n in classes.items())
        text = ", ".join(f"{c} {n:.2f}" for c, n in classes.items())
        spirv = _spirv_function_sizes(compile_kernel(kernel, DeviceFeatures.h200_like()).asm)
        print(
            f"{label:27s} {sum(classes.values()):6.2f} instructions, {slots:6.2f} slots ({text}); "
            f"reductions combine {counts['reduced']:.2f} elements"
        )
        epilogue = cm2_epilogue(kernel, config, dim)
        print(
            f"{'':27s} after the loops, per output element: "
            f"{sum(v for c, v in epilogue.items() if c in SLOTS):.2f} instructions"
        )
        functions = ", ".join(f"{n} on {e}" for e, n in maps)
        print(f"{'':27s} per-element functions (IR instructions on elements a block): {functions}")
        print(f"{'':27s} the same in the SPIR-V for H200-like features: {', '.join(map(str, spirv[: len(maps)]))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=64, help="head dim E = Ev")
    parser.add_argument("--subgroup", type=int, default=32, help="shuffle levels (32: NVIDIA, 8: lavapipe)")
    parser.add_argument("--cm2", action="store_true", help="the cm2 flash kernel's forms (float16) instead")
    args = parser.parse_args()
    if args.cm2:
        cm2_main(args.dim)
        return
    sub = min(args.subgroup, fused.LANES)
    print(f"E = Ev = {args.dim}, subgroup {args.subgroup}: per (query row, key) pair")
    old = shape_of(args.dim, sub, False)
    print(line("forward (untiled)", per_pair(fused.forward_kernel(old), fused.ROWS * fused.LANES)))
    dq, dkv = fused_backward.query_kernel(old), fused_backward.key_kernel(old)
    print(line("backward dQ (untiled)", per_pair(dq, fused.ROWS * fused.LANES)))
    print(line("backward dK dV (untiled)", per_pair(dkv, fused.ROWS * fused.LANES)))
    os.environ["VKML_ATTENTION_TILED"] = "1"
    if fused.tiled_applies(args.dim, args.dim):
        new = shape_of(args.dim, sub, True)
        print(line("forward (tiled)", per_pair(fused.forward_kernel(new), fused.BLOCK_ROWS * fused.BLOCK_KEYS)))
    if fused_backward.tiled(new):
        dq, dkv = fused_backward.tiled_query_kernel(new), fused_backward.tiled_key_kernel(new)
        print(line("backward dQ (tiled)", per_pair(dq, fused_backward.DQ_ROWS * fused_backward.DQ_KEYS)))
        pairs = fused_backward.DKV_KEYS * fused_backward.DKV_QUERIES
        print(line("backward dK dV (tiled)", per_pair(dkv, pairs)))


if __name__ == "__main__":
    main()
