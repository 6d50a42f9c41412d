"""``nn.Embedding(..., sparse=True)`` and ``F.embedding(..., sparse=True)``: the weight's gradient as a
sparse COO tensor, PyTorch's layout for it.

The lookup's value is the dense one (the one-hot product of ``F.embedding``); only its gradient rule
differs: instead of a dense (num_embeddings, dim) matrix, it gives the uncoalesced sparse tensor whose
indices are the looked-up ids in input order, ``(1, N)``, and whose values are the output's gradient rows,
``(N, dim)`` — PyTorch's ``embedding_sparse_backward``, ids equal to ``padding_idx`` left out. Two lookups
of one weight (skip-gram's output table) or two backward passes add sparse to sparse, an uncoalesced union
of the entries (``coalesce()`` sums them); a sparse gradient meeting a dense one gives a dense one.

The rule reads the looked-up ids on the host (they become the gradient's host-side indices, which
coalescing and the optimizers' row updates use), so a backward through a sparse lookup waits for its
ids once; they are the user's input, usually ready already.

The sparse gradient reaches a weight that is a leaf (an ``nn.Parameter``); a weight computed from other
tensors gets the dense gradient instead (vkml's rules of other ops take dense gradients only).
"""

from __future__ import annotations

import numpy as np

from ..frontend import autograd
from ..frontend import operators as functions
from ..frontend.sparse_coo import _coo, _index_tensor
from ..ops import grads as G


def wants_sparse_grad(weight) -> bool:
    """Whether a ``sparse=True`` lookup of ``weight`` records the sparse rule: gradients are on and
    ``weight`` is a leaf that requires one."""
    return autograd.is_grad_enabled() and weight.requires_grad and weight.grad_fn is None


@autograd.differentiable("embedding", inputs=("weight",))  # grad_fn: EmbeddingBackward0, as PyTorch's
def lookup(weight, picks, indices, padding_idx, scale_grad_by_freq: bool = False):
    """``picks @ weight`` (``picks``: the one-hot rows of ``indices``, in ``weight``'s dtype).
    ``scale_grad_by_freq``: the backward raises PyTorch's RuntimeError (it has no sparse form of it)."""
    return functions.matmul(picks, weight)


def _embedding_sparse_grad(c: G.GradContext) -> tuple:
    if c.attrs.get("scale_grad_by_freq"):
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    num, dim = c.inputs[0].shape
    ids = np.asarray(c.attrs["indices"].numpy(), dtype=np.int64).reshape(-1)
    ids = np.where(ids < 0, ids + num, ids)
    values = functions.reshape(c.g, -1, dim)
    padding_idx = c.attrs["padding_idx"]
    if padding_idx is not None:
        keep = ids != padding_idx % num
        if not keep.all():
            values = values[_index_tensor(np.flatnonzero(keep), values.device)]
            ids = ids[keep]
    host = ids.reshape(1, -1)
    return (_coo(_index_tensor(host, values.device), values, (num, dim), False, host),)


G.RULES["embedding"] = _embedding_sparse_grad
