"""pytorch/examples' mnist_hogwild (main.py, train.py) at a tiny size on synthetic digits, its workers as
threads that train one after another (the example's ``mp.Process`` workers, run in turn so that both
libraries see the same updates).

Its idioms: ``model = Net().to(device)`` then ``model.share_memory()`` (every parameter ``is_shared()``);
``dataloader_kwargs = {'batch_size': ..., 'shuffle': True}`` updated with ``num_workers`` and
``pin_memory`` when CUDA is there; per worker ``torch.manual_seed(args.seed + rank)`` before its own
shuffling ``DataLoader`` and its own ``optim.SGD(model.parameters(), lr, momentum)`` over the shared
parameters; the worker's ``os.getpid()`` log line with ``{:.0f}%`` and ``{:.6f}`` fields; the Net's
``nn.Dropout2d`` and ``F.dropout(x, training=self.training)``, ``F.max_pool2d``, ``x.view(-1, 320)``
shapes and ``F.log_softmax``; ``F.nll_loss``; and the test epoch's ``F.nll_loss(output, target,
reduction='sum').item()``, ``output.max(1)[1]`` and ``pred.eq(target).sum().item()``.
"""

from __future__ import annotations

import os
import threading

import numpy as np
from shim import F, TensorDataset, nn, optim, torch

DROPOUT = 0.5
SHUFFLE = True
NUM_PROCESSES = 2
SEED = 1


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()  # noqa: UP008 (as the example writes it)
        self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=5)
        self.conv2_drop = nn.Dropout2d(p=DROPOUT)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 32)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=DROPOUT, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train_worker(rank, args, model, device, dataset, dataloader_kwargs, record):
    torch.manual_seed(args["seed"] + rank)

    train_loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)

    optimizer = optim.SGD(model.parameters(), lr=args["lr"], momentum=args["momentum"])
    for epoch in range(1, args["epochs"] + 1):
        train_epoch(epoch, args, model, device, train_loader, optimizer, record)


def train_epoch(epoch, args, model, device, data_loader, optimizer, record):
    model.train()
    pid = os.getpid()
    for batch_idx, (data, target) in enumerate(data_loader):
        optimizer.zero_grad()
        output = model(data.to(device))
        loss = F.nll_loss(output, target.to(device))
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        if batch_idx % args["log_interval"] == 0:
            line = "{}\tTrain Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.3f}".format(  # noqa: UP032
                pid,
                epoch,
                batch_idx * len(data),
                len(data_loader.dataset),
                100.0 * batch_idx / len(data_loader),
                round(loss.item(), 2),
            )
            record["log"].append(line.split("\t", 1)[1])


def test_epoch(model, device, data_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in data_loader:
            output = model(data.to(device))
            test_loss += F.nll_loss(output, target.to(device), reduction="sum").item()  # sum up batch loss
            pred = output.max(1)[1]  # get the index of the max log-probability
            correct += pred.eq(target.to(device)).sum().item()

    test_loss /= len(data_loader.dataset)
    return test_loss, 100.0 * correct / len(data_loader.dataset)


def synthetic_digits(n, seed):
    """20x20 images of a digit's bar pattern: the label picks which rows and columns are lit."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0, 0.3, size=(n, 1, 20, 20)).astype(np.float32)
    for k, label in enumerate(labels):
        images[k, 0, label : label + 4, :] += 1.0
        images[k, 0, :, 19 - label - 3 : 19 - label] += 0.5
    return TensorDataset(torch.tensor(images), torch.tensor(labels))


def build():
    torch.manual_seed(SEED)
    return Net()


def train(model, steps=4):
    use_cuda = False  # the example's args.cuda and torch.cuda.is_available(): a CPU run here
    device = torch.device("cuda" if use_cuda else "cpu")
    per_worker = steps // NUM_PROCESSES
    batch_size = 4
    args = {"seed": SEED, "lr": 0.05, "momentum": 0.5, "epochs": 1, "log_interval": 1}
    dataset = synthetic_digits(per_worker * batch_size, seed=0)
    kwargs = {"batch_size": batch_size, "shuffle": SHUFFLE}
    if use_cuda:
        kwargs.update({"num_workers": 1, "pin_memory": True})

    model = model.to(device)
    # NOTE: this is required for the ``fork`` method to work
    model.share_memory()
    record = {"losses": [], "log": [], "shared": all(p.is_shared() for p in model.parameters())}
    processes = []
    for rank in range(NUM_PROCESSES):
        p = threading.Thread(target=train_worker, args=(rank, args, model, device, dataset, kwargs, record))
        # We first train the model across `num_processes` processes
        p.start()
        p.join()  # one after another: Hogwild's interleaving is left out of the comparison
        processes.append(p)
    for p in processes:
        p.join()

    # Once training is complete, we can test the model
    test_loader = torch.utils.data.DataLoader(synthetic_digits(12, seed=1), batch_size=6)
    record["test_loss"], record["test_acc"] = test_epoch(model, device, test_loader)
    return record


if __name__ == "__main__":
    print(train(build()))
