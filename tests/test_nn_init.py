"""vkml.nn.init against torch.nn.init: exact fans, gains, errors and constant patterns; bounds and statistics
of the random initialisers; in place; the same bits on the CPU backend and on Vulkan."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn
from vkml.nn import init

TI = torch.nn.init
SHAPES = [(3, 4), (5, 3, 2), (6, 4, 3, 3), (2, 3, 1, 1, 2), (1, 7)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fans_match_torch(shape):
    ours = init._calculate_fan_in_and_fan_out(vkml.zeros(*shape))
    assert ours == TI._calculate_fan_in_and_fan_out(torch.zeros(shape))
    for mode in ("fan_in", "fan_out", "FAN_OUT"):
        assert init._calculate_correct_fan(vkml.zeros(*shape), mode) == TI._calculate_correct_fan(
            torch.zeros(shape), mode
        )


GAINS = [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("selu",), ("leaky_relu",)]
GAINS += [("leaky_relu", 0.2), ("leaky_relu", 3), ("leaky_relu", math.sqrt(5))]


@pytest.mark.parametrize("args", GAINS)
def test_calculate_gain_matches_torch(args):
    assert init.calculate_gain(*args) == TI.calculate_gain(*args)


ERRORS = {
    "fan_of_1d": lambda I, z: I.kaiming_uniform_(z(3)),
    "fan_of_0d": lambda I, z: I.xavier_normal_(z(())),
    "bad_mode": lambda I, z: I.kaiming_normal_(z(3, 3), mode="fan_avg"),
    "bad_nonlinearity": lambda I, z: I.kaiming_uniform_(z(3, 3), nonlinearity="swish"),
    "bool_slope": lambda I, z: I.calculate_gain("leaky_relu", True),
    "string_slope": lambda I, z: I.calculate_gain("leaky_relu", "x"),
    "eye_of_1d": lambda I, z: I.eye_(z(3)),
    "orthogonal_of_1d": lambda I, z: I.orthogonal_(z(3)),
    "dirac_of_2d": lambda I, z: I.dirac_(z(3, 3)),
    "dirac_groups": lambda I, z: I.dirac_(z(3, 3, 3), groups=2),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_torch(case):
    with pytest.raises(Exception) as expected:
        ERRORS[case](TI, torch.zeros)
    with pytest.raises(Exception) as actual:
        ERRORS[case](init, vkml.zeros)
    assert type(actual.value) is type(expected.value) and str(actual.value) == str(expected.value)


def test_random_initialisers_need_floats():
    with pytest.raises(vkml.DTypeError, match="uniform_: random initialisation needs a floating point tensor"):
        init.uniform_(vkml.zeros(3, dtype=vkml.int32))


PATTERNS = {
    "eye_square": (lambda I, t: I.eye_(t), (4, 4)),
    "eye_wide": (lambda I, t: I.eye_(t), (3, 5)),
    "eye_tall": (lambda I, t: I.eye_(t), (5, 2)),
    "dirac_3d": (lambda I, t: I.dirac_(t), (4, 3, 3)),
    "dirac_4d_groups": (lambda I, t: I.dirac_(t, groups=2), (6, 4, 3, 2)),
    "dirac_5d": (lambda I, t: I.dirac_(t), (2, 3, 3, 1, 2)),
    "constant": (lambda I, t: I.constant_(t, 0.3), (2, 3)),
    "ones": (lambda I, t: I.ones_(t), (3,)),
    "zeros": (lambda I, t: I.zeros_(t), (2, 2)),
}


@pytest.mark.parametrize("case", PATTERNS)
def test_constant_patterns_match_torch(case):
    fn, shape = PATTERNS[case]
    expected = fn(TI, torch.full(shape, 7.0)).numpy()
    target = vkml.full(shape, 7.0)
    assert fn(init, target) is target
    assert_same_bits(target.numpy(), expected, case)


def _big(*shape) -> vkml.Tensor:
    return nn.Parameter(vkml.zeros(*shape))


# (name, our call, torch's call, torch's bound or None for unbounded); shapes hold > 100k elements.
UNIFORMS = {
    "uniform": (lambda I, t: I.uniform_(t, -0.5, 2.0), (256, 512)),
    "xavier_uniform": (lambda I, t: I.xavier_uniform_(t, gain=2.0), (256, 512)),
    "kaiming_uniform_default": (lambda I, t: I.kaiming_uniform_(t), (256, 64, 3, 3)),
    "kaiming_uniform_linear_default": (lambda I, t: I.kaiming_uniform_(t, a=math.sqrt(5)), (512, 256)),
    "kaiming_uniform_relu_fan_out": (
        lambda I, t: I.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
        (64, 2048),
    ),
}
NORMALS = {
    "normal": (lambda I, t: I.normal_(t, 0.5, 2.0), (256, 512)),
    "xavier_normal": (lambda I, t: I.xavier_normal_(t), (128, 1024)),
    "kaiming_normal": (lambda I, t: I.kaiming_normal_(t, a=0.1, nonlinearity="leaky_relu"), (256, 16, 5, 5)),
    "kaiming_normal_tanh_fan_out": (lambda I, t: I.kaiming_normal_(t, mode="fan_out", nonlinearity="tanh"), (512, 256)),
    "trunc_normal": (lambda I, t: I.trunc_normal_(t, 0.1, 0.5, -0.3, 0.9), (256, 512)),
    "trunc_normal_default": (lambda I, t: I.trunc_normal_(t), (256, 512)),
}


def _torch_values(fn, shape) -> np.ndarray:
    torch.manual_seed(0)
    return fn(TI, torch.zeros(shape)).numpy().astype(np.float64)


@pytest.mark.parametrize("case", UNIFORMS)
def test_uniform_initialisers_bounds_and_spread_match_torch(case):
    fn, shape = UNIFORMS[case]
    vkml.manual_seed(0)
    target = _big(*shape)
    assert fn(init, target) is target and target.requires_grad and target.is_leaf
    ours, theirs = target.numpy().astype(np.float64), _torch_values(fn, shape)
    # Both draw from [low, high): the samples' extremes agree to a hair of the interval's width.
    width = theirs.max() - theirs.min()
    assert theirs.min() - 1e-3 * width <= ours.min() < theirs.min() + 1e-3 * width
    assert theirs.max() - 1e-3 * width < ours.max() <= theirs.max() + 1e-3 * width
    assert abs(ours.mean() - theirs.mean()) < 0.01 * width and abs(ours.std() / theirs.std() - 1) < 0.01


@pytest.mark.parametrize("case", NORMALS)
def test_normal_initialisers_statistics_match_torch(case):
    fn, shape = NORMALS[case]
    vkml.manual_seed(0)
    target = _big(*shape)
    assert fn(init, target) is target
    ours, theirs = target.numpy().astype(np.float64), _torch_values(fn, shape)
    assert abs(ours.mean() - theirs.mean()) < 0.01 * theirs.std() and abs(ours.std() / theirs.std() - 1) < 0.01
    if case.startswith("trunc"):  # truncated at [a, b], and the samples reach both ends as torch's do
        low, high = theirs.min(), theirs.max()
        assert low - 1e-3 <= ours.min() < low + 1e-2 and high - 1e-2 < ours.max() <= high + 1e-3


@pytest.mark.skipif(
    tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13),
    reason="PyTorch 2.13's trunc_normal_ (older versions used the inverse-CDF method)",
)
def test_trunc_normal_of_a_narrow_interval_is_pytorchs_rejection_sampler():
    # [2, 4] holds 2% of the mass: uniform candidates accepted by their density, redrawn per round
    torch.manual_seed(4)
    want = torch.nn.init.trunc_normal_(torch.zeros(9, 7), a=2.0, b=4.0).numpy()
    vkml.manual_seed(4)
    got = init.trunc_normal_(vkml.zeros(9, 7), a=2.0, b=4.0).numpy()
    np.testing.assert_array_equal(got, want)
    assert vkml.rand(2).tolist() == torch.rand(2).tolist()  # as many draws as PyTorch's


@pytest.mark.parametrize("shape", [(6, 6), (3, 8), (8, 3), (4, 2, 3, 3)])
def test_orthogonal_is_orthogonal_and_sign_fixed(shape):
    vkml.manual_seed(1)
    target = vkml.zeros(*shape)
    assert init.orthogonal_(target, gain=2.0) is target
    q = target.numpy().reshape(shape[0], -1).astype(np.float64) / 2.0
    rows, cols = q.shape
    gram = q @ q.T if rows <= cols else q.T @ q
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-6)
    # PyTorch's sign rule: Q = QR's Q with each column times sign(R's diagonal) makes R's diagonal positive.
    square = q if rows >= cols else q.T
    vkml.manual_seed(1)
    draws = vkml.randn(rows, cols).numpy().astype(np.float64)
    draws = draws if rows >= cols else draws.T
    r = square.T @ draws
    assert (np.diag(r) > 0).all()


RANDOM = {**UNIFORMS, **NORMALS, "orthogonal": (lambda I, t: I.orthogonal_(t), (6, 9))}


@pytest.mark.parametrize("case", RANDOM)
def test_same_bits_on_cpu_and_vulkan_and_seeded(case, gpu):
    fn, _ = RANDOM[case]
    results = []
    for device in ("cpu", gpu, "cpu"):
        vkml.manual_seed(42)
        results.append(fn(init, vkml.zeros(7, 5, 3, device=device)).numpy())
    assert_same_bits(results[1], results[0], f"{case}: vulkan vs cpu")
    assert_same_bits(results[2], results[0], f"{case}: the same seed again")


@pytest.mark.parametrize("name", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "kaiming_normal_"])
def test_generator_argument(name):
    fn = getattr(init, name)
    vkml.manual_seed(5)
    state = vkml.frontend.random.default_generator.get_state()
    first = fn(vkml.zeros(4, 6), generator=vkml.Generator(9)).numpy()
    again = fn(vkml.zeros(4, 6), generator=vkml.Generator(9)).numpy()
    assert vkml.frontend.random.default_generator.get_state().tolist() == state.tolist()  # the default one unused
    assert_same_bits(again, first, name)
    assert not np.array_equal(fn(vkml.zeros(4, 6)).numpy(), first)


def test_initialisers_keep_the_parameter_an_optimizer_holds():
    weight = nn.Parameter(vkml.zeros(4, 3, dtype=vkml.float16))
    opt = vkml.optim.SGD([weight], lr=1.0)
    vkml.manual_seed(3)
    init.xavier_uniform_(weight)
    assert opt.param_groups[0]["params"][0] is weight and weight.dtype is vkml.float16
    values = weight.numpy()
    assert np.abs(values).max() > 0 and weight.requires_grad
    weight.sum().backward()
    opt.step()
    assert_same_bits(weight.numpy(), (values.astype(np.float32) - 1).astype(np.float16), "a step from the values")


def test_warnings_match_torch():
    for library in (TI, init):
        empty = (torch if library is TI else vkml).zeros(0, 3)
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            assert library.kaiming_uniform_(empty) is empty
        with pytest.warns(UserWarning, match="mean is more than 2 std from"):
            library.trunc_normal_((torch if library is TI else vkml).zeros(3), mean=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.trunc_normal_(vkml.zeros(3))


def test_layers_start_from_torchs_default_init():
    vkml.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = nn.Linear(300, 400), torch.nn.Linear(300, 400)
    for name in ("weight", "bias"):
        a, b = getattr(ours, name).numpy(), getattr(theirs, name).detach().numpy()
        bound = 1 / math.sqrt(300)
        assert np.abs(a).max() <= bound and np.abs(b).max() <= bound
        assert abs(a.std() / b.std() - 1) < 0.05 and np.abs(a).max() > 0.99 * bound
    embedding = nn.Embedding(500, 200).weight.numpy()
    reference = torch.nn.Embedding(500, 200).weight.detach().numpy()
    assert abs(embedding.std() / reference.std() - 1) < 0.01 and abs(embedding.mean()) < 0.01
    # reset_parameters draws again from the generator, in place
    weight = ours.weight
    before = weight.numpy()
    ours.reset_parameters()
    assert ours.weight is weight and not np.array_equal(weight.numpy(), before)
