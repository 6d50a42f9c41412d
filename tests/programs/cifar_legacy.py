"""A CIFAR training script of the pytorch-cifar era (2017-2018), at 8x8 images and a tiny VGG/ResNet.

Its idioms, line by line as those repositories wrote them: ``from torch.autograd import Variable`` and
``Variable(inputs)`` / ``Variable(inputs, volatile=True)`` in the test loop (PyTorch warns and ignores
it); ``use_cuda = torch.cuda.is_available()`` with ``net.cuda()`` / ``inputs.cuda()`` behind it;
``cfg`` lists turned into ``nn.Sequential(*layers)``; ``out.view(out.size(0), -1)``; a
``BasicBlock`` with a shortcut ``nn.Sequential()``; init by ``nn.init.kaiming_normal`` /
``nn.init.constant`` (the deprecated names without the underscore); ``train_loss +=
loss.data.item()``; ``_, predicted = torch.max(outputs.data, 1)``; ``correct +=
predicted.eq(targets.data).cpu().sum()`` (a 0-d tensor that the script formats with ``%.3f``);
``100.*correct/total``; a manual step decay ``for param_group in optimizer.param_groups:
param_group['lr'] = lr``; a checkpoint dict ``{'net': net.state_dict(), 'acc': acc, 'epoch': epoch}``
saved when the accuracy improves and loaded back with ``map_location=lambda storage, loc: storage``;
``print(net)`` and ``sum(p.numel() for p in net.parameters() if p.requires_grad)``; and the old
``loss.data[0]`` that current PyTorch refuses with an IndexError."""

# ruff: noqa: UP008, UP031, UP032, B007  (the old repositories' spelling is the point: super(Net, self), % and .format)

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
from shim import F, nn, optim, torch

Variable = torch.autograd.Variable  # from torch.autograd import Variable

use_cuda = torch.cuda.is_available()
ARCH = "vgg"  # or "resnet"
cfg = {"VGG-tiny": [8, "M", 16, "M"]}
BATCH = 4
LR = 0.1


class VGG(nn.Module):
    def __init__(self, vgg_name):
        super(VGG, self).__init__()
        self.features = self._make_layers(cfg[vgg_name])
        self.classifier = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        out = self.features(x)
        out = out.view(out.size(0), -1)
        out = self.classifier(out)
        return out

    def _make_layers(self, cfg):
        layers = []
        in_channels = 3
        for x in cfg:
            if x == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [
                    nn.Conv2d(in_channels, x, kernel_size=3, padding=1),
                    nn.BatchNorm2d(x),
                    nn.ReLU(inplace=True),
                ]
                in_channels = x
        layers += [nn.AvgPool2d(kernel_size=1, stride=1)]
        return nn.Sequential(*layers)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(self.expansion * planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        out = F.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=10):
        super(ResNet, self).__init__()
        self.in_planes = 8
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = self._make_layer(block, 8, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 16, num_blocks[1], stride=2)
        self.linear = nn.Linear(16 * block.expansion, num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer1(out)
        out = self.layer2(out)
        out = F.avg_pool2d(out, 4)
        out = out.view(out.size(0), -1)
        out = self.linear(out)
        return out


def init_params(net):
    """pytorch-cifar's utils.init_params, with the init names of its day."""
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.constant(m.bias, 0)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant(m.weight, 1)
            nn.init.constant(m.bias, 0)
        elif isinstance(m, nn.Linear):
            nn.init.normal(m.weight, std=1e-3)
            if m.bias is not None:
                nn.init.constant(m.bias, 0)


def build():
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated init names' warnings (checked in train)
        net = VGG("VGG-tiny") if ARCH == "vgg" else ResNet(BasicBlock, [1, 1])
        init_params(net)
    return net


def adjust_learning_rate(optimizer, epoch):
    """Sets the learning rate to the initial LR decayed by 10 every 2 epochs"""
    lr = LR * (0.1 ** (epoch // 2))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    return lr


def synthetic_cifar(n, seed):
    rng = np.random.RandomState(seed)
    return rng.randn(n, 3, 8, 8).astype(np.float32), rng.randint(0, 10, size=n).astype(np.int64)


def train(net, steps=3):
    record = {"losses": [], "lr": [], "train_acc": [], "test_loss": [], "test_acc": [], "lines": []}
    if use_cuda:
        net.cuda()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=LR, momentum=0.9, weight_decay=5e-4)
    x_train, y_train = synthetic_cifar(BATCH * steps, 0)
    x_test, y_test = synthetic_cifar(8, 1)
    best_acc = 0
    checkpoint_dir = tempfile.mkdtemp()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.init.kaiming_normal(torch.empty(2, 2))
        Variable(torch.zeros(1), volatile=True)
    record["warnings"] = [w.category.__name__ for w in caught]
    record["params"] = sum(p.numel() for p in net.parameters() if p.requires_grad)
    record["print_net"] = str(net)
    for epoch in range(steps):
        record["lr"].append(adjust_learning_rate(optimizer, epoch))
        # train: one batch an epoch
        net.train()
        train_loss, correct, total = 0, 0, 0
        inputs, targets = (
            torch.from_numpy(x_train[epoch * BATCH : (epoch + 1) * BATCH]),
            torch.LongTensor(y_train[epoch * BATCH : (epoch + 1) * BATCH].tolist()),
        )
        if use_cuda:
            inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        inputs, targets = Variable(inputs), Variable(targets)
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        train_loss += loss.data.item()
        _, predicted = torch.max(outputs.data, 1)
        total += targets.size(0)
        correct += predicted.eq(targets.data).cpu().sum()
        record["losses"].append(train_loss)
        record["train_acc"].append(float(100.0 * correct / total))
        record["lines"].append(
            "Loss: %.3f | Acc: %.3f%% (%d/%d)" % (train_loss, 100.0 * correct / total, correct, total)
        )
        # test
        net.eval()
        test_loss, correct, total = 0, 0, 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inputs = Variable(torch.Tensor(x_test), volatile=True)
        targets = Variable(torch.LongTensor(y_test))
        if use_cuda:
            inputs, targets = inputs.cuda(), targets.cuda()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        test_loss += loss.item()
        _, predicted = torch.max(outputs.data, 1)
        total += targets.size(0)
        correct += (predicted == targets).sum().item()
        acc = 100.0 * correct / total
        record["test_loss"].append(test_loss)
        record["test_acc"].append(acc)
        if acc >= best_acc:
            state = {"net": net.state_dict(), "acc": acc, "epoch": epoch}
            torch.save(state, os.path.join(checkpoint_dir, "ckpt.t7"))
            best_acc = acc
    try:
        loss.data[0]  # the pre-0.4 idiom
        record["old_index"] = "accepted"
    except IndexError as e:
        record["old_index"] = type(e).__name__ + str(e)[:40]
    checkpoint = torch.load(os.path.join(checkpoint_dir, "ckpt.t7"), map_location=lambda storage, loc: storage)
    fresh = build()
    fresh.load_state_dict(checkpoint["net"])
    fresh.eval()
    record["best"] = [checkpoint["acc"], checkpoint["epoch"]]
    record["reloaded"] = fresh(torch.Tensor(x_test)).data.cpu().numpy().sum().item()
    return record


if __name__ == "__main__":
    print(train(build()))
