"""PyTorch's test/nn/test_parametrization.py, run on torch and on vkml side by side.

Each scenario follows one of its tests: register_parametrization and remove_parametrizations
(unsafe, several parametrizations, nested ones, on buffers, leave_parametrized, the identity of the
restored parameter, training through them with SGD), right_inverse initialisation, the errors of
registering on plain and on parametrized tensors, parametrizations with several inputs, caching,
training mode, type_before_parametrizations, deepcopy, transfer_parametrizations_and_params,
spectral_norm (structure, forward, train/eval, state_dict keys and loading, ConvTranspose2d,
value), orthogonal (three maps, with and without trivialization, its errors), weight_norm (old
checkpoints, pickling, deepcopy) and registration under requires_grad=False. Weights and inputs
come from numpy with fixed seeds (spectral_norm's random ``_u``/``_v`` are set too), so torch and
vkml compute the same; what a scenario returns, raises and warns must match (tests/pytorch_suite.py).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from pytorch_suite import check, known_params

import vkml

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's
TOL = {"rtol": 1e-4, "atol": 1e-5}  # solves and SVDs in float32, in another order than PyTorch's


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def P(m):
    return m.nn.utils.parametrize


def arr(seed: int, *shape) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 0.3).astype(np.float32)


def linear(m, n_in: int, n_out: int, seed: int = 0, **kwargs):
    lin = m.nn.Linear(n_in, n_out, **kwargs)
    with m.no_grad():
        lin.weight.copy_(m.tensor(arr(seed, n_out, n_in)))
        if lin.bias is not None:
            lin.bias.copy_(m.tensor(arr(seed + 1, n_out)))
    return lin


def parametrizations(m):
    """The test's small parametrizations, as classes of ``m.nn.Module``."""

    class Skew(m.nn.Module):
        def forward(self, X):
            X = X.tril(-1)
            return X - X.T

    class Orthogonal(m.nn.Module):  # the Cayley map: orthogonal for a skew-symmetric X
        def forward(self, X):
            Id = m.eye(X.size(0))
            return m.linalg.solve(Id + X, Id - X).contiguous()

    class Resize(m.nn.Module):
        def forward(self, X):
            return X[[0]]

    class NoResize(m.nn.Module):
        def forward(self, X):
            return X

    class FirstZero(m.nn.Module):
        def forward(self, x):
            return m.cat([x.new_zeros(1), x[1:]])

    class LastZero(m.nn.Module):
        def forward(self, x):
            return m.cat([x[:-1], x.new_zeros(1)])

    class AddOne(m.nn.Module):
        def forward(self, x):
            return x + 1.0

    class Double(m.nn.Module):
        def forward(self, x):
            return 2.0 * x

        def right_inverse(self, w):
            return 0.5 * w

    class MinusOne(m.nn.Module):
        def forward(self, x):
            return x - 1.0

    class RankOne(m.nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Y):
            U, S, Vh = m.linalg.svd(Y, full_matrices=False)
            s0_sqrt = S[0].sqrt().unsqueeze(-1)
            return U[..., :, 0] * s0_sqrt, Vh[..., 0, :] * s0_sqrt

    return {
        c.__name__: c
        for c in (Skew, Orthogonal, Resize, NoResize, FirstZero, LastZero, AddOne, Double, MinusOne, RankOne)
    }


def state(model, m) -> tuple:
    """What test_register_and_remove_parametrization asserts on after each step."""
    return (
        hasattr(model, "parametrizations"),
        P(m).is_parametrized(model),
        P(m).is_parametrized(model, "weight"),
        P(m).is_parametrized(model, "bias"),
        "weight" in model._parameters,
        type(model).__name__,
        len(list(model.parameters())),
    )


@slow
def unsafe_resize_refused(m):
    model = linear(m, 8, 8)
    P(m).register_parametrization(model, "weight", parametrizations(m)["Resize"]())


@sc
def unsafe_parametrizations_register_and_remove(m):
    c = parametrizations(m)
    model = linear(m, 8, 8)
    weight = model.weight
    out = []
    P(m).register_parametrization(model, "weight", c["Resize"](), unsafe=True)
    out += [state(model, m), tuple(model.weight.shape)]
    P(m).remove_parametrizations(model, "weight", leave_parametrized=False)
    out += [state(model, m), model.weight is weight, model.weight]
    P(m).register_parametrization(model, "weight", c["Resize"](), unsafe=True)
    P(m).register_parametrization(model, "weight", c["NoResize"](), unsafe=False)
    out += [state(model, m), tuple(model.weight.shape)]
    P(m).remove_parametrizations(model, "weight", leave_parametrized=False)
    out += [state(model, m), model.weight is weight]
    P(m).register_parametrization(model, "weight", c["Skew"](), unsafe=True)
    out += [model.weight, state(model, m)]
    P(m).remove_parametrizations(model, "weight", leave_parametrized=False)
    out += [state(model, m), model.weight is weight, model.weight]
    return out


@slow
def register_remove_and_train(m):
    c = parametrizations(m)
    model = linear(m, 8, 8)
    weight, bias = model.weight, model.bias
    out = []
    P(m).register_parametrization(model, "weight", c["Skew"]())
    P(m).register_parametrization(model, "weight", c["Orthogonal"]())
    out += [model.weight, "weight" in model.parametrizations, state(model, m)]
    P(m).remove_parametrizations(model, "weight", leave_parametrized=False)
    out += [model.weight, model.weight is weight, state(model, m)]
    P(m).register_parametrization(model, "weight", c["Skew"]())
    P(m).register_parametrization(model, "weight", c["Orthogonal"]())
    P(m).register_parametrization(model, "bias", c["FirstZero"]())
    P(m).register_parametrization(model, "bias", c["LastZero"]())
    out += [state(model, m), model.bias[0].item(), model.bias[-1].item()]
    sgd = m.optim.SGD(model.parameters(), lr=0.01)

    def step():
        sgd.zero_grad()
        (model.weight.T @ model.bias).sum().backward()
        sgd.step()
        return model.weight.detach().clone(), model.bias.detach().clone()

    out.append(step())
    P(m).remove_parametrizations(model, "weight", leave_parametrized=False)
    out += [state(model, m), model.weight is weight, step()]
    P(m).remove_parametrizations(model, "bias", leave_parametrized=False)
    out += [state(model, m), model.bias is bias, step()]
    for _ in range(2):
        P(m).register_parametrization(model, "weight", c["Skew"]())
        P(m).register_parametrization(model, "weight", c["Orthogonal"]())
        P(m).remove_parametrizations(model, "weight", leave_parametrized=True)
        out += [model.weight is weight, model.bias is bias, step()]
    return out


@sc
def nested_parametrization(m):
    c = parametrizations(m)
    model = linear(m, 4, 4)
    P(m).register_parametrization(model, "weight", c["Skew"]())
    inner = model.parametrizations.weight
    out = [model.weight, hasattr(inner, "parametrizations"), P(m).is_parametrized(inner, "original")]
    P(m).register_parametrization(inner, "original", c["Skew"]())
    out += [hasattr(inner, "parametrizations"), P(m).is_parametrized(inner), "original" in inner._parameters]
    out.append(inner.original)
    P(m).remove_parametrizations(inner, "original", leave_parametrized=False)
    out += [hasattr(inner, "parametrizations"), type(inner).__name__]
    P(m).remove_parametrizations(model, "weight", leave_parametrized=False)
    out += [hasattr(model, "parametrizations"), type(model).__name__]
    return out


@sc
def buffer_parametrization(m):
    c = parametrizations(m)
    model = linear(m, 8, 8)
    delattr(model, "bias")
    model.bias = m.nn.Buffer(m.ones(8))
    P(m).register_parametrization(model, "bias", c["FirstZero"]())
    P(m).register_parametrization(model, "bias", c["LastZero"]())
    out = [P(m).is_parametrized(model, "bias"), model.bias, len(list(model.parameters())), sorted(model.state_dict())]
    P(m).remove_parametrizations(model, "bias", leave_parametrized=True)
    out += [P(m).is_parametrized(model), model.bias, len(list(model.parameters())), "bias" in model._buffers]
    return out


def _stateful_orthogonal(m, n: int):
    class Orthogonal(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.id = m.nn.Buffer(m.eye(n))
            self.B = m.nn.Buffer(m.tensor(np.linalg.qr(arr(9, n, n))[0].astype(np.float32)))

        def forward(self, X):
            A = X.triu(1)
            A = A - A.T
            return self.B @ m.linalg.solve(self.id + A, self.id - A)

    return Orthogonal()


@slow
def serialization_through_state_dict(m):
    def get_model(seed):
        model = m.nn.Sequential(linear(m, 5, 5, seed), m.nn.ReLU(), linear(m, 5, 1, seed + 2))
        P(m).register_parametrization(model[0], "weight", _stateful_orthogonal(m, 5))
        return model

    model, new_model = get_model(0), get_model(5)
    keys = sorted(model.state_dict())
    new_model.load_state_dict(model.state_dict())
    return keys, new_model[0].weight, model[0].weight, new_model[0].parametrizations.weight[0].B


@sc
def pickling_parametrized_model_raises(m):
    model = linear(m, 3, 3)
    P(m).register_parametrization(model, "weight", parametrizations(m)["AddOne"]())
    return pickle.dumps(model)


@slow
def initialization_with_right_inverse(m):
    class Skew(m.nn.Module):
        def forward(self, X):
            A = X.triu(1)
            return A - A.T

        def right_inverse(self, X):
            if not m.allclose(X, -X.T, atol=1e-6):
                raise ValueError("The matrix is not skew-symmetric.")
            return X.triu(1)

    class Orthogonal(m.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.B = m.nn.Buffer(m.eye(n))

        def forward(self, X):
            Id = m.eye(X.size(0))
            return self.B @ m.linalg.solve(Id + X, Id - X)

        def right_inverse(self, X):
            if not m.allclose(X.T @ X, m.eye(X.size(0)), atol=1e-4):
                raise ValueError("The input is not orthogonal.")
            self.B = X
            return m.zeros_like(X)

    n = 5
    model = linear(m, n, n)
    skew = Skew()
    with m.no_grad():  # PyTorch's test uses set_, which vkml lacks; copy_ gives the same values
        model.weight.copy_(skew(model.weight))
    P(m).register_parametrization(model, "weight", skew)
    out = []
    try:
        model.weight = m.tensor(np.abs(arr(3, n, n)))
    except ValueError as error:
        out.append(str(error))
    X = m.tensor(arr(4, n, n))
    X = X - X.T
    model.weight = X
    out += [model.parametrizations.weight.original, model.weight]
    P(m).register_parametrization(model, "weight", Orthogonal(n))
    try:
        model.weight = m.tensor(np.abs(arr(5, n, n)))
    except ValueError as error:
        out.append(str(error))
    Q = m.tensor(np.linalg.qr(arr(6, n, n))[0].astype(np.float32))
    model.weight = Q
    out += [model.weight, model.parametrizations.weight.original]
    return out


def unparametrized_error(case: str):
    """test_errors_unparametrized_tensor_parametrization, one registration each."""

    def f(m):
        module = linear(m, 3, 4)

        class Identity(m.nn.Module):
            def forward(self, x):
                return x

        class Sum(m.nn.Module):
            def forward(self, x, y):
                return x + y

            def right_inverse(self, z):
                return z, m.zeros_like(z)

        class WrongNumberParams(m.nn.Module):
            def forward(self, x, y, z):
                return x + y + z

            def right_inverse(self, w):
                return w, m.zeros_like(w)

        class WrongRightInverse(Identity):
            def right_inverse(self, z):
                return None

        class WrongRightInverseSequence(m.nn.Module):
            def forward(self, x, y):
                return x

            def right_inverse(self, z):
                return None, z

        class ChangeDtypeInverse(m.nn.Module):
            def forward(self, x):
                return x.float()

            def right_inverse(self, w):
                return w.bool()

        class ChangeDeviceInverse(m.nn.Module):
            def forward(self, x):
                return x.float()

            def right_inverse(self, w):
                return w.to(m.device("meta"))

        class NotTensor(m.nn.Module):
            def forward(self, x):
                return 2

        class ChangeDtype(m.nn.Module):
            def forward(self, x):
                return x.bool()

        class ChangeShape(m.nn.Module):
            def forward(self, x):
                return x[:-1]

        class ChangeDtypeMulti(m.nn.Module):
            def forward(self, x, y):
                return (x + y).bool()

            def right_inverse(self, w):
                return w, w + 1

        class SequenceLen1(m.nn.Module):
            def forward(self, x):
                return x

            def right_inverse(self, w):
                return (w,)

        out = []
        try:
            if case == "missing_parameter":
                P(m).register_parametrization(module, "foo", Identity())
            elif case == "remove_unparametrized":
                P(m).remove_parametrizations(module, "bias")
            elif case == "sum_leave_false":
                P(m).register_parametrization(module, "weight", Sum())
                try:
                    P(m).remove_parametrizations(module, "weight", leave_parametrized=False)
                finally:
                    P(m).remove_parametrizations(module, "weight", leave_parametrized=True)
            elif case == "sequence_len1":
                P(m).register_parametrization(module, "weight", SequenceLen1())
                out += [hasattr(module.parametrizations.weight, n) for n in ("original0", "original1")]
                out.append(module.weight)
                P(m).remove_parametrizations(module, "weight", leave_parametrized=True)
            else:
                cls = {
                    "wrong_number_params": WrongNumberParams,
                    "right_inverse_none": WrongRightInverse,
                    "right_inverse_sequence_none": WrongRightInverseSequence,
                    "right_inverse_changes_dtype": ChangeDtypeInverse,
                    "right_inverse_changes_device": ChangeDeviceInverse,
                    "forward_not_tensor": NotTensor,
                    "forward_changes_dtype": ChangeDtype,
                    "forward_changes_shape": ChangeShape,
                    "many_to_one_changes_dtype": ChangeDtypeMulti,
                }[case]
                P(m).register_parametrization(module, "weight", cls())
        except (ValueError, TypeError) as error:
            out.append((type(error).__name__, str(error)))
        return out, P(m).is_parametrized(module), module.weight, type(module).__name__

    return f


for _case in (
    "missing_parameter",
    "remove_unparametrized",
    "sum_leave_false",
    "wrong_number_params",
    "right_inverse_none",
    "right_inverse_sequence_none",
    "right_inverse_changes_dtype",
    "right_inverse_changes_device",
    "forward_not_tensor",
    "forward_changes_dtype",
    "forward_changes_shape",
    "many_to_one_changes_dtype",
    "sequence_len1",
):
    SC[f"unparametrized_error_{_case}"] = unparametrized_error(_case)


def parametrized_error(case: str):
    """test_errors_parametrized_tensor_parametrization: a second parametrization that breaks a rule."""

    def f(m):
        class Identity(m.nn.Module):
            def forward(self, x):
                return x

        class WrongReturn(m.nn.Module):
            def forward(self, x):
                return x, x

        class ChangeDtype(m.nn.Module):
            def forward(self, x):
                return x.bool()

        class ChangeShape(m.nn.Module):
            def forward(self, x):
                return x[:-1]

        class WrongReturnInverse(Identity):
            def right_inverse(self, x):
                return x, x

        class ChangeDtypeInverse(Identity):
            def right_inverse(self, x):
                return x.bool()

        class ChangeShapeInverse(Identity):
            def right_inverse(self, x):
                return x[:-1]

        module = linear(m, 3, 4)
        P(m).register_parametrization(module, "weight", Identity())
        cls = {
            "wrong_return": WrongReturn,
            "changes_dtype": ChangeDtype,
            "changes_shape": ChangeShape,
            "right_inverse_wrong_return": WrongReturnInverse,
            "right_inverse_changes_dtype": ChangeDtypeInverse,
            "right_inverse_changes_shape": ChangeShapeInverse,
        }[case]
        try:
            P(m).register_parametrization(module, "weight", cls())
        except ValueError as error:
            return (
                str(error),
                P(m).is_parametrized(module),
                len(module.parametrizations.weight),
                type(module.parametrizations.weight[0]).__name__,
            )
        return "registered"

    return f


for _case in (
    "wrong_return",
    "changes_dtype",
    "changes_shape",
    "right_inverse_wrong_return",
    "right_inverse_changes_dtype",
    "right_inverse_changes_shape",
):
    SC[f"parametrized_error_{_case}"] = parametrized_error(_case)


@slow
def multiple_inputs_parametrization(m):
    c = parametrizations(m)
    model = linear(m, 3, 3)
    P(m).register_parametrization(model, "weight", c["RankOne"]())
    inner = model.parametrizations.weight
    out = [state(model, m), sorted(inner._parameters), m.linalg.matrix_rank(model.weight).item()]
    try:
        P(m).remove_parametrizations(model, "weight", leave_parametrized=False)
    except ValueError as error:
        out.append(str(error))
    P(m).remove_parametrizations(model, "weight", leave_parametrized=True)
    out += [state(model, m), model.weight]
    P(m).register_parametrization(model, "weight", c["RankOne"]())
    P(m).register_parametrization(model, "weight", c["Double"]())
    out += [model.weight, len(list(model.parameters()))]
    sgd = m.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        sgd.zero_grad()
        (model.weight.T @ model.bias).sum().backward()
        sgd.step()
    out.append(model.weight)
    P(m).remove_parametrizations(model, "weight", leave_parametrized=True)
    out += [state(model, m), model.weight]
    return out


@sc
def caching(m):
    c = parametrizations(m)
    model = linear(m, 5, 5)
    P(m).register_parametrization(model, "weight", c["Skew"]())
    P(m).register_parametrization(model, "weight", c["AddOne"]())
    to_model = linear(m, 5, 5, 3)
    P(m).transfer_parametrizations_and_params(model, to_model)
    with P(m).cached():
        X, Y = model.weight, model.weight
        A, B = to_model.weight, to_model.weight
        inside = [X is Y, A is B, A is X]
    return inside, model.weight is model.weight, X, A


@sc
def same_training_mode(m):
    class Identity(m.nn.Module):
        def forward(self, X):
            return X

    module = linear(m, 4, 4)
    module.eval()
    P(m).register_parametrization(module, "weight", Identity())
    out = [module.parametrizations.weight[0].training]
    module.train()
    P(m).register_parametrization(module, "weight", Identity().eval())
    return out + [module.parametrizations.weight[0].training, module.parametrizations.weight[1].training]


@sc
def type_before_parametrizations(m):
    model = linear(m, 5, 5)
    before = P(m).type_before_parametrizations(model) is type(model)
    P(m).register_parametrization(model, "weight", parametrizations(m)["AddOne"]())
    after = P(m).type_before_parametrizations(model) is m.nn.Linear
    return before, after, type(model) is m.nn.Linear, type(model).__name__, isinstance(model, m.nn.Linear)


@sc
def deepcopy_after_parametrization(m):
    c = parametrizations(m)

    class ModelWithoutDeepcopy(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = m.nn.Parameter(m.tensor([1.0, 1.0, 1.0, 1.0]))
            self.bias = m.nn.Parameter(m.tensor([0.0, 0.0, 0.0, 0.0]))
            self.attr = [1.0, 2.0, 3.0, 4.0]

    class ActualModel(ModelWithoutDeepcopy):
        def __deepcopy__(self, memo):
            result = self.__new__(self.__class__)
            memo[id(self)] = result
            result.__dict__ = copy.deepcopy(self.__dict__, memo)
            return result

    def compare(m1, m2):
        w1, w2 = m1.parametrizations.weight.original, m2.parametrizations.weight.original
        b1 = m1.parametrizations.bias.original if P(m).is_parametrized(m1, "bias") else m1.bias
        b2 = m2.parametrizations.bias.original if P(m).is_parametrized(m2, "bias") else m2.bias
        return (
            sorted(m1.__dict__) == sorted(m2.__dict__),
            m1 is not m2,
            w2,
            w1 is not w2,
            b2,
            b1 is not b2,
            m2.attr,
            m1.attr is not m2.attr,
            m2.weight,
        )

    out = []
    for model in (ModelWithoutDeepcopy(), ActualModel()):
        P(m).register_parametrization(model, "weight", c["AddOne"]())
        out.append(compare(model, copy.deepcopy(model)))
        P(m).register_parametrization(model, "bias", c["AddOne"]())
        out.append(compare(model, copy.deepcopy(model)))
        P(m).register_parametrization(model, "weight", c["AddOne"]())
        out.append(compare(model, copy.deepcopy(model)))
    return out


@sc
def transfer_parametrizations_and_params(m):
    c = parametrizations(m)
    model = linear(m, 5, 5)
    for name in ("AddOne", "Double", "MinusOne"):
        P(m).register_parametrization(model, "weight", c[name]())
    hold = model.weight
    to_model = linear(m, 5, 5, 7)
    P(m).transfer_parametrizations_and_params(model, to_model)
    out = [P(m).is_parametrized(to_model, "weight"), to_model.weight, to_model.parametrizations.weight.original]
    out.append(model.weight)
    P(m).remove_parametrizations(to_model, "weight")
    out += [P(m).is_parametrized(to_model, "weight"), P(m).is_parametrized(model, "weight"), hold]
    model.test_param = m.nn.Parameter(m.tensor(arr(8, 5, 5)))
    out.append(hasattr(to_model, "test_param"))
    P(m).register_parametrization(model, "test_param", c["Double"]())
    P(m).transfer_parametrizations_and_params(model, to_model, "test_param")
    out += [to_model.test_param, to_model.parametrizations.test_param.original, model.test_param]
    return out


@sc
def transfer_single_param(m):
    c = parametrizations(m)
    model = linear(m, 5, 5)
    for name in ("AddOne", "Double", "MinusOne"):
        P(m).register_parametrization(model, "weight", c[name]())
        P(m).register_parametrization(model, "bias", c[name]())
    to_model = linear(m, 5, 5, 7)
    P(m).transfer_parametrizations_and_params(model, to_model, "weight")
    return (
        to_model.weight,
        to_model.parametrizations.weight.original,
        "bias" in to_model.parametrizations,
        to_model.bias,
    )


@slow
def transfer_many_to_one(m):
    c = parametrizations(m)
    model = linear(m, 3, 3)
    P(m).register_parametrization(model, "weight", c["RankOne"]())
    P(m).register_parametrization(model, "weight", c["Double"]())
    to_model = linear(m, 3, 3, 7)
    P(m).transfer_parametrizations_and_params(model, to_model)
    inner = to_model.parametrizations.weight
    return to_model.weight, inner.original0, inner.original1, model.weight


@sc
def register_without_grad(m):
    class SplitAndCat(m.nn.Module):
        def right_inverse(self, x):
            return m.split(x, x.shape[1] // 2)

        def forward(self, x0, x1):
            return m.cat([x0, x1])

    model = linear(m, 8, 8)
    model.weight.requires_grad = False
    P(m).register_parametrization(model, "weight", SplitAndCat())
    inner = model.parametrizations.weight
    return model.weight.requires_grad, inner.original0.requires_grad, inner.original1.requires_grad, model.weight


# ---------- spectral_norm
def spectral(m, module, seed: int, name: str = "weight", **kwargs):
    """spectral_norm with its random power-iteration vectors replaced by numpy's, the same on both sides."""
    module = m.nn.utils.parametrizations.spectral_norm(module, name, **kwargs)
    snm = module.parametrizations[name][-1]
    with m.no_grad():
        snm._u.copy_(m.nn.functional.normalize(m.tensor(arr(seed, *snm._u.shape)), dim=0))
        snm._v.copy_(m.nn.functional.normalize(m.tensor(arr(seed + 1, *snm._v.shape)), dim=0))
    return module


@sc
def spectral_norm_structure(m):
    model = spectral(m, linear(m, 5, 7), 1)
    snm = model.parametrizations.weight[0]
    out = [
        tuple(snm._u.shape),
        "original" in model.parametrizations.weight._parameters,
        sorted(snm._buffers),
        "weight" in model._buffers,
        "weight" in model._parameters,
        tuple(model.parametrizations.weight.original.stride()) == tuple(model.weight.stride()),
    ]
    model = P(m).remove_parametrizations(model, "weight")
    out += [hasattr(model, "parametrizations"), "weight" in model._parameters]
    model = spectral(m, model, 2)
    model = spectral(m, model, 3)
    model = spectral(m, model, 4, "bias")
    model = P(m).remove_parametrizations(model, "bias")
    out += ["bias" in model._parameters, hasattr(model, "parametrizations"), "weight" in model._parameters]
    model = P(m).remove_parametrizations(model, "weight")
    out += [hasattr(model, "parametrizations"), "weight" in model._parameters, P(m).is_parametrized(model)]
    return out


def spectral_norm_train_eval(requires_grad: bool):
    """test_new_spectral_norm's training and eval checks (without gradcheck and DataParallel)."""

    def f(m):
        x = m.tensor(arr(5, 2, 3))

        def get():
            lin = linear(m, 3, 4)
            lin.weight.requires_grad_(requires_grad)
            lin = spectral(m, lin, 6)
            return lin, lin.parametrizations.weight[0]

        model, snm = get()
        u0 = snm._u.clone()
        opt = m.optim.SGD(model.parameters(), lr=0.1)
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        out = model(x)
        results = [out, snm._u, snm._v, m.equal(u0, snm._u)]
        if requires_grad:
            results.append(m.autograd.grad(out.sum(), model.parametrizations.weight.original))
        model, snm = get()
        before = model(x).detach()
        model.eval()
        model = P(m).remove_parametrizations(model, "weight")
        results += [model(x), before]
        model, snm = get()
        model(x)
        last = model(x)
        model.eval()
        results += [model(x), last, model(x), snm._u, snm._v]
        return results

    return f


SLOW["spectral_norm_train_eval_requires_grad"] = spectral_norm_train_eval(True)
SLOW["spectral_norm_train_eval_no_grad"] = spectral_norm_train_eval(False)


def spectral_norm_state_dict(activate_times: int):
    def f(m):
        x = m.tensor(arr(11, 2, 3))
        snm = spectral(m, linear(m, 3, 5), 12)
        snm.train()
        for _ in range(activate_times):
            snm(x)
        saved = copy.deepcopy(snm.state_dict())
        out = [sorted(saved)]
        loose = copy.deepcopy(saved)
        loose["nonsense"] = "nonsense"
        try:
            snm.load_state_dict(loose, strict=True)
        except RuntimeError as error:
            out.append(str(error).split("\n")[0])
        for drop in (
            "parametrizations.weight.original",
            "parametrizations.weight.0._u",
            "parametrizations.weight.0._v",
        ):
            snm.load_state_dict(loose, strict=False)
            del loose[drop]
        snm.load_state_dict(loose, strict=False)
        snm = spectral(m, P(m).remove_parametrizations(snm, "weight"), 13)
        snm.load_state_dict(saved)
        with m.no_grad():
            snm.eval()
            out.append(snm(x))
            snm.train()
            out += [snm(x), snm(x)]
            snm.eval()
            out.append(snm(x))
        return out

    return f


SLOW["spectral_norm_state_dict_0"] = spectral_norm_state_dict(0)
SLOW["spectral_norm_state_dict_3"] = spectral_norm_state_dict(3)


@slow
def spectral_norm_conv_transpose_dim(m):
    conv = m.nn.ConvTranspose2d(3, 4, (2, 3))
    with m.no_grad():
        conv.weight.copy_(m.tensor(arr(14, *conv.weight.shape)))
        conv.bias.zero_()
    conv = spectral(m, conv, 15)
    snm = conv.parametrizations.weight[0]
    out = conv(m.tensor(arr(16, 1, 3, 4, 5)))
    return out, tuple(snm._u.shape), tuple(conv.parametrizations.weight.original[0, :, 0, 0].shape)


@slow
def spectral_norm_forward(m):
    x = m.tensor(arr(17, 3, 5))
    model = spectral(m, linear(m, 5, 7), 18)
    snm = model.parametrizations.weight[0]
    weight = model.parametrizations.weight.original
    weight_mat = weight.view(weight.size(0), -1)
    u = m.nn.functional.normalize(m.mv(weight_mat, snm._v), dim=0, eps=1e-12)
    v = m.nn.functional.normalize(m.mv(weight_mat.t(), u), dim=0, eps=1e-12)
    naive = m.nn.functional.linear(x, weight / m.dot(u, m.matmul(weight_mat, v)), model.bias)
    return model(x), naive


@slow
def spectral_norm_value(m):
    model = linear(m, 2, 2)
    with m.no_grad():
        x = m.tensor([0.5, -1.5])
        model.weight = m.nn.Parameter(m.diag(x))
        m.nn.utils.parametrizations.spectral_norm(model)
        return model.weight.data, m.diag(x / x.abs().max())


# ---------- orthogonal
def orthogonal_case(shape: tuple, parametrization: str, trivialization: bool):
    """test_orthogonal_parametrization for a real Linear: the weight, assigning to it, and two SGD steps."""

    def f(m):
        model = linear(m, *shape)
        w_init = model.weight.clone()
        m.nn.utils.parametrizations.orthogonal(model, "weight", parametrization, use_trivialization=trivialization)
        out = [model.weight, tuple(w_init.shape)]
        can_initialize = trivialization or parametrization == "householder"
        wide = w_init.size(-2) < w_init.size(-1)
        X = m.tensor(arr(19, *shape[::-1]))
        Q = m.linalg.qr(X.mT if wide else X).Q
        Q = Q.mT if wide else Q
        for target in (Q, m.tensor(arr(20, *shape[::-1]))):
            try:
                model.weight = target
                out.append(model.weight)
            except NotImplementedError as error:
                out.append(str(error))
        opt = m.optim.SGD(model.parameters(), lr=0.1)
        x = m.tensor(arr(21, 3, shape[0]))
        # a wide or tall matrix's trivialization completes its base with random columns (PyTorch's randn), on
        # which the gradient depends: there the test's checks are compared, not the values
        random_base = trivialization and shape[0] != shape[1]
        for _ in range(2):
            opt.zero_grad()
            model(x).norm().backward()
            grad = model.parametrizations.weight.original.grad
            zeros = grad.triu(1) if grad.size(-2) >= grad.size(-1) else grad.tril(-1)
            checks = [bool((zeros == 0).all()), bool((grad.diagonal(dim1=-2, dim2=-1) == 0).all())]
            out.append(checks if random_base else grad)
            opt.step()
            w = model.weight if model.weight.size(-2) >= model.weight.size(-1) else model.weight.mT
            orthogonal = m.allclose(w.mT @ w, m.eye(w.size(-1)), atol=1e-5)
            out.append(orthogonal if random_base else model.weight)
        return out + [can_initialize]

    return f


for _shape in ((4, 4), (5, 3), (3, 5)):
    for _map in ("matrix_exp", "cayley", "householder"):
        for _triv in (False, True):
            SLOW[f"orthogonal_{_shape[0]}x{_shape[1]}_{_map}_trivialization{_triv}"] = orthogonal_case(
                _shape, _map, _triv
            )


@sc
def orthogonal_errors(m):
    model = linear(m, 3, 4)
    out = []
    for call in (
        lambda: m.nn.utils.parametrizations.orthogonal(model, "weight", "foo"),
        lambda: m.nn.utils.parametrizations.orthogonal(model, "bias"),
    ):
        try:
            call()
        except ValueError as error:
            out.append(str(error))
    m.nn.utils.parametrizations.orthogonal(model, "weight")
    try:
        model.weight = m.ones(5, 5)
    except ValueError as error:
        out.append(str(error))
    P(m).remove_parametrizations(model, "weight")
    return out, P(m).is_parametrized(model)


# ---------- weight_norm
@slow
def weight_norm_state_dict_compat(m):
    old = m.nn.utils.weight_norm(linear(m, 4, 5))
    new = m.nn.utils.parametrizations.weight_norm(linear(m, 4, 5, 9))
    new.load_state_dict(old.state_dict())
    x = m.tensor(arr(22, 3, 4))
    return sorted(old.state_dict()), sorted(new.state_dict()), old(x), new(x)


@sc
def weight_norm_pickle(m):
    return pickle.dumps(m.nn.utils.parametrizations.weight_norm(linear(m, 4, 5)))


@slow
def weight_norm_deepcopy(m):
    model = m.nn.utils.parametrizations.weight_norm(linear(m, 4, 5))
    x = m.tensor(arr(23, 3, 4))
    return model(x), copy.deepcopy(model)(x)


@slow
def weight_norm_dims(m):
    out = []
    for dim in (0, 1, -1, None):
        model = m.nn.utils.parametrizations.weight_norm(linear(m, 4, 5), dim=dim)
        inner = model.parametrizations.weight
        out += [sorted(model.state_dict()), tuple(inner.original0.shape), inner.original0, model.weight]
    return out


# Divergences not fixed yet: strict xfails, so that a fix shows up as an XPASS to remove from here.
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_parametrize_scenario_matches_torch(name: str) -> None:
    check(SC[name], **TOL)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_parametrize_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], **TOL)


def test_parametrizations_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: a skew-symmetric parametrization, its value and its gradient."""

    def scenario(m):
        if m is vkml:
            vkml.set_default_device(gpu)
        try:
            model = linear(m, 4, 4)
            P(m).register_parametrization(model, "weight", parametrizations(m)["Skew"]())
            x = m.tensor(arr(24, 3, 4))
            out = model(x)
            out.square().sum().backward()
            return model.weight, out, model.parametrizations.weight.original.grad
        finally:
            vkml.set_default_device(None)

    check(scenario, **TOL)
