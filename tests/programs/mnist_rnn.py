"""pytorch/examples' mnist_rnn at a tiny size on synthetic digits: nn.LSTM(batch_first=True) over
the image's rows, the last step's output[:, -1, :] through BatchNorm1d, Dropout2d layers on a
(N, C) tensor, F.log_softmax + F.nll_loss, Adadelta with StepLR(step_size=1, gamma), and the
test loop's reduction='sum' loss, output.argmax(dim=1, keepdim=True) and
pred.eq(target.view_as(pred)).sum().item(); a second head reads the final hidden state h_n[-1]."""

from __future__ import annotations

import warnings

import numpy as np
from shim import DataLoader, F, TensorDataset, lr_scheduler, nn, optim, torch

USE_CUDA = True
DROPOUT = 0.25
SHUFFLE = True
SIDE = 8


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(input_size=SIDE, hidden_size=16, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(16)
        self.dropout1 = nn.Dropout2d(DROPOUT)
        self.dropout2 = nn.Dropout2d(2 * DROPOUT)
        self.fc1 = nn.Linear(16, 12)
        self.fc2 = nn.Linear(12, 10)
        self.head = nn.Linear(16, 10)

    def forward(self, input):
        # Shape of input is (batch_size,1, 28, 28)
        # converting shape of input to (batch_size, 28, 28)
        # as required by RNN when batch_first is set True
        input = input.reshape(-1, SIDE, SIDE)
        output, (h_n, c_n) = self.rnn(input)

        # RNN output shape is (seq_len, batch, input_size)
        # Get last output of RNN
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output, F.log_softmax(self.head(h_n[-1]), dim=1)


def make_digits(n=16, seed=5):
    """SIDE x SIDE images whose label is which row holds a bright stripe (rows 0-7, two more diagonals)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0, 0.2, size=(n, 1, SIDE, SIDE)).astype(np.float32)
    for image, label in zip(images, labels):
        if label < SIDE:
            image[0, label, :] += 1.0
        else:
            image[0] += np.eye(SIDE, dtype=np.float32)[:: 1 if label == SIDE else -1]
    return torch.tensor(images), torch.tensor(labels)


def build():
    torch.manual_seed(1)
    return Net()


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    model = model.to(device)
    x, y = make_digits()
    train_loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=SHUFFLE)
    optimizer = optim.Adadelta(model.parameters(), lr=0.1)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    with warnings.catch_warnings():
        # Dropout2d on a (N, C) tensor warns that it drops whole channels, as the example's does
        warnings.simplefilter("ignore", UserWarning)
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            if batch_idx == steps:
                break
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output, by_hidden = model(data)
            loss = F.nll_loss(output, target) + F.nll_loss(by_hidden, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad():
            for data, target in DataLoader(TensorDataset(x, y), batch_size=8):
                data, target = data.to(device), target.to(device)
                output, _ = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()  # sum up batch loss
                pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
                correct += pred.eq(target.view_as(pred)).sum().item()
    return {"losses": losses, "test_loss": test_loss / len(x), "correct": correct, "lr": scheduler.get_last_lr()[0]}


if __name__ == "__main__":
    print(train(build()))
