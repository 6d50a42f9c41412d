"""Dive into Deep Learning's linear regression, from scratch and concise (PyTorch edition), on its own
synthetic data at the book's sizes.

Its idioms: ``synthetic_data`` by ``torch.normal(0, 1, (num_examples, len(w)))``, ``torch.matmul(X, w) + b``
and ``y += torch.normal(0, 0.01, y.shape)``; ``data_iter`` shuffling a Python list by ``random.shuffle``
and indexing the features by ``torch.tensor(indices[i: min(i + batch_size, num_examples)])``; the
parameters ``torch.normal(0, 0.01, size=(2, 1), requires_grad=True)`` and ``torch.zeros(1,
requires_grad=True)``; ``squared_loss``'s ``(y_hat - y.reshape(y_hat.shape)) ** 2 / 2``; ``sgd`` by
``param -= lr * param.grad / batch_size`` and ``param.grad.zero_()`` under ``torch.no_grad()``; the
epoch's ``f'{float(train_l.mean()):f}'``. The concise version: ``data.TensorDataset(*data_arrays)``
and ``data.DataLoader(dataset, batch_size, shuffle=is_train)``, ``net[0].weight.data.normal_(0,
0.01)``, ``net[0].bias.data.fill_(0)``, ``nn.MSELoss()``, ``torch.optim.SGD`` and ``f'loss {l:f}'`` of
a 0-d tensor; the error of the estimates ``true_w - w.reshape(true_w.shape)``."""

from __future__ import annotations

import random

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

CONCISE = False  # the concise implementation (nn.Linear, DataLoader, optim.SGD) instead of from scratch
SHUFFLE = True
lr, batch_size, num_examples = 0.03, 10, 100


class Parameters:
    """The from-scratch parameters (the book keeps ``w`` and ``b`` as globals) with a state_dict, for the
    comparison to start PyTorch and vkml from the same values."""

    def __init__(self, **tensors):
        self.tensors = tensors

    def state_dict(self):
        return dict(self.tensors)

    def load_state_dict(self, state):
        with torch.no_grad():
            for name, value in state.items():
                self.tensors[name].copy_(value)


def synthetic_data(w, b, num_examples):
    """Generate y = Xw + b + noise."""
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = torch.matmul(X, w) + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def data_iter(batch_size, features, labels):
    num_examples = len(features)
    indices = list(range(num_examples))
    # The examples are read at random, in no particular order
    if SHUFFLE:
        random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        batch_indices = torch.tensor(indices[i : min(i + batch_size, num_examples)])
        yield features[batch_indices], labels[batch_indices]


def load_array(data_arrays, batch_size, is_train=True):
    """Construct a PyTorch data iterator."""
    dataset = data.TensorDataset(*data_arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train and SHUFFLE)


def linreg(X, w, b):
    """The linear regression model."""
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    """Squared loss."""
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    """Minibatch stochastic gradient descent."""
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def build():
    torch.manual_seed(0)
    if CONCISE:
        net = nn.Sequential(nn.Linear(2, 1))
        net[0].weight.data.normal_(0, 0.01)
        net[0].bias.data.fill_(0)
        return net
    w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    return Parameters(w=w, b=b)


def train(model, steps=3):
    random.seed(0)
    torch.manual_seed(1)
    true_w = torch.tensor([2, -3.4])
    true_b = 4.2
    features, labels = synthetic_data(true_w, true_b, num_examples)
    record = {"losses": [], "lines": [], "first_example": [features[0].tolist(), labels[0].tolist()]}
    num_epochs = steps
    if CONCISE:
        net = model
        data_iter_ = load_array((features, labels), batch_size)
        record["first_batch"] = next(iter(data_iter_))[1].flatten().tolist()
        loss = nn.MSELoss()
        trainer = torch.optim.SGD(net.parameters(), lr=0.03)
        for epoch in range(num_epochs):
            for X, y in data_iter_:
                l = loss(net(X), y)  # noqa: E741  (the book's name)
                trainer.zero_grad()
                l.backward()
                trainer.step()
            l = loss(net(features), labels)  # noqa: E741
            record["losses"].append(l.item())
            line = f"epoch {epoch + 1}, loss {l:f}"
            record["lines"].append(line == f"epoch {epoch + 1}, loss {l.item():f}")
        w = net[0].weight.data
        b = net[0].bias.data
    else:
        w, b = model.tensors["w"], model.tensors["b"]
        net = linreg
        loss = squared_loss
        for epoch in range(num_epochs):
            for X, y in data_iter(batch_size, features, labels):
                l = loss(net(X, w, b), y)  # noqa: E741  # Minibatch loss in `X` and `y`
                # Compute gradient on `l` with respect to [`w`, `b`]
                l.sum().backward()
                sgd([w, b], lr, batch_size)  # Update parameters using their gradient
            with torch.no_grad():
                train_l = loss(net(features, w, b), labels)
                record["losses"].append(float(train_l.mean()))
                line = f"epoch {epoch + 1}, loss {float(train_l.mean()):f}"
                record["lines"].append(line.startswith("epoch") and len(line.split(".")[1]) == 6)
    record["w_error"] = (true_w - w.reshape(true_w.shape)).tolist()
    record["b_error"] = float(true_b - b)
    record["error_line"] = f"error in estimating w: {true_w - w.reshape(true_w.shape)}"
    return record


if __name__ == "__main__":
    print(train(build()))
