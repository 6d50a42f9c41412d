"""The IR's workgroup-scope matrix instructions of the flash-attention forward (VK_NV_cooperative_matrix2):
``cm_reduce_rows``, ``cm_map``, ``cm_add``/``cm_sub``/``cm_mul``/``cm_scale``, ``cm_convert``,
``cm_tensor_load_transposed`` and ``cm_tensor_store_rows``.

Each runs on the CPU interpreter against numpy (the reduction in the contract's fixed tree, bit for bit), and
each kernel's SPIR-V passes spirv-val for H200-like features; the verifier's rules for them raise.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_zoo import flash_matrix_kernel

import vkml  # installs float division for IR values
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.errors import CompileError, DTypeError, IRError
from vkml.ir import builder as B
from vkml.ir import types as T
from vkml.ir.interp import reference as interp
from vkml.ir.verify import verify_kernel

H200 = DeviceFeatures.h200_like()
ROWS, COLS = 32, 48


def _acc(cols: int = COLS, rows: int = ROWS) -> T.MatrixType:
    return T.matrix_type(T.float32, rows, cols, "acc", "workgroup")


def _run(body, out_shapes: dict, inputs: dict, params: dict = ()):
    """Build a kernel of one 128-invocation workgroup whose ``body(kb, refs)`` stores matrices; run it on the
    CPU interpreter and compile it for an H200-like device (spirv-val). Returns the output arrays."""
    kb = B.KernelBuilder("cm2_ops", (128, 1, 1), 32)
    refs = {name: kb.buffer(name, T.from_numpy(a.dtype)) for name, a in inputs.items()}
    outs = {name: kb.buffer(name, dtype, "write") for name, (dtype, _) in out_shapes.items()}
    values = {name: kb.param(name, T.from_numpy(np.asarray(v).dtype)) for name, v in dict(params).items()}
    with kb:
        body(refs, outs, values)
    kernel = verify_kernel(kb.finish())
    arrays = {name: np.zeros(n, dtype.np) for name, (dtype, n) in out_shapes.items()}
    interp.run(kernel, (1, 1, 1), {**inputs, **arrays}, dict(params))
    asm = compile_kernel(kernel, H200).asm  # spirv-val, vulkan1.3
    return arrays, asm, kernel


def _tree(row: np.ndarray, combine) -> np.float32:
    """The contract's reduction tree over one row: neighbours paired level by level, an odd tail carried up."""
    values = list(row)
    while len(values) > 1:
        paired = [combine(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        values = paired + (values[-1:] if len(values) % 2 else [])
    return values[0]


def _scores(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((ROWS, COLS)) * 1e3).astype(np.float32)  # sums that round
    x[3, 7], x[5, :] = np.nan, -np.inf
    return x


@pytest.mark.parametrize("combine", ["max", "add"])
def test_reduce_rows_follows_the_fixed_tree(combine):
    x = _scores()

    def body(refs, outs, _):
        m = refs["x"].load_matrix((0, 0), _acc(), (ROWS, COLS))
        outs["out"].store_matrix((0, 0), B.matrix_reduce_rows(m, combine, 16), (ROWS, 16))

    arrays, asm, _ = _run(body, {"out": (T.float32, ROWS * 16)}, {"x": x.reshape(-1)})
    got = arrays["out"].reshape(ROWS, 16)

    def largest(a, b):
        return a if a > b or np.isnan(a) else b

    want = np.array([_tree(r, largest if combine == "max" else np.add) for r in x], np.float32)
    np.testing.assert_array_equal(got, np.repeat(want[:, None], 16, 1))  # NaN where the row has one
    assert np.isnan(got[3]).all() and (combine == "add" or got[5, 0] == -np.inf)
    assert "OpCooperativeMatrixReduceNV" in asm and "CooperativeMatrixReductionsNV" in asm


def test_map_evaluates_its_function_per_element_with_row_column_and_operands():
    x, y = _scores(1), _scores(2)
    x[~np.isfinite(x)], y[~np.isfinite(y)] = 1.0, 2.0

    def body(refs, outs, values):
        a = refs["x"].load_matrix((0, 0), _acc(), (ROWS, COLS))
        b = refs["y"].load_matrix((0, 0), _acc(), (ROWS, COLS))

        def fn(row, col, p, q, scale, first):  # the causal mask's shape: keys after the query get -inf
            return B.select(col + first > row, B.const(-np.inf, T.float32), p * scale + q / 3.0)

        outs["out"].store_matrix((0, 0), B.matrix_map(fn, a, b, values["scale"], values["first"]), (ROWS, COLS))

    params = {"scale": np.float32(0.125), "first": np.uint32(5)}
    arrays, asm, kernel = _run(body, {"out": (T.float32, ROWS * COLS)}, {"x": x.ravel(), "y": y.ravel()}, params)
    rows, cols = np.indices((ROWS, COLS))
    want = np.where(cols + 5 > rows, np.float32(-np.inf), x * np.float32(0.125) + y / np.float32(3))
    np.testing.assert_array_equal(arrays["out"].reshape(ROWS, COLS), want)  # float division: correctly rounded
    assert "OpCooperativeMatrixPerElementOpNV" in asm and asm.count("OpFunction ") >= 2
    assert "fn(" in str(kernel) and "yield" in str(kernel)


def test_elementwise_arithmetic_and_convert():
    x, y = _scores(3), _scores(4)
    x[~np.isfinite(x)], y[~np.isfinite(y)] = 0.5, -0.25
    x /= 1e3

    def body(refs, outs, values):
        a = refs["x"].load_matrix((0, 0), _acc(), (ROWS, COLS))
        b = refs["y"].load_matrix((0, 0), _acc(), (ROWS, COLS))
        total = B.matrix_add(B.matrix_mul(a, b), B.matrix_scale(B.matrix_sub(a, b), values["s"]))
        outs["out"].store_matrix((0, 0), total, (ROWS, COLS))
        half = B.matrix_convert(a, T.matrix_type(T.float16, ROWS, COLS, "a", "workgroup"))
        ident = refs["eye"].load_matrix((0, 0), T.matrix_type(T.float16, COLS, COLS, "b", "workgroup"), (COLS, COLS))
        product = B.matrix_mul_add(half, ident, B.matrix_fill(-0.0, _acc()))  # the converted values, exactly
        outs["half"].store_matrix((0, 0), product, (ROWS, COLS))

    inputs = {"x": x.ravel(), "y": y.ravel(), "eye": np.eye(COLS, dtype=np.float16).ravel()}
    outs = {"out": (T.float32, ROWS * COLS), "half": (T.float32, ROWS * COLS)}
    arrays, asm, _ = _run(body, outs, inputs, {"s": np.float32(0.75)})
    want = x * y + (x - y) * np.float32(0.75)
    np.testing.assert_array_equal(arrays["out"].reshape(ROWS, COLS), want)
    np.testing.assert_array_equal(arrays["half"].reshape(ROWS, COLS), x.astype(np.float16).astype(np.float32))
    assert "OpMatrixTimesScalar" in asm and "CooperativeMatrixConversionsNV" in asm


def test_transposed_loads_and_row_clipped_stores():
    rng = np.random.default_rng(5)
    k = rng.standard_normal((100, 64)).astype(np.float16)  # 100 rows of 64: the last block is partial

    def body(refs, outs, values):
        kt = refs["k"].load_matrix(
            (values["row0"], 0), T.matrix_type(T.float16, 64, 48, "b", "workgroup"), (100, 64), transposed=True
        )
        eye = refs["eye"].load_matrix((0, 0), T.matrix_type(T.float16, 64, 64, "a", "workgroup"), (64, 64))
        product = B.matrix_mul_add(eye, kt, B.matrix_fill(-0.0, _acc(48, 64)))  # = Kᵀ of rows row0 .. row0 + 47
        outs["out"].store_matrix((0, 0), product, (64, 48), rows_kept=values["kept"])

    inputs = {"k": k.ravel(), "eye": np.eye(64, dtype=np.float16).ravel()}
    params = {"row0": np.uint32(80), "kept": np.uint32(40)}
    arrays, asm, _ = _run(body, {"out": (T.float16, 64 * 48)}, inputs, params)
    got = arrays["out"].reshape(64, 48)
    want = np.zeros((64, 48), np.float16)
    want[:, :20] = k[80:].T  # rows past the tensor's 100 read +0.0
    want[40:] = 0  # rows from ``kept`` on are not stored
    np.testing.assert_array_equal(got, want)
    assert "TensorView" in asm and "OpTensorViewSetClipNV" in asm


def test_the_verifier_and_builder_refuse_misuse():
    kb = B.KernelBuilder("bad", (128, 1, 1), 32)
    x = kb.buffer("x", T.float32)
    outside = kb.param("outside", T.float32)
    with kb:
        m = x.load_matrix((0, 0), _acc(), (ROWS, COLS))
        with pytest.raises(DTypeError, match="workgroup-scope f32 acc"):
            B.matrix_add(m, B.matrix_fill(0.0, T.matrix_type(T.float32, 16, 16, "acc")))
        with pytest.raises(DTypeError, match="'max',"):
            B.matrix_reduce_rows(m, "min", 16)
        with pytest.raises(DTypeError, match="cannot become"):
            B.matrix_convert(m, T.matrix_type(T.float16, ROWS, 16, "a", "workgroup"))
        B.matrix_map(lambda r, c, e: e * outside, m)  # a kernel value used inside the function
    with pytest.raises(IRError, match="not its own: pass it as an operand"):
        verify_kernel(kb.finish())

    kb = B.KernelBuilder("nonuniform", (128, 1, 1), 32)
    x = kb.buffer("x", T.float32)
    with kb:
        with B.if_(B.local_id(0) < 5):  # a workgroup-scope instruction under a per-invocation condition
            B.matrix_reduce_rows(x.load_matrix((0, 0), _acc(), (ROWS, COLS)), "max", 16)
    with pytest.raises(IRError, match="non-uniform control flow"):
        verify_kernel(kb.finish())

    kb = B.KernelBuilder("nonuniform_operand", (128, 1, 1), 32)
    x = kb.buffer("x", T.float32)
    with kb:  # a map's scalar operand must be the same in the whole workgroup
        B.matrix_map(
            lambda r, c, e, i: B.select(c > i, e, e * 2.0), x.load_matrix((0, 0), _acc(), (ROWS, COLS)), B.local_id(0)
        )
    with pytest.raises(IRError, match="operand %2 differs within a"):
        verify_kernel(kb.finish())


def test_the_zoo_kernel_of_every_instruction_validates_and_round_trips():
    kernel = verify_kernel(flash_matrix_kernel())
    assert vkml.ir.parse(str(kernel)) == kernel
    asm = compile_kernel(kernel, H200).asm
    for capability in ("Reductions", "Conversions", "PerElementOperations"):
        assert f"OpCapability CooperativeMatrix{capability}NV" in asm


def test_a_device_without_the_operations_is_refused():
    kb = B.KernelBuilder("needs_ops", (128, 1, 1), 32)
    x, out = kb.buffer("x", T.float32), kb.buffer("out", T.float32, "write")
    with kb:
        m = x.load_matrix((0, 0), _acc(), (ROWS, COLS))
        out.store_matrix((0, 0), B.matrix_reduce_rows(m, "add", 16), (ROWS, 16))
    kernel = verify_kernel(kb.finish())
    without = DeviceFeatures(**{**H200.__dict__, "cooperative_matrix_workgroup_ops": False})
    with pytest.raises(CompileError, match="cooperativeMatrixReductions"):
        compile_kernel(kernel, without)
