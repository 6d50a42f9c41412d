"""vkml-dump-spirv and VKML_DUMP_SPIRV: what they print re-assembles and validates."""

import subprocess
import sys
from pathlib import Path

import pytest

import vkml
from vkml.cli import main
from vkml.codegen.features import DeviceFeatures
from vkml.codegen.tools import assemble_and_validate

FEATURES = DeviceFeatures.lavapipe_like()


def _modules(text: str) -> list[str]:
    """The SPIR-V modules in a dump: everything after each '---- SPIR-V' header, comments included."""
    parts = text.split("; ---- SPIR-V")[1:]
    return ["\n".join(p.split("\n")[1:]).split("; ==== kernel")[0] for p in parts]


def _check_reassembles(text: str) -> int:
    modules = _modules(text)
    assert modules, text[:500]
    for asm in modules:
        assemble_and_validate(asm, FEATURES.target_env)
    return len(modules)


def test_op_mode_prints_ir_and_spirv_that_reassembles(capsys):
    assert main(["add", "--shape", "64,128", "--dtype", "float32", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "; ---- IR ----" in out and "kernel E_add_64x128" in out
    assert "OpEntryPoint GLCompute" in out and "NoContraction" in out
    assert _check_reassembles(out) == 1


def test_composite_op_prints_every_kernel(capsys):
    # rows longer than one chunk (4096 on the CPU): max and sum, then the quotient (shorter rows are one kernel)
    assert main(["softmax", "--shape", "8,5000", "--dim", "1", "--device", "cpu"]) == 0
    assert _check_reassembles(capsys.readouterr().out) >= 2


def test_ir_file_mode(tmp_path, capsys):
    main(["neg", "--shape", "5", "--device", "cpu"])
    dump = capsys.readouterr().out
    ir_part = dump.split("; ---- IR ----\n")[1].split("; ---- SPIR-V")[0]
    f = tmp_path / "k.vkir"
    f.write_text("\n".join(line[2:] for line in ir_part.splitlines()))
    assert main(["--ir-file", str(f), "--device", "cpu"]) == 0
    assert _check_reassembles(capsys.readouterr().out) == 1


def test_run_mode_prints_every_kernel_a_script_dispatches(tmp_path, capsys):
    script = tmp_path / "script.py"
    script.write_text("import vkml\nx = vkml.ones(4, 5)\nprint((x * 2).sum().item(), (x - 1).amax().item())\n")
    assert main(["--run", str(script), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "40.0 0.0" in out
    assert _check_reassembles(out) == 2


def test_help_documents_every_mode():
    exe = Path(sys.executable).parent / "vkml-dump-spirv"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "vkml.cli"]
    text = subprocess.run([*cmd, "--help"], capture_output=True, text=True, check=True).stdout
    for flag in ("--shape", "--dtype", "--device", "--ir-file", "--run", "VKML_DUMP_SPIRV", "module:function"):
        assert flag in text


def test_dump_env_writes_ir_assembly_and_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("VKML_DUMP_SPIRV", str(tmp_path))
    gpu = vkml.best_device()
    if gpu.name == "cpu":
        pytest.fail("no Vulkan device: install lavapipe")
    x = vkml.tensor([1.0, 2.0, 3.0], device=gpu)
    assert (x * 7.25 - 0.125).sum().item() == pytest.approx(43.125)
    stems = {p.with_suffix("") for p in tmp_path.iterdir()}
    assert stems
    for stem in stems:
        assert vkml.ir.parse(stem.with_suffix(".vkir").read_text()).name
        assemble_and_validate(stem.with_suffix(".spvasm").read_text(), gpu.features.target_env)
        assert stem.with_suffix(".spv").read_bytes()[:4] == b"\x03\x02\x23\x07"
