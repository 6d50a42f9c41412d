"""@vkml.elementwise: a DSL function becomes a lazy, broadcasting, fusing op with the built-ins' bits."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from optest import F32_SPECIALS, assert_same_bits

import vkml
from vkml import debug, dsl
from vkml.cli import main as dump_spirv
from vkml.codegen.features import DeviceFeatures
from vkml.codegen.tools import assemble_and_validate
from vkml.dsl import elementwise as custom
from vkml.ops.registry import REGISTRY

CPU = vkml.device("cpu")


@pytest.fixture(autouse=True)
def _clean_registry():
    with custom.restoring_registry():
        yield


def _softclip():
    @vkml.elementwise
    def softclip(x, lo, hi):
        """A smooth clip into [lo, hi]."""
        return lo + dsl.softplus(x - lo) - dsl.softplus(x - hi)

    return softclip


def _softclip_builtin(x, lo, hi):
    sp = vkml.nn.functional.softplus
    return lo + sp(x - lo) - sp(x - hi)


def _dispatches(*tensors) -> int:
    debug.reset_counters()
    vkml.realize(*tensors)
    return debug.counters()["dispatches"]


def _inputs(n=300, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[: len(F32_SPECIALS)] = F32_SPECIALS
    return x


# ---------------------------------------------------------------------- an op like the built-ins


def test_registered_as_an_elementwise_op_with_the_function_as_body():
    softclip = _softclip()
    op = REGISTRY["custom_softclip"]
    assert op.kind == "elementwise" and op is softclip.opdef
    assert op.summary == "A smooth clip into [lo, hi]."
    assert softclip.__name__ == "softclip" and softclip.__doc__.startswith("A smooth clip")
    assert "custom_softclip" in custom.custom_ops()


def test_call_is_lazy_and_matches_the_builtin_composition_bit_for_bit():
    softclip = _softclip()
    x = vkml.tensor(_inputs())
    y = softclip(x, -1.0, 2.0)
    assert not y.node.realized and y.node.op == "elementwise"
    assert_same_bits(y.numpy(), _softclip_builtin(x, -1.0, 2.0).numpy(), "softclip vs built-ins")


def test_vulkan_gives_the_cpu_bits(gpu):
    softclip = _softclip()
    a = _inputs(1000, 3)
    lo = np.float32(-0.5)
    cpu = softclip(vkml.tensor(a, device=CPU), lo.item(), 1.5).numpy()
    vk = softclip(vkml.tensor(a, device=gpu), lo.item(), 1.5).numpy()
    assert_same_bits(vk, cpu, "softclip on Vulkan vs CPU")
    assert_same_bits(cpu, _softclip_builtin(vkml.tensor(a), lo.item(), 1.5).numpy(), "vs built-ins")


def test_tensor_arguments_broadcast_and_promote():
    softclip = _softclip()
    x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(4, 6)
    lo = np.array([[-1.0], [-2.0], [0.0], [-0.5]], np.float32)
    hi = np.array([1.0, 2.0, 3.0, 0.5, 1.0, 2.0], np.float32)
    y = softclip(vkml.tensor(x), vkml.tensor(lo), vkml.tensor(hi))
    assert y.shape == (4, 6) and y.dtype is vkml.float32
    want = _softclip_builtin(vkml.tensor(x), vkml.tensor(lo), vkml.tensor(hi))
    assert_same_bits(y.numpy(), want.numpy())
    # int tensor with float scalars: PyTorch's promotion gives float32
    ints = vkml.tensor(np.arange(-3, 4, dtype=np.int32))
    assert softclip(ints, -1.0, 1.0).dtype is vkml.float32


def test_float16_rounds_once_at_the_end_of_the_body():
    softclip = _softclip()
    with np.errstate(over="ignore"):
        a = _inputs(200, 5).astype(np.float16)
    y = softclip(vkml.tensor(a), -1.0, 2.0)
    assert y.dtype is vkml.float16
    in32 = softclip(vkml.tensor(a.astype(np.float32)), -1.0, 2.0).numpy()
    assert_same_bits(y.numpy(), in32.astype(np.float16), "float16 = float32 body rounded once")


def test_fuses_with_its_neighbours_into_one_dispatch():
    softclip = _softclip()
    x = vkml.tensor(_inputs(500, 1))
    b = vkml.tensor(np.float32([0.5, 1.5]).repeat(250))
    y = softclip(x * 2 + b, -1.0, 1.0).exp() - softclip(b, 0.0, 1.0)
    assert _dispatches(y) == 1
    rows = softclip(x, -1.0, 1.0).reshape(20, 25).sum(dim=1) * 2
    assert _dispatches(rows) == 1  # a reduction fuses the custom op as a producer too
    same = _softclip_builtin(x, -1.0, 1.0).reshape(20, 25).sum(dim=1) * 2
    assert_same_bits(rows.numpy(), same.numpy())


def test_python_scalars_are_parameters_a_new_value_does_not_recompile(gpu):
    softclip = _softclip()
    x = vkml.tensor(_inputs(256, 2), device=gpu)
    softclip(x, -1.0, 1.0).numpy()
    debug.reset_counters()
    y = softclip(x, -3.0, 0.25).numpy()
    assert debug.counters()["kernels_compiled"] == 0
    assert debug.counters()["pipelines_created"] == 0
    assert_same_bits(y, _softclip_builtin(vkml.tensor(_inputs(256, 2)), -3.0, 0.25).numpy())


def test_defaults_and_keywords_become_operands():
    @vkml.elementwise
    def leaky(x, slope=0.01):
        return dsl.where(x > 0, x, x * slope)

    x = vkml.tensor([-2.0, 3.0])
    assert leaky(x).tolist() == [np.float32(-2.0) * np.float32(0.01), 3.0]
    assert leaky(x, slope=0.5).tolist() == [-1.0, 3.0]


def test_float_constants_in_the_body_round_like_pytorch_scalars():
    @vkml.elementwise
    def tenth(x):
        return x * 0.1

    x = np.float32([1.0, 3.0, -7.5])
    assert_same_bits(tenth(vkml.tensor(x)).numpy(), (vkml.tensor(x) * 0.1).numpy())


def test_result_dtype_follows_the_body():
    @vkml.elementwise
    def inside(x, lo, hi):
        return (x >= lo) & (x <= hi)

    @vkml.elementwise
    def halves(i):
        return dsl.convert(i, vkml.float32) * 0.5

    x = vkml.tensor([-1.0, 0.5, 2.0])
    m = inside(x, 0.0, 1.0)
    assert m.dtype is vkml.bool and m.tolist() == [False, True, False]
    assert vkml.where(m, x, 0.0).tolist() == [0.0, 0.5, 0.0]
    h = halves(vkml.tensor(np.int32([1, 2, 3])))
    assert h.dtype is vkml.float32 and h.tolist() == [0.5, 1.0, 1.5]


def test_integer_bodies_use_the_builtin_integer_definitions():
    @vkml.elementwise
    def clip_abs(i, hi):
        return dsl.minimum(dsl.abs(i), hi)

    a = np.int64([-7, 3, -(2**40), 5])
    got = clip_abs(vkml.tensor(a), 4)
    assert got.dtype is vkml.int64 and got.tolist() == [4, 3, 4, 4]


def test_result_float_and_dtypes_options():
    @vkml.elementwise(result="float", dtypes=(vkml.float32, vkml.float16))
    def expo(x):
        return dsl.exp(x)

    assert expo(vkml.tensor(np.int32([0, 1]))).dtype is vkml.float32
    assert_same_bits(expo(vkml.tensor(np.int32([0, 1]))).numpy(), vkml.exp(vkml.tensor(np.int32([0, 1]))).numpy())

    @vkml.elementwise(dtypes=(vkml.float32,))
    def only32(x):
        return x + 1.0

    with pytest.raises(vkml.DTypeError, match="'custom_only32' does not support dtype float16"):
        only32(vkml.tensor(np.float16([1.0])))


def test_names_never_clash_with_builtins_and_redefinition_replaces():
    @vkml.elementwise
    def exp(x):  # noqa: F811 - on purpose: a user op named like a built-in
        return x + 1.0

    assert exp.name == "custom_exp" and REGISTRY["exp"].body is not exp.opdef.body
    assert exp(vkml.tensor([1.0])).tolist() == [2.0]

    def define(k):
        @vkml.elementwise
        def scaled(x):
            return x * k

        return scaled

    first = define(2.0)
    assert first(vkml.tensor([3.0])).tolist() == [6.0]
    second = define(5.0)  # the same function defined again (a notebook cell run twice)
    assert REGISTRY["custom_scaled"] is second.opdef
    assert second(vkml.tensor([3.0])).tolist() == [15.0]  # not the old kernel from the cache


def test_another_function_with_a_taken_name_needs_name():
    _softclip()
    with pytest.raises(ValueError, match="name 'custom_softclip' is taken by .*pass name="):

        @vkml.elementwise
        def softclip(x):
            return x

    @vkml.elementwise(name="softclip2")
    def softclip(x):  # noqa: F811
        return x

    assert softclip.name == "custom_softclip2"


def test_restoring_registry_removes_ops_defined_inside():
    with custom.restoring_registry():
        _softclip()
        assert "custom_softclip" in REGISTRY
    assert "custom_softclip" not in REGISTRY and "custom_softclip" not in custom.custom_ops()


# ---------------------------------------------------------------------- mistakes, at the user's line


def _line_of(fn, text: str) -> str:
    """``file:line`` of the first line of ``fn``'s source containing ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fn)}:{start + offset}"


def test_python_if_on_an_ir_value_points_at_the_line_and_suggests_where():
    def body(x):
        if x > 0:
            return x
        return -x

    op = vkml.elementwise(body, name="branchy")
    with pytest.raises(vkml.DTypeError) as info:
        op(vkml.tensor([1.0]))
    message = str(info.value)
    assert _line_of(body, "if x > 0") in message and "dsl.where" in message
    assert "if x > 0:" in message  # the source line itself


@pytest.mark.parametrize("construct", ["while", "bool", "and"])
def test_other_python_control_flow_is_refused_too(construct):
    def body(x):
        if construct == "while":
            while x > 1.0:
                x = x - 1.0
            return x
        if construct == "bool":
            return x if bool(x) else -x
        return (x > 0) and x

    op = vkml.elementwise(body, name=f"flow_{construct}")
    with pytest.raises(vkml.DTypeError, match=r"test_custom_elementwise.py:\d+\): an IR value has no Python truth"):
        op(vkml.tensor([2.0]))


def test_type_mismatch_points_at_the_line():
    def body(x):
        i = dsl.convert(x, vkml.int32)
        return dsl.where(x > 0, x, i)

    op = vkml.elementwise(body, name="mixed")
    with pytest.raises(vkml.DTypeError) as info:
        op(vkml.tensor([1.0]))
    assert _line_of(body, "dsl.where") in str(info.value) and "operand types differ" in str(info.value)
    assert "dsl.convert" in str(info.value)  # the hint


def test_unsupported_python_value_in_the_body_points_at_the_line():
    def body(x):
        return x + "one"

    op = vkml.elementwise(body, name="stringy")
    with pytest.raises(vkml.DTypeError) as info:
        op(vkml.tensor([1.0]))
    assert _line_of(body, '"one"') in str(info.value) and "unsupported Python value 'one'" in str(info.value)


def test_wrong_number_of_arguments_and_unsupported_arguments_at_the_call():
    softclip = _softclip()
    x = vkml.tensor([1.0])
    with pytest.raises(TypeError, match=r"softclip\(x, lo, hi\): missing a required argument: 'hi'"):
        softclip(x, 0.0)
    with pytest.raises(TypeError, match="too many positional arguments"):
        softclip(x, 0.0, 1.0, 2.0)
    with pytest.raises(TypeError, match="argument 'lo' is a str"):
        softclip(x, "low", 1.0)
    with pytest.raises(TypeError, match="needs at least one vkml.Tensor"):
        softclip(0.5, 0.0, 1.0)


@pytest.mark.parametrize(
    ("body", "hint"),
    [(lambda x: abs(x), "use dsl.abs"), (lambda x: x**2, "use dsl.pow")],
    ids=["abs", "pow"],
)
def test_python_functions_on_values_suggest_the_dsl_ones(body, hint):
    op = vkml.elementwise(body, name="pythonic")
    with pytest.raises(TypeError, match=rf"test_custom_elementwise.py:\d+\).*{hint}"):
        op(vkml.tensor([1.0]))


def test_wrong_arity_inside_the_body_points_at_the_line():
    def body(x):
        return dsl.maximum(x)

    op = vkml.elementwise(body, name="arity")
    with pytest.raises(TypeError, match=r"test_custom_elementwise.py:\d+\).*missing 1 required positional"):
        op(vkml.tensor([1.0]))


def test_a_body_must_return_one_value():
    def pair(x):
        return x, x

    def nothing(x):
        x + 1.0

    with pytest.raises(vkml.DTypeError, match=r"pair\(\) returned 2 values"):
        vkml.elementwise(pair)(vkml.tensor([1.0]))
    with pytest.raises(vkml.DTypeError, match=r"forget `return`") as info:
        vkml.elementwise(nothing)(vkml.tensor([1.0]))
    assert _line_of(nothing, "def nothing") in str(info.value)


def test_bad_decorations_are_refused():
    with pytest.raises(TypeError, match="at least one input"):
        vkml.elementwise(lambda: 1.0, name="none")
    with pytest.raises(TypeError, match="plain positional"):
        vkml.elementwise(lambda *xs: xs[0], name="star")
    with pytest.raises(ValueError, match="result must be"):
        vkml.elementwise(lambda x: x, name="r", result="int")


# ---------------------------------------------------------------------- vkml-dump-spirv module:function


def test_dump_spirv_shows_a_custom_ops_ir_and_spirv(tmp_path, monkeypatch, capsys):
    module = tmp_path / "my_custom_ops_mod.py"
    module.write_text(
        "import vkml\nfrom vkml import dsl\n\n\n@vkml.elementwise\ndef softclip(x, lo, hi):\n"
        "    return lo + dsl.softplus(x - lo) - dsl.softplus(x - hi)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_custom_ops_mod", raising=False)
    assert dump_spirv(["my_custom_ops_mod:softclip", "--shape", "1024", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "kernel E_custom_softclip_1024" in out and "; ---- IR ----" in out
    ir = out.split("; ---- IR ----")[1].split("; ---- SPIR-V")[0]
    assert ir.count("load in") == 3  # x, lo and hi: three inputs of the shape
    asm = out.split("; ---- SPIR-V")[1].split("\n", 1)[1]
    assemble_and_validate(asm, DeviceFeatures.lavapipe_like().target_env)
    monkeypatch.delitem(sys.modules, "my_custom_ops_mod", raising=False)
