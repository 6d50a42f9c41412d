"""Dive into Deep Learning's softmax regression, from scratch and concise (PyTorch edition), on a synthetic
Fashion-MNIST (28x28 grey images of ten classes, each class a noisy template; no download).

Its idioms: ``torch.normal(0, 0.01, size=(num_inputs, num_outputs), requires_grad=True)``; ``softmax`` by
``X_exp = torch.exp(X)`` over ``X_exp.sum(1, keepdim=True)``; ``net`` by ``X.reshape((-1, W.shape[0]))``;
the cross-entropy ``- torch.log(y_hat[range(len(y_hat)), y])``; ``accuracy`` by ``y_hat.argmax(axis=1)``,
``cmp = y_hat.type(y.dtype) == y`` and ``float(cmp.type(y.dtype).sum())``; the ``Accumulator`` of Python
floats (``[a + float(b) for a, b in zip(self.data, args)]``); ``evaluate_accuracy`` under
``isinstance(net, torch.nn.Module)`` and ``torch.no_grad()`` with ``y.numel()``; ``train_epoch_ch3`` that
tells ``isinstance(updater, torch.optim.Optimizer)`` from the book's own ``sgd``; the labels' text by
``[text_labels[int(i)] for i in labels]``; and the concise model ``nn.Sequential(nn.Flatten(),
nn.Linear(784, 10))`` with ``net.apply(init_weights)`` (``type(m) == nn.Linear``, ``nn.init.normal_(m.weight,
std=0.01)``) trained through ``nn.CrossEntropyLoss(reduction='none')`` and ``l.mean().backward()``."""

from __future__ import annotations

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

CONCISE = False  # nn.Sequential(nn.Flatten(), nn.Linear) and optim.SGD instead of from scratch
SHUFFLE = True
batch_size, lr, num_inputs, num_outputs = 32, 0.1, 784, 10
n_train, n_test = 96, 48


class Parameters:
    """The from-scratch parameters (the book keeps ``W`` and ``b`` as globals) with a state_dict, for the
    comparison to start PyTorch and vkml from the same values."""

    def __init__(self, **tensors):
        self.tensors = tensors

    def state_dict(self):
        return dict(self.tensors)

    def load_state_dict(self, state):
        with torch.no_grad():
            for name, value in state.items():
                self.tensors[name].copy_(value)


def synthetic_fashion_mnist(n, generator_seed, resize=28):
    """Fashion-MNIST's shapes and value range: (n, 1, resize, resize) floats in [0, 1], int64 labels."""
    g = torch.Generator().manual_seed(generator_seed)
    templates = torch.rand((10, 1, resize, resize), generator=torch.Generator().manual_seed(7))
    labels = torch.randint(0, 10, (n,), generator=g)
    images = (0.7 * templates[labels] + 0.3 * torch.rand((n, 1, resize, resize), generator=g)).clamp(0, 1)
    return data.TensorDataset(images, labels)


def load_data_fashion_mnist(batch_size, resize=None):
    """The synthetic dataset's two iterators, as the book's loader gives Fashion-MNIST's."""
    size = resize or 28
    mnist_train = synthetic_fashion_mnist(n_train, 0, size)
    mnist_test = synthetic_fashion_mnist(n_test, 1, size)
    return (
        data.DataLoader(mnist_train, batch_size, shuffle=SHUFFLE, num_workers=0),
        data.DataLoader(mnist_test, batch_size, shuffle=False, num_workers=0),
    )


def get_fashion_mnist_labels(labels):
    """Return text labels for the Fashion-MNIST dataset."""
    text_labels = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot"]
    return [text_labels[int(i)] for i in labels]


class Accumulator:
    """For accumulating sums over `n` variables."""

    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args, strict=False)]

    def reset(self):
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


def softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdim=True)
    return X_exp / partition  # The broadcasting mechanism is applied here


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[range(len(y_hat)), y])


def accuracy(y_hat, y):
    """Compute the number of correct predictions."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def evaluate_accuracy(net, data_iter):
    """Compute the accuracy for a model on a dataset."""
    if isinstance(net, torch.nn.Module):
        net.eval()  # Set the model to evaluation mode
    metric = Accumulator(2)  # No. of correct predictions, no. of predictions
    with torch.no_grad():
        for X, y in data_iter:
            metric.add(accuracy(net(X), y), y.numel())
    return metric[0] / metric[1]


def sgd(params, lr, batch_size):
    """Minibatch stochastic gradient descent."""
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def train_epoch_ch3(net, train_iter, loss, updater):
    """The training loop defined in Chapter 3."""
    # Set the model to training mode
    if isinstance(net, torch.nn.Module):
        net.train()
    # Sum of training loss, sum of training accuracy, no. of examples
    metric = Accumulator(3)
    for X, y in train_iter:
        # Compute gradients and update parameters
        y_hat = net(X)
        l = loss(y_hat, y)  # noqa: E741  (the book's name)
        if isinstance(updater, torch.optim.Optimizer):
            # Using PyTorch in-built optimizer & loss criterion
            updater.zero_grad()
            l.mean().backward()
            updater.step()
        else:
            # Using custom built optimizer & loss criterion
            l.sum().backward()
            updater(X.shape[0])
        metric.add(float(l.sum()), accuracy(y_hat, y), y.numel())
    # Return training loss and training accuracy
    return metric[0] / metric[2], metric[1] / metric[2]


def init_weights(m):
    if type(m) == nn.Linear:  # noqa: E721  (the book's test)
        nn.init.normal_(m.weight, std=0.01)


def build():
    torch.manual_seed(0)
    if CONCISE:
        # PyTorch does not implicitly reshape the inputs. Thus we define the flatten
        # layer to reshape the inputs before the linear layer in our network
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
        net.apply(init_weights)
        return net
    W = torch.normal(0, 0.01, size=(num_inputs, num_outputs), requires_grad=True)
    b = torch.zeros(num_outputs, requires_grad=True)
    return Parameters(W=W, b=b)


def train(model, steps=3):
    torch.manual_seed(1)
    train_iter, test_iter = load_data_fashion_mnist(batch_size)
    X, y = next(iter(test_iter))
    record = {"losses": [], "train_acc": [], "test_acc": [], "labels": get_fashion_mnist_labels(y[:6])}
    if CONCISE:
        net = model
        loss = nn.CrossEntropyLoss(reduction="none")
        updater = torch.optim.SGD(net.parameters(), lr=lr)
    else:
        W, b = model.tensors["W"], model.tensors["b"]

        def net(X):
            return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)

        loss = cross_entropy

        def updater(batch_size):
            return sgd([W, b], lr, batch_size)

        X_prob = softmax(torch.normal(0, 1, (2, 5)))
        record["softmax_rows"] = X_prob.sum(1).tolist()
        y_hat = torch.tensor([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
        record["picked"] = y_hat[[0, 1], torch.tensor([0, 2])].tolist()
        record["toy_accuracy"] = accuracy(y_hat, torch.tensor([0, 2])) / 2
    record["initial_test_acc"] = evaluate_accuracy(net, test_iter)
    for _ in range(steps):
        train_metrics = train_epoch_ch3(net, train_iter, loss, updater)
        test_acc = evaluate_accuracy(net, test_iter)
        record["losses"].append(train_metrics[0])
        record["train_acc"].append(train_metrics[1])
        record["test_acc"].append(test_acc)
    # predict_ch3: the first test images' true and predicted labels
    trues = get_fashion_mnist_labels(y)
    preds = get_fashion_mnist_labels(net(X).argmax(axis=1))
    record["titles"] = [true + "\n" + pred for true, pred in zip(trues, preds, strict=False)][:6]
    return record


if __name__ == "__main__":
    print(train(build()))
