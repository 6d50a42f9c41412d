"""The official tutorial "Spatial Transformer Networks" (intermediate_source/spatial_transformer_tutorial.py)
at a tiny size on synthetic 16x16 digits: a localization net (Conv2d, MaxPool2d, ReLU in a Sequential)
regresses a 2x3 affine ``theta`` whose last layer starts as the identity
(``fc_loc[2].weight.data.zero_()``, ``fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0],
dtype=torch.float))``); ``F.affine_grid(theta, x.size())`` and ``F.grid_sample(x, grid)`` warp the
input inside ``forward`` and are trained through; ``F.dropout(x, training=self.training)``,
``F.log_softmax`` and ``F.nll_loss``; the test loop sums ``F.nll_loss(output, target,
reduction="sum")`` and counts ``output.max(1, keepdim=True)[1]`` against ``target.view_as(pred)``
with ``pred.eq``; ``stn(data)`` is visualised as ``.cpu()`` images under ``no_grad``."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

DROPOUT = 0.5
SHUFFLE = True
SIDE = 16


def make_data(n=48, seed=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, size=n)
    x = rng.random((n, 1, SIDE, SIDE), dtype=np.float32) * 0.2
    for i, label in enumerate(y):
        row, col = 2 + label // 4 * 4, 2 + label % 4 * 3
        x[i, 0, row : row + 3, col : col + 2] += 1.0  # a shifted bright bar says the label
    return torch.tensor(x), torch.tensor(y)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=3)
        self.conv2_drop = nn.Dropout2d(DROPOUT)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 10)

        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(4, 6, kernel_size=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
        )

        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(nn.Linear(6 * 2 * 2, 12), nn.ReLU(True), nn.Linear(12, 3 * 2))

        # Initialize the weights/bias with identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    # Spatial transformer network forward function
    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 6 * 2 * 2)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, align_corners=False)
        return x

    def forward(self, x):
        # transform the input
        x = self.stn(x)

        # Perform the usual forward pass
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 8 * 2 * 2)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=DROPOUT, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def build():
    torch.manual_seed(0)
    return Net()


def test(model, test_loader):
    with torch.no_grad():
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in test_loader:
            output = model(data)

            # sum up batch loss
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            # get the index of the max log-probability
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()

        test_loss /= len(test_loader.dataset)
        return test_loss, correct / len(test_loader.dataset)


def visualize_stn(model, test_loader):
    with torch.no_grad():
        # Get a batch of training data
        data = next(iter(test_loader))[0]

        input_tensor = data.cpu()
        transformed_input_tensor = model.stn(data).cpu()
        return float(np.abs(transformed_input_tensor.numpy() - input_tensor.numpy()).sum())


def train(model, steps=5):
    x, y = make_data()
    train_loader = DataLoader(TensorDataset(x[:32], y[:32]), batch_size=8, shuffle=SHUFFLE)
    test_loader = DataLoader(TensorDataset(x[32:], y[32:]), batch_size=8, shuffle=False)
    optimizer = optim.SGD(model.parameters(), lr=0.05)
    losses, log = [], []
    while len(losses) < steps:
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if batch_idx % 2 == 0:
                log.append(f"[{batch_idx * len(data)}/{len(train_loader.dataset)}]\tLoss: {loss.item():.6f}")
            if len(losses) == steps:
                break
    assert len(log) == (steps + 1) // 2
    test_loss, accuracy = test(model, test_loader)
    theta = model.fc_loc[2].bias.detach().tolist()
    return {
        "losses": losses,
        "test_loss": test_loss,
        "accuracy": accuracy,
        "theta_bias": theta,
        "warp": visualize_stn(model, test_loader),
    }


if __name__ == "__main__":
    print(train(build(), steps=8))
