"""Shape and construction ops (vkml/frontend/shape.py) against PyTorch, on the CPU backend and on lavapipe.

One table: ``check(name, inputs, torch_fn, vkml_fn)`` rows. Each row's values must equal
torch's (bit for bit for movement ops, within the stated bound for products), its gradients
too (where the inputs are float), and the Vulkan device must give the CPU backend's bits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from optest import assert_same_bits, from_torch, random_floats, to_torch

import vkml


@dataclass
class Case:
    name: str
    inputs: tuple  # numpy arrays (float32 inputs get gradients when grad is True)
    torch_fn: Callable
    vkml_fn: Callable
    grad: bool = True
    exact: bool = True  # False: a sum of products, compared within a bound to torch's (BLAS order)


CASES: list[Case] = []


def check(name, inputs, torch_fn, vkml_fn=None, grad=True, exact=True):
    """A table row; ``vkml_fn`` defaults to ``torch_fn`` (the same code runs on both libraries)."""
    CASES.append(Case(name, tuple(inputs), torch_fn, vkml_fn or torch_fn, grad, exact))


def f(*shape, seed=0):
    return random_floats(shape, seed=seed, scale=4.0)


def i32(*shape, seed=0):
    return np.random.default_rng(seed).integers(-9, 9, shape).astype(np.int32)


A, B, C = f(3, 4), f(3, 4, seed=1), f(3, 4, seed=2)
X = f(2, 3, 4, seed=3)
V, W = f(5, seed=4), f(4, seed=5)

# joining
check("stack 0", (A, B, C), lambda a, b, c: torch.stack([a, b, c]), lambda a, b, c: vkml.stack([a, b, c]))
check("stack -1", (A, B), lambda a, b: torch.stack((a, b), -1), lambda a, b: vkml.stack((a, b), -1))
check(
    "stack ints",
    (i32(2, 3), i32(2, 3, seed=1)),
    lambda a, b: torch.stack([a, b], 1),
    lambda a, b: vkml.stack([a, b], 1),
)
check("hstack 1-D", (V, W), lambda a, b: torch.hstack([a, b]), lambda a, b: vkml.hstack([a, b]))
check("hstack 2-D", (A, B[:, :2]), lambda a, b: torch.hstack([a, b]), lambda a, b: vkml.hstack([a, b]))
check("vstack", (W, A), lambda a, b: torch.vstack([a, b]), lambda a, b: vkml.vstack([a, b]))
check("dstack", (A, B), lambda a, b: torch.dstack([a, b]), lambda a, b: vkml.dstack([a, b]))
check("column_stack", (f(3), A), lambda a, b: torch.column_stack([a, b]), lambda a, b: vkml.column_stack([a, b]))
# splitting
check("split int", (X,), lambda x: x.split(2, 2))
check("split sizes", (X,), lambda x: torch.split(x, [1, 3], -1), lambda x: vkml.split(x, [1, 3], -1))
check("chunk", (f(7, 2),), lambda x: x.chunk(3))
check("chunk more than size", (f(2, 6),), lambda x: torch.chunk(x, 4, 1), lambda x: vkml.chunk(x, 4, 1))
check("chunk of an empty dim", (f(0, 2),), lambda x: x.chunk(3))
check("tensor_split of an empty dim", (f(0, 2),), lambda x: x.tensor_split(2))
check("tensor_split sections", (f(7, 2),), lambda x: x.tensor_split(3))
check(
    "tensor_split indices",
    (f(7, 2),),
    lambda x: torch.tensor_split(x, [1, 5, 4, 9], 0),
    lambda x: vkml.tensor_split(x, [1, 5, 4, 9], 0),
)
check("unbind", (X,), lambda x: x.unbind(1))
check("narrow", (X,), lambda x: x.narrow(2, -3, 2))
check("hsplit vsplit", (f(4, 6),), lambda x: x.hsplit(3) + x.vsplit([1, 3]))
# reshaping
check("flatten", (X,), lambda x: x.flatten())
check("flatten range", (X,), lambda x: torch.flatten(x, 1, 2), lambda x: vkml.flatten(x, 1, 2))
check("flatten 0-d", (np.float32(2.5),), lambda x: x.flatten())
check("unflatten", (f(2, 12),), lambda x: x.unflatten(1, (3, -1, 2)))
check("view_as reshape_as", (X, A), lambda x, a: (x.view_as(x.reshape(4, 6)), x[1].T.reshape_as(a)))
check("expand_as", (f(3, 1), A), lambda x, a: x.expand_as(a))
check("movedim", (X,), lambda x: x.movedim(0, -1))
check("movedim tuple", (X,), lambda x: torch.movedim(x, (0, 2), (2, 0)), lambda x: vkml.movedim(x, (0, 2), (2, 0)))
check("moveaxis", (X,), lambda x: torch.moveaxis(x, (1,), (0,)), lambda x: vkml.moveaxis(x, (1,), (0,)))
check("swapaxes swapdims", (X,), lambda x: (x.swapaxes(0, 2), x.swapdims(-1, 1)))
check("t", (A,), lambda a: a.t())
check("t 1-D", (V,), lambda v: v.t())
check(".T", (A,), lambda a: a.T)
check(".mT", (X,), lambda x: x.mT)
# repeating
check("repeat", (A,), lambda a: a.repeat(2, 1, 3))
check("repeat zero", (A,), lambda a: a.repeat(0, 2))
check("tile", (A,), lambda a: a.tile((2,)))
check("tile function", (X,), lambda x: torch.tile(x, (2, 1, 1, 2)), lambda x: vkml.tile(x, (2, 1, 1, 2)))
check("repeat_interleave", (A,), lambda a: a.repeat_interleave(2))
check(
    "repeat_interleave dim",
    (A,),
    lambda a: torch.repeat_interleave(a, 3, dim=1),
    lambda a: vkml.repeat_interleave(a, 3, dim=1),
)
check(
    "repeat_interleave tensor",
    (A,),
    lambda a: a.repeat_interleave(torch.tensor([1, 0, 2]), 0),
    lambda a: a.repeat_interleave(vkml.tensor([1, 0, 2]), 0),
)
check("roll", (X,), lambda x: x.roll(2, -1))
check("roll flat", (X,), lambda x: torch.roll(x, -5), lambda x: vkml.roll(x, -5))
check("roll dims", (X,), lambda x: torch.roll(x, (1, 7), (0, 2)), lambda x: vkml.roll(x, (1, 7), (0, 2)))
# flips
check("fliplr flipud", (X,), lambda x: (x.fliplr(), x.flipud()))
check("rot90", (X,), lambda x: tuple(x.rot90(k, (1, 2)) for k in (-1, 1, 2, 3, 4)))
check("rot90 default", (A,), lambda a: torch.rot90(a), lambda a: vkml.rot90(a))
# triangles and diagonals
check("tril", (X,), lambda x: (x.tril(), x.tril(1), x.tril(-2)))
check(
    "triu",
    (A,),
    lambda a: (torch.triu(a), torch.triu(a, 2), torch.triu(a, -1)),
    lambda a: (vkml.triu(a), vkml.triu(a, 2), vkml.triu(a, -1)),
)
check("tril ints", (i32(4, 3),), lambda a: a.tril(-1), grad=False)
check("diagonal", (A,), lambda a: (a.diagonal(), a.diagonal(1), a.diagonal(-2), a.diagonal(5)))
check(
    "diagonal dims",
    (X,),
    lambda x: (x.diagonal(0, 0, 2), x.diagonal(1, -1, 1), torch.diagonal(x, -1, 2, 0)),
    lambda x: (x.diagonal(0, 0, 2), x.diagonal(1, -1, 1), vkml.diagonal(x, -1, 2, 0)),
)
check("diag of a vector", (V,), lambda v: (v.diag(), v.diag(2), v.diag(-1)))
check("diag of a matrix", (A,), lambda a: (torch.diag(a), torch.diag(a, 1)), lambda a: (vkml.diag(a), vkml.diag(a, 1)))
check(
    "diag_embed",
    (A,),
    lambda a: (a.diag_embed(), torch.diag_embed(a, 1, 0, 2)),
    lambda a: (a.diag_embed(), vkml.diag_embed(a, 1, 0, 2)),
)
check("trace", (f(4, 4),), lambda a: a.trace())
check("trace ints", (i32(3, 5),), lambda a: torch.trace(a), lambda a: vkml.trace(a), grad=False)
# products
check("outer", (V, W), lambda v, w: torch.outer(v, w), lambda v, w: vkml.outer(v, w))
check("ger", (V, W), lambda v, w: v.ger(w))
check("mm", (A, f(4, 5)), lambda a, b: a.mm(b), exact=False)
check("mm ints", (i32(3, 4), i32(4, 2)), lambda a, b: torch.mm(a, b), lambda a, b: vkml.mm(a, b), grad=False)
check("bmm", (X, f(2, 4, 3)), lambda a, b: torch.bmm(a, b), lambda a, b: vkml.bmm(a, b), exact=False)
check("mv", (A, W), lambda a, w: a.mv(w), exact=False)
check("dot", (V, f(5, seed=9)), lambda a, b: a.dot(b), exact=False)
check(
    "addmm",
    (f(3, 5), A, f(4, 5)),
    lambda c, a, b: torch.addmm(c, a, b),
    lambda c, a, b: vkml.addmm(c, a, b),
    exact=False,
)
check(
    "addmm scaled, broadcast",
    (f(5), A, f(4, 5)),
    lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=-2.0),
    lambda c, a, b: vkml.addmm(c, a, b, beta=0.5, alpha=-2.0),
    exact=False,
)
check(
    "addmm beta=0 ignores NaN",
    (np.full((3, 5), np.nan, np.float32), A, f(4, 5)),
    lambda c, a, b: c.addmm(a, b, beta=0),
    exact=False,
)
check(
    "baddbmm",
    (f(2, 3, 3), X, f(2, 4, 3)),
    lambda c, a, b: torch.baddbmm(c, a, b, alpha=3),
    lambda c, a, b: vkml.baddbmm(c, a, b, alpha=3),
    exact=False,
)
check(
    "tensordot int",
    (X, f(3, 4, 2)),
    lambda a, b: torch.tensordot(a, b, 2),
    lambda a, b: vkml.tensordot(a, b, 2),
    exact=False,
)
check(
    "tensordot lists",
    (X, f(4, 5, 2)),
    lambda a, b: torch.tensordot(a, b, ([2, 0], [0, 2])),
    lambda a, b: vkml.tensordot(a, b, ([2, 0], [0, 2])),
    exact=False,
)
# einsum
EINSUMS = [
    ("ij,jk->ik", (A, f(4, 5))),
    ("ij,jk", (A, f(4, 5))),
    ("bij,bjk->bik", (X, f(2, 4, 3))),
    ("ij->ji", (A,)),
    ("ii->i", (f(4, 4),)),
    ("ii", (f(4, 4),)),
    ("bii->b", (f(2, 3, 3),)),
    ("ij->", (A,)),
    ("ij->j", (A,)),
    ("i,i->", (V, f(5, seed=7))),
    ("i,j->ij", (V, W)),
    ("...ij->...ji", (X,)),
    ("...ij,...jk->...ik", (X, f(4, 2))),
    ("bn,anm,bm->ba", (f(2, 3), f(4, 3, 5), f(2, 5))),
    ("ijk,ikj->i", (f(2, 3, 4), f(2, 4, 3))),
    ("ij,ij->ij", (A, B)),
    ("i,j,k->ijk", (f(2), f(3), f(2))),
    ("...ij->ij", (X,)),  # an output without '...' sums the broadcast dims
    ("bij,bj->bi", (f(1, 3, 4), f(2, 4))),  # a size-1 dim broadcasts
    ("ii,ij->j", (f(3, 3), f(3, 2))),
]
for eq, ops in EINSUMS:
    check(
        f"einsum {eq}", ops, lambda *t, eq=eq: torch.einsum(eq, *t), lambda *t, eq=eq: vkml.einsum(eq, *t), exact=False
    )
for eq in ("ij->j", "ij->", "ij->ji", "ij,jk->", "ij,ij->i"):  # sums alone widen to int64, contractions keep int32
    check(f"einsum ints {eq}", (i32(3, 4), i32(4, 4, seed=1)[:, :4] if "jk" in eq else i32(3, 4, seed=1))[: eq.count(",") + 1],
          lambda *t, eq=eq: torch.einsum(eq, *t), lambda *t, eq=eq: vkml.einsum(eq, *t), grad=False)  # fmt: skip
check(
    "einsum ints",
    (i32(3, 4), i32(4, 2)),
    lambda a, b: torch.einsum("ij,jk->ik", a, b),
    lambda a, b: vkml.einsum("ij,jk->ik", a, b),
    grad=False,
)
check(
    "einsum list form",
    (A, B),
    lambda a, b: torch.einsum("ij,ij->i", [a, b]),
    lambda a, b: vkml.einsum("ij,ij->i", [a, b]),
    exact=False,
)
# grids
check(
    "meshgrid ij",
    (V, W, f(2)),
    lambda *t: torch.meshgrid(*t, indexing="ij"),
    lambda *t: vkml.meshgrid(*t, indexing="ij"),
)
check(
    "meshgrid xy",
    (V, W, f(2)),
    lambda *t: torch.meshgrid(*t, indexing="xy"),
    lambda *t: vkml.meshgrid(*t, indexing="xy"),
)
check(
    "meshgrid list",
    (V, np.float32(3.0)),
    lambda a, b: torch.meshgrid([a, b], indexing="xy"),
    lambda a, b: vkml.meshgrid([a, b], indexing="xy"),
)
check("cartesian_prod", (V, W), lambda a, b: torch.cartesian_prod(a, b), lambda a, b: vkml.cartesian_prod(a, b))
check("cartesian_prod one", (V,), lambda a: torch.cartesian_prod(a), lambda a: vkml.cartesian_prod(a))
# padding modes
PADS = [
    ((2, 5), (1, 3)),
    ((2, 5), (-1, 2)),
    ((1, 2, 5), (4, 0)),
    ((2, 3, 4), (2, -1)),
    ((2, 3, 5), (-3, 1)),
    ((2, 3, 4), (3, -3)),
    ((1, 3, 4), (1, 2, 3, 1)),
    ((2, 1, 3, 4), (0, 3, 2, 0)),
    ((1, 2, 3, 3), (1, 1, 2, 2, 1, 0)),
    ((2, 3, 3, 2, 3), (-1, 1, 0, 1, 2, 1)),
]
for mode in ("reflect", "replicate", "circular"):
    for shape, amounts in PADS:
        sizes = [s for s in shape[::-1] for _ in (0, 1)]
        if mode == "reflect" and any(p >= s for p, s in zip(amounts, sizes)):
            continue
        if mode == "circular" and amounts == (3, -3):  # torch reads outside the input (vkml raises)
            continue
        check(
            f"pad {mode} {shape} {amounts}",
            (f(*shape),),
            lambda x, a=amounts, m=mode: torch.nn.functional.pad(x, a, m),
            lambda x, a=amounts, m=mode: vkml.nn.functional.pad(x, a, m),
        )
check(
    "pad replicate ints",
    (i32(1, 3, 4),),
    lambda x: torch.nn.functional.pad(x, (2, 2), "replicate"),
    lambda x: vkml.nn.functional.pad(x, (2, 2), "replicate"),
    grad=False,
)
# fmt: skip


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _weights(outs) -> list[np.ndarray]:
    """A fixed random weight per output element: the loss sum(out * w) gives every element its own gradient."""
    return [random_floats(tuple(o.shape), seed=100 + k, scale=1.0) for k, o in enumerate(outs)]


def _run_torch(case: Case):
    args = [to_torch(a) for a in case.inputs]
    grads = case.grad and any(a.dtype == np.float32 for a in case.inputs)
    if grads:
        for a in args:
            if a.dtype == torch.float32:
                a.requires_grad_(True)
    outs = _as_tuple(case.torch_fn(*args))
    values = [from_torch(o) for o in outs]
    if not grads:
        return values, []
    loss = sum((o * to_torch(w)).sum() for o, w in zip(outs, _weights(values)) if o.numel())
    if not isinstance(loss, torch.Tensor):
        return values, []
    loss.backward()
    return values, [
        from_torch(a.grad) if a.grad is not None else np.zeros(a.shape, np.float32)
        for a in args
        if a.dtype == torch.float32
    ]


def _run_vkml(case: Case, device):
    args = [vkml.tensor(a, device=device) for a in case.inputs]
    grads = case.grad and any(a.dtype == np.float32 for a in case.inputs)
    if grads:
        for a in args:
            if a.dtype is vkml.float32:
                a.requires_grad_(True)
    outs = _as_tuple(case.vkml_fn(*args))
    values = [o.numpy() for o in outs]
    if not grads:
        return values, []
    terms = [(o * vkml.tensor(w, device=device)).sum() for o, w in zip(outs, _weights(values)) if o.numel()]
    if not terms:
        return values, []
    loss = terms[0]
    for t in terms[1:]:
        loss = loss + t
    loss.backward()
    return values, [
        a.grad.numpy() if a.grad is not None else np.zeros(a.shape, np.float32) for a in args if a.dtype is vkml.float32
    ]


def _close(got: np.ndarray, want: np.ndarray, what: str, exact: bool) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs torch {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs torch {want.dtype}"
    if exact or got.dtype.kind != "f":
        assert_same_bits(got, want, what)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4, err_msg=what)


assert len({c.name for c in CASES}) == len(CASES), "case names key the CPU results"
_CPU_RESULTS: dict[str, tuple] = {}  # case name -> the CPU backend's (values, gradients), for the Vulkan test


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_torch_on_cpu(case):
    want, want_grads = _run_torch(case)
    got, got_grads = _CPU_RESULTS[case.name] = _run_vkml(case, "cpu")
    assert len(got) == len(want), f"{case.name}: {len(got)} results, torch {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        _close(g, w, f"{case.name} result {k}", case.exact)
    assert len(got_grads) == len(want_grads)
    for k, (g, w) in enumerate(zip(got_grads, want_grads)):
        # gradients sum the weights (expand, repeat, overlapping outputs): torch's order may differ
        _close(g, w, f"{case.name} gradient {k}", False)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_vulkan_gives_the_cpu_bits(case, gpu):
    cpu_values, cpu_grads = _CPU_RESULTS.get(case.name) or _run_vkml(case, "cpu")
    gpu_values, gpu_grads = _run_vkml(case, gpu)
    for k, (g, c) in enumerate(zip(gpu_values + gpu_grads, cpu_values + cpu_grads)):
        assert_same_bits(g, c, f"{case.name} output {k} on {gpu.name}")


# ---------------------------------------------------------------------- errors: PyTorch's types, eager, naming the value

Z23, Z234 = np.zeros((2, 3), np.float32), np.zeros((2, 3, 4), np.float32)
Z10 = np.zeros(10, np.float32)
ERRORS = [
    # (name, inputs, call with the library as `L`, words the message must hold)
    ("stack empty", (), lambda L: L.stack([]), "non-empty"),
    ("stack sizes", (Z10, Z23), lambda L, a, b: L.stack([a, b]), "equal size"),
    ("stack dim", (Z10,), lambda L, a: L.stack([a], 3), "out of range"),
    ("split sizes sum", (Z10,), lambda L, a: L.split(a, [2, 2]), "sum exactly to 10"),
    ("split size 0", (Z10,), lambda L, a: L.split(a, 0), "split_size"),
    ("split negative", (Z10,), lambda L, a: L.split(a, -1), "split_size=-1"),
    ("chunk 0", (Z10,), lambda L, a: L.chunk(a, 0), "got: 0"),
    ("tensor_split 0", (Z10,), lambda L, a: L.tensor_split(a, 0), "got 0"),
    ("unbind 0-d", (np.float32(1),), lambda L, a: L.unbind(a), "no dimensions"),
    ("narrow past end", (Z10,), lambda L, a: L.narrow(a, 0, 8, 3), "start (8) + length (3)"),
    ("narrow start", (Z10,), lambda L, a: L.narrow(a, 0, 11, 0), "got 11"),
    ("narrow length", (Z10,), lambda L, a: L.narrow(a, 0, 2, -1), "non-negative"),
    ("flatten order", (Z234,), lambda L, a: L.flatten(a, 2, 1), "start_dim cannot come after end_dim"),
    ("unflatten sizes", (Z23,), lambda L, a: L.unflatten(a, 1, (4, -1)), "[4, -1]"),
    ("movedim counts", (Z234,), lambda L, a: L.movedim(a, (0, 1), (1,)), "same number of dims"),
    ("movedim repeated", (Z234,), lambda L, a: L.movedim(a, (0, 0), (1, 2)), "repeated dim in `source`"),
    ("t of 3-D", (Z234,), lambda L, a: a.t(), "3D"),
    ("mT of 1-D", (Z10,), lambda L, a: a.mT, "1-D"),
    ("repeat too few", (Z23,), lambda L, a: a.repeat(2), "can not be smaller"),
    ("repeat negative", (Z23,), lambda L, a: a.repeat(-1, 2), "negative dimension"),
    ("repeat_interleave negative", (Z10,), lambda L, a: L.repeat_interleave(a, -1), "non-negative"),
    ("roll no shifts", (Z23,), lambda L, a: L.roll(a, ()), "`shifts` required"),
    ("roll mismatch", (Z23,), lambda L, a: L.roll(a, (1, 2), (0,)), "shifts: 2, dims:1"),
    ("fliplr 1-D", (Z10,), lambda L, a: L.fliplr(a), ">= 2-d"),
    ("flipud 0-d", (np.float32(1),), lambda L, a: L.flipud(a), ">= 1-d"),
    ("rot90 same dims", (Z23,), lambda L, a: L.rot90(a, 1, [0, 0]), "dim0 = 0 and dim1 = 0"),
    ("rot90 three dims", (Z23,), lambda L, a: L.rot90(a, 1, [0, 1, 2]), "== 2, but got dims = 3"),
    ("rot90 1-D", (Z10,), lambda L, a: L.rot90(a), "total dims = 1"),
    ("tril 1-D", (Z10,), lambda L, a: L.tril(a), "at least 2 dimensions"),
    ("diagonal same dims", (Z23,), lambda L, a: L.diagonal(a, 0, 0, 0), "cannot be identical"),
    ("diag 3-D", (Z234,), lambda L, a: L.diag(a), "Got 3D"),
    ("trace 3-D", (Z234,), lambda L, a: L.trace(a), "dim 3"),
    ("outer 2-D", (Z23, Z10), lambda L, a, b: L.outer(a, b), "Expected 1-D argument self, but got 2-D"),
    ("mm 1-D", (Z23, Z10), lambda L, a, b: L.mm(a, b), "mat2 must be a matrix"),
    ("mm shapes", (Z23, np.zeros((4, 5), np.float32)), lambda L, a, b: L.mm(a, b), "(2x3 and 4x5)"),
    ("mm dtypes", (Z23, np.zeros((3, 5), np.int64)), lambda L, a, b: L.mm(a, b), "same dtype"),
    ("bmm 2-D", (Z23, Z234), lambda L, a, b: L.bmm(a, b), "batch1 must be a 3D tensor"),
    ("bmm shapes", (Z234, Z234), lambda L, a, b: L.bmm(a, b), "[2, 4] but got: [2, 3]"),
    ("mv shapes", (Z23, np.zeros(4, np.float32)), lambda L, a, b: L.mv(a, b), "vec (4)"),
    ("dot sizes", (Z10, np.zeros(4, np.float32)), lambda L, a, b: L.dot(a, b), "inconsistent tensor size"),
    ("dot dtypes", (Z10, np.zeros(10, np.int64)), lambda L, a, b: L.dot(a, b), "same dtype"),
    ("tensordot negative", (Z23, Z23), lambda L, a, b: L.tensordot(a, b, -1), "dims=-1"),
    ("tensordot sizes", (Z23, np.zeros((4, 5), np.float32)), lambda L, a, b: L.tensordot(a, b, 1), "size 3 in dim 1"),
    ("einsum sizes", (Z23, np.zeros((4, 5), np.float32)), lambda L, a, b: L.einsum("ij,jk", a, b), "subscript j"),
    ("einsum few operands", (Z23,), lambda L, a: L.einsum("ij,jk->ik", a), "fewer operands"),
    ("einsum dims", (Z23,), lambda L, a: L.einsum("ijk->ik", a), "does not match the number of dimensions"),
    ("einsum output letter", (Z23,), lambda L, a: L.einsum("ij->iq", a), "output subscript q"),
    ("einsum output twice", (Z23,), lambda L, a: L.einsum("ij->ii", a), "more than once"),
    ("einsum dtypes", (Z23, Z23.astype(np.float16)), lambda L, a, b: L.einsum("ij,ij", a, b), "expected scalar type"),
    ("einsum diagonal sizes", (Z23,), lambda L, a: L.einsum("ii->i", a), "repeated for operand 0"),
    ("meshgrid 2-D", (Z23,), lambda L, a: L.meshgrid(a, indexing="ij"), "0D or 1D"),
    ("meshgrid indexing", (Z10,), lambda L, a: L.meshgrid(a, indexing="foo"), "foo"),
    ("pad mode", (Z234,), lambda L, a: L.nn.functional.pad(a, (1, 1), "foo"), "foo"),
    ("pad odd", (Z234,), lambda L, a: L.nn.functional.pad(a, (1,), "reflect"), "divisible by 2"),
    ("pad value", (Z234,), lambda L, a: L.nn.functional.pad(a, (1, 1), "replicate", 1.0), "value argument"),
    ("pad dims", (Z10,), lambda L, a: L.nn.functional.pad(a, (1, 1), "reflect"), "not supported for 1D"),
    ("pad reflect size", (Z234,), lambda L, a: L.nn.functional.pad(a, (4, 0), "reflect"), "padding (4, 0) at dimension 2"),
    ("pad circular wrap", (Z234,), lambda L, a: L.nn.functional.pad(a, (5, 0), "circular"), "more than once"),
    ("pad circular wrap after cropping", (Z234,), lambda L, a: L.nn.functional.pad(a, (2, -3), "circular") if L is vkml
     else (_ for _ in ()).throw(RuntimeError("more than once")), "more than once"),  # torch reads outside the input
    ("pad reflect bool", (Z234 > 0,), lambda L, a: L.nn.functional.pad(a, (1, 1), "reflect"), "not implemented for 'Bool'"),
    ("pad replicate bool", (Z234 > 0,), lambda L, a: L.nn.functional.pad(a, (1, 1, 1, 1), "replicate"), "replication_pad2d"),
    ("pad empty", (np.zeros((1, 2, 0), np.float32),), lambda L, a: L.nn.functional.pad(a, (1, 1), "replicate"), "non-zero"),
]  # fmt: skip


@pytest.mark.parametrize("name, inputs, call, words", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_like_torch(name, inputs, call, words):
    with pytest.raises(Exception) as want:
        call(torch, *(to_torch(a) for a in inputs))
    args = [vkml.tensor(a) for a in inputs]
    before = [a.numpy().copy() for a in args]
    with pytest.raises(type(want.value)) as got:
        call(vkml, *args)
    assert words in str(got.value), f"{name}: {got.value!r} lacks {words!r} (torch: {want.value})"
    for a, b in zip(args, before):  # the operands are untouched
        assert_same_bits(a.numpy(), b, name)


# ---------------------------------------------------------------------- views: index arithmetic, shared storage

VIEW_OPS = [
    ("narrow", lambda x: x.narrow(1, 1, 2)),
    ("split", lambda x: x.split(2, 2)[1]),
    ("chunk", lambda x: x.chunk(2, 0)[1]),
    ("unbind", lambda x: x.unbind(2)[3]),
    ("flatten", lambda x: x.flatten(1)),
    ("unflatten", lambda x: x.unflatten(2, (2, 2))),
    ("movedim", lambda x: x.movedim(0, 2)),
    ("mT", lambda x: x.mT),
    ("swapaxes", lambda x: x.swapaxes(0, 1)),
    ("diagonal", lambda x: x.diagonal(1, 1, 2)),
    ("diagonal of a transposed view", lambda x: x.transpose(1, 2).diagonal(-1, 1, 2)),
    ("rot90", lambda x: x.rot90(1, (1, 2))),
    ("fliplr", lambda x: x.fliplr()),
    ("expand_as", lambda x: x[:, :1].expand_as(x)),
    ("diag_embed", lambda x: x[0].diag_embed(1)),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, dim=0)),
    ("diagonal of dims 0 and 2", lambda x: x.diagonal(0, 2, 0)),  # a view, but one writes do not reach (see its page)
]  # fmt: skip


@pytest.mark.parametrize("name, edit", VIEW_OPS, ids=[v[0] for v in VIEW_OPS])
def test_movement_ops_are_views_of_the_source(name, edit):
    x = vkml.tensor(X).realize()
    out = edit(x)
    node = out.node
    while node.op == "view":
        node = node.srcs[0]
    # A view reads the source's buffer itself, or a window of it (an alias: vkml/graph/build.py).
    assert node.op == "buffer", f"{name}: a {node.op} node, not a view"
    buffer = node.buffer
    assert getattr(buffer, "parent", buffer) is x.node.buffer, f"{name}: the view does not read the source's buffer"


@pytest.mark.parametrize("name, edit", VIEW_OPS[:13], ids=[v[0] for v in VIEW_OPS[:13]])
def test_writes_through_views_reach_the_source_like_torch(name, edit):
    x, tx = vkml.tensor(X), to_torch(X)
    edit(x).mul_(-2.0)
    edit(tx).mul_(-2.0)
    assert_same_bits(x.numpy(), from_torch(tx), name)


# Ops whose result may equal the input (a whole-turn roll, rot90 by 0) still give new memory, as
# PyTorch's: makemore's MLP writes into `torch.roll(idx, 1, 1)` with idx of one column.
NEW_MEMORY = [
    ("roll by a whole turn", lambda L, x: L.roll(x, 1, 0)),
    ("roll by 0", lambda L, x: x.roll(0, 1)),
    ("roll flat by the size", lambda L, x: L.roll(x, 3)),
    ("rot90 by 4", lambda L, x: L.rot90(x, 4)),
]


@pytest.mark.parametrize("name, edit", NEW_MEMORY, ids=[v[0] for v in NEW_MEMORY])
def test_writes_to_a_result_that_equals_the_input_do_not_reach_it(name, edit):
    data = np.arange(3, dtype=np.int64).reshape(1, 3)
    x, tx = vkml.tensor(data), torch.tensor(data)
    edit(vkml, x)[0, 0] = 9
    edit(torch, tx)[0, 0] = 9
    assert x.tolist() == tx.tolist() == data.tolist(), name


# ---------------------------------------------------------------------- every dtype; index sets; atleast_*

SINGLE = [
    lambda L, x: L.stack([x, x], 1),
    lambda L, x: x.split([1, 2], 1),
    lambda L, x: L.tensor_split(x, 3, 2),
    lambda L, x: x.flatten(0, 1).unflatten(0, (3, 2)),
    lambda L, x: L.movedim(x, 2, 0),
    lambda L, x: x.mT,
    lambda L, x: x.repeat(1, 2, 1),
    lambda L, x: L.tile(x, (2,)),
    lambda L, x: x.repeat_interleave(2, 1),
    lambda L, x: L.roll(x, (1, -1), (1, 2)),
    lambda L, x: L.rot90(x, 3, (0, 2)),
    lambda L, x: (x.tril(1), x.triu(-1)),
    lambda L, x: (x.diagonal(0, 1, 2), x[0].diag(), x[0, 0].diag(1), x[0].diag_embed()),
    lambda L, x: L.meshgrid(x[0, 0], x[1, 1], indexing="xy"),
    lambda L, x: L.cartesian_prod(x[0, 0], x[1, 2]),
    lambda L, x: (L.hstack([x, x]), L.vstack([x[0], x[1]]), L.dstack([x[0], x[1]])),
    lambda L, x: L.nn.functional.pad(x.float() if x.dtype in (torch.bool, vkml.bool) else x, (2, 1, 1, 1), "reflect"),
    lambda L, x: L.nn.functional.pad(x, (2, 1), "circular"),
]


@pytest.mark.parametrize("dtype", [np.float16, np.int64, np.bool_])
@pytest.mark.parametrize("k", range(len(SINGLE)))
def test_movement_ops_move_every_dtype_exactly(k, dtype):
    x = (X * 3).astype(dtype) if dtype is not np.bool_ else X > 0
    want = _as_tuple(SINGLE[k](torch, to_torch(x)))
    got = _as_tuple(SINGLE[k](vkml, vkml.tensor(x)))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same_bits(g.numpy(), from_torch(w), f"op {k} on {np.dtype(dtype).name}")


@pytest.mark.parametrize("row, col, offset", [(3, 3, 0), (4, 2, 1), (2, 5, -1), (0, 3, 0), (3, 4, 7), (5, 3, -9)])
def test_triangle_indices_match_torch(row, col, offset):
    for name in ("tril_indices", "triu_indices"):
        got = getattr(vkml, name)(row, col, offset)
        want = getattr(torch, name)(row, col, offset)
        assert_same_bits(got.numpy(), want.numpy(), f"{name}({row}, {col}, {offset})")
    assert vkml.tril_indices(3, 3, dtype=vkml.int32).dtype is vkml.int32


def test_atleast_nd_match_torch():
    for value in (np.float32(2.0), V, A, X):
        for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
            got = getattr(vkml, name)(vkml.tensor(value))
            assert_same_bits(got.numpy(), from_torch(getattr(torch, name)(to_torch(value))), name)
    pair = vkml.atleast_2d(vkml.tensor(V), vkml.tensor(A))
    assert [t.shape for t in pair] == [(1, 5), (3, 4)]
