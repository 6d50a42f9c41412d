"""Skip-gram word2vec with negative sampling, written as the well-known PyTorch word2vec repositories write
it, on a tiny synthetic corpus.

Its idioms: two ``nn.Embedding(vocab, dim, sparse=True)`` tables, the input one initialised by
``init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)`` and the output one by
``init.constant_(..., 0)``; the positive score ``torch.sum(torch.mul(emb_u, emb_v), dim=1)`` clamped to
[-10, 10] into ``-F.logsigmoid``; the negative scores by ``torch.bmm(emb_neg_v, emb_u.unsqueeze(2))
.squeeze()`` into ``-torch.sum(F.logsigmoid(-neg_score), dim=1)``; negatives drawn with
``torch.multinomial`` over the unigram distribution raised to 0.75 (``SAMPLER``; a numpy generator's
draws from the same table when off); ``optim.SparseAdam`` over the sparse gradients (or plain
``optim.SGD`` when ``OPTIMIZER == "sgd"``); nearest words by cosine similarity of the normalised input
embeddings (``F.normalize``, ``topk``)."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

SAMPLER = True
OPTIMIZER = "sparse_adam"  # or "sgd"
DEVICE = "cpu"
EMB_DIM = 6
WINDOW = 2
NEGATIVES = 3
BATCH = 8


def make_corpus(seed=0, length=60, vocab=10):
    """Words drawn with a Zipf-like frequency, so the unigram table is far from uniform."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, vocab + 1)
    return rng.choice(vocab, size=length, p=freq / freq.sum()).tolist(), vocab


def skipgram_pairs(corpus, window):
    pairs = []
    for i, center in enumerate(corpus):
        for j in range(max(0, i - window), min(len(corpus), i + window + 1)):
            if j != i:
                pairs.append((center, corpus[j]))
    return pairs


class SkipGramModel(nn.Module):
    def __init__(self, emb_size, emb_dimension):
        super().__init__()
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        initrange = 1.0 / self.emb_dimension
        nn.init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
        nn.init.constant_(self.v_embeddings.weight.data, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        emb_neg_v = self.v_embeddings(neg_v)

        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = torch.clamp(score, max=10, min=-10)
        score = -F.logsigmoid(score)

        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)
        return torch.mean(score + neg_score)


def build():
    torch.manual_seed(0)
    _, vocab = make_corpus()
    return SkipGramModel(vocab, EMB_DIM)


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    corpus, vocab = make_corpus()
    pairs = skipgram_pairs(corpus, WINDOW)
    counts = np.bincount(corpus, minlength=vocab).astype(np.float64)
    noise_dist = torch.tensor(counts**0.75 / (counts**0.75).sum(), dtype=torch.float, device=device)
    rng = np.random.default_rng(1)
    if OPTIMIZER == "sparse_adam":
        optimizer = optim.SparseAdam(list(model.parameters()), lr=0.05)
    else:
        optimizer = optim.SGD(model.parameters(), lr=0.5)
    record = {"losses": [], "neg_in_range": []}
    for step in range(steps):
        batch = pairs[step * BATCH : (step + 1) * BATCH]
        pos_u = torch.tensor([u for u, _ in batch], dtype=torch.long, device=device)
        pos_v = torch.tensor([v for _, v in batch], dtype=torch.long, device=device)
        if SAMPLER:
            neg_v = torch.multinomial(noise_dist, len(batch) * NEGATIVES, replacement=True).view(len(batch), -1)
        else:
            draws = rng.choice(
                vocab, size=(len(batch), NEGATIVES), p=noise_dist.cpu().numpy() / noise_dist.sum().item()
            )
            neg_v = torch.tensor(draws, dtype=torch.long, device=device)
        record["neg_in_range"].append(bool(((neg_v >= 0) & (neg_v < vocab)).all()))
        optimizer.zero_grad()
        loss = model(pos_u, pos_v, neg_v)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    grad = model.u_embeddings.weight.grad
    record["grad_is_sparse"] = grad.is_sparse
    record["grad_sum"] = grad.coalesce().values().abs().sum().item()
    with torch.no_grad():
        emb = F.normalize(model.u_embeddings.weight, dim=1)
        sims = emb @ emb[0]
        record["nearest"] = sims.topk(3).indices.tolist()
        record["weight_sum"] = model.v_embeddings.weight.abs().sum().item()
    return record


if __name__ == "__main__":
    print(train(build()))
