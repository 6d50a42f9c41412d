"""Dive into Deep Learning's multilayer perceptrons (PyTorch edition): the MLP from scratch, dropout from
scratch and concise, weight decay from scratch and concise, and the initialisations of its numerical-stability
section, on a synthetic Fashion-MNIST and the book's own high-dimensional linear data.

Its idioms: ``nn.Parameter(torch.randn(num_inputs, num_hiddens, requires_grad=True) * 0.01)``; ``relu`` by
``a = torch.zeros_like(X)`` and ``torch.max(X, a)``; ``X @ W1 + b1``; ``dropout_layer`` by ``(torch.rand(X.shape)
> dropout).float()`` and ``mask * X / (1.0 - dropout)`` (with its ``dropout == 1`` and ``0`` cases); a ``Net``
whose ``forward`` reads ``self.training``; ``torch.optim.SGD(params, lr=lr)`` over a list of Parameters;
weight decay's ``torch.sum(w.pow(2)) / 2`` added as ``lambd * l2_penalty(w)`` to the squared loss,
``torch.norm(w).item()``, ``param.data.normal_()`` over ``net.parameters()`` and the optimizer's parameter
groups ``[{"params": net[0].weight, 'weight_decay': wd}, {"params": net[0].bias}]``; and
``nn.init.xavier_uniform_`` / ``nn.init.zeros_`` applied by ``net.apply``."""

from __future__ import annotations

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

MODEL = "mlp_scratch"  # or "dropout_scratch", "dropout_concise", "decay_scratch", "decay_concise"
DROPOUT = 0.2  # the book's dropout1 (dropout2 is its double)
SHUFFLE = True
batch_size, lr = 32, 0.1
num_inputs, num_outputs, num_hiddens1, num_hiddens2 = 784, 10, 32, 16
# Weight decay's data: few examples, many features (the book's 20 and 200, smaller)
n_train, n_test, decay_inputs, decay_batch = 20, 40, 50, 5
WD = 3.0


class Parameters:
    """The from-scratch parameters (globals in the book) with a state_dict, for the comparison."""

    def __init__(self, **tensors):
        self.tensors = tensors

    def state_dict(self):
        return dict(self.tensors)

    def load_state_dict(self, state):
        with torch.no_grad():
            for name, value in state.items():
                self.tensors[name].copy_(value)


def synthetic_fashion_mnist(n, generator_seed):
    g = torch.Generator().manual_seed(generator_seed)
    templates = torch.rand((10, 1, 28, 28), generator=torch.Generator().manual_seed(7))
    labels = torch.randint(0, 10, (n,), generator=g)
    images = (0.7 * templates[labels] + 0.3 * torch.rand((n, 1, 28, 28), generator=g)).clamp(0, 1)
    return data.TensorDataset(images, labels)


def load_data_fashion_mnist(batch_size):
    return (
        data.DataLoader(synthetic_fashion_mnist(96, 0), batch_size, shuffle=SHUFFLE),
        data.DataLoader(synthetic_fashion_mnist(48, 1), batch_size, shuffle=False),
    )


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def evaluate_accuracy(net, data_iter):
    if isinstance(net, torch.nn.Module):
        net.eval()
    correct, total = 0.0, 0
    with torch.no_grad():
        for X, y in data_iter:
            correct += accuracy(net(X), y)
            total += y.numel()
    return correct / total


def train_epoch_ch3(net, train_iter, loss, updater):
    if isinstance(net, torch.nn.Module):
        net.train()
    total_loss, total_correct, total = 0.0, 0.0, 0
    for X, y in train_iter:
        y_hat = net(X)
        l = loss(y_hat, y)  # noqa: E741  (the book's name)
        updater.zero_grad()
        l.mean().backward()
        updater.step()
        total_loss += float(l.sum())
        total_correct += accuracy(y_hat, y)
        total += y.numel()
    return total_loss / total, total_correct / total


def relu(X):
    a = torch.zeros_like(X)
    return torch.max(X, a)


def dropout_layer(X, dropout):
    assert 0 <= dropout <= 1
    # In this case, all elements are dropped out
    if dropout == 1:
        return torch.zeros_like(X)
    # In this case, all elements are kept
    if dropout == 0:
        return X
    mask = (torch.rand(X.shape) > dropout).float()
    return mask * X / (1.0 - dropout)


class Net(nn.Module):
    def __init__(self, num_inputs, num_outputs, num_hiddens1, num_hiddens2, is_training=True):
        super().__init__()
        self.num_inputs = num_inputs
        self.training = is_training
        self.lin1 = nn.Linear(num_inputs, num_hiddens1)
        self.lin2 = nn.Linear(num_hiddens1, num_hiddens2)
        self.lin3 = nn.Linear(num_hiddens2, num_outputs)
        self.relu = nn.ReLU()

    def forward(self, X):
        H1 = self.relu(self.lin1(X.reshape((-1, self.num_inputs))))
        # Use dropout only when training the model
        if self.training:
            # Add a dropout layer after the first fully connected layer
            H1 = dropout_layer(H1, DROPOUT)
        H2 = self.relu(self.lin2(H1))
        if self.training:
            # Add a dropout layer after the second fully connected layer
            H2 = dropout_layer(H2, min(2 * DROPOUT, 1.0))
        out = self.lin3(H2)
        return out


def init_weights(m):
    if type(m) == nn.Linear:  # noqa: E721  (the book's test)
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


def synthetic_data(w, b, num_examples):
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = torch.matmul(X, w) + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def l2_penalty(w):
    return torch.sum(w.pow(2)) / 2


def build():
    torch.manual_seed(0)
    if MODEL == "mlp_scratch":
        W1 = nn.Parameter(torch.randn(num_inputs, num_hiddens1, requires_grad=True) * 0.01)
        b1 = nn.Parameter(torch.zeros(num_hiddens1, requires_grad=True))
        W2 = nn.Parameter(torch.randn(num_hiddens1, num_outputs, requires_grad=True) * 0.01)
        b2 = nn.Parameter(torch.zeros(num_outputs, requires_grad=True))
        return Parameters(W1=W1, b1=b1, W2=W2, b2=b2)
    if MODEL == "dropout_scratch":
        return Net(num_inputs, num_outputs, num_hiddens1, num_hiddens2)
    if MODEL == "dropout_concise":
        net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, num_hiddens1),
            nn.ReLU(),
            # Add a dropout layer after the first fully connected layer
            nn.Dropout(DROPOUT),
            nn.Linear(num_hiddens1, num_hiddens2),
            nn.ReLU(),
            # Add a dropout layer after the second fully connected layer
            nn.Dropout(min(2 * DROPOUT, 1.0)),
            nn.Linear(num_hiddens2, 10),
        )
        net.apply(init_weights)
        return net
    if MODEL == "decay_scratch":
        w = torch.normal(0, 1, size=(decay_inputs, 1), requires_grad=True)
        b = torch.zeros(1, requires_grad=True)
        return Parameters(w=w, b=b)
    net = nn.Sequential(nn.Linear(decay_inputs, 1))
    for param in net.parameters():
        param.data.normal_()
    return net


def train_classifier(net, steps, updater, record):
    train_iter, test_iter = load_data_fashion_mnist(batch_size)
    loss = nn.CrossEntropyLoss(reduction="none")
    for _ in range(steps):
        train_loss, train_acc = train_epoch_ch3(net, train_iter, loss, updater)
        record["losses"].append(train_loss)
        record["train_acc"].append(train_acc)
        record["test_acc"].append(evaluate_accuracy(net, test_iter))
    return record


def train_decay(model, steps, record):
    true_w, true_b = torch.ones((decay_inputs, 1)) * 0.01, 0.05
    train_data = synthetic_data(true_w, true_b, n_train)
    train_iter = data.DataLoader(data.TensorDataset(*train_data), decay_batch, shuffle=SHUFFLE)
    test_data = synthetic_data(true_w, true_b, n_test)
    test_iter = data.DataLoader(data.TensorDataset(*test_data), decay_batch, shuffle=False)
    num_epochs, lr = steps, 0.003

    def evaluate_loss(net, data_iter, loss):
        total, count = 0.0, 0
        for X, y in data_iter:
            out = net(X)
            y = y.reshape(out.shape)
            l = loss(out, y)  # noqa: E741
            total += l.sum()
            count += l.numel()
        return float(total) / count

    if MODEL == "decay_scratch":
        w, b = model.tensors["w"], model.tensors["b"]

        def net(X):
            return torch.matmul(X, w) + b

        def loss(y_hat, y):
            return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2

        for _ in range(num_epochs):
            for X, y in train_iter:
                # The L2 norm penalty term has been added, and broadcasting
                # makes `l2_penalty(w)` a vector whose length is `batch_size`
                l = loss(net(X), y) + WD * l2_penalty(w)  # noqa: E741
                l.sum().backward()
                with torch.no_grad():
                    for param in [w, b]:
                        param -= lr * param.grad / decay_batch
                        param.grad.zero_()
            with torch.no_grad():
                record["losses"].append(evaluate_loss(net, train_iter, loss))
                record["test_loss"].append(evaluate_loss(net, test_iter, loss))
        record["w_norm"] = torch.norm(w).item()
    else:
        net = model
        loss = nn.MSELoss(reduction="none")
        # The bias parameter has not decayed
        trainer = torch.optim.SGD([{"params": net[0].weight, "weight_decay": WD}, {"params": net[0].bias}], lr=lr)
        for _ in range(num_epochs):
            for X, y in train_iter:
                trainer.zero_grad()
                l = loss(net(X), y)  # noqa: E741
                l.mean().backward()
                trainer.step()
            record["losses"].append(evaluate_loss(net, train_iter, loss))
            record["test_loss"].append(evaluate_loss(net, test_iter, loss))
        record["w_norm"] = net[0].weight.norm().item()
        record["groups"] = [g["weight_decay"] for g in trainer.param_groups]
    return record


def train(model, steps=3):
    torch.manual_seed(1)
    record = {"losses": [], "train_acc": [], "test_acc": [], "test_loss": []}
    X = torch.arange(16, dtype=torch.float32).reshape((2, 8))
    record["dropout_edges"] = [dropout_layer(X, 0.0).tolist(), dropout_layer(X, 1.0).tolist()]
    record["relu"] = relu(torch.tensor([[-1.0, 2.0], [0.5, -0.0]])).tolist()
    if MODEL == "mlp_scratch":
        W1, b1, W2, b2 = (model.tensors[k] for k in ("W1", "b1", "W2", "b2"))
        params = [W1, b1, W2, b2]

        def net(X):
            X = X.reshape((-1, num_inputs))
            H = relu(X @ W1 + b1)  # Here '@' stands for matrix multiplication
            return H @ W2 + b2

        return train_classifier(net, steps, torch.optim.SGD(params, lr=lr), record)
    if MODEL in ("dropout_scratch", "dropout_concise"):
        return train_classifier(model, steps, torch.optim.SGD(model.parameters(), lr=lr * 5), record)
    return train_decay(model, steps, record)


if __name__ == "__main__":
    print(train(build()))
