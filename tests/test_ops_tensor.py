"""The tensor front end against PyTorch: creation (tensor, zeros, ones, full, arange), ``.to(dtype)``
between float32/float16/int32/int64/bool, realizing (numpy, item, tolist, vkml.frontend.realize), and
eager mode giving the same bits as lazy mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import (
    F32_SPECIALS,
    INT_SPECIALS,
    assert_same_bits,
    bits,
    from_torch,
    random_floats,
    to_torch,
    vk,
)

import vkml
import vkml.nn.functional as VF

DTYPES = {
    "float32": (vkml.float32, np.float32, torch.float32),
    "float16": (vkml.float16, np.float16, torch.float16),
    "int32": (vkml.int32, np.int32, torch.int32),
    "int64": (vkml.int64, np.int64, torch.int64),
    "bool": (vkml.bool, np.bool_, torch.bool),
}


def _source(name: str) -> np.ndarray:
    """Values of dtype ``name`` that stress every conversion out of it."""
    g = np.random.default_rng(70)
    if name == "float32":
        wide = (g.standard_normal(400) * np.exp2(g.integers(-30, 70, 400))).astype(np.float32)
        edges = np.array([2.5, -2.5, 0.5, 65519.996, 65520.0, 2**31, -(2**31), 2**31 - 128, 2**63, 1e-8], np.float32)
        return np.concatenate([F32_SPECIALS, edges, wide])
    if name == "float16":
        return np.concatenate(
            [
                np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 65504, 6e-8, -2.5], np.float16),
                (g.standard_normal(300) * 900).astype(np.float16),
            ]
        )
    if name == "bool":
        return np.array([True, False, True])
    ints = INT_SPECIALS[DTYPES[name][1]]
    return np.concatenate([ints, np.array([65504, 65520, 2**24 + 1, 16777219, -70000], ints.dtype)])


@pytest.mark.parametrize("dst", list(DTYPES))
@pytest.mark.parametrize("src", list(DTYPES))
def test_to_dtype_like_torch(src, dst):
    x = _source(src)
    got = vk(x).to(DTYPES[dst][0])
    assert got.dtype is DTYPES[dst][0]
    want = from_torch(to_torch(x).to(DTYPES[dst][2]))
    assert_same_bits(got.numpy(), want, f"{src} -> {dst}")


def test_float32_to_float16_narrowing_bits_like_torch_on_random_patterns():
    # 2^16 random bit patterns: normals, subnormals, overflow, NaN payloads (sign and quiet bit kept as torch).
    patterns = np.random.default_rng(71).integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    x = patterns.view(np.float32)
    got = vk(x).half().numpy()
    want = from_torch(to_torch(x).half())
    assert np.array_equal(bits(got), bits(want)), "float32 -> float16 bits (NaN payloads included)"


def test_conversion_methods_and_errors():
    t = vk(np.array([1.7, -2.2], np.float32))
    assert t.int().tolist() == [1, -2] and t.long().dtype is vkml.int64 and t.bool().tolist() == [True, True]
    assert t.half().dtype is vkml.float16 and t.half().float().dtype is vkml.float32
    assert t.to(vkml.float32) is t
    with pytest.raises(NotImplementedError, match="no uint32 tensors"):  # a dtype object only (test_uint16.py)
        t.to(vkml.uint32)
    with pytest.raises(vkml.DeviceError, match="unknown device"):
        t.to("float64")


# ---------------------------------------------------------------------- creation


@pytest.mark.parametrize(
    "data",
    [[1, 2, 3], [1.5, -2.0], [True, False], [[1, 2], [3, 4]], 3, 2.5, True, [], [[]]],
    ids=lambda d: repr(d),
)
def test_tensor_from_python_values_like_torch(data):
    got = vkml.tensor(data)
    want = torch.tensor(data)
    assert got.shape == tuple(want.shape)
    assert got.dtype is DTYPES[str(want.dtype).removeprefix("torch.")][0]
    assert_same_bits(got.numpy(), from_torch(want), f"tensor({data!r})")


def test_tensor_from_numpy_and_dtype_argument():
    assert vkml.tensor(np.arange(3, dtype=np.float64)).dtype is vkml.float64  # as torch.tensor
    for np_dtype, dt in (
        (np.float16, vkml.float16),
        (np.uint8, vkml.uint8),
        (np.int8, vkml.int8),
        (np.int16, vkml.int16),
        (np.int32, vkml.int32),
        (np.int64, vkml.int64),
        (np.bool_, vkml.bool),
    ):
        assert vkml.tensor(np.zeros(2, np_dtype)).dtype is dt
    t = vkml.tensor([1.7, -1.7, 300.0], dtype=vkml.float16)
    assert_same_bits(t.numpy(), np.array([1.7, -1.7, 300.0], np.float16), "tensor(dtype=float16)")
    assert vkml.tensor([1, 2], dtype="int32").dtype is vkml.int32
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):  # PyTorch's error
        vkml.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="ragged"):  # a number where a sequence was: PyTorch's TypeError
        vkml.tensor([[1.0], 2.0])


@pytest.mark.parametrize(
    "call, torch_call",
    [
        (lambda: vkml.zeros(2, 3), lambda: torch.zeros(2, 3)),
        (lambda: vkml.zeros((2, 3), dtype=vkml.int32), lambda: torch.zeros((2, 3), dtype=torch.int32)),
        (lambda: vkml.zeros(0), lambda: torch.zeros(0)),
        (lambda: vkml.ones(4), lambda: torch.ones(4)),
        pytest.param(lambda: vkml.ones(2, 2, dtype=vkml.bool), lambda: torch.ones(2, 2, dtype=torch.bool)),
        (lambda: vkml.ones((), dtype=vkml.float16), lambda: torch.ones((), dtype=torch.float16)),
        (lambda: vkml.full((2, 3), 2.5), lambda: torch.full((2, 3), 2.5)),
        (lambda: vkml.full((2,), 7), lambda: torch.full((2,), 7)),
        pytest.param(lambda: vkml.full((2,), True), lambda: torch.full((2,), True)),
        (lambda: vkml.full((3,), 0.1, dtype=vkml.float16), lambda: torch.full((3,), 0.1, dtype=torch.float16)),
        (lambda: vkml.full((3,), float("nan")), lambda: torch.full((3,), float("nan"))),
        (lambda: vkml.full(4, -0.0), lambda: torch.full((4,), -0.0)),
        (lambda: vkml.arange(5), lambda: torch.arange(5)),
        (lambda: vkml.arange(1, 10, 3), lambda: torch.arange(1, 10, 3)),
        (lambda: vkml.arange(10, 0, -3), lambda: torch.arange(10, 0, -3)),
        (lambda: vkml.arange(0, 1, 0.1), lambda: torch.arange(0, 1, 0.1)),
        (lambda: vkml.arange(0.5, 3), lambda: torch.arange(0.5, 3)),
        (lambda: vkml.arange(-1, 1, 0.25), lambda: torch.arange(-1, 1, 0.25)),
        (lambda: vkml.arange(5, dtype=vkml.float16), lambda: torch.arange(5, dtype=torch.float16)),
        (lambda: vkml.arange(0), lambda: torch.arange(0)),
        (lambda: vkml.arange(3, 3), lambda: torch.arange(3, 3)),
    ],
)
def test_creation_like_torch(call, torch_call):
    got, want = call(), torch_call()
    assert got.shape == tuple(want.shape)
    assert_same_bits(got.numpy(), from_torch(want), "creation")


def test_creation_errors():
    with pytest.raises(RuntimeError, match="step"):  # PyTorch's type
        vkml.arange(0, 4, 0)
    with pytest.raises(ValueError, match="non-negative"):
        vkml.zeros(-1)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):  # as PyTorch (numpy gives [])
        vkml.arange(3, 1)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        vkml.arange(0, 1, -0.5)


# ---------------------------------------------------------------------- realizing


def test_numpy_item_tolist():
    x = random_floats((3, 4), seed=72)
    t = vk(x) + 0
    out = t.numpy()
    assert out.dtype == np.float32 and out.shape == (3, 4)
    out[0, 0] = 123.0  # a copy: the tensor keeps its values
    assert_same_bits(t.numpy(), x, "numpy() returns a copy")
    assert t.tolist() == x.tolist()
    assert isinstance(t[1, 2].item(), float) and t[1, 2].item() == float(x[1, 2])
    assert isinstance(vkml.arange(3)[1].item(), int) and isinstance((vkml.arange(3) > 1)[2].item(), bool)
    assert vkml.arange(6, dtype=vkml.int32).reshape(2, 3).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert vkml.tensor(2.5).tolist() == 2.5
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()
    assert float(vkml.tensor([1.5])) == 1.5 and int(vkml.tensor([3])) == 3 and bool(vkml.tensor([True]))
    assert len(t) == 3


def test_realize_several_tensors_at_once():
    a = vk(random_floats((5,), seed=73))
    b, c = a * 2, (a + 1).sum()
    assert not b.node.realized and not c.node.realized
    out = vkml.realize(b, c)
    assert out == (b, c) and b.node.realized and c.node.realized
    assert_same_bits(b.numpy(), a.numpy() * np.float32(2), "realized b")
    assert vkml.realize(b) is b


def _graphs():
    x = random_floats((6, 20), seed=74)
    h = x.astype(np.float16)
    return [
        ("sum chain", lambda: (vk(x) * 2 + 1).sum(1) * 3),
        ("softmax", lambda: vkml.softmax(vk(x), 1)),
        ("matmul", lambda: vk(x) @ vk(x).T),
        ("exp log", lambda: vkml.exp(vk(x)) - vkml.log(vkml.abs(vk(x)) + 1)),
        ("float16 chain", lambda: (vk(h) * 0.1 + vk(h)) / 3 - vk(h).amax(0)),
        ("views", lambda: vkml.cat([vk(x)[:, ::2].flip(1), vk(x).T[:10].T], 1).relu()),
        ("gelu", lambda: VF.gelu(vk(x)).mean(0)),
    ]


@pytest.fixture
def lazy_then_eager():
    """Runs the test body in lazy mode first; ``switch()`` turns eager mode on; restored afterwards."""
    saved = vkml.graph.build._eager_override  # None unless someone called set_eager: VKML_EAGER decides
    vkml.set_eager(False)
    yield lambda: vkml.set_eager(True)
    vkml.graph.build._eager_override = saved


@pytest.mark.parametrize("name, build", _graphs(), ids=[g[0] for g in _graphs()])
def test_eager_mode_gives_the_same_bits_as_lazy(name, build, lazy_then_eager):
    lazy_out = build()
    assert not lazy_out.node.realized
    lazy = lazy_out.numpy()
    lazy_then_eager()
    out = build()
    assert out.node.realized, "eager mode runs every op at once"
    assert_same_bits(out.numpy(), lazy, f"{name}: eager against lazy")


@pytest.mark.parametrize("value, realized", [("1", True), ("0", False)])
def test_vkml_eager_from_the_environment_runs_each_op(value, realized):
    """VKML_EAGER is read when vkml is imported (every op asks, so it is not read per op)."""
    import os
    import subprocess
    import sys

    code = "import vkml; y = vkml.tensor([1.0, 2.0]) * 2; print(y.node.realized, y.tolist())"
    env = dict(os.environ, VKML_EAGER=value)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(realized), "[2.0,", "4.0]"]


def _shape_of_node(node):
    """What an op's node holds, sources included, minus the identity of the objects."""
    srcs = tuple((s.op, s.shape, s.dtype, s.arg if s.op == "const" else None) for s in node.srcs)
    for s in node.srcs:
        if s.op == "view":
            srcs += ((s.srcs[0].op, s.srcs[0].arg, s.srcs[0].dtype),)
    return node.op, node.arg, node.shape, node.dtype, srcs


@pytest.mark.parametrize("name", ["add", "mul", "div", "maximum", "eq", "lt", "logical_and"])
def test_a_binary_op_met_again_builds_what_the_general_path_builds(name):
    """lazy.binary_fast reuses the promotion decision of operands of the same kinds: the node
    it builds is the one lazy.elementwise's checks build, and an error is raised every time."""
    from vkml.graph import build as lazy

    dtypes = [vkml.bool, vkml.float16, vkml.float32, vkml.int32, vkml.int64]
    tensors = [vkml.ones(shape, dtype=d).node for d in dtypes for shape in ((), (3,))]
    scalars = [True, 3, -2.5]
    pairs = [(x, y) for x in tensors for y in tensors if x.shape == y.shape]
    pairs += [(x, s) for x in tensors for s in scalars] + [(s, x) for x in tensors for s in scalars]
    for x, y in pairs:
        built = []
        for attempt in range(2):  # the first decides and remembers, the second may take the fast path
            if attempt == 0:
                lazy._binary_kinds.clear()
            try:
                built.append(_shape_of_node(lazy.elementwise(name, [x, y])))
            except vkml.DTypeError as e:
                built.append(str(e))
        assert built[0] == built[1], (x, y)
        fast = lazy.binary_fast(name, x, y)
        if not isinstance(built[0], str):
            assert fast is not None and _shape_of_node(fast) == built[0], (x, y)
        else:
            assert fast is None
