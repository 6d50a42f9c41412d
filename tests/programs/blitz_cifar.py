"""The official tutorial "Deep Learning with PyTorch: A 60 Minute Blitz" (beginner_source/blitz/): its neural
networks page and "Training a Classifier" on CIFAR-10, at a tiny size on synthetic 32x32 colour images.
``PART`` picks the page (the classifier by default).

The neural networks page: the LeNet ``Net`` with ``F.max_pool2d(c1, (2, 2))`` and ``F.max_pool2d(c3, 2)``,
``torch.flatten(s4, 1)``; ``params = list(net.parameters())`` and ``params[0].size()``; ``net.zero_grad()`` then
``out.backward(torch.randn(1, 10))``; ``target.view(1, -1)`` into ``nn.MSELoss()``; ``loss.grad_fn`` and
``loss.grad_fn.next_functions[0][0]`` walked back; ``net.conv1.bias.grad`` before (None) and after backward; the
update by hand ``f.data.sub_(f.grad.data * learning_rate)``, then ``optim.SGD`` with ``optimizer.zero_grad()``.
The classifier page: ``device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')``; the ``Net`` with
``self.pool(F.relu(self.conv1(x)))`` and ``torch.flatten(x, 1)  # flatten all dimensions except batch``; images
normalised by ``(x - 0.5) / 0.5`` and shown by ``img / 2 + 0.5`` with ``np.transpose(npimg, (1, 2, 0))``;
``optim.SGD(net.parameters(), lr=0.001, momentum=0.9)``; ``for i, data in enumerate(trainloader, 0)`` with
``inputs, labels = data`` and ``running_loss += loss.item()`` printed every few batches;
``torch.save(net.state_dict(), PATH)`` / ``load_state_dict(torch.load(PATH, weights_only=True))``;
``dataiter = iter(testloader)`` and ``next(dataiter)``; ``_, predicted = torch.max(outputs, 1)`` and
``classes[predicted[j]]`` (a tuple indexed by a 0-d tensor); ``correct += (predicted == labels).sum().item()``; and
per-class accuracy with ``correct_pred = {classname: 0 for classname in classes}``, ``for label, prediction in
zip(labels, predictions): if label == prediction: correct_pred[classes[label]] += 1``.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

PART = "classifier"
SHUFFLE = True
USE_CUDA = True
classes = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class LeNet(nn.Module):
    """The neural networks page's net (one input channel, 32x32)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, input):
        c1 = F.relu(self.conv1(input))
        s2 = F.max_pool2d(c1, (2, 2))
        c3 = F.relu(self.conv2(s2))
        s4 = F.max_pool2d(c3, 2)
        s4 = torch.flatten(s4, 1)
        f5 = F.relu(self.fc1(s4))
        f6 = F.relu(self.fc2(f5))
        output = self.fc3(f6)
        return output


class Net(nn.Module):
    """The classifier page's net (three channels)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def build():
    torch.manual_seed(0)
    return LeNet() if PART == "neural_networks" else Net()


def cifar(n, seed):
    """Synthetic CIFAR: a class colour and a class stripe on noise, normalised as transforms.Normalize(0.5, 0.5) does."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = rng.uniform(0.0, 0.5, size=(n, 3, 32, 32)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, label % 3] += 0.3
        images[i, :, 3 * label : 3 * label + 2, :] += 0.2
    images = np.clip(images, 0, 1)
    return TensorDataset(torch.tensor((images - 0.5) / 0.5), torch.tensor(labels))


def neural_networks(net, steps):
    params = list(net.parameters())
    sizes = [len(params), list(params[0].size())]
    input = torch.randn(1, 1, 32, 32)
    out = net(input)
    net.zero_grad()
    out.backward(torch.randn(1, 10))
    grads = [p.grad.abs().sum().item() for p in net.parameters()]
    output = net(input)
    target = torch.randn(10)  # a dummy target, for example
    target = target.view(1, -1)  # make it the same shape as output
    criterion = nn.MSELoss()
    loss = criterion(output, target)
    chain = [
        loss.grad_fn.name(),  # MSELoss
        loss.grad_fn.next_functions[0][0].name(),  # Linear
        loss.grad_fn.next_functions[0][0].next_functions[0][0].name(),  # the bias's AccumulateGrad
        [type(f).__name__ for f, _ in loss.grad_fn.next_functions[0][0].next_functions],
    ]
    net.zero_grad()
    before = net.conv1.bias.grad
    loss.backward()
    after = net.conv1.bias.grad.tolist()
    learning_rate = 0.01
    for f in net.parameters():
        f.data.sub_(f.grad.data * learning_rate)
    losses = [loss.item()]
    optimizer = optim.SGD(net.parameters(), lr=0.01)
    while len(losses) < steps:
        optimizer.zero_grad()  # zero the gradient buffers
        output = net(input)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()  # Does the update
        losses.append(loss.item())
    return {
        "losses": losses,
        "sizes": sizes,
        "out": out.tolist(),
        "grads": grads,
        "chain": chain,
        "bias_grad": [before is None, after],
    }


def classifier(net, steps):
    device = torch.device("cuda:0" if USE_CUDA and torch.cuda.is_available() else "cpu")
    net.to(device)
    batch_size = 4
    trainset = cifar(4 * steps, seed=0)
    trainloader = DataLoader(trainset, batch_size=batch_size, shuffle=SHUFFLE, num_workers=0)
    testset = cifar(12, seed=1)
    testloader = DataLoader(testset, batch_size=batch_size, shuffle=False, num_workers=0)

    images, labels = next(iter(trainloader))
    img = images[0] / 2 + 0.5  # unnormalize
    npimg = img.numpy()
    shown = np.transpose(npimg, (1, 2, 0))
    header = [list(shown.shape), float(shown.mean()), " ".join(f"{classes[labels[j]]:5s}" for j in range(batch_size))]

    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    losses, printed = [], []
    for epoch in range(1):  # loop over the dataset multiple times
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data[0].to(device), data[1].to(device)
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            running_loss += loss.item()
            if i % 2 == 1:  # print every 2 mini-batches
                printed.append(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 2:.3f}")
                running_loss = 0.0

    PATH = os.path.join(tempfile.mkdtemp(), "cifar_net.pth")
    torch.save(net.state_dict(), PATH)
    dataiter = iter(testloader)
    images, labels = next(dataiter)
    net = Net()
    net.load_state_dict(torch.load(PATH, weights_only=True))
    outputs = net(images)
    _, predicted = torch.max(outputs, 1)
    named = " ".join(f"{classes[predicted[j]]:5s}" for j in range(4))

    correct = 0
    total = 0
    with torch.no_grad():
        for data in testloader:
            images, labels = data
            outputs = net(images)
            _, predicted = torch.max(outputs, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    with torch.no_grad():
        for data in testloader:
            images, labels = data
            outputs = net(images)
            _, predictions = torch.max(outputs, 1)
            for label, prediction in zip(labels, predictions, strict=True):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
    per_class = []
    for classname, correct_count in correct_pred.items():
        if total_pred[classname]:
            accuracy = 100 * float(correct_count) / total_pred[classname]
            per_class.append(f"Accuracy for class: {classname:5s} is {accuracy:.1f} %")
    return {
        "losses": losses,
        "header": header,
        "printed": printed,
        "named": named,
        "outputs": outputs.tolist(),
        "accuracy": [correct, total, 100 * correct // total],
        "per_class": per_class,
    }


def train(model, steps=3):
    torch.manual_seed(1)
    if PART == "neural_networks":
        return neural_networks(model, steps)
    return classifier(model, steps)


if __name__ == "__main__":
    print(train(build(), steps=4))
