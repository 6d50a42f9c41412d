"""``nn.SyncBatchNorm``: batch normalisation whose statistics a process group shares, and
``SyncBatchNorm.convert_sync_batchnorm``, which DDP training scripts call on their model.

vkml runs in one process (vkml.distributed: a group has one rank), so there is nothing to share:
as PyTorch's with a world of one, the layer computes what BatchNorm computes, on the same parameters
and buffers. PyTorch's checks stay: at least 2-D input with channels, and, while training inside an
initialised process group, an input on an accelerator (a Vulkan device here), not the CPU.

>>> import vkml, vkml.nn as nn
>>> model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)))
>>> type(model[1]).__name__, tuple(model(vkml.ones(2, 1, 4, 4)).shape)
('SyncBatchNorm', (2, 2, 2, 2))
"""

from __future__ import annotations

import importlib

from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over (N, C, ...) inputs with statistics shared across a process group (of
    one process in vkml, so BatchNorm's numbers); ``process_group`` is kept, as PyTorch keeps it."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        if self.training:
            distributed = importlib.import_module("vkml.distributed")  # lazy: off import vkml's path
            if distributed.is_initialized() and input.device.type == "cpu":
                raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d inside replaced by a SyncBatchNorm on the same parameters,
        buffers and mode (a BatchNorm given itself comes back as a new SyncBatchNorm)."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                module_output.weight = module.weight
                module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
