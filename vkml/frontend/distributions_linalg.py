"""Cholesky factors and triangular solves for ``vkml.distributions`` (MultivariateNormal, its KL).

Each is a ``vkml.autograd.Function`` computed on the host in float64 (a plain column loop, no
LAPACK, so the bits do not depend on the device or the machine's BLAS) and rounded to the input's
dtype. Their gradients are PyTorch's formulas written with these same functions, so they can be
differentiated again. A call reads its inputs back from the device: these are for the small
matrices of distributions, not a linear-algebra library.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import vkml as _vk


class CholeskyResult(NamedTuple):
    """``(L, info)`` as ``torch.linalg.cholesky_ex``: info is 0 where the matrix is positive definite."""

    L: object
    info: object


def _host(t) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


def _to_device(array: np.ndarray, like):
    return _vk.tensor(array, dtype=like.dtype, device=like.device)


def _cholesky_host(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower factors of A's lower triangle (batched) and LAPACK's info (first failing minor, from 1)."""
    n = A.shape[-1]
    L = np.zeros_like(A)
    info = np.zeros(A.shape[:-2], dtype=np.int32)
    with np.errstate(invalid="ignore", divide="ignore"):
        for j in range(n):
            pivot = A[..., j, j] - np.sum(L[..., j, :j] ** 2, axis=-1)
            failed = ~(pivot > 0) & (info == 0)  # NaN pivots fail too
            info = np.where(failed, j + 1, info)
            diag = np.sqrt(pivot)
            L[..., j, j] = diag
            below = A[..., j + 1 :, j] - np.einsum("...ik,...k->...i", L[..., j + 1 :, :j], L[..., j, :j])
            L[..., j + 1 :, j] = below / diag[..., None]
    return L, info


def _solve_lower_host(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X with L X = B, L lower triangular; batch dims broadcast."""
    batch = np.broadcast_shapes(L.shape[:-2], B.shape[:-2])
    L = np.broadcast_to(L, batch + L.shape[-2:])
    B = np.broadcast_to(B, batch + B.shape[-2:])
    X = np.zeros(B.shape, dtype=np.float64)
    for i in range(L.shape[-1]):
        done = np.einsum("...k,...kc->...c", L[..., i, :i], X[..., :i, :])
        X[..., i, :] = (B[..., i, :] - done) / L[..., i, i : i + 1]
    return X


class _Cholesky(_vk.autograd.Function):
    @staticmethod
    def forward(ctx, A):
        L, info = _cholesky_host(_host(A))
        ctx.info = info
        out = _to_device(L, A)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, gL):
        (L,) = ctx.saved_tensors
        # PyTorch's: gA = L^-H S L^-1, S the symmetric matrix of tril(L^H gL) with its diagonal halved
        phi = (L.mT @ gL).tril()
        phi = 0.5 * (phi + phi.tril(-1).mT)
        gA = solve_triangular(L.mT, phi, upper=True)
        return solve_triangular(L.mT, gA.mT, upper=True).mT  # gA L^-1 = (L^-T gA^T)^T


class _SolveLower(_vk.autograd.Function):
    @staticmethod
    def forward(ctx, L, B):
        X = _solve_lower_host(_host(L), _host(B))
        out = _to_device(X, B)
        ctx.save_for_backward(L, out)
        return out

    @staticmethod
    def backward(ctx, gX):
        L, X = ctx.saved_tensors
        gB = solve_triangular(L.mT, gX, upper=True)
        gL = -(gB @ X.mT).tril() if ctx.needs_input_grad[0] else None
        return gL, gB


def _check_square(name: str, A) -> None:
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )
    if not A.dtype.is_float:
        raise RuntimeError(f"{name}: Expected a floating point tensor as input. Got {A.dtype}")


def cholesky_ex(A) -> CholeskyResult:
    """The lower Cholesky factor of A and, per matrix, 0 where A is positive definite (else the failing order)."""
    _check_square("linalg.cholesky_ex", A)
    L = _Cholesky.apply(A)
    info = _vk.tensor(_cholesky_host(_host(A))[1], device=A.device)
    return CholeskyResult(L, info)


def cholesky(A):
    """The lower Cholesky factor of A (read from its lower triangle), as ``torch.linalg.cholesky``."""
    _check_square("linalg.cholesky", A)
    L, info = _cholesky_host(_host(A))
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size:
        where = "" if A.dim() == 2 else f"(Batch element {int(bad[0])}): "
        raise RuntimeError(
            f"linalg.cholesky: {where}The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {int(info.reshape(-1)[bad[0]])} is not positive-definite)."
        )
    return _Cholesky.apply(A)


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):
    """X with A X = B (A triangular, batched), as ``torch.linalg.solve_triangular`` for left=True."""
    if not left:
        raise NotImplementedError("solve_triangular: left=False is not supported by vkml.distributions")
    if unitriangular:
        raise NotImplementedError("solve_triangular: unitriangular=True is not supported by vkml.distributions")
    if upper:
        # reversing rows and columns turns an upper triangular system into a lower one
        return _SolveLower.apply(A.flip((-2, -1)), B.flip((-2,))).flip((-2,))
    return _SolveLower.apply(A, B)


def solve_lower_vector(L, b):
    """y with L y = b for lower triangular L (..., n, n) and b (..., n), batch dims broadcast."""
    return solve_triangular(L, b.unsqueeze(-1), upper=False).squeeze(-1)


def cholesky_inverse(L):
    """A^-1 from the lower factor L of A, as ``torch.cholesky_inverse(L)``."""
    eye = _vk.eye(L.shape[-1], dtype=L.dtype, device=L.device)
    L_inv = solve_triangular(L, eye.expand(tuple(L.shape)), upper=False)
    return L_inv.mT @ L_inv
