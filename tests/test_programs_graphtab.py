"""Graph, time-series, tabular, classical-ML and recommendation programs (tests/programs/) run under vkml as
under PyTorch, by their import lines alone.

GNN message passing by hand (gnn_message_passing: GIN, EdgeConv, GraphSAGE with every ``scatter_reduce``
reduction, a GCN over ``torch.sparse.mm``, PageRank by a sparse ``torch.mv``), forecasting
(timeseries_forecasting: a weight-normed TCN, PatchTST with RevIN, Informer's ProbSparse attention, DeepAR
with Gaussian and negative-binomial likelihoods, a teacher-forced seq2seq),
tabular transformers (tabular_transformers: FT-Transformer, TabTransformer, a one-hot MLP; focal loss,
``pos_weight``, a ``WeightedRandomSampler``), classical ML in torch (classical_ml: k-means, a Gaussian
mixture by EM, PCA with ``pca_lowrank``, ridge regression, LBFGS logistic regression, a Kalman filter,
SVMs) and recommenders (recsys_retrieval: sparse matrix factorisation with SparseAdam, a two-tower model
with in-batch negatives). Each docstring lists the idioms it checks. As in tests/test_programs.py, each
model is built under PyTorch, its initial state_dict loaded into the vkml model, and both train on the
same data; random draws stay live where vkml's generator gives PyTorch's draws (the sampler's
``multinomial``, ``torch.rand(1)`` for teacher forcing, ``pca_lowrank``'s ``randn``, k-means++ seeding).
Every number must agree to the program's tolerance.

The comparisons compile tens of kernels each on the CPU interpreter, so they run with ``make test-all``
(``-m stress``); ``make test`` compares two of the programs' functions with their gradients. The gaps
they and their probes found (``torch.pca_lowrank``/``svd_lowrank``, ``torch.mv`` of a sparse matrix, LBFGS
over sparse gradients, AdamW's sparse refusal) are tested in tests/test_graphtab_program_gaps.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers, compare_program, program_tests

# name: (steps, rtol)
PROGRAMS = {
    "gnn_message_passing": (3, 1e-4),
    "timeseries_forecasting": (3, 1e-4),
    "tabular_transformers": (3, 1e-4),
    "classical_ml": (3, 1e-4),
    "recsys_retrieval": (3, 1e-4),
}
# Other module constants a program is compared under, besides its defaults.
VARIANTS = {
    "gnn_message_passing": [{"MODEL": "edgeconv"}, {"MODEL": "gcn"}]
    + [{"MODEL": "sage", "AGGR": aggr} for aggr in ("sum", "mean", "amax", "amin", "prod")],
    "timeseries_forecasting": [
        {"MODEL": "patchtst"},
        {"MODEL": "informer"},
        {"MODEL": "deepar"},
        {"MODEL": "deepar", "LIKELIHOOD": "negbin"},
        {"MODEL": "seq2seq"},
    ],
    "tabular_transformers": [
        {"MODEL": "tab"},
        {"MODEL": "onehot", "LOSS": "focal"},
        {"LOSS": "focal", "BALANCE": False},
    ],
    "classical_ml": [{"MODEL": model} for model in ("gmm", "pca", "logreg", "kalman", "svm")]
    + [{"MODEL": "kalman", "GAIN": "solve"}],
    "recsys_retrieval": [{"LOSS": "bpr"}, {"MODEL": "two_tower"}],
}


test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


@pytest.mark.stress
@pytest.mark.parametrize(
    ("name", "constants"),
    [("timeseries_forecasting", {"MODEL": "patchtst"}), ("tabular_transformers", {}), ("timeseries_forecasting", {})],
    ids=str,
)
def test_program_runs_as_written(name, constants, monkeypatch):
    """With dropout live (vkml's masks are its own stream) each program trains to finite numbers."""
    program = _load(name, "vkml", monkeypatch, deterministic=False, constants=constants)
    assert program.DROPOUT > 0
    result = program.train(program.build(), steps=2)
    assert len(result["losses"]) == 2 and all(math.isfinite(x) for x in result["losses"])


@pytest.mark.stress
def test_ridge_program_matches_pytorch(monkeypatch):
    """Closed forms: ``linalg.solve``, ``cholesky`` + ``cholesky_solve``, ``inv``, ``lstsq``."""
    steps, rtol = PROGRAMS["classical_ml"]
    got = compare_program("classical_ml", monkeypatch, steps, rtol, constants={"MODEL": "ridge"})
    assert all(all(row) for row in got["agree"])


def _functions(backend, monkeypatch):
    """Two of the programs' hand-written pieces on fixed inputs, values and gradients: GraphSAGE's
    ``scatter_reduce("prod", include_self=False)`` aggregation (a node without in-edges keeps its zero)
    and torchvision's sigmoid focal loss."""
    rng = np.random.default_rng(3)
    gnn = _load("gnn_message_passing", backend, monkeypatch)
    torch = gnn.torch
    x = torch.tensor(rng.standard_normal((5, 3)).astype(np.float32), requires_grad=True)
    edges = torch.tensor([[0, 1, 2, 3, 3, 1], [1, 1, 0, 0, 2, 3]])  # node 4 has no in-edges
    layer = gnn.SAGEConv(3, 2, aggr="prod")
    for p in layer.parameters():
        p.data = torch.tensor((0.5 * rng.standard_normal(tuple(p.shape))).astype(np.float32))
    aggregated = layer(x, edges)
    tab = _load("tabular_transformers", backend, monkeypatch)
    targets = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0])
    focal = tab.sigmoid_focal_loss(x[:, 0] * 3, targets, reduction="mean")
    ((aggregated * aggregated).sum() + focal).backward()
    outputs = [aggregated, focal, x.grad] + [p.grad for p in layer.parameters()]
    return [o.detach().numpy().ravel().tolist() for o in outputs]


def test_program_functions_match_pytorch(monkeypatch):
    expected = _functions("torch", monkeypatch)
    got = _functions("vkml", monkeypatch)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-5, atol=1e-6)
