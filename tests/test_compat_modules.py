"""PyTorch's surrounding modules on vkml: ``jit``'s TorchScript names, ``compiler``, ``version``,
``utils.hooks`` and ``multiprocessing`` (with ``spawn``)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import spawn_workers
import torch

import vkml


def test_torchscript_names_are_found_after_a_bare_import():
    # torch.jit.is_scripting() in a module that imported only torch (timm's layers do): vkml.nn not loaded
    code = "import sys, vkml; assert 'vkml.nn' not in sys.modules; print(vkml.jit.is_scripting(), vkml.jit.script(len)([1]))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "1"]
    with pytest.raises(AttributeError, match="no attribute 'scripted'"):
        vkml.jit.scripted  # noqa: B018


def test_torchscript_names_return_the_model_and_keep_its_results():
    model = vkml.nn.Sequential(vkml.nn.Linear(3, 2), vkml.nn.ReLU())
    x = vkml.ones(4, 3)
    assert vkml.jit.script(model) is model and vkml.jit.trace(model, x) is model
    np.testing.assert_array_equal(vkml.jit.trace(model, x)(x).numpy(), model(x).numpy())
    assert vkml.jit.is_scripting() is torch.jit.is_scripting() is False
    assert vkml.jit.is_tracing() is False and vkml.jit.annotate(list, [1]) == [1]
    for decorator in (vkml.jit.ignore, vkml.jit.unused, vkml.jit.export, vkml.jit.ignore(drop=True)):
        assert decorator(len)([1, 2]) == 2
    assert vkml.jit.wait(vkml.jit.fork(lambda a: a * 3, 2)) == 6
    with pytest.raises(RuntimeError, match="eval mode"):
        vkml.jit.freeze(model)
    assert vkml.jit.freeze(model.eval()) is model

    class Old(vkml.jit.ScriptModule):  # the pre-1.0 scripted-class style
        def __init__(self):
            super().__init__()
            self.layer = vkml.nn.Linear(3, 1)

        @vkml.jit.script_method
        def forward(self, x):
            return self.layer(x)

    assert tuple(Old()(x).shape) == (4, 1)


def test_vkml_jit_is_still_the_capture_decorator():
    @vkml.jit
    def double(x):
        return x * 2

    assert double(vkml.ones(2)).tolist() == [2.0, 2.0]


def test_compiler_version_and_hooks():
    @vkml.compiler.disable
    def plain(x):
        return x + 1

    assert vkml.compiler.disable(reason="why")(plain) is plain and plain(1) == 2
    assert not vkml.compiler.is_compiling() and not vkml.compiler.is_dynamo_compiling()
    assert vkml.compiler.compile(plain, disable=True) is plain
    assert vkml.version.cuda is None and vkml.version.__version__ == vkml.__version__
    handle = vkml.nn.Linear(2, 2).register_forward_hook(lambda *a: None)
    assert isinstance(handle, vkml.utils.hooks.RemovableHandle)


def test_multiprocessing_spawn_runs_and_reports_a_failure(tmp_path):
    import vkml.multiprocessing as mp

    before = mp.get_sharing_strategy()
    assert before in mp.get_all_sharing_strategies()
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy(before)
    mp.spawn(spawn_workers.write_index, args=(str(tmp_path), "rank"), nprocs=2)
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["rank0", "rank1"]
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: boom in 0"):
        mp.spawn(spawn_workers.fail, nprocs=1)
    with pytest.raises(ValueError, match="only supports start_method=spawn"):
        mp.spawn(spawn_workers.fail, start_method="fork")


def test_nn_parameter_module_is_importable_as_older_repositories_import_it():
    import importlib

    parameter = importlib.import_module("vkml.nn.parameter")
    weight = parameter.Parameter(vkml.ones(2, 3))
    assert isinstance(weight, vkml.nn.Parameter) and weight.requires_grad
    assert parameter.Buffer is vkml.nn.Buffer
    from vkml.nn.parameter import Parameter as imported

    assert imported is vkml.nn.Parameter
