"""vkml.distributed and vkml.nn.parallel: PyTorch's API for one rank in one process.

nanoGPT's train.py imports init_process_group, destroy_process_group and DistributedDataParallel
at the top; under `torchrun --nproc_per_node=1` it runs them with one rank. Each check below runs
the same calls under PyTorch (gloo, one rank) and vkml.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributed as tdist
from torch.nn.parallel import DataParallel as TDP

import vkml
import vkml.distributed as vdist
from vkml.nn.parallel import DataParallel, DistributedDataParallel


def _errors(library, call):
    with pytest.raises(Exception) as caught:
        call(library)
    return type(caught.value), str(caught.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.distributed.get_rank(),
        lambda L: L.distributed.get_world_size(),
        lambda L: L.distributed.all_reduce(L.ones(2)),
    ],
)
def test_without_a_process_group_errors_like_torch(call):
    assert not vdist.is_initialized() and not tdist.is_initialized()
    assert _errors(vkml, call) == _errors(torch, call)


def test_ddp_without_a_process_group_errors_like_torch():
    # PyTorch's DDP raises get_rank's error (its failing constructor takes seconds to import what it needs)
    ddp = _errors(vkml, lambda L: L.nn.parallel.DistributedDataParallel(L.nn.Linear(2, 2)))
    assert ddp == _errors(torch, lambda L: L.distributed.get_rank())


def test_one_rank_ddp_step_matches_the_module_and_torch(monkeypatch):
    for name, value in {"WORLD_SIZE": "1", "RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29533"}.items():
        monkeypatch.setenv(name, value)
    tdist.init_process_group("gloo")
    vdist.init_process_group("nccl")  # nanoGPT's backend name: one rank needs no transport
    try:
        assert (vdist.get_rank(), vdist.get_world_size()) == (tdist.get_rank(), tdist.get_world_size()) == (0, 1)
        torch.manual_seed(0)
        # PyTorch's DDP of one rank computes what its module does (and its constructor takes seconds
        # to import what it needs): the module under DataParallel stands for it
        # (with CUDA hidden, as on CI: a GPU machine's DataParallel would move the module to its GPU)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
        tmodel = TDP(torch.nn.Linear(3, 2))
        vmodel = DistributedDataParallel(vkml.nn.Linear(3, 2))
        assert list(vmodel.state_dict()) == list(tmodel.state_dict()) == ["module.weight", "module.bias"]
        vmodel.load_state_dict({k: vkml.tensor(v.detach().cpu().numpy()) for k, v in tmodel.state_dict().items()})
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        with vmodel.no_sync():
            assert not vmodel.require_backward_grad_sync
        assert vmodel.require_backward_grad_sync
        for model, lib in ((tmodel, torch), (vmodel, vkml)):
            model(lib.tensor(x)).square().sum().backward()
            grad = lib.tensor(np.ones(2, np.float32))
            lib.distributed.all_reduce(grad, op=lib.distributed.ReduceOp.SUM)
            assert grad.tolist() == [1.0, 1.0]
        np.testing.assert_allclose(
            vmodel.module.weight.grad.numpy(), tmodel.module.weight.grad.cpu().numpy(), rtol=1e-6
        )
        with pytest.raises(NotImplementedError, match="world_size=2"):
            vdist.destroy_process_group()
            vdist.init_process_group("gloo", world_size=2, rank=0)
    finally:
        tdist.destroy_process_group()
        if vdist.is_initialized():
            vdist.destroy_process_group()


def test_data_parallel_wraps_the_module_like_torch():
    tmodel, vmodel = TDP(torch.nn.Linear(2, 3)), DataParallel(vkml.nn.Linear(2, 3))
    assert list(vmodel.state_dict()) == list(tmodel.state_dict())
    assert vmodel(vkml.ones(4, 2)).shape == tuple(tmodel(torch.ones(4, 2)).shape)
