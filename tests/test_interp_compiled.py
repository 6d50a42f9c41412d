"""The compiled interpreter (vkml.ir.interp.compiled) gives the plain interpreter's bits.

Every kernel here runs both ways, the compiled one at several chunk sizes, on the same
inputs; every buffer must come out bit for bit the same, and errors must read the same.
The kernels: the codegen zoo (every instruction on every type, shared memory, barriers,
shuffles, vector access, nested control flow), the kernels vkml's own ops lower to
(reductions, softmax, layer norm, matmul, strided and broadcast views, float16), and
kernels aimed at the strided fast path's edges (wrap-around, negative and out-of-range
indices, colliding stores, a buffer read and written under two names).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from codegen_zoo import kernels_for_coverage

import vkml
from vkml.errors import IRError
from vkml.ir import types as T
from vkml.ir.builder import (
    KernelBuilder,
    barrier,
    bitcast,
    const,
    convert,
    emit,
    global_id,
    if_,
    local_id,
    select,
    workgroup_id,
)
from vkml.ir.interp import reference as interp
from vkml.ir.interp.compiled import compile_kernel
from vkml.ir.interp.compiled import select as blend

RNG = np.random.default_rng(7)


def random_bits(dtype: np.dtype, n: int) -> np.ndarray:
    if dtype == np.bool_:
        return RNG.random(n) < 0.5
    return RNG.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8).view(dtype)


def outcome(kernel, grid, buffers, params, **kwargs):
    """The buffers after a run (or the error it raised), on copies of ``buffers``."""
    arrays = {name: a.copy() for name, a in buffers.items()}
    try:
        interp.run(kernel, grid, arrays, params, **kwargs)
    except (IndexError, IRError) as e:
        return f"{type(e).__name__}: {e}"
    return arrays


def assert_modes_agree(kernel, grid, buffers, params, chunks=(None, 64, 1000)) -> None:
    assert compile_kernel(kernel, interp.dead_values) is not None, f"{kernel.name} did not compile"
    want = outcome(kernel, grid, buffers, params, plain=True)
    for chunk in chunks:
        got = outcome(kernel, grid, buffers, params, max_invocations=chunk)
        if isinstance(want, str) or isinstance(got, str):
            assert got == want, f"{kernel.name}, chunk {chunk}"
            continue
        for name in want:
            assert got[name].view(np.uint8).tobytes() == want[name].view(np.uint8).tobytes(), (
                f"{kernel.name}: buffer {name} differs (chunk {chunk})"
            )


@pytest.mark.parametrize("kernel", kernels_for_coverage(), ids=lambda k: k.name)
def test_zoo_kernels_give_the_same_bits(kernel):
    grid = (5, 1, 1)
    lanes = int(np.prod(kernel.local_size)) * grid[0]
    buffers = {b.name: random_bits(b.dtype.np, 12 * lanes) for b in kernel.buffers}
    names = {p.name for p in kernel.params}
    for n in (lanes, lanes - 7):  # every lane active, then a ragged tail under a mask
        assert_modes_agree(kernel, grid, buffers, {"n": n} if names == {"n"} else {})


def _capture(monkeypatch, build) -> list:
    """The dispatches (kernel, grid, input copies, params) that realizing ``build()`` on the CPU runs."""
    seen = []
    original = interp.run

    def recording(kernel, grid, buffers, params, **kwargs):
        seen.append((kernel, grid, {n: a.copy() for n, a in buffers.items()}, dict(params)))
        original(kernel, grid, buffers, params, **kwargs)

    monkeypatch.setattr(interp, "run", recording)
    vkml.realize(*build())
    monkeypatch.setattr(interp, "run", original)
    return seen


def _ops(x, y, h):
    """Tensors whose kernels cover reductions, loops, shared memory, views and float16."""
    f = vkml.nn.functional
    return (
        vkml.softmax(x, -1),
        vkml.argmax(x, -1),
        x.sum(0),
        x.T.mean(-1),
        f.layer_norm(x, (x.shape[-1],)),
        x @ y,
        f.gelu(x[::2, 1::3]) / (y.T[:48, :1] + 3.0),
        vkml.where(x > 0, vkml.exp(x), vkml.log(x.abs() + 1e-30)),
        (h * h).sum(-1),
        vkml.tanh(h).float() + vkml.sigmoid(x[:40, :1]),
    )


def test_vkml_op_kernels_give_the_same_bits(monkeypatch):
    cpu = vkml.device("cpu")
    data = RNG.standard_normal((96, 200)).astype(np.float32)
    data[3, :7] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-45]
    x = vkml.tensor(data, device=cpu)
    y = vkml.tensor(RNG.standard_normal((200, 96)).astype(np.float32), device=cpu)
    h = vkml.tensor(RNG.standard_normal((40, 300)).astype(np.float16), device=cpu)
    dispatches = _capture(monkeypatch, lambda: _ops(x, y, h))
    assert len(dispatches) >= 10
    for kernel, grid, buffers, params in dispatches:
        assert_modes_agree(kernel, grid, buffers, params)


# ---------------------------------------------------------------- the strided fast path's edges


def offset_copy_kernel(index_type: T.DType):
    """``out[i + shift] = x[i + shift]`` with the index in ``index_type``: affine, maybe wrapping."""
    kb = KernelBuilder(f"offset_copy_{index_type.short}", local_size=(32, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    shift = kb.param("shift", index_type)
    with kb:
        i = global_id(0) if index_type is T.uint32 else convert(workgroup_id(0) * 32 + local_id(0), index_type)
        out[i + shift] = x[i + shift] * 2.0
    return kb.finish()


@pytest.mark.parametrize("index_type", [T.uint32, T.int32, T.int64])
@pytest.mark.parametrize("shift", [0, 5, -3, 200, "wrap"])
def test_affine_indices_wrap_and_range_like_the_plain_interpreter(index_type, shift):
    kernel = offset_copy_kernel(index_type)
    if shift == "wrap":  # i + (2^bits - 1) + ... wraps around to i - 1: out of range for i == 0 only
        shift = (1 << index_type.bits) - 1 if not index_type.is_signed else -1
    if shift < 0 and not index_type.is_signed:
        shift += 1 << index_type.bits
    buffers = {"x": random_bits(np.dtype(np.float32), 300), "out": np.zeros(300, np.float32)}
    assert_modes_agree(kernel, (8, 1, 1), buffers, {"shift": shift})


def test_colliding_and_strided_stores_match():
    kb = KernelBuilder("collide", local_size=(16, 1, 1))
    x = kb.buffer("x", T.uint32, "read")
    out = kb.buffer("out", T.uint32, "write")
    wide = kb.buffer("wide", T.uint32, "write")
    with kb:
        g, lid = workgroup_id(0), local_id(0)
        out[g * 3] = x[lid * 5 + g * 7]  # workgroups overlap: the highest lane wins
        out[g + 100] = lid  # all lanes of a group at one address
        wide[lid * 3 + g * 48] = x[g]  # strided, distinct
        out[lid * 2 + g + 120] = lid + g * 16  # overlapping, with the smaller stride across workgroups
    kernel = kb.finish()
    buffers = {"x": random_bits(np.dtype(np.uint32), 200), "out": np.zeros(200, np.uint32)}
    buffers["wide"] = np.zeros(48 * 6, np.uint32)
    assert_modes_agree(kernel, (6, 1, 1), buffers, {}, chunks=(None, 16, 32, 48))


def test_a_buffer_read_and_written_under_two_names():
    """A load must not see a later store of the same run, even when the arrays alias."""
    kb = KernelBuilder("shift_in_place", local_size=(8, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    with kb:
        i = global_id(0)
        a = x[i + 1]
        out[i] = a
        out[i + 64] = a + 1.0
    kernel = kb.finish()
    memory = RNG.standard_normal(129).astype(np.float32)
    results = {}
    for plain in (True, False):
        shared = memory.copy()
        interp.run(kernel, (8, 1, 1), {"x": shared, "out": shared}, {}, plain=plain)
        results[plain] = shared
    np.testing.assert_array_equal(results[True], results[False])
    np.testing.assert_array_equal(results[False][64:128], memory[1:65] + np.float32(1.0))


def test_select_is_np_where_bit_for_bit():
    for dtype in (np.float32, np.float16, np.int32, np.uint32, np.int64, np.bool_):
        # 20000 lanes: past the length where select counts the condition instead of any()/all()
        shapes_tried = [(50, 50, 50), (1, 50, 50), (50, 1, 50), (50, 50, 1), (1, 1, 50), (50, 1, 1), (1, 1, 1)]
        for shapes in [*shapes_tried, (20000, 20000, 20000), (20000, 1, 20000), (20000, 20000, 1)]:
            for share in (0.0, 0.5, 1.0):  # the condition on no lane, some lanes, every lane
                cond = RNG.random(shapes[0]) < share
                a, b = random_bits(np.dtype(dtype), shapes[1]), random_bits(np.dtype(dtype), shapes[2])
                want, got = np.where(cond, a, b), blend(cond, a, b)
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes(), (dtype, shapes, share)


def test_kernels_the_verifier_rejects_run_plainly():
    kb = KernelBuilder("bad", local_size=(4, 1, 1))
    out = kb.buffer("out", T.uint32, "write")
    with kb:
        with if_(local_id(0) < 2):
            v = local_id(0) + 1
        out[local_id(0)] = v  # used outside the block that defines it
    kernel = kb.finish()
    assert compile_kernel(kernel, interp.dead_values) is None
    with pytest.raises(IRError):
        interp.run(kernel, (1, 1, 1), {"out": np.zeros(4, np.uint32)}, {})


def test_the_compiled_cache_does_not_keep_kernels_alive():
    kernel = offset_copy_kernel(T.uint32)
    interp.run(kernel, (1, 1, 1), {"x": np.zeros(40, np.float32), "out": np.zeros(40, np.float32)}, {"shift": 1})
    alive = weakref.ref(kernel)
    del kernel
    gc.collect()
    assert alive() is None


def test_two_dimensional_workgroups_and_split_local_ids():
    """Per-workgroup loads in a 2-D workgroup, and lanes split as local // c and local % c (matmul's tiles)."""
    kb = KernelBuilder("split_lanes", local_size=(8, 2, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    with kb:
        g = workgroup_id(0)
        lane = local_id(0) + local_id(1) * 8 + g * 16
        out[lane] = x[g] + x[g * 2 + 1]
    kernels = [(kb.finish(), (6, 1, 1))]
    kb = KernelBuilder("split_tiles", local_size=(32, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    tile = kb.shared("tile", T.float32, 40)
    with kb:
        lid, g = local_id(0), workgroup_id(0)
        row, col = emit("idiv", lid, const(4, T.uint32)), emit("irem", lid, const(4, T.uint32))
        tile[col * 9 + row] = x[g * 32 + (lid >> 3) * 8 + (lid & 7)]
        barrier()
        out[g * 64 + row * 8 + col] = tile[row + col * 9] * 2.0
        out[g * 64 + row * 8 + col + 4] = tile[(lid & 3) * 9 + (lid >> 2)]
    kernels.append((kb.finish(), (5, 1, 1)))
    for kernel, grid in kernels:
        buffers = {"x": random_bits(np.dtype(np.float32), 400), "out": np.zeros(400, np.float32)}
        assert_modes_agree(kernel, grid, buffers, {}, chunks=(None, 16, 32, 64))


def test_in_place_steps_leave_shared_arrays_alone():
    """A ufunc writes over an operand that dies at it only where no other value holds that array.

    Here a dying operand is also the array of a live value (a select whose condition holds
    on every lane returns its operand itself, a bitcast is a view), and loads are views of the
    input buffer: writing over any of them would change a stored result or the input.
    """
    kb = KernelBuilder("in_place", local_size=(16, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    bits = kb.buffer("bits", T.uint32, "write")
    with kb:
        i = global_id(0)
        a, b = x[i], x[i + 64]
        tripled = a * 3.0
        kept = select(local_id(0) < 100, tripled, b)  # true on every lane: the product's array itself
        summed = tripled + b  # the product dies here while `kept` holds its array
        scaled = b * 5.0
        raw = bitcast(scaled, T.uint32)  # a view of the product's array
        out[i] = kept
        out[i + 64] = summed + 1.0
        out[i + 128] = scaled - a  # the product's last use: its array is still the bitcast's
        bits[i] = raw
        out[i + 192] = a + b  # loads are views of x: never written
    kernel = kb.finish()
    buffers = {"x": RNG.standard_normal(128).astype(np.float32), "out": np.zeros(256, np.float32)}
    buffers["bits"] = np.zeros(64, np.uint32)
    assert_modes_agree(kernel, (4, 1, 1), buffers, {})
    arrays = {name: a.copy() for name, a in buffers.items()}
    interp.run(kernel, (4, 1, 1), arrays, {})
    x0, x1 = buffers["x"][:64], buffers["x"][64:]
    np.testing.assert_array_equal(arrays["x"], buffers["x"])
    np.testing.assert_array_equal(arrays["out"][:64], x0 * np.float32(3.0))
    np.testing.assert_array_equal(arrays["bits"], (x1 * np.float32(5.0)).view(np.uint32))


@pytest.mark.parametrize("n", [0, 5, 63, 64, 100, 255, 256, 300])
def test_deferred_indices_and_ranged_comparisons(n):
    """Index arithmetic left uncomputed: views, comparisons decided by range, and the slow paths.

    ``i - 5`` wraps below 5 (its view is refused, the masked store computes the lanes), the
    bounds straddle a chunk for some ``n`` and none for others, the constant stands on either
    side, and ``i * 2 + 600`` runs out of range for large ``i`` (the same IndexError either way).
    """
    kb = KernelBuilder("deferred", local_size=(32, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    with kb:
        i = global_id(0)
        with if_(const(n, T.uint32) > i):
            out[i] = x[i * 2] + 1.0
        with if_(i >= 5):
            out[i - 5 + 256] = x[i]
        with if_(i <= 3):
            out[i * 2 + 600] = x[i + 1]
    kernel = kb.finish()
    buffers = {"x": RNG.standard_normal(512).astype(np.float32), "out": np.zeros(608, np.float32)}
    assert_modes_agree(kernel, (8, 1, 1), buffers, {})
    program = compile_kernel(kernel, interp.dead_values)
    assert program.deferred, "the index arithmetic should be deferred"


def test_a_numpy_function_of_the_wrong_type_raises_in_both_modes(monkeypatch):
    """The generated blocks drop the per-run type check only where a one-lane trial proves the type."""
    import dataclasses

    from vkml.ir import instructions

    spec = instructions.SPECS["sub"]
    monkeypatch.setitem(
        instructions.SPECS, "sub", dataclasses.replace(spec, np_fn=lambda a, b: np.subtract(a, b) * 1.0)
    )
    kb = KernelBuilder("wrong_type", local_size=(8, 1, 1))
    x = kb.buffer("x", T.int32, "read")
    out = kb.buffer("out", T.int32, "write")
    with kb:
        i = global_id(0)
        out[i] = x[i] - x[i + 1]
    kernel = kb.finish()
    buffers = {"x": np.arange(17, dtype=np.int32), "out": np.zeros(16, np.int32)}
    plain = outcome(kernel, (2, 1, 1), buffers, {}, plain=True)
    assert isinstance(plain, str) and "sub produced float64" in plain
    assert outcome(kernel, (2, 1, 1), buffers, {}) == plain
