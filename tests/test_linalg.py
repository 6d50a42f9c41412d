"""torch.linalg and the legacy torch.* linear-algebra names (vkml/frontend/dense_linalg.py, linalg_ops.py)
against PyTorch: values in float64 and float32, gradients in float64, PyTorch's errors and texts, and the
same bits on lavapipe as on the CPU.

Each case is written once for both libraries (``m`` is ``vkml`` or ``torch``). Outputs whose sign is not
unique (eigenvectors, singular vectors, Q) are compared through sign-free functions of them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

_RNG = np.random.default_rng(7)
A3 = _RNG.standard_normal((2, 3, 3))
SPD = A3 @ A3.transpose(0, 2, 1) + 3 * np.eye(3)
TALL = _RNG.standard_normal((2, 4, 3))
WIDE = TALL.transpose(0, 2, 1).copy()
RHS = _RNG.standard_normal((2, 3, 2))
VEC = _RNG.standard_normal(3)
TRI = np.triu(A3) + 4 * np.eye(3)
CHOL = np.linalg.cholesky(SPD)


def _abs(x):
    return x.abs()


def _reconstruct_svd(m, a):
    u, s, vh = m.linalg.svd(a, full_matrices=False)
    return u @ (s.unsqueeze(-1) * vh), s


# (id, inputs, function of (module, *tensors), differentiable)
CASES = [
    ("inv", (A3,), lambda m, a: m.linalg.inv(a), True),
    ("inv_ex", (A3,), lambda m, a: m.linalg.inv_ex(a).inverse, True),
    ("inverse_method", (A3,), lambda m, a: a.inverse(), True),
    ("det", (A3,), lambda m, a: m.linalg.det(a), True),
    ("det_singular", (np.array([[1.0, 2.0], [2.0, 4.0]]),), lambda m, a: m.det(a), False),
    ("slogdet", (A3,), lambda m, a: m.linalg.slogdet(a), True),
    ("torch_slogdet", (A3,), lambda m, a: m.slogdet(a).logabsdet, True),
    ("logdet", (SPD,), lambda m, a: m.logdet(a), True),
    ("solve", (A3, RHS), lambda m, a, b: m.linalg.solve(a, b), True),
    ("solve_vector", (A3, VEC), lambda m, a, b: m.linalg.solve(a, b), True),
    ("solve_right", (A3, RHS.transpose(0, 2, 1).copy()), lambda m, a, b: m.linalg.solve(a, b, left=False), True),
    ("solve_ex", (A3, RHS), lambda m, a, b: m.linalg.solve_ex(a, b).result, True),
    ("solve_triangular", (TRI, RHS), lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), True),
    (
        "solve_triangular_right_unit",
        (A3, RHS.transpose(0, 2, 1).copy()),
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
        True,
    ),
    ("cholesky", (SPD,), lambda m, a: m.linalg.cholesky(a), True),
    ("cholesky_upper", (SPD,), lambda m, a: m.linalg.cholesky(a, upper=True), True),
    ("cholesky_ex", (SPD,), lambda m, a: m.linalg.cholesky_ex(a).L, True),
    ("torch_cholesky", (SPD,), lambda m, a: m.cholesky(a, True), True),
    ("qr_tall", (TALL,), lambda m, a: m.linalg.qr(a), True),
    ("qr_wide", (WIDE,), lambda m, a: m.linalg.qr(a), True),
    ("qr_complete", (A3,), lambda m, a: m.linalg.qr(a, mode="complete"), True),
    ("qr_r", (TALL,), lambda m, a: m.linalg.qr(a, mode="r").R, False),
    ("torch_qr", (TALL,), lambda m, a: m.qr(a, some=False).R, False),
    ("eigh", (SPD,), lambda m, a: (m.linalg.eigh(a).eigenvalues, _abs(m.linalg.eigh(a).eigenvectors)), True),
    ("eigh_upper", (A3,), lambda m, a: m.linalg.eigh(a, UPLO="U").eigenvalues, True),
    ("eigvalsh", (SPD,), lambda m, a: m.linalg.eigvalsh(a), True),
    ("svd_tall", (TALL,), lambda m, a: _reconstruct_svd(m, a), True),
    ("svd_wide", (WIDE,), lambda m, a: _reconstruct_svd(m, a), True),
    ("svd_vectors", (TALL,), lambda m, a: tuple(_abs(t) for t in m.linalg.svd(a, full_matrices=False)), True),
    ("svd_full", (TALL,), lambda m, a: _abs(m.linalg.svd(a).U), False),
    ("torch_svd", (TALL,), lambda m, a: (m.svd(a).S, _abs(m.svd(a).V)), True),
    ("torch_svd_no_uv", (TALL,), lambda m, a: m.svd(a, compute_uv=False), False),
    ("svdvals", (WIDE,), lambda m, a: m.linalg.svdvals(a), True),
    ("pinv", (TALL,), lambda m, a: m.linalg.pinv(a), True),
    ("pinv_wide", (WIDE,), lambda m, a: m.linalg.pinv(a), True),
    ("pinv_hermitian", (SPD,), lambda m, a: m.linalg.pinv(a, hermitian=True), True),
    ("pinverse", (TALL,), lambda m, a: m.pinverse(a), True),
    ("lstsq", (TALL, _RNG.standard_normal((2, 4, 2))), lambda m, a, b: m.linalg.lstsq(a, b).solution, True),
    (
        "lstsq_gelsd",
        (TALL, _RNG.standard_normal((2, 4, 2))),
        lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd"),
        False,
    ),
    ("matrix_rank", (TALL,), lambda m, a: m.linalg.matrix_rank(a), False),
    ("matrix_rank_hermitian", (SPD,), lambda m, a: m.linalg.matrix_rank(a, hermitian=True, atol=4.0), False),
    ("matrix_norm_nuc", (TALL,), lambda m, a: m.linalg.matrix_norm(a, "nuc"), True),
    ("matrix_norm_2", (TALL,), lambda m, a: m.linalg.matrix_norm(a, 2), True),
    ("norm_minus2", (A3,), lambda m, a: m.linalg.norm(a, -2, dim=(0, 2)), True),
    ("torch_norm_nuc", (TALL,), lambda m, a: m.norm(a, "nuc", (1, 2), keepdim=True), True),
    ("cond", (A3,), lambda m, a: m.linalg.cond(a), True),
    ("cond_fro", (A3,), lambda m, a: m.linalg.cond(a, "fro"), False),
    ("matrix_power", (A3,), lambda m, a: m.linalg.matrix_power(a, 5), True),
    ("matrix_power_negative", (A3,), lambda m, a: a.matrix_power(-2), True),
    ("matrix_power_zero", (A3,), lambda m, a: m.matrix_power(a, 0), False),
    ("matrix_exp", (A3,), lambda m, a: m.linalg.matrix_exp(a), True),
    ("matrix_exp_large", (A3 * 9,), lambda m, a: a.matrix_exp(), False),
    ("multi_dot", (VEC, TALL[0].T.copy(), TALL[1]), lambda m, *t: m.linalg.multi_dot(t), True),
    ("chain_matmul", (A3[0], TALL[0].T.copy(), TALL[1]), lambda m, *t: m.chain_matmul(*t), True),
    ("vander", (VEC,), lambda m, x: m.linalg.vander(x, N=4), True),
    ("torch_vander", (VEC,), lambda m, x: m.vander(x), False),  # torch.vander's own backward fails
    ("torch_vander_increasing", (VEC,), lambda m, x: m.vander(x, 4, True), False),
    ("torch_vander_one", (VEC,), lambda m, x: m.vander(x, N=1), False),
    ("torch_vander_zero", (VEC,), lambda m, x: m.vander(x, N=0), False),
    ("vecdot", (TALL, VEC), lambda m, x, y: m.linalg.vecdot(x, y), True),
    ("linalg_diagonal", (TALL,), lambda m, a: m.linalg.diagonal(a, offset=1), True),
    ("tensorinv", (_RNG.standard_normal((4, 2, 2)),), lambda m, a: m.linalg.tensorinv(a, ind=1), True),
    (
        "tensorsolve",
        (_RNG.standard_normal((2, 3, 6)), RHS[..., 0].copy()),
        lambda m, a, b: m.linalg.tensorsolve(a, b),
        True,
    ),
    ("lu_factor", (A3,), lambda m, a: m.linalg.lu_factor(a), True),
    ("lu_factor_ex", (A3,), lambda m, a: m.linalg.lu_factor_ex(a), True),
    ("lu_tall", (TALL,), lambda m, a: m.linalg.lu(a), True),
    ("lu_wide", (WIDE,), lambda m, a: m.linalg.lu(a), True),
    ("lu_solve", (A3, RHS), lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), True),
    (
        "lu_solve_adjoint_right",
        (A3, RHS.transpose(0, 2, 1).copy()),
        lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False, adjoint=True),
        True,
    ),
    ("torch_lu_solve", (A3, RHS), lambda m, a, b: m.lu_solve(b, *m.lu(a)), True),
    ("lu_unpack", (TALL,), lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)), True),
    ("geqrf", (TALL,), lambda m, a: m.geqrf(a), False),
    ("householder_product", (TALL,), lambda m, a: m.linalg.householder_product(*m.geqrf(a.detach())), False),
    (
        "householder_product_grad",
        (TALL, TALL[:, :, :2].copy()),
        lambda m, a, t: m.linalg.householder_product(a, t[:, 0]),
        True,
    ),
    ("orgqr", (TALL,), lambda m, a: m.orgqr(*m.geqrf(a)), False),
    ("ormqr", (TALL, TALL[:, :, :2].copy()), lambda m, a, c: m.ormqr(*m.geqrf(a), c, True, True), False),
    (
        "ormqr_right",
        (TALL, RHS.transpose(0, 2, 1).copy()),
        lambda m, a, c: m.ormqr(*m.geqrf(a[:, :3].detach()), c, left=False),
        False,
    ),
    ("cholesky_solve", (RHS, CHOL), lambda m, b, c: m.cholesky_solve(b, c), True),
    ("cholesky_solve_upper", (RHS, CHOL.transpose(0, 2, 1).copy()), lambda m, b, c: b.cholesky_solve(c, True), True),
    ("cholesky_inverse", (CHOL,), lambda m, c: m.cholesky_inverse(c), True),
    ("triangular_solve", (RHS, TRI), lambda m, b, a: m.triangular_solve(b, a).solution, True),
    ("triangular_solve_transpose", (RHS, TRI), lambda m, b, a: b.triangular_solve(a, transpose=True)[0], True),
]


FLOAT32 = {"inv", "det", "slogdet", "solve", "cholesky", "qr_tall", "eigvalsh", "svd_tall", "pinv", "lstsq"}
FLOAT32 |= {"matrix_exp", "matrix_rank", "lstsq_gelsd"}


def _outputs(result) -> list:
    if isinstance(result, (tuple, list)):
        return [r for r in result if r is not None]
    return [result]


def _numpy(t) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy()


@pytest.mark.filterwarnings("ignore:torch.*is deprecated")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(case):
    name, inputs, fn, differentiable = case
    # float64 values and gradients for every case; float32 values (the dtype kept) for the host ops alone,
    # whose float32 path is the same code (the compositions' float32 kernels are other tests' business)
    dtypes = ((np.float64, 1e-9), (np.float32, 2e-4)) if name in FLOAT32 else ((np.float64, 1e-9),)
    for np_dtype, rtol in dtypes:
        mine = [
            vkml.tensor(a.astype(np_dtype), requires_grad=differentiable and np_dtype == np.float64) for a in inputs
        ]
        theirs = [
            torch.tensor(a.astype(np_dtype), requires_grad=differentiable and np_dtype == np.float64) for a in inputs
        ]
        got, want = _outputs(fn(vkml, *mine)), _outputs(fn(torch, *theirs))
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape), (name, g.shape, w.shape)
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], (name, g.dtype, w.dtype)
            np.testing.assert_allclose(_numpy(g), _numpy(w), rtol=rtol, atol=rtol, err_msg=name)
        if differentiable and np_dtype == np.float64:
            weights = [np.random.default_rng(1).standard_normal(tuple(w.shape)) for w in want]
            floats = [(g, w, k) for g, w, k in zip(got, want, weights) if w.requires_grad]
            sum(vkml.sum(g * vkml.tensor(k)) for g, _, k in floats).backward()
            sum(torch.sum(w * torch.tensor(k)) for _, w, k in floats).backward()
            for x, y in zip(mine, theirs):
                np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])
BATCH_NOT_PD = np.stack([np.eye(2), NOT_PD])

# (id, function of the module) raising the same error type with the same text in both libraries
ERRORS = [
    ("inv_singular", lambda m: m.linalg.inv(m.tensor(SINGULAR))),
    ("inv_batch_singular", lambda m: m.linalg.inv(m.zeros(2, 2, 2))),
    ("inv_long", lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.int64))),
    ("inv_half", lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.float16))),
    ("inv_not_square", lambda m: m.linalg.inv(m.ones(2, 3))),
    ("inv_vector", lambda m: m.linalg.inv(m.ones(3))),
    ("det_not_square", lambda m: m.linalg.det(m.ones(2, 3))),
    ("cholesky_not_pd", lambda m: m.linalg.cholesky(m.tensor(NOT_PD))),
    ("cholesky_batch_not_pd", lambda m: m.linalg.cholesky(m.tensor(BATCH_NOT_PD))),
    ("solve_singular", lambda m: m.linalg.solve(m.tensor(SINGULAR), m.ones(2, dtype=m.float64))),
    ("solve_batch_singular", lambda m: m.linalg.solve(m.tensor(np.stack([np.eye(2), SINGULAR])), m.ones(2, 2))),
    ("solve_shapes", lambda m: m.linalg.solve(m.eye(2), m.ones(3))),
    ("solve_dtypes", lambda m: m.linalg.solve(m.ones(2, 2), m.ones(2, 2, dtype=m.float64))),
    ("qr_mode", lambda m: m.linalg.qr(m.ones(2, 3), mode="x")),
    ("eigh_uplo", lambda m: m.linalg.eigh(m.eye(2), UPLO="X")),
    ("svd_driver", lambda m: m.linalg.svd(m.eye(2), driver="gesvd")),
    ("lstsq_driver", lambda m: m.linalg.lstsq(m.eye(2), m.eye(2), driver="x")),
    ("lstsq_rows", lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(4, 1))),
    ("multi_dot_one", lambda m: m.linalg.multi_dot([m.ones(2)])),
    ("multi_dot_3d", lambda m: m.linalg.multi_dot([m.ones(2, 3, 3), m.ones(3, 5)])),
    ("multi_dot_shapes", lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(4, 5)])),
    ("matrix_power_not_square", lambda m: m.linalg.matrix_power(m.ones(2, 3), 2)),
    ("matrix_power_int_negative", lambda m: m.linalg.matrix_power(m.eye(2, dtype=m.int64), -1)),
    ("matrix_exp_long", lambda m: m.linalg.matrix_exp(m.ones(2, 2, dtype=m.int64))),
    ("vander_bool", lambda m: m.linalg.vander(m.tensor([True, False]))),
    ("vander_n1", lambda m: m.linalg.vander(m.ones(2), N=1)),
    ("torch_vander_2d", lambda m: m.vander(m.ones(2, 2))),
    ("torch_vander_negative", lambda m: m.vander(m.ones(2), -1)),
    ("cholesky_inverse_vector", lambda m: m.cholesky_inverse(m.ones(3))),
    ("householder_tau_long", lambda m: m.linalg.householder_product(m.ones(3, 2), m.ones(3))),
    ("householder_wide", lambda m: m.linalg.householder_product(m.ones(2, 3), m.ones(2))),
    ("lu_factor_singular", lambda m: m.linalg.lu_factor(m.tensor(np.stack([np.eye(2), SINGULAR])))),
    ("lu_factor_no_pivot", lambda m: m.linalg.lu_factor(m.eye(2), pivot=False)),
    ("lu_solve_vector", lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.eye(2)), m.ones(2))),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(case):
    _, fn = case
    with pytest.raises(RuntimeError) as theirs:
        fn(torch)
    with pytest.raises(RuntimeError) as mine:
        fn(vkml)
    assert isinstance(mine.value, vkml.linalg.LinAlgError) == isinstance(theirs.value, torch.linalg.LinAlgError)
    assert str(mine.value) == str(theirs.value)


def test_non_finite_inputs_as_torch():
    nan = np.array([[np.nan, 1.0], [1.0, 1.0]], dtype=np.float32)
    for fn in (
        lambda m, a: m.linalg.inv(a),
        lambda m, a: m.linalg.det(a),
        lambda m, a: m.linalg.slogdet(a).sign,
        lambda m, a: m.linalg.slogdet(a).logabsdet,
        lambda m, a: m.linalg.solve(a, m.ones(2)),
        lambda m, a: m.linalg.inv_ex(a).info,
    ):
        np.testing.assert_array_equal(fn(vkml, vkml.tensor(nan)).numpy(), fn(torch, torch.tensor(nan)).numpy())
    for fn in (lambda m, a: m.linalg.svdvals(a), lambda m, a: m.linalg.pinv(a), lambda m, a: m.linalg.matrix_rank(a)):
        with pytest.raises(torch.linalg.LinAlgError) as theirs:
            fn(torch, torch.tensor(nan))
        with pytest.raises(vkml.linalg.LinAlgError) as mine:
            fn(vkml, vkml.tensor(nan))
        assert str(mine.value) == str(theirs.value)


def test_empty_matrices_and_batches_as_torch():
    for shape in ((0, 3, 3), (2, 0, 0)):
        for fn in (lambda m, a: m.linalg.inv(a), lambda m, a: m.linalg.det(a), lambda m, a: m.linalg.cholesky(a)):
            got, want = fn(vkml, vkml.zeros(shape)), fn(torch, torch.zeros(shape))
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_ex_variants_report_info_as_torch():
    for m in (vkml, torch):
        inverse, info = m.linalg.inv_ex(m.tensor(np.stack([np.eye(2), SINGULAR])))
        assert info.tolist() == [0, 2] and str(info.dtype).endswith("int32")
        L, info = m.linalg.cholesky_ex(m.tensor(BATCH_NOT_PD))
        assert info.tolist() == [0, 2]
        LU, pivots, info = m.linalg.lu_factor_ex(m.tensor(np.stack([np.eye(2), SINGULAR])))
        assert info.tolist() == [0, 2] and pivots.tolist() == [[1, 2], [2, 2]]
    L, _ = vkml.linalg.cholesky_ex(vkml.tensor(NOT_PD))
    assert L.tolist() == torch.linalg.cholesky_ex(torch.tensor(NOT_PD)).L.tolist()  # LAPACK's partial factor
    with pytest.raises(vkml.linalg.LinAlgError, match="order 2"):
        vkml.linalg.cholesky_ex(vkml.tensor(NOT_PD), check_errors=True)
    assert issubclass(vkml.linalg.LinAlgError, RuntimeError)


def test_lstsq_fields_follow_the_driver_as_torch():
    a, b = TALL.astype(np.float32), _RNG.standard_normal((2, 4, 1)).astype(np.float32)
    for driver in (None, "gels", "gelsy", "gelsd", "gelss"):
        got = vkml.linalg.lstsq(vkml.tensor(a), vkml.tensor(b), driver=driver)
        want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        assert type(got).__name__ == type(want).__name__ == "linalg_lstsq"
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape), driver
            np.testing.assert_allclose(g.numpy().astype(np.float64), w.numpy().astype(np.float64), rtol=1e-4)


def test_det_gradient_of_a_singular_matrix_is_the_cofactor_matrix():
    # PyTorch's SVD formula, which it uses under create_graph (without it, PyTorch 2.13 gives 0 here)
    for a in (SINGULAR, np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])):
        x, y = vkml.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        (gx,) = vkml.autograd.grad(vkml.linalg.det(x), x)
        (gy,) = torch.autograd.grad(torch.linalg.det(y), y, create_graph=True)
        np.testing.assert_allclose(gx.numpy(), gy.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_second_derivative_of_inv_matches_torch():
    a = A3[0]
    x, y = vkml.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (gx,) = vkml.autograd.grad(vkml.linalg.inv(x).sum(), x, create_graph=True)
    (gy,) = torch.autograd.grad(torch.linalg.inv(y).sum(), y, create_graph=True)
    (hx,) = vkml.autograd.grad((gx * gx).sum(), x)
    (hy,) = torch.autograd.grad((gy * gy).sum(), y)
    np.testing.assert_allclose(hx.numpy(), hy.numpy(), rtol=1e-9)


# host factorizations and device compositions: lavapipe gives the CPU's bits, values and gradients
SAME_BITS = [
    ("inv", lambda m, a: m.linalg.inv(a)),
    ("cholesky", lambda m, a: m.linalg.cholesky(a @ a.mT + 3 * m.eye(3, device=a.device))),
    ("svd", lambda m, a: m.linalg.svd(a).S),
    ("matrix_power", lambda m, a: m.linalg.matrix_power(a, 3)),
]


def test_lavapipe_gives_the_cpus_bits(gpu):
    a = A3.astype(np.float32)
    for name, fn in SAME_BITS:
        results = []
        for device in ("cpu", gpu):
            x = vkml.tensor(a, device=device, requires_grad=True)
            out = fn(vkml, x)
            out.sum().backward()
            results.append((out.numpy(), x.grad.numpy()))
        (v0, g0), (v1, g1) = results
        assert v0.tobytes() == v1.tobytes(), name
        assert g0.tobytes() == g1.tobytes(), name


# second derivatives (create_graph) by finite differences: each backward is made of vkml ops and these ops
# (lu_solve in the default run: its second derivative once missed LU's part; the others with make test-all)
GRADGRAD = [
    pytest.param(("solve", lambda a, b: vkml.linalg.solve(a, b)), marks=pytest.mark.stress, id="solve"),
    pytest.param(("lu_solve", lambda a, b: vkml.linalg.lu_solve(*vkml.linalg.lu_factor(a), b)), id="lu_solve"),
    pytest.param(
        ("cholesky_of_spd", lambda a, b: vkml.linalg.cholesky(a @ a.mT + 3 * vkml.eye(3, dtype=a.dtype)) @ b),
        marks=pytest.mark.stress,
        id="cholesky_of_spd",
    ),
    pytest.param(("qr", lambda a, b: vkml.linalg.qr(a).R @ b), marks=pytest.mark.stress, id="qr"),
]


@pytest.mark.parametrize("case", GRADGRAD)
def test_second_derivatives_by_finite_differences(case):
    _, fn = case
    inputs = [vkml.tensor(A3[0], requires_grad=True), vkml.tensor(RHS[0], requires_grad=True)]
    assert vkml.autograd.gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4)
