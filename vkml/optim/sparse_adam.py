"""SparseAdam: Adam over the rows a sparse gradient names, as ``torch.optim.SparseAdam`` computes it."""

from __future__ import annotations

import math

from ..frontend.creation import zeros_like
from ..frontend.index_ops import index_add
from ..frontend.indexing import index_select
from .optimizer import Optimizer, check_args, maximized


class SparseAdam(Optimizer):
    """Adam for sparse gradients (``nn.Embedding(sparse=True)``'s): only the rows the coalesced gradient
    names change — their moments and their parameter values; the other rows keep theirs, moments
    included. A dense gradient is PyTorch's RuntimeError.

    Each step reads the gradient's indices on the host (coalescing them), as PyTorch's CPU code does.

    >>> import vkml
    >>> emb = vkml.nn.Embedding(4, 2, sparse=True)
    >>> opt = SparseAdam(list(emb.parameters()), lr=0.1)
    >>> emb(vkml.tensor([1, 1, 3])).sum().backward(); opt.step()
    """

    _sparse_grads = True

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ):
        check_args(lr=lr, eps=eps, betas=betas)
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "maximize": maximize})
        sparse = [
            [g, p] for g, group in enumerate(self.param_groups) for p, t in enumerate(group["params"]) if t.is_sparse
        ]
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors")

    def update(self, param, grad, state: dict, group: dict):
        if not grad.is_sparse:
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        grad = maximized(grad, group).coalesce()
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        if grad._nnz() == 0:
            return param
        rows, values = grad._indices()[0], grad._values()
        # the moments' rows the gradient names, moved toward it (PyTorch's sparse_mask, then add of the
        # sparse update: the rows are unique, so each is old + update)
        old_avg = index_select(state["exp_avg"], 0, rows)
        avg_update = (values - old_avg) * (1 - beta1)
        state["exp_avg"] = index_add(state["exp_avg"], 0, rows, avg_update)
        old_sq = index_select(state["exp_avg_sq"], 0, rows)
        sq_update = (values * values - old_sq) * (1 - beta2)
        state["exp_avg_sq"] = index_add(state["exp_avg_sq"], 0, rows, sq_update)
        numer = avg_update + old_avg
        denom = (sq_update + old_sq).sqrt() + eps
        step = state["step"]
        step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        return index_add(param, 0, rows, (numer / denom) * -step_size)
