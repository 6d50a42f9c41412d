"""The pages of ``torch.linalg`` and the legacy linear-algebra names (vkml/frontend/dense_linalg.py: the
factorizations and solves, computed on the host; linalg_ops.py: the compositions, on the device)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, sig, vkml

_D = vkml.frontend.dense_linalg
_O = vkml.frontend.linalg_ops

HOST = "host: numpy float64 on any device's tensors (the device runs no kernel)"
_HOST_PRECISION = "computed in float64 on the host (numpy.linalg / LAPACK), rounded once to the input dtype"
_HOST_DIVERGENCE = (
    "Computed on the host, whatever the device: each call realizes its input, downloads it, computes in float64 "
    "and uploads the result (a synchronisation point; the device runs nothing). PyTorch computes in the input "
    "dtype (float32 LAPACK on CPU, cuSOLVER/MAGMA on CUDA): float32 results are at least as accurate here, and "
    "their last bits may differ. The same bits on every vkml device. float16/bfloat16 inputs raise, as PyTorch's "
    "CPU kernels."
)
_SIGNS = (
    " Singular vectors and eigenvectors are unique only up to sign: LAPACK's float64 choice may differ from PyTorch's."
)
_NAN = "NaN or inf in the input gives NaN results (LAPACK's), not an error."


def _host(calls, target, gradient: str, special: str = _NAN, divergence: str = "", precision: str = _HOST_PRECISION):
    return OpDoc(
        "linalg",
        calls,
        target,
        precision=precision,
        special=special,
        divergence=_HOST_DIVERGENCE + (" " + divergence if divergence else ""),
        gradient=gradient,
        backends=HOST,
    )


def _composite(calls, target, precision: str, special: str = "", divergence: str = "", gradient: str = THROUGH):
    return OpDoc(
        "linalg", calls, target, precision=precision, special=special, divergence=divergence, gradient=gradient
    )


_NO_CONVERGENCE = (
    "NaN or inf in the input raises `vkml.linalg.LinAlgError` with PyTorch's text (the SVD does not converge)."
)
_SINGULAR = "A singular matrix raises `vkml.linalg.LinAlgError` (a RuntimeError) with PyTorch's text. " + _NAN
PAGES: dict[str, OpDoc] = {
    "linalg_inv": _host(
        (sig("vkml.linalg.inv", _D.inv), sig("vkml.inverse", _D.inverse), "Tensor.inverse()"),
        _D.inv,
        "-A^-T g A^-T (PyTorch's), made of `matmul` and this op: differentiable again.",
        special=_SINGULAR,
    ),
    "linalg_inv_ex": _host(
        (sig("vkml.linalg.inv_ex", _D.inv_ex),),
        _D.inv_ex,
        "As `linalg_inv` (info has none).",
        divergence="Where info > 0 the inverse is NaN here; PyTorch leaves LAPACK's partial result (inf/NaN).",
    ),
    "linalg_det": _host(
        (sig("vkml.linalg.det", _D.det), sig("vkml.det", _D.det), "Tensor.det()"),
        _D.det,
        "g · det(A) · A^-T where no determinant is 0 (differentiable again); for a batch with an exactly singular "
        "matrix the cofactor matrix U diag(prod_{j≠i} s_j) V^T det(U) det(V) from the SVD on the host (first order "
        "only).",
        divergence="The gradient at an exactly singular matrix is its cofactor matrix, as PyTorch's under "
        "create_graph; PyTorch 2.13 without create_graph gives 0 there.",
    ),
    "linalg_slogdet": _host(
        (sig("vkml.linalg.slogdet", _D.slogdet), sig("vkml.slogdet", _D.legacy_slogdet), "Tensor.slogdet()"),
        _D.slogdet,
        "logabsdet: g · A^-T (through `linalg_inv`); sign has none.",
        special="A singular matrix gives sign 0 and logabsdet -inf, as PyTorch. " + _NAN,
        divergence="The gradient at a singular matrix raises LinAlgError (PyTorch: inf/NaN entries).",
    ),
    "logdet": _host(
        (sig("vkml.logdet", _D.logdet), "Tensor.logdet()"),
        _D.logdet,
        "As `linalg_slogdet`'s logabsdet.",
        special="NaN for a negative determinant, -inf for a zero one, as PyTorch.",
    ),
    "linalg_solve": _host(
        (sig("vkml.linalg.solve", _D.solve), sig("vkml.linalg.solve_ex", _D.solve_ex)),
        _D.solve,
        "gB = A^-T g (this op again), gA = -gB X^T: PyTorch's, differentiable again.",
        special=_SINGULAR + " B is a vector when 1-D or when its shape is A's without the last dim (PyTorch's "
        "rule); batches broadcast. solve_ex's result is NaN where info > 0.",
    ),
    "linalg_solve_triangular": _host(
        (
            sig("vkml.linalg.solve_triangular", _D.solve_triangular),
            sig("vkml.triangular_solve", _D.triangular_solve),
            "Tensor.triangular_solve(A, upper=True, transpose=False, unitriangular=False)",
        ),
        _D.solve_triangular,
        "gB = A^-T g (this op on A^T), gA = -gB X^T kept to A's triangle (its strict triangle when unitriangular), "
        "as PyTorch's.",
        special="Substitution row by row in float64: a zero on the diagonal gives inf/NaN, not an error, as "
        "PyTorch's. " + _NAN,
        precision="row i of X is (b_i - Σ_j a_ij x_j) / a_ii in float64 on the host, rounded once",
    ),
    "linalg_cholesky": _host(
        (
            sig("vkml.linalg.cholesky", _D.cholesky),
            sig("vkml.linalg.cholesky_ex", _D.cholesky_ex),
            sig("vkml.cholesky", _D.legacy_cholesky),
            "Tensor.cholesky(upper=False)",
        ),
        _D.cholesky,
        "PyTorch's: L^-T Φ(L^T gL) L^-1 symmetrized, through `linalg_solve_triangular` (differentiable again).",
        special="A matrix that is not positive-definite raises LinAlgError naming the order of the failing leading "
        "minor, as PyTorch; cholesky_ex returns that order as info and LAPACK's partial factor. Only the lower "
        "triangle is read.",
        precision="column by column (LAPACK potf2's order) in float64 on the host, rounded once",
    ),
    "cholesky_solve": _host(
        (sig("vkml.cholesky_solve", _D.cholesky_solve), "Tensor.cholesky_solve(input2, upper=False)"),
        _D.cholesky_solve,
        "PyTorch's, which takes the factor as a full matrix: gB = cholesky_solve(g, L), gL = -(gB X^T + X gB^T) L.",
        precision="two triangular substitutions in float64 on the host, rounded once",
    ),
    "cholesky_inverse": _host(
        (sig("vkml.cholesky_inverse", _D.cholesky_inverse), "Tensor.cholesky_inverse(upper=False)"),
        _D.cholesky_inverse,
        "PyTorch's: -(X (g + g^T) X) L.",
    ),
    "linalg_qr": _host(
        (sig("vkml.linalg.qr", _D.qr), sig("vkml.qr", _D.legacy_qr), "Tensor.qr(some=True)"),
        _D.qr,
        "PyTorch's formula for m >= n; for m < n, A = Q [R1 R2] is split into the square QR of the first m "
        "columns and R2 = Q^T A2. mode='r' and mode='complete' with m > n are not differentiable (PyTorch's "
        "errors).",
        divergence="Householder QR in float64 (LAPACK geqrf/orgqr, PyTorch's CPU algorithm): R's diagonal signs "
        "follow LAPACK, as PyTorch's.",
    ),
    "linalg_eigh": _host(
        (sig("vkml.linalg.eigh", _D.eigh), sig("vkml.linalg.eigvalsh", _D.eigvalsh)),
        _D.eigh,
        "PyTorch's: V (diag(gL) + skew(V^T gV) / (λ_j - λ_i)) V^T; repeated eigenvalues make it inf/NaN, as PyTorch's.",
        divergence="LAPACK syevd in float64." + _SIGNS,
    ),
    "linalg_svd": _host(
        (
            sig("vkml.linalg.svd", _D.svd),
            sig("vkml.linalg.svdvals", _D.svdvals),
            sig("vkml.svd", _D.legacy_svd),
            "Tensor.svd(some=True, compute_uv=True)",
        ),
        _D.svd,
        "PyTorch's formula (U, S and Vh; full_matrices' extra columns carry none); repeated singular values make "
        "the vectors' gradient inf/NaN, as PyTorch's.",
        special=_NO_CONVERGENCE,
        divergence="LAPACK gesdd in float64 (PyTorch's CPU driver). `driver=` is CUDA-only in PyTorch and raises "
        "its error here." + _SIGNS,
    ),
    "linalg_pinv": _host(
        (sig("vkml.linalg.pinv", _D.pinv), sig("vkml.pinverse", _D.pinverse), "Tensor.pinverse(rcond=1e-15)"),
        _D.pinv,
        "PyTorch's pinv_backward (products of A, pinv(A) and g): differentiable again.",
        special="Singular values at or below max(atol, rtol · s_max) are dropped; rtol defaults to eps · max(m, n) "
        "(0 when atol > 0 is given), as PyTorch. " + _NO_CONVERGENCE,
    ),
    "linalg_lstsq": _host(
        (sig("vkml.linalg.lstsq", _D.lstsq),),
        _D.lstsq,
        "Of the solution, through pinv(A) as PyTorch's: gA from pinv's gradient of g B^T, gB = pinv(A)^T g.",
        special=_NO_CONVERGENCE,
        divergence="The solution is LAPACK gelsd's whatever the driver (PyTorch's default on CPU is gelsy: "
        "rank-deficient systems may get another minimiser). The other fields follow PyTorch's driver rules.",
    ),
    "linalg_matrix_rank": _host(
        (sig("vkml.linalg.matrix_rank", _D.matrix_rank),),
        _D.matrix_rank,
        "None (an int64 result).",
        special=_NO_CONVERGENCE,
        precision="the count of singular values above the tolerance, from float64 singular values",
    ),
    "linalg_lu_factor": _host(
        (
            sig("vkml.linalg.lu_factor", _D.lu_factor),
            sig("vkml.linalg.lu_factor_ex", _D.lu_factor_ex),
            sig("vkml.lu", _D.legacy_lu),
            "Tensor.lu(pivot=True, get_infos=False)",
        ),
        _D.lu_factor,
        "PyTorch's: P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T for a square matrix; a rectangular one is split "
        "into its square LU and the rest (L^-1 P^T A2, or A2 U^-1). Differentiable again.",
        special="A zero pivot raises PyTorch's RuntimeError in lu_factor (info in lu_factor_ex, get_infos in "
        "torch.lu); pivot=False raises PyTorch's CPU error. Pivots are LAPACK's: 1-based int32. " + _NAN,
        precision="LU with partial pivoting, LAPACK getf2's steps, in float64 on the host, rounded once",
        divergence="PyTorch's LAPACK uses the blocked recursive getrf: the same pivots except for near-ties.",
    ),
    "linalg_lu": _host(
        (sig("vkml.linalg.lu", _D.lu), sig("vkml.lu_unpack", _D.lu_unpack)),
        _D.lu,
        "Through `linalg_lu_factor`'s rule and the `tril`/`triu` of the unpacking.",
        precision="as `linalg_lu_factor`; P is exact",
    ),
    "linalg_lu_solve": _host(
        (
            sig("vkml.linalg.lu_solve", _D.lu_solve),
            sig("vkml.lu_solve", _D.legacy_lu_solve),
            "Tensor.lu_solve(LU_data, LU_pivots)",
        ),
        _D.lu_solve,
        "gB = lu_solve(LU, pivots, g, adjoint=not adjoint); LU's through A's gradient -gB X^T: "
        "gL = tril(P^T gA U^T, -1), gU = triu(L^T P^T gA), as PyTorch's.",
        precision="two triangular substitutions in float64 on the host, rounded once",
    ),
    "linalg_matrix_exp": _host(
        (
            sig("vkml.linalg.matrix_exp", _O.matrix_exp),
            sig("vkml.matrix_exp", _O.legacy_matrix_exp),
            "Tensor.matrix_exp()",
        ),
        _O.matrix_exp,
        "The upper right block of exp([[A^T, g], [0, A^T]]) (this op again, so differentiable again), as PyTorch's.",
        precision="Padé 13 with scaling and squaring (Higham 2005) in float64 on the host, rounded once; "
        "float16/bfloat16 inputs go through float32",
        divergence="PyTorch picks a Taylor degree by the norm: the last bits may differ.",
    ),
    "linalg_matrix_power": _composite(
        (
            sig("vkml.linalg.matrix_power", _O.matrix_power),
            sig("vkml.matrix_power", _O.legacy_matrix_power),
            "Tensor.matrix_power(n)",
        ),
        _O.matrix_power,
        "`matmul`s in PyTorch's order (the set bits of n from the lowest, z squared between them), on the device; "
        "n < 0 inverts first (`linalg_inv`, on the host)",
        special="n = 0 gives the identity (a copy); integer inputs work for n >= 0; n < 0 needs a float input, "
        "as PyTorch.",
        divergence="As `matmul`: PyTorch's kernels sum in another order.",
    ),
    "linalg_multi_dot": _composite(
        (sig("vkml.linalg.multi_dot", _O.multi_dot), sig("vkml.chain_matmul", _O.chain_matmul)),
        _O.multi_dot,
        "`matmul`s on the device, in the cheapest order (PyTorch's matrix-chain programme, the first cheapest split)",
        special="The first tensor may be 1-D (a row vector), the last 1-D (a column vector).",
        divergence="As `matmul`.",
    ),
    "linalg_vander": _composite(
        (sig("vkml.linalg.vander", _O.vander),),
        _O.vander,
        "x^j as running products (`cumprod`), each rounded, as PyTorch's",
        special="Bool inputs and N <= 1 raise, as PyTorch; integer inputs give int64.",
    ),
    "vander": _composite(
        (sig("vkml.vander", _O.torch_vander),),
        _O.torch_vander,
        "x^j as running products (`cumprod`), each rounded, then flipped unless increasing",
        special="x must be 1-D; N = 0 gives an (n, 0) tensor, N = 1 ones; bool and integer inputs give int64, "
        "as PyTorch.",
    ),
    "linalg_householder_product": _composite(
        (
            sig("vkml.linalg.householder_product", _O.householder_product),
            sig("vkml.orgqr", _O.orgqr),
            sig("vkml.ormqr", _O.ormqr),
        ),
        _O.householder_product,
        "one rank-1 update X - tau_i v_i (v_i^T X) per reflector, on the device (`matmul`s)",
        divergence="LAPACK's orgqr/ormqr apply the reflectors in blocks: the last bits may differ.",
    ),
    "geqrf": _host(
        (sig("vkml.geqrf", _D.geqrf), "Tensor.geqrf()"),
        _D.geqrf,
        "None, as PyTorch (geqrf is not differentiable there either).",
        precision="LAPACK geqrf in float64 on the host (numpy's raw QR), rounded once",
    ),
    "linalg_vecdot": _composite(
        (sig("vkml.linalg.vecdot", _O.vecdot),),
        _O.vecdot,
        "`mul` then the tree `sum` along dim",
        divergence="PyTorch sums in another order: the last bits may differ.",
    ),
    "linalg_cond": _composite(
        (sig("vkml.linalg.cond", _O.cond),),
        _O.cond,
        "p None/2/-2: the ratio of `linalg_svdvals`' extremes; other p: `linalg_matrix_norm(A, p) · "
        "linalg_matrix_norm(inv(A), p)` (the inverse on the host)",
        special="A singular matrix gives inf for the norm-based p, as PyTorch.",
    ),
    "linalg_tensorinv": _composite(
        (sig("vkml.linalg.tensorinv", _O.tensorinv),),
        _O.tensorinv,
        "as `linalg_inv` of the matrix view",
    ),
    "linalg_tensorsolve": _composite(
        (sig("vkml.linalg.tensorsolve", _O.tensorsolve),),
        _O.tensorsolve,
        "as `linalg_solve` of the matrix view",
    ),
    "linalg_diagonal": _composite(
        (sig("vkml.linalg.diagonal", _O.linalg_diagonal),),
        _O.linalg_diagonal,
        "exact (a view)",
    ),
}
