"""The official tutorial "Transfer Learning for Computer Vision" (beginner_source/transfer_learning_tutorial.py)
at a tiny size on synthetic two-class images, a small ResNet-style backbone standing in for the
pretrained resnet18: the backbone frozen with ``for param in model_conv.parameters(): param.requires_grad
= False``, its head replaced by ``nn.Linear(model_conv.fc.in_features, 2)`` (new modules train), SGD
over ``model_conv.fc.parameters()`` only, ``lr_scheduler.StepLR(step_size=..., gamma=0.1)``; ``train_model``'s
phases (``dataloaders[phase]``, ``torch.set_grad_enabled(phase == 'train')``, ``_, preds =
torch.max(outputs, 1)``, ``running_loss += loss.item() * inputs.size(0)``, ``running_corrects +=
torch.sum(preds == labels.data)``, ``running_corrects.double() / dataset_sizes[phase]``), the best
weights kept as ``copy.deepcopy(model.state_dict())`` and loaded back with ``load_state_dict``, and
``visualize_model``'s ``was_training = model.training`` / ``model.train(mode=was_training)``."""

from __future__ import annotations

import copy

import numpy as np
from shim import DataLoader, TensorDataset, lr_scheduler, nn, optim, torch

SHUFFLE = True
SIDE = 12
device = torch.device("cpu")


def make_data(n=32, seed=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    x = rng.normal(0, 1, size=(n, 3, SIDE, SIDE)).astype(np.float32)
    x[y == 1, 0] += 0.75  # ants are redder than bees
    return torch.tensor(x), torch.tensor(y)


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class TinyResNet(nn.Module):
    """resnet18's shape at a few channels: stem, two stages, global pooling, ``fc``."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = BasicBlock(4, 4)
        self.layer2 = BasicBlock(4, 8, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def build():
    torch.manual_seed(0)
    model_conv = TinyResNet()  # the "pretrained" backbone
    for param in model_conv.parameters():
        param.requires_grad = False

    # Parameters of newly constructed modules have requires_grad=True by default
    num_ftrs = model_conv.fc.in_features
    model_conv.fc = nn.Linear(num_ftrs, 2)
    return model_conv.to(device)


def train_model(model, criterion, optimizer, scheduler, dataloaders, dataset_sizes, num_epochs, losses):
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    history = []

    for _epoch in range(num_epochs):
        # Each epoch has a training and validation phase
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()  # Set model to training mode
            else:
                model.eval()  # Set model to evaluate mode

            running_loss = 0.0
            running_corrects = 0

            # Iterate over data.
            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)

                # zero the parameter gradients
                optimizer.zero_grad()

                # forward
                # track history if only in train
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)

                    # backward + optimize only if in training phase
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                        losses.append(loss.item())

                # statistics
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                scheduler.step()

            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            assert epoch_acc.dtype == torch.float64
            history.append((phase, epoch_loss, epoch_acc.item()))

            # deep copy the model
            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())

    # load best model weights
    model.load_state_dict(best_model_wts)
    return model, best_acc, history


def visualize_model(model, dataloaders, num_images=4):
    was_training = model.training
    model.eval()
    predicted = []
    with torch.no_grad():
        for inputs, _labels in dataloaders["val"]:
            outputs = model(inputs.to(device))
            _, preds = torch.max(outputs, 1)
            for j in range(inputs.size()[0]):
                predicted.append(int(preds[j]))
                if len(predicted) == num_images:
                    model.train(mode=was_training)
                    return predicted
        model.train(mode=was_training)
    return predicted


def train(model_conv, steps=4):
    x, y = make_data()
    image_datasets = {"train": TensorDataset(x[:16], y[:16]), "val": TensorDataset(x[16:], y[16:])}
    dataloaders = {
        phase: DataLoader(image_datasets[phase], batch_size=8, shuffle=SHUFFLE and phase == "train")
        for phase in ["train", "val"]
    }
    dataset_sizes = {phase: len(image_datasets[phase]) for phase in ["train", "val"]}
    criterion = nn.CrossEntropyLoss()

    # Observe that only parameters of final layer are being optimized as opposed to before.
    optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.1, momentum=0.9)

    # Decay LR by a factor of 0.1 every epoch
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=1, gamma=0.1)

    frozen = model_conv.layer1.conv1.weight.detach().clone()
    losses = []
    num_epochs = (steps + 1) // 2
    model_conv, best_acc, history = train_model(
        model_conv, criterion, optimizer_conv, exp_lr_scheduler, dataloaders, dataset_sizes, num_epochs, losses
    )
    assert torch.equal(model_conv.layer1.conv1.weight, frozen) and model_conv.layer1.conv1.weight.grad is None
    trainable = sum(p.numel() for p in model_conv.parameters() if p.requires_grad)
    return {
        "losses": losses,
        "best_acc": best_acc.item() if hasattr(best_acc, "item") else best_acc,
        "history": history,
        "trainable": trainable,
        "running_mean": model_conv.bn1.running_mean.tolist(),
        "lr": exp_lr_scheduler.get_last_lr()[0],
        "predicted": visualize_model(model_conv, dataloaders),
        "fc": model_conv.fc.weight.sum().item(),
    }


if __name__ == "__main__":
    print(train(build(), steps=8))
