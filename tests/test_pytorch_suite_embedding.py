"""PyTorch's test/nn/test_embedding.py and test/nn/test_dropout.py (their CPU-instantiated and plain tests), run
on torch and on vkml side by side.

Embedding: max_norm (the weight renormalised in place, its backward and norm types), from_pretrained with
its options and padding_idx, padding_idx (negative, out of range, its rows' zero gradient, double
backward), the functional forms against the modules, scalar weights, and embedding_bag: its modes with
offsets (empty bags, include_last_offset, padding_idx in 1-D and 2-D inputs), per_sample_weights (values,
gradients, the errors of mode and shape), empty inputs, out-of-range indices, the dimension errors,
non-contiguous weights, a known example's values and gradients and EmbeddingBag against Embedding with a
reduction. Dropout: the statistics, scaling and gradients of Dropout, Dropout1d/2d/3d, AlphaDropout and
FeatureAlphaDropout, whole channels dropped by DropoutNd, the layout kept, inputs without a batch dim,
inplace, eval mode, p of 0 and 1 and its errors, and the rank errors and warnings. Random values need not
follow torch's stream: a dropout scenario returns the statistics and the structure PyTorch's test checks.
What a scenario returns, raises and warns on vkml must be what it does on torch (tests/pytorch_suite.py).
The default suite runs the scenarios that build few kernels; ``-m exhaustive`` runs them all. Not
ported: the sparse gradients' indices and values, CUDA-only tests and the large-tensor tests.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pytorch_suite import check, error_kind, half_tolerances, known_params

import vkml

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's (each compiles kernels on first use)


def rnd(*shape, seed: int = 0, dtype=np.float32):
    return np.random.default_rng(seed + 7 * len(shape) + int(np.prod(shape))).standard_normal(shape).astype(dtype)


def t(m, a, rg=False, **kw):
    return m.tensor(a, requires_grad=rg, **kw)


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def F(m):
    return m.nn.functional


def weights(m, rows, cols, seed=0, dtype="float32"):
    return t(m, rnd(rows, cols, seed=seed)).to(getattr(m, dtype))


# ---------- Embedding
@sc
def embedding_max_norm(m):
    embedding = m.nn.Embedding(22, 5, max_norm=1.0)
    with m.no_grad():
        embedding.weight.copy_(weights(m, 22, 5) * 2)
    output = embedding(m.tensor([2, 8, 8, 6]))
    return output, embedding.weight, bool(output.data.norm(p=2, dim=1).le(1).all())


def _from_pretrained(dtype):
    def f(m):
        a = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=getattr(m, dtype))
        embedding = m.nn.Embedding.from_pretrained(a)
        return embedding.weight.data, embedding(m.tensor([0, 1])), embedding.weight.requires_grad

    return f


for _dtype in ("uint8", "int8", "int16", "int32", "int64", "float32", "float64"):
    (SC if _dtype in ("int64", "float32") else SLOW)[f"embedding_from_pretrained_{_dtype}"] = _from_pretrained(_dtype)


@sc
def embedding_bag_from_pretrained(m):
    a = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    embedding = m.nn.EmbeddingBag.from_pretrained(a)
    x = m.tensor([0, 1])
    return embedding.weight, embedding(x, m.arange(x.size(0))), embedding(m.tensor([[0, 1]]))


@sc
def embedding_from_pretrained_padding_idx(m):
    embeddings = weights(m, 4, 3).requires_grad_()
    with m.no_grad():
        embeddings[2] = m.ones(3) * 7
    embedding = m.nn.Embedding.from_pretrained(embeddings, padding_idx=2)
    bag = m.nn.EmbeddingBag.from_pretrained(embeddings, padding_idx=2)
    return embedding.weight[2], bag.weight, embedding.padding_idx, bag.padding_idx


@sc
def embedding_from_pretrained_options(m):
    a = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=m.float64)
    opts = {"max_norm": 2.0, "norm_type": 0.5, "scale_grad_by_freq": False, "sparse": True}
    embedding = m.nn.Embedding.from_pretrained(a, **opts)
    output = embedding(m.tensor([0, 1]))
    return output, a, bool(output.data.norm(p=0.5, dim=1).le(2.0).all())


@sc
def embeddingbag_from_pretrained_options(m):
    a = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=m.float64)
    opts = {"max_norm": 2.0, "norm_type": 0.5, "scale_grad_by_freq": False, "mode": "max", "sparse": False}
    bag = m.nn.EmbeddingBag.from_pretrained(a, **opts)
    output = bag(m.tensor([[0, 1]]))
    return output, a, bool(a.norm(p=0.5, dim=1).le(2.0).all())


@sc
def embedding_functional(m):
    a = m.tensor([[1, 3, 2], [0, 2, 1]])
    embeddings = weights(m, 4, 3).requires_grad_()
    module = m.nn.Embedding(4, 3)
    module.weight.data = embeddings.data
    padded = m.nn.Embedding(4, 3).from_pretrained(embeddings, padding_idx=2)
    return module(a), F(m).embedding(a, embeddings), padded(a), F(m).embedding(a, embeddings, padding_idx=2)


@sc
def embedding_bag_functional(m):
    a = m.tensor([[1, 3, 2], [0, 2, 1]])
    embeddings = weights(m, 4, 3).requires_grad_()
    module = m.nn.EmbeddingBag(4, 3)
    module.weight = m.nn.Parameter(embeddings)
    padded = m.nn.EmbeddingBag(4, 3).from_pretrained(embeddings, padding_idx=2)
    return module(a), F(m).embedding_bag(a, embeddings), padded(a), F(m).embedding_bag(a, embeddings, padding_idx=2)


def _bag_padding_idx_error(padding_idx, functional):
    def f(m):
        if functional:
            F(m).embedding_bag(m.tensor([[1, 3, 2], [0, 2, 1]]), weights(m, 4, 3), padding_idx=padding_idx)
        else:
            m.nn.EmbeddingBag(4, 3, padding_idx=padding_idx)

    return f


for _p in range(-6, 6):
    for _functional in (True, False):
        _key = f"embedding_bag_padding_idx_error_{_p}_{'functional' if _functional else 'module'}"
        (SC if _p in (-6, -5, -4, 0, 3, 4) or not _functional else SLOW)[_key] = _bag_padding_idx_error(_p, _functional)


@sc
def embedding_bag_include_last_offset(m):
    bag = m.nn.EmbeddingBag(100, 3, include_last_offset=True, padding_idx=61)
    with m.no_grad():
        bag.weight.copy_(weights(m, 100, 3))
    x = m.tensor([0, 1, 2, 3])
    return bag(x, m.tensor([0, 3, 3])), bag(x, m.tensor([0, 3, 4])), m.stack([bag.weight[0:3].mean(0), bag.weight[3]])


@sc
def embedding_dense_grad(m):
    weight = weights(m, 20, 20, dtype="float64").requires_grad_()
    x = m.tensor([[0, 1, 1, 2], [3, 5, 7, 11]])
    out = F(m).embedding(x, weight)
    (g,) = m.autograd.grad(out, weight, t(m, rnd(*out.shape, seed=1, dtype=np.float64)), create_graph=True)
    return out, g


def _scalar_weight(shape):
    def f(m):
        weight = m.tensor(1.0).reshape(shape)
        F(m).embedding(m.zeros(2, 2, dtype=m.int64), weight)

    return f


SC["embedding_scalar_weight_error_0d"] = _scalar_weight(())
SC["embedding_scalar_weight_error_3d"] = _scalar_weight((1, 1, 1))


@sc
def embedding_sparse_forward(m):
    embedding = m.nn.Embedding(10, 3, sparse=True)
    with m.no_grad():
        embedding.weight.copy_(weights(m, 10, 3))
    return embedding(m.tensor([7, 1, 3])), embedding.sparse


@sc
def embedding_max_norm_backward(m):
    weight = (weights(m, 4, 4) * 2).requires_grad_()
    out = F(m).embedding(m.tensor([0, 1, 2, 2]), weight, max_norm=1.0).sum()
    out.backward()
    return weight.grad, weight.detach()


@slow
def embedding_max_norm_norm_types(m):
    out = []
    for norm_type in (1.0, 2.0, 3.0, float("inf")):
        weight = weights(m, 5, 4) * 3
        out.append((F(m).embedding(m.tensor([[4, 0], [0, 3]]), weight, max_norm=1.5, norm_type=norm_type), weight))
    return out


@sc
def embedding_max_norm_repeating_indices(m):
    embedding = m.nn.Embedding(20, 8, max_norm=1.0)
    with m.no_grad():
        embedding.weight.copy_(weights(m, 20, 8) * 3)
    return embedding(m.arange(2).repeat(200)), embedding.weight


@sc
def embedding_padding_idx(m):
    out = []
    for padding_idx, x in ((0, [[0, 2, 4, 5], [4, 3, 0, 9]]), (-2, [[0, 2, 8, 5], [4, 8, 0, 9]])):
        for sparse in (False, True):
            embedding = m.nn.Embedding(10, 20, padding_idx=padding_idx, sparse=sparse)
            out.append((embedding.padding_idx, embedding(m.tensor(x)).abs().sum(-1) == 0))
    embedding = m.nn.Embedding(10, 20, padding_idx=2, sparse=True)
    with m.no_grad():
        embedding.weight[2] = m.ones(20)
    out.append(embedding(m.tensor([0, 2]))[1])
    return out


def _embedding_padding_idx_oob(padding_idx):
    def f(m):
        m.nn.Embedding(num_embeddings=10, embedding_dim=20, padding_idx=padding_idx)

    return f


SC["embedding_padding_idx_oob_25"] = _embedding_padding_idx_oob(25)
SC["embedding_padding_idx_oob_neg25"] = _embedding_padding_idx_oob(-25)


@sc
def embedding_padding_idx_grad(m):
    embedding = m.nn.Embedding(5, 2, padding_idx=0)
    with m.no_grad():
        embedding.weight.copy_(weights(m, 5, 2))
    out = []
    for n in (1, 2, 100):
        for other in ([], [1, 3], [2]):
            indices = m.tensor(other + [0] * n)
            embedding(indices).sum().backward()
            out.append(embedding.weight.grad.clone())
            embedding.zero_grad()
            emb_sum = embedding(indices).sum()
            (emb_grad,) = m.autograd.grad(emb_sum, list(embedding.parameters()), retain_graph=True)
            (emb_grad.sum() + emb_sum).backward()
            out.append(embedding.weight.grad.clone())
            embedding.zero_grad()
    return out


# ---------- embedding_bag with padding_idx against its 2-D form (test_embedding_bag_1D/2D_padding_idx)
def _bag_1d_padding(mode, include_last_offset, allpad, dtype):
    rng = np.random.default_rng(11)
    num_bags, max_per_bag, num_words = 6, 5, 20
    sizes = [max_per_bag, 0] + [int(s) for s in rng.integers(1, max_per_bag, num_bags - 2)]
    indices = [1 if allpad else int(v) for v in rng.integers(0, num_words, sum(sizes))]
    offsets = list(np.cumsum([0] + sizes[:-1]))
    if include_last_offset:
        offsets.append(len(indices))

    def f(m):
        out = []
        for padding_idx in sorted(set(indices))[:3] + [None]:
            w = t(m, rnd(num_words + 1, 3, seed=3, dtype=np.float64)).to(getattr(m, dtype)).requires_grad_()
            bag = F(m).embedding_bag(
                m.tensor(indices, dtype=m.int64),
                w,
                m.tensor(offsets, dtype=m.int64),
                padding_idx=padding_idx,
                mode=mode,
                include_last_offset=include_last_offset,
            )
            bag.sum().backward()
            out.append((bag, w.grad))
        return out

    return f


for _mode, _last, _allpad, _dtype in itertools.product(
    ("max", "mean", "sum"), (False, True), (False, True), ("float32", "float64")
):
    _key = f"embedding_bag_1D_padding_idx_{_mode}_last{int(_last)}_allpad{int(_allpad)}_{_dtype}"
    (SC if _key == "embedding_bag_1D_padding_idx_mean_last1_allpad0_float32" else SLOW)[_key] = _bag_1d_padding(
        _mode, _last, _allpad, _dtype
    )


def _bag_2d_padding(mode, allpad, rows):
    def f(m):
        if allpad:
            indices = m.ones(rows, 6, dtype=m.int64)
        else:
            indices = m.tensor(np.random.default_rng(rows).integers(0, 10, (rows, 6)))
            if rows > 1:
                indices[1] = indices[1][0]
        out = []
        for padding_idx in sorted(set(indices.flatten().tolist()))[:3]:
            w = t(m, rnd(10, 3, seed=4)).requires_grad_()
            bag = F(m).embedding_bag(indices, w, padding_idx=padding_idx, mode=mode)
            bag.sum().backward()
            out.append((bag, w.grad))
        return out

    return f


for _mode, _allpad, _rows in itertools.product(("max", "mean", "sum"), (False, True), (1, 4)):
    _key = f"embedding_bag_2D_padding_idx_{_mode}_allpad{int(_allpad)}_rows{_rows}"
    (SC if _key == "embedding_bag_2D_padding_idx_max_allpad0_rows4" else SLOW)[_key] = _bag_2d_padding(
        _mode, _allpad, _rows
    )


def _bag_empty_input(dtype, odtype):
    def f(m):
        x = m.tensor([], dtype=getattr(m, dtype))
        out = []
        for sparse in (True, False):
            bag = m.nn.EmbeddingBag(4, 3, sparse=sparse)
            out.append(bag(input=x, offsets=m.tensor([0], dtype=getattr(m, odtype))))
            out.append(bag(input=x, offsets=m.tensor([0, 0], dtype=getattr(m, odtype))))
        return out

    return f


for _d, _o in itertools.product(("int32", "int64"), ("int32", "int64")):
    (SC if (_d, _o) == ("int64", "int32") else SLOW)[f"embedding_bag_empty_input_{_d}_{_o}"] = _bag_empty_input(_d, _o)


def _bag_out_of_bounds(mode, padding_idx, psw, idx):
    def f(m):
        weight = t(m, rnd(10, 2))
        x = m.tensor([idx])
        per_sample_weights = t(m, rnd(1, 2, seed=1)) if psw else None
        return F(m).embedding_bag(x, weight, per_sample_weights=per_sample_weights, padding_idx=padding_idx, mode=mode)

    return f


for _mode in ("sum", "mean", "max"):
    for _padding_idx in (None, 0):
        for _psw in (False, True) if _mode == "sum" else (False,):
            for _idx in ([-1, 1], [11, 8]):
                _key = f"embedding_bag_out_of_bounds_idx_{_mode}_{_padding_idx}_psw{int(_psw)}_{_idx[0]}"
                (SC if _mode == "sum" and _padding_idx == 0 else SLOW)[_key] = _bag_out_of_bounds(
                    _mode, _padding_idx, _psw, _idx
                )


@sc
def embedding_bag_dimension_error_input(m):
    weight = m.zeros(2, 6, dtype=m.float64)
    indices = m.full((2, 0, 0, 6, 6), 2, dtype=m.int64)
    offsets = m.full((2, 0, 0, 6, 6), 0, dtype=m.int64)
    return error_kind(lambda: F(m).embedding_bag(indices, weight, offsets))


@sc
def embedding_bag_dimension_error_input_message(m):
    weight = m.zeros(2, 6, dtype=m.float64)
    F(m).embedding_bag(m.full((2, 0, 0, 6, 6), 2, dtype=m.int64), weight, m.full((2, 0, 0, 6, 6), 0, dtype=m.int64))


@sc
def embedding_bag_dimension_error_offsets(m):
    weight = m.zeros(2, 2, dtype=m.float64)
    F(m).embedding_bag(m.full((2,), 1, dtype=m.int64), weight, m.full((2, 0, 0, 6, 6), 0, dtype=m.int64))


@sc
def embedding_bag_dimension_error_weight(m):
    weight = m.zeros(2, 2, 2, dtype=m.float64)
    F(m).embedding_bag(m.full((2,), 2, dtype=m.int64), weight, m.full((2,), 0, dtype=m.int64))


@sc
def EmbeddingBag_per_sample_weights_dtype_failure(m):
    es = m.nn.EmbeddingBag(5, 2, mode="sum")
    x, offsets = m.tensor([3, 1, 1, 1, 4, 0]), m.tensor([0, 0, 3, 3, 6])
    es(x, offsets, t(m, rnd(6, dtype=np.float64)))


@sc
def EmbeddingBag_per_sample_weights_shape_failure_1d(m):
    es = m.nn.EmbeddingBag(5, 2, mode="sum")
    es(m.tensor([3, 1, 1, 1, 4, 0]), m.tensor([0, 0, 3, 3, 6]), t(m, rnd(5)))


@sc
def EmbeddingBag_per_sample_weights_shape_failure_2d(m):
    es = m.nn.EmbeddingBag(5, 2, mode="sum")
    es(m.zeros(7, 3, dtype=m.int64), None, t(m, rnd(21)))


def _psw_mode_failure(mode):
    def f(m):
        es = m.nn.EmbeddingBag(5, 2, mode=mode)
        es(m.zeros(7, 3, dtype=m.int64), None, t(m, rnd(7, 3)))

    return f


SC["EmbeddingBag_per_sample_weights_mode_failure_max"] = _psw_mode_failure("max")
SC["EmbeddingBag_per_sample_weights_mode_failure_mean"] = _psw_mode_failure("mean")


def _known_bag(mode, dtype="float64", odtype="int64", psw=False, trainable=False, last=False, empty=False):
    """A known example (test_EmbeddingBag_per_sample_weights_and_(new_)offsets, _test_EmbeddingBag)."""

    def f(m):
        es = m.nn.EmbeddingBag(5, 2, mode=mode, include_last_offset=last).to(getattr(m, dtype))
        es.weight.data.copy_(m.arange(1, 11).view_as(es.weight).to(getattr(m, dtype)))
        x = m.tensor([] if empty else [3, 1, 1, 1, 4, 0], dtype=m.int64)
        offsets = m.tensor([0, 0, 0, 0, 0] if empty else [0, 0, 3, 3, 6] + ([6] if last else []))
        offsets = offsets.to(getattr(m, odtype))
        per_sample_weights = None
        if psw:
            per_sample_weights = t(m, rnd(*x.shape, seed=2)).to(getattr(m, dtype)).requires_grad_(trainable)
        result = es(x, offsets, per_sample_weights)
        result.backward(t(m, rnd(*result.shape, seed=3)).to(getattr(m, dtype)))
        return result, es.weight.grad, per_sample_weights.grad if trainable else None

    return f


for _dtype in ("float32", "float64", "float16", "bfloat16"):
    for _trainable in (False, True):
        _key = f"EmbeddingBag_per_sample_weights_and_offsets_{_dtype}_trainable{int(_trainable)}"
        (SC if _key == "EmbeddingBag_per_sample_weights_and_offsets_float32_trainable1" else SLOW)[_key] = _known_bag(
            "sum", _dtype, psw=True, trainable=_trainable
        )
        SLOW[f"EmbeddingBag_empty_per_sample_weights_and_offsets_{_dtype}_trainable{int(_trainable)}"] = _known_bag(
            "sum", _dtype, psw=True, trainable=_trainable, empty=True
        )
SC["EmbeddingBag_empty_per_sample_weights_float32"] = _known_bag("sum", "float32", psw=True, trainable=True, empty=True)
for (_mode, _psw), _trainable, _last in itertools.product(
    (("sum", False), ("sum", True), ("max", False), ("mean", False)), (True, False), (True, False)
):
    _key = (
        f"EmbeddingBag_per_sample_weights_and_new_offsets_{_mode}_psw{int(_psw)}_tr{int(_trainable)}_last{int(_last)}"
    )
    (SC if _key.endswith("max_psw0_tr0_last1") else SLOW)[_key] = _known_bag(
        _mode, "float32", psw=_psw, trainable=_trainable and _psw, last=_last
    )
for _mode in ("sum", "mean", "max"):
    for _odtype in ("int32", "int64"):
        SLOW[f"EmbeddingBag_known_{_mode}_{_odtype}"] = _known_bag(_mode, "float64", _odtype)


def _bag_vs_embedding(n, d, b, length, mode="mean", max_norm=None, psw=False, trainable=False, dtype="float32"):
    """_test_EmbeddingBag_vs_Embedding: EmbeddingBag against Embedding and a reduction."""

    def f(m):
        es = m.nn.EmbeddingBag(n, d, mode=mode, max_norm=max_norm).to(getattr(m, dtype))
        with m.no_grad():
            es.weight.copy_(t(m, rnd(n, d, seed=5) * 2).to(getattr(m, dtype)))
        x = m.tensor(np.random.default_rng(n * d + b).integers(0, n, (b, length)))
        offsets = m.arange(0, b).mul_(length)
        per_sample_weights = None
        if psw:
            per_sample_weights = t(m, rnd(b, length, seed=6)).to(getattr(m, dtype)).softmax(dim=-1)
            per_sample_weights.requires_grad_(trainable)
        output = es(x.view(-1), offsets, None if per_sample_weights is None else per_sample_weights.view(-1))
        output.backward(t(m, rnd(b, d, seed=7)).to(getattr(m, dtype)))
        return output, es.weight.grad, es.weight.detach(), per_sample_weights.grad if trainable else None

    return f


for _n, _d, _b, _l in ((2, 3, 5, 7), (2, 5, 53, 23), (101, 5, 3, 7), (2, 101, 3, 7)):
    for _trainable in (False, True):
        _key = f"EmbeddingBag_per_sample_weights_and_no_offsets_{_n}_{_d}_{_b}_{_l}_trainable{int(_trainable)}"
        (SC if _key.endswith("2_3_5_7_trainable1") else SLOW)[_key] = _bag_vs_embedding(
            _n, _d, _b, _l, "sum", psw=True, trainable=_trainable
        )
for _mode in ("sum", "mean", "max"):
    for _max_norm in (None, 3):
        for _p in ((1, 2, 2, 1), (2, 2, 1, 2), (2, 1, 2, 2)):
            _key = f"EmbeddingBag_vs_Embedding_{_mode}_{_max_norm}_{'x'.join(map(str, _p))}"
            (SC if _key == "EmbeddingBag_vs_Embedding_mean_3_2x2x1x2" else SLOW)[_key] = _bag_vs_embedding(
                *_p, mode=_mode, max_norm=_max_norm
            )
    SLOW[f"EmbeddingBag_vs_Embedding_{_mode}_large"] = _bag_vs_embedding(37, 11, 9, 13, mode=_mode)


def _bag_illegal(mode, which):
    def f(m):
        es = m.nn.EmbeddingBag(10, 20, mode=mode)
        x = m.ones(3, 4, dtype=m.int64)
        offset = m.arange(0, 3)
        if which == "2d_with_offsets":
            return es(x, offset)
        if which == "1d_without_offsets":
            return es(x.view(-1))
        # PyTorch's messages for the offsets print a tensor: its test checks the class
        if which == "first_offset_nonzero":
            offset[0] = 1
            return error_kind(lambda: es(x.view(-1), offset))
        offset[-1] = 100
        return error_kind(lambda: es(x.view(-1), offset))

    return f


for _mode in ("sum", "mean", "max"):
    for _which in ("2d_with_offsets", "1d_without_offsets", "first_offset_nonzero", "offset_past_end"):
        SC[f"EmbeddingBag_illegal_{_mode}_{_which}"] = _bag_illegal(_mode, _which)


@sc
def embedding_bag_non_contiguous_weight(m):
    weight = t(m, rnd(3, 4))
    non_contig = weight[:, :3]
    index, offsets = m.tensor([0, 1, 2]), m.tensor([0, 2])
    return [
        (
            F(m).embedding_bag(input=index, weight=non_contig, offsets=offsets, mode=mode),
            F(m).embedding_bag(input=index, weight=non_contig.clone().contiguous(), offsets=offsets, mode=mode),
        )
        for mode in ("sum", "mean", "max")
    ]


def _bag_psw_grad(bag_use_grad, psw_use_grad):
    def f(m):
        bag = m.nn.EmbeddingBag(16, 8, mode="sum")
        with m.no_grad():
            bag.weight.copy_(weights(m, 16, 8))
        bag.requires_grad_(bag_use_grad)
        x = m.arange(1, 5).expand(3, -1)
        w = t(m, rnd(3, 4, seed=1), psw_use_grad)
        out = bag(x, per_sample_weights=F(m).softmax(w, dim=-1))
        if out.requires_grad:
            out.sum().backward()
        return out, out.requires_grad, bag.weight.grad, w.grad

    return f


for _b, _p in ((True, True), (True, False), (False, True), (False, False)):
    (SC if (_b, _p) == (True, True) else SLOW)[f"embedding_bag_per_sample_weights_grad_{_b}_{_p}"] = _bag_psw_grad(
        _b, _p
    )


# ---------- dropout (test_dropout.py)
def _dropout_stats(cls, shape, memory_format="contiguous_format", dtype="float32", inplace=False):
    """_test_dropout: the mean of the output and of the gradient near 1 - p, the layout kept, eval the identity."""

    def f(m):
        m.manual_seed(0)
        p = 0.2
        fmt = getattr(m, memory_format)
        x = m.full(shape, 1 - p, dtype=getattr(m, dtype))
        module = getattr(m.nn, cls)(p, inplace)
        x_var = x.clone(memory_format=fmt).requires_grad_()
        output = module(x_var + 0 if inplace else x_var)
        output.backward(x)
        evaluated = [getattr(m.nn, cls)(p, ip).eval()(x) for ip in (True, False)]
        return (
            output.is_contiguous(memory_format=fmt),
            abs(output.data.float().mean().item() - (1 - p)) < 0.05,
            x_var.grad.is_contiguous(memory_format=fmt),
            abs(x_var.grad.data.float().mean().item() - (1 - p)) < 0.05,
            # the kept values are x / (1 - p): the scaling
            sorted({round(v, 3) for v in output.detach().float().flatten().tolist()}),
            evaluated,
            repr(module),
        )

    return f


SC["Dropout"] = _dropout_stats("Dropout", (1000,))
SC["Dropout_inplace"] = _dropout_stats("Dropout", (1000,), inplace=True)
SLOW["Dropout_bfloat16"] = _dropout_stats("Dropout", (1000,), dtype="bfloat16")
SC["Dropout1d"] = _dropout_stats("Dropout1d", (12, 11, 13), dtype="float64")
SLOW["Dropout1d_inplace"] = _dropout_stats("Dropout1d", (12, 11, 13), dtype="float64", inplace=True)
SC["Dropout2d"] = _dropout_stats("Dropout2d", (1000, 2, 3, 4))
SLOW["Dropout2d_channels_last"] = _dropout_stats("Dropout2d", (1000, 2, 3, 4), "channels_last")
SLOW["Dropout2d_inplace"] = _dropout_stats("Dropout2d", (1000, 2, 3, 4), inplace=True)
SC["Dropout3d"] = _dropout_stats("Dropout3d", (1000, 2, 2, 3, 4))
SLOW["Dropout3d_inplace"] = _dropout_stats("Dropout3d", (1000, 2, 2, 3, 4), inplace=True)


def _dropout_discontiguous(cls, memory_format):
    def f(m):
        out = []
        fmt = getattr(m, memory_format)
        for p in (0, 1e-10):
            inp = m.empty(2, 3, 3, 6, memory_format=fmt)[..., ::2]
            inp.copy_(m.ones(2, 3, 3, 3))
            result = getattr(m.nn, cls)(p=p)(inp)
            out.append((result, result.is_contiguous(memory_format=fmt) if p != 0 else None))
        return out

    return f


for _cls in ("Dropout", "Dropout2d", "Dropout3d"):
    for _mf in ("contiguous_format", "channels_last"):
        (SC if _cls == "Dropout" else SLOW)[f"{_cls}_discontiguous_{_mf}"] = _dropout_discontiguous(_cls, _mf)


@slow
def Dropout_stride_mean_preserve(m):
    m.manual_seed(0)
    inp = m.ones(2, 3, 4, 5)
    out = []
    for perm in ((0, 1, 2, 3), (3, 2, 1, 0), (1, 3, 0, 2), (2, 0, 3, 1)):
        inverse = tuple(perm.index(i) for i in range(4))
        for shift in ((0, 0), (1, 1)):
            for p in (1e-10, 0.5):
                permuted = inp.permute(perm).contiguous().permute(inverse)[shift[0] :, shift[1] :, :, :]
                result = m.nn.Dropout(p=p)(permuted)
                out.append(
                    (
                        result.permute(perm).is_contiguous(),
                        abs(result.mean().item() - 1) <= 0.5 + 0.5,
                        bool(m.equal(permuted, result)),
                    )
                )
    return out


def _dropout_nd_no_batch(cls, shape, inplace):
    def f(m):
        x = m.tensor(np.random.default_rng(8).random(shape))
        module = getattr(m.nn, cls)(p=0.5, inplace=inplace)
        m.manual_seed(3)
        no_batch = module(x.clone())
        m.manual_seed(3)
        batched = module(x.clone().unsqueeze(0)).squeeze(0)
        return bool(m.equal(no_batch, batched)), tuple(no_batch.shape)

    return f


for _cls, _shape in (("Dropout1d", (50, 2)), ("Dropout3d", (50, 2, 2, 2))):
    for _inplace in (False, True):
        (SC if not _inplace else SLOW)[f"{_cls}_no_batch_inplace{int(_inplace)}"] = _dropout_nd_no_batch(
            _cls, _shape, _inplace
        )


def _dropout_nd_channel_zero(cls, shape, inplace):
    def f(m):
        m.manual_seed(1)
        result = getattr(m.nn, cls)(p=0.5, inplace=inplace)(m.ones(*shape))
        channel_numel = int(np.prod(shape[2:]))
        counts = result.flatten(2).count_nonzero(-1).flatten().tolist()
        kept = [v for v in result.flatten().tolist() if v != 0]
        return all(c in (0, channel_numel) for c in counts), 0 < counts.count(0) < len(counts), set(kept)

    return f


for _cls, _shape in (("Dropout1d", (10, 4, 2)), ("Dropout2d", (10, 4, 2, 2)), ("Dropout3d", (10, 4, 2, 2, 2))):
    for _inplace in (False, True):
        (SC if not _inplace else SLOW)[f"{_cls}_channel_zero_inplace{int(_inplace)}"] = _dropout_nd_channel_zero(
            _cls, _shape, _inplace
        )


def _dropout_rank(cls, shape):
    def f(m):
        return tuple(getattr(m.nn, cls)(p=0.5)(m.ones(*shape)).shape)

    return f


for _cls, _shape in (
    ("Dropout1d", (1, 2, 2, 2)),
    ("Dropout1d", (2,)),
    ("Dropout2d", (1, 2, 2, 2, 2)),
    ("Dropout2d", (1, 2)),
    ("Dropout2d", (1, 2, 2)),
    ("Dropout3d", (1, 2, 2, 2, 2, 2)),
    ("Dropout3d", (1, 2, 2)),
):
    SC[f"{_cls}_rank_{len(_shape)}d"] = _dropout_rank(_cls, _shape)


def _alpha_dropout(cls, shape):
    def f(m):
        m.manual_seed(2)
        x = t(m, rnd(*shape))
        mean, std = x.mean().item(), x.std().item()
        out = []
        for p in (0.2, 0.5, 0.8):
            x_var = x.detach().clone().requires_grad_()
            output = getattr(m.nn, cls)(p)(x_var)
            output.backward(x)
            out.append(
                (
                    abs(output.data.mean().item() - mean) < 0.1,
                    abs(output.data.std().item() - std) < 0.1,
                    x_var.grad.shape,
                    getattr(m.nn, cls)(p).eval()(x),
                )
            )
        return out

    return f


SC["AlphaDropout"] = _alpha_dropout("AlphaDropout", (5000,))
SC["FeatureAlphaDropout"] = _alpha_dropout("FeatureAlphaDropout", (1000, 2, 1, 3, 2))
SLOW["FeatureAlphaDropout_no_batch"] = _alpha_dropout("FeatureAlphaDropout", (50, 20, 16, 16))


def _alpha_dropout_structure(fn, shape):
    """Where alpha dropout drops, the value is -alpha' = a·(-1.7581) + b, the same for a whole feature map."""

    def f(m):
        m.manual_seed(4)
        x = m.ones(*shape)
        result = getattr(F(m), fn)(x, 0.5, training=True)
        values = sorted({round(v, 4) for v in result.flatten().tolist()})
        per_channel = result.flatten(2).unique(dim=-1).shape[-1] if fn == "feature_alpha_dropout" else None
        return values, per_channel

    return f


SC["alpha_dropout_values"] = _alpha_dropout_structure("alpha_dropout", (200,))
SC["feature_alpha_dropout_channels"] = _alpha_dropout_structure("feature_alpha_dropout", (20, 8, 3, 3))


def _invalid_p(make):
    def f(m):
        return error_kind(lambda: make(m))

    return f


for _name, _make in (
    ("Dropout_neg", lambda m: m.nn.Dropout(-0.1)),
    ("Dropout_big", lambda m: m.nn.Dropout(1.1)),
    ("Dropout1d_neg", lambda m: m.nn.Dropout1d(-0.1)),
    ("Dropout1d_big", lambda m: m.nn.Dropout1d(1.1)),
    ("Dropout2d_neg", lambda m: m.nn.Dropout2d(-0.1)),
    ("Dropout2d_big", lambda m: m.nn.Dropout2d(1.1)),
    ("Dropout3d_neg", lambda m: m.nn.Dropout3d(-0.1)),
    ("Dropout3d_big", lambda m: m.nn.Dropout3d(1.1)),
    ("AlphaDropout_big", lambda m: m.nn.AlphaDropout(1.1)),
    ("FeatureAlphaDropout_neg", lambda m: m.nn.FeatureAlphaDropout(-0.1)),
    ("dropout_neg", lambda m: F(m).dropout(m.ones(1), -0.1)),
    ("dropout_big", lambda m: F(m).dropout(m.ones(1), 1.1)),
    ("dropout2d_big", lambda m: F(m).dropout2d(m.ones(1, 2, 2), 1.1)),
    ("alpha_dropout_neg", lambda m: F(m).alpha_dropout(m.ones(1), -0.1)),
):
    SC[f"invalid_dropout_p_{_name}"] = _invalid_p(_make)


@sc
def invalid_dropout_p_message(m):
    m.nn.Dropout(1.1)


@sc
def invalid_functional_dropout_p_message(m):
    F(m).dropout(m.ones(1), -0.1)


@sc
def dropout_p_edges(m):
    x = t(m, rnd(4, 6), True)
    out = []
    for fn in ("dropout", "alpha_dropout", "feature_alpha_dropout"):
        for p in (0.0, 1.0):
            y = getattr(F(m), fn)(x, p, training=True)
            (g,) = m.autograd.grad(y.sum(), x)
            out.append((y, g))
        out.append(getattr(F(m), fn)(x, 0.7, training=False))
    for fn in ("dropout1d", "dropout2d", "dropout3d"):
        shape = {"dropout1d": (2, 3, 4), "dropout2d": (2, 3, 4, 1), "dropout3d": (2, 3, 1, 4, 1)}[fn]
        xx = x.detach().flatten()[:24].reshape(shape)
        out.append((getattr(F(m), fn)(xx, 0.0), getattr(F(m), fn)(xx, 1.0), getattr(F(m), fn)(xx, 0.4, training=False)))
    return out


@sc
def dropout_inplace_same_tensor(m):
    x = m.ones(10, 10)
    y = F(m).dropout(x, 1.0, training=True, inplace=True)
    z = m.ones(10, 10)
    w = F(m).dropout(z, 0.5, training=False, inplace=True)
    return y is x, x, w is z


@sc
def empty_dropout(m):
    x = m.tensor([])
    return F(m).dropout(x).size(), F(m).dropout2d(m.zeros(0, 2, 3, 3), 0.5).size()


# Over the default suite's time budget (each builds several kernels): these run with -m exhaustive
_OVER_BUDGET = (
    "AlphaDropout",
    "Dropout",
    "Dropout1d",
    "Dropout1d_no_batch_inplace0",
    "Dropout2d",
    "Dropout2d_channel_zero_inplace0",
    "Dropout3d",
    "Dropout3d_channel_zero_inplace0",
    "Dropout3d_no_batch_inplace0",
    "Dropout_discontiguous_contiguous_format",
    "Dropout_inplace",
    "EmbeddingBag_empty_per_sample_weights_float32",
    "EmbeddingBag_illegal_max_first_offset_nonzero",
    "EmbeddingBag_illegal_mean_first_offset_nonzero",
    "EmbeddingBag_illegal_mean_offset_past_end",
    "EmbeddingBag_illegal_sum_first_offset_nonzero",
    "EmbeddingBag_illegal_sum_offset_past_end",
    "EmbeddingBag_per_sample_weights_and_new_offsets_max_psw0_tr0_last1",
    "EmbeddingBag_per_sample_weights_and_no_offsets_2_3_5_7_trainable1",
    "EmbeddingBag_per_sample_weights_and_offsets_float32_trainable1",
    "EmbeddingBag_vs_Embedding_mean_3_2x2x1x2",
    "FeatureAlphaDropout",
    "dropout_p_edges",
    "embedding_bag_1D_padding_idx_mean_last1_allpad0_float32",
    "embedding_bag_2D_padding_idx_max_allpad0_rows4",
    "embedding_bag_empty_input_int64_int32",
    "embedding_bag_from_pretrained",
    "embedding_bag_functional",
    "embedding_bag_include_last_offset",
    "embedding_bag_non_contiguous_weight",
    "embedding_bag_out_of_bounds_idx_sum_0_psw0_-1",
    "embedding_bag_out_of_bounds_idx_sum_0_psw1_-1",
    "embedding_bag_per_sample_weights_grad_True_True",
    "embedding_dense_grad",
    "embedding_from_pretrained_int64",
    "embedding_from_pretrained_options",
    "embedding_max_norm",
    "embedding_max_norm_backward",
    "embedding_max_norm_repeating_indices",
    "embedding_padding_idx",
    "embedding_padding_idx_grad",
    "embeddingbag_from_pretrained_options",
)
for _name in _OVER_BUDGET:
    SLOW[_name] = SC.pop(_name)


# Where vkml still differs from PyTorch, and why (strict: a fix makes the test fail until it leaves this list)
_STRIDED_LAYOUT = (
    "vkml does not see a channels-last (or permuted) layout in a strided view of one: dropout's result keeps the "
    "default layout"
)
KNOWN: dict[str, str] = {
    "Dropout_discontiguous_channels_last": _STRIDED_LAYOUT,
    "Dropout2d_discontiguous_channels_last": _STRIDED_LAYOUT,
    "Dropout3d_discontiguous_channels_last": _STRIDED_LAYOUT,
    "Dropout_stride_mean_preserve": _STRIDED_LAYOUT,
}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_embedding_dropout_scenario_matches_torch(name: str) -> None:
    check(SC[name], **half_tolerances(name))


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_embedding_dropout_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], **half_tolerances(name))


def test_embedding_bag_and_dropout_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: embedding_bag with offsets and weights, max_norm, Dropout2d's structure."""

    def scenario(m):
        device = {"device": gpu} if m is vkml else {}
        w = m.tensor(rnd(6, 3) * 2, requires_grad=True, **device)
        x, offsets = m.tensor([1, 4, 4, 0, 2], **device), m.tensor([0, 2, 2], **device)
        psw = m.tensor(rnd(5, seed=1), requires_grad=True, **device)
        bag = F(m).embedding_bag(x, w, offsets, mode="sum", per_sample_weights=psw)
        renormed = F(m).embedding(x, w.detach().clone(), max_norm=1.0)
        bag.square().sum().backward()
        m.manual_seed(0)
        dropped = F(m).dropout2d(m.ones(8, 4, 3, 3, **device), 0.5)
        counts = dropped.flatten(2).count_nonzero(-1).flatten().tolist()
        return bag, w.grad, psw.grad, renormed, all(c in (0, 9) for c in counts)

    check(scenario)
