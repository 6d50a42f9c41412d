"""@vkml.kernel: general kernels (index space, shared memory, loops, barriers, subgroups, several outputs)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from optest import assert_same_bits

import vkml
from vkml import debug, dsl
from vkml.cli import main as dump_spirv
from vkml.codegen.features import DeviceFeatures
from vkml.codegen.tools import assemble_and_validate
from vkml.errors import IRError

CPU = vkml.device("cpu")
TILE = 8


@vkml.kernel(outputs=lambda x, scale: (x.shape, x.dtype))
def scaled(x, scale, out):
    i = dsl.global_id(0)
    with dsl.if_(i < x.numel):
        out[i] = x[i] * scale


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@vkml.kernel(
    outputs=lambda a, b: ((a.shape[0], b.shape[1]), a.dtype),
    grid=lambda a, b: (_cdiv(b.shape[1], TILE), _cdiv(a.shape[0], TILE)),
    local_size=(TILE, TILE),
)
def tiled_matmul(a, b, out):
    (m, k), n = a.shape, b.shape[1]
    a_tile, b_tile = dsl.shared(TILE * TILE, dsl.float32), dsl.shared(TILE * TILE, dsl.float32)
    row, col = dsl.global_id(1), dsl.global_id(0)
    ty, tx = dsl.local_id(1), dsl.local_id(0)

    def step(t, acc):
        base = t * TILE
        a_ok = (row < m) & (base + tx < k)
        b_ok = (base + ty < k) & (col < n)
        a_tile[ty * TILE + tx] = dsl.where(a_ok, a[dsl.where(a_ok, row * k + base + tx, 0)], 0.0)
        b_tile[ty * TILE + tx] = dsl.where(b_ok, b[dsl.where(b_ok, (base + ty) * n + col, 0)], 0.0)
        dsl.barrier()
        for j in range(TILE):
            acc = acc + a_tile[ty * TILE + j] * b_tile[j * TILE + tx]
        dsl.barrier()
        return acc

    (acc,) = dsl.loop(0, _cdiv(k, TILE), 1, (dsl.const(0.0, dsl.float32),), step)
    with dsl.if_((row < m) & (col < n)):
        out[row, col] = acc


@vkml.kernel(outputs=lambda x: [(x.shape, x.dtype), (x.shape, vkml.int32)])
def split_parts(x, frac, whole):
    i = dsl.global_id(0)
    with dsl.if_(i < x.numel):
        v = x[i]
        t = dsl.trunc(v)
        frac[i] = v - t
        whole[i] = dsl.convert(t, dsl.int32)


def _dispatches(*tensors) -> int:
    debug.reset_counters()
    vkml.realize(*tensors)
    return debug.counters()["dispatches"]


def test_a_simple_kernel_is_lazy_and_correct():
    x = vkml.tensor([1.0, -2.0, 3.5])
    y = scaled(x, 2.0)
    assert isinstance(y, vkml.Tensor) and not y.node.realized and y.node.op == "kernel"
    assert y.tolist() == [2.0, -4.0, 7.0]


def test_inputs_are_realized_first_views_and_expressions_included():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = vkml.tensor(a)
    y = scaled(x.T * 2 + 1, 0.5)  # an expression over a transposed view
    assert y.shape == (4, 3)
    assert np.array_equal(y.numpy(), (a.T * 2 + 1) * 0.5)
    z = scaled(x, 3.0)
    assert _dispatches(z + 1) == 2  # the kernel, then the consumer; never inlined


def test_tiled_shared_memory_matmul_matches_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((19, 13)).astype(np.float32)
    b = rng.standard_normal((13, 21)).astype(np.float32)
    c = tiled_matmul(vkml.tensor(a), vkml.tensor(b))
    assert c.shape == (19, 21) and _dispatches(c) == 1
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)
    exact = np.zeros((19, 21), np.float32)  # the kernel's own order: k ascending, float32 each step
    for j in range(13):
        exact = exact + a[:, j : j + 1] * b[j : j + 1, :]
    assert_same_bits(c.numpy(), exact, "tile order is k ascending")


def test_tiled_matmul_on_vulkan_gives_the_cpu_bits(gpu):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((33, 17)).astype(np.float32)
    b = rng.standard_normal((17, 10)).astype(np.float32)
    cpu = tiled_matmul(vkml.tensor(a), vkml.tensor(b)).numpy()
    vk = tiled_matmul(vkml.tensor(a, device=gpu), vkml.tensor(b, device=gpu)).numpy()
    assert_same_bits(vk, cpu, "tiled matmul")


def test_several_outputs_run_in_one_dispatch_when_realized_together():
    x = vkml.tensor([1.5, -2.25, 3.0, -0.5])
    frac, whole = split_parts(x * 2)
    assert frac.dtype is vkml.float32 and whole.dtype is vkml.int32
    assert _dispatches(frac, whole) == 2  # x * 2 first (an input is a buffer), then one kernel
    assert frac.tolist() == [0.0, -0.5, 0.0, -0.0] and whole.tolist() == [3, -4, 6, -1]
    frac, whole = split_parts(x)
    assert (frac + whole).tolist() == x.tolist()  # both used by one consumer: one kernel run
    frac, whole = split_parts(x)
    assert whole.tolist() == [1, -2, 3, 0]  # one at a time still works
    assert frac.tolist() == [0.5, -0.25, 0.0, -0.5]


def test_scalar_parameters_do_not_rebuild_or_recompile(gpu):
    x = vkml.tensor(np.arange(100, dtype=np.float32), device=gpu)
    scaled(x, 2.0).numpy()
    built = len(scaled._kernels)
    debug.reset_counters()
    assert scaled(x, -0.5).numpy()[3] == -1.5
    assert debug.counters()["kernels_compiled"] == 0 and debug.counters()["pipelines_created"] == 0
    assert len(scaled._kernels) == built


def test_int_and_bool_parameters():
    @vkml.kernel(outputs=lambda x, k, flip: (x.shape, x.dtype))
    def shift(x, k, flip, out):
        i = dsl.global_id(0)
        with dsl.if_(i < x.numel):
            v = x[i] + k
            out[i] = dsl.where(flip, -v, v)

    x = vkml.tensor(np.int32([1, 2, 3]))
    assert shift(x, 10, False).tolist() == [11, 12, 13]
    assert shift(x, -1, True).tolist() == [0, -1, -2]


def test_subgroup_shuffle_sums_groups_of_four(gpu):
    # Masks 1 and 2 stay within groups of 4 lanes, inside any subgroup of 4 or more.
    assert gpu.features.subgroup_size >= 4, "the device's subgroups are smaller than the test's groups"

    @vkml.kernel(outputs=lambda x: ((x.numel // 4,), x.dtype), grid=lambda x: _cdiv(x.numel, 64), local_size=(64,))
    def quad_sums(x, out):
        i = dsl.global_id(0)
        v = x[dsl.where(i < x.numel, i, 0)]
        v = v + dsl.shuffle_xor(v, 1)
        v = v + dsl.shuffle_xor(v, 2)
        with dsl.if_((i < x.numel) & dsl.eq(i % 4, 0)):
            out[i / 4] = v

    a = np.random.default_rng(2).integers(-100, 100, 256).astype(np.float32)
    cpu = quad_sums(vkml.tensor(a)).numpy()
    vk = quad_sums(vkml.tensor(a, device=gpu)).numpy()
    assert np.array_equal(cpu, a.reshape(-1, 4).sum(1))
    assert_same_bits(vk, cpu, "subgroup shuffle")


def test_outputs_start_undefined_but_readwrite_lets_a_kernel_accumulate():
    @vkml.kernel(outputs=lambda x: (x.shape, x.dtype))
    def twice_in_place(x, out):
        i = dsl.global_id(0)
        with dsl.if_(i < x.numel):
            out[i] = x[i]
            out[i] = out[i] + x[i]

    assert twice_in_place(vkml.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_kernel_results_feed_reductions_and_gradients_stop_there():
    x = vkml.tensor(np.ones((4, 8), np.float32), requires_grad=True)
    y = scaled(x, 3.0)
    assert not y.requires_grad  # custom kernels are not differentiable
    assert y.sum(dim=1).tolist() == [24.0] * 4


# ---------------------------------------------------------------------- mistakes


def test_python_if_in_a_kernel_points_at_the_line():
    @vkml.kernel(outputs=lambda x: (x.shape, x.dtype))
    def branchy(x, out):
        i = dsl.global_id(0)
        if i < x.numel:
            out[i] = x[i]

    with pytest.raises(vkml.DTypeError, match=r"kernel 'branchy' \(.*test_dsl_kernel.py:\d+\).*dsl.where") as info:
        branchy(vkml.tensor([1.0]))
    assert "if i < x.numel:" in str(info.value)


def test_store_of_the_wrong_type_points_at_the_line():
    @vkml.kernel(outputs=lambda x: (x.shape, vkml.int32))
    def wrong(x, out):
        i = dsl.global_id(0)
        with dsl.if_(i < x.numel):
            out[i] = x[i]

    with pytest.raises(vkml.DTypeError, match=r"test_dsl_kernel.py:\d+\): store of f32 into i32 buffer 'out'"):
        wrong(vkml.tensor([1.0]))


def test_float16_loads_as_float16_and_stores_need_narrowing():
    @vkml.kernel(outputs=lambda x: (x.shape, vkml.float16))
    def halve(x, out):
        i = dsl.global_id(0)
        with dsl.if_(i < x.numel):
            out[i] = dsl.f32_to_f16(dsl.convert(x[i], dsl.float32) * (1 / 3))

    a = np.float16([1.0, 3.0, -6.0, 65504.0])
    want = (a.astype(np.float32) * np.float32(1 / 3)).astype(np.float16)
    assert_same_bits(halve(vkml.tensor(a)).numpy(), want)

    @vkml.kernel(outputs=lambda x: (x.shape, vkml.float16))
    def unnarrowed(x, out):
        out[dsl.global_id(0)] = dsl.convert(x[dsl.global_id(0)], dsl.float32)

    with pytest.raises(
        vkml.DTypeError, match="store of f32 into f16 buffer 'out'; narrow it first with dsl.f32_to_f16"
    ):
        unnarrowed(vkml.tensor(a))


def test_wrong_arguments_are_refused_at_the_call():
    x = vkml.tensor([1.0])
    with pytest.raises(TypeError, match=r"scaled\(x, scale\): missing a required argument: 'scale'"):
        scaled(x)
    with pytest.raises(TypeError, match="too many positional arguments"):
        scaled(x, 1.0, x)

    @vkml.kernel(outputs=lambda *xs: (xs[0].shape, xs[0].dtype))
    def loose(x, y, out):
        pass

    with pytest.raises(TypeError, match="takes 3 parameters, but with 1 input"):
        loose(x)
    with pytest.raises(TypeError, match=r"argument 'scale' is a list"):
        scaled(x, [1.0])
    with pytest.raises(TypeError, match="needs at least one vkml.Tensor"):
        scaled(1.0, 2.0)
    with pytest.raises(vkml.DTypeError, match="does not fit the int32 parameter"):
        scaled(x, 2**40)


def test_bad_outputs_and_grids_are_refused():
    with pytest.raises(TypeError, match="outputs= must be a function"):
        vkml.kernel(outputs=((1,), vkml.float32))(lambda x, out: None)

    @vkml.kernel(outputs=lambda x: x.shape)
    def no_dtype(x, out):
        pass

    with pytest.raises(TypeError, match=r"outputs= must give \(shape, dtype\)"):
        no_dtype(vkml.tensor([1.0]))

    @vkml.kernel(outputs=lambda x: (x.shape, x.dtype), grid=lambda x: 70000)
    def huge(x, out):
        pass

    with pytest.raises(vkml.ShapeError, match="more than 65535 workgroups along one axis"):
        huge(vkml.tensor([1.0]))


def test_a_barrier_in_divergent_control_flow_is_caught_by_the_verifier():
    @vkml.kernel(outputs=lambda x: (x.shape, x.dtype))
    def divergent(x, out):
        i = dsl.global_id(0)
        with dsl.if_(i < 1):
            dsl.barrier()

    with pytest.raises(IRError, match="kernel 'divergent'"):
        divergent(vkml.tensor([1.0]))


def test_shared_arrays_only_in_kernels():
    op = vkml.elementwise(lambda x: x + dsl.shared(4, dsl.float32)[0], name="sharing")
    try:
        with pytest.raises(Exception, match=r"dsl.shared\(...\) is only available in a @vkml.kernel body"):
            op(vkml.tensor([1.0]))
    finally:
        vkml.dsl.elementwise.remove(op)


def test_dump_spirv_shows_a_custom_kernel(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_kernels_mod.py").write_text(
        "import vkml\nfrom vkml import dsl\n\n\n@vkml.kernel(outputs=lambda x: (x.shape, x.dtype))\n"
        "def double(x, out):\n    i = dsl.global_id(0)\n    with dsl.if_(i < x.numel):\n        out[i] = x[i] * 2.0\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_kernels_mod", raising=False)
    assert dump_spirv(["my_kernels_mod:double", "--shape", "1024", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "kernel K_double local_size(64, 1, 1)" in out
    asm = out.split("; ---- SPIR-V")[1].split("\n", 1)[1]
    assemble_and_validate(asm, DeviceFeatures.lavapipe_like().target_env)
    monkeypatch.delitem(sys.modules, "my_kernels_mod", raising=False)
