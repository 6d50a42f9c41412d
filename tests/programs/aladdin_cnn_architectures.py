"""The from-scratch CNN architectures of Aladdin Persson's Machine-Learning-Collection (ML/Pytorch/
CNN_architectures), at tiny widths on synthetic images, trained by the collection's usual loop. ``MODEL``
picks one.

Idioms: LeNet with ``nn.AvgPool2d(kernel_size=(2, 2), stride=(2, 2))``, tuple kernel sizes and
``x.reshape(x.shape[0], -1)``; ``VGG_net`` built from a config list of ints and ``"M"`` by
``create_conv_layers`` (``type(x) == int``, ``layers += [...]``); GoogLeNet's ``conv_block(**kwargs)``,
``Inception_block`` joined by ``torch.cat([...], 1)`` and ``InceptionAux`` heads returned only ``if
self.aux_logits and self.training`` (their losses weighted by 0.3); ResNet's bottleneck ``block`` with
``identity = x.clone()``, ``x += identity`` and ``_make_layer`` building ``identity_downsample``;
EfficientNet's ``CNNBlock`` (``nn.SiLU``, ``groups=``), ``SqueezeExcitation`` (``x * self.se(x)``),
``InvertedResidualBlock`` with stochastic depth (``torch.rand(x.shape[0], 1, 1, 1, device=x.device) <
self.survival_prob``, ``torch.div(x, self.survival_prob) * binary_tensor``), ``calculate_factors`` by
``alpha**phi`` and ``ceil``; and the loop: ``data.to(device=device)``, ``optimizer.zero_grad()``,
``check_accuracy`` with ``scores.max(1)``, ``num_correct += (predictions == y).sum()`` and
``model.eval()``/``torch.no_grad()``/``model.train()``, ``f"{float(num_correct) / float(num_samples) *
100:.2f}"``. The stochastic depth draws stay live in the comparison: vkml's ``rand`` is PyTorch's generator.
"""

from __future__ import annotations

from math import ceil

import numpy as np
from shim import DataLoader, TensorDataset, nn, optim, torch

MODEL = "lenet"  # or "vgg", "googlenet", "resnet", "efficientnet"
DROPOUT = 0.5
SURVIVAL_PROB = 0.8
num_classes = 3
batch_size = 4
learning_rate = 1e-3
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


# ----------------------------------------------------------------------------------------------- LeNet
class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()  # noqa: UP008  (the collection's spelling)
        self.relu = nn.ReLU()
        self.pool = nn.AvgPool2d(kernel_size=(2, 2), stride=(2, 2))
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=3, kernel_size=(5, 5), stride=(1, 1), padding=(0, 0))
        self.conv2 = nn.Conv2d(in_channels=3, out_channels=4, kernel_size=(5, 5), stride=(1, 1), padding=(0, 0))
        self.conv3 = nn.Conv2d(in_channels=4, out_channels=12, kernel_size=(5, 5), stride=(1, 1), padding=(0, 0))
        self.linear1 = nn.Linear(12, 8)
        self.linear2 = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.pool(x)
        x = self.relu(self.conv2(x))
        x = self.pool(x)
        x = self.relu(self.conv3(x))  # num_examples x 120 x 1 x 1 --> num_examples x 120
        x = x.reshape(x.shape[0], -1)
        x = self.relu(self.linear1(x))
        x = self.linear2(x)
        return x


# ------------------------------------------------------------------------------------------------- VGG
VGG_types = {
    "VGG11": [4, "M", 8, "M", 8, 8, "M"],
    "VGG16": [4, 4, "M", 8, 8, "M", 8, 8, 8, "M"],
}


class VGG_net(nn.Module):  # noqa: N801
    def __init__(self, in_channels=3, num_classes=1000):
        super(VGG_net, self).__init__()  # noqa: UP008
        self.in_channels = in_channels
        self.conv_layers = self.create_conv_layers(VGG_types["VGG16"])
        self.fcs = nn.Sequential(
            nn.Linear(8 * 2 * 2, 16),
            nn.ReLU(),
            nn.Dropout(p=DROPOUT),
            nn.Linear(16, 16),
            nn.ReLU(),
            nn.Dropout(p=DROPOUT),
            nn.Linear(16, num_classes),
        )

    def forward(self, x):
        x = self.conv_layers(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fcs(x)
        return x

    def create_conv_layers(self, architecture):
        layers = []
        in_channels = self.in_channels
        for x in architecture:
            if type(x) == int:  # noqa: E721
                out_channels = x
                layers += [
                    nn.Conv2d(
                        in_channels=in_channels,
                        out_channels=out_channels,
                        kernel_size=(3, 3),
                        stride=(1, 1),
                        padding=(1, 1),
                    ),
                    nn.BatchNorm2d(x),
                    nn.ReLU(),
                ]
                in_channels = x
            elif x == "M":
                layers += [nn.MaxPool2d(kernel_size=(2, 2), stride=(2, 2))]
        return nn.Sequential(*layers)


# ------------------------------------------------------------------------------------------- GoogLeNet
class conv_block(nn.Module):  # noqa: N801
    def __init__(self, in_channels, out_channels, **kwargs):
        super(conv_block, self).__init__()  # noqa: UP008
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(in_channels, out_channels, **kwargs)
        self.batchnorm = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return self.relu(self.batchnorm(self.conv(x)))


class Inception_block(nn.Module):  # noqa: N801
    def __init__(self, in_channels, out_1x1, red_3x3, out_3x3, red_5x5, out_5x5, out_1x1pool):
        super(Inception_block, self).__init__()  # noqa: UP008
        self.branch1 = conv_block(in_channels, out_1x1, kernel_size=(1, 1))
        self.branch2 = nn.Sequential(
            conv_block(in_channels, red_3x3, kernel_size=(1, 1)),
            conv_block(red_3x3, out_3x3, kernel_size=(3, 3), padding=(1, 1)),
        )
        self.branch3 = nn.Sequential(
            conv_block(in_channels, red_5x5, kernel_size=(1, 1)),
            conv_block(red_5x5, out_5x5, kernel_size=(5, 5), padding=(2, 2)),
        )
        self.branch4 = nn.Sequential(
            nn.MaxPool2d(kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)),
            conv_block(in_channels, out_1x1pool, kernel_size=(1, 1)),
        )

    def forward(self, x):
        return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class InceptionAux(nn.Module):
    def __init__(self, in_channels, num_classes):
        super(InceptionAux, self).__init__()  # noqa: UP008
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(p=DROPOUT)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)
        self.conv = conv_block(in_channels, 6, kernel_size=1)
        self.fc1 = nn.Linear(6 * 2 * 2, 10)
        self.fc2 = nn.Linear(10, num_classes)

    def forward(self, x):
        x = self.pool(x)
        x = self.conv(x)
        x = x.reshape(x.shape[0], -1)
        x = self.relu(self.fc1(x))
        x = self.dropout(x)
        x = self.fc2(x)
        return x


class GoogLeNet(nn.Module):
    def __init__(self, aux_logits=True, num_classes=1000):
        super(GoogLeNet, self).__init__()  # noqa: UP008
        assert aux_logits == True or aux_logits == False  # noqa: E712
        self.aux_logits = aux_logits
        self.conv1 = conv_block(in_channels=3, out_channels=8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        # In this order: in_channels, out_1x1, red_3x3, out_3x3, red_5x5, out_5x5, out_1x1pool
        self.inception3a = Inception_block(8, 4, 3, 4, 2, 2, 2)
        self.inception3b = Inception_block(12, 4, 4, 6, 2, 3, 3)
        self.maxpool3 = nn.MaxPool2d(kernel_size=(3, 3), stride=2, padding=1)
        self.inception4a = Inception_block(16, 4, 3, 6, 2, 3, 3)
        self.inception4b = Inception_block(16, 4, 3, 6, 2, 3, 3)
        self.avgpool = nn.AvgPool2d(kernel_size=4, stride=1)
        self.dropout = nn.Dropout(p=DROPOUT)
        self.fc1 = nn.Linear(16, num_classes)
        if self.aux_logits:
            self.aux1 = InceptionAux(16, num_classes)
            self.aux2 = InceptionAux(16, num_classes)
        else:
            self.aux1 = self.aux2 = None

    def forward(self, x):
        x = self.conv1(x)
        x = self.maxpool1(x)
        x = self.inception3a(x)
        x = self.inception3b(x)
        x = self.maxpool3(x)
        x = self.inception4a(x)
        # Auxiliary Softmax classifier 1
        if self.aux_logits and self.training:
            aux1 = self.aux1(x)
        x = self.inception4b(x)
        # Auxiliary Softmax classifier 2
        if self.aux_logits and self.training:
            aux2 = self.aux2(x)
        x = self.avgpool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.dropout(x)
        x = self.fc1(x)
        if self.aux_logits and self.training:
            return aux1, aux2, x
        else:
            return x


# ---------------------------------------------------------------------------------------------- ResNet
class block(nn.Module):  # noqa: N801
    def __init__(self, in_channels, intermediate_channels, identity_downsample=None, stride=1):
        super(block, self).__init__()  # noqa: UP008
        self.expansion = 4
        self.conv1 = nn.Conv2d(in_channels, intermediate_channels, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn1 = nn.BatchNorm2d(intermediate_channels)
        self.conv2 = nn.Conv2d(
            intermediate_channels, intermediate_channels, kernel_size=3, stride=stride, padding=1, bias=False
        )
        self.bn2 = nn.BatchNorm2d(intermediate_channels)
        self.conv3 = nn.Conv2d(
            intermediate_channels,
            intermediate_channels * self.expansion,
            kernel_size=1,
            stride=1,
            padding=0,
            bias=False,
        )
        self.bn3 = nn.BatchNorm2d(intermediate_channels * self.expansion)
        self.relu = nn.ReLU()
        self.identity_downsample = identity_downsample
        self.stride = stride

    def forward(self, x):
        identity = x.clone()
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.conv2(x)
        x = self.bn2(x)
        x = self.relu(x)
        x = self.conv3(x)
        x = self.bn3(x)
        if self.identity_downsample is not None:
            identity = self.identity_downsample(identity)
        x += identity
        x = self.relu(x)
        return x


class ResNet(nn.Module):
    def __init__(self, block, layers, image_channels, num_classes):
        super(ResNet, self).__init__()  # noqa: UP008
        self.in_channels = 4
        self.conv1 = nn.Conv2d(image_channels, 4, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        # Essentially the entire ResNet architecture are in these 4 lines below
        self.layer1 = self._make_layer(block, layers[0], intermediate_channels=2, stride=1)
        self.layer2 = self._make_layer(block, layers[1], intermediate_channels=3, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(3 * 4, num_classes)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.avgpool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fc(x)
        return x

    def _make_layer(self, block, num_residual_blocks, intermediate_channels, stride):
        identity_downsample = None
        layers = []
        # Either if we half the input space for ex, 56x56 -> 28x28 (stride=2), or channels changes
        # we need to adapt the Identity (skip connection) so it will be able to be added
        # to the layer that's ahead
        if stride != 1 or self.in_channels != intermediate_channels * 4:
            identity_downsample = nn.Sequential(
                nn.Conv2d(self.in_channels, intermediate_channels * 4, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(intermediate_channels * 4),
            )
        layers.append(block(self.in_channels, intermediate_channels, identity_downsample, stride))
        # The expansion size is always 4 for ResNet 50,101,152
        self.in_channels = intermediate_channels * 4
        # For example for first resnet layer: 256 will be mapped to 64 as intermediate layer,
        # then finally back to 256. Hence no identity downsample is needed, since stride = 1,
        # and also same amount of channels.
        for i in range(num_residual_blocks - 1):  # noqa: B007
            layers.append(block(self.in_channels, intermediate_channels))
        return nn.Sequential(*layers)


def ResNet50(img_channel=3, num_classes=1000):  # noqa: N802
    return ResNet(block, [2, 2, 6, 3][:2], img_channel, num_classes)


# ---------------------------------------------------------------------------------------- EfficientNet
base_model = [
    # expand_ratio, channels, repeats, stride, kernel_size
    [1, 4, 1, 1, 3],
    [6, 6, 2, 2, 3],
    [6, 8, 2, 2, 5],
]

phi_values = {
    # tuple of: (phi_value, resolution, drop_rate)
    "b0": (0, 224, 0.2),  # alpha, beta, gamma, depth = alpha ** phi
    "b1": (0.5, 240, 0.2),
}


class CNNBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups=1):
        super(CNNBlock, self).__init__()  # noqa: UP008
        self.cnn = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.silu = nn.SiLU()  # SiLU <-> Swish

    def forward(self, x):
        return self.silu(self.bn(self.cnn(x)))


class SqueezeExcitation(nn.Module):
    def __init__(self, in_channels, reduced_dim):
        super(SqueezeExcitation, self).__init__()  # noqa: UP008
        self.se = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),  # C x H x W -> C x 1 x 1
            nn.Conv2d(in_channels, reduced_dim, 1),
            nn.SiLU(),
            nn.Conv2d(reduced_dim, in_channels, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return x * self.se(x)


class InvertedResidualBlock(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        expand_ratio,
        reduction=4,  # squeeze excitation
        survival_prob=0.8,  # for stochastic depth
    ):
        super(InvertedResidualBlock, self).__init__()  # noqa: UP008
        self.survival_prob = SURVIVAL_PROB
        self.use_residual = in_channels == out_channels and stride == 1
        hidden_dim = in_channels * expand_ratio
        self.expand = in_channels != hidden_dim
        reduced_dim = int(in_channels / reduction)

        if self.expand:
            self.expand_conv = CNNBlock(in_channels, hidden_dim, kernel_size=3, stride=1, padding=1)

        self.conv = nn.Sequential(
            CNNBlock(hidden_dim, hidden_dim, kernel_size, stride, padding, groups=hidden_dim),
            SqueezeExcitation(hidden_dim, reduced_dim),
            nn.Conv2d(hidden_dim, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
        )

    def stochastic_depth(self, x):
        if not self.training:
            return x

        binary_tensor = torch.rand(x.shape[0], 1, 1, 1, device=x.device) < self.survival_prob
        return torch.div(x, self.survival_prob) * binary_tensor

    def forward(self, inputs):
        x = self.expand_conv(inputs) if self.expand else inputs

        if self.use_residual:
            return self.stochastic_depth(self.conv(x)) + inputs
        else:
            return self.conv(x)


class EfficientNet(nn.Module):
    def __init__(self, version, num_classes):
        super(EfficientNet, self).__init__()  # noqa: UP008
        width_factor, depth_factor, dropout_rate = self.calculate_factors(version)
        last_channels = ceil(16 * width_factor)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.features = self.create_features(width_factor, depth_factor, last_channels)
        self.classifier = nn.Sequential(
            nn.Dropout(dropout_rate * DROPOUT / 0.5),
            nn.Linear(last_channels, num_classes),
        )

    def calculate_factors(self, version, alpha=1.2, beta=1.1):
        phi, res, drop_rate = phi_values[version]
        depth_factor = alpha**phi
        width_factor = beta**phi
        return width_factor, depth_factor, drop_rate

    def create_features(self, width_factor, depth_factor, last_channels):
        channels = int(4 * width_factor)
        features = [CNNBlock(3, channels, 3, stride=2, padding=1)]
        in_channels = channels

        for expand_ratio, channels, repeats, stride, kernel_size in base_model:
            out_channels = 4 * ceil(int(channels * width_factor) / 4)
            layers_repeats = ceil(repeats * depth_factor)

            for layer in range(layers_repeats):
                features.append(
                    InvertedResidualBlock(
                        in_channels,
                        out_channels,
                        expand_ratio=expand_ratio,
                        stride=stride if layer == 0 else 1,
                        kernel_size=kernel_size,
                        padding=kernel_size // 2,  # if k=1:pad=0, k=3:pad=1, k=5:pad=2
                    )
                )
                in_channels = out_channels

        features.append(CNNBlock(in_channels, last_channels, kernel_size=1, stride=1, padding=0))

        return nn.Sequential(*features)

    def forward(self, x):
        x = self.pool(self.features(x))
        return self.classifier(x.view(x.shape[0], -1))


# -------------------------------------------------------------------------------------------- training
def build():
    torch.manual_seed(0)
    if MODEL == "lenet":
        return LeNet().to(device)
    if MODEL == "vgg":
        return VGG_net(in_channels=3, num_classes=num_classes).to(device)
    if MODEL == "googlenet":
        return GoogLeNet(aux_logits=True, num_classes=num_classes).to(device)
    if MODEL == "resnet":
        return ResNet50(img_channel=3, num_classes=num_classes).to(device)
    return EfficientNet("b1", num_classes=num_classes).to(device)


def image_loader():
    side, channels = (32, 1) if MODEL == "lenet" else (16, 3)
    rng = np.random.RandomState(0)
    x = rng.standard_normal((3 * batch_size, channels, side, side)).astype(np.float32)
    y = rng.randint(0, num_classes, 3 * batch_size)
    dataset = TensorDataset(torch.tensor(x), torch.tensor(y))
    return DataLoader(dataset=dataset, batch_size=batch_size, shuffle=False)


def check_accuracy(loader, model):
    num_correct = 0
    num_samples = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device=device)
            y = y.to(device=device)

            scores = model(x)
            _, predictions = scores.max(1)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)

        line = f"Got {num_correct} / {num_samples} with accuracy {float(num_correct) / float(num_samples) * 100:.2f}"

    model.train()
    return line, scores


def train(model, steps=3):
    torch.manual_seed(1)  # the stochastic depth draws
    train_loader = image_loader()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=learning_rate)
    record = {"losses": []}
    for batch_idx, (data, targets) in enumerate(train_loader):
        if batch_idx == steps:
            break
        # Get data to cuda if possible
        data = data.to(device=device)
        targets = targets.to(device=device)

        # forward
        scores = model(data)
        if MODEL == "googlenet":
            aux1, aux2, scores = scores
            loss = criterion(scores, targets) + 0.3 * criterion(aux1, targets) + 0.3 * criterion(aux2, targets)
        else:
            loss = criterion(scores, targets)

        # backward
        optimizer.zero_grad()
        loss.backward()

        # gradient descent or adam step
        optimizer.step()
        record["losses"].append(loss.item())
    line, scores = check_accuracy(train_loader, model)
    record["accuracy"] = line
    # (the eval-mode scores are left out: a BatchNorm whose shift the next BatchNorm cancels gets a gradient of
    # rounding noise, which Adam turns into full steps of either sign, so running means differ in their last digits)
    record["eval_argmax"] = scores.argmax(1).tolist()
    record["weights"] = [p.detach().abs().sum().item() for p in model.parameters()][-4:]
    return record


if __name__ == "__main__":
    print(train(build()))
