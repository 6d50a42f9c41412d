"""In-place ops, ``x[i] = v``, views sharing storage, ``.data``, ``clone``, ``detach``: as PyTorch.

Each case is one program written against the tensor API both libraries share; it runs on
torch, on vkml's CPU backend and on lavapipe, and returns the tensors to compare (the written
tensor, its views, values recorded before the write). vkml matches torch, and the CPU backend
matches Vulkan bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(16)
A = RNG.standard_normal((4, 5)).astype(np.float32)
B = RNG.standard_normal((5,)).astype(np.float32)
IDX = np.arange(20, dtype=np.int64).reshape(4, 5)


class Lib:
    """What a program needs besides tensor methods: making tensors and no_grad, for one library."""

    def __init__(self, mod, device=None):
        self.mod, self.device = mod, device

    def t(self, array, requires_grad=False):
        if self.mod is torch:
            return torch.tensor(array, requires_grad=requires_grad)
        return vkml.tensor(array, device=self.device, requires_grad=requires_grad)

    def no_grad(self):
        return self.mod.no_grad()

    def zeros(self, *shape):
        return self.mod.zeros(*shape) if self.mod is torch else vkml.zeros(*shape, device=self.device)


def _sgd_views(L):
    x = L.t(A)
    row, col, every_other = x[1], x[:, 2], x[::2, 1:]
    x[1, 1:3] = 7.0
    col.mul_(2.0)
    every_other += L.t(B[1:])
    return [x, row, col, every_other]


def _recorded_before(L):
    x = L.t(A)
    before = x * 1.0
    view_before = x[0] + 0.0
    x.add_(1.0)
    x[0] = 3.0
    after = x * 1.0
    return [after, before, view_before, x]


PROGRAMS = {
    "add_ scalar": lambda L: [L.t(A).add_(2.5)],
    "add_ tensor alpha": lambda L: [L.t(A).add_(L.t(B), alpha=-0.5)],
    "sub_": lambda L: [L.t(A).sub_(L.t(B))],
    "mul_": lambda L: [L.t(A).mul_(L.t(B))],
    "div_": lambda L: [L.t(A).div_(3.0)],
    "pow_": lambda L: [L.t(np.abs(A)).pow_(1.5)],
    "clamp_": lambda L: [L.t(A).clamp_(-0.5, 0.25)],
    "clamp_ min": lambda L: [L.t(A).clamp_(min=0.0)],
    "fill_": lambda L: [L.t(A).fill_(1.25)],
    "fill_ int from float": lambda L: [L.t(IDX).fill_(2.75)],
    "zero_": lambda L: [L.t(A).zero_()],
    "masked_fill_": lambda L: [L.t(A).masked_fill_(L.t(A > 0), -1.0)],
    "masked_fill_ broadcast mask": lambda L: [L.t(IDX).masked_fill_(L.t(B > 0), 5)],
    "copy_ broadcast": lambda L: [L.t(A).copy_(L.t(B))],
    "copy_ converts": lambda L: [L.t(IDX).copy_(L.t(A * 10))],
    "iadd": lambda L: [_iop(L.t(A), "__iadd__", L.t(B))],
    "isub int": lambda L: [_iop(L.t(IDX), "__isub__", 3)],
    "imul": lambda L: [_iop(L.t(A), "__imul__", 2.0)],
    "itruediv": lambda L: [_iop(L.t(A), "__itruediv__", L.t(B))],
    "ipow": lambda L: [_iop(L.t(np.abs(A)), "__ipow__", 0.5)],
    "iand bool": lambda L: [_iop(L.t(A > 0), "__iand__", L.t(B > 0))],
    "ior bool": lambda L: [_iop(L.t(A > 0), "__ior__", L.t(B > 0))],
    "float16 += float32": lambda L: [_iop(L.t(A.astype(np.float16)), "__iadd__", L.t(A))],
    "setitem int": lambda L: _set(L.t(A), 2, 9.0),
    "setitem negative": lambda L: _set(L.t(A), (-1, -2), 9.0),
    "setitem slice tensor": lambda L: _set(L.t(A), (slice(1, 3), slice(None, None, 2)), L.t(B[:3])),
    "setitem column": lambda L: _set(L.t(A), (slice(None), 0), L.t(B[:4])),
    "setitem ellipsis": lambda L: _set(L.t(A), (Ellipsis, 1), 0.5),
    "setitem none": lambda L: _set(L.t(A), (None, 1), L.t(B)),
    "setitem all": lambda L: _set(L.t(A), slice(None), L.t(B)),
    "setitem leading ones": lambda L: _set(L.t(A), 0, L.t(B.reshape(1, 5))),
    "setitem int tensor from float": lambda L: _set(L.t(IDX), (slice(None), 1), 2.5),
    "setitem bool mask": lambda L: _set(L.t(A), L.t(A > 0.5), 0.0),
    "setitem step 3": lambda L: _set(L.t(np.arange(10, dtype=np.float32)), slice(1, None, 3), -1.0),
    "write through views": _sgd_views,
    "write through transpose": lambda L: _through(L.t(A), lambda x: x.T[1], 4.0),
    "write through reshape": lambda L: _through(L.t(A), lambda x: x.reshape(2, 10)[1, 3:7], 4.0),
    "write through permute slice": lambda L: _through(
        L.t(IDX.reshape(2, 2, 5)), lambda x: x.permute(2, 0, 1)[1:4, 1], 0
    ),
    "write through unsqueeze": lambda L: _through(L.t(A), lambda x: x.unsqueeze(0)[0, 2:, 3], -3.0),
    "write through view of view": lambda L: _through(L.t(A), lambda x: x[1:][:, 1:][1], 6.0),
    "recorded before the write": _recorded_before,
    "detach shares storage": lambda L: _shares(L.t(A), lambda x: x.detach()),
    "data shares storage": lambda L: _shares(L.t(A), lambda x: x.data),
    "clone does not": lambda L: _shares(L.t(A), lambda x: x.clone()),
    "x[i] += v": lambda L: _index_iadd(L.t(A)),
    "0-d setitem": lambda L: _set(L.t(np.float32(2.0)), (), 5.0),
    "0-d ellipsis": lambda L: _set(L.t(np.float32(2.0)), Ellipsis, L.t(np.float32(-1.0))),
    "bool setitem": lambda L: _set(L.t(A > 0), (slice(None), 1), True),
    "float16 setitem": lambda L: _set(L.t(A.astype(np.float16)), 1, L.t(B)),
    "empty slice write": lambda L: _set(L.t(A), slice(2, 2), 1.0),
    "data setter": lambda L: _data_set(L),
}


def _iop(x, name, other):
    out = getattr(x, name)(other)
    assert out is x  # in place on the object, as PyTorch
    return x


def _set(x, index, value):
    x[index] = value
    return [x]


def _through(x, make_view, value):
    view = make_view(x)
    other = x[:, 1:4]  # another view of the same base, made before the write
    view.fill_(value)
    return [x, view, other]


def _shares(x, make):
    other = make(x)
    other.mul_(2.0)
    x[0] = 1.0
    return [x, other]


def _index_iadd(x):
    x[1:3, 2] += 5.0
    x[0] *= 2.0
    return [x]


def _data_set(L):
    x = L.t(A)
    x.data = L.t(B)
    return [x * 1.0]


def _run(program, lib):
    return [t.detach().numpy() if hasattr(t, "detach") else t for t in program(lib)]


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_torch_on_cpu(name):
    expected = _run(PROGRAMS[name], Lib(torch))
    got = _run(PROGRAMS[name], Lib(vkml, "cpu"))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and str(g.dtype) == str(e.dtype).replace("torch.", ""), (g, e)
        np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_same_bits_on_vulkan(name, gpu):
    on_cpu = _run(PROGRAMS[name], Lib(vkml, "cpu"))
    on_gpu = _run(PROGRAMS[name], Lib(vkml, gpu))
    for c, g in zip(on_cpu, on_gpu):
        assert _same_bits(c, g), (name, c, g)


def test_realization_order_does_not_change_what_an_op_saw():
    """An op recorded before a write sees the old value whether it is realized before or after."""
    for first in ("before", "after"):
        x = vkml.tensor(A)
        before = x * 1.0
        x.add_(1.0)
        if first == "before":
            before.realize()
            x.realize()
        else:
            x.realize()
            before.realize()
        np.testing.assert_array_equal(before.numpy(), A)
        np.testing.assert_array_equal(x.numpy(), A + np.float32(1.0))


def _written_rows(rows: int, strided_update: bool):
    """(dispatches to realize, values) of a zero tensor's clone written row by row, then maybe x[::2, 3] += 0.5."""
    from vkml import debug

    base = vkml.tensor(np.zeros((rows, 8), np.float32)).realize()
    x = base.clone()
    for i in range(rows):
        x[i] = float(i)
    if strided_update:
        x[::2, 3] += 0.5
    debug.reset_counters()
    x.realize()
    dispatches = debug.counters()["dispatches"]
    np.testing.assert_array_equal(base.numpy(), np.zeros((rows, 8), np.float32))  # clone's source unchanged
    return dispatches, x.numpy()


@pytest.mark.parametrize("rows", [16, 256])
def test_many_small_writes_fuse_into_one_kernel(rows):
    """A row-by-row fill is one elementwise kernel over the base, not a copy per write."""
    dispatches, values = _written_rows(rows, strided_update=False)
    assert dispatches == 1
    np.testing.assert_array_equal(values, np.repeat(np.arange(rows, dtype=np.float32), 8).reshape(rows, 8))


def test_read_modify_write_costs_kernels_independent_of_the_number_of_writes():
    """x[::2, 3] += v reads the written base through a view: that base is computed once, whatever its history."""
    few, values = _written_rows(16, strided_update=True)
    many, _ = _written_rows(256, strided_update=True)
    assert few == many <= 4
    expected = np.repeat(np.arange(16, dtype=np.float32), 8).reshape(16, 8)
    expected[::2, 3] += np.float32(0.5)
    np.testing.assert_array_equal(values, expected)


# ---------------------------------------------------------------------- SGD


def test_hand_written_sgd_updates_linear_parameters_as_torch():
    torch.manual_seed(0)
    ref = torch.nn.Linear(5, 3)
    model = vkml.nn.Linear(5, 3)
    model.load_state_dict({k: v.detach() for k, v in ref.state_dict().items()})
    x = RNG.standard_normal((8, 5)).astype(np.float32)
    y = RNG.standard_normal((8, 3)).astype(np.float32)
    for _ in range(3):
        for net, lib in ((ref, torch), (model, vkml)):
            loss = ((net(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            for p in net.parameters():
                p.grad = None
            loss.backward()
            with lib.no_grad():
                for p in net.parameters():
                    p -= 0.1 * p.grad
    for (name, theirs), ours in zip(ref.named_parameters(), model.parameters()):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_sgd_update_reaches_views_of_the_parameter():
    w = vkml.nn.Parameter(vkml.tensor(A))
    first_row = w[0]
    (w * w).sum().backward()
    with vkml.no_grad():
        w.sub_(w.grad, alpha=0.5)
    np.testing.assert_array_equal(first_row.numpy(), A[0] - np.float32(0.5) * (2 * A[0]))


# ---------------------------------------------------------------------- gradients


def _grad_prog_copy_slices(L, w):
    y = w * 1.0
    y[0] = 0.0
    return (y * y).sum()


def _grad_prog_mul_self(L, w):
    y = w.clone()
    y.mul_(w)
    return y.sum()


def _grad_prog_view_add(L, w):
    y = w * 2.0
    y[:, 1] += w[:, 0]
    return (y * w).sum()


def _grad_prog_into_zeros(L, w):
    x = L.zeros(4, 5)
    x[1:3] = w[:2] * 3.0
    return (x * x).sum()


def _grad_prog_view_regen(L, w):
    y = w.exp()
    v = y[0]
    z = y * 1.0
    z[0].mul_(3.0)
    return (v * 2.0).sum() + z.sum() + y.sum()


def _grad_prog_clamp(L, w):
    z = w * 1.0
    z.clamp_(-0.5, 0.5)
    return (z * w).sum()


def _grad_prog_fill(L, w):
    z = w * 1.0
    z.fill_(2.0)
    return (z * w).sum()


def _grad_prog_copy(L, w):
    z = L.zeros(4, 5)
    z.copy_(w[1])
    return (z * z).sum()


def _grad_prog_strided(L, w):
    y = w * 1.0
    y[::2, 1::3] = w[1::2, :2] * w[1::2, :2]
    return (y * w).sum()


GRAD_PROGRAMS = {
    "copy slices": _grad_prog_copy_slices,
    "mul_ by itself": _grad_prog_mul_self,
    "view += view": _grad_prog_view_add,
    "grad value into zeros": _grad_prog_into_zeros,
    "views rebuilt after a write": _grad_prog_view_regen,
    "clamp_": _grad_prog_clamp,
    "fill_ cuts the history": _grad_prog_fill,
    "copy_ broadcast": _grad_prog_copy,
    "strided write": _grad_prog_strided,
}


def _grad(program, lib):
    w = lib.t(A, requires_grad=True)
    program(lib, w).backward()
    return w.grad.numpy()


@pytest.mark.parametrize("name", GRAD_PROGRAMS)
def test_gradient_matches_torch(name):
    expected = _grad(GRAD_PROGRAMS[name], Lib(torch))
    got = _grad(GRAD_PROGRAMS[name], Lib(vkml, "cpu"))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", GRAD_PROGRAMS)
def test_gradient_same_bits_on_vulkan(name, gpu):
    assert _same_bits(_grad(GRAD_PROGRAMS[name], Lib(vkml, "cpu")), _grad(GRAD_PROGRAMS[name], Lib(vkml, gpu)))


def test_write_makes_a_tensor_require_grad():
    w = vkml.tensor(B, requires_grad=True)
    x = vkml.zeros(3, 5)
    row = x[0]
    x[1] = w * 2.0
    assert x.requires_grad and not x.is_leaf
    assert row.requires_grad  # a view rebuilt from a base that now requires grad (torch: AsStridedBackward)
    (row * 3.0).sum().backward(retain_graph=True)  # the binary fast path must not take the stale view for a constant
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros_like(B))
    (x[1] * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full_like(B, 6.0))


# ---------------------------------------------------------------------- errors (PyTorch's, eager)

ERRORS = {
    "leaf": (lambda L, w: w.add_(1.0), "a leaf Variable that requires grad is being used in an in-place operation."),
    "view of leaf": (
        lambda L, w: w[0].mul_(2.0),
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    ),
    "setitem on leaf": (
        lambda L, w: w.__setitem__(0, 1.0),
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    ),
    "float into long": (
        lambda L, w: L.t(IDX).add_(1.5),
        "result type Float can't be cast to the desired output type Long",
    ),
    "long into bool": (
        lambda L, w: L.t(A > 0).add_(L.t(IDX)),
        "result type Long can't be cast to the desired output type Bool",
    ),
    "broadcast shape": (
        lambda L, w: L.t(B).add_(L.t(A)),
        "output with shape [5] doesn't match the broadcast shape [4, 5]",
    ),
    "expanded write": (
        lambda L, w: L.t(B).expand(4, 5).add_(1.0),
        "unsupported operation: more than one element of the written-to tensor refers to a single memory location.",
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_error_as_torch_leaves_tensors_intact(name):
    program, message = ERRORS[name]
    for lib in (Lib(torch), Lib(vkml, "cpu")):
        w = lib.t(A, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            program(lib, w)
        assert message in str(info.value), (lib.mod.__name__, str(info.value))
        np.testing.assert_array_equal(w.detach().numpy(), A)
        assert w.grad is None


VERSION_ERRORS = {
    "output of exp modified": lambda w: _modify_after(w, lambda y: y.exp(), lambda y, z: z.add_(1.0)),
    "operand of mul modified": lambda w: _modify_after(w, lambda y: y * y, lambda y, z: y.mul_(2.0)),
    "base of a saved view modified": lambda w: _modify_after(w, lambda y: y[0] * y[0], lambda y, z: y.zero_()),
}


def _modify_after(w, op, modify):
    y = w * 1.0
    z = op(y)
    modify(y, z)
    return z


@pytest.mark.parametrize("name", VERSION_ERRORS)
def test_version_counter_error_at_backward(name):
    for lib in (torch, vkml):
        w = lib.tensor(A, requires_grad=True)
        z = VERSION_ERRORS[name](w)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


@pytest.mark.parametrize("op", ["add", "exp"])
def test_no_version_error_when_backward_does_not_need_the_value(op):
    """add needs no operand, exp only its output: writing the operand afterwards is fine (PyTorch too)."""
    grads = []
    for lib in (torch, vkml):
        w = lib.tensor(A, requires_grad=True)
        y = w * 1.0
        z = y + 1.0 if op == "add" else y.exp()
        y.add_(1.0)
        z.sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_writes_through_data_and_detach_keep_a_parameter_a_leaf():
    for lib in (torch, vkml):
        w = (torch.nn.Parameter if lib is torch else vkml.nn.Parameter)(lib.zeros(3, 2))
        w.data[0] = 5.0
        w.detach()[1].fill_(2.0)
        w.data.mul_(3.0)
        w.detach()[2].copy_(lib.zeros(2, requires_grad=True) * 1.0)
        assert w.is_leaf and w.requires_grad
        np.testing.assert_array_equal(w.detach().numpy(), [[15.0, 15.0], [6.0, 6.0], [0.0, 0.0]])
        (w * w).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), [[30.0, 30.0], [12.0, 12.0], [0.0, 0.0]])


def test_version_counts_writes_shared_by_views():
    for lib in (torch, vkml):
        x = lib.zeros(3, 4)
        v = x[1]
        assert x._version == 0
        v.add_(1.0)
        x[0] = 2.0
        assert x._version == v._version == 2


def test_copy_rejects_a_number_and_fill_a_tensor_with_dims():
    x = vkml.tensor(A)
    with pytest.raises(TypeError, match="copy_"):
        x.copy_(1.0)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        x.fill_(vkml.tensor(B))
    np.testing.assert_array_equal(x.numpy(), A)


def test_setitem_value_that_does_not_fit_raises_and_changes_nothing():
    x = vkml.tensor(A)
    with pytest.raises(vkml.ShapeError, match="cannot be written to a region of shape"):
        x[0] = vkml.tensor(A[:, :2])
    np.testing.assert_array_equal(x.numpy(), A)


def test_detach_in_place_of_a_view_raises_as_torch():
    for lib in (torch, vkml):
        w = lib.tensor(A, requires_grad=True)
        with pytest.raises(RuntimeError, match="Can't detach views in-place"):
            (w * 1.0)[0].detach_()


def test_random_fills_keep_shape_dtype_and_range():
    # Seeded: float16 rounds a draw just below 3 up to 3.0, in PyTorch as here, so the range is closed.
    vkml.manual_seed(5)
    torch.manual_seed(5)
    x = vkml.zeros(64, dtype=vkml.float16)
    x.uniform_(-2.0, 3.0)
    values = x.numpy()
    assert values.dtype == np.float16 and values.min() >= -2.0 and values.max() <= 3.0
    vkml.manual_seed(5)
    torch.manual_seed(5)
    want = torch.zeros(64).uniform_(-2.0, 3.0).numpy()  # float32: the same draws in every PyTorch version
    np.testing.assert_array_equal(vkml.zeros(64).uniform_(-2.0, 3.0).numpy(), want)
    y = vkml.zeros(4096).normal_(1.0, 0.5).numpy()
    assert abs(y.mean() - 1.0) < 0.05 and abs(y.std() - 0.5) < 0.05
    with pytest.raises(vkml.DTypeError, match="uniform_"):
        vkml.zeros(3, dtype=vkml.int64).uniform_()


def test_reshape_is_a_view_where_strides_allow_else_a_copy():
    for lib in (torch, vkml):
        x = lib.zeros(3, 4)
        x.T.reshape(-1).add_(1.0)  # a copy: x unchanged
        x[1:].reshape(-1).add_(2.0)  # a view
        x[:, 1].unsqueeze(0).add_(3.0)  # a view
        x.view(2, 6)[0].add_(4.0)
        np.testing.assert_array_equal(
            x.numpy(), [[4.0, 7.0, 4.0, 4.0], [6.0, 9.0, 2.0, 2.0], [2.0, 5.0, 2.0, 2.0]], err_msg=lib.__name__
        )
        with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
            x.T.view(-1)


def test_contiguous_of_a_non_contiguous_view_is_a_copy():
    for lib in (torch, vkml):
        x = lib.zeros(3, 4)
        same = x[1:].contiguous()
        copy = x.T.contiguous()
        same.add_(1.0)
        copy.add_(5.0)
        np.testing.assert_array_equal(x.numpy(), np.pad(np.ones((2, 4), np.float32), ((1, 0), (0, 0))))


def test_views_of_an_expand_that_adds_leading_dims():
    # replaying the view chain once lost the new leading dims (IndexError in a later permute), so a float64
    # matmul with such an operand (its sum-of-products path reshapes it) failed
    x = vkml.arange(12.0).reshape(4, 3)
    y = x.expand(2, 4, 3).transpose(-1, -2).unsqueeze(-3)
    assert y.tolist() == torch.arange(12.0).reshape(4, 3).expand(2, 4, 3).transpose(-1, -2).unsqueeze(-3).tolist()
    eye = vkml.eye(4, 3, dtype=vkml.float64).expand(2, 4, 3)
    assert vkml.matmul(vkml.ones(2, 1, 4, dtype=vkml.float64), eye).tolist() == [[[1.0, 1.0, 1.0]]] * 2


def test_indexing_a_view_of_an_expand_that_adds_leading_dims() -> None:
    # the view chain replays expand((2, 3, 3)) on a 2-d stack: the new dims are size-1 dims first
    eye = vkml.eye(3)
    picked = eye.expand(2, 3, 3).mT[..., 1]
    np.testing.assert_array_equal(picked.numpy(), np.eye(3, dtype=np.float32)[1][None].repeat(2, 0))
