"""The IR's text form: print, parse back, compare; golden text; parse errors; constants exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.errors import IRError
from vkml.ir import Instr, KernelBuilder, parse, verify
from vkml.ir import types as T
from vkml.ir.builder import (
    barrier,
    bitcast,
    ceil,
    const,
    const_bits,
    convert,
    emit,
    eq,
    f16_from_bits,
    f16_to_bits,
    floor,
    global_id,
    if_,
    if_else,
    isnan,
    local_id,
    loop,
    matrix_add,
    matrix_convert,
    matrix_fill,
    matrix_map,
    matrix_mul,
    matrix_mul_add,
    matrix_reduce_rows,
    matrix_scale,
    matrix_sub,
    ne,
    num_workgroups,
    range_,
    round_even,
    select,
    shuffle_xor,
    subgroup_barrier,
    subgroup_id,
    trunc,
    workgroup_id,
)
from vkml.ir.core import walk
from vkml.ir.instructions import CONVERSIONS, SPECS, check_bitcast
from vkml.ir.text import format_constant, parse_constant


def round_trip(kernel) -> str:
    """Print, parse, compare structurally and as text; return the text."""
    text = str(kernel)
    back = parse(text)
    assert back == kernel
    assert str(back) == text
    return text


def ops_in(kernel) -> set[str]:
    return {s.op for s in walk(kernel.body) if isinstance(s, Instr)}


# ---------------------------------------------------------------- kernels built with the DSL


def every_instruction_kernel():
    kb = KernelBuilder("every_op", local_size=(32, 2, 1), subgroup_size=32)
    halves = kb.shared("halves", T.float16, 512)
    xf = kb.buffer("xf", T.float32, "read")
    xi = kb.buffer("xi", T.int32, "read")
    xh = kb.buffer("xh", T.float16, "read")
    out = kb.buffer("out", T.float32, "readwrite")
    tile = kb.shared("tile", T.float32, 64 + 256)
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        li = local_id(1)
        wg = workgroup_id(2) + num_workgroups(0)
        a, b = xf[i], xf[i + 1]
        p, q = xi[i], xi[wg]
        ints = [p + q, p - q, p * q, -p, emit("idiv", p, q), emit("irem", p, q), p << q, p >> q]
        bits = [p & q, p | q, p ^ q, ~p]
        floats = [a + b, a - b, a * b, -a, floor(a), ceil(a), trunc(a), round_even(a), emit("mul_add", a, b, a)]
        compares = [eq(a, b), ne(a, b), a < b, a <= b, a > b, a >= b, isnan(a)]
        compares += [emit(op, a, b) for op in ("ult", "ule", "ugt", "uge")]
        h = f16_from_bits(bitcast(a, T.uint32))
        back = convert(h, T.float32) + bitcast(convert(f16_to_bits(h), T.int32), T.float32)
        total = select(compares[0] & compares[-1], floats[-1], back) + convert(ints[0] + bits[0], T.float32)
        tile[li] = total
        halves.store4(li, (h, h, h, h))  # halves is then held as vectors: matrices start on whole ones
        barrier()
        subgroup_barrier()
        total = total + shuffle_xor(tile[li ^ 1], 1)
        base = subgroup_id() * 256  # one 16x16 matrix per subgroup
        a_m = halves.load_matrix(base, T.matrix_type(T.float16, 16, 16, "a"), 16)
        b_m = halves.load_matrix(base, T.matrix_type(T.float16, 16, 16, "b"), 16, "col")
        c_m = matrix_mul_add(a_m, b_m, matrix_fill(-0.0, T.matrix_type(T.float32, 16, 16, "acc")))
        tile.store_matrix(base / 8, c_m, 16)
        # workgroup scope, loaded from and stored to a buffer read as a 2-D tensor (VK_NV_cooperative_matrix2)
        wg_a = xh.load_matrix((wg, 0), T.matrix_type(T.float16, 32, 16, "a", "workgroup"), (100, 16))
        wg_c = matrix_fill(0.0, T.matrix_type(T.float32, 32, 16, "acc", "workgroup"))
        wg_b = xh.load_matrix((0, wg), T.matrix_type(T.float16, 16, 16, "b", "workgroup"), (100, 16), "inside")
        out.store_matrix((wg, 0), matrix_mul_add(wg_a, wg_b, wg_c), (100, 16))
        # the flash-attention forward's workgroup-scope instructions (tests/test_ir_cm2_ops.py runs them)
        wg_t = xh.load_matrix((0, wg), T.matrix_type(T.float16, 16, 32, "b", "workgroup"), (100, 16), transposed=True)
        scores = matrix_mul_add(wg_a, wg_t, matrix_fill(-0.0, T.matrix_type(T.float32, 32, 32, "acc", "workgroup")))
        top = matrix_reduce_rows(scores, "max", 16)
        row_sum = matrix_reduce_rows(matrix_scale(scores, convert(n, T.float32)), "add", 32)
        masked = matrix_map(lambda r, c, s, t, first: select(c + first > r, s - t, s), scores, row_sum, n)
        mixed = matrix_add(matrix_mul(masked, row_sum), matrix_sub(masked, scores))
        half = matrix_convert(mixed, T.matrix_type(T.float16, 32, 32, "a", "workgroup"))
        out.store_matrix((wg, 0), top, (100, 16), rows_kept=n)
        wg_b32 = xh.load_matrix((wg, 0), T.matrix_type(T.float16, 32, 16, "b", "workgroup"), (100, 16))
        out.store_matrix((wg, 0), matrix_mul_add(half, wg_b32, wg_c), (100, 16), rows_kept=n)
        with if_(i < n):
            out[i] = total + out[i]
            out.store4(wg, xf.load4(i)[::-1])
    return kb.finish()


def test_every_instruction_round_trips():
    kernel = every_instruction_kernel()
    assert ops_in(kernel) == set(SPECS)  # a new instruction must be added to this kernel
    verify(kernel)
    round_trip(kernel)


def nested_kernel():
    kb = KernelBuilder("nested", local_size=(64, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    rows = kb.param("rows", T.uint32)
    partial = kb.shared("partial", T.float32, 64)
    with kb:
        lid = local_id(0)

        def row(r, acc, count):
            v = x[r * 64 + lid]
            bigger, step = if_else(
                v > acc,
                lambda: if_else(isnan(v), lambda: (acc, const(0, T.int64)), lambda: (v, const(1, T.int64))),
                lambda: (acc, const(2, T.int64)),
            )
            return bigger, count + step

        best, count = loop(0, rows, 1, (const(-np.inf, T.float32), const(0, T.int64)), row)
        partial[lid] = best + convert(count, T.float32)
        barrier()
        with range_(rows) as r:
            with if_(eq(r, 0)):
                barrier()  # uniform: the loop runs over a param, the condition uses only the index
        with if_(lid < 32):
            out[lid] = partial[lid] + partial[lid + 32]
    return kb.finish()


def test_nested_control_flow_round_trips():
    kernel = nested_kernel()
    verify(kernel)
    text = round_trip(kernel)
    assert "carry(" in text and "} else {" in text and "yield" in text


def test_loop_without_results_and_if_without_else_round_trip():
    kb = KernelBuilder("plain", local_size=(8, 1, 1))
    out = kb.buffer("out", T.int32, "write")
    with kb:
        with range_(const(2, T.int32), 10, 3) as i:
            with if_(i > 4):
                out[i] = i
            with if_(i < 4):
                pass
    kernel = kb.finish()
    text = round_trip(kernel)
    assert "else" not in text and "->" not in text


def test_a_rolled_loop_keeps_its_hint_through_text_structure_and_spirv():
    def build(unroll: bool):
        kb = KernelBuilder("rolled", local_size=(8, 1, 1))
        out = kb.buffer("out", T.float32, "write")
        with kb:
            (total,) = loop(const(0, T.uint32), 16, 1, [const(0.0, T.float32)], lambda i, s: (s + 1.0,), unroll=unroll)
            out[local_id(0)] = total
        return kb.finish()

    rolled, plain = build(False), build(True)
    text = round_trip(rolled)
    assert " dont_unroll carry(" in text and "dont_unroll" not in round_trip(plain)
    assert parse(text) == rolled and rolled != plain  # a hint of its own in the kernel's identity
    lavapipe = DeviceFeatures.lavapipe_like()
    assert "DontUnroll" in compile_kernel(rolled, lavapipe).asm
    assert "DontUnroll" not in compile_kernel(plain, lavapipe).asm


def test_every_dtype_round_trips():
    kb = KernelBuilder("dtypes", local_size=(1, 1, 1))
    bufs = {t: kb.buffer(f"b_{t.short}", t, "readwrite") for t in T.ALL}
    params = {t: kb.param(f"p_{t.short}", t) for t in T.ALL}
    shared = {t: kb.shared(f"s_{t.short}", t, 4) for t in T.ALL}
    with kb:
        for t in T.ALL:
            zero = const(0, T.uint32)
            bufs[t][zero] = select(eq(params[t], bufs[t][zero]), params[t], shared[t][zero])
            shared[t][zero] = params[t]
    kernel = kb.finish()
    verify(kernel)
    text = round_trip(kernel)
    for t in T.ALL:
        assert f"param %p_{t.short}: {t.short}" in text


EDGE_CONSTANTS = [
    (T.float32, 0x7FC00000),  # the default quiet NaN
    (T.float32, 0xFFC00001),  # negative NaN with a payload
    (T.float32, 0x7F800001),  # signalling NaN
    (T.float32, 0x80000000),  # -0.0
    (T.float32, 0x7F800000),  # inf
    (T.float32, 0xFF800000),  # -inf
    (T.float32, 0x00000001),  # smallest subnormal
    (T.float32, 0x007FFFFF),  # largest subnormal
    (T.float32, 0x7F7FFFFF),  # largest finite
    (T.float32, 0x3DCCCCCD),  # 0.1
    (T.float16, 0x7E01),
    (T.float16, 0xFE00),
    (T.float16, 0x8000),
    (T.float16, 0x0001),
    (T.float16, 0x7BFF),
    (T.float16, 0xFC00),
]
EDGE_INTS = [
    (T.int64, np.iinfo(np.int64).min),
    (T.int64, np.iinfo(np.int64).max),
    (T.uint32, np.iinfo(np.uint32).max),
    (T.int32, np.iinfo(np.int32).min),
    (T.uint32, 0),
    (T.bool_, True),
    (T.bool_, False),
]


def test_constant_edge_cases_round_trip_bit_exactly():
    kb = KernelBuilder("constants", local_size=(1, 1, 1))
    with kb:
        made = [const_bits(bits, t) for t, bits in EDGE_CONSTANTS] + [const(v, t) for t, v in EDGE_INTS]
        assert len(made) == len(EDGE_CONSTANTS) + len(EDGE_INTS)
    kernel = kb.finish()
    text = round_trip(kernel)
    back = parse(text)
    for original, parsed in zip(kernel.body.body, back.body.body):
        (a,), (b,) = original.attrs, parsed.attrs
        assert type(a) is type(b) and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert "nan(0xffc00001)" in text and "nan(0x7e01)" in text and "-0.0" in text
    assert "-9223372036854775808" in text and "4294967295" in text and "true" in text


# Every 13th pattern (each exponent, subnormals and NaNs) and the edges (signed zeros and infinities,
# the smallest and largest subnormal and normal, a quiet NaN) in `make test`; all 65,536 with -m stress
# (seconds of one core).
_FLOAT16_EDGES = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00]


@pytest.mark.parametrize("step", [13, pytest.param(1, marks=pytest.mark.stress)], ids=["every_13th", "all"])
def test_every_float16_round_trips_through_its_text(step):
    bits = np.union1d(np.arange(0, 1 << 16, step), _FLOAT16_EDGES).astype(np.uint16)
    for value in bits.view(np.float16):
        back = parse_constant(format_constant(value), T.float16)
        assert back.tobytes() == value.tobytes(), format_constant(value)


@given(st.integers(0, (1 << 32) - 1))
@settings(max_examples=400, deadline=None)
def test_float32_constants_round_trip(bits):
    value = np.array(bits, dtype=np.uint32).view(np.float32)[()]
    assert parse_constant(format_constant(value), T.float32).tobytes() == value.tobytes()


def test_decimals_round_to_nearest_even():
    # 1 + 2^-24 lies exactly between two float32 values; ties go to the even one (1.0).
    assert parse_constant("1.000000059604644775390625", T.float32) == np.float32(1.0)
    assert parse_constant("1.0000000596046448", T.float32) == np.nextafter(np.float32(1), np.float32(2))
    assert parse_constant("65519.99", T.float16) == np.float16(65504)
    with pytest.raises(ValueError, match="out of range"):
        parse_constant("65520", T.float16)
    with pytest.raises(ValueError, match="out of range"):
        parse_constant("4294967296", T.uint32)


# ---------------------------------------------------------------- the format itself

GOLDEN = """\
kernel scale local_size(64, 1, 1) {
  buffer x: f32 read
  buffer out: f32 write
  param %n: u32

  %0 = global_id 0                : u32
  %1 = lt %0, %n                  : bool
  if %1 {
    %2 = load x[%0]               : f32
    %3 = const 0.0                : f32
    %4 = const 0                  : u32
    %5 = const 1                  : u32
    %10 = loop %6 = %4 to %n step %5 carry(%7 = %3) -> f32 {
      %8 = mul %2, %2             : f32
      %9 = add %7, %8             : f32
      yield %9
    }
    %11 = isnan %10               : bool
    %13 = if %11 -> f32 {
      %12 = const nan(0x7fc00000) : f32
      yield %12
    } else {
      yield %10
    }
    store out[%0], %13
  }
}
"""


def golden_kernel():
    kb = KernelBuilder("scale", local_size=(64, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = global_id(0)
        with if_(i < n):
            v = x[i]
            (total,) = loop(0, n, 1, (const(0.0, T.float32),), lambda j, acc: acc + v * v)
            (result,) = if_else(isnan(total), lambda: const_bits(0x7FC00000, T.float32), lambda: total)
            out[i] = result
    return kb.finish()


def test_golden_text():
    kernel = golden_kernel()
    assert str(kernel) == GOLDEN
    assert parse(GOLDEN) == kernel
    assert str(golden_kernel()) == str(kernel)  # deterministic across separate builds


def test_comments_and_blank_lines_are_ignored():
    annotated = """\
; a golden kernel, annotated
kernel scale local_size(64, 1, 1) {   ; 64 lanes

  buffer x: f32 read
  buffer out: f32 write
  param %n: u32
  ; the body
  %0 = global_id 0 : u32            ; one element per invocation
  %1 = lt %0, %n : bool
  if %1 {
    %2 = load x[%0] : f32
    %3 = const 0.0 : f32
    %4 = const 0 : u32
    %5 = const 1 : u32
    %sum = loop %i = %4 to %n step %5 carry(%acc = %3) -> f32 {
      %8 = mul %2, %2 : f32
      ;; sum of squares
      %9 = add %acc, %8 : f32
      yield %9
    }
    %11 = isnan %sum : bool
    %13 = if %11 -> f32 {
      %12 = const nan(0x7fc00000) : f32
      yield %12
    } else {
      yield %sum
    }
    store out[%0], %13
  }
}
; trailing comment"""
    kernel = parse(annotated)
    assert kernel == golden_kernel()
    assert str(kernel) == GOLDEN


def test_parser_builds_the_builders_attrs():
    kb = KernelBuilder("attrs", local_size=(4, 1, 1))
    buf = kb.buffer("buf", T.uint32, "readwrite")
    with kb:
        i = local_id(1)
        buf[i] = bitcast(convert(convert(shuffle_xor(i, 3), T.int32), T.float32), T.uint32)
        buf[i] = const(7, T.uint32)
    back = parse(str(kb.finish()))
    attrs = {s.op: s.attrs for s in back.body.body}
    assert attrs["local_id"] == (1,) and type(attrs["local_id"][0]) is int
    assert attrs["shuffle_xor"] == (3,) and type(attrs["shuffle_xor"][0]) is int
    assert attrs["bitcast"] == ("uint32",)
    assert attrs["store"] == ("buf",)
    (seven,) = attrs["const"]
    assert type(seven) is np.uint32 and seven == 7
    converts = [s.attrs for s in back.body.body if s.op == "convert"]
    assert converts == [("int32",), ("float32",)]


def test_a_conversion_whose_attr_disagrees_with_its_type_keeps_the_attr():
    kernel = parse("kernel k local_size(1, 1, 1) {\n  %0 = const 1 : u32\n  %1 = bitcast %0, i32 : f32\n}\n")
    instr = kernel.body.body[1]
    assert instr.attrs == ("int32",) and instr.result.dtype is T.float32
    assert "%1 = bitcast %0, i32 : f32" in round_trip(kernel)


# ---------------------------------------------------------------- parse errors

HEADER = "kernel k local_size(64, 1, 1) {\n  buffer x: f32 read\n"
PARSE_ERRORS = [
    (HEADER + "  %0 = const 1.5 f32\n}\n", "line 3, column 18", "unexpected 'f32'"),
    (HEADER + "  %0 = frobnicate %1 : f32\n}\n", "line 3, column 8", "unknown instruction 'frobnicate'"),
    (HEADER + "  %0 = const 1 : f31\n}\n", "line 3, column 18", "unknown type 'f31'"),
    (HEADER + "  %0 = add %1, %1 : f32\n}\n", "line 3, column 12", "%1 is used before it is defined"),
    (HEADER + "  %0 = const 1 : u32\n  %0 = const 2 : u32\n}\n", "line 4, column 3", "%0 is defined twice"),
    (HEADER + "  %0 = const 1.5 : i32\n}\n", "line 3, column 14", "not an integer"),
    (HEADER + "  %0 = const 300 : f16\n  %1 = const 1e5 : f16\n}\n", "line 4, column 14", "out of range for f16"),
    (HEADER + "  %0 = const nan(0x3f80) : f16\n}\n", "line 3, column 14", "not a NaN"),
    (HEADER + "  %0 = const 1 : u32\n  %1, %2 = if %0 -> u32 {\n  }\n}\n", "line 4, column 12", "2 result value(s)"),
    ("kernel k local_size(64, 1) {\n}\n", "line 1, column 26", "expected ','"),
    (HEADER + "  buffer y: f32 sideways\n}\n", "line 3, column 17", "read, write or readwrite"),
    (HEADER + "  %0 = global_id 0 : u32 @\n}\n", "line 3, column 26", "unexpected character '@'"),
    (HEADER + "  %0 = global_id 0 : u32\n", "end of text", "expected"),
]


@pytest.mark.parametrize("text, where, what", PARSE_ERRORS)
def test_parse_errors_name_the_position_and_the_problem(text, where, what):
    with pytest.raises(IRError) as info:
        parse(text)
    message = str(info.value)
    assert where in message and what in message


def test_parse_error_points_at_the_column():
    with pytest.raises(IRError) as info:
        parse(HEADER + "  %0 = const 1 : f31\n}\n")
    source, caret = str(info.value).splitlines()[-2:]
    assert source.strip() == "%0 = const 1 : f31"
    assert source[caret.index("^") :].startswith("f31")


# ---------------------------------------------------------------- random straight-line kernels

PURE = sorted(name for name, spec in SPECS.items() if spec.kind == "pure")


@st.composite
def straight_line_kernels(draw):
    """A kernel of random constants and pure instructions over values of every dtype."""
    kb = KernelBuilder("random", local_size=(draw(st.integers(1, 16)), 1, 1))
    out = {t: kb.buffer(f"out_{t.short}", t, "write") for t in T.ALL}
    with kb:
        pool = {t: [kb_const(draw, t)] for t in T.ALL}
        for _ in range(draw(st.integers(0, 25))):
            if draw(st.booleans()):
                t = draw(st.sampled_from(T.ALL))
                pool[t].append(kb_const(draw, t))
                continue
            value = emit_random(draw, draw(st.sampled_from(PURE)), pool)
            if value is not None:
                pool[value.dtype].append(value)
        for t in T.ALL:
            out[t][const(0, T.uint32)] = pool[t][-1]
    return kb.finish()


def kb_const(draw, t):
    if t.is_float:
        return const_bits(draw(st.integers(0, (1 << t.bits) - 1)), t)
    if t is T.bool_:
        return const(draw(st.booleans()), t)
    info = np.iinfo(t.np)
    return const(draw(st.integers(int(info.min), int(info.max))), t)


def emit_random(draw, op, pool):
    """One instruction ``op`` on values drawn from ``pool`` (None if ``op`` cannot take them)."""
    spec = SPECS[op]

    def pick(dtype):
        return draw(st.sampled_from(pool[dtype]))

    if op == "select":
        dtype = draw(st.sampled_from(T.ALL))
        return emit(op, pick(T.bool_), pick(dtype), pick(dtype))
    first = draw(st.sampled_from([t for t in spec.operand_types if t in pool]))  # value types, not storage-only
    if op in ("bitcast", "convert"):
        allowed = bitcast_allowed if op == "bitcast" else (lambda a, b: (a, b) in CONVERSIONS)
        targets = [t for t in T.ALL if allowed(first, t)]
        if not targets:
            return None
        return emit(op, pick(first), attrs=(draw(st.sampled_from(targets)).name,))
    return emit(op, *(pick(first) for _ in range(spec.nargs)))


def bitcast_allowed(src, dst) -> bool:
    try:
        check_bitcast(src, dst)
    except IRError:
        return False
    return True


@given(straight_line_kernels())
@settings(max_examples=60, deadline=None)
def test_random_straight_line_kernels_round_trip(kernel):
    verify(kernel)
    round_trip(kernel)
