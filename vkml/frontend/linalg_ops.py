"""``torch.linalg`` names built from matmuls and other device ops (``multi_dot``, ``matrix_power``,
``vander``, ``vecdot``, ``cond``, ...), plus ``matrix_exp`` (on the host, as the factorizations of
vkml/frontend/dense_linalg.py) and the legacy ``torch.*`` names ``matrix_power``, ``matrix_exp``,
``chain_matmul``.

The compositions run on the input's device, each as the ops it is built of, so they keep vkml's
contract (same bits on every device) and autograd differentiates them through those ops.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import types as T
from ..tensor import Tensor
from . import construction, mutation, pointwise, random, scans, shape, statistics
from . import dense_linalg as D
from . import operators as F
from .autograd_api import Function
from .exports import Export


def _tensor(op: str, name: str, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def _square(op: str, A) -> None:
    _tensor(op, "A", A)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )


def _identity_like(A):
    eye = construction.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return F.clone(F.expand(eye, tuple(A.shape)))


def matrix_power(A, n: int):
    """A to the integer power ``n`` by repeated squaring on the device, as ``torch.linalg.matrix_power``
    (n = 0: the identity; n < 0: the inverse's power, float inputs only).

    >>> import vkml
    >>> vkml.linalg.matrix_power(vkml.tensor([[1, 1], [0, 1]]), 3).tolist()
    [[1, 3], [0, 1]]
    """
    op = "linalg.matrix_power"
    _square(op, A)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:  # PyTorch's identity requires grad where A does, with a zero gradient
        return mutation.zero_gradient_link(_identity_like(A), A)
    if n < 0:
        A = D.inv(A)
        n = -n
    if n == 1:
        return F.clone(A)
    # PyTorch's order: the result gathers the set bits of n from the lowest, squaring z between them
    result, z = None, A
    while n:
        if n & 1:
            result = z if result is None else F.matmul(result, z)
        n >>= 1
        if n:
            z = F.matmul(z, z)
    return result


# Padé approximant of degree 13 with scaling and squaring (Higham 2005): its coefficients and the
# 1-norm up to which no scaling is needed for double precision.
_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
    10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
_THETA13 = 5.371920351148152


def _expm(a: np.ndarray) -> np.ndarray:
    """exp of one float64 square matrix: Padé 13 after scaling by 2^-s, then s squarings."""
    n = a.shape[0]
    if n == 0:
        return a.copy()
    if not np.all(np.isfinite(a)):
        return np.full_like(a, np.nan)
    norm = np.abs(a).sum(axis=0).max()
    s = max(0, math.ceil(math.log2(norm / _THETA13))) if norm > 0 else 0
    a = a / 2.0**s
    b = _PADE13
    eye = np.eye(n)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r


class _MatrixExp(Function):
    """exp(A) on the host; backward: the upper right block of exp([[A^T, g], [0, A^T]]) (a matrix_exp again,
    so differentiable again)."""

    @staticmethod
    def forward(ctx, A):
        a = D._host(A)
        flat = D._matrices(a)
        out = np.stack([_expm(m) for m in flat]) if len(flat) else flat
        ctx.save_for_backward(A)
        return D._upload(out.reshape(a.shape), A)

    @staticmethod
    def backward(ctx, g):
        (A,) = ctx.saved_tensors
        n = A.shape[-1]
        At = F.transpose(A, -2, -1)
        top = F.cat([At, g], -1)
        bottom = F.cat([F.mul(At, 0), At], -1)
        big = _MatrixExp.apply(F.cat([top, bottom], -2))
        return shape.narrow(shape.narrow(big, -2, 0, n), -1, n, n)


def matrix_exp(A):
    """The matrix exponential of each square matrix, as ``torch.linalg.matrix_exp`` (on the host in float64:
    Padé 13 with scaling and squaring, rounded once).

    >>> import vkml
    >>> vkml.linalg.matrix_exp(vkml.zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    op = "linalg.matrix_exp"
    _square(op, A)
    if not A.dtype.is_float:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {D._torch_name(A.dtype)}")
    if A.dtype.name not in D._NUMPY:  # float16/bfloat16: computed in float32, as PyTorch's upcast
        return F.cast(_MatrixExp.apply(F.cast(A, T.float32)), A.dtype)
    return _MatrixExp.apply(A)


def multi_dot(tensors):
    """The product of a chain of matrices in the cheapest order, as ``torch.linalg.multi_dot``: the first
    may be 1-D (a row vector) and the last 1-D (a column vector); the others are 2-D.

    >>> import vkml
    >>> vkml.linalg.multi_dot([vkml.ones(3), vkml.ones(3, 2), vkml.ones(2)]).item()
    6.0
    """
    op = "multi_dot"
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"{op}(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        _tensor(op, f"tensors[{i}]", t)
    first, last = tensors[0].ndim, tensors[-1].ndim
    if first not in (1, 2):
        raise RuntimeError(f"{op}(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"{op}(): the last tensor must be 1D or 2D but got {last}D")
    for i in range(1, len(tensors) - 1):
        if tensors[i].ndim != 2:
            raise RuntimeError(f"{op}(): tensor {i} must be 2D but got {tensors[i].ndim}D")
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(
                f"{op}(): all tensors must have be the same dtype but tensor 0 is "
                f"{_CPP_NAMES.get(tensors[0].dtype.name)} and tensor {i} {_CPP_NAMES.get(t.dtype.name)}"
            )
    mats = list(tensors)
    if first == 1:
        mats[0] = F.unsqueeze(mats[0], 0)
    if last == 1:
        mats[-1] = F.unsqueeze(mats[-1], 1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"{op}(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                f"{list(tensors[i + 1].shape)} cannot be multiplied"
            )
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    out = _chain(mats, _chain_order(dims), 0, len(mats) - 1)
    if first == 1 and last == 1:
        return F.reshape(out, ())
    if first == 1:
        return F.squeeze(out, 0)
    if last == 1:
        return F.squeeze(out, -1)
    return out


# PyTorch's C++ type names, as its multi_dot error prints them
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}
_CPP_NAMES |= {
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
}
_CPP_NAMES |= {"bool": "bool"}


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The matrix-chain split points (the first cheapest split, as PyTorch's dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i: int, j: int):
    if i == j:
        return mats[i]
    k = split[i][j]
    return F.matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


def chain_matmul(*matrices):
    """``torch.chain_matmul`` (deprecated in PyTorch): ``multi_dot`` of 2-D matrices (one is returned as is)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        return F.clone(matrices[0])
    for i, m in enumerate(matrices):
        _tensor("chain_matmul", f"matrices[{i}]", m)
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    return multi_dot(matrices)


def vander(x, *, N: int | None = None):  # noqa: N803 - PyTorch's name
    """The Vandermonde matrix of increasing powers x^0 .. x^(N-1) along a new last dim, as
    ``torch.linalg.vander`` (the powers are running products, ``cumprod``)."""
    op = "linalg.vander"
    _tensor(op, "x", x)
    if x.dtype is T.bool_:
        raise RuntimeError(f"{op} supports floating point, complex, and integer tensors, but got Bool")
    if x.ndim < 1:
        if N is None:
            raise RuntimeError("N must be greater than 1.")
        x = F.reshape(x, (1,))  # PyTorch takes a 0-d x with N as one element: a 1 x N result
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    dtype = x.dtype if x.dtype.is_float or x.dtype is T.int64 else T.int64
    x = F.cast(x, dtype)
    powers = scans.cumprod(F.expand(F.unsqueeze(x, -1), (*x.shape, n - 1)), -1)
    ones = F.add(F.mul(F.unsqueeze(x, -1), 0), 1)
    return F.cat([ones, powers], -1)


def torch_vander(x, N: int | None = None, increasing: bool = False):  # noqa: N803 - PyTorch's name
    """``torch.vander``: the Vandermonde matrix of a 1-D tensor, decreasing powers x^(N-1) .. x^0 unless
    ``increasing``; bool and integer inputs give int64, as PyTorch."""
    op = "vander"
    _tensor(op, "x", x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = x.dtype if x.dtype.is_float else T.int64
    x = F.cast(x, dtype)
    ones = F.add(F.mul(F.unsqueeze(x, -1), 0), 1)
    if n <= 1:
        out = ones if n == 1 else shape.narrow(ones, -1, 0, 0)
    else:
        out = F.cat([ones, scans.cumprod(F.expand(F.unsqueeze(x, -1), (x.shape[0], n - 1)), -1)], -1)
    return out if increasing else F.flip(out, (-1,))


def linalg_diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """``torch.linalg.diagonal``: ``torch.diagonal`` with the last two dims by default."""
    return shape.diagonal(A, offset, dim1, dim2)


def vecdot(x, y, *, dim: int = -1):
    """The dot product of ``x`` and ``y`` (broadcast) along ``dim``, as ``torch.linalg.vecdot``."""
    _tensor("linalg.vecdot", "x", x)
    _tensor("linalg.vecdot", "y", y)
    return F.sum(F.mul(x, y), dim)


def linalg_matmul(input, other):
    """``torch.linalg.matmul``: ``torch.matmul``."""
    return F.matmul(input, other)


def cond(A, p=None):
    """The condition number of each matrix in the norm ``p``, as ``torch.linalg.cond``: None/2/-2 the ratio of
    the extreme singular values; 'fro', 'nuc', ±1, ±inf ``matrix_norm(A, p) * matrix_norm(inv(A), p)``
    (square, invertible A; a singular one gives inf, as PyTorch)."""
    op = "linalg.cond"
    D._check(op, A, square=False)
    if p is None or p in (2, -2):
        s = D.svdvals(A)
        hi, lo = F.amax(s, -1), F.amin(s, -1)
        return F.div(lo, hi) if p == -2 else F.div(hi, lo)
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    D._check(op, A)
    inverse, info = D.inv_ex(A)
    value = F.mul(statistics.matrix_norm(A, p), statistics.matrix_norm(pointwise.nan_to_num(inverse, 0.0), p))
    return F.where(F.ne(info, 0), math.inf, value)


def tensorinv(A, ind: int = 2):
    """The inverse of ``A`` seen as a linear map from its first ``ind`` dims to the rest, as
    ``torch.linalg.tensorinv``: shape A.shape[ind:] + A.shape[:ind]."""
    op = "linalg.tensorinv"
    _tensor(op, "A", A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_dims, in_dims = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(out_dims), math.prod(in_dims)
    if rows != cols:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), "
            f"but got {cols} != {rows}"
        )
    return F.reshape(D.inv(F.reshape(A, (rows, cols))), (*in_dims, *out_dims))


def tensorsolve(A, B, dims=None):
    """X with ``tensordot(A, X, X.ndim) == B``, as ``torch.linalg.tensorsolve`` (``dims``: A's dims moved
    to the end first)."""
    op = "linalg.tensorsolve"
    _tensor(op, "A", A)
    _tensor(op, "B", B)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        rest = [d for d in range(A.ndim) if d not in dims]
        A = F.permute(A, (*rest, *dims))
    x_shape = tuple(A.shape[B.ndim :])
    rows = math.prod(B.shape)
    cols = math.prod(x_shape)
    if rows != cols:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
            f"but got {cols} != {rows}"
        )
    X = D.solve(F.reshape(A, (rows, cols)), F.reshape(B, (rows,)))
    return F.reshape(X, x_shape)


def _reflectors(op: str, A, tau):
    """V (m x n: A's strict lower part with a unit diagonal, the Householder vectors as columns), checked."""
    _tensor(op, "A", A)
    _tensor(op, "tau", tau)
    if A.ndim < 2:
        raise RuntimeError(f"torch.{op}: input must have at least 2 dimensions.")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"torch.{op}: input.dim() must be greater than tau.dim() by 1")
    m, n = A.shape[-2], A.shape[-1]
    if tau.shape[-1] > n:
        raise RuntimeError(f"torch.{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    eye = construction.eye(m, n, dtype=A.dtype, device=A.device)
    return F.add(shape.tril(A, -1), eye), m, n


def _apply_reflectors(V, tau, X, transpose: bool):
    """H_1 ... H_k X (``transpose``: H_k ... H_1 X), H_i = I - tau_i v_i v_i^T: one rank-1 update per reflector,
    on the device, so autograd differentiates it through the ops."""
    k = tau.shape[-1]
    order = range(k) if transpose else range(k - 1, -1, -1)
    for i in order:
        v = shape.narrow(V, -1, i, 1)  # (..., m, 1)
        t = F.unsqueeze(F.unsqueeze(tau[..., i], -1), -1)
        X = F.sub(X, F.mul(t, F.matmul(v, F.matmul(F.transpose(v, -2, -1), X))))
    return X


def householder_product(A, tau):
    """The first n columns of H_1 ... H_k (H_i = I - tau_i v_i v_i^T, v_i in A's columns below the diagonal, as
    LAPACK's geqrf leaves them), as ``torch.linalg.householder_product`` (LAPACK orgqr): computed on the device
    by rank-1 updates, differentiable through them."""
    op = "linalg.householder_product"
    V, m, n = _reflectors(op, A, tau)
    if m < n:
        raise RuntimeError(f"torch.{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    eye = construction.eye(m, n, dtype=A.dtype, device=A.device)
    return _apply_reflectors(V, tau, F.expand(eye, tuple(A.shape)), transpose=False)


def orgqr(input, tau):
    """``torch.orgqr``: ``torch.linalg.householder_product``."""
    return householder_product(input, tau)


def ormqr(input, input2, input3, left: bool = True, transpose: bool = False):
    """Q @ C (``left=False``: C @ Q; ``transpose``: Q^T) with Q the product of the Householder reflectors in
    (``input``, ``input2``), as ``torch.ormqr`` (LAPACK ormqr), on the device."""
    op = "ormqr"
    V, m, _ = _reflectors(op, input, input2)
    C = input3
    _tensor(op, "other", C)
    if left:
        return _apply_reflectors(V, input2, C, transpose)
    # C Q = (Q^T C^T)^T, C Q^T = (Q C^T)^T
    return F.transpose(_apply_reflectors(V, input2, F.transpose(C, -2, -1), not transpose), -2, -1)


def legacy_matrix_power(input, n: int):
    """``torch.matrix_power``: ``torch.linalg.matrix_power``."""
    return matrix_power(input, n)


def legacy_matrix_exp(input):
    """``torch.matrix_exp``: ``torch.linalg.matrix_exp``."""
    return matrix_exp(input)


def _approximate_basis(A, q: int, niter: int):
    """Q with q orthonormal columns with Q Q^H A ~ A (Halko et al. 2009, algorithm 4.4), as PyTorch's
    ``torch._lowrank.get_approximate_basis``: the same ``randn(n, q)`` draw from the global generator,
    so after the same ``manual_seed`` the same subspace."""
    R = random.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = D.qr(F.matmul(A, R)).Q
    for _ in range(niter):
        Q = D.qr(F.matmul(F.transpose(A, -2, -1), Q)).Q
        Q = D.qr(F.matmul(A, Q)).Q
    return Q


def svd_lowrank(A, q: int | None = 6, niter: int = 2, M=None):
    """(U, S, V) of a randomized rank-``q`` SVD, A ~ U diag(S) V^T, as ``torch.svd_lowrank`` (``M``: a mean
    subtracted from A first). Its random draws are PyTorch's, so a seeded call gives PyTorch's factors
    up to rounding; singular vectors' signs are LAPACK's.

    >>> import vkml as torch
    >>> _ = torch.manual_seed(0)
    >>> U, S, V = torch.svd_lowrank(torch.eye(4)[:, :3], q=2)
    >>> U.shape, S.shape, V.shape
    (torch.Size([4, 2]), torch.Size([2]), torch.Size([3, 2]))
    """
    op = "svd_lowrank"
    _tensor(op, "A", A)
    q = 6 if q is None else q
    if getattr(A, "is_sparse", False):
        A = A.to_dense()
    if M is not None:
        A = F.sub(A, M.to_dense() if getattr(M, "is_sparse", False) else M)
    m, n = A.shape[-2:]
    if m < n:
        A = F.transpose(A, -2, -1)
    Q = _approximate_basis(A, q, niter)
    U, S, Vh = D.svd(F.matmul(F.transpose(Q, -2, -1), A), full_matrices=False)
    U, V = F.matmul(Q, U), F.transpose(Vh, -2, -1)
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """(U, S, V) of the PCA of data ``A`` (samples by features), as ``torch.pca_lowrank``: a randomized
    ``svd_lowrank`` of ``A`` less its column means (``center``); V's columns are the principal directions,
    ``S ** 2 / (m - 1)`` the variances along them. q defaults to min(6, m, n). Seeded, PyTorch's factors.

    >>> import vkml as torch
    >>> _ = torch.manual_seed(0)
    >>> X = torch.tensor([[1.0, 2.0], [2.0, 4.1], [3.0, 5.9], [4.0, 8.0]])
    >>> U, S, V = torch.pca_lowrank(X, q=1)
    >>> round(float(V.abs()[1, 0]), 3)
    0.894
    """
    op = "pca_lowrank"
    _tensor(op, "A", A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if getattr(A, "is_sparse", False):
        A = A.to_dense()  # PyTorch keeps the sparse matrix and subtracts the mean as M; the product is the same
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(F.sub(A, F.mean(A, dim=-2, keepdim=True)), q, niter=niter)


# linalg.<name> -> this module's function
LINALG = {
    "matrix_power": matrix_power,
    "matrix_exp": matrix_exp,
    "multi_dot": multi_dot,
    "vander": vander,
    "diagonal": linalg_diagonal,
    "vecdot": vecdot,
    "matmul": linalg_matmul,
    "cond": cond,
    "tensorinv": tensorinv,
    "tensorsolve": tensorsolve,
    "householder_product": householder_product,
}

EXPORTS = (
    Export("matrix_power", method=True),
    Export("matrix_exp", method=True),
    Export("chain_matmul"),
    Export("vander", value=torch_vander),
    Export("orgqr", method=True),
    Export("ormqr", method=True),
    Export("svd_lowrank"),
    Export("pca_lowrank"),
)
