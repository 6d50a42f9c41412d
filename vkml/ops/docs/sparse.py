"""The pages of the sparse COO ops (vkml/frontend/sparse_coo.py; docs/sparse.md): construction,
conversion, the sparse @ dense products, sums and softmax."""

from __future__ import annotations

from .page import THROUGH, OpDoc, method, sig, vkml

_S = vkml.frontend.sparse_coo

_ORDER = (
    "each output element sums its products in ascending entry order of the sparse operand (its `_indices()` "
    "order; ascending column for a coalesced one), starting from zero, with index_add's rounding after each add: "
    "the same bits on every device"
)
_INDEX_NOTE = (
    "Index work (coalescing, checks, the entries' rows and columns) is done on the host from the indices, "
    "read once per tensor; the values stay on their device."
)
_DENSE_ONLY = (
    "A dense op applied to a sparse tensor raises NotImplementedError naming the op (PyTorch's `Could not run ... "
    "'SparseCPU' backend` for the ops it lacks too); docs/sparse.md lists what vkml has."
)


def _page(calls, target, precision: str, special: str = "", divergence: str = "", gradient: str = THROUGH):
    return OpDoc(
        "sparse", calls, target, precision=precision, special=special, divergence=divergence, gradient=gradient
    )


PAGES: dict[str, OpDoc] = {
    "sparse_coo_tensor": _page(
        (sig("vkml.sparse_coo_tensor", _S.sparse_coo_tensor),),
        _S.sparse_coo_tensor,
        "exact (stores the indices as int64 and the values as given, cast to `dtype`)",
        special="Indices out of `size` or negative raise PyTorch's RuntimeError; with `size=None` the size is the "
        "largest index + 1 per sparse dim (0 when nnz is 0).",
        divergence="vkml checks the indices against `size` always; PyTorch only with `check_invariants=True` "
        "(out-of-range indices are undefined behaviour there). `pin_memory` is accepted and has no effect, as "
        "for dense tensors. " + _INDEX_NOTE + " " + _DENSE_ONLY,
        gradient="Built from values that require grad: a non-leaf whose ops reach the values. With "
        "`requires_grad=True`: a leaf whose `.grad` is sparse on the coalesced pattern (torch.sparse.mm's).",
    ),
    "to_sparse": _page(
        (method("to_sparse", _S.to_sparse),),
        _S.to_sparse,
        "exact (the nonzero entries, row-major: the result is coalesced)",
        special="NaN is nonzero and kept; -0.0 is zero and dropped (as PyTorch).",
        divergence="Reads the values on the host to find the nonzeros (a synchronisation point). `layout` other "
        "than `sparse_coo` and `blocksize` raise NotImplementedError (vkml has no CSR/CSC/BSR layouts).",
    ),
    "to_dense": _page(
        (method("to_dense", _S.SparseTensor.to_dense),),
        _S.SparseTensor.to_dense,
        "duplicate entries add in entry order onto zeros (index_add's rounding after each add)",
        special="An explicit -0.0 entry becomes +0.0 (0 + -0.0); a dense tensor's `to_dense()` is itself.",
    ),
    "sparse_mm": _page(
        (
            sig("vkml.sparse.mm", _S.sparse_mm),
            sig("vkml.spmm", _S.spmm),
            "vkml.mm(sparse, dense)",
            "vkml.mm(dense, sparse)",
            "vkml.matmul(sparse, dense)",
            "sparse @ dense",
            "dense @ sparse",
            "sparse @ sparse",
        ),
        _S.sparse_mm,
        _ORDER + ". Computed as `index_add(zeros, 0, row, values[:, None] * dense[col])` (dense @ sparse: the "
        "transpose of sparse.t() @ dense.t())",
        special="NaN and inf propagate through the products as in a dense matmul of the entries; positions with "
        "no entry are exactly 0 (never 0 * inf).",
        divergence="Two sparse operands give a coalesced sparse product, as PyTorch's: every pair of entries "
        "a[i, k], b[k, j] multiplied, the products of one (i, j) added in pair order onto zeros. `mm`/`@` of "
        "a sparse leaf that requires grad raise NotImplementedError: PyTorch gives that leaf a dense gradient "
        "there, vkml's sparse tensors have sparse gradients only (torch.sparse.mm's). " + _INDEX_NOTE,
        gradient="Through gather, mul and index_add: the dense operand gets `S^T g`, the values `g[row] . "
        "dense[col]` per entry (duplicates each get the full gradient), as PyTorch.",
    ),
    "sparse_addmm": _page(
        (sig("vkml.sparse.addmm", _S.addmm), "vkml.addmm(input, sparse, dense, beta=, alpha=)"),
        _S.addmm,
        "the product as `sparse_mm`, then `beta * input + alpha * product` (each rounded once)",
        special="`beta=0` ignores `input` (NaN included), as the dense addmm.",
    ),
    "sparse_sum": _page(
        (
            sig("vkml.sparse.sum", _S.sparse_sum),
            "vkml.sum(sparse, dim=None)",
            "Tensor.sum(dim=None) of a sparse tensor",
        ),
        _S.sparse_sum,
        "all dims: the values summed as `vkml.sum` sums (its fixed tree); some dims: the entries that meet in one "
        "remaining index add in entry order onto zeros",
        divergence="`keepdim=True` raises NotImplementedError.",
    ),
    "sparse_softmax": _page(
        (sig("vkml.sparse.softmax", _S.sparse_softmax), sig("vkml.sparse.log_softmax", _S.sparse_log_softmax)),
        _S.sparse_softmax,
        "the dense softmax over each slice's specified entries (the unspecified ones as -inf, which take no share)",
        special="A slice's entries only: an unspecified position stays unspecified (not 0 or -inf in the result).",
        divergence="Sparse inputs with dense dims raise NotImplementedError.",
    ),
}
