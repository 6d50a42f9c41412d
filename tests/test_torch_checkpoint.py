"""PyTorch checkpoints (torch.save's zip format) load into vkml without torch: values, dtypes, views, parameters,
state dicts (with their ``_metadata``), optimizer states; a pickled global outside the allowlist is refused
and never runs."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import vkml

REPO = Path(__file__).resolve().parents[1]


def _checkpoint(path: Path) -> dict:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    base = torch.arange(12.0).reshape(3, 4)
    obj = {
        "model": model.state_dict(),
        "opt": opt.state_dict(),
        "param": torch.nn.Parameter(torch.ones(2)),
        "strided": base[:, 1::2],  # a view: storage offset and strides
        "transposed": base.t(),
        "bf16": torch.tensor([1.5, -2.25], dtype=torch.bfloat16),
        "half": torch.tensor([0.1, 65504.0], dtype=torch.float16),
        "ints": torch.tensor([1, -2], dtype=torch.int32),
        "flags": torch.tensor([True, False]),
        "empty": torch.zeros(0, 3),
        "scalar": torch.tensor(3.5),
        "dtype": torch.float16,
        "size": torch.Size([2, 3]),
        "epoch": 7,
        "tags": {"a", "b"},
    }
    torch.save(obj, path)
    return obj


def test_a_pytorch_checkpoint_loads_with_its_values_and_types(tmp_path):
    path = tmp_path / "ckpt.pt"
    want = _checkpoint(path)
    got = vkml.load(path)
    for key, value in want.items():
        if isinstance(value, torch.Tensor):
            assert isinstance(got[key], vkml.Tensor), key
            assert str(got[key].dtype).removeprefix("vkml.") == str(value.dtype).removeprefix("torch."), key
            np.testing.assert_array_equal(got[key].detach().float().numpy(), value.detach().float().numpy(), key)
    assert isinstance(got["param"], vkml.nn.Parameter) and got["param"].requires_grad
    assert got["dtype"] is vkml.float16 and got["size"] == (2, 3) and got["epoch"] == 7 and got["tags"] == {"a", "b"}
    assert got["model"]._metadata == want["model"]._metadata
    layer = vkml.nn.Linear(3, 2)
    layer.load_state_dict(got["model"])
    np.testing.assert_array_equal(layer.weight.detach().numpy(), want["model"]["weight"].numpy())
    assert got["opt"]["param_groups"] == want["opt"]["param_groups"]
    np.testing.assert_array_equal(got["opt"]["state"][0]["exp_avg"].numpy(), want["opt"]["state"][0]["exp_avg"].numpy())


def test_the_zip_format_loads_without_torch(tmp_path):
    path = tmp_path / "ckpt.pt"
    _checkpoint(path)
    script = (
        "import sys; sys.modules['torch'] = None\n"  # any import of torch now fails
        "import vkml\n"
        f"got = vkml.load({str(path)!r})\n"
        "print(got['strided'].tolist(), got['bf16'].dtype, 'torch' in sys.modules and sys.modules['torch'] is not None)"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[[1.0, 3.0], [5.0, 7.0], [9.0, 11.0]] vkml.bfloat16 False"


class _Hostile:
    def __init__(self, target: str):
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (self.target,))


def test_a_pickled_global_outside_the_allowlist_is_refused_and_never_runs(tmp_path):
    path, target = tmp_path / "hostile.pt", tmp_path / "made_by_the_file"
    torch.save({"x": _Hostile(str(target))}, path)
    with pytest.raises(pickle.UnpicklingError, match="posix.mkdir|os.mkdir"):
        vkml.load(path)
    assert not target.exists()
    x = vkml.ones(2)  # the process keeps working
    assert x.sum().item() == 2.0
