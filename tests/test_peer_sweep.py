"""The peer op-suite sweep (tests/peer_sweep.py says what is compared): pointwise ops over dtypes,
shapes and Python scalars; reductions; indexing; shape ops; sorting; nn.functional. The default run
takes the FIXED cases and every SAMPLE-th one; ``-m stress`` runs them all (KNOWN: expected to fail).
"""

from __future__ import annotations

import pytest
import torch
from peer_sweep import check

import vkml

SHAPES_1 = ["f2x3", "f", "f0x3", "T3x2", "d2x3", "h2x3", "fs12", "i2x3", "b2x3", "u2x3"]

UNARY = {
    # name: input kinds it is fed (default SHAPES_1)
    "abs": None,
    "neg": None,
    "sign": None,
    "sgn": None,
    "exp": None,
    "exp2": None,
    "expm1": None,
    "log": ["f+2x3", "fs12", "i2x3", "b2x3", "d+2x3"],
    "log2": ["f+2x3", "fs12", "i2x3"],
    "log10": ["f+2x3", "fs12", "i2x3"],
    "log1p": ["f+2x3", "fs12", "i2x3"],
    "sqrt": ["f+2x3", "fs12", "i2x3", "b2x3", "f0x3", "h+2x3"],
    "rsqrt": ["f+2x3", "fs12", "i2x3"],
    "sin": None,
    "cos": None,
    "tan": None,
    "asin": ["fu2x3", "fs12", "i2x3"],
    "acos": ["fu2x3", "fs12", "i2x3"],
    "atan": None,
    "sinh": None,
    "cosh": None,
    "tanh": None,
    "asinh": None,
    "acosh": ["fg2x3", "fs12", "i2x3"],
    "atanh": ["fu2x3", "fs12", "i2x3"],
    "sigmoid": None,
    "relu": None,
    "floor": None,
    "ceil": None,
    "round": None,
    "trunc": None,
    "fix": None,
    "frac": ["f2x3", "fs12", "i2x3"],
    "reciprocal": None,
    "square": None,
    "erf": None,
    "erfc": None,
    "erfinv": ["fu2x3", "fs12", "i2x3"],
    "lgamma": ["f+2x3", "fs12", "i2x3"],
    "digamma": ["f+2x3", "i+2x3"],
    "deg2rad": None,
    "rad2deg": None,
    "isnan": None,
    "isinf": None,
    "isfinite": None,
    "isposinf": ["fs12", "i2x3"],
    "isneginf": ["fs12", "i2x3"],
    "isreal": ["f2x3", "i2x3"],
    "signbit": None,
    "logical_not": None,
    "nan_to_num": ["fs12", "i2x3", "d2x3"],
    "positive": ["f2x3", "i2x3", "b2x3"],
    "bitwise_not": ["i2x3", "b2x3", "u2x3", "f2x3"],
    "sinc": ["f2x3", "fs12", "i2x3"],
    "i0": ["f2x3", "i2x3"],
    "logit": ["fp2x3", "i2x3"],
    "angle": ["f2x3", "fs12", "i2x3"],
    "exp_": None,
    "sigmoid_": None,
    "abs_": None,
    "floor_": None,
    "neg_": None,
    "sqrt_": ["f+2x3", "i2x3"],
    "relu_": None,
    "zero_": None,
    "clone": None,
    "conj": ["f2x3"],
}


def _unary_cases():
    cases = []
    for name, kinds in UNARY.items():
        for k in kinds or SHAPES_1:
            if name.endswith("_"):
                # an in-place method on a copy (a leaf that requires grad refuses in place)
                cases.append((f"{name}[{k}]", lambda m, x, n=name: getattr(x.clone(), n)(), [k]))
                continue
            cases.append((f"{name}[{k}]", lambda m, x, n=name: getattr(m, n)(x), [k]))
            if k == "f2x3" and name not in ("fix", "sgn", "clone", "isreal", "conj", "isposinf", "isneginf"):
                cases.append((f"{name}.method[{k}]", lambda m, x, n=name: getattr(x, n)(), [k]))
            if k in ("f2x3", "i2x3") and name not in ("conj", "isreal", "angle"):
                cases.append(
                    (
                        f"{name}.out[{k}]",
                        lambda m, x, n=name: getattr(m, n)(x.detach(), out=m.empty(0, dtype=x.dtype)),
                        [k],
                    )
                )
    return cases


BINARY = [
    "add",
    "sub",
    "mul",
    "div",
    "true_divide",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "atan2",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "hypot",
    "copysign",
    "nextafter",
    "xlogy",
    "logaddexp",
    "logaddexp2",
    "heaviside",
    "float_power",
    "gcd",
    "lcm",
    "ldexp",
]

# operand pairs: tensors of one dtype, broadcasting, 0-d tensors, Python scalars, mixed dtypes
PAIRS = [
    ("f2x3", "f2x3"),
    ("f2x3", "f3"),
    ("f2x1", "f1x3"),
    ("f2x3", "f"),
    ("f2x3", 2.5),
    ("f2x3", 2),
    ("f2x3", True),
    ("i2x3", "i+2x3"),
    ("i2x3", 2),
    ("i2x3", 2.5),
    ("i2x3", "f2x3"),
    ("j2x3", "i"),
    ("u2x3", "i+2x3"),
    ("b2x3", "b2x3"),
    ("b2x3", "i2x3"),
    ("b2x3", 1.5),
    ("h2x3", "f"),
    ("h2x3", "f2x3"),
    ("d2x3", "f2x3"),
    ("f0x3", "f3"),
    ("fs12", "fs12"),
    ("T3x2", "f2x3"),
]


def _binary_cases():
    cases = []
    for name in BINARY:
        for a, b in PAIRS:
            ids = f"{a},{b}"
            cases.append((f"{name}[{ids}]", lambda m, x, y, n=name: getattr(m, n)(x, y), [a, b]))
            if (a, b) in (("f2x3", "f2x3"), ("i2x3", "i+2x3"), ("f2x3", 2.5), ("i2x3", 2.5), ("b2x3", "b2x3")):
                cases.append((f"{name}.method[{ids}]", lambda m, x, y, n=name: getattr(x, n)(y), [a, b]))
                cases.append(
                    (
                        f"{name}_[{ids}]",
                        lambda m, x, y, n=name: getattr(x.clone(), n + "_")(y),
                        [a, b],
                    )
                )
            if (a, b) in (("f2x3", "f2x3"), ("i2x3", "i+2x3"), ("i2x3", "f2x3")):
                cases.append(
                    (
                        f"{name}.out[{ids}]",
                        lambda m, x, y, n=name: getattr(m, n)(x.detach(), y.detach(), out=m.empty(0, dtype=x.dtype)),
                        [a, b],
                    )
                )
    return cases


OPERATORS = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
    "//": lambda x, y: x // y,
    "%": lambda x, y: x % y,
    "**": lambda x, y: x**y,
    "&": lambda x, y: x & y,
    "|": lambda x, y: x | y,
    "^": lambda x, y: x ^ y,
    "<<": lambda x, y: x << y,
    ">>": lambda x, y: x >> y,
    "<": lambda x, y: x < y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "@": lambda x, y: x @ y,
}


def _operator_cases():
    cases = []
    for sym, op in OPERATORS.items():
        for a, b in [("f2x3", "f2x3"), ("i2x3", "i+2x3"), ("b2x3", "b2x3"), ("f2x3", 3), ("i2x3", 2), ("i2x3", 0.5)]:
            if sym == "@":
                a, b = a, "f3x2" if a == "f2x3" else b
            cases.append((f"op{sym}[{a},{b}]", lambda m, x, y, op=op: op(x, y), [a, b]))
            if not isinstance(b, str):
                cases.append((f"rop{sym}[{b},{a}]", lambda m, x, y, op=op: op(y, x), [a, b]))
    cases.append(("op-unary[b]", lambda m, x: -x, ["b2x3"]))
    cases.append(("op~[b]", lambda m, x: ~x, ["b2x3"]))
    cases.append(("op~[i]", lambda m, x: ~x, ["i2x3"]))
    cases.append(("op~[f]", lambda m, x: ~x, ["f2x3"]))
    cases.append(("op+=[int,float]", lambda m, x: x.__iadd__(1.5), ["i2x3"]))
    cases.append(("op*=[f,i]", lambda m, x, y: x.clone().__imul__(y), ["f2x3", "i2x3"]))
    cases.append(("op/=[i,i]", lambda m, x, y: x.__itruediv__(y), ["i2x3", "i+2x3"]))
    cases.append(("abs()[f]", lambda m, x: abs(x), ["f2x3"]))
    cases.append(("pow[scalar,tensor]", lambda m, x: m.pow(2, x), ["f2x3"]))
    cases.append(("pow[int,neg int]", lambda m, x: m.pow(x, -1), ["i+2x3"]))
    cases.append(("pow[int,-2 tensor]", lambda m, x, y: m.pow(x, y.neg()), ["i+2x3", "i+2x3"]))
    cases.append(("div_trunc", lambda m, x, y: m.div(x, y, rounding_mode="trunc"), ["f2x3", "f2x3"]))
    cases.append(("div_floor", lambda m, x, y: m.div(x, y, rounding_mode="floor"), ["f2x3", "f2x3"]))
    cases.append(("div_floor_int", lambda m, x, y: m.div(x, y, rounding_mode="floor"), ["i2x3", "i+2x3"]))
    cases.append(("div_trunc_int", lambda m, x, y: x.div(y, rounding_mode="trunc"), ["i2x3", "i+2x3"]))
    cases.append(("div_bad_mode", lambda m, x, y: m.div(x, y, rounding_mode="round"), ["f2x3", "f2x3"]))
    cases.append(("add_alpha_out", lambda m, x, y: m.add(x, y, alpha=2, out=m.empty(2, 3)), ["F2x3", "F2x3"]))
    cases.append(
        ("mul_out_wrong_dtype", lambda m, x, y: m.mul(x, y, out=m.empty(2, 3, dtype=m.int64)), ["F2x3", "F2x3"])
    )
    cases.append(("add_out_broadcast_resize", lambda m, x, y: m.add(x, y, out=m.empty(5)), ["F2x1", "F1x3"]))
    cases.append(("lerp", lambda m, x, y: m.lerp(x, y, 0.3), ["f2x3", "f2x3"]))
    cases.append(("lerp_tensor_w", lambda m, x, y, w: m.lerp(x, y, w), ["f2x3", "f2x3", "fp3"]))
    cases.append(("addcmul", lambda m, x, y, z: m.addcmul(x, y, z, value=0.5), ["f2x3", "f2x3", "f3"]))
    cases.append(("addcdiv", lambda m, x, y, z: m.addcdiv(x, y, z, value=2), ["f2x3", "f2x3", "f+3"]))
    cases.append(("where", lambda m, c, x, y: m.where(c, x, y), ["b2x3", "f2x3", "f3"]))
    cases.append(("where_scalar", lambda m, c, x: m.where(c, x, 0.0), ["b2x3", "f2x3"]))
    cases.append(("where_scalars", lambda m, c: m.where(c, 1.0, 0), ["b2x3"]))
    cases.append(("where_int_float", lambda m, c, x, y: m.where(c, x, y), ["b2x3", "i2x3", "f2x3"]))
    cases.append(("where_cond_only", lambda m, c: m.where(c), ["b2x3"]))
    cases.append(("clamp", lambda m, x: m.clamp(x, -0.5, 0.5), ["f2x3"]))
    cases.append(("clamp_min", lambda m, x: m.clamp(x, min=0.1), ["f2x3"]))
    cases.append(("clamp_max_only", lambda m, x: x.clamp(max=0.1), ["f2x3"]))
    cases.append(("clamp_tensor", lambda m, x, lo, hi: m.clamp(x, lo, hi), ["f2x3", "F3", "F2x1"]))
    cases.append(("clamp_int_float", lambda m, x: m.clamp(x, 0.5, 2.5), ["i2x3"]))
    cases.append(("clamp_int", lambda m, x: m.clamp(x, -1, 2), ["i2x3"]))
    cases.append(("clamp_none", lambda m, x: m.clamp(x), ["f2x3"]))
    cases.append(("clamp_nan", lambda m, x: m.clamp(x, -1.0, 1.0), ["fs12"]))
    cases.append(("clamp_lo_gt_hi", lambda m, x: m.clamp(x, 1.0, -1.0), ["f2x3"]))
    cases.append(("clamp_", lambda m, x: x.clone().clamp_(0, 1), ["f2x3"]))
    cases.append(("clip", lambda m, x: m.clip(x, -1, 1), ["f2x3"]))
    cases.append(("clamp_bool", lambda m, x: m.clamp(x, 0, 1), ["b2x3"]))
    return cases


# reductions: (name, kwargs variants); each runs on several inputs
REDUCE_INPUTS = ["f2x3x4", "f", "i2x3x4", "b2x3x4", "f0x3", "fs12", "T3x2"]
REDUCE_ARGS = [
    {},
    {"dim": 0},
    {"dim": -1, "keepdim": True},
    {"dim": (0, 1)},
    {"dim": (-1, 0), "keepdim": True},
]
REDUCTIONS = {
    "sum": REDUCE_ARGS + [{"dtype": "float64"}, {"dim": 1, "dtype": "int32"}, {"dim": []}],
    "mean": REDUCE_ARGS + [{"dtype": "float64"}, {"dim": 1, "dtype": "float64"}],
    "nansum": REDUCE_ARGS[:3],
    "nanmean": REDUCE_ARGS[:3],
    "prod": [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dtype": "float64"}, {"dim": 1, "dtype": "int32"}],
    "amax": REDUCE_ARGS,
    "amin": REDUCE_ARGS,
    "max": [{}, {"dim": 0}, {"dim": -1, "keepdim": True}],
    "min": [{}, {"dim": 1}, {"dim": -1, "keepdim": True}],
    "argmax": [{}, {"dim": 0}, {"dim": -1, "keepdim": True}],
    "argmin": [{}, {"dim": 1}, {"dim": -1, "keepdim": True}],
    "std": REDUCE_ARGS + [{"dim": 0, "unbiased": False}, {"dim": 1, "correction": 0}, {"correction": 2}],
    "var": REDUCE_ARGS + [{"dim": 0, "unbiased": False}, {"dim": 1, "correction": 0}],
    "std_mean": [{}, {"dim": 1}, {"dim": (0, 1), "keepdim": True, "correction": 0}],
    "var_mean": [{}, {"dim": 1}, {"dim": 0, "unbiased": False}],
    "norm": [{}, {"p": 1}, {"p": float("inf"), "dim": 1}, {"p": "fro"}, {"dim": (0, 1), "keepdim": True}, {"p": 0}],
    "logsumexp": [{"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": (0, 1)}],
    "cumsum": [{"dim": 0}, {"dim": -1}, {"dim": 1, "dtype": "float64"}],
    "cumprod": [{"dim": 0}, {"dim": -1}],
    "cummax": [{"dim": 0}, {"dim": -1}],
    "cummin": [{"dim": 1}],
    "logcumsumexp": [{"dim": 0}],
    "all": [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": (0, 1)}],
    "any": [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": (0, 1)}],
    "count_nonzero": [{}, {"dim": 0}, {"dim": (0, 1)}],
    "median": [{}, {"dim": 0}, {"dim": -1, "keepdim": True}],
    "nanmedian": [{}, {"dim": 0}],
    "mode": [{}, {"dim": 0}],
    "aminmax": [{}, {"dim": 0}, {"dim": -1, "keepdim": True}],
}


def _kw(m, kw):
    return {k: (getattr(m, v) if k == "dtype" else v) for k, v in kw.items()}


def _reduce_cases():
    cases = []
    for name, variants in REDUCTIONS.items():
        for kw in variants:
            for k in REDUCE_INPUTS:
                rank = 0 if k in ("f", "fs12") else 2 if k in ("f0x3", "T3x2") else 3
                if k == "fs12":
                    rank = 1
                dims = kw.get("dim")
                dims = (dims,) if isinstance(dims, int) else tuple(dims or ())
                if any(d >= max(rank, 1) or d < -max(rank, 1) for d in dims) and k != "f":
                    continue
                label = ",".join(f"{a}={b}" for a, b in kw.items())
                cases.append(
                    (
                        f"{name}({label})[{k}]",
                        lambda m, x, n=name, kw=kw: getattr(m, n)(x, **_kw(m, kw)),
                        [k],
                    )
                )
                if k == "f2x3x4" and kw:
                    cases.append(
                        (
                            f"{name}.method({label})[{k}]",
                            lambda m, x, n=name, kw=kw: getattr(x, n)(**_kw(m, kw)),
                            [k],
                        )
                    )
    cases.append(("max_binary", lambda m, x, y: m.max(x, y), ["f2x3", "f2x3"]))
    cases.append(("min_binary", lambda m, x, y: x.min(y), ["f2x3", "f3"]))
    cases.append(("max_empty", lambda m, x: m.max(x), ["f0x3"]))
    cases.append(("max_empty_dim", lambda m, x: m.max(x, 1), ["f0x3"]))
    cases.append(("argmax_empty", lambda m, x: m.argmax(x), ["f0x3"]))
    cases.append(("sum_out", lambda m, x: m.sum(x, 1, out=m.empty(0)), ["F2x3"]))
    cases.append(("std_constant_rows", lambda m, x: m.std(x * 0 + 1.5, 1), ["f2x3"]))
    cases.append(("std_mean_constant", lambda m, x: m.std_mean(x * 0, 0, correction=0), ["f2x3"]))
    cases.append(("max_ties_grad", lambda m, x: m.max(x * 0), ["f2x3"]))
    cases.append(("amax_ties_grad", lambda m, x: m.amax(x * 0, 1), ["f2x3"]))
    cases.append(("sum_bool_dtype", lambda m, x: m.sum(x).dtype, ["b2x3"]))
    cases.append(("sum_keepdim_positional", lambda m, x: m.sum(x, 1, True), ["f2x3"]))
    cases.append(("mean_names_axis", lambda m, x: x.mean(axis=1), ["f2x3"]))
    cases.append(("linalg_norm", lambda m, x: m.linalg.norm(x), ["f2x3"]))
    cases.append(("linalg_vector_norm", lambda m, x: m.linalg.vector_norm(x, ord=3, dim=1), ["f2x3"]))
    cases.append(("dist", lambda m, x, y: m.dist(x, y, 3), ["f2x3", "f2x3"]))
    cases.append(("diff", lambda m, x: m.diff(x, dim=1), ["f2x3"]))
    cases.append(("diff_n2", lambda m, x: m.diff(x, n=2, dim=1), ["f2x3"]))
    cases.append(("trace", lambda m, x: m.trace(x), ["f3x3"]))
    cases.append(("renorm", lambda m, x: m.renorm(x, 2, 0, 1.0), ["f2x3"]))
    cases.append(("quantile", lambda m, x: m.quantile(x, 0.3, dim=1), ["f2x3"]))
    cases.append(("histc", lambda m, x: m.histc(x, bins=4, min=-2, max=2), ["F2x3"]))
    cases.append(("bincount", lambda m, x: m.bincount(x), ["u2x3x4"]))
    return cases


def _index_cases():
    c = []
    g = ["f4x3"]
    c += [
        ("getitem_int", lambda m, x: x[1], g),
        ("getitem_neg", lambda m, x: x[-1, -2], g),
        ("getitem_slice_step", lambda m, x: x[::2, 1:], g),
        ("getitem_none_ellipsis", lambda m, x: x[None, ..., 1], g),
        ("getitem_list", lambda m, x: x[[0, 2, 2]], g),
        ("getitem_tensor", lambda m, x, i: x[i], ["f4x3", [3, 0, -1]]),
        ("getitem_two_lists", lambda m, x: x[[0, 1], [2, 0]], g),
        ("getitem_list_slice", lambda m, x: x[1:, [0, 2]], g),
        ("getitem_bool_mask", lambda m, x: x[x > 0], g),
        ("getitem_bool_rows", lambda m, x: x[m.tensor([True, False, True, False])], g),
        ("getitem_bool_scalar", lambda m, x: x[True], g),
        ("getitem_oob", lambda m, x: x[4], g),
        ("getitem_neg_step", lambda m, x: x[::-1], g),
        ("getitem_float", lambda m, x: x[1.0], g),
        ("getitem_split_adv", lambda m, x: x[[0, 1], :, [0, 1]], ["f2x3x4"]),
        ("getitem_0d", lambda m, x: x[()], ["f"]),
        ("getitem_0d_none", lambda m, x: x[None], ["f"]),
        ("getitem_int_tensor_0d", lambda m, x: x[m.tensor(2)], g),
        ("getitem_empty_list", lambda m, x: x[[]], g),
        ("getitem_ellipsis_int", lambda m, x: x[..., 0], ["f2x3x4"]),
    ]

    def setitem(fn):
        def run(m, x, *rest):
            y = x.clone()
            fn(m, y, *rest)
            return y

        return run

    def _s1(m, y):
        y[0] = 5.0

    def _s2(m, y):
        y[:, 1] = m.tensor([1.0, 2.0, 3.0, 4.0])

    def _s3(m, y):
        y[y > 0] = 0.0

    def _s4(m, y, v):
        y[[0, 2]] = v

    def _s5(m, y):
        y[y < 0] = m.tensor(-1.0)

    def _s6(m, y):
        y[[0, 0, 1], [1, 1, 2]] = m.tensor([1.0, 2.0, 3.0])

    def _s7(m, y):
        y[..., -1] = 7

    def _s8(m, y, v):
        y[1:3] = v

    def _s9(m, y):
        y[m.tensor([True, False, True, False])] = m.tensor([9.0, 8.0, 7.0])

    def _s10(m, y):
        y[0] = m.tensor([1.0, 2.0])

    c += [
        ("setitem_int", setitem(_s1), g),
        ("setitem_col_tensor", setitem(_s2), g),
        ("setitem_mask", setitem(_s3), g),
        ("setitem_list_grad", setitem(_s4), ["f4x3", "f3"]),
        ("setitem_mask_0d", setitem(_s5), g),
        ("setitem_dup_index", setitem(_s6), ["F4x3"]),
        ("setitem_ellipsis_int", setitem(_s7), g),
        ("setitem_slice_grad", setitem(_s8), ["f4x3", "f2x1"]),
        ("setitem_bool_rows_bcast", setitem(_s9), g),
        ("setitem_shape_mismatch", setitem(_s10), g),
        ("setitem_int_tensor_float", setitem(lambda m, y: y.__setitem__(0, 2.7)), ["i4x3"]),
        ("index_put", lambda m, x, v: m.index_put(x, (m.tensor([0, 2]),), v), ["f4x3", "f3"]),
        ("index_put_acc", lambda m, x: x.clone().index_put_((m.tensor([0, 0]),), m.tensor(1.0), accumulate=True), g),
    ]
    return c


def _shape_cases():
    x = ["f2x3x4"]
    c = [
        ("view", lambda m, x: x.view(6, 4), x),
        ("view_neg", lambda m, x: x.view(-1, 2), x),
        ("view_bad", lambda m, x: x.view(5, -1), x),
        ("view_noncontig", lambda m, x: x.t().view(6), ["f2x3"]),
        ("view_dtype", lambda m, x: x.view(m.int32), ["F2x3"]),
        ("reshape", lambda m, x: m.reshape(x, (4, -1)), x),
        ("reshape_noncontig", lambda m, x: x.t().reshape(-1), ["f2x3"]),
        ("reshape_0d", lambda m, x: x.reshape(1, 1), ["f"]),
        ("reshape_empty", lambda m, x: x.reshape(3, 0, -1), ["f0x3"]),
        ("reshape_two_neg", lambda m, x: x.reshape(-1, -1), x),
        ("flatten", lambda m, x: m.flatten(x, 1), x),
        ("flatten_0d", lambda m, x: x.flatten(), ["f"]),
        ("unflatten", lambda m, x: x.unflatten(2, (2, 2)), x),
        ("squeeze", lambda m, x: x.squeeze(), ["f1x3x1"]),
        ("squeeze_dim_tuple", lambda m, x: x.squeeze((0, 2)), ["f1x3x1"]),
        ("squeeze_non1", lambda m, x: x.squeeze(1), ["f1x3x1"]),
        ("unsqueeze_neg", lambda m, x: x.unsqueeze(-1), ["f2x3"]),
        ("unsqueeze_oob", lambda m, x: x.unsqueeze(4), ["f2x3"]),
        ("permute", lambda m, x: x.permute(2, 0, 1), x),
        ("permute_tuple_neg", lambda m, x: m.permute(x, (-1, 0, 1)), x),
        ("permute_dup", lambda m, x: x.permute(0, 0, 1), x),
        ("transpose", lambda m, x: x.transpose(0, -1), x),
        ("swapaxes", lambda m, x: x.swapaxes(0, 1), x),
        ("movedim", lambda m, x: m.movedim(x, (0, 1), (2, 0)), x),
        ("mT", lambda m, x: x.mT, x),
        ("T_2d", lambda m, x: x.T, ["f2x3"]),
        ("expand", lambda m, x: x.expand(2, -1, 3), ["f1x1x3"]),
        ("expand_as", lambda m, x, y: x.expand_as(y), ["f3", "f2x3"]),
        ("expand_bad", lambda m, x: x.expand(2, 4), ["f2x3"]),
        ("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 2, 3)), ["f2x3"]),
        ("broadcast_tensors", lambda m, x, y: m.broadcast_tensors(x, y), ["f2x1", "f3"]),
        ("repeat", lambda m, x: x.repeat(2, 1, 3), ["f2x3"]),
        ("repeat_interleave", lambda m, x: x.repeat_interleave(2, dim=1), ["f2x3"]),
        ("repeat_interleave_tensor", lambda m, x: m.repeat_interleave(x, m.tensor([1, 0, 2]), dim=1), ["f2x3"]),
        ("tile", lambda m, x: m.tile(x, (2,)), ["f2x3"]),
        ("flip", lambda m, x: m.flip(x, [0, 2]), x),
        ("fliplr", lambda m, x: m.fliplr(x), ["f2x3"]),
        ("roll", lambda m, x: m.roll(x, 1, 0), x),
        ("roll_multi", lambda m, x: x.roll((1, -2), (1, 2)), x),
        ("roll_flat", lambda m, x: x.roll(5), x),
        ("rot90", lambda m, x: m.rot90(x, 1, (0, 1)), ["f2x3"]),
        ("narrow", lambda m, x: m.narrow(x, 2, 1, 2), x),
        ("narrow_neg", lambda m, x: x.narrow(-1, -3, 2), x),
        ("unbind", lambda m, x: m.unbind(x, 1), x),
        ("split_int", lambda m, x: m.split(x, 3, dim=2), x),
        ("split_sizes", lambda m, x: x.split([1, 3], -1), x),
        ("split_bad_sizes", lambda m, x: x.split([1, 2], -1), x),
        ("tensor_split", lambda m, x: m.tensor_split(x, 3, dim=2), x),
        ("chunk", lambda m, x: m.chunk(x, 3, 2), x),
        ("chunk_uneven", lambda m, x: x.chunk(3, dim=0), ["f5x2"]),
        ("stack", lambda m, x, y: m.stack([x, y], dim=-1), ["f2x3", "f2x3"]),
        ("stack_mismatch", lambda m, x, y: m.stack([x, y]), ["f2x3", "f3x2"]),
        ("cat", lambda m, x, y: m.cat([x, y], 1), ["f2x3", "f2x2"]),
        ("cat_promote", lambda m, x, y: m.cat([x, y]), ["i2x3", "f2x3"]),
        ("cat_empty_1d", lambda m, x, y: m.cat([x, y]), ["f2x3", "f0"]),
        ("cat_neg_dim", lambda m, x, y: m.cat((x, y), dim=-2), ["f2x3", "f1x3"]),
        ("concat", lambda m, x, y: m.concat([x, y]), ["f2x3", "f1x3"]),
        ("hstack", lambda m, x, y: m.hstack([x, y]), ["f3", "f2"]),
        ("vstack", lambda m, x, y: m.vstack([x, y]), ["f3", "f3"]),
        ("dstack", lambda m, x, y: m.dstack([x, y]), ["f2x3", "f2x3"]),
        ("column_stack", lambda m, x, y: m.column_stack([x, y]), ["f3", "f3x2"]),
        ("gather", lambda m, x, i: m.gather(x, 1, i), ["f2x3", [[0, 0], [2, 1]]]),
        ("gather_oob", lambda m, x, i: m.gather(x, 1, i), ["f2x3", [[0, 3]]]),
        ("scatter", lambda m, x, i, s: m.scatter(x, 1, i, s), ["f2x3", [[0], [2]], "f2x1"]),
        ("scatter_value", lambda m, x, i: x.scatter(0, i, 1.5), ["f2x3", [[1, 0, 1]]]),
        ("scatter_reduce_add", lambda m, x, i: x.scatter(1, i, 2.0, reduce="add"), ["f2x3", [[0, 0]]]),
        ("scatter_add", lambda m, x, i, s: m.scatter_add(x, 1, i, s), ["f2x3", [[0, 0, 1], [2, 2, 2]], "f2x3"]),
        ("scatter_add_", lambda m, x, i, s: x.clone().scatter_add_(0, i, s), ["f2x3", [[1, 0, 1]], "f1x3"]),
        (
            "scatter_reduce_sum",
            lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "sum"),
            ["f3", [0, 1, 0, 2], "f4"],
        ),
        (
            "scatter_reduce_amax",
            lambda m, x, i, s: x.scatter_reduce(0, i, s, "amax", include_self=False),
            ["f3", [0, 1, 0, 0], "f4"],
        ),
        (
            "scatter_reduce_mean",
            lambda m, x, i, s: x.scatter_reduce(0, i, s, "mean"),
            ["F3", [0, 1, 0, 0], "F4"],
        ),
        (
            "scatter_reduce_prod",
            lambda m, x, i, s: x.scatter_reduce(0, i, s, "prod", include_self=True),
            ["F3", [0, 1, 0, 0], "F4"],
        ),
        ("index_select", lambda m, x, i: m.index_select(x, 1, i), ["f2x3", [2, 0, 2]]),
        ("index_select_0d_index", lambda m, x: m.index_select(x, 0, m.tensor(1)), ["f2x3"]),
        ("index_add", lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=2), ["f3x2", [0, 2, 0], "f3x2"]),
        ("index_copy", lambda m, x, i, s: x.index_copy(0, i, s), ["f3x2", [2, 0], "f2x2"]),
        ("index_fill", lambda m, x, i: x.index_fill(1, i, -1.0), ["f3x2", [1]]),
        ("masked_fill", lambda m, x: x.masked_fill(x > 0, 0.0), ["f2x3"]),
        ("masked_fill_bcast", lambda m, x, b: m.masked_fill(x, b, -m.inf if hasattr(m, "inf") else 0), ["f2x3", "b3"]),
        ("masked_fill_tensor", lambda m, x, b: x.masked_fill(b, m.tensor(2.0)), ["f2x3", "b2x3"]),
        ("masked_fill_", lambda m, x, b: x.clone().masked_fill_(b, 3), ["f2x3", "b2x3"]),
        ("masked_fill_int_float", lambda m, x, b: x.masked_fill(b, 2.5), ["i2x3", "b2x3"]),
        ("masked_select", lambda m, x, b: m.masked_select(x, b), ["f2x3", "b3"]),
        ("masked_scatter", lambda m, x, b, s: x.masked_scatter(b, s), ["f2x3", "b2x3", "f6"]),
        ("take", lambda m, x, i: m.take(x, i), ["f2x3", [[0, 5], [-1, 2]]]),
        ("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 1), ["f2x3", [[0], [2]]]),
        ("take_along_dim_none", lambda m, x, i: m.take_along_dim(x, i), ["f2x3", [4, 0]]),
        ("unfold", lambda m, x: x.unfold(1, 2, 1), ["f2x5"]),
        ("unfold_step", lambda m, x: x.unfold(-1, 2, 2), ["f2x5"]),
        ("cumsum_", lambda m, x: x.clone().cumsum_(1), ["f2x3"]),
        ("cumprod_", lambda m, x: x.clone().cumprod_(0), ["f2x3"]),
        ("addmm_", lambda m, a, x, y: a.clone().addmm_(x, y, beta=0.5, alpha=2), ["f2x2", "f2x3", "f3x2"]),
        ("addmv_", lambda m, a, x, y: a.clone().addmv_(x, y), ["f2", "f2x3", "f3"]),
        ("baddbmm_", lambda m, a, x, y: a.clone().baddbmm_(x, y), ["f2x2x2", "f2x2x3", "f2x3x2"]),
        ("fill_diagonal_", lambda m, x: x.clone().fill_diagonal_(2.0), ["f3x4"]),
        ("fill_diagonal_wrap", lambda m, x: x.clone().fill_diagonal_(-1.0, wrap=True), ["f7x3"]),
        ("fill_diagonal_3d", lambda m, x: x.clone().fill_diagonal_(5), ["f2x2x2"]),
        ("fill_diagonal_unequal", lambda m, x: x.clone().fill_diagonal_(5), ["f2x3x4"]),
        ("tril", lambda m, x: m.tril(x, -1), ["f3x4"]),
        ("triu", lambda m, x: x.triu(1), ["f3x4"]),
        ("diag", lambda m, x: m.diag(x), ["f3"]),
        ("diag_2d", lambda m, x: m.diag(x, 1), ["f3x4"]),
        ("diagonal", lambda m, x: x.diagonal(0, 0, 1), ["f3x4"]),
        ("diag_embed", lambda m, x: m.diag_embed(x), ["f2x3"]),
        ("contiguous_T", lambda m, x: x.contiguous(), ["T3x2"]),
        ("clone_T", lambda m, x: x.clone().stride(), ["T3x2"]),
        ("nonzero", lambda m, x: m.nonzero(x), ["i2x3"]),
        ("nonzero_tuple", lambda m, x: m.nonzero(x, as_tuple=True), ["i2x3"]),
        ("argwhere", lambda m, x: m.argwhere(x), ["b2x3"]),
        ("meshgrid", lambda m, x, y: m.meshgrid(x, y, indexing="ij"), ["f3", "f2"]),
        ("cartesian_prod", lambda m, x, y: m.cartesian_prod(x, y), ["f3", "f2"]),
        ("outer", lambda m, x, y: m.outer(x, y), ["f3", "f2"]),
        ("einsum", lambda m, x, y: m.einsum("ij,jk->ik", x, y), ["f2x3", "f3x2"]),
        ("matmul_batch", lambda m, x, y: m.matmul(x, y), ["f2x2x3", "f3x4"]),
        ("matmul_vec", lambda m, x, y: m.matmul(x, y), ["f3", "f3x2"]),
        ("matmul_dot", lambda m, x, y: m.matmul(x, y), ["f3", "f3"]),
        ("matmul_int", lambda m, x, y: m.matmul(x, y), ["i2x3", "i3x2"]),
        ("matmul_mixed", lambda m, x, y: m.matmul(x, y), ["i2x3", "f3x2"]),
        ("mm_bad", lambda m, x, y: m.mm(x, y), ["f2x3", "f2x3"]),
        ("bmm", lambda m, x, y: m.bmm(x, y), ["f2x2x3", "f2x3x2"]),
        ("baddbmm", lambda m, a, x, y: m.baddbmm(a, x, y, beta=0.5, alpha=2), ["f2x2x2", "f2x2x3", "f2x3x2"]),
        ("addmm", lambda m, a, x, y: m.addmm(a, x, y), ["f2", "f2x3", "f3x2"]),
        ("mv", lambda m, x, y: m.mv(x, y), ["f2x3", "f3"]),
        ("dot_int", lambda m, x, y: m.dot(x, y), ["i3", "i3"]),
        ("kron", lambda m, x, y: m.kron(x, y), ["f2x2", "f2x1"]),
        ("cross", lambda m, x, y: m.cross(x, y, dim=1), ["f2x3", "f2x3"]),
        ("cdist", lambda m, x, y: m.cdist(x, y), ["f3x2", "f4x2"]),
        ("tensordot", lambda m, x, y: m.tensordot(x, y, dims=1), ["f2x3", "f3x2"]),
        ("atleast_2d", lambda m, x: m.atleast_2d(x), ["f"]),
        ("new_zeros", lambda m, x: x.new_zeros(2, 1), ["i2x3"]),
        ("new_full", lambda m, x: x.new_full((2,), 3), ["f2x3"]),
        ("new_tensor", lambda m, x: x.new_tensor([1, 2]), ["f2x3"]),
        ("zeros_like", lambda m, x: m.zeros_like(x, dtype=m.int32), ["f2x3"]),
        ("full_like", lambda m, x: m.full_like(x, 2.7), ["i2x3"]),
        ("type_as", lambda m, x, y: x.type_as(y), ["i2x3", "f2x3"]),
        ("to_dtype", lambda m, x: x.to(m.float64), ["f2x3"]),
        ("to_int_trunc", lambda m, x: x.to(m.int32), ["F2x3"]),
        ("to_uint8_neg", lambda m, x: x.to(m.uint8), ["F2x3"]),
        ("to_bool", lambda m, x: x.bool(), ["fs12"]),
        ("long_of_nan", lambda m, x: x.long(), ["F2x3"]),
        ("half_big", lambda m, x: (x * 1e5).half(), ["F2x3"]),
        ("float_int", lambda m, x: x.float(), ["i2x3"]),
        ("item", lambda m, x: x.item(), ["f"]),
        ("tolist", lambda m, x: x.tolist(), ["i2x3"]),
        ("size_dim", lambda m, x: x.size(-1), ["f2x3"]),
        ("shape", lambda m, x: x.shape, ["f2x3"]),
        ("numel_dim", lambda m, x: (x.numel(), x.dim(), x.ndim, x.nelement()), ["f2x3"]),
        ("stride", lambda m, x: x.stride(), ["f2x3x4"]),
        ("is_contiguous", lambda m, x: x.is_contiguous(), ["T3x2"]),
        ("arange", lambda m: m.arange(0, 1, 0.1), []),
        ("arange_int", lambda m: m.arange(5), []),
        ("arange_float_end", lambda m: m.arange(5.0), []),
        ("arange_neg", lambda m: m.arange(5, 0, -2), []),
        ("arange_zero_step", lambda m: m.arange(0, 5, 0), []),
        ("linspace", lambda m: m.linspace(0, 1, 7), []),
        ("linspace_one", lambda m: m.linspace(2, 3, 1), []),
        ("logspace", lambda m: m.logspace(0, 2, 5), []),
        ("eye", lambda m: m.eye(2, 3), []),
        ("full_int", lambda m: m.full((2,), 3), []),
        ("full_bool", lambda m: m.full((2,), True), []),
        ("tensor_mixed_list", lambda m: m.tensor([1, 2.5]), []),
        ("tensor_bool_list", lambda m: m.tensor([True, False]), []),
        ("tensor_empty", lambda m: m.tensor([]), []),
        ("tensor_int_big", lambda m: m.tensor([2**40]), []),
        ("as_tensor", lambda m: m.as_tensor([1, 2], dtype=m.float32), []),
        ("zeros_tuple", lambda m: m.zeros((2, 3), dtype=m.int64), []),
        ("ones_empty", lambda m: m.ones(0, 2), []),
        ("tril_indices", lambda m: m.tril_indices(3, 3), []),
        ("triu_indices", lambda m: m.triu_indices(3, 4, 1), []),
    ]
    return c


def _sort_cases():
    x = ["f3x5"]
    dup = ["i3x5"]
    return [
        ("sort", lambda m, x: m.sort(x), x),
        ("sort_desc_dim0", lambda m, x: x.sort(dim=0, descending=True), x),
        ("sort_stable_int", lambda m, x: m.sort(x, stable=True), dup),
        ("sort_stable_desc_int", lambda m, x: m.sort(x, dim=1, descending=True, stable=True), dup),
        ("sort_nan", lambda m, x: m.sort(x), ["fs12"]),
        ("sort_bool", lambda m, x: m.sort(x, stable=True), ["b2x5"]),
        ("sort_0d", lambda m, x: m.sort(x), ["f"]),
        ("argsort", lambda m, x: m.argsort(x, dim=-1), x),
        ("argsort_stable", lambda m, x: x.argsort(stable=True, descending=True), dup),
        ("msort", lambda m, x: m.msort(x), x),
        ("topk", lambda m, x: m.topk(x, 2), x),
        ("topk_smallest", lambda m, x: x.topk(3, dim=0, largest=False), x),
        ("topk_k0", lambda m, x: m.topk(x, 0), x),
        ("topk_too_big", lambda m, x: m.topk(x, 6), x),
        ("topk_int", lambda m, x: m.topk(x, 2), dup),
        ("kthvalue", lambda m, x: m.kthvalue(x, 2), x),
        ("kthvalue_dim0_keep", lambda m, x: x.kthvalue(1, 0, True), x),
        ("unique", lambda m, x: m.unique(x), dup),
        ("unique_inverse_counts", lambda m, x: m.unique(x, return_inverse=True, return_counts=True), dup),
        ("unique_dim", lambda m, x: m.unique(x, dim=0), ["i3x2"]),
        ("unique_float", lambda m, x: x.unique(sorted=True), ["fs12"]),
        ("unique_consecutive", lambda m, x: m.unique_consecutive(x, return_counts=True), [[1, 1, 2, 2, 3, 1]]),
        ("searchsorted", lambda m, s, v: m.searchsorted(s, v), [[1.0, 2.0, 3.0], "F2x3"]),
        ("searchsorted_right", lambda m, s, v: m.searchsorted(s, v, right=True), [[1, 2, 2, 3], [2, 0, 5]]),
        ("bucketize", lambda m, v, s: m.bucketize(v, s), ["F2x3", [-1.0, 0.0, 1.0]]),
        ("isin", lambda m, x, y: m.isin(x, y), ["i2x3", [1, 2, -3]]),
        ("allclose", lambda m, x, y: m.allclose(x, y + 1e-7), ["F2x3", "F2x3"]),
        ("isclose", lambda m, x, y: m.isclose(x, y), ["fs12", "fs12"]),
        ("equal", lambda m, x: m.equal(x, x.clone()), ["F2x3"]),
        ("eq_shapes", lambda m, x, y: m.eq(x, y), ["f2x3", "f2x2"]),
    ]


def _pair(shape_a, shape_b):
    return [shape_a, shape_b]


def _nn_cases():
    c = []
    acts = [
        ("relu", {}),
        ("relu6", {}),
        ("elu", {"alpha": 0.5}),
        ("selu", {}),
        ("celu", {"alpha": 2.0}),
        ("gelu", {}),
        ("gelu", {"approximate": "tanh"}),
        ("silu", {}),
        ("mish", {}),
        ("softplus", {"beta": 2, "threshold": 1}),
        ("softsign", {}),
        ("hardtanh", {"min_val": -0.5, "max_val": 1.0}),
        ("hardsigmoid", {}),
        ("hardswish", {}),
        ("leaky_relu", {"negative_slope": 0.2}),
        ("logsigmoid", {}),
        ("tanhshrink", {}),
        ("softshrink", {"lambd": 0.7}),
        ("hardshrink", {"lambd": 0.7}),
        ("threshold", {"threshold": 0.3, "value": -1.0}),
        ("sigmoid", {}),
        ("tanh", {}),
        ("rrelu", {"training": False}),
        ("glu", {"dim": 0}),
        ("softmax", {"dim": 1}),
        ("log_softmax", {"dim": 0}),
        ("softmin", {"dim": -1}),
        ("normalize", {"p": 1, "dim": 1}),
        ("dropout", {"p": 0.0}),
        ("dropout", {"p": 0.5, "training": False}),
        ("alpha_dropout", {"p": 0.5, "training": False}),
    ]
    for name, kw in acts:
        for k in ["f4x3", "fs12", "h2x3", "d2x3", "f0x3"]:
            label = ",".join(f"{a}={b}" for a, b in kw.items())
            c.append((f"F.{name}({label})[{k}]", lambda m, x, n=name, kw=kw: getattr(m.nn.functional, n)(x, **kw), [k]))
    c.append(("F.relu_int", lambda m, x: m.nn.functional.relu(x), ["i2x3"]))
    c.append(("F.gelu_int", lambda m, x: m.nn.functional.gelu(x), ["i2x3"]))
    c.append(("F.softplus_int", lambda m, x: m.nn.functional.softplus(x), ["i2x3"]))
    c.append(("F.glu_int", lambda m, x: m.nn.functional.glu(x, 0), ["i2x3"]))
    c.append(("F.hardtanh_int", lambda m, x: m.nn.functional.hardtanh(x, -0.5, 1.5), ["i2x3"]))
    c.append(("F.hardtanh_int_", lambda m, x: m.nn.functional.hardtanh(x, inplace=True), ["i2x3"]))
    c.append(("F.hardtanh_bool", lambda m, x: m.nn.functional.hardtanh(x), ["b2x3"]))
    c.append(("F.relu6_uint8", lambda m, x: m.nn.functional.relu6(x * 3), ["u2x3"]))
    c.append(("F.softsign_int", lambda m, x: m.nn.functional.softsign(x), ["j2x3"]))
    c.append(("F.tanhshrink_int", lambda m, x: m.nn.functional.tanhshrink(x), ["i2x3"]))
    c.append(("F.softmax_no_dim", lambda m, x: m.nn.functional.softmax(x), ["f2x3"]))
    c.append(("F.relu_inplace", lambda m, x: m.nn.functional.relu(x.clone(), inplace=True), ["f2x3"]))
    c.append(("F.leaky_relu_", lambda m, x: m.nn.functional.leaky_relu_(x.clone(), 0.1), ["f2x3"]))

    def f(name, **kw):
        return lambda m, *a: getattr(m.nn.functional, name)(*a, **kw)

    def fk(name, kw_fn):
        return lambda m, *a: getattr(m.nn.functional, name)(*a, **kw_fn(m))

    losses = [
        ("mse", f("mse_loss"), ["f2x3", "f2x3"]),
        ("mse_sum", f("mse_loss", reduction="sum"), ["f2x3", "f2x3"]),
        ("mse_none", f("mse_loss", reduction="none"), ["f2x3", "f2x3"]),
        ("mse_bcast", f("mse_loss"), ["f2x3", "f3"]),
        ("mse_bad_reduction", f("mse_loss", reduction="avg"), ["f2x3", "f2x3"]),
        ("l1", f("l1_loss"), ["f2x3", "F2x3"]),
        ("smooth_l1", f("smooth_l1_loss", beta=0.5), ["f2x3", "F2x3"]),
        ("smooth_l1_beta0", f("smooth_l1_loss", beta=0.0), ["f2x3", "F2x3"]),
        ("huber", f("huber_loss", delta=0.5), ["f2x3", "F2x3"]),
        ("ce", f("cross_entropy"), ["f4x3", [0, 2, 1, 2]]),
        ("ce_ls", f("cross_entropy", label_smoothing=0.1), ["f4x3", [0, 2, 1, 2]]),
        ("ce_ignore", f("cross_entropy", ignore_index=2), ["f4x3", [0, 2, 1, 2]]),
        ("ce_all_ignored", f("cross_entropy", ignore_index=1), ["f2x3", [1, 1]]),
        ("ce_weight", fk("cross_entropy", lambda m: {"weight": m.tensor([1.0, 2.0, 0.5])}), ["f4x3", [0, 2, 1, 2]]),
        ("ce_probs", f("cross_entropy"), ["f4x3", "Fp4x3"]),
        ("ce_probs_ls", f("cross_entropy", label_smoothing=0.2), ["f4x3", "Fp4x3"]),
        ("ce_sum", f("cross_entropy", reduction="sum"), ["f4x3", [0, 2, 1, 2]]),
        ("ce_none_nd", f("cross_entropy", reduction="none"), ["f2x3x2", [[0, 1], [2, 2]]]),
        ("ce_1d", f("cross_entropy"), ["f3", 1]),
        ("ce_oob", f("cross_entropy"), ["f2x3", [0, 3]]),
        ("ce_int_target_float", f("cross_entropy"), ["f2x3", [0.0, 1.0]]),
        ("nll", f("nll_loss"), ["f4x3", [0, 2, 1, 2]]),
        (
            "nll_weight_ignore",
            fk("nll_loss", lambda m: {"weight": m.tensor([1.0, 2.0, 0.5]), "ignore_index": 0}),
            ["f4x3", [0, 2, 1, 2]],
        ),
        ("bce", f("binary_cross_entropy"), ["fp2x3", "Fp2x3"]),
        ("bce_weight", fk("binary_cross_entropy", lambda m: {"weight": m.tensor([1.0, 0.5, 2.0])}), ["fp2x3", "Fp2x3"]),
        ("bce_out_of_range", f("binary_cross_entropy"), ["F2x3", "Fp2x3"]),
        ("bce_logits", f("binary_cross_entropy_with_logits"), ["f2x3", "Fp2x3"]),
        (
            "bce_logits_pos_weight",
            fk("binary_cross_entropy_with_logits", lambda m: {"pos_weight": m.tensor([1.0, 2.0, 3.0])}),
            ["f2x3", "Fp2x3"],
        ),
        ("bce_logits_shape", f("binary_cross_entropy_with_logits"), ["f2x3", "Fp3"]),
        ("kl_div", f("kl_div", reduction="batchmean"), ["f2x3", "Fp2x3"]),
        ("kl_div_log_target", f("kl_div", reduction="sum", log_target=True), ["f2x3", "F2x3"]),
        ("kl_div_mean", f("kl_div"), ["f2x3", "Fp2x3"]),
        ("margin_ranking", f("margin_ranking_loss", margin=0.3), ["f4", "f4", [1.0, -1.0, 1.0, -1.0]]),
        ("hinge_embedding", f("hinge_embedding_loss"), ["f4", [1.0, -1.0, 1.0, -1.0]]),
        ("soft_margin", f("soft_margin_loss"), ["f4", [1.0, -1.0, 1.0, -1.0]]),
        ("multilabel_soft_margin", f("multilabel_soft_margin_loss"), ["f2x3", [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]]),
        ("multi_margin", f("multi_margin_loss"), ["f2x3", [1, 2]]),
        ("multilabel_margin", f("multilabel_margin_loss"), ["f2x3", [[1, -1, 0], [2, 0, -1]]]),
        ("cosine_embedding", f("cosine_embedding_loss"), ["f2x3", "f2x3", [1.0, -1.0]]),
        ("triplet", f("triplet_margin_loss"), ["f2x3", "f2x3", "f2x3"]),
        ("poisson_nll", f("poisson_nll_loss"), ["f2x3", "F+2x3"]),
        ("poisson_nll_full", f("poisson_nll_loss", log_input=False, full=True), ["f+2x3", "F+2x3"]),
        ("gaussian_nll", f("gaussian_nll_loss"), ["f2x3", "F2x3", "f+2x3"]),
        ("cosine_similarity", f("cosine_similarity"), ["f2x3", "f2x3"]),
        ("cosine_similarity_bcast", f("cosine_similarity", dim=-1), ["f2x3", "f3"]),
        ("pairwise_distance", f("pairwise_distance"), ["f2x3", "f2x3"]),
        ("pdist", f("pdist"), ["f3x2"]),
    ]
    c += [(f"F.{n}", fn, s) for n, fn, s in losses]
    conv = [
        ("conv1d", f("conv1d"), ["f1x2x5", "f3x2x2"]),
        ("conv1d_bias_pad", f("conv1d", padding=1, stride=2), ["f2x2x5", "f3x2x3", "f3"]),
        ("conv1d_same", f("conv1d", padding="same", dilation=2), ["f1x2x6", "f2x2x2"]),
        ("conv2d", f("conv2d"), ["f1x2x4x4", "f3x2x3x3"]),
        ("conv2d_stride_pad", f("conv2d", stride=2, padding=1), ["f1x2x5x5", "f2x2x3x3", "f2"]),
        ("conv2d_groups", f("conv2d", groups=2), ["f1x4x4x4", "f2x2x3x3"]),
        ("conv2d_same_even", f("conv2d", padding="same"), ["f1x1x4x4", "f1x1x2x2"]),
        ("conv2d_dilation_tuple", f("conv2d", dilation=(1, 2), padding=(1, 0)), ["f1x1x5x5", "f1x1x3x2"]),
        ("conv2d_unbatched", f("conv2d"), ["f2x4x4", "f1x2x3x3"]),
        ("conv2d_bad_channels", f("conv2d"), ["f1x3x4x4", "f1x2x3x3"]),
        ("conv2d_same_stride", f("conv2d", padding="same", stride=2), ["f1x1x4x4", "f1x1x3x3"]),
        ("conv3d", f("conv3d"), ["f1x1x3x3x3", "f1x1x2x2x2"]),
        ("conv_transpose1d", f("conv_transpose1d", stride=2), ["f1x2x3", "f2x1x2"]),
        (
            "conv_transpose2d",
            f("conv_transpose2d", stride=2, padding=1, output_padding=1),
            ["f1x2x3x3", "f2x1x3x3", "f1"],
        ),
        ("conv_transpose2d_groups", f("conv_transpose2d", groups=2), ["f1x2x3x3", "f2x1x2x2"]),
        ("max_pool1d", f("max_pool1d", kernel_size=2), ["f1x2x5"]),
        ("max_pool2d", f("max_pool2d", kernel_size=2), ["f1x2x5x5"]),
        ("max_pool2d_ceil", f("max_pool2d", kernel_size=2, ceil_mode=True), ["f1x2x5x5"]),
        ("max_pool2d_pad_stride", f("max_pool2d", kernel_size=3, stride=2, padding=1), ["f1x1x5x5"]),
        ("max_pool2d_indices", f("max_pool2d", kernel_size=2, return_indices=True), ["f1x1x4x4"]),
        ("max_pool2d_dilation", f("max_pool2d", kernel_size=2, dilation=2), ["f1x1x5x5"]),
        ("max_pool2d_unbatched", f("max_pool2d", kernel_size=2), ["f2x4x4"]),
        ("max_pool2d_bad_pad", f("max_pool2d", kernel_size=2, padding=2), ["f1x1x4x4"]),
        ("max_pool3d", f("max_pool3d", kernel_size=2), ["f1x1x4x4x4"]),
        ("avg_pool1d", f("avg_pool1d", kernel_size=3, stride=1, padding=1), ["f1x2x5"]),
        ("avg_pool2d", f("avg_pool2d", kernel_size=2), ["f1x2x5x5"]),
        (
            "avg_pool2d_pad_exclude",
            f("avg_pool2d", kernel_size=3, stride=2, padding=1, count_include_pad=False),
            ["f1x1x5x5"],
        ),
        ("avg_pool2d_ceil", f("avg_pool2d", kernel_size=2, ceil_mode=True), ["f1x1x5x5"]),
        ("avg_pool2d_divisor", f("avg_pool2d", kernel_size=2, divisor_override=3), ["f1x1x4x4"]),
        ("avg_pool3d", f("avg_pool3d", kernel_size=2), ["f1x1x4x4x4"]),
        ("adaptive_avg_pool1d", f("adaptive_avg_pool1d", output_size=3), ["f1x2x7"]),
        ("adaptive_avg_pool2d", f("adaptive_avg_pool2d", output_size=(3, 2)), ["f1x2x5x7"]),
        ("adaptive_avg_pool2d_none", f("adaptive_avg_pool2d", output_size=(None, 2)), ["f1x2x5x7"]),
        ("adaptive_max_pool2d", f("adaptive_max_pool2d", output_size=2), ["f1x2x5x5"]),
        ("adaptive_max_pool2d_idx", f("adaptive_max_pool2d", output_size=2, return_indices=True), ["f1x1x5x5"]),
        ("adaptive_max_pool1d", f("adaptive_max_pool1d", output_size=2), ["f1x2x5"]),
        ("lp_pool2d", f("lp_pool2d", norm_type=2, kernel_size=2), ["f+1x1x4x4"]),
        ("lp_pool1d", f("lp_pool1d", norm_type=1, kernel_size=2), ["f+1x1x4"]),
        ("interp_nearest", f("interpolate", scale_factor=2), ["f1x1x2x3"]),
        ("interp_nearest_size", f("interpolate", size=(3, 5)), ["f1x1x2x3"]),
        ("interp_nearest_exact", f("interpolate", size=(3, 5), mode="nearest-exact"), ["f1x1x2x3"]),
        ("interp_bilinear", f("interpolate", scale_factor=2, mode="bilinear"), ["f1x1x2x3"]),
        ("interp_bilinear_ac", f("interpolate", size=(4, 5), mode="bilinear", align_corners=True), ["f1x1x2x3"]),
        ("interp_bilinear_down", f("interpolate", size=(2, 2), mode="bilinear"), ["f1x1x5x4"]),
        ("interp_bilinear_aa", f("interpolate", size=(2, 2), mode="bilinear", antialias=True), ["f1x1x5x4"]),
        ("interp_bicubic", f("interpolate", scale_factor=1.5, mode="bicubic"), ["f1x1x3x3"]),
        ("interp_linear", f("interpolate", scale_factor=2.5, mode="linear"), ["f1x2x3"]),
        ("interp_trilinear", f("interpolate", scale_factor=2, mode="trilinear"), ["f1x1x2x2x2"]),
        ("interp_area", f("interpolate", size=(2, 3), mode="area"), ["f1x1x4x5"]),
        ("interp_nearest_frac", f("interpolate", scale_factor=1.7), ["f1x1x3x3"]),
        (
            "interp_recompute",
            f("interpolate", scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
            ["f1x1x3x3"],
        ),
        ("interp_bad_mode", f("interpolate", scale_factor=2, mode="bilinear"), ["f1x2x3"]),
        ("upsample", f("upsample", scale_factor=2, mode="nearest"), ["f1x1x2x2"]),
        ("pad_const", f("pad", pad=(1, 2)), ["f2x3"]),
        ("pad_const_value", f("pad", pad=(1, 0, 0, 2), value=-1.5), ["f2x3"]),
        ("pad_negative", f("pad", pad=(-1, 1)), ["f2x3"]),
        ("pad_reflect", f("pad", pad=(2, 1), mode="reflect"), ["f1x2x4"]),
        ("pad_reflect_2d", f("pad", pad=(1, 1, 2, 0), mode="reflect"), ["f1x1x3x4"]),
        ("pad_replicate", f("pad", pad=(2, 1, 1, 1), mode="replicate"), ["f1x1x3x4"]),
        ("pad_circular", f("pad", pad=(1, 2), mode="circular"), ["f1x2x4"]),
        ("pad_reflect_too_big", f("pad", pad=(4, 0), mode="reflect"), ["f1x2x4"]),
        ("pad_odd", f("pad", pad=(1, 2, 3)), ["f2x3"]),
        ("pad_int", f("pad", pad=(1, 1), value=2), ["i2x3"]),
        (
            "batch_norm_train",
            fk("batch_norm", lambda m: {"running_mean": None, "running_var": None, "training": True}),
            ["f4x3"],
        ),
        (
            "batch_norm_eval",
            lambda m, x, w, b: m.nn.functional.batch_norm(x, m.zeros(3) + 0.1, m.ones(3) * 2, w, b),
            ["f4x3x2", "f3", "f3"],
        ),
        ("batch_norm_running", lambda m, x: _bn_running(m, x), ["f4x3"]),
        ("layer_norm", f("layer_norm", normalized_shape=(3,)), ["f4x3"]),
        (
            "layer_norm_affine",
            lambda m, x, w, b: m.nn.functional.layer_norm(x, (2, 3), w, b, eps=1e-3),
            ["f2x2x3", "f2x3", "f2x3"],
        ),
        ("layer_norm_int_shape", f("layer_norm", normalized_shape=3), ["f4x3"]),
        ("layer_norm_bad", f("layer_norm", normalized_shape=(4,)), ["f4x3"]),
        ("rms_norm", f("rms_norm", normalized_shape=(3,)), ["f4x3"]),
        ("group_norm", f("group_norm", num_groups=2), ["f2x4x3"]),
        ("group_norm_affine", lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w, b), ["f2x4x3", "f4", "f4"]),
        ("group_norm_bad", f("group_norm", num_groups=3), ["f2x4x3"]),
        ("instance_norm", f("instance_norm"), ["f2x3x4"]),
        ("local_response_norm", f("local_response_norm", size=2), ["f1x4x3"]),
        ("embedding", lambda m, i, w: m.nn.functional.embedding(i, w), [[[0, 2], [1, 0]], "f3x2"]),
        (
            "embedding_padding",
            lambda m, i, w: m.nn.functional.embedding(i, w, padding_idx=0),
            [[[0, 2], [1, 0]], "f3x2"],
        ),
        ("embedding_oob", lambda m, i, w: m.nn.functional.embedding(i, w), [[3], "f3x2"]),
        ("embedding_float_idx", lambda m, i, w: m.nn.functional.embedding(i, w), [[0.0], "f3x2"]),
        ("one_hot", lambda m, i: m.nn.functional.one_hot(i), [[0, 2, 1]]),
        ("one_hot_n", lambda m, i: m.nn.functional.one_hot(i, 4), [[[0, 2], [1, 3]]]),
        ("one_hot_bad", lambda m, i: m.nn.functional.one_hot(i, 2), [[0, 2]]),
        ("one_hot_float", lambda m, i: m.nn.functional.one_hot(i), [[0.0, 1.0]]),
        ("linear", f("linear"), ["f2x3", "f4x3", "f4"]),
        ("linear_nobias_1d", f("linear"), ["f3", "f4x3"]),
        ("linear_bad", f("linear"), ["f2x3", "f4x2"]),
        ("bilinear", f("bilinear"), ["f2x3", "f2x2", "f4x3x2", "f4"]),
        ("pixel_shuffle", f("pixel_shuffle", upscale_factor=2), ["f1x4x2x3"]),
        ("pixel_unshuffle", f("pixel_unshuffle", downscale_factor=2), ["f1x1x4x2"]),
        ("unfold", f("unfold", kernel_size=2, stride=1), ["f1x2x3x3"]),
        ("unfold_pad_dil", f("unfold", kernel_size=(2, 2), padding=1, dilation=2), ["f1x1x4x4"]),
        ("fold", f("fold", output_size=(3, 3), kernel_size=2), ["f1x8x4"]),
        ("affine_grid", f("affine_grid", size=(1, 1, 2, 3), align_corners=False), ["f1x2x3"]),
        ("grid_sample", f("grid_sample", align_corners=False), ["f1x1x3x3", "fu1x2x2x2"]),
        (
            "grid_sample_nearest_zeros",
            f("grid_sample", mode="nearest", padding_mode="border", align_corners=True),
            ["f1x1x3x3", "f1x2x2x2"],
        ),
        ("scaled_dot_product_attention", f("scaled_dot_product_attention"), ["f1x2x3x4", "f1x2x3x4", "f1x2x3x4"]),
        ("sdpa_causal", f("scaled_dot_product_attention", is_causal=True), ["f1x2x3x4", "f1x2x3x4", "f1x2x3x4"]),
        (
            "sdpa_bool_mask",
            lambda m, q, k, v, b: m.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=b),
            ["f1x3x4", "f1x3x4", "f1x3x4", "b3x3"],
        ),
        ("sdpa_scale", f("scaled_dot_product_attention", scale=0.3), ["f1x3x4", "f1x2x4", "f1x2x4"]),
    ]
    c += [(f"F.{n}", fn, s) for n, fn, s in conv]
    return c


def _bn_running(m, x):
    rm, rv = m.zeros(3), m.ones(3)
    y = m.nn.functional.batch_norm(x, rm, rv, training=True, momentum=0.3)
    return y, rm, rv


def _ops_cases():
    """tinygrad's test_ops, op by op: forward and backward on small shapes, 0-dim, one-element and empty
    ones, each argument's variants; errors by PyTorch's class."""
    c = []

    def f(name, **kw):
        return lambda m, *a: getattr(m.nn.functional, name)(*a, **kw)

    mm = [
        ("f3", "f3x2"),
        ("f2x3", "f3"),
        ("f4x2x3", "f3"),
        ("f3", "f4x3x2"),
        ("f2x1x3x4", "f5x4x2"),
        ("f1x3x4", "f2x4x2"),
        ("f0x3", "f3x2"),
        ("f2x0", "f0x3"),
        ("f1", "f1"),
        ("f2x3", "f4x2"),
        ("f", "f3"),
        ("f3", "f4"),
        ("h2x3", "h3x2"),
        ("d2x3", "d3x2"),
        ("h2x3", "f3x2"),
        ("b2x3", "b3x2"),
    ]
    for a, b in mm:
        c.append((f"ops.matmul[{a},{b}]", lambda m, x, y: m.matmul(x, y), [a, b]))
    c.append(("ops.matmul_op_T", lambda m, x, y: x.T @ y, ["f3x2", "f3x4"]))
    einsums = [
        ("i,i->", ["f3", "f3"]),
        ("i,i", ["f3", "f3"]),
        ("ij->ji", ["f2x3"]),
        ("ij->", ["f2x3"]),
        ("ij->j", ["f2x3"]),
        ("ii->i", ["f3x3"]),
        ("ii", ["f3x3"]),
        ("i,j->ij", ["f3", "f2"]),
        ("ij,jk->ik", ["f2x3", "f3x4"]),
        ("ij,kj->ik", ["f2x3", "f4x3"]),
        ("bij,bjk->bik", ["f2x2x3", "f2x3x2"]),
        ("...ij,...jk->...ik", ["f2x2x3", "f3x2"]),
        ("ij,ij->ij", ["f2x3", "f2x3"]),
        ("ijk->kji", ["f2x3x4"]),
        ("bhqd,bhkd->bhqk", ["f1x2x3x4", "f1x2x2x4"]),
        ("i,i,i->", ["f3", "f3", "f3"]),
        ("ij,jk,kl->il", ["f2x3", "f3x2", "f2x2"]),
        ("i j , j k -> i k", ["f2x3", "f3x4"]),
        ("ij,jk->ik", ["f2x3", "f4x4"]),
        ("ij->ik", ["f2x3"]),
        ("iij->j", ["f2x2x3"]),
    ]
    for eq, s in einsums:
        c.append((f"ops.einsum[{eq}]", lambda m, *t, eq=eq: m.einsum(eq, *t), s))
    c.append(("ops.einsum_list", lambda m, x, y: m.einsum("ij,jk", [x, y]), ["f2x3", "f3x2"]))
    for groups in (1, 2):
        for stride in (1, 2):
            for dilation in (1, 2):
                for padding in (0, 1, (2, 1)):
                    kw = dict(groups=groups, stride=stride, dilation=dilation, padding=padding)
                    label = ",".join(f"{k}={v}" for k, v in kw.items())
                    c.append((f"ops.conv2d({label})", f("conv2d", **kw), ["f2x4x5x6", f"f4x{4 // groups}x3x2", "f4"]))
        for stride, padding, output_padding, dilation in (
            (1, 0, 0, 1),
            (2, 0, 1, 1),
            (2, 1, 0, 1),
            (3, 1, 2, 1),
            (1, 1, 0, 2),
            (2, 2, 1, 2),
        ):
            kw = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)
            label = ",".join(f"{k}={v}" for k, v in kw.items())
            c.append(
                (
                    f"ops.conv_transpose2d({label})",
                    f("conv_transpose2d", **kw),
                    ["f2x4x3x4", f"f4x{4 // groups}x3x2", f"f{8 // groups}"],
                )
            )
        c.append(
            (
                f"ops.conv1d(groups={groups},padding=same)",
                f("conv1d", groups=groups, padding="same"),
                ["f2x4x5", f"f2x{4 // groups}x3"],
            )
        )
        c.append(
            (
                f"ops.conv_transpose1d(groups={groups})",
                f("conv_transpose1d", groups=groups, stride=2),
                ["f2x4x5", f"f4x{4 // groups}x3"],
            )
        )
    c.append(("ops.conv2d_padding_valid", f("conv2d", padding="valid"), ["f1x1x4x4", "f1x1x2x2"]))
    c.append(("ops.conv2d_padding_bad", f("conv2d", padding="full"), ["f1x1x4x4", "f1x1x2x2"]))
    c.append(("ops.conv2d_groups_bad", f("conv2d", groups=3), ["f1x4x4x4", "f2x2x3x3"]))
    c.append(("ops.conv2d_kernel_too_big", f("conv2d"), ["f1x1x2x2", "f1x1x3x3"]))
    c.append(("ops.conv2d_int", f("conv2d"), ["i1x1x3x3", "i1x1x2x2"]))
    for k, s, p, d, ceil in (
        (2, 1, 0, 1, False),
        (3, 2, 1, 1, True),
        (2, 2, 1, 2, True),
        (3, 1, 1, 2, False),
        ((2, 3), (1, 2), (1, 0), 1, True),
    ):
        kw = dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
        label = ",".join(f"{a}={b}" for a, b in kw.items())
        c.append((f"ops.max_pool2d({label})", f("max_pool2d", **kw), ["f2x2x5x6"]))
        c.append(
            (
                f"ops.max_pool1d({label})",
                f("max_pool1d", **kw) if not isinstance(k, tuple) else f("max_pool1d", kernel_size=2),
                ["f2x2x7"],
            )
        )
    for k, s, p, ceil, inc in (
        (2, 1, 0, False, True),
        (3, 2, 1, True, True),
        (3, 2, 1, True, False),
        (3, 2, 1, False, False),
        ((2, 3), (2, 1), (1, 1), True, False),
    ):
        kw = dict(kernel_size=k, stride=s, padding=p, ceil_mode=ceil, count_include_pad=inc)
        label = ",".join(f"{a}={b}" for a, b in kw.items())
        c.append((f"ops.avg_pool2d({label})", f("avg_pool2d", **kw), ["f2x2x5x6"]))
        if not isinstance(k, tuple):
            c.append((f"ops.avg_pool1d({label})", f("avg_pool1d", **kw), ["f2x2x7"]))
    c.append(("ops.max_pool2d_nan", f("max_pool2d", kernel_size=2), ["fs1x3x4"]))
    c.append(("ops.max_pool2d_empty_batch", f("max_pool2d", kernel_size=2), ["f0x1x4x4"]))
    c.append(("ops.max_pool2d_int", f("max_pool2d", kernel_size=2), ["i1x1x4x4"]))
    c.append(("ops.max_pool2d_pad_too_big", f("max_pool2d", kernel_size=3, padding=2), ["f1x1x5x5"]))
    c.append(
        ("ops.max_pool3d_ceil_pad", f("max_pool3d", kernel_size=2, stride=2, padding=1, ceil_mode=True), ["f1x1x3x4x5"])
    )
    c.append(
        (
            "ops.avg_pool3d_pad",
            f("avg_pool3d", kernel_size=3, stride=2, padding=1, count_include_pad=False),
            ["f1x1x3x4x5"],
        )
    )
    c.append(("ops.avg_pool2d_int", f("avg_pool2d", kernel_size=2), ["i1x1x4x4"]))
    c.append(
        (
            "ops.max_unpool2d",
            lambda m, x: m.nn.functional.max_unpool2d(*m.nn.functional.max_pool2d(x, 2, return_indices=True), 2),
            ["f1x1x4x4"],
        )
    )
    c.append(("ops.adaptive_avg_pool2d_1", f("adaptive_avg_pool2d", output_size=1), ["f2x3x4x5"]))
    c.append(("ops.adaptive_max_pool2d_up", f("adaptive_max_pool2d", output_size=(5, 7)), ["f1x1x3x4"]))
    for mode, spec, pads in (
        ("constant", "f2x3x4", (1, 2, -1, 1)),
        ("reflect", "f2x3x4", (3, 3)),
        ("reflect", "f1x2x3x4", (1, 2, 2, 1)),
        ("reflect", "f1x1x3x3x4", (1, 1, 1, 1, 2, 1)),
        ("replicate", "f2x3x4", (3, 0)),
        ("replicate", "f1x2x3x4", (2, 1, 0, 3)),
        ("replicate", "f1x1x3x3x4", (1, 0, 2, 1, 1, 1)),
        ("circular", "f2x3x4", (4, 1)),
        ("circular", "f1x2x3x4", (1, 2, 3, 0)),
        ("circular", "f1x1x2x3x4", (1, 1, 1, 2, 1, 0)),
        ("circular", "f1x2x3x4", (-1, 1, 0, 1)),
        ("reflect", "f2x3", (1, 1)),
        ("replicate", "f3", (1, 1)),
        ("constant", "f", ()),
        ("constant", "f0x3", (1, 1)),
        ("reflect", "f1x0x3", (1, 1)),
    ):
        c.append((f"ops.pad[{mode},{spec},{pads}]", f("pad", pad=pads, mode=mode), [spec]))
    for dim in (-3, -2, -1, 0, 1, 2, 3):
        for name in ("softmax", "log_softmax"):
            c.append((f"ops.{name}(dim={dim})", f(name, dim=dim), ["f2x3x4"]))
    for name in ("softmax", "log_softmax"):
        c.append((f"ops.{name}_0d", f(name, dim=0), ["f"]))
        c.append((f"ops.{name}_0d_dim1", f(name, dim=1), ["f"]))
        c.append((f"ops.{name}_empty", f(name, dim=1), ["f0x3"]))
        c.append((f"ops.{name}_empty_dim0", f(name, dim=0), ["f0x3"]))
        c.append(
            (f"ops.{name}_dtype", lambda m, x, n=name: getattr(m.nn.functional, n)(x, 1, dtype=m.float64), ["f2x3"])
        )
        c.append((f"ops.{name}_int", f(name, dim=1), ["i2x3"]))
        c.append((f"ops.{name}_inf", f(name, dim=0), ["fs12"]))
        c.append((f"ops.{name}.method", lambda m, x, n=name: getattr(x, n)(-1), ["f2x3"]))
        c.append((f"ops.{name}.torch", lambda m, x, n=name: getattr(m, n)(x, 0), ["f2x3"]))
    for name in ("std", "var"):
        for spec in ("f2x3x4", "f1", "f", "f0x3", "f1x3"):
            for kw in (
                {},
                {"correction": 0},
                {"correction": 2},
                {"dim": 0},
                {"dim": -1, "correction": 3},
                {"dim": (0, 1), "keepdim": True},
            ):
                label = ",".join(f"{a}={b}" for a, b in kw.items())
                c.append((f"ops.{name}({label})[{spec}]", lambda m, x, n=name, kw=kw: getattr(m, n)(x, **kw), [spec]))
        c.append((f"ops.{name}_unbiased_positional", lambda m, x, n=name: getattr(m, n)(x, 1, False), ["f2x3"]))
        c.append((f"ops.{name}_int", lambda m, x, n=name: getattr(m, n)(x), ["i2x3"]))
        c.append((f"ops.{name}_correction_float", lambda m, x, n=name: getattr(m, n)(x, correction=0.5), ["f2x3"]))
        c.append((f"ops.{name}_both", lambda m, x, n=name: getattr(m, n)(x, unbiased=True, correction=1), ["f2x3"]))
    for spec in ("f", "f0x3", "f1", "f2x3"):
        for name, kw in (
            ("cumsum", {"dim": 0}),
            ("cumprod", {"dim": -1}),
            ("logcumsumexp", {"dim": 0}),
            ("cummax", {"dim": 0}),
        ):
            c.append((f"ops.{name}[{spec}]", lambda m, x, n=name, kw=kw: getattr(m, n)(x, **kw), [spec]))
        c.append((f"ops.sort[{spec}]", lambda m, x: m.sort(x, -1, descending=True), [spec]))
        c.append((f"ops.argsort[{spec}]", lambda m, x: m.argsort(x, 0), [spec]))
    c.append(("ops.cumsum_int", lambda m, x: m.cumsum(x, 1), ["i2x3"]))
    c.append(("ops.median_all_ties", lambda m, x: m.median(x.clamp(0, 1)), ["f2x3"]))
    c.append(("ops.nanmedian_all_ties", lambda m, x: m.nanmedian(x.round().abs()), ["f2x3"]))
    c.append(("ops.median_all_int", lambda m, x: m.median(x), ["i2x3"]))
    c.append(("ops.cumsum_bool", lambda m, x: m.cumsum(x, 0), ["b2x3"]))
    c.append(("ops.cumsum_bad_dim", lambda m, x: m.cumsum(x, 2), ["f2x3"]))
    c.append(("ops.cumsum_no_dim", lambda m, x: m.cumsum(x), ["f2x3"]))
    c.append(("ops.sort_stable_float", lambda m, x: m.sort(x * 0, stable=True, dim=0), ["f3x2"]))
    for _n, (spec, kw) in enumerate(
        (
            ("f1x2x4", {"size": 7, "mode": "linear"}),
            ("f1x2x4", {"size": 3, "mode": "linear", "align_corners": True}),
            ("f1x2x4", {"scale_factor": 0.5, "mode": "nearest"}),
            ("f1x2x4", {"size": 6, "mode": "nearest-exact"}),
            ("f1x2x4", {"size": 3, "mode": "area"}),
            ("f1x1x3x4", {"size": (5, 2), "mode": "bilinear", "align_corners": False}),
            ("f1x1x3x4", {"size": (5, 2), "mode": "bicubic", "align_corners": True}),
            ("f1x1x3x4", {"scale_factor": (2, 0.5), "mode": "nearest"}),
            ("f1x1x3x4", {"scale_factor": 3, "mode": "bicubic", "align_corners": False}),
            ("f1x1x3x4", {"size": 1, "mode": "bilinear", "align_corners": True}),
            ("f1x1x2x3x2", {"size": (3, 2, 4), "mode": "trilinear", "align_corners": True}),
            ("f1x1x2x3x2", {"scale_factor": 2, "mode": "nearest-exact"}),
            ("f1x1x2x3x2", {"size": (1, 2, 1), "mode": "area"}),
            ("f1x1x3x4", {"size": (2, 3), "mode": "bicubic", "antialias": True}),
            ("f1x1x3x4", {"size": (2, 3), "scale_factor": 2}),
            ("f1x1x3x4", {}),
            ("f1x1x3x4", {"size": (2, 3), "mode": "nearest", "align_corners": True}),
            ("f1x1x3x4", {"size": (2, 3, 4)}),
            ("f1x1x3x4", {"size": (6, 8), "mode": "linear"}),
            ("i1x1x3x4", {"size": (6, 8)}),
            ("h1x1x3x4", {"size": (5, 6), "mode": "bilinear"}),
            ("d1x1x3x4", {"size": (5, 6), "mode": "bicubic"}),
        )
    ):
        label = ",".join(f"{a}={b}" for a, b in kw.items())
        c.append((f"ops.interpolate({label})[{spec}]", f("interpolate", **kw), [spec]))
    t = [0, 2, 1, 2]
    for ls in (0.0, 0.25):
        for ii in (-100, 1):
            for weighted in (False, True):
                for red in ("mean", "sum", "none"):
                    label = f"ls={ls},ignore={ii},weight={weighted},{red}"

                    def ce(m, x, y, ls=ls, ii=ii, weighted=weighted, red=red):
                        w = m.tensor([0.5, 2.0, 1.5]) if weighted else None
                        return m.nn.functional.cross_entropy(
                            x, y, weight=w, ignore_index=ii, reduction=red, label_smoothing=ls
                        )

                    c.append((f"ops.cross_entropy({label})", ce, ["f4x3", t]))
        for weighted in (False, True):

            def ce_p(m, x, y, ls=ls, weighted=weighted):
                w = m.tensor([0.5, 2.0, 1.5]) if weighted else None
                return m.nn.functional.cross_entropy(x, y, weight=w, label_smoothing=ls)

            c.append((f"ops.cross_entropy_probs(ls={ls},weight={weighted})", ce_p, ["f4x3", "Fp4x3"]))
    c.append(
        (
            "ops.cross_entropy_nd_weight",
            lambda m, x, y: m.nn.functional.cross_entropy(
                x, y, weight=m.tensor([1.0, 3.0, 0.5]), ignore_index=0, label_smoothing=0.1
            ),
            ["f2x3x2x2", [[[0, 1], [2, 2]], [[1, 0], [0, 2]]]],
        )
    )
    c.append(("ops.cross_entropy_empty", f("cross_entropy"), ["f0x3", []]))
    c.append(("ops.cross_entropy_bad_ls", f("cross_entropy", label_smoothing=1.5), ["f4x3", t]))
    c.append(
        (
            "ops.cross_entropy_bad_weight",
            lambda m, x, y: m.nn.functional.cross_entropy(x, y, weight=m.tensor([1.0, 2.0])),
            ["f4x3", t],
        )
    )
    c.append(("ops.cross_entropy_h", f("cross_entropy"), ["h4x3", t]))
    c.append(("ops.cross_entropy_d_ls", f("cross_entropy", label_smoothing=0.3), ["d4x3", t]))
    c.append(("ops.nll_loss_nd", f("nll_loss", reduction="none"), ["f2x3x2", [[0, 1], [2, 2]]]))
    c.append(("ops.nll_loss_ignore_all_sum", f("nll_loss", reduction="sum", ignore_index=2), ["f2x3", [2, 2]]))
    loss2 = [
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "soft_margin_loss",
        "kl_div",
        "poisson_nll_loss",
    ]
    for name in loss2:
        for red in ("mean", "sum", "none"):
            c.append((f"ops.{name}({red})", f(name, reduction=red), ["f2x3", "f2x3"]))
        c.append((f"ops.{name}[empty]", f(name), ["f0x3", "f0x3"]))
        c.append((f"ops.{name}[0d]", f(name), ["f", "f"]))
        c.append((f"ops.{name}[bad_shape]", f(name), ["f2x3", "f2x4"]))
    for red in ("mean", "sum", "none"):
        c.append((f"ops.bce({red})", f("binary_cross_entropy", reduction=red), ["fp2x3", "fp2x3"]))
        c.append((f"ops.bce_logits({red})", f("binary_cross_entropy_with_logits", reduction=red), ["f2x3", "fp2x3"]))
        c.append(
            (
                f"ops.margin_ranking({red})",
                f("margin_ranking_loss", reduction=red),
                ["f4", "f4", [1.0, -1.0, 1.0, -1.0]],
            )
        )
        c.append(
            (
                f"ops.hinge_embedding({red})",
                f("hinge_embedding_loss", margin=0.5, reduction=red),
                ["f2x3", [[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]]],
            )
        )
        c.append(
            (
                f"ops.cosine_embedding({red})",
                f("cosine_embedding_loss", margin=0.2, reduction=red),
                ["f2x3", "f2x3", [1.0, -1.0]],
            )
        )
        c.append(
            (
                f"ops.triplet({red})",
                f("triplet_margin_loss", margin=0.5, p=1, swap=True, reduction=red),
                ["f2x3", "f2x3", "f2x3"],
            )
        )
        c.append((f"ops.multi_margin({red})", f("multi_margin_loss", p=2, margin=0.5, reduction=red), ["f2x3", [1, 2]]))
        c.append(
            (
                f"ops.multilabel_soft_margin({red})",
                f("multilabel_soft_margin_loss", reduction=red),
                ["f2x3", [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]],
            )
        )
        c.append(
            (f"ops.gaussian_nll({red})", f("gaussian_nll_loss", full=True, reduction=red), ["f2x3", "f2x3", "f+2x3"])
        )
        c.append((f"ops.nll({red})", f("nll_loss", reduction=red), ["f4x3", t]))
    c.append(
        (
            "ops.bce_logits_weight_posw",
            lambda m, x, y: m.nn.functional.binary_cross_entropy_with_logits(
                x, y, weight=m.tensor([1.0, 0.0, 2.0]), pos_weight=m.tensor([2.0, 1.0, 0.5])
            ),
            ["f2x3", "fp2x3"],
        )
    )
    c.append(("ops.bce_logits_extreme", f("binary_cross_entropy_with_logits"), ["fs12", "fp12"]))
    c.append(("ops.bce_zero_one", f("binary_cross_entropy"), [[0.0, 1.0, 0.5], [0.0, 1.0, 1.0]]))
    c.append(("ops.huber_delta", f("huber_loss", delta=2.0, reduction="sum"), ["f2x3", "f2x3"]))
    c.append(("ops.smooth_l1_beta", f("smooth_l1_loss", beta=2.0), ["f2x3", "f2x3"]))
    c.append(("ops.kl_div_log_target", f("kl_div", reduction="batchmean", log_target=True), ["f2x3", "f2x3"]))
    c.append(("ops.l1_int", f("l1_loss"), ["i2x3", "i2x3"]))
    c.append(("ops.mse_bcast_warn", f("mse_loss"), ["f2x3", "f1x3"]))
    c.append(
        (
            "ops.ctc",
            lambda m, lp, tg: m.nn.functional.ctc_loss(lp.log_softmax(2), tg, [4, 4], [2, 1]),
            ["f4x2x3", [[1, 2], [1, 0]]],
        )
    )

    def setitem(fn):
        def run(m, x, *rest):
            y = x.clone()
            fn(m, y, *rest)
            return y

        return run

    c.append(("ops.setitem_neg_step", setitem(lambda m, y: y.__setitem__(slice(None, None, -1), 0.0)), ["f4x3"]))
    c.append(("ops.getitem_neg_step_col", lambda m, x: x[:, ::-2], ["f4x3"]))
    c.append(("ops.setitem_step2", setitem(lambda m, y: y.__setitem__((slice(None, None, 2), 1), 5.0)), ["f4x3"]))
    c.append(("ops.setitem_broadcast_bad", setitem(lambda m, y: y.__setitem__(slice(0, 2), m.zeros(3, 3))), ["f4x3"]))
    c.append(("ops.setitem_0d", setitem(lambda m, y: y.__setitem__((), 2.0)), ["f"]))
    c.append(("ops.setitem_full_slice", setitem(lambda m, y: y.__setitem__(slice(None), 2.0)), ["f4x3"]))
    c.append(("ops.setitem_empty", setitem(lambda m, y: y.__setitem__(slice(0, 0), 1.0)), ["f4x3"]))
    c.append(("ops.setitem_bool_0d", setitem(lambda m, y: y.__setitem__(y > 10, 1.0)), ["f"]))
    c.append(
        (
            "ops.setitem_neg_index_list",
            setitem(lambda m, y: y.__setitem__([-1, 0], m.tensor([1.0, 2.0, 3.0]))),
            ["f4x3"],
        )
    )
    for a, b in (("f2x3", "f2x4"), ("f2x3", "f3x3"), ("f3", "f4"), ("f2x1x3", "f4x3x2"), ("f0", "f2")):
        c.append((f"ops.broadcast_error.add[{a},{b}]", lambda m, x, y: x + y, [a, b]))
        c.append((f"ops.broadcast_error.where[{a},{b}]", lambda m, x, y: m.where(x > 0, x, y), [a, b]))
    c.append(("ops.broadcast_shapes_bad", lambda m: m.broadcast_shapes((2, 3), (3, 2)), []))
    c.append(("ops.broadcast_shapes", lambda m: m.broadcast_shapes((2, 1), (1, 3), (3,)), []))
    c.append(("ops.broadcast_to_bad", lambda m, x: m.broadcast_to(x, (3, 3)), ["f2x3"]))
    c.append(("ops.add_inplace_bcast_bad", lambda m, x, y: x.clone().add_(y), ["f3", "f2x3"]))
    for dim in (0, 1, -1):
        c.append((f"ops.gather(dim={dim})", lambda m, x, i, d=dim: m.gather(x, d, i), ["f3x4", [[0, 2], [1, 1]]]))
        c.append(
            (
                f"ops.scatter(dim={dim})",
                lambda m, x, i, s, d=dim: m.scatter(x, d, i, s),
                ["f3x4", [[0, 2], [1, 0]], "f2x2"],
            )
        )
        c.append(
            (
                f"ops.scatter_add(dim={dim})",
                lambda m, x, i, s, d=dim: m.scatter_add(x, d, i, s),
                ["f3x4", [[0, 0], [1, 0]], "f2x2"],
            )
        )
    c.append(("ops.gather_empty_index", lambda m, x: m.gather(x, 1, m.zeros(2, 0, dtype=m.int64)), ["f2x3"]))
    c.append(("ops.gather_0d", lambda m, x, i: m.gather(x, 0, i), ["f", 0]))
    c.append(("ops.gather_float_index", lambda m, x: m.gather(x, 1, m.zeros(2, 1)), ["f2x3"]))
    c.append(("ops.gather_neg_index", lambda m, x: m.gather(x, 1, m.tensor([[-1], [0]])), ["f2x3"]))
    c.append(("ops.gather_big_index_shape", lambda m, x: m.gather(x, 1, m.zeros(3, 1, dtype=m.int64)), ["f2x3"]))
    c.append(
        (
            "ops.scatter_reduce_amin",
            lambda m, x, i, s: x.scatter_reduce(1, i, s, "amin"),
            ["f2x3", [[0, 0], [2, 2]], "f2x2"],
        )
    )
    c.append(
        (
            "ops.scatter_reduce_mean_noself",
            lambda m, x, i, s: x.scatter_reduce(1, i, s, "mean", include_self=False),
            ["F2x3", [[0, 0], [2, 1]], "F2x2"],
        )
    )
    c.append(("ops.scatter_bad_reduce", lambda m, x, i: x.scatter(1, i, 2.0, reduce="max"), ["f2x3", [[0, 0]]]))
    # names PyTorch has that vkml lacked (tools/api_coverage.py)
    c.append(("ops.nonzero_static", lambda m, x: m.nonzero_static(x, size=8), ["i2x3"]))
    c.append(("ops.nonzero_static_fewer", lambda m, x: x.nonzero_static(size=2, fill_value=7), ["i2x3"]))
    c.append(("ops.nonzero_static_0d", lambda m, x: m.nonzero_static(x, size=2), ["f"]))
    c.append(("ops.nonzero_static_neg", lambda m, x: m.nonzero_static(x, size=-1), ["i2x3"]))
    c.append(("ops.nonzero_static_float_fill", lambda m, x: m.nonzero_static(x, size=2, fill_value=0.5), ["i2x3"]))
    c.append(("ops.Tensor.cov", lambda m, x: x.cov(correction=0), ["f2x3"]))
    c.append(("ops.Tensor.corrcoef", lambda m, x: x.corrcoef(), ["f2x3"]))
    c.append(("ops.Tensor.is_backend", lambda m, x: (x.is_meta, x.is_mps, x.is_xpu, x.is_xla), ["f2x3"]))
    return c


PROMOTION_DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def _promotion_cases():
    """PyTorch's promotion tables, the way its test_type_promotion checks them: promote_types and can_cast
    for every pair of dtypes; result_type and the dtype of ``+``, ``/`` and where for a tensor with dims
    or a 0-dim one against another or a Python bool/int/float/complex. Only dtypes are compared (no
    kernel runs), so the default run takes them all in one test (test_promotion_tables)."""

    def z(m, name, shape):
        return m.zeros(shape, dtype=getattr(m, name))

    ops = {
        "result_type": lambda m, x, y: m.result_type(x, y),
        "add": lambda m, x, y: (x + y).dtype,
        "div": lambda m, x, y: (x / y).dtype,
        "where": lambda m, x, y: m.where(m.zeros((), dtype=m.bool), x, y).dtype,
    }
    c = []
    for a in PROMOTION_DTYPES:
        for b in PROMOTION_DTYPES:
            c.append((f"promote_types[{a},{b}]", lambda m, a=a, b=b: m.promote_types(getattr(m, a), getattr(m, b)), []))
            c.append((f"can_cast[{a},{b}]", lambda m, a=a, b=b: m.can_cast(getattr(m, a), getattr(m, b)), []))
        others = [(b, s) for b in PROMOTION_DTYPES for s in ((), (3,))] + [(v, None) for v in (True, 2, 2.5, 1j)]
        for sa in ((3,), ()):
            for b, sb in others:
                what = f"{b}{list(sb)}" if sb is not None else repr(b)
                for n, op in ops.items():
                    if sb is None:
                        fn = lambda m, a=a, sa=sa, b=b, op=op: op(m, z(m, a, sa), b)  # noqa: E731
                    else:
                        fn = lambda m, a=a, sa=sa, b=b, sb=sb, op=op: op(m, z(m, a, sa), z(m, b, sb))  # noqa: E731
                    c.append((f"promote.{n}[{a}{list(sa)},{what}]", fn, []))
    return c


CASES = _unary_cases() + _binary_cases() + _operator_cases() + _reduce_cases() + _index_cases() + _shape_cases()
CASES += _sort_cases() + _nn_cases() + _ops_cases()
# dtype-only and cheap: all run by test_promotion_tables, not collected one by one
PROMOTION = _promotion_cases()

# Differences the sweep still finds, each with why (tests/test_peer_sweep.py's stress run expects them
# to fail, strictly: one that starts to pass must leave this table). docs/peer_sweep.md lists them.
KNOWN = {
    # sign(NaN) is NaN in vkml, 0.0 in PyTorch (a documented divergence, docs/ops/sign.md); abs's and norm(p=1)'s gradients at NaN follow it
    "abs[fs12]": "SIGN_NAN",
    "abs_[fs12]": "SIGN_NAN",
    "norm(p=1)[fs12]": "SIGN_NAN",
    "sgn[fs12]": "SIGN_NAN",
    "sign[fs12]": "SIGN_NAN",
    # a float16 gradient (tanhshrink: output) rounded step by step where PyTorch's kernel rounds once: beyond assert_close's float16 tolerance
    "F.gelu(approximate=tanh)[h2x3]": "HALF_ROUNDING",
    "F.log_softmax(dim=0)[h2x3]": "HALF_ROUNDING",
    "F.mish()[h2x3]": "HALF_ROUNDING",
    "F.softmin(dim=-1)[h2x3]": "HALF_ROUNDING",
    "F.tanh()[h2x3]": "HALF_ROUNDING",
    "F.tanhshrink()[h2x3]": "HALF_ROUNDING",
    "ops.cross_entropy_h": "HALF_ROUNDING",
    "div[h2x3,f]": "HALF_ROUNDING",
    "floor_divide[h2x3,f2x3]": "HALF_ROUNDING",
    "floor_divide[h2x3,f]": "HALF_ROUNDING",
    "hypot[h2x3,f]": "HALF_ROUNDING",
    "ldexp[h2x3,f]": "HALF_ROUNDING",
    "pow[h2x3,f2x3]": "HALF_ROUNDING",
    "tanh[h2x3]": "HALF_ROUNDING",
    "true_divide[h2x3,f]": "HALF_ROUNDING",
    "xlogy[h2x3,f]": "HALF_ROUNDING",
    # PyTorch's backward raises (derivative not implemented); vkml differentiates (zeros or the floor rule): a documented divergence, docs/ops/floor_divide.md, heaviside.md, remainder.md
    "floor_divide.method[f2x3,2.5]": "TORCH_NO_DERIVATIVE",
    "floor_divide.method[f2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "floor_divide[T3x2,f2x3]": "TORCH_NO_DERIVATIVE",
    "floor_divide[d2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "floor_divide[f2x1,f1x3]": "TORCH_NO_DERIVATIVE",
    "floor_divide[f2x3,2.5]": "TORCH_NO_DERIVATIVE",
    "floor_divide[f2x3,2]": "TORCH_NO_DERIVATIVE",
    "floor_divide[f2x3,True]": "TORCH_NO_DERIVATIVE",
    "floor_divide[f2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "floor_divide[f2x3,f3]": "TORCH_NO_DERIVATIVE",
    "floor_divide[f2x3,f]": "TORCH_NO_DERIVATIVE",
    "floor_divide[fs12,fs12]": "TORCH_NO_DERIVATIVE",
    "floor_divide[i2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "floor_divide_[f2x3,2.5]": "TORCH_NO_DERIVATIVE",
    "floor_divide_[f2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "heaviside.method[f2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "heaviside[T3x2,f2x3]": "TORCH_NO_DERIVATIVE",
    "heaviside[f2x1,f1x3]": "TORCH_NO_DERIVATIVE",
    "heaviside[f2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "heaviside[f2x3,f3]": "TORCH_NO_DERIVATIVE",
    "heaviside[f2x3,f]": "TORCH_NO_DERIVATIVE",
    "heaviside[fs12,fs12]": "TORCH_NO_DERIVATIVE",
    "heaviside_[f2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "op//[f2x3,3]": "TORCH_NO_DERIVATIVE",
    "op//[f2x3,f2x3]": "TORCH_NO_DERIVATIVE",
    "rop%[3,f2x3]": "TORCH_NO_DERIVATIVE",
    "rop//[3,f2x3]": "TORCH_NO_DERIVATIVE",
    # an in-place logical op on a float tensor that requires grad: PyTorch records nothing (the gradient passes through), vkml gives zeros: a documented divergence, docs/ops/logical_and.md
    "logical_and_[f2x3,f2x3]": "INPLACE_BOOL_RESULT",
    "logical_or_[f2x3,f2x3]": "INPLACE_BOOL_RESULT",
    "logical_xor_[f2x3,f2x3]": "INPLACE_BOOL_RESULT",
    # PyTorch's gradient formula gives another value at NaN, inf or zeros (its own arithmetic quirks)
    "cumprod(dim=-1)[fs12]": "NAN_INF_GRAD_FORMULA",
    "cumprod(dim=0)[fs12]": "NAN_INF_GRAD_FORMULA",
    "ops.var(dim=-1,correction=3)[f1]": "NAN_INF_GRAD_FORMULA",  # PyTorch: 2/(N - correction)·(x - mean)
    "ops.var(dim=-1,correction=3)[f1x3]": "NAN_INF_GRAD_FORMULA",
    # gelu(+-inf) is NaN in PyTorch (path-dependent), +-inf or 0 in vkml: a documented divergence, docs/ops/gelu.md
    "F.gelu()[fs12]": "GELU_INF",
    "F.gelu(approximate=tanh)[fs12]": "GELU_INF",
    # clone keeps a transposed layout's strides in PyTorch (vkml's clone of a transposed view is row-major: docs/interop.md, Memory formats)
    "clone_T": "LAYOUT_GRAD_NONE",
}
# vkml has no complex32 (docs/complex.md: refused with a RuntimeError): a float16 operand with a complex one
# where PyTorch's promotion gives complex32
KNOWN.update(
    {
        name: "NO_COMPLEX32"
        for name, _, _ in PROMOTION
        if name.startswith("promote.")
        and ("float16[3]" in name or "float16[],1j" in name)
        and "bfloat16" not in name
        and ("complex" in name or "1j" in name)
        and not any(f"{c}[3]" in name for c in ("complex64", "complex128"))
    }
)
KNOWN["ops.interpolate(size=(5, 6),mode=bicubic)[d1x1x3x4]"] = "F64_INTERP_WEIGHTS"
REASONS = {
    "F64_INTERP_WEIGHTS": "float64 interpolate uses float32 source indices and weights, PyTorch float64 ones "
    "(a documented divergence, docs/ops/interpolate.md)",
    "NO_COMPLEX32": "vkml has no complex32 (docs/complex.md): refused with a RuntimeError where PyTorch promotes "
    "float16 and complex to complex32",
    "SIGN_NAN": "sign(NaN) is NaN in vkml, 0.0 in PyTorch (a documented divergence, docs/ops/sign.md); abs's and norm(p=1)'s gradients at NaN follow it",
    "HALF_ROUNDING": "a float16 gradient (tanhshrink: output) rounded step by step where PyTorch's kernel rounds once: beyond assert_close's float16 tolerance",
    "TORCH_NO_DERIVATIVE": "PyTorch's backward raises (derivative not implemented); vkml differentiates (zeros or the floor rule): a documented divergence, docs/ops/floor_divide.md, heaviside.md, remainder.md",
    "INPLACE_BOOL_RESULT": "an in-place logical op on a float tensor that requires grad: PyTorch records nothing (the gradient passes through), vkml gives zeros: a documented divergence, docs/ops/logical_and.md",
    "NAN_INF_GRAD_FORMULA": "PyTorch's gradient formula gives another value at NaN, inf or zeros (its own arithmetic quirks)",
    "GELU_INF": "gelu(+-inf) is NaN in PyTorch (path-dependent), +-inf or 0 in vkml: a documented divergence, docs/ops/gelu.md",
    "LAYOUT_GRAD_NONE": "clone keeps a transposed layout's strides in PyTorch (vkml's clone of a transposed view is row-major: docs/interop.md, Memory formats)",
}


# What the sweep found and vkml fixed (each failed before its fix): run by default
FIXED = [
    "abs[f]",  # a 0-d operand throughout (the harness's own first finding)
    "xlogy[f2x3,2]",  # the gradient with a Python number as other
    "xlogy.method[f2x3,2.5]",
    "F.hardtanh(min_val=-0.5,max_val=1.0)[fs12]",  # a NaN input passes the gradient on
    "F.relu6()[fs12]",
    "F.elu(alpha=0.5)[fs12]",
    "F.selu()[fs12]",
    "max()[fs12]",  # max() of all: the gradient goes to the NaNs
    "min()[fs12]",
    "amax()[fs12]",  # amax: PyTorch's (g / count) * hit, NaN everywhere for a NaN result
    "amin(dim=0)[fs12]",
    "std_constant_rows",  # std 0: gradient 0, not NaN
    "std_mean_constant",
    "std(dim=0,unbiased=False)[f]",
    "nextafter[h2x3,f2x3]",  # operands promote
    "nextafter[i2x3,f2x3]",
    "nextafter[i2x3,i+2x3]",
    "gcd[b2x3,i2x3]",  # bool with int is an int gcd
    "lcm[b2x3,i2x3]",
    "positive[b2x3]",  # RuntimeError
    "hypot[i2x3,i+2x3]",  # NotImplementedError for an int dtype an op has no kernel for
    "logaddexp[j2x3,i]",
    "signbit.out[f2x3]",  # a non-bool out= is PyTorch's RuntimeError
    "isposinf.out[i2x3]",
    "float_power.out[f2x3,f2x3]",  # float_power's out= must be float64
    "F.gelu_int",  # gelu, softplus, glu of an int tensor: NotImplementedError
    "F.softplus_int",
    "F.glu_int",
    "F.hardtanh_int",  # hardtanh and relu6 clamp an int tensor in its dtype
    "F.hardtanh_int_",
    "F.relu6_uint8",
    "F.softsign_int",  # softsign and tanhshrink promote an int tensor
    "F.tanhshrink_int",
    "sum(dim=1,dtype=int32)[f2x3x4]",  # an int dtype= of an input that requires grad: RuntimeError
    "norm(p=0)[f2x3x4]",  # norm(p=0): requires grad, gradient None (PyTorch)
    "cumsum_",  # in-place forms PyTorch has: cumsum_, cumprod_, addmm_, addmv_, baddbmm_, fill_diagonal_
    "addmm_",
    "fill_diagonal_wrap",
    "fill_diagonal_3d",
    "fill_diagonal_unequal",
    "fmax_[f2x3,f2x3]",  # PyTorch has no Tensor.fmax_/fmin_ (AttributeError)
    "fmin_[i2x3,2.5]",
    "F.layer_norm_int_shape",  # an int normalized_shape: PyTorch's TypeError
    "F.grid_sample_nearest_zeros",  # grid's gradient in nearest mode: zeros, not None
    "cat_empty_1d",  # a skipped legacy empty operand's gradient: empty, not None
    "ops.setitem_0d",  # a write through a view covering the whole tensor: the old history's gradient is 0
    "ops.setitem_full_slice",
    "ops.kl_div(sum)",  # the target's gradient: PyTorch's xlogy formula (NaN at target <= 0)
    "ops.soft_margin_loss[0d]",  # a target that requires grad: PyTorch's RuntimeError
    "ops.gather_float_index",  # a float index: RuntimeError (DTypeError), not a plain TypeError
    "ops.interpolate(size=(6, 8))[i1x1x3x4]",  # an int64 input: NotImplementedError, as PyTorch's kernels
    "ops.avg_pool2d_int",  # int64: averaged in int64, truncated (PyTorch's CPU kernel)
    "angle[fs12]",  # angle of a real tensor: NaN stays, +inf and -0.0 give +0, gradient 0 at NaN
    "eq_[f2x3,f2x3]",  # an in-place comparison: every operand that requires grad gets a zero gradient
    "ops.nonzero_static_fewer",  # names PyTorch has: nonzero_static, Tensor.cov/corrcoef, Tensor.is_meta, ...
    "ops.nonzero_static_neg",
    "ops.Tensor.is_backend",
    "logaddexp[fs12,fs12]",  # PyTorch's g / (1 + exp(other - input)): huge equal operands get g/2 each
    "logaddexp2[h2x3,f]",
    "F.softsign()[fs12]",  # PyTorch's step-by-step formula: NaN at +-inf
    "sinc[fs12]",  # sinc and atan2: 0 where PyTorch's denominator is 0 (x*x underflows), not NaN
    "atan2[fs12,fs12]",
    "prod(dim=0)[fs12]",  # prod's gradient with zeros: NaN where a NaN or inf is among the others
    "ops.median_all_ties",  # median()/nanmedian() of all: ties share the gradient evenly
    "ops.nanmedian_all_ties",
]
_BY_NAME = {name: (name, fn, s) for name, fn, s in CASES}
# gradient rules of vkml.ops.grads.RULES whose cases are here (FIXED runs them by default)
GRAD_TESTED = {"extreme_of_all", "std_of_var", "nextafter", "norm_zero"}
SAMPLE = 199  # and every SAMPLE-th case of the rest, for breadth


def _params(cases):
    return [pytest.param(fn, s, id=name) for name, fn, s in cases]


@pytest.mark.parametrize(
    ("fn", "specs"), _params([_BY_NAME[n] for n in FIXED] + [c for c in CASES[::SAMPLE] if c[0] not in KNOWN])
)
def test_matches_torch(request, fn, specs):
    check(request.node.callspec.id, fn, specs)


def test_promotion_tables():
    """Every promotion case at once (dtypes only, no kernel runs: about a second). Before the fixes:
    can_cast to and from complex, promote_types of uint16/32/64 with complex, a bfloat16 tensor with a
    complex number, a float16 tensor with dims beside a 0-dim complex one (complex64, not PyTorch's
    complex32, which vkml refuses)."""
    assert len(PROMOTION) > 2900
    for name, fn, specs in PROMOTION:
        if name not in KNOWN:
            check(name, fn, specs)
            continue
        with pytest.raises(AssertionError):  # strictly: a known difference that goes away must leave KNOWN
            check(name, fn, specs)


@pytest.mark.parametrize(
    "name", ["F.hardtanh(min_val=-0.5,max_val=1.0)[fs12]", "std_constant_rows", "max()[fs12]", "ops.avg_pool2d_int"]
)
def test_vulkan_matches_torch(name, gpu):
    _, fn, specs = _BY_NAME[name]
    check(name, fn, specs, device=gpu)


def _stress_params():
    out = []
    for name, fn, s in CASES:
        marks = ()
        if name in KNOWN:
            marks = (pytest.mark.xfail(strict=True, reason=REASONS[KNOWN[name]]),)
        out.append(pytest.param(fn, s, id=name, marks=marks))
    return out


@pytest.mark.stress
@pytest.mark.parametrize(("fn", "specs"), _stress_params())
def test_matches_torch_all(request, fn, specs):
    check(request.node.callspec.id, fn, specs)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8", "bool"])
def test_make_tensor_as_torch(dtype):
    """``torch.testing.make_tensor``, which PyTorch's own suites build their inputs with: the same shape,
    dtype, range, layout and leaf-ness (values come from each library's generator)."""
    for m in (torch, vkml):
        dt = getattr(m, dtype)
        t = m.testing.make_tensor(2, 3, dtype=dt, device="cpu")
        assert tuple(t.shape) == (2, 3) and t.dtype == dt
        if dtype not in ("bool",):
            lo = 0 if dtype == "uint8" else -9
            assert lo <= float(t.min()) and float(t.max()) <= 9
        u = m.testing.make_tensor((4, 2), dtype=dt, device="cpu", noncontiguous=True, exclude_zero=True)
        assert tuple(u.shape) == (4, 2) and not u.is_contiguous()
        assert dtype == "bool" or not bool((u == 0).any())
        if dtype.startswith("float"):
            g = m.testing.make_tensor([3], dtype=dt, device="cpu", low=1, high=2, requires_grad=True)
            assert g.requires_grad and g.is_leaf and 1 <= float(g.detach().min()) and float(g.detach().max()) <= 2
        with pytest.raises(ValueError):
            m.testing.make_tensor(2, dtype=m.int64, device="cpu", low=3, high=3)


def test_assert_allclose_as_torch():
    for m in (torch, vkml):
        nan = float("nan")
        with pytest.warns(FutureWarning):
            m.testing.assert_allclose(m.tensor([1.0, nan]), m.tensor([1, nan]))  # NaN equal, no dtype check
        with pytest.warns(FutureWarning), pytest.raises(AssertionError):
            m.testing.assert_allclose(m.tensor([1.0]), m.tensor([1.1]))
