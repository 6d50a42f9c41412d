"""The official tutorial "What is torch.nn really?" (beginner_source/nn_tutorial.py) on synthetic
8x8 digits: a model written by hand (``weights.requires_grad_()``, a log_softmax of
``x - x.exp().sum(-1).log().unsqueeze(-1)``, the negative log likelihood as
``-input[range(n), target].mean()``, ``weights -= weights.grad * lr`` under no_grad), then
refactored step by step as the tutorial does: ``map(torch.tensor, arrays)``, ``F.cross_entropy``,
an ``nn.Module`` updated through ``model.parameters()``, a ``TensorDataset`` sliced as
``train_ds[i * bs : i * bs + bs]``, ``DataLoader``, ``fit`` with ``zip(*[loss_batch(...)])`` and
``np.sum(np.multiply(losses, nums))``, and a CNN of ``Lambda`` layers, ``nn.AdaptiveAvgPool2d``
and a ``WrappedDataLoader`` generator."""

from __future__ import annotations

import math

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

SIDE = 8
bs = 8
lr = 0.5


def make_data(n=32, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, size=n)
    x = rng.random((n, SIDE * SIDE), dtype=np.float32) * 0.3
    x[np.arange(n), y * 6] += 1.0  # a bright pixel says the label
    return x[:24], y[:24], x[24:], y[24:]


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(SIDE * SIDE, 10) / math.sqrt(SIDE * SIDE))
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, xb):
        return xb @ self.weights + self.bias


class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x, y):
    return x.view(-1, 1, SIDE, SIDE), y


class WrappedDataLoader:
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield (self.func(*b))


class Models(nn.Module):
    """The tutorial's three models, in one module so that the harness loads one state_dict."""

    def __init__(self):
        super().__init__()
        self.logistic = Mnist_Logistic()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 10, kernel_size=3, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            Lambda(lambda x: x.view(x.size(0), -1)),
        )


def build():
    torch.manual_seed(0)
    return Models()


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    val_losses = []
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(epoch, val_loss)
        val_losses.append(float(val_loss))
    return val_losses


def train(model, steps=3):
    x_train, y_train, x_valid, y_valid = map(torch.tensor, make_data())
    n, c = x_train.shape

    # from scratch: the logistic model's initial weights as plain tensors
    weights = model.logistic.weights.detach().clone()
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)

    def by_hand(xb):
        return log_softmax(xb @ weights + bias)

    losses = []
    for i in range(steps):
        start_i = (i * bs) % n
        xb, yb = x_train[start_i : start_i + bs], y_train[start_i : start_i + bs]
        pred = by_hand(xb)
        loss = nll(pred, yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
        losses.append(loss.item())
    first = [nll(by_hand(x_valid), y_valid).item(), accuracy(by_hand(x_valid), y_valid).item()]

    # nn.Module, parameters(), F.cross_entropy, a sliced TensorDataset
    loss_func = F.cross_entropy
    logistic = model.logistic
    train_ds = TensorDataset(x_train, y_train)
    for i in range((n - 1) // bs + 1):
        xb, yb = train_ds[i * bs : i * bs + bs]
        loss = loss_func(logistic(xb), yb)
        loss.backward()
        with torch.no_grad():
            for p in logistic.parameters():
                p -= p.grad * lr
            logistic.zero_grad()
    module = loss_func(logistic(x_valid), y_valid).item()

    # DataLoader, fit, and the CNN of Lambda layers behind a WrappedDataLoader
    valid_ds = TensorDataset(x_valid, y_valid)
    train_dl = DataLoader(train_ds, batch_size=bs)
    valid_dl = DataLoader(valid_ds, batch_size=bs * 2)
    fitted = fit(1, logistic, loss_func, optim.SGD(logistic.parameters(), lr=lr), train_dl, valid_dl)
    train_dl, valid_dl = WrappedDataLoader(train_dl, preprocess), WrappedDataLoader(valid_dl, preprocess)
    opt = optim.SGD(model.cnn.parameters(), lr=0.1, momentum=0.9)
    fitted += fit(1, model.cnn, loss_func, opt, train_dl, valid_dl)
    return {"losses": losses, "first": first, "module": module, "fit": fitted}


if __name__ == "__main__":
    print(train(build(), steps=3))
