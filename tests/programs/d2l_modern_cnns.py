"""Dive into Deep Learning's modern convolutional networks (PyTorch edition) at tiny sizes on a synthetic
Fashion-MNIST: GoogLeNet's Inception block, batch normalization from scratch (and ``nn.BatchNorm2d``),
ResNet's ``Residual`` block and DenseNet's dense and transition blocks, trained by the book's ``train_ch6``.

Its idioms: ``Inception``'s four paths joined by ``torch.cat((p1, p2, p3, p4), dim=1)`` after ``F.relu`` of
each; ``batch_norm`` telling training from prediction by ``torch.is_grad_enabled()``, the means by
``X.mean(dim=(0, 2, 3), keepdim=True)`` and ``((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)`` (and
``X.mean(dim=0)`` for a fully connected layer), ``momentum * moving_mean + (1.0 - momentum) * mean`` and
``return Y, moving_mean.data, moving_var.data``; ``BatchNorm``'s ``nn.Parameter(torch.ones(shape))`` and
plain-tensor ``moving_mean`` moved by ``if self.moving_mean.device != X.device``; ``Residual``'s
``use_1x1conv`` and ``Y += X``; ``resnet_block``'s ``blk.append(...)`` and ``nn.Sequential(*resnet_block(...))``;
DenseNet's ``conv_block`` and ``DenseBlock`` concatenating ``X = torch.cat((X, Y), dim=1)`` and its
``transition_block``; and the heads' ``nn.AdaptiveAvgPool2d((1, 1))`` and ``nn.Flatten()``. The batch-norm
model is evaluated under ``torch.no_grad()`` (the moving statistics), and its learned ``gamma`` read back by
``net[1].gamma.reshape((-1,))``."""

from __future__ import annotations

from shim import F, nn, torch

data = torch.utils.data  # from torch.utils import data

ARCH = "batchnorm"  # or "bn_concise", "googlenet", "resnet", "densenet"
SHUFFLE = True
batch_size, lr, size = 16, 0.5, 16


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


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    # Use `is_grad_enabled` to determine whether we are in training mode
    if not torch.is_grad_enabled():
        # In prediction mode, use mean and variance obtained by moving average
        X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        assert len(X.shape) in (2, 4)
        if len(X.shape) == 2:
            # When using a fully connected layer, calculate the mean and variance on the feature dimension
            mean = X.mean(dim=0)
            var = ((X - mean) ** 2).mean(dim=0)
        else:
            # When using a two-dimensional convolutional layer, calculate the mean and variance on the
            # channel dimension (axis=1). Here we need to maintain the shape of `X`, so that the broadcasting
            # operation can be carried out later
            mean = X.mean(dim=(0, 2, 3), keepdim=True)
            var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        # In training mode, the current mean and variance are used
        X_hat = (X - mean) / torch.sqrt(var + eps)
        # Update the mean and variance using moving average
        moving_mean = momentum * moving_mean + (1.0 - momentum) * mean
        moving_var = momentum * moving_var + (1.0 - momentum) * var
    Y = gamma * X_hat + beta  # Scale and shift
    return Y, moving_mean.data, moving_var.data


class BatchNorm(nn.Module):
    # `num_features`: the number of outputs for a fully connected layer or the number of output channels
    # for a convolutional layer. `num_dims`: 2 for a fully connected layer and 4 for a convolutional layer
    def __init__(self, num_features, num_dims):
        super().__init__()
        if num_dims == 2:
            shape = (1, num_features)
        else:
            shape = (1, num_features, 1, 1)
        # The scale parameter and the shift parameter (model parameters) are initialized to 1 and 0, respectively
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        # The variables that are not model parameters are initialized to 0 and 1
        self.moving_mean = torch.zeros(shape)
        self.moving_var = torch.ones(shape)

    def forward(self, X):
        # If `X` is not on the main memory, copy `moving_mean` and `moving_var` to the device where `X` is located
        if self.moving_mean.device != X.device:
            self.moving_mean = self.moving_mean.to(X.device)
            self.moving_var = self.moving_var.to(X.device)
        # Save the updated `moving_mean` and `moving_var`
        Y, self.moving_mean, self.moving_var = batch_norm(
            X, self.gamma, self.beta, self.moving_mean, self.moving_var, eps=1e-5, momentum=0.9
        )
        return Y


class Inception(nn.Module):
    # `c1`--`c4` are the number of output channels for each path
    def __init__(self, in_channels, c1, c2, c3, c4, **kwargs):
        super().__init__(**kwargs)
        # Path 1 is a single 1 x 1 convolutional layer
        self.p1_1 = nn.Conv2d(in_channels, c1, kernel_size=1)
        # Path 2 is a 1 x 1 convolutional layer followed by a 3 x 3 convolutional layer
        self.p2_1 = nn.Conv2d(in_channels, c2[0], kernel_size=1)
        self.p2_2 = nn.Conv2d(c2[0], c2[1], kernel_size=3, padding=1)
        # Path 3 is a 1 x 1 convolutional layer followed by a 5 x 5 convolutional layer
        self.p3_1 = nn.Conv2d(in_channels, c3[0], kernel_size=1)
        self.p3_2 = nn.Conv2d(c3[0], c3[1], kernel_size=5, padding=2)
        # Path 4 is a 3 x 3 maximum pooling layer followed by a 1 x 1 convolutional layer
        self.p4_1 = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.p4_2 = nn.Conv2d(in_channels, c4, kernel_size=1)

    def forward(self, x):
        p1 = F.relu(self.p1_1(x))
        p2 = F.relu(self.p2_2(F.relu(self.p2_1(x))))
        p3 = F.relu(self.p3_2(F.relu(self.p3_1(x))))
        p4 = F.relu(self.p4_2(self.p4_1(x)))
        # Concatenate the outputs on the channel dimension
        return torch.cat((p1, p2, p3, p4), dim=1)


class Residual(nn.Module):
    def __init__(self, input_channels, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(input_channels, num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.Conv2d(input_channels, num_channels, kernel_size=1, stride=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


def resnet_block(input_channels, num_channels, num_residuals, first_block=False):
    blk = []
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.append(Residual(input_channels, num_channels, use_1x1conv=True, strides=2))
        else:
            blk.append(Residual(num_channels, num_channels))
    return blk


def conv_block(input_channels, num_channels):
    return nn.Sequential(
        nn.BatchNorm2d(input_channels), nn.ReLU(), nn.Conv2d(input_channels, num_channels, kernel_size=3, padding=1)
    )


class DenseBlock(nn.Module):
    def __init__(self, num_convs, input_channels, num_channels):
        super().__init__()
        layer = []
        for i in range(num_convs):
            layer.append(conv_block(num_channels * i + input_channels, num_channels))
        self.net = nn.Sequential(*layer)

    def forward(self, X):
        for blk in self.net:
            Y = blk(X)
            # Concatenate the input and output of each block on the channel dimension
            X = torch.cat((X, Y), dim=1)
        return X


def transition_block(input_channels, num_channels):
    return nn.Sequential(
        nn.BatchNorm2d(input_channels),
        nn.ReLU(),
        nn.Conv2d(input_channels, num_channels, kernel_size=1),
        nn.AvgPool2d(kernel_size=2, stride=2),
    )


def build():
    torch.manual_seed(0)
    if ARCH == "batchnorm":
        # LeNet with the book's BatchNorm after each convolution and fully connected layer
        return nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5),
            BatchNorm(6, num_dims=4),
            nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=3),
            BatchNorm(16, num_dims=4),
            nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.Linear(16 * 2 * 2, 32),
            BatchNorm(32, num_dims=2),
            nn.Sigmoid(),
            nn.Linear(32, 10),
        )
    if ARCH == "bn_concise":
        return nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5),
            nn.BatchNorm2d(6),
            nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=3),
            nn.BatchNorm2d(16),
            nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.Linear(16 * 2 * 2, 32),
            nn.BatchNorm1d(32),
            nn.Sigmoid(),
            nn.Linear(32, 10),
        )
    if ARCH == "googlenet":
        b1 = nn.Sequential(nn.Conv2d(1, 8, kernel_size=7, stride=2, padding=3), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        b2 = nn.Sequential(nn.Conv2d(8, 8, kernel_size=1), nn.ReLU(), nn.Conv2d(8, 16, kernel_size=3, padding=1))
        b3 = nn.Sequential(
            Inception(16, 4, (4, 8), (2, 4), 4), Inception(20, 8, (8, 12), (2, 6), 6), nn.MaxPool2d(3, 2, 1)
        )
        b5 = nn.Sequential(Inception(32, 8, (4, 8), (2, 4), 4), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())
        return nn.Sequential(b1, b2, b3, b5, nn.Linear(24, 10))
    if ARCH == "resnet":
        b1 = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7, stride=2, padding=3),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        )
        b2 = nn.Sequential(*resnet_block(8, 8, 2, first_block=True))
        b3 = nn.Sequential(*resnet_block(8, 16, 2))
        return nn.Sequential(b1, b2, b3, nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(16, 10))
    b1 = nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=7, stride=2, padding=3),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
    )
    # `num_channels`: the current number of channels
    num_channels, growth_rate = 8, 4
    num_convs_in_dense_blocks = [2, 2]
    blks = []
    for i, num_convs in enumerate(num_convs_in_dense_blocks):
        blks.append(DenseBlock(num_convs, num_channels, growth_rate))
        # This is the number of output channels in the previous dense block
        num_channels += num_convs * growth_rate
        # A transition layer that halves the number of channels is added between the dense blocks
        if i != len(num_convs_in_dense_blocks) - 1:
            blks.append(transition_block(num_channels, num_channels // 2))
            num_channels = num_channels // 2
    return nn.Sequential(
        b1,
        *blks,
        nn.BatchNorm2d(num_channels),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(num_channels, 10),
    )


def evaluate_accuracy_gpu(net, data_iter, device=None):
    if isinstance(net, nn.Module):
        net.eval()
        if not device:
            device = next(iter(net.parameters())).device
    correct, total = 0.0, 0
    with torch.no_grad():
        for X, y in data_iter:
            X, y = X.to(device), y.to(device)
            correct += accuracy(net(X), y)
            total += y.numel()
    return correct / total


def train_ch6(net, train_iter, test_iter, num_epochs, lr, device):
    def init_weights(m):
        if type(m) == nn.Linear or type(m) == nn.Conv2d:  # noqa: E721  (the book's test)
            nn.init.xavier_uniform_(m.weight)

    net.apply(init_weights)
    net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss()
    history = {"losses": [], "train_acc": [], "test_acc": []}
    for _ in range(num_epochs):
        total_loss, correct, count = 0.0, 0.0, 0
        net.train()
        for X, y in train_iter:
            optimizer.zero_grad()
            X, y = X.to(device), y.to(device)
            y_hat = net(X)
            l = loss(y_hat, y)  # noqa: E741
            l.backward()
            optimizer.step()
            with torch.no_grad():
                total_loss += float(l * X.shape[0])
                correct += accuracy(y_hat, y)
                count += X.shape[0]
        history["losses"].append(total_loss / count)
        history["train_acc"].append(correct / count)
        history["test_acc"].append(evaluate_accuracy_gpu(net, test_iter))
    return history


def train(model, steps=3):
    torch.manual_seed(1)
    record = {}
    X = torch.rand(size=(2, 1, size, size))
    shapes = []
    for layer in model:
        X = layer(X)
        shapes.append(f"{layer.__class__.__name__} output shape:\t{tuple(X.shape)}")
    record["shapes"] = shapes
    if ARCH == "resnet":
        blk = Residual(3, 3)
        X = torch.rand(4, 3, 6, 6)
        record["residual"] = [list(blk(X).shape), list(Residual(3, 6, use_1x1conv=True, strides=2)(X).shape)]
    if ARCH == "densenet":
        blk = DenseBlock(2, 3, 10)
        X = torch.randn(4, 3, 8, 8)
        Y = blk(X)
        record["dense"] = [list(Y.shape), list(transition_block(23, 10)(Y).shape)]
    train_iter, test_iter = load_data_fashion_mnist(batch_size, resize=size)
    record.update(train_ch6(model, train_iter, test_iter, steps, lr, torch.device("cpu")))
    if ARCH == "batchnorm":
        record["gamma"] = model[1].gamma.reshape((-1,)).tolist()
        record["beta"] = model[1].beta.reshape((-1,)).tolist()
        record["moving_mean"] = model[5].moving_mean.reshape((-1,)).tolist()
        record["moving_var_fc"] = model[10].moving_var.reshape((-1,))[:8].tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
