"""SparseAdam: Adam over the rows a sparse gradient names, as ``torch.optim.SparseAdam`` computes it; and
``sparse_rows``, which Adagrad's sparse step shares."""

from __future__ import annotations

import math

from ..frontend import operators as F
from ..frontend.creation import zeros_like
from ..frontend.index_ops import index_add
from ..frontend.indexing import index_select
from .optimizer import Optimizer, check_args, maximized


class SparseRows:
    """A coalesced sparse gradient seen as rows of its dense shape flattened over the sparse dims: its
    row-major positions ``rows`` (unique) and ``values``. ``take`` reads a dense tensor's rows there,
    ``add`` adds values into them (each row once, so ``old + value``: PyTorch's ``add_(sparse)`` and
    ``sparse_mask`` on unique indices)."""

    def __init__(self, grad):
        grad = grad.coalesce()
        sd = grad.sparse_dim()
        self.shape = tuple(grad.shape)
        self.flat = (math.prod(self.shape[:sd]), *self.shape[sd:])
        self.values = grad._values()
        self.rows = grad._index("linear")
        self.empty = grad._nnz() == 0

    def take(self, dense):
        return index_select(F.reshape(dense, self.flat), 0, self.rows)

    def add(self, dense, values):
        return F.reshape(index_add(F.reshape(dense, self.flat), 0, self.rows, values), self.shape)


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
    # PyTorch's SparseAdam keeps ``step`` a Python int, in its state and its state_dict()
    _host_scalar_state = ()
    _saved_tensor_state = ()

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
        complex_ = [
            [g, p] for g, group in enumerate(self.param_groups) for p, t in enumerate(group["params"])
            if self.is_complex_pair(t)
        ]  # fmt: skip
        if complex_:
            raise ValueError(f"Complex params at indices {complex_}: SparseAdam does not support complex parameters")

    def update(self, param, grad, state: dict, group: dict):
        if not grad.is_sparse:
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        grad = SparseRows(maximized(grad, group))
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        if grad.empty:
            return param
        values = grad.values
        # the moments' rows the gradient names, moved toward it (PyTorch's sparse_mask, then add_ of the
        # sparse update)
        old_avg = grad.take(state["exp_avg"])
        avg_update = (values - old_avg) * (1 - beta1)
        state["exp_avg"] = grad.add(state["exp_avg"], avg_update)
        old_sq = grad.take(state["exp_avg_sq"])
        sq_update = (values * values - old_sq) * (1 - beta2)
        state["exp_avg_sq"] = grad.add(state["exp_avg_sq"], sq_update)
        numer = avg_update + old_avg
        denom = (sq_update + old_sq).sqrt() + eps
        step = state["step"]
        step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        return grad.add(param, (numer / denom) * -step_size)
