"""Classic-ML notebook code in PyTorch: a k-nearest-neighbour classifier over learnt embeddings, k-means,
and an anomaly-detecting autoencoder, at tiny sizes on synthetic data.

Its idioms: ``torch.cdist(test, train)`` then ``dists.topk(k, dim=1, largest=False)`` (or
``torch.topk(..., largest=False, sorted=True)``), neighbour labels by ``train_labels[indices]``, the
majority vote by ``torch.mode(neighbour_labels, dim=1).values`` (or distance-weighted by
``scatter_add_`` of ``1 / (d + eps)`` into class columns and ``argmax``); k-means with the centroids
initialised by ``x[torch.randperm(n)[:k]].clone()``, assignments by ``cdist(...).argmin(dim=1)``, the
update by ``index_add_`` and ``torch.bincount(minlength=k)`` with empty clusters kept by
``torch.where(counts[:, None] > 0, ...)``, convergence by ``torch.allclose``, inertia by
``gather``; an autoencoder trained on normal samples only, per-sample reconstruction errors by
``F.mse_loss(recon, x, reduction="none").mean(dim=1)``, the threshold by ``torch.quantile(errors,
0.95)`` (or ``np.percentile`` of ``errors.numpy()``, or ``mean + 3 * std``), predictions by ``errors >
threshold``, precision and recall by boolean ``&`` and ``sum().item()``, and ``torch.quantile`` with
``interpolation=`` and a ``q`` tensor. The embeddings for the kNN come from a small MLP trained with
cross-entropy, read under ``model.eval()`` and ``torch.no_grad()``."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

K = 3
VOTE = "mode"  # or "weighted"
THRESHOLD = "quantile"  # or "percentile", "sigma"
N_CLASSES = 3


def make_blobs(rng, n_per_class, dim=4, spread=0.6):
    centers = np.array([[2.0, 0, 0, 1], [-2.0, 1, 0, 0], [0, -2.0, 1, -1]], np.float32)[:, :dim]
    x = np.concatenate([c + spread * rng.standard_normal((n_per_class, dim)) for c in centers])
    y = np.repeat(np.arange(len(centers)), n_per_class)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


class Embedder(nn.Module):
    def __init__(self, dim=4, hidden=16, emb=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, emb))
        self.head = nn.Linear(emb, N_CLASSES)

    def forward(self, x):
        return self.head(F.relu(self.body(x)))

    def embed(self, x):
        return self.body(x)


class AutoEncoder(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 8), nn.Tanh(), nn.Linear(8, 2))
        self.decoder = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, dim))

    def forward(self, x):
        return self.decoder(self.encoder(x))


class Models(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedder = Embedder()
        self.autoencoder = AutoEncoder()


def build():
    torch.manual_seed(0)
    return Models()


def knn_predict(train_x, train_y, test_x, k=K):
    dists = torch.cdist(test_x, train_x)
    if VOTE == "mode":
        knn = dists.topk(k, dim=1, largest=False)
        neighbour_labels = train_y[knn.indices]
        return torch.mode(neighbour_labels, dim=1).values
    values, indices = torch.topk(dists, k, dim=1, largest=False, sorted=True)
    weights = 1.0 / (values + 1e-8)
    votes = torch.zeros(test_x.size(0), N_CLASSES)
    votes.scatter_add_(1, train_y[indices], weights)
    return votes.argmax(dim=1)


def kmeans(x, k, n_iter=10, tol=1e-4):
    n = x.size(0)
    centroids = x[torch.randperm(n)[:k]].clone()
    n_done = 0
    for _ in range(n_iter):
        n_done += 1
        assignments = torch.cdist(x, centroids).argmin(dim=1)
        counts = torch.bincount(assignments, minlength=k)
        sums = torch.zeros_like(centroids).index_add_(0, assignments, x)
        new_centroids = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None].float(), centroids)
        if torch.allclose(new_centroids, centroids, atol=tol):
            centroids = new_centroids
            break
        centroids = new_centroids
    dists = torch.cdist(x, centroids)
    inertia = dists.gather(1, assignments[:, None]).pow(2).sum()
    return centroids, assignments, inertia.item(), n_done


def anomaly_threshold(errors):
    if THRESHOLD == "quantile":
        return torch.quantile(errors, 0.95).item()
    if THRESHOLD == "percentile":
        return float(np.percentile(errors.numpy(), 95))
    return (errors.mean() + 3 * errors.std()).item()


def train(model, steps=3):
    rng = np.random.default_rng(0)
    torch.manual_seed(1)
    train_x, train_y = make_blobs(rng, 8)
    test_x, test_y = make_blobs(rng, 4)
    record = {"losses": [], "ae_losses": []}

    # 1. an embedding net by cross-entropy, then kNN on its embeddings
    embedder = model.embedder
    optimizer = optim.Adam(embedder.parameters(), lr=0.02)
    for _ in range(steps):
        embedder.train()
        optimizer.zero_grad()
        loss = F.cross_entropy(embedder(train_x), train_y)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    embedder.eval()
    with torch.no_grad():
        train_emb, test_emb = embedder.embed(train_x), embedder.embed(test_x)
    pred = knn_predict(train_emb, train_y, test_emb)
    record["knn_pred"] = pred.tolist()
    record["knn_acc"] = (pred == test_y).float().mean().item()
    record["raw_knn_pred"] = knn_predict(train_x, train_y, test_x, k=5).tolist()

    # 2. k-means on the raw features
    centroids, assignments, inertia, n_iter = kmeans(train_x, N_CLASSES)
    record["kmeans"] = [centroids.tolist(), assignments.tolist(), inertia, n_iter]

    # 3. an autoencoder on the normal class (0) only; the other classes are the anomalies
    autoencoder = model.autoencoder
    normal = train_x[train_y == 0]
    ae_optimizer = optim.Adam(autoencoder.parameters(), lr=0.01, weight_decay=1e-5)
    criterion = nn.MSELoss()
    for _ in range(4 * steps):
        autoencoder.train()
        ae_optimizer.zero_grad()
        loss = criterion(autoencoder(normal), normal)
        loss.backward()
        ae_optimizer.step()
        record["ae_losses"].append(loss.item())
    autoencoder.eval()
    with torch.no_grad():
        train_errors = F.mse_loss(autoencoder(normal), normal, reduction="none").mean(dim=1)
        threshold = anomaly_threshold(train_errors)
        recon = autoencoder(test_x)
        errors = F.mse_loss(recon, test_x, reduction="none").mean(dim=1)
    predicted = errors > threshold
    actual = test_y != 0
    tp = (predicted & actual).sum().item()
    fp = (predicted & ~actual).sum().item()
    fn = (~predicted & actual).sum().item()
    record["threshold"] = threshold
    record["errors"] = errors.tolist()
    record["precision_recall"] = [tp / max(tp + fp, 1), tp / max(tp + fn, 1)]
    q = torch.tensor([0.1, 0.5, 0.9])
    record["quantiles"] = [
        torch.quantile(errors, q).tolist(),
        torch.quantile(errors, 0.25, interpolation="nearest").item(),
        torch.quantile(errors, 0.25, interpolation="midpoint").item(),
        errors.quantile(0.75, interpolation="lower").item(),
        torch.nanquantile(torch.where(errors > errors.median(), errors, float("nan")), 0.5).item(),
    ]
    return record


if __name__ == "__main__":
    print(train(build()))
