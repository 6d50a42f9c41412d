"""How much arithmetic a kernel does per element, counted in its IR, as the H200 would run it.

    .venv/bin/python bench/count_instructions.py softmax --shape 8192,8192 --dim 1
    .venv/bin/python bench/count_instructions.py exp --shape 4096

The op's kernels are lowered (not run) on the CPU device with the tuning the H200 gets
(``tuning_from_features(DeviceFeatures.h200_like())``), so the IR is the H200's. Each kernel's
instructions are counted by class, the ``then`` side of an if/else only (the fast side of the
division and the like; per-row stores under a one-lane ``if`` count too, they are few), and
divided by the elements one invocation handles; for rows kernels also the marginal cost of an
element (the difference to a layout with twice the elements a lane). "slots" weighs each class by the issue slots
it takes on Hopper next to a float32 add (CUDA guide, compute capability 9.0: 128 float32
adds, 64 int32 adds/shifts/bit operations, 16 conversions a clock per SM): an IR count that
treats a conversion like an add undercounts it eightfold. Constants and bitcasts are free.
The counts are of IR instructions, before the driver's compiler: it may fold some.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vkml  # noqa: E402
from vkml.cli import _arity, _op_function  # noqa: E402
from vkml.codegen.features import DeviceFeatures  # noqa: E402
from vkml.ir import core  # noqa: E402
from vkml.ir import types as T  # noqa: E402
from vkml.kernels import tuning as kernels_tuning
from vkml.schedule import scheduler as schedule  # noqa: E402

FREE = {"const", "bitcast"}
MEMORY = {"load", "store", "vload", "vstore", "store4", "shared_load", "shared_store", "shared_vstore"}
CONVERSIONS = {"convert", "round_even", "floor", "ceil", "trunc"}
SLOTS = {"float": 1, "int": 2, "logic": 1, "conversion": 8, "memory": 1, "other": 1}


def instruction_class(instr: core.Instr) -> str | None:
    """The throughput class of one IR instruction (None: costs nothing at run time)."""
    if instr.op in FREE or _same_width_int_convert(instr):
        return None
    if instr.op in CONVERSIONS:
        return "conversion"
    if instr.op in MEMORY or "load" in instr.op or "store" in instr.op:
        return "memory"
    operand = instr.args[0].dtype if instr.args else None
    if operand is not None and getattr(operand, "is_float", False):
        return "float"  # float add/mul, compares, isnan, and selects of floats
    if instr.op == "select" and instr.result is not None and instr.result.dtype.is_float:
        return "float"
    if operand is not None and operand.is_int:
        return "int"
    if operand is not None and operand is T.bool_:
        return "logic"  # predicate and/or/not
    return "other"  # ids, barriers, shuffles


def _same_width_int_convert(instr: core.Instr) -> bool:
    """A convert between integers of one width: codegen emits a bitcast."""
    if instr.op != "convert":
        return False
    src, dst = instr.args[0].dtype, instr.result.dtype
    return src.is_int and dst.is_int and src.nbytes == dst.nbytes


def fast_path(block: core.Block):
    """The instructions of ``block``, taking only the ``then`` side of each if/else."""
    for stmt in block.body:
        if isinstance(stmt, core.Instr):
            yield stmt
        elif isinstance(stmt, core.If):
            yield from fast_path(stmt.then)
        elif isinstance(stmt, core.Loop):
            yield from fast_path(stmt.body)


def count(kernel: core.Kernel) -> Counter:
    """Instructions of ``kernel``'s fast path by class, with the IR opcodes of the costly ones."""
    out = Counter()
    for instr in fast_path(kernel.body):
        cls = instruction_class(instr)
        if cls is not None:
            out[cls] += 1
            if cls == "conversion":
                out[f"  {instr.op}"] += 1
    return out


def h200_dispatches(op: str, shape: tuple, dim: int | None, row_lanes: int | None = None) -> list:
    """What ``op`` dispatches on ``shape`` with the H200's tuning (``row_lanes``: a rows kernel of that many lanes)."""
    cpu = vkml.device("cpu")
    tuning = kernels_tuning.tuning_from_features(DeviceFeatures.h200_like())
    if row_lanes:
        tuning = kernels_tuning.replace(tuning, row_lanes=row_lanes, reduce_row_per_lane=64)
    kernels_tuning.set_tuning(cpu, tuning)
    try:
        fn = _op_function(op)
        rng = np.random.default_rng(0)
        inputs = [vkml.tensor(rng.standard_normal(shape).astype(np.float32), device=cpu) for _ in range(_arity(op, fn))]
        out = fn(*inputs, **({"dim": dim} if dim is not None else {}))
        dispatches, _, _ = schedule.lower(schedule.Plan([out.node]))
        return dispatches
    finally:
        kernels_tuning.set_tuning(cpu, None)


def per_element(dispatch, numel: int) -> tuple[Counter, float]:
    """Instruction counts of one invocation and how many elements of ``numel`` it handles."""
    invocations = int(np.prod(dispatch.grid)) * dispatch.kernel.local_size[0]
    return count(dispatch.kernel), numel / invocations


def _line(counts: dict, divisor: float) -> str:
    classes = {c: n / divisor for c, n in counts.items() if not c.startswith(" ")}
    slots = sum(SLOTS[c] * n for c, n in classes.items())
    costly = ", ".join(f"{c.strip()} {n / divisor:.2f}" for c, n in counts.items() if c.startswith(" "))
    text = ", ".join(f"{c} {n:.2f}" for c, n in classes.items())
    return f"{text}{f' ({costly})' if costly else ''}; {sum(classes.values()):.1f} instructions, {slots:.1f} slots"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("op", help="op name (registry or composite, as vkml-dump-spirv takes)")
    parser.add_argument("--shape", default="8192,8192", help="input shape, comma separated")
    parser.add_argument("--dim", type=int, help="dim argument for reductions and softmax-like ops")
    args = parser.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split(","))
    numel = int(np.prod(shape))
    dispatches = h200_dispatches(args.op, shape, args.dim)
    # The same op with rows kernels of half the lanes, twice the elements each: the difference
    # is what one more element costs, the row's share (trees, per-row values) left out.
    halved = h200_dispatches(args.op, shape, args.dim, row_lanes=256) if len(shape) > 1 else []
    for i, d in enumerate(dispatches):
        counts, elements = per_element(d, numel)
        print(f"kernel {d.kernel.name}: local size {d.kernel.local_size[0]}, {elements:g} elements an invocation")
        print(f"  per element, the row's share included: {_line(counts, elements)}")
        if i < len(halved) and halved[i].kernel.local_size != d.kernel.local_size:
            wide, wide_elements = per_element(halved[i], numel)
            extra = Counter({c: wide[c] - counts[c] for c in wide | counts})
            print(f"  per element, marginal: {_line(extra, wide_elements - elements)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
