"""``vkml.nn.parallel``: ``DistributedDataParallel`` and ``DataParallel`` for vkml's one device.

Both wrap a module as ``.module`` (so ``state_dict`` keys start with ``module.``, as PyTorch's
do) and call it. With one rank (``vkml.distributed``) and one device there is nothing to average
or scatter, so a step gives the gradients the module alone gives: what PyTorch gives under
``torchrun --nproc_per_node=1`` or with one GPU. ``DistributedDataParallel`` needs
``vkml.distributed.init_process_group`` first, as PyTorch's does.
"""

from __future__ import annotations

import contextlib

from ... import distributed as _dist
from ..module import Module

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


class DistributedDataParallel(Module):
    """``module`` on the one rank of the default process group (see the package doc)."""

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers=None,
        init_sync: bool = True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params=None,
        param_to_hook_all_reduce=None,
        mixed_precision=None,
        device_mesh=None,
    ):
        super().__init__()
        for name, value in (("mixed_precision", mixed_precision), ("device_mesh", device_mesh)):
            if value is not None:
                raise NotImplementedError(f"DistributedDataParallel: {name}= is not supported by vkml")
        if process_group is None and not _dist.is_initialized():
            raise ValueError(_dist._NOT_INITIALIZED)
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.module = module
        self.device_ids = device_ids
        self.dim = dim
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Skip the gradient all-reduce inside (with one rank there is none to skip)."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


class DataParallel(Module):
    """``module`` on vkml's one device: calls it with the whole batch."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """PyTorch's functional ``DataParallel``: ``module`` called with ``inputs`` (a tensor or a tuple
    of them) and ``module_kwargs`` on vkml's one device, the whole batch at once."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
