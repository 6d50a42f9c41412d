"""Layers of issue 18 against PyTorch: softmax layers, RReLU, channel and alpha dropout, padding, distances,
Bilinear, LazyLinear, EmbeddingBag, LocalResponseNorm and gumbel_softmax. Values and gradients on the
CPU backend, the same bits on Vulkan, PyTorch's reprs and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from layercheck import check

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

TF = torch.nn.functional
CPU = vkml.device("cpu")


def _x(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


CASES = [
    ("log_softmax module", lambda x: nn.LogSoftmax(1)(x), lambda x: torch.nn.LogSoftmax(1)(x), lambda: [_x((3, 4))]),
    ("softmax2d", lambda x: nn.Softmax2d()(x), lambda x: torch.nn.Softmax2d()(x), lambda: [_x((2, 3, 2, 2))]),
    ("softmax dtype", lambda x: F.softmax(x, 0, dtype=vkml.float32), lambda x: TF.softmax(x, 0), lambda: [_x((5,))]),
    ("rrelu eval", lambda x: F.rrelu(x, 0.1, 0.3), lambda x: TF.rrelu(x, 0.1, 0.3), lambda: [_x((4, 5))]),
    (
        "cosine similarity broadcast",
        lambda a, b: F.cosine_similarity(a, b, dim=-1),
        lambda a, b: TF.cosine_similarity(a, b, dim=-1),
        lambda: [_x((3, 1, 4)), _x((2, 4), 1)],
    ),
    (
        "cosine similarity tiny and zero vectors",
        F.cosine_similarity,
        TF.cosine_similarity,
        lambda: [np.array([[1e-9, 2e-9, 0.0], [1.0, 2.0, 3.0], [0, 0, 0]], np.float32), _x((3, 3), 1)],
    ),
    ("pairwise distance", F.pairwise_distance, TF.pairwise_distance, lambda: [_x((4, 3)), _x((4, 3), 1)]),
    (
        "pairwise distance p1 keepdim",
        lambda a, b: F.pairwise_distance(a, b, p=1.0, eps=1e-3, keepdim=True),
        lambda a, b: TF.pairwise_distance(a, b, p=1.0, eps=1e-3, keepdim=True),
        lambda: [_x((4, 3)), _x((3,), 1)],
    ),
    ("pdist", F.pdist, TF.pdist, lambda: [_x((5, 3))]),
    ("pdist p3", lambda x: F.pdist(x, 3.0), lambda x: TF.pdist(x, 3.0), lambda: [_x((4, 2))]),
    (
        "bilinear",
        F.bilinear,
        TF.bilinear,
        lambda: [_x((2, 3, 4)), _x((2, 3, 5), 1), _x((6, 4, 5), 2), _x((6,), 3)],
    ),
    (
        "local response norm 3-D",
        lambda x: F.local_response_norm(x, 3, alpha=0.1, beta=0.6, k=2.0),
        lambda x: TF.local_response_norm(x, 3, alpha=0.1, beta=0.6, k=2.0),
        lambda: [_x((2, 5, 3))],
    ),
    (
        "local response norm 4-D even size",
        lambda x: F.local_response_norm(x, 2),
        lambda x: TF.local_response_norm(x, 2),
        lambda: [_x((2, 4, 2, 3), 0, 3.0)],
    ),
]
ON_GPU = {"pdist", "bilinear", "local response norm 3-D", "cosine similarity broadcast"}


@pytest.mark.parametrize(("what", "vk", "pt", "make"), CASES, ids=[c[0] for c in CASES])
def test_layers_match_torch(what, vk, pt, make, gpu):
    check(vk, pt, make(), gpu if what in ON_GPU else None, rtol=2e-6, atol=2e-6)


PADS = [
    ("ZeroPad1d", (1, 2), (2, 3, 4)),
    ("ZeroPad2d", 1, (3, 2, 2)),
    ("ZeroPad3d", (1, 0, 0, 1, 1, 0), (1, 2, 2, 2, 2)),
    ("ConstantPad1d", ((2, 1), 3.5), (2, 4)),
    ("ConstantPad2d", ((1, 0, 2, -1), -1.0), (1, 2, 3, 3)),
    ("ConstantPad3d", (1, 2.0), (2, 1, 2, 2)),
    ("ReflectionPad1d", 2, (2, 3, 4)),
    ("ReflectionPad2d", (1, 2, 0, 1), (1, 2, 3, 4)),
    ("ReflectionPad3d", 1, (1, 1, 2, 3, 3)),
    ("ReplicationPad1d", (0, 3), (3, 2)),
    ("ReplicationPad2d", 2, (2, 2, 3)),
    ("ReplicationPad3d", (1, 0, 1, 0, 2, 1), (1, 2, 2, 2)),
    ("CircularPad1d", 1, (2, 3, 4)),
    ("CircularPad2d", (1, 2, 2, 0), (1, 2, 3, 3)),
    ("CircularPad3d", 1, (1, 1, 2, 2, 2)),
]


@pytest.mark.parametrize(("name", "args", "shape"), PADS, ids=[p[0] for p in PADS])
def test_padding_modules_match_torch(name, args, shape, gpu):
    args = args if isinstance(args, tuple) and name.startswith("Constant") else (args,)
    mine, ref = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mine) == repr(ref)
    device = gpu if name in ("ReflectionPad2d", "CircularPad2d", "ZeroPad3d") else None
    check(mine, ref, [_x(shape)], device, rtol=1e-6, atol=1e-6)  # gradients add overlapping reads in other orders


def test_circular_pad_checks_rank_as_torch():
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.CircularPad2d(1)(vkml.ones(2, 2))


def test_module_reprs_and_attributes_match_torch():
    pairs = [
        (nn.LogSoftmax(dim=1), torch.nn.LogSoftmax(dim=1)),
        (nn.Softmax(), torch.nn.Softmax()),
        (nn.Softmax2d(), torch.nn.Softmax2d()),
        (nn.RReLU(), torch.nn.RReLU()),
        (nn.RReLU(0.1, 0.3, True), torch.nn.RReLU(0.1, 0.3, True)),
        (nn.Dropout1d(0.2), torch.nn.Dropout1d(0.2)),
        (nn.Dropout3d(), torch.nn.Dropout3d()),
        (nn.AlphaDropout(0.1), torch.nn.AlphaDropout(0.1)),
        (nn.FeatureAlphaDropout(), torch.nn.FeatureAlphaDropout()),
        (nn.CosineSimilarity(), torch.nn.CosineSimilarity()),
        (nn.PairwiseDistance(1.0), torch.nn.PairwiseDistance(1.0)),
        (nn.Bilinear(2, 3, 4, bias=False), torch.nn.Bilinear(2, 3, 4, bias=False)),
        (nn.EmbeddingBag(5, 3), torch.nn.EmbeddingBag(5, 3)),
        (nn.EmbeddingBag(5, 3, mode="max", padding_idx=-1), torch.nn.EmbeddingBag(5, 3, mode="max", padding_idx=-1)),
        (nn.LocalResponseNorm(3), torch.nn.LocalResponseNorm(3)),
        (nn.LazyLinear(3), torch.nn.LazyLinear(3)),
    ]
    for mine, ref in pairs:
        assert repr(mine) == repr(ref)
        assert [n for n, _ in mine.named_parameters()] == [n for n, _ in ref.named_parameters()]
    bag = nn.EmbeddingBag(5, 3, padding_idx=-2)
    assert bag.padding_idx == 3 and not bag.weight.numpy()[3].any() and bag.weight.numpy()[2].any()
    assert nn.Bilinear(2, 3, 4).weight.shape == (4, 2, 3)
    assert np.abs(nn.Bilinear(4, 3, 2).weight.numpy()).max() <= 0.5  # uniform in ±1/sqrt(in1_features)


def test_implicit_softmax_dim_warns_and_picks_torch_dim():
    x = _x((2, 3, 4))
    for mine, ref in [
        (nn.Softmax(), torch.nn.Softmax()),
        (nn.LogSoftmax(), torch.nn.LogSoftmax()),
        (nn.Softmin(), torch.nn.Softmin()),
    ]:
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            got = mine(vkml.tensor(x)).numpy()
        with pytest.warns(UserWarning):
            want = ref(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        F.softmin(vkml.tensor(x))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(vkml.ones(2, 2))


# ---------------------------------------------------------------------- random layers


def _draws(fn, shape, device, seed=3):
    vkml.manual_seed(seed)
    x = vkml.tensor(_x(shape, 7), device=device, requires_grad=True)
    out = fn(x)
    out.sum().backward()
    return x, out.numpy(), x.grad.numpy()


def test_rrelu_training_draws_slopes_in_range(gpu):
    x, out, grad = _draws(lambda t: F.rrelu(t, 0.1, 0.3, training=True), (40, 50), CPU)
    xs = x.numpy()
    neg = xs < 0
    slope = out[neg] / xs[neg]
    assert slope.min() >= 0.1 - 1e-6 and slope.max() <= 0.3 + 1e-6 and slope.std() > 0.03
    np.testing.assert_array_equal(out[~neg], xs[~neg])
    np.testing.assert_allclose(grad[neg], slope, rtol=1e-5)  # the gradient is each element's slope
    np.testing.assert_array_equal(grad[~neg], 1.0)
    _, gpu_out, gpu_grad = _draws(lambda t: F.rrelu(t, 0.1, 0.3, training=True), (40, 50), gpu)
    np.testing.assert_array_equal(gpu_out, out)
    np.testing.assert_array_equal(gpu_grad, grad)
    layer = nn.RReLU(0.1, 0.3)
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy(), TF.rrelu(torch.tensor(xs), 0.1, 0.3).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper bound"):
        F.rrelu(x, 0.5, 0.1, training=True)


@pytest.mark.parametrize(
    ("fn", "shape", "channel_dims"),
    [
        (lambda t: F.dropout1d(t, 0.4), (6, 8, 5), 2),
        (lambda t: F.dropout1d(t, 0.4), (8, 5), 1),
        (lambda t: F.dropout3d(t, 0.4), (3, 4, 2, 2, 2), 2),
        (lambda t: F.dropout3d(t, 0.4), (4, 2, 2, 3), 1),
    ],
    ids=["dropout1d", "dropout1d unbatched", "dropout3d", "dropout3d unbatched"],
)
def test_channel_dropout_zeroes_whole_channels(fn, shape, channel_dims, gpu):
    x, out, grad = _draws(fn, shape, CPU)
    xs = x.numpy()
    kept = out != 0
    channels = kept.reshape(int(np.prod(shape[:channel_dims])), -1)
    assert (channels == channels[:, :1]).all() and 0 < kept.mean() < 1  # a channel is kept or dropped whole
    np.testing.assert_array_equal(out, np.where(kept, xs * np.float32(1 / 0.6), 0))
    np.testing.assert_array_equal(grad, kept * np.float32(1 / 0.6))
    _, gpu_out, _ = _draws(fn, shape, gpu)
    np.testing.assert_array_equal(gpu_out, out)


def test_alpha_dropout_keeps_mean_and_variance(gpu):
    x = vkml.tensor(_x((200, 100), 4))
    vkml.manual_seed(1)
    out = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.03 and abs(out.std() - 1) < 0.03  # SELU's fixed point is kept
    kept = np.isclose(out, x.numpy() * _alpha_a(0.2) + 1.7580993408473766 * _alpha_a(0.2) * 0.2, atol=1e-5)
    dropped = np.isclose(out, -1.7580993408473766 * _alpha_a(0.2) * 0.8, atol=1e-6)
    assert (kept | dropped).all() and 0.15 < dropped.mean() < 0.25
    vkml.manual_seed(1)
    np.testing.assert_array_equal(F.alpha_dropout(x.to(gpu), 0.2, training=True).numpy(), out)
    vkml.manual_seed(1)
    feature = F.feature_alpha_dropout(vkml.tensor(_x((30, 20, 4), 4)), 0.5, training=True).numpy()
    drop = np.isclose(feature, -1.7580993408473766 * _alpha_a(0.5) * 0.5, atol=1e-6)
    assert (drop == drop[:, :, :1]).all() and 0.3 < drop.mean() < 0.7
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False, as PyTorch's
    np.testing.assert_array_equal(F.alpha_dropout(x, 1.0, training=True).numpy(), 0.0)
    np.testing.assert_array_equal(TF.alpha_dropout(torch.ones(3), 1.0, training=True).numpy(), 0.0)


def _alpha_a(p):
    alpha = 1.7580993408473766
    return 1.0 / np.sqrt((alpha * alpha * p + 1) * (1 - p))


def test_dropout_errors_match_torch():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout1d(vkml.ones(2, 3), 1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.AlphaDropout(-0.1)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(vkml.ones(1, 2, 3, 4))
    assert F.feature_alpha_dropout(vkml.ones(3), 0.5).shape == (3,)  # checked only when a mask is drawn
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(vkml.ones(3), 0.5, training=True)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(vkml.ones(2, 3, 4), training=False)


def test_gumbel_softmax_samples_and_straight_through_gradient(gpu):
    logits = _x((64, 5), 2)
    vkml.manual_seed(4)
    x = vkml.tensor(logits, requires_grad=True)
    soft = F.gumbel_softmax(x, tau=0.5)
    np.testing.assert_allclose(soft.numpy().sum(-1), 1.0, rtol=1e-6)
    vkml.manual_seed(4)
    y = vkml.tensor(logits, requires_grad=True)
    hard = F.gumbel_softmax(y, tau=0.5, hard=True)
    values = hard.numpy()
    assert set(np.unique(values)) == {0.0, 1.0} and (values.sum(-1) == 1).all()
    np.testing.assert_array_equal(values.argmax(-1), soft.numpy().argmax(-1))  # the same draw, made hard
    up = _x((64, 5), 9)
    soft.backward(vkml.tensor(up))
    hard.backward(vkml.tensor(up))
    np.testing.assert_allclose(y.grad.numpy(), x.grad.numpy(), rtol=1e-6, atol=1e-7)  # the soft sample's gradient
    vkml.manual_seed(4)
    np.testing.assert_array_equal(F.gumbel_softmax(vkml.tensor(logits, device=gpu), tau=0.5).numpy(), soft.numpy())
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(x, eps=1e-5)


# ---------------------------------------------------------------------- EmbeddingBag, LazyLinear


BAGS = [
    ("2-D mean", [[0, 2, 4], [1, 1, 3]], None, {}),
    ("offsets sum", [0, 2, 4, 1, 3, 3, 2], [0, 3, 3, 5], {"mode": "sum"}),
    ("offsets max", [0, 2, 4, 1, 3, 3, 2], [0, 3, 3, 5], {"mode": "max"}),
    ("last offset mean padding", [0, 2, 4, 1, 3, 3, 2], [0, 2, 6], {"include_last_offset": True, "padding_idx": 3}),
    ("per sample weights", [1, 2, 4, 0], [0, 1], {"mode": "sum", "per_sample_weights": True}),
    ("2-D max padding", [[0, 2, 1], [1, 1, 1]], None, {"mode": "max", "padding_idx": 1}),
]


@pytest.mark.parametrize(("what", "indices", "offsets", "kwargs"), BAGS, ids=[b[0] for b in BAGS])
def test_embedding_bag_matches_torch(what, indices, offsets, kwargs, gpu):
    kwargs = dict(kwargs)
    weight = _x((5, 3))
    arrays = [np.array(indices, np.int64), weight]
    if offsets is not None:
        arrays.append(np.array(offsets, np.int64))
    if kwargs.pop("per_sample_weights", False):
        arrays.append(_x(arrays[0].shape, 5))
    n = len(arrays)

    def call(f):
        def go(*t):
            off = t[2] if n > 2 and offsets is not None else None
            psw = t[-1] if "per sample" in what else None
            return f(t[0], t[1], off, per_sample_weights=psw, **kwargs)

        return go

    grad = [False, True, False, True][:n] if "per sample" in what else [False, True, False][:n]
    device = gpu if what in ("offsets max", "last offset mean padding") else None
    check(call(F.embedding_bag), call(TF.embedding_bag), arrays, device, rtol=2e-6, atol=2e-6, grad=grad)


def test_embedding_bag_errors_match_torch():
    w = vkml.ones(4, 2)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(vkml.tensor([0, 1]), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(vkml.tensor([[0, 1]]), w, vkml.tensor([0]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(vkml.tensor([[0, 1]]), w, mode="min")
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(vkml.tensor([[0, 1]]), w, per_sample_weights=vkml.ones(1, 2))
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(vkml.tensor([[0, 1]]), w, mode="max", sparse=True)
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient by the frequency"):
        F.embedding_bag(vkml.tensor([[0, 1]]), w, mode="max", scale_grad_by_freq=True)
    with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
        nn.EmbeddingBag(4, 2, padding_idx=4)
    with pytest.raises(RuntimeError, match=r"Index 1 of input takes value 4 which is not in the valid range \[0, 4\)"):
        F.embedding_bag(vkml.tensor([[0, 4]]), w).numpy()  # PyTorch's sum and mean bags name the position
    with pytest.raises(RuntimeError, match="embedding_bag.*offsets\\[0\\] has to be 0"):
        F.embedding_bag(vkml.tensor([0, 1, 2]), w, vkml.tensor([1, 2])).numpy()
    with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater than input's length 3"):
        F.embedding_bag(vkml.tensor([0, 1, 2]), w, vkml.tensor([0, 5])).numpy()


def test_embedding_bag_module_from_pretrained_matches_torch():
    w = _x((6, 3))
    mine = nn.EmbeddingBag.from_pretrained(vkml.tensor(w), mode="sum")
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="sum")
    assert repr(mine) == repr(ref) and mine.weight.requires_grad is False
    idx, off = [1, 5, 0, 2], [0, 1]
    got = mine(vkml.tensor(idx), vkml.tensor(off)).numpy()
    np.testing.assert_allclose(got, ref(torch.tensor(idx), torch.tensor(off)).numpy(), rtol=1e-6)


def test_lazy_linear_infers_in_features_and_becomes_linear():
    vkml.manual_seed(0)
    layer = nn.LazyLinear(4)
    weight = layer.weight
    out = layer(vkml.ones(2, 7))
    assert type(layer) is nn.Linear and layer.in_features == 7 and out.shape == (2, 4)
    assert layer.weight is weight and weight.shape == (4, 7)  # the same Parameter object, now shaped
    assert np.abs(weight.numpy()).max() <= 1 / np.sqrt(7) and weight.numpy().std() > 0
    np.testing.assert_allclose(
        out.numpy(), np.ones((2, 7), np.float32) @ weight.numpy().T + layer.bias.numpy(), rtol=1e-5
    )
    assert repr(layer) == repr(torch.nn.Linear(7, 4))
    assert nn.LazyLinear(3, bias=False)(vkml.ones(5)).shape == (3,)


def test_layer_errors_match_torch():
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(vkml.ones(3))
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 3 but expected 4"):
        F.bilinear(vkml.ones(2, 4), vkml.ones(2, 3), vkml.ones(5, 4, 4))
    with pytest.raises(RuntimeError, match="bias size does not match weight size"):
        F.bilinear(vkml.ones(2, 4), vkml.ones(2, 3), vkml.ones(5, 4, 3), vkml.ones(4))
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
        F.local_response_norm(vkml.ones(2, 3), 2)
    with pytest.raises(ValueError, match="in1_features must be > 0"):
        nn.Bilinear(0, 2, 3)


def test_dropout_inplace_writes_into_the_input_as_torch():
    vkml.manual_seed(2)
    for fn in (F.dropout, F.dropout2d, F.dropout1d, F.dropout3d):
        x = (
            vkml.ones(4, 8, 2, 2, 2)
            if fn is F.dropout3d
            else vkml.ones(4, 8, 2, 2)
            if fn is F.dropout2d
            else vkml.ones(4, 8, 4)
        )
        out = fn(x, 0.5, inplace=True)
        assert out is x and set(np.unique(x.numpy())) == {0.0, 2.0}
    x = vkml.ones(2, 3, 4)
    assert F.dropout(x, 1.0, inplace=True) is x and not x.numpy().any()
    layer, ref = nn.Dropout(0.2, inplace=True), torch.nn.Dropout(0.2, inplace=True)
    assert repr(layer) == repr(ref) and repr(nn.Dropout()) == repr(torch.nn.Dropout())
    x = vkml.ones(50)
    assert layer(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 2"):
        F.dropout(x, 2)


def test_embedding_padding_idx_matches_torch(gpu):
    weight, idx = _x((6, 3)), np.array([[0, 2, 5], [2, 2, 1]], np.int64)
    check(
        lambda i, w: F.embedding(i, w, padding_idx=2),
        lambda i, w: TF.embedding(i, w, padding_idx=2),
        [idx, weight],
        gpu,
        rtol=1e-6,
        atol=1e-6,
        grad=[False, True],
    )
    mine, ref = nn.Embedding(6, 3, padding_idx=-1), torch.nn.Embedding(6, 3, padding_idx=-1)
    assert repr(mine) == repr(ref) == "Embedding(6, 3, padding_idx=5)"
    assert not mine.weight.numpy()[5].any() and mine.weight.numpy()[:5].all()
    frozen = nn.Embedding.from_pretrained(vkml.tensor(weight), padding_idx=1)
    assert repr(frozen) == repr(torch.nn.Embedding.from_pretrained(torch.tensor(weight), padding_idx=1))
    assert (
        frozen.weight.requires_grad is False
        and nn.Embedding.from_pretrained(vkml.tensor(weight), False).weight.requires_grad
    )
    np.testing.assert_array_equal(frozen(vkml.tensor([1, 4])).numpy(), weight[[1, 4]])
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(6, 3, padding_idx=6)
    # a weight that needs no gradient is looked up as with sparse=False (tests/test_sparse_grads.py: the gradient)
    np.testing.assert_array_equal(F.embedding(vkml.tensor([0]), vkml.tensor(weight), sparse=True).numpy(), weight[[0]])
    # sparse with scale_grad_by_freq: PyTorch looks up, and refuses at backward
    for lib in (torch, vkml):
        table = lib.tensor(weight, requires_grad=True)
        looked = lib.nn.functional.embedding(lib.tensor([0, 2, 0]), table, sparse=True, scale_grad_by_freq=True)
        np.testing.assert_array_equal(looked.detach().numpy(), weight[[0, 2, 0]])
        with pytest.raises(RuntimeError, match="^embedding_backward: scale_grad_by_freq not supported with sparse"):
            looked.sum().backward()


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_looked_up_rows_as_torch(norm_type, gpu):
    weight = _x((5, 3), 3) * 2
    for device in (CPU, gpu):
        mine = nn.Embedding.from_pretrained(
            vkml.tensor(weight, device=device), False, max_norm=1.5, norm_type=norm_type
        )
        ref = torch.nn.Embedding.from_pretrained(torch.tensor(weight), False, max_norm=1.5, norm_type=norm_type)
        idx = [[0, 3], [3, 1]]
        out = mine(vkml.tensor(idx, device=device))
        want = ref(torch.tensor(idx))
        out.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(mine.weight.numpy(), ref.weight.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(mine.weight.grad.numpy(), ref.weight.grad.numpy())
    bag = F.embedding_bag(vkml.tensor([0, 2, 4]), vkml.tensor(weight), vkml.tensor([0, 1]), max_norm=1.0, mode="sum")
    want = TF.embedding_bag(
        torch.tensor([0, 2, 4]), torch.tensor(weight), torch.tensor([0, 1]), max_norm=1.0, mode="sum"
    )
    np.testing.assert_allclose(bag.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_scale_grad_by_freq_matches_torch(gpu):
    weight, idx = _x((6, 3)), np.array([[0, 2, 5, 2], [2, 2, 1, 0]], np.int64)
    check(
        lambda i, w: F.embedding(i, w, padding_idx=1, scale_grad_by_freq=True),
        lambda i, w: TF.embedding(i, w, padding_idx=1, scale_grad_by_freq=True),
        [idx, weight],
        gpu,
        rtol=1e-6,
        atol=1e-6,
        grad=[False, True],
    )
    with pytest.raises(NotImplementedError, match="'embedding_bag': scale_grad_by_freq=True is not supported"):
        F.embedding_bag(vkml.tensor(idx), vkml.tensor(weight), scale_grad_by_freq=True)


INPLACE = [
    ("relu_", (), {}),
    ("elu_", (0.5,), {}),
    ("selu_", (), {}),
    ("celu_", (2.0,), {}),
    ("leaky_relu_", (0.2,), {}),
    ("hardtanh_", (-0.5, 0.5), {}),
    ("threshold_", (0.1, -3.0), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_activations_write_into_the_input_as_torch(name, args, kwargs):
    x = _x((3, 4))
    mine, ref = vkml.tensor(x), torch.tensor(x)
    assert getattr(F, name)(mine, *args, **kwargs) is mine
    getattr(TF, name)(ref, *args, **kwargs)
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=2e-6, atol=1e-7)


def test_relu_inplace_module_and_function_match_torch():
    assert repr(nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.ReLU()) == repr(torch.nn.ReLU())
    x = vkml.tensor([-1.0, 2.0])
    assert nn.ReLU(True)(x) is x and x.tolist() == [0.0, 2.0]
    y = vkml.tensor([-3, 4])  # integers too, as PyTorch's
    assert F.relu(y, inplace=True) is y and y.tolist() == [0, 4]
    # gradients through an in-place relu of a computed value, as PyTorch's
    w, wt = vkml.tensor([-1.0, 2.0, 3.0], requires_grad=True), torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    (F.relu(w * 2, inplace=True) * w).sum().backward()
    (TF.relu(wt * 2, inplace=True) * wt).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), wt.grad.numpy())
