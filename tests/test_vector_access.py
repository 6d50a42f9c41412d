"""The IR's vector memory access: ``vload`` / ``vstore`` of aligned groups of four elements.

The interpreter defines them element by element; on Vulkan one vector load serves every
``vload`` of the same read-only vector, and ``vstore`` writes one vector. Same bits either way.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from vkml.codegen import compile_kernel, emit_spirv
from vkml.codegen.features import DeviceFeatures
from vkml.errors import DTypeError, IRError
from vkml.ir import parse, verify
from vkml.ir import types as T
from vkml.ir.builder import KernelBuilder, const, global_id, if_
from vkml.ir.interp import reference as interp
from vkml.runtime.base import Dispatch

LAVAPIPE = DeviceFeatures.lavapipe_like()


def shuffle_kernel(dtype: T.DType, access: str = "read"):
    """Group q of ``out`` gets (x3, x2, y1, x0) of groups q of x and y; ``y`` is overwritten by x's group."""
    kb = KernelBuilder(f"vshuffle_{dtype.short}", (32, 1, 1))
    x = kb.buffer("x", dtype, access)
    y = kb.buffer("y", dtype, "readwrite")
    out = kb.buffer("out", dtype, "write")
    groups = kb.param("groups", T.uint32)
    with kb:
        q = global_id(0)
        with if_(q < groups):
            a, b = x.load4(q), y.load4(q)
            out.store4(q, (a[3], a[2], b[1], a[0]))
            y.store4(q, a)
    return kb.finish()


def expected(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    gx, gy = x.reshape(-1, 4), y.reshape(-1, 4)
    out = np.stack([gx[:, 3], gx[:, 2], gy[:, 1], gx[:, 0]], axis=1).reshape(-1)
    return out, x.copy()


def arrays(dtype: T.DType, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is T.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype.is_float:
        return rng.standard_normal(n).astype(dtype.np)
    return rng.integers(-1000 if dtype.is_signed else 0, 1000, n).astype(dtype.np)


STORAGE_TYPES = [T.float32, T.float16, T.int32, T.uint32, T.int64, T.bool_]


def test_interpreter_reads_and_writes_element_by_element():
    x, y = arrays(T.float32, 40, 1), arrays(T.float32, 40, 2)
    out = np.zeros(40, np.float32)
    buffers = {"x": x, "y": y.copy(), "out": out}
    interp.run(shuffle_kernel(T.float32), (1, 1, 1), buffers, {"groups": 10})
    want_out, want_y = expected(x, y)
    assert np.array_equal(out, want_out)
    assert np.array_equal(buffers["y"], want_y)


def test_interpreter_raises_on_a_vector_past_the_end():
    x = np.zeros(6, np.float32)  # group 1 would need elements 4..7
    with pytest.raises(IndexError, match=r"vload buffer 'x' at index 6, out of range for length 6"):
        interp.run(
            shuffle_kernel(T.float32), (1, 1, 1), {"x": x, "y": np.zeros(8, np.float32), "out": x * 0}, {"groups": 2}
        )


def test_text_round_trip():
    kernel = shuffle_kernel(T.int64)
    text = str(kernel)
    assert re.search(r"= vload x\[%\d+\], 3\s+: i64", text)
    assert re.search(r"vstore out\[%\d+\], %\d+, %\d+, %\d+, %\d+", text)
    back = parse(text)
    assert back == kernel and str(back) == text


def test_builder_and_verifier_errors():
    kb = KernelBuilder("bad", (4, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    with kb:
        with pytest.raises(IRError, match="component 4 is not below the vector width 4"):
            x.vload(0, 4)
        with pytest.raises(IRError, match="vload from write-only buffer 'out'"):
            out.vload(0, 0)
        with pytest.raises(IRError, match="vstore to read-only buffer 'x'"):
            x.store4(0, (1.0, 2.0, 3.0, 4.0))
        with pytest.raises(IRError, match="vstore takes 4 values, got 3"):
            out.store4(0, (1.0, 2.0, 3.0))
        with pytest.raises(DTypeError, match="vstore of i32"):
            out.store4(0, (x[0], x[1], x[2], const(1, T.int32)))
    text = """kernel bad local_size(4, 1, 1) {
  buffer x: f32 read
  buffer out: f32 write

  %0 = global_id 0 : u32
  %1 = vload x[%0], 5 : f32
}
"""
    with pytest.raises(IRError, match="vload attrs are .*a buffer name and a component below 4"):
        verify(parse(text))
    short_store = text.replace("%1 = vload x[%0], 5 : f32", "%1 = vload x[%0], 1 : f32\n  vstore out[%0], %1, %1")
    with pytest.raises(IRError, match="vstore takes 5 operand"):
        verify(parse(short_store))
    wrong_buffer = text.replace("%1 = vload x[%0], 5 : f32", "%1 = vload out[%0], 1 : f32")
    with pytest.raises(IRError, match="load from write-only buffer 'out'"):
        verify(parse(wrong_buffer))


def test_one_vector_load_serves_every_vload_of_a_read_only_vector():
    asm = emit_spirv(shuffle_kernel(T.float32), LAVAPIPE)
    assert len(re.findall(r"OpLoad %v4float %t\d+_x_vec_at", asm)) == 1
    # y is written in between: each of its vloads loads again
    assert len(re.findall(r"OpLoad %v4float %t\d+_y_vec_at", asm)) == 4
    assert len(re.findall(r"OpStore %t\d+_(out|y)_vec_at", asm)) == 2
    # the vector view aliases the buffer's binding
    assert re.search(r"OpDecorate %buf0_x_vec Binding 0", asm) and re.search(r"OpDecorate %buf0_x Binding 0", asm)


@pytest.mark.parametrize("dtype", STORAGE_TYPES, ids=lambda t: t.short)
def test_same_bits_on_vulkan_for_every_storage_type(dtype, gpu):
    n = 4 * 70
    x, y = arrays(dtype, n, 3), arrays(dtype, n, 4)
    kernel = shuffle_kernel(dtype)
    cpu = {"x": x, "y": y.copy(), "out": np.zeros(n, dtype.np)}
    interp.run(kernel, (3, 1, 1), cpu, {"groups": 70})
    buffers = {}
    for name, a in (("x", x), ("y", y), ("out", np.zeros(n, dtype.np))):
        buffers[name] = gpu.allocate(dtype, n)
        gpu.upload(buffers[name], a)
    gpu.run([Dispatch(kernel, (3, 1, 1), buffers, {"groups": 70})])
    for name in ("out", "y"):
        got, want = gpu.download(buffers[name]), cpu[name]
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), name
    assert np.array_equal(cpu["out"], expected(x, y)[0])


def test_buffers_by_device_address_use_scalar_access():
    compiled = compile_kernel(shuffle_kernel(T.float32), LAVAPIPE, by_address={0, 2})
    assert "%buf0_x_vec" not in compiled.asm and "%buf2_out_vec" not in compiled.asm
    assert "%buf1_y_vec" in compiled.asm  # y still goes through its descriptor
    assert len(re.findall(r"OpLoad %float %t\d+_x_at Aligned 4", compiled.asm)) == 4
    assert len(re.findall(r"OpStore %t\d+_out_at %\S+ Aligned 4", compiled.asm)) == 4
