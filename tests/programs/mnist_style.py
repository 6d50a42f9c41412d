"""The shape of pytorch/examples' MNIST script on synthetic digits: device selection with
torch.cuda.is_available(), .to(device), F.max_pool2d, torch.flatten, log_softmax + nll_loss,
Adadelta with StepLR, and the test loop's pred.eq(target.view_as(pred)).sum().item()."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, lr_scheduler, nn, optim, torch

DROPOUT = 0.25


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(DROPOUT)
        self.fc1 = nn.Linear(8 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def make_digits(n=32, seed=4):
    """12x12 images whose label is which of ten 3x3 cells holds a bright blob."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0, 0.2, size=(n, 1, 12, 12)).astype(np.float32)
    for image, label in zip(images, labels):
        r, c = divmod(int(label), 4)
        image[0, 3 * r : 3 * r + 3, 3 * c : 3 * c + 3] += 1.0
    return torch.tensor(images), torch.tensor(labels)


def build():
    torch.manual_seed(1)
    return Net()


def train(model, steps=5):
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    model = model.to(device)
    x, y = make_digits()
    train_loader = DataLoader(TensorDataset(x, y), batch_size=8)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        if batch_idx == steps:
            break
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    scheduler.step()
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in DataLoader(TensorDataset(x, y), batch_size=16):
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return {"losses": losses, "test_loss": test_loss / len(x), "correct": correct, "lr": scheduler.get_last_lr()[0]}


if __name__ == "__main__":
    print(train(build(), steps=4))
