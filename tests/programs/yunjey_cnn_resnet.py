"""yunjey/pytorch-tutorial's convolutional neural network and deep residual network, at tiny sizes on
synthetic images in place of MNIST and CIFAR-10. ``MODEL`` picks one.

Its idioms: ``ConvNet``'s ``self.layer1 = nn.Sequential(nn.Conv2d(1, 16, kernel_size=5, stride=1,
padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))`` and ``out =
out.reshape(out.size(0), -1)``; the ``model.eval()`` test loop ("eval mode (batchnorm uses moving
mean/variance instead of mini-batch mean/variance)") under ``torch.no_grad()`` with ``_, predicted =
torch.max(outputs.data, 1)``, ``total += labels.size(0)``, ``correct += (predicted == labels).sum().item()``
and ``'... {} %'.format(100 * correct / total)``; ``torch.save(model.state_dict(), 'model.ckpt')``. The
ResNet's ``conv3x3`` helper, a ``ResidualBlock`` with an optional ``downsample`` and ``out += residual``,
``make_layer`` building ``downsample = nn.Sequential(conv3x3(...), nn.BatchNorm2d(...))`` when ``stride
!= 1 or self.in_channels != out_channels`` and ``nn.Sequential(*layers)``, ``nn.AvgPool2d(8)``,
``out.view(out.size(0), -1)``; ``update_lr`` writing ``param_group['lr'] = lr`` over
``optimizer.param_groups`` with ``curr_lr /= 3`` every few epochs; and ``'Epoch [{}/{}], Step [{}/{}]
Loss {:.4f}'`` lines; ``transforms.RandomHorizontalFlip`` written as a ``torch.flip`` of the batch."""

# ruff: noqa: UP032, B007  (the tutorial's spelling is the point: .format and unused loop names)
from __future__ import annotations

import os
import tempfile

import numpy as np
from shim import nn, torch

MODEL = "convnet"  # or "resnet"
SHUFFLE = True
USE_CUDA = True  # the comparisons set False: both libraries on the CPU
num_classes = 4
batch_size = 6
learning_rate = 0.001


def make_loader(channels, size, count, train, seed):
    rng = np.random.RandomState(seed)
    templates = np.random.RandomState(11).rand(num_classes, channels, size, size)
    labels = rng.randint(0, num_classes, count)
    images = (templates[labels] * 0.6 + rng.rand(count, channels, size, size) * 0.4).astype(np.float32)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    return torch.utils.data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=train and SHUFFLE)


# Convolutional neural network (two convolutional layers)
class ConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.layer2 = nn.Sequential(
            nn.Conv2d(4, 8, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.fc = nn.Linear(2 * 2 * 8, num_classes)

    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = out.reshape(out.size(0), -1)
        out = self.fc(out)
        return out


# 3x3 convolution
def conv3x3(in_channels, out_channels, stride=1):
    return nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)


# Residual block
class ResidualBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(in_channels, out_channels, stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(out_channels, out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = downsample

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample:
            residual = self.downsample(x)
        out += residual
        out = self.relu(out)
        return out


# ResNet
class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10):
        super().__init__()
        self.in_channels = 4
        self.conv = conv3x3(3, 4)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self.make_layer(block, 4, layers[0])
        self.layer2 = self.make_layer(block, 8, layers[1], 2)
        self.layer3 = self.make_layer(block, 16, layers[2], 2)
        self.avg_pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(16, num_classes)

    def make_layer(self, block, out_channels, blocks, stride=1):
        downsample = None
        if (stride != 1) or (self.in_channels != out_channels):
            downsample = nn.Sequential(
                conv3x3(self.in_channels, out_channels, stride=stride), nn.BatchNorm2d(out_channels)
            )
        layers = []
        layers.append(block(self.in_channels, out_channels, stride, downsample))
        self.in_channels = out_channels
        for i in range(1, blocks):
            layers.append(block(out_channels, out_channels))
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.conv(x)
        out = self.bn(out)
        out = self.relu(out)
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.layer3(out)
        out = self.avg_pool(out)
        out = out.view(out.size(0), -1)
        out = self.fc(out)
        return out


def build():
    torch.manual_seed(0)
    # Device configuration
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    if MODEL == "convnet":
        return ConvNet(num_classes).to(device)
    return ResNet(ResidualBlock, [1, 1, 1], num_classes).to(device)


# For updating learning rate
def update_lr(optimizer, lr):
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    record = {"losses": [], "lines": [], "lrs": []}
    resnet = MODEL == "resnet"
    torch.manual_seed(3)
    train_loader = make_loader(3 if resnet else 1, 8, 2 * batch_size, True, 0)
    test_loader = make_loader(3 if resnet else 1, 8, 2 * batch_size, False, 1)
    # Loss and optimizer
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    total_step = len(train_loader)
    curr_lr = learning_rate
    num_epochs = (steps + total_step - 1) // total_step
    done = 0
    for epoch in range(num_epochs):
        for i, (images, labels) in enumerate(train_loader):
            if done == steps:
                break
            if resnet and epoch % 2 == 1:  # transforms.RandomHorizontalFlip, on every other epoch
                images = torch.flip(images, [3])
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
            if resnet:
                line = "Epoch [{}/{}], Step [{}/{}] Loss: {:.4f}"
            else:
                line = "Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}"
            record["lines"].append(line.format(epoch + 1, num_epochs, i + 1, total_step, loss.item()))
        # Decay learning rate
        if resnet and (epoch + 1) % 1 == 0:
            curr_lr /= 3
            update_lr(optimizer, curr_lr)
            record["lrs"].append(optimizer.param_groups[0]["lr"])
    # Test the model
    model.eval()  # eval mode (batchnorm uses moving mean/variance instead of mini-batch mean/variance)
    with torch.no_grad():
        correct = 0
        total = 0
        for images, labels in test_loader:
            images = images.to(device)
            labels = labels.to(device)
            outputs = model(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
            if resnet:
                record.setdefault("test_outputs", []).append(outputs.tolist())
            else:
                # ConvNet's convolutions have biases right before a BatchNorm: their gradient is rounding noise,
                # which Adam scales to full steps, so the two libraries' biases (and running means) part by
                # ~lr a step while every training loss agrees; the predictions are compared instead
                record.setdefault("predicted", []).append(predicted.tolist())
        record["accuracy"] = "Test Accuracy of the model on the test images: {} %".format(100 * correct / total)
    # Save the model checkpoint
    with tempfile.TemporaryDirectory() as folder:
        torch.save(model.state_dict(), os.path.join(folder, "model.ckpt"))
        state = torch.load(os.path.join(folder, "model.ckpt"))
    record["running_var"] = state["layer1.1.running_var" if not resnet else "bn.running_var"].tolist()
    record["batches_tracked"] = int(state["layer1.1.num_batches_tracked" if not resnet else "bn.num_batches_tracked"])
    return record


if __name__ == "__main__":
    print(train(build()))
