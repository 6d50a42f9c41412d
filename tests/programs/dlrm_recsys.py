"""Two click-through / rating recommenders, written as DLRM (facebookresearch/dlrm) and matrix
factorisation tutorials write them, on synthetic interactions.

DLRM's idioms: a bottom MLP on the dense features and an ``nn.ModuleList`` of ``nn.EmbeddingBag(...,
sparse=True)`` tables, looked up with ``offsets=`` (``mode="sum"`` with ``per_sample_weights=``, and ``mode="mean"``), their
weights set by ``torch.tensor(np.random.uniform(...))`` into ``.data``; the dot interaction ``T =
torch.cat([x] + ly, dim=1).view((batch_size, -1, d))``, ``Z = torch.bmm(T, torch.transpose(T, 1, 2))``,
the strictly upper pairs by ``torch.triu_indices(ni, nj, offset=1)`` picked with ``Z[:, li, lj]``; a top
MLP ending in one logit and ``nn.BCEWithLogitsLoss``; SGD over the dense and the sparse gradients; accuracy by ``torch.round(torch.sigmoid(z))``.
Matrix factorisation's (``MODEL = "mf"``): user and item ``nn.Embedding`` with bias embeddings,
``(u * v).sum(1) + b_u.squeeze() + b_i.squeeze() + global bias``, ``weight.data.uniform_(0, 0.05)``,
``nn.MSELoss`` with Adam and weight decay, RMSE by ``torch.sqrt``."""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

MODEL = "dlrm"  # or "mf"
DEVICE = "cpu"
TABLES = (7, 5, 6)
DIM = 4
BATCH = 6


class DLRM(nn.Module):
    def create_mlp(self, sizes, sigmoid_layer=-1):
        layers = nn.ModuleList()
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(int(sizes[i]), int(sizes[i + 1]), bias=True))
            layers.append(nn.Sigmoid() if i == sigmoid_layer else nn.ReLU())
        return nn.Sequential(*layers)

    def create_emb(self, m, ln):
        emb_l = nn.ModuleList()
        for i, n in enumerate(ln):
            mode = "mean" if i == 1 else "sum"
            bag = nn.EmbeddingBag(n, m, mode=mode, sparse=True)
            rng = np.random.default_rng(i)
            bound = np.sqrt(1 / n)
            bag.weight.data = torch.tensor(rng.uniform(-bound, bound, size=(n, m)).astype(np.float32))
            emb_l.append(bag)
        return emb_l

    def __init__(self, m_spa, ln_emb, ln_bot, ln_top):
        super().__init__()
        self.bot_l = self.create_mlp(ln_bot)
        self.emb_l = self.create_emb(m_spa, ln_emb)
        # the last layer of the top MLP gives a logit: the loss applies the sigmoid
        self.top_l = self.create_mlp(ln_top)[:-1]

    def apply_emb(self, lS_o, lS_i, lS_w):
        ly = []
        for k, sparse_index_group_batch in enumerate(lS_i):
            per_sample_weights = lS_w[k] if self.emb_l[k].mode == "sum" else None
            V = self.emb_l[k](sparse_index_group_batch, lS_o[k], per_sample_weights=per_sample_weights)
            ly.append(V)
        return ly

    def interact_features(self, x, ly):
        (batch_size, d) = x.shape
        T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
        Z = torch.bmm(T, torch.transpose(T, 1, 2))
        _, ni, nj = Z.shape
        li, lj = torch.triu_indices(ni, nj, offset=1, device=x.device)
        Zflat = Z[:, li, lj]
        return torch.cat([x] + [Zflat], dim=1)

    def forward(self, dense_x, lS_o, lS_i, lS_w):
        x = self.bot_l(dense_x)
        ly = self.apply_emb(lS_o, lS_i, lS_w)
        z = self.interact_features(x, ly)
        return self.top_l(z)


class MatrixFactorization(nn.Module):
    def __init__(self, n_users, n_items, n_factors=DIM):
        super().__init__()
        self.user_factors = nn.Embedding(n_users, n_factors)
        self.item_factors = nn.Embedding(n_items, n_factors)
        self.user_biases = nn.Embedding(n_users, 1)
        self.item_biases = nn.Embedding(n_items, 1)
        self.global_bias = nn.Parameter(torch.zeros(1))
        self.user_factors.weight.data.uniform_(0, 0.05)
        self.item_factors.weight.data.uniform_(0, 0.05)
        self.user_biases.weight.data.zero_()
        self.item_biases.weight.data.zero_()

    def forward(self, user, item):
        pred = (self.user_factors(user) * self.item_factors(item)).sum(1)
        pred = pred + self.user_biases(user).squeeze() + self.item_biases(item).squeeze()
        return pred + self.global_bias


def build():
    torch.manual_seed(3)
    if MODEL == "mf":
        return MatrixFactorization(TABLES[0], TABLES[2])
    n_dense = 3
    n_features = len(TABLES) + 1
    interactions = n_features * (n_features - 1) // 2
    return DLRM(DIM, TABLES, [n_dense, 8, DIM], [DIM + interactions, 6, 1])


def dlrm_batch(rng, device):
    dense = torch.tensor(rng.standard_normal((BATCH, 3)).astype(np.float32), device=device)
    offsets, indices, weights = [], [], []
    for n in TABLES:
        lengths = rng.integers(1, 4, BATCH)  # every bag holds 1 to 3 ids
        offsets.append(torch.tensor(np.concatenate([[0], np.cumsum(lengths)[:-1]]), device=device))
        indices.append(torch.tensor(rng.integers(0, n, lengths.sum()), device=device))
        weights.append(torch.tensor(rng.uniform(0.5, 1.5, lengths.sum()).astype(np.float32), device=device))
    clicks = torch.tensor((rng.uniform(size=(BATCH, 1)) < 0.4).astype(np.float32), device=device)
    return dense, offsets, indices, weights, clicks


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    rng = np.random.default_rng(7)
    record = {"losses": []}
    if MODEL == "mf":
        users = torch.tensor(rng.integers(0, TABLES[0], 20), device=device)
        items = torch.tensor(rng.integers(0, TABLES[2], 20), device=device)
        ratings = torch.tensor(rng.integers(1, 6, 20).astype(np.float32), device=device)
        loss_fn = nn.MSELoss()
        optimizer = optim.Adam(model.parameters(), lr=0.05, weight_decay=1e-4)
        for _ in range(steps):
            optimizer.zero_grad()
            loss = loss_fn(model(users, items), ratings)
            loss.backward()
            optimizer.step()
            record["losses"].append(loss.item())
        with torch.no_grad():
            record["rmse"] = torch.sqrt(loss_fn(model(users, items), ratings)).item()
        return record
    loss_fn = nn.BCEWithLogitsLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    record["accuracy"] = []
    for _ in range(steps):
        dense, offsets, indices, weights, clicks = dlrm_batch(rng, device)
        optimizer.zero_grad()
        z = model(dense, offsets, indices, weights)
        loss = loss_fn(z, clicks)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["accuracy"].append((torch.round(torch.sigmoid(z)) == clicks).float().mean().item())
    record["emb_grads"] = [bag.weight.grad.coalesce().values().abs().sum().item() for bag in model.emb_l]
    record["emb_grad_nnz"] = [bag.weight.grad._nnz() for bag in model.emb_l]
    return record


if __name__ == "__main__":
    print(train(build()))
