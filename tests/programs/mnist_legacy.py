"""pytorch/examples' mnist/main.py as it stood around PyTorch 0.3-0.4, at 14x14 images.

Its idioms: an ``argparse.Namespace`` of args with ``args.cuda = not args.no_cuda and
torch.cuda.is_available()``, ``torch.manual_seed(args.seed)`` and ``torch.cuda.manual_seed`` behind it,
``kwargs = {'num_workers': 1, 'pin_memory': True} if args.cuda else {}`` given to the loaders;
``nn.Dropout2d`` and ``F.dropout(x, training=self.training)``; ``F.log_softmax(x)`` without ``dim``
(PyTorch's implicit-dim warning, dim 1 for a 2-D input); ``data, target = Variable(data),
Variable(target)`` and ``Variable(data, volatile=True)`` in test; ``F.nll_loss(output, target,
size_average=False).data.item()`` summed over the test set (the legacy argument mapped to
``reduction='sum'``, with its warning); ``pred = output.data.max(1, keepdim=True)[1]`` and ``correct
+= pred.eq(target.data.view_as(pred)).cpu().sum()``; the log lines ``'Train Epoch: {} [{}/{}
({:.0f}%)]\\tLoss: {:.6f}'.format(...)`` and ``100. * correct / len(test_loader.dataset)``; and
``torch.set_default_tensor_type('torch.FloatTensor')`` at the top of the script."""

# ruff: noqa: UP008, UP031, UP032, B007  (the old repositories' spelling is the point: super(Net, self), % and .format)

from __future__ import annotations

import argparse
import warnings

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

Variable = torch.autograd.Variable  # from torch.autograd import Variable

DROPOUT = 0.5
NO_CUDA = True


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=3)
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
        return F.log_softmax(x)


def parse_args():
    return argparse.Namespace(
        batch_size=4, test_batch_size=6, lr=0.05, momentum=0.5, no_cuda=NO_CUDA, seed=1, log_interval=1
    )


def build():
    args = parse_args()
    torch.manual_seed(args.seed)
    return Net()


def loaders(args, steps, kwargs):
    rng = np.random.RandomState(args.seed)
    train_x = torch.Tensor(rng.rand(args.batch_size * steps, 1, 14, 14))
    train_y = torch.LongTensor(rng.randint(0, 10, size=args.batch_size * steps).tolist())
    test_x, test_y = torch.Tensor(rng.rand(12, 1, 14, 14)), torch.LongTensor(rng.randint(0, 10, size=12).tolist())
    train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=False, **kwargs)
    test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=args.test_batch_size, shuffle=False, **kwargs)
    return train_loader, test_loader


def train(model, steps=3):
    torch.set_default_tensor_type("torch.FloatTensor")
    args = parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    if args.cuda:
        torch.cuda.manual_seed(args.seed)
        model.cuda()
    kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}
    train_loader, test_loader = loaders(args, steps, kwargs)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    record = {"losses": [], "lines": [], "test_loss": [], "accuracy": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.eval()
        zeros, label = torch.zeros(1, 1, 14, 14), torch.LongTensor([0])
        if args.cuda:
            zeros, label = zeros.cuda(), label.cuda()
        probe = model(Variable(zeros, volatile=True))
        F.nll_loss(probe, label, size_average=False)
    record["warnings"] = sorted(str(w.message).replace("vkml", "torch")[:60] for w in caught)

    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        if args.cuda:
            data, target = data.cuda(), target.cuda()
        data, target = Variable(data), Variable(target)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            record["lines"].append(
                "Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                    1,
                    batch_idx * len(data),
                    len(train_loader.dataset),
                    100.0 * batch_idx / len(train_loader),
                    loss.data.item(),
                )
            )
        record["losses"].append(loss.item())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in test_loader:
            if args.cuda:
                data, target = data.cuda(), target.cuda()
            data, target = Variable(data, volatile=True), Variable(target)
            output = model(data)
            test_loss += F.nll_loss(output, target, size_average=False).data.item()  # sum up batch loss
            pred = output.data.max(1, keepdim=True)[1]  # get the index of the max log-probability
            correct += pred.eq(target.data.view_as(pred)).cpu().sum()
        test_loss /= len(test_loader.dataset)
    record["test_loss"].append(test_loss)
    record["accuracy"].append(float(100.0 * correct / len(test_loader.dataset)))
    record["lines"].append(
        "\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n".format(
            test_loss, correct, len(test_loader.dataset), 100.0 * correct / len(test_loader.dataset)
        )
    )
    return record


if __name__ == "__main__":
    print(train(build()))
