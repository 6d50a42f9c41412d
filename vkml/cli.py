"""``vkml-dump-spirv``: show the IR and the annotated SPIR-V of vkml's kernels.

    vkml-dump-spirv add --shape 64,128 --dtype float32
    vkml-dump-spirv sum --shape 1000 --device vulkan:0
    vkml-dump-spirv --ir-file kernel.vkir
    vkml-dump-spirv --run script.py

The SPIR-V printed is exactly what vkml assembles and validates (it re-assembles with
``spirv-as``). Without a Vulkan device the code is generated for lavapipe's features.
Set ``VKML_DUMP_SPIRV=DIR`` to write every kernel vkml compiles (IR, .spvasm, .spv) into DIR.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import runpy
import sys
from pathlib import Path

import numpy as np

import vkml
import vkml.ir

from . import debug
from .codegen import compile_kernel
from .codegen.features import DeviceFeatures
from .frontend import operators as functions
from .graph import build as lazy
from .ops.registry import REGISTRY
from .schedule import scheduler as schedule

EXAMPLES = """examples:
  vkml-dump-spirv add --shape 64,128 --dtype float32          # an elementwise op's kernel
  vkml-dump-spirv softmax --shape 8,1000 --dim 1               # every kernel a composite op makes
  vkml-dump-spirv matmul --shape 32,64 --device vulkan:0       # for one device's features
  vkml-dump-spirv --ir-file k.vkir                             # a kernel written in the IR text form
  vkml-dump-spirv --run train.py                               # every kernel a script runs
  VKML_DUMP_SPIRV=out/ python train.py                         # write IR, .spvasm, .spv of each compiled kernel

OP is any name in vkml's op registry (docs/ops/), a composite such as softmax or matmul,
or module:function for a custom op.
"""


def _features(device_name: str | None):
    if device_name and device_name != "cpu":
        return vkml.device(device_name).features
    reports = vkml.vulkan_device_reports()
    if device_name is None and reports:
        return vkml.best_device().features
    return DeviceFeatures.lavapipe_like()


def _op_function(name: str):
    if ":" in name:
        module, _, attr = name.partition(":")
        sys.path.insert(0, str(Path.cwd()))
        return getattr(importlib.import_module(module), attr)  # lazy: names given at run time (the user's)
    for space in (vkml, vkml.nn.functional if hasattr(vkml, "nn") else None):
        if space is not None and hasattr(space, name):
            return getattr(space, name)
    if name in REGISTRY:
        return lambda *xs: functions._wrap(lazy.elementwise(name, [x.node for x in xs]))
    raise SystemExit(f"vkml-dump-spirv: unknown op {name!r} (see docs/ops/ for the list)")


def _arity(name: str, fn) -> int:
    op = REGISTRY.get(name)
    if op is not None and op.body is not None:
        return op.body.__code__.co_argcount
    if ":" in name:  # a custom op or kernel: its inputs are the parameters without defaults
        return sum(p.default is p.empty for p in inspect.signature(fn).parameters.values())
    if name in ("matmul", "maximum", "minimum", "add", "sub", "mul", "div", "pow"):
        return 2
    return 1


def _kernels_of_op(args) -> list:
    shape = tuple(int(s) for s in args.shape.split(",")) if args.shape else (16,)
    dtype = vkml.ir.types.by_name(args.dtype)
    fn = _op_function(args.op)
    n_in = _arity(args.op, fn)
    rng = np.random.default_rng(0)
    inputs = []
    for i in range(n_in):
        s = shape if args.op != "matmul" or i == 0 else tuple(reversed(shape[-2:]))
        inputs.append(vkml.tensor(rng.standard_normal(s).astype(dtype.value_np), dtype=dtype))
    kwargs = {"dim": args.dim} if args.dim is not None else {}
    out = fn(*inputs, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    plan = schedule.Plan([o.node for o in outs])
    dispatches, _, _ = schedule.lower(plan)
    return [d.kernel for d in dispatches]


def print_kernel(kernel, features, out=None) -> None:
    out = out or sys.stdout
    compiled = compile_kernel(kernel, features)
    out.write(f"; ==== kernel {kernel.name} ====\n; ---- IR ----\n")
    out.write("".join(f"; {line}".rstrip() + "\n" for line in str(kernel).splitlines()))
    out.write(f"; ---- SPIR-V ({len(compiled.spirv)} bytes, validated) ----\n")
    out.write(compiled.asm)
    if not compiled.asm.endswith("\n"):
        out.write("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="vkml-dump-spirv",
        description="Print the kernel IR and the annotated SPIR-V assembly vkml generates.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("op", nargs="?", help="op name (registry or composite) or module:function")
    parser.add_argument("--shape", help="input shape, comma separated (default 16)")
    parser.add_argument("--dtype", default="float32", help="input dtype (default float32)")
    parser.add_argument("--dim", type=int, help="dim argument for reductions and softmax-like ops")
    parser.add_argument("--device", help="generate for this device's features (default: best Vulkan device)")
    parser.add_argument("--ir-file", help="compile a kernel written in the IR text form")
    parser.add_argument("--run", metavar="SCRIPT", help="run a Python script and print every kernel it dispatches")
    args = parser.parse_args(argv)
    features = _features(args.device)

    if args.ir_file:
        kernels = [vkml.ir.parse(Path(args.ir_file).read_text())]
    elif args.run:
        seen, kernels = set(), []

        def collect(kernel):
            text = str(kernel)
            if text not in seen:
                seen.add(text)
                kernels.append(kernel)

        debug.kernel_listeners.append(collect)
        sys.argv = [args.run]
        try:
            runpy.run_path(args.run, run_name="__main__")
        finally:
            debug.kernel_listeners.remove(collect)
    elif args.op:
        kernels = _kernels_of_op(args)
    else:
        parser.print_help()
        return 2
    for k in kernels:
        print_kernel(k, features)
    return 0


if __name__ == "__main__":
    sys.exit(main())
