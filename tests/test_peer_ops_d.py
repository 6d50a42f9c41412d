"""The peer op-suite sweep, fourth part: what PyTorch's OpInfo sample inputs found (the op_db sweep,
tests/test_opdb_sweep.py, which imports torch.testing._internal and runs under ``-m exhaustive``).
Each row here is one of those samples written out by hand, so that the fix stays covered in the
default suite without that import. Rows run on torch and on vkml and are compared as
tests/peer_sweep.py says (values, dtype, shape, gradients, inputs after the call, the exception class).
"""

from __future__ import annotations

import pytest
import torch
from peer_sweep import check

_MASK_5x5 = [[(i + j) % 3 == 0 for j in range(5)] for i in range(5)]

CASES = [
    # cov/corrcoef squeeze their result as PyTorch: one variable in a single row is 0-d
    ("cov_single_row", lambda m, x: m.cov(x), ["f1x4"]),
    ("corrcoef_single_row", lambda m, x: m.corrcoef(x), ["f1x4"]),
    ("cov.method_single_row", lambda m, x: x.cov(), ["f1x4"]),
    # a float16 input with float32 aweights promotes to float32
    ("cov_float16_aweights_float32", lambda m, x, w: m.cov(x, correction=0, aweights=w), ["h2x4", "F+4"]),
    # frexp: 0-d stays 0-d; the mantissa is differentiable (grad / 2^exponent)
    ("frexp_0d", lambda m, x: m.frexp(x), ["F"]),
    ("frexp_grad", lambda m, x: m.frexp(x).mantissa, ["f2x3"]),
    ("frexp.method_specials", lambda m, x: x.frexp(), ["Fs12"]),
    # gradient: spacing=None is the default spelled out; repeated and out-of-range dims raise
    ("gradient_spacing_none", lambda m, x: m.gradient(x, spacing=None, dim=None, edge_order=1), ["f5"]),
    ("gradient_repeated_dim", lambda m, x: m.gradient(x, dim=(1, 1)), ["f3x4"]),
    ("gradient_dim_out_of_range", lambda m, x: m.gradient(x, dim=2), ["f3x4"]),
    # diff with n=0 is a copy of input; prepend and append are ignored
    ("diff_n0_prepend_append", lambda m, x, p, a: m.diff(x, 0, 1, p, a), ["f3x3", "f3x1", "f3x2"]),
    # integer addmm/addmv/addbmm/baddbmm truncate a float beta and alpha; addr raises
    ("addmm_int_float_beta", lambda m, a, b, c: m.addmm(a, b, c, beta=1.6, alpha=2.2), ["i2x3", "i2x4", "i4x3"]),
    ("addmv_int_float_alpha", lambda m, a, b, c: m.addmv(a, b, c, beta=0.6, alpha=-1.5), ["i2", "i2x3", "i3"]),
    ("addbmm_int_float_beta", lambda m, a, b, c: m.addbmm(a, b, c, beta=2.5, alpha=0.2), ["i2x3", "i4x2x5", "i4x5x3"]),
    (
        "baddbmm_int_float_beta",
        lambda m, a, b, c: m.baddbmm(a, b, c, beta=0.6, alpha=1.2),
        ["i4x2x3", "i4x2x5", "i4x5x3"],
    ),
    ("addbmm_.method_int_float", lambda m, a, b, c: a.addbmm_(b, c, beta=2.5, alpha=3.7), ["i2x3", "i4x2x5", "i4x5x3"]),
    ("addr_bool_int_beta_alpha", lambda m, a, b, c: m.addr(a, b, c, beta=3, alpha=2), ["b2x3", "b2", "b3"]),
    ("addr_bool_beta_0", lambda m, a, b, c: m.addr(a, b, c, beta=0, alpha=1), ["b3", "b2", "b3"]),
    ("addr_int_float_beta", lambda m, a, b, c: m.addr(a, b, c, beta=0.6), ["i2x3", "i2", "i3"]),
    # quantile/nanquantile take float64 (positions in float64); a 0-d input keeps 0 dims with keepdim
    ("quantile_float64", lambda m, x: m.quantile(x, 0.3, dim=1), ["d3x5"]),
    ("quantile_float64_tensor_q", lambda m, x, q: m.quantile(x, q.detach(), dim=0, keepdim=True), ["d4x3", "dp2"]),
    ("nanquantile_float64", lambda m, x: m.nanquantile(x, 0.7, interpolation="nearest"), ["ds12"]),
    ("quantile_0d_keepdim", lambda m, x: m.quantile(x, 0.5, dim=0, keepdim=True), ["f"]),
    ("quantile.method_0d_keepdim", lambda m, x: x.quantile(0.25, dim=-1, keepdim=True, interpolation="lower"), ["d"]),
    # quantile's gradient reaches a q tensor ('linear'; the other interpolations give q none)
    ("quantile_q_grad", lambda m, x, q: m.quantile(x, q, dim=1), ["f3x5", "fp2"]),
    ("nanquantile_q_grad_0d_q", lambda m, x, q: m.nanquantile(x, q, dim=0, keepdim=True), ["fs4x3", "fp"]),
    ("quantile_q_grad_nearest", lambda m, x, q: m.quantile(x, q, interpolation="nearest"), ["f3x5", "fp2"]),
    # normalize with p=0 divides by the count of nonzeros
    ("normalize_p0", lambda m, x: m.nn.functional.normalize(x, p=0.0, dim=1), ["f3x4"]),
    # masked_fill broadcasts input with the mask (the in-place form cannot grow: RuntimeError)
    ("masked_fill_input_broadcasts", lambda m, x, mask: m.masked_fill(x, mask, 2.0), ["f5", _MASK_5x5]),
    ("masked_fill.method_input_broadcasts", lambda m, x, mask, v: x.masked_fill(mask, v), ["f5", _MASK_5x5, "F"]),
    ("masked_fill__cannot_grow", lambda m, x, mask: x.masked_fill_(mask, 2.0), ["F5", _MASK_5x5]),
    # results made on the host from 0-d operands stay 0-d
    ("gcd_0d", lambda m, a, b: m.gcd(a, b), ["i", "i"]),
    ("lcm_0d", lambda m, a, b: m.lcm(a, b), ["i", "i"]),
    ("lcm_._0d", lambda m, a, b: a.lcm_(b), ["i", "i"]),
    ("nextafter_0d", lambda m, a, b: m.nextafter(a, b), ["F", "F"]),
    ("complex_scalar_0d", lambda m: tuple(m.tensor(1 + 2j).shape), []),
    ("from_dlpack_0d", lambda m, x: tuple(torch.from_dlpack(x).shape), ["F"]),
    # cdist with p=0 counts; the result requires grad, with zero gradients
    ("cdist_p0_grad", lambda m, a, b: m.cdist(a, b, 0.0), ["f2x3", "f4x3"]),
    # float16 logspace: powers in float32, rounded once
    ("logspace_float16", lambda m: m.logspace(0, 4, 7, 10, dtype=m.float16), []),
    ("logspace_float16_base3", lambda m: m.logspace(3, -8, 33, 3, dtype=m.float16), []),
    # clamp_min/clamp_max of a bool tensor by a bool tensor (a Python bool or both bounds raise)
    ("clamp_min_bool_tensor", lambda m, x, lo: m.clamp_min(x, lo), ["b2x3", "b3"]),
    ("clamp_max.method_bool_tensor", lambda m, x, hi: x.clamp_max(hi), ["b2x3", "b"]),
    ("clamp_bool_both_bounds", lambda m, x, lo, hi: m.clamp(x, lo, hi), ["b2x3", "b", "b"]),
    ("clamp_min_bool_python_bound", lambda m, x: m.clamp_min(x, True), ["b2x3"]),
    # padding an empty tensor (made from values, so it has a buffer) gives the pad value everywhere
    ("constant_pad_nd_empty_input", lambda m, x: m.constant_pad_nd(x, (1, 1, 1, 1, 1, 1), 1.0), ["f0x3x3"]),
    ("constant_pad_nd_empty_bool", lambda m, x: m.constant_pad_nd(x, (1, 0, 2, 2), True), ["b0x2"]),
    ("constant_pad_nd_empty_int", lambda m, x: m.constant_pad_nd(x, (2, 1), 7), ["i3x0"]),
    ("pad_constant_empty_input_zero", lambda m, x: m.nn.functional.pad(x, (1, 1, 2, 0)), ["f0x3"]),
    # float16 average pooling with divisor_override keeps float16
    (
        "avg_pool2d_float16_divisor_override",
        lambda m, x: m.nn.functional.avg_pool2d(x, 3, 1, 1, True, False, 2),
        ["h1x3x9x9"],
    ),
    # linalg.vander of a 0-d x with N: one row
    ("linalg.vander_0d_N", lambda m, x: m.linalg.vander(x, N=3), ["f"]),
    ("linalg.vander_0d_no_N", lambda m, x: m.linalg.vander(x), ["f"]),
    # lu_solve of an empty batch of 0x0 systems
    ("lu_solve_empty", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), ["F2x0x0", "F2x0x3"]),
    ("lu_unpack_empty", lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)), ["F2x0x0"]),
]


@pytest.mark.parametrize(("fn", "specs"), [pytest.param(fn, s, id=n) for n, fn, s in CASES])
def test_matches_torch(request, fn, specs):
    check(request.node.callspec.id, fn, specs)


def test_case_names_unique():
    assert len({n for n, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("name", ["quantile_float64", "frexp_grad", "masked_fill_input_broadcasts", "cov_single_row"])
def test_vulkan_matches_torch(name, gpu):
    _, fn, specs = next(c for c in CASES if c[0] == name)
    check(name, fn, specs, device=gpu)
