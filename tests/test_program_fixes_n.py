"""The gaps found by the third-party-style programs of tests/programs/ listed in tests/test_programs_n.py,
each against PyTorch.

imagenet_main: a 0-d CPU tensor (``best_acc1`` loaded with ``map_location="cpu"``) compared with an
accuracy on the GPU raised vkml's DeviceError; PyTorch treats a 0-d CPU tensor in an op on another
device's tensors as a number. mnist_hogwild: ``share_memory()`` left ``is_shared()`` False.
custom_optimizers: a hand-written Optimizer's ``self.state[p]`` was no defaultdict, and its int ``step``
came back from a checkpoint as a float32 scalar. Probes of checkpoint loading and of the imports model
files make: ``state_dict()._metadata`` and module versions (BatchNorm's old checkpoints),
``_register_load_state_dict_pre_hook``, ``torch.hub``, ``torch.utils.model_zoo``, ``torch.nn.common_types``,
``torch.autograd.profiler``.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch

import vkml


def test_a_cpu_scalar_tensor_joins_an_op_on_another_device_as_pytorch(gpu):
    values = np.array([1.5, -2.0, 3.0], np.float32)
    scale = np.float32(0.75)
    x = torch.tensor(values, requires_grad=True)
    s = torch.tensor(scale, requires_grad=True)
    expected = torch.where(x > s, x * s, s - x)
    expected.sum().backward()
    xv = vkml.tensor(values, device=gpu, requires_grad=True)
    sv = vkml.tensor(scale, requires_grad=True)  # on the CPU
    got = vkml.where(xv > sv, xv * sv, sv - xv)
    assert got.device == gpu
    got.sum().backward()
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(xv.grad.cpu().numpy(), x.grad.numpy())
    assert sv.grad.device.type == "cpu"  # the scalar's gradient stays where the scalar lives, as PyTorch's
    np.testing.assert_allclose(sv.grad.numpy(), s.grad.numpy(), rtol=1e-6)
    # max() of a GPU 0-d accuracy and a loaded CPU one, and += of a CPU scalar into a GPU tensor
    best = max(vkml.tensor(40.0, device=gpu), vkml.tensor(25.0))
    assert best.item() == 40.0 and best.device == gpu
    total = vkml.zeros(2, device=gpu)
    total += vkml.tensor(2.5)
    np.testing.assert_array_equal(total.cpu().numpy(), [2.5, 2.5])


def test_a_cpu_tensor_of_more_dims_still_refuses_another_device(gpu):
    with pytest.raises(vkml.DeviceError, match="'add' operands are on different devices"):
        vkml.tensor([1.0, 2.0]) + vkml.tensor(3.0, device=gpu)
    with pytest.raises(vkml.DeviceError):
        vkml.tensor([1.0, 2.0], device=gpu) + vkml.tensor([3.0, 4.0])


def test_module_share_memory_marks_every_parameter_and_buffer_shared_as_pytorch():
    """mnist_hogwild: ``model.share_memory()`` before the workers start, then ``p.is_shared()``."""
    expected = torch.nn.BatchNorm1d(3)
    got = vkml.nn.BatchNorm1d(3)
    assert not any(p.is_shared() for p in got.parameters())
    assert expected.share_memory() is expected and got.share_memory() is got
    assert [t.is_shared() for t in got.parameters()] == [t.is_shared() for t in expected.parameters()] == [True] * 2
    assert [t.is_shared() for t in got.buffers()] == [t.is_shared() for t in expected.buffers()] == [True] * 3


def _hand_written_adam(library):
    """An Optimizer subclass with its own step, as third-party code writes one (an Adam without decay)."""

    class AdamByHand(library.optim.Optimizer):
        def __init__(self, params, lr=0.1, betas=(0.9, 0.999), eps=1e-8):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps))  # noqa: C408 (as such code writes it)

        @library.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]  # a defaultdict(dict) in PyTorch: no KeyError on the first step
                    if len(state) == 0:
                        state["step"] = 0
                        state["exp_avg"] = library.zeros_like(p)
                        state["exp_avg_sq"] = library.zeros_like(p)
                    beta1, beta2 = group["betas"]
                    state["step"] += 1
                    state["exp_avg"].mul_(beta1).add_(p.grad, alpha=1 - beta1)
                    state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                    bias_correction2 = 1 - beta2 ** state["step"]  # a Python float while step is an int
                    denom = (state["exp_avg_sq"].sqrt() / math.sqrt(bias_correction2)).add_(group["eps"])
                    p.addcdiv_(state["exp_avg"], denom, value=-group["lr"] / (1 - beta1 ** state["step"]))

    return AdamByHand


def _run_hand_written(library, start, steps, saved=None):
    w = library.tensor(start, requires_grad=True)
    optimizer = _hand_written_adam(library)([w])
    if saved is not None:
        optimizer.load_state_dict(library.load(io.BytesIO(saved)))
    for k in range(steps):
        loss = ((w - library.tensor([0.5, -1.0, 2.0])) ** 2 * (k + 1)).sum()
        loss.backward()
        optimizer.step()
        w.grad = None
    buffer = io.BytesIO()
    library.save(optimizer.state_dict(), buffer)
    return w.detach().numpy(), optimizer, buffer.getvalue()


def test_a_hand_written_optimizer_keeps_its_state_as_pytorch():
    """custom_optimizers: SAM's ``self.state[p]["old_p"] = ...`` raised KeyError (vkml's state was a plain
    dict), and a saved int ``step`` came back as a float32 scalar, so ``beta2 ** step`` rounded otherwise
    and a resumed AdamW written out left PyTorch's weights."""
    start = np.array([1.0, 2.0, -3.0], np.float32)
    expected, torch_optimizer, torch_saved = _run_hand_written(torch, start, 2)
    got, optimizer, saved = _run_hand_written(vkml, start, 2)
    np.testing.assert_array_equal(got, expected)
    assert type(optimizer.state_dict()["state"][0]["step"]) is int  # as PyTorch's: the user's number
    assert type(torch_optimizer.state_dict()["state"][0]["step"]) is int
    resumed_expected, torch_resumed, _ = _run_hand_written(torch, expected, 2, torch_saved)
    resumed_got, resumed, _ = _run_hand_written(vkml, got, 2, saved)
    assert type(resumed.state[next(iter(resumed.state))]["step"]) is int
    assert resumed.state[next(iter(resumed.state))]["step"] == 4
    # addcmul's documented half-ulp (vkml rounds the product, PyTorch fuses it) leaves room for an ulp; a
    # float32 step made 1 - beta2 ** step lose ~1e-5 of its value
    np.testing.assert_allclose(resumed_got, resumed_expected, rtol=1e-6)


def _versioned_block(library):
    """A module that renamed its keys in version 2 and converts older checkpoints, as fairseq-style code does."""

    class Block(library.nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.proj = library.nn.Linear(2, 2)
            self.norm = library.nn.BatchNorm1d(2)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            if local_metadata.get("version", None) is None or local_metadata["version"] < 2:
                for name in ("weight", "bias"):
                    if prefix + "linear." + name in state_dict:
                        state_dict[prefix + "proj." + name] = state_dict.pop(prefix + "linear." + name)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)

    return library.nn.Sequential(Block())


def test_state_dict_metadata_and_versions_load_as_pytorch():
    """A state dict carries each module's ``_version`` in ``_metadata``, handed back to
    ``_load_from_state_dict``; BatchNorm (version 2) loads a checkpoint without ``num_batches_tracked``, as
    PyTorch loads old or converted checkpoints (vkml raised a missing key); and the private
    ``_register_load_state_dict_pre_hook`` third-party code calls exists."""
    expected, got = _versioned_block(torch), _versioned_block(vkml)
    assert got.state_dict()._metadata == expected.state_dict()._metadata
    assert got.state_dict()._metadata["0.norm"] == {"version": 2}
    # an old checkpoint: no metadata, the old names, no num_batches_tracked
    old = {"0.linear.weight": np.eye(2, dtype=np.float32), "0.linear.bias": np.ones(2, np.float32)}
    old.update(
        {"0.norm." + k: np.full(2, v, np.float32) for k, v in [("weight", 2), ("bias", 0), ("running_mean", 0.5)]}
    )
    old["0.norm.running_var"] = np.full(2, 3.0, np.float32)
    reports = [
        str(model.load_state_dict({k: library.tensor(v) for k, v in old.items()}))
        for model, library in ((expected, torch), (got, vkml))
    ]
    assert reports[1] == reports[0] == "<All keys matched successfully>"
    for (name, a), (_, b) in zip(expected.state_dict().items(), got.state_dict().items(), strict=True):
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=name)
    # a new checkpoint from PyTorch, metadata included, through torch.save and vkml.load
    buffer = io.BytesIO()
    torch.save(expected.state_dict(), buffer)
    buffer.seek(0)
    loaded = vkml.load(buffer)
    assert loaded._metadata["0"] == {"version": 2}
    assert str(got.load_state_dict(loaded)) == "<All keys matched successfully>"
    seen = []
    linear = vkml.nn.Linear(2, 2)
    linear._register_load_state_dict_pre_hook(lambda state_dict, prefix, *rest: seen.append(sorted(state_dict)))
    linear._register_load_state_dict_pre_hook(
        lambda module, *rest: seen.append(type(module).__name__), with_module=True
    )
    linear.load_state_dict(vkml.nn.Linear(2, 2).state_dict())
    assert seen == [["bias", "weight"], "Linear"]


def test_hub_and_model_zoo_load_a_checkpoint_url_as_pytorch(tmp_path):
    """Model files copied from torchvision import ``torch.hub.load_state_dict_from_url`` or
    ``torch.utils.model_zoo.load_url`` at their top: vkml had neither (an ImportError before any model ran).
    A ``file://`` URL stands in for the download; the cached file is downloaded once and hash-checked."""
    import importlib

    torch.manual_seed(0)
    saved = torch.nn.Linear(3, 2).state_dict()
    source = tmp_path / "source"
    source.mkdir()
    data = io.BytesIO()
    torch.save(saved, data)
    name = f"linear-{__import__('hashlib').sha256(data.getvalue()).hexdigest()[:8]}.pth"
    (source / name).write_bytes(data.getvalue())
    url = (source / name).as_uri()
    expected = torch.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "torch"), check_hash=True)
    got = vkml.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "vkml"), check_hash=True)
    assert list(got) == list(expected)
    for key in expected:
        np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy())
    assert (tmp_path / "vkml" / name).exists()
    model_zoo = importlib.import_module("vkml.utils.model_zoo")
    again = model_zoo.load_url(url, model_dir=str(tmp_path / "vkml"), map_location="cpu")  # from the cache
    np.testing.assert_array_equal(again["weight"].numpy(), expected["weight"].numpy())
    (source / "linear-00000000.pth").write_bytes(data.getvalue())
    with pytest.raises(RuntimeError, match="invalid hash value"):
        vkml.hub.load_state_dict_from_url(
            (source / "linear-00000000.pth").as_uri(), model_dir=str(tmp_path / "vkml"), check_hash=True
        )
    assert not (tmp_path / "vkml" / "linear-00000000.pth").exists()
    assert vkml.hub.get_dir() == torch.hub.get_dir()


def test_common_types_give_pytorch_aliases():
    """Layer code copied from PyTorch annotates with ``torch.nn.common_types`` (an ImportError in vkml)."""
    import torch.nn.common_types as expected

    from vkml.nn import common_types as got

    names = [name for name in vars(expected) if name.startswith(("_size", "_ratio"))]
    assert len(names) > 10
    for name in names:
        assert str(getattr(got, name)) == str(getattr(expected, name)), name


def test_autograd_profiler_names_run_a_step_as_pytorch():
    """``torch.autograd.profiler`` (the older profiler tutorials and older code use) was missing in vkml."""
    losses, names = [], []
    for library in (torch, vkml):
        import importlib

        profiler = importlib.import_module(f"{library.__name__}.autograd.profiler")
        w = library.tensor([0.5, -1.0], requires_grad=True)
        with profiler.profile(use_cuda=False, record_shapes=True) as prof:
            with profiler.record_function("train_step"):
                loss = (w * library.tensor([2.0, 3.0])).pow(2).sum()
                loss.backward()
        with profiler.profile(enabled=False) as quiet:
            (w * 2).sum().item()
        losses.append([loss.item(), *w.grad.tolist()])
        names.append("train_step" in [event.key for event in prof.key_averages()])
        assert isinstance(prof.key_averages().table(sort_by="self_cpu_time_total"), str)
        assert quiet is None
    assert losses[1] == losses[0]
    assert names == [True, True]
