"""The CPU interpreter and the Vulkan device give the same bits for every IR instruction.

Each pure instruction runs on every operand type it accepts, over special values (±0, ±inf,
NaNs with payloads, subnormals, integer extremes) crossed with each other plus random bit
patterns and random ordinary numbers. Inputs whose result the IR leaves undefined (division by
zero, shifts by the bit width or more, float->int out of range, signed overflow of idiv) are
replaced by defined ones first. Then control flow, the index builtins, shared memory with
barriers and shuffle_xor. On lavapipe (this CI) subnormals survive float arithmetic; a driver
that flushes them despite the declared float controls fails these tests, as it should.

NaN payloads: instructions that only move bits (neg, select, bitcast, loads and stores,
shuffles, f16_from_bits / f16_to_bits) must keep them exactly. Arithmetic producing a NaN may
return any NaN (IEEE 754 does not say which payload wins, and compilers swap the operands of
commutative instructions), so there both sides only have to be NaN.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from codegen_zoo import (
    PureCase,
    control_flow_kernel,
    index_kernel,
    pure_cases,
    pure_kernel,
    reduction_kernel,
    shared_roundtrip_kernel,
    shared_vector_kernel,
    shuffle_kernel,
)
from optest import fused_multiply_add

from vkml.codegen import compile_kernel
from vkml.ir import types as T
from vkml.ir.builder import subgroup_barrier
from vkml.ir.interp import reference as interp
from vkml.runtime.base import Dispatch
from vkml.runtime.vulkan.backend import device

LOCAL = 64
RANDOM_COUNT = 1024
BIT_MOVERS = {"neg", "select", "bitcast", "f16_from_bits", "f16_to_bits"}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@pytest.fixture(scope="module")
def gpu():
    return device(0)


# ---------------------------------------------------------------- inputs


def _from_bits(bits, dtype: T.DType) -> np.ndarray:
    return np.array(bits, dtype=_UINT[dtype.nbytes]).view(dtype.np)


def special_values(dtype: T.DType) -> np.ndarray:
    if dtype is T.float32:
        bits = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC12345, 0xFFBFFFFF,
                0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000,
                0x3FC00000, 0x40200000, 0xC0200000, 0x3EFFFFFF, 0x4B800001, 0x4F000000, 0xCF000000, 0x4F800000,
                0x5F000000, 0x3F7FFFFF, 0x33800000]  # fmt: skip
        return _from_bits(bits, dtype)
    if dtype is T.float16:
        bits = [0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7E55, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF,
                0x3C00, 0xBC00, 0x3800, 0x3E00, 0x4100, 0xC100, 0x37FF, 0x6800, 0x6801]  # fmt: skip
        return _from_bits(bits, dtype)
    if dtype is T.float64:
        bits = [0, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                0xFFF8000000000000, 0x7FF0000000000001, 0x0000000000000001, 0x800FFFFFFFFFFFFF,
                0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 0xBFF0000000000000,
                0x3FE0000000000000, 0x4330000000000001, 0x43E0000000000000, 0xC3E0000000000000,
                0x41E0000000000000, 0x3FEFFFFFFFFFFFFF, 0x47EFFFFFE0000000, 0x47EFFFFFF0000000]  # fmt: skip
        return _from_bits(bits, dtype)
    if dtype is T.bool_:
        return np.array([False, True])
    info = np.iinfo(dtype.np)
    values = {0, 1, 2, 3, 7, 31, 32, 63, info.max, info.max - 1, 1 << (dtype.bits - 2)}
    if dtype.is_signed:
        values |= {-1, -2, -7, -32, info.min, info.min + 1}
    return np.array(sorted(values), dtype=dtype.np)


def random_values(dtype: T.DType, count: int, rng: np.random.Generator) -> np.ndarray:
    if dtype is T.bool_:
        return rng.integers(0, 2, count).astype(bool)
    bits = rng.integers(0, np.iinfo(_UINT[dtype.nbytes]).max, count, dtype=_UINT[dtype.nbytes], endpoint=True)
    patterns = bits.view(dtype.np)
    if not dtype.is_float:
        small = rng.integers(-1000 if dtype.is_signed else 0, 1000, count).astype(dtype.np)
        return np.where(rng.integers(0, 2, count).astype(bool), patterns, small)
    ordinary = (rng.standard_normal(count) * 10.0 ** rng.integers(-3, 4, count)).astype(dtype.np)
    return np.where(rng.integers(0, 2, count).astype(bool), patterns, ordinary)


def _flush(a: np.ndarray) -> np.ndarray:
    """Subnormals replaced by a zero of the same sign (what a flushing device computes with)."""
    a = np.asarray(a, dtype=np.float32)
    return np.where(np.abs(a) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), a), a).astype(np.float32)


def case_inputs(case: PureCase, rng: np.random.Generator) -> list[np.ndarray]:
    """Specials crossed with specials (for binary ops), then random values; undefined inputs replaced."""
    types = case.arg_types
    if case.op == "select":
        conds = np.tile([False, True], RANDOM_COUNT // 2)
        a, b = (np.concatenate([special_values(t), random_values(t, RANDOM_COUNT, rng)]) for t in types[1:])
        size = min(len(conds), len(a), len(b))
        return [conds[:size], rng.permutation(a)[:size], b[:size]]
    if case.op == "mul_add":  # specials crossed with specials, plus a permuted addend
        s = special_values(types[0])
        a = np.concatenate([np.repeat(s, len(s)), random_values(types[0], RANDOM_COUNT, rng)])
        b = np.concatenate([np.tile(s, len(s)), random_values(types[0], RANDOM_COUNT, rng)])
        return [a, b, rng.permutation(a)]
    if len(types) == 1:
        a = np.concatenate([special_values(types[0]), random_values(types[0], RANDOM_COUNT, rng)])
        return [_defined_conversion_inputs(case, a)]
    sa, sb = special_values(types[0]), special_values(types[1])
    a = np.concatenate([np.repeat(sa, len(sb)), random_values(types[0], RANDOM_COUNT, rng)])
    b = np.concatenate([np.tile(sb, len(sa)), random_values(types[1], RANDOM_COUNT, rng)])
    return _defined_only(case, [a, b])


def _defined_only(case: PureCase, args: list[np.ndarray]) -> list[np.ndarray]:
    a, b = args
    if case.op in ("idiv", "irem"):
        overflow = (a == np.iinfo(a.dtype).min) & (b == -1) if case.arg_types[0].is_signed else False
        b = np.where((b == 0) | overflow, b.dtype.type(3), b)
    if case.op in ("shl", "shr"):
        b = (b.astype(np.uint64) % np.uint64(case.arg_types[0].bits)).astype(b.dtype)
    return [a, b]


def _defined_conversion_inputs(case: PureCase, a: np.ndarray) -> np.ndarray:
    if case.op != "convert":
        return a
    src, dst = case.arg_types[0], T.by_name(case.attrs[0])
    if not (src.is_float and dst.is_int):
        return a
    info = np.iinfo(dst.np)
    with np.errstate(invalid="ignore"):
        whole = np.trunc(a.astype(np.float64))
        # float(info.max) rounds up past the maximum, hence the power-of-two bound
        ok = np.isfinite(whole) & (whole >= info.min) & (whole < 2.0 ** (dst.bits - dst.is_signed))
    return np.where(ok, a, a.dtype.type(1.5))


# ---------------------------------------------------------------- running on both sides


def run_both(gpu, kernel, grid, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray], params=None):
    """Run ``kernel`` with the interpreter and on ``gpu``; return (cpu outputs, gpu outputs)."""
    params = params or {}
    cpu = {name: a.copy() for name, a in {**inputs, **outputs}.items()}
    interp.run(kernel, grid, cpu, params)
    buffers = {}
    for name, array in {**inputs, **outputs}.items():
        buffers[name] = gpu.allocate(T.from_numpy(array.dtype), array.size)
        gpu.upload(buffers[name], array)
    gpu.run([Dispatch(kernel, grid, buffers, params)])
    return {n: cpu[n] for n in outputs}, {n: gpu.download(buffers[n]) for n in outputs}


def assert_same_bits(got: np.ndarray, want: np.ndarray, exact_nan: bool, context: str, inputs=()) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype == bool:
        bad = got != want
    else:
        bad = got.view(_UINT[got.dtype.itemsize]) != want.view(_UINT[want.dtype.itemsize])
        if got.dtype.kind == "f" and not exact_nan:
            bad &= ~(np.isnan(got) & np.isnan(want))
    if bad.any():
        rows = []
        for i in np.flatnonzero(bad)[:8]:
            shown = ", ".join(_show(x[i]) for x in inputs)
            rows.append(f"  [{i}] inputs ({shown}): vulkan {_show(got[i])}, interpreter {_show(want[i])}")
        raise AssertionError(f"{context}: {int(bad.sum())} of {bad.size} differ\n" + "\n".join(rows))


def _show(x) -> str:
    if isinstance(x, np.floating):
        return f"{x!r} (0x{int(x.view(_UINT[x.nbytes])):0{2 * x.nbytes}x})"
    return repr(x)


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("case", pure_cases(), ids=lambda c: c.name)
def test_pure_instruction_parity(gpu, case: PureCase) -> None:
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))  # stable across processes
    args = case_inputs(case, rng)
    n = len(args[0])
    kernel = pure_kernel(case, LOCAL)
    inputs = {f"a{j}": a for j, a in enumerate(args)}
    out = {"out": np.zeros(n, dtype=case.result.np)}
    cpu, vk = run_both(gpu, kernel, (-(-n // LOCAL), 1, 1), inputs, out, {"n": n})
    if case.op == "mul_add":  # a device may round once where the interpreter rounds twice
        fused = vk["out"].view(np.uint32) == fused_multiply_add(*args).view(np.uint32)
        if not gpu.features.denorm_preserve_float32:  # ... and may flush subnormal operands and results (the H200's)
            candidates = [fused_multiply_add(*args), fused_multiply_add(*[_flush(a) for a in args])]
            for want in candidates + [_flush(c) for c in candidates]:
                fused |= (vk["out"].view(np.uint32) == want.view(np.uint32)) | (np.isnan(vk["out"]) & np.isnan(want))
        vk["out"] = np.where(fused, cpu["out"], vk["out"])
    assert_same_bits(vk["out"], cpu["out"], case.op in BIT_MOVERS, case.name, args)


def test_index_builtins_parity(gpu) -> None:
    kernel = index_kernel((4, 2, 2))
    grid = (3, 2, 2)
    out = {"out": np.zeros(12 * 16 * 12, dtype=np.uint32)}
    cpu, vk = run_both(gpu, kernel, grid, {}, out)
    assert_same_bits(vk["out"], cpu["out"], True, "index builtins")
    assert cpu["out"][12 * 5 : 12 * 6].tolist() == [5, 0, 0, 1, 0, 0, 1, 0, 0, 3, 2, 2]


def test_control_flow_parity(gpu) -> None:
    rng = np.random.default_rng(7)
    n = 100
    x = np.concatenate([[0, 1, -1, 300, -300, 2**31 - 1, -(2**31)], rng.integers(-500, 500, n - 7)]).astype(np.int32)
    flags = rng.integers(0, 2, n + 12).astype(bool)
    out = {"out": np.zeros(n + 12, dtype=np.int32), "flags": flags}
    cpu, vk = run_both(gpu, control_flow_kernel(), (-(-n // 16) + 1, 1, 1), {"x": np.resize(x, n + 12)}, out, {"n": n})
    assert_same_bits(vk["out"], cpu["out"], True, "nested control flow", (x,))
    assert_same_bits(vk["flags"], cpu["flags"], True, "bool readwrite buffer")
    assert (cpu["out"][n:] == 0).all()  # the guarded tail stayed untouched


@pytest.mark.parametrize("dtype", [T.float32, T.float16, T.int64, T.int32], ids=lambda t: t.short)
def test_shared_memory_barrier_reduction_parity(gpu, dtype) -> None:
    rng = np.random.default_rng(11)
    groups = 5
    x = random_values(dtype, groups * LOCAL, rng)
    if dtype.is_float:
        x = np.where(np.isfinite(x), x, dtype.np.type(1))  # finite sums show rounding differences
        x = (x.astype(np.float64) % 100).astype(dtype.np)
    out = {"out": np.zeros(groups, dtype=dtype.np)}
    cpu, vk = run_both(gpu, reduction_kernel(dtype, LOCAL), (groups, 1, 1), {"x": x}, out)
    assert_same_bits(vk["out"], cpu["out"], False, f"tree sum {dtype.short}")
    if dtype is T.int32:
        assert (cpu["out"] == x.reshape(groups, LOCAL).sum(axis=1, dtype=np.int32)).all()


@pytest.mark.parametrize("dtype", T.ALL, ids=lambda t: t.short)
def test_shared_memory_keeps_every_bit(gpu, dtype) -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([special_values(dtype), random_values(dtype, 4 * LOCAL, rng)])[: 4 * LOCAL]
    out = {"out": np.zeros(len(x), dtype=dtype.np)}
    cpu, vk = run_both(gpu, shared_roundtrip_kernel(dtype, LOCAL), (len(x) // LOCAL, 1, 1), {"x": x}, out)
    assert_same_bits(vk["out"], cpu["out"], True, f"shared memory {dtype.short}", (x,))
    assert_same_bits(cpu["out"], x.reshape(-1, 2)[:, ::-1].reshape(-1), True, "interpreter neighbour swap")


def test_a_subgroup_barrier_orders_shared_memory_within_the_subgroup(gpu) -> None:
    """``subgroup_barrier`` (OpControlBarrier at subgroup execution scope) between a store and the
    neighbour's load: spirv-val accepts it and the device gives the interpreter's swap."""
    x = np.arange(4 * LOCAL, dtype=np.uint32) * np.uint32(2654435761)
    out = {"out": np.zeros(len(x), dtype=np.uint32)}
    kernel = shared_roundtrip_kernel(T.uint32, LOCAL, subgroup_barrier)
    assert "OpControlBarrier %uint_3 %uint_2" in compile_kernel(kernel, gpu.features).asm
    cpu, vk = run_both(gpu, kernel, (len(x) // LOCAL, 1, 1), {"x": x}, out)
    assert (cpu["out"] == x.reshape(-1, 2)[:, ::-1].reshape(-1)).all()
    assert (vk["out"] == cpu["out"]).all()


@pytest.mark.parametrize("dtype", T.ALL, ids=lambda t: t.short)
def test_vector_stores_to_shared_memory_keep_every_bit(gpu, dtype) -> None:
    """``shared_vstore`` makes the array one of vectors on the device; element loads still see each element."""
    rng = np.random.default_rng(6)
    x = np.concatenate([special_values(dtype), random_values(dtype, 4 * LOCAL, rng)])[: 4 * LOCAL]
    out = {"out": np.zeros(len(x), dtype=dtype.np)}
    cpu, vk = run_both(gpu, shared_vector_kernel(dtype, LOCAL // 4), (len(x) // LOCAL, 1, 1), {"x": x}, out)
    assert_same_bits(vk["out"], cpu["out"], True, f"shared vectors {dtype.short}", (x,))
    want = x.reshape(-1, 2, 4)[:, ::-1, ::-1].reshape(-1)  # the neighbour's group, backwards
    assert_same_bits(cpu["out"], want, True, "interpreter: vector stores, element loads")


@pytest.mark.parametrize("dtype", T.ALL, ids=lambda t: t.short)
def test_shuffle_xor_parity(gpu, dtype) -> None:
    rng = np.random.default_rng(3)
    subgroup = gpu.features.subgroup_size
    masks = sorted({1, subgroup // 2, subgroup - 1} - {0})
    x = np.concatenate([special_values(dtype), random_values(dtype, 4 * LOCAL, rng)])[: 4 * LOCAL]
    for mask in masks:
        out = {"out": np.zeros(len(x), dtype=dtype.np)}
        cpu, vk = run_both(gpu, shuffle_kernel(dtype, mask, LOCAL), (len(x) // LOCAL, 1, 1), {"x": x}, out)
        assert_same_bits(vk["out"], cpu["out"], True, f"shuffle_xor {dtype.short} mask {mask}", (x,))


def test_f32_subnormal_results_are_kept(gpu) -> None:
    """A driver that flushes float32 subnormals (despite the float controls) fails here."""
    case = PureCase("mul", (T.float32, T.float32))
    a = _from_bits([0x00800000, 0x00FFFFFF, 0x01000000, 0x80800000], T.float32)
    b = np.full(4, 0.5, dtype=np.float32)
    cpu, vk = run_both(
        gpu, pure_kernel(case, LOCAL), (1, 1, 1), {"a0": a, "a1": b}, {"out": np.zeros(4, np.float32)}, {"n": 4}
    )
    assert (cpu["out"].view(np.uint32) == [0x00400000, 0x00800000, 0x00800000, 0x80400000]).all()
    assert_same_bits(vk["out"], cpu["out"], True, "subnormal products")
