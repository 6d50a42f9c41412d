"""Classical machine learning written in PyTorch, as tutorials and notebooks write it, on synthetic data.

``MODEL`` picks one: ``"kmeans"`` (Lloyd's iterations: ``torch.cdist``, ``argmin(dim=1)``, centroid sums
by ``scatter_add_`` over ``labels.unsqueeze(1).expand(-1, d)`` divided by ``torch.bincount(labels,
minlength=k).clamp(min=1)``, the inertia by ``min(dim=1).values.pow(2).sum()``, k-means++ seeding by
``torch.multinomial``); ``"gmm"`` (a diagonal Gaussian mixture by EM: log densities, responsibilities by
``torch.logsumexp(..., dim=1, keepdim=True)``, the log-likelihood as the loss, the M-step by
``resp.sum(0)`` and matmuls, a variance floor by ``clamp_min``, then ``MultivariateNormal`` with
``scale_tril`` scoring the fit); ``"pca"`` (``torch.linalg.svd(full_matrices=False)`` of the centred
data, the explained variance ratio ``S ** 2 / (S ** 2).sum()``, ``torch.pca_lowrank(X, q=...)``
after ``torch.manual_seed``, projections ``X @ V[:, :k]`` and reconstructions compared sign-free);
``"ridge"`` (closed form by ``torch.linalg.solve(X.T @ X + lam * I, X.T @ y)``, ``torch.linalg.lstsq``'s
``.solution``, ``torch.linalg.cholesky`` + ``torch.cholesky_solve``, ``torch.linalg.inv``, the
validation MSE per ``lam``); ``"logreg"`` (``nn.Linear`` trained by ``optim.LBFGS(lr=1,
line_search_fn="strong_wolfe")`` with a closure returning the loss, an L2 penalty, ``max_iter``,
softmax regression with ``F.cross_entropy``); ``"kalman"`` (a constant-velocity Kalman filter,
predict ``x = F @ x``, ``P = F @ P @ F.T + Q``, the gain by ``torch.linalg.inv(S)`` or
``torch.linalg.solve(S, H @ P).T``, the innovations' log-likelihood by ``torch.logdet`` maximised over
``log_q``/``log_r`` parameters with Adam, the process noise ``torch.diag(torch.exp(...))``);
``"svm"`` (a linear SVM, the hinge ``torch.clamp(1 - y * out, min=0).mean()`` plus ``C * w.pow(2).sum()``
with SGD, and a multiclass one with ``nn.MultiMarginLoss``, ``torch.sign`` predictions)."""

from __future__ import annotations

import math

import numpy as np
from shim import F, distributions, nn, optim, torch

MODEL = "kmeans"  # or "gmm", "pca", "ridge", "logreg", "kalman", "svm"
GAIN = "inv"  # the Kalman gain: "inv" or "solve"
DEVICE = "cpu"


def make_blobs(n_per=10, centers=((0.0, 0.0), (4.0, 4.0), (0.0, 5.0)), std=0.8, seed=0):
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for label, center in enumerate(centers):
        xs.append(rng.normal(center, std, (n_per, len(center))))
        ys.append(np.full(n_per, label))
    return torch.tensor(np.concatenate(xs), dtype=torch.float32), torch.tensor(np.concatenate(ys))


class KMeans(nn.Module):
    def __init__(self, n_clusters=3, n_features=2):
        super().__init__()
        self.n_clusters = n_clusters
        self.register_buffer("centroids", torch.zeros(n_clusters, n_features))

    def init_centroids(self, X):
        """k-means++: each next centroid drawn with probability proportional to its squared distance."""
        idx = [int(torch.randint(0, X.size(0), (1,)))]
        for _ in range(1, self.n_clusters):
            d2 = torch.cdist(X, X[idx]).min(dim=1).values.pow(2)
            idx.append(int(torch.multinomial(d2 / d2.sum(), 1)))
        self.centroids.copy_(X[idx])

    def step(self, X):
        dist = torch.cdist(X, self.centroids)
        labels = dist.argmin(dim=1)
        sums = torch.zeros_like(self.centroids).scatter_add_(0, labels.unsqueeze(1).expand(-1, X.size(1)), X)
        counts = torch.bincount(labels, minlength=self.n_clusters).clamp(min=1)
        self.centroids = sums / counts.unsqueeze(1).float()
        return dist.min(dim=1).values.pow(2).sum(), labels


class DiagonalGMM(nn.Module):
    def __init__(self, n_components=3, n_features=2):
        super().__init__()
        self.register_buffer("means", torch.zeros(n_components, n_features))
        self.register_buffer("variances", torch.ones(n_components, n_features))
        self.register_buffer("weights", torch.full((n_components,), 1.0 / n_components))

    def log_prob_components(self, X):
        diff = X.unsqueeze(1) - self.means.unsqueeze(0)  # [n, k, d]
        log_det = torch.log(self.variances).sum(-1)
        mahalanobis = (diff.pow(2) / self.variances.unsqueeze(0)).sum(-1)
        log_norm = -0.5 * (X.size(1) * math.log(2 * math.pi) + log_det + mahalanobis)
        return log_norm + torch.log(self.weights).unsqueeze(0)

    def em_step(self, X):
        weighted = self.log_prob_components(X)
        log_likelihood = torch.logsumexp(weighted, dim=1, keepdim=True)
        resp = torch.exp(weighted - log_likelihood)
        nk = resp.sum(0) + 10 * torch.finfo(resp.dtype).eps
        self.means = (resp.T @ X) / nk.unsqueeze(1)
        self.variances = ((resp.T @ X.pow(2)) / nk.unsqueeze(1) - self.means.pow(2)).clamp_min(1e-6)
        self.weights = nk / X.size(0)
        return log_likelihood.mean(), resp


class LinearModel(nn.Module):
    def __init__(self, n_features, n_outputs):
        super().__init__()
        self.linear = nn.Linear(n_features, n_outputs)

    def forward(self, x):
        return self.linear(x)


class KalmanFilter(nn.Module):
    """Constant velocity in 1-D, position observed; the noise levels are learnt."""

    def __init__(self, dt=1.0):
        super().__init__()
        self.register_buffer("F", torch.tensor([[1.0, dt], [0.0, 1.0]]))
        self.register_buffer("H", torch.tensor([[1.0, 0.0]]))
        self.log_q = nn.Parameter(torch.tensor([-2.0, -2.0]))
        self.log_r = nn.Parameter(torch.tensor([0.0]))

    def forward(self, zs):
        Q = torch.diag(torch.exp(self.log_q))
        R = torch.diag(torch.exp(self.log_r))
        x = torch.zeros(2, 1)
        P = torch.eye(2) * 10.0
        nll = 0.0
        estimates = []
        for z in zs:
            x = self.F @ x
            P = self.F @ P @ self.F.T + Q
            innovation = z.view(1, 1) - self.H @ x
            S = self.H @ P @ self.H.T + R
            if GAIN == "inv":
                K = P @ self.H.T @ torch.linalg.inv(S)
            else:
                K = torch.linalg.solve(S, self.H @ P).T
            x = x + K @ innovation
            P = (torch.eye(2) - K @ self.H) @ P
            nll = nll + 0.5 * (
                torch.logdet(S) + innovation.T @ torch.linalg.solve(S, innovation) + math.log(2 * math.pi)
            )
            estimates.append(x[0, 0])
        return nll.squeeze() / len(zs), torch.stack(estimates)


def build():
    torch.manual_seed(0)
    if MODEL == "kmeans":
        return KMeans()
    if MODEL == "gmm":
        return DiagonalGMM()
    if MODEL == "logreg":
        return LinearModel(2, 3)
    if MODEL == "svm":
        return nn.ModuleDict({"binary": LinearModel(2, 1), "multiclass": LinearModel(2, 3)})
    if MODEL == "kalman":
        return KalmanFilter()
    return nn.Module()  # pca, ridge: closed forms


def _kmeans(model, steps, record):
    X, y = make_blobs()
    torch.manual_seed(3)
    model.init_centroids(X)
    record["init"] = model.centroids.tolist()
    for _ in range(steps):
        inertia, labels = model.step(X)
        record["losses"].append(inertia.item())
    record["sizes"] = torch.bincount(labels, minlength=3).tolist()
    record["centroids"] = model.centroids.tolist()


def _gmm(model, steps, record):
    X, _ = make_blobs()
    model.means.copy_(X[[0, 10, 20]] + 0.5)
    model.variances.copy_(X.var(0, keepdim=True).expand_as(model.variances))
    for _ in range(steps):
        log_likelihood, resp = model.em_step(X)
        record["losses"].append(-log_likelihood.item())
    record["weights"] = model.weights.tolist()
    scale_tril = torch.diag_embed(model.variances.sqrt())
    mixture = distributions.MixtureSameFamily(
        distributions.Categorical(probs=model.weights),
        distributions.MultivariateNormal(model.means, scale_tril=scale_tril),
    )
    record["score"] = mixture.log_prob(X).mean().item()
    record["labels"] = resp.argmax(1).tolist()


def _pca(steps, record):
    rng = np.random.default_rng(0)
    latent = rng.standard_normal((20, 2))
    X = torch.tensor(latent @ rng.standard_normal((2, 5)) + 0.05 * rng.standard_normal((20, 5)), dtype=torch.float32)
    X_centered = X - X.mean(dim=0)
    U, S, Vh = torch.linalg.svd(X_centered, full_matrices=False)
    record["explained_variance_ratio"] = (S**2 / (S**2).sum()).tolist()
    for k in range(1, steps + 1):
        reconstruction = (X_centered @ Vh[:k].T) @ Vh[:k]
        record["losses"].append(F.mse_loss(reconstruction, X_centered).item())
    torch.manual_seed(0)
    U_lr, S_lr, V_lr = torch.pca_lowrank(X, q=3)
    projection = torch.matmul(X_centered, V_lr[:, :2])
    record["lowrank_S"] = S_lr.tolist()
    record["lowrank_projection_abs"] = projection.abs().sum(0).tolist()
    record["lowrank_vs_svd"] = (V_lr[:, 0].abs() - Vh[0].abs()).abs().max().item()
    record["eigenvalues"] = torch.linalg.eigvalsh(X_centered.T @ X_centered / (X.size(0) - 1))[-2:].tolist()


def _ridge(steps, record):
    rng = np.random.default_rng(1)
    X = torch.tensor(rng.standard_normal((30, 4)), dtype=torch.float32)
    true_w = torch.tensor([[1.5], [-2.0], [0.0], [0.5]])
    y = X @ true_w + 0.1 * torch.tensor(rng.standard_normal((30, 1)), dtype=torch.float32)
    X_train, y_train, X_val, y_val = X[:20], y[:20], X[20:], y[20:]
    eye = torch.eye(X.size(1))
    for lam in [0.1, 1.0, 10.0][:steps]:
        A = X_train.T @ X_train + lam * eye
        b = X_train.T @ y_train
        w = torch.linalg.solve(A, b)
        L = torch.linalg.cholesky(A)
        w_chol = torch.cholesky_solve(b, L)
        w_inv = torch.linalg.inv(A) @ b
        record["losses"].append(F.mse_loss(X_val @ w, y_val).item())
        record.setdefault("agree", []).append(
            [(w - w_chol).abs().max().item() < 1e-4, (w - w_inv).abs().max().item() < 1e-4]
        )
    ones = torch.ones(X_train.size(0), 1)
    solution = torch.linalg.lstsq(torch.cat([X_train, ones], dim=1), y_train).solution
    record["ols"] = solution.squeeze(1).tolist()


def _logreg(model, steps, record):
    X, y = make_blobs(std=1.5)
    optimizer = optim.LBFGS(model.parameters(), lr=1, max_iter=5, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X), y) + 1e-3 * model.linear.weight.pow(2).sum()
        loss.backward()
        return loss

    for _ in range(steps):
        loss = optimizer.step(closure)
        record["losses"].append(loss.item())
        with torch.no_grad():
            record.setdefault("acc", []).append((model(X).argmax(1) == y).float().mean().item())
    record["func_evals"] = optimizer.state[optimizer._params[0]]["func_evals"]


def _kalman(model, steps, record):
    rng = np.random.default_rng(2)
    velocity = 0.5 + 0.1 * np.cumsum(rng.standard_normal(12))
    zs = torch.tensor(np.cumsum(velocity) + rng.standard_normal(12), dtype=torch.float32)
    optimizer = optim.Adam(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        nll, estimates = model(zs)
        nll.backward()
        optimizer.step()
        record["losses"].append(nll.item())
    record["estimates"] = estimates.detach().tolist()
    record["noise"] = torch.exp(torch.cat([model.log_q, model.log_r])).tolist()


def _svm(model, steps, record):
    X, y = make_blobs(std=1.2)
    binary_y = torch.where(y == 1, 1.0, -1.0)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    multi_margin = nn.MultiMarginLoss(margin=1.0)
    C = 0.01
    for _ in range(steps):
        optimizer.zero_grad()
        out = model["binary"](X).squeeze(1)
        hinge = torch.clamp(1 - binary_y * out, min=0).mean() + C * model["binary"].linear.weight.pow(2).sum()
        multi = multi_margin(model["multiclass"](X), y)
        loss = hinge + multi
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        with torch.no_grad():
            record.setdefault("acc", []).append(
                [
                    (torch.sign(model["binary"](X).squeeze(1)) == binary_y).float().mean().item(),
                    (model["multiclass"](X).argmax(1) == y).float().mean().item(),
                ]
            )


def train(model, steps=3):
    record = {"losses": []}
    if MODEL == "kmeans":
        _kmeans(model, steps, record)
    elif MODEL == "gmm":
        _gmm(model, steps, record)
    elif MODEL == "pca":
        _pca(steps, record)
    elif MODEL == "ridge":
        _ridge(steps, record)
    elif MODEL == "logreg":
        _logreg(model, steps, record)
    elif MODEL == "kalman":
        _kalman(model, steps, record)
    else:
        _svm(model, steps, record)
    return record


if __name__ == "__main__":
    print(train(build()))
