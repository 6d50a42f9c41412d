"""Dive into Deep Learning's convolutional networks (PyTorch edition): the convolution chapter's
``corr2d`` and edge detector learned by hand, then LeNet, AlexNet, VGG and NiN at tiny sizes, trained by
the book's ``train_ch6`` on a synthetic Fashion-MNIST.

Its idioms: ``corr2d`` by ``Y[i, j] = (X[i:i + h, j:j + w] * K).sum()`` into ``torch.zeros((X.shape[0] - h + 1,
...))``; a ``nn.Conv2d(1, 1, kernel_size=(1, 2), bias=False)`` learned by ``conv2d.weight.data[:] -= lr *
conv2d.weight.grad`` after ``conv2d.zero_grad()``; ``comp_conv2d``'s ``X.reshape((1, 1) + X.shape)`` and
``Y.reshape(Y.shape[2:])``; ``pool2d`` by ``X[i: i + p_h, j: j + p_w].max()`` / ``.mean()``; ``torch.cat((X, X
+ 1), 1)`` into ``nn.MaxPool2d(3, padding=1, stride=2)``; LeNet's ``nn.Sigmoid`` and ``nn.AvgPool2d(kernel_size=2,
stride=2)`` and the layer-by-layer shape walk ``for layer in net: X = layer(X)`` printing
``layer.__class__.__name__``; ``vgg_block``'s ``layers.append(...)`` into ``nn.Sequential(*layers)``;
``nin_block`` and ``nn.AdaptiveAvgPool2d((1, 1))``; ``train_ch6``'s ``net.apply(init_weights)``
(``type(m) == nn.Linear or type(m) == nn.Conv2d`` and ``nn.init.xavier_uniform_``), ``net.to(device)``, and
``evaluate_accuracy_gpu``'s ``device = next(iter(net.parameters())).device``, ``isinstance(X, list)`` and
``metric.add(accuracy(net(X), y), y.numel())``."""

from __future__ import annotations

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

ARCH = "lenet"  # or "alexnet", "vgg", "nin"
DROPOUT = 0.5
SHUFFLE = True
batch_size, lr = 16, 0.9


def synthetic_fashion_mnist(n, generator_seed, size):
    g = torch.Generator().manual_seed(generator_seed)
    templates = torch.rand((10, 1, size, size), generator=torch.Generator().manual_seed(7))
    labels = torch.randint(0, 10, (n,), generator=g)
    images = (0.7 * templates[labels] + 0.3 * torch.rand((n, 1, size, size), generator=g)).clamp(0, 1)
    return data.TensorDataset(images, labels)


def load_data_fashion_mnist(batch_size, resize=None):
    size = resize or 28
    return (
        data.DataLoader(synthetic_fashion_mnist(48, 0, size), batch_size, shuffle=SHUFFLE),
        data.DataLoader(synthetic_fashion_mnist(32, 1, size), batch_size, shuffle=False),
    )


class Accumulator:
    """For accumulating sums over `n` variables."""

    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args, strict=False)]

    def __getitem__(self, idx):
        return self.data[idx]


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def try_gpu(i=0):
    """The book's device choice, kept on the CPU: both libraries run the comparison there."""
    return torch.device("cpu")


def corr2d(X, K):
    """Compute 2D cross-correlation."""
    h, w = K.shape
    Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = (X[i : i + h, j : j + w] * K).sum()
    return Y


def pool2d(X, pool_size, mode="max"):
    p_h, p_w = pool_size
    Y = torch.zeros((X.shape[0] - p_h + 1, X.shape[1] - p_w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            if mode == "max":
                Y[i, j] = X[i : i + p_h, j : j + p_w].max()
            elif mode == "avg":
                Y[i, j] = X[i : i + p_h, j : j + p_w].mean()
    return Y


def comp_conv2d(conv2d, X):
    # (1, 1) indicates that batch size and the number of channels are both 1
    X = X.reshape((1, 1) + X.shape)
    Y = conv2d(X)
    # Strip the first two dimensions: examples and channels
    return Y.reshape(Y.shape[2:])


def convolutions(record):
    """The convolution and pooling sections' small computations."""
    X = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    K = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
    record["corr2d"] = corr2d(X, K).tolist()
    X = torch.ones((6, 8))
    X[:, 2:6] = 0
    K = torch.tensor([[1.0, -1.0]])
    Y = corr2d(X, K)
    record["edges"] = [Y.tolist(), corr2d(X.t(), K).tolist()]
    # Construct a two-dimensional convolutional layer with 1 output channel and a kernel of shape (1, 2)
    conv2d = nn.Conv2d(1, 1, kernel_size=(1, 2), bias=False)
    X = X.reshape((1, 1, 6, 8))
    Y = Y.reshape((1, 1, 6, 7))
    lr = 3e-2  # Learning rate
    for _ in range(10):
        Y_hat = conv2d(X)
        l = (Y_hat - Y) ** 2  # noqa: E741  (the book's name)
        conv2d.zero_grad()
        l.sum().backward()
        # Update the kernel
        conv2d.weight.data[:] -= lr * conv2d.weight.grad
    record["learned_kernel"] = conv2d.weight.data.reshape((1, 2)).tolist()
    conv2d = nn.Conv2d(1, 1, kernel_size=3, padding=1)
    X = torch.rand(size=(8, 8))
    record["padded_shape"] = list(comp_conv2d(conv2d, X).shape)
    conv2d = nn.Conv2d(1, 1, kernel_size=(3, 5), padding=(0, 1), stride=(3, 4))
    record["strided_shape"] = list(comp_conv2d(conv2d, X).shape)
    X = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    record["pool2d"] = [pool2d(X, (2, 2)).tolist(), pool2d(X, (2, 2), "avg").tolist()]
    X = torch.arange(16, dtype=torch.float32).reshape((1, 1, 4, 4))
    X = torch.cat((X, X + 1), 1)
    pool2d_layer = nn.MaxPool2d(3, padding=1, stride=2)
    record["maxpool"] = pool2d_layer(X).tolist()
    X = torch.stack((torch.arange(9.0).reshape(3, 3), torch.ones(3, 3), torch.eye(3)))
    K = torch.stack((torch.ones(2, 2), torch.ones(2, 2) * 2, torch.eye(2)))
    # Multi-input channels: sum of corr2d over the channels; multi-output: torch.stack of their results
    total = sum(corr2d(x, k) for x, k in zip(X, K, strict=False))
    record["multi_in"] = total.tolist()
    K = torch.stack((K, K + 1, K + 2), 0)
    record["multi_out"] = torch.stack([sum(corr2d(x, k) for x, k in zip(X, k_, strict=False)) for k_ in K], 0).tolist()


def vgg_block(num_convs, in_channels, out_channels):
    layers = []
    for _ in range(num_convs):
        layers.append(nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1))
        layers.append(nn.ReLU())
        in_channels = out_channels
    layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
    return nn.Sequential(*layers)


def vgg(conv_arch):
    conv_blks = []
    in_channels = 1
    # The convolutional part
    for num_convs, out_channels in conv_arch:
        conv_blks.append(vgg_block(num_convs, in_channels, out_channels))
        in_channels = out_channels
    return nn.Sequential(
        *conv_blks,
        nn.Flatten(),
        # The fully-connected part
        nn.Linear(out_channels * 2 * 2, 32),
        nn.ReLU(),
        nn.Dropout(DROPOUT),
        nn.Linear(32, 32),
        nn.ReLU(),
        nn.Dropout(DROPOUT),
        nn.Linear(32, 10),
    )


def nin_block(in_channels, out_channels, kernel_size, strides, padding):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, strides, padding),
        nn.ReLU(),
        nn.Conv2d(out_channels, out_channels, kernel_size=1),
        nn.ReLU(),
        nn.Conv2d(out_channels, out_channels, kernel_size=1),
        nn.ReLU(),
    )


# The input size each network is trained at (the book resizes Fashion-MNIST to 224 for AlexNet, VGG and NiN)
RESIZE = {"lenet": 28, "alexnet": 67, "vgg": 32, "nin": 39}


def build():
    torch.manual_seed(0)
    if ARCH == "lenet":
        return nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2),
            nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=5),
            nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120),
            nn.Sigmoid(),
            nn.Linear(120, 84),
            nn.Sigmoid(),
            nn.Linear(84, 10),
        )
    if ARCH == "alexnet":
        return nn.Sequential(
            # Here, we use a larger 11 x 11 window to capture objects. At the same time, we use a stride of 4
            # to greatly reduce the height and width of the output (all channels divided by 16 here)
            nn.Conv2d(1, 6, kernel_size=11, stride=4, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2),
            # Make the convolution window smaller, set padding to 2 for consistent height and width across
            # the input and output, and increase the number of output channels
            nn.Conv2d(6, 16, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2),
            # Use three successive convolutional layers and a smaller convolution window
            nn.Conv2d(16, 24, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(24, 24, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(24, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Flatten(),
            # Here, the number of outputs of the fully-connected layer is several times larger than that in
            # LeNet. Use the dropout layer to mitigate overfitting
            nn.Linear(16, 64),
            nn.ReLU(),
            nn.Dropout(p=DROPOUT),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Dropout(p=DROPOUT),
            # Output layer. Since we are using Fashion-MNIST, the number of classes is 10
            nn.Linear(64, 10),
        )
    if ARCH == "vgg":
        conv_arch = ((1, 64), (1, 128), (2, 256), (2, 512), (2, 512))
        ratio = 16
        small_conv_arch = [(pair[0], pair[1] // ratio) for pair in conv_arch][:4]
        return vgg(small_conv_arch)
    return nn.Sequential(
        nin_block(1, 8, kernel_size=11, strides=4, padding=0),
        nn.MaxPool2d(3, stride=2),
        nin_block(8, 16, kernel_size=5, strides=1, padding=2),
        nn.MaxPool2d(3, stride=2),
        nin_block(16, 24, kernel_size=3, strides=1, padding=1),
        nn.Dropout(DROPOUT),
        # There are 10 label classes
        nin_block(24, 10, kernel_size=3, strides=1, padding=1),
        nn.AdaptiveAvgPool2d((1, 1)),
        # Transform the four-dimensional output into two-dimensional output with a shape of (batch size, 10)
        nn.Flatten(),
    )


def evaluate_accuracy_gpu(net, data_iter, device=None):
    """Compute the accuracy for a model on a dataset using a GPU."""
    if isinstance(net, nn.Module):
        net.eval()  # Set the model to evaluation mode
        if not device:
            device = next(iter(net.parameters())).device
    # No. of correct predictions, no. of predictions
    metric = Accumulator(2)
    with torch.no_grad():
        for X, y in data_iter:
            if isinstance(X, list):
                # Required for BERT Fine-tuning (to be covered later)
                X = [x.to(device) for x in X]
            else:
                X = X.to(device)
            y = y.to(device)
            metric.add(accuracy(net(X), y), y.numel())
    return metric[0] / metric[1]


def train_ch6(net, train_iter, test_iter, num_epochs, lr, device):
    """Train a model with a GPU (defined in Chapter 6)."""

    def init_weights(m):
        if type(m) == nn.Linear or type(m) == nn.Conv2d:  # noqa: E721  (the book's test)
            nn.init.xavier_uniform_(m.weight)

    net.apply(init_weights)
    net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss()
    history = {"losses": [], "train_acc": [], "test_acc": []}
    for _ in range(num_epochs):
        # Sum of training loss, sum of training accuracy, no. of examples
        metric = Accumulator(3)
        net.train()
        for X, y in train_iter:
            optimizer.zero_grad()
            X, y = X.to(device), y.to(device)
            y_hat = net(X)
            l = loss(y_hat, y)  # noqa: E741
            l.backward()
            optimizer.step()
            with torch.no_grad():
                metric.add(l * X.shape[0], accuracy(y_hat, y), X.shape[0])
        train_l = metric[0] / metric[2]
        train_acc = metric[1] / metric[2]
        history["losses"].append(train_l)
        history["train_acc"].append(train_acc)
        history["test_acc"].append(evaluate_accuracy_gpu(net, test_iter))
    return history


def train(model, steps=3):
    torch.manual_seed(1)
    record = {}
    if ARCH == "lenet":
        convolutions(record)
    size = RESIZE[ARCH]
    X = torch.rand(size=(1, 1, size, size), dtype=torch.float32)
    shapes = []
    for layer in model:
        X = layer(X)
        shapes.append(f"{layer.__class__.__name__} output shape: \t{tuple(X.shape)}")
    record["shapes"] = shapes
    train_iter, test_iter = load_data_fashion_mnist(batch_size, resize=size)
    # train_ch6 draws the weights anew (xavier_uniform_): the same draws in both libraries, as their generator is one
    history = train_ch6(model, train_iter, test_iter, steps, lr if ARCH == "lenet" else 0.05, try_gpu())
    record.update(history)
    return record


if __name__ == "__main__":
    print(train(build()))
