"""The SPIR-V of extra/proto_flash_cm2.py's flash-attention forward on VK_NV_cooperative_matrix2 (that
module's docstring is the design note), its configurations and problem sizes, and its schedule.

    >>> text = module_text(Config.parse("64x64 t128 sw"), Problem.parse("B1 H2 T256 D64 causal"))
    >>> text.count("OpCooperativeMatrixReduceNV"), len(spirv(Config(), Problem(1, 1, 128, 64))) > 0
    (4, True)
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vkml.codegen.tools import assemble_and_validate
from vkml.kernels.attention_coopmat import _EXP2_HALF as EXP2_HALF  # weight_exp's 2^f on [-1/2, 1/2]
from vkml.ops.mathlib.bits import QUIET_BIT, ROUNDER, ROUNDER_BITS
from vkml.ops.mathlib.explog import LOG2E

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proto_coopmat2 import USE, WORKGROUP_SCOPE  # noqa: E402

EXPS = ("hw", "sw")
# Shorter polynomials for 2^f on [-1/2, 1/2] in weight_exp's frame, to measure what the exp's degree costs
# (relative error in float32 Horner: degree 4 below 2^-18.4, degree 3 below 2^-13.7; weight_exp's degree 5:
# 2^-22). Not in EXPS: the tests sweep that; ``--exp sw4`` / ``--exp sw3`` / ``--exp all`` time them.
SHORTER_EXP2_HALF = {
    "sw4": (0.9999992847442627, 0.6931217908859253, 0.2402474582195282, 0.05591785907745361, 0.009570073336362839),
    "sw3": (0.9999280571937561, 0.6932610273361206, 0.2426111102104187, 0.0551714189350605),
}
ALL_EXPS = (*EXPS, *SHORTER_EXP2_HALF)


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
            if word in ALL_EXPS:
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


def shape_problem(config: Config, problem: Problem) -> str | None:
    """Why ``config`` cannot run ``problem`` (None: it can). T need not be a multiple of the blocks (ragged)."""
    if problem.seq < 1 or problem.dim < 1:
        return f"no attention of {problem}"
    return None


def is_ragged(config: Config, problem: Problem) -> bool:
    """Whether T leaves a partial query or key block (then loads past the rows read zeros, stores past
    T are clipped, and without the causal mask the last key block masks the keys from T on)."""
    return bool(problem.seq % config.br or problem.seq % config.bc)


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


def _exp_sw(t: _Module, x: str, coefficients: tuple = EXP2_HALF) -> str:
    """e^x for x <= 0 with the operations of vkml's ``weight_exp`` (float32, no fused multiply-add)."""
    tt = t.let("t", f"OpFMul %float {x} {t.f(LOG2E)}", exact=True)
    inside = t.let("inside", f"OpFOrdGreaterThan %bool {tt} {t.f(-126.0)}")  # false for -inf and NaN
    reduced = t.let("reduced", f"OpSelect %float {inside} {tt} {t.f(0.0)}")
    shifted = t.let("shifted", f"OpFAdd %float {reduced} {t.f(ROUNDER)}", exact=True)  # round_to_int
    k = t.let("k", f"OpFSub %float {shifted} {t.f(ROUNDER)}", exact=True)
    k_int = t.let("kint", f"OpISub %int {t.let('bits', f'OpBitcast %int {shifted}')} {t.i(ROUNDER_BITS)}")
    frac = t.let("frac", f"OpFSub %float {reduced} {k}", exact=True)
    p = t.f(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        p = t.let("p", f"OpFAdd %float {t.let('pf', f'OpFMul %float {p} {frac}', exact=True)} {t.f(c)}", exact=True)
    field = t.let("field", f"OpShiftLeftLogical %int {t.let('biased', f'OpIAdd %int {k_int} {t.i(127)}')} {t.u(23)}")
    scaled = t.let("scaled", f"OpFMul %float {p} {t.let('pow2', f'OpBitcast %float {field}')}", exact=True)
    finite = t.let("finite", f"OpSelect %float {inside} {scaled} {t.f(0.0)}")
    quiet_bits = t.let("qbits", f"OpBitwiseOr %uint {t.let('xbits', f'OpBitcast %uint {x}')} {t.u(QUIET_BIT)}")
    quiet = t.let("quiet", f"OpBitcast %float {quiet_bits}")
    return t.let("e", f"OpSelect %float {t.let('nan', f'OpIsNan %bool {x}')} {quiet} {finite}")


def _functions(t: _Module, config: Config, scale: float, causal: bool = True, limit: int = 0) -> None:
    """The combine functions of the reductions and the per-element functions (row, col, elements, extras);
    ``masked_score`` masks keys after the query with ``causal`` and keys from ``limit`` on (if not 0)."""
    exp = _exp_sw if config.exp == "sw" else _exp_hw
    if config.exp in SHORTER_EXP2_HALF:
        exp = functools.partial(_exp_sw, coefficients=SHORTER_EXP2_HALF[config.exp])
    ff, per = ["%float", "%float"], ["%uint", "%uint"]
    _function(t, "%combine_max", ff, lambda a: t.let("max", f"OpExtInst %float %glsl FMax {a[0]} {a[1]}"))
    _function(t, "%combine_add", ff, lambda a: t.let("sum", f"OpFAdd %float {a[0]} {a[1]}", exact=True))

    def masked_score(a):  # (row, col, s, q0, k0): the key k0 + col after the query q0 + row gets -inf
        key, after = t.let("kp", f"OpIAdd %uint {a[4]} {a[1]}"), None
        if causal:
            after = t.let("after", f"OpUGreaterThan %bool {key} {t.let('qp', f'OpIAdd %uint {a[3]} {a[0]}')}")
        if limit:
            beyond = t.let("beyond", f"OpUGreaterThanEqual %bool {key} {t.u(limit)}")
            after = t.let("either", f"OpLogicalOr %bool {after} {beyond}") if after else beyond
        scaled = t.let("s", f"OpFMul %float {a[2]} {t.f(scale)}", exact=True)
        return t.let("masked", f"OpSelect %float {after} {t.f(-math.inf)} {scaled}") if after else scaled

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
    query_blocks, ragged = -(-seq // br), is_ragged(config, problem)
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
    plain = t.let("plain", "OpCreateTensorViewNV %view_plain")
    # The query block's rows before T (all of them but in a ragged last block): only those are stored.
    kept = t.u(br)
    if ragged:
        kept = t.let("kept", f"OpExtInst %uint %glsl UMin {kept} {t.let('rest', f'OpISub %uint {t.u(seq)} {q0}')}")
    first_column = t.let("col0", f"OpTensorViewSetClipNV %view_plain {plain} {t.u(0)} {kept} {t.u(0)} {t.u(1)}")
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
    key_blocks_all = -(-seq // bc)
    if problem.causal:  # blocks wholly at or before the diagonal, then those it crosses; none after it
        whole = t.let("whole", f"OpUDiv %uint {t.let('q1', f'OpIAdd %uint {q0} {t.u(1)}')} {t.u(bc)}")
        end = t.let("end", f"OpUDiv %uint {t.let('qe', f'OpIAdd %uint {q0} {t.u(br + bc - 1)}')} {t.u(bc)}")
        if ragged:  # a last query block past T: its diagonal blocks stop at the last key's
            end = t.let("end", f"OpExtInst %uint %glsl UMin {end} {t.u(key_blocks_all)}")
        carried, after = loop("open", t.u(0), whole, "%entry", start, masked=False)
        (o, m, l), _ = loop("diagonal", whole, end, after, carried, masked=True)
    else:
        carried, after = loop("open", t.u(0), t.u(seq // bc), "%entry", start, masked=False)
        if seq % bc:  # the partial last key block, its keys from T on masked
            carried, _ = loop("tail", t.u(seq // bc), t.u(key_blocks_all), after, carried, masked=True)
        o, m, l = carried

    # ---- out = O / l (float16, to nearest even) and lse = m + log(l) (column 0 only)
    out = t.let("out", f"OpFConvert {mat_out} {t.let('od', f'OpFDiv {mat_o} {o} {widen(l, mat_o)}')}")
    if ragged:
        kept_rows = t.let("keep", f"OpTensorViewSetClipNV %view_plain {plain} {t.u(0)} {kept} {t.u(0)} {t.u(d)}")
        t.op(f"OpCooperativeMatrixStoreTensorNV {ptr['O']} {out} {q_slice} None TensorView {kept_rows}")
    else:
        t.op(f"OpCooperativeMatrixStoreTensorNV {ptr['O']} {out} {q_slice} None None")
    lse = t.let("lse", f"OpCooperativeMatrixPerElementOpNV {mat_m} {m} %log_sum_exp {l}")
    lse_slice = t.let("sl", f"OpTensorLayoutSliceNV %layout {column} {row0} {t.u(br)} {t.u(0)} {t.u(1)}")
    t.op(f"OpCooperativeMatrixStoreTensorNV {ptr['LSE']} {lse} {lse_slice} None TensorView {first_column}")
    t.op("OpReturn")
    t.lines.append("OpFunctionEnd")
    _functions(t, config, problem.scale, problem.causal, 0 if problem.causal or not seq % bc else seq)
    header = _header(t, config, mat_q, mat_kt, mat_v, mat_s, mat_o, mat_m)
    if ragged:  # Constant clamping: loads past the last row read 0 (stores there are dropped)
        header[header.index(f"%layout = OpTypeTensorLayoutNV {t.u(2)} {t.u(0)}")] = (
            f"%layout = OpTypeTensorLayoutNV {t.u(2)} {t.u(1)}"
        )
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
        f"%layout = OpTypeTensorLayoutNV {dims} {zero}",  # whole blocks: no clamping (see module_text)
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
    sequences, query_blocks = problem.batch * problem.heads, -(-problem.seq // config.br)
    if problem.causal:
        return w % sequences, query_blocks - 1 - w // sequences
    return w // query_blocks, w % query_blocks


def grid(config: Config, problem: Problem) -> int:
    """Workgroups to dispatch (along x): one per query block of each (b, h)."""
    return problem.batch * problem.heads * -(-problem.seq // config.br)


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


def key_blocks(config: Config, seq: int, q0: int, causal: bool) -> tuple[int, int]:
    """``(whole, end)`` for the query block at ``q0``: key blocks j < whole have no masked key, those in
    [whole, end) are crossed by the causal diagonal or hold T (ragged), none from ``end`` on has an
    unmasked one (the kernel computes the same two numbers with integer divisions).

    >>> key_blocks(Config(128, 64), 1024, 128, True), key_blocks(Config(64, 128), 1024, 64, True)
    ((2, 4), (0, 1))
    >>> key_blocks(Config(64, 64), 100, 64, True), key_blocks(Config(64, 64), 100, 0, False)
    ((1, 2), (1, 2))
    """
    every = -(-seq // config.bc)
    if not causal:
        return seq // config.bc, every
    return (q0 + 1) // config.bc, min((q0 + config.br + config.bc - 1) // config.bc, every)
