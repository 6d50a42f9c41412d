"""extra/proto_flash_cm2.py: its VK_NV_cooperative_matrix2 attention modules pass spirv-val everywhere, run
by a numpy interpreter of their text (extra/cm2_interp.py) they are within the attention bound, its
schedule and algebra hold in a numpy emulation, and its per-element functions compute what vkml's kernel does.

Nothing here needs the extension: assembling and validating is host work, the interpreter is numpy, the
per-element functions run in a plain shader on any Vulkan device (lavapipe here), and the tool must say it
cannot run and exit 0. ``-m stress`` interprets every default config at three sizes (about 2 minutes here).
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace

import cm2_interp  # extra/ is on pytest's pythonpath (pyproject.toml)
import numpy as np
import proto_flash_cm2 as proto
import pytest
import torch

import vkml
from vkml.codegen.tools import assemble_and_validate
from vkml.errors import CompileError

CONFIGS = [replace(config, exp=exp) for config in proto.DEFAULT_CONFIGS for exp in proto.EXPS]
PROBLEMS = [*proto.DEFAULT_PROBLEMS, *proto.check_problems(proto.DEFAULT_PROBLEMS)]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_every_module_passes_spirv_val(config):
    for problem in proto.DEFAULT_PROBLEMS:
        assert proto.spirv(config, problem)[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic number, little-endian


def test_the_module_says_what_the_config_says():
    causal = proto.module_text(proto.Config.parse("128x64 t256 sw"), proto.Problem.parse("B2 H2 T512 D128 causal"))
    assert "OpTypeCooperativeMatrixKHR %float %u2 %u128 %u64 %u2" in causal  # S: workgroup scope, accumulator
    assert "LocalSize 256 1 1" in causal and "OpTypePointer Workgroup" not in causal  # no shared memory of ours
    assert causal.count("OpLoopMerge") == 2 and causal.count("%masked_score ") == 2  # one loop masks: its call
    assert causal.count("OpCooperativeMatrixReduceNV") == 2 * 3 + 1  # max, sum, α widened per loop; l at the end
    assert causal.count("OpCooperativeMatrixLoadTensorNV") == 1 + 2 * 2 and "TensorView %transpose" in causal
    assert "OpExtInst %float %glsl Exp2" not in causal and "OpShiftLeftLogical" in causal  # weight_exp's steps
    plain = proto.module_text(proto.Config.parse("64x64 t128 hw"), proto.Problem.parse("B1 H1 T256 D64"))
    assert plain.count("OpLoopMerge") == 1 and "%masked_score " not in plain.split("OpFunctionEnd")[0]
    assert plain.count("OpCooperativeMatrixReduceNV") == 2  # D = Bc: α and l need no widening
    assert "OpExtInst %float %glsl Exp2" in plain and "OpShiftLeftLogical" not in plain
    ones = proto.module_text(proto.Config.parse("64x64 t128 mma"), proto.Problem.parse("B1 H1 T256 D128"))
    assert "%ones = OpConstantComposite %m_half_64x64_b %one_half" in ones
    assert ones.count("OpCooperativeMatrixMulAddKHR") == 3 and "%combine_add " not in ones.split("OpFunctionEnd")[0]
    narrow = proto.module_text(proto.Config.parse("64x64 t128 m16"), proto.Problem.parse("B1 H1 T256 D64"))
    assert "%m_start = OpConstantComposite %m_float_64x16_acc" in narrow  # m, l, α: 16 columns
    assert narrow.count("OpCooperativeMatrixReduceNV") == 4 + 1  # max, m' widened, sum, α widened; l at the end
    ragged = proto.module_text(proto.Config.parse("128x64"), proto.Problem.parse("B1 H1 T200 D64"))
    assert "OpTypeTensorLayoutNV %u2 %u1" in ragged and "OpTypeTensorLayoutNV %u2 %u0" not in ragged  # Constant
    assert ragged.count("OpLoopMerge") == 2 and "OpUGreaterThanEqual %bool" in ragged  # the tail block: keys ≥ T
    assert (
        ragged.count("TensorView %keep") == 1
        and "OpTensorViewSetClipNV %view_plain %plain_17 %u0 %kept_19 %u0 %u64" in ragged
    )
    with pytest.raises(ValueError, match="no attention"):
        proto.module_text(proto.Config.parse("128x64"), proto.Problem.parse("B1 H1 T0 D64"))


def test_spirv_val_really_checks_the_cm2_instructions():
    """A wrong reduction, per-element function or conversion is refused, not waved through."""
    text = proto.module_text(proto.Config.parse("64x64 t128 sw"), proto.Problem.parse("B1 H2 T256 D128"))
    assemble_and_validate(text, "vulkan1.3")
    for bad in (
        text.replace("OpCapability CooperativeMatrixReductionsNV\n", ""),
        text.replace("OpCapability CooperativeMatrixPerElementOperationsNV\n", ""),
        text.replace("OpCapability CooperativeMatrixConversionsNV\n", ""),  # accumulator → A needs it
        text.replace(
            "%fn2 = OpTypeFunction %float %uint %uint %float %float", "%fn2 = OpTypeFunction %float %float %float"
        ),
        text.replace("Row %combine_add", "Row %larger"),  # a combine function takes two elements
    ):
        assert bad != text
        with pytest.raises(CompileError, match="spirv-val rejected"):
            assemble_and_validate(bad, "vulkan1.3")


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seq", [512, 500])
@pytest.mark.parametrize("tile", [(64, 64), (128, 64), (64, 128), (32, 64), (128, 32)])
def test_key_blocks_split_the_keys_at_the_diagonal(tile, seq, causal):
    """Blocks before ``whole``: no key masked for any query row before T; to ``end``: some masked, some
    open; after: none open (keys from T on count as masked)."""
    config = proto.Config(*tile)
    for q0 in range(0, seq, config.br):
        whole, end = proto.key_blocks(config, seq, q0, causal)
        queries = np.arange(q0, min(q0 + config.br, seq))[:, None]
        for j in range(-(-seq // config.bc)):
            keys = np.arange(j * config.bc, (j + 1) * config.bc)[None, :]
            masked = ((keys > queries) & causal) | (keys >= seq)
            if j < whole:
                assert not masked.any()
            elif j < end:
                assert masked.any() and not masked.all()
            else:
                assert masked.all()
        assert end >= 1  # block 0, whose key 0 no row masks, comes first: no row is all -inf after it


@pytest.mark.parametrize("causal", [False, True])
def test_the_workgroups_cover_every_query_block_once(causal):
    config, problem = proto.Config(64, 32), proto.Problem(2, 3, 256, 64, causal)
    seen = [proto.block_of(w, config, problem) for w in range(proto.grid(config, problem))]
    assert sorted(seen) == [(s, b) for s in range(6) for b in range(4)]


@pytest.mark.parametrize(("text", "causal", "seq"), [("128x64", True, 256), ("64x128 mma", False, 200)])
def test_the_emulated_kernel_is_within_the_bound(text, causal, seq):
    config, rng = proto.Config.parse(text), np.random.default_rng(len(text) + causal)
    q, k, v = (rng.standard_normal((seq, 64), dtype=np.float32).astype(np.float16) for _ in range(3))
    out, lse = proto.emulate(config, q, k, v, causal)
    exact, exact_lse, out_bound, lse_bound = proto.reference(q, k, v, causal)
    assert np.all(np.abs(out - exact) <= out_bound) and np.all(np.abs(lse - exact_lse) <= lse_bound)


def _interpreted(text: str, config, problem, seed: int = 0):
    """(out error / bound, lse error / bound) of ``text`` run by extra/cm2_interp.py on random inputs
    (workgroups last to first: a store past its rows would land where a later one reads it)."""
    q, k, v = proto.operands(np.random.default_rng(seed), problem)
    buffers = {"Q": q.ravel(), "K": k.ravel(), "V": v.ravel(), "O": np.zeros(q.size, np.float16)}
    buffers["LSE"] = np.zeros(q.size // problem.dim, np.float32)
    cm2_interp.run(text, buffers, proto.grid(config, problem), backwards=True)
    exact, exact_lse, out_bound, lse_bound = proto.reference(q, k, v, problem.causal)
    out, lse = buffers["O"].reshape(q.shape), buffers["LSE"].reshape(q.shape[:-1])
    ratios = (np.abs(out - exact) / out_bound, np.abs(lse - exact_lse) / lse_bound)
    return tuple(float(np.nan_to_num(ratio, nan=np.inf).max()) for ratio in ratios)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("64x128 t128 sw mma m16", "B1 H1 T256 D64 causal"),
        ("128x64 t256 hw", "B1 H1 T128 D128"),
        ("64x64 t128 sw", "B3 H1 T100 D64 causal"),  # ragged: T not a multiple of the blocks
        ("64x32 t128 hw", "B1 H2 T100 D64"),
    ],
)
def test_the_interpreted_module_is_within_the_bound(text, size):
    """The module itself (not a re-implementation) on the numpy interpreter: out and lse within the bound."""
    config, problem = proto.Config.parse(text), proto.Problem.parse(size)
    assert max(_interpreted(proto.module_text(config, problem), config, problem)) <= 1


@pytest.mark.stress
@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize(
    "size",
    ["B1 H2 T256 D64", "B1 H2 T256 D64 causal", "B2 H1 T256 D128 causal", "B2 H1 T200 D64", "B2 H1 T150 D64 causal"],
)
def test_every_interpreted_module_is_within_the_bound(config, size):
    problem = proto.Problem.parse(size)
    assert max(_interpreted(proto.module_text(config, problem), config, problem)) <= 1


def test_the_interpreter_catches_a_miswired_module():
    config, problem = proto.Config.parse("64x64 t128 hw"), proto.Problem.parse("B1 H1 T128 D64 causal")
    text = proto.module_text(config, problem)
    for bad in (
        text.replace("OpTypeTensorViewNV %u2 %false %u1 %u0", "OpTypeTensorViewNV %u2 %false %u0 %u1"),  # K, not Kᵀ
        text.replace("OpUGreaterThan %bool", "OpUGreaterThanEqual %bool"),  # the diagonal masked too
    ):
        assert bad != text and max(_interpreted(bad, config, problem)) > 1
    problem = proto.Problem.parse("B2 H1 T100 D64")
    text = proto.module_text(config, problem)
    for bad in (
        re.sub(r"None TensorView %keep_\d+", "None None", text),  # the last block's rows past T stored over the next
        text.replace("OpUGreaterThanEqual %bool", "OpULessThan %bool"),  # keys from T on open
    ):
        assert bad != text and max(_interpreted(bad, config, problem)) > 1


def test_the_bound_catches_a_skipped_block(monkeypatch):
    q, k, v = (np.random.default_rng(5).standard_normal((256, 64)).astype(np.float16) for _ in range(3))
    exact, _, out_bound, _ = proto.reference(q, k, v, True)
    real = proto.key_blocks
    monkeypatch.setattr(proto, "key_blocks", lambda *a: (lambda whole, end: (whole, end - 1))(*real(*a)))
    with np.errstate(invalid="ignore", divide="ignore"):  # the first rows lose their only block: 0 / 0
        out, _ = proto.emulate(proto.Config(), q, k, v, True)
    assert np.any(np.abs(out[64:] - exact[64:]) > out_bound[64:])


def test_the_reference_is_pytorchs_attention():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 40, 16)) for _ in range(3))
    for causal in (False, True):
        out, lse, out_bound, lse_bound = proto.reference(q, k, v, causal)
        tq, tk, tv = (torch.tensor(a) for a in (q, k, v))
        want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).numpy()
        scores = (tq @ tk.transpose(-1, -2)) / 4.0
        if causal:
            scores = scores.masked_fill(torch.ones(40, 40, dtype=torch.bool).triu(1), float("-inf"))
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lse, torch.logsumexp(scores, -1).numpy(), rtol=1e-12, atol=1e-12)
        assert np.all(out_bound > 0) and np.all(lse_bound > 0)


def _run_probe(config, x, y):
    """OUT of ``proto.probe_text`` on the best Vulkan device, as a (len(x), 3) array."""
    from vkml.ir import types as T
    from vkml.runtime.vulkan.kernel_cache import KernelBinary

    device = vkml.best_device()
    if device.kind != "vulkan":
        pytest.skip("needs a Vulkan device")
    buffers = [
        device.allocate(T.float32, len(x)),
        device.allocate(T.float32, len(x)),
        device.allocate(T.float32, 3 * len(x)),
    ]
    device.upload(buffers[0], x)
    device.upload(buffers[1], y)
    binary = KernelBinary(
        spirv=assemble_and_validate(proto.probe_text(config, 0.125), "vulkan1.3"), push_constants=(), push_size=0
    )
    pipeline = device.pipelines.create(f"proto_flash_probe_{config.exp}", 3, binary)
    proto.Runner(device).run(pipeline, buffers, len(x) // 64, 1)
    return device.download(buffers[2]).reshape(-1, 3)


def _weight_exp_on_the_interpreter(x):
    from vkml.ir import types as T
    from vkml.ir.builder import KernelBuilder, global_id
    from vkml.ir.interp import reference as interp
    from vkml.kernels.attention_coopmat import weight_exp

    kb = KernelBuilder("weight_exp", local_size=(64, 1, 1))
    xs, out = kb.buffer("x", T.float32, "read"), kb.buffer("out", T.float32, "write")
    with kb:
        i = global_id(0)
        out[i] = weight_exp(xs[i])
    got = np.zeros_like(x)
    interp.run(kb.finish(), (len(x) // 64, 1, 1), {"x": x, "out": got}, {})
    return got


def test_the_per_element_functions_compute_what_vkmls_kernel_does():
    """sw: weight_exp's bits (the interpreter's); hw: e^x within 2^-20 + |x|·2^-23; the mask and scale,
    and m + log(l), as float32 computes them."""
    rng = np.random.default_rng(6)
    x = np.concatenate([-rng.exponential(4.0, 1000), [0.0, -0.0, -np.inf, np.nan, -87.4, -200.0, 3.5, -1.5]])
    x = np.concatenate([x, -rng.uniform(0, 20, -len(x) % 64)]).astype(np.float32)
    y = rng.uniform(0.0, 30.0, len(x)).astype(np.float32)  # the running max: x - y ≤ 0 but for x = 3.5
    difference = (x - y).astype(np.float32)
    sw, hw = _run_probe(proto.Config(exp="sw"), x, y), _run_probe(proto.Config(exp="hw"), x, y)
    np.testing.assert_array_equal(sw[:, 0], _weight_exp_on_the_interpreter(difference))
    exact = np.exp(difference.astype(np.float64))
    usable = np.isfinite(difference) & (exact >= 2.0**-120)
    slack = 2.0**-20 + np.abs(difference[usable]) * 2.0**-23  # the approximation's, then x·log2(e)'s rounding
    assert np.all(np.abs(hw[usable, 0] - exact[usable]) <= slack * exact[usable])
    rows, cols = np.arange(len(x)) % 16, np.arange(len(x)) // 16 % 16
    masked = np.where(3 + cols > 5 + rows, np.float32(-np.inf), x * np.float32(0.125))
    np.testing.assert_array_equal(sw[:, 1], masked)
    positive = y > 0
    want = x[positive].astype(np.float64) + np.log(y[positive].astype(np.float64))
    np.testing.assert_allclose(sw[positive, 2], want, rtol=2.0**-20, atol=2.0**-20)


def test_configs_and_problems_print_and_parse_back():
    for config in CONFIGS:
        assert proto.Config.parse(str(config)) == config
    for problem in PROBLEMS:
        assert proto.Problem.parse(str(problem)) == problem
    with pytest.raises(ValueError, match="unknown word"):
        proto.Config.parse("64x64 u2")


def test_flexible_dimensions_decide_which_configs_run():
    entry = {"a": "float16", "b": "float16", "c": "float32", "result": "float32", "scope": "workgroup"}
    flexible = [{**entry, "m": 16, "n": 16, "k": 16, "workgroup_invocations": 128}]
    problem = proto.Problem.parse("B1 H1 T256 D64")
    assert proto.flexible_problem(proto.Config(), problem, flexible, 256) is None
    assert "granularity" in proto.flexible_problem(proto.Config(threads=256), problem, flexible, 256)
    assert "granularity" in proto.flexible_problem(proto.Config(bc=72), problem, flexible, 256)
    assert "granularity" in proto.flexible_problem(proto.Config(state=8), problem, flexible, 256)
    assert "MaxDimension" in proto.flexible_problem(proto.Config(br=512), problem, flexible, 256)
    assert "no workgroup-scope" in proto.flexible_problem(proto.Config(), problem, [{**entry, "scope": "subgroup"}], 0)


def test_the_tool_times_the_extension_or_says_it_is_missing(monkeypatch, capsys):
    """main() in this process (the device is already up): on lavapipe it validates and says it cannot run."""
    device = vkml.best_device()
    offered = device.kind == "vulkan" and proto.device_problem(device) is None
    argv = ["proto_flash_cm2.py", "--size", "B1 H2 T256 D64 causal", "--shape", "64x64 t128", "--repeats", "2"]
    monkeypatch.setattr(sys, "argv", argv)
    proto.main()
    printed = capsys.readouterr().out
    if offered:  # a device with the extension: a checked, timed row per exp
        rows = [line for line in printed.splitlines() if line.startswith("64x64 t128")]
        assert len(rows) == 2 and not any("failed" in row or "skipped" in row for row in rows), printed
    else:  # lavapipe
        assert "nothing to run" in printed and "pass spirv-val" in printed


def test_the_sweep_prints_a_checked_timed_row_per_config(monkeypatch, capsys):
    """sweep() end to end with the interpreter standing in for the device: its rows, skips and failures."""
    from types import SimpleNamespace

    from vkml.runtime.vulkan import pipeline_stats

    def interpreted(runner, config, problem, q, k, v, repeats):
        buffers = {"Q": q.ravel(), "K": k.ravel(), "V": v.ravel(), "O": np.zeros(q.size, np.float16)}
        buffers["LSE"] = np.zeros(q.size // problem.dim, np.float32)
        if config.bc == 32:
            raise RuntimeError("VK_ERROR_UNKNOWN")  # as a driver refusing a pipeline
        cm2_interp.run(proto.module_text(config, problem), buffers, proto.grid(config, problem))
        return (
            buffers["O"].reshape(q.shape),
            buffers["LSE"].reshape(q.shape[:-1]),
            [2e-6 * (i + 1) for i in range(repeats)],
        )

    entry = {"a": "float16", "b": "float16", "c": "float32", "result": "float32", "scope": "workgroup"}
    info = SimpleNamespace(
        cooperative_matrix_flexible=[{**entry, "m": 16, "n": 16, "k": 16, "workgroup_invocations": 128}],
        properties={"deviceName": "a stand-in"},
    )
    device = SimpleNamespace(name="vulkan:9", logical=SimpleNamespace(info=info), pipelines=SimpleNamespace())
    monkeypatch.setattr(proto, "attention", interpreted)
    monkeypatch.setattr(proto, "Runner", lambda device: SimpleNamespace(statistics=""))
    monkeypatch.setattr(proto, "torch_seconds", lambda problems, repeats: {problems[0]: 1e-6})
    monkeypatch.setattr(proto, "check_problems", lambda problems: [proto.Problem(1, 1, 128, 64, True)])
    monkeypatch.setattr(pipeline_stats, "supported", lambda logical: False)
    configs = [proto.Config.parse(text) for text in ("64x64 t128 sw", "64x64 t256", "64x32 t128")]
    proto.sweep(device, configs, [proto.Problem(1, 1, 128, 64)], repeats=3, force=False)
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "vulkan:9: a stand-in; flexible entries:" and "PyTorch SDPA B1 H1 T128 D64: 0.001 ms" in rows[2]
    (checked,) = [row for row in rows if row.startswith("64x64 t128 sw")]
    ratios = checked.split()[3].split("/")
    assert all(0 <= float(r) <= 1 for r in ratios), checked
    assert checked.split("|")[1].split() == ["0.004", f"{4 * 128 * 128 * 64 / 4e-6 / 1e12:.1f}", "0.25"]
    assert any(row.startswith("64x64 t256") and "skipped: no entry with 256 invocations" in row for row in rows)
    assert any(row.startswith("64x32 t128") and "failed: RuntimeError: VK_ERROR_UNKNOWN" in row for row in rows)


def test_print_asm_prints_the_module_at_the_last_size(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["proto_flash_cm2.py", "--size", "B1 H1 T128 D64", "--print-asm", "64x64 sw"])
    proto.main()
    printed = capsys.readouterr().out
    assert printed == proto.module_text(proto.Config.parse("64x64 sw"), proto.Problem.parse("B1 H1 T128 D64")) + "\n"
