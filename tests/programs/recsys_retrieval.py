"""Recommendation as matrix-factorisation and retrieval repositories write it, on synthetic interactions.

``MODEL = "mf"``: matrix factorisation with user, item and bias tables as ``nn.Embedding(..., sparse=True)``
(``nn.init.normal_(std=0.01)``, biases ``zero_``), a dense global bias; two optimizers, ``optim.SparseAdam``
over the tables and ``optim.Adam`` over the rest (parameters split by ``named_parameters()``), both
``zero_grad()``-ed and stepped; the MSE on observed ratings; RMSE on held-out pairs; top-k recommendation
over all items with the training items masked by ``index_put_`` of ``-inf`` and ``torch.topk``, recall@k
against the held-out item by ``(topk == target[:, None]).any(dim=1)``; a BPR variant (``LOSS = "bpr"``):
``-F.logsigmoid(pos - neg).mean()`` over negatives fixed in the data.
``MODEL = "two_tower"``: a user tower over the user's history by ``nn.EmbeddingBag(mode="sum")`` with
``offsets`` built by ``torch.cumsum`` of the history lengths and recency ``per_sample_weights``, plus an id
``nn.Embedding``, through an MLP and ``F.normalize(dim=-1)``; an item tower over the item's id and category
embeddings; in-batch negatives (``logits = u @ v.T / temperature``, ``labels = torch.arange(B)``,
``F.cross_entropy``) with the logQ correction ``logits - torch.log(item_prob[item_ids])``; Adagrad;
recall@k and the mean reciprocal rank over the whole catalogue by ``topk`` and ``argsort``."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

MODEL = "mf"  # or "two_tower"
LOSS = "mse"  # matrix factorisation's loss: or "bpr"
DEVICE = "cpu"
N_USERS = 12
N_ITEMS = 15
N_CATEGORIES = 4
DIM = 6
TOP_K = 5


def make_interactions(seed=0):
    """Ratings from a hidden low-rank preference; each user's last interaction is held out."""
    rng = np.random.default_rng(seed)
    user_factors = rng.standard_normal((N_USERS, 2))
    item_factors = rng.standard_normal((N_ITEMS, 2))
    histories, ratings = [], []
    for u in range(N_USERS):
        items = rng.choice(N_ITEMS, size=int(rng.integers(3, 7)), replace=False)
        histories.append(items)
        ratings.append(
            np.clip(3 + user_factors[u] @ item_factors[items].T + 0.3 * rng.standard_normal(len(items)), 1, 5)
        )
    negatives = [rng.choice(np.setdiff1d(np.arange(N_ITEMS), h)) for h in histories]
    categories = rng.integers(0, N_CATEGORIES, N_ITEMS)
    return histories, ratings, np.array(negatives), categories


class MatrixFactorization(nn.Module):
    def __init__(self, num_users, num_items, embedding_dim):
        super().__init__()
        self.user_emb = nn.Embedding(num_users, embedding_dim, sparse=True)
        self.item_emb = nn.Embedding(num_items, embedding_dim, sparse=True)
        self.user_bias = nn.Embedding(num_users, 1, sparse=True)
        self.item_bias = nn.Embedding(num_items, 1, sparse=True)
        self.global_bias = nn.Parameter(torch.tensor([3.0]))
        nn.init.normal_(self.user_emb.weight, std=0.1)
        nn.init.normal_(self.item_emb.weight, std=0.1)
        self.user_bias.weight.data.zero_()
        self.item_bias.weight.data.zero_()

    def forward(self, users, items):
        dot = (self.user_emb(users) * self.item_emb(items)).sum(dim=1)
        return dot + self.user_bias(users).squeeze(-1) + self.item_bias(items).squeeze(-1) + self.global_bias

    def full_scores(self):
        scores = self.user_emb.weight @ self.item_emb.weight.T
        return scores + self.user_bias.weight + self.item_bias.weight.T + self.global_bias


class UserTower(nn.Module):
    def __init__(self, num_users, num_items, dim):
        super().__init__()
        self.history = nn.EmbeddingBag(num_items, dim, mode="sum")
        self.user_id = nn.Embedding(num_users, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, users, history_flat, offsets, weights):
        pooled = self.history(history_flat, offsets, per_sample_weights=weights)
        return F.normalize(self.mlp(torch.cat([pooled, self.user_id(users)], dim=-1)), dim=-1)


class ItemTower(nn.Module):
    def __init__(self, num_items, num_categories, dim):
        super().__init__()
        self.item_id = nn.Embedding(num_items, dim)
        self.category = nn.Embedding(num_categories, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, items, categories):
        return F.normalize(self.mlp(torch.cat([self.item_id(items), self.category(categories)], dim=-1)), dim=-1)


class TwoTower(nn.Module):
    def __init__(self, temperature=0.1):
        super().__init__()
        self.user_tower = UserTower(N_USERS, N_ITEMS, DIM)
        self.item_tower = ItemTower(N_ITEMS, N_CATEGORIES, DIM)
        self.temperature = temperature


def build():
    torch.manual_seed(0)
    if MODEL == "mf":
        return MatrixFactorization(N_USERS, N_ITEMS, DIM)
    return TwoTower()


def _recall_and_masked_topk(scores, train_items, held_out):
    """Top-k over the catalogue with the training items masked out; recall@k of the held-out items."""
    rows = torch.cat([torch.full((len(items),), u, dtype=torch.long) for u, items in enumerate(train_items)])
    cols = torch.cat([torch.as_tensor(items, dtype=torch.long) for items in train_items])
    scores = scores.clone()
    scores.index_put_((rows, cols), torch.tensor(float("-inf")))
    _, topk = torch.topk(scores, k=TOP_K, dim=1)
    return (topk == held_out[:, None]).any(dim=1).float().mean().item(), topk


def _train_mf(model, steps, record):
    histories, ratings, negatives, _ = make_interactions()
    train_items = [h[:-1] for h in histories]
    users = torch.tensor(np.concatenate([np.full(len(h), u) for u, h in enumerate(train_items)]))
    items = torch.tensor(np.concatenate(train_items))
    targets = torch.tensor(np.concatenate([r[:-1] for r in ratings]), dtype=torch.float32)
    negatives_per_pair = torch.tensor(negatives)[users]
    held_out = torch.tensor([h[-1] for h in histories])
    held_out_ratings = torch.tensor([r[-1] for r in ratings], dtype=torch.float32)
    sparse_params = [p for name, p in model.named_parameters() if "emb" in name or "bias." in name]
    dense_params = [p for name, p in model.named_parameters() if not ("emb" in name or "bias." in name)]
    sparse_optimizer = optim.SparseAdam(sparse_params, lr=0.05)
    dense_optimizer = optim.Adam(dense_params, lr=0.05)
    for _ in range(steps):
        model.train()
        sparse_optimizer.zero_grad()
        dense_optimizer.zero_grad()
        if LOSS == "bpr":
            loss = -F.logsigmoid(model(users, items) - model(users, negatives_per_pair)).mean()
        else:
            loss = F.mse_loss(model(users, items), targets)
        loss.backward()
        sparse_optimizer.step()
        dense_optimizer.step()
        record["losses"].append(loss.item())
        model.eval()
        with torch.no_grad():
            rmse = torch.sqrt(F.mse_loss(model(torch.arange(N_USERS), held_out), held_out_ratings)).item()
            recall, topk = _recall_and_masked_topk(model.full_scores(), train_items, held_out)
            record["eval"].append([rmse, recall])
    record["topk"] = topk.tolist()
    record["grad_is_sparse"] = model.user_emb.weight.grad.is_sparse


def _train_two_tower(model, steps, record):
    histories, _, _, categories = make_interactions()
    history_lists = [h[:-1] for h in histories]
    lengths = torch.tensor([len(h) for h in history_lists])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, dim=0)[:-1]])
    history_flat = torch.tensor(np.concatenate(history_lists))
    recency = torch.cat([torch.linspace(0.5, 1.0, int(n)) for n in lengths])
    users = torch.arange(N_USERS)
    positives = torch.tensor([h[-1] for h in histories])
    item_categories = torch.tensor(categories)
    counts = torch.bincount(torch.tensor(np.concatenate(histories)), minlength=N_ITEMS).float() + 1
    item_prob = counts / counts.sum()
    optimizer = optim.Adagrad(model.parameters(), lr=0.1)
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        u = model.user_tower(users, history_flat, offsets, recency)
        v = model.item_tower(positives, item_categories[positives])
        logits = u @ v.T / model.temperature
        logits = logits - torch.log(item_prob[positives]).unsqueeze(0)
        labels = torch.arange(logits.size(0))
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        model.eval()
        with torch.no_grad():
            all_items = model.item_tower(torch.arange(N_ITEMS), item_categories)
            scores = model.user_tower(users, history_flat, offsets, recency) @ all_items.T
            topk = scores.topk(TOP_K, dim=1).indices
            recall = (topk == positives.unsqueeze(1)).any(dim=1).float().mean().item()
            ranks = (scores.argsort(dim=1, descending=True) == positives.unsqueeze(1)).float().argmax(dim=1) + 1
            record["eval"].append([recall, (1.0 / ranks.float()).mean().item()])


def train(model, steps=3):
    model = model.to(torch.device(DEVICE))
    record = {"losses": [], "eval": []}
    if MODEL == "mf":
        _train_mf(model, steps, record)
    else:
        _train_two_tower(model, steps, record)
    return record


if __name__ == "__main__":
    print(train(build()))
