"""``torch.linalg``'s factorizations and solves, and their legacy ``torch.*`` names, computed on the host.

Where they run: these are small dense factorizations (LU, Cholesky, QR, symmetric eigen, SVD) whose
pivoting and convergence loops do not map onto vkml's kernels. Each op realizes its input, copies
it to the host, computes in float64 with numpy (``numpy.linalg``, i.e. LAPACK; the triangular
solve and the LU factorization are short numpy loops here, as is the Cholesky of a matrix LAPACK
refuses, for its partial factor), rounds once to the input dtype and uploads the result to the
input's device. The device never runs them;
the cost is a realize, a download and an upload per call (a synchronisation point). Because the
host computes every one, the result has the same bits whatever the device (the CPU backend,
lavapipe, a GPU), for the same input bits. Computing in float64 makes a float32 result at least
as accurate as PyTorch's float32 LAPACK call; the last bits may differ from PyTorch's.

The gradients are PyTorch's formulas (the standard derivations PyTorch uses, written here with
vkml ops) composed of vkml ops and of these ops, so they are differentiable again (``create_graph``) except
where a page says otherwise. Matmul-based compositions (``multi_dot``, ``matrix_power``, the
norms) run on the device (vkml/frontend/linalg_ops.py).

Errors: a singular or non-positive-definite input raises ``vkml.linalg.LinAlgError`` (a
RuntimeError, as ``torch.linalg.LinAlgError``) with PyTorch's text; integer and float16/bfloat16
inputs raise PyTorch's RuntimeError, as its CPU kernels do.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import types as T
from ..tensor import Tensor
from . import construction, creation, return_types, shape
from . import operators as F
from .autograd_api import Function
from .exports import Export


class LinAlgError(RuntimeError):
    """A linear-algebra input the factorization cannot handle (singular, not positive-definite), as
    ``torch.linalg.LinAlgError``, which is a RuntimeError too."""


_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "bool": "Bool"}
_TORCH_NAMES |= {"uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long"}
_NUMPY = {"float32": np.float32, "float64": np.float64}


def _torch_name(dtype) -> str:
    return _TORCH_NAMES.get(dtype.name, dtype.name)


def _check(op: str, A, name: str = "A", square: bool = True) -> None:
    """PyTorch's checks of a linalg input: a Tensor, at least 2-D, float32/float64, square if asked."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if not A.dtype.is_float:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {_torch_name(A.dtype)}")
    if A.dtype.name not in _NUMPY:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_torch_name(A.dtype)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{op}: {name} must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )


def _same_dtype(op: str, A, B) -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(
            f"{op}: Expected A and B to have the same dtype, but found A of type {_torch_name(A.dtype)} "
            f"and B of type {_torch_name(B.dtype)} instead"
        )
    if A.device != B.device:
        raise RuntimeError(f"{op}: Expected A and B to be on the same device, got {A.device} and {B.device}")


def _host(A) -> np.ndarray:
    """``A``'s values on the host in float64 (realizes ``A``)."""
    return np.asarray(A.detach()._host_values(), dtype=np.float64)


def _upload(values, like, dtype=None):
    """``values`` rounded once to ``dtype`` (``like``'s by default) on ``like``'s device."""
    dtype = like.dtype if dtype is None else dtype
    array = np.array(values, dtype=_NUMPY.get(dtype.name, np.float64), order="C")  # 0-d stays 0-d
    return creation.tensor(array, dtype=dtype, device=like.device)


def _info(values, like):
    """LAPACK's ``info`` per matrix (0: success) as an int32 tensor of the batch shape."""
    return creation.tensor(np.asarray(values, dtype=np.int32), dtype=T.int32, device=like.device)


def _matrices(a: np.ndarray) -> np.ndarray:
    """A batch of matrices as one flat batch (an empty batch and 0x0 matrices included)."""
    return a.reshape((math.prod(a.shape[:-2]), *a.shape[-2:]))


def _svd(op: str, a: np.ndarray, **kwargs):
    """numpy's SVD, with PyTorch's LinAlgError where it does not converge (a non-finite input)."""
    try:
        return np.linalg.svd(a, **kwargs)
    except np.linalg.LinAlgError:
        raise LinAlgError(
            "linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values."
        ) from None


def _batch_prefix(A, index: int) -> str:
    return f"(Batch element {index}): " if A.ndim > 2 else ""


def _mT(x):  # noqa: N802 - PyTorch's name
    return F.transpose(x, -2, -1)


def _lu_info(a: np.ndarray) -> int:
    """The 1-based column of the first zero pivot of LU with partial pivoting (LAPACK getf2's ``info``), or 0."""
    a = a.copy()
    n = a.shape[0]
    info = 0
    for j in range(n):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        if a[p, j] != 0:
            if p != j:
                a[[j, p]] = a[[p, j]]
            a[j + 1 :, j] /= a[j, j]
        elif info == 0:
            info = j + 1
        a[j + 1 :, j + 1 :] -= np.outer(a[j + 1 :, j], a[j, j + 1 :])
    return info


def _inverse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(inverses, info) of a batch of square float64 matrices; a singular one's inverse is NaN."""
    batch = a.shape[:-2]
    flat = _matrices(a)
    info = np.zeros(len(flat), dtype=np.int32)
    try:
        out = np.linalg.inv(flat)
    except np.linalg.LinAlgError:
        out = np.empty_like(flat)
        for i, m in enumerate(flat):
            try:
                out[i] = np.linalg.inv(m)
            except np.linalg.LinAlgError:
                # LAPACK's info: a zero pivot; a NaN pivot is not zero, so NaN inputs give NaN and info 0
                out[i] = np.nan
                info[i] = _lu_info(m)
    return out.reshape(a.shape), info.reshape(batch)


def _raise_singular(op: str, A, info: np.ndarray) -> None:
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    if len(bad):
        i = int(bad[0])
        raise LinAlgError(
            f"{op}: {_batch_prefix(A, i)}The diagonal element {int(flat[i])} is zero, the inversion could not be "
            "completed because the input matrix is singular."
        )


def _cholesky(a: np.ndarray) -> tuple[np.ndarray, int]:
    """Lower Cholesky factor of one float64 matrix by columns (LAPACK potf2's order) and its ``info``, for the
    matrices LAPACK's potrf refuses (their partial factor).

    Only the lower triangle is read. On failure at column j (1-based ``info``), column j holds the
    non-positive pivot and the columns after it the input's lower triangle, as LAPACK leaves them.
    """
    n = a.shape[0]
    L = np.tril(a).copy()
    for j in range(n):
        ajj = L[j, j] - L[j, :j] @ L[j, :j]
        if not ajj > 0:  # also NaN
            L[j, j] = ajj
            return L, j + 1
        ajj = math.sqrt(ajj)
        L[j, j] = ajj
        L[j + 1 :, j] = (L[j + 1 :, j] - L[j + 1 :, :j] @ L[j, :j]) / ajj
    return L, 0


def _triangular_solve(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """X with ``a @ X = b`` for triangular ``a`` (batches broadcast), by substitution: row i of X is
    (b_i - sum_j a_ij x_j) / a_ii, a zero diagonal giving inf/NaN as LAPACK's trsm (no check)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    n = a.shape[-1]
    x = np.zeros(b.shape, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n - 1, -1, -1) if upper else range(n):
            known = slice(i + 1, n) if upper else slice(0, i)
            s = b[..., i, :] - (a[..., i : i + 1, known] @ x[..., known, :])[..., 0, :]
            x[..., i, :] = s if unit else s / a[..., i, i][..., None]
    return x


# ---------------------------------------------------------------------- the differentiable host ops


class _Inverse(Function):
    """inv_ex on the host; backward: -X^T g X^T."""

    @staticmethod
    def forward(ctx, A, op, check):
        a = _host(A)
        out, info = _inverse(a)
        if check:
            _raise_singular(op, A, info)
        X = _upload(out, A)
        ctx.save_for_backward(X)
        return X, _info(info, A)

    @staticmethod
    def backward(ctx, g, _ginfo):
        (X,) = ctx.saved_tensors
        Xt = _mT(X)
        return F.neg(F.matmul(F.matmul(Xt, g), Xt)), None, None


def _cofactor(A, d):
    """The cofactor matrix det(A) A^-T of each matrix: through ``inv`` where no det is 0, else from the
    SVD on the host, U diag(prod_{j != i} s_j) V^T det(U) det(V) (first order only: not recorded)."""
    if not bool(F.eq(d, 0).any()):
        return F.mul(F.unsqueeze(F.unsqueeze(d, -1), -1), _mT(inv(A)))
    a = _host(A)
    u, s, vh = _svd("linalg.det", a)
    n = s.shape[-1]
    prods = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], axis=-1) if n else s
    scale = np.linalg.det(u) * np.linalg.det(vh)
    return _upload((u * prods[..., None, :]) @ vh * scale[..., None, None], A)


class _Det(Function):
    @staticmethod
    def forward(ctx, A):
        a = _host(A)
        with np.errstate(invalid="ignore"):
            d = np.where(np.isnan(a).any(axis=(-2, -1)), np.nan, np.linalg.det(a))  # numpy's det of NaN is 0
        d = _upload(d, A)
        ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        return F.mul(F.unsqueeze(F.unsqueeze(g, -1), -1), _cofactor(A, d))


class _Slogdet(Function):
    @staticmethod
    def forward(ctx, A):
        a = _host(A)
        with np.errstate(invalid="ignore"):
            sign, logabs = np.linalg.slogdet(a)
        nan = np.isnan(a).any(axis=(-2, -1))
        sign, logabs = np.where(nan, 0.0, sign), np.where(nan, np.nan, logabs)  # PyTorch's (0, NaN)
        sign, logabs = _upload(sign, A), _upload(logabs, A)
        ctx.mark_non_differentiable(sign)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(A)
        return sign, logabs

    @staticmethod
    def backward(ctx, _gsign, glogabs):
        if glogabs is None:
            return None
        (A,) = ctx.saved_tensors
        return F.mul(F.unsqueeze(F.unsqueeze(glogabs, -1), -1), _mT(inv(A)))


class _Solve(Function):
    """X = A^-1 B (B a batch of matrices, batches already broadcast); backward: gB = A^-T g, gA = -gB X^T."""

    @staticmethod
    def forward(ctx, A, B):
        a, b = _host(A), _host(B)
        try:
            x = np.linalg.solve(a, b)
        except np.linalg.LinAlgError:  # a singular matrix, or non-finite values (NaN results, as LAPACK's)
            x = np.full(b.shape, np.nan)  # the batches are broadcast by the caller
            for n, i in enumerate(np.ndindex(*a.shape[:-2])):
                try:
                    x[i] = np.linalg.solve(a[i], b[i])
                except np.linalg.LinAlgError:
                    if _lu_info(a[i]):
                        raise LinAlgError(
                            f"torch.linalg.solve: {_batch_prefix(A, n)}The solver failed because the input matrix "
                            "is singular."
                        ) from None
        X = _upload(x, B)
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = _Solve.apply(_mT(A), g)
        return F.neg(F.matmul(gB, _mT(X))), gB


class _SolveTriangular(Function):
    """X with A X = B, A triangular (batches broadcast by the caller)."""

    @staticmethod
    def forward(ctx, A, B, upper, unitriangular):
        X = _upload(_triangular_solve(_host(A), _host(B), upper, unitriangular), B)
        ctx.save_for_backward(A, X)
        ctx.upper, ctx.unit = upper, unitriangular
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = _SolveTriangular.apply(_mT(A), g, not ctx.upper, ctx.unit)
        gA = F.neg(F.matmul(gB, _mT(X)))
        keep = (1 if ctx.unit else 0) if ctx.upper else (-1 if ctx.unit else 0)
        gA = shape.triu(gA, keep) if ctx.upper else shape.tril(gA, keep)
        return gA, gB, None, None


class _Cholesky(Function):
    """The lower factor L (and info); backward: PyTorch's L^-T Φ(L^T gL) L^-1, symmetrized."""

    @staticmethod
    def forward(ctx, A, op, check):
        a = _host(A)
        flat = _matrices(a)
        info = np.zeros(len(flat), dtype=np.int32)
        try:  # LAPACK potrf on the lower triangle; the loop only where it fails, for LAPACK's partial factor
            L = np.linalg.cholesky(flat)
        except np.linalg.LinAlgError:
            L = np.empty_like(flat)
            for i, m in enumerate(flat):
                try:
                    L[i] = np.linalg.cholesky(m)
                except np.linalg.LinAlgError:
                    L[i], info[i] = _cholesky(m)
        for i in np.flatnonzero(info):
            if check:
                raise LinAlgError(
                    f"{op}: {_batch_prefix(A, i)}The factorization could not be completed because the input is "
                    f"not positive-definite (the leading minor of order {info[i]} is not positive-definite)."
                )
        L = _upload(L.reshape(a.shape), A)
        ctx.save_for_backward(L)
        return L, _info(info.reshape(a.shape[:-2]), A)

    @staticmethod
    def backward(ctx, gL, _ginfo):
        (L,) = ctx.saved_tensors
        gA = shape.tril(F.matmul(_mT(L), gL))
        gA = F.mul(F.add(gA, _mT(shape.tril(gA, -1))), 0.5)
        gA = solve_triangular(_mT(L), gA, upper=True)
        gA = solve_triangular(L, gA, upper=False, left=False)
        return gA, None, None


def _qr_square_backward(Q, R, gQ, gR):
    """gA of A = QR for m >= n (PyTorch's formula): Q (gQ-free part) R^-T plus gQ's."""
    M = None
    if gR is not None:
        M = F.matmul(gR, _mT(R))
    if gQ is not None:
        QtgQ = F.matmul(_mT(Q), gQ)
        M = F.neg(QtgQ) if M is None else F.sub(M, QtgQ)
    M = shape.triu(M)
    sym = F.add(M, _mT(M))
    sym = F.sub(sym, shape.diag_embed(shape.diagonal(M, 0, -2, -1)))  # the diagonal counted once
    gA = F.matmul(Q, sym)
    if gQ is not None:
        gA = F.add(gA, gQ)
    return solve_triangular(_mT(R), gA, upper=False, left=False)


class _QR(Function):
    @staticmethod
    def forward(ctx, A, mode):
        q, r = np.linalg.qr(_host(A), mode="complete" if mode == "complete" else "reduced")
        Q, R = _upload(q, A), _upload(r, A)
        ctx.save_for_backward(A, Q, R)
        ctx.mode = mode
        ctx.set_materialize_grads(False)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        A, Q, R = ctx.saved_tensors
        m, n = A.shape[-2], A.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_square_backward(Q, R, gQ, gR), None
        # wide: A = Q [R1 R2] with X = A[..., :m] = Q R1 and R2 = Q^T Y, Y = A[..., m:]
        Y = shape.narrow(A, -1, m, n - m)
        R1 = shape.narrow(R, -1, 0, m)
        gY = None
        gQ1 = gQ
        gR1 = None
        if gR is not None:
            gR1 = shape.narrow(gR, -1, 0, m)
            gR2 = shape.narrow(gR, -1, m, n - m)
            gY = F.matmul(Q, gR2)
            extra = F.matmul(Y, _mT(gR2))
            gQ1 = extra if gQ1 is None else F.add(gQ1, extra)
        gX = _qr_square_backward(Q, R1, gQ1, gR1)
        if gY is None:
            gY = F.mul(Y, 0)
        return F.cat([gX, gY], -1), None


class _Eigh(Function):
    @staticmethod
    def forward(ctx, A, uplo):
        w, v = np.linalg.eigh(_host(A), UPLO=uplo)
        L, V = _upload(w, A), _upload(v, A)
        ctx.save_for_backward(L, V)
        ctx.set_materialize_grads(False)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        Vt = _mT(V)
        if gV is None:
            inner = shape.diag_embed(gL)
        else:
            VtgV = F.matmul(Vt, gV)
            skew = F.mul(F.sub(VtgV, _mT(VtgV)), 0.5)
            E = F.sub(F.unsqueeze(L, -2), F.unsqueeze(L, -1))  # E[i, j] = L[j] - L[i]
            n = L.shape[-1]
            eye = construction.eye(n, dtype=L.dtype, device=L.device)
            E = F.add(E, eye)  # the diagonal (0) made 1; skew's diagonal is 0
            inner = F.div(skew, E)
            if gL is not None:
                inner = F.add(inner, shape.diag_embed(gL))
        return F.matmul(V, F.matmul(inner, Vt)), None


class _SVD(Function):
    """Reduced SVD U, S, Vh (the complete one's extra columns are added by the caller)."""

    @staticmethod
    def forward(ctx, A, full_matrices):
        u, s, vh = _svd("linalg.svd", _host(A), full_matrices=full_matrices)
        U, S, Vh = _upload(u, A), _upload(s, A), _upload(vh, A)
        ctx.save_for_backward(A, U, S, Vh)
        ctx.full = full_matrices
        ctx.set_materialize_grads(False)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        A, U, S, Vh = ctx.saved_tensors
        return _svd_backward(A, U, S, Vh, gU, gS, gVh, ctx.full), None


def _svd_backward(A, U, S, Vh, gU, gS, gVh, full: bool):
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    if full and m != n:
        U, Vh = shape.narrow(U, -1, 0, k), shape.narrow(Vh, -2, 0, k)
        gU = None if gU is None else shape.narrow(gU, -1, 0, k)
        gVh = None if gVh is None else shape.narrow(gVh, -2, 0, k)
    if gU is None and gVh is None:
        return F.matmul(F.mul(U, F.unsqueeze(gS, -2)), Vh)
    V = _mT(Vh)
    gV = None if gVh is None else _mT(gVh)
    Sr, Sc = F.unsqueeze(S, -2), F.unsqueeze(S, -1)
    S2 = F.mul(S, S)
    E = F.sub(F.unsqueeze(S2, -2), F.unsqueeze(S2, -1))
    E = F.add(E, construction.eye(k, dtype=S.dtype, device=S.device))
    inner = None
    if gU is not None:
        UtgU = F.matmul(_mT(U), gU)
        inner = F.mul(F.sub(UtgU, _mT(UtgU)), Sr)
    if gV is not None:
        VtgV = F.matmul(_mT(V), gV)
        term = F.mul(Sc, F.sub(VtgV, _mT(VtgV)))
        inner = term if inner is None else F.add(inner, term)
    gA = F.div(inner, E)
    if gS is not None:
        gA = F.add(gA, shape.diag_embed(gS))
    if m > n and gU is not None:
        gA = F.matmul(U, gA)
        gUSinv = F.div(gU, Sr)
        gA = F.add(gA, F.sub(gUSinv, F.matmul(U, F.matmul(_mT(U), gUSinv))))
        return F.matmul(gA, Vh)
    if m < n and gV is not None:
        gA = F.matmul(gA, Vh)
        gVSinv = F.div(gV, Sr)
        gA = F.add(gA, F.sub(_mT(gVSinv), F.matmul(F.matmul(_mT(gVSinv), V), Vh)))
        return F.matmul(U, gA)
    return F.matmul(F.matmul(U, gA), Vh)


def _pinv_backward(g, P, A):
    """PyTorch's gradient of P = pinv(A) (the smaller side's products)."""
    m, n = A.shape[-2], A.shape[-1]
    Pt, gt = _mT(P), _mT(g)
    mm = F.matmul
    if m <= n:
        K = mm(gt, P)
        KPt = mm(K, Pt)
        out = F.add(F.neg(_mT(mm(P, K))), KPt)
        out = F.sub(out, mm(mm(A, P), KPt))
        return F.add(out, mm(mm(Pt, P), F.sub(gt, mm(K, A))))
    K = mm(P, gt)
    PtK = mm(Pt, K)
    out = F.neg(_mT(mm(K, P)))
    out = F.add(out, mm(mm(F.sub(gt, mm(A, K)), P), Pt))
    return F.sub(F.add(out, PtK), mm(mm(PtK, P), A))


def _tolerance(s: np.ndarray, A, atol, rtol) -> np.ndarray:
    """PyTorch's cutoff max(atol, rtol * s_max): rtol defaults to eps * max(m, n) unless atol > 0 is given."""
    eps = float(np.finfo(_NUMPY[A.dtype.name]).eps)
    if rtol is None:
        rtol = 0.0 if atol is not None and _positive(atol) else eps * max(A.shape[-2], A.shape[-1])
    atol = 0.0 if atol is None else atol
    atol, rtol = (_host(v) if hasattr(v, "dtype") else np.float64(v) for v in (atol, rtol))
    smax = s[..., :1] if s.shape[-1] else np.zeros((*s.shape[:-1], 1))
    return np.maximum(atol[..., None] if np.ndim(atol) else atol, (rtol[..., None] if np.ndim(rtol) else rtol) * smax)


def _positive(atol) -> bool:
    return bool(np.all(_host(atol) > 0)) if hasattr(atol, "dtype") else atol > 0


class _Pinv(Function):
    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        a = _host(A)
        if hermitian:
            w, v = np.linalg.eigh(a)
            order = np.argsort(-np.abs(w), axis=-1, kind="stable")
            s = np.take_along_axis(np.abs(w), order, -1)
            tol = _tolerance(s, A, atol, rtol)
            with np.errstate(divide="ignore"):
                winv = np.where(np.abs(w) > tol, 1.0 / np.where(w == 0, 1, w), 0.0)
            p = (v * winv[..., None, :]) @ np.swapaxes(v, -1, -2)
        else:
            u, s, vh = _svd("linalg.pinv", a, full_matrices=False)
            tol = _tolerance(s, A, atol, rtol)
            sinv = np.where(s > tol, 1.0 / np.where(s == 0, 1, s), 0.0)
            p = np.swapaxes(vh, -1, -2) @ (sinv[..., :, None] * np.swapaxes(u, -1, -2))
        P = _upload(p, A)
        ctx.save_for_backward(A, P)
        return P

    @staticmethod
    def backward(ctx, g):
        A, P = ctx.saved_tensors
        return _pinv_backward(g, P, A), None, None, None


class _Lstsq(Function):
    """The least-squares solution (B a batch of matrices); backward through pinv(A), as PyTorch's."""

    @staticmethod
    def forward(ctx, A, B, rcond):
        a, b = _host(A), _host(B)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, (*batch, *a.shape[-2:])).reshape(-1, *a.shape[-2:])
        b = np.broadcast_to(b, (*batch, *b.shape[-2:])).reshape(-1, *b.shape[-2:])
        x = np.empty((len(a), a.shape[-1], b.shape[-1]))
        for i in range(len(a)):
            try:
                x[i] = np.linalg.lstsq(a[i], b[i], rcond=rcond)[0]
            except np.linalg.LinAlgError:
                raise LinAlgError(
                    "linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values."
                ) from None
        X = _upload(x.reshape(*batch, a.shape[-1], b.shape[-1]), A)
        ctx.save_for_backward(A, B)
        return X

    @staticmethod
    def backward(ctx, g):
        A, B = ctx.saved_tensors
        P = pinv(A)
        gA = _pinv_backward(F.matmul(g, _mT(B)), P, A)
        return gA, F.matmul(_mT(P), g), None


# ---------------------------------------------------------------------- torch.linalg


def inv(A):
    """The inverse of each square matrix (``torch.linalg.inv``); a singular one raises LinAlgError.

    >>> import vkml
    >>> vkml.linalg.inv(vkml.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    _check("linalg.inv", A)
    return _Inverse.apply(A, "linalg.inv", True)[0]


def inv_ex(A, *, check_errors: bool = False):
    """(inverse, info), as ``torch.linalg.inv_ex``: info > 0 marks a singular matrix (whose inverse is NaN here)."""
    _check("linalg.inv_ex", A)
    return return_types.linalg_inv_ex(*_Inverse.apply(A, "linalg.inv_ex", check_errors))


def det(A):
    """The determinant of each square matrix (``torch.linalg.det``, ``torch.det``).

    >>> import vkml
    >>> vkml.linalg.det(vkml.tensor([[1.0, 2.0], [3.0, 4.0]])).item()
    -2.0
    """
    _check("linalg.det", A)
    return _Det.apply(A)


def slogdet(A):
    """(sign, log|det|) of each square matrix, as ``torch.linalg.slogdet``."""
    _check("linalg.slogdet", A)
    return return_types.linalg_slogdet(*_Slogdet.apply(A))


def _solve_shapes(op: str, A, B):
    """B as a batch of matrices, whether it was a vector (PyTorch's rule), and both broadcast."""
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = F.unsqueeze(B, -1) if vector else B
    if Bm.shape[-2] != A.shape[-1]:
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation AX = B "
            f"({A.shape[-2]}x{A.shape[-1]} and {Bm.shape[-2]}x{Bm.shape[-1]})"
        )
    batch = tuple(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2])))
    A = F.expand(A, (*batch, *A.shape[-2:])) if tuple(A.shape[:-2]) != batch else A
    Bm = F.expand(Bm, (*batch, *Bm.shape[-2:])) if tuple(Bm.shape[:-2]) != batch else Bm
    return A, Bm, vector


def solve(A, B, *, left: bool = True):
    """X with A X = B (``left=False``: X A = B), as ``torch.linalg.solve``; B may be a vector (batch).

    >>> import vkml
    >>> vkml.linalg.solve(vkml.tensor([[2.0, 0.0], [0.0, 4.0]]), vkml.tensor([1.0, 1.0])).tolist()
    [0.5, 0.25]
    """
    op = "linalg.solve"
    _check(op, A)
    _check(op, B, "B", square=False) if B.ndim >= 2 else _check_vector(op, B)
    _same_dtype(op, A, B)
    if not left:
        return _mT(solve(_mT(A), _mT(B)))
    A, Bm, vector = _solve_shapes(op, A, B)
    X = _Solve.apply(A, Bm)
    return F.squeeze(X, -1) if vector else X


def _check_vector(op: str, B) -> None:
    if not isinstance(B, Tensor):
        raise TypeError(f"{op}(): argument 'B' must be Tensor, not {type(B).__name__}")
    if B.ndim < 1:
        raise RuntimeError(f"{op}: The input tensor B must have at least 1 dimensions.")


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):
    """(result, info), as ``torch.linalg.solve_ex``: info > 0 marks a singular A (the result is NaN there)."""
    _check("linalg.solve_ex", A)
    info = _inverse(_host(A))[1]
    if info.any():
        if check_errors:
            raise LinAlgError("torch.linalg.solve_ex: The solver failed because the input matrix is singular.")
        A_safe = F.where(F.unsqueeze(F.unsqueeze(creation.tensor(info != 0, device=A.device), -1), -1), _eye_like(A), A)
        X = solve(A_safe, B, left=left)
        bad = creation.tensor(info != 0, device=A.device)
        while bad.ndim < X.ndim:
            bad = F.unsqueeze(bad, -1)
        X = F.where(bad, math.nan, X)
    else:
        X = solve(A, B, left=left)
    return return_types.linalg_solve_ex(X, _info(info, A))


def _eye_like(A):
    return F.expand(construction.eye(A.shape[-1], dtype=A.dtype, device=A.device), tuple(A.shape))


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):
    """X with A X = B for triangular A (``left=False``: X A = B), as ``torch.linalg.solve_triangular``.

    Only A's ``upper`` (else lower) triangle is read; ``unitriangular`` takes its diagonal as ones.
    A zero on the diagonal gives inf/NaN, not an error, as PyTorch's.
    """
    op = "linalg.solve_triangular"
    _check(op, A)
    _check(op, B, "B", square=False)
    _same_dtype(op, A, B)
    if not left:
        return _mT(solve_triangular(_mT(A), _mT(B), upper=not upper, unitriangular=unitriangular))
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation AX = B "
            f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})"
        )
    batch = tuple(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    A = F.expand(A, (*batch, *A.shape[-2:])) if tuple(A.shape[:-2]) != batch else A
    B = F.expand(B, (*batch, *B.shape[-2:])) if tuple(B.shape[:-2]) != batch else B
    A = shape.triu(A) if upper else shape.tril(A)
    return _SolveTriangular.apply(A, B, bool(upper), bool(unitriangular))


def cholesky(A, *, upper: bool = False):
    """The Cholesky factor L (A = L L^T; ``upper``: U = L^T) of each symmetric positive-definite matrix,
    as ``torch.linalg.cholesky``; only the lower triangle is read; a non-PD matrix raises LinAlgError.

    >>> import vkml
    >>> vkml.linalg.cholesky(vkml.tensor([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    _check("linalg.cholesky", A)
    L = _Cholesky.apply(A, "linalg.cholesky", True)[0]
    return _mT(L) if upper else L


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):
    """(L, info), as ``torch.linalg.cholesky_ex``: info = k > 0 when the leading minor of order k is not PD."""
    _check("linalg.cholesky_ex", A)
    L, info = _Cholesky.apply(A, "linalg.cholesky_ex", check_errors)
    return return_types.linalg_cholesky_ex(_mT(L) if upper else L, info)


def qr(A, mode: str = "reduced"):
    """(Q, R) with A = Q R, as ``torch.linalg.qr``: mode 'reduced', 'complete' or 'r' (Q empty).

    Householder QR (LAPACK geqrf/orgqr, as PyTorch's CPU kernel), so R's diagonal signs are LAPACK's.
    """
    op = "linalg.qr"
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    _check(op, A, square=False)
    if mode == "r":
        R = _upload(np.linalg.qr(_host(A), mode="r"), A)
        return return_types.linalg_qr(creation.tensor([], dtype=A.dtype, device=A.device), R)
    return return_types.linalg_qr(*_QR.apply(A, mode))


def eigh(A, UPLO: str = "L"):  # noqa: N803 - PyTorch's name
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix, as ``torch.linalg.eigh``;
    only the ``UPLO`` triangle is read. An eigenvector's sign is LAPACK's choice (not unique)."""
    op = "linalg.eigh"
    _check(op, A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return return_types.linalg_eigh(*_Eigh.apply(A, UPLO))


def eigvalsh(A, UPLO: str = "L"):  # noqa: N803
    """The eigenvalues (ascending) of each symmetric matrix, as ``torch.linalg.eigvalsh``."""
    op = "linalg.eigvalsh"
    _check(op, A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _Eigh.apply(A, UPLO)[0]


def svd(A, full_matrices: bool = True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending, as ``torch.linalg.svd`` (LAPACK gesdd, PyTorch's CPU
    driver); singular vectors' signs are LAPACK's. ``driver`` is for CUDA in PyTorch: it must be None here."""
    op = "linalg.svd"
    _check(op, A, square=False)
    if driver is not None:
        raise RuntimeError(
            f"torch.{op}: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend."
        )
    return return_types.linalg_svd(*_SVD.apply(A, bool(full_matrices)))


def svdvals(A, *, driver=None):
    """The singular values, descending, of each matrix (``torch.linalg.svdvals``)."""
    op = "linalg.svdvals"
    _check(op, A, square=False)
    if driver is not None:
        raise RuntimeError(
            f"torch.{op}: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend."
        )
    if not A.requires_grad:
        return _upload(_svd(op, _host(A), compute_uv=False), A)
    return _SVD.apply(A, False)[1]


def pinv(A, rcond=None, hermitian: bool = False, *, atol=None, rtol=None):
    """The Moore-Penrose pseudo-inverse, as ``torch.linalg.pinv``: singular values at or below
    max(atol, rtol * s_max) are dropped (rtol defaults to eps * max(m, n), or 0 when atol > 0 is given);
    ``rcond`` is the old name of rtol; ``hermitian`` uses the symmetric eigendecomposition."""
    op = "linalg.pinv"
    _check(op, A, "input", square=bool(hermitian))
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError(f"{op}: rcond and rtol are the same argument; give one")
        rtol = rcond
    return _Pinv.apply(A, atol, rtol, bool(hermitian))


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values) of min ||A X - B||, as ``torch.linalg.lstsq``.

    The solution is numpy's (LAPACK gelsd) whatever the driver; ``driver`` ('gelsy' by default, as
    PyTorch's CPU) decides which other fields are filled, as PyTorch's: rank for gelsy/gelsd/gelss,
    singular values for gelsd/gelss, residuals (||AX - B||² per column) when m > n, every matrix has
    full rank and the driver is not gelsy.
    """
    op = "torch.linalg.lstsq"
    _check(op, A, square=False)
    if driver is None:
        driver = "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    if not vector:
        _check(op, B, "B", square=False)
    _same_dtype(op, A, B)
    Bm = F.unsqueeze(B, -1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if Bm.shape[-2] != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    if rcond is None:
        rcond = float(np.finfo(_NUMPY[A.dtype.name]).eps) * max(m, n)
    X = _Lstsq.apply(A, Bm, float(rcond))
    a = _host(A)
    s = _svd(op, a, compute_uv=False)
    tol = float(rcond) * (s[..., :1] if s.shape[-1] else np.zeros((*s.shape[:-1], 1)))
    ranks = np.sum(s > tol, axis=-1)
    empty = creation.tensor([], dtype=A.dtype, device=A.device)
    residuals = empty
    if m > n and driver != "gelsy" and bool(np.all(ranks == n)):
        residuals = F.sum(F.pow(F.sub(F.matmul(A, X), Bm), 2), -2)
        if vector:
            residuals = F.squeeze(residuals, -1)
    rank = creation.tensor(ranks.astype(np.int64), device=A.device) if driver != "gels" else _empty_long(A)
    sv = _upload(s, A) if driver in ("gelsd", "gelss") else empty
    return return_types.linalg_lstsq(F.squeeze(X, -1) if vector else X, residuals, rank, sv)


def _empty_long(A):
    return creation.tensor([], dtype=T.int64, device=A.device)


def matrix_rank(A, tol=None, hermitian: bool = False, *, atol=None, rtol=None):
    """The number of singular values above max(atol, rtol * s_max) of each matrix, as
    ``torch.linalg.matrix_rank`` (``tol`` is the old name of atol; int64 result)."""
    op = "linalg.matrix_rank"
    _check(op, A, square=bool(hermitian))
    if tol is not None:
        atol, rtol = tol, 0.0 if rtol is None else rtol
    a = _host(A)
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else _svd(op, a, compute_uv=False)
    if hermitian:
        s = -np.sort(-s, axis=-1)
    ranks = np.sum(s > _tolerance(s, A, atol, rtol), axis=-1)
    return creation.tensor(np.asarray(ranks, dtype=np.int64), dtype=T.int64, device=A.device)


# ---------------------------------------------------------------------- LU


def _getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """LU with partial pivoting of one float64 m x n matrix, LAPACK getf2's steps: (packed LU, 1-based pivots,
    info). A zero pivot sets info (its column, once) and is left unscaled, as LAPACK leaves it."""
    a = a.copy()
    m, n = a.shape
    k = min(m, n)
    piv = np.zeros(k, dtype=np.int32)
    info = 0
    for j in range(k):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv[j] = p + 1
        if a[p, j] != 0:
            if p != j:
                a[[j, p]] = a[[p, j]]
            a[j + 1 :, j] /= a[j, j]
        elif info == 0:
            info = j + 1
        a[j + 1 :, j + 1 :] -= np.outer(a[j + 1 :, j], a[j, j + 1 :])
    return a, piv, info


def _permutation(piv: np.ndarray, m: int) -> np.ndarray:
    """P (m x m) with A = P L U from LAPACK's row swaps: row i was swapped with row piv[i] - 1, in order."""
    perm = np.arange(m)
    for i, p in enumerate(piv):
        perm[[i, p - 1]] = perm[[p - 1, i]]
    P = np.zeros((m, m))
    P[perm, np.arange(m)] = 1.0
    return P


class _LUFactor(Function):
    """(LU, pivots, info); backward: P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T (PyTorch's) for a square
    matrix, a rectangular one split into its square LU and the rest."""

    @staticmethod
    def forward(ctx, A, op, check):
        a = _host(A)
        flat = _matrices(a)
        m, n = a.shape[-2:]
        lu = np.empty_like(flat)
        piv = np.zeros((len(flat), min(m, n)), dtype=np.int32)
        info = np.zeros(len(flat), dtype=np.int32)
        perms = np.empty((len(flat), m, m))
        for i, mat in enumerate(flat):
            lu[i], piv[i], info[i] = _getrf(mat)
            perms[i] = _permutation(piv[i], m)
            if check and info[i]:
                raise RuntimeError(
                    f"{op}: {_batch_prefix(A, i)}U[{info[i]},{info[i]}] is zero and using it on lu_solve would result "
                    "in a division by zero. If you still want to perform the factorization, consider calling "
                    "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
                )
        batch = a.shape[:-2]
        LU = _upload(lu.reshape(a.shape), A)
        ctx.P = _upload(perms.reshape(*batch, m, m), A)
        ctx.save_for_backward(LU)
        pivots = creation.tensor(piv.reshape(*batch, min(m, n)), dtype=T.int32, device=A.device)
        return LU, pivots, _info(info.reshape(batch), A)

    @staticmethod
    def backward(ctx, gLU, _gpiv, _ginfo):
        (LU,) = ctx.saved_tensors
        m, n = LU.shape[-2], LU.shape[-1]
        k = min(m, n)
        eye = construction.eye(m, k, dtype=LU.dtype, device=LU.device)
        L = F.add(shape.tril(shape.narrow(LU, -1, 0, k), -1), eye)
        U = shape.triu(shape.narrow(LU, -2, 0, k))
        gL = shape.tril(shape.narrow(gLU, -1, 0, k), -1)
        gU = shape.triu(shape.narrow(gLU, -2, 0, k))
        if m == n:
            return F.matmul(ctx.P, _lu_square_backward(L, U, gL, gU)), None, None
        if m < n:  # A = P L [U1 U2]: [X Y] with X = P L U1 square and U2 = L^-1 P^T Y
            U1, U2 = shape.narrow(U, -1, 0, m), shape.narrow(U, -1, m, n - m)
            gU1, gU2 = shape.narrow(gU, -1, 0, m), shape.narrow(gU, -1, m, n - m)
            gY = solve_triangular(_mT(L), gU2, upper=True, unitriangular=True)
            gX = _lu_square_backward(L, U1, F.sub(gL, F.matmul(gY, _mT(U2))), gU1)
            return F.matmul(ctx.P, F.cat([gX, gY], -1)), None, None
        # m > n: P^T A = [L1 U; L2 U]: the top is a square LU, L2 = (P^T A)_2 U^-1
        L1, L2 = shape.narrow(L, -2, 0, n), shape.narrow(L, -2, n, m - n)
        gL1, gL2 = shape.narrow(gL, -2, 0, n), shape.narrow(gL, -2, n, m - n)
        gB2 = solve_triangular(_mT(U), gL2, upper=False, left=False)
        gB1 = _lu_square_backward(L1, U, gL1, F.sub(gU, F.matmul(_mT(L2), gB2)))
        return F.matmul(ctx.P, F.cat([gB1, gB2], -2)), None, None


def _lu_square_backward(L, U, gL, gU):
    """gB of B = L U (square, L unit lower): L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T (PyTorch's formula)."""
    inner = F.add(shape.tril(F.matmul(_mT(L), gL), -1), shape.triu(F.matmul(gU, _mT(U))))
    gB = solve_triangular(_mT(L), inner, upper=True, unitriangular=True)
    return solve_triangular(_mT(U), gB, upper=False, left=False)


def _check_pivot(op: str, pivot: bool) -> None:
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")


def lu_factor(A, *, pivot: bool = True):
    """(LU, pivots) of each matrix, LAPACK's packed form (1-based int32 pivots), as ``torch.linalg.lu_factor``;
    a zero pivot raises PyTorch's RuntimeError (``lu_factor_ex`` reports it as info instead)."""
    op = "torch.linalg.lu_factor"
    _check("linalg.lu_factor", A, square=False)
    _check_pivot("linalg.lu_factor", pivot)
    LU, pivots, _ = _LUFactor.apply(A, op, True)
    return return_types.linalg_lu_factor(LU, pivots)


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):
    """(LU, pivots, info), as ``torch.linalg.lu_factor_ex``: info = k > 0 when U[k, k] is zero."""
    _check("linalg.lu_factor_ex", A, square=False)
    _check_pivot("linalg.lu_factor_ex", pivot)
    return return_types.linalg_lu_factor_ex(*_LUFactor.apply(A, "torch.linalg.lu_factor_ex", check_errors))


def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True):  # noqa: N803
    """(P, L, U) from ``lu_factor``'s packed form, as ``torch.lu_unpack`` (an unrequested part is empty)."""
    _check("lu_unpack", LU_data, "LU_data", square=False)
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = creation.tensor([], dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        eye = construction.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = F.add(shape.tril(shape.narrow(LU_data, -1, 0, k), -1), eye)
        U = shape.triu(shape.narrow(LU_data, -2, 0, k))
    if unpack_pivots:
        piv = np.asarray(LU_pivots._host_values(), dtype=np.int64).reshape(
            math.prod(LU_pivots.shape[:-1]), LU_pivots.shape[-1]
        )  # (-1 cannot stand for the batch when k is 0)
        perms = np.stack([_permutation(p, m) for p in piv]) if len(piv) else np.zeros((0, m, m))
        P = _upload(perms.reshape(*LU_pivots.shape[:-1], m, m), LU_data)
    return return_types.lu_unpack(P, L, U)


def lu(A, *, pivot: bool = True):
    """(P, L, U) with A = P L U, as ``torch.linalg.lu`` (L unit lower m x k, U upper k x n)."""
    _check("linalg.lu", A, square=False)
    _check_pivot("linalg.lu", pivot)
    LU, pivots, _ = _LUFactor.apply(A, "linalg.lu", False)
    return return_types.linalg_lu(*lu_unpack(LU, pivots))


class _LUSolve(Function):
    """X with A X = B (``adjoint``: A^T X = B) for A = P L U from its packed factors; the gradient reaches LU
    through A's: gL = tril(P^T gA U^T, -1), gU = triu(L^T P^T gA)."""

    @staticmethod
    def forward(ctx, LU, pivots, B, adjoint):
        P, L, U = (t for t in lu_unpack(LU.detach(), pivots))
        p, lo, up, b = _host(P), _host(L), _host(U), _host(B)
        if adjoint:  # A^T = U^T L^T P^T
            y = _triangular_solve(np.swapaxes(up, -1, -2), b, False, False)
            y = _triangular_solve(np.swapaxes(lo, -1, -2), y, True, True)
            x = p @ y
        else:
            y = _triangular_solve(lo, np.swapaxes(p, -1, -2) @ b, False, True)
            x = _triangular_solve(up, y, True, False)
        X = _upload(x, B)
        ctx.save_for_backward(LU, X)
        ctx.pivots, ctx.adjoint, ctx.P = pivots, adjoint, P
        return X

    @staticmethod
    def backward(ctx, g):
        LU, X = ctx.saved_tensors
        # L and U from the saved LU through tril/triu, so that a second derivative reaches LU through them too
        L, U = F.add(shape.tril(LU, -1), _eye_like(LU)), shape.triu(LU)
        gB = _LUSolve.apply(LU, ctx.pivots, g, not ctx.adjoint)
        gA = F.neg(F.matmul(X, _mT(gB)) if ctx.adjoint else F.matmul(gB, _mT(X)))
        PtgA = F.matmul(_mT(ctx.P), gA)
        gLU = F.add(shape.tril(F.matmul(PtgA, _mT(U)), -1), shape.triu(F.matmul(_mT(L), PtgA)))
        return gLU, None, gB, None


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False):
    """X with A X = B (``adjoint``: A^T X = B; ``left=False``: X A = B) from ``lu_factor``'s (LU, pivots),
    as ``torch.linalg.lu_solve``."""
    op = "linalg.lu_solve"
    _check(op, LU, "LU")
    _check(op, B, "B", square=False)
    _same_dtype(op, LU, B)
    if not left:
        return _mT(lu_solve(LU, pivots, _mT(B), adjoint=not adjoint))
    if B.shape[-2] != LU.shape[-1]:
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation AX = B "
            f"({LU.shape[-2]}x{LU.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})"
        )
    batch = tuple(np.broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2])))
    LU = F.expand(LU, (*batch, *LU.shape[-2:])) if tuple(LU.shape[:-2]) != batch else LU
    pivots = F.expand(pivots, (*batch, pivots.shape[-1])) if tuple(pivots.shape[:-1]) != batch else pivots
    B = F.expand(B, (*batch, *B.shape[-2:])) if tuple(B.shape[:-2]) != batch else B
    return _LUSolve.apply(LU, pivots, B, bool(adjoint))


def geqrf(input):
    """(a, tau): LAPACK geqrf's Householder QR (R on and above the diagonal, the reflectors below it), as
    ``torch.geqrf``; on the host (numpy's raw QR). Not differentiable, as PyTorch's."""
    _check("geqrf", input, "input", square=False)
    a = _host(input)
    flat = _matrices(a)
    k = min(a.shape[-2], a.shape[-1])
    out, taus = np.empty_like(flat), np.empty((len(flat), k))
    for i, m in enumerate(flat):
        h, taus[i] = np.linalg.qr(m, mode="raw")
        out[i] = h.T  # numpy gives LAPACK's Fortran-order array transposed
    return return_types.geqrf(
        _upload(out.reshape(a.shape), input).detach(), _upload(taus.reshape(*a.shape[:-2], k), input).detach()
    )


def legacy_lu(A, pivot: bool = True, get_infos: bool = False):
    """``torch.lu`` (deprecated in PyTorch): (LU, pivots), plus info with ``get_infos`` (then no error)."""
    _check("lu", A, square=False)
    _check_pivot("linalg.lu_factor", pivot)
    LU, pivots, info = _LUFactor.apply(A, "torch.linalg.lu_factor", not get_infos)
    return return_types.lu_with_info(LU, pivots, info) if get_infos else (LU, pivots)


def legacy_lu_solve(input, LU_data, LU_pivots):  # noqa: N803
    """``torch.lu_solve`` (deprecated in PyTorch): ``torch.linalg.lu_solve(LU_data, LU_pivots, input)``."""
    return lu_solve(LU_data, LU_pivots, input)


# ---------------------------------------------------------------------- torch.* legacy names


def inverse(input):
    """``torch.inverse``: ``torch.linalg.inv``."""
    return inv(input)


def logdet(input):
    """log(det(A)) of each square matrix (``torch.logdet``): NaN for a negative determinant, -inf for 0."""
    _check("logdet", input)
    sign, logabs = _Slogdet.apply(input)
    return F.where(F.lt(sign, 0), math.nan, logabs)


def legacy_slogdet(input):
    """``torch.slogdet``: as ``torch.linalg.slogdet``, under the return type ``torch.return_types.slogdet``."""
    return return_types.slogdet(*slogdet(input))


def legacy_cholesky(input, upper: bool = False):
    """``torch.cholesky`` (deprecated in PyTorch): ``torch.linalg.cholesky`` with ``upper`` positional."""
    return cholesky(input, upper=upper)


def legacy_qr(input, some: bool = True):
    """``torch.qr``: (Q, R), reduced when ``some`` (else complete)."""
    return return_types.qr(*qr(input, "reduced" if some else "complete"))


def legacy_svd(input, some: bool = True, compute_uv: bool = True):
    """``torch.svd``: (U, S, V) with A = U diag(S) V^T (V, not Vh); ``some`` gives the reduced U and V.
    Without ``compute_uv``, U and V are zero matrices of shapes (m, m) and (n, n), as PyTorch's."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        zeros = creation.zeros
        return return_types.svd(
            zeros((*batch, m, m), dtype=input.dtype, device=input.device),
            S,
            zeros((*batch, n, n), dtype=input.dtype, device=input.device),
        )
    U, S, Vh = svd(input, full_matrices=not some)
    return return_types.svd(U, S, _mT(Vh))


def pinverse(input, rcond: float = 1e-15):
    """``torch.pinverse``: ``torch.linalg.pinv`` with relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)


class _CholeskySolve(Function):
    """X = (L L^T)^-1 B (``upper``: (U^T U)^-1 B); backward: PyTorch's, which takes L as a full matrix:
    gB = cholesky_solve(g, L), gL = -(gB X^T + X gB^T) L (``upper``: -U (...))."""

    @staticmethod
    def forward(ctx, B, L, upper):
        b, l_ = _host(B), _host(L)
        if upper:
            y = _triangular_solve(np.swapaxes(np.triu(l_), -1, -2), b, False, False)
            x = _triangular_solve(np.triu(l_), y, True, False)
        else:
            y = _triangular_solve(np.tril(l_), b, False, False)
            x = _triangular_solve(np.swapaxes(np.tril(l_), -1, -2), y, True, False)
        X = _upload(x, B)
        ctx.save_for_backward(L, X)
        ctx.upper = upper
        return X

    @staticmethod
    def backward(ctx, g):
        L, X = ctx.saved_tensors
        gB = _CholeskySolve.apply(g, L, ctx.upper)
        common = F.matmul(gB, _mT(X))
        common = F.add(common, _mT(common))
        gL = F.neg(F.matmul(L, common) if ctx.upper else F.matmul(common, L))
        return gB, gL, None


class _CholeskyInverse(Function):
    """(L L^T)^-1 from L (``upper``: (U^T U)^-1); backward: PyTorch's, -(X (g + g^T) X) L (or -U (...))."""

    @staticmethod
    def forward(ctx, L, upper):
        l_ = np.triu(_host(L)) if upper else np.tril(_host(L))
        a = np.swapaxes(l_, -1, -2) @ l_ if upper else l_ @ np.swapaxes(l_, -1, -2)
        X = _upload(_inverse(a)[0], L)
        ctx.save_for_backward(L, X)
        ctx.upper = upper
        return X

    @staticmethod
    def backward(ctx, g):
        L, X = ctx.saved_tensors
        common = F.matmul(X, F.matmul(F.add(g, _mT(g)), X))
        return F.neg(F.matmul(L, common) if ctx.upper else F.matmul(common, L)), None


def cholesky_solve(input, input2, upper: bool = False):
    """X with A X = ``input`` where A = L L^T from the Cholesky factor ``input2`` (``upper``: A = U^T U),
    as ``torch.cholesky_solve``: two triangular solves (the factor's other triangle is not read)."""
    op = "cholesky_solve"
    if getattr(input, "ndim", 2) < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.ndim} dimensions instead")
    _check(op, input, "B", square=False)
    _check(op, input2, "A")
    _same_dtype(op, input2, input)
    if input.shape[-2] != input2.shape[-1]:
        raise RuntimeError(
            f"{op}: Incompatible matrix sizes for cholesky_solve: each A matrix is {input2.shape[-1]} by "
            f"{input2.shape[-1]} but each b matrix is {input.shape[-2]} by {input.shape[-1]}"
        )
    batch = tuple(np.broadcast_shapes(tuple(input.shape[:-2]), tuple(input2.shape[:-2])))
    B = F.expand(input, (*batch, *input.shape[-2:])) if tuple(input.shape[:-2]) != batch else input
    L = F.expand(input2, (*batch, *input2.shape[-2:])) if tuple(input2.shape[:-2]) != batch else input2
    return _CholeskySolve.apply(B, L, bool(upper))


def cholesky_inverse(input, upper: bool = False):
    """The inverse of A = L L^T (``upper``: U^T U) from its Cholesky factor, as ``torch.cholesky_inverse``."""
    _check("cholesky_inverse", input)
    return _CholeskyInverse.apply(input, bool(upper))


def triangular_solve(input, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False):
    """``torch.triangular_solve`` (deprecated in PyTorch): (solution of A X = b, or A^T X = b with
    ``transpose``; a clone of A), as ``torch.return_types.triangular_solve``."""
    M = _mT(A) if transpose else A
    X = solve_triangular(M, input, upper=bool(upper) != bool(transpose), unitriangular=unitriangular)
    return return_types.triangular_solve(X, F.clone(A))


# linalg.<name> -> this module's function
LINALG = {
    "LinAlgError": LinAlgError,
    "inv": inv,
    "inv_ex": inv_ex,
    "det": det,
    "slogdet": slogdet,
    "solve": solve,
    "solve_ex": solve_ex,
    "solve_triangular": solve_triangular,
    "cholesky": cholesky,
    "cholesky_ex": cholesky_ex,
    "qr": qr,
    "eigh": eigh,
    "eigvalsh": eigvalsh,
    "svd": svd,
    "svdvals": svdvals,
    "pinv": pinv,
    "lstsq": lstsq,
    "matrix_rank": matrix_rank,
    "lu_factor": lu_factor,
    "lu_factor_ex": lu_factor_ex,
    "lu": lu,
    "lu_solve": lu_solve,
}

# The torch.* legacy names and Tensor methods (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("inverse", method=True),
    Export("det", method=True, value=det),
    Export("logdet", method=True),
    Export("slogdet", method=True, value=legacy_slogdet),
    Export("cholesky", method=legacy_cholesky, value=legacy_cholesky),
    Export("qr", method=legacy_qr, value=legacy_qr),
    Export("svd", method=legacy_svd, value=legacy_svd),
    Export("pinverse", method=True),
    Export("cholesky_solve", method=True),
    Export("cholesky_inverse", method=True),
    Export("triangular_solve", method=True),
    Export("lu", method=legacy_lu, value=legacy_lu),
    Export("lu_solve", method=legacy_lu_solve, value=legacy_lu_solve),
    Export("lu_unpack"),
    Export("geqrf", method=True),
)
