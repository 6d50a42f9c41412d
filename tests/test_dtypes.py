"""float64, uint8, int8, int16 and bfloat16 (issue 17) against PyTorch, on the CPU and on Vulkan.

One table of ops runs over every new dtype: the results must have PyTorch's bits wherever
PyTorch's result is exact (elementwise arithmetic, comparisons, casts, integer reductions), and
the CPU's and Vulkan's bits must be equal always (NaN compared by NaN-ness). Promotion is
checked over every pair of dtypes against ``torch.result_type``.
"""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
import torch
from optest import tree_reduce

import vkml
from vkml.codegen.features import DeviceFeatures
from vkml.dsl import elementwise as custom

NEW = ("float64", "uint8", "int8", "int16", "bfloat16")
ALL = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")


def vk_dtype(name: str) -> vkml.ir.types.DType:
    return vkml.bool if name == "bool" else getattr(vkml, name)


def torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def inputs(name: str, n: int = 64, seed: int = 0) -> torch.Tensor:
    """Edge values of the dtype, then random ones (torch tensors of the dtype)."""
    g = np.random.default_rng(seed)
    if name in ("uint8", "int8", "int16"):
        info = np.iinfo(name)
        edges = [info.min, info.min + 1, -1, 0, 1, 2, 7, info.max - 1, info.max]
        values = np.concatenate(
            [[e for e in edges if info.min <= e <= info.max], g.integers(info.min, info.max + 1, n)]
        )
        return torch.tensor(values.astype(name))
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, float("inf"), float("-inf"), float("nan"), 65504.0]
    if name == "float64":
        edges += [5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1e300, 2.0**53 + 1, 1 - 2.0**-53]
    else:
        edges += [3.3895313892515355e38, 9.183549615799121e-41, 2.0**-126, 0.1]
    randoms = g.standard_normal(n) * 10.0 ** g.integers(-5, 6, n)
    return torch.tensor(np.concatenate([edges, randoms]), dtype=torch.float64).to(torch_dtype(name))


def to_vk(t: torch.Tensor, device) -> vkml.Tensor:
    if t.dtype == torch.bfloat16:
        return vkml.tensor(t.float().numpy(), dtype=vkml.bfloat16, device=device)
    return vkml.tensor(t.numpy(), device=device)


def stored(t) -> np.ndarray:
    """The stored elements of a vkml or torch tensor (bfloat16: its bits as int16)."""
    if isinstance(t, torch.Tensor):
        return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
    return t._stored()


def assert_same(got, want, what: str, zero_sign: bool = True) -> None:
    """Same dtype and bits; NaN by NaN-ness (devices need not keep a NaN's bits); ``zero_sign=False``:
    +0 and -0 count as equal (maximum/minimum's documented divergence, docs/ops/maximum.md)."""
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), f"{what}: {got.dtype} vs {want.dtype}"
    g, w = stored(got), stored(want)
    assert g.shape == w.shape, what
    if got.dtype.is_float:
        gf, wf = (np.asarray(got._host_values(), np.float64), want.to(torch.float64).numpy())
        nan = np.isnan(wf)
        assert (np.isnan(gf) == nan).all(), f"{what}: NaN at {np.nonzero(np.isnan(gf) != nan)}"
        bad = (g != w) & ~nan
        if not zero_sign:
            bad &= ~((gf == 0) & (wf == 0))
    else:
        bad = g != w
    assert not bad.any(), f"{what}: {bad.sum()} differ, first at {np.argmax(bad)}: {g[bad][:3]} vs {w[bad][:3]}"


def pair(name: str):
    """Two operand tensors of the dtype, every edge value against every other."""
    x = inputs(name, 16)
    a, b = torch.meshgrid(x, x, indexing="ij")
    return a.reshape(-1).contiguous(), b.reshape(-1).contiguous()


def nonzero(m, b):
    """``b`` with its zeros made ones (integer division by zero is no case of these tests)."""
    return m.where(b == 0, m.ones_like(b), b)


# (op, applies to, fn(lib, a, b)): lib is torch or vkml, so each row is written once for both.
BINARY = [
    ("add", NEW, lambda m, a, b: a + b),
    ("sub", NEW, lambda m, a, b: a - b),
    ("mul", NEW, lambda m, a, b: a * b),
    ("div", NEW, lambda m, a, b: a / b),
    ("neg", NEW, lambda m, a, b: -a),
    ("abs", NEW, lambda m, a, b: m.abs(a)),
    ("eq", NEW, lambda m, a, b: a == b),
    ("lt", NEW, lambda m, a, b: a < b),
    ("ge", NEW, lambda m, a, b: a >= b),
    ("maximum", NEW, lambda m, a, b: m.maximum(a, b)),
    ("minimum", NEW, lambda m, a, b: m.minimum(a, b)),
    ("where", NEW, lambda m, a, b: m.where(a > b, a, b)),
    ("clamp", NEW, lambda m, a, b: m.clamp(a, min=b)),
    ("sqrt", ("float64", "bfloat16"), lambda m, a, b: m.sqrt(a)),
    ("floor", ("float64", "bfloat16"), lambda m, a, b: m.floor(a)),
    ("round", ("float64", "bfloat16"), lambda m, a, b: m.round(a)),
    ("isinf", ("float64", "bfloat16"), lambda m, a, b: m.isinf(a)),
    ("isfinite", ("float64", "bfloat16"), lambda m, a, b: m.isfinite(a)),
    ("floor_divide", ("uint8", "int8", "int16"), lambda m, a, b: m.floor_divide(a, nonzero(m, b))),
    ("remainder", ("uint8", "int8", "int16"), lambda m, a, b: m.remainder(a, nonzero(m, b))),
    ("bitwise_not", ("uint8", "int8", "int16"), lambda m, a, b: ~a),
    ("shift_left", ("uint8", "int8", "int16"), lambda m, a, b: a << 3),
    ("scalar_add", NEW, lambda m, a, b: a + 300),
    ("scalar_mul", NEW, lambda m, a, b: a * -3),
    ("scalar_lt", NEW, lambda m, a, b: a < 200),
    ("scalar_float", NEW, lambda m, a, b: a * 0.1),
]


CASES = [pytest.param(op, d, fn, id=f"{op}-{d}") for op, dtypes, fn in BINARY for d in dtypes]


def correctly_rounded_sqrt(a: torch.Tensor) -> torch.Tensor:
    """numpy's sqrt in the dtype's compute precision: PyTorch's CPU float64 sqrt is 1 ulp off for some
    inputs (sqrt(1 - 2^-53) gives 1.0), vkml's is correctly rounded (docs/dtypes.md)."""
    with np.errstate(invalid="ignore"):
        if a.dtype == torch.float64:
            return torch.from_numpy(np.sqrt(a.numpy()))
        return torch.from_numpy(np.sqrt(a.float().numpy())).to(a.dtype)


def assert_devices_agree(cpu: vkml.Tensor, other: vkml.Tensor, what: str) -> None:
    """CPU and Vulkan give the same bits (NaN: both NaN)."""
    c, o = stored(cpu), stored(other)
    if cpu.dtype.is_float:
        nan = np.isnan(np.asarray(cpu._host_values(), np.float64))
        assert (nan == np.isnan(np.asarray(other._host_values(), np.float64))).all(), what
        c, o = c[~nan], o[~nan]
    assert (c == o).all(), f"{what}: CPU != Vulkan"


@pytest.mark.parametrize("op, dtype, fn", CASES)
def test_elementwise_matches_torch_and_devices_agree(op, dtype, fn, gpu):
    a, b = pair(dtype)
    want = fn(torch, a, b) if op != "sqrt" else correctly_rounded_sqrt(a)
    results = []
    for device in ("cpu", gpu):
        got = fn(vkml, to_vk(a, device), to_vk(b, device))
        # the sign of a zero from maximum, minimum and clamp is a documented divergence (PyTorch's
        # depends on its vector path: docs/ops/maximum.md, clamp.md)
        assert_same(got, want, f"{op} on {dtype} ({device})", zero_sign=op not in ("maximum", "minimum", "clamp"))
        results.append(got)
    assert_devices_agree(*results, f"{op} on {dtype}")


@pytest.mark.parametrize("src", NEW + ("float32", "int32", "int64", "bool", "float16"))
def test_casts_match_torch(src, gpu):
    x = inputs(src) if src != "bool" else torch.tensor([True, False, True])
    if src in ("float32", "float16"):
        x = inputs("float64").to(torch_dtype(src))
    elif src in ("int32", "int64"):
        x = torch.tensor(
            [0, 1, -1, 127, 128, 255, 256, -129, 40000, -40000, 2**31 - 1, -(2**31)], dtype=torch_dtype(src)
        )
    for device in ("cpu", gpu):
        v = to_vk(x, device)
        for dst in ALL:
            if dst == src or (src in ("float32", "float16", "float64", "bfloat16") and dst != "bool" and "int" in dst):
                continue
            assert_same(v.to(vk_dtype(dst)), x.to(torch_dtype(dst)), f"{src} -> {dst} ({device})")


@pytest.mark.parametrize("src", ("float64", "float32", "float16", "bfloat16"))
@pytest.mark.parametrize("dst", ("uint8", "int8", "int16", "int32", "int64"))
def test_float_to_int_casts_truncate_and_wrap_as_torch_on_x86(src, dst, gpu):
    # Truncation toward zero, then the low bits; NaN, inf and out-of-range values give x86's INT_MIN
    # (its low bits: 0), through int32 or (float64 -> uint8) int64 as PyTorch converts.
    x = torch.tensor(
        [
            0.0,
            -0.7,
            1.9,
            -128.5,
            127.9,
            255.9,
            300.7,
            -1.5,
            70000.5,
            3e9,
            -3e9,
            1e10 + 3,
            2.0**63,
            float("nan"),
            float("inf"),
        ],
        dtype=torch.float64,
    )
    x = x.to(torch_dtype(src))
    for device in ("cpu", gpu):
        assert_same(to_vk(x, device).to(vk_dtype(dst)), x.to(torch_dtype(dst)), f"{src} -> {dst} ({device})")


@pytest.mark.parametrize("dtype", NEW)
@pytest.mark.parametrize("op", ("sum", "amax", "amin", "argmax", "prod"))
def test_reductions(dtype, op, gpu):
    x = inputs(dtype, 200, seed=3)
    if op == "prod":
        x = x[torch.isfinite(x) & (x.abs() < 4)][:12] if x.is_floating_point() else x[:12]
    rows = x[: (x.numel() // 4) * 4].reshape(4, -1)
    if op in ("sum", "prod") and rows.is_floating_point():
        # PyTorch adds in its own order; vkml's order is the contract's tree, computed here by numpy in
        # the accumulation precision (float32 for bfloat16, rounded once at the end)
        wide = rows.numpy() if dtype == "float64" else rows.float().numpy()
        want = torch.from_numpy(tree_reduce(wide, np.add if op == "sum" else np.multiply)).to(rows.dtype)
    else:
        want = getattr(torch, op)(rows, 1)
    results = []
    for device in ("cpu", gpu):
        got = getattr(vkml, op)(to_vk(rows, device), 1)
        assert_same(got, want, f"{op} over {dtype} ({device})")
        results.append(got)
    assert_devices_agree(*results, f"{op} over {dtype}")


def _set_corner(m, t):
    t = t.clone()
    t[0, 0] = 7
    return t


MOVEMENT = [
    ("transpose", lambda m, v: v.T.contiguous()),
    ("slice", lambda m, v: v[::2, 1:5]),
    ("cat", lambda m, v: m.cat([v, v[:2]], 0)),
    ("flip", lambda m, v: v.flip(1)),
    ("pad", lambda m, v: m.nn.functional.pad(v, (1, 2))),
    ("gather", lambda m, v: v[m.tensor([0, 3, 5])]),
    ("mask", lambda m, v: v[v > 1]),
    ("setitem", _set_corner),
    ("cumsum", lambda m, v: m.cumsum(v, 1)),
    ("max_dim", lambda m, v: v.max(1)[0]),
]


@pytest.mark.parametrize("dtype", NEW)
def test_movement_indexing_and_scans(dtype, gpu):
    x = inputs(dtype, 64)[:48].reshape(6, 8)
    if dtype in ("float64", "bfloat16"):
        x = torch.where(torch.isfinite(x), x, torch.zeros_like(x)) / 4  # cumsum: no inf - inf, no overflow
    for name, fn in MOVEMENT:
        want = fn(torch, x)
        results = []
        for device in ("cpu", gpu):
            got = fn(vkml, to_vk(x, device))
            if name == "cumsum" and dtype == "float64":  # Hillis-Steele order, not PyTorch's sequential one
                assert got.dtype is vkml.float64
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-9)
            else:
                assert_same(got, want, f"{name} of {dtype} ({device})")
            results.append(got)
        assert_devices_agree(*results, f"{name} of {dtype}")


def test_float64_matmul(gpu):
    g = np.random.default_rng(2)
    a, b = g.standard_normal((9, 13)), g.standard_normal((13, 5))
    outs = []
    for device in ("cpu", gpu):
        got = vkml.tensor(a, device=device) @ vkml.tensor(b, device=device)
        assert got.dtype is vkml.float64
        np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-13, atol=1e-13)
        outs.append(got.numpy())
    assert (outs[0] == outs[1]).all()


@pytest.mark.parametrize("dtype", ("uint8", "int8", "int16", "bfloat16"))
def test_narrow_matmul_matches_torch(dtype, gpu):
    g = np.random.default_rng(3)
    a = torch.tensor(g.integers(-20, 20, (6, 7))).to(torch_dtype(dtype))
    b = torch.tensor(g.integers(-20, 20, (7, 3))).to(torch_dtype(dtype))
    for device in ("cpu", gpu):
        assert_same(to_vk(a, device) @ to_vk(b, device), a @ b, f"matmul {dtype} ({device})")


def test_integer_overflow_wraps_as_torch(gpu):
    u = torch.tensor([100, 200, 250], dtype=torch.uint8)
    i = torch.tensor([100, -128, 127], dtype=torch.int8)
    s = torch.tensor([30000, -32768, 32767], dtype=torch.int16)
    for device in ("cpu", gpu):
        vu, vi, vs = to_vk(u, device), to_vk(i, device), to_vk(s, device)
        for got, want in (
            ((vu + vu) * 3 - 7, (u + u) * 3 - 7),
            (-vu, -u),
            (vi * vi + 100, i * i + 100),
            (vi.abs(), i.abs()),
            (vs * 3 // 7, s * 3 // 7),
            (vu + vi, u + i),  # int16
            ((vu * 2 > 100), (u * 2 > 100)),  # the comparison sees the wrapped product
        ):
            assert_same(got, want, f"{want} ({device})")


# ---------------------------------------------------------------------- promotion


KINDS = ("dims", "zero_dim")


def _make(lib, dtype: str, kind: str):
    shape = (2,) if kind == "dims" else ()
    if lib is torch:
        return torch.ones(shape, dtype=torch_dtype(dtype))
    return vkml.ones(shape, dtype=vk_dtype(dtype))


@pytest.mark.parametrize("kind_b", KINDS)
@pytest.mark.parametrize("kind_a", KINDS)
def test_promotion_table_is_torchs(kind_a, kind_b):
    for a in ALL:
        for b in ALL:
            assert vkml.promote_types(vk_dtype(a), vk_dtype(b)).name == str(
                torch.promote_types(torch_dtype(a), torch_dtype(b))
            ).removeprefix("torch.")
            ta, tb = _make(torch, a, kind_a), _make(torch, b, kind_b)
            want = str(torch.result_type(ta, tb)).removeprefix("torch.")
            va, vb = _make(vkml, a, kind_a), _make(vkml, b, kind_b)
            assert vkml.result_type(va, vb).name == want, (a, kind_a, b, kind_b)
            assert (va * vb).dtype.name == want, (a, kind_a, b, kind_b)


@pytest.mark.parametrize("scalar", (True, 3, 2.5))
def test_promotion_with_python_scalars_is_torchs(scalar):
    for a in ALL:
        for kind in KINDS:
            want = str(torch.result_type(_make(torch, a, kind), scalar)).removeprefix("torch.")
            va = _make(vkml, a, kind)
            assert vkml.result_type(va, scalar).name == want, (a, kind, scalar)
            assert vkml.result_type(scalar, va).name == want, (a, kind, scalar)


# ---------------------------------------------------------------------- creation and conversions


def test_numpy_float64_stays_float64_python_floats_do_not():
    assert vkml.tensor(np.array([1.0, 2.0])).dtype is vkml.float64 is vkml.double
    assert vkml.tensor(np.float64(1.0)).dtype is vkml.float64
    assert vkml.tensor([1.0, 2.0]).dtype is vkml.float32
    assert vkml.tensor(1.0).dtype is vkml.float32
    assert vkml.tensor(np.array([1, 2], np.uint8)).dtype is vkml.uint8
    assert vkml.tensor(np.array([1, 2], np.int8)).dtype is vkml.int8
    assert vkml.tensor(np.array([1, 2], np.int16)).dtype is vkml.int16 is vkml.short
    assert torch.tensor(np.array([1.0])).dtype == torch.float64 and torch.tensor([1.0]).dtype == torch.float32


# (name, fn(lib, dtype, is_float)): lib is torch or vkml and dtype the lib's dtype object.
CREATION = [
    ("arange", lambda m, d, f: m.arange(1, 50, 3, dtype=d)),
    ("linspace", lambda m, d, f: m.linspace(-3.3, 7.1, 33, dtype=d) if f else m.linspace(-3, 90, 33, dtype=d)),
    ("logspace", lambda m, d, f: m.logspace(0, 2, 5, dtype=d)),
    ("full", lambda m, d, f: m.full((3,), 0.1 if f else 7, dtype=d)),
    ("eye", lambda m, d, f: m.eye(3, 4, dtype=d)),
    ("zeros_like", lambda m, d, f: m.zeros_like(m.ones(2, dtype=d))),
]


@pytest.mark.parametrize("dtype", NEW)
def test_creation_matches_torch(dtype):
    is_float = dtype in ("float64", "bfloat16")
    for name, fn in CREATION:
        want, got = fn(torch, torch_dtype(dtype), is_float), fn(vkml, vk_dtype(dtype), is_float)
        assert_same(got, want, f"{name} of {dtype}")


@pytest.mark.parametrize(
    "method, dtype",
    [("double", "float64"), ("byte", "uint8"), ("char", "int8"), ("short", "int16"), ("bfloat16", "bfloat16")],
)
def test_conversion_methods(method, dtype):
    x = torch.tensor([1.7, -2.5, 300.25, 0.1])
    v = vkml.tensor(x.numpy())
    got, want = getattr(v, method)(), getattr(x, method)()
    assert_same(got, want, method)
    assert got.tolist() == want.tolist()
    assert got[1].item() == want[1].item()
    assert got.float().tolist() == want.float().tolist()
    if dtype == "bfloat16":
        with pytest.raises(TypeError, match="BFloat16"):
            got.numpy()
        with pytest.raises(TypeError, match="BFloat16"):
            want.numpy()
    else:
        assert got.numpy().dtype == want.numpy().dtype
        assert (got.numpy() == want.numpy()).all()


@pytest.mark.parametrize("dtype", NEW)
def test_save_load_round_trip_and_torch_reads_it(dtype, tmp_path):
    x = inputs(dtype, 8)
    v = to_vk(x, "cpu")
    path = tmp_path / "t.safetensors"
    vkml.save({"x": v}, path)
    back = vkml.load(path)["x"]
    assert_same(back, x, f"vkml.load of {dtype}")
    import safetensors.torch

    from_torch = safetensors.torch.load_file(str(path))["x"]
    assert from_torch.dtype == x.dtype
    assert (stored(from_torch) == stored(x)).all() or dtype in ("float64", "bfloat16")
    buffer = io.BytesIO()
    torch.save({"x": x}, buffer)
    buffer.seek(0)
    assert_same(vkml.load(buffer)["x"], x, f"torch.save -> vkml.load of {dtype}")


@pytest.mark.parametrize("dtype", NEW)
def test_to_device_round_trip(dtype, gpu):
    x = inputs(dtype, 8)
    v = to_vk(x, "cpu")
    assert_same(v.to(gpu).to("cpu"), x, f"{dtype} cpu -> vulkan -> cpu")


# ---------------------------------------------------------------------- what vkml refuses


def test_float64_without_a_routine_refuses_instead_of_computing_in_float32():
    # polygamma(n >= 2) has no float64 routine yet (tests/test_mathlib_f64.py covers the ops that have one)
    x = vkml.tensor(np.array([0.5, 1.5]))
    with pytest.raises(NotImplementedError, match="is not implemented for float64"):
        vkml.polygamma(2, x)
    assert x.tolist() == [0.5, 1.5]  # the operand is intact


def test_a_device_without_the_feature_refuses_the_dtype(gpu, monkeypatch):
    monkeypatch.setattr(gpu, "features", dataclasses.replace(gpu.features, float64=False, storage_buffer_8bit=False))
    with pytest.raises(vkml.DTypeError, match="cannot hold float64 tensors: the device lacks shaderFloat64"):
        vkml.tensor(np.array([1.0]), device=gpu)
    with pytest.raises(vkml.DTypeError, match="cannot hold uint8 tensors: the device lacks storageBuffer8BitAccess"):
        vkml.ones(2, device=gpu).byte()
    with pytest.raises(vkml.DTypeError, match="'zeros': .* cannot hold int8"):
        vkml.zeros(2, dtype=vkml.int8, device=gpu)


def test_kernel_compile_names_the_dtype_and_the_missing_feature():
    from vkml.codegen.spirv import compile_kernel
    from vkml.ir.builder import KernelBuilder, global_id

    kb = KernelBuilder("double_it")
    x, out = kb.buffer("x", vkml.float64, "read"), kb.buffer("out", vkml.float64, "write")
    with kb:
        i = global_id(0)
        out[i] = x[i] + x[i]
    features = dataclasses.replace(DeviceFeatures.lavapipe_like(), float64=False)
    with pytest.raises(vkml.CompileError, match=r"needs float64 but device lacks shaderFloat64 \(float64 tensors"):
        compile_kernel(kb.finish(), features)


def test_modules_convert_and_load_float64_and_bfloat16():
    state = {"weight": torch.tensor([[0.1, 0.2], [0.3, 1 / 3]], dtype=torch.float64), "bias": np.array([1 / 3, 2 / 3])}
    for convert, dtype in (("double", torch.float64), ("bfloat16", torch.bfloat16), ("float", torch.float32)):
        net = getattr(vkml.nn.Linear(2, 2), convert)()
        net.load_state_dict(state)  # copy_'s conversion: float64 kept by a float64 module, rounded otherwise
        want = torch.nn.Linear(2, 2).to(dtype)
        want.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
        assert_same(net.weight, want.weight.detach(), f"{convert} weight")
        assert_same(net.bias, want.bias.detach(), f"{convert} bias")


@vkml.kernel(outputs=lambda x: (x.shape, x.dtype))
def _times_three_plus_one(x, out):
    i = vkml.dsl.global_id(0)
    with vkml.dsl.if_(i < x.numel):
        out[i] = x[i] * 3 + 1


@pytest.mark.parametrize("dtype", ("uint8", "int8", "int16", "bfloat16"))
def test_custom_ops_see_narrow_dtypes_in_their_compute_type(dtype, gpu):
    x = inputs(dtype, 16)
    x = torch.where(torch.isfinite(x), x, torch.zeros_like(x)) if dtype == "bfloat16" else x
    with custom.restoring_registry():  # the op leaves the registry (and docs/ops) as it found them
        _check_custom_ops(dtype, x, gpu)


def _check_custom_ops(dtype: str, x: torch.Tensor, gpu) -> None:
    triple = vkml.elementwise(lambda a: a * 3 + 1, name=f"triple_plus_one_{dtype}")
    for device in ("cpu", gpu):
        v = to_vk(x, device)
        want = x * 3 + 1  # wraps (integers) or rounds once (bfloat16: 3a + 1 is one float32 body)
        if dtype == "bfloat16":
            want = (x.float() * 3 + 1).bfloat16()
        assert_same(triple(v), want, f"custom elementwise on {dtype} ({device})")
        assert_same(_times_three_plus_one(v), want, f"custom kernel on {dtype} ({device})")


def test_float64_div_and_sqrt_are_correctly_rounded(gpu):
    # Random bit patterns (every exponent, subnormals, inf, NaN) and ordinary values across the whole
    # range: the bits of numpy's float64 / and sqrt (x86: correctly rounded), on both devices.
    g = np.random.default_rng(6)
    n = 10000
    a, b = (
        np.concatenate(
            [
                g.integers(0, 2**64, n, dtype=np.uint64).view(np.float64),
                g.standard_normal(n) * 10.0 ** g.integers(-300, 300, n),
            ]
        )
        for _ in range(2)
    )
    with np.errstate(all="ignore"):
        quotient, root = torch.from_numpy(a / b), torch.from_numpy(np.sqrt(np.abs(a)))
    for device in ("cpu", gpu):
        va, vb = vkml.tensor(a, device=device), vkml.tensor(b, device=device)
        assert_same(va / vb, quotient, f"float64 division ({device})")
        assert_same(va.abs().sqrt(), root, f"float64 sqrt ({device})")
