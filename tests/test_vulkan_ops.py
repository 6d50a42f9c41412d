"""Every op on Vulkan (lavapipe in CI, the H200 on the GPU machine) gives the CPU reference's bits."""

import numpy as np
import pytest
from optest import F32_SPECIALS

import vkml
from vkml.ir import types as T
from vkml.ops.registry import REGISTRY

CPU = vkml.device("cpu")


# The op tests' specials, plus float16's edges (a float32 input narrowed by .half() sees them).
SPECIALS = np.concatenate([F32_SPECIALS, np.array([65504.0, 65520.0, 6e-8, 20.5, -20.5], dtype=np.float32)])


def _inputs(dtype, n, seed, specials=True):
    rng = np.random.default_rng(seed)
    if dtype is T.bool_:
        return rng.random(n) < 0.5
    if dtype.is_int:
        info = np.iinfo(dtype.np)
        a = rng.integers(-1000, 1000, n).astype(dtype.np)
        a[: min(n, 4)] = np.array([info.min, info.max, 0, -1]).astype(dtype.np)[: min(n, 4)]
        return a
    a = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    if specials:
        k = min(n, len(SPECIALS))
        a[:k] = SPECIALS[:k]
        rng.shuffle(a)
    return a if dtype is T.bfloat16 else a.astype(dtype.np)  # bfloat16: float32 values, rounded by vkml.tensor


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        if not np.array_equal(nan, np.isnan(y)):
            return False
        u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
        return np.array_equal(x.view(u)[~nan], y.view(u)[~nan])
    return np.array_equal(x, y)


def _on_both(fn, arrays, gpu, dtypes=None):
    """``fn``'s results on the CPU and on ``gpu`` as numpy arrays (bfloat16 as its float32 values)."""
    dtypes = dtypes or [None] * len(arrays)
    cpu_out = fn(*[vkml.tensor(a, dtype=d, device=CPU) for a, d in zip(arrays, dtypes)])
    gpu_out = fn(*[vkml.tensor(a, dtype=d, device=gpu) for a, d in zip(arrays, dtypes)])
    return cpu_out._host_values(), gpu_out._host_values()


def _elementwise_cases():
    for op in REGISTRY.values():
        if op.kind != "elementwise":
            continue
        for dtype in op.dtypes:
            yield pytest.param(op.name, dtype, id=f"{op.name}-{dtype.name}")


@pytest.mark.parametrize(("name", "dtype"), list(_elementwise_cases()))
def test_elementwise_op_same_bits_as_cpu(name, dtype, gpu):
    from vkml.frontend import operators as functions
    from vkml.graph import build as lazy

    op = REGISTRY[name]
    arity = op.body.__code__.co_argcount
    n = 1000  # not a multiple of the workgroup size, larger than one workgroup
    arrays = [_inputs(dtype, n, seed) for seed in range(arity)]
    dtypes = [dtype] * arity
    if name == "where":
        arrays[0], dtypes[0] = _inputs(T.bool_, n, 9), T.bool_

    def fn(*xs):
        return functions._wrap(lazy.elementwise(name, [x.node for x in xs]))

    c, g = _on_both(fn, arrays, gpu, dtypes)
    if op.reads_nan_sign:  # a NaN's sign is not kept across devices: compare where no input is NaN
        keep = ~np.any([np.isnan(a) for a in arrays if a.dtype.kind == "f"], axis=0)
        c, g = c[keep], g[keep]
    assert _same_bits(c, g), f"{name}({dtype.name}): Vulkan differs from CPU at {np.flatnonzero(c != g)[:8]}"


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin"])
# Named ids: conftest's DTYPE_TABLES rule runs the rows of dtypes other than float32 and float16 with -m stress.
@pytest.mark.parametrize(
    "dtype",
    [T.float32, T.float16, T.int32, T.int64, T.float64, T.bfloat16, T.uint8, T.int8, T.int16],
    ids=lambda dtype: dtype.name,
)
@pytest.mark.parametrize("shape_dim", [((3, 700), 1), ((700, 3), 0), ((5, 6, 7), (0, 2)), ((300,), None)])
def test_reduction_same_bits_as_cpu(name, dtype, shape_dim, gpu):
    shape, dim = shape_dim
    if name.startswith("arg") and isinstance(dim, tuple):
        dim = dim[0]
    a = _inputs(dtype, int(np.prod(shape)), 3, specials=name not in ("sum", "prod")).reshape(shape)
    c, g = _on_both(lambda x: getattr(x, name)(dim=dim), [a], gpu, [dtype])
    assert _same_bits(c, g)


@pytest.mark.parametrize("dtype", [T.float32, T.float16])
def test_shift_max_same_bits_as_cpu(dtype, gpu):
    a = _inputs(dtype, 3 * 700, 4).reshape(3, 700)
    for dim in (1, 0, None):
        c, g = _on_both(lambda x, dim=dim: vkml.frontend.operators._shift_max(x, dim), [a], gpu)
        assert _same_bits(c, g), f"shift_max(dim={dim})"


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: vkml.softmax(x, dim=1),
        lambda x: vkml.log_softmax(x, dim=0),
        lambda x: vkml.logsumexp(x, dim=1),
        lambda x: x.mean(dim=1),
        lambda x: x @ x.T,
        lambda x: vkml.cat([x, x.flip(0)[:, ::3]], dim=1),
        lambda x: x.T[2:, ::2].reshape(-1) * 2,
        lambda x: x.to(vkml.int32).to(vkml.float16),
        lambda x: x.half().float(),
        lambda x: vkml.where(x > 0, x, x * 0.5).amax(),
    ],
    ids=["softmax", "log_softmax", "logsumexp", "mean", "matmul", "cat", "views", "casts", "f16-round-trip", "where"],
)
def test_composites_same_bits_as_cpu(fn, gpu):
    a = _inputs(T.float32, 48 * 37, 5, specials=False).reshape(48, 37)
    c, g = _on_both(fn, [a], gpu)
    assert _same_bits(c, g)


def test_large_elementwise_and_reduction_over_2_20_elements(gpu):
    n = (1 << 20) + 3
    a = _inputs(T.float32, n, 11, specials=False)
    b = _inputs(T.float32, n, 12, specials=False)
    c, g = _on_both(lambda x, y: (x * y + 1.0) / (vkml.abs(y) + 1.0), [a, b], gpu)
    assert _same_bits(c, g)
    c, g = _on_both(lambda x: x.sum(), [a], gpu)
    assert _same_bits(c, g)


def test_mixed_devices_raise_eagerly(gpu):
    a = vkml.ones(3)
    b = vkml.ones(3, device=gpu)
    with pytest.raises(vkml.DeviceError, match=rf"'matmul' operands are on different devices: cpu and {gpu.name}"):
        a @ b
    with pytest.raises(vkml.DeviceError, match="'add' operands are on different devices"):
        a + b
    assert (a + 1).tolist() == [2.0, 2.0, 2.0]  # the process keeps working


def test_vulkan_supports_a_subset_of_what_cpu_supports():
    from vkml.codegen.spirv_ops import OPCODES
    from vkml.ir.instructions import SPECS

    for op in REGISTRY.values():
        if "vulkan" in op.backends:
            assert "cpu" in op.backends, op.name
    pure = {name for name, spec in SPECS.items() if spec.kind == "pure"}
    interpreted = {name for name in pure if SPECS[name].np_fn is not None}
    assert set(OPCODES) & pure <= interpreted
    assert interpreted == pure  # the interpreter executes every pure instruction
