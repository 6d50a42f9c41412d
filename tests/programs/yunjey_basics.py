"""yunjey/pytorch-tutorial's basics (PyTorch basics, linear regression, logistic regression, feedforward
neural network), at tiny sizes on synthetic data in place of MNIST. ``MODEL`` picks one.

Its idioms: ``torch.tensor(1., requires_grad=True)`` and ``y = w * x + b`` then ``print(x.grad)``; one
``nn.Linear`` step printed as ``'dL/dw: ', linear.weight.grad`` and ``'loss after 1 step optimization: ',
loss.item()``; ``torch.from_numpy(x)`` and ``y.numpy()`` round trips (an int64 array, a float32 one; vkml
copies where PyTorch shares the memory, docs/interop.md); a ``CustomDataset(torch.utils.data.Dataset)`` with ``__getitem__`` and
``__len__`` loaded by ``torch.utils.data.DataLoader(dataset=..., batch_size=..., shuffle=True)``;
``torch.save(model, 'model.ckpt')`` with ``torch.load`` and ``torch.save(model.state_dict(), 'params.ckpt')``
with ``load_state_dict``; linear regression on numpy ``x_train``/``y_train`` arrays fed by
``torch.from_numpy`` each epoch, ``'Epoch [{}/{}], Loss: {:.4f}'.format(..., loss.item())`` and
``model(torch.from_numpy(x_train)).detach().numpy()``; logistic regression by ``images.reshape(-1,
input_size)``, a test loop under ``torch.no_grad()`` with ``_, predicted = torch.max(outputs.data, 1)``,
``total += labels.size(0)``, ``correct += (predicted == labels).sum()`` and the tensor accuracy
``'{} %'.format(100 * correct / total)``; the feedforward net's ``device = torch.device('cuda' if
torch.cuda.is_available() else 'cpu')``, ``.to(device)`` of the model and of each batch and
``(predicted == labels).sum().item()``."""

# ruff: noqa: UP032  (the tutorial's spelling is the point: .format)
from __future__ import annotations

import os
import tempfile

import numpy as np
from shim import nn, torch

MODEL = "basics"  # or "linear_regression", "logistic_regression", "feedforward"
SHUFFLE = True

# Hyper-parameters (the tutorial's, with MNIST's 28x28 images shrunk to 6x6)
input_size = 36
hidden_size = 16
num_classes = 4
batch_size = 8
learning_rate = 0.01

USE_CUDA = True  # the feedforward net's device: the GPU where there is one (the comparisons set False)


class FakeMNIST(torch.utils.data.Dataset):
    """MNIST's stand-in: noisy class templates as (1, 6, 6) float images in [0, 1] with int labels."""

    def __init__(self, train=True, size=32):
        rng = np.random.RandomState(0 if train else 1)
        templates = np.random.RandomState(7).rand(num_classes, 1, 6, 6)
        self.targets = rng.randint(0, num_classes, size)
        noise = rng.rand(size, 1, 6, 6) * 0.5
        self.data = np.clip(templates[self.targets] * 0.7 + noise, 0, 1).astype(np.float32)

    def __getitem__(self, index):
        return torch.from_numpy(self.data[index]), int(self.targets[index])

    def __len__(self):
        return len(self.targets)


class CustomDataset(torch.utils.data.Dataset):
    def __init__(self):
        # TODO
        # 1. Initialize file paths or a list of file names.
        self.rows = np.arange(12, dtype=np.float32).reshape(6, 2)

    def __getitem__(self, index):
        # TODO
        # 1. Read one data from file (e.g. using numpy.fromfile, PIL.Image.open).
        # 2. Preprocess the data (e.g. torchvision.Transform).
        # 3. Return a data pair (e.g. image and label).
        return torch.from_numpy(self.rows[index]), index % 2

    def __len__(self):
        # You should change 0 to the total size of your dataset.
        return len(self.rows)


# Fully connected neural network with one hidden layer
class NeuralNet(nn.Module):
    def __init__(self, input_size, hidden_size, num_classes):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        out = self.fc1(x)
        out = self.relu(out)
        out = self.fc2(out)
        return out


def build():
    torch.manual_seed(0)
    if MODEL == "basics":
        return nn.Linear(3, 2)
    if MODEL == "linear_regression":
        return nn.Linear(1, 1)
    if MODEL == "logistic_regression":
        return nn.Linear(input_size, num_classes)
    # Device configuration
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    return NeuralNet(input_size, hidden_size, num_classes).to(device)


def basics(linear, steps, record):
    # ================================================================== #
    #                     1. Basic autograd example 1                    #
    # ================================================================== #
    x = torch.tensor(1.0, requires_grad=True)
    w = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    y = w * x + b  # y = 2 * x + 3
    y.backward()
    record["grads"] = [x.grad.item(), w.grad.item(), b.grad.item()]
    record["printed_grad"] = str(x.grad)  # x.grad = 2

    # ================================================================== #
    #                    2. Basic autograd example 2                     #
    # ================================================================== #
    torch.manual_seed(1)
    x = torch.randn(10, 3)
    y = torch.randn(10, 2)
    record["printed_weight"] = [str(type(linear.weight)).split(".")[-1], len(str(linear.bias).splitlines())]
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(linear.parameters(), lr=0.01)
    for _ in range(steps):
        pred = linear(x)
        loss = criterion(pred, y)
        record["losses"].append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        record["dL/dw"] = linear.weight.grad.tolist()
        record["dL/db"] = linear.bias.grad.tolist()
        optimizer.step()
    pred = linear(x)
    loss = criterion(pred, y)
    record["after"] = "loss after 1 step optimization: {}".format(round(loss.item(), 4))

    # ================================================================== #
    #                     3. Loading data from numpy                     #
    # ================================================================== #
    x = np.array([[1, 2], [3, 4]])
    y = torch.from_numpy(x)
    z = y.numpy()
    record["numpy"] = [y.dtype == torch.int64, z.dtype.str, x.tolist(), z.tolist()]
    image = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    record["float_round_trip"] = (torch.from_numpy(image) * 2).numpy().tolist()

    # ================================================================== #
    #                        5. Input pipeline for custom dataset        #
    # ================================================================== #
    custom_dataset = CustomDataset()
    train_loader = torch.utils.data.DataLoader(dataset=custom_dataset, batch_size=4, shuffle=False)
    record["custom_batches"] = [[images.tolist(), labels.tolist()] for images, labels in train_loader]

    # ================================================================== #
    #                      7. Save and load the model                    #
    # ================================================================== #
    with tempfile.TemporaryDirectory() as folder:
        torch.save(linear, os.path.join(folder, "model.ckpt"))
        model = torch.load(os.path.join(folder, "model.ckpt"), weights_only=False)
        torch.save(linear.state_dict(), os.path.join(folder, "params.ckpt"))
        copy = nn.Linear(3, 2)
        copy.load_state_dict(torch.load(os.path.join(folder, "params.ckpt")))
    record["reloaded"] = [model(x_ := torch.ones(1, 3)).tolist(), copy(x_).tolist()]
    return record


def linear_regression(model, steps, record):
    # Toy dataset
    x_train = np.array(
        [[3.3], [4.4], [5.5], [6.71], [6.93], [4.168], [9.779], [6.182], [7.59], [2.167]], dtype=np.float32
    )
    y_train = np.array(
        [[1.7], [2.76], [2.09], [3.19], [1.694], [1.573], [3.366], [2.596], [2.53], [1.221]], dtype=np.float32
    )
    num_epochs = steps * 5
    # Loss and optimizer
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    # Train the model
    for epoch in range(num_epochs):
        # Convert numpy arrays to torch tensors
        inputs = torch.from_numpy(x_train)
        targets = torch.from_numpy(y_train)
        # Forward pass
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (epoch + 1) % 5 == 0:
            record["losses"].append(loss.item())
            record["lines"].append("Epoch [{}/{}], Loss: {:.4f}".format(epoch + 1, num_epochs, loss.item()))
    # Plot the graph
    predicted = model(torch.from_numpy(x_train)).detach().numpy()
    record["predicted"] = [predicted.dtype.str, predicted.ravel().tolist()]
    with tempfile.TemporaryDirectory() as folder:
        torch.save(model.state_dict(), os.path.join(folder, "model.ckpt"))
        record["saved"] = sorted(torch.load(os.path.join(folder, "model.ckpt")))
    return record


def classify(model, steps, record):
    # MNIST dataset (images and labels)
    train_dataset = FakeMNIST(train=True)
    test_dataset = FakeMNIST(train=False, size=16)
    # Data loader (input pipeline)
    torch.manual_seed(2)
    train_loader = torch.utils.data.DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=SHUFFLE)
    test_loader = torch.utils.data.DataLoader(dataset=test_dataset, batch_size=batch_size, shuffle=False)
    # Loss and optimizer
    # nn.CrossEntropyLoss() computes softmax internally
    criterion = nn.CrossEntropyLoss()
    if MODEL == "logistic_regression":
        optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate * 50)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    to_device = MODEL == "feedforward"  # the logistic regression has no device (it runs on the CPU)
    total_step = len(train_loader)
    done = 0
    for epoch in range(steps):
        for i, (images, labels) in enumerate(train_loader):
            if done == steps:
                break
            # Reshape images to (batch_size, input_size)
            images = images.reshape(-1, input_size)
            if to_device:
                images = images.to(device)
                labels = labels.to(device)
            # Forward pass
            outputs = model(images)
            loss = criterion(outputs, labels)
            # Backward and optimize
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
            record["losses"].append(loss.item())
            record["lines"].append(
                "Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}".format(epoch + 1, steps, i + 1, total_step, loss.item())
            )
    # Test the model
    # In test phase, we don't need to compute gradients (for memory efficiency)
    with torch.no_grad():
        correct = 0
        total = 0
        for images, labels in test_loader:
            images = images.reshape(-1, input_size)
            if to_device:
                images = images.to(device)
                labels = labels.to(device)
            outputs = model(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            if MODEL == "logistic_regression":
                correct += (predicted == labels).sum()
            else:
                correct += (predicted == labels).sum().item()
        line = "Accuracy of the model on the test images: {} %".format(100 * correct / total)
        record["accuracy_line"] = line
        record["accuracy"] = float(100 * correct / total)
    return record


def train(model, steps=3):
    record = {"losses": [], "lines": []}
    if MODEL == "basics":
        return basics(model, steps, record)
    if MODEL == "linear_regression":
        return linear_regression(model, steps, record)
    return classify(model, steps, record)


if __name__ == "__main__":
    print(train(build()))
