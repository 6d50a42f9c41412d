"""Prototype: the float16 flash-attention forward on VK_NV_cooperative_matrix2, timed against PyTorch's.

    python3 extra/proto_flash_cm2.py                                  # default shapes × both exps, default sizes
    python3 extra/proto_flash_cm2.py --size "B4 H8 T4096 D64 causal" --shape "128x64 t256" --exp sw
    python3 extra/proto_flash_cm2.py --print-asm "64x64 t128 sw"      # the SPIR-V text, no device needed

out = softmax(Q Kᵀ·scale [+ causal mask]) V and lse = the row's log-sum-exp (float32), for float16 Q, K,
V, out of shape (B, H, T, D), scale 1/√D, T a multiple of both block sizes. Every size is baked into
the module. Design, one workgroup of ``t`` invocations per ``Br`` query rows of one (b, h), all of its
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
so that the device's bits stay within the attention page's bound rather than equal; the verifier
needs the uniform-control-flow rule for these tangled instructions. A kernel then replaces
attention_coopmat.py's shared-memory round trips where the device reports the features.

Assembled and validated by the cmeel spirv-as / spirv-val that vkml uses (tests/test_proto_flash_cm2.py
does that on every machine). On a device with VK_NV_cooperative_matrix2 and its reduction,
conversion and per-element features: per shape and exp a float64 check at a small size (largest
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
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vkml.codegen.tools import assemble_and_validate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proto_coopmat2 import USE, WORKGROUP_SCOPE, Runner, pipeline_statistics  # noqa: E402

EXTENSION = "VK_NV_cooperative_matrix2"
FEATURES = (
    "cooperativeMatrixWorkgroupScope",
    "cooperativeMatrixFlexibleDimensions",
    "cooperativeMatrixTensorAddressing",
    "cooperativeMatrixReductions",
    "cooperativeMatrixConversions",
    "cooperativeMatrixPerElementOperations",
)
EXPS = ("hw", "sw")
LOG2E = float.fromhex("0x1.715476p+0")  # vkml/ops/mathlib/explog.py
ROUNDER = float.fromhex("0x1.8p23")  # vkml/ops/mathlib/bits.py: v + ROUNDER rounds v to an integer
ROUNDER_BITS = 0x4B400000
QUIET_BIT = 0x00400000
# weight_exp's 2^f on [-1/2, 1/2] (vkml/kernels/attention_coopmat.py _EXP2_HALF), Horner from the last.
EXP2_HALF = (
    1.0000001192092896,
    0.6931469440460205,
    0.24022121727466583,
    0.05550742521882057,
    0.009675459936261177,
    0.0013266970636323094,
)


@dataclass(frozen=True)
class Config:
    """One kernel: ``br`` query rows per workgroup, key blocks of ``bc``, ``threads`` invocations, the exp,
    whether the row sum of P is a reduction (default) or a product with a matrix of ones (``mma``: ggml's
    way, the float16 weights on the tensor cores), and the columns of the row state m, l, α (``m16``: 16,
    so α's exp runs on Br×16 elements, not Br×Bc, at the price of widening m' for P; default Bc).
    Parsed from e.g. "64x64 t128" or "128x64 t256 sw mma m16".

    >>> Config.parse("128x64 t256 sw mma m16"), Config.parse("64x64").threads
    (Config(128x64 t256 sw mma m16), 128)
    """

    br: int = 64
    bc: int = 64
    threads: int = 128
    exp: str = "hw"
    ones: bool = False
    state: int = 0  # columns of m, l, α; 0: bc

    def __str__(self) -> str:
        return (
            f"{self.br}x{self.bc} t{self.threads} {self.exp}"
            + (" mma" if self.ones else "")
            + (f" m{self.state}" if self.state else "")
        )

    def __repr__(self) -> str:
        return f"Config({self})"

    @classmethod
    def parse(cls, text: str) -> Config:
        tile, *rest = text.split()
        br, bc = (int(v) for v in tile.split("x"))
        config = cls(br, bc)
        for word in rest:
            if word in EXPS:
                config = replace(config, exp=word)
            elif word == "mma":
                config = replace(config, ones=True)
            elif word.startswith("t"):
                config = replace(config, threads=int(word[1:]))
            elif word.startswith("m") and word[1:].isdigit():
                config = replace(config, state=int(word[1:]))
            else:
                raise ValueError(f"unknown word {word!r} in {text!r} (want e.g. '64x64 t128 sw')")
        return config


@dataclass(frozen=True)
class Problem:
    """The attention's sizes: parsed from e.g. "B4 H8 T4096 D64 causal".

    >>> p = Problem.parse("B4 H8 T4096 D64 causal"); p, p.flops
    (Problem(B4 H8 T4096 D64 causal), 68719476736)
    """

    batch: int
    heads: int
    seq: int
    dim: int
    causal: bool = False

    def __str__(self) -> str:
        return f"B{self.batch} H{self.heads} T{self.seq} D{self.dim}" + (" causal" if self.causal else "")

    def __repr__(self) -> str:
        return f"Problem({self})"

    @classmethod
    def parse(cls, text: str) -> Problem:
        words = text.split()
        sizes = {word[0]: int(word[1:]) for word in words if word != "causal"}
        return cls(sizes["B"], sizes["H"], sizes["T"], sizes["D"], "causal" in words)

    @property
    def flops(self) -> int:
        full = 4 * self.batch * self.heads * self.seq**2 * self.dim
        return full // 2 if self.causal else full

    @property
    def scale(self) -> float:
        return 1 / math.sqrt(self.dim)


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


def shape_problem(config: Config, problem: Problem) -> str | None:
    """Why ``config`` cannot run ``problem`` (None: it can)."""
    if problem.seq % config.br or problem.seq % config.bc:
        return f"T {problem.seq} is not a multiple of {config.br} and {config.bc}"
    return None


class _Module:
    """SPIR-V assembly: body lines with fresh ids, and the constants, types and decorations they need."""

    def __init__(self):
        self.lines: list[str] = []
        self.count = 0
        self.uints: dict[int, str] = {}
        self.ints: dict[int, str] = {}
        self.floats: dict[str, tuple[float, str]] = {}  # by float.hex(): -0.0 and 0.0 are distinct
        self.matrices: dict[tuple, str] = {}
        self.function_types: dict[tuple, str] = {}
        self.exact: list[str] = []  # ids decorated NoContraction

    def u(self, value: int) -> str:
        return self.uints.setdefault(value, f"%u{value}")

    def i(self, value: int) -> str:
        return self.ints.setdefault(value, f"%i{value}")

    def f(self, value: float) -> str:
        return self.floats.setdefault(value.hex(), (value, f"%f{len(self.floats)}"))[1]

    def matrix(self, component: str, rows: int, cols: int, use: str) -> str:
        """The type id of a workgroup-scope matrix (one id per distinct type: SPIR-V forbids duplicates)."""
        return self.matrices.setdefault((component, rows, cols, use), f"%m_{component}_{rows}x{cols}_{use}")

    def function_type(self, result: str, *params: str) -> str:
        return self.function_types.setdefault((result, *params), f"%fn{len(self.function_types)}")

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"%{stem}_{self.count}"

    def op(self, text: str) -> None:
        self.lines.append("        " + text)

    def label(self, name: str) -> None:
        self.lines.append(f"{name} = OpLabel")

    def let(self, stem: str, text: str, exact: bool = False) -> str:
        name = self.fresh(stem)
        self.op(f"{name} = {text}")
        if exact:
            self.exact.append(name)
        return name


# ---------------------------------------------------------------------------- functions the matrix ops call


def _function(t: _Module, name: str, params: list[str], body) -> None:
    """``%name``, a float-valued function of ``params`` (types); ``body(ids)`` emits it and returns the result."""
    t.lines.append(f"{name} = OpFunction %float None {t.function_type('%float', *params)}")
    ids = []
    for kind in params:
        ids.append(t.fresh("arg"))
        t.lines.append(f"{ids[-1]} = OpFunctionParameter {kind}")
    t.label(t.fresh("start"))
    t.op(f"OpReturnValue {body(ids)}")
    t.lines.append("OpFunctionEnd")


def _exp_hw(t: _Module, x: str) -> str:
    """e^x as GLSL.std.450 Exp2(x·log2(e)): the hardware's approximation."""
    return t.let("e", f"OpExtInst %float %glsl Exp2 {t.let('t', f'OpFMul %float {x} {t.f(LOG2E)}')}")


def _exp_sw(t: _Module, x: str) -> str:
    """e^x for x <= 0 with the operations of vkml's ``weight_exp`` (float32, no fused multiply-add)."""
    tt = t.let("t", f"OpFMul %float {x} {t.f(LOG2E)}", exact=True)
    inside = t.let("inside", f"OpFOrdGreaterThan %bool {tt} {t.f(-126.0)}")  # false for -inf and NaN
    reduced = t.let("reduced", f"OpSelect %float {inside} {tt} {t.f(0.0)}")
    shifted = t.let("shifted", f"OpFAdd %float {reduced} {t.f(ROUNDER)}", exact=True)  # round_to_int
    k = t.let("k", f"OpFSub %float {shifted} {t.f(ROUNDER)}", exact=True)
    k_int = t.let("kint", f"OpISub %int {t.let('bits', f'OpBitcast %int {shifted}')} {t.i(ROUNDER_BITS)}")
    frac = t.let("frac", f"OpFSub %float {reduced} {k}", exact=True)
    p = t.f(EXP2_HALF[-1])
    for c in reversed(EXP2_HALF[:-1]):
        p = t.let("p", f"OpFAdd %float {t.let('pf', f'OpFMul %float {p} {frac}', exact=True)} {t.f(c)}", exact=True)
    field = t.let("field", f"OpShiftLeftLogical %int {t.let('biased', f'OpIAdd %int {k_int} {t.i(127)}')} {t.u(23)}")
    scaled = t.let("scaled", f"OpFMul %float {p} {t.let('pow2', f'OpBitcast %float {field}')}", exact=True)
    finite = t.let("finite", f"OpSelect %float {inside} {scaled} {t.f(0.0)}")
    quiet_bits = t.let("qbits", f"OpBitwiseOr %uint {t.let('xbits', f'OpBitcast %uint {x}')} {t.u(QUIET_BIT)}")
    quiet = t.let("quiet", f"OpBitcast %float {quiet_bits}")
    return t.let("e", f"OpSelect %float {t.let('nan', f'OpIsNan %bool {x}')} {quiet} {finite}")


def _functions(t: _Module, config: Config, scale: float) -> None:
    """The combine functions of the reductions and the per-element functions (row, col, elements, extras)."""
    exp = _exp_sw if config.exp == "sw" else _exp_hw
    ff, per = ["%float", "%float"], ["%uint", "%uint"]
    _function(t, "%combine_max", ff, lambda a: t.let("max", f"OpExtInst %float %glsl FMax {a[0]} {a[1]}"))
    _function(t, "%combine_add", ff, lambda a: t.let("sum", f"OpFAdd %float {a[0]} {a[1]}", exact=True))

    def masked_score(a):  # (row, col, s, q0, k0): the key k0 + col after the query q0 + row gets -inf
        after = t.let(
            "after",
            f"OpUGreaterThan %bool {t.let('kp', f'OpIAdd %uint {a[4]} {a[1]}')} "
            f"{t.let('qp', f'OpIAdd %uint {a[3]} {a[0]}')}",
        )
        scaled = t.let("s", f"OpFMul %float {a[2]} {t.f(scale)}", exact=True)
        return t.let("masked", f"OpSelect %float {after} {t.f(-math.inf)} {scaled}")

    _function(t, "%masked_score", [*per, "%float", "%uint", "%uint"], masked_score)
    _function(t, "%larger", [*per, *ff], lambda a: t.let("max", f"OpExtInst %float %glsl FMax {a[2]} {a[3]}"))
    _function(
        t, "%exp_of_difference", [*per, *ff], lambda a: exp(t, t.let("x", f"OpFSub %float {a[2]} {a[3]}", exact=True))
    )

    def log_sum_exp(a):  # (row, col, m, l): m + log(l)
        return t.let("lse", f"OpFAdd %float {a[2]} {t.let('log', f'OpExtInst %float %glsl Log {a[3]}')}", exact=True)

    _function(t, "%log_sum_exp", [*per, *ff], log_sum_exp)


# ---------------------------------------------------------------------------- the kernel


def module_text(config: Config, problem: Problem) -> str:
    """The SPIR-V assembly of ``config``'s kernel for ``problem`` (every size baked in).

    Bindings 0..4 of set 0: Q, K, V, out (float16, (B, H, T, D) contiguous), lse (float32, (B, H, T)).
    Dispatch ``grid(config, problem)`` workgroups along x.
    """
    if (why := shape_problem(config, problem)) is not None:
        raise ValueError(why)
    br, bc, d, seq = config.br, config.bc, problem.dim, problem.seq
    sequences = problem.batch * problem.heads
    query_blocks = seq // br
    t = _Module()
    mat_q, mat_kt = t.matrix("half", br, d, "a"), t.matrix("half", d, bc, "b")
    mat_v, mat_p = t.matrix("half", bc, d, "b"), t.matrix("half", br, bc, "a")
    mat_s, mat_o = t.matrix("float", br, bc, "acc"), t.matrix("float", br, d, "acc")
    mat_out = t.matrix("half", br, d, "acc")
    mat_m = t.matrix("float", br, config.state or bc, "acc")  # m, l, α: every column holds the row's value
    mat_ones = t.matrix("half", bc, config.state or bc, "b") if config.ones else None

    # ---- main: which query block, the layouts, Q
    t.lines += ["%main = OpFunction %void None %fn_main", "%entry = OpLabel"]
    w = t.let("w", f"OpCompositeExtract %uint {t.let('wg', 'OpLoad %v3uint %workgroup_id')} 0")
    if problem.causal:  # as ``block_of``
        order, bh = (t.let(n, f"{op} %uint {w} {t.u(sequences)}") for n, op in (("order", "OpUDiv"), ("bh", "OpUMod")))
        qb = t.let("qb", f"OpISub %uint {t.u(query_blocks - 1)} {order}")
    else:
        bh, qb = (t.let(n, f"{op} %uint {w} {t.u(query_blocks)}") for n, op in (("bh", "OpUDiv"), ("qb", "OpUMod")))
    q0 = t.let("q0", f"OpIMul %uint {qb} {t.u(br)}")  # the block's first query within its sequence
    seq0 = t.let("seq0", f"OpIMul %uint {bh} {t.u(seq)}")  # the sequence's first row in (B·H·T)×D
    row0 = t.let("row0", f"OpIAdd %uint {seq0} {q0}")
    ptr = {
        name: t.let(name, f"OpAccessChain {kind} %{name} {t.u(0)} {t.u(0)}")
        for name, kind in (("Q", "%p_half"), ("K", "%p_half"), ("V", "%p_half"), ("O", "%p_half"), ("LSE", "%p_float"))
    }
    created = t.let("layout", "OpCreateTensorLayoutNV %layout")
    rows = t.let("rows", f"OpTensorLayoutSetDimensionNV %layout {created} {t.u(sequences * seq)} {t.u(d)}")
    column = t.let("column", f"OpTensorLayoutSetDimensionNV %layout {created} {t.u(sequences * seq)} {t.u(1)}")
    transpose = t.let("transpose", "OpCreateTensorViewNV %view_transpose")
    first_column = t.let(
        "col0",
        f"OpTensorViewSetClipNV %view_plain {t.let('plain', 'OpCreateTensorViewNV %view_plain')} "
        f"{t.u(0)} {t.u(br)} {t.u(0)} {t.u(1)}",
    )
    q_slice = t.let("sq", f"OpTensorLayoutSliceNV %layout {rows} {row0} {t.u(br)} {t.u(0)} {t.u(d)}")
    q = t.let("q", f"OpCooperativeMatrixLoadTensorNV {mat_q} {ptr['Q']} %undef_q {q_slice} None None")

    def widen(row_state: str, kind: str) -> str:
        """A matrix of type ``kind`` whose every column holds ``row_state``'s row value (a max of equal values)."""
        if kind == mat_m:
            return row_state
        return t.let("wide", f"OpCooperativeMatrixReduceNV {kind} {row_state} Row %combine_max")

    def block(j: str, o: str, m: str, l: str, masked: bool) -> tuple[str, str, str]:
        """Key block ``j`` of the sequence: (O', m', l') from (O, m, l)."""
        k0 = t.let("k0", f"OpIMul %uint {j} {t.u(bc)}")
        k_slice = t.let(
            "sk",
            f"OpTensorLayoutSliceNV %layout {rows} {t.let('kr', f'OpIAdd %uint {seq0} {k0}')} "
            f"{t.u(bc)} {t.u(0)} {t.u(d)}",
        )
        kt = t.let(
            "kt", f"OpCooperativeMatrixLoadTensorNV {mat_kt} {ptr['K']} %undef_kt {k_slice} None TensorView {transpose}"
        )
        s = t.let("s", f"OpCooperativeMatrixMulAddKHR {mat_s} {q} {kt} %s_start")
        if masked:
            s = t.let("sm", f"OpCooperativeMatrixPerElementOpNV {mat_s} {s} %masked_score {q0} {k0}")
        else:
            s = t.let("ss", f"OpMatrixTimesScalar {mat_s} {s} {t.f(problem.scale)}")
        top = t.let("top", f"OpCooperativeMatrixReduceNV {mat_m} {s} Row %combine_max")
        m_new = t.let("mn", f"OpCooperativeMatrixPerElementOpNV {mat_m} {top} %larger {m}")
        m_wide = widen(m_new, mat_s)
        p = t.let("p", f"OpCooperativeMatrixPerElementOpNV {mat_s} {s} %exp_of_difference {m_wide}")
        alpha = t.let("alpha", f"OpCooperativeMatrixPerElementOpNV {mat_m} {m} %exp_of_difference {m_new}")
        p_a = t.let("pa", f"OpFConvert {mat_p} {p}")
        if config.ones:  # P (float16) times ones: every column of the product is the row sum
            total = t.let("rowsum", f"OpCooperativeMatrixMulAddKHR {mat_m} {p_a} %ones %l_start")
        else:
            total = t.let("rowsum", f"OpCooperativeMatrixReduceNV {mat_m} {p} Row %combine_add")
        l_new = t.let("ln", f"OpFAdd {mat_m} {t.let('la', f'OpFMul {mat_m} {l} {alpha}')} {total}")
        v = t.let("v", f"OpCooperativeMatrixLoadTensorNV {mat_v} {ptr['V']} %undef_v {k_slice} None None")
        wide = widen(alpha, mat_o)
        o_new = t.let(
            "on", f"OpCooperativeMatrixMulAddKHR {mat_o} {p_a} {v} {t.let('os', f'OpFMul {mat_o} {o} {wide}')}"
        )
        return o_new, m_new, l_new

    def loop(stem: str, start: str, end: str, coming_from: str, carried: tuple[str, str, str], masked: bool):
        """Blocks ``start`` ≤ j < ``end`` (a structured loop); returns the carried (O, m, l) and its merge label."""
        header, body, latch, merge = (f"%{stem}_{part}" for part in ("header", "body", "latch", "merge"))
        j, phis = f"%{stem}_j", [f"%{stem}_{name}" for name in ("o", "m", "l")]
        t.op(f"OpBranch {header}")
        t.label(header)
        t.op(f"{j} = OpPhi %uint {start} {coming_from} %{stem}_next {latch}")
        for phi, kind, value in zip(phis, (mat_o, mat_m, mat_m), carried):
            t.op(f"{phi} = OpPhi {kind} {value} {coming_from} {phi}_next {latch}")
        more = t.let("more", f"OpULessThan %bool {j} {end}")
        t.op(f"OpLoopMerge {merge} {latch} None")
        t.op(f"OpBranchConditional {more} {body} {merge}")
        t.label(body)
        for phi, value in zip(phis, block(j, *phis, masked)):
            t.op(f"{phi}_next = OpCopyObject {mat_o if phi.endswith('_o') else mat_m} {value}")
        t.op(f"OpBranch {latch}")
        t.label(latch)
        t.op(f"%{stem}_next = OpIAdd %uint {j} {t.u(1)}")
        t.op(f"OpBranch {header}")
        t.label(merge)
        return tuple(phis), merge

    start = ("%o_start", "%m_start", "%l_start")
    if problem.causal:  # blocks wholly at or before the diagonal, then those it crosses; none after it
        whole = t.let("whole", f"OpUDiv %uint {t.let('q1', f'OpIAdd %uint {q0} {t.u(1)}')} {t.u(bc)}")
        end = t.let("end", f"OpUDiv %uint {t.let('qe', f'OpIAdd %uint {q0} {t.u(br + bc - 1)}')} {t.u(bc)}")
        carried, after = loop("open", t.u(0), whole, "%entry", start, masked=False)
        (o, m, l), _ = loop("diagonal", whole, end, after, carried, masked=True)
    else:
        (o, m, l), _ = loop("open", t.u(0), t.u(seq // bc), "%entry", start, masked=False)

    # ---- out = O / l (float16, to nearest even) and lse = m + log(l) (column 0 only)
    out = t.let("out", f"OpFConvert {mat_out} {t.let('od', f'OpFDiv {mat_o} {o} {widen(l, mat_o)}')}")
    t.op(f"OpCooperativeMatrixStoreTensorNV {ptr['O']} {out} {q_slice} None None")
    lse = t.let("lse", f"OpCooperativeMatrixPerElementOpNV {mat_m} {m} %log_sum_exp {l}")
    lse_slice = t.let("sl", f"OpTensorLayoutSliceNV %layout {column} {row0} {t.u(br)} {t.u(0)} {t.u(1)}")
    t.op(f"OpCooperativeMatrixStoreTensorNV {ptr['LSE']} {lse} {lse_slice} None TensorView {first_column}")
    t.op("OpReturn")
    t.lines.append("OpFunctionEnd")
    _functions(t, config, problem.scale)
    header = _header(t, config, mat_q, mat_kt, mat_v, mat_s, mat_o, mat_m)
    if mat_ones:  # after the matrix types, before the variables
        header.insert(
            header.index("%Q = OpVariable %p_half_block StorageBuffer"),
            f"%ones = OpConstantComposite {mat_ones} %one_half",
        )
        header.insert(header.index("%false = OpConstantFalse %bool"), "%one_half = OpConstant %half 0x1p+0")
    return "\n".join([*header, *t.lines, ""])


def _header(
    t: _Module, config: Config, mat_q: str, mat_kt: str, mat_v: str, mat_s: str, mat_o: str, mat_m: str
) -> list[str]:
    """Capabilities, decorations, types and constants of the module (after the body named them all)."""
    scope, dims, zero, one = t.u(WORKGROUP_SCOPE), t.u(2), t.u(0), t.u(1)
    uses = {name: t.u(USE[name]) for name in USE}
    matrix_sizes = [t.u(v) for _, rows, cols, _ in t.matrices for v in (rows, cols)]
    del matrix_sizes  # named: every uint below is declared
    for value in (-0.0, 0.0, -math.inf):
        t.f(value)
    buffers = ("Q", "K", "V", "O", "LSE")
    return [
        "OpCapability Shader",
        "OpCapability Float16",
        "OpCapability StorageBuffer16BitAccess",
        "OpCapability VulkanMemoryModel",
        "OpCapability RoundingModeRTE",
        "OpCapability CooperativeMatrixKHR",
        "OpCapability CooperativeMatrixReductionsNV",
        "OpCapability CooperativeMatrixConversionsNV",
        "OpCapability CooperativeMatrixPerElementOperationsNV",
        "OpCapability CooperativeMatrixTensorAddressingNV",
        "OpCapability TensorAddressingNV",
        'OpExtension "SPV_KHR_cooperative_matrix"',
        'OpExtension "SPV_NV_cooperative_matrix2"',
        'OpExtension "SPV_NV_tensor_addressing"',
        '%glsl = OpExtInstImport "GLSL.std.450"',
        "OpMemoryModel Logical Vulkan",
        f'OpEntryPoint GLCompute %main "main" {" ".join("%" + b for b in buffers)} %workgroup_id',
        f"OpExecutionMode %main LocalSize {config.threads} 1 1",
        "OpExecutionMode %main RoundingModeRTE 16",  # P and out narrow to float16 to nearest even
        "OpDecorate %workgroup_id BuiltIn WorkgroupId",
        "OpDecorate %rt_half ArrayStride 2",
        "OpDecorate %rt_float ArrayStride 4",
        *(f"OpMemberDecorate %{b}_block 0 Offset 0" for b in ("half", "float")),
        *(f"OpDecorate %{b}_block Block" for b in ("half", "float")),
        *(f"OpDecorate %{b} DescriptorSet 0" for b in buffers),
        *(f"OpDecorate %{b} Binding {i}" for i, b in enumerate(buffers)),
        *(f"OpDecorate %{b} NonWritable" for b in ("Q", "K", "V")),
        *(f"OpDecorate %{b} NonReadable" for b in ("O", "LSE")),
        *(f"OpDecorate {name} NoContraction" for name in t.exact),
        "%void = OpTypeVoid",
        "%fn_main = OpTypeFunction %void",
        "%bool = OpTypeBool",
        "%uint = OpTypeInt 32 0",
        "%int = OpTypeInt 32 1",
        "%half = OpTypeFloat 16",
        "%float = OpTypeFloat 32",
        "%v3uint = OpTypeVector %uint 3",
        *(f"{name} = OpTypeFunction {' '.join(kinds)}" for kinds, name in t.function_types.items()),
        "%rt_half = OpTypeRuntimeArray %half",
        "%rt_float = OpTypeRuntimeArray %float",
        "%half_block = OpTypeStruct %rt_half",
        "%float_block = OpTypeStruct %rt_float",
        "%p_half_block = OpTypePointer StorageBuffer %half_block",
        "%p_float_block = OpTypePointer StorageBuffer %float_block",
        "%p_half = OpTypePointer StorageBuffer %half",
        "%p_float = OpTypePointer StorageBuffer %float",
        "%p_v3uint = OpTypePointer Input %v3uint",
        *(f"{name} = OpConstant %uint {value}" for value, name in sorted(t.uints.items())),
        *(f"{name} = OpConstant %int {value}" for value, name in sorted(t.ints.items())),
        *(f"{name} = OpConstant %float {_float_text(value)}" for value, name in t.floats.values()),
        "%false = OpConstantFalse %bool",
        f"%layout = OpTypeTensorLayoutNV {dims} {zero}",  # whole blocks: no clamping
        f"%view_transpose = OpTypeTensorViewNV {dims} %false {one} {zero}",
        f"%view_plain = OpTypeTensorViewNV {dims} %false {zero} {one}",
        *(
            f"{name} = OpTypeCooperativeMatrixKHR %{component} {scope} {t.u(rows)} {t.u(cols)} {uses[use]}"
            for (component, rows, cols, use), name in t.matrices.items()
        ),
        f"%s_start = OpConstantComposite {mat_s} {t.f(-0.0)}",  # each score's sum starts from -0.0
        f"%o_start = OpConstantComposite {mat_o} {t.f(0.0)}",
        f"%m_start = OpConstantComposite {mat_m} {t.f(-math.inf)}",
        f"%l_start = OpConstantComposite {mat_m} {t.f(0.0)}",
        f"%undef_q = OpUndef {mat_q}",  # what clipped loads would keep: no view here clips
        f"%undef_kt = OpUndef {mat_kt}",
        f"%undef_v = OpUndef {mat_v}",
        *(f"%{b} = OpVariable %p_{'float' if b == 'LSE' else 'half'}_block StorageBuffer" for b in buffers),
        "%workgroup_id = OpVariable %p_v3uint Input",
    ]


def _float_text(value: float) -> str:
    if math.isinf(value):
        return "-0x1p+128" if value < 0 else "0x1p+128"
    return float(np.float32(value)).hex() if value else ("-0x0p+0" if math.copysign(1, value) < 0 else "0x0p+0")


def block_of(w: int, config: Config, problem: Problem) -> tuple[int, int]:
    """Workgroup ``w``'s (sequence b·H + h, query block), as the kernel computes them.

    >>> [block_of(w, Config(64, 64), Problem(1, 2, 128, 64)) for w in range(4)]
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    >>> [block_of(w, Config(64, 64), Problem(1, 2, 128, 64, causal=True)) for w in range(4)]
    [(0, 1), (1, 1), (0, 0), (1, 0)]
    """
    sequences, query_blocks = problem.batch * problem.heads, problem.seq // config.br
    if problem.causal:
        return w % sequences, query_blocks - 1 - w // sequences
    return w // query_blocks, w % query_blocks


def grid(config: Config, problem: Problem) -> int:
    """Workgroups to dispatch (along x): one per query block of each (b, h)."""
    return problem.batch * problem.heads * (problem.seq // config.br)


def spirv(config: Config, problem: Problem) -> bytes:
    """The assembled module; spirv-val (vulkan1.3: SPIR-V 1.6) rejects a bad one with CompileError."""
    return assemble_and_validate(module_text(config, problem), "vulkan1.3")


def probe_text(config: Config, scale: float) -> str:
    """A plain compute shader (no matrices) that calls the kernel's per-element functions, so that any
    Vulkan device checks their bodies: invocation i (64 a workgroup) reads x = X[i], y = Y[i] and writes
    OUT[3i..3i+2] = exp_of_difference(x, y), masked_score(row i % 16, col i / 16 % 16, x, q0 5, k0 3),
    log_sum_exp(x, y). Bindings 0, 1, 2 of set 0: X, Y, OUT (float32)."""
    t = _Module()
    t.lines += ["%main = OpFunction %void None %fn_main", "%entry = OpLabel"]
    i = t.let("i", f"OpCompositeExtract %uint {t.let('id', 'OpLoad %v3uint %global_id')} 0")
    x, y = (t.let(n, f"OpLoad %float {t.let('at', f'OpAccessChain %p_float %{n} {t.u(0)} {i}')}") for n in "XY")
    row = t.let("row", f"OpUMod %uint {i} {t.u(16)}")
    col = t.let("col", f"OpUMod %uint {t.let('c', f'OpUDiv %uint {i} {t.u(16)}')} {t.u(16)}")
    zero = t.u(0)
    calls = (
        f"%exp_of_difference {zero} {zero} {x} {y}",
        f"%masked_score {row} {col} {x} {t.u(5)} {t.u(3)}",
        f"%log_sum_exp {zero} {zero} {x} {y}",
    )
    for slot, call in enumerate(calls):
        index = t.let("slot", f"OpIAdd %uint {t.let('three', f'OpIMul %uint {i} {t.u(3)}')} {t.u(slot)}")
        value = t.let("value", f"OpFunctionCall %float {call}")
        t.op(f"OpStore {t.let('to', f'OpAccessChain %p_float %OUT {t.u(0)} {index}')} {value}")
    t.op("OpReturn")
    t.lines.append("OpFunctionEnd")
    _functions(t, config, scale)
    header = [
        "OpCapability Shader",
        '%glsl = OpExtInstImport "GLSL.std.450"',
        "OpMemoryModel Logical GLSL450",
        'OpEntryPoint GLCompute %main "main" %X %Y %OUT %global_id',
        "OpExecutionMode %main LocalSize 64 1 1",
        "OpDecorate %global_id BuiltIn GlobalInvocationId",
        "OpDecorate %rt_float ArrayStride 4",
        "OpMemberDecorate %float_block 0 Offset 0",
        "OpDecorate %float_block Block",
        *(f"OpDecorate %{b} DescriptorSet 0" for b in ("X", "Y", "OUT")),
        *(f"OpDecorate %{b} Binding {n}" for n, b in enumerate(("X", "Y", "OUT"))),
        *(f"OpDecorate {name} NoContraction" for name in t.exact),
        "%void = OpTypeVoid",
        "%fn_main = OpTypeFunction %void",
        "%bool = OpTypeBool",
        "%uint = OpTypeInt 32 0",
        "%int = OpTypeInt 32 1",
        "%float = OpTypeFloat 32",
        "%v3uint = OpTypeVector %uint 3",
        *(f"{name} = OpTypeFunction {' '.join(kinds)}" for kinds, name in t.function_types.items()),
        "%rt_float = OpTypeRuntimeArray %float",
        "%float_block = OpTypeStruct %rt_float",
        "%p_float_block = OpTypePointer StorageBuffer %float_block",
        "%p_float = OpTypePointer StorageBuffer %float",
        "%p_v3uint = OpTypePointer Input %v3uint",
        *(f"{name} = OpConstant %uint {value}" for value, name in sorted(t.uints.items())),
        *(f"{name} = OpConstant %int {value}" for value, name in sorted(t.ints.items())),
        *(f"{name} = OpConstant %float {_float_text(value)}" for value, name in t.floats.values()),
        *(f"%{b} = OpVariable %p_float_block StorageBuffer" for b in ("X", "Y", "OUT")),
        "%global_id = OpVariable %p_v3uint Input",
    ]
    return "\n".join([*header, *t.lines, ""])


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
    out, lse = np.zeros((seq, dim), np.float16), np.zeros(seq, np.float32)
    for q0 in range(0, seq, config.br):
        qf = q[q0 : q0 + config.br].astype(np.float32)
        o = np.zeros((config.br, dim), np.float32)
        m = np.full((config.br, 1), -np.inf, np.float32)
        l = np.zeros((config.br, 1), np.float32)
        whole, end = key_blocks(config, seq, q0, causal)
        for j in range(end):
            k0 = j * config.bc
            s = (qf @ k[k0 : k0 + config.bc].astype(np.float32).T) * scale
            if j >= whole:  # a block the diagonal crosses
                after = np.arange(k0, k0 + config.bc)[None, :] > np.arange(q0, q0 + config.br)[:, None]
                s = np.where(after, np.float32(-np.inf), s)
            m_new = np.maximum(m, s.max(1, keepdims=True))
            p, alpha = np.exp(s - m_new), np.exp(m - m_new)
            weights = p.astype(np.float16).astype(np.float32)  # what multiplies V (and sums, with ``ones``)
            l = l * alpha + (weights if config.ones else p).sum(1, keepdims=True, dtype=np.float32)
            o = o * alpha + weights @ v[k0 : k0 + config.bc].astype(np.float32)
            m = m_new
        out[q0 : q0 + config.br] = (o / l).astype(np.float16)
        lse[q0 : q0 + config.br] = (m + np.log(l))[:, 0]
    return out, lse


def key_blocks(config: Config, seq: int, q0: int, causal: bool) -> tuple[int, int]:
    """``(whole, end)`` for the query block at ``q0``: key blocks j < whole have no masked key, those in
    [whole, end) are crossed by the causal diagonal, none from ``end`` on has an unmasked one (the
    kernel computes the same two numbers with integer divisions).

    >>> key_blocks(Config(128, 64), 1024, 128, True), key_blocks(Config(64, 128), 1024, 64, True)
    ((2, 4), (0, 1))
    """
    if not causal:
        return seq // config.bc, seq // config.bc
    return (q0 + 1) // config.bc, (q0 + config.br + config.bc - 1) // config.bc


# ---------------------------------------------------------------------------- on a device


def device_problem(device) -> str | None:
    """Why ``device`` cannot run the prototype (None: it can)."""
    if getattr(device, "kind", None) != "vulkan":
        return f"{device.name} is not a Vulkan device"
    info = device.logical.info
    name = info.properties.get("deviceName", device.name)
    if EXTENSION not in info.extensions:
        return f"{device.name} ({name}) does not offer {EXTENSION}"
    missing = [feature for feature in FEATURES if feature not in device.enabled_features]
    if missing:
        return f"{device.name} ({name}) offers {EXTENSION} but not the features {', '.join(missing)}"
    return None


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
    """A small problem per (D, causal) of ``problems``: several blocks of queries and keys, two heads."""
    kinds = dict.fromkeys((p.dim, p.causal) for p in problems)
    return [Problem(1, 2, 512, dim, causal) for dim, causal in kinds]


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
    print("check: out and lse error / bound at " + ", ".join(map(str, small)))
    print(
        f"{'config':18s} {'check out/lse':>{14 * len(small)}s}"
        + "".join(f" | {p}: ms TFLOP/s ×torch" for p in problems)
    )
    runner, rng = Runner(device), np.random.default_rng(0)
    device.pipelines.capture_statistics = pipeline_stats.supported(device.logical)  # registers, shared memory
    inputs = {problem: operands(rng, problem) for problem in problems}
    for config in configs:
        line = f"{str(config):18s}"
        reasons = [flexible_problem(config, p, flexible, max_dimension) or shape_problem(config, p) for p in small]
        if any(reasons) and not force:
            print(f"{line} skipped: {next(r for r in reasons if r)}", flush=True)
            continue
        try:
            for problem in small:
                out_ratio, lse_ratio = check(runner, config, problem, rng)
                line += f" {out_ratio:6.3f}/{lse_ratio:6.3f}"
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
    parser.add_argument("--exp", choices=("hw", "sw", "both"), default="both", help="the exp of the weights")
    parser.add_argument("--repeats", type=int, default=20, help="dispatches timed per size (the median is shown)")
    parser.add_argument("--force", action="store_true", help="also run configs the flexible-dimension list rules out")
    parser.add_argument("--print-asm", metavar="CONFIG", help="print the SPIR-V of CONFIG at the last --size and exit")
    parser.add_argument("--device", default=None, help="a Vulkan device (default: the best one)")
    args = parser.parse_args()
    problems = [Problem.parse(text) for text in args.size] or list(DEFAULT_PROBLEMS)
    if args.print_asm:
        print(module_text(Config.parse(args.print_asm), problems[-1]))
        return
    exps = EXPS if args.exp == "both" else (args.exp,)
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
